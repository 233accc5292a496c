//! AF_UNIX datagram sockets (SOCK_DGRAM), as Linux's unix_dgram_*: every
//! socket owns its receive queue of whole messages; a send puts one on the
//! queue of its receiver — the default peer (`connect`, `socketpair`) or
//! the socket a name leads to (`sendto`) — and counts its bytes against
//! the *sender's* budget (`wmem`, Linux's sk_wmem_alloc) until the
//! receiver takes or drops it. A receiver not connected back to a sender
//! takes at most `MAX_DGRAM_QLEN + 1` of its messages before that sender
//! waits (unix_recvq_full; a socketpair's two ends have no such limit).
//!
//! Invariants:
//! - A socket's `DgramState` is under its own `WaitCell` mutex, and no path
//!   holds two sockets' mutexes at once: a send charges its own budget
//!   under its own lock, then queues under the receiver's; whoever removes
//!   a message (a read, a purge, the receiver's final close) gives its
//!   bytes back to the sender (`uncharge`) after dropping the receiver's
//!   lock. (Linux takes both sockets' locks for connect; a connect racing
//!   a send to the same receiver may let that one message through under
//!   the old peer rule.)
//! - `wmem` is the sum of the truesizes (`message_truesize`, Linux's skb
//!   accounting) of this socket's messages still in a queue, plus those
//!   being sent; a send is let in while `wmem` is below the socket's
//!   SO_SNDBUF, as sock_alloc_send_pskb (so the last one may overshoot).
//! - A queued `Datagram` holds its sender (`from`): the receiver reads the
//!   sender's name when the message is taken, as Linux's unix_copy_addr.
//! - The final close (`release`) marks the socket dead and drops its peer
//!   and its queue, so references between sockets (peers, queued senders)
//!   never outlive both final closes: no `Arc` cycle survives them.
//! - `shut` holds the SHUT_RD/SHUT_WR bits asked on this socket (datagram
//!   shutdowns do not propagate to the peer, as Linux).

use super::creds::{reported, MsgCreds, SendCreds};
use super::rights::{Flight, InFlight};
use super::scatter::Scatter;
use super::socket::{has_write_room, message_truesize, SockCell, SockName, RCV, SEND};
use super::sockopt::pick_message;
use super::wait::{Patience, Poller, Step, WaitCell};
use crate::abi::*;
use crate::file::FileRef;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};

/// A datagram socket's wait queues (`WaitCell::register_on`): its own
/// (Linux's sk_wq: its readers, and its writers waiting for their own
/// budget) and its senders' (peer_wait: other sockets' writers waiting
/// for room in its queue).
const OWN: usize = 0;
const SENDERS: usize = 1;
use std::sync::Arc;

struct Datagram {
    data: Vec<u8>,
    from: Arc<Dgram>,
    files: Option<InFlight>,
    creds: MsgCreds,
    /// An empty datagram a peek returned (SO_PEEK_OFF then passes it).
    peeked: bool,
}

#[derive(Default)]
struct DgramState {
    queue: VecDeque<Datagram>,
    /// The default peer (connect, socketpair): where a send without a name
    /// goes, and the only sender this socket accepts while set.
    peer: Option<Arc<Dgram>>,
    /// A pending error (ECONNRESET when the peer left us with our messages
    /// unread), reported once.
    err: Option<Errno>,
    wmem: usize,
    /// The final close happened.
    dead: bool,
}

pub(crate) struct Dgram {
    cell: WaitCell<DgramState>,
    shut: AtomicU8,
    /// The socket's cell (shared with its `Socket`): its name, which bind
    /// sets, and its flight (anon/rights.rs), which counts the files
    /// queued here.
    socket: SockCell,
}

/// What a receive took: the bytes copied (or, with `MSG_TRUNC`, the whole
/// message's length), the sender's name (empty if it has none), the files
/// the message carried (the caller's to install or put), whether the
/// message was longer than the buffers, and the credentials a receiver
/// with SO_PASSCRED reads (None without the option, or when nothing was
/// taken: anon/creds.rs).
pub(crate) struct Received {
    pub len: usize,
    pub from: SockName,
    pub files: Vec<FileRef>,
    pub truncated: bool,
    pub creds: Option<Ucred>,
}

/// A send to `target` is allowed unless it has a default peer other than
/// `me` (unix_may_send).
fn accepts_from(me: &Arc<Dgram>, target: &DgramState) -> bool {
    target.peer.as_ref().is_none_or(|p| Arc::ptr_eq(p, me))
}

pub(crate) fn unnamed() -> SockName {
    Arc::from(&b""[..])
}

/// Gives every message of `purged` (from the queue `flight` counts) back
/// to its sender's budget; returns the files they carried.
fn uncharge_all(purged: VecDeque<Datagram>, flight: &Flight) -> Vec<FileRef> {
    let mut files = Vec::new();
    for d in purged {
        d.from.uncharge(message_truesize(d.data.len()));
        files.extend(d.files.map(|f| f.leave(flight)).unwrap_or_default());
    }
    files
}

impl Dgram {
    /// A socket named through `name` (its `Socket`'s cell).
    pub(crate) fn new(socket: SockCell) -> Arc<Dgram> {
        Arc::new(Dgram {
            cell: WaitCell::new(DgramState::default()),
            shut: AtomicU8::new(0),
            socket,
        })
    }

    /// Makes `a` and `b` each the other's default peer (socketpair).
    pub(crate) fn pair_up(a: &Arc<Dgram>, b: &Arc<Dgram>) {
        a.cell.lock().peer = Some(b.clone());
        b.cell.lock().peer = Some(a.clone());
    }

    fn name(&self) -> SockName {
        self.socket.name.get().cloned().unwrap_or_else(unnamed)
    }

    fn shut(&self) -> u8 {
        // Relaxed: set by `shutdown` before it takes this socket's lock to
        // wake waiters; every reader either reads it under that lock after
        // the wake-up or is woken by it (the mutex orders the two).
        self.shut.load(Ordering::Relaxed)
    }

    /// getpeername: the default peer's name; ENOTCONN without one.
    pub(crate) fn peer_name(&self) -> SysResult<SockName> {
        let g = self.cell.lock();
        g.peer.as_ref().map(|p| p.name()).ok_or(Errno::ENOTCONN)
    }

    /// Gives back `size` of this socket's budget (its message left a
    /// queue) and wakes a sender waiting for room.
    fn uncharge(&self, size: usize) {
        let mut g = self.cell.lock();
        g.wmem -= size;
        // sock_wfree's unix_write_space: this socket's own queue, told of
        // room once it is writable.
        if has_write_room(g.wmem, self.socket.opts.sndbuf()) {
            self.cell
                .wake_keyed(&mut g, super::socket::ROOM_OUT, Some(OWN));
        } else {
            self.cell.notify_blocked(&mut g);
        }
    }

    /// connect(2) to `target` (found by name): it becomes the default peer
    /// (EPERM if it has another peer of its own; ECONNREFUSED if it was
    /// closed meanwhile). Leaving an earlier peer drops this socket's queue
    /// (unix_dgram_disconnected; its files go to `orphans`).
    pub(crate) fn connect(
        me: &Arc<Dgram>,
        target: &Arc<Dgram>,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<()> {
        {
            let g = target.cell.lock();
            if !accepts_from(me, &g) {
                return Err(Errno::EPERM);
            }
            if g.dead {
                return Err(Errno::ECONNREFUSED);
            }
        }
        let old = {
            let mut g = me.cell.lock();
            // A closed socket takes no peer, which would outlive it (only
            // reachable without the API, whose call holds the file open).
            if g.dead {
                return Err(Errno::EBADF);
            }
            let old = g.peer.replace(target.clone());
            if old.is_some() {
                me.reconnected(&mut g);
            }
            old
        };
        if let Some(old) = old {
            if !Arc::ptr_eq(&old, target) {
                orphans.extend(me.disconnected(&old));
            }
        }
        Ok(())
    }

    /// connect(2) to AF_UNSPEC: no default peer any more (what the old one
    /// sent us is dropped, as for a reconnect; returns its files).
    pub(crate) fn disconnect(me: &Arc<Dgram>) -> Vec<FileRef> {
        let old = {
            let mut g = me.cell.lock();
            let old = g.peer.take();
            if old.is_some() {
                me.reconnected(&mut g);
            }
            old
        };
        old.map(|old| me.disconnected(&old)).unwrap_or_default()
    }

    /// A socket that had a peer left it (a reconnect, to it again or to
    /// another, or a disconnect): its own queue is told of room, as the
    /// host does (unix_dgram_connect's reconnect branch; seen on 6.18 by
    /// `epoll_kernel.rs`: an edge-triggered EPOLLOUT item is reported
    /// again, an EPOLLIN-only one is not).
    fn reconnected(&self, g: &mut super::wait::Locked<'_, DgramState>) {
        self.cell.wake_keyed(g, super::socket::ROOM_OUT, Some(OWN));
    }

    /// This socket stopped being connected to `old`: its queued messages
    /// are dropped (returns their files) and, if there were any and `old`
    /// is alive and connected back to it, `old` reads ECONNRESET once.
    fn disconnected(self: &Arc<Self>, old: &Arc<Dgram>) -> Vec<FileRef> {
        let purged = {
            let mut g = self.cell.lock();
            if g.queue.is_empty() {
                return Vec::new();
            }
            let q = std::mem::take(&mut g.queue);
            // unix_dgram_disconnected wakes the senders' queue.
            self.cell.wake_keyed(&mut g, 0, Some(SENDERS));
            q
        };
        let files = uncharge_all(purged, &self.socket.flight);
        let mut o = old.cell.lock();
        if !o.dead && o.peer.as_ref().is_some_and(|p| Arc::ptr_eq(p, self)) {
            o.err = Some(Errno::ECONNRESET);
            // sk_error_report: its own queue, with EPOLLERR.
            old.cell.wake_keyed(&mut o, EPOLLERR, Some(OWN));
        }
        files
    }

    /// sendmsg: one message from `bufs` to `to()`'s socket (a send by name;
    /// its lookup errors come back as they are) or, if `to` is None, to the
    /// default peer. unix_dgram_sendmsg's order: EMSGSIZE; a pending error;
    /// EPIPE after SHUT_WR; room in this socket's budget (EAGAIN, or wait);
    /// the receiver (ENOTCONN without a peer); EPERM if it takes messages
    /// only from its own peer; if it was closed: ECONNREFUSED when it was
    /// our peer (which is then dropped, with our queue), else ECONNRESET
    /// (ECONNREFUSED for a send by name); EPIPE after its SHUT_RD; room in
    /// its queue (EAGAIN, or wait); the rule for `files`, which go with the
    /// message (taken out of the option) if it is queued
    /// (ETOOMANYREFS, anon/rights.rs). Files of messages the send drops
    /// (a closed peer's) go to `orphans`.
    pub(crate) fn send(
        me: &Arc<Dgram>,
        bufs: &[&[u8]],
        patience: Patience,
        to: Option<&dyn Fn() -> SysResult<Arc<Dgram>>>,
        files: &mut Option<InFlight>,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if len > me.socket.opts.sndbuf() - 32 {
            return Err(Errno::EMSGSIZE);
        }
        me.cell.block_on(patience, |g| {
            if let Some(e) = g.err.take() {
                return Step::Done(Err(e));
            }
            if me.shut() & SEND != 0 {
                return Step::Done(Err(Errno::EPIPE));
            }
            if g.wmem < me.socket.opts.sndbuf() {
                g.wmem += message_truesize(len);
                return Step::Done(Ok(()));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })?;
        // The files are attached (the user's limit checked) before the
        // receiver is looked for, as unix_dgram_sendmsg attaches them to
        // the skb it just allocated.
        if let Some(Err(e)) = files.as_ref().map(InFlight::check_user) {
            me.uncharge(message_truesize(len));
            return Err(e);
        }
        // The wait for the receiver's queue has what is left of the
        // same timeout (unix_dgram_sendmsg's one `timeo`).
        let sent = Self::deliver(me, bufs.concat(), patience, to, files, creds, orphans);
        if sent.is_err() {
            me.uncharge(message_truesize(len));
        }
        sent.map(|()| len)
    }

    /// The part of `send` after the charge: finds the receiver and queues.
    fn deliver(
        me: &Arc<Dgram>,
        data: Vec<u8>,
        patience: Patience,
        to: Option<&dyn Fn() -> SysResult<Arc<Dgram>>>,
        files: &mut Option<InFlight>,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<()> {
        let target = match to {
            Some(find) => find()?,
            None => me.cell.lock().peer.clone().ok_or(Errno::ENOTCONN)?,
        };
        let mut data = Some(data);
        let mut found_dead = false;
        let sent = target.cell.block_on(patience, |g| {
            if !accepts_from(me, g) {
                return Step::Done(Err(Errno::EPERM));
            }
            if g.dead {
                found_dead = true;
                return Step::Done(Err(Errno::ECONNREFUSED));
            }
            if target.shut() & RCV != 0 {
                return Step::Done(Err(Errno::EPIPE));
            }
            let connected_back = g.peer.as_ref().is_some_and(|p| Arc::ptr_eq(p, me));
            if !Arc::ptr_eq(&target, me) && !connected_back && g.queue.len() > MAX_DGRAM_QLEN {
                return Step::Wait(Err(Errno::EAGAIN));
            }
            if let Some(f) = files.as_ref() {
                if let Err(e) = f.admit(&target.socket.flight, None) {
                    return Step::Done(Err(e));
                }
            }
            if let Some(data) = data.take() {
                g.queue.push_back(Datagram {
                    data,
                    from: me.clone(),
                    files: files.take(),
                    creds: creds.attach(&me.socket, &target.socket),
                    peeked: false,
                });
            }
            target.cell.wake_keyed(g, super::socket::DATA_IN, Some(OWN));
            Step::Done(Ok(()))
        });
        if !found_dead {
            return sent;
        }
        // A closed receiver: if it was our peer (named or not), forget it
        // and what it had sent us; else a send by name finds nobody bound
        // (ECONNREFUSED), and one to a peer that another thread changed
        // meanwhile says ECONNRESET, as unix_dgram_sendmsg.
        let was_peer = {
            let mut g = me.cell.lock();
            let was = g.peer.as_ref().is_some_and(|p| Arc::ptr_eq(p, &target));
            if was {
                g.peer = None;
            }
            was
        };
        if was_peer {
            orphans.extend(me.disconnected(&target));
            return Err(Errno::ECONNREFUSED);
        }
        Err(if to.is_some() {
            Errno::ECONNREFUSED
        } else {
            Errno::ECONNRESET
        })
    }

    /// recvmsg: the next message (left queued with `peek`), copied into
    /// `bufs` as far as it fits (the rest is dropped). An empty queue is
    /// EAGAIN for a non-blocking call; a blocking one reports a pending
    /// error, returns 0 after SHUT_RD, else waits — except for a socket
    /// nobody can send to (no name, no peer), which says EAGAIN rather
    /// than sleep forever (docs/COMPATIBILITY.md).
    pub(crate) fn recv(
        &self,
        bufs: &mut [&mut [u8]],
        peek: bool,
        trunc: bool,
        patience: Patience,
    ) -> SysResult<Received> {
        // (bytes copied, the message's length from where the copy began,
        // its sender, its files, its credentials); None: end of data
        // (after SHUT_RD).
        let passcred = self.socket.passcred();
        // SO_PEEK_OFF: where a peek starts (read once, at the start).
        let peek_off = self.socket.opts.peek_offset(peek);
        let taken = self.cell.block_on(patience, |g| {
            if let Some(e) = g.err.take() {
                return Step::Done(Err(e));
            }
            let lens = g.queue.iter().map(|d| (d.data.len(), d.peeked));
            if let Some((i, skip)) = pick_message(peek_off, lens) {
                let d = &mut g.queue[i];
                let copied = Scatter::new(bufs).put(&d.data[skip..]);
                let rest = d.data.len() - skip;
                let from = d.from.clone();
                let creds = d.creds;
                let files = if peek {
                    d.peeked |= d.data.is_empty();
                    self.socket.opts.move_peek_offset(-(copied as i64));
                    d.files.as_ref().map(InFlight::peek).unwrap_or_default()
                } else {
                    // Not a peek: the front datagram, whole (`rest`).
                    let d = g.queue.pop_front().expect("the front message");
                    self.socket.opts.move_peek_offset(rest as i64);
                    // The senders waiting for room in this queue
                    // (Linux's peer_wait), not this socket's own.
                    self.cell
                        .wake_keyed(g, super::socket::ROOM_OUT, Some(SENDERS));
                    d.files
                        .map(|f| f.leave(&self.socket.flight))
                        .unwrap_or_default()
                };
                return Step::Done(Ok(Some((copied, rest, from, files, creds))));
            }
            // A call that may not wait never looks at the shutdown
            // (__skb_wait_for_more_packets does): EAGAIN.
            if self.shut() & RCV != 0 {
                return Step::Done(if patience.is_never() {
                    Err(Errno::EAGAIN)
                } else {
                    Ok(None)
                });
            }
            if !patience.is_never() && g.peer.is_none() && self.socket.name.get().is_none() {
                return Step::Done(Err(Errno::EAGAIN));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })?;
        let Some((copied, whole, from, files, creds)) = taken else {
            return Ok(Received {
                len: 0,
                from: unnamed(),
                files: Vec::new(),
                truncated: false,
                creds: None,
            });
        };
        if !peek {
            from.uncharge(message_truesize(whole));
        }
        Ok(Received {
            len: if trunc { whole } else { copied },
            from: from.name(),
            files,
            truncated: copied < whole,
            creds: passcred.then(|| reported(creds)),
        })
    }

    /// Runs `f` with the socket's queue locked (what its receives hold).
    pub(crate) fn under_lock(&self, f: impl FnOnce()) {
        let _g = self.cell.lock();
        f();
    }

    /// sk_write_space after its SO_SNDBUF changed: its blocked writers
    /// look again, its pollers are told of room if it is writable.
    pub(crate) fn wake(&self) {
        let mut g = self.cell.lock();
        if has_write_room(g.wmem, self.socket.opts.sndbuf()) {
            self.cell
                .wake_keyed(&mut g, super::socket::ROOM_OUT, Some(OWN));
        } else {
            self.cell.notify_blocked(&mut g);
        }
    }

    /// The pending error, taken (getsockopt SO_ERROR).
    pub(crate) fn take_error(&self) -> Option<Errno> {
        self.cell.lock().err.take()
    }

    /// FIONREAD (SIOCINQ): the next datagram's length, 0 if none.
    pub(crate) fn inq(&self) -> usize {
        self.cell.lock().queue.front().map_or(0, |d| d.data.len())
    }

    /// shutdown(2): this socket's own bits (no propagation to the peer).
    pub(crate) fn shutdown(&self, bits: u8) {
        // Relaxed: see `shut`; the lock below orders it for the waiters.
        self.shut.fetch_or(bits, Ordering::Relaxed);
        let mut g = self.cell.lock();
        // unix_shutdown: the socket's own queue (its state changed).
        self.cell.wake_keyed(&mut g, 0, Some(OWN));
    }

    /// unix_dgram_poll. Writable while this socket's budget is at most a
    /// quarter used and, if its peer is not connected back to it, the
    /// peer's queue has room (the poller then also waits on the peer).
    pub(crate) fn poll(me: &Arc<Dgram>, p: Option<&Arc<Poller>>) -> i16 {
        let (mut m, writable, peer) = {
            let mut g = me.cell.lock();
            if let Some(p) = p {
                me.cell.register_on(&mut g, p, 1 << OWN);
            }
            let shut = me.shut();
            let mut m = 0;
            if g.err.is_some() {
                m |= POLLERR;
            }
            if shut & RCV != 0 {
                m |= POLLRDHUP | POLLIN | POLLRDNORM;
            }
            if shut == RCV | SEND {
                m |= POLLHUP;
            }
            if !g.queue.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            (
                m,
                has_write_room(g.wmem, me.socket.opts.sndbuf()),
                g.peer.clone(),
            )
        };
        let mut writable = writable;
        if let (true, Some(peer)) = (writable, peer) {
            let mut g = peer.cell.lock();
            let connected_back = g.peer.as_ref().is_some_and(|q| Arc::ptr_eq(q, me));
            if !Arc::ptr_eq(&peer, me) && !connected_back && g.queue.len() > MAX_DGRAM_QLEN {
                writable = false;
                if let Some(p) = p {
                    peer.cell.register_on(&mut g, p, 1 << SENDERS);
                }
            }
        }
        if writable {
            m |= POLLOUT | POLLWRNORM;
        }
        m
    }

    /// Ends a poll: forgets `p` here and at the peer (a registration left
    /// at an earlier peer only wakes `p` once more, spuriously).
    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.cell.unregister(p);
        let peer = self.cell.lock().peer.clone();
        if let Some(peer) = peer {
            peer.cell.unregister(p);
        }
    }

    /// The final close: the socket is dead (a send to it is refused), its
    /// peer is dropped and its queue given back to the senders; returns
    /// the files the queue held.
    pub(crate) fn release(&self) -> Vec<FileRef> {
        // Relaxed: as in `shutdown` (the lock below orders it).
        self.shut.store(RCV | SEND, Ordering::Relaxed);
        let purged = {
            let mut g = self.cell.lock();
            g.dead = true;
            g.peer = None;
            let q = std::mem::take(&mut g.queue);
            // unix_release_sock wakes the senders' queue (its own
            // watchers went with its file).
            self.cell.wake_keyed(&mut g, 0, Some(SENDERS));
            q
        };
        uncharge_all(purged, &self.socket.flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anon::socket::SOCK_BUF;

    /// A sender that gives no credentials (none attach: no SO_PASSCRED).
    const NO_CREDS: SendCreds = SendCreds {
        explicit: None,
        own: Ucred::NONE,
    };

    fn send_to(me: &Arc<Dgram>, to: &Arc<Dgram>, len: usize) -> SysResult<usize> {
        let data = vec![7u8; len];
        let find = || Ok(to.clone());
        Dgram::send(
            me,
            &[&data],
            Patience::Never,
            Some(&find),
            &mut None,
            NO_CREDS,
            &mut Vec::new(),
        )
    }

    fn unnamed_socket() -> Arc<Dgram> {
        Dgram::new(SockCell::default())
    }

    fn wmem(d: &Dgram) -> usize {
        d.cell.lock().wmem
    }

    #[test]
    fn the_senders_budget_spans_its_receivers_and_comes_back() {
        let (me, a, b) = (unnamed_socket(), unnamed_socket(), unnamed_socket());
        let big = SOCK_BUF / 2;
        let (t, small) = (message_truesize(big), message_truesize(300));
        assert!(t < SOCK_BUF && 2 * t > SOCK_BUF);
        assert_eq!(send_to(&me, &a, big), Ok(big));
        assert_eq!(send_to(&me, &b, big), Ok(big), "let in below the budget");
        assert_eq!(wmem(&me), 2 * t);
        assert_eq!(send_to(&me, &a, 300), Err(Errno::EAGAIN), "budget spent");
        let mut buf = [0u8; 8];
        let r = a
            .recv(&mut [&mut buf], false, true, Patience::Never)
            .unwrap();
        assert_eq!(r.len, big, "MSG_TRUNC: the whole length");
        assert_eq!(wmem(&me), t, "a read gives the bytes back");
        assert_eq!(send_to(&me, &a, 300), Ok(300));
        // A receiver's final close gives back what it still held.
        b.release();
        assert_eq!(wmem(&me), small);
        assert_eq!(send_to(&me, &b, 1), Err(Errno::ECONNREFUSED));
        assert_eq!(wmem(&me), small, "a refused send is not charged");
        a.release();
        assert_eq!(wmem(&me), 0);
        me.release();
    }

    #[test]
    fn a_failed_send_charges_nothing_and_an_oversized_one_is_emsgsize() {
        let (me, to) = (unnamed_socket(), unnamed_socket());
        assert_eq!(send_to(&me, &to, SOCK_BUF - 31), Err(Errno::EMSGSIZE));
        to.shutdown(RCV);
        assert_eq!(send_to(&me, &to, 10), Err(Errno::EPIPE));
        assert_eq!(wmem(&me), 0);
        assert_eq!(
            Dgram::send(
                &me,
                &[b"x"],
                Patience::Never,
                None,
                &mut None,
                NO_CREDS,
                &mut Vec::new()
            ),
            Err(Errno::ENOTCONN),
            "no peer, no name"
        );
        assert_eq!(wmem(&me), 0);
    }

    /// Threads send (by name and to the peer), receive (peeking too),
    /// connect and replace sockets at random among a few; afterwards every
    /// socket's budget is exactly the truesize of its messages still
    /// queued anywhere, and once all are closed, every budget is zero.
    #[test]
    fn budgets_balance_under_concurrent_sends_reads_connects_and_closes() {
        const SOCKETS: usize = 4;
        const ROUNDS: usize = 20_000;
        let live: Arc<std::sync::Mutex<Vec<Arc<Dgram>>>> = Arc::new(std::sync::Mutex::new(
            (0..SOCKETS).map(|_| unnamed_socket()).collect(),
        ));
        let all: Arc<std::sync::Mutex<Vec<Arc<Dgram>>>> =
            Arc::new(std::sync::Mutex::new(live.lock().unwrap().clone()));
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let (live, all) = (live.clone(), all.clone());
                std::thread::spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
                    let mut rnd = |n: usize| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % n as u64) as usize
                    };
                    let mut done = [0usize; 2];
                    for _ in 0..ROUNDS {
                        let (i, j) = (rnd(SOCKETS), rnd(SOCKETS));
                        let (me, to) = {
                            let l = live.lock().unwrap();
                            (l[i].clone(), l[j].clone())
                        };
                        match rnd(10) {
                            0..=3 => {
                                let data = vec![1u8; rnd(3000)];
                                let find = || Ok(to.clone());
                                let named = rnd(2) == 0;
                                let sent = Dgram::send(
                                    &me,
                                    &[&data],
                                    Patience::Never,
                                    named.then_some(&find as &dyn Fn() -> SysResult<Arc<Dgram>>),
                                    &mut None,
                                    NO_CREDS,
                                    &mut Vec::new(),
                                );
                                done[0] += usize::from(sent.is_ok());
                            }
                            4..=6 => {
                                let mut b = [0u8; 16];
                                let got = me.recv(
                                    &mut [&mut b],
                                    rnd(4) == 0,
                                    rnd(2) == 0,
                                    Patience::Never,
                                );
                                done[1] += usize::from(got.is_ok());
                            }
                            7 | 8 => {
                                let _ = Dgram::connect(&me, &to, &mut Vec::new());
                            }
                            _ => {
                                let fresh = unnamed_socket();
                                all.lock().unwrap().push(fresh.clone());
                                let old = std::mem::replace(&mut live.lock().unwrap()[i], fresh);
                                old.release();
                            }
                        }
                        let _ = Dgram::poll(&me, None);
                    }
                    done
                })
            })
            .collect();
        for t in threads {
            let [sent, received] = t.join().unwrap();
            assert!(
                sent > 100 && received > 100,
                "{sent} sends, {received} reads"
            );
        }
        let all = all.lock().unwrap();
        let mut owed = std::collections::HashMap::<*const Dgram, usize>::new();
        for d in all.iter() {
            for m in d.cell.lock().queue.iter() {
                *owed.entry(Arc::as_ptr(&m.from)).or_default() += message_truesize(m.data.len());
            }
        }
        for d in all.iter() {
            let want = owed.get(&Arc::as_ptr(d)).copied().unwrap_or(0);
            assert_eq!(wmem(d), want, "a budget is what its queued messages cost");
        }
        for d in live.lock().unwrap().iter() {
            d.release();
        }
        for d in all.iter() {
            assert_eq!(wmem(d), 0, "all given back once every socket closed");
            let g = d.cell.lock();
            assert!(g.queue.is_empty(), "a closed socket's queue is empty");
            assert!(g.peer.is_none(), "a closed socket holds no peer");
        }
    }
}
