//! Statistics without shared writes (DESIGN.md §3 rule 5; seed 000).
//!
//! Invariants:
//! - an update writes only the updating thread's shard, a cache-padded cell
//!   of its own (threads share a shard only when there are more threads than
//!   shards, and then still correctly: updates are atomic RMWs);
//! - a thread's shard is fixed for its lifetime: [`shard_index`] is assigned
//!   once per thread from a global counter and reused by every counter;
//! - sums are snapshots, not linearisable against concurrent updates, but
//!   exact once updates stop: no update is ever lost;
//! - an `ApproxCounter` shard folds its whole delta into the central value
//!   when the delta's magnitude reaches the update's fold batch (ordinary
//!   or bulk), so at rest each shard holds less than the larger of the two
//!   and the central value is within `max_error` of the sum.
//!
//! Each counter costs `shards × 128` bytes (64 on some targets), so they are
//! meant for a handful of global or per-superblock statistics, not for
//! per-object counts.

use super::atomic::{AtomicI64, Ordering::*};
use crossbeam_utils::CachePadded;
use std::sync::OnceLock;

// A shard must own whole cache lines, or neighbouring shards false-share.
#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, size_of};
    let size = size_of::<CachePadded<AtomicI64>>();
    assert!(size == 64 || size == 128);
    assert!(align_of::<CachePadded<AtomicI64>>() == size);
};

/// The calling thread's shard number: assigned once, on the thread's first
/// call, from a global counter; the same for every counter. Callers mask it
/// with their (power-of-two) shard count.
#[inline]
pub fn shard_index() -> usize {
    // A process-global id source: a `std` atomic, since loom atomics cannot
    // live in a static.
    static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        // Relaxed: only uniqueness matters, which the RMW gives; nothing is
        // published with the index.
        static INDEX: usize = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    // During thread-local destruction the slot is gone; any shard is correct.
    INDEX.try_with(|i| *i).unwrap_or(0)
}

/// Number of shards per counter: the next power of two of twice the
/// available parallelism, at least 4. Computed once (it reads cgroup files).
pub(crate) fn shard_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        (2 * cpus).next_power_of_two().max(4)
    })
}

fn new_shards() -> Box<[CachePadded<AtomicI64>]> {
    (0..shard_count())
        .map(|_| CachePadded::new(AtomicI64::new(0)))
        .collect()
}

/// The calling thread's shard of `shards` (whose length is a power of two).
#[inline]
fn my_shard(shards: &[CachePadded<AtomicI64>]) -> &AtomicI64 {
    &shards[shard_index() & (shards.len() - 1)]
}

/// A counter whose updates touch only the updating thread's cache line;
/// reading it sums all shards.
pub struct ShardedCounter {
    shards: Box<[CachePadded<AtomicI64>]>,
}

impl ShardedCounter {
    pub fn new() -> ShardedCounter {
        ShardedCounter {
            shards: new_shards(),
        }
    }

    #[inline]
    pub fn add(&self, delta: i64) {
        // Relaxed: a statistic; it orders nothing and pairs with nothing.
        my_shard(&self.shards).fetch_add(delta, Relaxed);
    }

    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    #[inline]
    pub fn dec(&self) {
        self.add(-1);
    }

    /// `add` for a count that takes part in a store-then-load protocol (a
    /// mount's writers, `mount/write.rs`): SeqCst. On x86 every RMW is a
    /// locked instruction, so this costs what the Relaxed `add` costs.
    #[inline]
    pub fn add_seqcst(&self, delta: i64) {
        my_shard(&self.shards).fetch_add(delta, SeqCst);
    }

    /// `add` that publishes what the caller did before it: Release, paired
    /// with the loads of `sum_seqcst`.
    #[inline]
    pub fn add_release(&self, delta: i64) {
        my_shard(&self.shards).fetch_add(delta, Release);
    }

    /// `sum` for the protocol side of `add_seqcst`: SeqCst loads.
    pub fn sum_seqcst(&self) -> i64 {
        self.shards
            .iter()
            .fold(0i64, |acc, s| acc.wrapping_add(s.load(SeqCst)))
    }

    /// The sum of all shards (exact once updates stop).
    pub fn sum(&self) -> i64 {
        // Relaxed: a snapshot; pairs with nothing.
        self.shards
            .iter()
            .fold(0i64, |acc, s| acc.wrapping_add(s.load(Relaxed)))
    }
}

impl Default for ShardedCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for ShardedCounter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("ShardedCounter").field(&self.sum()).finish()
    }
}

/// Default fold threshold of [`ApproxCounter`] (Linux's percpu_counter batch
/// is 32 for small machines).
pub const DEFAULT_BATCH: i64 = 32;

/// A counter with a cheap approximate read (Linux `percpu_counter`): each
/// thread accumulates a delta in its shard and folds it into one central
/// value when its magnitude reaches the batch. `read_approx` reads only the
/// central value and is off by at most [`max_error`](Self::max_error);
/// `sum` is exact. Used for limits such as the open-file limit (ENFILE).
///
/// Bulk updates ([`add_bulk`](Self::add_bulk), a deferred-put drain
/// uncounting a batch of files) fold only at the larger `bulk_batch`, so
/// two threads draining at once write the shared central line once per
/// `bulk_batch` units instead of once per drain. `max_error` covers it:
/// a shard holds less than the larger of the two batches at rest.
pub struct ApproxCounter {
    central: CachePadded<AtomicI64>,
    shards: Box<[CachePadded<AtomicI64>]>,
    batch: i64,
    bulk_batch: i64,
}

impl ApproxCounter {
    pub fn new() -> ApproxCounter {
        Self::with_batch(DEFAULT_BATCH)
    }

    /// `batch` is the shard delta magnitude that triggers a fold (>= 1);
    /// bulk updates fold at the same magnitude.
    pub fn with_batch(batch: i64) -> ApproxCounter {
        Self::with_batches(batch, batch)
    }

    /// `batch` folds ordinary updates, `bulk_batch` bulk ones (both >= 1).
    pub fn with_batches(batch: i64, bulk_batch: i64) -> ApproxCounter {
        assert!(
            batch >= 1 && bulk_batch >= 1,
            "ApproxCounter batches must be positive"
        );
        ApproxCounter {
            central: CachePadded::new(AtomicI64::new(0)),
            shards: new_shards(),
            batch,
            bulk_batch,
        }
    }

    #[inline]
    pub fn add(&self, delta: i64) {
        self.add_folding_at(delta, self.batch);
    }

    /// `add` for a large update that need not reach the central value soon
    /// (see the type's comment): folds when the shard's delta reaches
    /// `bulk_batch`.
    #[inline]
    pub fn add_bulk(&self, delta: i64) {
        self.add_folding_at(delta, self.bulk_batch);
    }

    #[inline]
    fn add_folding_at(&self, delta: i64, fold_at: i64) {
        let shard = my_shard(&self.shards);
        // Relaxed (here and in the fold): a statistic; pairs with nothing.
        // Conservation, not ordering, makes `sum` exact: each unit is in
        // exactly one shard or in the central value at every instant,
        // except between the swap and the central add below.
        let local = shard.fetch_add(delta, Relaxed).wrapping_add(delta);
        if local.unsigned_abs() >= fold_at.unsigned_abs() {
            let taken = shard.swap(0, Relaxed);
            self.central.fetch_add(taken, Relaxed);
        }
    }

    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    #[inline]
    pub fn dec(&self) {
        self.add(-1);
    }

    /// The central value only: one load of one shared line that changes at
    /// most once per `batch` updates of a thread.
    #[inline]
    pub fn read_approx(&self) -> i64 {
        // Relaxed: a snapshot; pairs with nothing.
        self.central.load(Relaxed)
    }

    /// The exact value (reads every shard).
    pub fn sum(&self) -> i64 {
        // Relaxed: a snapshot; pairs with nothing.
        self.shards.iter().fold(self.read_approx(), |acc, s| {
            acc.wrapping_add(s.load(Relaxed))
        })
    }

    /// How far `read_approx` can be from `sum` once updates stop: each shard
    /// holds less than the larger batch.
    pub fn max_error(&self) -> i64 {
        (self.batch.max(self.bulk_batch) - 1).saturating_mul(self.shards.len() as i64)
    }

    /// Compares the value with `rhs`, reading every shard only when the
    /// approximate value is too close to decide (Linux
    /// `percpu_counter_compare`). The usual limit check is
    /// `c.compare(limit).is_ge()`.
    pub fn compare(&self, rhs: i64) -> core::cmp::Ordering {
        let approx = self.read_approx();
        if approx.abs_diff(rhs) > self.max_error().unsigned_abs() {
            approx.cmp(&rhs)
        } else {
            self.sum().cmp(&rhs)
        }
    }
}

impl Default for ApproxCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for ApproxCounter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("ApproxCounter").field(&self.sum()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn shard_index_is_stable_per_thread_and_distinct_across_threads() {
        let mine = shard_index();
        assert_eq!(mine, shard_index());
        let other = std::thread::spawn(shard_index).join().unwrap();
        assert_ne!(mine, other);
    }

    #[test]
    fn shard_count_is_power_of_two_at_least_4() {
        let n = shard_count();
        assert!(n >= 4 && n.is_power_of_two());
        assert_eq!(ShardedCounter::new().shards.len(), n);
    }

    #[test]
    fn sharded_sum_is_exact_across_threads() {
        let c = ShardedCounter::new();
        std::thread::scope(|s| {
            for t in 0..4 {
                let c = &c;
                s.spawn(move || {
                    for _ in 0..10_000 {
                        c.inc();
                    }
                    for _ in 0..t {
                        c.dec();
                    }
                    c.add(100);
                });
            }
        });
        assert_eq!(c.sum(), 4 * 10_000 - (1 + 2 + 3) + 400);
    }

    #[test]
    fn approx_folds_at_batch() {
        let c = ApproxCounter::with_batch(8);
        for _ in 0..7 {
            c.inc();
        }
        assert_eq!(c.read_approx(), 0, "below the batch nothing is folded");
        assert_eq!(c.sum(), 7);
        c.inc();
        assert_eq!(c.read_approx(), 8, "reaching the batch folds the delta");
        for _ in 0..8 {
            c.dec();
        }
        assert_eq!(c.read_approx(), 0, "negative deltas fold too");
        assert_eq!(c.sum(), 0);
    }

    #[test]
    fn approx_sum_exact_and_error_bounded_across_threads() {
        let c = ApproxCounter::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..20_001 {
                        c.add(if i % 3 == 0 { -1 } else { 1 });
                    }
                });
            }
        });
        let exact = 4 * (20_001 - 2 * 6_667);
        assert_eq!(c.sum(), exact);
        assert!((c.read_approx() - exact).abs() <= c.max_error());
    }

    #[test]
    fn bulk_updates_fold_at_the_bulk_batch_and_stay_exact() {
        let c = ApproxCounter::with_batches(8, 100);
        c.add(50);
        assert_eq!(c.read_approx(), 50, "an ordinary add folds at 8");
        c.add_bulk(-60);
        assert_eq!(c.read_approx(), 50, "a bulk add below 100 stays local");
        assert_eq!(c.sum(), -10);
        assert!((c.read_approx() - c.sum()).abs() <= c.max_error());
        c.add_bulk(-40);
        assert_eq!(c.read_approx(), -50, "reaching 100 folds the shard");
        assert_eq!(c.sum(), -50);
        assert_eq!(c.max_error(), 99 * c.shards.len() as i64);
        // compare stays exact however far the central value lags.
        c.add_bulk(99);
        assert!(c.compare(49).is_eq());
        assert!(c.compare(50).is_lt());
    }

    #[test]
    fn compare_decides_near_and_far() {
        let c = ApproxCounter::with_batch(1000);
        c.add(5);
        // The approximate value is still 0, yet compare must be exact.
        assert_eq!(c.read_approx(), 0);
        assert!(c.compare(5).is_eq());
        assert!(c.compare(6).is_lt());
        assert!(c.compare(4).is_gt());
        assert!(c.compare(i64::MAX).is_lt());
    }
}
