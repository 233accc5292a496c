//! A reference count with a dead zone: one atomic add per get, one atomic
//! subtract per put, no lock and no "stuck locked" mode (DESIGN.md §3 rule 4;
//! the design of Linux's `rcuref_t`/`file_ref_t` and gVisor's speculative
//! references).
//!
//! The `u32` word is split into zones:
//!
//! ```text
//! 0x0000_0000 ..= 0x7FFF_FFFF  live: the number of references (0 = cached,
//!                              unreferenced, still revivable by `get`)
//! 0x8000_0000 ..= 0xBFFF_FFFF  saturated: too many gets; the object is
//!                              pinned forever (leaked), never killed
//! 0xC000_0000 ..= 0xFFFF_FFFF  dead: killed by `try_kill`; `get` fails
//! ```
//!
//! Invariants:
//! - a `get` is one unconditional `fetch_add`; the caller must already hold a
//!   pointer that keeps the memory valid (an epoch guard or a reference), so
//!   the add may land on a dead object: the dead zone is wide enough to
//!   absorb every such add ([`DEAD`] sits about 2^29 below the wrap and 2^29
//!   above the zone's start), and a failed get parks the word back at
//!   `DEAD`, so failed gets cannot accumulate;
//! - only `try_kill` moves the word into the dead zone, and only from 0, so a
//!   successful `get` and a successful `try_kill` exclude each other by the
//!   modification order of the one word;
//! - the word never leaves the dead zone, and never leaves the saturated zone
//!   except towards its middle.

use super::atomic::{AtomicU32, Ordering::*};

/// First value of the saturated zone.
pub const SATURATED_START: u32 = 0x8000_0000;
/// The middle of the saturated zone, where a saturated count is parked.
pub const SATURATED: u32 = 0xA000_0000;
/// First value of the dead zone: any count at or above it is dead.
pub const DEAD_ZONE_START: u32 = 0xC000_0000;
/// The middle of the dead zone, stored by a successful `try_kill`.
pub const DEAD: u32 = 0xE000_0000;

const _: () = assert!(SATURATED_START < SATURATED && SATURATED < DEAD_ZONE_START);
const _: () = assert!(DEAD_ZONE_START < DEAD);
// Failed gets drift upwards from DEAD; leave them 2^29 - 1 adds of room
// before the word would wrap to 0 (a resurrection).
const _: () = assert!(u32::MAX - DEAD >= (1 << 29) - 1);
const _: () = assert!(DEAD - DEAD_ZONE_START >= 1 << 29);

/// A single-add reference count with a dead zone. See the module docs.
pub struct RefCount(AtomicU32);

impl RefCount {
    /// A live count holding `initial` references (0: cached, unreferenced).
    pub fn new(initial: u32) -> RefCount {
        debug_assert!(
            initial < SATURATED_START,
            "initial count {initial:#x} not live"
        );
        RefCount(AtomicU32::new(initial))
    }

    /// Takes a reference: exactly one `fetch_add`. Returns false if the
    /// object is dead (the count is left in the dead zone, so no undo is
    /// needed). Succeeds from 0: a cached object is revived until killed.
    ///
    /// The caller must hold a pointer that keeps the memory valid.
    #[must_use]
    #[inline]
    pub fn get(&self) -> bool {
        super::opcount::note_refcount_op();
        // Relaxed: the reference protects nothing that the caller's pointer
        // protection (epoch guard) does not already protect; exclusion with
        // `try_kill` comes from both being RMWs on this one word.
        let old = self.0.fetch_add(1, Relaxed);
        // The new value is still live (so `old` is below the last live one).
        if old < SATURATED_START - 1 {
            return true;
        }
        self.get_slow(old)
    }

    /// `get` for an object found through a lock-free pointer into a
    /// type-stable pool, whose memory may meanwhile have been freed and
    /// re-initialised for another object (the fd table: file/fdtable.rs).
    /// Acquire: if this add lands on the new incarnation it reads from
    /// `reinit`'s Release store (or a later RMW in its release sequence),
    /// so everything that happened before the re-initialisation — the old
    /// object's removal from where the caller found it included — is
    /// visible to the caller's re-check of that place.
    #[must_use]
    #[inline]
    pub fn get_acquire(&self) -> bool {
        super::opcount::note_refcount_op();
        let old = self.0.fetch_add(1, Acquire);
        if old < SATURATED_START - 1 {
            return true;
        }
        self.get_slow(old)
    }

    /// Re-initialises the count of a type-stable object being reused, with
    /// `initial` references. A store, not a write of a new `RefCount`,
    /// because a stale `get_acquire` may be adding to this word right now
    /// (it then either lands in the dead zone before this store, and fails,
    /// or on the new count after it, and takes a real reference).
    pub fn reinit(&self, initial: u32) {
        debug_assert!(initial < SATURATED_START);
        // Release: pairs with the Acquire in `get_acquire`.
        self.0.store(initial, Release);
    }

    /// `old` was the last live value (this get saturated the count), a
    /// saturated value, or a dead one.
    #[cold]
    fn get_slow(&self, old: u32) -> bool {
        let (park, alive) = if old >= DEAD_ZONE_START {
            (DEAD, false)
        } else {
            (SATURATED, true)
        };
        // Pull the count back to the middle of its zone so repeated adds can
        // never walk out of it. A compare-exchange, not a store: under
        // type-stable reuse the object may already have been re-initialised
        // with a live count, which a blind store would clobber. Losing the
        // race only means another thread's add landed since; it will park it.
        // Relaxed: nothing is published by parking; it pairs with nothing.
        let _ = self
            .0
            .compare_exchange(old.wrapping_add(1), park, Relaxed, Relaxed);
        alive
    }

    /// Drops a reference: exactly one `fetch_sub`. Returns true if this put
    /// moved the count from 1 to 0; the caller then decides whether to keep
    /// the object cached or to `try_kill` it. A saturated count stays
    /// saturated and returns false.
    #[must_use]
    #[inline]
    pub fn put(&self) -> bool {
        super::opcount::note_refcount_op();
        // Release: pairs with the Acquire of a successful `try_kill`, so all
        // of this holder's accesses to the object happen before its teardown
        // (also through later gets and puts: RMWs continue the release
        // sequence).
        let old = self.0.fetch_sub(1, Release);
        if old < SATURATED_START {
            debug_assert!(old != 0, "RefCount::put underflow");
            return old == 1;
        }
        self.put_slow(old)
    }

    #[cold]
    fn put_slow(&self, old: u32) -> bool {
        debug_assert!(old < DEAD_ZONE_START, "RefCount::put on a dead object");
        // Saturated: the object is leaked; park the count in the middle of
        // the zone (same reasoning and ordering as in `get_slow`).
        let _ = self
            .0
            .compare_exchange(old.wrapping_sub(1), SATURATED, Relaxed, Relaxed);
        false
    }

    /// Adds (or removes, if negative) `delta` references at once: folding a
    /// sharded count (`ShardedRef::make_exact`). The count stays live: the
    /// caller holds a reference.
    pub fn add_signed(&self, delta: i64) {
        // AcqRel: the fold publishes the shard holders' releases (which the
        // folding thread acquired through a grace period) to a later
        // `try_kill`, through this RMW's place in the release sequence.
        if delta >= 0 {
            let add = u32::try_from(delta).unwrap_or(u32::MAX);
            self.0.fetch_add(add, AcqRel);
        } else {
            let sub = u32::try_from(-delta).unwrap_or(u32::MAX);
            let old = self.0.fetch_sub(sub, AcqRel);
            debug_assert!(old > sub, "fold would drop the caller's reference");
        }
    }

    /// Kills an unreferenced object: one compare-exchange 0 → [`DEAD`].
    /// True iff this call killed it; the caller then owns the teardown.
    /// False if it is referenced (possibly revived), saturated, or dead.
    #[must_use]
    #[inline]
    pub fn try_kill(&self) -> bool {
        super::opcount::note_refcount_op();
        // Acquire on success: pairs with the Release of every put, so the
        // teardown happens after every former holder's last access.
        // Relaxed on failure: nothing is learned or done.
        self.0.compare_exchange(0, DEAD, Acquire, Relaxed).is_ok()
    }

    /// Drops the caller's reference and kills the object if it was the
    /// only one, in one step; false (nothing changed) if there are others.
    /// Batched teardown uses it for open files (one RMW instead of a put
    /// and a kill). It must be a compare-exchange, not a load and a store:
    /// a lock-free fd lookup (file/fdtable.rs) may add to the count of a
    /// file whose last slot was just emptied, and a plain store of DEAD
    /// would erase that add while the lookup believes it holds a
    /// reference — its later put would then land on a freed, possibly
    /// reused, file.
    #[must_use]
    #[inline]
    pub fn kill_if_sole(&self) -> bool {
        super::opcount::note_refcount_op();
        // A plain load first: a shared file skips the locked instruction.
        // Relaxed: only a hint; the compare-exchange decides.
        if self.0.load(Relaxed) != 1 {
            return false;
        }
        // Acquire: pairs with the Release of every former holder's put, so
        // their accesses happen before our teardown (as `try_kill`'s).
        self.0.compare_exchange(1, DEAD, Acquire, Relaxed).is_ok()
    }

    /// `try_kill` for a killer that has just changed state which a racing
    /// last put must observe (the shrinker clearing `D_ON_LRU` before it
    /// tries to kill; see `dcache::fastput`). A failed compare-exchange
    /// writes nothing, so a put racing with a plain `try_kill` could read
    /// the state from before the change (a store-buffer pattern). Here the
    /// attempt starts with a writing RMW: a put that comes later in the
    /// word's modification order reads from its release sequence and, after
    /// an acquire fence, sees the change; a put that comes earlier left the
    /// count at 0, and the kill below sees that.
    #[must_use]
    pub fn try_kill_publishing(&self) -> bool {
        super::opcount::note_refcount_op();
        // Release: pairs with the acquire fence after a racing last `put`
        // (`fastput::cached_on_lru`): it publishes the caller's earlier
        // stores. Acquire: as a successful kill's, in case this read 0.
        let old = self.0.fetch_add(0, AcqRel);
        // Acquire on success, Relaxed on failure: as in `try_kill`.
        old == 0 && self.0.compare_exchange(0, DEAD, Acquire, Relaxed).is_ok()
    }

    /// True once killed. A snapshot with no ordering (Relaxed): only the
    /// `try_kill` winner may act on the death.
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.0.load(Relaxed) >= DEAD_ZONE_START
    }

    /// True if the count overflowed into the saturated zone (the object will
    /// never be freed). Snapshot (Relaxed), for diagnostics.
    #[inline]
    pub fn is_saturated(&self) -> bool {
        (SATURATED_START..DEAD_ZONE_START).contains(&self.0.load(Relaxed))
    }

    /// The word itself (a switch's look for another's bias: `ShardedRef`).
    #[inline]
    pub fn raw(&self) -> u32 {
        // Relaxed: a guess for `add_if`'s compare-exchange.
        self.0.load(Relaxed)
    }

    /// Adds `delta` if the word is still `expected`; false if it changed.
    pub fn add_if(&self, expected: u32, delta: u32) -> bool {
        // AcqRel: as `add_signed` (a bias joins the release sequence a
        // later `try_kill` reads); Relaxed on failure, which changes nothing.
        self.0
            .compare_exchange(expected, expected.wrapping_add(delta), AcqRel, Relaxed)
            .is_ok()
    }

    /// A snapshot of the number of references (Relaxed; stale at once under
    /// concurrency): 0 when dead, the raw word when saturated.
    #[inline]
    pub fn count(&self) -> u32 {
        let v = self.0.load(Relaxed);
        if v >= DEAD_ZONE_START {
            0
        } else {
            v
        }
    }
}

impl core::fmt::Debug for RefCount {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.is_dead() {
            f.write_str("RefCount(dead)")
        } else {
            write!(f, "RefCount({})", self.count())
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn get_put_count() {
        let r = RefCount::new(1);
        assert!(r.get());
        assert_eq!(r.count(), 2);
        assert!(!r.put());
        assert!(r.put(), "1 -> 0 must report the last put");
        assert_eq!(r.count(), 0);
        assert!(!r.is_dead());
    }

    #[test]
    fn get_revives_zero_until_killed() {
        let r = RefCount::new(0);
        assert!(r.get(), "a cached object at zero is revivable");
        assert!(!r.try_kill(), "cannot kill a referenced object");
        assert!(r.put());
        assert!(r.try_kill());
        assert!(r.is_dead());
        assert_eq!(r.count(), 0);
        assert!(!r.try_kill(), "only one kill");
        assert!(!r.get(), "get on a dead object fails");
    }

    #[test]
    fn kill_if_sole_only_kills_the_last_reference() {
        let r = RefCount::new(2);
        assert!(!r.kill_if_sole(), "another reference exists");
        assert_eq!(r.count(), 2, "a refused kill changes nothing");
        assert!(!r.put());
        assert!(r.kill_if_sole());
        assert!(r.is_dead());
        assert!(!r.get());
    }

    #[test]
    fn failed_gets_stay_parked_in_dead_zone() {
        let r = RefCount::new(0);
        assert!(r.try_kill());
        for _ in 0..10_000 {
            assert!(!r.get());
        }
        assert_eq!(r.raw(), DEAD, "uncontended failed gets re-park at DEAD");
        assert!(r.is_dead());
    }

    #[test]
    fn saturation_pins_the_object() {
        let r = RefCount::new(SATURATED_START - 1);
        assert!(!r.is_saturated());
        assert!(r.get(), "a saturated get still hands out a reference");
        assert!(r.is_saturated());
        assert_eq!(r.raw(), SATURATED);
        for _ in 0..1000 {
            assert!(!r.put(), "a saturated count never reaches zero");
        }
        assert_eq!(r.raw(), SATURATED);
        assert!(!r.try_kill());
        assert!(!r.is_dead());
    }

    #[test]
    fn concurrent_get_put_balance() {
        let r = Arc::new(RefCount::new(1));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    for _ in 0..50_000 {
                        assert!(r.get());
                        assert!(!r.put(), "the initial reference keeps it above zero");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(r.count(), 1);
        assert!(r.put());
        assert!(r.try_kill());
    }
}
