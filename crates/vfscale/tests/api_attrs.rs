//! fstat, fstatat, statx, faccessat, fchmodat, fchmod, fchownat, fchown,
//! utimensat, futimens, statfs, fstatfs (as root; see api_perms.rs for
//! other users).

mod common;
use common::*;

// ------------------------------------------------------------------ stat

#[test]
fn stat_fields() {
    let (_vfs, p) = setup();
    let root = p.stat(b"/").unwrap();
    assert_eq!(
        root.mode,
        S_IFDIR | 0o755,
        "namespace root is 0755 root:root"
    );
    assert_eq!((root.uid, root.gid, root.nlink), (0, 0, 2));
    mkfile(&p, b"/f", b"12345");
    let st = p.stat(b"/f").unwrap();
    assert_eq!(st.mode, S_IFREG | 0o644);
    assert_eq!((st.nlink, st.size, st.blocks, st.blksize), (1, 5, 8, 4096));
    assert_eq!(st.dev, root.dev);
    assert_ne!(st.ino, root.ino);
    assert_eq!(st.rdev, 0);
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstat(fd).unwrap(), st);
    p.close(fd).unwrap();
    // Symlinks: stat follows, lstat does not; size is the target length.
    p.symlink(b"f", b"/l").unwrap();
    assert_eq!(p.stat(b"/l").unwrap(), st);
    let l = p.lstat(b"/l").unwrap();
    assert_eq!((l.mode, l.size, l.nlink), (S_IFLNK | 0o777, 1, 1));
    // stat does not touch atime.
    tick();
    for _ in 0..3 {
        p.stat(b"/f").unwrap();
        p.lstat(b"/l").unwrap();
    }
    assert_eq!(p.stat(b"/f").unwrap().atime, st.atime);
    assert_eq!(p.stat(b"/").unwrap().atime, root.atime);
}

#[test]
fn fstatat_flags_and_dirfds() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"abc");
    p.symlink(b"f", b"/d/l").unwrap();
    let f = p.stat(b"/d/f").unwrap();
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstatat(dfd, b"f", 0).unwrap(), f);
    assert_eq!(p.fstatat(dfd, b"l", 0).unwrap(), f);
    assert_eq!(
        ftype(&p.fstatat(dfd, b"l", AT_SYMLINK_NOFOLLOW).unwrap()),
        S_IFLNK
    );
    assert_eq!(
        p.fstatat(dfd, b"", AT_EMPTY_PATH).unwrap().ino,
        p.stat(b"/d").unwrap().ino
    );
    assert_eq!(
        p.fstatat(AT_FDCWD, b"", AT_EMPTY_PATH).unwrap().ino,
        p.stat(b"/").unwrap().ino
    );
    let ffd = p.open(b"/d/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstatat(ffd, b"", AT_EMPTY_PATH).unwrap(), f);
    assert_eq!(p.fstatat(ffd, b"x", 0), Err(Errno::ENOTDIR));
    assert_eq!(
        p.fstatat(ffd, b"/d/f", 0).unwrap(),
        f,
        "absolute ignores dirfd"
    );
    let lfd = p.open(b"/d/l", O_PATH | O_NOFOLLOW, 0).unwrap();
    assert_eq!(ftype(&p.fstatat(lfd, b"", AT_EMPTY_PATH).unwrap()), S_IFLNK);
    // Errors.
    assert_eq!(p.fstatat(999, b"f", 0), Err(Errno::EBADF));
    assert_eq!(p.fstatat(999, b"/d/f", 0).unwrap(), f);
    assert_eq!(p.fstatat(999, b"", AT_EMPTY_PATH), Err(Errno::EBADF));
    assert_eq!(p.fstatat(999, b"", 0), Err(Errno::ENOENT));
    assert_eq!(p.fstatat(dfd, b"", 0), Err(Errno::ENOENT));
    assert_eq!(p.fstatat(dfd, b"f", 0x4), Err(Errno::EINVAL));
    assert_eq!(p.fstatat(dfd, b"f", AT_REMOVEDIR), Err(Errno::EINVAL));
    assert_eq!(p.fstatat(dfd, b"nx", 0), Err(Errno::ENOENT));
    assert_eq!(p.fstat(999), Err(Errno::EBADF));
    assert_eq!(p.fstat(-1), Err(Errno::EBADF));
    for fd in [dfd, ffd, lfd] {
        p.close(fd).unwrap();
    }
}

#[test]
fn statx_matches_stat() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abcdef");
    p.symlink(b"f", b"/l").unwrap();
    p.mknodat(AT_FDCWD, b"/c", S_IFCHR | 0o600, (1 << 8) | 3)
        .unwrap();
    let st = p.stat(b"/f").unwrap();
    let sx = p.statx(AT_FDCWD, b"/f", 0, STATX_BASIC_STATS).unwrap();
    assert_eq!(sx.mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
    // Linux 6.18 (host tmpfs and ext4): the birth time only on request;
    // mtime and ctime (multigrain) left out, zero, when neither is asked.
    assert_eq!(sx.mask & STATX_BTIME, 0);
    let with_btime = p
        .statx(AT_FDCWD, b"/f", 0, STATX_BASIC_STATS | STATX_BTIME)
        .unwrap();
    assert_ne!(
        with_btime.mask & STATX_BTIME,
        0,
        "tmpfs reports a birth time"
    );
    assert!(with_btime.btime.sec > 0);
    for mask in [0, STATX_BTIME, STATX_SIZE] {
        let sx = p.statx(AT_FDCWD, b"/f", 0, mask).unwrap();
        assert_eq!(
            sx.mask & STATX_BASIC_STATS,
            STATX_BASIC_STATS & !(STATX_MTIME | STATX_CTIME),
            "{mask:#x}"
        );
        assert_eq!((sx.mtime.sec, sx.ctime.sec), (0, 0), "{mask:#x}");
        assert_eq!(sx.atime.sec, st.atime.sec, "{mask:#x}");
    }
    for mask in [STATX_MTIME, STATX_CTIME] {
        let sx = p.statx(AT_FDCWD, b"/f", 0, mask).unwrap();
        assert_eq!(sx.mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
        assert_eq!((sx.mtime.sec, sx.ctime.sec), (st.mtime.sec, st.ctime.sec));
    }
    assert_eq!(u32::from(sx.mode), st.mode);
    assert_eq!((sx.nlink, sx.uid, sx.gid), (st.nlink, st.uid, st.gid));
    assert_eq!(
        (sx.ino, sx.size as i64, sx.blocks as i64),
        (st.ino, st.size, st.blocks)
    );
    assert_eq!(sx.blksize as i64, st.blksize);
    assert_eq!(
        (sx.atime, sx.mtime, sx.ctime),
        (st.atime, st.mtime, st.ctime)
    );
    assert!(with_btime.btime <= with_btime.ctime);
    assert_eq!((sx.dev_major, u64::from(sx.dev_minor)), (0, st.dev));
    // Birth time survives later changes.
    tick();
    p.truncate(b"/f", 0).unwrap();
    let sx2 = p
        .statx(AT_FDCWD, b"/f", 0, STATX_BASIC_STATS | STATX_BTIME)
        .unwrap();
    assert_eq!(sx2.btime, with_btime.btime);
    assert!(sx2.mtime > sx.mtime);
    // Devices report their number split.
    let c = p.statx(AT_FDCWD, b"/c", 0, STATX_BASIC_STATS).unwrap();
    assert_eq!((c.rdev_major, c.rdev_minor), (1, 3));
    // Flags.
    assert_eq!(
        u32::from(
            p.statx(AT_FDCWD, b"/l", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS)
                .unwrap()
                .mode
        ),
        S_IFLNK | 0o777
    );
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(
        p.statx(fd, b"", AT_EMPTY_PATH, STATX_INO).unwrap().ino,
        st.ino
    );
    p.close(fd).unwrap();
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", 0x4, STATX_BASIC_STATS),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.statx(AT_FDCWD, b"/f", 0, 0x8000_0000), Err(Errno::EINVAL));
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", AT_STATX_SYNC_TYPE, STATX_BASIC_STATS),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.statx(AT_FDCWD, b"/nx", 0, STATX_BASIC_STATS),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        p.statx(AT_FDCWD, b"/f/", 0, STATX_BASIC_STATS),
        Err(Errno::ENOTDIR)
    );
    assert_eq!(p.statx(777, b"f", 0, STATX_BASIC_STATS), Err(Errno::EBADF));
    assert_eq!(
        p.statx(AT_FDCWD, b"", 0, STATX_BASIC_STATS),
        Err(Errno::ENOENT)
    );
}

// --------------------------------------------------------------- access

#[test]
fn faccessat_as_root() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.chmod(b"/f", 0o644).unwrap();
    mkfile(&p, b"/none", b"");
    p.chmod(b"/none", 0o000).unwrap();
    mkfile(&p, b"/x", b"");
    p.chmod(b"/x", 0o100).unwrap();
    p.mkdir(b"/d", 0o000).unwrap();
    p.symlink(b"nowhere", b"/dangling").unwrap();
    assert_eq!(p.access(b"/f", F_OK), Ok(()));
    assert_eq!(p.access(b"/f", R_OK | W_OK), Ok(()));
    // Root may execute only if some execute bit is set.
    assert_eq!(p.access(b"/f", X_OK), Err(Errno::EACCES));
    assert_eq!(p.access(b"/none", R_OK | W_OK), Ok(()));
    assert_eq!(p.access(b"/none", X_OK), Err(Errno::EACCES));
    assert_eq!(p.access(b"/x", R_OK | W_OK | X_OK), Ok(()));
    // ...and search any directory.
    assert_eq!(p.access(b"/d", R_OK | W_OK | X_OK), Ok(()));
    // Missing names and symlinks.
    assert_eq!(p.access(b"/nx", F_OK), Err(Errno::ENOENT));
    assert_eq!(p.access(b"/dangling", F_OK), Err(Errno::ENOENT));
    assert_eq!(
        p.faccessat(AT_FDCWD, b"/dangling", F_OK, AT_SYMLINK_NOFOLLOW),
        Ok(())
    );
    assert_eq!(p.access(b"/f/", F_OK), Err(Errno::ENOTDIR));
    assert_eq!(p.access(b"", F_OK), Err(Errno::ENOENT));
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.faccessat(fd, b"", W_OK, AT_EMPTY_PATH), Ok(()));
    assert_eq!(
        p.faccessat(fd, b"", X_OK, AT_EMPTY_PATH),
        Err(Errno::EACCES)
    );
    assert_eq!(p.faccessat(fd, b"x", F_OK, 0), Err(Errno::ENOTDIR));
    p.close(fd).unwrap();
    assert_eq!(p.faccessat(999, b"f", F_OK, 0), Err(Errno::EBADF));
    // Invalid mode or flags.
    assert_eq!(p.access(b"/f", 8), Err(Errno::EINVAL));
    assert_eq!(p.access(b"/f", -1), Err(Errno::EINVAL));
    assert_eq!(p.faccessat(AT_FDCWD, b"/f", F_OK, 0x4), Err(Errno::EINVAL));
    assert_eq!(
        p.faccessat(AT_FDCWD, b"/f", F_OK, AT_REMOVEDIR | 0x400),
        Err(Errno::EINVAL)
    );
}

// ----------------------------------------------------------------- chmod

#[test]
fn chmod_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"data");
    p.symlink(b"f", b"/l").unwrap();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = p.stat(b"/f").unwrap();
    tick();
    p.chmod(b"/f", 0o4711).unwrap();
    let st = p.stat(b"/f").unwrap();
    assert_eq!(st.mode, S_IFREG | 0o4711);
    assert!(st.ctime > before.ctime, "chmod changes ctime");
    assert_eq!((st.mtime, st.atime), (before.mtime, before.atime));
    // The type bits of the argument are ignored.
    p.chmod(b"/f", S_IFDIR | 0o644).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o644);
    // Through a symlink, the target changes.
    p.chmod(b"/l", 0o600).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o600);
    assert_eq!(p.lstat(b"/l").unwrap().mode, S_IFLNK | 0o777);
    // All of S_IALLUGO on a directory.
    p.chmod(b"/d", 0o7777).unwrap();
    assert_eq!(p.stat(b"/d").unwrap().mode, S_IFDIR | 0o7777);
    // fchmodat flags.
    assert_eq!(
        p.fchmodat(AT_FDCWD, b"/l", 0o644, AT_SYMLINK_NOFOLLOW),
        Err(Errno::EOPNOTSUPP)
    );
    p.fchmodat(AT_FDCWD, b"/f", 0o640, AT_SYMLINK_NOFOLLOW)
        .unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o640);
    let pfd = p.open(b"/f", O_PATH, 0).unwrap();
    p.fchmodat(pfd, b"", 0o604, AT_EMPTY_PATH).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o604);
    assert_eq!(p.fchmodat(pfd, b"", 0o604, 0), Err(Errno::ENOENT));
    assert_eq!(p.fchmod(pfd, 0o600), Err(Errno::EBADF));
    p.close(pfd).unwrap();
    assert_eq!(p.fchmodat(AT_FDCWD, b"/f", 0o644, 0x4), Err(Errno::EINVAL));
    assert_eq!(p.chmod(b"/nx", 0o644), Err(Errno::ENOENT));
    assert_eq!(p.chmod(b"/f/", 0o644), Err(Errno::ENOTDIR));
    assert_eq!(p.chmod(b"/f/x", 0o644), Err(Errno::ENOTDIR));
    assert_eq!(p.fchmodat(999, b"f", 0o644, 0), Err(Errno::EBADF));
    // fchmod on a read-only descriptor works.
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.fchmod(fd, 0o444).unwrap();
    assert_eq!(p.fstat(fd).unwrap().mode, S_IFREG | 0o444);
    p.close(fd).unwrap();
    assert_eq!(p.fchmod(fd, 0o444), Err(Errno::EBADF));
}

// ----------------------------------------------------------------- chown

#[test]
fn chown_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.symlink(b"f", b"/l").unwrap();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = p.stat(b"/f").unwrap();
    tick();
    p.chown(b"/f", 5, 6).unwrap();
    let st = p.stat(b"/f").unwrap();
    assert_eq!((st.uid, st.gid), (5, 6));
    assert!(st.ctime > before.ctime);
    assert_eq!(st.mtime, before.mtime);
    // -1 leaves an id unchanged.
    p.chown(b"/f", u32::MAX, 7).unwrap();
    assert_eq!(
        (p.stat(b"/f").unwrap().uid, p.stat(b"/f").unwrap().gid),
        (5, 7)
    );
    p.chown(b"/f", 8, u32::MAX).unwrap();
    assert_eq!(
        (p.stat(b"/f").unwrap().uid, p.stat(b"/f").unwrap().gid),
        (8, 7)
    );
    let c = p.stat(b"/f").unwrap().ctime;
    tick();
    p.chown(b"/f", u32::MAX, u32::MAX).unwrap();
    assert!(
        p.stat(b"/f").unwrap().ctime > c,
        "even a no-op chown changes ctime"
    );
    // Through a symlink vs. on the link itself.
    p.chown(b"/l", 1, 1).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().uid, 1);
    assert_eq!(p.lstat(b"/l").unwrap().uid, 0);
    p.fchownat(AT_FDCWD, b"/l", 2, 3, AT_SYMLINK_NOFOLLOW)
        .unwrap();
    let l = p.lstat(b"/l").unwrap();
    assert_eq!((l.uid, l.gid), (2, 3));
    assert_eq!(p.stat(b"/f").unwrap().uid, 1);
    // Set-id bits: chown of a regular file drops S_ISUID, and S_ISGID when
    // group-executable, even for root; directories keep theirs.
    for (mode, after) in [
        (0o6755, 0o0755),
        (0o2745, 0o2745),
        (0o4644, 0o0644),
        (0o1755, 0o1755),
    ] {
        p.chmod(b"/f", mode).unwrap();
        p.chown(b"/f", u32::MAX, u32::MAX).unwrap();
        assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | after, "{mode:o}");
    }
    p.chmod(b"/d", 0o6755).unwrap();
    p.chown(b"/d", 5, 6).unwrap();
    assert_eq!(p.stat(b"/d").unwrap().mode, S_IFDIR | 0o6755);
    // fchown / AT_EMPTY_PATH.
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.fchown(fd, 10, 11).unwrap();
    assert_eq!(p.fstat(fd).unwrap().uid, 10);
    p.fchownat(fd, b"", 12, 13, AT_EMPTY_PATH).unwrap();
    assert_eq!(p.fstat(fd).unwrap().gid, 13);
    p.close(fd).unwrap();
    let pfd = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.fchown(pfd, 1, 1), Err(Errno::EBADF));
    p.close(pfd).unwrap();
    // Errors.
    assert_eq!(p.fchown(fd, 1, 1), Err(Errno::EBADF));
    assert_eq!(p.fchownat(AT_FDCWD, b"/f", 1, 1, 0x4), Err(Errno::EINVAL));
    assert_eq!(p.chown(b"/nx", 1, 1), Err(Errno::ENOENT));
    assert_eq!(p.chown(b"/f/", 1, 1), Err(Errno::ENOTDIR));
    assert_eq!(p.fchownat(999, b"f", 1, 1, 0), Err(Errno::EBADF));
}

// ---------------------------------------------------------------- utimes

#[test]
fn utimensat_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.symlink(b"f", b"/l").unwrap();
    let t1 = Timespec::new(100, 5);
    let t2 = Timespec::new(200, 7);
    let before = p.stat(b"/f").unwrap();
    tick();
    p.utimensat(AT_FDCWD, b"/f", Some([t1, t2]), 0).unwrap();
    let st = p.stat(b"/f").unwrap();
    assert_eq!((st.atime, st.mtime), (t1, t2));
    assert!(st.ctime > before.ctime, "ctime is set to now");
    // OMIT leaves one, NOW sets one to the current time.
    p.utimensat(AT_FDCWD, b"/f", Some([Timespec::OMIT, Timespec::NOW]), 0)
        .unwrap();
    let st2 = p.stat(b"/f").unwrap();
    assert_eq!(st2.atime, t1);
    assert!(st2.mtime > t2);
    assert!(st2.mtime <= st2.ctime);
    // None sets both to now.
    p.utimensat(AT_FDCWD, b"/f", None, 0).unwrap();
    let st3 = p.stat(b"/f").unwrap();
    assert!(st3.atime > t1);
    assert_eq!(st3.atime, st3.mtime);
    // Negative seconds are valid times.
    let neg = Timespec::new(-7, 0);
    p.utimensat(AT_FDCWD, b"/f", Some([neg, neg]), 0).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mtime, neg);
    // Both OMIT: nothing to do, the path is not even looked up.
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/nx", Some([Timespec::OMIT, Timespec::OMIT]), 0),
        Ok(())
    );
    // On the link itself, or through it.
    p.utimensat(AT_FDCWD, b"/l", Some([t1, t1]), AT_SYMLINK_NOFOLLOW)
        .unwrap();
    assert_eq!(p.lstat(b"/l").unwrap().mtime, t1);
    assert_eq!(p.stat(b"/f").unwrap().mtime, neg);
    p.utimensat(AT_FDCWD, b"/l", Some([t2, t2]), 0).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mtime, t2);
    // AT_EMPTY_PATH, also with an O_PATH descriptor.
    let pfd = p.open(b"/f", O_PATH, 0).unwrap();
    p.utimensat(pfd, b"", Some([t1, t1]), AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mtime, t1);
    assert_eq!(p.utimensat(pfd, b"", Some([t1, t1]), 0), Err(Errno::ENOENT));
    p.close(pfd).unwrap();
    // Errors.
    let bad = Timespec::new(0, 1_000_000_000);
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/f", Some([bad, t1]), 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/f", Some([t1, Timespec::new(0, -1)]), 0),
        Err(Errno::EINVAL)
    );
    // Linux looks the path up before validating the times.
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/nx", Some([bad, t1]), 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(p.utimensat(AT_FDCWD, b"/f", None, 0x4), Err(Errno::EINVAL));
    assert_eq!(p.utimensat(AT_FDCWD, b"/nx", None, 0), Err(Errno::ENOENT));
    assert_eq!(p.utimensat(AT_FDCWD, b"/f/", None, 0), Err(Errno::ENOTDIR));
    assert_eq!(p.utimensat(999, b"f", None, 0), Err(Errno::EBADF));
    assert_eq!(p.stat(b"/f").unwrap().mtime, t1);
}

#[test]
fn utimensat_both_omit_ignores_flags() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/f", Some([Timespec::OMIT, Timespec::OMIT]), 0x4),
        Ok(())
    );
}

#[test]
fn futimens_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let t = Timespec::new(1234, 5678);
    p.futimens(fd, Some([t, Timespec::OMIT])).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!(st.atime, t);
    assert_ne!(st.mtime, t);
    p.futimens(fd, Some([Timespec::OMIT, Timespec::OMIT]))
        .unwrap();
    assert_eq!(
        p.fstat(fd).unwrap(),
        st,
        "both OMIT changes nothing, not even ctime"
    );
    tick();
    p.futimens(fd, None).unwrap();
    assert!(p.fstat(fd).unwrap().mtime > st.mtime);
    assert_eq!(
        p.futimens(fd, Some([Timespec::new(0, 1_000_000_000), t])),
        Err(Errno::EINVAL)
    );
    p.close(fd).unwrap();
    assert_eq!(p.futimens(fd, None), Err(Errno::EBADF));
    assert_eq!(p.futimens(-1, None), Err(Errno::EBADF));
}

#[test]
fn futimens_negative_fd_is_ebadf_even_when_both_omitted() {
    // glibc's futimens rejects fd < 0 before the syscall; the syscall's
    // both-OMIT shortcut only applies to non-negative descriptors (found
    // by the kernel differential test).
    let (_vfs, p) = setup();
    let omit = Some([Timespec::OMIT, Timespec::OMIT]);
    assert_eq!(p.futimens(-1, omit), Err(Errno::EBADF));
    assert_eq!(p.futimens(-100, omit), Err(Errno::EBADF));
    // A closed but non-negative descriptor: the syscall returns 0 first.
    assert_eq!(p.futimens(100, omit), Ok(()));
}

// ---------------------------------------------------------------- statfs

#[test]
fn statfs_fields_and_accounting() {
    let (_vfs, p) = setup();
    let s0 = p.statfs(b"/").unwrap();
    assert_eq!(s0.f_type, 0x0102_1994);
    assert_eq!(s0.f_type, TMPFS_MAGIC);
    assert_eq!((s0.f_bsize, s0.f_frsize, s0.f_namelen), (4096, 4096, 255));
    assert!(s0.f_bfree <= s0.f_blocks);
    assert_eq!(s0.f_bavail, s0.f_bfree);
    assert!(s0.f_ffree < s0.f_files, "the root inode is in use");
    // Writing whole pages uses blocks; creating files uses inodes.
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let s1 = p.fstatfs(fd).unwrap();
    assert_eq!(s1.f_ffree, s0.f_ffree - 1);
    p.write(fd, &[7u8; 10000]).unwrap();
    let s2 = p.statfs(b"/f").unwrap();
    assert_eq!(s2.f_bfree, s1.f_bfree - 3, "10000 bytes take 3 pages");
    assert_eq!(s2.f_bavail, s2.f_bfree);
    assert_eq!(p.fstatfs(fd).unwrap(), s2);
    p.ftruncate(fd, 0).unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_bfree, s0.f_bfree);
    p.close(fd).unwrap();
    p.unlink(b"/f").unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, s0.f_ffree);
    // Errors.
    assert_eq!(p.statfs(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.statfs(b""), Err(Errno::ENOENT));
    mkfile(&p, b"/g", b"");
    assert_eq!(p.statfs(b"/g/"), Err(Errno::ENOTDIR));
    assert_eq!(p.fstatfs(999), Err(Errno::EBADF));
    assert_eq!(p.fstatfs(-1), Err(Errno::EBADF));
}

#[test]
fn statfs_flags_report_relatime() {
    let (_vfs, p) = setup();
    assert_eq!(p.statfs(b"/").unwrap().f_flags, 0x1020);
}

#[test]
fn fstatat_accepts_statx_sync_bits() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    for fl in [0x2000, 0x4000, AT_STATX_SYNC_TYPE, AT_NO_AUTOMOUNT] {
        assert!(p.fstatat(AT_FDCWD, b"/f", fl).is_ok(), "{fl:#x}");
    }
}
