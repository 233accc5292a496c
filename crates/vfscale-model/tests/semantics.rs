//! Direct tests of the model's Linux semantics for the tricky cases: path
//! resolution, rename rules, symlink loops, the permission matrix, getdents
//! cookies across unlink, mounts and EBUSY, fd tables and fork.
//!
//! Each expectation is what Linux (6.12+, tmpfs) returns for the same
//! sequence of system calls.

use vfscale::abi::*;
use vfscale::{Cred, Errno, ProcessApi};
use vfscale_model::{ModelFs, ModelProcess};

fn root() -> (ModelFs, ModelProcess) {
    let fs = ModelFs::new();
    let p = fs.process(Cred::root());
    (fs, p)
}

fn user(fs: &ModelFs, uid: u32) -> ModelProcess {
    fs.process(Cred::user(uid, uid, &[]))
}

fn names(p: &ModelProcess, path: &[u8]) -> Vec<Vec<u8>> {
    p.read_dir(path)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect()
}

fn create(p: &ModelProcess, path: &[u8], data: &[u8]) {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644).unwrap();
    assert_eq!(p.write(fd, data).unwrap(), data.len());
    p.close(fd).unwrap();
}

const E: fn(Errno) -> SysResult<()> = Err;

// ---------------- path resolution ----------------

#[test]
fn path_argument_checks() {
    let (_fs, p) = root();
    assert_eq!(p.stat(b"").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"a\0b").unwrap_err(), Errno::EINVAL);
    let long = vec![b'a'; PATH_MAX];
    assert_eq!(p.stat(&long).unwrap_err(), Errno::ENAMETOOLONG);
    let ok_len = vec![b'/'; PATH_MAX - 1];
    assert!(p.stat(&ok_len).is_ok(), "4095 slashes name the root");
    let comp = vec![b'x'; 256];
    assert_eq!(p.stat(&comp).unwrap_err(), Errno::ENAMETOOLONG);
    assert_eq!(p.stat(&comp[..255]).unwrap_err(), Errno::ENOENT);
    // A long component after a missing one: ENOENT comes first.
    let mut path = b"missing/".to_vec();
    path.extend_from_slice(&comp);
    assert_eq!(p.stat(&path).unwrap_err(), Errno::ENOENT);
    assert_eq!(p.mkdir(&comp, 0o755), E(Errno::ENAMETOOLONG));
    assert_eq!(
        p.open(&comp, O_CREAT | O_RDWR, 0o644).unwrap_err(),
        Errno::ENAMETOOLONG
    );
}

#[test]
fn dots_slashes_and_root() {
    let (_fs, p) = root();
    p.mkdir(b"/a", 0o755).unwrap();
    create(&p, b"/a/f", b"x");
    assert_eq!(p.stat(b"/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    assert_eq!(p.stat(b"/a/../a/./f").unwrap().size, 1);
    assert_eq!(p.stat(b"/a/f/").unwrap_err(), Errno::ENOTDIR);
    assert_eq!(p.stat(b"/a/f/.").unwrap_err(), Errno::ENOTDIR);
    assert_eq!(p.stat(b"/a/f/..").unwrap_err(), Errno::ENOTDIR);
    assert!(p.stat(b"//a///").is_ok());
    assert_eq!(p.mkdir(b"/", 0o755), E(Errno::EEXIST));
    assert_eq!(p.mkdir(b"/a/.", 0o755), E(Errno::EEXIST));
    assert_eq!(p.mkdir(b"/a/..", 0o755), E(Errno::EEXIST));
    assert!(
        p.mkdir(b"/a/d/", 0o755).is_ok(),
        "mkdir accepts a trailing slash"
    );
    assert_eq!(p.symlink(b"x", b"/a/s/"), E(Errno::ENOENT));
    assert_eq!(p.symlink(b"x", b"/a/f/"), E(Errno::EEXIST));
    assert_eq!(
        p.mknodat(AT_FDCWD, b"/a/n/", S_IFIFO | 0o644, 0),
        E(Errno::ENOENT)
    );
    // open: O_CREAT with a trailing slash is EISDIR even for a new name.
    assert_eq!(
        p.open(b"/a/new/", O_CREAT | O_RDWR, 0o644).unwrap_err(),
        Errno::EISDIR
    );
    assert_eq!(p.open(b"/a/f/", O_RDONLY, 0).unwrap_err(), Errno::ENOTDIR);
    assert_eq!(
        p.open(b".", O_CREAT | O_RDWR, 0).unwrap_err(),
        Errno::EISDIR
    );
    assert_eq!(
        p.open(b".", O_CREAT | O_EXCL | O_RDWR, 0).unwrap_err(),
        Errno::EEXIST
    );
    assert_eq!(
        p.open(b"/a", O_DIRECTORY | O_CREAT, 0).unwrap_err(),
        Errno::EINVAL
    );
    // relative to a non-directory fd
    let fd = p.open(b"/a/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fstatat(fd, b"x", 0).unwrap_err(), Errno::ENOTDIR);
    assert_eq!(p.fstatat(fd, b"", AT_EMPTY_PATH).unwrap().size, 1);
    assert_eq!(p.fstatat(fd, b"", 0).unwrap_err(), Errno::ENOENT);
    assert!(
        p.fstatat(fd, b"/a", 0).is_ok(),
        "absolute paths ignore dirfd"
    );
    assert_eq!(p.fstatat(99, b"x", 0).unwrap_err(), Errno::EBADF);
    assert!(p.fstatat(99, b"/a", 0).is_ok());
    assert_eq!(
        p.fstatat(AT_FDCWD, b"/a", 0x8000).unwrap_err(),
        Errno::EINVAL
    );
}

#[test]
fn symlinks_loops_and_limits() {
    let (_fs, p) = root();
    p.mkdir(b"/d", 0o755).unwrap();
    create(&p, b"/d/f", b"hello");
    p.symlink(b"f", b"/d/l").unwrap();
    p.symlink(b"/d", b"/ld").unwrap();
    p.symlink(b"loop", b"/loop").unwrap();
    p.symlink(b"missing", b"/dangling").unwrap();
    assert_eq!(p.stat(b"/d/l").unwrap().size, 5);
    assert!(s_islnk(p.lstat(b"/d/l").unwrap().mode));
    assert_eq!(p.lstat(b"/d/l").unwrap().size, 1);
    assert_eq!(p.stat(b"/ld/f").unwrap().size, 5);
    assert!(
        s_isdir(p.lstat(b"/ld/").unwrap().mode),
        "trailing slash follows"
    );
    assert_eq!(p.lstat(b"/d/l/").unwrap_err(), Errno::ENOTDIR);
    assert_eq!(p.stat(b"/loop").unwrap_err(), Errno::ELOOP);
    assert!(p.lstat(b"/loop").is_ok());
    assert_eq!(p.stat(b"/loop/x").unwrap_err(), Errno::ELOOP);
    assert_eq!(
        p.open(b"/d/l", O_RDONLY | O_NOFOLLOW, 0).unwrap_err(),
        Errno::ELOOP
    );
    assert_eq!(
        p.open(b"/d/l", O_RDONLY | O_NOFOLLOW | O_DIRECTORY, 0)
            .unwrap_err(),
        Errno::ENOTDIR
    );
    let pfd = p.open(b"/d/l", O_PATH | O_NOFOLLOW, 0).unwrap();
    assert!(s_islnk(p.fstat(pfd).unwrap().mode));
    let mut buf = [0u8; 16];
    assert_eq!(p.readlinkat(pfd, b"", &mut buf).unwrap(), 1);
    assert_eq!(p.read(pfd, &mut buf).unwrap_err(), Errno::EBADF);
    assert_eq!(p.readlink(b"/d/f").unwrap_err(), Errno::EINVAL);
    assert_eq!(
        p.readlinkat(AT_FDCWD, b"/d/l", &mut []).unwrap_err(),
        Errno::EINVAL
    );
    let mut two = [0u8; 2];
    assert_eq!(
        p.readlinkat(AT_FDCWD, b"/ld", &mut two).unwrap(),
        2,
        "truncates silently"
    );
    assert_eq!(&two, b"/d");
    // O_CREAT through a dangling symlink creates its target.
    let fd = p.open(b"/dangling", O_CREAT | O_WRONLY, 0o600).unwrap();
    p.close(fd).unwrap();
    assert!(p.stat(b"/missing").is_ok());
    assert_eq!(
        p.open(b"/dangling", O_CREAT | O_EXCL | O_WRONLY, 0o600)
            .unwrap_err(),
        Errno::EEXIST
    );
    assert_eq!(p.symlink(b"", b"/empty"), E(Errno::ENOENT));

    // 40 links are followed, the 41st is ELOOP.
    p.mkdir(b"/c", 0o755).unwrap();
    create(&p, b"/c/l0", b"");
    for i in 1..=41 {
        let t = format!("l{}", i - 1);
        let n = format!("/c/l{i}");
        p.symlink(t.as_bytes(), n.as_bytes()).unwrap();
    }
    assert!(p.stat(b"/c/l40").is_ok());
    assert_eq!(p.stat(b"/c/l41").unwrap_err(), Errno::ELOOP);
}

// ---------------- rename ----------------

#[test]
fn rename_rules() {
    let (_fs, p) = root();
    for d in [&b"/a"[..], b"/a/b", b"/e", b"/full", b"/full/x"] {
        p.mkdir(d, 0o755).unwrap();
    }
    create(&p, b"/f", b"1");
    create(&p, b"/g", b"22");
    assert_eq!(p.rename(b"/a", b"/a/b/c"), E(Errno::EINVAL));
    assert_eq!(p.rename(b"/a", b"/a/b"), E(Errno::EINVAL));
    assert_eq!(p.rename(b"/a/b", b"/a"), E(Errno::ENOTEMPTY));
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/a/b", AT_FDCWD, b"/a", RENAME_EXCHANGE),
        E(Errno::EINVAL)
    );
    assert_eq!(p.rename(b"/a", b"/full"), E(Errno::ENOTEMPTY));
    assert_eq!(p.rename(b"/a", b"/f"), E(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/f", b"/a"), E(Errno::EISDIR));
    assert_eq!(p.rename(b"/f/", b"/h"), E(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/f", b"/h/"), E(Errno::ENOTDIR));
    assert_eq!(p.rename(b"/missing", b"/h"), E(Errno::ENOENT));
    assert_eq!(p.rename(b"/", b"/h"), E(Errno::EBUSY));
    assert_eq!(p.rename(b"/f", b"/a/."), E(Errno::EBUSY));
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/a/..", RENAME_NOREPLACE),
        E(Errno::EEXIST)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/g", RENAME_NOREPLACE),
        E(Errno::EEXIST)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/h", RENAME_EXCHANGE),
        E(Errno::ENOENT)
    );
    assert_eq!(
        p.renameat2(
            AT_FDCWD,
            b"/f",
            AT_FDCWD,
            b"/g",
            RENAME_EXCHANGE | RENAME_NOREPLACE
        ),
        E(Errno::EINVAL)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/g", 8),
        E(Errno::EINVAL)
    );
    // a directory may be renamed with trailing slashes
    p.rename(b"/e/", b"/e2/").unwrap();
    // replacing an empty directory
    p.mkdir(b"/empty", 0o755).unwrap();
    let root_nlink = p.stat(b"/").unwrap().nlink;
    p.rename(b"/e2", b"/empty").unwrap();
    assert_eq!(p.stat(b"/").unwrap().nlink, root_nlink - 1);
    // exchange a file and a directory
    p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/empty", RENAME_EXCHANGE)
        .unwrap();
    assert!(s_isdir(p.stat(b"/f").unwrap().mode));
    assert_eq!(p.stat(b"/empty").unwrap().size, 1);
    // a hard link onto itself: success, nothing happens
    p.link(b"/g", b"/g2").unwrap();
    p.rename(b"/g", b"/g2").unwrap();
    assert_eq!(p.stat(b"/g").unwrap().nlink, 2);
    assert!(p.stat(b"/g2").is_ok());
    // replacing a file drops its link count; an open fd keeps it alive
    create(&p, b"/victim", b"abc");
    let fd = p.open(b"/victim", O_RDONLY, 0).unwrap();
    p.rename(b"/g", b"/victim").unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 0);
    let mut buf = [0u8; 8];
    assert_eq!(p.read(fd, &mut buf).unwrap(), 3);
    // whiteout leaves a char 0:0 device behind
    p.renameat2(AT_FDCWD, b"/g2", AT_FDCWD, b"/moved", RENAME_WHITEOUT)
        .unwrap();
    let st = p.lstat(b"/g2").unwrap();
    assert_eq!(st.mode & S_IFMT, S_IFCHR);
    assert_eq!(st.rdev, 0);
}

#[test]
fn rename_permissions_and_sticky() {
    let (fs, p) = root();
    p.mkdir(b"/t", 0o1777).unwrap();
    p.chmod(b"/t", 0o1777).unwrap();
    let alice = user(&fs, 1000);
    let bob = user(&fs, 1001);
    create(&alice, b"/t/a", b"");
    create(&bob, b"/t/b", b"");
    assert_eq!(bob.rename(b"/t/a", b"/t/x"), E(Errno::EPERM));
    assert_eq!(
        bob.rename(b"/t/b", b"/t/a"),
        E(Errno::EPERM),
        "cannot replace alice's file"
    );
    assert_eq!(bob.unlink(b"/t/a"), E(Errno::EPERM));
    bob.rename(b"/t/b", b"/t/c").unwrap();
    alice.unlink(b"/t/a").unwrap();
    p.unlink(b"/t/c").unwrap();
    // moving a directory to another parent needs write permission on it
    alice.mkdir(b"/t/d1", 0o755).unwrap();
    alice.mkdir(b"/t/d2", 0o755).unwrap();
    alice.mkdir(b"/t/d1/sub", 0o555).unwrap();
    assert_eq!(alice.rename(b"/t/d1/sub", b"/t/d2/sub"), E(Errno::EACCES));
    alice.rename(b"/t/d1/sub", b"/t/d1/sub2").unwrap();
    assert_eq!(bob.rename(b"/t/d1/sub2", b"/t/d1/sub3"), E(Errno::EACCES));
}

// ---------------- permissions ----------------

#[test]
fn permission_matrix() {
    let (fs, p) = root();
    p.mkdir(b"/d", 0o755).unwrap();
    create(&p, b"/d/f", b"data");
    p.chown(b"/d/f", 1000, 100).unwrap();
    let owner = fs.process(Cred::user(1000, 1000, &[]));
    let member = fs.process(Cred::user(1001, 1001, &[100]));
    let other = fs.process(Cred::user(1002, 1002, &[]));
    // (mode, [owner, member, other] may read)
    for (mode, expect) in [
        (0o400, [true, false, false]),
        (0o040, [false, true, false]),
        (0o004, [false, false, true]),
        (0o044, [false, true, true]),
        (0o000, [false, false, false]),
    ] {
        p.chmod(b"/d/f", mode).unwrap();
        for (who, want) in [&owner, &member, &other].iter().zip(expect) {
            assert_eq!(who.access(b"/d/f", R_OK).is_ok(), want, "mode {mode:o}");
            let r = who.open(b"/d/f", O_RDONLY, 0);
            assert_eq!(r.is_ok(), want, "mode {mode:o}");
            if let Ok(fd) = r {
                who.close(fd).unwrap();
            }
        }
        assert!(
            p.access(b"/d/f", R_OK | W_OK).is_ok(),
            "root reads and writes anything"
        );
    }
    // root needs some x bit to execute a non-directory
    p.chmod(b"/d/f", 0o644).unwrap();
    assert_eq!(p.access(b"/d/f", X_OK), E(Errno::EACCES));
    p.chmod(b"/d/f", 0o001).unwrap();
    assert!(p.access(b"/d/f", X_OK).is_ok());
    p.chmod(b"/d", 0o000).unwrap();
    assert!(p.access(b"/d", X_OK).is_ok(), "root searches any directory");
    // search permission on every directory of the walk
    assert_eq!(other.stat(b"/d/f").unwrap_err(), Errno::EACCES);
    assert_eq!(other.stat(b"/d/missing").unwrap_err(), Errno::EACCES);
    assert!(other.stat(b"/d").is_ok());
    p.chmod(b"/d", 0o711).unwrap();
    assert!(other.stat(b"/d/f").is_ok());
    assert_eq!(other.read_dir(b"/d").unwrap_err(), Errno::EACCES);
    // faccessat: real vs effective ids
    let mut c = Cred::user(1002, 1002, &[]);
    c.euid = 1000;
    c.fsuid = 1000;
    let setuid = fs.process(c);
    p.chmod(b"/d/f", 0o600).unwrap();
    assert_eq!(setuid.access(b"/d/f", R_OK), E(Errno::EACCES));
    assert!(setuid
        .faccessat(AT_FDCWD, b"/d/f", R_OK, AT_EACCESS)
        .is_ok());
    assert_eq!(setuid.faccessat(AT_FDCWD, b"/d/f", 8, 0), E(Errno::EINVAL));
    assert_eq!(
        setuid.faccessat(AT_FDCWD, b"/d/f", R_OK, 0x1),
        E(Errno::EINVAL)
    );
}

#[test]
fn chmod_chown_rules() {
    let (fs, p) = root();
    p.mkdir(b"/d", 0o777).unwrap();
    p.chmod(b"/d", 0o777).unwrap();
    let u = fs.process(Cred::user(1000, 1000, &[50]));
    create(&u, b"/d/f", b"");
    let o = user(&fs, 1001);
    assert_eq!(o.chmod(b"/d/f", 0o777), E(Errno::EPERM));
    u.chmod(b"/d/f", 0o6755).unwrap();
    assert_eq!(u.stat(b"/d/f").unwrap().mode & 0o7777, 0o6755);
    // chown to self by the owner: allowed; to someone else: EPERM
    assert_eq!(u.chown(b"/d/f", 1001, u32::MAX), E(Errno::EPERM));
    assert_eq!(u.chown(b"/d/f", u32::MAX, 77), E(Errno::EPERM));
    u.chown(b"/d/f", 1000, 50).unwrap();
    let st = u.stat(b"/d/f").unwrap();
    assert_eq!(st.gid, 50);
    assert_eq!(st.mode & 0o7777, 0o0755, "suid and group-exec sgid cleared");
    // a non-owner's chown(-1, -1) on a plain file succeeds (ctime only)
    assert!(o.chown(b"/d/f", u32::MAX, u32::MAX).is_ok());
    // ... but on a setuid file it would have to clear the bit: EPERM
    u.chmod(b"/d/f", 0o4755).unwrap();
    assert_eq!(o.chown(b"/d/f", u32::MAX, u32::MAX), E(Errno::EPERM));
    // chmod by a non-member loses S_ISGID
    u.chown(b"/d/f", u32::MAX, 50).unwrap();
    p.chown(b"/d/f", u32::MAX, 99).unwrap();
    u.chmod(b"/d/f", 0o2755).unwrap();
    assert_eq!(u.stat(b"/d/f").unwrap().mode & 0o7777, 0o0755);
    // symlinks: chmod is EOPNOTSUPP with NOFOLLOW, chown works
    u.symlink(b"f", b"/d/s").unwrap();
    assert_eq!(
        u.fchmodat(AT_FDCWD, b"/d/s", 0o700, AT_SYMLINK_NOFOLLOW),
        E(Errno::EOPNOTSUPP)
    );
    assert!(p
        .fchownat(AT_FDCWD, b"/d/s", 5, 5, AT_SYMLINK_NOFOLLOW)
        .is_ok());
    assert_eq!(p.lstat(b"/d/s").unwrap().uid, 5);
    // write by a non-root caller clears suid
    u.chmod(b"/d/f", 0o4777).unwrap();
    let fd = o.open(b"/d/f", O_WRONLY, 0).unwrap();
    o.write(fd, b"x").unwrap();
    assert_eq!(u.stat(b"/d/f").unwrap().mode & 0o7777, 0o0777);
    // O_PATH fds: fchmod/fchown are EBADF
    let pfd = u.open(b"/d/f", O_PATH, 0).unwrap();
    assert_eq!(u.fchmod(pfd, 0o600), E(Errno::EBADF));
    assert_eq!(u.fchown(pfd, 1000, 1000), E(Errno::EBADF));
    assert!(u.fchmodat(pfd, b"", 0o600, AT_EMPTY_PATH).is_ok());
}

#[test]
fn setgid_directories_and_umask() {
    let (fs, p) = root();
    p.mkdir(b"/g", 0o777).unwrap();
    p.chown(b"/g", 0, 500).unwrap();
    p.chmod(b"/g", 0o2777).unwrap();
    let u = user(&fs, 1000);
    assert_eq!(u.umask(0o027), 0o022);
    u.mkdir(b"/g/sub", 0o777).unwrap();
    let st = u.stat(b"/g/sub").unwrap();
    assert_eq!(st.gid, 500);
    assert_eq!(st.mode & 0o7777, 0o2750);
    create(&u, b"/g/file", b"");
    let st = u.stat(b"/g/file").unwrap();
    assert_eq!((st.gid, st.mode & 0o7777), (500, 0o640));
    // a non-member asking for S_ISGID|S_IXGRP in a setgid dir loses S_ISGID
    let fd = u.open(b"/g/x", O_CREAT | O_WRONLY, 0o2775).unwrap();
    assert_eq!(u.fstat(fd).unwrap().mode & 0o7777, 0o0750);
    assert_eq!(u.umask(0o1777), 0o027);
    assert_eq!(u.umask(0), 0o777);
}

#[test]
fn utimensat_rules() {
    let (fs, p) = root();
    p.mkdir(b"/d", 0o777).unwrap();
    p.chmod(b"/d", 0o777).unwrap();
    create(&p, b"/d/w", b"");
    p.chmod(b"/d/w", 0o666).unwrap();
    create(&p, b"/d/r", b"");
    let u = user(&fs, 1000);
    let t = Timespec::new(1000, 5);
    assert!(u.utimensat(AT_FDCWD, b"/d/w", None, 0).is_ok());
    assert!(u
        .utimensat(AT_FDCWD, b"/d/w", Some([Timespec::NOW, Timespec::NOW]), 0)
        .is_ok());
    assert_eq!(
        u.utimensat(AT_FDCWD, b"/d/w", Some([Timespec::NOW, Timespec::OMIT]), 0),
        E(Errno::EPERM)
    );
    assert_eq!(
        u.utimensat(AT_FDCWD, b"/d/w", Some([t, t]), 0),
        E(Errno::EPERM)
    );
    assert_eq!(u.utimensat(AT_FDCWD, b"/d/r", None, 0), E(Errno::EACCES));
    assert!(u
        .utimensat(
            AT_FDCWD,
            b"/nonexistent",
            Some([Timespec::OMIT, Timespec::OMIT]),
            0
        )
        .is_ok());
    assert_eq!(
        p.utimensat(
            AT_FDCWD,
            b"/d/r",
            Some([Timespec::new(0, 1_000_000_000), t]),
            0
        ),
        E(Errno::EINVAL)
    );
    p.utimensat(AT_FDCWD, b"/d/r", Some([t, Timespec::OMIT]), 0)
        .unwrap();
    let st = p.stat(b"/d/r").unwrap();
    assert_eq!(st.atime, t);
    assert_ne!(st.mtime, t);
    // glibc's futimens rejects a negative fd before the syscall's
    // both-OMIT shortcut (checked against glibc on Linux 6.18).
    assert_eq!(
        p.futimens(-1, Some([Timespec::OMIT, Timespec::OMIT])),
        E(Errno::EBADF)
    );
    assert_eq!(p.futimens(-1, None), E(Errno::EBADF));
}

// ---------------- directories ----------------

#[test]
fn getdents_cookies_survive_unlink() {
    let (_fs, p) = root();
    p.mkdir(b"/d", 0o755).unwrap();
    for n in [b"a", b"b", b"c", b"e"] {
        let mut path = b"/d/".to_vec();
        path.extend_from_slice(n);
        create(&p, &path, b"");
    }
    let fd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    // "." "..": 24 bytes each; one name of 1 byte: 24 bytes.
    let mut buf = [0u8; 72];
    let n = p.getdents64(fd, &mut buf).unwrap();
    let ents = parse_dirents64(&buf[..n]);
    let got: Vec<_> = ents.iter().map(|e| e.name.clone()).collect();
    assert_eq!(got, vec![b".".to_vec(), b"..".to_vec(), b"a".to_vec()]);
    assert_eq!(
        ents.iter().map(|e| e.off).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    // removing the next entry and one already read does not disturb the walk
    p.unlink(b"/d/b").unwrap();
    p.unlink(b"/d/a").unwrap();
    create(&p, b"/d/z", b"");
    let n = p.getdents64(fd, &mut buf).unwrap();
    let got: Vec<_> = parse_dirents64(&buf[..n])
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(got, vec![b"c".to_vec(), b"e".to_vec(), b"z".to_vec()]);
    assert_eq!(p.getdents64(fd, &mut buf).unwrap(), 0);
    // seek back to a cookie; 0 rewinds
    assert_eq!(p.lseek(fd, 4, SEEK_SET).unwrap(), 4);
    let n = p.getdents64(fd, &mut buf).unwrap();
    assert_eq!(parse_dirents64(&buf[..n])[0].name, b"c");
    assert_eq!(p.lseek(fd, 0, SEEK_SET).unwrap(), 0);
    let n = p.getdents64(fd, &mut buf[..24]).unwrap();
    assert_eq!(parse_dirents64(&buf[..n])[0].name, b".");
    assert_eq!(p.getdents64(fd, &mut buf[..10]).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, 0, SEEK_END).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, -1, SEEK_SET).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, 5, SEEK_CUR).unwrap(), 6);
    // a renamed entry gets a new cookie, a replacing one takes the old one
    assert_eq!(
        names(&p, b"/d"),
        vec![
            b".".to_vec(),
            b"..".to_vec(),
            b"c".to_vec(),
            b"e".to_vec(),
            b"z".to_vec()
        ]
    );
    p.rename(b"/d/c", b"/d/y").unwrap();
    p.rename(b"/d/z", b"/d/e").unwrap();
    assert_eq!(
        names(&p, b"/d"),
        vec![b".".to_vec(), b"..".to_vec(), b"e".to_vec(), b"y".to_vec()]
    );
    // read on a directory
    assert_eq!(p.read(fd, &mut buf).unwrap_err(), Errno::EISDIR);
    let f = p.open(b"/d/e", O_RDONLY, 0).unwrap();
    assert_eq!(p.getdents64(f, &mut buf).unwrap_err(), Errno::ENOTDIR);
}

#[test]
fn rmdir_unlink_rules() {
    let (_fs, p) = root();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/s", 0o755).unwrap();
    create(&p, b"/f", b"");
    assert_eq!(p.rmdir(b"/d"), E(Errno::ENOTEMPTY));
    assert_eq!(p.rmdir(b"/d/s/."), E(Errno::EINVAL));
    assert_eq!(p.rmdir(b"/d/s/.."), E(Errno::ENOTEMPTY));
    assert_eq!(p.rmdir(b"/"), E(Errno::EBUSY));
    assert_eq!(p.rmdir(b"/f"), E(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/d"), E(Errno::EISDIR));
    assert_eq!(p.unlink(b"/f/"), E(Errno::ENOTDIR));
    assert_eq!(p.unlink(b"/d/"), E(Errno::EISDIR));
    assert_eq!(p.unlink(b"/."), E(Errno::EISDIR));
    assert_eq!(p.unlinkat(AT_FDCWD, b"/f", 1), E(Errno::EINVAL));
    assert_eq!(p.stat(b"/d").unwrap().nlink, 3);
    assert_eq!(p.stat(b"/d").unwrap().size, 60);
    // a removed cwd: lookups and creations fail, ".." still works
    p.chdir(b"/d/s").unwrap();
    p.rmdir(b"/d/s/").unwrap();
    assert_eq!(p.stat(b"/d").unwrap().nlink, 2);
    assert_eq!(p.stat(b".").unwrap().nlink, 0);
    assert_eq!(p.getcwd().unwrap_err(), Errno::ENOENT);
    assert_eq!(p.mkdir(b"x", 0o755), E(Errno::ENOENT));
    assert_eq!(
        p.open(b"x", O_CREAT | O_RDWR, 0o644).unwrap_err(),
        Errno::ENOENT
    );
    assert_eq!(p.read_dir(b".").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"..").unwrap().ino, p.stat(b"/d").unwrap().ino);
    p.chdir(b"/").unwrap();
    // link rules
    assert_eq!(p.link(b"/d", b"/d2"), E(Errno::EPERM));
    assert_eq!(p.link(b"/f", b"/d"), E(Errno::EEXIST));
    p.link(b"/f", b"/d/f2").unwrap();
    assert_eq!(p.stat(b"/f").unwrap().nlink, 2);
    p.symlink(b"f", b"/sl").unwrap();
    p.link(b"/sl", b"/sl2").unwrap();
    assert!(s_islnk(p.lstat(b"/sl2").unwrap().mode));
    p.linkat(AT_FDCWD, b"/sl", AT_FDCWD, b"/sl3", AT_SYMLINK_FOLLOW)
        .unwrap();
    assert_eq!(p.stat(b"/f").unwrap().nlink, 3);
}

#[test]
fn tmpfile_and_linkat_empty_path() {
    let (fs, p) = root();
    p.mkdir(b"/d", 0o777).unwrap();
    p.chmod(b"/d", 0o777).unwrap();
    assert_eq!(
        p.open(b"/d", O_TMPFILE | O_RDONLY, 0o600).unwrap_err(),
        Errno::EINVAL
    );
    let fd = p.open(b"/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 0);
    assert_eq!(names(&p, b"/d").len(), 2);
    p.write(fd, b"tmp").unwrap();
    p.linkat(fd, b"", AT_FDCWD, b"/d/named", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(p.stat(b"/d/named").unwrap().size, 3);
    let ex = p.open(b"/d", O_TMPFILE | O_RDWR | O_EXCL, 0o600).unwrap();
    assert_eq!(
        p.linkat(ex, b"", AT_FDCWD, b"/d/n2", AT_EMPTY_PATH),
        E(Errno::ENOENT)
    );
    // another cred may not link through a descriptor it did not open
    let u = user(&fs, 1000);
    let ufd = u.open(b"/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
    u.linkat(ufd, b"", AT_FDCWD, b"/d/mine", AT_EMPTY_PATH)
        .unwrap();
    let mine = u.open(b"/d/mine", O_RDONLY, 0).unwrap();
    let child = u.fork().unwrap();
    assert_eq!(
        child.linkat(mine, b"", AT_FDCWD, b"/d/other", AT_EMPTY_PATH),
        E(Errno::ENOENT)
    );
    assert!(u
        .linkat(mine, b"", AT_FDCWD, b"/d/other", AT_EMPTY_PATH)
        .is_ok());
    assert_eq!(p.stat(b"/d/mine").unwrap().nlink, 2);
}

// ---------------- file data ----------------

#[test]
fn read_write_seek_truncate() {
    let (fs, p) = root();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, b"hello").unwrap(), 5);
    assert_eq!(p.lseek(fd, 0, SEEK_CUR).unwrap(), 5);
    assert_eq!(p.pwrite(fd, b"X", 10).unwrap(), 1);
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR).unwrap(),
        5,
        "pwrite keeps the offset"
    );
    assert_eq!(p.fstat(fd).unwrap().size, 11);
    let mut buf = [9u8; 16];
    assert_eq!(p.pread(fd, &mut buf, 3).unwrap(), 8);
    assert_eq!(&buf[..8], b"lo\0\0\0\0\0X");
    assert_eq!(p.pread(fd, &mut buf, -1).unwrap_err(), Errno::EINVAL);
    assert_eq!(
        p.pread(99, &mut buf, -1).unwrap_err(),
        Errno::EINVAL,
        "offset checked first"
    );
    assert_eq!(p.lseek(fd, -1, SEEK_SET).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, -20, SEEK_END).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, 0, 5).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.lseek(fd, 0, SEEK_DATA).unwrap(), 0);
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE).unwrap(), 11);
    assert_eq!(p.lseek(fd, 11, SEEK_DATA).unwrap_err(), Errno::ENXIO);
    p.pwrite(fd, b"Y", 3 * 4096).unwrap();
    assert_eq!(p.lseek(fd, 5, SEEK_HOLE).unwrap(), 4096);
    assert_eq!(p.lseek(fd, 4096, SEEK_DATA).unwrap(), 3 * 4096);
    assert_eq!(p.fstat(fd).unwrap().blocks, 16);
    assert_eq!(p.lseek(fd, i64::MAX, SEEK_SET).unwrap(), i64::MAX);
    assert_eq!(p.read(fd, &mut buf).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.ftruncate(fd, -1), E(Errno::EINVAL));
    assert_eq!(p.ftruncate(99, -1), E(Errno::EINVAL));
    assert_eq!(p.ftruncate(99, 0), E(Errno::EBADF));
    p.ftruncate(fd, 2).unwrap();
    assert_eq!(p.pread(fd, &mut buf, 0).unwrap(), 2);
    p.ftruncate(fd, 6).unwrap();
    assert_eq!(p.pread(fd, &mut buf, 0).unwrap(), 6);
    assert_eq!(&buf[..6], b"he\0\0\0\0");
    // readv / writev
    p.lseek(fd, 0, SEEK_SET).unwrap();
    assert_eq!(p.writev(fd, &[b"ab", b"", b"cd"]).unwrap(), 4);
    p.lseek(fd, 0, SEEK_SET).unwrap();
    let (mut x, mut y) = ([0u8; 3], [0u8; 3]);
    assert_eq!(p.readv(fd, &mut [&mut x, &mut y]).unwrap(), 6);
    assert_eq!((&x, &y), (b"abc", b"d\0\0"));
    // access modes
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.write(ro, b"x").unwrap_err(), Errno::EBADF);
    assert_eq!(p.ftruncate(ro, 0), E(Errno::EINVAL));
    let wo = p.open(b"/f", O_WRONLY | O_APPEND, 0).unwrap();
    assert_eq!(p.read(wo, &mut buf).unwrap_err(), Errno::EBADF);
    assert_eq!(p.pwrite(wo, b"Z", 0).unwrap(), 1);
    assert_eq!(p.fstat(wo).unwrap().size, 7, "O_APPEND pwrite appends");
    let three = p.open(b"/f", 3, 0).unwrap();
    assert_eq!(p.read(three, &mut buf).unwrap_err(), Errno::EBADF);
    assert_eq!(p.write(three, b"").unwrap_err(), Errno::EBADF);
    // truncate by path
    assert_eq!(p.truncate(b"/", 0), E(Errno::EISDIR));
    assert_eq!(p.truncate(b"/f", -1), E(Errno::EINVAL));
    p.truncate(b"/f", 1).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().size, 1);
    let u = user(&fs, 1000);
    assert_eq!(u.truncate(b"/f", 0), E(Errno::EACCES));
    assert_eq!(p.fsync(fd), Ok(()));
    let pfd = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.fsync(pfd), E(Errno::EBADF));
    assert_eq!(p.fdatasync(pfd), E(Errno::EBADF));
    assert_eq!(p.lseek(pfd, 0, SEEK_SET).unwrap_err(), Errno::EBADF);
    assert!(p.fstat(pfd).is_ok());
    assert!(p.fstatfs(pfd).is_ok());
    assert_eq!(p.fstatfs(pfd).unwrap().f_type, TMPFS_MAGIC);
    // O_TRUNC on O_RDONLY truncates; on a directory is EISDIR
    let t = p.open(b"/f", O_RDONLY | O_TRUNC, 0).unwrap();
    assert_eq!(p.fstat(t).unwrap().size, 0);
    assert_eq!(
        p.open(b"/", O_RDONLY | O_TRUNC, 0).unwrap_err(),
        Errno::EISDIR
    );
    assert_eq!(p.open(b"/", O_WRONLY, 0).unwrap_err(), Errno::EISDIR);
}

#[test]
fn fd_table_limits_dup_and_fork() {
    let (fs, p) = root();
    create(&p, b"/f", b"0123456789");
    p.set_fd_limit(3);
    let a = p.open(b"/f", O_RDONLY, 0).unwrap();
    let b = p.open(b"/f", O_RDONLY, 0).unwrap();
    let c = p.dup(a).unwrap();
    assert_eq!((a, b, c), (0, 1, 2));
    assert_eq!(p.open(b"/f", O_RDONLY, 0).unwrap_err(), Errno::EMFILE);
    assert_eq!(p.dup2(a, 3).unwrap_err(), Errno::EBADF);
    assert_eq!(p.dup3(a, a, 0).unwrap_err(), Errno::EINVAL);
    assert_eq!(p.dup2(a, a).unwrap(), a);
    assert_eq!(p.dup2(7, 7).unwrap_err(), Errno::EBADF);
    assert_eq!(p.dup3(a, 1, 1).unwrap_err(), Errno::EINVAL);
    p.close(b).unwrap();
    assert_eq!(p.dup2(a, 1).unwrap(), 1);
    // dup shares the offset
    let mut buf = [0u8; 3];
    p.read(a, &mut buf).unwrap();
    assert_eq!(p.lseek(c, 0, SEEK_CUR).unwrap(), 3);
    // fork shares open file descriptions
    let child = p.fork().unwrap();
    child.read(a, &mut buf).unwrap();
    assert_eq!(p.lseek(a, 0, SEEK_CUR).unwrap(), 6);
    assert_eq!(
        child.open(b"/f", O_RDONLY, 0).unwrap_err(),
        Errno::EMFILE,
        "limit inherited"
    );
    child.close(a).unwrap();
    assert!(p.read(a, &mut buf).is_ok());
    child.exit();
    assert_eq!(fs.open_files(), 1);
    p.close_range(0, u32::MAX, 0).unwrap();
    assert_eq!(fs.open_files(), 0);
    assert_eq!(p.close(0), E(Errno::EBADF));
    assert_eq!(p.close_range(5, 4, 0), E(Errno::EINVAL));
    // ENFILE for non-root
    fs.set_max_files(1);
    let u = user(&fs, 1000);
    let x = u.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(u.open(b"/f", O_RDONLY, 0).unwrap_err(), Errno::ENFILE);
    assert!(p.open(b"/f", O_RDONLY, 0).is_ok(), "root is exempt");
    u.close(x).unwrap();
}

#[test]
fn mknod_types() {
    let (fs, p) = root();
    let u = user(&fs, 1000);
    p.chmod(b"/", 0o777).unwrap();
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/dir", S_IFDIR | 0o755, 0),
        E(Errno::EPERM)
    );
    assert_eq!(u.mknodat(AT_FDCWD, b"/bad", 0o170000, 0), E(Errno::EINVAL));
    assert_eq!(
        u.mknodat(AT_FDCWD, b"/chr", S_IFCHR | 0o644, 0x0103),
        E(Errno::EPERM)
    );
    u.mknodat(AT_FDCWD, b"/wh", S_IFCHR, 0).unwrap();
    p.mknodat(AT_FDCWD, b"/chr", S_IFCHR | 0o644, 0x0103)
        .unwrap();
    assert_eq!(p.stat(b"/chr").unwrap().rdev, 0x0103);
    let sx = p.statx(AT_FDCWD, b"/chr", 0, STATX_BASIC_STATS).unwrap();
    assert_eq!((sx.rdev_major, sx.rdev_minor), (1, 3));
    u.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o666, 0).unwrap();
    assert_eq!(u.stat(b"/fifo").unwrap().mode, S_IFIFO | 0o644);
    u.mknodat(AT_FDCWD, b"/reg", 0o600, 0).unwrap();
    assert_eq!(u.stat(b"/reg").unwrap().mode, S_IFREG | 0o600);
    // No reader: a non-blocking write open is refused (blocking FIFO opens
    // are not modelled; vfscale's are tested in api_anon.rs).
    assert_eq!(
        u.open(b"/fifo", O_WRONLY | O_NONBLOCK, 0).unwrap_err(),
        Errno::ENXIO
    );
    assert!(u.open(b"/fifo", O_RDWR, 0).is_ok());
    assert!(u.open(b"/fifo", O_PATH, 0).is_ok());
    assert_eq!(u.truncate(b"/fifo", 0), E(Errno::EINVAL));
}

// ---------------- mounts ----------------

#[test]
fn mounts_busy_and_detach() {
    let (fs, p) = root();
    p.mkdir(b"/mnt", 0o755).unwrap();
    p.mkdir(b"/src", 0o755).unwrap();
    create(&p, b"/src/f", b"x");
    let u = user(&fs, 1000);
    assert_eq!(u.mount(b"", b"/mnt", b"tmpfs", 0), E(Errno::EPERM));
    assert_eq!(u.mount(b"", b"/nope", b"tmpfs", 0), E(Errno::ENOENT));
    assert_eq!(p.mount(b"", b"/src/f", b"tmpfs", 0), E(Errno::ENOTDIR));
    assert_eq!(p.mount(b"", b"/mnt", b"ext4", 0), E(Errno::ENODEV));
    p.mount(b"none", b"/mnt", b"tmpfs", 0).unwrap();
    let st = p.stat(b"/mnt").unwrap();
    assert_eq!((st.ino, st.mode & 0o7777, st.nlink), (1, 0o1777, 2));
    assert_ne!(st.dev, p.stat(b"/").unwrap().dev);
    assert_eq!(p.rmdir(b"/mnt"), E(Errno::EBUSY));
    assert_eq!(p.rename(b"/mnt", b"/m2"), E(Errno::EBUSY));
    create(&p, b"/mnt/inner", b"");
    assert_eq!(p.rename(b"/mnt/inner", b"/x"), E(Errno::EXDEV));
    assert_eq!(p.link(b"/mnt/inner", b"/x"), E(Errno::EXDEV));
    assert_eq!(p.stat(b"/mnt/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    // busy while a file is open, a cwd is inside, or a mount is on it
    let fd = p.open(b"/mnt/inner", O_RDONLY, 0).unwrap();
    assert_eq!(p.umount2(b"/mnt", 0), E(Errno::EBUSY));
    p.close(fd).unwrap();
    let q = fs.process(Cred::root());
    q.chdir(b"/mnt").unwrap();
    assert_eq!(p.umount2(b"/mnt", 0), E(Errno::EBUSY));
    q.chdir(b"/").unwrap();
    p.mkdir(b"/mnt/sub", 0o755).unwrap();
    p.mount(b"", b"/mnt/sub", b"tmpfs", 0).unwrap();
    assert_eq!(p.umount2(b"/mnt", 0), E(Errno::EBUSY));
    assert_eq!(p.umount2(b"/mnt/", 0x10), E(Errno::EINVAL));
    assert_eq!(p.umount2(b"/src", 0), E(Errno::EINVAL));
    assert_eq!(u.umount2(b"/mnt/sub", 0), E(Errno::EPERM));
    // The caller's root mount is not unmounted but made read-only
    // (do_umount_root); detaching the namespace root is refused.
    assert_eq!(p.umount2(b"/", MNT_DETACH), E(Errno::EINVAL));
    p.umount2(b"/", 0).unwrap();
    assert_eq!(p.mkdir(b"/ro", 0o755), E(Errno::EROFS));
    p.mount(b"", b"/", b"", MS_REMOUNT).unwrap();
    p.umount2(b"/mnt/sub", 0).unwrap();
    p.umount2(b"/mnt", 0).unwrap();
    assert_eq!(p.stat(b"/mnt/inner").unwrap_err(), Errno::ENOENT);
    // lazy detach keeps working for those inside
    p.mount(b"", b"/mnt", b"tmpfs", 0).unwrap();
    p.mkdir(b"/mnt/deep", 0o755).unwrap();
    q.chdir(b"/mnt/deep").unwrap();
    let before = fs.mount_count();
    p.umount2(b"/mnt", MNT_DETACH).unwrap();
    assert_eq!(fs.mount_count(), before, "still referenced by q's cwd");
    assert_eq!(q.getcwd().unwrap(), b"(unreachable)/deep");
    q.mkdir(b"x", 0o755).unwrap();
    assert_eq!(
        q.stat(b"../..").unwrap().ino,
        1,
        "the detached root is a dead end"
    );
    assert_eq!(q.umount2(b"..", 0), E(Errno::EINVAL));
    q.chdir(b"/").unwrap();
    assert_eq!(fs.mount_count(), before - 1);
    // bind mounts
    p.mount(b"/src", b"/mnt", b"", MS_BIND).unwrap();
    assert_eq!(
        p.stat(b"/mnt/f").unwrap().ino,
        p.stat(b"/src/f").unwrap().ino
    );
    assert_eq!(p.rename(b"/mnt/f", b"/src/g"), E(Errno::EXDEV));
    assert_eq!(p.mount(b"", b"/mnt", b"", MS_BIND), E(Errno::EINVAL));
    assert_eq!(p.mount(b"/nope", b"/mnt", b"", MS_BIND), E(Errno::ENOENT));
    assert_eq!(p.mount(b"/src/f", b"/mnt", b"", MS_BIND), E(Errno::ENOTDIR));
    p.mount(b"", b"/mnt", b"tmpfs", 0).unwrap();
    assert_eq!(
        p.stat(b"/mnt/f").unwrap_err(),
        Errno::ENOENT,
        "stacked on top"
    );
    p.umount2(b"/mnt", 0).unwrap();
    assert!(p.stat(b"/mnt/f").is_ok());
    p.umount2(b"/mnt", 0).unwrap();
    // a file bind mount
    create(&p, b"/target", b"");
    p.mount(b"/src/f", b"/target", b"", MS_BIND).unwrap();
    assert_eq!(p.stat(b"/target").unwrap().size, 1);
    assert_eq!(p.unlink(b"/target"), E(Errno::EBUSY));
    p.umount2(b"/target", 0).unwrap();
    p.unlink(b"/target").unwrap();
}

#[test]
fn chroot_and_getcwd() {
    let (fs, p) = root();
    p.mkdir(b"/jail", 0o755).unwrap();
    p.mkdir(b"/jail/in", 0o755).unwrap();
    let u = user(&fs, 1000);
    assert_eq!(u.chroot(b"/jail"), E(Errno::EPERM));
    assert_eq!(u.chroot(b"/nope"), E(Errno::ENOENT));
    p.chdir(b"/jail/in").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/jail/in");
    p.chroot(b"/jail").unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/in");
    assert_eq!(p.stat(b"/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    assert_eq!(
        p.stat(b"/../../in").unwrap().ino,
        p.stat(b"/in").unwrap().ino
    );
    let q = fs.process(Cred::root());
    q.chdir(b"/jail").unwrap();
    q.chroot(b"/jail/in").unwrap();
    assert_eq!(q.getcwd().unwrap(), b"(unreachable)/jail");
    assert_eq!(p.chdir(b"/nope"), E(Errno::ENOENT));
    let fd = p.open(b"/in", O_PATH, 0).unwrap();
    p.fchdir(fd).unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/in");
}

#[test]
fn lifetimes_free_everything() {
    let (fs, p) = root();
    let base = fs.inode_count();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/e", 0o755).unwrap();
    create(&p, b"/d/e/f", b"data");
    let fd = p.open(b"/d/e/f", O_RDONLY, 0).unwrap();
    p.chdir(b"/d/e").unwrap();
    p.unlink(b"/d/e/f").unwrap();
    p.rmdir(b"/d/e").unwrap();
    p.rmdir(b"/d").unwrap();
    assert_eq!(fs.inode_count(), base + 3, "pinned by the fd and the cwd");
    p.close(fd).unwrap();
    assert_eq!(fs.inode_count(), base + 2);
    p.chdir(b"/").unwrap();
    assert_eq!(fs.inode_count(), base);
}

/// Cases checked against Linux 6.18 on a real tmpfs while writing the model.
#[test]
fn kernel_checked_corner_cases() {
    let (_fs, p) = root();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/s", 0o755).unwrap();
    create(&p, b"/f", b"");
    let x = RENAME_EXCHANGE;
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/d", AT_FDCWD, b"/d/s", x),
        E(Errno::EINVAL)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/d/s", AT_FDCWD, b"/d", x),
        E(Errno::EINVAL)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/f", AT_FDCWD, b"/d/.", RENAME_NOREPLACE),
        E(Errno::EEXIST)
    );
    assert_eq!(
        p.open(b"/pnew", O_PATH | O_CREAT, 0o644).unwrap_err(),
        Errno::ENOENT
    );
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA).unwrap_err(), Errno::ENXIO);
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE).unwrap_err(), Errno::ENXIO);
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", AT_STATX_SYNC_TYPE, 0x7ff)
            .unwrap_err(),
        Errno::EINVAL
    );
    assert_eq!(
        p.statx(AT_FDCWD, b"/f", 0, 0x8000_0000).unwrap_err(),
        Errno::EINVAL
    );
    assert_eq!(p.umount2(b"/d", 0x10), E(Errno::EINVAL));
    assert_eq!(p.umount2(b"/d", 0), E(Errno::EINVAL));
    assert_eq!(p.mount(b"", b"/d", b"", MS_BIND), E(Errno::EINVAL));
    assert_eq!(p.readlink(b"/f").unwrap_err(), Errno::EINVAL);
    assert_eq!(p.readlink(b"").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/").unwrap().size, 80, "40 + 20 per entry");
    p.symlink(&[b'x'; 127], b"/s127").unwrap();
    p.symlink(&[b'x'; 128], b"/s128").unwrap();
    assert_eq!(p.lstat(b"/s127").unwrap().blocks, 0);
    assert_eq!(p.lstat(b"/s128").unwrap().blocks, 8);
    let d = p.open(b"/d", O_RDONLY, 0).unwrap();
    assert_eq!(p.readv(d, &mut []).unwrap(), 0);
    assert_eq!(p.read(d, &mut []).unwrap_err(), Errno::EISDIR);
}

/// statx reports mtime and ctime only when asked for one of them (tmpfs's
/// multigrain timestamps, fill_mg_cmtime, Linux 6.13+; checked on 6.18).
#[test]
fn statx_reports_times_only_when_asked() {
    let (_fs, p) = root();
    create(&p, b"/f", b"");
    let mask = |want: u32| p.statx(AT_FDCWD, b"/f", 0, want).unwrap().mask & STATX_BASIC_STATS;
    let no_times = STATX_BASIC_STATS & !(STATX_MTIME | STATX_CTIME);
    assert_eq!(mask(0), no_times);
    assert_eq!(mask(STATX_BTIME | STATX_ATIME), no_times);
    assert_eq!(mask(STATX_MTIME), STATX_BASIC_STATS);
    assert_eq!(mask(STATX_CTIME), STATX_BASIC_STATS);
    assert_eq!(mask(STATX_BASIC_STATS), STATX_BASIC_STATS);
}

/// statfs reports the superblock flags MS_SYNCHRONOUS and MS_MANDLOCK set
/// (ST_SYNCHRONOUS, ST_MANDLOCK, through binds too), and a remount of the
/// instance replaces them; a remount of the mount alone keeps them
/// (checked on the host's 6.18).
#[test]
fn statfs_reports_synchronous_and_mandlock() {
    let (_fs, p) = root();
    let st = |path: &[u8]| p.statfs(path).unwrap().f_flags & (ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mkdirat(AT_FDCWD, b"/m", 0o755).unwrap();
    p.mkdirat(AT_FDCWD, b"/b", 0o755).unwrap();
    p.mount(b"none", b"/m", b"tmpfs", MS_SYNCHRONOUS | MS_MANDLOCK)
        .unwrap();
    assert_eq!(st(b"/m"), ST_SYNCHRONOUS | ST_MANDLOCK);
    assert_eq!(st(b"/"), 0);
    p.mount(b"/m", b"/b", b"", MS_BIND).unwrap();
    assert_eq!(st(b"/b"), ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mount(b"", b"/b", b"", MS_REMOUNT | MS_BIND | MS_NOEXEC)
        .unwrap();
    assert_eq!(st(b"/m"), ST_SYNCHRONOUS | ST_MANDLOCK);
    p.mount(b"", b"/m", b"", MS_REMOUNT | MS_SYNCHRONOUS)
        .unwrap();
    assert_eq!(st(b"/b"), ST_SYNCHRONOUS);
    p.mount(b"", b"/m", b"", MS_REMOUNT).unwrap();
    assert_eq!(st(b"/m"), 0);
}
