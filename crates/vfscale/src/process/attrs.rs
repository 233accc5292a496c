//! Attributes: the stat family, faccessat, chmod, chown, utimensat, statfs.
//!
//! The stat family on a cached path is the hot path of the project: one
//! epoch guard, a lock-free walk, one seqcount-protected copy of the
//! attributes. No reference, no lock, no shared write.

use super::Process;
use crate::abi::*;
use crate::cred::perm::{check_chown, chmod_mode, may_chmod, may_set_times, MAY_WRITE};
use crate::cred::Cred;
use crate::dcache::dentry::Dentry;
use crate::dcache::walk::Found;
use crate::fs::BLOCK_SIZE;
use crate::inode::flags::{MODE_HIDDEN_BITS, MODE_IMMUTABLE, MODE_PROTECTED};
use crate::inode::{now, Inode};
use crate::mount::Mount;

impl Process {
    pub(crate) fn sys_fstat(&self, fd: Fd) -> SysResult<Stat> {
        self.with_file(fd, true, |f| {
            let inode = f.inode();
            // SAFETY: an inode's superblock outlives it.
            if unsafe { &*inode.sb }.backend_served {
                refresh_past_ttl(f);
            }
            Ok(inode.stat())
        })
    }

    pub(crate) fn sys_fstatat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE)
            != 0
        {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        // SAFETY: the guard keeps the inode allocated.
        let inode = unsafe { &*self.lookup_inode(dirfd, path, flags)? };
        Ok(inode.stat())
    }

    /// The inode `path` names (relative to `dirfd`, *at-style flags) for
    /// our credentials, for the calls that only read it (the stat family):
    /// the fast lookup inline, the full one out of line, so the two results
    /// meet in a register, not in memory. Caller holds a guard, which keeps
    /// the inode allocated.
    #[inline(always)]
    fn lookup_inode(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<*const Inode> {
        match self.lookup_fast(&self.cred, dirfd, path, flags, 0) {
            // A positive result: no WALK_ALLOW_NEGATIVE.
            Some(hit) => Ok(hit?.inode),
            None => self.lookup_inode_slow(dirfd, path, flags),
        }
    }

    #[cold]
    #[inline(never)]
    fn lookup_inode_slow(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<*const Inode> {
        Ok(self.lookup_at(&self.cred, dirfd, path, flags, 0)?.inode)
    }

    pub(crate) fn sys_statx(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mask: u32,
    ) -> SysResult<Statx> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE)
            != 0
            || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        {
            return Err(Errno::EINVAL);
        }
        if mask & 0x8000_0000 != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_at(&self.cred, dirfd, path, flags, 0)?;
        let inode = found.inode();
        let a = inode.attr();
        let dev = inode.dev();
        // SAFETY: the anonymous mount lives as long as the namespace.
        let anon_sb = unsafe { &*self.vfs.anon().mnt }.sb();
        // Linux's pipefs, sockfs and anon_inodefs (a memfd is tmpfs's).
        let pseudo = core::ptr::eq(inode.sb, anon_sb) && inode.file_type() != S_IFREG;
        let (mut attributes, attributes_mask) = if pseudo {
            // The generic attribute bits only.
            (0, STATX_ATTR_MASK_GENERIC)
        } else {
            inode.statx_attributes(inode.perm_attr().0)
        };
        if core::ptr::eq(found.path.dentry, found.mount().root) {
            attributes |= STATX_ATTR_MOUNT_ROOT;
        }
        let mut sx = Statx {
            mask: STATX_BASIC_STATS | STATX_BTIME,
            blksize: BLOCK_SIZE as u32,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            mode: a.mode as u16,
            ino: a.ino,
            size: a.size,
            blocks: a.blocks,
            atime: a.atime,
            btime: a.btime,
            ctime: a.ctime,
            mtime: a.mtime,
            rdev_major: (a.rdev >> 8) as u32 & 0xfff,
            rdev_minor: (a.rdev & 0xff) as u32,
            dev_major: 0,
            dev_minor: dev as u32,
            attributes,
            attributes_mask,
        };
        // What Linux 6.18 leaves out unless asked (checked on the host's
        // tmpfs and ext4): the birth time (shmem_getattr, ext4_getattr
        // fill it only on request), and, for filesystems with multigrain
        // timestamps (tmpfs, ext4 since 6.13), mtime and ctime when neither
        // is asked for (fill_mg_cmtime: their fields stay zero). The
        // pseudo filesystems keep no birth time and have no multigrain
        // timestamps: the basic fields always, never the birth time.
        if mask & STATX_BTIME == 0 || pseudo {
            sx.mask &= !STATX_BTIME;
            sx.btime = Timespec::default();
        }
        if mask & (STATX_MTIME | STATX_CTIME) == 0 && !pseudo {
            sx.mask &= !(STATX_MTIME | STATX_CTIME);
            sx.mtime = Timespec::default();
            sx.ctime = Timespec::default();
        }
        Ok(sx)
    }

    pub(crate) fn sys_faccessat(
        &self,
        dirfd: Fd,
        path: &[u8],
        mode: i32,
        flags: i32,
    ) -> SysResult<()> {
        if mode & !(R_OK | W_OK | X_OK) != 0
            || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0
        {
            return Err(Errno::EINVAL);
        }
        let real;
        let cred: &Cred = if flags & AT_EACCESS != 0 {
            &self.cred
        } else {
            real = self.cred.with_real_ids();
            &real
        };
        let _g = self.vfs.collector.enter();
        if mode & (X_OK | W_OK) != 0 {
            // The mount matters (noexec, read-only), and the fast lookup
            // does not know it.
            let found = self.lookup_at(cred, dirfd, path, flags, 0)?;
            let (inode, mnt) = (found.inode(), found.mount());
            let ty = inode.file_type();
            // do_faccessat: a regular file on a noexec mount, before the
            // permission bits.
            if mode & X_OK != 0
                && ty == S_IFREG
                && mnt.flags.get() & crate::mount::flags::MNT_NOEXEC != 0
            {
                return Err(Errno::EACCES);
            }
            inode.permission(cred, mode as u32)?;
            // A read-only mount after them, but for special files
            // (written without the filesystem).
            if mode & W_OK != 0
                && !matches!(ty, S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK)
                && mnt.is_readonly()
            {
                return Err(Errno::EROFS);
            }
            return Ok(());
        }
        let inode = match self.lookup_fast(cred, dirfd, path, flags, 0) {
            Some(hit) => hit?.inode,
            None => self.lookup_at(cred, dirfd, path, flags, 0)?.inode,
        };
        if mode == F_OK {
            return Ok(());
        }
        // SAFETY: the guard keeps the inode allocated.
        unsafe { &*inode }.permission(cred, mode as u32)
    }

    fn lookup_setattr(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Found> {
        self.lookup_at(&self.cred, dirfd, path, flags, 0)
    }

    pub(super) fn chmod_inode(
        &self,
        mnt: &Mount,
        d: *const Dentry,
        inode: &Inode,
        mode: u32,
    ) -> SysResult<()> {
        // chmod_common: write access first.
        let _write = mnt.write_access()?;
        let (cur_mode, uid, gid) = inode.perm_attr();
        refuse_protected_setattr(cur_mode)?;
        refuse_anon_inode_setattr(inode)?;
        may_chmod(&self.cred, uid)?;
        let new = chmod_mode(&self.cred, cur_mode & !MODE_HIDDEN_BITS, gid, mode);
        if let Some(sb) = super::backend_names::backend_of(inode) {
            let change = crate::fs::AttrChange {
                mode: Some(new),
                ..Default::default()
            };
            return sb
                .fs
                .setattr(sb, inode, &change)
                .inspect(|()| self.attr_changed(d, inode, IN_ATTRIB));
        }
        // A memfd sealed against exec changes: tested and changed under
        // its data lock, as its seals change (anon/memfd.rs).
        let seals = crate::anon::memfd::seals_of(&self.vfs, inode);
        let _data = match (seals, inode.file_data()) {
            (Some(sealed), Some(data)) => {
                let d = data.read();
                crate::anon::memfd::may_chmod(crate::anon::memfd::get(sealed), cur_mode, new)?;
                Some(d)
            }
            _ => None,
        };
        inode.chmod_with_acl(new, now());
        self.attr_changed(d, inode, IN_ATTRIB);
        Ok(())
    }

    pub(crate) fn sys_fchmodat(
        &self,
        dirfd: Fd,
        path: &[u8],
        mode: u32,
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_setattr(dirfd, path, flags)?;
        if flags & AT_SYMLINK_NOFOLLOW != 0 && s_islnk(found.inode().file_type()) {
            // notify_change refuses a symlink's mode after chmod_common's
            // write access.
            return found.mount().write_access().and(Err(Errno::EOPNOTSUPP));
        }
        self.chmod_inode(found.mount(), found.path.dentry, found.inode(), mode)
    }

    pub(crate) fn sys_fchmod(&self, fd: Fd, mode: u32) -> SysResult<()> {
        self.with_file(fd, false, |f| {
            self.chmod_inode(f.mount(), f.dentry, f.inode(), mode)
        })
    }

    pub(super) fn chown_inode(
        &self,
        mnt: &Mount,
        d: *const Dentry,
        inode: &Inode,
        uid: u32,
        gid: u32,
    ) -> SysResult<()> {
        // fsnotify_change: IN_ATTRIB when an owner was given.
        let event = if uid != u32::MAX || gid != u32::MAX {
            IN_ATTRIB
        } else {
            0
        };
        // do_fchownat / vfs_fchown: write access first.
        let _write = mnt.write_access()?;
        let new_uid = (uid != u32::MAX).then_some(uid);
        let new_gid = (gid != u32::MAX).then_some(gid);
        if event != 0 {
            refuse_protected_setattr(inode.perm_attr().0)?;
        }
        refuse_anon_inode_setattr(inode)?;
        let a = inode.attr();
        let new_mode = check_chown(&self.cred, a.mode, a.uid, a.gid, new_uid, new_gid)?;
        if let Some(sb) = super::backend_names::backend_of(inode) {
            let change = crate::fs::AttrChange {
                uid: new_uid,
                gid: new_gid,
                // Set-id bits the change clears (the host clears its own
                // as well when it runs unprivileged).
                mode: (new_mode != a.mode).then_some(new_mode),
                ..Default::default()
            };
            return sb
                .fs
                .setattr(sb, inode, &change)
                .inspect(|()| self.attr_changed(d, inode, event));
        }
        let t = now();
        inode.update_attr(|w| {
            if let Some(u) = new_uid {
                w.set_uid(u);
            }
            if let Some(g) = new_gid {
                w.set_gid(g);
            }
            w.set_mode(new_mode);
            w.set_ctime(t);
        });
        self.attr_changed(d, inode, event);
        Ok(())
    }

    pub(crate) fn sys_fchownat(
        &self,
        dirfd: Fd,
        path: &[u8],
        uid: u32,
        gid: u32,
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_setattr(dirfd, path, flags)?;
        self.chown_inode(found.mount(), found.path.dentry, found.inode(), uid, gid)
    }

    pub(crate) fn sys_fchown(&self, fd: Fd, uid: u32, gid: u32) -> SysResult<()> {
        self.with_file(fd, false, |f| {
            self.chown_inode(f.mount(), f.dentry, f.inode(), uid, gid)
        })
    }

    /// An attribute change of `inode` (reached through `d`) is visible:
    /// the name observers hear of it (watch.rs), and inotify's watches of
    /// `event` (0: none, as a chown that gave no owner).
    pub(super) fn attr_changed(&self, d: *const Dentry, inode: &Inode, event: u32) {
        self.vfs.watchers.inode_changed(inode, false);
        if event != 0 {
            self.vfs.notify_object(d, inode, event, false);
        }
    }

    /// A truncation of `inode` (reached through `d`) is visible: the
    /// observers hear of changed contents, inotify's watches of IN_MODIFY
    /// (fsnotify_change of ATTR_SIZE).
    pub(super) fn data_changed(&self, d: *const Dentry, inode: &Inode) {
        self.vfs.watchers.inode_changed(inode, true);
        self.vfs.notify_object(d, inode, IN_MODIFY, false);
    }

    pub(super) fn utimes_inode(
        &self,
        mnt: &Mount,
        d: *const Dentry,
        inode: &Inode,
        times: Option<[Timespec; 2]>,
    ) -> SysResult<()> {
        let [at, mt] = times.unwrap_or([Timespec::NOW, Timespec::NOW]);
        // fsnotify_change: both times set is IN_ATTRIB, the modification
        // time alone IN_MODIFY, the access time alone IN_ACCESS.
        let event = match (at.nsec == UTIME_OMIT, mt.nsec == UTIME_OMIT) {
            (true, _) => IN_MODIFY,
            (_, true) => IN_ACCESS,
            _ => IN_ATTRIB,
        };
        for t in [at, mt] {
            if t.nsec != UTIME_NOW && t.nsec != UTIME_OMIT && !(0..1_000_000_000).contains(&t.nsec)
            {
                return Err(Errno::EINVAL);
            }
        }
        if at.nsec == UTIME_OMIT && mt.nsec == UTIME_OMIT {
            return Ok(());
        }
        // vfs_utimes: write access after the times' check.
        let _write = mnt.write_access()?;
        let explicit = !(at.nsec == UTIME_NOW && mt.nsec == UTIME_NOW);
        let perm = inode.perm_attr();
        // notify_change: explicit times as any attribute; a touch only
        // where the file is immutable.
        if explicit {
            refuse_protected_setattr(perm.0)?;
        } else if perm.0 & MODE_IMMUTABLE != 0 {
            return Err(Errno::EPERM);
        }
        let u = perm.1;
        let can_write = inode.permission_as(&self.cred, perm, MAY_WRITE).is_ok();
        if inode.file_type() == 0 {
            // The eventfd inode: only may_setattr's check of a touch runs
            // before its setattr refuses (see refuse_anon_inode_setattr).
            if !explicit && !self.cred.is_root() && self.cred.fsuid != u && !can_write {
                return Err(Errno::EACCES);
            }
            return Err(Errno::EOPNOTSUPP);
        }
        may_set_times(&self.cred, u, explicit, can_write)?;
        if let Some(sb) = super::backend_names::backend_of(inode) {
            let change = crate::fs::AttrChange {
                times: Some([at, mt]),
                ..Default::default()
            };
            return sb
                .fs
                .setattr(sb, inode, &change)
                .inspect(|()| self.attr_changed(d, inode, event));
        }
        let t = now();
        let pick = |x: Timespec| if x.nsec == UTIME_NOW { t } else { x };
        inode.update_attr(|w| {
            if at.nsec != UTIME_OMIT {
                w.set_atime(pick(at));
            }
            if mt.nsec != UTIME_OMIT {
                w.set_mtime(pick(mt));
            }
            w.set_ctime(t);
        });
        self.attr_changed(d, inode, event);
        Ok(())
    }

    pub(crate) fn sys_utimensat(
        &self,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()> {
        if let Some([a, m]) = times {
            if a.nsec == UTIME_OMIT && m.nsec == UTIME_OMIT {
                return Ok(());
            }
        }
        // Both omitted: nothing to do, not even a flag check (as Linux).
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_setattr(dirfd, path, flags)?;
        self.utimes_inode(found.mount(), found.path.dentry, found.inode(), times)
    }

    pub(crate) fn sys_futimens(&self, fd: Fd, times: Option<[Timespec; 2]>) -> SysResult<()> {
        // futimens is glibc's: a negative fd is EBADF before the syscall
        // (whose both-OMIT shortcut would otherwise succeed).
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        if let Some([a, m]) = times {
            if a.nsec == UTIME_OMIT && m.nsec == UTIME_OMIT {
                return Ok(());
            }
        }
        self.with_file(fd, false, |f| {
            self.utimes_inode(f.mount(), f.dentry, f.inode(), times)
        })
    }

    pub(crate) fn sys_statfs(&self, path: &[u8]) -> SysResult<Statfs> {
        let _g = self.vfs.collector.enter();
        let found = self.lookup_at(&self.cred, AT_FDCWD, path, 0, 0)?;
        // SAFETY: the guard keeps the walk's mount allocated.
        Ok(unsafe { &*found.path.mnt }.statfs())
    }

    pub(crate) fn sys_fstatfs(&self, fd: Fd) -> SysResult<Statfs> {
        self.with_file(fd, true, |f| {
            Ok(match pseudo_fs_magic(f.fmode) {
                // Linux's pipefs, sockfs and anon_inodefs answer
                // simple_statfs: their magic, a page, NAME_MAX, no counts.
                Some(magic) => Statfs {
                    f_type: magic,
                    f_bsize: 4096,
                    f_namelen: NAME_MAX as i64,
                    f_frsize: 4096,
                    // A kernel-internal mount has no per-mount flags.
                    f_flags: ST_VALID,
                    ..Statfs::default()
                },
                // SAFETY: an open file holds its mount.
                None => unsafe { &*f.mnt }.statfs(),
            })
        })
    }
}

/// notify_change's first check: no mode, owner or explicit time changes
/// for an immutable or append-only inode (`mode_word` from `perm_attr`).
fn refuse_protected_setattr(mode_word: u32) -> SysResult<()> {
    if mode_word & MODE_PROTECTED != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The eventfd inode (the one inode without type bits) stands for Linux's
/// shared anon_inodefs inode, whose setattr is EOPNOTSUPP (since 6.16),
/// ahead of the ownership checks setattr_prepare would make.
fn refuse_anon_inode_setattr(inode: &Inode) -> SysResult<()> {
    if inode.file_type() == 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// The pseudo filesystem Linux keeps pipes, sockets and eventfds on, by
/// its statfs magic (memfds are on tmpfs there too).
fn pseudo_fs_magic(fmode: u32) -> Option<i64> {
    use crate::file::{FMODE_PIPE, FMODE_SHARED_ANON, FMODE_SOCKET};
    if fmode & FMODE_PIPE != 0 {
        Some(PIPEFS_MAGIC)
    } else if fmode & FMODE_SOCKET != 0 {
        Some(SOCKFS_MAGIC)
    } else if fmode & FMODE_SHARED_ANON != 0 {
        Some(ANON_INODE_FS_MAGIC)
    } else {
        None
    }
}

/// fstat of a backend-served file: its attributes are re-read from the
/// backend once its entry is older than the instance's TTL, as a walk
/// would revalidate them, since changes made on the host (or through a
/// host hard link's name that the identity map could not tie to this
/// inode) reach it no other way. The entry's time is left alone: a refresh through the file
/// says nothing about its name. A failed refresh (the file gone from its
/// path, with no held host file) leaves the cached attributes.
#[cold]
pub(super) fn refresh_past_ttl(f: &crate::file::OpenFile) {
    // SAFETY: the open file holds its dentry; a dentry's superblock
    // outlives it.
    let (d, inode) = (unsafe { &*f.dentry }, f.inode());
    // SAFETY: as above.
    let sb = unsafe { &*d.sb };
    let Some(ttl) = sb.revalidate_ttl_ns else {
        return;
    };
    // Relaxed: a hint of age, as the walk's TTL test reads it.
    let validated_at = d.cookie.load(core::sync::atomic::Ordering::Relaxed);
    if crate::dcache::precise_monotonic_ns().saturating_sub(validated_at) >= ttl {
        let _ = sb.fs.refresh(sb, inode);
    }
}
