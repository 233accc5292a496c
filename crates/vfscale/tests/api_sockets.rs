//! AF_UNIX sockets bound to paths: bind, listen, connect, accept4,
//! getsockname, getpeername, and datagrams addressed by name (sendto,
//! recvfrom, a datagram socket's default peer). Each script runs on real sockets in a host
//! temporary directory and on vfscale, and every result is compared, so
//! each errno is the one this machine's kernel gives.

mod common;
use common::*;

/// The calls the script makes; results are values or -errno. Names are
/// relative to the side's directory (a host temporary one, vfscale's /).
trait SockCalls {
    fn socket(&mut self, ty: i32) -> i64;
    fn socketpair(&mut self, ty: i32) -> [i32; 2];
    fn bind(&mut self, fd: i32, name: &str) -> i64;
    fn listen(&mut self, fd: i32, backlog: i32) -> i64;
    fn connect(&mut self, fd: i32, name: &str) -> i64;
    /// connect to an AF_UNSPEC address.
    fn disconnect(&mut self, fd: i32) -> i64;
    /// SO_PEERCRED: whether a pid is there, the uid and the gid.
    fn peercred(&mut self, fd: i32) -> Result<(bool, u32, u32), i64>;
    fn accept4(&mut self, fd: i32, flags: i32) -> i64;
    /// The name relative to the side's directory ("" if unnamed).
    fn sockname(&mut self, fd: i32, peer: bool) -> Result<String, i64>;
    fn write(&mut self, fd: i32, data: &[u8]) -> i64;
    fn read(&mut self, fd: i32, len: usize) -> Result<Vec<u8>, i64>;
    /// sendto with a name (relative, as above) or none.
    fn sendto(&mut self, fd: i32, data: &[u8], flags: i32, name: Option<&str>) -> i64;
    /// recvfrom: the bytes (the count returned, at most `len` of them
    /// copied) and the sender's name relative to the side's directory.
    fn recvfrom(&mut self, fd: i32, len: usize, flags: i32) -> Result<(i64, Vec<u8>, String), i64>;
    fn poll(&mut self, fd: i32) -> i64;
    fn shutdown(&mut self, fd: i32, how: i32) -> i64;
    fn getfl(&mut self, fd: i32) -> i64;
    fn close(&mut self, fd: i32);
    fn mode(&mut self, name: &str) -> i64;
    fn unlink(&mut self, name: &str) -> i64;
    fn touch(&mut self, name: &str);
    fn mkdir(&mut self, name: &str);
    fn symlink(&mut self, target: &str, name: &str);
}

fn errno() -> i64 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as i64
}

fn ret(r: libc::c_int) -> i64 {
    if r < 0 {
        -errno()
    } else {
        r as i64
    }
}

struct Host {
    dir: tempfile::TempDir,
}

impl Host {
    fn path(&self, name: &str) -> std::ffi::CString {
        let p = if name.is_empty() {
            self.dir.path().to_path_buf()
        } else {
            self.dir.path().join(name)
        };
        let mut b = p.into_os_string().into_encoded_bytes();
        if name.ends_with('/') {
            b.push(b'/');
        }
        std::ffi::CString::new(b).unwrap()
    }

    /// A returned address's name relative to the directory ("" if none).
    fn relative(&self, a: &libc::sockaddr_un, len: libc::socklen_t) -> String {
        let raw: Vec<u8> = a
            .sun_path
            .iter()
            .take((len as usize).saturating_sub(2))
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let base = self.dir.path().as_os_str().as_encoded_bytes().to_vec();
        let rel = raw
            .strip_prefix(&base[..])
            .map(|r| r.strip_prefix(b"/").unwrap_or(r))
            .unwrap_or(&raw);
        String::from_utf8_lossy(rel).into_owned()
    }

    fn addr(&self, name: &str) -> (libc::sockaddr_un, libc::socklen_t) {
        let p = self.path(name);
        // SAFETY: all-zero is a valid sockaddr_un.
        let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        a.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = p.as_bytes();
        assert!(bytes.len() < a.sun_path.len(), "temporary path too long");
        for (d, s) in a.sun_path.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        (
            a,
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    }
}

impl SockCalls for Host {
    fn socket(&mut self, ty: i32) -> i64 {
        // SAFETY: plain syscall.
        ret(unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_NONBLOCK, 0) })
    }
    fn socketpair(&mut self, ty: i32) -> [i32; 2] {
        let mut fds = [0; 2];
        // SAFETY: writes two descriptors into `fds`.
        assert_eq!(
            unsafe {
                libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_NONBLOCK, 0, fds.as_mut_ptr())
            },
            0
        );
        fds
    }
    fn bind(&mut self, fd: i32, name: &str) -> i64 {
        let (a, len) = self.addr(name);
        // SAFETY: a valid address of `len` bytes.
        ret(unsafe { libc::bind(fd, (&a as *const libc::sockaddr_un).cast(), len) })
    }
    fn listen(&mut self, fd: i32, backlog: i32) -> i64 {
        // SAFETY: plain syscall.
        ret(unsafe { libc::listen(fd, backlog) })
    }
    fn connect(&mut self, fd: i32, name: &str) -> i64 {
        let (a, len) = self.addr(name);
        // SAFETY: a valid address of `len` bytes.
        ret(unsafe { libc::connect(fd, (&a as *const libc::sockaddr_un).cast(), len) })
    }
    fn peercred(&mut self, fd: i32) -> Result<(bool, u32, u32), i64> {
        let mut c = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `c` has room for `len` bytes.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut c as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(-errno());
        }
        Ok((c.pid != 0, c.uid, c.gid))
    }
    fn disconnect(&mut self, fd: i32) -> i64 {
        // SAFETY: all-zero is a valid sockaddr; AF_UNSPEC is 0.
        let a: libc::sockaddr = unsafe { std::mem::zeroed() };
        // SAFETY: a valid address of its size.
        ret(unsafe {
            libc::connect(
                fd,
                &a,
                std::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
            )
        })
    }
    fn accept4(&mut self, fd: i32, flags: i32) -> i64 {
        // SAFETY: no address wanted.
        ret(unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), flags) })
    }
    fn sockname(&mut self, fd: i32, peer: bool) -> Result<String, i64> {
        // SAFETY: all-zero is a valid sockaddr_un.
        let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let p = (&mut a as *mut libc::sockaddr_un).cast();
        // SAFETY: `a` has room for `len` bytes.
        let r = unsafe {
            if peer {
                libc::getpeername(fd, p, &mut len)
            } else {
                libc::getsockname(fd, p, &mut len)
            }
        };
        if r < 0 {
            return Err(-errno());
        }
        Ok(self.relative(&a, len))
    }
    fn sendto(&mut self, fd: i32, data: &[u8], flags: i32, name: Option<&str>) -> i64 {
        let (a, len) = match name {
            Some(n) => self.addr(n),
            // SAFETY: all-zero is a valid sockaddr_un (not passed: length 0).
            None => (unsafe { std::mem::zeroed() }, 0),
        };
        let ptr = if name.is_some() {
            (&a as *const libc::sockaddr_un).cast()
        } else {
            std::ptr::null()
        };
        let flags = flags | libc::MSG_NOSIGNAL;
        // SAFETY: `data` is valid for its length, the address for `len`.
        let r = unsafe { libc::sendto(fd, data.as_ptr().cast(), data.len(), flags, ptr, len) };
        if r < 0 {
            -errno()
        } else {
            r as i64
        }
    }
    fn recvfrom(&mut self, fd: i32, len: usize, flags: i32) -> Result<(i64, Vec<u8>, String), i64> {
        let mut b = vec![0u8; len];
        // SAFETY: all-zero is a valid sockaddr_un.
        let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        let mut alen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        // SAFETY: `b` is valid for `len` bytes, `a` for `alen`.
        let r = unsafe {
            libc::recvfrom(
                fd,
                b.as_mut_ptr().cast(),
                len,
                flags,
                (&mut a as *mut libc::sockaddr_un).cast(),
                &mut alen,
            )
        };
        if r < 0 {
            return Err(-errno());
        }
        b.truncate((r as usize).min(len));
        Ok((r as i64, b, self.relative(&a, alen)))
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> i64 {
        // SAFETY: `data` is valid for its length.
        let r = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        if r < 0 {
            -errno()
        } else {
            r as i64
        }
    }
    fn read(&mut self, fd: i32, len: usize) -> Result<Vec<u8>, i64> {
        let mut b = vec![0u8; len];
        // SAFETY: `b` is valid for `len` bytes.
        let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), len) };
        if r < 0 {
            return Err(-errno());
        }
        b.truncate(r as usize);
        Ok(b)
    }
    fn poll(&mut self, fd: i32) -> i64 {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN | libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        assert!(unsafe { libc::poll(&mut p, 1, 0) } >= 0);
        p.revents as i64
    }
    fn shutdown(&mut self, fd: i32, how: i32) -> i64 {
        // SAFETY: plain syscall.
        ret(unsafe { libc::shutdown(fd, how) })
    }
    fn getfl(&mut self, fd: i32) -> i64 {
        // SAFETY: plain syscall.
        ret(unsafe { libc::fcntl(fd, libc::F_GETFL) })
    }
    fn close(&mut self, fd: i32) {
        // SAFETY: a descriptor this test owns.
        unsafe { libc::close(fd) };
    }
    fn mode(&mut self, name: &str) -> i64 {
        std::fs::symlink_metadata(self.dir.path().join(name))
            .map(|m| std::os::unix::fs::MetadataExt::mode(&m) as i64)
            .unwrap_or(-1)
    }
    fn unlink(&mut self, name: &str) -> i64 {
        let p = self.path(name);
        // SAFETY: a NUL-terminated path.
        ret(unsafe { libc::unlink(p.as_ptr()) })
    }
    fn touch(&mut self, name: &str) {
        std::fs::File::create(self.dir.path().join(name)).unwrap();
    }
    fn mkdir(&mut self, name: &str) {
        std::fs::create_dir(self.dir.path().join(name)).unwrap();
    }
    fn symlink(&mut self, target: &str, name: &str) {
        std::os::unix::fs::symlink(target, self.dir.path().join(name)).unwrap();
    }
}

struct Ours(Process);

fn ours<T: Into<i64>>(r: SysResult<T>) -> i64 {
    match r {
        Ok(v) => v.into(),
        Err(e) => -(e.0 as i64),
    }
}

fn abs(name: &str) -> Vec<u8> {
    format!("/{name}").into_bytes()
}

impl SockCalls for Ours {
    fn socket(&mut self, ty: i32) -> i64 {
        ours(self.0.socket(AF_UNIX, ty | SOCK_NONBLOCK, 0))
    }
    fn socketpair(&mut self, ty: i32) -> [i32; 2] {
        self.0.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap()
    }
    fn bind(&mut self, fd: i32, name: &str) -> i64 {
        ours(self.0.bind(fd, &abs(name)).map(|()| 0))
    }
    fn listen(&mut self, fd: i32, backlog: i32) -> i64 {
        ours(self.0.listen(fd, backlog).map(|()| 0))
    }
    fn connect(&mut self, fd: i32, name: &str) -> i64 {
        ours(self.0.connect(fd, &abs(name)).map(|()| 0))
    }
    fn accept4(&mut self, fd: i32, flags: i32) -> i64 {
        ours(self.0.accept4(fd, flags))
    }
    fn disconnect(&mut self, fd: i32) -> i64 {
        ours(self.0.disconnect(fd).map(|()| 0))
    }
    fn peercred(&mut self, fd: i32) -> Result<(bool, u32, u32), i64> {
        self.0
            .peer_cred(fd)
            .map(|c| (c.pid != 0, c.uid, c.gid))
            .map_err(|e| -(e.0 as i64))
    }
    fn sockname(&mut self, fd: i32, peer: bool) -> Result<String, i64> {
        let r = if peer {
            self.0.getpeername(fd)
        } else {
            self.0.getsockname(fd)
        };
        match r {
            Ok(n) => Ok(String::from_utf8_lossy(n.strip_prefix(b"/").unwrap_or(&n)).into_owned()),
            Err(e) => Err(-(e.0 as i64)),
        }
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> i64 {
        ours(self.0.write(fd, data).map(|n| n as i64))
    }
    fn read(&mut self, fd: i32, len: usize) -> Result<Vec<u8>, i64> {
        let mut b = vec![0u8; len];
        match self.0.read(fd, &mut b) {
            Ok(n) => {
                b.truncate(n);
                Ok(b)
            }
            Err(e) => Err(-(e.0 as i64)),
        }
    }
    fn sendto(&mut self, fd: i32, data: &[u8], flags: i32, name: Option<&str>) -> i64 {
        let name = name.map(abs);
        ours(
            self.0
                .sendto(fd, data, flags, name.as_deref())
                .map(|n| n as i64),
        )
    }
    fn recvfrom(&mut self, fd: i32, len: usize, flags: i32) -> Result<(i64, Vec<u8>, String), i64> {
        let mut b = vec![0u8; len];
        match self.0.recvfrom(fd, &mut b, flags) {
            Ok((n, from)) => {
                b.truncate(n.min(len));
                let from = String::from_utf8_lossy(from.strip_prefix(b"/").unwrap_or(&from));
                Ok((n as i64, b, from.into_owned()))
            }
            Err(e) => Err(-(e.0 as i64)),
        }
    }
    fn poll(&mut self, fd: i32) -> i64 {
        let mut p = [PollFd {
            fd,
            events: POLLIN | POLLOUT,
            revents: 0,
        }];
        self.0.poll(&mut p, 0).unwrap();
        p[0].revents as i64
    }
    fn shutdown(&mut self, fd: i32, how: i32) -> i64 {
        ours(self.0.shutdown(fd, how).map(|()| 0))
    }
    fn getfl(&mut self, fd: i32) -> i64 {
        ours(self.0.fcntl(fd, F_GETFL, 0))
    }
    fn close(&mut self, fd: i32) {
        self.0.close(fd).unwrap();
    }
    fn mode(&mut self, name: &str) -> i64 {
        self.0
            .lstat(&abs(name))
            .map(|s| s.mode as i64)
            .unwrap_or(-1)
    }
    fn unlink(&mut self, name: &str) -> i64 {
        ours(self.0.unlink(&abs(name)).map(|()| 0))
    }
    fn touch(&mut self, name: &str) {
        let fd = self.0.open(&abs(name), O_CREAT | O_WRONLY, 0o644).unwrap();
        self.0.close(fd).unwrap();
    }
    fn mkdir(&mut self, name: &str) {
        self.0.mkdir(&abs(name), 0o755).unwrap();
    }
    fn symlink(&mut self, target: &str, name: &str) {
        self.0.symlink(target.as_bytes(), &abs(name)).unwrap();
    }
}

fn script(k: &mut dyn SockCalls) -> Log {
    let mut log: Log = Vec::new();
    macro_rules! note {
        ($what:expr, $v:expr) => {
            log.push(($what, format!("{:?}", $v)))
        };
    }
    k.touch("regular");
    k.mkdir("sub");
    let s = k.socket(SOCK_STREAM) as i32;
    note!("unbound name", k.sockname(s, false));
    note!("unconnected peer", k.sockname(s, true));
    note!("listen unbound", k.listen(s, 1));
    note!("accept unbound", k.accept4(s, 0));
    note!("bind", k.bind(s, "srv"));
    note!("bind again", k.bind(s, "srv2"));
    note!("socket file mode", k.mode("srv"));
    note!("accept before listen", k.accept4(s, 0));
    note!("listen", k.listen(s, 0));
    note!("accept empty", k.accept4(s, 0));
    note!("read listener", k.read(s, 10));
    note!("write listener", k.write(s, b"x"));
    note!("poll idle listener", k.poll(s));
    let c = k.socket(SOCK_STREAM) as i32;
    note!("connect missing", k.connect(c, "nope"));
    note!("connect regular", k.connect(c, "regular"));
    note!("connect directory", k.connect(c, "sub"));
    note!("connect", k.connect(c, "srv"));
    note!("connect again, queue full", k.connect(c, "srv"));
    note!("client peer", k.sockname(c, true));
    note!("client name", k.sockname(c, false));
    note!("poll listener with one queued", k.poll(s));
    note!("poll queued client", k.poll(c));
    note!("send before accept", k.write(c, b"hello"));
    let c2 = k.socket(SOCK_STREAM) as i32;
    note!("backlog 0 holds one", k.connect(c2, "srv"));
    let a = k.accept4(s, 0) as i32;
    note!("accepted name", k.sockname(a, false));
    note!("accepted peer", k.sockname(a, true));
    note!("accepted reads", k.read(a, 10));
    note!("accepted peer cred", k.peercred(a));
    note!("client peer cred", k.peercred(c));
    note!("listener peer cred", k.peercred(s));
    let lone = k.socket(SOCK_STREAM) as i32;
    note!("unconnected peer cred", k.peercred(lone));
    let dg = k.socket(SOCK_DGRAM) as i32;
    note!("datagram peer cred", k.peercred(dg));
    note!("accepted flags", k.getfl(a) & O_NONBLOCK as i64);
    note!("reply", k.write(a, b"hi"));
    note!("client reads", k.read(c, 10));
    let d = k.socket(SOCK_DGRAM) as i32;
    note!("datagram to stream", k.connect(d, "srv"));
    let q = k.socket(SOCK_SEQPACKET) as i32;
    note!("seqpacket to stream", k.connect(q, "srv"));
    note!("listen datagram", k.listen(d, 1));
    note!("accept datagram", k.accept4(d, 0));
    note!("connect a listener", k.connect(s, "srv"));
    note!("listen connected", k.listen(c, 1));
    let t = k.socket(SOCK_STREAM) as i32;
    k.bind(t, "stale");
    k.close(t);
    let t2 = k.socket(SOCK_STREAM) as i32;
    note!("connect a closed socket's file", k.connect(t2, "stale"));
    let nl = k.socket(SOCK_STREAM) as i32;
    k.bind(nl, "nl");
    note!("connect bound, not listening", k.connect(t2, "nl"));
    let b = k.socket(SOCK_STREAM) as i32;
    note!("bind over a file", k.bind(b, "regular"));
    note!("bind over a directory", k.bind(b, "sub"));
    note!("bind in a missing directory", k.bind(b, "nodir/x"));
    note!("bind with a trailing slash", k.bind(b, "newdir/"));
    // A listener closed with a connection queued resets it.
    let s3 = k.socket(SOCK_STREAM) as i32;
    k.bind(s3, "srv3");
    k.listen(s3, 5);
    let kc = k.socket(SOCK_STREAM) as i32;
    note!("connect srv3", k.connect(kc, "srv3"));
    note!("send to the queue", k.write(kc, b"abc"));
    k.close(s3);
    note!("orphan reads", k.read(kc, 10));
    note!("orphan sends", k.write(kc, b"z"));
    note!("orphan polls", k.poll(kc));
    note!("orphan reads again", k.read(kc, 10));
    // Unlinking the name: the socket keeps its name, connects find none.
    let s4 = k.socket(SOCK_STREAM) as i32;
    k.bind(s4, "srv4");
    k.listen(s4, 1);
    note!("unlink", k.unlink("srv4"));
    let c4 = k.socket(SOCK_STREAM) as i32;
    note!("connect unlinked", k.connect(c4, "srv4"));
    note!("name after unlink", k.sockname(s4, false));
    // Sequenced packets keep their boundaries; a symlink leads to a socket.
    let sq = k.socket(SOCK_SEQPACKET) as i32;
    note!("bind sq", k.bind(sq, "sq"));
    note!("listen sq", k.listen(sq, -1));
    k.symlink("sq", "lnk");
    let qc = k.socket(SOCK_SEQPACKET) as i32;
    note!("connect through a symlink", k.connect(qc, "lnk"));
    let qa = k.accept4(sq, SOCK_NONBLOCK) as i32;
    note!("accept4 nonblock flag", k.getfl(qa) & O_NONBLOCK as i64);
    k.write(qc, b"ab");
    k.write(qc, b"cd");
    note!("packet 1", k.read(qa, 10));
    note!("packet 2", k.read(qa, 10));
    k.symlink("gone", "dangling");
    note!("connect a dangling symlink", k.connect(c4, "dangling"));
    note!("bind onto a symlink", k.bind(c4, "lnk"));
    // A socket pair can be named, not listen; its type still counts.
    let [p0, _p1] = k.socketpair(SOCK_STREAM);
    note!("listen a pair", k.listen(p0, 1));
    note!("bind a pair", k.bind(p0, "pair"));
    note!("connect a pair", k.connect(p0, "sq"));
    note!("pair name", k.sockname(p0, false));
    note!("pair peer cred", k.peercred(p0));
    // A shut-down listener refuses connects and accepts.
    note!("shutdown listener", k.shutdown(sq, SHUT_RDWR));
    note!("poll shut listener", k.poll(sq));
    let qc2 = k.socket(SOCK_SEQPACKET) as i32;
    note!("connect shut listener", k.connect(qc2, "sq"));
    note!("accept shut listener", k.accept4(sq, 0));
    note!("datagram bind", k.bind(d, "dg"));
    note!("datagram file mode", k.mode("dg"));
    let sc = k.socket(SOCK_STREAM) as i32;
    note!("stream to a datagram socket", k.connect(sc, "dg"));
    log
}

/// Datagrams by name: sendto/recvfrom, a default peer, the receive
/// queue's limit for senders it is not connected back to, EPERM from a
/// socket connected elsewhere, a departed peer, flags.
fn dgram_script(k: &mut dyn SockCalls) -> Log {
    let mut log: Log = Vec::new();
    macro_rules! note {
        ($what:expr, $v:expr) => {
            log.push(($what, format!("{:?}", $v)))
        };
    }
    k.touch("regular");
    let srv = k.socket(SOCK_DGRAM) as i32;
    note!("bind srv", k.bind(srv, "srv"));
    let c1 = k.socket(SOCK_DGRAM) as i32;
    note!("poll unconnected", k.poll(c1));
    note!("send unconnected", k.write(c1, b"x"));
    note!("sendto srv, unnamed", k.sendto(c1, b"a", 0, Some("srv")));
    note!("poll srv with one", k.poll(srv));
    note!("recvfrom unnamed sender", k.recvfrom(srv, 10, 0));
    note!("recvfrom empty", k.recvfrom(srv, 10, 0));
    let c2 = k.socket(SOCK_DGRAM) as i32;
    k.bind(c2, "c2");
    note!("sendto srv, named", k.sendto(c2, b"bb", 0, Some("srv")));
    note!("peek", k.recvfrom(srv, 10, MSG_PEEK));
    note!("peek truncated", k.recvfrom(srv, 1, MSG_PEEK | MSG_TRUNC));
    note!("recvfrom named sender", k.recvfrom(srv, 1, 0));
    note!("sendto nothing", k.sendto(c2, b"", 0, Some("srv")));
    note!("recvfrom nothing", k.recvfrom(srv, 10, 0));
    note!("sendto missing", k.sendto(c1, b"a", 0, Some("nope")));
    note!("sendto regular", k.sendto(c1, b"a", 0, Some("regular")));
    note!("sendto oob", k.sendto(c1, b"a", MSG_OOB, Some("srv")));
    note!("connect c2", k.connect(c2, "srv"));
    note!("c2 peer", k.sockname(c2, true));
    note!("write to peer", k.write(c2, b"cc"));
    note!("recvfrom peer's", k.recvfrom(srv, 10, MSG_DONTWAIT));
    // srv is connected to nobody: 11 messages from c1 fit, then EAGAIN;
    // c2, connected to srv, sees srv's queue full in poll.
    let mut sent = Vec::new();
    for i in 0..12u8 {
        sent.push(k.sendto(c1, &[i], 0, Some("srv")));
    }
    note!("fill srv's queue", sent);
    note!("poll c2, its peer full", k.poll(c2));
    note!("poll c1, unconnected", k.poll(c1));
    note!("write c2, its peer full", k.write(c2, b"z"));
    note!("take one", k.recvfrom(srv, 10, 0));
    note!("room for one more", k.sendto(c1, b"y", 0, Some("srv")));
    // srv connected to c2 takes messages from c2 only.
    note!("connect srv to c2", k.connect(srv, "c2"));
    note!(
        "sendto srv from a stranger",
        k.sendto(c1, b"q", 0, Some("srv"))
    );
    note!("connect to srv from a stranger", k.connect(c1, "srv"));
    note!("c2 sends past the queue limit", k.write(c2, b"w"));
    let mut got = Vec::new();
    for _ in 0..13 {
        got.push(k.recvfrom(srv, 10, 0));
    }
    note!("drain srv", got);
    // Our own name.
    let me = k.socket(SOCK_DGRAM) as i32;
    k.bind(me, "me");
    note!("sendto self", k.sendto(me, b"self", 0, Some("me")));
    note!("recvfrom self", k.recvfrom(me, 10, 0));
    // A pair: unnamed both ways.
    let [p0, p1] = k.socketpair(SOCK_DGRAM);
    note!("pair peer", k.sockname(p0, true));
    note!("pair send", k.write(p0, b"p"));
    note!("pair recvfrom", k.recvfrom(p1, 10, 0));
    note!("pair sendto a name", k.sendto(p0, b"n", 0, Some("me")));
    note!(
        "pair sendto wrong type",
        k.sendto(p0, b"n", 0, Some("regular"))
    );
    // Shutdowns.
    let sh = k.socket(SOCK_DGRAM) as i32;
    k.bind(sh, "sh");
    note!("shut srv's reading", k.shutdown(sh, SHUT_RD));
    note!("sendto shut reader", k.sendto(c1, b"s", 0, Some("sh")));
    note!("shut c1's writing", k.shutdown(c1, SHUT_WR));
    note!("sendto while shut", k.sendto(c1, b"s", 0, Some("me")));
    note!("recvfrom shut reader", k.recvfrom(sh, 10, 0));
    // A peer that leaves: its messages to us go, then ECONNREFUSED once.
    let x = k.socket(SOCK_DGRAM) as i32;
    let y = k.socket(SOCK_DGRAM) as i32;
    k.bind(x, "x");
    k.bind(y, "y");
    note!("x to y", k.connect(x, "y"));
    note!("y to x", k.connect(y, "x"));
    note!("y sends x", k.write(y, b"1"));
    note!("x sends y", k.write(x, b"2"));
    k.close(y);
    note!("poll x, peer gone", k.poll(x));
    note!("x sends to the gone peer", k.write(x, b"3"));
    note!("x reads after that", k.recvfrom(x, 10, 0));
    note!("x sends again", k.write(x, b"4"));
    note!("x's peer now", k.sockname(x, true));
    note!(
        "sendto a closed socket's file",
        k.sendto(x, b"5", 0, Some("y"))
    );
    // The same by name: a peer closed, then a send by its name.
    let v = k.socket(SOCK_DGRAM) as i32;
    let w = k.socket(SOCK_DGRAM) as i32;
    k.bind(v, "v");
    k.bind(w, "w");
    k.connect(v, "w");
    k.connect(w, "v");
    note!("w sends v", k.write(w, b"6"));
    k.close(w);
    note!(
        "v sends by the gone peer's name",
        k.sendto(v, b"7", 0, Some("w"))
    );
    note!("v's peer after", k.sockname(v, true));
    note!("v reads after", k.recvfrom(v, 10, 0));
    note!("v sends without a name", k.write(v, b"8"));
    // Reconnecting away from a peer connected back, with our queue not
    // empty: our queue goes and the old peer reads ECONNRESET.
    let a = k.socket(SOCK_DGRAM) as i32;
    let b = k.socket(SOCK_DGRAM) as i32;
    k.bind(a, "a");
    k.bind(b, "b");
    k.connect(a, "b");
    k.connect(b, "a");
    note!("b sends a", k.write(b, b"m"));
    note!("a sends b", k.write(a, b"n"));
    note!("a reconnects to me", k.connect(a, "me"));
    note!("poll b after", k.poll(b));
    note!("b reads", k.recvfrom(b, 10, 0));
    note!("b reads again", k.recvfrom(b, 10, 0));
    note!("b sends", k.write(b, b"o"));
    note!("a reads", k.recvfrom(a, 10, 0));
    // Disconnecting (AF_UNSPEC): no peer; what the peer sent is dropped.
    note!("me sends a", k.sendto(me, b"d", 0, Some("a")));
    note!("a disconnects", k.disconnect(a));
    note!("a's peer after", k.sockname(a, true));
    note!("a reads after", k.recvfrom(a, 10, 0));
    note!("a sends after", k.write(a, b"e"));
    note!("a disconnects again", k.disconnect(a));
    note!("stranger sends a", k.sendto(c1, b"f", 0, Some("a")));
    // Stream and seqpacket with names.
    let l = k.socket(SOCK_STREAM) as i32;
    k.bind(l, "l");
    k.listen(l, 4);
    let sc = k.socket(SOCK_STREAM) as i32;
    note!(
        "sendto unconnected stream",
        k.sendto(sc, b"s", 0, Some("l"))
    );
    note!(
        "dgram sendto a stream name",
        k.sendto(c2, b"s", 0, Some("l"))
    );
    k.connect(sc, "l");
    note!("sendto connected stream", k.sendto(sc, b"s", 0, Some("l")));
    note!("send connected stream", k.sendto(sc, b"st", 0, None));
    let sa = k.accept4(l, 0) as i32;
    note!("stream peek", k.recvfrom(sa, 10, MSG_PEEK));
    note!("stream recvfrom", k.recvfrom(sa, 1, 0));
    note!("stream recvfrom rest", k.recvfrom(sa, 10, 0));
    note!("stream oob", k.recvfrom(sa, 10, MSG_OOB));
    // MSG_WAITALL without waiting: what there is, then EAGAIN.
    k.sendto(sc, b"wxyz", 0, None);
    let nb_all = MSG_WAITALL | MSG_DONTWAIT;
    note!("waitall, short", k.recvfrom(sa, 10, nb_all));
    note!("waitall, empty", k.recvfrom(sa, 10, nb_all));
    k.sendto(sc, b"wxyz", 0, None);
    note!("waitall, exact", k.recvfrom(sa, 4, nb_all));
    note!("stream disconnect", k.disconnect(sa));
    let us = k.socket(SOCK_STREAM) as i32;
    note!("unconnected stream disconnect", k.disconnect(us));
    let ql = k.socket(SOCK_SEQPACKET) as i32;
    k.bind(ql, "ql");
    k.listen(ql, 4);
    let qc = k.socket(SOCK_SEQPACKET) as i32;
    k.connect(qc, "ql");
    note!(
        "seqpacket sendto ignores the name",
        k.sendto(qc, b"abc", 0, Some("me"))
    );
    let qa = k.accept4(ql, 0) as i32;
    note!("seqpacket truncated", k.recvfrom(qa, 1, MSG_TRUNC));
    log
}

/// How many messages of each size fill an empty datagram or seqpacket
/// socket pair (Linux charges each its skb truesize, not its length).
fn fill_script(k: &mut dyn SockCalls) -> Log {
    let mut log: Log = Vec::new();
    for ty in [SOCK_DGRAM, SOCK_SEQPACKET] {
        for len in [0usize, 1, 100, 193, 1000, 4000, 16064, 16065, 60000, 200000] {
            let [a, b] = k.socketpair(ty);
            let mut n = 0;
            let last = loop {
                let r = k.write(a, &vec![7u8; len]);
                if r < 0 || n == 100_000 {
                    break r;
                }
                n += 1;
            };
            log.push(("messages that fit, then", format!("{ty} {len}: {n} {last}")));
            // One read makes room for one more.
            let _ = k.read(b, 1);
            log.push((
                "after a read",
                format!("{ty} {len}: {}", k.write(a, &vec![7u8; len])),
            ));
            k.close(a);
            k.close(b);
        }
    }
    log
}

/// What a script logs: each step's label and its result.
type Log = Vec<(&'static str, String)>;

/// Runs `script` on the host kernel (in a fresh temporary directory,
/// under umask 022) and on a fresh vfscale, requires the same result at
/// every step, and returns the host's log for the caller's own checks.
fn same_as_host(script: fn(&mut dyn SockCalls) -> Log) -> Log {
    // SAFETY: umask is process-wide; this sets the usual value (vfscale's
    // default) and both sides' modes are compared under it.
    let old = unsafe { libc::umask(0o022) };
    let host = script(&mut Host {
        dir: tempfile::tempdir().unwrap(),
    });
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    let (vfs, p) = setup();
    let ours = script(&mut Ours(p));
    for (h, o) in host.iter().zip(&ours) {
        assert_eq!(o, h, "vfscale (left) against the host kernel (right)");
    }
    assert_eq!(ours.len(), host.len());
    drop(vfs);
    host
}

#[test]
fn message_budgets_match_the_host() {
    let host = same_as_host(fill_script);
    assert!(host.iter().any(|(_, v)| v == "2 0: 278 -11"), "{host:?}");
}

#[test]
fn datagrams_by_name_match_the_host() {
    let host = same_as_host(dgram_script);
    assert!(
        host.contains(&("recvfrom named sender", "Ok((1, [98], \"c2\"))".into())),
        "{host:?}"
    );
}

#[test]
fn unix_names_match_the_host() {
    let host = same_as_host(script);
    // Values the script must have seen, so a host without these calls
    // cannot make it pass by failing alike.
    assert!(host.contains(&("connect", "0".into())), "{host:?}");
    assert!(
        host.contains(&("accepted reads", "Ok([104, 101, 108, 108, 111])".into())),
        "{host:?}"
    );
}

#[test]
fn connect_needs_write_permission_on_the_socket_file() {
    let (vfs, p) = setup();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.bind(s, b"/srv").unwrap();
    p.listen(s, 4).unwrap();
    p.chmod(b"/srv", 0o755).unwrap();
    let u = user(&vfs, 1000, 1000);
    let c = u.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(u.connect(c, b"/srv"), Err(Errno::EACCES));
    p.chmod(b"/srv", 0o777).unwrap();
    assert_eq!(u.connect(c, b"/srv"), Ok(()));
    let a = p.accept4(s, 0).unwrap();
    assert_eq!(u.write(c, b"x"), Ok(1));
    let mut b = [0u8; 4];
    assert_eq!(p.read(a, &mut b), Ok(1));
}

#[test]
fn names_not_built_say_so() {
    let (_vfs, p) = setup();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(p.bind(s, &[b'x'; UNIX_PATH_MAX + 1]), Err(Errno::EINVAL));
    assert_eq!(p.connect(s, b""), Err(Errno::EINVAL));
    assert_eq!(p.bind(9, b"/x"), Err(Errno::EBADF));
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.bind(f, b"/x"), Err(Errno::ENOTSOCK));
}

/// Raw host calls with an abstract (or empty) name: the address is the
/// family and the name's bytes, no terminating NUL.
fn host_named(fd: i32, name: &[u8], connect: bool) -> i64 {
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in a.sun_path.iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + name.len()) as libc::socklen_t;
    let p = (&a as *const libc::sockaddr_un).cast();
    // SAFETY: a valid address of `len` bytes.
    ret(unsafe {
        if connect {
            libc::connect(fd, p, len)
        } else {
            libc::bind(fd, p, len)
        }
    })
}

fn host_sockname(fd: i32) -> Vec<u8> {
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `a` has room for `len` bytes.
    assert_eq!(
        unsafe { libc::getsockname(fd, (&mut a as *mut libc::sockaddr_un).cast(), &mut len) },
        0
    );
    let n = len as usize - std::mem::size_of::<libc::sa_family_t>();
    a.sun_path[..n].iter().map(|&c| c as u8).collect()
}

#[test]
fn abstract_names_and_autobind_match_the_host() {
    // The host's abstract names are machine-wide: a name of our own.
    let name = format!("\0vfscale-test-{}", std::process::id()).into_bytes();
    let mut host = Vec::new();
    // SAFETY (block): plain syscalls on descriptors this test owns.
    unsafe {
        let sock = || libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0);
        let (s, s2, c, auto) = (sock(), sock(), sock(), sock());
        host.push(host_named(s, &name, false));
        host.push(host_named(s2, &name, false));
        host.push(i64::from(host_sockname(s) == name));
        host.push(host_named(c, &name, true));
        host.push(ret(libc::listen(s, 4)));
        host.push(host_named(c, &name, true));
        let a = libc::accept4(s, std::ptr::null_mut(), std::ptr::null_mut(), 0);
        host.push(i64::from(a >= 0));
        host.push(host_named(auto, b"", false));
        let got = host_sockname(auto);
        host.push(got.len() as i64);
        host.push(i64::from(
            got[0] == 0 && got[1..].iter().all(u8::is_ascii_hexdigit),
        ));
        host.push(host_named(auto, b"", false));
        for fd in [a, c, s] {
            libc::close(fd);
        }
        let late = sock();
        host.push(host_named(late, &name, true));
        host.push(host_named(s2, &name, false));
        for fd in [late, s2, auto] {
            libc::close(fd);
        }
    }
    let (_vfs, p) = setup();
    let mut ours_log = Vec::new();
    let r = |x: SysResult<()>| ours(x.map(|()| 0));
    let sock = || p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    let (s, s2, c, auto) = (sock(), sock(), sock(), sock());
    ours_log.push(r(p.bind(s, &name)));
    ours_log.push(r(p.bind(s2, &name)));
    ours_log.push(i64::from(p.getsockname(s).unwrap() == name));
    ours_log.push(r(p.connect(c, &name)));
    ours_log.push(r(p.listen(s, 4)));
    ours_log.push(r(p.connect(c, &name)));
    let a = p.accept4(s, 0);
    ours_log.push(i64::from(a.is_ok()));
    ours_log.push(r(p.bind(auto, b"")));
    let got = p.getsockname(auto).unwrap();
    ours_log.push(got.len() as i64);
    ours_log.push(i64::from(
        got[0] == 0 && got[1..].iter().all(u8::is_ascii_hexdigit),
    ));
    ours_log.push(r(p.bind(auto, b"")));
    for fd in [a.unwrap(), c, s] {
        p.close(fd).unwrap();
    }
    let late = sock();
    ours_log.push(r(p.connect(late, &name)));
    ours_log.push(r(p.bind(s2, &name)));
    assert_eq!(
        ours_log, host,
        "vfscale (left) against the host kernel (right)"
    );
    assert_eq!(host[0], 0, "the host bound the name");
    assert_eq!(host[1], -(libc::EADDRINUSE as i64));
}

#[test]
fn a_blocking_accept_waits_for_a_connect_and_a_blocking_connect_for_room() {
    let (vfs, p) = setup();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.bind(s, b"/srv").unwrap();
    p.listen(s, 0).unwrap();
    let server = p.clone_thread();
    let t = std::thread::spawn(move || {
        let a = server.accept4(s, 0).unwrap();
        let mut b = [0u8; 8];
        let n = server.read(a, &mut b).unwrap();
        (b[..n].to_vec(), server.accept4(s, 0).is_ok())
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    let c = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.connect(c, b"/srv").unwrap();
    p.write(c, b"ping").unwrap();
    // Two more: the first fills the queue (backlog 0 holds one), the
    // second waits until the server's second accept makes room.
    let c2 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.connect(c2, b"/srv").unwrap();
    let c3 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.connect(c3, b"/srv").unwrap();
    let (got, second) = t.join().unwrap();
    assert_eq!(got, b"ping");
    assert!(second);
    for fd in [c, c2, c3, s] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/srv").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// Threads connect, talk and close against one listener while it
/// accepts, then the listener closes with connections still queued:
/// every accepted connection carries its own client's bytes, every
/// connect either got through or was refused or reset, and nothing is
/// left behind.
#[test]
fn concurrent_connects_against_one_listener() {
    const CLIENTS: usize = 4;
    const EACH: usize = 200;
    let (vfs, p) = setup();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.bind(s, b"/srv").unwrap();
    p.listen(s, 8).unwrap();
    let server = p.clone_thread();
    let accepter = std::thread::spawn(move || {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..CLIENTS * EACH {
            let a = server.accept4(s, 0).unwrap();
            let mut b = [0u8; 8];
            let n = server.read(a, &mut b).unwrap();
            assert_eq!(n, 8, "a client writes its 8-byte id before waiting");
            assert!(seen.insert(u64::from_le_bytes(b)), "each id once");
            assert_eq!(server.write(a, &b), Ok(8));
            server.close(a).unwrap();
        }
        seen.len()
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let c = p.clone_thread();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let fd = c.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
                    c.connect(fd, b"/srv").unwrap();
                    let id = ((t * EACH + i) as u64).to_le_bytes();
                    assert_eq!(c.write(fd, &id), Ok(8));
                    let mut b = [0u8; 8];
                    assert_eq!(c.read(fd, &mut b), Ok(8));
                    assert_eq!(b, id, "the echo of our own id");
                    c.close(fd).unwrap();
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(accepter.join().unwrap(), CLIENTS * EACH);
    // Queued, never accepted, then the listener goes: each reads a reset.
    let queued: Vec<_> = (0..5)
        .map(|_| {
            let fd = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
            p.connect(fd, b"/srv").unwrap();
            fd
        })
        .collect();
    p.close(s).unwrap();
    for fd in queued {
        let mut b = [0u8; 1];
        assert_eq!(p.read(fd, &mut b), Err(Errno::ECONNRESET));
        p.close(fd).unwrap();
    }
    let late = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(p.connect(late, b"/srv"), Err(Errno::ECONNREFUSED));
    p.close(late).unwrap();
    p.unlink(b"/srv").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// A blocking recvfrom waits for a datagram; a blocking sendto to a
/// receiver whose queue is full (it is not connected back to us) waits
/// until the receiver takes one.
#[test]
fn blocking_datagrams_wait_for_a_message_and_for_room() {
    let (vfs, p) = setup();
    let log = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    p.bind(log, b"/log").unwrap();
    let server = p.clone_thread();
    let t = std::thread::spawn(move || {
        let mut b = [0u8; 8];
        let first = server.recvfrom(log, &mut b, 0).unwrap();
        let first = (b[..first.0].to_vec(), first.1);
        // Let the sender fill our queue and block on it, then drain.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut rest = Vec::new();
        for _ in 0..=MAX_DGRAM_QLEN + 1 {
            let (n, _) = server.recvfrom(log, &mut b, 0).unwrap();
            rest.push(b[..n].to_vec());
        }
        (first, rest)
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    let c = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    p.bind(c, b"/client").unwrap();
    assert_eq!(p.sendto(c, b"hello", 0, Some(b"/log")), Ok(5));
    std::thread::sleep(std::time::Duration::from_millis(20));
    // MAX_DGRAM_QLEN + 1 fit; the next waits for the drain.
    for i in 0..=MAX_DGRAM_QLEN + 1 {
        assert_eq!(p.sendto(c, &[i as u8], 0, Some(b"/log")), Ok(1));
    }
    let ((first, from), rest) = t.join().unwrap();
    assert_eq!(
        (first.as_slice(), from.as_slice()),
        (&b"hello"[..], &b"/client"[..])
    );
    let want: Vec<Vec<u8>> = (0..=MAX_DGRAM_QLEN + 1).map(|i| vec![i as u8]).collect();
    assert_eq!(rest, want, "every datagram once, in order");
    for fd in [c, log] {
        p.close(fd).unwrap();
    }
    for name in [&b"/log"[..], b"/client"] {
        p.unlink(name).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}

/// Senders, each with its own name, send numbered datagrams to one
/// receiver while it reads (blocking both ways, the queue limit and the
/// senders' budgets in play): every datagram arrives once, each sender's
/// in order, under its sender's name; nothing is left behind.
#[test]
fn concurrent_datagram_senders_to_one_receiver() {
    const SENDERS: usize = 4;
    const EACH: usize = 500;
    let (vfs, p) = setup();
    let log = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    p.bind(log, b"/log").unwrap();
    let server = p.clone_thread();
    let receiver = std::thread::spawn(move || {
        let mut next = [0usize; SENDERS];
        let mut b = [0u8; 64];
        for _ in 0..SENDERS * EACH {
            let (n, from) = server.recvfrom(log, &mut b, 0).unwrap();
            let (t, i) = (
                b[0] as usize,
                u32::from_le_bytes(b[1..5].try_into().unwrap()),
            );
            assert_eq!(n, 5 + t, "the length its sender gave it");
            assert_eq!(from, format!("/s{t}").into_bytes(), "the sender's name");
            assert_eq!(i as usize, next[t], "sender {t}'s datagrams in order");
            next[t] += 1;
        }
        next
    });
    let senders: Vec<_> = (0..SENDERS)
        .map(|t| {
            let c = p.clone_thread();
            std::thread::spawn(move || {
                let fd = c.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
                c.bind(fd, format!("/s{t}").as_bytes()).unwrap();
                for i in 0..EACH as u32 {
                    let mut m = vec![t as u8];
                    m.extend_from_slice(&i.to_le_bytes());
                    m.resize(5 + t, 0xee);
                    assert_eq!(c.sendto(fd, &m, 0, Some(b"/log")), Ok(m.len()));
                }
                fd
            })
        })
        .collect();
    let fds: Vec<_> = senders.into_iter().map(|s| s.join().unwrap()).collect();
    assert_eq!(receiver.join().unwrap(), [EACH; SENDERS]);
    let mut b = [0u8; 8];
    assert_eq!(
        p.recvfrom(log, &mut b, MSG_DONTWAIT),
        Err(Errno::EAGAIN),
        "nothing extra"
    );
    for (t, fd) in fds.into_iter().enumerate() {
        p.close(fd).unwrap();
        p.unlink(format!("/s{t}").as_bytes()).unwrap();
    }
    p.close(log).unwrap();
    p.unlink(b"/log").unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// A blocking MSG_WAITALL read of a stream socket waits until its buffer
/// is full, across several writes; EOF ends it with what it has.
#[test]
fn a_blocking_waitall_read_fills_its_buffer() {
    let (vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let reader = p.clone_thread();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 6];
        let full = reader.recvfrom(b, &mut buf, MSG_WAITALL).unwrap().0;
        let first = buf;
        let at_eof = reader.recvfrom(b, &mut buf, MSG_WAITALL).unwrap().0;
        (full, first, at_eof, buf[..at_eof].to_vec())
    });
    for part in [&b"ab"[..], b"cd", b"ef", b"gh"] {
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert_eq!(p.write(a, part), Ok(2));
    }
    p.close(a).unwrap();
    let (full, first, at_eof, rest) = t.join().unwrap();
    assert_eq!((full, &first), (6, b"abcdef"));
    assert_eq!(
        (at_eof, rest.as_slice()),
        (2, &b"gh"[..]),
        "EOF ends the wait"
    );
    p.close(b).unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// SO_PEERCRED carries who connected, listened or made the pair: the
/// accepted socket sees the client's process and ids, the client the
/// listener's as of its listen(), a pair its maker's.
#[test]
fn peer_credentials_name_the_other_process() {
    let (vfs, root) = setup();
    let s = root.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    root.bind(s, b"/srv").unwrap();
    root.chmod(b"/srv", 0o777).unwrap();
    root.listen(s, 4).unwrap();
    let u = user(&vfs, 1000, 100);
    let c = u.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    u.connect(c, b"/srv").unwrap();
    let a = root.accept4(s, 0).unwrap();
    let (them, us) = (root.peer_cred(a).unwrap(), u.peer_cred(c).unwrap());
    assert_eq!((them.uid, them.gid), (1000, 100), "the client's ids");
    assert_eq!((us.uid, us.gid), (0, 0), "the listener's ids");
    assert!(
        them.pid > 0 && us.pid > 0 && them.pid != us.pid,
        "{them:?} {us:?}"
    );
    assert_eq!(root.peer_cred(s), Ok(us), "a listener: its own listen()'s");
    let [p0, p1] = u.socketpair(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    assert_eq!(u.peer_cred(p0), u.peer_cred(p1));
    assert_eq!(
        u.peer_cred(p0).map(|c| (c.uid, c.pid)),
        Ok((1000, them.pid))
    );
    let lone = u.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!(u.peer_cred(lone), Ok(Ucred::NONE));
    assert_eq!(u.peer_cred(99), Err(Errno::EBADF));
    drop(vfs);
}

fn set_int(p: &Process, fd: Fd, name: i32, v: i32) {
    p.setsockopt(fd, SOL_SOCKET, name, &v.to_le_bytes())
        .unwrap();
}

/// SO_RCVLOWAT: a blocking stream read waits until that many bytes are
/// there (or its timeout, EOF or an error), then takes all it can.
#[test]
fn a_blocking_read_waits_for_the_low_water_mark() {
    let (vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    set_int(&p, b, SO_RCVLOWAT, 10);
    let reader = p.clone_thread();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        reader.read(b, &mut buf).map(|n| buf[..n].to_vec())
    });
    p.write(a, b"12345").unwrap();
    tick();
    assert!(!t.is_finished(), "5 bytes are below the mark");
    p.write(a, b"6789012").unwrap();
    assert_eq!(
        with_timeout(10, move || t.join().unwrap()),
        Ok(b"123456789012".to_vec())
    );
    // End of file ends the wait with what there is.
    p.write(a, b"xy").unwrap();
    p.close(a).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(p.read(b, &mut buf), Ok(2));
    p.close(b).unwrap();
    drop(p);
    assert_baseline(&vfs);
}

/// Raising SO_SNDBUF wakes a writer blocked on the old budget (Linux's
/// sk_write_space), which then sends into the new room.
#[test]
fn raising_the_send_buffer_wakes_a_blocked_writer() {
    let (vfs, p) = setup();
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        let [a, b] = p.socketpair(AF_UNIX, ty, 0).unwrap();
        set_int(&p, a, SO_SNDBUF, 0);
        while p.sendto(a, &[1u8; 1000], MSG_DONTWAIT, None).is_ok() {}
        let writer = p.clone_thread();
        let t = std::thread::spawn(move || writer.write(a, &[2u8; 1000]));
        tick();
        assert!(!t.is_finished(), "type {ty}: the budget is spent");
        set_int(&p, a, SO_SNDBUF, 1 << 20);
        assert_eq!(with_timeout(10, move || t.join().unwrap()), Ok(1000));
        for fd in [a, b] {
            p.close(fd).unwrap();
        }
    }
    drop(p);
    assert_baseline(&vfs);
}

/// The timeouts: a blocking call that cannot progress returns EAGAIN
/// after SO_RCVTIMEO / SO_SNDTIMEO, or what it moved; a negative one
/// makes it return at once. (The kernel comparison, sockopt_kernel.rs,
/// checks the same against the host.)
#[test]
fn socket_timeouts_end_blocking_calls() {
    let (vfs, p) = setup();
    let tv = |sec: i64, usec: i64| [sec.to_le_bytes(), usec.to_le_bytes()].concat();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv(0, 30_000))
        .unwrap();
    let mut buf = [0u8; 8];
    let t = std::time::Instant::now();
    assert_eq!(p.read(b, &mut buf), Err(Errno::EAGAIN));
    assert!(t.elapsed() >= std::time::Duration::from_millis(30));
    p.setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv(-1, 0))
        .unwrap();
    assert_eq!(p.read(b, &mut buf), Err(Errno::EAGAIN));
    // A send past the budget returns the bytes that went.
    set_int(&p, a, SO_SNDBUF, 0);
    p.setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &tv(0, 10_000))
        .unwrap();
    assert_eq!(p.write(a, &[0u8; 50_000]), Ok(4480));
    assert_eq!(p.write(a, b"more"), Err(Errno::EAGAIN));
    for fd in [a, b] {
        p.close(fd).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}

/// SO_SNDTIMEO bounds each wait of a blocking stream send, not the whole
/// call (Linux's sock_alloc_send_pskb starts it afresh per segment): with
/// the smallest budget and a 300 ms timeout, a reader that drains a
/// segment every 40 ms lets a send of 20 segments (~0.8 s in all)
/// through whole. A reader that stops leaves the send's count so far once
/// one wait runs out.
#[test]
fn send_timeout_restarts_for_each_segment() {
    let (vfs, p) = setup();
    let tv = |sec: i64, usec: i64| [sec.to_le_bytes(), usec.to_le_bytes()].concat();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    set_int(&p, a, SO_SNDBUF, 0);
    p.setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &tv(0, 300_000))
        .unwrap();
    // One segment fills the smallest budget (stream_segment).
    let total = 20 * 4480;
    let reader = p.clone_thread();
    let stop_after = total;
    let t = std::thread::spawn(move || {
        let mut got = 0;
        let mut buf = vec![0u8; 8192];
        while got < stop_after {
            std::thread::sleep(std::time::Duration::from_millis(40));
            match reader.recvfrom(b, &mut buf, MSG_DONTWAIT) {
                Ok((n, _)) => got += n,
                Err(Errno::EAGAIN) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
        got
    });
    let start = std::time::Instant::now();
    assert_eq!(p.write(a, &vec![7u8; total]), Ok(total));
    assert!(
        start.elapsed() > std::time::Duration::from_millis(300),
        "the send waited for the reader more than one timeout in all"
    );
    assert_eq!(with_timeout(10, move || t.join().unwrap()), total);
    // Nobody reads now: one full budget goes, then one timeout ends it.
    assert_eq!(p.write(a, &vec![7u8; total]), Ok(4480));
    for fd in [a, b] {
        p.close(fd).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}
