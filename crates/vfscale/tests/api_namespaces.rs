//! Mount namespaces (mount/namespace.rs, process/namespaces.rs):
//! unshare(CLONE_NEWNS) copies the tree, what each namespace then sees,
//! propagation between them, check_mnt's EINVAL for another namespace's
//! mounts (type changes excepted), setns, a namespace dissolved with its last process, and
//! /proc/self/mountinfo. Every expectation was first seen on the host
//! kernel (6.18, tmpfs under `unshare -m`);
//! `vfscale-difftest/tests/namespace_kernel.rs` compares scripts and
//! random sequences with the kernel step by step.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// /a a tmpfs holding x/ and y/ (shared when `shared`); /b a plain
/// directory.
fn tree(shared: bool) -> (Vfs, Process) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/a", 0).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mkdir(b"/a/x", 0o755).unwrap();
    p.mkdir(b"/a/y", 0o755).unwrap();
    if shared {
        p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    }
    (vfs, p)
}

/// A child of `p` in a namespace of its own.
fn unshared(p: &Process) -> Process {
    let mut q = p.fork().unwrap();
    q.unshare(CLONE_NEWNS).unwrap();
    q
}

fn tmpfs_on(p: &Process, path: &[u8]) {
    p.mount(b"none", path, b"tmpfs", 0).unwrap();
}

fn dev(p: &Process, path: &[u8]) -> u64 {
    p.stat(path).unwrap().dev
}

/// The mount points in `p`'s mountinfo, in its order.
fn mount_points(p: &Process) -> Vec<String> {
    info_lines(p)
        .iter()
        .map(|l| l.split(' ').nth(4).unwrap().to_string())
        .collect()
}

fn info_lines(p: &Process) -> Vec<String> {
    String::from_utf8(p.mountinfo().unwrap())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The mountinfo line of the mount at `point`.
fn info_of(p: &Process, point: &str) -> String {
    info_lines(p)
        .into_iter()
        .rev()
        .find(|l| l.split(' ').nth(4) == Some(point))
        .unwrap_or_else(|| panic!("no mount at {point}"))
}

/// Checks the invariants and that only the root mount is left once every
/// process is gone.
fn done(vfs: Vfs, procs: Vec<Process>) {
    drop(procs);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn the_copy_sees_the_same_tree_and_later_private_mounts_stay_apart() {
    let (vfs, p) = tree(false);
    mkfile(&p, b"/a/x/f", b"1");
    p.chdir(b"/a/x").unwrap();
    let q = unshared(&p);
    // The same files through copies of the same mounts, cwd moved along.
    assert_eq!(q.getcwd().unwrap(), b"/a/x");
    assert_eq!(read_file(&q, b"f"), b"1");
    assert_eq!(dev(&q, b"/a"), dev(&p, b"/a"));
    assert_eq!(mount_points(&q), ["/", "/a"]);
    // New mounts in either namespace stay there.
    tmpfs_on(&p, b"/a/x");
    tmpfs_on(&q, b"/a/y");
    assert_eq!(names(&q, b"/a/x"), sorted(&[b"f"]));
    assert_ne!(dev(&p, b"/a/x"), dev(&p, b"/a"));
    assert_eq!(dev(&p, b"/a/y"), dev(&p, b"/a"));
    assert_ne!(dev(&q, b"/a/y"), dev(&q, b"/a"));
    assert_eq!(mount_points(&p), ["/", "/a", "/a/x"]);
    assert_eq!(mount_points(&q), ["/", "/a", "/a/y"]);
    // An umount too.
    q.chdir(b"/").unwrap();
    q.umount2(b"/a", MNT_DETACH).unwrap();
    assert_eq!(names(&p, b"/a/x"), sorted(&[]));
    assert_eq!(names(&q, b"/a"), sorted(&[]));
    assert_eq!(mount_points(&p), ["/", "/a", "/a/x"]);
    p.chdir(b"/").unwrap();
    done(vfs, vec![p, q]);
}

#[test]
fn unshare_errors_and_clone_fs() {
    let (vfs, p) = tree(false);
    let mut u = user(&vfs, 1000, 1000);
    assert_eq!(u.unshare(CLONE_NEWNS), Err(Errno::EPERM));
    // A user may unshare its fs context (no copy of the mounts).
    assert_eq!(u.unshare(CLONE_FS), Ok(()));
    let mut q = p.fork().unwrap();
    // CLONE_NEWNET and the rest are not built; CLONE_FILES is a no-op for
    // a table nobody shares.
    assert_eq!(q.unshare(0x4000_0000), Err(Errno::EINVAL));
    assert_eq!(q.unshare(CLONE_FILES), Ok(()));
    // Nothing changes when the whole call is refused.
    let mut ut = u.clone_thread();
    let ufd = u.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(ut.unshare(CLONE_FILES | CLONE_NEWNS), Err(Errno::EPERM));
    u.close(ufd).unwrap();
    assert_eq!(ut.fstat(ufd).unwrap_err(), Errno::EBADF);
    assert_eq!(q.unshare(0), Ok(()));
    // A thread's unshare(CLONE_FS) gives it its own cwd.
    let mut t = q.clone_thread();
    t.chdir(b"/a").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"/a");
    t.unshare(CLONE_FS).unwrap();
    t.chdir(b"/b").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"/a");
    assert_eq!(t.getcwd().unwrap(), b"/b");
    done(vfs, vec![p, q, t, u, ut]);
}

#[test]
fn unshare_clone_files_gives_a_thread_its_own_table() {
    let (vfs, p) = tree(false);
    let mut t = p.clone_thread();
    let fd = p.open(b"/a/f", O_RDWR | O_CREAT, 0o644).unwrap();
    t.unshare(CLONE_FILES).unwrap();
    // The same descriptors, each side's own from now on.
    assert_eq!(t.fstat(fd).unwrap().ino, p.fstat(fd).unwrap().ino);
    let other = p.open(b"/b", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(t.fstat(other).unwrap_err(), Errno::EBADF);
    p.close(fd).unwrap();
    assert_eq!(t.write(fd, b"still open"), Ok(10));
    t.close(fd).unwrap();
    assert_eq!(p.stat(b"/a/f").unwrap().size, 10);
    done(vfs, vec![p, t]);
}

/// Two threads of one table unshare it at once, then everyone exits: the
/// old table is closed exactly once (by the last to leave it), the copies
/// by their own threads.
#[test]
fn stress_siblings_unshare_their_table_at_once() {
    let (vfs, p) = tree(false);
    for _ in 0..200 {
        let q = p.fork().unwrap();
        let fd = q.open(b"/a/x/.", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let pair: Vec<_> = (0..2)
            .map(|_| {
                let mut t = q.clone_thread();
                std::thread::spawn(move || {
                    t.unshare(CLONE_FILES).unwrap();
                    assert!(t.fstat(fd).is_ok());
                    t.exit();
                })
            })
            .collect();
        if fd % 2 == 0 {
            q.exit();
        } else {
            drop(q);
        }
        for t in pair {
            t.join().unwrap();
        }
    }
    vfs.flush();
    assert_eq!(vfs.object_counts().files, 0);
    done(vfs, vec![p]);
}

#[test]
fn a_thread_that_unshares_leaves_its_siblings_in_the_old_namespace() {
    let (vfs, p) = tree(false);
    let mut t = p.clone_thread();
    t.unshare(CLONE_NEWNS).unwrap();
    tmpfs_on(&t, b"/a/x");
    assert_eq!(mount_points(&p), ["/", "/a"]);
    assert_eq!(mount_points(&t), ["/", "/a", "/a/x"]);
    // The sibling's cwd change no longer reaches it.
    p.chdir(b"/a").unwrap();
    assert_eq!(t.getcwd().unwrap(), b"/");
    p.chdir(b"/").unwrap();
    // Its exit dissolves its namespace; the old one stays whole.
    let before = vfs.object_counts().mounts;
    t.exit();
    vfs.flush();
    assert_eq!(vfs.object_counts().mounts, before - 3);
    assert_eq!(mount_points(&p), ["/", "/a"]);
    done(vfs, vec![p]);
}

#[test]
fn a_shared_mount_propagates_between_namespaces_both_ways() {
    let (vfs, p) = tree(true);
    let q = unshared(&p);
    // q's /a is a peer of p's.
    assert_eq!(
        info_of(&p, "/a").split(' ').nth(6),
        info_of(&q, "/a").split(' ').nth(6)
    );
    tmpfs_on(&p, b"/a/x");
    mkfile(&p, b"/a/x/m", b"1");
    assert_eq!(names(&q, b"/a/x"), sorted(&[b"m"]));
    tmpfs_on(&q, b"/a/y");
    mkfile(&q, b"/a/y/n", b"2");
    assert_eq!(names(&p, b"/a/y"), sorted(&[b"n"]));
    q.umount2(b"/a/x", 0).unwrap();
    assert_eq!(names(&p, b"/a/x"), sorted(&[]));
    // A busy copy in the other namespace makes the umount EBUSY.
    p.chdir(b"/a/y").unwrap();
    assert_eq!(q.umount2(b"/a/y", 0), Err(Errno::EBUSY));
    p.chdir(b"/").unwrap();
    q.umount2(b"/a/y", 0).unwrap();
    assert_eq!(mount_points(&p), ["/", "/a"]);
    // Slave in q: p's mounts reach q, q's do not reach p.
    q.mount(b"", b"/a", b"", MS_SLAVE).unwrap();
    tmpfs_on(&p, b"/a/x");
    assert_eq!(mount_points(&q), ["/", "/a", "/a/x"]);
    tmpfs_on(&q, b"/a/y");
    assert_eq!(mount_points(&p), ["/", "/a", "/a/x"]);
    // Private: nothing more either way.
    q.mount(b"", b"/a", b"", MS_PRIVATE).unwrap();
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(mount_points(&q), ["/", "/a", "/a/x", "/a/y"]);
    done(vfs, vec![p, q]);
}

#[test]
fn another_namespaces_mounts_are_einval_to_every_mount_call() {
    let (vfs, p) = tree(false);
    let fd = p.open(b"/a", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let q = unshared(&p);
    // q's descriptor (inherited) is on p's /a; its cwd there too.
    q.fchdir(fd).unwrap();
    assert_eq!(names(&q, b"."), sorted(&[b"x", b"y"]));
    assert_eq!(q.mount(b"none", b"x", b"tmpfs", 0), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"/b", b"x", b"", MS_BIND), Err(Errno::EINVAL));
    assert_eq!(q.mount(b".", b"/b", b"", MS_BIND), Err(Errno::EINVAL));
    assert_eq!(q.mount(b".", b"/b", b"", MS_MOVE), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"/a", b"x", b"", MS_MOVE), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"", b".", b"", MS_REMOUNT), Err(Errno::EINVAL));
    assert_eq!(
        q.mount(b"", b".", b"", MS_REMOUNT | MS_BIND | MS_RDONLY),
        Err(Errno::EINVAL)
    );
    // A type change asks only that the mount be attached, anywhere (6.16's
    // may_change_propagation): p's /a becomes shared.
    assert_eq!(q.mount(b"", b".", b"", MS_SHARED), Ok(()));
    assert!(info_of(&p, "/a").contains(" shared:"));
    assert_eq!(q.mount(b"", b".", b"", MS_PRIVATE), Ok(()));
    assert_eq!(q.umount2(b".", 0), Err(Errno::EINVAL));
    assert_eq!(q.umount2(b".", MNT_DETACH), Err(Errno::EINVAL));
    // The same names through q's own namespace work.
    q.chdir(b"/").unwrap();
    tmpfs_on(&q, b"/a/x");
    q.umount2(b"/a/x", 0).unwrap();
    q.close(fd).unwrap();
    p.close(fd).unwrap();
    done(vfs, vec![p, q]);
}

#[test]
fn a_namespace_goes_with_its_last_process_and_what_is_used_stays() {
    let (vfs, p) = tree(false);
    let base = vfs.object_counts().mounts;
    let q = unshared(&p);
    tmpfs_on(&q, b"/b");
    mkfile(&q, b"/b/f", b"kept");
    let fd = q.open(b"/b/f", O_RDONLY, 0).unwrap();
    // A child shares the namespace: it stays after q exits.
    let r = q.fork().unwrap();
    q.exit();
    vfs.flush();
    assert_eq!(vfs.object_counts().mounts, base + 3);
    assert_eq!(mount_points(&r), ["/", "/a", "/b"]);
    // The last one's exit detaches the tree (and closes the descriptor
    // the fork copied).
    assert_eq!(read_file(&r, b"/b/f"), b"kept");
    r.close(fd).unwrap();
    r.exit();
    vfs.flush();
    assert_eq!(vfs.object_counts().mounts, base);
    assert_eq!(mount_points(&p), ["/", "/a"]);
    done(vfs, vec![p]);
}

#[test]
fn an_open_file_keeps_a_dissolved_namespaces_mount_alive() {
    let (vfs, p) = tree(false);
    let base = vfs.object_counts().mounts;
    let mut q = p.fork().unwrap();
    let t = q.clone_thread();
    q.unshare(CLONE_NEWNS).unwrap();
    tmpfs_on(&q, b"/b");
    mkfile(&q, b"/b/f", b"kept");
    // The descriptor table is the thread's too: t keeps the file after
    // q (the namespace's only process) exits.
    let fd = q.open(b"/b/f", O_RDONLY, 0).unwrap();
    q.exit();
    vfs.flush();
    assert_eq!(vfs.object_counts().mounts, base + 1);
    let mut buf = [0u8; 8];
    assert_eq!(t.read(fd, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"kept");
    t.close(fd).unwrap();
    vfs.flush();
    assert_eq!(vfs.object_counts().mounts, base);
    done(vfs, vec![p, t]);
}

#[test]
fn setns_moves_a_process_into_another_namespace() {
    let (vfs, p) = tree(false);
    let r = unshared(&p);
    tmpfs_on(&r, b"/b");
    mkfile(&r, b"/b/f", b"r");
    let mut s = p.fork().unwrap();
    s.chdir(b"/a/x").unwrap();
    s.setns_mount(&r).unwrap();
    assert_eq!(s.getcwd().unwrap(), b"/");
    assert_eq!(read_file(&s, b"/b/f"), b"r");
    tmpfs_on(&s, b"/a/x");
    assert_eq!(mount_points(&r), ["/", "/a", "/b", "/a/x"]);
    assert_eq!(mount_points(&p), ["/", "/a"]);
    // Errors: not root; a context shared with a thread.
    let mut u = user(&vfs, 1000, 1000);
    assert_eq!(u.setns_mount(&r), Err(Errno::EPERM));
    let mut t = p.fork().unwrap();
    let sibling = t.clone_thread();
    assert_eq!(t.setns_mount(&r), Err(Errno::EINVAL));
    // The root it lands on is the top of the namespace's root stack.
    let mut w = p.fork().unwrap();
    r.mount(b"none", b"/", b"tmpfs", 0).unwrap();
    w.setns_mount(&r).unwrap();
    assert_eq!(names(&w, b"/"), sorted(&[]));
    done(vfs, vec![p, r, s, u, t, sibling, w]);
}

#[test]
fn mountinfo_fields() {
    let (vfs, p) = tree(true);
    p.mkdir(b"/a/x/sub dir", 0o755).unwrap();
    p.mount(b"/a/x/sub dir", b"/b", b"", MS_BIND).unwrap();
    let lines = info_lines(&p);
    assert_eq!(lines.len(), 3);
    let f: Vec<Vec<&str>> = lines.iter().map(|l| l.split(' ').collect()).collect();
    // The root: its own parent.
    assert_eq!(f[0][0], f[0][1]);
    assert_eq!(&f[0][3..6], ["/", "/", "rw,relatime"]);
    // /a: parent the root, source as given, a peer group.
    assert_eq!(f[1][1], f[0][0]);
    assert_eq!(&f[1][3..5], ["/", "/a"]);
    assert!(f[1][6].starts_with("shared:"));
    assert_eq!(&f[1][7..], ["-", "tmpfs", "none", "rw"]);
    // The bind: the same instance, its root a subdirectory (a space
    // escaped), a peer of /a.
    assert_eq!(f[2][2], f[1][2]);
    assert_eq!(&f[2][3..5], ["/x/sub\\040dir", "/b"]);
    assert_eq!(f[2][6], f[1][6]);
    // Flags, a slave, unbindable.
    p.mount(
        b"",
        b"/b",
        b"",
        MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
    )
    .unwrap();
    p.mount(b"", b"/b", b"", MS_SLAVE).unwrap();
    let b = info_of(&p, "/b");
    let group = f[1][6].trim_start_matches("shared:");
    assert_eq!(
        b.split(' ').nth(5),
        Some("ro,nosuid,noexec,relatime"),
        "{b}"
    );
    assert_eq!(b.split(' ').nth(6), Some(&*format!("master:{group}")));
    p.mount(b"", b"/b", b"", MS_UNBINDABLE).unwrap();
    let b = info_of(&p, "/b");
    assert_eq!(b.split(' ').nth(6), Some("unbindable"), "{b}");
    // A chroot sees only the mounts beneath its root, by paths from it.
    let c = p.fork().unwrap();
    c.chroot(b"/a").unwrap();
    assert_eq!(mount_points(&c), ["/"]);
    let c2 = p.fork().unwrap();
    tmpfs_on(&p, b"/a/y");
    c2.chroot(b"/a/y").unwrap();
    assert_eq!(mount_points(&c2), ["/"]);
    c.chdir(b"/").unwrap();
    assert_eq!(mount_points(&c), ["/", "/y"]);
    // A bind of a directory removed since: "//deleted".
    p.mkdir(b"/a/gone", 0o755).unwrap();
    p.mkdir(b"/c", 0o755).unwrap();
    p.mount(b"/a/gone", b"/c", b"", MS_BIND).unwrap();
    p.rmdir(b"/a/gone").unwrap();
    assert_eq!(info_of(&p, "/c").split(' ').nth(3), Some("/gone//deleted"));
    done(vfs, vec![p, c, c2]);
}

/// Mounts stacked and nested thousands deep (process/mountinfo.rs names
/// each from its parent's path, once per listing): every line names its
/// mountpoint and parent as a walk up the tree would, and a chroot into
/// the middle of the chain sees the part beneath it.
#[test]
fn mountinfo_names_mounts_stacked_and_nested_deep() {
    let (vfs, p) = setup();
    p.mkdir(b"/s", 0o755).unwrap();
    for _ in 0..3000 {
        tmpfs_on(&p, b"/s");
    }
    // A chain: each mount on a directory two names deep in the one before
    // (a segment of several names), the last levels' names with a space.
    let mut expected = vec!["/".to_string()];
    expected.extend(std::iter::repeat_n("/s".to_string(), 3000));
    let mut at = String::from("/n");
    tmpfs_at(&p, at.as_bytes(), 0).unwrap();
    expected.push(at.clone());
    for level in 0..300 {
        let leaf = if level < 295 { "l" } else { "l l" };
        p.mkdir(format!("{at}/d").as_bytes(), 0o755).unwrap();
        at = format!("{at}/d/{leaf}");
        tmpfs_at(&p, at.as_bytes(), 0).unwrap();
        expected.push(at.replace(' ', "\\040"));
    }
    let lines = info_lines(&p);
    assert_eq!(mount_points(&p), expected);
    let fields: Vec<Vec<&str>> = lines.iter().map(|l| l.split(' ').collect()).collect();
    for (i, f) in fields.iter().enumerate().skip(1) {
        // Each stacked mount's parent is the one below it; /n's is the
        // root; each of the chain's is the level before.
        let parent = if i == 3001 { 0 } else { i - 1 };
        assert_eq!(f[1], fields[parent][0], "line {i}: {}", lines[i]);
    }
    // Chrooted at the 100th level: the levels beneath it, from it.
    let c = p.fork().unwrap();
    let middle = expected[3002 + 100].clone();
    c.chroot(middle.as_bytes()).unwrap();
    c.chdir(b"/").unwrap();
    let seen: Vec<String> = expected[3002 + 100..]
        .iter()
        .map(|m| match &m[middle.len()..] {
            "" => "/".to_string(),
            rest => rest.to_string(),
        })
        .collect();
    assert_eq!(mount_points(&c), seen);
    done(vfs, vec![p, c]);
}

/// A listing reads all its names as of one moment, as one d_path does:
/// a directory holding 64 mounts side by side (each line's walk reads
/// the directory's name anew) is renamed back and forth while listings
/// are read, and every listing names all 64 under one of the two names.
/// A listing a rename overlapped is read again under the rename lock, so
/// it always ends.
#[test]
fn a_listing_names_its_mounts_as_of_one_moment_under_renames() {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/r", 0).unwrap();
    p.mkdir(b"/r/x", 0o755).unwrap();
    for i in 0..64 {
        tmpfs_at(&p, format!("/r/x/m{i}").as_bytes(), 0).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let renamer = {
        let w = p.fork().unwrap();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut renames = 0u64;
            while !stop.load(Ordering::Relaxed) {
                w.rename(b"/r/x", b"/r/y").unwrap();
                w.rename(b"/r/y", b"/r/x").unwrap();
                renames += 2;
            }
            renames
        })
    };
    for _ in 0..300 {
        let side_by_side: Vec<String> = mount_points(&p)
            .into_iter()
            .filter(|m| m.starts_with("/r/"))
            .collect();
        assert_eq!(side_by_side.len(), 64);
        let under = &side_by_side[0][..4];
        assert!(
            side_by_side.iter().all(|m| m.starts_with(under)),
            "one listing names the mounts under both names: {side_by_side:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    assert!(renamer.join().unwrap() > 0);
    done(vfs, vec![p]);
}

/// propagate_from: a slave whose master's group has no member in our
/// namespace, while the group that group receives from does (the host
/// printed `master:2 propagate_from:1` for this sequence).
#[test]
fn mountinfo_propagate_from() {
    let (vfs, p) = tree(true);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    p.mount(b"", b"/b", b"", MS_SLAVE).unwrap();
    p.mount(b"", b"/b", b"", MS_SHARED).unwrap();
    let q = unshared(&p);
    q.mount(b"", b"/b", b"", MS_SLAVE).unwrap();
    let a = info_of(&q, "/a");
    let b = info_of(&p, "/b");
    let g0 = a.split(' ').nth(6).unwrap().trim_start_matches("shared:");
    let g1 = b.split(' ').nth(6).unwrap().trim_start_matches("shared:");
    assert_eq!(b.split(' ').nth(7), Some(&*format!("master:{g0}")));
    let qb = info_of(&q, "/b");
    assert_eq!(
        qb.split(' ').skip(6).take(2).collect::<Vec<_>>(),
        [format!("master:{g1}"), format!("propagate_from:{g0}")],
        "{qb}"
    );
    done(vfs, vec![p, q]);
}

/// Threads unsharing, mounting on a shared tree (copies land in every
/// namespace), walking and exiting at once; at the end every namespace
/// but the first is gone and the invariants hold.
#[test]
fn stress_namespaces_come_and_go_under_propagation() {
    let (vfs, p) = tree(true);
    let stop = Arc::new(AtomicBool::new(false));
    let walker = {
        let w = p.fork().unwrap();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = w.stat(b"/a/x/.");
                let _ = w.mountinfo().unwrap();
                n += 1;
            }
            n
        })
    };
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let w = p.fork().unwrap();
            std::thread::spawn(move || {
                for round in 0..40 {
                    let q = unshared(&w);
                    let spot: &[u8] = if (i + round) % 2 == 0 {
                        b"/a/x"
                    } else {
                        b"/a/y"
                    };
                    if q.mount(b"none", spot, b"tmpfs", 0).is_ok() {
                        let _ = q.stat(spot);
                        let _ = q.umount2(spot, MNT_DETACH);
                    }
                    if round % 3 == 0 {
                        let r = q.fork().unwrap();
                        drop(q);
                        let _ = r.mountinfo().unwrap();
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(walker.join().unwrap() > 0);
    // Whatever the races left on the shared tree belongs to p's namespace.
    for _ in 0..200 {
        let _ = p.umount2(b"/a/x", MNT_DETACH);
        let _ = p.umount2(b"/a/y", MNT_DETACH);
    }
    done(vfs, vec![p]);
}

/// 6.18's copy of an unbindable mount is private: clone_mnt does not copy
/// the type bits (older kernels kept it unbindable).
#[test]
fn the_copy_of_an_unbindable_mount_is_private() {
    let (vfs, p) = tree(false);
    p.mount(b"", b"/a", b"", MS_UNBINDABLE).unwrap();
    let q = unshared(&p);
    assert!(info_of(&p, "/a").contains(" unbindable"));
    assert!(!info_of(&q, "/a").contains(" unbindable"));
    assert_eq!(p.mount(b"/a", b"/b", b"", MS_BIND), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"/a", b"/b", b"", MS_BIND), Ok(()));
    done(vfs, vec![p, q]);
}

/// fs.mount-max limits each namespace alone (count_mounts): a copy of a
/// namespace at the limit can still hold its own mounts up to it, and a
/// propagated copy that would take any namespace past it is ENOSPC.
#[test]
fn the_mount_limit_counts_each_namespace_alone() {
    let vfs = Vfs::with_config(vfscale::VfsConfig {
        max_mounts: 4,
        ..Default::default()
    });
    let p = vfs.root_process();
    for d in [&b"/a"[..], b"/b", b"/c", b"/d"] {
        p.mkdir(d, 0o755).unwrap();
    }
    // The root and three more: p's namespace is full.
    tmpfs_on(&p, b"/a");
    tmpfs_on(&p, b"/b");
    tmpfs_on(&p, b"/c");
    assert_eq!(p.mount(b"none", b"/d", b"tmpfs", 0), Err(Errno::ENOSPC));
    // The copy has as many, and the same room: none.
    let q = unshared(&p);
    assert_eq!(q.mount(b"none", b"/d", b"tmpfs", 0), Err(Errno::ENOSPC));
    q.umount2(b"/c", 0).unwrap();
    tmpfs_on(&q, b"/d");
    assert_eq!(mount_points(&q), ["/", "/a", "/b", "/d"]);
    // p's namespace is still full: its /c stayed.
    p.umount2(b"/c", 0).unwrap();
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    // A mount on p's shared /a: one more in p's namespace, and q's copy of
    // /a is private (made before), so nothing more.
    p.mkdir(b"/a/x", 0o755).unwrap();
    tmpfs_on(&p, b"/a/x");
    assert_eq!(p.mount(b"none", b"/c", b"tmpfs", 0), Err(Errno::ENOSPC));
    p.umount2(b"/a/x", 0).unwrap();
    // A peer in a full namespace: the propagated copy would take it past
    // the limit.
    let r = unshared(&p);
    r.umount2(b"/b", 0).unwrap();
    assert_eq!(p.mount(b"none", b"/a/x", b"tmpfs", 0), Ok(()));
    assert_eq!(mount_points(&r), ["/", "/a", "/a/x"]);
    p.umount2(b"/a/x", 0).unwrap();
    tmpfs_on(&r, b"/b");
    tmpfs_on(&r, b"/c");
    assert_eq!(p.mount(b"none", b"/a/x", b"tmpfs", 0), Err(Errno::ENOSPC));
    done(vfs, vec![p, q, r]);
}

/// `/t` a tmpfs holding old/ and a marker; `/b` a directory of the root.
fn pivot_tree() -> (Vfs, Process) {
    let (vfs, p) = setup();
    p.mkdir(b"/t", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    tmpfs_on(&p, b"/t");
    p.mkdir(b"/t/old", 0o755).unwrap();
    p.mkdir(b"/t/t", 0o755).unwrap();
    p.open(b"/t/marker", O_WRONLY | O_CREAT, 0o644)
        .and_then(|fd| p.close(fd))
        .unwrap();
    (vfs, p)
}

#[test]
fn pivot_root_swaps_the_root_and_moves_who_was_on_it() {
    let (vfs, p) = pivot_tree();
    let q = p.fork().unwrap();
    let r = p.fork().unwrap();
    r.chdir(b"/b").unwrap();
    let s = unshared(&p);
    let old_root_dev = dev(&p, b"/");
    let new_root_dev = dev(&p, b"/t");
    p.pivot_root(b"/t", b"/t/old").unwrap();
    // p and q had root and cwd on the old root: both moved.
    for x in [&p, &q] {
        assert_eq!(x.getcwd().unwrap(), b"/");
        assert_eq!(dev(x, b"/"), new_root_dev);
        assert_eq!(dev(x, b"."), new_root_dev);
        assert_eq!(dev(x, b"/old"), old_root_dev);
        x.stat(b"/marker").unwrap();
    }
    // r's root moved; its cwd beneath the old root stayed, now /old/b.
    assert_eq!(r.getcwd().unwrap(), b"/old/b");
    assert_eq!(dev(&r, b"/"), new_root_dev);
    // Another namespace is untouched.
    assert_eq!(dev(&s, b"/"), old_root_dev);
    assert_eq!(s.stat(b"/old").unwrap_err(), Errno::ENOENT);
    // A process made afterwards starts at the new root, as does the
    // handle API's root.
    let n = vfs.root_process();
    assert_eq!(dev(&n, b"/"), new_root_dev);
    // In the order the mounts were made: the old root first.
    assert_eq!(mount_points(&p), ["/old", "/"]);
    assert!(
        info_of(&p, "/").ends_with(" - tmpfs none rw"),
        "{}",
        info_of(&p, "/")
    );
    // The old root leaves; what still uses it (r's cwd) keeps it.
    p.umount2(b"/old", MNT_DETACH).unwrap();
    assert_eq!(mount_points(&p), ["/"]);
    assert_eq!(names(&r, b"."), Vec::<Vec<u8>>::new());
    assert_eq!(vfs.fs_contexts(), 5);
    done(vfs.clone(), vec![p, q, r, s, n]);
    assert_eq!(vfs.fs_contexts(), 0);
}

#[test]
fn pivot_root_errors() {
    let (vfs, p) = pivot_tree();
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.pivot_root(b"/t", b"/t/old"), Err(Errno::EPERM));
    assert_eq!(p.pivot_root(b"/t/marker", b"/t/old"), Err(Errno::ENOTDIR));
    assert_eq!(p.pivot_root(b"/t", b"/t/marker"), Err(Errno::ENOTDIR));
    assert_eq!(p.pivot_root(b"/t/none", b"/t/old"), Err(Errno::ENOENT));
    assert_eq!(p.pivot_root(b"", b"/t/old"), Err(Errno::ENOENT));
    // put_old on the old root's mount; the root itself as the new one.
    assert_eq!(p.pivot_root(b"/t", b"/b"), Err(Errno::EBUSY));
    assert_eq!(p.pivot_root(b"/", b"/t/old"), Err(Errno::EBUSY));
    // Not a whole mount.
    assert_eq!(p.pivot_root(b"/t/old", b"/t/old"), Err(Errno::EINVAL));
    // A shared parent above the new root, a shared mount at put_old.
    p.mount(b"", b"/", b"", MS_SHARED).unwrap();
    assert_eq!(p.pivot_root(b"/t", b"/t/old"), Err(Errno::EINVAL));
    p.mount(b"", b"/", b"", MS_PRIVATE).unwrap();
    p.mount(b"", b"/t", b"", MS_SHARED).unwrap();
    assert_eq!(p.pivot_root(b"/t", b"/t/old"), Err(Errno::EINVAL));
    p.mount(b"", b"/t", b"", MS_PRIVATE).unwrap();
    // put_old not beneath the new root.
    tmpfs_on(&p, b"/b");
    assert_eq!(p.pivot_root(b"/t", b"/b"), Err(Errno::EINVAL));
    // The new root in another namespace (check_mnt): a descriptor of it
    // kept across an unshare.
    let mut q = p.fork().unwrap();
    let fd = q.open(b"/t", O_RDONLY | O_DIRECTORY, 0).unwrap();
    q.unshare(CLONE_NEWNS).unwrap();
    q.fchdir(fd).unwrap();
    assert_eq!(q.pivot_root(b".", b"."), Err(Errno::EINVAL));
    // Nothing changed; then the same pivot works.
    assert_eq!(mount_points(&p), ["/", "/t", "/b"]);
    p.pivot_root(b"/t", b"/t/old").unwrap();
    assert_eq!(mount_points(&p), ["/old", "/", "/old/b"]);
    done(vfs, vec![p, q, u]);
}

/// pivot_root back and forth between two roots while other threads fork,
/// exit, chdir, walk and read mountinfo in the same namespace: every
/// reference is put once (the checker's counts, no context left).
#[test]
fn stress_pivot_root_races_forks_exits_and_walks() {
    use std::sync::atomic::AtomicU64;
    let (vfs, first) = pivot_tree();
    let p = unshared(&first);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let w = p.fork().unwrap();
            let (stop, rounds) = (stop.clone(), rounds.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let c = w.fork().unwrap();
                    match i {
                        0 => {
                            let _ = c.chdir(b"/");
                            let _ = c.stat(b"/old/t/old");
                        }
                        1 => {
                            let _ = c.getcwd();
                            let _ = c.mountinfo().unwrap();
                        }
                        _ => {
                            let _ = c.chroot(b"/");
                            let _ = c.stat(b"marker");
                        }
                    }
                    drop(c);
                    rounds[i].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // At least 1,000 pivots each way, and each worker 200 rounds among them.
    let mut pivots = 0;
    while pivots < 1000 || rounds.iter().any(|r| r.load(Ordering::Relaxed) < 200) {
        p.pivot_root(b"/t", b"/t/old").unwrap();
        p.pivot_root(b"/old", b"/old/t").unwrap();
        pivots += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(mount_points(&p), ["/", "/t"]);
    assert_eq!(p.getcwd().unwrap(), b"/");
    done(vfs.clone(), vec![p, first]);
    assert_eq!(vfs.fs_contexts(), 0);
}
