//! The pipe buffer, shared by anonymous pipes (`pipe2`) and FIFOs
//! (`mknod S_IFIFO`): a bounded byte queue with reader and writer counts.
//!
//! Invariants (all under the `WaitCell` mutex):
//! - `buf.len() <= cap`; `cap` is a power-of-two number of pages;
//! - `readers`/`writers` count the open files with that access mode (a
//!   FIFO opened O_RDWR counts on both sides); EOF is `writers == 0` with
//!   an empty buffer, EPIPE is `readers == 0`;
//! - a write of at most PIPE_BUF bytes is all-or-nothing (it waits for room
//!   for the whole of it); larger writes may be split;
//! - `read_opens`/`write_opens` only grow (Linux's r_counter/w_counter): a
//!   blocking FIFO open waits until the partner side's count moves past the
//!   value it saw when it counted itself, so a partner that opened and
//!   closed meanwhile still releases it.
//!
//! Capacity is counted in bytes, not in page slots as Linux does: a pipe of
//! 64 KiB holds 65536 bytes however it was written (docs/COMPATIBILITY.md).
//! There are no signals: a write with no reader returns EPIPE without a
//! SIGPIPE.

use super::wait::{partial, Poller, Step, WaitCell};
use crate::abi::*;
use std::collections::VecDeque;
use std::sync::Arc;

pub(crate) struct PipeState {
    buf: VecDeque<u8>,
    cap: usize,
    pub(crate) readers: u32,
    pub(crate) writers: u32,
    /// Ever had a writer (a FIFO reports POLLHUP only after one came and went).
    had_writer: bool,
    read_opens: u64,
    write_opens: u64,
}

/// What a blocking FIFO open still waits for: an open of the other side
/// counted after its own (see `Pipe::wait_for_partner`).
#[must_use]
pub(crate) struct PartnerWait {
    for_writer: bool,
    seen: u64,
}

pub struct Pipe {
    cell: WaitCell<PipeState>,
}

const PAGE: usize = 4096;

/// Linux's round_pipe_size: at least a page, a power of two; 0 if too big.
pub(crate) fn round_pipe_size(size: u64) -> usize {
    if size > 1 << 31 {
        return 0;
    }
    (size as usize).max(PAGE).next_power_of_two()
}

impl Default for Pipe {
    fn default() -> Self {
        Self::new()
    }
}

impl Pipe {
    pub fn new() -> Pipe {
        Pipe {
            cell: WaitCell::new(PipeState {
                buf: VecDeque::new(),
                cap: PIPE_DEF_SIZE,
                readers: 0,
                writers: 0,
                had_writer: false,
                read_opens: 0,
                write_opens: 0,
            }),
        }
    }

    /// A new anonymous pipe with its two ends already counted (no lock:
    /// nobody else can see it yet, so nobody waits to be woken).
    pub(crate) fn with_both_ends() -> Pipe {
        let mut state = PipeState {
            buf: VecDeque::new(),
            cap: PIPE_DEF_SIZE,
            readers: 0,
            writers: 0,
            had_writer: false,
            read_opens: 0,
            write_opens: 0,
        };
        Self::count_open(&mut state, true, true);
        Pipe {
            cell: WaitCell::new(state),
        }
    }

    fn count_open(g: &mut PipeState, read: bool, write: bool) {
        g.readers += read as u32;
        g.writers += write as u32;
        g.read_opens += read as u64;
        g.write_opens += write as u64;
        g.had_writer |= write;
    }

    /// Counts the open of a FIFO (Linux's fifo_open): a write-only
    /// non-blocking open with no reader is ENXIO; a blocking read-only open
    /// with no writer, or write-only open with no reader, must then wait for
    /// its partner with `wait_for_partner` — after the caller has left its
    /// epoch guard, since the wait has no bound.
    pub(crate) fn open_fifo_end(
        &self,
        read: bool,
        write: bool,
        nonblock: bool,
    ) -> SysResult<Option<PartnerWait>> {
        let mut g = self.cell.lock();
        if write && !read && nonblock && g.readers == 0 {
            return Err(Errno::ENXIO);
        }
        Self::count_open(&mut g, read, write);
        self.cell.wake_all(&mut g);
        Ok(match (read, write) {
            (true, false) if !nonblock && g.writers == 0 => Some(PartnerWait {
                for_writer: true,
                seen: g.write_opens,
            }),
            (false, true) if g.readers == 0 => Some(PartnerWait {
                for_writer: false,
                seen: g.read_opens,
            }),
            _ => None,
        })
    }

    /// Sleeps until the partner side has opened since `w` was taken. There
    /// are no signals in vfscale, so, unlike Linux, nothing interrupts it.
    pub(crate) fn wait_for_partner(&self, w: PartnerWait) {
        let mut g = self.cell.lock();
        let opens = |g: &PipeState| {
            if w.for_writer {
                g.write_opens
            } else {
                g.read_opens
            }
        };
        while opens(&g) == w.seen {
            self.cell.wait(&mut g);
        }
    }

    /// Uncounts a closed file; wakes readers (EOF) or writers (EPIPE).
    pub(crate) fn release_end(&self, read: bool, write: bool) {
        let mut g = self.cell.lock();
        g.readers -= read as u32;
        g.writers -= write as u32;
        if g.readers == 0 && g.writers == 0 {
            // Linux frees a FIFO's buffer when the last file closes.
            g.buf = VecDeque::new();
        }
        self.cell.wake_all(&mut g);
    }

    pub(crate) fn read(&self, bufs: &mut [&mut [u8]], nonblock: bool) -> SysResult<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        if want == 0 {
            return Ok(0);
        }
        self.cell.block_on(nonblock, |g| {
            if !g.buf.is_empty() {
                let mut total = 0;
                for b in bufs.iter_mut() {
                    let n = b.len().min(g.buf.len());
                    for (dst, src) in b[..n].iter_mut().zip(g.buf.drain(..n)) {
                        *dst = src;
                    }
                    total += n;
                    if g.buf.is_empty() {
                        break;
                    }
                }
                self.cell.wake_all(g);
                return Step::Done(Ok(total));
            }
            if g.writers == 0 {
                return Step::Done(Ok(0));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })
    }

    pub(crate) fn write(&self, bufs: &[&[u8]], nonblock: bool) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if len == 0 {
            // pipe_write: "Null write succeeds", before the readers are
            // looked at (checked against Linux 6.18 by kernel_diff).
            return Ok(0);
        }
        let atomic = len <= PIPE_BUF;
        let mut src = bufs.iter().flat_map(|b| b.iter().copied());
        let mut done = 0;
        self.cell.block_on(nonblock, |g| {
            if g.readers == 0 {
                return Step::Done(partial(done, Errno::EPIPE));
            }
            let room = g.cap - g.buf.len();
            if room > 0 && (!atomic || room >= len) {
                let n = room.min(len - done);
                g.buf.extend(src.by_ref().take(n));
                done += n;
                self.cell.wake_all(g);
                if done == len {
                    return Step::Done(Ok(done));
                }
            }
            Step::Wait(partial(done, Errno::EAGAIN))
        })
    }

    /// poll readiness for a file with these access modes.
    pub(crate) fn poll(&self, read: bool, write: bool, p: Option<&Arc<Poller>>) -> i16 {
        let mut g = self.cell.lock();
        if let Some(p) = p {
            self.cell.register(&mut g, p);
        }
        let mut m = 0;
        if read {
            if !g.buf.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            if g.writers == 0 && g.had_writer {
                m |= POLLHUP;
            }
        }
        if write {
            if g.cap - g.buf.len() >= PIPE_BUF.min(g.cap) {
                m |= POLLOUT | POLLWRNORM;
            }
            if g.readers == 0 {
                m |= POLLERR;
            }
        }
        m
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.cell.unregister(p);
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cell.lock().cap
    }

    /// F_SETPIPE_SZ: Linux's rounding and errors; returns the new size.
    pub(crate) fn set_capacity(&self, arg: i64, privileged: bool) -> SysResult<usize> {
        let size = if arg < 0 {
            0
        } else {
            round_pipe_size(arg as u64)
        };
        if size == 0 {
            return Err(Errno::EINVAL);
        }
        let mut g = self.cell.lock();
        if size > g.cap && size > PIPE_MAX_SIZE && !privileged {
            return Err(Errno::EPERM);
        }
        if g.buf.len() > size {
            return Err(Errno::EBUSY);
        }
        g.cap = size;
        self.cell.wake_all(&mut g);
        Ok(size)
    }

    /// Bytes queued (for tests and FIONREAD-style queries).
    pub fn queued(&self) -> usize {
        self.cell.lock().buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_pipe_size_matches_linux() {
        assert_eq!(round_pipe_size(0), 4096);
        assert_eq!(round_pipe_size(1), 4096);
        assert_eq!(round_pipe_size(4097), 8192);
        assert_eq!(round_pipe_size(65536), 65536);
        assert_eq!(round_pipe_size(100_000), 131072);
        assert_eq!(round_pipe_size((1 << 31) + 1), 0);
    }
}
