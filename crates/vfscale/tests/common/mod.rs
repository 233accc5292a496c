//! Helpers shared by the `api_*` integration tests.
//!
//! Every expected value in these tests is what Linux returns for the same
//! call (checked on a 6.18 kernel, on tmpfs). Tests that vfscale fails are
//! kept with `#[ignore = "BUG: ..."]`.

#![allow(dead_code)]

pub use vfscale::abi::*;
// Not every test uses every re-export.
#[allow(unused_imports)]
pub use vfscale::{Cred, Errno, Process, ProcessApi, Vfs};

use std::sync::mpsc;
use std::time::Duration;

/// A fresh namespace and a root process in it.
pub fn setup() -> (Vfs, Process) {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    (vfs, p)
}

/// A process of an ordinary user (uid, gid, no supplementary groups).
pub fn user(vfs: &Vfs, uid: u32, gid: u32) -> Process {
    vfs.process(Cred::user(uid, gid, &[]))
}

/// Makes the directory `path` (0755) and mounts a new tmpfs on it with
/// mount(2) flags `flags`; the mount's answer.
pub fn tmpfs_at(p: &Process, path: &[u8], flags: u64) -> SysResult<()> {
    p.mkdir(path, 0o755).unwrap();
    p.mount(b"none", path, b"tmpfs", flags)
}

/// Creates (or truncates) `path` with `data`, mode 0644 before the umask.
pub fn mkfile(p: &Process, path: &[u8], data: &[u8]) {
    let fd = p
        .open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        .unwrap_or_else(|e| panic!("create {}: {e:?}", String::from_utf8_lossy(path)));
    assert_eq!(p.write(fd, data).unwrap(), data.len());
    p.close(fd).unwrap();
}

/// The whole content of `path`.
pub fn read_file(p: &Process, path: &[u8]) -> Vec<u8> {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = p.read(fd, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    p.close(fd).unwrap();
    out
}

/// The names in a directory (without "." and ".."), sorted.
pub fn names(p: &Process, path: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = p
        .read_dir(path)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n != b"." && n != b"..")
        .collect();
    v.sort();
    v
}

/// Sorted list of byte-string literals, to compare with `names`.
pub fn sorted(list: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = list.iter().map(|s| s.to_vec()).collect();
    v.sort();
    v
}

/// One getdents64 call with a buffer of `size` bytes, decoded.
pub fn getdents(p: &Process, fd: Fd, size: usize) -> SysResult<Vec<Dirent>> {
    let mut buf = vec![0u8; size];
    let n = p.getdents64(fd, &mut buf)?;
    Ok(parse_dirents64(&buf[..n]))
}

/// Sleeps until the clock vfscale stamps with (CLOCK_REALTIME_COARSE) has
/// moved on from now, so the next timestamp is strictly later: at least
/// 15 ms, and longer while the coarse clock lags (a loaded 2-vCPU VM
/// failed `unlink_success` in CI once with a fixed 15 ms sleep).
pub fn tick() {
    let coarse = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only into the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        (ts.tv_sec, ts.tv_nsec)
    };
    let start = coarse();
    std::thread::sleep(Duration::from_millis(15));
    while coarse() <= start {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Drops the process, reclaims cached dentries and checks that only the
/// namespace root is left: one dentry, one inode, no file, one mount.
pub fn assert_baseline(vfs: &Vfs) {
    vfs.drop_caches();
    let c = vfs.object_counts();
    assert_eq!(
        (c.dentries, c.inodes, c.files, c.mounts),
        (1, 1, 0, 1),
        "{c:?}"
    );
}

/// After every process exited: the deferred puts drained and the caches
/// dropped, the dentry, inode, file and mount counts are `base`'s again
/// and the invariants hold.
pub fn assert_back_to(vfs: &Vfs, base: vfscale::ObjectCounts) {
    vfs.flush();
    vfs.drop_caches();
    let now = vfs.object_counts();
    assert_eq!(
        (now.dentries, now.inodes, now.files, now.mounts),
        (base.dentries, base.inodes, base.files, base.mounts),
        "{now:?}"
    );
    vfs.check_invariants().unwrap();
}

/// `VFSCALE_SEED`, or else a seed from the clock (odd, for `xorshift`).
pub fn seed_from_env() -> u64 {
    std::env::var("VFSCALE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// A seeded xorshift64 generator for stress tests: `rnd(n)` is in
/// `0..n` (a zero seed is made odd, since xorshift stays at zero).
pub fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed | 1;
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

/// Runs `f` on another thread and fails the test if it does not finish
/// within `secs` seconds (a deadlock turns into a failure, not a hang).
pub fn with_timeout<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("the call did not return (deadlock?)")
}

/// `st_mode`'s file type.
pub fn ftype(st: &Stat) -> u32 {
    st.mode & S_IFMT
}
