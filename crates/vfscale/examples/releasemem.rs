//! What `drop_caches` gives back after a mass unlink (session 49,
//! `mem/slab.rs` `release_free_chunks`): makes COUNT empty tmpfs files in
//! one directory, unlinks them, runs `drop_caches` (timed) twice, and
//! prints the process's resident set after each step (and the dentry
//! hash's size, which drop_caches shrinks since session 50).
//! Usage: releasemem [COUNT] (default 1,000,000).
use std::time::Instant;
use vfscale::abi::{O_CREAT, O_EXCL, O_WRONLY};
use vfscale::{ProcessApi, Vfs};

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let path = |i: usize| format!("/d/f{i:07}").into_bytes();
    println!("start: {:.1} MB resident", rss_mb());
    for i in 0..count {
        let fd = p
            .open(&path(i), O_CREAT | O_EXCL | O_WRONLY, 0o644)
            .unwrap();
        p.close(fd).unwrap();
    }
    println!(
        "{count} files: {:.1} MB, {} hash buckets",
        rss_mb(),
        vfs.dcache_buckets()
    );
    for i in 0..count {
        p.unlink(&path(i)).unwrap();
    }
    vfs.flush();
    println!("unlinked: {:.1} MB", rss_mb());
    for pass in 1..=2 {
        let t = Instant::now();
        vfs.drop_caches();
        let took = t.elapsed();
        println!(
            "drop_caches {pass}: {:.1} MB, {took:.2?}, {} hash buckets",
            rss_mb(),
            vfs.dcache_buckets()
        );
    }
}
