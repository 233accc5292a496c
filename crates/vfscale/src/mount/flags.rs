//! Per-mount flags: the part of mount(2)'s flags that belongs to one mount,
//! not to its superblock (Linux's `MNT_*` in `vfsmount.mnt_flags`).
//!
//! Invariants:
//! - A mount's word is written only under the mount table's lock: when the
//!   mount is made (before it is attached) and by a remount. Readers load it
//!   with no lock where they act on it, as Linux's readers of `mnt_flags`
//!   do: a syscall racing a remount acts on the old word or the new one,
//!   never on a mix (one word, one store).
//! - A bind mount starts with its source mount's word (Linux's clone_mnt);
//!   a remount that names no atime flag keeps the mount's atime bits.
//! - `MNT_READONLY` and `MNT_WRITE_HOLD` take part in the write-access
//!   protocol (`write.rs`), which orders its reads and writes of the word
//!   itself; the other bits are read Relaxed where they act.

use crate::abi::*;
use crate::sync::atomic::{AtomicU32, Ordering};

pub const MNT_NOSUID: u32 = 0x01;
pub const MNT_NODEV: u32 = 0x02;
pub const MNT_NOEXEC: u32 = 0x04;
pub const MNT_NOATIME: u32 = 0x08;
pub const MNT_NODIRATIME: u32 = 0x10;
pub const MNT_RELATIME: u32 = 0x20;
pub const MNT_READONLY: u32 = 0x40;
pub const MNT_NOSYMFOLLOW: u32 = 0x80;
/// A switch to read-only is counting the mount's writers (`write.rs`):
/// writers wait. Internal: never asked for, never reported.
pub const MNT_WRITE_HOLD: u32 = 0x100;
pub const MNT_ATIME_MASK: u32 = MNT_NOATIME | MNT_NODIRATIME | MNT_RELATIME;

/// What a new mount gets when nothing is asked: relatime, as Linux.
pub const MNT_DEFAULT: u32 = MNT_RELATIME;

/// statfs(2)'s `f_flags` bits that only the mount sets (flags_by_mnt); the
/// others come from the superblock (flags_by_sb), read-only from both (a
/// passthrough instance of a read-only host filesystem is read-only).
pub const ST_MOUNT_BITS: i64 =
    ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME | ST_NOSYMFOLLOW;

/// One mount's flag word.
pub struct MountFlags(AtomicU32);

impl MountFlags {
    pub fn new(bits: u32) -> Self {
        MountFlags(AtomicU32::new(bits))
    }

    /// The current word.
    #[inline(always)]
    pub fn get(&self) -> u32 {
        // Relaxed: the word is read on its own; nothing else is published
        // through it (see the module invariants).
        self.0.load(Ordering::Relaxed)
    }

    /// The word, for the write-access protocol (`write.rs`).
    #[inline]
    pub fn get_seqcst(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }

    /// Replaces the word inside the write-access protocol (`write.rs`).
    /// Caller holds the mount table's lock.
    pub(crate) fn set_seqcst(&self, bits: u32) {
        self.0.store(bits, Ordering::SeqCst)
    }

    /// Replaces the word with one whose read-only bit is the same or
    /// cleared (making a mount read-only is `Writers::make_readonly`).
    /// Caller holds the mount table's lock.
    pub(crate) fn set(&self, bits: u32) {
        debug_assert!(bits & MNT_READONLY == 0 || self.get() & MNT_READONLY != 0);
        // Relaxed: as `get`; the table lock orders writers. A writer that
        // reads the old read-only bit fails as if it came first.
        self.0.store(bits, Ordering::Relaxed)
    }
}

/// attr_flags_to_mnt_flags: mount_setattr(2)'s MOUNT_ATTR_* bits as
/// per-mount flags (the atime mode, a value, is translated by the caller).
pub fn from_mount_attr(attr: u64) -> u32 {
    [
        (MOUNT_ATTR_RDONLY, MNT_READONLY),
        (MOUNT_ATTR_NOSUID, MNT_NOSUID),
        (MOUNT_ATTR_NODEV, MNT_NODEV),
        (MOUNT_ATTR_NOEXEC, MNT_NOEXEC),
        (MOUNT_ATTR_NODIRATIME, MNT_NODIRATIME),
        (MOUNT_ATTR_NOSYMFOLLOW, MNT_NOSYMFOLLOW),
    ]
    .iter()
    .filter(|(a, _)| attr & a != 0)
    .fold(0, |acc, (_, b)| acc | b)
}

/// path_mount's translation of mount(2)'s `ms` flags into per-mount flags.
/// `current` is the mount a remount changes: a remount that names no atime
/// flag keeps its atime bits.
pub fn requested(ms: u64, current: Option<u32>) -> u32 {
    let mut bits = if ms & MS_NOATIME == 0 {
        MNT_RELATIME
    } else {
        0
    };
    for (m, b) in [
        (MS_NOSUID, MNT_NOSUID),
        (MS_NODEV, MNT_NODEV),
        (MS_NOEXEC, MNT_NOEXEC),
        (MS_NOATIME, MNT_NOATIME),
        (MS_NODIRATIME, MNT_NODIRATIME),
        (MS_RDONLY, MNT_READONLY),
        (MS_NOSYMFOLLOW, MNT_NOSYMFOLLOW),
    ] {
        if ms & m != 0 {
            bits |= b;
        }
    }
    // Strict atime wins over noatime, as in path_mount.
    if ms & MS_STRICTATIME != 0 {
        bits &= !(MNT_RELATIME | MNT_NOATIME);
    }
    if let Some(cur) = current {
        if ms & (MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME) == 0 {
            bits = (bits & !MNT_ATIME_MASK) | (cur & MNT_ATIME_MASK);
        }
    }
    bits
}

/// statfs(2)'s `f_flags` bits for a mount's word (flags_by_mnt).
pub fn statfs_bits(bits: u32) -> i64 {
    [
        (MNT_READONLY, ST_RDONLY),
        (MNT_NOSUID, ST_NOSUID),
        (MNT_NODEV, ST_NODEV),
        (MNT_NOEXEC, ST_NOEXEC),
        (MNT_NOATIME, ST_NOATIME),
        (MNT_NODIRATIME, ST_NODIRATIME),
        (MNT_RELATIME, ST_RELATIME),
        (MNT_NOSYMFOLLOW, ST_NOSYMFOLLOW),
    ]
    .iter()
    .filter(|(m, _)| bits & m != 0)
    .fold(0, |acc, (_, s)| acc | s)
}

/// atime_needs_update's mount part: whether a read-like access through a
/// mount with `bits` may change the atime of an inode of this type at all.
#[inline(always)]
pub fn allows_atime(bits: u32, is_dir: bool) -> bool {
    bits & (MNT_NOATIME | MNT_READONLY) == 0 && !(is_dir && bits & MNT_NODIRATIME != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_attr_translation() {
        assert_eq!(from_mount_attr(0), 0);
        assert_eq!(
            from_mount_attr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSYMFOLLOW),
            MNT_READONLY | MNT_NOSYMFOLLOW
        );
        // The atime value and the idmapping are not flags of the word.
        assert_eq!(from_mount_attr(MOUNT_ATTR__ATIME | MOUNT_ATTR_IDMAP), 0);
        assert_eq!(
            from_mount_attr(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC),
            MNT_NOSUID | MNT_NODEV | MNT_NOEXEC
        );
        assert_eq!(from_mount_attr(MOUNT_ATTR_NODIRATIME), MNT_NODIRATIME);
    }

    #[test]
    fn path_mount_translation() {
        assert_eq!(requested(0, None), MNT_RELATIME);
        assert_eq!(requested(MS_NOATIME, None), MNT_NOATIME);
        assert_eq!(requested(MS_STRICTATIME, None), 0);
        assert_eq!(requested(MS_STRICTATIME | MS_NOATIME, None), 0);
        assert_eq!(
            requested(MS_NOEXEC | MS_NOSUID | MS_NODEV, None),
            MNT_RELATIME | MNT_NOEXEC | MNT_NOSUID | MNT_NODEV
        );
        // A remount naming no atime flag keeps the mount's.
        assert_eq!(
            requested(MS_NOEXEC, Some(MNT_NOATIME)),
            MNT_NOEXEC | MNT_NOATIME
        );
        assert_eq!(
            requested(MS_NODIRATIME, Some(MNT_NOATIME)),
            MNT_NODIRATIME | MNT_RELATIME
        );
    }

    #[test]
    fn statfs_reports_each_bit() {
        assert_eq!(statfs_bits(MNT_DEFAULT), ST_RELATIME);
        assert_eq!(
            statfs_bits(MNT_NOEXEC | MNT_NODEV | MNT_NOSUID | MNT_NOSYMFOLLOW),
            ST_NOEXEC | ST_NODEV | ST_NOSUID | ST_NOSYMFOLLOW
        );
        assert_eq!(
            statfs_bits(MNT_NOATIME | MNT_NODIRATIME),
            ST_NOATIME | ST_NODIRATIME
        );
    }
}
