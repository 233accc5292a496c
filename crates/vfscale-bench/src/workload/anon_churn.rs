//! anon-churn (seed 000, socketallocbench): every thread creates and
//! closes anonymous objects in a loop — an unconnected AF_UNIX socket, a
//! pipe (both ends closed), an eventfd, a memfd — one row per kind and
//! thread count (`params.kind`, repeated as `params.phase` so tables and
//! medians keep the kinds apart). Nothing is shared between threads but the
//! namespace, so any slowdown with more threads is a shared cache line.

use super::{Ctx, Workload};
use crate::harness;
use crate::params;
use crate::target::{AnonKind, Op, OpResult, Target};

const NEEDS: &[Op] = &[Op::AnonChurn];
const BATCH: u32 = 256;

pub struct AnonChurn;

impl Workload for AnonChurn {
    fn name(&self) -> &'static str {
        "anon-churn"
    }
    fn about(&self) -> &'static str {
        "every thread creates and closes a socket / pipe / eventfd / memfd in a loop"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        for kind in AnonKind::ALL {
            for &n in ctx.threads {
                ctx.progress(&format!("{} × {n}", kind.name()));
                let m = harness::measure(
                    &ctx.spec(n, BATCH),
                    |_| t.thread(),
                    |th| t.anon_churn(th, kind),
                )?;
                ctx.record_measured(
                    n,
                    &m,
                    params! {"kind" => kind.name(), "phase" => kind.name()},
                );
            }
        }
        Ok(())
    }
}
