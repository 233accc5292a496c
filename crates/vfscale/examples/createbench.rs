//! create+unlink in one shared directory. Usage: createbench [ITERS]
//! [THREADS,...]. With one thread (the default) it is the instruction
//! count of issue 7's check that charging costs a create nothing
//! measurable: under `valgrind --tool=callgrind`, the difference between
//! two ITERS values divided by their difference is one
//! open(O_CREAT)+close+unlink. With thread counts (`createbench 1000000
//! 1,2`) each thread churns its own name in the one directory `/d` and the
//! time per operation is printed (create-unlink's scaling question; the
//! bench crate has the real harness). A third argument `distinct` gives
//! each thread its own directory `/dK` instead (its name `/dK/tK`): the
//! same work with nothing shared but the namespace, to tell the shared
//! directory's cost from everything else's. Each line ends with every
//! thread's estimate of a lock hand-over (`sync/handoff.rs`): what the
//! directory lock's backoff decision saw.
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs};

fn churn(p: &vfscale::Process, path: &[u8], iters: u64) {
    for _ in 0..iters {
        let fd = p.open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        p.unlink(path).unwrap();
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let threads: Option<Vec<usize>> = args
        .next()
        .map(|a| a.split(',').map(|t| t.parse().unwrap()).collect());
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let distinct = args.next().as_deref() == Some("distinct");
    let Some(threads) = threads else {
        let path = std::hint::black_box(b"/d/f".to_vec());
        churn(&p, &path, iters);
        return;
    };
    if distinct {
        for t in 0..threads.iter().copied().max().unwrap_or(0) {
            p.mkdir(format!("/d{t}").as_bytes(), 0o755).unwrap();
        }
    }
    for n in threads {
        let start = Instant::now();
        let estimates: Vec<u32> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..n)
                .map(|t| {
                    let p = vfs.root_process();
                    s.spawn(move || {
                        let path = if distinct {
                            format!("/d{t}/t{t}")
                        } else {
                            format!("/d/t{t}")
                        };
                        let path = std::hint::black_box(path.into_bytes());
                        churn(&p, &path, iters);
                        vfscale::sync::handoff::handoff_estimate_ns()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let secs = start.elapsed().as_secs_f64();
        println!(
            "threads={n} ns/op(per thread)={:.1} Mops/s total={:.2} hot directories={} \
             hand-over estimate ns={estimates:?}",
            secs * 1e9 / iters as f64,
            (iters * n as u64) as f64 / secs / 1e6,
            vfs.object_counts().hot_dirs
        );
    }
}
