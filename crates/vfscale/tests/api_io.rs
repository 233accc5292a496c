//! read, write, pread, pwrite, readv, writev, lseek, ftruncate, truncate,
//! fsync, fdatasync; space limits.

mod common;
use common::*;
use vfscale::fs::FsLimits;
use vfscale::VfsConfig;

const MAX: i64 = i64::MAX;

fn limited(max_bytes: u64, max_inodes: u64) -> (Vfs, Process) {
    let vfs = Vfs::with_config(VfsConfig {
        tmpfs_limits: FsLimits {
            max_bytes,
            max_inodes,
        },
        ..VfsConfig::default()
    });
    let p = vfs.root_process();
    (vfs, p)
}

// ------------------------------------------------------------ read/write

#[test]
fn read_write_advance_the_offset() {
    let (vfs, p) = setup();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, b"hello "), Ok(6));
    assert_eq!(p.write(fd, b"world"), Ok(5));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(11));
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks, st.blksize), (11, 8, 4096));
    assert_eq!(p.lseek(fd, 0, SEEK_SET), Ok(0));
    let mut b = [0u8; 4];
    assert_eq!(p.read(fd, &mut b), Ok(4));
    assert_eq!(&b, b"hell");
    assert_eq!(p.read(fd, &mut b), Ok(4));
    assert_eq!(p.read(fd, &mut b), Ok(3), "short read at the end");
    assert_eq!(&b[..3], b"rld");
    assert_eq!(p.read(fd, &mut b), Ok(0), "end of file");
    assert_eq!(p.read(fd, &mut []), Ok(0));
    // Overwrite in the middle.
    p.lseek(fd, 2, SEEK_SET).unwrap();
    p.write(fd, b"LL").unwrap();
    p.close(fd).unwrap();
    assert_eq!(read_file(&p, b"/f"), b"heLLo world");
    p.unlink(b"/f").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn write_times_and_atime_rules() {
    let (_vfs, p) = setup();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let st0 = p.fstat(fd).unwrap();
    tick();
    p.write(fd, b"abc").unwrap();
    let st1 = p.fstat(fd).unwrap();
    assert!(st1.mtime > st0.mtime && st1.ctime > st0.ctime);
    assert_eq!(st1.atime, st0.atime, "write leaves atime");
    // Writing nothing changes nothing.
    tick();
    assert_eq!(p.write(fd, b""), Ok(0));
    assert_eq!(p.fstat(fd).unwrap(), st1);
    // stat never changes atime.
    tick();
    p.stat(b"/f").unwrap();
    assert_eq!(p.stat(b"/f").unwrap().atime, st1.atime);
    // The first read after a modification updates atime (relatime)...
    let mut b = [0u8; 3];
    p.pread(fd, &mut b, 0).unwrap();
    let st2 = p.fstat(fd).unwrap();
    assert!(st2.atime > st1.atime);
    assert_eq!((st2.mtime, st2.ctime), (st1.mtime, st1.ctime));
    // ...a second one does not, nor does a read of nothing.
    tick();
    p.pread(fd, &mut b, 0).unwrap();
    p.pread(fd, &mut b, 100).unwrap();
    assert_eq!(p.fstat(fd).unwrap().atime, st2.atime);
    // O_NOATIME: no update even when relatime would.
    tick();
    p.write(fd, b"d").unwrap();
    let st3 = p.fstat(fd).unwrap();
    let nfd = p.open(b"/f", O_RDONLY | O_NOATIME, 0).unwrap();
    p.read(nfd, &mut b).unwrap();
    assert_eq!(p.fstat(fd).unwrap().atime, st3.atime);
    p.close(nfd).unwrap();
    p.close(fd).unwrap();
}

/// open(O_NOATIME) is for the file's owner (or root), even when the mode
/// allows the read (may_open's inode_owner_or_capable, checked on the
/// host kernel); O_PATH drops the flag.
#[test]
fn o_noatime_is_for_the_owner() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"x");
    p.chmod(b"/f", 0o666).unwrap();
    let u = user(&vfs, 1000, 1000);
    assert_eq!(u.open(b"/f", O_RDONLY | O_NOATIME, 0), Err(Errno::EPERM));
    assert_eq!(u.open(b"/f", O_WRONLY | O_NOATIME, 0), Err(Errno::EPERM));
    u.close(u.open(b"/f", O_PATH | O_NOATIME, 0).unwrap())
        .unwrap();
    u.close(u.open(b"/f", O_RDONLY, 0).unwrap()).unwrap();
    p.chown(b"/f", 1000, 1000).unwrap();
    u.close(u.open(b"/f", O_RDONLY | O_NOATIME, 0).unwrap())
        .unwrap();
    p.close(p.open(b"/f", O_RDONLY | O_NOATIME, 0).unwrap())
        .unwrap();
}

#[test]
fn read_write_ebadf_and_eisdir() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    p.mkdir(b"/d", 0o755).unwrap();
    let mut b = [0u8; 4];
    for fd in [-1, 3, 100, i32::MAX] {
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
    }
    let r = p.open(b"/f", O_RDONLY, 0).unwrap();
    let w = p.open(b"/f", O_WRONLY, 0).unwrap();
    assert_eq!(p.write(r, b"x"), Err(Errno::EBADF));
    assert_eq!(p.write(r, b""), Err(Errno::EBADF));
    assert_eq!(p.pwrite(r, b"x", 0), Err(Errno::EBADF));
    assert_eq!(p.writev(r, &[b"x"]), Err(Errno::EBADF));
    assert_eq!(p.read(w, &mut b), Err(Errno::EBADF));
    assert_eq!(p.read(w, &mut []), Err(Errno::EBADF));
    assert_eq!(p.pread(w, &mut b, 0), Err(Errno::EBADF));
    assert_eq!(p.readv(w, &mut [&mut b[..]]), Err(Errno::EBADF));
    let d = p.open(b"/d", O_RDONLY, 0).unwrap();
    assert_eq!(p.read(d, &mut b), Err(Errno::EISDIR));
    assert_eq!(p.pread(d, &mut b, 0), Err(Errno::EISDIR));
    assert_eq!(p.readv(d, &mut [&mut b[..]]), Err(Errno::EISDIR));
    assert_eq!(p.write(d, b"x"), Err(Errno::EBADF));
    assert_eq!(p.read_dir(b"/d").unwrap().len(), 2);
}

#[test]
fn pread_pwrite_leave_the_offset() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"0123456789");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    p.lseek(fd, 3, SEEK_SET).unwrap();
    let mut b = [0u8; 4];
    assert_eq!(p.pread(fd, &mut b, 5), Ok(4));
    assert_eq!(&b, b"5678");
    assert_eq!(p.pwrite(fd, b"AB", 0), Ok(2));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(3));
    assert_eq!(p.pread(fd, &mut b, 8), Ok(2));
    assert_eq!(p.pread(fd, &mut b, 10), Ok(0));
    assert_eq!(p.pread(fd, &mut b, 1000), Ok(0));
    // pwrite past the end leaves a hole of zeros.
    assert_eq!(p.pwrite(fd, b"Z", 20), Ok(1));
    assert_eq!(p.fstat(fd).unwrap().size, 21);
    assert_eq!(read_file(&p, b"/f"), b"AB23456789\0\0\0\0\0\0\0\0\0\0Z");
    assert_eq!(p.read(fd, &mut b), Ok(4));
    assert_eq!(&b, b"3456");
    // Negative offsets.
    assert_eq!(p.pread(fd, &mut b, -1), Err(Errno::EINVAL));
    assert_eq!(p.pwrite(fd, b"x", -1), Err(Errno::EINVAL));
    assert_eq!(p.pwrite(fd, b"", -1), Err(Errno::EINVAL));
    assert_eq!(p.pread(fd, &mut b, i64::MIN), Err(Errno::EINVAL));
    // Offset + length past the largest file size.
    assert_eq!(p.pwrite(fd, b"xyz", MAX - 1), Err(Errno::EINVAL));
    assert_eq!(p.fstat(fd).unwrap().size, 21);
}

#[test]
fn pread_offset_overflow_is_einval() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let mut b = [0u8; 3];
    assert_eq!(p.pread(fd, &mut b, MAX), Err(Errno::EINVAL));
}

#[test]
fn lseek_overflow_is_einval() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, MAX, SEEK_SET), Ok(MAX));
    assert_eq!(p.lseek(fd, 1, SEEK_CUR), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(MAX), "unchanged");
    assert_eq!(p.lseek(fd, MAX, SEEK_END), Err(Errno::EINVAL));
}

#[test]
fn write_position_overflow_is_einval() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, MAX, SEEK_SET), Ok(MAX));
    assert_eq!(p.write(fd, b"x"), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, MAX - 1, SEEK_SET), Ok(MAX - 1));
    assert_eq!(p.write(fd, b"xyz"), Err(Errno::EINVAL));
    assert_eq!(p.fstat(fd).unwrap().size, 5);
}

#[test]
fn write_up_to_the_largest_offset() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, MAX - 1, SEEK_SET), Ok(MAX - 1));
    assert_eq!(p.write(fd, b"x"), Ok(1));
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (MAX, 8));
    let mut b = [0u8; 1];
    assert_eq!(p.pread(fd, &mut b, MAX - 1), Ok(1));
    assert_eq!(&b, b"x");
    p.ftruncate(fd, 0).unwrap();
    assert_eq!(p.fstat(fd).unwrap().blocks, 0);
}

#[test]
fn o_append() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    let fd = p.open(b"/f", O_RDWR | O_APPEND, 0).unwrap();
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR),
        Ok(0),
        "O_APPEND does not move the offset at open"
    );
    p.write(fd, b"d").unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(4));
    p.lseek(fd, 0, SEEK_SET).unwrap();
    p.write(fd, b"e").unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(5));
    // Linux quirk: pwrite on an O_APPEND descriptor appends too, and does
    // not move the offset.
    p.lseek(fd, 1, SEEK_SET).unwrap();
    assert_eq!(p.pwrite(fd, b"X", 0), Ok(1));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(1));
    assert_eq!(read_file(&p, b"/f"), b"abcdeX");
    // Another descriptor's writes move the end: appends go after them.
    let other = p.open(b"/f", O_WRONLY, 0).unwrap();
    p.pwrite(other, b"0123456789", 0).unwrap();
    p.write(fd, b"!").unwrap();
    assert_eq!(read_file(&p, b"/f"), b"0123456789!");
    p.close(other).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn readv_writev() {
    let (_vfs, p) = setup();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.writev(fd, &[b"ab", b"", b"cde", b"f"]), Ok(6));
    assert_eq!(p.writev(fd, &[]), Ok(0));
    assert_eq!(p.writev(fd, &[b"", b""]), Ok(0));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(6));
    p.lseek(fd, 0, SEEK_SET).unwrap();
    let (mut a, mut z, mut b, mut c) = ([0u8; 2], [0u8; 0], [0u8; 3], [0u8; 10]);
    assert_eq!(
        p.readv(fd, &mut [&mut a[..], &mut z[..], &mut b[..], &mut c[..]]),
        Ok(6)
    );
    assert_eq!((&a, &b, &c[..1]), (b"ab", b"cde", &b"f"[..]));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(6));
    assert_eq!(p.readv(fd, &mut [&mut c[..]]), Ok(0));
    assert_eq!(p.readv(fd, &mut []), Ok(0));
    p.close(fd).unwrap();
}

// ----------------------------------------------------------------- lseek

#[test]
fn lseek_whence() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"hello");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, 2, SEEK_SET), Ok(2));
    assert_eq!(p.lseek(fd, 2, SEEK_CUR), Ok(4));
    assert_eq!(p.lseek(fd, -1, SEEK_CUR), Ok(3));
    assert_eq!(p.lseek(fd, 0, SEEK_END), Ok(5));
    assert_eq!(p.lseek(fd, -5, SEEK_END), Ok(0));
    assert_eq!(p.lseek(fd, 10, SEEK_END), Ok(15), "past the end is allowed");
    assert_eq!(p.fstat(fd).unwrap().size, 5, "seeking does not extend");
    assert_eq!(p.lseek(fd, -1, SEEK_SET), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, -6, SEEK_END), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, -100, SEEK_CUR), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, 5), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, -1), Err(Errno::EINVAL));
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR),
        Ok(15),
        "failed seeks leave the offset"
    );
    assert_eq!(p.lseek(fd, MAX, SEEK_SET), Ok(MAX));
    // Writing after a seek past the end leaves a hole.
    p.lseek(fd, 8, SEEK_SET).unwrap();
    p.write(fd, b"!").unwrap();
    assert_eq!(read_file(&p, b"/f"), b"hello\0\0\0!");
}

#[test]
fn lseek_on_a_directory() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let fd = p.open(b"/d", O_RDONLY, 0).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_END), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, -1, SEEK_SET), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 1000, SEEK_SET), Ok(1000));
    assert_eq!(p.lseek(fd, 5, SEEK_CUR), Ok(1005));
    assert_eq!(p.lseek(fd, 0, SEEK_SET), Ok(0));
}

#[test]
fn seek_data_and_hole() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/small", b"hello");
    let fd = p.open(b"/small", O_RDONLY, 0).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(0));
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Ok(5), "EOF is a hole");
    assert_eq!(p.lseek(fd, 5, SEEK_DATA), Err(Errno::ENXIO));
    assert_eq!(p.lseek(fd, 5, SEEK_HOLE), Err(Errno::ENXIO));
    assert_eq!(p.lseek(fd, 6, SEEK_HOLE), Err(Errno::ENXIO));
    assert_eq!(p.lseek(fd, -1, SEEK_DATA), Err(Errno::ENXIO));
    assert_eq!(p.lseek(fd, -1, SEEK_HOLE), Err(Errno::ENXIO));
    p.close(fd).unwrap();

    // A sparse file: data in pages 2 and 4 only.
    let fd = p.open(b"/sparse", O_CREAT | O_RDWR, 0o644).unwrap();
    p.pwrite(fd, &[b'a'; 10], 8192).unwrap();
    p.pwrite(fd, &[b'b'; 10], 20000).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (20010, 16));
    let cases: &[(i64, SysResult<i64>, SysResult<i64>)] = &[
        (0, Ok(8192), Ok(0)),
        (4095, Ok(8192), Ok(4095)),
        (4096, Ok(8192), Ok(4096)),
        (8191, Ok(8192), Ok(8191)),
        (8192, Ok(8192), Ok(12288)),
        (8201, Ok(8201), Ok(12288)),
        (12287, Ok(12287), Ok(12288)),
        (12288, Ok(16384), Ok(12288)),
        (16384, Ok(16384), Ok(20010)),
        (20000, Ok(20000), Ok(20010)),
        (20009, Ok(20009), Ok(20010)),
        (20010, Err(Errno::ENXIO), Err(Errno::ENXIO)),
    ];
    for &(off, data, hole) in cases {
        assert_eq!(p.lseek(fd, off, SEEK_DATA), data, "SEEK_DATA {off}");
        assert_eq!(p.lseek(fd, off, SEEK_HOLE), hole, "SEEK_HOLE {off}");
    }
    // The offset is set to the result.
    p.lseek(fd, 0, SEEK_DATA).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(8192));
    // Extending adds a hole, not data.
    p.ftruncate(fd, 40000).unwrap();
    assert_eq!(p.lseek(fd, 20000, SEEK_HOLE), Ok(20480));
    assert_eq!(p.lseek(fd, 24576, SEEK_DATA), Err(Errno::ENXIO));
    assert_eq!(p.fstat(fd).unwrap().blocks, 16);
    p.close(fd).unwrap();
}

// -------------------------------------------------------------- truncate

#[test]
fn ftruncate_shrinks_and_extends_with_zeros() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"0123456789");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    let before = p.fstat(fd).unwrap();
    tick();
    p.ftruncate(fd, 4).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!(st.size, 4);
    assert!(st.mtime > before.mtime && st.ctime > before.ctime);
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR),
        Ok(0),
        "ftruncate leaves the offset"
    );
    // Extending shows zeros, not the old bytes.
    p.ftruncate(fd, 8).unwrap();
    assert_eq!(read_file(&p, b"/f"), b"0123\0\0\0\0");
    // Same size still updates the times.
    let before = p.fstat(fd).unwrap();
    tick();
    p.ftruncate(fd, 8).unwrap();
    assert!(p.fstat(fd).unwrap().mtime > before.mtime);
    // Sparse extension allocates nothing.
    p.ftruncate(fd, 0).unwrap();
    p.ftruncate(fd, 1 << 20).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (1 << 20, 0));
    p.ftruncate(fd, MAX).unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, MAX);
    p.close(fd).unwrap();
}

#[test]
fn ftruncate_errors() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    p.mkdir(b"/d", 0o755).unwrap();
    let rw = p.open(b"/f", O_RDWR, 0).unwrap();
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    let dir = p.open(b"/d", O_RDONLY, 0).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.ftruncate(rw, -1), Err(Errno::EINVAL));
    assert_eq!(p.ftruncate(ro, 0), Err(Errno::EINVAL));
    assert_eq!(p.ftruncate(ro, -1), Err(Errno::EINVAL));
    assert_eq!(p.ftruncate(dir, 0), Err(Errno::EINVAL));
    assert_eq!(p.ftruncate(path, 0), Err(Errno::EBADF));
    assert_eq!(p.ftruncate(77, 0), Err(Errno::EBADF));
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
}

#[test]
fn truncate_by_path() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abcdef");
    p.mkdir(b"/d", 0o755).unwrap();
    p.symlink(b"f", b"/lf").unwrap();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let before = p.stat(b"/f").unwrap();
    tick();
    p.truncate(b"/f", 2).unwrap();
    let st = p.stat(b"/f").unwrap();
    assert_eq!(st.size, 2);
    assert!(st.mtime > before.mtime && st.ctime > before.ctime);
    p.truncate(b"/lf", 5).unwrap();
    assert_eq!(read_file(&p, b"/f"), b"ab\0\0\0", "through a symlink");
    let before = p.stat(b"/f").unwrap();
    tick();
    p.truncate(b"/f", 5).unwrap();
    assert!(
        p.stat(b"/f").unwrap().mtime > before.mtime,
        "even to the same size"
    );
    // Errors.
    assert_eq!(p.truncate(b"/d", 0), Err(Errno::EISDIR));
    assert_eq!(p.truncate(b"/f", -1), Err(Errno::EINVAL));
    assert_eq!(p.truncate(b"/fifo", 0), Err(Errno::EINVAL));
    assert_eq!(p.truncate(b"/nx", 0), Err(Errno::ENOENT));
    assert_eq!(p.truncate(b"", 0), Err(Errno::ENOENT));
    assert_eq!(p.truncate(b"/f/", 0), Err(Errno::ENOTDIR));
    assert_eq!(p.truncate(b"/f/x", 0), Err(Errno::ENOTDIR));
    assert_eq!(p.truncate(&[b'a'; 256], 0), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.stat(b"/f").unwrap().size, 5);
}

#[test]
fn truncate_keeps_open_readers_consistent() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"0123456789");
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.lseek(fd, 8, SEEK_SET).unwrap();
    p.truncate(b"/f", 3).unwrap();
    let mut b = [0u8; 4];
    assert_eq!(p.read(fd, &mut b), Ok(0), "the offset is past the new end");
    assert_eq!(p.pread(fd, &mut b, 0), Ok(3));
    p.close(fd).unwrap();
}

// ------------------------------------------------------------------ sync

#[test]
fn fsync_fdatasync() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"abc");
    p.mkdir(b"/d", 0o755).unwrap();
    for (path, flags) in [(&b"/f"[..], O_RDWR), (b"/f", O_RDONLY), (b"/d", O_RDONLY)] {
        let fd = p.open(path, flags, 0).unwrap();
        assert_eq!(p.fsync(fd), Ok(()));
        assert_eq!(p.fdatasync(fd), Ok(()));
        p.close(fd).unwrap();
        assert_eq!(p.fsync(fd), Err(Errno::EBADF));
        assert_eq!(p.fdatasync(fd), Err(Errno::EBADF));
    }
    assert_eq!(p.fsync(-1), Err(Errno::EBADF));
}

// ----------------------------------------------------------------- FIFOs

#[test]
fn fifo_io() {
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fd = p.open(b"/fifo", O_RDWR | O_NONBLOCK, 0).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(p.lseek(fd, 0, SEEK_SET), Err(Errno::ESPIPE));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Err(Errno::ESPIPE));
    assert_eq!(p.pread(fd, &mut b, 0), Err(Errno::ESPIPE));
    assert_eq!(p.pwrite(fd, b"x", 0), Err(Errno::ESPIPE));
    assert_eq!(p.fsync(fd), Err(Errno::EINVAL));
    assert_eq!(p.ftruncate(fd, 0), Err(Errno::EINVAL));
    assert_eq!(p.read(fd, &mut b), Err(Errno::EAGAIN));
}

#[test]
fn fifo_data_transfer() {
    let (_vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fd = p.open(b"/fifo", O_RDWR | O_NONBLOCK, 0).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(p.write(fd, b"x"), Ok(1));
    assert_eq!(p.read(fd, &mut b), Ok(1));
    assert_eq!(&b, b"x");
}

// ----------------------------------------------------------- space limits

#[test]
fn enospc_blocks_at_the_size_limit() {
    let (_vfs, p) = limited(64 * 4096, 1 << 20);
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let page = [b'x'; 4096];
    for i in 0..64 {
        assert_eq!(p.write(fd, &page), Ok(4096), "page {i}");
    }
    assert_eq!(p.statfs(b"/").unwrap().f_bfree, 0);
    assert_eq!(p.write(fd, &page), Err(Errno::ENOSPC));
    assert_eq!(p.write(fd, b"y"), Err(Errno::ENOSPC));
    assert_eq!(p.fstat(fd).unwrap().size, 64 * 4096);
    // Rewriting allocated pages needs no space; a sparse extension neither.
    assert_eq!(p.pwrite(fd, b"z", 100), Ok(1));
    p.ftruncate(fd, 1 << 30).unwrap();
    assert_eq!(p.pwrite(fd, b"z", 1 << 29), Err(Errno::ENOSPC));
    // Freeing space makes writes work again.
    p.ftruncate(fd, 0).unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_bfree, 64);
    assert_eq!(p.write(fd, &page), Ok(4096));
    p.close(fd).unwrap();
}

#[test]
fn enospc_partial_write() {
    let (_vfs, p) = limited(64 * 4096, 1 << 20);
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, &vec![b'x'; 60 * 4096]), Ok(60 * 4096));
    assert_eq!(p.write(fd, &vec![b'x'; 8 * 4096]), Ok(4 * 4096));
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.size, st.blocks), (64 * 4096, 64 * 8));
    assert_eq!(p.write(fd, b"y"), Err(Errno::ENOSPC));
}

#[test]
fn enospc_small_block_limit_is_exact() {
    let (_vfs, p) = limited(16 * 4096, 1 << 20);
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let page = [b'x'; 4096];
    for _ in 0..16 {
        assert_eq!(p.write(fd, &page), Ok(4096));
    }
    assert_eq!(p.write(fd, &page), Err(Errno::ENOSPC));
}

#[test]
fn enospc_inode_limit() {
    let (_vfs, p) = limited(1 << 30, 4);
    for i in 0..3 {
        let fd = p
            .open(format!("/n{i}").as_bytes(), O_CREAT | O_RDWR, 0o644)
            .unwrap();
        p.close(fd).unwrap();
    }
    assert_eq!(p.open(b"/n3", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOSPC));
    assert_eq!(p.mkdir(b"/d", 0o755), Err(Errno::ENOSPC));
    assert_eq!(p.symlink(b"x", b"/l"), Err(Errno::ENOSPC));
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/p", S_IFIFO | 0o644, 0),
        Err(Errno::ENOSPC)
    );
    assert_eq!(p.link(b"/n0", b"/h"), Err(Errno::ENOSPC));
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, 0);
    p.unlink(b"/n2").unwrap();
    let fd = p.open(b"/n3", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
}

/// open(O_CREAT|O_EXCL) makes its inode before taking the directory lock
/// when the instance is far from its inode limit: an EEXIST must give
/// that inode back (object counts and statfs as before), the new file gets
/// its owner, group and mode from the usual rules (setgid directory,
/// umask), and at the limit the errno order stays the kernel's (EEXIST
/// before ENOSPC).
#[test]
fn exclusive_creates_return_what_they_did_not_use() {
    let (vfs, p) = limited(1 << 30, 1 << 20);
    let fd = p.open(b"/f", O_CREAT | O_EXCL | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    vfs.flush();
    let (counts, free) = (vfs.object_counts(), p.statfs(b"/").unwrap().f_ffree);
    for _ in 0..3 {
        assert_eq!(
            p.open(b"/f", O_CREAT | O_EXCL | O_RDWR, 0o644),
            Err(Errno::EEXIST)
        );
    }
    vfs.flush();
    assert_eq!(vfs.object_counts(), counts, "the unused inodes were freed");
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, free, "and unreserved");
    // A cached miss is revived by the create; its prepared dentry goes.
    assert_eq!(p.stat(b"/neg"), Err(Errno::ENOENT));
    vfs.flush();
    let with_negative = vfs.object_counts();
    let fd = p.open(b"/neg", O_CREAT | O_EXCL | O_RDWR, 0o600).unwrap();
    p.close(fd).unwrap();
    vfs.flush();
    let after = vfs.object_counts();
    assert_eq!(after.dentries, with_negative.dentries, "negative revived");
    assert_eq!(after.inodes, with_negative.inodes + 1);
    assert_eq!(p.stat(b"/neg").unwrap().mode, S_IFREG | 0o600);
    p.mkdir(b"/sg", 0o2777).unwrap();
    p.chown(b"/sg", 0, 77).unwrap();
    p.chmod(b"/sg", 0o2777).unwrap();
    let user = p.with_cred(vfscale::Cred::user(1000, 1000, &[])).unwrap();
    user.umask(0o027);
    let fd = user
        .open(b"/sg/new", O_CREAT | O_EXCL | O_RDWR, 0o666)
        .unwrap();
    user.close(fd).unwrap();
    let st = p.stat(b"/sg/new").unwrap();
    assert_eq!((st.uid, st.gid), (1000, 77), "setgid directory's group");
    assert_eq!(st.mode, S_IFREG | 0o640, "mode under the umask");
    drop(user);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
    // At the limit: the existing name wins over the full instance.
    let (_vfs, p) = limited(1 << 30, 2);
    let fd = p.open(b"/f", O_CREAT | O_EXCL | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert_eq!(
        p.open(b"/f", O_CREAT | O_EXCL | O_RDWR, 0o644),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        p.open(b"/g", O_CREAT | O_EXCL | O_RDWR, 0o644),
        Err(Errno::ENOSPC)
    );
}
