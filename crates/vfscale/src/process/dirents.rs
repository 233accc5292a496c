//! getdents64: directory listing from the child index, by cookie.
//!
//! Runs under the directory lock shared: listings proceed in parallel with
//! each other and with lookups, and write no per-directory state per entry
//! (only the file's own position, once per call).

use super::Process;
use crate::abi::*;
use crate::dir::index::FIRST_CHILD_COOKIE;
use crate::file::OpenFile;
use crate::vfs::VfsInner;

/// One directory entry of a listing; `next` is the cookie that resumes
/// after it.
pub struct DirEntryRef<'a> {
    pub name: &'a [u8],
    pub ino: u64,
    pub dtype: u8,
    pub next: u64,
}

/// How many entries ahead of the one it emits a listing prefetches the
/// child's dentry for a name the index does not hold (longer than
/// `INDEXED_NAME_MAX`; line 0 of the dentry holds its start): the index
/// gives the addresses in order, and a big directory's dentries are a
/// cache miss each (~28 ns per entry at 1,000,000 entries: 8 ahead covers
/// two DRAM latencies).
const LIST_PREFETCH_AHEAD: usize = 8;

impl VfsInner {
    /// Lists the directory open as `file` from position `from` (0 = ".",
    /// 1 = "..", then child cookies), handing each entry to `emit` until it
    /// returns false or the listing ends. Returns the position after the
    /// last entry `emit` took, and whether `emit` refused one. getdents64
    /// and the namespace API's readdir both list through here.
    pub(crate) fn list_dir(
        &self,
        file: &OpenFile,
        from: u64,
        mut emit: impl FnMut(&DirEntryRef<'_>) -> bool,
    ) -> SysResult<(u64, bool)> {
        let inode = file.inode();
        let index = inode.dir_index().ok_or(Errno::ENOTDIR)?;
        let _g = self.collector.enter();
        let locked = index.read();
        if locked.is_dead() {
            return Err(Errno::ENOENT);
        }
        let mut pos = from;
        let refused = 'list: {
            if pos == 0 {
                let dot = DirEntryRef {
                    name: b".",
                    ino: inode.ino(),
                    dtype: DT_DIR,
                    next: 1,
                };
                if !emit(&dot) {
                    break 'list true;
                }
                pos = 1;
            }
            if pos == 1 {
                // SAFETY: the file references its dentry; parents are
                // referenced by their children.
                let parent = unsafe { &*file.dentry }.parent_ptr();
                let ino = if parent.is_null() {
                    inode.ino()
                } else {
                    // SAFETY: a positive parent (referenced by the child)
                    // keeps its inode.
                    unsafe { &*(*parent).inode_ptr() }.ino()
                };
                let dotdot = DirEntryRef {
                    name: b"..",
                    ino,
                    dtype: DT_DIR,
                    next: FIRST_CHILD_COOKIE,
                };
                if !emit(&dotdot) {
                    break 'list true;
                }
                pos = FIRST_CHILD_COOKIE;
            }
            // SAFETY: an inode's superblock outlives it.
            let sb = unsafe { &*inode.sb };
            if sb.backend_served {
                // The listing is the backend's (passthrough: the host's).
                let (next, refused) = sb.fs.readdir(sb, inode, pos, &mut emit)?;
                pos = next;
                break 'list refused;
            }
            let mut long_name = Vec::with_capacity(64);
            for run in locked.runs_from(pos) {
                for (at, &(cookie, child)) in run.iter().enumerate() {
                    if let Some((_, a)) = run.get(at + LIST_PREFETCH_AHEAD) {
                        if a.short_name().is_none() {
                            crate::mem::prefetch(a.dentry());
                        }
                    }
                    let short = child.short_name();
                    let name = match &short {
                        Some((bytes, len)) => &bytes[..*len],
                        None => {
                            // SAFETY: indexed children are pinned and the
                            // directory lock is held.
                            let c = unsafe { &*child.dentry() };
                            long_name.clear();
                            c.name_into(&mut long_name);
                            &long_name[..]
                        }
                    };
                    let e = DirEntryRef {
                        name,
                        ino: child.ino,
                        dtype: mode_to_dtype(child.file_type()),
                        next: cookie + 1,
                    };
                    if !emit(&e) {
                        // The position names the entry that did not fit,
                        // as Linux 6.18's offset_iterate_dir leaves it
                        // (telldir then reads its cookie, not the end of
                        // a removed entry's gap).
                        pos = cookie;
                        break 'list true;
                    }
                    pos = cookie + 1;
                }
            }
            false
        };
        drop(locked);
        // SAFETY: an open file holds its mount.
        inode.touch_atime(unsafe { &*file.mnt }.flags.get());
        Ok((pos, refused))
    }
}

impl Process {
    pub(crate) fn sys_getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.with_file(fd, false, |file| {
            let mut pos = file.pos.lock();
            let mut used = 0;
            let mut last = None;
            let (next, refused) = self.vfs.list_dir(file, *pos, |e| {
                match put_dirent64(buf, used, e.ino, e.next as i64, e.dtype, e.name) {
                    Some(n) => {
                        last = Some(used);
                        used += n;
                        true
                    }
                    None => false,
                }
            })?;
            // iterate_dir reports the access whatever the buffer took.
            self.vfs.notify_file(file, IN_ACCESS);
            // The buffer cannot hold even the first entry.
            if refused && used == 0 {
                return Err(Errno::EINVAL);
            }
            // The last record's d_off is the position the call leaves, as
            // getdents64 writes it (so telldir after it agrees with lseek).
            if let Some(at) = last {
                buf[at + 8..at + 16].copy_from_slice(&(next as i64).to_ne_bytes());
            }
            *pos = next;
            Ok(used)
        })
    }
}
