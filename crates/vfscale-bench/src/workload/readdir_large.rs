//! readdir-large (seed 003): build one directory of `ctx.entries` empty
//! files, list it fully over and over, then unlink every entry.
//!
//! Rows, told apart by params.phase:
//! - "create": creates/s, one thread (timed once over all entries);
//! - "readdir": dirents/s at every thread count, each thread doing full
//!   passes concurrently (getdents64 with a 64 KiB buffer where the target
//!   has getdents); ops counts dirents, params.passes the full listings;
//! - "unlink": unlinks/s, one thread.
//!
//! Every pass's count is checked against `entries`, every create and unlink
//! must succeed, and the directory must list empty at the end.
//!
//! With `--readdir-dir DIR` (kernel target only) only the readdir rows are
//! measured, over DIR as it is (populated beforehand, e.g. through a FUSE
//! filesystem's backing store), with params.prepopulated = true; DIR must
//! list exactly `entries` entries and is left as it was.
//!
//! With `--readdir-uncached` (the kernel target and the FUSE targets, whose
//! listings the kernel may cache) every readdir pass starts with the
//! kernel's page cache dropped: `measure_rounds` with the drop between
//! rounds, untimed; every thread of a round lists once; one untimed round
//! warms up; at least MIN_UNCACHED_ROUNDS are measured. The rows carry
//! params.kernel_cache = "dropped"; params.passes counts the listings as
//! before. Without it the rows have no kernel_cache param (the kernel may
//! or may not keep the listing: FUSE servers decide with FOPEN_CACHE_DIR).
//!
//! In-process targets also report params.bytes_per_file on the create row:
//! resident memory growth across the create phase divided by the entries
//! (paths are prepared before the first reading).

use super::{Ctx, Workload};
use crate::harness::{self, timed_once};
use crate::params;
use crate::sys::resident_bytes;
use crate::target::{Op, OpError, OpResult, Target, TargetId};

pub struct ReaddirLarge;

fn check_count(got: u64, want: usize, dir: &dyn std::fmt::Debug) -> OpResult<()> {
    if got == want as u64 {
        Ok(())
    } else {
        Err(OpError::Failed(format!(
            "readdir({dir:?}) listed {got} entries, expected {want}"
        )))
    }
}

impl Workload for ReaddirLarge {
    fn name(&self) -> &'static str {
        "readdir-large"
    }
    fn about(&self) -> &'static str {
        "create N entries in one directory (1 thread), full readdir passes (dirents/s), unlink all (1 thread)"
    }
    fn needs(&self) -> &'static [Op] {
        &[Op::Create, Op::Unlink, Op::Mkdir, Op::Rmdir, Op::Readdir]
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        if ctx.drop_kernel_cache.is_some()
            && !matches!(
                t.id(),
                TargetId::Kernel | TargetId::Fuse | TargetId::FuseUring
            )
        {
            return Err(OpError::Unsupported(
                "--readdir-uncached: no kernel cache in front of this target".into(),
            ));
        }
        if let Some(dir) = ctx.readdir_dir {
            return readdir_existing(t, ctx, dir);
        }
        let n = ctx.entries;
        let mut th = t.thread()?;
        let dir = t.path("big");
        t.mkdir(&mut th, &dir)?;

        // Warm-up: the same create/unlink path in another directory.
        ctx.progress("warm-up");
        let warm_dir = t.path("warm");
        t.mkdir(&mut th, &warm_dir)?;
        let warm: Vec<_> = (0..(n / 100).clamp(100, 10_000))
            .map(|i| t.path(&format!("warm/e{i}")))
            .collect();
        for p in &warm {
            t.create(&mut th, p)?;
        }
        check_count(t.readdir(&mut th, &warm_dir)?, warm.len(), &warm_dir)?;
        for p in &warm {
            t.unlink(&mut th, p)?;
        }
        t.rmdir(&mut th, &warm_dir)?;
        drop(warm);

        let names: Vec<_> = (0..n).map(|i| t.path(&format!("big/e{i}"))).collect();
        ctx.progress(&format!("create {n}"));
        let before = t.in_process().then(resident_bytes).flatten();
        let ((), secs) = timed_once(
            || t.thread(),
            |th| {
                for p in &names {
                    t.create(th, p)?;
                }
                Ok(())
            },
        )?;
        let after = t.in_process().then(resident_bytes).flatten();
        let mut params = params! {"phase" => "create", "entries" => n};
        if let (Some(b), Some(a)) = (before, after) {
            params.insert(
                "bytes_per_file".into(),
                serde_json::json!(a.saturating_sub(b) as f64 / n.max(1) as f64),
            );
        }
        ctx.record(1, n as u64, secs, params);

        readdir_passes(t, ctx, &dir, false)?;

        ctx.progress(&format!("unlink {n}"));
        let ((), secs) = timed_once(
            || t.thread(),
            |th| {
                for p in &names {
                    t.unlink(th, p)?;
                }
                Ok(())
            },
        )?;
        ctx.record(
            1,
            n as u64,
            secs,
            params! {"phase" => "unlink", "entries" => n},
        );
        check_count(t.readdir(&mut th, &dir)?, 0, &dir)?;
        t.rmdir(&mut th, &dir)
    }
}

/// The readdir passes of `--readdir-dir`: `dir` must list `ctx.entries`.
fn readdir_existing<T: Target>(t: &T, ctx: &mut Ctx<'_>, dir: &std::path::Path) -> OpResult<()> {
    if t.id() != TargetId::Kernel {
        return Err(OpError::Unsupported(
            "--readdir-dir names a host directory: kernel target only".into(),
        ));
    }
    let n = ctx.entries;
    let path = dir
        .to_str()
        .ok_or_else(|| OpError::Failed(format!("{dir:?}: not UTF-8")))?;
    // An absolute path: the kernel target's *at calls ignore their run
    // directory for it.
    let dir = t.path(path);
    check_count(t.readdir(&mut t.thread()?, &dir)?, n, &dir)?;
    readdir_passes(t, ctx, &dir, true)
}

/// Measured rounds of `--readdir-uncached` at least: a pass over 100,000
/// entries through FUSE takes tens of milliseconds, so the default 1 s
/// window holds more; this bounds a slow server's point from below.
pub const MIN_UNCACHED_ROUNDS: u64 = 3;

/// The readdir rows: full passes over `dir` (which must list
/// `ctx.entries`) at every thread count.
fn readdir_passes<T: Target>(
    t: &T,
    ctx: &mut Ctx<'_>,
    dir: &T::Path,
    prepopulated: bool,
) -> OpResult<()> {
    let n = ctx.entries;
    for &threads in ctx.threads {
        ctx.progress(&format!("readdir, {threads} threads"));
        let one_pass = |th: &mut T::Thread| check_count(t.readdir(th, dir)?, n, dir);
        let m = match ctx.drop_kernel_cache {
            None => harness::measure(&ctx.spec(threads, 1), |_| t.thread(), one_pass)?,
            Some(drop_cache) => harness::measure_rounds(
                threads,
                MIN_UNCACHED_ROUNDS,
                ctx.duration,
                |_| t.thread(),
                one_pass,
                drop_cache,
            )?,
        };
        let mut params = params! {"phase" => "readdir", "entries" => n, "passes" => m.ops};
        if prepopulated {
            params.insert("prepopulated".into(), serde_json::json!(true));
        }
        if ctx.drop_kernel_cache.is_some() {
            params.insert("kernel_cache".into(), serde_json::json!("dropped"));
        }
        ctx.record(threads, m.ops * n as u64, m.secs, params);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::kernel::KernelTarget;
    use crate::workload::Sample;
    use std::cell::Cell;
    use std::time::Duration;

    const ENTRIES: usize = 300;

    /// Runs readdir-large at 1 and 2 threads with a window every round
    /// exceeds (so exactly MIN_UNCACHED_ROUNDS are measured), counting the
    /// calls of a stand-in for the cache drop.
    fn uncached_run<T: Target>(
        t: &T,
        readdir_dir: Option<&std::path::Path>,
    ) -> (OpResult<Vec<Sample>>, u64) {
        let drops = Cell::new(0u64);
        let drop_cache = || {
            drops.set(drops.get() + 1);
            Ok(())
        };
        let show = |_: &str| {};
        let threads = [1, 2];
        let mut ctx = Ctx::new(
            &threads,
            Duration::from_millis(1),
            Duration::from_nanos(1),
            ENTRIES,
            &show,
        );
        ctx.readdir_dir = readdir_dir;
        ctx.drop_kernel_cache = Some(&drop_cache);
        let r = ReaddirLarge.run(t, &mut ctx).map(|()| ctx.into_samples());
        (r, drops.get())
    }

    fn readdir_rows(samples: &[Sample]) -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.params["phase"] == "readdir")
            .collect()
    }

    /// Every readdir row is marked, counts MIN_UNCACHED_ROUNDS passes per
    /// thread, each of all entries, and each round (the warm-up's too) was
    /// preceded by one drop; the create and unlink rows are unchanged.
    fn assert_uncached_rows(samples: &[Sample], drops: u64) {
        let rows = readdir_rows(samples);
        assert_eq!(rows.iter().map(|s| s.threads).collect::<Vec<_>>(), [1, 2]);
        for s in &rows {
            let passes = MIN_UNCACHED_ROUNDS * s.threads as u64;
            assert_eq!(s.params["kernel_cache"], "dropped");
            assert_eq!(s.params["passes"], passes);
            assert_eq!(s.ops, passes * ENTRIES as u64);
            assert!(s.secs > 0.0);
        }
        assert_eq!(drops, 2 * (MIN_UNCACHED_ROUNDS + 1));
        for s in samples.iter().filter(|s| s.params["phase"] != "readdir") {
            assert!(!s.params.contains_key("kernel_cache"), "{:?}", s.params);
        }
    }

    #[test]
    fn uncached_passes_drop_the_cache_before_each_and_are_marked() {
        let base = tempfile::tempdir().unwrap();
        let t = KernelTarget::in_dir(base.path(), "uncached", TargetId::Kernel).unwrap();
        let (samples, drops) = uncached_run(&t, None);
        let samples = samples.unwrap();
        assert_eq!(samples.len(), 4, "create, readdir × 2, unlink");
        assert_uncached_rows(&samples, drops);
    }

    #[test]
    fn uncached_passes_over_a_prepopulated_directory() {
        let base = tempfile::tempdir().unwrap();
        let big = base.path().join("big");
        std::fs::create_dir(&big).unwrap();
        for i in 0..ENTRIES {
            std::fs::File::create(big.join(format!("e{i}"))).unwrap();
        }
        let t = KernelTarget::in_dir(base.path(), "run", TargetId::Kernel).unwrap();
        let (samples, drops) = uncached_run(&t, Some(&big));
        let samples = samples.unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples.iter().all(|s| s.params["prepopulated"] == true));
        assert_uncached_rows(&samples, drops);
        // A directory that lists one entry too many fails every pass.
        std::fs::File::create(big.join("extra")).unwrap();
        let (r, _) = uncached_run(&t, Some(&big));
        assert!(matches!(r, Err(OpError::Failed(e)) if e.contains("expected 300")));
    }

    #[test]
    fn uncached_is_refused_without_a_kernel_cache_and_when_the_drop_is() {
        let t = crate::target::ProcessTarget::new(
            TargetId::GlobalLock,
            vfscale_model::ModelFs::new(),
            |m| m.process(vfscale::Cred::root()),
        );
        let (r, drops) = uncached_run(&t, None);
        assert!(matches!(r, Err(OpError::Unsupported(_))), "{r:?}");
        assert_eq!(drops, 0);

        let base = tempfile::tempdir().unwrap();
        let t = KernelTarget::in_dir(base.path(), "refused", TargetId::Kernel).unwrap();
        let refuse = || Err(OpError::Unsupported("not root".into()));
        let show = |_: &str| {};
        let mut ctx = Ctx::new(
            &[1],
            Duration::ZERO,
            Duration::from_nanos(1),
            ENTRIES,
            &show,
        );
        ctx.drop_kernel_cache = Some(&refuse);
        assert_eq!(
            ReaddirLarge.run(&t, &mut ctx),
            Err(OpError::Unsupported("not root".into()))
        );
    }
}
