//! File handles on the mount (FUSE_EXPORT_SUPPORT): name_to_handle_at and
//! open_by_handle_at through real syscalls, while the kernel holds the
//! inode and after it forgot it (the namespace served again by a new mount:
//! the kernel asks LOOKUP "." and ".." of node ids it does not know).

mod common;

use common::*;
use std::fs;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Linux's struct file_handle with room for any FUSE handle.
#[repr(C)]
struct RawHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; 128],
}

fn name_to_handle(path: &Path) -> std::io::Result<RawHandle> {
    let mut h = RawHandle {
        handle_bytes: 128,
        handle_type: 0,
        f_handle: [0; 128],
    };
    let mut mount_id: libc::c_int = 0;
    let c = cstr(path);
    // SAFETY: `c` is a NUL-terminated path; `h` is a file_handle whose
    // handle_bytes says how much room follows; `mount_id` is writable.
    let r = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD,
            c.as_ptr(),
            &mut h as *mut RawHandle,
            &mut mount_id as *mut libc::c_int,
            0,
        )
    };
    if r == 0 {
        Ok(h)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn open_by_handle(mount: &Path, h: &RawHandle, flags: i32) -> std::io::Result<fs::File> {
    let mount_fd = fs::File::open(mount)?;
    // SAFETY: `h` is a valid file_handle; the descriptor is open.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            std::os::fd::AsRawFd::as_raw_fd(&mount_fd),
            h as *const RawHandle,
            flags,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor we own.
    Ok(fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

fn contents(mut f: fs::File) -> Vec<u8> {
    let mut v = Vec::new();
    f.read_to_end(&mut v).unwrap();
    v
}

#[test]
fn handles_open_while_cached_and_after_the_kernel_forgot_the_node() {
    let Some(mut m) = mount() else { return };
    fs::create_dir(m.p("d")).unwrap();
    fs::write(m.p("d/f"), b"by handle").unwrap();
    fs::write(m.p("d/gone"), b"x").unwrap();
    let file = name_to_handle(&m.p("d/f")).expect("name_to_handle_at on the mount");
    let dir = name_to_handle(&m.p("d")).unwrap();
    let gone = name_to_handle(&m.p("d/gone")).unwrap();
    let ino = fs::metadata(m.p("d/f")).unwrap().ino();

    // The kernel still holds the inodes.
    let f = open_by_handle(m.path(), &file, libc::O_RDONLY).unwrap();
    assert_eq!(contents(f), b"by handle");
    fs::remove_file(m.p("d/gone")).unwrap();
    assert_eq!(
        open_by_handle(m.path(), &gone, libc::O_RDONLY)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ESTALE),
        "a removed file's handle"
    );

    // Unmount (the kernel forgets every node) and serve the same namespace
    // on a new mount: its kernel knows none of the node ids.
    unmount_once_idle(&mut m.mounted.take().unwrap());
    let dir2 = tempfile::Builder::new()
        .prefix("vfscale-fuse-export-")
        .tempdir()
        .unwrap();
    let _m2 = vfscale_fuse::mount(&m.vfs, dir2.path(), &Default::default()).unwrap();
    let f = open_by_handle(dir2.path(), &file, libc::O_RDONLY)
        .expect("a file handle after the kernel forgot the node (LOOKUP \".\")");
    assert_eq!(f.metadata().unwrap().ino(), ino);
    assert_eq!(contents(f), b"by handle");
    // A directory handle: the kernel reconnects it to the tree through
    // LOOKUP ".." and a listing of the parent.
    let d = open_by_handle(dir2.path(), &dir, libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
    assert!(d.metadata().unwrap().is_dir());
    let mut path = [0u8; 4096];
    let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&d));
    let n = {
        let c = std::ffi::CString::new(link).unwrap();
        // SAFETY: valid path and buffer of the given length.
        unsafe { libc::readlink(c.as_ptr(), path.as_mut_ptr().cast(), path.len()) }
    };
    assert!(n > 0);
    let shown = std::str::from_utf8(&path[..n as usize]).unwrap();
    assert!(
        shown.ends_with("/d"),
        "a reconnected directory has its path: {shown}"
    );
    // Still stale on the new mount.
    assert_eq!(
        open_by_handle(dir2.path(), &gone, libc::O_RDONLY)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ESTALE)
    );
}

#[test]
fn a_node_the_kernel_evicts_is_exported_at_forget_and_opens_by_handle() {
    let Some(m) = mount() else { return };
    fs::create_dir(m.p("e")).unwrap();
    fs::write(m.p("e/f"), b"evicted").unwrap();
    let file = name_to_handle(&m.p("e/f")).unwrap();
    let ino = fs::metadata(m.p("e/f")).unwrap().ino();
    // A second view of the namespace: the core's export table is where the
    // server registers what the kernel forgets.
    let ns = vfscale::Namespace::new(&m.vfs);
    assert_eq!(ns.exported(ino).err(), Some(vfscale::Errno::ESTALE));
    // Make the kernel evict its unused inodes (dentries and inodes only;
    // the kernel then sends FORGET for them).
    if let Err(e) = fs::write("/proc/sys/vm/drop_caches", b"2") {
        eprintln!("SKIPPED: cannot drop the kernel's inode cache: {e}");
        return;
    }
    // FORGET is asynchronous: wait for the server to have handled it.
    let mut exported = false;
    for _ in 0..500 {
        if ns.exported(ino).is_ok() {
            exported = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(exported, "the server exports a node at its last FORGET");
    let f = open_by_handle(m.path(), &file, libc::O_RDONLY)
        .expect("open_by_handle_at after the kernel evicted the inode");
    assert_eq!(contents(f), b"evicted");
}
