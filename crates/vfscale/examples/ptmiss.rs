//! Cost of a passthrough lookup miss, for callgrind (instructions) and
//! strace (host syscalls): `ptmiss make DIR N` makes DIR/sub with N empty
//! files f0..; `ptmiss stat DIR N [sub]` mirrors DIR (TTL 1 h) and stats
//! the first N files once (every stat a miss), from the root's `sub/`
//! when `sub` is given (a miss below the root), else from `DIR/sub` as
//! the mirrored root (a miss in the root). The difference of two runs
//! with different N divided by their difference is the cost of one miss.
//!
//! `ptmiss list DIR P` mirrors DIR/sub (TTL 1 h) and lists its root P
//! times through getdents64 (32 KiB buffer, as `read_dir`; records
//! counted, not decoded): the difference of two runs with different P
//! divided by (their difference × the entries) is the cost of one entry
//! of a repeated listing (session 7: cached passthrough listings).
use std::time::Duration;
use vfscale::abi::{O_DIRECTORY, O_RDONLY};
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{Process, ProcessApi, Vfs, VfsConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, dir, n) = match &args[..] {
        [c, d, n, ..] => (
            c.as_str(),
            std::path::PathBuf::from(d),
            n.parse::<usize>().unwrap(),
        ),
        _ => {
            eprintln!("usage: ptmiss make|stat DIR N [sub] | ptmiss list DIR PASSES");
            std::process::exit(2);
        }
    };
    let sub = dir.join("sub");
    if cmd == "make" {
        std::fs::create_dir_all(&sub).unwrap();
        for i in 0..n {
            std::fs::File::create(sub.join(format!("f{i}"))).unwrap();
        }
        return;
    }
    let below = args.get(3).is_some_and(|a| a == "sub");
    let (root, prefix) = if below || cmd == "list" {
        (dir.clone(), "/sub/")
    } else {
        (sub, "/")
    };
    let vfs = Vfs::with_passthrough_root(
        VfsConfig {
            max_unused_dentries: 4 * n + 1024,
            ..VfsConfig::default()
        },
        &root,
        PassthroughConfig {
            ttl: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .unwrap();
    let p = vfs.root_process();
    if cmd == "list" {
        return list(&p, n);
    }
    let paths: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("{prefix}f{i}").into_bytes())
        .collect();
    let start = std::time::Instant::now();
    for path in &paths {
        let st = std::hint::black_box(p.stat(std::hint::black_box(path))).unwrap();
        assert_eq!(st.size, 0);
    }
    eprintln!(
        "{n} misses in {:.1} ns each",
        start.elapsed().as_nanos() as f64 / n as f64
    );
}

/// Lists `/sub` `passes` times (see the module comment).
fn list(p: &Process, passes: usize) {
    let mut buf = vec![0u8; 32 * 1024];
    let mut entries = 0;
    let start = std::time::Instant::now();
    for _ in 0..passes {
        let fd = p.open(b"/sub", O_RDONLY | O_DIRECTORY, 0).unwrap();
        loop {
            let got = p.getdents64(fd, &mut buf).unwrap();
            if got == 0 {
                break;
            }
            let mut at = 0;
            while at < got {
                at += u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                entries += 1;
            }
        }
        p.close(fd).unwrap();
    }
    eprintln!(
        "{passes} passes, {entries} entries, {:.1} ns/entry",
        start.elapsed().as_nanos() as f64 / entries as f64
    );
}
