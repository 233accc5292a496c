//! A process's membership in a memory group: the group id its calls charge
//! to, shared by the threads of one process (`Process::clone_thread`),
//! copied by fork, changed by `Vfs::group_attach`.
//!
//! Each live `GroupCell` counts once in its group's `attached`, which is
//! what makes `group_remove` answer EBUSY for a group with processes (as
//! cgroup rmdir) and lets a removed group be pruned once the count is zero
//! (`reclaim/prune.rs`). Increments (creation, fork, attach) happen under
//! the group tree lock, after checking the group is live; the decrement of
//! a dropped cell needs no lock: a cell that exists keeps its group's count
//! above zero, so its group cannot be pruned under it.

use super::GroupId;
use crate::abi::{Errno, SysResult};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::vfs::VfsInner;
use std::sync::Arc;

/// One process's group membership.
pub struct GroupCell {
    id: AtomicU32,
    vfs: Arc<VfsInner>,
}

impl GroupCell {
    /// A membership in the root group (which is never removed).
    pub(crate) fn in_root(vfs: &Arc<VfsInner>) -> Arc<GroupCell> {
        let _t = vfs.reclaim.groups.tree_lock.lock();
        // Relaxed: under the tree lock (see the module comment).
        vfs.reclaim
            .groups
            .root()
            .attached
            .fetch_add(1, Ordering::Relaxed);
        Arc::new(GroupCell {
            id: AtomicU32::new(super::ROOT_GROUP),
            vfs: vfs.clone(),
        })
    }

    /// The group charged for what the process creates now.
    #[inline]
    pub(crate) fn get(&self) -> GroupId {
        // Relaxed: a plain value; nothing is published with it (a call
        // racing with an attach charges either group, as in Linux).
        self.id.load(Ordering::Relaxed)
    }

    /// A child's membership: the same group (cgroup inheritance).
    pub(crate) fn fork(&self) -> Arc<GroupCell> {
        let groups = &self.vfs.reclaim.groups;
        let _t = groups.tree_lock.lock();
        // Under the lock our id cannot change (attach takes it) and our
        // count keeps the group from being pruned.
        let id = self.get();
        if let Some(g) = groups.get(id) {
            // Relaxed: under the tree lock.
            g.attached.fetch_add(1, Ordering::Relaxed);
        }
        Arc::new(GroupCell {
            id: AtomicU32::new(id),
            vfs: self.vfs.clone(),
        })
    }

    /// Moves the membership to live group `to` (ENOENT if it is not).
    pub(crate) fn attach(&self, to: GroupId) -> SysResult<()> {
        let groups = &self.vfs.reclaim.groups;
        let _t = groups.tree_lock.lock();
        let g = groups.get(to).ok_or(Errno::ENOENT)?;
        if g.is_dead() {
            return Err(Errno::ENOENT);
        }
        // Relaxed: under the tree lock.
        g.attached.fetch_add(1, Ordering::Relaxed);
        let old = self.id.swap(to, Ordering::Relaxed);
        if let Some(o) = groups.get(old) {
            // Release: pairs with the Acquire loads of removal and pruning.
            o.attached.fetch_sub(1, Ordering::Release);
        }
        Ok(())
    }
}

impl Drop for GroupCell {
    fn drop(&mut self) {
        if let Some(g) = self.vfs.reclaim.groups.get(self.get()) {
            // Release: pairs with the Acquire loads of removal and pruning.
            g.attached.fetch_sub(1, Ordering::Release);
        }
    }
}
