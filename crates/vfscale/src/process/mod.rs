//! The process level of the API: a `Process` with credentials, root, cwd,
//! umask and an fd table, and methods named after the syscalls.
//!
//! Every call enters the VFS's epoch guard once and does its whole path work
//! inside it, so walks take no references; only what outlives the call (an
//! open file, a cwd) takes one.
//!
//! Invariants:
//! - `FsContext` (fs_context.rs) owns one dentry and one mount reference
//!   for each of root and cwd. The stat family's fast lookup reads one
//!   dentry pointer alone (`walk_from`, an Acquire load paired with the
//!   swap's release): it needs no mount, and the old dentry stays
//!   allocated under its guard.
//! - A `Process` that is dropped without `exit` exits on drop.
//!
//! Code generation: the helpers of open(O_CREAT), close and unlink (the
//! parent walk, the create and remove steps, the fd install) are
//! `#[inline(always)]`, so each syscall entry point compiles to one
//! function whatever binary links the crate. Left to LLVM, they were
//! inlined where the entry point had a single caller (a small benchmark
//! binary) and were separate calls in the `vfscale` binary, where the same
//! create+close+unlink took 3,786 instructions instead of 3,186 and ~436
//! ns instead of ~390 (docs/PERFORMANCE.md, create-unlink, session 12).

mod anon;
pub mod api;
mod attrs;
mod backend_names;
mod context;
mod dirents;
mod fhandle;
mod fileattr;
mod fs_context;
pub mod handles;
mod io;
mod locks;
mod mount_api;
mod mount_setattr;
mod mountinfo;
mod mounts;
mod names;
mod namespaces;
pub(crate) use names::is_ancestor;
mod notify;
mod open;
mod pivot_root;
mod sockets;
mod space;
mod splice;
mod stamp;
mod syscalls;
mod tmpfile;
mod xattr;

pub use api::{Fd, ProcessApi};
pub use dirents::DirEntryRef;
pub(crate) use fs_context::{FsContext, FsContexts};
pub use handles::{Entry, Fh, Handle, Namespace, SetAttr};

use crate::abi::*;
use crate::cred::perm::{MAY_EXEC, MAY_WRITE};
use crate::cred::Cred;
use crate::dcache::walk::{Found, Parent, PathPtr, WALK_BENEATH, WALK_FOLLOW, WALK_IN_ROOT};
use crate::file::{FdTable, FileRef};
use crate::inode::Inode;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::vfs::VfsInner;
use std::sync::Arc;

/// A process: credentials, root, cwd, umask and descriptors over a VFS.
pub struct Process {
    pub(crate) vfs: Arc<VfsInner>,
    pub(crate) cred: Arc<Cred>,
    pub(crate) fs: Arc<FsContext>,
    pub(crate) files: Arc<FdTable>,
    /// The memory group charged for what this process creates; shared
    /// with `clone_thread` siblings, copied by fork (`reclaim/`).
    pub(crate) group: Arc<crate::reclaim::GroupCell>,
    /// How many of the threads sharing `files` (this process and its
    /// `clone_thread` siblings) have not exited: the one that brings it to
    /// zero releases them (`fs` counts its own users: unshare(CLONE_FS)
    /// gives a thread its own). The Arcs' strong counts cannot say who is
    /// last: two siblings exiting at once both saw the other's reference
    /// and neither released (races.rs `link_vs_last_put` caught the
    /// leaked root and cwd).
    live_threads: Arc<AtomicUsize>,
    exited: bool,
}

impl Process {
    pub(crate) fn new(vfs: Arc<VfsInner>, cred: Cred) -> Process {
        let ns = vfs.init_namespace().clone();
        ns.get();
        // Root and cwd: the namespace's root now (pivot_root may have
        // replaced the one the VFS was built with).
        let root = vfs.namespace_root(&ns, 2);
        let files = Arc::new(FdTable::new(vfs.config.fd_limit));
        let group = crate::reclaim::GroupCell::in_root(&vfs);
        Process {
            fs: FsContext::new(&vfs, root, root, 0o022, ns),
            cred: Arc::new(cred),
            files,
            vfs,
            group,
            live_threads: Arc::new(AtomicUsize::new(1)),
            exited: false,
        }
    }

    /// The process's credentials.
    pub fn cred(&self) -> &Cred {
        &self.cred
    }

    /// Sets the descriptor limit (RLIMIT_NOFILE).
    pub fn set_fd_limit(&self, limit: usize) {
        self.files.set_limit(limit);
    }

    pub fn fd_limit(&self) -> usize {
        self.files.limit()
    }

    /// Charges objects this thread creates from now on to our group.
    #[inline]
    pub(crate) fn charge_here(&self) {
        self.vfs.enter_group(self.group.get());
    }

    /// The namespace this process lives in.
    pub fn vfs(&self) -> crate::Vfs {
        crate::Vfs {
            inner: self.vfs.clone(),
        }
    }

    fn umask_bits(&self) -> u32 {
        // Relaxed: a plain value; no data is published through it.
        self.fs.umask.load(Ordering::Relaxed)
    }

    /// The start location for `dirfd` (a referenced file's location stays
    /// valid under the caller's guard even if the fd is closed meanwhile).
    fn dirfd_path(&self, dirfd: Fd, cwd: PathPtr) -> SysResult<(PathPtr, *const Inode)> {
        if dirfd == AT_FDCWD {
            // SAFETY: the cwd is referenced by the fs context; the caller's
            // guard keeps it allocated.
            return Ok((cwd, unsafe { &*cwd.dentry }.inode_ptr()));
        }
        let f = self.files.get(&self.vfs, dirfd)?;
        let r = (
            PathPtr {
                mnt: f.file().mnt,
                dentry: f.file().dentry,
            },
            f.file().inode,
        );
        // The pointers outlive the reference: an anonymous node this puts
        // last must wait for the guard (anon/mod.rs).
        self.vfs.fput_in_guard(f);
        Ok(r)
    }

    /// Resolves `path` relative to `dirfd` with *at-style flags
    /// (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH). Caller holds a guard.
    fn lookup_at(
        &self,
        cred: &Cred,
        dirfd: Fd,
        path: &[u8],
        at_flags: i32,
        walk_flags: u32,
    ) -> SysResult<Found> {
        let (root, cwd) = self.fs.get();
        if path.is_empty() {
            if at_flags & AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            let (p, inode) = self.dirfd_path(dirfd, cwd)?;
            // SAFETY: as in `dirfd_path`.
            let seq = unsafe { &*p.dentry }.seq.read_begin();
            return Ok(Found {
                path: p,
                seq,
                inode,
            });
        }
        let start = if path[0] == b'/' {
            cwd
        } else {
            self.start_dir(dirfd, cwd)?
        };
        let follow = if at_flags & AT_SYMLINK_NOFOLLOW != 0 {
            0
        } else {
            WALK_FOLLOW
        };
        let flags = walk_flags | follow;
        if let Some(r) = self.vfs.walk_fast_only(cred, root, start, path, flags) {
            return r;
        }
        self.lookup_at_slow(cred, dirfd, path, flags)
    }

    /// The stat family's fast lookup of `path` (relative to `dirfd`, with
    /// *at-style flags): what `lookup_at` would answer, when every
    /// component is a plain cached name (`walk_fast_from`); `None` when
    /// `lookup_at` must run (an empty path, a relative path from another
    /// descriptor, anything the fast walk declines). Reads the start dentry
    /// alone, without the fs context's seqcount: the result's mount is not
    /// known, only its dentry and inode. A positive result unless
    /// `walk_flags` allow a negative one. Caller holds a guard.
    #[inline(always)]
    fn lookup_fast(
        &self,
        cred: &Cred,
        dirfd: Fd,
        path: &[u8],
        at_flags: i32,
        walk_flags: u32,
    ) -> Option<SysResult<crate::dcache::walk::FastHit>> {
        // Empty or too long: one unsigned compare.
        if path.len().wrapping_sub(1) >= PATH_MAX - 1 {
            return None;
        }
        let absolute = path[0] == b'/';
        if !absolute && dirfd != AT_FDCWD {
            return None;
        }
        let follow = if at_flags & AT_SYMLINK_NOFOLLOW != 0 {
            0
        } else {
            WALK_FOLLOW
        };
        let from = self.fs.walk_from(absolute);
        self.vfs
            .walk_fast_from(cred, from, path, absolute, walk_flags | follow)
    }

    /// The full walk of `lookup_at` (whose fast path declined), charging
    /// what it creates (negative dentries) to our group. Out of line and
    /// re-reading root and start, so the fast path keeps fewer values live
    /// than a plain `walk` would (the stat instruction count).
    #[cold]
    #[inline(never)]
    fn lookup_at_slow(&self, cred: &Cred, dirfd: Fd, path: &[u8], flags: u32) -> SysResult<Found> {
        self.charge_here();
        let (root, cwd) = self.fs.get();
        let start = if path[0] == b'/' {
            cwd
        } else {
            self.start_dir(dirfd, cwd)?
        };
        self.vfs.walk_slow(cred, root, start, path, flags)
    }

    /// The directory a relative path starts from (ENOTDIR if `dirfd` is not
    /// a directory).
    fn start_dir(&self, dirfd: Fd, cwd: PathPtr) -> SysResult<PathPtr> {
        let (p, inode) = self.dirfd_path(dirfd, cwd)?;
        // SAFETY: as in `dirfd_path`.
        if inode.is_null() || !unsafe { &*inode }.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(p)
    }

    /// Splits `path` into its parent directory and last component.
    #[inline(always)]
    fn parent_at<'p>(&self, dirfd: Fd, path: &'p [u8]) -> SysResult<Parent<'p>> {
        self.parent_resolving(dirfd, path, 0)
    }

    /// `parent_at` under openat2's resolve flags (`WALK_RESOLVE` bits).
    #[inline(always)]
    fn parent_resolving<'p>(
        &self,
        dirfd: Fd,
        path: &'p [u8],
        resolve: u32,
    ) -> SysResult<Parent<'p>> {
        let (root, start) = self.walk_ends(dirfd, path, resolve)?;
        // A parent walk precedes creating names: charge them to our group.
        self.charge_here();
        self.vfs.walk_parent(&self.cred, root, start, path, resolve)
    }

    /// The root and the start of a walk of `path` from `dirfd`. Under
    /// openat2's RESOLVE_BENEATH or RESOLVE_IN_ROOT the dirfd's directory
    /// is both (Linux's path_init for scoped lookups; an absolute path
    /// beneath a dirfd is EXDEV before the dirfd is even looked at).
    #[inline(always)]
    fn walk_ends(&self, dirfd: Fd, path: &[u8], resolve: u32) -> SysResult<(PathPtr, PathPtr)> {
        let (root, cwd) = self.fs.get();
        let absolute = path.first() == Some(&b'/');
        if resolve & (WALK_BENEATH | WALK_IN_ROOT) != 0 {
            if absolute && resolve & WALK_BENEATH != 0 {
                return Err(Errno::EXDEV);
            }
            let dir = self.start_dir(dirfd, cwd)?;
            return Ok((dir, dir));
        }
        let start = if absolute || path.is_empty() {
            cwd
        } else {
            self.start_dir(dirfd, cwd)?
        };
        Ok((root, start))
    }

    /// A walk of `path` from `dirfd` under openat2's resolve flags (in
    /// `flags`, with the walk's own). Caller holds a guard.
    fn lookup_resolving(&self, dirfd: Fd, path: &[u8], flags: u32) -> SysResult<Found> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let (root, start) = self.walk_ends(dirfd, path, flags)?;
        self.charge_here();
        self.vfs.walk(&self.cred, root, start, path, flags)
    }

    /// Write and search permission on a directory (to add or remove names)
    /// for a change made in memory: EROFS on a backend-served instance,
    /// whose changes go through `backend_names.rs` instead.
    fn may_modify_dir(&self, dir: &Inode) -> SysResult<()> {
        refuse_backend_change(dir)?;
        self.may_write_dir(dir)
    }

    /// Write and search permission on a directory.
    fn may_write_dir(&self, dir: &Inode) -> SysResult<()> {
        self.may_write_dir_as(dir, dir.perm_attr())
    }

    /// `may_write_dir` from a (mode, uid, gid) copy of the directory's
    /// attributes that the caller read before taking the directory lock:
    /// create and unlink read them there so that the critical section does
    /// not pull the directory's attribute line, which the previous holder's
    /// name change stamped (`stamp.rs`). It checks exactly what a read
    /// under the lock would: chmod and chown of a directory do not take its
    /// lock, so either read may see the mode before or after a racing one.
    #[inline(always)]
    fn may_write_dir_as(&self, dir: &Inode, perm: (u32, u32, u32)) -> SysResult<()> {
        dir.permission_as(&self.cred, perm, MAY_WRITE | MAY_EXEC)
    }

    fn fd_file(&self, fd: Fd) -> SysResult<FileRef> {
        self.files.get(&self.vfs, fd)
    }

    /// A file that must not be O_PATH (read, write, fstatfs... on O_PATH
    /// descriptors give EBADF).
    fn fd_file_nopath(&self, fd: Fd) -> SysResult<FileRef> {
        let f = self.fd_file(fd)?;
        if f.file().is_path() {
            self.vfs.fput(f);
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    /// Runs `op` on the file at `fd` and puts the reference afterwards.
    fn with_file<R>(
        &self,
        fd: Fd,
        allow_path: bool,
        op: impl FnOnce(&crate::file::OpenFile) -> SysResult<R>,
    ) -> SysResult<R> {
        let f = if allow_path {
            self.fd_file(fd)?
        } else {
            self.fd_file_nopath(fd)?
        };
        let r = op(f.file());
        self.vfs.fput(f);
        r
    }

    fn release_everything(&mut self) {
        if self.exited {
            return;
        }
        self.exited = true;
        let _batch = self.vfs.batch_scope();
        self.leave_files(&self.files, &self.live_threads);
        self.fs.put(&self.vfs);
        self.vfs.op_end();
    }

    /// This thread stops using fd table `files`, shared by `live` threads:
    /// the last one closes every descriptor in it (put_files_struct).
    pub(crate) fn leave_files(&self, files: &FdTable, live: &AtomicUsize) {
        // AcqRel: the last thread's release reads the table after every
        // sibling's last use of it (each sibling's decrement releases its
        // uses; the last one's acquires them all).
        if live.fetch_sub(1, Ordering::AcqRel) == 1 {
            let all = files.take_all();
            for f in &all {
                self.forget_posix_locks_of(files, f);
            }
            self.vfs.fput_many(all);
        }
    }

    /// syncfs(2): completes every thread's deferred frees; on a
    /// backend-served instance, syncs the backend's filesystem too.
    pub(crate) fn sys_syncfs(&self, fd: Fd) -> SysResult<()> {
        // fdget: O_PATH descriptors are EBADF.
        let f = self.fd_file_nopath(fd)?;
        // SAFETY: an inode's superblock outlives it; our reference keeps
        // the inode.
        let sb = unsafe { &*f.file().inode().sb };
        self.vfs.flush_all();
        let r = if sb.backend_served {
            sb.fs.sync_fs(sb)
        } else {
            Ok(())
        };
        self.vfs.fput(f);
        r
    }
}

/// EROFS for a change on a backend-served instance (passthrough) that is
/// not routed to the backend (xattrs, fallocate), or for an in-memory path
/// reached by mistake: making it in memory would put state in the cache
/// the host lacks.
pub(crate) fn refuse_backend_change(inode: &Inode) -> SysResult<()> {
    // SAFETY: an inode's superblock outlives it.
    if unsafe { &*inode.sb }.backend_served {
        return Err(Errno::EROFS);
    }
    Ok(())
}

impl Drop for Process {
    fn drop(&mut self) {
        self.release_everything();
        // A namespace view (handles.rs) ends its call here.
        self.vfs.op_end();
    }
}
