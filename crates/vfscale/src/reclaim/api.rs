//! The `Vfs` methods of memory groups, shrinkers and `drop_caches`.
//!
//! Group removal (like rmdir of a cgroup): refused (EBUSY) while the group
//! has live children or attached processes; otherwise the group becomes a
//! tombstone, each superblock's list of it is spliced into the parent's
//! list, and the parent gets the bits (shrinker and populated) so reclaim
//! finds them. The tombstone is pruned once nothing is charged to it.

use super::shrinker::{Shrinker, Slot};
use super::{GroupId, GroupStat};
use crate::abi::{Errno, SysResult};
use crate::fs::SuperBlock;
use crate::process::Process;
use crate::sync::atomic::Ordering;
use crate::vfs::{Vfs, VfsInner};
use std::sync::Arc;

/// Passes of `shrink_dcache_sb` over one list at most.
const SHRINK_SB_PASSES: usize = 8;

/// Rounds of `reclaiming` one `drop_caches` or `shrink_dcache_sb` makes at
/// most (`reclaim_rounds`).
const RECLAIM_ROUNDS: usize = 8;

/// What `Vfs::drop_caches_level` drops (the values of
/// /proc/sys/vm/drop_caches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropLevel {
    /// 1: clean cached file data (tmpfs has none: its pages are the data).
    Data = 1,
    /// 2: unused dentries and inodes.
    Slab = 2,
    /// 3: both.
    Both = 3,
}

impl DropLevel {
    pub fn from_raw(level: u32) -> SysResult<DropLevel> {
        match level {
            1 => Ok(DropLevel::Data),
            2 => Ok(DropLevel::Slab),
            3 => Ok(DropLevel::Both),
            _ => Err(Errno::EINVAL),
        }
    }
}

impl VfsInner {
    /// Registers superblock `sb`'s dentry lists as a shrinker.
    pub(crate) fn register_sb_shrinker(&self, sb: &Arc<SuperBlock>) {
        let id = self
            .reclaim
            .shrinkers
            .register(Slot::Super(Arc::downgrade(sb)));
        // Relaxed: published with the superblock (by its Arc or mount).
        sb.lru.shrinker_id.store(id, Ordering::Relaxed);
    }

    pub(crate) fn unregister_sb_shrinker(&self, sb: &SuperBlock) {
        let id = sb.lru.shrinker_id();
        if id != u32::MAX {
            self.reclaim.shrinkers.unregister(id);
        }
    }

    /// drop_caches level 2: Linux's `drop_slab` loop over the populated
    /// groups until a pass frees (almost) nothing.
    pub(crate) fn drop_slab(&self, naive: bool) -> usize {
        let freed = self.reclaim_rounds(|| self.drop_slab_now(naive));
        // What was freed may have been the last charge of a removed group.
        self.prune_tombstones();
        // And its memory goes back to the system where whole slab chunks
        // came free (the process-wide slab: other namespaces' free
        // objects too): unlinks may have freed them before this call.
        crate::mem::slab::release_free_chunks();
        freed
    }

    /// Linux's `shrink_dcache_sb`: frees every unused dentry of `sb`, and
    /// what only they kept (a removed directory held by the negative
    /// names a lookup left in it, and its inode). `reconfigure_super`
    /// runs it before a switch to read-only, whose check counts the
    /// unlinked inodes still alive.
    pub(crate) fn shrink_dcache_sb(&self, sb: &SuperBlock) -> usize {
        self.reclaim_rounds(|| {
            let _guard = self.collector.enter();
            let mut freed = 0;
            for list in sb.lru.lists() {
                // Until a pass frees nothing (a referenced dentry's first
                // visit only takes its second chance), within a bound that
                // a stream of new negative names cannot outrun.
                for _ in 0..SHRINK_SB_PASSES {
                    let n = self.shrink_dentry_list(list, 2 * list.count(), false);
                    freed += n;
                    if n == 0 {
                        break;
                    }
                }
            }
            freed
        })
    }

    /// Runs `round` in `reclaiming` again while a round frees anything (at
    /// most `RECLAIM_ROUNDS` times): the drain that ends a round can leave
    /// a cached directory unused after the round's scan passed it. A
    /// removed directory that only its last cached child kept is freed by
    /// that drain (the reclaimer's put of it is deferred, as any final put
    /// in a batch scope), and the drain's put of *its* parent leaves that
    /// parent unused on its list, as every put does. Without the next
    /// round one `drop_caches` left it cached (found by
    /// tests/passthrough_containment.rs, a host directory swapped for a
    /// symlink under vfscale: ~1 run in 500). Returns the objects freed.
    ///
    /// Then the memory of what the rounds freed goes back: the dentry hash
    /// shrinks to the names left (`shrink_dcache`), and the epoch's
    /// `seal_pending` frees what is retired: reclaim is asked for memory,
    /// and the epoch's batches would keep it until this namespace retires
    /// more.
    fn reclaim_rounds(&self, round: impl Fn() -> usize) -> usize {
        let mut freed = 0;
        for _ in 0..RECLAIM_ROUNDS {
            let n = self.reclaiming(&round);
            freed += n;
            if n == 0 {
                break;
            }
        }
        // The hash table's buckets for the names freed go back too.
        self.shrink_dcache();
        self.collector.seal_pending();
        freed
    }

    /// Runs `work`, which frees cached objects, between two drains of the
    /// deferred puts (what they release may become reclaimable), with its
    /// own puts batched and drained before this returns, so `statfs`,
    /// `object_counts` and the orphan count reflect them (defer/).
    fn reclaiming<R>(&self, work: impl FnOnce() -> R) -> R {
        self.flush_all();
        let scope = self.batch_scope();
        let r = work();
        drop(scope);
        self.flush_all();
        r
    }

    fn drop_slab_now(&self, naive: bool) -> usize {
        let _guard = self.collector.enter();
        let mut total = 0u64;
        let mut shift = 0;
        loop {
            let freed = if naive {
                self.shrink_naive(0)
            } else {
                self.shrink_populated(0)
            };
            total += freed;
            if (freed >> shift) <= 1 || shift >= 63 {
                break;
            }
            shift += 1;
        }
        total as usize
    }
}

impl VfsInner {
    /// The reclaim part of `Vfs::check_invariants` for superblock `sb` of a
    /// quiescent VFS: its lists are well formed, and every non-empty list's
    /// group has the superblock's shrinker bit and is in the populated set.
    pub(crate) fn check_reclaim(&self, sb: &SuperBlock) -> Result<(), String> {
        let sid = sb.lru.shrinker_id();
        for (group, n) in sb.lru.check()? {
            let groups = &self.reclaim.groups;
            let g = groups.get(group).ok_or("a list of an unknown group")?;
            if g.is_dead() {
                return Err(format!("{n} dentries on removed group {group}'s list"));
            }
            if !g.shrinker_map.test(sid as usize) || !groups.populated.test(group as usize) {
                return Err(format!(
                    "group {group} holds {n} unused dentries but its bits are clear"
                ));
            }
        }
        Ok(())
    }
}

impl Vfs {
    /// Reclaims every unused cached dentry (drop_caches level 3).
    pub fn drop_caches(&self) -> usize {
        self.inner.drop_slab(false)
    }

    /// `echo level > /proc/sys/vm/drop_caches`: 1, 2 or 3 (EINVAL
    /// otherwise). Returns the objects freed.
    pub fn drop_caches_level(&self, level: u32) -> SysResult<usize> {
        let level = DropLevel::from_raw(level)?;
        // Level 1 has nothing to drop: tmpfs pages are file contents, not
        // clean cache, and no backend keeps clean cached data yet.
        Ok(match level {
            DropLevel::Data => 0,
            DropLevel::Slab | DropLevel::Both => self.inner.drop_slab(false),
        })
    }

    /// drop_caches level 3 the way Linux did before per-group shrinker
    /// bitmaps: every shrinker for every group (the bench's `--naive` row).
    #[doc(hidden)]
    pub fn drop_caches_naive(&self) -> usize {
        self.inner.drop_slab(true)
    }

    /// Creates group `name` under `parent` (EEXIST, ENOENT, EINVAL for an
    /// empty name or one with '/').
    pub fn group_create(&self, parent: GroupId, name: &str) -> SysResult<GroupId> {
        // Tombstones freed since the last sweep give their ids back first
        // (when they have piled up: amortized O(1), reclaim/prune.rs).
        self.inner.prune_if_grown();
        self.inner.reclaim.groups.create(parent, name)
    }

    /// Removes group `id` (EBUSY with live children or attached processes,
    /// as cgroup rmdir; EINVAL for the root, ENOENT if absent); its cached
    /// objects move to the parent. The group stays a tombstone while
    /// objects are charged to it and is pruned (its id reused) once none
    /// is (`reclaim/prune.rs`).
    pub fn group_remove(&self, id: GroupId) -> SysResult<()> {
        let v = &self.inner;
        let groups = &v.reclaim.groups;
        let g = groups.remove(id)?;
        let parent = groups.live(g.parent()).id;
        for sid in v.reclaim.shrinkers.ids() {
            match v.reclaim.shrinkers.get(sid) {
                Some(Slot::Super(w)) => {
                    if let Some(sb) = w.upgrade() {
                        sb.lru.splice(id, parent);
                        if sb.lru.count(parent) > 0 {
                            v.note_nonempty(parent, sid as u32);
                        }
                    }
                }
                Some(Slot::Custom(_)) if g.shrinker_map.test(sid) => {
                    v.note_nonempty(parent, sid as u32);
                }
                _ => {}
            }
        }
        // Only now, with its lists spliced, may it be pruned (and its id
        // re-created): a splice must never move a new group's list.
        groups.tree_lock.lock().tombstones.push(id);
        v.prune_removed(id);
        Ok(())
    }

    /// Sets group `id`'s limit in bytes (u64::MAX: none).
    pub fn group_set_max(&self, id: GroupId, max: u64) -> SysResult<()> {
        self.inner.reclaim.groups.set_max(id, max)
    }

    /// memory.stat of group `id`.
    pub fn group_stat(&self, id: GroupId) -> SysResult<GroupStat> {
        self.inner.reclaim.groups.stat(id)
    }

    /// Moves `p` (and the threads sharing its group, see
    /// `Process::clone_thread`) to group `id`. Objects it created stay
    /// charged where they were.
    pub fn group_attach(&self, p: &Process, id: GroupId) -> SysResult<()> {
        if !Arc::ptr_eq(&p.vfs, &self.inner) {
            return Err(Errno::ENOENT);
        }
        p.group.attach(id)
    }

    /// Registers an embedder's shrinker; returns its id.
    pub fn register_shrinker(&self, s: Arc<dyn Shrinker>) -> u32 {
        self.inner.reclaim.shrinkers.register(Slot::Custom(s))
    }

    /// Unregisters shrinker `id` (ENOENT if not registered).
    pub fn unregister_shrinker(&self, id: u32) -> SysResult<()> {
        if self.inner.reclaim.shrinkers.unregister(id) {
            Ok(())
        } else {
            Err(Errno::ENOENT)
        }
    }

    /// Tells reclaim that shrinker `id` has objects of `group` (call after
    /// the store that makes `count` non-zero).
    pub fn shrinker_mark(&self, id: u32, group: GroupId) {
        self.inner.note_nonempty(group, id);
    }

    /// Removed groups not yet pruned, and ids ever handed out (pruned ones
    /// are reused): what group memory is bounded by (for tests).
    #[doc(hidden)]
    pub fn group_table_size(&self) -> (usize, usize) {
        let t = self.inner.reclaim.groups.tree_lock.lock();
        (t.tombstones.len(), t.next as usize)
    }

    /// Whether group `id` is in the populated set (for tests).
    #[doc(hidden)]
    pub fn group_is_populated(&self, id: GroupId) -> bool {
        self.inner.reclaim.groups.populated.test(id as usize)
    }

    /// Whether shrinker `sid`'s bit is set in group `id` (for tests).
    #[doc(hidden)]
    pub fn group_shrinker_bit(&self, id: GroupId, sid: u32) -> bool {
        self.inner
            .reclaim
            .groups
            .get(id)
            .is_some_and(|g| g.shrinker_map.test(sid as usize))
    }

    /// Unused dentries on group `id`'s lists, over all superblocks (for
    /// tests: equals the objects linked at quiescence).
    #[doc(hidden)]
    pub fn group_lru_count(&self, id: GroupId) -> usize {
        let v = &self.inner;
        v.reclaim
            .shrinkers
            .ids()
            .into_iter()
            .filter_map(|sid| match v.reclaim.shrinkers.get(sid) {
                Some(Slot::Super(w)) => w.upgrade(),
                _ => None,
            })
            .map(|sb| sb.lru.count(id))
            .sum()
    }
}

impl Process {
    /// The memory group this process is charged to.
    pub fn group(&self) -> GroupId {
        self.group.get()
    }
}
