//! POSIX permission checks, as Linux's `generic_permission` and friends do
//! them, with a node's access ACL (acl.rs) when it has one.
//!
//! Invariants: every function here is pure (a `Cred` and an inode's mode,
//! uid, gid and flags — and for `inode_permission` its instance's
//! read-only bit — in, a verdict out). "Root" means `Cred::is_root()`
//! (fsuid 0), which the model treats as holding CAP_DAC_OVERRIDE,
//! CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_CHOWN, CAP_MKNOD,
//! CAP_SYS_CHROOT, CAP_SYS_ADMIN and CAP_LINUX_IMMUTABLE.

use crate::node::Node;
use vfscale::abi::*;
use vfscale::Cred;

pub(crate) const MAY_EXEC: u32 = 1;
pub(crate) const MAY_WRITE: u32 = 2;
pub(crate) const MAY_READ: u32 = 4;

/// `inode_permission(mask)` for MAY_READ/WRITE/EXEC bits: MAY_WRITE on an
/// immutable inode is EPERM, for everyone (before the bits); then the
/// owner class if fsuid owns the file; else the access ACL if there is one
/// and the group class (its mask) is not empty; else the group class if
/// the cred is in its group, else other; root passes everything on
/// directories and everything but exec of a file with no exec bit at all.
pub(crate) fn permission(cred: &Cred, node: &Node, mask: u32) -> SysResult<()> {
    if mask & MAY_WRITE != 0 && node.is_immutable() {
        return Err(Errno::EPERM);
    }
    let mode = node.mode;
    let by_acl = match &node.access_acl {
        Some(acl) if cred.fsuid != node.uid && mode & 0o070 != 0 => {
            Some(crate::acl::allows(acl, cred, node, mask))
        }
        _ => None,
    };
    let granted = if let Some(allowed) = by_acl {
        if allowed {
            7
        } else {
            0
        }
    } else if cred.fsuid == node.uid {
        (mode >> 6) & 7
    } else if cred.in_group(node.gid) {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    if mask & !granted & 7 == 0 {
        return Ok(());
    }
    if cred.is_root() && (node.is_dir() || mask & MAY_EXEC == 0 || mode & 0o111 != 0) {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// `inode_permission` with `sb_permission` in front: on a read-only
/// instance (`fs_readonly`) nobody gets MAY_WRITE to a regular file,
/// directory or symlink (EROFS, before the immutable test and the mode
/// bits); then `permission`.
pub(crate) fn inode_permission(
    cred: &Cred,
    node: &Node,
    mask: u32,
    fs_readonly: bool,
) -> SysResult<()> {
    if mask & MAY_WRITE != 0 && fs_readonly && (node.is_reg() || node.is_dir() || node.is_symlink())
    {
        return Err(Errno::EROFS);
    }
    permission(cred, node, mask)
}

/// `inode_owner_or_capable`: the fsuid owns the inode, or CAP_FOWNER.
pub(crate) fn owner_or_root(cred: &Cred, node: &Node) -> bool {
    cred.fsuid == node.uid || cred.is_root()
}

/// `in_group_or_capable`: may keep S_ISGID for group `gid`.
pub(crate) fn in_group_or_root(cred: &Cred, gid: u32) -> bool {
    cred.in_group(gid) || cred.is_root()
}

/// `check_sticky`: true if the sticky bit of `dir` forbids this cred to
/// remove or rename `victim` (EPERM).
pub(crate) fn sticky_denies(cred: &Cred, dir: &Node, victim: &Node) -> bool {
    dir.mode & S_ISVTX != 0 && cred.fsuid != victim.uid && cred.fsuid != dir.uid && !cred.is_root()
}

/// `setattr_should_drop_sgid`: S_ISGID is dropped (on chown, or on write
/// and truncate by a non-root caller) if group exec is set, or if the caller
/// may not keep it.
pub(crate) fn should_drop_sgid(cred: &Cred, node: &Node) -> bool {
    node.mode & S_ISGID != 0 && (node.mode & S_IXGRP != 0 || !in_group_or_root(cred, node.gid))
}

/// The mode bits a write or truncate by this cred clears
/// (`setattr_should_drop_suidgid`): none for root or non-regular files.
pub(crate) fn kill_privs_mask(cred: &Cred, node: &Node) -> u32 {
    if cred.is_root() || !node.is_reg() {
        return 0;
    }
    let mut kill = 0;
    if node.mode & S_ISUID != 0 {
        kill |= S_ISUID;
    }
    if should_drop_sgid(cred, node) {
        kill |= S_ISGID;
    }
    kill
}
