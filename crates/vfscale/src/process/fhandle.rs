//! name_to_handle_at and open_by_handle_at over vfscale's own namespace
//! (the handle formats and the export table are in fs/export.rs).
//!
//! An instance whose dcache is authoritative (tmpfs) finds a handle's
//! object only through the export table. A backend's handle (passthrough)
//! is tried there first too, if the backend says the alias is still the
//! handle's object (`Filesystem::handle_names`); else the backend proposes
//! where the object is now (`locate_handle`), vfscale walks there from the
//! instance root as root, and the backend judges what the walk found.
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
use crate::dcache::dentry::Dentry;
use crate::dcache::walk::{Found, PathPtr};
use crate::fs::export::{FILEID_INO64_GEN, FILEID_VFSCALE_BACKEND};
use crate::fs::SuperBlock;
use crate::mount::Mount;

/// What a handle's bytes name, on the instance they were made on.
enum Target<'h> {
    /// An inode number of an instance whose dcache is authoritative.
    Exported(u64),
    /// An inode number and the backend's own bytes.
    Backend(u64, &'h [u8]),
}

/// Searches for a backend handle's object that renames may mislead, at
/// most (sync/in_flight.rs).
const RENAME_ATTEMPTS: usize = 64;
/// Walks to one place a backend proposed whose dentry changed before the
/// open could take it (a rename, the shrinker), at most.
const WALK_ATTEMPTS: usize = 16;

type Opened = (crate::file::FileRef, Option<crate::anon::pipe::PartnerWait>);

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
        // No backend decodes a handle to its parent (no fh_to_parent), so
        // a connectable handle is EOPNOTSUPP, as exportfs_can_encode_fh
        // says.
        if flags & AT_HANDLE_CONNECTABLE != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let ino = found.inode().ino();
        // A backend's part first: a backend without handles is EOPNOTSUPP
        // before the buffer is looked at, as a filesystem without export
        // operations is on Linux.
        let own = if sb.fs.dcache_is_authoritative() {
            None
        } else {
            let mut own = Vec::new();
            sb.fs.encode_handle(sb, found.inode(), &mut own)?;
            Some(own)
        };
        // The buffer's size is read after the walk (do_sys_name_to_handle).
        if handle.handle_bytes > MAX_HANDLE_SZ {
            return Err(Errno::EINVAL);
        }
        let mount_id = unsafe { &*found.path.mnt }.id();
        let (handle_type, bytes) = match own {
            None => (FILEID_INO64_GEN, sb.exports.encode(ino).to_vec()),
            Some(own) => (FILEID_VFSCALE_BACKEND, sb.exports.encode_backend(ino, &own)),
        };
        if (handle.handle_bytes as usize) < bytes.len() {
            handle.handle_bytes = bytes.len() as u32;
            return Err(Errno::EOVERFLOW);
        }
        self.export_dentry(d, ino)?;
        handle.handle_bytes = bytes.len() as u32;
        handle.handle_type = handle_type;
        handle.f_handle = bytes;
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

    /// Opens `dentry` (read with `seq`, under an epoch guard the caller
    /// holds) for open_by_handle_at: None if it was renamed or removed
    /// since `seq`.
    fn open_handle_target(
        &self,
        mnt: *const Mount,
        dentry: *const Dentry,
        seq: u32,
        flags: i32,
    ) -> SysResult<Option<Opened>> {
        // SAFETY: the caller's guard keeps the dentry allocated.
        let inode = unsafe { &*dentry }.inode_ptr();
        if inode.is_null() {
            return Err(Errno::ESTALE);
        }
        // do_file_open_root: a symlink is ELOOP for any open but O_PATH,
        // before O_DIRECTORY's ENOTDIR.
        // SAFETY: a positive dentry keeps its inode.
        let ty = unsafe { &*inode }.file_type();
        if s_islnk(ty) && flags & O_PATH == 0 {
            return Err(Errno::ELOOP);
        }
        if flags & O_DIRECTORY != 0 && ty != S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let found = Found {
            path: PathPtr { mnt, dentry },
            seq,
            inode,
        };
        self.open_found(&found, flags, false)
    }

    /// open_by_handle_at of a backend's handle of inode `ino` (backend
    /// bytes `own`) on `sb`, through mount `mnt`: the exported dentry
    /// while the backend says it is still the object, else each place the
    /// backend proposes, walked from the instance root and checked the
    /// same way. Caller holds an epoch guard.
    fn open_backend_handle(
        &self,
        sb: &SuperBlock,
        mnt: *const Mount,
        ino: u64,
        own: &[u8],
        flags: i32,
    ) -> SysResult<Opened> {
        let is_object = |inode: *const crate::inode::Inode| {
            // SAFETY: a positive dentry keeps its inode; the guard keeps
            // the dentry allocated.
            !inode.is_null() && sb.fs.handle_names(sb, unsafe { &*inode }, own)
        };
        while let Some((dentry, seq)) = sb.exports.find_alias(ino) {
            // SAFETY: an alias is allocated under the guard (fs/export.rs).
            if !is_object(unsafe { &*dentry }.inode_ptr()) {
                break;
            }
            if let Some(f) = self.open_handle_target(mnt, dentry, seq, flags)? {
                return Ok(f);
            }
        }
        let root = PathPtr {
            mnt,
            dentry: sb.root(),
        };
        let cred = crate::Cred::root();
        for path in sb.fs.locate_handle(sb, own)? {
            // A walk's dentry renamed or reclaimed before the open took it
            // (the open found it changed): walk again, a few times.
            for _ in 0..WALK_ATTEMPTS {
                let found = if path.is_empty() {
                    // SAFETY: a superblock's root dentry lives as long as it.
                    let d = unsafe { &*root.dentry };
                    let seq = d.seq.read_begin();
                    Found {
                        path: root,
                        seq,
                        inode: d.inode_ptr(),
                    }
                } else {
                    match self.vfs.walk(&cred, root, root, &path, 0) {
                        Ok(found) => found,
                        Err(_) => break,
                    }
                };
                // SAFETY: the guard keeps what the walk found allocated.
                let d = unsafe { &*found.path.dentry };
                if !core::ptr::eq(d.sb, sb) || !is_object(found.inode) {
                    break;
                }
                if let Some(f) =
                    self.open_handle_target(found.path.mnt, found.path.dentry, found.seq, flags)?
                {
                    // Found again by name: the next open finds it in the table.
                    let _ = self.export_dentry(d, ino);
                    return Ok(f);
                }
            }
        }
        Err(Errno::ESTALE)
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
        // Each instance decodes only its own kind: a number-only handle on
        // a backend instance would skip the backend's identity check.
        let target = if sb.fs.dcache_is_authoritative() {
            sb.exports
                .decode(handle.handle_type, bytes)
                .map(Target::Exported)
        } else {
            sb.exports
                .decode_backend(handle.handle_type, bytes)
                .map(|(ino, own)| Target::Backend(ino, own))
        }
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
        let file = match target {
            Target::Exported(ino) => loop {
                let (dentry, seq) = sb.exports.find_alias(ino).ok_or(Errno::ESTALE)?;
                if let Some(f) = self.open_handle_target(mnt_path.mnt, dentry, seq, flags)? {
                    break f;
                }
                // Renamed or removed since we read it: look again.
            },
            // A search a rename through vfscale may have misled (the host
            // has the new names before the cache) looks again.
            Target::Backend(ino, own) => sb.renames.retry(
                RENAME_ATTEMPTS,
                |&e| e == Errno::ESTALE,
                || self.open_backend_handle(sb, mnt_path.mnt, ino, own, flags),
            )?,
        };
        let (file, _g) = Self::finish_open(file, _g);
        let file = self.truncate_opened(file, flags)?;
        self.install_opened(file, flags)
    }
}
