//! list_lru: the unused dentries of one superblock, on one list per memory
//! group (Linux's per-memcg `list_lru`), each with its own lock and count.
//!
//! Invariants:
//! - A dentry is linked on a list iff its `D_ON_LRU` flag is set; both
//!   change only under that list's mutex, as do its `lru_prev`/`lru_next`
//!   links and its `lru_list` pointer (which names the list it is on).
//! - A dentry on a list is never freed: the kill path unlinks it first.
//! - `count` mirrors the list's length; it is written under the mutex and
//!   read lock-free by shrinker `count` calls and by the re-check of
//!   `bits::clear_if_empty` (the empty → non-empty store precedes the
//!   shrinker-bit fence, see `reclaim/bits.rs`).
//! - Lists are created on first use and never freed before the superblock:
//!   `&DentryList` borrowed from the map stays valid as long as the
//!   superblock (so `ListLru::last_used`, a lock-free hint naming the
//!   list found last, never dangles). Group removal splices a list into the parent group's list
//!   (lock order: child list before parent list, then bucket locks).
//! - `D_REFERENCED` (second chance) is set by a put of a dentry already on a
//!   list and cleared by the scan, which rotates it instead of freeing it.

use super::GroupId;
use crate::dcache::dentry::{Dentry, D_ON_LRU};
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use crate::sync::lock::{Mutex, MutexGuard, RwLock};
use core::ptr;
use std::collections::HashMap;

/// The links of one list (under `DentryList::inner`).
pub struct LruLinks {
    head: *const Dentry,
    tail: *const Dentry,
    len: usize,
}

// SAFETY: reachable only through the mutex in `DentryList`; the dentries it
// links are Sync.
unsafe impl Send for LruLinks {}

/// The unused dentries of one (superblock, group).
pub struct DentryList {
    pub(crate) group: GroupId,
    inner: Mutex<LruLinks>,
    count: AtomicUsize,
}

/// A locked list.
pub struct LockedList<'a> {
    list: &'a DentryList,
    links: MutexGuard<'a, LruLinks>,
}

fn unsafe_ref<'a>(p: *const Dentry) -> Option<&'a Dentry> {
    // SAFETY: every pointer linked in a list is a live dentry (the kill path
    // unlinks before freeing) and callers hold the list mutex.
    unsafe { p.as_ref() }
}

impl DentryList {
    fn new(group: GroupId) -> DentryList {
        DentryList {
            group,
            inner: Mutex::new(LruLinks {
                head: ptr::null(),
                tail: ptr::null(),
                len: 0,
            }),
            count: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> LockedList<'_> {
        LockedList {
            list: self,
            links: self.inner.lock(),
        }
    }

    /// The group whose objects this list holds.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// The length, read without the lock (a snapshot).
    pub fn count(&self) -> usize {
        // Relaxed: a hint for shrinker counts; the re-check after clearing a
        // shrinker bit is ordered by the SeqCst fences in `reclaim/bits.rs`.
        self.count.load(Ordering::Relaxed)
    }
}

// Relaxed link accesses throughout: the links are protected by the mutex.
impl LockedList<'_> {
    fn publish_len(&self) {
        // Relaxed: see `DentryList::count`.
        self.list.count.store(self.links.len, Ordering::Relaxed);
    }

    /// Links `d` at the head (most recently used). Returns true if the list
    /// went empty → non-empty (the caller then marks the shrinker bit).
    pub fn add(&mut self, d: &Dentry) -> bool {
        debug_assert!(d.flags() & D_ON_LRU == 0);
        d.set_flag(D_ON_LRU);
        self.link_head(d);
        d.lru_list
            .store(self.list as *const DentryList as *mut _, Ordering::Relaxed);
        self.links.len += 1;
        self.publish_len();
        self.links.len == 1
    }

    fn link_head(&mut self, d: &Dentry) {
        d.lru_prev.store(ptr::null_mut(), Ordering::Relaxed);
        d.lru_next
            .store(self.links.head as *mut Dentry, Ordering::Relaxed);
        if let Some(h) = unsafe_ref(self.links.head) {
            h.lru_prev
                .store(d as *const Dentry as *mut Dentry, Ordering::Relaxed);
        } else {
            self.links.tail = d;
        }
        self.links.head = d;
    }

    fn unlink(&mut self, d: &Dentry) {
        let prev = d.lru_prev.load(Ordering::Relaxed);
        let next = d.lru_next.load(Ordering::Relaxed);
        match unsafe_ref(prev) {
            Some(p) => p.lru_next.store(next, Ordering::Relaxed),
            None => self.links.head = next,
        }
        match unsafe_ref(next) {
            Some(n) => n.lru_prev.store(prev, Ordering::Relaxed),
            None => self.links.tail = prev,
        }
    }

    /// Unlinks `d`, which is on this list.
    pub fn remove(&mut self, d: &Dentry) {
        debug_assert!(d.flags() & D_ON_LRU != 0);
        self.unlink(d);
        d.clear_flag(D_ON_LRU);
        d.lru_list.store(ptr::null_mut(), Ordering::Relaxed);
        self.links.len -= 1;
        self.publish_len();
    }

    /// Moves `d` (on this list) to the head: second chance, or skipped.
    pub fn rotate(&mut self, d: &Dentry) {
        self.unlink(d);
        self.link_head(d);
    }

    /// The least recently used dentry, if any.
    pub fn oldest(&self) -> *const Dentry {
        self.links.tail
    }

    pub fn len(&self) -> usize {
        self.links.len
    }

    pub fn is_empty(&self) -> bool {
        self.links.len == 0
    }

    /// True if `d` is linked on this very list (under its lock).
    pub fn holds(&self, d: &Dentry) -> bool {
        d.flags() & D_ON_LRU != 0
            && ptr::eq(d.lru_list.load(Ordering::Relaxed), self.list as *const _)
    }
}

/// The per-group lists of one superblock and its shrinker id.
pub struct ListLru {
    lists: RwLock<HashMap<GroupId, Box<DentryList>>>,
    /// The list found last (null before the first): a put usually goes to
    /// the list its thread used before, and this finds it with one shared
    /// load instead of the map's hash and the read lock's shared write.
    last_used: AtomicPtr<DentryList>,
    /// This superblock's id in the VFS's shrinker registry (u32::MAX: none).
    pub(crate) shrinker_id: AtomicU32,
}

impl Default for ListLru {
    fn default() -> Self {
        ListLru {
            lists: RwLock::new(HashMap::new()),
            last_used: AtomicPtr::new(ptr::null_mut()),
            shrinker_id: AtomicU32::new(u32::MAX),
        }
    }
}

impl ListLru {
    pub fn shrinker_id(&self) -> u32 {
        // Relaxed: set once, before any dentry of the superblock exists.
        self.shrinker_id.load(Ordering::Relaxed)
    }

    fn existing(&self, group: GroupId) -> Option<&DentryList> {
        let map = self.lists.read();
        let p: *const DentryList = &**map.get(&group)?;
        // SAFETY: lists are boxed and never removed before `self` drops.
        Some(unsafe { &*p })
    }

    /// The list of `group`, created on first use.
    #[inline]
    pub fn list_for(&self, group: GroupId) -> &DentryList {
        // Acquire pairs with the Release store in `list_for_slow`: the list
        // it names is fully built.
        let last = self.last_used.load(Ordering::Acquire);
        // SAFETY: non-null `last_used` points at a boxed list of this map,
        // and lists are never removed before `self` drops.
        if let Some(l) = unsafe { last.as_ref() } {
            if l.group == group {
                return l;
            }
        }
        self.list_for_slow(group)
    }

    #[cold]
    fn list_for_slow(&self, group: GroupId) -> &DentryList {
        let l = match self.existing(group) {
            Some(l) => l,
            None => {
                let mut map = self.lists.write();
                let p: *const DentryList = &**map
                    .entry(group)
                    .or_insert_with(|| Box::new(DentryList::new(group)));
                // SAFETY: as in `existing`.
                unsafe { &*p }
            }
        };
        // Release pairs with the Acquire load in `list_for`.
        self.last_used
            .store(l as *const DentryList as *mut DentryList, Ordering::Release);
        l
    }

    /// Unused dentries of `group` here (0 if it never had a list).
    pub fn count(&self, group: GroupId) -> usize {
        self.existing(group).map_or(0, |l| l.count())
    }

    /// All lists (for teardown and checks), a snapshot.
    pub fn lists(&self) -> Vec<&DentryList> {
        let map = self.lists.read();
        map.values()
            .map(|b| {
                let p: *const DentryList = &**b;
                // SAFETY: as in `existing`.
                unsafe { &*p }
            })
            .collect()
    }

    /// Total unused dentries over all groups.
    pub fn len(&self) -> usize {
        self.lists().iter().map(|l| l.count()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks every list of a quiescent superblock: each linked dentry has
    /// `D_ON_LRU`, names this list, is hashed, and the count equals the
    /// links. Returns the (group, length) of every non-empty list.
    pub(crate) fn check(&self) -> Result<Vec<(GroupId, usize)>, String> {
        let mut out = Vec::new();
        for list in self.lists() {
            let l = list.lock();
            let mut n = 0;
            let mut p = l.links.head;
            while let Some(d) = unsafe_ref(p) {
                if !l.holds(d) {
                    return Err(format!(
                        "a dentry on group {}'s list does not name it",
                        list.group
                    ));
                }
                if !d.is_hashed() {
                    return Err("an unhashed dentry on an LRU list".into());
                }
                n += 1;
                p = d.lru_next.load(Ordering::Relaxed);
            }
            if n != l.links.len || n != list.count() {
                return Err(format!(
                    "group {}'s list links {n} dentries but counts {} / {}",
                    list.group,
                    l.links.len,
                    list.count()
                ));
            }
            if n > 0 {
                out.push((list.group, n));
            }
        }
        Ok(out)
    }

    /// Unlinks `d` from whatever list holds it, if any. The caller keeps
    /// `d` allocated (a reference, the kill, or a guard).
    pub fn remove(&self, d: &Dentry) {
        loop {
            if d.flags() & D_ON_LRU == 0 {
                return;
            }
            // Relaxed: re-checked under the list's lock, which orders it.
            let p = d.lru_list.load(Ordering::Relaxed);
            // SAFETY: lists live as long as the superblock, which outlives
            // its dentries; null only when not linked.
            let Some(list) = (unsafe { p.as_ref() }) else {
                core::hint::spin_loop();
                continue;
            };
            let mut l = list.lock();
            if l.holds(d) {
                l.remove(d);
                return;
            }
        }
    }

    /// Moves every dentry of `from`'s list to `to`'s. Returns true if `to`
    /// went empty → non-empty (the caller marks the bits).
    pub fn splice(&self, from: GroupId, to: GroupId) -> bool {
        let Some(src) = self.existing(from) else {
            return false;
        };
        let dst = self.list_for(to);
        let mut s = src.lock();
        let mut d = dst.lock();
        let was_empty = d.is_empty();
        let mut moved = 0;
        loop {
            let p = s.oldest();
            let Some(x) = unsafe_ref(p) else { break };
            // D_ON_LRU stays set throughout (both locks are held), so a
            // concurrent `ListLru::remove` waits on one of them and then
            // follows `lru_list` to the new list.
            s.unlink(x);
            s.links.len -= 1;
            d.link_head(x);
            x.lru_list
                .store(dst as *const DentryList as *mut _, Ordering::Relaxed);
            d.links.len += 1;
            moved += 1;
        }
        s.publish_len();
        d.publish_len();
        was_empty && moved > 0
    }
}
