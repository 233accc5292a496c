//! How far apart the host put our CPUs: the one-way latency of handing one
//! cache line between CPU 0 and CPU 1 (two pinned threads take turns
//! bumping a shared counter). On this project's VM it is bimodal —
//! ~40 ns when the two vCPUs share a cache, ~180 ns when the host places
//! them far apart — and every workload with a line both threads write
//! (create-unlink in one directory, the peers' global locks) moves with
//! it, while `cpu_ceiling` (nothing shared) does not. Run it beside a
//! 2-thread measurement (docs/PERFORMANCE.md, "Noise").
//! Usage: cargo run --release -p vfscale-bench --example line_transfer
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use vfscale_bench::sys::pin_to_cpu;

#[repr(align(64))]
struct Line(AtomicU64);

const ROUND_TRIPS: u64 = 1_000_000;

/// Waits for the counter to reach `first`, `first + 2`, ... and bumps it
/// each time, until the other thread has had `ROUND_TRIPS` turns too.
fn take_turns(line: &Line, cpu: usize, first: u64) {
    pin_to_cpu(cpu);
    let mut want = first;
    while want < 2 * ROUND_TRIPS {
        // Acquire/Release: each turn's bump pairs with the other thread's
        // wait; the ordering is what makes the line move.
        while line.0.load(Ordering::Acquire) != want {
            core::hint::spin_loop();
        }
        line.0.store(want + 1, Ordering::Release);
        want += 2;
    }
}

fn main() {
    let line = Line(AtomicU64::new(0));
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| take_turns(&line, 1, 1));
        take_turns(&line, 0, 0);
    });
    let ns = start.elapsed().as_nanos() as f64 / (2 * ROUND_TRIPS) as f64;
    println!("one-way cache-line transfer between CPU 0 and CPU 1: {ns:.1} ns");
}
