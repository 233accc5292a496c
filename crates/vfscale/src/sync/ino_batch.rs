//! Inode numbers from per-thread batches (seed 000, patch 3: Linux
//! `get_next_ino`).
//!
//! Invariants:
//! - the shared counter of an allocator only ever hands out disjoint ranges
//!   (one `fetch_add` each), so numbers are unique per allocator across
//!   threads; a thread caches the unused rest of its range;
//! - the shared counter is written once per [`BATCH`] allocations of a
//!   thread (plus once per cache eviction, see below), never per allocation;
//! - 0 is never returned (it means "no inode" in Linux ABIs);
//! - the thread cache is keyed by a process-unique allocator id that is never
//!   reused, so a dropped allocator's cached range can never be handed out by
//!   another allocator; it is simply forgotten.
//!
//! The cache holds [`SLOTS`] allocators per thread, fully associative with
//! round-robin replacement. A thread using more allocators than that at once
//! abandons the rest of an evicted range (numbers are 64-bit: skipping them
//! is harmless) and pays one shared write per eviction.

use super::atomic::{AtomicU64, Ordering::*};
use crossbeam_utils::CachePadded;
use std::cell::Cell;

/// Numbers a thread takes from the shared counter at a time.
pub const BATCH: u64 = 1024;
/// Allocators (e.g. superblocks) a thread keeps a batch for at once.
pub const SLOTS: usize = 8;

/// An allocator of unique non-zero inode numbers. One per superblock.
pub struct InoAllocator {
    /// Process-unique, never 0 (0 marks an empty cache slot).
    id: u64,
    /// The first number not yet handed to any thread. Padded: it is written
    /// rarely, but must not share a line with hot fields of its owner.
    next: CachePadded<AtomicU64>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    id: u64,
    next: u64,
    left: u64,
}

struct ThreadCache {
    slots: [Cell<Slot>; SLOTS],
    victim: Cell<usize>,
}

thread_local! {
    static CACHE: ThreadCache = ThreadCache {
        slots: Default::default(),
        victim: Cell::new(0),
    };
}

impl InoAllocator {
    /// An allocator whose first number is `first` (0 is skipped).
    pub fn new(first: u64) -> InoAllocator {
        // A process-global id source: a `std` atomic, since loom atomics
        // cannot live in a static. Relaxed: only uniqueness matters, which
        // the RMW gives; nothing is published with the id.
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        InoAllocator {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            next: CachePadded::new(AtomicU64::new(first)),
        }
    }

    /// A fresh inode number, unique for this allocator, never 0.
    #[inline]
    pub fn alloc(&self) -> u64 {
        loop {
            let ino = CACHE
                .try_with(|c| self.alloc_cached(c))
                // The thread cache is being destroyed: take a range of one.
                .unwrap_or_else(|_| self.take(1));
            if ino != 0 {
                return ino;
            }
        }
    }

    fn alloc_cached(&self, cache: &ThreadCache) -> u64 {
        let slot = match cache.slots.iter().find(|s| s.get().id == self.id) {
            Some(slot) => slot,
            None => {
                let v = cache.victim.get();
                cache.victim.set((v + 1) % SLOTS);
                &cache.slots[v]
            }
        };
        let mut s = slot.get();
        if s.id != self.id || s.left == 0 {
            s = Slot {
                id: self.id,
                next: self.take(BATCH),
                left: BATCH,
            };
        }
        let ino = s.next;
        slot.set(Slot {
            id: s.id,
            next: s.next.wrapping_add(1),
            left: s.left - 1,
        });
        ino
    }

    /// Takes `n` numbers from the shared counter; returns the first.
    fn take(&self, n: u64) -> u64 {
        // Relaxed: uniqueness comes from the RMW on this one word; no data
        // is published with a number.
        self.next.fetch_add(n, Relaxed)
    }
}

impl core::fmt::Debug for InoAllocator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InoAllocator")
            .field("id", &self.id)
            // Relaxed: a diagnostic snapshot; pairs with nothing.
            .field("next_range", &self.next.load(Relaxed))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    // Relaxed harness atomics: they publish no data; thread joins order
    // the final checks.
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn sequential_within_a_thread_and_never_zero() {
        let a = InoAllocator::new(0);
        let got: Vec<u64> = (0..5).map(|_| a.alloc()).collect();
        assert_eq!(got, [1, 2, 3, 4, 5], "0 is skipped");
    }

    #[test]
    fn shared_counter_written_once_per_batch() {
        let a = InoAllocator::new(100);
        for _ in 0..BATCH {
            a.alloc();
        }
        assert_eq!(a.next.load(Relaxed), 100 + BATCH);
        a.alloc();
        assert_eq!(a.next.load(Relaxed), 100 + 2 * BATCH);
    }

    #[test]
    fn interleaved_allocators_keep_their_batches() {
        let first = |i: usize| ((i as u64) << 32) + 1;
        let allocs: Vec<InoAllocator> = (0..SLOTS).map(|i| InoAllocator::new(first(i))).collect();
        for round in 0..100 {
            for (i, a) in allocs.iter().enumerate() {
                assert_eq!(a.alloc(), first(i) + round);
            }
        }
        for (i, a) in allocs.iter().enumerate() {
            assert_eq!(
                a.next.load(Relaxed),
                first(i) + BATCH,
                "one batch each, no eviction"
            );
        }
    }

    #[test]
    fn more_allocators_than_slots_stay_unique() {
        let allocs: Vec<InoAllocator> = (0..SLOTS + 3).map(|_| InoAllocator::new(1)).collect();
        let mut seen: Vec<HashSet<u64>> = vec![HashSet::new(); allocs.len()];
        for _ in 0..50 {
            for (a, seen) in allocs.iter().zip(&mut seen) {
                assert!(seen.insert(a.alloc()), "duplicate number");
            }
        }
    }

    #[test]
    fn unique_across_threads() {
        let a = InoAllocator::new(1);
        let per_thread: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20_000).map(|_| a.alloc()).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: HashSet<u64> = per_thread.iter().flatten().copied().collect();
        assert_eq!(all.len(), 4 * 20_000);
        assert!(!all.contains(&0));
    }
}
