//! Finds cache lines two threads both touch while opening and closing one
//! file (open-close-same's scaling question), by the method of
//! `createshare`: run under `valgrind --tool=lackey --trace-mem=yes`;
//! after a concurrent warm-up (which makes the name hot, dcache/hot.rs),
//! thread A opens+closes `/f`, then (A parked) thread B does, delimited
//! by stores to `MARK`; `scripts/anon_shared_lines.py` intersects the
//! two measured phases' line sets.
//! Usage: openshare [OPS]
#[path = "shared/lackey_phases.rs"]
mod lackey_phases;

use vfscale::abi::*;
use vfscale::{Process, ProcessApi, Vfs};

fn churn(p: &Process) {
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
}

fn main() {
    let ops = lackey_phases::start(1, 1000);
    let vfs = Vfs::new();
    let (pa, pb) = (vfs.root_process(), vfs.root_process());
    let fd = pa.open(b"/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    pa.close(fd).unwrap();
    // Held across the warm-up, so a warm-up open sees the name's reference
    // plus two holders even when valgrind runs one thread at a time.
    let held = pa.open(b"/f", O_RDONLY, 0).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            let p = vfs.root_process();
            s.spawn(move || {
                for _ in 0..ops * 4 {
                    churn(&p);
                }
            });
        }
    });
    pa.close(held).unwrap();
    eprintln!("hot dentries: {}", vfs.object_counts().hot_dentries);
    lackey_phases::a_then_b(ops, move || churn(&pa), move || churn(&pb));
}
