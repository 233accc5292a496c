//! openat, close, close_range, dup, dup2, dup3.

use super::Process;
use crate::abi::*;
use crate::anon::pipe::PartnerWait;
use crate::cred::perm::{may_open_existing_in_sticky, MAY_READ, MAY_WRITE};
use crate::dcache::dentry::D_MOUNTED;
use crate::dcache::name::NameKey;
use crate::dcache::walk::{
    check_path, follow_accessed, symlink_jump_allowed, walk_resolve_flags, Found, Last, Parent,
    PathPtr, WALK_BENEATH, WALK_DIRECTORY, WALK_FOLLOW, WALK_IN_ROOT, WALK_NO_SYMLINKS,
    WALK_NO_XDEV,
};
use crate::file::{
    FMODE_BACKEND, FMODE_CREATED, FMODE_PATH, FMODE_PIPE, FMODE_READ, FMODE_WRITE, FMODE_WRITER,
};
use crate::inode::{Inode, InodeBody};
use crate::mount::flags::{MNT_NODEV, MNT_NOSYMFOLLOW};
use crate::mount::WriteAccess;
use crate::sync::epoch::Guard;
use crate::sync::lock::RwLock;
use std::sync::Arc;

/// Status flags an open file keeps (visible through F_GETFL): Linux's
/// f_flags are the open flags less O_CREAT, O_EXCL, O_NOCTTY, O_TRUNC and
/// O_CLOEXEC, plus O_LARGEFILE (forced on 64-bit).
const KEPT_STATUS: i32 = O_ACCMODE
    | O_APPEND
    | O_NONBLOCK
    | O_DSYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_NOATIME
    | O_SYNC
    | O_ASYNC
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_PATH;

/// What an O_PATH open keeps (build_open_how: O_PATH beats everything
/// else, O_LARGEFILE included).
const KEPT_PATH_STATUS: i32 = O_PATH | O_DIRECTORY | O_NOFOLLOW;

/// The status flags (F_GETFL) of a file opened with `flags`.
pub(crate) fn open_status(flags: i32) -> i32 {
    if flags & O_PATH != 0 {
        flags & KEPT_PATH_STATUS
    } else {
        (flags & KEPT_STATUS) | O_LARGEFILE
    }
}

/// `fmode` with `FMODE_BACKEND` if a backend-served instance now holds its
/// file open for the description being made (`Filesystem::open`).
#[inline(always)]
pub(super) fn backend_open(inode: &Inode, fmode: u32) -> u32 {
    // SAFETY: an inode's superblock outlives it.
    let sb = unsafe { &*inode.sb };
    if !sb.backend_served {
        return fmode;
    }
    #[cold]
    fn held(sb: &crate::fs::SuperBlock, inode: &Inode, fmode: u32) -> u32 {
        if sb.fs.open(sb, inode, fmode) {
            fmode | FMODE_BACKEND
        } else {
            fmode
        }
    }
    held(sb, inode, fmode)
}

/// Where an O_CREAT open's trailing symlinks resolve: the walk's root
/// (the process root, or the dirfd's directory under RESOLVE_BENEATH or
/// RESOLVE_IN_ROOT) and openat2's resolve flags (`WALK_RESOLVE` bits).
#[derive(Clone, Copy)]
struct Scope {
    /// None: the process root, read when a link needs it.
    root: Option<PathPtr>,
    resolve: u32,
}

impl Scope {
    fn root(&self, p: &Process) -> PathPtr {
        self.root.unwrap_or_else(|| p.fs.get().0)
    }
}

impl Process {
    #[inline(always)]
    pub(crate) fn sys_openat(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mode: u32,
    ) -> SysResult<Fd> {
        self.sys_open_resolving(dirfd, path, flags, mode, 0)
    }

    /// openat2(2): openat with strict checks of every argument (unknown
    /// flag bits, a mode without O_CREAT or O_TMPFILE, contradictory
    /// resolve flags are EINVAL, in build_open_flags's order) and
    /// RESOLVE_* flags that scope the walk (`dcache/walk.rs`, `WALK_*`).
    /// RESOLVE_NO_MAGICLINKS has nothing to refuse: vfscale has no
    /// magic links.
    pub(crate) fn sys_openat2(&self, dirfd: Fd, path: &[u8], how: &OpenHow) -> SysResult<Fd> {
        let flags = how.flags & !(O_CLOEXEC as u64);
        if flags & !(O_VALID as u32 as u64) != 0 || how.resolve & !RESOLVE_VALID != 0 {
            return Err(Errno::EINVAL);
        }
        if how.resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT) == RESOLVE_BENEATH | RESOLVE_IN_ROOT {
            return Err(Errno::EINVAL);
        }
        let flags = how.flags as i32;
        let creates = flags & (O_CREAT | __O_TMPFILE) != 0;
        if (creates && how.mode & !u64::from(S_IALLUGO) != 0) || (!creates && how.mode != 0) {
            return Err(Errno::EINVAL);
        }
        if flags & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
            return Err(Errno::EINVAL);
        }
        if flags & __O_TMPFILE != 0 && (flags & O_DIRECTORY == 0 || flags & O_ACCMODE == O_RDONLY) {
            return Err(Errno::EINVAL);
        }
        if flags & O_PATH != 0 && flags & !O_PATH_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        if how.resolve & RESOLVE_CACHED != 0 && flags & (O_TRUNC | O_CREAT | __O_TMPFILE) != 0 {
            return Err(Errno::EAGAIN);
        }
        // getname's checks come before the walk's.
        check_path(path)?;
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let resolve = walk_resolve_flags(how.resolve);
        self.sys_open_resolving(dirfd, path, flags, how.mode as u32, resolve)
    }

    /// openat under openat2's resolve flags (`WALK_RESOLVE` bits; 0 for
    /// openat itself).
    #[inline(always)]
    fn sys_open_resolving(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mode: u32,
        resolve: u32,
    ) -> SysResult<Fd> {
        // The open file (and any name it creates) is charged to our group.
        self.charge_here();
        self.vfs
            .admit(crate::reclaim::KIND_BYTES[2] as u64, Errno::ENOMEM)?;
        let flags = if flags & O_PATH != 0 {
            flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } else {
            flags
        };
        if flags & __O_TMPFILE != 0 {
            return self.open_tmpfile(dirfd, path, flags, mode, resolve);
        }
        // O_DIRECTORY | O_CREAT is nonsense, after O_PATH's masking (EINVAL since Linux 6.4).
        if flags & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
            return Err(Errno::EINVAL);
        }
        if !self.cred.is_root() && self.vfs.at_file_limit() {
            return Err(Errno::ENFILE);
        }
        // Linux takes the descriptor before opening: at the limit nothing
        // is created or truncated. Only opens with such side effects pay
        // for the extra look at the table.
        if flags & (O_CREAT | O_TRUNC) != 0 && !self.files.has_free_slot() {
            return Err(Errno::EMFILE);
        }
        let _guard = self.vfs.collector.enter();
        let (file, created) = loop {
            let (found, created) = if flags & O_CREAT != 0 && flags & O_PATH == 0 {
                self.open_create(dirfd, path, flags, mode, resolve)?
            } else {
                let walk_flags = if flags & O_NOFOLLOW != 0 {
                    0
                } else {
                    WALK_FOLLOW
                } | if flags & O_DIRECTORY != 0 {
                    WALK_DIRECTORY
                } else {
                    0
                };
                let found = if resolve == 0 {
                    self.lookup_at(&self.cred, dirfd, path, AT_SYMLINK_NOFOLLOW, walk_flags)?
                } else {
                    self.lookup_resolving(dirfd, path, walk_flags | resolve)?
                };
                (found, false)
            };
            if let Some(f) = self.open_found(&found, flags, created)? {
                break (f, created);
            }
            // The dentry changed between the walk and taking a reference:
            // walk again.
        };
        let (file, _guard) = Self::finish_open(file, _guard);
        // vfs_open's fsnotify_open, before O_TRUNC's change.
        if flags & O_PATH == 0 {
            self.vfs.notify_file(file.file(), IN_OPEN);
        }
        // A file this call created is not truncated (Linux drops O_TRUNC
        // for FMODE_CREATED), so its fresh set-id bits survive.
        let file = if created {
            file
        } else {
            self.truncate_opened(file, flags)?
        };
        self.install_opened(file, flags)
    }

    /// O_TRUNC of an open that found its file: a regular file is
    /// truncated, under write access to its mount (the file's own when it
    /// is open for writing). On error the file is put.
    pub(super) fn truncate_opened(
        &self,
        file: crate::file::FileRef,
        flags: i32,
    ) -> SysResult<crate::file::FileRef> {
        let f = file.file();
        if flags & O_TRUNC == 0 || flags & O_PATH != 0 || f.inode().file_type() != S_IFREG {
            return Ok(file);
        }
        let r = if f.fmode & FMODE_WRITER != 0 {
            self.truncate_inode(f.dentry, f.inode(), 0)
        } else {
            // O_RDONLY | O_TRUNC.
            f.mount()
                .write_access()
                .and_then(|_write| self.truncate_inode(f.dentry, f.inode(), 0))
        };
        match r {
            Ok(()) => Ok(file),
            Err(e) => {
                self.vfs.fput(file);
                Err(e)
            }
        }
    }

    /// The lowest free descriptor for a file an open made (O_CLOEXEC from
    /// its flags); the file is put if none is free.
    #[inline(always)]
    pub(super) fn install_opened(&self, file: crate::file::FileRef, flags: i32) -> SysResult<Fd> {
        match self.files.install(file, flags & O_CLOEXEC != 0, 0) {
            Ok(fd) => Ok(fd),
            Err((e, file)) => {
                self.vfs.fput(file);
                Err(e)
            }
        }
    }

    /// The O_CREAT path: find or create the last component. Returns the
    /// result and whether this call created it.
    fn open_create(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mode: u32,
        resolve: u32,
    ) -> SysResult<(Found, bool)> {
        let parent = self.parent_resolving(dirfd, path, resolve)?;
        let root = if resolve & (WALK_BENEATH | WALK_IN_ROOT) != 0 {
            // The scoped walk's root: the directory it started from.
            let (_, cwd) = self.fs.get();
            Some(self.start_dir(dirfd, cwd)?)
        } else {
            None
        };
        let scope = Scope { root, resolve };
        self.open_create_parent(parent, flags, mode, 0, scope)
    }

    /// Finds or creates `parent.last` in `parent.dir`. A symlink there is
    /// followed (unless O_EXCL/O_NOFOLLOW) by resolving its target's parent
    /// the same way, up to MAXSYMLINKS times, from `scope`'s root when
    /// absolute and under its resolve flags.
    #[inline(always)]
    fn open_create_parent(
        &self,
        parent: Parent<'_>,
        flags: i32,
        mode: u32,
        depth: u32,
        scope: Scope,
    ) -> SysResult<(Found, bool)> {
        // A ".." last component is stepped (and refused) under
        // RESOLVE_BENEATH and RESOLVE_NO_XDEV before its EISDIR
        // (open_last_lookups's handle_dots, then do_open).
        if matches!(parent.last, Last::DotDot) && scope.resolve & (WALK_BENEATH | WALK_NO_XDEV) != 0
        {
            self.vfs.walk(
                &self.cred,
                scope.root(self),
                parent.dir.path,
                b"..",
                scope.resolve,
            )?;
        }
        let name = match parent.last {
            Last::Name(n) => n,
            // ".", ".." and "/" exist and are directories.
            _ if flags & O_EXCL != 0 => return Err(Errno::EEXIST),
            _ => return Err(Errno::EISDIR),
        };
        if parent.trailing_slash {
            return Err(Errno::EISDIR);
        }
        let dir_d = parent.dir.path.dentry;
        let dir = parent.dir.inode();
        let key = NameKey::lookup(name)?;
        // SAFETY: the walk's guard keeps the directory's dentry allocated.
        let dir_sb = unsafe { &*(*dir_d).sb };
        if !dir_sb.fs.dcache_is_authoritative() {
            // The name may exist on the backend without being cached yet:
            // ask (and cache the answer) before deciding to create.
            // A reclaimed directory entry: its name is gone from the cache;
            // answer as for a removed directory.
            self.vfs
                .lookup_slow(parent.dir.path.mnt, dir_d, dir, &key)?
                .ok_or(Errno::ENOENT)?;
        }
        let index = dir.dir_index().ok_or(Errno::ENOTDIR)?;
        // O_EXCL means a create is expected: its inode is made before the
        // lock (dropped again if the name turns out to exist).
        let prealloc = if flags & O_EXCL != 0 && !dir_sb.backend_served {
            self.prealloc_inode(
                dir_sb,
                dir_d,
                &key,
                S_IFREG,
                InodeBody::Regular(RwLock::new(Default::default())),
            )
        } else {
            None
        };
        // The directory's permission and the new file's owner, before the
        // lock (`may_write_dir_as`); their errors are returned in the
        // kernel's order, inside.
        let dir_perm = dir.perm_attr();
        let may_write = self.may_write_dir_as(dir, dir_perm);
        let owner = self.owner_in_as(dir_perm, S_IFREG | (mode & S_IALLUGO));
        let (mut locked, waited) = index.write_noting_wait();
        if locked.is_dead() {
            return Err(Errno::ENOENT);
        }
        if waited {
            self.vfs.note_dir_contended(dir_d);
        }
        let existing = self.vfs.lookup_exact(dir_d, &key);
        // SAFETY: found under the bucket lock with the directory locked: live.
        let existing_inode = if existing.is_null() {
            core::ptr::null()
        } else {
            unsafe { &*existing }.inode_ptr()
        };
        if !existing_inode.is_null() {
            // step_into's mount crossing comes before do_open's EEXIST.
            // SAFETY: live under the directory lock.
            if scope.resolve & WALK_NO_XDEV != 0 && unsafe { &*existing }.flags() & D_MOUNTED != 0 {
                let below = PathPtr {
                    mnt: parent.dir.path.mnt,
                    dentry: existing,
                };
                if self.vfs.follow_mounts(below).mnt != below.mnt {
                    return Err(Errno::EXDEV);
                }
            }
            if flags & O_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            // SAFETY: a positive dentry keeps its inode.
            let ei = unsafe { &*existing_inode };
            let sticky_check = |ei: &Inode| {
                let (dir_mode, dir_uid, _) = dir.perm_attr();
                let (_, file_uid, _) = ei.perm_attr();
                may_open_existing_in_sticky(&self.cred, dir_mode, dir_uid, ei.file_type(), file_uid)
            };
            if s_islnk(ei.file_type()) {
                if flags & O_NOFOLLOW != 0 {
                    // do_open checks the sticky rule before may_open's ELOOP.
                    sticky_check(ei)?;
                    return Err(Errno::ELOOP);
                }
                // SAFETY: the parent's walk keeps its mount allocated.
                let mnt_flags = unsafe { &*parent.dir.path.mnt }.flags.get();
                if depth >= MAXSYMLINKS
                    || scope.resolve & WALK_NO_SYMLINKS != 0
                    || mnt_flags & MNT_NOSYMFOLLOW != 0
                {
                    return Err(Errno::ELOOP);
                }
                follow_accessed(ei, mnt_flags, scope.resolve)?;
                let target = ei.symlink_target().unwrap_or(&[]).to_vec();
                drop(locked);
                if target.is_empty() {
                    return Err(Errno::ENOENT);
                }
                // The target resolves from the link's directory (or the
                // walk's root when absolute).
                let root = scope.root(self);
                if target[0] == b'/' {
                    symlink_jump_allowed(scope.resolve, parent.dir.path, root, parent.root_known)?;
                }
                let mut next = self.vfs.walk_parent(
                    &self.cred,
                    root,
                    parent.dir.path,
                    &target,
                    scope.resolve,
                )?;
                // What the walk knew before the link, it still knows.
                next.root_known |= parent.root_known;
                return self.open_create_parent(next, flags, mode, depth + 1, scope);
            }
            // A mountpoint (a file bind-mounted over the name): the open is
            // of what is mounted there, checks included (step_into's
            // handle_mounts, then do_open).
            let mut path = PathPtr {
                mnt: parent.dir.path.mnt,
                dentry: existing,
            };
            // SAFETY: live under the directory lock.
            if unsafe { &*existing }.flags() & D_MOUNTED != 0 {
                path = self.vfs.follow_mounts(path);
            }
            // SAFETY: `existing`, or a mount's root under the guard; a
            // positive dentry keeps its inode.
            let d = unsafe { &*path.dentry };
            let inode = d.inode_ptr();
            let ei = unsafe { &*inode };
            if ei.is_dir() {
                return Err(Errno::EISDIR);
            }
            sticky_check(ei)?;
            let found = Found {
                path,
                seq: d.seq.read_begin(),
                inode,
            };
            return Ok((found, false));
        }
        if dir_sb.backend_served {
            // Created on the backend, then looked up from it.
            drop(locked);
            let created = self.backend_create(
                &parent,
                false,
                || Ok(()),
                |sb, dir, name| {
                    let (uid, gid, m) = self.owner_in(dir, S_IFREG | (mode & S_IALLUGO));
                    sb.fs
                        .create(sb, dir, name, self.backend_mode(m), 0, uid, gid)
                },
            );
            // A created file comes with the create's unit of write
            // access, as the memory path's (`open_found` takes it over).
            let write = match created {
                Ok(unit) => Some(unit),
                // Appeared meanwhile (on the host): open it, unless O_EXCL.
                Err(Errno::EEXIST) if flags & O_EXCL == 0 => None,
                Err(e) => return Err(e),
            };
            let (d, seq) = self
                .vfs
                .lookup_slow(parent.dir.path.mnt, dir_d, dir, &key)?
                .ok_or(Errno::ENOENT)?;
            // SAFETY: the guard keeps the dentry allocated.
            let inode = unsafe { &*d }.inode_ptr();
            if inode.is_null() {
                return Err(Errno::ENOENT);
            }
            let found = Found {
                path: PathPtr {
                    mnt: parent.dir.path.mnt,
                    dentry: d,
                },
                seq,
                inode,
            };
            let created = write.is_some();
            if let Some(unit) = write {
                unit.keep();
            }
            return Ok((found, created));
        }
        super::refuse_backend_change(dir)?;
        // lookup_open: a name to create on a read-only mount is EROFS,
        // in place of the directory's permission. The unit is handed on
        // with the result (`open_found`).
        let write = parent.dir.mount().write_access()?;
        may_write?;
        let (uid, gid, m) = owner;
        let m = self.new_mode_in(dir, dir_perm.0, m);
        let (d, stamp) = if let Some(inode) = prealloc {
            self.create_locked_prealloc(
                &mut locked,
                dir_d,
                dir,
                &key,
                existing,
                inode,
                (m, uid, gid),
            )
        } else {
            self.create_locked(
                &mut locked,
                dir_d,
                dir,
                &key,
                existing,
                m,
                uid,
                gid,
                InodeBody::Regular(RwLock::new(Default::default())),
            )?
        };
        self.vfs.notify_name(dir, key.bytes, IN_CREATE, 0);
        // SAFETY: the new dentry is pinned by the namespace reference.
        let dr = unsafe { &*d };
        // Read under the lock, as before the stamp moved out: the state
        // this create made, which a racing unlink can only invalidate
        // (the open's validation then walks again).
        let found = Found {
            path: PathPtr {
                mnt: parent.dir.path.mnt,
                dentry: d,
            },
            seq: dr.seq.read_begin(),
            inode: dr.inode_ptr(),
        };
        if stamp.may_defer(&self.vfs) {
            drop(locked);
        }
        // The directory's size and times (stamp.rs): after the lock when
        // nothing prevents it.
        stamp.apply();
        write.keep();
        Ok((found, true))
    }

    /// Checks and takes the references for opening `found`. `Ok(None)`: the
    /// dentry changed under us, walk again.
    #[inline(always)]
    pub(super) fn open_found(
        &self,
        found: &Found,
        flags: i32,
        created: bool,
    ) -> SysResult<Option<(crate::file::FileRef, Option<PartnerWait>)>> {
        // The unit of write access the create handed on: kept by a file
        // opened for writing, given back otherwise.
        let creating = created.then(|| WriteAccess::adopt(found.mount()));
        if found.inode.is_null() {
            return Err(Errno::ENOENT);
        }
        let inode = found.inode();
        let ty = inode.file_type();
        let acc = flags & O_ACCMODE;
        let fmode = if flags & O_PATH != 0 {
            FMODE_PATH
        } else {
            if ty == S_IFLNK {
                return Err(Errno::ELOOP);
            }
            if ty == S_IFDIR && (acc != O_RDONLY || flags & O_TRUNC != 0) {
                return Err(Errno::EISDIR);
            }
            let mut want = 0;
            if acc == O_RDONLY || acc == O_RDWR {
                want |= MAY_READ;
            }
            // Access mode 3 asks for both permissions and grants neither.
            if acc == O_ACCMODE {
                want |= MAY_READ;
            }
            if acc == O_WRONLY || acc == O_RDWR || acc == O_ACCMODE || flags & O_TRUNC != 0 {
                want |= MAY_WRITE;
            }
            // do_open: truncating a regular file needs write access to
            // the mount before may_open's checks.
            if flags & O_TRUNC != 0 && ty == S_IFREG && !created && found.mount().is_readonly() {
                return Err(Errno::EROFS);
            }
            // may_open: a device on a nodev mount, before the permission.
            if matches!(ty, S_IFCHR | S_IFBLK) && found.mount().flags.get() & MNT_NODEV != 0 {
                return Err(Errno::EACCES);
            }
            if !created {
                inode.permission(&self.cred, want)?;
                // An append-only file opens for writing in append mode
                // only, and is never truncated.
                if inode.fs_flags() & FS_APPEND_FL != 0
                    && ((acc != O_RDONLY && flags & O_APPEND == 0) || flags & O_TRUNC != 0)
                {
                    return Err(Errno::EPERM);
                }
            }
            if flags & O_NOATIME != 0 {
                self.owner_or_capable(inode)?;
            }
            if matches!(ty, S_IFCHR | S_IFBLK | S_IFSOCK) {
                return Err(Errno::ENXIO);
            }
            // do_dentry_open: O_DIRECT only where the file can do direct
            // I/O (regular files); a FIFO is refused below, after its open
            // counted it, as Linux refuses it after fifo_open.
            if flags & O_DIRECT != 0 && ty == S_IFDIR {
                return Err(Errno::EINVAL);
            }
            (if acc == O_RDONLY || acc == O_RDWR {
                FMODE_READ
            } else {
                0
            }) | (if acc == O_WRONLY || acc == O_RDWR {
                FMODE_WRITE
            } else {
                0
            })
        };
        if !self.vfs.dget_validated(found.path.dentry, found.seq) {
            return Ok(None);
        }
        if !self.vfs.mntget_rcu(found.path.mnt) {
            self.vfs.dput(found.path.dentry);
            return Ok(None);
        }
        // do_dentry_open: a regular file open for writing holds write
        // access to its mount until its release (after the permission).
        let fmode = if fmode & FMODE_WRITE != 0 && ty == S_IFREG {
            let unit = match creating {
                Some(unit) => Ok(unit),
                None => found.mount().write_access(),
            };
            match unit {
                Ok(unit) => unit.keep(),
                Err(e) => {
                    self.vfs.mntput(found.path.mnt);
                    self.vfs.dput(found.path.dentry);
                    return Err(e);
                }
            }
            fmode | FMODE_WRITER
        } else {
            fmode
        };
        // SAFETY: the reference just taken keeps the dentry alive.
        self.vfs.note_open(unsafe { &*found.path.dentry });
        let status = open_status(flags);
        // A FIFO's file joins its pipe's readers/writers (anon/pipe.rs).
        let (fmode, private, wait) = match inode.fifo_pipe() {
            Some(pipe) if fmode & FMODE_PATH == 0 => {
                let counted = pipe.open_fifo_end(
                    fmode & FMODE_READ != 0,
                    fmode & FMODE_WRITE != 0,
                    flags & O_NONBLOCK != 0,
                );
                let wait = match counted {
                    Ok(_) if flags & O_DIRECT != 0 => {
                        // Counted and uncounted: a partner waiting for
                        // this side was released, as by Linux's failed
                        // open (which first waits for its own partner;
                        // this one does not: docs/COMPATIBILITY.md).
                        pipe.release_end(fmode & FMODE_READ != 0, fmode & FMODE_WRITE != 0);
                        Err(Errno::EINVAL)
                    }
                    other => other,
                };
                let wait = match wait {
                    Ok(wait) => wait,
                    Err(e) => {
                        self.vfs.mntput(found.path.mnt);
                        self.vfs.dput(found.path.dentry);
                        return Err(e);
                    }
                };
                (fmode | FMODE_PIPE, pipe as *const _ as *const (), wait)
            }
            _ if ty == S_IFREG && fmode & FMODE_PATH == 0 => {
                (backend_open(inode, fmode), core::ptr::null(), None)
            }
            _ => (fmode, core::ptr::null(), None),
        };
        let fmode = if created {
            fmode | FMODE_CREATED
        } else {
            fmode
        };
        let file = self.vfs.alloc_file(
            found.path.mnt,
            found.path.dentry,
            found.inode,
            fmode,
            status,
            Arc::as_ptr(&self.cred) as usize,
            private,
        );
        Ok(Some((file, wait)))
    }

    /// Linux's inode_owner_or_capable: the file's owner, or CAP_FOWNER
    /// (root here), else EPERM. What O_NOATIME (at open or by F_SETFL)
    /// and F_SET_RW_HINT ask.
    pub(super) fn owner_or_capable(&self, inode: &Inode) -> SysResult<()> {
        if self.cred.is_root() || inode.attr().uid == self.cred.fsuid {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }

    /// Finishes an open that `open_found` made: a FIFO open that must wait
    /// for its partner (`Pipe::open_fifo_end`) leaves the epoch guard first
    /// (the wait has no bound; a guard would hold back reclamation for
    /// everyone), then waits. The guard comes back if still held.
    #[inline(always)]
    pub(super) fn finish_open<'g>(
        opened: (crate::file::FileRef, Option<PartnerWait>),
        guard: Guard<'g>,
    ) -> (crate::file::FileRef, Option<Guard<'g>>) {
        let (file, wait) = opened;
        let Some(wait) = wait else {
            return (file, Some(guard));
        };
        drop(guard);
        // SAFETY: a file with FMODE_PIPE keeps its `Pipe` in `private`, and
        // the file's inode reference keeps the pipe alive.
        let pipe = unsafe { &*(file.file().private as *const crate::anon::pipe::Pipe) };
        pipe.wait_for_partner(wait);
        (file, None)
    }

    /// close(2). Its put is the call's last act (`fput_ending_call`): the
    /// caller ends the call right after (`ProcessApi::close`).
    pub(crate) fn sys_close(&self, fd: Fd) -> SysResult<()> {
        let f = self.files.remove(fd)?;
        self.forget_posix_locks(&f);
        self.vfs.fput_ending_call(f);
        Ok(())
    }

    pub(crate) fn sys_close_range(&self, first: u32, last: u32, flags: u32) -> SysResult<()> {
        if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
            return Err(Errno::EINVAL);
        }
        let _batch = self.vfs.batch_scope();
        for fd in self.files.open_in(first as usize, last as usize) {
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                self.files.set_cloexec(fd, true)?;
            } else if let Ok(f) = self.files.remove(fd) {
                self.put_closed(f);
            }
        }
        Ok(())
    }

    pub(crate) fn sys_dup(&self, fd: Fd) -> SysResult<Fd> {
        let f = self.fd_file(fd)?;
        self.files.install(f, false, 0).map_err(|(e, f)| {
            self.vfs.fput(f);
            e
        })
    }

    pub(crate) fn sys_dup3(
        &self,
        oldfd: Fd,
        newfd: Fd,
        flags: i32,
        is_dup2: bool,
    ) -> SysResult<Fd> {
        if flags & !O_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        if oldfd == newfd && !is_dup2 {
            return Err(Errno::EINVAL);
        }
        let f = self.fd_file(oldfd)?;
        if oldfd == newfd {
            self.vfs.fput(f);
            return if is_dup2 {
                Ok(newfd)
            } else {
                Err(Errno::EINVAL)
            };
        }
        if newfd < 0 || newfd as usize >= self.files.limit() {
            self.vfs.fput(f);
            return Err(Errno::EBADF);
        }
        let old = self.files.replace(newfd, f, flags & O_CLOEXEC != 0)?;
        if let Some(old) = old {
            self.put_closed(old);
        }
        Ok(newfd)
    }

    /// Whether `fd` is close-on-exec (for embedders and tests).
    pub fn fd_cloexec(&self, fd: Fd) -> SysResult<bool> {
        self.files.is_cloexec(fd)
    }

    /// The file status flags of `fd` (F_GETFL).
    pub fn fd_status_flags(&self, fd: Fd) -> SysResult<i32> {
        let _end = self.vfs.call_end();
        self.with_file(fd, true, |f| Ok(f.status()))
    }
}
