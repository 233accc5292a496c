//! Single-thread create+unlink instruction count (issue 7's check that
//! charging costs a create nothing measurable). Usage: createbench [ITERS]
//! under `valgrind --tool=callgrind`; the difference between two ITERS
//! values divided by their difference is one open(O_CREAT)+close+unlink.
use vfscale::{abi::*, ProcessApi, Vfs};

fn main() {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let path = std::hint::black_box(b"/d/f".to_vec());
    for _ in 0..iters {
        let fd = p.open(&path, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        p.unlink(&path).unwrap();
    }
}
