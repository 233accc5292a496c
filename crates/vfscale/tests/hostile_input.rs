//! Hostile input at the process API: invalid flag bits, huge offsets and
//! sizes, bad and wrong-type descriptors, symlink loops, over-long names
//! and paths, and the hard-link limit. Every expected errno here was taken
//! from Linux 6.18 on tmpfs: the same calls (and ~150 more) run against the
//! kernel side by side in `crates/vfscale-difftest/tests/hostile_kernel.rs`.

mod common;
use common::*;

type E = Errno;

#[test]
fn invalid_flag_bits_are_einval() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    // openat ignores unknown bits (openat2 would not).
    let extra = p.open(b"/f", O_RDONLY | 0x4000_0000, 0).unwrap();
    p.close(extra).unwrap();
    assert_eq!(p.unlinkat(AT_FDCWD, b"/none", 1), Err(E::EINVAL));
    assert_eq!(p.unlinkat(AT_FDCWD, b"/none", 0x100), Err(E::EINVAL));
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/g", 8),
        Err(E::EINVAL)
    );
    assert_eq!(
        p.renameat2(
            AT_FDCWD,
            b"/f",
            AT_FDCWD,
            b"/g",
            RENAME_NOREPLACE | RENAME_EXCHANGE
        ),
        Err(E::EINVAL)
    );
    assert_eq!(p.fstatat(AT_FDCWD, b"/f", 0x1), Err(E::EINVAL));
    assert_eq!(p.fstatat(AT_FDCWD, b"/f", AT_REMOVEDIR), Err(E::EINVAL));
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", 0x1, STATX_BASIC_STATS).err(),
        Some(E::EINVAL)
    );
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", 0, 0x8000_0000).err(),
        Some(E::EINVAL)
    );
    assert_eq!(
        p.linkat(AT_FDCWD, b"/f", AT_FDCWD, b"/h", 0x1),
        Err(E::EINVAL)
    );
    assert_eq!(
        p.linkat(AT_FDCWD, b"/f", AT_FDCWD, b"/h", AT_SYMLINK_NOFOLLOW),
        Err(E::EINVAL)
    );
    assert_eq!(
        p.fchownat(AT_FDCWD, b"/f", u32::MAX, u32::MAX, 0x1),
        Err(E::EINVAL)
    );
    assert_eq!(p.utimensat(AT_FDCWD, b"/f", None, 0x1), Err(E::EINVAL));
    assert_eq!(p.faccessat(AT_FDCWD, b"/f", F_OK, 0x1), Err(E::EINVAL));
    assert_eq!(p.faccessat(AT_FDCWD, b"/f", 8, 0), Err(E::EINVAL));
    assert_eq!(p.fchmodat(AT_FDCWD, b"/f", 0o644, 0x1), Err(E::EINVAL));
    assert_eq!(p.dup3(fd, 20, 1), Err(E::EINVAL));
    assert_eq!(p.dup3(fd, fd, 0), Err(E::EINVAL));
    assert_eq!(p.close_range(50, 60, 1), Err(E::EINVAL));
    assert_eq!(p.close_range(60, 50, 0), Err(E::EINVAL));
    assert_eq!(p.umount2(b"/", 0x10), Err(E::EINVAL));
    assert_eq!(p.umount2(b"/", MNT_EXPIRE | MNT_DETACH), Err(E::EINVAL));
    assert_eq!(p.lseek(fd, 0, 7), Err(E::EINVAL));
    assert_eq!(p.lseek(fd, 0, -1), Err(E::EINVAL));
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/m", 0o170000 | 0o644, 0),
        Err(E::EINVAL)
    );
}

#[test]
fn huge_offsets_and_sizes() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, -10, SEEK_SET), Err(E::EINVAL));
    p.lseek(fd, 5, SEEK_SET).unwrap();
    assert_eq!(p.lseek(fd, i64::MAX, SEEK_CUR), Err(E::EINVAL));
    assert_eq!(p.lseek(fd, i64::MAX, SEEK_END), Err(E::EINVAL));
    assert_eq!(p.lseek(fd, 1 << 40, SEEK_SET), Ok(1 << 40));
    assert_eq!(p.lseek(fd, 100, SEEK_DATA), Err(E::ENXIO));
    assert_eq!(p.lseek(fd, 100, SEEK_HOLE), Err(E::ENXIO));
    assert_eq!(p.pwrite(fd, b"x", -1), Err(E::EINVAL));
    assert_eq!(p.pread(fd, &mut [0u8; 4], -1), Err(E::EINVAL));
    assert_eq!(p.pwrite(fd, b"xy", i64::MAX - 1), Err(E::EINVAL));
    assert_eq!(p.ftruncate(fd, -1), Err(E::EINVAL));
    assert_eq!(p.truncate(b"/f", -1), Err(E::EINVAL));
    // tmpfs's maximum file size is i64::MAX: a sparse file that large is fine.
    p.ftruncate(fd, i64::MAX).unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, i64::MAX);
    let mut buf = [7u8; 4];
    assert_eq!(p.pread(fd, &mut buf, i64::MAX - 4), Ok(4));
    assert_eq!(buf, [0; 4]);
}

#[test]
fn bad_and_wrong_type_descriptors() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"x");
    let f = p.open(b"/d/f", O_RDWR, 0).unwrap();
    let dfd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let pfd = p.open(b"/d/f", O_PATH, 0).unwrap();
    for bad in [-1, -100, i32::MAX, 1 << 20] {
        assert_eq!(p.read(bad, &mut [0u8; 1]), Err(E::EBADF), "fd {bad}");
        assert_eq!(p.write(bad, b"x"), Err(E::EBADF));
        assert_eq!(p.close(bad), Err(E::EBADF));
        assert_eq!(p.dup(bad), Err(E::EBADF));
        assert_eq!(p.fstat(bad), Err(E::EBADF));
        assert_eq!(p.fchdir(bad), Err(E::EBADF));
        assert_eq!(p.ftruncate(bad, 0), Err(E::EBADF));
        assert_eq!(p.getdents64(bad, &mut [0u8; 64]), Err(E::EBADF));
        assert_eq!(p.dup2(f, bad), Err(E::EBADF));
        // An absolute path ignores the dirfd.
        assert!(p.fstatat(bad, b"/d/f", 0).is_ok());
    }
    assert_eq!(p.fstatat(-100, b"x", 0), Err(E::ENOENT), "-100 is AT_FDCWD");
    for (what, r) in [
        ("read", p.read(pfd, &mut [0u8; 1]).err()),
        ("write", p.write(pfd, b"x").err()),
        ("lseek", p.lseek(pfd, 0, SEEK_SET).err()),
        ("getdents", p.getdents64(pfd, &mut [0u8; 64]).err()),
        ("fchmod", p.fchmod(pfd, 0o600).err()),
        ("fchown", p.fchown(pfd, 0, 0).err()),
        ("ftruncate", p.ftruncate(pfd, 0).err()),
        ("fsync", p.fsync(pfd).err()),
        ("futimens", p.futimens(pfd, None).err()),
    ] {
        assert_eq!(r, Some(E::EBADF), "O_PATH {what}");
    }
    assert!(p.fstat(pfd).is_ok());
    assert_eq!(p.read(dfd, &mut [0u8; 1]), Err(E::EISDIR));
    assert_eq!(p.write(dfd, b"x"), Err(E::EBADF));
    assert_eq!(p.ftruncate(dfd, 0), Err(E::EINVAL));
    assert_eq!(p.getdents64(f, &mut [0u8; 64]), Err(E::ENOTDIR));
    assert_eq!(p.getdents64(dfd, &mut []), Err(E::EINVAL));
    assert_eq!(p.fchdir(f), Err(E::ENOTDIR));
    assert_eq!(p.fstatat(f, b"x", 0), Err(E::ENOTDIR));
    assert_eq!(p.mkdirat(f, b"x", 0o755), Err(E::ENOTDIR));
    assert_eq!(p.open(b"/d", O_WRONLY, 0), Err(E::EISDIR));
    assert_eq!(p.open(b"/d/f", O_RDONLY | O_DIRECTORY, 0), Err(E::ENOTDIR));
    assert_eq!(p.open(b"/d/new/", O_CREAT | O_RDWR, 0o644), Err(E::EISDIR));
    assert_eq!(p.readlink(b"/d/f"), Err(E::EINVAL));
    assert_eq!(p.rename(b"/d", b"/d/sub"), Err(E::EINVAL));
    assert_eq!(p.chroot(b"/d/f"), Err(E::ENOTDIR));
}

#[test]
fn symlink_loops_and_chains() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    p.symlink(b"loop2", b"/loop1").unwrap();
    p.symlink(b"loop1", b"/loop2").unwrap();
    assert_eq!(p.open(b"/loop1", O_RDONLY, 0), Err(E::ELOOP));
    assert_eq!(p.open(b"/loop1", O_CREAT | O_RDWR, 0o644), Err(E::ELOOP));
    assert_eq!(p.stat(b"/loop1").err(), Some(E::ELOOP));
    assert_eq!(p.stat(b"/loop1/x").err(), Some(E::ELOOP));
    assert_eq!(p.chdir(b"/loop1"), Err(E::ELOOP));
    assert!(p.lstat(b"/loop1").is_ok());
    // A chain of n links takes n follows; Linux allows 40.
    for i in 0..42 {
        let target = if i == 0 {
            b"f".to_vec()
        } else {
            format!("c{}", i - 1).into_bytes()
        };
        p.symlink(&target, format!("/c{i}").as_bytes()).unwrap();
    }
    assert!(p.stat(b"/c39").is_ok(), "40 links");
    assert_eq!(p.stat(b"/c40").err(), Some(E::ELOOP), "41 links");
}

#[test]
fn long_names_and_paths() {
    let (_vfs, p) = setup();
    let name = |n: usize| [b"/".to_vec(), vec![b'n'; n]].concat();
    let fd = p.open(&name(255), O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert_eq!(
        p.open(&name(256), O_CREAT | O_RDWR, 0o644),
        Err(E::ENAMETOOLONG)
    );
    assert_eq!(p.mkdir(&name(256), 0o755), Err(E::ENAMETOOLONG));
    // A symlink's text is not a name: 256 bytes is fine, 4096 is not.
    p.symlink(&name(256), b"/t").unwrap();
    p.symlink(&[b'a'; 4095], b"/t4095").unwrap();
    assert_eq!(p.symlink(&[b'a'; 4096], b"/t4096"), Err(E::ENAMETOOLONG));
    assert_eq!(p.symlink(b"", b"/empty"), Err(E::ENOENT));
    let dots = |n: usize| {
        let mut v: Vec<u8> = b"/.".iter().copied().cycle().take(n).collect();
        if v.ends_with(b"/") {
            *v.last_mut().unwrap() = b'.';
        }
        v
    };
    assert!(p.stat(&dots(4095)).is_ok());
    assert_eq!(p.stat(&dots(4096)).err(), Some(E::ENAMETOOLONG));
    assert_eq!(p.stat(&dots(1 << 20)).err(), Some(E::ENAMETOOLONG));
    assert_eq!(p.stat(b"").err(), Some(E::ENOENT));
    assert_eq!(p.rmdir(b"/."), Err(E::EINVAL));
    assert_eq!(p.rmdir(b"/.."), Err(E::ENOTEMPTY));
    // A NUL byte inside a path: documented EINVAL (docs/COMPATIBILITY.md).
    assert_eq!(p.stat(b"/a\0b").err(), Some(E::EINVAL));
}

#[test]
fn hard_link_limit_is_emlink() {
    // LINK_MAX (65,000, ext4's value; docs/COMPATIBILITY.md) links: the
    // next one is EMLINK, and the inode is still consistent.
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"data");
    p.mkdir(b"/l", 0o755).unwrap();
    for i in 1..LINK_MAX {
        p.link(b"/f", format!("/l/{i}").as_bytes()).unwrap();
    }
    assert_eq!(p.stat(b"/f").unwrap().nlink, LINK_MAX);
    assert_eq!(p.link(b"/f", b"/l/over"), Err(E::EMLINK));
    p.unlink(b"/l/1").unwrap();
    p.link(b"/f", b"/l/over").unwrap();
    assert_eq!(p.link(b"/f", b"/l/over2"), Err(E::EMLINK));
    p.exit();
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}
