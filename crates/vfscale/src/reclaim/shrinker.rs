//! Shrinkers: the registry (small integer ids, lowest free id first), the
//! per-group walk over set shrinker bits, and Linux's `do_shrink_slab`
//! arithmetic (scan target from the freeable count, priority and `seeks`;
//! work not done carried over as deferred; batches of `SHRINK_BATCH`).
//!
//! Each superblock is one shrinker (its dentry lists; Linux's per-sb
//! `super_cache_scan` covers dcache and icache the same way); embedders add
//! their own with [`Shrinker`]. The cost of a pass is the set bits of the
//! populated groups, not groups × shrinkers: idle groups are skipped by the
//! populated-group bitmap, idle shrinkers of a busy group by its map.
//!
//! Invariants:
//! - `slots` is read-locked only to clone a slot out; no callback runs
//!   under it, so callbacks may register or unregister shrinkers.
//! - A bit for shrinker id i in group g is set whenever i's objects of g
//!   are non-empty (the protocol of `reclaim/bits.rs`); a stale bit for a
//!   freed or reused id only costs a visit.

use super::group::MemGroup;
use super::GroupId;
use crate::fs::SuperBlock;
use crate::sync::lock::RwLock;
use crate::vfs::VfsInner;
use std::sync::{Arc, Weak};

/// Linux's DEFAULT_SEEKS: the cost of recreating an object, relative.
pub const DEFAULT_SEEKS: u32 = 2;
/// Objects per scan call (Linux's SHRINK_BATCH).
pub const SHRINK_BATCH: u64 = 128;
/// The first (narrowest) reclaim priority of a limit-triggered reclaim:
/// scans start at freeable >> 12 (Linux's DEF_PRIORITY).
pub const DEF_PRIORITY: u32 = 12;

/// A cache an embedder lets the VFS shrink. After making its objects of a
/// group non-empty it must call `Vfs::shrinker_mark(id, group)`, or
/// reclaim will not visit it for that group.
pub trait Shrinker: Send + Sync {
    /// Objects of `group` this shrinker could free now (0: none).
    fn count(&self, group: GroupId) -> u64;
    /// Frees up to `nr` objects of `group`; returns how many it freed.
    fn scan(&self, group: GroupId, nr: u64) -> u64;
    /// Relative cost of recreating an object (0: scan half of the freeable
    /// objects per pass, whatever the priority).
    fn seeks(&self) -> u32 {
        DEFAULT_SEEKS
    }
}

#[derive(Clone)]
pub(crate) enum Slot {
    /// A superblock's dentry lists.
    Super(Weak<SuperBlock>),
    Custom(Arc<dyn Shrinker>),
}

/// The registry of one VFS.
#[derive(Default)]
pub struct Shrinkers {
    slots: RwLock<Vec<Option<Slot>>>,
}

/// What one `do_shrink_slab` call found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shrunk {
    /// Nothing of the group (Linux's SHRINK_EMPTY).
    Empty,
    Freed(u64),
}

impl Shrinkers {
    pub(crate) fn register(&self, slot: Slot) -> u32 {
        let mut s = self.slots.write();
        let id = match s.iter().position(|x| x.is_none()) {
            Some(i) => i,
            None => {
                s.push(None);
                s.len() - 1
            }
        };
        s[id] = Some(slot);
        id as u32
    }

    /// Frees `id`. False if it was not registered.
    pub(crate) fn unregister(&self, id: u32) -> bool {
        let mut s = self.slots.write();
        match s.get_mut(id as usize) {
            Some(x @ Some(_)) => {
                *x = None;
                true
            }
            _ => false,
        }
    }

    pub(crate) fn get(&self, id: usize) -> Option<Slot> {
        self.slots.read().get(id).cloned().flatten()
    }

    /// Registered ids, a snapshot.
    pub(crate) fn ids(&self) -> Vec<usize> {
        let s = self.slots.read();
        (0..s.len()).filter(|&i| s[i].is_some()).collect()
    }
}

impl VfsInner {
    fn slot_count(&self, slot: &Slot, group: GroupId) -> u64 {
        match slot {
            Slot::Super(w) => w.upgrade().map_or(0, |sb| sb.lru.count(group) as u64),
            Slot::Custom(s) => s.count(group),
        }
    }

    fn slot_scan(&self, slot: &Slot, group: GroupId, nr: u64) -> u64 {
        match slot {
            Slot::Super(w) => w.upgrade().map_or(0, |sb| {
                let list = sb.lru.list_for(group);
                self.shrink_dentry_list(list, nr as usize, false) as u64
            }),
            Slot::Custom(s) => s.scan(group, nr),
        }
    }

    fn slot_seeks(slot: &Slot) -> u32 {
        match slot {
            Slot::Super(_) => DEFAULT_SEEKS,
            Slot::Custom(s) => s.seeks(),
        }
    }

    /// Linux's `do_shrink_slab` for shrinker `id` in group `g`.
    pub(crate) fn do_shrink_slab(
        &self,
        g: &MemGroup,
        id: usize,
        slot: &Slot,
        priority: u32,
    ) -> Shrunk {
        let freeable = self.slot_count(slot, g.id);
        if freeable == 0 {
            return Shrunk::Empty;
        }
        let nr = g.take_deferred(id).max(0) as u64;
        let seeks = Self::slot_seeks(slot);
        let delta = if seeks > 0 {
            ((freeable >> priority) * 4) / seeks as u64
        } else {
            freeable / 2
        };
        let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
        let (mut scanned, mut freed) = (0u64, 0u64);
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let n = total_scan.min(SHRINK_BATCH);
            let got = self.slot_scan(slot, g.id, n);
            freed += got;
            scanned += n;
            total_scan -= n;
            if got == 0 && self.slot_count(slot, g.id) == 0 {
                break;
            }
        }
        // Work not done now (new delta plus old deferred) carries over,
        // capped at twice the freeable objects.
        let next = (nr + delta).saturating_sub(scanned).min(2 * freeable);
        g.add_deferred(id, next as i64);
        if freed > 0 {
            g.note_reclaimed(freed);
        }
        Shrunk::Freed(freed)
    }

    /// Runs every shrinker whose bit is set in `g`, clearing the bits of
    /// those that turn out empty. Returns objects freed.
    pub(crate) fn shrink_group(&self, g: &MemGroup, priority: u32) -> u64 {
        let mut freed = 0;
        for id in g.shrinker_map.snapshot() {
            let Some(slot) = self.reclaim.shrinkers.get(id) else {
                // Unregistered: nothing of it remains anywhere.
                g.shrinker_map.clear_if_empty(id, || true);
                continue;
            };
            match self.do_shrink_slab(g, id, &slot, priority) {
                Shrunk::Freed(n) => freed += n,
                Shrunk::Empty => {
                    g.shrinker_map
                        .clear_if_empty(id, || self.slot_count(&slot, g.id) == 0);
                }
            }
        }
        freed
    }

    /// One reclaim pass over the populated groups only.
    pub(crate) fn shrink_populated(&self, priority: u32) -> u64 {
        let groups = &self.reclaim.groups;
        let mut freed = 0;
        for gid in groups.populated.snapshot() {
            let Some(g) = groups.get(gid as GroupId) else {
                continue;
            };
            freed += self.shrink_group(g, priority);
            if g.shrinker_map.is_clear() {
                groups
                    .populated
                    .clear_if_empty(gid, || g.shrinker_map.is_clear());
            }
        }
        freed
    }

    /// The pre-bitmap pass (the `--naive` bench row): every shrinker for
    /// every group ever created.
    pub(crate) fn shrink_naive(&self, priority: u32) -> u64 {
        let groups = &self.reclaim.groups;
        let slots: Vec<(usize, Slot)> = (self.reclaim.shrinkers.ids().into_iter())
            .filter_map(|id| Some((id, self.reclaim.shrinkers.get(id)?)))
            .collect();
        let mut freed = 0;
        for gid in groups.all_ids() {
            let Some(g) = groups.get(gid) else { continue };
            for (id, slot) in &slots {
                if let Shrunk::Freed(n) = self.do_shrink_slab(g, *id, slot, priority) {
                    freed += n;
                }
            }
        }
        freed
    }

    /// Reclaims in `root`'s subtree (a limited group over its `max`).
    pub(crate) fn shrink_subtree(&self, root: GroupId, priority: u32) -> u64 {
        let groups = &self.reclaim.groups;
        groups
            .subtree(root)
            .into_iter()
            .map(|g| self.shrink_group(g, priority))
            .sum()
    }
}
