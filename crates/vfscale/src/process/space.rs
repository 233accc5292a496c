//! fallocate and copy_file_range.
//!
//! fallocate takes the inode's data lock exclusively (like a write), then
//! publishes size, blocks and times under the attribute seqcount.
//! copy_file_range is the backend's own copy where it has one (passthrough:
//! the host's copy_file_range), else a loop of positional reads and writes
//! through the same code as pread/pwrite, so it keeps their locking and
//! space accounting.

use super::Process;
use crate::abi::*;
use crate::file::{OpenFile, FMODE_READ, FMODE_WRITE};
use crate::inode::flags::{MODE_APPEND, MODE_IMMUTABLE};
use crate::inode::now;

/// tmpfs's page, the unit fallocate allocates.
const CHUNK: u64 = crate::fs::tmpfs::data::CHUNK_SIZE as u64;

/// Bytes copied per step of copy_file_range.
const COPY_CHUNK: usize = 64 * 1024;

/// Every fallocate mode Linux knows (FALLOC_FL_MODE_MASK): allocate (0),
/// PUNCH_HOLE, COLLAPSE_RANGE, ZERO_RANGE, INSERT_RANGE, UNSHARE_RANGE,
/// WRITE_ZEROES.
const FALLOC_MODE_MASK: i32 = 0x02 | 0x08 | 0x10 | 0x20 | 0x40 | 0x80;

/// vfs_fallocate's argument and access checks, in its order: arguments
/// (EINVAL), the mode (EOPNOTSUPP: one mode at a time, PUNCH_HOLE only
/// with KEEP_SIZE, the range shifters never with it), then a writable
/// descriptor (EBADF), then the inode's flags (EPERM). The file type and
/// tmpfs's own mode limit come after.
fn fallocate_mode_checks(file: &OpenFile, mode: i32, offset: i64, len: i64) -> SysResult<()> {
    if offset < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    if mode & !(FALLOC_MODE_MASK | FALLOC_FL_KEEP_SIZE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let keep = mode & FALLOC_FL_KEEP_SIZE != 0;
    match mode & FALLOC_MODE_MASK {
        0 | 0x40 | 0x10 => {}
        FALLOC_FL_PUNCH_HOLE if keep => {}
        0x08 | 0x20 | 0x80 if !keep => {}
        _ => return Err(Errno::EOPNOTSUPP),
    }
    if file.fmode & FMODE_WRITE == 0 {
        return Err(Errno::EBADF);
    }
    // Only a plain allocation on an append-only file; nothing on an
    // immutable one.
    let flags = file.inode().perm_attr().0;
    if (mode & !FALLOC_FL_KEEP_SIZE != 0 && flags & MODE_APPEND != 0) || flags & MODE_IMMUTABLE != 0
    {
        return Err(Errno::EPERM);
    }
    Ok(())
}

impl Process {
    pub(crate) fn sys_fallocate(&self, fd: Fd, mode: i32, offset: i64, len: i64) -> SysResult<()> {
        // The descriptor first (ksys_fallocate), then vfs_fallocate's checks
        // in its order.
        let f = self.fd_file_nopath(fd)?;
        if let Err(e) = fallocate_mode_checks(f.file(), mode, offset, len) {
            self.vfs.fput(f);
            return Err(e);
        }
        let r = (|| {
            let inode = f.file().inode();
            match inode.file_type() {
                S_IFIFO => return Err(Errno::ESPIPE),
                S_IFDIR => return Err(Errno::EISDIR),
                S_IFREG => {}
                _ => return Err(Errno::ENODEV),
            }
            if offset.checked_add(len).is_none() {
                return Err(Errno::EFBIG);
            }
            // A backend's file: its filesystem's own modes and checks.
            if let Some(sb) = super::backend_names::backend_of(inode) {
                sb.fs
                    .fallocate(sb, inode, mode, offset as u64, len as u64)?;
                // After the host accepted the mode, as tmpfs clears them
                // only for a fallocate it performs.
                self.remove_privs_on_backend(sb, inode)?;
                self.vfs.watchers.inode_changed(inode, true);
                return Ok(());
            }
            // shmem_fallocate: tmpfs has only these two modes.
            if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            let end = (offset + len) as u64;
            let (offset, len) = (offset as u64, len as u64);
            let data = inode.file_data().ok_or(Errno::EINVAL)?;
            let seals = crate::anon::memfd::seals_of(&self.vfs, inode);
            let mut d = data.write();
            if let Some(sealed) = seals {
                let set = crate::anon::memfd::get(sealed);
                let punch = mode & FALLOC_FL_PUNCH_HOLE != 0;
                crate::anon::memfd::may_fallocate(set, punch, end, d.len())?;
            }
            let blocks_before = d.blocks_512();
            if mode & FALLOC_FL_PUNCH_HOLE != 0 {
                d.punch_hole(offset, len);
            } else {
                // Linux's shmem_fallocate refuses a range larger than the
                // instance (ENOSPC) before allocating; vfscale also refuses
                // one whose holes do not fit now, so an impossible request
                // never allocates (and cannot exhaust the host's memory).
                // SAFETY: an inode's superblock outlives it.
                let sb = unsafe { &*inode.sb };
                let range_pages = end.div_ceil(CHUNK) - offset / CHUNK;
                if range_pages > sb.limits().0 as u64 || !sb.pages_fit(d.holes_in(offset, len)) {
                    return Err(Errno::ENOSPC);
                }
                let added = d.allocate(offset, len);
                let delta = d.blocks_512() as i64 - blocks_before as i64;
                if let Err(e) = self.vfs.charge_data(inode, delta) {
                    // Nothing is allocated when the instance is full: free
                    // exactly the holes this call filled (old data stays).
                    d.free_chunks(&added);
                    return Err(e);
                }
                if mode & FALLOC_FL_KEEP_SIZE == 0 && end > d.len() {
                    d.set_len(end);
                }
            }
            let (size, blocks) = (d.len(), d.blocks_512());
            if mode & FALLOC_FL_PUNCH_HOLE != 0 {
                let _ = self
                    .vfs
                    .charge_data(inode, blocks as i64 - blocks_before as i64);
            }
            let t = now();
            let cred = &self.cred;
            // Under the data lock, as in `write_file`; a successful
            // fallocate is a modification (shmem_fallocate's
            // file_modified): set-id bits go as for a write.
            inode.update_attr(|a| {
                let cur = a.get();
                a.set_size(size, blocks);
                a.set_mtime(t);
                a.set_ctime(t);
                if let Some(m) = crate::cred::perm::write_strip_mode(cred, cur.mode, cur.gid) {
                    a.set_mode(m);
                }
            });
            drop(d);
            self.vfs.watchers.inode_changed(inode, true);
            Ok(())
        })();
        if r.is_ok() {
            self.vfs.notify_file(f.file(), IN_MODIFY);
        }
        self.vfs.fput(f);
        r
    }

    pub(crate) fn sys_copy_file_range(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        // Linux's order: both descriptors (EBADF), then the flags.
        self.with_two_files(fd_in, fd_out, |fin, fout| {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            self.notify_moved(self.copy_range(fin, off_in, fout, off_out, len), fin, fout)
        })
    }

    /// vfs_copy_file_range's checks in Linux's order, then the copy.
    fn copy_range(
        &self,
        i: &OpenFile,
        off_in: Option<&mut i64>,
        o: &OpenFile,
        off_out: Option<&mut i64>,
        len: usize,
    ) -> SysResult<usize> {
        // generic_file_rw_checks: types, then access modes.
        let (ti, to) = (i.inode().file_type(), o.inode().file_type());
        if ti == S_IFDIR || to == S_IFDIR {
            return Err(Errno::EISDIR);
        }
        if ti != S_IFREG || to != S_IFREG {
            return Err(Errno::EINVAL);
        }
        if i.fmode & FMODE_READ == 0 || o.fmode & FMODE_WRITE == 0 || o.status() & O_APPEND != 0 {
            return Err(Errno::EBADF);
        }
        // tmpfs has no copy_file_range of its own: another instance is
        // EXDEV (callers fall back to read and write, as for copies between
        // filesystems). Within one backend-served instance the backend
        // copies (passthrough: the host's copy_file_range) or the core
        // reads and writes through it, from the source's size as its fstat
        // would show it.
        // SAFETY: an inode's superblock outlives it.
        let (sb_in, sb_out) = unsafe { (&*i.inode().sb, &*o.inode().sb) };
        if !std::ptr::eq(sb_in, sb_out) {
            return Err(Errno::EXDEV);
        }
        // generic_copy_file_checks: never into an immutable file.
        if o.inode().perm_attr().0 & MODE_IMMUTABLE != 0 {
            return Err(Errno::EPERM);
        }
        if sb_in.backend_served {
            super::attrs::refresh_past_ttl(i);
        }
        let start_in = match &off_in {
            Some(p) => **p,
            None => *i.pos.lock() as i64,
        };
        let start_out = match &off_out {
            Some(p) => **p,
            None => *o.pos.lock() as i64,
        };
        // generic_copy_file_checks, in loff_t + size_t (unsigned) arithmetic.
        let (pi, po) = (start_in as u64, start_out as u64);
        let mut count = len as u64;
        if pi.wrapping_add(count) < pi || po.wrapping_add(count) < po {
            return Err(Errno::EOVERFLOW);
        }
        // Shorten the copy to the end of the source.
        let size_in = i.inode().attr().size as i64;
        if start_in >= size_in {
            count = 0;
        } else {
            count = count.min((size_in as u64).wrapping_sub(pi));
        }
        // generic_write_check_limits: pos >= s_maxbytes (MAX_FILE_SIZE,
        // i64::MAX, so only equality is possible).
        if start_out == MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        count = count.min((MAX_FILE_SIZE as u64).wrapping_sub(po));
        // The same file with overlapping ranges.
        if std::ptr::eq(i.inode, o.inode)
            && po.wrapping_add(count) > pi
            && po < pi.wrapping_add(count)
        {
            return Err(Errno::EINVAL);
        }
        // rw_verify_area for both sides.
        for pos in [start_in, start_out] {
            if count > isize::MAX as u64
                || pos < 0
                || (pos as u64).wrapping_add(count) > i64::MAX as u64
            {
                return Err(Errno::EINVAL);
            }
        }
        let len = count as usize;
        if len == 0 {
            return Ok(0);
        }
        let done = match self.copy_by_backend(i, pi, o, po, len)? {
            Some(done) => done,
            None => self.copy_through_buffer(i, start_in, o, start_out, len)?,
        };
        match off_in {
            Some(p) => *p += done as i64,
            None => *i.pos.lock() += done as u64,
        }
        match off_out {
            Some(p) => *p += done as i64,
            None => *o.pos.lock() += done as u64,
        }
        Ok(done)
    }

    /// The backend's own copy (`Filesystem::copy_range`), if it has one for
    /// these files; the destination loses set-user-ID and set-group-ID
    /// first, as for a write.
    fn copy_by_backend(
        &self,
        i: &OpenFile,
        pi: u64,
        o: &OpenFile,
        po: u64,
        len: usize,
    ) -> SysResult<Option<usize>> {
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*o.inode().sb };
        if !sb.backend_served {
            return Ok(None);
        }
        self.remove_privs_on_backend(sb, o.inode())?;
        let done = sb
            .fs
            .copy_range(sb, (i.inode(), pi), (o.inode(), po), len)?;
        if done.is_some_and(|n| n > 0) {
            self.vfs.watchers.inode_changed(o.inode(), true);
        }
        Ok(done)
    }

    /// The copy as positional reads and writes through `COPY_CHUNK` bytes
    /// of buffer.
    fn copy_through_buffer(
        &self,
        i: &OpenFile,
        start_in: i64,
        o: &OpenFile,
        start_out: i64,
        len: usize,
    ) -> SysResult<usize> {
        let mut buf = vec![0u8; COPY_CHUNK.min(len)];
        let mut done = 0usize;
        while done < len {
            let want = (len - done).min(buf.len());
            let n = self.read_file(i, &mut [&mut buf[..want]], Some(start_in + done as i64))?;
            if n == 0 {
                break;
            }
            let w = match self.write_file(o, &[&buf[..n]], Some(start_out + done as i64), None) {
                Ok(w) => w,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            done += w;
            if w < n {
                break;
            }
        }
        Ok(done)
    }
}
