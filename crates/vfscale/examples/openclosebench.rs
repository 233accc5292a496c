//! Quick open+close measurement of one existing file, for instruction
//! counts of the final-put path with lone puts queued or freed inline.
//! Usage: openclosebench [ITERS] [THREADS,...]; `OPENCLOSE_INLINE=1` turns
//! `VfsConfig::defer_single_puts` off (on is the default). Under
//! `valgrind --tool=callgrind`, diff the two settings' counts per op.
//! `openclosebench compare [ROUNDS]`: one thread alternates blocks of
//! 100,000 open+close on a namespace with lone puts queued and one with
//! them freed inline, and prints each setting's fastest block (on a shared
//! machine the minimum over many interleaved blocks is the least noisy
//! wall-clock figure).
#[path = "shared/iters_threads.rs"]
mod shared;
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs, VfsConfig};

/// A namespace holding "/file", and a process in it.
fn namespace_with_file(config: VfsConfig) -> (Vfs, vfscale::Process) {
    let vfs = Vfs::with_config(config);
    let p = vfs.root_process();
    let fd = p.open(b"/file", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    (vfs, p)
}

fn compare(rounds: usize) {
    let setup = |queued: bool| {
        namespace_with_file(VfsConfig {
            defer_single_puts: queued,
            ..VfsConfig::default()
        })
    };
    let modes = [setup(true), setup(false)];
    let path = std::hint::black_box(b"/file".to_vec());
    const BLOCK: u32 = 100_000;
    let mut best = [f64::MAX; 2];
    for _ in 0..rounds {
        for (i, (_, p)) in modes.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..BLOCK {
                let fd = p.open(&path, O_RDONLY, 0).unwrap();
                p.close(std::hint::black_box(fd)).unwrap();
            }
            let ns = start.elapsed().as_secs_f64() * 1e9 / f64::from(BLOCK);
            best[i] = best[i].min(ns);
        }
    }
    println!(
        "fastest block ns/op: queued={:.1} inline={:.1} difference={:.1}",
        best[0],
        best[1],
        best[0] - best[1]
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("compare") {
        let rounds = std::env::args()
            .nth(2)
            .and_then(|a| a.parse().ok())
            .unwrap_or(50);
        return compare(rounds);
    }
    let config = VfsConfig {
        defer_single_puts: std::env::var_os("OPENCLOSE_INLINE").is_none(),
        ..VfsConfig::default()
    };
    let (vfs, _) = namespace_with_file(config);
    let (iters, thread_counts) =
        shared::iters_and_threads(&mut std::env::args().skip(1), 10_000_000, &[1]);
    for threads in thread_counts {
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                let p = vfs.root_process();
                s.spawn(move || {
                    // Opaque to the optimiser, as a caller's path is.
                    let path = std::hint::black_box(b"/file".to_vec());
                    for _ in 0..iters {
                        let fd = p.open(&path, O_RDONLY, 0).unwrap();
                        p.close(std::hint::black_box(fd)).unwrap();
                    }
                });
            }
        });
        let secs = start.elapsed().as_secs_f64();
        println!(
            "threads={threads} ns/op(per thread)={:.1}",
            secs * 1e9 / iters as f64
        );
    }
}
