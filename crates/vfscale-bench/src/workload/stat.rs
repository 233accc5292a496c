//! stat-same, stat-distinct, stat-deep (seed 001): stat of a cached path
//! by every thread. vfscale's rule is that this does no shared write at all,
//! so it should scale linearly; a refcount or lock on the path's dentries
//! turns the shared-path cases into cache-line ping-pong.
//!
//! - stat-same: every thread stats one shared 1-component path;
//! - stat-distinct: thread i stats its own file `f<i>` in one directory;
//! - stat-deep: every thread stats one shared 4-component path.
//!
//! Each stat's answer is checked (a regular file).

use super::{per_thread, stat_file, Ctx, Workload};
use crate::params;
use crate::target::{Op, OpResult, Target};

const NEEDS: &[Op] = &[Op::Stat, Op::Create, Op::Mkdir];
const BATCH: u32 = 256;

pub struct StatSame;

impl Workload for StatSame {
    fn name(&self) -> &'static str {
        "stat-same"
    }
    fn about(&self) -> &'static str {
        "every thread stats one shared 1-component path"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        let p = t.path("f");
        t.create(&mut th, &p)?;
        per_thread(t, ctx, BATCH, &[p], &params! {"depth" => 1}, stat_file)
    }
}

pub struct StatDistinct;

impl Workload for StatDistinct {
    fn name(&self) -> &'static str {
        "stat-distinct"
    }
    fn about(&self) -> &'static str {
        "thread i stats its own file f<i> (1 component)"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        let paths: Vec<_> = (0..ctx.max_threads())
            .map(|i| t.path(&format!("f{i}")))
            .collect();
        for p in &paths {
            t.create(&mut th, p)?;
        }
        per_thread(t, ctx, BATCH, &paths, &params! {"depth" => 1}, stat_file)
    }
}

pub struct StatDeep;

impl Workload for StatDeep {
    fn name(&self) -> &'static str {
        "stat-deep"
    }
    fn about(&self) -> &'static str {
        "every thread stats one shared 4-component path a/b/c/f"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        for d in ["a", "a/b", "a/b/c"] {
            t.mkdir(&mut th, &t.path(d))?;
        }
        let p = t.path("a/b/c/f");
        t.create(&mut th, &p)?;
        per_thread(t, ctx, BATCH, &[p], &params! {"depth" => 4}, stat_file)
    }
}
