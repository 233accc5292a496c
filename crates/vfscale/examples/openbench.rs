//! Quick open-close-same measurement (the bench crate has the real
//! harness). Usage: openbench [ITERS] [THREADS,...]; OPENBENCH_DISTINCT=1
//! gives each thread its own file. Under `valgrind --tool=callgrind` with
//! two iteration counts, the difference gives instructions per open+close.
#[path = "shared/iters_threads.rs"]
mod shared;
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs};

fn main() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    for t in 0..64 {
        let fd = p
            .open(format!("/file{t}").as_bytes(), O_CREAT | O_WRONLY, 0o644)
            .unwrap();
        p.close(fd).unwrap();
    }
    let (iters, thread_counts) =
        shared::iters_and_threads(&mut std::env::args().skip(1), 5_000_000, &[1, 2]);
    let distinct = std::env::var_os("OPENBENCH_DISTINCT").is_some();
    for threads in thread_counts {
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let p = vfs.root_process();
                s.spawn(move || {
                    let name = if distinct { t } else { 0 };
                    let path = std::hint::black_box(format!("/file{name}").into_bytes());
                    for _ in 0..iters {
                        let fd = p.open(&path, O_RDONLY, 0).unwrap();
                        p.close(fd).unwrap();
                    }
                });
            }
        });
        let secs = start.elapsed().as_secs_f64();
        let total = iters as f64 * threads as f64;
        println!(
            "threads={threads} ns/op(per thread)={:.1} Mops/s total={:.2}",
            secs * 1e9 * threads as f64 / total,
            total / secs / 1e6
        );
    }
}
