//! Instructions per anonymous-object create+close, for callgrind (the
//! bench's `anon-churn` workload on one thread, with the bench binary's
//! allocator). Run it for two op counts and divide the difference:
//! `valgrind --tool=callgrind target/release/examples/anonchurn eventfd 100000`
//! Usage: anonchurn socket|pipe|eventfd|memfd OPS
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

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
        match kind.as_str() {
            "socket" => p.close(p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap()).unwrap(),
            "pipe" => {
                let [r, w] = p.pipe2(0).unwrap();
                p.close(r).unwrap();
                p.close(w).unwrap();
            }
            "eventfd" => p.close(p.eventfd(0, 0).unwrap()).unwrap(),
            "memfd" => p.close(p.memfd_create(b"churn", 0).unwrap()).unwrap(),
            _ => {
                eprintln!("usage: anonchurn socket|pipe|eventfd|memfd OPS");
                std::process::exit(2);
            }
        }
    }
}
