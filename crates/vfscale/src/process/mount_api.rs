//! open_tree(2) and move_mount(2): the new mount API's detached trees
//! (mount/anon.rs), as Linux 6.18 has them. Service managers and
//! container runtimes copy a tree with open_tree(OPEN_TREE_CLONE),
//! change it with mount_setattr while nobody can see it, and attach it
//! with move_mount; or they drop the descriptor, and the copy goes.
//!
//! A detached tree's root is held by the descriptor's file
//! (`FMODE_NEED_UNMOUNT`); what happens at its last close is anon.rs's.

use super::Process;
use crate::abi::*;
use crate::file::{FMODE_NEED_UNMOUNT, FMODE_PATH};

/// The flags open_tree knows.
const OPEN_TREE_FLAGS: i32 = AT_EMPTY_PATH
    | AT_NO_AUTOMOUNT
    | AT_RECURSIVE
    | AT_SYMLINK_NOFOLLOW
    | OPEN_TREE_CLONE
    | OPEN_TREE_CLOEXEC;

impl Process {
    pub(crate) fn sys_open_tree(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Fd> {
        if flags & !OPEN_TREE_FLAGS != 0 || flags & (AT_RECURSIVE | OPEN_TREE_CLONE) == AT_RECURSIVE
        {
            return Err(Errno::EINVAL);
        }
        let clone = flags & OPEN_TREE_CLONE != 0;
        if clone && !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let at_flags = flags & (AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
        loop {
            let _g = self.vfs.collector.enter();
            let found = self.lookup_at(&self.cred, dirfd, path, at_flags, 0)?;
            if !clone {
                // dentry_open(O_PATH) of what the walk found; again if it
                // changed meanwhile.
                match self.open_found(&found, O_PATH, false)? {
                    Some((file, _)) => return self.install_opened(file, flags),
                    None => continue,
                }
            }
            // open_detached_copy.
            let mut list = self.vfs.lock_mounts();
            self.may_copy(&found)?;
            let tree = match self.copy_for_loopback(
                &list,
                &found,
                flags & AT_RECURSIVE != 0,
                core::ptr::null(),
            ) {
                Err(Errno::ENOENT) => continue,
                other => other?,
            };
            // SAFETY: the walk's guard keeps the mount allocated.
            let origin = self.vfs.anon_origin_of(unsafe { &*found.path.mnt });
            let root = self.vfs.make_anon_tree(&mut list, &tree, origin);
            // The file's references: the tree's root and its root dentry
            // (what the walk found, kept by the copy's own reference).
            self.vfs.mntget(root);
            self.vfs.dget(found.path.dentry);
            drop(list);
            let file = self.vfs.alloc_file(
                root,
                found.path.dentry,
                found.inode,
                FMODE_PATH | FMODE_NEED_UNMOUNT,
                super::open::open_status(O_PATH),
                std::sync::Arc::as_ptr(&self.cred) as usize,
                core::ptr::null(),
            );
            return self.install_opened(file, flags);
        }
    }

    pub(crate) fn sys_move_mount(
        &self,
        from_dfd: Fd,
        from_path: &[u8],
        to_dfd: Fd,
        to_path: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & !MOVE_MOUNT__MASK != 0
            // Linux refuses the two together; each alone is not built
            // (docs/COMPATIBILITY.md).
            || flags & (MOVE_MOUNT_BENEATH | MOVE_MOUNT_SET_GROUP) != 0
        {
            return Err(Errno::EINVAL);
        }
        // getname, for both names before either walk: too long, or empty
        // without its EMPTY_PATH flag.
        for (path, empty) in [
            (from_path, MOVE_MOUNT_F_EMPTY_PATH),
            (to_path, MOVE_MOUNT_T_EMPTY_PATH),
        ] {
            if path.len() >= PATH_MAX {
                return Err(Errno::ENAMETOOLONG);
            }
            if path.is_empty() && flags & empty == 0 {
                return Err(Errno::ENOENT);
            }
        }
        // A walk follows a final symlink only with its SYMLINKS flag.
        let at_flags = |empty: u32, symlinks: u32| {
            (if flags & empty != 0 { AT_EMPTY_PATH } else { 0 })
                | (if flags & symlinks != 0 {
                    0
                } else {
                    AT_SYMLINK_NOFOLLOW
                })
        };
        let _g = self.vfs.collector.enter();
        // The target is walked first.
        let tgt = self.lookup_at(
            &self.cred,
            to_dfd,
            to_path,
            at_flags(MOVE_MOUNT_T_EMPTY_PATH, MOVE_MOUNT_T_SYMLINKS),
            0,
        )?;
        let src = self.lookup_at(
            &self.cred,
            from_dfd,
            from_path,
            at_flags(MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_F_SYMLINKS),
            0,
        )?;
        let mut list = self.vfs.lock_mounts();
        self.do_move_mount(&mut list, &src, &tgt)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::abi::*;
    use crate::{ProcessApi, Vfs};

    /// A descriptor's last close on a thread that holds the table lock (a
    /// drain under a mount call) leaves the tree for that thread's unlock,
    /// which dissolves it; a later close has nothing to do.
    #[test]
    fn a_release_under_the_table_lock_dissolves_at_the_unlock() {
        let v = Vfs::new();
        let p = v.root_process();
        p.mkdir(b"/a", 0o755).unwrap();
        p.mount(b"none", b"/a", b"tmpfs", 0).unwrap();
        let fd = p.open_tree(AT_FDCWD, b"/a", OPEN_TREE_CLONE).unwrap();
        let inner = &v.inner;
        let root = {
            let _g = inner.collector.enter();
            let found = p.lookup_at(&p.cred, fd, b"", AT_EMPTY_PATH, 0).unwrap();
            found.path.mnt
        };
        inner.mntget(root);
        let before = v.object_counts().mounts;
        let locked = inner.lock_mounts();
        // As a release inside a drain under the lock would.
        inner.put_anon_tree(root);
        // SAFETY: our reference keeps the mount alive.
        assert!(
            unsafe { &*root }.is_anon_root(),
            "not dissolved under the lock"
        );
        drop(locked);
        // SAFETY: as above.
        assert!(!unsafe { &*root }.is_anon_root(), "dissolved at the unlock");
        assert_eq!(inner.mounts.anon.tree_ids(), Vec::<u64>::new());
        // The descriptor's own close finds it dissolved already.
        p.close(fd).unwrap();
        inner.mntput(root);
        v.flush();
        assert_eq!(v.object_counts().mounts, before - 1);
        drop(p);
        v.flush();
        v.check_invariants().unwrap();
    }
}
