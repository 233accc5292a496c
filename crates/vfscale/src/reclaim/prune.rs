//! Pruning of removed groups (tombstones) once nothing refers to them, so
//! creating and removing groups forever keeps memory bounded by the groups
//! that exist or still hold something, not by every group ever made.
//!
//! A tombstone is pruned (its id goes on the free list, to be re-created
//! in place by `Groups::create`) when, under `tree_lock`:
//! - no process membership names it (`attached` is zero; removal already
//!   required that, and memberships are only added under the lock);
//! - it has no children (pruned children leave their parent's list);
//! - no object is charged to it (its own counters are zero): every object
//!   records its group's id and uncharges that id, so a charged object
//!   keeps the id reserved;
//! - no superblock list of it holds a dentry (removal spliced them into
//!   the parent's; a dentry charged to it would also show in the
//!   counters), and no embedder's shrinker bit is set in it (an embedder's
//!   objects of the group are not in our counters: the bit stays set until
//!   a reclaim pass finds the shrinker's count for the group at zero).
//!
//! What can still name a pruned id: a thread's current-group slot during a
//! call that began before its process moved away (a charge then lands on
//! the parent, or on the re-created group; the object records where it was
//! charged and uncharges that, so totals stay exact), and an embedder that
//! kept the id (`group_stat` then answers ENOENT, or for the new group).
//!
//! When, and what it costs (each check is O(shrinkers) under `tree_lock`):
//! - removal checks the removed group (and its removed ancestors): O(depth);
//! - `drop_caches` sweeps every tombstone (what it freed may have been a
//!   tombstone's last charge): O(tombstones), one lock and one length
//!   check while there are none;
//! - creation sweeps only when the tombstones have doubled since the last
//!   sweep (plus 64), so creating and removing groups that leave pinned
//!   objects behind costs amortized O(1) per creation, and the number of
//!   tombstones stays within twice those that hold something, plus 64.

use super::shrinker::Slot;
use super::GroupId;
use crate::sync::atomic::Ordering;
use crate::vfs::VfsInner;

/// Tombstones at which creation first sweeps (then twice the survivors,
/// plus this).
const SWEEP_SLACK: usize = 64;

impl VfsInner {
    /// Creation's sweep: only when the tombstones doubled since the last.
    pub(crate) fn prune_if_grown(&self) {
        let t = self.reclaim.groups.tree_lock.lock();
        let due = t.tombstones.len() >= t.sweep_at;
        drop(t);
        if due {
            self.prune_tombstones();
        }
    }

    /// Removal's check: `id` just became a tombstone; prune it (and removed
    /// ancestors it was the last child of) if nothing refers to it.
    pub(crate) fn prune_removed(&self, id: GroupId) {
        let groups = &self.reclaim.groups;
        let mut t = groups.tree_lock.lock();
        let mut next = Some(id);
        while let Some(id) = next.take() {
            let Some(pos) = t.tombstones.iter().rposition(|&x| x == id) else {
                break;
            };
            if !self.tombstone_is_unreferenced(id) {
                break;
            }
            t.tombstones.swap_remove(pos);
            t.free.push(id);
            if let Some(p) = groups.get(id).and_then(|g| groups.get(g.parent())) {
                groups.children_of(p).retain(|&k| k != id);
                if p.is_dead() {
                    next = Some(p.id);
                }
            }
        }
    }

    /// Prunes every tombstone nothing refers to any more; returns how many.
    pub(crate) fn prune_tombstones(&self) -> usize {
        let groups = &self.reclaim.groups;
        let mut t = groups.tree_lock.lock();
        if t.tombstones.is_empty() {
            return 0;
        }
        let mut pruned = 0;
        // A pruned child may make its (removed) parent prunable: repeat
        // while a pass prunes something (at most the tree's depth).
        loop {
            let mut freed: Vec<GroupId> = Vec::new();
            t.tombstones.retain(|&id| {
                if self.tombstone_is_unreferenced(id) {
                    freed.push(id);
                    false
                } else {
                    true
                }
            });
            if freed.is_empty() {
                break;
            }
            for &id in &freed {
                let Some(g) = groups.get(id) else { continue };
                if let Some(p) = groups.get(g.parent()) {
                    groups.children_of(p).retain(|&k| k != id);
                }
            }
            pruned += freed.len();
            t.free.extend(freed);
        }
        t.sweep_at = 2 * t.tombstones.len() + SWEEP_SLACK;
        pruned
    }

    /// The conditions of the module comment (caller holds `tree_lock`).
    fn tombstone_is_unreferenced(&self, id: GroupId) -> bool {
        let groups = &self.reclaim.groups;
        let Some(g) = groups.get(id) else {
            return false;
        };
        // Acquire: pairs with the Release decrement in `GroupCell::drop`.
        if !g.is_dead() || g.attached.load(Ordering::Acquire) != 0 {
            return false;
        }
        if !groups.children_of(g).is_empty() || g.own_counts() != [0; 4] {
            return false;
        }
        self.reclaim
            .shrinkers
            .ids()
            .into_iter()
            .all(|sid| match self.reclaim.shrinkers.get(sid) {
                Some(Slot::Super(w)) => w.upgrade().is_none_or(|sb| sb.lru.count(id) == 0),
                Some(Slot::Custom(_)) => !g.shrinker_map.test(sid),
                None => true,
            })
    }
}
