//! The attribute updates a name change owes: its directory's size, mtime
//! and ctime, and for an unlink the unlinked inode's nlink and ctime.
//!
//! A create or unlink of a non-directory in a directory nobody observes
//! applies them *after* dropping the directory lock (session 6): the
//! directory's attribute line is then written outside the critical
//! section, in parallel with the next holder's, instead of being one more
//! line every holder must pull from the previous one (create-unlink in one
//! directory at 2 threads, docs/PERFORMANCE.md). Everything else applies
//! them under the lock, as before.
//!
//! Invariants:
//! - a stamp is applied exactly once: when it is dropped (or `apply`d), so
//!   an early return cannot lose it; the caller chooses the moment by
//!   dropping it before or after the directory lock;
//! - every update is a read-modify-write inside the inode's attribute
//!   seqlock (`Inode::update_attr`), so stamps applied out of the order of
//!   their name changes still add up (size, nlink) and the clock is read
//!   inside the section, so a directory's mtime/ctime never go back;
//! - only changes that leave nlink of the directory alone are deferred
//!   (a directory child's create or removal changes the parent's link
//!   count, which mkdir's EMLINK check reads under the lock), and only
//!   when no name observer is registered (observers are told inside the
//!   lock; one that then reads the directory's attributes, as the FUSE
//!   invalidator makes the kernel do, must see them updated);
//! - the unlinked inode is kept alive by its name's reference, which the
//!   caller drops (`release_name_refs`) only after the stamp is applied.
//!
//! What a concurrent observer can see between the lock's release and the
//! stamp: the new name (or its absence) with the directory's old size and
//! times, and an unlinked file whose nlink still counts the removed name.
//! Linux shows the first too (stat takes no directory lock, and
//! shmem_unlink drops the count before d_delete); the second resolves the
//! same way a link racing the unlink would (the link's own check and
//! increment are inside the same seqlock).

use crate::inode::{now, Inode};

/// See the module comment.
pub(crate) struct NameStamp<'a> {
    dir: &'a Inode,
    /// Directory entries added (+1) or removed (-1).
    entries: i64,
    /// Change of the directory's link count (a subdirectory made or removed).
    dir_links: i32,
    /// An unlinked non-directory whose link count drops by one.
    victim: Option<&'a Inode>,
}

impl<'a> NameStamp<'a> {
    pub(crate) fn new(dir: &'a Inode, entries: i64, dir_links: i32) -> NameStamp<'a> {
        NameStamp {
            dir,
            entries,
            dir_links,
            victim: None,
        }
    }

    /// Also drops one link of `victim` (a non-directory losing a name).
    pub(crate) fn with_victim(mut self, victim: &'a Inode) -> NameStamp<'a> {
        self.victim = Some(victim);
        self
    }

    /// Whether this stamp may wait until the directory lock is dropped
    /// (module invariants).
    pub(crate) fn may_defer(&self, vfs: &crate::vfs::VfsInner) -> bool {
        self.dir_links == 0 && !vfs.watchers.any()
    }

    /// Applies the updates now (the same as dropping the stamp).
    pub(crate) fn apply(self) {}
}

impl Drop for NameStamp<'_> {
    #[inline]
    fn drop(&mut self) {
        let (entries, links) = (self.entries, self.dir_links);
        // The clock is read inside the section: sections on one directory
        // are ordered, so its times never go back.
        let t = self.dir.update_attr(|a| {
            if links != 0 {
                let n = a.get().nlink;
                a.set_nlink(n.saturating_add_signed(links));
            }
            a.add_dir_entries(entries);
            let t = now();
            a.set_mtime(t);
            a.set_ctime(t);
            t
        });
        if let Some(vi) = self.victim {
            // Read and decrement inside the attribute seqlock: a link or
            // unlink of the same inode in another directory holds another
            // directory's lock, not ours (Linux holds the inode lock here).
            let was = vi.update_attr(|a| {
                let n = a.get().nlink;
                a.set_nlink(n.saturating_sub(1));
                a.set_ctime(t);
                n
            });
            if was > 1 {
                // Extra links hold inode reservations; the last one is
                // returned when the inode is freed.
                // SAFETY: an inode's superblock outlives it.
                unsafe { &*vi.sb }.release_inode();
            }
        }
    }
}
