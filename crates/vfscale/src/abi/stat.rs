//! Attribute records returned by the stat family and statfs, and the
//! `linux_dirent64` byte layout written by getdents64.

use super::flags::*;

/// A point in time as the kernel keeps it: seconds and nanoseconds since the
/// epoch. `nsec` is always below 1e9 except for the UTIME_* markers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: i64,
}

impl Timespec {
    pub const fn new(sec: i64, nsec: i64) -> Self {
        Timespec { sec, nsec }
    }
    /// The `utimensat` marker meaning "set to the current time".
    pub const NOW: Timespec = Timespec {
        sec: 0,
        nsec: UTIME_NOW,
    };
    /// The `utimensat` marker meaning "leave unchanged".
    pub const OMIT: Timespec = Timespec {
        sec: 0,
        nsec: UTIME_OMIT,
    };
}

/// `struct stat`, field for field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
}

/// `struct statx` (the fields vfscale fills).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statx {
    /// Which fields are valid (STATX_* bits).
    pub mask: u32,
    pub blksize: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: Timespec,
    pub btime: Timespec,
    pub ctime: Timespec,
    pub mtime: Timespec,
    pub rdev_major: u32,
    pub rdev_minor: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    /// STATX_ATTR_* bits that hold (`abi::fileattr`).
    pub attributes: u64,
    /// The STATX_ATTR_* bits `attributes` answers for.
    pub attributes_mask: u64,
}

/// `struct statfs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statfs {
    pub f_type: i64,
    pub f_bsize: i64,
    pub f_blocks: u64,
    pub f_bfree: u64,
    pub f_bavail: u64,
    pub f_files: u64,
    pub f_ffree: u64,
    pub f_fsid: [i32; 2],
    pub f_namelen: i64,
    pub f_frsize: i64,
    pub f_flags: i64,
}

/// Size of the fixed part of `linux_dirent64` (d_ino, d_off, d_reclen, d_type).
pub const DIRENT64_HEADER: usize = 19;

/// Bytes one `linux_dirent64` record with a name of `name_len` bytes takes:
/// header + name + NUL, rounded up to 8.
pub const fn dirent64_reclen(name_len: usize) -> usize {
    (DIRENT64_HEADER + name_len + 1 + 7) & !7
}

/// Appends one `linux_dirent64` record to `buf` at `at`. Returns the record
/// length, or `None` if it does not fit (the caller stops the listing there).
pub fn put_dirent64(
    buf: &mut [u8],
    at: usize,
    ino: u64,
    next_off: i64,
    dtype: u8,
    name: &[u8],
) -> Option<usize> {
    let reclen = dirent64_reclen(name.len());
    let rec = buf.get_mut(at..at.checked_add(reclen)?)?;
    rec[0..8].copy_from_slice(&ino.to_ne_bytes());
    rec[8..16].copy_from_slice(&next_off.to_ne_bytes());
    rec[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
    rec[18] = dtype;
    rec[19..19 + name.len()].copy_from_slice(name);
    rec[19 + name.len()..].fill(0);
    Some(reclen)
}

/// One record decoded from a getdents64 buffer (for tests and embedders).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirent {
    pub ino: u64,
    pub off: i64,
    pub dtype: u8,
    pub name: Vec<u8>,
}

/// Decodes the `linux_dirent64` records in `buf` (as filled by getdents64).
/// Stops at the first malformed record.
pub fn parse_dirents64(buf: &[u8]) -> Vec<Dirent> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + DIRENT64_HEADER <= buf.len() {
        let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
        if reclen < DIRENT64_HEADER + 1 || at + reclen > buf.len() {
            break;
        }
        let rec = &buf[at..at + reclen];
        let name_area = &rec[19..];
        let name_len = name_area
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(name_area.len());
        out.push(Dirent {
            ino: u64::from_ne_bytes(rec[0..8].try_into().unwrap()),
            off: i64::from_ne_bytes(rec[8..16].try_into().unwrap()),
            dtype: rec[18],
            name: name_area[..name_len].to_vec(),
        });
        at += reclen;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirent_layout_matches_linux() {
        // d_name is at offset 19 in struct linux_dirent64.
        assert_eq!(dirent64_reclen(1), 24);
        assert_eq!(dirent64_reclen(4), 24);
        assert_eq!(dirent64_reclen(5), 32);
        let mut buf = [0xffu8; 64];
        let n = put_dirent64(&mut buf, 0, 42, 7, DT_REG, b"hello").unwrap();
        assert_eq!(n, 32);
        let m = put_dirent64(&mut buf, n, 43, 8, DT_DIR, b"d").unwrap();
        assert_eq!(m, 24);
        assert!(put_dirent64(&mut buf, n + m, 44, 9, DT_DIR, b"x").is_none());
        let ents = parse_dirents64(&buf[..n + m]);
        assert_eq!(ents.len(), 2);
        assert_eq!(
            ents[0],
            Dirent {
                ino: 42,
                off: 7,
                dtype: DT_REG,
                name: b"hello".to_vec()
            }
        );
        assert_eq!(ents[1].name, b"d");
        assert_eq!(buf[19 + 5], 0, "name is NUL terminated");
    }
}
