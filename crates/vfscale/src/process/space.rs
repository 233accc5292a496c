//! fallocate and copy_file_range.
//!
//! fallocate takes the inode's data lock exclusively (like a write), then
//! publishes size, blocks and times under the attribute seqcount.
//! copy_file_range is a loop of positional reads and writes through the
//! same code as pread/pwrite, so it keeps their locking and space
//! accounting.

use super::Process;
use crate::abi::*;
use crate::file::FileRef;
use crate::inode::now;

/// Bytes copied per step of copy_file_range.
const COPY_CHUNK: usize = 64 * 1024;

impl Process {
    pub(crate) fn sys_fallocate(&self, fd: Fd, mode: i32, offset: i64, len: i64) -> SysResult<()> {
        if offset < 0 || len <= 0 {
            return Err(Errno::EINVAL);
        }
        let supported = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE;
        if mode & !supported != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if mode & FALLOC_FL_PUNCH_HOLE != 0 && mode & FALLOC_FL_KEEP_SIZE == 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let f = self.writable(fd)?;
        if let Err(e) = super::refuse_backend_change(f.file().inode()) {
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
            let end = offset
                .checked_add(len)
                .filter(|&e| e as u64 <= MAX_FILE_SIZE as u64)
                .ok_or(Errno::EFBIG)? as u64;
            let (offset, len) = (offset as u64, len as u64);
            let data = inode.file_data().ok_or(Errno::EINVAL)?;
            let mut d = data.write();
            let blocks_before = d.blocks_512();
            if mode & FALLOC_FL_PUNCH_HOLE != 0 {
                d.punch_hole(offset, len);
            } else {
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
            // Under the data lock, as in `write_file`.
            inode.update_attr(|a| {
                a.set_size(size, blocks);
                a.set_mtime(t);
                a.set_ctime(t);
            });
            drop(d);
            self.vfs.watchers.inode_changed(inode, true);
            Ok(())
        })();
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
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let fin = self.readable(fd_in)?;
        let fout = match self.writable(fd_out) {
            Ok(f) => f,
            Err(e) => {
                self.vfs.fput(fin);
                return Err(e);
            }
        };
        let r = self.copy_range(&fin, off_in, &fout, off_out, len);
        self.vfs.fput(fin);
        self.vfs.fput(fout);
        r
    }

    fn copy_range(
        &self,
        fin: &FileRef,
        off_in: Option<&mut i64>,
        fout: &FileRef,
        off_out: Option<&mut i64>,
        len: usize,
    ) -> SysResult<usize> {
        let (i, o) = (fin.file(), fout.file());
        for f in [i, o] {
            // Backend-served data is not in memory: callers fall back to
            // read and write, as for copies between filesystems.
            // SAFETY: an inode's superblock outlives it.
            if unsafe { &*f.inode().sb }.backend_served {
                return Err(Errno::EXDEV);
            }
            match f.inode().file_type() {
                S_IFDIR => return Err(Errno::EISDIR),
                S_IFREG => {}
                _ => return Err(Errno::EINVAL),
            }
        }
        if o.status() & O_APPEND != 0 {
            return Err(Errno::EBADF);
        }
        let start_in = match &off_in {
            Some(p) => **p,
            None => *i.pos.lock() as i64,
        };
        let start_out = match &off_out {
            Some(p) => **p,
            None => *o.pos.lock() as i64,
        };
        if start_in < 0 || start_out < 0 {
            return Err(Errno::EINVAL);
        }
        let len = len.min(isize::MAX as usize);
        // The same file with overlapping ranges: EINVAL (generic_copy_file_checks).
        if std::ptr::eq(i.inode, o.inode) {
            let (a, b, n) = (start_in as u64, start_out as u64, len as u64);
            if a < b.saturating_add(n) && b < a.saturating_add(n) {
                return Err(Errno::EINVAL);
            }
        }
        if len == 0 {
            return Ok(0);
        }
        let mut buf = vec![0u8; COPY_CHUNK.min(len)];
        let mut done = 0usize;
        while done < len {
            let want = (len - done).min(buf.len());
            let n = self.read_file(i, &mut [&mut buf[..want]], Some(start_in + done as i64))?;
            if n == 0 {
                break;
            }
            let w = match self.write_file(o, &[&buf[..n]], Some(start_out + done as i64)) {
                Ok(w) => w,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            done += w;
            if w < n {
                break;
            }
        }
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
}
