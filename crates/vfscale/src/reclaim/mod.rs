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

/// What the calling thread charges: the group of the process call running
/// on it, in which VFS, and that group's counter line for this thread
/// (cached: a charge or uncharge of that group is then one thread-local
/// read and one RMW on the thread's own line, with no table lookup and no
/// `shard_index` — the per-thread cache the task of Linux's memcg stock
/// plays there; the counters stay exact, nothing is held back).
#[derive(Clone, Copy)]
struct Current {
    /// The VFS's unique id (`DeferQueues::vfs_id`, never reused, unlike an
    /// address): `shard` is dereferenced only inside a call on that VFS,
    /// whose group table (and so every group's shard lines) outlives it.
    vfs: u64,
    /// The group the process asked for (`enter_group`), or `NOT_CACHED`
    /// when that group was removed (the next entry looks it up again).
    requested: GroupId,
    /// The group charged: `requested` when live, else its nearest live
    /// ancestor, as `Groups::live` answers.
    charged: GroupId,
    /// `charged`'s counter line for this thread.
    shard: *const group::Shard,
}

/// `Current::requested` of an entry that must be looked up again.
const NOT_CACHED: GroupId = GroupId::MAX;

thread_local! {
    /// The calling thread's `Current` (vfs 0: none yet).
    static CURRENT: Cell<Current> = const {
        Cell::new(Current {
            vfs: 0,
            requested: NOT_CACHED,
            charged: ROOT_GROUP,
            shard: core::ptr::null(),
        })
    };
}

impl VfsInner {
    /// Charges objects this thread creates to `group` until the next call.
    /// The common case (the thread's previous call charged the same group
    /// of the same VFS) is one thread-local read and a compare.
    #[inline]
    pub(crate) fn enter_group(&self, group: GroupId) {
        let c = CURRENT.get();
        if c.vfs == self.defer.vfs_id() && c.requested == group {
            return;
        }
        self.enter_group_slow(group);
    }

    #[cold]
    #[inline(never)]
    fn enter_group_slow(&self, group: GroupId) {
        let live = self.reclaim.groups.live(group);
        CURRENT.set(Current {
            vfs: self.defer.vfs_id(),
            // Only a live group is cached by its own id: a removed one's
            // id may be re-created (in place) while the entry lasts, and
            // must then be charged itself, not the ancestor found now. A
            // live group stays live while a process is attached to it
            // (removal is EBUSY), which every call entering it is; a call
            // racing with an attach elsewhere may charge either group, as
            // before this cache.
            requested: if live.id == group { group } else { NOT_CACHED },
            charged: live.id,
            shard: live.my_shard(),
        });
    }

    /// The calling thread's entry if it belongs to this VFS, else (a call
    /// that entered no group here) the root group's, now cached.
    #[inline]
    fn current(&self) -> Current {
        let c = CURRENT.get();
        if c.vfs == self.defer.vfs_id() {
            return c;
        }
        self.enter_root()
    }

    #[cold]
    #[inline(never)]
    fn enter_root(&self) -> Current {
        self.enter_group_slow(ROOT_GROUP);
        CURRENT.get()
    }

    /// The group to charge for an object created now.
    #[inline]
    pub(crate) fn current_group(&self) -> GroupId {
        self.current().charged
    }

    /// Charges one object of `kind` to the current group; returns the group
    /// charged (the object records it for `uncharge`).
    #[inline]
    pub(crate) fn charge(&self, kind: ObjKind) -> GroupId {
        let c = self.current();
        // SAFETY: `c.shard` is a counter line of a group of this VFS (its
        // id matched), and groups live as long as their VFS (group.rs).
        group::shard_add(unsafe { &*c.shard }, kind, 1);
        c.charged
    }

    /// Uncharges one object of `kind` from `group` (what `charge` returned).
    #[inline]
    pub(crate) fn uncharge(&self, group: GroupId, kind: ObjKind) {
        let c = CURRENT.get();
        if c.vfs == self.defer.vfs_id() && c.charged == group {
            // SAFETY: as in `charge`: this VFS's group, this thread's line.
            return group::shard_add(unsafe { &*c.shard }, kind, -1);
        }
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
