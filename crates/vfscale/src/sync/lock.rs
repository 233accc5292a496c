//! The blocking locks of the core: parking_lot locks that spin briefly
//! before parking, and report each acquisition to [`super::opcount`].
//! Every mutex and rwlock in the core is one of these, so the op counters
//! see all lock traffic.
//!
//! Why spin first: the core's critical sections (a directory's name change,
//! an attribute update) last well under a microsecond, while parking and
//! waking a thread costs several microseconds of futex calls. Measured on
//! create-unlink in one shared directory with 2 threads: parking on every
//! contended acquisition cut total throughput to a quarter of one thread's.
//! The spin is bounded (about `SPIN_LIMIT` pause instructions, a few
//! microseconds), after which the thread blocks as usual, so a preempted
//! holder costs little.
//!
//! Contended writers of an [`RwLock`] (the directory lock) wait in the
//! lock's writers' queue, where only the head watches the lock word
//! (spin_queue.rs says why). Readers and
//! mutexes spin unqueued: nothing measured needs more.
//!
//! A name change that finds its directory's lock held first stays away
//! from it for `CONTENDED_BACKOFF` without reading it
//! ([`RwLock::write_noting_wait`]), then queues as any contended writer:
//! the holder meanwhile runs its next name changes in that directory with
//! the lock, the index block and the directory's attribute line still in
//! its own cache, instead of handing them over on every change. It does so
//! only while handing a line over is slow (handoff.rs: the queue's head
//! times the load that sees the lock released). When the host places the
//! two vCPUs far apart (a line transfer ~170 ns instead of ~35),
//! create-unlink in one directory at 2 threads went from 1.26–1.30 to
//! 2.66–2.87 M/s with the backoff (`createbench`, session 8); in the near
//! placement the bench's create-unlink ran 2.33–2.35 M/s with it and
//! 3.16–3.17 M/s without (session 11), so there it is skipped. An
//! uncontended acquisition never waits, so sparse use of a directory by
//! several threads pays nothing; a waiter waits at most the backoff longer
//! than before, once per acquisition (docs/PERFORMANCE.md,
//! "create-unlink", sessions 8 and 11).

pub use parking_lot::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use super::handoff::{handoff_is_far, note_handoff, stamp};
use super::opcount::note_lock;
use super::spin_queue::{SpinNode, SpinQueue};

/// Pause instructions a contended acquisition spends before blocking.
const SPIN_LIMIT: u32 = 4096;

/// How long a contended name change stays away from its directory's lock
/// before queueing for it (see the module docs). In the far placement 2,
/// 4, 8 and 16 µs gave 2.44, 2.58, 2.76 and 2.93 M/s (no backoff: 1.28;
/// `createbench`, session 8); the bench's create-unlink at 2 threads, 13
/// alternating rounds far apart (session 12), median 2.21 M/s at 8 µs,
/// 2.31 at 16 (ahead of 8 in 11 rounds), 2.36 at 32: each hand-over
/// costs the new holder the lines the old one wrote, so longer turns
/// waste less. 16, not 32: the waiter's extra latency grows with it, for
/// 2% more. The near placement never backs off (`handoff.rs`).
const CONTENDED_BACKOFF: std::time::Duration = std::time::Duration::from_micros(16);

/// Waits `d` without touching shared memory (pause instructions, the clock
/// read every 32 of them). Not under loom: it is timing, not protocol.
#[cold]
fn back_off(d: std::time::Duration) {
    #[cfg(not(loom))]
    {
        let start = std::time::Instant::now();
        while start.elapsed() < d {
            for _ in 0..32 {
                core::hint::spin_loop();
            }
        }
    }
    #[cfg(loom)]
    let _ = d;
}

/// Waits for the lock with test-and-test-and-set: reads the lock word
/// (`is_free`, a plain load: the waiter keeps a shared copy of the line
/// instead of taking it away from the holder) between pause instructions,
/// and tries `attempt` only when it looks free, for up to `SPIN_LIMIT`
/// pauses; then blocks. No growing backoff: with a couple of contenders a
/// waiter that checks only every few dozen pauses can see the lock free
/// long after the holder released it, and the holder, coming back for its
/// next operation, may take it again first (session 5's reasoning for
/// create-unlink in one directory). With many contenders, writers queue
/// instead ([`SpinQueue`]); a randomised backoff after lost races was
/// measured on 16 cores and changed nothing (session 6).
///
/// It also times the look that first finds the lock free after finding
/// it held: one transfer of the lock's line from the releasing CPU, the
/// sample `handoff.rs` keeps for the directory lock's backoff decision.
#[inline]
fn spin_then<G>(
    is_free: impl Fn() -> bool,
    mut attempt: impl FnMut() -> Option<G>,
    block: impl FnOnce() -> G,
) -> G {
    let mut saw_held = false;
    for _ in 0..SPIN_LIMIT {
        core::hint::spin_loop();
        let started = stamp();
        if !is_free() {
            saw_held = true;
            continue;
        }
        if saw_held {
            note_handoff(started);
            saw_held = false;
        }
        if let Some(g) = attempt() {
            return g;
        }
    }
    block()
}

#[derive(Debug, Default)]
pub struct Mutex<T>(parking_lot::Mutex<T>);

impl<T> Mutex<T> {
    pub const fn new(v: T) -> Self {
        Mutex(parking_lot::const_mutex(v))
    }

    /// The value, the mutex consumed (nobody can hold it).
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }

    /// The lock if it is free now; never waits.
    #[inline]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let g = self.0.try_lock();
        if g.is_some() {
            note_lock();
        }
        g
    }

    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        note_lock();
        match self.0.try_lock() {
            Some(g) => g,
            None => spin_then(
                || !self.0.is_locked(),
                || self.0.try_lock(),
                || self.0.lock(),
            ),
        }
    }
}

/// A reader-writer lock whose contended writers wait in a [`SpinQueue`]:
/// only the queue's head watches the lock word (see spin_queue.rs for why).
/// Readers wait as before (test-and-test-and-set, then block).
#[derive(Debug, Default)]
pub struct RwLock<T> {
    writers: SpinQueue,
    lock: parking_lot::RwLock<T>,
}

impl<T> RwLock<T> {
    #[cfg(not(loom))]
    pub const fn new(v: T) -> Self {
        RwLock {
            writers: SpinQueue::new(),
            lock: parking_lot::const_rwlock(v),
        }
    }

    #[cfg(loom)]
    pub fn new(v: T) -> Self {
        RwLock {
            writers: SpinQueue::new(),
            lock: parking_lot::const_rwlock(v),
        }
    }

    /// Waits for the write lock at the head of the writers' queue. No
    /// unqueued spinning first: on 16 cores a first phase of 64 unqueued
    /// pauses kept create-unlink at 16 threads at 0.45 M/s, queueing at
    /// once gave 0.56-0.58 M/s (session 6, docs/PERFORMANCE.md).
    #[cold]
    #[inline(never)]
    fn write_contended(&self) -> RwLockWriteGuard<'_, T> {
        let node = SpinNode::new();
        let _head = self.writers.wait_for_turn(&node);
        spin_then(
            || !self.lock.is_locked(),
            || self.lock.try_write(),
            || self.lock.write(),
        )
    }

    #[inline]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        note_lock();
        match self.lock.try_read() {
            Some(g) => g,
            None => spin_then(
                || !self.lock.is_locked_exclusive(),
                || self.lock.try_read(),
                || self.lock.read(),
            ),
        }
    }

    /// `write` for the directory-change paths, and whether the lock was
    /// busy when asked for (they use it to notice contention). While
    /// hand-overs are slow, a busy lock is left alone for
    /// `CONTENDED_BACKOFF` before the caller queues for it, so its holder
    /// can run several changes in a row (module docs).
    #[inline(always)]
    pub fn write_noting_wait(&self) -> (RwLockWriteGuard<'_, T>, bool) {
        note_lock();
        match self.lock.try_write() {
            Some(g) => (g, false),
            None => {
                if handoff_is_far() {
                    back_off(CONTENDED_BACKOFF);
                }
                (self.write_contended(), true)
            }
        }
    }

    #[inline]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        note_lock();
        match self.lock.try_write() {
            Some(g) => g,
            None => self.write_contended(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RwLock;
    use std::sync::Arc;

    /// More writers than this machine has cores, so some wait queued while
    /// the head spins and others are preempted inside the queue; readers
    /// check that no write is ever half done (the pair is written in two
    /// steps under the lock). Every increment must survive.
    #[test]
    fn queued_writers_exclude_and_lose_nothing() {
        const WRITERS: usize = 8;
        const ROUNDS: u64 = 20_000;
        let lock = Arc::new(RwLock::new((0u64, 0u64)));
        let writers: Vec<_> = (0..WRITERS)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut pair = lock.write();
                        pair.0 += 1;
                        std::hint::black_box(&mut *pair);
                        pair.1 += 1;
                    }
                })
            })
            .collect();
        let reader = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let pair = lock.read();
                    assert_eq!(pair.0, pair.1, "a reader saw a write half done");
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        let pair = lock.read();
        assert_eq!(*pair, (WRITERS as u64 * ROUNDS, WRITERS as u64 * ROUNDS));
    }

    /// The directory-change path (`write_noting_wait`, which backs off
    /// when the lock is taken): says whether it found the lock taken, and
    /// excludes as `write` does.
    #[test]
    fn noting_writers_report_contention_and_exclude() {
        let lock = RwLock::new((0u64, 0u64));
        {
            let _held = lock.write();
            std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let (mut g, waited) = lock.write_noting_wait();
                    g.0 += 1;
                    g.1 += 1;
                    waited
                });
                // Hold the lock until the waiter has backed off and
                // queued for it.
                while !lock.writers.has_waiters() {
                    std::thread::yield_now();
                }
                drop(_held);
                assert!(waiter.join().unwrap(), "the lock was taken");
            });
        }
        let (_g, waited) = lock.write_noting_wait();
        assert!(!waited, "a free lock");
        drop(_g);
        const ROUNDS: u64 = 20_000;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..ROUNDS {
                        let (mut pair, _) = lock.write_noting_wait();
                        pair.0 += 1;
                        std::hint::black_box(&mut *pair);
                        pair.1 += 1;
                    }
                });
            }
        });
        assert_eq!(*lock.read(), (4 * ROUNDS + 1, 4 * ROUNDS + 1));
    }
}
