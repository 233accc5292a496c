//! Mounts and the mount table.
//!
//! Invariants:
//! - The table maps (parent mount, mountpoint dentry) → child mount in a
//!   lock-free-read map; a mountpoint dentry carries `D_MOUNTED` while any
//!   mount sits on it. Changes happen under `lock` inside a `seq` write
//!   section, so a path walk that crossed a mount or went up through one
//!   validates `seq` at its end.
//! - A mount's refcount counts open files, cwd/root references, child
//!   mounts and 1 for being attached; the mount is freed (through the epoch
//!   collector) when it is detached and the count reaches zero, and only then
//!   drops its superblock.
//! - While attached outside a detached tree (anon.rs), the count is
//!   sharded per thread (`ShardedRef`): opens and closes on different
//!   cores write different lines. The attachment's
//!   reference is the base that keeps it above zero; a mount is made exact
//!   (`ShardedRef::make_exact`, a grace period, no lock held) before umount
//!   reads its count or detaches it, so a detached mount's last put is seen.
//! - An attached mount holds references on its parent mount, its mountpoint
//!   dentry and its root dentry.
//! - Its flags word (`flags.rs`) changes only under `lock`; its writers
//!   (`write.rs`) say whether it may become read-only.
//! - A mount is in its superblock's `mounts` from `new_mount` to
//!   `free_mount`, attached or not: an instance made read-only holds them
//!   all (`write.rs`); the last one to leave tears the tree down.

pub(crate) mod anon;
pub(crate) mod config;
pub mod flags;
pub(crate) mod namespace;
pub(crate) mod propagation;
pub mod write;

use crate::dcache::dentry::{Dentry, D_MOUNTED};
use crate::dcache::walk::PathPtr;
use crate::fs::SuperBlock;
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use crate::sync::lock::Mutex;
use crate::sync::seqcount::SeqCount;
use crate::sync::shardref::ShardedRef;
use crate::vfs::VfsInner;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub struct Mount {
    pub(crate) parent: AtomicPtr<Mount>,
    pub(crate) mountpoint: AtomicPtr<Dentry>,
    pub(crate) root: *const Dentry,
    /// From `Arc::into_raw`: the mount owns one strong count.
    sb: *const SuperBlock,
    pub(crate) refcount: ShardedRef,
    pub(crate) id: u64,
    /// nosuid, noexec, atime policy, ... (`flags.rs`).
    pub flags: flags::MountFlags,
    /// Units of write access held through this mount (`write.rs`).
    pub(crate) writers: write::Writers,
    /// Peers, master, unbindable (`propagation.rs`; under the table lock).
    pub(crate) propagation: propagation::Propagation,
    /// The namespace it is attached in, 0 when detached (`namespace.rs`).
    ns: AtomicU64,
    /// mount(2)'s source, as given (mountinfo's; a copy keeps its
    /// original's).
    pub(crate) source: Box<[u8]>,
}

// SAFETY: the raw pointers are references the mount owns (see invariants);
// all mutable state is atomic.
unsafe impl Send for Mount {}
// SAFETY: as above.
unsafe impl Sync for Mount {}

impl Mount {
    /// A unique id (as /proc/self/mountinfo's).
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn sb(&self) -> &SuperBlock {
        // SAFETY: the mount owns a strong count until it is freed.
        unsafe { &*self.sb }
    }

    /// statfs(2) of this mount: its superblock's figures and flags with
    /// the mount's own flags (Linux's flags_by_sb | flags_by_mnt).
    pub fn statfs(&self) -> crate::abi::Statfs {
        let mut st = self.sb().statfs();
        st.f_flags = (st.f_flags & !flags::ST_MOUNT_BITS)
            | crate::abi::ST_VALID
            | flags::statfs_bits(self.flags.get());
        st
    }

    /// __mnt_is_readonly: the mount or its instance is read-only. A
    /// snapshot, for the checks Linux makes without write access
    /// (access(W_OK), the errno order of open(O_TRUNC)).
    pub fn is_readonly(&self) -> bool {
        self.flags.get() & flags::MNT_READONLY != 0 || self.sb().is_readonly()
    }

    /// mnt_want_write: a unit of write access for one change, given back
    /// when the returned value drops; EROFS on a read-only mount.
    #[inline]
    pub(crate) fn write_access(&self) -> crate::abi::SysResult<WriteAccess<'_>> {
        self.want_write()?;
        Ok(WriteAccess(self))
    }

    /// A unit of write access kept by the caller (a file open for
    /// writing, `FMODE_WRITER`) until `drop_write`.
    #[inline]
    pub(crate) fn want_write(&self) -> crate::abi::SysResult<()> {
        self.writers.want(&self.flags, &self.sb().readonly)
    }

    /// Gives back a unit `want_write` granted.
    #[inline]
    pub(crate) fn drop_write(&self) {
        self.writers.drop_one()
    }

    /// A new strong handle on the superblock (for bind mounts).
    pub(crate) fn sb_arc(&self) -> Arc<SuperBlock> {
        // SAFETY: the mount owns a strong count, so the pointer is a live
        // Arc allocation; we add one for the caller.
        unsafe {
            Arc::increment_strong_count(self.sb);
            Arc::from_raw(self.sb)
        }
    }

    pub(crate) fn parent_ptr(&self) -> *const Mount {
        // Acquire: pairs with the release store in attach/detach.
        self.parent.load(Ordering::Acquire)
    }

    pub(crate) fn mountpoint_ptr(&self) -> *const Dentry {
        // Acquire: pairs with the release store in attach.
        self.mountpoint.load(Ordering::Acquire)
    }
}

/// One unit of write access to a mount, for the duration of a change.
pub(crate) struct WriteAccess<'m>(&'m Mount);

impl<'m> WriteAccess<'m> {
    /// Takes over a unit the caller holds on `m` (`keep` handed it on).
    pub(crate) fn adopt(m: &'m Mount) -> WriteAccess<'m> {
        WriteAccess(m)
    }

    /// Hands the unit on (to a file opened for writing, `FMODE_WRITER`,
    /// or to `adopt`) instead of giving it back.
    pub(crate) fn keep(self) {
        core::mem::forget(self);
    }
}

impl Drop for WriteAccess<'_> {
    fn drop(&mut self) {
        self.0.drop_write();
    }
}

pub struct MountTable {
    pub(crate) seq: SeqCount,
    /// Serializes mount and umount; holds every attached mount. Taken
    /// through [`VfsInner::lock_mounts`], which knows which threads hold it.
    lock: Mutex<Vec<usize>>,
    hash: papaya::HashMap<(usize, usize), usize>,
    next_id: AtomicU64,
    next_ns_id: AtomicU64,
    /// Each namespace's count of attached mounts (`set_namespace`); a leaf
    /// lock, taken under `lock`.
    pub(crate) ns_mounts: Mutex<HashMap<u64, usize>>,
    /// The first namespace (the root mount's), set once the VFS is built.
    pub(crate) init_ns: std::sync::OnceLock<Arc<namespace::MntNamespace>>,
    /// Detached trees (anon.rs): each anonymous namespace's origin, and
    /// the trees whose last file went while its thread held the lock.
    pub(crate) anon: anon::AnonTrees,
}

impl Default for MountTable {
    fn default() -> Self {
        MountTable {
            seq: SeqCount::new(),
            lock: Mutex::new(Vec::new()),
            hash: papaya::HashMap::new(),
            next_id: AtomicU64::new(1),
            next_ns_id: AtomicU64::new(1),
            ns_mounts: Mutex::new(HashMap::new()),
            init_ns: std::sync::OnceLock::new(),
            anon: anon::AnonTrees::default(),
        }
    }
}

/// The mount table's lock, held (Linux's namespace_sem and mount_lock
/// for writers): the list of attached mounts. Its drop releases the lock
/// and then, on a thread that holds no other, dissolves the detached
/// trees whose last descriptor this thread closed meanwhile (anon.rs).
pub(crate) struct MountsLocked<'a> {
    vfs: &'a VfsInner,
    guard: Option<crate::sync::lock::MutexGuard<'a, Vec<usize>>>,
}

impl core::ops::Deref for MountsLocked<'_> {
    type Target = Vec<usize>;
    fn deref(&self) -> &Vec<usize> {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl core::ops::DerefMut for MountsLocked<'_> {
    fn deref_mut(&mut self) -> &mut Vec<usize> {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl Drop for MountsLocked<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.vfs.note_table_unlocked();
    }
}

impl VfsInner {
    /// Takes the mount table's lock.
    pub(crate) fn lock_mounts(&self) -> MountsLocked<'_> {
        self.mounts_locked(self.mounts.lock.lock())
    }

    /// The mount table's lock if it is free now: for a caller that may
    /// hold inner locks (the table's is the outermost), which must not
    /// wait for it.
    pub(crate) fn try_lock_mounts(&self) -> Option<MountsLocked<'_>> {
        Some(self.mounts_locked(self.mounts.lock.try_lock()?))
    }

    fn mounts_locked<'a>(
        &'a self,
        guard: crate::sync::lock::MutexGuard<'a, Vec<usize>>,
    ) -> MountsLocked<'a> {
        self.note_table_locked();
        MountsLocked {
            vfs: self,
            guard: Some(guard),
        }
    }
}

impl MountTable {
    /// The mount on (mnt, dentry), or null. Lock-free.
    pub(crate) fn lookup(&self, mnt: *const Mount, dentry: *const Dentry) -> *const Mount {
        self.hash
            .pin()
            .get(&(mnt as usize, dentry as usize))
            .map_or(core::ptr::null(), |&m| m as *const Mount)
    }
}

impl VfsInner {
    /// A new, unattached mount of `root` (a dentry of `sb`, referenced by the
    /// caller and handed over) with refcount 1 (the attachment's), the
    /// per-mount flags `flags` (`flags.rs`) and mount(2)'s `source`.
    pub(crate) fn new_mount(
        &self,
        sb: Arc<SuperBlock>,
        root: *const Dentry,
        flags: u32,
        source: &[u8],
    ) -> *const Mount {
        self.stats.mounts.inc();
        let m = Box::into_raw(Box::new(Mount {
            parent: AtomicPtr::new(core::ptr::null_mut()),
            mountpoint: AtomicPtr::new(core::ptr::null_mut()),
            root,
            sb: Arc::into_raw(sb),
            refcount: ShardedRef::new(1),
            // Relaxed: a unique number; nothing is published through it.
            id: self.mounts.next_id.fetch_add(1, Ordering::Relaxed),
            flags: flags::MountFlags::new(flags),
            writers: write::Writers::new(),
            propagation: propagation::Propagation::new(),
            ns: AtomicU64::new(0),
            source: source.into(),
        }));
        // SAFETY: just made; the mount owns a strong count of `sb`.
        unsafe { &*m }.sb().mounts.lock().insert(m as usize);
        m
    }

    /// Attaches `child` on (parent, mountpoint); takes the references the
    /// attachment holds. Caller holds the table lock (passes its list).
    pub(crate) fn attach_mount(
        &self,
        list: &mut Vec<usize>,
        child: *const Mount,
        parent: *const Mount,
        mountpoint: *const Dentry,
    ) {
        self.place(list, child, parent, mountpoint, false);
        list.push(child as usize);
        // SAFETY: the caller keeps the child alive.
        let c = unsafe { &*child };
        // The attachment's reference is the sharded count's base (but in
        // a detached tree, whose dissolve must not wait: anon.rs).
        if !anon::is_anon_ns(c.ns_id()) {
            c.refcount.make_sharded();
        }
    }

    /// Detaches `mounts` (children before their parents) from the tree;
    /// each stays alive while referenced. Caller holds the table lock and
    /// has made them private (`make_private_all`). One write section of
    /// `seq` and one pass over the table for the whole set: which
    /// mountpoints stay flagged comes from a count of the mounts on each
    /// dentry, and the list is filtered once (a detach at a time scanned
    /// the table twice per mount: 25 s for a namespace of 131,073 mounts).
    pub(crate) fn detach_mounts(&self, list: &mut Vec<usize>, mounts: &[*const Mount]) {
        if mounts.is_empty() {
            return;
        }
        let mut on_dentry: HashMap<*const Dentry, usize> = HashMap::new();
        for &m in list.iter() {
            // SAFETY: attached mounts are live under the table lock.
            let mp = unsafe { &*(m as *const Mount) }.mountpoint_ptr();
            if !mp.is_null() {
                *on_dentry.entry(mp).or_default() += 1;
            }
        }
        let mut puts = Vec::with_capacity(mounts.len());
        self.mounts.seq.write_begin();
        for &child in mounts {
            // SAFETY: attached mounts are live under the table lock.
            let c = unsafe { &*child };
            debug_assert!(!c.refcount.is_sharded(), "detach of a sharded mount");
            debug_assert!(
                !c.is_shared() && c.master().is_null(),
                "detach of a mount in propagation"
            );
            let (parent, mp) = self.unhook_counted(child, |mp| {
                let n = on_dentry
                    .get_mut(&mp)
                    .expect("an attached mount's mountpoint");
                *n -= 1;
                *n > 0
            });
            // Release: pairs with the Acquire in `parent_ptr`/`mountpoint_ptr`.
            c.parent.store(core::ptr::null_mut(), Ordering::Release);
            c.mountpoint.store(core::ptr::null_mut(), Ordering::Release);
            puts.push((parent, mp, child));
        }
        self.mounts.seq.write_end();
        let gone: HashSet<usize> = mounts.iter().map(|&m| m as usize).collect();
        list.retain(|m| !gone.contains(m));
        for (parent, mp, child) in puts {
            self.dput(mp);
            self.mntput(parent);
            self.mntput(child);
        }
    }

    /// Attaches `child` on (parent, mountpoint) beneath `above`, the mount
    /// there now, which moves onto `top`'s root (`top`: the topmost mount
    /// stacked on `child`'s root, or `child`), in one write section of
    /// `seq`, so no walk finds the place empty. `child` takes over the
    /// references `above` held on the place. Caller holds the table lock
    /// (passes its list).
    pub(crate) fn attach_beneath(
        &self,
        list: &mut Vec<usize>,
        child: *const Mount,
        parent: *const Mount,
        mountpoint: *const Dentry,
        above: *const Mount,
        top: *const Mount,
    ) {
        // SAFETY: the caller keeps `top` alive (a mount of the tree it
        // attaches).
        let top_root = unsafe { &*top }.root;
        self.mntget(top);
        self.dget(top_root);
        self.mounts.seq.write_begin();
        self.hook(child, parent, mountpoint);
        self.hook(above, top, top_root);
        self.mounts.seq.write_end();
        list.push(child as usize);
        // SAFETY: the caller keeps the child alive.
        unsafe { &*child }.refcount.make_sharded();
    }

    /// MS_MOVE's attach_recursive_mnt: the attached `child` (with the
    /// mounts beneath it, which stay its children) leaves its place for
    /// (parent, mountpoint), in one write section of `seq`, so a walk that
    /// crossed it or went up through it retries. The attachment's
    /// references move with it; the mount stays attached (and sharded)
    /// throughout. A detached tree's root (anon.rs) has no place to leave.
    /// Caller holds the table lock and has checked that `parent` is not
    /// `child` or beneath it.
    ///
    /// `above` (null for none) is the mount on (parent, mountpoint) now:
    /// MOVE_MOUNT_BENEATH's place, as 6.18's attach_recursive_mnt tucks
    /// it. It moves onto the topmost mount stacked on `child`'s root (or
    /// `child`) in the same write section, so no walk finds the place
    /// empty or `above` gone; the caller has checked that `above` is not
    /// `child` or beneath it.
    pub(crate) fn move_mount(
        &self,
        list: &[usize],
        child: *const Mount,
        parent: *const Mount,
        mountpoint: *const Dentry,
        above: *const Mount,
    ) {
        // SAFETY: attached mounts are live under the table lock.
        let moving = !unsafe { &*child }.parent_ptr().is_null();
        if above.is_null() {
            if let Some((old_parent, old_mp)) = self.place(list, child, parent, mountpoint, moving)
            {
                self.dput(old_mp);
                self.mntput(old_parent);
            }
            return;
        }
        let mut top = child;
        loop {
            // SAFETY: as above.
            let next = self.mounts.lookup(top, unsafe { &*top }.root);
            if next.is_null() {
                break;
            }
            top = next;
        }
        // SAFETY: as above.
        let top_root = unsafe { &*top }.root;
        // The references of `child`'s new place and of `above`'s.
        self.mntget(parent);
        self.dget(mountpoint);
        self.mntget(top);
        self.dget(top_root);
        self.mounts.seq.write_begin();
        let old = moving.then(|| self.unhook(list, child));
        self.hook(child, parent, mountpoint);
        self.hook(above, top, top_root);
        self.mounts.seq.write_end();
        if let Some((old_parent, old_mp)) = old {
            self.dput(old_mp);
            self.mntput(old_parent);
        }
        // `above`'s former place.
        self.dput(mountpoint);
        self.mntput(parent);
    }

    /// pivot_root's change of the tree, in one write section of `seq`, so
    /// no walk sees a loop or a mount off the tree: `new` leaves its place
    /// and takes `root`'s (its parent and mountpoint, with the references
    /// `root`'s attachment held there; or, `root` being `ns`'s root, that
    /// role), and `root` goes onto `old`. Nothing propagates. Caller holds
    /// the table lock and has made pivot_root's checks
    /// (process/pivot_root.rs): `old` is `new` or beneath it, `new` beneath
    /// `root`, all three in `ns`.
    pub(crate) fn pivot(
        &self,
        list: &[usize],
        ns: &namespace::MntNamespace,
        new: *const Mount,
        root: *const Mount,
        old: PathPtr,
    ) {
        self.mntget(old.mnt);
        self.dget(old.dentry);
        // SAFETY: attached mounts are live under the table lock.
        let (n, r) = unsafe { (&*new, &*root) };
        let ns_id = r.ns_id();
        self.mounts.seq.write_begin();
        let (ex_parent, ex_mountpoint) = self.unhook(list, new);
        if r.parent_ptr().is_null() {
            debug_assert_eq!(root, ns.root(), "a parentless mount in a namespace");
            self.set_namespace(n, ns_id);
            // Release: pairs with the Acquire in `parent_ptr`/`mountpoint_ptr`.
            n.parent.store(core::ptr::null_mut(), Ordering::Release);
            n.mountpoint.store(core::ptr::null_mut(), Ordering::Release);
            ns.set_root(new);
        } else {
            let (parent, mountpoint) = self.unhook(list, root);
            self.hook(new, parent, mountpoint);
        }
        // After `new` is back in the namespace: `old` may be on it.
        self.hook(root, old.mnt, old.dentry);
        self.mounts.seq.write_end();
        self.dput(ex_mountpoint);
        self.mntput(ex_parent);
    }

    /// Takes the references an attachment holds on (parent, mountpoint)
    /// and hooks `child` there in one write section of `seq`, first
    /// unhooking it from its place (`moving`), whose parent and mountpoint
    /// it returns for the caller to put. Under the table lock.
    fn place(
        &self,
        list: &[usize],
        child: *const Mount,
        parent: *const Mount,
        mountpoint: *const Dentry,
        moving: bool,
    ) -> Option<(*const Mount, *const Dentry)> {
        self.mntget(parent);
        self.dget(mountpoint);
        self.mounts.seq.write_begin();
        let old = moving.then(|| self.unhook(list, child));
        self.hook(child, parent, mountpoint);
        self.mounts.seq.write_end();
        old
    }

    /// Puts `child` on (parent, mountpoint): its pointers, the table's
    /// entry and the mountpoint's flag. Inside a `seq` write section, under
    /// the table lock.
    fn hook(&self, child: *const Mount, parent: *const Mount, mountpoint: *const Dentry) {
        // SAFETY: the caller keeps all three alive.
        let (c, p, mp) = unsafe { (&*child, &*parent, &*mountpoint) };
        // A tree's inner mounts are hooked before its root: `attach_copy`
        // sets them all once the root is in (namespace.rs).
        self.set_namespace(c, p.ns_id());
        // Release: pairs with the Acquire in `parent_ptr`/`mountpoint_ptr`.
        c.parent.store(parent as *mut Mount, Ordering::Release);
        c.mountpoint
            .store(mountpoint as *mut Dentry, Ordering::Release);
        self.mounts
            .hash
            .pin()
            .insert((parent as usize, mountpoint as usize), child as usize);
        mp.set_flag(D_MOUNTED);
    }

    /// Takes the attached `child` off its place: the table's entry (unless
    /// another mount took the place over: a mount covering an unmounted
    /// copy moves down first, `umount_set`), and the mountpoint's flag
    /// unless another mount in `list` sits on the same dentry (through
    /// another mount of its filesystem: a bind, or the one that took over).
    /// Returns its parent and mountpoint, whose references the caller
    /// drops after the write section. Inside a `seq` write section, under
    /// the table lock.
    fn unhook(&self, list: &[usize], child: *const Mount) -> (*const Mount, *const Dentry) {
        self.unhook_counted(child, |mp| {
            list.iter().any(|&m| {
                m != child as usize && {
                    // SAFETY: attached mounts are live.
                    let o = unsafe { &*(m as *const Mount) };
                    o.mountpoint_ptr() == mp
                }
            })
        })
    }

    /// `unhook`, told by `still_mounted` whether another attached mount
    /// sits on the mountpoint.
    fn unhook_counted(
        &self,
        child: *const Mount,
        still_mounted: impl FnOnce(*const Dentry) -> bool,
    ) -> (*const Mount, *const Dentry) {
        // SAFETY: attached mounts are live; the caller holds the table lock.
        let c = unsafe { &*child };
        let parent = c.parent_ptr();
        let mp = c.mountpoint_ptr();
        self.set_namespace(c, 0);
        // Only writers change the table, all under its lock: the test and
        // the removal see the same entry.
        let _ = self
            .mounts
            .hash
            .pin()
            .remove_if(&(parent as usize, mp as usize), |_, &m| m == child as usize);
        if !still_mounted(mp) {
            // SAFETY: the attachment holds a reference on the mountpoint.
            unsafe { &*mp }.clear_flag(D_MOUNTED);
        }
        (parent, mp)
    }

    pub(crate) fn mntget(&self, m: *const Mount) {
        let _g = self.collector.enter();
        // SAFETY: the caller holds a reference or the table lock.
        let ok = unsafe { &*m }.refcount.get_guarded();
        debug_assert!(ok, "mntget of a dead mount");
    }

    /// Takes a reference on a mount found lock-free; fails if it is dying.
    pub(crate) fn mntget_rcu(&self, m: *const Mount) -> bool {
        // SAFETY: the caller holds an epoch guard.
        unsafe { &*m }.refcount.get_guarded()
    }

    /// Drops a mount reference; the last one frees a detached mount and
    /// releases its root dentry and superblock.
    pub(crate) fn mntput(&self, m: *const Mount) {
        // SAFETY: the caller owned a reference.
        let mr = unsafe { &*m };
        let last = {
            let _g = self.collector.enter();
            mr.refcount.put_guarded()
        };
        if !(last && mr.refcount.try_kill()) {
            return;
        }
        if self.defer.active() {
            return self.defer_put(crate::defer::Deferred::Mount(m));
        }
        self.free_mount(m);
    }

    /// Frees a killed, detached mount: releases its root dentry and its
    /// superblock (tearing the tree down if it was the last mount).
    pub(crate) fn free_mount(&self, m: *const Mount) {
        // SAFETY: the caller won the kill and owns the mount.
        let mr = unsafe { &*m };
        self.dput(mr.root);
        // SAFETY: we won the kill, so this runs once; the pointer came from
        // Arc::into_raw and its count is the mount's own.
        let sb = unsafe { Arc::from_raw(mr.sb) };
        let last = {
            let mut mounts = sb.mounts.lock();
            mounts.remove(&(m as usize));
            mounts.is_empty()
        };
        if last {
            self.kill_superblock(&sb);
        }
        // The superblock struct itself may still be read by walkers holding
        // guards: free it through the collector.
        // SAFETY: boxed here, reclaimed once by `reclaim::boxed`.
        unsafe { self.collector.retire_box(Box::into_raw(Box::new(sb))) };
        self.stats.mounts.dec();
        // SAFETY: detached and dead: unreachable for new walkers.
        unsafe { self.collector.retire_box(m as *mut Mount) };
    }
}
