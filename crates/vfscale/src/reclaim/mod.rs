//! Memory groups and reclaim (DESIGN.md §3.9, issue 7, seed 004).
//!
//! - `group`: the group hierarchy, per-thread-sharded charging, limits,
//!   statistics;
//! - `list_lru`: per-(superblock × group) lists of unused dentries;
//! - `bits`: the lazily cleared shrinker / populated-group bits;
//! - `shrinker`: the registry, `do_shrink_slab`, per-group and global passes;
//! - `api`: the `Vfs` methods (groups, shrinkers, `drop_caches`);
//! - `check`: the per-group totals of the invariant checker;
//! - `member`: a process's membership (`GroupCell`), counted per group;
//! - `prune`: removed groups freed for reuse once nothing refers to them.
//!
//! Which group is charged: the calling process's. Process entry points that
//! may create cached objects store (VFS, group) in a thread-local
//! ([`VfsInner::enter_group`]); the allocation sites read it. The stat fast
//! path never touches it: a lock-free walk allocates nothing, and the walk
//! sets it only before its slow path (which may create a negative dentry).
//! Invariant: an object records the group it was charged to and uncharges
//! exactly that group when freed.

mod api;
pub mod bits;
pub(crate) mod check;
pub mod group;
pub mod list_lru;
mod member;
mod prune;
pub mod shrinker;

pub use api::DropLevel;
pub use group::{GroupStat, ObjKind, KIND_BYTES};
pub use member::GroupCell;
pub use shrinker::{Shrinker, DEFAULT_SEEKS, SHRINK_BATCH};

use crate::abi::{Errno, SysResult};
use crate::vfs::VfsInner;
use std::cell::Cell;

/// A memory group's id (0: the root group).
pub type GroupId = u32;
pub const ROOT_GROUP: GroupId = 0;

/// The reclaim state of one VFS.
#[derive(Default)]
pub struct Reclaim {
    pub(crate) groups: group::Groups,
    pub(crate) shrinkers: shrinker::Shrinkers,
}

thread_local! {
    /// (VFS address, group) of the process call running on this thread.
    /// An id, not a pointer: a stale entry (its VFS dropped, another at the
    /// same address) can only name a wrong or unknown group, never freed
    /// memory.
    static CURRENT: Cell<(usize, GroupId)> = const { Cell::new((0, 0)) };
}

impl VfsInner {
    /// Charges objects this thread creates to `group` until the next call.
    #[inline]
    pub(crate) fn enter_group(&self, group: GroupId) {
        CURRENT.set((self as *const VfsInner as usize, group));
    }

    /// The group to charge for an object created now.
    #[inline]
    pub(crate) fn current_group(&self) -> GroupId {
        let (vfs, g) = CURRENT.get();
        if vfs == self as *const VfsInner as usize {
            g
        } else {
            ROOT_GROUP
        }
    }

    /// Charges one object of `kind` to the current group; returns the group
    /// charged (the object records it for `uncharge`).
    #[inline]
    pub(crate) fn charge(&self, kind: ObjKind) -> GroupId {
        self.reclaim.groups.charge(self.current_group(), kind, 1)
    }

    #[inline]
    pub(crate) fn uncharge(&self, group: GroupId, kind: ObjKind) {
        self.reclaim.groups.uncharge(group, kind, 1);
    }

    /// Charges (n > 0) or uncharges (n < 0) `n` data pages to `group`.
    pub(crate) fn charge_pages(&self, group: GroupId, n: i64) {
        if n != 0 {
            self.reclaim.groups.uncharge(group, ObjKind::Page, -n);
        }
    }

    /// Accounts a change of a regular file's allocated 512-byte blocks to
    /// its instance (ENOSPC when full: the tmpfs `size=` limit) and to the
    /// inode's group (growth past the group's limit reclaims, then ENOMEM,
    /// as Linux's memcg charge of a shmem folio fails).
    pub(crate) fn charge_data(&self, inode: &crate::inode::Inode, delta_512: i64) -> SysResult<()> {
        let pages = delta_512 / 8;
        if pages > 0 {
            self.admit_for(inode.group, pages as u64 * 4096, Errno::ENOMEM)?;
        }
        // SAFETY: an inode's superblock outlives it.
        unsafe { &*inode.sb }.charge_blocks(delta_512)?;
        self.charge_pages(inode.group, pages);
        Ok(())
    }

    /// Admission of `bytes` more for `group`: if it or an ancestor would go
    /// over its `max`, reclaims in that subtree until it fits; `err` (ENOMEM,
    /// as memcg) only when nothing more can be freed.
    /// Unlimited groups pay one load per level.
    #[inline]
    pub(crate) fn admit_for(&self, group: GroupId, bytes: u64, err: Errno) -> SysResult<()> {
        if !self.reclaim.groups.any_limit() {
            return Ok(());
        }
        self.admit_limited(group, bytes, err)
    }

    #[inline(never)]
    fn admit_limited(&self, group: GroupId, bytes: u64, err: Errno) -> SysResult<()> {
        let groups = &self.reclaim.groups;
        if !groups.has_limit(group) {
            return Ok(());
        }
        for id in groups.limited_ancestors(group) {
            let Some(g) = groups.get(id) else { continue };
            let mut counted = false;
            // Like Linux's reclaim priorities: start by scanning a small
            // fraction of each list (freeable >> priority), widen each round.
            let mut priority = shrinker::DEF_PRIORITY;
            loop {
                let max = g.max();
                let usage = groups.usage(id).max(0) as u64;
                if usage.saturating_add(bytes) <= max {
                    break;
                }
                if !counted {
                    counted = true;
                    // Relaxed: a statistic.
                    g.limit_reclaims
                        .fetch_add(1, crate::sync::atomic::Ordering::Relaxed);
                }
                let _guard = self.collector.enter();
                let freed = self.shrink_subtree(id, priority);
                if freed == 0 && priority == 0 {
                    // Relaxed: a statistic.
                    g.limit_failures
                        .fetch_add(1, crate::sync::atomic::Ordering::Relaxed);
                    return Err(err);
                }
                priority = priority.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// `admit_for` the current group.
    #[inline]
    pub(crate) fn admit(&self, bytes: u64, err: Errno) -> SysResult<()> {
        if !self.reclaim.groups.any_limit() {
            return Ok(());
        }
        self.admit_limited(self.current_group(), bytes, err)
    }

    /// Records that `group` now has objects on shrinker `id`'s lists (after
    /// the count store): the shrinker bit, then the populated-group bit.
    pub(crate) fn note_nonempty(&self, group: GroupId, id: u32) {
        let groups = &self.reclaim.groups;
        let Some(g) = groups.get(group) else { return };
        g.shrinker_map.mark(id as usize);
        groups.populated.mark(group as usize);
    }
}
