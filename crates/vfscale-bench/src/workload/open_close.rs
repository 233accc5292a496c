//! open-close-same and open-close-distinct (seed 001, will-it-scale's
//! open3): open(O_RDONLY) and close of one shared file by every thread, or
//! of one file per thread. Unlike stat, an open file outlives the walk, so
//! it takes a reference; the shared case shows what that reference costs.

use super::{per_thread, Ctx, Workload};
use crate::params;
use crate::target::{Op, OpResult, Target};

const NEEDS: &[Op] = &[Op::OpenClose, Op::Create];
const BATCH: u32 = 256;

pub struct OpenCloseSame;

impl Workload for OpenCloseSame {
    fn name(&self) -> &'static str {
        "open-close-same"
    }
    fn about(&self) -> &'static str {
        "every thread opens (O_RDONLY) and closes one shared file"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        let p = t.path("f");
        t.create(&mut th, &p)?;
        per_thread(t, ctx, BATCH, &[p], &params! {"depth" => 1}, T::open_close)
    }
}

pub struct OpenCloseDistinct;

impl Workload for OpenCloseDistinct {
    fn name(&self) -> &'static str {
        "open-close-distinct"
    }
    fn about(&self) -> &'static str {
        "thread i opens (O_RDONLY) and closes its own file f<i>"
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
        per_thread(
            t,
            ctx,
            BATCH,
            &paths,
            &params! {"depth" => 1},
            T::open_close,
        )
    }
}
