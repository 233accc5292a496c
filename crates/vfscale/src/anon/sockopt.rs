//! The SOL_SOCKET options an AF_UNIX socket keeps, as Linux's
//! sk_setsockopt and sk_getsockopt keep them (net/core/sock.c, 6.18):
//! the buffer sizes, the receive low-water mark, the receive and send
//! timeouts, linger, priority, mark, the buffer locks and the plain flags.
//! The options that belong to the socket's connection state (SO_TYPE,
//! SO_ERROR, SO_PEERCRED, SO_ACCEPTCONN, SO_PASSCRED) are answered by
//! `process/sockets.rs`, which asks here for the rest.
//!
//! What the options change:
//! - SO_SNDBUF is the sender's budget (anon/socket.rs, anon/dgram.rs):
//!   what its queued skbs may cost before a send waits, the largest
//!   datagram, a stream send's segment size, and when poll says POLLOUT.
//! - SO_RCVTIMEO and SO_SNDTIMEO bound a blocking receive (and accept) or
//!   send (and connect): past them the call returns EAGAIN, or what it
//!   moved so far (`Patience`).
//! - SO_RCVLOWAT is how many bytes a blocking stream read waits for.
//! - SO_PEEK_OFF, when not negative, is where a MSG_PEEK starts reading
//!   (a peek moves it forward by what it copied, a read back by what it
//!   took: `peek_offset` and `move_peek_offset`, Linux's sk_peek_offset*),
//!   changed only with the socket's receive lock held, as Linux holds the
//!   socket's iolock.
//! - The others are kept and reported only, as on Linux for AF_UNIX
//!   (SO_LINGER, SO_KEEPALIVE, SO_REUSEADDR, … have no effect on it).
//!
//! Invariants: every option is one atomic value (the flags one word),
//! written by setsockopt and read on its own by the calls it changes,
//! as Linux's READ_ONCE/WRITE_ONCE: a call racing a setsockopt sees the old
//! or the new value, nothing else is ordered by them (all Relaxed). A new
//! socket, an accepted one included, starts with the defaults (Linux makes
//! the accepted socket afresh in unix_stream_connect). A socket's values
//! are allocated at its first setsockopt (`OptsCell`, a `OnceLock`):
//! until then every read answers the shared defaults, so a socket that
//! never sets an option (most) carries 16 bytes for them, not 48.

use super::socket::SOCK_BUF;
use super::wait::Patience;
use crate::abi::*;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The kernel's timer tick (CONFIG_HZ of Debian's and Ubuntu's kernels,
/// and of the host this was checked on): timeouts are kept in ticks, so
/// getsockopt reports them rounded as Linux does.
pub(crate) const HZ: i64 = 250;
/// net.core.wmem_max and rmem_max (4 MiB on the 6.18 host the kernel
/// comparison runs on): the most SO_SNDBUF and SO_RCVBUF take (before
/// doubling).
const BUF_MAX: u32 = 4 << 20;
/// SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF on x86_64: twice and once
/// TCP_SKB_MIN_TRUESIZE (2048 bytes and the 256-byte sk_buff).
const MIN_SNDBUF: i32 = 4608;
const MIN_RCVBUF: i32 = 2304;
/// MAX_SCHEDULE_TIMEOUT: wait forever.
const FOREVER: i64 = i64::MAX;

// Bits of `flags`.
const DEBUG: u32 = 1 << 0;
const REUSEADDR: u32 = 1 << 1;
const DONTROUTE: u32 = 1 << 2;
const BROADCAST: u32 = 1 << 3;
const KEEPALIVE: u32 = 1 << 4;
const OOBINLINE: u32 = 1 << 5;
const NO_CHECK: u32 = 1 << 6;
const LINGER: u32 = 1 << 7;
/// SOCK_SNDBUF_LOCK and SOCK_RCVBUF_LOCK (SO_BUF_LOCK's bits), here
/// shifted by `LOCK_SHIFT`.
const LOCK_SHIFT: u32 = 8;
const BUF_LOCK_MASK: i32 = 3;

struct SockOpts {
    sndbuf: AtomicI32,
    rcvbuf: AtomicI32,
    rcvlowat: AtomicI32,
    /// Ticks; 0: do not wait; `FOREVER`.
    rcvtimeo: AtomicI64,
    sndtimeo: AtomicI64,
    /// Ticks.
    lingertime: AtomicI64,
    priority: AtomicU32,
    mark: AtomicU32,
    flags: AtomicU32,
    /// SO_PEEK_OFF; negative: peeks start at the front (-1 unless set).
    peek_off: AtomicI32,
}

impl SockOpts {
    const fn new() -> Self {
        SockOpts {
            sndbuf: AtomicI32::new(SOCK_BUF as i32),
            rcvbuf: AtomicI32::new(SOCK_BUF as i32),
            rcvlowat: AtomicI32::new(1),
            rcvtimeo: AtomicI64::new(FOREVER),
            sndtimeo: AtomicI64::new(FOREVER),
            lingertime: AtomicI64::new(0),
            priority: AtomicU32::new(0),
            mark: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            peek_off: AtomicI32::new(-1),
        }
    }
}

/// What a socket that never set an option reads (never written: setting
/// an option allocates the socket's own values first).
static DEFAULTS: SockOpts = SockOpts::new();

/// A socket's options: the defaults until its first setsockopt.
#[derive(Default)]
pub(crate) struct OptsCell(OnceLock<Box<SockOpts>>);

impl OptsCell {
    fn values(&self) -> &SockOpts {
        self.0.get().map_or(&DEFAULTS, |b| b)
    }

    /// The socket's own values, allocated at the first change.
    fn own(&self) -> &SockOpts {
        self.0.get_or_init(|| Box::new(SockOpts::new()))
    }

    /// SO_SNDBUF: the sender's budget in bytes of skb truesize.
    pub(crate) fn sndbuf(&self) -> usize {
        self.values().sndbuf()
    }

    /// SO_RCVLOWAT: the bytes a blocking stream read waits for.
    pub(crate) fn rcvlowat(&self) -> usize {
        self.values().rcvlowat()
    }

    /// How long a receive (or accept) may wait (sock_rcvtimeo).
    pub(crate) fn rcv_patience(&self, nonblock: bool) -> Patience {
        self.values().rcv_patience(nonblock)
    }

    /// How long a send (or connect) may wait (sock_sndtimeo).
    pub(crate) fn snd_patience(&self, nonblock: bool) -> Patience {
        self.values().snd_patience(nonblock)
    }

    /// setsockopt of an option kept here (`SockOpts::set`); the first
    /// one allocates the socket's values.
    pub(crate) fn set(&self, name: i32, value: &[u8], privileged: bool) -> Option<SysResult<()>> {
        self.own().set(name, value, privileged)
    }

    /// getsockopt of an option kept here (`SockOpts::get`).
    pub(crate) fn get(&self, name: i32) -> Option<Vec<u8>> {
        self.values().get(name)
    }

    /// SO_PEEK_OFF (any value; a negative one turns it off). Call with
    /// the socket's receive lock held (`Socket::set_peek_off`).
    pub(crate) fn set_peek_offset(&self, v: i32) {
        // Relaxed: written under the receive lock, whose release orders
        // it for the receives that move it.
        self.own().peek_off.store(v, Ordering::Relaxed);
    }

    /// Where a receive starts (sk_peek_offset): SO_PEEK_OFF for a
    /// MSG_PEEK (`peek`), else nothing (negative).
    pub(crate) fn peek_offset(&self, peek: bool) -> i32 {
        if !peek {
            return -1;
        }
        // Relaxed: one option value, read once as a receive starts (before
        // its lock: a setsockopt racing the receive is seen or not, as one
        // racing Linux's is ordered before or after it by the iolock).
        self.values().peek_off.load(Ordering::Relaxed)
    }

    /// A receive took (`taken`, positive) or peeked at (negative) that
    /// many bytes: SO_PEEK_OFF, if on, moves back (not below 0) or on, as
    /// sk_peek_offset_bwd/fwd (32-bit arithmetic, as there). Under the
    /// receive lock.
    pub(crate) fn move_peek_offset(&self, taken: i64) {
        let Some(o) = self.0.get() else {
            return;
        };
        // Relaxed: under the receive lock (see `set_peek_offset`).
        let off = o.peek_off.load(Ordering::Relaxed);
        if off >= 0 {
            o.peek_off
                .store(off.wrapping_sub(taken as i32).max(0), Ordering::Relaxed);
        }
    }
}

/// A flag option's bit.
fn flag_bit(name: i32) -> Option<u32> {
    Some(match name {
        SO_DEBUG => DEBUG,
        SO_REUSEADDR => REUSEADDR,
        SO_DONTROUTE => DONTROUTE,
        SO_BROADCAST => BROADCAST,
        SO_KEEPALIVE => KEEPALIVE,
        SO_OOBINLINE => OOBINLINE,
        SO_NO_CHECK => NO_CHECK,
        _ => return None,
    })
}

/// How long a call may wait: `nonblock`, or a timeout of 0 ticks, means
/// not at all.
fn patience(nonblock: bool, ticks: i64) -> Patience {
    match ticks {
        _ if nonblock => Patience::Never,
        0 => Patience::Never,
        FOREVER => Patience::Forever,
        t => {
            let d = Duration::from_nanos((t as u64).saturating_mul(1_000_000_000 / HZ as u64));
            Instant::now()
                .checked_add(d)
                .map_or(Patience::Forever, Patience::Until)
        }
    }
}

/// sock_set_timeout: a struct timeval (16 bytes, both the old and the new
/// option) to ticks. EDOM for microseconds outside 0..1,000,000; a
/// negative second count means "do not wait" (Linux warns and sets 0);
/// zero means forever.
fn timeout_ticks(value: &[u8]) -> SysResult<i64> {
    let Some(tv) = value.first_chunk::<16>() else {
        return Err(Errno::EINVAL);
    };
    let sec = i64::from_le_bytes(tv[..8].try_into().expect("8 bytes"));
    let usec = i64::from_le_bytes(tv[8..].try_into().expect("8 bytes"));
    if !(0..1_000_000).contains(&usec) {
        return Err(Errno::EDOM);
    }
    if sec < 0 {
        return Ok(0);
    }
    if (sec == 0 && usec == 0) || sec >= FOREVER / HZ - 1 {
        return Ok(FOREVER);
    }
    Ok(sec * HZ + (usec as u64).div_ceil(1_000_000 / HZ as u64) as i64)
}

/// sock_get_timeout: ticks as a struct timeval (forever as zero).
fn timeval(ticks: i64) -> Vec<u8> {
    let (sec, usec) = if ticks == FOREVER {
        (0, 0)
    } else {
        (ticks / HZ, (ticks % HZ) * 1_000_000 / HZ)
    };
    [sec.to_le_bytes(), usec.to_le_bytes()].concat()
}

/// Which queued message a receive takes or peeks at, and from where in
/// it (__skb_try_recv_from_queue), given `offset` (`OptsCell::
/// peek_offset`) and each message's length and whether it was peeked at:
/// the first, from its start, unless the offset is not negative; then
/// whole messages are passed while the offset covers them (an empty one
/// only once peeked at), and what is left of the offset is the start in
/// the one found. None: nothing there.
pub(crate) fn pick_message(
    offset: i32,
    msgs: impl Iterator<Item = (usize, bool)>,
) -> Option<(usize, usize)> {
    let mut off = offset.max(0) as usize;
    for (i, (len, peeked)) in msgs.enumerate() {
        if offset >= 0 && off >= len && (off > 0 || peeked) {
            off -= len;
            continue;
        }
        return Some((i, off));
    }
    None
}

impl SockOpts {
    fn sndbuf(&self) -> usize {
        // Relaxed: one option value (module comment).
        self.sndbuf.load(Ordering::Relaxed) as usize
    }

    fn rcvlowat(&self) -> usize {
        // Relaxed: one option value (module comment).
        self.rcvlowat.load(Ordering::Relaxed) as usize
    }

    fn rcv_patience(&self, nonblock: bool) -> Patience {
        // Relaxed: one option value (module comment).
        patience(nonblock, self.rcvtimeo.load(Ordering::Relaxed))
    }

    fn snd_patience(&self, nonblock: bool) -> Patience {
        // Relaxed: one option value (module comment).
        patience(nonblock, self.sndtimeo.load(Ordering::Relaxed))
    }

    /// setsockopt(SOL_SOCKET, `name`) for the options kept here, after
    /// the caller's checks (a value of at least an int). `privileged`:
    /// the caller has CAP_NET_ADMIN (vfscale: effective uid 0). Returns
    /// None for an option this module does not keep.
    fn set(&self, name: i32, value: &[u8], privileged: bool) -> Option<SysResult<()>> {
        let v = i32::from_le_bytes(*value.first_chunk::<4>()?);
        // Relaxed throughout: option values (module comment).
        let r = Ordering::Relaxed;
        let done = Some(Ok(()));
        if let Some(bit) = flag_bit(name) {
            if name == SO_DEBUG && v != 0 && !privileged {
                return Some(Err(Errno::EACCES));
            }
            if v != 0 {
                self.flags.fetch_or(bit, r);
            } else {
                self.flags.fetch_and(!bit, r);
            }
            return done;
        }
        let sndbuf = |v: i32| {
            self.flags.fetch_or(1 << LOCK_SHIFT, r);
            self.sndbuf
                .store(v.min(i32::MAX / 2).saturating_mul(2).max(MIN_SNDBUF), r);
        };
        let rcvbuf = |v: i32| {
            self.flags.fetch_or(2 << LOCK_SHIFT, r);
            self.rcvbuf
                .store(v.min(i32::MAX / 2).saturating_mul(2).max(MIN_RCVBUF), r);
        };
        match name {
            // The value is read as unsigned, so a negative one is large.
            SO_SNDBUF => sndbuf((v as u32).min(BUF_MAX) as i32),
            SO_RCVBUF => rcvbuf((v as u32).min(BUF_MAX) as i32),
            SO_SNDBUFFORCE | SO_RCVBUFFORCE if !privileged => return Some(Err(Errno::EPERM)),
            SO_SNDBUFFORCE => sndbuf(v.max(0)),
            SO_RCVBUFFORCE => rcvbuf(v.max(0)),
            SO_BUF_LOCK => {
                if v & !BUF_LOCK_MASK != 0 {
                    return Some(Err(Errno::EINVAL));
                }
                let locks = (BUF_LOCK_MASK as u32) << LOCK_SHIFT;
                let _ = self
                    .flags
                    .fetch_update(r, r, |f| Some((f & !locks) | ((v as u32) << LOCK_SHIFT)));
            }
            SO_RCVLOWAT => self
                .rcvlowat
                .store(if v < 0 { i32::MAX } else { v.max(1) }, r),
            SO_RCVTIMEO_OLD | SO_RCVTIMEO_NEW => match timeout_ticks(value) {
                Ok(t) => self.rcvtimeo.store(t, r),
                Err(e) => return Some(Err(e)),
            },
            SO_SNDTIMEO_OLD | SO_SNDTIMEO_NEW => match timeout_ticks(value) {
                Ok(t) => self.sndtimeo.store(t, r),
                Err(e) => return Some(Err(e)),
            },
            SO_LINGER => {
                let Some(l) = value.first_chunk::<8>() else {
                    return Some(Err(Errno::EINVAL));
                };
                let on = i32::from_le_bytes(l[..4].try_into().expect("4 bytes"));
                if on == 0 {
                    self.flags.fetch_and(!LINGER, r);
                } else {
                    // l_linger is read as an unsigned long: negative is
                    // past any bound, so forever.
                    let secs =
                        i32::from_le_bytes(l[4..].try_into().expect("4 bytes")) as i64 as u64;
                    let ticks = if secs >= (FOREVER / HZ) as u64 {
                        FOREVER
                    } else {
                        secs as i64 * HZ
                    };
                    self.lingertime.store(ticks, r);
                    self.flags.fetch_or(LINGER, r);
                }
            }
            // Priorities 0 to 6 are anyone's; others need CAP_NET_ADMIN.
            SO_PRIORITY if (0..=6).contains(&v) || privileged => self.priority.store(v as u32, r),
            SO_PRIORITY | SO_MARK if !privileged => return Some(Err(Errno::EPERM)),
            SO_MARK => self.mark.store(v as u32, r),
            SO_BSDCOMPAT => {}
            // Only inet sockets may share a port.
            SO_REUSEPORT if v != 0 => return Some(Err(Errno::EOPNOTSUPP)),
            SO_REUSEPORT => {}
            _ => return None,
        }
        done
    }

    /// getsockopt(SOL_SOCKET, `name`)'s whole value for the options kept
    /// here (the caller cuts it to the buffer); None for others.
    fn get(&self, name: i32) -> Option<Vec<u8>> {
        // Relaxed throughout: option values (module comment).
        let r = Ordering::Relaxed;
        let int = |v: i32| Some(v.to_le_bytes().to_vec());
        let flags = self.flags.load(r);
        if let Some(bit) = flag_bit(name) {
            return int(i32::from(flags & bit != 0));
        }
        match name {
            SO_SNDBUF => int(self.sndbuf.load(r)),
            SO_RCVBUF => int(self.rcvbuf.load(r)),
            SO_BUF_LOCK => int((flags >> LOCK_SHIFT) as i32 & BUF_LOCK_MASK),
            SO_RCVLOWAT => int(self.rcvlowat.load(r)),
            SO_SNDLOWAT => int(1),
            SO_RCVTIMEO_OLD | SO_RCVTIMEO_NEW => Some(timeval(self.rcvtimeo.load(r))),
            SO_SNDTIMEO_OLD | SO_SNDTIMEO_NEW => Some(timeval(self.sndtimeo.load(r))),
            SO_LINGER => {
                let on = i32::from(flags & LINGER != 0);
                // Linux divides the ticks and stores the long in an int.
                let secs = (self.lingertime.load(r) / HZ) as i32;
                Some([on.to_le_bytes(), secs.to_le_bytes()].concat())
            }
            SO_PRIORITY => int(self.priority.load(r) as i32),
            SO_MARK => int(self.mark.load(r) as i32),
            SO_BSDCOMPAT | SO_REUSEPORT => int(0),
            SO_PEEK_OFF => int(self.peek_off.load(r)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tv(sec: i64, usec: i64) -> Vec<u8> {
        [sec.to_le_bytes(), usec.to_le_bytes()].concat()
    }

    #[test]
    fn option_numbers_match_the_host_abi() {
        let pairs = [
            (SO_DEBUG, libc::SO_DEBUG),
            (SO_REUSEADDR, libc::SO_REUSEADDR),
            (SO_DONTROUTE, libc::SO_DONTROUTE),
            (SO_BROADCAST, libc::SO_BROADCAST),
            (SO_SNDBUF, libc::SO_SNDBUF),
            (SO_RCVBUF, libc::SO_RCVBUF),
            (SO_KEEPALIVE, libc::SO_KEEPALIVE),
            (SO_OOBINLINE, libc::SO_OOBINLINE),
            (SO_NO_CHECK, libc::SO_NO_CHECK),
            (SO_PRIORITY, libc::SO_PRIORITY),
            (SO_LINGER, libc::SO_LINGER),
            (SO_BSDCOMPAT, libc::SO_BSDCOMPAT),
            (SO_REUSEPORT, libc::SO_REUSEPORT),
            (SO_RCVLOWAT, libc::SO_RCVLOWAT),
            (SO_SNDLOWAT, libc::SO_SNDLOWAT),
            (SO_RCVTIMEO, libc::SO_RCVTIMEO),
            (SO_SNDTIMEO, libc::SO_SNDTIMEO),
            (SO_SNDBUFFORCE, libc::SO_SNDBUFFORCE),
            (SO_RCVBUFFORCE, libc::SO_RCVBUFFORCE),
            (SO_MARK, libc::SO_MARK),
            (SO_BUF_LOCK, 72),
            (SO_RCVTIMEO_NEW, 66),
            (SO_SNDTIMEO_NEW, 67),
        ];
        for (ours, host) in pairs {
            assert_eq!(ours, host);
        }
    }

    #[test]
    fn a_peek_offset_passes_whole_messages_and_empty_ones_once_peeked() {
        fn msgs(v: &[(usize, bool)]) -> impl Iterator<Item = (usize, bool)> + '_ {
            v.iter().copied()
        }
        let q = [(3, false), (0, false), (4, false)];
        // No offset (not a peek, or SO_PEEK_OFF off): the front.
        assert_eq!(pick_message(-1, msgs(&q)), Some((0, 0)));
        assert_eq!(pick_message(2, msgs(&q)), Some((0, 2)));
        // At 3 the first is passed; an empty one is not, until peeked.
        assert_eq!(pick_message(3, msgs(&q)), Some((1, 0)));
        let peeked = [(3, false), (0, true), (4, false)];
        assert_eq!(pick_message(3, msgs(&peeked)), Some((2, 0)));
        assert_eq!(pick_message(5, msgs(&q)), Some((2, 2)));
        assert_eq!(pick_message(7, msgs(&q)), None);
        let o = OptsCell::default();
        o.move_peek_offset(5);
        assert_eq!(o.peek_offset(true), -1, "off stays off");
        o.set_peek_offset(4);
        o.move_peek_offset(-3);
        assert_eq!((o.peek_offset(true), o.peek_offset(false)), (7, -1));
        o.move_peek_offset(10);
        assert_eq!(o.peek_offset(true), 0, "not below zero");
    }

    #[test]
    fn timeouts_round_up_to_ticks_and_read_back_as_linux_reports_them() {
        let o = OptsCell::default();
        assert_eq!(o.get(SO_RCVTIMEO_OLD), Some(tv(0, 0)));
        assert_eq!(o.set(SO_RCVTIMEO_OLD, &tv(1, 1), false), Some(Ok(())));
        // 1 s and 1 µs: 250 ticks and one more (4 ms).
        assert_eq!(o.get(SO_RCVTIMEO_NEW), Some(tv(1, 4000)));
        assert_eq!(
            o.set(SO_SNDTIMEO_NEW, &tv(0, 1_000_000), false),
            Some(Err(Errno::EDOM))
        );
        assert_eq!(
            o.set(SO_SNDTIMEO_NEW, &tv(0, -1), false),
            Some(Err(Errno::EDOM))
        );
        assert_eq!(
            o.set(SO_SNDTIMEO_NEW, &tv(0, 0)[..15], false),
            Some(Err(Errno::EINVAL))
        );
        assert!(matches!(o.snd_patience(false), Patience::Forever));
        assert_eq!(o.set(SO_SNDTIMEO_NEW, &tv(-5, 0), false), Some(Ok(())));
        assert!(matches!(o.snd_patience(false), Patience::Never));
        assert_eq!(o.get(SO_SNDTIMEO_OLD), Some(tv(0, 0)));
        assert_eq!(
            o.set(SO_SNDTIMEO_NEW, &tv(i64::MAX, 0), false),
            Some(Ok(()))
        );
        assert!(matches!(o.snd_patience(false), Patience::Forever));
        assert!(matches!(o.rcv_patience(false), Patience::Until(_)));
        assert!(matches!(o.rcv_patience(true), Patience::Never));
    }

    #[test]
    fn buffer_sizes_are_doubled_clamped_and_lock_the_size() {
        let o = OptsCell::default();
        assert_eq!(o.get(SO_BUF_LOCK), Some(0i32.to_le_bytes().to_vec()));
        o.set(SO_SNDBUF, &1000i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.sndbuf(), MIN_SNDBUF as usize);
        o.set(SO_SNDBUF, &(-1i32).to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.sndbuf(), 2 * BUF_MAX as usize);
        o.set(SO_RCVBUF, &5000i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.get(SO_RCVBUF), Some(10_000i32.to_le_bytes().to_vec()));
        assert_eq!(o.get(SO_BUF_LOCK), Some(3i32.to_le_bytes().to_vec()));
        assert_eq!(
            o.set(SO_BUF_LOCK, &4i32.to_le_bytes(), false),
            Some(Err(Errno::EINVAL))
        );
        o.set(SO_BUF_LOCK, &1i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.get(SO_BUF_LOCK), Some(1i32.to_le_bytes().to_vec()));
        assert_eq!(
            o.set(SO_SNDBUFFORCE, &(i32::MAX).to_le_bytes(), false),
            Some(Err(Errno::EPERM))
        );
        o.set(SO_SNDBUFFORCE, &(i32::MAX).to_le_bytes(), true)
            .unwrap()
            .unwrap();
        assert_eq!(o.sndbuf(), (i32::MAX / 2 * 2) as usize);
    }

    #[test]
    fn linger_priority_and_flags_keep_what_linux_keeps() {
        let o = OptsCell::default();
        let linger = |on: i32, secs: i32| [on.to_le_bytes(), secs.to_le_bytes()].concat();
        assert_eq!(
            o.set(SO_LINGER, &linger(1, 7)[..4], false),
            Some(Err(Errno::EINVAL))
        );
        o.set(SO_LINGER, &linger(5, 7), false).unwrap().unwrap();
        assert_eq!(o.get(SO_LINGER), Some(linger(1, 7)));
        // Turning it off keeps the time.
        o.set(SO_LINGER, &linger(0, 100), false).unwrap().unwrap();
        assert_eq!(o.get(SO_LINGER), Some(linger(0, 7)));
        o.set(SO_LINGER, &linger(1, -1), false).unwrap().unwrap();
        assert_eq!(o.get(SO_LINGER), Some(linger(1, (FOREVER / HZ) as i32)));
        assert_eq!(
            o.set(SO_PRIORITY, &7i32.to_le_bytes(), false),
            Some(Err(Errno::EPERM))
        );
        o.set(SO_PRIORITY, &6i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        o.set(SO_PRIORITY, &(-3i32).to_le_bytes(), true)
            .unwrap()
            .unwrap();
        assert_eq!(o.get(SO_PRIORITY), Some((-3i32).to_le_bytes().to_vec()));
        assert_eq!(
            o.set(SO_DEBUG, &1i32.to_le_bytes(), false),
            Some(Err(Errno::EACCES))
        );
        o.set(SO_KEEPALIVE, &9i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.get(SO_KEEPALIVE), Some(1i32.to_le_bytes().to_vec()));
        assert_eq!(o.get(SO_REUSEADDR), Some(0i32.to_le_bytes().to_vec()));
        assert_eq!(
            o.set(SO_REUSEPORT, &1i32.to_le_bytes(), true),
            Some(Err(Errno::EOPNOTSUPP))
        );
        o.set(SO_RCVLOWAT, &0i32.to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.rcvlowat(), 1);
        o.set(SO_RCVLOWAT, &(-2i32).to_le_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(o.rcvlowat(), i32::MAX as usize);
        assert_eq!(o.set(SO_SNDLOWAT, &1i32.to_le_bytes(), false), None);
        assert_eq!(o.get(999), None);
    }
}
