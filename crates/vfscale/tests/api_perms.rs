//! Permission checks for ordinary users (uid 1000, gid 1000 unless said),
//! across the whole API. Expected errnos were taken from the same calls
//! made with `setpriv --reuid=1000 --regid=1000` on a Linux tmpfs.

mod common;
use common::*;

const U: u32 = 1000;

/// The tree the tests share, built by root:
/// /priv 0700 {f}, /ro 0755 {f 0666, sub/, full/{x}}, /sticky 01777
/// {rootf 0666}, /rootfile 0644, /nowrite 0444, /noread 0200, /pub 0777
/// {subd/ (root), rootf, mvd/ (user)}, /wx 0733, /xonly 0711 {f},
/// /ronly 0744 {f}, /own_d 0755 (user) {rootf}, /u_file (user).
fn tree() -> (Vfs, Process, Process) {
    let (vfs, r) = setup();
    r.umask(0);
    let dir = |p: &[u8], m: u32| {
        r.mkdir(p, m).unwrap();
        r.chmod(p, m).unwrap();
    };
    let file = |p: &[u8], m: u32| {
        mkfile(&r, p, b"content");
        r.chmod(p, m).unwrap();
    };
    dir(b"/priv", 0o700);
    file(b"/priv/f", 0o644);
    dir(b"/ro", 0o755);
    file(b"/ro/f", 0o666);
    dir(b"/ro/sub", 0o777);
    dir(b"/ro/full", 0o777);
    file(b"/ro/full/x", 0o666);
    dir(b"/sticky", 0o1777);
    file(b"/sticky/rootf", 0o666);
    file(b"/rootfile", 0o644);
    file(b"/nowrite", 0o444);
    file(b"/noread", 0o200);
    dir(b"/pub", 0o777);
    dir(b"/pub/subd", 0o755);
    file(b"/pub/rootf", 0o644);
    dir(b"/pub/mvd", 0o755);
    r.chown(b"/pub/mvd", U, U).unwrap();
    dir(b"/wx", 0o733);
    dir(b"/xonly", 0o711);
    file(b"/xonly/f", 0o644);
    dir(b"/ronly", 0o744);
    file(b"/ronly/f", 0o644);
    dir(b"/own_d", 0o755);
    r.chown(b"/own_d", U, U).unwrap();
    file(b"/own_d/rootf", 0o644);
    file(b"/u_file", 0o644);
    r.chown(b"/u_file", U, U).unwrap();
    let u = user(&vfs, U, U);
    (vfs, r, u)
}

#[test]
fn search_permission_on_path_components() {
    let (_vfs, r, u) = tree();
    assert_eq!(u.stat(b"/priv/f"), Err(Errno::EACCES));
    assert_eq!(u.stat(b"/priv/nx"), Err(Errno::EACCES));
    assert_eq!(u.stat(b"/priv/f/x"), Err(Errno::EACCES));
    assert_eq!(
        u.stat(b"/priv").unwrap().mode,
        S_IFDIR | 0o700,
        "the dir itself is visible"
    );
    assert_eq!(u.open(b"/priv/f", O_RDONLY, 0), Err(Errno::EACCES));
    assert_eq!(
        u.open(b"/priv/new", O_CREAT | O_RDWR, 0o644),
        Err(Errno::EACCES)
    );
    assert_eq!(u.access(b"/priv/f", F_OK), Err(Errno::EACCES));
    assert_eq!(u.chmod(b"/priv/f", 0o777), Err(Errno::EACCES));
    assert_eq!(u.readlink(b"/priv/f"), Err(Errno::EACCES));
    assert_eq!(u.truncate(b"/priv/f", 0), Err(Errno::EACCES));
    assert_eq!(u.mkdir(b"/priv/x", 0o755), Err(Errno::EACCES));
    assert_eq!(u.unlink(b"/priv/f"), Err(Errno::EACCES));
    assert_eq!(u.chdir(b"/priv"), Err(Errno::EACCES));
    assert_eq!(u.statfs(b"/priv/f"), Err(Errno::EACCES));
    // Search without read: names resolve, listing fails.
    assert_eq!(u.stat(b"/xonly/f").unwrap().size, 7);
    assert_eq!(u.open(b"/xonly", O_RDONLY, 0), Err(Errno::EACCES));
    assert_eq!(u.read_dir(b"/xonly"), Err(Errno::EACCES));
    // Read without search: listing works, names do not resolve.
    assert_eq!(names(&u, b"/ronly"), sorted(&[b"f"]));
    assert_eq!(u.stat(b"/ronly/f"), Err(Errno::EACCES));
    assert_eq!(u.chdir(b"/ronly"), Err(Errno::EACCES));
    // Write and search without read.
    assert_eq!(u.read_dir(b"/wx"), Err(Errno::EACCES));
    let fd = u.open(b"/wx/new", O_CREAT | O_RDWR, 0o644).unwrap();
    u.close(fd).unwrap();
    u.unlink(b"/wx/new").unwrap();
    // A symlink into a private directory does not help.
    r.symlink(b"/priv/f", b"/pub/link").unwrap();
    assert_eq!(u.stat(b"/pub/link"), Err(Errno::EACCES));
    assert_eq!(u.lstat(b"/pub/link").unwrap().mode, S_IFLNK | 0o777);
}

#[test]
fn last_component_needs_search_permission_on_its_directory() {
    let (_vfs, _r, u) = tree();
    assert_eq!(
        u.open(b"/priv/f", O_CREAT | O_RDONLY, 0o644),
        Err(Errno::EACCES)
    );
    assert_eq!(u.mkdir(b"/priv/f", 0o755), Err(Errno::EACCES));
    assert_eq!(u.symlink(b"t", b"/priv/f"), Err(Errno::EACCES));
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/priv/f", S_IFIFO | 0o644, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(u.link(b"/u_file", b"/priv/f"), Err(Errno::EACCES));
    assert_eq!(u.rmdir(b"/priv/x"), Err(Errno::EACCES));
    assert_eq!(u.unlink(b"/priv/nx"), Err(Errno::EACCES));
    assert_eq!(u.rename(b"/priv/nx", b"/pub/x"), Err(Errno::EACCES));
}

#[test]
fn open_read_write_permission() {
    let (_vfs, r, u) = tree();
    assert_eq!(u.open(b"/nowrite", O_WRONLY, 0), Err(Errno::EACCES));
    assert_eq!(u.open(b"/nowrite", O_RDWR, 0), Err(Errno::EACCES));
    assert_eq!(
        u.open(b"/nowrite", O_RDONLY | O_TRUNC, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(u.open(b"/noread", O_RDONLY, 0), Err(Errno::EACCES));
    assert_eq!(u.open(b"/noread", O_RDWR, 0), Err(Errno::EACCES));
    assert_eq!(
        u.open(b"/noread", O_WRONLY, 0),
        Err(Errno::EACCES),
        "0200: owner only"
    );
    let fd = u.open(b"/noread", O_PATH, 0).unwrap();
    u.close(fd).unwrap();
    let fd = u.open(b"/nowrite", O_RDONLY, 0).unwrap();
    u.close(fd).unwrap();
    assert_eq!(r.stat(b"/nowrite").unwrap().size, 7, "nothing truncated");
    // Permission is checked at open: a later chmod does not revoke it.
    mkfile(&u, b"/pub/mine", b"");
    let fd = u.open(b"/pub/mine", O_RDWR, 0).unwrap();
    u.chmod(b"/pub/mine", 0o000).unwrap();
    assert_eq!(u.write(fd, b"x"), Ok(1));
    let mut b = [0u8; 1];
    assert_eq!(u.pread(fd, &mut b, 0), Ok(1));
    assert_eq!(u.open(b"/pub/mine", O_RDONLY, 0), Err(Errno::EACCES));
    u.close(fd).unwrap();
    // truncate needs write permission.
    assert_eq!(u.truncate(b"/nowrite", 0), Err(Errno::EACCES));
    assert_eq!(u.truncate(b"/rootfile", 0), Err(Errno::EACCES));
}

#[test]
fn permission_classes() {
    let (vfs, r, u) = tree();
    // Group class by primary and by supplementary group.
    mkfile(&r, b"/g640", b"");
    r.chown(b"/g640", 0, 50).unwrap();
    r.chmod(b"/g640", 0o640).unwrap();
    let member = vfs.process(Cred::user(2000, 2000, &[50]));
    let primary = vfs.process(Cred::user(2001, 50, &[]));
    for p in [&member, &primary] {
        let fd = p.open(b"/g640", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.open(b"/g640", O_WRONLY, 0), Err(Errno::EACCES));
    }
    assert_eq!(u.open(b"/g640", O_RDONLY, 0), Err(Errno::EACCES));
    // The owner class applies alone, even when it grants less.
    mkfile(&r, b"/o077", b"");
    r.chown(b"/o077", U, U).unwrap();
    r.chmod(b"/o077", 0o077).unwrap();
    assert_eq!(u.open(b"/o077", O_RDONLY, 0), Err(Errno::EACCES));
    let fd = member.open(b"/o077", O_RDWR, 0).unwrap();
    member.close(fd).unwrap();
    // access() for a user.
    assert_eq!(u.access(b"/rootfile", R_OK), Ok(()));
    assert_eq!(u.access(b"/rootfile", W_OK), Err(Errno::EACCES));
    assert_eq!(u.access(b"/rootfile", X_OK), Err(Errno::EACCES));
    assert_eq!(u.access(b"/u_file", R_OK | W_OK), Ok(()));
    assert_eq!(u.access(b"/nx", F_OK), Err(Errno::ENOENT));
}

#[test]
fn faccessat_real_versus_effective_ids() {
    let (vfs, _r, _u) = tree();
    // Real uid 1000, effective uid 0 (a set-uid-root program).
    let setuid_root = vfs.process(Cred {
        ruid: U,
        euid: 0,
        fsuid: 0,
        rgid: U,
        egid: 0,
        fsgid: 0,
        groups: vec![],
    });
    assert_eq!(setuid_root.access(b"/priv", R_OK), Err(Errno::EACCES));
    assert_eq!(setuid_root.access(b"/priv/f", F_OK), Err(Errno::EACCES));
    assert_eq!(
        setuid_root.faccessat(AT_FDCWD, b"/priv", R_OK, AT_EACCESS),
        Ok(())
    );
    assert_eq!(
        setuid_root.faccessat(AT_FDCWD, b"/priv/f", F_OK, AT_EACCESS),
        Ok(())
    );
    // Its other calls use the effective ids.
    assert!(setuid_root.stat(b"/priv/f").is_ok());
    // The reverse: real root, effective user.
    let dropped = vfs.process(Cred {
        ruid: 0,
        euid: U,
        fsuid: U,
        rgid: 0,
        egid: U,
        fsgid: U,
        groups: vec![],
    });
    assert_eq!(dropped.access(b"/priv", R_OK), Ok(()));
    assert_eq!(dropped.access(b"/priv/f", F_OK), Ok(()));
    assert_eq!(
        dropped.faccessat(AT_FDCWD, b"/priv", R_OK, AT_EACCESS),
        Err(Errno::EACCES)
    );
    assert_eq!(
        dropped.faccessat(AT_FDCWD, b"/priv/f", F_OK, AT_EACCESS),
        Err(Errno::EACCES)
    );
    assert_eq!(dropped.stat(b"/priv/f"), Err(Errno::EACCES));
}

#[test]
fn create_and_remove_need_write_on_the_directory() {
    let (_vfs, r, u) = tree();
    assert_eq!(
        u.open(b"/ro/new", O_CREAT | O_RDWR, 0o644),
        Err(Errno::EACCES)
    );
    assert_eq!(u.mkdir(b"/ro/x", 0o755), Err(Errno::EACCES));
    assert_eq!(u.symlink(b"t", b"/ro/x"), Err(Errno::EACCES));
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/ro/x", S_IFIFO | 0o644, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(u.link(b"/u_file", b"/ro/x"), Err(Errno::EACCES));
    // Existing names: EEXIST wins, and opening needs no write on the dir.
    assert_eq!(
        u.open(b"/ro/f", O_CREAT | O_EXCL | O_RDWR, 0o644),
        Err(Errno::EEXIST)
    );
    let fd = u.open(b"/ro/f", O_CREAT | O_RDWR, 0o644).unwrap();
    u.close(fd).unwrap();
    assert_eq!(u.mkdir(b"/ro/sub", 0o755), Err(Errno::EEXIST));
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/ro/f", S_IFIFO | 0o644, 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(u.symlink(b"x", b"/ro/f"), Err(Errno::EEXIST));
    // Removal.
    assert_eq!(u.unlink(b"/ro/f"), Err(Errno::EACCES));
    assert_eq!(
        u.unlink(b"/ro/nx"),
        Err(Errno::ENOENT),
        "lookup comes first"
    );
    assert_eq!(u.rmdir(b"/ro/sub"), Err(Errno::EACCES));
    assert_eq!(u.rmdir(b"/ro/full"), Err(Errno::EACCES), "before ENOTEMPTY");
    assert_eq!(u.rename(b"/ro/f", b"/pub/x"), Err(Errno::EACCES));
    assert_eq!(u.rename(b"/pub/rootf", b"/ro/x"), Err(Errno::EACCES));
    // Inside a writable directory owned by the user, root's files go too.
    u.rename(b"/own_d/rootf", b"/own_d/y").unwrap();
    u.unlink(b"/own_d/y").unwrap();
    // New files are owned by the caller.
    mkfile(&u, b"/pub/new", b"");
    let st = r.stat(b"/pub/new").unwrap();
    assert_eq!((st.uid, st.gid, st.mode), (U, U, S_IFREG | 0o644));
    u.mkdir(b"/pub/newd", 0o777).unwrap();
    assert_eq!(r.stat(b"/pub/newd").unwrap().mode, S_IFDIR | 0o755);
}

#[test]
fn remove_wrong_type_without_permission_is_eacces() {
    let (_vfs, _r, u) = tree();
    assert_eq!(u.unlink(b"/ro/sub"), Err(Errno::EACCES));
    assert_eq!(u.rmdir(b"/ro/f"), Err(Errno::EACCES));
}

#[test]
fn sticky_directories() {
    let (vfs, r, u) = tree();
    assert_eq!(u.unlink(b"/sticky/rootf"), Err(Errno::EPERM));
    assert_eq!(u.rename(b"/sticky/rootf", b"/pub/x"), Err(Errno::EPERM));
    assert_eq!(u.rename(b"/sticky/rootf", b"/sticky/x"), Err(Errno::EPERM));
    // Replacing someone else's file in a sticky directory also removes it.
    mkfile(&u, b"/sticky/mine", b"");
    assert_eq!(
        u.rename(b"/sticky/mine", b"/sticky/rootf"),
        Err(Errno::EPERM)
    );
    // Own files can be removed.
    u.rename(b"/sticky/mine", b"/sticky/mine2").unwrap();
    u.unlink(b"/sticky/mine2").unwrap();
    // So can anything by the directory's owner.
    r.mkdir(b"/pub/st", 0o777).unwrap();
    r.chmod(b"/pub/st", 0o1777).unwrap();
    r.chown(b"/pub/st", U, U).unwrap();
    let other = user(&vfs, 2000, 2000);
    mkfile(&other, b"/pub/st/other", b"");
    u.unlink(b"/pub/st/other").unwrap();
    mkfile(&other, b"/pub/st/other2", b"");
    let third = user(&vfs, 3000, 3000);
    assert_eq!(third.unlink(b"/pub/st/other2"), Err(Errno::EPERM));
    r.unlink(b"/pub/st/other2").unwrap();
}

#[test]
fn renaming_a_directory_to_another_parent_needs_write_on_it() {
    let (_vfs, _r, u) = tree();
    // Same parent: no write permission on the directory itself needed.
    u.rename(b"/pub/subd", b"/pub/subd2").unwrap();
    // Another parent: its ".." changes, so write on it is needed.
    assert_eq!(u.rename(b"/pub/subd2", b"/sticky/subd"), Err(Errno::EACCES));
    assert_eq!(u.rename(b"/pub/subd2", b"/wx/subd"), Err(Errno::EACCES));
    // The user's own directory moves.
    u.rename(b"/pub/mvd", b"/sticky/mvd").unwrap();
    u.rename(b"/sticky/mvd", b"/pub/mvd").unwrap();
}

#[test]
fn chmod_by_non_owner_and_setgid_rules() {
    let (vfs, r, u) = tree();
    assert_eq!(u.chmod(b"/rootfile", 0o777), Err(Errno::EPERM));
    assert_eq!(u.chmod(b"/nx", 0o777), Err(Errno::ENOENT));
    let fd = u.open(b"/rootfile", O_RDONLY, 0).unwrap();
    assert_eq!(u.fchmod(fd, 0o777), Err(Errno::EPERM));
    u.close(fd).unwrap();
    // The owner may; S_ISGID stays only for members of the file's group.
    u.chmod(b"/u_file", 0o2755).unwrap();
    assert_eq!(r.stat(b"/u_file").unwrap().mode, S_IFREG | 0o2755);
    r.chown(b"/u_file", U, 50).unwrap();
    u.chmod(b"/u_file", 0o2755).unwrap();
    assert_eq!(r.stat(b"/u_file").unwrap().mode, S_IFREG | 0o755);
    let member = vfs.process(Cred::user(U, U, &[50]));
    member.chmod(b"/u_file", 0o2755).unwrap();
    assert_eq!(r.stat(b"/u_file").unwrap().mode, S_IFREG | 0o2755);
}

#[test]
fn chown_by_non_root() {
    let (vfs, r, u) = tree();
    assert_eq!(u.chown(b"/rootfile", U, u32::MAX), Err(Errno::EPERM));
    assert_eq!(u.chown(b"/u_file", 0, u32::MAX), Err(Errno::EPERM));
    assert_eq!(u.chown(b"/u_file", u32::MAX, 0), Err(Errno::EPERM));
    // "Changing" to the same uid, or to the own group, is allowed.
    u.chown(b"/u_file", U, u32::MAX).unwrap();
    u.chown(b"/u_file", u32::MAX, U).unwrap();
    // A non-owner's chown(-1, -1) changes nothing and succeeds.
    u.chown(b"/rootfile", u32::MAX, u32::MAX).unwrap();
    // Supplementary groups.
    let member = vfs.process(Cred::user(U, U, &[50]));
    member.chown(b"/u_file", u32::MAX, 50).unwrap();
    assert_eq!(r.stat(b"/u_file").unwrap().gid, 50);
    assert_eq!(member.chown(b"/u_file", u32::MAX, 51), Err(Errno::EPERM));
    // The owner's chown clears set-id bits.
    r.chmod(b"/u_file", 0o6755).unwrap();
    member.chown(b"/u_file", u32::MAX, u32::MAX).unwrap();
    assert_eq!(r.stat(b"/u_file").unwrap().mode, S_IFREG | 0o755);
    let fd = u.open(b"/rootfile", O_RDONLY, 0).unwrap();
    assert_eq!(u.fchown(fd, U, U), Err(Errno::EPERM));
    u.close(fd).unwrap();
}

#[test]
fn writes_by_non_root_clear_set_id_bits() {
    let (_vfs, r, u) = tree();
    for (name, mode, op, after) in [
        (&b"/pub/s1"[..], 0o6755, "write", 0o755),
        (b"/pub/s2", 0o2745, "write", 0o2745),
        (b"/pub/s3", 0o4644, "write", 0o644),
        (b"/pub/s4", 0o6755, "truncate", 0o755),
    ] {
        mkfile(&r, name, b"");
        r.chown(name, U, U).unwrap();
        r.chmod(name, mode).unwrap();
        if op == "write" {
            let fd = u.open(name, O_WRONLY, 0).unwrap();
            u.write(fd, b"x").unwrap();
            u.close(fd).unwrap();
        } else {
            u.truncate(name, 0).unwrap();
        }
        assert_eq!(r.stat(name).unwrap().mode, S_IFREG | after, "{op} {mode:o}");
    }
    // Root's writes keep them.
    mkfile(&r, b"/pub/s5", b"");
    r.chmod(b"/pub/s5", 0o6755).unwrap();
    let fd = r.open(b"/pub/s5", O_WRONLY, 0).unwrap();
    r.write(fd, b"x").unwrap();
    r.close(fd).unwrap();
    assert_eq!(r.stat(b"/pub/s5").unwrap().mode, S_IFREG | 0o6755);
}

#[test]
fn setgid_directories() {
    let (_vfs, r, u) = tree();
    r.mkdir(b"/sgid", 0o777).unwrap();
    r.chmod(b"/sgid", 0o2777).unwrap();
    r.chown(b"/sgid", 0, 50).unwrap();
    u.mkdir(b"/sgid/d", 0o755).unwrap();
    let d = r.stat(b"/sgid/d").unwrap();
    assert_eq!((d.mode, d.uid, d.gid), (S_IFDIR | 0o2755, U, 50));
    let fd = u.open(b"/sgid/f", O_CREAT | O_RDWR, 0o2755).unwrap();
    u.close(fd).unwrap();
    let f = r.stat(b"/sgid/f").unwrap();
    assert_eq!(
        (f.mode, f.gid),
        (S_IFREG | 0o755, 50),
        "not a member: S_ISGID dropped"
    );
}

#[test]
fn utimes_permission() {
    let (_vfs, _r, u) = tree();
    let t = Timespec::new(1, 0);
    assert_eq!(
        u.utimensat(AT_FDCWD, b"/rootfile", None, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(
        u.utimensat(AT_FDCWD, b"/rootfile", Some([t, t]), 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        u.utimensat(
            AT_FDCWD,
            b"/rootfile",
            Some([Timespec::NOW, Timespec::NOW]),
            0
        ),
        Err(Errno::EACCES)
    );
    // Write permission allows "now" but not explicit times.
    u.utimensat(AT_FDCWD, b"/sticky/rootf", None, 0).unwrap();
    assert_eq!(
        u.utimensat(AT_FDCWD, b"/sticky/rootf", Some([t, t]), 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        u.utimensat(
            AT_FDCWD,
            b"/sticky/rootf",
            Some([Timespec::NOW, Timespec::OMIT]),
            0
        ),
        Err(Errno::EPERM)
    );
    // The owner may do anything.
    u.utimensat(AT_FDCWD, b"/u_file", Some([t, t]), 0).unwrap();
    assert_eq!(u.stat(b"/u_file").unwrap().mtime, t);
    let fd = u.open(b"/rootfile", O_RDONLY, 0).unwrap();
    assert_eq!(u.futimens(fd, None), Err(Errno::EACCES));
    assert_eq!(u.futimens(fd, Some([t, t])), Err(Errno::EPERM));
    u.close(fd).unwrap();
}

#[test]
fn privileged_operations() {
    let (_vfs, _r, u) = tree();
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/pub/c", S_IFCHR | 0o644, (1 << 8) | 3),
        Err(Errno::EPERM)
    );
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/pub/b", S_IFBLK | 0o644, 0),
        Err(Errno::EPERM)
    );
    u.mknodat(AT_FDCWD, b"/pub/fifo", S_IFIFO | 0o644, 0)
        .unwrap();
    // chroot: path errors first, then EPERM.
    assert_eq!(u.chroot(b"/pub"), Err(Errno::EPERM));
    assert_eq!(u.chroot(b"/xonly"), Err(Errno::EPERM));
    assert_eq!(u.chroot(b"/priv"), Err(Errno::EACCES));
    assert_eq!(u.chroot(b"/ronly"), Err(Errno::EACCES));
    assert_eq!(u.chroot(b"/nx"), Err(Errno::ENOENT));
    assert_eq!(u.chroot(b"/rootfile"), Err(Errno::ENOTDIR));
    // mount and umount.
    assert_eq!(u.mount(b"none", b"/pub", b"tmpfs", 0), Err(Errno::EPERM));
    assert_eq!(u.umount2(b"/", 0), Err(Errno::EPERM));
    // Root-only linkat(AT_EMPTY_PATH) is tested in api_names.rs.
}

#[test]
fn whiteout_mknod_needs_no_privilege() {
    let (_vfs, _r, u) = tree();
    u.mknodat(AT_FDCWD, b"/pub/wh", S_IFCHR | 0o644, 0).unwrap();
}

#[test]
fn with_cred_keeps_descriptors() {
    let (_vfs, r, _u) = tree();
    let fd = r.open(b"/priv/f", O_RDONLY, 0).unwrap();
    let u = r.with_cred(Cred::user(U, U, &[])).unwrap();
    assert_eq!(u.cred().euid, U);
    let mut b = [0u8; 7];
    assert_eq!(
        u.read(fd, &mut b),
        Ok(7),
        "an open descriptor keeps its access"
    );
    assert_eq!(u.open(b"/priv/f", O_RDONLY, 0), Err(Errno::EACCES));
    assert_eq!(u.openat(fd, b"", O_RDONLY, 0), Err(Errno::ENOENT));
}

#[test]
fn open_creat_of_others_non_regular_file_in_sticky_directory() {
    // may_create_in_sticky (fs.protected_regular/fifos = 0, the kernel
    // default): O_CREAT on an existing symlink (with O_NOFOLLOW), socket or
    // device node in a world-writable sticky directory, owned by neither
    // the directory's owner nor the caller, is EACCES, root included;
    // regular files are exempt. Found by the kernel differential test
    // (vfscale said ELOOP); checked on Linux 6.18 as uid 1001.
    let (vfs, r, u) = tree();
    u.symlink(b"/pub/rootf", b"/sticky/ulink").unwrap();
    let other = user(&vfs, 1001, 1001);
    let creat_nofollow = O_CREAT | O_RDWR | O_NOFOLLOW;
    assert_eq!(
        other.open(b"/sticky/ulink", creat_nofollow, 0o644),
        Err(Errno::EACCES)
    );
    assert_eq!(
        r.open(b"/sticky/ulink", creat_nofollow, 0o644),
        Err(Errno::EACCES),
        "root is not exempt"
    );
    // The owner gets the usual ELOOP; without O_CREAT everyone does.
    assert_eq!(
        u.open(b"/sticky/ulink", creat_nofollow, 0o644),
        Err(Errno::ELOOP)
    );
    assert_eq!(
        other.open(b"/sticky/ulink", O_RDWR | O_NOFOLLOW, 0),
        Err(Errno::ELOOP)
    );
    // O_EXCL is EEXIST first.
    assert_eq!(
        other.open(b"/sticky/ulink", creat_nofollow | O_EXCL, 0o644),
        Err(Errno::EEXIST)
    );
    // A socket node: EACCES for others; a regular file of root's is fine.
    u.mknodat(AT_FDCWD, b"/sticky/usock", S_IFSOCK | 0o666, 0)
        .unwrap();
    assert_eq!(
        other.open(b"/sticky/usock", O_CREAT | O_RDWR, 0o644),
        Err(Errno::EACCES)
    );
    let fd = other
        .open(b"/sticky/rootf", O_CREAT | O_RDWR, 0o644)
        .unwrap();
    other.close(fd).unwrap();
    // Not world-writable (01775): no sticky-create rule.
    r.chmod(b"/sticky", 0o1775).unwrap();
    assert_eq!(
        other.open(b"/sticky/ulink", creat_nofollow, 0o644),
        Err(Errno::ELOOP)
    );
}
