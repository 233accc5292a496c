//! Data: read, write, pread, pwrite, readv, writev, lseek, ftruncate,
//! fsync, fdatasync.
//!
//! File contents are under the inode's data lock (shared for reads,
//! exclusive for writes); size, blocks and times are published under the
//! attribute seqcount after the data changes.

use super::Process;
use crate::abi::*;
use crate::cred::perm::write_strip_mode;
use crate::file::{OpenFile, FMODE_READ, FMODE_STREAMS, FMODE_WRITE};
use crate::fs::tmpfs::data::FileData;
use crate::fs::BLOCK_SIZE;
use crate::inode::{now, Inode};
use crate::sync::lock::{MutexGuard, RwLock};

/// Most iovecs one readv/writev accepts (Linux UIO_MAXIOV).
pub(super) const UIO_MAXIOV: usize = 1024;

impl Process {
    pub(super) fn readable(&self, fd: Fd) -> SysResult<crate::file::FileRef> {
        let f = self.fd_file_nopath(fd)?;
        if f.file().fmode & FMODE_READ == 0 {
            self.vfs.fput(f);
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    pub(super) fn writable(&self, fd: Fd) -> SysResult<crate::file::FileRef> {
        let f = self.fd_file_nopath(fd)?;
        if f.file().fmode & FMODE_WRITE == 0 {
            self.vfs.fput(f);
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    /// Reads at `offset` (None: the file position, advanced).
    fn do_read(&self, fd: Fd, bufs: &mut [&mut [u8]], offset: Option<i64>) -> SysResult<usize> {
        self.do_read_flags(fd, bufs, offset, 0)
    }

    /// `do_read` with preadv2's RWF_* flags, checked as Linux's
    /// kiocb_set_rw_flags checks them once the call has bytes to move.
    fn do_read_flags(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        offset: Option<i64>,
        flags: i32,
    ) -> SysResult<usize> {
        // Argument checks come before the descriptor's, as in Linux.
        if offset.is_some_and(|o| o < 0) {
            return Err(Errno::EINVAL);
        }
        let f = self.readable(fd)?;
        let r = rw_flags(f.file(), flags, false).and_then(|rw| {
            if f.file().fmode & FMODE_STREAMS != 0 {
                self.read_special(f.file(), bufs, rw.nowait)
            } else {
                self.read_file(f.file(), bufs, offset)
            }
        });
        if self.vfs.notify_active() && r.as_ref().is_ok_and(|&n| n > 0) {
            self.vfs.notify_file(f.file(), IN_ACCESS);
        }
        self.vfs.fput(f);
        r
    }

    pub(super) fn read_file(
        &self,
        file: &OpenFile,
        bufs: &mut [&mut [u8]],
        offset: Option<i64>,
    ) -> SysResult<usize> {
        let len = bufs.iter().map(|b| b.len()).sum();
        let Transfer {
            mut pos_guard,
            mut pos,
            data,
        } = match begin_transfer(file, offset, len)? {
            Ok(t) => t,
            Err(done) => return Ok(done),
        };
        let inode = file.inode();
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*inode.sb };
        if sb.backend_served {
            // Data lives on the backend (passthrough): one call per buffer.
            let mut total = 0;
            for b in bufs.iter_mut() {
                let n = match sb.fs.read(sb, inode, pos, b) {
                    Ok(n) => n,
                    Err(e) if total == 0 => return Err(e),
                    Err(_) => break,
                };
                pos += n as u64;
                total += n;
                if n < b.len() {
                    break;
                }
            }
            if let Some(g) = pos_guard.as_mut() {
                **g = pos;
            }
            return Ok(total);
        }
        let mut total = 0;
        {
            let d = data.read();
            for b in bufs.iter_mut() {
                let n = d.read_at(pos, b);
                pos += n as u64;
                total += n;
                if n < b.len() {
                    break;
                }
            }
        }
        if let Some(g) = pos_guard.as_mut() {
            **g = pos;
        }
        if total > 0 && file.status() & O_NOATIME == 0 {
            // SAFETY: an open file holds its mount.
            inode.touch_atime(unsafe { &*file.mnt }.flags.get());
        }
        Ok(total)
    }

    /// A write at `offset` (or the file position), appending when
    /// `append` says so (None: when the file's status has O_APPEND).
    fn do_write(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        offset: Option<i64>,
        append: Option<bool>,
    ) -> SysResult<usize> {
        self.do_write_flags(fd, bufs, offset, append, 0)
    }

    /// `do_write` with pwritev2's RWF_* flags (RWF_APPEND and
    /// RWF_NOAPPEND decide the append for this call; RWF_DSYNC and
    /// RWF_SYNC sync a backend's file after the write).
    fn do_write_flags(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        offset: Option<i64>,
        append: Option<bool>,
        flags: i32,
    ) -> SysResult<usize> {
        if offset.is_some_and(|o| o < 0) {
            return Err(Errno::EINVAL);
        }
        let f = self.writable(fd)?;
        let r = rw_flags(f.file(), flags, true).and_then(|rw| {
            if f.file().fmode & FMODE_STREAMS != 0 {
                self.write_special(f.file(), bufs, rw.nowait)
            } else {
                let append = rw.append.or(append);
                let n = self.write_file(f.file(), bufs, offset, append)?;
                if rw.sync {
                    let inode = f.file().inode();
                    if let Some(sb) = super::backend_names::backend_of(inode) {
                        sb.fs.fsync(sb, inode, flags & RWF_SYNC == 0)?;
                    }
                }
                Ok(n)
            }
        });
        if self.vfs.notify_active() && r.as_ref().is_ok_and(|&n| n > 0) {
            self.vfs.notify_file(f.file(), IN_MODIFY);
        }
        self.vfs.fput(f);
        r
    }

    pub(super) fn write_file(
        &self,
        file: &OpenFile,
        bufs: &[&[u8]],
        offset: Option<i64>,
        append: Option<bool>,
    ) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let Transfer {
            mut pos_guard,
            pos,
            data,
        } = match begin_transfer(file, offset, len)? {
            Ok(t) => t,
            Err(done) => return Ok(done),
        };
        let inode = file.inode();
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*inode.sb };
        let append = append.unwrap_or(file.status() & O_APPEND != 0);
        if sb.backend_served {
            return self.write_backend(sb, inode, pos_guard, pos, append, bufs, offset);
        }
        // A memfd's seals, tested page by page under the data lock.
        let seals = crate::anon::memfd::seals_of(&self.vfs, inode);
        let mut d = data.write();
        if len == 0 {
            return Ok(0);
        }
        let mut pos = if append { d.len() } else { pos };
        // generic_write_check_limits with tmpfs's s_maxbytes (i64::MAX):
        // a write that starts at the limit is EFBIG, one that would cross
        // it is cut there. Only an append position can get here: a
        // positioned write's end was checked by `begin_transfer`.
        if pos >= i64::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut budget = len.min((i64::MAX as u64 - pos) as usize);
        // Page by page, charging each new page: when the instance is full
        // the write stops there and returns what it wrote (ENOSPC only if
        // nothing fit), as tmpfs does.
        let mut total = 0;
        'bufs: for b in bufs {
            let mut rest = &b[..b.len().min(budget)];
            budget -= rest.len();
            while !rest.is_empty() {
                let in_page = (BLOCK_SIZE - pos % BLOCK_SIZE) as usize;
                let (piece, tail) = rest.split_at(in_page.min(rest.len()));
                if let Some(sealed) = seals {
                    let set = crate::anon::memfd::get(sealed);
                    if let Err(e) =
                        crate::anon::memfd::may_write(set, pos, piece.len() as u64, d.len())
                    {
                        if total == 0 {
                            return Err(e);
                        }
                        break 'bufs;
                    }
                }
                let (len_before, blocks_before) = (d.len(), d.blocks_512());
                d.write_at(pos, piece)?;
                if let Err(e) = self
                    .vfs
                    .charge_data(inode, d.blocks_512() as i64 - blocks_before as i64)
                {
                    // Undo this page's allocation and any growth.
                    let page = pos - pos % BLOCK_SIZE;
                    d.punch_hole(page, BLOCK_SIZE);
                    if d.len() > len_before {
                        d.set_len(len_before);
                    }
                    if total == 0 {
                        return Err(e);
                    }
                    break 'bufs;
                }
                pos += piece.len() as u64;
                total += piece.len();
                rest = tail;
            }
        }
        let size = d.len();
        let blocks = d.blocks_512();
        if let Some(g) = pos_guard.as_mut() {
            **g = pos;
        }
        let t = now();
        let cred = &self.cred;
        // Under the data lock: the size and blocks published are this
        // change's, never overtaken by a racing writer's or truncate's
        // older values (the inode's free uncharges the published blocks).
        inode.update_attr(|a| {
            let cur = a.get();
            a.set_size(size, blocks);
            a.set_mtime(t);
            a.set_ctime(t);
            if let Some(m) = write_strip_mode(cred, cur.mode, cur.gid) {
                a.set_mode(m);
            }
        });
        drop(d);
        self.vfs.watchers.inode_changed(inode, true);
        Ok(total)
    }

    /// `write_file` for an instance whose data lives on the backend.
    #[allow(clippy::too_many_arguments)]
    fn write_backend(
        &self,
        sb: &crate::fs::SuperBlock,
        inode: &Inode,
        mut pos_guard: Option<MutexGuard<'_, u64>>,
        mut pos: u64,
        append: bool,
        bufs: &[&[u8]],
        offset: Option<i64>,
    ) -> SysResult<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if !append
            && pos
                .checked_add(len as u64)
                .is_none_or(|e| e > i64::MAX as u64)
        {
            return Err(if offset.is_some() {
                Errno::EINVAL
            } else {
                Errno::EFBIG
            });
        }
        if len > 0 {
            self.remove_privs_on_backend(sb, inode)?;
        }
        let mut total = 0;
        for b in bufs {
            if b.is_empty() {
                continue;
            }
            let at = (!append).then_some(pos);
            let n = match sb.fs.write(sb, inode, at, b) {
                Ok(n) => n,
                Err(e) if total == 0 => return Err(e),
                Err(_) => break,
            };
            pos = if append {
                inode.attr().size
            } else {
                pos + n as u64
            };
            total += n;
            if n < b.len() {
                break;
            }
        }
        if let Some(g) = pos_guard.as_mut() {
            **g = pos;
        }
        if total > 0 {
            self.vfs.watchers.inode_changed(inode, true);
        }
        Ok(total)
    }

    /// Linux's file_remove_privs for a write, truncate or fallocate of a
    /// backend-served file: the backend acts with the vfscale process's
    /// credentials (usually root's, which keep set-user-ID and
    /// set-group-ID), so the bits this caller's change must clear
    /// (`write_strip_mode`, as the in-memory paths apply) are cleared
    /// first, by a setattr of the mode; its failure fails the call, as in
    /// Linux.
    pub(super) fn remove_privs_on_backend(
        &self,
        sb: &crate::fs::SuperBlock,
        inode: &Inode,
    ) -> SysResult<()> {
        let cur = inode.attr();
        match write_strip_mode(&self.cred, cur.mode, cur.gid) {
            Some(mode) => sb.fs.setattr(
                sb,
                inode,
                &crate::fs::AttrChange {
                    mode: Some(mode),
                    ..Default::default()
                },
            ),
            None => Ok(()),
        }
    }

    /// Sets a regular file's length (truncate, ftruncate, O_TRUNC).
    pub(crate) fn truncate_inode(
        &self,
        d: *const crate::dcache::dentry::Dentry,
        inode: &Inode,
        length: u64,
    ) -> SysResult<()> {
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*inode.sb };
        if sb.backend_served {
            self.remove_privs_on_backend(sb, inode)?;
            return sb
                .fs
                .truncate(sb, inode, length)
                .inspect(|()| self.data_changed(d, inode));
        }
        let data = inode.file_data().ok_or(Errno::EINVAL)?;
        let seals = crate::anon::memfd::seals_of(&self.vfs, inode);
        let mut data_guard = data.write();
        if let Some(sealed) = seals {
            crate::anon::memfd::may_resize(
                crate::anon::memfd::get(sealed),
                data_guard.len(),
                length,
            )?;
        }
        let before = data_guard.blocks_512();
        data_guard.set_len(length);
        let after = data_guard.blocks_512();
        self.vfs.charge_data(inode, after as i64 - before as i64)?;
        let t = now();
        let cred = &self.cred;
        // Under the data lock, as in `write_file`.
        inode.update_attr(|a| {
            let cur = a.get();
            a.set_size(length, after);
            // Linux's do_truncate sets both times even when the size stays.
            a.set_mtime(t);
            a.set_ctime(t);
            if let Some(m) = write_strip_mode(cred, cur.mode, cur.gid) {
                a.set_mode(m);
            }
        });
        drop(data_guard);
        self.data_changed(d, inode);
        Ok(())
    }

    pub(crate) fn sys_read(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.do_read(fd, &mut [buf], None)
    }

    pub(crate) fn sys_pread(&self, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.no_fifo_positional(fd)?;
        self.do_read(fd, &mut [buf], Some(offset))
    }

    pub(crate) fn sys_readv(&self, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        if bufs.len() > UIO_MAXIOV {
            return Err(Errno::EINVAL);
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return self.empty_vector(fd, false);
        }
        self.do_read(fd, bufs, None)
    }

    pub(crate) fn sys_write(&self, fd: Fd, buf: &[u8]) -> SysResult<usize> {
        self.do_write(fd, &[buf], None, None)
    }

    pub(crate) fn sys_pwrite(&self, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.no_fifo_positional(fd)?;
        self.do_write(fd, &[buf], Some(offset), None)
    }

    /// pwrite that appends exactly when `append` says so, whatever the
    /// file's status: for a FUSE server, whose kernel keeps the status
    /// (F_SETFL) and sends it with each write.
    pub(crate) fn sys_pwrite_appending(
        &self,
        fd: Fd,
        buf: &[u8],
        offset: i64,
        append: bool,
    ) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.no_fifo_positional(fd)?;
        self.do_write(fd, &[buf], Some(offset), Some(append))
    }

    /// preadv2: at `offset`, or at the file position when it is -1 (as
    /// readv); preadv is this with flags 0 and no -1.
    pub(crate) fn sys_preadv2(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        offset: i64,
        flags: i32,
    ) -> SysResult<usize> {
        let at = self.vector_position(fd, offset)?;
        if bufs.len() > UIO_MAXIOV {
            // import_iovec, after the descriptor's checks.
            self.vfs.fput(self.readable(fd)?);
            return Err(Errno::EINVAL);
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return self.empty_vector(fd, false);
        }
        self.do_read_flags(fd, bufs, at, flags)
    }

    /// pwritev2: as `sys_preadv2`, for writing.
    pub(crate) fn sys_pwritev2(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        offset: i64,
        flags: i32,
    ) -> SysResult<usize> {
        let at = self.vector_position(fd, offset)?;
        if bufs.len() > UIO_MAXIOV {
            self.vfs.fput(self.writable(fd)?);
            return Err(Errno::EINVAL);
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return self.empty_vector(fd, true);
        }
        self.do_write_flags(fd, bufs, at, None, flags)
    }

    /// A vectored call with nothing to move (vfs_readv/vfs_writev): the
    /// access mode's EBADF, then EINVAL for a file that cannot be read or
    /// written at all (an epoll: no FMODE_CAN_READ), else 0 — before the
    /// file's type or the call's flags are looked at.
    fn empty_vector(&self, fd: Fd, write: bool) -> SysResult<usize> {
        let f = if write {
            self.writable(fd)?
        } else {
            self.readable(fd)?
        };
        let epoll = f.file().fmode & crate::file::FMODE_EPOLL != 0;
        self.vfs.fput(f);
        if epoll {
            Err(Errno::EINVAL)
        } else {
            Ok(0)
        }
    }

    /// The position a vectored call with `offset` uses: None (the file
    /// position) for -1, else the offset, checked as do_preadv checks it
    /// (EINVAL below 0, then ESPIPE for a file without positions).
    fn vector_position(&self, fd: Fd, offset: i64) -> SysResult<Option<i64>> {
        if offset == -1 {
            return Ok(None);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.no_fifo_positional(fd)?;
        Ok(Some(offset))
    }

    pub(crate) fn sys_writev(&self, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize> {
        if bufs.len() > UIO_MAXIOV {
            return Err(Errno::EINVAL);
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return self.empty_vector(fd, true);
        }
        self.do_write(fd, bufs, None, None)
    }

    pub(crate) fn sys_lseek(&self, fd: Fd, offset: i64, whence: i32) -> SysResult<i64> {
        self.with_file(fd, false, |file| {
            let inode = file.inode();
            if !(SEEK_SET..=SEEK_HOLE).contains(&whence) {
                return Err(Errno::EINVAL);
            }
            if file.fmode & crate::file::FMODE_SHARED_ANON != 0 {
                // eventfd's and epoll's llseek is noop_llseek: the position, unchanged.
                return Ok(*file.pos.lock() as i64);
            }
            if file.fmode & FMODE_STREAMS != 0 || inode.file_type() == S_IFIFO {
                return Err(Errno::ESPIPE);
            }
            let mut pos = file.pos.lock();
            let new = if inode.is_dir() {
                // Directory positions are readdir cookies.
                match whence {
                    SEEK_SET if offset >= 0 => offset,
                    SEEK_CUR => (*pos as i64)
                        .checked_add(offset)
                        .filter(|&p| p >= 0)
                        .ok_or(Errno::EINVAL)?,
                    _ => return Err(Errno::EINVAL),
                }
            } else {
                let size = inode.attr().size as i64;
                match whence {
                    SEEK_SET => offset,
                    SEEK_CUR => (*pos as i64).checked_add(offset).ok_or(Errno::EINVAL)?,
                    SEEK_END => size.checked_add(offset).ok_or(Errno::EINVAL)?,
                    SEEK_DATA | SEEK_HOLE => {
                        if offset < 0 {
                            return Err(Errno::ENXIO);
                        }
                        // A backend's data is in its file, not in memory.
                        if let Some(sb) = super::backend_names::backend_of(inode) {
                            let hole = whence == SEEK_HOLE;
                            let at = sb.fs.seek_data_hole(sb, inode, offset as u64, hole)?;
                            *pos = at;
                            return Ok(at as i64);
                        }
                        let data = inode.file_data().ok_or(Errno::EINVAL)?.read();
                        let r = if whence == SEEK_DATA {
                            data.seek_data(offset as u64)
                        } else {
                            data.seek_hole(offset as u64)
                        };
                        r? as i64
                    }
                    _ => return Err(Errno::EINVAL),
                }
            };
            if new < 0 {
                return Err(Errno::EINVAL);
            }
            *pos = new as u64;
            Ok(new)
        })
    }

    pub(crate) fn sys_ftruncate(&self, fd: Fd, length: i64) -> SysResult<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        self.with_file(fd, false, |file| {
            if file.inode().file_type() != S_IFREG || file.fmode & FMODE_WRITE == 0 {
                return Err(Errno::EINVAL);
            }
            super::names::refuse_append_only(file.inode())?;
            self.truncate_inode(file.dentry, file.inode(), length as u64)
        })
    }

    /// posix_fadvise (fadvise64): generic_fadvise's answers for a
    /// filesystem with no backing device, where advice changes nothing
    /// (tmpfs; vfscale's page cache is the file data itself): ESPIPE for a
    /// pipe or FIFO, EINVAL for a negative length or unknown advice, else
    /// 0. A passthrough file's advice is not passed to the host.
    pub(crate) fn sys_fadvise(&self, fd: Fd, _offset: i64, len: i64, advice: i32) -> SysResult<()> {
        self.with_file(fd, false, |f| {
            if f.fmode & crate::file::FMODE_PIPE != 0 || f.inode().file_type() == S_IFIFO {
                return Err(Errno::ESPIPE);
            }
            if len < 0 || !(POSIX_FADV_NORMAL..=POSIX_FADV_NOREUSE).contains(&advice) {
                return Err(Errno::EINVAL);
            }
            Ok(())
        })
    }

    /// readahead(2): EBADF unless open for reading, EINVAL unless a
    /// regular file, then posix_fadvise(POSIX_FADV_WILLNEED).
    pub(crate) fn sys_readahead(&self, fd: Fd, offset: i64, count: usize) -> SysResult<()> {
        let f = self.readable(fd)?;
        let regular = f.file().inode().file_type() == S_IFREG
            && f.file().fmode & crate::file::FMODE_STREAMS == 0;
        self.vfs.fput(f);
        if !regular {
            return Err(Errno::EINVAL);
        }
        // The count is a loff_t there: past i64::MAX it is negative.
        self.sys_fadvise(fd, offset, count as i64, POSIX_FADV_WILLNEED)
    }

    /// fsync, or fdatasync (`datasync`): nothing to write back in memory;
    /// a backend's file is synced on the backend.
    pub(crate) fn sys_fsync(&self, fd: Fd, datasync: bool) -> SysResult<()> {
        // Pipes have no fsync operation.
        self.with_file(fd, false, |f| {
            let inode = f.inode();
            if f.fmode & FMODE_STREAMS != 0 || inode.file_type() == S_IFIFO {
                return Err(Errno::EINVAL);
            }
            match super::backend_names::backend_of(inode) {
                Some(sb) => sb.fs.fsync(sb, inode, datasync),
                None => Ok(()),
            }
        })
    }

    /// pread/pwrite on a pipe: ESPIPE, after the descriptor check.
    fn no_fifo_positional(&self, fd: Fd) -> SysResult<()> {
        self.with_file(fd, false, |f| {
            if f.fmode & FMODE_STREAMS != 0 || f.inode().file_type() == S_IFIFO {
                Err(Errno::ESPIPE)
            } else {
                Ok(())
            }
        })
    }
}

/// Where a read or write goes: the file's data at `pos`, with the file
/// position's lock held for the whole transfer when it uses the position.
struct Transfer<'f> {
    pos_guard: Option<MutexGuard<'f, u64>>,
    pos: u64,
    data: &'f RwLock<FileData>,
}

/// The common start of read and write, in Linux's order: the range check
/// (rw_verify_area: an end past the largest offset is EINVAL), then the
/// file type. `Err(n)` inside `Ok`: the transfer is already complete with
/// `n` bytes. Callers have rejected negative offsets; pipes, sockets and
/// eventfds (FIFOs included) never get here (`FMODE_STREAMS`).
fn begin_transfer(
    file: &OpenFile,
    offset: Option<i64>,
    len: usize,
) -> SysResult<Result<Transfer<'_>, usize>> {
    let pos_guard = offset.is_none().then(|| file.pos.lock());
    let pos = offset.unwrap_or_else(|| pos_guard.as_deref().copied().unwrap_or(0) as i64);
    if pos.checked_add(len as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    let inode = file.inode();
    let data = match inode.file_type() {
        S_IFDIR => return Err(Errno::EISDIR),
        S_IFREG => inode.file_data().ok_or(Errno::EINVAL)?,
        _ => return Err(Errno::EINVAL),
    };
    Ok(Ok(Transfer {
        pos_guard,
        pos: pos as u64,
        data,
    }))
}

/// What a call's RWF_* flags ask (kiocb_set_rw_flags).
#[derive(Default)]
struct RwFlags {
    /// RWF_NOWAIT: a pipe or socket does not wait.
    nowait: bool,
    /// RWF_APPEND / RWF_NOAPPEND: this call appends, or does not.
    append: Option<bool>,
    /// RWF_DSYNC / RWF_SYNC.
    sync: bool,
}

/// kiocb_set_rw_flags' checks, in its order: flags Linux does not know
/// (EOPNOTSUPP), RWF_APPEND with RWF_NOAPPEND (EINVAL), RWF_NOWAIT on a
/// file that cannot honour it (EOPNOTSUPP), RWF_ATOMIC (no file here can write
/// atomically: EOPNOTSUPP, as tmpfs), RWF_DONTCACHE (tmpfs has no such
/// support: EOPNOTSUPP). An eventfd's write is a plain `write`
/// (do_loop_readv_writev), which takes no flag but RWF_HIPRI.
fn rw_flags(file: &OpenFile, flags: i32, write: bool) -> SysResult<RwFlags> {
    if flags == 0 {
        return Ok(RwFlags::default());
    }
    if write && file.fmode & crate::file::FMODE_EVENTFD != 0 && flags & !RWF_HIPRI != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 {
        return Err(Errno::EINVAL);
    }
    // FMODE_NOWAIT: pipes, sockets and eventfds have it; tmpfs files and
    // directories do not.
    if flags & RWF_NOWAIT != 0 && file.fmode & FMODE_STREAMS == 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_ATOMIC != 0 || flags & RWF_DONTCACHE != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let append = if flags & RWF_APPEND != 0 {
        Some(true)
    } else if flags & RWF_NOAPPEND != 0 {
        Some(false)
    } else {
        None
    };
    Ok(RwFlags {
        nowait: flags & RWF_NOWAIT != 0,
        append,
        sync: flags & (RWF_DSYNC | RWF_SYNC) != 0,
    })
}
