//! Quick measurement of path walks through a directory whose search
//! permission comes from a POSIX ACL, against one whose mode grants it:
//! uid 1000 stats `/d/sub/f` ITERS times per thread. Usage:
//! aclwalk [ITERS] [THREADS,...]. Prints ns per stat for both.
#[path = "shared/iters_threads.rs"]
mod shared;
use std::time::Instant;
use vfscale::cred::acl::{value_of, ACL_UNDEFINED_ID as U};
use vfscale::{abi::*, Cred, ProcessApi, Vfs};

fn main() {
    let (iters, thread_counts) =
        shared::iters_and_threads(&mut std::env::args().skip(1), 2_000_000, &[1, 2]);
    for with_acl in [false, true] {
        let vfs = Vfs::new();
        let p = vfs.root_process();
        p.mkdir(b"/d", 0o755).unwrap();
        p.mkdir(b"/d/sub", 0o755).unwrap();
        let fd = p.open(b"/d/sub/f", O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        if with_acl {
            // Search for uid 1000 by a named entry; "other" has none.
            let acl = value_of(&[
                (1, 7, U),
                (2, 5, 1000),
                (4, 5, U),
                (0x10, 5, U),
                (0x20, 0, U),
            ]);
            p.setxattr(b"/d", b"system.posix_acl_access", &acl, 0)
                .unwrap();
        }
        for &threads in &thread_counts {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    let u = vfs.process(Cred::user(1000, 1000, &[]));
                    s.spawn(move || {
                        for _ in 0..iters {
                            std::hint::black_box(u.stat(b"/d/sub/f").unwrap());
                        }
                    });
                }
            });
            let ns = start.elapsed().as_nanos() as f64 / iters as f64;
            println!("acl {with_acl} threads {threads}: {ns:.1} ns per stat per thread");
        }
    }
}
