//! The pipe buffer, shared by anonymous pipes (`pipe2`) and FIFOs
//! (`mknod S_IFIFO`): Linux's ring of page buffers, with reader and writer
//! counts.
//!
//! Invariants (all under the `WaitCell` mutex):
//! - `bufs.len() <= slots`, and `slots * PAGE` is the pipe's size
//!   (F_GETPIPE_SZ), a power-of-two number of pages; a buffer holds at
//!   most a page and is never empty while queued;
//! - a write first tops up the last buffer, if that one can be merged
//!   into (written, not a packet, not spliced: `PipeBuf::can_merge`) and
//!   the write's last partial page fits behind its data (how
//!   Linux's pipe_write merges small writes), then takes whole new slots;
//!   so a write of at most a page (PIPE_BUF) is all-or-nothing;
//! - packet mode (Linux's PIPE_BUF_FLAG_PACKET, asked for by a writing
//!   file with O_DIRECT): each new slot the write takes is one packet,
//!   never merged into; a read that reaches a packet takes at most that
//!   packet, drops what of it did not fit, and ends there;
//! - `readers`/`writers` count the open files with that access mode (a
//!   FIFO opened O_RDWR counts on both sides); EOF is `writers == 0` with
//!   an empty buffer, EPIPE is `readers == 0`;
//! - `read_opens`/`write_opens` only grow (Linux's r_counter/w_counter): a
//!   blocking FIFO open waits until the partner side's count moves past the
//!   value it saw when it counted itself, so a partner that opened and
//!   closed meanwhile still releases it.
//!
//! Capacity is counted in slots, as Linux does: a pipe of 64 KiB takes 16
//! writes of 3000 bytes (48,000 bytes), or 16 packets of one byte. There
//! are no signals: a write with no reader returns EPIPE without a SIGPIPE.

use super::scatter::Scatter;
use super::wait::{partial, Patience, Poller, Step, WaitCell};
use crate::abi::*;
use std::collections::VecDeque;
use std::sync::Arc;

/// One slot's buffer: `data[start..]` is unread. `data.len()` is where in
/// its page the written bytes end (a merge must fit within the page).
pub(super) struct PipeBuf {
    pub(super) data: Vec<u8>,
    pub(super) start: usize,
    pub(super) packet: bool,
    /// Linux's PIPE_BUF_FLAG_CAN_MERGE: a write may top this buffer up.
    /// Written buffers have it unless they are packets; spliced ones
    /// (`anon/splice.rs`) never do.
    pub(super) can_merge: bool,
}

// The merge flag sits in the padding the packet flag left: a buffer's
// record stays five words.
const _: () = assert!(core::mem::size_of::<PipeBuf>() == 40);

impl PipeBuf {
    pub(super) fn unread(&self) -> usize {
        self.data.len() - self.start
    }
}

pub(crate) struct PipeState {
    pub(super) bufs: VecDeque<PipeBuf>,
    /// The ring's size in pages (Linux's max_usage).
    pub(super) slots: usize,
    pub(crate) readers: u32,
    pub(crate) writers: u32,
    /// Ever had a writer (a FIFO reports POLLHUP only after one came and went).
    had_writer: bool,
    read_opens: u64,
    write_opens: u64,
}

impl PipeState {
    fn new() -> PipeState {
        PipeState {
            bufs: VecDeque::new(),
            slots: PIPE_DEF_SIZE / PAGE,
            readers: 0,
            writers: 0,
            had_writer: false,
            read_opens: 0,
            write_opens: 0,
        }
    }

    pub(super) fn full(&self) -> bool {
        self.bufs.len() >= self.slots
    }
}

/// What a blocking FIFO open still waits for: an open of the other side
/// counted after its own (see `Pipe::wait_for_partner`).
#[must_use]
pub(crate) struct PartnerWait {
    for_writer: bool,
    seen: u64,
}

pub struct Pipe {
    pub(super) cell: WaitCell<PipeState>,
}

pub(super) const PAGE: usize = 4096;

/// The pipe's wait queues, as Linux's rd_wait and wr_wait (`Poller`'s
/// queue bits).
pub(super) const READERS: usize = 0;
pub(super) const WRITERS: usize = 1;

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
            cell: WaitCell::new(PipeState::new()),
        }
    }

    /// A new anonymous pipe with its two ends already counted (no lock:
    /// nobody else can see it yet, so nobody waits to be woken).
    pub(crate) fn with_both_ends() -> Pipe {
        let mut state = PipeState::new();
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
            g.bufs = VecDeque::new();
        }
        self.cell.wake_all(&mut g);
    }

    /// pipe_read: whole buffers in order, until `bufs` are full, the pipe
    /// is empty, or a packet was read (what of it did not fit is dropped).
    pub(crate) fn read(&self, bufs: &mut [&mut [u8]], nonblock: bool) -> SysResult<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        if want == 0 {
            return Ok(0);
        }
        let mut out = Scatter::new(bufs);
        self.cell.block_on(Patience::of(nonblock), |g| {
            if !g.bufs.is_empty() {
                let mut total = 0;
                // pipe_read wakes the writers' pollers only if a buffer it
                // emptied had left the pipe full.
                let mut was_full = false;
                while let Some(b) = g.bufs.front_mut() {
                    let n = b.unread().min(want - total);
                    out.put(&b.data[b.start..b.start + n]);
                    b.start += n;
                    total += n;
                    let packet = b.packet;
                    if packet || b.unread() == 0 {
                        was_full |= g.full();
                        g.bufs.pop_front();
                    }
                    if packet || total == want {
                        break;
                    }
                }
                if was_full {
                    self.cell
                        .wake_keyed(g, EPOLLOUT | EPOLLWRNORM, Some(WRITERS));
                } else {
                    self.cell.notify_blocked(g);
                }
                return Step::Done(Ok(total));
            }
            if g.writers == 0 {
                return Step::Done(Ok(0));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })
    }

    /// pipe_write: `packet` when the writing file has O_DIRECT.
    pub(crate) fn write(&self, bufs: &[&[u8]], nonblock: bool, packet: bool) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if len == 0 {
            // pipe_write: "Null write succeeds", before the readers are
            // looked at (checked against Linux 6.18 by kernel_diff).
            return Ok(0);
        }
        let mut src = bufs.iter().flat_map(|b| b.iter().copied());
        let mut done = 0;
        let mut first = true;
        // pipe_write wakes the readers' queue with EPOLLIN at its end
        // whatever it wrote, EPIPE and EAGAIN included ("Epoll
        // nonsensically wants a wakeup": once anyone polled the pipe,
        // Linux's poll_usage), and whenever it made progress.
        let wake_readers = |g: &mut super::wait::Locked<'_, PipeState>| {
            self.cell
                .wake_keyed(g, EPOLLIN | EPOLLRDNORM, Some(READERS));
        };
        self.cell.block_on(Patience::of(nonblock), |g| {
            if g.readers == 0 {
                wake_readers(g);
                return Step::Done(partial(done, Errno::EPIPE));
            }
            if std::mem::take(&mut first) {
                // The write's last partial page joins the last buffer if it
                // fits there (from the front of the data, as Linux copies
                // it); only tried before the first wait.
                let tail = len % PAGE;
                if let Some(last) = g.bufs.back_mut() {
                    if tail > 0 && last.can_merge && last.data.len() + tail <= PAGE {
                        last.data.extend(src.by_ref().take(tail));
                        done = tail;
                    }
                }
            }
            let before = done;
            while done < len && !g.full() {
                let n = (len - done).min(PAGE);
                let mut data = Vec::with_capacity(n);
                data.extend(src.by_ref().take(n));
                g.bufs.push_back(PipeBuf {
                    data,
                    start: 0,
                    packet,
                    can_merge: !packet,
                });
                done += n;
            }
            if done > before || done == len || nonblock {
                wake_readers(g);
            }
            if done == len {
                return Step::Done(Ok(done));
            }
            Step::Wait(partial(done, Errno::EAGAIN))
        })
    }

    /// poll readiness for a file with these access modes.
    pub(crate) fn poll(&self, read: bool, write: bool, p: Option<&Arc<Poller>>) -> i16 {
        let mut g = self.cell.lock();
        if let Some(p) = p {
            // pipe_poll waits on the readers' queue for a reading file,
            // on the writers' for a writing one.
            self.cell.register_on(
                &mut g,
                p,
                u8::from(read) << READERS | u8::from(write) << WRITERS,
            );
        }
        let mut m = 0;
        if read {
            if !g.bufs.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            if g.writers == 0 && g.had_writer {
                m |= POLLHUP;
            }
        }
        if write {
            if !g.full() {
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
        self.cell.lock().slots * PAGE
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
        if size > g.slots * PAGE && size > PIPE_MAX_SIZE && !privileged {
            return Err(Errno::EPERM);
        }
        // pipe_resize_ring: the buffers in use must fit the new ring.
        if g.bufs.len() > size / PAGE {
            return Err(Errno::EBUSY);
        }
        g.slots = size / PAGE;
        self.cell.wake_all(&mut g);
        Ok(size)
    }

    /// Bytes queued (for tests and FIONREAD-style queries).
    pub fn queued(&self) -> usize {
        self.cell.lock().bufs.iter().map(PipeBuf::unread).sum()
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
