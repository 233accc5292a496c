//! memfd: an anonymous regular file. It is an `AnonInode` whose inode body
//! is ordinary tmpfs file data, so read, write, pread, lseek, ftruncate and
//! fstat take the regular-file paths unchanged; its dentry stores the name
//! ("memfd:NAME") because it is user-given. Created by
//! `Process::memfd_create` (process/anon.rs); freed like every anonymous
//! node by its last file's close, which also returns its blocks to the
//! anonymous superblock's accounting (anon/mod.rs).
//!
//! **Seals** (F_ADD_SEALS / F_GET_SEALS, Linux's mm/memfd.c and the checks
//! in mm/shmem.c): a memfd carries its seal set in its node
//! (`AnonObj::Memfd`). The rules below are Linux's:
//! - a memfd made without MFD_ALLOW_SEALING starts with F_SEAL_SEAL, so it
//!   takes no seal; every other tmpfs file (named, O_TMPFILE) answers
//!   F_GET_SEALS with F_SEAL_SEAL alone, which it can never lose, so only a
//!   memfd's changes are checked here;
//! - F_SEAL_WRITE and F_SEAL_FUTURE_WRITE refuse writes (and hole
//!   punches) with EPERM, F_SEAL_SHRINK a smaller size, F_SEAL_GROW a
//!   larger one (a write refused page by page: what lies before the first
//!   page that would pass the end is written, as shmem_write_begin), and
//!   F_SEAL_EXEC a chmod that changes an execute bit; sealing EXEC on a
//!   file with an execute bit also seals writing, growing and shrinking.
//!   (There is no mmap, so F_SEAL_WRITE has no mappings to wait for.)
//!
//! Invariant: the seal set only grows, and it changes only under the
//! inode's data lock (write), under which writes, truncates and fallocates
//! test it, so a change and a test are ordered by that lock (the atomic is
//! for shared access, its Relaxed loads and stores are ordered by the lock).
//! chmod reads it under the same lock.

use super::{AnonInode, AnonObj};
use crate::abi::*;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::vfs::VfsInner;

/// The seal set of a memfd; `None` for any other inode.
pub(crate) fn seals_of<'a>(v: &VfsInner, inode: &'a Inode) -> Option<&'a AtomicU32> {
    inode.file_data()?;
    // SAFETY: the anonymous mount lives as long as the namespace.
    let anon_sb = unsafe { &*v.anon().mnt }.sb() as *const crate::fs::SuperBlock;
    if !core::ptr::eq(inode.sb, anon_sb) {
        return None;
    }
    // A regular inode of the anonymous instance is a memfd's, which lives
    // inside its `AnonInode` (the instance's root is a directory).
    let node = (inode as *const Inode as *const u8)
        .wrapping_sub(core::mem::offset_of!(AnonInode, inode))
        .cast::<AnonInode>();
    // SAFETY: `inode` is the `inode` field of a live `AnonInode` (above),
    // borrowed for 'a like the inode itself.
    match &unsafe { &*node }.obj {
        AnonObj::Memfd(seals) => Some(seals),
        _ => None,
    }
}

/// A memfd's seal set; the caller holds the inode's data lock.
pub(crate) fn get(seals: &AtomicU32) -> u32 {
    // Relaxed: ordered by the data lock (module invariant).
    seals.load(Ordering::Relaxed)
}

/// The seals F_GET_SEALS reports for a regular tmpfs file: a memfd's set,
/// else F_SEAL_SEAL. The caller holds the data lock.
pub(crate) fn current(seals: Option<&AtomicU32>) -> u32 {
    seals.map_or(F_SEAL_SEAL, get)
}

/// memfd_add_seals after its FMODE_WRITE and flag checks: the new set, or
/// EPERM once F_SEAL_SEAL is in.
pub(crate) fn added(current: u32, add: u32, mode: u32) -> SysResult<u32> {
    if current & F_SEAL_SEAL != 0 {
        return Err(Errno::EPERM);
    }
    let implied = if add & F_SEAL_EXEC != 0 && mode & 0o111 != 0 {
        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE
    } else {
        0
    };
    Ok(current | add | implied)
}

/// A write of `len` (> 0) bytes at `pos` within one page, the file being
/// `size` bytes long.
pub(crate) fn may_write(seals: u32, pos: u64, len: u64, size: u64) -> SysResult<()> {
    if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0
        || (seals & F_SEAL_GROW != 0 && pos + len > size)
    {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// A truncate from `old` to `new` bytes.
pub(crate) fn may_resize(seals: u32, old: u64, new: u64) -> SysResult<()> {
    if (new < old && seals & F_SEAL_SHRINK != 0) || (new > old && seals & F_SEAL_GROW != 0) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// fallocate: a hole punch, or an allocation ending at `end` of a file
/// `size` bytes long.
pub(crate) fn may_fallocate(seals: u32, punch: bool, end: u64, size: u64) -> SysResult<()> {
    let refused = if punch {
        seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0
    } else {
        seals & F_SEAL_GROW != 0 && end > size
    };
    if refused {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// chmod from `old` to `new` permission bits.
pub(crate) fn may_chmod(seals: u32, old: u32, new: u32) -> SysResult<()> {
    if seals & F_SEAL_EXEC != 0 && (old ^ new) & 0o111 != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_rules() {
        assert_eq!(added(F_SEAL_SEAL, F_SEAL_GROW, 0o644), Err(Errno::EPERM));
        assert_eq!(added(0, F_SEAL_GROW, 0o644), Ok(F_SEAL_GROW));
        assert_eq!(
            added(F_SEAL_GROW, F_SEAL_SEAL, 0o644),
            Ok(F_SEAL_GROW | F_SEAL_SEAL)
        );
        // EXEC on an executable file seals its contents too.
        assert_eq!(
            added(0, F_SEAL_EXEC, 0o755),
            Ok(F_SEAL_EXEC | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)
        );
        assert_eq!(added(0, F_SEAL_EXEC, 0o644), Ok(F_SEAL_EXEC));
        assert_eq!(may_write(F_SEAL_GROW, 0, 10, 10), Ok(()));
        assert_eq!(may_write(F_SEAL_GROW, 5, 6, 10), Err(Errno::EPERM));
        assert_eq!(may_write(F_SEAL_SHRINK, 5, 6, 10), Ok(()));
        assert_eq!(may_write(F_SEAL_FUTURE_WRITE, 0, 1, 10), Err(Errno::EPERM));
        assert_eq!(may_resize(F_SEAL_SHRINK, 10, 10), Ok(()));
        assert_eq!(may_resize(F_SEAL_SHRINK, 10, 9), Err(Errno::EPERM));
        assert_eq!(may_resize(F_SEAL_GROW, 10, 11), Err(Errno::EPERM));
        assert_eq!(may_fallocate(F_SEAL_GROW, false, 10, 10), Ok(()));
        assert_eq!(may_fallocate(F_SEAL_GROW, false, 11, 10), Err(Errno::EPERM));
        assert_eq!(may_fallocate(F_SEAL_WRITE, true, 1, 10), Err(Errno::EPERM));
        assert_eq!(may_chmod(F_SEAL_EXEC, 0o755, 0o4755), Ok(()));
        assert_eq!(may_chmod(F_SEAL_EXEC, 0o755, 0o754), Err(Errno::EPERM));
        assert_eq!(current(None), F_SEAL_SEAL);
    }
}
