//! Runs `vfscale bench --quick` (scaled down: 10 ms points, 2,000
//! readdir-large entries, so a debug build finishes in seconds) with
//! `--json` and `--report`, and checks what other tools read: every
//! workload × target is measured or explicitly marked unsupported, every
//! number is positive and finite, and the report bundle is complete.

use serde_json::Value;
use std::process::Command;

const ENTRIES: u64 = 2000;

fn num(row: &Value, key: &str) -> f64 {
    row[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {row}"))
}

#[test]
fn quick_suite_produces_complete_results() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let report = dir.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args(["bench", "--quick", "--duration", "10ms", "--entries"])
        .arg(ENTRIES.to_string())
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["version"], 1);
    let m = &v["machine"];
    assert!(m["cpus"].as_u64().unwrap() >= 1);
    for k in ["cpu_model", "kernel", "git_rev"] {
        assert!(!m[k].as_str().unwrap().is_empty(), "machine.{k}");
    }
    assert!(
        v["failed"].as_array().unwrap().is_empty(),
        "{}",
        v["failed"]
    );

    let rows = v["results"].as_array().unwrap();
    let unsupported = v["unsupported"].as_array().unwrap();
    let threads: Vec<u64> = v["config"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(threads[0], 1);
    let workloads = v["config"]["workloads"].as_array().unwrap();
    let targets = v["config"]["targets"].as_array().unwrap();
    assert_eq!(workloads.len(), 11, "the quick suite runs every workload");
    assert!(targets.len() >= 2);

    for w in workloads {
        for t in targets {
            let mine: Vec<&Value> = rows
                .iter()
                .filter(|r| r["workload"] == *w && r["target"] == *t)
                .collect();
            let na = unsupported
                .iter()
                .find(|n| n["workload"] == *w && n["target"] == *t);
            match (mine.is_empty(), na) {
                (true, Some(n)) => {
                    assert!(!n["reason"].as_str().unwrap().is_empty());
                    assert!(stdout.contains("n/a: "), "the table says n/a");
                    continue;
                }
                (false, None) => {}
                _ => panic!("{w} × {t}: rows {} and n/a {na:?}", mine.len()),
            }
            for r in &mine {
                for k in [
                    "secs",
                    "ops_per_sec",
                    "ns_per_op",
                    "efficiency",
                    "ops_per_sec_min",
                    "ops_per_sec_max",
                ] {
                    let x = num(r, k);
                    assert!(x.is_finite() && x > 0.0, "{w} × {t}: {k} = {x}");
                }
                assert!(r["ops"].as_u64().unwrap() > 0);
                assert!(num(r, "ops_per_sec_min") <= num(r, "ops_per_sec"));
                assert!(num(r, "ops_per_sec") <= num(r, "ops_per_sec_max"));
            }
            let phase = |r: &&Value| r["params"]["phase"].as_str().map(str::to_string);
            match w.as_str().unwrap() {
                "readdir-large" => {
                    for p in ["create", "readdir", "unlink"] {
                        let n = mine
                            .iter()
                            .filter(|r| phase(r).as_deref() == Some(p))
                            .count();
                        let want = if p == "readdir" { threads.len() } else { 1 };
                        assert_eq!(n, want, "{t}: {p} rows");
                    }
                    for r in &mine {
                        assert_eq!(r["params"]["entries"], ENTRIES);
                    }
                    if t == "vfscale" {
                        let c = mine
                            .iter()
                            .find(|r| phase(r).as_deref() == Some("create"))
                            .unwrap();
                        let b = c["params"]["bytes_per_file"].as_f64().unwrap();
                        assert!(b.is_finite() && b >= 0.0);
                    }
                }
                "anon-churn" => {
                    for kind in ["socket", "pipe", "eventfd", "memfd"] {
                        let got: Vec<u64> = mine
                            .iter()
                            .filter(|r| r["params"]["kind"] == kind)
                            .map(|r| r["threads"].as_u64().unwrap())
                            .collect();
                        assert_eq!(got, threads, "{t}: anon-churn {kind} rows");
                    }
                }
                "fd-implosion" => {
                    // One process with the total, and 2 processes.
                    let phases: &[&str] = if t == "vfscale" {
                        &["deferral-on", "deferral-off"]
                    } else {
                        &["kernel"]
                    };
                    assert_eq!(mine.len(), 2 * phases.len(), "{t}: fd-implosion rows");
                    for ph in phases {
                        let rows: Vec<&&Value> = mine
                            .iter()
                            .filter(|r| phase(r).as_deref() == Some(*ph))
                            .collect();
                        let procs: Vec<u64> = rows
                            .iter()
                            .map(|r| r["threads"].as_u64().unwrap())
                            .collect();
                        assert_eq!(procs, [1, 2], "{t} {ph}");
                        let k = rows[1]["params"]["objects_per_proc"].as_u64().unwrap();
                        assert_eq!(rows[1]["ops"].as_u64().unwrap(), 2 * k);
                        if rows[1]["params"]["capped_by"].is_null() {
                            assert_eq!(k, ENTRIES / 5, "K is --entries / 5");
                        }
                        let ratio = rows[1]["params"]["secs_vs_one_proc"].as_f64().unwrap();
                        assert!(ratio.is_finite() && ratio > 0.0);
                    }
                }
                "reclaim-groups" => {
                    let naive = if t == "vfscale" { 2 } else { 1 };
                    assert_eq!(mine.len(), naive * 2 * 5, "{t}: 2 sizes x 5 passes");
                    for g in [100, 400] {
                        for pass in 1..=5 {
                            let p = format!("G={g} pass {pass}");
                            assert!(
                                mine.iter().any(|r| phase(r).as_deref() == Some(&p)),
                                "{t}: {p}"
                            );
                        }
                    }
                    let big = mine
                        .iter()
                        .find(|r| phase(r).as_deref() == Some("G=400 pass 3"))
                        .unwrap();
                    let ratio = big["params"]["ratio_vs_g100"].as_f64().unwrap();
                    assert!(ratio.is_finite() && ratio > 0.0);
                }
                "lockref-recovery" => {
                    assert_eq!(mine.len(), 1);
                    let p = &mine[0]["params"];
                    let min = p["min_interval_ratio"].as_f64().unwrap();
                    assert!(min.is_finite() && min > 0.0);
                    let iv = p["intervals"].as_array().unwrap();
                    assert!(!iv.is_empty() && iv.len() <= 10, "{iv:?}");
                    assert!(p["disturber_ops_per_sec"].as_f64().unwrap() > 0.0);
                }
                _ => {
                    let got: Vec<u64> = mine
                        .iter()
                        .map(|r| r["threads"].as_u64().unwrap())
                        .collect();
                    assert_eq!(got, threads, "{w} × {t}");
                }
            }
        }
    }

    // The reference model and the peers cannot run anon-churn, and say why.
    for n in unsupported.iter().filter(|n| n["workload"] == "anon-churn") {
        assert!(n["reason"].as_str().unwrap().len() > 10, "{n}");
    }
    // vfscale and the kernel express every workload here, except that the
    // kernel's reclaim-groups needs root and cgroup v1 memory, and says so.
    for t in ["vfscale", "kernel"] {
        assert!(
            !unsupported.iter().any(|n| n["target"] == t
                && !(t == "kernel"
                    && n["workload"] == "reclaim-groups"
                    && n["reason"].as_str().unwrap().contains("cannot run"))),
            "{t} is never n/a"
        );
    }

    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("CPU:") && md.contains("vfscale revision:"));
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(again["results"], v["results"]);
    for w in workloads {
        let w = w.as_str().unwrap();
        assert!(md.contains(&format!("## {w}")));
        for ext in ["svg", "png"] {
            let p = report.join(format!("{w}.{ext}"));
            assert!(
                std::fs::metadata(&p).unwrap().len() > 1000,
                "{}",
                p.display()
            );
        }
    }
}

#[test]
fn unknown_names_are_usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args(["bench", "no-such-workload"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload"));
}

#[test]
fn cold_lookup_quick_runs_and_reports() {
    // A tiny cold-lookup: both targets stat every file, every rate is
    // positive and finite. Never drops the host's caches (shared machines).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cold.json");
    let out = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args([
            "cold-lookup",
            "--quick",
            "--no-drop-caches",
            "--files",
            "300",
        ])
        .args(["--duration", "10ms", "--threads", "1,2", "--repeat", "2"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cold-lookup failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["workload"], "cold-lookup");
    let rows = v["rows"].as_array().unwrap();
    let stat_rows: Vec<&Value> = rows.iter().filter(|r| r.get("threads").is_some()).collect();
    assert_eq!(stat_rows.len(), 2, "{rows:?}");
    for r in stat_rows {
        assert_eq!(r["files"], 300);
        for k in ["kernel_cold", "kernel_hot", "vfscale_cold", "vfscale_hot"] {
            let x = num(r, k);
            assert!(x.is_finite() && x > 0.0, "{k} = {x}");
        }
    }
    let readdir = rows.iter().find(|r| r.get("readdir").is_some()).unwrap();
    assert!(num(readdir, "vfscale") > 0.0 && num(readdir, "kernel") > 0.0);
    // One sample entry per (target, threads, phase), suite-shaped: the
    // median of --repeat runs within their range.
    let samples = v["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2 * 2 * 2, "{samples:?}");
    for target in ["kernel", "vfscale"] {
        for threads in [1, 2] {
            for phase in ["cold", "hot"] {
                let s = samples
                    .iter()
                    .find(|s| {
                        s["target"] == target
                            && s["threads"] == threads
                            && s["params"]["phase"] == phase
                    })
                    .unwrap_or_else(|| panic!("no {target} {threads} {phase} in {samples:?}"));
                assert_eq!(s["params"]["files"], 300);
                assert_eq!(s["runs"], 2);
                let (lo, mid, hi) = (
                    num(s, "ops_per_sec_min"),
                    num(s, "ops_per_sec"),
                    num(s, "ops_per_sec_max"),
                );
                assert!(lo > 0.0 && lo <= mid && mid <= hi, "{s:?}");
            }
        }
    }
    assert_eq!(v["hot_order"], "shuffled (fixed seed)");
}

#[test]
fn readdir_large_runs_on_the_passthrough_backend() {
    // `--backend passthrough`: the vfscale target's root mirrors a fresh
    // host directory, so readdir-large creates, lists and removes host
    // files through vfscale; the JSON records the backend.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("pt.json");
    let out = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args([
            "bench",
            "readdir-large",
            "--targets",
            "vfscale",
            "--backend",
            "passthrough",
        ])
        .args([
            "--quick",
            "--duration",
            "10ms",
            "--entries",
            "500",
            "--threads",
            "1",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bench failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["config"]["backend"], "passthrough");
    assert!(
        v["failed"].as_array().unwrap().is_empty(),
        "{}",
        v["failed"]
    );
    let rows = v["results"].as_array().unwrap();
    for phase in ["create", "readdir", "unlink"] {
        let row = rows
            .iter()
            .find(|r| r["params"]["phase"] == phase)
            .unwrap_or_else(|| panic!("no {phase} row: {rows:?}"));
        assert!(num(row, "ops_per_sec") > 0.0, "{phase}");
    }
    // An unknown backend is a clear error.
    let bad = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args(["bench", "--backend", "ext4", "--quick"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown backend"));
}
