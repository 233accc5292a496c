//! openat2(2) against the kernel: one script on a private tmpfs root
//! (`on_kernel_as_root`) and on vfscale, every result compared. A tree
//! with relative, absolute, dangling and looping symlinks, `..` chains and
//! a tmpfs mounted inside; every path opened from a dirfd under each
//! resolve flag (and pairs of them) with several open flags; creates that
//! a symlink or `..` would take out of the dirfd's tree; and the strict
//! argument checks. An opened file is identified by its type, its size
//! (every file and directory of the tree has its own) and whether it is
//! on the root's filesystem. The kernel side asks again while the host
//! answers a transient EAGAIN (`KernelProcess::openat2`).

use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_difftest::script::{compare_with_kernel, show, Log};

fn how(flags: i32, mode: u64, resolve: u64) -> OpenHow {
    OpenHow {
        flags: flags as u32 as u64,
        mode,
        resolve,
    }
}

/// What `fd` is, comparable across the two sides; the fd is closed.
fn identify<P: ProcessApi>(p: &P, fd: Fd, root_dev: u64) -> String {
    let st = p.fstat(fd).unwrap();
    p.close(fd).unwrap();
    format!(
        "type {:o} size {} {}",
        st.mode & S_IFMT,
        st.size,
        if st.dev == root_dev {
            "root fs"
        } else {
            "mounted fs"
        }
    )
}

fn opened<P: ProcessApi>(p: &P, r: SysResult<Fd>, root_dev: u64) -> String {
    match r {
        Ok(fd) => identify(p, fd, root_dev),
        Err(e) => show::<()>(Err(e)),
    }
}

fn file<P: ProcessApi>(p: &P, path: &[u8], len: usize) {
    let fd = p.openat(AT_FDCWD, path, O_CREAT | O_WRONLY, 0o644).unwrap();
    p.write(fd, &vec![b'x'; len]).unwrap();
    p.close(fd).unwrap();
}

/// The tree: sizes 1..=5 for files, distinct entry counts for directories.
fn build<P: ProcessApi>(p: &P) {
    p.umask(0o022);
    for d in [&b"/d"[..], b"/d/sub", b"/d/mnt", b"/d/sub/deeper"] {
        p.mkdirat(AT_FDCWD, d, 0o755).unwrap();
    }
    file(p, b"/d/f", 1);
    file(p, b"/d/sub/g", 2);
    file(p, b"/outside", 3);
    for (target, path) in [
        (&b"sub/g"[..], &b"/d/rel"[..]),
        (b"../outside", b"/d/up"),
        (b"/d/f", b"/d/abs"),
        (b"/outside", b"/d/abs_out"),
        (b"..", b"/d/dotdot"),
        (b"loop", b"/d/loop"),
        (b"mnt/h", b"/d/tomnt"),
        (b"../f", b"/d/sub/back"),
        (b"../made_outside", b"/d/dangling_up"),
        (b"/made_abs", b"/d/dangling_abs"),
        (b"made_rel", b"/d/dangling_rel"),
        (b"/f", b"/d/abs_in_root"),
        (b"../d/sub", b"/d/via"),
        (b"/d/made_via", b"/d/sub/dangling_abs"),
    ] {
        link(p, target, path);
    }
    p.mount(b"none", b"/d/mnt", b"tmpfs", 0).unwrap();
    file(p, b"/d/mnt/h", 4);
    link(p, b"../../outside", b"/d/mnt/out");
    link(p, b"/d/f", b"/d/mnt/abs");
}

/// A symlink whose access time is never due. A symlink followed is
/// accessed, and under relatime a fresh link's access time is due, which
/// RESOLVE_CACHED cannot write (EAGAIN): whether it is still due at a walk
/// depends on the coarse clock. An access time in the future is never due
/// (`stale_link` tests the rule itself).
fn link<P: ProcessApi>(p: &P, target: &[u8], path: &[u8]) {
    p.symlinkat(target, AT_FDCWD, path).unwrap();
    let times = [Timespec::new(4_000_000_000, 0), Timespec::new(1000, 0)];
    p.utimensat(AT_FDCWD, path, Some(times), AT_SYMLINK_NOFOLLOW)
        .unwrap();
}

/// RESOLVE_CACHED and a symlink's due access time: EAGAIN, then an
/// ordinary walk through the link writes the time, then the cached walk
/// succeeds.
fn stale_link<P: ProcessApi>(p: &P, log: &mut Log, root_dev: u64) {
    p.symlinkat(b"f", AT_FDCWD, b"/d/stale").unwrap();
    let times = [Timespec::new(1000, 0), Timespec::new(2000, 0)];
    p.utimensat(AT_FDCWD, b"/d/stale", Some(times), AT_SYMLINK_NOFOLLOW)
        .unwrap();
    // Past the tick of the utimensat's ctime, so that the time written
    // below is newer than it.
    std::thread::sleep(std::time::Duration::from_millis(20));
    for (what, resolve) in [
        ("cached", RESOLVE_CACHED),
        ("ordinary", 0),
        ("cached after", RESOLVE_CACHED),
    ] {
        let r = p.openat2(AT_FDCWD, b"/d/stale", &how(O_RDONLY, 0, resolve));
        log.push((format!("stale link: {what}"), opened(p, r, root_dev)));
    }
    let atime = p.lstat(b"/d/stale").unwrap().atime;
    log.push((
        "stale link: access time written".into(),
        format!("{}", atime.sec > 2000),
    ));
}

const RESOLVES: [(&str, u64); 12] = [
    ("none", 0),
    ("BENEATH", RESOLVE_BENEATH),
    ("IN_ROOT", RESOLVE_IN_ROOT),
    ("NO_XDEV", RESOLVE_NO_XDEV),
    ("NO_SYMLINKS", RESOLVE_NO_SYMLINKS),
    ("NO_MAGICLINKS", RESOLVE_NO_MAGICLINKS),
    ("CACHED", RESOLVE_CACHED),
    ("BENEATH|NO_SYMLINKS", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS),
    ("BENEATH|NO_XDEV", RESOLVE_BENEATH | RESOLVE_NO_XDEV),
    ("IN_ROOT|NO_XDEV", RESOLVE_IN_ROOT | RESOLVE_NO_XDEV),
    ("IN_ROOT|NO_SYMLINKS", RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS),
    ("IN_ROOT|CACHED", RESOLVE_IN_ROOT | RESOLVE_CACHED),
];

fn script<P: ProcessApi>(p: &P) -> Log {
    let mut log = Log::new();
    build(p);
    let root_dev = p.stat(b"/").unwrap().dev;
    let d = p.openat(AT_FDCWD, b"/d", O_PATH | O_DIRECTORY, 0).unwrap();
    let sub = p
        .openat(AT_FDCWD, b"/d/sub", O_RDONLY | O_DIRECTORY, 0)
        .unwrap();
    let mnt = p.openat(AT_FDCWD, b"/d/mnt", O_PATH, 0).unwrap();
    let not_dir = p.openat(AT_FDCWD, b"/d/f", O_RDONLY, 0).unwrap();
    let paths: [&[u8]; 34] = [
        b"f",
        b"sub/g",
        b"rel",
        b"up",
        b"abs",
        b"abs_out",
        b"dotdot",
        b"dotdot/outside",
        b"loop",
        b"..",
        b"../outside",
        b"sub/..",
        b"sub/../..",
        b"sub/../f",
        b"/d/f",
        b"/outside",
        b"/f",
        b"mnt/h",
        b"mnt",
        b"mnt/..",
        b"mnt/../f",
        b"tomnt",
        b"sub/back",
        b".",
        b"",
        b"nonexistent",
        b"sub/nonexistent",
        b"f/",
        b"sub/",
        b"mnt/out",
        b"mnt/abs",
        b"./sub/./deeper/../g",
        b"abs_in_root",
        b"sub/deeper/../../../outside",
    ];
    let opens = [
        ("O_RDONLY", O_RDONLY),
        ("O_PATH", O_PATH),
        ("O_PATH|O_NOFOLLOW", O_PATH | O_NOFOLLOW),
        ("O_NOFOLLOW", O_RDONLY | O_NOFOLLOW),
        ("O_DIRECTORY", O_RDONLY | O_DIRECTORY),
    ];
    for (dirname, dirfd) in [("d", d), ("cwd", AT_FDCWD)] {
        for (rname, resolve) in RESOLVES {
            for path in paths {
                for (oname, flags) in opens {
                    // RESOLVE_CACHED comes after the plain walks, which
                    // left vfscale a cached miss for each missing name:
                    // still EAGAIN, as on Linux's tmpfs (no such entries).
                    let r = p.openat2(dirfd, path, &how(flags, 0, resolve));
                    log.push((
                        format!(
                            "{dirname} {rname} {oname} {:?}",
                            String::from_utf8_lossy(path)
                        ),
                        opened(p, r, root_dev),
                    ));
                }
            }
        }
    }
    // From inside the mount: ".." leaves it.
    for (rname, resolve) in RESOLVES {
        for path in [&b".."[..], b"../f", b"h", b"out", b"abs", b"."] {
            let r = p.openat2(mnt, path, &how(O_PATH, 0, resolve));
            log.push((
                format!("mnt {rname} {:?}", String::from_utf8_lossy(path)),
                opened(p, r, root_dev),
            ));
        }
        let r = p.openat2(sub, b"../..", &how(O_RDONLY, 0, resolve));
        log.push((format!("sub {rname} ../.."), opened(p, r, root_dev)));
    }

    // Creates, each name fresh per resolve flag (the tree grows the same
    // on both sides).
    for (i, (rname, resolve)) in RESOLVES.iter().enumerate() {
        let fresh = format!("new{i}");
        let cases: [(&str, Vec<u8>, i32); 11] = [
            ("plain", fresh.clone().into_bytes(), O_CREAT | O_WRONLY),
            (
                "excl",
                format!("sub/{fresh}").into_bytes(),
                O_CREAT | O_EXCL | O_WRONLY,
            ),
            (
                "through ..",
                format!("sub/../{fresh}x").into_bytes(),
                O_CREAT | O_WRONLY,
            ),
            (
                "above",
                format!("../{fresh}up").into_bytes(),
                O_CREAT | O_WRONLY,
            ),
            ("dangling up", b"dangling_up".to_vec(), O_CREAT | O_WRONLY),
            ("dangling abs", b"dangling_abs".to_vec(), O_CREAT | O_WRONLY),
            ("dangling rel", b"dangling_rel".to_vec(), O_CREAT | O_WRONLY),
            // The link to the parent holds "..": under NO_XDEV Linux's
            // walk knows its root by the dangling absolute link.
            (
                "via .., dangling abs",
                b"via/dangling_abs".to_vec(),
                O_CREAT | O_WRONLY,
            ),
            ("dotdot", b"..".to_vec(), O_CREAT | O_WRONLY),
            ("mountpoint", b"mnt".to_vec(), O_CREAT | O_WRONLY),
            (
                "in the mount",
                format!("mnt/{fresh}").into_bytes(),
                O_CREAT | O_WRONLY,
            ),
        ];
        for (what, path, flags) in cases {
            let r = p.openat2(d, &path, &how(flags, 0o600, *resolve));
            log.push((format!("create {rname} {what}"), opened(p, r, root_dev)));
        }
        let r = p.openat2(d, b"sub", &how(O_TMPFILE | O_RDWR, 0o600, *resolve));
        log.push((format!("O_TMPFILE {rname}"), opened(p, r, root_dev)));
    }
    // Where the creates landed.
    for path in [
        &b"/made_outside"[..],
        b"/made_abs",
        b"/d/made_rel",
        b"/d/made_via",
        b"/new1up",
        b"/d/new2x",
    ] {
        log.push((
            format!("exists {:?}", String::from_utf8_lossy(path)),
            show(p.stat(path).map(|s| s.size)),
        ));
    }

    stale_link(p, &mut log, root_dev);

    // The strict checks, in build_open_flags's order, then the dirfd's.
    let bad: [(&str, Fd, &[u8], OpenHow); 16] = [
        (
            "unknown flag",
            d,
            b"f",
            OpenHow {
                flags: 1 << 40,
                mode: 0,
                resolve: 0,
            },
        ),
        (
            "bit 31",
            d,
            b"f",
            OpenHow {
                flags: 1 << 31,
                mode: 0,
                resolve: 0,
            },
        ),
        ("unknown resolve", d, b"f", how(O_RDONLY, 0, 0x40)),
        (
            "BENEATH|IN_ROOT",
            d,
            b"f",
            how(O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT),
        ),
        ("mode without O_CREAT", d, b"f", how(O_RDONLY, 0o644, 0)),
        (
            "mode past 07777",
            d,
            b"x1",
            how(O_CREAT | O_WRONLY, 0o10000, 0),
        ),
        ("O_PATH|O_RDWR", d, b"f", how(O_PATH | O_RDWR, 0, 0)),
        ("O_PATH|O_CLOEXEC", d, b"f", how(O_PATH | O_CLOEXEC, 0, 0)),
        (
            "O_CREAT|O_DIRECTORY",
            d,
            b"x2",
            how(O_CREAT | O_DIRECTORY, 0o600, 0),
        ),
        ("O_TMPFILE read-only", d, b".", how(O_TMPFILE, 0o600, 0)),
        (
            "CACHED|O_CREAT",
            d,
            b"f",
            how(O_CREAT | O_RDWR, 0o600, RESOLVE_CACHED),
        ),
        (
            "CACHED|O_TRUNC",
            d,
            b"f",
            how(O_TRUNC | O_RDWR, 0, RESOLVE_CACHED),
        ),
        (
            "BENEATH, absolute, bad dirfd",
            99,
            b"/d/f",
            how(O_RDONLY, 0, RESOLVE_BENEATH),
        ),
        (
            "IN_ROOT, absolute, bad dirfd",
            99,
            b"/f",
            how(O_RDONLY, 0, RESOLVE_IN_ROOT),
        ),
        (
            "IN_ROOT, absolute, file dirfd",
            not_dir,
            b"/f",
            how(O_RDONLY, 0, RESOLVE_IN_ROOT),
        ),
        (
            "NO_XDEV, relative, file dirfd",
            not_dir,
            b"f",
            how(O_RDONLY, 0, RESOLVE_NO_XDEV),
        ),
    ];
    for (what, dirfd, path, h) in bad {
        let r = p.openat2(dirfd, path, &h);
        log.push((format!("check: {what}"), opened(p, r, root_dev)));
    }
    for fd in [d, sub, mnt, not_dir] {
        p.close(fd).unwrap();
    }
    log
}

#[test]
fn openat2_matches_the_kernel() {
    compare_with_kernel("openat2", script, script);
}
