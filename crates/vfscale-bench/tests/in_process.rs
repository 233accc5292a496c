//! The suite run in-process through the CLI arguments, with `--repeat`:
//! rows are the median of the runs with their range, the JSON file is what
//! `Results` serialises, and a workload a target cannot express is n/a.

use clap::Parser;
use vfscale_bench::{cli, BenchArgs, Results};

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: BenchArgs,
}

/// A peer as the third target when compiled in.
#[cfg(feature = "peers")]
const TARGETS: (&str, &[&str]) = (
    "vfscale,kernel,vfs-memoryfs",
    &["vfscale", "kernel", "vfs-memoryfs"],
);
#[cfg(not(feature = "peers"))]
const TARGETS: (&str, &[&str]) = ("vfscale,kernel", &["vfscale", "kernel"]);

#[test]
fn repeated_quick_run_reports_medians() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args = Cmd::try_parse_from([
        "bench",
        "stat-same",
        "create-unlink",
        "lockref-recovery",
        "--quick",
        // 20 ms, not 5: on the 2-core CI machine a 5 ms window once
        // passed with lockref-recovery's kernel worker never scheduled
        // ("no operation completed", session 48); the test checks the
        // medians and the report, not the rates.
        "--duration",
        "20ms",
        "--repeat",
        "3",
        "--threads",
        "1,2",
        "--targets",
        TARGETS.0,
        "--json",
        json.to_str().unwrap(),
    ])
    .unwrap()
    .args;
    let res = cli::run(&args).unwrap();
    assert!(res.failed.is_empty(), "{:?}", res.failed);
    let text = std::fs::read_to_string(&json).unwrap();
    assert_eq!(text, res.to_json());
    let file: Results = serde_json::from_str(&text).unwrap();
    assert_eq!((file.version, file.results.len()), (1, res.results.len()));

    for w in ["stat-same", "create-unlink"] {
        for &t in TARGETS.1 {
            let rows: Vec<_> = res
                .results
                .iter()
                .filter(|r| r.workload == w && r.target == t)
                .collect();
            assert_eq!(rows.len(), 2, "{w} × {t}");
            for r in rows {
                assert_eq!(r.runs, 3);
                assert!(r.ops_per_sec_min <= r.ops_per_sec && r.ops_per_sec <= r.ops_per_sec_max);
                assert!((r.ops as f64 / r.secs - r.ops_per_sec).abs() < 1e-6 * r.ops_per_sec);
                let e = r.efficiency.unwrap();
                assert!(e.is_finite() && e > 0.0);
            }
        }
    }
    // The peer has no chmod: lockref-recovery is n/a there, not faked.
    #[cfg(feature = "peers")]
    assert!(res
        .unsupported
        .iter()
        .any(|n| n.workload == "lockref-recovery" && n.target == "vfs-memoryfs"));
    #[cfg(feature = "peers")]
    assert!(!res
        .results
        .iter()
        .any(|r| r.workload == "lockref-recovery" && r.target == "vfs-memoryfs"));
}
