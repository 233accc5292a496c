//! mount and umount2.

use super::Process;
use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::dcache::walk::WALK_FOLLOW;
use crate::dcache::walk::{Found, PathPtr};
use crate::mount::config::{ConfigState, FsType, Value};
use crate::mount::flags as mount_flags;
use crate::mount::Mount;

/// A mount's place (`Process::mount_place`) holding a reference on its
/// dentry from the check under the table lock until the mount is on it
/// (the attachment takes its own). The walk that found it only guards it,
/// and a backend's entries are an unpinned cache: reclaim may free an
/// unused one meanwhile (Linux's lock_mount holds the path too).
pub(super) struct Place<'v> {
    found: Found,
    vfs: &'v crate::vfs::VfsInner,
}

impl core::ops::Deref for Place<'_> {
    type Target = Found;
    fn deref(&self) -> &Found {
        &self.found
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.vfs.dput(self.found.path.dentry);
    }
}

/// Whether a walk from its mount's root `root` still reaches `d`: `d` and
/// every entry between them hashed, and none a directory vfscale removed
/// (a walk through it is ENOENT; `backend_names.rs`
/// `removed_unless_mounted` marks one dead under the table's lock). A
/// mount attached on an entry whose
/// own name is hashed but an ancestor's was dropped (a revalidation or
/// `forget_name` that found no mount beneath it, before this one came)
/// would be listed where no walk reaches it, never unmountable. Under the
/// table's lock a hashed entry stays hashed: whatever drops a name checks
/// for mounts on it or beneath it under that lock (`forget_name`, a
/// revalidation, a rename's replaced entry), so the check holds until the
/// attachment. Caller holds the table's lock and an epoch guard, and a
/// reference on `d`.
fn reachable_from_root(d: &Dentry, root: *const Dentry) -> bool {
    let mut e = d;
    loop {
        if e.is_root() {
            // The instance's root (reached without passing `root` only
            // if a rename moved `d` out from beneath a bind's root since
            // the walk; every entry on the way was hashed).
            return true;
        }
        // SAFETY: a dentry's inode lives as long as the dentry.
        let dead = unsafe { e.inode_ptr().as_ref() }
            .and_then(|i| i.dir_index())
            .is_some_and(|index| index.read().is_dead());
        if !e.is_hashed() || dead {
            return false;
        }
        let parent = e.parent_ptr();
        // `root` itself is not asked about unless it is `d`: inside a bind
        // of a removed directory mounts may still go, on its root not.
        if core::ptr::eq(e, root) || core::ptr::eq(parent, root) {
            return true;
        }
        // SAFETY: `d` is held, and a dentry holds its parent.
        e = unsafe { &*parent };
    }
}

impl Process {
    /// check_mnt: `m` is attached in the caller's namespace. Under the
    /// table lock.
    pub(super) fn in_namespace(&self, m: *const Mount) -> bool {
        // SAFETY: callers pass mounts their walk's guard keeps allocated.
        unsafe { &*m }.ns_id() == self.fs.ns.id
    }

    pub(crate) fn sys_mount(
        &self,
        source: &[u8],
        target: &[u8],
        fstype: &[u8],
        flags: u64,
        data: Option<&[u8]>,
    ) -> SysResult<()> {
        if flags & (MS_REMOUNT | MS_RDONLY) == MS_REMOUNT | MS_RDONLY {
            // Files closed and inodes dropped on any thread must not keep
            // the mount writable (`make_readonly`), as in umount.
            self.vfs.flush_all();
        }
        // copy_mount_string: the source and type are C strings of fewer
        // than PATH_MAX bytes, copied before anything else (a NUL inside
        // one, which a C caller cannot pass, is EINVAL here).
        for s in [source, fstype] {
            if s.contains(&0) || s.len() >= PATH_MAX {
                return Err(Errno::EINVAL);
            }
        }
        let _g = self.vfs.collector.enter();
        // Linux resolves the target before looking at the flags.
        let tgt = self.lookup_at(&self.cred, AT_FDCWD, target, 0, WALK_FOLLOW)?;
        // path_mount: the old callers' magic number is discarded.
        let flags = if flags & MS_MGC_MSK == MS_MGC_VAL {
            flags & !MS_MGC_MSK
        } else {
            flags
        };
        if flags & MS_NOUSER != 0 {
            return Err(Errno::EINVAL);
        }
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let mut list = self.vfs.lock_mounts();
        // check_mnt, for the calls that change the mount at the target:
        // it must be in the caller's namespace, not another's (reached
        // through a descriptor or a cwd from before an unshare) or a tree
        // a lazy umount detached (still reachable from a chroot or cwd
        // inside it). The calls that put a mount there refuse such a
        // target in `mount_target` instead, later in their order.
        let attached = self.in_namespace(tgt.path.mnt);
        // SAFETY: the walk's guard keeps the mount allocated.
        let tmnt = unsafe { &*tgt.path.mnt };
        let at_mount_root = tgt.path.dentry == tmnt.root;
        if flags & MS_REMOUNT != 0 {
            if !attached {
                return Err(Errno::EINVAL);
            }
            // do_reconfigure_mnt (with MS_BIND: the mount's flags) or
            // do_remount (the instance's flags and the options in `data`
            // as fsconfig's reconfiguration takes them, then the mount's
            // flags), at the root of a mount only.
            if !at_mount_root {
                return Err(Errno::EINVAL);
            }
            let bits = mount_flags::requested(flags, Some(tmnt.flags.get()));
            if flags & MS_BIND == 0 {
                let sb = tmnt.sb_arc();
                let mut state = ConfigState::remount(FsType::of_instance(&sb), sb.clone(), flags);
                state.parse_monolithic(data.unwrap_or_default())?;
                self.reconfigure_config(&sb, &mut state)?;
            }
            return reconfigure_mount(tmnt, bits);
        }
        if flags & MS_BIND != 0 {
            return self.bind_mount(&mut list, &tgt, source, flags & MS_REC != 0);
        }
        if flags & (MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE) != 0 {
            // do_change_type: one propagation type at a mount's root, with
            // MS_REC to every mount beneath it too (mount/propagation.rs).
            use crate::mount::propagation::PropagationType as T;
            let t = match flags & !(MS_REC | MS_SILENT) {
                MS_SHARED => T::Shared,
                MS_SLAVE => T::Slave,
                MS_PRIVATE => T::Private,
                MS_UNBINDABLE => T::Unbindable,
                _ => return Err(Errno::EINVAL),
            };
            // may_change_propagation (6.16): the mount must be attached,
            // in any namespace (the caller is root in all of them).
            if tmnt.ns_id() == 0 || !at_mount_root {
                return Err(Errno::EINVAL);
            }
            let mounts = if flags & MS_REC != 0 {
                self.vfs.subtree(&list, tgt.path.mnt)
            } else {
                vec![tgt.path.mnt]
            };
            for m in mounts {
                self.vfs.change_propagation(&list, m, t);
            }
            return Ok(());
        }
        if flags & MS_MOVE != 0 {
            return self.move_mount(&mut list, &tgt, source);
        }
        self.new_instance(&mut list, &tgt, source, fstype, flags, data)
    }

    /// lock_mount: what a new mount on `tgt` goes on — the top of the
    /// stack of mounts already there (a walk ending in "." or "/" does not
    /// cross them) — or ENOENT if that is in a tree a lazy umount detached
    /// (a mount there would hang off a tree no umount can reach) or an
    /// unlinked directory, then (do_add_mount, do_loopback and
    /// do_move_mount's check_mnt) EINVAL if it is another namespace's.
    /// Caller holds the table lock.
    fn mount_target(&self, tgt: &Found) -> SysResult<Place<'_>> {
        let top = self.mount_place(tgt)?;
        if !self.in_namespace(top.path.mnt) {
            return Err(Errno::EINVAL);
        }
        Ok(top)
    }

    /// `mount_target` without the namespace check (pivot_root's
    /// lock_mount of put_old). Caller holds the table lock.
    pub(super) fn mount_place(&self, tgt: &Found) -> SysResult<Place<'_>> {
        let top = self.vfs.follow_mounts(tgt.path);
        // SAFETY: the walk's guard keeps the dentry allocated (and the
        // mounts it crossed, attached under the table lock).
        let (d, m) = unsafe { (&*top.dentry, &*top.mnt) };
        // Dead: reclaimed or dropped since the walk.
        if m.ns_id() == 0 || !d.refcount.get() {
            return Err(Errno::ENOENT);
        }
        let place = Place {
            found: if top == tgt.path {
                *tgt
            } else {
                Found {
                    path: top,
                    seq: d.seq.read_begin(),
                    inode: d.inode_ptr(),
                }
            },
            vfs: &self.vfs,
        };
        if !reachable_from_root(d, m.root) {
            return Err(Errno::ENOENT);
        }
        Ok(place)
    }

    /// What a bind's or a move's `source` names (an empty name is EINVAL,
    /// not ENOENT).
    fn mount_source(&self, source: &[u8]) -> SysResult<Found> {
        if source.is_empty() {
            return Err(Errno::EINVAL);
        }
        self.lookup_at(&self.cred, AT_FDCWD, source, 0, WALK_FOLLOW)
    }

    /// do_loopback's opening: the source, then the target on the top of
    /// its stack (`mount_target`), in that order.
    fn mount_source_and_target(&self, tgt: &Found, source: &[u8]) -> SysResult<(Found, Place<'_>)> {
        let src = self.mount_source(source)?;
        Ok((src, self.mount_target(tgt)?))
    }

    /// MS_MOVE: the mount whose root `source` names moves onto `tgt`
    /// (`do_move_mount`). Caller holds the table lock (passes its list)
    /// and has checked the caller's capability.
    fn move_mount(&self, list: &mut Vec<usize>, tgt: &Found, source: &[u8]) -> SysResult<()> {
        let src = self.mount_source(source)?;
        self.do_move_mount(list, &src, tgt, false)
    }

    /// do_move_mount: the mount whose root `src` is moves, with the mounts
    /// beneath it, onto `tgt`: an attached mount of the caller's
    /// namespace, or a detached tree's root (move_mount; mount/anon.rs),
    /// which then joins the target's namespace. With `beneath`
    /// (MOVE_MOUNT_BENEATH) it goes under the top of the stack of mounts
    /// on `tgt` instead, which moves onto it. Caller holds the table lock
    /// (passes its list) and has checked the caller's capability.
    pub(super) fn do_move_mount(
        &self,
        list: &mut Vec<usize>,
        src: &Found,
        tgt: &Found,
        beneath: bool,
    ) -> SysResult<()> {
        let old = src.path.mnt;
        // SAFETY: the walk's guard keeps the mount allocated.
        let om = unsafe { &*old };
        // The moved thing is named by its root and is of the target's type
        // (EINVAL here, where a bind's graft says ENOTDIR), checked before
        // the target's place is taken (6.18's do_move_mount)...
        if src.path.dentry != om.root || src.inode().is_dir() != tgt.inode().is_dir() {
            return Err(Errno::EINVAL);
        }
        // Kept until the move is done.
        let mut held = None;
        let (place, over) = if beneath {
            self.beneath_place(tgt)?
        } else {
            let top = held.insert(self.mount_place(tgt)?);
            (top.path, core::ptr::null())
        };
        // SAFETY: attached mounts are live under the table lock.
        let dest = unsafe { &*place.mnt };
        if self.in_namespace(old) {
            // ... then an attached mount of the caller's namespace moves
            // within it, from a parent (not its root) that is not shared
            // (its peers would keep copies) ...
            if !self.in_namespace(place.mnt) || om.parent_ptr().is_null() {
                return Err(Errno::EINVAL);
            }
            // SAFETY: as above.
            if unsafe { &*om.parent_ptr() }.is_shared() {
                return Err(Errno::EINVAL);
            }
        } else if !om.is_anon_root()
            || om.ns_id() == dest.ns_id()
            || !(self.in_namespace(place.mnt) || self.vfs.anon_usable_by(dest, self.fs.ns.id))
        {
            // ... or a detached tree's root goes out of its tree, into the
            // caller's namespace or a tree it may use (may_use_mount).
            return Err(Errno::EINVAL);
        }
        if beneath {
            self.can_move_beneath(old, over, place)?;
        }
        // No unbindable mount onto a shared one (it would be copied).
        if dest.is_shared()
            && crate::mount::propagation::any_unbindable(&self.vfs.subtree(list, old))
        {
            return Err(Errno::EINVAL);
        }
        // Not onto itself or beneath itself.
        if mount_is_ancestor(old, place.mnt) {
            return Err(Errno::ELOOP);
        }
        self.vfs.move_tree(list, old, place.mnt, place.dentry)
    }

    /// do_lock_mount's MOVE_MOUNT_BENEATH place: `tgt` names a mount's
    /// root (EINVAL otherwise); the mount on top of that stack (`over`,
    /// returned second) must have a parent (EINVAL: nothing goes beneath
    /// a namespace's root), and its own place, returned first, must be in
    /// a tree and on a name (ENOENT, as `mount_place`). Caller holds the
    /// table lock.
    fn beneath_place(&self, tgt: &Found) -> SysResult<(PathPtr, *const Mount)> {
        if tgt.path.dentry != tgt.mount().root {
            return Err(Errno::EINVAL);
        }
        let top = self.vfs.follow_mounts(tgt.path);
        // SAFETY: attached mounts, their parents and mountpoints are live
        // under the table lock.
        let t = unsafe { &*top.mnt };
        let parent = t.parent_ptr();
        if parent.is_null() {
            return Err(Errno::EINVAL);
        }
        let mountpoint = t.mountpoint_ptr();
        // SAFETY: as above.
        let (p, d) = unsafe { (&*parent, &*mountpoint) };
        if p.ns_id() == 0 || !reachable_from_root(d, p.root) {
            return Err(Errno::ENOENT);
        }
        Ok((
            PathPtr {
                mnt: parent,
                dentry: mountpoint,
            },
            top.mnt,
        ))
    }

    /// can_move_mount_beneath: `old` may go beneath `over`, on `over`'s
    /// place. Every refusal is EINVAL. Nothing may be mounted on `old`'s
    /// root (propagation would make shadow mounts); `over` may not be the
    /// caller's root mount (Linux also refuses a mount whose parent is
    /// the namespace's rootfs: here a namespace's root has no parent,
    /// which `beneath_place` refused); `over` may not be `old` or beneath
    /// it; and the place's mount may not propagate onto `over`'s root, nor,
    /// for an attached `old`, onto `old`'s (the copy would cover what went
    /// beneath). Caller holds the table lock.
    fn can_move_beneath(
        &self,
        old: *const Mount,
        over: *const Mount,
        place: PathPtr,
    ) -> SysResult<()> {
        // SAFETY: attached mounts are live under the table lock.
        let om = unsafe { &*old };
        if !self.vfs.mounts.lookup(old, om.root).is_null()
            || over == self.fs.get().0.mnt
            || mount_is_ancestor(over, old)
            || would_overmount(place, over)
            || (self.in_namespace(old) && would_overmount(place, old))
        {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// do_new_mount: a new instance of `fstype` on `tgt`. Caller holds the
    /// table lock (passes its list) and has checked the target.
    fn new_instance(
        &self,
        list: &mut Vec<usize>,
        tgt: &Found,
        source: &[u8],
        fstype: &[u8],
        flags: u64,
        data: Option<&[u8]>,
    ) -> SysResult<()> {
        // do_new_mount: the type, then `source` as the "source" parameter
        // (the host directory a passthrough mirrors), then the options.
        let fstype = FsType::of(fstype).ok_or(Errno::ENODEV)?;
        let mut state = ConfigState::new_mount(fstype, flags);
        state.parse(b"source", Value::String(source))?;
        state.parse_monolithic(data.unwrap_or_default())?;
        let fs = fstype.filesystem(state.source.as_deref())?;
        let bits = mount_flags::requested(flags, None);
        let tgt = &self.mount_target(tgt)?;
        if !tgt.inode().is_dir() {
            return Err(Errno::ENOTDIR);
        }
        // MS_RDONLY (or "ro" in the options) makes the instance read-only
        // as well as the mount.
        let sb = self.new_instance_of(fs, state.sb_flags, state.root_mode, state.root_owner)?;
        if fstype == FsType::Tmpfs {
            state.apply_tmpfs(&sb);
        }
        let root = sb.root();
        self.vfs.dget(root);
        let m = self.vfs.new_mount(sb, root, bits, source);
        let tree = [crate::mount::propagation::TreeMount {
            mount: m,
            parent: None,
            mountpoint: tgt.path.dentry,
        }];
        self.vfs
            .attach_tree(list, &tree, tgt.path.mnt, tgt.path.dentry)
    }

    /// A new instance of backend `fs` with the instance flags `flags`
    /// (MS_RDONLY, MS_SYNCHRONOUS, MS_MANDLOCK: mount(2)'s or fsconfig's),
    /// its root directory of permission bits `root_mode` and owner
    /// `root_owner`. Its root dentry and inode are charged to the caller's
    /// group (Linux's dentry and inode caches are memcg-accounted): ENOMEM
    /// when no room can be made.
    pub(super) fn new_instance_of(
        &self,
        fs: Box<dyn crate::fs::Filesystem>,
        flags: u64,
        root_mode: u32,
        root_owner: (u32, u32),
    ) -> SysResult<std::sync::Arc<crate::fs::SuperBlock>> {
        self.charge_here();
        let k = crate::reclaim::KIND_BYTES;
        self.vfs.admit((k[0] + k[1]) as u64, Errno::ENOMEM)?;
        let sb = self.vfs.new_superblock(fs, S_IFDIR | root_mode, root_owner);
        // SeqCst: as every change of the bit (mount/write.rs); nobody can
        // reach the instance yet.
        sb.readonly.store(
            flags & MS_RDONLY != 0,
            crate::sync::atomic::Ordering::SeqCst,
        );
        // Relaxed: nobody can reach the instance yet.
        sb.st_flags.store(
            crate::fs::SuperBlock::st_flags_of(flags),
            crate::sync::atomic::Ordering::Relaxed,
        );
        Ok(sb)
    }

    /// reconfigure_super's read-only part: instance `sb` becomes read-only
    /// (`readonly`) or writable, unless `fs_reconfigure` (the
    /// filesystem's own checks, which run after the read-only ones) fails.
    /// Becoming read-only is EBUSY while any of its mounts has a writer or
    /// an unlinked inode is alive (sb_prepare_remount_readonly); every
    /// mount is held meanwhile (mount/write.rs). Caller holds the mount
    /// table's lock.
    pub(super) fn reconfigure_instance(
        &self,
        sb: &crate::fs::SuperBlock,
        readonly: bool,
        fs_reconfigure: impl FnOnce() -> SysResult<()>,
    ) -> SysResult<()> {
        use crate::mount::write::Writers;
        // SeqCst (both stores): before the stores that end the holds,
        // which writers that waited read (mount/write.rs).
        use crate::sync::atomic::Ordering::SeqCst;
        if !readonly || sb.is_readonly() {
            fs_reconfigure()?;
            sb.readonly.store(readonly, SeqCst);
            return Ok(());
        }
        // reconfigure_super: the unused dentries go first, so the orphan
        // count below counts only inodes something uses.
        self.vfs.shrink_dcache_sb(sb);
        let mounts = sb.mounts.lock();
        // SAFETY: a mount stays in `mounts` until it is freed.
        let each = || mounts.iter().map(|&x| unsafe { &*(x as *const Mount) });
        each().for_each(|x| Writers::hold(&x.flags));
        let busy = each().any(|x| x.writers.busy()) || sb.orphans.sum() > 0;
        let r = if busy {
            Err(Errno::EBUSY)
        } else {
            fs_reconfigure()
        };
        if r.is_ok() {
            sb.readonly.store(true, SeqCst);
        }
        each().for_each(|x| Writers::release(&x.flags, x.flags.get()));
        r
    }

    /// do_loopback: binds what `source` names on `tgt`, with the mounts
    /// beneath it when `recursive` (copy_tree). Caller holds the table lock
    /// (passes its list) and has checked the target.
    fn bind_mount(
        &self,
        list: &mut Vec<usize>,
        tgt: &Found,
        source: &[u8],
        recursive: bool,
    ) -> SysResult<()> {
        let (src, tgt) = &self.mount_source_and_target(tgt, source)?;
        self.may_copy(src)?;
        if src.inode().is_dir() != tgt.inode().is_dir() {
            // graft_tree: mismatched types are ENOTDIR either way.
            return Err(Errno::ENOTDIR);
        }
        let tree = self.copy_for_loopback(list, src, recursive, tgt.path.dentry)?;
        self.vfs
            .attach_tree(list, &tree, tgt.path.mnt, tgt.path.dentry)
    }

    /// __do_loopback's checks: an unbindable source, or one outside the
    /// caller's namespace and not in a detached tree it may use
    /// (may_copy_tree), is EINVAL. Under the table lock.
    pub(super) fn may_copy(&self, src: &Found) -> SysResult<()> {
        // SAFETY: the walk's guard keeps the mount allocated.
        let m = unsafe { &*src.path.mnt };
        if m.is_unbindable()
            || !(self.in_namespace(src.path.mnt) || self.vfs.anon_usable_by(m, self.fs.ns.id))
        {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// __do_loopback's copy of what `src` names, to go on `mountpoint`:
    /// its mount (clone_mnt) and, when `recursive`, the mounts beneath it
    /// (copy_tree), parents first. ENOENT if `src`'s dentry went. Under
    /// the table lock, after `may_copy`.
    pub(super) fn copy_for_loopback(
        &self,
        list: &[usize],
        src: &Found,
        recursive: bool,
        mountpoint: *const Dentry,
    ) -> SysResult<Vec<crate::mount::propagation::TreeMount>> {
        if !self.vfs.dget_validated(src.path.dentry, src.seq) {
            return Err(Errno::ENOENT);
        }
        // SAFETY: the walk's guard keeps the mount allocated and the table
        // lock keeps it attached.
        let smnt = unsafe { &*src.path.mnt };
        // copy_tree copies before it grafts: a tree bound beneath itself
        // is copied as it was.
        let mut plan = Vec::new();
        if recursive {
            self.plan_submounts(list, src.path.mnt, src.path.dentry, &mut plan);
        }
        // clone_mnt: each copy starts with its source's flags and joins
        // its propagation (a peer of a shared source, a slave of its
        // master). The top's root reference is the one taken above.
        use crate::mount::propagation::{CloneKind::Bind, TreeMount};
        let mut tree = vec![TreeMount {
            mount: self.vfs.clone_mount(smnt, src.path.dentry, Bind),
            parent: None,
            mountpoint,
        }];
        for (parent, from) in plan {
            // SAFETY: attached mounts are live under the table lock.
            let f = unsafe { &*from };
            self.vfs.dget(f.root);
            tree.push(TreeMount {
                mount: self.vfs.clone_mount(from, f.root, Bind),
                parent: Some(parent),
                mountpoint: f.mountpoint_ptr(),
            });
        }
        Ok(tree)
    }

    /// copy_tree's plan: every mount on `from` whose mountpoint is `top` or
    /// beneath it, and recursively the mounts on those, in an order where a
    /// mount comes after its parent (depth first, children in table order);
    /// each with the index of its parent's copy (0: `from`'s copy; i: the
    /// copy of `plan[i - 1]`). An unbindable mount is left out with
    /// everything on it. One index of the table for the whole walk, and no
    /// recursion (a scan of the table per mount made a recursive copy
    /// quadratic in the table, and a deep tree deepened the stack).
    /// Caller holds the table lock.
    fn plan_submounts(
        &self,
        list: &[usize],
        from: *const Mount,
        top: *const Dentry,
        plan: &mut Vec<(usize, *const Mount)>,
    ) {
        let links = crate::mount::propagation::Links::of(list);
        // Pushes the mounts on `m` at `under` or beneath it, with the index
        // of `m`'s copy, so that they come off in table order.
        let push = |stack: &mut Vec<(*const Mount, usize)>, m, under, copy| {
            let at = stack.len();
            for &child in links.children(m) {
                // SAFETY: attached mounts are live under the table lock.
                let c = unsafe { &*child };
                let mp = c.mountpoint_ptr();
                if (mp == under || super::names::is_ancestor(under, mp)) && !c.is_unbindable() {
                    stack.push((child, copy));
                }
            }
            stack[at..].reverse();
        };
        let mut stack = Vec::new();
        push(&mut stack, from, top, 0);
        while let Some((m, parent_copy)) = stack.pop() {
            plan.push((parent_copy, m));
            let copy = plan.len();
            // SAFETY: as above.
            push(&mut stack, m, unsafe { &*m }.root, copy);
        }
    }

    pub(crate) fn sys_umount2(&self, target: &[u8], flags: i32) -> SysResult<()> {
        if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0
            || (flags & MNT_EXPIRE != 0 && flags & (MNT_FORCE | MNT_DETACH) != 0)
        {
            return Err(Errno::EINVAL);
        }
        // Files closed on any thread must not keep the mount busy.
        self.vfs.flush_all();
        let _batch = self.vfs.batch_scope();
        loop {
            // Mounts this umount would read or detach that are still
            // sharded: made exact below, with no guard and no lock held (a
            // grace period), then the whole decision is taken again.
            let sharded = {
                let _g = self.vfs.collector.enter();
                match self.umount_locked(target, flags)? {
                    None => return Ok(()),
                    Some(sharded) => sharded,
                }
            };
            // SAFETY: `umount_locked` took a reference on each.
            let counts: Vec<_> = sharded.iter().map(|&m| &unsafe { &*m }.refcount).collect();
            crate::sync::shardref::ShardedRef::make_exact_all(&counts);
            for &m in &sharded {
                self.vfs.mntput(m);
            }
        }
    }

    /// One attempt at umount2 under the table lock. `Ok(None)`: done;
    /// `Ok(Some(ms))`: these mounts are still sharded — each now carries a
    /// reference for the caller, who makes them exact and retries.
    fn umount_locked(&self, target: &[u8], flags: i32) -> SysResult<Option<Vec<*const Mount>>> {
        let walk = if flags & UMOUNT_NOFOLLOW != 0 {
            0
        } else {
            WALK_FOLLOW
        };
        let found = self.lookup_at(
            &self.cred,
            AT_FDCWD,
            target,
            if walk == 0 { AT_SYMLINK_NOFOLLOW } else { 0 },
            walk,
        )?;
        // The capability is checked after the lookup, as Linux's can_umount.
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let mut list = self.vfs.lock_mounts();
        // LOOKUP_MOUNTPOINT (Linux's handle_lookup_down): a target the walk
        // did not cross into, such as "." or "/" with something mounted on
        // it, means the mount on top.
        let path = self.vfs.follow_mounts(found.path);
        let m = path.mnt;
        // SAFETY: guarded; attached while we hold the table lock (checked).
        let mr: &Mount = unsafe { &*m };
        if path.dentry != mr.root || !self.in_namespace(m) {
            return Err(Errno::EINVAL);
        }
        // do_umount: the caller's root mount is not unmounted (but with
        // MNT_DETACH, not built: the parent check below refuses the
        // namespace root); its instance is made read-only instead
        // (do_umount_root). MNT_EXPIRE of it is EINVAL.
        if m == self.fs.get().0.mnt {
            if flags & MNT_EXPIRE != 0 {
                return Err(Errno::EINVAL);
            }
            if flags & MNT_DETACH == 0 {
                return self
                    .reconfigure_instance(mr.sb(), true, || Ok(()))
                    .map(|()| None);
            }
        }
        if mr.parent_ptr().is_null() {
            // The namespace root has no parent to fall back to.
            return Err(Errno::EINVAL);
        }
        let lazy = flags & MNT_DETACH != 0;
        let links = crate::mount::propagation::Links::of(&list);
        if !lazy && !links.children(m).is_empty() {
            return Err(Errno::EBUSY);
        }
        // umount_tree's set: the mount, and for a lazy umount everything
        // beneath it; propagation takes copies along (`taken`), after
        // propagate_mount_busy read the counts of `copies` (non-lazy).
        let set = if lazy { links.subtree(m) } else { vec![m] };
        let copies = if lazy {
            Vec::new()
        } else {
            self.vfs.umount_copies(&links, m)
        };
        let (taken, moves) = self.vfs.umount_set(&links, &set);
        let mut read: Vec<*const Mount> =
            set.iter().chain(&copies).chain(&taken).copied().collect();
        read.sort_unstable();
        read.dedup();
        let sharded: Vec<*const Mount> = read
            .iter()
            .copied()
            // SAFETY: attached mounts are live under the table lock.
            .filter(|&x| unsafe { &*x }.refcount.is_sharded())
            .collect();
        if !sharded.is_empty() {
            for &x in &sharded {
                self.vfs.mntget(x);
            }
            return Ok(Some(sharded));
        }
        // Back to the fast mode for what stays attached (unless another
        // umount is switching it: `make_sharded` never waits, so this is
        // safe inside our guard).
        let reshard = || {
            for &x in read.iter() {
                // SAFETY: the caller's guard keeps every mount in `read`
                // allocated, the ones detached here too.
                let xr = unsafe { &*x };
                if xr.ns_id() != 0 && !crate::mount::anon::is_anon_ns(xr.ns_id()) {
                    let _ = xr.refcount.make_sharded();
                }
            }
        };
        // Busy: anything but the attachment's own reference (exact now)
        // and, on a copy propagation would take, the one of the mount
        // covering it (which moves down in its place).
        let busy = |x: &*const Mount| {
            let children = links.children(*x).len() as i64;
            // SAFETY: attached mounts are live under the table lock.
            unsafe { &**x }.refcount.count_at_rest() > 1 + children
        };
        if !lazy && (busy(&m) || copies.iter().any(busy)) {
            reshard();
            return Err(Errno::EBUSY);
        }
        // A mount covering a taken copy takes its place first, so no walk
        // finds the place empty; then the taken mounts go, children before
        // their parents.
        for (over, parent, mountpoint) in moves {
            self.vfs
                .move_mount(&list, over, parent, mountpoint, core::ptr::null());
        }
        let mut pending: Vec<*const Mount> = set.into_iter().chain(taken).collect();
        self.vfs.make_private_all(&list, &pending);
        let depth = |mut x: *const Mount| {
            let mut d = 0usize;
            while !x.is_null() {
                // SAFETY: attached mounts and their parents are live
                // under the table lock.
                x = unsafe { &*x }.parent_ptr();
                d += 1;
            }
            d
        };
        pending.sort_by_cached_key(|&x| core::cmp::Reverse(depth(x)));
        self.vfs.detach_mounts(&mut list, &pending);
        reshard();
        Ok(None)
    }
}

/// The mount's part of a remount (change_mount_ro_state, then
/// set_mount_attributes): `bits` become `m`'s word; becoming read-only is
/// EBUSY while `m` has writers — unless its instance is read-only already,
/// which leaves none. Caller holds the mount table's lock.
fn reconfigure_mount(m: &Mount, bits: u32) -> SysResult<()> {
    use crate::mount::write::Writers;
    let ro = mount_flags::MNT_READONLY;
    if bits & ro == 0 || m.flags.get() & ro != 0 {
        m.flags.set(bits);
        Ok(())
    } else if m.sb().is_readonly() {
        Writers::release(&m.flags, bits);
        Ok(())
    } else {
        m.writers.make_readonly(&m.flags, bits)
    }
}

/// mount_is_ancestor: `ancestor` is `m` or one of its parents. Under the
/// table lock.
fn mount_is_ancestor(ancestor: *const Mount, mut m: *const Mount) -> bool {
    while !m.is_null() {
        if m == ancestor {
            return true;
        }
        // SAFETY: attached mounts and their parents are live under the
        // table lock.
        m = unsafe { &*m }.parent_ptr();
    }
    false
}

/// propagation_would_overmount: a mount on `place` would propagate onto
/// `to`'s root — `place`'s mount is shared, `to`'s root is `place`'s
/// dentry, and `to` or a master up its chain is a peer of it. Under the
/// table lock.
fn would_overmount(place: PathPtr, to: *const Mount) -> bool {
    // SAFETY: attached mounts and their masters are live under the table
    // lock.
    let (from, t) = unsafe { (&*place.mnt, &*to) };
    if !from.is_shared() || t.root != place.dentry {
        return false;
    }
    let mut m = to;
    while !m.is_null() {
        // SAFETY: as above.
        let mm = unsafe { &*m };
        if mm.group() == from.group() {
            return true;
        }
        m = mm.master();
    }
    false
}
