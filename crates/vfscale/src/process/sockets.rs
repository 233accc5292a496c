//! AF_UNIX addressing: bind, listen, connect, accept4, getsockname and
//! getpeername, for path names and abstract names (a leading NUL; an
//! empty name to bind autobinds one, NUL and five hex digits).
//!
//! bind makes the socket file (mknod S_IFSOCK, mode 0777 less the umask;
//! EADDRINUSE where the name exists) and keeps a reference on its dentry
//! and mount in the socket's `Binding`, registered in the namespace's
//! `BoundSockets` under the file's inode; the socket's final close drops
//! both (`VfsInner::unbind_socket`). connect resolves the path as Linux's
//! unix_find_bsd does (ENOENT..., then EACCES without write permission on
//! the socket file, then ECONNREFUSED unless it is a socket file some
//! live socket is bound to) and hands the rest to `anon/socket.rs`.
//!
//! An abstract name is only an entry in that table (no file, no
//! permission check), per `Vfs` and socket type where Linux keeps them per
//! network namespace and type (a connect finds only its own type's:
//! ECONNREFUSED, where a path name of another type is EPROTOTYPE).
//!
//! sendto and recvfrom carry names for datagram sockets (connect sets a
//! datagram socket's default peer): `anon/dgram.rs`.
//!
//! In a passthrough directory, bind makes the socket file on the host and
//! its binding pins the cached name (so the inode, found again by the
//! host file's identity, stays the key).
//!
//! `disconnect` is connect(2) to an AF_UNSPEC address (a datagram socket
//! forgets its peer).
//!
//! sendmsg and recvmsg carry files (SCM_RIGHTS, `anon/rights.rs`): the
//! sender's descriptors' files travel with the message and become new
//! descriptors of the receiver. Every call that can drop messages puts
//! their files here, after the socket layer released its locks.
//!
//! They also carry credentials (SCM_CREDENTIALS, `anon/creds.rs`): those a
//! sender gives are checked here as scm_check_creds does; a socket with
//! SO_PASSCRED (setsockopt) receives them, and autobinds an abstract name
//! when it connects or sends without one (unix_autobind), so its peer can
//! tell who sent. recvmsg's control buffer is given by its size in bytes
//! and filled as Linux's put_cmsg and scm_detach_fds fill one: the
//! credentials first (a buffer too small for the whole 28-byte message
//! gets none of it, where Linux writes a cut one: docs/COMPATIBILITY.md),
//! then as many descriptors as the rest holds.
//!
//! getsockopt/setsockopt answer the SOL_SOCKET options of
//! `abi::SO_*` (others ENOPROTOOPT; any other level EOPNOTSUPP, as for
//! AF_UNIX, which has no protocol options).

use super::anon::{nonblock, SOCKET_BYTES};
use super::Process;
use crate::abi::*;
use crate::anon::creds::{PeerCred, SendCreds};
use crate::anon::rights::{InFlight, SCM_MAX_FD};
use crate::anon::socket::{Binding, NameKey, SockName, Socket};
use crate::anon::{stream, Stream};
use crate::cred::perm::MAY_WRITE;
use crate::file::FileRef;
use crate::vfs::VfsInner;
use std::sync::Arc;

/// A socket address's checks: EINVAL past sun_path (an empty name is
/// bind's autobind, and names nothing to connect: EINVAL there); a path
/// name ends at its first NUL (sun_path is a C string: unix_mkname_bsd).
fn check_name(name: &[u8]) -> SysResult<&[u8]> {
    if name.len() > UNIX_PATH_MAX {
        return Err(Errno::EINVAL);
    }
    if is_abstract(name) {
        return Ok(name);
    }
    Ok(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
}

fn is_abstract(name: &[u8]) -> bool {
    name.first() == Some(&0)
}

impl Process {
    /// Runs `f` on the socket `fd` names (EBADF, ENOTSOCK), with whether
    /// its file is non-blocking.
    fn with_socket<R>(
        &self,
        fd: Fd,
        f: impl FnOnce(&Socket, bool) -> SysResult<R>,
    ) -> SysResult<R> {
        self.with_socket_file(fd, |s, file| f(s, nonblock(file)))
    }

    fn with_socket_file<R>(
        &self,
        fd: Fd,
        f: impl FnOnce(&Socket, &crate::file::OpenFile) -> SysResult<R>,
    ) -> SysResult<R> {
        self.with_file(fd, false, |file| match stream(file) {
            Some(Stream::Socket(s)) => f(s, file),
            _ => Err(Errno::ENOTSOCK),
        })
    }

    /// move_addr_to_kernel, which connect runs between the descriptor's
    /// lookup and the socket's: an address longer than a
    /// sockaddr_storage (128 bytes, the family included) is EINVAL.
    fn check_addr_len(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let f = self.fd_file_nopath(fd)?;
        self.vfs.fput(f);
        if name.len() + 2 > 128 {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// bind(2) to a path, an abstract name, or (empty) an autobound one.
    pub fn bind(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket_file(fd, |sock, file| {
            let name = check_name(name)?;
            let table = &self.vfs.bound_sockets;
            if name.is_empty() || is_abstract(name) {
                return self.bind_abstract(sock, name);
            }
            // Linux makes the file first (EADDRINUSE, ENOENT, EACCES...),
            // then finds the socket already named (EINVAL) and removes it.
            // The file takes the socket's own permission bits (fchmod on
            // the socket changes them), less the umask, which unix_bind
            // applies itself: a directory's default ACL masks what is
            // left (mknod does not apply the umask again then).
            let perm = file.inode().attr().mode & S_IALLUGO & !self.umask_bits();
            let made = match self.mknod(AT_FDCWD, name, S_IFSOCK | perm, 0, true) {
                Err(Errno::EEXIST) => return Err(Errno::EADDRINUSE),
                r => r?.ok_or(Errno::EOPNOTSUPP)?,
            };
            let publish = |b: &Arc<Binding>| {
                // SAFETY: the binding's reference keeps the dentry.
                let inode = unsafe { &*made.0 }.inode_ptr() as usize;
                table.insert(NameKey::File(inode), b)
            };
            sock.bind(|| Ok(SockName::from(name)), false, Some(made), publish)
                .inspect_err(|_| {
                    self.vfs.dput(made.0);
                    self.vfs.mntput(made.1);
                    let _ = self.sys_unlinkat(AT_FDCWD, name, 0);
                })
        })
    }

    /// Binds `sock` to the abstract `name`, or (empty) to an autobound one.
    fn bind_abstract(&self, sock: &Socket, name: &[u8]) -> SysResult<()> {
        let table = &self.vfs.bound_sockets;
        let autobind = name.is_empty();
        let name = || {
            if autobind {
                table.autobind_name(sock.socket_type())
            } else {
                Ok(SockName::from(name))
            }
        };
        let publish = |b: &Arc<Binding>| {
            table.insert(
                NameKey::Abstract(b.socket_type(), SockName::from(b.name())),
                b,
            )
        };
        sock.bind(name, autobind, None, publish)
    }

    /// unix_autobind where a socket with SO_PASSCRED connects, or sends
    /// (datagram and seqpacket sends; a stream send never binds), without
    /// a name: it gets one, so its peer can tell the sender. A socket
    /// another thread named meanwhile keeps that name.
    pub(crate) fn autobind_to_pass_creds(&self, sock: &Socket, sending: bool) -> SysResult<()> {
        if !sock.passcred() || !sock.name().is_empty() {
            return Ok(());
        }
        if sending && sock.socket_type() == SOCK_STREAM {
            return Ok(());
        }
        match self.bind_abstract(sock, b"") {
            Err(Errno::EINVAL) if !sock.name().is_empty() => Ok(()),
            r => r,
        }
    }

    /// listen(2).
    pub fn listen(&self, fd: Fd, backlog: i32) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| sock.listen(backlog, self.as_peer()))
    }

    /// connect(2) to a path or an abstract name.
    pub fn connect(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.check_addr_len(fd, name)?;
        self.with_socket(fd, |sock, nb| {
            let name = check_name(name)?;
            if name.is_empty() {
                return Err(Errno::EINVAL);
            }
            self.autobind_to_pass_creds(sock, false)?;
            let target = self.bound_socket(sock.socket_type(), name)?;
            let mut orphans = Vec::new();
            let r = sock.connect(&target, nb, self.as_peer(), &mut orphans);
            self.vfs.fput_many(orphans);
            r
        })
    }

    /// connect(2) with an AF_UNSPEC address (a datagram socket forgets its
    /// default peer).
    pub fn disconnect(&self, fd: Fd) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| {
            let mut orphans = Vec::new();
            let r = sock.disconnect(&mut orphans);
            self.vfs.fput_many(orphans);
            r
        })
    }

    /// The live socket of type `ty` that the checked name `name` leads to
    /// (EINVAL for an empty name, which names nothing).
    fn bound_socket(&self, ty: i32, name: &[u8]) -> SysResult<Arc<Binding>> {
        if name.is_empty() {
            Err(Errno::EINVAL)
        } else if is_abstract(name) {
            self.vfs
                .bound_sockets
                .find(&NameKey::Abstract(ty, SockName::from(name)))
                .ok_or(Errno::ECONNREFUSED)
        } else {
            self.bound_socket_at(name)
        }
    }

    /// sendto(2): `sendmsg` of one buffer without files, except that an
    /// address past a sockaddr_storage is EINVAL (move_addr_to_kernel).
    pub fn sendto(&self, fd: Fd, buf: &[u8], flags: i32, name: Option<&[u8]>) -> SysResult<usize> {
        self.send_message(fd, &[buf], flags, name, &[], None, false)
    }

    /// sendmsg(2): one message of `bufs` (a datagram socket's to `name` if
    /// given, else to its peer), carrying the files of the descriptors
    /// `rights` (SCM_RIGHTS) and the credentials `creds`
    /// (SCM_CREDENTIALS). Linux's order: EBADF, ENOTSOCK, for seqpacket a
    /// pending error and ENOTCONN, the control data as a buffer holding
    /// the credentials before the descriptors (scm_send: `check_creds`,
    /// then EINVAL past SCM_MAX_FD, EBADF for a descriptor not open),
    /// EOPNOTSUPP for MSG_OOB, EINVAL for an empty or too long name
    /// (datagram), the autobind of a socket with SO_PASSCRED, then the
    /// socket's own checks. A name past a sockaddr_storage is cut to one
    /// (copy_msghdr_from_user), not refused.
    #[allow(clippy::too_many_arguments)]
    pub fn sendmsg(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        flags: i32,
        name: Option<&[u8]>,
        rights: &[Fd],
        creds: Option<Ucred>,
    ) -> SysResult<usize> {
        self.send_message(fd, bufs, flags, name, rights, creds, true)
    }

    /// sendmsg, or sendto (`cut_long_name` false: a name past a
    /// sockaddr_storage is EINVAL).
    #[allow(clippy::too_many_arguments)]
    fn send_message(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        flags: i32,
        name: Option<&[u8]>,
        rights: &[Fd],
        creds: Option<Ucred>,
        cut_long_name: bool,
    ) -> SysResult<usize> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, nb| {
            // sun_path's room in a sockaddr_storage.
            const STORAGE_PATH: usize = 128 - 2;
            let name = match name {
                Some(n) if n.len() > STORAGE_PATH => {
                    if !cut_long_name {
                        return Err(Errno::EINVAL);
                    }
                    Some(&n[..STORAGE_PATH])
                }
                other => other,
            };
            sock.seqpacket_send_precheck()?;
            if let Some(c) = creds {
                self.check_creds(c)?;
            }
            let files = self.files_to_send(rights)?;
            let mut orphans = Vec::new();
            let creds = self.send_creds(creds);
            let r = self.send_checked(sock, nb, bufs, flags, name, files, creds, &mut orphans);
            self.vfs.fput_many(orphans);
            r
        })
    }

    /// The files of `rights`, each with a new reference (O_PATH ones too,
    /// as scm_fp_copy's fget_raw); none taken if one is not open.
    fn files_to_send(&self, rights: &[Fd]) -> SysResult<Option<InFlight>> {
        if rights.len() > SCM_MAX_FD {
            return Err(Errno::EINVAL);
        }
        // A send without files takes no reference and no lock here.
        if rights.is_empty() {
            return Ok(None);
        }
        let mut files = Vec::with_capacity(rights.len());
        for &fd in rights {
            match self.fd_file(fd) {
                Ok(f) => files.push(f),
                Err(e) => {
                    self.vfs.fput_many(files);
                    return Err(e);
                }
            }
        }
        let user =
            self.vfs
                .unix_inflight
                .charge(self.cred.ruid, self.fd_limit(), self.cred.euid == 0);
        Ok(Some(InFlight::new(files, user)))
    }

    /// The credentials a sendmsg gave (SCM_CREDENTIALS), as
    /// scm_check_creds and __scm_send check them: no id may be -1
    /// (EINVAL); the pid must be the sender's own and the ids its real or
    /// effective ones (saved ids are not modelled), unless it is root
    /// (EPERM); a pid not the sender's names a process (ESRCH for pid 0
    /// or below; vfscale keeps no process table, so a root sender may
    /// name any positive pid: docs/COMPATIBILITY.md).
    fn check_creds(&self, c: Ucred) -> SysResult<()> {
        if c.uid == u32::MAX || c.gid == u32::MAX {
            return Err(Errno::EINVAL);
        }
        let root = self.cred.is_root();
        let own_pid = self.ucred().pid;
        let pid_ok = c.pid == own_pid || root;
        let uid_ok = c.uid == self.cred.ruid || c.uid == self.cred.euid || root;
        let gid_ok = c.gid == self.cred.rgid || c.gid == self.cred.egid || root;
        if !(pid_ok && uid_ok && gid_ok) {
            return Err(Errno::EPERM);
        }
        if c.pid != own_pid && c.pid <= 0 {
            return Err(Errno::ESRCH);
        }
        Ok(())
    }

    /// What a send from this process may attach: `explicit` (checked), or
    /// its own pid with its real uid and gid (current_uid_gid).
    pub(crate) fn send_creds(&self, explicit: Option<Ucred>) -> SendCreds {
        SendCreds {
            explicit,
            own: Ucred {
                pid: self.ucred().pid,
                uid: self.cred.ruid,
                gid: self.cred.rgid,
            },
        }
    }

    /// `sendmsg` past the control data: `files` go with the message or,
    /// if it does not go, to `orphans`.
    #[allow(clippy::too_many_arguments)]
    fn send_checked(
        &self,
        sock: &Socket,
        nb: bool,
        bufs: &[&[u8]],
        flags: i32,
        name: Option<&[u8]>,
        files: Option<InFlight>,
        creds: SendCreds,
        orphans: &mut Vec<FileRef>,
    ) -> SysResult<usize> {
        let checked = if flags & MSG_OOB != 0 {
            Err(Errno::EOPNOTSUPP)
        } else {
            match name {
                Some(n) if sock.socket_type() == SOCK_DGRAM => match check_name(n) {
                    Ok([]) => Err(Errno::EINVAL),
                    other => other.map(Some),
                },
                other => Ok(other),
            }
        };
        let name = match checked.and_then(|name| {
            self.autobind_to_pass_creds(sock, true)?;
            Ok(name)
        }) {
            Ok(name) => name,
            Err(e) => {
                orphans.extend(files.map(InFlight::unsent).unwrap_or_default());
                return Err(e);
            }
        };
        let find = name.map(|n| move || self.bound_socket(sock.socket_type(), n));
        let to = find
            .as_ref()
            .map(|f| f as &dyn Fn() -> SysResult<Arc<Binding>>);
        sock.send(bufs, flags, nb, to, files, creds, orphans)
    }

    /// recvfrom(2): `recvmsg` into one buffer with no control buffer (any
    /// files the message carried are dropped): the bytes and the sender's
    /// name.
    pub fn recvfrom(&self, fd: Fd, buf: &mut [u8], flags: i32) -> SysResult<(usize, Vec<u8>)> {
        let r = self.recvmsg(fd, &mut [buf], flags, 0)?;
        Ok((r.len, r.name))
    }

    /// recvmsg(2): the next data into `bufs`, with the sender's name, its
    /// credentials (with SO_PASSCRED) and the files the message carried as
    /// new descriptors (FD_CLOEXEC with MSG_CMSG_CLOEXEC). `control_len` is
    /// the size of the caller's control buffer in bytes (0: none), filled
    /// as Linux fills one: the credentials' message first
    /// (`cmsg_space(12)`, 32 bytes), then the descriptors' (one 4-byte
    /// slot each after a 16-byte header), as many as fit and as the table
    /// takes; the rest are closed, and MSG_CTRUNC says that something did
    /// not fit.
    pub fn recvmsg(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        flags: i32,
        control_len: usize,
    ) -> SysResult<RecvMsg> {
        let _end = self.vfs.call_end();
        let r = self.with_socket(fd, |sock, nb| sock.recv(bufs, flags, nb))?;
        let mut out = RecvMsg {
            len: r.len,
            name: r.from.to_vec(),
            creds: None,
            fds: Vec::new(),
            // ____sys_recvmsg starts the out flags from the asked
            // MSG_CMSG_CLOEXEC.
            flags: (flags & MSG_CMSG_CLOEXEC) | if r.truncated { MSG_TRUNC } else { 0 },
        };
        let mut room = control_len;
        if let Some(c) = r.creds {
            // put_cmsg: no room for a header, or for the whole message.
            if room < cmsg_len(12) {
                out.flags |= MSG_CTRUNC;
            } else {
                out.creds = Some(c);
            }
            room -= room.min(cmsg_space(12));
        }
        // scm_max_fds.
        let max_fds = room.saturating_sub(CMSG_HDR) / 4;
        let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
        for f in r.files {
            if out.fds.len() < max_fds && out.flags & MSG_CTRUNC == 0 {
                match self.files.install(f, cloexec, 0) {
                    Ok(fd) => {
                        out.fds.push(fd);
                        continue;
                    }
                    Err((_, f)) => {
                        out.flags |= MSG_CTRUNC;
                        self.vfs.fput(f);
                    }
                }
            } else {
                out.flags |= MSG_CTRUNC;
                self.vfs.fput(f);
            }
        }
        Ok(out)
    }

    /// The live socket bound to the socket file `name` resolves to.
    fn bound_socket_at(&self, name: &[u8]) -> SysResult<Arc<Binding>> {
        let _g = self.vfs.collector.enter();
        // Symlinks followed (at_flags 0), as unix_find_bsd's kern_path.
        let found = self.lookup_at(&self.cred, AT_FDCWD, name, 0, 0)?;
        if found.inode.is_null() {
            return Err(Errno::ENOENT);
        }
        let inode = found.inode();
        inode.permission(&self.cred, MAY_WRITE)?;
        if inode.file_type() != S_IFSOCK {
            return Err(Errno::ECONNREFUSED);
        }
        self.vfs
            .bound_sockets
            .find(&NameKey::File(found.inode as usize))
            .ok_or(Errno::ECONNREFUSED)
    }

    /// accept4(2). Flags: SOCK_NONBLOCK, SOCK_CLOEXEC.
    pub fn accept4(&self, fd: Fd, flags: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
        // Linux's order: the descriptor (EBADF), the flags (EINVAL), then
        // the socket (ENOTSOCK).
        let f = self.fd_file_nopath(fd)?;
        self.vfs.fput(f);
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        self.charge_here();
        self.vfs.admit(SOCKET_BYTES, Errno::ENOMEM)?;
        let accepted = self.with_socket(fd, |sock, nb| sock.accept(nb))?;
        let f = self.socket_file(accepted, flags & SOCK_NONBLOCK != 0);
        Ok(self.install_all([f], flags & SOCK_CLOEXEC != 0)?[0])
    }

    /// getsockname(2): the bound path, empty if unnamed.
    pub fn getsockname(&self, fd: Fd) -> SysResult<Vec<u8>> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| Ok(sock.name().to_vec()))
    }

    /// This process as a socket peer sees it: its id (the one F_GETLK
    /// reports, shared by `clone_thread` siblings as a thread group's pid)
    /// and its effective uid and gid.
    pub(crate) fn ucred(&self) -> Ucred {
        Ucred {
            pid: self.files.lock_owner() as i32,
            uid: self.cred.euid,
            gid: self.cred.egid,
        }
    }

    /// This process as its socket peers keep it (SO_PEERCRED,
    /// SO_PEERGROUPS).
    pub(crate) fn as_peer(&self) -> PeerCred {
        PeerCred {
            ucred: self.ucred(),
            cred: self.cred.clone(),
        }
    }

    /// getsockopt(SO_PEERCRED): the peer's credentials from when the two
    /// connected (a listener: its own listen()'s; none: pid 0, ids -1).
    pub fn peer_cred(&self, fd: Fd) -> SysResult<Ucred> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| Ok(sock.peer_cred()))
    }

    /// getsockopt(2): the value of a SOL_SOCKET option (`abi::SO_*`) into
    /// `buf`, cut to its length as Linux cuts it (SO_PEERCRED's struct
    /// ucred too); returns the bytes written. SO_ERROR takes the pending
    /// error. Order: EBADF, ENOTSOCK, EOPNOTSUPP for another level,
    /// ENOPROTOOPT for an option vfscale does not answer.
    pub fn getsockopt(&self, fd: Fd, level: i32, name: i32, buf: &mut [u8]) -> SysResult<usize> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| {
            if level != SOL_SOCKET {
                return Err(Errno::EOPNOTSUPP);
            }
            let int = |v: i32| v.to_le_bytes().to_vec();
            let value = match name {
                SO_TYPE => int(sock.socket_type()),
                // AF_UNIX sockets have protocol 0 whatever socket() was
                // given (0 or PF_UNIX).
                SO_PROTOCOL => int(0),
                SO_DOMAIN => int(AF_UNIX),
                SO_ACCEPTCONN => int(i32::from(sock.is_listener())),
                SO_ERROR => int(sock.take_error().map_or(0, |e| e.0)),
                SO_PASSCRED => int(i32::from(sock.passcred())),
                SO_PEERCRED => sock.peer_cred().to_bytes().to_vec(),
                // A u64: a shorter buffer is EINVAL, not cut.
                SO_COOKIE if buf.len() < 8 => return Err(Errno::EINVAL),
                SO_COOKIE => sock.cookie().to_le_bytes().to_vec(),
                // The whole list or nothing: ERANGE if it does not fit
                // (Linux then also reports the length it needs).
                SO_PEERGROUPS => {
                    let groups = sock.peer_groups().ok_or(Errno::ENODATA)?;
                    if buf.len() < 4 * groups.len() {
                        return Err(Errno::ERANGE);
                    }
                    groups.iter().flat_map(|g| g.to_le_bytes()).collect()
                }
                _ => sock.opts().get(name).ok_or(Errno::ENOPROTOOPT)?,
            };
            let n = value.len().min(buf.len());
            buf[..n].copy_from_slice(&value[..n]);
            Ok(n)
        })
    }

    /// setsockopt(2) of a SOL_SOCKET option: SO_PASSCRED (any non-zero
    /// int turns it on) and the options anon/sockopt.rs keeps (buffer
    /// sizes, timeouts, low-water mark, linger, priority, mark, flags;
    /// CAP_NET_ADMIN is an effective uid of 0). Order: EBADF, ENOTSOCK,
    /// EOPNOTSUPP for another level, EINVAL for a value shorter than an
    /// int (whatever the option), then the option's own checks;
    /// ENOPROTOOPT for the options vfscale does not keep
    /// (docs/COMPATIBILITY.md).
    pub fn setsockopt(&self, fd: Fd, level: i32, name: i32, value: &[u8]) -> SysResult<()> {
        let _end = self.vfs.call_end();
        let privileged = self.cred.euid == 0;
        self.with_socket(fd, |sock, _| {
            if level != SOL_SOCKET {
                return Err(Errno::EOPNOTSUPP);
            }
            let Some(v) = value.first_chunk::<4>().map(|b| i32::from_le_bytes(*b)) else {
                return Err(Errno::EINVAL);
            };
            match name {
                SO_PASSCRED => {
                    sock.set_passcred(v != 0);
                    return Ok(());
                }
                SO_PEEK_OFF => {
                    sock.set_peek_off(v);
                    return Ok(());
                }
                _ => {}
            }
            let r = sock
                .opts()
                .set(name, value, privileged)
                .unwrap_or(Err(Errno::ENOPROTOOPT));
            if r.is_ok() && matches!(name, SO_SNDBUF | SO_SNDBUFFORCE) {
                sock.wake_writers();
            }
            r
        })
    }

    /// getpeername(2): the peer's path (empty if unnamed); ENOTCONN.
    pub fn getpeername(&self, fd: Fd) -> SysResult<Vec<u8>> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| sock.peer_name().map(|n: SockName| n.to_vec()))
    }
}

impl VfsInner {
    /// The final close of a bound socket: forgets the binding and drops
    /// its references on the socket file.
    pub(crate) fn unbind_socket(&self, b: &Arc<Binding>) {
        match b.file {
            Some((dentry, mnt)) => {
                // SAFETY: the binding's reference keeps the dentry until
                // the put below.
                let inode = unsafe { &*dentry }.inode_ptr() as usize;
                self.bound_sockets.remove(&NameKey::File(inode), b);
                self.dput(dentry);
                self.mntput(mnt);
            }
            None => self.bound_sockets.remove(
                &NameKey::Abstract(b.socket_type(), SockName::from(b.name())),
                b,
            ),
        }
    }
}
