//! The passthrough backend (fs/passthrough): a vfscale instance mirroring a
//! host directory. Attributes and identity match the host's, listings come
//! from the host (with resumable positions), data reads and writes reach the
//! host files, host-side changes become visible after revalidation (and
//! not before the TTL), splice and sendfile move host files' data,
//! namespace changes are EROFS, and injected host errors surface unchanged
//! and leave the cache consistent.

mod common_host;

use common_host::{mirror, HostDir};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::faulty::{CallKind, FaultControl, FaultyFs, Trigger};
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{ProcessApi, Vfs, VfsConfig};

/// A passthrough backend over `host` with entries trusted for `ttl`.
fn backend(host: &HostDir, ttl: Duration) -> Passthrough {
    Passthrough::new(
        host.path(),
        PassthroughConfig {
            ttl,
            ..Default::default()
        },
    )
    .unwrap()
}

/// A namespace whose root is `pt` behind a `FaultyFs` (its control drawn
/// from `seed`).
fn mirror_faulty(pt: Passthrough, seed: u64) -> (Vfs, std::sync::Arc<FaultControl>) {
    let control = FaultControl::new(seed);
    let vfs = Vfs::with_root_fs(
        VfsConfig::default(),
        Box::new(FaultyFs::new(pt, control.clone())),
    );
    (vfs, control)
}

fn read_path(p: &impl ProcessApi, path: &[u8]) -> SysResult<Vec<u8>> {
    let fd = p.open(path, O_RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 7];
    loop {
        match p.read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => {
                p.close(fd).unwrap();
                return Err(e);
            }
        }
    }
    p.close(fd).unwrap();
    Ok(out)
}

#[test]
fn stat_matches_the_host() {
    let host = HostDir::new("stat");
    host.write("a.txt", b"hello world");
    host.mkdir("sub");
    host.write("sub/inner", b"x");
    host.symlink("a.txt", "link");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    for name in ["a.txt", "sub", "sub/inner", "link"] {
        let m = std::fs::symlink_metadata(host.path().join(name)).unwrap();
        let st = p.lstat(format!("/{name}").as_bytes()).unwrap();
        assert_eq!(st.ino, m.ino(), "{name}");
        assert_eq!(st.mode, m.mode(), "{name}");
        assert_eq!(st.nlink as u64, m.nlink(), "{name}");
        assert_eq!(st.uid, m.uid(), "{name}");
        assert_eq!(st.size, m.size() as i64, "{name}");
        assert_eq!(st.mtime.sec, m.mtime(), "{name}");
        assert_eq!(st.mtime.nsec, m.mtime_nsec(), "{name}");
    }
    // The root mirrors the host directory itself.
    let m = std::fs::metadata(host.path()).unwrap();
    assert_eq!(p.stat(b"/").unwrap().mode, m.mode());
    // Symlinks are followed inside vfscale's namespace.
    assert_eq!(p.readlink(b"/link").unwrap(), b"a.txt");
    assert_eq!(
        p.stat(b"/link").unwrap().ino,
        p.stat(b"/a.txt").unwrap().ino
    );
    assert_eq!(p.stat(b"/missing").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/a.txt/x").map(|_| ()), Err(Errno::ENOTDIR));
    // Host hard links: two names, one host inode, the same number here.
    std::fs::hard_link(host.path().join("a.txt"), host.path().join("hard")).unwrap();
    assert_eq!(
        p.stat(b"/hard").unwrap().ino,
        p.stat(b"/a.txt").unwrap().ino
    );
}

#[test]
fn readdir_lists_the_host_directory_resumably() {
    let host = HostDir::new("readdir");
    let mut want: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("file-{i:03}").into_bytes())
        .collect();
    for n in &want {
        host.write(std::str::from_utf8(n).unwrap(), b"");
    }
    host.mkdir("d");
    want.push(b"d".to_vec());
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    // A small buffer: many getdents64 calls, each resuming at a position.
    let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let mut buf = vec![0u8; 200];
    let mut got = Vec::new();
    loop {
        let n = p.getdents64(fd, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend(parse_dirents64(&buf[..n]));
    }
    p.close(fd).unwrap();
    let mut names: Vec<Vec<u8>> = got.iter().map(|e| e.name.clone()).collect();
    assert_eq!(&names[..2], &[b".".to_vec(), b"..".to_vec()]);
    names.drain(..2);
    names.sort();
    want.sort();
    assert_eq!(names, want, "each host entry exactly once");
    for e in &got[2..] {
        let st = p.lstat(&[b"/".as_slice(), &e.name].concat()).unwrap();
        assert_eq!(e.ino, st.ino);
        assert_eq!(e.dtype, mode_to_dtype(st.mode));
    }
}

#[test]
fn reads_and_writes_reach_host_files() {
    let host = HostDir::new("data");
    host.write("f", b"0123456789abcdef");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    assert_eq!(read_path(&p, b"/f").unwrap(), b"0123456789abcdef");
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.pwrite(fd, b"XY", 4).unwrap(), 2);
    let mut buf = [0u8; 4];
    assert_eq!(p.pread(fd, &mut buf, 3).unwrap(), 4);
    assert_eq!(&buf, b"3XY6");
    p.close(fd).unwrap();
    assert_eq!(host.read("f"), b"0123XY6789abcdef");
    // Appends go to the host's end; the cached size follows.
    let fd = p.open(b"/f", O_WRONLY | O_APPEND, 0).unwrap();
    assert_eq!(p.write(fd, b"++").unwrap(), 2);
    p.close(fd).unwrap();
    assert_eq!(host.read("f"), b"0123XY6789abcdef++");
    assert_eq!(p.stat(b"/f").unwrap().size, 18);
    // O_TRUNC truncates the host file.
    let fd = p.open(b"/f", O_WRONLY | O_TRUNC, 0).unwrap();
    p.write(fd, b"new").unwrap();
    p.close(fd).unwrap();
    assert_eq!(host.read("f"), b"new");
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    // O_CREAT of an existing host file that is not cached yet opens it.
    host.write("g", b"gg");
    let fd = p.open(b"/g", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert_eq!(read_path(&p, b"/g").unwrap(), b"gg");
    // Reading a directory is EISDIR.
    host.mkdir("dir");
    let fd = p.open(b"/dir", O_RDONLY, 0).unwrap();
    assert_eq!(p.read(fd, &mut buf), Err(Errno::EISDIR));
    p.close(fd).unwrap();
}

#[test]
fn splice_and_sendfile_move_host_file_data() {
    let host = HostDir::new("splice");
    let text: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    host.write("src", &text);
    host.write("dst", b"");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    let src = p.open(b"/src", O_RDONLY, 0).unwrap();
    let dst = p.open(b"/dst", O_RDWR, 0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    // Host file -> pipe -> host file, at offsets and positions.
    let mut off = 4000i64;
    assert_eq!(p.splice(src, Some(&mut off), w, None, 5000, 0), Ok(5000));
    assert_eq!(off, 9000);
    assert_eq!(p.splice(r, None, dst, None, 5000, 0), Ok(5000));
    assert_eq!(p.lseek(dst, 0, SEEK_CUR), Ok(5000));
    assert_eq!(host.read("dst"), &text[4000..9000]);
    // sendfile from the host file's position to another host file.
    assert_eq!(p.lseek(src, 9500, SEEK_SET), Ok(9500));
    assert_eq!(p.sendfile(dst, src, None, 1000), Ok(500));
    assert_eq!(p.lseek(src, 0, SEEK_CUR), Ok(10_000));
    assert_eq!(
        host.read("dst"),
        [&text[4000..9000], &text[9500..]].concat()
    );
    assert_eq!(p.stat(b"/dst").unwrap().size, 5500);
    for fd in [src, dst, r, w] {
        p.close(fd).unwrap();
    }
}

#[test]
fn namespace_changes_reach_the_host() {
    use std::os::unix::fs::PermissionsExt;
    let host = HostDir::new("changes");
    host.write("f", b"");
    host.mkdir("d");
    host.write("d/inner", b"");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    // Warm the cache with the names about to change (negative ones too).
    for n in ["/new", "/nf", "/f", "/d", "/s", "/h", "/fifo"] {
        let _ = p.lstat(n.as_bytes());
    }
    let meta = |n: &str| std::fs::symlink_metadata(host.path().join(n));
    p.mkdir(b"/new", 0o750).unwrap();
    assert!(meta("new").unwrap().is_dir());
    assert_eq!(meta("new").unwrap().permissions().mode() & 0o7777, 0o750);
    assert_eq!(p.stat(b"/new").unwrap().mode & S_IFMT, S_IFDIR);
    assert_eq!(p.mkdir(b"/new", 0o755), Err(Errno::EEXIST));
    // O_CREAT creates on the host (umask 022 applies), O_EXCL sees it.
    let fd = p.open(b"/nf", O_CREAT | O_WRONLY, 0o666).unwrap();
    p.write(fd, b"hello").unwrap();
    p.close(fd).unwrap();
    assert_eq!(host.read("nf"), b"hello");
    assert_eq!(meta("nf").unwrap().permissions().mode() & 0o777, 0o644);
    assert_eq!(
        p.open(b"/nf", O_CREAT | O_EXCL | O_WRONLY, 0o644),
        Err(Errno::EEXIST)
    );
    // unlink, rmdir and their errors.
    p.unlink(b"/f").unwrap();
    assert!(meta("f").is_err());
    assert_eq!(p.stat(b"/f").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.unlink(b"/f"), Err(Errno::ENOENT));
    assert_eq!(p.unlink(b"/d"), Err(Errno::EISDIR));
    assert_eq!(p.rmdir(b"/nf"), Err(Errno::ENOTDIR));
    assert_eq!(p.rmdir(b"/d"), Err(Errno::ENOTEMPTY));
    p.unlink(b"/d/inner").unwrap();
    p.rmdir(b"/d").unwrap();
    assert!(meta("d").is_err());
    // rename, with NOREPLACE.
    p.rename(b"/nf", b"/moved").unwrap();
    assert!(meta("nf").is_err());
    assert_eq!(host.read("moved"), b"hello");
    assert_eq!(p.stat(b"/nf").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/moved").unwrap().size, 5);
    p.mkdir(b"/d2", 0o755).unwrap();
    p.rename(b"/moved", b"/d2/m").unwrap();
    assert_eq!(host.read("d2/m"), b"hello");
    assert_eq!(p.stat(b"/d2/m").unwrap().size, 5);
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/d2/m", AT_FDCWD, b"/new", RENAME_NOREPLACE),
        Err(Errno::EEXIST)
    );
    // symlink, link, mknod.
    p.symlink(b"d2/m", b"/s").unwrap();
    assert_eq!(
        std::fs::read_link(host.path().join("s"))
            .unwrap()
            .as_os_str(),
        "d2/m"
    );
    assert_eq!(p.readlink(b"/s").unwrap(), b"d2/m");
    assert_eq!(p.stat(b"/s").unwrap().size, 5);
    p.link(b"/d2/m", b"/h").unwrap();
    assert_eq!(meta("h").unwrap().ino(), meta("d2/m").unwrap().ino());
    assert_eq!(p.stat(b"/h").unwrap().nlink, 2);
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o600, 0).unwrap();
    assert!(meta("fifo").unwrap().file_type().is_fifo_like());
    // chmod, chown, utimes.
    p.chmod(b"/h", 0o600).unwrap();
    assert_eq!(meta("h").unwrap().permissions().mode() & 0o7777, 0o600);
    assert_eq!(p.stat(b"/h").unwrap().mode & 0o7777, 0o600);
    p.chown(b"/h", 1234, 5678).unwrap();
    assert_eq!(
        (meta("h").unwrap().uid(), meta("h").unwrap().gid()),
        (1234, 5678)
    );
    assert_eq!(p.stat(b"/h").unwrap().uid, 1234);
    let t = Timespec {
        sec: 1_000_000,
        nsec: 5,
    };
    p.utimensat(AT_FDCWD, b"/h", Some([t, t]), 0).unwrap();
    assert_eq!(meta("h").unwrap().mtime(), 1_000_000);
    assert_eq!(p.stat(b"/h").unwrap().mtime, t);
}

/// The host's extended attribute `name` of `path` (not following a final
/// symlink), or its errno.
fn host_xattr(path: &std::path::Path, name: &str) -> Result<Vec<u8>, i32> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    let mut buf = [0u8; 256];
    // SAFETY: NUL-terminated strings; the buffer's length is passed.
    let r = unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap());
    }
    Ok(buf[..r as usize].to_vec())
}

fn host_set_xattr(path: &std::path::Path, name: &str, value: &[u8]) -> Result<(), i32> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    // SAFETY: NUL-terminated strings; the value's length is passed.
    let r = unsafe {
        libc::lsetxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap());
    }
    Ok(())
}

/// Extended attributes reach the host file (issue 8: "passthrough to the
/// host"), through getxattrat and its kin and through the /proc/self/fd
/// fallback alike: values set on either side are seen on the other, a
/// final symlink is never followed, vfscale's permission rules come first
/// (user.* needs read/write access and a regular file or directory,
/// trusted.* root), system.* stays EOPNOTSUPP, and a change refreshes the
/// cached ctime.
#[test]
fn xattrs_reach_the_host() {
    for fallback in [false, true] {
        let host = HostDir::new("xattr");
        host.write("f", b"data");
        host.mkdir("d");
        host.symlink("f", "l");
        if let Err(e) = host_set_xattr(&host.path().join("f"), "user.probe", b"1") {
            println!("skipped: the host directory takes no user xattrs (errno {e})");
            return;
        }
        let pt = Passthrough::new(host.path(), PassthroughConfig::default()).unwrap();
        if fallback {
            pt.host().force_component_walk();
        }
        let vfs = Vfs::with_root_fs(VfsConfig::default(), Box::new(pt));
        let p = vfs.root_process();
        let ctx = if fallback { "fallback" } else { "xattrat" };
        let ctime_before = p.stat(b"/f").unwrap().ctime;
        std::thread::sleep(Duration::from_millis(15));
        p.setxattr(b"/f", b"user.a", b"alpha", 0).unwrap();
        assert_eq!(
            host_xattr(&host.path().join("f"), "user.a"),
            Ok(b"alpha".to_vec()),
            "{ctx}"
        );
        assert!(
            p.stat(b"/f").unwrap().ctime > ctime_before,
            "{ctx}: ctime refreshed"
        );
        // Set on the host, read through vfscale (size query, value, ERANGE).
        host_set_xattr(&host.path().join("d"), "user.b", b"beta").unwrap();
        assert_eq!(p.getxattr(b"/d", b"user.b", &mut []), Ok(4), "{ctx}");
        let mut v = [0u8; 8];
        assert_eq!(p.getxattr(b"/d", b"user.b", &mut v), Ok(4), "{ctx}");
        assert_eq!(&v[..4], b"beta");
        assert_eq!(
            p.getxattr(b"/d", b"user.b", &mut [0u8; 2]),
            Err(Errno::ERANGE)
        );
        assert_eq!(p.getxattr(b"/f", b"user.none", &mut v), Err(Errno::ENODATA));
        assert_eq!(
            p.setxattr(b"/f", b"user.a", b"x", XATTR_CREATE),
            Err(Errno::EEXIST),
            "{ctx}"
        );
        let mut list = [0u8; 64];
        let n = p.listxattr(b"/f", &mut list).unwrap();
        let names: Vec<&[u8]> = list[..n]
            .split(|&b| b == 0)
            .filter(|k| !k.is_empty())
            .collect();
        assert!(
            names.contains(&&b"user.a"[..]) && names.contains(&&b"user.probe"[..]),
            "{ctx}: {names:?}"
        );
        // A final symlink is not followed: trusted.* lands on the link.
        p.lsetxattr(b"/l", b"trusted.t", b"on-link", 0).unwrap();
        assert_eq!(
            host_xattr(&host.path().join("l"), "trusted.t"),
            Ok(b"on-link".to_vec()),
            "{ctx}"
        );
        assert_eq!(
            host_xattr(&host.path().join("f"), "trusted.t"),
            Err(libc::ENODATA),
            "{ctx}"
        );
        // Through a following path, the target's.
        assert_eq!(p.getxattr(b"/l", b"user.a", &mut v), Ok(5), "{ctx}");
        // vfscale's rules before the host's.
        assert_eq!(p.lsetxattr(b"/l", b"user.x", b"1", 0), Err(Errno::EPERM));
        assert_eq!(
            p.setxattr(b"/f", b"system.posix_acl_access", b"", 0),
            Err(Errno::EOPNOTSUPP)
        );
        p.chmod(b"/f", 0o600).unwrap();
        let u = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
        assert_eq!(
            u.getxattr(b"/f", b"user.a", &mut v),
            Err(Errno::EACCES),
            "{ctx}"
        );
        assert_eq!(
            u.setxattr(b"/d", b"trusted.t", b"1", 0),
            Err(Errno::EPERM),
            "{ctx}"
        );
        // Listings hide trusted.* from others, as tmpfs's.
        p.setxattr(b"/d", b"trusted.root", b"r", 0).unwrap();
        let n = u.listxattr(b"/d", &mut list).unwrap();
        assert_eq!(&list[..n], b"user.b\0", "{ctx}");
        p.removexattr(b"/f", b"user.a").unwrap();
        assert_eq!(
            host_xattr(&host.path().join("f"), "user.a"),
            Err(libc::ENODATA),
            "{ctx}"
        );
        assert_eq!(
            p.removexattr(b"/f", b"user.a"),
            Err(Errno::ENODATA),
            "{ctx}"
        );
        // The root directory itself.
        p.setxattr(b"/", b"user.root", b"top", 0).unwrap();
        assert_eq!(
            host_xattr(host.path(), "user.root"),
            Ok(b"top".to_vec()),
            "{ctx}"
        );
    }
}

/// `FileType::is_fifo` through a tiny extension (std's is in an
/// extension trait).
trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}
impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

#[test]
fn changes_check_vfscale_credentials() {
    use std::os::unix::fs::PermissionsExt;
    let host = HostDir::new("creds");
    host.mkdir("open");
    std::fs::set_permissions(
        host.path().join("open"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    host.write("rootfile", b"");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let user = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
    // The host runs as root; vfscale's rules decide.
    assert_eq!(user.mkdir(b"/x", 0o755), Err(Errno::EACCES));
    assert_eq!(user.unlink(b"/rootfile"), Err(Errno::EACCES));
    assert_eq!(user.chmod(b"/rootfile", 0o777), Err(Errno::EPERM));
    assert!(!host.path().join("x").exists());
    assert!(host.path().join("rootfile").exists());
    // In a world-writable directory the new file is the caller's.
    let fd = user.open(b"/open/mine", O_CREAT | O_WRONLY, 0o644).unwrap();
    user.close(fd).unwrap();
    let m = std::fs::metadata(host.path().join("open/mine")).unwrap();
    assert_eq!((m.uid(), m.gid()), (1000, 1000));
    assert_eq!(user.stat(b"/open/mine").unwrap().uid, 1000);
    user.chmod(b"/open/mine", 0o600).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o644);
    assert_eq!(
        std::fs::metadata(host.path().join("open/mine"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn failed_host_changes_change_nothing() {
    let host = HostDir::new("changefaults");
    host.write("f", b"data");
    host.mkdir("d");
    let (vfs, control) = mirror_faulty(backend(&host, Duration::from_secs(3600)), 3);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    control.fail(CallKind::Change, Trigger::OneIn(1), Errno::EIO);
    type Op = fn(&vfscale::Process) -> SysResult<()>;
    let ops: [(&str, Op); 8] = [
        ("mkdir", |p| p.mkdir(b"/n", 0o755)),
        ("create", |p| {
            p.open(b"/n", O_CREAT | O_WRONLY, 0o644).map(|_| ())
        }),
        ("unlink", |p| p.unlink(b"/f")),
        ("rmdir", |p| p.rmdir(b"/d")),
        ("rename", |p| p.rename(b"/f", b"/g")),
        ("symlink", |p| p.symlink(b"f", b"/s")),
        ("link", |p| p.link(b"/f", b"/h")),
        ("chmod", |p| p.chmod(b"/f", 0o600)),
    ];
    for (what, op) in ops {
        control.arm();
        assert_eq!(op(&p), Err(Errno::EIO), "{what}");
        control.disarm();
        // The host and the cache still agree on the old state.
        let mut names: Vec<_> = std::fs::read_dir(host.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["d", "f"], "{what}");
        assert_eq!(p.stat(b"/f").unwrap().size, 4, "{what}");
        assert_eq!(p.stat(b"/f").unwrap().mode & 0o777, 0o644, "{what}");
        assert!(p.stat(b"/d").is_ok(), "{what}");
        for n in ["/n", "/g", "/s", "/h"] {
            assert_eq!(
                p.lstat(n.as_bytes()).map(|_| ()),
                Err(Errno::ENOENT),
                "{what} {n}"
            );
        }
    }
    control.clear();
    // And the same calls succeed afterwards.
    p.rename(b"/f", b"/g").unwrap();
    assert_eq!(host.read("g"), b"data");
    p.exit();
    settled(&vfs, base);
}

#[test]
fn host_changes_become_visible_after_revalidation() {
    let host = HostDir::new("reval");
    host.write("f", b"one");
    let vfs = mirror(&host, Duration::ZERO);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/new").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    // Created, grown, removed and replaced on the host.
    host.write("new", b"fresh");
    assert_eq!(
        p.stat(b"/new").unwrap().size,
        5,
        "a cached miss was not revalidated"
    );
    host.write("f", b"longer");
    assert_eq!(p.stat(b"/f").unwrap().size, 6);
    assert_eq!(read_path(&p, b"/f").unwrap(), b"longer");
    std::fs::remove_file(host.path().join("f")).unwrap();
    assert_eq!(p.stat(b"/f").map(|_| ()), Err(Errno::ENOENT));
    host.mkdir("f");
    host.write("f/child", b"c");
    assert_eq!(p.stat(b"/f").unwrap().mode & S_IFMT, S_IFDIR);
    assert_eq!(read_path(&p, b"/f/child").unwrap(), b"c");
    // A symlink whose text changed.
    host.symlink("a", "l");
    assert_eq!(p.readlink(b"/l").unwrap(), b"a");
    std::fs::remove_file(host.path().join("l")).unwrap();
    host.symlink("bb", "l");
    assert_eq!(p.readlink(b"/l").unwrap(), b"bb");
    p.exit();
    settled(&vfs, base);
}

#[test]
fn entries_are_cached_until_the_ttl() {
    let host = HostDir::new("ttl");
    host.write("f", b"one");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    assert_eq!(p.stat(b"/later").map(|_| ()), Err(Errno::ENOENT));
    host.write("f", b"longer");
    host.write("later", b"x");
    // Within the TTL the cached answers stand (no host call on a hit).
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    assert_eq!(p.stat(b"/later").map(|_| ()), Err(Errno::ENOENT));
}

/// A hot walk tests the TTL of every backend entry on its path (the
/// oldest validation), not only the entry it answers with: a directory
/// past its TTL is revalidated even when the name below it is fresh.
#[test]
fn a_stale_directory_is_revalidated_under_a_fresh_name() {
    let ttl = Duration::from_secs(2);
    let host = HostDir::new("stale-dir");
    host.mkdir("d");
    host.write("d/f", b"one");
    let vfs = mirror(&host, ttl);
    let p = vfs.root_process();
    let t0 = std::time::Instant::now();
    assert!(p.stat(b"/d").is_ok());
    std::thread::sleep(ttl / 2);
    // `d` is cached and fresh; `f` is looked up (validated) now.
    assert_eq!(p.stat(b"/d/f").unwrap().size, 3);
    if t0.elapsed() >= ttl {
        // Descheduled past the TTL: `d` was revalidated with `f`, so the
        // case below cannot be set up on this run.
        return;
    }
    std::fs::rename(host.path().join("d"), host.path().join("old")).unwrap();
    host.mkdir("d");
    std::thread::sleep(ttl * 3 / 4);
    // `d` is past its TTL, `f` is not: `d` is found replaced and `f` gone.
    assert_eq!(p.stat(b"/d/f").map(|_| ()), Err(Errno::ENOENT));
}

#[test]
fn injected_host_errors_surface_and_change_nothing() {
    let host = HostDir::new("faults");
    host.write("f", b"data");
    host.mkdir("d");
    let (vfs, control) = mirror_faulty(backend(&host, Duration::ZERO), 7);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    for (kind, errno) in [
        (CallKind::Lookup, Errno::EIO),
        (CallKind::Lookup, Errno::EACCES),
        (CallKind::Revalidate, Errno::EIO),
        (CallKind::Read, Errno::EIO),
        (CallKind::Write, Errno::ENOSPC),
        (CallKind::Readdir, Errno::EACCES),
        (CallKind::Truncate, Errno::EIO),
    ] {
        // Warm the cache so that revalidation is what a walk asks for.
        assert_eq!(p.stat(b"/f").unwrap().size, 4);
        if kind == CallKind::Lookup {
            // A name not cached yet.
            vfs.drop_caches();
        }
        let control_fd = p.open(b"/f", O_RDWR, 0).unwrap();
        let dir_fd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        if kind == CallKind::Lookup {
            vfs.drop_caches();
        }
        control.fail(kind, Trigger::OneIn(1), errno);
        control.arm();
        let before = control.injected();
        let mut buf = [0u8; 64];
        let r: SysResult<()> = match kind {
            CallKind::Lookup => p.stat(b"/d/x").map(|_| ()),
            CallKind::Revalidate => p.stat(b"/f").map(|_| ()),
            CallKind::Read => p.read(control_fd, &mut buf).map(|_| ()),
            CallKind::Write => p.write(control_fd, b"zz").map(|_| ()),
            CallKind::Readdir => p.getdents64(dir_fd, &mut buf).map(|_| ()),
            CallKind::Truncate => p.ftruncate(control_fd, 0),
            // Covered by `failed_host_changes_change_nothing` and
            // `syncs_and_their_errors_reach_the_host`.
            CallKind::Change | CallKind::Allocate | CallKind::Sync | CallKind::Xattr => {
                unreachable!()
            }
        };
        control.disarm();
        assert_eq!(r, Err(errno), "{kind:?}");
        assert!(control.injected() > before, "{kind:?}: no fault fired");
        // Clear the rules: a fresh control for the next round.
        control_reset(&control);
        p.close(control_fd).unwrap();
        p.close(dir_fd).unwrap();
        // Nothing cached from the failure, nothing changed on the host.
        assert_eq!(host.read("f"), b"data", "{kind:?}");
        assert_eq!(p.stat(b"/f").unwrap().size, 4, "{kind:?}");
        assert_eq!(read_path(&p, b"/f").unwrap(), b"data", "{kind:?}");
        assert_eq!(p.stat(b"/d/x").map(|_| ()), Err(Errno::ENOENT), "{kind:?}");
        host.write("d/x", b"");
        assert!(
            p.stat(b"/d/x").is_ok(),
            "{kind:?}: a failed lookup was cached"
        );
        std::fs::remove_file(host.path().join("d/x")).unwrap();
        assert_eq!(p.read_dir(b"/d").unwrap().len(), 2, "{kind:?}");
    }
    p.exit();
    settled(&vfs, base);
}

/// `common_host::settled`, asserted.
fn settled(vfs: &Vfs, base: vfscale::ObjectCounts) {
    common_host::settled(vfs, base).unwrap();
}

/// Removes a control's rules (the test uses one rule at a time).
fn control_reset(control: &FaultControl) {
    control.clear();
}

#[test]
fn mount_passthrough_in_a_tmpfs_namespace() {
    let host = HostDir::new("mount");
    host.write("f", b"mounted");
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/mnt", 0o755).unwrap();
    let src = host.path().as_os_str().as_encoded_bytes().to_vec();
    p.mount(&src, b"/mnt", b"passthrough", 0).unwrap();
    assert_eq!(read_path(&p, b"/mnt/f").unwrap(), b"mounted");
    p.mkdir(b"/mnt/x", 0o755).unwrap();
    assert!(host.path().join("x").is_dir());
    // An absolute host symlink resolves in vfscale's namespace: "/"
    // is the tmpfs root here, not the host's.
    host.symlink("/mnt/f", "abs");
    assert_eq!(read_path(&p, b"/mnt/abs").unwrap(), b"mounted");
    p.umount2(b"/mnt", 0).unwrap();
    assert_eq!(
        p.mount(b"/nonexistent-vfscale-dir", b"/mnt", b"passthrough", 0),
        Err(Errno::ENOENT)
    );
}

/// lseek's SEEK_DATA and SEEK_HOLE on a passthrough file answer from the
/// host file (cp and tar use them to find the data: an answer from the
/// empty in-memory copy said "no data", and a copy came out empty).
#[test]
fn seek_data_and_hole_follow_the_host_file() {
    let host = HostDir::new("seek");
    host.write("f", b"hello");
    // A sparse file: data, a hole of several pages, data.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(host.path().join("sparse")).unwrap();
        f.write_at(b"a", 0).unwrap();
        f.write_at(b"b", 1 << 20).unwrap();
    }
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(0));
    assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Ok(5));
    assert_eq!(p.lseek(fd, 5, SEEK_DATA), Err(Errno::ENXIO));
    assert_eq!(p.lseek(fd, -1, SEEK_DATA), Err(Errno::ENXIO));
    p.close(fd).unwrap();
    let fd = p.open(b"/sparse", O_RDONLY, 0).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(0));
    // Where the host's filesystem reports holes, the hole after the first
    // page and the data at 1 MiB; a filesystem without hole reporting
    // (data everywhere) answers as its own lseek does.
    let hole = p.lseek(fd, 0, SEEK_HOLE).unwrap();
    let host_file = std::fs::File::open(host.path().join("sparse")).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: lseek on our own open file.
    let host_hole = unsafe { libc::lseek(host_file.as_raw_fd(), 0, libc::SEEK_HOLE) };
    assert_eq!(hole, host_hole);
    // SAFETY: as above.
    let host_data = unsafe { libc::lseek(host_file.as_raw_fd(), 4096, libc::SEEK_DATA) };
    assert_eq!(p.lseek(fd, 4096, SEEK_DATA), Ok(host_data));
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR),
        Ok(host_data),
        "the position moved"
    );
    p.close(fd).unwrap();
}

/// fallocate reaches the host file (sizes, holes and the cached
/// attributes follow), and statfs reports the host filesystem's figures.
#[test]
fn fallocate_and_statfs_follow_the_host() {
    let host = HostDir::new("falloc");
    host.write("f", &[b'x'; 8192]);
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    let hf = host.path().join("f");
    let size = || std::fs::metadata(&hf).unwrap().len();
    // What the host's filesystem supports, asked of it directly on a
    // scratch file: vfscale must then answer the same.
    let host_supports = |mode: i32| {
        use std::os::fd::AsRawFd;
        let probe = std::fs::File::create(host.path().join("probe")).unwrap();
        // SAFETY: fallocate on our own open file.
        let r = unsafe { libc::fallocate(probe.as_raw_fd(), mode, 0, 4096) };
        let _ = std::fs::remove_file(host.path().join("probe"));
        r == 0
    };
    let punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    let (alloc_ok, punch_ok) = (host_supports(0), host_supports(punch));
    if alloc_ok {
        p.fallocate(fd, 0, 0, 16384).unwrap();
        assert_eq!(size(), 16384);
        assert_eq!(p.fstat(fd).unwrap().size, 16384, "cached size refreshed");
        p.fallocate(fd, FALLOC_FL_KEEP_SIZE, 16384, 4096).unwrap();
        assert_eq!(size(), 16384);
    } else {
        assert_eq!(p.fallocate(fd, 0, 0, 16384), Err(Errno::EOPNOTSUPP));
    }
    if punch_ok {
        // A hole punched on the host reads as zeros through vfscale.
        p.fallocate(fd, punch, 0, 4096).unwrap();
        assert_eq!(host.read("f")[..4096], [0u8; 4096]);
        let mut b = [1u8; 4];
        assert_eq!(p.pread(fd, &mut b, 0), Ok(4));
        assert_eq!(b, [0; 4]);
    } else {
        assert_eq!(p.fallocate(fd, punch, 0, 4096), Err(Errno::EOPNOTSUPP));
    }
    // vfs_fallocate's own checks still come first.
    assert_eq!(p.fallocate(fd, 0, -1, 1), Err(Errno::EINVAL));
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fallocate(ro, 0, 0, 1), Err(Errno::EBADF));
    p.close(ro).unwrap();
    p.close(fd).unwrap();
    // statfs: the host's type and sizes.
    let c = std::ffi::CString::new(host.path().to_str().unwrap()).unwrap();
    // SAFETY: zeroed statfs is a valid output buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: NUL-terminated path; writes only `st`.
    assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
    let ours = p.statfs(b"/").unwrap();
    assert_eq!(ours.f_type, st.f_type);
    assert_eq!(
        (ours.f_bsize, ours.f_blocks, ours.f_files),
        (st.f_bsize, st.f_blocks, st.f_files)
    );
    assert_eq!(ours.f_namelen, st.f_namelen);
}

/// fsync, fdatasync and syncfs of passthrough files reach the host (data
/// written through must be made durable there, not only in the host's
/// page cache): each is one backend call, whose error surfaces unchanged
/// (injected EIO, as a failing disk would answer); xattr and fallocate
/// failures surface the same way and change nothing.
#[test]
fn syncs_and_their_errors_reach_the_host() {
    let host = HostDir::new("sync");
    host.write("f", b"data");
    host.mkdir("d");
    let pt = Passthrough::new(host.path(), PassthroughConfig::default()).unwrap();
    let (vfs, control) = mirror_faulty(pt, 5);
    let p = vfs.root_process();
    let f = p.open(b"/f", O_RDWR, 0).unwrap();
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.pwrite(f, b"DATA", 0).unwrap();
    for fd in [f, d] {
        p.fsync(fd).unwrap();
        p.fdatasync(fd).unwrap();
    }
    p.syncfs(f).unwrap();
    control.fail(CallKind::Sync, Trigger::OneIn(1), Errno::EIO);
    control.arm();
    assert_eq!(p.fsync(f), Err(Errno::EIO));
    assert_eq!(p.fdatasync(d), Err(Errno::EIO));
    assert_eq!(p.syncfs(d), Err(Errno::EIO));
    assert_eq!(control.injected(), 3, "one backend call each");
    control.disarm();
    control.clear();
    control.fail(CallKind::Allocate, Trigger::OneIn(1), Errno::ENOSPC);
    control.fail(CallKind::Xattr, Trigger::OneIn(1), Errno::EIO);
    control.arm();
    assert_eq!(p.fallocate(f, 0, 0, 1 << 20), Err(Errno::ENOSPC));
    assert_eq!(p.setxattr(b"/f", b"user.x", b"1", 0), Err(Errno::EIO));
    control.disarm();
    assert_eq!(p.fstat(f).unwrap().size, 4);
    assert_eq!(host.read("f"), b"DATA");
    p.close(f).unwrap();
    p.close(d).unwrap();
}

/// bind in a passthrough directory makes a socket file on the host and
/// pins its cached name: connects and datagrams by that path reach the
/// socket (past the TTL too), the host sees a socket file, and after an
/// unlink the name leads nowhere.
#[test]
fn sockets_bind_in_a_passthrough_directory() {
    let host = HostDir::new("pt-sock");
    host.mkdir("run");
    let vfs = mirror(&host, Duration::ZERO);
    let p = vfs.root_process();
    let l = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.bind(l, b"/run/srv").unwrap();
    p.listen(l, 4).unwrap();
    let meta = std::fs::symlink_metadata(host.path().join("run/srv")).unwrap();
    assert_eq!(meta.mode() & S_IFMT, S_IFSOCK, "a socket file on the host");
    let c = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.connect(c, b"/run/srv").unwrap();
    let a = p.accept4(l, 0).unwrap();
    assert_eq!(p.write(c, b"hi"), Ok(2));
    let mut b = [0u8; 4];
    assert_eq!(p.read(a, &mut b), Ok(2));
    assert_eq!(p.getpeername(c), Ok(b"/run/srv".to_vec()));
    let c2 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(p.bind(c2, b"/run/srv"), Err(Errno::EADDRINUSE));
    // Datagrams by a passthrough name.
    let d = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    p.bind(d, b"/run/log").unwrap();
    let s = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    assert_eq!(p.sendto(s, b"m", 0, Some(b"/run/log")), Ok(1));
    assert_eq!(p.recvfrom(d, &mut b, 0), Ok((1, Vec::new())));
    // The directory changed since srv was bound (TTL 0: its names are
    // looked up again); the host file's identity still leads to srv.
    let c3 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(p.connect(c3, b"/run/srv"), Ok(()));
    p.close(c3).unwrap();
    // A socket of another type by that path: EPROTOTYPE, as Linux.
    assert_eq!(p.connect(c2, b"/run/log"), Err(Errno::EPROTOTYPE));
    p.unlink(b"/run/srv").unwrap();
    assert!(std::fs::symlink_metadata(host.path().join("run/srv")).is_err());
    assert_eq!(p.connect(c2, b"/run/srv"), Err(Errno::ENOENT));
    for fd in [a, c, c2, l, d, s] {
        p.close(fd).unwrap();
    }
}

/// The permission bits and owner of the host's `rel` (not followed).
fn host_mode_and_owner(host: &HostDir, rel: &str) -> (u32, u32) {
    let m = std::fs::symlink_metadata(host.path().join(rel)).unwrap();
    (m.mode() & 0o7777, m.uid())
}

/// The host file gets exactly the mode vfscale computed: not masked again
/// by this process's umask (the core applied the caller's), and with the
/// set-user-ID bit a creating non-root caller's chown would clear (found
/// by the passthrough differential test, `kernel_diff.rs`).
#[test]
fn new_host_files_get_the_mode_asked_for() {
    let host = HostDir::new("newmode");
    let vfs = mirror(&host, Duration::ZERO);
    let root = vfs.root_process();
    root.chmod(b"/", 0o777).unwrap();
    // This process's own umask (022 in the test runs) would mask the
    // host's copy again.
    root.umask(0);
    let fd = root.open(b"/rw", O_CREAT | O_WRONLY, 0o666).unwrap();
    root.close(fd).unwrap();
    root.mkdir(b"/dir", 0o777).unwrap();
    let user = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
    user.umask(0o022);
    let fd = user.open(b"/suid", O_CREAT | O_WRONLY, 0o4755).unwrap();
    user.close(fd).unwrap();
    assert_eq!(host_mode_and_owner(&host, "rw"), (0o666, 0));
    assert_eq!(host_mode_and_owner(&host, "dir"), (0o777, 0));
    assert_eq!(host_mode_and_owner(&host, "suid"), (0o4755, 1000));
    assert_eq!(user.stat(b"/suid").unwrap().mode & 0o7777, 0o4755);
}

/// A non-root caller's write and truncate clear set-user-ID (and
/// set-group-ID, the file being group-executable) on the host file too,
/// though the host call is made by this (root) process, which keeps them.
#[test]
fn writes_by_a_non_root_caller_clear_set_id_bits_on_the_host() {
    let host = HostDir::new("killpriv");
    let vfs = mirror(&host, Duration::ZERO);
    let root = vfs.root_process();
    root.chmod(b"/", 0o777).unwrap();
    let user = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
    for (name, change) in [("w", "write"), ("t", "truncate")] {
        let path = format!("/{name}");
        let fd = user
            .open(path.as_bytes(), O_CREAT | O_WRONLY, 0o755)
            .unwrap();
        user.fchmod(fd, 0o6775).unwrap();
        assert_eq!(host_mode_and_owner(&host, name), (0o6775, 1000));
        if change == "write" {
            assert_eq!(user.write(fd, b"x"), Ok(1));
        } else {
            user.ftruncate(fd, 0).unwrap();
        }
        user.close(fd).unwrap();
        assert_eq!(
            host_mode_and_owner(&host, name),
            (0o775, 1000),
            "after the {change}"
        );
        assert_eq!(user.stat(path.as_bytes()).unwrap().mode & 0o7777, 0o775);
    }
}

/// One `drop_caches` frees a chain of cached directories whose only
/// cached child was a miss: freeing the child leaves its parent unused,
/// and so on up (each call freed one level before).
#[test]
fn drop_caches_frees_a_cached_chain_in_one_call() {
    let host = HostDir::new("chain");
    let vfs = mirror(&host, Duration::from_secs(60));
    let base = vfs.object_counts();
    let p = vfs.root_process();
    p.mkdir(b"/b", 0o777).unwrap();
    p.mkdir(b"/b/d", 0o777).unwrap();
    assert_eq!(p.stat(b"/b/d/a").err(), Some(Errno::ENOENT));
    p.exit();
    vfs.drop_caches();
    let now = vfs.object_counts();
    assert_eq!((now.dentries, now.inodes), (base.dentries, base.inodes));
    vfs.check_invariants().unwrap();
}

/// A directory removed through vfscale lists ENOENT from a descriptor
/// opened before, whatever the buffer (Linux's IS_DEADDIR comes first),
/// and takes no new names, as tmpfs's.
#[test]
fn a_removed_directory_lists_enoent() {
    let host = HostDir::new("deaddir");
    let vfs = mirror(&host, Duration::ZERO);
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let fd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.rmdir(b"/d").unwrap();
    let mut buf = [0u8; 256];
    assert_eq!(p.getdents64(fd, &mut buf[..0]), Err(Errno::ENOENT));
    assert_eq!(p.getdents64(fd, &mut buf), Err(Errno::ENOENT));
    assert_eq!(p.mkdirat(fd, b"x", 0o755), Err(Errno::ENOENT));
    p.close(fd).unwrap();
}

/// `mirror`, keeping the instance's host statistics.
fn mirror_counted(
    host: &HostDir,
) -> (
    Vfs,
    std::sync::Arc<vfscale::fs::passthrough::host::HostStats>,
) {
    let pt = backend(host, Duration::ZERO);
    let stats = pt.stats();
    (Vfs::with_root_fs(VfsConfig::default(), Box::new(pt)), stats)
}

#[test]
fn a_descriptor_keeps_its_file_after_the_name_is_removed() {
    let host = HostDir::new("orphan");
    let (vfs, stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, b"hello"), Ok(5));
    p.unlink(b"/f").unwrap();
    assert!(!host.path().join("f").exists(), "the host name is gone");
    // Linux: the open file lives on, nameless, until its last close.
    assert_eq!(p.pwrite(fd, b" world", 5), Ok(6));
    let mut buf = [0u8; 32];
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(11));
    assert_eq!(&buf[..11], b"hello world");
    p.fchmod(fd, 0o600).unwrap();
    p.ftruncate(fd, 3).unwrap();
    let st = p.fstat(fd).unwrap();
    assert_eq!((st.nlink, st.size, st.mode & 0o7777), (0, 3, 0o600));
    assert_eq!(p.fsync(fd), Ok(()));
    // A file that takes the old name is another file.
    host.write("f", b"other");
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(3));
    assert_eq!(&buf[..3], b"hel");
    assert_eq!(host.read("f"), b"other");
    // vfs_link: a file whose last name went gets no new one.
    assert_eq!(
        p.linkat(fd, b"", AT_FDCWD, b"/again", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    assert_eq!(stats.data_fds_held(), 1);
    p.close(fd).unwrap();
    assert_eq!(
        stats.data_fds_held(),
        0,
        "the last close closes the host file"
    );
}

#[test]
fn a_descriptor_follows_its_file_through_a_host_rename() {
    let host = HostDir::new("hostmove");
    host.write("a", b"abc");
    let (vfs, _stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/a", O_RDONLY, 0).unwrap();
    std::fs::rename(host.path().join("a"), host.path().join("b")).unwrap();
    host.write("a", b"zzz");
    let mut buf = [0u8; 8];
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(3));
    assert_eq!(
        &buf[..3],
        b"abc",
        "the file opened, not the name's new file"
    );
    p.close(fd).unwrap();
    assert_eq!(read_path(&p, b"/a"), Ok(b"zzz".to_vec()));
}

#[test]
fn open_descriptions_share_one_held_file() {
    let host = HostDir::new("shared");
    host.write("f", b"0123456789");
    let (vfs, stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let r1 = p.open(b"/f", O_RDONLY, 0).unwrap();
    let r2 = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(stats.data_fds_held(), 1);
    // A writer needs more than the held read-only file: one read-write
    // file replaces it, and the readers go on through it.
    let w = p.open(b"/f", O_WRONLY | O_APPEND, 0).unwrap();
    assert_eq!(stats.data_fds_held(), 1);
    // No host call per read or write: each is one pread or pwrite.
    let calls = stats.calls();
    let mut buf = [0u8; 4];
    for i in 0..10 {
        assert_eq!(p.pread(r1, &mut buf, i % 7), Ok(4));
    }
    assert_eq!(stats.calls(), calls);
    // Appends land at the host file's end, after what the host appended.
    std::fs::OpenOptions::new()
        .append(true)
        .open(host.path().join("f"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"XX"))
        .unwrap();
    assert_eq!(p.write(w, b"YY"), Ok(2));
    assert_eq!(host.read("f"), b"0123456789XXYY");
    assert_eq!(
        p.fstat(r2).unwrap().size,
        14,
        "the write refreshed the size"
    );
    p.close(r1).unwrap();
    p.close(w).unwrap();
    assert_eq!(stats.data_fds_held(), 1);
    assert_eq!(p.pread(r2, &mut buf, 10), Ok(4));
    assert_eq!(&buf, b"XXYY");
    p.close(r2).unwrap();
    assert_eq!(stats.data_fds_held(), 0);
}

/// Threads open, use and close one file in every access mode at once, so
/// holds are shared, upgraded from read-only or write-only to read-write,
/// and released concurrently: every call reaches the file, every
/// description still open keeps it after its name is removed (its hold
/// was not released early), and once all are closed no host file is held.
#[test]
fn concurrent_opens_share_and_release_the_held_file() {
    const CONTENT: &[u8] = b"0123456789abcdef";
    let host = HostDir::new("heldstress");
    host.write("f", CONTENT);
    let (vfs, stats) = mirror_counted(&host);
    let barrier = std::sync::Barrier::new(3);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (vfs, barrier) = (&vfs, &barrier);
            s.spawn(move || {
                let p = vfs.root_process();
                let mut seed = t + 1;
                // Some descriptions stay open across iterations.
                let mut kept = Vec::new();
                for i in 0..3000 {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let mode = [O_RDONLY, O_WRONLY, O_RDWR][(seed >> 33) as usize % 3];
                    let fd = p.open(b"/f", mode, 0).unwrap();
                    let at = (seed >> 40) as usize % CONTENT.len();
                    if mode != O_RDONLY {
                        // The same bytes where they already are.
                        assert_eq!(
                            p.pwrite(fd, &CONTENT[at..], at as i64),
                            Ok(CONTENT.len() - at)
                        );
                    }
                    if mode != O_WRONLY {
                        let mut buf = [0u8; 16];
                        let n = p.pread(fd, &mut buf, at as i64).unwrap();
                        assert_eq!(&buf[..n], &CONTENT[at..]);
                    }
                    kept.push(fd);
                    if i % 7 != 0 {
                        let k = (seed >> 50) as usize % kept.len();
                        p.close(kept.swap_remove(k)).unwrap();
                    }
                }
                barrier.wait();
                if t == 0 {
                    p.unlink(b"/f").unwrap();
                }
                barrier.wait();
                for fd in kept {
                    let mut buf = [0u8; 16];
                    if p.fd_status_flags(fd).unwrap() & O_ACCMODE != O_WRONLY {
                        assert_eq!(p.pread(fd, &mut buf, 0), Ok(16));
                        assert_eq!(&buf, CONTENT);
                    } else {
                        assert_eq!(p.pwrite(fd, &CONTENT[..1], 0), Ok(1));
                    }
                    p.close(fd).unwrap();
                }
            });
        }
    });
    assert_eq!(stats.data_fds_held(), 0);
}

#[test]
fn fstat_shows_changes_made_through_another_name_or_on_the_host() {
    let host = HostDir::new("fstatfresh");
    let (vfs, _stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/a", O_CREAT | O_RDONLY, 0o644).unwrap();
    // A second name is a second vfscale inode of the host file.
    p.linkat(fd, b"", AT_FDCWD, b"/b", AT_EMPTY_PATH).unwrap();
    p.truncate(b"/b", 1).unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, 1);
    host.write("a", b"grown on the host");
    assert_eq!(p.fstat(fd).unwrap().size, 17);
    p.close(fd).unwrap();
}

#[test]
fn o_tmpfile_makes_an_unnamed_host_file_that_linkat_can_name_once() {
    let host = HostDir::new("tmpfile");
    std::fs::create_dir(host.path().join("d")).unwrap();
    let (vfs, stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/d", O_TMPFILE | O_RDWR, 0o640).unwrap();
    assert_eq!(p.write(fd, b"draft"), Ok(5));
    let st = p.fstat(fd).unwrap();
    assert_eq!(
        (st.nlink, st.size, st.mode & S_IFMT, st.mode & 0o7777),
        (0, 5, S_IFREG, 0o640)
    );
    assert_eq!(
        std::fs::read_dir(host.path().join("d")).unwrap().count(),
        0,
        "nothing named on the host"
    );
    assert_eq!(stats.data_fds_held(), 1, "the host file is held");
    // Its first name: the host file, with what was written, appears.
    p.linkat(fd, b"", AT_FDCWD, b"/d/final", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(host.read("d/final"), b"draft");
    assert_eq!(p.fstat(fd).unwrap().nlink, 1);
    let host_ino = std::fs::symlink_metadata(host.path().join("d/final"))
        .unwrap()
        .ino();
    assert_eq!(p.stat(b"/d/final").unwrap().ino, host_ino);
    // Named now, the inode's path calls reach it by that name.
    p.fchmod(fd, 0o600).unwrap();
    assert_eq!(host_mode_and_owner(&host, "d/final").0 & 0o7777, 0o600);
    // A second name goes the ordinary way.
    p.linkat(fd, b"", AT_FDCWD, b"/d/second", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(host.read("d/second"), b"draft");
    p.close(fd).unwrap();
    assert_eq!(stats.data_fds_held(), 0, "the last close closes it");

    // O_EXCL: never linkable; closing it leaves nothing on the host.
    let ex = p.open(b"/d", O_TMPFILE | O_WRONLY | O_EXCL, 0o600).unwrap();
    assert_eq!(p.write(ex, b"x"), Ok(1));
    assert_eq!(
        p.linkat(ex, b"", AT_FDCWD, b"/d/never", AT_EMPTY_PATH),
        Err(Errno::ENOENT)
    );
    p.close(ex).unwrap();
    // One that is closed unnamed is gone.
    let gone = p.open(b"/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
    p.close(gone).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(host.path().join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["final", "second"]);
    assert_eq!(stats.data_fds_held(), 0);
    // A taken name: EEXIST, and the file stays linkable.
    let again = p.open(b"/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
    assert_eq!(
        p.linkat(again, b"", AT_FDCWD, b"/d/final", AT_EMPTY_PATH),
        Err(Errno::EEXIST)
    );
    p.linkat(again, b"", AT_FDCWD, b"/d/third", AT_EMPTY_PATH)
        .unwrap();
    assert!(host.path().join("d/third").exists());
    p.close(again).unwrap();

    // A caller's file is the caller's, with the mode it asked for less
    // its umask.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        host.path().join("d"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let user = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
    user.umask(0o022);
    let t = user.open(b"/d", O_TMPFILE | O_RDWR, 0o666).unwrap();
    user.linkat(t, b"", AT_FDCWD, b"/d/users", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(host_mode_and_owner(&host, "d/users"), (0o644, 1000));
    user.close(t).unwrap();
}

#[test]
fn a_failed_host_link_leaves_an_o_tmpfile_file_linkable() {
    let host = HostDir::new("tmpfile_faults");
    let pt = backend(&host, Duration::ZERO);
    let stats = pt.stats();
    let (vfs, control) = mirror_faulty(pt, 3);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    // The backend's O_TMPFILE fails: nothing made, nothing held.
    control.fail(CallKind::Change, Trigger::OneIn(1), Errno::EIO);
    control.arm();
    assert_eq!(p.open(b"/", O_TMPFILE | O_RDWR, 0o600), Err(Errno::EIO));
    control.disarm();
    control.clear();
    assert_eq!(stats.data_fds_held(), 0);
    let fd = p.open(b"/", O_TMPFILE | O_RDWR, 0o600).unwrap();
    assert_eq!(p.write(fd, b"kept"), Ok(4));
    // The host link fails: the file keeps its first link to make.
    control.fail(CallKind::Change, Trigger::OneIn(1), Errno::EIO);
    control.arm();
    assert_eq!(
        p.linkat(fd, b"", AT_FDCWD, b"/name", AT_EMPTY_PATH),
        Err(Errno::EIO)
    );
    control.disarm();
    control.clear();
    assert!(!host.path().join("name").exists());
    p.linkat(fd, b"", AT_FDCWD, b"/name", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(host.read("name"), b"kept");
    p.close(fd).unwrap();
    assert_eq!(stats.data_fds_held(), 0);
    p.unlink(b"/name").unwrap();
    settled(&vfs, base);
}

/// Drops CAP_DAC_READ_SEARCH from the calling thread's effective set
/// (capabilities are per thread: the rest of the test process keeps it).
fn drop_dac_read_search_on_this_thread() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_DAC_READ_SEARCH: u32 = 2;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget/capset with a version-3 header and two data words,
    // for this thread (pid 0).
    unsafe {
        assert_eq!(libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()), 0);
        d[0].effective &= !(1 << CAP_DAC_READ_SEARCH);
        assert_eq!(libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()), 0);
    }
}

/// The host refuses linkat(AT_EMPTY_PATH) of a file opened under other
/// credentials without CAP_DAC_READ_SEARCH (ENOENT; before Linux 6.10,
/// of any file): the backend then names the file through its
/// /proc/self/fd link.
#[test]
fn an_o_tmpfile_file_is_named_without_cap_dac_read_search() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (drops one capability on a thread)");
        return;
    }
    let host = HostDir::new("tmpfile_nocap");
    let (vfs, _stats) = mirror_counted(&host);
    let path = host.path().to_path_buf();
    std::thread::spawn(move || {
        let probe = std::fs::File::options()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .open(&path)
            .unwrap();
        let p = vfs.root_process();
        let fd = p.open(b"/", O_TMPFILE | O_RDWR, 0o600).unwrap();
        assert_eq!(p.write(fd, b"via proc"), Ok(8));
        // Opened with the capability; linked without it.
        drop_dac_read_search_on_this_thread();
        let c = std::ffi::CString::new(path.join("probe").into_os_string().into_encoded_bytes())
            .unwrap();
        // SAFETY: our own fd and NUL-terminated strings.
        let r = unsafe {
            libc::linkat(
                std::os::fd::AsRawFd::as_raw_fd(&probe),
                c"".as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        assert_eq!(
            (r, std::io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::ENOENT)),
            "the host's own refusal, which the backend works around"
        );
        p.linkat(fd, b"", AT_FDCWD, b"/named", AT_EMPTY_PATH)
            .unwrap();
        p.close(fd).unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(host.read("named"), b"via proc");
}

/// copy_file_range within a passthrough instance copies host data (it was
/// EXDEV), from the source's size as the host has it past the TTL.
#[test]
fn copy_file_range_copies_between_passthrough_files() {
    let host = HostDir::new("copyrange");
    host.write("src", b"0123456789");
    let (vfs, stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let src = p.open(b"/src", O_RDONLY, 0).unwrap();
    let dst = p.open(b"/dst", O_CREAT | O_WRONLY, 0o644).unwrap();
    // File positions: both move.
    assert_eq!(p.lseek(src, 2, SEEK_SET), Ok(2));
    assert_eq!(p.copy_file_range(src, None, dst, None, 4, 0), Ok(4));
    assert_eq!(host.read("dst"), b"2345");
    assert_eq!(p.lseek(src, 0, SEEK_CUR), Ok(6));
    assert_eq!(p.lseek(dst, 0, SEEK_CUR), Ok(4));
    // Explicit offsets, positions untouched; the host's growth of the
    // source (TTL 0) is copied too.
    host.write("src", b"0123456789abc");
    let (mut oi, mut oo) = (8i64, 4i64);
    assert_eq!(
        p.copy_file_range(src, Some(&mut oi), dst, Some(&mut oo), 100, 0),
        Ok(5)
    );
    assert_eq!((oi, oo), (13, 9));
    assert_eq!(host.read("dst"), b"234589abc");
    assert_eq!(p.fstat(dst).unwrap().size, 9);
    assert_eq!(p.lseek(dst, 0, SEEK_CUR), Ok(4));
    // The host made both copies (its copy_file_range: a reflink or a
    // server-side copy where the host has them).
    assert_eq!(stats.copies(), 2);
    // A set-user-ID destination loses the bit when a caller without
    // CAP_FSETID copies into it, as on a write (the host, as root, would
    // keep it).
    p.chmod(b"/dst", 0o4777).unwrap();
    p.chmod(b"/src", 0o644).unwrap();
    let user = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
    let (usrc, udst) = (
        user.open(b"/src", O_RDONLY, 0).unwrap(),
        user.open(b"/dst", O_WRONLY, 0).unwrap(),
    );
    let (mut oi, mut oo) = (0i64, 0i64);
    assert_eq!(
        user.copy_file_range(usrc, Some(&mut oi), udst, Some(&mut oo), 1, 0),
        Ok(1)
    );
    assert_eq!(host_mode_and_owner(&host, "dst").0 & 0o7777, 0o777);
    assert_eq!(user.fstat(udst).unwrap().mode & 0o7777, 0o777);
    assert_eq!(stats.copies(), 3);
    user.exit();
    // Overlapping ranges of one file: EINVAL, as Linux.
    let rw = p.open(b"/src", O_RDWR, 0).unwrap();
    let (mut a, mut b) = (0i64, 2i64);
    assert_eq!(
        p.copy_file_range(rw, Some(&mut a), rw, Some(&mut b), 4, 0),
        Err(Errno::EINVAL)
    );
    for fd in [src, dst, rw] {
        p.close(fd).unwrap();
    }
}

/// A descriptor whose vfscale name was removed while the host file has
/// another name links through the held file, as Linux links any file
/// that still has a link (it answered ESTALE: no host path).
#[test]
fn a_file_with_links_left_is_linked_through_its_descriptor() {
    let host = HostDir::new("relink");
    host.write("f", b"shared");
    std::fs::hard_link(host.path().join("f"), host.path().join("g")).unwrap();
    let (vfs, _stats) = mirror_counted(&host);
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.unlink(b"/f").unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 1);
    p.linkat(fd, b"", AT_FDCWD, b"/h", AT_EMPTY_PATH).unwrap();
    let ino = |name: &str| std::fs::metadata(host.path().join(name)).unwrap().ino();
    assert_eq!(ino("h"), ino("g"));
    assert_eq!(host.read("h"), b"shared");
    p.fchmod(fd, 0o600).unwrap();
    assert_eq!(host_mode_and_owner(&host, "g").0, 0o600);
    p.close(fd).unwrap();
}

/// A host directory holding `data` as "a" and its hard link "b", mirrored
/// with entries trusted for an hour.
fn hard_linked(tag: &str, data: &[u8]) -> (HostDir, Vfs) {
    let host = HostDir::new(tag);
    host.write("a", data);
    std::fs::hard_link(host.path().join("a"), host.path().join("b")).unwrap();
    let vfs = mirror(&host, Duration::from_secs(3600));
    (host, vfs)
}

/// Two names of a host hard link are one vfscale inode (the identity map,
/// session 24), as one inode on Linux: a change through one name shows
/// through the other at once (the entries are trusted for an hour), one
/// inode is live for both, and vfscale's unlink or rename of one name
/// leaves the other reaching the file by its own name.
#[test]
fn host_hard_links_share_one_inode() {
    let (host, vfs) = hard_linked("hardlinks", b"shared");
    let p = vfs.root_process();
    let before = vfs.object_counts().inodes;
    let (sa, sb) = (p.stat(b"/a").unwrap(), p.stat(b"/b").unwrap());
    assert_eq!((sa.ino, sa.nlink), (sb.ino, 2));
    assert_eq!(
        vfs.object_counts().inodes,
        before + 1,
        "one inode, two names"
    );
    p.chmod(b"/a", 0o604).unwrap();
    assert_eq!(p.stat(b"/b").unwrap().mode & 0o7777, 0o604);
    // vfscale removes the name the inode was first found under: the
    // other still reaches the file (its path calls take the other name).
    p.unlink(b"/a").unwrap();
    assert_eq!(p.stat(b"/b").unwrap().nlink, 1);
    assert_eq!(read_path(&p, b"/b").unwrap(), b"shared");
    p.chmod(b"/b", 0o640).unwrap();
    assert_eq!(host_mode_and_owner(&host, "b").0 & 0o7777, 0o640);
    // A rename of one name of two: both keep working, by their names.
    std::fs::hard_link(host.path().join("b"), host.path().join("c")).unwrap();
    assert_eq!(p.stat(b"/c").unwrap().ino, sa.ino);
    p.rename(b"/b", b"/d").unwrap();
    p.truncate(b"/c", 3).unwrap();
    assert_eq!(read_path(&p, b"/d").unwrap(), b"sha");
    p.unlink(b"/d").unwrap();
    p.chmod(b"/c", 0o600).unwrap();
    assert_eq!(host_mode_and_owner(&host, "c").0 & 0o7777, 0o600);
    assert_eq!(read_path(&p, b"/c").unwrap(), b"sha");
    p.unlink(b"/c").unwrap();
    // A file with one link, cached, then linked through vfscale: the new
    // name finds the same inode.
    host.write("e", b"one");
    assert_eq!(p.stat(b"/e").unwrap().nlink, 1);
    p.link(b"/e", b"/f").unwrap();
    p.chmod(b"/f", 0o606).unwrap();
    let (se, sf) = (p.stat(b"/e").unwrap(), p.stat(b"/f").unwrap());
    assert_eq!((se.mode & 0o7777, se.nlink), (0o606, 2));
    assert_eq!(sf.ino, se.ino);
    p.unlink(b"/e").unwrap();
    p.unlink(b"/f").unwrap();
    vfs.drop_caches();
    assert_eq!(vfs.object_counts().inodes, before, "nothing left");
}

/// An O_TMPFILE file, once named, is the inode a lookup of the name finds:
/// a change through its descriptor shows through the name at once.
#[test]
fn a_linked_o_tmpfile_file_is_the_inode_its_name_finds() {
    let host = HostDir::new("tmpshare");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    let fd = p.open(b"/", O_TMPFILE | O_RDWR, 0o640).unwrap();
    p.linkat(fd, b"", AT_FDCWD, b"/named", AT_EMPTY_PATH)
        .unwrap();
    assert_eq!(p.stat(b"/named").unwrap().mode & 0o7777, 0o640);
    p.fchmod(fd, 0o604).unwrap();
    assert_eq!(p.write(fd, b"late"), Ok(4));
    let st = p.stat(b"/named").unwrap();
    assert_eq!((st.mode & 0o7777, st.size), (0o604, 4));
    p.close(fd).unwrap();
}

/// A shared inode's host calls use the name it was last found under: a
/// host rename of the name it was first found under (behind vfscale,
/// within the TTL) leaves the other name working.
#[test]
fn a_shared_inode_uses_the_name_last_found() {
    let (host, vfs) = hard_linked("lastfound", b"x");
    let p = vfs.root_process();
    let ino = p.stat(b"/a").unwrap().ino;
    std::fs::rename(host.path().join("a"), host.path().join("c")).unwrap();
    assert_eq!(p.stat(b"/b").unwrap().ino, ino);
    p.chmod(b"/b", 0o600).unwrap();
    assert_eq!(host_mode_and_owner(&host, "b").0 & 0o7777, 0o600);
    p.truncate(b"/b", 0).unwrap();
    assert_eq!(host.read("c"), b"");
}

/// fsync of a directory vfscale removed, through a descriptor that kept
/// it, succeeds as on Linux (it answered ESTALE: the directory's host
/// path is gone and directories hold no host file).
#[test]
fn fsync_of_a_removed_directory_succeeds() {
    let host = HostDir::new("rmdirsync");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    p.mkdir(b"/r", 0o755).unwrap();
    let fd = p.open(b"/r", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(p.fsync(fd), Ok(()));
    p.rmdir(b"/r").unwrap();
    assert_eq!(p.fstat(fd).unwrap().nlink, 0);
    assert_eq!(p.fsync(fd), Ok(()));
    assert_eq!(p.fdatasync(fd), Ok(()));
    p.close(fd).unwrap();
}

/// A file with a second name inside a directory, exchanged with that
/// directory: the file's name moves to the directory's and its other name
/// moves with the directory. Both names must keep reaching the host file
/// (session 34: once a link through vfscale taught the node its new name,
/// the exchange moved the one and left the other stale, and a setattr by
/// the first went to the stale path: ENOTDIR).
#[test]
fn a_file_exchanged_with_a_directory_holding_its_other_name_keeps_both() {
    let host = HostDir::new("exchange-linked");
    let vfs = vfscale::Vfs::with_passthrough_root(
        vfscale::VfsConfig::default(),
        host.path(),
        vfscale::fs::passthrough::PassthroughConfig {
            ttl: Duration::ZERO,
            ..Default::default()
        },
    )
    .unwrap();
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    let f = p.open(b"/a/x", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(f).unwrap();
    p.link(b"/a/x", b"/b/x").unwrap();
    p.renameat2(AT_FDCWD, b"/b", AT_FDCWD, b"/a/x", RENAME_EXCHANGE)
        .unwrap();
    assert_eq!(p.utimensat(AT_FDCWD, b"/b", None, 0), Ok(()));
    assert_eq!(p.chmod(b"/b", 0o600), Ok(()));
    assert_eq!(p.stat(b"/a/x/x").unwrap().mode & 0o7777, 0o600);
    assert_eq!(p.stat(b"/a/x").unwrap().mode & S_IFMT, S_IFDIR);
    let fd = p.open(b"/a/x/x", O_WRONLY, 0).unwrap();
    assert_eq!(p.write(fd, b"both"), Ok(4));
    p.close(fd).unwrap();
    assert_eq!(std::fs::read(host.path().join("b")).unwrap(), b"both");
    assert_eq!(host.path().join("a/x/x").metadata().unwrap().nlink(), 2);
}

/// A watched passthrough directory keeps hearing changes after the caches
/// are dropped: its watch holds the cached entry, so the lookups that
/// follow find the watched inode instead of making a second one (before,
/// the entry was reclaimed and the watch went deaf). The file inside,
/// watched too, is found again by its host identity. Closing the instance
/// lets the entry go: a later drop frees it.
#[test]
fn a_watched_directory_keeps_its_events_across_dropped_caches() {
    let host = HostDir::new("watched-dir");
    host.mkdir("w");
    host.write("w/f", b"");
    let vfs = Vfs::with_passthrough_root(
        VfsConfig::default(),
        host.path(),
        PassthroughConfig::default(),
    )
    .unwrap();
    let p = vfs.root_process();
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p
        .inotify_add_watch(i, b"/w", IN_CREATE | IN_DELETE)
        .unwrap();
    let fwd = p.inotify_add_watch(i, b"/w/f", IN_ATTRIB).unwrap();
    let events = |p: &vfscale::Process| {
        let mut buf = vec![0u8; 4096];
        match p.read(i, &mut buf) {
            Ok(n) => InotifyEvent::parse_all(&buf[..n])
                .unwrap()
                .into_iter()
                .map(|e| (e.wd, e.mask, String::from_utf8(e.name).unwrap()))
                .collect(),
            Err(Errno::EAGAIN) => Vec::new(),
            Err(e) => panic!("read: {e}"),
        }
    };
    vfs.drop_caches();
    let fd = p.open(b"/w/new", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.chmod(b"/w/f", 0o600).unwrap();
    p.unlink(b"/w/new").unwrap();
    assert_eq!(
        events(&p),
        vec![
            (wd, IN_CREATE, "new".to_string()),
            (fwd, IN_ATTRIB, String::new()),
            (wd, IN_DELETE, "new".to_string()),
        ]
    );
    let held = vfs.object_counts().dentries;
    p.close(i).unwrap();
    vfs.drop_caches();
    assert!(vfs.object_counts().dentries < held, "the held entry went");
    drop(p);
    vfs.check_invariants().unwrap();
}

/// A directory the host replaced under vfscale, while vfscale still caches
/// a name in it: revalidation unhashes the old directory, which its cached
/// child keeps. One `drop_caches` frees both and the old directory's
/// parent too (the parent is left unused by the deferred put of the old
/// directory, after the scan that freed the child had passed it).
#[test]
fn drop_caches_frees_what_a_replaced_directory_kept() {
    for depth in 1..=3 {
        let host = HostDir::new("replaced-dir");
        let above = (0..depth)
            .map(|i| format!("p{i}"))
            .collect::<Vec<_>>()
            .join("/");
        host.mkdir(&format!("{above}/old/sub"));
        host.write(&format!("{above}/old/sub/f"), b"f");
        let vfs = mirror(&host, Duration::ZERO);
        let base = vfs.object_counts();
        let p = vfs.root_process();
        assert_eq!(
            p.stat(format!("/{above}/old/sub/f").as_bytes())
                .unwrap()
                .size,
            1
        );
        // The host moves the directory away and puts a file in its place.
        let dir = host.path().join(&above);
        std::fs::rename(dir.join("old"), dir.join("moved")).unwrap();
        host.write(&format!("{above}/old"), b"now a file");
        assert_eq!(p.stat(format!("/{above}/old").as_bytes()).unwrap().size, 10);
        p.exit();
        settled(&vfs, base);
    }
}

/// A directory the host removes while vfscale has a mount on it, or on a
/// directory beneath it, stays the mountpoint it was (as Linux before
/// 3.18; since then Linux detaches such mounts lazily): the mount stays
/// reachable, listed and unmountable, and after the umount the name is
/// gone as on the host. Before session 43 the failed revalidation dropped
/// the entry, leaving the mount listed where no walk reached it (never
/// unmountable) and its mountpoint holding the root (`check_invariants`
/// failed).
#[test]
fn a_directory_removed_on_the_host_stays_the_mountpoint_it_was() {
    for mountpoint in [&b"/a"[..], b"/a/m"] {
        let host = HostDir::new("mount-removed");
        host.mkdir("a/m");
        let vfs = mirror(&host, Duration::ZERO);
        let base = vfs.object_counts();
        let p = vfs.root_process();
        p.mount(b"none", mountpoint, b"tmpfs", 0).unwrap();
        let inner = [mountpoint, b"/inner"].concat();
        p.mkdir(&inner, 0o700).unwrap();
        std::fs::remove_dir_all(host.path().join("a")).unwrap();
        assert_eq!(p.stat(&inner).unwrap().mode, S_IFDIR | 0o700);
        // A change the host refuses (the name is gone there) forgets the
        // cached name, but not this one (a mountpoint itself is EBUSY).
        let refused = if mountpoint == b"/a" {
            Errno::EBUSY
        } else {
            Errno::ENOENT
        };
        assert_eq!(p.rename(b"/a", b"/c"), Err(refused));
        assert_eq!(p.stat(&inner).unwrap().mode, S_IFDIR | 0o700);
        let listed = String::from_utf8(p.mountinfo().unwrap()).unwrap();
        let at = format!(" {} ", String::from_utf8_lossy(mountpoint));
        assert!(listed.contains(&at), "{listed}");
        p.umount2(mountpoint, 0).unwrap();
        assert_eq!(p.stat(b"/a").err(), Some(Errno::ENOENT));
        p.exit();
        settled(&vfs, base);
        vfs.check_invariants().unwrap();
    }
}

/// A file the host replaced while vfscale still trusts its cached entry
/// (within the TTL): chmod, setxattr and link of the cached file answer
/// ENOENT (it is gone) and leave the host's new file alone; before
/// session 43 they went by its path and changed the new file. A lookup
/// that asks the host (here a fresh instance's) reaches the new file.
/// (The old file stays on the host under another name, so its inode
/// number cannot be recycled for the new one.)
#[test]
fn calls_on_a_cached_file_the_host_replaced_never_reach_the_new_one() {
    use std::os::unix::fs::PermissionsExt;
    let host = HostDir::new("replaced-file");
    host.write("f", b"old");
    let vfs = mirror(&host, Duration::from_secs(3600));
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/f").unwrap().size, 3);
    std::fs::rename(host.path().join("f"), host.path().join("moved")).unwrap();
    host.write("f", b"new file");
    std::fs::set_permissions(
        host.path().join("f"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    assert_eq!(p.chmod(b"/f", 0o600), Err(Errno::ENOENT));
    assert_eq!(p.setxattr(b"/f", b"user.x", b"1", 0), Err(Errno::ENOENT));
    assert_eq!(p.link(b"/f", b"/g"), Err(Errno::ENOENT));
    let mode = |rel: &str| {
        std::fs::metadata(host.path().join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("f"), 0o644);
    assert!(!host.path().join("g").exists());
    let fresh = mirror(&host, Duration::ZERO);
    let q = fresh.root_process();
    q.chmod(b"/f", 0o600).unwrap();
    assert_eq!(mode("f"), 0o600);
    assert_eq!(q.stat(b"/f").unwrap().size, 8);
}
