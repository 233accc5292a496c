//! The new mount API, as Linux 6.18 has it: open_tree(2) and
//! move_mount(2) over detached trees (mount/anon.rs), and fsopen(2),
//! fsconfig(2), fsmount(2) and fspick(2) over mount configurations
//! (mount/config.rs). Service managers and container runtimes copy a
//! tree with open_tree(OPEN_TREE_CLONE) or make a new instance with
//! fsopen, fsconfig and fsmount, change it with mount_setattr while
//! nobody can see it, and attach it with move_mount; or they drop the
//! descriptor, and the copy goes.
//!
//! A detached tree's root is held by the descriptor's file
//! (`FMODE_NEED_UNMOUNT`); what happens at its last close is anon.rs's.
//! A configuration is owned by its descriptor's file alone; calls reach
//! it through a reference on the file (`ConfigHold`).

use super::Process;
use crate::abi::*;
use crate::file::{FMODE_MOUNT_CONFIG, FMODE_NEED_UNMOUNT, FMODE_PATH, FMODE_READ, FMODE_WRITE};
use crate::fs::SuperBlock;
use crate::mount::config::{ConfigState, FsType, MountConfig, Phase, Value};
use crate::mount::flags::{from_mount_attr, MNT_NOATIME, MNT_RELATIME};
use std::sync::Arc;

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
            || flags & (MOVE_MOUNT_BENEATH | MOVE_MOUNT_SET_GROUP)
                == MOVE_MOUNT_BENEATH | MOVE_MOUNT_SET_GROUP
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
        if flags & MOVE_MOUNT_SET_GROUP != 0 {
            return self.set_group(&src, &tgt);
        }
        self.do_move_mount(&mut list, &src, &tgt, flags & MOVE_MOUNT_BENEATH != 0)
    }

    /// do_set_group: mount `to` joins the propagation of mount `from`
    /// (CRIU restores peer groups with it). Both must be mounted in some
    /// namespace (may_change_propagation) and named at their roots, on
    /// one instance, `to`'s root at or beneath `from`'s (is_subdir, read
    /// as a snapshot of the parents); then `set_peer_group`'s rules.
    /// Caller holds the table lock.
    fn set_group(
        &self,
        from: &crate::dcache::walk::Found,
        to: &crate::dcache::walk::Found,
    ) -> SysResult<()> {
        let (f, t) = (from.mount(), to.mount());
        if f.ns_id() == 0 || t.ns_id() == 0 {
            return Err(Errno::EINVAL);
        }
        let beneath = t.root == f.root || super::names::is_ancestor(f.root, t.root);
        if from.path.dentry != f.root
            || to.path.dentry != t.root
            || !std::ptr::eq(f.sb(), t.sb())
            || !beneath
        {
            return Err(Errno::EINVAL);
        }
        self.vfs.set_peer_group(from.path.mnt, to.path.mnt)
    }
}

impl Process {
    pub(crate) fn sys_fsopen(&self, fstype: &[u8], flags: u32) -> SysResult<Fd> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & !FSOPEN_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        // strndup_user(PAGE_SIZE): a name that long is no C string here.
        if fstype.len() >= 4096 || fstype.contains(&0) {
            return Err(Errno::EINVAL);
        }
        let fstype = FsType::of(fstype).ok_or(Errno::ENODEV)?;
        self.install_config(|| MountConfig::new(fstype), flags & FSOPEN_CLOEXEC != 0)
    }

    /// A descriptor of the configuration `make` makes (fsopen's, fspick's:
    /// Linux's `anon_inode:[fscontext]`), on the shared anonymous inode;
    /// ENOMEM when the caller's group has no room for it.
    fn install_config(&self, make: impl FnOnce() -> MountConfig, cloexec: bool) -> SysResult<Fd> {
        self.vfs.admit(super::anon::ANON_BYTES, Errno::ENOMEM)?;
        let config = Arc::into_raw(Arc::new(make()));
        let f = self.shared_anon_file(
            FMODE_READ | FMODE_WRITE | FMODE_MOUNT_CONFIG,
            O_RDWR,
            config as *const (),
        );
        Ok(self.install_all([f], cloexec)?[0])
    }

    /// fsconfig(2): `key` and `value` are the call's pointers (None for
    /// NULL); a value the command takes as a blob, a path or nothing is
    /// not looked at beyond its presence.
    pub(crate) fn sys_fsconfig(
        &self,
        fd: Fd,
        cmd: u32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        aux: i32,
    ) -> SysResult<()> {
        if fd < 0 {
            return Err(Errno::EINVAL);
        }
        let (k, v) = (key.is_some(), value.is_some());
        let args_ok = match cmd {
            FSCONFIG_SET_FLAG => k && !v && aux == 0,
            FSCONFIG_SET_STRING => k && v && aux == 0,
            FSCONFIG_SET_BINARY => k && v && aux > 0 && aux <= 1024 * 1024,
            FSCONFIG_SET_PATH | FSCONFIG_SET_PATH_EMPTY => k && v && (aux == AT_FDCWD || aux >= 0),
            FSCONFIG_SET_FD => k && !v && aux >= 0,
            FSCONFIG_CMD_CREATE | FSCONFIG_CMD_RECONFIGURE | FSCONFIG_CMD_CREATE_EXCL => {
                !k && !v && aux == 0
            }
            _ => return Err(Errno::EOPNOTSUPP),
        };
        if !args_ok {
            return Err(Errno::EINVAL);
        }
        let hold = self.mount_config_of(fd)?;
        // strndup_user(256) of the key and a string value.
        let too_long = |s: &[u8]| s.len() >= 256 || s.contains(&0);
        if key.is_some_and(too_long) || (cmd == FSCONFIG_SET_STRING && value.is_some_and(too_long))
        {
            return Err(Errno::EINVAL);
        }
        let parsed = match cmd {
            FSCONFIG_SET_FLAG => Value::Flag,
            FSCONFIG_SET_STRING => Value::String(value.unwrap_or_default()),
            FSCONFIG_SET_PATH | FSCONFIG_SET_PATH_EMPTY => {
                // getname: an empty path only with SET_PATH_EMPTY.
                let path = value.unwrap_or_default();
                if path.len() >= PATH_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                if path.is_empty() && cmd == FSCONFIG_SET_PATH {
                    return Err(Errno::ENOENT);
                }
                Value::Other
            }
            FSCONFIG_SET_FD => {
                // fget: any open descriptor.
                let f = self.fd_file(aux)?;
                self.vfs.fput(f);
                Value::Other
            }
            _ => Value::Other,
        };
        let mut state = hold.config().state.lock();
        state.finish_clean();
        match cmd {
            FSCONFIG_CMD_CREATE | FSCONFIG_CMD_CREATE_EXCL => self.config_create(&mut state),
            FSCONFIG_CMD_RECONFIGURE => self.config_reconfigure(&mut state),
            _ => state.parse(key.unwrap_or_default(), parsed),
        }
    }

    /// vfs_cmd_create: the instance the parameters describe.
    fn config_create(&self, state: &mut ConfigState) -> SysResult<()> {
        if state.phase != Phase::CreateParams {
            return Err(Errno::EBUSY);
        }
        let made = self.create_instance(state);
        match made {
            Ok(sb) => {
                if state.fstype == FsType::Tmpfs {
                    state.apply_tmpfs(&sb);
                }
                state.instance = Some(sb);
                state.phase = Phase::AwaitingMount;
                Ok(())
            }
            Err(e) => {
                state.phase = Phase::Failed;
                Err(e)
            }
        }
    }

    /// The backend and instance a create makes, with the messages of a
    /// passthrough's missing or unusable source (get_tree_bdev's).
    fn create_instance(&self, state: &mut ConfigState) -> SysResult<Arc<SuperBlock>> {
        let fs = match (state.fstype, state.source.clone()) {
            (FsType::Passthrough, None) => {
                state.log_error(false, &[b"No source specified"]);
                return Err(Errno::EINVAL);
            }
            (fstype, source) => fstype.filesystem(source.as_deref()).inspect_err(|_| {
                let source = source.unwrap_or_default();
                state.log_error(false, &[&source, b": Can't open the host directory"]);
            })?,
        };
        self.new_instance_of(fs, state.sb_flags, state.root_mode, state.root_owner)
    }

    /// vfs_cmd_reconfigure: reconfigure_super with the flags ever named
    /// (module doc of mount/config.rs) — EINVAL for one a remount cannot
    /// change (dirsync), then the read-only bit's checks, then tmpfs's own
    /// (shmem_reconfigure: a limit on an instance made without one, noswap
    /// on one made with swap, a limit below what is in use; EINVAL, with
    /// their messages), and only then the change: of the flags the
    /// instance has, the read-only bit and those statfs reports; tmpfs's
    /// limits given.
    fn config_reconfigure(&self, state: &mut ConfigState) -> SysResult<()> {
        if state.phase != Phase::ReconfParams {
            return Err(Errno::EBUSY);
        }
        let sb = state.instance.clone().expect("an instance to reconfigure");
        let _list = self.vfs.lock_mounts();
        let r = self.reconfigure_config(&sb, state);
        state.phase = if r.is_ok() {
            Phase::AwaitingReconf
        } else {
            Phase::Failed
        };
        r
    }

    /// reconfigure_super for `config_reconfigure` and mount(2)'s remount:
    /// its checks and change. Caller holds the mount table's lock.
    pub(super) fn reconfigure_config(
        &self,
        sb: &SuperBlock,
        state: &mut ConfigState,
    ) -> SysResult<()> {
        use crate::mount::config::REMOUNT_FLAGS;
        use crate::sync::atomic::Ordering::Relaxed;
        let mask = state.sb_flags_mask;
        if mask & !REMOUNT_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let readonly = if mask & MS_RDONLY != 0 && !sb.mounts.lock().is_empty() {
            state.sb_flags & MS_RDONLY != 0
        } else {
            sb.is_readonly()
        };
        self.reconfigure_instance(sb, readonly, || state.check_tmpfs_reconfigure(sb))?;
        // Relaxed (both): statfs reads a snapshot.
        let named = SuperBlock::st_flags_of(mask);
        let st = sb.st_flags.load(Relaxed) & !named;
        sb.st_flags.store(
            st | SuperBlock::st_flags_of(state.sb_flags) & named,
            Relaxed,
        );
        if state.fstype == FsType::Tmpfs {
            state.apply_tmpfs(sb);
        }
        Ok(())
    }

    /// fsmount(2): a detached mount of the instance the configuration
    /// made (mount/anon.rs), with the MOUNT_ATTR_* flags `attr_flags`.
    pub(crate) fn sys_fsmount(&self, fd: Fd, flags: u32, attr_flags: u64) -> SysResult<Fd> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & !FSMOUNT_CLOEXEC != 0 || attr_flags & !FSMOUNT_VALID != 0 {
            return Err(Errno::EINVAL);
        }
        let mut bits = from_mount_attr(attr_flags);
        match attr_flags & MOUNT_ATTR__ATIME {
            MOUNT_ATTR_STRICTATIME => {}
            MOUNT_ATTR_NOATIME => bits |= MNT_NOATIME,
            MOUNT_ATTR_RELATIME => bits |= MNT_RELATIME,
            _ => return Err(Errno::EINVAL),
        }
        let hold = self.mount_config_of(fd)?;
        let mut state = hold.config().state.lock();
        let Some(sb) = state.instance.clone() else {
            return Err(Errno::EINVAL);
        };
        if state.phase != Phase::AwaitingMount {
            return Err(Errno::EBUSY);
        }
        let root = sb.root();
        self.vfs.dget(root);
        let source = state.source.clone().unwrap_or_else(|| b"none".to_vec());
        let m = self.vfs.new_mount(sb, root, bits, &source);
        let tree = [crate::mount::propagation::TreeMount {
            mount: m,
            parent: None,
            mountpoint: core::ptr::null(),
        }];
        let mut list = self.vfs.lock_mounts();
        let top = self.vfs.make_anon_tree(&mut list, &tree, 0);
        drop(list);
        state.mounted = true;
        state.phase = Phase::AwaitingReconf;
        drop(state);
        // The file's references: the mount and its root dentry.
        self.vfs.mntget(top);
        self.vfs.dget(root);
        // SAFETY: the root dentry of a live instance is positive.
        let inode = unsafe { &*root }.inode_ptr();
        let file = self.vfs.alloc_file(
            top,
            root,
            inode,
            FMODE_PATH | FMODE_NEED_UNMOUNT,
            super::open::open_status(O_PATH),
            Arc::as_ptr(&self.cred) as usize,
            core::ptr::null(),
        );
        let cloexec = if flags & FSMOUNT_CLOEXEC != 0 {
            O_CLOEXEC
        } else {
            0
        };
        self.install_opened(file, cloexec)
    }

    /// fspick(2): a configuration descriptor for reconfiguring the instance
    /// of the mount whose root `path` names (any mount's: Linux checks no
    /// namespace), parameters first (FSCONFIG_CMD_RECONFIGURE applies
    /// them).
    pub(crate) fn sys_fspick(&self, dirfd: Fd, path: &[u8], flags: u32) -> SysResult<Fd> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let known =
            FSPICK_CLOEXEC | FSPICK_SYMLINK_NOFOLLOW | FSPICK_NO_AUTOMOUNT | FSPICK_EMPTY_PATH;
        if flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let at_flags = if flags & FSPICK_SYMLINK_NOFOLLOW != 0 {
            AT_SYMLINK_NOFOLLOW
        } else {
            0
        } | if flags & FSPICK_EMPTY_PATH != 0 {
            AT_EMPTY_PATH
        } else {
            0
        };
        let sb = {
            let _g = self.vfs.collector.enter();
            let found = self.lookup_at(&self.cred, dirfd, path, at_flags, 0)?;
            // SAFETY: the walk's guard keeps the mount allocated, and the
            // mount its instance.
            let m = unsafe { &*found.path.mnt };
            if found.path.dentry != m.root {
                return Err(Errno::EINVAL);
            }
            m.sb_arc()
        };
        let fstype = FsType::of(sb.fs.fs_type().as_bytes()).ok_or(Errno::ENODEV)?;
        self.install_config(
            || MountConfig::reconfiguring(fstype, sb),
            flags & FSPICK_CLOEXEC != 0,
        )
    }

    /// The configuration behind fsopen descriptor `fd`, held through its
    /// file for the caller's call: EBADF for no descriptor, EINVAL for
    /// another kind of file.
    fn mount_config_of(&self, fd: Fd) -> SysResult<ConfigHold<'_>> {
        let f = self.fd_file(fd)?;
        if f.file().fmode & FMODE_MOUNT_CONFIG == 0 {
            self.vfs.fput(f);
            return Err(Errno::EINVAL);
        }
        Ok(ConfigHold {
            vfs: &self.vfs,
            file: Some(f),
        })
    }
}

/// A configuration held through a reference on its descriptor's file: the
/// file alone owns the configuration, so its release (the file's final
/// put, possibly a drain under the mount table's lock) never finds a
/// call inside the configuration's mutex, which calls hold before the
/// table lock (fsmount, a reconfiguration).
struct ConfigHold<'a> {
    vfs: &'a crate::vfs::VfsInner,
    file: Option<crate::file::FileRef>,
}

impl ConfigHold<'_> {
    fn config(&self) -> &MountConfig {
        let file = self.file.as_ref().expect("held until dropped").file();
        // SAFETY: `mount_config_of` checked the file's kind, and our
        // reference holds off its final put.
        unsafe { MountConfig::of_file(file) }
    }
}

impl Drop for ConfigHold<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.file.take() {
            self.vfs.fput(f);
        }
    }
}

/// The MOUNT_ATTR_* bits fsmount takes (FSMOUNT_VALID_FLAGS).
const FSMOUNT_VALID: u64 = MOUNT_ATTR_RDONLY
    | MOUNT_ATTR_NOSUID
    | MOUNT_ATTR_NODEV
    | MOUNT_ATTR_NOEXEC
    | MOUNT_ATTR__ATIME
    | MOUNT_ATTR_NODIRATIME
    | MOUNT_ATTR_NOSYMFOLLOW;

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
