//! Linux flag and mode constants used by the process API.
//!
//! Values are the Linux x86-64 ABI ones (checked against `libc` in tests), so
//! callers may pass `libc::O_CREAT` and friends interchangeably.

// open(2) flags.
pub const O_ACCMODE: i32 = 0o3;
pub const O_RDONLY: i32 = 0o0;
pub const O_WRONLY: i32 = 0o1;
pub const O_RDWR: i32 = 0o2;
pub const O_CREAT: i32 = 0o100;
pub const O_EXCL: i32 = 0o200;
pub const O_NOCTTY: i32 = 0o400;
pub const O_TRUNC: i32 = 0o1000;
pub const O_APPEND: i32 = 0o2000;

// posix_fadvise(2) advice (x86_64's values).
pub const POSIX_FADV_NORMAL: i32 = 0;
pub const POSIX_FADV_RANDOM: i32 = 1;
pub const POSIX_FADV_SEQUENTIAL: i32 = 2;
pub const POSIX_FADV_WILLNEED: i32 = 3;
pub const POSIX_FADV_DONTNEED: i32 = 4;
pub const POSIX_FADV_NOREUSE: i32 = 5;

// preadv2/pwritev2 flags (RWF_*).
pub const RWF_HIPRI: i32 = 0x1;
pub const RWF_DSYNC: i32 = 0x2;
pub const RWF_SYNC: i32 = 0x4;
pub const RWF_NOWAIT: i32 = 0x8;
pub const RWF_APPEND: i32 = 0x10;
pub const RWF_NOAPPEND: i32 = 0x20;
pub const RWF_ATOMIC: i32 = 0x40;
pub const RWF_DONTCACHE: i32 = 0x80;
/// No SIGPIPE for this write (6.16; there are no signals here anyway).
pub const RWF_NOSIGNAL: i32 = 0x100;
/// Every flag Linux 6.18 knows (RWF_SUPPORTED).
pub const RWF_SUPPORTED: i32 = 0x1ff;

// splice(2), tee(2) and vmsplice(2) flags.
/// A hint to move pages (ignored by Linux since 2.6.21).
pub const SPLICE_F_MOVE: u32 = 1;
/// The pipe end does not wait (the other file keeps its own mode).
pub const SPLICE_F_NONBLOCK: u32 = 2;
/// More data follows (a socket may hold back a partial packet).
pub const SPLICE_F_MORE: u32 = 4;
/// vmsplice's gift of pages.
pub const SPLICE_F_GIFT: u32 = 8;
/// Every flag Linux knows (SPLICE_F_ALL).
pub const SPLICE_F_ALL: u32 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;
pub const O_NONBLOCK: i32 = 0o4000;
pub const O_DSYNC: i32 = 0o10000;
pub const O_ASYNC: i32 = 0o20000;
pub const O_DIRECT: i32 = 0o40000;
pub const O_LARGEFILE: i32 = 0o100000;
pub const O_DIRECTORY: i32 = 0o200000;
pub const O_NOFOLLOW: i32 = 0o400000;
pub const O_NOATIME: i32 = 0o1000000;
pub const O_CLOEXEC: i32 = 0o2000000;
pub const O_SYNC: i32 = 0o4010000;
pub const O_PATH: i32 = 0o10000000;
pub const O_TMPFILE: i32 = 0o20200000;
/// O_TMPFILE's own bit (O_TMPFILE is this with O_DIRECTORY, so that
/// kernels without it fail the open as a directory open for writing).
pub const __O_TMPFILE: i32 = O_TMPFILE & !O_DIRECTORY;
/// Every open flag vfscale knows; others are rejected with EINVAL... except
/// that Linux open(2) silently ignores unknown bits, so only `openat2`-style
/// strict callers use this mask.
pub const O_VALID: i32 = O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_DSYNC
    | O_ASYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_NOATIME
    | O_CLOEXEC
    | O_SYNC
    | O_PATH
    | O_TMPFILE;

// openat2(2): `struct open_how` and its resolve flags (not in `libc`'s
// Linux module for every target; values from `uapi/linux/openat2.h`).
pub const RESOLVE_NO_XDEV: u64 = 0x01;
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub const RESOLVE_BENEATH: u64 = 0x08;
pub const RESOLVE_IN_ROOT: u64 = 0x10;
pub const RESOLVE_CACHED: u64 = 0x20;
pub const RESOLVE_VALID: u64 = RESOLVE_NO_XDEV
    | RESOLVE_NO_MAGICLINKS
    | RESOLVE_NO_SYMLINKS
    | RESOLVE_BENEATH
    | RESOLVE_IN_ROOT
    | RESOLVE_CACHED;
/// What openat2 may combine with O_PATH (Linux's O_PATH_FLAGS).
pub const O_PATH_FLAGS: i32 = O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC;

/// openat2's `struct open_how` (its first version, 24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenHow {
    /// O_* flags: every bit must be a known one (EINVAL otherwise).
    pub flags: u64,
    /// The new file's mode: with O_CREAT or O_TMPFILE only, else 0.
    pub mode: u64,
    /// RESOLVE_* flags.
    pub resolve: u64,
}
const _: () = assert!(core::mem::size_of::<OpenHow>() == 24);

// *at(2) flags.
pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
pub const AT_EACCESS: i32 = 0x200;
pub const AT_REMOVEDIR: i32 = 0x200;
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
pub const AT_NO_AUTOMOUNT: i32 = 0x800;
pub const AT_EMPTY_PATH: i32 = 0x1000;
pub const AT_STATX_SYNC_TYPE: i32 = 0x6000;
pub const AT_STATX_FORCE_SYNC: i32 = 0x2000;
pub const AT_STATX_DONT_SYNC: i32 = 0x4000;

// renameat2(2) flags.
pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
pub const RENAME_WHITEOUT: u32 = 4;

// dup3 / fcntl.
pub const FD_CLOEXEC: i32 = 1;

// close_range(2) flags.
pub const CLOSE_RANGE_UNSHARE: u32 = 1 << 1;
pub const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;

// lseek(2) whence.
pub const SEEK_SET: i32 = 0;
pub const SEEK_CUR: i32 = 1;
pub const SEEK_END: i32 = 2;
pub const SEEK_DATA: i32 = 3;
pub const SEEK_HOLE: i32 = 4;

// access(2) modes.
pub const F_OK: i32 = 0;
pub const X_OK: i32 = 1;
pub const W_OK: i32 = 2;
pub const R_OK: i32 = 4;

// File type and permission bits (st_mode).
pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;
pub const S_ISUID: u32 = 0o4000;
pub const S_ISGID: u32 = 0o2000;
pub const S_ISVTX: u32 = 0o1000;
pub const S_IRWXU: u32 = 0o700;
pub const S_IRWXG: u32 = 0o070;
pub const S_IRWXO: u32 = 0o007;
pub const S_IXGRP: u32 = 0o010;
/// The permission part of a mode: what chmod may set.
pub const S_IALLUGO: u32 = S_ISUID | S_ISGID | S_ISVTX | 0o777;

// utimensat(2) special nanosecond values.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

// mount(2) flags.
pub const MS_RDONLY: u64 = 1;
pub const MS_NOSUID: u64 = 2;
pub const MS_NODEV: u64 = 4;
pub const MS_NOEXEC: u64 = 8;
pub const MS_SYNCHRONOUS: u64 = 16;
pub const MS_REMOUNT: u64 = 32;
pub const MS_MANDLOCK: u64 = 64;
pub const MS_DIRSYNC: u64 = 128;
pub const MS_NOSYMFOLLOW: u64 = 256;
pub const MS_NOATIME: u64 = 1024;
pub const MS_NODIRATIME: u64 = 2048;
pub const MS_BIND: u64 = 4096;
pub const MS_MOVE: u64 = 8192;
pub const MS_REC: u64 = 16384;
pub const MS_SILENT: u64 = 32768;
pub const MS_POSIXACL: u64 = 1 << 16;
pub const MS_UNBINDABLE: u64 = 1 << 17;
pub const MS_PRIVATE: u64 = 1 << 18;
pub const MS_SLAVE: u64 = 1 << 19;
pub const MS_SHARED: u64 = 1 << 20;
pub const MS_RELATIME: u64 = 1 << 21;
pub const MS_STRICTATIME: u64 = 1 << 24;
pub const MS_LAZYTIME: u64 = 1 << 25;
pub const MS_NOUSER: u64 = 1 << 31;
// unshare(2) and setns(2) flags (sched.h).
pub const CLONE_FS: i32 = 0x200;
pub const CLONE_FILES: i32 = 0x400;
pub const CLONE_NEWNS: i32 = 0x2_0000;
/// The magic number old callers put in the top half (MS_MGC_VAL).
pub const MS_MGC_VAL: u64 = 0xC0ED_0000;
pub const MS_MGC_MSK: u64 = 0xffff_0000;

// statfs(2) f_flags.
pub const ST_RDONLY: i64 = 1;
pub const ST_NOSUID: i64 = 2;
pub const ST_NODEV: i64 = 4;
pub const ST_NOEXEC: i64 = 8;
pub const ST_SYNCHRONOUS: i64 = 16;
pub const ST_VALID: i64 = 0x20;
pub const ST_MANDLOCK: i64 = 64;
pub const ST_NOATIME: i64 = 1024;
pub const ST_NODIRATIME: i64 = 2048;
pub const ST_RELATIME: i64 = 4096;
pub const ST_NOSYMFOLLOW: i64 = 8192;

// umount2(2) flags.
pub const MNT_FORCE: i32 = 1;
pub const MNT_DETACH: i32 = 2;
pub const MNT_EXPIRE: i32 = 4;
pub const UMOUNT_NOFOLLOW: i32 = 8;

// open_tree(2) and move_mount(2) (the new mount API's detached trees).
pub const OPEN_TREE_CLONE: i32 = 1;
pub const OPEN_TREE_CLOEXEC: i32 = O_CLOEXEC;
pub const MOVE_MOUNT_F_SYMLINKS: u32 = 0x1;
pub const MOVE_MOUNT_F_AUTOMOUNTS: u32 = 0x2;
pub const MOVE_MOUNT_F_EMPTY_PATH: u32 = 0x4;
pub const MOVE_MOUNT_T_SYMLINKS: u32 = 0x10;
pub const MOVE_MOUNT_T_AUTOMOUNTS: u32 = 0x20;
pub const MOVE_MOUNT_T_EMPTY_PATH: u32 = 0x40;
pub const MOVE_MOUNT_SET_GROUP: u32 = 0x100;
pub const MOVE_MOUNT_BENEATH: u32 = 0x200;
pub const MOVE_MOUNT__MASK: u32 = 0x377;
// fsopen(2), fsconfig(2) and fsmount(2).
pub const FSOPEN_CLOEXEC: u32 = 0x1;
pub const FSCONFIG_SET_FLAG: u32 = 0;
pub const FSCONFIG_SET_STRING: u32 = 1;
pub const FSCONFIG_SET_BINARY: u32 = 2;
pub const FSCONFIG_SET_PATH: u32 = 3;
pub const FSCONFIG_SET_PATH_EMPTY: u32 = 4;
pub const FSCONFIG_SET_FD: u32 = 5;
pub const FSCONFIG_CMD_CREATE: u32 = 6;
pub const FSCONFIG_CMD_RECONFIGURE: u32 = 7;
pub const FSCONFIG_CMD_CREATE_EXCL: u32 = 8;
pub const FSMOUNT_CLOEXEC: u32 = 0x1;
pub const FSPICK_CLOEXEC: u32 = 0x1;
pub const FSPICK_SYMLINK_NOFOLLOW: u32 = 0x2;
pub const FSPICK_NO_AUTOMOUNT: u32 = 0x4;
pub const FSPICK_EMPTY_PATH: u32 = 0x8;

// mount_setattr(2): its flags, `MountAttr`'s attribute bits (the atime
// modes are a 3-bit value in MOUNT_ATTR__ATIME, not bits) and the struct.
pub const AT_RECURSIVE: i32 = 0x8000;
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x8;
pub const MOUNT_ATTR__ATIME: u64 = 0x70;
pub const MOUNT_ATTR_RELATIME: u64 = 0x0;
pub const MOUNT_ATTR_NOATIME: u64 = 0x10;
pub const MOUNT_ATTR_STRICTATIME: u64 = 0x20;
pub const MOUNT_ATTR_NODIRATIME: u64 = 0x80;
pub const MOUNT_ATTR_IDMAP: u64 = 0x100000;
pub const MOUNT_ATTR_NOSYMFOLLOW: u64 = 0x200000;

/// struct mount_attr (MOUNT_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MountAttr {
    /// MOUNT_ATTR_* to set.
    pub attr_set: u64,
    /// MOUNT_ATTR_* to clear.
    pub attr_clr: u64,
    /// 0, or one of MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE.
    pub propagation: u64,
    /// A user namespace descriptor for MOUNT_ATTR_IDMAP.
    pub userns_fd: u64,
}
const _: () = assert!(core::mem::size_of::<MountAttr>() == 32);

impl MountAttr {
    /// A change that sets the MOUNT_ATTR_* bits `attr`.
    pub fn set(attr: u64) -> MountAttr {
        MountAttr {
            attr_set: attr,
            ..Default::default()
        }
    }

    /// A change that clears the MOUNT_ATTR_* bits `attr`.
    pub fn clear(attr: u64) -> MountAttr {
        MountAttr {
            attr_clr: attr,
            ..Default::default()
        }
    }
}

// statx(2) mask bits.
pub const STATX_TYPE: u32 = 0x1;
pub const STATX_MODE: u32 = 0x2;
pub const STATX_NLINK: u32 = 0x4;
pub const STATX_UID: u32 = 0x8;
pub const STATX_GID: u32 = 0x10;
pub const STATX_ATIME: u32 = 0x20;
pub const STATX_MTIME: u32 = 0x40;
pub const STATX_CTIME: u32 = 0x80;
pub const STATX_INO: u32 = 0x100;
pub const STATX_SIZE: u32 = 0x200;
pub const STATX_BLOCKS: u32 = 0x400;
pub const STATX_BASIC_STATS: u32 = 0x7ff;
pub const STATX_BTIME: u32 = 0x800;

// Directory entry types (d_type).
pub const DT_UNKNOWN: u8 = 0;
pub const DT_FIFO: u8 = 1;
pub const DT_CHR: u8 = 2;
pub const DT_DIR: u8 = 4;
pub const DT_BLK: u8 = 6;
pub const DT_REG: u8 = 8;
pub const DT_LNK: u8 = 10;
pub const DT_SOCK: u8 = 12;

/// Limits of the Linux VFS that vfscale enforces at its API boundary.
pub const NAME_MAX: usize = 255;
/// Longest path including its terminating NUL (so usable length is 4095).
pub const PATH_MAX: usize = 4096;
/// Symlinks followed during one resolution before ELOOP.
pub const MAXSYMLINKS: u32 = 40;
/// Largest file size (Linux `MAX_LFS_FILESIZE` on 64-bit).
pub const MAX_FILE_SIZE: i64 = i64::MAX;
/// Hard links per inode before EMLINK (see docs/COMPATIBILITY.md).
pub const LINK_MAX: u32 = 65_000;
/// Filesystem magic reported by statfs for vfscale's tmpfs (Linux TMPFS_MAGIC).
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// statfs magic of a pipe's filesystem (Linux's pipefs).
pub const PIPEFS_MAGIC: i64 = 0x5049_5045;
/// statfs magic of a socket's filesystem (Linux's sockfs).
pub const SOCKFS_MAGIC: i64 = 0x534f_434b;
/// statfs magic of an eventfd's filesystem (Linux's anon_inodefs).
pub const ANON_INODE_FS_MAGIC: i64 = 0x0904_1934;

/// The `d_type` for a mode's file type.
pub fn mode_to_dtype(mode: u32) -> u8 {
    ((mode & S_IFMT) >> 12) as u8
}

/// True if the mode describes a directory.
pub fn s_isdir(mode: u32) -> bool {
    mode & S_IFMT == S_IFDIR
}
/// True if the mode describes a regular file.
pub fn s_isreg(mode: u32) -> bool {
    mode & S_IFMT == S_IFREG
}
/// True if the mode describes a symbolic link.
pub fn s_islnk(mode: u32) -> bool {
    mode & S_IFMT == S_IFLNK
}

// ---- extended attributes (linux/xattr.h) ----
/// setxattr: fail with EEXIST if the attribute exists.
pub const XATTR_CREATE: i32 = 1;
/// setxattr: fail with ENODATA if the attribute does not exist.
pub const XATTR_REPLACE: i32 = 2;
/// Longest attribute name (bytes, without the NUL).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value.
pub const XATTR_SIZE_MAX: usize = 65536;
/// Largest name list listxattr returns.
pub const XATTR_LIST_MAX: usize = 65536;

// ---- fallocate modes (linux/falloc.h) ----
pub const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
pub const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_match_the_host_abi() {
        assert_eq!(O_CREAT, libc::O_CREAT);
        for (ours, host) in [
            (POSIX_FADV_NORMAL, libc::POSIX_FADV_NORMAL),
            (POSIX_FADV_RANDOM, libc::POSIX_FADV_RANDOM),
            (POSIX_FADV_SEQUENTIAL, libc::POSIX_FADV_SEQUENTIAL),
            (POSIX_FADV_WILLNEED, libc::POSIX_FADV_WILLNEED),
            (POSIX_FADV_DONTNEED, libc::POSIX_FADV_DONTNEED),
            (POSIX_FADV_NOREUSE, libc::POSIX_FADV_NOREUSE),
            (RWF_HIPRI, libc::RWF_HIPRI),
            (RWF_DSYNC, libc::RWF_DSYNC),
            (RWF_SYNC, libc::RWF_SYNC),
            (RWF_NOWAIT, libc::RWF_NOWAIT),
            (RWF_APPEND, libc::RWF_APPEND),
            (RWF_NOAPPEND, libc::RWF_NOAPPEND),
            (RWF_ATOMIC, libc::RWF_ATOMIC),
            (RWF_DONTCACHE, libc::RWF_DONTCACHE),
        ] {
            assert_eq!(ours, host);
        }
        assert_eq!(O_DIRECTORY, libc::O_DIRECTORY);
        assert_eq!(O_NOFOLLOW, libc::O_NOFOLLOW);
        assert_eq!(O_CLOEXEC, libc::O_CLOEXEC);
        assert_eq!(O_PATH, libc::O_PATH);
        assert_eq!(O_TMPFILE, libc::O_TMPFILE);
        assert_eq!(O_SYNC, libc::O_SYNC);
        assert_eq!(AT_FDCWD, libc::AT_FDCWD);
        assert_eq!(AT_EMPTY_PATH, libc::AT_EMPTY_PATH);
        assert_eq!(AT_REMOVEDIR, libc::AT_REMOVEDIR);
        assert_eq!(UTIME_NOW, libc::UTIME_NOW);
        assert_eq!(UTIME_OMIT, libc::UTIME_OMIT);
        assert_eq!(SEEK_HOLE, libc::SEEK_HOLE);
        assert_eq!(S_IFSOCK, libc::S_IFSOCK);
        assert_eq!(mode_to_dtype(S_IFDIR), DT_DIR);
        assert_eq!(mode_to_dtype(S_IFLNK | 0o777), DT_LNK);
        assert_eq!(mode_to_dtype(S_IFREG), DT_REG);
    }
}
