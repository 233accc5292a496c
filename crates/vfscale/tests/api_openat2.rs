//! openat2(2) without the kernel at hand: the resolve flags' answers on a
//! small tree, each as Linux 6.18 gives it (the kernel comparison with
//! thousands of cases is `vfscale-difftest/tests/openat2_kernel.rs`, which
//! needs root).

mod common_host;

use common_host::HostDir;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn how(flags: i32, mode: u64, resolve: u64) -> OpenHow {
    OpenHow {
        flags: flags as u32 as u64,
        mode,
        resolve,
    }
}

/// /d/{f (1 byte), sub/g (2), up -> ../top, abs -> /d/f, rel -> sub/g,
/// dangling -> ../made, mnt (a tmpfs with h)}, /top (3 bytes).
fn tree() -> (Vfs, vfscale::Process, Fd) {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mkdir(b"/d/sub", 0o755).unwrap();
    p.mkdir(b"/d/mnt", 0o755).unwrap();
    for (path, len) in [(&b"/d/f"[..], 1), (b"/d/sub/g", 2), (b"/top", 3)] {
        let fd = p.open(path, O_CREAT | O_WRONLY, 0o644).unwrap();
        p.write(fd, &vec![b'x'; len]).unwrap();
        p.close(fd).unwrap();
    }
    for (target, link) in [
        (&b"../top"[..], &b"/d/up"[..]),
        (b"/d/f", b"/d/abs"),
        (b"sub/g", b"/d/rel"),
        (b"../made", b"/d/dangling"),
    ] {
        p.symlink(target, link).unwrap();
    }
    p.mount(b"none", b"/d/mnt", b"tmpfs", 0).unwrap();
    p.close(p.open(b"/d/mnt/h", O_CREAT | O_WRONLY, 0o644).unwrap())
        .unwrap();
    let d = p.open(b"/d", O_PATH | O_DIRECTORY, 0).unwrap();
    (vfs, p, d)
}

/// The size of what `path` opens from `dirfd` under `resolve`.
fn size(p: &vfscale::Process, dirfd: Fd, path: &[u8], resolve: u64) -> SysResult<i64> {
    let fd = p.openat2(dirfd, path, &how(O_RDONLY, 0, resolve))?;
    let size = p.fstat(fd).unwrap().size;
    p.close(fd).unwrap();
    Ok(size)
}

#[test]
fn beneath_refuses_every_way_out() {
    let (_vfs, p, d) = tree();
    let b = RESOLVE_BENEATH;
    assert_eq!(size(&p, d, b"f", b), Ok(1));
    assert_eq!(size(&p, d, b"sub/../f", b), Ok(1));
    assert_eq!(size(&p, d, b"rel", b), Ok(2));
    assert_eq!(size(&p, d, b"..", b), Err(Errno::EXDEV));
    assert_eq!(size(&p, d, b"sub/../../top", b), Err(Errno::EXDEV));
    assert_eq!(size(&p, d, b"up", b), Err(Errno::EXDEV));
    assert_eq!(size(&p, d, b"abs", b), Err(Errno::EXDEV));
    // An absolute path is refused before the dirfd is looked at.
    assert_eq!(size(&p, 99, b"/d/f", b), Err(Errno::EXDEV));
    // A create through a link that leaves: refused, nothing made.
    let r = p.openat2(d, b"dangling", &how(O_CREAT | O_WRONLY, 0o600, b));
    assert_eq!(r, Err(Errno::EXDEV));
    assert_eq!(p.stat(b"/made").map(|_| ()), Err(Errno::ENOENT));
    // Without the flag the same create lands above /d.
    let fd = p
        .openat2(d, b"dangling", &how(O_CREAT | O_WRONLY, 0o600, 0))
        .unwrap();
    assert_eq!(p.fcntl(fd, F_CREATED_QUERY, 0), Ok(1));
    assert!(p.stat(b"/made").is_ok());
}

#[test]
fn in_root_makes_the_dirfd_the_root() {
    let (_vfs, p, d) = tree();
    let r = RESOLVE_IN_ROOT;
    // ".." stops at the dirfd, "/" is the dirfd, and so is an absolute link.
    assert_eq!(size(&p, d, b"../f", r), Ok(1));
    assert_eq!(size(&p, d, b"/f", r), Ok(1));
    assert_eq!(size(&p, d, b"/top", r), Err(Errno::ENOENT));
    assert_eq!(size(&p, d, b"up", r), Err(Errno::ENOENT));
    assert_eq!(size(&p, d, b"abs", r), Err(Errno::ENOENT));
    assert_eq!(
        size(&p, d, b"f", RESOLVE_IN_ROOT | RESOLVE_BENEATH),
        Err(Errno::EINVAL)
    );
}

#[test]
fn no_xdev_no_symlinks_and_cached() {
    let (_vfs, p, d) = tree();
    assert_eq!(size(&p, d, b"mnt/h", RESOLVE_NO_XDEV), Err(Errno::EXDEV));
    assert_eq!(size(&p, d, b"mnt/h", 0), Ok(0));
    let m = p.open(b"/d/mnt", O_PATH, 0).unwrap();
    assert_eq!(size(&p, m, b"h", RESOLVE_NO_XDEV), Ok(0));
    assert_eq!(size(&p, m, b"../f", RESOLVE_NO_XDEV), Err(Errno::EXDEV));
    // Linux's walk has not learnt its root before an absolute link here:
    // every such jump is EXDEV under NO_XDEV, same mount or not.
    assert_eq!(size(&p, d, b"abs", RESOLVE_NO_XDEV), Err(Errno::EXDEV));
    assert_eq!(size(&p, d, b"rel", RESOLVE_NO_SYMLINKS), Err(Errno::ELOOP));
    let fd = p
        .openat2(d, b"rel", &how(O_PATH | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS))
        .unwrap();
    assert_eq!(p.fstat(fd).unwrap().mode & S_IFMT, S_IFLNK);
    // Cached: names that exist are; a miss is not, even once looked up.
    assert_eq!(size(&p, d, b"sub/g", RESOLVE_CACHED), Ok(2));
    assert_eq!(size(&p, d, b"nothing", 0), Err(Errno::ENOENT));
    assert_eq!(size(&p, d, b"nothing", RESOLVE_CACHED), Err(Errno::EAGAIN));
    let r = p.openat2(d, b"f", &how(O_RDWR | O_TRUNC, 0, RESOLVE_CACHED));
    assert_eq!(r, Err(Errno::EAGAIN));
}

#[test]
fn arguments_are_checked_strictly() {
    let (_vfs, p, d) = tree();
    let bad = [
        OpenHow {
            flags: 1 << 40,
            mode: 0,
            resolve: 0,
        },
        how(O_RDONLY, 0, 0x40),
        how(O_RDONLY, 0o644, 0),
        how(O_CREAT | O_WRONLY, 0o10000, 0),
        how(O_PATH | O_RDWR, 0, 0),
        how(O_CREAT | O_DIRECTORY, 0o600, 0),
        how(O_TMPFILE, 0o600, 0),
    ];
    for h in bad {
        assert_eq!(p.openat2(d, b"f", &h), Err(Errno::EINVAL), "{h:?}");
    }
    // openat ignores what openat2 refuses.
    let fd = p.openat(d, b"f", O_PATH | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert_eq!(p.openat2(d, b"", &how(O_RDONLY, 0, 0)), Err(Errno::ENOENT));
}

/// On a passthrough instance a cached walk uses what the cache holds
/// within its TTL and asks the host for nothing: a name looked up is
/// found, one never looked up (or past the TTL) is EAGAIN.
#[test]
fn cached_walks_on_a_passthrough_instance() {
    let host = HostDir::new("openat2-cached");
    host.write("seen", b"1");
    host.write("unseen", b"22");
    for (ttl, seen) in [
        (Duration::from_secs(600), Ok(1)),
        (Duration::ZERO, Err(Errno::EAGAIN)),
    ] {
        let vfs = Vfs::with_passthrough_root(
            VfsConfig::default(),
            host.path(),
            PassthroughConfig {
                ttl,
                ..Default::default()
            },
        )
        .unwrap();
        let p = vfs.root_process();
        assert_eq!(size(&p, AT_FDCWD, b"/seen", 0), Ok(1));
        assert_eq!(
            size(&p, AT_FDCWD, b"/seen", RESOLVE_CACHED),
            seen,
            "{ttl:?}"
        );
        assert_eq!(
            size(&p, AT_FDCWD, b"/unseen", RESOLVE_CACHED),
            Err(Errno::EAGAIN)
        );
        assert_eq!(size(&p, AT_FDCWD, b"/unseen", 0), Ok(2));
    }
}
