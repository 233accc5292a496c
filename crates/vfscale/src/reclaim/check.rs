//! The memory-group part of the invariant checker (issue 9: "memory-group
//! totals equal the objects").
//!
//! `Vfs::check_invariants` already walks every object of a quiescent VFS
//! (the hash chains, the trees under each superblock root, the anonymous
//! mount's internal nodes). While it walks it tallies, per group, the
//! objects that record that group ([`GroupTally`]); this module then
//! compares the tally with each group's sharded counters. No hot path
//! changes: enumeration is the walk the checker does anyway.
//!
//! What is compared, for every group ever created (live or removed):
//! - dentries, inodes: the objects whose `group` names it;
//! - open files: zero (the checker runs with every process gone);
//! - data pages: `blocks / 8` of each inode of a superblock that keeps its
//!   own data (tmpfs, memfds); backend-served inodes (passthrough) mirror
//!   host block counts and charge no pages;
//! - bytes: a live group's `usage` equals the tallied objects of its
//!   subtree times `KIND_BYTES` (bytes follow from the counts, so this
//!   proves the subtree sum and the reparenting of removed descendants).

use super::group::{ObjKind, KIND_BYTES};
use super::GroupId;
use crate::vfs::VfsInner;
use std::collections::HashMap;

/// Objects found by the checker's walk, per group and kind.
#[derive(Default)]
pub(crate) struct GroupTally {
    per_group: HashMap<GroupId, [i64; 4]>,
}

impl GroupTally {
    pub(crate) fn add(&mut self, group: GroupId, kind: ObjKind, n: i64) {
        self.per_group.entry(group).or_default()[kind as usize] += n;
    }

    fn of(&self, group: GroupId) -> [i64; 4] {
        self.per_group.get(&group).copied().unwrap_or_default()
    }
}

const KIND_NAMES: [&str; 4] = ["dentries", "inodes", "open files", "data pages"];

impl VfsInner {
    /// Compares every group's counters with the objects the checker found.
    pub(crate) fn check_group_totals(&self, found: &GroupTally) -> Result<(), String> {
        let groups = &self.reclaim.groups;
        for (&g, _) in found.per_group.iter() {
            if groups.get(g).is_none() {
                return Err(format!("objects charged to unknown group {g}"));
            }
        }
        for id in groups.all_ids() {
            let Some(g) = groups.get(id) else { continue };
            let want = found.of(id);
            let have = g.own_counts();
            for k in 0..4 {
                if have[k] != want[k] {
                    let what = if have[k] > want[k] {
                        "a leak (charged, never uncharged)"
                    } else {
                        "a double uncharge (or a charge that was never made)"
                    };
                    return Err(format!(
                        "group {id}{} counts {} {} but {} exist: {what}",
                        if g.is_dead() { " (removed)" } else { "" },
                        have[k],
                        KIND_NAMES[k],
                        want[k],
                    ));
                }
            }
        }
        // Then the subtree sums (a per-group mismatch above names the
        // group; this one only its ancestors).
        for id in groups.all_ids() {
            let Some(g) = groups.get(id) else { continue };
            if g.is_dead() {
                continue;
            }
            let subtree_bytes: i64 = groups
                .subtree(id)
                .iter()
                .map(|x| {
                    let c = found.of(x.id);
                    (0..4).map(|k| c[k] * KIND_BYTES[k]).sum::<i64>()
                })
                .sum();
            let usage = groups.usage(id);
            if usage != subtree_bytes {
                return Err(format!(
                    "group {id} reports usage {usage} bytes but its subtree's objects take {subtree_bytes}"
                ));
            }
        }
        Ok(())
    }
}
