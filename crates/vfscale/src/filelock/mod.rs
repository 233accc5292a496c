//! Advisory file locks: `flock(2)` (whole-file, owned by an open file
//! description), POSIX record locks (`fcntl` F_SETLK/F_SETLKW/F_GETLK,
//! byte ranges owned by an fd table, i.e. by a process and its
//! `clone_thread` siblings) and open-file-description locks (F_OFD_*, byte
//! ranges owned by an open file description), with Linux's semantics
//! (`fs/locks.c`).
//!
//! Nothing here is on a hot path: the only cost to code that never locks
//! is one Relaxed load of `FileLocks::live` per close and per final put of
//! an open file, which stays zero (and its line clean) until some file is
//! locked.
//!
//! Invariants:
//! - Each inode with locks or lock waiters has exactly one `LockContext`,
//!   found in `shards` by the inode's address; `live` counts contexts. A
//!   context leaves the map only when it has no lock and no waiter, and is
//!   marked `retired` under its own mutex while the shard's mutex is held,
//!   so a thread that found it earlier sees the mark and looks again:
//!   two contexts for one inode never both take locks.
//! - A lock exists only while its owner can still reach the inode through
//!   an open file: flock and OFD locks are dropped at their open file's
//!   final put (`on_release`), POSIX locks at every close of a
//!   descriptor of the inode by their fd table (`on_close`), as
//!   Linux's `locks_remove_posix` does. So an inode with locks is alive,
//!   and its address cannot name another inode while its context exists.
//! - Lock order: a shard's mutex, then a context's mutex, then
//!   `blocked` (the POSIX wait-for map that deadlock detection walks).
//! - Every change that can grant a waiter's request (an unlock, a removal,
//!   a downgrade) notifies the context's condition variable; waiters test
//!   their request again under the context's mutex.

pub mod range;

use crate::abi::*;
use crate::file::OpenFile;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicUsize, Ordering};
use parking_lot::{Condvar, Mutex};
use range::{LockKind, RangeLocks, OFFSET_MAX};
use std::collections::HashMap;
use std::sync::Arc;

/// Who holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// A POSIX record lock: the owning fd table's lock-owner id
    /// (`FdTable::lock_owner`), also what F_GETLK reports as `l_pid`.
    Posix(u32),
    /// An OFD lock or a flock: the open file's address (unique while the
    /// file lives, and its locks die with it).
    Ofd(usize),
}

impl Owner {
    pub(crate) fn of_file(f: &OpenFile) -> Owner {
        Owner::Ofd(f as *const OpenFile as usize)
    }
}

/// What one inode's locks look like (under `LockContext::state`).
#[derive(Default)]
struct ContextState {
    /// POSIX and OFD locks, which conflict with each other.
    ranges: RangeLocks,
    /// flock locks: (open file address, kind). Apart from the ranges, as
    /// on Linux (a flock and a POSIX lock never conflict).
    flocks: Vec<(usize, LockKind)>,
    /// Threads waiting in this context.
    waiters: usize,
    /// Removed from the map: look the inode up again.
    retired: bool,
}

impl ContextState {
    fn unused(&self) -> bool {
        self.ranges.is_empty() && self.flocks.is_empty() && self.waiters == 0
    }
}

#[derive(Default)]
struct LockContext {
    state: Mutex<ContextState>,
    changed: Condvar,
}

const SHARDS: usize = 16;

/// The namespace's lock contexts.
#[derive(Default)]
pub(crate) struct FileLocks {
    shards: [Mutex<HashMap<usize, Arc<LockContext>>>; SHARDS],
    /// Contexts in the map. Relaxed everywhere: it only lets closes skip
    /// the map when no file is locked anywhere. A close that reads 0
    /// cannot miss a lock it must drop: a lock made before the close in
    /// happens-before order (the same thread, or one the closer
    /// synchronised with) incremented the count first, and coherence then
    /// forbids reading the older 0; a lock made concurrently, by a sibling
    /// thread of the same fd table, is ordered after this close, whose
    /// read came first in the count's modification order.
    live: AtomicUsize,
    /// POSIX owners waiting in F_SETLKW, and for each waiting thread of
    /// the owner, the owner it waits for.
    blocked: Mutex<HashMap<u32, Vec<u32>>>,
}

/// A request on a byte range, converted from a `Flock`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RangeRequest {
    pub owner: Owner,
    /// None: unlock.
    pub kind: Option<LockKind>,
    pub start: u64,
    pub end: u64,
}

fn shard_of(inode: *const Inode) -> usize {
    (inode as usize >> 6).wrapping_mul(0x9E37_79B9) >> 4 & (SHARDS - 1)
}

impl FileLocks {
    /// True if some inode may have locks (a hint for the close paths).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.live.load(Ordering::Relaxed) != 0
    }

    /// The context of `inode`, made if `create` and missing.
    fn context(&self, inode: *const Inode, create: bool) -> Option<Arc<LockContext>> {
        let mut map = self.shards[shard_of(inode)].lock();
        if let Some(c) = map.get(&(inode as usize)) {
            return Some(c.clone());
        }
        if !create {
            return None;
        }
        let c = Arc::new(LockContext::default());
        map.insert(inode as usize, c.clone());
        self.live.fetch_add(1, Ordering::Relaxed);
        Some(c)
    }

    /// Runs `op` on `inode`'s context state (made if `create`), retrying
    /// when the context found was retired meanwhile, then drops the
    /// context if `op` left it unused. None if there is no context and
    /// `create` is false.
    fn with_state<R>(
        &self,
        inode: *const Inode,
        create: bool,
        mut op: impl FnMut(&LockContext, &mut parking_lot::MutexGuard<'_, ContextState>) -> R,
    ) -> Option<R> {
        loop {
            let ctx = self.context(inode, create)?;
            let mut st = ctx.state.lock();
            if st.retired {
                continue;
            }
            let r = op(&ctx, &mut st);
            let unused = st.unused();
            drop(st);
            if unused {
                self.retire_if_unused(inode, &ctx);
            }
            return Some(r);
        }
    }

    fn retire_if_unused(&self, inode: *const Inode, ctx: &Arc<LockContext>) {
        let mut map = self.shards[shard_of(inode)].lock();
        let mut st = ctx.state.lock();
        let same = map
            .get(&(inode as usize))
            .is_some_and(|c| Arc::ptr_eq(c, ctx));
        if same && !st.retired && st.unused() {
            st.retired = true;
            map.remove(&(inode as usize));
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// F_GETLK: the lock that would block `req` (None: it would be
    /// granted). A test of "unlocked" (F_OFD_GETLK only) reports the
    /// requester's own first lock on the range instead, as Linux's
    /// `posix_test_locks_conflict` does.
    pub(crate) fn test_range(
        &self,
        inode: *const Inode,
        req: RangeRequest,
    ) -> Option<range::RangeLock> {
        self.with_state(inode, false, |_, st| match req.kind {
            Some(kind) => st.ranges.conflict(req.owner, kind, req.start, req.end),
            None => st.ranges.own(req.owner, req.start, req.end),
        })
        .flatten()
    }

    /// F_SETLK / F_SETLKW (and the OFD forms): sets `req`, waiting for
    /// conflicting locks to go if `wait`. EAGAIN without `wait`, EDEADLK if
    /// waiting would close a cycle of POSIX owners waiting for each other.
    pub(crate) fn set_range(
        &self,
        inode: *const Inode,
        req: RangeRequest,
        wait: bool,
    ) -> SysResult<()> {
        let Some(kind) = req.kind else {
            self.with_state(inode, false, |ctx, st| {
                st.ranges.set(req.owner, None, req.start, req.end);
                ctx.changed.notify_all();
            });
            return Ok(());
        };
        self.with_state(inode, true, |ctx, st| loop {
            let Some(blocker) = st.ranges.conflict(req.owner, kind, req.start, req.end) else {
                st.ranges.set(req.owner, Some(kind), req.start, req.end);
                // A downgrade (write to read) may let readers in.
                ctx.changed.notify_all();
                return Ok(());
            };
            if !wait {
                return Err(Errno::EAGAIN);
            }
            self.wait_for(ctx, st, req.owner, blocker.owner)?;
        })
        .expect("created on demand")
    }

    /// Waits once on `ctx` for a change, with `me` recorded as waiting for
    /// `holder` (POSIX owners only: Linux detects deadlocks among process
    /// owners, not open-file ones).
    fn wait_for(
        &self,
        ctx: &LockContext,
        st: &mut parking_lot::MutexGuard<'_, ContextState>,
        me: Owner,
        holder: Owner,
    ) -> SysResult<()> {
        let posix = match (me, holder) {
            (Owner::Posix(m), Owner::Posix(h)) => Some((m, h)),
            _ => None,
        };
        if let Some((m, h)) = posix {
            let mut blocked = self.blocked.lock();
            if waits_for(&blocked, h, m) {
                return Err(Errno::EDEADLK);
            }
            blocked.entry(m).or_default().push(h);
        }
        st.waiters += 1;
        ctx.changed.wait(st);
        st.waiters -= 1;
        if let Some((m, h)) = posix {
            let mut blocked = self.blocked.lock();
            if let Some(hs) = blocked.get_mut(&m) {
                if let Some(i) = hs.iter().position(|&x| x == h) {
                    hs.swap_remove(i);
                }
                if hs.is_empty() {
                    blocked.remove(&m);
                }
            }
        }
        Ok(())
    }

    /// flock(2) on open file `f`: `kind` None unlocks. Converting a held
    /// lock drops it first (not atomic, as on Linux).
    pub(crate) fn flock(&self, f: &OpenFile, kind: Option<LockKind>, wait: bool) -> SysResult<()> {
        let (inode, file) = (f.inode, f as *const OpenFile as usize);
        let Some(kind) = kind else {
            self.with_state(inode, false, |ctx, st| {
                if remove_flock(st, file) {
                    ctx.changed.notify_all();
                }
            });
            return Ok(());
        };
        self.with_state(inode, true, |ctx, st| {
            if st.flocks.contains(&(file, kind)) {
                return Ok(());
            }
            if remove_flock(st, file) {
                ctx.changed.notify_all();
            }
            loop {
                let blocked = st
                    .flocks
                    .iter()
                    .any(|&(_, k)| kind == LockKind::Write || k == LockKind::Write);
                if !blocked {
                    st.flocks.push((file, kind));
                    return Ok(());
                }
                if !wait {
                    return Err(Errno::EAGAIN);
                }
                st.waiters += 1;
                ctx.changed.wait(st);
                st.waiters -= 1;
            }
        })
        .expect("created on demand")
    }

    /// A descriptor of `inode` closed by fd table `owner`: its POSIX locks
    /// on the inode go (all of them, whichever descriptor made them). The
    /// caller tested `any()` first, before it computed the arguments.
    pub(crate) fn on_close(&self, inode: *const Inode, owner: u32) {
        self.forget_owner(inode, Owner::Posix(owner), None);
    }

    /// The final put of open file `f`: its flock and OFD locks go.
    #[inline]
    pub(crate) fn on_release(&self, f: &OpenFile) {
        if self.any() {
            let file = f as *const OpenFile as usize;
            self.forget_owner(f.inode, Owner::Ofd(file), Some(file));
        }
    }

    /// Drops `owner`'s range locks on `inode` and, given an open file, its
    /// flock; wakes waiters if anything went.
    #[cold]
    #[inline(never)]
    fn forget_owner(&self, inode: *const Inode, owner: Owner, flock_of: Option<usize>) {
        self.with_state(inode, false, |ctx, st| {
            let ranges = st.ranges.remove_owner(owner);
            let flocks = flock_of.is_some_and(|f| remove_flock(st, f));
            if ranges || flocks {
                ctx.changed.notify_all();
            }
        });
    }

    /// Inodes with locks or lock waiters.
    pub(crate) fn contexts(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

/// Whether POSIX owner `from` waits, directly or through other waiting
/// owners, for `to` (a search of the wait-for graph; each owner visited
/// once, so a cycle elsewhere ends it too).
fn waits_for(blocked: &HashMap<u32, Vec<u32>>, from: u32, to: u32) -> bool {
    let mut stack = vec![from];
    let mut seen = std::collections::HashSet::new();
    while let Some(o) = stack.pop() {
        if o == to {
            return true;
        }
        if seen.insert(o) {
            stack.extend(blocked.get(&o).into_iter().flatten());
        }
    }
    false
}

fn remove_flock(st: &mut ContextState, file: usize) -> bool {
    let before = st.flocks.len();
    st.flocks.retain(|&(f, _)| f != file);
    st.flocks.len() != before
}

/// Converts `l` (F_GETLK's or F_SETLK's argument) for a file at offset
/// `pos` whose inode is `size` bytes long, as Linux's
/// `flock64_to_posix_lock`: EINVAL for a bad whence or a range before
/// offset 0, EOVERFLOW past the largest offset, then EINVAL for a bad type.
pub(crate) fn range_of(l: &Flock, owner: Owner, pos: u64, size: u64) -> SysResult<RangeRequest> {
    let base = match i32::from(l.l_whence) {
        SEEK_SET => 0,
        SEEK_CUR => pos as i64,
        SEEK_END => size as i64,
        _ => return Err(Errno::EINVAL),
    };
    let max = OFFSET_MAX as i64;
    if l.l_start > max - base {
        return Err(Errno::EOVERFLOW);
    }
    let mut start = base + l.l_start;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let end;
    if l.l_len > 0 {
        if l.l_len - 1 > max - start {
            return Err(Errno::EOVERFLOW);
        }
        end = start + (l.l_len - 1);
    } else if l.l_len < 0 {
        if start + l.l_len < 0 {
            return Err(Errno::EINVAL);
        }
        end = start - 1;
        start += l.l_len;
    } else {
        end = max;
    }
    // The type last, as Linux's `assign_type` after the range.
    let kind = match l.l_type {
        F_RDLCK => Some(LockKind::Read),
        F_WRLCK => Some(LockKind::Write),
        F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    Ok(RangeRequest {
        owner,
        kind,
        start: start as u64,
        end: end as u64,
    })
}

/// Fills `l` with F_GETLK's answer: the blocking lock, or F_UNLCK alone.
pub(crate) fn report(l: &mut Flock, blocker: Option<range::RangeLock>) {
    let Some(b) = blocker else {
        l.l_type = F_UNLCK;
        return;
    };
    l.l_type = match b.kind {
        LockKind::Read => F_RDLCK,
        LockKind::Write => F_WRLCK,
    };
    l.l_whence = SEEK_SET as i16;
    l.l_start = b.start as i64;
    l.l_len = if b.end == OFFSET_MAX {
        0
    } else {
        (b.end - b.start + 1) as i64
    };
    l.l_pid = match b.owner {
        Owner::Posix(id) => id as i32,
        Owner::Ofd(_) => -1,
    };
}
