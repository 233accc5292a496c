//! SCM_RIGHTS: open files in flight in AF_UNIX messages.
//!
//! A message may carry files (`InFlight`): references the send took on its
//! descriptors' files, handed to new descriptors of the receiver by the
//! receive that takes the message, or put by whoever drops the message (a
//! purge, the receiving socket's final close). Those references are plain
//! `FileRef`s: only the process layer, which has the namespace at hand,
//! puts them, always after every socket lock is released (the put can be
//! the final close of another socket).
//!
//! Linux collects cycles of sockets in flight (unix_gc: A's queue holds B,
//! B's holds A, and no process holds either). vfscale prevents them
//! instead (docs/ARCHITECTURE.md, Decisions). Each socket has a `Flight`:
//! how many references to its own file wait in queues (`in_flight`) and
//! how many messages carrying files wait in its receive queue
//! (`files_queued`).
//!
//! Invariants:
//! - A socket whose file is in flight has no files queued. So no socket in
//!   flight holds files, every chain of references through queues ends at
//!   a socket some process holds, and no cycle can form.
//! - A send carrying files keeps it (`admit`): refused with ETOOMANYREFS
//!   (Linux's errno for too many files in flight) when its receiver's file
//!   is in flight, or the receiver is an unaccepted connection whose
//!   listener's file is; when a socket it carries has files queued, is the
//!   receiver itself, or listens (a listener's unaccepted connections may
//!   hold files and cannot be counted on it).
//! - Linux's per-user limit too (too_many_unix_fds): each message charges
//!   its files to its sender's real uid (`UserCharge`, counted per
//!   namespace in `InflightUsers`) until it leaves its queue, and a send
//!   whose user already has more files in flight than the sender's
//!   RLIMIT_NOFILE is refused with ETOOMANYREFS unless the sender has
//!   CAP_SYS_RESOURCE or CAP_SYS_ADMIN (vfscale: an effective uid of 0).
//!   Like Linux it checks before adding (`check_user`, where Linux attaches
//!   the files; the count rises at `admit`), so a user may end one
//!   message's worth past the limit.
//! - The counts rise only under `ADMIT` (one process-wide mutex, taken only
//!   by sends that carry files, inside the receiver's queue lock: lock
//!   order queue → `ADMIT`), together with the checks, so two sends cannot
//!   each pass the check the other is about to break. They fall without
//!   it: a fall only relaxes the rule, so a check that reads a stale
//!   higher count refuses at worst a send it could have let through.

use super::socket::Socket;
use crate::abi::*;
use crate::file::{FileRef, FMODE_SOCKET};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Linux's SCM_MAX_FD: the most files one message may carry (EINVAL past
/// it).
pub const SCM_MAX_FD: usize = 253;

/// Serialises the checks and rises of `admit` (module invariants).
static ADMIT: Mutex<()> = Mutex::new(());

/// A socket's part in the rule (module doc).
#[derive(Default)]
pub(crate) struct Flight {
    /// References to this socket's file waiting in queues.
    in_flight: AtomicUsize,
    /// Messages carrying files waiting in this socket's receive queue.
    files_queued: AtomicUsize,
}

impl Flight {
    // Relaxed loads and rises: every rise and every check runs under
    // `ADMIT`, whose mutex orders them; falls are RMWs (no lost update),
    // and a check that misses one only refuses more (module doc).
    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    fn files_queued(&self) -> usize {
        self.files_queued.load(Ordering::Relaxed)
    }
}

/// The socket behind `f`, if it is a socket file.
fn socket_of(f: &FileRef) -> Option<&Socket> {
    let file = f.file();
    // SAFETY: a socket file's private pointer is its socket, kept alive by
    // the node the file references, and we hold a reference to the file.
    (file.fmode & FMODE_SOCKET != 0).then(|| unsafe { &*(file.private as *const Socket) })
}

/// Each user's files in flight in one namespace (Linux's
/// user_struct.unix_inflight), by real uid. Entries stay (one per uid
/// that ever sent files).
#[derive(Default)]
pub(crate) struct InflightUsers(Mutex<HashMap<u32, Arc<AtomicUsize>>>);

impl InflightUsers {
    /// What a send by real uid `uid` counts against: its user's count, the
    /// sender's descriptor limit, and whether the sender may pass it.
    pub(crate) fn charge(&self, uid: u32, limit: usize, exempt: bool) -> UserCharge {
        let mut users = self.0.lock().unwrap_or_else(|e| e.into_inner());
        UserCharge {
            count: users.entry(uid).or_default().clone(),
            limit,
            exempt,
        }
    }
}

/// A message's charge to its sender's user (module invariants).
pub(crate) struct UserCharge {
    count: Arc<AtomicUsize>,
    limit: usize,
    exempt: bool,
}

/// The files one message carries (never empty: a send without files has
/// none). Dropping it without `leave` would leak them (debug-asserted).
pub(crate) struct InFlight {
    files: Vec<FileRef>,
    user: UserCharge,
}

impl InFlight {
    /// The files a send carries (at least one); `user`: what they count
    /// against while queued.
    pub(crate) fn new(files: Vec<FileRef>, user: UserCharge) -> InFlight {
        debug_assert!(!files.is_empty());
        InFlight { files, user }
    }

    /// too_many_unix_fds: ETOOMANYREFS if the sender's user has more files
    /// in flight than the sender's descriptor limit and the sender may
    /// not pass it. Called where Linux attaches the files to the skb (a
    /// datagram send: before it looks for its receiver; stream and
    /// seqpacket: just before `admit`).
    pub(crate) fn check_user(&self) -> SysResult<()> {
        let u = &self.user;
        // Relaxed: a racing send or receive moves the count either way;
        // Linux reads it with READ_ONCE outside its lock too.
        if !u.exempt && u.count.load(Ordering::Relaxed) > u.limit {
            return Err(Errno::ETOOMANYREFS);
        }
        Ok(())
    }

    /// The rule (module invariants), checked as the message joins the
    /// receive queue of `to` (the caller holds that queue's lock);
    /// `listener`: the listener of an unaccepted connection `to` is. On
    /// success the counts include this message.
    pub(crate) fn admit(&self, to: &Flight, listener: Option<&Flight>) -> SysResult<()> {
        let _serial = ADMIT.lock().unwrap_or_else(|e| e.into_inner());
        if to.in_flight() > 0 || listener.is_some_and(|l| l.in_flight() > 0) {
            return Err(Errno::ETOOMANYREFS);
        }
        for s in self.files.iter().filter_map(socket_of) {
            let f = s.flight();
            if s.is_listener() || core::ptr::eq(f, to) || f.files_queued() > 0 {
                return Err(Errno::ETOOMANYREFS);
            }
        }
        // Relaxed: see `Flight`.
        to.files_queued.fetch_add(1, Ordering::Relaxed);
        self.user
            .count
            .fetch_add(self.files.len(), Ordering::Relaxed);
        for s in self.files.iter().filter_map(socket_of) {
            s.flight().in_flight.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The message left the receive queue of `from` (taken or dropped):
    /// the counts forget it and its files are the caller's to install or
    /// put.
    pub(crate) fn leave(mut self, from: &Flight) -> Vec<FileRef> {
        // Relaxed: see `Flight`.
        from.files_queued.fetch_sub(1, Ordering::Relaxed);
        self.user
            .count
            .fetch_sub(self.files.len(), Ordering::Relaxed);
        for s in self.files.iter().filter_map(socket_of) {
            s.flight().in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        std::mem::take(&mut self.files)
    }

    /// The files of a message that did not go (never admitted).
    pub(crate) fn unsent(mut self) -> Vec<FileRef> {
        std::mem::take(&mut self.files)
    }

    /// MSG_PEEK: new references to the same files (the message keeps its
    /// own), as Linux's unix_peek_fds.
    pub(crate) fn peek(&self) -> Vec<FileRef> {
        self.files.iter().map(FileRef::another).collect()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        debug_assert!(
            self.files.is_empty(),
            "files in flight dropped without being put"
        );
    }
}
