//! lockref-recovery (seed 001): Linux's lockref never returns to its
//! lock-free mode once someone takes the dentry lock under a steady stream
//! of gets and puts, so stat throughput collapses and stays down. Here one
//! thread stats `lr/f` while a disturber thread, in a tight loop, takes the
//! locks that path's dentries have: readdir of the parent `lr`, create and
//! unlink of a sibling `lr/sib`, chmod of `lr/f`.
//!
//! The stat rate is measured over `INTERVALS` consecutive intervals, first
//! undisturbed, then disturbed. The row (threads = 1, the stat thread) is the
//! disturbed run, with params:
//! - intervals: each disturbed interval's stat rate / the undisturbed rate;
//! - min_interval_ratio: the worst of those (a collapse shows here);
//! - undisturbed_ops_per_sec, disturber_ops_per_sec (one op = one round of
//!   readdir + create + unlink + chmod; proof that it really ran).

use super::{stat_file, Ctx, Workload};
use crate::harness::{measure, measure_with, BgCtl};
use crate::params;
use crate::target::{Op, OpError, OpResult, Target};

/// Consecutive intervals the stat rate is reported over.
pub const INTERVALS: usize = 10;

pub struct LockrefRecovery;

impl Workload for LockrefRecovery {
    fn name(&self) -> &'static str {
        "lockref-recovery"
    }
    fn about(&self) -> &'static str {
        "stat-same on 1 thread while another thread readdirs the parent, creates/unlinks a sibling and chmods the file"
    }
    fn needs(&self) -> &'static [Op] {
        &[
            Op::Stat,
            Op::Create,
            Op::Unlink,
            Op::Mkdir,
            Op::Readdir,
            Op::Chmod,
        ]
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        let dir = t.path("lr");
        let file = t.path("lr/f");
        let sib = t.path("lr/sib");
        t.mkdir(&mut th, &dir)?;
        t.create(&mut th, &file)?;
        let mut spec = ctx.spec(1, 256);
        spec.intervals = INTERVALS;

        ctx.progress("undisturbed");
        let base = measure(&spec, |_| t.thread(), |th| stat_file(t, th, &file))?;
        let base_rate = base.ops_per_sec();

        ctx.progress("disturbed");
        let disturber = |ctl: &BgCtl<'_>| {
            let mut th = t.thread()?;
            ctl.start();
            let mut rounds = 0u64;
            let mut mode = 0o600;
            // At least one round, however short the window.
            loop {
                let n = t.readdir(&mut th, &dir)?;
                if n != 1 {
                    return Err(OpError::Failed(format!(
                        "readdir({dir:?}) listed {n} entries, expected 1"
                    )));
                }
                t.create(&mut th, &sib)?;
                t.unlink(&mut th, &sib)?;
                t.chmod(&mut th, &file, mode)?;
                mode ^= 0o044;
                rounds += 1;
                if ctl.stopped() {
                    break;
                }
            }
            Ok(rounds)
        };
        let m = measure_with(
            &spec,
            |_| t.thread(),
            |th| stat_file(t, th, &file),
            Some(&disturber),
        )?;
        let ratios: Vec<f64> = m.interval_rates.iter().map(|r| r / base_rate).collect();
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        ctx.record_measured(
            1,
            &m,
            params! {
                "min_interval_ratio" => if min.is_finite() { min } else { m.ops_per_sec() / base_rate },
                "intervals" => ratios,
                "undisturbed_ops_per_sec" => base_rate,
                "disturber_ops_per_sec" => m.background_ops as f64 / m.secs,
            },
        );
        Ok(())
    }
}
