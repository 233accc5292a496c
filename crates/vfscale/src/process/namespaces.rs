//! unshare(2) (the mount namespace, CLONE_FS and CLONE_FILES) and setns(2)
//! of the mount namespace (mount/namespace.rs holds the namespaces;
//! process/mountinfo.rs lists their mounts).
//!
//! A process changes namespace by getting a new fs context (root, cwd,
//! umask and namespace, process/mod.rs's FsContext): its `clone_thread`
//! siblings keep the old one, as Linux's unshare copies a shared
//! fs_struct. Lock order: the context's lock, then the mount table's.

use super::{FsContext, Process};
use crate::abi::*;
use crate::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

impl Process {
    pub(crate) fn sys_unshare(&mut self, flags: i32) -> SysResult<()> {
        if flags & !(CLONE_NEWNS | CLONE_FS | CLONE_FILES) != 0 {
            return Err(Errno::EINVAL);
        }
        let new_ns = flags & CLONE_NEWNS != 0;
        if new_ns && !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & CLONE_FILES != 0 {
            self.unshare_files();
        }
        // CLONE_FS alone changes nothing for a context nobody shares.
        if !new_ns && (flags & CLONE_FS == 0 || self.fs.user_count() == 1) {
            return Ok(());
        }
        let fs = {
            let _g = self.vfs.collector.enter();
            // No sibling moves root or cwd (and puts the old one) while
            // they are copied.
            let _l = self.fs.lock.lock();
            let (root, cwd) = self.fs.get();
            let umask = self.umask_bits();
            if new_ns {
                let (ns, root, cwd) = self.vfs.copy_namespace(&self.fs.ns, root, cwd);
                FsContext::new(&self.vfs, root, cwd, umask, ns)
            } else {
                for p in [root, cwd] {
                    // The context holds references: these cannot fail.
                    self.vfs.dget(p.dentry);
                    self.vfs.mntget(p.mnt);
                }
                self.fs.ns.get();
                FsContext::new(&self.vfs, root, cwd, umask, self.fs.ns.clone())
            }
        };
        self.replace_fs(fs);
        Ok(())
    }

    /// unshare_fd: a thread sharing its fd table (`clone_thread`) gets a
    /// copy of its own; locks stay with the old table's owner, as Linux's
    /// with the old files_struct.
    fn unshare_files(&mut self) {
        // Acquire: as `user_count` (a sibling that left is seen gone).
        if self.live_threads.load(Ordering::Acquire) == 1 {
            return;
        }
        let copy = Arc::new(self.files.duplicate());
        let old_files = std::mem::replace(&mut self.files, copy);
        let old_live = std::mem::replace(&mut self.live_threads, Arc::new(AtomicUsize::new(1)));
        // Two siblings unsharing at once: the one whose decrement is last
        // closes what the old table still holds.
        self.leave_files(&old_files, &old_live);
    }

    /// setns(CLONE_NEWNS) into `other`'s namespace (mntns_install): root
    /// only, and not while a sibling shares the fs context; root and cwd
    /// become the top of the stack on the namespace's root.
    pub(crate) fn sys_setns_mount(&mut self, other: &Process) -> SysResult<()> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if self.fs.user_count() != 1 {
            return Err(Errno::EINVAL);
        }
        let ns = other.fs.ns.clone();
        let fs = {
            let _g = self.vfs.collector.enter();
            let list = self.vfs.lock_mounts();
            // `other`'s context keeps the namespace, hence its root,
            // attached.
            let top = self.vfs.follow_mounts(ns.root_path());
            for _ in 0..2 {
                self.vfs.mntget(top.mnt);
                self.vfs.dget(top.dentry);
            }
            drop(list);
            ns.get();
            FsContext::new(&self.vfs, top, top, self.umask_bits(), ns)
        };
        self.replace_fs(fs);
        Ok(())
    }

    /// Moves this process to the context `fs`, leaving its old one.
    fn replace_fs(&mut self, fs: Arc<FsContext>) {
        let old = std::mem::replace(&mut self.fs, fs);
        old.put(&self.vfs);
    }
}
