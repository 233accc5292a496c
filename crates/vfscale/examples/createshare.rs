//! Finds cache lines two threads both touch while creating and unlinking
//! names in one shared directory (create-unlink's scaling question: which
//! lines does every create+unlink write that the other thread also uses?).
//! No PMU is needed: run it under `valgrind --tool=lackey --trace-mem=yes`;
//! thread A churns `/d/a`, then (A parked, so its stack and thread-locals
//! are not reused) thread B churns `/d/b`, each after a warm-up, and the
//! phases are delimited by stores to `MARK` (its address is printed
//! first). `scripts/anon_shared_lines.py` intersects the two measured
//! phases' line sets (docs/TESTING.md has the command).
//! Usage: createshare [OPS]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use vfscale::abi::*;
use vfscale::{Process, ProcessApi, Vfs};

static MARK: AtomicU64 = AtomicU64::new(0);

fn churn(p: &Process, path: &[u8]) {
    let fd = p.open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.unlink(path).unwrap();
}

fn phase(p: &Process, path: &[u8], ops: u64, first_mark: u64) {
    for _ in 0..ops {
        churn(p, path);
    }
    MARK.store(first_mark, Ordering::SeqCst);
    for _ in 0..ops {
        churn(p, path);
    }
    MARK.store(first_mark + 1, Ordering::SeqCst);
}

fn main() {
    let ops: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
    let vfs = Vfs::new();
    let (pa, pb) = (vfs.root_process(), vfs.root_process());
    pa.mkdir(b"/d", 0o755).unwrap();
    // Both threads at once first, as in the real workload: contention on
    // the directory lock turns the directory hot (dcache/hot.rs), which
    // the sequential phases below would never do.
    std::thread::scope(|s| {
        for path in [&b"/d/a"[..], b"/d/b"] {
            let p = vfs.root_process();
            s.spawn(move || {
                for _ in 0..ops * 4 {
                    churn(&p, path);
                }
            });
        }
    });
    eprintln!("hot directories: {}", vfs.object_counts().hot_dirs);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let a_done = Arc::new(Barrier::new(2));
    let a_done2 = a_done.clone();
    let a = std::thread::spawn(move || {
        phase(&pa, b"/d/a", ops, 1);
        a_done2.wait();
        // Parked until B is done: B must not reuse A's stack or locals.
        done_rx.recv().unwrap();
    });
    a_done.wait();
    let b = std::thread::spawn(move || phase(&pb, b"/d/b", ops, 3));
    b.join().unwrap();
    done_tx.send(()).unwrap();
    a.join().unwrap();
}
