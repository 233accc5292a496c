//! Per-mount flags (mount/flags.rs): what nosuid, nodev, noexec,
//! nosymfollow and the atime modes change, statfs's report of them, bind
//! mounts (which copy them, recursively with MS_REC), remounts, the
//! propagation requests and the flags vfscale refuses.

mod common;
use common::*;

#[test]
fn noexec_nodev_nosuid_take_effect_on_their_mount_only() {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/m", MS_NOEXEC | MS_NODEV | MS_NOSUID).unwrap();
    p.mkdir(b"/plain", 0o755).unwrap();
    for dir in [&b"/m"[..], b"/plain"] {
        let f = [dir, b"/run"].concat();
        mkfile(&p, &f, b"#!");
        p.chmod(&f, 0o4755).unwrap();
        let dev = [dir, b"/null"].concat();
        p.mknodat(AT_FDCWD, &dev, S_IFCHR | 0o666, 0).unwrap();
    }
    assert_eq!(
        p.statfs(b"/m").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NOSUID | ST_NODEV | ST_NOEXEC
    );
    assert_eq!(p.statfs(b"/plain").unwrap().f_flags, ST_VALID | ST_RELATIME);
    // access(X_OK) of a regular file on a noexec mount, even for root and
    // with the mode allowing it; a directory's search bit is unaffected.
    assert_eq!(p.access(b"/m/run", X_OK), Err(Errno::EACCES));
    assert_eq!(p.access(b"/m/run", R_OK | X_OK), Err(Errno::EACCES));
    p.access(b"/m/run", R_OK).unwrap();
    p.access(b"/m", X_OK).unwrap();
    p.access(b"/plain/run", X_OK).unwrap();
    // Through a descriptor (AT_EMPTY_PATH) the same.
    let fd = p.open(b"/m/run", O_PATH, 0).unwrap();
    assert_eq!(
        p.faccessat(fd, b"", X_OK, AT_EMPTY_PATH),
        Err(Errno::EACCES)
    );
    p.close(fd).unwrap();
    // noexec is checked before the mode bits: a user without any right
    // is told EACCES either way, but a user with them is refused too.
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.access(b"/m/run", X_OK), Err(Errno::EACCES));
    u.access(b"/plain/run", X_OK).unwrap();
    // A device node on a nodev mount does not open (EACCES, before the
    // missing driver's ENXIO); O_PATH still does.
    assert_eq!(p.open(b"/m/null", O_RDONLY, 0), Err(Errno::EACCES));
    assert_eq!(p.open(b"/plain/null", O_RDONLY, 0), Err(Errno::ENXIO));
    let fd = p.open(b"/m/null", O_PATH, 0).unwrap();
    p.close(fd).unwrap();
    // Nothing else changes: the set-user-ID bit stays, stat reports it.
    assert_eq!(p.stat(b"/m/run").unwrap().mode & 0o7777, 0o4755);
    drop(u);
    p.umount2(b"/m", 0).unwrap();
}

#[test]
fn nosymfollow_refuses_following_links_on_the_mount() {
    let (_vfs, p) = setup();
    tmpfs_at(&p, b"/m", MS_NOSYMFOLLOW).unwrap();
    assert_eq!(
        p.statfs(b"/m").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NOSYMFOLLOW
    );
    mkfile(&p, b"/m/f", b"data");
    p.symlink(b"f", b"/m/l").unwrap();
    p.mkdir(b"/m/d", 0o755).unwrap();
    p.symlink(b"d", b"/m/ld").unwrap();
    p.symlink(b"new", b"/m/dangling").unwrap();
    // Following, last component or inner, is ELOOP; readlink and lstat
    // are not following.
    assert_eq!(p.open(b"/m/l", O_RDONLY, 0), Err(Errno::ELOOP));
    assert_eq!(p.stat(b"/m/l"), Err(Errno::ELOOP));
    assert_eq!(p.stat(b"/m/ld/."), Err(Errno::ELOOP));
    assert_eq!(
        p.open(b"/m/dangling", O_CREAT | O_WRONLY, 0o644),
        Err(Errno::ELOOP)
    );
    assert_eq!(p.stat(b"/m/new"), Err(Errno::ENOENT));
    assert_eq!(p.readlink(b"/m/l").unwrap(), b"f");
    assert_eq!(ftype(&p.lstat(b"/m/l").unwrap()), S_IFLNK);
    // A link elsewhere into the mount is followed: the rule is the link's
    // mount's.
    p.symlink(b"/m/f", b"/outer").unwrap();
    assert_eq!(read_file(&p, b"/outer"), b"data");
    // Off again after a remount without it.
    p.mount(b"", b"/m", b"", MS_REMOUNT | MS_BIND).unwrap();
    assert_eq!(read_file(&p, b"/m/l"), b"data");
}

fn atime(p: &Process, path: &[u8]) -> Timespec {
    p.stat(path).unwrap().atime
}

fn read_once(p: &Process, path: &[u8]) {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let mut b = [0u8; 8];
    assert!(p.read(fd, &mut b).unwrap() > 0);
    p.close(fd).unwrap();
}

fn list_once(p: &Process, path: &[u8]) {
    p.read_dir(path).unwrap();
}

#[test]
fn atime_modes() {
    let (_vfs, p) = setup();
    for (dir, flags) in [
        (&b"/rel"[..], 0),
        (b"/strict", MS_STRICTATIME),
        (b"/none", MS_NOATIME),
        (b"/nodir", MS_NODIRATIME | MS_STRICTATIME),
    ] {
        tmpfs_at(&p, dir, flags).unwrap();
        mkfile(&p, &[dir, b"/f"].concat(), b"data");
        p.mkdir(&[dir, b"/d"].concat(), 0o755).unwrap();
    }
    assert_eq!(p.statfs(b"/strict").unwrap().f_flags, ST_VALID);
    assert_eq!(p.statfs(b"/none").unwrap().f_flags, ST_VALID | ST_NOATIME);
    assert_eq!(
        p.statfs(b"/nodir").unwrap().f_flags,
        ST_VALID | ST_NODIRATIME
    );
    tick();
    // The first read after the writes: relatime and strict write atime,
    // noatime does not.
    let before: Vec<Timespec> = [&b"/rel/f"[..], b"/strict/f", b"/none/f"]
        .iter()
        .map(|f| atime(&p, f))
        .collect();
    for f in [&b"/rel/f"[..], b"/strict/f", b"/none/f"] {
        read_once(&p, f);
    }
    assert!(atime(&p, b"/rel/f") > before[0]);
    assert!(atime(&p, b"/strict/f") > before[1]);
    assert_eq!(atime(&p, b"/none/f"), before[2]);
    // Read again later: only strict moves (relatime's atime is now newer
    // than mtime and ctime, and not a day old).
    let (rel, strict) = (atime(&p, b"/rel/f"), atime(&p, b"/strict/f"));
    tick();
    read_once(&p, b"/rel/f");
    read_once(&p, b"/strict/f");
    assert_eq!(atime(&p, b"/rel/f"), rel);
    assert!(atime(&p, b"/strict/f") > strict);
    // nodiratime: listings leave a directory's atime, reads still move a
    // file's.
    let (d, f) = (atime(&p, b"/nodir/d"), atime(&p, b"/nodir/f"));
    let sd = atime(&p, b"/strict/d");
    tick();
    list_once(&p, b"/nodir/d");
    list_once(&p, b"/strict/d");
    read_once(&p, b"/nodir/f");
    assert_eq!(atime(&p, b"/nodir/d"), d);
    assert!(atime(&p, b"/strict/d") > sd);
    assert!(atime(&p, b"/nodir/f") > f);
    // readlink is a read-like access too.
    p.symlink(b"f", b"/none/l").unwrap();
    let l = p.lstat(b"/none/l").unwrap().atime;
    tick();
    p.readlink(b"/none/l").unwrap();
    assert_eq!(p.lstat(b"/none/l").unwrap().atime, l);
}

#[test]
fn bind_mounts_copy_flags_and_remounts_change_one_mount() {
    let (_vfs, p) = setup();
    tmpfs_at(&p, b"/m", MS_NOEXEC | MS_NOATIME).unwrap();
    mkfile(&p, b"/m/run", b"");
    p.chmod(b"/m/run", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"/m", b"/b", b"", MS_BIND).unwrap();
    // clone_mnt: the bind starts with its source's flags.
    assert_eq!(
        p.statfs(b"/b").unwrap().f_flags,
        ST_VALID | ST_NOEXEC | ST_NOATIME
    );
    assert_eq!(p.access(b"/b/run", X_OK), Err(Errno::EACCES));
    // A bind remount changes that mount alone; naming no atime flag
    // keeps its atime mode.
    p.mount(b"", b"/b", b"", MS_REMOUNT | MS_BIND | MS_NODEV)
        .unwrap();
    assert_eq!(
        p.statfs(b"/b").unwrap().f_flags,
        ST_VALID | ST_NODEV | ST_NOATIME
    );
    p.access(b"/b/run", X_OK).unwrap();
    assert_eq!(p.access(b"/m/run", X_OK), Err(Errno::EACCES));
    assert_eq!(
        p.statfs(b"/m").unwrap().f_flags,
        ST_VALID | ST_NOEXEC | ST_NOATIME
    );
    // A plain remount changes the mount's flags as well (tmpfs has no
    // superblock option to change); naming an atime flag replaces the mode.
    p.mount(b"", b"/m", b"", MS_REMOUNT | MS_RELATIME).unwrap();
    assert_eq!(p.statfs(b"/m").unwrap().f_flags, ST_VALID | ST_RELATIME);
    p.access(b"/m/run", X_OK).unwrap();
    // A binding of a subdirectory copies its mount's flags too.
    p.mkdir(b"/m/sub", 0o755).unwrap();
    p.mount(b"", b"/m", b"", MS_REMOUNT | MS_NOSUID).unwrap();
    p.mkdir(b"/c", 0o755).unwrap();
    p.mount(b"/m/sub", b"/c", b"", MS_BIND).unwrap();
    assert_eq!(
        p.statfs(b"/c").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NOSUID
    );
    // Remount names a mount's root: a directory inside one is EINVAL, as
    // is a file or a path that is not mounted on.
    assert_eq!(
        p.mount(b"", b"/m/sub", b"", MS_REMOUNT | MS_BIND),
        Err(Errno::EINVAL)
    );
    p.mkdir(b"/plain", 0o755).unwrap();
    assert_eq!(p.mount(b"", b"/plain", b"", MS_REMOUNT), Err(Errno::EINVAL));
    // The namespace root is a mount's root.
    p.mount(b"", b"/", b"", MS_REMOUNT | MS_BIND | MS_NOSUID)
        .unwrap();
    assert_eq!(
        p.statfs(b"/plain").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NOSUID
    );
    // Not root: EPERM after the lookup.
    let (vfs2, q) = setup();
    let u = user(&vfs2, 1000, 1000);
    assert_eq!(
        u.mount(b"", b"/", b"", MS_REMOUNT | MS_BIND),
        Err(Errno::EPERM)
    );
    assert_eq!(
        u.mount(b"", b"/nowhere", b"", MS_REMOUNT),
        Err(Errno::ENOENT)
    );
    drop((u, q));
    for m in [&b"/c"[..], b"/b", b"/m"] {
        p.umount2(m, 0).unwrap();
    }
}

#[test]
fn refused_and_accepted_requests() {
    let (_vfs, p) = setup();
    p.mkdir(b"/m", 0o755).unwrap();
    p.mount(b"none", b"/m", b"tmpfs", 0).unwrap();
    assert_eq!(p.statfs(b"/m").unwrap().f_flags, ST_VALID | ST_RELATIME);
    // Propagation: one type at a mount's root (api_propagation.rs tells
    // what each does).
    for t in [
        MS_PRIVATE,
        MS_PRIVATE | MS_REC,
        MS_SLAVE,
        MS_SHARED,
        MS_UNBINDABLE,
    ] {
        p.mount(b"", b"/m", b"", t).unwrap();
    }
    p.mkdir(b"/m/d", 0o755).unwrap();
    for (path, flags) in [
        (&b"/m/d"[..], MS_PRIVATE),
        (b"/m", MS_PRIVATE | MS_SHARED),
        (b"/m", MS_PRIVATE | MS_NOEXEC),
        (b"/m", MS_SHARED | MS_UNBINDABLE),
        // Kernel-internal.
        (b"/m", MS_NOUSER),
    ] {
        assert_eq!(
            p.mount(b"/m", path, b"tmpfs", flags),
            Err(Errno::EINVAL),
            "{flags:#x}"
        );
    }
    // The old callers' magic number in the top half is discarded.
    p.mkdir(b"/n", 0o755).unwrap();
    p.mount(b"none", b"/n", b"tmpfs", MS_MGC_VAL | MS_NOEXEC)
        .unwrap();
    assert_eq!(
        p.statfs(b"/n").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NOEXEC
    );
    p.umount2(b"/n", 0).unwrap();
    p.umount2(b"/m", 0).unwrap();
}

#[test]
fn recursive_bind_copies_the_mounts_beneath() {
    let (vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    tmpfs_at(&p, b"/a/sub", MS_NODEV).unwrap();
    mkfile(&p, b"/a/sub/in", b"sub's");
    tmpfs_at(&p, b"/a/sub/deeper", 0).unwrap();
    mkfile(&p, b"/a/sub/deeper/x", b"deeper's");
    // A mount elsewhere is not copied.
    tmpfs_at(&p, b"/elsewhere", 0).unwrap();
    p.mkdir(b"/plain", 0o755).unwrap();
    p.mkdir(b"/rec", 0o755).unwrap();
    p.mount(b"/a", b"/plain", b"", MS_BIND).unwrap();
    p.mount(b"/a", b"/rec", b"", MS_BIND | MS_REC).unwrap();
    // Without MS_REC: the directory under the mount.
    assert_eq!(names(&p, b"/plain/sub"), Vec::<Vec<u8>>::new());
    // With it: the mounts and their flags.
    assert_eq!(read_file(&p, b"/rec/sub/in"), b"sub's");
    assert_eq!(read_file(&p, b"/rec/sub/deeper/x"), b"deeper's");
    assert_eq!(
        p.statfs(b"/rec/sub").unwrap().f_flags,
        ST_VALID | ST_RELATIME | ST_NODEV
    );
    assert_eq!(
        p.stat(b"/rec/sub/in").unwrap().ino,
        p.stat(b"/a/sub/in").unwrap().ino
    );
    // Only mounts beneath the source are copied: a directory with none
    // under it binds as one mount, which a plain umount takes.
    p.mkdir(b"/solo", 0o755).unwrap();
    p.mkdir(b"/s", 0o755).unwrap();
    p.mount(b"/solo", b"/s", b"", MS_BIND | MS_REC).unwrap();
    p.umount2(b"/s", 0).unwrap();
    p.rmdir(b"/s").unwrap();
    p.rmdir(b"/solo").unwrap();
    // The copies are mounts of their own: unmounting one leaves the
    // original.
    p.umount2(b"/rec/sub/deeper", 0).unwrap();
    assert_eq!(p.stat(b"/rec/sub/deeper/x"), Err(Errno::ENOENT));
    assert_eq!(read_file(&p, b"/a/sub/deeper/x"), b"deeper's");
    // A tree bound beneath itself is copied as it was: one level of
    // copies, not an endless descent.
    p.mkdir(b"/a/sub/loop", 0o755).unwrap();
    p.mount(b"/a", b"/a/sub/loop", b"", MS_BIND | MS_REC)
        .unwrap();
    assert_eq!(read_file(&p, b"/a/sub/loop/sub/in"), b"sub's");
    assert_eq!(read_file(&p, b"/a/sub/loop/sub/deeper/x"), b"deeper's");
    assert_eq!(
        names(&p, b"/a/sub/loop/sub/loop"),
        Vec::<Vec<u8>>::new(),
        "the copy of the loop's mountpoint has nothing mounted on it"
    );
    // A whole tree goes with a lazy unmount of each top.
    for m in [
        &b"/a/sub/loop"[..],
        b"/rec",
        b"/plain",
        b"/elsewhere",
        b"/a/sub",
    ] {
        p.umount2(m, MNT_DETACH).unwrap();
    }
    p.rmdir(b"/a/sub").unwrap();
    for d in [&b"/a"[..], b"/rec", b"/plain", b"/elsewhere"] {
        p.rmdir(d).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}
/// A dentry mounted on through two mounts of its filesystem (the source
/// and a bind of it) stays a mountpoint until both are unmounted (found
/// with the recursive bind: unmounting a copy hid the original).
#[test]
fn a_mountpoint_shared_by_binds_stays_until_its_last_mount_goes() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/x", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    p.mount(b"none", b"/a/x", b"tmpfs", 0).unwrap();
    p.mount(b"none", b"/b/x", b"tmpfs", 0).unwrap();
    mkfile(&p, b"/a/x/on_a", b"a");
    mkfile(&p, b"/b/x/on_b", b"b");
    p.umount2(b"/b/x", 0).unwrap();
    assert_eq!(read_file(&p, b"/a/x/on_a"), b"a");
    assert_eq!(p.stat(b"/b/x/on_b"), Err(Errno::ENOENT));
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(p.stat(b"/a/x/on_a"), Err(Errno::ENOENT));
    p.umount2(b"/b", 0).unwrap();
}

/// statfs keeps the superblock's read-only flag while the mount replaces
/// the host mount's flags: a passthrough instance of a read-only host
/// filesystem says it is read-only (and writes are EROFS, from the host).
#[test]
fn a_read_only_host_filesystem_stays_read_only_through_passthrough() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: mounting on the host needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("vfscale-ro-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.clone();
    let seen = std::thread::spawn(move || {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(d.as_os_str().as_bytes()).unwrap();
        // A mount namespace of this thread's own, private, so the mount
        // goes with the thread.
        // SAFETY: unshare and mount with valid NUL-terminated strings or
        // NULLs where mount(2) allows them.
        let ok = unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    core::ptr::null(),
                    c"/".as_ptr(),
                    core::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    core::ptr::null(),
                ) == 0
                && libc::mount(
                    c"none".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOEXEC,
                    core::ptr::null(),
                ) == 0
        };
        if !ok {
            return None;
        }
        let vfs = Vfs::with_passthrough_root(Default::default(), &d, Default::default()).unwrap();
        let p = vfs.root_process();
        let flags = p.statfs(b"/").unwrap().f_flags;
        Some((flags, p.mkdir(b"/x", 0o755)))
    })
    .join()
    .unwrap();
    std::fs::remove_dir(&dir).unwrap();
    let Some((flags, mkdir)) = seen else {
        println!("skipped: no mount namespace or tmpfs mount here");
        return;
    };
    // The host's read-only stays; its noexec does not (vfscale's mount,
    // relatime by default, is what vfscale enforces).
    assert_eq!(flags, ST_VALID | ST_RDONLY | ST_RELATIME);
    assert_eq!(mkdir, Err(Errno::EROFS));
}

/// The instance's own flags statfs reports (flags_by_sb: SB_SYNCHRONOUS,
/// SB_MANDLOCK): set by the new mount, seen through binds, kept by a bind
/// remount, replaced by a plain remount; MS_DIRSYNC is not reported. As
/// the host's 6.18 tmpfs.
#[test]
fn statfs_shows_the_instance_flags_through_every_mount() {
    let (_vfs, p) = setup();
    let flags = |path: &[u8]| p.statfs(path).unwrap().f_flags;
    let base = ST_VALID | ST_RELATIME;
    tmpfs_at(&p, b"/a", MS_SYNCHRONOUS | MS_MANDLOCK).unwrap();
    assert_eq!(flags(b"/a"), base | ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    assert_eq!(flags(b"/b"), base | ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mount(b"", b"/b", b"", MS_REMOUNT | MS_BIND).unwrap();
    assert_eq!(flags(b"/b"), base | ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mount(b"", b"/a", b"", MS_REMOUNT).unwrap();
    assert_eq!((flags(b"/a"), flags(b"/b")), (base, base));
    p.mount(b"", b"/a", b"", MS_REMOUNT | MS_SYNCHRONOUS)
        .unwrap();
    assert_eq!(flags(b"/b"), base | ST_SYNCHRONOUS);
    tmpfs_at(&p, b"/d", MS_DIRSYNC).unwrap();
    assert_eq!(flags(b"/d"), base);
    assert_eq!(flags(b"/"), base);
}
