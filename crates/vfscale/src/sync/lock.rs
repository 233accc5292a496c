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

pub use parking_lot::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use super::opcount::note_lock;

/// Pause instructions a contended acquisition spends before blocking.
const SPIN_LIMIT: u32 = 4096;

/// Waits for the lock with test-and-test-and-set: reads the lock word
/// (`is_free`, a plain load: the waiter keeps a shared copy of the line
/// instead of taking it away from the holder) between pause instructions,
/// and tries `attempt` only when it looks free, for up to `SPIN_LIMIT`
/// pauses; then blocks. No growing backoff: with a couple of contenders a
/// waiter that checks only every few dozen pauses can see the lock free
/// long after the holder released it, and the holder, coming back for its
/// next operation, may take it again first (session 5's reasoning for
/// create-unlink in one directory; its wall-clock effect is still to be
/// measured on a quiet machine, docs/PERFORMANCE.md).
#[inline]
fn spin_then<G>(
    is_free: impl Fn() -> bool,
    mut attempt: impl FnMut() -> Option<G>,
    block: impl FnOnce() -> G,
) -> G {
    for _ in 0..SPIN_LIMIT {
        core::hint::spin_loop();
        if is_free() {
            if let Some(g) = attempt() {
                return g;
            }
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

#[derive(Debug, Default)]
pub struct RwLock<T>(parking_lot::RwLock<T>);

impl<T> RwLock<T> {
    pub const fn new(v: T) -> Self {
        RwLock(parking_lot::const_rwlock(v))
    }

    #[inline]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        note_lock();
        match self.0.try_read() {
            Some(g) => g,
            None => spin_then(
                || !self.0.is_locked_exclusive(),
                || self.0.try_read(),
                || self.0.read(),
            ),
        }
    }

    /// `write`, and whether the lock was busy when asked for (the
    /// directory-change paths use it to notice contention).
    #[inline]
    pub fn write_noting_wait(&self) -> (RwLockWriteGuard<'_, T>, bool) {
        note_lock();
        match self.0.try_write() {
            Some(g) => (g, false),
            None => {
                let g = spin_then(
                    || !self.0.is_locked(),
                    || self.0.try_write(),
                    || self.0.write(),
                );
                (g, true)
            }
        }
    }

    #[inline]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        note_lock();
        match self.0.try_write() {
            Some(g) => g,
            None => spin_then(
                || !self.0.is_locked(),
                || self.0.try_write(),
                || self.0.write(),
            ),
        }
    }
}
