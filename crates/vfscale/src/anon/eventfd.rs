//! eventfd: a 64-bit counter. A file owns its `EventFd` (dup and fork share
//! the file, so the counter); all eventfd files share the namespace's one
//! anonymous inode, as Linux's `anon_inode:[eventfd]`, without taking a
//! reference on it (the namespace pins it), so creating one writes no
//! shared memory.
//!
//! Invariants (under the `WaitCell` mutex): `count <= u64::MAX - 1`.

use super::wait::{Poller, WaitCell};
use crate::abi::*;
use std::sync::Arc;

const MAX: u64 = u64::MAX - 1;

/// One cache line, so it comes from the slab's 64-byte class (an
/// allocator call per eventfd was a sixth of its create+close).
#[repr(align(64))]
pub struct EventFd {
    cell: WaitCell<u64>,
    semaphore: bool,
}

impl crate::mem::slab::SlabPool for EventFd {
    const POOL: usize = crate::mem::slab::class_of::<EventFd>();
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<EventFd>() == 64);

impl EventFd {
    pub(crate) fn new(init: u32, semaphore: bool) -> EventFd {
        EventFd {
            cell: WaitCell::new(u64::from(init)),
            semaphore,
        }
    }

    pub(crate) fn read(&self, buf: &mut [u8], nonblock: bool) -> SysResult<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let mut g = self.cell.lock();
        while *g == 0 {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.cell.wait(&mut g);
        }
        let v = if self.semaphore { 1 } else { *g };
        *g -= v;
        // eventfd_read wakes with EPOLLOUT.
        self.cell.wake_keyed(&mut g, EPOLLOUT, None);
        buf[..8].copy_from_slice(&v.to_ne_bytes());
        Ok(8)
    }

    pub(crate) fn write(&self, buf: &[u8], nonblock: bool) -> SysResult<usize> {
        // Exactly the 8-byte counter (Linux's eventfd_write).
        let bytes: [u8; 8] = buf.try_into().map_err(|_| Errno::EINVAL)?;
        let v = u64::from_ne_bytes(bytes);
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        let mut g = self.cell.lock();
        while MAX - *g < v {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.cell.wait(&mut g);
        }
        *g += v;
        // eventfd_write wakes with EPOLLIN, even for 0 (an edge-triggered
        // watcher sees it).
        self.cell.wake_keyed(&mut g, EPOLLIN, None);
        Ok(8)
    }

    pub(crate) fn poll(&self, p: Option<&Arc<Poller>>) -> i16 {
        let mut g = self.cell.lock();
        if let Some(p) = p {
            self.cell.register(&mut g, p);
        }
        let mut m = 0;
        if *g > 0 {
            m |= POLLIN | POLLRDNORM;
        }
        if *g < MAX {
            m |= POLLOUT | POLLWRNORM;
        }
        m
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.cell.unregister(p);
    }
}
