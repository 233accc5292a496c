//! Mount namespaces: which tree of mounts a process walks and may change
//! (Linux's struct mnt_namespace, copy_mnt_ns, put_mnt_ns).
//!
//! Invariants:
//! - A namespace is its root mount (no parent) and every attached mount
//!   beneath it. An attached mount's `ns` is its namespace's id, a
//!   detached one's 0; both are written under the mount table's lock with
//!   the attachment (`hook`, `unhook`, `attach_copy`) and read under it,
//!   so Relaxed.
//! - The table keeps a count of each namespace's attached mounts
//!   (`set_namespace`), as fs.mount-max limits each namespace alone.
//! - The table (its lock, hash and seqcount) and propagation are shared by
//!   every namespace, as Linux's namespace_sem and mount_lock are: a
//!   shared mount's peers may live in several namespaces, and what is
//!   mounted on one is copied to the others.
//! - `users` counts the fs contexts in the namespace (process/mod.rs's
//!   FsContext), plus one the VFS keeps on its first namespace. The put
//!   that takes it to zero detaches the whole tree (`dissolve`, put_mnt_ns's
//!   umount_tree without propagation): mounts something still uses (an
//!   open file, a cwd) stay alive, detached, as after a lazy umount.
//! - The root is the one attached mount without a parent. pivot_root
//!   (`VfsInner::pivot`) may replace it, under the table lock, so `root`
//!   is read under that lock; the namespace keeps its root attached until
//!   it is dissolved.

use super::propagation::{CloneKind, Links};
use super::Mount;
use crate::dcache::walk::PathPtr;
use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crate::vfs::VfsInner;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) struct MntNamespace {
    /// Unique within the VFS, never 0 (0 is a detached mount's `ns`).
    pub(crate) id: u64,
    /// Written and read under the table lock (module invariants).
    root: AtomicPtr<Mount>,
    users: AtomicUsize,
}

impl MntNamespace {
    /// A namespace around `root` (attached by the caller) with one user.
    pub(crate) fn new(id: u64, root: *const Mount) -> Arc<MntNamespace> {
        Arc::new(MntNamespace {
            id,
            root: AtomicPtr::new(root as *mut Mount),
            users: AtomicUsize::new(1),
        })
    }

    /// The namespace's root mount: attached, hence live, while the caller
    /// holds the table lock and a use of the namespace.
    pub(crate) fn root(&self) -> *const Mount {
        // Relaxed: written and read under the table lock.
        self.root.load(Ordering::Relaxed)
    }

    /// The root directory of the root mount. Under the table lock, with a
    /// use of the namespace (`root`).
    pub(crate) fn root_path(&self) -> PathPtr {
        let m = self.root();
        // SAFETY: the root is attached, hence live, under the table lock.
        PathPtr {
            mnt: m,
            dentry: unsafe { &*m }.root,
        }
    }

    /// pivot_root's new root. Under the table lock.
    pub(crate) fn set_root(&self, root: *const Mount) {
        // Relaxed: as `root`.
        self.root.store(root as *mut Mount, Ordering::Relaxed)
    }

    /// One more fs context in the namespace.
    pub(crate) fn get(&self) {
        // Relaxed: the caller already holds a use (a context in it), so the
        // count cannot reach zero meanwhile (as Arc's clone).
        self.users.fetch_add(1, Ordering::Relaxed);
    }
}

impl Mount {
    /// The id of the namespace the mount is attached in; 0 when detached.
    /// Under the table lock.
    pub(crate) fn ns_id(&self) -> u64 {
        // Relaxed: written and read under the table lock (module invariants).
        self.ns.load(Ordering::Relaxed)
    }
}

impl VfsInner {
    /// Moves `m` into namespace `id` (0: out of any), keeping each
    /// namespace's count of mounts (fs.mount-max is per namespace). Under
    /// the table lock.
    pub(crate) fn set_namespace(&self, m: &Mount, id: u64) {
        let old = m.ns_id();
        if old == id {
            return;
        }
        let mut counts = self.mounts.ns_mounts.lock();
        if old != 0 {
            let n = counts.get_mut(&old).expect("a namespace's count");
            *n -= 1;
            if *n == 0 {
                counts.remove(&old);
            }
        }
        if id != 0 {
            *counts.entry(id).or_default() += 1;
        }
        // Relaxed: as `ns_id`.
        m.ns.store(id, Ordering::Relaxed)
    }

    /// The mounts attached in namespace `id`. Under the table lock.
    pub(crate) fn namespace_mounts(&self, id: u64) -> usize {
        self.mounts.ns_mounts.lock().get(&id).copied().unwrap_or(0)
    }

    /// The namespace the VFS's root mount is in (the handle API's, and a
    /// new process's).
    pub(crate) fn init_namespace(&self) -> &Arc<MntNamespace> {
        self.mounts
            .init_ns
            .get()
            .expect("set when the VFS is built")
    }

    /// The root of `ns`'s root mount, with `refs` references taken on it
    /// (mount and dentry each) for the caller, who holds a use of `ns`.
    pub(crate) fn namespace_root(&self, ns: &MntNamespace, refs: usize) -> PathPtr {
        let _list = self.lock_mounts();
        let root = ns.root_path();
        for _ in 0..refs {
            self.mntget(root.mnt);
            self.dget(root.dentry);
        }
        root
    }

    /// A new namespace id.
    pub(crate) fn next_namespace_id(&self) -> u64 {
        // Relaxed: a unique number; nothing is published through it.
        self.mounts.next_ns_id.fetch_add(1, Ordering::Relaxed)
    }

    /// copy_mnt_ns: a new namespace holding a copy of every mount of
    /// `from` (unbindable ones too, made private; a shared mount's copy is
    /// its peer, a slave's a slave of the same master), made in the order Linux's
    /// copy_tree walks (depth first, children in the order they were
    /// attached). Returns it with `root` and `cwd` moved onto their
    /// copies when they are in `from` (a location in a detached tree stays
    /// where it is), each with the references a context holds. Caller
    /// holds a guard and references on `root` and `cwd`.
    pub(crate) fn copy_namespace(
        &self,
        from: &MntNamespace,
        root: PathPtr,
        cwd: PathPtr,
    ) -> (Arc<MntNamespace>, PathPtr, PathPtr) {
        let mut list = self.lock_mounts();
        let links = Links::of(&list);
        let mut order = Vec::new();
        let mut stack = vec![from.root()];
        while let Some(m) = stack.pop() {
            order.push(m);
            stack.extend(links.children(m).iter().rev());
        }
        let mut copies: HashMap<*const Mount, *const Mount> = HashMap::new();
        let id = self.next_namespace_id();
        for &m in &order {
            // SAFETY: attached mounts are live under the table lock.
            let mr = unsafe { &*m };
            self.dget(mr.root);
            // As 6.18's clone_mnt: an unbindable original's copy is
            // private (the type bits are not copied; older kernels kept it
            // unbindable).
            let copy = self.clone_mount(m, mr.root, CloneKind::Bind);
            copies.insert(m, copy);
            if m == from.root() {
                // SAFETY: as above.
                self.set_namespace(unsafe { &*copy }, id);
                list.push(copy as usize);
                // SAFETY: as above.
                unsafe { &*copy }.refcount.make_sharded();
            } else {
                let parent = copies[&mr.parent_ptr()];
                self.attach_mount(&mut list, copy, parent, mr.mountpoint_ptr());
            }
        }
        drop(list);
        let ns = MntNamespace::new(id, copies[&from.root()]);
        let moved = |p: PathPtr| {
            let q = PathPtr {
                mnt: copies.get(&p.mnt).copied().unwrap_or(p.mnt),
                dentry: p.dentry,
            };
            self.mntget(q.mnt);
            self.dget(q.dentry);
            q
        };
        (ns, moved(root), moved(cwd))
    }

    /// put_mnt_ns: drops one user of `ns`; the last one dissolves it.
    pub(crate) fn put_namespace(&self, ns: &MntNamespace) {
        // AcqRel: the last put sees every other user's last use of the
        // tree (each decrement releases it; the last one acquires).
        if ns.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.dissolve(ns);
        }
    }

    /// umount_tree of a namespace's whole tree, without propagation (its
    /// copies elsewhere stay): every mount leaves its peer group (its
    /// slaves go to a peer or to its master) and is detached, children
    /// first. Counts are made exact first, with no lock held (one grace
    /// period for all), until a pass under the lock finds none sharded:
    /// propagation from another namespace may have added mounts between
    /// passes.
    pub(crate) fn dissolve(&self, ns: &MntNamespace) {
        loop {
            let sharded: Vec<*const Mount> = {
                let mut list = self.lock_mounts();
                let root = ns.root();
                let order = Links::of(&list).subtree(root);
                let sharded: Vec<*const Mount> = order
                    .iter()
                    .copied()
                    // SAFETY: attached mounts are live under the table lock.
                    .filter(|&m| unsafe { &*m }.refcount.is_sharded())
                    .collect();
                if sharded.is_empty() {
                    self.detach_namespace_tree(&mut list, &order);
                    debug_assert!(
                        list.iter().all(|&m| {
                            // SAFETY: attached mounts are live under the lock.
                            unsafe { &*(m as *const Mount) }.ns_id() != ns.id
                        }),
                        "a mount of a dissolved namespace outside its tree"
                    );
                    drop(list);
                    // The root's attachment.
                    self.mntput(root);
                    return;
                }
                for &m in &sharded {
                    self.mntget(m);
                }
                sharded
            };
            // SAFETY: referenced above.
            let counts: Vec<_> = sharded.iter().map(|&m| &unsafe { &*m }.refcount).collect();
            crate::sync::shardref::ShardedRef::make_exact_all(&counts);
            for m in sharded {
                self.mntput(m);
            }
        }
    }
}
