//! `ProcessApi`: the POSIX-style, path-and-fd interface, named after the
//! syscalls. It is implemented by vfscale's `Process` and by the global-lock
//! reference model (`vfscale-model`), so property tests and the bench drive
//! both through one interface.
//!
//! Conventions (as the Linux syscalls):
//! - paths are byte strings; a NUL byte inside one is EINVAL, an empty path is
//!   ENOENT unless AT_EMPTY_PATH; a component over 255 bytes or a path of
//!   4096 bytes or more is ENAMETOOLONG;
//! - `dirfd` is a descriptor or AT_FDCWD; `u32::MAX` as a uid/gid means "no
//!   change" (the C API's `(uid_t)-1`);
//! - every error is the errno Linux returns for the same call.

use crate::abi::*;

pub use crate::abi::Fd;

/// The per-process system-call interface.
pub trait ProcessApi: Send {
    // ---- open files ----
    fn openat(&self, dirfd: Fd, path: &[u8], flags: i32, mode: u32) -> SysResult<Fd>;
    /// openat2(2): every argument checked strictly, and the walk scoped by
    /// `how.resolve` (RESOLVE_BENEATH, RESOLVE_IN_ROOT, RESOLVE_NO_XDEV,
    /// RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, RESOLVE_CACHED).
    fn openat2(&self, _dirfd: Fd, _path: &[u8], _how: &OpenHow) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    fn close(&self, fd: Fd) -> SysResult<()>;
    fn close_range(&self, first: u32, last: u32, flags: u32) -> SysResult<()>;
    fn dup(&self, fd: Fd) -> SysResult<Fd>;
    fn dup2(&self, oldfd: Fd, newfd: Fd) -> SysResult<Fd>;
    fn dup3(&self, oldfd: Fd, newfd: Fd, flags: i32) -> SysResult<Fd>;

    // ---- data ----
    fn read(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize>;
    fn write(&self, fd: Fd, buf: &[u8]) -> SysResult<usize>;
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize>;
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize>;
    fn readv(&self, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize>;
    fn writev(&self, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize>;
    /// posix_fadvise(2) (the fadvise64 syscall: the error as an errno):
    /// advice is checked and taken as read.
    fn posix_fadvise(&self, _fd: Fd, _offset: i64, _len: i64, _advice: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// readahead(2): a regular file open for reading.
    fn readahead(&self, _fd: Fd, _offset: i64, _count: usize) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// preadv(2): readv at `offset` (EINVAL below 0; the file position is
    /// not used or moved).
    fn preadv(&self, fd: Fd, bufs: &mut [&mut [u8]], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.preadv2(fd, bufs, offset, 0)
    }
    /// pwritev(2): writev at `offset`, as preadv.
    fn pwritev(&self, fd: Fd, bufs: &[&[u8]], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.pwritev2(fd, bufs, offset, 0)
    }
    /// preadv2(2): preadv, or readv when `offset` is -1, with RWF_* flags
    /// (RWF_NOWAIT: a pipe or socket does not wait; RWF_HIPRI, RWF_DSYNC
    /// and RWF_SYNC are accepted; RWF_ATOMIC and RWF_DONTCACHE are
    /// EOPNOTSUPP, as on tmpfs).
    fn preadv2(
        &self,
        _fd: Fd,
        _bufs: &mut [&mut [u8]],
        _offset: i64,
        _flags: i32,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// pwritev2(2): as preadv2, for writing; RWF_APPEND appends this
    /// write, RWF_NOAPPEND does not (on an O_APPEND file).
    fn pwritev2(&self, _fd: Fd, _bufs: &[&[u8]], _offset: i64, _flags: i32) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn lseek(&self, fd: Fd, offset: i64, whence: i32) -> SysResult<i64>;
    fn ftruncate(&self, fd: Fd, length: i64) -> SysResult<()>;
    fn truncate(&self, path: &[u8], length: i64) -> SysResult<()>;
    fn fsync(&self, fd: Fd) -> SysResult<()>;
    fn fdatasync(&self, fd: Fd) -> SysResult<()>;

    // ---- attributes ----
    fn fstat(&self, fd: Fd) -> SysResult<Stat>;
    fn fstatat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat>;
    fn statx(&self, dirfd: Fd, path: &[u8], flags: i32, mask: u32) -> SysResult<Statx>;
    fn faccessat(&self, dirfd: Fd, path: &[u8], mode: i32, flags: i32) -> SysResult<()>;
    fn fchmodat(&self, dirfd: Fd, path: &[u8], mode: u32, flags: i32) -> SysResult<()>;
    fn fchmod(&self, fd: Fd, mode: u32) -> SysResult<()>;
    fn fchownat(&self, dirfd: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> SysResult<()>;
    fn fchown(&self, fd: Fd, uid: u32, gid: u32) -> SysResult<()>;
    /// `times` = None sets both to now; otherwise [atime, mtime], each may be
    /// `Timespec::NOW` or `Timespec::OMIT`.
    fn utimensat(
        &self,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()>;
    fn futimens(&self, fd: Fd, times: Option<[Timespec; 2]>) -> SysResult<()>;
    fn statfs(&self, path: &[u8]) -> SysResult<Statfs>;
    fn fstatfs(&self, fd: Fd) -> SysResult<Statfs>;
    /// syncfs(2): data lives in memory, so this only completes deferred
    /// frees (statfs afterwards reflects every earlier close and unlink).
    /// Default: ENOSYS.
    fn syncfs(&self, _fd: Fd) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }

    // ---- names ----
    fn mkdirat(&self, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()>;
    fn mknodat(&self, dirfd: Fd, path: &[u8], mode: u32, dev: u64) -> SysResult<()>;
    fn unlinkat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()>;
    fn renameat2(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()>;
    fn linkat(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()>;
    fn symlinkat(&self, target: &[u8], newdirfd: Fd, linkpath: &[u8]) -> SysResult<()>;
    /// Copies the link text into `buf` (truncating silently, as Linux) and
    /// returns the bytes copied.
    fn readlinkat(&self, dirfd: Fd, path: &[u8], buf: &mut [u8]) -> SysResult<usize>;
    /// Fills `buf` with `linux_dirent64` records; 0 at end of directory.
    fn getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize>;

    // ---- extended attributes (default: ENOSYS, for implementations
    // without them, such as the reference model) ----
    /// setxattr(2): XATTR_CREATE / XATTR_REPLACE in `flags`.
    fn setxattr(&self, _path: &[u8], _name: &[u8], _value: &[u8], _flags: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    fn lsetxattr(&self, _path: &[u8], _name: &[u8], _value: &[u8], _flags: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    fn fsetxattr(&self, _fd: Fd, _name: &[u8], _value: &[u8], _flags: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// getxattr(2): with an empty `buf`, the value's size.
    fn getxattr(&self, _path: &[u8], _name: &[u8], _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn lgetxattr(&self, _path: &[u8], _name: &[u8], _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn fgetxattr(&self, _fd: Fd, _name: &[u8], _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// listxattr(2): NUL-terminated names; with an empty `buf`, the size.
    fn listxattr(&self, _path: &[u8], _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn llistxattr(&self, _path: &[u8], _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn flistxattr(&self, _fd: Fd, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    fn removexattr(&self, _path: &[u8], _name: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    fn lremovexattr(&self, _path: &[u8], _name: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    fn fremovexattr(&self, _fd: Fd, _name: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }

    // ---- space (default: ENOSYS) ----
    /// fallocate(2): mode 0, FALLOC_FL_KEEP_SIZE, and
    /// FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE.
    fn fallocate(&self, _fd: Fd, _mode: i32, _offset: i64, _len: i64) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// copy_file_range(2); `None` offsets use and advance the file
    /// positions.
    fn copy_file_range(
        &self,
        _fd_in: Fd,
        _off_in: Option<&mut i64>,
        _fd_out: Fd,
        _off_out: Option<&mut i64>,
        _len: usize,
        _flags: u32,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }

    /// sendfile(2): up to `count` bytes of `in_fd` (a regular file, or a
    /// socket when `out_fd` is a pipe) to `out_fd` (a regular file not
    /// O_APPEND, a socket or a pipe), from `offset` (which is advanced) or
    /// from and advancing `in_fd`'s position when None.
    fn sendfile(
        &self,
        _out_fd: Fd,
        _in_fd: Fd,
        _offset: Option<&mut i64>,
        _count: usize,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// splice(2): moves up to `len` bytes between two files of which one at
    /// least is a pipe; an offset (advanced) may be given for the other
    /// when it is a regular file. Flags: SPLICE_F_*.
    fn splice(
        &self,
        _fd_in: Fd,
        _off_in: Option<&mut i64>,
        _fd_out: Fd,
        _off_out: Option<&mut i64>,
        _len: usize,
        _flags: u32,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// vmsplice(2): on a pipe's write end, queues the bytes of `bufs`
    /// (split into buffers at the pages of their addresses, as Linux maps
    /// the caller's pages; copied here, so later changes to `bufs` do not
    /// show through); on its read end, moves queued bytes into `bufs`.
    /// Waits unless SPLICE_F_NONBLOCK (the file's O_NONBLOCK does not
    /// count, as in Linux).
    fn vmsplice(&self, _fd: Fd, _bufs: &mut [&mut [u8]], _flags: u32) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// tee(2): copies up to `len` bytes from the front of pipe `fd_in` to
    /// pipe `fd_out`, leaving them in `fd_in`. Flags: SPLICE_F_*.
    fn tee(&self, _fd_in: Fd, _fd_out: Fd, _len: usize, _flags: u32) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }

    // ---- file handles (default: ENOSYS) ----
    /// name_to_handle_at(2): fills `handle` (whose `handle_bytes` is the
    /// buffer size; EOVERFLOW with the needed size stored there when it is
    /// too small) and returns the mount id. Flags: AT_EMPTY_PATH,
    /// AT_SYMLINK_FOLLOW, AT_HANDLE_FID.
    fn name_to_handle_at(
        &self,
        _dirfd: Fd,
        _path: &[u8],
        _handle: &mut FileHandle,
        _flags: i32,
    ) -> SysResult<u64> {
        Err(Errno::ENOSYS)
    }
    /// open_by_handle_at(2): opens the object `handle` names on the instance
    /// of `mount_fd` (EPERM without CAP_DAC_READ_SEARCH, ESTALE when it is
    /// gone).
    fn open_by_handle_at(&self, _mount_fd: Fd, _handle: &FileHandle, _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }

    // ---- anonymous objects and descriptor control (default: ENOSYS,
    // for implementations without them, such as the reference model) ----
    /// pipe2(2): [read end, write end]; O_NONBLOCK, O_CLOEXEC.
    fn pipe2(&self, _flags: i32) -> SysResult<[Fd; 2]> {
        Err(Errno::ENOSYS)
    }
    /// socketpair(2): two connected AF_UNIX sockets.
    fn socketpair(&self, _domain: i32, _ty: i32, _protocol: i32) -> SysResult<[Fd; 2]> {
        Err(Errno::ENOSYS)
    }
    /// socket(2): an AF_UNIX socket.
    fn socket(&self, _domain: i32, _ty: i32, _protocol: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// bind(2) of an AF_UNIX socket: `name` is sun_path (a path, a leading
    /// NUL for an abstract name, empty to autobind).
    fn bind(&self, _fd: Fd, _name: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// listen(2).
    fn listen(&self, _fd: Fd, _backlog: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// connect(2) of an AF_UNIX socket to `name` (as for `bind`).
    fn connect(&self, _fd: Fd, _name: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// connect(2) to an AF_UNSPEC address: a datagram socket forgets its
    /// default peer; EINVAL for stream and seqpacket sockets.
    fn disconnect(&self, _fd: Fd) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// getsockopt(SOL_SOCKET, SO_PEERCRED).
    fn peer_cred(&self, _fd: Fd) -> SysResult<Ucred> {
        Err(Errno::ENOSYS)
    }
    /// getpid(2): the process's id (what SO_PEERCRED and SCM_CREDENTIALS
    /// carry; vfscale's is its descriptor table's lock owner).
    fn getpid(&self) -> SysResult<i32> {
        Err(Errno::ENOSYS)
    }
    /// getsockopt(2): a SOL_SOCKET option's value (`abi::SO_*`) into
    /// `buf`, cut to its length; returns the bytes written.
    fn getsockopt(&self, _fd: Fd, _level: i32, _name: i32, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// setsockopt(2): a SOL_SOCKET option (SO_PASSCRED).
    fn setsockopt(&self, _fd: Fd, _level: i32, _name: i32, _value: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// accept4(2): SOCK_NONBLOCK, SOCK_CLOEXEC.
    fn accept4(&self, _fd: Fd, _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// shutdown(2) of a socket: SHUT_RD, SHUT_WR, SHUT_RDWR.
    fn shutdown(&self, _fd: Fd, _how: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// getsockname(2) (`peer` false) or getpeername(2): the sun_path bytes.
    fn socket_name(&self, _fd: Fd, _peer: bool) -> SysResult<Vec<u8>> {
        Err(Errno::ENOSYS)
    }
    /// sendto(2) of an AF_UNIX socket: `name` as for `connect` (None: no
    /// address, as send(2)); flags MSG_DONTWAIT (others as Linux ignores
    /// them; MSG_OOB is EOPNOTSUPP).
    fn sendto(&self, _fd: Fd, _buf: &[u8], _flags: i32, _name: Option<&[u8]>) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// recvfrom(2): the byte count and the sender's sun_path bytes (empty
    /// if it has no name); flags MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT.
    fn recvfrom(&self, _fd: Fd, _buf: &mut [u8], _flags: i32) -> SysResult<(usize, Vec<u8>)> {
        Err(Errno::ENOSYS)
    }
    /// sendmsg(2) of an AF_UNIX socket: `sendto` with a vector, carrying
    /// the files of the descriptors `rights` (SCM_RIGHTS: at most 253,
    /// EINVAL past that; EBADF for one not open; ETOOMANYREFS where
    /// vfscale's rule against cycles of sockets in flight refuses them,
    /// docs/COMPATIBILITY.md) and the credentials `creds`
    /// (SCM_CREDENTIALS: the sender's own pid and real or effective ids
    /// unless root, EPERM; an id of -1 is EINVAL).
    #[allow(clippy::too_many_arguments)]
    fn sendmsg(
        &self,
        _fd: Fd,
        _bufs: &[&[u8]],
        _flags: i32,
        _name: Option<&[u8]>,
        _rights: &[Fd],
        _creds: Option<Ucred>,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// recvmsg(2): `recvfrom` with a vector and a control buffer of
    /// `control_len` bytes (0: none), filled as Linux fills one: the
    /// sender's credentials if the socket has SO_PASSCRED (28 bytes, 32
    /// with padding: `abi::cmsg_space(12)`), then the files the message
    /// carried as new descriptors (`abi::cmsg_space(4 * n)` for n); what
    /// does not fit is dropped (files closed) with MSG_CTRUNC. Flags also
    /// MSG_WAITALL and MSG_CMSG_CLOEXEC.
    fn recvmsg(
        &self,
        _fd: Fd,
        _bufs: &mut [&mut [u8]],
        _flags: i32,
        _control_len: usize,
    ) -> SysResult<RecvMsg> {
        Err(Errno::ENOSYS)
    }
    /// ioctl(FIONREAD): the bytes a read would find (regular files, pipes,
    /// sockets); ENOTTY otherwise.
    fn fionread(&self, _fd: Fd) -> SysResult<i32> {
        Err(Errno::ENOSYS)
    }
    /// ioctl(FS_IOC_GETFLAGS): the inode flags (FS_*_FL, chattr's letters)
    /// of the file open on `fd`; ENOTTY where the filesystem has none.
    fn fs_ioc_getflags(&self, _fd: Fd) -> SysResult<u32> {
        Err(Errno::ENOSYS)
    }
    /// ioctl(FS_IOC_SETFLAGS): replaces the inode flags (owner or root;
    /// FS_IMMUTABLE_FL and FS_APPEND_FL change for root only).
    fn fs_ioc_setflags(&self, _fd: Fd, _flags: u32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// ioctl(FS_IOC_FSGETXATTR): the flags as a `struct fsxattr`.
    fn fs_ioc_fsgetxattr(&self, _fd: Fd) -> SysResult<FsXattr> {
        Err(Errno::ENOSYS)
    }
    /// ioctl(FS_IOC_FSSETXATTR): sets the flags from a `struct fsxattr`.
    fn fs_ioc_fssetxattr(&self, _fd: Fd, _attr: &FsXattr) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// file_getattr(2): the flags of the inode `path` names (relative to
    /// `dirfd`; AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH) as a `struct
    /// file_attr` (`FileAttr::to_bytes`) written into `attr`, whose length
    /// is the size the caller passes (24 up to a page; past the record,
    /// zeros).
    fn file_getattr(
        &self,
        _dirfd: Fd,
        _path: &[u8],
        _attr: &mut [u8],
        _flags: i32,
    ) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// file_setattr(2): sets the flags from the `struct file_attr` in
    /// `attr` (its length is the size passed; bytes past the record must
    /// be zero).
    fn file_setattr(&self, _dirfd: Fd, _path: &[u8], _attr: &[u8], _flags: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// eventfd2(2): EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC.
    fn eventfd(&self, _initval: u32, _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// memfd_create(2): MFD_CLOEXEC, MFD_ALLOW_SEALING.
    fn memfd_create(&self, _name: &[u8], _flags: u32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// inotify_init1(2): IN_NONBLOCK, IN_CLOEXEC; reads return whole
    /// `struct inotify_event` records (`abi::InotifyEvent`).
    fn inotify_init1(&self, _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// inotify_add_watch(2): watches the object `path` names (following a
    /// trailing symlink unless IN_DONT_FOLLOW) for the events in `mask`;
    /// returns the watch descriptor (the same one for an object already
    /// watched by this instance).
    fn inotify_add_watch(&self, _fd: Fd, _path: &[u8], _mask: u32) -> SysResult<i32> {
        Err(Errno::ENOSYS)
    }
    /// inotify_rm_watch(2): removes a watch (queueing its IN_IGNORED).
    fn inotify_rm_watch(&self, _fd: Fd, _wd: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// poll(2): fills each `revents`, returns how many are non-zero.
    fn poll(&self, _fds: &mut [PollFd], _timeout_ms: i32) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// epoll_create(2): `size` is only checked (EINVAL unless positive),
    /// as Linux does since 2.6.8.
    fn epoll_create(&self, size: i32) -> SysResult<Fd> {
        if size <= 0 {
            return Err(Errno::EINVAL);
        }
        self.epoll_create1(0)
    }
    /// epoll_create1(2): EPOLL_CLOEXEC.
    fn epoll_create1(&self, _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// epoll_ctl(2): EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL; `event`
    /// None is a null pointer (EFAULT unless EPOLL_CTL_DEL).
    fn epoll_ctl(&self, _epfd: Fd, _op: i32, _fd: Fd, _event: Option<EpollEvent>) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// epoll_wait(2): fills `events` (its length is maxevents) with ready
    /// items, returns how many; `timeout_ms` < 0 waits for one, 0 not at
    /// all.
    fn epoll_wait(
        &self,
        _epfd: Fd,
        _events: &mut [EpollEvent],
        _timeout_ms: i32,
    ) -> SysResult<usize> {
        Err(Errno::ENOSYS)
    }
    /// flock(2): LOCK_SH, LOCK_EX or LOCK_UN, with LOCK_NB to fail with
    /// EWOULDBLOCK instead of waiting. The lock belongs to the open file
    /// description. Default: ENOSYS.
    fn flock(&self, _fd: Fd, _operation: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// fcntl(2)'s lock commands (F_GETLK, F_SETLK, F_SETLKW: POSIX record
    /// locks owned by the process; F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW:
    /// owned by the open file description), with `struct flock` in and
    /// out. Default: ENOSYS.
    fn fcntl_lock(&self, _fd: Fd, _cmd: i32, _lock: &mut Flock) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// fcntl(2) with an integer argument.
    fn fcntl(&self, _fd: Fd, _cmd: i32, _arg: i64) -> SysResult<i64> {
        Err(Errno::ENOSYS)
    }
    /// What readlink("/proc/self/fd/N") reads for `fd`.
    fn fd_path(&self, _fd: Fd) -> SysResult<Vec<u8>> {
        Err(Errno::ENOSYS)
    }

    // ---- process context ----
    fn chdir(&self, path: &[u8]) -> SysResult<()>;
    fn fchdir(&self, fd: Fd) -> SysResult<()>;
    fn getcwd(&self) -> SysResult<Vec<u8>>;
    fn chroot(&self, path: &[u8]) -> SysResult<()>;
    /// Sets the umask and returns the previous one.
    fn umask(&self, mask: u32) -> u32;

    // ---- mounts ----
    /// mount(2): `fstype` "tmpfs" makes a new instance ("passthrough": one
    /// mirroring the host directory `source`), read-only with MS_RDONLY;
    /// MS_BIND binds `source` (with MS_REC the mounts beneath it too);
    /// MS_REMOUNT | MS_BIND changes a mount's per-mount flags (read-only,
    /// nosuid, nodev, noexec, nosymfollow, the atime modes), MS_REMOUNT
    /// alone its instance's read-only bit too (EBUSY while a file is open
    /// for writing, or an unlinked file is still open); MS_MOVE moves the
    /// mount whose root `source` names, with the mounts beneath it.
    /// MS_SHARED, MS_SLAVE, MS_PRIVATE and MS_UNBINDABLE (with MS_REC)
    /// change propagation (docs/COMPATIBILITY.md).
    fn mount(&self, source: &[u8], target: &[u8], fstype: &[u8], flags: u64) -> SysResult<()>;
    /// mount(2) with its `data` argument (None: a null pointer): for a
    /// new instance, its filesystem's options ("size=16k,mode=700,ro":
    /// comma-separated, `key=value` or a flag; tmpfs's are those fsconfig
    /// takes), for a remount (MS_REMOUNT without MS_BIND) the options its
    /// reconfiguration takes; ignored by the other calls. A data string is
    /// read up to its first NUL, and at most 4,095 bytes (the page Linux
    /// copies). An option refused is EINVAL. Without data, `mount`.
    fn mount_with_data(
        &self,
        source: &[u8],
        target: &[u8],
        fstype: &[u8],
        flags: u64,
        data: Option<&[u8]>,
    ) -> SysResult<()> {
        match data {
            None => self.mount(source, target, fstype, flags),
            Some(_) => Err(Errno::ENOSYS),
        }
    }
    fn umount2(&self, target: &[u8], flags: i32) -> SysResult<()>;
    /// mount_setattr(2): sets `attr.attr_set` and clears `attr.attr_clr`
    /// (MOUNT_ATTR_*: read-only, nosuid, nodev, noexec, nodiratime,
    /// nosymfollow; the atime mode, a value, is changed with all of
    /// MOUNT_ATTR__ATIME in `attr_clr`) and changes propagation
    /// (`attr.propagation`: 0 or one MS_ type) on the mount whose root
    /// `path` names, with AT_RECURSIVE on every mount beneath it too, all
    /// or nothing: EBUSY, changing nothing, when a mount that would become
    /// read-only has a writer. Root only (EPERM); EINVAL for a path that
    /// is not a mount's root or is another namespace's, and for attributes
    /// Linux refuses; MOUNT_ATTR_IDMAP is EBADF or EINVAL (no user
    /// namespaces).
    fn mount_setattr(
        &self,
        _dirfd: Fd,
        _path: &[u8],
        _flags: i32,
        _attr: &MountAttr,
    ) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// open_tree(2): without OPEN_TREE_CLONE an O_PATH descriptor of
    /// `path` (AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW as for openat); with it
    /// a descriptor of a detached copy of the mount there (AT_RECURSIVE:
    /// with the mounts beneath it), which nobody else sees until
    /// `move_mount` attaches it and which goes with the descriptor's last
    /// close if it is not attached (root only, EPERM; EINVAL for an
    /// unbindable mount, another namespace's, AT_RECURSIVE alone or an
    /// unknown flag). OPEN_TREE_CLOEXEC sets FD_CLOEXEC.
    fn open_tree(&self, _dirfd: Fd, _path: &[u8], _flags: i32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// move_mount(2): the mount whose root `from` names (with the mounts
    /// beneath it) goes onto `to`: an attached mount of this namespace
    /// moves as MS_MOVE moves it; a detached tree's root (`open_tree`)
    /// attaches its tree, which joins the target's namespace and is then
    /// no longer the descriptor's to dissolve. Each path is relative to
    /// its descriptor, empty only with MOVE_MOUNT_F_EMPTY_PATH /
    /// MOVE_MOUNT_T_EMPTY_PATH, and follows a final symlink only with
    /// MOVE_MOUNT_F_SYMLINKS / MOVE_MOUNT_T_SYMLINKS. Root only (EPERM);
    /// EINVAL for a source that is not a mount's root, not movable or of
    /// another type than the target; ELOOP onto itself. With
    /// MOVE_MOUNT_BENEATH the mount goes under the top of the stack of
    /// mounts at `to` (which must name a mount's root), and that top moves
    /// onto it, with can_move_mount_beneath's refusals (EINVAL: something
    /// mounted on the source's root, the caller's root mount or the
    /// namespace's root as the top, the top the source or beneath it, a
    /// propagation that would cover what went beneath); not with
    /// MOVE_MOUNT_SET_GROUP (EINVAL). With MOVE_MOUNT_SET_GROUP the private
    /// mount at `to` instead joins the peer group of the one at `from`
    /// and gets its master (both mount roots on one instance, `to`'s
    /// beneath `from`'s; EINVAL otherwise, as do_set_group).
    fn move_mount(
        &self,
        _from_dfd: Fd,
        _from_path: &[u8],
        _to_dfd: Fd,
        _to_path: &[u8],
        _flags: u32,
    ) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// fsopen(2): a descriptor of a new configuration of filesystem type
    /// `fstype` ("tmpfs", "passthrough"; ENODEV for another) for
    /// `fsconfig` to fill and `fsmount` to mount. FSOPEN_CLOEXEC; root only
    /// (EPERM). Reading it gives the message log's oldest message (Linux's
    /// texts for refused parameters; eight kept), ENODATA when empty.
    fn fsopen(&self, _fstype: &[u8], _flags: u32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// fsconfig(2) on an `fsopen` descriptor: FSCONFIG_SET_FLAG and
    /// FSCONFIG_SET_STRING set a parameter `key` (the instance flags "ro",
    /// "rw", "sync", ...; "source"; tmpfs's "mode", "uid", "gid" for its
    /// root, and its size and inode limits, checked but not applied);
    /// FSCONFIG_CMD_CREATE makes the instance; FSCONFIG_CMD_RECONFIGURE,
    /// after `fsmount`, applies "ro"/"rw" to it. `key` and `value` are
    /// the call's pointers (None: NULL), `aux` its last argument. EINVAL
    /// for arguments the command does not take, an unknown parameter or a
    /// bad value; EBUSY out of phase; EOPNOTSUPP for an unknown command.
    fn fsconfig(
        &self,
        _fd: Fd,
        _cmd: u32,
        _key: Option<&[u8]>,
        _value: Option<&[u8]>,
        _aux: i32,
    ) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// fsmount(2): a descriptor of a detached mount (as `open_tree`'s
    /// copies: `move_mount` attaches it, its last close drops it) of the
    /// instance an `fsopen` descriptor's FSCONFIG_CMD_CREATE made, with
    /// the MOUNT_ATTR_* per-mount flags `attr_flags` (EINVAL for others,
    /// or a bad atime mode). FSMOUNT_CLOEXEC; root only (EPERM); EINVAL
    /// before the create, EBUSY after a first fsmount.
    fn fsmount(&self, _fd: Fd, _flags: u32, _attr_flags: u64) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// fspick(2): a configuration descriptor (as `fsopen`'s) for
    /// reconfiguring the instance of the mount whose root `path` names
    /// (FSPICK_EMPTY_PATH, FSPICK_SYMLINK_NOFOLLOW, FSPICK_CLOEXEC;
    /// EINVAL for another flag or a path that is not a mount's root; root
    /// only, EPERM): `fsconfig` sets "ro" or "rw", then
    /// FSCONFIG_CMD_RECONFIGURE applies it.
    fn fspick(&self, _dirfd: Fd, _path: &[u8], _flags: u32) -> SysResult<Fd> {
        Err(Errno::ENOSYS)
    }
    /// pivot_root(2): the mount at `new_root` becomes the root of this
    /// process's namespace, the old root mount goes onto `put_old` (the
    /// new root or a directory beneath it), and every process whose root
    /// or cwd was the old root moves to the new one. Root only (EPERM);
    /// EINVAL for a shared mount at either place or above the old root,
    /// `new_root` not a whole mount or not beneath the root, `put_old` not
    /// beneath `new_root`; EBUSY when `new_root` or `put_old` is on the
    /// old root's mount. A namespace's root from unshare or the VFS counts
    /// as mounted on Linux's private rootfs (docs/COMPATIBILITY.md).
    fn pivot_root(&self, _new_root: &[u8], _put_old: &[u8]) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// unshare(2) for this process alone (a thread, not its
    /// `clone_thread` siblings): CLONE_NEWNS moves it into a copy of its
    /// mount namespace (every mount copied, a shared one as a peer of its
    /// original; root and cwd moved onto the copies), CLONE_FS gives it its
    /// own root, cwd and umask, CLONE_FILES its own copy of the fd table
    /// (POSIX locks stay with the old table's owner). CLONE_NEWNS needs
    /// root (EPERM, changing nothing); any other bit is EINVAL (not
    /// built).
    fn unshare(&mut self, _flags: i32) -> SysResult<()> {
        Err(Errno::ENOSYS)
    }
    /// setns(2) with CLONE_NEWNS: this process moves into `other`'s mount
    /// namespace, rooted (root and cwd) at the top of that namespace's
    /// root. Root only (EPERM).
    fn setns_mount(&mut self, _other: &Self) -> SysResult<()>
    where
        Self: Sized,
    {
        Err(Errno::ENOSYS)
    }
    /// The text of /proc/self/mountinfo: one line per mount of this
    /// process's namespace that its root reaches, in the order they were
    /// made.
    fn mountinfo(&self) -> SysResult<Vec<u8>> {
        Err(Errno::ENOSYS)
    }

    // ---- lifetime ----
    /// A child process: a copy of the fd table, the same root, cwd, umask and
    /// credentials.
    fn fork(&self) -> SysResult<Self>
    where
        Self: Sized;
    /// Ends the process: closes every descriptor, releases root and cwd.
    fn exit(self)
    where
        Self: Sized;

    // ---- conveniences with the obvious syscall meaning ----
    fn open(&self, path: &[u8], flags: i32, mode: u32) -> SysResult<Fd> {
        self.openat(AT_FDCWD, path, flags, mode)
    }
    fn stat(&self, path: &[u8]) -> SysResult<Stat> {
        self.fstatat(AT_FDCWD, path, 0)
    }
    fn lstat(&self, path: &[u8]) -> SysResult<Stat> {
        self.fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
    }
    fn mkdir(&self, path: &[u8], mode: u32) -> SysResult<()> {
        self.mkdirat(AT_FDCWD, path, mode)
    }
    fn unlink(&self, path: &[u8]) -> SysResult<()> {
        self.unlinkat(AT_FDCWD, path, 0)
    }
    fn rmdir(&self, path: &[u8]) -> SysResult<()> {
        self.unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
    }
    fn rename(&self, old: &[u8], new: &[u8]) -> SysResult<()> {
        self.renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
    }
    fn link(&self, old: &[u8], new: &[u8]) -> SysResult<()> {
        self.linkat(AT_FDCWD, old, AT_FDCWD, new, 0)
    }
    fn symlink(&self, target: &[u8], linkpath: &[u8]) -> SysResult<()> {
        self.symlinkat(target, AT_FDCWD, linkpath)
    }
    fn access(&self, path: &[u8], mode: i32) -> SysResult<()> {
        self.faccessat(AT_FDCWD, path, mode, 0)
    }
    fn chmod(&self, path: &[u8], mode: u32) -> SysResult<()> {
        self.fchmodat(AT_FDCWD, path, mode, 0)
    }
    fn chown(&self, path: &[u8], uid: u32, gid: u32) -> SysResult<()> {
        self.fchownat(AT_FDCWD, path, uid, gid, 0)
    }
    fn readlink(&self, path: &[u8]) -> SysResult<Vec<u8>> {
        let mut buf = vec![0u8; PATH_MAX];
        let n = self.readlinkat(AT_FDCWD, path, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
    /// Reads a whole directory through getdents64 (names include "." and "..").
    fn read_dir(&self, path: &[u8]) -> SysResult<Vec<Dirent>> {
        let fd = self.openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 32 * 1024];
        let res = loop {
            match self.getdents64(fd, &mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => out.extend(parse_dirents64(&buf[..n])),
                Err(e) => break Err(e),
            }
        };
        self.close(fd)?;
        res.map(|()| out)
    }
}
