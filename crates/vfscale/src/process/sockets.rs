//! AF_UNIX addressing: bind, listen, connect, accept4, getsockname and
//! getpeername, for path names (Linux's "pathname" sockets).
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
//! Not built (docs/COMPATIBILITY.md): abstract names (a leading NUL) and
//! autobind (an empty name): EOPNOTSUPP; datagram addressing (connect or
//! sendto by name on SOCK_DGRAM): EOPNOTSUPP; binding in a passthrough
//! directory: EOPNOTSUPP.

use super::anon::{nonblock, stream, Stream, SOCKET_BYTES};
use super::Process;
use crate::abi::*;
use crate::anon::socket::{Binding, SockName, Socket};
use crate::cred::perm::{may_access, MAY_WRITE};
use crate::vfs::VfsInner;
use std::sync::Arc;

/// A socket address's checks: the length (EINVAL past sun_path), then
/// the kinds of name not built.
fn check_name(name: &[u8]) -> SysResult<()> {
    if name.len() > UNIX_PATH_MAX {
        return Err(Errno::EINVAL);
    }
    if name.first().is_none_or(|&b| b == 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

impl Process {
    /// Runs `f` on the socket `fd` names (EBADF, ENOTSOCK).
    fn with_socket<R>(
        &self,
        fd: Fd,
        f: impl FnOnce(&Socket, bool) -> SysResult<R>,
    ) -> SysResult<R> {
        self.with_file(fd, false, |file| match stream(file) {
            Some(Stream::Socket(s)) => f(s, nonblock(file)),
            _ => Err(Errno::ENOTSOCK),
        })
    }

    /// bind(2) to a path.
    pub fn bind(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| {
            check_name(name)?;
            let b = sock.bind(Arc::from(name), || {
                match self.mknod(AT_FDCWD, name, S_IFSOCK | 0o777, 0, true) {
                    Err(Errno::EEXIST) => Err(Errno::EADDRINUSE),
                    r => r?.ok_or(Errno::EOPNOTSUPP),
                }
            })?;
            // SAFETY: the binding's reference keeps the dentry.
            let inode = unsafe { &*b.dentry }.inode_ptr() as usize;
            self.vfs.bound_sockets.insert(inode, &b);
            Ok(())
        })
    }

    /// listen(2).
    pub fn listen(&self, fd: Fd, backlog: i32) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| sock.listen(backlog))
    }

    /// connect(2) to a path.
    pub fn connect(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, nb| {
            check_name(name)?;
            let target = self.bound_socket_at(name)?;
            sock.connect(&target, nb)
        })
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
        let (mode, uid, gid) = inode.perm_attr();
        may_access(&self.cred, mode, uid, gid, MAY_WRITE)?;
        if inode.file_type() != S_IFSOCK {
            return Err(Errno::ECONNREFUSED);
        }
        self.vfs
            .bound_sockets
            .find(found.inode as usize)
            .ok_or(Errno::ECONNREFUSED)
    }

    /// accept4(2). Flags: SOCK_NONBLOCK, SOCK_CLOEXEC.
    pub fn accept4(&self, fd: Fd, flags: i32) -> SysResult<Fd> {
        let _end = self.vfs.call_end();
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

    /// getpeername(2): the peer's path (empty if unnamed); ENOTCONN.
    pub fn getpeername(&self, fd: Fd) -> SysResult<Vec<u8>> {
        let _end = self.vfs.call_end();
        self.with_socket(fd, |sock, _| sock.peer_name().map(|n: SockName| n.to_vec()))
    }
}

impl VfsInner {
    /// The final close of a socket bound to a path: forgets the binding
    /// and drops its references on the socket file.
    pub(crate) fn unbind_socket(&self, b: &Arc<Binding>) {
        // SAFETY: the binding's reference keeps the dentry until the put.
        let inode = unsafe { &*b.dentry }.inode_ptr() as usize;
        self.bound_sockets.remove(inode, b);
        self.dput(b.dentry);
        self.mntput(b.mnt);
    }
}
