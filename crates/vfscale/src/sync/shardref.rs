//! A reference count that is per-thread sharded while its owner keeps a
//! base reference, and exact on demand (Linux's `percpu_ref`), with the
//! shards allocated only while sharded.
//!
//! Made for counts that many threads change but whose exact value matters
//! only at rare moments: a mount's count is taken by every open and chdir
//! and dropped by every close, but read exactly only by umount (EBUSY) and
//! after detach (the last put frees the mount); a dentry that many threads
//! keep opening is read exactly only when its name goes away. Sharded, an
//! open and a close on two cores write two different cache lines instead
//! of one. Unsharded, the count costs one word and one pointer: dentries
//! carry one each and only the hot ones ever allocate shards.
//!
//! Invariants:
//! - `shards` is null (atomic mode, may be sharded later), `SWITCHING`
//!   (atomic mode, a switch to atomic mode is folding), `FROZEN` (atomic
//!   mode for good) or a pointer to live shards (sharded mode). Every
//!   change of it is a compare-exchange or a swap by the one switcher that
//!   installed `SWITCHING`, so switches are serialised without a lock.
//! - The number of references is `count + Σ shards` at every moment
//!   (shards may go negative: a reference taken in atomic mode can be
//!   dropped in sharded mode).
//! - In sharded mode `put` never reports the last reference: the owner's
//!   base reference (a mount's attachment, a dentry's name) keeps the true
//!   count above zero, and the owner switches to atomic mode
//!   (`make_exact`/`freeze`) before dropping it. In atomic mode nobody is
//!   about to change the shards, so `count` is the exact count and `put`
//!   detects the last reference as `RefCount` does.
//! - The shards are read and updated only inside an epoch guard (`get`
//!   and `put` enter one on the sharded path). The switch replaces the
//!   pointer and then waits for a grace period before it folds the shards
//!   into `count` and frees them: a thread that saw the pointer finished
//!   its shard update inside its guard, so the fold sees it and the memory
//!   outlives it; a thread that enters later sees atomic mode (the swap
//!   precedes the epoch bump it reads).
//! - During a switch to atomic mode `count` carries a bias: threads that
//!   already see atomic mode may put references whose gets still sit in the
//!   shards, and `count` alone must not reach zero before the fold. A
//!   switcher adds it with a compare-exchange that fails if a bias is
//!   already there (`count` at or above it: real counts stay far below),
//!   and removes it after the fold, before it leaves `SWITCHING`: so one
//!   bias at most is ever in `count`. Two switchers' biases once added up
//!   to the saturated zone, where a get pinned the count for good (the
//!   namespace stress in tests/api_namespaces.rs leaked mounts; loom_sync.rs
//!   `sharded_ref_two_switches_and_a_get`). The hot paths never look at it.
//! - A switcher holds no guard and no lock a guard holder may wait for
//!   (the grace period must end).

use super::atomic::{AtomicI64, AtomicPtr, Ordering};
use super::counter::shard_index;
use super::refcount::{RefCount, SATURATED_START};
use crossbeam_utils::CachePadded;

/// Shards per count (a power of two): threads beyond this share shards,
/// correctly, with RMWs — but then two threads write one line per get and
/// put again. 8 made open-close of one file stop scaling between 8 and 16
/// threads on the 16-core device (efficiency 0.97 at 8, 0.51 at 16; the
/// shard updates 38% of the samples at 16, session 6); 16 shards cost a hot
/// dentry or mount 2 KiB instead of 1 KiB (only hot ones have shards). A
/// size that follows the machine would need the shards' length beside
/// their pointer (PERFORMANCE.md, "Known gaps").
const SHARDS: usize = 16;

/// Added to the atomic count for the duration of a switch to atomic mode;
/// far below the refcount's saturation zone, far above any real count.
const SWITCH_BIAS: i64 = 1 << 30;

type Shards = [CachePadded<AtomicI64>; SHARDS];

/// `shards` while a switch to atomic mode folds (not a real pointer: real
/// ones are aligned to a cache line).
const SWITCHING: *mut Shards = core::ptr::without_provenance_mut(1);
/// `shards` of a count that stays atomic (a dentry whose name is gone).
const FROZEN: *mut Shards = core::ptr::without_provenance_mut(2);

#[inline]
fn is_live(p: *mut Shards) -> bool {
    p.addr() > FROZEN.addr()
}

/// A switch `begin_switch` started: the unpublished shards, and whether
/// the count carries this switch's bias.
struct Started {
    shards: *mut Shards,
    biased: bool,
}

/// `begin_switch`'s answer.
enum Switch {
    Started(Started),
    Atomic,
    Busy,
}

pub struct ShardedRef {
    count: RefCount,
    shards: AtomicPtr<Shards>,
}

impl ShardedRef {
    /// A count of `initial` references, in atomic mode.
    pub fn new(initial: u32) -> ShardedRef {
        ShardedRef {
            count: RefCount::new(initial),
            shards: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The live shards, if sharded. Acquire: pairs with the Release of the
    /// compare-exchange in `make_sharded`, so the zeroed shards are seen.
    /// The caller is inside a guard, which keeps them allocated.
    #[inline]
    fn live_shards(&self) -> Option<&Shards> {
        let p = self.shards.load(Ordering::Acquire);
        // SAFETY: a live pointer stays allocated until a switch's grace
        // period has ended, and the caller is inside a guard (module doc).
        is_live(p).then(|| unsafe { &*p })
    }

    /// Adds `delta` to this thread's shard if the count is sharded, else
    /// applies `atomic` to the count. The caller is inside a guard.
    #[inline(always)]
    fn apply_guarded(&self, delta: i64, atomic: impl FnOnce(&RefCount) -> bool) -> bool {
        match self.live_shards() {
            Some(shards) => {
                super::opcount::note_refcount_op();
                // Release: a holder's accesses happen before a later fold
                // and teardown (the fold's grace period already orders
                // them; Release costs nothing extra on an RMW). Gets need
                // no order: the fold after a grace period sees them.
                shards[shard_index() & (SHARDS - 1)].fetch_add(delta, Ordering::Release);
                // A sharded get always succeeds and a sharded put is never
                // the last (the base reference).
                delta > 0
            }
            None => atomic(&self.count),
        }
    }

    /// `apply_guarded` inside a guard of its own, for callers that may hold
    /// none (a `dget` under a directory lock): the shards cannot be folded
    /// and freed between the load and the add.
    #[cold]
    #[inline(never)]
    fn apply_pinned(&self, delta: i64, atomic: impl FnOnce(&RefCount) -> bool) -> bool {
        #[cfg(not(loom))]
        let _guard = super::epoch::pin();
        self.apply_guarded(delta, atomic)
    }

    /// True if the count looks sharded: the cheap test that sends `get` and
    /// `put` to `apply_pinned`, which reloads inside its guard.
    #[inline(always)]
    fn looks_sharded(&self) -> bool {
        // Relaxed: only chooses the path; `apply_guarded` reloads with
        // Acquire.
        is_live(self.shards.load(Ordering::Relaxed))
    }

    /// Takes a reference; false if the object is dead (atomic mode only:
    /// in sharded mode the owner's base reference keeps it alive). Any
    /// caller: the sharded path enters a guard of its own.
    #[must_use]
    #[inline]
    pub fn get(&self) -> bool {
        if self.looks_sharded() {
            return self.apply_pinned(1, RefCount::get);
        }
        self.count.get()
    }

    /// Drops a reference; true if it was the last one (atomic mode only).
    /// Any caller, as `get`.
    #[must_use]
    #[inline]
    pub fn put(&self) -> bool {
        if self.looks_sharded() {
            return self.apply_pinned(-1, RefCount::put);
        }
        self.count.put()
    }

    /// `get` for a caller inside an epoch guard (a count that is sharded
    /// most of its life, like a mount's, saves the inner guard).
    #[must_use]
    #[inline]
    pub fn get_guarded(&self) -> bool {
        self.apply_guarded(1, RefCount::get)
    }

    /// `put` for a caller inside an epoch guard.
    #[must_use]
    #[inline]
    pub fn put_guarded(&self) -> bool {
        self.apply_guarded(-1, RefCount::put)
    }

    /// Drops `n` references at once (a batched teardown's run of puts on
    /// one mount); true if the last of them was the last reference (atomic
    /// mode only). Any caller, as `put`.
    #[must_use]
    pub fn put_many(&self, n: u32) -> bool {
        let all = |c: &RefCount| (0..n).fold(false, |_, _| c.put());
        if self.looks_sharded() {
            return self.apply_pinned(-i64::from(n), all);
        }
        all(&self.count)
    }

    /// Kills an unreferenced object (atomic mode): see `RefCount::try_kill`.
    #[must_use]
    pub fn try_kill(&self) -> bool {
        debug_assert!(!self.is_sharded());
        self.count.try_kill()
    }

    /// `RefCount::try_kill_publishing` (atomic mode).
    #[must_use]
    pub fn try_kill_publishing(&self) -> bool {
        debug_assert!(!self.is_sharded());
        self.count.try_kill_publishing()
    }

    /// True once killed (a snapshot; see `RefCount::is_dead`).
    pub fn is_dead(&self) -> bool {
        self.count.is_dead()
    }

    /// The atomic part of the count (a snapshot; see `RefCount::count`).
    /// In sharded mode it never drops below the base reference, so "zero"
    /// still means unused; exact only in atomic mode.
    pub fn count(&self) -> u32 {
        self.count.count()
    }

    /// True if gets and puts currently go to the shards.
    pub fn is_sharded(&self) -> bool {
        // Relaxed: a snapshot; switches are serialised on the pointer.
        is_live(self.shards.load(Ordering::Relaxed))
    }

    /// Switches to sharded mode, allocating the shards; false (nothing
    /// changed) if already sharded, switching or frozen. The caller holds a
    /// reference that it drops only after `make_exact` or `freeze` (the
    /// base reference). Never waits, so callers may hold guards and locks.
    pub fn make_sharded(&self) -> bool {
        // Relaxed: a hint that saves the allocation.
        if !self.shards.load(Ordering::Relaxed).is_null() {
            return false;
        }
        let fresh = Box::into_raw(Box::new(core::array::from_fn(|_| {
            CachePadded::new(AtomicI64::new(0))
        })));
        // Release: publishes the zeroed shards to `live_shards`' Acquire.
        // Relaxed on failure: we only free our allocation. A thread that
        // still sees atomic mode updates `count`, which is just as correct
        // (the invariant is about the sum).
        match self.shards.compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: never published.
                drop(unsafe { Box::from_raw(fresh) });
                false
            }
        }
    }

    /// Switches to atomic mode and returns the exact count. Waits for a
    /// grace period with `synchronize` (the epoch's, in production) when
    /// it was sharded. The caller holds a reference, holds no guard that
    /// the wait would need and no lock a guard holder may wait for.
    pub fn make_exact_with(&self, synchronize: impl FnOnce()) -> u32 {
        self.switch_to_atomic(core::ptr::null_mut(), synchronize).0
    }

    /// `make_exact_with` with the epoch's grace period.
    pub fn make_exact(&self) -> u32 {
        self.make_exact_with(super::epoch::synchronize)
    }

    /// `make_exact_with`, and the count never shards again (a dentry whose
    /// name is removed: its base reference is about to go). True if it was
    /// sharded (its shards were folded and freed).
    pub fn freeze_with(&self, synchronize: impl FnOnce()) -> bool {
        self.switch_to_atomic(FROZEN, synchronize).1
    }

    /// Freezes an unsharded count at once (one compare-exchange); false if
    /// it is sharded or switching, which needs `freeze`'s grace period.
    pub fn freeze_if_atomic(&self) -> bool {
        // AcqRel/Relaxed: ordering only against switches, which all go
        // through this word (a racing `make_sharded` then fails).
        match self.shards.compare_exchange(
            core::ptr::null_mut(),
            FROZEN,
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => true,
            Err(cur) => cur == FROZEN,
        }
    }

    /// `freeze_with` with the epoch's grace period.
    pub fn freeze(&self) -> bool {
        self.freeze_with(super::epoch::synchronize)
    }

    /// The switch: (the exact count, whether shards were folded).
    fn switch_to_atomic(&self, after: *mut Shards, synchronize: impl FnOnce()) -> (u32, bool) {
        let started = loop {
            match self.begin_switch(after) {
                Switch::Started(started) => break started,
                Switch::Atomic => return (self.count.count(), false),
                // Another switcher is at work; it is brief and holds no
                // guard, so waiting for it cannot deadlock.
                Switch::Busy => super::atomic::yield_thread(),
            }
        };
        synchronize();
        self.finish_switch(started, after);
        (self.count.count(), true)
    }

    /// One attempt at the start of a switch: `Atomic` if there is nothing
    /// to fold (a freeze of an atomic count done), `Busy` if another
    /// switch holds the count or moved it meanwhile, else the shards now
    /// unpublished (`SWITCHING`) and whether the count got the bias; the
    /// caller waits for a grace period, then `finish_switch`.
    fn begin_switch(&self, after: *mut Shards) -> Switch {
        // Relaxed: only a guess for the compare-exchanges.
        let cur = self.shards.load(Ordering::Relaxed);
        if cur == SWITCHING {
            return Switch::Busy;
        }
        if !is_live(cur) {
            // Atomic already: only a freeze changes the word (null →
            // FROZEN; a frozen count stays frozen).
            let target = if cur == FROZEN { FROZEN } else { after };
            // AcqRel/Relaxed: ordering only against other switches, which
            // all go through this word (as `freeze_if_atomic`).
            return if target == cur
                || self
                    .shards
                    .compare_exchange(cur, target, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                Switch::Atomic
            } else {
                Switch::Busy
            };
        }
        // The bias keeps `count` above zero while threads that already see
        // atomic mode put references whose gets are still in the shards
        // (percpu_ref's PERCPU_COUNT_BIAS); one at a time: a count at or
        // above it carries another switcher's, which goes before that
        // switch ends. A saturated count is pinned anyway and gets none
        // (it would reach the dead zone).
        let c = self.count.raw();
        if (SWITCH_BIAS as u32..SATURATED_START).contains(&c) {
            return Switch::Busy;
        }
        let biased = c < SATURATED_START;
        if biased && !self.count.add_if(c, SWITCH_BIAS as u32) {
            return Switch::Busy;
        }
        // SeqCst: ordered before the epoch bump inside the caller's grace
        // period, which later readers load with Acquire (they then see
        // atomic mode), and after the bias (a thread that sees atomic mode
        // puts after it).
        if self
            .shards
            .compare_exchange(cur, SWITCHING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            return Switch::Started(Started {
                shards: cur,
                biased,
            });
        }
        // Another switch ran between the load and the bias.
        if biased {
            self.count.add_signed(-SWITCH_BIAS);
        }
        Switch::Busy
    }

    /// The end of a switch `begin_switch` started, after a grace period:
    /// the shards folded into the count and freed, the bias out, `after`
    /// published.
    fn finish_switch(&self, started: Started, after: *mut Shards) {
        // SAFETY: unpublished by `begin_switch`'s exchange, and after the
        // grace period no thread can still hold it; from `Box::into_raw`.
        let shards = unsafe { Box::from_raw(started.shards) };
        // Relaxed: after the grace period no thread is updating the shards,
        // and the period's scan ordered their updates before us.
        let sum: i64 = shards.iter().map(|s| s.load(Ordering::Relaxed)).sum();
        self.count.add_signed(sum);
        // The fold is in: the bias goes before the next switcher can start.
        if started.biased {
            self.count.add_signed(-SWITCH_BIAS);
        }
        // Release: the fold happens before a later `make_sharded` (which
        // only compares the word, so this orders nothing it reads; Release
        // documents the hand-over) and before a waiting switcher's look at
        // `count`.
        self.shards.store(after, Ordering::Release);
    }

    /// `make_exact` of every count in `counts` with one grace period for
    /// all (an umount's or a namespace teardown's set of mounts): those
    /// another switch holds are made exact one by one afterwards, so no
    /// two batches wait for each other. The caller holds a reference on
    /// each, no guard and no lock a guard holder may wait for.
    pub fn make_exact_all(counts: &[&ShardedRef]) {
        Self::make_exact_all_with(counts, super::epoch::synchronize)
    }

    /// `make_exact_all` with `synchronize` as the grace period.
    pub fn make_exact_all_with(counts: &[&ShardedRef], synchronize: impl Fn()) {
        let mut started = Vec::new();
        let mut busy = Vec::new();
        for &c in counts {
            match c.begin_switch(core::ptr::null_mut()) {
                Switch::Started(s) => started.push((c, s)),
                Switch::Atomic => {}
                Switch::Busy => busy.push(c),
            }
        }
        if !started.is_empty() {
            synchronize();
        }
        for (c, s) in started {
            c.finish_switch(s, core::ptr::null_mut());
        }
        for c in busy {
            c.make_exact_with(&synchronize);
        }
    }

    /// Drops the shards of an object being torn down whose references no
    /// longer matter (a superblock's teardown): the count is left as it is,
    /// and the memory goes through the collector, since a reader inside a
    /// guard may still be adding to it. True if it was sharded.
    pub fn discard(&self, collector: &super::epoch::Collector) -> bool {
        // Relaxed: the teardown owns the object; readers only need the
        // memory to stay valid, which the collector ensures.
        let old = self.shards.swap(FROZEN, Ordering::Relaxed);
        if is_live(old) {
            // SAFETY: unpublished by the swap, retired once, from
            // `Box::into_raw`.
            unsafe { collector.retire_box(old) };
        }
        is_live(old)
    }

    /// The number of references when nothing changes it (tests, the
    /// invariant checker): `count + Σ shards`.
    pub fn count_at_rest(&self) -> i64 {
        let shards: i64 = self
            .live_shards()
            // Relaxed: a snapshot, exact only at rest (see above).
            .map(|s| s.iter().map(|s| s.load(Ordering::Relaxed)).sum())
            .unwrap_or(0);
        i64::from(self.count.count()) + shards
    }
}

impl Drop for ShardedRef {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, nobody else reads the word.
        let p = self.shards.load(Ordering::Relaxed);
        if is_live(p) {
            // SAFETY: `&mut self`: nobody else can reach the shards.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn make_exact_all_folds_every_count_once() {
        let counts: Vec<ShardedRef> = (0..4).map(|_| ShardedRef::new(1)).collect();
        for (i, c) in counts.iter().enumerate().take(3) {
            c.make_sharded();
            for _ in 0..i {
                assert!(c.get());
            }
        }
        // The last one stays atomic, with two references.
        assert!(counts[3].get());
        let syncs = core::cell::Cell::new(0);
        let refs: Vec<&ShardedRef> = counts.iter().collect();
        ShardedRef::make_exact_all_with(&refs, || syncs.set(syncs.get() + 1));
        assert_eq!(syncs.get(), 1, "one grace period for the batch");
        for (i, c) in counts.iter().enumerate() {
            assert!(!c.is_sharded());
            let expected = if i == 3 { 2 } else { 1 + i as u32 };
            assert_eq!(c.count(), expected, "count {i}");
        }
        // Nothing to fold: no grace period at all.
        ShardedRef::make_exact_all_with(&refs, || syncs.set(syncs.get() + 1));
        assert_eq!(syncs.get(), 1);
    }

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
