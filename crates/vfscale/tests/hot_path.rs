//! The hot-path rule (DESIGN §3.1): stat, lstat, faccessat and readlink of a
//! cached path take no reference and no lock. Measured with the per-thread
//! operation counters (feature `op-counters`, on for the test suite).

use vfscale::abi::*;
use vfscale::sync::opcount::{thread_counts, OpCounts, ENABLED};
use vfscale::{ProcessApi, Vfs};

fn delta(before: OpCounts) -> OpCounts {
    let now = thread_counts();
    OpCounts {
        refcount_ops: now.refcount_ops - before.refcount_ops,
        lock_acquisitions: now.lock_acquisitions - before.lock_acquisitions,
    }
}

#[test]
fn cached_path_lookups_take_no_reference_and_no_lock() {
    const {
        assert!(
            ENABLED,
            "the test suite must build vfscale with op-counters"
        )
    };
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    p.mkdir(b"/a/b/c", 0o755).unwrap();
    let fd = p.open(b"/a/b/c/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.symlink(b"c/f", b"/a/b/l").unwrap();
    let fd = p.open(b"/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    // A miss caches a negative dentry (the first time takes locks).
    assert_eq!(p.stat(b"/a/missing").unwrap_err(), Errno::ENOENT);

    // readlink updates atime while it is not newer than mtime (relatime):
    // once right after creation, and once more when the coarse clock ticks.
    // Reach the steady state before measuring.
    p.readlink(b"/a/b/l").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.readlink(b"/a/b/l").unwrap();

    let before = thread_counts();
    for _ in 0..1000 {
        p.stat(b"/f").unwrap();
        p.stat(b"/a/b/c/f").unwrap();
        p.stat(b"/a/b/l").unwrap();
        p.lstat(b"/a/b/l").unwrap();
        p.stat(b"/a/./b/../b/c/f").unwrap();
        p.access(b"/a/b/c/f", R_OK).unwrap();
        assert_eq!(p.readlink(b"/a/b/l").unwrap(), b"c/f");
        assert_eq!(p.stat(b"/a/missing").unwrap_err(), Errno::ENOENT);
    }
    assert_eq!(
        delta(before),
        OpCounts::default(),
        "cached lookups must not touch refcounts or locks"
    );

    // The counters do see the operations that must take them.
    let before = thread_counts();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    let d = delta(before);
    assert!(
        d.refcount_ops >= 2,
        "open takes and close drops references: {d:?}"
    );
    assert!(d.lock_acquisitions >= 1, "the fd table is locked: {d:?}");
}
