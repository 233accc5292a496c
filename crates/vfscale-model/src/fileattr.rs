//! Inode flags of the model (chattr and lsattr): FS_IOC_GETFLAGS,
//! FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR on tmpfs,
//! written from Linux's fs/file_attr.c and mm/shmem.c (shmem_fileattr_get
//! and _set), and the flags' translations (to xflags, to statx bits).
//!
//! Invariants:
//! - a node's `flags` hold only the four flags tmpfs keeps (immutable,
//!   append-only, nodump, noatime); a change goes through `set_fileattr`
//!   and sets ctime;
//! - checks fail in Linux's order: the descriptor (EBADF, O_PATH
//!   included); for FSSETXATTR, xflags Linux does not know (EOPNOTSUPP),
//!   then the read-only xflags (PREALLOC, HASATTR) are dropped; for a
//!   change, a read-only mount or instance (EROFS, whatever the file
//!   is); an inode without flags
//!   (ENOTTY: everything but a regular file or directory); the owner or
//!   root (EPERM); immutable or append-only changed by anyone but root
//!   (EPERM); the FSSETXATTR record's own rules (EINVAL, then EOPNOTSUPP
//!   for anything tmpfs keeps no room for); flags tmpfs does not keep
//!   (EOPNOTSUPP);
//! - what the flags forbid elsewhere is enforced where Linux enforces it:
//!   perm.rs (MAY_WRITE on an immutable inode), sys.rs (open, may_delete,
//!   link, setattr, truncate, fallocate, copy_file_range, atime) and
//!   xattr.rs.

use crate::perm::owner_or_root;
use crate::state::{now, Pid, State};
use vfscale::abi::*;
use vfscale::Fd;

/// The flags tmpfs keeps (SHMEM_FL_USER_MODIFIABLE; FS_CASEFOLD_FL needs
/// an instance with an encoding, which the model never has).
pub(crate) const KEPT: u32 = FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL;
/// The flags a new inode takes from its directory (SHMEM_FL_INHERITED).
pub(crate) const INHERITED: u32 = FS_NODUMP_FL | FS_NOATIME_FL;
/// The flags only CAP_LINUX_IMMUTABLE may change.
const NEEDS_CAP: u32 = FS_IMMUTABLE_FL | FS_APPEND_FL;

/// FS_*_FL flags and their FS_XFLAG_* twins (FS_COMMON_FL and
/// FS_XFLAG_COMMON, as fileattr_fill_flags and fileattr_fill_xflags pair
/// them).
const TWINS: [(u32, u32); 7] = [
    (0x0000_0008, 0x0000_0020), // sync
    (0x0000_0010, 0x0000_0008), // immutable
    (0x0000_0020, 0x0000_0010), // append
    (0x0000_0040, 0x0000_0080), // nodump
    (0x0000_0080, 0x0000_0040), // noatime
    (0x0200_0000, 0x0000_8000), // dax
    (0x2000_0000, 0x0000_0200), // projinherit
];

/// The xflags with a flag twin.
const XFLAG_COMMON: u32 = 0x20 | 0x08 | 0x10 | 0x80 | 0x40 | 0x8000 | 0x200;
const XFLAG_EXTSIZE: u32 = 0x0800;
const XFLAG_EXTSZINHERIT: u32 = 0x1000;
const XFLAG_COWEXTSIZE: u32 = 0x1_0000;
/// Read-only (FS_XFLAG_PREALLOC | FS_XFLAG_HASATTR): dropped from a
/// request.
const XFLAG_READ_ONLY: u32 = 0x8000_0002;
/// Every xflag Linux 6.18 knows (FS_XFLAGS_MASK).
const XFLAGS_KNOWN: u32 = 0x8001_fffb;

/// The xflags that say what `flags` say.
fn to_xflags(flags: u32) -> u32 {
    TWINS
        .iter()
        .filter(|t| flags & t.0 != 0)
        .fold(0, |x, t| x | t.1)
}

/// The flags that say what `xflags` say (the rest have no twin).
fn from_xflags(xflags: u32) -> u32 {
    TWINS
        .iter()
        .filter(|t| xflags & t.1 != 0)
        .fold(0, |f, t| f | t.0)
}

/// statx's `attributes` for a tmpfs inode with `flags` (shmem_getattr).
pub(crate) fn statx_attributes(flags: u32) -> u64 {
    let mut a = 0;
    if flags & FS_APPEND_FL != 0 {
        a |= STATX_ATTR_APPEND;
    }
    if flags & FS_IMMUTABLE_FL != 0 {
        a |= STATX_ATTR_IMMUTABLE;
    }
    if flags & FS_NODUMP_FL != 0 {
        a |= STATX_ATTR_NODUMP;
    }
    a
}

/// What a set call asks for.
#[derive(Clone, Copy)]
pub(crate) enum Change {
    Flags(u32),
    Xattr(FsXattr),
}

impl State {
    /// The node of a descriptor the ioctls accept: EBADF for none or an
    /// O_PATH one (fdget), ENOTTY where the inode has no flags.
    fn fileattr_node(&self, pid: Pid, fd: Fd) -> SysResult<crate::node::NodeId> {
        let f = self.fd_get(pid, fd)?;
        let id = self.file(f).loc.node;
        has_flags(self, id)?;
        Ok(id)
    }

    pub fn sys_fs_ioc_getflags(&mut self, pid: Pid, fd: Fd) -> SysResult<u32> {
        let id = self.fileattr_node(pid, fd)?;
        Ok(self.node(id).flags)
    }

    /// FSGETXATTR: the flags as xflags; tmpfs has no extent sizes, extents
    /// or projects.
    pub fn sys_fs_ioc_fsgetxattr(&mut self, pid: Pid, fd: Fd) -> SysResult<FsXattr> {
        let id = self.fileattr_node(pid, fd)?;
        Ok(FsXattr {
            xflags: to_xflags(self.node(id).flags),
            ..FsXattr::default()
        })
    }

    pub fn sys_fs_ioc_setflags(&mut self, pid: Pid, fd: Fd, flags: u32) -> SysResult<()> {
        self.set_fileattr(pid, fd, Change::Flags(flags))
    }

    pub fn sys_fs_ioc_fssetxattr(&mut self, pid: Pid, fd: Fd, attr: FsXattr) -> SysResult<()> {
        self.set_fileattr(pid, fd, Change::Xattr(attr))
    }

    /// ioctl_setflags / ioctl_fssetxattr, vfs_fileattr_set,
    /// fileattr_set_prepare and shmem_fileattr_set.
    fn set_fileattr(&mut self, pid: Pid, fd: Fd, change: Change) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        // copy_fsxattr_from_user.
        let change = match change {
            Change::Xattr(x) => {
                if x.xflags & !XFLAGS_KNOWN != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                Change::Xattr(FsXattr {
                    xflags: x.xflags & !XFLAG_READ_ONLY,
                    ..x
                })
            }
            c => c,
        };
        let loc = self.file(f).loc;
        // mnt_want_write_file.
        self.want_write(loc.mnt)?;
        has_flags(self, loc.node)?;
        let n = self.node(loc.node);
        if !owner_or_root(&ctx.cred, n) {
            return Err(Errno::EPERM);
        }
        let new = match change {
            Change::Flags(fl) => fl,
            Change::Xattr(x) => from_xflags(x.xflags),
        };
        if (new ^ n.flags) & NEEDS_CAP != 0 && !ctx.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if let Change::Xattr(x) = change {
            check_fsxattr(&x, n.is_reg(), n.is_dir())?;
        }
        if new & !KEPT != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let n = self.node_mut(loc.node);
        n.flags = new;
        n.ctime = now();
        Ok(())
    }
}

/// Whether the inode has fileattr operations: shmem's regular files and
/// directories do; its symlinks and special files do not (the ioctl falls
/// through to ENOTTY).
fn has_flags(st: &State, id: crate::node::NodeId) -> SysResult<()> {
    let n = st.node(id);
    if n.is_reg() || n.is_dir() {
        Ok(())
    } else {
        Err(Errno::ENOTTY)
    }
}

/// fileattr_set_prepare's checks of a record (the old one has project 0
/// and no extent sizes), then shmem's refusal of anything beyond the
/// flags (fileattr_has_fsx).
fn check_fsxattr(x: &FsXattr, is_reg: bool, is_dir: bool) -> SysResult<()> {
    // A changed project id must be a valid one.
    if x.projid != 0 && x.projid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    if x.xflags & XFLAG_EXTSIZE != 0 && !is_reg {
        return Err(Errno::EINVAL);
    }
    if x.xflags & XFLAG_EXTSZINHERIT != 0 && !is_dir {
        return Err(Errno::EINVAL);
    }
    // (COWEXTSIZE and DAX on other types: never here, only regular files
    // and directories get this far.)
    let mut xflags = x.xflags;
    if x.extsize == 0 {
        xflags &= !(XFLAG_EXTSIZE | XFLAG_EXTSZINHERIT);
    }
    if x.cowextsize == 0 {
        xflags &= !XFLAG_COWEXTSIZE;
    }
    if xflags & !XFLAG_COMMON != 0 || x.extsize != 0 || x.projid != 0 || x.cowextsize != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twins_are_linuxs() {
        // Against the ABI's own table, which is written separately.
        for bit in 0..32 {
            let f = 1u32 << bit;
            assert_eq!(to_xflags(f), xflags_of(f), "flag {f:#x}");
            assert_eq!(from_xflags(f), flags_of(f), "xflag {f:#x}");
        }
        assert_eq!(XFLAGS_KNOWN, FS_XFLAGS_MASK);
        assert_eq!(XFLAG_COMMON, FS_XFLAG_COMMON);
        assert_eq!(KEPT, TMPFS_FL_MODIFIABLE);
        assert_eq!(INHERITED, TMPFS_FL_INHERITED);
        assert_eq!(statx_attributes(KEPT), statx_attributes_of(KEPT));
    }

    #[test]
    fn records_beyond_the_flags_are_refused() {
        let rec = |xflags, extsize, projid| FsXattr {
            xflags,
            extsize,
            projid,
            ..FsXattr::default()
        };
        assert_eq!(check_fsxattr(&rec(0x08 | 0x80, 0, 0), true, false), Ok(()));
        assert_eq!(
            check_fsxattr(&rec(XFLAG_EXTSIZE, 0, 0), true, false),
            Ok(())
        );
        assert_eq!(
            check_fsxattr(&rec(XFLAG_EXTSIZE, 0, 0), false, true),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_fsxattr(&rec(XFLAG_EXTSZINHERIT, 4096, 0), true, false),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_fsxattr(&rec(XFLAG_EXTSZINHERIT, 4096, 0), false, true),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            check_fsxattr(&rec(0, 0, u32::MAX), true, false),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_fsxattr(&rec(0, 0, 7), true, false),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            check_fsxattr(&rec(0x1, 0, 0), true, false),
            Err(Errno::EOPNOTSUPP)
        );
    }
}
