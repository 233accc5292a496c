//! The results of a run as other tools read them (results.json, version 1),
//! and how repeated runs become rows: the median run of each point, with
//! the range of all runs, then scaling efficiency against 1 thread.
//!
//! Definitions:
//! - ops_per_sec = ops / secs, all threads together;
//! - ns_per_op = secs × threads × 1e9 / ops: the average time one thread
//!   spends on one operation (the latency it sees);
//! - efficiency = ops_per_sec at N threads / (N × ops_per_sec at 1 thread)
//!   of the same workload, target and phase (null without a 1-thread row).

use crate::sys::Machine;
use crate::workload::{Params, Sample};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const VERSION: u32 = 1;

/// One measured point (the median of its repeats).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub workload: String,
    pub target: String,
    pub threads: usize,
    pub ops: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    pub ns_per_op: f64,
    pub efficiency: Option<f64>,
    pub ops_per_sec_min: f64,
    pub ops_per_sec_max: f64,
    /// How many runs the row summarises.
    pub runs: usize,
    pub params: Params,
}

impl Row {
    /// The phase of a multi-phase workload ("" otherwise).
    pub fn phase(&self) -> &str {
        self.params
            .get("phase")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn param_f64(&self, key: &str) -> Option<f64> {
        self.params.get(key).and_then(Value::as_f64)
    }
}

/// A workload a target could not run, and why ("n/a").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NotRun {
    pub workload: String,
    pub target: String,
    pub reason: String,
}

/// A workload that failed on a target (nothing of it is in `results`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Failed {
    pub workload: String,
    pub target: String,
    pub error: String,
}

/// How the run was configured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunConfig {
    pub workloads: Vec<String>,
    pub targets: Vec<String>,
    pub threads: Vec<usize>,
    pub duration_secs: f64,
    pub warmup_secs: f64,
    pub repeat: usize,
    pub entries: usize,
    /// The `vfscale` target's root filesystem ("tmpfs" in files written
    /// before the field existed).
    #[serde(default = "tmpfs_backend")]
    pub backend: String,
    pub quick: bool,
}

fn tmpfs_backend() -> String {
    "tmpfs".into()
}

/// The whole results file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Results {
    pub version: u32,
    pub machine: Machine,
    pub config: RunConfig,
    pub results: Vec<Row>,
    #[serde(default)]
    pub unsupported: Vec<NotRun>,
    #[serde(default)]
    pub failed: Vec<Failed>,
}

impl Results {
    pub fn rows_of<'a>(&'a self, workload: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.results.iter().filter(move |r| r.workload == workload)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialise")
    }
}

fn phase_of(p: &Params) -> &str {
    p.get("phase").and_then(Value::as_str).unwrap_or("")
}

/// Turns the samples of `runs` repeated runs of one workload on one target
/// into rows: for each point (threads, phase), the run with the median
/// ops/s (the lower middle one for an even count), with the minimum and
/// maximum over all runs. Efficiency is left to
/// `fill_efficiency`.
pub fn aggregate(workload: &str, target: &str, runs: &[Vec<Sample>]) -> Vec<Row> {
    let mut keys: Vec<(usize, String)> = Vec::new();
    for s in runs.iter().flatten() {
        let k = (s.threads, phase_of(&s.params).to_string());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(threads, phase)| {
            let mut same: Vec<&Sample> = runs
                .iter()
                .flatten()
                .filter(|s| s.threads == threads && phase_of(&s.params) == phase)
                .collect();
            let rate = |s: &Sample| s.ops as f64 / s.secs;
            same.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
            let med = same[(same.len() - 1) / 2];
            Row {
                workload: workload.to_string(),
                target: target.to_string(),
                threads,
                ops: med.ops,
                secs: med.secs,
                ops_per_sec: rate(med),
                ns_per_op: med.secs * threads as f64 * 1e9 / med.ops as f64,
                efficiency: None,
                ops_per_sec_min: rate(same[0]),
                ops_per_sec_max: rate(same[same.len() - 1]),
                runs: same.len(),
                params: med.params.clone(),
            }
        })
        .collect()
}

/// Sets every row's efficiency from the 1-thread row of the same workload,
/// target and phase.
pub fn fill_efficiency(rows: &mut [Row]) {
    let base: Vec<(String, String, String, f64)> = rows
        .iter()
        .filter(|r| r.threads == 1)
        .map(|r| {
            (
                r.workload.clone(),
                r.target.clone(),
                r.phase().to_string(),
                r.ops_per_sec,
            )
        })
        .collect();
    for r in rows.iter_mut() {
        r.efficiency = base
            .iter()
            .find(|(w, t, p, _)| *w == r.workload && *t == r.target && p == r.phase())
            .map(|(_, _, _, one)| r.ops_per_sec / (r.threads as f64 * one));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    fn s(threads: usize, ops: u64, phase: &str) -> Sample {
        Sample {
            threads,
            ops,
            secs: 1.0,
            params: if phase.is_empty() {
                params! {}
            } else {
                params! {"phase" => phase}
            },
        }
    }

    #[test]
    fn median_run_with_range_and_efficiency() {
        let runs = vec![
            vec![s(1, 100, ""), s(2, 150, "")],
            vec![s(1, 300, ""), s(2, 190, "")],
            vec![s(1, 200, ""), s(2, 170, "")],
        ];
        let mut rows = aggregate("w", "t", &runs);
        fill_efficiency(&mut rows);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].ops_per_sec, 200.0);
        assert_eq!(
            (rows[0].ops_per_sec_min, rows[0].ops_per_sec_max),
            (100.0, 300.0)
        );
        assert_eq!(rows[0].runs, 3);
        assert_eq!(rows[0].efficiency, Some(1.0));
        assert_eq!(rows[1].ops_per_sec, 170.0);
        assert_eq!(rows[1].efficiency, Some(170.0 / 400.0));
        // 2 threads, 170 ops in 1 s: each op takes a thread 2/170 s.
        assert!((rows[1].ns_per_op - 2e9 / 170.0).abs() < 1e-3);
    }

    #[test]
    fn phases_are_separate_points() {
        let runs = vec![vec![
            s(1, 10, "create"),
            s(1, 50, "readdir"),
            s(2, 80, "readdir"),
        ]];
        let mut rows = aggregate("w", "t", &runs);
        fill_efficiency(&mut rows);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2].phase(), "readdir");
        assert_eq!(rows[2].efficiency, Some(0.8));
        assert_eq!(rows[0].efficiency, Some(1.0));
    }
}
