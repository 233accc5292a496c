//! AF_UNIX sockets: a bare unconnected socket (`socket`) or one end of a
//! connected pair (`socketpair`). The pair shares one `Conn`: two
//! directions, each a bounded queue (bytes for SOCK_STREAM, whole messages
//! for SOCK_DGRAM and SOCK_SEQPACKET), and each side's shutdown bits.
//!
//! Invariants (under the `Conn` mutex):
//! - side `s` reads `dirs[s]` and writes `dirs[1 - s]`;
//! - `dirs[d].queued <= SOCK_BUF` (bytes, or message bytes);
//! - `own[s]` holds what side `s` asked with shutdown(); `closed[s]` is set
//!   once, by the final close of side `s`'s file. The effective shutdown
//!   of a side is computed from both sides' bits as Linux propagates them
//!   (stream and seqpacket propagate to the peer; datagram does not).
//!
//! Buffer accounting is by payload bytes against one 212992-byte budget
//! per direction (Linux's default wmem), not skb truesize, so Linux fits
//! somewhat less in practice (docs/COMPATIBILITY.md). No signals: a write
//! to a shut-down stream returns EPIPE without SIGPIPE.

use super::wait::{partial, Poller, Step, WaitCell};
use crate::abi::*;
use std::collections::VecDeque;
use std::sync::Arc;

/// Per-direction buffer budget (Linux's net.core.wmem_default).
pub const SOCK_BUF: usize = 212_992;

const RCV: u8 = 1;
const SEND: u8 = 2;

#[derive(Default)]
struct Dir {
    bytes: VecDeque<u8>,
    msgs: VecDeque<Vec<u8>>,
    queued: usize,
}

#[derive(Default)]
struct ConnState {
    dirs: [Dir; 2],
    own: [u8; 2],
    closed: [bool; 2],
    /// A pending error per side (ECONNRESET when the peer closed with
    /// unread data), reported once.
    err: [Option<Errno>; 2],
    /// A datagram side whose send found its peer gone: Linux's
    /// unix_dgram_sendmsg answered ECONNREFUSED once and dropped the peer,
    /// so later sends are ENOTCONN.
    disconnected: [bool; 2],
}

pub(crate) struct Conn {
    cell: WaitCell<ConnState>,
}

pub struct Socket {
    ty: i32,
    side: usize,
    conn: Option<Arc<Conn>>,
}

impl ConnState {
    fn rcv_shut(&self, ty: i32, s: usize) -> bool {
        let p = 1 - s;
        self.own[s] & RCV != 0 || (ty != SOCK_DGRAM && (self.own[p] & SEND != 0 || self.closed[p]))
    }

    fn send_shut(&self, ty: i32, s: usize) -> bool {
        let p = 1 - s;
        self.own[s] & SEND != 0 || self.own[p] & RCV != 0 || (ty != SOCK_DGRAM && self.closed[p])
    }
}

impl Socket {
    /// An unconnected socket.
    pub(crate) fn unconnected(ty: i32) -> Socket {
        Socket {
            ty,
            side: 0,
            conn: None,
        }
    }

    /// Both ends of a connected pair.
    pub(crate) fn pair(ty: i32) -> (Socket, Socket) {
        let conn = Arc::new(Conn {
            cell: WaitCell::new(ConnState::default()),
        });
        (
            Socket {
                ty,
                side: 0,
                conn: Some(conn.clone()),
            },
            Socket {
                ty,
                side: 1,
                conn: Some(conn),
            },
        )
    }

    pub fn socket_type(&self) -> i32 {
        self.ty
    }

    /// The final close of this socket's file.
    pub(crate) fn release(&self) {
        let Some(c) = &self.conn else { return };
        let mut g = c.cell.lock();
        let s = self.side;
        let unread = g.dirs[s].queued > 0 || !g.dirs[s].bytes.is_empty();
        if unread && self.ty != SOCK_DGRAM {
            g.err[1 - s] = Some(Errno::ECONNRESET);
        }
        g.closed[s] = true;
        g.dirs[s] = Dir::default();
        c.cell.wake_all(&mut g);
    }

    pub(crate) fn shutdown(&self, how: i32) -> SysResult<()> {
        let bits = match how {
            SHUT_RD => RCV,
            SHUT_WR => SEND,
            SHUT_RDWR => RCV | SEND,
            _ => return Err(Errno::EINVAL),
        };
        if let Some(c) = &self.conn {
            let mut g = c.cell.lock();
            g.own[self.side] |= bits;
            c.cell.wake_all(&mut g);
        }
        Ok(())
    }

    pub(crate) fn read(&self, bufs: &mut [&mut [u8]], nonblock: bool) -> SysResult<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        let Some(c) = &self.conn else {
            return match self.ty {
                SOCK_STREAM => Err(Errno::EINVAL),
                SOCK_SEQPACKET => Err(Errno::ENOTCONN),
                // An unconnected datagram socket would wait for a datagram
                // nobody can send it; rather than sleep forever, a blocking
                // read says EAGAIN too (docs/COMPATIBILITY.md).
                _ => Err(Errno::EAGAIN),
            };
        };
        let s = self.side;
        if self.ty == SOCK_STREAM && want == 0 {
            return Ok(0);
        }
        c.cell.block_on(nonblock, |g| {
            if self.ty == SOCK_STREAM {
                if !g.dirs[s].bytes.is_empty() {
                    let d = &mut g.dirs[s];
                    let mut total = 0;
                    for b in bufs.iter_mut() {
                        let n = b.len().min(d.bytes.len());
                        for (dst, src) in b[..n].iter_mut().zip(d.bytes.drain(..n)) {
                            *dst = src;
                        }
                        total += n;
                    }
                    d.queued -= total;
                    c.cell.wake_all(g);
                    return Step::Done(Ok(total));
                }
            } else if let Some(m) = g.dirs[s].msgs.pop_front() {
                g.dirs[s].queued -= m.len();
                // Copy what fits; the rest of the message is discarded.
                let mut at = 0;
                for b in bufs.iter_mut() {
                    let n = b.len().min(m.len() - at);
                    b[..n].copy_from_slice(&m[at..at + n]);
                    at += n;
                }
                c.cell.wake_all(g);
                return Step::Done(Ok(at));
            }
            if let Some(e) = g.err[s].take() {
                return Step::Done(Err(e));
            }
            if g.rcv_shut(self.ty, s) {
                return Step::Done(Ok(0));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })
    }

    pub(crate) fn write(&self, bufs: &[&[u8]], nonblock: bool) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let Some(c) = &self.conn else {
            return Err(Errno::ENOTCONN);
        };
        let s = self.side;
        let p = 1 - s;
        if self.ty != SOCK_STREAM {
            if len > SOCK_BUF - 32 {
                return Err(Errno::EMSGSIZE);
            }
            return c.cell.block_on(nonblock, |g| {
                // unix_seqpacket_sendmsg reports (and clears) a pending
                // error first: ECONNRESET after the peer closed unread.
                if self.ty == SOCK_SEQPACKET {
                    if let Some(e) = g.err[s].take() {
                        return Step::Done(Err(e));
                    }
                }
                if g.send_shut(self.ty, s) {
                    return Step::Done(Err(Errno::EPIPE));
                }
                if g.disconnected[s] {
                    return Step::Done(Err(Errno::ENOTCONN));
                }
                if g.closed[p] {
                    g.disconnected[s] = true;
                    return Step::Done(Err(Errno::ECONNREFUSED));
                }
                if g.dirs[p].queued + len <= SOCK_BUF {
                    let m: Vec<u8> = bufs.concat();
                    let d = &mut g.dirs[p];
                    d.queued += len;
                    d.msgs.push_back(m);
                    c.cell.wake_all(g);
                    return Step::Done(Ok(len));
                }
                Step::Wait(Err(Errno::EAGAIN))
            });
        }
        if len == 0 {
            // unix_stream_sendmsg checks the shutdown state before its
            // (empty) send loop: EPIPE once the peer is gone.
            return c.cell.block_on(nonblock, |g| {
                Step::Done(if g.send_shut(self.ty, s) {
                    Err(Errno::EPIPE)
                } else {
                    Ok(0)
                })
            });
        }
        let mut src = bufs.iter().flat_map(|b| b.iter().copied());
        let mut done = 0;
        c.cell.block_on(nonblock, |g| {
            if g.send_shut(self.ty, s) {
                return Step::Done(partial(done, Errno::EPIPE));
            }
            let room = SOCK_BUF - g.dirs[p].queued;
            if room > 0 {
                let n = room.min(len - done);
                let d = &mut g.dirs[p];
                d.bytes.extend(src.by_ref().take(n));
                d.queued += n;
                done += n;
                c.cell.wake_all(g);
                if done == len {
                    return Step::Done(Ok(done));
                }
            }
            Step::Wait(partial(done, Errno::EAGAIN))
        })
    }

    pub(crate) fn poll(&self, p: Option<&Arc<Poller>>) -> i16 {
        let Some(c) = &self.conn else {
            // Nothing queued is always writable; an unconnected stream or
            // seqpacket socket is "closed" (POLLHUP), as unix_poll says.
            return if self.ty == SOCK_DGRAM {
                POLLOUT | POLLWRNORM
            } else {
                POLLOUT | POLLWRNORM | POLLHUP
            };
        };
        let mut g = c.cell.lock();
        if let Some(p) = p {
            c.cell.register(&mut g, p);
        }
        let s = self.side;
        let mut m = 0;
        if g.err[s].is_some() {
            m |= POLLERR;
        }
        let rcv = g.rcv_shut(self.ty, s);
        if rcv && g.send_shut(self.ty, s) {
            m |= POLLHUP;
        }
        if rcv {
            m |= POLLRDHUP | POLLIN | POLLRDNORM;
        }
        if g.dirs[s].queued > 0 || !g.dirs[s].msgs.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        if g.dirs[1 - s].queued * 4 <= SOCK_BUF {
            m |= POLLOUT | POLLWRNORM;
        }
        m
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        if let Some(c) = &self.conn {
            c.cell.unregister(p);
        }
    }
}
