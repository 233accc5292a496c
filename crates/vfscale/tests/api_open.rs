//! openat, close, close_range, dup, dup2, dup3.

mod common;
use common::*;

// ---------------------------------------------------------------- openat

#[test]
fn open_creates_with_mode_minus_umask_and_owner() {
    let (vfs, p) = setup();
    let root_before = p.stat(b"/").unwrap();
    tick();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o777).unwrap();
    assert_eq!(fd, 0, "the lowest free descriptor of an empty table");
    let st = p.fstat(fd).unwrap();
    assert_eq!(st.mode, S_IFREG | 0o755);
    assert_eq!(
        (st.nlink, st.uid, st.gid, st.size, st.blocks),
        (1, 0, 0, 0, 0)
    );
    assert_eq!(st.atime, st.mtime);
    assert_eq!(st.mtime, st.ctime);
    let root_after = p.stat(b"/").unwrap();
    assert!(root_after.mtime > root_before.mtime);
    assert!(root_after.ctime > root_before.ctime);
    assert_eq!(root_after.nlink, root_before.nlink, "a file adds no link");
    assert_eq!(p.stat(b"/f").unwrap().ino, st.ino);
    p.close(fd).unwrap();

    // Type bits in the mode are ignored; set-id and sticky bits are kept.
    p.umask(0);
    let fd = p.open(b"/g", O_CREAT | O_WRONLY, S_IFDIR | 0o7644).unwrap();
    assert_eq!(p.fstat(fd).unwrap().mode, S_IFREG | 0o7644);
    p.close(fd).unwrap();
    p.unlink(b"/f").unwrap();
    p.unlink(b"/g").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn open_existing_with_o_creat_keeps_content_and_times() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"data");
    p.chmod(b"/f", 0o600).unwrap();
    let before = p.stat(b"/f").unwrap();
    tick();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o777).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!(st, before, "O_CREAT on an existing file changes nothing");
    p.close(fd).unwrap();
    assert_eq!(read_file(&p, b"/f"), b"data");
}

#[test]
fn open_o_excl() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"x");
    p.symlink(b"/nowhere", b"/dangling").unwrap();
    assert_eq!(
        p.open(b"/f", O_CREAT | O_EXCL | O_RDWR, 0o644),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.open(b"/d", O_CREAT | O_EXCL | O_RDONLY, 0o644),
        Err(Errno::EEXIST)
    );
    // O_EXCL never follows a symlink, even a dangling one.
    assert_eq!(
        p.open(b"/dangling", O_CREAT | O_EXCL | O_RDWR, 0o644),
        Err(Errno::EEXIST)
    );
    assert_eq!(p.stat(b"/nowhere"), Err(Errno::ENOENT));
    let fd = p.open(b"/new", O_CREAT | O_EXCL | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn open_enoent_and_enotdir() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    p.mkdir(b"/d", 0o755).unwrap();
    assert_eq!(p.open(b"/nx", O_RDONLY, 0), Err(Errno::ENOENT));
    assert_eq!(
        p.open(b"/nxdir/x", O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENOENT)
    );
    assert_eq!(p.open(b"", O_RDONLY, 0), Err(Errno::ENOENT));
    assert_eq!(p.open(b"", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOENT));
    assert_eq!(p.open(b"/f/x", O_RDONLY, 0), Err(Errno::ENOTDIR));
    assert_eq!(
        p.open(b"/f/x", O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENOTDIR)
    );
    assert_eq!(p.open(b"/f/", O_RDONLY, 0), Err(Errno::ENOTDIR));
    assert_eq!(p.open(b"/f/.", O_RDONLY, 0), Err(Errno::ENOTDIR));
    assert_eq!(
        p.open(b"/f", O_RDONLY | O_DIRECTORY, 0),
        Err(Errno::ENOTDIR)
    );
    let fd = p.open(b"/d/", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    let fd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn open_directory_for_writing_is_eisdir() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"x");
    assert_eq!(p.open(b"/d", O_WRONLY, 0), Err(Errno::EISDIR));
    assert_eq!(p.open(b"/d", O_RDWR, 0), Err(Errno::EISDIR));
    assert_eq!(p.open(b"/d", O_RDONLY | O_TRUNC, 0), Err(Errno::EISDIR));
    assert_eq!(p.open(b"/d", O_CREAT | O_RDONLY, 0o644), Err(Errno::EISDIR));
    assert_eq!(
        p.open(b"/d/", O_CREAT | O_RDONLY, 0o644),
        Err(Errno::EISDIR)
    );
    assert_eq!(p.open(b"/", O_WRONLY, 0), Err(Errno::EISDIR));
    assert_eq!(p.open(b".", O_WRONLY, 0), Err(Errno::EISDIR));
    // O_CREAT with a trailing slash: EISDIR whether the name exists or not.
    assert_eq!(
        p.open(b"/new/", O_CREAT | O_RDWR, 0o644),
        Err(Errno::EISDIR)
    );
    assert_eq!(
        p.open(b"/f/", O_CREAT | O_RDONLY, 0o644),
        Err(Errno::EISDIR)
    );
    assert_eq!(p.stat(b"/new"), Err(Errno::ENOENT));
    let fd = p.open(b".", O_RDONLY, 0).unwrap();
    assert!(s_isdir(p.fstat(fd).unwrap().mode));
    p.close(fd).unwrap();
}

#[test]
fn open_creat_with_directory_is_einval() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"x");
    assert_eq!(
        p.open(b"/new", O_CREAT | O_DIRECTORY | O_RDONLY, 0o644),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.stat(b"/new"), Err(Errno::ENOENT));
    assert_eq!(
        p.open(b"/f", O_CREAT | O_DIRECTORY | O_RDONLY, 0o644),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.open(b"/d", O_CREAT | O_DIRECTORY | O_RDONLY, 0o644),
        Err(Errno::EINVAL)
    );
}

#[test]
fn open_symlinks() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"target");
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"f", b"/lf").unwrap();
    p.symlink(b"d", b"/ld").unwrap();
    p.symlink(b"self", b"/self").unwrap();
    // Followed by default.
    let fd = p.open(b"/lf", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstat(fd).unwrap().ino, p.stat(b"/f").unwrap().ino);
    p.close(fd).unwrap();
    let fd = p.open(b"/ld", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.close(fd).unwrap();
    // O_NOFOLLOW on a symlink in the last component.
    assert_eq!(p.open(b"/lf", O_RDONLY | O_NOFOLLOW, 0), Err(Errno::ELOOP));
    assert_eq!(
        p.open(b"/lf", O_CREAT | O_NOFOLLOW | O_RDWR, 0o644),
        Err(Errno::ELOOP)
    );
    assert_eq!(
        p.open(b"/ld", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0),
        Err(Errno::ENOTDIR)
    );
    // O_NOFOLLOW applies only to the last component.
    let fd = p.open(b"/ld/", O_RDONLY | O_NOFOLLOW, 0).unwrap();
    p.close(fd).unwrap();
    // Loops.
    assert_eq!(p.open(b"/self", O_RDONLY, 0), Err(Errno::ELOOP));
    assert_eq!(p.open(b"/self", O_CREAT | O_RDWR, 0o644), Err(Errno::ELOOP));
    assert_eq!(p.open(b"/self/x", O_RDONLY, 0), Err(Errno::ELOOP));
    // A symlink to a file with a trailing slash.
    assert_eq!(p.open(b"/lf/", O_RDONLY, 0), Err(Errno::ENOTDIR));
}

#[test]
fn open_creat_through_dangling_symlink_creates_the_target() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"target", b"/d/rel").unwrap();
    p.symlink(b"/d/abs_target", b"/abs").unwrap();
    p.symlink(b"nodir/x", b"/d/deep").unwrap();
    p.symlink(b"/d/rel", b"/chain").unwrap();

    let fd = p.open(b"/d/rel", O_CREAT | O_RDWR, 0o600).unwrap();
    p.write(fd, b"1").unwrap();
    p.close(fd).unwrap();
    let st = p.stat(b"/d/target").unwrap();
    assert_eq!(st.mode, S_IFREG | 0o600);
    assert_eq!(st.size, 1);
    assert_eq!(p.lstat(b"/d/rel").unwrap().mode, S_IFLNK | 0o777);

    let fd = p.open(b"/abs", O_CREAT | O_RDWR, 0o640).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.stat(b"/d/abs_target").unwrap().mode, S_IFREG | 0o640);

    // The target's directory must exist.
    assert_eq!(
        p.open(b"/d/deep", O_CREAT | O_RDWR, 0o600),
        Err(Errno::ENOENT)
    );

    // Through a chain, now that the end exists: opens it.
    let fd = p.open(b"/chain", O_CREAT | O_RDWR, 0o600).unwrap();
    assert_eq!(p.fstat(fd).unwrap().ino, st.ino);
    p.close(fd).unwrap();
}

#[test]
fn open_o_trunc() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"some data");
    let before = p.stat(b"/f").unwrap();
    tick();
    let fd = p.open(b"/f", O_WRONLY | O_TRUNC, 0).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (0, 0));
    assert!(st.mtime > before.mtime);
    assert!(st.ctime > before.ctime);
    p.close(fd).unwrap();
    // O_RDONLY | O_TRUNC truncates too (it needs write permission).
    mkfile(&p, b"/f", b"again");
    let fd = p.open(b"/f", O_RDONLY | O_TRUNC, 0).unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, 0);
    p.close(fd).unwrap();
    // Even an empty file gets new times.
    let before = p.stat(b"/f").unwrap();
    tick();
    let fd = p.open(b"/f", O_WRONLY | O_TRUNC, 0).unwrap();
    p.close(fd).unwrap();
    assert!(p.stat(b"/f").unwrap().mtime > before.mtime);
}

#[test]
fn open_o_path() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    p.chmod(b"/f", 0o000).unwrap();
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"f", b"/lf").unwrap();
    // O_CREAT and O_TRUNC are ignored with O_PATH.
    assert_eq!(p.open(b"/new", O_PATH | O_CREAT, 0o644), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/new"), Err(Errno::ENOENT));
    let fd = p.open(b"/f", O_PATH | O_TRUNC | O_RDWR, 0).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().size, 5);
    assert_eq!(p.fstat(fd).unwrap().size, 5);
    let mut b = [0u8; 4];
    assert_eq!(p.read(fd, &mut b), Err(Errno::EBADF));
    assert_eq!(p.write(fd, b"x"), Err(Errno::EBADF));
    assert_eq!(p.pread(fd, &mut b, 0), Err(Errno::EBADF));
    assert_eq!(p.pwrite(fd, b"x", 0), Err(Errno::EBADF));
    assert_eq!(p.readv(fd, &mut [&mut b[..]]), Err(Errno::EBADF));
    assert_eq!(p.writev(fd, &[b"x"]), Err(Errno::EBADF));
    assert_eq!(p.lseek(fd, 0, SEEK_SET), Err(Errno::EBADF));
    assert_eq!(p.ftruncate(fd, 0), Err(Errno::EBADF));
    assert_eq!(p.fsync(fd), Err(Errno::EBADF));
    assert_eq!(p.fdatasync(fd), Err(Errno::EBADF));
    assert_eq!(p.fchmod(fd, 0o644), Err(Errno::EBADF));
    assert_eq!(p.fchown(fd, 1, 1), Err(Errno::EBADF));
    assert_eq!(p.futimens(fd, None), Err(Errno::EBADF));
    assert_eq!(p.fstatfs(fd).unwrap().f_namelen, 255);
    // dup works and keeps O_PATH.
    let fd2 = p.dup(fd).unwrap();
    assert_eq!(p.read(fd2, &mut b), Err(Errno::EBADF));
    p.close(fd2).unwrap();
    p.close(fd).unwrap();

    // O_PATH on a directory: usable as dirfd and for fchdir, not getdents.
    let dfd = p.open(b"/d", O_PATH, 0).unwrap();
    let mut buf = [0u8; 1024];
    assert_eq!(p.getdents64(dfd, &mut buf), Err(Errno::EBADF));
    mkfile(&p, b"/d/in", b"");
    assert_eq!(p.fstatat(dfd, b"in", 0).unwrap().size, 0);
    p.fchdir(dfd).unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/d");
    p.close(dfd).unwrap();

    // O_PATH | O_NOFOLLOW opens the symlink itself.
    let lfd = p.open(b"/lf", O_PATH | O_NOFOLLOW, 0).unwrap();
    assert_eq!(ftype(&p.fstat(lfd).unwrap()), S_IFLNK);
    let mut t = [0u8; 16];
    assert_eq!(p.readlinkat(lfd, b"", &mut t), Ok(1));
    assert_eq!(&t[..1], b"f");
    p.close(lfd).unwrap();
}

#[test]
fn open_needs_no_permission_for_root() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    p.chmod(b"/f", 0o000).unwrap();
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn open_tmpfile_makes_an_unnamed_file() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let dir_before = p.stat(b"/d").unwrap();
    tick();
    // Checked against Linux 6.18's tmpfs: flags and F_GETFL, the mode
    // less the umask (set-id bits kept for root), no links.
    let fd = p.open(b"/d", O_TMPFILE | O_RDWR, 0o4777).unwrap();
    assert_eq!(
        p.fcntl(fd, F_GETFL, 0).unwrap(),
        (O_TMPFILE | O_LARGEFILE | O_RDWR) as i64
    );
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.mode, st.nlink, st.size), (S_IFREG | 0o4755, 0, 0));
    assert_eq!(
        p.fd_path(fd).unwrap(),
        format!("/d/#{} (deleted)", st.ino).into_bytes()
    );
    // Nameless: the directory lists nothing and did not change.
    assert!(names(&p, b"/d").is_empty());
    let dir_after = p.stat(b"/d").unwrap();
    assert_eq!(
        (dir_after.size, dir_after.mtime, dir_after.ctime),
        (dir_before.size, dir_before.mtime, dir_before.ctime)
    );
    // Nameless, but in use: a handle reaches it, as Linux's tmpfs encodes
    // one for it.
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(fd, b"", &mut h, AT_EMPTY_PATH).unwrap();
    let by_handle = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    assert_eq!(p.fstat(by_handle).unwrap().ino, st.ino);
    p.close(by_handle).unwrap();
    assert_eq!(p.write(fd, b"data"), Ok(4));
    let mut buf = [0u8; 4];
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(4));
    assert_eq!(&buf, b"data");
    // Its first name, by descriptor.
    p.linkat(fd, b"", AT_FDCWD, b"/d/named", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(read_file(&p, b"/d/named"), b"data");
    assert_eq!(p.fstat(fd).unwrap().nlink, 1);
    assert_eq!(p.stat(b"/d/named").unwrap().ino, st.ino);
    // Named once and unnamed again: no second first name (vfs_link).
    p.unlink(b"/d/named").unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 0);
    assert_eq!(
        p.linkat(fd, b"", AT_FDCWD, b"/d/again", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    p.close(fd).unwrap();
    // O_EXCL: never linkable; O_WRONLY works too.
    let ex = p.open(b"/d", O_TMPFILE | O_WRONLY | O_EXCL, 0o600).unwrap();
    assert_eq!(
        p.linkat(ex, b"", AT_FDCWD, b"/d/n", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    assert_eq!(p.read(ex, &mut [0u8; 1]), Err(Errno::EBADF));
    p.close(ex).unwrap();
    p.rmdir(b"/d").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn open_tmpfile_errors_in_the_kernels_order() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    // build_open_flags: read-only, without O_DIRECTORY, with O_CREAT.
    for flags in [
        O_TMPFILE | O_RDONLY,
        (O_TMPFILE & !O_DIRECTORY) | O_RDWR,
        O_TMPFILE | O_RDWR | O_CREAT,
    ] {
        assert_eq!(p.open(b"/d", flags, 0o600), Err(Errno::EINVAL), "{flags:o}");
    }
    // O_PATH keeps only its own flags: the directory itself is opened.
    let d = p.open(b"/d", O_TMPFILE | O_WRONLY | O_PATH, 0).unwrap();
    assert_eq!(
        p.fcntl(d, F_GETFL, 0).unwrap(),
        (O_PATH | O_DIRECTORY) as i64
    );
    p.close(d).unwrap();
    assert_eq!(p.open(b"/none", O_TMPFILE | O_RDWR, 0), Err(Errno::ENOENT));
    assert_eq!(p.open(b"/f", O_TMPFILE | O_RDWR, 0), Err(Errno::ENOTDIR));
    p.symlink(b"/d", b"/l").unwrap();
    let t = p.open(b"/l", O_TMPFILE | O_RDWR, 0).unwrap();
    p.close(t).unwrap();
    assert_eq!(
        p.open(b"/l", O_TMPFILE | O_RDWR | O_NOFOLLOW, 0),
        Err(Errno::ENOTDIR)
    );
    // Write and search permission on the directory.
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.open(b"/d", O_TMPFILE | O_RDWR, 0o600), Err(Errno::EACCES));
    p.chmod(b"/d", 0o2777).unwrap();
    let ut = u.open(b"/d", O_TMPFILE | O_RDWR, 0o2777).unwrap();
    let st = u.fstat(ut).unwrap();
    // Group of the set-gid directory, whose set-gid bit the caller (not
    // in that group) loses.
    assert_eq!((st.uid, st.gid, st.mode), (1000, 0, S_IFREG | 0o755));
    u.close(ut).unwrap();
    p.unlink(b"/l").unwrap();
    p.unlink(b"/f").unwrap();
    p.rmdir(b"/d").unwrap();
    drop((p, u));
    assert_baseline(&vfs);
}

#[test]
fn open_tmpfile_takes_an_inode_from_the_instance_until_closed() {
    let vfs = Vfs::with_config(vfscale::VfsConfig {
        tmpfs_limits: vfscale::fs::FsLimits {
            max_bytes: 1 << 20,
            max_inodes: 3,
        },
        ..vfscale::VfsConfig::default()
    });
    let p = vfs.root_process();
    // The root and one more inode: the third open finds the limit.
    let a = p.open(b"/", O_TMPFILE | O_RDWR, 0o600).unwrap();
    let b = p.open(b"/", O_TMPFILE | O_RDWR, 0o600).unwrap();
    assert_eq!(p.open(b"/", O_TMPFILE | O_RDWR, 0o600), Err(Errno::ENOSPC));
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, 0);
    // A first name takes no further inode; a second name would.
    p.linkat(a, b"", AT_FDCWD, b"/a", AT_EMPTY_PATH).unwrap();
    assert_eq!(
        p.linkat(a, b"", AT_FDCWD, b"/a2", AT_EMPTY_PATH),
        Err(Errno::ENOSPC)
    );
    p.close(b).unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, 1);
    p.close(a).unwrap();
    p.unlink(b"/a").unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, 2);
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn open_ignores_unknown_flags() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    let fd = p.open(b"/f", O_RDONLY | 0x4000_0000, 0).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn open_accmode_3_opens_without_read_or_write() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    let fd = p.open(b"/f", O_ACCMODE, 0).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(p.read(fd, &mut b), Err(Errno::EBADF));
    assert_eq!(p.write(fd, b"x"), Err(Errno::EBADF));
    p.close(fd).unwrap();
}

#[test]
fn open_name_too_long() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let long = [b'a'; 256];
    let mut path = b"/d/".to_vec();
    path.extend_from_slice(&long);
    assert_eq!(p.open(&path, O_RDONLY, 0), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        p.open(&path, O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENAMETOOLONG)
    );
    path.extend_from_slice(b"/x");
    assert_eq!(p.open(&path, O_RDONLY, 0), Err(Errno::ENAMETOOLONG));
    let ok = [b'b'; 255];
    let fd = p.openat(
        AT_FDCWD,
        &[b"/d/".as_slice(), &ok].concat(),
        O_CREAT | O_RDWR,
        0o644,
    );
    p.close(fd.unwrap()).unwrap();
    // 4096 bytes or more is too long, even when the walk would succeed.
    let mut p4096 = vec![b'/'; 4096 - 2];
    p4096.extend_from_slice(b"/d");
    assert_eq!(p4096.len(), 4096);
    assert_eq!(p.open(&p4096, O_RDONLY, 0), Err(Errno::ENAMETOOLONG));
    let p4095 = &p4096[1..];
    let fd = p.open(p4095, O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.open(b"/d\0x", O_RDONLY, 0), Err(Errno::EINVAL));
}

#[test]
fn openat_relative_to_dirfd() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"in d");
    mkfile(&p, b"/top", b"top");
    let dfd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let fd = p.openat(dfd, b"f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, 4);
    p.close(fd).unwrap();
    let fd = p.openat(dfd, b"new", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert!(p.stat(b"/d/new").is_ok());
    // An absolute path ignores dirfd, even a bad one.
    let fd = p.openat(12345, b"/top", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    // A relative path needs a valid directory fd.
    assert_eq!(p.openat(12345, b"f", O_RDONLY, 0), Err(Errno::EBADF));
    assert_eq!(p.openat(-5, b"f", O_RDONLY, 0), Err(Errno::EBADF));
    let ffd = p.open(b"/top", O_RDONLY, 0).unwrap();
    assert_eq!(p.openat(ffd, b"f", O_RDONLY, 0), Err(Errno::ENOTDIR));
    assert_eq!(
        p.openat(ffd, b"x", O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENOTDIR)
    );
    p.close(ffd).unwrap();
    // dirfd is kept even if the directory is renamed.
    p.rename(b"/d", b"/moved").unwrap();
    let fd = p.openat(dfd, b"f", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    p.close(dfd).unwrap();
}

#[test]
fn open_special_files() {
    // FIFOs: the opens that do not block (blocking ones: api_anon.rs).
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fd = p.open(b"/fifo", O_RDWR, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(
        p.open(b"/fifo", O_WRONLY | O_NONBLOCK, 0),
        Err(Errno::ENXIO)
    );
    let fd = p.open(b"/fifo", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let w = p.open(b"/fifo", O_WRONLY | O_NONBLOCK, 0).unwrap();
    p.close(w).unwrap();
    p.close(fd).unwrap();
    assert_eq!(
        p.open(b"/fifo", O_WRONLY | O_NONBLOCK, 0),
        Err(Errno::ENXIO)
    );
    // Sockets cannot be opened (ENXIO on Linux).
    p.mknodat(AT_FDCWD, b"/sock", S_IFSOCK | 0o644, 0).unwrap();
    assert_eq!(p.open(b"/sock", O_RDONLY, 0), Err(Errno::ENXIO));
    // O_PATH opens anything.
    let fd = p.open(b"/sock", O_PATH, 0).unwrap();
    assert_eq!(ftype(&p.fstat(fd).unwrap()), S_IFSOCK);
    p.close(fd).unwrap();
}

#[test]
fn open_fifo_with_o_trunc() {
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fd = p.open(b"/fifo", O_RDWR | O_TRUNC, 0).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn open_status_flags_and_cloexec() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let fd = p
        .open(
            b"/f",
            O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC,
            0o644,
        )
        .unwrap();
    let fl = p.fd_status_flags(fd).unwrap();
    assert_eq!(fl & O_ACCMODE, O_WRONLY);
    assert_ne!(fl & O_APPEND, 0);
    assert_eq!(fl & (O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC), 0);
    assert!(p.fd_cloexec(fd).unwrap());
    let fd2 = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert!(!p.fd_cloexec(fd2).unwrap());
    p.close(fd).unwrap();
    p.close(fd2).unwrap();
}

#[test]
fn open_emfile_at_the_descriptor_limit() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    p.set_fd_limit(3);
    assert_eq!(p.fd_limit(), 3);
    let fds: Vec<Fd> = (0..3)
        .map(|_| p.open(b"/f", O_RDONLY, 0).unwrap())
        .collect();
    assert_eq!(fds, vec![0, 1, 2]);
    assert_eq!(p.open(b"/f", O_RDONLY, 0), Err(Errno::EMFILE));
    assert_eq!(p.dup(0), Err(Errno::EMFILE));
    assert_eq!(p.dup2(0, 3), Err(Errno::EBADF));
    assert_eq!(p.dup3(0, 3, 0), Err(Errno::EBADF));
    // dup2 onto an open descriptor below the limit works.
    assert_eq!(p.dup2(0, 2), Ok(2));
    // The lowest free descriptor is reused.
    p.close(1).unwrap();
    assert_eq!(p.open(b"/f", O_RDONLY, 0), Ok(1));
    for fd in 0..3 {
        p.close(fd).unwrap();
    }
    drop(p);
    let p = vfs.root_process();
    p.unlink(b"/f").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn open_emfile_has_no_side_effects() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    p.set_fd_limit(1);
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.open(b"/new", O_CREAT | O_RDWR, 0o644), Err(Errno::EMFILE));
    assert_eq!(p.stat(b"/new"), Err(Errno::ENOENT));
    assert_eq!(p.open(b"/f", O_RDWR | O_TRUNC, 0), Err(Errno::EMFILE));
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    p.close(fd).unwrap();
}

// ----------------------------------------------------------------- close

#[test]
fn close_errors_and_reuse() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    assert_eq!(p.close(-1), Err(Errno::EBADF));
    assert_eq!(p.close(0), Err(Errno::EBADF));
    assert_eq!(p.close(999), Err(Errno::EBADF));
    assert_eq!(p.close(i32::MAX), Err(Errno::EBADF));
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.close(fd), Err(Errno::EBADF));
    assert_eq!(p.fstat(fd), Err(Errno::EBADF));
    // An unlinked file stays readable until its last descriptor closes.
    mkfile(&p, b"/g", b"kept");
    let fd = p.open(b"/g", O_RDONLY, 0).unwrap();
    p.unlink(b"/g").unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 0);
    let mut b = [0u8; 8];
    assert_eq!(p.read(fd, &mut b), Ok(4));
    assert_eq!(&b[..4], b"kept");
    p.close(fd).unwrap();
}

#[test]
fn close_range_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    for i in 0..6 {
        assert_eq!(p.open(b"/f", O_RDONLY, 0), Ok(i));
    }
    assert_eq!(p.close_range(5, 2, 0), Err(Errno::EINVAL));
    assert_eq!(p.close_range(0, 10, 1), Err(Errno::EINVAL));
    assert_eq!(p.close_range(0, 10, 0x100), Err(Errno::EINVAL));
    p.close_range(100, 200, 0).unwrap();
    p.close_range(2, 3, 0).unwrap();
    assert_eq!(p.fstat(2), Err(Errno::EBADF));
    assert_eq!(p.fstat(3), Err(Errno::EBADF));
    assert!(p.fstat(1).is_ok());
    assert!(p.fstat(4).is_ok());
    // CLOSE_RANGE_CLOEXEC marks instead of closing.
    p.close_range(4, u32::MAX, CLOSE_RANGE_CLOEXEC).unwrap();
    assert!(p.fd_cloexec(4).unwrap());
    assert!(p.fd_cloexec(5).unwrap());
    assert!(!p.fd_cloexec(1).unwrap());
    // Single-descriptor range, then everything.
    p.close_range(1, 1, 0).unwrap();
    assert_eq!(p.fstat(1), Err(Errno::EBADF));
    p.close_range(0, u32::MAX, 0).unwrap();
    for fd in 0..6 {
        assert_eq!(p.fstat(fd), Err(Errno::EBADF));
    }
    assert_eq!(p.open(b"/f", O_RDONLY, 0), Ok(0));
}

// ------------------------------------------------------------------- dup

#[test]
fn dup_shares_the_open_file() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abcdef");
    let fd = p.open(b"/f", O_RDWR | O_CLOEXEC, 0).unwrap();
    assert_eq!(p.dup(-1), Err(Errno::EBADF));
    assert_eq!(p.dup(77), Err(Errno::EBADF));
    let d = p.dup(fd).unwrap();
    assert_eq!(d, fd + 1, "lowest free descriptor");
    assert!(!p.fd_cloexec(d).unwrap(), "dup clears close-on-exec");
    let mut b = [0u8; 2];
    p.read(fd, &mut b).unwrap();
    assert_eq!(p.lseek(d, 0, SEEK_CUR), Ok(2), "shared offset");
    p.read(d, &mut b).unwrap();
    assert_eq!(&b, b"cd");
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(4));
    p.close(fd).unwrap();
    p.read(d, &mut b).unwrap();
    assert_eq!(&b, b"ef", "the duplicate outlives the original");
    p.close(d).unwrap();
}

#[test]
fn dup2_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/a", b"A");
    mkfile(&p, b"/b", b"B");
    let a = p.open(b"/a", O_RDONLY, 0).unwrap();
    let b = p.open(b"/b", O_RDONLY | O_CLOEXEC, 0).unwrap();
    // Same descriptor: returns it, checks validity only.
    assert_eq!(p.dup2(a, a), Ok(a));
    assert_eq!(p.dup2(500, 500), Err(Errno::EBADF));
    assert_eq!(p.dup2(500, a), Err(Errno::EBADF));
    assert!(p.fstat(a).is_ok(), "a failed dup2 leaves newfd open");
    assert_eq!(p.dup2(a, -1), Err(Errno::EBADF));
    assert_eq!(p.dup2(a, 1 << 20), Err(Errno::EBADF));
    // Onto an open descriptor: it is closed silently; cloexec is cleared.
    assert_eq!(p.dup2(a, b), Ok(b));
    assert!(!p.fd_cloexec(b).unwrap());
    let mut buf = [0u8; 1];
    p.read(b, &mut buf).unwrap();
    assert_eq!(&buf, b"A");
    // Onto a free high descriptor.
    assert_eq!(p.dup2(a, 50), Ok(50));
    assert_eq!(p.fstat(50).unwrap().ino, p.fstat(a).unwrap().ino);
    // The lowest free descriptor is still found below it.
    let c = p.open(b"/b", O_RDONLY, 0).unwrap();
    assert_eq!(c, 2);
}

#[test]
fn dup3_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/a", b"A");
    let a = p.open(b"/a", O_RDONLY, 0).unwrap();
    assert_eq!(p.dup3(a, a, 0), Err(Errno::EINVAL));
    assert_eq!(p.dup3(a, a, O_CLOEXEC), Err(Errno::EINVAL));
    assert_eq!(p.dup3(a, 9, O_APPEND), Err(Errno::EINVAL));
    assert_eq!(p.dup3(a, 9, 1), Err(Errno::EINVAL));
    assert_eq!(p.dup3(500, 9, 0), Err(Errno::EBADF));
    assert_eq!(p.dup3(a, -1, 0), Err(Errno::EBADF));
    assert_eq!(p.dup3(a, 1 << 20, 0), Err(Errno::EBADF));
    assert_eq!(p.dup3(a, 9, O_CLOEXEC), Ok(9));
    assert!(p.fd_cloexec(9).unwrap());
    assert_eq!(p.dup3(a, 10, 0), Ok(10));
    assert!(!p.fd_cloexec(10).unwrap());
}

#[test]
fn dup3_same_closed_fd_is_einval() {
    let (_vfs, p) = setup();
    assert_eq!(p.dup3(500, 500, 0), Err(Errno::EINVAL));
}
