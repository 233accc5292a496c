//! Hot dentries: a name that several threads keep open at once gets a
//! sharded reference count, so their opens and closes stop writing one
//! shared cache line (the open-close-same workload; Linux's lockref on
//! such a dentry is the seed's contended line).
//!
//! Invariants:
//! - Only a pinned dentry is sharded: a hashed positive dentry of an
//!   instance whose dcache is authoritative (tmpfs), whose name holds one
//!   reference. That reference is the sharded count's base (`ShardedRef`),
//!   so sharded puts never need to detect the last reference.
//! - Whoever removes a name (unlink, rmdir, rename's victim) freezes the
//!   count (`release_name_ref`) before dropping the name's reference: an
//!   unsharded count freezes with one compare-exchange; a sharded one is
//!   folded after a grace period, waited for with no guard and no lock
//!   held. A frozen count never shards again, so once the name is gone
//!   the last put is detected exactly, as for any dentry.
//! - Sharding is decided on open, from a snapshot of the count: the
//!   name's reference plus at least two holders; and for a directory when
//!   a name change in it had to wait for its lock (its children's parent
//!   references are then taken and dropped by several threads). A dentry
//!   becomes hot at most once per name (the shards stay until the name
//!   goes or the instance is torn down: 512 bytes per hot name).

use super::dentry::{Dentry, D_REVALIDATE, D_TYPE_DIR};
use crate::sync::epoch::Guard;
use crate::vfs::VfsInner;

/// The count, at an open, from which a dentry is made hot: the name's
/// reference plus two open holders.
const HOT_AT_COUNT: u32 = 3;

impl VfsInner {
    /// After an open took a reference on `d`: shards the count of a name
    /// that other holders keep open at the same time.
    #[inline]
    pub(crate) fn note_open(&self, d: &Dentry) {
        if d.refcount.count() >= HOT_AT_COUNT && !d.refcount.is_sharded() {
            self.make_hot(d);
        }
    }

    /// After a name change in directory `dir` had to wait for the
    /// directory lock: shards the directory's own count, which every
    /// child's creation and free writes (a dentry holds a reference on its
    /// parent), so threads changing names in one directory stop sharing
    /// that line too. Caller holds the directory lock (so `dir` is live).
    #[inline]
    pub(crate) fn note_dir_contended(&self, dir: *const Dentry) {
        // SAFETY: the caller's directory lock keeps the dentry live.
        let d = unsafe { &*dir };
        if !d.refcount.is_sharded() {
            self.make_hot(d);
        }
    }

    #[cold]
    #[inline(never)]
    fn make_hot(&self, d: &Dentry) {
        // SAFETY: a dentry's superblock outlives it.
        let sb = unsafe { &*d.sb };
        // Pinned only (module doc). A name removed after this check froze
        // the count first, so the compare-exchange in `make_sharded` fails.
        if d.is_hashed()
            && !d.inode_ptr().is_null()
            && d.flags() & D_REVALIDATE == 0
            && sb.fs.dcache_is_authoritative()
            && d.refcount.make_sharded()
        {
            self.stats.hot_dentries.inc();
            if d.flags() & D_TYPE_DIR != 0 {
                self.stats.hot_dirs.inc();
            }
        }
    }

    /// Drops the references that just-removed names held on `names` (the
    /// caller removed them under the directory lock and has released that
    /// lock and every other: threads inside guards may wait for them),
    /// freezing each count first. `guard` is the caller's: a sharded
    /// count must wait for a grace period outside it.
    pub(crate) fn release_name_refs(&self, names: &[*const Dentry], guard: Guard<'_>) {
        // SAFETY (all three loops): the names' references, still ours, keep
        // the dentries alive.
        let sharded = names
            .iter()
            .filter(|&&d| !unsafe { &*d }.refcount.freeze_if_atomic())
            .count();
        if sharded > 0 {
            drop(guard);
            debug_assert!(
                !crate::sync::epoch::is_pinned(),
                "a grace period waited for inside a guard"
            );
            for &d in names {
                if unsafe { &*d }.refcount.freeze() {
                    self.stats.note_cold(unsafe { &*d });
                }
            }
        }
        for &d in names {
            self.dput(d);
        }
    }
}
