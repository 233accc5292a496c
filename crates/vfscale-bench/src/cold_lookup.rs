//! `vfscale cold-lookup` (seed 003): stat every file of a host directory of
//! N files through vfscale's passthrough backend, cold and then hot, against
//! the kernel's own stat of the same files; and full listings of that
//! directory (readdir through passthrough against getdents64 on the host).
//!
//! Cold: as root, `sync` and `echo 3 > /proc/sys/vm/drop_caches` before
//! each cold pass (kernel and vfscale alike), so both read the inodes from
//! disk; otherwise a fresh directory per cold pass (which the kernel still
//! has cached: the "cold" rows then measure vfscale's miss path only — the
//! output says which). Hot: repeated full passes for `--duration`.
//!
//! `--subdir` puts the files one directory below the mirrored root, so each
//! cold lookup is a miss below the root (the common case on a real tree).
//!
//! T threads split the files (thread i stats files i, i+T, ...); rates are
//! stats per second over the whole pass. Every stat is checked (a regular
//! file of size 0); a failure aborts the run.
//!
//! Not part of `vfscale bench`'s suite: its targets are fresh in-memory
//! namespaces, while this needs one host directory shared by the kernel
//! and the passthrough instance, and caches dropped between points.

use serde_json::json;
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
    /// Time spent in hot passes per point (default 1s; 100ms with --quick).
    #[arg(long, value_parser = crate::cli::parse_duration, value_name = "TIME")]
    pub duration: Option<Duration>,
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

/// Runs `per_thread(tid, threads)` on `threads` threads from one barrier;
/// returns the wall time of the slowest.
fn parallel(
    threads: usize,
    per_thread: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<f64, String> {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|tid| {
                let (start, f) = (&start, &per_thread);
                s.spawn(move || {
                    start.wait();
                    f(tid)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        for h in hs {
            h.join().map_err(|_| "a worker panicked".to_string())??;
        }
        Ok(t0.elapsed().as_secs_f64())
    })
}

fn kernel_pass(
    dirfd: &OwnedFd,
    names: &[CString],
    tid: usize,
    threads: usize,
) -> Result<(), String> {
    for name in names.iter().skip(tid).step_by(threads) {
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

fn vfscale_pass(vfs: &Vfs, paths: &[Vec<u8>], tid: usize, threads: usize) -> Result<(), String> {
    let p = vfs.root_process();
    for path in paths.iter().skip(tid).step_by(threads) {
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

/// Hot passes for at least `duration`: stats per second.
fn hot_rate(
    files: usize,
    duration: Duration,
    pass: impl Fn() -> Result<f64, String>,
) -> Result<f64, String> {
    let (mut secs, mut passes) = (0.0, 0u64);
    while secs < duration.as_secs_f64() || passes == 0 {
        secs += pass()?;
        passes += 1;
    }
    Ok(files as f64 * passes as f64 / secs)
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

pub fn main(args: &ColdLookupArgs) -> Result<(), String> {
    let files = args
        .files
        .unwrap_or(if args.quick { 2_000 } else { 100_000 });
    let duration = args
        .duration
        .unwrap_or(Duration::from_millis(if args.quick { 100 } else { 1000 }));
    let threads = if args.threads.is_empty() {
        vec![1, 2]
    } else {
        args.threads.clone()
    };
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = is_root() && !args.no_drop_caches;
    let cold_how = if root {
        "host caches dropped before each cold pass"
    } else {
        "a fresh directory per cold pass (host caches not dropped: not root, or --no-drop-caches)"
    };
    let subdir = args.subdir;
    println!(
        "cold-lookup: {files} files in {}{} ({cold_how})",
        parent.display(),
        if subdir {
            ", in a subdirectory of the mirrored root"
        } else {
            ""
        }
    );
    let mut rows = Vec::new();
    let mut tree = make_tree(&parent, files, subdir)?;
    for &t in &threads {
        // Kernel, cold then hot.
        if root {
            drop_host_caches()?;
        } else {
            tree = make_tree(&parent, files, subdir)?;
        }
        let dirfd = open_dir(&tree.files_dir)?;
        let names = &tree.names;
        let kcold = files as f64 / parallel(t, |tid| kernel_pass(&dirfd, names, tid, t))?;
        let khot = hot_rate(files, duration, || {
            parallel(t, |tid| kernel_pass(&dirfd, names, tid, t))
        })?;
        // vfscale through passthrough, cold then hot.
        if root {
            drop_host_caches()?;
        } else {
            tree = make_tree(&parent, files, subdir)?;
        }
        // The unused-dentry bound must hold the working set (passthrough
        // entries are an unpinned cache, like the kernel's dcache), or hot
        // passes re-read evicted entries from the host.
        let config = VfsConfig {
            max_unused_dentries: (2 * files).max(VfsConfig::default().max_unused_dentries),
            ..VfsConfig::default()
        };
        let vfs = Vfs::with_passthrough_root(
            config,
            tree.dir.path(),
            PassthroughConfig {
                ttl: Duration::from_secs(3600),
                ..Default::default()
            },
        )
        .map_err(|e| format!("passthrough over {}: {e:?}", tree.dir.path().display()))?;
        let paths: Vec<Vec<u8>> = tree
            .names
            .iter()
            .map(|n| [tree.prefix, n.as_bytes()].concat())
            .collect();
        let vcold = files as f64 / parallel(t, |tid| vfscale_pass(&vfs, &paths, tid, t))?;
        let vhot = hot_rate(files, duration, || {
            parallel(t, |tid| vfscale_pass(&vfs, &paths, tid, t))
        })?;
        println!(
            "threads {t}: stat/s kernel cold {kcold:.0} hot {khot:.0}; vfscale cold {vcold:.0} hot {vhot:.0}; cold ratio {:.2}, hot ratio {:.2}",
            vcold / kcold,
            vhot / khot
        );
        rows.push(json!({
            "threads": t, "files": files,
            "kernel_cold": kcold, "kernel_hot": khot,
            "vfscale_cold": vcold, "vfscale_hot": vhot,
            "cold_ratio": vcold / kcold, "hot_ratio": vhot / khot,
        }));
        if t == threads[0] {
            // Listings of the same directory, single thread.
            let kr = readdir_rate(duration, || kernel_readdir(&tree.files_dir, files))?;
            let vdir: &[u8] = if subdir { b"/sub" } else { b"/" };
            let vr = readdir_rate(duration, || vfscale_readdir(&vfs, vdir, files))?;
            println!(
                "readdir (passthrough backend): dirents/s kernel {kr:.0}, vfscale {vr:.0}, ratio {:.2}",
                vr / kr
            );
            rows.push(json!({"readdir": true, "files": files, "kernel": kr, "vfscale": vr}));
        }
    }
    let hot1 = rows
        .iter()
        .find(|r| r["threads"] == 1)
        .map(|r| r["vfscale_hot"].as_f64().unwrap_or(0.0));
    let hot2 = rows
        .iter()
        .find(|r| r["threads"] == 2)
        .map(|r| r["vfscale_hot"].as_f64().unwrap_or(0.0));
    if let (Some(h1), Some(h2)) = (hot1, hot2) {
        println!("vfscale hot 2-thread efficiency {:.2}", h2 / (2.0 * h1));
    }
    if let Some(path) = &args.json {
        let out =
            json!({"workload": "cold-lookup", "cold": cold_how, "subdir": subdir, "rows": rows});
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
