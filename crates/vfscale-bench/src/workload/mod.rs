//! Workloads: one module each, one `impl Workload` each, generic over
//! `Target` so it runs on every target whose operations it needs.
//!
//! A workload declares the operations it `needs` (a target that `lacks` one
//! is reported "n/a: reason" without running), prepares its files through
//! the target's own operations (untimed), and records samples through `Ctx`:
//! one per measured point. The suite repeats whole workload runs on fresh
//! target instances and keeps the median of each point.
//!
//! To add a workload: write `workload/<name>.rs` with a unit struct that
//! implements `Workload`, and list it in `all()`. If it needs an operation no
//! target has yet, add it to `Op` and `Target` (default: unsupported) and
//! implement it on the targets that can express it.

use crate::harness::{self, Measured, Spec};
use crate::target::{AnyTarget, Op, OpError, OpResult, Target, Visit};
use serde_json::{Map, Value};
use std::time::Duration;

pub mod anon_churn;
pub mod create_unlink;
pub mod fd_implosion;
pub mod lockref_recovery;
pub mod open_close;
pub mod readdir_large;
pub mod reclaim_groups;
pub mod stat;

/// Extra facts of a row (the JSON "params" object).
pub type Params = Map<String, Value>;

/// Builds `Params` from `key => value` pairs.
#[macro_export]
macro_rules! params {
    ($($k:expr => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = $crate::workload::Params::new();
        $(m.insert(($k).to_string(), serde_json::json!($v));)*
        m
    }};
}

/// One measured point of one run.
#[derive(Clone, Debug)]
pub struct Sample {
    pub threads: usize,
    pub ops: u64,
    pub secs: f64,
    pub params: Params,
}

/// What a workload run may use and where it records.
pub struct Ctx<'a> {
    /// Thread counts to measure, ascending.
    pub threads: &'a [usize],
    pub warmup: Duration,
    pub duration: Duration,
    /// Entries for workloads that build a large directory.
    pub entries: usize,
    /// readdir-large lists this existing host directory instead of building
    /// its own (`--readdir-dir`).
    pub readdir_dir: Option<&'a std::path::Path>,
    /// readdir-large calls this (untimed) before every readdir pass, to
    /// drop the kernel's cached listing (`--readdir-uncached`:
    /// `sys::drop_page_cache`); kernel-backed targets only.
    pub drop_kernel_cache: Option<&'a dyn Fn() -> OpResult<()>>,
    progress: &'a dyn Fn(&str),
    samples: Vec<Sample>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        threads: &'a [usize],
        warmup: Duration,
        duration: Duration,
        entries: usize,
        progress: &'a dyn Fn(&str),
    ) -> Self {
        Ctx {
            threads,
            warmup,
            duration,
            entries,
            readdir_dir: None,
            drop_kernel_cache: None,
            progress,
            samples: Vec::new(),
        }
    }

    /// The largest thread count of the run.
    pub fn max_threads(&self) -> usize {
        self.threads.iter().copied().max().unwrap_or(1)
    }

    /// A measuring spec with this run's timing.
    pub fn spec(&self, threads: usize, batch: u32) -> Spec {
        Spec {
            threads,
            batch,
            intervals: 0,
            warmup: self.warmup,
            duration: self.duration,
        }
    }

    /// Tells the progress display what is running now.
    pub fn progress(&self, what: &str) {
        (self.progress)(what)
    }

    pub fn record(&mut self, threads: usize, ops: u64, secs: f64, params: Params) {
        self.samples.push(Sample {
            threads,
            ops,
            secs,
            params,
        });
    }

    pub fn record_measured(&mut self, threads: usize, m: &Measured, params: Params) {
        self.record(threads, m.ops, m.secs, params);
    }

    pub fn into_samples(self) -> Vec<Sample> {
        self.samples
    }
}

/// A benchmark workload.
pub trait Workload: Sync {
    fn name(&self) -> &'static str;
    /// One line for `--list` and the report.
    fn about(&self) -> &'static str;
    /// The operations it uses (setup included).
    fn needs(&self) -> &'static [Op];
    /// Runs every point on `t`, a fresh instance.
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()>;
}

/// `Workload` as a trait object over `AnyTarget`.
pub trait DynWorkload: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn needs(&self) -> &'static [Op];
    /// `Err(Unsupported)` without running anything when the target lacks a
    /// needed operation.
    fn run_on(&self, t: &AnyTarget, ctx: &mut Ctx<'_>) -> OpResult<()>;
}

struct RunOn<'a, 'b, W> {
    w: &'a W,
    ctx: &'a mut Ctx<'b>,
}

impl<W: Workload> Visit for RunOn<'_, '_, W> {
    type Out = OpResult<()>;
    fn visit<T: Target>(self, t: &T) -> OpResult<()> {
        for &op in self.w.needs() {
            if let Some(why) = t.lacks(op) {
                return Err(OpError::Unsupported(why.to_string()));
            }
        }
        self.w.run(t, self.ctx)
    }
}

impl<W: Workload> DynWorkload for W {
    fn name(&self) -> &'static str {
        Workload::name(self)
    }
    fn about(&self) -> &'static str {
        Workload::about(self)
    }
    fn needs(&self) -> &'static [Op] {
        Workload::needs(self)
    }
    fn run_on(&self, t: &AnyTarget, ctx: &mut Ctx<'_>) -> OpResult<()> {
        t.visit(RunOn { w: self, ctx })
    }
}

/// Every workload, in report order.
pub fn all() -> &'static [&'static dyn DynWorkload] {
    &[
        &stat::StatSame,
        &stat::StatDistinct,
        &stat::StatDeep,
        &open_close::OpenCloseSame,
        &open_close::OpenCloseDistinct,
        &create_unlink::CreateUnlink,
        &readdir_large::ReaddirLarge,
        &lockref_recovery::LockrefRecovery,
        &anon_churn::AnonChurn,
        &fd_implosion::FdImplosion,
        &reclaim_groups::ReclaimGroups,
    ]
}

pub fn by_name(name: &str) -> Option<&'static dyn DynWorkload> {
    all().iter().copied().find(|w| w.name() == name)
}

/// Measures `op` at every thread count of the run: thread i works on
/// `paths[i]` (prepared, untimed), `batch` operations per stop check.
pub fn per_thread<T, O>(
    t: &T,
    ctx: &mut Ctx<'_>,
    batch: u32,
    paths: &[T::Path],
    params: &Params,
    op: O,
) -> OpResult<()>
where
    T: Target,
    O: Fn(&T, &mut T::Thread, &T::Path) -> OpResult<()> + Sync,
{
    for &n in ctx.threads {
        ctx.progress(&format!("{n} thread{}", if n == 1 { "" } else { "s" }));
        let m = harness::measure(
            &ctx.spec(n, batch),
            |tid| Ok((t.thread()?, &paths[tid % paths.len()])),
            |(th, p)| op(t, th, p),
        )?;
        ctx.record_measured(n, &m, params.clone());
    }
    Ok(())
}

/// Fails unless a stat found a regular file.
#[inline]
pub fn stat_file<T: Target>(t: &T, th: &mut T::Thread, p: &T::Path) -> OpResult<()> {
    match t.stat(th, p)? {
        crate::target::Kind::File => Ok(()),
        k => Err(OpError::Failed(format!(
            "stat({p:?}) found {k:?}, expected a file"
        ))),
    }
}
