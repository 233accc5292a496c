//! mkdirat, mknodat, symlinkat, readlinkat, linkat, unlinkat, renameat2,
//! and path resolution (symlinks, dots, limits).

mod common;
use common::*;

// ----------------------------------------------------------------- mkdir

#[test]
fn mkdir_success() {
    let (vfs, p) = setup();
    let parent = p.stat(b"/").unwrap();
    tick();
    p.mkdir(b"/d", 0o777).unwrap();
    let st = p.stat(b"/d").unwrap();
    assert_eq!(st.mode, S_IFDIR | 0o755, "umask 022");
    // tmpfs: an empty directory is 40 bytes (BOGO_DIRENT_SIZE for "." and "..").
    assert_eq!((st.nlink, st.uid, st.gid, st.size), (2, 0, 0, 40));
    let after = p.stat(b"/").unwrap();
    assert_eq!(
        after.nlink,
        parent.nlink + 1,
        "the new '..' links the parent"
    );
    assert!(after.mtime > parent.mtime);
    assert!(after.ctime > parent.ctime);
    assert_eq!(p.stat(b"/d/..").unwrap().ino, parent.ino);
    assert_eq!(p.stat(b"/d/.").unwrap().ino, st.ino);

    // Set-id bits are dropped, the sticky bit is kept.
    p.umask(0);
    p.mkdir(b"/m", 0o7777).unwrap();
    assert_eq!(p.stat(b"/m").unwrap().mode, S_IFDIR | 0o1777);
    // Trailing slashes are allowed.
    p.mkdir(b"/t/", 0o700).unwrap();
    p.mkdir(b"/t2//", 0o700).unwrap();
    assert_eq!(p.stat(b"/t").unwrap().mode, S_IFDIR | 0o700);
    // Relative to a directory fd.
    let dfd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.mkdirat(dfd, b"sub", 0o750).unwrap();
    assert_eq!(p.stat(b"/d/sub").unwrap().mode, S_IFDIR | 0o750);
    assert_eq!(p.stat(b"/d").unwrap().nlink, 3);
    p.close(dfd).unwrap();
    for d in [&b"/d/sub"[..], b"/d", b"/m", b"/t", b"/t2"] {
        p.rmdir(d).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn mkdir_errors() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    p.symlink(b"/nowhere", b"/dangling").unwrap();
    for path in [
        &b"/d"[..],
        b"/f",
        b"/dangling",
        b"/",
        b".",
        b"..",
        b"/d/.",
        b"/d/..",
        b"/f/",
    ] {
        assert_eq!(
            p.mkdir(path, 0o755),
            Err(Errno::EEXIST),
            "{}",
            String::from_utf8_lossy(path)
        );
    }
    assert_eq!(
        p.stat(b"/nowhere"),
        Err(Errno::ENOENT),
        "mkdir never follows"
    );
    assert_eq!(p.mkdir(b"/nx/a", 0o755), Err(Errno::ENOENT));
    assert_eq!(p.mkdir(b"", 0o755), Err(Errno::ENOENT));
    assert_eq!(p.mkdir(b"/f/a", 0o755), Err(Errno::ENOTDIR));
    assert_eq!(p.mkdir(&[b'a'; 256], 0o755), Err(Errno::ENAMETOOLONG));
    p.mkdir(&[b'a'; 255], 0o755).unwrap();
    assert_eq!(p.mkdirat(4321, b"x", 0o755), Err(Errno::EBADF));
    let ffd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.mkdirat(ffd, b"x", 0o755), Err(Errno::ENOTDIR));
    p.close(ffd).unwrap();
}

#[test]
fn mkdir_in_removed_directory_is_enoent() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.chdir(b"/d").unwrap();
    p.rmdir(b"/d").unwrap();
    assert_eq!(p.mkdir(b"x", 0o755), Err(Errno::ENOENT));
    assert_eq!(p.open(b"x", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOENT));
    assert_eq!(p.symlink(b"t", b"x"), Err(Errno::ENOENT));
    assert_eq!(p.stat(b".").unwrap().nlink, 0);
}

// ----------------------------------------------------------------- mknod

#[test]
fn mknod_types() {
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o666, 0).unwrap();
    assert_eq!(p.stat(b"/fifo").unwrap().mode, S_IFIFO | 0o644);
    p.mknodat(AT_FDCWD, b"/sock", S_IFSOCK | 0o644, 0).unwrap();
    assert_eq!(p.stat(b"/sock").unwrap().mode, S_IFSOCK | 0o644);
    // Type 0 is a regular file.
    p.mknodat(AT_FDCWD, b"/reg", 0o644, 0).unwrap();
    let st = p.stat(b"/reg").unwrap();
    assert_eq!((st.mode, st.size, st.nlink), (S_IFREG | 0o644, 0, 1));
    p.mknodat(AT_FDCWD, b"/reg2", S_IFREG | 0o600, 0).unwrap();
    assert_eq!(p.stat(b"/reg2").unwrap().mode, S_IFREG | 0o600);
    // Devices (root only) keep their number.
    let dev = (1 << 8) | 3; // makedev(1, 3)
    p.mknodat(AT_FDCWD, b"/null", S_IFCHR | 0o666, dev).unwrap();
    let st = p.stat(b"/null").unwrap();
    assert_eq!((st.mode, st.rdev), (S_IFCHR | 0o644, dev));
    p.mknodat(AT_FDCWD, b"/blk", S_IFBLK | 0o600, dev).unwrap();
    assert_eq!(ftype(&p.stat(b"/blk").unwrap()), S_IFBLK);
    // d_type in listings.
    let ents = p.read_dir(b"/").unwrap();
    let t = |n: &[u8]| ents.iter().find(|d| d.name == n).unwrap().dtype;
    assert_eq!(
        (t(b"fifo"), t(b"sock"), t(b"reg"), t(b"null"), t(b"blk")),
        (DT_FIFO, DT_SOCK, DT_REG, DT_CHR, DT_BLK)
    );
}

#[test]
fn mknod_errors() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"/nowhere", b"/dangling").unwrap();
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/x", S_IFDIR | 0o755, 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/x", S_IFMT | 0o644, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/x", 0o030000 | 0o644, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/f", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/dangling", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b".", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/new/", S_IFIFO | 0o644, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/nx/x", S_IFIFO | 0o644, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/f/x", S_IFIFO | 0o644, 0),
        Err(Errno::ENOTDIR)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, &[b'n'; 256], S_IFIFO | 0o644, 0),
        Err(Errno::ENAMETOOLONG)
    );
}

#[test]
fn create_existing_name_with_trailing_slash_is_eexist() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.mkdir(b"/d", 0o755).unwrap();
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/f/", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/d/", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(p.symlink(b"x", b"/f/"), Err(Errno::EEXIST));
    assert_eq!(p.symlink(b"x", b"/d/"), Err(Errno::EEXIST));
    mkfile(&p, b"/g", b"");
    assert_eq!(p.link(b"/g", b"/f/"), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/g", b"/d/"), Err(Errno::EEXIST));
}

// --------------------------------------------------------------- symlink

#[test]
fn symlink_success() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = p.stat(b"/d").unwrap();
    tick();
    p.umask(0o777);
    p.symlink(b"../some/target", b"/d/l").unwrap();
    let st = p.lstat(b"/d/l").unwrap();
    assert_eq!(st.mode, S_IFLNK | 0o777, "the umask does not apply");
    assert_eq!((st.nlink, st.size, st.uid), (1, 14, 0));
    let after = p.stat(b"/d").unwrap();
    assert!(after.mtime > before.mtime);
    assert_eq!(after.nlink, before.nlink);
    assert_eq!(p.readlink(b"/d/l").unwrap(), b"../some/target");
    // Relative to a dirfd.
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    p.symlinkat(b"x", dfd, b"l2").unwrap();
    assert_eq!(p.readlink(b"/d/l2").unwrap(), b"x");
    p.close(dfd).unwrap();
    // Longest target: 4095 bytes.
    let long = vec![b'a'; 4095];
    p.symlink(&long, b"/long").unwrap();
    assert_eq!(p.lstat(b"/long").unwrap().size, 4095);
    assert_eq!(p.readlink(b"/long").unwrap(), long);
    // A target with an over-long component is stored; resolving it fails.
    p.symlink(&[b'b'; 300], b"/bad").unwrap();
    assert_eq!(p.stat(b"/bad"), Err(Errno::ENAMETOOLONG));
}

#[test]
fn symlink_errors() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    assert_eq!(p.symlink(b"x", b"/f"), Err(Errno::EEXIST));
    assert_eq!(p.symlink(b"x", b"/"), Err(Errno::EEXIST));
    assert_eq!(p.symlink(b"x", b"."), Err(Errno::EEXIST));
    assert_eq!(p.symlink(b"", b"/e"), Err(Errno::ENOENT));
    assert_eq!(
        p.symlink(&vec![b'a'; 4096], b"/e"),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(p.symlink(b"x", b"/new/"), Err(Errno::ENOENT));
    assert_eq!(p.symlink(b"x", b"/nx/l"), Err(Errno::ENOENT));
    assert_eq!(p.symlink(b"x", b"/f/l"), Err(Errno::ENOTDIR));
    assert_eq!(p.symlink(b"x", &[b'l'; 256]), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.symlink(b"a\0b", b"/e"), Err(Errno::EINVAL));
    assert_eq!(p.symlinkat(b"x", 999, b"l"), Err(Errno::EBADF));
    assert_eq!(p.lstat(b"/e"), Err(Errno::ENOENT));
}

// -------------------------------------------------------------- readlink

#[test]
fn readlink_semantics() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"f", b"/lf").unwrap();
    p.symlink(b"d", b"/ld").unwrap();
    p.symlink(b"abcdef", b"/six").unwrap();
    let mut buf = [0xffu8; 8];
    assert_eq!(p.readlinkat(AT_FDCWD, b"/six", &mut buf), Ok(6));
    assert_eq!(&buf[..7], b"abcdef\xff", "no NUL is written");
    let mut small = [0u8; 3];
    assert_eq!(p.readlinkat(AT_FDCWD, b"/six", &mut small), Ok(3));
    assert_eq!(&small, b"abc");
    assert_eq!(p.readlinkat(AT_FDCWD, b"/six", &mut []), Err(Errno::EINVAL));
    assert_eq!(p.readlinkat(AT_FDCWD, b"/nx", &mut []), Err(Errno::EINVAL));
    assert_eq!(p.readlink(b"/f"), Err(Errno::EINVAL));
    assert_eq!(p.readlink(b"/d"), Err(Errno::EINVAL));
    assert_eq!(p.readlink(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.readlink(b""), Err(Errno::ENOENT));
    // A trailing slash follows the link.
    assert_eq!(p.readlink(b"/ld/"), Err(Errno::EINVAL));
    assert_eq!(p.readlink(b"/lf/"), Err(Errno::ENOTDIR));
    // A symlink in the middle is followed.
    p.symlink(b"inner", b"/d/l").unwrap();
    assert_eq!(p.readlink(b"/ld/l").unwrap(), b"inner");
    // Relative to a dirfd; an empty path reads an O_PATH symlink fd.
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    let mut b = [0u8; 16];
    assert_eq!(p.readlinkat(dfd, b"l", &mut b), Ok(5));
    assert_eq!(p.readlinkat(dfd, b"", &mut b), Err(Errno::ENOENT));
    assert_eq!(p.readlinkat(AT_FDCWD, b"", &mut b), Err(Errno::ENOENT));
    assert_eq!(p.readlinkat(999, b"l", &mut b), Err(Errno::EBADF));
    let ffd = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.readlinkat(ffd, b"", &mut b), Err(Errno::ENOENT));
    p.close(ffd).unwrap();
    p.close(dfd).unwrap();
}

#[test]
fn readlink_updates_atime() {
    let (_vfs, p) = setup();
    p.symlink(b"target", b"/l").unwrap();
    let before = p.lstat(b"/l").unwrap();
    tick();
    p.readlink(b"/l").unwrap();
    assert!(p.lstat(b"/l").unwrap().atime > before.atime);
}

// ------------------------------------------------------------------ link

#[test]
fn link_success() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"data");
    let before = p.stat(b"/f").unwrap();
    let dir_before = p.stat(b"/d").unwrap();
    tick();
    p.link(b"/f", b"/d/hard").unwrap();
    let st = p.stat(b"/d/hard").unwrap();
    assert_eq!(st.ino, before.ino);
    assert_eq!(st.nlink, 2);
    assert!(st.ctime > before.ctime, "link changes the inode's ctime");
    assert_eq!(st.mtime, before.mtime);
    let dir_after = p.stat(b"/d").unwrap();
    assert!(dir_after.mtime > dir_before.mtime);
    assert_eq!(dir_after.nlink, 2);
    assert_eq!(read_file(&p, b"/d/hard"), b"data");
    // Writes through one name show through the other.
    let fd = p.open(b"/d/hard", O_WRONLY | O_APPEND, 0).unwrap();
    p.write(fd, b"+").unwrap();
    p.close(fd).unwrap();
    assert_eq!(read_file(&p, b"/f"), b"data+");
    // Unlinking one name leaves the other.
    tick();
    let c = p.stat(b"/f").unwrap().ctime;
    p.unlink(b"/f").unwrap();
    let st = p.stat(b"/d/hard").unwrap();
    assert_eq!(st.nlink, 1);
    assert!(st.ctime > c, "unlink changes the remaining inode's ctime");
    // linkat relative to dirfds.
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    p.linkat(dfd, b"hard", AT_FDCWD, b"/again", 0).unwrap();
    assert_eq!(p.stat(b"/again").unwrap().nlink, 2);
    p.close(dfd).unwrap();
    p.unlink(b"/again").unwrap();
    p.unlink(b"/d/hard").unwrap();
    p.rmdir(b"/d").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn link_symlinks_and_empty_path() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.symlink(b"f", b"/lf").unwrap();
    p.symlink(b"nowhere", b"/dangling").unwrap();
    // Without AT_SYMLINK_FOLLOW the link itself is linked.
    p.link(b"/lf", b"/l2").unwrap();
    assert_eq!(ftype(&p.lstat(b"/l2").unwrap()), S_IFLNK);
    assert_eq!(p.lstat(b"/lf").unwrap().nlink, 2);
    assert_eq!(p.stat(b"/f").unwrap().nlink, 1);
    p.link(b"/dangling", b"/d2").unwrap();
    // With it, the target.
    p.linkat(AT_FDCWD, b"/lf", AT_FDCWD, b"/l3", AT_SYMLINK_FOLLOW)
        .unwrap();
    assert_eq!(ftype(&p.lstat(b"/l3").unwrap()), S_IFREG);
    assert_eq!(p.stat(b"/f").unwrap().nlink, 2);
    assert_eq!(
        p.linkat(AT_FDCWD, b"/dangling", AT_FDCWD, b"/l4", AT_SYMLINK_FOLLOW),
        Err(Errno::ENOENT)
    );
    // AT_EMPTY_PATH links the file of a descriptor (root may).
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.linkat(fd, b"", AT_FDCWD, b"/l5", AT_EMPTY_PATH).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().nlink, 3);
    assert_eq!(p.linkat(fd, b"", AT_FDCWD, b"/l6", 0), Err(Errno::ENOENT));
    p.close(fd).unwrap();
    // ...but not one whose last name is gone.
    mkfile(&p, b"/tmp", b"");
    let fd = p.open(b"/tmp", O_RDONLY, 0).unwrap();
    p.unlink(b"/tmp").unwrap();
    assert_eq!(
        p.linkat(fd, b"", AT_FDCWD, b"/l7", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    p.close(fd).unwrap();
}

#[test]
fn link_errors() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/g", b"");
    assert_eq!(p.link(b"/d", b"/d2"), Err(Errno::EPERM));
    assert_eq!(p.link(b"/d/.", b"/d2"), Err(Errno::EPERM));
    assert_eq!(p.link(b"/f", b"/d/g"), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/f", b"/d"), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/f", b"."), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/f", b".."), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/f", b"/"), Err(Errno::EEXIST));
    assert_eq!(p.link(b"/nx", b"/x"), Err(Errno::ENOENT));
    assert_eq!(p.link(b"/f", b"/nx/x"), Err(Errno::ENOENT));
    assert_eq!(p.link(b"/f", b"/new/"), Err(Errno::ENOENT));
    assert_eq!(p.link(b"/f/", b"/x"), Err(Errno::ENOTDIR));
    assert_eq!(p.link(b"/f", b"/f/x"), Err(Errno::ENOTDIR));
    assert_eq!(p.link(b"", b"/x"), Err(Errno::ENOENT));
    assert_eq!(p.link(b"/f", &[b'x'; 256]), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        p.linkat(AT_FDCWD, b"/f", AT_FDCWD, b"/x", AT_SYMLINK_NOFOLLOW),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.linkat(AT_FDCWD, b"/f", AT_FDCWD, b"/x", 1),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.linkat(999, b"f", AT_FDCWD, b"/x", 0), Err(Errno::EBADF));
    assert_eq!(p.linkat(AT_FDCWD, b"/f", 999, b"x", 0), Err(Errno::EBADF));
    assert_eq!(p.stat(b"/f").unwrap().nlink, 1);
}

#[test]
fn link_empty_path_needs_privilege() {
    let (vfs, p) = setup();
    p.mkdir(b"/pub", 0o777).unwrap();
    p.chmod(b"/pub", 0o777).unwrap();
    let u = user(&vfs, 1000, 1000);
    mkfile(&u, b"/pub/mine", b"");
    let fd = u.open(b"/pub/mine", O_RDONLY, 0).unwrap();
    // Linux 6.10+: an fd opened under the caller's own credentials may be
    // linked (checked on 6.18); a forked child has new credentials, so the
    // inherited fd may not (ENOENT, as without CAP_DAC_READ_SEARCH).
    let child = u.fork().unwrap();
    assert_eq!(
        child.linkat(fd, b"", AT_FDCWD, b"/pub/l", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        u.linkat(fd, b"", AT_FDCWD, b"/pub/l", AT_EMPTY_PATH),
        Ok(())
    );
    assert_eq!(u.stat(b"/pub/l").unwrap().nlink, 2);
    // Root may link any fd.
    let rfd = p.open(b"/pub/mine", O_RDONLY, 0).unwrap();
    assert_eq!(
        p.linkat(rfd, b"", AT_FDCWD, b"/pub/l2", AT_EMPTY_PATH),
        Ok(())
    );
}

#[test]
fn link_max_is_65000() {
    // Documented: LINK_MAX is 65000 (Linux tmpfs has no such limit).
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"");
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    for i in 1..LINK_MAX {
        p.linkat(dfd, b"f", dfd, format!("{i}").as_bytes(), 0)
            .unwrap();
    }
    assert_eq!(p.stat(b"/d/f").unwrap().nlink, LINK_MAX);
    assert_eq!(p.linkat(dfd, b"f", dfd, b"one-more", 0), Err(Errno::EMLINK));
    p.close(dfd).unwrap();
}

// ---------------------------------------------------------------- unlink

#[test]
fn unlink_success() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"x");
    let before = p.stat(b"/d").unwrap();
    tick();
    p.unlink(b"/d/f").unwrap();
    let after = p.stat(b"/d").unwrap();
    assert!(after.mtime > before.mtime);
    assert!(after.ctime > before.ctime);
    assert_eq!(p.stat(b"/d/f"), Err(Errno::ENOENT));
    assert_eq!(names(&p, b"/d"), Vec::<Vec<u8>>::new());
    // unlinkat relative to a dirfd; a symlink is removed, not its target.
    mkfile(&p, b"/d/t", b"");
    p.symlink(b"t", b"/d/l").unwrap();
    let dfd = p.open(b"/d", O_RDONLY, 0).unwrap();
    p.unlinkat(dfd, b"l", 0).unwrap();
    assert!(p.stat(b"/d/t").is_ok());
    p.unlinkat(dfd, b"t", 0).unwrap();
    p.close(dfd).unwrap();
    p.rmdir(b"/d").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn unlink_errors() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    p.symlink(b"f", b"/lf").unwrap();
    p.symlink(b"d", b"/ld").unwrap();
    // unlink of a directory is EISDIR on Linux (not POSIX's EPERM).
    for path in [&b"/d"[..], b"/d/", b".", b"..", b"/", b"/d/.", b"/d/.."] {
        assert_eq!(
            p.unlink(path),
            Err(Errno::EISDIR),
            "{}",
            String::from_utf8_lossy(path)
        );
    }
    assert_eq!(p.unlink(b"/f/"), Err(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/lf/"), Err(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/ld/"), Err(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/f/x"), Err(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.unlink(b"/nx/"), Err(Errno::ENOENT));
    assert_eq!(p.unlink(b"/nx/a"), Err(Errno::ENOENT));
    assert_eq!(p.unlink(b""), Err(Errno::ENOENT));
    assert_eq!(p.unlink(&[b'a'; 256]), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.unlink(&vec![b'/'; 4096]), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        p.unlinkat(AT_FDCWD, b"/f", AT_SYMLINK_NOFOLLOW),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.unlinkat(AT_FDCWD, b"/f", 1), Err(Errno::EINVAL));
    assert_eq!(p.unlinkat(999, b"f", 0), Err(Errno::EBADF));
    // Nothing was removed.
    assert!(p.stat(b"/f").is_ok() && p.lstat(b"/lf").is_ok() && p.stat(b"/d").is_ok());
}

#[test]
fn rmdir_success_and_errors() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/sub", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    p.symlink(b"d", b"/ld").unwrap();
    assert_eq!(p.rmdir(b"/d"), Err(Errno::ENOTEMPTY));
    assert_eq!(p.rmdir(b"."), Err(Errno::EINVAL));
    assert_eq!(p.rmdir(b"/d/."), Err(Errno::EINVAL));
    assert_eq!(p.rmdir(b".."), Err(Errno::ENOTEMPTY));
    assert_eq!(p.rmdir(b"/d/sub/.."), Err(Errno::ENOTEMPTY));
    assert_eq!(p.rmdir(b"/"), Err(Errno::EBUSY));
    assert_eq!(p.rmdir(b"/f"), Err(Errno::ENOTDIR));
    assert_eq!(p.rmdir(b"/f/"), Err(Errno::ENOTDIR));
    assert_eq!(p.rmdir(b"/ld"), Err(Errno::ENOTDIR));
    assert_eq!(p.rmdir(b"/ld/"), Err(Errno::ENOTDIR));
    assert_eq!(p.rmdir(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.rmdir(b""), Err(Errno::ENOENT));

    let fd = p.open(b"/d/sub", O_RDONLY, 0).unwrap();
    let before = p.stat(b"/d").unwrap();
    tick();
    p.rmdir(b"/d/sub/").unwrap();
    let after = p.stat(b"/d").unwrap();
    assert_eq!(after.nlink, before.nlink - 1);
    assert!(after.mtime > before.mtime);
    assert_eq!(
        p.fstat(fd).unwrap().nlink,
        0,
        "a removed directory has no links"
    );
    assert_eq!(
        p.openat(fd, b"x", O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENOENT)
    );
    p.close(fd).unwrap();
    let dfd = p.open(b"/", O_RDONLY, 0).unwrap();
    p.unlinkat(dfd, b"d", AT_REMOVEDIR).unwrap();
    p.close(dfd).unwrap();
    assert_eq!(p.stat(b"/d"), Err(Errno::ENOENT));
}

// ---------------------------------------------------------------- rename

#[test]
fn rename_file_times_and_links() {
    let (vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    mkfile(&p, b"/a/f", b"data");
    let f = p.stat(b"/a/f").unwrap();
    let (a, b) = (p.stat(b"/a").unwrap(), p.stat(b"/b").unwrap());
    tick();
    p.rename(b"/a/f", b"/b/g").unwrap();
    assert_eq!(p.stat(b"/a/f"), Err(Errno::ENOENT));
    let g = p.stat(b"/b/g").unwrap();
    assert_eq!((g.ino, g.nlink, g.size), (f.ino, 1, 4));
    assert!(g.ctime > f.ctime, "rename changes the moved inode's ctime");
    assert_eq!(g.mtime, f.mtime);
    let (a2, b2) = (p.stat(b"/a").unwrap(), p.stat(b"/b").unwrap());
    assert!(a2.mtime > a.mtime && a2.ctime > a.ctime);
    assert!(b2.mtime > b.mtime && b2.ctime > b.ctime);
    assert_eq!((a2.nlink, b2.nlink), (2, 2));
    // Within one directory.
    p.rename(b"/b/g", b"/b/h").unwrap();
    assert_eq!(names(&p, b"/b"), sorted(&[b"h"]));
    p.unlink(b"/b/h").unwrap();
    p.rmdir(b"/a").unwrap();
    p.rmdir(b"/b").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn rename_directory_moves_parent_links() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mkdir(b"/a/d", 0o755).unwrap();
    mkfile(&p, b"/a/d/f", b"");
    assert_eq!(
        (p.stat(b"/a").unwrap().nlink, p.stat(b"/b").unwrap().nlink),
        (3, 2)
    );
    p.rename(b"/a/d", b"/b/d").unwrap();
    assert_eq!(
        (p.stat(b"/a").unwrap().nlink, p.stat(b"/b").unwrap().nlink),
        (2, 3)
    );
    assert_eq!(p.stat(b"/b/d/..").unwrap().ino, p.stat(b"/b").unwrap().ino);
    assert!(p.stat(b"/b/d/f").is_ok());
    // Trailing slashes on directories are fine.
    p.rename(b"/b/d/", b"/a/e/").unwrap();
    assert_eq!(p.stat(b"/a/e/..").unwrap().ino, p.stat(b"/a").unwrap().ino);
    assert_eq!(p.stat(b"/a").unwrap().nlink, 3);
}

#[test]
fn rename_over_existing() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"new");
    mkfile(&p, b"/g", b"old");
    let g = p.stat(b"/g").unwrap();
    let fd = p.open(b"/g", O_RDONLY, 0).unwrap();
    tick();
    p.rename(b"/f", b"/g").unwrap();
    assert_eq!(read_file(&p, b"/g"), b"new");
    assert_eq!(p.stat(b"/f"), Err(Errno::ENOENT));
    let victim = p.fstat(fd).unwrap();
    assert_eq!(victim.ino, g.ino);
    assert_eq!(victim.nlink, 0, "the replaced file lost its name");
    assert!(victim.ctime > g.ctime);
    let mut b = [0u8; 3];
    assert_eq!(p.read(fd, &mut b), Ok(3));
    assert_eq!(&b, b"old");
    p.close(fd).unwrap();
    // Directory over an empty directory.
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/inside", b"");
    p.mkdir(b"/empty", 0o755).unwrap();
    let root_links = p.stat(b"/").unwrap().nlink;
    p.rename(b"/d", b"/empty").unwrap();
    assert!(p.stat(b"/empty/inside").is_ok());
    assert_eq!(p.stat(b"/").unwrap().nlink, root_links - 1);
    // Directory over a non-empty one, or types that differ.
    p.mkdir(b"/d2", 0o755).unwrap();
    assert_eq!(p.rename(b"/d2", b"/empty"), Err(Errno::ENOTEMPTY));
    assert_eq!(p.rename(b"/d2", b"/g"), Err(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/g", b"/d2"), Err(Errno::EISDIR));
    assert_eq!(p.rename(b"/g", b"/empty"), Err(Errno::EISDIR));
    p.unlink(b"/empty/inside").unwrap();
    p.rmdir(b"/empty").unwrap();
    p.rmdir(b"/d2").unwrap();
    p.unlink(b"/g").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn rename_onto_itself_or_a_hard_link_is_a_noop() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    p.link(b"/f", b"/f2").unwrap();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = p.stat(b"/f").unwrap();
    tick();
    p.rename(b"/f", b"/f").unwrap();
    p.rename(b"/d", b"/d").unwrap();
    p.rename(b"/d", b"/d/").unwrap();
    p.rename(b"/f", b"/f2").unwrap();
    assert_eq!(names(&p, b"/"), sorted(&[b"d", b"f", b"f2"]));
    let after = p.stat(b"/f").unwrap();
    assert_eq!(after.nlink, 2);
    assert_eq!(after.ctime, before.ctime, "nothing happened");
    p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/f", RENAME_EXCHANGE)
        .unwrap();
}

#[test]
fn rename_errors() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    mkfile(&p, b"/g", b"");
    p.symlink(b"f", b"/lf").unwrap();
    assert_eq!(p.rename(b"/nx", b"/y"), Err(Errno::ENOENT));
    assert_eq!(p.rename(b"/f", b"/nx/y"), Err(Errno::ENOENT));
    assert_eq!(p.rename(b"", b"/y"), Err(Errno::ENOENT));
    assert_eq!(p.rename(b"/f", b""), Err(Errno::ENOENT));
    assert_eq!(p.rename(b"/f", b"/f/y"), Err(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/f/", b"/y"), Err(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/f", b"/y/"), Err(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/f", b"/g/"), Err(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/lf/", b"/y"), Err(Errno::ENOTDIR));
    // A directory into itself or below.
    assert_eq!(p.rename(b"/a", b"/a/b"), Err(Errno::EINVAL));
    assert_eq!(p.rename(b"/a", b"/a/b/c"), Err(Errno::EINVAL));
    assert_eq!(p.rename(b"/a", b"/a/c"), Err(Errno::EINVAL));
    // Dots and the root.
    assert_eq!(p.rename(b".", b"/x"), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/a/.", b"/x"), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/a/b/..", b"/x"), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/f", b"."), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/f", b".."), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/", b"/x"), Err(Errno::EBUSY));
    assert_eq!(p.rename(b"/f", b"/"), Err(Errno::EBUSY));
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b".", RENAME_NOREPLACE),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b".", AT_FDCWD, b"/x", RENAME_NOREPLACE),
        Err(Errno::EBUSY)
    );
    assert_eq!(p.rename(&[b'a'; 256], b"/x"), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.rename(b"/f", &[b'a'; 256]), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        p.renameat2(999, b"f", AT_FDCWD, b"/x", 0),
        Err(Errno::EBADF)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", 999, b"x", 0),
        Err(Errno::EBADF)
    );
    assert_eq!(names(&p, b"/"), sorted(&[b"a", b"f", b"g", b"lf"]));
}

#[test]
fn rename_onto_an_ancestor_is_enotempty() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    let r = with_timeout(10, move || p.rename(b"/a/b", b"/a"));
    assert_eq!(r, Err(Errno::ENOTEMPTY));
}

#[test]
fn rename_flags() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"F");
    mkfile(&p, b"/g", b"G");
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    let r2 = |a: &[u8], b: &[u8], fl: u32| p.renameat2(AT_FDCWD, a, AT_FDCWD, b, fl);
    assert_eq!(
        r2(b"/f", b"/g", RENAME_NOREPLACE | RENAME_EXCHANGE),
        Err(Errno::EINVAL)
    );
    assert_eq!(r2(b"/f", b"/g", 8), Err(Errno::EINVAL));
    assert_eq!(
        r2(b"/f", b"/g", RENAME_WHITEOUT | RENAME_EXCHANGE),
        Err(Errno::EINVAL)
    );
    // NOREPLACE
    assert_eq!(r2(b"/f", b"/g", RENAME_NOREPLACE), Err(Errno::EEXIST));
    assert_eq!(r2(b"/nx", b"/g", RENAME_NOREPLACE), Err(Errno::ENOENT));
    r2(b"/f", b"/new", RENAME_NOREPLACE).unwrap();
    r2(b"/new", b"/f", RENAME_NOREPLACE).unwrap();
    // EXCHANGE
    assert_eq!(r2(b"/f", b"/nx", RENAME_EXCHANGE), Err(Errno::ENOENT));
    assert_eq!(r2(b"/nx", b"/f", RENAME_EXCHANGE), Err(Errno::ENOENT));
    let (fi, gi) = (p.stat(b"/f").unwrap().ino, p.stat(b"/g").unwrap().ino);
    r2(b"/f", b"/g", RENAME_EXCHANGE).unwrap();
    assert_eq!(
        (p.stat(b"/f").unwrap().ino, p.stat(b"/g").unwrap().ino),
        (gi, fi)
    );
    assert_eq!(read_file(&p, b"/f"), b"G");
    // A file and a directory swap places (and the parents' link counts).
    mkfile(&p, b"/d/inside", b"");
    p.mkdir(b"/a/c", 0o755).unwrap();
    let (root_n, a_n) = (p.stat(b"/").unwrap().nlink, p.stat(b"/a").unwrap().nlink);
    r2(b"/g", b"/a/b", RENAME_EXCHANGE).unwrap();
    assert_eq!(ftype(&p.stat(b"/g").unwrap()), S_IFDIR);
    assert_eq!(ftype(&p.stat(b"/a/b").unwrap()), S_IFREG);
    assert_eq!(p.stat(b"/").unwrap().nlink, root_n + 1);
    assert_eq!(p.stat(b"/a").unwrap().nlink, a_n - 1);
    assert_eq!(p.stat(b"/g/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    // Two non-empty directories swap.
    r2(b"/d", b"/a", RENAME_EXCHANGE).unwrap();
    assert!(p.stat(b"/a/inside").is_ok());
    assert!(p.stat(b"/d/c").is_ok());
    // A directory with its own descendant or ancestor.
    assert_eq!(r2(b"/d", b"/d/c", RENAME_EXCHANGE), Err(Errno::EINVAL));
    assert_eq!(r2(b"/d/c", b"/d", RENAME_EXCHANGE), Err(Errno::EINVAL));
    // Trailing slash on a file side (both files).
    assert_eq!(ftype(&p.stat(b"/d/b").unwrap()), S_IFREG);
    assert_eq!(r2(b"/f", b"/d/b/", RENAME_EXCHANGE), Err(Errno::ENOTDIR));
}

#[test]
fn rename_exchange_trailing_slash_on_a_file() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.mkdir(b"/d", 0o755).unwrap();
    let r2 = |a: &[u8], b: &[u8]| p.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
    assert_eq!(r2(b"/f/", b"/d"), Err(Errno::ENOTDIR));
    assert_eq!(r2(b"/d", b"/f/"), Err(Errno::ENOTDIR));
    assert_eq!(ftype(&p.stat(b"/f").unwrap()), S_IFREG);
}

#[test]
fn rename_whiteout() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/g", RENAME_WHITEOUT)
        .unwrap();
    let st = p.lstat(b"/f").unwrap();
    assert_eq!((st.mode, st.rdev), (S_IFCHR, 0));
    assert_eq!(ftype(&p.stat(b"/g").unwrap()), S_IFREG);
}

#[test]
fn renameat_relative_to_dirfds() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    mkfile(&p, b"/a/f", b"");
    let a = p.open(b"/a", O_RDONLY, 0).unwrap();
    let b = p.open(b"/b", O_RDONLY, 0).unwrap();
    p.renameat2(a, b"f", b, b"g", 0).unwrap();
    assert!(p.stat(b"/b/g").is_ok());
    let ffd = p.open(b"/b/g", O_RDONLY, 0).unwrap();
    assert_eq!(p.renameat2(ffd, b"x", b, b"y", 0), Err(Errno::ENOTDIR));
    p.close(ffd).unwrap();
    p.close(a).unwrap();
    p.close(b).unwrap();
}

// ------------------------------------------------------ path resolution

#[test]
fn symlink_chains_and_loops() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let f = p.stat(b"/f").unwrap().ino;
    for i in 1..=41u32 {
        let target = if i == 1 {
            b"f".to_vec()
        } else {
            format!("l{}", i - 1).into_bytes()
        };
        p.symlink(&target, format!("/l{i}").as_bytes()).unwrap();
    }
    assert_eq!(p.stat(b"/l40").unwrap().ino, f, "40 links are followed");
    assert_eq!(p.stat(b"/l41"), Err(Errno::ELOOP));
    assert_eq!(p.lstat(b"/l41").unwrap().mode, S_IFLNK | 0o777);
    let fd = p.open(b"/l41", O_PATH | O_NOFOLLOW, 0).unwrap();
    p.close(fd).unwrap();
    // The count spans the whole walk, not one link.
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"../l40", b"/d/y").unwrap();
    p.symlink(b"../l39", b"/d/z").unwrap();
    assert_eq!(p.stat(b"/d/y"), Err(Errno::ELOOP));
    assert_eq!(p.stat(b"/d/z").unwrap().ino, f);
    // Loops.
    p.symlink(b"/x", b"/y").unwrap();
    p.symlink(b"/y", b"/x").unwrap();
    p.symlink(b"self", b"/self").unwrap();
    assert_eq!(p.stat(b"/x"), Err(Errno::ELOOP));
    assert_eq!(p.stat(b"/self"), Err(Errno::ELOOP));
    assert_eq!(p.stat(b"/self/x"), Err(Errno::ELOOP));
    assert_eq!(p.lstat(b"/self/x"), Err(Errno::ELOOP));
    assert_eq!(p.mkdir(b"/self/x", 0o755), Err(Errno::ELOOP));
}

#[test]
fn symlink_targets_relative_absolute_and_dotdot() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    mkfile(&p, b"/a/b/f", b"deep");
    mkfile(&p, b"/top", b"top");
    let deep = p.stat(b"/a/b/f").unwrap().ino;
    let top = p.stat(b"/top").unwrap().ino;
    // Relative targets resolve from the link's directory.
    p.symlink(b"b/f", b"/a/rel").unwrap();
    p.symlink(b"../top", b"/a/up").unwrap();
    p.symlink(b"/a/b/f", b"/abs").unwrap();
    p.symlink(b"a/b", b"/dirlink").unwrap();
    p.symlink(b"../../top", b"/a/b/upup").unwrap();
    p.symlink(b"../../../../../top", b"/a/b/above_root")
        .unwrap();
    assert_eq!(p.stat(b"/a/rel").unwrap().ino, deep);
    assert_eq!(p.stat(b"/a/up").unwrap().ino, top);
    assert_eq!(p.stat(b"/abs").unwrap().ino, deep);
    assert_eq!(p.stat(b"/dirlink/f").unwrap().ino, deep);
    assert_eq!(p.stat(b"/dirlink/upup").unwrap().ino, top);
    assert_eq!(p.stat(b"/a/b/above_root").unwrap().ino, top);
    // ".." after a symlinked directory goes to the target's parent.
    assert_eq!(
        p.stat(b"/dirlink/..").unwrap().ino,
        p.stat(b"/a").unwrap().ino
    );
    // Relative links from the cwd and through a dirfd.
    p.chdir(b"/a").unwrap();
    assert_eq!(p.stat(b"rel").unwrap().ino, deep);
    let dfd = p.open(b"/a/b", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstatat(dfd, b"upup", 0).unwrap().ino, top);
    assert_eq!(
        ftype(&p.fstatat(dfd, b"upup", AT_SYMLINK_NOFOLLOW).unwrap()),
        S_IFLNK
    );
    p.close(dfd).unwrap();
    // Trailing slash forces following; on a file target that is ENOTDIR.
    assert_eq!(ftype(&p.lstat(b"/dirlink/").unwrap()), S_IFDIR);
    assert_eq!(p.lstat(b"/abs/"), Err(Errno::ENOTDIR));
    // Dangling.
    p.symlink(b"nowhere", b"/dangling").unwrap();
    assert_eq!(p.stat(b"/dangling"), Err(Errno::ENOENT));
    assert_eq!(ftype(&p.lstat(b"/dangling").unwrap()), S_IFLNK);
}

/// Runs of slashes are one separator wherever they stand, on every name
/// length the fast walk scans differently (1-7 bytes, 8 bytes, longer) and
/// for cached misses; a trailing slash, or a name after the component,
/// demands a directory; a NUL after
/// any of them is EINVAL. Each path is stated twice, so the second answer
/// comes from the cached (fast) walk.
#[test]
fn repeated_slashes_resolve_like_one() {
    let (_vfs, p) = setup();
    for d in [&b"/d"[..], b"/eight_b8", b"/a_longer_directory"] {
        p.mkdir(d, 0o755).unwrap();
        let mut f = d.to_vec();
        f.extend_from_slice(b"/f");
        mkfile(&p, &f, b"");
    }
    let ino = |path: &[u8]| p.stat(path).map(|st| st.ino);
    let root = ino(b"/").unwrap();
    let d = ino(b"/d").unwrap();
    let d_f = ino(b"/d/f").unwrap();
    let e_f = ino(b"/eight_b8/f").unwrap();
    let l_f = ino(b"/a_longer_directory/f").unwrap();
    p.chdir(b"/d").unwrap();
    let cases: [(&[u8], SysResult<u64>); 21] = [
        (b"//", Ok(root)),
        (b"///", Ok(root)),
        (b"//d", Ok(d)),
        (b"///d//", Ok(d)),
        (b"/d//f", Ok(d_f)),
        (b"//d///f", Ok(d_f)),
        (b"/eight_b8//f", Ok(e_f)),
        (b"//a_longer_directory//f", Ok(l_f)),
        (b"f", Ok(d_f)),
        (b"./f", Ok(d_f)),
        (b"/d/f/", Err(Errno::ENOTDIR)),
        (b"/d/f//", Err(Errno::ENOTDIR)),
        (b"/eight_b8/f/", Err(Errno::ENOTDIR)),
        (b"/d/f/x", Err(Errno::ENOTDIR)),
        (b"f//x", Err(Errno::ENOTDIR)),
        (b"/d//nx", Err(Errno::ENOENT)),
        (b"/d/nx//", Err(Errno::ENOENT)),
        (b"//nx//f", Err(Errno::ENOENT)),
        (b"/d//\0", Err(Errno::EINVAL)),
        (b"/d/nx//\0", Err(Errno::EINVAL)),
        (b"/eight_b8/\0/", Err(Errno::EINVAL)),
    ];
    for (path, want) in cases {
        for pass in 0..2 {
            assert_eq!(
                ino(path),
                want,
                "{:?} pass {pass}",
                String::from_utf8_lossy(path)
            );
        }
    }
}

/// A NUL anywhere is EINVAL, also inside or right after a name that is
/// cached (positive or negative), at every name length: the fast walk's
/// short scan does not look for NUL (a key with one matches no dentry).
#[test]
fn nul_next_to_cached_names_is_einval() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"");
    mkfile(&p, b"/d/eight_b8", b"");
    assert_eq!(p.stat(b"/d/nx").map(|_| ()), Err(Errno::ENOENT));
    let paths: [&[u8]; 10] = [
        b"/d/f\0",
        b"/d/\0f",
        b"/d\0/f",
        b"/d/f\0/",
        b"/d/eight_b8\0",
        b"/d/eight_b\0",
        b"/d/nx\0",
        b"/d/n\0",
        b"/d/nx/\0",
        b"d\0",
    ];
    for path in paths {
        for pass in 0..2 {
            assert_eq!(
                p.stat(path).map(|_| ()),
                Err(Errno::EINVAL),
                "{:?} pass {pass}",
                String::from_utf8_lossy(path)
            );
        }
    }
}

#[test]
fn dots_and_slashes() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/s", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    let f = p.stat(b"/f").unwrap().ino;
    let root = p.stat(b"/").unwrap().ino;
    assert_eq!(p.stat(b"/d/s/../../f").unwrap().ino, f);
    assert_eq!(p.stat(b"//d///s/.//..//..//f").unwrap().ino, f);
    assert_eq!(p.stat(b"/..").unwrap().ino, root);
    assert_eq!(p.stat(b"/../../..").unwrap().ino, root);
    assert_eq!(p.stat(b"/f/."), Err(Errno::ENOTDIR));
    assert_eq!(p.stat(b"/f/.."), Err(Errno::ENOTDIR));
    assert_eq!(p.stat(b"/nx/.."), Err(Errno::ENOENT));
    assert_eq!(
        p.stat(b"/d/" as &[u8]).unwrap().ino,
        p.stat(b"/d").unwrap().ino
    );
    // Length limits: a component of 256 bytes anywhere, 4096 bytes in all.
    let mut mid = b"/d/".to_vec();
    mid.extend_from_slice(&[b'a'; 256]);
    mid.extend_from_slice(b"/x");
    assert_eq!(p.stat(&mid), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.stat(&[b'a'; 255]), Err(Errno::ENOENT));
    let mut long = b"/".to_vec();
    long.extend_from_slice(&b"./".repeat(2046));
    long.extend_from_slice(b"f");
    assert_eq!(long.len(), 4094);
    assert_eq!(p.stat(&long).unwrap().ino, f);
    long.insert(0, b'/');
    long.insert(0, b'/');
    assert_eq!(long.len(), 4096);
    assert_eq!(p.stat(&long), Err(Errno::ENAMETOOLONG));
}
