//! Finds cache lines two threads both touch while churning anonymous
//! objects (issue 4's scaling rule: a create+close writes nothing shared).
//! No PMU is needed: run it under `valgrind --tool=lackey --trace-mem=yes`;
//! thread A churns, then (A parked, so its stack and thread-locals are not
//! reused) thread B churns, each after a warm-up, and the phases are
//! delimited by stores to `MARK` (its address is printed first).
//! `scripts/anon_shared_lines.py` intersects the two measured phases' line
//! sets. Usage: anonshare socket|pipe|eventfd|memfd [OPS]
#[path = "shared/anon_churn.rs"]
mod anon_churn;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use vfscale::{Process, Vfs};

static MARK: AtomicU64 = AtomicU64::new(0);

fn phase(p: &Process, kind: &str, ops: u64, first_mark: u64) {
    for _ in 0..ops {
        assert!(anon_churn::churn(p, kind), "kind: {}", anon_churn::KINDS);
    }
    MARK.store(first_mark, Ordering::SeqCst);
    for _ in 0..ops {
        assert!(anon_churn::churn(p, kind), "kind: {}", anon_churn::KINDS);
    }
    MARK.store(first_mark + 1, Ordering::SeqCst);
}

fn main() {
    let kind: &'static str =
        Box::leak(std::env::args().nth(1).unwrap_or_default().into_boxed_str());
    let ops: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
    let vfs = Vfs::new();
    let (pa, pb) = (vfs.root_process(), vfs.root_process());
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let a_done = Arc::new(Barrier::new(2));
    let a_done2 = a_done.clone();
    let a = std::thread::spawn(move || {
        phase(&pa, kind, ops, 1);
        a_done2.wait();
        // Parked until B is done: B must not reuse A's stack or locals.
        done_rx.recv().unwrap();
    });
    a_done.wait();
    let b = std::thread::spawn(move || phase(&pb, kind, ops, 3));
    b.join().unwrap();
    done_tx.send(()).unwrap();
    a.join().unwrap();
}
