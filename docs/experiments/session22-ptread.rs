//! Session 22: 4 KiB preads through one passthrough descriptor, beside the
//! host's own pread of the same file. Copy to
//! `crates/vfscale-bench/examples/ptread.rs`, then
//! `cargo build --release -p vfscale-bench --example ptread` and run
//! `target/release/examples/ptread` (it writes /var/tmp/ptread/f, 1 MiB).
use std::time::Instant;
use vfscale::abi::*;
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn main() {
    let dir = std::path::Path::new("/var/tmp/ptread");
    let _ = std::fs::create_dir_all(dir);
    std::fs::write(dir.join("f"), vec![7u8; 1 << 20]).unwrap();
    let vfs = Vfs::with_passthrough_root(VfsConfig::default(), dir, PassthroughConfig::default())
        .unwrap();
    let p = vfs.root_process();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let mut buf = vec![0u8; 4096];
    for round in 0..5 {
        let n = 200_000;
        let t = Instant::now();
        for i in 0..n {
            assert_eq!(p.pread(fd, &mut buf, ((i % 256) * 4096) as i64), Ok(4096));
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        let f = std::fs::File::open(dir.join("f")).unwrap();
        let t = Instant::now();
        for i in 0..n {
            let pos = ((i % 256) * 4096) as u64;
            assert_eq!(std::os::unix::fs::FileExt::read_at(&f, &mut buf, pos).unwrap(), 4096);
        }
        let host = t.elapsed().as_nanos() as f64 / n as f64;
        println!("round {round}: {ns:.0} ns per 4 KiB pread (host's own pread {host:.0} ns)");
    }
}
