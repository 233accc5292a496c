//! Credentials that travel with AF_UNIX data (SCM_CREDENTIALS and
//! SO_PASSCRED), as Linux's scm_send, unix_maybe_add_creds and
//! scm_recv_unix.
//!
//! Rules:
//! - A send attaches credentials when its caller gave them (sendmsg's
//!   SCM_CREDENTIALS, which the process layer checks as scm_check_creds),
//!   or else when the sending or the receiving socket has SO_PASSCRED at
//!   that moment: then the sender's own, its pid and its *real* uid and
//!   gid (current_uid_gid). Otherwise the data carries none.
//! - A receiver with SO_PASSCRED reads the credentials of what it took,
//!   `Ucred::NOBODY` for data that carries none.
//! - Stream data keeps the credentials of each send (`CredRuns`, one run
//!   per change). A read by a receiver with SO_PASSCRED stops where they
//!   change (unix_stream_read_generic never glues different writers'
//!   data for such a reader); one without the option glues across. A
//!   stream read that takes nothing (end of file) reports pid 0, uid 0,
//!   gid 0: Linux's zeroed scm_cookie.
//!
//! Invariants: a `CredRuns` lives under its direction's connection lock,
//! beside the bytes it describes; its run starts are stream offsets in
//! increasing order; every read that takes bytes drops the runs that end
//! before the new front (`forget_before`), so at most one run starts
//! before the front and the list holds no more runs than there are
//! queued sends, whoever reads.

use super::socket::SockShared;
use crate::abi::Ucred;
use crate::cred::Cred;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The credentials some data carries (None: sent without any).
pub(crate) type MsgCreds = Option<Ucred>;

/// What a stream read that took no data reports (Linux's zeroed cookie).
pub(crate) const NO_DATA: Ucred = Ucred {
    pid: 0,
    uid: 0,
    gid: 0,
};

/// A sender's credentials for one send: those its caller gave, and its
/// own (pid, real uid and gid) for SO_PASSCRED to attach.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendCreds {
    pub(crate) explicit: Option<Ucred>,
    pub(crate) own: Ucred,
}

impl SendCreds {
    /// What data sent from `sender` to `receiver` carries now.
    pub(crate) fn attach(&self, sender: &SockShared, receiver: &SockShared) -> MsgCreds {
        self.explicit
            .or_else(|| (sender.passcred() || receiver.passcred()).then_some(self.own))
    }
}

/// What a receiver with SO_PASSCRED reads for data that carried `c`.
pub(crate) fn reported(c: MsgCreds) -> Ucred {
    c.unwrap_or(Ucred::NOBODY)
}

/// What a socket knows of its peer's process (SO_PEERCRED,
/// SO_PEERGROUPS), as Linux's sk_peer_pid and sk_peer_cred: its id and
/// effective ids, and its credentials (for the supplementary groups), as
/// they were at the socketpair, connect or listen. Cloning it counts a
/// reference; it allocates nothing.
#[derive(Clone)]
pub(crate) struct PeerCred {
    pub(crate) ucred: Ucred,
    pub(crate) cred: Arc<Cred>,
}

impl SockShared {
    /// SO_PASSCRED.
    pub(crate) fn passcred(&self) -> bool {
        // Relaxed: an option flag that publishes nothing; a send or read
        // racing setsockopt may see either value, as on Linux (test_bit).
        self.passcred.load(Ordering::Relaxed)
    }

    pub(crate) fn set_passcred(&self, on: bool) {
        // Relaxed: see `passcred`.
        self.passcred.store(on, Ordering::Relaxed);
    }
}

/// The credentials of a stream direction's bytes, by stream offset. No
/// runs at all means none carry any: a connection whose ends never ask
/// for credentials allocates nothing here.
#[derive(Default)]
pub(crate) struct CredRuns {
    /// (first offset, credentials of the bytes from there to the next run)
    runs: VecDeque<(u64, MsgCreds)>,
}

impl CredRuns {
    /// The bytes queued from stream offset `start` on carry `creds`.
    pub(crate) fn note(&mut self, start: u64, creds: MsgCreds) {
        if self.runs.back().and_then(|r| r.1) != creds {
            if self.runs.is_empty() {
                // What came before carried none.
                self.runs.push_back((0, None));
            }
            self.runs.push_back((start, creds));
        }
    }

    /// Drops the runs that end at or before stream offset `front`.
    pub(crate) fn forget_before(&mut self, front: u64) {
        while self.runs.len() > 1 && self.runs[1].0 <= front {
            self.runs.pop_front();
        }
    }

    /// The credentials of the byte at stream offset `at` (the front of the
    /// queue) and the offset where they change, if another run is queued.
    pub(crate) fn at(&mut self, at: u64) -> (MsgCreds, Option<u64>) {
        self.forget_before(at);
        (
            self.runs.front().and_then(|r| r.1),
            self.runs.get(1).map(|r| r.0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ucred = Ucred {
        pid: 7,
        uid: 1,
        gid: 2,
    };

    #[test]
    fn runs_merge_equal_neighbours_and_split_at_changes() {
        let mut r = CredRuns::default();
        r.note(0, None);
        assert!(r.runs.is_empty(), "no credentials, no runs");
        r.note(0, Some(A));
        r.note(5, Some(A));
        r.note(8, None);
        r.note(9, Some(A));
        assert_eq!(r.at(0), (Some(A), Some(8)));
        assert_eq!(r.at(7), (Some(A), Some(8)));
        assert_eq!(r.at(8), (None, Some(9)));
        assert_eq!(r.at(12), (Some(A), None));
        assert_eq!(r.runs.len(), 1, "runs before the front are forgotten");
    }

    #[test]
    fn a_reader_that_never_asks_still_forgets_what_it_read() {
        let mut r = CredRuns::default();
        for i in 0..1000u64 {
            let who = Ucred {
                pid: (i % 2) as i32 + 1,
                ..A
            };
            r.note(i, Some(who));
            r.forget_before(i);
        }
        assert!(r.runs.len() <= 2, "{} runs kept", r.runs.len());
    }

    #[test]
    fn bytes_before_the_first_credentials_carry_none() {
        let mut r = CredRuns::default();
        r.note(0, None);
        r.note(4, Some(A));
        assert_eq!(r.at(0), (None, Some(4)));
        assert_eq!(r.at(4), (Some(A), None));
    }
}
