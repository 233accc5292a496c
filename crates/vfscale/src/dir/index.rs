//! The ordered child index of a directory, keyed by stable 64-bit cookies.
//!
//! Invariants (all under the directory lock, the `RwLock` around this index):
//! - every positive child dentry of the directory appears exactly once, under
//!   the cookie stored in the dentry; negative dentries never appear;
//! - cookies are handed out in increasing order and never reused within one
//!   directory, so an entry present for a whole readdir pass is returned
//!   exactly once, and a saved cookie (telldir) stays meaningful;
//! - positions 0 and 1 are "." and ".."; child cookies start at 2.
//!
//! The index holds raw dentry pointers: a positive child is pinned (its
//! refcount includes the namespace's reference) for as long as it is indexed.
//! Beside each pointer it keeps the child's inode number and file type
//! (both fixed for an inode's life), so a listing reads each child's
//! dentry for its name and never its inode: one stream of cache misses
//! through a big directory instead of two.
//!
//! A small directory (up to `SMALL_MAX` children) keeps its entries in a
//! vector sorted by cookie instead of a B-tree: a create appends one
//! 32-byte entry (new cookies are the largest), an unlink removes one by
//! binary search. Threads changing names in one directory then write one
//! or two lines of it per change instead of the B-tree leaf's three (its
//! length, key and value arrays lie on separate lines), in fewer
//! instructions under the directory lock. Past `SMALL_MAX` the index
//! becomes a B-tree for good (a large directory's unlinks stay O(log n)).

use crate::dcache::dentry::Dentry;
use std::collections::BTreeMap;

/// Readdir position of the first child (0 is ".", 1 is "..").
pub const FIRST_CHILD_COOKIE: u64 = 2;

/// A dentry pointer stored in an index, with what readdir needs of its
/// inode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DentryPtr {
    pub dentry: *const Dentry,
    pub ino: u64,
    /// `mode & S_IFMT` of the inode.
    pub file_type: u32,
}

impl DentryPtr {
    /// The entry for a positive dentry.
    fn of(d: *const Dentry) -> DentryPtr {
        // SAFETY: indexed dentries are positive and pinned (module
        // invariants); the caller holds the directory lock.
        let inode = unsafe { &*(*d).inode_ptr() };
        DentryPtr {
            dentry: d,
            ino: inode.ino(),
            file_type: inode.file_type(),
        }
    }
}

// SAFETY: the pointee is a pinned, Sync dentry (see the module invariants);
// the pointer is only dereferenced under the directory lock or an epoch guard.
unsafe impl Send for DentryPtr {}
// SAFETY: as above.
unsafe impl Sync for DentryPtr {}

/// Children a directory keeps in a sorted vector before its index turns
/// into a B-tree.
const SMALL_MAX: usize = 16;

#[derive(Debug)]
enum Children {
    /// Sorted by cookie, at most `SMALL_MAX` entries.
    Small(Vec<(u64, DentryPtr)>),
    /// Boxed: the enum then fits in the vector's size (the inode's third
    /// line holds the directory lock around this index); the extra
    /// allocation is once per large directory.
    #[allow(clippy::box_collection)]
    Large(Box<BTreeMap<u64, DentryPtr>>),
}

#[cfg(not(loom))]
const _: () = assert!(
    core::mem::size_of::<Children>() == core::mem::size_of::<Vec<(u64, DentryPtr)>>(),
    "the index's representation costs no tag word"
);

#[derive(Debug)]
pub struct DirIndex {
    children: Children,
    /// The next child's cookie, and in bit 63 ([`DEAD`]) whether rmdir
    /// removed the directory: it then takes no new names (lookups give
    /// ENOENT). One word for both keeps the directory lock, with its
    /// writers' queue, inside the inode's third line.
    next_cookie_and_dead: u64,
}

/// The dead flag's bit in `next_cookie_and_dead`; cookies stay below it
/// (2^63 creates in one directory are out of reach).
const DEAD: u64 = 1 << 63;

#[cfg(not(loom))]
const _: () = assert!(
    core::mem::size_of::<DirIndex>() == 32,
    "a directory's lock, writers' queue and index fill the inode's body slot"
);

impl Default for DirIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl DirIndex {
    fn next_cookie(&self) -> u64 {
        self.next_cookie_and_dead & !DEAD
    }

    /// Whether rmdir removed this directory (it takes no new names).
    pub(crate) fn is_dead(&self) -> bool {
        self.next_cookie_and_dead & DEAD != 0
    }

    pub(crate) fn mark_dead(&mut self) {
        self.next_cookie_and_dead |= DEAD;
    }

    pub fn new() -> DirIndex {
        DirIndex {
            children: Children::Small(Vec::new()),
            next_cookie_and_dead: FIRST_CHILD_COOKIE,
        }
    }

    /// Adds a child and returns its cookie.
    pub fn insert(&mut self, d: *const Dentry) -> u64 {
        let cookie = self.next_cookie();
        self.next_cookie_and_dead += 1;
        // The largest cookie yet: a small index appends.
        self.file(cookie, DentryPtr::of(d));
        cookie
    }

    /// Files `entry` under `cookie`, which is not in the index.
    fn file(&mut self, cookie: u64, entry: DentryPtr) {
        match &mut self.children {
            Children::Small(v) if v.len() < SMALL_MAX => {
                let at = v.partition_point(|&(c, _)| c < cookie);
                debug_assert!(v.get(at).is_none_or(|&(c, _)| c != cookie));
                v.insert(at, (cookie, entry));
            }
            Children::Small(v) => {
                let mut map: BTreeMap<u64, DentryPtr> = v.drain(..).collect();
                map.insert(cookie, entry);
                self.children = Children::Large(Box::new(map));
            }
            Children::Large(map) => {
                let old = map.insert(cookie, entry);
                debug_assert!(old.is_none(), "cookie {cookie} still in use");
            }
        }
    }

    /// Removes the child filed under `cookie`.
    pub fn remove(&mut self, cookie: u64) {
        let removed = match &mut self.children {
            Children::Small(v) => match v.binary_search_by_key(&cookie, |&(c, _)| c) {
                Ok(at) => {
                    v.remove(at);
                    true
                }
                Err(_) => false,
            },
            Children::Large(map) => map.remove(&cookie).is_some(),
        };
        debug_assert!(removed, "child index lost cookie {cookie}");
    }

    /// Hands out a cookie now for a child filed later with `insert_at`.
    pub fn reserve_cookie(&mut self) -> u64 {
        let cookie = self.next_cookie();
        self.next_cookie_and_dead += 1;
        cookie
    }

    /// Files `d` under a cookie that was handed out before and is free now
    /// (a rename keeps a name's position in the listing).
    pub fn insert_at(&mut self, cookie: u64, d: *const Dentry) {
        debug_assert!((FIRST_CHILD_COOKIE..self.next_cookie()).contains(&cookie));
        self.file(cookie, DentryPtr::of(d));
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        match &self.children {
            Children::Small(v) => v.len(),
            Children::Large(map) => map.len(),
        }
    }

    /// Children with cookie >= `from`, in cookie order.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, *const Dentry)> + '_ {
        self.entries_from(from).map(|(c, e)| (c, e.dentry))
    }

    /// `iter_from` with each child's inode number and file type.
    pub fn entries_from(&self, from: u64) -> impl Iterator<Item = (u64, DentryPtr)> + '_ {
        let from = from.max(FIRST_CHILD_COOKIE);
        let (small, large) = match &self.children {
            Children::Small(v) => {
                let at = v.partition_point(|&(c, _)| c < from);
                (Some(v[at..].iter().copied()), None)
            }
            Children::Large(map) => (None, Some(map.range(from..).map(|(&c, &e)| (c, e)))),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cookies in order and each entry once, whichever representation:
    /// the index against a plain map through growth past `SMALL_MAX`,
    /// removals and refills under kept cookies.
    #[test]
    fn small_and_large_indexes_agree_with_a_map() {
        // Fake pointers: `entries_from` never dereferences them, and
        // `DentryPtr::of` is bypassed through `file`.
        let entry = |i: u64| DentryPtr {
            dentry: (i as usize * 64) as *const Dentry,
            ino: i,
            file_type: 0,
        };
        let mut idx = DirIndex::new();
        let mut want: BTreeMap<u64, DentryPtr> = BTreeMap::new();
        let mut rng = 0x9e37_79b9_u64;
        for step in 0..2000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let keys: Vec<u64> = want.keys().copied().collect();
            if !keys.is_empty() && rng.is_multiple_of(3) {
                let c = keys[(rng / 3) as usize % keys.len()];
                idx.remove(c);
                want.remove(&c);
            } else if !keys.is_empty() && rng % 7 == 1 {
                // A rename keeping a cookie: remove and refill it.
                let c = keys[(rng / 7) as usize % keys.len()];
                idx.remove(c);
                idx.file(c, entry(step));
                want.insert(c, entry(step));
            } else if step < 1000 || rng.is_multiple_of(2) {
                let c = idx.reserve_cookie();
                idx.file(c, entry(step));
                want.insert(c, entry(step));
            }
            assert_eq!(idx.len(), want.len());
            let from = FIRST_CHILD_COOKIE + rng % (idx.next_cookie() + 1);
            let got: Vec<_> = idx.entries_from(from).collect();
            let exp: Vec<_> = want.range(from..).map(|(&c, &e)| (c, e)).collect();
            assert_eq!(got, exp, "step {step}");
        }
        assert!(matches!(idx.children, Children::Large(_)));
    }
}
