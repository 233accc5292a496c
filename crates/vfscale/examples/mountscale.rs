//! What propagation costs at scale: a shared tmpfs at /a bound into itself
//! again and again (each bind doubles its peer group: 3, 5, 9, ...
//! mounts), the time of each bind, then of a lazy umount of the top of
//! /a's stack and of dropping a namespace with the tree up.
//! Usage: mountscale [BINDS]   (default 13: 8,193 mounts; 16: 65,537).
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs};

fn grow(binds: u32) -> (Vfs, vfscale::Process) {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mount(b"none", b"/a", b"tmpfs", 0).unwrap();
    p.mkdir(b"/a/c", 0o755).unwrap();
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    for _ in 0..binds {
        let start = Instant::now();
        p.mount(b"/a", b"/a/c", b"", MS_BIND).unwrap();
        println!(
            "bind: {:?}, {} mounts",
            start.elapsed(),
            vfs.object_counts().mounts
        );
    }
    (vfs, p)
}

fn main() {
    let binds = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(13);
    let (vfs, p) = grow(binds);
    let start = Instant::now();
    p.umount2(b"/a", MNT_DETACH).unwrap();
    println!(
        "lazy umount of /a's top: {:?}, {} mounts left",
        start.elapsed(),
        vfs.object_counts().mounts
    );
    drop((p, vfs));
    let (vfs, p) = grow(binds);
    drop(p);
    let start = Instant::now();
    drop(vfs);
    println!("drop with the tree up: {:?}", start.elapsed());
}
