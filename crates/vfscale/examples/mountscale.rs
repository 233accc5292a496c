//! What propagation costs at scale: a shared tmpfs at /a bound into itself
//! again and again (each bind doubles its peer group: 3, 5, 9, ...
//! mounts), the time of each bind, then of a lazy umount of the top of
//! /a's stack and of dropping a namespace with the tree up; then of
//! unshare(CLONE_NEWNS) copying the whole tree (every copy a peer of its
//! original), of a mount on the shared /a/c reaching both namespaces'
//! peers, and of the copy's teardown when its process exits.
//! Also the time of /proc/self/mountinfo: over the first bound tree,
//! right after it grew, and last over STACK tmpfs mounts stacked on one
//! directory (each mount's parent is the one below it: a chain as deep
//! as the stack).
//! Usage: mountscale [BINDS [STACK]]   (default 13: 8,193 mounts; 16:
//! 65,537; STACK default 20,000).
use std::time::Instant;
use vfscale::{abi::*, ProcessApi, Vfs, VfsConfig};

fn grow(binds: u32) -> (Vfs, vfscale::Process) {
    // Room for 65,537 mounts plus one in each namespace (the limit is
    // per namespace; it counted them all together before session 37's
    // end, and the table in PERFORMANCE.md measured those revisions).
    let vfs = Vfs::with_config(VfsConfig {
        max_mounts: 1 << 20,
        ..VfsConfig::default()
    });
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
    let stack = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let (vfs, p) = grow(binds);
    time_mountinfo(&vfs, &p, "the bound tree");
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
    let (vfs, p) = grow(binds);
    let mut q = p.fork().unwrap();
    let start = Instant::now();
    q.unshare(CLONE_NEWNS).unwrap();
    println!(
        "unshare(CLONE_NEWNS): {:?}, {} mounts",
        start.elapsed(),
        vfs.object_counts().mounts
    );
    p.mkdir(b"/a/d", 0o755).unwrap();
    let start = Instant::now();
    p.mount(b"none", b"/a/d", b"tmpfs", 0).unwrap();
    println!(
        "a mount on the shared /a/d: {:?}, {} mounts",
        start.elapsed(),
        vfs.object_counts().mounts
    );
    let start = Instant::now();
    q.exit();
    vfs.flush();
    println!(
        "the copy's last process exits: {:?}, {} mounts left",
        start.elapsed(),
        vfs.object_counts().mounts
    );
    drop((p, vfs));
    let vfs = Vfs::with_config(VfsConfig {
        max_mounts: 1 << 20,
        ..VfsConfig::default()
    });
    let p = vfs.root_process();
    p.mkdir(b"/s", 0o755).unwrap();
    for _ in 0..stack {
        p.mount(b"none", b"/s", b"tmpfs", 0).unwrap();
    }
    time_mountinfo(&vfs, &p, "the stack");
}

fn time_mountinfo(vfs: &Vfs, p: &vfscale::Process, what: &str) {
    let start = Instant::now();
    let text = p.mountinfo().unwrap();
    println!(
        "mountinfo of {what}: {:?}, {} mounts, {} lines",
        start.elapsed(),
        vfs.object_counts().mounts,
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    );
}
