//! AF_UNIX sockets: a bare socket (`socket`), one end of a connected pair
//! (`socketpair`, or `connect` and `accept` through a name `bind` made),
//! or a listener. Datagram sockets are `anon/dgram.rs`'s (each with its
//! own receive queue, addressed by name or by a default peer); for
//! SOCK_STREAM and SOCK_SEQPACKET, a connected pair shares one `Conn`: two
//! directions, each a bounded queue (bytes for SOCK_STREAM, whole messages
//! for SOCK_SEQPACKET), and each side's shutdown bits. `connect` makes the
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
//! - `dirs[d].queued`: the skb truesize of what is queued there, charged
//!   to its writer's SO_SNDBUF (a send is let in while it is below it):
//!   whole messages for SOCK_SEQPACKET (`message_truesize`), the stream
//!   segments not yet read to their end for SOCK_STREAM (`segs`,
//!   `stream_segment`), as Linux charges the sender until the reader
//!   frees the skb;
//! - `own[s]` holds what side `s` asked with shutdown(); `closed[s]` is set
//!   once, by the final close of side `s`'s file. The effective shutdown
//!   of a side is computed from both sides' bits as Linux propagates them
//!   to the peer.
//!
//! Buffer accounting is against the writer's SO_SNDBUF (212,992 bytes
//! unless set; anon/sockopt.rs), in the skb truesize Linux charges for
//! what the writer queued. No signals: a write to a shut-down stream
//! returns EPIPE without SIGPIPE.

use super::creds::{reported, CredRuns, MsgCreds, PeerCred, SendCreds, NO_DATA};
use super::dgram::{unnamed, Dgram, Received};
use super::rights::{Flight, InFlight};
use super::scatter::Scatter;
use super::sockopt::{pick_message, OptsCell};
use super::wait::{partial, Patience, Poller, Step, WaitCell};
use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::file::FileRef;
use crate::mount::Mount;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Per-direction buffer budget (Linux's net.core.wmem_default).
pub const SOCK_BUF: usize = 212_992;

/// What one message of `len` bytes costs a datagram or seqpacket sender's
/// budget: Linux's skb truesize for it on x86_64 (sock_alloc_send_pskb):
/// the `sk_buff` (256), the linear part rounded up with its
/// `skb_shared_info` (320) to the kmalloc size (a power of two), and the
/// pages of whatever is past `SKB_MAX_ALLOC` (at most 17 pages; the rest
/// stays linear). So a 0- to 192-byte message costs 768 bytes and 278 of
/// them fill an empty budget, as on the host (`api_sockets.rs`,
/// `message_budgets_match_the_host`, compares sizes up to 200,000).
pub(crate) fn message_truesize(len: usize) -> usize {
    const SKB_MAX_ALLOC: usize = 4 * PAGE - SHINFO;
    let paged = if len > SKB_MAX_ALLOC {
        (len - SKB_MAX_ALLOC).min(17 * PAGE).next_multiple_of(PAGE)
    } else {
        0
    };
    skb_truesize(len.saturating_sub(paged), paged)
}

const SKB: usize = 256;
const SHINFO: usize = 320;
const PAGE: usize = 4096;

/// An skb's truesize on x86_64 with `linear` bytes in its head and `paged`
/// in page fragments: the `sk_buff`, the head with its `skb_shared_info`
/// rounded up to the kmalloc size, and whole pages for the fragments.
fn skb_truesize(linear: usize, paged: usize) -> usize {
    SKB + (linear.next_multiple_of(64) + SHINFO).next_power_of_two() + paged.next_multiple_of(PAGE)
}

/// The next segment of a stream send with `left` bytes to go, from a
/// writer whose SO_SNDBUF is `sndbuf`: its length and truesize, as
/// unix_stream_sendmsg cuts one (at most half the budget less 64 bytes,
/// "two messages in the pipe", and at most `STREAM_SEGMENT_MAX`; past
/// a page's head room the rest goes to page fragments).
fn stream_segment(left: usize, sndbuf: usize) -> (usize, usize) {
    const HEAD_MAX: usize = PAGE - SHINFO;
    let size = left.min(sndbuf / 2 - 64).min(STREAM_SEGMENT_MAX);
    let paged = size
        .saturating_sub(HEAD_MAX)
        .next_multiple_of(PAGE)
        .min(size);
    (size, skb_truesize(size - paged, paged))
}

/// unix_writable: whether a writer whose queued skbs cost `queued` may
/// be told POLLOUT (a quarter of its budget; Linux's count starts at one).
pub(crate) fn has_write_room(queued: usize, sndbuf: usize) -> bool {
    (queued + 1) * 4 <= sndbuf
}

pub(crate) const RCV: u8 = 1;
pub(crate) const SEND: u8 = 2;

/// The most a stream send's segment holds (Linux's largest skb for an
/// AF_UNIX stream send: SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ); files a
/// send carries come with its first segment.
const STREAM_SEGMENT_MAX: usize = 36_544;

/// A seqpacket message.
struct Message {
    data: Vec<u8>,
    files: Option<InFlight>,
    creds: MsgCreds,
    /// An empty message a peek returned (SO_PEEK_OFF then passes it).
    peeked: bool,
}

/// Files a stream send carried, with the stream offsets of its first
/// segment: a read that reaches `start` takes them and ends at `end`
/// (unix_stream_read_generic stops after the skb that carried files).
struct Mark {
    start: u64,
    end: u64,
    files: InFlight,
}

#[derive(Default)]
struct Dir {
    bytes: VecDeque<u8>,
    msgs: VecDeque<Message>,
    queued: usize,
    /// Stream: the bytes read from `bytes` so far (the stream offset of
    /// its front).
    taken: u64,
    /// Stream: the files sends carried, in stream order, each at or past
    /// `taken` (a read that reaches one removes it).
    marks: VecDeque<Mark>,
    /// Stream: the credentials of the queued bytes (anon/creds.rs).
    creds: CredRuns,
    /// Stream: the segments (skbs) not yet read to their end, as (stream
    /// offset of the end, truesize); their truesizes sum to `queued`.
    segs: VecDeque<(u64, usize)>,
}

impl Dir {
    /// Empties the direction (a final close, a reset); returns the files
    /// its messages carried, for the caller to put. `flight`: its
    /// reader's.
    fn purge(&mut self, flight: &Flight) -> Vec<FileRef> {
        let mut files = Vec::new();
        for m in std::mem::take(&mut self.msgs) {
            files.extend(m.files.map(|f| f.leave(flight)).unwrap_or_default());
        }
        for m in std::mem::take(&mut self.marks) {
            files.extend(m.files.leave(flight));
        }
        *self = Dir::default();
        files
    }
}

#[derive(Default)]
struct ConnState {
    dirs: [Dir; 2],
    own: [u8; 2],
    closed: [bool; 2],
    /// A pending error per side (ECONNRESET when the peer closed with
    /// unread data), reported once.
    err: [Option<Errno>; 2],
    /// Until side 1 is accepted: its listener's cell (files sent to an
    /// unaccepted connection follow its listener's rule, anon/rights.rs).
    listener: Option<SockCell>,
}

pub(crate) struct Conn {
    cell: WaitCell<ConnState>,
    /// Each side's socket's cell: its name, and its flight (side `s`
    /// reads `dirs[s]`, so `sides[s].flight` counts the files queued
    /// there).
    sides: [SockCell; 2],
}

/// The poll key of sock_def_readable (data for a reader).
pub(crate) const DATA_IN: u32 = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND;
/// The poll key of unix_write_space (room for a writer).
pub(crate) const ROOM_OUT: u32 = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;

impl Conn {
    /// After side `reader` took data: its peer's blocked sends look
    /// again; the peer's pollers are woken if it is now writable (Linux's
    /// unix_write_space, as the read frees the writer's skbs).
    fn wake_writer(&self, g: &mut super::wait::Locked<'_, ConnState>, reader: usize) {
        let writer = 1 - reader;
        if has_write_room(g.dirs[reader].queued, self.sides[writer].opts.sndbuf()) {
            self.cell.wake_keyed(g, ROOM_OUT, Some(writer));
        } else {
            self.cell.notify_blocked(g);
        }
    }

    fn new(sides: [SockCell; 2]) -> Arc<Conn> {
        Arc::new(Conn {
            cell: WaitCell::new(ConnState::default()),
            sides,
        })
    }

    /// The final close of side 1 before anyone accepted it (Linux's
    /// embryo release): side 0 reads ECONNRESET once, then EOF; its
    /// sends are EPIPE. Returns the files queued to side 1.
    fn reset_unaccepted(&self) -> Vec<FileRef> {
        let mut g = self.cell.lock();
        g.err[0] = Some(Errno::ECONNRESET);
        g.closed[1] = true;
        g.listener = None;
        let files = g.dirs[1].purge(&self.sides[1].flight);
        // The embryo's release: its peer's state changed.
        self.cell.wake_keyed(&mut g, 0, Some(0));
        files
    }
}

/// A socket address: sun_path's bytes as bound (a path, or a leading NUL
/// and an abstract name; empty: unnamed).
pub(crate) type SockName = Arc<[u8]>;

/// What a socket shares with those who act on its behalf (its `Conn`
/// side, its `Dgram`): its name, set once by bind (or, for an accepted
/// socket, to its listener's), which the `Conn` (getpeername, a stream
/// recvfrom) and the `Dgram` (a datagram's sender) read as it is at that
/// moment, as Linux reads the peer's address at the call (a socket may
/// bind after it connected); and its part in the rule against cycles of
/// files in flight (anon/rights.rs), which stays with the socket's file
/// whatever it connects to later; and SO_PASSCRED, which senders to it
/// read (anon/creds.rs); and its other options, which its own sends and
/// receives read.
#[derive(Default)]
pub(crate) struct SockShared {
    pub(crate) name: OnceLock<SockName>,
    pub(crate) flight: Flight,
    pub(crate) passcred: std::sync::atomic::AtomicBool,
    /// Its other SOL_SOCKET options (anon/sockopt.rs).
    pub(crate) opts: OptsCell,
    /// SO_COOKIE: 0 until first asked for (`cookie`).
    cookie: std::sync::atomic::AtomicU64,
    /// Epoll registrations made while the socket had no connection or
    /// listener to register with: they move there when it gets one
    /// (`Socket::adopt_standing`), as Linux's stay on the socket's own
    /// queue. (Here, not in the `Socket`: a bigger `Socket` is copied
    /// into its node with a memcpy, 54 instructions per socket.)
    standing: parking_lot::Mutex<Vec<Arc<Poller>>>,
}

pub(crate) type SockCell = Arc<SockShared>;

/// The last socket cookie given out, in this process (Linux's
/// sock_gen_cookie counts across network namespaces too).
static LAST_COOKIE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl SockShared {
    /// getsockopt(SO_COOKIE): a number no other socket of this process
    /// has, never 0, the same every time (given at the first asking).
    pub(crate) fn cookie(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        // Relaxed: the cookie is one value, published by the CAS below
        // and read on its own; the counter only hands out distinct ones.
        let c = self.cookie.load(Relaxed);
        if c != 0 {
            return c;
        }
        let new = LAST_COOKIE.fetch_add(1, Relaxed) + 1;
        match self.cookie.compare_exchange(0, new, Relaxed, Relaxed) {
            Ok(_) => new,
            Err(won) => won,
        }
    }
}

enum Link {
    Connected { conn: Arc<Conn>, side: usize },
    Listening(Arc<Listener>),
}

/// A listening socket's queue of connections not yet accepted.
pub(crate) struct Listener {
    cell: WaitCell<ListenState>,
    /// The listening socket's cell.
    socket: SockCell,
}

struct ListenState {
    /// Side 1 of each queued connection and the connecting process's
    /// credentials.
    pending: VecDeque<(Arc<Conn>, PeerCred)>,
    /// The credentials of the last listen() (what connecting sockets see
    /// as their peer's, and SO_PEERCRED on the listener).
    cred: PeerCred,
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
    /// A datagram socket's core: where a connect or send by name goes.
    dgram: Option<Arc<Dgram>>,
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
    /// SOCK_DGRAM only (and then `link` stays unset).
    dgram: Option<Arc<Dgram>>,
    link: OnceLock<Link>,
    /// Its name (getsockname's answer: bind; an accepted socket has its
    /// listener's) and its flight, shared with its `Conn` side or `Dgram`.
    cell: SockCell,
    /// Set by bind to a path.
    binding: OnceLock<Arc<Binding>>,
    /// SO_PEERCRED of a connected socket (socketpair: its maker's; a
    /// connect: the listener's; accept: the connecting process's).
    peer_cred: OnceLock<PeerCred>,
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
    fn rcv_shut(&self, s: usize) -> bool {
        let p = 1 - s;
        self.own[s] & RCV != 0 || self.own[p] & SEND != 0 || self.closed[p]
    }

    fn send_shut(&self, s: usize) -> bool {
        let p = 1 - s;
        self.own[s] & SEND != 0 || self.own[p] & RCV != 0 || self.closed[p]
    }
}

impl Socket {
    /// An unconnected socket.
    pub(crate) fn unconnected(ty: i32) -> Socket {
        let cell = SockCell::default();
        let dgram = (ty == SOCK_DGRAM).then(|| Dgram::new(cell.clone()));
        Socket::with_parts(ty, dgram, cell)
    }

    /// Side `side` of `conn` (named through the connection's cell).
    fn connected_to(ty: i32, conn: Arc<Conn>, side: usize) -> Socket {
        let s = Socket::with_parts(ty, None, conn.sides[side].clone());
        let _ = s.link.set(Link::Connected { conn, side });
        s
    }

    fn with_parts(ty: i32, dgram: Option<Arc<Dgram>>, cell: SockCell) -> Socket {
        Socket {
            ty,
            dgram,
            link: OnceLock::new(),
            cell,
            binding: OnceLock::new(),
            peer_cred: OnceLock::new(),
            bind_lock: Mutex::new(()),
            unlinked_shut: std::sync::atomic::AtomicU8::new(0),
        }
    }

    /// Registers the epoll registrations made before the socket had a
    /// connection or listener with the one it has now (`register`); the
    /// link is set, so no later poll adds to the list.
    fn adopt_standing(&self, register: impl Fn(&Arc<Poller>)) {
        for p in std::mem::take(&mut *self.cell.standing.lock()) {
            register(&p);
        }
    }

    /// Its part in the rule against cycles of files in flight.
    pub(crate) fn flight(&self) -> &Flight {
        &self.cell.flight
    }

    /// True if it listens.
    pub(crate) fn is_listener(&self) -> bool {
        self.listener().is_some()
    }

    /// SO_PASSCRED (anon/creds.rs).
    pub(crate) fn passcred(&self) -> bool {
        self.cell.passcred()
    }

    pub(crate) fn set_passcred(&self, on: bool) {
        self.cell.set_passcred(on);
    }

    /// SO_COOKIE (`SockShared::cookie`).
    pub(crate) fn cookie(&self) -> u64 {
        self.cell.cookie()
    }

    /// Its other SOL_SOCKET options (anon/sockopt.rs).
    pub(crate) fn opts(&self) -> &OptsCell {
        &self.cell.opts
    }

    /// setsockopt(SO_PEEK_OFF), under the lock its receives hold (Linux's
    /// unix_set_peek_off takes the iolock).
    pub(crate) fn set_peek_off(&self, v: i32) {
        if let Some(d) = &self.dgram {
            d.under_lock(|| self.cell.opts.set_peek_offset(v));
        } else if let Some((c, _)) = self.conn() {
            let _g = c.cell.lock();
            self.cell.opts.set_peek_offset(v);
        } else if let Some(l) = self.listener() {
            let _g = l.cell.lock();
            self.cell.opts.set_peek_offset(v);
        } else {
            self.cell.opts.set_peek_offset(v);
        }
    }

    /// What Linux's sk_write_space does after SO_SNDBUF changes: wakes the
    /// blocked writers and pollers, so they look at the new budget.
    pub(crate) fn wake_writers(&self) {
        if let Some(d) = &self.dgram {
            d.wake();
        } else if let Some((c, s)) = self.conn() {
            // unix_write_space for this side, the writer to side 1 - s.
            c.wake_writer(&mut c.cell.lock(), 1 - s);
        }
    }

    /// getsockopt(SO_ERROR): the pending error, which reading takes
    /// (sock_error).
    pub(crate) fn take_error(&self) -> Option<Errno> {
        if let Some(d) = &self.dgram {
            return d.take_error();
        }
        let (c, s) = self.conn()?;
        let e = c.cell.lock().err[s].take();
        e
    }

    /// The other side's name now (empty if it has none).
    fn peer_of(conn: &Conn, side: usize) -> SockName {
        conn.sides[1 - side]
            .name
            .get()
            .cloned()
            .unwrap_or_else(unnamed)
    }

    /// Both ends of a connected pair, made by a process with `cred`.
    pub(crate) fn pair(ty: i32, cred: PeerCred) -> (Socket, Socket) {
        let (sa, sb) = if ty == SOCK_DGRAM {
            let (sa, sb) = (Socket::unconnected(ty), Socket::unconnected(ty));
            if let (Some(a), Some(b)) = (&sa.dgram, &sb.dgram) {
                Dgram::pair_up(a, b);
            }
            (sa, sb)
        } else {
            let conn = Conn::new([SockCell::default(), SockCell::default()]);
            (
                Socket::connected_to(ty, conn.clone(), 0),
                Socket::connected_to(ty, conn, 1),
            )
        };
        let _ = sa.peer_cred.set(cred.clone());
        let _ = sb.peer_cred.set(cred);
        (sa, sb)
    }

    /// getsockopt(SO_PEERCRED): see `peer_cred`; a listener answers with
    /// its own listen()'s; none (`Ucred::NONE`) otherwise.
    pub(crate) fn peer_cred(&self) -> Ucred {
        self.peer().map_or(Ucred::NONE, |p| p.ucred)
    }

    /// getsockopt(SO_PEERGROUPS): the supplementary groups of the same
    /// credentials; None (ENODATA) for a socket without them.
    pub(crate) fn peer_groups(&self) -> Option<Vec<u32>> {
        self.peer().map(|p| p.cred.groups.clone())
    }

    fn peer(&self) -> Option<PeerCred> {
        if let Some(l) = self.listener() {
            return Some(l.cell.lock().cred.clone());
        }
        self.peer_cred.get().cloned()
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
        self.cell.name.get().cloned().unwrap_or_else(unnamed)
    }

    /// getpeername: ENOTCONN unless connected (a datagram socket whose
    /// send found its peer gone has dropped it).
    pub(crate) fn peer_name(&self) -> SysResult<SockName> {
        if let Some(d) = &self.dgram {
            return d.peer_name();
        }
        match self.link.get() {
            Some(Link::Connected { conn, side }) => Ok(Self::peer_of(conn, *side)),
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
        if self.cell.name.get().is_some() {
            return if autobind { Ok(()) } else { Err(Errno::EINVAL) };
        }
        let name = name()?;
        let b = Arc::new(Binding {
            ty: self.ty,
            name: name.clone(),
            listener: OnceLock::new(),
            dgram: self.dgram.clone(),
            file,
        });
        publish(&b)?;
        // Under the bind lock: neither is set yet.
        let _ = self.binding.set(b);
        let _ = self.cell.name.set(name);
        Ok(())
    }

    /// listen(2) by a process with `cred`: EOPNOTSUPP for datagrams,
    /// EINVAL unless bound and not connected; a second listen only changes
    /// the backlog (and the credentials).
    pub(crate) fn listen(&self, backlog: i32, cred: PeerCred) -> SysResult<()> {
        if self.ty == SOCK_DGRAM {
            return Err(Errno::EOPNOTSUPP);
        }
        let Some(binding) = self.binding.get() else {
            return Err(Errno::EINVAL);
        };
        let backlog = (backlog as u32).min(SOMAXCONN) as usize;
        let link = self.link.get_or_init(|| {
            Link::Listening(Arc::new(Listener {
                socket: self.cell.clone(),
                cell: WaitCell::new(ListenState {
                    pending: VecDeque::new(),
                    cred: cred.clone(),
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
        self.adopt_standing(|p| {
            let mut g = l.cell.lock();
            l.cell.register(&mut g, p);
        });
        let mut g = l.cell.lock();
        g.backlog = backlog;
        g.cred = cred;
        l.cell.wake_all(&mut g);
        drop(g);
        let _ = binding.listener.set(l.clone());
        Ok(())
    }

    /// connect(2) to the socket bound as `target`, in unix_stream_connect's
    /// order: the type (EPROTOTYPE), a listener that takes connections
    /// (ECONNREFUSED), room in its queue (EAGAIN, or wait), then this
    /// socket's own state (EISCONN, EINVAL for a listener). A datagram
    /// socket leaving an earlier peer drops its queue: the files it held
    /// go to `orphans`.
    pub(crate) fn connect(
        &self,
        target: &Binding,
        nonblock: bool,
        cred: PeerCred,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<()> {
        if target.ty != self.ty {
            return Err(Errno::EPROTOTYPE);
        }
        if let (Some(me), Some(to)) = (&self.dgram, &target.dgram) {
            return Dgram::connect(me, to, orphans);
        }
        let Some(l) = target.listener.get() else {
            return Err(Errno::ECONNREFUSED);
        };
        l.cell.block_on(self.cell.opts.snd_patience(nonblock), |g| {
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
            // The accepted side takes the listener's name, and its
            // SO_PASSCRED now (6.18's unix_stream_connect copies the
            // listener's scm flags to the embryo); the rest starts afresh
            // (its options are the defaults, as the embryo's).
            let accepted = SockCell::new(SockShared {
                name: OnceLock::from(target.name.clone()),
                passcred: l.socket.passcred().into(),
                ..SockShared::default()
            });
            let conn = Conn::new([self.cell.clone(), accepted]);
            {
                let mut c = conn.cell.lock();
                // Relaxed: as in `shutdown`.
                c.own[0] = self
                    .unlinked_shut
                    .load(std::sync::atomic::Ordering::Relaxed);
                c.listener = Some(l.socket.clone());
            }
            let link = Link::Connected {
                conn: conn.clone(),
                side: 0,
            };
            if self.link.set(link).is_err() {
                // Another thread connected or listened on it meanwhile.
                return Step::Done(Err(Errno::EISCONN));
            }
            self.adopt_standing(|p| {
                let mut c = conn.cell.lock();
                conn.cell.register_on(&mut c, p, 1);
            });
            let _ = self.peer_cred.set(g.cred.clone());
            g.pending.push_back((conn, cred.clone()));
            // unix_stream_connect tells the listener by sk_data_ready
            // (sock_def_readable's key): an item watching only for
            // errors or hang-ups is not queued.
            l.cell.wake_keyed(g, DATA_IN, None);
            Step::Done(Ok(()))
        })
    }

    /// FIONREAD (SIOCINQ), as unix_inq_len: the unread bytes of a stream,
    /// all queued messages' bytes for seqpacket, the next datagram's length;
    /// EINVAL for a listener, 0 for a socket with no connection.
    pub(crate) fn inq(&self) -> SysResult<usize> {
        if let Some(d) = &self.dgram {
            return Ok(d.inq());
        }
        match self.link.get() {
            Some(Link::Listening(_)) => Err(Errno::EINVAL),
            Some(Link::Connected { conn, side }) => {
                let g = conn.cell.lock();
                let d = &g.dirs[*side];
                Ok(d.bytes.len() + d.msgs.iter().map(|m| m.data.len()).sum::<usize>())
            }
            None => Ok(0),
        }
    }

    /// connect(2) to an AF_UNSPEC address: a datagram socket drops its
    /// default peer (and its queue: the files it held go to `orphans`);
    /// stream and seqpacket sockets take only AF_UNIX addresses (EINVAL).
    pub(crate) fn disconnect(&self, orphans: &mut Vec<FileRef>) -> SysResult<()> {
        match &self.dgram {
            Some(d) => {
                orphans.extend(Dgram::disconnect(d));
                Ok(())
            }
            None => Err(Errno::EINVAL),
        }
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
        // SO_RCVTIMEO bounds the wait (unix_accept receives the
        // connection as a datagram).
        let patience = self.cell.opts.rcv_patience(nonblock);
        let (conn, cred) = l.cell.block_on(patience, |g| {
            if let Some(next) = g.pending.pop_front() {
                // unix_accept wakes only the connectors waiting for room
                // in the backlog (peer_wait), not the listener's pollers:
                // an accept makes it no more ready.
                l.cell.notify_blocked(g);
                return Step::Done(Ok(next));
            }
            // A shut-down listener's wait ends with nothing: EINVAL (a
            // call that may not wait says EAGAIN first).
            if g.shut & RCV != 0 && !patience.is_never() {
                return Step::Done(Err(Errno::EINVAL));
            }
            Step::Wait(Err(Errno::EAGAIN))
        })?;
        conn.cell.lock().listener = None;
        let s = Socket::connected_to(self.ty, conn, 1);
        let _ = s.peer_cred.set(cred);
        Ok(s)
    }

    pub fn socket_type(&self) -> i32 {
        self.ty
    }

    /// The final close of this socket's file. A listener's queued
    /// connections are reset (their connecting sides read ECONNRESET).
    /// Returns the files of the messages it drops, for the caller to put
    /// (with no socket lock held).
    pub(crate) fn release(&self) -> Vec<FileRef> {
        if let Some(d) = &self.dgram {
            return d.release();
        }
        if let Some(l) = self.listener() {
            let pending = {
                let mut g = l.cell.lock();
                g.closed = true;
                l.cell.wake_all(&mut g);
                std::mem::take(&mut g.pending)
            };
            return pending
                .into_iter()
                .flat_map(|(conn, _)| conn.reset_unaccepted())
                .collect();
        }
        let Some((c, s)) = self.conn() else {
            return Vec::new();
        };
        let mut g = c.cell.lock();
        // unix_release_sock's "unread" skips a first message of no bytes
        // (it takes it for a consumed out-of-band marker): one empty
        // message alone resets nothing, one before another does.
        let d = &g.dirs[s];
        let unread = !d.bytes.is_empty()
            || d.msgs.front().is_some_and(|m| !m.data.is_empty())
            || d.msgs.len() > 1;
        if unread {
            g.err[1 - s] = Some(Errno::ECONNRESET);
        }
        g.closed[s] = true;
        let files = g.dirs[s].purge(&c.sides[s].flight);
        // unix_release_sock: the peer's state changed (this side's
        // watchers went with its file).
        c.cell.wake_keyed(&mut g, 0, Some(1 - s));
        files
    }

    pub(crate) fn shutdown(&self, how: i32) -> SysResult<()> {
        let bits = match how {
            SHUT_RD => RCV,
            SHUT_WR => SEND,
            SHUT_RDWR => RCV | SEND,
            _ => return Err(Errno::EINVAL),
        };
        if let Some(d) = &self.dgram {
            d.shutdown(bits);
        } else if let Some((c, s)) = self.conn() {
            let mut g = c.cell.lock();
            g.own[s] |= bits;
            // unix_shutdown wakes this socket's queue, then its peer's.
            c.cell.wake_keyed(&mut g, 0, Some(s));
            c.cell.wake_keyed(&mut g, 0, Some(1 - s));
        } else if let Some(l) = self.listener() {
            let mut g = l.cell.lock();
            g.shut |= bits;
            l.cell.wake_all(&mut g);
        } else {
            // Relaxed: read by this socket's later connect, listen and poll,
            // which a caller orders after this call itself (no pairing).
            self.unlinked_shut
                .fetch_or(bits, std::sync::atomic::Ordering::Relaxed);
            // unix_shutdown's sk_state_change wakes the socket's own
            // queue, connected or not: its epoll items (newest first, as
            // add_wait_queue keeps them), outside the list's lock.
            let standing = self.cell.standing.lock().clone();
            standing.iter().rev().for_each(|p| p.wake_keyed(0));
        }
        Ok(())
    }

    /// recvmsg: MSG_PEEK leaves what it copied queued; MSG_TRUNC makes a
    /// datagram or seqpacket receive return the whole message's length;
    /// MSG_OOB finds no out-of-band data (EINVAL for stream, else
    /// EOPNOTSUPP); MSG_WAITALL fills a stream read's buffers unless it
    /// peeks; other bits are
    /// ignored, as Linux's AF_UNIX ignores them. The sender's name comes
    /// with the data (a connection's peer for stream and seqpacket).
    pub(crate) fn recv(
        &self,
        bufs: &mut [&mut [u8]],
        flags: i32,
        nonblock: bool,
    ) -> SysResult<Received> {
        let (peek, trunc) = (flags & MSG_PEEK != 0, flags & MSG_TRUNC != 0);
        let patience = self
            .cell
            .opts
            .rcv_patience(nonblock || flags & MSG_DONTWAIT != 0);
        if let Some(d) = &self.dgram {
            if flags & MSG_OOB != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            return d.recv(bufs, peek, trunc, patience);
        }
        let Some(Link::Connected { conn: c, side }) = self.link.get() else {
            return Err(match self.ty {
                SOCK_STREAM => Errno::EINVAL,
                _ => Errno::ENOTCONN,
            });
        };
        if flags & MSG_OOB != 0 {
            // A stream socket has no out-of-band byte to read (Linux's
            // unix_stream_recv_urg); seqpacket has none at all.
            return Err(if self.ty == SOCK_STREAM {
                Errno::EINVAL
            } else {
                Errno::EOPNOTSUPP
            });
        }
        let s = *side;
        let flight = &c.sides[s].flight;
        // A stream read goes on until it has `target` bytes (or an
        // error, EOF, files, a writer change, or its patience ends):
        // MSG_WAITALL's whole buffer, else SO_RCVLOWAT's (sock_rcvlowat);
        // a peek takes what is there.
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        // SO_PEEK_OFF: where a peek starts (read once, at the start, as
        // Linux reads it once per call).
        let peek_off = self.cell.opts.peek_offset(peek);
        let mut skip = peek_off.max(0) as usize;
        let target = if peek {
            1
        } else if flags & MSG_WAITALL != 0 {
            want
        } else {
            self.cell.opts.rcvlowat().min(want).max(1)
        };
        let mut to = Scatter::new(bufs);
        let mut got = 0;
        let mut files = Vec::new();
        // With SO_PASSCRED (read once, as Linux's check_creds): the
        // credentials of what was taken (anon/creds.rs).
        let passcred = self.cell.passcred();
        let mut creds: Option<MsgCreds> = None;
        // Whether data was found: only then does the sender's name come
        // back (unix_copy_addr runs on a received skb; an end of file has
        // none).
        let mut found = false;
        // (bytes copied, or the message's length with MSG_TRUNC; truncated)
        let r = c.cell.block_on(patience, |g| {
            // unix_seqpacket_recvmsg receives as a datagram socket does
            // (__skb_try_recv_datagram): a pending error is reported, and
            // cleared, before any queued message. A stream read takes the
            // bytes first and the error once the queue is empty (below).
            if self.ty == SOCK_SEQPACKET {
                if let Some(e) = g.err[s].take() {
                    return Step::Done(Err(e));
                }
            }
            if self.ty == SOCK_STREAM {
                let queued = g.dirs[s].bytes.len();
                if queued > 0 && skip >= queued {
                    // A peek at SO_PEEK_OFF past everything queued: Linux
                    // walks past the skbs there, taking their length off
                    // its offset, and waits for more as for an empty queue.
                    skip -= queued;
                } else if queued > 0 {
                    found = true;
                    let d = &mut g.dirs[s];
                    // The stream offset the read starts at.
                    let base = d.taken + skip as u64;
                    let mut n = (queued - skip).min(want - got);
                    // A reader with SO_PASSCRED takes one writer's bytes
                    // at a time: it stops where their credentials change.
                    let mut at_writer_change = false;
                    // Where the next writer's bytes begin (SO_PASSCRED only).
                    let mut next_writer = None;
                    if passcred {
                        let (here, change) = d.creds.at(base);
                        match creds {
                            Some(c) if c != here => return Step::Done(Ok((got, false))),
                            _ => creds = Some(here),
                        }
                        next_writer = change;
                        if let Some(change) = change {
                            let k = (change - base) as usize;
                            if k <= n {
                                n = k;
                                at_writer_change = true;
                            }
                        }
                    }
                    // A read that reaches a send's files takes them and
                    // ends with that send's first segment (even a read of
                    // no bytes takes files at the front, as Linux).
                    let mark = d.marks.iter().position(|m| m.end > base);
                    let reached = mark.is_some_and(|i| {
                        let at = d.marks[i].start.saturating_sub(base) as usize;
                        at < n || (at == 0 && n == 0)
                    });
                    if let (true, Some(i)) = (reached, mark) {
                        n = n.min((d.marks[i].end - base) as usize);
                        files = if peek {
                            d.marks[i].files.peek()
                        } else {
                            // Not a peek: no offset, so the front mark.
                            d.marks
                                .pop_front()
                                .map_or_else(Vec::new, |m| m.files.leave(flight))
                        };
                    } else if let (true, Some(i)) = (peek, mark) {
                        // A peek that copied what it asked for before the
                        // next files still walks on, segment by segment,
                        // to the first one carrying files and takes copies
                        // of them (unix_stream_read_generic's peek branch,
                        // "questionable"): even a peek of no bytes reports
                        // them, or MSG_CTRUNC without room. Only another
                        // writer's segment (SO_PASSCRED) stops the walk.
                        if next_writer.is_none_or(|w| w > d.marks[i].start) {
                            files = d.marks[i].files.peek();
                        }
                    }
                    // Bytes skip..skip + n of the queue (skip: a peek's).
                    let (front, back) = d.bytes.as_slices();
                    if skip < front.len() {
                        let k = (front.len() - skip).min(n);
                        to.put(&front[skip..skip + k]);
                        to.put(&back[..n - k]);
                    } else {
                        let b = skip - front.len();
                        to.put(&back[b..b + n]);
                    }
                    got += n;
                    if peek {
                        self.cell.opts.move_peek_offset(-(n as i64));
                    } else {
                        self.cell.opts.move_peek_offset(n as i64);
                        d.bytes.drain(..n);
                        d.taken += n as u64;
                        d.creds.forget_before(d.taken);
                        // Segments read to their end free their cost (and
                        // only a freed skb tells the writer, sock_wfree).
                        let mut freed = false;
                        while let Some(&(end, cost)) = d.segs.front() {
                            if end > d.taken {
                                break;
                            }
                            d.segs.pop_front();
                            d.queued -= cost;
                            freed = true;
                        }
                        if freed {
                            c.wake_writer(g, s);
                        } else {
                            c.cell.notify_blocked(g);
                        }
                    }
                    if reached || at_writer_change || got >= target || got == want {
                        return Step::Done(Ok((got, false)));
                    }
                }
            } else if let Some((i, skip)) = pick_message(
                peek_off,
                g.dirs[s].msgs.iter().map(|m| (m.data.len(), m.peeked)),
            ) {
                // Copy what fits (from a peek's offset); the rest of the
                // message is discarded.
                let m = &mut g.dirs[s].msgs[i];
                let at = to.put(&m.data[skip..]);
                let rest = m.data.len() - skip;
                creds = Some(m.creds);
                found = true;
                if peek {
                    m.peeked |= m.data.is_empty();
                    files = m.files.as_ref().map(InFlight::peek).unwrap_or_default();
                    self.cell.opts.move_peek_offset(-(at as i64));
                } else {
                    // Not a peek: the front message, whole (`rest`).
                    let d = &mut g.dirs[s];
                    let m = d.msgs.pop_front().expect("the front message");
                    d.queued -= message_truesize(rest);
                    self.cell.opts.move_peek_offset(rest as i64);
                    files = m.files.map(|f| f.leave(flight)).unwrap_or_default();
                    c.wake_writer(g, s);
                }
                return Step::Done(Ok((if trunc { rest } else { at }, at < rest)));
            }
            if let Some(e) = g.err[s].take() {
                return Step::Done(if got > 0 { Ok((got, false)) } else { Err(e) });
            }
            if g.rcv_shut(s) {
                return Step::Done(Ok((got, false)));
            }
            Step::Wait(if got > 0 {
                Ok((got, false))
            } else {
                Err(Errno::EAGAIN)
            })
        });
        // Only a successful receive takes files.
        debug_assert!(r.is_ok() || files.is_empty());
        let (len, truncated) = r?;
        // A stream read that took nothing still reports (zeroed)
        // credentials; a seqpacket one at its end returns before that.
        let creds = match creds {
            Some(c) => passcred.then(|| reported(c)),
            None => (passcred && self.ty == SOCK_STREAM).then_some(NO_DATA),
        };
        Ok(Received {
            len,
            from: if found {
                Self::peer_of(c, s)
            } else {
                unnamed()
            },
            files,
            truncated,
            creds,
        })
    }

    /// What unix_seqpacket_sendmsg checks before anything else, the files
    /// included: a pending error (reported once), then ENOTCONN unless
    /// connected. Nothing for the other types.
    pub(crate) fn seqpacket_send_precheck(&self) -> SysResult<()> {
        if self.ty != SOCK_SEQPACKET {
            return Ok(());
        }
        let Some((c, s)) = self.conn() else {
            return Err(Errno::ENOTCONN);
        };
        match c.cell.lock().err[s].take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// write(2): `send` without flags, name or files.
    pub(crate) fn write(
        &self,
        bufs: &[&[u8]],
        nonblock: bool,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<usize> {
        self.send(bufs, 0, nonblock, None, None, creds, orphans)
    }

    /// sendmsg: `to` finds the socket a name leads to (for a datagram
    /// socket's send by name; a connected stream socket says EISCONN, an
    /// unconnected one EOPNOTSUPP, seqpacket ignores the name, as Linux).
    /// MSG_DONTWAIT makes it non-blocking; MSG_OOB is EOPNOTSUPP; other
    /// bits are ignored (no signals are sent, so MSG_NOSIGNAL is moot).
    /// `files` travel with the message (with a stream's first segment) if
    /// it goes; else they go to `orphans`, with the files of any messages
    /// the send dropped (a datagram peer found closed). `creds`: what the
    /// data carries (anon/creds.rs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send(
        &self,
        bufs: &[&[u8]],
        flags: i32,
        nonblock: bool,
        to: Option<&dyn Fn() -> SysResult<Arc<Binding>>>,
        files: Option<InFlight>,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<usize> {
        let mut files = files;
        let r = self.send_carrying(bufs, flags, nonblock, to, &mut files, creds, orphans);
        if let Some(f) = files {
            orphans.extend(f.unsent());
        }
        r
    }

    /// `send`, taking `files` out of the option once they are queued.
    #[allow(clippy::too_many_arguments)]
    fn send_carrying(
        &self,
        bufs: &[&[u8]],
        flags: i32,
        nonblock: bool,
        to: Option<&dyn Fn() -> SysResult<Arc<Binding>>>,
        files: &mut Option<InFlight>,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<usize> {
        let patience = self
            .cell
            .opts
            .snd_patience(nonblock || flags & MSG_DONTWAIT != 0);
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        // unix_seqpacket_sendmsg: a pending error, then the state, before
        // unix_dgram_sendmsg's checks (MSG_OOB, the size); looked at here
        // only when one of those would fail (a send that goes on takes
        // the error under the connection's lock below).
        if self.ty == SOCK_SEQPACKET && (flags & MSG_OOB != 0 || len > self.cell.opts.sndbuf() - 32)
        {
            self.seqpacket_send_precheck()?;
        }
        if flags & MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if let Some(d) = &self.dgram {
            let find = to.map(|find| {
                move || -> SysResult<Arc<Dgram>> {
                    let b = find()?;
                    b.dgram.clone().ok_or(Errno::EPROTOTYPE)
                }
            });
            return Dgram::send(
                d,
                bufs,
                patience,
                find.as_ref()
                    .map(|f| f as &dyn Fn() -> SysResult<Arc<Dgram>>),
                files,
                creds,
                orphans,
            );
        }
        if to.is_some() && self.ty == SOCK_STREAM {
            return Err(match self.link.get() {
                Some(Link::Connected { .. }) => Errno::EISCONN,
                _ => Errno::EOPNOTSUPP,
            });
        }
        let Some((c, s)) = self.conn() else {
            return Err(Errno::ENOTCONN);
        };
        let p = 1 - s;
        if self.ty == SOCK_SEQPACKET {
            if len > self.cell.opts.sndbuf() - 32 {
                return Err(Errno::EMSGSIZE);
            }
            return c.cell.block_on(patience, |g| {
                // unix_seqpacket_sendmsg reports (and clears) a pending
                // error first: ECONNRESET after the peer closed unread.
                if let Some(e) = g.err[s].take() {
                    return Step::Done(Err(e));
                }
                if g.send_shut(s) {
                    return Step::Done(Err(Errno::EPIPE));
                }
                if g.dirs[p].queued < self.cell.opts.sndbuf() {
                    if let Some(f) = files.as_ref() {
                        if let Err(e) = f.check_user().and_then(|()| {
                            f.admit(&c.sides[p].flight, g.listener.as_ref().map(|l| &l.flight))
                        }) {
                            return Step::Done(Err(e));
                        }
                    }
                    let d = &mut g.dirs[p];
                    d.queued += message_truesize(len);
                    d.msgs.push_back(Message {
                        data: bufs.concat(),
                        files: files.take(),
                        creds: creds.attach(&c.sides[s], &c.sides[p]),
                        peeked: false,
                    });
                    c.cell.wake_keyed(g, DATA_IN, Some(p));
                    return Step::Done(Ok(len));
                }
                Step::Wait(Err(Errno::EAGAIN))
            });
        }
        if len == 0 {
            // unix_stream_sendmsg checks the shutdown state before its
            // (empty) send loop, which queues nothing: files sent with no
            // bytes are dropped.
            return c.cell.block_on(Patience::Never, |g| {
                Step::Done(if g.send_shut(s) {
                    Err(Errno::EPIPE)
                } else {
                    Ok(0)
                })
            });
        }
        let mut src = bufs.iter().flat_map(|b| b.iter().copied());
        let mut done = 0;
        // One wait per round, each with the whole SO_SNDTIMEO: Linux waits
        // in sock_alloc_send_pskb once per segment, its timeout started
        // afresh, so a send that a slow reader keeps draining is not cut
        // by the sum of its waits. A round ends when it queued something.
        let mut patience = patience;
        loop {
            let before = done;
            let r = self.stream_send_round(c, s, &mut src, len, &mut done, patience, files, &creds);
            match r {
                Ok(n) if n > before && n < len => {}
                r => return r,
            }
            patience = self
                .cell
                .opts
                .snd_patience(nonblock || flags & MSG_DONTWAIT != 0);
        }
    }

    /// One round of a stream send (`send_carrying`): waits with `patience`
    /// until it can queue, then queues what the writer's budget lets in,
    /// in segments; returns the running count once it queued anything.
    #[allow(clippy::too_many_arguments)]
    fn stream_send_round(
        &self,
        c: &Conn,
        s: usize,
        src: &mut impl Iterator<Item = u8>,
        len: usize,
        done: &mut usize,
        patience: Patience,
        files: &mut Option<InFlight>,
        creds: &SendCreds,
    ) -> SysResult<usize> {
        let p = 1 - s;
        let before = *done;
        c.cell.block_on(patience, |g| {
            let done = &mut *done;
            if g.send_shut(s) {
                return Step::Done(partial(*done, Errno::EPIPE));
            }
            // sock_alloc_send_pskb lets a segment in, whole, while the
            // writer's queued skbs cost less than its SO_SNDBUF.
            let sndbuf = self.cell.opts.sndbuf();
            if g.dirs[p].queued >= sndbuf {
                return Step::Wait(partial(*done, Errno::EAGAIN));
            }
            if let Some(f) = files.as_ref() {
                if let Err(e) = f.check_user().and_then(|()| {
                    f.admit(&c.sides[p].flight, g.listener.as_ref().map(|l| &l.flight))
                }) {
                    return Step::Done(Err(e));
                }
            }
            let d = &mut g.dirs[p];
            while *done < len && d.queued < sndbuf {
                let (n, cost) = stream_segment(len - *done, sndbuf);
                let at = d.taken + d.bytes.len() as u64;
                let end = at + n as u64;
                // The first segment carries the files.
                if let Some(f) = files.take() {
                    d.marks.push_back(Mark {
                        start: at,
                        end,
                        files: f,
                    });
                }
                // Each segment is an skb of its own: its credentials are
                // decided now (SO_PASSCRED may have changed meanwhile).
                d.creds.note(at, creds.attach(&c.sides[s], &c.sides[p]));
                d.bytes.extend(src.by_ref().take(n));
                d.segs.push_back((end, cost));
                d.queued += cost;
                *done += n;
            }
            if *done > before {
                c.cell.wake_keyed(g, DATA_IN, Some(p));
                return Step::Done(Ok(*done));
            }
            Step::Wait(partial(*done, Errno::EAGAIN))
        })
    }

    pub(crate) fn poll(&self, p: Option<&Arc<Poller>>) -> i16 {
        if let Some(d) = &self.dgram {
            return Dgram::poll(d, p);
        }
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
            if let Some(p) = p.filter(|p| p.is_standing()) {
                let mut standing = self.cell.standing.lock();
                if self.link.get().is_some() {
                    // Connected or listening meanwhile: register there.
                    drop(standing);
                    return self.poll(Some(p));
                }
                if !standing.iter().any(|q| Arc::ptr_eq(q, p)) {
                    standing.push(p.clone());
                }
            }
            // Nothing queued is always writable; an unconnected stream or
            // seqpacket socket is "closed" (POLLHUP), as unix_poll says.
            // Relaxed: as in `shutdown`.
            let shut = self
                .unlinked_shut
                .load(std::sync::atomic::Ordering::Relaxed);
            let mut m = POLLOUT | POLLWRNORM | POLLHUP;
            if shut & RCV != 0 {
                m |= POLLRDHUP | POLLIN | POLLRDNORM;
            }
            return m;
        };
        let mut g = c.cell.lock();
        if let Some(p) = p {
            // Each socket of the pair has its own queue in Linux.
            c.cell.register_on(&mut g, p, 1 << s);
        }
        let mut m = 0;
        if g.err[s].is_some() {
            m |= POLLERR;
        }
        let rcv = g.rcv_shut(s);
        if rcv && g.send_shut(s) {
            m |= POLLHUP;
        }
        if rcv {
            m |= POLLRDHUP | POLLIN | POLLRDNORM;
        }
        if g.dirs[s].queued > 0 || !g.dirs[s].msgs.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        if has_write_room(g.dirs[1 - s].queued, self.cell.opts.sndbuf()) {
            m |= POLLOUT | POLLWRNORM;
        }
        m
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.cell.standing.lock().retain(|q| !Arc::ptr_eq(q, p));
        if let Some(d) = &self.dgram {
            d.unregister(p);
        } else if let Some((c, _)) = self.conn() {
            c.cell.unregister(p);
        } else if let Some(l) = self.listener() {
            l.cell.unregister(p);
        }
    }
}
