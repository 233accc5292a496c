//! How far apart the host put our CPUs: the one-way latency of handing one
//! cache line between CPU 0 and CPU 1 (two pinned threads take turns
//! bumping a shared counter). On this project's VM it is bimodal —
//! ~40 ns when the two vCPUs share a cache, ~180 ns when the host places
//! them far apart — and every workload with a line both threads write
//! (create-unlink in one directory, the peers' global locks) moves with
//! it, while `cpu_ceiling` (nothing shared) does not. Run it beside a
//! 2-thread measurement (docs/PERFORMANCE.md, "Noise").
//! Usage: cargo run --release -p vfscale-bench --example line_transfer
fn main() {
    match vfscale_bench::sys::line_transfer_ns(1_000_000) {
        Some(ns) => {
            println!("one-way cache-line transfer between CPU 0 and CPU 1: {ns:.1} ns")
        }
        None => println!("fewer than two allowed CPUs: nothing to measure"),
    }
}
