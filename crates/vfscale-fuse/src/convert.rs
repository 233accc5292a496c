//! Conversions between vfscale's Linux-ABI types and fuser's.

use fuser::{FileAttr, FileType, INodeNo, TimeOrNow};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use vfscale::abi::*;

pub fn errno(e: Errno) -> fuser::Errno {
    fuser::Errno::from_i32(e.0)
}

pub fn time(t: Timespec) -> SystemTime {
    let nsec = t.nsec.clamp(0, 999_999_999) as u32;
    if t.sec >= 0 {
        UNIX_EPOCH + Duration::new(t.sec as u64, nsec)
    } else {
        UNIX_EPOCH - Duration::from_secs(t.sec.unsigned_abs()) + Duration::new(0, nsec)
    }
}

pub fn timespec(t: TimeOrNow) -> Timespec {
    match t {
        TimeOrNow::Now => Timespec::NOW,
        TimeOrNow::SpecificTime(st) => match st.duration_since(UNIX_EPOCH) {
            Ok(d) => Timespec::new(d.as_secs() as i64, d.subsec_nanos() as i64),
            Err(e) => {
                let d = e.duration();
                let (mut s, mut n) = (-(d.as_secs() as i64), -(d.subsec_nanos() as i64));
                if n < 0 {
                    s -= 1;
                    n += 1_000_000_000;
                }
                Timespec::new(s, n)
            }
        },
    }
}

pub fn kind(mode: u32) -> FileType {
    match mode & S_IFMT {
        S_IFDIR => FileType::Directory,
        S_IFLNK => FileType::Symlink,
        S_IFIFO => FileType::NamedPipe,
        S_IFCHR => FileType::CharDevice,
        S_IFBLK => FileType::BlockDevice,
        S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

pub fn dtype_kind(dtype: u8) -> FileType {
    match dtype {
        DT_DIR => FileType::Directory,
        DT_LNK => FileType::Symlink,
        DT_FIFO => FileType::NamedPipe,
        DT_CHR => FileType::CharDevice,
        DT_BLK => FileType::BlockDevice,
        DT_SOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

/// The FUSE attributes of `st`, reported under node id `id` (fuser uses
/// the attribute's ino as the entry's node id).
pub fn attr(id: u64, st: &Stat) -> FileAttr {
    FileAttr {
        ino: INodeNo(id),
        size: st.size.max(0) as u64,
        blocks: st.blocks.max(0) as u64,
        atime: time(st.atime),
        mtime: time(st.mtime),
        ctime: time(st.ctime),
        crtime: time(st.ctime),
        kind: kind(st.mode),
        perm: (st.mode & 0o7777) as u16,
        nlink: st.nlink,
        uid: st.uid,
        gid: st.gid,
        rdev: st.rdev as u32,
        blksize: st.blksize as u32,
        flags: 0,
    }
}
