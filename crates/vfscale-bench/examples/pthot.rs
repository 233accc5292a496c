//! The hot stat of `cold-lookup` in isolation, for callgrind (instructions
//! per hot stat) and lackey (lines two threads of hot stats both write).
//!
//! `pthot count DIR N PASSES [sub|tmpfs]`: mirrors DIR/files (made on the
//! first run: N empty files f0000000.., the names `cold-lookup` uses) with
//! the bench's passthrough settings (TTL 1 h, unused-dentry bound above
//! N), stats every file once (cold, timed: with the host's caches warm,
//! the time of vfscale's own miss path plus a host stat), once more in the
//! hot order (warm-up) and then PASSES times (hot, timed). It runs with the
//! `vfscale` binary's allocator (mimalloc; until session 28 it used glibc's
//! malloc, so older instruction counts are not comparable). `sub` mirrors DIR instead, so the
//! files sit one directory below the root (the bench's `--subdir`);
//! `tmpfs` makes the same names at the same depth in a tmpfs namespace
//! (no host at all). Two runs with different PASSES,
//! their instruction difference divided by N × the PASSES difference, give
//! the cost of one hot stat. With `PTHOT_SHUFFLE=1` in the environment
//! the hot passes use the bench's shuffled order instead of name order;
//! `PTHOT_HASH_BITS=B` fixes the dentry hash table at 2^B buckets instead
//! of letting it grow with the names (`VfsConfig::hash_bits`); the other
//! `PTHOT_*` knobs are at `Knobs`.
//!
//! `pthot share DIR N [sub]`: after the cold pass, thread A stats its half
//! of the files (i even, as the bench's thread 0) twice — a warm-up pass,
//! then a measured one — parks, then thread B does the same with the odd
//! files. Stores to `MARK` (its address printed first) delimit the
//! phases, as in `createshare`; `scripts/anon_shared_lines.py` lists the
//! lines both measured phases touched with at least one write (a hot
//! stat should write none that the other thread uses).
//!
//! `pthot missshare DIR N [sub]`: the same phases with misses: thread A
//! stats the files i % 4 = 0 (warm-up) then i % 4 = 1 (measured), thread
//! B those i % 4 = 2 then 3, none looked up before: the lines two
//! threads' concurrent misses in one directory both write.
#[path = "../../vfscale-cli/src/alloc.rs"]
mod alloc;

#[global_allocator]
static ALLOCATOR: alloc::Alloc = alloc::Alloc;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{abi, Process, ProcessApi, Vfs, VfsConfig};

static MARK: AtomicU64 = AtomicU64::new(0);

fn name(i: usize) -> String {
    format!("f{i:07}")
}

fn make_files(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for i in 0..n {
        let p = dir.join(name(i));
        if !p.exists() {
            std::fs::File::create(p).expect("create");
        }
    }
}

/// The namespace and the prefix under which it shows the N files.
fn namespace(dir: &Path, n: usize, how: &str) -> (Vfs, &'static str) {
    let files = dir.join("files");
    make_files(&files, n);
    let default = VfsConfig::default();
    let fixed_hash_bits: Option<u32> = std::env::var("PTHOT_HASH_BITS")
        .ok()
        .and_then(|b| b.parse().ok());
    let config = VfsConfig {
        max_unused_dentries: (2 * n).max(default.max_unused_dentries),
        hash_bits: fixed_hash_bits.unwrap_or(default.hash_bits),
        hash_max_bits: fixed_hash_bits.unwrap_or(default.hash_max_bits),
        ..default
    };
    if how == "tmpfs" {
        let vfs = Vfs::with_config(config);
        let p = vfs.root_process();
        p.mkdir(b"/files", 0o755).expect("mkdir");
        for i in 0..n {
            let path = format!("/files/{}", name(i));
            let fd = p
                .open(path.as_bytes(), abi::O_CREAT | abi::O_WRONLY, 0o644)
                .expect("create");
            p.close(fd).expect("close");
        }
        return (vfs, "/files/");
    }
    let (root, prefix) = if how == "sub" {
        (dir.to_path_buf(), "/files/")
    } else {
        (files, "/")
    };
    let vfs = Vfs::with_passthrough_root(
        config,
        &root,
        PassthroughConfig {
            ttl: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .expect("passthrough");
    (vfs, prefix)
}

/// Knobs of the hot loop (environment, read once per pass; session 14's
/// experiments on how far consecutive stats overlap, PERFORMANCE.md):
/// `PTHOT_FENCE=1` puts an `lfence` between stats (no overlap: the serial
/// latency of one stat); `PTHOT_STORES=K` adds K stores and `PTHOT_ALU=K`
/// about K register-only instructions per stat (does more work per stat
/// shrink the overlap?); `PTHOT_API=1` calls the out-of-line `fstatat`
/// through a function pointer, as the bench's loop does, instead of the
/// copy inlined here.
#[derive(Clone, Copy, Default)]
struct Knobs {
    fence: bool,
    stores: usize,
    alu: usize,
    api: bool,
}

impl Knobs {
    fn from_env() -> Knobs {
        let num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
        Knobs {
            fence: num("PTHOT_FENCE") == Some(1),
            stores: num("PTHOT_STORES").unwrap_or(0).min(256),
            alu: num("PTHOT_ALU").unwrap_or(0),
            api: num("PTHOT_API") == Some(1),
        }
    }
}

type StatFn = fn(&Process, i32, &[u8], i32) -> vfscale::SysResult<abi::Stat>;

fn stat_all(p: &Process, paths: &[Vec<u8>]) {
    let knobs = Knobs::from_env();
    let out_of_line: StatFn = std::hint::black_box(<Process as ProcessApi>::fstatat);
    let mut scratch = [0u64; 256];
    let mut acc = 0u64;
    for path in paths {
        if knobs.fence {
            // SAFETY: lfence has no operands and no memory effects.
            unsafe { core::arch::x86_64::_mm_lfence() };
        }
        for (k, slot) in scratch.iter_mut().take(knobs.stores).enumerate() {
            // SAFETY: a valid, aligned slot of a local array.
            unsafe { std::ptr::write_volatile(slot, k as u64) };
        }
        for _ in 0..knobs.alu / 5 {
            // SAFETY: register arithmetic only (`nomem`, `nostack`).
            unsafe {
                core::arch::asm!(
                    "add {0}, 1", "add {1}, 1", "add {2}, 1", "add {3}, 1",
                    inout(reg) acc, inout(reg) scratch[0], inout(reg) scratch[1],
                    inout(reg) scratch[2], options(nomem, nostack),
                )
            };
        }
        let st = if knobs.api {
            out_of_line(p, abi::AT_FDCWD, path, 0)
        } else {
            std::hint::black_box(p.stat(std::hint::black_box(path)))
        }
        .expect("stat");
        assert_eq!(st.mode & abi::S_IFMT, abi::S_IFREG);
    }
    std::hint::black_box((&scratch, acc));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!(
            "usage: pthot count DIR N PASSES [sub|tmpfs] | pthot share|missshare DIR N [sub]"
        );
        std::process::exit(2)
    };
    let (cmd, dir, n) = match &args[..] {
        [c, d, n, ..] => (
            c.as_str(),
            Path::new(d),
            n.parse::<usize>().unwrap_or_else(|_| usage()),
        ),
        _ => usage(),
    };
    match cmd {
        "count" => {
            let passes: usize = args
                .get(3)
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| usage());
            let how = args.get(4).map_or("", String::as_str);
            let (vfs, prefix) = namespace(dir, n, how);
            let mut paths: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("{prefix}{}", name(i)).into_bytes())
                .collect();
            let p = vfs.root_process();
            let cold = std::time::Instant::now();
            stat_all(&p, &paths);
            eprintln!(
                "cold pass of {n}: {:.1} ns per stat",
                cold.elapsed().as_nanos() as f64 / n.max(1) as f64
            );
            if std::env::var("PTHOT_SHUFFLE").is_ok_and(|v| v == "1") {
                // The hot passes in the bench's shuffled order.
                let order = vfscale_bench::cold_lookup::shuffled_order(n);
                paths = order.iter().map(|&i| paths[i].clone()).collect();
            }
            // A warm-up pass in the measured order (the bench's too).
            stat_all(&p, &paths);
            let t0 = std::time::Instant::now();
            for _ in 0..passes {
                stat_all(&p, &paths);
            }
            eprintln!(
                "{passes} hot passes of {n}: {:.1} ns per stat",
                t0.elapsed().as_nanos() as f64 / (passes * n).max(1) as f64
            );
        }
        "share" | "missshare" => {
            eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
            let how = args.get(3).map_or("", String::as_str);
            let (vfs, prefix) = namespace(dir, n, how);
            let misses = cmd == "missshare";
            // share: the bench's halves (i even, i odd), missed by both
            // threads at once, then stat hot in the phases. missshare:
            // the quarters i % 4 = 0, 1 (thread A's) and 2, 3 (thread B's),
            // never looked up before, so every stat of a phase is a miss.
            let part = |first: usize, step: usize| -> Vec<Vec<u8>> {
                (first..n)
                    .step_by(step)
                    .map(|i| format!("{prefix}{}", name(i)).into_bytes())
                    .collect()
            };
            let (even, odd) = if misses {
                let (a, b) = (part(0, 4), part(1, 4));
                let (c, d) = (part(2, 4), part(3, 4));
                ([a, b].concat(), [c, d].concat())
            } else {
                let (even, odd) = (part(0, 2), part(1, 2));
                // The cold pass on both threads at once, as the bench's.
                let cold = std::time::Instant::now();
                std::thread::scope(|s| {
                    for paths in [&even, &odd] {
                        let p = vfs.root_process();
                        s.spawn(move || stat_all(&p, paths));
                    }
                });
                eprintln!(
                    "cold pass of {n} on two threads: {:.1} ns per stat per thread",
                    cold.elapsed().as_nanos() as f64 * 2.0 / n.max(1) as f64
                );
                (even, odd)
            };
            let phase = |p: &Process, paths: &[Vec<u8>], first_mark: u64| {
                let (warm, measured) = if misses {
                    paths.split_at(paths.len() / 2)
                } else {
                    (paths, paths)
                };
                stat_all(p, warm);
                MARK.store(first_mark, Ordering::SeqCst);
                stat_all(p, measured);
                MARK.store(first_mark + 1, Ordering::SeqCst);
            };
            let (pa, pb) = (vfs.root_process(), vfs.root_process());
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let a_done = Arc::new(Barrier::new(2));
            std::thread::scope(|s| {
                let a_done2 = a_done.clone();
                let (phase, even) = (&phase, &even);
                s.spawn(move || {
                    phase(&pa, even, 1);
                    a_done2.wait();
                    // Parked until B is done: B must not reuse A's stack
                    // or thread-locals.
                    done_rx.recv().expect("B done");
                });
                a_done.wait();
                let b = s.spawn(move || phase(&pb, &odd, 3));
                b.join().expect("B");
                done_tx.send(()).expect("A parked");
            });
        }
        _ => usage(),
    }
}
