//! Detached mount trees: Linux's anonymous mount namespaces, what
//! open_tree(OPEN_TREE_CLONE) and fsmount return a descriptor to
//! (process/mount_api.rs), until move_mount attaches the tree or the
//! descriptor's last close dissolves it.
//!
//! Invariants:
//! - A detached tree is a set of attached mounts (in the table, so a walk
//!   from the descriptor crosses them) whose namespace id has `ANON_NS`
//!   set; its root is the one without a parent. No process is in such a
//!   namespace, so every check of the caller's namespace (check_mnt)
//!   refuses its mounts, except where Linux 6.18 lets them through:
//!   move_mount and mount_setattr of the root, and a bind or open_tree of
//!   a path in it by a process of the namespace it was copied from
//!   (`usable_by`, check_anonymous_mnt).
//! - Nothing propagates into a detached tree (need_secondary skips it),
//!   and its mounts' counts are never sharded (`attach_mount` shards only
//!   outside one). So dissolving a tree never waits for a grace period
//!   and may run inside an epoch guard.
//! - The descriptor's file (`FMODE_NEED_UNMOUNT`) holds a reference on the
//!   root; its release dissolves the tree if that mount still is a
//!   detached tree's root (dissolve_on_fput). At once — or, when the
//!   releasing thread holds the table lock (a drain run by a put under a
//!   mount call), when that thread lets the lock go (`MountsLocked`'s
//!   drop), with a reference on the root kept meanwhile. `TABLE_HELD`
//!   counts the table locks each thread holds, over every `Vfs`: a thread
//!   under one `Vfs`'s table lock only ever releases that `Vfs`'s files
//!   (a drain frees its own queue), so the unlock that reaches zero is
//!   that `Vfs`'s and finds its pending roots.
//! - A move_mount that attaches the tree takes it out of its namespace:
//!   every mount joins the target's (`adopt`), and its origin entry goes.
//!   `origins` is a leaf lock, changed under the table lock.

use super::propagation::{Links, TreeMount};
use super::{Mount, MountsLocked};
use crate::sync::atomic::{AtomicBool, Ordering::Relaxed};
use crate::sync::lock::Mutex;
use crate::vfs::VfsInner;
use std::cell::Cell;
use std::collections::HashMap;

/// The bit that marks a namespace id as a detached tree's.
pub(crate) const ANON_NS: u64 = 1 << 63;

/// Whether namespace id `id` is a detached tree's.
pub(crate) fn is_anon_ns(id: u64) -> bool {
    id & ANON_NS != 0
}

thread_local! {
    /// Mount table locks this thread holds (`VfsInner::lock_mounts`).
    static TABLE_HELD: Cell<u32> = const { Cell::new(0) };
}

#[derive(Default)]
pub(crate) struct AnonTrees {
    /// Each detached tree's namespace id → the namespace it was copied
    /// from (check_anonymous_mnt). Changed under the table lock.
    origins: Mutex<HashMap<u64, u64>>,
    /// Roots whose descriptor went while its thread held the table lock,
    /// each with a reference, for that thread to dissolve once it lets
    /// the lock go.
    pending: Mutex<Vec<usize>>,
    /// `pending` is not empty. Written under its lock; read without it as
    /// a hint by the thread that pushed (its own store), so Relaxed.
    has_pending: AtomicBool,
}

impl AnonTrees {
    /// The namespace ids of the detached trees (for the checker).
    pub(crate) fn tree_ids(&self) -> Vec<u64> {
        self.origins.lock().keys().copied().collect()
    }
}

impl Mount {
    /// anon_ns_root: the root of a detached tree. Under the table lock.
    pub(crate) fn is_anon_root(&self) -> bool {
        is_anon_ns(self.ns_id()) && self.parent_ptr().is_null()
    }
}

impl VfsInner {
    /// The table lock was taken by this thread (`lock_mounts`).
    pub(super) fn note_table_locked(&self) {
        TABLE_HELD.with(|h| h.set(h.get() + 1));
    }

    /// The table lock this thread held is released: the last one it held
    /// dissolves what was left pending.
    pub(super) fn note_table_unlocked(&self) {
        let held = TABLE_HELD.with(|h| {
            let n = h.get() - 1;
            h.set(n);
            n
        });
        if held == 0 && self.mounts.anon.has_pending.load(Relaxed) {
            self.dissolve_pending();
        }
    }

    #[cold]
    fn dissolve_pending(&self) {
        let roots = {
            let mut pending = self.mounts.anon.pending.lock();
            self.mounts.anon.has_pending.store(false, Relaxed);
            core::mem::take(&mut *pending)
        };
        for root in roots {
            let root = root as *const Mount;
            self.dissolve_anon(root);
            self.mntput(root);
        }
    }

    /// open_detached_copy's attach: `tree` (new mounts, parents first; the
    /// root's mountpoint unused) becomes a detached tree copied from
    /// namespace `origin` (0: from none). Returns its root. Under the
    /// table lock (passes its list).
    pub(crate) fn make_anon_tree(
        &self,
        list: &mut Vec<usize>,
        tree: &[TreeMount],
        origin: u64,
    ) -> *const Mount {
        let id = self.next_namespace_id() | ANON_NS;
        let root = tree[0].mount;
        // SAFETY: the tree's mounts are the caller's new mounts.
        self.set_namespace(unsafe { &*root }, id);
        list.push(root as usize);
        for t in &tree[1..] {
            let parent = tree[t.parent.expect("a submount's parent")].mount;
            self.attach_mount(list, t.mount, parent, t.mountpoint);
        }
        self.mounts.anon.origins.lock().insert(id, origin);
        root
    }

    /// check_anonymous_mnt: `m` is in a detached tree that a process of
    /// namespace `ns` may use (copied from `ns`, or from none). Under the
    /// table lock.
    pub(crate) fn anon_usable_by(&self, m: &Mount, ns: u64) -> bool {
        let id = m.ns_id();
        is_anon_ns(id)
            && matches!(self.mounts.anon.origins.lock().get(&id), Some(&o) if o == 0 || o == ns)
    }

    /// The namespace a copy of `m` records as its origin: `m`'s own, or
    /// the origin of the detached tree `m` is in. Under the table lock.
    pub(crate) fn anon_origin_of(&self, m: &Mount) -> u64 {
        let id = m.ns_id();
        if is_anon_ns(id) {
            self.mounts
                .anon
                .origins
                .lock()
                .get(&id)
                .copied()
                .unwrap_or(0)
        } else {
            id
        }
    }

    /// A detached tree (`order`: its mounts, root first) was attached
    /// under `dest`: every mount joins `dest`'s namespace, with the
    /// sharded count of an attached mount outside a detached tree. Under
    /// the table lock.
    pub(crate) fn adopt_anon_tree(&self, order: &[*const Mount], anon: u64, dest: &Mount) {
        let ns = dest.ns_id();
        for &m in order {
            // SAFETY: attached mounts are live under the table lock.
            let m = unsafe { &*m };
            self.set_namespace(m, ns);
            if !is_anon_ns(ns) {
                m.refcount.make_sharded();
            }
        }
        self.mounts.anon.origins.lock().remove(&anon);
    }

    /// The final put's part for the new mount API's files (out of the
    /// pipe, socket and eventfd release path): an fsopen descriptor gives
    /// back its configuration (mount/config.rs), an open_tree or fsmount
    /// one dissolves its tree if still detached.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_mount_api_file(&self, file: &crate::file::OpenFile) {
        if file.fmode & crate::file::FMODE_MOUNT_CONFIG != 0 {
            // SAFETY: the file's one reference (`Arc::into_raw`), given
            // back once, here (its final put).
            let config = unsafe {
                std::sync::Arc::from_raw(file.private as *const super::config::MountConfig)
            };
            self.release_mount_config(config);
        }
        if file.fmode & crate::file::FMODE_NEED_UNMOUNT != 0 {
            // The file's reference keeps the root for the dissolve.
            self.put_anon_tree(file.mnt);
        }
    }

    /// The release of a descriptor open_tree returned (dissolve_on_fput):
    /// dissolves the tree whose root `root` was, if it still is one. The
    /// caller holds a reference on `root`.
    pub(crate) fn put_anon_tree(&self, root: *const Mount) {
        if TABLE_HELD.with(Cell::get) == 0 {
            return self.dissolve_anon(root);
        }
        self.mntget(root);
        let mut pending = self.mounts.anon.pending.lock();
        pending.push(root as usize);
        self.mounts.anon.has_pending.store(true, Relaxed);
    }

    /// umount_tree of the detached tree whose root `root` is (nothing if it
    /// is not one any more: attached by move_mount, or dissolved). The
    /// caller holds a reference on `root`.
    fn dissolve_anon(&self, root: *const Mount) {
        let mut list = self.lock_mounts();
        // SAFETY: the caller's reference keeps the mount alive.
        let r = unsafe { &*root };
        if !r.is_anon_root() {
            return;
        }
        let id = r.ns_id();
        let order = Links::of(&list).subtree(root);
        self.detach_namespace_tree(&mut list, &order);
        self.mounts.anon.origins.lock().remove(&id);
        drop(list);
        // The root's attachment.
        self.mntput(root);
    }

    /// Detaches a namespace's tree (`order`: its mounts, root first, none
    /// sharded): children first, then the root leaves the table and its
    /// namespace; the root's attachment reference is the caller's to put
    /// once the lock is released. Under the table lock.
    pub(crate) fn detach_namespace_tree(
        &self,
        list: &mut MountsLocked<'_>,
        order: &[*const Mount],
    ) {
        let root = order[0];
        debug_assert!(
            order.iter().all(|&m| {
                // SAFETY: attached mounts are live under the table lock.
                !unsafe { &*m }.refcount.is_sharded()
            }),
            "a sharded mount in a tree being dissolved"
        );
        self.make_private_all(list, order);
        let children_first: Vec<*const Mount> = order[1..].iter().rev().copied().collect();
        self.detach_mounts(list, &children_first);
        list.retain(|&m| m != root as usize);
        // SAFETY: the root is attached until here.
        self.set_namespace(unsafe { &*root }, 0);
    }
}
