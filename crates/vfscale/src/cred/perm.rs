//! Stand-in; replaced by the tmpfsdata branch.
use super::Cred;
use crate::abi::*;
pub const MAY_EXEC: u32 = 1;
pub const MAY_WRITE: u32 = 2;
pub const MAY_READ: u32 = 4;
pub fn may_access(cred: &Cred, mode: u32, uid: u32, gid: u32, mask: u32) -> Result<(), Errno> {
    if cred.is_root() {
        if mask & MAY_EXEC == 0 || s_isdir(mode) || mode & 0o111 != 0 {
            return Ok(());
        }
        return Err(Errno::EACCES);
    }
    let bits = if cred.fsuid == uid { (mode >> 6) & 7 } else if cred.in_group(gid) { (mode >> 3) & 7 } else { mode & 7 };
    if bits & mask == mask { Ok(()) } else { Err(Errno::EACCES) }
}
pub fn may_search_fast(mode: u32) -> bool {
    mode & 0o111 == 0o111
}
pub fn sticky_may_delete(cred: &Cred, dir_mode: u32, dir_uid: u32, victim_uid: u32) -> bool {
    dir_mode & S_ISVTX == 0 || cred.is_root() || cred.fsuid == dir_uid || cred.fsuid == victim_uid
}
pub fn may_chmod(cred: &Cred, inode_uid: u32) -> Result<(), Errno> {
    if cred.is_root() || cred.fsuid == inode_uid { Ok(()) } else { Err(Errno::EPERM) }
}
pub fn chmod_mode(cred: &Cred, inode_mode: u32, inode_gid: u32, requested: u32) -> u32 {
    let mut m = (inode_mode & S_IFMT) | (requested & S_IALLUGO);
    if !cred.is_root() && !cred.in_group(inode_gid) {
        m &= !S_ISGID;
    }
    m
}
pub fn may_chown(cred: &Cred, inode_uid: u32, inode_gid: u32, new_uid: Option<u32>, new_gid: Option<u32>) -> Result<(), Errno> {
    if cred.is_root() {
        return Ok(());
    }
    if let Some(u) = new_uid {
        if u != inode_uid {
            return Err(Errno::EPERM);
        }
    }
    if let Some(g) = new_gid {
        if g != inode_gid && (cred.fsuid != inode_uid || !cred.in_group(g)) {
            return Err(Errno::EPERM);
        }
    }
    if cred.fsuid != inode_uid && (new_uid.is_some() || new_gid.is_some()) {
        return Err(Errno::EPERM);
    }
    Ok(())
}
pub fn chown_mode(_cred: &Cred, mode: u32, is_dir: bool) -> u32 {
    if is_dir {
        return mode;
    }
    let mut m = mode & !S_ISUID;
    if m & S_IXGRP != 0 {
        m &= !S_ISGID;
    }
    m
}
pub fn write_strip_mode(cred: &Cred, mode: u32, _gid: u32) -> Option<u32> {
    if cred.is_root() {
        return None;
    }
    let mut m = mode & !S_ISUID;
    if m & S_IXGRP != 0 {
        m &= !S_ISGID;
    }
    (m != mode).then_some(m)
}
pub fn new_inode_owner(cred: &Cred, dir_mode: u32, dir_gid: u32, mode: u32) -> (u32, u32, u32) {
    if dir_mode & S_ISGID != 0 {
        let mut m = mode;
        if s_isdir(mode) {
            m |= S_ISGID;
        } else if m & (S_ISGID | S_IXGRP) == (S_ISGID | S_IXGRP) && !cred.in_group(dir_gid) && !cred.is_root() {
            m &= !S_ISGID;
        }
        (cred.fsuid, dir_gid, m)
    } else {
        (cred.fsuid, cred.fsgid, mode)
    }
}
pub fn may_set_times(cred: &Cred, inode_uid: u32, explicit_times: bool, can_write: bool) -> Result<(), Errno> {
    if cred.is_root() || cred.fsuid == inode_uid {
        return Ok(());
    }
    if explicit_times {
        return Err(Errno::EPERM);
    }
    if can_write { Ok(()) } else { Err(Errno::EACCES) }
}
