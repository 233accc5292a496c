//! What the passthrough backend keeps per cached host directory: an O_PATH
//! fd (so a lookup miss is one `fstatat(fd, name)`, as libfuse's
//! passthrough_ll and virtiofsd do) and the directory's stamp (so an
//! unchanged directory vouches for its cached misses without a host call
//! per name).
//!
//! Invariants:
//! - **fd trust.** `fd` was opened beneath the root (`HostRoot::
//!   open_beneath`, openat2 RESOLVE_BENEATH or the O_NOFOLLOW walk) and is
//!   handed out only while `fd_checked_at` is within the TTL and `fd_epoch`
//!   equals the backend's rename epoch: `fd_checked_at` is a time (taken
//!   before the open) at which resolving the directory's path from the
//!   root led to `fd`'s directory. Past the TTL the fd is re-opened from
//!   the root (one openat2 and one fstat per directory and TTL). vfscale's own renames and rmdirs
//!   of a directory bump the epoch, so every fd is re-resolved from the
//!   root at its next use (their old paths lead nowhere, as before).
//! - **stamp.** `stamp` is (ino, mtime, ctime) of the directory as last
//!   observed, by any stat of that directory object; `stamp_at` is a time
//!   taken before that observation, and observations older than `stamp_at`
//!   are ignored. `stable_since` (or `UNSETTLED`) is a time taken after an
//!   observation of `stamp` at which the directory's ctime was already at
//!   least `SETTLE_NS` old in real time: any change to the directory after
//!   that observation gets a later ctime (the kernel's timestamp
//!   granularity is at most a tick, far below `SETTLE_NS`), so seeing
//!   `stamp` again at `stamp_at` proves that no name of the directory
//!   changed between `stable_since` and `stamp_at`. A cached answer about
//!   one of its names obtained at or after `stable_since` (the core times
//!   answers before asking) therefore still holds at `stamp_at`. Stamps
//!   are compared for equality, so a change is missed only if it produced
//!   the very same mtime and ctime: after the settling time that takes a
//!   backward step of the real-time clock onto that exact timestamp. The
//!   host's timestamps must come from this machine's clock (local
//!   filesystems; `PassthroughConfig::dir_stamps` turns this off).
//! - **listing.** `listing` was read from the host while its directory
//!   was this node's (listing.rs); it is exact as of `listing_checked_at`
//!   (a time before the read, or before an observation whose stamp equals
//!   the listing's and vouches for `listed_at`), and is dropped by any
//!   vfscale change of the directory's names, which also bumps
//!   `listing_gen` so that a read that started before the change is not
//!   installed after it.
//! - The fd bound: `FdRing` lists the directories holding an fd (by their
//!   node, kept allocated by the entry, and a serial that tells a
//!   re-opened fd apart); the number of fds held stays within the
//!   configured bound plus the number of threads installing one at the
//!   same moment; evicting takes the ring's lock, then a node's (never the
//!   other way round).

use super::listing::Listing;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// A directory's ctime must be this old (real time) when observed for the
/// observation to settle the stamp: well above any kernel timestamp
/// granularity (a tick, 1–10 ms).
pub(crate) const SETTLE_NS: i64 = 50_000_000;

/// `stable_since` when no settled observation of the current stamp exists.
pub(crate) const UNSETTLED: u64 = u64::MAX;

/// (ino, mtime, ctime) of a directory.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Stamp {
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(st: &libc::stat) -> Stamp {
        Stamp {
            ino: st.st_ino,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    fn ctime_ns(&self) -> i64 {
        self.ctime
            .0
            .saturating_mul(1_000_000_000)
            .saturating_add(self.ctime.1)
    }
}

/// The clocks around one host stat: monotonic before and after (ns,
/// CLOCK_MONOTONIC, the clock of the core's entry times) and real time
/// before (the clock of host timestamps).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Observed {
    pub before: u64,
    pub after: u64,
    pub real_before: i64,
}

/// Per-directory state (see the module invariants).
pub(crate) struct DirState {
    pub fd: Option<Arc<OwnedFd>>,
    pub fd_checked_at: u64,
    pub fd_epoch: u64,
    /// Ring serial of `fd` (0: none).
    pub fd_serial: u64,
    /// Used since the ring last looked (second chance).
    pub referenced: bool,
    pub stamp: Stamp,
    pub stamp_at: u64,
    pub stable_since: u64,
    /// The cached listing (listing.rs) and when it was last known exact
    /// (mono time before the read or the observation that vouched for it).
    pub listing: Option<Arc<Listing>>,
    pub listing_checked_at: u64,
    /// Bumped by every vfscale change of the directory's names: a listing
    /// read before a change is not installed after it.
    pub listing_gen: u64,
    /// The stamp at which the last listing read could not be kept (over a
    /// bound, or positions out of order): pass starts at that same stamp
    /// read from the host without building again.
    pub unkept: Option<Stamp>,
}

impl DirState {
    pub(crate) fn new() -> DirState {
        DirState {
            fd: None,
            fd_checked_at: 0,
            fd_epoch: 0,
            fd_serial: 0,
            referenced: false,
            stamp: Stamp::default(),
            stamp_at: 0,
            stable_since: UNSETTLED,
            listing: None,
            listing_checked_at: 0,
            listing_gen: 0,
            unkept: None,
        }
    }

    /// Records an observation of the directory's attributes `st`.
    pub(crate) fn observe(&mut self, st: &libc::stat, when: Observed) {
        if when.before < self.stamp_at {
            // Older than what we know (a racing thread's later stat won).
            return;
        }
        let stamp = Stamp::of(st);
        let settled = when.real_before.saturating_sub(stamp.ctime_ns()) >= SETTLE_NS;
        if stamp != self.stamp {
            self.stamp = stamp;
            self.stable_since = if settled { when.after } else { UNSETTLED };
        } else if self.stable_since == UNSETTLED && settled {
            self.stable_since = when.after;
        }
        self.stamp_at = when.before;
    }

    /// Whether the stamp proves an answer about a name obtained at
    /// `answered_at` still held at `stamp_at` (given a fresh observation).
    pub(crate) fn vouches_for(&self, answered_at: u64) -> bool {
        self.stable_since != UNSETTLED && answered_at >= self.stable_since
    }
}

/// The directories holding an fd, oldest first, for the bound: (node, fd
/// serial); entries of closed or re-opened fds are skipped and compacted
/// away.
pub(crate) struct FdRing<N> {
    pub entries: VecDeque<(N, u64)>,
}

impl<N> FdRing<N> {
    pub(crate) fn new() -> FdRing<N> {
        FdRing {
            entries: VecDeque::new(),
        }
    }
}

/// Monotonic time in ns (precise: entry times compared with stamps).
pub(crate) fn mono_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC) as u64
}

/// Real time in ns (host timestamps' clock).
pub(crate) fn real_ns() -> i64 {
    clock(libc::CLOCK_REALTIME)
}

fn clock(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(ino: u64, ctime_s: i64) -> libc::stat {
        // SAFETY: a zeroed stat is a valid value.
        let mut s: libc::stat = unsafe { core::mem::zeroed() };
        s.st_ino = ino;
        s.st_mtime = ctime_s;
        s.st_ctime = ctime_s;
        s
    }

    fn at(t: u64, real_s: i64) -> Observed {
        Observed {
            before: t,
            after: t + 1,
            real_before: real_s * 1_000_000_000,
        }
    }

    #[test]
    fn settled_observations_vouch_for_later_answers_only() {
        let mut d = DirState::new();
        // ctime 100 s, observed at real 100 s: not settled.
        d.observe(&st(5, 100), at(10, 100));
        assert!(!d.vouches_for(20));
        // Seen again at real 101 s: settled from then on.
        d.observe(&st(5, 100), at(30, 101));
        assert!(
            !d.vouches_for(20),
            "answered before the settled observation"
        );
        assert!(d.vouches_for(31));
        // A change (new ctime) unsettles it.
        d.observe(&st(5, 102), at(40, 102));
        assert!(!d.vouches_for(41));
        // A stale observation (taken before the latest) is ignored.
        d.observe(&st(5, 100), at(35, 110));
        assert_eq!(d.stamp, Stamp::of(&st(5, 102)));
        // Another directory at the same place (new ino) is a change too.
        d.observe(&st(6, 102), at(50, 200));
        assert!(d.vouches_for(51));
        d.observe(&st(7, 102), at(60, 200));
        assert!(!d.vouches_for(55));
        assert!(d.vouches_for(61));
    }
}
