//! reclaim-groups (seed 004): G memory groups, each with its own tmpfs
//! mount and one file created by a process of that group, then five
//! drop_caches(3) passes, each timed. Nothing is freeable after the first
//! pass (positive tmpfs dentries are pinned), so passes 2-5 measure what a
//! reclaim pass costs per idle group: with per-group shrinker bitmaps and a
//! populated-group set that is nothing; the `naive` rows walk every
//! shrinker for every group, as Linux did before the fix.
//!
//! Rows are keyed by phase "[naive ]G=<g> pass <i>".
//! Points: G = 100, 1000, 4000, 10000 (with `--quick`, i.e. entries below
//! 1,000,000: 100 and 400); naive rows up to 4000 groups. Each row is one
//! pass (params: groups, pass, naive); the rows of the largest G ≤ 4000
//! also carry `ratio_vs_g100`: the median of its passes 2-5 over G=100's.

use super::{Ctx, Workload};
use crate::params;
use crate::target::{Op, OpResult, Target};

const NEEDS: &[Op] = &[Op::ReclaimGroups];
const PASSES: usize = 5;
const NAIVE_MAX: usize = 4000;

pub struct ReclaimGroups;

/// The median of the passes after the first (which frees the negative
/// dentries the file creations left behind and clears their bits).
fn idle_median(times: &[f64]) -> f64 {
    let mut t: Vec<f64> = times.iter().skip(1).copied().collect();
    t.sort_by(f64::total_cmp);
    t.get(t.len() / 2).copied().unwrap_or(0.0)
}

impl Workload for ReclaimGroups {
    fn name(&self) -> &'static str {
        "reclaim-groups"
    }
    fn about(&self) -> &'static str {
        "G memory groups with a tmpfs mount each; five timed drop_caches(3)"
    }
    fn needs(&self) -> &'static [Op] {
        NEEDS
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let sizes: &[usize] = if ctx.entries < 1_000_000 {
            &[100, 400]
        } else {
            &[100, 1000, 4000, 10000]
        };
        for naive in [false, true] {
            let mut base = None;
            let mut prev_made = None;
            for &g in sizes {
                if naive && g > NAIVE_MAX {
                    continue;
                }
                ctx.progress(&format!("reclaim-groups G={g} naive={naive}"));
                let (made, times) = match t.reclaim_groups(g, PASSES, naive) {
                    Err(crate::target::OpError::Unsupported(_)) if naive => return Ok(()),
                    r => r?,
                };
                if prev_made == Some(made) {
                    // The target capped this point to the previous one's
                    // size (the kernel: 1000 groups by default).
                    break;
                }
                prev_made = Some(made);
                let med = idle_median(&times);
                let capped = made < g;
                if made == 100 {
                    base = Some(med);
                }
                let ratio = base.filter(|&b| b > 0.0).map(|b| med / b);
                for (i, secs) in times.iter().enumerate() {
                    let phase = format!(
                        "{}G={made} pass {}",
                        if naive { "naive " } else { "" },
                        i + 1
                    );
                    let mut p = params! {
                        "phase" => phase,
                        "groups" => made,
                        "pass" => i + 1,
                        "naive" => naive,
                    };
                    if let Some(r) = ratio {
                        p.insert("ratio_vs_g100".into(), serde_json::json!(r));
                    }
                    ctx.record(1, 1, *secs, p);
                }
                if capped {
                    // The target caps its groups (the kernel: 1000 by
                    // default): larger points would repeat this one.
                    break;
                }
            }
        }
        Ok(())
    }
}
