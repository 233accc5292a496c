//! Fs contexts (Linux's fs_struct): root, cwd and umask, shared by
//! `clone_thread` siblings, and the registry of every process's context
//! that pivot_root walks (chroot_fs_refs).
//!
//! Invariants:
//! - A context owns one dentry and one mount reference for each of root
//!   and cwd; readers copy the pointers under its seqcount, writers swap
//!   them under its mutex and put the old references afterwards.
//! - `users` counts the processes using the context; the one that takes it
//!   to zero leaves the registry, then reads root and cwd under the mutex
//!   and puts them. pivot_root's swap of another process's root or cwd
//!   (`chroot_fs_refs`) happens under the mutex only while `users` is not
//!   zero, so each reference is put exactly once: by the last user, who
//!   reads after the swap, or by no one else, the swap seeing no user and
//!   changing nothing (loom: `fs_context_last_put_vs_pivot_swap`).
//! - The registry (`FsContexts`) holds every process's context from its
//!   creation until its last user leaves; the handle API's per-call views
//!   (handles.rs) are not in it. It is sharded by the context's address,
//!   so processes forking and exiting at once rarely write one line; its
//!   shard locks are leaves: nothing else is taken under one, and only
//!   one is held at a time.

use crate::dcache::walk::PathPtr;
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use crate::sync::seqcount::SeqCount;
use crate::vfs::VfsInner;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// Root, cwd and umask (Linux's fs_struct), shareable between threads,
/// and the mount namespace they are in (which Linux keeps beside it, in
/// nsproxy: a context never changes namespace, unshare and setns give the
/// process a new context).
pub(crate) struct FsContext {
    /// The processes using the context (fs_struct's `users`): the one that
    /// brings it to zero puts root, cwd and its use of `ns`. A view
    /// (handles.rs) borrows and is not counted.
    users: AtomicUsize,
    pub(crate) ns: Arc<crate::mount::namespace::MntNamespace>,
    pub(crate) lock: Mutex<()>,
    seq: SeqCount,
    root_mnt: AtomicPtr<crate::mount::Mount>,
    root_dentry: AtomicPtr<crate::dcache::dentry::Dentry>,
    cwd_mnt: AtomicPtr<crate::mount::Mount>,
    cwd_dentry: AtomicPtr<crate::dcache::dentry::Dentry>,
    pub(crate) umask: AtomicU32,
}

impl FsContext {
    /// A process's context of one user, holding the caller's references
    /// on `root` and `cwd` and a use of `ns`, in `vfs`'s registry.
    pub(crate) fn new(
        vfs: &VfsInner,
        root: PathPtr,
        cwd: PathPtr,
        umask: u32,
        ns: Arc<crate::mount::namespace::MntNamespace>,
    ) -> Arc<FsContext> {
        let fs = Arc::new(Self::view(root, cwd, umask, ns));
        let at = Arc::as_ptr(&fs) as usize;
        vfs.fs_contexts
            .shard(at)
            .lock()
            .insert(at, Arc::downgrade(&fs));
        fs
    }

    /// A context outside the registry, for a call of the handle API
    /// (borrowing `root` and `cwd`; never put).
    pub(crate) fn view(
        root: PathPtr,
        cwd: PathPtr,
        umask: u32,
        ns: Arc<crate::mount::namespace::MntNamespace>,
    ) -> FsContext {
        FsContext {
            users: AtomicUsize::new(1),
            ns,
            lock: Mutex::new(()),
            seq: SeqCount::new(),
            root_mnt: AtomicPtr::new(root.mnt as *mut _),
            root_dentry: AtomicPtr::new(root.dentry as *mut _),
            cwd_mnt: AtomicPtr::new(cwd.mnt as *mut _),
            cwd_dentry: AtomicPtr::new(cwd.dentry as *mut _),
            umask: AtomicU32::new(umask),
        }
    }

    /// One more process using the context (a `clone_thread` sibling).
    pub(crate) fn share(&self) {
        // Relaxed: the caller is a user, so the count cannot reach zero
        // meanwhile (as Arc's clone).
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// A user leaves; the last one puts root, cwd and its use of the
    /// namespace (put_fs_struct, then put_mnt_ns).
    pub(crate) fn put(&self, vfs: &VfsInner) {
        // AcqRel: the last user's puts follow every other user's last use
        // (each decrement releases it; the last one acquires them).
        if self.users.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let at = self as *const FsContext as usize;
        vfs.fs_contexts.shard(at).lock().remove(&at);
        // Under the mutex: after any swap a pivot_root made while we were
        // still a user (module invariants).
        let (root, cwd) = {
            let _l = self.lock.lock();
            self.get()
        };
        for p in [root, cwd] {
            vfs.dput(p.dentry);
            vfs.mntput(p.mnt);
        }
        vfs.put_namespace(&self.ns);
    }

    /// The context's users (1: this process alone).
    pub(crate) fn user_count(&self) -> usize {
        // Acquire: pairs with the release half of `put`'s decrement, so a
        // sibling that left is seen gone.
        self.users.load(Ordering::Acquire)
    }

    /// (root, cwd), consistent with each other.
    pub(crate) fn get(&self) -> (PathPtr, PathPtr) {
        loop {
            let s = self.seq.read_begin();
            // Relaxed: ordered by the seqcount; the pointees are kept
            // allocated by the caller's guard.
            let r = (
                PathPtr {
                    mnt: self.root_mnt.load(Ordering::Relaxed),
                    dentry: self.root_dentry.load(Ordering::Relaxed),
                },
                PathPtr {
                    mnt: self.cwd_mnt.load(Ordering::Relaxed),
                    dentry: self.cwd_dentry.load(Ordering::Relaxed),
                },
            );
            if !self.seq.read_retry(s) {
                return r;
            }
        }
    }

    /// The dentry a walk of a path starts from: the root for an absolute
    /// path, else the cwd. Without its mount, so without the seqcount: for
    /// the fast walk of callers that need only the inode it reaches (the
    /// stat family), which never leaves the start's mount.
    #[inline(always)]
    pub(crate) fn walk_from(&self, absolute: bool) -> *const crate::dcache::dentry::Dentry {
        let d = if absolute {
            &self.root_dentry
        } else {
            &self.cwd_dentry
        };
        // Acquire: pairs with the AcqRel swap in `set`, so the dentry's
        // contents are visible; the caller's guard keeps it allocated.
        d.load(Ordering::Acquire)
    }

    /// Replaces root or cwd with `new` (whose references the caller hands
    /// over) and returns the old one (whose references the caller puts).
    pub(crate) fn set(&self, which_root: bool, new: PathPtr) -> PathPtr {
        let _l = self.lock.lock();
        self.swap(which_root, new)
    }

    /// `set`'s swap, under the mutex.
    fn swap(&self, which_root: bool, new: PathPtr) -> PathPtr {
        let (m, d) = if which_root {
            (&self.root_mnt, &self.root_dentry)
        } else {
            (&self.cwd_mnt, &self.cwd_dentry)
        };
        self.seq.write_begin();
        let old = PathPtr {
            mnt: m.swap(new.mnt as *mut _, Ordering::Relaxed),
            // AcqRel: publishes the new dentry to `walk_from`, which reads
            // it without the seqcount.
            dentry: d.swap(new.dentry as *mut _, Ordering::AcqRel),
        };
        self.seq.write_end();
        old
    }
}

/// Shards of the registry.
const SHARDS: usize = 16;

/// One shard: contexts by address.
type Shard = Mutex<HashMap<usize, Weak<FsContext>>>;

/// Every process's fs context, by address (module invariants).
#[derive(Default)]
pub(crate) struct FsContexts([CachePadded<Shard>; SHARDS]);

impl FsContexts {
    /// The shard of the context at address `at`.
    fn shard(&self, at: usize) -> &Shard {
        // Contexts are allocated at a stride: a multiplicative hash
        // spreads consecutive ones over the shards.
        let i = (at as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SHARDS.trailing_zeros());
        &self.0[i as usize]
    }

    /// Every registered context, by address (one shard locked at a time).
    fn entries(&self) -> Vec<(usize, Weak<FsContext>)> {
        self.0
            .iter()
            .flat_map(|shard| {
                let map = shard.lock();
                map.iter()
                    .map(|(&at, w)| (at, w.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every registered context that is still allocated.
    fn all(&self) -> Vec<Arc<FsContext>> {
        self.entries()
            .into_iter()
            .filter_map(|(_, w)| w.upgrade())
            .collect()
    }

    /// How many contexts are registered.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(|shard| shard.lock().len()).sum()
    }

    /// Checks that every registered context is alive and has a user
    /// (`Vfs::check_invariants`).
    pub(crate) fn check(&self) -> Result<(), String> {
        for (at, weak) in self.entries() {
            let fs = weak
                .upgrade()
                .ok_or_else(|| format!("fs context {at:#x} freed while registered"))?;
            // Acquire: as `user_count`.
            if fs.users.load(Ordering::Acquire) == 0 {
                return Err(format!("fs context {at:#x} registered without a user"));
            }
        }
        Ok(())
    }
}

impl VfsInner {
    /// chroot_fs_refs: every process whose root or cwd is `old` gets `new`
    /// instead (pivot_root's last step). Caller holds references on both
    /// and no lock.
    pub(crate) fn chroot_fs_refs(&self, old: PathPtr, new: PathPtr) {
        let contexts = self.fs_contexts.all();
        let mut puts = Vec::new();
        for fs in contexts {
            let _l = fs.lock.lock();
            // Acquire: pairs with `put`'s decrement; a context whose last
            // user left is that user's to put (module invariants).
            if fs.users.load(Ordering::Acquire) == 0 {
                continue;
            }
            let (root, cwd) = fs.get();
            for (which_root, at) in [(true, root), (false, cwd)] {
                if at == old {
                    self.mntget(new.mnt);
                    self.dget(new.dentry);
                    puts.push(fs.swap(which_root, new));
                }
            }
        }
        for p in puts {
            self.dput(p.dentry);
            self.mntput(p.mnt);
        }
    }
}
