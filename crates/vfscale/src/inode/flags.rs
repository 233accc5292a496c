//! Inode flags (chattr's `i`, `a`, `d`, `A`): where they live and the
//! rules for changing them (Linux's vfs_fileattr_set and fileattr_set_prepare
//! with tmpfs's shmem_fileattr_set).
//!
//! Invariants:
//! - The flags ride in the inode's mode word, above the ACL bits: each
//!   FS_*_FL of `TMPFS_FL_MODIFIABLE` shifted left by `MODE_FLAGS_SHIFT`
//!   (`MODE_FLAG_BITS`). A permission check reads the word anyway, so the
//!   immutable test costs no load. They change only inside an attribute
//!   write section (`AttrWriter::set_fs_flags`), as the mode does; readers
//!   take them with the mode under the seqcount (`perm_attr`), or with one
//!   load as a hint where Linux reads i_flags without a lock.
//! - `attr`, `stat` and `AttrWriter::get` hide them (`MODE_HIDDEN_BITS`);
//!   `AttrWriter::set_mode` keeps them.
//! - Only regular files and directories of tmpfs instances (memfds
//!   included) carry flags (`Inode::has_fileattr`): everything else
//!   answers ENOTTY, as Linux's inodes without fileattr operations.
//! - A new tmpfs inode takes `TMPFS_FL_INHERITED` from its directory
//!   (`inherited_flags`).

use super::{AttrWriter, Inode};
use crate::abi::*;
use crate::cred::acl::MODE_ACL_BITS;
use crate::cred::perm::owner_or_root;
use crate::cred::Cred;
use crate::sync::atomic::Ordering;

/// How far the flags are shifted into the mode word.
pub(crate) const MODE_FLAGS_SHIFT: u32 = 16;
/// The mode word's bits that hold the flags.
pub(crate) const MODE_FLAG_BITS: u32 = TMPFS_FL_MODIFIABLE << MODE_FLAGS_SHIFT;
pub(crate) const MODE_IMMUTABLE: u32 = FS_IMMUTABLE_FL << MODE_FLAGS_SHIFT;
pub(crate) const MODE_APPEND: u32 = FS_APPEND_FL << MODE_FLAGS_SHIFT;
pub(crate) const MODE_NOATIME: u32 = FS_NOATIME_FL << MODE_FLAGS_SHIFT;
/// IS_IMMUTABLE || IS_APPEND: what protects a name, the attributes and
/// the extended attributes.
pub(crate) const MODE_PROTECTED: u32 = MODE_IMMUTABLE | MODE_APPEND;
/// The mode word's bits that are not the file's mode.
pub(crate) const MODE_HIDDEN_BITS: u32 = MODE_ACL_BITS | MODE_FLAG_BITS;

const _: () = {
    assert!(MODE_FLAG_BITS & (S_IFMT | S_IALLUGO) == 0);
    assert!(MODE_FLAG_BITS & MODE_ACL_BITS == 0);
    assert!(MODE_FLAG_BITS >> MODE_FLAGS_SHIFT << MODE_FLAGS_SHIFT == MODE_FLAG_BITS);
};

/// The flag bits a new inode in a directory whose mode word is `dir_mode`
/// starts with (shmem_get_inode: SHMEM_FL_INHERITED).
#[inline(always)]
pub(crate) fn inherited_flags(dir_mode: u32) -> u32 {
    dir_mode & (TMPFS_FL_INHERITED << MODE_FLAGS_SHIFT)
}

/// The FS_*_FL flags in a mode word.
#[inline(always)]
pub(crate) fn flags_in(mode: u32) -> u32 {
    (mode & MODE_FLAG_BITS) >> MODE_FLAGS_SHIFT
}

/// What FS_IOC_SETFLAGS or FS_IOC_FSSETXATTR asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FileattrChange {
    Flags(u32),
    /// Already checked against FS_XFLAGS_MASK, the read-only xflags
    /// dropped.
    Xattr(FsXattr),
}

impl Inode {
    /// The inode's FS_*_FL flags (FS_IOC_GETFLAGS).
    pub fn fs_flags(&self) -> u32 {
        // Relaxed: a snapshot, as Linux's unlocked i_flags read; a change
        // is a seqcount write section (`set_fileattr`).
        flags_in(self.mode.load(Ordering::Relaxed))
    }

    /// The inode has fileattr operations: a regular file or directory of
    /// a tmpfs instance (shmem's inode operations; its special files,
    /// symlinks and the pseudo filesystems' inodes have none).
    pub(crate) fn has_fileattr(&self) -> bool {
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*self.sb };
        matches!(self.file_type(), S_IFREG | S_IFDIR) && sb.fs.has_inode_flags()
    }

    /// The statx attributes (`attributes`, `attributes_mask`) of the inode,
    /// less STATX_ATTR_MOUNT_ROOT, which the path decides.
    pub(crate) fn statx_attributes(&self, mode_word: u32) -> (u64, u64) {
        // SAFETY: an inode's superblock outlives it.
        if unsafe { &*self.sb }.fs.has_inode_flags() {
            (
                statx_attributes_of(flags_in(mode_word)),
                STATX_ATTR_MASK_TMPFS,
            )
        } else {
            (0, STATX_ATTR_MASK_GENERIC)
        }
    }

    /// vfs_fileattr_set with shmem_fileattr_set, after the caller's checks
    /// (the request's xflags, the mount's write access, `has_fileattr`):
    /// owner or root, then the change's own rules, then the new flags and
    /// ctime in one write section, which also serializes concurrent
    /// changes (Linux holds the inode lock).
    pub(crate) fn set_fileattr(&self, cred: &Cred, change: FileattrChange) -> SysResult<()> {
        if !owner_or_root(cred, self.perm_attr().1) {
            return Err(Errno::EPERM);
        }
        let is_reg = self.file_type() == S_IFREG;
        let is_dir = self.is_dir();
        self.update_attr(|w| {
            let old = w.fs_flags();
            let flags = match change {
                FileattrChange::Flags(f) => f,
                FileattrChange::Xattr(x) => flags_of(x.xflags),
            };
            // fileattr_set_prepare.
            if (flags ^ old) & FS_FL_PROTECTING != 0 && !cred.is_root() {
                return Err(Errno::EPERM);
            }
            if let FileattrChange::Xattr(x) = change {
                xattr_prepare(x, is_reg, is_dir)?;
            }
            if flags & !TMPFS_FL_MODIFIABLE != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            w.set_fs_flags(flags);
            w.set_ctime(super::now());
            Ok(())
        })
    }
}

/// fileattr_set_prepare's checks of an FS_IOC_FSSETXATTR record (the
/// old record of a tmpfs inode has no extent sizes and project 0), then
/// shmem's refusal of anything but the flags (fileattr_has_fsx).
fn xattr_prepare(x: FsXattr, is_reg: bool, is_dir: bool) -> SysResult<()> {
    // A project id changes (from tmpfs's 0) only to a valid one:
    // (u32)-1 is not.
    if x.projid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    if x.xflags & FS_XFLAG_EXTSIZE != 0 && !is_reg {
        return Err(Errno::EINVAL);
    }
    if x.xflags & FS_XFLAG_EXTSZINHERIT != 0 && !is_dir {
        return Err(Errno::EINVAL);
    }
    // Extent size hints of zero turn their flags off.
    let mut xflags = x.xflags;
    if x.extsize == 0 {
        xflags &= !(FS_XFLAG_EXTSIZE | FS_XFLAG_EXTSZINHERIT);
    }
    if x.cowextsize == 0 {
        xflags &= !FS_XFLAG_COWEXTSIZE;
    }
    if xflags & !FS_XFLAG_COMMON != 0 || x.extsize != 0 || x.projid != 0 || x.cowextsize != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

impl AttrWriter<'_> {
    /// The FS_*_FL flags now.
    pub(crate) fn fs_flags(&self) -> u32 {
        flags_in(self.inode.mode.load(Ordering::Relaxed))
    }

    /// Replaces the flags (`TMPFS_FL_MODIFIABLE` bits only).
    pub(crate) fn set_fs_flags(&mut self, flags: u32) {
        debug_assert_eq!(flags & !TMPFS_FL_MODIFIABLE, 0);
        let m = self.inode.mode.load(Ordering::Relaxed) & !MODE_FLAG_BITS;
        self.inode
            .mode
            .store(m | (flags << MODE_FLAGS_SHIFT), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_records_tmpfs_refuses() {
        let rec = |xflags, extsize, projid| FsXattr {
            xflags,
            extsize,
            projid,
            ..FsXattr::default()
        };
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_IMMUTABLE, 0, 0), true, false),
            Ok(())
        );
        // A zero extent size clears its flag, and nothing is left to refuse.
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_EXTSIZE, 0, 0), true, false),
            Ok(())
        );
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_EXTSZINHERIT, 0, 0), false, true),
            Ok(())
        );
        // The flag on the wrong type is refused before that.
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_EXTSIZE, 0, 0), false, true),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_EXTSZINHERIT, 0, 0), true, false),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            xattr_prepare(rec(0, 0, u32::MAX), true, false),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            xattr_prepare(rec(0, 4096, 0), true, false),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            xattr_prepare(rec(0, 0, 1), true, false),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(
            xattr_prepare(rec(FS_XFLAG_REALTIME, 0, 0), true, false),
            Err(Errno::EOPNOTSUPP)
        );
    }

    #[test]
    fn flags_round_trip_through_the_mode_word() {
        let mode = S_IFREG | 0o644 | MODE_ACL_BITS;
        let word = mode | (TMPFS_FL_MODIFIABLE << MODE_FLAGS_SHIFT);
        assert_eq!(flags_in(word), TMPFS_FL_MODIFIABLE);
        assert_eq!(word & !MODE_HIDDEN_BITS, S_IFREG | 0o644);
        assert_eq!(
            flags_in(inherited_flags(word)),
            FS_NODUMP_FL | FS_NOATIME_FL
        );
    }
}
