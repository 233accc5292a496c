//! Extended attributes, fallocate and copy_file_range through the process
//! API, with Linux's errno for each misuse.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};

fn file(p: &vfscale::Process, path: &[u8], mode: u32) {
    let fd = p.open(path, O_CREAT | O_WRONLY, mode).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn xattr_set_get_list_remove_and_flags() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    file(&p, b"/f", 0o644);
    let mut buf = [0u8; 64];
    assert_eq!(p.getxattr(b"/f", b"user.a", &mut buf), Err(Errno::ENODATA));
    p.setxattr(b"/f", b"user.a", b"one", 0).unwrap();
    assert_eq!(p.getxattr(b"/f", b"user.a", &mut []), Ok(3));
    assert_eq!(p.getxattr(b"/f", b"user.a", &mut buf), Ok(3));
    assert_eq!(&buf[..3], b"one");
    assert_eq!(
        p.getxattr(b"/f", b"user.a", &mut buf[..2]),
        Err(Errno::ERANGE)
    );
    // XATTR_CREATE on an existing name, XATTR_REPLACE on a missing one.
    assert_eq!(
        p.setxattr(b"/f", b"user.a", b"x", XATTR_CREATE),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.setxattr(b"/f", b"user.b", b"x", XATTR_REPLACE),
        Err(Errno::ENODATA)
    );
    p.setxattr(b"/f", b"user.a", b"two!", XATTR_REPLACE)
        .unwrap();
    p.setxattr(b"/f", b"trusted.t", b"", XATTR_CREATE).unwrap();
    assert_eq!(p.getxattr(b"/f", b"trusted.t", &mut buf), Ok(0));
    assert_eq!(p.setxattr(b"/f", b"user.a", b"x", 4), Err(Errno::EINVAL));
    // Names and sizes.
    assert_eq!(p.setxattr(b"/f", b"", b"x", 0), Err(Errno::ERANGE));
    assert_eq!(p.setxattr(b"/f", &[b'u'; 256], b"x", 0), Err(Errno::ERANGE));
    assert_eq!(
        p.setxattr(b"/f", b"user.big", &vec![0; XATTR_SIZE_MAX + 1], 0),
        Err(Errno::E2BIG)
    );
    p.setxattr(b"/f", b"user.max", &vec![7; XATTR_SIZE_MAX], 0)
        .unwrap();
    assert_eq!(p.setxattr(b"/f", b"user.", b"x", 0), Err(Errno::EINVAL));
    assert_eq!(
        p.setxattr(b"/f", b"other.x", b"x", 0),
        Err(Errno::EOPNOTSUPP)
    );
    // An ACL name takes an ACL (acl_kernel.rs compares them with Linux):
    // one byte is too short to be one; any other system name is unknown.
    assert_eq!(
        p.setxattr(b"/f", b"system.posix_acl_access", b"x", 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.setxattr(b"/f", b"system.posix_acl", b"x", 0),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        p.getxattr(b"/f", b"other.x", &mut buf),
        Err(Errno::EOPNOTSUPP)
    );
    // Listing: NUL-terminated names in descending byte order (Linux
    // 6.18's tmpfs, whatever order they were set in: checked on the host,
    // and by the kernel differential test); size query; ERANGE.
    let n = p.listxattr(b"/f", &mut []).unwrap();
    let mut list = vec![0u8; n];
    assert_eq!(p.listxattr(b"/f", &mut list), Ok(n));
    assert_eq!(list, b"user.max\0user.a\0trusted.t\0");
    assert_eq!(p.listxattr(b"/f", &mut list[..n - 1]), Err(Errno::ERANGE));
    // Removal.
    p.removexattr(b"/f", b"user.a").unwrap();
    assert_eq!(p.removexattr(b"/f", b"user.a"), Err(Errno::ENODATA));
    assert_eq!(p.getxattr(b"/f", b"user.a", &mut buf), Err(Errno::ENODATA));
    // fd variants, and hard links share the attributes.
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.fsetxattr(fd, b"user.fd", b"v", 0).unwrap();
    assert_eq!(p.fgetxattr(fd, b"user.fd", &mut buf), Ok(1));
    p.link(b"/f", b"/g").unwrap();
    assert_eq!(p.getxattr(b"/g", b"user.fd", &mut buf), Ok(1));
    p.fremovexattr(fd, b"user.fd").unwrap();
    assert!(p.flistxattr(fd, &mut []).unwrap() > 0);
    p.close(fd).unwrap();
    let opath = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.fgetxattr(opath, b"user.x", &mut buf), Err(Errno::EBADF));
    p.close(opath).unwrap();
    assert_eq!(
        p.getxattr(b"/missing", b"user.x", &mut buf),
        Err(Errno::ENOENT)
    );
    // ctime moves on a change.
    let before = p.stat(b"/f").unwrap().ctime;
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.setxattr(b"/f", b"user.t", b"1", 0).unwrap();
    assert!(p.stat(b"/f").unwrap().ctime >= before);
}

#[test]
fn xattr_namespaces_follow_linux_rules() {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    file(&root, b"/f", 0o644);
    root.symlink(b"f", b"/s").unwrap();
    root.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o666, 0)
        .unwrap();
    root.setxattr(b"/f", b"trusted.secret", b"x", 0).unwrap();
    root.setxattr(b"/f", b"user.u", b"x", 0).unwrap();
    let mut buf = [0u8; 64];
    // user.* on symlinks and specials: EPERM to set, ENODATA to get.
    assert_eq!(root.lsetxattr(b"/s", b"user.x", b"v", 0), Err(Errno::EPERM));
    assert_eq!(
        root.lgetxattr(b"/s", b"user.x", &mut buf),
        Err(Errno::ENODATA)
    );
    assert_eq!(
        root.setxattr(b"/fifo", b"user.x", b"v", 0),
        Err(Errno::EPERM)
    );
    // Through the symlink (followed) the file's attributes are reached.
    assert_eq!(root.getxattr(b"/s", b"user.u", &mut buf), Ok(1));
    // trusted.* on a symlink itself is fine for root.
    root.lsetxattr(b"/s", b"trusted.l", b"v", 0).unwrap();
    let user = vfs.process(Cred::user(1000, 1000, &[]));
    // trusted.*: others cannot write (EPERM), read (ENODATA) or list it.
    assert_eq!(
        user.setxattr(b"/f", b"trusted.x", b"v", 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        user.getxattr(b"/f", b"trusted.secret", &mut buf),
        Err(Errno::ENODATA)
    );
    let n = user.listxattr(b"/f", &mut buf).unwrap();
    assert_eq!(&buf[..n], b"user.u\0");
    // user.*: mode bits decide (EACCES), reads need read permission.
    assert_eq!(user.setxattr(b"/f", b"user.x", b"v", 0), Err(Errno::EACCES));
    assert_eq!(user.getxattr(b"/f", b"user.u", &mut buf), Ok(1));
    root.chmod(b"/f", 0o600).unwrap();
    assert_eq!(
        user.getxattr(b"/f", b"user.u", &mut buf),
        Err(Errno::EACCES)
    );
    // security.*: anyone reads, only root writes.
    root.setxattr(b"/f", b"security.sel", b"ctx", 0).unwrap();
    assert_eq!(
        user.setxattr(b"/f", b"security.x", b"v", 0),
        Err(Errno::EPERM)
    );
    // The owner may set user.* on their own file.
    file(&root, b"/mine", 0o644);
    root.chown(b"/mine", 1000, 1000).unwrap();
    user.setxattr(b"/mine", b"user.ok", b"v", 0).unwrap();
    // Sticky directory: only the owner writes user.* there.
    root.mkdir(b"/sticky", 0o1777).unwrap();
    assert_eq!(
        user.setxattr(b"/sticky", b"user.x", b"v", 0),
        Err(Errno::EPERM)
    );
    // Attributes go with the inode: a new file of the same name has none.
    root.unlink(b"/mine").unwrap();
    file(&root, b"/mine", 0o644);
    assert_eq!(
        root.getxattr(b"/mine", b"user.ok", &mut buf),
        Err(Errno::ENODATA)
    );
}

#[test]
fn fallocate_modes_and_errors() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.pwrite(fd, b"abc", 0).unwrap();
    // Mode 0 extends the size and allocates blocks; old data stays.
    p.fallocate(fd, 0, 0, 3 * 4096).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!(st.size, 3 * 4096);
    assert_eq!(st.blocks, 3 * 8);
    let mut buf = [9u8; 4];
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(4));
    assert_eq!(&buf, b"abc\0");
    // KEEP_SIZE allocates past EOF without changing the size.
    p.fallocate(fd, FALLOC_FL_KEEP_SIZE, 3 * 4096, 4096)
        .unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (3 * 4096, 4 * 8));
    // PUNCH_HOLE | KEEP_SIZE frees whole pages and zeroes partial ones.
    p.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1, 4096 * 2)
        .unwrap();
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(4));
    assert_eq!(&buf, b"a\0\0\0");
    let st = p.fstat(fd).unwrap();
    assert_eq!(st.size, 3 * 4096);
    assert!(st.blocks < 4 * 8);
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Ok(4096));
    // Errors.
    assert_eq!(
        p.fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 1),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(p.fallocate(fd, 0x10, 0, 1), Err(Errno::EOPNOTSUPP));
    assert_eq!(p.fallocate(fd, 0, -1, 1), Err(Errno::EINVAL));
    assert_eq!(p.fallocate(fd, 0, 0, 0), Err(Errno::EINVAL));
    assert_eq!(p.fallocate(fd, 0, i64::MAX, 2), Err(Errno::EFBIG));
    p.close(fd).unwrap();
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fallocate(ro, 0, 0, 1), Err(Errno::EBADF));
    p.close(ro).unwrap();
    assert_eq!(p.fallocate(ro, 0, 0, 1), Err(Errno::EBADF));
}

#[test]
fn fallocate_is_all_or_nothing_when_space_runs_out() {
    let mut cfg = vfscale::VfsConfig::default();
    cfg.tmpfs_limits.max_bytes = 8 * 4096;
    let vfs = Vfs::with_config(cfg);
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.pwrite(fd, b"keep", 4096).unwrap();
    assert_eq!(p.fallocate(fd, 0, 0, 64 * 4096), Err(Errno::ENOSPC));
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (4100, 8));
    let mut buf = [0u8; 4];
    p.pread(fd, &mut buf, 4096).unwrap();
    assert_eq!(&buf, b"keep");
    p.fallocate(fd, 0, 0, 4 * 4096).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn copy_file_range_copies_with_offsets_and_positions() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let a = p.open(b"/a", O_CREAT | O_RDWR, 0o644).unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    p.write(a, &data).unwrap();
    let b = p.open(b"/b", O_CREAT | O_RDWR, 0o644).unwrap();
    // Explicit offsets: the file positions do not move.
    let (mut oi, mut oo) = (10i64, 5i64);
    let n = p
        .copy_file_range(a, Some(&mut oi), b, Some(&mut oo), 150_000, 0)
        .unwrap();
    assert_eq!(n, 150_000);
    assert_eq!((oi, oo), (150_010, 150_005));
    assert_eq!(p.lseek(b, 0, SEEK_CUR), Ok(0));
    let mut out = vec![0u8; 150_000];
    assert_eq!(p.pread(b, &mut out, 5), Ok(150_000));
    assert_eq!(&out[..], &data[10..150_010]);
    // File positions: used and advanced; a short copy at EOF.
    p.lseek(a, 199_990, SEEK_SET).unwrap();
    p.lseek(b, 0, SEEK_SET).unwrap();
    assert_eq!(p.copy_file_range(a, None, b, None, 100, 0), Ok(10));
    assert_eq!(p.lseek(a, 0, SEEK_CUR), Ok(200_000));
    assert_eq!(p.lseek(b, 0, SEEK_CUR), Ok(10));
    assert_eq!(p.copy_file_range(a, None, b, None, 100, 0), Ok(0));
    // Errors.
    assert_eq!(
        p.copy_file_range(a, None, b, None, 1, 1),
        Err(Errno::EINVAL)
    );
    let (mut x, mut y) = (0i64, 10i64);
    assert_eq!(
        p.copy_file_range(a, Some(&mut x), a, Some(&mut y), 100, 0),
        Err(Errno::EINVAL)
    );
    let ro = p.open(b"/b", O_RDONLY, 0).unwrap();
    assert_eq!(
        p.copy_file_range(a, None, ro, None, 1, 0),
        Err(Errno::EBADF)
    );
    let app = p.open(b"/b", O_WRONLY | O_APPEND, 0).unwrap();
    assert_eq!(
        p.copy_file_range(a, None, app, None, 1, 0),
        Err(Errno::EBADF)
    );
    let wo = p.open(b"/b", O_WRONLY, 0).unwrap();
    assert_eq!(
        p.copy_file_range(wo, None, b, None, 1, 0),
        Err(Errno::EBADF)
    );
    p.mkdir(b"/d", 0o755).unwrap();
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(
        p.copy_file_range(d, None, b, None, 1, 0),
        Err(Errno::EISDIR)
    );
    for fd in [a, b, ro, app, wo, d] {
        p.close(fd).unwrap();
    }
}
