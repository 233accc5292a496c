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
/// read, a test of the group's `dead` flag and one RMW on the thread's own
/// line, with no table lookup and no `shard_index` — the per-thread cache
/// that Linux's memcg stock is for a memcg; unlike the stock it holds back
/// no charge, so every counter stays exact).
///
/// Each field is its own `Cell`, so a charge reads only the fields it
/// needs (a `Cell` of the whole struct copied all five words per charge).
struct Current {
    /// The VFS's unique id (`DeferQueues::vfs_id`, never reused, unlike an
    /// address): `group` and `shard` are dereferenced only inside a call on
    /// that VFS, whose group table (every group's allocation, shard lines
    /// included) outlives the call (group.rs: published groups live until
    /// the table is dropped).
    vfs: Cell<u64>,
    /// The group the process asked for (`enter_group`).
    asked: Cell<GroupId>,
    /// The group charged: `asked` when live, else its nearest live
    /// ancestor, as `Groups::live` answers; `group` is its allocation.
    charged: Cell<GroupId>,
    group: Cell<*const group::MemGroup>,
    /// `group`'s counter line for this thread.
    shard: Cell<*const group::Shard>,
}

thread_local! {
    /// The calling thread's `Current` (vfs 0: none yet).
    static CURRENT: Current = const {
        Current {
            vfs: Cell::new(0),
            asked: Cell::new(ROOT_GROUP),
            charged: Cell::new(ROOT_GROUP),
            group: Cell::new(core::ptr::null()),
            shard: Cell::new(core::ptr::null()),
        }
    };
}

/// Full scans that free nothing before an admission gives up with ENOMEM
/// (Linux's MAX_RECLAIM_RETRIES for a memcg charge).
const MAX_RECLAIM_RETRIES: u32 = 16;

impl VfsInner {
    /// True if the calling thread's `Current` is this VFS's and its charged
    /// group is still live.
    #[inline(always)]
    fn current_is_live(&self, c: &Current) -> bool {
        // SAFETY: `c.group` belongs to this VFS (ids matched first), see
        // `Current`.
        c.vfs.get() == self.defer.vfs_id() && !unsafe { &*c.group.get() }.is_dead()
    }

    /// Charges objects this thread creates to `group` until the next call.
    /// The common case (the thread's previous call charged the same live
    /// group of the same VFS) is a few thread-local loads and compares.
    #[inline]
    pub(crate) fn enter_group(&self, group: GroupId) {
        // Only an entry whose asked group was charged itself is reused: a
        // removed group's id may be re-created (in place) while an entry
        // lasts, and must then be charged itself, not the ancestor found
        // when it was removed.
        let hit = CURRENT.with(|c| {
            c.asked.get() == group && c.charged.get() == group && self.current_is_live(c)
        });
        if !hit {
            self.enter_group_slow(group);
        }
    }

    #[cold]
    #[inline(never)]
    fn enter_group_slow(&self, group: GroupId) {
        let live = self.reclaim.groups.live(group);
        CURRENT.with(|c| {
            c.vfs.set(self.defer.vfs_id());
            c.asked.set(group);
            c.charged.set(live.id);
            c.group.set(live);
            c.shard.set(live.my_shard());
        });
    }

    /// The calling thread's (charged group, its counter line): the group
    /// its call on this VFS entered, looked up again if that group was
    /// removed since (charges then go to its nearest live ancestor, as
    /// `Groups::charge` does), or the root group if the thread entered
    /// none here.
    #[inline]
    fn current(&self) -> (GroupId, &group::Shard) {
        let (charged, shard) = CURRENT.with(|c| {
            if self.current_is_live(c) {
                (c.charged.get(), c.shard.get())
            } else {
                self.current_slow(c)
            }
        });
        // SAFETY: `shard` is a counter line of a group of this VFS (see
        // `Current`), which lives as long as `self`.
        (charged, unsafe { &*shard })
    }

    #[cold]
    #[inline(never)]
    fn current_slow(&self, c: &Current) -> (GroupId, *const group::Shard) {
        let asked = if c.vfs.get() == self.defer.vfs_id() {
            c.asked.get()
        } else {
            ROOT_GROUP
        };
        self.enter_group_slow(asked);
        (c.charged.get(), c.shard.get())
    }

    /// The group to charge for an object created now.
    #[inline]
    pub(crate) fn current_group(&self) -> GroupId {
        self.current().0
    }

    /// Charges one object of `kind` to the current group; returns the group
    /// charged (the object records it for `uncharge`).
    #[inline]
    pub(crate) fn charge(&self, kind: ObjKind) -> GroupId {
        let (charged, shard) = self.current();
        group::shard_add(shard, kind, 1);
        charged
    }

    /// Uncharges one object of `kind` from `group` (what `charge` returned).
    #[inline]
    pub(crate) fn uncharge(&self, group: GroupId, kind: ObjKind) {
        let mine = CURRENT.with(|c| {
            (c.vfs.get() == self.defer.vfs_id() && c.charged.get() == group).then(|| c.shard.get())
        });
        match mine {
            // SAFETY: as in `current`: this VFS's group, this thread's line.
            Some(shard) => group::shard_add(unsafe { &*shard }, kind, -1),
            None => self.reclaim.groups.uncharge(group, kind, 1),
        }
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
            let mut fruitless = 0;
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
                let guard = self.collector.enter();
                let freed = self.shrink_subtree(id, priority);
                drop(guard);
                if freed == 0 && priority == 0 {
                    // A full scan freed nothing. That is not yet "nothing
                    // reclaimable": other threads' reclaim may have taken
                    // the list's objects a moment ago without uncharging
                    // all of them yet (a backend inode's free can wait in
                    // its thread's deferred-put queue until that call
                    // ends), and entries skipped for a busy bucket or a
                    // second chance are freeable on the next pass. So, as Linux's memcg charge retries
                    // reclaim MAX_RECLAIM_RETRIES times before its OOM,
                    // give the others a moment and scan again.
                    fruitless += 1;
                    if fruitless > MAX_RECLAIM_RETRIES {
                        // Relaxed: a statistic.
                        g.limit_failures
                            .fetch_add(1, crate::sync::atomic::Ordering::Relaxed);
                        return Err(err);
                    }
                    std::thread::yield_now();
                    continue;
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
