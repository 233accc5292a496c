//! `FaultyFs`: a backend wrapper that makes chosen backend calls fail, for
//! fault-injection tests (and later the passthrough backend's).
//!
//! It forwards every `Filesystem` call to the wrapped backend, except that
//! a call the shared `FaultControl` picks — the n-th call of a kind, or
//! each call with probability 1/`one_in` from a seeded generator — returns
//! the chosen errno instead, without reaching the backend. It also reports
//! the dcache as *not* authoritative, so that every dcache miss becomes a
//! backend `lookup` (for a wrapped tmpfs, whose lookup always answers "no
//! such name", behaviour is otherwise unchanged).
//!
//! Reach: `lookup` of a name the dcache does not hold, and for a
//! backend-served inner filesystem (passthrough) also `revalidate`, `read`,
//! `write`, `truncate`, `readdir` and the namespace and attribute changes
//! (`CallKind::Change`). For a wrapped tmpfs, data, attribute and namespace
//! changes are done by the core on in-memory objects without a backend
//! call, so faults reach them only through `lookup`.
//!
//! Invariants:
//! - an injected fault never reaches the wrapped backend: a failed call had
//!   no backend side effect;
//! - `FaultControl` counts calls and faults with atomics only (Relaxed:
//!   plain statistics, read by the test thread after the call returned) and
//!   keeps the plan and generator under one mutex.

use super::{Filesystem, SuperBlock};
use crate::abi::{Errno, SysResult};
use crate::inode::Inode;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::lock::Mutex;
use std::sync::Arc;

/// The backend calls a fault can be attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Lookup,
    Revalidate,
    Read,
    Write,
    Truncate,
    Readdir,
    /// create, tmpfile, symlink, link, unlink, rename, setattr (namespace and
    /// attribute changes of a backend-served instance).
    Change,
    /// fallocate.
    Allocate,
    /// fsync, fdatasync, syncfs.
    Sync,
    /// Extended-attribute calls.
    Xattr,
}

/// When a call fails.
#[derive(Clone, Debug)]
pub enum Trigger {
    /// The n-th call of the kind (counting from 1, while armed).
    Nth(u64),
    /// Each call with probability 1/`one_in`, from the control's generator.
    OneIn(u64),
}

struct Plan {
    rules: Vec<(CallKind, Trigger, Errno)>,
    rng: u64,
    calls: u64,
}

/// Shared between the test and the wrapper: what to inject, and what was.
pub struct FaultControl {
    armed: AtomicBool,
    plan: Mutex<Plan>,
    injected: AtomicU64,
    last: Mutex<Option<(CallKind, Errno)>>,
}

impl FaultControl {
    /// An unarmed control with no rules; `seed` drives `Trigger::OneIn`.
    pub fn new(seed: u64) -> Arc<FaultControl> {
        Arc::new(FaultControl {
            armed: AtomicBool::new(false),
            plan: Mutex::new(Plan {
                rules: Vec::new(),
                rng: seed | 1,
                calls: 0,
            }),
            injected: AtomicU64::new(0),
            last: Mutex::new(None),
        })
    }

    /// Adds a rule: calls of `kind` matching `trigger` fail with `errno`.
    pub fn fail(&self, kind: CallKind, trigger: Trigger, errno: Errno) {
        self.plan.lock().rules.push((kind, trigger, errno));
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.plan.lock().rules.clear();
    }

    pub fn arm(&self) {
        // Relaxed: a test switch read by the same thread's later calls.
        self.armed.store(true, Ordering::Relaxed);
    }

    pub fn disarm(&self) {
        // Relaxed: as `arm`.
        self.armed.store(false, Ordering::Relaxed);
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        // Relaxed: a statistic; the caller reads it after the call returned.
        self.injected.load(Ordering::Relaxed)
    }

    /// The last injected fault.
    pub fn last(&self) -> Option<(CallKind, Errno)> {
        *self.last.lock()
    }

    /// Whether this call of `kind` fails, and with which errno.
    fn decide(&self, kind: CallKind) -> Option<Errno> {
        // Relaxed: as `arm`.
        if !self.armed.load(Ordering::Relaxed) {
            return None;
        }
        let mut plan = self.plan.lock();
        plan.calls += 1;
        let n = plan.calls;
        let mut hit = None;
        for i in 0..plan.rules.len() {
            let (k, trigger, errno) = plan.rules[i].clone();
            if k != kind {
                continue;
            }
            let fires = match trigger {
                Trigger::Nth(at) => at == n,
                Trigger::OneIn(one_in) => {
                    // xorshift64: deterministic for a seed.
                    let mut x = plan.rng;
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    plan.rng = x;
                    one_in > 0 && x.is_multiple_of(one_in)
                }
            };
            if fires && hit.is_none() {
                hit = Some(errno);
            }
        }
        drop(plan);
        if let Some(e) = hit {
            // Relaxed: see `injected`.
            self.injected.fetch_add(1, Ordering::Relaxed);
            *self.last.lock() = Some((kind, e));
        }
        hit
    }
}

/// A backend that forwards to `inner` except where `control` injects.
pub struct FaultyFs<F: Filesystem> {
    inner: F,
    control: Arc<FaultControl>,
}

impl<F: Filesystem> FaultyFs<F> {
    pub fn new(inner: F, control: Arc<FaultControl>) -> Self {
        FaultyFs { inner, control }
    }
}

impl<F: Filesystem> Filesystem for FaultyFs<F> {
    fn fs_type(&self) -> &'static str {
        self.inner.fs_type()
    }

    fn has_inode_flags(&self) -> bool {
        self.inner.has_inode_flags()
    }

    fn dcache_is_authoritative(&self) -> bool {
        // Every miss goes to `lookup`, where faults can be injected.
        false
    }

    fn lookup(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
    ) -> SysResult<Option<super::FoundInode>> {
        if let Some(e) = self.control.decide(CallKind::Lookup) {
            return Err(e);
        }
        self.inner.lookup(sb, dir, name)
    }

    fn init_root(&self, sb: &SuperBlock, root: &Inode) {
        self.inner.init_root(sb, root)
    }

    fn backend_served(&self) -> bool {
        self.inner.backend_served()
    }

    fn revalidate_ttl(&self) -> Option<std::time::Duration> {
        self.inner.revalidate_ttl()
    }

    fn revalidate(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        cached: Option<&Inode>,
    ) -> SysResult<bool> {
        if let Some(e) = self.control.decide(CallKind::Revalidate) {
            return Err(e);
        }
        self.inner.revalidate(sb, dir, name, cached)
    }

    fn dir_vouches(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        answered_at: u64,
    ) -> SysResult<Option<u64>> {
        // Part of revalidation: the same faults reach it.
        if let Some(e) = self.control.decide(CallKind::Revalidate) {
            return Err(e);
        }
        self.inner.dir_vouches(sb, dir, answered_at)
    }

    fn names_moved(&self, sb: &SuperBlock, moves: &[super::NameMove<'_>]) {
        self.inner.names_moved(sb, moves)
    }

    fn evict(&self, inode: &Inode) {
        self.inner.evict(inode)
    }

    fn open(&self, sb: &SuperBlock, inode: &Inode, fmode: u32) -> bool {
        self.inner.open(sb, inode, fmode)
    }

    fn release(&self, sb: &SuperBlock, inode: &Inode) {
        self.inner.release(sb, inode)
    }

    fn read(&self, sb: &SuperBlock, inode: &Inode, pos: u64, buf: &mut [u8]) -> SysResult<usize> {
        if let Some(e) = self.control.decide(CallKind::Read) {
            return Err(e);
        }
        self.inner.read(sb, inode, pos, buf)
    }

    fn write(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        pos: Option<u64>,
        buf: &[u8],
    ) -> SysResult<usize> {
        if let Some(e) = self.control.decide(CallKind::Write) {
            return Err(e);
        }
        self.inner.write(sb, inode, pos, buf)
    }

    fn copy_range(
        &self,
        sb: &SuperBlock,
        from: (&Inode, u64),
        to: (&Inode, u64),
        len: usize,
    ) -> SysResult<Option<usize>> {
        if let Some(e) = self.control.decide(CallKind::Write) {
            return Err(e);
        }
        self.inner.copy_range(sb, from, to, len)
    }

    fn encode_handle(&self, sb: &SuperBlock, inode: &Inode, out: &mut Vec<u8>) -> SysResult<()> {
        self.inner.encode_handle(sb, inode, out)
    }

    fn handle_names(&self, sb: &SuperBlock, inode: &Inode, handle: &[u8]) -> bool {
        self.inner.handle_names(sb, inode, handle)
    }

    fn locate_handle(&self, sb: &SuperBlock, handle: &[u8]) -> SysResult<Vec<Box<[u8]>>> {
        if let Some(e) = self.control.decide(CallKind::Lookup) {
            return Err(e);
        }
        self.inner.locate_handle(sb, handle)
    }

    fn truncate(&self, sb: &SuperBlock, inode: &Inode, len: u64) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Truncate) {
            return Err(e);
        }
        self.inner.truncate(sb, inode, len)
    }

    fn create(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        mode: u32,
        rdev: u64,
        uid: u32,
        gid: u32,
    ) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.create(sb, dir, name, mode, rdev, uid, gid)
    }

    fn symlink(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        target: &[u8],
        uid: u32,
        gid: u32,
    ) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.symlink(sb, dir, name, target, uid, gid)
    }

    fn tmpfile(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> SysResult<*const Inode> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.tmpfile(sb, dir, mode, uid, gid)
    }

    fn link(&self, sb: &SuperBlock, inode: &Inode, dir: &Inode, name: &[u8]) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.link(sb, inode, dir, name)
    }

    fn unlink(&self, sb: &SuperBlock, dir: &Inode, name: &[u8], victim: &Inode) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.unlink(sb, dir, name, victim)
    }

    fn rename(
        &self,
        sb: &SuperBlock,
        old_dir: &Inode,
        old_name: &[u8],
        new_dir: &Inode,
        new_name: &[u8],
        victim: Option<&Inode>,
        flags: u32,
        whiteout_owner: (u32, u32),
    ) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.rename(
            sb,
            old_dir,
            old_name,
            new_dir,
            new_name,
            victim,
            flags,
            whiteout_owner,
        )
    }

    fn setattr(&self, sb: &SuperBlock, inode: &Inode, change: &super::AttrChange) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Change) {
            return Err(e);
        }
        self.inner.setattr(sb, inode, change)
    }

    fn refresh(&self, sb: &SuperBlock, inode: &Inode) -> SysResult<()> {
        self.inner.refresh(sb, inode)
    }

    fn fallocate(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        mode: i32,
        offset: u64,
        len: u64,
    ) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Allocate) {
            return Err(e);
        }
        self.inner.fallocate(sb, inode, mode, offset, len)
    }

    fn fsync(&self, sb: &SuperBlock, inode: &Inode, datasync: bool) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Sync) {
            return Err(e);
        }
        self.inner.fsync(sb, inode, datasync)
    }

    fn sync_fs(&self, sb: &SuperBlock) -> SysResult<()> {
        if let Some(e) = self.control.decide(CallKind::Sync) {
            return Err(e);
        }
        self.inner.sync_fs(sb)
    }

    fn statfs(&self, sb: &SuperBlock) -> Option<crate::abi::Statfs> {
        self.inner.statfs(sb)
    }

    fn seek_data_hole(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        offset: u64,
        hole: bool,
    ) -> SysResult<u64> {
        if let Some(e) = self.control.decide(CallKind::Read) {
            return Err(e);
        }
        self.inner.seek_data_hole(sb, inode, offset, hole)
    }

    fn xattr(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        call: super::XattrCall<'_>,
    ) -> SysResult<usize> {
        if let Some(e) = self.control.decide(CallKind::Xattr) {
            return Err(e);
        }
        self.inner.xattr(sb, inode, call)
    }

    fn readdir(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        from: u64,
        emit: &mut dyn FnMut(&crate::process::DirEntryRef<'_>) -> bool,
    ) -> SysResult<(u64, bool)> {
        if let Some(e) = self.control.decide(CallKind::Readdir) {
            return Err(e);
        }
        self.inner.readdir(sb, dir, from, emit)
    }
}
