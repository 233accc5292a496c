//! A whole-tree summary through any `ProcessApi`, to compare the final
//! namespaces of two implementations: every reachable name (depth-first,
//! iterative, bounded depth) with its lstat summary, the data of regular
//! files and the text of symlinks. Inode numbers and times are left out.

use std::collections::BTreeMap;
use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_model::ops::{Bytes, StatSummary};

/// What one name holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// lstat failed (e.g. no search permission on the way): the errno.
    Err(i32),
    Node {
        stat: StatSummary,
        /// File data, symlink text, or the sorted names of a directory.
        content: Vec<Vec<u8>>,
    },
}

/// Every name below `/` as seen by `p` (run it as root), down to
/// `max_depth` levels.
pub fn snapshot<P: ProcessApi>(p: &P, max_depth: usize) -> BTreeMap<Vec<u8>, Entry> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<(Vec<u8>, usize)> = vec![(b"/".to_vec(), 0)];
    while let Some((path, depth)) = todo.pop() {
        let st = match p.lstat(&path) {
            Ok(s) => s,
            Err(e) => {
                out.insert(path, Entry::Err(e.0));
                continue;
            }
        };
        let mut content = Vec::new();
        match st.mode & S_IFMT {
            S_IFREG => {
                if let Ok(fd) = p.open(&path, O_RDONLY, 0) {
                    let mut buf = vec![0u8; st.size.clamp(0, 1 << 20) as usize];
                    let n = p.pread(fd, &mut buf, 0).unwrap_or(0);
                    buf.truncate(n);
                    content.push(buf);
                    let _ = p.close(fd);
                }
            }
            S_IFLNK => content.push(p.readlink(&path).unwrap_or_default()),
            S_IFDIR => {
                let mut names: Vec<Vec<u8>> = p
                    .read_dir(&path)
                    .map(|d| d.into_iter().map(|e| e.name).collect())
                    .unwrap_or_default();
                names.retain(|n| n != b"." && n != b"..");
                names.sort();
                if depth < max_depth {
                    for n in &names {
                        let mut child = path.clone();
                        if !child.ends_with(b"/") {
                            child.push(b'/');
                        }
                        child.extend_from_slice(n);
                        todo.push((child, depth + 1));
                    }
                }
                content = names;
            }
            _ => {}
        }
        out.insert(
            path,
            Entry::Node {
                stat: (&st).into(),
                content,
            },
        );
    }
    out
}

/// Compares two snapshots (`left` the reference): every name of `left`
/// with the same entry in `right`, and no extra names in `right`. `sides`
/// names them in the failure message, e.g. "left: kernel, right: vfscale".
pub fn same_trees(
    left: &BTreeMap<Vec<u8>, Entry>,
    right: &BTreeMap<Vec<u8>, Entry>,
    sides: &str,
) -> Result<(), proptest::test_runner::TestCaseError> {
    for (path, l) in left {
        proptest::prop_assert_eq!(
            Some(l),
            right.get(path),
            "final tree at {:?} ({})",
            Bytes(path.clone()),
            sides
        );
    }
    proptest::prop_assert_eq!(
        left.len(),
        right.len(),
        "final tree: extra names ({})",
        sides
    );
    Ok(())
}
