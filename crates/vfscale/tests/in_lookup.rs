//! In-lookup placeholders (dcache/in_lookup.rs): concurrent misses on one
//! name in a non-authoritative directory ask the backend once; misses on
//! different names run in parallel; the lock-free walk never answers for a
//! name whose lookup is in flight; backend errors reach every waiter and are
//! not cached, ENOENT is.
//!
//! The backend is tmpfs behind a gate: a lookup of a chosen name blocks
//! until the test opens the gate, so the test can line the other threads up
//! behind it (`Vfs::in_lookup_waiting`) before letting it answer. Every wait
//! is bounded (10 s), so a broken implementation fails instead of hanging.

mod common;
use common::xorshift;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};
use vfscale::fs::tmpfs::Tmpfs;
use vfscale::fs::{Filesystem, SuperBlock};
use vfscale::inode::Inode;
use vfscale::{Errno, ProcessApi, SysResult, Vfs, VfsConfig};

const LIMIT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct GateState {
    /// Backend calls per name.
    calls: HashMap<Vec<u8>, u32>,
    /// Names whose lookups are inside the backend now.
    inside: Vec<Vec<u8>>,
    open: bool,
    /// What a gated lookup answers (None: what tmpfs answers).
    answer: Option<Errno>,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cond: Condvar,
}

impl Gate {
    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.cond.notify_all();
    }

    fn close(&self, answer: Option<Errno>) {
        let mut s = self.state.lock().unwrap();
        s.open = false;
        s.answer = answer;
    }

    fn calls(&self, name: &[u8]) -> u32 {
        *self.state.lock().unwrap().calls.get(name).unwrap_or(&0)
    }

    /// Waits until `name`'s lookup is inside the backend; false on timeout.
    fn wait_inside(&self, name: &[u8]) -> bool {
        let deadline = Instant::now() + LIMIT;
        let mut s = self.state.lock().unwrap();
        while !s.inside.iter().any(|n| n == name) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = self.cond.wait_timeout(s, left).unwrap().0;
        }
        true
    }
}

/// tmpfs whose lookups of names starting with `g` wait for the gate.
struct GatedFs {
    gate: Arc<Gate>,
}

impl Filesystem for GatedFs {
    fn fs_type(&self) -> &'static str {
        "tmpfs"
    }
    fn dcache_is_authoritative(&self) -> bool {
        false
    }
    fn lookup(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
    ) -> SysResult<Option<vfscale::fs::FoundInode>> {
        let mut s = self.gate.state.lock().unwrap();
        *s.calls.entry(name.to_vec()).or_default() += 1;
        if !name.starts_with(b"g") {
            drop(s);
            return Tmpfs.lookup(sb, dir, name);
        }
        s.inside.push(name.to_vec());
        self.gate.cond.notify_all();
        let deadline = Instant::now() + LIMIT;
        while !s.open && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = self.gate.cond.wait_timeout(s, left).unwrap().0;
        }
        s.inside.retain(|n| n != name);
        match s.answer {
            Some(e) => Err(e),
            None => {
                drop(s);
                Tmpfs.lookup(sb, dir, name)
            }
        }
    }
}

fn gated_vfs() -> (Vfs, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let vfs = Vfs::with_root_fs(
        VfsConfig::default(),
        Box::new(GatedFs { gate: gate.clone() }),
    );
    (vfs, gate)
}

/// Polls `cond` until it holds or the limit passes.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

#[test]
fn same_name_misses_ask_the_backend_once() {
    const N: usize = 8;
    let (vfs, gate) = gated_vfs();
    let finished_early = Arc::new(AtomicBool::new(false));
    let gate_open = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let p = vfs.root_process();
            let (start, early, open) = (start.clone(), finished_early.clone(), gate_open.clone());
            std::thread::spawn(move || {
                start.wait();
                let r = p.stat(b"/gmissing").map(|_| ());
                if !open.load(SeqCst) {
                    early.store(true, SeqCst);
                }
                r
            })
        })
        .collect();
    assert!(
        gate.wait_inside(b"gmissing"),
        "no lookup reached the backend"
    );
    // Every other thread must park behind the one in the backend: neither
    // ask the backend nor answer from the cache.
    assert!(
        eventually(|| vfs.in_lookup_waiting() == N - 1),
        "waiters: {} of {}",
        vfs.in_lookup_waiting(),
        N - 1
    );
    assert_eq!(gate.calls(b"gmissing"), 1);
    gate_open.store(true, SeqCst);
    gate.open();
    for t in threads {
        assert_eq!(t.join().unwrap(), Err(Errno::ENOENT));
    }
    assert!(
        !finished_early.load(SeqCst),
        "a lookup answered while the backend call was in flight"
    );
    assert_eq!(gate.calls(b"gmissing"), 1, "the backend was asked again");
    assert_eq!(vfs.in_lookup_waiting(), 0);
    // The answer is cached: later lookups do not reach the backend.
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/gmissing").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(gate.calls(b"gmissing"), 1);
}

#[test]
fn different_names_are_looked_up_in_parallel() {
    let (vfs, gate) = gated_vfs();
    let p1 = vfs.root_process();
    let t1 = std::thread::spawn(move || p1.stat(b"/ga").map(|_| ()));
    assert!(gate.wait_inside(b"ga"));
    // "/ga" holds the directory lock shared inside the backend; a lookup of
    // another name in the same directory must reach the backend too.
    let p2 = vfs.root_process();
    let t2 = std::thread::spawn(move || p2.stat(b"/gb").map(|_| ()));
    let both_inside = gate.wait_inside(b"gb");
    gate.open();
    assert_eq!(t1.join().unwrap(), Err(Errno::ENOENT));
    assert_eq!(t2.join().unwrap(), Err(Errno::ENOENT));
    assert!(both_inside, "the second name waited for the first");
    assert_eq!((gate.calls(b"ga"), gate.calls(b"gb")), (1, 1));
}

#[test]
fn backend_error_reaches_waiters_and_is_not_cached() {
    let (vfs, gate) = gated_vfs();
    gate.close(Some(Errno::EIO));
    let p1 = vfs.root_process();
    let t1 = std::thread::spawn(move || p1.stat(b"/gerr").map(|_| ()));
    assert!(gate.wait_inside(b"gerr"));
    let p2 = vfs.root_process();
    let t2 = std::thread::spawn(move || p2.stat(b"/gerr").map(|_| ()));
    assert!(eventually(|| vfs.in_lookup_waiting() == 1));
    gate.open();
    assert_eq!(t1.join().unwrap(), Err(Errno::EIO));
    assert_eq!(
        t2.join().unwrap(),
        Err(Errno::EIO),
        "the waiter saw another answer"
    );
    assert_eq!(gate.calls(b"gerr"), 1);
    // Not cached as a negative entry: the next lookup asks again.
    gate.close(None);
    gate.open();
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/gerr").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(gate.calls(b"gerr"), 2);
    // That answer is cached.
    assert_eq!(p.stat(b"/gerr").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(gate.calls(b"gerr"), 2);
    // A create over the cached negative entry works and is seen.
    let fd = p.open(
        b"/gerr",
        vfscale::abi::O_CREAT | vfscale::abi::O_WRONLY,
        0o644,
    );
    assert!(fd.is_ok());
    assert!(p.stat(b"/gerr").is_ok());
}

#[test]
fn backend_enoent_is_cached_as_negative() {
    let (vfs, gate) = gated_vfs();
    gate.close(Some(Errno::ENOENT));
    gate.open();
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/gone").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/gone").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(gate.calls(b"gone"), 1);
    assert_eq!(p.stat(b"/gnone").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/gnone").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(
        gate.calls(b"gnone"),
        1,
        "ENOENT from the backend was not cached"
    );
}

#[test]
fn many_threads_many_names_each_asked_once() {
    // Unbounded timing: 4 threads look up the same 200 missing names in
    // shuffled orders; each name reaches the backend exactly once.
    let (vfs, gate) = gated_vfs();
    let names: Vec<Vec<u8>> = (0..200).map(|i| format!("n{i}").into_bytes()).collect();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let p = vfs.root_process();
            let mut order = names.clone();
            let mut rnd = xorshift(t * 0x9E37_79B9 + 1);
            for i in (1..order.len()).rev() {
                order.swap(i, rnd(i as u64 + 1) as usize);
            }
            std::thread::spawn(move || {
                for n in order {
                    let mut path = b"/".to_vec();
                    path.extend_from_slice(&n);
                    assert_eq!(p.stat(&path).map(|_| ()), Err(Errno::ENOENT));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for n in &names {
        assert_eq!(gate.calls(n), 1, "{}", String::from_utf8_lossy(n));
    }
}
