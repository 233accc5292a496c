//! AF_UNIX sockets: a bare socket (`socket`), one end of a connected pair
//! (`socketpair`, or `connect` and `accept` through a name `bind` made),
//! or a listener. A connected pair shares one `Conn`: two directions, each
//! a bounded queue (bytes for SOCK_STREAM, whole messages for SOCK_DGRAM
//! and SOCK_SEQPACKET), and each side's shutdown bits. `connect` makes the
//! `Conn` at once, takes side 0 and queues side 1 on the listener, so the
//! connecting side may send before `accept` (as Linux's embryo sockets).
//!
//! A socket's `link` (connected or listening) and its name are set once
//! (`OnceLock`): a socket never disconnects or stops listening, and a
//! second bind is EINVAL. A bound socket holds a `Binding`: what a
//! connect by its name finds through the namespace's `BoundSockets` table,
//! keyed by the socket file's inode for a path name (which the binding's
//! dentry reference keeps alive, as Linux's bound path does) or by type
//! and name for an abstract one.
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

use super::scatter::Scatter;
use super::wait::{partial, Poller, Step, WaitCell};
use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::mount::Mount;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, Weak};

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

impl Conn {
    fn new() -> Arc<Conn> {
        Arc::new(Conn {
            cell: WaitCell::new(ConnState::default()),
        })
    }

    /// The final close of side 1 before anyone accepted it (Linux's
    /// embryo release): side 0 reads ECONNRESET once, then EOF; its
    /// sends are EPIPE.
    fn reset_unaccepted(&self) {
        let mut g = self.cell.lock();
        g.err[0] = Some(Errno::ECONNRESET);
        g.closed[1] = true;
        g.dirs[1] = Dir::default();
        self.cell.wake_all(&mut g);
    }
}

/// A socket address: sun_path's bytes as bound (a path, or a leading NUL
/// and an abstract name; empty: unnamed).
pub(crate) type SockName = Arc<[u8]>;

enum Link {
    Connected {
        conn: Arc<Conn>,
        side: usize,
        /// getpeername's answer: the peer's name when the two connected.
        peer: SockName,
    },
    Listening(Arc<Listener>),
}

/// A listening socket's queue of connections not yet accepted.
pub(crate) struct Listener {
    cell: WaitCell<ListenState>,
}

struct ListenState {
    /// Side 1 of each queued connection and the connecting socket's name.
    pending: VecDeque<(Arc<Conn>, SockName)>,
    /// More than this many queued makes a connect wait (Linux's
    /// sk_max_ack_backlog: `backlog + 1` fit).
    backlog: usize,
    /// shutdown() bits on the listener (RCV refuses connects).
    shut: u8,
    /// The listener's final close happened.
    closed: bool,
}

/// What a connect by name finds: a bound socket.
pub(crate) struct Binding {
    ty: i32,
    name: SockName,
    listener: OnceLock<Arc<Listener>>,
    /// For a path name, the socket file's dentry and mount, one reference
    /// each, dropped when the socket's last file closes
    /// (`VfsInner::unbind_socket`); `None` for an abstract name.
    pub(crate) file: Option<(*const Dentry, *const Mount)>,
}

impl Binding {
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    pub(crate) fn socket_type(&self) -> i32 {
        self.ty
    }
}

// SAFETY: the pointers are references counted by the binding, only read
// (and released once, by the socket's final close).
unsafe impl Send for Binding {}
// SAFETY: as above.
unsafe impl Sync for Binding {}

/// Where a name leads: the socket file's inode (its address: alive while
/// bound, the binding holds its dentry), or an abstract name of a socket
/// type (Linux hashes the type into an abstract name's lookup, so each
/// type has its own abstract names).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum NameKey {
    File(usize),
    Abstract(i32, SockName),
}

/// The namespace's bound sockets (Linux keeps abstract names per network
/// namespace; here per `Vfs`), and the autobind counter.
#[derive(Default)]
pub(crate) struct BoundSockets {
    names: Mutex<HashMap<NameKey, Weak<Binding>>>,
    autobind: std::sync::atomic::AtomicU32,
}

impl BoundSockets {
    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<NameKey, Weak<Binding>>> {
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `b` under `key`; EADDRINUSE if a live socket has it (only
    /// possible for abstract names: a file name is new).
    pub(crate) fn insert(&self, key: NameKey, b: &Arc<Binding>) -> SysResult<()> {
        let mut m = self.names();
        if m.get(&key).is_some_and(|w| w.strong_count() > 0) {
            return Err(Errno::EADDRINUSE);
        }
        m.insert(key, Arc::downgrade(b));
        Ok(())
    }

    pub(crate) fn find(&self, key: &NameKey) -> Option<Arc<Binding>> {
        self.names().get(key).and_then(Weak::upgrade)
    }

    /// Forgets `b`'s entry (a later binding under the same key is left
    /// alone).
    pub(crate) fn remove(&self, key: &NameKey, b: &Arc<Binding>) {
        let mut m = self.names();
        if m.get(key).is_some_and(|w| w.as_ptr() == Arc::as_ptr(b)) {
            m.remove(key);
        }
    }

    /// An unused abstract name for autobind: NUL and five hex digits, as
    /// Linux's unix_autobind (which also gives up after 2^20 tries).
    pub(crate) fn autobind_name(&self, ty: i32) -> SysResult<SockName> {
        for _ in 0..=0xfffff {
            // Relaxed: a counter for distinct guesses; the table decides.
            let n = self
                .autobind
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                & 0xfffff;
            let name: SockName = Arc::from(format!("\0{n:05x}").as_bytes());
            if self.find(&NameKey::Abstract(ty, name.clone())).is_none() {
                return Ok(name);
            }
        }
        Err(Errno::ENOSPC)
    }
}

pub struct Socket {
    ty: i32,
    link: OnceLock<Link>,
    /// getsockname's answer (bind; an accepted socket has its listener's).
    name: OnceLock<SockName>,
    /// Set by bind to a path.
    binding: OnceLock<Arc<Binding>>,
    /// Held while a bind names the socket (Linux's bindlock), so two binds
    /// of one socket cannot both name it. Taken with nothing held (a path
    /// bind has made its file before); inside it only the namespace's
    /// `BoundSockets` mutex.
    bind_lock: Mutex<()>,
    /// shutdown() bits asked before the socket connected or listened
    /// (Linux keeps them on the socket): a connection or a listener made
    /// later starts with them.
    unlinked_shut: std::sync::atomic::AtomicU8,
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
            link: OnceLock::new(),
            name: OnceLock::new(),
            binding: OnceLock::new(),
            bind_lock: Mutex::new(()),
            unlinked_shut: std::sync::atomic::AtomicU8::new(0),
        }
    }

    /// Side `side` of `conn`, whose other side is named `peer`.
    fn connected_to(ty: i32, conn: Arc<Conn>, side: usize, peer: SockName) -> Socket {
        let s = Socket::unconnected(ty);
        let _ = s.link.set(Link::Connected { conn, side, peer });
        s
    }

    /// Both ends of a connected pair.
    pub(crate) fn pair(ty: i32) -> (Socket, Socket) {
        let conn = Conn::new();
        let unnamed: SockName = Arc::from(&b""[..]);
        (
            Socket::connected_to(ty, conn.clone(), 0, unnamed.clone()),
            Socket::connected_to(ty, conn, 1, unnamed),
        )
    }

    /// The connection and this socket's side of it, if connected.
    fn conn(&self) -> Option<(&Arc<Conn>, usize)> {
        match self.link.get() {
            Some(Link::Connected { conn, side, .. }) => Some((conn, *side)),
            _ => None,
        }
    }

    fn listener(&self) -> Option<&Arc<Listener>> {
        match self.link.get() {
            Some(Link::Listening(l)) => Some(l),
            _ => None,
        }
    }

    /// getsockname: the bound name (empty if unnamed).
    pub(crate) fn name(&self) -> SockName {
        self.name
            .get()
            .cloned()
            .unwrap_or_else(|| Arc::from(&b""[..]))
    }

    /// getpeername: ENOTCONN unless connected (a datagram socket whose
    /// send found its peer gone has dropped it: `disconnected`).
    pub(crate) fn peer_name(&self) -> SysResult<SockName> {
        match self.link.get() {
            Some(Link::Connected { conn, side, peer }) => {
                if conn.cell.lock().disconnected[*side] {
                    return Err(Errno::ENOTCONN);
                }
                Ok(peer.clone())
            }
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// The binding a bind made, for the final close to undo.
    pub(crate) fn binding(&self) -> Option<&Arc<Binding>> {
        self.binding.get()
    }

    /// bind(2): names this socket `name()` and registers it (`publish`:
    /// EADDRINUSE for an abstract name in use, before the socket is
    /// named). `file` is the socket file a path name's bind made first
    /// (its dentry and mount, one reference each, which the binding takes
    /// over; on an error the caller still owns them and removes the file,
    /// as unix_bind_bsd does). EINVAL if already named, except for an
    /// `autobind`, which then does nothing (unix_autobind); binds of one
    /// socket run one at a time.
    pub(crate) fn bind(
        &self,
        name: impl FnOnce() -> SysResult<SockName>,
        autobind: bool,
        file: Option<(*const Dentry, *const Mount)>,
        publish: impl FnOnce(&Arc<Binding>) -> SysResult<()>,
    ) -> SysResult<()> {
        let _serial = self.bind_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.name.get().is_some() {
            return if autobind { Ok(()) } else { Err(Errno::EINVAL) };
        }
        let name = name()?;
        let b = Arc::new(Binding {
            ty: self.ty,
            name: name.clone(),
            listener: OnceLock::new(),
            file,
        });
        publish(&b)?;
        // Under the bind lock: neither is set yet.
        let _ = self.binding.set(b);
        let _ = self.name.set(name);
        Ok(())
    }

    /// listen(2): EOPNOTSUPP for datagrams, EINVAL unless bound and not
    /// connected; a second listen only changes the backlog.
    pub(crate) fn listen(&self, backlog: i32) -> SysResult<()> {
        if self.ty == SOCK_DGRAM {
            return Err(Errno::EOPNOTSUPP);
        }
        let Some(binding) = self.binding.get() else {
            return Err(Errno::EINVAL);
        };
        let backlog = (backlog as u32).min(SOMAXCONN) as usize;
        let link = self.link.get_or_init(|| {
            Link::Listening(Arc::new(Listener {
                cell: WaitCell::new(ListenState {
                    pending: VecDeque::new(),
                    backlog,
                    // Relaxed: as in `shutdown`.
                    shut: self
                        .unlinked_shut
                        .load(std::sync::atomic::Ordering::Relaxed),
                    closed: false,
                }),
            }))
        });
        let Link::Listening(l) = link else {
            return Err(Errno::EINVAL);
        };
        let mut g = l.cell.lock();
        g.backlog = backlog;
        l.cell.wake_all(&mut g);
        drop(g);
        let _ = binding.listener.set(l.clone());
        Ok(())
    }

    /// connect(2) to the socket bound as `target`, in unix_stream_connect's
    /// order: the type (EPROTOTYPE), a listener that takes connections
    /// (ECONNREFUSED), room in its queue (EAGAIN, or wait), then this
    /// socket's own state (EISCONN, EINVAL for a listener).
    pub(crate) fn connect(&self, target: &Binding, nonblock: bool) -> SysResult<()> {
        if target.ty != self.ty {
            return Err(Errno::EPROTOTYPE);
        }
        if self.ty == SOCK_DGRAM {
            // Datagram addressing (a default peer, sendto) is not built.
            return Err(Errno::EOPNOTSUPP);
        }
        let Some(l) = target.listener.get() else {
            return Err(Errno::ECONNREFUSED);
        };
        l.cell.block_on(nonblock, |g| {
            if g.closed || g.shut & RCV != 0 {
                return Step::Done(Err(Errno::ECONNREFUSED));
            }
            if g.pending.len() > g.backlog {
                return Step::Wait(Err(Errno::EAGAIN));
            }
            match self.link.get() {
                Some(Link::Connected { .. }) => return Step::Done(Err(Errno::EISCONN)),
                Some(Link::Listening(_)) => return Step::Done(Err(Errno::EINVAL)),
                None => {}
            }
            let conn = Conn::new();
            // Relaxed: as in `shutdown`.
            let shut = self
                .unlinked_shut
                .load(std::sync::atomic::Ordering::Relaxed);
            if shut != 0 {
                conn.cell.lock().own[0] = shut;
            }
            let link = Link::Connected {
                conn: conn.clone(),
                side: 0,
                peer: target.name.clone(),
            };
            if self.link.set(link).is_err() {
                // Another thread connected or listened on it meanwhile.
                return Step::Done(Err(Errno::EISCONN));
            }
            g.pending.push_back((conn, self.name()));
            l.cell.wake_all(g);
            Step::Done(Ok(()))
        })
    }

    /// accept(2): the next queued connection as a new socket (named as
    /// this listener, its peer the connecting socket's name).
    pub(crate) fn accept(&self, nonblock: bool) -> SysResult<Socket> {
        if self.ty == SOCK_DGRAM {
            return Err(Errno::EOPNOTSUPP);
        }
        let Some(l) = self.listener() else {
            return Err(Errno::EINVAL);
        };
        let (conn, peer) = l.cell.block_on(nonblock, |g| {
            if let Some(next) = g.pending.pop_front() {
                l.cell.wake_all(g);
                return Step::Done(Ok(next));
            }
            // A shut-down listener's wait ends with nothing: EINVAL (a
            // non-blocking accept says EAGAIN first).
            if g.shut & RCV != 0 && !nonblock {
                return Step::Done(Err(Errno::EINVAL));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })?;
        let s = Socket::connected_to(self.ty, conn, 1, peer);
        let _ = s.name.set(self.name());
        Ok(s)
    }

    pub fn socket_type(&self) -> i32 {
        self.ty
    }

    /// The final close of this socket's file. A listener's queued
    /// connections are reset (their connecting sides read ECONNRESET).
    pub(crate) fn release(&self) {
        if let Some(l) = self.listener() {
            let pending = {
                let mut g = l.cell.lock();
                g.closed = true;
                l.cell.wake_all(&mut g);
                std::mem::take(&mut g.pending)
            };
            for (conn, _) in pending {
                conn.reset_unaccepted();
            }
            return;
        }
        let Some((c, s)) = self.conn() else { return };
        let mut g = c.cell.lock();
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
        if let Some((c, s)) = self.conn() {
            let mut g = c.cell.lock();
            g.own[s] |= bits;
            c.cell.wake_all(&mut g);
        } else if let Some(l) = self.listener() {
            let mut g = l.cell.lock();
            g.shut |= bits;
            l.cell.wake_all(&mut g);
        } else {
            // Relaxed: read by this socket's later connect, listen and poll,
            // which a caller orders after this call itself (no pairing).
            self.unlinked_shut
                .fetch_or(bits, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    pub(crate) fn read(&self, bufs: &mut [&mut [u8]], nonblock: bool) -> SysResult<usize> {
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        let Some((c, s)) = self.conn() else {
            return match self.ty {
                SOCK_STREAM => Err(Errno::EINVAL),
                SOCK_SEQPACKET => Err(Errno::ENOTCONN),
                // An unconnected datagram socket would wait for a datagram
                // nobody can send it; rather than sleep forever, a blocking
                // read says EAGAIN too (docs/COMPATIBILITY.md).
                _ => Err(Errno::EAGAIN),
            };
        };
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
                let at = Scatter::new(bufs).put(&m);
                c.cell.wake_all(g);
                return Step::Done(Ok(at));
            }
            if let Some(e) = g.err[s].take() {
                return Step::Done(Err(e));
            }
            if g.rcv_shut(self.ty, s) {
                // unix_dgram_recvmsg: an empty datagram queue is EAGAIN
                // without waiting, shut down or not; only a wait ends at
                // the shutdown (0).
                return Step::Done(if self.ty == SOCK_DGRAM && nonblock {
                    Err(Errno::EAGAIN)
                } else {
                    Ok(0)
                });
            }
            Step::Wait(Err(Errno::EAGAIN))
        })
    }

    pub(crate) fn write(&self, bufs: &[&[u8]], nonblock: bool) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let Some((c, s)) = self.conn() else {
            // unix_dgram_sendmsg looks at the shutdown first (EPIPE);
            // stream and seqpacket sends ask for a peer first.
            // Relaxed: as in `shutdown`.
            let shut = self
                .unlinked_shut
                .load(std::sync::atomic::Ordering::Relaxed);
            return Err(if self.ty == SOCK_DGRAM && shut & SEND != 0 {
                Errno::EPIPE
            } else {
                Errno::ENOTCONN
            });
        };
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
        if let Some(l) = self.listener() {
            // unix_poll of a listener: readable with a queued connection,
            // never writable; its shutdown bits as for any socket.
            let mut g = l.cell.lock();
            if let Some(p) = p {
                l.cell.register(&mut g, p);
            }
            let mut m = 0;
            if !g.pending.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            if g.shut & RCV != 0 {
                m |= POLLRDHUP | POLLIN | POLLRDNORM;
            }
            if g.shut == RCV | SEND {
                m |= POLLHUP;
            }
            return m;
        }
        let Some((c, s)) = self.conn() else {
            // Nothing queued is always writable; an unconnected stream or
            // seqpacket socket is "closed" (POLLHUP), as unix_poll says.
            // Relaxed: as in `shutdown`.
            let shut = self
                .unlinked_shut
                .load(std::sync::atomic::Ordering::Relaxed);
            let mut m = POLLOUT | POLLWRNORM;
            if self.ty != SOCK_DGRAM || shut == RCV | SEND {
                m |= POLLHUP;
            }
            if shut & RCV != 0 {
                m |= POLLRDHUP | POLLIN | POLLRDNORM;
            }
            return m;
        };
        let mut g = c.cell.lock();
        if let Some(p) = p {
            c.cell.register(&mut g, p);
        }
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
        if let Some((c, _)) = self.conn() {
            c.cell.unregister(p);
        } else if let Some(l) = self.listener() {
            l.cell.unregister(p);
        }
    }
}
