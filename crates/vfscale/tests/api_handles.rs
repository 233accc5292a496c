//! The namespace-level (handle) API: every call against the same namespace
//! seen through the path API, with per-call credentials.

use std::sync::Arc;
use vfscale::abi::*;
use vfscale::{Cred, Namespace, ProcessApi, SetAttr, Vfs};

fn setup() -> (Vfs, Namespace, Arc<Cred>) {
    let vfs = Vfs::new();
    let ns = Namespace::new(&vfs);
    (vfs, ns, Arc::new(Cred::root()))
}

#[test]
fn lookup_create_read_write_through_handles_and_paths() {
    let (vfs, ns, root) = setup();
    let p = vfs.root_process();
    let d = ns.mkdir(&root, ns.root(), b"d", 0o755, 0).unwrap();
    assert!(s_isdir(d.stat.mode));
    assert_eq!(p.stat(b"/d").unwrap().ino, d.stat.ino);
    let (e, fh) = ns.create(&root, &d.handle, b"f", O_RDWR, 0o644, 0).unwrap();
    assert_eq!(ns.write(&root, fh, 0, b"hello world", false).unwrap(), 11);
    let mut buf = [0u8; 64];
    let n = ns.read(fh, 6, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"world");
    // The path API sees the same file.
    let fd = p.open(b"/d/f", O_RDONLY, 0).unwrap();
    let n = p.read(fd, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello world");
    p.close(fd).unwrap();
    // And a path write is visible through the handle.
    let fd = p.open(b"/d/f", O_WRONLY | O_APPEND, 0).unwrap();
    p.write(fd, b"!").unwrap();
    p.close(fd).unwrap();
    assert_eq!(ns.getattr(&e.handle).size, 12);
    ns.release(fh).unwrap();
    assert_eq!(ns.release(fh), Err(Errno::EBADF));
    assert_eq!(ns.read(fh, 0, &mut buf), Err(Errno::EBADF));
    let l = ns.lookup(&root, &d.handle, b"f").unwrap();
    assert_eq!(l.stat.ino, e.stat.ino);
    assert_eq!(
        ns.lookup(&root, &d.handle, b"nope").err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(
        ns.lookup(&root, &d.handle, b"a/b").err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(ns.lookup(&root, &d.handle, b"").err(), Some(Errno::EINVAL));
    // create with O_EXCL on an existing name.
    assert_eq!(
        ns.create(&root, &d.handle, b"f", O_RDWR | O_EXCL, 0o644, 0)
            .err(),
        Some(Errno::EEXIST)
    );
}

/// A write appends exactly when its caller says the file is in append
/// mode, whatever the flags of the open: a FUSE kernel keeps F_SETFL's
/// changes to itself and sends the status with each write (found by
/// `mount_diff.rs` over the ring: O_APPEND cleared by F_SETFL, then a
/// pwrite at offset 1 was appended).
#[test]
fn a_write_appends_as_its_caller_says() {
    let (_vfs, ns, root) = setup();
    let (e, appending) = ns
        .create(&root, ns.root(), b"f", O_WRONLY | O_APPEND, 0o644, 0)
        .unwrap();
    ns.write(&root, appending, 0, b"xy", true).unwrap();
    // Append mode cleared since the open: at the offset given.
    ns.write(&root, appending, 1, b"a", false).unwrap();
    let plain = ns.open(&root, &e.handle, O_RDWR).unwrap();
    // Append mode set since the open: at the end, whatever the offset.
    ns.write(&root, plain, 0, b"!", true).unwrap();
    let mut buf = [0u8; 8];
    let n = ns.read(plain, 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"xa!");
    ns.release(plain).unwrap();
    ns.release(appending).unwrap();
}

#[test]
fn unlinked_file_stays_usable_through_its_handle() {
    let (_vfs, ns, root) = setup();
    let (e, fh) = ns.create(&root, ns.root(), b"f", O_RDWR, 0o600, 0).unwrap();
    ns.write(&root, fh, 0, b"data", false).unwrap();
    ns.release(fh).unwrap();
    ns.unlink(&root, ns.root(), b"f").unwrap();
    assert_eq!(ns.getattr(&e.handle).nlink, 0);
    let fh = ns.open(&root, &e.handle, O_RDONLY).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(ns.read(fh, 0, &mut buf).unwrap(), 4);
    ns.release(fh).unwrap();
    assert_eq!(ns.unlink(&root, ns.root(), b"f").err(), Some(Errno::ENOENT));
}

#[test]
fn names_rename_link_symlink_rmdir() {
    let (vfs, ns, root) = setup();
    let p = vfs.root_process();
    let a = ns.mkdir(&root, ns.root(), b"a", 0o755, 0).unwrap();
    let b = ns.mkdir(&root, ns.root(), b"b", 0o755, 0).unwrap();
    let (f, fh) = ns
        .create(&root, &a.handle, b"f", O_WRONLY, 0o644, 0)
        .unwrap();
    ns.release(fh).unwrap();
    ns.rename(&root, &a.handle, b"f", &b.handle, b"g", 0)
        .unwrap();
    assert!(p.stat(b"/a/f").is_err());
    assert_eq!(p.stat(b"/b/g").unwrap().ino, f.stat.ino);
    let l = ns.link(&root, &f.handle, &a.handle, b"h").unwrap();
    assert_eq!(l.stat.ino, f.stat.ino);
    assert_eq!(l.stat.nlink, 2);
    assert_eq!(
        ns.rename(&root, &a.handle, b"h", &b.handle, b"g", RENAME_NOREPLACE)
            .err(),
        Some(Errno::EEXIST)
    );
    let s = ns.symlink(&root, &a.handle, b"s", b"../b/g").unwrap();
    assert!(s_islnk(s.stat.mode));
    assert_eq!(ns.readlink(&root, &s.handle).unwrap(), b"../b/g");
    assert_eq!(ns.readlink(&root, &f.handle).err(), Some(Errno::EINVAL));
    assert_eq!(
        ns.rmdir(&root, ns.root(), b"a").err(),
        Some(Errno::ENOTEMPTY)
    );
    assert_eq!(ns.unlink(&root, ns.root(), b"a").err(), Some(Errno::EISDIR));
    ns.unlink(&root, &a.handle, b"h").unwrap();
    ns.unlink(&root, &a.handle, b"s").unwrap();
    ns.rmdir(&root, ns.root(), b"a").unwrap();
    let n = ns
        .mknod(&root, ns.root(), b"fifo", S_IFIFO | 0o644, 0, 0)
        .unwrap();
    assert_eq!(n.stat.mode & S_IFMT, S_IFIFO);
}

#[test]
fn credentials_per_call_drive_permissions() {
    let (_vfs, ns, root) = setup();
    let user = Arc::new(Cred::user(1000, 1000, &[]));
    let d = ns.mkdir(&root, ns.root(), b"private", 0o700, 0).unwrap();
    assert_eq!(ns.lookup(&user, &d.handle, b"x").err(), Some(Errno::EACCES));
    assert_eq!(
        ns.mkdir(&user, &d.handle, b"x", 0o755, 0).err(),
        Some(Errno::EACCES)
    );
    assert_eq!(ns.access(&user, &d.handle, R_OK).err(), Some(Errno::EACCES));
    ns.access(&root, &d.handle, R_OK | W_OK | X_OK).unwrap();
    let (f, fh) = ns
        .create(&root, ns.root(), b"ro", O_WRONLY, 0o644, 0)
        .unwrap();
    ns.release(fh).unwrap();
    assert_eq!(
        ns.open(&user, &f.handle, O_WRONLY).err(),
        Some(Errno::EACCES)
    );
    let fh = ns.open(&user, &f.handle, O_RDONLY).unwrap();
    ns.release(fh).unwrap();
    // chmod by a non-owner: EPERM; chown to the user by root, then chmod.
    let set = SetAttr {
        mode: Some(0o600),
        ..Default::default()
    };
    assert_eq!(ns.setattr(&user, &f.handle, &set).err(), Some(Errno::EPERM));
    let chown = SetAttr {
        uid: Some(1000),
        gid: Some(1000),
        ..Default::default()
    };
    let st = ns.setattr(&root, &f.handle, &chown).unwrap();
    assert_eq!((st.uid, st.gid), (1000, 1000));
    let st = ns.setattr(&user, &f.handle, &set).unwrap();
    assert_eq!(st.mode & 0o7777, 0o600);
    let trunc = SetAttr {
        size: Some(100),
        ..Default::default()
    };
    assert_eq!(ns.setattr(&user, &f.handle, &trunc).unwrap().size, 100);
    let times = SetAttr {
        mtime: Some(Timespec { sec: 5, nsec: 0 }),
        ..Default::default()
    };
    assert_eq!(ns.setattr(&user, &f.handle, &times).unwrap().mtime.sec, 5);
    assert_eq!(
        ns.setattr(&root, &d.handle, &trunc).err(),
        Some(Errno::EISDIR)
    );
}

#[test]
fn readdir_cookies_resume_and_survive_changes() {
    let (_vfs, ns, root) = setup();
    let d = ns.mkdir(&root, ns.root(), b"d", 0o755, 0).unwrap();
    for i in 0..100 {
        let (_, fh) = ns
            .create(
                &root,
                &d.handle,
                format!("f{i}").as_bytes(),
                O_WRONLY,
                0o644,
                0,
            )
            .unwrap();
        ns.release(fh).unwrap();
    }
    let dh = ns.open(&root, &d.handle, O_RDONLY | O_DIRECTORY).unwrap();
    let mut names = Vec::new();
    let mut cookie = 0;
    loop {
        let mut batch = 0;
        ns.readdir(dh, cookie, |e| {
            if batch == 7 {
                return false;
            }
            batch += 1;
            names.push(e.name.to_vec());
            cookie = e.next;
            true
        })
        .unwrap();
        if batch == 0 {
            break;
        }
        // Removing an already-listed entry must not disturb the listing.
        if batch == 7 && names.len() < 50 {
            let last = names.last().unwrap().clone();
            if last != b"." && last != b".." {
                ns.unlink(&root, &d.handle, &last).unwrap();
            }
        }
    }
    assert_eq!(names.len(), 102);
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 102);
    ns.release(dh).unwrap();
    let (_, fh) = ns
        .create(&root, ns.root(), b"file", O_WRONLY, 0o644, 0)
        .unwrap();
    assert_eq!(ns.readdir(fh, 0, |_| true).err(), Some(Errno::ENOTDIR));
    ns.release(fh).unwrap();
    assert!(ns.statfs(ns.root()).f_files > 0);
}

#[test]
fn exported_objects_are_found_by_number_while_named_or_in_use() {
    let (vfs, ns, root) = setup();
    let p = vfs.root_process();
    let d = ns.mkdir(&root, ns.root(), b"d", 0o755, 0).unwrap();
    let (f, fh) = ns.create(&root, &d.handle, b"f", O_RDWR, 0o644, 0).unwrap();
    ns.release(fh).unwrap();
    let ino = f.stat.ino;
    // Not exported yet: nothing to find by number.
    assert_eq!(ns.exported(ino).err(), Some(Errno::ESTALE));
    ns.export(&f.handle).unwrap();
    drop(f);
    let found = ns.exported(ino).unwrap();
    assert_eq!(found.stat.ino, ino);
    // The pinned object is the named one: a write through the path API
    // shows in its attributes.
    let fd = p.open(b"/d/f", O_WRONLY, 0).unwrap();
    p.write(fd, b"abc").unwrap();
    p.close(fd).unwrap();
    assert_eq!(ns.getattr(&found.handle).size, 3);
    drop(found);
    // Renamed: still found. Removed while in use (`last` pins it): still
    // found, as Linux's handles reach an unlinked file kept open; once
    // unused: stale.
    p.rename(b"/d/f", b"/g").unwrap();
    assert_eq!(ns.exported(ino).unwrap().stat.ino, ino);
    let last = ns.exported(ino).unwrap();
    p.unlink(b"/g").unwrap();
    assert_eq!(ns.exported(ino).unwrap().stat.ino, ino);
    ns.export(&last.handle).unwrap();
    drop(last);
    assert_eq!(ns.exported(ino).err(), Some(Errno::ESTALE));
    // Directories too.
    ns.export(&d.handle).unwrap();
    assert!(s_isdir(ns.exported(d.stat.ino).unwrap().stat.mode));
}
