//! name_to_handle_at and open_by_handle_at over vfscale's own namespace
//! (the handle format and the export table are in fs/export.rs).
//!
//! Invariants:
//! - A dentry enters its superblock's export table only while we hold a
//!   reference to it, so its free, which removes it, comes after.
//! - open_by_handle_at takes its references through `open_found`, which
//!   validates the alias's `seq` read under the export shard's mutex: a
//!   dentry moved or killed since is retried, and once the inode has no
//!   live dentry it is ESTALE.

use super::Process;
use crate::abi::*;
use crate::dcache::walk::{Found, PathPtr};
use crate::fs::export::{FILEID_INO64_GEN, HANDLE_LEN};

impl Process {
    pub(crate) fn sys_name_to_handle_at(
        &self,
        dirfd: Fd,
        path: &[u8],
        handle: &mut FileHandle,
        flags: i32,
    ) -> SysResult<u64> {
        let known = AT_EMPTY_PATH
            | AT_SYMLINK_FOLLOW
            | AT_HANDLE_FID
            | AT_HANDLE_MNT_ID_UNIQUE
            | AT_HANDLE_CONNECTABLE;
        if flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        // A connectable handle needs a known parent: not with FID (no
        // intention to decode) nor AT_EMPTY_PATH (Linux's order).
        if flags & AT_HANDLE_CONNECTABLE != 0 && flags & (AT_HANDLE_FID | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let at = (flags & AT_EMPTY_PATH)
            | if flags & AT_SYMLINK_FOLLOW != 0 {
                0
            } else {
                AT_SYMLINK_NOFOLLOW
            };
        let _g = self.vfs.collector.enter();
        let found = self.lookup_at(&self.cred, dirfd, path, at, 0)?;
        if found.inode.is_null() {
            return Err(Errno::ENOENT);
        }
        // Pipes, sockets and eventfds (Linux's pipefs, sockfs and
        // anon_inodefs) have no export operations: EOPNOTSUPP. memfds and
        // AT_HANDLE_FID on the others get handles on Linux; vfscale has no
        // handle scheme for anonymous objects (docs/COMPATIBILITY.md).
        if core::ptr::eq(found.path.mnt, self.vfs.anon().mnt) {
            return Err(Errno::EOPNOTSUPP);
        }
        // SAFETY: the guard keeps the dentry, its superblock (which outlives
        // it) and the mount allocated.
        let d = unsafe { &*found.path.dentry };
        let sb = unsafe { &*d.sb };
        // Backends whose dentries are reclaimable have no handle scheme
        // yet (a passthrough one would forward host handles); tmpfs cannot
        // decode a handle to its parent (no fh_to_parent), so a
        // connectable handle is EOPNOTSUPP, as exportfs_can_encode_fh says.
        if !sb.fs.dcache_is_authoritative() || flags & AT_HANDLE_CONNECTABLE != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        // The buffer's size is read after the walk (do_sys_name_to_handle).
        if handle.handle_bytes > MAX_HANDLE_SZ {
            return Err(Errno::EINVAL);
        }
        let mount_id = unsafe { &*found.path.mnt }.id();
        let ino = found.inode().ino();
        if (handle.handle_bytes as usize) < HANDLE_LEN {
            handle.handle_bytes = HANDLE_LEN as u32;
            return Err(Errno::EOVERFLOW);
        }
        self.export_dentry(d, ino)?;
        handle.handle_bytes = HANDLE_LEN as u32;
        handle.handle_type = FILEID_INO64_GEN;
        handle.f_handle = sb.exports.encode(ino).to_vec();
        Ok(mount_id)
    }

    /// Registers `d` (positive, inode `ino`) in its superblock's export
    /// table: a name, or a removed dentry still in use (an unlinked file
    /// kept open, as Linux encodes it). ENOENT if it is dying. Caller holds
    /// an epoch guard.
    pub(super) fn export_dentry(
        &self,
        d: &crate::dcache::dentry::Dentry,
        ino: u64,
    ) -> SysResult<()> {
        // A reference keeps the free, which drops the alias, after the add.
        if d.inode_ptr().is_null() || !d.refcount.get() {
            return Err(Errno::ENOENT);
        }
        // SAFETY: a dentry's superblock outlives it.
        unsafe { &*d.sb }.exports.add_alias(ino, d);
        self.vfs.dput(d);
        Ok(())
    }

    pub(crate) fn sys_open_by_handle_at(
        &self,
        mount_fd: Fd,
        handle: &FileHandle,
        flags: i32,
    ) -> SysResult<Fd> {
        // Linux's handle_to_path: the handle's header, then the mount
        // descriptor, then the permission.
        if handle.handle_bytes == 0 || handle.handle_bytes > MAX_HANDLE_SZ || handle.handle_type < 0
        {
            return Err(Errno::EINVAL);
        }
        // get_path_anchor takes the mount fd with fdget: an O_PATH
        // descriptor is EBADF here.
        if mount_fd != AT_FDCWD {
            self.vfs.fput(self.fd_file_nopath(mount_fd)?);
        }
        let _g = self.vfs.collector.enter();
        let (_, cwd) = self.fs.get();
        let (mnt_path, _) = self.dirfd_path(mount_fd, cwd)?;
        // CAP_DAC_READ_SEARCH: vfscale models capabilities as root.
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let bytes = handle
            .f_handle
            .get(..handle.handle_bytes as usize)
            .ok_or(Errno::EFAULT)?;
        // SAFETY: the guard keeps the mount and its superblock allocated.
        let sb = unsafe { &*mnt_path.mnt }.sb();
        let ino = sb
            .exports
            .decode(handle.handle_type, bytes)
            .ok_or(Errno::ESTALE)?;
        if flags & O_TMPFILE == O_TMPFILE {
            return Err(Errno::EINVAL);
        }
        // The object exists: creation flags do not apply.
        let flags = flags & !(O_CREAT | O_EXCL);
        let flags = if flags & O_PATH != 0 {
            flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } else {
            flags
        };
        // The open file is charged to our group: make room first.
        self.charge_here();
        self.vfs
            .admit(crate::reclaim::KIND_BYTES[2] as u64, Errno::ENOMEM)?;
        let file = loop {
            let (dentry, seq) = sb.exports.find_alias(ino).ok_or(Errno::ESTALE)?;
            // SAFETY: the guard keeps the alias allocated (export table
            // invariant); a name in the table is positive.
            let inode = unsafe { &*dentry }.inode_ptr();
            if inode.is_null() {
                return Err(Errno::ESTALE);
            }
            // do_file_open_root: a symlink is ELOOP for any open but
            // O_PATH, before O_DIRECTORY's ENOTDIR.
            // SAFETY: as above.
            let ty = unsafe { &*inode }.file_type();
            if s_islnk(ty) && flags & O_PATH == 0 {
                return Err(Errno::ELOOP);
            }
            if flags & O_DIRECTORY != 0 && ty != S_IFDIR {
                return Err(Errno::ENOTDIR);
            }
            let found = Found {
                path: PathPtr {
                    mnt: mnt_path.mnt,
                    dentry,
                },
                seq,
                inode,
            };
            if let Some(f) = self.open_found(&found, flags, false)? {
                break f;
            }
            // Renamed or removed since we read it: look again.
        };
        let (file, _g) = Self::finish_open(file, _g);
        if flags & O_TRUNC != 0 && flags & O_PATH == 0 && file.file().inode().file_type() == S_IFREG
        {
            if let Err(e) = self.truncate_inode(file.file().inode(), 0) {
                self.vfs.fput(file);
                return Err(e);
            }
        }
        self.install_opened(file, flags)
    }
}
