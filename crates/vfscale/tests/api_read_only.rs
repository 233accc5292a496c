//! Read-only mounts and instances (mount/write.rs): EROFS at every change,
//! in Linux's errno order (each expectation below was first seen on the
//! host kernel's tmpfs, `unshare -m`), the remounts that switch it and
//! their EBUSY, and the switch racing writers.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use vfscale::{Namespace, SetAttr};

/// A tmpfs at /r holding a file `f` (0644, "data"), a directory `d`, a
/// symlink `l` and a FIFO `p`, then made read-only with `remount` flags.
fn populated(remount: u64) -> (Vfs, Process) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/r", 0).unwrap();
    mkfile(&p, b"/r/f", b"data");
    p.mkdir(b"/r/d", 0o755).unwrap();
    p.symlink(b"f", b"/r/l").unwrap();
    p.mknodat(AT_FDCWD, b"/r/p", S_IFIFO | 0o666, 0).unwrap();
    p.mount(b"", b"/r", b"", remount).unwrap();
    (vfs, p)
}

#[test]
fn every_change_is_erofs_and_reads_still_work() {
    for remount in [MS_REMOUNT | MS_RDONLY, MS_REMOUNT | MS_BIND | MS_RDONLY] {
        let (_vfs, p) = populated(remount);
        assert_ne!(p.statfs(b"/r").unwrap().f_flags & ST_RDONLY, 0);
        assert_eq!(p.statfs(b"/").unwrap().f_flags & ST_RDONLY, 0);
        let e = Err(Errno::EROFS);
        assert_eq!(p.mkdir(b"/r/n", 0o755), e);
        assert_eq!(p.mknodat(AT_FDCWD, b"/r/n", S_IFREG | 0o644, 0), e);
        assert_eq!(p.symlink(b"x", b"/r/n"), e);
        assert_eq!(p.link(b"/r/f", b"/r/n"), e);
        assert_eq!(p.unlink(b"/r/f"), e);
        assert_eq!(p.rmdir(b"/r/d"), e);
        assert_eq!(p.rename(b"/r/f", b"/r/n"), e);
        assert_eq!(p.open(b"/r/n", O_CREAT | O_RDONLY, 0o644).map(drop), e);
        assert_eq!(p.open(b"/r/f", O_WRONLY, 0).map(drop), e);
        assert_eq!(p.open(b"/r/f", O_RDWR, 0).map(drop), e);
        assert_eq!(p.open(b"/r/f", O_RDONLY | O_TRUNC, 0).map(drop), e);
        assert_eq!(p.open(b"/r/d", O_TMPFILE | O_WRONLY, 0o600).map(drop), e);
        assert_eq!(p.chmod(b"/r/f", 0o600), e);
        assert_eq!(p.chown(b"/r/f", 1, 1), e);
        assert_eq!(p.chown(b"/r/f", u32::MAX, u32::MAX), e);
        assert_eq!(p.utimensat(AT_FDCWD, b"/r/f", None, 0), e);
        assert_eq!(p.truncate(b"/r/f", 0), e);
        assert_eq!(p.setxattr(b"/r/f", b"user.k", b"v", 0), e);
        assert_eq!(p.removexattr(b"/r/f", b"user.k"), e);
        assert_eq!(p.access(b"/r/f", W_OK), e);
        assert_eq!(p.access(b"/r/d", W_OK), e);
        // Through descriptors opened for reading.
        let fd = p.open(b"/r/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.fchmod(fd, 0o600), e);
        assert_eq!(p.fchown(fd, 1, 1), e);
        assert_eq!(p.futimens(fd, None), e);
        assert_eq!(p.fsetxattr(fd, b"user.k", b"v", 0), e);
        // Reads work, and do not change atime.
        let before = p.stat(b"/r/f").unwrap();
        tick();
        let mut buf = [0u8; 8];
        assert_eq!(p.read(fd, &mut buf), Ok(4));
        assert_eq!(&buf[..4], b"data");
        assert_eq!(p.stat(b"/r/f").unwrap().atime, before.atime);
        p.close(fd).unwrap();
        assert_eq!(read_file(&p, b"/r/f"), b"data");
        assert_eq!(p.readlink(b"/r/l").unwrap(), b"f");
        p.access(b"/r/f", R_OK).unwrap();
        let fd = p.open(b"/r/f", O_CREAT | O_RDONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        // A FIFO is written without the filesystem: it opens for writing,
        // and access(W_OK) says so.
        p.access(b"/r/p", W_OK).unwrap();
        let fd = p.open(b"/r/p", O_RDWR | O_NONBLOCK, 0).unwrap();
        assert_eq!(p.write(fd, b"x"), Ok(1));
        p.close(fd).unwrap();
        // Nothing changed.
        assert_eq!(names(&p, b"/r"), sorted(&[b"d", b"f", b"l", b"p"]));
        // Writable again.
        p.mount(b"", b"/r", b"", MS_REMOUNT).unwrap();
        assert_eq!(p.statfs(b"/r").unwrap().f_flags & ST_RDONLY, 0);
        p.mkdir(b"/r/n", 0o755).unwrap();
        mkfile(&p, b"/r/f", b"new");
    }
}

#[test]
fn erofs_comes_where_linux_puts_it() {
    let (vfs, p) = populated(MS_REMOUNT | MS_BIND | MS_RDONLY);
    // The name's errors first: EEXIST, ENAMETOOLONG of a new name.
    assert_eq!(p.mkdir(b"/r/d", 0o755), Err(Errno::EEXIST));
    assert_eq!(p.mkdir(b"/r/.", 0o755), Err(Errno::EEXIST));
    let long = [&b"/r/"[..], &[b'x'; 300]].concat();
    assert_eq!(p.mkdir(&long, 0o755), Err(Errno::ENAMETOOLONG));
    // Removal: before anything about the name.
    assert_eq!(p.unlink(b"/r/missing"), Err(Errno::EROFS));
    assert_eq!(p.unlink(&long), Err(Errno::EROFS));
    assert_eq!(p.rmdir(b"/r/."), Err(Errno::EINVAL));
    // truncate: the type first.
    assert_eq!(p.truncate(b"/r/d", 0), Err(Errno::EISDIR));
    // O_TMPFILE: the directory's lookup first.
    assert_eq!(
        p.open(b"/r/f", O_TMPFILE | O_WRONLY, 0o600),
        Err(Errno::ENOTDIR)
    );
    // O_EXCL of an existing name.
    assert_eq!(
        p.open(b"/r/f", O_CREAT | O_EXCL | O_WRONLY, 0o644),
        Err(Errno::EEXIST)
    );
    // A user without write permission: EACCES when only the mount is
    // read-only (the permission comes first), but EROFS for O_TRUNC,
    // chmod and the like (write access is asked first).
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.open(b"/r/f", O_WRONLY, 0), Err(Errno::EACCES));
    assert_eq!(u.access(b"/r/f", W_OK), Err(Errno::EACCES));
    assert_eq!(u.open(b"/r/f", O_WRONLY | O_TRUNC, 0), Err(Errno::EROFS));
    assert_eq!(u.chmod(b"/r/f", 0o777), Err(Errno::EROFS));
    // truncate asks the permission first (Linux 6.13+).
    assert_eq!(u.truncate(b"/r/f", 0), Err(Errno::EACCES));
    drop(u);
    // A read-only instance answers EROFS inside the permission check.
    p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY).unwrap();
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.open(b"/r/f", O_WRONLY, 0), Err(Errno::EROFS));
    assert_eq!(u.access(b"/r/f", W_OK), Err(Errno::EROFS));
    drop(u);
    // Across mounts: rename's EXDEV first, link's EROFS (of the new
    // name's mount) first.
    tmpfs_at(&p, b"/w", 0).unwrap();
    mkfile(&p, b"/w/g", b"");
    assert_eq!(p.rename(b"/w/g", b"/r/g"), Err(Errno::EXDEV));
    assert_eq!(p.link(b"/w/g", b"/r/g"), Err(Errno::EROFS));
    assert_eq!(p.link(b"/r/f", b"/w/f"), Err(Errno::EXDEV));
}

#[test]
fn binds_copy_the_bit_and_the_instance_bit_covers_every_mount() {
    let (_vfs, p) = setup();
    tmpfs_at(&p, b"/r", MS_RDONLY).unwrap();
    assert_eq!(p.mkdir(b"/r/x", 0o755), Err(Errno::EROFS));
    // A bind copies the mount's read-only bit; MS_RDONLY with MS_BIND is
    // ignored (the bind of a writable mount is writable).
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"/r", b"/b", b"", MS_BIND).unwrap();
    assert_ne!(p.statfs(b"/b").unwrap().f_flags & ST_RDONLY, 0);
    // Made writable, the bind is still on a read-only instance.
    p.mount(b"", b"/b", b"", MS_REMOUNT | MS_BIND).unwrap();
    assert_ne!(p.statfs(b"/b").unwrap().f_flags & ST_RDONLY, 0);
    assert_eq!(p.mkdir(b"/b/x", 0o755), Err(Errno::EROFS));
    // A plain remount makes the instance writable: the bind too, the
    // remounted mount itself not before its own bit goes.
    p.mount(b"", b"/b", b"", MS_REMOUNT).unwrap();
    p.mkdir(b"/b/x", 0o755).unwrap();
    assert_eq!(p.mkdir(b"/r/y", 0o755), Err(Errno::EROFS));
    p.mount(b"", b"/r", b"", MS_REMOUNT | MS_BIND).unwrap();
    p.mkdir(b"/r/y", 0o755).unwrap();
    tmpfs_at(&p, b"/w", 0).unwrap();
    p.mkdir(b"/c", 0o755).unwrap();
    p.mount(b"/w", b"/c", b"", MS_BIND | MS_RDONLY).unwrap();
    p.mkdir(b"/c/z", 0o755).unwrap();
    for m in [&b"/c"[..], b"/w", b"/b", b"/r"] {
        p.umount2(m, 0).unwrap();
    }
}

#[test]
fn remounts_are_busy_while_a_writer_or_an_unlinked_file_is_open() {
    let (_vfs, p) = setup();
    tmpfs_at(&p, b"/r", 0).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"/r", b"/b", b"", MS_BIND).unwrap();
    let w = p.open(b"/r/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    let bind_ro = MS_REMOUNT | MS_BIND | MS_RDONLY;
    assert_eq!(p.mount(b"", b"/r", b"", bind_ro), Err(Errno::EBUSY));
    assert_eq!(p.statfs(b"/r").unwrap().f_flags & ST_RDONLY, 0);
    // The writer is on /r, not on the bind: the bind may go read-only,
    // but not the instance.
    p.mount(b"", b"/b", b"", bind_ro).unwrap();
    assert_eq!(
        p.mount(b"", b"/b", b"", MS_REMOUNT | MS_RDONLY),
        Err(Errno::EBUSY)
    );
    assert_eq!(p.write(w, b"still"), Ok(5));
    // A duplicate shares the writer; the last close ends it.
    let w2 = p.dup(w).unwrap();
    p.close(w).unwrap();
    assert_eq!(p.mount(b"", b"/r", b"", bind_ro), Err(Errno::EBUSY));
    p.close(w2).unwrap();
    p.mount(b"", b"/r", b"", bind_ro).unwrap();
    p.mount(b"", b"/r", b"", MS_REMOUNT | MS_BIND).unwrap();
    // An unlinked file still open, even for reading, keeps the instance
    // writable (Linux's s_remove_count); not a mount alone.
    let r = p.open(b"/r/f", O_RDONLY, 0).unwrap();
    p.unlink(b"/r/f").unwrap();
    assert_eq!(
        p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY),
        Err(Errno::EBUSY)
    );
    p.mount(b"", b"/r", b"", bind_ro).unwrap();
    p.mount(b"", b"/r", b"", MS_REMOUNT | MS_BIND).unwrap();
    p.close(r).unwrap();
    // So is a removed working directory, and an O_TMPFILE until linked.
    p.mkdir(b"/r/d", 0o755).unwrap();
    let q = p.fork().unwrap();
    q.chdir(b"/r/d").unwrap();
    p.rmdir(b"/r/d").unwrap();
    assert_eq!(
        p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY),
        Err(Errno::EBUSY)
    );
    q.exit();
    let t = p.open(b"/r", O_TMPFILE | O_RDWR, 0o600).unwrap();
    assert_eq!(
        p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY),
        Err(Errno::EBUSY)
    );
    p.linkat(t, b"", AT_FDCWD, b"/r/t", AT_EMPTY_PATH).unwrap();
    // Linked, it is no longer an orphan, but it is still open for writing.
    assert_eq!(
        p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY),
        Err(Errno::EBUSY)
    );
    p.close(t).unwrap();
    p.mount(b"", b"/r", b"", MS_REMOUNT | MS_RDONLY).unwrap();
    assert_ne!(p.statfs(b"/b").unwrap().f_flags & ST_RDONLY, 0);
    p.mount(b"", b"/r", b"", MS_REMOUNT).unwrap();
    for m in [&b"/b"[..], b"/r"] {
        p.umount2(m, 0).unwrap();
    }
}

#[test]
fn the_namespace_api_refuses_changes_on_a_read_only_mount() {
    let (vfs, p) = populated(MS_REMOUNT | MS_BIND | MS_RDONLY);
    let ns = Namespace::new(&vfs);
    let cred = Arc::new(Cred::root());
    let r = ns.lookup(&cred, ns.root(), b"r").unwrap().handle;
    let f = ns.lookup(&cred, &r, b"f").unwrap().handle;
    let e = Err(Errno::EROFS);
    let chmod = SetAttr {
        mode: Some(0o600),
        ..Default::default()
    };
    assert_eq!(ns.setattr(&cred, &f, &chmod).map(drop), e);
    let trunc = SetAttr {
        size: Some(0),
        ..Default::default()
    };
    assert_eq!(ns.setattr(&cred, &f, &trunc).map(drop), e);
    assert_eq!(ns.mkdir(&cred, &r, b"n", 0o755, 0).map(drop), e);
    assert_eq!(ns.unlink(&cred, &r, b"f"), e);
    assert_eq!(ns.open(&cred, &f, O_WRONLY).map(drop), e);
    assert_eq!(ns.create(&cred, &r, b"n", O_WRONLY, 0o644, 0).map(drop), e);
    assert_eq!(ns.access(&cred, &f, W_OK), e);
    let fh = ns.open(&cred, &f, O_RDONLY).unwrap();
    ns.release(fh).unwrap();
    drop(p);
}

/// Writers (creates, writes, renames, unlinks through /r) race a thread
/// switching the mount read-only and back: while a switch holds, the tree
/// under /r must not change at all, and every refused change is EROFS.
#[test]
fn switching_read_only_under_writers_stops_every_change() {
    switch_read_only_under_writers(MS_BIND);
}

/// The same with the instance switched (a plain remount), which first
/// frees the instance's unused dentries (`shrink_dcache_sb`) while the
/// writers' lookups leave negative names and rmdirs remove directories
/// holding them.
#[test]
fn switching_the_instance_read_only_under_writers_stops_every_change() {
    switch_read_only_under_writers(0);
}

/// The race of the two tests above; `bind` is MS_BIND for the mount's own
/// bit, 0 for the instance's.
fn switch_read_only_under_writers(bind: u64) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/r", 0).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|t| {
            let q = vfs.root_process();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut done = 0u32;
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let a = format!("/r/{t}-{}", i % 8);
                    let b = format!("/r/{t}-moved");
                    let r = q.open(a.as_bytes(), O_CREAT | O_WRONLY | O_APPEND, 0o644);
                    match r {
                        Ok(fd) => {
                            assert_eq!(q.write(fd, b"x"), Ok(1));
                            q.close(fd).unwrap();
                            done += 1;
                        }
                        // EISDIR: the name is a directory now.
                        Err(e) => assert!(matches!(e, Errno::EROFS | Errno::EISDIR), "{e:?}"),
                    }
                    let missing = format!("{a}/missing");
                    assert!(matches!(
                        q.stat(missing.as_bytes()),
                        Err(Errno::ENOENT | Errno::ENOTDIR)
                    ));
                    for r in [
                        q.rename(a.as_bytes(), b.as_bytes()),
                        q.unlink(b.as_bytes()),
                        q.mkdir(a.as_bytes(), 0o755),
                        q.rmdir(a.as_bytes()),
                    ] {
                        assert!(
                            matches!(
                                r,
                                Ok(())
                                    | Err(Errno::EROFS
                                        | Errno::ENOENT
                                        | Errno::EEXIST
                                        | Errno::ENOTDIR
                                        | Errno::EISDIR
                                        | Errno::ENOTEMPTY)
                            ),
                            "{r:?}"
                        );
                    }
                }
                done
            })
        })
        .collect();
    let snapshot = |p: &Process| {
        let mut v: Vec<_> = names(p, b"/r")
            .into_iter()
            .map(|n| {
                let st = p.lstat(&[&b"/r/"[..], &n].concat()).unwrap();
                (n, st.size, st.mtime, st.nlink)
            })
            .collect();
        v.sort();
        v
    };
    let (mut switched, mut busy) = (0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        match p.mount(b"", b"/r", b"", MS_REMOUNT | bind | MS_RDONLY) {
            Ok(()) => {
                switched += 1;
                let before = snapshot(&p);
                std::thread::sleep(std::time::Duration::from_millis(2));
                assert_eq!(snapshot(&p), before, "changed while read-only");
                p.mount(b"", b"/r", b"", MS_REMOUNT | bind).unwrap();
            }
            Err(e) => {
                assert_eq!(e, Errno::EBUSY);
                busy += 1;
            }
        }
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    let done: u32 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(
        done > 0 && switched > 0,
        "done {done}, switched {switched}, busy {busy}"
    );
    // No unit leaked: with every file closed the switch succeeds, also
    // with a removed directory that a negative name still holds.
    p.mkdir(b"/r/held", 0o755).unwrap();
    assert_eq!(p.stat(b"/r/held/missing"), Err(Errno::ENOENT));
    p.rmdir(b"/r/held").unwrap();
    p.mount(b"", b"/r", b"", MS_REMOUNT | bind | MS_RDONLY)
        .unwrap();
    p.umount2(b"/r", 0).unwrap();
    p.rmdir(b"/r").unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}
