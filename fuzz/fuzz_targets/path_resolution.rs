//! Fuzz target: arbitrary bytes as a path against a small fixed tree.
//!
//! The tree holds nested directories, a file, absolute and relative
//! symlinks (with `..`), a symlink loop, a dangling link and a directory
//! the unprivileged caller cannot search. The first input byte picks the
//! caller (root or uid 1000) and the call; the rest is the path. Checked:
//! no panic; every error is one a path walk may give; the same call made
//! a second time gives the same answer (resolution is a function of the
//! tree, which these calls do not change); a path that `stat`s resolves, by
//! `open(O_PATH)`, to the same inode.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use vfscale::abi::*;
use vfscale::{Cred, Process, ProcessApi, Vfs};

struct World {
    _vfs: Vfs,
    root: Process,
    user: Process,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        for d in ["/a", "/a/b", "/a/b/c", "/locked", "/locked/in", "/t"] {
            root.mkdir(d.as_bytes(), 0o755).unwrap();
        }
        root.chmod(b"/locked", 0o700).unwrap();
        let fd = root.open(b"/a/b/c/f", O_CREAT | O_WRONLY, 0o644).unwrap();
        root.write(fd, b"data").unwrap();
        root.close(fd).unwrap();
        root.symlink(b"/a/b", b"/abs").unwrap();
        root.symlink(b"../../a/b/c/f", b"/a/b/rel").unwrap();
        root.symlink(b"../../../../../..", b"/a/up").unwrap();
        root.symlink(b"loop2", b"/t/loop1").unwrap();
        root.symlink(b"loop1", b"/t/loop2").unwrap();
        root.symlink(b"nowhere", b"/t/dangling").unwrap();
        root.symlink(b"/a/b/c/f/", b"/t/slash").unwrap();
        let user = vfs.process(Cred::user(1000, 1000, &[]));
        user.chdir(b"/a").unwrap();
        World {
            _vfs: vfs,
            root,
            user,
        }
    })
}

const ALLOWED: [Errno; 7] = [
    Errno::ENOENT,
    Errno::ENOTDIR,
    Errno::ELOOP,
    Errno::ENAMETOOLONG,
    Errno::EACCES,
    Errno::EINVAL,
    Errno::EISDIR,
];

/// One resolution, reduced to what must be stable: (type, ino) or errno.
fn resolve(p: &Process, call: u8, path: &[u8]) -> Result<(u32, u64), Errno> {
    let st = |s: Stat| (s.mode & S_IFMT, s.ino);
    match call % 6 {
        0 => p.stat(path).map(st),
        1 => p.lstat(path).map(st),
        2 => p.open(path, O_PATH, 0).and_then(|fd| {
            let s = p.fstat(fd);
            p.close(fd).unwrap();
            s.map(st)
        }),
        3 => p.open(path, O_RDONLY | O_DIRECTORY, 0).and_then(|fd| {
            let s = p.fstat(fd);
            p.close(fd).unwrap();
            s.map(st)
        }),
        4 => p.access(path, R_OK).map(|()| (0, 0)),
        _ => p.readlink(path).map(|t| (t.len() as u32, 0)),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, path)) = data.split_first() else {
        return;
    };
    let w = world();
    let p = if sel & 0x80 == 0 { &w.root } else { &w.user };
    let call = sel & 0x7f;
    let first = resolve(p, call, path);
    if let Err(e) = first {
        assert!(ALLOWED.contains(&e), "unexpected {e:?} for {path:?}");
    }
    let again = resolve(p, call, path);
    assert_eq!(first, again, "second resolution differs for {path:?}");
    if call % 6 == 0 {
        if let Ok((_, ino)) = first {
            let fd = p
                .open(path, O_PATH, 0)
                .expect("stat-able path opens with O_PATH");
            assert_eq!(p.fstat(fd).unwrap().ino, ino);
            p.close(fd).unwrap();
        }
    }
});
