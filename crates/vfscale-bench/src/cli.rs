//! `vfscale bench`: the command-line arguments (a clap `Args` struct the
//! `vfscale` binary embeds as a subcommand) and turning them into a suite
//! run, its tables on stdout, and the `--json` / `--report` files.
//!
//! Default timing, and why the default suite fits in ~3 minutes on 2 cores.
//! A throughput point costs its warm-up plus its duration (plus setup, a few
//! milliseconds). With DEFAULT_DURATION = 1 s and a 0.2 s warm-up:
//! - 6 throughput workloads × 5 targets × 2 thread counts = 60 points
//!   × 1.2 s ≈ 72 s;
//! - lockref-recovery: 2 windows (undisturbed, disturbed) × 3 targets with
//!   chmod × 1.2 s ≈ 7 s;
//! - readdir-large, 1,000,000 entries: create + unlink measured on the
//!   reference 2-core machine at ≈ 5.4 s (vfscale), 14.6 s (kernel tmpfs),
//!   2.1 s and 2.2 s (the peers), plus 2 readdir points × 1.2 s per target:
//!   ≈ 24 s + 12 s + ~5 s for global-lock ≈ 41 s.
//!
//! Total ≈ 120 s, leaving a third of the 3 minutes for a slower host.
//! `--quick` (100 ms points, 100,000 entries) takes ≈ 10 s in release.

use crate::report;
use crate::results::Results;
use crate::suite::{self, Config};
use crate::sys;
use crate::target::TargetId;
use crate::workload::{self, DynWorkload};
use std::path::PathBuf;
use std::time::Duration;

/// Measured time per point by default.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(1);
/// Measured time per point with `--quick`.
pub const QUICK_DURATION: Duration = Duration::from_millis(100);
/// readdir-large entries by default and with `--quick`.
pub const DEFAULT_ENTRIES: usize = 1_000_000;
pub const QUICK_ENTRIES: usize = 100_000;
/// Default thread counts go 1..=min(cores, this).
pub const MAX_DEFAULT_THREADS: usize = 8;

/// Warm-up before each measured window: a fifth of it, at most 200 ms.
pub fn warmup_for(duration: Duration) -> Duration {
    (duration / 5).min(Duration::from_millis(200))
}

/// Run the benchmark suite: seed workloads × targets × thread counts.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Run with --list to see the workloads and targets.")]
pub struct BenchArgs {
    /// Workloads to run (default: all).
    #[arg(value_name = "WORKLOAD")]
    pub workloads: Vec<String>,
    /// Targets to run against, comma-separated (default: all but fuse and
    /// fuse-uring).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub targets: Vec<String>,
    /// Thread counts, comma-separated (default: 1..=cores, at most 8).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub threads: Vec<usize>,
    /// Measured time per point, e.g. 2s, 500ms (default 1s; 100ms with --quick).
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub duration: Option<Duration>,
    /// Runs per point; rows report the median run and the range.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Smoke run: 100ms per point, 100,000 readdir-large entries.
    #[arg(long)]
    pub quick: bool,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write results.json, report.md and SVG/PNG plots into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Host directory for the kernel target (default: a private tmpfs when
    /// root, else a temporary directory).
    #[arg(long, value_name = "PATH")]
    pub kernel_dir: Option<PathBuf>,
    /// Entries readdir-large creates (default 1,000,000; 100,000 with --quick).
    #[arg(long, value_name = "N")]
    pub entries: Option<usize>,
    /// readdir-large over this existing directory instead: no create or
    /// unlink phase, only readdir passes, each checked to list exactly
    /// --entries entries (a host path, for the kernel target only; lets
    /// FUSE filesystems whose creates are slow be populated through their
    /// backing store: scripts/fuse_peers.sh --prepopulated).
    #[arg(long, value_name = "DIR")]
    pub readdir_dir: Option<PathBuf>,
    /// The `vfscale` target's root filesystem: tmpfs (default) or
    /// passthrough (a fresh host directory inside the kernel target's
    /// directory, or the temporary directory without the kernel target).
    #[arg(long, value_name = "BACKEND", default_value = "tmpfs")]
    pub backend: String,
    /// List the workloads and targets, and exit.
    #[arg(long)]
    pub list: bool,
}

/// Parses "2s", "500ms", "1.5s", "250us", "1m" or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (try 2s or 500ms)"))?;
    let secs = match unit.trim() {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "m" | "min" => v * 60.0,
        u => return Err(format!("bad duration unit {u:?} (use ns, us, ms, s or m)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl BenchArgs {
    /// The suite configuration these arguments ask for.
    pub fn config(&self) -> Result<Config, String> {
        let workloads: Vec<&'static dyn DynWorkload> = if self.workloads.is_empty() {
            workload::all().to_vec()
        } else {
            self.workloads
                .iter()
                .map(|n| {
                    workload::by_name(n).ok_or_else(|| {
                        format!("unknown workload {n:?}; known: {}", workload_names())
                    })
                })
                .collect::<Result<_, _>>()?
        };
        let targets: Vec<TargetId> = if self.targets.is_empty() {
            TargetId::DEFAULT.to_vec()
        } else {
            let mut v = Vec::new();
            for n in &self.targets {
                let t = TargetId::from_name(n.trim())
                    .ok_or_else(|| format!("unknown target {n:?}; known: {}", target_names()))?;
                if !v.contains(&t) {
                    v.push(t);
                }
            }
            v
        };
        let mut threads = if self.threads.is_empty() {
            (1..=sys::num_cpus().min(MAX_DEFAULT_THREADS)).collect()
        } else {
            self.threads.clone()
        };
        if threads.contains(&0) {
            return Err("--threads: thread counts start at 1".into());
        }
        threads.sort_unstable();
        threads.dedup();
        if self.repeat == 0 {
            return Err("--repeat must be at least 1".into());
        }
        let duration = self.duration.unwrap_or(if self.quick {
            QUICK_DURATION
        } else {
            DEFAULT_DURATION
        });
        let entries = self.entries.unwrap_or(if self.quick {
            QUICK_ENTRIES
        } else {
            DEFAULT_ENTRIES
        });
        if entries == 0 {
            return Err("--entries must be at least 1".into());
        }
        if let Some(d) = &self.readdir_dir {
            if !d.is_absolute() || !d.is_dir() {
                return Err(format!(
                    "--readdir-dir {}: not an absolute path to a directory",
                    d.display()
                ));
            }
            if targets.iter().any(|t| *t != TargetId::Kernel) {
                return Err("--readdir-dir needs --targets kernel (a host directory)".into());
            }
        }
        Ok(Config {
            workloads,
            targets,
            threads,
            warmup: warmup_for(duration),
            duration,
            repeat: self.repeat,
            entries,
            kernel_dir: self.kernel_dir.clone(),
            readdir_dir: self.readdir_dir.clone(),
            backend: crate::target::Backend::parse(&self.backend)?,
            quick: self.quick,
            progress: true,
        })
    }
}

fn workload_names() -> String {
    workload::all()
        .iter()
        .map(|w| w.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn target_names() -> String {
    TargetId::ALL
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `--list` text.
pub fn listing() -> String {
    let mut s = String::from("workloads:\n");
    for w in workload::all() {
        let ops: Vec<_> = w.needs().iter().map(|o| o.name()).collect();
        s.push_str(&format!(
            "  {:<20} {} [needs {}]\n",
            w.name(),
            w.about(),
            ops.join(", ")
        ));
    }
    s.push_str("targets:\n");
    for t in TargetId::ALL {
        s.push_str(&format!("  {:<20} {}\n", t.name(), t.about()));
    }
    s
}

/// Runs `vfscale bench`: prints a table per workload as it finishes, writes
/// the requested files, and returns the results. Errors are usage or I/O
/// errors; workload failures are in `Results::failed`.
pub fn run(args: &BenchArgs) -> Result<Results, String> {
    let cfg = args.config()?;
    run_config(&cfg, args.json.as_deref(), args.report.as_deref())
}

/// `run` with a ready configuration.
pub fn run_config(
    cfg: &Config,
    json: Option<&std::path::Path>,
    report_dir: Option<&std::path::Path>,
) -> Result<Results, String> {
    let mut print = |res: &Results, w: &str| {
        println!("\n{w}");
        println!("{}", report::table(res, w, false));
    };
    let res = suite::run(cfg, &mut print)?;
    let m = &res.machine;
    println!(
        "\n{} · {} cores · Linux {} · vfscale {} · {}",
        m.cpu_model, m.cpus, m.kernel, m.git_rev, m.date
    );
    if let Some(k) = &m.kernel_dir {
        println!("kernel target: {k}");
    }
    if let Some(p) = m.placement() {
        println!("{p}");
    }
    if let Some(p) = json {
        std::fs::write(p, res.to_json()).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(d) = report_dir {
        report::write_report(&res, d)?;
        println!("report written to {}", d.display());
    }
    Ok(res)
}

/// The whole subcommand: `--list`, or a run; the process exit code (1 when
/// a workload failed or the run could not start).
pub fn main(args: &BenchArgs) -> std::process::ExitCode {
    if args.list {
        print!("{}", listing());
        return std::process::ExitCode::SUCCESS;
    }
    match run(args) {
        Ok(res) if res.failed.is_empty() => std::process::ExitCode::SUCCESS,
        Ok(res) => {
            for f in &res.failed {
                eprintln!("FAILED: {} on {}: {}", f.workload, f.target, f.error);
            }
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("vfscale bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(a: &[&str]) -> BenchArgs {
        T::try_parse_from(std::iter::once("bench").chain(a.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn readdir_dir_needs_an_absolute_directory_and_the_kernel_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        let c = parse(&["--targets", "kernel", "--readdir-dir", dir])
            .config()
            .unwrap();
        assert_eq!(c.readdir_dir.as_deref(), Some(tmp.path()));
        let err = |a: &[&str]| parse(a).config().err().unwrap();
        assert!(err(&["--targets", "kernel,vfscale", "--readdir-dir", dir])
            .contains("--targets kernel"));
        assert!(err(&["--targets", "kernel", "--readdir-dir", "rel/dir"]).contains("absolute path"));
        let missing = tmp.path().join("missing");
        assert!(err(&[
            "--targets",
            "kernel",
            "--readdir-dir",
            missing.to_str().unwrap()
        ])
        .contains("not an absolute path to a directory"));
        assert_eq!(parse(&[]).config().unwrap().readdir_dir, None);
    }

    #[test]
    fn defaults_and_quick() {
        let c = parse(&[]).config().unwrap();
        assert_eq!(c.workloads.len(), workload::all().len());
        assert_eq!(c.targets, TargetId::DEFAULT.to_vec());
        assert!(!c.targets.contains(&TargetId::Fuse), "fuse is opt-in");
        assert!(
            !c.targets.contains(&TargetId::FuseUring),
            "so is fuse-uring"
        );
        assert_eq!(TargetId::from_name("fuse-uring"), Some(TargetId::FuseUring));
        assert_eq!(c.threads[0], 1);
        assert!(c.threads.len() <= MAX_DEFAULT_THREADS);
        assert_eq!(c.duration, DEFAULT_DURATION);
        assert_eq!(c.warmup, Duration::from_millis(200));
        assert_eq!(c.entries, DEFAULT_ENTRIES);
        let q = parse(&["--quick"]).config().unwrap();
        assert_eq!((q.duration, q.entries), (QUICK_DURATION, QUICK_ENTRIES));
        assert_eq!(q.warmup, Duration::from_millis(20));
    }

    #[test]
    fn explicit_selection() {
        let c = parse(&[
            "stat-same",
            "readdir-large",
            "--targets",
            "kernel,vfscale",
            "--threads",
            "4,1,2,2",
            "--duration",
            "3s",
            "--repeat",
            "3",
        ])
        .config()
        .unwrap();
        let names: Vec<_> = c.workloads.iter().map(|w| w.name()).collect();
        assert_eq!(names, ["stat-same", "readdir-large"]);
        assert_eq!(c.targets, [TargetId::Kernel, TargetId::Vfscale]);
        assert_eq!(c.threads, [1, 2, 4]);
        assert_eq!((c.duration, c.repeat), (Duration::from_secs(3), 3));
        assert!(parse(&["nope"]).config().is_err());
        assert!(parse(&["--targets", "ext9"]).config().is_err());
        assert!(parse(&["--threads", "0"]).config().is_err());
        assert!(parse(&["--repeat", "0"]).config().is_err());
    }
}
