//! chdir, fchdir, getcwd, chroot, umask, fork, exit, and process lifetime
//! (clone_thread, object counts).

mod common;
use common::*;

// ----------------------------------------------------------- chdir/getcwd

#[test]
fn chdir_and_relative_paths() {
    let (_vfs, p) = setup();
    assert_eq!(p.getcwd().unwrap(), b"/");
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    mkfile(&p, b"/a/b/f", b"x");
    p.chdir(b"/a").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/a");
    assert_eq!(p.stat(b"b/f").unwrap().size, 1);
    p.chdir(b"b").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/a/b");
    assert_eq!(p.stat(b"f").unwrap().size, 1);
    assert_eq!(p.stat(b"./f").unwrap().size, 1);
    assert_eq!(p.stat(b"../b/f").unwrap().size, 1);
    mkfile(&p, b"rel", b"");
    assert!(p.stat(b"/a/b/rel").is_ok());
    p.chdir(b"../..").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/");
    p.chdir(b"..").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/", "'..' of the root is the root");
    // Through a symlink: the cwd is the target.
    p.symlink(b"a/b", b"/lb").unwrap();
    p.chdir(b"/lb").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/a/b");
    p.chdir(b"/a/b/").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/a/b");
    // Errors leave the cwd alone.
    assert_eq!(p.chdir(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.chdir(b""), Err(Errno::ENOENT));
    assert_eq!(p.chdir(b"f"), Err(Errno::ENOTDIR));
    assert_eq!(p.chdir(b"f/"), Err(Errno::ENOTDIR));
    assert_eq!(p.chdir(b"f/x"), Err(Errno::ENOTDIR));
    assert_eq!(p.chdir(&[b'a'; 256]), Err(Errno::ENAMETOOLONG));
    p.symlink(b"loop", b"/loop").unwrap();
    assert_eq!(p.chdir(b"/loop"), Err(Errno::ELOOP));
    assert_eq!(p.getcwd().unwrap(), b"/a/b");
}

#[test]
fn fchdir_semantics() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"");
    let dfd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.fchdir(dfd).unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/d");
    p.chdir(b"/").unwrap();
    let pfd = p.open(b"/d", O_PATH, 0).unwrap();
    p.fchdir(pfd).unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/d");
    p.chdir(b"/").unwrap();
    let ffd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fchdir(ffd), Err(Errno::ENOTDIR));
    assert_eq!(p.fchdir(999), Err(Errno::EBADF));
    assert_eq!(p.fchdir(-1), Err(Errno::EBADF));
    assert_eq!(p.getcwd().unwrap(), b"/");
    // The cwd outlives the descriptor it came from.
    p.fchdir(dfd).unwrap();
    p.close(dfd).unwrap();
    p.close(pfd).unwrap();
    mkfile(&p, b"here", b"");
    assert!(p.stat(b"/d/here").is_ok());
}

#[test]
fn getcwd_follows_renames_and_removal() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    p.mkdir(b"/a/b/c", 0o755).unwrap();
    p.chdir(b"/a/b/c").unwrap();
    p.rename(b"/a", b"/z").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/z/b/c");
    p.mkdir(b"/y", 0o755).unwrap();
    p.rename(b"/z/b", b"/y/moved").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/y/moved/c");
    assert_eq!(p.stat(b"..").unwrap().ino, p.stat(b"/y/moved").unwrap().ino);
    // The cwd removed: getcwd fails, "." still stats (no links).
    p.rmdir(b"/y/moved/c").unwrap();
    assert_eq!(p.getcwd(), Err(Errno::ENOENT));
    assert_eq!(p.stat(b".").unwrap().nlink, 0);
    assert_eq!(p.open(b"new", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOENT));
    p.chdir(b"/").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/");
}

#[test]
fn getcwd_across_mounts() {
    let (_vfs, p) = setup();
    p.mkdir(b"/m", 0o755).unwrap();
    p.mount(b"none", b"/m", b"tmpfs", 0).unwrap();
    p.mkdir(b"/m/d", 0o755).unwrap();
    p.chdir(b"/m/d").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/m/d");
    p.chdir(b"..").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/m");
    p.chdir(b"..").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/");
}

// ---------------------------------------------------------------- chroot

/// The stat family's fast lookup reads the start dentry alone (no
/// seqcount, no mount): it must still see a root or cwd that a thread
/// sharing the context changed, for plain cached paths, on the first call.
#[test]
fn stat_fast_path_follows_the_shared_root_and_cwd() {
    let (_vfs, p) = setup();
    p.mkdir(b"/r", 0o755).unwrap();
    mkfile(&p, b"/r/f", b"new root");
    mkfile(&p, b"/f", b"old root");
    let old_f = p.stat(b"/f").unwrap().ino;
    let new_f = p.stat(b"/r/f").unwrap().ino;
    assert_ne!(old_f, new_f);
    let sibling = p.clone_thread();
    std::thread::scope(|s| {
        s.spawn(|| sibling.chdir(b"/r").unwrap());
    });
    assert_eq!(p.stat(b"f").unwrap().ino, new_f);
    assert_eq!(p.access(b"f", F_OK), Ok(()));
    assert_eq!(p.stat(b"/f").unwrap().ino, old_f);
    std::thread::scope(|s| {
        s.spawn(|| sibling.chroot(b"/r").unwrap());
    });
    assert_eq!(p.stat(b"/f").unwrap().ino, new_f);
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", 0, STATX_BASIC_STATS).unwrap().ino,
        new_f
    );
    assert_eq!(p.stat(b"/r"), Err(Errno::ENOENT));
}

#[test]
fn chroot_confines_paths() {
    let (_vfs, p) = setup();
    p.mkdir(b"/r", 0o755).unwrap();
    p.mkdir(b"/r/a", 0o755).unwrap();
    p.mkdir(b"/r/a/b", 0o755).unwrap();
    mkfile(&p, b"/r/inside", b"in");
    mkfile(&p, b"/outside", b"out");
    p.symlink(b"/a", b"/r/abs").unwrap();
    p.symlink(b"../../../../outside", b"/r/a/up").unwrap();
    p.symlink(b"/../../outside", b"/r/absup").unwrap();
    let c = p.fork().unwrap();
    c.chroot(b"/r").unwrap();
    // chroot does not move the cwd; go to the new root.
    c.chdir(b"/").unwrap();
    assert_eq!(c.getcwd().unwrap(), b"/");
    let root = c.stat(b"/").unwrap().ino;
    assert_eq!(root, p.stat(b"/r").unwrap().ino);
    assert_eq!(read_file(&c, b"/inside"), b"in");
    assert_eq!(c.stat(b"/outside"), Err(Errno::ENOENT));
    // ".." never leaves the root, by path or through symlinks.
    assert_eq!(c.stat(b"/..").unwrap().ino, root);
    assert_eq!(c.stat(b"..").unwrap().ino, root);
    assert_eq!(c.stat(b"/a/b/../../..").unwrap().ino, root);
    assert_eq!(c.stat(b"/a/up"), Err(Errno::ENOENT));
    assert_eq!(c.stat(b"/absup"), Err(Errno::ENOENT));
    assert_eq!(c.stat(b"/abs").unwrap().ino, c.stat(b"/a").unwrap().ino);
    c.chdir(b"/a/b").unwrap();
    assert_eq!(c.getcwd().unwrap(), b"/a/b");
    c.chdir(b"../../../..").unwrap();
    assert_eq!(c.getcwd().unwrap(), b"/");
    // chroot(".") from inside.
    c.chdir(b"/a").unwrap();
    c.chroot(b".").unwrap();
    assert_eq!(c.getcwd().unwrap(), b"/");
    assert_eq!(c.stat(b"/").unwrap().ino, p.stat(b"/r/a").unwrap().ino);
    // The parent is unaffected.
    assert_eq!(p.stat(b"/outside").unwrap().size, 3);
    assert_eq!(p.getcwd().unwrap(), b"/");
    c.exit();
}

#[test]
fn getcwd_outside_the_root_is_unreachable() {
    let (_vfs, p) = setup();
    p.mkdir(b"/r", 0o755).unwrap();
    p.mkdir(b"/out", 0o755).unwrap();
    p.mkdir(b"/out/sub", 0o755).unwrap();
    p.chdir(b"/out/sub").unwrap();
    p.chroot(b"/r").unwrap();
    // The kernel's getcwd(2) prefixes "(unreachable)" to the path from the
    // namespace root.
    assert_eq!(p.getcwd().unwrap(), b"(unreachable)/out/sub");
    // Relative walks from there are not confined until they meet the root.
    mkfile(&p, b"x", b"");
    p.chdir(b"/").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/");
    assert_eq!(p.stat(b"/out"), Err(Errno::ENOENT));
}

#[test]
fn chroot_errors() {
    let (_vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    assert_eq!(p.chroot(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(p.chroot(b""), Err(Errno::ENOENT));
    assert_eq!(p.chroot(b"/f"), Err(Errno::ENOTDIR));
    assert_eq!(p.chroot(b"/f/"), Err(Errno::ENOTDIR));
    assert_eq!(p.stat(b"/f").unwrap().size, 0, "the root is unchanged");
}

// ----------------------------------------------------------------- umask

#[test]
fn umask_semantics() {
    let (_vfs, p) = setup();
    assert_eq!(p.umask(0o077), 0o022, "the default is 022");
    assert_eq!(p.umask(0o7777), 0o077);
    assert_eq!(p.umask(0o027), 0o777, "only the permission bits are kept");
    p.mkdir(b"/d", 0o777).unwrap();
    assert_eq!(p.stat(b"/d").unwrap().mode, S_IFDIR | 0o750);
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o666).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o640);
    p.mknodat(AT_FDCWD, b"/p", S_IFIFO | 0o666, 0).unwrap();
    assert_eq!(p.stat(b"/p").unwrap().mode, S_IFIFO | 0o640);
    // Set-id bits are not masked.
    let fd = p.open(b"/s", O_CREAT | O_RDWR, 0o6777).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.stat(b"/s").unwrap().mode, S_IFREG | 0o6750);
    // chmod ignores the umask.
    p.chmod(b"/f", 0o777).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().mode, S_IFREG | 0o777);
    // Inherited by a fork, then independent.
    let c = p.fork().unwrap();
    assert_eq!(c.umask(0), 0o027);
    assert_eq!(p.umask(0o027), 0o027);
    c.exit();
}

// ------------------------------------------------------------------ fork

#[test]
fn fork_shares_open_files_not_the_table() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"0123456789");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    let cx = p.open(b"/f", O_RDONLY | O_CLOEXEC, 0).unwrap();
    let c = p.fork().unwrap();
    // Same open file description: one offset.
    let mut b = [0u8; 3];
    c.read(fd, &mut b).unwrap();
    assert_eq!(&b, b"012");
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(3));
    p.read(fd, &mut b).unwrap();
    assert_eq!(&b, b"345");
    assert_eq!(c.lseek(fd, 0, SEEK_CUR), Ok(6));
    assert!(c.fd_cloexec(cx).unwrap(), "flags are copied");
    // Separate tables.
    let only_child = c.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(only_child, 2);
    assert_eq!(p.fstat(only_child), Err(Errno::EBADF));
    let only_parent = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(only_parent, 2, "the same number, another open file");
    c.read(only_child, &mut b).unwrap();
    assert_eq!(p.lseek(only_parent, 0, SEEK_CUR), Ok(0));
    c.close(fd).unwrap();
    assert!(p.fstat(fd).is_ok());
    // O_APPEND is a property of the shared description.
    let af = p.open(b"/f", O_WRONLY | O_APPEND, 0).unwrap();
    let c2 = p.fork().unwrap();
    c2.write(af, b"!").unwrap();
    assert_eq!(read_file(&p, b"/f"), b"0123456789!");
    c2.exit();
    c.exit();
    drop(p);
    let p = vfs.root_process();
    p.unlink(b"/f").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn fork_copies_cwd_and_root() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.chdir(b"/a").unwrap();
    let c = p.fork().unwrap();
    assert_eq!(c.getcwd().unwrap(), b"/a");
    c.chdir(b"/b").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/a");
    p.chroot(b"/a").unwrap();
    assert_eq!(p.stat(b"/b"), Err(Errno::ENOENT), "the parent's root is /a");
    assert!(c.stat(b"/b").is_ok(), "the child's root did not change");
    let gc = p.fork().unwrap();
    assert_eq!(gc.stat(b"/").unwrap().ino, c.stat(b"/a").unwrap().ino);
    gc.exit();
    c.exit();
}

#[test]
fn clone_thread_shares_everything() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"abc");
    let t = p.clone_thread();
    let fd = t.open(b"/f", O_RDONLY, 0).unwrap();
    assert!(p.fstat(fd).is_ok(), "one descriptor table");
    t.chdir(b"/d").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/d", "one cwd");
    t.umask(0o077);
    assert_eq!(p.umask(0o022), 0o077, "one umask");
    // Threads run concurrently on the shared table.
    let h = std::thread::spawn(move || {
        let mut b = [0u8; 1];
        t.read(fd, &mut b).unwrap();
        t.close(fd).unwrap();
        b[0]
    });
    assert_eq!(h.join().unwrap(), b'a');
    assert_eq!(p.fstat(fd), Err(Errno::EBADF));
}

#[test]
fn exit_and_drop_release_everything() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/f", b"data");
    let c = p.fork().unwrap();
    let fds: Vec<Fd> = (0..5)
        .map(|_| c.open(b"/d/f", O_RDONLY, 0).unwrap())
        .collect();
    c.chdir(b"/d").unwrap();
    assert_eq!(vfs.object_counts().files, 5);
    c.exit();
    assert_eq!(vfs.object_counts().files, 0);
    let c = p.fork().unwrap();
    let _ = c.open(b"/d/f", O_RDONLY, 0).unwrap();
    drop(c);
    assert_eq!(vfs.object_counts().files, 0, "drop exits");
    // An unlinked open file lives until its last descriptor closes.
    let fd = p.open(b"/d/f", O_RDONLY, 0).unwrap();
    let c = p.fork().unwrap();
    p.unlink(b"/d/f").unwrap();
    p.close(fd).unwrap();
    let mut b = [0u8; 4];
    assert_eq!(c.read(fd, &mut b), Ok(4), "the child's copy keeps it");
    c.exit();
    p.rmdir(b"/d").unwrap();
    let _ = fds;
    drop(p);
    assert_baseline(&vfs);
}

#[test]
fn object_counts_return_to_baseline() {
    let (vfs, p) = setup();
    assert_baseline(&vfs);
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/b", 0o755).unwrap();
    for i in 0..100 {
        mkfile(&p, format!("/a/b/f{i}").as_bytes(), b"x");
    }
    p.link(b"/a/b/f0", b"/a/hard").unwrap();
    p.symlink(b"b/f1", b"/a/sym").unwrap();
    p.mknodat(AT_FDCWD, b"/a/fifo", S_IFIFO | 0o644, 0).unwrap();
    for i in 0..100 {
        let _ = p.stat(format!("/a/missing{i}").as_bytes());
    }
    p.rename(b"/a/b", b"/a/c").unwrap();
    let keep = p.open(b"/a/c/f5", O_RDONLY, 0).unwrap();
    let c = p.fork().unwrap();
    c.chdir(b"/a/c").unwrap();
    for i in 0..100 {
        p.unlink(format!("/a/c/f{i}").as_bytes()).unwrap();
    }
    p.rmdir(b"/a/c").unwrap();
    for n in [&b"/a/hard"[..], b"/a/sym", b"/a/fifo"] {
        p.unlink(n).unwrap();
    }
    p.rmdir(b"/a").unwrap();
    vfs.drop_caches();
    let mid = vfs.object_counts();
    assert_eq!(mid.files, 1, "one open file, shared by the fork: {mid:?}");
    c.exit();
    p.close(keep).unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// Two threads of one process (`clone_thread`) exiting at the same moment:
/// exactly one of them releases the fd table and the fs context they
/// share. Deciding by the shared Arcs' counts let both see the other's
/// reference and neither release: the open directory, the root and the
/// cwd leaked (races.rs `link_vs_last_put` failed about one run in ten).
#[test]
fn siblings_exiting_together_release_what_they_share_once() {
    let vfs = Vfs::new();
    for _ in 0..2000 {
        let p = vfs.root_process();
        let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        assert!(fd >= 0);
        let q = p.clone_thread();
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let theirs = start.clone();
        let t = std::thread::spawn(move || {
            theirs.wait();
            drop(q);
        });
        start.wait();
        drop(p);
        t.join().unwrap();
    }
    vfs.check_invariants().unwrap();
}
