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
//! - A poller is an epoll item's standing registration when it names the
//!   item: it stays registered until the item is removed, and a wake
//!   queues the item on its epoll (under the epoll's ready lock, taken
//!   inside this object's mutex: objects come before epolls in the lock
//!   order, ARCHITECTURE.md).
//! - Nothing here spins: sleepers park on condition variables. There is no
//!   lock-free part, so no loom model is needed (docs/TESTING.md).

use crate::abi::{Errno, SysResult};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// A `poll` caller waiting on several objects at once, or an epoll
/// item's standing registration (anon/epoll.rs), whose wakes go to its
/// epoll instead of a sleeping thread.
pub(crate) struct Poller {
    woken: Mutex<bool>,
    cond: Condvar,
    item: Option<Weak<super::epoll::Item>>,
}

/// A registration on every one of an object's wait queues.
pub(crate) const ALL_QUEUES: u8 = u8::MAX;

impl Default for Poller {
    fn default() -> Self {
        Poller {
            woken: Mutex::new(false),
            cond: Condvar::new(),
            item: None,
        }
    }
}

impl Poller {
    /// An epoll item's registration.
    pub(crate) fn for_item(item: Weak<super::epoll::Item>) -> Poller {
        Poller {
            item: Some(item),
            ..Poller::default()
        }
    }

    /// Whether this is an EPOLLEXCLUSIVE item's registration.
    fn is_exclusive(&self) -> bool {
        self.item
            .as_ref()
            .and_then(Weak::upgrade)
            .is_some_and(|i| i.is_exclusive())
    }

    /// Whether this is an epoll item's standing registration (kept until
    /// the item goes, not dropped at the end of one call).
    pub(crate) fn is_standing(&self) -> bool {
        self.item.is_some()
    }

    /// A wake with Linux's poll key (`key`: the events the change may
    /// have made ready; 0: any). A sleeping `poll` caller looks again
    /// whatever the key; an epoll item is queued only if the key meets its
    /// events (ep_poll_callback), which is what edge-triggered items see.
    pub(crate) fn wake_keyed(&self, key: u32) {
        if let Some(item) = &self.item {
            if let Some(item) = item.upgrade() {
                item.callback(key);
            }
            return;
        }
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
    /// Each with the queues it waits on (bit `q` for queue `q`).
    pollers: Vec<(Arc<Poller>, u8)>,
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

    /// `wait` until `deadline` at the latest; true if the time is up.
    pub(crate) fn wait_until(&self, g: &mut Locked<'_, S>, deadline: Instant) -> bool {
        Instant::now() >= deadline || self.cond.wait_until(&mut g.0, deadline).timed_out()
    }

    /// Wakes the blocked callers only, not the pollers (a change no
    /// poller's readiness depends on).
    pub(crate) fn notify_blocked(&self, _g: &mut Locked<'_, S>) {
        self.cond.notify_all();
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
        self.wake_keyed(g, 0, None);
    }

    /// `wake_all` with a poll key for the epoll items among the pollers
    /// (`Poller::wake_keyed`), aimed at one of the object's wait queues
    /// (`queue`; None: all of them), as Linux keeps several for one
    /// object (a pipe's readers and writers, a connection's two sockets,
    /// a datagram socket's own and its senders'): an item registered on
    /// other queues only is passed by. Blocked callers and `poll` callers
    /// are all woken: each looks at the state itself.
    pub(crate) fn wake_keyed(&self, g: &mut Locked<'_, S>, key: u32, queue: Option<usize>) {
        self.cond.notify_all();
        for (p, queues) in &g.0.pollers {
            if p.is_standing() && queue.is_some_and(|q| queues & (1 << q) == 0) {
                continue;
            }
            p.wake_keyed(key);
        }
    }

    /// Registers `p` on every queue.
    pub(crate) fn register(&self, g: &mut Locked<'_, S>, p: &Arc<Poller>) {
        self.register_on(g, p, ALL_QUEUES);
    }

    /// Registers `p` on the queues of `mask`, once: an epoll item's
    /// registration is renewed by each of its polls. Wakes go in Linux's
    /// wait-queue order: the newest registration first (add_wait_queue
    /// adds at the head), exclusive ones last in the order they came.
    pub(crate) fn register_on(&self, g: &mut Locked<'_, S>, p: &Arc<Poller>, mask: u8) {
        match g.0.pollers.iter_mut().find(|(q, _)| Arc::ptr_eq(q, p)) {
            Some((_, m)) => *m = mask,
            None if p.is_exclusive() => g.0.pollers.push((p.clone(), mask)),
            None => g.0.pollers.insert(0, (p.clone(), mask)),
        }
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        let mut g = self.inner.lock();
        if let Some(i) = g.pollers.iter().position(|(q, _)| Arc::ptr_eq(q, p)) {
            // In order: wakes follow the registrations' order.
            g.pollers.remove(i);
        }
    }
}
