//! The two measured phases of the lackey method (`createshare`,
//! `openshare`, `anonshare`): thread A runs an operation `ops` times as a
//! warm-up and `ops` times measured, then parks (so thread B cannot reuse
//! its stack or thread-locals), then thread B does the same. Stores to
//! `MARK` (its address printed first) delimit the measured phases, which
//! `scripts/anon_shared_lines.py` intersects.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};

static MARK: AtomicU64 = AtomicU64::new(0);

/// The operations per phase (command-line argument `n`, else `default`),
/// after printing MARK's address for the script.
pub fn start(n: usize, default: u64) -> u64 {
    eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn phase(ops: u64, first_mark: u64, op: &mut impl FnMut()) {
    for _ in 0..ops {
        op();
    }
    MARK.store(first_mark, Ordering::SeqCst);
    for _ in 0..ops {
        op();
    }
    MARK.store(first_mark + 1, Ordering::SeqCst);
}

/// Runs A's phases of `a` on one thread, then B's of `b` on another.
pub fn a_then_b(
    ops: u64,
    mut a: impl FnMut() + Send + 'static,
    mut b: impl FnMut() + Send + 'static,
) {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let a_done = Arc::new(Barrier::new(2));
    let a_done2 = a_done.clone();
    let ta = std::thread::spawn(move || {
        phase(ops, 1, &mut a);
        a_done2.wait();
        // Parked until B is done: B must not reuse A's stack or locals.
        done_rx.recv().unwrap();
    });
    a_done.wait();
    let tb = std::thread::spawn(move || phase(ops, 3, &mut b));
    tb.join().unwrap();
    done_tx.send(()).unwrap();
    ta.join().unwrap();
}
