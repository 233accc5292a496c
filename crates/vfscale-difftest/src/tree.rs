//! The visible tree the mount scripts log after each step
//! (`propagation_kernel.rs`, `namespace_kernel.rs`): every directory with
//! its sorted names and, at a mount root (statx's STATX_ATTR_MOUNT_ROOT),
//! `@N`, N numbering the devices in the order the walk first meets them,
//! so that neither device numbers nor mount ids are compared, only which
//! mounts share an instance.

use vfscale::abi::*;
use vfscale::ProcessApi;

/// The names in directory `path`, without `.` and `..`.
pub fn dir_names(p: &dyn ProcessApi, path: &[u8]) -> SysResult<Vec<String>> {
    Ok(p.read_dir(path)?
        .into_iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .filter(|n| n != "." && n != "..")
        .collect())
}

/// Walks `rel` (a path `full` turns into the one to look up) and
/// `depth` levels beneath it, appending one entry per directory to `out`
/// and numbering new devices in `devs`.
pub fn walk(
    p: &dyn ProcessApi,
    full: &dyn Fn(&str) -> Vec<u8>,
    rel: &str,
    depth: usize,
    devs: &mut Vec<(u32, u32)>,
    out: &mut Vec<String>,
) {
    let path = full(rel);
    let x = match p.statx(AT_FDCWD, &path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS) {
        Ok(x) => x,
        Err(Errno::ENOENT) => return,
        Err(e) => {
            out.push(format!("{rel}!{e}"));
            return;
        }
    };
    if u32::from(x.mode) & S_IFMT != S_IFDIR {
        return;
    }
    let mut shown = rel.to_string();
    if x.attributes & STATX_ATTR_MOUNT_ROOT != 0 {
        let dev = (x.dev_major, x.dev_minor);
        let n = devs.iter().position(|d| *d == dev).unwrap_or_else(|| {
            devs.push(dev);
            devs.len() - 1
        });
        shown.push_str(&format!("@{n}"));
    }
    let mut names = match dir_names(p, &path) {
        Ok(n) => n,
        Err(e) => {
            out.push(format!("{shown}!{e}"));
            return;
        }
    };
    names.sort();
    out.push(format!("{shown}[{}]", names.join(" ")));
    if depth == 0 {
        return;
    }
    for name in names {
        walk(p, full, &format!("{rel}/{name}"), depth - 1, devs, out);
    }
}
