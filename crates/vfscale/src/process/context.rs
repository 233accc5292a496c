//! Process context: chdir, fchdir, getcwd, chroot, umask, fork, exit.

use super::{FsContext, Process};
use crate::abi::*;
use crate::cred::perm::MAY_EXEC;
use crate::dcache::walk::{Found, PathPtr, WALK_DIRECTORY, WALK_FOLLOW};
use crate::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The path whose components are `parts`, innermost first ("/" for
/// none).
pub(super) fn path_of(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if parts.is_empty() {
        out.push(b'/');
    }
    out
}

impl Process {
    /// Takes references on a searchable directory for cwd/root.
    fn grab_dir(&self, found: &Found) -> SysResult<Option<PathPtr>> {
        let inode = found.inode();
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        inode.permission(&self.cred, MAY_EXEC)?;
        if !self.vfs.dget_validated(found.path.dentry, found.seq) {
            return Ok(None);
        }
        if !self.vfs.mntget_rcu(found.path.mnt) {
            self.vfs.dput(found.path.dentry);
            return Ok(None);
        }
        Ok(Some(found.path))
    }

    fn set_dir(&self, set_root: bool, dirfd: Fd, path: &[u8], at_flags: i32) -> SysResult<()> {
        let _g = self.vfs.collector.enter();
        let new = loop {
            let found = self.lookup_at(
                &self.cred,
                dirfd,
                path,
                at_flags,
                WALK_FOLLOW | WALK_DIRECTORY,
            )?;
            if let Some(p) = self.grab_dir(&found)? {
                break p;
            }
        };
        let old = self.fs.set(set_root, new);
        self.vfs.dput(old.dentry);
        self.vfs.mntput(old.mnt);
        Ok(())
    }

    pub(crate) fn sys_chdir(&self, path: &[u8]) -> SysResult<()> {
        self.set_dir(false, AT_FDCWD, path, 0)
    }

    pub(crate) fn sys_fchdir(&self, fd: Fd) -> SysResult<()> {
        self.vfs.fput(self.fd_file(fd)?);
        self.set_dir(false, fd, b"", AT_EMPTY_PATH)
    }

    pub(crate) fn sys_chroot(&self, path: &[u8]) -> SysResult<()> {
        if !self.cred.is_root() {
            // Resolve first so a bad path reports its own error, as Linux
            // checks the capability after the lookup.
            let _g = self.vfs.collector.enter();
            let found =
                self.lookup_at(&self.cred, AT_FDCWD, path, 0, WALK_FOLLOW | WALK_DIRECTORY)?;
            found.inode().permission(&self.cred, MAY_EXEC)?;
            return Err(Errno::EPERM);
        }
        self.set_dir(true, AT_FDCWD, path, 0)
    }

    pub(crate) fn sys_getcwd(&self) -> SysResult<Vec<u8>> {
        let _g = self.vfs.collector.enter();
        let (root, cwd) = self.fs.get();
        // SAFETY (whole function): the guard keeps the chain of dentries and
        // mounts from the cwd upwards allocated.
        let cwd_d = unsafe { &*cwd.dentry };
        if !cwd_d.is_root() && !cwd_d.is_hashed() {
            return Err(Errno::ENOENT);
        }
        Ok(self.path_text(root, cwd, true))
    }

    /// The text of the path from `root` to `at` (getcwd, /proc/self/fd).
    /// Caller holds a guard.
    ///
    /// A location outside `root` is spelled from the namespace's top:
    /// getcwd prefixes it with "(unreachable)" (`mark_unreachable`), a
    /// descriptor's /proc link (d_path) does not.
    pub(crate) fn path_text(&self, root: PathPtr, at: PathPtr, mark_unreachable: bool) -> Vec<u8> {
        let (text, unreachable) = self.path_from_root(root, at);
        if unreachable && mark_unreachable {
            [&b"(unreachable)"[..], &text].concat()
        } else {
            text
        }
    }

    /// The path from `root` to `at`, and whether `at` is outside `root`
    /// (then spelled from the top of its tree). Caller holds a guard.
    pub(crate) fn path_from_root(&self, root: PathPtr, at: PathPtr) -> (Vec<u8>, bool) {
        // Names and parents change under renames (and the chain under
        // mounts): read them inside the global seqcounts and retry, as
        // Linux's d_path does under rename_lock. A torn read would mix an
        // old name's bytes with a new name's length.
        let (parts, unreachable) = loop {
            let rename_seq = self.vfs.rename_seq.read_begin();
            let mount_seq = self.vfs.mounts.seq.read_begin();
            let names = self.cwd_names(root, at, (rename_seq, mount_seq));
            if !self.vfs.rename_seq.read_retry(rename_seq)
                && !self.vfs.mounts.seq.read_retry(mount_seq)
            {
                break names;
            }
        };
        (path_of(&parts), unreachable)
    }

    /// The names from `cwd` up to `root` (innermost first), and whether the
    /// top was reached without meeting `root`. Caller holds a guard and
    /// validates the global rename and mount seqcounts (`seqs`, sampled
    /// before); a long chain is abandoned early once they moved, so racing
    /// renames cannot keep it walking.
    fn cwd_names(&self, root: PathPtr, cwd: PathPtr, seqs: (u32, u32)) -> (Vec<Vec<u8>>, bool) {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut unreachable = false;
        let mut cur = cwd;
        loop {
            if cur == root {
                break;
            }
            if parts.len() % 64 == 63
                && (self.vfs.rename_seq.read_retry(seqs.0)
                    || self.vfs.mounts.seq.read_retry(seqs.1))
            {
                break;
            }
            // SAFETY (whole loop): the caller's guard keeps the chain of
            // dentries and mounts from the cwd upwards allocated.
            let m = unsafe { &*cur.mnt };
            if cur.dentry == m.root {
                let (parent, mountpoint) = (m.parent_ptr(), m.mountpoint_ptr());
                // One of them null only while a detach races this read:
                // the caller's mount seqcount check retries.
                if parent.is_null() || mountpoint.is_null() {
                    // Reached the top without meeting the process root: the
                    // cwd is outside it (Linux prefixes "(unreachable)").
                    unreachable = true;
                    break;
                }
                cur = PathPtr {
                    mnt: parent,
                    dentry: mountpoint,
                };
                continue;
            }
            let d = unsafe { &*cur.dentry };
            let parent = d.parent_ptr();
            if parent.is_null() {
                // Its filesystem's root, not the mount's: a directory
                // renamed out of a bind's subtree (or a torn read of a
                // moving mount, retried). Linux's prepend_path says
                // "escaped" and drops the names: "(unreachable)/".
                parts.clear();
                unreachable = true;
                break;
            }
            parts.push(d.name());
            cur = PathPtr {
                mnt: cur.mnt,
                dentry: parent,
            };
        }
        (parts, unreachable)
    }

    pub(crate) fn sys_umask(&self, mask: u32) -> u32 {
        // Relaxed: a plain value swap.
        self.fs.umask.swap(mask & 0o777, Ordering::Relaxed)
    }

    pub(crate) fn sys_fork(&self) -> SysResult<Process> {
        let _g = self.vfs.collector.enter();
        let (root, cwd) = self.fs.get();
        for p in [root, cwd] {
            // The parent's context holds references: these cannot fail.
            self.vfs.dget(p.dentry);
            self.vfs.mntget(p.mnt);
        }
        self.fs.ns.get();
        let fs = FsContext::new(&self.vfs, root, cwd, self.umask_bits(), self.fs.ns.clone());
        Ok(Process {
            vfs: self.vfs.clone(),
            // A child gets its own copy of the credentials (copy_creds).
            cred: Arc::new((*self.cred).clone()),
            fs,
            files: Arc::new(self.files.duplicate()),
            // A child starts in its parent's group (cgroup inheritance).
            group: self.group.fork(),
            live_threads: Arc::new(AtomicUsize::new(1)),
            exited: false,
        })
    }

    /// A thread of this process: shares the fd table and fs context
    /// (CLONE_FILES | CLONE_FS), for embedders that run one process on
    /// several threads.
    pub fn clone_thread(&self) -> Process {
        self.fs.share();
        Process {
            vfs: self.vfs.clone(),
            cred: self.cred.clone(),
            fs: self.fs.clone(),
            files: self.files.clone(),
            group: self.group.clone(),
            live_threads: {
                // Relaxed: the count only has to reach zero once, after
                // every sibling's decrement (see `release_everything`).
                self.live_threads.fetch_add(1, Ordering::Relaxed);
                self.live_threads.clone()
            },
            exited: false,
        }
    }

    /// A process with the same root, cwd, umask and descriptors but other
    /// credentials (a setuid-style transition).
    pub fn with_cred(&self, cred: crate::Cred) -> SysResult<Process> {
        let mut p = self.sys_fork()?;
        p.cred = Arc::new(cred);
        Ok(p)
    }
}
