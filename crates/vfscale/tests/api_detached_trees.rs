//! open_tree(2) and move_mount(2) (process/mount_api.rs, mount/anon.rs):
//! detached copies of a mount tree, attached by move_mount or dissolved
//! by their descriptor's last close. Every expectation was first seen on
//! the host kernel (6.18); `vfscale-difftest/tests/namespace_kernel.rs`
//! `open_tree_and_move_mount_match_the_kernel` compares it with the
//! kernel step by step.

mod common;
mod common_host;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// /a a tmpfs with /a/x a tmpfs in it, /a/x/y a directory there; /c a
/// directory.
fn tree() -> (Vfs, Process) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/a", 0).unwrap();
    tmpfs_at(&p, b"/a/x", 0).unwrap();
    p.mkdir(b"/a/x/y", 0o755).unwrap();
    p.mkdir(b"/c", 0o755).unwrap();
    (vfs, p)
}

fn clone_tree(p: &Process, path: &[u8], recursive: bool) -> Fd {
    let rec = if recursive { AT_RECURSIVE } else { 0 };
    p.open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | rec).unwrap()
}

fn attach(p: &Process, fd: Fd, to: &[u8]) -> SysResult<()> {
    p.move_mount(fd, b"", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH)
}

fn live_mounts(vfs: &Vfs) -> i64 {
    vfs.flush();
    vfs.object_counts().mounts
}

#[test]
fn a_copy_is_seen_through_its_descriptor_and_attached_by_move_mount() {
    let (vfs, p) = tree();
    p.mkdir(b"/a/x/y/z", 0o755).unwrap();
    let lines = |p: &Process| p.mountinfo().unwrap().split(|&b| b == b'\n').count();
    let before = lines(&p);
    let fd = clone_tree(&p, b"/a", true);
    // The copy is reachable through the descriptor, mounts crossed.
    assert!(p.fstatat(fd, b"x/y/z", 0).is_ok());
    let st = p.fstatat(fd, b"x", 0).unwrap();
    assert_eq!(st.dev, p.stat(b"/a/x").unwrap().dev);
    // It is in no namespace: not in mountinfo, and mount(2) on it is
    // refused (check_mnt).
    assert_eq!(lines(&p), before);
    p.mkdirat(fd, b"m", 0o755).unwrap();
    p.fchdir(fd).unwrap();
    assert_eq!(p.mount(b"none", b"m", b"tmpfs", 0), Err(Errno::EINVAL));
    p.chdir(b"/").unwrap();
    // Read-only while detached: only at its root.
    let ro = MountAttr::set(MOUNT_ATTR_RDONLY);
    p.mount_setattr(fd, b"", AT_EMPTY_PATH | AT_RECURSIVE, &ro)
        .unwrap();
    assert_eq!(p.mount_setattr(fd, b"x", 0, &ro), Err(Errno::EINVAL));
    attach(&p, fd, b"/c").unwrap();
    assert_eq!(lines(&p), before + 2);
    assert_eq!(p.mkdir(b"/c/x/y/n", 0o755), Err(Errno::EROFS));
    assert_eq!(p.mkdir(b"/a/x/y/n", 0o755), Ok(()));
    // Attached, it moves as MS_MOVE moves it, and a close changes nothing.
    p.close(fd).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.move_mount(AT_FDCWD, b"/c", AT_FDCWD, b"/b", 0).unwrap();
    assert!(p.stat(b"/b/x/y/z").is_ok());
    p.umount2(b"/b", MNT_DETACH).unwrap();
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn the_last_close_of_an_unattached_copy_dissolves_it() {
    let (vfs, p) = tree();
    let base = live_mounts(&vfs);
    let fd = clone_tree(&p, b"/a", true);
    assert_eq!(live_mounts(&vfs), base + 2);
    // A dup and a child's copy keep it; so does a descriptor of a path
    // inside, which does not own the tree.
    let dup = p.dup(fd).unwrap();
    let inside = p.open_tree(fd, b"x", 0).unwrap();
    let child = p.fork().unwrap();
    p.close(fd).unwrap();
    p.close(dup).unwrap();
    assert_eq!(live_mounts(&vfs), base + 2);
    drop(child);
    // Detached now, but `inside` still holds its mount (as a lazy umount
    // leaves what is in use).
    assert_eq!(live_mounts(&vfs), base + 1);
    assert!(p.fstatat(inside, b"y", 0).is_ok());
    p.close(inside).unwrap();
    assert_eq!(live_mounts(&vfs), base);
    // A copy of one mount, attached after its copy of a copy was made:
    // the second copy is a tree of its own, dissolved with its close.
    let one = clone_tree(&p, b"/a", false);
    let again = p
        .open_tree(one, b"", AT_EMPTY_PATH | OPEN_TREE_CLONE)
        .unwrap();
    attach(&p, one, b"/c").unwrap();
    p.close(one).unwrap();
    assert_eq!(live_mounts(&vfs), base + 2);
    p.close(again).unwrap();
    assert_eq!(live_mounts(&vfs), base + 1);
    p.umount2(b"/c", 0).unwrap();
    assert_eq!(live_mounts(&vfs), base);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn process_exit_dissolves_the_copies_it_held() {
    let (vfs, p) = tree();
    let base = live_mounts(&vfs);
    let child = p.fork().unwrap();
    for _ in 0..10 {
        clone_tree(&child, b"/a", true);
    }
    assert_eq!(live_mounts(&vfs), base + 20);
    drop(child);
    assert_eq!(live_mounts(&vfs), base);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn errors() {
    let (vfs, p) = tree();
    // open_tree.
    assert_eq!(p.open_tree(AT_FDCWD, b"/a", 0x4), Err(Errno::EINVAL));
    assert_eq!(
        p.open_tree(AT_FDCWD, b"/a", AT_RECURSIVE),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.open_tree(AT_FDCWD, b"/nothing", OPEN_TREE_CLONE),
        Err(Errno::ENOENT)
    );
    let u = user(&vfs, 1000, 1000);
    assert_eq!(
        u.open_tree(AT_FDCWD, b"/a", OPEN_TREE_CLONE),
        Err(Errno::EPERM)
    );
    let plain = u.open_tree(AT_FDCWD, b"/a", OPEN_TREE_CLOEXEC).unwrap();
    assert_eq!(u.fcntl(plain, F_GETFD, 0), Ok(i64::from(FD_CLOEXEC)));
    let status = u.fcntl(plain, F_GETFL, 0).unwrap();
    assert_eq!(status & i64::from(O_PATH), i64::from(O_PATH));
    p.mount(b"", b"/a/x", b"", MS_UNBINDABLE).unwrap();
    assert_eq!(
        p.open_tree(AT_FDCWD, b"/a/x", OPEN_TREE_CLONE),
        Err(Errno::EINVAL)
    );
    // move_mount.
    let t = clone_tree(&p, b"/a", true);
    let f = p.open(b"/c/f", O_WRONLY | O_CREAT, 0o644).unwrap();
    p.close(f).unwrap();
    assert_eq!(attach(&p, t, b"/c/f"), Err(Errno::EINVAL));
    assert_eq!(p.move_mount(t, b"", AT_FDCWD, b"/c", 0), Err(Errno::ENOENT));
    for bad in [0x1000, MOVE_MOUNT_BENEATH, MOVE_MOUNT_SET_GROUP] {
        assert_eq!(
            p.move_mount(t, b"", AT_FDCWD, b"/c", MOVE_MOUNT_F_EMPTY_PATH | bad),
            Err(Errno::EINVAL)
        );
    }
    assert_eq!(attach(&u, t, b"/c"), Err(Errno::EPERM));
    // Not the copy's root; not into the copy itself.
    assert_eq!(
        p.move_mount(t, b"x", AT_FDCWD, b"/c", 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.move_mount(t, b"", t, b"x", MOVE_MOUNT_F_EMPTY_PATH),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.move_mount(AT_FDCWD, b"/a", AT_FDCWD, b"/a/x/y", 0),
        Err(Errno::ELOOP)
    );
    // The target's final symlink is followed only when asked.
    p.symlink(b"c", b"/l").unwrap();
    assert_eq!(attach(&p, t, b"/l"), Err(Errno::EINVAL));
    p.move_mount(
        t,
        b"",
        AT_FDCWD,
        b"/l",
        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS,
    )
    .unwrap();
    // The copy left the unbindable /a/x out: its mountpoint is empty.
    assert!(p.stat(b"/c/x").is_ok());
    assert_eq!(p.stat(b"/c/x/y"), Err(Errno::ENOENT));
    drop(u);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn another_namespace_may_attach_a_copy_but_not_copy_it() {
    let (vfs, p) = tree();
    let t = clone_tree(&p, b"/a", false);
    let mut q = p.fork().unwrap();
    q.unshare(CLONE_NEWNS).unwrap();
    // may_copy_tree: the copy's origin is p's namespace.
    assert_eq!(
        q.open_tree(t, b"", AT_EMPTY_PATH | OPEN_TREE_CLONE),
        Err(Errno::EINVAL)
    );
    // do_move_mount takes a detached root from anywhere.
    attach(&q, t, b"/c").unwrap();
    assert!(q.stat(b"/c/x").is_ok());
    assert_eq!(p.stat(b"/c/x"), Err(Errno::ENOENT));
    drop(q);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

/// Copies made, walked, attached, detached and dropped by three threads
/// while a fourth walks the namespace: every copy ends attached and
/// unmounted, or dissolved; the mount count comes back to where it was.
#[test]
fn stress_copies_attach_and_dissolve_concurrently() {
    let (vfs, p) = tree();
    let base = live_mounts(&vfs);
    let stop = Arc::new(AtomicBool::new(false));
    let (attached, dropped) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let w = p.fork().unwrap();
            let place = format!("/c/w{i}").into_bytes();
            w.mkdir(&place, 0o755).unwrap();
            let (attached, dropped) = (attached.clone(), dropped.clone());
            std::thread::spawn(move || {
                for round in 0..300 {
                    let fd = clone_tree(&w, b"/a", round % 2 == 0);
                    assert!(w.fstatat(fd, b"x", 0).is_ok());
                    if round % 3 == 0 {
                        w.close(fd).unwrap();
                        dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    attach(&w, fd, &place).unwrap();
                    w.close(fd).unwrap();
                    assert!(w.stat(&[&place[..], b"/x"].concat()).is_ok());
                    w.umount2(&place, MNT_DETACH).unwrap();
                    attached.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let walker = {
        let w = p.fork().unwrap();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for i in 0..3 {
                    match w.stat(format!("/c/w{i}/x/y").as_bytes()) {
                        Ok(_) | Err(Errno::ENOENT) => {}
                        Err(e) => panic!("walk: {e:?}"),
                    }
                }
                w.mountinfo().unwrap();
            }
        })
    };
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    walker.join().unwrap();
    assert_eq!(attached.load(Ordering::Relaxed), 600);
    assert_eq!(dropped.load(Ordering::Relaxed), 300);
    assert_eq!(live_mounts(&vfs), base);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

// ---- fsopen, fsconfig, fsmount ----

fn set_string(p: &Process, fc: Fd, key: &str, value: &str) -> SysResult<()> {
    p.fsconfig(
        fc,
        FSCONFIG_SET_STRING,
        Some(key.as_bytes()),
        Some(value.as_bytes()),
        0,
    )
}

fn create(p: &Process, fc: Fd) -> SysResult<()> {
    p.fsconfig(fc, FSCONFIG_CMD_CREATE, None, None, 0)
}

#[test]
fn a_configured_tmpfs_is_made_mounted_detached_and_attached() {
    let (vfs, p) = tree();
    let fc = p.fsopen(b"tmpfs", FSOPEN_CLOEXEC).unwrap();
    assert_eq!(p.fcntl(fc, F_GETFD, 0), Ok(i64::from(FD_CLOEXEC)));
    // Its log of messages is not kept; it is neither written nor polled.
    let mut buf = [0u8; 64];
    assert_eq!(p.read(fc, &mut buf), Err(Errno::ENODATA));
    assert_eq!(p.write(fc, b"x"), Err(Errno::EINVAL));
    let ep = p.epoll_create1(0).unwrap();
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 0,
    };
    assert_eq!(
        p.epoll_ctl(ep, EPOLL_CTL_ADD, fc, Some(ev)),
        Err(Errno::EPERM)
    );
    set_string(&p, fc, "mode", "0710").unwrap();
    set_string(&p, fc, "uid", "1000").unwrap();
    set_string(&p, fc, "gid", "2000").unwrap();
    set_string(&p, fc, "source", "scratch").unwrap();
    p.fsconfig(fc, FSCONFIG_SET_FLAG, Some(b"ro"), None, 0)
        .unwrap();
    create(&p, fc).unwrap();
    let m = p.fsmount(fc, 0, MOUNT_ATTR_NOEXEC).unwrap();
    let st = p.fstatat(m, b"", AT_EMPTY_PATH).unwrap();
    assert_eq!((st.mode, st.uid, st.gid), (S_IFDIR | 0o710, 1000, 2000));
    attach(&p, m, b"/c").unwrap();
    assert_eq!(p.mkdir(b"/c/x", 0o755), Err(Errno::EROFS));
    let info = String::from_utf8(p.mountinfo().unwrap()).unwrap();
    assert!(
        info.lines()
            .any(|l| l.contains(" /c ") && l.contains("noexec") && l.ends_with("scratch ro")),
        "{info}"
    );
    // Writable again by a reconfiguration of the instance.
    p.fsconfig(fc, FSCONFIG_SET_FLAG, Some(b"rw"), None, 0)
        .unwrap();
    p.fsconfig(fc, FSCONFIG_CMD_RECONFIGURE, None, None, 0)
        .unwrap();
    p.mkdir(b"/c/x", 0o755).unwrap();
    for fd in [fc, m, ep] {
        p.close(fd).unwrap();
    }
    p.umount2(b"/c", 0).unwrap();
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn what_nobody_mounted_goes_with_its_descriptor() {
    let (vfs, p) = tree();
    vfs.flush();
    let before = vfs.object_counts();
    // A configuration alone; one with its instance made; a detached
    // mount of another, with a file in it.
    let unused = p.fsopen(b"tmpfs", 0).unwrap();
    let made = p.fsopen(b"tmpfs", 0).unwrap();
    create(&p, made).unwrap();
    let fc = p.fsopen(b"tmpfs", 0).unwrap();
    create(&p, fc).unwrap();
    let m = p.fsmount(fc, FSMOUNT_CLOEXEC, 0).unwrap();
    let f = p.openat(m, b"f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(f).unwrap();
    vfs.flush();
    assert!(vfs.object_counts().inodes >= before.inodes + 3);
    for fd in [unused, made, fc, m] {
        p.close(fd).unwrap();
    }
    vfs.flush();
    let after = vfs.object_counts();
    assert_eq!(
        (after.inodes, after.dentries, after.mounts, after.files),
        (before.inodes, before.dentries, before.mounts, before.files)
    );
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn a_passthrough_is_configured_by_its_source() {
    let host = common_host::HostDir::new("fsopen");
    host.write("hello", b"hi");
    let (vfs, p) = tree();
    let fc = p.fsopen(b"passthrough", 0).unwrap();
    // No source: nothing to mirror.
    assert_eq!(create(&p, fc), Err(Errno::EINVAL));
    assert_eq!(create(&p, fc), Err(Errno::EBUSY));
    let fc = p.fsopen(b"passthrough", 0).unwrap();
    set_string(&p, fc, "source", host.path().to_str().unwrap()).unwrap();
    assert_eq!(set_string(&p, fc, "mode", "0700"), Err(Errno::EINVAL));
    create(&p, fc).unwrap();
    let m = p.fsmount(fc, 0, 0).unwrap();
    attach(&p, m, b"/c").unwrap();
    assert_eq!(p.stat(b"/c/hello").unwrap().size, 2);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

/// A configuration's descriptor closed by one thread while a sibling
/// sharing the table configures and mounts through it: each call either
/// finds the descriptor (and finishes on the configuration, whose release
/// waits for it) or EBADF; nothing is left behind.
#[test]
fn stress_closes_race_configuration_calls() {
    let (vfs, p) = tree();
    vfs.flush();
    let before = vfs.object_counts();
    let sibling = p.clone_thread();
    let (tx, rx) = std::sync::mpsc::channel::<Fd>();
    let worker = std::thread::spawn(move || {
        let mut mounted = 0u32;
        for fc in rx {
            let r = sibling
                .fsconfig(fc, FSCONFIG_CMD_CREATE, None, None, 0)
                .and_then(|()| sibling.fsmount(fc, 0, 0));
            match r {
                Ok(m) => {
                    mounted += 1;
                    sibling.close(m).unwrap();
                }
                // Closed meanwhile; or its number reused by another
                // fsopen (already created or mounted: EBUSY) or by one of
                // our own mounts (not a configuration: EINVAL).
                Err(e) => assert!(
                    matches!(e, Errno::EBADF | Errno::EBUSY | Errno::EINVAL),
                    "{e:?}"
                ),
            }
        }
        mounted
    });
    for round in 0..400 {
        let fc = p.fsopen(b"tmpfs", 0).unwrap();
        tx.send(fc).unwrap();
        if round % 2 == 0 {
            std::thread::yield_now();
        }
        // The fd may be reused by the next fsopen before the sibling got
        // to it: then the sibling works on that one, which is fine.
        let _ = p.close(fc);
    }
    drop(tx);
    let mounted = worker.join().unwrap();
    assert!(mounted <= 400);
    vfs.flush();
    let after = vfs.object_counts();
    assert_eq!(
        (after.inodes, after.dentries, after.mounts, after.files),
        (before.inodes, before.dentries, before.mounts, before.files)
    );
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}
