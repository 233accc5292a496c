//! The passthrough cache's coherence with TTL 0, step by step: random
//! sequences of changes, each made either through vfscale or directly on
//! the host (behind vfscale's back), over a small tree of names, and writes
//! through descriptors vfscale keeps open while names move. With every
//! use revalidated, after each step vfscale must show exactly the host's
//! state: for every name of the pool, `lstat` fails with the host's errno
//! or gives the host's type, permission bits, size, link count and inode
//! number (passthrough numbers inodes on the root's device as the host
//! does), a symlink's text is the host's, and the listings of every
//! directory are the host's names. At the end, one `drop_caches` returns
//! the instance to its fresh object counts and `check_invariants` passes.
//! In half the cases the backend is wrapped in `FaultyFs` and, in half the
//! steps through vfscale, the backend calls of one kind (most often the
//! changes) fail at random (one in one or two, EIO, ENOSPC or EACCES): a
//! failed host call must leave the cache as consistent as a successful one
//! and take no reference it does not give back.
//!
//! Sequential on purpose (no race): a difference is a stale cache entry,
//! not a timing window; `passthrough_stress.rs` covers the races.

mod common_host;

use common_host::{host_names, listed, HostDir};
use proptest::prelude::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::faulty::{CallKind, FaultControl, FaultyFs, Trigger};
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{Process, ProcessApi, Vfs, VfsConfig};

/// The names every step may touch and every check compares.
const NAMES: [&str; 9] = ["a", "b", "d", "d/a", "d/b", "d/d", "d/d/a", "e", "e/a"];

/// A change, made on the host when `host` is set, else through vfscale —
/// with its backend calls of kind `fault.0` failing at random (one in
/// `fault.1`, with `fault.2`) when `fault` is set and the instance injects
/// faults.
#[derive(Clone, Debug)]
struct Step {
    host: bool,
    change: Change,
    fault: Option<(CallKind, u64, Errno)>,
}

#[derive(Clone, Debug)]
enum Change {
    /// Create (or open) and write `len` bytes at the start.
    Write(usize, u8),
    Truncate(usize, u8),
    Mkdir(usize),
    /// unlink, or rmdir when it is a directory.
    Remove(usize),
    Rename(usize, usize),
    Link(usize, usize),
    /// A symlink at the first name to the second (relative text).
    Symlink(usize, usize),
    Chmod(usize, u32),
    /// Through vfscale only (a host step makes it too): open a name and
    /// keep the descriptor, write through the k-th kept one (its file on
    /// the host, wherever its name went), or close it.
    Open(usize),
    FdWrite(usize, u8),
    Close(usize),
}

fn change_strategy() -> impl Strategy<Value = Change> {
    let n = || 0..NAMES.len();
    prop_oneof![
        (n(), 0..8u8).prop_map(|(a, l)| Change::Write(a, l)),
        (n(), 0..8u8).prop_map(|(a, l)| Change::Truncate(a, l)),
        n().prop_map(Change::Mkdir),
        n().prop_map(Change::Remove),
        (n(), n()).prop_map(|(a, b)| Change::Rename(a, b)),
        (n(), n()).prop_map(|(a, b)| Change::Link(a, b)),
        (n(), n()).prop_map(|(a, b)| Change::Symlink(a, b)),
        (n(), prop_oneof![Just(0o600u32), Just(0o755), Just(0o4711)])
            .prop_map(|(a, m)| Change::Chmod(a, m)),
        n().prop_map(Change::Open),
        (0..4usize, 1..8u8).prop_map(|(k, l)| Change::FdWrite(k, l)),
        (0..4usize).prop_map(Change::Close),
    ]
}

fn fault_strategy() -> impl Strategy<Value = Option<(CallKind, u64, Errno)>> {
    // One kind at a time, the changes most often: faults on every kind
    // would mostly fail a step's first lookup, before its change.
    let kind = prop_oneof![
        4 => Just(CallKind::Change),
        2 => Just(CallKind::Write),
        1 => Just(CallKind::Truncate),
        1 => Just(CallKind::Read),
        1 => Just(CallKind::Readdir),
        1 => Just(CallKind::Xattr),
        1 => Just(CallKind::Lookup),
        1 => Just(CallKind::Revalidate),
    ];
    let errno = prop_oneof![Just(Errno::EIO), Just(Errno::ENOSPC), Just(Errno::EACCES)];
    proptest::option::of((kind, 1..3u64, errno))
}

fn step_strategy() -> impl Strategy<Value = Step> {
    (any::<bool>(), change_strategy(), fault_strategy()).prop_map(|(host, change, fault)| Step {
        host,
        change,
        fault,
    })
}

fn vpath(i: usize) -> Vec<u8> {
    format!("/{}", NAMES[i]).into_bytes()
}

/// Applies `c` through vfscale; errors are part of the game (a name that
/// is missing, a directory in the way), only the resulting state counts.
fn through_vfscale(p: &Process, fds: &mut Vec<Fd>, c: &Change) {
    match *c {
        Change::Write(a, len) => {
            if let Ok(fd) = p.open(&vpath(a), O_CREAT | O_WRONLY, 0o644) {
                let _ = p.write(fd, &vec![b'v'; len as usize]);
                p.close(fd).unwrap();
            }
        }
        Change::Truncate(a, len) => drop(p.truncate(&vpath(a), len as i64)),
        Change::Mkdir(a) => drop(p.mkdir(&vpath(a), 0o755)),
        Change::Remove(a) => {
            if p.unlink(&vpath(a)) == Err(Errno::EISDIR) {
                let _ = p.rmdir(&vpath(a));
            }
        }
        Change::Rename(a, b) => drop(p.rename(&vpath(a), &vpath(b))),
        Change::Link(a, b) => drop(p.link(&vpath(a), &vpath(b))),
        Change::Symlink(a, b) => drop(p.symlink(NAMES[b].as_bytes(), &vpath(a))),
        Change::Chmod(a, mode) => drop(p.chmod(&vpath(a), mode)),
        Change::Open(a) => {
            let fd = p
                .open(&vpath(a), O_RDWR, 0)
                .or_else(|_| p.open(&vpath(a), O_RDONLY, 0));
            if let Ok(fd) = fd {
                fds.push(fd);
            }
        }
        Change::FdWrite(k, len) => {
            if let Some(&fd) = fds.get(k) {
                let _ = p.write(fd, &vec![b'f'; len as usize]);
            }
        }
        Change::Close(k) => {
            if k < fds.len() {
                p.close(fds.remove(k)).unwrap();
            }
        }
    }
}

/// Applies `c` on the host, as another program would.
fn on_host(root: &Path, c: &Change) {
    let path = |i: usize| root.join(NAMES[i]);
    match *c {
        Change::Write(a, len) => {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(path(a))
            {
                let _ = f.write_all(&vec![b'h'; len as usize]);
            }
        }
        Change::Truncate(a, len) => {
            if let Ok(f) = std::fs::OpenOptions::new().write(true).open(path(a)) {
                let _ = f.set_len(len as u64);
            }
        }
        Change::Mkdir(a) => drop(std::fs::create_dir(path(a))),
        Change::Remove(a) => {
            if std::fs::remove_file(path(a)).is_err() {
                let _ = std::fs::remove_dir(path(a));
            }
        }
        Change::Rename(a, b) => drop(std::fs::rename(path(a), path(b))),
        Change::Link(a, b) => drop(std::fs::hard_link(path(a), path(b))),
        Change::Symlink(a, b) => drop(std::os::unix::fs::symlink(NAMES[b], path(a))),
        Change::Chmod(a, mode) => {
            // As chmod(2): follows a symlink (to nothing, at times).
            let _ = std::fs::set_permissions(path(a), std::fs::Permissions::from_mode(mode));
        }
        Change::Open(_) | Change::FdWrite(..) | Change::Close(_) => {
            unreachable!("made through vfscale")
        }
    }
}

/// What a name shows: the errno, or (type and permission bits, size, link
/// count, inode number, symlink text).
type View = Result<(u32, i64, u64, u64, Vec<u8>), Errno>;

fn host_view(root: &Path, name: &str) -> View {
    match std::fs::symlink_metadata(root.join(name)) {
        Ok(m) => {
            let text = if m.file_type().is_symlink() {
                use std::os::unix::ffi::OsStrExt;
                std::fs::read_link(root.join(name))
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec()
            } else {
                Vec::new()
            };
            let size = if m.is_dir() { 0 } else { m.size() as i64 };
            Ok((m.mode(), size, m.nlink(), m.ino(), text))
        }
        Err(e) => Err(Errno(e.raw_os_error().unwrap())),
    }
}

fn vfscale_view(p: &Process, name: &str) -> View {
    let path = format!("/{name}").into_bytes();
    let st = p.lstat(&path)?;
    let text = if st.mode & S_IFMT == S_IFLNK {
        p.readlink(&path)?
    } else {
        Vec::new()
    };
    // A directory's size is its filesystem's business (the host's ext4
    // counts blocks, tmpfs entries); vfscale reports the host's, but the
    // comparison leaves it out as the host side does.
    let size = if st.mode & S_IFMT == S_IFDIR {
        0
    } else {
        st.size
    };
    Ok((st.mode, size, st.nlink as u64, st.ino, text))
}

fn run(steps: &[Step], config: PassthroughConfig, faults: bool) -> Result<(), TestCaseError> {
    let host = HostDir::new("coherence");
    // A tree to start from, so that most steps find their names (an empty
    // root made most of them fail at the lookup, before any change).
    host.mkdir("d/d");
    host.mkdir("e");
    for (name, data) in [("a", "a"), ("b", "bb"), ("d/a", "da"), ("d/d/a", "dda")] {
        host.write(name, data.as_bytes());
    }
    let control = FaultControl::new(0x5eed);
    let pt = Passthrough::new(host.path(), config).unwrap();
    let vfs = if faults {
        Vfs::with_root_fs(
            VfsConfig::default(),
            Box::new(FaultyFs::new(pt, control.clone())),
        )
    } else {
        Vfs::with_root_fs(VfsConfig::default(), Box::new(pt))
    };
    let base = vfs.object_counts();
    let p = vfs.root_process();
    let mut fds = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let fd_step = matches!(
            step.change,
            Change::Open(_) | Change::FdWrite(..) | Change::Close(_)
        );
        if step.host && !fd_step {
            on_host(host.path(), &step.change);
        } else {
            // A failed backend call must leave no trace: the views below
            // (made with no fault armed) still equal the host's.
            if let Some((kind, one_in, errno)) = step.fault {
                control.clear();
                control.fail(kind, Trigger::OneIn(one_in), errno);
                control.arm();
            }
            through_vfscale(&p, &mut fds, &step.change);
            control.disarm();
        }
        for name in NAMES {
            prop_assert_eq!(
                vfscale_view(&p, name),
                host_view(host.path(), name),
                "{} after step {} ({:?})",
                name,
                i,
                step
            );
        }
        for (dir, vdir) in [
            ("", &b"/"[..]),
            ("d", b"/d"),
            ("d/d", b"/d/d"),
            ("e", b"/e"),
        ] {
            // A name that is not a directory on the host lists as an error
            // in both (the errno is the views' business).
            let at = host.path().join(dir);
            if at.is_dir() {
                prop_assert_eq!(
                    listed(&p, vdir).ok(),
                    Some(host_names(&at)),
                    "listing of /{} after step {} ({:?})",
                    dir,
                    i,
                    step
                );
            }
        }
    }
    for fd in fds {
        p.close(fd).unwrap();
    }
    p.exit();
    common_host::settled(&vfs, base).map_err(TestCaseError::fail)?;
    vfs.check_invariants().map_err(TestCaseError::fail)?;
    Ok(())
}

proptest! {
    #![proptest_config(common_host::proptest_config(128))]

    /// With the instance's other caches in each of their modes: no
    /// directory fds kept or one (evicted at every other lookup), misses
    /// vouched for by directory stamps or not, listings cached or not;
    /// and host calls failing or not.
    #[test]
    fn vfscale_shows_the_hosts_state_after_every_step(
        steps in proptest::collection::vec(step_strategy(), 1..40),
        dir_fds in prop_oneof![Just(0usize), Just(1), Just(1024)],
        dir_stamps in any::<bool>(),
        listings in any::<bool>(),
        faults in any::<bool>(),
    ) {
        let config = PassthroughConfig {
            ttl: Duration::ZERO,
            dir_fds,
            dir_stamps,
            listing_max_bytes: if listings { 1 << 20 } else { 0 },
            ..Default::default()
        };
        run(&steps, config, faults)?;
    }
}
