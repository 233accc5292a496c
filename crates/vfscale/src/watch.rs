//! Name-change notifications, for embedders that cache names somewhere else
//! (the FUSE front end tells the kernel to drop the entries it cached when a
//! name changes through another path: the core API, another mount).
//!
//! The dcache reports every change of a name's meaning in a directory — a
//! name made positive (create, mkdir, mknod, symlink, link, the target of a
//! rename), removed (unlink, rmdir, a rename's source or replaced target) —
//! as (directory's device, directory's inode number, name), after the change
//! is visible and while the directory's lock is still held, so observers
//! see the changes of one directory in order.
//!
//! Attribute and data changes made through the core's write paths — chmod,
//! chown, utimes, truncate, write, fallocate — are reported as
//! (device, inode number, whether data changed) after the change is visible
//! (`InodeObserver`, the same registration): the FUSE front end tells the
//! kernel to drop the attributes and pages it cached. Name changes already
//! say that their directory changed, so directories are not reported again.
//! Extended attributes are not reported (the kernel caches none for FUSE).
//!
//! Invariants:
//! - Observers run on the thread that made the change, inside the
//!   directory's exclusive lock: they must be quick and must not call back
//!   into the namespace (queue the work, as the FUSE front end does).
//! - With no observer registered, a change costs one Relaxed load of
//!   `any` (the create/unlink hot path); the list itself is read under its
//!   read lock only when `any` is set.

use crate::dcache::dentry::Dentry;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use parking_lot::RwLock;
use std::sync::Arc;

/// One change of a name in a directory.
#[derive(Clone, Copy, Debug)]
pub struct NameChange<'a> {
    /// The directory's device (`st_dev`) and inode number (`st_ino`).
    pub dir_dev: u64,
    pub dir_ino: u64,
    pub name: &'a [u8],
}

/// Something that wants to hear about name changes.
pub trait NameObserver: Send + Sync {
    fn name_changed(&self, change: &NameChange<'_>);

    /// An inode's attributes (and, if `change.data`, its contents) changed.
    /// Called on the changing thread with no core lock held; the same rules
    /// as `name_changed` apply (quick, no calls back into the namespace).
    fn inode_changed(&self, _change: &InodeChange) {}
}

/// One change of an inode's attributes or contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InodeChange {
    /// The inode's device (`st_dev`) and inode number (`st_ino`).
    pub dev: u64,
    pub ino: u64,
    /// The contents changed too (write, truncate, fallocate), not only
    /// attributes (chmod, chown, utimes).
    pub data: bool,
}

/// Identifies a registration, to remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObserverId(u64);

#[derive(Default)]
pub(crate) struct Watchers {
    /// Some observer is registered (a hint read on every change).
    any: AtomicBool,
    next_id: AtomicU64,
    list: RwLock<Vec<(ObserverId, Arc<dyn NameObserver>)>>,
}

impl Watchers {
    pub(crate) fn add(&self, o: Arc<dyn NameObserver>) -> ObserverId {
        // Relaxed: ids only need to be distinct.
        let id = ObserverId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut l = self.list.write();
        l.push((id, o));
        // Relaxed: a change that misses the flag happened before the
        // registration returned, which the observer cannot expect to see.
        self.any.store(true, Ordering::Relaxed);
        id
    }

    pub(crate) fn remove(&self, id: ObserverId) -> bool {
        let mut l = self.list.write();
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        // Relaxed: as in `add`.
        self.any.store(!l.is_empty(), Ordering::Relaxed);
        l.len() != before
    }

    /// Whether some observer is registered (Relaxed, as in `add`).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        // Relaxed: see `add`.
        self.any.load(Ordering::Relaxed)
    }

    /// Reports that the name of `d` (in its parent directory, whose lock
    /// the caller holds) changed meaning.
    #[inline]
    pub(crate) fn changed(&self, d: &Dentry) {
        // Relaxed: see `add`.
        if self.any.load(Ordering::Relaxed) {
            self.notify(d.parent_ptr(), &d.name());
        }
    }

    /// Where `d`'s name is now, if anyone listens: for a rename, which
    /// reports the old place after the move (`notify_at`).
    #[inline]
    pub(crate) fn place_of(&self, d: &Dentry) -> Option<(*const Dentry, Vec<u8>)> {
        // Relaxed: see `add`.
        self.any
            .load(Ordering::Relaxed)
            .then(|| (d.parent_ptr(), d.name()))
    }

    /// Reports a change at a place taken by `place_of`.
    pub(crate) fn notify_at(&self, place: Option<(*const Dentry, Vec<u8>)>) {
        if let Some((dir, name)) = place {
            self.notify(dir, &name);
        }
    }

    /// Reports that `inode`'s attributes (and contents, if `data`) changed.
    #[inline]
    pub(crate) fn inode_changed(&self, inode: &Inode, data: bool) {
        // Relaxed: see `add` (the only cost when nobody listens).
        if self.any.load(Ordering::Relaxed) {
            self.notify_inode(inode, data);
        }
    }

    #[cold]
    fn notify_inode(&self, inode: &Inode, data: bool) {
        let change = InodeChange {
            // SAFETY: an inode's superblock outlives it.
            dev: unsafe { &*inode.sb }.dev,
            ino: inode.ino(),
            data,
        };
        for (_, o) in self.list.read().iter() {
            o.inode_changed(&change);
        }
    }

    #[cold]
    fn notify(&self, dir: *const Dentry, name: &[u8]) {
        if dir.is_null() {
            return;
        }
        // SAFETY: the caller keeps `dir` alive; a directory dentry that
        // holds children is positive.
        let inode = unsafe { &*dir }.inode_ptr();
        if inode.is_null() {
            return;
        }
        // SAFETY: a positive dentry references its inode, whose superblock
        // outlives it.
        let (ino, dev) = unsafe { ((*inode).ino(), (*(*inode).sb).dev) };
        let change = NameChange {
            dir_dev: dev,
            dir_ino: ino,
            name,
        };
        for (_, o) in self.list.read().iter() {
            o.name_changed(&change);
        }
    }
}

impl crate::Vfs {
    /// Registers `o` to hear about every name change in this namespace from
    /// now on (see the module comment for what it may do).
    pub fn observe_names(&self, o: Arc<dyn NameObserver>) -> ObserverId {
        self.inner.watchers.add(o)
    }

    /// Removes a registration; false if it was not there.
    pub fn unobserve_names(&self, id: ObserverId) -> bool {
        self.inner.watchers.remove(id)
    }
}
