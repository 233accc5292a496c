//! Quick stat-same measurement (the bench crate has the real harness).
//! Usage: statbench [ITERS] [THREADS,...] [deep]   (e.g. `statbench 100000 1`
//! under `valgrind --tool=callgrind` for an instruction count per stat).
//! `deep` stats stat-deep's 4-component path `/a/b/c/f` instead of `/file`.
#[path = "shared/iters_threads.rs"]
mod shared;
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let deep = args.get(2).is_some_and(|a| a == "deep");
    let file: &[u8] = if deep { b"/a/b/c/f" } else { b"/file" };
    // The file and the directories above it.
    let make = |p: &vfscale::Process| {
        if deep {
            for d in [&b"/a"[..], b"/a/b", b"/a/b/c"] {
                p.mkdir(d, 0o755).unwrap();
            }
        }
        let fd = p.open(file, O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
    };
    let vfs = Vfs::new();
    make(&vfs.root_process());
    let (iters, thread_counts) =
        shared::iters_and_threads(&mut args.into_iter(), 20_000_000, &[1, 2]);
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
                    make(&p);
                    p
                } else {
                    vfs.root_process()
                };
                s.spawn(move || {
                    // Opaque to the optimiser, as a caller's path is: a
                    // literal would let LTO fold the scan and hash away.
                    let path = std::hint::black_box(file.to_vec());
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
