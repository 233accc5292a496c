//! Single-thread pwrite + fchmod instruction count (issue 8's check that
//! reporting attribute and data changes to observers costs the write paths
//! nothing measurable while nobody listens). Usage: writebench [ITERS]
//! under `valgrind --tool=callgrind`; the difference between two ITERS
//! values divided by their difference is one 8-byte pwrite + one fchmod.
use vfscale::{abi::*, ProcessApi, Vfs};

fn main() {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let data = std::hint::black_box([7u8; 8]);
    for i in 0..iters {
        p.pwrite(fd, &data, 0).unwrap();
        p.fchmod(fd, 0o600 | (i as u32 & 1) << 2).unwrap();
    }
    p.close(fd).unwrap();
}
