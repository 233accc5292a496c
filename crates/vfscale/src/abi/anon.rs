//! ABI of the anonymous-object calls: fcntl commands, socket, eventfd,
//! memfd and poll constants, and the `pollfd` record. Values are Linux
//! x86-64/aarch64 ones; the unit test checks them against `libc`.

// fcntl(2) commands.
pub const F_DUPFD: i32 = 0;
pub const F_GETFD: i32 = 1;
pub const F_SETFD: i32 = 2;
pub const F_GETFL: i32 = 3;
pub const F_SETFL: i32 = 4;
// Linux 6.10 and 6.12 (`uapi/linux/fcntl.h`; not in the `libc` crate):
// whether an fd names the same open file description, and whether the
// open that made the description created its file.
pub const F_DUPFD_QUERY: i32 = 1027;
pub const F_CREATED_QUERY: i32 = 1028;
pub const F_DUPFD_CLOEXEC: i32 = 1030;
pub const F_SETPIPE_SZ: i32 = 1031;
pub const F_GETPIPE_SZ: i32 = 1032;
pub const F_ADD_SEALS: i32 = 1033;
pub const F_GET_SEALS: i32 = 1034;
// An inode's write-life hint (`uapi/linux/fcntl.h`; not in `libc`). Linux
// passes the hint through a pointer to a u64; vfscale's `fcntl` takes it
// as the argument and returns it as the result (docs/COMPATIBILITY.md).
pub const F_GET_RW_HINT: i32 = 1035;
pub const F_SET_RW_HINT: i32 = 1036;
/// RWH_WRITE_LIFE_NOT_SET (0) to RWH_WRITE_LIFE_EXTREME (5): the valid
/// hints.
pub const RWH_WRITE_LIFE_EXTREME: u64 = 5;
// Seals (F_ADD_SEALS; anon/memfd.rs).
pub const F_SEAL_SEAL: u32 = 0x1;
pub const F_SEAL_SHRINK: u32 = 0x2;
pub const F_SEAL_GROW: u32 = 0x4;
pub const F_SEAL_WRITE: u32 = 0x8;
pub const F_SEAL_FUTURE_WRITE: u32 = 0x10;
pub const F_SEAL_EXEC: u32 = 0x20;
pub const F_ALL_SEALS: u32 =
    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_EXEC;

/// Writes up to this size to a pipe are atomic.
pub const PIPE_BUF: usize = 4096;
/// A new pipe's capacity (16 pages).
pub const PIPE_DEF_SIZE: usize = 65536;
/// /proc/sys/fs/pipe-max-size: the most a non-root caller may ask for.
pub const PIPE_MAX_SIZE: usize = 1 << 20;

// socket(2) / socketpair(2).
pub const AF_UNIX: i32 = 1;
/// Internet families: socket() is EAFNOSUPPORT in vfscale
/// (docs/COMPATIBILITY.md); socketpair() is EOPNOTSUPP, as Linux's.
pub const AF_INET: i32 = 2;
pub const AF_INET6: i32 = 10;
pub const SOCK_STREAM: i32 = 1;
pub const SOCK_DGRAM: i32 = 2;
pub const SOCK_SEQPACKET: i32 = 5;
/// AF_UNIX treats SOCK_RAW as SOCK_DGRAM (Linux's unix_create).
pub const SOCK_RAW: i32 = 3;
pub const SOCK_NONBLOCK: i32 = 0o4000;
pub const SOCK_CLOEXEC: i32 = 0o2000000;
pub const SOCK_TYPE_MASK: i32 = 0xf;
/// net.core.somaxconn's default: the largest listen() backlog.
pub const SOMAXCONN: u32 = 4096;
/// net.unix.max_dgram_qlen's default: a datagram socket's queue is full
/// for senders it is not connected back to once it holds more than this.
pub const MAX_DGRAM_QLEN: usize = 10;
/// sizeof(sockaddr_un.sun_path): the longest socket address.
pub const UNIX_PATH_MAX: usize = 108;
// shutdown(2).
pub const SHUT_RD: i32 = 0;
pub const SHUT_WR: i32 = 1;
pub const SHUT_RDWR: i32 = 2;
// send(2)/recv(2) flags.
pub const MSG_OOB: i32 = 1;
pub const MSG_PEEK: i32 = 2;
pub const MSG_TRUNC: i32 = 0x20;
pub const MSG_DONTWAIT: i32 = 0x40;
pub const MSG_WAITALL: i32 = 0x100;
pub const MSG_NOSIGNAL: i32 = 0x4000;
/// recvmsg's out flag: received files were dropped (no room for them).
pub const MSG_CTRUNC: i32 = 8;
/// recvmsg: received descriptors get FD_CLOEXEC.
pub const MSG_CMSG_CLOEXEC: i32 = 0x4000_0000;

// getsockopt(2)/setsockopt(2): the socket level and its options vfscale
// answers (others are ENOPROTOOPT; docs/COMPATIBILITY.md).
pub const SOL_SOCKET: i32 = 1;
pub const SO_DEBUG: i32 = 1;
pub const SO_REUSEADDR: i32 = 2;
pub const SO_TYPE: i32 = 3;
pub const SO_ERROR: i32 = 4;
pub const SO_DONTROUTE: i32 = 5;
pub const SO_BROADCAST: i32 = 6;
pub const SO_SNDBUF: i32 = 7;
pub const SO_RCVBUF: i32 = 8;
pub const SO_KEEPALIVE: i32 = 9;
pub const SO_OOBINLINE: i32 = 10;
pub const SO_NO_CHECK: i32 = 11;
pub const SO_PRIORITY: i32 = 12;
/// struct linger: l_onoff and l_linger (seconds), two ints.
pub const SO_LINGER: i32 = 13;
pub const SO_BSDCOMPAT: i32 = 14;
pub const SO_REUSEPORT: i32 = 15;
pub const SO_PASSCRED: i32 = 16;
pub const SO_PEERCRED: i32 = 17;
pub const SO_RCVLOWAT: i32 = 18;
pub const SO_SNDLOWAT: i32 = 19;
/// The timeouts as struct timeval (16 bytes: seconds, microseconds); the
/// _NEW options take the same 16 bytes on 64-bit Linux.
pub const SO_RCVTIMEO_OLD: i32 = 20;
pub const SO_SNDTIMEO_OLD: i32 = 21;
pub const SO_RCVTIMEO: i32 = SO_RCVTIMEO_OLD;
pub const SO_SNDTIMEO: i32 = SO_SNDTIMEO_OLD;
pub const SO_ACCEPTCONN: i32 = 30;
pub const SO_SNDBUFFORCE: i32 = 32;
pub const SO_RCVBUFFORCE: i32 = 33;
pub const SO_MARK: i32 = 36;
pub const SO_PROTOCOL: i32 = 38;
pub const SO_DOMAIN: i32 = 39;
/// Where MSG_PEEK starts reading (an int; negative: off).
pub const SO_PEEK_OFF: i32 = 42;
/// A number that names the socket (a u64, never 0).
pub const SO_COOKIE: i32 = 57;
/// The peer's supplementary groups (gid_t each).
pub const SO_PEERGROUPS: i32 = 59;
pub const SO_RCVTIMEO_NEW: i32 = 66;
pub const SO_SNDTIMEO_NEW: i32 = 67;
pub const SO_BUF_LOCK: i32 = 72;

// Control messages (struct cmsghdr: a 16-byte header, data aligned to 8).
/// The credentials control message type (struct ucred, 12 bytes).
pub const SCM_CREDENTIALS: i32 = 2;
/// The file-descriptor control message type.
pub const SCM_RIGHTS: i32 = 1;
/// sizeof(struct cmsghdr) on 64-bit Linux.
pub const CMSG_HDR: usize = 16;

/// CMSG_LEN: a control message's length with `data` bytes.
pub const fn cmsg_len(data: usize) -> usize {
    CMSG_HDR + data
}

/// CMSG_SPACE: the room a control message with `data` bytes takes in a
/// control buffer (its length rounded up to 8).
pub const fn cmsg_space(data: usize) -> usize {
    CMSG_HDR + data.next_multiple_of(8)
}

// eventfd(2).
pub const EFD_SEMAPHORE: i32 = 1;
pub const EFD_NONBLOCK: i32 = 0o4000;
pub const EFD_CLOEXEC: i32 = 0o2000000;

// memfd_create(2).
pub const MFD_CLOEXEC: u32 = 1;
pub const MFD_ALLOW_SEALING: u32 = 2;
/// A memfd without execute bits, sealed against getting them (and open to
/// further seals).
pub const MFD_NOEXEC_SEAL: u32 = 8;
/// A memfd with execute bits (what a memfd without either flag gets, with
/// the vm.memfd_noexec sysctl at its default).
pub const MFD_EXEC: u32 = 0x10;
/// Longest memfd name (NAME_MAX minus the "memfd:" prefix).
pub const MFD_NAME_MAX: usize = 249;

// poll(2) events.
pub const POLLIN: i16 = 0x1;
pub const POLLPRI: i16 = 0x2;
pub const POLLOUT: i16 = 0x4;
pub const POLLERR: i16 = 0x8;
pub const POLLHUP: i16 = 0x10;
pub const POLLNVAL: i16 = 0x20;
pub const POLLRDNORM: i16 = 0x40;
pub const POLLWRNORM: i16 = 0x100;
pub const POLLRDHUP: i16 = 0x2000;

/// What recvmsg(2) took: the byte count (the whole message's with
/// MSG_TRUNC), the sender's sun_path bytes (empty if it has none), the
/// sender's credentials (SCM_CREDENTIALS: when the receiver has
/// SO_PASSCRED and its control buffer had room for them), the new
/// descriptors of the files the message carried (SCM_RIGHTS), and the out
/// flags (MSG_TRUNC: a message was cut short; MSG_CTRUNC: control data
/// was dropped for want of room).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecvMsg {
    pub len: usize,
    pub name: Vec<u8>,
    pub creds: Option<Ucred>,
    pub fds: Vec<super::Fd>,
    pub flags: i32,
}

/// getsockopt(SO_PEERCRED)'s answer (struct ucred): the peer's process
/// id and effective ids when it connected, listened or made the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ucred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

impl Ucred {
    /// No peer credentials (an unconnected socket): pid 0, ids -1.
    pub const NONE: Ucred = Ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    /// What a receiver with SO_PASSCRED reads for a message sent with no
    /// credentials: pid 0, the overflow ids (65534; from_kuid_munged of
    /// an invalid id).
    pub const NOBODY: Ucred = Ucred {
        pid: 0,
        uid: 65534,
        gid: 65534,
    };
    /// The bytes of a struct ucred (pid, uid, gid, little-endian).
    pub fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.pid.to_le_bytes());
        b[4..8].copy_from_slice(&self.uid.to_le_bytes());
        b[8..].copy_from_slice(&self.gid.to_le_bytes());
        b
    }
}

/// One entry of poll(2)'s array (`struct pollfd`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

const _: () = assert!(core::mem::size_of::<PollFd>() == 8);

// epoll(7).
pub const EPOLL_CLOEXEC: i32 = 0o2000000;
pub const EPOLL_CTL_ADD: i32 = 1;
pub const EPOLL_CTL_DEL: i32 = 2;
pub const EPOLL_CTL_MOD: i32 = 3;
pub const EPOLLIN: u32 = 0x1;
pub const EPOLLPRI: u32 = 0x2;
pub const EPOLLOUT: u32 = 0x4;
pub const EPOLLERR: u32 = 0x8;
pub const EPOLLHUP: u32 = 0x10;
pub const EPOLLRDNORM: u32 = 0x40;
pub const EPOLLRDBAND: u32 = 0x80;
pub const EPOLLWRNORM: u32 = 0x100;
pub const EPOLLWRBAND: u32 = 0x200;
pub const EPOLLMSG: u32 = 0x400;
pub const EPOLLRDHUP: u32 = 0x2000;
/// Wake one of the epolls that watch the file, not all (accepted; every
/// waiter is woken here, which the flag allows).
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
/// Keeps the system awake (needs CAP_BLOCK_SUSPEND, else silently
/// dropped, as Linux; there is nothing to keep awake here).
pub const EPOLLWAKEUP: u32 = 1 << 29;
/// Reports the file once, then disables it until EPOLL_CTL_MOD.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Edge-triggered: reported once per wake-up of the file, not while ready.
pub const EPOLLET: u32 = 1 << 31;
/// Most events one epoll_wait may ask for (Linux's EP_MAX_EVENTS:
/// INT_MAX over the 12-byte packed `struct epoll_event`).
pub const EP_MAX_EVENTS: usize = i32::MAX as usize / 12;

/// One `struct epoll_event`: the events and the caller's data word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpollEvent {
    pub events: u32,
    pub data: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_constants_match_the_host_abi() {
        assert_eq!(F_DUPFD, libc::F_DUPFD);
        assert_eq!(F_GETFD, libc::F_GETFD);
        assert_eq!(F_SETFD, libc::F_SETFD);
        assert_eq!(F_GETFL, libc::F_GETFL);
        assert_eq!(F_SETFL, libc::F_SETFL);
        assert_eq!(F_DUPFD_CLOEXEC, libc::F_DUPFD_CLOEXEC);
        assert_eq!(F_SETPIPE_SZ, libc::F_SETPIPE_SZ);
        assert_eq!(F_GETPIPE_SZ, libc::F_GETPIPE_SZ);
        assert_eq!(F_ADD_SEALS, libc::F_ADD_SEALS);
        assert_eq!(F_GET_SEALS, libc::F_GET_SEALS);
        assert_eq!(F_SEAL_SEAL, libc::F_SEAL_SEAL as u32);
        assert_eq!(F_SEAL_SHRINK, libc::F_SEAL_SHRINK as u32);
        assert_eq!(F_SEAL_GROW, libc::F_SEAL_GROW as u32);
        assert_eq!(F_SEAL_WRITE, libc::F_SEAL_WRITE as u32);
        assert_eq!(F_SEAL_FUTURE_WRITE, libc::F_SEAL_FUTURE_WRITE as u32);
        assert_eq!(PIPE_BUF, libc::PIPE_BUF);
        assert_eq!(AF_UNIX, libc::AF_UNIX);
        assert_eq!(AF_INET, libc::AF_INET);
        assert_eq!(SOCK_STREAM, libc::SOCK_STREAM);
        assert_eq!(SOCK_DGRAM, libc::SOCK_DGRAM);
        assert_eq!(SOCK_SEQPACKET, libc::SOCK_SEQPACKET);
        assert_eq!(SOCK_NONBLOCK, libc::SOCK_NONBLOCK);
        assert_eq!(SOCK_CLOEXEC, libc::SOCK_CLOEXEC);
        assert_eq!(SHUT_RD, libc::SHUT_RD);
        assert_eq!(SHUT_WR, libc::SHUT_WR);
        assert_eq!(SHUT_RDWR, libc::SHUT_RDWR);
        assert_eq!(MSG_OOB, libc::MSG_OOB);
        assert_eq!(MSG_PEEK, libc::MSG_PEEK);
        assert_eq!(MSG_TRUNC, libc::MSG_TRUNC);
        assert_eq!(MSG_DONTWAIT, libc::MSG_DONTWAIT);
        assert_eq!(MSG_NOSIGNAL, libc::MSG_NOSIGNAL);
        assert_eq!(MSG_WAITALL, libc::MSG_WAITALL);
        assert_eq!(EFD_SEMAPHORE, libc::EFD_SEMAPHORE);
        assert_eq!(EFD_NONBLOCK, libc::EFD_NONBLOCK);
        assert_eq!(EFD_CLOEXEC, libc::EFD_CLOEXEC);
        assert_eq!(MFD_CLOEXEC, libc::MFD_CLOEXEC);
        assert_eq!(MFD_ALLOW_SEALING, libc::MFD_ALLOW_SEALING);
        assert_eq!(MFD_NOEXEC_SEAL, libc::MFD_NOEXEC_SEAL);
        assert_eq!(MFD_EXEC, libc::MFD_EXEC);
        assert_eq!(POLLIN, libc::POLLIN);
        assert_eq!(POLLPRI, libc::POLLPRI);
        assert_eq!(POLLOUT, libc::POLLOUT);
        assert_eq!(POLLERR, libc::POLLERR);
        assert_eq!(POLLHUP, libc::POLLHUP);
        assert_eq!(POLLNVAL, libc::POLLNVAL);
        assert_eq!(POLLRDNORM, libc::POLLRDNORM);
        assert_eq!(POLLWRNORM, libc::POLLWRNORM);
        assert_eq!(POLLRDHUP, libc::POLLRDHUP);
        assert_eq!(EPOLL_CLOEXEC, libc::EPOLL_CLOEXEC);
        assert_eq!(EPOLL_CTL_ADD, libc::EPOLL_CTL_ADD);
        assert_eq!(EPOLL_CTL_DEL, libc::EPOLL_CTL_DEL);
        assert_eq!(EPOLL_CTL_MOD, libc::EPOLL_CTL_MOD);
        for (ours, host) in [
            (EPOLLIN, libc::EPOLLIN),
            (EPOLLPRI, libc::EPOLLPRI),
            (EPOLLOUT, libc::EPOLLOUT),
            (EPOLLERR, libc::EPOLLERR),
            (EPOLLHUP, libc::EPOLLHUP),
            (EPOLLRDNORM, libc::EPOLLRDNORM),
            (EPOLLRDBAND, libc::EPOLLRDBAND),
            (EPOLLWRNORM, libc::EPOLLWRNORM),
            (EPOLLWRBAND, libc::EPOLLWRBAND),
            (EPOLLMSG, libc::EPOLLMSG),
            (EPOLLRDHUP, libc::EPOLLRDHUP),
            (EPOLLEXCLUSIVE, libc::EPOLLEXCLUSIVE),
            (EPOLLWAKEUP, libc::EPOLLWAKEUP),
            (EPOLLONESHOT, libc::EPOLLONESHOT),
            (EPOLLET, libc::EPOLLET),
        ] {
            assert_eq!(ours, host as u32);
        }
        assert_eq!(core::mem::size_of::<libc::epoll_event>(), 12);
        assert_eq!(
            core::mem::size_of::<PollFd>(),
            core::mem::size_of::<libc::pollfd>()
        );
        assert_eq!(crate::abi::Errno::EMSGSIZE.0, libc::EMSGSIZE);
        assert_eq!(crate::abi::Errno::EAFNOSUPPORT.0, libc::EAFNOSUPPORT);
        assert_eq!(crate::abi::Errno::ECONNREFUSED.0, libc::ECONNREFUSED);
        assert_eq!(crate::abi::Errno::ESOCKTNOSUPPORT.0, libc::ESOCKTNOSUPPORT);
        assert_eq!(crate::abi::Errno::EPROTONOSUPPORT.0, libc::EPROTONOSUPPORT);
        assert_eq!(crate::abi::Errno::EPROTOTYPE.0, libc::EPROTOTYPE);
    }
}
