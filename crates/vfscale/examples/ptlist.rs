//! Cost of a repeated passthrough directory listing, for callgrind
//! (instructions) and strace (host syscalls): `ptlist make DIR N` makes
//! DIR/sub with N empty files f0..; `ptlist list DIR PASSES` mirrors
//! DIR/sub (TTL 1 h) and lists its root PASSES times through getdents64
//! (32 KiB buffer, as `read_dir`; records counted, not decoded). The difference of two runs with
//! different PASSES divided by (their difference × N) is the cost of one
//! entry of a repeated listing.
use std::time::Duration;
use vfscale::abi::{O_DIRECTORY, O_RDONLY};
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, dir, n) = match &args[..] {
        [c, d, n, ..] => (
            c.as_str(),
            std::path::PathBuf::from(d),
            n.parse::<usize>().unwrap(),
        ),
        _ => {
            eprintln!("usage: ptlist make DIR N | ptlist list DIR PASSES");
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
    let vfs = Vfs::with_passthrough_root(
        VfsConfig::default(),
        &sub,
        PassthroughConfig {
            ttl: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .unwrap();
    let p = vfs.root_process();
    let mut entries = 0;
    let start = std::time::Instant::now();
    let mut buf = vec![0u8; 32 * 1024];
    for _ in 0..n {
        let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
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
        "{n} passes, {entries} entries, {:.1} ns/entry",
        start.elapsed().as_nanos() as f64 / entries as f64
    );
}
