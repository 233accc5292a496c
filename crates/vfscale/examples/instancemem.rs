//! Memory per tmpfs instance: mounts 10,000 tmpfs instances on one `Vfs`
//! and prints the growth of the process's RSS divided by their number.
//! Usage: instancemem [COUNT].
use vfscale::{ProcessApi, Vfs};

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn main() {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let before = rss_kb();
    for i in 0..count {
        let dir = format!("/m{i}");
        p.mkdir(dir.as_bytes(), 0o755).unwrap();
        p.mount(b"none", dir.as_bytes(), b"tmpfs", 0).unwrap();
    }
    println!("{} bytes per instance", (rss_kb() - before) * 1024 / count);
}
