//! Blocking and readiness for anonymous objects: an object's state under
//! one mutex, a condition variable for threads blocked in read/write, and
//! the list of `poll` callers currently interested in it.
//!
//! Invariants:
//! - Every change of state that can make a blocked caller progress (data
//!   in, space freed, an end closed, a shutdown) is followed by `wake_all`
//!   while the mutex is still held, so a waiter that checked the state and
//!   went to sleep under the same mutex cannot miss it (no lost wake-up).
//! - A poller is registered under the object's mutex *before* the poller
//!   checks readiness there, so a change after the check sees it and sets
//!   its flag; `Poller::wait` then returns at once.
//! - Nothing here spins: sleepers park on condition variables. There is no
//!   lock-free part, so no loom model is needed (docs/TESTING.md).

use crate::abi::{Errno, SysResult};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::sync::Arc;
use std::time::Instant;

/// A `poll` caller waiting on several objects at once.
#[derive(Default)]
pub(crate) struct Poller {
    woken: Mutex<bool>,
    cond: Condvar,
}

impl Poller {
    pub(crate) fn wake(&self) {
        *self.woken.lock() = true;
        self.cond.notify_all();
    }

    /// Sleeps until woken or `deadline` (None: forever); true if woken.
    /// Clears the flag.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut w = self.woken.lock();
        while !*w {
            match deadline {
                Some(d) => {
                    if self.cond.wait_until(&mut w, d).timed_out() {
                        break;
                    }
                }
                None => self.cond.wait(&mut w),
            }
        }
        let was = *w;
        *w = false;
        was
    }
}

/// What one look at an object's state decided, for [`WaitCell::block_on`].
pub(crate) enum Step<R> {
    /// Finished: the call returns this.
    Done(SysResult<R>),
    /// No progress possible now: a non-blocking caller returns this (EAGAIN,
    /// or the count a partial write made); a blocking one sleeps until the
    /// next `wake_all` and looks again.
    Wait(SysResult<R>),
}

/// How long a blocking call may sleep: not at all (a non-blocking call, or
/// a socket timeout of zero), until a deadline (SO_RCVTIMEO,
/// SO_SNDTIMEO), or until it can progress.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Patience {
    Never,
    Until(Instant),
    Forever,
}

impl Patience {
    /// A call without a timeout: `Never` if non-blocking, else `Forever`.
    pub(crate) fn of(nonblock: bool) -> Patience {
        if nonblock {
            Patience::Never
        } else {
            Patience::Forever
        }
    }

    pub(crate) fn is_never(self) -> bool {
        matches!(self, Patience::Never)
    }
}

/// A write that may have made progress before it had to stop: the count
/// so far, or `err` if nothing was written (Linux's partial writes).
pub(crate) fn partial(done: usize, err: Errno) -> SysResult<usize> {
    if done > 0 {
        Ok(done)
    } else {
        Err(err)
    }
}

struct Inner<S> {
    state: S,
    pollers: Vec<Arc<Poller>>,
}

/// An object's state `S` with blocking and poll support.
pub(crate) struct WaitCell<S> {
    inner: Mutex<Inner<S>>,
    cond: Condvar,
}

/// The locked state.
pub(crate) struct Locked<'a, S>(MutexGuard<'a, Inner<S>>);

impl<S> core::ops::Deref for Locked<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0.state
    }
}

impl<S> core::ops::DerefMut for Locked<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.0.state
    }
}

impl<S> WaitCell<S> {
    pub(crate) fn new(state: S) -> Self {
        WaitCell {
            inner: Mutex::new(Inner {
                state,
                pollers: Vec::new(),
            }),
            cond: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_, S> {
        Locked(self.inner.lock())
    }

    /// Releases the lock and sleeps until a `wake_all`, then relocks.
    pub(crate) fn wait(&self, g: &mut Locked<'_, S>) {
        self.cond.wait(&mut g.0);
    }

    /// The loop of a blocking read or write (pipes and sockets): looks at
    /// the state under the lock with `step` until it decides; a `Wait`
    /// sleeps (without spinning; the lock is released while asleep) as
    /// long as `patience` allows, and past it returns what `step` said
    /// last. `step` calls `wake_all` itself after a change.
    pub(crate) fn block_on<R>(
        &self,
        patience: Patience,
        mut step: impl FnMut(&mut Locked<'_, S>) -> Step<R>,
    ) -> SysResult<R> {
        let mut g = self.lock();
        loop {
            match (step(&mut g), patience) {
                (Step::Done(r), _) | (Step::Wait(r), Patience::Never) => return r,
                (Step::Wait(_), Patience::Forever) => self.wait(&mut g),
                (Step::Wait(r), Patience::Until(deadline)) => {
                    if Instant::now() >= deadline {
                        return r;
                    }
                    // A wake-up or the deadline: look again either way
                    // (the last look decides).
                    let _ = self.cond.wait_until(&mut g.0, deadline);
                }
            }
        }
    }

    /// Wakes every blocked caller and every registered poller. Call with
    /// the lock held, after changing the state.
    pub(crate) fn wake_all(&self, g: &mut Locked<'_, S>) {
        self.cond.notify_all();
        for p in &g.0.pollers {
            p.wake();
        }
    }

    pub(crate) fn register(&self, g: &mut Locked<'_, S>, p: &Arc<Poller>) {
        g.0.pollers.push(p.clone());
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        let mut g = self.inner.lock();
        if let Some(i) = g.pollers.iter().position(|q| Arc::ptr_eq(q, p)) {
            g.pollers.swap_remove(i);
        }
    }
}
