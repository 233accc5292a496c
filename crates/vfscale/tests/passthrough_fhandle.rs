//! File handles over a passthrough instance (fs/passthrough/fhandle.rs):
//! handles of files, directories, symlinks and the root reopen their
//! objects; they outlive vfscale's cache (and the host's: a disconnected
//! host dentry is found through its directory) and host renames; a file
//! removed or replaced on the host is ESTALE, as is a forged or foreign
//! handle (without a host call); and no handle reaches an object the host
//! moved out of the mirrored tree.
//!
//! Finding an object vfscale forgot opens the host's handle, which needs
//! CAP_DAC_READ_SEARCH: those tests skip, saying so, when the host refuses.

mod common_host;

use common_host::HostDir;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn mirror(host: &HostDir) -> Vfs {
    Vfs::with_passthrough_root(
        VfsConfig::default(),
        host.path(),
        PassthroughConfig {
            ttl: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .unwrap()
}

fn handle_of(p: &impl ProcessApi, path: &[u8]) -> FileHandle {
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(AT_FDCWD, path, &mut h, 0).unwrap();
    h
}

fn read_fd(p: &impl ProcessApi, fd: Fd) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let n = p.pread(fd, &mut buf, 0).unwrap();
    buf.truncate(n);
    buf
}

/// The contents of the file `h` opens, the descriptor closed.
fn read_by_handle(p: &impl ProcessApi, h: &FileHandle) -> SysResult<Vec<u8>> {
    let fd = p.open_by_handle_at(AT_FDCWD, h, O_RDONLY)?;
    let data = read_fd(p, fd);
    p.close(fd).unwrap();
    Ok(data)
}

/// The path (fd_path) of what `h` opens with `flags`, the descriptor
/// closed.
fn path_by_handle(p: &impl ProcessApi, h: &FileHandle, flags: i32) -> Vec<u8> {
    let fd = p.open_by_handle_at(AT_FDCWD, h, flags).unwrap();
    let path = p.fd_path(fd).unwrap();
    p.close(fd).unwrap();
    path
}

/// Drops vfscale's caches until a pass frees nothing (drop_caches gives
/// referenced entries a second chance).
fn forget_everything(vfs: &Vfs) {
    while vfs.drop_caches() != 0 {}
}

/// Whether this process may open host handles (CAP_DAC_READ_SEARCH); if
/// not, says so.
fn host_decodes(host: &HostDir) -> bool {
    let path = std::ffi::CString::new(host.path().as_os_str().as_encoded_bytes()).unwrap();
    #[repr(C)]
    struct Raw {
        bytes: u32,
        kind: i32,
        data: [u8; 128],
    }
    let mut raw = Raw {
        bytes: 128,
        kind: 0,
        data: [0; 128],
    };
    let mut mount = 0i32;
    // SAFETY: the kernel writes within `raw` (128 bytes announced) and
    // `mount`; the path is NUL-terminated.
    let ok = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD,
            path.as_ptr(),
            &mut raw as *mut Raw,
            &mut mount as *mut i32,
            0,
        )
    } == 0;
    // SAFETY: as above; the fd returned, if any, is closed at once.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            libc::AT_FDCWD,
            &raw as *const Raw,
            libc::O_PATH,
        )
    };
    if ok && fd >= 0 {
        // SAFETY: our own fresh fd.
        unsafe { libc::close(fd as i32) };
        return true;
    }
    eprintln!(
        "skipped: the host refuses open_by_handle_at here ({}), needed to find objects vfscale forgot",
        std::io::Error::last_os_error()
    );
    false
}

#[test]
fn handles_reopen_files_directories_symlinks_and_the_root() {
    let host = HostDir::new("fh-kinds");
    host.write("a.txt", b"alpha");
    host.mkdir("sub");
    host.write("sub/inner", b"inner");
    host.symlink("a.txt", "link");
    let vfs = mirror(&host);
    let p = vfs.root_process();
    let h = handle_of(&p, b"/sub/inner");
    assert_eq!(h.handle_type, 0x56);
    assert!(h.handle_bytes as usize == h.f_handle.len() && h.handle_bytes <= MAX_HANDLE_SZ);
    assert_eq!(read_by_handle(&p, &h).unwrap(), b"inner");
    let fd = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    assert_eq!(p.fstat(fd).unwrap().ino, p.stat(b"/sub/inner").unwrap().ino);
    p.close(fd).unwrap();
    // The same name gives the same handle again.
    assert_eq!(handle_of(&p, b"/sub/inner"), h);
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY | O_DIRECTORY),
        Err(Errno::ENOTDIR)
    );
    // A write through a handle reaches the host file.
    let fd = p
        .open_by_handle_at(AT_FDCWD, &h, O_WRONLY | O_TRUNC)
        .unwrap();
    p.write(fd, b"new").unwrap();
    p.close(fd).unwrap();
    assert_eq!(host.read("sub/inner"), b"new");
    for dir in [&b"/sub"[..], b"/"] {
        let fd = p
            .open_by_handle_at(AT_FDCWD, &handle_of(&p, dir), O_RDONLY | O_DIRECTORY)
            .unwrap();
        assert_eq!(p.fstat(fd).unwrap().ino, p.stat(dir).unwrap().ino);
        assert_eq!(p.fd_path(fd).unwrap(), dir);
        p.close(fd).unwrap();
    }
    // A symlink's own handle: ELOOP but for O_PATH, as Linux.
    let mut l = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(AT_FDCWD, b"/link", &mut l, 0).unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &l, O_RDONLY),
        Err(Errno::ELOOP)
    );
    let fd = p.open_by_handle_at(AT_FDCWD, &l, O_PATH).unwrap();
    assert_eq!(p.fstat(fd).unwrap().mode & S_IFMT, S_IFLNK);
    p.close(fd).unwrap();
    // Followed, it is the target's handle.
    let mut t = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(AT_FDCWD, b"/link", &mut t, AT_SYMLINK_FOLLOW)
        .unwrap();
    assert_eq!(t, handle_of(&p, b"/a.txt"));
    // Too small a buffer: EOVERFLOW with the size needed.
    let mut small = FileHandle::with_capacity(12);
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/a.txt", &mut small, 0),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(small.handle_bytes, t.handle_bytes);
}

#[test]
fn handles_outlive_the_cache_and_host_renames() {
    let host = HostDir::new("fh-reclaim");
    host.mkdir("d1/d2");
    host.write("d1/d2/f", b"deep");
    host.write("top", b"top");
    host.symlink("d2/f", "d1/link");
    let vfs = mirror(&host);
    if !host_decodes(&host) {
        return;
    }
    let p = vfs.root_process();
    let (hf, hd, ht, hl) = (
        handle_of(&p, b"/d1/d2/f"),
        handle_of(&p, b"/d1/d2"),
        handle_of(&p, b"/top"),
        handle_of(&p, b"/d1/link"),
    );
    let cached = vfs.object_counts().dentries;
    forget_everything(&vfs);
    assert!(
        vfs.object_counts().dentries < cached,
        "the entries were reclaimed"
    );
    assert_eq!(read_by_handle(&p, &hf).unwrap(), b"deep");
    assert_eq!(read_by_handle(&p, &ht).unwrap(), b"top");
    // A symlink is found as itself, not followed.
    assert_eq!(path_by_handle(&p, &hl, O_PATH), b"/d1/link");
    assert_eq!(p.lstat(b"/d1/link").unwrap().mode & S_IFMT, S_IFLNK);
    forget_everything(&vfs);
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &hl, O_RDONLY),
        Err(Errno::ELOOP)
    );
    // The host renames the directories and the file; vfscale forgets
    // again: each handle finds its object at its new place.
    std::fs::rename(host.path().join("d1"), host.path().join("e1")).unwrap();
    std::fs::rename(host.path().join("e1/d2/f"), host.path().join("e1/d2/g")).unwrap();
    forget_everything(&vfs);
    assert_eq!(path_by_handle(&p, &hd, O_RDONLY | O_DIRECTORY), b"/e1/d2");
    assert_eq!(read_by_handle(&p, &hf).unwrap(), b"deep");
    assert_eq!(path_by_handle(&p, &hf, O_RDONLY), b"/e1/d2/g");
}

/// The host's own dentry of a file gone too (the host's caches dropped):
/// the host opens its handle disconnected, with no path, and the file is
/// found by listing the directory it was named in.
#[test]
fn a_file_the_host_forgot_is_found_through_its_directory() {
    let host = HostDir::new("fh-disconnected");
    host.mkdir("dir");
    for i in 0..50 {
        host.write(&format!("dir/other{i}"), b"other");
    }
    host.write("dir/f", b"found");
    let vfs = mirror(&host);
    if !host_decodes(&host) {
        return;
    }
    let p = vfs.root_process();
    let h = handle_of(&p, b"/dir/f");
    std::fs::rename(host.path().join("dir/f"), host.path().join("dir/renamed")).unwrap();
    forget_everything(&vfs);
    if std::fs::write("/proc/sys/vm/drop_caches", "2").is_err() {
        eprintln!("skipped the host-cache half: /proc/sys/vm/drop_caches is not writable");
    }
    assert_eq!(read_by_handle(&p, &h).unwrap(), b"found");
    assert_eq!(path_by_handle(&p, &h, O_RDONLY), b"/dir/renamed");
}

#[test]
fn a_removed_or_replaced_host_file_is_estale() {
    let host = HostDir::new("fh-stale");
    host.write("f", b"old");
    host.write("g", b"gone");
    let vfs = mirror(&host);
    let p = vfs.root_process();
    let (hf, hg) = (handle_of(&p, b"/f"), handle_of(&p, b"/g"));
    // Replaced on the host under the same name (the host may give the new
    // file the old one's number: the handle's generation tells them
    // apart). vfscale still trusts its cached entry (an hour's TTL).
    std::fs::remove_file(host.path().join("f")).unwrap();
    host.write("f", b"new");
    assert_eq!(read_by_handle(&p, &hf), Err(Errno::ESTALE));
    // Removed through vfscale, nothing holding it.
    p.unlink(b"/g").unwrap();
    assert_eq!(read_by_handle(&p, &hg), Err(Errno::ESTALE));
    forget_everything(&vfs);
    assert_eq!(read_by_handle(&p, &hf), Err(Errno::ESTALE));
    assert_eq!(read_by_handle(&p, &hg), Err(Errno::ESTALE));
    // The new file's own handle opens it.
    assert_eq!(read_by_handle(&p, &handle_of(&p, b"/f")).unwrap(), b"new");
}

/// An unlinked file kept open is reachable by its handle, as on Linux
/// (through vfscale's held host file), until the last close.
#[test]
fn an_unlinked_open_file_stays_reachable_by_its_handle() {
    let host = HostDir::new("fh-unlinked");
    host.write("f", b"kept");
    let vfs = mirror(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let h = handle_of(&p, b"/f");
    p.unlink(b"/f").unwrap();
    assert_eq!(read_by_handle(&p, &h).unwrap(), b"kept");
    p.close(fd).unwrap();
    assert_eq!(read_by_handle(&p, &h), Err(Errno::ESTALE));
}

#[test]
fn forged_and_foreign_handles_are_estale_without_a_host_call() {
    let host = HostDir::new("fh-forged");
    host.write("f", b"x");
    let pt = Passthrough::new(host.path(), PassthroughConfig::default()).unwrap();
    let stats = pt.stats();
    let vfs = Vfs::with_root_fs(VfsConfig::default(), Box::new(pt));
    let p = vfs.root_process();
    let h = handle_of(&p, b"/f");
    let calls = stats.calls();
    for i in 0..h.f_handle.len() {
        let mut forged = h.clone();
        forged.f_handle[i] ^= 1;
        assert_eq!(
            p.open_by_handle_at(AT_FDCWD, &forged, O_RDONLY),
            Err(Errno::ESTALE),
            "byte {i} flipped"
        );
    }
    let mut short = h.clone();
    short.f_handle.pop();
    short.handle_bytes -= 1;
    let mut tmpfs_type = h.clone();
    tmpfs_type.handle_type = 0x81;
    for bad in [short, tmpfs_type] {
        assert_eq!(
            p.open_by_handle_at(AT_FDCWD, &bad, O_RDONLY),
            Err(Errno::ESTALE)
        );
    }
    assert_eq!(
        stats.calls(),
        calls,
        "no host call for a handle vfscale did not make"
    );
    // Another instance over the same directory made it: ESTALE there.
    let other = mirror(&host);
    assert_eq!(
        other
            .root_process()
            .open_by_handle_at(AT_FDCWD, &h, O_RDONLY),
        Err(Errno::ESTALE)
    );
}

/// The security boundary: a handle made while its object was beneath the
/// root does not reach it once the host moved it (or its directory) out,
/// though the host itself would still open it.
#[test]
fn a_handle_does_not_follow_its_object_out_of_the_root() {
    let host = HostDir::new("fh-escape");
    host.mkdir("sub");
    host.write("sub/f", b"secret");
    host.write("g", b"secret too");
    let vfs = mirror(&host);
    if !host_decodes(&host) {
        return;
    }
    let p = vfs.root_process();
    let (hsub, hf, hg) = (
        handle_of(&p, b"/sub"),
        handle_of(&p, b"/sub/f"),
        handle_of(&p, b"/g"),
    );
    let outside = host.outside();
    std::fs::rename(host.path().join("sub"), outside.join("sub")).unwrap();
    std::fs::rename(host.path().join("g"), outside.join("g")).unwrap();
    forget_everything(&vfs);
    for h in [&hsub, &hf, &hg] {
        assert_eq!(p.open_by_handle_at(AT_FDCWD, h, O_PATH), Err(Errno::ESTALE));
    }
    // Back in the tree, they are found again.
    std::fs::rename(outside.join("sub"), host.path().join("sub")).unwrap();
    assert_eq!(read_by_handle(&p, &hf).unwrap(), b"secret");
}

/// Opens by handle racing vfscale's renames of the files between two
/// directories and reclaim of the cache: every open reaches its handle's
/// file, never ESTALE (the host has a rename's new names before vfscale's
/// cache: sync/in_flight.rs), and holds it as Linux's open does, however
/// it raced a rename: reads through it work after the name is unlinked.
/// Once the renames stop, every handle opens from a cold cache.
#[test]
fn opens_by_handle_race_renames_and_reclaim() {
    const FILES: usize = 8;
    let host = HostDir::new("fh-stress");
    host.mkdir("a");
    host.mkdir("b");
    for i in 0..FILES {
        host.write(&format!("a/f{i}"), format!("file {i}").as_bytes());
    }
    let vfs = mirror(&host);
    if !host_decodes(&host) {
        return;
    }
    let p = vfs.root_process();
    let handles: Vec<FileHandle> = (0..FILES)
        .map(|i| handle_of(&p, format!("/a/f{i}").as_bytes()))
        .collect();
    let content = |i: usize| format!("file {i}").into_bytes();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (stopped, unlinked) = (std::sync::Barrier::new(3), std::sync::Barrier::new(3));
    // Every thread reaches both barriers whatever happens (a failure is
    // reported after them), so a failure cannot hang the test.
    let failures: Vec<String> = std::thread::scope(|s| {
        let openers: Vec<_> = (0..2)
            .map(|t| {
                let (vfs, handles, stop) = (&vfs, &handles, &stop);
                let (stopped, unlinked) = (&stopped, &unlinked);
                s.spawn(move || -> Result<(), String> {
                    let p = vfs.root_process();
                    let mut kept = Vec::new();
                    let mut i = t;
                    let mut result = Ok(());
                    while result.is_ok() && !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        i = (i + 1) % FILES;
                        result = match p.open_by_handle_at(AT_FDCWD, &handles[i], O_RDONLY) {
                            Ok(fd) if read_fd(&p, fd) == content(i) => {
                                kept.push((fd, i));
                                Ok(())
                            }
                            Ok(_) => Err(format!("handle {i} opened another file")),
                            Err(e) => Err(format!("handle {i}: {e:?}")),
                        };
                        if kept.len() > 1000 {
                            let (fd, _) = kept.pop().unwrap();
                            p.close(fd).unwrap();
                        }
                    }
                    stopped.wait();
                    unlinked.wait();
                    for (fd, i) in kept {
                        if read_fd(&p, fd) != content(i) {
                            result = Err(format!("a kept descriptor of file {i} lost it"));
                        }
                        p.close(fd).unwrap();
                    }
                    result
                })
            })
            .collect();
        let mover = vfs.root_process();
        let mut place = ["a"; FILES];
        let mut result = Ok(());
        for round in 0..400 {
            let i = round % FILES;
            let to = if place[i] == "a" { "b" } else { "a" };
            let (from, into) = (format!("/{}/f{i}", place[i]), format!("/{to}/f{i}"));
            if let Err(e) = mover.rename(from.as_bytes(), into.as_bytes()) {
                result = Err(format!("rename {from}: {e:?}"));
                break;
            }
            place[i] = to;
            if round % 16 == 0 {
                vfs.drop_caches();
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        stopped.wait();
        forget_everything(&vfs);
        for (i, h) in handles.iter().enumerate() {
            if read_by_handle(&mover, h) != Ok(content(i)) {
                result = Err(format!("handle {i} at rest"));
            }
        }
        for (i, dir) in place.iter().enumerate() {
            let _ = mover.unlink(format!("/{dir}/f{i}").as_bytes());
        }
        unlinked.wait();
        openers
            .into_iter()
            .map(|t| t.join().unwrap())
            .chain([result])
            .filter_map(Result::err)
            .collect()
    });
    assert!(failures.is_empty(), "{failures:?}");
}
