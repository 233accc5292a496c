//! create-unlink's operation, alone, for instruction counts: one process
//! creates (open O_CREAT|O_WRONLY, close) and unlinks one name in a
//! directory N times. Run under callgrind with
//! `--toggle-collect='cuhot::create_unlink*'` and divide by N
//! (docs/PERFORMANCE.md, "create-unlink's instructions").

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

#[inline(never)]
fn create_unlink(p: &vfscale::Process, name: &[u8], n: usize) {
    for _ in 0..n {
        let fd = p.open(name, O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        p.unlink(name).unwrap();
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    // Warm the allocator and the caches, then the counted run.
    create_unlink(&p, b"/d/f", 1000);
    create_unlink(&p, b"/d/f", n);
}
