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

#[derive(Debug)]
pub struct DirIndex {
    children: BTreeMap<u64, DentryPtr>,
    next_cookie: u64,
    /// Set by rmdir: the directory takes no new names (lookups give ENOENT).
    pub(crate) dead: bool,
}

impl Default for DirIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl DirIndex {
    pub fn new() -> DirIndex {
        DirIndex {
            children: BTreeMap::new(),
            next_cookie: FIRST_CHILD_COOKIE,
            dead: false,
        }
    }

    /// Adds a child and returns its cookie.
    pub fn insert(&mut self, d: *const Dentry) -> u64 {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        self.children.insert(cookie, DentryPtr::of(d));
        cookie
    }

    /// Removes the child filed under `cookie`.
    pub fn remove(&mut self, cookie: u64) {
        let removed = self.children.remove(&cookie);
        debug_assert!(removed.is_some(), "child index lost cookie {cookie}");
    }

    /// Hands out a cookie now for a child filed later with `insert_at`.
    pub fn reserve_cookie(&mut self) -> u64 {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        cookie
    }

    /// Files `d` under a cookie that was handed out before and is free now
    /// (a rename keeps a name's position in the listing).
    pub fn insert_at(&mut self, cookie: u64, d: *const Dentry) {
        debug_assert!((FIRST_CHILD_COOKIE..self.next_cookie).contains(&cookie));
        let old = self.children.insert(cookie, DentryPtr::of(d));
        debug_assert!(old.is_none(), "cookie {cookie} still in use");
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Children with cookie >= `from`, in cookie order.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, *const Dentry)> + '_ {
        self.entries_from(from).map(|(c, e)| (c, e.dentry))
    }

    /// `iter_from` with each child's inode number and file type.
    pub fn entries_from(&self, from: u64) -> impl Iterator<Item = (u64, DentryPtr)> + '_ {
        self.children
            .range(from.max(FIRST_CHILD_COOKIE)..)
            .map(|(&c, &e)| (c, e))
    }
}
