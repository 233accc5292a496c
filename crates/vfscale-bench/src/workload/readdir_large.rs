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
        let m = harness::measure(
            &ctx.spec(threads, 1),
            |_| t.thread(),
            |th| check_count(t.readdir(th, dir)?, n, dir),
        )?;
        let mut params = params! {"phase" => "readdir", "entries" => n, "passes" => m.ops};
        if prepopulated {
            params.insert("prepopulated".into(), serde_json::json!(true));
        }
        ctx.record(threads, m.ops * n as u64, m.secs, params);
    }
    Ok(())
}
