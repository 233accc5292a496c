use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

#[test]
fn create_write_read_stat() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o700).unwrap();
    let fd = p.open(b"/a/b/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, b"hello").unwrap(), 5);
    assert_eq!(p.lseek(fd, 0, SEEK_SET).unwrap(), 0);
    let mut buf = [0u8; 10];
    assert_eq!(p.read(fd, &mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    p.close(fd).unwrap();
    let st = p.stat(b"/a/b/f").unwrap();
    assert_eq!(st.size, 5);
    assert_eq!(st.mode, S_IFREG | 0o644);
    assert_eq!(p.stat(b"/a").unwrap().nlink, 3);
    assert_eq!(p.stat(b"/a/./b/../b/f").unwrap().ino, st.ino);
    assert_eq!(p.stat(b"/a/x").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/a/b/f/").unwrap_err(), Errno::ENOTDIR);
    assert_eq!(p.stat(b"/a/b/f/x").unwrap_err(), Errno::ENOTDIR);
    p.symlink(b"b/f", b"/a/l").unwrap();
    assert_eq!(p.stat(b"/a/l").unwrap().ino, st.ino);
    assert_eq!(p.lstat(b"/a/l").unwrap().mode & S_IFMT, S_IFLNK);
    assert_eq!(p.readlink(b"/a/l").unwrap(), b"b/f");
    p.rename(b"/a/b/f", b"/a/g").unwrap();
    assert_eq!(p.stat(b"/a/b/f").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/a/g").unwrap().ino, st.ino);
    let names: Vec<_> = p
        .read_dir(b"/a")
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(
        names,
        vec![
            b".".to_vec(),
            b"..".to_vec(),
            b"b".to_vec(),
            b"l".to_vec(),
            b"g".to_vec()
        ]
    );
    p.unlink(b"/a/g").unwrap();
    p.unlink(b"/a/l").unwrap();
    p.rmdir(b"/a/b").unwrap();
    p.rmdir(b"/a").unwrap();
    assert_eq!(p.stat(b"/a").unwrap_err(), Errno::ENOENT);
    drop(p);
    // Negative dentries (from the failed lookups above) keep removed
    // directories alive until reclaimed; after reclaim only the root is left.
    vfs.drop_caches();
    let c = vfs.object_counts();
    assert_eq!(
        (c.dentries, c.inodes, c.files, c.mounts),
        (1, 1, 0, 1),
        "{c:?}"
    );
}

#[test]
fn loops_and_limits() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.symlink(b"/x", b"/y").unwrap();
    p.symlink(b"/y", b"/x").unwrap();
    assert_eq!(p.stat(b"/x").unwrap_err(), Errno::ELOOP);
    assert_eq!(p.stat(&vec![b'a'; 256]).unwrap_err(), Errno::ENAMETOOLONG);
    assert_eq!(p.stat(&vec![b'/'; 4096]).unwrap_err(), Errno::ENAMETOOLONG);
    assert_eq!(p.stat(b"a\0b").unwrap_err(), Errno::EINVAL);
    assert_eq!(p.stat(b"").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/..").unwrap().ino, p.stat(b"/").unwrap().ino);
}

#[test]
fn mounts_and_cwd() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/mnt", 0o755).unwrap();
    p.mount(b"none", b"/mnt", b"tmpfs", 0).unwrap();
    p.mkdir(b"/mnt/d", 0o755).unwrap();
    assert_ne!(p.stat(b"/mnt").unwrap().dev, p.stat(b"/").unwrap().dev);
    p.chdir(b"/mnt/d").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/mnt/d");
    assert_eq!(p.stat(b"../..").unwrap().ino, p.stat(b"/").unwrap().ino);
    assert_eq!(p.umount2(b"/mnt", 0).unwrap_err(), Errno::EBUSY);
    p.chdir(b"/").unwrap();
    p.umount2(b"/mnt", 0).unwrap();
    assert_eq!(p.stat(b"/mnt/d").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.rename(b"/mnt", b"/mnt/sub").unwrap_err(), Errno::EINVAL);
}

#[test]
fn nul_is_einval_even_after_a_cached_miss() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    // Cache a negative dentry for "missing", then put a NUL after it.
    assert_eq!(p.stat(b"/missing").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/missing/a\0b").unwrap_err(), Errno::EINVAL);
    assert_eq!(p.stat(b"/missing\0").unwrap_err(), Errno::EINVAL);
}

#[test]
fn mknod_device_number_wider_than_32_bits_is_einval() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/c", S_IFCHR | 0o600, 1 << 40),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.mknodat(AT_FDCWD, b"/c", S_IFCHR | 0o600, 0x0103), Ok(()));
}
