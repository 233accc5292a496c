//! Namespace and attribute changes on backend-served instances
//! (passthrough): vfscale checks its own rules (name checks, permissions
//! with the caller's credentials, sticky directories, types), the backend
//! makes the change on the host, and the affected cached names are dropped
//! so that the next lookup asks the host ("write through, then forget") —
//! except a rename, which moves the cached dentry to its new name as
//! tmpfs's does (`..` and the paths of descriptors and cwds follow it),
//! and forgets only when the cache no longer holds what the checks saw.
//!
//! Invariants:
//! - nothing is changed in memory before the backend succeeded, so a host
//!   error leaves the cache as it was (the errno is returned unchanged) —
//!   except that an error saying the host's names differ from the cached
//!   ones (EEXIST, ENOENT, ENOTDIR, EISDIR: the host changed them behind
//!   vfscale within the TTL) drops the names involved, so the next lookup
//!   asks the host;
//! - the checks run on names looked up (and cached, revalidated past the
//!   TTL) through the backend first, so EEXIST/ENOENT/ENOTDIR/EISDIR come
//!   from the host's state;
//! - `forget_name` unhashes under the parent's exclusive directory lock, as
//!   every name removal does; a dentry still in use (an open file, a cwd)
//!   stays allocated for its holder, unreachable by name;
//! - a rename's move takes tmpfs's locks in tmpfs's order (the
//!   superblock's rename lock, both directory locks, the rename seqcount)
//!   and holds references on both directories and the moved entries, so
//!   no put under those locks is a last one.

use super::Process;
use crate::abi::*;
use crate::dcache::dentry::{Dentry, D_MOUNTED, D_REVALIDATE};
use crate::dcache::name::NameKey;
use crate::dcache::walk::{Found, Last, Parent};
use crate::fs::SuperBlock;
use crate::inode::Inode;
use crate::mount::WriteAccess;

/// The instance of `inode` if its changes go to a backend.
pub(super) fn backend_of(inode: &Inode) -> Option<&SuperBlock> {
    // SAFETY: an inode's superblock outlives it.
    let sb = unsafe { &*inode.sb };
    sb.backend_served.then_some(sb)
}

impl Process {
    /// The cached (backend-asked) child `key` of the directory `at` (a
    /// parent walk's): (dentry, inode or null). Caller holds a guard.
    fn backend_child(
        &self,
        at: &Found,
        key: &NameKey<'_>,
    ) -> SysResult<(*const Dentry, *const Inode)> {
        let (dir_d, dir) = (at.path.dentry, at.inode());
        let mut tries = 0;
        loop {
            // A directory entry reclaimed since the walk: as if removed
            // (rare: only unused backend entries are reclaimable).
            let (d, _) = self
                .vfs
                .lookup_slow(at.path.mnt, dir_d, dir, key)?
                .ok_or(Errno::ENOENT)?;
            // SAFETY: the guard keeps the dentry allocated.
            let dr = unsafe { &*d };
            // Past its TTL the entry is revalidated as a walk would; a
            // dropped one is looked up again (a few times at most: under
            // a host storm, the last answer is used and the host's own
            // errno decides).
            tries += 1;
            if tries < 4
                && dr.flags() & D_REVALIDATE != 0
                && !self.vfs.revalidate_dentry(dir_d, dir, dr, key)?
            {
                continue;
            }
            return Ok((d, dr.inode_ptr()));
        }
    }

    /// After a host error in a change of `names` in `dir`: an errno that
    /// says the host's names are not what the cache held drops them (and
    /// refreshes the directory), so the next lookup asks the host.
    fn forget_after_error(&self, e: Errno, names: &[(*const Dentry, &Inode, &NameKey<'_>)]) {
        if matches!(
            e,
            Errno::EEXIST | Errno::ENOENT | Errno::ENOTDIR | Errno::EISDIR
        ) {
            for &(dir_d, dir, key) in names {
                self.vfs.forget_name(dir_d, dir, key);
                if let Some(sb) = backend_of(dir) {
                    let _ = sb.fs.refresh(sb, dir);
                }
            }
        }
    }

    /// mkdir, mknod, symlink, link and O_CREAT on a backend: the name must
    /// be free, then `make(sb, dir, name)` creates it on the backend. The
    /// unit of write access the create held comes back with its success:
    /// O_CREAT hands it on to the file it opens (`open_found`), so no
    /// remount to read-only fits between the create and the open.
    pub(super) fn backend_create<'p>(
        &self,
        parent: &'p Parent<'_>,
        creates_dir: bool,
        before_permission: impl FnOnce() -> SysResult<()>,
        make: impl FnOnce(&SuperBlock, &Inode, &[u8]) -> SysResult<()>,
    ) -> SysResult<WriteAccess<'p>> {
        let Last::Name(name) = parent.last else {
            return Err(Errno::EEXIST);
        };
        let dir = parent.dir.inode();
        let dir_d = parent.dir.path.dentry;
        let key = NameKey::lookup(name)?;
        let (_, inode) = self.backend_child(&parent.dir, &key)?;
        if !inode.is_null() {
            return Err(Errno::EEXIST);
        }
        if parent.trailing_slash && !creates_dir {
            return Err(Errno::ENOENT);
        }
        // As `create_prologue`.
        let write = parent.dir.mount().write_access()?;
        before_permission()?;
        self.may_write_dir(dir)?;
        let sb = backend_of(dir).ok_or(Errno::EINVAL)?;
        if let Err(e) = make(sb, dir, name) {
            // EEXIST: the host has the name although the cache said no.
            self.forget_after_error(e, &[(dir_d, dir, &key)]);
            return Err(e);
        }
        self.vfs.forget_name(dir_d, dir, &key);
        let _ = sb.fs.refresh(sb, dir);
        let isdir = if creates_dir { IN_ISDIR } else { 0 };
        self.vfs.notify_name(dir, name, IN_CREATE | isdir, 0);
        Ok(write)
    }

    /// The dentry of the file `backend_create` just made in `parent` (of
    /// type `ty`), with a reference, and the parent's mount, whose
    /// reference the caller took (bind's socket file on a backend: its
    /// binding pins the cached name, as a bound path does). EADDRINUSE if the host already holds something
    /// else there (replaced in between). Caller holds a guard.
    pub(super) fn backend_made(
        &self,
        parent: &Parent<'_>,
        ty: u32,
    ) -> SysResult<(*const Dentry, *const crate::mount::Mount)> {
        let Last::Name(name) = parent.last else {
            return Err(Errno::EEXIST);
        };
        let key = NameKey::lookup(name)?;
        let (d, inode) = self.backend_child(&parent.dir, &key)?;
        // SAFETY: the guard keeps both allocated.
        if inode.is_null() || unsafe { &*inode }.file_type() != ty {
            return Err(Errno::EADDRINUSE);
        }
        // SAFETY: as above; a reference only if it is still alive.
        if !unsafe { &*d }.refcount.get() {
            return Err(Errno::EADDRINUSE);
        }
        // The mount's reference is the caller's (`mknod`).
        Ok((d, parent.dir.path.mnt))
    }

    /// unlink and rmdir on a backend.
    pub(super) fn backend_unlink(
        &self,
        parent: &Parent<'_>,
        name: &[u8],
        rmdir: bool,
    ) -> SysResult<()> {
        let dir = parent.dir.inode();
        let dir_d = parent.dir.path.dentry;
        let key = NameKey::lookup(name)?;
        let (d, vi) = self.backend_child(&parent.dir, &key)?;
        if vi.is_null() {
            return Err(Errno::ENOENT);
        }
        // SAFETY: the guard keeps the dentry and its inode allocated.
        let (vd, vi) = (unsafe { &*d }, unsafe { &*vi });
        if !rmdir && parent.trailing_slash {
            return Err(if vi.is_dir() {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        self.may_delete(dir, vi)?;
        if rmdir && !vi.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if !rmdir && vi.is_dir() {
            return Err(Errno::EISDIR);
        }
        if vd.flags() & D_MOUNTED != 0 || (rmdir && self.vfs.mounts_beneath(vd)) {
            return Err(Errno::EBUSY);
        }
        let sb = backend_of(dir).ok_or(Errno::EINVAL)?;
        if let Err(e) = sb.fs.unlink(sb, dir, name, vi) {
            self.forget_after_error(e, &[(dir_d, dir, &key)]);
            return Err(e);
        }
        sb.fs.names_moved(sb, &[(vi, (dir, name), None)]);
        self.removed_unless_mounted(vd, vi);
        self.vfs.forget_name(dir_d, dir, &key);
        let _ = sb.fs.refresh(sb, dir);
        if self.vfs.notify_active() {
            // As the tmpfs unlink's (names.rs), but a backend's cached
            // name does not pin its dentry: unused, it is at 0.
            let sole = rmdir || (vi.attr().nlink == 0 && vd.refcount.count_at_rest() <= 0);
            self.notify_unlinked(dir, name, vi, rmdir, sole);
        }
        Ok(())
    }

    /// renameat2 on a backend (both names on one instance, already
    /// checked to be plain names).
    pub(super) fn backend_rename(
        &self,
        op: &Parent<'_>,
        old_name: &[u8],
        np: &Parent<'_>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        let (odir, ndir) = (op.dir.inode(), np.dir.inode());
        let (od, nd) = (op.dir.path.dentry, np.dir.path.dentry);
        let okey = NameKey::lookup(old_name)?;
        let (osrc, oi) = self.backend_child(&op.dir, &okey)?;
        if oi.is_null() {
            return Err(Errno::ENOENT);
        }
        // The new name's length after the old name's existence, as Linux.
        let nkey = NameKey::lookup(new_name)?;
        let (ndst, ni) = self.backend_child(&np.dir, &nkey)?;
        // SAFETY (both): the guard keeps them allocated.
        let oi = unsafe { &*oi };
        if self.rename_checks(op, np, flags, osrc, oi, ndst, unsafe { ni.as_ref() })? {
            return Ok(());
        }
        // A directory replaced by the rename goes as an rmdir would.
        let exchanged = flags & crate::abi::RENAME_EXCHANGE != 0;
        // SAFETY: the guard keeps the victim allocated.
        if !exchanged && !ni.is_null() && self.vfs.mounts_beneath(unsafe { &*ndst }) {
            return Err(Errno::EBUSY);
        }
        let sb = backend_of(odir).ok_or(Errno::EINVAL)?;
        let (uid, gid, _) = self.owner_in(odir, S_IFCHR);
        // SAFETY: the guard keeps the victim allocated.
        let victim = unsafe { ni.as_ref() };
        // Until the cached names moved: the host has the new names first.
        let _renaming = sb.renames.enter();
        if let Err(e) = sb.fs.rename(
            sb,
            odir,
            old_name,
            ndir,
            new_name,
            victim,
            flags,
            (uid, gid),
        ) {
            self.forget_after_error(e, &[(od, odir, &okey), (nd, ndir, &nkey)]);
            return Err(e);
        }
        let mut moves = vec![(oi, (odir, old_name), Some((ndir, new_name)))];
        if let Some(v) = victim {
            moves.push((v, (ndir, new_name), exchanged.then_some((odir, old_name))));
        }
        sb.fs.names_moved(sb, &moves);
        if let (Some(v), false) = (victim, exchanged) {
            // SAFETY: the guard keeps the victim allocated.
            self.removed_unless_mounted(unsafe { &*ndst }, v);
        }
        let names = CachedRename {
            from: (od, odir, &okey),
            to: (nd, ndir, &nkey),
            moved: (osrc, oi),
            target: (ndst, ni),
            exchanged,
        };
        if !self.move_cached_names(sb, &names) {
            self.vfs.forget_name(od, odir, &okey);
            self.vfs.forget_name(nd, ndir, &nkey);
        }
        let _ = sb.fs.refresh(sb, odir);
        if !core::ptr::eq(odir, ndir) {
            let _ = sb.fs.refresh(sb, ndir);
        }
        self.notify_renamed((odir, old_name), (ndir, new_name), oi, victim, exchanged);
        Ok(())
    }
}

/// The cached names of a rename the backend made: each directory (dentry,
/// inode, name), and the dentries and inodes the checks found at the old
/// and the new name (the new one's inode null if it was free).
struct CachedRename<'a, 'k> {
    from: (*const Dentry, &'a Inode, &'a NameKey<'k>),
    to: (*const Dentry, &'a Inode, &'a NameKey<'k>),
    moved: (*const Dentry, &'a Inode),
    target: (*const Dentry, *const Inode),
    exchanged: bool,
}

impl Process {
    /// After the backend renamed: moves the cached dentry to its new name
    /// (an exchange swaps the two), as tmpfs's rename does, so a
    /// descriptor or cwd of a moved directory finds its new parent through
    /// `..` and its path reads the new one; a replaced or negative entry at
    /// the new name is unhashed. False, with nothing changed, if the cache
    /// no longer holds the names as the checks found them (a reclaim, a
    /// revalidation or a host change dropped or replaced one meanwhile, or
    /// the move would put a directory under itself in a cache the host
    /// changed behind): the caller forgets both names instead.
    ///
    /// Locks as tmpfs's rename: the superblock's rename lock for two
    /// directories, both directory locks, the rename seqcount. References
    /// pin both directories and the moved entries, so no put under the
    /// locks is a last one.
    fn move_cached_names(&self, sb: &SuperBlock, n: &CachedRename<'_, '_>) -> bool {
        let ((od, odir, okey), (nd, ndir, nkey)) = (n.from, n.to);
        // A replaced entry is dropped below: with the table's lock held
        // from the check that nothing is mounted on it or beneath it, so
        // no mount is attached on it meanwhile (if one was since the
        // rename's checks, the names are forgotten instead, which keeps
        // it: `forget_name`).
        let replaces = !n.exchanged && !n.target.1.is_null();
        let mounts = replaces.then(|| self.vfs.lock_mounts());
        let _rename_lock = (od != nd).then(|| sb.rename_lock.lock());
        let Ok((oidx, nidx)) = super::names::lock_rename_dirs(od, odir, nd, ndir) else {
            return false;
        };
        let mut pinned: Vec<*const Dentry> = Vec::with_capacity(4);
        let pin = |d: *const Dentry, pinned: &mut Vec<*const Dentry>| {
            // SAFETY: the caller's guard keeps `d` allocated.
            let ok = unsafe { &*d }.refcount.get();
            if ok {
                pinned.push(d);
            }
            ok
        };
        let src = self.vfs.lookup_exact(od, okey);
        let dst = self.vfs.lookup_exact(nd, nkey);
        // SAFETY (both): found under their bucket locks, allocated (guard).
        let holds = |d: *const Dentry, inode: *const Inode| {
            !d.is_null() && core::ptr::eq(unsafe { &*d }.inode_ptr(), inode)
        };
        let as_found = !oidx.is_dead()
            && !nidx.as_ref().is_some_and(|n| n.is_dead())
            && src == n.moved.0
            && holds(src, n.moved.1)
            && (!n.exchanged || (dst == n.target.0 && holds(dst, n.target.1)))
            // A name the checks found free may since have been looked up
            // (and mounted on: the table's lock is only held for a rename
            // that replaces an entry): dropping it would strand the mount.
            // SAFETY: found under its bucket lock, allocated (guard).
            && (n.exchanged || replaces || dst.is_null() || unsafe { &*dst }.inode_ptr().is_null())
            && (od == nd
                || !(src == nd
                    || super::names::is_ancestor(src, nd)
                    || n.exchanged && (dst == od || super::names::is_ancestor(dst, od))))
            && pin(od, &mut pinned)
            && pin(nd, &mut pinned)
            && pin(src, &mut pinned)
            && (dst.is_null() || pin(dst, &mut pinned) || !n.exchanged)
            // SAFETY: pinned, or not the target (then not dropped below).
            && !mounts.as_ref().is_some_and(|list| {
                pinned.last() == Some(&dst)
                    && crate::vfs::VfsInner::mounted_at_or_beneath(list, unsafe { &*dst })
            });
        let mut grow = None;
        if as_found {
            // A replaced or negative entry at the new name (one the
            // shrinker is killing unhashes itself under its bucket lock).
            if !n.exchanged && pinned.last() == Some(&dst) {
                // SAFETY: pinned.
                self.vfs.unhash(unsafe { &*dst });
            }
            let rename_guard = self.vfs.rename_seq_lock.lock();
            self.vfs.rename_seq.write_begin();
            if n.exchanged {
                grow = self.move_dentry(dst, od, nd, okey);
            }
            grow = grow.or(self.move_dentry(src, nd, od, nkey));
            self.vfs.rename_seq.write_end();
            drop(rename_guard);
        }
        drop(nidx);
        drop(oidx);
        drop(_rename_lock);
        // A resize takes bucket locks holding no other lock.
        drop(mounts);
        self.vfs.grow_dcache(grow);
        for d in pinned {
            self.vfs.dput(d);
        }
        as_found
    }

    /// `removed` for the directory `vd` (inode `vi`) unless a mount came on
    /// it or beneath it since the caller's EBUSY check (the host call ran
    /// without the table's lock): then it stays a live mountpoint, as
    /// `forget_name` keeps its entry. Under the table's lock, so a mount
    /// attached later finds it dead (`mounts.rs` `reachable_from_root`).
    /// Marked dead outside that lock, a directory a mount had just come
    /// beneath answered every walk through it ENOENT: the mount was
    /// listed where no walk reached it (session 47).
    fn removed_unless_mounted(&self, vd: &Dentry, vi: &Inode) {
        if vi.dir_index().is_none() {
            return;
        }
        let list = self.vfs.lock_mounts();
        if !crate::vfs::VfsInner::mounted_at_or_beneath(&list, vd) {
            removed(vi);
        }
    }
}

/// A backend's inode whose name vfscale removed (unlink, rmdir, replaced
/// by a rename): a directory takes no new names and lists ENOENT from its
/// open descriptors, as tmpfs's removed directories (Linux's
/// IS_DEADDIR).
fn removed(inode: &Inode) {
    if let Some(index) = inode.dir_index() {
        index.write().mark_dead();
    }
}
