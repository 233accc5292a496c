//! The slab's depot of free batches, sharded by CPU (issue 5: N
//! processes exiting at once must not write one shared line per batch).
//!
//! Each size class has one `Depot`; a depot has one shard per CPU slot
//! (`home_shard`), each a mutex-protected stack of batches on cache lines
//! of its own. A thread spills to and refills from its home shard; only
//! when that is empty does it steal, visiting the other shards in ring
//! order from its home. Two threads on different CPUs therefore never
//! write the same depot line while each has batches of its own to use:
//! teardown (frees only) never steals at all.
//!
//! Invariants:
//! - A batch is in at most one place at a time: one shard's stack, or the
//!   hands of the thread that pushed or popped it under that shard's
//!   mutex. So no batch (and no object in it) is handed out twice, and
//!   none is lost: what was pushed and not popped is in some shard.
//! - `len` is a hint only, written under the shard's mutex and read
//!   without it by stealers to skip shards that look empty. A stale hint
//!   can make a steal miss a batch pushed concurrently (the caller then
//!   maps fresh memory: a little memory, never a wrong answer); a shard
//!   is always re-checked under its mutex before anything is taken.
//! - A shard's state never shares a cache line with another shard's
//!   (`CachePadded`); its stack's buffer is a separate heap block
//!   (reserved at creation for `RESERVED_BATCHES`, grown only under the
//!   shard's mutex, in practice by threads running on the shard's CPU).

use crate::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use crossbeam_utils::CachePadded;

#[cfg(not(loom))]
use std::sync::Mutex;

#[cfg(loom)]
use loom::sync::Mutex;

/// Batches one shard's stack holds before its buffer must grow.
const RESERVED_BATCHES: usize = 32;

struct Shard<B> {
    batches: Mutex<Vec<B>>,
    /// `batches.len()`, for stealers' lock-free peek (see the invariants).
    len: AtomicUsize,
    /// Pushes so far, written under the mutex: tells a reader of
    /// [`Depot::pushes`] whether anything came back since it last looked.
    pushes: AtomicUsize,
}

/// Free batches of one size class, sharded (see the module comment).
pub struct Depot<B> {
    shards: Box<[CachePadded<Shard<B>>]>,
}

impl<B> Depot<B> {
    /// A depot of `shards` shards (at least one).
    pub fn new(shards: usize) -> Depot<B> {
        let shards = (0..shards.max(1))
            .map(|_| {
                CachePadded::new(Shard {
                    batches: Mutex::new(Vec::with_capacity(RESERVED_BATCHES)),
                    len: AtomicUsize::new(0),
                    pushes: AtomicUsize::new(0),
                })
            })
            .collect();
        Depot { shards }
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    fn shard(&self, index: usize) -> &Shard<B> {
        &self.shards[index % self.shards.len()]
    }

    /// Pushes `batches` onto shard `home` under one acquisition of its
    /// mutex.
    pub fn push_all(&self, home: usize, batches: impl IntoIterator<Item = B>) {
        let shard = self.shard(home);
        let mut stack = lock(&shard.batches);
        stack.extend(batches);
        // Relaxed: a hint for stealers; the mutex orders the batches
        // themselves (see the invariants). Pairs with nothing.
        shard.len.store(stack.len(), Relaxed);
        // Relaxed: a statistic (`pushes`) that only the mutex's holder
        // writes (so no read-modify-write), on the line the mutex just
        // took; pairs with nothing.
        shard.pushes.store(shard.pushes.load(Relaxed) + 1, Relaxed);
    }

    /// Pushes one batch onto shard `home`.
    pub fn push(&self, home: usize, batch: B) {
        self.push_all(home, core::iter::once(batch));
    }

    /// A batch: from shard `home` if it has one, else stolen from the
    /// first other shard (in ring order from `home`) that has one.
    pub fn pop(&self, home: usize) -> Option<B> {
        let n = self.shards.len();
        let home = home % n;
        if let Some(b) = self.pop_from(home) {
            return Some(b);
        }
        (1..n).find_map(|k| {
            let victim = (home + k) % n;
            // Relaxed: a hint (stale values only cost a fresh chunk);
            // pairs with nothing: `pop_from` re-checks under the mutex.
            if self.shards[victim].len.load(Relaxed) == 0 {
                return None;
            }
            self.pop_from(victim)
        })
    }

    fn pop_from(&self, index: usize) -> Option<B> {
        let shard = &self.shards[index];
        let mut stack = lock(&shard.batches);
        let b = stack.pop();
        if b.is_some() {
            // Relaxed: as in `push_all`.
            shard.len.store(stack.len(), Relaxed);
        }
        b
    }

    /// Batches held by each shard (a snapshot, for tests and statistics).
    pub fn lens(&self) -> Vec<usize> {
        self.shards.iter().map(|s| lock(&s.batches).len()).collect()
    }

    /// Pushes made to all shards so far (each read without its lock): a
    /// changed sum says batches came back since an earlier read.
    pub fn pushes(&self) -> usize {
        // Relaxed: see `push_all`.
        self.shards.iter().map(|s| s.pushes.load(Relaxed)).sum()
    }

    /// Calls `f` on every batch, each shard under its lock (a snapshot,
    /// for tests).
    pub fn for_each(&self, mut f: impl FnMut(&B)) {
        for s in self.shards.iter() {
            lock(&s.batches).iter().for_each(&mut f);
        }
    }

    /// Takes every batch out of every shard (tests: checking that objects
    /// balance).
    pub fn take_all(&self) -> Vec<B> {
        let mut all = Vec::new();
        for s in self.shards.iter() {
            let mut stack = lock(&s.batches);
            all.append(&mut stack);
            // Relaxed: as in `push_all`.
            s.len.store(0, Relaxed);
        }
        all
    }
}

/// Locks a shard, ignoring poisoning: the stack is consistent after every
/// operation (a panic inside one cannot leave half a push behind).
#[cfg(not(loom))]
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(loom)]
fn lock<T>(m: &Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shard count for the slab's depots: the configured CPUs rounded up
/// to a power of two (so `home_shard` of two running threads differs),
/// at most `MAX_SHARDS`.
// Unused by the Box-backed slab of the ASan build.
#[cfg_attr(vfscale_no_slab, allow(dead_code))]
pub(crate) fn depot_shards() -> usize {
    /// More shards cost a longer steal scan and memory left in shards
    /// nobody visits; 64 covers the machines this crate targets.
    const MAX_SHARDS: usize = 64;
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let configured =
            usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }).unwrap_or(1);
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        configured
            .max(available)
            .next_power_of_two()
            .min(MAX_SHARDS)
    })
}

/// The calling thread's home shard: the CPU it runs on now (threads on
/// different CPUs never share a home while there are enough shards), or,
/// where the CPU cannot be read, its counter shard. A thread that
/// migrates between a spill and the next refill only moves batches
/// between shards: correctness never depends on the home.
#[inline]
// Unused by the Box-backed slab of the ASan build.
#[cfg_attr(vfscale_no_slab, allow(dead_code))]
pub(crate) fn home_shard() -> usize {
    // SAFETY: sched_getcpu has no preconditions (a vDSO call).
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or_else(|_| crate::sync::counter::shard_index())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn home_first_then_steal_in_ring_order() {
        let d: Depot<u32> = Depot::new(4);
        d.push(1, 10);
        d.push(2, 20);
        d.push(2, 21);
        assert_eq!(d.pop(2), Some(21), "the home shard's newest first");
        assert_eq!(d.pop(2), Some(20));
        assert_eq!(d.pop(2), Some(10), "then the next non-empty shard");
        assert_eq!(d.pop(2), None);
        d.push(0, 1);
        assert_eq!(d.pop(3), Some(1), "the ring wraps");
        assert_eq!(d.lens(), vec![0; 4]);
    }

    #[test]
    fn push_all_and_take_all_balance() {
        let d: Depot<u32> = Depot::new(2);
        d.push_all(0, 0..5);
        d.push_all(7, 5..8);
        assert_eq!(d.lens(), vec![5, 3]);
        let mut all = d.take_all();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
        assert_eq!(d.pop(0), None);
    }

    /// `pushes` counts pushes on every shard (one per `push_all`), and
    /// nothing else moves it.
    #[test]
    fn pushes_count_what_came_back() {
        let d: Depot<u32> = Depot::new(2);
        assert_eq!(d.pushes(), 0);
        d.push_all(0, 0..5);
        d.push(1, 9);
        assert_eq!(d.pushes(), 2);
        d.pop(0);
        d.take_all();
        assert_eq!(d.pushes(), 2, "pops and takes are not pushes");
    }

    #[test]
    fn threads_never_get_one_batch_twice() {
        let d: Depot<u32> = Depot::new(2);
        d.push_all(0, 0..1000);
        let got: Vec<Vec<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|t| {
                    let d = &d;
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        while let Some(b) = d.pop(t) {
                            mine.push(b);
                            if b % 3 == 0 {
                                // Give some back to our own shard.
                                d.push(t, b + 10_000);
                            }
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u32> = got.into_iter().flatten().collect();
        all.extend(d.take_all());
        all.sort_unstable();
        let before = all.len();
        all.dedup();
        assert_eq!(before, all.len(), "no batch handed out twice");
        assert!(
            (0..1000).all(|b| all.binary_search(&b).is_ok()),
            "nothing lost"
        );
    }
}
