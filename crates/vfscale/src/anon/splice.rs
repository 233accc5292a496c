//! The pipe side of splice(2), tee(2), vmsplice(2) and sendfile(2), after
//! Linux's fs/splice.c: bytes move between a pipe and another file, the
//! caller's memory or another pipe, as whole pipe buffers where Linux
//! moves them whole.
//!
//! Rules this module keeps:
//! - a buffer spliced in from a file or a socket, and tee's copy of a
//!   buffer or the part of one that a splice moves, is never merged into
//!   by a later write (Linux gives page-cache, copied and duplicated
//!   buffers no PIPE_BUF_FLAG_CAN_MERGE); a buffer moved whole from one
//!   pipe to another keeps its flags (packet, mergeable);
//! - a pipe's state mutex is held while `fill` reads the source or `drain`
//!   writes the sink (Linux holds pipe->mutex across splice_read and
//!   splice_write), so the bytes leave the pipe in order and exactly once;
//!   but it is never held across a wait for the other file: a socket
//!   there is read or written without waiting, and a caller that must
//!   wait for it does so with no lock held (`process/splice.rs`,
//!   `wait_ready`), then retries;
//! - two pipes are locked in address order (Linux's pipe_double_lock), and
//!   each is waited on alone (ipipe_prep, opipe_prep) before both are
//!   locked;
//! - the wakes are Linux's: unkeyed, the readers' queue when bytes came in,
//!   the writers' queue when a buffer was used up.

use super::pipe::{Pipe, PipeBuf, PipeState, PAGE, READERS, WRITERS};
use super::wait::{Locked, Patience, Step};
use crate::abi::{Errno, SysResult};

/// Most buffers one splice into a socket sends as one message (Linux's
/// splice_to_socket: an array of 16 bio_vecs).
pub(crate) const SEND_BUFS: usize = 16;

impl Pipe {
    /// Bytes in from a file, a socket or memory: waits for a free slot
    /// (wait_for_space: EPIPE without a reader, EAGAIN when full and not
    /// waiting), then calls `fill(free)` under the pipe's lock. `fill`
    /// returns at most `free` chunks of at most a page each, queued as
    /// buffers no write merges into. Returns the bytes queued, or `fill`'s
    /// error.
    pub(crate) fn splice_in(
        &self,
        patience: Patience,
        mut fill: impl FnMut(usize) -> SysResult<Vec<Vec<u8>>>,
    ) -> SysResult<usize> {
        self.cell.block_on(patience, |g| {
            if g.readers == 0 {
                return Step::Done(Err(Errno::EPIPE));
            }
            if g.full() {
                return Step::Wait(Err(Errno::EAGAIN));
            }
            let chunks = match fill(g.slots - g.bufs.len()) {
                Ok(c) => c,
                Err(e) => return Step::Done(Err(e)),
            };
            let mut queued = 0;
            for data in chunks {
                debug_assert!(!data.is_empty() && data.len() <= PAGE);
                if g.full() {
                    break;
                }
                queued += data.len();
                g.bufs.push_back(PipeBuf {
                    data,
                    start: 0,
                    packet: false,
                    can_merge: false,
                });
            }
            if queued > 0 {
                self.cell.wake_keyed(g, 0, Some(READERS));
            }
            Step::Done(Ok(queued))
        })
    }

    /// Bytes out to a file (splice_from_pipe_next, then the splice_write
    /// loop): waits for data (0 at once if the pipe is empty with no
    /// writer), then hands `drain` the bytes of at most `max_bufs` front
    /// buffers (at most `len` in all) under the pipe's lock, again and
    /// again while it takes all it is given and bytes remain. What `drain`
    /// took leaves the pipe. Returns the bytes taken, or `drain`'s error if
    /// it took none.
    pub(crate) fn splice_out(
        &self,
        patience: Patience,
        len: usize,
        max_bufs: usize,
        mut drain: impl FnMut(&[u8]) -> SysResult<usize>,
    ) -> SysResult<usize> {
        self.cell.block_on(patience, |g| {
            if g.bufs.is_empty() {
                if g.writers == 0 {
                    return Step::Done(Ok(0));
                }
                return Step::Wait(Err(Errno::EAGAIN));
            }
            let mut done = 0;
            let mut freed = false;
            let mut failed = None;
            while done < len && !g.bufs.is_empty() {
                let mut chunk = Vec::new();
                for b in g.bufs.iter().take(max_bufs) {
                    let n = b.unread().min(len - done - chunk.len());
                    chunk.extend_from_slice(&b.data[b.start..b.start + n]);
                    if done + chunk.len() == len {
                        break;
                    }
                }
                let took = match drain(&chunk) {
                    Ok(n) => n.min(chunk.len()),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                };
                freed |= consume(g, took);
                done += took;
                if took < chunk.len() || took == 0 {
                    break;
                }
            }
            if freed {
                self.cell.wake_keyed(g, 0, Some(WRITERS));
            }
            Step::Done(match failed {
                Some(e) if done == 0 => Err(e),
                _ => Ok(done),
            })
        })
    }

    /// ipipe_prep: waits until the pipe has a buffer or no writer.
    fn wait_for_data(&self, patience: Patience) -> SysResult<()> {
        self.cell.block_on(patience, |g| {
            if !g.bufs.is_empty() || g.writers == 0 {
                Step::Done(Ok(()))
            } else {
                Step::Wait(Err(Errno::EAGAIN))
            }
        })
    }

    /// opipe_prep: waits until the pipe has a free slot (EPIPE if it is
    /// full with no reader).
    fn wait_for_room(&self, patience: Patience) -> SysResult<()> {
        self.cell.block_on(patience, |g| {
            if !g.full() {
                Step::Done(Ok(()))
            } else if g.readers == 0 {
                Step::Done(Err(Errno::EPIPE))
            } else {
                Step::Wait(Err(Errno::EAGAIN))
            }
        })
    }

    /// splice_pipe_to_pipe: moves up to `len` bytes of this pipe's buffers
    /// to `out`, whole buffers as they are, the last one split if `len`
    /// ends inside it. The caller has checked that the pipes differ.
    pub(crate) fn splice_to_pipe(
        &self,
        out: &Pipe,
        len: usize,
        nonblock: bool,
    ) -> SysResult<usize> {
        let patience = Patience::of(nonblock);
        loop {
            self.wait_for_data(patience)?;
            out.wait_for_room(patience)?;
            let (mut gi, mut go) = lock_both(self, out);
            let mut moved = 0;
            let mut input_freed = false;
            // What an empty input or a full output means once the pipes
            // are locked: nothing moved yet, and 0 would mean EOF.
            let mut stuck = None;
            while moved < len {
                if go.readers == 0 {
                    if moved == 0 {
                        stuck = Some(Errno::EPIPE);
                    }
                    break;
                }
                if gi.bufs.is_empty() && gi.writers == 0 {
                    break;
                }
                let Some(front) = gi.bufs.front_mut().filter(|_| !go.full()) else {
                    if moved == 0 {
                        // Raced with another reader or writer: EAGAIN, or
                        // wait again (`Errno::EINTR` marks the retry).
                        stuck = Some(if nonblock {
                            Errno::EAGAIN
                        } else {
                            Errno::EINTR
                        });
                    }
                    break;
                };
                let left = len - moved;
                if left >= front.unread() {
                    let whole = gi.bufs.pop_front().expect("the front exists");
                    input_freed = true;
                    moved += whole.unread();
                    go.bufs.push_back(whole);
                } else {
                    let part = front.data[front.start..front.start + left].to_vec();
                    front.start += left;
                    let packet = front.packet;
                    go.bufs.push_back(PipeBuf {
                        data: part,
                        start: 0,
                        packet,
                        can_merge: false,
                    });
                    moved += left;
                }
            }
            if moved > 0 {
                out.cell.wake_keyed(&mut go, 0, Some(READERS));
            }
            if input_freed {
                self.cell.wake_keyed(&mut gi, 0, Some(WRITERS));
            }
            match stuck {
                Some(Errno::EINTR) => continue,
                Some(e) => return Err(e),
                None => return Ok(moved),
            }
        }
    }

    /// tee's link_pipe: copies up to `len` bytes of this pipe's buffers,
    /// from the front, to `out` without taking them from this pipe. The
    /// caller has checked that the pipes differ.
    pub(crate) fn tee_to(&self, out: &Pipe, len: usize, nonblock: bool) -> SysResult<usize> {
        let patience = Patience::of(nonblock);
        self.wait_for_data(patience)?;
        out.wait_for_room(patience)?;
        let (gi, mut go) = lock_both(self, out);
        // link_pipe asks for a reader first, even of an empty input (whose
        // writers are gone: the waits let it through); the count cannot
        // change while the lock is held.
        if go.readers == 0 {
            return Err(Errno::EPIPE);
        }
        let mut copied = 0;
        for b in gi.bufs.iter() {
            if go.full() || copied == len {
                break;
            }
            let n = b.unread().min(len - copied);
            go.bufs.push_back(PipeBuf {
                data: b.data[b.start..b.start + n].to_vec(),
                start: 0,
                packet: b.packet,
                can_merge: false,
            });
            copied += n;
        }
        if copied > 0 {
            out.cell.wake_keyed(&mut go, 0, Some(READERS));
        }
        Ok(copied)
    }

    /// Whether `other` is this pipe (splicing a pipe to itself is EINVAL).
    pub(crate) fn is(&self, other: &Pipe) -> bool {
        std::ptr::eq(self, other)
    }
}

/// Takes `n` bytes from the front buffers; true if a buffer was used up.
fn consume(g: &mut Locked<'_, PipeState>, mut n: usize) -> bool {
    let mut freed = false;
    while n > 0 {
        let Some(b) = g.bufs.front_mut() else {
            break;
        };
        let k = b.unread().min(n);
        b.start += k;
        n -= k;
        if b.unread() == 0 {
            g.bufs.pop_front();
            freed = true;
        }
    }
    freed
}

/// Both pipes' state, locked in address order (pipe_double_lock).
fn lock_both<'a>(a: &'a Pipe, b: &'a Pipe) -> (Locked<'a, PipeState>, Locked<'a, PipeState>) {
    if (a as *const Pipe) < (b as *const Pipe) {
        let ga = a.cell.lock();
        (ga, b.cell.lock())
    } else {
        let gb = b.cell.lock();
        (a.cell.lock(), gb)
    }
}

/// `len` bytes of a file from `pos`, split where splice_read splits them
/// into buffers: at the file's page boundaries (a page-cache read), or
/// every page from the first byte (`aligned` false: Linux's
/// copy_splice_read, for O_DIRECT files and sockets).
pub(crate) fn page_chunks(data: Vec<u8>, pos: u64, aligned: bool) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut rest = &data[..];
    let mut first = if aligned {
        PAGE - (pos % PAGE as u64) as usize
    } else {
        PAGE
    };
    while !rest.is_empty() {
        let (c, tail) = rest.split_at(first.min(rest.len()));
        chunks.push(c.to_vec());
        rest = tail;
        first = PAGE;
    }
    chunks
}

/// vmsplice's iter_to_pipe: at most `slots` buffers of the first `total`
/// bytes of `bufs`, each segment split at the pages of its addresses (a
/// buffer per page of the caller's memory it covers).
pub(crate) fn user_pages(bufs: &[&mut [u8]], total: usize, slots: usize) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut left = total;
    for b in bufs {
        let mut seg = &b[..b.len().min(left)];
        left -= seg.len();
        while !seg.is_empty() {
            if chunks.len() == slots {
                return chunks;
            }
            let in_page = PAGE - seg.as_ptr() as usize % PAGE;
            let (c, rest) = seg.split_at(in_page.min(seg.len()));
            chunks.push(c.to_vec());
            seg = rest;
        }
    }
    chunks
}

/// The most bytes `slots` buffers hold from `pos` (see `page_chunks`).
pub(crate) fn slots_bytes(slots: usize, pos: u64, aligned: bool) -> usize {
    let skew = if aligned {
        (pos % PAGE as u64) as usize
    } else {
        0
    };
    (slots * PAGE).saturating_sub(skew)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_page_boundaries() {
        let sizes = |v: Vec<Vec<u8>>| v.iter().map(Vec::len).collect::<Vec<_>>();
        assert_eq!(
            sizes(page_chunks(vec![0; 9000], 100, true)),
            [3996, 4096, 908]
        );
        assert_eq!(
            sizes(page_chunks(vec![0; 9000], 100, false)),
            [4096, 4096, 808]
        );
        assert_eq!(sizes(page_chunks(vec![0; 10], 4095, true)), [1, 9]);
        assert!(page_chunks(Vec::new(), 0, true).is_empty());
        assert_eq!(slots_bytes(16, 100, true), 16 * 4096 - 100);
        assert_eq!(slots_bytes(16, 100, false), 16 * 4096);
    }

    #[test]
    fn user_pages_follow_the_callers_page_boundaries() {
        let mut mem = vec![0u8; 3 * PAGE];
        let base = (PAGE - mem.as_ptr() as usize % PAGE) % PAGE;
        let sizes = |v: Vec<Vec<u8>>| v.iter().map(Vec::len).collect::<Vec<_>>();
        let (a, b) = mem[base..].split_at_mut(PAGE - 6);
        let bufs = [&mut a[PAGE - 16..], &mut b[..10]];
        // Ten bytes before a page boundary, then six before and four after.
        assert_eq!(sizes(user_pages(&bufs, 20, 16)), [10, 6, 4]);
        assert_eq!(sizes(user_pages(&bufs, 20, 2)), [10, 6]);
        assert_eq!(sizes(user_pages(&bufs, 13, 16)), [10, 3]);
    }
}
