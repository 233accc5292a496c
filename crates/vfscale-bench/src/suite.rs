//! Running a suite: every selected workload against every selected target,
//! each (workload, target) pair `repeat` times on fresh target instances,
//! with progress bars on a terminal and a callback after each workload (the
//! CLI prints its table there).

use crate::results::{aggregate, fill_efficiency, Failed, NotRun, Results, RunConfig, VERSION};
use crate::sys::Machine;
use crate::target::{KernelDir, OpError, TargetId};
use crate::workload::{Ctx, DynWorkload};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Clone)]
pub struct Config {
    pub workloads: Vec<&'static dyn DynWorkload>,
    pub targets: Vec<TargetId>,
    /// Ascending, no duplicates.
    pub threads: Vec<usize>,
    pub warmup: Duration,
    pub duration: Duration,
    pub repeat: usize,
    pub entries: usize,
    pub kernel_dir: Option<PathBuf>,
    /// readdir-large lists this existing host directory (no create or
    /// unlink phase): `--readdir-dir`.
    pub readdir_dir: Option<PathBuf>,
    /// The `vfscale` target's root filesystem.
    pub backend: crate::target::Backend,
    pub quick: bool,
    /// Draw progress bars (only ever on a terminal).
    pub progress: bool,
}

/// Runs the suite. `after_workload` sees the results so far and the name of
/// the workload just finished. Errors only when the kernel directory cannot
/// be set up; workload failures are in `Results::failed`.
pub fn run(
    cfg: &Config,
    after_workload: &mut dyn FnMut(&Results, &str),
) -> Result<Results, String> {
    let kernel = if cfg.targets.contains(&TargetId::Kernel) {
        Some(KernelDir::setup(cfg.kernel_dir.as_deref())?)
    } else {
        None
    };
    let mut machine = Machine::detect();
    machine.kernel_dir = kernel.as_ref().map(|k| k.describe().to_string());
    machine.line_transfer_ns_before = crate::sys::line_transfer_ns(PLACEMENT_ROUND_TRIPS);
    let mut res = Results {
        version: VERSION,
        machine,
        config: RunConfig {
            workloads: cfg.workloads.iter().map(|w| w.name().to_string()).collect(),
            targets: cfg.targets.iter().map(|t| t.name().to_string()).collect(),
            threads: cfg.threads.clone(),
            duration_secs: cfg.duration.as_secs_f64(),
            warmup_secs: cfg.warmup.as_secs_f64(),
            repeat: cfg.repeat,
            entries: cfg.entries,
            backend: cfg.backend.name().to_string(),
            quick: cfg.quick,
        },
        results: Vec::new(),
        unsupported: Vec::new(),
        failed: Vec::new(),
    };

    let total = (cfg.workloads.len() * cfg.targets.len() * cfg.repeat) as u64;
    let bar = if cfg.progress && std::io::stderr().is_terminal() {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };

    let mut done = 0;
    for w in &cfg.workloads {
        let mut rows = Vec::new();
        for &tid in &cfg.targets {
            let mut runs = Vec::new();
            let mut outcome = Ok(());
            for rep in 0..cfg.repeat {
                let label = format!("{}-{}", w.name(), rep);
                let target = match tid.instantiate(kernel.as_ref(), &label, cfg.backend) {
                    Ok(t) => t,
                    Err(reason) => {
                        outcome = Err(OpError::Unsupported(reason));
                        break;
                    }
                };
                let prefix = format!("{} · {}", w.name(), tid.name());
                let show = |what: &str| bar.set_message(format!("{prefix} · {what}"));
                show("setup");
                let mut ctx = Ctx::new(&cfg.threads, cfg.warmup, cfg.duration, cfg.entries, &show);
                ctx.readdir_dir = cfg.readdir_dir.as_deref();
                let r = w.run_on(&target, &mut ctx);
                drop(target);
                bar.inc(1);
                match r {
                    Ok(()) => runs.push(ctx.into_samples()),
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            match outcome {
                Ok(()) => rows.extend(aggregate(w.name(), tid.name(), &runs)),
                Err(OpError::Unsupported(reason)) => {
                    res.unsupported.push(NotRun {
                        workload: w.name().into(),
                        target: tid.name().into(),
                        reason,
                    });
                }
                Err(OpError::Failed(error)) => {
                    res.failed.push(Failed {
                        workload: w.name().into(),
                        target: tid.name().into(),
                        error,
                    });
                }
            }
            done += cfg.repeat as u64;
            bar.set_position(done);
        }
        fill_efficiency(&mut rows);
        res.results.extend(rows);
        bar.suspend(|| after_workload(&res, w.name()));
    }
    bar.finish_and_clear();
    res.machine.line_transfer_ns_after = crate::sys::line_transfer_ns(PLACEMENT_ROUND_TRIPS);
    Ok(res)
}

/// Turns of the placement measurement before and after a run: ~0.1 s
/// when the CPUs are far apart.
const PLACEMENT_ROUND_TRIPS: u64 = 300_000;
