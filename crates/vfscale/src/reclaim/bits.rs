//! The lazily cleared "may be non-empty" bits of reclaim (Linux's
//! `set_shrinker_bit` and the clear-and-re-check in `shrink_slab_memcg`).
//!
//! A bit stands for a set of objects (a shrinker's lists in one group, or all
//! of a group's shrinkers). Invariant kept at quiescence: **the set is
//! non-empty ⇒ its bit is set**. A set bit over an empty set is allowed (it
//! costs one wasted visit, after which a scan clears it).
//!
//! Protocol (a Dekker pair of SeqCst fences):
//! - a producer that makes the set non-empty first publishes its count (a
//!   store the scanner's `still_empty` check loads), then calls
//!   [`mark_nonempty`]: fence, then set the bit if it reads clear;
//! - a scanner that found the set empty calls [`clear_if_empty`]: clear the
//!   bit, fence, then re-check the count and set the bit again if it is not
//!   empty after all.
//!
//! Either the producer's fence comes first in the fences' total order, and
//! the scanner's re-check sees its count; or the scanner's does, and the
//! producer's load sees the cleared bit and sets it. `tests/loom_sync.rs`
//! (`reclaim_bit_*`) model-checks both levels together.

use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::sync::lock::RwLock;

/// Sets `mask` in `word` after the caller made the set it stands for
/// non-empty (the count store must precede this call).
#[inline]
pub fn mark_nonempty(word: &AtomicU64, mask: u64) {
    // SeqCst fence: pairs with the fence in `clear_if_empty` (see the module
    // comment); orders the caller's count store before the bit load.
    fence(Ordering::SeqCst);
    // Relaxed: ordered by the fence above; a set bit needs no second write.
    if word.load(Ordering::Relaxed) & mask == 0 {
        word.fetch_or(mask, Ordering::Relaxed);
    }
}

/// Clears `mask` in `word` because the set looked empty, then re-checks
/// with `still_empty` and restores the bit if a producer raced. Returns true
/// if the bit stays clear.
#[inline]
pub fn clear_if_empty(word: &AtomicU64, mask: u64, still_empty: impl FnOnce() -> bool) -> bool {
    // Relaxed: ordered by the fence below.
    word.fetch_and(!mask, Ordering::Relaxed);
    // SeqCst fence: pairs with the fence in `mark_nonempty`.
    fence(Ordering::SeqCst);
    if still_empty() {
        return true;
    }
    // Relaxed: a producer raced; the bit is only a hint, re-set it.
    word.fetch_or(mask, Ordering::Relaxed);
    false
}

/// A bitmap that grows on demand, with a summary level: summary bit i
/// stands for word i being non-zero, kept by the same protocol one level up
/// (the word is the summary bit's "count"), so [`GrowBits::snapshot`] reads
/// one summary word per 4096 bits and then only the words that may be
/// non-zero: an empty map of any size costs a handful of loads.
///
/// Setting, clearing and reading bits take the read lock (shared, no
/// waiting in practice); only growth takes the write lock, so no bit
/// operation ever waits for another.
#[derive(Default)]
pub struct GrowBits {
    words: RwLock<Levels>,
}

#[derive(Default)]
struct Levels {
    words: Vec<AtomicU64>,
    summary: Vec<AtomicU64>,
}

impl GrowBits {
    pub fn new() -> GrowBits {
        GrowBits::default()
    }

    /// Makes room for bit `bit` (call before any set of it).
    pub fn reserve(&self, bit: usize) {
        let need = bit / 64 + 1;
        if self.words.read().words.len() >= need {
            return;
        }
        let mut w = self.words.write();
        while w.words.len() < need.next_power_of_two() {
            w.words.push(AtomicU64::new(0));
        }
        while w.summary.len() * 64 < w.words.len() {
            w.summary.push(AtomicU64::new(0));
        }
    }

    /// `mark_nonempty` for bit `bit`, then for its word's summary bit.
    pub fn mark(&self, bit: usize) {
        self.reserve(bit);
        let l = self.words.read();
        let w = bit / 64;
        mark_nonempty(&l.words[w], 1 << (bit % 64));
        mark_nonempty(&l.summary[w / 64], 1 << (w % 64));
    }

    /// `clear_if_empty` for bit `bit`; true if it stays clear. (The
    /// summary bit is left for `snapshot` to clear.)
    pub fn clear_if_empty(&self, bit: usize, still_empty: impl FnOnce() -> bool) -> bool {
        let l = self.words.read();
        match l.words.get(bit / 64) {
            Some(word) => clear_if_empty(word, 1 << (bit % 64), still_empty),
            None => true,
        }
    }

    pub fn test(&self, bit: usize) -> bool {
        let l = self.words.read();
        // Relaxed: a hint, as everywhere in this module.
        l.words
            .get(bit / 64)
            .is_some_and(|x| x.load(Ordering::Relaxed) & (1 << (bit % 64)) != 0)
    }

    /// True if no bit is set (a snapshot of every word, not the summary:
    /// callers use it as `still_empty` after a SeqCst fence).
    pub fn is_clear(&self) -> bool {
        // Relaxed: ordered by the caller's fence.
        self.words
            .read()
            .words
            .iter()
            .all(|x| x.load(Ordering::Relaxed) == 0)
    }

    /// The set bits, a snapshot taken word by word through the summary (no
    /// lock held after). Clears the summary bits of words found zero.
    pub fn snapshot(&self) -> Vec<usize> {
        let l = self.words.read();
        let mut out = Vec::new();
        for (si, sword) in l.summary.iter().enumerate() {
            // Relaxed: a hint; a bit set after this read is found next time.
            let mut s = sword.load(Ordering::Relaxed);
            while s != 0 {
                let w = si * 64 + s.trailing_zeros() as usize;
                s &= s - 1;
                let Some(word) = l.words.get(w) else { break };
                // Relaxed: as above.
                let mut x = word.load(Ordering::Relaxed);
                if x == 0 {
                    // Relaxed in the re-check: after clear_if_empty's fence.
                    clear_if_empty(sword, 1 << (w % 64), || word.load(Ordering::Relaxed) == 0);
                }
                while x != 0 {
                    out.push(w * 64 + x.trailing_zeros() as usize);
                    x &= x - 1;
                }
            }
        }
        out
    }
}
