//! The namespace-level API: operations addressed by pinned (mount, dentry)
//! handles and a name, with the caller's credentials passed per call — the
//! shape a FUSE server (or an NFS-style server) needs, where the kernel
//! names objects by node id, not by path.
//!
//! Every call runs the same code as the `*at` syscalls: it builds a
//! throw-away `Process` *view* whose cwd is the handle, whose root is the
//! namespace root (or, for rename and link, the second directory), whose
//! credentials are the request's, whose umask is the one the creating calls
//! pass (a FUSE server asks the kernel to leave it to the filesystem,
//! FUSE_DONT_MASK, so a directory's default ACL can replace it; 0 for
//! callers that applied it themselves) and 0 elsewhere, and whose
//! descriptor table is the namespace's
//! shared table of open files. The view borrows its root and cwd: it is
//! marked exited, so dropping it puts nothing.
//!
//! Invariants:
//! - A `Handle` owns one dentry and one mount reference; a positive dentry
//!   keeps its inode, so a handle's inode is never freed under it (an
//!   unlinked file stays readable through its handle, as in Linux).
//! - Names passed here are single components: never empty, never holding
//!   '/' (EINVAL). The view's root therefore only serves as the start of the
//!   absolute second path of rename and link ("/" + new name).
//! - Open files live in the namespace's `FdTable`; a file handle (`Fh`) is
//!   a descriptor there, so a stale or forged one is EBADF, never a
//!   dangling pointer.

use super::dirents::DirEntryRef;
use super::{FsContext, Process};
use crate::abi::*;
use crate::cred::Cred;
use crate::dcache::walk::{Found, PathPtr};
use crate::file::FdTable;
use crate::sync::atomic::AtomicUsize;
use crate::vfs::VfsInner;
use std::sync::Arc;

/// A file handle: a descriptor in the namespace's open-file table.
pub type Fh = u64;

/// Open files one namespace may hold at once.
const NAMESPACE_FILE_LIMIT: usize = 1 << 22;

/// A pinned location: one dentry and one mount reference, released on drop.
pub struct Handle {
    path: PathPtr,
    vfs: Arc<VfsInner>,
}

// SAFETY: the pointers are references the handle owns; the objects are
// shared-state-safe (atomics and locks) and may be released from any thread.
unsafe impl Send for Handle {}
// SAFETY: as above; a shared handle only reads through its pointers.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        self.vfs.dput(self.path.dentry);
        self.vfs.mntput(self.path.mnt);
        self.vfs.op_end();
    }
}

impl Handle {
    /// Takes references on a location found under the caller's guard;
    /// `None` if the dentry changed since `seq` or the mount is dying.
    fn pin(vfs: &Arc<VfsInner>, found: &Found) -> Option<Handle> {
        if !vfs.dget_validated(found.path.dentry, found.seq) {
            return None;
        }
        if !vfs.mntget_rcu(found.path.mnt) {
            vfs.dput(found.path.dentry);
            return None;
        }
        Some(Handle {
            path: found.path,
            vfs: vfs.clone(),
        })
    }

    fn inode(&self) -> &crate::inode::Inode {
        // SAFETY: a referenced positive dentry keeps its inode; handles are
        // only made from positive dentries.
        unsafe { &*(*self.path.dentry).inode_ptr() }
    }

    /// The object's file type (`mode & S_IFMT`, fixed for its life).
    pub fn file_type(&self) -> u32 {
        self.inode().file_type()
    }

    /// The attributes of the pinned object.
    pub fn stat(&self) -> Stat {
        let inode = self.inode();
        inode.stat()
    }

    /// Another reference to the same location.
    pub fn dup(&self) -> Handle {
        self.vfs.dget(self.path.dentry);
        self.vfs.mntget(self.path.mnt);
        Handle {
            path: self.path,
            vfs: self.vfs.clone(),
        }
    }
}

/// A looked-up or created object: its handle and its attributes.
pub struct Entry {
    pub handle: Handle,
    pub stat: Stat,
}

/// The attribute changes of one setattr call (None: unchanged), applied in
/// Linux's notify_change order: owner, mode, size, times.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    /// `Timespec::NOW` for "now".
    pub atime: Option<Timespec>,
    pub mtime: Option<Timespec>,
    /// The open file the change comes through (ftruncate), if any.
    pub fh: Option<Fh>,
}

/// A namespace served by handle: the VFS, its root and a shared table of
/// open files.
pub struct Namespace {
    vfs: Arc<VfsInner>,
    files: Arc<FdTable>,
    root: Handle,
    /// The memory group its calls are charged to (the root group).
    group: Arc<crate::reclaim::GroupCell>,
}

fn check_name(name: &[u8]) -> SysResult<()> {
    if name.is_empty() || name.contains(&b'/') {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn fh_fd(fh: Fh) -> SysResult<Fd> {
    Fd::try_from(fh).map_err(|_| Errno::EBADF)
}

impl Namespace {
    /// Serves `vfs` from its root mount's root.
    pub fn new(vfs: &crate::Vfs) -> Namespace {
        let inner = vfs.inner.clone();
        let group = crate::reclaim::GroupCell::in_root(&inner);
        // The first namespace's root now (pivot_root may have replaced the
        // one the VFS was built with); the VFS keeps a use of it.
        let path = inner.namespace_root(inner.init_namespace(), 1);
        let files = FdTable::new(NAMESPACE_FILE_LIMIT);
        Namespace {
            root: Handle {
                path,
                vfs: inner.clone(),
            },
            vfs: inner,
            files: Arc::new(files),
            group,
        }
    }

    /// The root location.
    pub fn root(&self) -> &Handle {
        &self.root
    }

    /// The view that runs one call: cwd `cwd`, root `root`, credentials
    /// `cred`, umask 0. Borrows everything; puts nothing on drop.
    fn view(&self, cred: &Arc<Cred>, root: &Handle, cwd: &Handle) -> Process {
        self.view_masked(cred, root, cwd, 0)
    }

    /// `view` with the caller's `umask`, for the creating calls.
    fn view_masked(&self, cred: &Arc<Cred>, root: &Handle, cwd: &Handle, umask: u32) -> Process {
        Process {
            vfs: self.vfs.clone(),
            cred: cred.clone(),
            fs: Arc::new(FsContext::view(
                root.path,
                cwd.path,
                umask & 0o777,
                self.vfs.init_namespace().clone(),
            )),
            files: self.files.clone(),
            group: self.group.clone(),
            live_threads: Arc::new(AtomicUsize::new(0)),
            exited: true,
        }
    }

    fn at(&self, cred: &Arc<Cred>, cwd: &Handle) -> Process {
        self.view(cred, &self.root, cwd)
    }

    /// Looks `name` up in `dir` (no symlink following; a mountpoint gives
    /// the mounted root) and pins the result.
    pub fn lookup(&self, cred: &Arc<Cred>, dir: &Handle, name: &[u8]) -> SysResult<Entry> {
        check_name(name)?;
        let v = self.at(cred, dir);
        let _g = self.vfs.collector.enter();
        loop {
            let found = v.lookup_at(cred, AT_FDCWD, name, AT_SYMLINK_NOFOLLOW, 0)?;
            if found.inode.is_null() {
                return Err(Errno::ENOENT);
            }
            if let Some(handle) = Handle::pin(&self.vfs, &found) {
                let stat = handle.stat();
                return Ok(Entry { handle, stat });
            }
            // The dentry changed between the walk and the pin: walk again.
        }
    }

    /// The attributes of `h`.
    pub fn getattr(&self, h: &Handle) -> Stat {
        h.stat()
    }

    /// Changes attributes with the permission rules of chown, chmod,
    /// truncate/ftruncate and utimensat; returns the new attributes.
    pub fn setattr(&self, cred: &Arc<Cred>, h: &Handle, set: &SetAttr) -> SysResult<Stat> {
        let v = self.at(cred, h);
        let inode = h.inode();
        // SAFETY: the handle references its mount.
        let mnt = unsafe { &*h.path.mnt };
        let d = h.path.dentry;
        if set.uid.is_some() || set.gid.is_some() {
            v.chown_inode(
                mnt,
                d,
                inode,
                set.uid.unwrap_or(u32::MAX),
                set.gid.unwrap_or(u32::MAX),
            )?;
        }
        if let Some(mode) = set.mode {
            v.chmod_inode(mnt, d, inode, mode & S_IALLUGO)?;
        }
        if let Some(size) = set.size {
            let size = i64::try_from(size).map_err(|_| Errno::EINVAL)?;
            match set.fh {
                Some(fh) => v.sys_ftruncate(fh_fd(fh)?, size)?,
                None => v.truncate_at(mnt, d, inode, size as u64)?,
            }
        }
        if set.atime.is_some() || set.mtime.is_some() {
            let at = set.atime.unwrap_or(Timespec::OMIT);
            let mt = set.mtime.unwrap_or(Timespec::OMIT);
            v.utimes_inode(mnt, d, inode, Some([at, mt]))?;
        }
        Ok(h.stat())
    }

    /// mknod: regular files, FIFOs, sockets and (root) devices; `umask`
    /// as the creating process's (replaced by a default ACL).
    pub fn mknod(
        &self,
        cred: &Arc<Cred>,
        dir: &Handle,
        name: &[u8],
        mode: u32,
        rdev: u64,
        umask: u32,
    ) -> SysResult<Entry> {
        check_name(name)?;
        self.view_masked(cred, &self.root, dir, umask)
            .sys_mknodat(AT_FDCWD, name, mode, rdev)?;
        self.lookup(cred, dir, name)
    }

    /// mkdir, with `umask` as `mknod`'s.
    pub fn mkdir(
        &self,
        cred: &Arc<Cred>,
        dir: &Handle,
        name: &[u8],
        mode: u32,
        umask: u32,
    ) -> SysResult<Entry> {
        check_name(name)?;
        self.view_masked(cred, &self.root, dir, umask)
            .sys_mkdirat(AT_FDCWD, name, mode)?;
        self.lookup(cred, dir, name)
    }

    pub fn symlink(
        &self,
        cred: &Arc<Cred>,
        dir: &Handle,
        name: &[u8],
        target: &[u8],
    ) -> SysResult<Entry> {
        check_name(name)?;
        self.at(cred, dir).sys_symlinkat(target, AT_FDCWD, name)?;
        self.lookup(cred, dir, name)
    }

    /// A new name `newname` in `newdir` for the object at `h`.
    pub fn link(
        &self,
        cred: &Arc<Cred>,
        h: &Handle,
        newdir: &Handle,
        newname: &[u8],
    ) -> SysResult<Entry> {
        check_name(newname)?;
        let second = absolute(newname);
        self.view(cred, newdir, h)
            .sys_linkat(AT_FDCWD, b"", AT_FDCWD, &second, AT_EMPTY_PATH)?;
        self.lookup(cred, newdir, newname)
    }

    pub fn unlink(&self, cred: &Arc<Cred>, dir: &Handle, name: &[u8]) -> SysResult<()> {
        check_name(name)?;
        self.at(cred, dir).sys_unlinkat(AT_FDCWD, name, 0)
    }

    pub fn rmdir(&self, cred: &Arc<Cred>, dir: &Handle, name: &[u8]) -> SysResult<()> {
        check_name(name)?;
        self.at(cred, dir)
            .sys_unlinkat(AT_FDCWD, name, AT_REMOVEDIR)
    }

    /// renameat2 with RENAME_NOREPLACE / RENAME_EXCHANGE / RENAME_WHITEOUT.
    #[allow(clippy::too_many_arguments)]
    pub fn rename(
        &self,
        cred: &Arc<Cred>,
        dir: &Handle,
        name: &[u8],
        newdir: &Handle,
        newname: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        check_name(name)?;
        check_name(newname)?;
        let second = absolute(newname);
        self.view(cred, newdir, dir)
            .sys_renameat2(AT_FDCWD, name, AT_FDCWD, &second, flags)
    }

    /// The target of the symlink at `h` (EINVAL if it is not one).
    pub fn readlink(&self, cred: &Arc<Cred>, h: &Handle) -> SysResult<Vec<u8>> {
        if h.inode().file_type() != S_IFLNK {
            return Err(Errno::EINVAL);
        }
        let mut buf = vec![0u8; PATH_MAX];
        let n = self.at(cred, h).sys_readlinkat(AT_FDCWD, b"", &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// access(2) for `mask` (R_OK | W_OK | X_OK, or F_OK).
    pub fn access(&self, cred: &Arc<Cred>, h: &Handle, mask: i32) -> SysResult<()> {
        self.at(cred, h)
            .sys_faccessat(AT_FDCWD, b"", mask, AT_EMPTY_PATH | AT_EACCESS)
    }

    /// statfs of the filesystem holding `h`.
    pub fn statfs(&self, h: &Handle) -> Statfs {
        // SAFETY: the handle holds its mount.
        unsafe { &*h.path.mnt }.statfs()
    }

    /// Opens the object at `h` with open(2)'s permission checks and flags
    /// (O_CREAT, O_EXCL and O_NOCTTY are ignored; O_TRUNC truncates).
    pub fn open(&self, cred: &Arc<Cred>, h: &Handle, flags: i32) -> SysResult<Fh> {
        let flags = flags & !(O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC);
        let v = self.at(cred, h);
        let guard = self.vfs.collector.enter();
        let file = loop {
            // SAFETY: the handle references its dentry.
            let seq = unsafe { &*h.path.dentry }.seq.read_begin();
            let found = Found {
                path: h.path,
                seq,
                inode: h.inode() as *const _,
            };
            if let Some(f) = v.open_found(&found, flags, false)? {
                break f;
            }
        };
        let (file, _guard) = Process::finish_open(file, guard);
        let file = v.truncate_opened(file, flags)?;
        match self.files.install(file, false, 0) {
            Ok(fd) => Ok(fd as Fh),
            Err((e, file)) => {
                self.vfs.fput(file);
                Err(e)
            }
        }
    }

    /// Creates (or, without O_EXCL, opens) `name` in `dir` and opens it;
    /// `umask` as `mknod`'s.
    pub fn create(
        &self,
        cred: &Arc<Cred>,
        dir: &Handle,
        name: &[u8],
        flags: i32,
        mode: u32,
        umask: u32,
    ) -> SysResult<(Entry, Fh)> {
        check_name(name)?;
        let flags = (flags | O_CREAT | O_NOFOLLOW) & !(O_NOCTTY | O_CLOEXEC);
        let fd = self
            .view_masked(cred, &self.root, dir, umask)
            .sys_openat(AT_FDCWD, name, flags, mode)?;
        let pinned = {
            let f = self.files.get(&self.vfs, fd)?;
            let (mnt, dentry) = (f.file().mnt, f.file().dentry);
            // The open file references both, so plain gets are safe.
            self.vfs.dget(dentry);
            self.vfs.mntget(mnt);
            self.vfs.fput(f);
            Handle {
                path: PathPtr { mnt, dentry },
                vfs: self.vfs.clone(),
            }
        };
        let stat = pinned.stat();
        Ok((
            Entry {
                handle: pinned,
                stat,
            },
            fd as Fh,
        ))
    }

    /// Closes an open file handle.
    pub fn release(&self, fh: Fh) -> SysResult<()> {
        // Not a view call (whose drop ends it): end it here.
        let _end = self.vfs.call_end();
        let f = self.files.remove(fh_fd(fh)?)?;
        self.vfs.fput(f);
        Ok(())
    }

    /// pread on an open file (credentials are the opener's, as for fds).
    pub fn read(&self, fh: Fh, offset: u64, buf: &mut [u8]) -> SysResult<usize> {
        let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        self.io_view().sys_pread(fh_fd(fh)?, buf, off)
    }

    /// A write at `offset` on an open file, or at its end when `append`:
    /// the caller's view of the file's status, which may differ from the
    /// flags it was opened with (a FUSE kernel keeps F_SETFL's changes to
    /// itself and sends the status with each write).
    pub fn write(
        &self,
        cred: &Arc<Cred>,
        fh: Fh,
        offset: u64,
        data: &[u8],
        append: bool,
    ) -> SysResult<usize> {
        let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        self.at(cred, &self.root)
            .sys_pwrite_appending(fh_fd(fh)?, data, off, append)
    }

    pub fn fsync(&self, fh: Fh, datasync: bool) -> SysResult<()> {
        self.io_view().sys_fsync(fh_fd(fh)?, datasync)
    }

    /// lseek on an open file (SEEK_DATA / SEEK_HOLE included).
    pub fn lseek(&self, fh: Fh, offset: i64, whence: i32) -> SysResult<i64> {
        self.io_view().sys_lseek(fh_fd(fh)?, offset, whence)
    }

    fn io_view(&self) -> Process {
        thread_local! {
            static ROOT_CRED: Arc<Cred> = Arc::new(Cred::root());
        }
        ROOT_CRED.with(|c| self.at(c, &self.root))
    }

    /// Lists the directory open at `fh` from `cookie` (0 = start; "." and
    /// ".." come first) until `emit` returns false or the listing ends.
    /// Cookies are stable: an entry present for the whole listing is
    /// returned exactly once, however the caller resumes.
    pub fn readdir(
        &self,
        fh: Fh,
        cookie: u64,
        emit: impl FnMut(&DirEntryRef<'_>) -> bool,
    ) -> SysResult<()> {
        let _end = self.vfs.call_end();
        let f = self.files.get(&self.vfs, fh_fd(fh)?)?;
        let r = self.vfs.list_dir(f.file(), cookie, emit).map(|_| ());
        self.vfs.fput(f);
        r
    }

    /// setxattr on the object at `h` (XATTR_CREATE / XATTR_REPLACE).
    pub fn setxattr(
        &self,
        cred: &Arc<Cred>,
        h: &Handle,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        super::xattr::set_inode(cred, h.inode(), name, value, flags)
            .inspect(|()| super::xattr::xattr_changed(&self.vfs, h.path.dentry, h.inode(), name))
    }

    /// getxattr: the value's size when `buf` is empty.
    pub fn getxattr(
        &self,
        cred: &Arc<Cred>,
        h: &Handle,
        name: &[u8],
        buf: &mut [u8],
    ) -> SysResult<usize> {
        super::xattr::get_inode(cred, h.inode(), name, buf)
    }

    /// listxattr: NUL-terminated names; the size when `buf` is empty.
    pub fn listxattr(&self, cred: &Arc<Cred>, h: &Handle, buf: &mut [u8]) -> SysResult<usize> {
        super::xattr::list_inode(cred, h.inode(), buf)
    }

    pub fn removexattr(&self, cred: &Arc<Cred>, h: &Handle, name: &[u8]) -> SysResult<()> {
        super::xattr::remove_inode(cred, h.inode(), name)
            .inspect(|()| super::xattr::xattr_changed(&self.vfs, h.path.dentry, h.inode(), name))
    }

    /// fallocate on an open file by `cred` (whose capabilities decide
    /// whether set-user-ID and set-group-ID are cleared, as for a write).
    pub fn fallocate(
        &self,
        cred: &Arc<Cred>,
        fh: Fh,
        mode: i32,
        offset: u64,
        len: u64,
    ) -> SysResult<()> {
        let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        let len = i64::try_from(len).map_err(|_| Errno::EINVAL)?;
        self.at(cred, &self.root)
            .sys_fallocate(fh_fd(fh)?, mode, off, len)
    }

    /// copy_file_range between two open files at explicit offsets.
    pub fn copy_file_range(
        &self,
        cred: &Arc<Cred>,
        fh_in: Fh,
        off_in: u64,
        fh_out: Fh,
        off_out: u64,
        len: u64,
    ) -> SysResult<usize> {
        let mut oi = i64::try_from(off_in).map_err(|_| Errno::EINVAL)?;
        let mut oo = i64::try_from(off_out).map_err(|_| Errno::EINVAL)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.at(cred, &self.root).sys_copy_file_range(
            fh_fd(fh_in)?,
            Some(&mut oi),
            fh_fd(fh_out)?,
            Some(&mut oo),
            len,
            0,
        )
    }

    /// FS_IOC_GETFLAGS on an open file.
    pub fn getflags(&self, cred: &Arc<Cred>, fh: Fh) -> SysResult<u32> {
        self.at(cred, &self.root).fs_ioc_getflags(fh_fd(fh)?)
    }

    /// FS_IOC_SETFLAGS on an open file, with `cred`'s rights.
    pub fn setflags(&self, cred: &Arc<Cred>, fh: Fh, flags: u32) -> SysResult<()> {
        self.at(cred, &self.root).fs_ioc_setflags(fh_fd(fh)?, flags)
    }

    /// FS_IOC_FSGETXATTR on an open file.
    pub fn fsgetxattr(&self, cred: &Arc<Cred>, fh: Fh) -> SysResult<FsXattr> {
        self.at(cred, &self.root).fs_ioc_fsgetxattr(fh_fd(fh)?)
    }

    /// FS_IOC_FSSETXATTR on an open file, with `cred`'s rights.
    pub fn fssetxattr(&self, cred: &Arc<Cred>, fh: Fh, attr: &FsXattr) -> SysResult<()> {
        self.at(cred, &self.root)
            .fs_ioc_fssetxattr(fh_fd(fh)?, attr)
    }

    /// True if every change to `h`'s object goes through this VFS, so a
    /// cache of it kept elsewhere stays exact by listening to the
    /// observers of `watch.rs`; false for a backend-served instance
    /// (passthrough), whose host directory can change behind vfscale.
    pub fn changes_are_observed(&self, h: &Handle) -> bool {
        // SAFETY: the handle references its dentry; a dentry's superblock
        // outlives it.
        let sb = unsafe { &*(*h.path.dentry).sb };
        !sb.backend_served
    }

    /// Makes `h`'s object findable by inode number (`exported`) for as
    /// long as it keeps a name or is in use, by registering it in its
    /// instance's export table as name_to_handle_at does: for servers whose
    /// clients keep handles to objects the server no longer pins (FUSE's
    /// export support, vfscale-fuse/src/nodes.rs). EOPNOTSUPP for an
    /// instance without a handle scheme (passthrough).
    pub fn export(&self, h: &Handle) -> SysResult<()> {
        let _g = self.vfs.collector.enter();
        // SAFETY: the handle references its dentry; a dentry's superblock
        // outlives it.
        let d = unsafe { &*h.path.dentry };
        let sb = unsafe { &*d.sb };
        if !sb.fs.dcache_is_authoritative() {
            return Err(Errno::EOPNOTSUPP);
        }
        self.at(&Arc::new(Cred::root()), h)
            .export_dentry(d, h.inode().ino())
    }

    /// The object with inode number `ino` on the root mount's instance,
    /// pinned, if it was exported (`export`, name_to_handle_at) and still
    /// has a name or is in use (an unlinked file kept open); ESTALE
    /// otherwise.
    pub fn exported(&self, ino: u64) -> SysResult<Entry> {
        let _g = self.vfs.collector.enter();
        let mnt = self.root.path.mnt;
        // SAFETY: the namespace pins its root mount, whose superblock
        // outlives it.
        let sb = unsafe { &*mnt }.sb();
        loop {
            let (dentry, seq) = sb.exports.find_alias(ino).ok_or(Errno::ESTALE)?;
            // SAFETY: the guard keeps an alias in the table allocated
            // (fs/export.rs invariants).
            let inode = unsafe { &*dentry }.inode_ptr();
            if inode.is_null() {
                return Err(Errno::ESTALE);
            }
            let found = Found {
                path: PathPtr { mnt, dentry },
                seq,
                inode,
            };
            if let Some(handle) = Handle::pin(&self.vfs, &found) {
                let stat = handle.stat();
                return Ok(Entry { handle, stat });
            }
            // Renamed or removed since read: look again.
        }
    }

    /// A process over the same namespace with credentials `cred` (for
    /// embedders and tests that mix path calls with handle calls).
    pub fn process(&self, cred: Cred) -> Process {
        Process::new(self.vfs.clone(), cred)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        self.vfs.fput_many(self.files.take_all());
        self.vfs.op_end();
    }
}

fn absolute(name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(name.len() + 1);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}
