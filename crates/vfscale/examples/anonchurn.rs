//! Instructions per anonymous-object create+close, for callgrind (the
//! bench's `anon-churn` workload on one thread, with the bench binary's
//! allocator). Run it for two op counts and divide the difference:
//! `valgrind --tool=callgrind target/release/examples/anonchurn eventfd 100000`
//! Usage: anonchurn socket|pipe|eventfd|memfd OPS
#[path = "../../vfscale-cli/src/alloc.rs"]
mod alloc;

#[global_allocator]
static ALLOCATOR: alloc::Alloc = alloc::Alloc;

#[path = "shared/anon_churn.rs"]
mod anon_churn;

use vfscale::Vfs;

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_default();
    let ops: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    for _ in 0..ops {
        if !anon_churn::churn(&p, &kind) {
            eprintln!("usage: anonchurn {} OPS", anon_churn::KINDS);
            std::process::exit(2);
        }
    }
}
