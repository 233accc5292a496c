//! pivot_root(2): the caller's namespace gets a new root mount, the old
//! root mount goes beneath it at `put_old`, and every process whose root
//! or cwd was the old root moves to the new one (Linux 6.18's
//! fs/namespace.c: its checks in its order, then chroot_fs_refs).
//!
//! A namespace's root here has no parent, where Linux's "/" is mounted on
//! the invisible rootfs, from which pivot_root is refused (EINVAL). So a
//! parentless root counts as mounted on such a rootfs (private, never
//! listed): pivot_root works from it, as from a real system's "/", and
//! the new root becomes the namespace's root (docs/ARCHITECTURE.md,
//! Decisions, "pivot_root").
//!
//! Lock order: the mount table's lock for the checks and the change, then
//! (after it) the fs-context registry and each context's lock.

use super::Process;
use crate::abi::*;
use crate::dcache::walk::{PathPtr, WALK_DIRECTORY, WALK_FOLLOW};
use crate::mount::Mount;

impl Process {
    pub(crate) fn sys_pivot_root(&self, new_root: &[u8], put_old: &[u8]) -> SysResult<()> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let _g = self.vfs.collector.enter();
        let dirs = WALK_FOLLOW | WALK_DIRECTORY;
        let new = self.lookup_at(&self.cred, AT_FDCWD, new_root, 0, dirs)?;
        let old = self.lookup_at(&self.cred, AT_FDCWD, put_old, 0, dirs)?;
        let (root, _) = self.fs.get();
        let list = self.vfs.lock_mounts();
        // lock_mount: put_old's place is the top of the stack there.
        // Its dentry held until the old root is on it.
        let old_place = self.mount_place(&old)?;
        let old = old_place.path;
        let new = new.path;
        // SAFETY (whole function): the walks' guard keeps what they found
        // allocated, and the table lock keeps attached mounts attached; the
        // caller's context holds its root.
        let (new_mnt, root_mnt, old_mnt) = unsafe { (&*new.mnt, &*root.mnt, &*old.mnt) };
        // No shared mount gives or takes a mount here (nothing would
        // propagate); a missing parent is the private rootfs, or (for a
        // detached mount, refused below) the mount itself, private too.
        let shared = |m: *const Mount| !m.is_null() && unsafe { &*m }.is_shared();
        if old_mnt.is_shared() || shared(new_mnt.parent_ptr()) || shared(root_mnt.parent_ptr()) {
            return Err(Errno::EINVAL);
        }
        if !self.in_namespace(root.mnt) || !self.in_namespace(new.mnt) {
            return Err(Errno::EINVAL);
        }
        let new_dentry = unsafe { &*new.dentry };
        if !new_dentry.is_root() && !new_dentry.is_hashed() {
            return Err(Errno::ENOENT);
        }
        // Onto itself, or put_old on the old root's own filesystem.
        if new.mnt == root.mnt || old.mnt == root.mnt {
            return Err(Errno::EBUSY);
        }
        // Both roots are whole mounts (an attached mount of the namespace
        // has a parent, or is its root: on the rootfs).
        if root.dentry != root_mnt.root || new.dentry != new_mnt.root {
            return Err(Errno::EINVAL);
        }
        // put_old beneath the new root, the new root beneath the old.
        if !self.is_path_reachable(old, new) || !self.is_path_reachable(new, root) {
            return Err(Errno::EINVAL);
        }
        self.vfs.pivot(&list, &self.fs.ns, new.mnt, root.mnt, old);
        // What chroot_fs_refs hands out and compares, held past the lock.
        for p in [new, root] {
            self.vfs.mntget(p.mnt);
            self.vfs.dget(p.dentry);
        }
        drop(list);
        self.vfs.chroot_fs_refs(root, new);
        for p in [new, root] {
            self.vfs.dput(p.dentry);
            self.vfs.mntput(p.mnt);
        }
        Ok(())
    }

    /// is_path_reachable: `at` is `under` or beneath it, up through the
    /// mounts. Caller holds a guard.
    fn is_path_reachable(&self, at: PathPtr, under: PathPtr) -> bool {
        !self.path_from_root(under, at).1
    }
}
