//! splice(2), tee(2), vmsplice(2) and sendfile(2): Linux's checks in its
//! order (fs/splice.c's do_splice, do_tee and vmsplice, fs/read_write.c's
//! do_sendfile), and the transfers between a pipe and a regular file, a
//! socket or the caller's memory (the pipe side is `anon/splice.rs`).
//!
//! Which files take part, as Linux's splice_read and splice_write methods
//! decide: regular files (tmpfs, memfd, passthrough) and sockets both
//! ways, pipes and FIFOs as the pipe end; eventfds, epolls and directories
//! not at all (EINVAL). Only files that are not streams have offsets
//! (FMODE_PREAD, FMODE_PWRITE, FMODE_LSEEK).
//!
//! Waiting, as Linux decides it: the pipe end waits unless
//! SPLICE_F_NONBLOCK is given or (splice, tee) the pipe's file, or for
//! pipe to pipe either file, has O_NONBLOCK; sendfile's pipe waits unless
//! the pipe's file has O_NONBLOCK. A socket read into a pipe waits unless
//! it has O_NONBLOCK or the pipe end does not wait; a socket written from
//! a pipe or by sendfile waits unless it has O_NONBLOCK. A socket is read
//! and written under the pipe's lock without waiting; a wait for it
//! happens with no lock held (`wait_ready`), then the transfer goes on.
//! Nothing here raises SIGPIPE (there are no signals): EPIPE is returned.
//!
//! Positions: a regular file's offset (given, or its file position) moves
//! by what was transferred; like Linux, the file position is read and
//! written back without being held across the transfer.

use super::Process;
use crate::abi::*;
use crate::anon::pipe::Pipe;
use crate::anon::scatter::Scatter;
use crate::anon::splice::{page_chunks, slots_bytes, user_pages, SEND_BUFS};
use crate::anon::wait::{Patience, Poller};
use crate::anon::{file_poll, file_unregister, stream, Stream};
use crate::file::{OpenFile, FMODE_READ, FMODE_STREAMS, FMODE_WRITE};
use std::sync::Arc;

/// Linux's MAX_RW_COUNT: INT_MAX rounded down to a page.
const MAX_RW_COUNT: usize = i32::MAX as usize & !4095;

/// Buffers in sendfile's internal pipe (a default pipe's 16 slots): each
/// round reads at most this many pages before writing them.
const DIRECT_SLOTS: usize = 16;

/// What a file is to splice.
enum End<'a> {
    Pipe(&'a Pipe),
    Regular,
    Socket,
    /// No splice_read nor splice_write: eventfds, epolls, directories.
    Unsupported,
}

fn end_of(file: &OpenFile) -> End<'_> {
    match stream(file) {
        Some(Stream::Pipe(p)) => End::Pipe(p),
        Some(Stream::Socket(_)) => End::Socket,
        Some(_) => End::Unsupported,
        None if file.inode().file_type() == S_IFREG => End::Regular,
        None => End::Unsupported,
    }
}

fn pipe_of(file: &OpenFile) -> Option<&Pipe> {
    match end_of(file) {
        End::Pipe(p) => Some(p),
        _ => None,
    }
}

fn nonblock(file: &OpenFile) -> bool {
    file.status() & O_NONBLOCK != 0
}

/// FMODE_PREAD / FMODE_PWRITE: files opened by path that are not pipes
/// (a FIFO is `stream_open`ed).
fn has_offset(file: &OpenFile) -> bool {
    file.fmode & FMODE_STREAMS == 0
}

/// FMODE_LSEEK (an llseek method, even a no-op one): all but pipes and
/// sockets. sendfile to a file that is not a pipe asks it of its input.
fn has_lseek(file: &OpenFile) -> bool {
    file.fmode & (crate::file::FMODE_PIPE | crate::file::FMODE_SOCKET) == 0
}

/// rw_verify_area's range checks: a count that is negative as ssize_t, a
/// negative offset, or an end past the largest offset.
fn verify_area(pos: i64, count: usize) -> SysResult<()> {
    if count > isize::MAX as usize || pos < 0 || pos.checked_add(count as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Sleeps, holding no lock, until `file` reports one of `events` (or an
/// error or a hang-up). The registration comes before the look, so a
/// change between the two still wakes it.
fn wait_ready(file: &OpenFile, events: i16) {
    let p = Arc::new(Poller::default());
    while file_poll(file, Some(&p)) & (events | POLLERR | POLLHUP) == 0 {
        p.wait(None);
    }
    file_unregister(file, &p);
}

/// The starting offset of a transfer: the given one, else (for a file that
/// has one) the file position.
fn start_of(file: &OpenFile, given: &Option<&mut i64>) -> i64 {
    match given {
        Some(o) => **o,
        None if has_offset(file) => *file.pos.lock() as i64,
        None => 0,
    }
}

/// Stores where a transfer ended: in the given offset, else in the file
/// position of a file that has one.
fn store_end(file: &OpenFile, given: Option<&mut i64>, end: i64) {
    match given {
        Some(o) => *o = end,
        None if has_offset(file) => *file.pos.lock() = end as u64,
        None => {}
    }
}

impl Process {
    /// Both descriptors' files (EBADF for either, `a`'s first), for `f`.
    pub(super) fn with_two_files<R>(
        &self,
        a: Fd,
        b: Fd,
        f: impl FnOnce(&OpenFile, &OpenFile) -> SysResult<R>,
    ) -> SysResult<R> {
        let fa = self.fd_file_nopath(a)?;
        let fb = match self.fd_file_nopath(b) {
            Ok(fb) => fb,
            Err(e) => {
                self.vfs.fput(fa);
                return Err(e);
            }
        };
        let r = f(fa.file(), fb.file());
        self.vfs.fput(fa);
        self.vfs.fput(fb);
        r
    }

    pub(crate) fn sys_splice(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        if len == 0 {
            return Ok(0);
        }
        if flags & !SPLICE_F_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        self.with_two_files(fd_in, fd_out, |i, o| {
            self.notify_moved(self.splice_files(i, off_in, o, off_out, len, flags), i, o)
        })
    }

    /// __do_splice and do_splice.
    fn splice_files(
        &self,
        i: &OpenFile,
        off_in: Option<&mut i64>,
        o: &OpenFile,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        let (ipipe, opipe) = (pipe_of(i), pipe_of(o));
        if ipipe.is_some() && off_in.is_some() || opipe.is_some() && off_out.is_some() {
            return Err(Errno::ESPIPE);
        }
        if i.fmode & FMODE_READ == 0 || o.fmode & FMODE_WRITE == 0 {
            return Err(Errno::EBADF);
        }
        let nonblock_flag = flags & SPLICE_F_NONBLOCK != 0;
        match (ipipe, opipe) {
            (Some(a), Some(b)) => {
                if a.is(b) {
                    return Err(Errno::EINVAL);
                }
                a.splice_to_pipe(b, len, nonblock_flag || nonblock(i) || nonblock(o))
            }
            (Some(pipe), None) => {
                if off_out.is_some() && !has_offset(o) || o.status() & O_APPEND != 0 {
                    return Err(Errno::EINVAL);
                }
                let start = start_of(o, &off_out);
                verify_area(start, len)?;
                let mut end = start;
                let r = self.drain_pipe(pipe, o, &mut end, len, nonblock_flag || nonblock(i));
                store_end(o, off_out, end);
                r
            }
            (None, Some(pipe)) => {
                if off_in.is_some() && !has_offset(i) {
                    return Err(Errno::EINVAL);
                }
                let start = start_of(i, &off_in);
                verify_area(start, len)?;
                let nb = nonblock_flag || nonblock(o);
                let r = self.fill_pipe(i, pipe, start, len, nb);
                store_end(i, off_in, start + *r.as_ref().unwrap_or(&0) as i64);
                r
            }
            (None, None) => Err(Errno::EINVAL),
        }
    }

    /// splice_file_to_pipe: from a regular file at `pos`, or from a
    /// socket, into `pipe` (after waiting for room: EPIPE without a
    /// reader, EAGAIN when full and `nonblock`).
    fn fill_pipe(
        &self,
        src: &OpenFile,
        pipe: &Pipe,
        pos: i64,
        len: usize,
        nonblock: bool,
    ) -> SysResult<usize> {
        let len = len.min(MAX_RW_COUNT);
        let patience = Patience::of(nonblock);
        if len == 0 {
            // do_splice_read answers 0 before it asks for a splice_read.
            return pipe.splice_in(patience, |_| Ok(Vec::new()));
        }
        match end_of(src) {
            End::Regular => {
                // Page-cache reads split at the file's pages; an O_DIRECT
                // file is copied page by page from its first byte.
                let aligned = src.status() & O_DIRECT == 0;
                pipe.splice_in(patience, |slots| {
                    let mut buf = vec![0u8; len.min(slots_bytes(slots, pos as u64, aligned))];
                    let n = self.read_file(src, &mut [&mut buf], Some(pos))?;
                    buf.truncate(n);
                    Ok(page_chunks(buf, pos as u64, aligned))
                })
            }
            End::Socket => loop {
                let mut empty = false;
                let r = pipe.splice_in(patience, |slots| {
                    let mut buf = vec![0u8; len.min(slots_bytes(slots, 0, false))];
                    match self.read_special(src, &mut [&mut buf], true) {
                        Ok(n) => {
                            buf.truncate(n);
                            Ok(page_chunks(buf, 0, false))
                        }
                        Err(e) => {
                            empty = e == Errno::EAGAIN;
                            Err(e)
                        }
                    }
                });
                if !(empty && !nonblock && !self::nonblock(src)) {
                    return r;
                }
                wait_ready(src, POLLIN);
            },
            // No splice_read: found only once the pipe has room.
            End::Pipe(_) | End::Unsupported => pipe.splice_in(patience, |_| Err(Errno::EINVAL)),
        }
    }

    /// The splice_write of `sink` (a regular file written from `*pos`, which
    /// moves, or a socket): takes up to `len` bytes out of `pipe`, waiting
    /// for them unless `nonblock`.
    fn drain_pipe(
        &self,
        pipe: &Pipe,
        sink: &OpenFile,
        pos: &mut i64,
        len: usize,
        nonblock: bool,
    ) -> SysResult<usize> {
        match end_of(sink) {
            End::Regular => pipe.splice_out(Patience::of(nonblock), len, usize::MAX, |bytes| {
                let n = self.write_file(sink, &[bytes], Some(*pos), Some(false))?;
                *pos += n as i64;
                Ok(n)
            }),
            End::Socket => {
                // splice_to_socket: each round sends what up to 16 buffers
                // hold; a socket that waits takes all of it, so a short
                // send is waited out and the transfer goes on while the
                // pipe has bytes (without waiting for more once some
                // went).
                let sink_waits = !self::nonblock(sink);
                let mut total = 0;
                loop {
                    let mut full = false;
                    let patience = if total > 0 {
                        Patience::Never
                    } else {
                        Patience::of(nonblock)
                    };
                    let r = pipe.splice_out(patience, len - total, SEND_BUFS, |bytes| {
                        let r = self.write_special(sink, &[bytes], true);
                        full = match &r {
                            Ok(n) => *n < bytes.len(),
                            Err(e) => *e == Errno::EAGAIN,
                        };
                        r
                    });
                    match r {
                        Ok(n) => total += n,
                        Err(e) if total == 0 && !(full && sink_waits) => return Err(e),
                        Err(_) => {}
                    }
                    if !(full && sink_waits) || total == len {
                        return Ok(total);
                    }
                    wait_ready(sink, POLLOUT);
                }
            }
            End::Pipe(_) | End::Unsupported => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_vmsplice(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        flags: u32,
    ) -> SysResult<usize> {
        if flags & !SPLICE_F_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let f = self.fd_file_nopath(fd)?;
        let r = (|| {
            let file = f.file();
            // The direction is the file's: writable means into the pipe.
            let into_pipe = file.fmode & FMODE_WRITE != 0;
            if !into_pipe && file.fmode & FMODE_READ == 0 {
                return Err(Errno::EBADF);
            }
            if bufs.len() > super::io::UIO_MAXIOV {
                return Err(Errno::EINVAL);
            }
            let total = bufs
                .iter()
                .map(|b| b.len())
                .sum::<usize>()
                .min(MAX_RW_COUNT);
            if total == 0 {
                return Ok(0);
            }
            let pipe = pipe_of(file).ok_or(Errno::EBADF)?;
            let patience = Patience::of(flags & SPLICE_F_NONBLOCK != 0);
            if into_pipe {
                pipe.splice_in(patience, |slots| Ok(user_pages(bufs, total, slots)))
            } else {
                let mut out = Scatter::new(bufs);
                pipe.splice_out(patience, total, usize::MAX, |bytes| Ok(out.put(bytes)))
            }
        })();
        self.vfs.fput(f);
        r
    }

    pub(crate) fn sys_tee(
        &self,
        fd_in: Fd,
        fd_out: Fd,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        if flags & !SPLICE_F_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        self.with_two_files(fd_in, fd_out, |i, o| {
            if i.fmode & FMODE_READ == 0 || o.fmode & FMODE_WRITE == 0 {
                return Err(Errno::EBADF);
            }
            match (pipe_of(i), pipe_of(o)) {
                (Some(a), Some(b)) if !a.is(b) => {
                    let nb = flags & SPLICE_F_NONBLOCK != 0 || nonblock(i) || nonblock(o);
                    a.tee_to(b, len, nb)
                }
                _ => Err(Errno::EINVAL),
            }
        })
    }

    pub(crate) fn sys_sendfile(
        &self,
        out_fd: Fd,
        in_fd: Fd,
        offset: Option<&mut i64>,
        count: usize,
    ) -> SysResult<usize> {
        // do_sendfile's order: the input (EBADF), its offset (ESPIPE) and
        // range, then the output.
        let fin = self.readable(in_fd)?;
        let r = (|| {
            let i = fin.file();
            if offset.is_some() && !has_offset(i) {
                return Err(Errno::ESPIPE);
            }
            let start = start_of(i, &offset);
            verify_area(start, count)?;
            let count = count.min(MAX_RW_COUNT);
            let fout = self.writable(out_fd)?;
            let o = fout.file();
            let r = match pipe_of(o) {
                Some(pipe) => self.fill_pipe(i, pipe, start, count, nonblock(o)),
                None => self.send_direct(i, start, o, count),
            };
            if let Ok(n @ 1..) = r {
                store_end(i, offset, start + n as i64);
            }
            let r = self.notify_moved(r, i, o);
            self.vfs.fput(fout);
            r
        })();
        self.vfs.fput(fin);
        r
    }

    /// The events of a call that moved bytes from `i` to `o` (its result
    /// `r`, passed on): IN_ACCESS, then IN_MODIFY, if any moved.
    pub(super) fn notify_moved(
        &self,
        r: SysResult<usize>,
        i: &OpenFile,
        o: &OpenFile,
    ) -> SysResult<usize> {
        if r.as_ref().is_ok_and(|&n| n > 0) {
            self.vfs.notify_file(i, IN_ACCESS);
            self.vfs.notify_file(o, IN_MODIFY);
        }
        r
    }

    /// do_splice_direct: from a regular file at `pos` to a file that is not
    /// a pipe, a round of at most 16 pages at a time (Linux's internal
    /// pipe), each written whole before the next is read. The output's
    /// position moves by what was written.
    fn send_direct(
        &self,
        i: &OpenFile,
        mut pos: i64,
        o: &OpenFile,
        count: usize,
    ) -> SysResult<usize> {
        let mut out_pos = start_of(o, &None);
        verify_area(out_pos, count)?;
        if o.status() & O_APPEND != 0 || !has_lseek(i) {
            return Err(Errno::EINVAL);
        }
        let aligned = i.status() & O_DIRECT == 0;
        let mut done = 0;
        let mut failed = None;
        while done < count {
            let want = (count - done).min(slots_bytes(DIRECT_SLOTS, pos as u64, aligned));
            let mut buf = vec![0u8; want];
            let read = match end_of(i) {
                End::Regular => self.read_file(i, &mut [&mut buf], Some(pos)),
                _ => Err(Errno::EINVAL),
            };
            let n = match read {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let wrote = match end_of(o) {
                End::Regular => self.write_file(o, &[&buf[..n]], Some(out_pos), Some(false)),
                // A socket that waits takes the whole round.
                End::Socket => self.write_special(o, &[&buf[..n]], false),
                _ => Err(Errno::EINVAL),
            };
            match wrote {
                Ok(w) => {
                    done += w;
                    pos += w as i64;
                    out_pos += w as i64;
                    if w < n {
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if done > 0 {
            store_end(o, None, out_pos);
            return Ok(done);
        }
        failed.map_or(Ok(0), Err)
    }
}
