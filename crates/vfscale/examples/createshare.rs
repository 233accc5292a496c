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
#[path = "shared/lackey_phases.rs"]
mod lackey_phases;

use vfscale::abi::*;
use vfscale::{Process, ProcessApi, Vfs};

fn churn(p: &Process, path: &[u8]) {
    let fd = p.open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.unlink(path).unwrap();
}

fn main() {
    let ops = lackey_phases::start(1, 1000);
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
    lackey_phases::a_then_b(
        ops,
        move || churn(&pa, b"/d/a"),
        move || churn(&pb, b"/d/b"),
    );
}
