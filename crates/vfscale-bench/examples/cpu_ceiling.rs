//! The machine's own scaling ceiling: register-only, high-IPC work (no
//! memory shared, nothing but four independent dependency chains) at 1 and
//! N threads. On VMs whose vCPUs are SMT siblings or share a power budget,
//! this is below 1.0, and no workload's efficiency can beat it.
//! Usage: cargo run --release -p vfscale-bench --example cpu_ceiling [THREADS]
use std::time::Instant;

fn work(n: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    for i in 0..n {
        a = a.wrapping_add(i ^ b);
        b = b.rotate_left(7) ^ c;
        c = c.wrapping_add(d >> 3);
        d ^= a.wrapping_add(i);
    }
    a ^ b ^ c ^ d
}

fn run(threads: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| std::hint::black_box(work(std::hint::black_box(500_000_000))));
        }
    });
    start.elapsed().as_secs_f64()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let one = (0..3).map(|_| run(1)).fold(f64::MAX, f64::min);
    let many = (0..3).map(|_| run(n)).fold(f64::MAX, f64::min);
    println!(
        "1 thread: {one:.3} s; {n} threads: {many:.3} s; ceiling efficiency {:.2}",
        one / many
    );
}
