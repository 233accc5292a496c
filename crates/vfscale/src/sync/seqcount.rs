//! A sequence count: the read side of a seqlock, built from atomics only
//! (Linux `seqcount_t`; the fence-based protocol of Boehm, "Can seqlocks get
//! along with programming language memory models?", MSPC 2012).
//!
//! Invariants:
//! - the count is odd exactly while a write section is open;
//! - writers are serialised either by a lock the caller holds (a dentry's
//!   parent directory lock) around `write_begin`/`write_end`, or by the
//!   count itself: `write_lock` claims the odd state with a compare-exchange
//!   (Linux's `seqlock_t` with its spinlock folded into the count), for
//!   counts whose writers share no other lock (an inode's attributes);
//!   one count never mixes the two;
//! - every datum a reader reads between `read_begin` and `read_retry` is an
//!   atomic (DESIGN.md §3 rule 2), written with `Relaxed` stores inside the
//!   write section and read with `Relaxed` loads: a racing plain read would
//!   be undefined behaviour in Rust even if the reader discards it;
//! - a reader accepts its reads only if `read_retry` returns false, which
//!   guarantees no write section overlapped them.

use super::atomic::{fence, spin_hint, yield_thread, AtomicU32, Ordering::*};

/// Spins between yields while another writer holds a `write_lock`
/// (its sections are a few stores; a long wait means it was preempted).
const WRITE_LOCK_SPINS: u32 = 128;

/// A sequence count. See the module docs.
#[derive(Debug, Default)]
pub struct SeqCount(AtomicU32);

impl SeqCount {
    /// An even (no writer) count.
    pub fn new() -> SeqCount {
        SeqCount(AtomicU32::new(0))
    }

    /// Starts a read section: waits until no write section is open and
    /// returns the (even) count to pass to [`read_retry`](Self::read_retry).
    #[inline]
    pub fn read_begin(&self) -> u32 {
        loop {
            let s = self.read_begin_raw();
            if s & 1 == 0 {
                return s;
            }
            spin_hint();
        }
    }

    /// Starts a read section without waiting; the result may be odd, in
    /// which case [`read_retry`](Self::read_retry) always says retry. For
    /// callers that would rather fall back to a locked path than spin.
    #[inline]
    pub fn read_begin_raw(&self) -> u32 {
        // Acquire: pairs with the Release store of `write_end`, so the data
        // of every write section that ended before this value are visible.
        self.0.load(Acquire)
    }

    /// Starts a read section without waiting or branching: the count with
    /// its low bit cleared. One that was odd (a write section open) then
    /// differs from every count `read_retry` can load later, so that read
    /// section fails; the caller retries or falls back. For hot readers
    /// (the fast walk, the stat copy), to whom a test and a branch per
    /// section are a measurable share.
    #[inline]
    pub fn read_begin_even(&self) -> u32 {
        self.read_begin_raw() & !1
    }

    /// Ends a read section: true if the caller must discard what it read and
    /// retry (a write section was open at `start` or began since).
    #[inline]
    #[must_use]
    pub fn read_retry(&self, start: u32) -> bool {
        // Acquire fence: pairs with the Release fence in `write_begin`. If
        // any of the reader's Relaxed data loads saw a store made inside a
        // write section, the fences synchronise and the load below sees that
        // section's odd count (or a later one).
        fence(Acquire);
        // Relaxed: ordered after the data loads by the fence above.
        start & 1 != 0 || self.0.load(Relaxed) != start
    }

    /// Opens a write section. The caller must hold the lock that serialises
    /// writers of this count, and must close it with [`write_end`](Self::write_end).
    #[inline]
    pub fn write_begin(&self) {
        // Relaxed load: writers are serialised by the caller's lock, whose
        // acquire already made the previous writer's count visible.
        let s = self.0.load(Relaxed);
        debug_assert!(s & 1 == 0, "SeqCount::write_begin inside a write section");
        // Relaxed store + Release fence: the fence orders this odd store
        // before every data store of the section (pairs with the Acquire
        // fence in `read_retry`).
        self.0.store(s.wrapping_add(1), Relaxed);
        fence(Release);
    }

    /// Opens a write section, waiting while another writer's is open: the
    /// odd count is the writers' lock. One locked compare-exchange on the
    /// line the section writes anyway, instead of a separate writer mutex
    /// (two more locked RMWs, on another line). Close it with
    /// [`write_end`](Self::write_end). The section must not block.
    #[inline]
    pub fn write_lock(&self) {
        let mut spins = 0u32;
        loop {
            // Relaxed: only a hint; the compare-exchange below decides.
            let s = self.0.load(Relaxed);
            // Acquire on success: pairs with the Release store of the
            // previous writer's `write_end`, so this writer reads that
            // section's data (read-modify-writes such as nlink + 1).
            if s & 1 == 0
                && self
                    .0
                    .compare_exchange_weak(s, s.wrapping_add(1), Acquire, Relaxed)
                    .is_ok()
            {
                // Release fence: orders the odd count before the section's
                // data stores, as in `write_begin` (pairs with the Acquire
                // fence in `read_retry`).
                fence(Release);
                return;
            }
            spins += 1;
            if spins.is_multiple_of(WRITE_LOCK_SPINS) {
                yield_thread();
            } else {
                spin_hint();
            }
        }
    }

    /// Closes the write section opened by [`write_begin`](Self::write_begin)
    /// or [`write_lock`](Self::write_lock).
    #[inline]
    pub fn write_end(&self) {
        // Relaxed load: only this writer changes the count while it is odd.
        let s = self.0.load(Relaxed);
        debug_assert!(s & 1 == 1, "SeqCount::write_end without write_begin");
        // Release: pairs with the Acquire load in `read_begin`, publishing
        // the section's data stores together with the new even count.
        self.0.store(s.wrapping_add(1), Release);
    }

    /// Opens a write section that closes when the guard drops.
    #[inline]
    pub fn write_guard(&self) -> SeqWriteGuard<'_> {
        self.write_begin();
        SeqWriteGuard(self)
    }

    /// The current count (Relaxed snapshot; for diagnostics and tests).
    #[inline]
    pub fn raw(&self) -> u32 {
        self.0.load(Relaxed)
    }
}

/// An open write section of a [`SeqCount`]; closes it on drop.
#[must_use = "the write section closes when the guard is dropped"]
#[derive(Debug)]
pub struct SeqWriteGuard<'a>(&'a SeqCount);

impl Drop for SeqWriteGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.write_end();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    // Relaxed data atomics: the seqcount under test orders them; `stop`
    // publishes no data.
    use super::*;
    use crate::sync::atomic::AtomicU64;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    #[test]
    fn read_section_without_writer_succeeds() {
        let s = SeqCount::new();
        let start = s.read_begin();
        assert_eq!(start, 0);
        assert!(!s.read_retry(start));
    }

    /// `read_begin_even`: a section begun inside a write fails, while the
    /// write is open and after it ended; one begun outside succeeds.
    #[test]
    fn even_begin_inside_a_write_retries() {
        let s = SeqCount::new();
        s.write_begin();
        let inside = s.read_begin_even();
        assert_eq!(inside & 1, 0);
        assert!(s.read_retry(inside), "write section still open");
        s.write_end();
        assert!(s.read_retry(inside), "write section ended since");
        let after = s.read_begin_even();
        assert!(!s.read_retry(after));
    }

    #[test]
    fn overlapping_write_forces_retry() {
        let s = SeqCount::new();
        let start = s.read_begin();
        s.write_begin();
        assert!(s.read_retry(start), "write section open");
        assert_eq!(s.read_begin_raw() & 1, 1);
        assert!(s.read_retry(s.read_begin_raw()), "odd start always retries");
        s.write_end();
        assert!(s.read_retry(start), "a write section completed since start");
        let again = s.read_begin();
        assert_eq!(again, 2);
        assert!(!s.read_retry(again));
    }

    #[test]
    fn write_lock_excludes_other_writers() {
        // Two writers each add 1 to a counter 20,000 times with a
        // read-modify-write inside `write_lock` sections: without the
        // exclusion, updates would be lost.
        let seq = SeqCount::new();
        let n = AtomicU64::new(0);
        std::thread::scope(|sc| {
            for _ in 0..2 {
                sc.spawn(|| {
                    for _ in 0..20_000 {
                        seq.write_lock();
                        n.store(n.load(Relaxed) + 1, Relaxed);
                        seq.write_end();
                    }
                });
            }
        });
        assert_eq!(n.load(Relaxed), 40_000);
        assert_eq!(seq.raw(), 80_000);
    }

    #[test]
    fn guard_closes_on_drop() {
        let s = SeqCount::new();
        {
            let _g = s.write_guard();
            assert_eq!(s.raw(), 1);
        }
        assert_eq!(s.raw(), 2);
    }

    #[test]
    fn readers_never_accept_torn_pairs() {
        // One writer keeps the pair (a, b) equal; readers must never accept
        // a pair that differs.
        let seq = SeqCount::new();
        let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
        let stop = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_millis(300);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut v = 0;
                while Instant::now() < deadline {
                    v += 1;
                    let _g = seq.write_guard();
                    a.store(v, Relaxed);
                    b.store(v, Relaxed);
                }
                stop.store(true, Relaxed);
            });
            for _ in 0..2 {
                sc.spawn(|| {
                    let mut accepted = 0u64;
                    while !stop.load(Relaxed) || accepted == 0 {
                        let start = seq.read_begin();
                        let (x, y) = (a.load(Relaxed), b.load(Relaxed));
                        if !seq.read_retry(start) {
                            assert_eq!(x, y, "accepted a torn read");
                            accepted += 1;
                        }
                    }
                });
            }
        });
        assert_eq!(seq.raw() & 1, 0);
        assert_eq!(a.load(Relaxed), b.load(Relaxed));
    }
}
