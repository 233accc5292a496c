//! Every FUSE operation through real syscalls on a mount, with its errors.

mod common;

use common::*;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use vfscale::abi::{O_RDONLY, O_WRONLY};
use vfscale::ProcessApi;

#[test]
fn files_dirs_links_and_their_errors() {
    let Some(m) = mount() else { return };
    let d = m.p("d");
    fs::create_dir(&d).unwrap();
    assert_eq!(errno(fs::create_dir(&d)), libc::EEXIST);
    assert_eq!(errno(fs::create_dir(m.p("nope/x"))), libc::ENOENT);
    assert!(fs::metadata(&d).unwrap().is_dir());

    // create, write, read back, append, pread via seek
    let f = d.join("f");
    fs::write(&f, b"hello world").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"hello world");
    let mut h = fs::OpenOptions::new().append(true).open(&f).unwrap();
    h.write_all(b"!").unwrap();
    drop(h);
    let mut h = fs::File::open(&f).unwrap();
    h.seek(SeekFrom::Start(6)).unwrap();
    let mut s = String::new();
    h.read_to_string(&mut s).unwrap();
    assert_eq!(s, "world!");
    assert_eq!(
        errno(fs::OpenOptions::new().write(true).create_new(true).open(&f)),
        libc::EEXIST
    );
    assert_eq!(errno(fs::File::open(d.join("missing"))), libc::ENOENT);
    assert_eq!(errno(fs::read_dir(&f)), libc::ENOTDIR);
    assert_eq!(errno(fs::File::create(f.join("x"))), libc::ENOTDIR);

    // getattr / setattr: chmod, chown, truncate, utimens
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o640);
    std::os::unix::fs::chown(&f, Some(1234), Some(5678)).unwrap();
    let md = fs::metadata(&f).unwrap();
    assert_eq!((md.uid(), md.gid()), (1234, 5678));
    let h = fs::OpenOptions::new().write(true).open(&f).unwrap();
    h.set_len(3).unwrap();
    drop(h);
    assert_eq!(fs::read(&f).unwrap(), b"hel");
    let c = cstr(&f);
    let times = [
        libc::timespec {
            tv_sec: 1000,
            tv_nsec: 5,
        },
        libc::timespec {
            tv_sec: 2000,
            tv_nsec: 7,
        },
    ];
    // SAFETY: valid path and times array.
    assert_eq!(
        unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) },
        0
    );
    let md = fs::metadata(&f).unwrap();
    assert_eq!((md.atime(), md.atime_nsec()), (1000, 5));
    assert_eq!((md.mtime(), md.mtime_nsec()), (2000, 7));
    // truncate(2) by path
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::truncate(c.as_ptr(), 10) }, 0);
    assert_eq!(fs::metadata(&f).unwrap().len(), 10);

    // hard links, symlinks, readlink
    fs::hard_link(&f, d.join("g")).unwrap();
    assert_eq!(fs::metadata(&f).unwrap().nlink(), 2);
    assert_eq!(
        fs::metadata(d.join("g")).unwrap().ino(),
        fs::metadata(&f).unwrap().ino()
    );
    assert_eq!(errno(fs::hard_link(&f, d.join("g"))), libc::EEXIST);
    assert_eq!(errno(fs::hard_link(&d, m.p("dirlink"))), libc::EPERM);
    symlink("f", d.join("s")).unwrap();
    assert_eq!(fs::read_link(d.join("s")).unwrap().to_str(), Some("f"));
    assert_eq!(fs::read(d.join("s")).unwrap().len(), 10);
    assert_eq!(errno(fs::read_link(&f)), libc::EINVAL);
    assert!(fs::symlink_metadata(d.join("s"))
        .unwrap()
        .file_type()
        .is_symlink());

    // mknod: fifo
    let fifo = cstr(&d.join("fifo"));
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    assert!(fs::metadata(d.join("fifo")).unwrap().file_type().is_fifo());

    // rename, with flags
    fs::rename(d.join("g"), d.join("h")).unwrap();
    assert_eq!(errno(fs::metadata(d.join("g"))), libc::ENOENT);
    fs::create_dir(m.p("e")).unwrap();
    fs::rename(d.join("h"), m.p("e/h")).unwrap();
    assert_eq!(fs::read(m.p("e/h")).unwrap().len(), 10);
    let (a, b) = (cstr(&m.p("e/h")), cstr(&d.join("s")));
    // SAFETY: valid paths.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    assert_eq!(r, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EEXIST)
    );
    // SAFETY: valid paths.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(r, 0);
    assert!(fs::symlink_metadata(m.p("e/h"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::symlink_metadata(d.join("s")).unwrap().is_file());
    assert_eq!(errno(fs::rename(&d, d.join("sub"))), libc::EINVAL);

    // unlink / rmdir errors
    assert_eq!(errno(fs::remove_dir(&d)), libc::ENOTEMPTY);
    assert_eq!(errno(fs::remove_file(&d)), libc::EISDIR);
    assert_eq!(errno(fs::remove_dir(&f)), libc::ENOTDIR);
    fs::remove_dir_all(&d).unwrap();
    assert_eq!(errno(fs::metadata(&d)), libc::ENOENT);

    // statfs
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let root = cstr(m.path());
    // SAFETY: valid path and out-pointer.
    assert_eq!(unsafe { libc::statfs(root.as_ptr(), &mut st) }, 0);
    assert!(st.f_blocks > 0 && st.f_files > 0);
    assert_eq!(st.f_namelen, 255);
}

#[test]
fn open_files_fsync_lseek_and_unlinked_open_file() {
    let Some(m) = mount() else { return };
    let f = m.p("data");
    let mut h = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&f)
        .unwrap();
    h.write_all(&[7u8; 10000]).unwrap();
    h.sync_all().unwrap();
    h.sync_data().unwrap();
    // Unlinked while open: still readable and writable.
    fs::remove_file(&f).unwrap();
    assert_eq!(errno(fs::metadata(&f)), libc::ENOENT);
    h.seek(SeekFrom::Start(9998)).unwrap();
    let mut b = [0u8; 10];
    assert_eq!(h.read(&mut b).unwrap(), 2);
    assert_eq!(h.metadata().unwrap().nlink(), 0);
    // Sparse file: SEEK_DATA / SEEK_HOLE through the mount.
    let g = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.p("sparse"))
        .unwrap();
    use std::os::unix::fs::FileExt;
    g.write_at(b"x", 1 << 20).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: valid descriptor.
    let hole = unsafe { libc::lseek(g.as_raw_fd(), 0, libc::SEEK_HOLE) };
    // SAFETY: valid descriptor.
    let data = unsafe { libc::lseek(g.as_raw_fd(), 0, libc::SEEK_DATA) };
    assert_eq!(hole, 0);
    assert!(data > 0 && data <= 1 << 20, "SEEK_DATA gave {data}");
    // SAFETY: valid descriptor.
    let past = unsafe { libc::lseek(g.as_raw_fd(), (1 << 20) + 1, libc::SEEK_DATA) };
    assert_eq!(past, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ENXIO)
    );
    // O_TRUNC on open.
    fs::write(m.p("t"), b"long content").unwrap();
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(m.p("t"))
        .unwrap();
    assert_eq!(fs::metadata(m.p("t")).unwrap().len(), 0);
    // Directories cannot be opened for writing; files not as directories.
    assert_eq!(
        errno(fs::OpenOptions::new().write(true).open(m.path())),
        libc::EISDIR
    );
    assert_eq!(
        errno(
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(m.p("t"))
        ),
        libc::ENOTDIR
    );
    // fs::copy uses copy_file_range (served by the core).
    fs::write(m.p("src"), b"copy me").unwrap();
    fs::copy(m.p("src"), m.p("dst")).unwrap();
    assert_eq!(fs::read(m.p("dst")).unwrap(), b"copy me");
}

#[test]
fn mount_and_core_see_the_same_files() {
    let Some(m) = mount() else { return };
    let core = m.core();
    // Through the mount, read through the core API.
    fs::write(m.p("from-mount"), b"written by the kernel").unwrap();
    let fd = core.open(b"/from-mount", O_RDONLY, 0).unwrap();
    let mut buf = [0u8; 64];
    let n = core.read(fd, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"written by the kernel");
    core.close(fd).unwrap();
    // Through the core, read through the mount (never looked up before).
    let fd = core
        .open(b"/from-core", vfscale::abi::O_CREAT | O_WRONLY, 0o644)
        .unwrap();
    core.write(fd, b"written by the core").unwrap();
    core.close(fd).unwrap();
    core.mkdir(b"/core-dir", 0o755).unwrap();
    assert_eq!(fs::read(m.p("from-core")).unwrap(), b"written by the core");
    assert!(fs::metadata(m.p("core-dir")).unwrap().is_dir());
    let st = core.stat(b"/from-mount").unwrap();
    assert_eq!(
        fs::metadata(m.p("from-mount")).unwrap().len(),
        st.size as u64
    );
}

#[test]
fn access_checks_through_the_core() {
    let Some(m) = mount() else { return };
    fs::write(m.p("x"), b"#!/bin/sh\nexit 3\n").unwrap();
    let c = cstr(&m.p("x"));
    // SAFETY: valid path.
    assert_eq!(
        unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) },
        0
    );
    fs::set_permissions(m.p("x"), fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::access(c.as_ptr(), libc::X_OK) }, 0);
    // Executing a script that lives on the mount.
    let st = std::process::Command::new(m.p("x")).status().unwrap();
    assert_eq!(st.code(), Some(3));
}

#[test]
fn unmount_while_busy_is_ebusy_then_succeeds() {
    let Some(mut m) = mount() else { return };
    fs::write(m.p("busy"), b"x").unwrap();
    let h = fs::File::open(m.p("busy")).unwrap();
    let mounted = m.mounted.as_mut().unwrap();
    let e = mounted.unmount().expect_err("busy mount must not unmount");
    assert_eq!(e.raw_os_error(), Some(libc::EBUSY));
    assert!(is_mounted(m.path()));
    // Still served after the refused unmount.
    assert_eq!(fs::read(m.p("busy")).unwrap(), b"x");
    drop(h);
    unmount_once_idle(m.mounted.as_mut().unwrap());
    assert!(!is_mounted(m.path()));
    assert!(!m.mounted.as_ref().unwrap().is_served());
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

#[test]
fn xattrs_through_the_mount() {
    let Some(m) = mount() else { return };
    fs::write(m.p("x"), b"data").unwrap();
    let p = cstr(&m.p("x"));
    let set = |name: &std::ffi::CStr, v: &[u8], flags: i32| {
        // SAFETY: valid path, name and value buffer.
        unsafe { libc::setxattr(p.as_ptr(), name.as_ptr(), v.as_ptr().cast(), v.len(), flags) }
    };
    assert_eq!(set(c"user.color", b"blue", 0), 0);
    assert_eq!(set(c"user.color", b"red", libc::XATTR_CREATE), -1);
    assert_eq!(last_errno(), libc::EEXIST);
    assert_eq!(set(c"user.none", b"x", libc::XATTR_REPLACE), -1);
    assert_eq!(last_errno(), libc::ENODATA);
    assert_eq!(set(c"trusted.t", b"1", 0), 0);
    assert_eq!(set(c"bogus.t", b"1", 0), -1);
    assert_eq!(last_errno(), libc::EOPNOTSUPP);
    let mut buf = [0u8; 64];
    // SAFETY: valid path, name and buffer.
    let n = unsafe {
        libc::getxattr(
            p.as_ptr(),
            c"user.color".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert_eq!(&buf[..n as usize], b"blue");
    // SAFETY: size query with a null buffer.
    let n = unsafe { libc::getxattr(p.as_ptr(), c"user.color".as_ptr(), std::ptr::null_mut(), 0) };
    assert_eq!(n, 4);
    // SAFETY: a too-small buffer.
    let n = unsafe {
        libc::getxattr(
            p.as_ptr(),
            c"user.color".as_ptr(),
            buf.as_mut_ptr().cast(),
            2,
        )
    };
    assert_eq!((n, last_errno()), (-1, libc::ERANGE));
    // SAFETY: missing attribute.
    let n = unsafe {
        libc::getxattr(
            p.as_ptr(),
            c"user.nope".as_ptr(),
            buf.as_mut_ptr().cast(),
            64,
        )
    };
    assert_eq!((n, last_errno()), (-1, libc::ENODATA));
    // SAFETY: valid path and buffer.
    let n = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(&buf[..n as usize], b"user.color\0trusted.t\0");
    // SAFETY: valid path and name.
    assert_eq!(
        unsafe { libc::removexattr(p.as_ptr(), c"user.color".as_ptr()) },
        0
    );
    // SAFETY: valid path and name.
    assert_eq!(
        unsafe { libc::removexattr(p.as_ptr(), c"user.color".as_ptr()) },
        -1
    );
    assert_eq!(last_errno(), libc::ENODATA);
    // The core sees what the kernel set.
    let mut b = [0u8; 8];
    assert_eq!(m.core().getxattr(b"/x", b"trusted.t", &mut b), Ok(1));
    // user.* on a symlink: EPERM.
    symlink("x", m.p("l")).unwrap();
    let l = cstr(&m.p("l"));
    // SAFETY: valid path, name and value.
    let r = unsafe { libc::lsetxattr(l.as_ptr(), c"user.a".as_ptr(), b"v".as_ptr().cast(), 1, 0) };
    assert_eq!((r, last_errno()), (-1, libc::EPERM));
}

/// Append mode changed by F_SETFL after the open: the kernel keeps the
/// change and sends the status with each WRITE, and the server writes
/// where that says (found by `mount_diff.rs` over the ring: the pwrite at
/// offset 1 after O_APPEND was cleared was appended).
#[test]
fn append_mode_follows_fcntl_after_the_open() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let Some(m) = mount() else { return };
    let f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(m.p("log"))
        .unwrap();
    f.write_all_at(b"xy", 0).unwrap();
    // SAFETY: a valid descriptor; F_SETFL with no flags clears O_APPEND.
    assert_eq!(unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, 0) }, 0);
    f.write_all_at(b"a", 1).unwrap();
    assert_eq!(fs::read(m.p("log")).unwrap(), b"xa");
    let g = fs::OpenOptions::new().write(true).open(m.p("log")).unwrap();
    // SAFETY: as above; O_APPEND set after the open.
    assert_eq!(
        unsafe { libc::fcntl(g.as_raw_fd(), libc::F_SETFL, libc::O_APPEND) },
        0
    );
    g.write_all_at(b"!", 0).unwrap();
    assert_eq!(fs::read(m.p("log")).unwrap(), b"xa!");
}

#[test]
fn fallocate_and_copy_file_range_through_the_mount() {
    use std::os::fd::AsRawFd;
    let Some(m) = mount() else { return };
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.p("pre"))
        .unwrap();
    let fd = f.as_raw_fd();
    // SAFETY: valid descriptor.
    assert_eq!(unsafe { libc::fallocate(fd, 0, 0, 16384) }, 0);
    let md = f.metadata().unwrap();
    assert_eq!((md.len(), md.blocks()), (16384, 32));
    // SAFETY: valid descriptor.
    assert_eq!(
        unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 16384, 4096) },
        0
    );
    assert_eq!(f.metadata().unwrap().len(), 16384);
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: valid descriptor.
    assert_eq!(unsafe { libc::fallocate(fd, punch, 0, 8192) }, 0);
    assert!(f.metadata().unwrap().blocks() < 40);
    // SAFETY: valid descriptor.
    assert_eq!(
        unsafe { libc::fallocate(fd, libc::FALLOC_FL_ZERO_RANGE, 0, 1) },
        -1
    );
    assert_eq!(last_errno(), libc::EOPNOTSUPP);
    drop(f);
    // copy_file_range between two files on the mount, explicit offsets.
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    fs::write(m.p("src"), &data).unwrap();
    let src = fs::File::open(m.p("src")).unwrap();
    let dst = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.p("dst"))
        .unwrap();
    let (mut oi, mut oo): (i64, i64) = (100, 0);
    // SAFETY: valid descriptors and offset pointers.
    let n = unsafe {
        libc::copy_file_range(
            src.as_raw_fd(),
            &mut oi,
            dst.as_raw_fd(),
            &mut oo,
            50_000,
            0,
        )
    };
    assert_eq!(n, 50_000);
    assert_eq!((oi, oo), (50_100, 50_000));
    drop(dst);
    assert_eq!(fs::read(m.p("dst")).unwrap(), &data[100..50_100]);
}

#[test]
fn writeback_cache_partial_writes_appends_and_write_only_opens() {
    let Some(m) = mount_config(vfscale_fuse::MountConfig {
        writeback_cache: true,
        ..vfscale_fuse::MountConfig::default()
    }) else {
        return;
    };
    let core = m.core();
    let read_core = |path: &[u8]| {
        let fd = core.open(path, O_RDONLY, 0).unwrap();
        let mut buf = [0u8; 256];
        let n = core.read(fd, &mut buf).unwrap();
        core.close(fd).unwrap();
        buf[..n].to_vec()
    };
    // A partial-page write through an O_WRONLY open: the kernel must read
    // the page first, which works only because the open was served O_RDWR.
    fs::write(m.p("f"), b"hello world").unwrap();
    let mut h = fs::OpenOptions::new().write(true).open(m.p("f")).unwrap();
    h.seek(SeekFrom::Start(3)).unwrap();
    h.write_all(b"XY").unwrap();
    h.sync_all().unwrap();
    drop(h);
    assert_eq!(read_core(b"/f"), b"helXY world");
    // O_APPEND: the kernel places the writes; dropping the flag on our side
    // must not move or duplicate them.
    let mut h = fs::OpenOptions::new().append(true).open(m.p("f")).unwrap();
    h.write_all(b"!1").unwrap();
    h.write_all(b"!2").unwrap();
    drop(h);
    assert_eq!(fs::read(m.p("f")).unwrap(), b"helXY world!1!2");
    assert_eq!(read_core(b"/f"), b"helXY world!1!2");
    // A file its owner may write but not read: O_WRONLY still opens (the
    // O_RDWR attempt is refused, the fallback is not), and a whole-file
    // write (no partial page to read) reaches the namespace.
    fs::write(m.p("wo"), b"").unwrap();
    std::os::unix::fs::chown(m.p("wo"), Some(4242), Some(4242)).unwrap();
    fs::set_permissions(m.p("wo"), fs::Permissions::from_mode(0o200)).unwrap();
    core.chmod(b"/", 0o755).unwrap();
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("printf 'only writes' > '{}'", m.p("wo").display()))
        .uid(4242)
        .gid(4242)
        .output()
        .expect("run /bin/sh");
    assert!(
        out.status.success(),
        "write-only open as the owner: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_core(b"/wo"), b"only writes");
    // ... but a write into part of a cached page needs that page read
    // first, through a descriptor that may not read (COMPATIBILITY.md).
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "printf Z | dd of='{}' bs=1 seek=2 conv=notrunc,fsync 2>&1",
            m.p("wo").display()
        ))
        .uid(4242)
        .gid(4242)
        .output()
        .expect("run /bin/sh");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && said.contains("Bad file descriptor"),
        "partial-page write to a write-only file: {said}"
    );
    assert_eq!(read_core(b"/wo"), b"only writes");
}

/// True if `p` does not exist (ENOENT).
/// FS_IOC_GETFLAGS through a mount: `(ioctl's result, flags)`.
fn getflags(fd: i32) -> (i32, i32) {
    let mut flags: libc::c_int = -1;
    // SAFETY: FS_IOC_GETFLAGS writes one int.
    let r = unsafe { libc::ioctl(fd, libc::FS_IOC_GETFLAGS, &mut flags) };
    (r, flags)
}

fn setflags(fd: i32, flags: u32) -> i32 {
    let flags = flags as libc::c_int;
    // SAFETY: FS_IOC_SETFLAGS reads one int.
    match unsafe { libc::ioctl(fd, libc::FS_IOC_SETFLAGS, &flags) } {
        0 => 0,
        _ => last_errno(),
    }
}

/// chattr and lsattr through the mount (the kernel forwards them as
/// FUSE_IOCTL on a file it opens for the purpose): the core keeps and
/// enforces the flags, and an append-only file still opens for appending
/// with the writeback cache on, where the server otherwise drops O_APPEND.
#[test]
fn inode_flags_through_the_mount() {
    use std::os::fd::AsRawFd;
    use vfscale::abi::{
        FsXattr, FSXATTR_SIZE, FS_APPEND_FL, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR, FS_NODUMP_FL,
        FS_XFLAG_APPEND, FS_XFLAG_NODUMP,
    };
    for writeback_cache in [false, true] {
        let Some(m) = mount_config(vfscale_fuse::MountConfig {
            writeback_cache,
            ..vfscale_fuse::MountConfig::default()
        }) else {
            return;
        };
        let f = m.p("flagged");
        fs::write(&f, b"x").unwrap();
        let h = fs::File::open(&f).unwrap();
        assert_eq!(getflags(h.as_raw_fd()), (0, 0));
        assert_eq!(setflags(h.as_raw_fd(), FS_APPEND_FL | FS_NODUMP_FL), 0);
        let want = (FS_APPEND_FL | FS_NODUMP_FL) as i32;
        assert_eq!(getflags(h.as_raw_fd()), (0, want));
        // The same flags as an fsxattr record.
        let mut rec = [0u8; FSXATTR_SIZE];
        // SAFETY: FS_IOC_FSGETXATTR writes a 28-byte record.
        let r = unsafe { libc::ioctl(h.as_raw_fd(), FS_IOC_FSGETXATTR as _, rec.as_mut_ptr()) };
        assert_eq!(r, 0);
        let x = FsXattr::from_bytes(&rec).unwrap();
        assert_eq!(x.xflags, FS_XFLAG_APPEND | FS_XFLAG_NODUMP);
        // The core has them, and refuses what they forbid.
        let core = m.core();
        let cfd = core.open(b"/flagged", O_RDONLY, 0).unwrap();
        assert_eq!(core.fs_ioc_getflags(cfd), Ok(want as u32));
        core.close(cfd).unwrap();
        assert_eq!(
            errno(fs::OpenOptions::new().write(true).open(&f)),
            libc::EPERM
        );
        assert_eq!(errno(fs::remove_file(&f)), libc::EPERM);
        let mut a = fs::OpenOptions::new().append(true).open(&f).unwrap();
        a.write_all(b"y").unwrap();
        drop(a);
        assert_eq!(fs::read(&f).unwrap(), b"xy");
        // Only the file's owner or root; unsupported flags refused.
        assert_eq!(setflags(h.as_raw_fd(), 0x8), libc::EOPNOTSUPP);
        // Cleared through an fsxattr record.
        let none = FsXattr::default().to_bytes();
        // SAFETY: FS_IOC_FSSETXATTR reads a 28-byte record.
        let r = unsafe { libc::ioctl(h.as_raw_fd(), FS_IOC_FSSETXATTR as _, none.as_ptr()) };
        assert_eq!(r, 0);
        assert_eq!(getflags(h.as_raw_fd()), (0, 0));
        drop(h);
        fs::remove_file(&f).unwrap();
    }
}

fn gone(p: &std::path::Path) -> bool {
    fs::metadata(p).err().and_then(|e| e.raw_os_error()) == Some(libc::ENOENT)
}

/// Polls `cond` for up to 5 s: kernel invalidation is asynchronous.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("never happened: {what}");
}

#[test]
fn core_changes_invalidate_the_kernels_cached_entries() {
    // Long TTLs: without invalidation the mount would show the cached
    // answers for a minute.
    let ttl = std::time::Duration::from_secs(60);
    let Some(m) = mount_config(vfscale_fuse::MountConfig {
        ttls: vfscale_fuse::Ttls {
            entry: ttl,
            attr: ttl,
        },
        ..vfscale_fuse::MountConfig::default()
    }) else {
        return;
    };
    let core = m.core();
    // A negative entry cached by the kernel, then the name created by the
    // core: the mount must see it.
    assert_eq!(errno(fs::metadata(m.p("late"))), libc::ENOENT);
    core.mkdir(b"/late", 0o755).unwrap();
    eventually("a core mkdir visible through the mount", || {
        fs::metadata(m.p("late")).is_ok_and(|md| md.is_dir())
    });
    // A positive entry (in a subdirectory) removed and renamed by the core.
    fs::write(m.p("late/f"), b"x").unwrap();
    assert!(fs::metadata(m.p("late/f")).is_ok());
    let fd = core
        .open(b"/late/g", vfscale::abi::O_CREAT | O_WRONLY, 0o644)
        .unwrap();
    core.close(fd).unwrap();
    assert!(fs::metadata(m.p("late/g")).is_ok());
    core.unlink(b"/late/f").unwrap();
    eventually("a core unlink visible through the mount", || {
        gone(&m.p("late/f"))
    });
    core.rename(b"/late/g", b"/late/h").unwrap();
    eventually("a core rename visible through the mount", || {
        gone(&m.p("late/g")) && fs::metadata(m.p("late/h")).is_ok()
    });
    // Changes through the mount itself still work (and are not echoed
    // back as invalidations of what the kernel just did).
    fs::remove_file(m.p("late/h")).unwrap();
    fs::remove_dir(m.p("late")).unwrap();
    assert_eq!(errno(fs::metadata(m.p("late"))), libc::ENOENT);
}

/// Mounts with one-minute entry and attribute TTLs: without invalidation
/// the mount would show its cached answers for a minute.
fn long_ttl_mount() -> Option<TestMount> {
    let ttl = std::time::Duration::from_secs(60);
    mount_config(vfscale_fuse::MountConfig {
        ttls: vfscale_fuse::Ttls {
            entry: ttl,
            attr: ttl,
        },
        ..vfscale_fuse::MountConfig::default()
    })
}

#[test]
fn core_attribute_and_data_changes_invalidate_the_kernels_cached_inode() {
    let Some(m) = long_ttl_mount() else { return };
    let core = m.core();
    let f = m.p("f");
    fs::write(&f, b"hello").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    let md = fs::metadata(&f).unwrap();
    assert_eq!((md.mode() & 0o7777, md.len()), (0o644, 5));

    core.chmod(b"/f", 0o600).unwrap();
    eventually("a core chmod visible through the mount", || {
        fs::metadata(&f).unwrap().mode() & 0o7777 == 0o600
    });
    core.chown(b"/f", 1234, 5678).unwrap();
    eventually("a core chown visible through the mount", || {
        let md = fs::metadata(&f).unwrap();
        (md.uid(), md.gid()) == (1234, 5678)
    });
    let t = vfscale::abi::Timespec {
        sec: 1_000_000,
        nsec: 0,
    };
    core.utimensat(vfscale::abi::AT_FDCWD, b"/f", Some([t, t]), 0)
        .unwrap();
    eventually("a core utimes visible through the mount", || {
        fs::metadata(&f).unwrap().mtime() == 1_000_000
    });
    // Data: a longer file written by the core. Without invalidation the
    // kernel would bound reads by its cached size (5) for a minute.
    let fd = core.open(b"/f", O_WRONLY, 0).unwrap();
    core.pwrite(fd, b"HELLO, world", 0).unwrap();
    core.close(fd).unwrap();
    eventually("a core write visible through the mount", || {
        fs::read(&f).unwrap() == b"HELLO, world"
    });
    core.truncate(b"/f", 2).unwrap();
    eventually("a core truncate visible through the mount", || {
        fs::metadata(&f).unwrap().len() == 2 && fs::read(&f).unwrap() == b"HE"
    });
    // Changes through the mount itself are not echoed back (they still
    // show, from the kernel's own cache update).
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o640);
    // An access ACL set by the core changes the mode's group class (to
    // its mask, rwx here); it is reported to the kernel as a chmod.
    use vfscale::cred::acl::{value_of, ACL_UNDEFINED_ID as U};
    let acl = value_of(&[
        (1, 6, U),
        (2, 7, 1000),
        (4, 4, U),
        (0x10, 7, U),
        (0x20, 0, U),
    ]);
    core.setxattr(b"/f", b"system.posix_acl_access", &acl, 0)
        .unwrap();
    eventually("a core setfacl visible through the mount", || {
        fs::metadata(&f).unwrap().mode() & 0o7777 == 0o670
    });
}

/// The names in `dir` as the mount lists them, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn cached_listings_follow_changes_made_beside_and_through_the_mount() {
    let Some(m) = long_ttl_mount() else { return };
    let core = m.core();
    let d = m.p("d");
    fs::create_dir(&d).unwrap();
    for n in ["a", "b"] {
        fs::write(d.join(n), b"").unwrap();
    }
    // Listed twice: the second listing may come from the kernel's cache.
    assert_eq!(listing(&d), ["a", "b"]);
    assert_eq!(listing(&d), ["a", "b"]);
    // Beside the mount: a create, an unlink and a rename by the core.
    let fd = core
        .open(b"/d/c", vfscale::abi::O_CREAT | O_WRONLY, 0o644)
        .unwrap();
    core.close(fd).unwrap();
    eventually("a core create in a cached listing", || {
        listing(&d) == ["a", "b", "c"]
    });
    core.unlink(b"/d/a").unwrap();
    core.rename(b"/d/b", b"/d/z").unwrap();
    eventually("a core unlink and rename in a cached listing", || {
        listing(&d) == ["c", "z"]
    });
    // Through the mount: the kernel drops its own cache.
    fs::write(d.join("m"), b"").unwrap();
    assert_eq!(listing(&d), ["c", "m", "z"]);
    fs::remove_file(d.join("c")).unwrap();
    assert_eq!(listing(&d), ["m", "z"]);
}

#[test]
fn passthrough_listings_are_not_cached_by_the_kernel() {
    // The host directory changes behind vfscale: the kernel must not serve
    // a passthrough directory's listing from its cache (FOPEN_CACHE_DIR is
    // for directories whose every change the core observes).
    if mount().is_none() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir(host.path().join("d")).unwrap();
    std::fs::write(host.path().join("d/a"), b"").unwrap();
    let vfs = vfscale::Vfs::with_passthrough_root(
        vfscale::VfsConfig::default(),
        host.path(),
        vfscale::fs::passthrough::PassthroughConfig {
            ttl: std::time::Duration::ZERO,
            ..Default::default()
        },
    )
    .unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let _m = vfscale_fuse::mount(&vfs, mnt.path(), &Default::default()).unwrap();
    let d = mnt.path().join("d");
    assert_eq!(listing(&d), ["a"]);
    assert_eq!(listing(&d), ["a"]);
    std::fs::write(host.path().join("d/b"), b"").unwrap();
    assert_eq!(listing(&d), ["a", "b"], "a host create shows at once");
}

#[test]
fn passthrough_xattrs_reach_the_host_file() {
    // issue 8: extended attributes "passthrough to the host" — set through
    // the mount, stored on the host file; set on the host, read through
    // the mount.
    if mount().is_none() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    let hf = host.path().join("f");
    std::fs::write(&hf, b"data").unwrap();
    let c_host = std::ffi::CString::new(hf.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings; the value's length is passed.
    if unsafe {
        libc::setxattr(
            c_host.as_ptr(),
            c"user.probe".as_ptr(),
            b"1".as_ptr().cast(),
            1,
            0,
        )
    } != 0
    {
        println!("skipped: the host's temporary directory takes no user xattrs");
        return;
    }
    let (_vfs, mnt, _m) = mounted_passthrough(host.path());
    let c_mnt = std::ffi::CString::new(mnt.path().join("f").to_str().unwrap()).unwrap();
    // SAFETY: as above.
    let r = unsafe {
        libc::setxattr(
            c_mnt.as_ptr(),
            c"user.via".as_ptr(),
            b"mount".as_ptr().cast(),
            5,
            0,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    let get = |path: &std::ffi::CString, name: &std::ffi::CStr| {
        let mut buf = [0u8; 32];
        // SAFETY: NUL-terminated strings; the buffer's length is passed.
        let n = unsafe {
            libc::getxattr(
                path.as_ptr(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        (n >= 0).then(|| buf[..n as usize].to_vec())
    };
    assert_eq!(get(&c_host, c"user.via").as_deref(), Some(&b"mount"[..]));
    assert_eq!(get(&c_mnt, c"user.probe").as_deref(), Some(&b"1"[..]));
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::removexattr(c_mnt.as_ptr(), c"user.via".as_ptr()) },
        0
    );
    assert_eq!(get(&c_host, c"user.via"), None);
}

#[test]
fn an_unlinked_passthrough_file_stays_usable_through_the_mount() {
    // Session 22: a descriptor of a file removed through the mount keeps
    // reading and writing it (the core's description holds the host file;
    // the kernel sends its I/O with the open handle).
    if mount().is_none() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    let (_vfs, mnt, _m) = mounted_passthrough(host.path());
    let path = mnt.path().join("tmp");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(!host.path().join("tmp").exists(), "gone from the host");
    use std::io::{Read, Seek, Write};
    f.write_all(b"still here").unwrap();
    f.sync_all().unwrap();
    f.seek(std::io::SeekFrom::Start(0)).unwrap();
    let mut back = String::new();
    f.read_to_string(&mut back).unwrap();
    assert_eq!(back, "still here");
    assert_eq!(f.metadata().unwrap().len(), 10);
}

/// A passthrough namespace over `host`, mounted on a fresh directory with
/// the default configuration (drop the mount, then the directory, then the
/// namespace: the order `let (_vfs, mnt, _m)` drops them in).
fn mounted_passthrough(
    host: &std::path::Path,
) -> (vfscale::Vfs, tempfile::TempDir, vfscale_fuse::Mounted) {
    let vfs = vfscale::Vfs::with_passthrough_root(
        vfscale::VfsConfig::default(),
        host,
        Default::default(),
    )
    .unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let m = vfscale_fuse::mount(&vfs, mnt.path(), &Default::default()).unwrap();
    (vfs, mnt, m)
}
