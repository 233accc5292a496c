//! `vfscale cold-lookup` (seed 003): stat every file of a host directory of
//! N files through vfscale's passthrough backend, cold and then hot, against
//! the kernel's own stat of the same files; and full listings of that
//! directory (readdir through passthrough against getdents64 on the host).
//!
//! Cold: as root, `sync` and `echo 3 > /proc/sys/vm/drop_caches` before
//! each cold pass (kernel and vfscale alike), so both read the inodes from
//! disk; otherwise a fresh directory per cold pass (which the kernel still
//! has cached: the "cold" rows then measure vfscale's miss path only — the
//! output says which). A cold pass stats the files in name order (creation
//! order, as `ls -l` or `find` would), each vfscale cold pass on a fresh
//! passthrough instance.
//!
//! Hot (issue 6, session 6): the hot rate of 100,000 entries is bound by
//! cache misses, not instructions (a hot stat is ~350 instructions), and
//! its working set (~35 MB of dentries, inodes, hash buckets and paths)
//! is about this machine's L3, so one timed stretch per point swung 3×
//! between identical runs. The hot phase therefore runs after every cold
//! point, on the host's warm caches and the last cold pass's instance:
//! one untimed warm-up pass per target, then `--repeat` rounds, each
//! timing one sample (full passes for at least `--duration`) of every
//! (thread count, target) in turn, so noise lands on all points alike;
//! each point reports the median sample and the range. Hot passes visit
//! the files in one fixed pseudo-random order (`shuffled_order`), the same
//! for the kernel and vfscale, unless `--hot-order name`: name order is
//! also the order the cold pass allocated vfscale's dentries and inodes
//! in, so the hardware prefetcher streams them and TLB entries are
//! reused — a best case that no lookup order of a real client promises
//! (sessions 2–5 measured only that).
//! Each hot sample also records the threads' CPU time: stats per CPU
//! second tell a slower thread (shared lines, memory bandwidth) from a
//! descheduled one (other work on the machine).
//!
//! `--subdir` puts the files one directory below the mirrored root, so each
//! cold lookup is a miss below the root (the common case on a real tree).
//!
//! T threads split the files (thread i takes positions i, i+T, ... of the
//! pass's order); rates are stats per second over the whole pass (from
//! the first thread's start to the last one's end, as the workers clock
//! them: `parallel`). Every stat is checked (a regular file of
//! size 0); a failure aborts the run.
//!
//! Not part of `vfscale bench`'s suite: its targets are fresh in-memory
//! namespaces, while this needs one host directory shared by the kernel
//! and the passthrough instance, and caches dropped between points. The
//! JSON keeps one row per thread count (medians) and adds `samples`, one
//! entry per (target, threads, phase) in the suite's shape (`params.phase`
//! "cold" or "hot", `params.files`, median `ops_per_sec` and its range).

use crate::sys::thread_cpu_secs;
use serde_json::{json, Value};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use vfscale::fs::passthrough::PassthroughConfig;
use vfscale::{ProcessApi, Vfs, VfsConfig};

/// Stat every file of a host directory through passthrough, cold and hot,
/// against the kernel.
#[derive(clap::Args, Debug, Clone)]
pub struct ColdLookupArgs {
    /// Files in the host directory (default 100,000; 2,000 with --quick).
    #[arg(long, value_name = "N")]
    pub files: Option<usize>,
    /// Thread counts, comma-separated (default 1,2).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub threads: Vec<usize>,
    /// Length of one hot sample: full passes for at least this long
    /// (default 1s; 100ms with --quick).
    #[arg(long, value_parser = crate::cli::parse_duration, value_name = "TIME")]
    pub duration: Option<Duration>,
    /// Measure every point this many times (cold: that many cold passes,
    /// each after a cache drop; hot: that many samples, interleaved over
    /// targets and thread counts) and report the median (default 3; 1
    /// with --quick).
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
    /// The order of the hot passes: `shuffled` (default: one fixed
    /// pseudo-random order, the same for both targets) or `name` (name
    /// order, which is also the order vfscale allocated the entries in
    /// during the cold pass; sessions 2–5 measured this way).
    #[arg(long, value_enum, default_value_t = HotOrder::Shuffled)]
    pub hot_order: HotOrder,
    /// Smoke run: few files, short hot phases.
    #[arg(long)]
    pub quick: bool,
    /// Parent directory for the host tree (default: the temporary
    /// directory; it should be on a disk for the cold rows to mean much).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Never drop the host's caches, even as root (a fresh directory per
    /// cold pass instead): for smoke tests on shared machines.
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Put the files in a subdirectory `sub/` of the mirrored root instead
    /// of the root itself, so a cold lookup is a miss below the root (the
    /// kernel target stats them from `sub/`'s own fd, as before).
    #[arg(long)]
    pub subdir: bool,
}

/// The order of the hot passes.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotOrder {
    Shuffled,
    Name,
}

struct Tree {
    dir: tempfile::TempDir,
    /// The directory holding the files: `dir` or `dir/sub`.
    files_dir: PathBuf,
    /// "/" or "/sub/": the files' directory as vfscale sees it.
    prefix: &'static [u8],
    names: Vec<CString>,
}

fn make_tree(parent: &Path, files: usize, subdir: bool) -> Result<Tree, String> {
    let dir = tempfile::Builder::new()
        .prefix("vfscale-cold-")
        .tempdir_in(parent)
        .map_err(|e| format!("cannot make a directory in {}: {e}", parent.display()))?;
    let (files_dir, prefix): (PathBuf, &'static [u8]) = if subdir {
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).map_err(|e| format!("mkdir {}: {e}", sub.display()))?;
        (sub, b"/sub/")
    } else {
        (dir.path().to_path_buf(), b"/")
    };
    let mut names = Vec::with_capacity(files);
    for i in 0..files {
        let name = format!("f{i:07}");
        std::fs::File::create(files_dir.join(&name)).map_err(|e| format!("create {name}: {e}"))?;
        names.push(CString::new(name).expect("no NUL"));
    }
    Ok(Tree {
        dir,
        files_dir,
        prefix,
        names,
    })
}

impl Tree {
    /// The files as vfscale's absolute paths, in name order.
    fn vfscale_paths(&self) -> Vec<Vec<u8>> {
        self.names
            .iter()
            .map(|n| [self.prefix, n.as_bytes()].concat())
            .collect()
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Drops the host's page, dentry and inode caches (root only).
fn drop_host_caches() -> Result<(), String> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3").map_err(|e| format!("drop_caches: {e}"))
}

/// The order of the hot passes: a permutation of `0..n` drawn by a fixed
/// xorshift generator (Fisher-Yates), so every run, target and thread
/// count visits the files in the same order.
pub fn shuffled_order(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// One parallel pass: from the first worker's start to the last one's end,
/// and each thread's CPU time.
struct PassTime {
    wall: f64,
    cpu: Vec<f64>,
}

/// Runs `per_thread(tid)` on `threads` threads from one barrier.
///
/// The workers time themselves: the coordinating thread is one more thread
/// than there are CPUs at the top thread count, and after the barrier it
/// may wait a scheduler slice for a CPU, so a clock it started would miss
/// the pass's first milliseconds (session 13: at 2 threads on 2 vCPUs a
/// 7 ms pass read 2.75 threads' worth of CPU time per wall second).
fn parallel(
    threads: usize,
    per_thread: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<PassTime, String> {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|tid| {
                let (start, f) = (&start, &per_thread);
                s.spawn(move || {
                    start.wait();
                    let (t0, c0) = (Instant::now(), thread_cpu_secs());
                    f(tid)?;
                    Ok::<_, String>((t0, Instant::now(), thread_cpu_secs() - c0))
                })
            })
            .collect();
        let mut spans = Vec::with_capacity(threads);
        for h in hs {
            spans.push(h.join().map_err(|_| "a worker panicked".to_string())??);
        }
        Ok(pass_time(&spans))
    })
}

/// The pass's wall time and CPU times from each worker's (start, end, CPU
/// seconds).
fn pass_time(spans: &[(Instant, Instant, f64)]) -> PassTime {
    let first = spans.iter().map(|s| s.0).min();
    let last = spans.iter().map(|s| s.1).max();
    PassTime {
        wall: match (first, last) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        },
        cpu: spans.iter().map(|s| s.2).collect(),
    }
}

fn kernel_pass(
    dirfd: &OwnedFd,
    names: &[CString],
    order: impl Iterator<Item = usize>,
) -> Result<(), String> {
    for i in order {
        let name = &names[i];
        // SAFETY: zeroed stat is a valid output buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstatat writes only `st`; `name` is NUL-terminated.
        let r = unsafe {
            libc::fstatat(
                dirfd.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(format!("kernel stat {name:?} failed"));
        }
    }
    Ok(())
}

fn vfscale_pass(
    vfs: &Vfs,
    paths: &[Vec<u8>],
    order: impl Iterator<Item = usize>,
) -> Result<(), String> {
    let p = vfs.root_process();
    for i in order {
        let path = &paths[i];
        match p.stat(path) {
            Ok(st) if st.mode & vfscale::abi::S_IFMT == vfscale::abi::S_IFREG && st.size == 0 => {}
            other => {
                return Err(format!(
                    "vfscale stat {}: {other:?}",
                    String::from_utf8_lossy(path)
                ))
            }
        }
    }
    Ok(())
}

/// Thread `tid` of `threads`: positions tid, tid + threads, ... of `order`.
fn share(order: &[usize], tid: usize, threads: usize) -> impl Iterator<Item = usize> + '_ {
    order.iter().skip(tid).step_by(threads).copied()
}

/// One measurement of a point: stats per second of wall time, and per
/// CPU second of one thread (the mean over the threads).
#[derive(Clone, Copy, Debug)]
struct Rate {
    wall: f64,
    per_cpu_thread: f64,
}

/// Full passes for at least `duration` (at least one).
fn timed_passes(
    files: usize,
    threads: usize,
    duration: Duration,
    pass: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<Rate, String> {
    let (mut wall, mut cpu, mut passes) = (0.0, 0.0, 0u64);
    while wall < duration.as_secs_f64() || passes == 0 {
        let t = parallel(threads, &pass)?;
        wall += t.wall;
        cpu += t.cpu.iter().sum::<f64>();
        passes += 1;
    }
    let stats = files as f64 * passes as f64;
    Ok(Rate {
        wall: stats / wall,
        // Each thread did stats / threads in its share of `cpu`.
        per_cpu_thread: stats / cpu.max(f64::MIN_POSITIVE),
    })
}

/// The samples of one (target, threads, phase) point.
#[derive(Default)]
struct Point {
    samples: Vec<Rate>,
}

impl Point {
    fn sorted_wall(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.samples.iter().map(|r| r.wall).collect();
        v.sort_by(f64::total_cmp);
        v
    }
    /// The median sample's wall rate (the lower middle of an even count).
    fn median(&self) -> f64 {
        let v = self.sorted_wall();
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    }
    fn median_per_cpu_thread(&self) -> f64 {
        let mut v: Vec<f64> = self.samples.iter().map(|r| r.per_cpu_thread).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    }
    fn min(&self) -> f64 {
        self.sorted_wall().first().copied().unwrap_or(0.0)
    }
    fn max(&self) -> f64 {
        self.sorted_wall().last().copied().unwrap_or(0.0)
    }
    fn json(&self, target: &str, threads: usize, phase: &str, files: usize) -> Value {
        json!({
            "workload": "cold-lookup", "target": target, "threads": threads,
            "params": {"phase": phase, "files": files},
            "ops_per_sec": self.median(),
            "ops_per_sec_min": self.min(), "ops_per_sec_max": self.max(),
            "ops_per_thread_cpu_sec": self.median_per_cpu_thread(),
            "runs": self.samples.len(),
        })
    }
}

/// The points of one thread count.
#[derive(Default)]
struct ThreadPoints {
    kernel_cold: Point,
    vfscale_cold: Point,
    kernel_hot: Point,
    vfscale_hot: Point,
}

/// dirents per second of full listings, over at least `duration`.
fn readdir_rate(
    duration: Duration,
    mut pass: impl FnMut() -> Result<u64, String>,
) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut entries = 0;
    while t0.elapsed() < duration || entries == 0 {
        entries += pass()?;
    }
    Ok(entries as f64 / t0.elapsed().as_secs_f64())
}

fn kernel_readdir(dir: &Path, expect: usize) -> Result<u64, String> {
    let n = std::fs::read_dir(dir).map_err(|e| e.to_string())?.count();
    if n != expect {
        return Err(format!("kernel readdir listed {n}, expected {expect}"));
    }
    Ok(n as u64)
}

fn vfscale_readdir(vfs: &Vfs, dir: &[u8], expect: usize) -> Result<u64, String> {
    let p = vfs.root_process();
    let n = p.read_dir(dir).map_err(|e| format!("{e:?}"))?.len() - 2;
    if n != expect {
        return Err(format!("vfscale readdir listed {n}, expected {expect}"));
    }
    Ok(n as u64)
}

/// A passthrough instance over `tree` with the bench's settings: TTL 1 h
/// and an unused-dentry bound that holds the working set (passthrough
/// entries are an unpinned cache, like the kernel's dcache; a smaller
/// bound makes hot passes re-read evicted entries from the host).
fn passthrough(tree: &Tree, files: usize) -> Result<Vfs, String> {
    let config = VfsConfig {
        max_unused_dentries: (2 * files).max(VfsConfig::default().max_unused_dentries),
        ..VfsConfig::default()
    };
    Vfs::with_passthrough_root(
        config,
        tree.dir.path(),
        PassthroughConfig {
            ttl: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .map_err(|e| format!("passthrough over {}: {e:?}", tree.dir.path().display()))
}

/// What the host looked like during the run (the hot rows depend on it).
fn host_state() -> Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|e| format!("unreadable: {e}"))
    };
    json!({
        "loadavg": read("/proc/loadavg"),
        "transparent_hugepage": read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "line_transfer_ns": crate::sys::line_transfer_ns(300_000),
    })
}

pub fn main(args: &ColdLookupArgs) -> Result<(), String> {
    let files = args
        .files
        .unwrap_or(if args.quick { 2_000 } else { 100_000 });
    let duration = args
        .duration
        .unwrap_or(Duration::from_millis(if args.quick { 100 } else { 1000 }));
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
    if repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let threads = if args.threads.is_empty() {
        vec![1, 2]
    } else {
        args.threads.clone()
    };
    if threads.contains(&0) {
        return Err("--threads: a thread count must be at least 1".into());
    }
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = is_root() && !args.no_drop_caches;
    let cold_how = if root {
        "host caches dropped before each cold pass"
    } else {
        "a fresh directory per cold pass (host caches not dropped: not root, or --no-drop-caches)"
    };
    let subdir = args.subdir;
    let host_before = host_state();
    println!(
        "cold-lookup: {files} files in {}{} ({cold_how}); {repeat} run(s) per point; hot order {:?}; load {}; THP {}; line transfer {:.1} ns",
        parent.display(),
        if subdir {
            ", in a subdirectory of the mirrored root"
        } else {
            ""
        },
        args.hot_order,
        host_before["loadavg"].as_str().unwrap_or(""),
        host_before["transparent_hugepage"].as_str().unwrap_or(""),
        host_before["line_transfer_ns"].as_f64().unwrap_or(f64::NAN),
    );
    let mut points: Vec<ThreadPoints> = threads.iter().map(|_| ThreadPoints::default()).collect();
    let mut tree = make_tree(&parent, files, subdir)?;
    let name_order: Vec<usize> = (0..files).collect();
    // Cold: every point `repeat` times, each pass on caches dropped just
    // before it (or a fresh tree) and a fresh passthrough instance.
    let mut vfs: Option<Vfs> = None;
    let mut paths = tree.vfscale_paths();
    for _ in 0..repeat {
        for (&t, point) in threads.iter().zip(points.iter_mut()) {
            if root {
                drop_host_caches()?;
            } else {
                tree = make_tree(&parent, files, subdir)?;
                paths = tree.vfscale_paths();
            }
            let dirfd = open_dir(&tree.files_dir)?;
            let names = &tree.names;
            let k = timed_passes(files, t, Duration::ZERO, |tid| {
                kernel_pass(&dirfd, names, share(&name_order, tid, t))
            })?;
            point.kernel_cold.samples.push(k);
            // The previous instance goes first: its memory, and a host fd
            // of the old tree, are not part of this point.
            drop(vfs.take());
            if root {
                drop_host_caches()?;
            } else {
                tree = make_tree(&parent, files, subdir)?;
                paths = tree.vfscale_paths();
            }
            let v = passthrough(&tree, files)?;
            let paths = &paths;
            let r = timed_passes(files, t, Duration::ZERO, |tid| {
                vfscale_pass(&v, paths, share(&name_order, tid, t))
            })?;
            point.vfscale_cold.samples.push(r);
            vfs = Some(v);
        }
    }
    let vfs = vfs.ok_or("no cold pass ran")?;
    // Hot: the last cold pass's instance and tree, a warm-up pass of each
    // target, then the samples in rounds over every point.
    let hot_order = match args.hot_order {
        HotOrder::Shuffled => shuffled_order(files),
        HotOrder::Name => name_order.clone(),
    };
    // The callers' names, copied in the pass's order: allocated one after
    // the other, so a pass reads them sequentially (a client's path is in
    // its cache; the bench's name list is not the filesystem's working
    // set), for both targets alike.
    let names: Vec<CString> = hot_order.iter().map(|&i| tree.names[i].clone()).collect();
    let paths: Vec<Vec<u8>> = hot_order.iter().map(|&i| paths[i].clone()).collect();
    let (names, paths) = (&names, &paths);
    // The lists are in the hot order now: passes walk them front to back.
    let list_order = &name_order;
    let dirfd = open_dir(&tree.files_dir)?;
    let max_t = threads.iter().copied().max().unwrap_or(1);
    parallel(max_t, |tid| {
        kernel_pass(&dirfd, names, share(list_order, tid, max_t))
    })?;
    parallel(max_t, |tid| {
        vfscale_pass(&vfs, paths, share(list_order, tid, max_t))
    })?;
    for _ in 0..repeat {
        for (&t, point) in threads.iter().zip(points.iter_mut()) {
            let k = timed_passes(files, t, duration, |tid| {
                kernel_pass(&dirfd, names, share(list_order, tid, t))
            })?;
            point.kernel_hot.samples.push(k);
            let v = timed_passes(files, t, duration, |tid| {
                vfscale_pass(&vfs, paths, share(list_order, tid, t))
            })?;
            point.vfscale_hot.samples.push(v);
        }
    }
    let mut rows = Vec::new();
    let mut samples = Vec::new();
    for (&t, p) in threads.iter().zip(&points) {
        let (kc, vc) = (p.kernel_cold.median(), p.vfscale_cold.median());
        let (kh, vh) = (p.kernel_hot.median(), p.vfscale_hot.median());
        println!(
            "threads {t}: stat/s kernel cold {kc:.0} hot {kh:.0}; vfscale cold {vc:.0} hot {vh:.0} ({:.0}–{:.0}); cold ratio {:.2}, hot ratio {:.2}",
            p.vfscale_hot.min(),
            p.vfscale_hot.max(),
            vc / kc,
            vh / kh
        );
        rows.push(json!({
            "threads": t, "files": files,
            "kernel_cold": kc, "kernel_hot": kh,
            "vfscale_cold": vc, "vfscale_hot": vh,
            "cold_ratio": vc / kc, "hot_ratio": vh / kh,
        }));
        samples.push(p.kernel_cold.json("kernel", t, "cold", files));
        samples.push(p.vfscale_cold.json("vfscale", t, "cold", files));
        samples.push(p.kernel_hot.json("kernel", t, "hot", files));
        samples.push(p.vfscale_hot.json("vfscale", t, "hot", files));
    }
    // Listings of the same directory, single thread.
    let kr = readdir_rate(duration, || kernel_readdir(&tree.files_dir, files))?;
    let vdir: &[u8] = if subdir { b"/sub" } else { b"/" };
    let vr = readdir_rate(duration, || vfscale_readdir(&vfs, vdir, files))?;
    println!(
        "readdir (passthrough backend): dirents/s kernel {kr:.0}, vfscale {vr:.0}, ratio {:.2}",
        vr / kr
    );
    rows.push(json!({"readdir": true, "files": files, "kernel": kr, "vfscale": vr}));
    let one = threads.iter().position(|&t| t == 1);
    let two = threads.iter().position(|&t| t == 2);
    if let (Some(i1), Some(i2)) = (one, two) {
        let (h1, h2) = (&points[i1].vfscale_hot, &points[i2].vfscale_hot);
        println!(
            "vfscale hot 2-thread efficiency {:.2} (per thread CPU second: {:.2})",
            h2.median() / (2.0 * h1.median()),
            h2.median_per_cpu_thread() / h1.median_per_cpu_thread()
        );
    }
    let host_after = host_state();
    println!(
        "load after: {}; line transfer {:.1} ns",
        host_after["loadavg"].as_str().unwrap_or(""),
        host_after["line_transfer_ns"].as_f64().unwrap_or(f64::NAN),
    );
    if let Some(path) = &args.json {
        let out = json!({
            "workload": "cold-lookup", "cold": cold_how, "subdir": subdir,
            "repeat": repeat,
            "hot_order": match args.hot_order {
                HotOrder::Shuffled => "shuffled (fixed seed)",
                HotOrder::Name => "name",
            },
            "host_before": host_before, "host_after": host_after,
            "rows": rows, "samples": samples,
        });
        std::fs::write(path, serde_json::to_string_pretty(&out).expect("json"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn open_dir(p: &Path) -> Result<OwnedFd, String> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: NUL-terminated path; the fd is ours.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(format!(
            "open {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffled_order_is_a_fixed_permutation() {
        let a = shuffled_order(1000);
        assert_eq!(a, shuffled_order(1000), "the same order every run");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        let in_place = a.iter().enumerate().filter(|&(i, &x)| i == x).count();
        assert!(in_place < 20, "{in_place} of 1000 files kept their place");
        assert!(shuffled_order(0).is_empty() && shuffled_order(1) == [0]);
    }

    #[test]
    fn a_point_reports_the_median_sample_and_the_range() {
        let rate = |wall: f64| Rate {
            wall,
            per_cpu_thread: wall * 2.0,
        };
        let p = Point {
            samples: [5.0, 1.0, 9.0, 3.0, 7.0].map(rate).to_vec(),
        };
        assert_eq!((p.min(), p.median(), p.max()), (1.0, 5.0, 9.0));
        assert_eq!(p.median_per_cpu_thread(), 10.0);
        let even = Point {
            samples: [4.0, 2.0].map(rate).to_vec(),
        };
        assert_eq!(even.median(), 2.0, "the lower middle of an even count");
    }

    #[test]
    fn a_pass_spans_the_first_start_to_the_last_end() {
        let t = Instant::now();
        let at = |ms: u64| t + Duration::from_millis(ms);
        let p = pass_time(&[(at(3), at(10), 0.007), (at(1), at(8), 0.006)]);
        assert!((p.wall - 0.009).abs() < 1e-9, "wall {}", p.wall);
        assert_eq!(p.cpu, vec![0.007, 0.006]);
        assert_eq!(pass_time(&[]).wall, 0.0);
    }

    #[test]
    fn thread_shares_cover_the_order_once() {
        let order = shuffled_order(11);
        let mut seen: Vec<usize> = (0..3).flat_map(|t| share(&order, t, 3)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..11).collect::<Vec<_>>());
    }
}
