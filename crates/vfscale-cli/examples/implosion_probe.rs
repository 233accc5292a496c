//! A probe for profiling fd-implosion's vfscale side without the suite:
//! repeated teardowns (one process with 2K objects, then two with K each),
//! alternating deferral on and off, with the CLI's allocator.
//! Usage: implosion_probe [K=200000] [REPS=5] [on|off]
//! e.g. `perf record -e cpu-clock -g target/release/examples/implosion_probe 200000 3 on`.

#[path = "../src/alloc.rs"]
mod alloc;

#[global_allocator]
static A: alloc::Alloc = alloc::Alloc;

use vfscale_bench::workload::fd_implosion::vfscale_implosion;

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let k: usize = arg(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let reps: usize = arg(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let only: Option<bool> = arg(3).map(|a| a == "on");
    for _ in 0..reps {
        for d in [true, false] {
            if only.is_some_and(|o| o != d) {
                continue;
            }
            let one = vfscale_implosion(1, 2 * k, d).expect("one process");
            let two = vfscale_implosion(2, k, d).expect("two processes");
            println!(
                "deferral={d:<5} 1 process {:7.1} ms   2 processes {:7.1} ms   ratio {:.2}",
                one.secs * 1e3,
                two.secs * 1e3,
                two.secs / one.secs
            );
        }
    }
}
