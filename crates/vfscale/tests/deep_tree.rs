//! Hostile shapes: a 10,000-deep directory tree must not overflow any
//! stack — walks, getcwd, the invariant checker, and teardown (unmount of a
//! deep tmpfs frees it iteratively).

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

const DEPTH: usize = 10_000;

/// Builds /mnt/d/d/d/... DEPTH deep, descending with mkdirat + openat on
/// directory fds so no path ever exceeds PATH_MAX.
fn build(p: &vfscale::Process, top: &[u8]) {
    let mut dir = p.open(top, O_RDONLY | O_DIRECTORY, 0).unwrap();
    for _ in 0..DEPTH {
        p.mkdirat(dir, b"d", 0o755).unwrap();
        let next = p.openat(dir, b"d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        p.close(dir).unwrap();
        dir = next;
    }
    // The deepest directory is the cwd now.
    p.fchdir(dir).unwrap();
    p.close(dir).unwrap();
}

#[test]
fn ten_thousand_levels_walk_check_and_teardown() {
    // Run on a thread with a small stack: recursion anywhere would overflow.
    let t = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let vfs = Vfs::new();
            let p = vfs.root_process();
            p.mkdir(b"/mnt", 0o755).unwrap();
            p.mount(b"none", b"/mnt", b"tmpfs", 0).unwrap();
            build(&p, b"/mnt");
            // getcwd: 10,000 components of 2 bytes = 20 KB, over PATH_MAX, but
            // getcwd builds it iteratively.
            let cwd = p.getcwd().unwrap();
            assert_eq!(cwd.len(), "/mnt".len() + 2 * DEPTH);
            // Walk all the way up with ".." in chunks that fit PATH_MAX.
            for _ in 0..DEPTH / 1000 {
                p.chdir(&b"../".repeat(1000)).unwrap();
            }
            assert_eq!(p.getcwd().unwrap(), b"/mnt");
            p.chdir(b"/").unwrap();
            drop(p);
            vfs.drop_caches();
            let r = vfs.check_invariants().unwrap();
            assert!(r.dentries > DEPTH as i64);
            // Unmounting frees the whole deep tree (iteratively).
            let p = vfs.root_process();
            p.umount2(b"/mnt", 0).unwrap();
            drop(p);
            vfs.drop_caches();
            let c = vfs.object_counts();
            assert_eq!(
                (c.dentries, c.inodes, c.mounts),
                (2, 2, 1),
                "only / and /mnt are left: {c:?}"
            );
        });
    t.unwrap().join().unwrap();
}
