//! mount(MS_MOVE) (process/mounts.rs `move_mount`) and where mounts go on
//! a target that already has one (`mount_target`, Linux's lock_mount).
//! Every expectation was first seen on the host kernel (6.18, tmpfs under
//! `unshare -m`).

mod common;
use common::*;

/// /a a tmpfs holding x/, file and sub/ (itself a tmpfs holding s); /b,
/// /c, /d plain directories and /f a file, on the root instance.
fn tree() -> (Vfs, Process) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/a", 0).unwrap();
    p.mkdir(b"/a/x", 0o755).unwrap();
    mkfile(&p, b"/a/file", b"1");
    tmpfs_at(&p, b"/a/sub", 0).unwrap();
    mkfile(&p, b"/a/sub/s", b"2");
    for d in [&b"/b"[..], b"/c", b"/d"] {
        p.mkdir(d, 0o755).unwrap();
    }
    mkfile(&p, b"/f", b"");
    (vfs, p)
}

#[test]
fn a_moved_mount_takes_its_submounts_and_leaves_its_old_place_empty() {
    let (vfs, p) = tree();
    let before = p.stat(b"/a/file").unwrap();
    p.mount(b"/a", b"/b", b"", MS_MOVE).unwrap();
    assert!(names(&p, b"/a").is_empty());
    assert_eq!(names(&p, b"/b"), sorted(&[b"file", b"sub", b"x"]));
    assert_eq!(names(&p, b"/b/sub"), sorted(&[b"s"]));
    // The same inode, in the same instance.
    let after = p.stat(b"/b/file").unwrap();
    assert_eq!((after.dev, after.ino), (before.dev, before.ino));
    // `..` from the moved mount's root is the new parent's.
    assert_eq!(p.stat(b"/b/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    // Its old mountpoint is a plain directory again: nothing to unmount.
    assert_eq!(p.umount2(b"/a", 0), Err(Errno::EINVAL));
    // A submount moves out on its own, and the flags stay the mount's.
    p.mount(b"", b"/b/sub", b"", MS_REMOUNT | MS_BIND | MS_NOEXEC)
        .unwrap();
    p.mount(b"/b/sub", b"/c", b"", MS_MOVE).unwrap();
    assert_eq!(names(&p, b"/c"), sorted(&[b"s"]));
    assert!(names(&p, b"/b/sub").is_empty());
    assert_ne!(p.statfs(b"/c").unwrap().f_flags & ST_NOEXEC, 0);
    // ... and into another mount.
    p.mount(b"/c", b"/b/x", b"", MS_MOVE).unwrap();
    assert_eq!(names(&p, b"/b/x"), sorted(&[b"s"]));
    // The parent is busy with its new child, as with any.
    assert_eq!(p.umount2(b"/b", 0), Err(Errno::EBUSY));
    p.umount2(b"/b/x", 0).unwrap();
    p.umount2(b"/b", 0).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_eq!(vfs.object_counts().mounts, 1);
}

#[test]
fn refused_moves_say_what_linux_says() {
    let (vfs, p) = tree();
    p.mount(b"/a", b"/b", b"", MS_MOVE).unwrap();
    for (src, tgt, e) in [
        // An empty source name; none that exists; no target (resolved
        // first, so both missing is the target's ENOENT too).
        (&b""[..], &b"/c"[..], Errno::EINVAL),
        (b"/nope", b"/c", Errno::ENOENT),
        (b"/b", b"/nope", Errno::ENOENT),
        (b"/nope", b"/nope2", Errno::ENOENT),
        // Not the root of a mount: a directory inside one, a plain one.
        (b"/b/x", b"/c", Errno::EINVAL),
        (b"/c", b"/d", Errno::EINVAL),
        // The namespace's root has no parent to leave.
        (b"/", b"/c", Errno::EINVAL),
        // Onto itself, or beneath itself (its own directory, its submount).
        (b"/b", b"/b", Errno::ELOOP),
        (b"/b", b"/b/x", Errno::ELOOP),
        (b"/b", b"/b/sub", Errno::ELOOP),
        // A directory's mount onto a file.
        (b"/b", b"/f", Errno::EINVAL),
    ] {
        assert_eq!(
            p.mount(src, tgt, b"", MS_MOVE),
            Err(e),
            "{} -> {}",
            String::from_utf8_lossy(src),
            String::from_utf8_lossy(tgt)
        );
    }
    // A file's mount (a bind of a file) onto a directory, and onto a file.
    mkfile(&p, b"/g", b"");
    mkfile(&p, b"/h", b"");
    p.mount(b"/f", b"/g", b"", MS_BIND).unwrap();
    assert_eq!(p.mount(b"/g", b"/d", b"", MS_MOVE), Err(Errno::EINVAL));
    p.mount(b"/g", b"/h", b"", MS_MOVE).unwrap();
    assert_eq!(p.umount2(b"/g", 0), Err(Errno::EINVAL));
    p.umount2(b"/h", 0).unwrap();
    // copy_mount_string, before the target's walk: a source or type with
    // a NUL inside (no C caller can pass one) or of PATH_MAX bytes.
    let long = vec![b'a'; PATH_MAX];
    for (src, ty) in [
        (&b"/b\0x"[..], &b""[..]),
        (b"/b", b"tmp\0fs"),
        (&long[..], b""),
    ] {
        assert_eq!(p.mount(src, b"/nope", ty, MS_MOVE), Err(Errno::EINVAL));
    }
    assert_eq!(
        p.mount(&long[..PATH_MAX - 1], b"/nope", b"", MS_MOVE),
        Err(Errno::ENOENT)
    );
    // A user: EPERM, after the target's walk.
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.mount(b"/b", b"/c", b"", MS_MOVE), Err(Errno::EPERM));
    assert_eq!(u.mount(b"/nope", b"/c", b"", MS_MOVE), Err(Errno::EPERM));
    assert_eq!(u.mount(b"/b", b"/nope", b"", MS_MOVE), Err(Errno::ENOENT));
    // Symlinks are followed, trailing slashes taken, MS_REC ignored.
    p.symlink(b"/b", b"/ln").unwrap();
    p.mount(b"/ln", b"/c/", b"", MS_MOVE | MS_REC).unwrap();
    assert_eq!(names(&p, b"/c"), sorted(&[b"file", b"sub", b"x"]));
    drop((p, u));
    vfs.check_invariants().unwrap();
}

#[test]
fn a_mount_on_a_mounted_target_goes_on_top() {
    let (vfs, p) = tree();
    // Moved onto a mountpoint: on top of what is there, which it hides
    // and keeps busy.
    tmpfs_at(&p, b"/e", 0).unwrap();
    mkfile(&p, b"/e/on_e", b"");
    p.mount(b"/a", b"/e", b"", MS_MOVE).unwrap();
    assert_eq!(names(&p, b"/e"), sorted(&[b"file", b"sub", b"x"]));
    assert_eq!(p.umount2(b"/e/sub", 0), Ok(()));
    p.umount2(b"/e", 0).unwrap();
    assert_eq!(names(&p, b"/e"), sorted(&[b"on_e"]));
    // A cwd under a mountpoint names the directory beneath the mount, but
    // a mount on "." still goes on top of the stack, for every kind.
    p.umount2(b"/e", 0).unwrap();
    p.chdir(b"/e").unwrap();
    p.mount(b"none", b"/e", b"tmpfs", 0).unwrap();
    mkfile(&p, b"/e/first", b"");
    tmpfs_at(&p, b"/m", 0).unwrap();
    p.mount(b"none", b".", b"tmpfs", 0).unwrap();
    assert!(names(&p, b"/e").is_empty());
    p.umount2(b"/e", 0).unwrap();
    assert_eq!(names(&p, b"/e"), sorted(&[b"first"]));
    p.mount(b"/a", b".", b"", MS_BIND).unwrap();
    assert!(names(&p, b"/e").is_empty());
    p.umount2(b"/e", 0).unwrap();
    p.mount(b"/m", b".", b"", MS_MOVE).unwrap();
    assert!(names(&p, b"/e").is_empty());
    assert_eq!(p.umount2(b"/m", 0), Err(Errno::EINVAL));
    p.umount2(b"/e", 0).unwrap();
    assert_eq!(names(&p, b"/e"), sorted(&[b"first"]));
    p.umount2(b"/e", 0).unwrap();
    assert!(names(&p, b"/e").is_empty());
    p.chdir(b"/").unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_eq!(vfs.object_counts().mounts, 1);
}

#[test]
fn moves_keep_a_cwd_inside_and_refuse_detached_and_removed_places() {
    let (vfs, p) = tree();
    p.mount(b"/a", b"/b", b"", MS_MOVE).unwrap();
    // A cwd inside the moved mount follows it.
    let q = vfs.root_process();
    q.chdir(b"/b/x").unwrap();
    p.mount(b"/b", b"/c", b"", MS_MOVE).unwrap();
    assert_eq!(q.getcwd().unwrap(), b"/c/x".to_vec());
    assert_eq!(names(&q, b".."), sorted(&[b"file", b"sub", b"x"]));
    // A removed directory is ENOENT as a target.
    p.mkdir(b"/gone", 0o755).unwrap();
    q.chdir(b"/gone").unwrap();
    p.rmdir(b"/gone").unwrap();
    assert_eq!(q.mount(b"/c", b".", b"", MS_MOVE), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"/c", b".", b"", MS_BIND), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"none", b".", b"tmpfs", 0), Err(Errno::ENOENT));
    // A lazily detached tree: not movable (EINVAL), and no target for a
    // move, a bind or a new mount (ENOENT, after the source's walk) —
    // but a remount or a propagation change of it is EINVAL.
    q.chdir(b"/c/x").unwrap();
    p.umount2(b"/c", MNT_DETACH).unwrap();
    assert_eq!(p.mount(b"/c", b"/d", b"", MS_MOVE), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"..", b"/d", b"", MS_MOVE), Err(Errno::EINVAL));
    tmpfs_at(&p, b"/m", 0).unwrap();
    assert_eq!(q.mount(b"/m", b"..", b"", MS_MOVE), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"/nope", b"..", b"", MS_MOVE), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"/m", b"..", b"", MS_BIND), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"none", b"..", b"tmpfs", 0), Err(Errno::ENOENT));
    assert_eq!(q.mount(b"none", b"..", b"nofs", 0), Err(Errno::ENODEV));
    assert_eq!(q.mount(b"..", b"/d", b"", MS_BIND), Err(Errno::EINVAL));
    assert_eq!(q.mount(b"", b"..", b"", MS_REMOUNT), Err(Errno::EINVAL));
    assert_eq!(
        q.mount(b"", b"..", b"", MS_REMOUNT | MS_BIND),
        Err(Errno::EINVAL)
    );
    assert_eq!(q.mount(b"", b"..", b"", MS_PRIVATE), Err(Errno::EINVAL));
    // The detached tree goes with the last reference into it.
    drop(q);
    p.umount2(b"/m", 0).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_eq!(vfs.object_counts().mounts, 1);
}

/// A mount moves back and forth between /p (on the root mount) and /n/q
/// (on another tmpfs) while other threads walk through it (down, and up
/// through `..` of its root) and ask for a cwd inside it: every answer is
/// one of the two places (the file's own inode, or ENOENT where the mount
/// just left; `..` of its root a directory of the parent it has at that
/// moment), never another inode or a path that is neither; at rest the
/// tree is consistent and no reference is left.
#[test]
fn walks_racing_moves_see_one_place_or_the_other() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (vfs, p) = setup();
    p.mkdir(b"/p", 0o755).unwrap();
    tmpfs_at(&p, b"/n", 0).unwrap();
    p.mkdir(b"/n/q", 0o755).unwrap();
    mkfile(&p, b"/top", b"");
    mkfile(&p, b"/n/top", b"");
    p.mount(b"none", b"/p", b"tmpfs", 0).unwrap();
    p.mkdir(b"/p/x", 0o755).unwrap();
    mkfile(&p, b"/p/file", b"m");
    let ino = |path: &[u8]| p.stat(path).unwrap().ino;
    let (file, tops) = (ino(b"/p/file"), [ino(b"/top"), ino(b"/n/top")]);
    let stop = Arc::new(AtomicBool::new(false));
    let walkers: Vec<_> = (0..2)
        .map(|t| {
            let q = vfs.root_process();
            q.chdir(b"/p/x").unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    for path in [
                        &b"/p/file"[..],
                        b"/n/q/file",
                        b"/p/x/../file",
                        b"/n/q/x/../file",
                    ] {
                        match q.stat(path) {
                            Ok(st) => {
                                assert_eq!(st.ino, file);
                                seen += 1;
                            }
                            Err(e) => assert_eq!(e, Errno::ENOENT),
                        }
                    }
                    // Up from the cwd inside the mount: through its root
                    // to wherever it is now.
                    let up = q.stat(b"../../top").unwrap().ino;
                    assert!(tops.contains(&up), "{t}: {up}");
                    assert_eq!(q.stat(b"../file").unwrap().ino, file);
                    let cwd = q.getcwd().unwrap();
                    assert!(cwd == b"/p/x" || cwd == b"/n/q/x", "{t}: {cwd:?}");
                }
                seen
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let mut moves = 0u32;
    while std::time::Instant::now() < deadline {
        let (from, to) = if moves.is_multiple_of(2) {
            (&b"/p"[..], &b"/n/q"[..])
        } else {
            (&b"/n/q"[..], &b"/p"[..])
        };
        p.mount(from, to, b"", MS_MOVE).unwrap();
        moves += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in walkers {
        assert!(w.join().unwrap() > 0);
    }
    assert!(moves > 10, "{moves}");
    // The parent mount is busy while the moved one is on it.
    if !moves.is_multiple_of(2) {
        assert_eq!(p.umount2(b"/n", 0), Err(Errno::EBUSY));
    }
    let at = if moves.is_multiple_of(2) {
        &b"/p"[..]
    } else {
        b"/n/q"
    };
    p.umount2(at, 0).unwrap();
    p.umount2(b"/n", 0).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_eq!(vfs.object_counts().mounts, 1);
}

/// A directory renamed out of a bind mount's subtree, with a cwd below
/// it: getcwd says "(unreachable)/" and `..` is ENOENT (Linux's
/// path_connected: a bind must not become a way out of its subtree),
/// down to the escaped directory's own parent; names below still resolve.
#[test]
fn a_cwd_renamed_out_of_a_bind_is_unreachable() {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/r", 0).unwrap();
    for d in [
        &b"/r/a"[..],
        b"/r/a/sub",
        b"/r/a/sub/x",
        b"/r/a/sub/x/y",
        b"/r/b",
    ] {
        p.mkdir(d, 0o755).unwrap();
    }
    p.mount(b"/r/a/sub", b"/r/b", b"", MS_BIND).unwrap();
    let q = vfs.root_process();
    q.chdir(b"/r/b/x/y").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"/r/b/x/y".to_vec());
    p.rename(b"/r/a/sub/x", b"/r/a/x").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"(unreachable)/".to_vec());
    assert_eq!(q.stat(b".").unwrap().ino, p.stat(b"/r/a/x/y").unwrap().ino);
    assert_eq!(q.stat(b".."), Err(Errno::ENOENT));
    assert_eq!(q.chdir(b"../.."), Err(Errno::ENOENT));
    // Back inside the subtree, all is as before.
    p.rename(b"/r/a/x", b"/r/a/sub/x").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"/r/b/x/y".to_vec());
    assert_eq!(q.stat(b"../../..").unwrap().ino, p.stat(b"/r").unwrap().ino);
    drop(q);
    p.umount2(b"/r/b", 0).unwrap();
    p.umount2(b"/r", 0).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
}
