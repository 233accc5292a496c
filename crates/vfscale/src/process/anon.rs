//! Anonymous objects at the process level: pipe2, socket, socketpair,
//! shutdown, eventfd, memfd_create, poll, fcntl and fd_path, and the
//! read/write dispatch for files whose data is a pipe, socket or eventfd
//! (`FMODE_STREAMS`; regular files never come here).
//!
//! Creating an object allocates its node (anon/mod.rs) and files, then
//! installs the descriptors; if an install fails (EMFILE) every file made
//! so far is put again, so nothing leaks and the counters return to zero.

use super::Process;
use crate::abi::*;
use crate::anon::epoll::Epoll;
use crate::anon::eventfd::EventFd;
use crate::anon::pipe::Pipe;
use crate::anon::scatter::Scatter;
use crate::anon::socket::Socket;
use crate::anon::wait::{Patience, Poller};
use crate::anon::{anon_fd_path, stream, AnonInode, AnonObj, Stream};
use crate::dcache::walk::PathPtr;
use crate::file::*;
use crate::fs::tmpfs::data::FileData;
use crate::inode::flags::MODE_APPEND;
use crate::inode::InodeBody;
use crate::sync::atomic::Ordering;
use crate::sync::lock::RwLock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What an anonymous object charges at most: its node (a dentry and an
/// inode) and two open files (a pipe's ends).
pub(super) const ANON_BYTES: u64 = (crate::reclaim::KIND_BYTES[0]
    + crate::reclaim::KIND_BYTES[1]
    + 2 * crate::reclaim::KIND_BYTES[2]) as u64;

/// What one socket charges: its node and its file.
pub(super) const SOCKET_BYTES: u64 = (crate::reclaim::KIND_BYTES[0]
    + crate::reclaim::KIND_BYTES[1]
    + crate::reclaim::KIND_BYTES[2]) as u64;

pub(super) fn nonblock(file: &OpenFile) -> bool {
    file.status() & O_NONBLOCK != 0
}

/// socket()/socketpair() arguments: (type, nonblock, cloexec).
fn socket_args(domain: i32, ty: i32, protocol: i32) -> SysResult<(i32, bool, bool)> {
    if ty & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if protocol != 0 && protocol != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let base = match ty & SOCK_TYPE_MASK {
        // unix_create: "SOCK_RAW is the same as SOCK_DGRAM".
        SOCK_RAW => SOCK_DGRAM,
        b @ (SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET) => b,
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    Ok((base, ty & SOCK_NONBLOCK != 0, ty & SOCK_CLOEXEC != 0))
}

impl Process {
    /// A read of a pipe, socket or eventfd; `nowait` (RWF_NOWAIT) makes
    /// it non-blocking whatever the file's status.
    pub(crate) fn read_special(
        &self,
        file: &OpenFile,
        bufs: &mut [&mut [u8]],
        nowait: bool,
    ) -> SysResult<usize> {
        let nb = nonblock(file) || nowait;
        match stream(file) {
            Some(Stream::Pipe(p)) => p.read(bufs, nb),
            // sock_read_iter: a zero-length read is 0 ("SYS5 behaviour"),
            // before the socket is looked at.
            Some(Stream::Socket(_)) if bufs.iter().all(|b| b.is_empty()) => Ok(0),
            Some(Stream::Socket(s)) => {
                // Files the message carried are dropped (no control
                // buffer), as read(2) on Linux.
                let r = s.recv(bufs, 0, nb)?;
                self.vfs.fput_many(r.files);
                Ok(r.len)
            }
            // eventfd's read_iter: the 8-byte counter across the segments.
            Some(Stream::EventFd(e)) => {
                let mut value = [0u8; 8];
                if bufs.iter().map(|b| b.len()).sum::<usize>() < value.len() {
                    return Err(Errno::EINVAL);
                }
                let n = e.read(&mut value, nb)?;
                Scatter::new(bufs).put(&value[..n]);
                Ok(n)
            }
            Some(Stream::Inotify(i)) => i.read(bufs, nb),
            // fscontext_read: the messages its configuration logged.
            Some(Stream::MountConfig) => {
                // SAFETY: the stream is a configuration's, and the caller
                // holds a reference on the file.
                unsafe { crate::mount::config::MountConfig::of_file(file) }.read_messages(bufs)
            }
            // An epoll file has no read operation.
            Some(Stream::Epoll(_)) | None => Err(Errno::EINVAL),
        }
    }

    /// A write to a pipe, socket or eventfd; `nowait` as for reads.
    pub(crate) fn write_special(
        &self,
        file: &OpenFile,
        bufs: &[&[u8]],
        nowait: bool,
    ) -> SysResult<usize> {
        let nb = nonblock(file) || nowait;
        match stream(file) {
            Some(Stream::Pipe(p)) => p.write(bufs, nb, file.status() & O_DIRECT != 0),
            Some(Stream::Socket(s)) => {
                // write(2) is a sendmsg with nothing but data
                // (sock_write_iter): a socket with SO_PASSCRED autobinds,
                // after seqpacket's own checks.
                if s.passcred() {
                    s.seqpacket_send_precheck()?;
                    self.autobind_to_pass_creds(s, true)?;
                }
                let mut orphans = Vec::new();
                let r = s.write(bufs, nb, self.send_creds(None), &mut orphans);
                self.vfs.fput_many(orphans);
                r
            }
            // eventfd has a plain write: a vector is written segment by
            // segment (do_loop_readv_writev), each exactly 8 bytes, empty
            // ones after the first skipped, stopping at an error or a short
            // write.
            Some(Stream::EventFd(e)) => {
                let mut done = 0;
                for (i, b) in bufs.iter().enumerate() {
                    if i > 0 && b.is_empty() {
                        continue;
                    }
                    match e.write(b, nb) {
                        Ok(n) => {
                            done += n;
                            if n != b.len() {
                                break;
                            }
                        }
                        Err(err) if done == 0 => return Err(err),
                        Err(_) => break,
                    }
                }
                Ok(done)
            }
            Some(Stream::Epoll(_) | Stream::Inotify(_) | Stream::MountConfig) | None => {
                Err(Errno::EINVAL)
            }
        }
    }

    fn owner(&self) -> u64 {
        (u64::from(self.cred.fsuid) << 32) | u64::from(self.cred.fsgid)
    }

    /// Installs `files` as consecutive lowest free descriptors, or none.
    pub(super) fn install_all<const N: usize>(
        &self,
        files: [FileRef; N],
        cloexec: bool,
    ) -> SysResult<[Fd; N]> {
        let mut fds = [-1; N];
        let mut err = None;
        for (i, f) in files.into_iter().enumerate() {
            if err.is_some() {
                self.vfs.fput(f);
                continue;
            }
            match self.files.install(f, cloexec, 0) {
                Ok(fd) => fds[i] = fd,
                Err((e, f)) => {
                    self.vfs.fput(f);
                    err = Some(e);
                }
            }
        }
        if let Some(e) = err {
            for &fd in fds.iter().filter(|&&fd| fd >= 0) {
                if let Ok(f) = self.files.remove(fd) {
                    self.vfs.fput(f);
                }
            }
            return Err(e);
        }
        Ok(fds)
    }

    /// A file on anonymous node `node` (whose reference it takes over).
    fn anon_file(
        &self,
        node: *const AnonInode,
        fmode: u32,
        status: i32,
        private: *const (),
    ) -> FileRef {
        // SAFETY: we hold a reference on the node.
        let n = unsafe { &*node };
        self.vfs.alloc_file(
            self.vfs.anon().mnt,
            &n.dentry,
            &n.inode,
            fmode | FMODE_ANON,
            status,
            Arc::as_ptr(&self.cred) as usize,
            private,
        )
    }

    /// pipe2(2): [read end, write end]. Flags: O_NONBLOCK, O_CLOEXEC,
    /// O_DIRECT (packet mode: on the write end only, as create_pipe_files
    /// sets it).
    pub fn pipe2(&self, flags: i32) -> SysResult<[Fd; 2]> {
        // Frees what the call queued (a final put on an error path, or
        // after a racing close) when it returns.
        let _end = self.vfs.call_end();
        self.charge_here();
        if flags & !(O_NONBLOCK | O_CLOEXEC | O_DIRECT) != 0 {
            return Err(Errno::EINVAL);
        }
        // Its node and files are charged to our group: make room first.
        self.vfs.admit(ANON_BYTES, Errno::ENOMEM)?;
        let v = &self.vfs;
        let node = v.new_anon_node(
            v.anon().mnt,
            S_IFIFO | 0o600,
            InodeBody::Special(0),
            AnonObj::Pipe(Pipe::with_both_ends()),
            b"",
            2,
            self.owner(),
        );
        v.count_anon_node();
        // SAFETY: we hold the node's two references.
        let AnonObj::Pipe(pipe) = &unsafe { &*node }.obj else {
            unreachable!("made as a pipe above")
        };
        let private = pipe as *const Pipe as *const ();
        let nb = flags & O_NONBLOCK;
        let r = self.anon_file(node, FMODE_READ | FMODE_PIPE, O_RDONLY | nb, private);
        let packet = flags & O_DIRECT;
        let w = self.anon_file(
            node,
            FMODE_WRITE | FMODE_PIPE,
            O_WRONLY | nb | packet,
            private,
        );
        self.install_all([r, w], flags & O_CLOEXEC != 0)
    }

    pub fn pipe(&self) -> SysResult<[Fd; 2]> {
        self.pipe2(0)
    }

    pub(super) fn socket_file(&self, sock: Socket, nb: bool) -> FileRef {
        self.charge_here();
        let v = &self.vfs;
        let node = v.new_anon_node(
            v.anon().mnt,
            S_IFSOCK | 0o777,
            InodeBody::Special(0),
            AnonObj::Socket(sock),
            b"",
            1,
            self.owner(),
        );
        v.count_anon_node();
        // SAFETY: we hold the node's reference.
        let AnonObj::Socket(s) = &unsafe { &*node }.obj else {
            unreachable!("made as a socket above")
        };
        let status = O_RDWR | if nb { O_NONBLOCK } else { 0 };
        self.anon_file(
            node,
            FMODE_READ | FMODE_WRITE | FMODE_SOCKET,
            status,
            s as *const Socket as *const (),
        )
    }

    /// socket(2): an unconnected AF_UNIX socket (`sockets.rs` binds,
    /// connects and listens).
    pub fn socket(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        let (base, nb, cloexec) = socket_args(domain, ty, protocol)?;
        // Its node and file are charged to our group: make room first.
        self.charge_here();
        self.vfs.admit(SOCKET_BYTES, Errno::ENOMEM)?;
        let f = self.socket_file(Socket::unconnected(base), nb);
        Ok(self.install_all([f], cloexec)?[0])
    }

    /// socketpair(2): two connected AF_UNIX sockets.
    pub fn socketpair(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<[Fd; 2]> {
        let _end = self.vfs.call_end();
        let (base, nb, cloexec) = match socket_args(domain, ty, protocol) {
            // Linux makes the Internet socket, whose family cannot pair.
            Err(Errno::EAFNOSUPPORT)
                if matches!(domain, AF_INET | AF_INET6)
                    && matches!(ty & SOCK_TYPE_MASK, SOCK_STREAM | SOCK_DGRAM)
                    && protocol == 0 =>
            {
                return Err(Errno::EOPNOTSUPP)
            }
            r => r?,
        };
        // Two nodes and two files: make room for both first.
        self.charge_here();
        self.vfs.admit(2 * SOCKET_BYTES, Errno::ENOMEM)?;
        let (a, b) = Socket::pair(base, self.as_peer());
        let fa = self.socket_file(a, nb);
        let fb = self.socket_file(b, nb);
        self.install_all([fa, fb], cloexec)
    }

    /// ioctl(FIONREAD): the bytes a read would find — a regular file's size
    /// less the file position (negative past the end, as Linux), a pipe's
    /// queued bytes, a socket's (`Socket::inq`); ENOTTY for anything else.
    pub fn fionread(&self, fd: Fd) -> SysResult<i32> {
        let _end = self.vfs.call_end();
        self.with_file(fd, false, |f| match stream(f) {
            Some(Stream::Pipe(p)) => Ok(p.queued() as i32),
            Some(Stream::Socket(s)) => s.inq().map(|n| n as i32),
            Some(Stream::EventFd(_) | Stream::MountConfig) => Err(Errno::ENOTTY),
            // ep_eventpoll_ioctl answers EINVAL to what it does not know.
            Some(Stream::Epoll(_)) => Err(Errno::EINVAL),
            Some(Stream::Inotify(i)) => Ok(i.queued_bytes() as i32),
            None if f.inode().file_type() == S_IFREG => {
                let size = f.inode().attr().size as i64;
                Ok((size - *f.pos.lock() as i64) as i32)
            }
            None => Err(Errno::ENOTTY),
        })
    }

    /// shutdown(2).
    pub fn shutdown(&self, fd: Fd, how: i32) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_file(fd, false, |f| match stream(f) {
            Some(Stream::Socket(s)) => s.shutdown(how),
            _ => Err(Errno::ENOTSOCK),
        })
    }

    /// A file on the namespace's one shared anonymous inode (an eventfd,
    /// epoll or inotify instance: `fmode`'s kind bit), whose object is
    /// `private`. The caller admitted its charge (`ANON_BYTES`).
    pub(super) fn shared_anon_file(&self, fmode: u32, status: i32, private: *const ()) -> FileRef {
        let a = self.vfs.anon();
        // SAFETY: the shared anonymous node lives as long as the namespace.
        let n = unsafe { &*a.eventfd_node };
        self.vfs.alloc_file(
            a.mnt,
            &n.dentry,
            &n.inode,
            fmode,
            status,
            Arc::as_ptr(&self.cred) as usize,
            private,
        )
    }

    /// eventfd2(2). Flags: EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC.
    pub fn eventfd(&self, initval: u32, flags: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        self.charge_here();
        if flags & !(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        // Its node and files are charged to our group: make room first.
        self.vfs.admit(ANON_BYTES, Errno::ENOMEM)?;
        let e = crate::mem::slab::alloc(EventFd::new(initval, flags & EFD_SEMAPHORE != 0));
        let f = self.shared_anon_file(
            FMODE_READ | FMODE_WRITE | FMODE_EVENTFD,
            O_RDWR | (flags & EFD_NONBLOCK),
            e as *const (),
        );
        Ok(self.install_all([f], flags & EFD_CLOEXEC != 0)?[0])
    }

    /// epoll_create1(2): EPOLL_CLOEXEC. The file is on the shared
    /// anonymous inode, as an eventfd's (`anon_inode:[eventpoll]`).
    pub fn epoll_create1(&self, flags: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        self.charge_here();
        if flags & !EPOLL_CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        self.vfs.admit(ANON_BYTES, Errno::ENOMEM)?;
        let ep = Epoll::new();
        let raw = Arc::into_raw(ep.clone());
        let f = self.shared_anon_file(
            FMODE_READ | FMODE_WRITE | FMODE_EPOLL,
            O_RDWR,
            raw as *const (),
        );
        ep.set_file(f.0);
        Ok(self.install_all([f], flags & EPOLL_CLOEXEC != 0)?[0])
    }

    /// epoll_ctl(2): EPOLL_CTL_ADD, EPOLL_CTL_MOD (with `event`) and
    /// EPOLL_CTL_DEL. `event` None for ADD or MOD is EFAULT (a null
    /// pointer). Only pipes, sockets, eventfds and epolls can be watched
    /// (EPERM for regular files and directories, as Linux's tmpfs).
    pub fn epoll_ctl(&self, epfd: Fd, op: i32, fd: Fd, event: Option<EpollEvent>) -> SysResult<()> {
        let _end = self.vfs.call_end();
        if op != EPOLL_CTL_DEL && event.is_none() {
            return Err(Errno::EFAULT);
        }
        let ef = self.fd_file_nopath(epfd)?;
        let tf = match self.fd_file_nopath(fd) {
            Ok(t) => t,
            Err(e) => {
                self.vfs.fput(ef);
                return Err(e);
            }
        };
        let event = if op == EPOLL_CTL_DEL { None } else { event };
        let r = if !crate::anon::pollable(tf.file()) {
            Err(Errno::EPERM)
        } else {
            match crate::anon::epoll_of(ef.file()) {
                // CAP_BLOCK_SUSPEND for EPOLLWAKEUP: root here.
                Some(ep) => ep.ctl(ef.file(), op, tf.file(), fd, event, self.cred.is_root()),
                None => Err(Errno::EINVAL),
            }
        };
        self.vfs.fput(tf);
        self.vfs.fput(ef);
        r
    }

    /// epoll_wait(2): up to `events.len()` ready items (EBADF for a bad
    /// descriptor, then EINVAL for no room, more than EP_MAX_EVENTS or
    /// not an epoll); `timeout_ms` < 0 waits for one, 0 not at all.
    pub fn epoll_wait(
        &self,
        epfd: Fd,
        events: &mut [EpollEvent],
        timeout_ms: i32,
    ) -> SysResult<usize> {
        let _end = self.vfs.call_end();
        // 6.18's order: the descriptor, then the count and the kind.
        let f = self.fd_file_nopath(epfd)?;
        let r = match crate::anon::epoll_of(f.file()) {
            _ if events.is_empty() || events.len() > EP_MAX_EVENTS => Err(Errno::EINVAL),
            Some(ep) => {
                let patience = match timeout_ms {
                    0 => Patience::Never,
                    t if t < 0 => Patience::Forever,
                    t => Patience::Until(Instant::now() + Duration::from_millis(t as u64)),
                };
                Ok(ep.wait(events, patience))
            }
            None => Err(Errno::EINVAL),
        };
        self.vfs.fput(f);
        r
    }

    /// memfd_create(2): an anonymous regular file (tmpfs file data).
    /// Flags: MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_NOEXEC_SEAL, MFD_EXEC
    /// (seals: anon/memfd.rs).
    pub fn memfd_create(&self, name: &[u8], flags: u32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        self.charge_here();
        // sanitize_flags: known flags (MFD_HUGETLB is not built), and not
        // both exec choices.
        if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0
            || flags & (MFD_NOEXEC_SEAL | MFD_EXEC) == MFD_NOEXEC_SEAL | MFD_EXEC
        {
            return Err(Errno::EINVAL);
        }
        // Its node and files are charged to our group: make room first.
        self.vfs.admit(ANON_BYTES, Errno::ENOMEM)?;
        if name.len() > MFD_NAME_MAX || name.contains(&0) {
            return Err(Errno::EINVAL);
        }
        // "memfd:NAME" on the stack: a heap buffer here was the one
        // allocation a memfd churn made besides the node, and under a
        // shared-heap allocator it shared a line with the other thread's
        // memory (scripts/anon_shared_lines.py, docs/PERFORMANCE.md).
        const PREFIX: &[u8] = b"memfd:";
        let mut buf = [0u8; PREFIX.len() + MFD_NAME_MAX];
        buf[..PREFIX.len()].copy_from_slice(PREFIX);
        buf[PREFIX.len()..PREFIX.len() + name.len()].copy_from_slice(name);
        let full = &buf[..PREFIX.len() + name.len()];
        // Sealable only if asked; MFD_NOEXEC_SEAL seals exec (and leaves
        // the set open), as memfd_create.
        let noexec = flags & MFD_NOEXEC_SEAL != 0;
        let seals = if noexec {
            F_SEAL_EXEC
        } else if flags & MFD_ALLOW_SEALING != 0 {
            0
        } else {
            F_SEAL_SEAL
        };
        let v = &self.vfs;
        let node = v.new_anon_node(
            v.anon().mnt,
            S_IFREG | if noexec { 0o666 } else { 0o777 },
            InodeBody::Regular(RwLock::new(FileData::default())),
            AnonObj::Memfd(crate::sync::atomic::AtomicU32::new(seals)),
            full,
            1,
            self.owner(),
        );
        v.count_anon_node();
        // SAFETY: we hold the node's reference.
        let n = unsafe { &*node };
        // Linux's memfd inode is unlinked from birth.
        n.inode.update_attr(|a| a.set_nlink(0));
        let f = self.anon_file(
            node,
            FMODE_READ | FMODE_WRITE,
            O_RDWR | O_LARGEFILE,
            core::ptr::null(),
        );
        Ok(self.install_all([f], flags & MFD_CLOEXEC != 0)?[0])
    }

    /// poll(2): fills each entry's `revents` and returns how many are
    /// non-zero. `timeout_ms` < 0 waits forever, 0 not at all. Sleeps on a
    /// condition variable woken by any watched object's change.
    pub fn poll(&self, fds: &mut [PollFd], timeout_ms: i32) -> SysResult<usize> {
        let _end = self.vfs.call_end();
        if fds.len() > self.fd_limit() {
            return Err(Errno::EINVAL);
        }
        let deadline =
            (timeout_ms >= 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        let files: Vec<Option<FileRef>> = fds
            .iter()
            .map(|p| {
                if p.fd < 0 {
                    None
                } else {
                    // fdget: an O_PATH descriptor is not a file here
                    // (POLLNVAL).
                    self.fd_file_nopath(p.fd).ok()
                }
            })
            .collect();
        let poller = Arc::new(Poller::default());
        let mut register = false;
        let ready = loop {
            let mut ready = 0;
            for (pfd, f) in fds.iter_mut().zip(&files) {
                pfd.revents = match f {
                    None if pfd.fd < 0 => 0,
                    None => POLLNVAL,
                    Some(f) => {
                        let m = crate::anon::file_poll(f.file(), register.then_some(&poller));
                        m & (pfd.events | POLLERR | POLLHUP)
                    }
                };
                ready += usize::from(pfd.revents != 0);
            }
            let expired = deadline.is_some_and(|d| Instant::now() >= d);
            if ready > 0 || expired || !register {
                if register {
                    for f in files.iter().flatten() {
                        crate::anon::file_unregister(f.file(), &poller);
                    }
                }
                if ready > 0 || expired {
                    break ready;
                }
                register = true;
                continue;
            }
            // Registered everywhere and nothing ready: sleep until a
            // watched object changes or the time is up, then look again
            // (a timed-out wait gets one last look without registering).
            let woken = poller.wait(deadline);
            for f in files.iter().flatten() {
                crate::anon::file_unregister(f.file(), &poller);
            }
            register = woken || deadline.is_none();
        };
        for f in files.into_iter().flatten() {
            self.vfs.fput(f);
        }
        Ok(ready)
    }

    /// fcntl(2): F_DUPFD, F_DUPFD_CLOEXEC, F_DUPFD_QUERY, F_CREATED_QUERY,
    /// F_GETFD, F_SETFD, F_GETFL, F_SETFL (O_APPEND, O_NONBLOCK, O_DIRECT,
    /// O_NOATIME), F_GETPIPE_SZ, F_SETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS,
    /// F_GET_RW_HINT (the hint is the result) and F_SET_RW_HINT (the hint
    /// is `arg`; Linux passes both through a pointer). Other commands:
    /// EINVAL.
    pub fn fcntl(&self, fd: Fd, cmd: i32, arg: i64) -> SysResult<i64> {
        let _end = self.vfs.call_end();
        // Linux's order: the descriptor (O_PATH ones included), then the
        // commands an O_PATH descriptor allows (check_fcntl_cmd), then the
        // command itself.
        let f = self.fd_file(fd)?;
        let path_only = f.file().is_path();
        self.vfs.fput(f);
        if path_only
            && !matches!(
                cmd,
                F_DUPFD
                    | F_DUPFD_CLOEXEC
                    | F_DUPFD_QUERY
                    | F_CREATED_QUERY
                    | F_GETFD
                    | F_SETFD
                    | F_GETFL
            )
        {
            return Err(Errno::EBADF);
        }
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                let f = self.fd_file(fd)?;
                if arg < 0 || arg as u64 >= self.fd_limit() as u64 {
                    self.vfs.fput(f);
                    return Err(Errno::EINVAL);
                }
                match self.files.install(f, cmd == F_DUPFD_CLOEXEC, arg as usize) {
                    Ok(n) => Ok(n as i64),
                    Err((e, f)) => {
                        self.vfs.fput(f);
                        Err(e)
                    }
                }
            }
            // f_dupfd_query: the argument is an int, any descriptor
            // (O_PATH ones too) of this table.
            F_DUPFD_QUERY => self.with_file(fd, true, |f| {
                self.with_file(arg as i32, true, |other| {
                    Ok(i64::from(core::ptr::eq(f, other)))
                })
            }),
            F_CREATED_QUERY => {
                self.with_file(fd, true, |f| Ok(i64::from(f.fmode & FMODE_CREATED != 0)))
            }
            // Any file's inode, pipes', sockets' and the shared eventfd
            // inode included (fcntl_get_rw_hint / fcntl_set_rw_hint).
            F_GET_RW_HINT => self.with_file(fd, false, |f| Ok(f.inode().write_hint() as i64)),
            F_SET_RW_HINT => self.with_file(fd, false, |f| {
                let inode = f.inode();
                self.owner_or_capable(inode)?;
                if arg as u64 > RWH_WRITE_LIFE_EXTREME {
                    return Err(Errno::EINVAL);
                }
                inode.set_write_hint(arg as u64);
                Ok(0)
            }),
            F_GETFD => Ok(if self.files.is_cloexec(fd)? {
                FD_CLOEXEC as i64
            } else {
                0
            }),
            F_SETFD => self
                .files
                .set_cloexec(fd, arg as i32 & FD_CLOEXEC != 0)
                .map(|()| 0),
            F_GETFL => self.with_file(fd, true, |f| Ok(f.status() as i64)),
            F_SETFL => self.with_file(fd, false, |f| {
                const SETTABLE: i32 = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME;
                let arg = arg as i32;
                let inode = f.inode();
                // Linux's setfl: O_APPEND stays as it is on an append-only
                // file, either way; O_NOATIME only for the owner.
                if (arg ^ f.status()) & O_APPEND != 0 && inode.perm_attr().0 & MODE_APPEND != 0 {
                    return Err(Errno::EPERM);
                }
                if arg & O_NOATIME != 0 && f.status() & O_NOATIME == 0 {
                    self.owner_or_capable(inode)?;
                }
                // O_DIRECT where direct I/O is possible: tmpfs regular files
                // opened by name (shmem_file_open sets FMODE_CAN_ODIRECT; a
                // memfd's file does not get it); on a pipe it asks for
                // packet mode.
                let ty = inode.file_type();
                if arg & O_DIRECT != 0
                    && ty != S_IFIFO
                    && (ty != S_IFREG || f.fmode & (FMODE_ANON | FMODE_SHARED_ANON) != 0)
                {
                    return Err(Errno::EINVAL);
                }
                // Relaxed: a plain flag word (see OpenFile::status); the
                // update is one atomic read-modify-write.
                let _ = f
                    .status
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                        Some(((s as i32 & !SETTABLE) | (arg & SETTABLE)) as u32)
                    });
                Ok(0)
            }),
            F_GET_SEALS | F_ADD_SEALS => self.with_file(fd, false, |f| {
                self.seals_fcntl(f, cmd == F_ADD_SEALS, arg as u32)
            }),
            F_GETPIPE_SZ | F_SETPIPE_SZ => self.with_file(fd, false, |f| match stream(f) {
                Some(Stream::Pipe(p)) if cmd == F_GETPIPE_SZ => Ok(p.capacity() as i64),
                Some(Stream::Pipe(p)) => p.set_capacity(arg, self.cred.is_root()).map(|n| n as i64),
                _ => Err(Errno::EBADF),
            }),
            _ => Err(Errno::EINVAL),
        }
    }

    /// F_GET_SEALS, or F_ADD_SEALS of `add` (memfd_fcntl): a tmpfs regular
    /// file's seals (anon/memfd.rs); EINVAL for any other file.
    fn seals_fcntl(&self, f: &crate::file::OpenFile, adding: bool, add: u32) -> SysResult<i64> {
        if adding {
            if f.fmode & FMODE_WRITE == 0 {
                return Err(Errno::EPERM);
            }
            if add & !F_ALL_SEALS != 0 {
                return Err(Errno::EINVAL);
            }
        }
        let inode = f.inode();
        // SAFETY: an inode's superblock outlives it.
        let data = match inode.file_data() {
            Some(d) if !unsafe { &*inode.sb }.backend_served => d,
            _ => return Err(Errno::EINVAL),
        };
        let seals = crate::anon::memfd::seals_of(&self.vfs, inode);
        if !adding {
            let _d = data.read();
            return Ok(i64::from(crate::anon::memfd::current(seals)));
        }
        let _d = data.write();
        let now = crate::anon::memfd::current(seals);
        let new = crate::anon::memfd::added(now, add, inode.attr().mode)?;
        if let Some(s) = seals {
            // Relaxed: under the data lock (anon/memfd.rs).
            s.store(new, Ordering::Relaxed);
        }
        Ok(0)
    }

    /// What /proc/self/fd/N would read for `fd`: `pipe:[N]`, `socket:[N]`,
    /// `anon_inode:[eventfd]`, `/memfd:NAME (deleted)`, or the file's path
    /// (with " (deleted)" once unlinked). Formatted now; nothing is stored.
    pub fn fd_path(&self, fd: Fd) -> SysResult<Vec<u8>> {
        let _end = self.vfs.call_end();
        let _g = self.vfs.collector.enter();
        let f = self.fd_file(fd)?;
        let file = f.file();
        let r = if file.fmode & (FMODE_ANON | FMODE_SHARED_ANON) != 0 {
            // SAFETY: the file references its dentry (or the namespace pins
            // the shared eventfd one).
            anon_fd_path(file.fmode, file.inode(), unsafe { &*file.dentry })
        } else {
            self.path_of(PathPtr {
                mnt: file.mnt,
                dentry: file.dentry,
            })
        };
        self.vfs.fput(f);
        Ok(r)
    }

    /// The path of a location as seen from this process's root (the
    /// caller holds a guard), as getcwd builds it.
    fn path_of(&self, at: PathPtr) -> Vec<u8> {
        let (root, _) = self.fs.get();
        // SAFETY: the caller's guard and file reference keep the dentry.
        let d = unsafe { &*at.dentry };
        let deleted = !d.is_root() && !d.is_hashed();
        let mut out = self.path_text(root, at, false);
        if deleted {
            out.extend_from_slice(b" (deleted)");
        }
        out
    }
}
