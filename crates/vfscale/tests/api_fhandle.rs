//! name_to_handle_at / open_by_handle_at over vfscale's namespace: Linux
//! semantics and errnos (EOVERFLOW with the needed size, EINVAL, EPERM,
//! ESTALE for removed objects and foreign or forged handles), handles that
//! survive renames and follow hard links, and a race between opens by
//! handle and unlink/re-create of the name.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};

fn handle_of(p: &impl ProcessApi, path: &[u8], flags: i32) -> SysResult<(FileHandle, u64)> {
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    let mount_id = p.name_to_handle_at(AT_FDCWD, path, &mut h, flags)?;
    Ok((h, mount_id))
}

fn read_all(p: &impl ProcessApi, fd: Fd) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let n = p.pread(fd, &mut buf, 0).unwrap();
    buf.truncate(n);
    buf
}

fn make_file(p: &impl ProcessApi, path: &[u8], data: &[u8]) {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644).unwrap();
    assert_eq!(p.write(fd, data).unwrap(), data.len());
    p.close(fd).unwrap();
}

#[test]
fn round_trip_opens_the_same_inode() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/f", b"hello");
    let (h, mount_id) = handle_of(&p, b"/f", 0).unwrap();
    assert_eq!(h.handle_bytes, 12);
    assert_eq!(h.f_handle.len(), 12);
    assert_eq!(h.handle_type, 0x81);
    assert!(mount_id > 0);
    // Handles of two names on the same mount report the same mount id.
    make_file(&p, b"/g", b"");
    assert_eq!(handle_of(&p, b"/g", 0).unwrap().1, mount_id);
    let fd = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    assert_eq!(read_all(&p, fd), b"hello");
    assert_eq!(p.fstat(fd).unwrap().ino, p.stat(b"/f").unwrap().ino);
    p.close(fd).unwrap();
    // The same name gives the same handle again.
    assert_eq!(handle_of(&p, b"/f", 0).unwrap().0, h);
    // O_TRUNC through a handle truncates; O_WRONLY writes.
    let fd = p
        .open_by_handle_at(AT_FDCWD, &h, O_WRONLY | O_TRUNC)
        .unwrap();
    p.write(fd, b"xy").unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().size, 2);
}

#[test]
fn too_small_buffer_is_eoverflow_with_the_needed_size() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/f", b"");
    let mut h = FileHandle::with_capacity(0);
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/f", &mut h, 0),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(h.handle_bytes, 12);
    let mut h = FileHandle::with_capacity(11);
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/f", &mut h, 0),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(h.handle_bytes, 12);
    // Exactly the needed size works.
    let mut h = FileHandle::with_capacity(12);
    assert!(p.name_to_handle_at(AT_FDCWD, b"/f", &mut h, 0).is_ok());
}

#[test]
fn bad_arguments() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/f", b"");
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ + 1);
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/f", &mut h, 0),
        Err(Errno::EINVAL)
    );
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/f", &mut h, AT_SYMLINK_NOFOLLOW),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/nope", &mut h, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"", &mut h, 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/f/x", &mut h, 0),
        Err(Errno::ENOTDIR)
    );
    let (good, _) = handle_of(&p, b"/f", 0).unwrap();
    let mut zero = good.clone();
    zero.handle_bytes = 0;
    assert_eq!(p.open_by_handle_at(AT_FDCWD, &zero, 0), Err(Errno::EINVAL));
    let mut big = good.clone();
    big.handle_bytes = MAX_HANDLE_SZ + 1;
    assert_eq!(p.open_by_handle_at(AT_FDCWD, &big, 0), Err(Errno::EINVAL));
    assert_eq!(p.open_by_handle_at(999, &good, 0), Err(Errno::EBADF));
    // A handle of another type or length does not name anything here.
    let mut other = good.clone();
    other.handle_type = 1;
    assert_eq!(p.open_by_handle_at(AT_FDCWD, &other, 0), Err(Errno::ESTALE));
    let mut short = good.clone();
    short.handle_bytes = 8;
    assert_eq!(p.open_by_handle_at(AT_FDCWD, &short, 0), Err(Errno::ESTALE));
    // A forged generation is stale.
    let mut forged = good.clone();
    forged.f_handle[8] ^= 1;
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &forged, 0),
        Err(Errno::ESTALE)
    );
    // A forged inode number is stale.
    let mut forged = good;
    forged.f_handle[0] ^= 0x40;
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &forged, 0),
        Err(Errno::ESTALE)
    );
}

#[test]
fn open_by_handle_needs_cap_dac_read_search() {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    make_file(&root, b"/f", b"x");
    root.chmod(b"/f", 0o666).unwrap();
    let user = vfs.process(Cred::user(1000, 1000, &[]));
    // Making a handle needs no privilege.
    let (h, _) = handle_of(&user, b"/f", 0).unwrap();
    assert_eq!(
        user.open_by_handle_at(AT_FDCWD, &h, O_RDONLY),
        Err(Errno::EPERM)
    );
    let fd = root.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    root.close(fd).unwrap();
}

#[test]
fn removed_objects_are_stale() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/f", b"data");
    let (h, _) = handle_of(&p, b"/f", 0).unwrap();
    // An open descriptor keeps the inode alive after its name is gone,
    // and the handle still opens it (Linux's shmem_fh_to_dentry finds the
    // live inode and takes its unhashed dentry, d_obtain_alias): the same
    // file, named as removed. Once the last user closes it: ESTALE.
    let keep = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.unlink(b"/f").unwrap();
    let again = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(p.read(again, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"data");
    assert_eq!(p.fd_path(again).unwrap(), b"/f (deleted)");
    // A handle can be made from the descriptor, as Linux encodes it.
    let mut h2 = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(keep, b"", &mut h2, AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(h2.f_handle, h.f_handle);
    p.close(again).unwrap();
    p.close(keep).unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY),
        Err(Errno::ESTALE)
    );
    // A new file under the same name is another inode: still stale.
    make_file(&p, b"/f", b"new");
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY),
        Err(Errno::ESTALE)
    );
    // Directories: rmdir makes the handle stale.
    p.mkdir(b"/d", 0o755).unwrap();
    let (hd, _) = handle_of(&p, b"/d", 0).unwrap();
    let fd = p
        .open_by_handle_at(AT_FDCWD, &hd, O_RDONLY | O_DIRECTORY)
        .unwrap();
    p.close(fd).unwrap();
    p.rmdir(b"/d").unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &hd, O_RDONLY),
        Err(Errno::ESTALE)
    );
    // Renaming another file over an exported one removes its name.
    make_file(&p, b"/a", b"a");
    make_file(&p, b"/b", b"b");
    let (ha, _) = handle_of(&p, b"/a", 0).unwrap();
    p.rename(b"/b", b"/a").unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &ha, O_RDONLY),
        Err(Errno::ESTALE)
    );
}

#[test]
fn handles_survive_renames_and_follow_hard_links() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d1", 0o755).unwrap();
    p.mkdir(b"/d2", 0o755).unwrap();
    make_file(&p, b"/d1/f", b"moving");
    let (h, _) = handle_of(&p, b"/d1/f", 0).unwrap();
    p.rename(b"/d1/f", b"/d2/g").unwrap();
    let fd = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    assert_eq!(read_all(&p, fd), b"moving");
    p.close(fd).unwrap();
    // A link made after the handle keeps the inode reachable when the
    // exported name goes.
    p.link(b"/d2/g", b"/d1/h").unwrap();
    p.unlink(b"/d2/g").unwrap();
    let fd = p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY).unwrap();
    assert_eq!(read_all(&p, fd), b"moving");
    p.close(fd).unwrap();
    p.unlink(b"/d1/h").unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &h, O_RDONLY),
        Err(Errno::ESTALE)
    );
}

#[test]
fn symlinks_empty_path_and_directories() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/target", b"t");
    p.symlink(b"/target", b"/link").unwrap();
    let (hl, _) = handle_of(&p, b"/link", 0).unwrap();
    let (ht, _) = handle_of(&p, b"/target", 0).unwrap();
    assert_ne!(hl, ht, "without AT_SYMLINK_FOLLOW the link itself is named");
    assert_eq!(handle_of(&p, b"/link", AT_SYMLINK_FOLLOW).unwrap().0, ht);
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &hl, O_RDONLY),
        Err(Errno::ELOOP)
    );
    let fd = p.open_by_handle_at(AT_FDCWD, &hl, O_PATH).unwrap();
    assert_eq!(p.fstat(fd).unwrap().mode & S_IFMT, S_IFLNK);
    p.close(fd).unwrap();
    // AT_EMPTY_PATH names the descriptor's file.
    let fd = p.open(b"/target", O_RDONLY, 0).unwrap();
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(fd, b"", &mut h, AT_EMPTY_PATH).unwrap();
    assert_eq!(h, ht);
    assert_eq!(p.name_to_handle_at(fd, b"", &mut h, 0), Err(Errno::ENOENT));
    p.close(fd).unwrap();
    // The root and a directory; O_DIRECTORY on a file is ENOTDIR, writing a
    // directory EISDIR.
    let (hr, _) = handle_of(&p, b"/", 0).unwrap();
    let fd = p
        .open_by_handle_at(AT_FDCWD, &hr, O_RDONLY | O_DIRECTORY)
        .unwrap();
    assert_eq!(p.fstat(fd).unwrap().ino, p.stat(b"/").unwrap().ino);
    p.close(fd).unwrap();
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &hr, O_RDWR),
        Err(Errno::EISDIR)
    );
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &ht, O_RDONLY | O_DIRECTORY),
        Err(Errno::ENOTDIR)
    );
}

#[test]
fn handles_belong_to_their_instance() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/mnt", 0o755).unwrap();
    p.mount(b"none", b"/mnt", b"tmpfs", 0).unwrap();
    make_file(&p, b"/mnt/f", b"inner");
    make_file(&p, b"/f", b"outer");
    let (h_inner, inner_id) = handle_of(&p, b"/mnt/f", 0).unwrap();
    let (h_outer, outer_id) = handle_of(&p, b"/f", 0).unwrap();
    assert_ne!(inner_id, outer_id);
    let mnt_fd = p.open(b"/mnt", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let fd = p.open_by_handle_at(mnt_fd, &h_inner, O_RDONLY).unwrap();
    assert_eq!(read_all(&p, fd), b"inner");
    p.close(fd).unwrap();
    // Each handle is stale on the other instance, even where the inode
    // numbers happen to be equal.
    assert_eq!(
        p.open_by_handle_at(mnt_fd, &h_outer, O_RDONLY),
        Err(Errno::ESTALE)
    );
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &h_inner, O_RDONLY),
        Err(Errno::ESTALE)
    );
    p.close(mnt_fd).unwrap();
}

#[test]
fn open_by_handle_races_unlink_and_recreate() {
    // One thread unlinks and re-creates the name, re-exporting each new
    // file; another opens the first handle and the latest one. Every open
    // either fails with ESTALE or yields the inode the handle names.
    let vfs = Vfs::new();
    let p = vfs.root_process();
    make_file(&p, b"/r", b"");
    let (first, _) = handle_of(&p, b"/r", 0).unwrap();
    let first_ino = p.stat(b"/r").unwrap().ino;
    let latest = std::sync::Arc::new(std::sync::Mutex::new((first.clone(), first_ino)));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let p = vfs.root_process();
        let (latest, done) = (latest.clone(), done.clone());
        std::thread::spawn(move || {
            for _ in 0..2000 {
                p.unlink(b"/r").unwrap();
                make_file(&p, b"/r", b"");
                let (h, _) = handle_of(&p, b"/r", 0).unwrap();
                *latest.lock().unwrap() = (h, p.stat(b"/r").unwrap().ino);
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        let (h, ino) = latest.lock().unwrap().clone();
        for (h, ino) in [(&first, first_ino), (&h, ino)] {
            match p.open_by_handle_at(AT_FDCWD, h, O_RDONLY) {
                Ok(fd) => {
                    assert_eq!(
                        p.fstat(fd).unwrap().ino,
                        ino,
                        "a handle opened another inode"
                    );
                    p.close(fd).unwrap();
                }
                Err(Errno::ESTALE) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
    }
    writer.join().unwrap();
    // How often each side won depends on the scheduler; what must hold
    // once the first inode is gone (no name, nobody using it) is ESTALE.
    assert_eq!(
        p.open_by_handle_at(AT_FDCWD, &first, O_RDONLY),
        Err(Errno::ESTALE),
        "the first handle outlived its inode"
    );
    p.exit();
    vfs.check_invariants().unwrap();
}
