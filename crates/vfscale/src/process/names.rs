//! Name operations: mkdirat, mknodat, symlinkat, linkat, unlinkat,
//! renameat2, readlinkat.
//!
//! Every change to a directory's names happens with that directory's lock
//! held exclusively; cross-directory renames first take the superblock's
//! rename lock, then the two directory locks ancestor-first (else by
//! address), then the global rename seqcount's write section.

use super::stamp::NameStamp;
use super::Process;
use crate::abi::*;
use crate::cred::perm::{new_inode_owner, sticky_may_delete, MAY_WRITE};
use crate::dcache::dentry::{Dentry, D_LINKABLE, D_MOUNTED};
use crate::dcache::hash::{GrowFrom, LockedBucket};
use crate::dcache::name::NameKey;
use crate::dcache::walk::{Last, Parent, WALK_FOLLOW};
use crate::dir::index::DirIndex;
use crate::inode::acl::InheritedAcls;
use crate::inode::flags::{inherited_flags, MODE_APPEND, MODE_PROTECTED};
use crate::inode::{now, Inode, InodeBody};
use crate::mount::Mount;
use crate::sync::atomic::Ordering;
use crate::sync::lock::{RwLock, RwLockWriteGuard};
use std::sync::Arc;

/// Free inodes an instance must keep for a create to allocate its inode
/// before taking the directory lock (`Process::prealloc_inode`).
const PREALLOC_SLACK: i64 = 4096;

/// An inode (and, when its directory was not dying, an unhashed dentry)
/// allocated for a create that has not named them yet: put (and so freed,
/// reservation, charges and parent reference returned) unless `take`n.
pub(crate) struct Prealloc<'v> {
    vfs: &'v crate::vfs::VfsInner,
    inode: *const Inode,
    /// Null if none was made.
    dentry: *const Dentry,
}

impl Prealloc<'_> {
    /// The inode and dentry, whose references the caller now owns.
    fn take(mut self) -> (*const Inode, *const Dentry) {
        (
            core::mem::replace(&mut self.inode, core::ptr::null()),
            core::mem::replace(&mut self.dentry, core::ptr::null()),
        )
    }
}

impl Drop for Prealloc<'_> {
    fn drop(&mut self) {
        if !self.dentry.is_null() {
            self.vfs.dput(self.dentry);
        }
        if !self.inode.is_null() {
            self.vfs.iput(self.inode);
        }
    }
}

impl Process {
    /// Creates a node named `key` in the locked directory `dir` (dentry
    /// `dir_d`) and returns its dentry, pinned by the namespace reference.
    /// `mode` carries the bits of the inherited `acls` (`new_mode_in`),
    /// which are stored before the name is published.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create_locked<'a>(
        &self,
        index: &mut RwLockWriteGuard<'_, DirIndex>,
        dir_d: *const Dentry,
        dir: &'a Inode,
        key: &NameKey<'_>,
        neg: *const Dentry,
        (mode, acls): (u32, InheritedAcls),
        uid: u32,
        gid: u32,
        body: InodeBody,
    ) -> SysResult<(*const Dentry, NameStamp<'a>)> {
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*dir.sb };
        let is_dir = s_isdir(mode);
        if is_dir && dir.attr().nlink >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        // The inode and (unless a negative one is reused) the dentry are
        // charged to our group: make room first.
        let bytes = (crate::reclaim::KIND_BYTES[0] + crate::reclaim::KIND_BYTES[1]) as u64;
        self.vfs.admit(bytes, Errno::ENOMEM)?;
        sb.reserve_inode()?;
        let ino = sb.ino_alloc.alloc();
        let inode = self.vfs.alloc_inode(sb, ino, mode, uid, gid, body);
        acls.attach(sb, ino);
        let d = self.bind_name(dir_d, key, neg, inode, core::ptr::null());
        Ok((d, self.index_child(index, dir, d, is_dir)))
    }

    /// `create_locked` for an inode allocated before the directory lock
    /// (`prealloc_inode`): gives it its owner and mode, then names it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn create_locked_prealloc<'a>(
        &self,
        index: &mut RwLockWriteGuard<'_, DirIndex>,
        dir_d: *const Dentry,
        dir: &'a Inode,
        key: &NameKey<'_>,
        neg: *const Dentry,
        inode: Prealloc<'_>,
        ((mode, acls), uid, gid): ((u32, InheritedAcls), u32, u32),
    ) -> (*const Dentry, NameStamp<'a>) {
        let (inode, fresh) = inode.take();
        // SAFETY: ours alone until `bind_name` publishes it.
        let i = unsafe { &*inode };
        i.init_owner(mode, uid, gid);
        // SAFETY: an inode's superblock outlives it.
        acls.attach(unsafe { &*i.sb }, i.ino());
        let d = self.bind_name(dir_d, key, neg, inode, fresh);
        (d, self.index_child(index, dir, d, s_isdir(mode)))
    }

    /// An inode of type `file_type` and a dentry for `key` in `dir_d`
    /// (unhashed, negative) for a create in an instance of `sb`, allocated
    /// before the directory lock so the critical section only names them
    /// (the allocations, charges and inode-number batch are some 500
    /// instructions, callgrind on createbench). `None` when the create had
    /// better do it under the lock as usual: a memory group has a limit, or
    /// the instance is within `PREALLOC_SLACK` inodes of its limit (a
    /// reserved inode that then goes unused, say for EEXIST, must not make
    /// another create fail with ENOSPC, and the errno order stays the
    /// kernel's). Owner and mode are set under the lock
    /// (`create_locked_prealloc`).
    #[inline(always)]
    pub(crate) fn prealloc_inode(
        &self,
        sb: &crate::fs::SuperBlock,
        dir_d: *const Dentry,
        key: &NameKey<'_>,
        file_type: u32,
        body: InodeBody,
    ) -> Option<Prealloc<'_>> {
        if self.vfs.reclaim.groups.any_limit() || !sb.reserve_inode_if_far(PREALLOC_SLACK) {
            return None;
        }
        let ino = sb.ino_alloc.alloc();
        let inode = self.vfs.alloc_inode(sb, ino, file_type, 0, 0, body);
        let dentry = self
            .vfs
            .new_unhashed_dentry(sb, dir_d, key)
            .unwrap_or(core::ptr::null());
        Some(Prealloc {
            vfs: &self.vfs,
            inode,
            dentry,
        })
    }

    /// Binds `key` in `dir_d` to `inode` (whose reference the caller hands
    /// over): instantiates a cached negative dentry or inserts a new one.
    /// Caller holds the directory lock exclusively and has checked the name
    /// is free.
    #[inline(always)]
    fn bind_name(
        &self,
        dir_d: *const Dentry,
        key: &NameKey<'_>,
        neg: *const Dentry,
        inode: *const Inode,
        prepared: *const Dentry,
    ) -> *const Dentry {
        // SAFETY (whole function): the directory lock keeps `dir_d` live;
        // `neg` was found under the bucket lock with the directory locked
        // and the caller's guard keeps it allocated.
        let sb = unsafe { &*(*dir_d).sb };
        if !neg.is_null() && unsafe { &*neg }.refcount.get() {
            // The reference we just took becomes the namespace pin; a
            // dentry prepared before the lock goes unused.
            self.vfs.instantiate(unsafe { &*neg }, inode);
            if !prepared.is_null() {
                self.vfs.dput(prepared);
            }
            return neg;
        }
        // The name is free, and with the directory locked exclusively no
        // other dentry for it can appear (misses insert under the shared
        // lock): no need to scan the chain again. A `neg` that could not be
        // revived is being killed by the shrinker, which unhashes it while
        // holding the bucket lock `insert_new_dentry` waits for.
        if prepared.is_null() {
            self.vfs.insert_new_dentry(sb, dir_d, key, inode, 1)
        } else {
            self.vfs.link_prepared_dentry(prepared, dir_d, key, inode)
        }
    }

    /// Files a new positive child in the index; the directory's attribute
    /// update is the returned stamp's (applied where the caller drops it).
    fn index_child<'a>(
        &self,
        index: &mut DirIndex,
        dir: &'a Inode,
        d: *const Dentry,
        is_dir: bool,
    ) -> NameStamp<'a> {
        let cookie = index.insert(d);
        // Relaxed: the cookie is read under the directory lock.
        unsafe { &*d }.cookie.store(cookie, Ordering::Relaxed);
        NameStamp::new(dir, 1, i32::from(is_dir))
    }

    /// do_renameat2's and vfs_rename's checks, in their order, once both
    /// names are looked up (tmpfs and backends alike): `src`/`si` the old
    /// name's dentry and inode, `dst` the new name's dentry (null if none is
    /// cached; negative allowed) and `di` its inode. Ok(true): a rename onto
    /// another name of the same inode, which changes nothing.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rename_checks(
        &self,
        op: &Parent<'_>,
        np: &Parent<'_>,
        flags: u32,
        src: *const Dentry,
        si: &Inode,
        dst: *const Dentry,
        di: Option<&Inode>,
    ) -> SysResult<bool> {
        let (od, nd) = (op.dir.path.dentry, np.dir.path.dentry);
        let (odir, ndir) = (op.dir.inode(), np.dir.inode());
        let exchange = flags & RENAME_EXCHANGE != 0;
        // do_renameat2's checks, in its order.
        if flags & RENAME_NOREPLACE != 0 && di.is_some() {
            return Err(Errno::EEXIST);
        }
        if exchange {
            let Some(di) = di else {
                return Err(Errno::ENOENT);
            };
            if !di.is_dir() && np.trailing_slash {
                return Err(Errno::ENOTDIR);
            }
        }
        // Unless the source is a directory, trailing slashes are ENOTDIR.
        if !si.is_dir() && (op.trailing_slash || (!exchange && np.trailing_slash)) {
            return Err(Errno::ENOTDIR);
        }
        // The source is the new directory or above it (lock_rename's trap).
        if nd == src || is_ancestor(src, nd) {
            return Err(Errno::EINVAL);
        }
        // The target is the old directory or above it.
        if !dst.is_null() && (od == dst || is_ancestor(dst, od)) {
            return Err(if exchange {
                Errno::EINVAL
            } else {
                Errno::ENOTEMPTY
            });
        }
        // vfs_rename: renaming onto another name of the same inode is a no-op.
        if di.is_some_and(|di| core::ptr::eq(si, di)) {
            return Ok(true);
        }
        // may_delete on the source, then may_create or may_delete on the
        // target (permission, sticky bit, then the types).
        self.may_delete(odir, si)?;
        match di {
            None => self.may_write_dir(ndir)?,
            Some(di) => {
                self.may_delete(ndir, di)?;
                if !exchange && si.is_dir() && !di.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                if !exchange && !si.is_dir() && di.is_dir() {
                    return Err(Errno::EISDIR);
                }
            }
        }
        // A directory changing parents rewrites its "..": write permission.
        if od != nd {
            if si.is_dir() {
                si.permission(&self.cred, MAY_WRITE)?;
            }
            if let (true, Some(di)) = (exchange, di) {
                if di.is_dir() {
                    di.permission(&self.cred, MAY_WRITE)?;
                }
            }
        }
        // SAFETY: the caller's walk keeps both dentries allocated.
        let mounted = |d: *const Dentry| !d.is_null() && unsafe { &*d }.flags() & D_MOUNTED != 0;
        if mounted(src) || mounted(dst) {
            return Err(Errno::EBUSY);
        }
        Ok(false)
    }

    /// The common prologue of mkdir, mknod, symlink and link: locks the
    /// parent directory, makes sure the name is free (EEXIST), runs
    /// `before_permission` (link's EXDEV, which Linux checks at that point),
    /// checks write and search permission, then runs `op` with the locked
    /// index and the cached negative dentry for the name, if any.
    /// `creates_dir`: "name/" is acceptable (mkdir).
    fn create_prologue<R>(
        &self,
        parent: &Parent<'_>,
        creates_dir: bool,
        before_permission: impl FnOnce() -> SysResult<()>,
        op: impl FnOnce(
            &mut RwLockWriteGuard<'_, DirIndex>,
            &Inode,
            &NameKey<'_>,
            *const Dentry,
        ) -> SysResult<R>,
    ) -> SysResult<R> {
        let name = match parent.last {
            Last::Name(n) => n,
            _ => return Err(Errno::EEXIST),
        };
        let dir = parent.dir.inode();
        let index = dir.dir_index().ok_or(Errno::ENOTDIR)?;
        let (mut locked, waited) = index.write_noting_wait();
        if locked.is_dead() {
            return Err(Errno::ENOENT);
        }
        if waited {
            self.vfs.note_dir_contended(parent.dir.path.dentry);
        }
        let key = NameKey::lookup(name)?;
        let existing = self.vfs.lookup_exact(parent.dir.path.dentry, &key);
        // SAFETY: live under the bucket and directory locks.
        if !existing.is_null() && !unsafe { &*existing }.inode_ptr().is_null() {
            return Err(Errno::EEXIST);
        }
        // "name/" for a new non-directory (filename_create without
        // LOOKUP_DIRECTORY): you asked for a directory that is not there.
        if parent.trailing_slash && !creates_dir {
            return Err(Errno::ENOENT);
        }
        // filename_create: EROFS after the name's errors, before link's
        // EXDEV and the permission.
        let _write = parent.dir.mount().write_access()?;
        before_permission()?;
        self.may_modify_dir(dir)?;
        let r = op(&mut locked, dir, &key, existing)?;
        if self.vfs.notify_active() {
            self.notify_created(parent.dir.path.dentry, dir, &key);
        }
        Ok(r)
    }

    /// IN_CREATE for the name `key` just made in `dir` (whose lock the
    /// caller holds), with IN_ISDIR for a directory.
    pub(super) fn notify_created(&self, dir_d: *const Dentry, dir: &Inode, key: &NameKey<'_>) {
        let d = self.vfs.lookup_exact(dir_d, key);
        // SAFETY: found under the bucket lock with the directory locked.
        let is_dir = unsafe { d.as_ref() }
            .and_then(|d| unsafe { d.inode_ptr().as_ref() })
            .is_some_and(Inode::is_dir);
        let isdir = if is_dir { IN_ISDIR } else { 0 };
        self.vfs.notify_name(dir, key.bytes, IN_CREATE | isdir, 0);
    }

    /// Owner, group and mode of a new inode of `mode` in directory `dir`
    /// (setgid inheritance), from one read of the directory's attributes.
    pub(super) fn owner_in(&self, dir: &Inode, mode: u32) -> (u32, u32, u32) {
        self.owner_in_as(dir.perm_attr(), mode)
    }

    /// The mode of a new inode of `mode` (after `owner_in`) in `dir`, whose
    /// `perm_attr` mode is `dir_mode`, with the ACLs it inherits: less the
    /// umask, or masked by the directory's default ACL (posix_acl_create).
    pub(super) fn new_mode_in(
        &self,
        dir: &Inode,
        dir_mode: u32,
        mode: u32,
    ) -> (u32, InheritedAcls) {
        let (mode, acls) = InheritedAcls::for_new(dir, dir_mode, mode, self.umask_bits());
        (mode | inherited_flags(dir_mode), acls)
    }

    /// The mode of a new object on a backend-served instance: `mode` (type
    /// and permission bits) less the umask, which holds permission bits
    /// only. Backends have no inherited ACLs (COMPATIBILITY.md).
    pub(super) fn backend_mode(&self, mode: u32) -> u32 {
        mode & !self.umask_bits()
    }

    /// `owner_in` from a copy of the directory's (mode, uid, gid) read
    /// before its lock (`may_write_dir_as`).
    pub(super) fn owner_in_as(
        &self,
        (dir_mode, _, dir_gid): (u32, u32, u32),
        mode: u32,
    ) -> (u32, u32, u32) {
        new_inode_owner(&self.cred, dir_mode, dir_gid, mode)
    }

    pub(crate) fn sys_mkdirat(&self, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()> {
        let _g = self.vfs.collector.enter();
        let parent = self.parent_at(dirfd, path)?;
        if super::backend_names::backend_of(parent.dir.inode()).is_some() {
            return self
                .backend_create(
                    &parent,
                    true,
                    || Ok(()),
                    |sb, dir, name| {
                        let (uid, gid, m) =
                            self.owner_in(dir, S_IFDIR | (mode & (0o777 | S_ISVTX)));
                        sb.fs
                            .create(sb, dir, name, self.backend_mode(m), 0, uid, gid)
                    },
                )
                .map(drop);
        }
        self.create_prologue(
            &parent,
            true,
            || Ok(()),
            |idx, dir, key, neg| {
                let dir_perm = dir.perm_attr();
                let (uid, gid, m) =
                    self.owner_in_as(dir_perm, S_IFDIR | (mode & (0o777 | S_ISVTX)));
                self.create_locked(
                    idx,
                    parent.dir.path.dentry,
                    dir,
                    key,
                    neg,
                    self.new_mode_in(dir, dir_perm.0, m),
                    uid,
                    gid,
                    InodeBody::Directory(RwLock::new(DirIndex::new())),
                )
                .map(drop)
            },
        )
    }

    pub(crate) fn sys_mknodat(&self, dirfd: Fd, path: &[u8], mode: u32, dev: u64) -> SysResult<()> {
        self.mknod(dirfd, path, mode, dev, false).map(drop)
    }

    /// The new node's owner, mode (before the umask or a default ACL:
    /// `new_mode_in`) and device number, after
    /// CAP_MKNOD (checked after the name, as vfs_mknod does; a 0:0
    /// character device is an overlayfs whiteout, which anyone may make).
    fn mknod_attrs(
        &self,
        dir: &Inode,
        ty: u32,
        mode: u32,
        dev: u64,
    ) -> SysResult<(u32, u32, u32, u64)> {
        if matches!(ty, S_IFCHR | S_IFBLK) && !self.cred.is_root() && !(ty == S_IFCHR && dev == 0) {
            return Err(Errno::EPERM);
        }
        let (uid, gid, m) = self.owner_in(dir, ty | (mode & S_IALLUGO));
        let rdev = if matches!(ty, S_IFCHR | S_IFBLK) {
            dev
        } else {
            0
        };
        Ok((uid, gid, m | ty, rdev))
    }

    /// mknodat; with `keep`, the new file's dentry and mount, one
    /// reference each (bind's socket file).
    pub(crate) fn mknod(
        &self,
        dirfd: Fd,
        path: &[u8],
        mode: u32,
        dev: u64,
        keep: bool,
    ) -> SysResult<Option<(*const Dentry, *const crate::mount::Mount)>> {
        // The syscall's dev is 32 bits wide (glibc refuses wider values).
        if dev > u32::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        let ty = match mode & S_IFMT {
            0 => S_IFREG,
            t @ (S_IFREG | S_IFIFO | S_IFSOCK) => t,
            t @ (S_IFCHR | S_IFBLK) => t,
            S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        };
        let _g = self.vfs.collector.enter();
        let parent = self.parent_at(dirfd, path)?;
        // The mount reference `keep` returns is taken first, failing if
        // the walk's mount is going (a lazy umount's last reference):
        // taken after the name is made, it could be a dead mount's.
        let mnt = parent.dir.path.mnt;
        if keep && !self.vfs.mntget_rcu(mnt) {
            return Err(Errno::ENOENT);
        }
        let made = self.mknod_in(&parent, ty, mode, dev, keep);
        if keep && !matches!(made, Ok(Some(_))) {
            self.vfs.mntput(mnt);
        }
        made
    }

    /// `mknod` once its parent is walked (and, with `keep`, its mount
    /// held for the result).
    fn mknod_in(
        &self,
        parent: &Parent<'_>,
        ty: u32,
        mode: u32,
        dev: u64,
        keep: bool,
    ) -> SysResult<Option<(*const Dentry, *const crate::mount::Mount)>> {
        if super::backend_names::backend_of(parent.dir.inode()).is_some() {
            self.backend_create(
                parent,
                false,
                || Ok(()),
                |sb, dir, name| {
                    let (uid, gid, m, rdev) = self.mknod_attrs(dir, ty, mode, dev)?;
                    sb.fs
                        .create(sb, dir, name, self.backend_mode(m), rdev, uid, gid)
                },
            )?;
            return if keep {
                self.backend_made(parent, ty).map(Some)
            } else {
                Ok(None)
            };
        }
        self.create_prologue(
            parent,
            false,
            || Ok(()),
            |idx, dir, key, neg| {
                let (uid, gid, m, rdev) = self.mknod_attrs(dir, ty, mode, dev)?;
                let m = self.new_mode_in(dir, dir.perm_attr().0, m);
                let body = match ty {
                    S_IFREG => InodeBody::Regular(RwLock::new(Default::default())),
                    S_IFIFO => InodeBody::Fifo(Box::default()),
                    _ => InodeBody::Special(rdev),
                };
                self.create_locked(
                    idx,
                    parent.dir.path.dentry,
                    dir,
                    key,
                    neg,
                    m,
                    uid,
                    gid,
                    body,
                )
                .map(|(d, stamp)| {
                    let mnt = parent.dir.path.mnt;
                    let kept = keep.then(|| {
                        // Under the directory lock: the new name pins it
                        // (the mount's reference is the caller's).
                        self.vfs.dget(d);
                        (d, mnt)
                    });
                    drop(stamp);
                    kept
                })
            },
        )
    }

    pub(crate) fn sys_symlinkat(
        &self,
        target: &[u8],
        newdirfd: Fd,
        linkpath: &[u8],
    ) -> SysResult<()> {
        crate::dcache::walk::check_path(target)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let _g = self.vfs.collector.enter();
        let parent = self.parent_at(newdirfd, linkpath)?;
        if super::backend_names::backend_of(parent.dir.inode()).is_some() {
            return self
                .backend_create(
                    &parent,
                    false,
                    || Ok(()),
                    |sb, dir, name| {
                        let (uid, gid, _) = self.owner_in(dir, S_IFLNK | 0o777);
                        sb.fs.symlink(sb, dir, name, target, uid, gid)
                    },
                )
                .map(drop);
        }
        self.create_prologue(
            &parent,
            false,
            || Ok(()),
            |idx, dir, key, neg| {
                let dir_perm = dir.perm_attr();
                let (uid, gid, _) = self.owner_in_as(dir_perm, S_IFLNK | 0o777);
                // tmpfs keeps targets under 128 bytes inline, longer ones in
                // a page: charged to the instance (ENOSPC when full) and to
                // our group (with the inode and dentry: ENOMEM over `max`)
                // before anything is created, as shmem_symlink allocates it.
                let blocks = if target.len() < 128 { 0 } else { 8 };
                // SAFETY: an inode's superblock outlives it.
                let sb = unsafe { &*dir.sb };
                if blocks > 0 {
                    let k = crate::reclaim::KIND_BYTES;
                    self.vfs.admit((k[0] + k[1] + k[3]) as u64, Errno::ENOMEM)?;
                    sb.charge_blocks(blocks)?;
                }
                let (d, _dir_stamp) = self
                    .create_locked(
                        idx,
                        parent.dir.path.dentry,
                        dir,
                        key,
                        neg,
                        (
                            S_IFLNK | 0o777 | inherited_flags(dir_perm.0),
                            InheritedAcls::default(),
                        ),
                        uid,
                        gid,
                        InodeBody::Symlink(target.into()),
                    )
                    .inspect_err(|_| {
                        let _ = sb.charge_blocks(-blocks);
                    })?;
                // SAFETY: pinned by the namespace reference.
                let inode = unsafe { &*(*d).inode_ptr() };
                self.vfs.charge_pages(inode.group, blocks / 8);
                inode.update_attr(|a| a.set_size(target.len() as u64, blocks as u64));
                Ok(())
            },
        )
    }

    pub(crate) fn sys_linkat(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let at = if flags & AT_SYMLINK_FOLLOW != 0 {
            flags & AT_EMPTY_PATH
        } else {
            (flags & AT_EMPTY_PATH) | AT_SYMLINK_NOFOLLOW
        };
        // With AT_EMPTY_PATH the dirfd must have been opened under the
        // caller's credentials, or the caller needs CAP_DAC_READ_SEARCH
        // (Linux 6.10+ path_init, checked whenever the dirfd is used);
        // else ENOENT.
        if flags & AT_EMPTY_PATH != 0
            && olddirfd != AT_FDCWD
            && oldpath.first() != Some(&b'/')
            && !self.cred.is_root()
        {
            let opener = self.with_file(olddirfd, true, |f| Ok(f.opener))?;
            if opener != Arc::as_ptr(&self.cred) as usize {
                return Err(Errno::ENOENT);
            }
        }
        let old = self.lookup_at(&self.cred, olddirfd, oldpath, at, 0)?;
        let parent = self.parent_at(newdirfd, newpath)?;
        let inode = old.inode();
        // Different mounts: EXDEV (even of the same superblock, as Linux),
        // after the new name's EEXIST and before permission.
        let same_mount = || {
            if old.path.mnt == parent.dir.path.mnt {
                Ok(())
            } else {
                Err(Errno::EXDEV)
            }
        };
        if super::backend_names::backend_of(parent.dir.inode()).is_some() {
            return self
                .backend_create(&parent, false, same_mount, |sb, dir, name| {
                    if inode.is_dir() {
                        return Err(Errno::EPERM);
                    }
                    // vfs_link: a file whose last name went (open through a
                    // descriptor) gets no new one; an O_TMPFILE file its first
                    // (tmpfile.rs), once.
                    // SAFETY: the walk's guard keeps the dentry allocated.
                    let old_d = unsafe { &*old.path.dentry };
                    let first = inode.stat().nlink == 0;
                    if first && !old_d.take_flag(D_LINKABLE) {
                        return Err(Errno::ENOENT);
                    }
                    if let Err(e) = sb.fs.link(sb, inode, dir, name) {
                        if first {
                            old_d.set_flag(D_LINKABLE);
                        }
                        return Err(e);
                    }
                    // The source's link count and ctime changed: what an open
                    // descriptor's fstat reads (a walk would revalidate).
                    let _ = sb.fs.refresh(sb, inode);
                    self.vfs.notify_inode(inode, IN_ATTRIB);
                    Ok(())
                })
                .map(drop);
        }
        self.create_prologue(&parent, false, same_mount, |idx, dir, key, neg| {
            // vfs_link: no new name for an append-only or immutable file,
            // nor for a directory.
            if inode.is_dir() || inode.perm_attr().0 & MODE_PROTECTED != 0 {
                return Err(Errno::EPERM);
            }
            // The new name's dentry (unless a negative one is reused) is
            // charged to our group: make room first.
            self.vfs
                .admit(crate::reclaim::KIND_BYTES[0] as u64, Errno::ENOMEM)?;
            // SAFETY: an inode's superblock outlives it.
            let sb = unsafe { &*inode.sb };
            // SAFETY: the walk's guard keeps the dentry allocated.
            let old_d = unsafe { &*old.path.dentry };
            let t = now();
            // The new name's reference on the inode, taken first: the walk
            // only guards it, and its last holder (the old name's unlink in
            // another directory, an O_TMPFILE file's close) may put it
            // meanwhile. A dying inode is answered as a name already gone.
            if !inode.refcount.get() {
                return Err(Errno::ENOENT);
            }
            // Check and increment under the attribute lock (see remove_name:
            // an unlink elsewhere does not hold our directory lock), in
            // vfs_link's order: ENOENT, EMLINK, then the instance's ENOSPC.
            let linked = inode.update_attr(|w| {
                let n = w.get().nlink;
                if n == 0 {
                    // Only an O_TMPFILE file's first name (tmpfile.rs),
                    // covered by the reservation its inode holds.
                    if !old_d.take_flag(D_LINKABLE) {
                        return Err(Errno::ENOENT);
                    }
                } else {
                    if n >= LINK_MAX {
                        return Err(Errno::EMLINK);
                    }
                    // A further link takes an inode from the instance's
                    // budget (tmpfs), returned when a name goes.
                    sb.reserve_inode()?;
                }
                w.set_nlink(n + 1);
                w.set_ctime(t);
                Ok(())
            });
            if let Err(e) = linked {
                self.vfs.iput(inode);
                return Err(e);
            }
            let d = self.bind_name(parent.dir.path.dentry, key, neg, inode, core::ptr::null());
            // A new name of an exported inode is an alias too (fs/export.rs).
            // SAFETY: `d` is hashed and our directory lock keeps it so.
            sb.exports.note_link(inode.ino, unsafe { &*d });
            self.index_child(idx, dir, d, false).apply();
            // fsnotify_link: the link count's IN_ATTRIB, then the name's
            // IN_CREATE (create_prologue's).
            self.vfs.notify_inode(inode, IN_ATTRIB);
            Ok(())
        })
    }

    #[inline(always)]
    pub(crate) fn sys_unlinkat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()> {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let rmdir = flags & AT_REMOVEDIR != 0;
        let _g = self.vfs.collector.enter();
        let parent = self.parent_at(dirfd, path)?;
        let name = match parent.last {
            Last::Name(n) => n,
            Last::Dot => return Err(if rmdir { Errno::EINVAL } else { Errno::EISDIR }),
            Last::DotDot => {
                return Err(if rmdir {
                    Errno::ENOTEMPTY
                } else {
                    Errno::EISDIR
                })
            }
            Last::Root => return Err(if rmdir { Errno::EBUSY } else { Errno::EISDIR }),
        };
        // do_unlinkat/do_rmdir: EROFS before anything about the name.
        let _write = parent.dir.mount().write_access()?;
        if super::backend_names::backend_of(parent.dir.inode()).is_some() {
            return self.backend_unlink(&parent, name, rmdir);
        }
        let dir_d = parent.dir.path.dentry;
        let dir = parent.dir.inode();
        let index = dir.dir_index().ok_or(Errno::ENOTDIR)?;
        // The name's key and the directory's permission are computed
        // before the lock (`may_write_dir_as`), their errors returned in
        // the kernel's order inside it (a removed directory's ENOENT
        // first): the critical section only looks them up.
        let key = NameKey::lookup(name);
        let dir_perm = dir.perm_attr();
        let may_write = self.may_write_dir_as(dir, dir_perm);
        let (mut locked, waited) = index.write_noting_wait();
        if locked.is_dead() {
            return Err(Errno::ENOENT);
        }
        if waited {
            self.vfs.note_dir_contended(dir_d);
        }
        let key = key?;
        // The bucket stays locked until the name is unhashed (one lock
        // for the lookup and the removal), except for rmdir, which must
        // lock the victim's index first.
        let (bucket, victim) = self.vfs.lookup_exact_locked(dir_d, &key);
        let (vd, vi) = Self::positive(victim)?;
        let mut bucket = Some(bucket);
        // unlink("x/"): Linux answers from the victim's type at once.
        if !rmdir && parent.trailing_slash {
            return Err(if vi.is_dir() {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        // may_delete: permission, sticky bit, then the type.
        self.may_delete_as(dir_perm, may_write, vi)?;
        if rmdir && !vi.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if !rmdir && vi.is_dir() {
            return Err(Errno::EISDIR);
        }
        if vd.flags() & D_MOUNTED != 0 {
            return Err(Errno::EBUSY);
        }
        let mut victim_index = None;
        if rmdir {
            drop(bucket.take());
            let vidx = vi.dir_index().ok_or(Errno::ENOTDIR)?.write();
            if !vidx.is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
            victim_index = Some(vidx);
        }
        // The victim's link count before the stamp drops it (read only
        // when something is watched).
        let last_link = self.vfs.notify_active() && (rmdir || vi.attr().nlink <= 1);
        let stamp = self.remove_name(&mut locked, dir, vd, vi, victim_index, bucket);
        if self.vfs.notify_active() {
            // d_delete turns a dentry nobody else holds negative at once
            // (its inode's IN_DELETE_SELF before the name's IN_DELETE);
            // one still in use reports at its final put. A directory
            // reports at once: its cached negative children hold it too,
            // and nothing here can tell them from its users
            // (COMPATIBILITY.md).
            let sole = rmdir || (last_link && vd.refcount.count_at_rest() <= 1);
            self.notify_unlinked(dir, name, vi, rmdir, sole);
        }
        if stamp.may_defer(&self.vfs) {
            drop(locked);
            stamp.apply();
        } else {
            stamp.apply();
            drop(locked);
        }
        self.vfs
            .ending_call(|| self.vfs.release_name_refs(&[victim], _g));
        Ok(())
    }

    /// vfs_unlink's and vfs_rmdir's events: the victim's link count
    /// (IN_ATTRIB, files), its IN_DELETE_SELF if `removed` now, then the
    /// name's IN_DELETE.
    pub(super) fn notify_unlinked(
        &self,
        dir: &Inode,
        name: &[u8],
        victim: &Inode,
        rmdir: bool,
        removed: bool,
    ) {
        if !rmdir {
            self.vfs.notify_inode(victim, IN_ATTRIB);
        }
        if removed {
            self.vfs.notify_removed(victim);
        }
        let isdir = if rmdir { IN_ISDIR } else { 0 };
        self.vfs.notify_name(dir, name, IN_DELETE | isdir, 0);
    }

    /// vfs_rename's events (fsnotify_move): IN_MOVED_FROM and IN_MOVED_TO
    /// with one cookie, a replaced target's link count (IN_ATTRIB), the
    /// moved inode's IN_MOVE_SELF; an exchange reports the other direction
    /// the same way.
    pub(super) fn notify_renamed(
        &self,
        (odir, old_name): (&Inode, &[u8]),
        (ndir, new_name): (&Inode, &[u8]),
        source: &Inode,
        target: Option<&Inode>,
        exchange: bool,
    ) {
        if !self.vfs.notify_active() {
            return;
        }
        let isdir = |i: &Inode| if i.is_dir() { IN_ISDIR } else { 0 };
        let cookie = self.vfs.notify_cookie();
        self.vfs
            .notify_name(odir, old_name, IN_MOVED_FROM | isdir(source), cookie);
        self.vfs
            .notify_name(ndir, new_name, IN_MOVED_TO | isdir(source), cookie);
        let replaced = target.filter(|_| !exchange);
        if let Some(t) = replaced {
            self.vfs.notify_inode(t, IN_ATTRIB);
        }
        self.vfs.notify_inode(source, IN_MOVE_SELF);
        // A replaced directory reports its removal now, as rmdir does
        // (a file at its dentry's final put, right after).
        if let Some(t) = replaced.filter(|t| t.is_dir()) {
            self.vfs.notify_removed(t);
        }
        if let Some(t) = target.filter(|_| exchange) {
            let cookie = self.vfs.notify_cookie();
            self.vfs
                .notify_name(ndir, new_name, IN_MOVED_FROM | isdir(t), cookie);
            self.vfs
                .notify_name(odir, old_name, IN_MOVED_TO | isdir(t), cookie);
            self.vfs.notify_inode(t, IN_MOVE_SELF);
        }
    }

    /// The positive child `key` of directory `dir_d` (ENOENT if absent or
    /// negative): its pointer, dentry and inode. Caller holds the directory
    /// lock, which keeps all three live for as long as it does.
    fn positive_child<'a>(
        &self,
        dir_d: *const Dentry,
        key: &NameKey<'_>,
    ) -> SysResult<(*const Dentry, &'a Dentry, &'a Inode)> {
        let p = self.vfs.lookup_exact(dir_d, key);
        let (d, inode) = Self::positive(p)?;
        Ok((p, d, inode))
    }

    /// A child found by `lookup_exact` (or `lookup_exact_locked`) with the
    /// directory locked: its dentry and inode, ENOENT if absent or
    /// negative. The directory lock keeps both live while it is held.
    fn positive<'a>(p: *const Dentry) -> SysResult<(&'a Dentry, &'a Inode)> {
        // SAFETY: found under the bucket lock with the directory locked.
        let d: &'a Dentry = unsafe { p.as_ref() }.ok_or(Errno::ENOENT)?;
        // SAFETY: a positive dentry keeps its inode.
        let inode: &'a Inode = unsafe { d.inode_ptr().as_ref() }.ok_or(Errno::ENOENT)?;
        Ok((d, inode))
    }

    /// Write+search on the directory, then (EPERM) an append-only
    /// directory, the sticky rule, an append-only or immutable victim.
    pub(super) fn may_delete(&self, dir: &Inode, victim: &Inode) -> SysResult<()> {
        let dir_perm = dir.perm_attr();
        self.may_delete_as(dir_perm, self.may_write_dir_as(dir, dir_perm), victim)
    }

    /// `may_delete` from a copy of the directory's (mode, uid, gid) and the
    /// write permission checked from it, both before the directory lock
    /// (`may_write_dir_as`): only the victim's part runs inside.
    #[inline(always)]
    fn may_delete_as(
        &self,
        dir_perm: (u32, u32, u32),
        may_write: SysResult<()>,
        victim: &Inode,
    ) -> SysResult<()> {
        // Permission only: unlink and rename send backend instances to
        // backend_names.rs before any in-memory change, and call this there.
        may_write?;
        let (dmode, duid, _) = dir_perm;
        // An append-only directory keeps its names; an append-only or
        // immutable victim keeps its own.
        if dmode & MODE_APPEND != 0 {
            return Err(Errno::EPERM);
        }
        let (vmode, vuid, _) = victim.perm_attr();
        if !sticky_may_delete(&self.cred, dmode, duid, vuid) || vmode & MODE_PROTECTED != 0 {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// Removes a positive child's name (unlink, rmdir, rename's victim): the
    /// caller then drops the namespace reference with `dput`, after the
    /// returned stamp (the directory's size and times, a non-directory
    /// victim's link count) is applied. For a directory victim the caller
    /// passes its locked (empty) index, and a caller that still holds the
    /// name's bucket lock (`lookup_exact_locked`) its guard.
    #[inline(always)]
    fn remove_name<'a>(
        &self,
        index: &mut DirIndex,
        dir: &'a Inode,
        vd: &Dentry,
        vi: &'a Inode,
        victim_index: Option<RwLockWriteGuard<'_, DirIndex>>,
        bucket: Option<LockedBucket<'_, Dentry>>,
    ) -> NameStamp<'a> {
        let is_dir = vi.is_dir();
        match bucket {
            Some(b) => self.vfs.unhash_locked(vd, b),
            None => self.vfs.unhash(vd),
        }
        // Relaxed: written under the directory lock we hold.
        index.remove(vd.cookie.load(Ordering::Relaxed));
        if let Some(mut vidx) = victim_index {
            vidx.mark_dead();
            let t = now();
            vi.update_attr(|a| {
                a.set_nlink(0);
                a.set_ctime(t);
            });
        }
        let stamp = NameStamp::new(dir, -1, -i32::from(is_dir));
        if is_dir {
            stamp
        } else {
            stamp.with_victim(vi)
        }
    }

    pub(crate) fn sys_readlinkat(
        &self,
        dirfd: Fd,
        path: &[u8],
        buf: &mut [u8],
    ) -> SysResult<usize> {
        if buf.is_empty() {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_at(
            &self.cred,
            dirfd,
            path,
            AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH,
            0,
        )?;
        let target = found.inode().symlink_target().ok_or(if path.is_empty() {
            Errno::ENOENT
        } else {
            Errno::EINVAL
        })?;
        let n = target.len().min(buf.len());
        buf[..n].copy_from_slice(&target[..n]);
        // SAFETY: the guard keeps the walk's mount allocated.
        found
            .inode()
            .touch_atime(unsafe { &*found.path.mnt }.flags.get());
        Ok(n)
    }

    pub(crate) fn sys_renameat2(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0
            || (flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0)
        {
            return Err(Errno::EINVAL);
        }
        let exchange = flags & RENAME_EXCHANGE != 0;
        let _g = self.vfs.collector.enter();
        let op = self.parent_at(olddirfd, oldpath)?;
        let np = self.parent_at(newdirfd, newpath)?;
        // Linux's order: mounts, then the old name, then the new one.
        if op.dir.path.mnt != np.dir.path.mnt {
            return Err(Errno::EXDEV);
        }
        let Last::Name(old_name) = op.last else {
            return Err(Errno::EBUSY);
        };
        let Last::Name(new_name) = np.last else {
            return Err(if flags & RENAME_NOREPLACE != 0 {
                Errno::EEXIST
            } else {
                Errno::EBUSY
            });
        };
        // do_renameat2: EROFS before the lookups.
        let _write = op.dir.mount().write_access()?;
        if super::backend_names::backend_of(op.dir.inode()).is_some() {
            return self.backend_rename(&op, old_name, &np, new_name, flags);
        }
        let (od, nd) = (op.dir.path.dentry, np.dir.path.dentry);
        let (odir, ndir) = (op.dir.inode(), np.dir.inode());
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*odir.sb };
        let _rename_lock = (od != nd).then(|| sb.rename_lock.lock());
        let (mut oidx, mut nidx) = lock_rename_dirs(od, odir, nd, ndir)?;
        // Each name is looked up in its directory, the old one first (and
        // whole: it must exist) as lookup_one_qstr_excl does: a removed
        // directory is ENOENT, then the name's length, ENAMETOOLONG.
        if oidx.is_dead() {
            return Err(Errno::ENOENT);
        }
        let okey = NameKey::lookup(old_name)?;
        let (src, sd, si) = self.positive_child(od, &okey)?;
        if nidx.as_ref().is_some_and(|n| n.is_dead()) {
            return Err(Errno::ENOENT);
        }
        let nkey = NameKey::lookup(new_name)?;
        let dst = self.vfs.lookup_exact(nd, &nkey);
        // SAFETY: as above.
        let dd = (!dst.is_null()).then(|| unsafe { &*dst });
        let di = dd
            .map(|d| d.inode_ptr())
            .filter(|p| !p.is_null())
            .map(|p| unsafe { &*p });
        if self.rename_checks(&op, &np, flags, src, si, dst, di)? {
            return Ok(());
        }
        let mut victim_index = None;
        if let (false, Some(di)) = (exchange, di) {
            if di.is_dir() {
                let v = di.dir_index().ok_or(Errno::ENOTDIR)?.write();
                if !v.is_empty() {
                    return Err(Errno::ENOTEMPTY);
                }
                victim_index = Some(v);
            }
        }
        // RENAME_WHITEOUT: tmpfs makes the whiteout (a 0:0 character device
        // left at the old name) before moving, so its inode and its
        // listing position come first; only the name is bound afterwards.
        let whiteout = if flags & RENAME_WHITEOUT != 0 {
            // Its inode and dentry are charged to our group: make room first.
            let k = crate::reclaim::KIND_BYTES;
            self.vfs.admit((k[0] + k[1]) as u64, Errno::ENOMEM)?;
            // SAFETY: an inode's superblock outlives it.
            let sb = unsafe { &*odir.sb };
            sb.reserve_inode()?;
            let odir_perm = odir.perm_attr();
            let (uid, gid, mode) = self.owner_in_as(odir_perm, S_IFCHR);
            let (mode, acls) = self.new_mode_in(odir, odir_perm.0, mode);
            let ino = sb.ino_alloc.alloc();
            let inode = self
                .vfs
                .alloc_inode(sb, ino, mode, uid, gid, InodeBody::Special(0));
            acls.attach(sb, ino);
            Some((inode, oidx.reserve_cookie()))
        } else {
            None
        };
        // --- commit ---
        let t = now();
        let mut to_put: Vec<*const Dentry> = Vec::new();
        let rename_guard = self.vfs.rename_seq_lock.lock();
        self.vfs.rename_seq.write_begin();
        // Listing positions belong to names: a replacing rename takes the
        // victim's cookie, an exchange keeps both, a fresh name gets a new one.
        let src_cookie = sd.cookie.load(Ordering::Relaxed);
        let mut reused_cookie = None;
        let mut grow: Option<GrowFrom> = None;
        if let (Some(dd), Some(di), false) = (dd, di, exchange) {
            reused_cookie = Some(dd.cookie.load(Ordering::Relaxed));
            let nidx_ref: &mut DirIndex = nidx.as_deref_mut().unwrap_or(&mut oidx);
            self.remove_name(nidx_ref, ndir, dd, di, victim_index.take(), None)
                .apply();
            to_put.push(dst);
        } else if let (Some(neg), None) = (dd, di) {
            // A cached negative dentry holds the target name: drop it first
            // so the name has one dentry.
            if neg.refcount.get() {
                self.vfs.unhash(neg);
                to_put.push(dst);
            }
        }
        // Relaxed cookie accesses: under the directory locks.
        oidx.remove(src_cookie);
        if let (true, Some(dd)) = (exchange, dd) {
            let dst_cookie = dd.cookie.load(Ordering::Relaxed);
            let nidx_ref: &mut DirIndex = nidx.as_deref_mut().unwrap_or(&mut oidx);
            nidx_ref.remove(dst_cookie);
            grow = self.move_dentry(dst, od, nd, &okey);
            oidx.insert_at(src_cookie, dst);
            dd.cookie.store(src_cookie, Ordering::Relaxed);
            reused_cookie = Some(dst_cookie);
        }
        grow = grow.or(self.move_dentry(src, nd, od, &nkey));
        {
            let nidx_ref: &mut DirIndex = nidx.as_deref_mut().unwrap_or(&mut oidx);
            let c = match reused_cookie {
                Some(c) => {
                    nidx_ref.insert_at(c, src);
                    c
                }
                None => nidx_ref.insert(src),
            };
            sd.cookie.store(c, Ordering::Relaxed);
        }
        let src_is_dir = si.is_dir();
        if let Some((inode, cookie)) = whiteout {
            let w = self.bind_name(od, &okey, core::ptr::null(), inode, core::ptr::null());
            oidx.insert_at(cookie, w);
            // Relaxed: read under the directory lock.
            // SAFETY: just bound, pinned by its name.
            unsafe { &*w }.cookie.store(cookie, Ordering::Relaxed);
            odir.update_attr(|a| a.add_dir_entries(1));
        }
        self.vfs.rename_seq.write_end();
        drop(rename_guard);
        // Outside the rename seqcount: walks that sampled it would spin
        // through a resize.
        self.vfs.grow_dcache(grow);
        // Link counts of the parents (".." entries) and times.
        if od != nd {
            let moved_dirs_to_new =
                src_is_dir as i64 - (exchange && di.is_some_and(|d| d.is_dir())) as i64;
            if !exchange {
                // A replaced victim's entry was already taken off `ndir`.
                odir.update_attr(|a| a.add_dir_entries(-1));
                ndir.update_attr(|a| a.add_dir_entries(1));
            }
            if moved_dirs_to_new != 0 {
                odir.update_attr(|a| {
                    a.set_nlink((a.get().nlink as i64 - moved_dirs_to_new) as u32)
                });
                ndir.update_attr(|a| {
                    a.set_nlink((a.get().nlink as i64 + moved_dirs_to_new) as u32)
                });
            }
        }
        for dir in [odir, ndir] {
            dir.update_attr(|a| {
                a.set_mtime(t);
                a.set_ctime(t);
            });
        }
        si.update_attr(|a| a.set_ctime(t));
        if let (true, Some(di)) = (exchange, di) {
            di.update_attr(|a| a.set_ctime(t));
        }
        self.notify_renamed((odir, old_name), (ndir, new_name), si, di, exchange);
        drop(nidx);
        drop(oidx);
        // No lock may be held while a hot victim's count waits for a grace
        // period (threads inside guards may be waiting for these).
        drop(_rename_lock);
        self.vfs.release_name_refs(&to_put, _g);
        Ok(())
    }

    /// Moves dentry `d` from directory `from` to `to` under name `key`,
    /// moving its parent reference. Caller is inside the rename seqcount;
    /// `Some` asks it for `grow_dcache` once outside (see `d_move`).
    pub(super) fn move_dentry(
        &self,
        d: *const Dentry,
        to: *const Dentry,
        from: *const Dentry,
        key: &NameKey<'_>,
    ) -> Option<GrowFrom> {
        // SAFETY: `d` is pinned; both directories are locked.
        let dr = unsafe { &*d };
        if to != from {
            self.vfs.dget(to);
        }
        let grow = self.vfs.d_move(dr, to, key);
        if to != from {
            self.vfs.dput(from);
        }
        grow
    }

    pub(crate) fn sys_truncate_path(&self, path: &[u8], length: i64) -> SysResult<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        // Hold the name (and so the inode) while the data changes, as
        // Linux holds the path: without it a racing unlink's final put
        // could free the inode — uncharging its pages from the blocks it
        // had then — while this truncation uncharged them a second time.
        let found = loop {
            let found = self.lookup_at(&self.cred, AT_FDCWD, path, 0, WALK_FOLLOW)?;
            if self.vfs.dget_validated(found.path.dentry, found.seq) {
                break found;
            }
        };
        let r = self.truncate_at(
            found.mount(),
            found.path.dentry,
            found.inode(),
            length as u64,
        );
        self.vfs.dput(found.path.dentry);
        r
    }

    /// vfs_truncate of `inode`, found through `mnt`: a directory is
    /// EISDIR, anything else not regular EINVAL, then write permission,
    /// then write access to the mount (EROFS: after the permission since
    /// Linux 6.13, whose fsnotify pre-content hook sits between them), then
    /// EPERM for an append-only file.
    pub(super) fn truncate_at(
        &self,
        mnt: &Mount,
        d: *const Dentry,
        inode: &Inode,
        length: u64,
    ) -> SysResult<()> {
        if inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        if inode.file_type() != S_IFREG {
            return Err(Errno::EINVAL);
        }
        inode.permission(&self.cred, MAY_WRITE)?;
        let _write = mnt.write_access()?;
        refuse_append_only(inode)?;
        self.truncate_inode(d, inode, length)
    }
}

/// EPERM for an append-only inode (IS_APPEND): no truncation, whether
/// by path or through a descriptor.
pub(super) fn refuse_append_only(inode: &Inode) -> SysResult<()> {
    if inode.perm_attr().0 & MODE_APPEND != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The old and (when another directory) the new directory's lock.
pub(super) type RenameDirLocks<'a> = (
    RwLockWriteGuard<'a, DirIndex>,
    Option<RwLockWriteGuard<'a, DirIndex>>,
);

/// The directory locks of a rename from `od` (inode `odir`) to `nd`
/// (`ndir`), exclusively, in the lock order: an ancestor before its
/// descendant, else by address; one lock when they are one directory.
/// Caller holds the superblock's rename lock when they differ, so the
/// ancestry it reads stays as it is.
pub(super) fn lock_rename_dirs<'a>(
    od: *const Dentry,
    odir: &'a Inode,
    nd: *const Dentry,
    ndir: &'a Inode,
) -> SysResult<RenameDirLocks<'a>> {
    let oi = odir.dir_index().ok_or(Errno::ENOTDIR)?;
    if od == nd {
        return Ok((oi.write(), None));
    }
    let ni = ndir.dir_index().ok_or(Errno::ENOTDIR)?;
    let o_first = if is_ancestor(od, nd) {
        true
    } else if is_ancestor(nd, od) {
        false
    } else {
        (od as usize) < (nd as usize)
    };
    Ok(if o_first {
        let a = oi.write();
        (a, Some(ni.write()))
    } else {
        let b = ni.write();
        (oi.write(), Some(b))
    })
}

/// True if `a` is a proper ancestor of `b` (walks `b`'s parents; stable
/// while the superblock's rename lock is held).
pub(crate) fn is_ancestor(a: *const Dentry, b: *const Dentry) -> bool {
    let mut p = b;
    while !p.is_null() {
        // SAFETY: parents of a live dentry are referenced by it.
        let parent = unsafe { &*p }.parent_ptr();
        if parent == a {
            return true;
        }
        p = parent;
    }
    false
}
