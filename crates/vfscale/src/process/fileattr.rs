//! FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR and
//! FS_IOC_FSSETXATTR (chattr and lsattr), and their path-based form,
//! file_getattr and file_setattr (Linux 6.17): each call's own order of
//! checks (fs/file_attr.c: the record, then the file or path, then the
//! mount's write access, then whether the inode has flags at all); the
//! flags' rules are the inode's (inode/flags.rs).

use super::Process;
use crate::abi::*;
use crate::anon::{stream, Stream};
use crate::file::OpenFile;
use crate::inode::flags::FileattrChange;
use crate::inode::Inode;
use crate::mount::Mount;

impl Process {
    /// ioctl(FS_IOC_GETFLAGS).
    pub fn fs_ioc_getflags(&self, fd: Fd) -> SysResult<u32> {
        let _end = self.vfs.call_end();
        self.with_file(fd, false, |f| {
            let inode = fileattr_inode(f)?;
            Ok(inode.fs_flags())
        })
    }

    /// ioctl(FS_IOC_FSGETXATTR): the flags as xflags; tmpfs has no extent
    /// sizes or projects.
    pub fn fs_ioc_fsgetxattr(&self, fd: Fd) -> SysResult<FsXattr> {
        let _end = self.vfs.call_end();
        self.with_file(fd, false, |f| {
            let inode = fileattr_inode(f)?;
            Ok(FsXattr {
                xflags: xflags_of(inode.fs_flags()),
                ..FsXattr::default()
            })
        })
    }

    /// ioctl(FS_IOC_SETFLAGS).
    pub fn fs_ioc_setflags(&self, fd: Fd, flags: u32) -> SysResult<()> {
        self.set_fileattr(fd, FileattrChange::Flags(flags))
    }

    /// ioctl(FS_IOC_FSSETXATTR): EOPNOTSUPP for an xflag Linux does not
    /// know, before anything else; the read-only xflags are dropped.
    pub fn fs_ioc_fssetxattr(&self, fd: Fd, attr: &FsXattr) -> SysResult<()> {
        self.set_fileattr(fd, FileattrChange::Xattr(*attr))
    }

    fn set_fileattr(&self, fd: Fd, change: FileattrChange) -> SysResult<()> {
        let _end = self.vfs.call_end();
        // The descriptor (EBADF), then the record.
        self.with_file(fd, false, |f| {
            let change = match change {
                FileattrChange::Xattr(x) => FileattrChange::Xattr(FsXattr {
                    xflags: known_xflags(u64::from(x.xflags)).ok_or(Errno::EOPNOTSUPP)?,
                    ..x
                }),
                flags => flags,
            };
            // mnt_want_write_file, whatever the file is.
            let _write = f.mount().write_access()?;
            fileattr_inode(f)?.set_fileattr(&self.cred, change)
        })
    }

    /// file_getattr(2).
    pub fn file_getattr(
        &self,
        dirfd: Fd,
        path: &[u8],
        attr: &mut [u8],
        at_flags: i32,
    ) -> SysResult<()> {
        let _end = self.vfs.call_end();
        check_file_attr_call(attr.len(), at_flags)?;
        self.with_attr_target(dirfd, path, at_flags, |_, inode| {
            if !inode.has_fileattr() {
                return Err(Errno::EOPNOTSUPP);
            }
            let record = FileAttr {
                xflags: u64::from(xflags_of(inode.fs_flags())),
                ..FileAttr::default()
            };
            attr.fill(0);
            attr[..FILE_ATTR_SIZE_VER0].copy_from_slice(&record.to_bytes());
            Ok(())
        })
    }

    /// file_setattr(2): the record's size and bytes, its xflags (EINVAL
    /// for unknown ones here), then the path, the mount's write access
    /// and the inode (EOPNOTSUPP where the ioctls answer ENOTTY).
    pub fn file_setattr(
        &self,
        dirfd: Fd,
        path: &[u8],
        attr: &[u8],
        at_flags: i32,
    ) -> SysResult<()> {
        let _end = self.vfs.call_end();
        check_file_attr_call(attr.len(), at_flags)?;
        let (record, tail) = attr.split_at(FILE_ATTR_SIZE_VER0);
        // copy_struct_from_user: a larger record's extra bytes must be 0.
        if tail.iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
        let a = FileAttr::from_bytes(record.try_into().expect("the record's size"));
        let change = FileattrChange::Xattr(FsXattr {
            xflags: known_xflags(a.xflags).ok_or(Errno::EINVAL)?,
            extsize: a.extsize,
            nextents: 0,
            projid: a.projid,
            cowextsize: a.cowextsize,
        });
        self.with_attr_target(dirfd, path, at_flags, |mnt, inode| {
            let _write = mnt.write_access()?;
            if !inode.has_fileattr() {
                return Err(Errno::EOPNOTSUPP);
            }
            inode.set_fileattr(&self.cred, change)
        })
    }

    /// `op` on the mount and inode `path` names for file_getattr and
    /// file_setattr: an empty path with AT_EMPTY_PATH is the descriptor
    /// itself (EBADF for an O_PATH one), else a walk from `dirfd`.
    fn with_attr_target<R>(
        &self,
        dirfd: Fd,
        path: &[u8],
        at_flags: i32,
        op: impl FnOnce(&Mount, &Inode) -> SysResult<R>,
    ) -> SysResult<R> {
        if path.is_empty() && at_flags & AT_EMPTY_PATH != 0 && dirfd >= 0 {
            return self.with_file(dirfd, false, |f| op(f.mount(), f.inode()));
        }
        let _g = self.vfs.collector.enter();
        let found = self.lookup_at(&self.cred, dirfd, path, at_flags, 0)?;
        op(found.mount(), found.inode())
    }
}

/// The checks file_getattr and file_setattr make first: the flags, then
/// the record's size (a page at most, the first version's at least).
fn check_file_attr_call(size: usize, at_flags: i32) -> SysResult<()> {
    if at_flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    if size < FILE_ATTR_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// A request's xflags with the read-only ones dropped, or None if it has
/// one Linux does not know (FS_XFLAGS_MASK).
fn known_xflags(xflags: u64) -> Option<u32> {
    if xflags & !u64::from(FS_XFLAGS_MASK) != 0 {
        return None;
    }
    Some(xflags as u32 & !FS_XFLAG_RDONLY_MASK)
}

/// The inode of an open file whose filesystem keeps flags for it. For
/// the rest Linux hands the command to the file's own ioctl: an epoll's
/// answers EINVAL to what it does not know (ep_eventpoll_ioctl), every
/// other (pipes, sockets, device nodes, FIFOs, eventfds, inotify, backend
/// files) falls through to ENOTTY.
fn fileattr_inode(f: &OpenFile) -> SysResult<&Inode> {
    let inode = f.inode();
    if !inode.has_fileattr() {
        return Err(match stream(f) {
            Some(Stream::Epoll(_)) => Errno::EINVAL,
            _ => Errno::ENOTTY,
        });
    }
    Ok(inode)
}
