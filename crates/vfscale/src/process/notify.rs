//! inotify_init1, inotify_add_watch and inotify_rm_watch: an instance is a
//! file on the namespace's shared anonymous inode (as an epoll), its marks
//! live in the namespace's registry (notify/mod.rs).

use super::Process;
use crate::abi::*;
use crate::cred::perm::MAY_READ;
use crate::dcache::walk::WALK_DIRECTORY;
use crate::file::{FMODE_INOTIFY, FMODE_READ};
use crate::notify::inotify::Inotify;
use std::sync::Arc;

/// Every bit inotify_add_watch accepts (Linux's ALL_INOTIFY_BITS).
const ALL_INOTIFY_BITS: u32 = IN_ALL_EVENTS
    | IN_UNMOUNT
    | IN_Q_OVERFLOW
    | IN_IGNORED
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
    | IN_MASK_ADD
    | IN_MASK_CREATE
    | IN_ISDIR
    | IN_ONESHOT;

impl Process {
    /// inotify_init1(2).
    pub fn inotify_init1(&self, flags: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        self.charge_here();
        if flags & !(IN_NONBLOCK | IN_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        self.vfs.admit(super::anon::ANON_BYTES, Errno::ENOMEM)?;
        let raw = Arc::into_raw(Inotify::new());
        let f = self.shared_anon_file(
            FMODE_READ | FMODE_INOTIFY,
            O_RDONLY | (flags & IN_NONBLOCK),
            raw as *const (),
        );
        Ok(self.install_all([f], flags & IN_CLOEXEC != 0)?[0])
    }

    /// inotify_add_watch(2), with Linux's checks in its order: the mask's
    /// bits, the descriptor, the path (IN_DONT_FOLLOW, IN_ONLYDIR), read
    /// permission on the object, then the watch's own EEXIST.
    pub fn inotify_add_watch(&self, fd: Fd, path: &[u8], mask: u32) -> SysResult<i32> {
        let _end = self.vfs.call_end();
        if mask & !ALL_INOTIFY_BITS != 0 || mask & ALL_INOTIFY_BITS == 0 {
            return Err(Errno::EINVAL);
        }
        let group = self.inotify_of(fd)?;
        if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
            return Err(Errno::EINVAL);
        }
        let _g = self.vfs.collector.enter();
        let at = if mask & IN_DONT_FOLLOW != 0 {
            AT_SYMLINK_NOFOLLOW
        } else {
            0
        };
        let walk = if mask & IN_ONLYDIR != 0 {
            WALK_DIRECTORY
        } else {
            0
        };
        let found = self.lookup_at(&self.cred, AT_FDCWD, path, at, walk)?;
        found.inode().permission(&self.cred, MAY_READ)?;
        self.vfs.notify_add_watch(&group, &found, mask)
    }

    /// inotify_rm_watch(2).
    pub fn inotify_rm_watch(&self, fd: Fd, wd: i32) -> SysResult<()> {
        let _end = self.vfs.call_end();
        let group = self.inotify_of(fd)?;
        self.vfs.notify_rm_watch(&group, wd)
    }

    /// The instance behind `fd`: EBADF for no descriptor, EINVAL for one
    /// that is not an inotify file.
    fn inotify_of(&self, fd: Fd) -> SysResult<Arc<Inotify>> {
        self.with_file(fd, false, |f| {
            crate::anon::inotify_of(f).ok_or(Errno::EINVAL)
        })
    }
}
