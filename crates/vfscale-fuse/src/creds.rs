//! Request credentials: the FUSE header's uid and gid, plus the caller's
//! supplementary groups read from /proc/PID/status.
//!
//! Invariants: a worker thread caches the last credentials it built, keyed
//! by (uid, gid, pid); a hit costs no allocation and no /proc read. Root
//! (uid 0) needs no groups (it passes every check they could affect), so
//! its requests never read /proc. A process that changes its groups keeps
//! the cached set until another request from a different key passes on
//! that worker (documented in COMPATIBILITY.md).

use std::cell::RefCell;
use std::sync::Arc;
use vfscale::Cred;

/// (uid, gid, pid or 0 for root) of the cached credentials.
type CredKey = (u32, u32, u32);

thread_local! {
    static LAST: RefCell<Option<(CredKey, Arc<Cred>)>> = const { RefCell::new(None) };
}

/// The credentials of a request from `pid` with `uid`/`gid`.
pub fn request_cred(uid: u32, gid: u32, pid: u32) -> Arc<Cred> {
    let key = (uid, gid, if uid == 0 { 0 } else { pid });
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((k, c)) = last.as_ref() {
            if *k == key {
                return c.clone();
            }
        }
        let groups = if uid == 0 { Vec::new() } else { groups_of(pid) };
        let c = Arc::new(Cred::user(uid, gid, &groups));
        *last = Some((key, c.clone()));
        c
    })
}

/// The supplementary groups of `pid` (empty if it is gone or unreadable).
fn groups_of(pid: u32) -> Vec<u32> {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    s.lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
