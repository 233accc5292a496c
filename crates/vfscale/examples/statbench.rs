//! Quick stat-same measurement (the bench crate has the real harness).
//! Usage: statbench [ITERS] [THREADS,...]   (e.g. `statbench 100000 1` under
//! `valgrind --tool=callgrind` for an instruction count per stat).
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs};

fn main() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let fd = p.open(b"/file", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    let mut args = std::env::args().skip(1);
    let iters: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    let thread_counts: Vec<usize> = args
        .next()
        .map(|a| a.split(',').map(|t| t.parse().unwrap()).collect())
        .unwrap_or(vec![1, 2]);
    for threads in thread_counts {
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                // STATBENCH_SEPARATE=1: each thread its own namespace (to
                // tell sharing inside a Vfs from sharing outside it).
                let own;
                let p = if std::env::var_os("STATBENCH_SEPARATE").is_some() {
                    own = Vfs::new();
                    let p = own.root_process();
                    let fd = p.open(b"/file", O_CREAT | O_WRONLY, 0o644).unwrap();
                    p.close(fd).unwrap();
                    p
                } else {
                    vfs.root_process()
                };
                s.spawn(move || {
                    // Opaque to the optimiser, as a caller's path is: a
                    // literal would let LTO fold the scan and hash away.
                    let path = std::hint::black_box(b"/file".to_vec());
                    for _ in 0..iters {
                        std::hint::black_box(p.stat(&path).unwrap());
                    }
                });
            }
        });
        let secs = start.elapsed().as_secs_f64();
        let total = iters as f64 * threads as f64;
        println!(
            "threads={threads} ns/op(per thread)={:.1} Mops/s total={:.1}",
            secs * 1e9 / iters as f64,
            total / secs / 1e6
        );
    }
}
