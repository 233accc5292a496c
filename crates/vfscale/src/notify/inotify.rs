//! One inotify instance (Linux's fsnotify_group with its inotify data): the
//! queue of events a read returns, and the watch descriptors it handed out.
//!
//! Invariants (under the `WaitCell` mutex):
//! - `queue` holds at most `INOTIFY_MAX_QUEUED_EVENTS` events plus one
//!   IN_Q_OVERFLOW, which is queued once when an event is dropped for lack
//!   of room and not again while it is still queued;
//! - `bytes` is the sum of the queued events' record sizes (FIONREAD);
//! - `wds` maps each live watch descriptor to the address of its inode;
//!   the mark itself (with the inode reference) lives in the namespace's
//!   registry (`notify::Registry`), which is locked *before* this mutex
//!   whenever both are held;
//! - descriptors are handed out cyclically from 1 (idr_alloc_cyclic):
//!   a removed one is not reused until the numbers wrap.

use crate::abi::*;
use crate::anon::wait::{Poller, WaitCell};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub(crate) struct Inotify {
    cell: WaitCell<State>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<InotifyEvent>,
    bytes: usize,
    overflowed: bool,
    last_wd: i32,
    wds: HashMap<i32, usize>,
    /// The instance's file is gone: no more events or watches.
    released: bool,
}

impl Inotify {
    pub(crate) fn new() -> Arc<Inotify> {
        Arc::new(Inotify {
            cell: WaitCell::new(State::default()),
        })
    }

    /// Queues one event (fsnotify_add_event with inotify's merge: an event
    /// equal to the last queued one — mask, wd and name; the cookie is not
    /// compared — is dropped), waking readers and pollers.
    pub(super) fn queue(&self, wd: i32, mask: u32, cookie: u32, name: &[u8]) {
        // inotify never reported IN_ISDIR with these two (fsnotify does
        // since 5.x; inotify masks it out to keep its programs working).
        let mask = if mask & (IN_MOVE_SELF | IN_DELETE_SELF) != 0 {
            mask & !IN_ISDIR
        } else {
            mask
        };
        let mut g = self.cell.lock();
        if g.released {
            return;
        }
        if let Some(last) = g.queue.back() {
            if last.mask & IN_IGNORED == 0
                && last.mask == mask
                && last.wd == wd
                && last.name == name
            {
                return;
            }
        }
        let event = if g.queue.len() >= INOTIFY_MAX_QUEUED_EVENTS {
            if g.overflowed {
                return;
            }
            g.overflowed = true;
            InotifyEvent {
                wd: -1,
                mask: IN_Q_OVERFLOW,
                cookie: 0,
                name: Vec::new(),
            }
        } else {
            InotifyEvent {
                wd,
                mask,
                cookie,
                name: name.to_vec(),
            }
        };
        g.bytes += InotifyEvent::record_len(event.name.len());
        g.queue.push_back(event);
        self.cell.wake_keyed(&mut g, EPOLLIN | EPOLLRDNORM, None);
    }

    /// A new watch descriptor for the inode at `inode_addr`.
    pub(super) fn new_wd(&self, inode_addr: usize) -> SysResult<i32> {
        let mut g = self.cell.lock();
        if g.released {
            return Err(Errno::EBADF);
        }
        if g.wds.len() >= INOTIFY_MAX_WATCHES {
            return Err(Errno::ENOSPC);
        }
        let mut wd = g.last_wd;
        loop {
            wd = if wd == i32::MAX { 1 } else { wd + 1 };
            if !g.wds.contains_key(&wd) {
                break;
            }
        }
        g.last_wd = wd;
        g.wds.insert(wd, inode_addr);
        Ok(wd)
    }

    /// The inode address of a live watch descriptor.
    pub(super) fn inode_of(&self, wd: i32) -> Option<usize> {
        self.cell.lock().wds.get(&wd).copied()
    }

    /// Forgets a watch descriptor (its mark went), queueing IN_IGNORED.
    pub(super) fn drop_wd(&self, wd: i32) {
        let present = self.cell.lock().wds.remove(&wd).is_some();
        if present {
            self.queue(wd, IN_IGNORED, 0, b"");
        }
    }

    /// The instance's file went: every watch descriptor, to drop their
    /// marks; nothing is queued any more.
    pub(super) fn release(&self) -> Vec<(i32, usize)> {
        let mut g = self.cell.lock();
        g.released = true;
        g.queue.clear();
        g.bytes = 0;
        g.wds.drain().collect()
    }

    /// inotify_read: whole records while they fit; EINVAL if the first
    /// does not, EAGAIN (non-blocking) or a wait if none is queued.
    pub(crate) fn read(&self, bufs: &mut [&mut [u8]], nonblock: bool) -> SysResult<usize> {
        let room: usize = bufs.iter().map(|b| b.len()).sum();
        let mut g = self.cell.lock();
        while g.queue.is_empty() {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.cell.wait(&mut g);
        }
        let mut out = Vec::new();
        while let Some(e) = g.queue.front() {
            let len = InotifyEvent::record_len(e.name.len());
            if out.len() + len > room {
                break;
            }
            let e = g.queue.pop_front().expect("peeked");
            if e.mask == IN_Q_OVERFLOW && e.wd == -1 {
                g.overflowed = false;
            }
            g.bytes -= len;
            e.encode_into(&mut out);
        }
        drop(g);
        if out.is_empty() {
            return Err(Errno::EINVAL);
        }
        crate::anon::scatter::Scatter::new(bufs).put(&out);
        Ok(out.len())
    }

    /// FIONREAD: the bytes of every queued record.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.cell.lock().bytes
    }

    pub(crate) fn poll(&self, p: Option<&Arc<Poller>>) -> i16 {
        let mut g = self.cell.lock();
        if let Some(p) = p {
            self.cell.register(&mut g, p);
        }
        if g.queue.is_empty() {
            0
        } else {
            POLLIN | POLLRDNORM
        }
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.cell.unregister(p);
    }
}
