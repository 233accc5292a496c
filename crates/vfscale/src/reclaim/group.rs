//! Memory groups: a hierarchy like cgroup v2's memory controller. Each
//! cached object (dentry, inode, open file, tmpfs data page) is charged to
//! one group, the group of the process that created it, and uncharged from
//! that same group when freed (even if the process moved since, or the group
//! was removed: a removed group stays as a tombstone whose counts belong to
//! its nearest live ancestor, until nothing refers to it and it is pruned,
//! `reclaim/prune.rs`).
//!
//! Invariants:
//! - The table only grows: a slot, once published (Release, read with
//!   Acquire), holds the same `MemGroup` allocation until the VFS is
//!   dropped, so lookups take no lock and write nothing. A pruned
//!   tombstone's id (and its allocation) is reused by a later `create`,
//!   which re-initialises the group in place (`reset_for_reuse`).
//! - `tree_lock` serialises creation, removal, pruning, attachment and `max`
//!   changes, and guards every group's `children` list and the free and
//!   tombstone id lists.
//! - `attached` counts the process memberships (`GroupCell`s) naming the
//!   group; it rises only under `tree_lock`, so a group seen at zero there
//!   gains no member until it is re-created.
//! - Counters are sharded per thread (one padded line per shard holds all of
//!   a group's counters), so two threads charging the same group write
//!   different lines; sums are snapshots, exact at quiescence.
//! - A group's usage (what `max` limits) is the bytes charged to it and to
//!   every descendant, removed ones included.

use super::bits::GrowBits;
use super::GroupId;
use crate::abi::{Errno, SysResult};
use crate::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use crate::sync::counter::shard_index;
use crate::sync::lock::{Mutex, RwLock};
use crossbeam_utils::CachePadded;

/// What a charge is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjKind {
    Dentry = 0,
    Inode = 1,
    File = 2,
    Page = 3,
}

/// Bytes charged per object of each kind: the object's own size (dentries
/// and inodes are three cache lines, an open file two; see their layout
/// assertions), a page's 4 KiB.
pub const KIND_BYTES: [i64; 4] = [192, 192, 128, 4096];

// Counter slots within a shard (bytes are not a slot: they follow from
// the object counts and `KIND_BYTES`, so a charge is one RMW).
const SLOT_KIND0: usize = 0;
const SLOT_RECLAIMED: usize = 4;
const SLOTS: usize = 8;

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<[AtomicI64; SLOTS]>() == 64);

/// One thread's counters of one group (one cache line): the object counts
/// by kind, then the reclaim statistic.
pub(crate) type Shard = [AtomicI64; SLOTS];

/// Per-group statistics, like memory.stat (`Vfs::group_stat`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupStat {
    pub id: GroupId,
    pub name: String,
    /// Parent's id (the root's is its own).
    pub parent: GroupId,
    /// Bytes charged to this group and its descendants (memory.current).
    pub usage_bytes: i64,
    /// The limit (u64::MAX: none).
    pub max_bytes: u64,
    /// Objects charged to this group itself (and removed descendants).
    pub dentries: i64,
    pub inodes: i64,
    pub files: i64,
    pub pages: i64,
    /// Bytes of those objects (dentries, inodes, files, pages in that order).
    pub dentry_bytes: i64,
    pub inode_bytes: i64,
    pub file_bytes: i64,
    pub page_bytes: i64,
    /// Objects freed by reclaim from this group's lists.
    pub reclaimed: u64,
    /// Times a charge found the group over `max` and reclaimed.
    pub limit_reclaims: u64,
    /// Charges refused (ENOMEM/ENOSPC) because nothing more could be freed.
    pub limit_failures: u64,
}

/// One memory group.
pub struct MemGroup {
    pub(crate) id: GroupId,
    /// Set at creation (and at reuse, under `tree_lock`).
    parent: AtomicU32,
    name: Mutex<String>,
    /// Process memberships naming this group (`reclaim/member.rs`).
    pub(crate) attached: AtomicUsize,
    max: AtomicU64,
    /// Removed: new charges go to the nearest live ancestor.
    pub(crate) dead: AtomicBool,
    shards: Box<[CachePadded<[AtomicI64; SLOTS]>]>,
    pub(crate) limit_reclaims: AtomicU64,
    pub(crate) limit_failures: AtomicU64,
    /// Children (live and removed), under `Groups::tree_lock`.
    children: Mutex<Vec<GroupId>>,
    /// Bit i: shrinker i may have objects of this group.
    pub(crate) shrinker_map: GrowBits,
    /// Per shrinker: scan work deferred to the next pass (do_shrink_slab).
    pub(crate) deferred: RwLock<Vec<AtomicI64>>,
}

impl MemGroup {
    fn new(id: GroupId, parent: GroupId, name: String) -> MemGroup {
        let n = crate::sync::counter::shard_count();
        MemGroup {
            id,
            parent: AtomicU32::new(parent),
            name: Mutex::new(name),
            attached: AtomicUsize::new(0),
            max: AtomicU64::new(u64::MAX),
            dead: AtomicBool::new(false),
            shards: (0..n)
                .map(|_| CachePadded::new(Default::default()))
                .collect(),
            limit_reclaims: AtomicU64::new(0),
            limit_failures: AtomicU64::new(0),
            children: Mutex::new(Vec::new()),
            shrinker_map: GrowBits::new(),
            deferred: RwLock::new(Vec::new()),
        }
    }

    /// The parent's id.
    #[inline]
    pub(crate) fn parent(&self) -> GroupId {
        // Relaxed: changes only when a pruned id is re-created under
        // `tree_lock`; a racing reader follows either parent, both of
        // which exist (see `Groups::live`).
        self.parent.load(Ordering::Relaxed)
    }

    pub(crate) fn name(&self) -> String {
        self.name.lock().clone()
    }

    /// Makes a pruned tombstone a fresh group (caller holds `tree_lock`).
    /// Object counters are kept, not zeroed: they are zero unless a charge
    /// raced with the removal, and then they belong to objects that will
    /// uncharge this id. Statistics start over.
    fn reset_for_reuse(&self, parent: GroupId, name: &str) {
        // Relaxed (all stores): the caller publishes the group to lookups
        // by clearing `dead` last, below, and by its parent's children list
        // under `tree_lock`.
        self.parent.store(parent, Ordering::Relaxed);
        *self.name.lock() = name.to_owned();
        self.max.store(u64::MAX, Ordering::Relaxed);
        self.limit_reclaims.store(0, Ordering::Relaxed);
        self.limit_failures.store(0, Ordering::Relaxed);
        for s in self.shards.iter() {
            s[SLOT_RECLAIMED].store(0, Ordering::Relaxed);
        }
        for d in self.deferred.read().iter() {
            d.store(0, Ordering::Relaxed);
        }
        self.dead.store(false, Ordering::Relaxed);
    }

    /// The calling thread's counter line of this group. The same line for
    /// the thread's whole life (`shard_index` is fixed per thread), so a
    /// pointer to it may be cached (`reclaim::CURRENT`).
    #[inline]
    pub(crate) fn my_shard(&self) -> &Shard {
        &self.shards[shard_index() & (self.shards.len() - 1)]
    }

    #[inline]
    pub(crate) fn add(&self, kind: ObjKind, n: i64) {
        shard_add(self.my_shard(), kind, n);
    }

    pub(crate) fn note_reclaimed(&self, n: u64) {
        // Relaxed: a statistic.
        self.my_shard()[SLOT_RECLAIMED].fetch_add(n as i64, Ordering::Relaxed);
    }

    /// Bytes charged to this group itself.
    fn bytes(&self) -> i64 {
        (0..4)
            .map(|k| self.sum(SLOT_KIND0 + k) * KIND_BYTES[k])
            .sum()
    }

    fn sum(&self, slot: usize) -> i64 {
        // Relaxed: a snapshot.
        self.shards
            .iter()
            .map(|s| s[slot].load(Ordering::Relaxed))
            .sum()
    }

    /// Objects of each kind charged to this group itself (a snapshot).
    pub(crate) fn own_counts(&self) -> [i64; 4] {
        core::array::from_fn(|k| self.sum(SLOT_KIND0 + k))
    }

    pub fn max(&self) -> u64 {
        // Relaxed: a tunable; a charge racing with a change may use either.
        self.max.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn is_dead(&self) -> bool {
        // Relaxed: set once under the tree lock; a charge that misses it
        // charges the tombstone, whose counts its ancestor reports anyway.
        self.dead.load(Ordering::Relaxed)
    }

    /// Its (deferred-work) slot for shrinker `id`, growing the vector.
    pub(crate) fn take_deferred(&self, id: usize) -> i64 {
        let d = self.deferred.read();
        // Relaxed: an estimate of pending work, like Linux's nr_deferred.
        d.get(id).map_or(0, |x| x.swap(0, Ordering::Relaxed))
    }

    pub(crate) fn add_deferred(&self, id: usize, n: i64) {
        if n == 0 {
            return;
        }
        if self.deferred.read().len() <= id {
            let mut d = self.deferred.write();
            while d.len() <= id {
                d.push(AtomicI64::new(0));
            }
        }
        // Relaxed: as in `take_deferred`.
        self.deferred.read()[id].fetch_add(n, Ordering::Relaxed);
    }
}

/// Adds `n` objects of `kind` to one thread's counter line of a group.
#[inline(always)]
pub(crate) fn shard_add(shard: &Shard, kind: ObjKind, n: i64) {
    // Relaxed: statistics; they order nothing (usage sums are snapshots).
    shard[SLOT_KIND0 + kind as usize].fetch_add(n, Ordering::Relaxed);
}

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
const CHUNKS: usize = 1024;
/// Groups (live, tombstones and pruned ids awaiting reuse) one VFS can
/// hold at once.
pub const MAX_GROUPS: usize = CHUNK * CHUNKS;

/// What `tree_lock` guards besides the children lists.
pub(crate) struct TreeState {
    /// Ids never handed out start here.
    pub(crate) next: GroupId,
    /// Pruned ids, reused by `create` (last pruned first).
    pub(crate) free: Vec<GroupId>,
    /// Removed groups not yet pruned.
    pub(crate) tombstones: Vec<GroupId>,
    /// Creation sweeps the tombstones when there are this many
    /// (`reclaim/prune.rs`).
    pub(crate) sweep_at: usize,
}

/// The group table of one VFS.
pub struct Groups {
    /// Chunks of `CHUNK` slots, allocated on first use.
    chunks: Box<[AtomicPtr<AtomicPtr<MemGroup>>]>,
    /// Serialises tree changes.
    pub(crate) tree_lock: Mutex<TreeState>,
    /// Bit g: group g may hold reclaimable objects.
    pub(crate) populated: GrowBits,
    /// Set (never cleared) by the first `set_max` of a finite limit: until
    /// then admission is this one load.
    any_limit: AtomicBool,
}

impl Default for Groups {
    fn default() -> Self {
        Self::new()
    }
}

impl Groups {
    /// A table holding the root group (id 0, no limit).
    pub fn new() -> Groups {
        let g = Groups {
            chunks: (0..CHUNKS)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
            tree_lock: Mutex::new(TreeState {
                next: 1,
                free: Vec::new(),
                tombstones: Vec::new(),
                sweep_at: 64,
            }),
            populated: GrowBits::new(),
            any_limit: AtomicBool::new(false),
        };
        g.publish(MemGroup::new(0, 0, String::new()));
        g
    }

    fn publish(&self, grp: MemGroup) {
        let id = grp.id as usize;
        let chunk = &self.chunks[id >> CHUNK_BITS];
        // Acquire: pairs with the Release below (chunks are published only
        // under the tree lock, which the caller holds, or at construction).
        let mut c = chunk.load(Ordering::Acquire);
        if c.is_null() {
            let fresh: Box<[AtomicPtr<MemGroup>]> = (0..CHUNK)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect();
            c = Box::into_raw(fresh) as *mut AtomicPtr<MemGroup>;
            // Release: publishes the zeroed chunk to `get`'s Acquire.
            chunk.store(c, Ordering::Release);
        }
        self.populated.reserve(id);
        // SAFETY: `c` points to CHUNK slots that live until `drop`.
        let slot = unsafe { &*c.add(id & (CHUNK - 1)) };
        // Release: publishes the group to `get`'s Acquire.
        slot.store(Box::into_raw(Box::new(grp)), Ordering::Release);
    }

    /// The group with id `id`, live or removed; None if never created.
    #[inline]
    pub fn get(&self, id: GroupId) -> Option<&MemGroup> {
        let id = id as usize;
        let chunk = self.chunks.get(id >> CHUNK_BITS)?;
        // Acquire: pairs with the Release in `publish`.
        let c = chunk.load(Ordering::Acquire);
        if c.is_null() {
            return None;
        }
        // SAFETY: chunks hold CHUNK slots and are freed only by `drop`.
        let slot = unsafe { &*c.add(id & (CHUNK - 1)) };
        // Acquire: pairs with the Release in `publish`.
        let g = slot.load(Ordering::Acquire);
        // SAFETY: published groups live until `drop`.
        unsafe { g.as_ref() }
    }

    pub fn root(&self) -> &MemGroup {
        self.get(0)
            .expect("the root group exists from construction")
    }

    /// `id`'s group if live, else its nearest live ancestor (the root for
    /// an unknown id).
    #[inline]
    pub fn live(&self, id: GroupId) -> &MemGroup {
        let mut g = match self.get(id) {
            Some(g) => g,
            None => return self.root(),
        };
        while g.is_dead() {
            g = self.get(g.parent()).unwrap_or_else(|| self.root());
        }
        g
    }

    /// Charges `n` objects of `kind` to group `id` (never fails: limits are
    /// enforced before allocating, by `admit`). Returns the group charged,
    /// which the object records for its uncharge.
    #[inline]
    pub fn charge(&self, id: GroupId, kind: ObjKind, n: i64) -> GroupId {
        let g = self.live(id);
        g.add(kind, n);
        g.id
    }

    /// Uncharges what `charge` charged to `id` (live or removed).
    #[inline]
    pub fn uncharge(&self, id: GroupId, kind: ObjKind, n: i64) {
        match self.get(id) {
            Some(g) => g.add(kind, -n),
            None => self.root().add(kind, -n),
        }
    }

    /// A new child of `parent` named `name` (unique among live siblings).
    pub fn create(&self, parent: GroupId, name: &str) -> SysResult<GroupId> {
        if name.is_empty() || name.contains('/') || name.len() > 255 {
            return Err(Errno::EINVAL);
        }
        let mut t = self.tree_lock.lock();
        let p = self.get(parent).ok_or(Errno::ENOENT)?;
        if p.is_dead() {
            return Err(Errno::ENOENT);
        }
        let mut kids = p.children.lock();
        if kids
            .iter()
            .filter_map(|&k| self.get(k))
            .any(|k| !k.is_dead() && *k.name.lock() == name)
        {
            return Err(Errno::EEXIST);
        }
        let id = if let Some(id) = t.free.pop() {
            let g = self.get(id).expect("a pruned id keeps its group");
            g.reset_for_reuse(parent, name);
            id
        } else {
            let id = t.next;
            if id as usize >= MAX_GROUPS {
                return Err(Errno::ENOSPC);
            }
            t.next += 1;
            self.publish(MemGroup::new(id, parent, name.to_owned()));
            id
        };
        kids.push(id);
        Ok(id)
    }

    /// Marks `id` removed (EBUSY if it has live children or processes,
    /// as cgroup rmdir; EINVAL for the root). The caller then reparents its
    /// lists.
    pub fn remove(&self, id: GroupId) -> SysResult<&MemGroup> {
        if id == 0 {
            return Err(Errno::EINVAL);
        }
        let t = self.tree_lock.lock();
        let g = self.get(id).ok_or(Errno::ENOENT)?;
        if g.is_dead() {
            return Err(Errno::ENOENT);
        }
        // Acquire: pairs with the Release decrement of a dropped membership
        // (`GroupCell::drop`); increments happen under this lock.
        if g.attached.load(Ordering::Acquire) != 0 {
            return Err(Errno::EBUSY);
        }
        let busy = g
            .children
            .lock()
            .iter()
            .filter_map(|&k| self.get(k))
            .any(|k| !k.is_dead());
        if busy {
            return Err(Errno::EBUSY);
        }
        // Relaxed: see `MemGroup::is_dead`.
        g.dead.store(true, Ordering::Relaxed);
        drop(t);
        Ok(g)
    }

    pub fn set_max(&self, id: GroupId, max: u64) -> SysResult<()> {
        let _t = self.tree_lock.lock();
        let g = self.get(id).ok_or(Errno::ENOENT)?;
        if g.is_dead() || id == 0 {
            return Err(if id == 0 {
                Errno::EINVAL
            } else {
                Errno::ENOENT
            });
        }
        // Relaxed: see `MemGroup::max`.
        g.max.store(max, Ordering::Relaxed);
        if max != u64::MAX {
            // Relaxed: like `max` itself, a charge racing with the first
            // limit may miss it.
            self.any_limit.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `id` and every descendant (live and removed), parents first.
    pub fn subtree(&self, id: GroupId) -> Vec<&MemGroup> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(g) = stack.pop().and_then(|i| self.get(i)) {
            stack.extend(g.children.lock().iter().copied());
            out.push(g);
        }
        out
    }

    /// Bytes charged to `id` and its descendants.
    pub fn usage(&self, id: GroupId) -> i64 {
        self.subtree(id).iter().map(|g| g.bytes()).sum()
    }

    /// False while no group ever had a finite limit.
    #[inline]
    pub fn any_limit(&self) -> bool {
        // Relaxed: see `set_max`.
        self.any_limit.load(Ordering::Relaxed)
    }

    /// The live ancestors of `id` (itself first) that have a limit.
    pub fn limited_ancestors(&self, id: GroupId) -> Vec<GroupId> {
        let mut out = Vec::new();
        let mut g = self.live(id);
        loop {
            if g.max() != u64::MAX {
                out.push(g.id);
            }
            if g.id == 0 {
                return out;
            }
            g = self.live(g.parent());
        }
    }

    /// True if some live ancestor of `id` (or itself) has a limit: one load
    /// while no group ever had a limit, else one Relaxed load per level.
    #[inline]
    pub fn has_limit(&self, id: GroupId) -> bool {
        if !self.any_limit() {
            return false;
        }
        let mut g = self.live(id);
        loop {
            if g.max() != u64::MAX {
                return true;
            }
            if g.id == 0 {
                return false;
            }
            g = self.live(g.parent());
        }
    }

    pub fn stat(&self, id: GroupId) -> SysResult<GroupStat> {
        let g = self.get(id).ok_or(Errno::ENOENT)?;
        if g.is_dead() {
            return Err(Errno::ENOENT);
        }
        // Own objects plus those of removed descendants (reparented).
        let mut own = [0i64; SLOTS];
        let mut stack = vec![g];
        while let Some(x) = stack.pop() {
            for (slot, v) in own.iter_mut().enumerate() {
                *v += x.sum(slot);
            }
            for &k in x.children.lock().iter() {
                if let Some(k) = self.get(k).filter(|k| k.is_dead()) {
                    stack.push(k);
                }
            }
        }
        let kind = |k: ObjKind| own[SLOT_KIND0 + k as usize];
        Ok(GroupStat {
            id,
            name: g.name(),
            parent: g.parent(),
            usage_bytes: self.usage(id),
            max_bytes: g.max(),
            dentries: kind(ObjKind::Dentry),
            inodes: kind(ObjKind::Inode),
            files: kind(ObjKind::File),
            pages: kind(ObjKind::Page),
            dentry_bytes: kind(ObjKind::Dentry) * KIND_BYTES[0],
            inode_bytes: kind(ObjKind::Inode) * KIND_BYTES[1],
            file_bytes: kind(ObjKind::File) * KIND_BYTES[2],
            page_bytes: kind(ObjKind::Page) * KIND_BYTES[3],
            reclaimed: own[SLOT_RECLAIMED].max(0) as u64,
            // Relaxed: statistics.
            limit_reclaims: g.limit_reclaims.load(Ordering::Relaxed),
            limit_failures: g.limit_failures.load(Ordering::Relaxed),
        })
    }

    /// Every id with a group (live, removed or pruned), in order.
    pub fn all_ids(&self) -> core::ops::Range<GroupId> {
        0..self.tree_lock.lock().next
    }

    /// The children list of `g` (for pruning; caller holds `tree_lock`).
    pub(crate) fn children_of<'g>(
        &self,
        g: &'g MemGroup,
    ) -> crate::sync::lock::MutexGuard<'g, Vec<GroupId>> {
        g.children.lock()
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        for chunk in self.chunks.iter() {
            // Relaxed: `&mut self`, no concurrent access.
            let c = chunk.load(Ordering::Relaxed);
            if c.is_null() {
                continue;
            }
            for i in 0..CHUNK {
                // SAFETY: chunks hold CHUNK slots.
                let g = unsafe { &*c.add(i) }.load(Ordering::Relaxed);
                if !g.is_null() {
                    // SAFETY: published by `publish` from a Box; dropped once.
                    drop(unsafe { Box::from_raw(g) });
                }
            }
            // SAFETY: allocated in `publish` as a boxed slice of CHUNK slots.
            drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(c, CHUNK)) });
        }
    }
}

// SAFETY: the raw pointers are owned boxes published through atomics; the
// groups themselves are Sync.
unsafe impl Send for Groups {}
// SAFETY: as above.
unsafe impl Sync for Groups {}
