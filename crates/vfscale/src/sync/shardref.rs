//! A reference count that is per-thread sharded while its owner keeps a
//! base reference, and exact on demand (Linux's `percpu_ref`).
//!
//! Made for counts that many threads change but whose exact value matters
//! only at rare moments: a mount's count is taken by every open and chdir
//! and dropped by every close, but read exactly only by umount (EBUSY) and
//! after detach (the last put frees the mount). Sharded, an open and a
//! close on two cores write two different cache lines instead of one.
//!
//! Invariants:
//! - The number of references is `count + Σ shards` at every moment
//!   (shards may go negative: a reference taken in atomic mode can be
//!   dropped in sharded mode).
//! - In sharded mode `put` never reports the last reference: the owner's
//!   base reference (a mount's attachment) keeps the true count above zero,
//!   and the owner switches to atomic mode (`make_exact`) before dropping
//!   it. In atomic mode the shards are all zero and nobody is about to
//!   change them, so `count` is the exact count and `put` detects the last
//!   reference as `RefCount` does.
//! - `get` and `put` run inside an epoch guard. `make_exact` flips the mode
//!   and then waits for a grace period before it folds the shards into
//!   `count`: a thread that saw sharded mode finished its shard update
//!   inside its guard, so the fold sees it; a thread that enters later sees
//!   atomic mode (the mode store precedes the epoch bump it reads).
//! - During a switch to atomic mode `count` carries a bias: threads that
//!   already see atomic mode may put references whose gets still sit in the
//!   shards, and `count` alone must not reach zero before the fold.
//! - Mode switches are serialised by `switch`, which is never held by a
//!   thread inside a guard (so a grace period under it cannot deadlock).

use super::atomic::{AtomicBool, AtomicI64, Ordering};
use super::counter::shard_index;
use super::lock::Mutex;
use super::refcount::RefCount;
use crossbeam_utils::CachePadded;

/// Shards per count (a power of two): threads beyond this share shards,
/// correctly, with RMWs.
const SHARDS: usize = 8;

/// Added to the atomic count for the duration of a switch to atomic mode;
/// far below the refcount's saturation zone, far above any real count.
const SWITCH_BIAS: i64 = 1 << 30;

pub struct ShardedRef {
    count: RefCount,
    sharded: AtomicBool,
    switch: Mutex<()>,
    shards: Box<[CachePadded<AtomicI64>; SHARDS]>,
}

impl ShardedRef {
    /// A count of `initial` references, in atomic mode.
    pub fn new(initial: u32) -> ShardedRef {
        ShardedRef {
            count: RefCount::new(initial),
            sharded: AtomicBool::new(false),
            switch: Mutex::new(()),
            shards: Box::new(core::array::from_fn(|_| {
                CachePadded::new(AtomicI64::new(0))
            })),
        }
    }

    #[inline]
    fn my_shard(&self) -> &AtomicI64 {
        &self.shards[shard_index() & (SHARDS - 1)]
    }

    /// Takes a reference; false if the object is dead (atomic mode only:
    /// in sharded mode the owner's base reference keeps it alive). The
    /// caller holds an epoch guard.
    #[must_use]
    #[inline]
    pub fn get(&self) -> bool {
        // Relaxed: the mode is ordered against `make_exact` by the epoch
        // protocol (see the module doc), not by this load.
        if self.sharded.load(Ordering::Relaxed) {
            super::opcount::note_refcount_op();
            // Relaxed: folded by `make_exact` after a grace period, which
            // orders it (the guard's Release leave pairs with the scan).
            self.my_shard().fetch_add(1, Ordering::Relaxed);
            return true;
        }
        self.count.get()
    }

    /// Drops a reference; true if it was the last one (atomic mode only).
    /// The caller holds an epoch guard.
    #[must_use]
    #[inline]
    pub fn put(&self) -> bool {
        // Relaxed: as in `get`.
        if self.sharded.load(Ordering::Relaxed) {
            super::opcount::note_refcount_op();
            // Release: this holder's accesses happen before a later fold
            // and teardown (the fold's grace period already orders them;
            // Release costs nothing extra on an RMW).
            self.my_shard().fetch_sub(1, Ordering::Release);
            return false;
        }
        self.count.put()
    }

    /// Drops `n` references at once (a batched teardown's run of puts on
    /// one mount); true if the last of them was the last reference (atomic
    /// mode only). The caller holds an epoch guard.
    #[must_use]
    pub fn put_many(&self, n: u32) -> bool {
        // Relaxed: as in `get`.
        if self.sharded.load(Ordering::Relaxed) {
            super::opcount::note_refcount_op();
            // Release: as in `put`.
            self.my_shard().fetch_sub(i64::from(n), Ordering::Release);
            return false;
        }
        (0..n).fold(false, |_, _| self.count.put())
    }

    /// Kills an unreferenced object (atomic mode): see `RefCount::try_kill`.
    #[must_use]
    pub fn try_kill(&self) -> bool {
        debug_assert!(!self.sharded.load(Ordering::Relaxed));
        self.count.try_kill()
    }

    /// True if gets and puts currently go to the shards.
    pub fn is_sharded(&self) -> bool {
        // Relaxed: a snapshot; switches are serialised by `switch`.
        self.sharded.load(Ordering::Relaxed)
    }

    /// Switches to sharded mode. The caller holds a reference that it
    /// drops only after `make_exact` (the base reference), and no other
    /// thread can be switching this count (else `try_make_sharded`).
    pub fn make_sharded(&self) {
        let _s = self.switch.lock();
        // Relaxed: a thread that still sees atomic mode updates `count`,
        // which is just as correct (the invariant is about the sum).
        self.sharded.store(true, Ordering::Relaxed);
    }

    /// `make_sharded` unless a switch is in progress (then it does
    /// nothing): for callers inside a guard, which must not wait for a
    /// switcher that waits for their guard.
    pub fn try_make_sharded(&self) {
        if let Some(_s) = self.switch.try_lock() {
            // Relaxed: as in `make_sharded`.
            self.sharded.store(true, Ordering::Relaxed);
        }
    }

    /// Switches to atomic mode and returns the exact count. Waits for a
    /// grace period with `synchronize` (the epoch's, in production). The
    /// caller holds a reference, holds no guard that the wait would need
    /// and no lock a guard holder may wait for.
    pub fn make_exact_with(&self, synchronize: impl FnOnce()) -> u32 {
        let _s = self.switch.lock();
        // SeqCst: ordered before the epoch bump inside `synchronize`, which
        // later readers load with Acquire (they then see atomic mode).
        // The bias keeps `count` above zero while threads that already saw
        // atomic mode put references whose gets are still in the shards
        // (percpu_ref's PERCPU_COUNT_BIAS).
        self.count.add_signed(SWITCH_BIAS);
        if self.sharded.swap(false, Ordering::SeqCst) {
            synchronize();
            let mut sum = 0i64;
            for s in self.shards.iter() {
                // Relaxed: after the grace period no thread is updating the
                // shards, and the period's scan ordered their updates
                // before us.
                sum += s.swap(0, Ordering::Relaxed);
            }
            self.count.add_signed(sum);
        }
        self.count.add_signed(-SWITCH_BIAS);
        self.count.count()
    }

    /// `make_exact_with` with the epoch's grace period.
    pub fn make_exact(&self) -> u32 {
        self.make_exact_with(super::epoch::synchronize)
    }

    /// The number of references when nothing changes it (tests, the
    /// invariant checker): `count + Σ shards`.
    pub fn count_at_rest(&self) -> i64 {
        let shards: i64 = self
            .shards
            .iter()
            // Relaxed: a snapshot, exact only at rest (see above).
            .map(|s| s.load(Ordering::Relaxed))
            .sum();
        i64::from(self.count.count()) + shards
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn put_many_counts_every_reference() {
        let r = ShardedRef::new(1);
        r.make_sharded();
        for _ in 0..7 {
            assert!(r.get());
        }
        assert!(!r.put_many(7), "sharded: never the last");
        assert_eq!(r.make_exact(), 1, "seven gets, seven puts");
        for _ in 0..3 {
            assert!(r.get());
        }
        assert!(!r.put_many(3), "the base reference is left");
        assert!(r.put_many(1), "the base's put is the last");
        assert!(r.try_kill());
    }

    #[test]
    fn sharded_puts_never_report_last_and_exact_folds() {
        let r = ShardedRef::new(1);
        r.make_sharded();
        let _g = crate::sync::epoch::Collector::new();
        for _ in 0..5 {
            assert!(r.get());
        }
        for _ in 0..5 {
            assert!(!r.put(), "sharded puts are never the last");
        }
        assert!(r.get());
        assert_eq!(r.count_at_rest(), 2);
        assert_eq!(r.make_exact(), 2);
        assert!(!r.is_sharded());
        assert!(!r.put());
        assert!(r.put(), "atomic mode detects the last reference");
        assert!(r.try_kill());
        assert!(!r.get(), "dead");
    }

    #[test]
    fn references_across_threads_and_switches_add_up() {
        let r = ShardedRef::new(1);
        r.make_sharded();
        let c = crate::sync::epoch::Collector::new();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (r, c) = (&r, &c);
                s.spawn(move || {
                    for i in 0..20_000u32 {
                        let _g = c.enter();
                        assert!(r.get());
                        assert!(!r.put());
                        if i % 5000 == 0 && t == 0 {
                            drop(_g);
                            // Switching back and forth under load loses
                            // nothing.
                            r.make_exact();
                            r.make_sharded();
                        }
                    }
                });
            }
        });
        assert_eq!(r.make_exact(), 1);
        assert!(r.put());
    }
}
