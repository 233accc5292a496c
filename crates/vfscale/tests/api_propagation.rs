//! Mount propagation (mount/propagation.rs): shared, slave, private and
//! unbindable mounts, what propagates on mount, bind, move and umount, and
//! a stress run of propagating mounts under concurrent walks. Every
//! expectation was first seen on the host kernel (6.18, tmpfs under
//! `unshare -m`); `vfscale-difftest/tests/propagation_kernel.rs` compares
//! scripts and random sequences with the kernel step by step.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use vfscale::VfsConfig;

/// /a a tmpfs holding x/ and y/, made shared and bound at /b (its peer);
/// /c a plain directory.
fn peers() -> (Vfs, Process) {
    let (vfs, p) = setup();
    for d in [&b"/a"[..], b"/b", b"/c"] {
        p.mkdir(d, 0o755).unwrap();
    }
    tmpfs_on(&p, b"/a");
    p.mkdir(b"/a/x", 0o755).unwrap();
    p.mkdir(b"/a/y", 0o755).unwrap();
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    (vfs, p)
}

/// A new tmpfs on the existing directory `path`.
fn tmpfs_on(p: &Process, path: &[u8]) {
    p.mount(b"none", path, b"tmpfs", 0).unwrap();
}

fn dev(p: &Process, path: &[u8]) -> u64 {
    p.stat(path).unwrap().dev
}

/// Runs the invariant checker with the mounts up (it wants no process
/// alive); a new root process goes on.
fn checked(vfs: &Vfs, p: Process) -> Process {
    drop(p);
    vfs.check_invariants().unwrap();
    vfs.root_process()
}

/// Removes what the test made on the root instance (every mount gone),
/// checks the invariants, and that nothing but the root is left.
fn done(vfs: Vfs, p: Process) {
    fn remove(p: &Process, path: &[u8]) {
        if p.lstat(path).unwrap().mode & S_IFMT != S_IFDIR {
            return p.unlink(path).unwrap();
        }
        for n in names(p, path) {
            remove(p, &[path, b"/", &n].concat());
        }
        p.rmdir(path).unwrap();
    }
    for d in names(&p, b"/") {
        remove(&p, &[b"/", &d[..]].concat());
    }
    drop(p);
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}

#[test]
fn a_mount_on_one_peer_appears_on_the_other_and_leaves_with_it() {
    let (vfs, p) = peers();
    tmpfs_on(&p, b"/a/x");
    mkfile(&p, b"/a/x/m", b"1");
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"m"]));
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/a/x"));
    assert_ne!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    // Either way round.
    tmpfs_on(&p, b"/b/y");
    mkfile(&p, b"/b/y/n", b"2");
    assert_eq!(names(&p, b"/a/y"), sorted(&[b"n"]));
    // An umount takes the copy, from either side.
    p.umount2(b"/b/x", 0).unwrap();
    assert!(names(&p, b"/a/x").is_empty());
    p.umount2(b"/a/y", 0).unwrap();
    assert!(names(&p, b"/b/y").is_empty());
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

#[test]
fn a_used_copy_makes_the_umount_busy_unless_it_is_lazy() {
    let (vfs, p) = peers();
    tmpfs_on(&p, b"/a/x");
    let fd = p.open(b"/b/x", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(p.umount2(b"/a/x", 0), Err(Errno::EBUSY));
    assert_eq!(dev(&p, b"/a/x"), dev(&p, b"/b/x"));
    p.close(fd).unwrap();
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    // Lazily, both go at once, used or not.
    tmpfs_on(&p, b"/a/x");
    let fd = p.open(b"/b/x", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.umount2(b"/a/x", MNT_DETACH).unwrap();
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    p.close(fd).unwrap();
    p.umount2(b"/b", MNT_DETACH).unwrap();
    p.umount2(b"/a", MNT_DETACH).unwrap();
    done(vfs, p);
}

#[test]
fn a_copy_with_its_own_submount_stays() {
    let (vfs, p) = peers();
    tmpfs_on(&p, b"/a/x");
    p.mkdir(b"/b/x/d", 0o755).unwrap();
    // Made private first, so the submount is the copy's alone.
    p.mount(b"", b"/b/x", b"", MS_PRIVATE).unwrap();
    tmpfs_on(&p, b"/b/x/d");
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(names(&p, b"/a/x"), Vec::<Vec<u8>>::new());
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"d"]));
    p.umount2(b"/b/x/d", 0).unwrap();
    p.umount2(b"/b/x", 0).unwrap();
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

#[test]
fn a_slave_receives_but_does_not_send() {
    let (vfs, p) = peers();
    p.mount(b"", b"/b", b"", MS_SLAVE).unwrap();
    tmpfs_on(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/a/x"));
    tmpfs_on(&p, b"/b/y");
    assert_eq!(dev(&p, b"/a/y"), dev(&p, b"/a"));
    // The copy a slave got is a slave too: a mount on the master's copy
    // reaches it.
    p.mkdir(b"/a/x/z", 0o755).unwrap();
    tmpfs_on(&p, b"/a/x/z");
    assert_eq!(dev(&p, b"/b/x/z"), dev(&p, b"/a/x/z"));
    // Made private, it receives nothing more.
    p.umount2(b"/a/x/z", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x/z"), dev(&p, b"/b/x"));
    p.mount(b"", b"/b", b"", MS_PRIVATE | MS_REC).unwrap();
    p.umount2(b"/a/x", 0).unwrap();
    assert_ne!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    p.umount2(b"/b", MNT_DETACH).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

#[test]
fn a_shared_slave_passes_what_it_receives_on() {
    let (vfs, p) = peers();
    p.mount(b"", b"/b", b"", MS_SLAVE).unwrap();
    p.mount(b"", b"/b", b"", MS_SHARED).unwrap();
    p.mount(b"/b", b"/c", b"", MS_BIND).unwrap();
    // /c is a peer of /b, so a slave of /a as well.
    tmpfs_on(&p, b"/a/x");
    assert_eq!(dev(&p, b"/c/x"), dev(&p, b"/a/x"));
    tmpfs_on(&p, b"/c/y");
    assert_eq!(dev(&p, b"/b/y"), dev(&p, b"/c/y"));
    assert_eq!(dev(&p, b"/a/y"), dev(&p, b"/a"));
    let p = checked(&vfs, p);
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(dev(&p, b"/c/x"), dev(&p, b"/c"));
    for m in [&b"/c/y"[..], b"/c", b"/b", b"/a"] {
        p.umount2(m, 0).unwrap();
    }
    done(vfs, p);
}

#[test]
fn only_mounts_that_show_the_mountpoint_get_a_copy() {
    let (vfs, p) = peers();
    // /c shows only /a/y: a mount on /a/x does not reach it.
    p.mount(b"/a/y", b"/c", b"", MS_BIND).unwrap();
    p.mkdir(b"/a/y/w", 0o755).unwrap();
    tmpfs_on(&p, b"/a/x");
    tmpfs_on(&p, b"/a/y/w");
    assert_eq!(dev(&p, b"/c/w"), dev(&p, b"/a/y/w"));
    assert_eq!(dev(&p, b"/b/y/w"), dev(&p, b"/a/y/w"));
    assert_eq!(names(&p, b"/c"), sorted(&[b"w"]));
    p.umount2(b"/c", MNT_DETACH).unwrap();
    p.umount2(b"/b", MNT_DETACH).unwrap();
    p.umount2(b"/a", MNT_DETACH).unwrap();
    done(vfs, p);
}

#[test]
fn a_copy_goes_beneath_a_mount_already_there() {
    let (vfs, p) = peers();
    p.mount(b"", b"/b", b"", MS_PRIVATE).unwrap();
    tmpfs_on(&p, b"/b/x");
    mkfile(&p, b"/b/x/top", b"");
    p.mount(b"", b"/b", b"", MS_SHARED).unwrap();
    p.mount(b"/b", b"/c", b"", MS_BIND).unwrap();
    // /b and /c are peers; /b/x has a mount that /c/x lacks.
    p.mkdir(b"/c/x/q", 0o755).unwrap();
    tmpfs_on(&p, b"/c/x");
    mkfile(&p, b"/c/x/under", b"");
    // /b/x still shows its own mount on top of the copy.
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"top"]));
    let p = checked(&vfs, p);
    p.umount2(b"/b/x", 0).unwrap();
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"under"]));
    p.umount2(b"/b/x", 0).unwrap();
    assert_eq!(names(&p, b"/c/x"), sorted(&[b"q"]));
    for m in [&b"/c"[..], b"/b", b"/a"] {
        p.umount2(m, MNT_DETACH).unwrap();
    }
    done(vfs, p);
}

#[test]
fn unbindable_mounts_are_not_copied() {
    let (vfs, p) = setup();
    for d in [&b"/a"[..], b"/b", b"/c"] {
        p.mkdir(d, 0o755).unwrap();
    }
    tmpfs_on(&p, b"/a");
    p.mkdir(b"/a/u", 0o755).unwrap();
    p.mkdir(b"/a/v", 0o755).unwrap();
    tmpfs_on(&p, b"/a/u");
    p.mkdir(b"/a/u/in", 0o755).unwrap();
    tmpfs_on(&p, b"/a/u/in");
    tmpfs_on(&p, b"/a/v");
    p.mount(b"", b"/a/u", b"", MS_UNBINDABLE).unwrap();
    assert_eq!(p.mount(b"/a/u", b"/b", b"", MS_BIND), Err(Errno::EINVAL));
    // A recursive bind leaves it out, with what is on it.
    p.mount(b"/a", b"/b", b"", MS_BIND | MS_REC).unwrap();
    assert_eq!(dev(&p, b"/b/u"), dev(&p, b"/b"));
    assert_eq!(dev(&p, b"/b/v"), dev(&p, b"/a/v"));
    // It may not move onto a shared mount, nor may anything move out of
    // a shared parent.
    p.mkdir(b"/c/s", 0o755).unwrap();
    tmpfs_on(&p, b"/c/s");
    p.mount(b"", b"/c/s", b"", MS_SHARED).unwrap();
    p.mkdir(b"/c/s/t", 0o755).unwrap();
    assert_eq!(p.mount(b"/a", b"/c/s/t", b"", MS_MOVE), Err(Errno::EINVAL));
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    assert_eq!(
        p.mount(b"/a/v", b"/c/s/t", b"", MS_MOVE),
        Err(Errno::EINVAL)
    );
    // Made shared, it binds again.
    p.mount(b"", b"/a/u", b"", MS_SHARED).unwrap();
    p.mount(b"/a/u", b"/b/u", b"", MS_BIND).unwrap();
    for m in [&b"/b"[..], b"/a", b"/c/s"] {
        p.umount2(m, MNT_DETACH).unwrap();
    }
    done(vfs, p);
}

#[test]
fn a_mount_moved_onto_a_shared_mount_is_copied_to_its_peers() {
    let (vfs, p) = peers();
    p.mkdir(b"/c/m", 0o755).unwrap();
    tmpfs_on(&p, b"/c/m");
    mkfile(&p, b"/c/m/f", b"");
    p.mount(b"/c/m", b"/a/x", b"", MS_MOVE).unwrap();
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"f"]));
    assert!(names(&p, b"/c/m").is_empty());
    // The moved mount is shared now: umounting it takes the copy.
    p.umount2(b"/a/x", 0).unwrap();
    assert!(names(&p, b"/b/x").is_empty());
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

#[test]
fn type_changes_take_one_type_at_a_mount_root() {
    let (vfs, p) = peers();
    assert_eq!(
        p.mount(b"", b"/a", b"", MS_SHARED | MS_SLAVE),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.mount(b"", b"/a/x", b"", MS_SHARED), Err(Errno::EINVAL));
    p.mount(b"", b"/a", b"", MS_PRIVATE | MS_SILENT).unwrap();
    // /b lost its peer: nothing propagates either way.
    tmpfs_on(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    p.umount2(b"/a/x", 0).unwrap();
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

/// Walkers keep resolving paths through two peers while one thread
/// mounts, binds and unmounts beneath them: every walk sees a whole tree
/// (the directory or the mount on it, never an error), and afterwards the
/// invariant checker finds every reference accounted for.
#[test]
fn propagating_mounts_under_concurrent_walks() {
    let (vfs, p) = peers();
    let p = Arc::new(p);
    let stop = Arc::new(AtomicBool::new(false));
    let walkers: Vec<_> = (0..2)
        .map(|i| {
            let p = p.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let path: &[u8] = if i == 0 { b"/a/x" } else { b"/b/x" };
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    p.stat(path).unwrap();
                    if let Ok(fd) = p.open(path, O_RDONLY | O_DIRECTORY, 0) {
                        p.close(fd).unwrap();
                    }
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    for round in 0..300 {
        tmpfs_on(&p, b"/a/x");
        if round % 3 == 0 {
            p.mount(b"/a/y", b"/c", b"", MS_BIND).unwrap();
            p.umount2(b"/c", 0).unwrap();
        }
        // Busy while a walker holds it open: retry lazily then.
        let target: &[u8] = if round % 2 == 0 { b"/a/x" } else { b"/b/x" };
        if p.umount2(target, 0) == Err(Errno::EBUSY) {
            p.umount2(target, MNT_DETACH).unwrap();
        }
        assert_eq!(dev(&p, b"/a/x"), dev(&p, b"/a"));
        assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/b"));
    }
    stop.store(true, Ordering::Relaxed);
    for w in walkers {
        assert!(w.join().unwrap() > 0);
    }
    let p = checked(&vfs, Arc::try_unwrap(p).ok().unwrap());
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    done(vfs, p);
}

/// MOVE_MOUNT_BENEATH under concurrent walks: one thread keeps putting
/// new mounts beneath the top of /a's stack while walkers resolve a name
/// on the top; the top never leaves the place in a walk's eyes (the move
/// and its re-hook are one write section of the mount table), so every
/// walk finds the name on the top's instance. Then each umount of /a
/// uncovers the mount put beneath last, in order, and the invariant
/// checker finds every reference accounted for.
#[test]
fn beneath_moves_under_concurrent_walks() {
    let (vfs, p) = setup();
    for d in [&b"/a"[..], b"/n"] {
        p.mkdir(d, 0o755).unwrap();
    }
    tmpfs_on(&p, b"/a");
    mkfile(&p, b"/a/top", b"");
    let top_dev = dev(&p, b"/a");
    let p = Arc::new(p);
    let stop = Arc::new(AtomicBool::new(false));
    let walkers: Vec<_> = (0..2)
        .map(|_| {
            let p = p.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(p.stat(b"/a/top").unwrap().dev, top_dev);
                    let fd = p.open(b"/a/top", O_RDONLY, 0).unwrap();
                    p.close(fd).unwrap();
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    const ROUNDS: usize = 200;
    for round in 0..ROUNDS {
        tmpfs_on(&p, b"/n");
        mkfile(&p, format!("/n/m{round}").as_bytes(), b"");
        p.move_mount(AT_FDCWD, b"/n", AT_FDCWD, b"/a", MOVE_MOUNT_BENEATH)
            .unwrap();
        assert_eq!(dev(&p, b"/a"), top_dev);
        assert!(names(&p, b"/n").is_empty());
    }
    stop.store(true, Ordering::Relaxed);
    for w in walkers {
        assert!(w.join().unwrap() > 0);
    }
    let p = checked(&vfs, Arc::try_unwrap(p).ok().unwrap());
    // Each went beneath the top, above the one before it.
    for round in (0..ROUNDS).rev() {
        p.umount2(b"/a", 0).unwrap();
        assert_eq!(names(&p, b"/a"), sorted(&[format!("m{round}").as_bytes()]));
    }
    p.umount2(b"/a", 0).unwrap();
    assert!(names(&p, b"/a").is_empty());
    done(vfs, p);
}

#[test]
fn a_shared_bind_of_a_plain_directory_leaves_nothing_behind() {
    let (vfs, p) = setup();
    for d in [&b"/d"[..], b"/d/sub", b"/e"] {
        p.mkdir(d, 0o755).unwrap();
    }
    // A directory bound on itself becomes a mount of the root instance.
    p.mount(b"/d", b"/d", b"", MS_BIND).unwrap();
    p.mount(b"", b"/d", b"", MS_SHARED).unwrap();
    p.mount(b"/d", b"/e", b"", MS_BIND | MS_REC).unwrap();
    tmpfs_on(&p, b"/e/sub");
    mkfile(&p, b"/e/sub/f", b"");
    assert_eq!(names(&p, b"/d/sub"), sorted(&[b"f"]));
    p.umount2(b"/d/sub", 0).unwrap();
    assert!(names(&p, b"/e/sub").is_empty());
    p.umount2(b"/e", 0).unwrap();
    p.umount2(b"/d", 0).unwrap();
    done(vfs, p);
}

/// A shared mount bound into itself doubles its peer group with each bind;
/// the namespace stops at `max_mounts` (Linux's fs.mount-max), counting
/// the copies propagation would make, with ENOSPC and nothing attached.
#[test]
fn propagation_stops_at_the_mount_limit() {
    let vfs = Vfs::with_config(VfsConfig {
        max_mounts: 9,
        ..VfsConfig::default()
    });
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    tmpfs_on(&p, b"/a");
    p.mkdir(b"/a/c", 0o755).unwrap();
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    // The root and /a, then as on the host kernel (`mount --bind a a/c`
    // over and over under `unshare -m`): 3, 5, 9, 17, ... mounts.
    for expected in [3, 5, 9] {
        p.mount(b"/a", b"/a/c", b"", MS_BIND).unwrap();
        assert_eq!(vfs.object_counts().mounts, expected);
    }
    // 8 more would pass the limit; so would one new mount.
    assert_eq!(p.mount(b"/a", b"/a/c", b"", MS_BIND), Err(Errno::ENOSPC));
    p.mkdir(b"/t", 0o755).unwrap();
    assert_eq!(p.mount(b"none", b"/t", b"tmpfs", 0), Err(Errno::ENOSPC));
    assert_eq!(vfs.object_counts().mounts, 9);
    // The second bind's copy covers /a itself (a peer's root was the
    // mountpoint): a lazy umount of /a takes that top first, then /a, as
    // on the host.
    p.umount2(b"/a", MNT_DETACH).unwrap();
    assert_eq!(vfs.object_counts().mounts, 2);
    p.umount2(b"/a", MNT_DETACH).unwrap();
    p.mount(b"none", b"/t", b"tmpfs", 0).unwrap();
    p.umount2(b"/t", 0).unwrap();
    done(vfs, p);
}

/// A large propagated tree (a shared mount bound into itself ten times:
/// 1,025 mounts) goes with lazy umounts of its top, every mount private and
/// detached, and a namespace dropped with such a tree up frees it all.
#[test]
fn a_large_propagated_tree_unmounts_and_drops_whole() {
    let grow = |p: &Process| {
        p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
        for _ in 0..10 {
            p.mount(b"/a", b"/a/c", b"", MS_BIND).unwrap();
        }
    };
    let (vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    tmpfs_on(&p, b"/a");
    p.mkdir(b"/a/c", 0o755).unwrap();
    grow(&p);
    assert_eq!(vfs.object_counts().mounts, 1025);
    let p = checked(&vfs, p);
    // Copies cover /a itself (a peer's root was a mountpoint): each lazy
    // umount of /a takes the top of its stack, until none is left.
    let mut umounts = 0;
    while p.umount2(b"/a", MNT_DETACH).is_ok() {
        umounts += 1;
    }
    // Three, as on the host (`umount -l a` until it fails, under
    // `unshare -m`).
    assert_eq!(umounts, 3);
    assert_eq!(p.umount2(b"/a", MNT_DETACH), Err(Errno::EINVAL));
    assert_eq!(vfs.object_counts().mounts, 1);
    done(vfs, p);
    // Dropped with the tree up.
    let (vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    tmpfs_on(&p, b"/a");
    p.mkdir(b"/a/c", 0o755).unwrap();
    grow(&p);
    drop(p);
    drop(vfs);
}
