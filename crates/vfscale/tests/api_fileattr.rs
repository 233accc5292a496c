//! Inode flags (FS_IOC_GETFLAGS and kin): what each flag forbids, who may
//! change them, what new inodes inherit, statx's attribute bits, and a
//! multi-thread run of flag changes against mode changes and refused
//! calls with an invariant check. Every expected value is what Linux 6.18
//! gives on tmpfs; the full comparison with the kernel is
//! `vfscale-difftest/tests/fileflags_kernel.rs`.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn flags_of(p: &Process, path: &[u8]) -> u32 {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let f = p.fs_ioc_getflags(fd).unwrap();
    p.close(fd).unwrap();
    f
}

fn set_flags(p: &Process, path: &[u8], flags: u32) -> SysResult<()> {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let r = p.fs_ioc_setflags(fd, flags);
    p.close(fd).unwrap();
    r
}

#[test]
fn an_immutable_file_refuses_every_change_but_old_descriptors_write() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    let old = p.open(b"/f", O_RDWR, 0).unwrap();
    set_flags(&p, b"/f", FS_IMMUTABLE_FL).unwrap();
    assert_eq!(flags_of(&p, b"/f"), FS_IMMUTABLE_FL);
    assert_eq!(p.open(b"/f", O_WRONLY, 0), Err(Errno::EPERM));
    assert_eq!(p.open(b"/f", O_RDONLY | O_TRUNC, 0), Err(Errno::EPERM));
    assert_eq!(p.access(b"/f", W_OK), Err(Errno::EPERM));
    assert_eq!(p.truncate(b"/f", 0), Err(Errno::EPERM));
    assert_eq!(p.chmod(b"/f", 0o600), Err(Errno::EPERM));
    assert_eq!(p.chown(b"/f", 1, u32::MAX), Err(Errno::EPERM));
    assert_eq!(p.chown(b"/f", u32::MAX, u32::MAX), Ok(()));
    assert_eq!(p.utimensat(AT_FDCWD, b"/f", None, 0), Err(Errno::EPERM));
    assert_eq!(p.unlink(b"/f"), Err(Errno::EPERM));
    assert_eq!(p.rename(b"/f", b"/g"), Err(Errno::EPERM));
    assert_eq!(p.link(b"/f", b"/h"), Err(Errno::EPERM));
    assert_eq!(p.setxattr(b"/f", b"user.a", b"1", 0), Err(Errno::EPERM));
    assert_eq!(p.fallocate(old, 0, 0, 10), Err(Errno::EPERM));
    // Linux checks nothing on the write path: a descriptor opened before
    // the flag still writes and truncates.
    assert_eq!(p.pwrite(old, b"J", 0), Ok(1));
    assert_eq!(p.ftruncate(old, 3), Ok(()));
    assert_eq!(read_file(&p, b"/f"), b"Jel");
    set_flags(&p, b"/f", 0).unwrap();
    p.unlink(b"/f").unwrap();
}

#[test]
fn an_append_only_file_opens_for_appending_only() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"ab");
    set_flags(&p, b"/f", FS_APPEND_FL).unwrap();
    assert_eq!(p.open(b"/f", O_WRONLY, 0), Err(Errno::EPERM));
    assert_eq!(
        p.open(b"/f", O_RDWR | O_APPEND | O_TRUNC, 0),
        Err(Errno::EPERM)
    );
    let a = p.open(b"/f", O_WRONLY | O_APPEND, 0).unwrap();
    assert_eq!(p.write(a, b"c"), Ok(1));
    assert_eq!(p.fcntl(a, F_SETFL, 0), Err(Errno::EPERM));
    assert_eq!(p.fcntl(a, F_SETFL, (O_APPEND | O_NONBLOCK) as i64), Ok(0));
    assert_eq!(p.ftruncate(a, 0), Err(Errno::EPERM));
    // A plain allocation only.
    assert_eq!(p.fallocate(a, FALLOC_FL_KEEP_SIZE, 0, 100), Ok(()));
    assert_eq!(
        p.fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1),
        Err(Errno::EPERM)
    );
    // Touching the times is allowed, setting them is not.
    assert_eq!(p.utimensat(AT_FDCWD, b"/f", None, 0), Ok(()));
    let t = Timespec::new(1, 0);
    assert_eq!(
        p.utimensat(AT_FDCWD, b"/f", Some([t, t]), 0),
        Err(Errno::EPERM)
    );
    assert_eq!(p.unlink(b"/f"), Err(Errno::EPERM));
    assert_eq!(read_file(&p, b"/f"), b"abc");
}

#[test]
fn protected_directories_keep_their_names() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/a", b"");
    mkfile(&p, b"/x", b"");
    set_flags(&p, b"/d", FS_IMMUTABLE_FL).unwrap();
    assert_eq!(
        p.open(b"/d/n", O_CREAT | O_WRONLY, 0o644),
        Err(Errno::EPERM)
    );
    assert_eq!(p.mkdir(b"/d/m", 0o755), Err(Errno::EPERM));
    assert_eq!(p.unlink(b"/d/a"), Err(Errno::EPERM));
    assert_eq!(p.rename(b"/x", b"/d/x"), Err(Errno::EPERM));
    assert_eq!(p.rmdir(b"/d"), Err(Errno::EPERM));
    // An existing name opens, with O_CREAT too.
    let fd = p.open(b"/d/a", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    set_flags(&p, b"/d", FS_APPEND_FL).unwrap();
    // Names come in, none go.
    p.rename(b"/x", b"/d/x").unwrap();
    mkfile(&p, b"/d/n", b"");
    assert_eq!(p.unlink(b"/d/a"), Err(Errno::EPERM));
    assert_eq!(p.rename(b"/d/x", b"/d/y"), Err(Errno::EPERM));
    mkfile(&p, b"/z", b"");
    assert_eq!(p.rename(b"/z", b"/d/x"), Err(Errno::EPERM));
    set_flags(&p, b"/d", 0).unwrap();
    p.unlink(b"/d/a").unwrap();
}

#[test]
fn who_may_change_which_flag() {
    let (vfs, p) = setup();
    mkfile(&p, b"/mine", b"");
    mkfile(&p, b"/theirs", b"");
    p.chown(b"/mine", 1000, 1000).unwrap();
    let u = user(&vfs, 1000, 1000);
    let fd = u.open(b"/mine", O_RDONLY, 0).unwrap();
    assert_eq!(u.fs_ioc_setflags(fd, FS_NODUMP_FL | FS_NOATIME_FL), Ok(()));
    assert_eq!(u.fs_ioc_setflags(fd, FS_IMMUTABLE_FL), Err(Errno::EPERM));
    // The capability check comes before the unsupported flag's.
    assert_eq!(
        u.fs_ioc_setflags(fd, FS_IMMUTABLE_FL | FS_SYNC_FL),
        Err(Errno::EPERM)
    );
    assert_eq!(u.fs_ioc_setflags(fd, FS_SYNC_FL), Err(Errno::EOPNOTSUPP));
    // Root made it immutable: the owner may still change the other flags.
    set_flags(&p, b"/mine", FS_IMMUTABLE_FL).unwrap();
    assert_eq!(
        u.fs_ioc_setflags(fd, FS_IMMUTABLE_FL | FS_NODUMP_FL),
        Ok(())
    );
    assert_eq!(u.fs_ioc_setflags(fd, 0), Err(Errno::EPERM));
    assert_eq!(u.fs_ioc_getflags(fd), Ok(FS_IMMUTABLE_FL | FS_NODUMP_FL));
    u.close(fd).unwrap();
    let fd = u.open(b"/theirs", O_RDONLY, 0).unwrap();
    assert_eq!(u.fs_ioc_setflags(fd, 0), Err(Errno::EPERM));
    assert_eq!(u.fs_ioc_getflags(fd), Ok(0));
    // An unknown xflag is refused before the owner check.
    let x = FsXattr {
        xflags: 0x4_0000,
        ..FsXattr::default()
    };
    assert_eq!(u.fs_ioc_fssetxattr(fd, &x), Err(Errno::EOPNOTSUPP));
}

#[test]
fn only_files_and_directories_of_tmpfs_have_flags() {
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fifo = p.open(b"/fifo", O_RDWR, 0).unwrap();
    let [r, _w] = p.pipe2(0).unwrap();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let e = p.eventfd(0, 0).unwrap();
    for fd in [fifo, r, s, e] {
        assert_eq!(p.fs_ioc_getflags(fd), Err(Errno::ENOTTY), "fd {fd}");
        assert_eq!(p.fs_ioc_setflags(fd, 0), Err(Errno::ENOTTY), "fd {fd}");
    }
    let m = p.memfd_create(b"m", 0).unwrap();
    assert_eq!(p.fs_ioc_setflags(m, FS_NODUMP_FL), Ok(()));
    assert_eq!(p.fs_ioc_getflags(m), Ok(FS_NODUMP_FL));
    mkfile(&p, b"/f", b"");
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.fs_ioc_getflags(path), Err(Errno::EBADF));
    assert_eq!(p.fs_ioc_getflags(99), Err(Errno::EBADF));
}

#[test]
fn the_xattr_record_maps_the_flags_and_refuses_the_rest() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let rec = |xflags| FsXattr {
        xflags,
        ..FsXattr::default()
    };
    p.fs_ioc_fssetxattr(fd, &rec(FS_XFLAG_APPEND | FS_XFLAG_HASATTR))
        .unwrap();
    assert_eq!(p.fs_ioc_getflags(fd), Ok(FS_APPEND_FL));
    assert_eq!(p.fs_ioc_fsgetxattr(fd), Ok(rec(FS_XFLAG_APPEND)));
    assert_eq!(
        p.fs_ioc_fssetxattr(fd, &rec(FS_XFLAG_SYNC)),
        Err(Errno::EOPNOTSUPP)
    );
    let sized = FsXattr {
        xflags: FS_XFLAG_EXTSIZE,
        extsize: 4096,
        ..FsXattr::default()
    };
    assert_eq!(p.fs_ioc_fssetxattr(fd, &sized), Err(Errno::EOPNOTSUPP));
    assert_eq!(p.fs_ioc_fssetxattr(fd, &rec(FS_XFLAG_EXTSIZE)), Ok(()));
    assert_eq!(p.fs_ioc_getflags(fd), Ok(0));
}

#[test]
fn new_inodes_inherit_nodump_and_noatime_only() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    set_flags(&p, b"/d", FS_NODUMP_FL | FS_NOATIME_FL | FS_APPEND_FL).unwrap();
    mkfile(&p, b"/d/f", b"");
    p.mkdir(b"/d/sub", 0o755).unwrap();
    p.symlink(b"f", b"/d/l").unwrap();
    let inherited = FS_NODUMP_FL | FS_NOATIME_FL;
    assert_eq!(flags_of(&p, b"/d/f"), inherited);
    assert_eq!(flags_of(&p, b"/d/sub"), inherited);
    let sx = p
        .statx(AT_FDCWD, b"/d/l", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS)
        .unwrap();
    assert_eq!(sx.attributes, STATX_ATTR_NODUMP);
    // The mode a stat shows carries none of it.
    assert_eq!(p.stat(b"/d/f").unwrap().mode, S_IFREG | 0o644);
}

#[test]
fn noatime_keeps_the_access_time() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"data");
    let old = Timespec::new(100, 0);
    for (flags, moves) in [(FS_NOATIME_FL, false), (0, true)] {
        set_flags(&p, b"/f", flags).unwrap();
        p.utimensat(AT_FDCWD, b"/f", Some([old, old]), 0).unwrap();
        read_file(&p, b"/f");
        assert_eq!(
            p.stat(b"/f").unwrap().atime != old,
            moves,
            "flags {flags:#x}"
        );
    }
}

#[test]
fn statx_reports_the_flags_and_the_mount_root() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    set_flags(
        &p,
        b"/f",
        FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL,
    )
    .unwrap();
    let sx = p.statx(AT_FDCWD, b"/f", 0, STATX_BASIC_STATS).unwrap();
    assert_eq!(
        sx.attributes,
        STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND | STATX_ATTR_NODUMP
    );
    assert_eq!(sx.attributes_mask, 0x20_3070);
    let root = p.statx(AT_FDCWD, b"/", 0, STATX_BASIC_STATS).unwrap();
    assert_eq!(root.attributes, STATX_ATTR_MOUNT_ROOT);
    let [r, _w] = p.pipe2(0).unwrap();
    let pipe = p.statx(r, b"", AT_EMPTY_PATH, STATX_BASIC_STATS).unwrap();
    assert_eq!((pipe.attributes, pipe.attributes_mask), (0, 0x20_3000));
}

#[test]
fn a_read_only_mount_refuses_changes_first() {
    let (_vfs, p) = setup();
    tmpfs_at(&p, b"/m", 0).unwrap();
    mkfile(&p, b"/m/f", b"");
    p.mount(b"", b"/m", b"", MS_REMOUNT | MS_RDONLY).unwrap();
    let fd = p.open(b"/m/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fs_ioc_setflags(fd, 0), Err(Errno::EROFS));
    assert_eq!(p.fs_ioc_getflags(fd), Ok(0));
}

/// Flag changes share the mode word with chmod: neither may lose the
/// other's bits. One thread sets flags, one changes the mode, one keeps
/// trying changes an immutable file must refuse; at the end both the last
/// mode and the last flags stand, and no refused change went through.
#[test]
fn flag_changes_and_mode_changes_do_not_clobber_each_other() {
    let (vfs, p) = setup();
    mkfile(&p, b"/shared", b"");
    mkfile(&p, b"/locked", b"keep");
    set_flags(&p, b"/locked", FS_IMMUTABLE_FL).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    const ROUNDS: u32 = 3000;
    let flagger = {
        let p = p.clone_thread();
        std::thread::spawn(move || {
            let fd = p.open(b"/shared", O_RDONLY, 0).unwrap();
            let lfd = p.open(b"/locked", O_RDONLY, 0).unwrap();
            for i in 0..ROUNDS {
                let f = if i % 2 == 0 {
                    FS_NODUMP_FL
                } else {
                    FS_NOATIME_FL
                };
                p.fs_ioc_setflags(fd, f).unwrap();
                // Toggle a flag of the immutable file; it stays immutable.
                p.fs_ioc_setflags(lfd, FS_IMMUTABLE_FL | f).unwrap();
            }
            p.fs_ioc_setflags(fd, FS_NODUMP_FL | FS_NOATIME_FL).unwrap();
            p.close(fd).unwrap();
            p.close(lfd).unwrap();
        })
    };
    let chmodder = {
        let p = p.clone_thread();
        std::thread::spawn(move || {
            for i in 0..ROUNDS {
                p.chmod(b"/shared", 0o600 | (i & 0o77)).unwrap();
            }
            p.chmod(b"/shared", 0o640).unwrap();
        })
    };
    let refused = {
        let p = p.clone_thread();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut tries = 0u32;
            while !stop.load(Ordering::Relaxed) || tries < 100 {
                assert_eq!(p.chmod(b"/locked", 0o777), Err(Errno::EPERM));
                assert_eq!(p.open(b"/locked", O_WRONLY, 0), Err(Errno::EPERM));
                assert_eq!(p.unlink(b"/locked"), Err(Errno::EPERM));
                assert_eq!(p.rename(b"/locked", b"/moved"), Err(Errno::EPERM));
                tries += 1;
            }
        })
    };
    flagger.join().unwrap();
    chmodder.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    refused.join().unwrap();
    assert_eq!(flags_of(&p, b"/shared"), FS_NODUMP_FL | FS_NOATIME_FL);
    assert_eq!(p.stat(b"/shared").unwrap().mode, S_IFREG | 0o640);
    assert_eq!(flags_of(&p, b"/locked") & FS_IMMUTABLE_FL, FS_IMMUTABLE_FL);
    assert_eq!(p.stat(b"/locked").unwrap().mode, S_IFREG | 0o644);
    assert_eq!(read_file(&p, b"/locked"), b"keep");
    drop(p);
    vfs.check_invariants().unwrap();
}
