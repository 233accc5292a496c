//! Inode flags (chattr's letters): FS_IOC_GETFLAGS/SETFLAGS values, the
//! FS_IOC_FSGETXATTR/FSSETXATTR record, and statx's attribute bits.
//!
//! Values are Linux's (include/uapi/linux/fs.h, linux/stat.h); the unit
//! tests compare them with libc's where libc has them.

/// FS_IMMUTABLE_FL ('i'): no change to the file, its name or attributes.
pub const FS_IMMUTABLE_FL: u32 = 0x0000_0010;
/// FS_APPEND_FL ('a'): writes only at the end; no rename, unlink, truncate.
pub const FS_APPEND_FL: u32 = 0x0000_0020;
/// FS_NODUMP_FL ('d'): kept and reported only.
pub const FS_NODUMP_FL: u32 = 0x0000_0040;
/// FS_NOATIME_FL ('A'): reads leave the access time alone.
pub const FS_NOATIME_FL: u32 = 0x0000_0080;
/// FS_SYNC_FL ('S'): not supported by tmpfs (EOPNOTSUPP), as on Linux.
pub const FS_SYNC_FL: u32 = 0x0000_0008;
/// FS_DAX_FL: maps FS_XFLAG_DAX; not supported by tmpfs.
pub const FS_DAX_FL: u32 = 0x0200_0000;
/// FS_PROJINHERIT_FL: maps FS_XFLAG_PROJINHERIT; not supported by tmpfs.
pub const FS_PROJINHERIT_FL: u32 = 0x2000_0000;
/// FS_VERITY_FL: maps FS_XFLAG_VERITY.
pub const FS_VERITY_FL: u32 = 0x0010_0000;

/// The flags tmpfs keeps (SHMEM_FL_USER_MODIFIABLE less FS_CASEFOLD_FL,
/// which needs an instance mounted with an encoding: vfscale's never are).
pub const TMPFS_FL_MODIFIABLE: u32 = FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL;
/// The flags a tmpfs inode takes from its directory at creation
/// (SHMEM_FL_INHERITED).
pub const TMPFS_FL_INHERITED: u32 = FS_NODUMP_FL | FS_NOATIME_FL;
/// The flags that change who may change the file (CAP_LINUX_IMMUTABLE).
pub const FS_FL_PROTECTING: u32 = FS_IMMUTABLE_FL | FS_APPEND_FL;

pub const FS_XFLAG_REALTIME: u32 = 0x0000_0001;
pub const FS_XFLAG_PREALLOC: u32 = 0x0000_0002;
pub const FS_XFLAG_IMMUTABLE: u32 = 0x0000_0008;
pub const FS_XFLAG_APPEND: u32 = 0x0000_0010;
pub const FS_XFLAG_SYNC: u32 = 0x0000_0020;
pub const FS_XFLAG_NOATIME: u32 = 0x0000_0040;
pub const FS_XFLAG_NODUMP: u32 = 0x0000_0080;
pub const FS_XFLAG_RTINHERIT: u32 = 0x0000_0100;
pub const FS_XFLAG_PROJINHERIT: u32 = 0x0000_0200;
pub const FS_XFLAG_NOSYMLINKS: u32 = 0x0000_0400;
pub const FS_XFLAG_EXTSIZE: u32 = 0x0000_0800;
pub const FS_XFLAG_EXTSZINHERIT: u32 = 0x0000_1000;
pub const FS_XFLAG_NODEFRAG: u32 = 0x0000_2000;
pub const FS_XFLAG_FILESTREAM: u32 = 0x0000_4000;
pub const FS_XFLAG_DAX: u32 = 0x0000_8000;
pub const FS_XFLAG_COWEXTSIZE: u32 = 0x0001_0000;
pub const FS_XFLAG_HASATTR: u32 = 0x8000_0000;
/// The xflags a filesystem reports but nobody sets: dropped from a
/// FSSETXATTR request (FS_XFLAG_RDONLY_MASK).
pub const FS_XFLAG_RDONLY_MASK: u32 = FS_XFLAG_PREALLOC | FS_XFLAG_HASATTR;
/// The xflags Linux 6.18 knows (FS_XFLAGS_MASK): a request with any other
/// bit is EOPNOTSUPP before anything else is checked.
pub const FS_XFLAGS_MASK: u32 = 0x8001_fffb;
/// The xflags with an FS_*_FL twin (FS_XFLAG_COMMON).
pub const FS_XFLAG_COMMON: u32 = FS_XFLAG_SYNC
    | FS_XFLAG_IMMUTABLE
    | FS_XFLAG_APPEND
    | FS_XFLAG_NODUMP
    | FS_XFLAG_NOATIME
    | FS_XFLAG_DAX
    | FS_XFLAG_PROJINHERIT;

/// The (FS_*_FL, FS_XFLAG_*) twins, as fileattr_fill_flags and
/// fileattr_fill_xflags translate them.
const TWINS: [(u32, u32); 7] = [
    (FS_SYNC_FL, FS_XFLAG_SYNC),
    (FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE),
    (FS_APPEND_FL, FS_XFLAG_APPEND),
    (FS_NODUMP_FL, FS_XFLAG_NODUMP),
    (FS_NOATIME_FL, FS_XFLAG_NOATIME),
    (FS_DAX_FL, FS_XFLAG_DAX),
    (FS_PROJINHERIT_FL, FS_XFLAG_PROJINHERIT),
];

/// The xflags that say what `flags` say.
pub fn xflags_of(flags: u32) -> u32 {
    TWINS
        .iter()
        .filter(|(fl, _)| flags & fl != 0)
        .fold(0, |x, (_, xf)| x | xf)
}

/// The flags that say what `xflags` say.
pub fn flags_of(xflags: u32) -> u32 {
    TWINS
        .iter()
        .filter(|(_, xf)| xflags & xf != 0)
        .fold(0, |f, (fl, _)| f | fl)
}

/// `struct fsxattr` (FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR), less its
/// 8 padding bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsXattr {
    pub xflags: u32,
    pub extsize: u32,
    pub nextents: u32,
    pub projid: u32,
    pub cowextsize: u32,
}

/// `struct file_attr` of file_getattr(2) and file_setattr(2) (Linux
/// 6.17): the fsxattr record with 64-bit xflags, passed with its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileAttr {
    pub xflags: u64,
    pub extsize: u32,
    pub nextents: u32,
    pub projid: u32,
    pub cowextsize: u32,
}

/// The first (and latest) size of `struct file_attr`.
pub const FILE_ATTR_SIZE_VER0: usize = 24;

impl FileAttr {
    /// The kernel's byte layout (native endian).
    pub fn to_bytes(&self) -> [u8; FILE_ATTR_SIZE_VER0] {
        let mut b = [0u8; FILE_ATTR_SIZE_VER0];
        b[0..8].copy_from_slice(&self.xflags.to_ne_bytes());
        for (i, w) in [self.extsize, self.nextents, self.projid, self.cowextsize]
            .iter()
            .enumerate()
        {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        b
    }

    /// The record in the first `FILE_ATTR_SIZE_VER0` bytes of `b`.
    pub fn from_bytes(b: &[u8; FILE_ATTR_SIZE_VER0]) -> FileAttr {
        let w = |i: usize| u32::from_ne_bytes(b[8 + 4 * i..12 + 4 * i].try_into().expect("4"));
        FileAttr {
            xflags: u64::from_ne_bytes(b[0..8].try_into().expect("8")),
            extsize: w(0),
            nextents: w(1),
            projid: w(2),
            cowextsize: w(3),
        }
    }
}

/// The size of `struct fsxattr` (with its 8 padding bytes).
pub const FSXATTR_SIZE: usize = 28;

impl FsXattr {
    /// The kernel's byte layout (native endian, padding zeroed).
    pub fn to_bytes(&self) -> [u8; FSXATTR_SIZE] {
        let mut b = [0u8; FSXATTR_SIZE];
        let words = [
            self.xflags,
            self.extsize,
            self.nextents,
            self.projid,
            self.cowextsize,
        ];
        for (i, w) in words.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_ne_bytes());
        }
        b
    }

    /// The record at the start of `b`; None if `b` is shorter than its
    /// five fields.
    pub fn from_bytes(b: &[u8]) -> Option<FsXattr> {
        let w = |i: usize| -> Option<u32> {
            Some(u32::from_ne_bytes(
                b.get(4 * i..4 * i + 4)?.try_into().ok()?,
            ))
        };
        Some(FsXattr {
            xflags: w(0)?,
            extsize: w(1)?,
            nextents: w(2)?,
            projid: w(3)?,
            cowextsize: w(4)?,
        })
    }
}

/// ioctl request numbers (64-bit Linux).
pub const FS_IOC_GETFLAGS: u64 = 0x8008_6601;
pub const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
pub const FS_IOC_FSGETXATTR: u64 = 0x801c_581f;
pub const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;

/// statx's `stx_attributes` bits vfscale reports.
pub const STATX_ATTR_IMMUTABLE: u64 = 0x0000_0010;
pub const STATX_ATTR_APPEND: u64 = 0x0000_0020;
pub const STATX_ATTR_NODUMP: u64 = 0x0000_0040;
pub const STATX_ATTR_AUTOMOUNT: u64 = 0x0000_1000;
pub const STATX_ATTR_MOUNT_ROOT: u64 = 0x0000_2000;
pub const STATX_ATTR_DAX: u64 = 0x0020_0000;
/// What every statx answers for (vfs_getattr_nosec and vfs_statx).
pub const STATX_ATTR_MASK_GENERIC: u64 =
    STATX_ATTR_AUTOMOUNT | STATX_ATTR_DAX | STATX_ATTR_MOUNT_ROOT;
/// What a tmpfs inode answers for (shmem_getattr adds the flags).
pub const STATX_ATTR_MASK_TMPFS: u64 =
    STATX_ATTR_MASK_GENERIC | STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND | STATX_ATTR_NODUMP;

/// statx attributes of a tmpfs inode with `flags`.
pub fn statx_attributes_of(flags: u32) -> u64 {
    let mut a = 0;
    if flags & FS_IMMUTABLE_FL != 0 {
        a |= STATX_ATTR_IMMUTABLE;
    }
    if flags & FS_APPEND_FL != 0 {
        a |= STATX_ATTR_APPEND;
    }
    if flags & FS_NODUMP_FL != 0 {
        a |= STATX_ATTR_NODUMP;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_linuxs() {
        // libc has no FS_*_FL; the ioctl numbers carry the record sizes.
        assert_eq!(FS_IOC_GETFLAGS, libc::FS_IOC_GETFLAGS);
        assert_eq!(FS_IOC_SETFLAGS, libc::FS_IOC_SETFLAGS);
        assert_eq!(FS_IOC_FSGETXATTR >> 16 & 0x3fff, FSXATTR_SIZE as u64);
        assert_eq!(FS_IOC_FSSETXATTR >> 16 & 0x3fff, FSXATTR_SIZE as u64);
        assert_eq!(STATX_ATTR_IMMUTABLE, libc::STATX_ATTR_IMMUTABLE as u64);
        assert_eq!(STATX_ATTR_APPEND, libc::STATX_ATTR_APPEND as u64);
        assert_eq!(STATX_ATTR_NODUMP, libc::STATX_ATTR_NODUMP as u64);
        assert_eq!(STATX_ATTR_AUTOMOUNT, libc::STATX_ATTR_AUTOMOUNT as u64);
        assert_eq!(STATX_ATTR_MOUNT_ROOT, libc::STATX_ATTR_MOUNT_ROOT as u64);
        assert_eq!(STATX_ATTR_DAX, libc::STATX_ATTR_DAX as u64);
    }

    #[test]
    fn twins_translate_both_ways() {
        for (fl, xf) in TWINS {
            assert_eq!(xflags_of(fl), xf);
            assert_eq!(flags_of(xf), fl);
        }
        assert_eq!(xflags_of(FS_NODUMP_FL | FS_NOATIME_FL), 0xc0);
        assert_eq!(flags_of(FS_XFLAG_EXTSIZE | FS_XFLAG_HASATTR), 0);
        assert_eq!(FS_XFLAG_COMMON & !FS_XFLAGS_MASK, 0);
    }

    #[test]
    fn file_attr_bytes_round_trip() {
        let a = FileAttr {
            xflags: 1 << 40 | 8,
            extsize: 1,
            nextents: 2,
            projid: 3,
            cowextsize: 4,
        };
        assert_eq!(FileAttr::from_bytes(&a.to_bytes()), a);
        assert_eq!(a.to_bytes()[8..12], 1u32.to_ne_bytes());
        let x = FsXattr {
            xflags: 8,
            extsize: 1,
            nextents: 2,
            projid: 3,
            cowextsize: 4,
        };
        assert_eq!(FsXattr::from_bytes(&x.to_bytes()), Some(x));
        assert_eq!(FsXattr::from_bytes(&x.to_bytes()[..19]), None);
        assert_eq!(x.to_bytes()[20..], [0; 8]);
    }
}
