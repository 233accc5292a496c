//! Operation-sequence harness for property tests: an `Op` per `ProcessApi`
//! call over a small name alphabet, a proptest strategy that generates them,
//! and `apply`, which runs one op on any `ProcessApi` and reduces the result
//! to a comparable `Outcome`.
//!
//! Invariants:
//! - `apply` is a pure function of (the process's state, the op, the
//!   `FdMap`): two implementations with the same semantics produce equal
//!   outcome sequences and equal `FdMap`s;
//! - an `Outcome` keeps only what both sides must agree on: errno, counts,
//!   bytes, offsets, inode flags, and stat's mode, nlink, uid, gid, size,
//!   rdev (and blocks for regular files, and statx's attributes); inode and
//!   device numbers, timestamps and statx's attributes_mask are dropped;
//! - descriptors are named symbolically (`FdArg::Slot`) by their position
//!   among the descriptors the sequence itself has seen opened, so a
//!   generated op usually hits an open descriptor; both sides allocate the
//!   lowest free number, so raw numbers are compared as well.

use proptest::prelude::*;
use std::fmt;
use vfscale::abi::*;
use vfscale::{Cred, Errno, Fd, ProcessApi};

/// A path or name argument (printed as an escaped string).
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() > 40 {
            return write!(
                f,
                "b\"{}…\"({} bytes)",
                self.0[..8].escape_ascii(),
                self.0.len()
            );
        }
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

impl From<&[u8]> for Bytes {
    fn from(b: &[u8]) -> Self {
        Bytes(b.to_vec())
    }
}

/// A descriptor argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdArg {
    /// AT_FDCWD.
    Cwd,
    /// The k-th (modulo) descriptor in the `FdMap`; -1 if it is empty.
    Slot(u8),
    /// The k-th newest (modulo) descriptor in the `FdMap`; -1 if it is
    /// empty (socket calls: a connect, send or accept on a socket a step
    /// just made).
    Recent(u8),
    /// A raw number (possibly invalid).
    Raw(Fd),
}

/// The pid of sendmsg's credentials (SCM_CREDENTIALS): each side numbers
/// its processes its own way, so the sender's own is symbolic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidArg {
    /// The sender's own (getpid).
    Own,
    /// Another process: pid 1, which exists on the host.
    One,
    /// No process (ESRCH, or EPERM for a non-root sender).
    Zero,
}

/// sendmsg's credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CredsArg {
    pub pid: PidArg,
    pub uid: u32,
    pub gid: u32,
}

/// The descriptors a sequence has seen opened and not closed, in the order
/// they appeared (the same on both sides as long as outcomes agree).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FdMap {
    pub open: Vec<Fd>,
    /// Handles `name_to_handle_at` gave, in order (each side's own bytes).
    pub handles: Vec<FileHandle>,
}

impl FdMap {
    /// The raw descriptor for `arg`.
    pub fn resolve(&self, arg: FdArg) -> Fd {
        match arg {
            FdArg::Cwd => AT_FDCWD,
            FdArg::Raw(fd) => fd,
            FdArg::Slot(_) | FdArg::Recent(_) if self.open.is_empty() => -1,
            FdArg::Slot(k) => self.open[k as usize % self.open.len()],
            FdArg::Recent(k) => self.open[self.open.len() - 1 - k as usize % self.open.len()],
        }
    }

    fn opened(&mut self, fd: Fd) {
        if !self.open.contains(&fd) {
            self.open.push(fd);
        }
    }

    fn closed(&mut self, fd: Fd) {
        self.open.retain(|&f| f != fd);
    }
}

/// One `ProcessApi` call with its arguments.
#[derive(Clone, Debug)]
pub enum Op {
    Open {
        dirfd: FdArg,
        path: Bytes,
        flags: i32,
        mode: u32,
    },
    /// openat2(2); only vfscale and the kernel implement it (the model
    /// answers ENOSYS: `not_in_model`).
    Openat2 {
        dirfd: FdArg,
        path: Bytes,
        how: OpenHow,
    },
    Close(FdArg),
    CloseRange {
        first: u32,
        last: u32,
        flags: u32,
    },
    Dup(FdArg),
    Dup2(FdArg, FdArg),
    Dup3(FdArg, FdArg, i32),
    Read {
        fd: FdArg,
        len: usize,
    },
    Write {
        fd: FdArg,
        data: Bytes,
    },
    Pread {
        fd: FdArg,
        len: usize,
        off: i64,
    },
    Pwrite {
        fd: FdArg,
        data: Bytes,
        off: i64,
    },
    Readv {
        fd: FdArg,
        lens: Vec<usize>,
    },
    Writev {
        fd: FdArg,
        data: Vec<Bytes>,
    },
    Lseek {
        fd: FdArg,
        off: i64,
        whence: i32,
    },
    Ftruncate {
        fd: FdArg,
        len: i64,
    },
    Truncate {
        path: Bytes,
        len: i64,
    },
    Fsync(FdArg),
    Fdatasync(FdArg),
    Fstat(FdArg),
    Fstatat {
        dirfd: FdArg,
        path: Bytes,
        flags: i32,
    },
    Statx {
        dirfd: FdArg,
        path: Bytes,
        flags: i32,
        mask: u32,
    },
    Faccessat {
        dirfd: FdArg,
        path: Bytes,
        mode: i32,
        flags: i32,
    },
    Fchmodat {
        dirfd: FdArg,
        path: Bytes,
        mode: u32,
        flags: i32,
    },
    Fchmod {
        fd: FdArg,
        mode: u32,
    },
    Fchownat {
        dirfd: FdArg,
        path: Bytes,
        uid: u32,
        gid: u32,
        flags: i32,
    },
    Fchown {
        fd: FdArg,
        uid: u32,
        gid: u32,
    },
    Utimensat {
        dirfd: FdArg,
        path: Bytes,
        times: Option<[Timespec; 2]>,
        flags: i32,
    },
    Futimens {
        fd: FdArg,
        times: Option<[Timespec; 2]>,
    },
    Statfs(Bytes),
    Fstatfs(FdArg),
    Mkdirat {
        dirfd: FdArg,
        path: Bytes,
        mode: u32,
    },
    Mknodat {
        dirfd: FdArg,
        path: Bytes,
        mode: u32,
        dev: u64,
    },
    Unlinkat {
        dirfd: FdArg,
        path: Bytes,
        flags: i32,
    },
    Renameat2 {
        olddirfd: FdArg,
        old: Bytes,
        newdirfd: FdArg,
        new: Bytes,
        flags: u32,
    },
    Linkat {
        olddirfd: FdArg,
        old: Bytes,
        newdirfd: FdArg,
        new: Bytes,
        flags: i32,
    },
    Symlinkat {
        target: Bytes,
        dirfd: FdArg,
        path: Bytes,
    },
    Readlinkat {
        dirfd: FdArg,
        path: Bytes,
        len: usize,
    },
    Getdents64 {
        fd: FdArg,
        len: usize,
    },
    Chdir(Bytes),
    Fchdir(FdArg),
    Getcwd,
    Chroot(Bytes),
    Umask(u32),
    Mount {
        source: Bytes,
        target: Bytes,
        fstype: Bytes,
        flags: u64,
    },
    Umount2 {
        target: Bytes,
        flags: i32,
    },
    Setxattr {
        at: XattrAt,
        name: Bytes,
        value: Bytes,
        flags: i32,
    },
    /// getxattr with a `len`-byte buffer (0 asks for the size).
    Getxattr {
        at: XattrAt,
        name: Bytes,
        len: usize,
    },
    /// listxattr with a `len`-byte buffer (0 asks for the size).
    Listxattr {
        at: XattrAt,
        len: usize,
    },
    Removexattr {
        at: XattrAt,
        name: Bytes,
    },
    Fallocate {
        fd: FdArg,
        mode: i32,
        off: i64,
        len: i64,
    },
    /// copy_file_range; `None` offsets use the file positions.
    CopyFileRange {
        fd_in: FdArg,
        off_in: Option<i64>,
        fd_out: FdArg,
        off_out: Option<i64>,
        len: usize,
        flags: u32,
    },
    Syncfs(FdArg),
    /// ioctl(FS_IOC_GETFLAGS): the inode flags (chattr's letters).
    FsGetflags(FdArg),
    /// ioctl(FS_IOC_SETFLAGS).
    FsSetflags {
        fd: FdArg,
        flags: u32,
    },
    /// chattr(1)'s way, in one step (as `Listener`): open `path`
    /// O_RDONLY|O_NONBLOCK|O_NOFOLLOW, FS_IOC_SETFLAGS, close; the open's
    /// Fd, then the ioctl's outcome. It reaches the sequences' busy files
    /// and directories more often than a descriptor drawn from the `FdMap`
    /// (mostly sockets, pipes and others' files).
    Chattr {
        path: Bytes,
        flags: u32,
    },
    /// ioctl(FS_IOC_FSGETXATTR): the flags as a `struct fsxattr`.
    FsGetxattr(FdArg),
    /// ioctl(FS_IOC_FSSETXATTR).
    FsSetxattr {
        fd: FdArg,
        attr: FsXattr,
    },
    /// name_to_handle_at with room for `size` handle bytes; a handle made
    /// is kept in the `FdMap` for `OpenByHandle` and, with `open`, opened
    /// at once (open_by_handle_at(mount_fd, handle, flags)).
    NameToHandle {
        dirfd: FdArg,
        path: Bytes,
        flags: i32,
        size: u32,
        open: Option<(FdArg, i32)>,
    },
    /// open_by_handle_at of the k-th (modulo) kept handle (an empty,
    /// invalid handle if none was kept).
    OpenByHandle {
        mount_fd: FdArg,
        handle: u8,
        flags: i32,
    },
    Pipe2(i32),
    Socketpair {
        domain: i32,
        ty: i32,
    },
    /// socket(AF_UNIX, ty) (always SOCK_NONBLOCK: a connect into a full
    /// queue or an accept would otherwise wait).
    Socket {
        ty: i32,
    },
    /// socket, bind to `name` and listen, in one step (so that connects
    /// and accepts meet a listener often enough): the socket's Fd, then
    /// the bind's and the listen's outcomes.
    Listener {
        ty: i32,
        name: Bytes,
        backlog: i32,
    },
    /// socket and connect to `name` in one step (as `Listener`): the
    /// socket's Fd, then the connect's outcome.
    Client {
        ty: i32,
        name: Bytes,
    },
    /// bind / connect of an AF_UNIX socket to `name` (a path, an abstract
    /// name, or empty).
    Bind {
        fd: FdArg,
        name: Bytes,
    },
    Connect {
        fd: FdArg,
        name: Bytes,
    },
    Listen {
        fd: FdArg,
        backlog: i32,
    },
    /// connect(2) to an AF_UNSPEC address.
    Disconnect(FdArg),
    /// ioctl(FIONREAD).
    FionRead(FdArg),
    /// getsockopt(SO_PEERCRED): whether a pid is given (each side numbers
    /// its processes its own way), then the uid and gid.
    PeerCred(FdArg),
    /// accept4 (SOCK_NONBLOCK always added, as for `Socket`).
    Accept4 {
        fd: FdArg,
        flags: i32,
    },
    /// shutdown(2).
    Shutdown {
        fd: FdArg,
        how: i32,
    },
    /// getsockname (`peer` false) or getpeername.
    SockName {
        fd: FdArg,
        peer: bool,
    },
    /// sendto(2) of `data` to `name` (None: no address), MSG_DONTWAIT
    /// always added (a socket made blocking by F_SETFL would wait).
    Sendto {
        fd: FdArg,
        data: Bytes,
        flags: i32,
        name: Option<Bytes>,
    },
    /// recvfrom(2) of at most `len` bytes, MSG_DONTWAIT always added: the
    /// count, the bytes copied and the sender's name.
    Recvfrom {
        fd: FdArg,
        len: usize,
        flags: i32,
    },
    /// sendmsg(2): `Sendto` carrying the files of `rights` (SCM_RIGHTS)
    /// and credentials (SCM_CREDENTIALS).
    Sendmsg {
        fd: FdArg,
        data: Bytes,
        flags: i32,
        name: Option<Bytes>,
        rights: Vec<FdArg>,
        creds: Option<CredsArg>,
    },
    /// recvmsg(2) of at most `len` bytes with a control buffer of
    /// `control` bytes, MSG_DONTWAIT always added: the count, the bytes
    /// copied, the sender's name, the credentials (Unit if none; else
    /// whether a pid is given, the uid and the gid), the new descriptors
    /// and the out flags.
    Recvmsg {
        fd: FdArg,
        len: usize,
        flags: i32,
        control: usize,
    },
    /// getsockopt(2) into a buffer of `len` bytes: the bytes (SO_PEERCRED's
    /// pid as whether one is given, as `PeerCred`).
    Getsockopt {
        fd: FdArg,
        level: i32,
        name: i32,
        len: usize,
    },
    /// setsockopt(2).
    Setsockopt {
        fd: FdArg,
        level: i32,
        name: i32,
        value: Bytes,
    },
    Eventfd {
        init: u32,
        flags: i32,
    },
    MemfdCreate {
        name: Bytes,
        flags: u32,
    },
    /// poll with timeout 0 (never blocks).
    Poll(Vec<(FdArg, i16)>),
    Fcntl {
        fd: FdArg,
        cmd: i32,
        arg: i64,
    },
    /// readlink("/proc/self/fd/N"); inode numbers in `type:[N]` are
    /// dropped from the outcome.
    FdPath(FdArg),
    /// fork; the child runs these ops (with a copy of the FdMap), then exits.
    Fork(Vec<Op>),
}

/// Where an xattr call finds its inode: a path followed to its end
/// (`setxattr`), a path not following a final symlink (`lsetxattr`), or a
/// descriptor (`fsetxattr`).
#[derive(Clone, Debug)]
pub enum XattrAt {
    Path(Bytes),
    Lpath(Bytes),
    Fd(FdArg),
}

/// The parts of a stat result both sides must agree on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatSummary {
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: i64,
    pub rdev: u64,
    /// st_blocks, for regular files only.
    pub blocks: Option<i64>,
    /// statx's `attributes` (STATX_ATTR_*: the inode flags immutable,
    /// append-only and nodump, and the path's mount-root bit); 0 for
    /// stat. `attributes_mask` is not kept: it says which filesystem
    /// answered (tmpfs's 0x203070, the generic 0x203000 of pipes, sockets,
    /// FUSE and vfscale's passthrough inodes), which the tests that
    /// compare a tmpfs with those may not share; vfscale-difftest's
    /// fileflags_kernel.rs compares it.
    pub attributes: u64,
}

impl From<&Stat> for StatSummary {
    fn from(s: &Stat) -> Self {
        StatSummary {
            mode: s.mode,
            nlink: s.nlink,
            uid: s.uid,
            gid: s.gid,
            size: s.size,
            rdev: s.rdev,
            blocks: s_isreg(s.mode).then_some(s.blocks),
            attributes: 0,
        }
    }
}

impl From<&Statx> for StatSummary {
    fn from(s: &Statx) -> Self {
        let mode = s.mode as u32;
        StatSummary {
            mode,
            nlink: s.nlink,
            uid: s.uid,
            gid: s.gid,
            size: s.size as i64,
            rdev: ((s.rdev_major as u64) << 8)
                | (s.rdev_minor as u64 & 0xff)
                | ((s.rdev_minor as u64 & !0xff) << 12),
            blocks: s_isreg(mode).then_some(s.blocks as i64),
            attributes: s.attributes,
        }
    }
}

/// The comparable result of one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Unit,
    Fd(Fd),
    Count(usize),
    Data(Bytes),
    Offset(i64),
    Mask(u32),
    Stat(StatSummary),
    /// statx: the summary and the STATX_BASIC_STATS part of the mask.
    Statx(StatSummary, u32),
    /// FS_IOC_FSGETXATTR's record.
    Fsxattr(FsXattr),
    Statfs {
        f_type: i64,
        f_bsize: i64,
        f_namelen: i64,
        /// The superblock's and the mount's flags (ST_*).
        f_flags: i64,
    },
    /// getdents64: (name, d_type) in order.
    Dirents(Vec<(Bytes, u8)>),
    /// fork: the child's outcomes.
    Child(Vec<Outcome>),
    /// A call with several results (pipe2's two descriptors,
    /// copy_file_range's count and offsets, poll's count and revents).
    Seq(Vec<Outcome>),
    Err(Errno),
}

/// The differential tests stop adding mounts to a namespace that holds
/// this many (`Op::adds_mounts`): a shared mount bound into itself doubles
/// its peer group with every bind, and a few such steps make the trees
/// (and a walk of them) too large for a test, long before the kernel's
/// own limit (fs.mount-max, 100,000, ENOSPC) is met.
pub const MOUNT_CAP: usize = 64;

impl Op {
    /// A mount(2) that may attach mounts (a new instance, a bind, a move
    /// onto a shared mount): what `MOUNT_CAP` holds back.
    pub fn adds_mounts(&self) -> bool {
        matches!(self, Op::Mount { flags, .. }
            if flags & (MS_REMOUNT | MS_SHARED | MS_SLAVE | MS_PRIVATE | MS_UNBINDABLE) == 0)
    }

    /// A call the model does not implement (its `ProcessApi` answers
    /// ENOSYS): file handles, the anonymous objects, poll, fcntl and
    /// fd_path. They are compared with the real kernel instead
    /// (vfscale-difftest's kernel_diff, docs/TESTING.md).
    pub fn not_in_model(&self) -> bool {
        matches!(
            self,
            Op::NameToHandle { .. }
                | Op::OpenByHandle { .. }
                | Op::Openat2 { .. }
                | Op::Pipe2(_)
                | Op::Socketpair { .. }
                | Op::Socket { .. }
                | Op::Listener { .. }
                | Op::Client { .. }
                | Op::Bind { .. }
                | Op::Connect { .. }
                | Op::Listen { .. }
                | Op::Accept4 { .. }
                | Op::SockName { .. }
                | Op::Sendto { .. }
                | Op::Disconnect(_)
                | Op::PeerCred(_)
                | Op::FionRead(_)
                | Op::Recvfrom { .. }
                | Op::Sendmsg { .. }
                | Op::Recvmsg { .. }
                | Op::Getsockopt { .. }
                | Op::Setsockopt { .. }
                | Op::Shutdown { .. }
                | Op::Eventfd { .. }
                | Op::MemfdCreate { .. }
                | Op::Poll(_)
                | Op::Fcntl { .. }
                | Op::FdPath(_)
        )
    }

    /// One of the four inode-flag ioctls (tmpfs's: an implementation whose
    /// files are another filesystem's may answer them its own way).
    pub fn inode_flags_call(&self) -> bool {
        matches!(
            self,
            Op::FsGetflags(_)
                | Op::FsSetflags { .. }
                | Op::Chattr { .. }
                | Op::FsGetxattr(_)
                | Op::FsSetxattr { .. }
        )
    }

    /// True for a mknod of a FIFO. Sequences run by one thread per process
    /// leave these out wherever an implementation with Linux's FIFOs runs
    /// them: a blocking open (or a read of an empty one opened O_RDWR)
    /// waits for a partner that never comes. FIFO semantics are tested with
    /// threads in vfscale's tests/api_anon.rs against the kernel.
    pub fn makes_fifo(&self) -> bool {
        matches!(self, Op::Mknodat { mode, .. } if mode & S_IFMT == S_IFIFO)
    }
}

fn unit(r: SysResult<()>) -> Outcome {
    r.map_or_else(Outcome::Err, |()| Outcome::Unit)
}

fn stat(r: SysResult<Stat>) -> Outcome {
    r.map_or_else(Outcome::Err, |s| Outcome::Stat((&s).into()))
}

/// getxattr/listxattr: the size for an empty buffer, else the bytes.
fn sized(r: SysResult<usize>, buf: &[u8]) -> Outcome {
    match r {
        Ok(n) if buf.is_empty() => Outcome::Count(n),
        Ok(n) => Outcome::Data(Bytes(buf[..n.min(buf.len())].to_vec())),
        Err(e) => Outcome::Err(e),
    }
}

/// pipe2/socketpair: both descriptors, recorded in order.
fn pair(r: SysResult<[Fd; 2]>, fds: &mut FdMap) -> Outcome {
    match r {
        Ok([a, b]) => {
            fds.opened(a);
            fds.opened(b);
            Outcome::Seq(vec![Outcome::Fd(a), Outcome::Fd(b)])
        }
        Err(e) => Outcome::Err(e),
    }
}

/// `pipe:[1234]` → `pipe:[]`, `/d/#1234 (deleted)` (an O_TMPFILE file's
/// name) → `/d/# (deleted)`: inode numbers differ between
/// implementations; the rest of a descriptor's path must not.
pub fn without_inode_numbers(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut in_number = false;
    for (i, &b) in path.iter().enumerate() {
        match b {
            b'[' => in_number = true,
            b'#' if i > 0 && path[i - 1] == b'/' => in_number = true,
            b'0'..=b'9' if in_number => continue,
            _ => in_number = false,
        }
        out.push(b);
    }
    out
}

/// Runs `op` on `p`, keeping `fds` up to date.
pub fn apply<P: ProcessApi>(p: &P, op: &Op, fds: &mut FdMap) -> Outcome {
    use Outcome as O;
    let before = fds.clone();
    let fd = |a: &FdArg| before.resolve(*a);
    match op {
        Op::Open {
            dirfd,
            path,
            flags,
            mode,
        } => match p.openat(fd(dirfd), &path.0, *flags, *mode) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Openat2 { dirfd, path, how } => match p.openat2(fd(dirfd), &path.0, how) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Close(a) => {
            let n = fd(a);
            let r = p.close(n);
            if r.is_ok() {
                fds.closed(n);
            }
            unit(r)
        }
        Op::CloseRange { first, last, flags } => {
            let r = p.close_range(*first, *last, *flags);
            if r.is_ok() && flags & CLOSE_RANGE_CLOEXEC == 0 {
                fds.open
                    .retain(|&f| !(f as u32 >= *first && f as u32 <= *last));
            }
            unit(r)
        }
        Op::Dup(a) => match p.dup(fd(a)) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Dup2(a, b) | Op::Dup3(a, b, _) => {
            let r = match op {
                Op::Dup3(_, _, flags) => p.dup3(fd(a), fd(b), *flags),
                _ => p.dup2(fd(a), fd(b)),
            };
            match r {
                Ok(n) => {
                    fds.opened(n);
                    O::Fd(n)
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Read { fd: a, len } => {
            let mut buf = vec![0u8; *len];
            p.read(fd(a), &mut buf)
                .map_or_else(O::Err, |n| O::Data(Bytes(buf[..n].to_vec())))
        }
        Op::Write { fd: a, data } => p.write(fd(a), &data.0).map_or_else(O::Err, O::Count),
        Op::Pread { fd: a, len, off } => {
            let mut buf = vec![0u8; *len];
            p.pread(fd(a), &mut buf, *off)
                .map_or_else(O::Err, |n| O::Data(Bytes(buf[..n].to_vec())))
        }
        Op::Pwrite { fd: a, data, off } => {
            p.pwrite(fd(a), &data.0, *off).map_or_else(O::Err, O::Count)
        }
        Op::Readv { fd: a, lens } => {
            let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
            let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            match p.readv(fd(a), &mut refs) {
                Ok(n) => O::Data(Bytes(bufs.concat()[..n].to_vec())),
                Err(e) => O::Err(e),
            }
        }
        Op::Writev { fd: a, data } => {
            let refs: Vec<&[u8]> = data.iter().map(|b| &b.0[..]).collect();
            p.writev(fd(a), &refs).map_or_else(O::Err, O::Count)
        }
        Op::Lseek { fd: a, off, whence } => {
            p.lseek(fd(a), *off, *whence).map_or_else(O::Err, O::Offset)
        }
        Op::Ftruncate { fd: a, len } => unit(p.ftruncate(fd(a), *len)),
        Op::Truncate { path, len } => unit(p.truncate(&path.0, *len)),
        Op::Fsync(a) => unit(p.fsync(fd(a))),
        Op::Fdatasync(a) => unit(p.fdatasync(fd(a))),
        Op::Fstat(a) => stat(p.fstat(fd(a))),
        Op::Fstatat { dirfd, path, flags } => stat(p.fstatat(fd(dirfd), &path.0, *flags)),
        Op::Statx {
            dirfd,
            path,
            flags,
            mask,
        } => match p.statx(fd(dirfd), &path.0, *flags, *mask) {
            Ok(s) => O::Statx((&s).into(), s.mask & STATX_BASIC_STATS),
            Err(e) => O::Err(e),
        },
        Op::Faccessat {
            dirfd,
            path,
            mode,
            flags,
        } => unit(p.faccessat(fd(dirfd), &path.0, *mode, *flags)),
        Op::Fchmodat {
            dirfd,
            path,
            mode,
            flags,
        } => unit(p.fchmodat(fd(dirfd), &path.0, *mode, *flags)),
        Op::Fchmod { fd: a, mode } => unit(p.fchmod(fd(a), *mode)),
        Op::Fchownat {
            dirfd,
            path,
            uid,
            gid,
            flags,
        } => unit(p.fchownat(fd(dirfd), &path.0, *uid, *gid, *flags)),
        Op::Fchown { fd: a, uid, gid } => unit(p.fchown(fd(a), *uid, *gid)),
        Op::Utimensat {
            dirfd,
            path,
            times,
            flags,
        } => unit(p.utimensat(fd(dirfd), &path.0, *times, *flags)),
        Op::Futimens { fd: a, times } => unit(p.futimens(fd(a), *times)),
        Op::Statfs(path) => p.statfs(&path.0).map_or_else(O::Err, |s| O::Statfs {
            f_type: s.f_type,
            f_bsize: s.f_bsize,
            f_namelen: s.f_namelen,
            f_flags: s.f_flags,
        }),
        Op::Fstatfs(a) => p.fstatfs(fd(a)).map_or_else(O::Err, |s| O::Statfs {
            f_type: s.f_type,
            f_bsize: s.f_bsize,
            f_namelen: s.f_namelen,
            f_flags: s.f_flags,
        }),
        Op::Mkdirat { dirfd, path, mode } => unit(p.mkdirat(fd(dirfd), &path.0, *mode)),
        Op::Mknodat {
            dirfd,
            path,
            mode,
            dev,
        } => unit(p.mknodat(fd(dirfd), &path.0, *mode, *dev)),
        Op::Unlinkat { dirfd, path, flags } => unit(p.unlinkat(fd(dirfd), &path.0, *flags)),
        Op::Renameat2 {
            olddirfd,
            old,
            newdirfd,
            new,
            flags,
        } => unit(p.renameat2(fd(olddirfd), &old.0, fd(newdirfd), &new.0, *flags)),
        Op::Linkat {
            olddirfd,
            old,
            newdirfd,
            new,
            flags,
        } => unit(p.linkat(fd(olddirfd), &old.0, fd(newdirfd), &new.0, *flags)),
        Op::Symlinkat {
            target,
            dirfd,
            path,
        } => unit(p.symlinkat(&target.0, fd(dirfd), &path.0)),
        Op::Readlinkat { dirfd, path, len } => {
            let mut buf = vec![0u8; *len];
            p.readlinkat(fd(dirfd), &path.0, &mut buf)
                .map_or_else(O::Err, |n| O::Data(Bytes(buf[..n].to_vec())))
        }
        Op::Getdents64 { fd: a, len } => {
            let mut buf = vec![0u8; *len];
            match p.getdents64(fd(a), &mut buf) {
                Ok(n) => O::Dirents(
                    parse_dirents64(&buf[..n])
                        .into_iter()
                        .map(|d| (Bytes(d.name), d.dtype))
                        .collect(),
                ),
                Err(e) => O::Err(e),
            }
        }
        Op::Chdir(path) => unit(p.chdir(&path.0)),
        Op::Fchdir(a) => unit(p.fchdir(fd(a))),
        Op::Getcwd => p.getcwd().map_or_else(O::Err, |b| O::Data(Bytes(b))),
        Op::Chroot(path) => unit(p.chroot(&path.0)),
        Op::Umask(m) => O::Mask(p.umask(*m)),
        Op::Mount {
            source,
            target,
            fstype,
            flags,
        } => unit(p.mount(&source.0, &target.0, &fstype.0, *flags)),
        Op::Umount2 { target, flags } => unit(p.umount2(&target.0, *flags)),
        Op::Setxattr {
            at,
            name,
            value,
            flags,
        } => unit(match at {
            XattrAt::Path(path) => p.setxattr(&path.0, &name.0, &value.0, *flags),
            XattrAt::Lpath(path) => p.lsetxattr(&path.0, &name.0, &value.0, *flags),
            XattrAt::Fd(a) => p.fsetxattr(fd(a), &name.0, &value.0, *flags),
        }),
        Op::Getxattr { at, name, len } => {
            let mut buf = vec![0u8; *len];
            let r = match at {
                XattrAt::Path(path) => p.getxattr(&path.0, &name.0, &mut buf),
                XattrAt::Lpath(path) => p.lgetxattr(&path.0, &name.0, &mut buf),
                XattrAt::Fd(a) => p.fgetxattr(fd(a), &name.0, &mut buf),
            };
            sized(r, &buf)
        }
        Op::Listxattr { at, len } => {
            let mut buf = vec![0u8; *len];
            let r = match at {
                XattrAt::Path(path) => p.listxattr(&path.0, &mut buf),
                XattrAt::Lpath(path) => p.llistxattr(&path.0, &mut buf),
                XattrAt::Fd(a) => p.flistxattr(fd(a), &mut buf),
            };
            sized(r, &buf)
        }
        Op::Removexattr { at, name } => unit(match at {
            XattrAt::Path(path) => p.removexattr(&path.0, &name.0),
            XattrAt::Lpath(path) => p.lremovexattr(&path.0, &name.0),
            XattrAt::Fd(a) => p.fremovexattr(fd(a), &name.0),
        }),
        Op::Fallocate {
            fd: a,
            mode,
            off,
            len,
        } => unit(p.fallocate(fd(a), *mode, *off, *len)),
        Op::CopyFileRange {
            fd_in,
            off_in,
            fd_out,
            off_out,
            len,
            flags,
        } => {
            let (mut oi, mut oo) = (*off_in, *off_out);
            match p.copy_file_range(
                fd(fd_in),
                oi.as_mut(),
                fd(fd_out),
                oo.as_mut(),
                *len,
                *flags,
            ) {
                Ok(n) => O::Seq(vec![
                    O::Count(n),
                    O::Offset(oi.unwrap_or(-1)),
                    O::Offset(oo.unwrap_or(-1)),
                ]),
                Err(e) => O::Err(e),
            }
        }
        Op::Syncfs(a) => unit(p.syncfs(fd(a))),
        Op::FsGetflags(a) => p.fs_ioc_getflags(fd(a)).map_or_else(O::Err, O::Mask),
        Op::FsSetflags { fd: a, flags } => unit(p.fs_ioc_setflags(fd(a), *flags)),
        Op::Chattr { path, flags } => {
            match p.openat(AT_FDCWD, &path.0, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0) {
                Ok(n) => {
                    let r = unit(p.fs_ioc_setflags(n, *flags));
                    let closed = unit(p.close(n));
                    O::Seq(vec![O::Fd(n), r, closed])
                }
                Err(e) => O::Err(e),
            }
        }
        Op::FsGetxattr(a) => p.fs_ioc_fsgetxattr(fd(a)).map_or_else(O::Err, O::Fsxattr),
        Op::FsSetxattr { fd: a, attr } => unit(p.fs_ioc_fssetxattr(fd(a), attr)),
        Op::NameToHandle {
            dirfd,
            path,
            flags,
            size,
            open,
        } => {
            let mut h = FileHandle::with_capacity(*size);
            match p.name_to_handle_at(fd(dirfd), &path.0, &mut h, *flags) {
                // Mount ids and handle bytes are each side's own.
                Ok(_mount_id) => match open {
                    None => {
                        fds.handles.push(h);
                        O::Unit
                    }
                    Some((mount_fd, oflags)) => {
                        let r = p.open_by_handle_at(fd(mount_fd), &h, *oflags);
                        fds.handles.push(h);
                        match r {
                            Ok(n) => {
                                fds.opened(n);
                                O::Seq(vec![O::Unit, O::Fd(n)])
                            }
                            Err(e) => O::Seq(vec![O::Unit, O::Err(e)]),
                        }
                    }
                },
                Err(e) => O::Err(e),
            }
        }
        Op::OpenByHandle {
            mount_fd,
            handle,
            flags,
        } => {
            let h = match before.handles.len() {
                0 => FileHandle::with_capacity(0),
                n => before.handles[*handle as usize % n].clone(),
            };
            match p.open_by_handle_at(fd(mount_fd), &h, *flags) {
                Ok(n) => {
                    fds.opened(n);
                    O::Fd(n)
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Pipe2(flags) => pair(p.pipe2(*flags), fds),
        Op::Socketpair { domain, ty } => pair(p.socketpair(*domain, *ty, 0), fds),
        Op::Socket { ty } => match p.socket(AF_UNIX, *ty | SOCK_NONBLOCK, 0) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Listener { ty, name, backlog } => match p.socket(AF_UNIX, *ty | SOCK_NONBLOCK, 0) {
            Ok(n) => {
                fds.opened(n);
                O::Seq(vec![
                    O::Fd(n),
                    unit(p.bind(n, &name.0)),
                    unit(p.listen(n, *backlog)),
                ])
            }
            Err(e) => O::Err(e),
        },
        Op::Client { ty, name } => match p.socket(AF_UNIX, *ty | SOCK_NONBLOCK, 0) {
            Ok(n) => {
                fds.opened(n);
                O::Seq(vec![O::Fd(n), unit(p.connect(n, &name.0))])
            }
            Err(e) => O::Err(e),
        },
        Op::Bind { fd: a, name } => unit(p.bind(fd(a), &name.0)),
        Op::Connect { fd: a, name } => unit(p.connect(fd(a), &name.0)),
        Op::Listen { fd: a, backlog } => unit(p.listen(fd(a), *backlog)),
        Op::Disconnect(a) => unit(p.disconnect(fd(a))),
        Op::FionRead(a) => p
            .fionread(fd(a))
            .map_or_else(O::Err, |n| O::Count(n as u32 as usize)),
        Op::PeerCred(a) => p.peer_cred(fd(a)).map_or_else(O::Err, ucred_outcome),
        Op::Accept4 { fd: a, flags } => match p.accept4(fd(a), *flags | SOCK_NONBLOCK) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Shutdown { fd: a, how } => unit(p.shutdown(fd(a), *how)),
        Op::SockName { fd: a, peer } => p
            .socket_name(fd(a), *peer)
            .map_or_else(O::Err, |n| O::Data(Bytes(n))),
        Op::Sendto {
            fd: a,
            data,
            flags,
            name,
        } => p
            .sendto(
                fd(a),
                &data.0,
                *flags | MSG_DONTWAIT,
                name.as_ref().map(|n| &n.0[..]),
            )
            .map_or_else(O::Err, O::Count),
        Op::Recvfrom { fd: a, len, flags } => {
            let mut buf = vec![0u8; *len];
            match p.recvfrom(fd(a), &mut buf, *flags | MSG_DONTWAIT) {
                Ok((n, from)) => {
                    buf.truncate(n.min(*len));
                    O::Seq(vec![O::Count(n), O::Data(Bytes(buf)), O::Data(Bytes(from))])
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Sendmsg {
            fd: a,
            data,
            flags,
            name,
            rights,
            creds,
        } => {
            let rights: Vec<Fd> = rights.iter().map(fd).collect();
            let creds = creds.map(|c| Ucred {
                pid: match c.pid {
                    PidArg::Own => p.getpid().unwrap_or(0),
                    PidArg::One => 1,
                    PidArg::Zero => 0,
                },
                uid: c.uid,
                gid: c.gid,
            });
            p.sendmsg(
                fd(a),
                &[&data.0],
                *flags | MSG_DONTWAIT,
                name.as_ref().map(|n| &n.0[..]),
                &rights,
                creds,
            )
            .map_or_else(O::Err, O::Count)
        }
        Op::Recvmsg {
            fd: a,
            len,
            flags,
            control,
        } => {
            let mut buf = vec![0u8; *len];
            match p.recvmsg(fd(a), &mut [&mut buf], *flags | MSG_DONTWAIT, *control) {
                Ok(m) => {
                    buf.truncate(m.len.min(*len));
                    for &n in &m.fds {
                        fds.opened(n);
                    }
                    let creds = m.creds.map_or(O::Unit, ucred_outcome);
                    O::Seq(vec![
                        O::Count(m.len),
                        O::Data(Bytes(buf)),
                        O::Data(Bytes(m.name)),
                        creds,
                        O::Seq(m.fds.into_iter().map(O::Fd).collect()),
                        O::Mask(m.flags as u32),
                    ])
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Getsockopt {
            fd: a,
            level,
            name,
            len,
        } => {
            let mut buf = vec![0u8; *len];
            match p.getsockopt(fd(a), *level, *name, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    if *level == SOL_SOCKET && *name == SO_PEERCRED {
                        mask_pid(&mut buf);
                    }
                    O::Data(Bytes(buf))
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Setsockopt {
            fd: a,
            level,
            name,
            value,
        } => unit(p.setsockopt(fd(a), *level, *name, &value.0)),
        Op::Eventfd { init, flags } => match p.eventfd(*init, *flags) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::MemfdCreate { name, flags } => match p.memfd_create(&name.0, *flags) {
            Ok(n) => {
                fds.opened(n);
                O::Fd(n)
            }
            Err(e) => O::Err(e),
        },
        Op::Poll(entries) => {
            let mut pfds: Vec<PollFd> = entries
                .iter()
                .map(|(a, events)| PollFd {
                    fd: fd(a),
                    events: *events,
                    revents: 0,
                })
                .collect();
            match p.poll(&mut pfds, 0) {
                Ok(n) => {
                    let mut out = vec![O::Count(n)];
                    out.extend(pfds.iter().map(|e| O::Mask(e.revents as u16 as u32)));
                    O::Seq(out)
                }
                Err(e) => O::Err(e),
            }
        }
        Op::Fcntl { fd: a, cmd, arg } => match p.fcntl(fd(a), *cmd, *arg) {
            Ok(n) => {
                if matches!(*cmd, F_DUPFD | F_DUPFD_CLOEXEC) {
                    fds.opened(n as Fd);
                }
                O::Offset(n)
            }
            Err(e) => O::Err(e),
        },
        Op::FdPath(a) => p
            .fd_path(fd(a))
            .map_or_else(O::Err, |b| O::Data(Bytes(without_inode_numbers(&b)))),
        Op::Fork(child_ops) => match p.fork() {
            Ok(child) => {
                let mut child_fds = fds.clone();
                let out = child_ops
                    .iter()
                    .map(|o| apply(&child, o, &mut child_fds))
                    .collect();
                child.exit();
                O::Child(out)
            }
            Err(e) => O::Err(e),
        },
    }
}

/// One step of a multi-process scenario: which process runs which op.
#[derive(Clone, Debug)]
pub struct Step {
    pub proc: usize,
    pub op: Op,
}

/// The cases a property test over these operations runs: `default`, or
/// `PROPTEST_CASES` for a longer run (an explicit `cases` in a config would
/// override the variable, so each test asks here).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The credentials of the processes of a scenario: root, a user in group
/// 100, and a user whose primary group is 100.
pub fn scenario_creds() -> Vec<Cred> {
    vec![
        Cred::root(),
        Cred::user(1000, 1000, &[100]),
        Cred::user(1001, 100, &[]),
    ]
}

/// Steps that give the non-root processes somewhere to work: "/" becomes
/// 0777, and /a (0777) and /b (1777, sticky) exist.
pub fn prelude() -> Vec<Step> {
    let op = |op| Step { proc: 0, op };
    vec![
        op(Op::Fchmodat {
            dirfd: FdArg::Cwd,
            path: b"/"[..].into(),
            mode: 0o777,
            flags: 0,
        }),
        op(Op::Mkdirat {
            dirfd: FdArg::Cwd,
            path: b"/a"[..].into(),
            mode: 0o777,
        }),
        op(Op::Fchmodat {
            dirfd: FdArg::Cwd,
            path: b"/a"[..].into(),
            mode: 0o777,
            flags: 0,
        }),
        op(Op::Mkdirat {
            dirfd: FdArg::Cwd,
            path: b"/b"[..].into(),
            mode: 0o777,
        }),
        op(Op::Fchmodat {
            dirfd: FdArg::Cwd,
            path: b"/b"[..].into(),
            mode: 0o1777,
            flags: 0,
        }),
    ]
}

/// Runs `steps` on `procs` (one `FdMap` each) and returns every outcome.
pub fn run<P: ProcessApi>(procs: &[P], steps: &[Step]) -> Vec<Outcome> {
    let mut maps = vec![FdMap::default(); procs.len()];
    steps
        .iter()
        .map(|s| {
            let i = s.proc % procs.len();
            apply(&procs[i], &s.op, &mut maps[i])
        })
        .collect()
}

// ---------------- strategies ----------------

fn component() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![
        8 => prop::sample::select(vec![&b"a"[..], b"b"]),
        4 => prop::sample::select(vec![&b"c"[..], b"d"]),
        2 => Just(&b"l"[..]),
        1 => Just(&b"."[..]),
        1 => Just(&b".."[..]),
    ]
}

/// A path of up to 3 components over a, b, c, d and the symlink name l,
/// with occasional ".", "..", trailing slash, relative form, and rare
/// oddities (empty, "/", a 256-byte component, a NUL byte).
pub fn path_strategy() -> impl Strategy<Value = Bytes> {
    let normal = (
        prop_oneof![2 => 1usize..=2, 1 => Just(3usize)]
            .prop_flat_map(|n| prop::collection::vec(component(), n)),
        prop::bool::weighted(0.75),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(comps, absolute, trailing)| {
            let mut p = Vec::new();
            if absolute {
                p.push(b'/');
            }
            p.extend(comps.join(&b'/'));
            if trailing {
                p.push(b'/');
            }
            Bytes(p)
        });
    let known = (
        prop::sample::select(vec![&b"/a/"[..], b"/b/", b"/a/c/", b""]),
        prop::sample::select(vec![&b"c"[..], b"d", b"e", b"l"]),
    )
        .prop_map(|(dir, name)| Bytes([dir, name].concat()));
    prop_oneof![
        20 => known,
        20 => normal,
        1 => Just(Bytes(Vec::new())),
        1 => Just(Bytes(b"/".to_vec())),
        1 => Just(Bytes({
            let mut p = b"/a/".to_vec();
            p.extend(std::iter::repeat_n(b'x', 256));
            p
        })),
        1 => Just(Bytes(b"/a\0b".to_vec())),
        // PATH_MAX: 4095 bytes of "/a/./././" (a long path that resolves
        // to /a), and 4096 bytes (ENAMETOOLONG).
        1 => prop::sample::select(vec![PATH_MAX - 1, PATH_MAX]).prop_map(|len| {
            let mut p = b"/a".to_vec();
            while p.len() + 2 <= len {
                p.extend(b"/.");
            }
            p.resize(len, b'/');
            Bytes(p)
        }),
    ]
}

/// Relative paths that climb, stay or pass a symlink (`l` and `a/l` from
/// the root: the sequences' own symlink steps make `/l` and `/a/l`).
fn relative_path() -> impl Strategy<Value = Bytes> {
    prop::sample::select(vec![
        &b"c"[..],
        b"..",
        b"../a",
        b"a/../..",
        b"./a/c",
        b"l",
        b"l/c",
        b"../../a/c",
        b"a/c/..",
        b"a/l",
    ])
    .prop_map(Bytes::from)
}

/// openat2's resolve flags: each alone, pairs, and what is refused
/// (BENEATH with IN_ROOT, an unknown bit).
fn resolve_flags() -> impl Strategy<Value = u64> {
    prop::sample::select(vec![
        0,
        RESOLVE_BENEATH,
        RESOLVE_IN_ROOT,
        RESOLVE_NO_XDEV,
        RESOLVE_NO_SYMLINKS,
        RESOLVE_NO_MAGICLINKS,
        RESOLVE_CACHED,
        RESOLVE_BENEATH | RESOLVE_NO_XDEV,
        RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS,
        RESOLVE_BENEATH | RESOLVE_IN_ROOT,
        0x40,
    ])
}

fn fd_arg() -> impl Strategy<Value = FdArg> {
    prop_oneof![
        8 => (0u8..8).prop_map(FdArg::Slot),
        1 => Just(FdArg::Cwd),
        1 => prop::sample::select(vec![-1, 0, 3, 100]).prop_map(FdArg::Raw),
    ]
}

fn dirfd_arg() -> impl Strategy<Value = FdArg> {
    prop_oneof![6 => Just(FdArg::Cwd), 2 => (0u8..8).prop_map(FdArg::Slot), 1 => Just(FdArg::Raw(-1))]
}

fn data() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        8 => prop::collection::vec(b'a'..=b'e', 0..12).prop_map(Bytes),
        // An eventfd's 8-byte counter values (u64::MAX is EINVAL there).
        1 => prop::sample::select(vec![1u64, 2, u64::MAX - 1, u64::MAX])
            .prop_map(|v| Bytes(v.to_ne_bytes().to_vec())),
    ]
}

/// Paths that name something often: the files and directories the other
/// ops create.
fn busy_path() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        4 => prop::sample::select(vec![&b"/a/c"[..], b"/a/d", b"/b/c", b"/a", b"/a", b"/", b"/a/l"])
            .prop_map(Bytes::from),
        1 => path_strategy(),
    ]
}

fn xattr_at() -> impl Strategy<Value = XattrAt> {
    prop_oneof![
        3 => busy_path().prop_map(XattrAt::Path),
        2 => busy_path().prop_map(XattrAt::Lpath),
        3 => fd_arg().prop_map(XattrAt::Fd),
    ]
}

/// Attribute names: two user names, the root-only trusted and security
/// namespaces, the two POSIX ACL names, and the oddities (no name after
/// the prefix, an unknown `system.` name, an unknown prefix, empty, 256
/// bytes).
fn xattr_name() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        16 => prop::sample::select(vec![&b"user.a"[..], b"user.b"]).prop_map(Bytes::from),
        6 => prop::sample::select(vec![&b"trusted.t"[..], b"security.s"]).prop_map(Bytes::from),
        2 => prop::sample::select(vec![&b"user."[..], b"system.x", b"bogus", b""])
            .prop_map(Bytes::from),
        3 => prop::sample::select(ACL_NAMES.to_vec()).prop_map(Bytes::from),
        1 => Just(Bytes({
            let mut n = b"user.".to_vec();
            n.extend(std::iter::repeat_n(b'x', 251));
            n
        })),
    ]
}

/// The two POSIX ACL names.
const ACL_NAMES: [&[u8]; 2] = [b"system.posix_acl_access", b"system.posix_acl_default"];

/// POSIX ACL values: mostly well-formed ones in Linux's order whose named
/// entries are the sequences' users (uid 1000 and 1001, group 100) or
/// others, sometimes with no named entry (then often no mask: the mode
/// says it all); else broken ones (short, another version, ragged, out of
/// order, bits past rwx, an unknown tag, a named id of -1, a bare header).
fn acl_value() -> impl Strategy<Value = Bytes> {
    const U: u32 = u32::MAX;
    let perm = || prop_oneof![8 => 0u16..8, 1 => Just(8u16)];
    let users = prop::collection::vec(
        (prop::sample::select(vec![1000u32, 1001, 0, 7]), 0u16..8),
        0..3,
    );
    let groups = prop::collection::vec(
        (prop::sample::select(vec![100u32, 0, 1000, 9]), 0u16..8),
        0..3,
    );
    let well_formed = (
        (0u16..8, 0u16..8, 0u16..8, 0u16..8),
        users,
        groups,
        any::<bool>(),
    )
        .prop_map(|((owner, group, mask, other), users, groups, with_mask)| {
            let mut e = vec![(1u16, owner, U)];
            e.extend(users.iter().map(|&(id, p)| (2u16, p, id)));
            e.push((4, group, U));
            e.extend(groups.iter().map(|&(id, p)| (8u16, p, id)));
            if with_mask || !users.is_empty() || !groups.is_empty() {
                e.push((0x10, mask, U));
            }
            e.push((0x20, other, U));
            Bytes(vfscale::cred::acl::value_of(&e))
        });
    let broken = prop_oneof![
        Just(Bytes(vec![2, 0, 0])),
        Just(Bytes(vfscale::cred::acl::value_of(&[]))),
        Just(Bytes({
            let mut v = vfscale::cred::acl::value_of(&[(1, 7, U), (4, 5, U), (0x20, 5, U)]);
            v[0] = 1;
            v
        })),
        Just(Bytes({
            let mut v = vfscale::cred::acl::value_of(&[(1, 7, U), (4, 5, U), (0x20, 5, U)]);
            v.push(0);
            v
        })),
        Just(Bytes(vfscale::cred::acl::value_of(&[
            (4, 5, U),
            (1, 7, U),
            (0x20, 5, U)
        ]))),
        Just(Bytes(vfscale::cred::acl::value_of(&[
            (1, 7, U),
            (2, 7, 1000),
            (4, 5, U),
            (0x20, 5, U)
        ]))),
        Just(Bytes(vfscale::cred::acl::value_of(&[
            (1, 7, U),
            (2, 7, U),
            (4, 5, U),
            (0x10, 7, U),
            (0x20, 5, U)
        ]))),
        Just(Bytes(vfscale::cred::acl::value_of(&[
            (1, 7, U),
            (4, 5, U),
            (0x40, 5, U),
            (0x20, 5, U)
        ]))),
        Just(Bytes(vfscale::cred::acl::value_of(&[(1, 7, U), (4, 5, U)]))),
        perm().prop_map(|p| Bytes(vfscale::cred::acl::value_of(&[
            (1, p, U),
            (4, 5, U),
            (0x20, 5, U),
            (0x20, 5, U)
        ]))),
        perm().prop_map(|p| Bytes(vfscale::cred::acl::value_of(&[
            (1, 7, U),
            (4, p, U),
            (0x20, 8, U)
        ]))),
    ];
    prop_oneof![6 => well_formed, 2 => broken]
}

/// Where ACL calls go: mostly the prelude's directories and the busy
/// files (which exist often enough for an ACL to stick), sometimes a
/// descriptor.
fn acl_at() -> impl Strategy<Value = XattrAt> {
    prop_oneof![
        4 => prop::sample::select(vec![&b"/a"[..], b"/b", b"/", b"/a/c", b"/b/c", b"/a/d"])
            .prop_map(|p| XattrAt::Path(Bytes::from(p))),
        1 => fd_arg().prop_map(XattrAt::Fd),
    ]
}

/// POSIX ACL calls aimed where they take effect, so that sequences store
/// ACLs, read them back and meet them in later permission checks and
/// creates (the generic attribute ops reach an ACL too rarely: ~6% of
/// their sets stuck, and none was read back in 300 sequences).
fn acl_op() -> impl Strategy<Value = Op> {
    let name = || prop::sample::select(ACL_NAMES.to_vec()).prop_map(Bytes::from);
    prop_oneof![
        4 => (acl_at(), name(), acl_value()).prop_map(|(at, name, value)| Op::Setxattr {
            at,
            name,
            value,
            flags: 0
        }),
        2 => (acl_at(), name(), prop::sample::select(vec![0usize, 64]))
            .prop_map(|(at, name, len)| Op::Getxattr { at, name, len }),
        1 => (acl_at(), prop::sample::select(vec![0usize, 128]))
            .prop_map(|(at, len)| Op::Listxattr { at, len }),
        1 => (acl_at(), name()).prop_map(|(at, name)| Op::Removexattr { at, name }),
    ]
}

fn xattr_op() -> impl Strategy<Value = Op> {
    let flags = prop::sample::select(vec![
        0,
        0,
        0,
        XATTR_CREATE,
        XATTR_REPLACE,
        4,
        XATTR_CREATE | XATTR_REPLACE,
    ]);
    let acl_name = prop::sample::select(ACL_NAMES.to_vec()).prop_map(Bytes::from);
    let value = prop_oneof![
        20 => data(),
        1 => Just(Bytes(vec![b'v'; XATTR_SIZE_MAX + 1])),
    ];
    let len = prop::sample::select(vec![0usize, 2, 64]);
    prop_oneof![
        4 => (xattr_at(), xattr_name(), value, flags.clone())
            .prop_map(|(at, name, value, flags)| Op::Setxattr { at, name, value, flags }),
        3 => (xattr_at(), acl_name.clone(), acl_value(), flags)
            .prop_map(|(at, name, value, flags)| Op::Setxattr { at, name, value, flags }),
        1 => (xattr_at(), acl_name).prop_map(|(at, name)| Op::Removexattr { at, name }),
        3 => (xattr_at(), xattr_name(), len.clone())
            .prop_map(|(at, name, len)| Op::Getxattr { at, name, len }),
        2 => (xattr_at(), prop::sample::select(vec![0usize, 4, 64]))
            .prop_map(|(at, len)| Op::Listxattr { at, len }),
        2 => (xattr_at(), xattr_name()).prop_map(|(at, name)| Op::Removexattr { at, name }),
    ]
}

fn space_op() -> impl Strategy<Value = Op> {
    let fmode = prop_oneof![
        6 => prop::sample::select(vec![
            0,
            0,
            FALLOC_FL_KEEP_SIZE,
            FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            FALLOC_FL_PUNCH_HOLE,
            0x10,
        ]),
        // The other modes (collapse, insert, unshare, write zeroes), with
        // and without KEEP_SIZE, two modes at once, and a bit past them.
        1 => prop::sample::select(vec![
            0x08,
            0x20,
            0x40,
            0x80,
            0x10 | FALLOC_FL_KEEP_SIZE,
            0x08 | FALLOC_FL_KEEP_SIZE,
            0x40 | FALLOC_FL_KEEP_SIZE,
            0x10 | 0x40,
            0x100,
        ]),
    ];
    let flen = prop_oneof![
        4 => 1i64..64,
        2 => prop::sample::select(vec![4096i64, 8192, 5000]),
        1 => prop::sample::select(vec![0i64, -1, i64::MAX]),
    ];
    let cfr_off = prop_oneof![1 => Just(None), 1 => offset().prop_map(Some)];
    let mount_fd = prop_oneof![3 => fd_arg(), 1 => Just(FdArg::Cwd)];
    let handle_open_flags = prop::sample::select(vec![
        O_RDONLY,
        O_RDONLY,
        O_RDWR,
        O_WRONLY,
        O_PATH,
        O_RDONLY | O_DIRECTORY,
        O_RDONLY | O_NOFOLLOW,
    ]);
    prop_oneof![
        3 => (fd_arg(), fmode, offset(), flen)
            .prop_map(|(fd, mode, off, len)| Op::Fallocate { fd, mode, off, len }),
        3 => (
            fd_arg(),
            cfr_off.clone(),
            fd_arg(),
            cfr_off,
            prop_oneof![4 => 0usize..24, 1 => Just(1usize << 20)],
            prop::sample::select(vec![0u32, 0, 0, 1])
        )
            .prop_map(|(fd_in, off_in, fd_out, off_out, len, flags)| Op::CopyFileRange {
                fd_in,
                off_in,
                fd_out,
                off_out,
                len,
                flags
            }),
        1 => fd_arg().prop_map(Op::Syncfs),
        3 => (
            dirfd_arg(),
            busy_path(),
            prop::sample::select(vec![0, 0, 0, 0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, AT_HANDLE_FID, AT_HANDLE_MNT_ID_UNIQUE, AT_HANDLE_CONNECTABLE, AT_HANDLE_CONNECTABLE | AT_EMPTY_PATH, 4]),
            prop::sample::select(vec![MAX_HANDLE_SZ, MAX_HANDLE_SZ, MAX_HANDLE_SZ, 0, 4, MAX_HANDLE_SZ + 1]),
            prop_oneof![1 => Just(None), 2 => (mount_fd.clone(), handle_open_flags.clone()).prop_map(Some)]
        )
            .prop_map(|(dirfd, path, flags, size, open)| Op::NameToHandle { dirfd, path, flags, size, open }),
        2 => (mount_fd, 0u8..4, handle_open_flags)
            .prop_map(|(mount_fd, handle, flags)| Op::OpenByHandle { mount_fd, handle, flags }),
    ]
}

/// The inode-flag ioctls (chattr and lsattr). Sets are most of them (half
/// of them on a busy path, `Op::Chattr`), so
/// that immutable and append-only files and directories turn up in
/// sequences regularly (and make later calls fail with EPERM), and a set
/// often clears or lowers the flags again. Flags are drawn bit by bit from
/// the four tmpfs keeps (the two that only root may change less often),
/// sometimes with one it does not (EOPNOTSUPP); records mostly carry the
/// same four as xflags, sometimes the read-only FS_XFLAG_HASATTR or
/// FS_XFLAG_PREALLOC, an extent size flag, an xflag tmpfs refuses or one
/// Linux does not know,
/// an extent size, a project or an extent count.
fn fileattr_op() -> impl Strategy<Value = Op> {
    let bit = |p: f64, b: u32| prop::bool::weighted(p).prop_map(move |on| if on { b } else { 0 });
    // The four flags tmpfs keeps, in either spelling: the two only root
    // may change less often.
    let four = move |[i, a, d, n]: [u32; 4]| {
        (bit(0.3, i), bit(0.3, a), bit(0.4, d), bit(0.4, n)).prop_map(|(i, a, d, n)| i | a | d | n)
    };
    let kept = four([FS_IMMUTABLE_FL, FS_APPEND_FL, FS_NODUMP_FL, FS_NOATIME_FL]);
    let flags = prop_oneof![
        2 => Just(0u32),
        8 => kept.clone(),
        // Flags tmpfs does not keep: sync, secure deletion, DAX, project
        // inheritance, casefold (no encoding), an unknown high bit.
        1 => (
            prop::sample::select(vec![
                FS_SYNC_FL,
                0x1,
                FS_DAX_FL,
                FS_PROJINHERIT_FL,
                0x4000_0000,
                0x8000_0000,
            ]),
            kept.clone()
        )
            .prop_map(|(odd, f)| odd | f),
    ];
    let xkept = four([
        FS_XFLAG_IMMUTABLE,
        FS_XFLAG_APPEND,
        FS_XFLAG_NODUMP,
        FS_XFLAG_NOATIME,
    ]);
    let xflags = prop_oneof![
        6 => xkept.clone(),
        1 => xkept.clone().prop_map(|x| x | FS_XFLAG_HASATTR),
        // Extent size flags (cleared by a zero size, EINVAL on the wrong
        // type), xflags tmpfs refuses, bits Linux does not know.
        2 => (
            prop::sample::select(vec![
                FS_XFLAG_EXTSIZE,
                FS_XFLAG_EXTSZINHERIT,
                FS_XFLAG_COWEXTSIZE,
                FS_XFLAG_SYNC,
                FS_XFLAG_REALTIME,
                FS_XFLAG_DAX,
                FS_XFLAG_PROJINHERIT,
                FS_XFLAG_NODEFRAG,
                FS_XFLAG_PREALLOC,
                0x4,
                0x2_0000,
            ]),
            xkept
        )
            .prop_map(|(odd, x)| odd | x),
    ];
    let rare = |v: Vec<u32>| prop_oneof![8 => Just(0u32), 1 => prop::sample::select(v)];
    let attr = (
        xflags,
        rare(vec![4096, 1]),
        rare(vec![3]),
        rare(vec![1, u32::MAX]),
        rare(vec![4096]),
    )
        .prop_map(|(xflags, extsize, nextents, projid, cowextsize)| FsXattr {
            xflags,
            extsize,
            nextents,
            projid,
            cowextsize,
        });
    prop_oneof![
        2 => (fd_arg(), flags.clone()).prop_map(|(fd, flags)| Op::FsSetflags { fd, flags }),
        2 => (busy_path(), flags).prop_map(|(path, flags)| Op::Chattr { path, flags }),
        1 => (fd_arg(), attr).prop_map(|(fd, attr)| Op::FsSetxattr { fd, attr }),
        1 => fd_arg().prop_map(Op::FsGetflags),
        1 => fd_arg().prop_map(Op::FsGetxattr),
    ]
}

/// AF_UNIX socket calls by name: sockets, binds, listens, connects,
/// accepts, datagrams by name (their own group, so that a listener and a
/// client of the same name meet in one sequence often enough).
fn socket_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => prop::sample::select(vec![SOCK_STREAM, SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM, SOCK_STREAM | SOCK_CLOEXEC])
            .prop_map(|ty| Op::Socket { ty }),
        // A datagram "listener" is a bound datagram socket (its listen
        // says EOPNOTSUPP); a datagram client has a default peer.
        4 => (
            prop::sample::select(vec![SOCK_STREAM, SOCK_STREAM, SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM]),
            meeting_name(),
            prop::sample::select(vec![0, 1, 5])
        )
            .prop_map(|(ty, name, backlog)| Op::Listener { ty, name, backlog }),
        4 => (prop::sample::select(vec![SOCK_STREAM, SOCK_STREAM, SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM]), meeting_name())
            .prop_map(|(ty, name)| Op::Client { ty, name }),
        4 => (
            socket_fd(),
            prop::sample::select(vec![&b"d"[..], b"", b"0123456789"]).prop_map(Bytes::from),
            prop::sample::select(vec![0, 0, MSG_NOSIGNAL, 0x100000]),
            prop::option::weighted(0.6, socket_name())
        )
            .prop_map(|(fd, data, flags, name)| Op::Sendto { fd, data, flags, name }),
        4 => (
            socket_fd(),
            prop::sample::select(vec![0usize, 1, 16]),
            prop::sample::select(vec![0, 0, MSG_PEEK, MSG_TRUNC, MSG_PEEK | MSG_TRUNC, MSG_OOB, MSG_WAITALL])
        )
            .prop_map(|(fd, len, flags)| Op::Recvfrom { fd, len, flags }),
        // Files favour the newest descriptors (the sockets and pipes just
        // made), so sockets travel over sockets.
        4 => (
            socket_fd(),
            prop::sample::select(vec![&b"d"[..], b"", b"0123456789"]).prop_map(Bytes::from),
            prop::option::weighted(0.2, socket_name()),
            prop::collection::vec(socket_fd(), 0..4),
            prop::option::weighted(0.3, creds_arg())
        )
            .prop_map(|(fd, data, name, rights, creds)| Op::Sendmsg { fd, data, flags: 0, name, rights, creds }),
        // Control buffers: none, room for 1 or 4 descriptors, for the
        // credentials alone or with one descriptor, and two cut short.
        4 => (
            socket_fd(),
            prop::sample::select(vec![0usize, 1, 16]),
            prop::sample::select(vec![0, 0, MSG_PEEK, MSG_TRUNC, MSG_CMSG_CLOEXEC, MSG_WAITALL]),
            prop::sample::select(vec![
                0usize,
                cmsg_space(4),
                cmsg_space(16),
                cmsg_space(12),
                cmsg_space(12) + cmsg_space(4),
                cmsg_space(12) + cmsg_space(4),
                20,
                cmsg_len(12)
            ])
        )
            .prop_map(|(fd, len, flags, control)| Op::Recvmsg { fd, len, flags, control }),
        // SO_SNDBUF's smallest budget (a value of 0 or 1) changes what
        // later sends let in; the timeouts are "never wait" (a negative
        // second count) or 5 ms, so no call here sleeps long.
        3 => (
            socket_fd(),
            prop::sample::select(vec![SOL_SOCKET, SOL_SOCKET, SOL_SOCKET, SOL_SOCKET, SOL_SOCKET, 6]),
            prop::sample::select(vec![
                SO_PASSCRED, SO_PASSCRED, SO_PASSCRED, SO_TYPE, 999, SO_SNDBUF, SO_SNDBUF, SO_RCVBUF,
                SO_RCVLOWAT, SO_RCVTIMEO, SO_SNDTIMEO_NEW, SO_LINGER, SO_KEEPALIVE, SO_BUF_LOCK, SO_PEEK_OFF,
                SO_PEEK_OFF
            ]),
            prop::sample::select(vec![
                [1u8, 0, 0, 0].to_vec(),
                [1, 0, 0, 0].to_vec(),
                [0, 0, 0, 0].to_vec(),
                [1, 0].to_vec(),
                [0xb8, 0x0b, 0, 0].to_vec(),
                [(-1i64).to_le_bytes(), 0i64.to_le_bytes()].concat(),
                [0i64.to_le_bytes(), 5000i64.to_le_bytes()].concat(),
                [1i32.to_le_bytes(), 3i32.to_le_bytes()].concat()
            ])
            .prop_map(Bytes)
        )
            .prop_map(|(fd, level, name, value)| Op::Setsockopt { fd, level, name, value }),
        2 => (
            socket_fd(),
            prop::sample::select(vec![SOL_SOCKET, SOL_SOCKET, SOL_SOCKET, SOL_SOCKET, 6]),
            prop::sample::select(vec![
                SO_TYPE, SO_ERROR, SO_SNDBUF, SO_RCVBUF, SO_PASSCRED, SO_PEERCRED, SO_ACCEPTCONN, SO_PROTOCOL,
                SO_DOMAIN, 999, SO_RCVLOWAT, SO_SNDLOWAT, SO_RCVTIMEO, SO_SNDTIMEO_NEW, SO_LINGER, SO_BUF_LOCK,
                SO_KEEPALIVE, SO_PEEK_OFF, SO_PEERGROUPS
            ]),
            prop::sample::select(vec![4usize, 4, 2, 12, 16])
        )
            .prop_map(|(fd, level, name, len)| Op::Getsockopt { fd, level, name, len }),
        2 => (socket_fd(), socket_name()).prop_map(|(fd, name)| Op::Bind { fd, name }),
        2 => (socket_fd(), prop::sample::select(vec![0, 1, 5, -1])).prop_map(|(fd, backlog)| Op::Listen { fd, backlog }),
        3 => (socket_fd(), socket_name()).prop_map(|(fd, name)| Op::Connect { fd, name }),
        5 => (socket_fd(), prop::sample::select(vec![0, SOCK_CLOEXEC, 0x40])).prop_map(|(fd, flags)| Op::Accept4 { fd, flags }),
        1 => (socket_fd(), any::<bool>()).prop_map(|(fd, peer)| Op::SockName { fd, peer }),
        1 => socket_fd().prop_map(Op::Disconnect),
        1 => socket_fd().prop_map(Op::PeerCred),
        2 => (socket_fd(), prop::sample::select(vec![SHUT_RD, SHUT_WR, SHUT_RDWR, 3]))
            .prop_map(|(fd, how)| Op::Shutdown { fd, how }),
    ]
}

/// Anonymous objects and descriptor control. Every pipe, socket and
/// eventfd is non-blocking (a blocking read of an empty one would hang the
/// sequence), and F_SETFL keeps O_NONBLOCK.
fn anon_op() -> impl Strategy<Value = Op> {
    let fcntl_cmd = prop_oneof![
        (
            prop::sample::select(vec![F_DUPFD, F_DUPFD_CLOEXEC]),
            prop::sample::select(vec![0i64, 5, 100, -1])
        ),
        (Just(F_GETFD), Just(0i64)),
        (
            Just(F_SETFD),
            prop::sample::select(vec![0i64, FD_CLOEXEC as i64])
        ),
        (Just(F_GETFL), Just(0i64)),
        (
            Just(F_SETFL),
            prop::sample::select(vec![
                O_NONBLOCK,
                O_NONBLOCK | O_APPEND,
                O_NONBLOCK | O_NOATIME,
                O_NONBLOCK | O_DIRECT,
                O_NONBLOCK | O_RDWR | O_TRUNC,
            ])
            .prop_map(i64::from)
        ),
        (Just(F_GETPIPE_SZ), Just(0i64)),
        (
            Just(F_SETPIPE_SZ),
            prop::sample::select(vec![0i64, 4096, 1 << 16, 1 << 20, 1 << 21, -1])
        ),
        (Just(F_GET_SEALS), Just(0i64)),
        (
            Just(F_ADD_SEALS),
            prop::sample::select(vec![
                F_SEAL_SEAL,
                F_SEAL_SHRINK,
                F_SEAL_GROW,
                F_SEAL_WRITE,
                F_SEAL_FUTURE_WRITE,
                F_SEAL_EXEC,
                F_SEAL_SHRINK | F_SEAL_GROW,
                0x40,
            ])
            .prop_map(i64::from)
        ),
        // Descriptor numbers as ints (the upper half is dropped).
        (
            Just(F_DUPFD_QUERY),
            prop::sample::select(vec![0i64, 1, 2, 3, 4, -1, (1 << 32) + 1])
        ),
        (Just(F_CREATED_QUERY), Just(0i64)),
        (Just(F_GET_RW_HINT), Just(0i64)),
        (
            Just(F_SET_RW_HINT),
            prop::sample::select(vec![0i64, 2, 5, 6, -1])
        ),
        (Just(1234), Just(0i64)),
    ];
    let events = prop::sample::select(vec![POLLIN, POLLOUT, POLLIN | POLLOUT, 0]);
    prop_oneof![
        2 => prop::sample::select(vec![O_NONBLOCK, O_NONBLOCK | O_CLOEXEC, O_NONBLOCK | O_DIRECT, 1]).prop_map(Op::Pipe2),
        3 => prop::sample::select(vec![SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_STREAM | SOCK_CLOEXEC, 3, SOCK_STREAM | 0x40000])
            .prop_map(|t| Op::Socketpair { domain: AF_UNIX, ty: t | SOCK_NONBLOCK }),
        // Other families: Internet ones cannot pair, unknown ones do not exist.
        1 => (
            prop::sample::select(vec![AF_INET, AF_INET6, 0]),
            prop::sample::select(vec![SOCK_STREAM, SOCK_DGRAM])
        )
            .prop_map(|(domain, t)| Op::Socketpair { domain, ty: t | SOCK_NONBLOCK }),
        2 => (
            prop::sample::select(vec![0u32, 1, 5]),
            prop::sample::select(vec![EFD_NONBLOCK, EFD_NONBLOCK | EFD_SEMAPHORE, EFD_NONBLOCK | EFD_CLOEXEC, EFD_NONBLOCK | 0x40])
        )
            .prop_map(|(init, flags)| Op::Eventfd { init, flags }),
        2 => (
            prop_oneof![
                4 => prop::sample::select(vec![&b"m"[..], b"", b"a b", b"x/y"]).prop_map(Bytes::from),
                1 => Just(Bytes(vec![b'n'; MFD_NAME_MAX + 1])),
            ],
            prop::sample::select(vec![
                0u32,
                MFD_CLOEXEC,
                MFD_ALLOW_SEALING,
                MFD_NOEXEC_SEAL,
                MFD_EXEC | MFD_ALLOW_SEALING,
                MFD_EXEC | MFD_NOEXEC_SEAL,
                0x100,
            ])
        )
            .prop_map(|(name, flags)| Op::MemfdCreate { name, flags }),
        2 => prop::collection::vec((fd_arg(), events), 1..4).prop_map(Op::Poll),
        3 => (fd_arg(), fcntl_cmd).prop_map(|(fd, (cmd, arg))| Op::Fcntl { fd, cmd, arg }),
        2 => fd_arg().prop_map(Op::FdPath),
        2 => prop_oneof![fd_arg(), (0u8..3).prop_map(FdArg::Recent)].prop_map(Op::FionRead),
    ]
}

/// The descriptor of a socket call: mostly one of the sequence's own
/// (the plain `fd_arg` favours AT_FDCWD, which only ever says EBADF here).
/// Credentials as compared: whether a pid is given (each side numbers its
/// processes its own way), then the uid and the gid.
fn ucred_outcome(c: Ucred) -> Outcome {
    Outcome::Seq(vec![
        Outcome::Count(usize::from(c.pid != 0)),
        Outcome::Count(c.uid as usize),
        Outcome::Count(c.gid as usize),
    ])
}

/// SO_PEERCRED's bytes (`buf`, possibly cut short) with the pid's part
/// replaced by whether a pid is given: each side numbers its processes
/// its own way.
pub fn mask_pid(buf: &mut [u8]) {
    let k = buf.len().min(4);
    let given = buf[..k].iter().any(|&b| b != 0);
    buf[..k].fill(0);
    if let Some(b) = buf.first_mut() {
        *b = u8::from(given);
    }
}

/// sendmsg's credentials: the ids of the sequences' users (root; uid 1000
/// and 1001 in group 100) and -1.
fn creds_arg() -> impl Strategy<Value = CredsArg> {
    let id = prop::sample::select(vec![0u32, 1000, 1001, 100, u32::MAX]);
    (
        prop_oneof![6 => Just(PidArg::Own), 1 => Just(PidArg::One), 1 => Just(PidArg::Zero)],
        id.clone(),
        id,
    )
        .prop_map(|(pid, uid, gid)| CredsArg { pid, uid, gid })
}

fn socket_fd() -> impl Strategy<Value = FdArg> {
    prop_oneof![
        5 => (0u8..8).prop_map(FdArg::Slot),
        4 => (0u8..3).prop_map(FdArg::Recent),
        1 => Just(FdArg::Cwd),
        1 => Just(FdArg::Raw(-1))
    ]
}

/// AF_UNIX names: a small pool that binds and connects share (two
/// abstract names, two paths), other paths of the sequence's tree, empty
/// (autobind), and one past sun_path.
fn socket_name() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        12 => prop::sample::select(vec![&b"\0vfscale-kd-a"[..], b"\0vfscale-kd-b", b"/s", b"/a/s"]).prop_map(Bytes::from),
        2 => path_strategy(),
        1 => Just(Bytes(Vec::new())),
        1 => Just(Bytes(vec![b'x'; 109])),
    ]
}

/// The names of the composite listener and client steps: mostly one of
/// two, so that a client finds a listener in the same sequence.
fn meeting_name() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        8 => prop::sample::select(vec![&b"\0vfscale-kd-a"[..], b"/s"]).prop_map(Bytes::from),
        2 => socket_name(),
    ]
}

fn mode() -> impl Strategy<Value = u32> {
    prop_oneof![
        12 => prop::sample::select(vec![
            0o777, 0o755, 0o644, 0o600, 0o000, 0o4755, 0o2755, 0o2775, 0o1777, 0o700, 0o070, 0o007,
        ]),
        // Rarer: set-group-ID without group execution (kept on write and
        // chown, unlike 0o2755), both set-id bits, every bit, and bits
        // past S_IALLUGO (a type's, dropped).
        2 => prop::sample::select(vec![0o2644, 0o2600, 0o6755, 0o4644, 0o7777, S_IFREG | 0o644, 0o177777]),
    ]
}

fn open_flags() -> impl Strategy<Value = i32> {
    let extra = prop::sample::subsequence(
        vec![
            O_EXCL,
            O_TRUNC,
            O_APPEND,
            O_DIRECTORY,
            O_NOFOLLOW,
            O_CLOEXEC,
            O_DIRECT,
            O_NOATIME,
        ],
        0..=2,
    );
    (
        prop::sample::select(vec![O_RDONLY, O_WRONLY, O_RDWR]),
        prop::bool::weighted(0.6),
        extra,
        0u8..24,
    )
        .prop_map(|(acc, creat, extra, special)| {
            let mut f = acc | extra.into_iter().fold(0, |a, b| a | b);
            if creat {
                f |= O_CREAT;
            }
            match special {
                0 => f |= O_PATH,
                // An unnamed file (EINVAL read-only); the extras may
                // add O_EXCL (never linkable) among others.
                1 | 3 => f = (f & !O_CREAT) | O_TMPFILE,
                // ... and with O_CREAT, EINVAL.
                4 => f |= O_TMPFILE,
                2 => f |= 3,
                // Rarer flags: O_NONBLOCK (a FIFO's O_RDONLY open), the
                // sync ones, those open ignores, and a bit Linux does not
                // know (dropped).
                20 => f |= O_NONBLOCK,
                21 => f |= O_SYNC,
                22 => f |= O_DSYNC | O_NOCTTY | O_LARGEFILE,
                23 => f |= 0x4000_0000,
                _ => {}
            }
            f
        })
}

fn offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => 0i64..64,
        2 => prop::sample::select(vec![4095, 4096, 4097, 8192]),
        1 => prop::sample::select(vec![-1, 1 << 40, i64::MAX]),
    ]
}

fn at_flags() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => prop::sample::select(vec![
            0,
            0,
            AT_SYMLINK_NOFOLLOW,
            AT_EMPTY_PATH,
            AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
            0x8000,
        ]),
        // stat's other flags (EINVAL for chmod, chown and utimensat):
        // AT_NO_AUTOMOUNT, AT_STATX_FORCE_SYNC, AT_STATX_DONT_SYNC, and
        // both sync bits (EINVAL for statx only).
        1 => prop::sample::select(vec![
            AT_NO_AUTOMOUNT,
            AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW,
            AT_STATX_FORCE_SYNC,
            AT_STATX_DONT_SYNC | AT_EMPTY_PATH,
            AT_STATX_SYNC_TYPE,
        ]),
    ]
}

fn ids() -> impl Strategy<Value = (u32, u32)> {
    let v = vec![0, 100, 1000, 1001, u32::MAX];
    (prop::sample::select(v.clone()), prop::sample::select(v))
}

fn times() -> impl Strategy<Value = Option<[Timespec; 2]>> {
    let t = prop::sample::select(vec![
        Timespec::NOW,
        Timespec::OMIT,
        Timespec::new(1000, 0),
        Timespec::new(0, 1_000_000_000),
        Timespec::new(0, -1),
        Timespec::new(-1, 5),
    ]);
    prop_oneof![1 => Just(None), 3 => (t.clone(), t).prop_map(|(a, m)| Some([a, m]))]
}

/// An op that does not fork (the body of a forked child).
fn leaf_op() -> BoxedStrategy<Op> {
    let files = prop_oneof![
        8 => (dirfd_arg(), path_strategy(), open_flags(), mode())
            .prop_map(|(dirfd, path, flags, mode)| Op::Open {
                dirfd,
                path,
                flags,
                mode
            })
            .boxed(),
        3 => prop::sample::select(vec![&b"/a"[..], b"/b", b".", b"/", b"/a/c"])
            .prop_map(|path| Op::Open {
                dirfd: FdArg::Cwd,
                path: path.into(),
                flags: O_RDONLY | O_DIRECTORY,
                mode: 0
            })
            .boxed(),
        3 => (
            prop::sample::select(vec![&b"/a/"[..], b"/b/"]),
            prop::sample::select(vec![&b"c"[..], b"d", b"e"])
        )
            .prop_map(|(dir, name)| Op::Open {
                dirfd: FdArg::Cwd,
                path: Bytes([dir, name].concat()),
                flags: O_CREAT | O_RDWR,
                mode: 0o644
            })
            .boxed(),
        // openat2: a mode where it does not belong now and then (EINVAL),
        // relative paths more often than open's (a scoped walk refuses
        // absolute ones).
        3 => (
            dirfd_arg(),
            prop_oneof![path_strategy(), relative_path()],
            open_flags(),
            mode(),
            prop::bool::weighted(0.9),
            resolve_flags()
        )
            .prop_map(|(dirfd, path, flags, mode, fitting, resolve)| {
                let creates = flags & (O_CREAT | __O_TMPFILE) != 0;
                let mode = if creates || !fitting { u64::from(mode) } else { 0 };
                let flags = flags as u32 as u64;
                Op::Openat2 { dirfd, path, how: OpenHow { flags, mode, resolve } }
            })
            .boxed(),
        1 => fd_arg().prop_map(Op::Close).boxed(),
        1 => (
            0u32..6,
            prop::sample::select(vec![0u32, 2, 5, u32::MAX]),
            prop::sample::select(vec![0u32, 0, CLOSE_RANGE_CLOEXEC, 1, CLOSE_RANGE_UNSHARE, CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC])
        )
            .prop_map(|(first, last, flags)| Op::CloseRange { first, last, flags })
            .boxed(),
        1 => fd_arg().prop_map(Op::Dup).boxed(),
        1 => (fd_arg(), fd_arg())
            .prop_map(|(a, b)| Op::Dup2(a, b))
            .boxed(),
        1 => (
            fd_arg(),
            fd_arg(),
            prop::sample::select(vec![0, O_CLOEXEC, 1])
        )
            .prop_map(|(a, b, f)| Op::Dup3(a, b, f))
            .boxed(),
        1 => fd_arg().prop_map(Op::Fsync).boxed(),
        1 => fd_arg().prop_map(Op::Fdatasync).boxed(),
    ];
    let io = prop_oneof![
        (fd_arg(), 0usize..24)
            .prop_map(|(fd, len)| Op::Read { fd, len })
            .boxed(),
        (fd_arg(), data())
            .prop_map(|(fd, data)| Op::Write { fd, data })
            .boxed(),
        (fd_arg(), 0usize..24, offset())
            .prop_map(|(fd, len, off)| Op::Pread { fd, len, off })
            .boxed(),
        (fd_arg(), data(), offset())
            .prop_map(|(fd, data, off)| Op::Pwrite { fd, data, off })
            .boxed(),
        (fd_arg(), prop::collection::vec(0usize..8, 0..4))
            .prop_map(|(fd, lens)| Op::Readv { fd, lens })
            .boxed(),
        (fd_arg(), prop::collection::vec(data(), 0..4))
            .prop_map(|(fd, data)| Op::Writev { fd, data })
            .boxed(),
        (fd_arg(), offset(), -1i32..=5)
            .prop_map(|(fd, off, whence)| Op::Lseek { fd, off, whence })
            .boxed(),
        (fd_arg(), offset())
            .prop_map(|(fd, len)| Op::Ftruncate { fd, len })
            .boxed(),
        (path_strategy(), offset())
            .prop_map(|(path, len)| Op::Truncate { path, len })
            .boxed(),
    ];
    let attrs = prop_oneof![
        fd_arg().prop_map(Op::Fstat).boxed(),
        (dirfd_arg(), path_strategy(), at_flags())
            .prop_map(|(dirfd, path, flags)| Op::Fstatat { dirfd, path, flags })
            .boxed(),
        (
            dirfd_arg(),
            path_strategy(),
            at_flags(),
            prop_oneof![
                8 => Just(STATX_BASIC_STATS),
                // No field, btime, everything, and the reserved bit
                // (EINVAL).
                1 => prop::sample::select(vec![0, STATX_BTIME, STATX_BASIC_STATS | STATX_BTIME, 0x8000_0000, u32::MAX]),
            ]
        )
            .prop_map(|(dirfd, path, flags, mask)| Op::Statx {
                dirfd,
                path,
                flags,
                mask
            })
            .boxed(),
        (
            dirfd_arg(),
            path_strategy(),
            0i32..=8,
            prop_oneof![
                8 => prop::sample::select(vec![0, AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH]),
                1 => prop::sample::select(vec![AT_EACCESS | AT_SYMLINK_NOFOLLOW, AT_EACCESS | AT_EMPTY_PATH, 0x8000]),
            ]
        )
            .prop_map(|(dirfd, path, mode, flags)| Op::Faccessat {
                dirfd,
                path,
                mode,
                flags
            })
            .boxed(),
        (dirfd_arg(), path_strategy(), mode(), at_flags())
            .prop_map(|(dirfd, path, mode, flags)| Op::Fchmodat {
                dirfd,
                path,
                mode,
                flags
            })
            .boxed(),
        (fd_arg(), mode())
            .prop_map(|(fd, mode)| Op::Fchmod { fd, mode })
            .boxed(),
        (dirfd_arg(), path_strategy(), ids(), at_flags())
            .prop_map(|(dirfd, path, (uid, gid), flags)| Op::Fchownat {
                dirfd,
                path,
                uid,
                gid,
                flags
            })
            .boxed(),
        (fd_arg(), ids())
            .prop_map(|(fd, (uid, gid))| Op::Fchown { fd, uid, gid })
            .boxed(),
        (dirfd_arg(), path_strategy(), times(), at_flags())
            .prop_map(|(dirfd, path, times, flags)| Op::Utimensat {
                dirfd,
                path,
                times,
                flags
            })
            .boxed(),
        (fd_arg(), times())
            .prop_map(|(fd, times)| Op::Futimens { fd, times })
            .boxed(),
        path_strategy().prop_map(Op::Statfs).boxed(),
        fd_arg().prop_map(Op::Fstatfs).boxed(),
    ];
    let names = prop_oneof![
        4 => (dirfd_arg(), path_strategy(), mode()).prop_map(|(dirfd, path, mode)| Op::Mkdirat { dirfd, path, mode }).boxed(),
        1 => (
            dirfd_arg(),
            path_strategy(),
            prop_oneof![
                4 => prop::sample::select(vec![S_IFIFO | 0o644, S_IFREG | 0o600, 0o644, S_IFCHR, S_IFCHR | 0o600, S_IFDIR | 0o755, S_IFSOCK | 0o755]),
                // Block devices, a symlink's type (EINVAL), set-id bits.
                1 => prop::sample::select(vec![S_IFBLK, S_IFBLK | 0o600, S_IFLNK | 0o777, S_IFREG | 0o6755, S_IFSOCK | 0o2644]),
            ],
            prop_oneof![8 => prop::sample::select(vec![0u64, 0x0103]), 1 => Just(1u64 << 32)]
        )
            .prop_map(|(dirfd, path, mode, dev)| Op::Mknodat { dirfd, path, mode, dev }).boxed(),
        3 => (dirfd_arg(), path_strategy(), prop::sample::select(vec![0, 0, AT_REMOVEDIR, 1]))
            .prop_map(|(dirfd, path, flags)| Op::Unlinkat { dirfd, path, flags }).boxed(),
        3 => (dirfd_arg(), path_strategy(), dirfd_arg(), path_strategy(), prop_oneof![
            7 => prop::sample::select(vec![0u32, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT, RENAME_EXCHANGE | RENAME_NOREPLACE]),
            1 => prop::sample::select(vec![RENAME_WHITEOUT | RENAME_NOREPLACE, RENAME_EXCHANGE | RENAME_WHITEOUT, 8]),
        ])
            .prop_map(|(olddirfd, old, newdirfd, new, flags)| Op::Renameat2 { olddirfd, old, newdirfd, new, flags }).boxed(),
        // Linking an open file by its descriptor (an O_TMPFILE file's
        // first name among them).
        1 => (fd_arg(), dirfd_arg(), path_strategy(), prop::sample::select(vec![AT_EMPTY_PATH, AT_EMPTY_PATH | AT_SYMLINK_FOLLOW]))
            .prop_map(|(olddirfd, newdirfd, new, flags)| Op::Linkat { olddirfd, old: Bytes(Vec::new()), newdirfd, new, flags }).boxed(),
        2 => (dirfd_arg(), path_strategy(), dirfd_arg(), path_strategy(), prop::sample::select(vec![0, 0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, 1]))
            .prop_map(|(olddirfd, old, newdirfd, new, flags)| Op::Linkat { olddirfd, old, newdirfd, new, flags }).boxed(),
        2 => (path_strategy(), dirfd_arg(), prop::sample::select(vec![&b"/a/l"[..], b"/l", b"l", b"/b/l"]))
            .prop_map(|(target, dirfd, path)| Op::Symlinkat { target, dirfd, path: path.into() }).boxed(),
        1 => (dirfd_arg(), path_strategy(), prop::sample::select(vec![0usize, 2, 64]))
            .prop_map(|(dirfd, path, len)| Op::Readlinkat { dirfd, path, len }).boxed(),
        2 => (fd_arg(), prop::sample::select(vec![0usize, 10, 24, 48, 100, 4096]))
            .prop_map(|(fd, len)| Op::Getdents64 { fd, len }).boxed(),
    ];
    let context = prop_oneof![
        4 => path_strategy().prop_map(Op::Chdir).boxed(),
        1 => fd_arg().prop_map(Op::Fchdir).boxed(),
        2 => Just(Op::Getcwd),
        1 => path_strategy().prop_map(Op::Chroot).boxed(),
        1 => prop::sample::select(vec![0o022u32, 0o077, 0, 0o7777]).prop_map(Op::Umask).boxed(),
        1 => (
            prop::sample::select(vec![&b""[..], b"/a", b"/b/c", b"none"]),
            // Often a mount's root (or a directory that may become one):
            // propagation changes, remounts and umounts need one.
            prop_oneof![
                2 => path_strategy(),
                1 => prop::sample::select(vec![&b"/a"[..], b"/b", b"/b/c", b"/a/c", b"/"]).prop_map(Bytes::from),
            ],
            prop::sample::select(vec![&b"tmpfs"[..], b"tmpfs", b"ext4"]),
            prop_oneof![
            5 => prop::sample::select(vec![
                0u64,
                0,
                MS_BIND,
                MS_BIND | MS_REC,
                MS_NOEXEC,
                MS_NOSUID | MS_NODEV,
                MS_NOATIME | MS_NODIRATIME,
                MS_STRICTATIME | MS_NOATIME,
                MS_NOSYMFOLLOW,
                MS_REMOUNT | MS_BIND | MS_NOEXEC,
                MS_REMOUNT | MS_NOSUID | MS_STRICTATIME,
                MS_PRIVATE | MS_REC,
                // Read-only: a new read-only instance, a mount or an
                // instance made read-only (EBUSY with writers or orphans)
                // and writable again, and a bind that ignores MS_RDONLY.
                MS_RDONLY,
                MS_RDONLY | MS_NOEXEC,
                MS_REMOUNT | MS_BIND | MS_RDONLY,
                MS_REMOUNT | MS_RDONLY,
                MS_REMOUNT,
                MS_BIND | MS_RDONLY,
                // Propagation: shared binds, then mounts and umounts under
                // them (pnode.rs).
                MS_SHARED,
                MS_SHARED | MS_REC,
                MS_SLAVE,
                MS_UNBINDABLE,
                MS_PRIVATE,
            ]),
            // Rarer: the old magic number, MS_NOUSER (EINVAL), the
            // propagation types with MS_REC or MS_SILENT, or two at once
            // (EINVAL), the superblock flags (MS_SYNCHRONOUS, MS_MANDLOCK) and
            // MS_LAZYTIME, the other atime flags, a remount that names an
            // atime flag.
            2 => prop::sample::select(vec![
                MS_MGC_VAL | MS_NOEXEC,
                MS_MGC_VAL | MS_BIND,
                MS_NOUSER,
                MS_PRIVATE,
                MS_SLAVE,
                MS_SLAVE | MS_REC,
                MS_PRIVATE | MS_SILENT,
                MS_PRIVATE | MS_SLAVE,
                MS_SHARED,
                MS_UNBINDABLE | MS_REC,
                MS_MOVE,
                MS_SYNCHRONOUS,
                MS_MANDLOCK | MS_NOSUID,
                MS_REMOUNT | MS_SYNCHRONOUS,
                MS_LAZYTIME | MS_NOEXEC,
                MS_RELATIME | MS_NODIRATIME,
                MS_NODIRATIME,
                MS_REMOUNT | MS_NOATIME,
                MS_REMOUNT | MS_BIND | MS_RELATIME,
                MS_REMOUNT | MS_BIND | MS_NODIRATIME,
            ]),
            ],
        )
            .prop_map(|(source, target, fstype, flags)| Op::Mount {
                source: source.into(),
                target,
                fstype: fstype.into(),
                flags
            }).boxed(),
        1 => (path_strategy(), prop::sample::select(vec![0, 0, MNT_DETACH, UMOUNT_NOFOLLOW, MNT_EXPIRE, 0x10, MNT_FORCE, MNT_FORCE | MNT_DETACH]))
            .prop_map(|(target, flags)| Op::Umount2 { target, flags }).boxed(),
        // MS_MOVE of whatever a path names (mostly not a mount's root:
        // EINVAL) onto another.
        1 => (path_strategy(), path_strategy(), prop::sample::select(vec![MS_MOVE, MS_MOVE, MS_MOVE | MS_REC]))
            .prop_map(|(source, target, flags)| Op::Mount {
                source,
                target,
                fstype: Bytes(Vec::new()),
                flags
            }).boxed(),
    ];
    prop_oneof![
        9 => files.boxed(),
        4 => io.boxed(),
        4 => attrs.boxed(),
        6 => names.boxed(),
        2 => context.boxed(),
        2 => xattr_op().boxed(),
        1 => acl_op().boxed(),
        3 => space_op().boxed(),
        2 => fileattr_op().boxed(),
        3 => anon_op().boxed(),
        3 => socket_op().boxed(),
    ]
    .boxed()
}

/// Any op, forks included (a child runs up to 4 leaf ops).
pub fn op_strategy() -> BoxedStrategy<Op> {
    prop_oneof![
        30 => leaf_op(),
        1 => prop::collection::vec(leaf_op(), 0..4).prop_map(Op::Fork).boxed(),
    ]
    .boxed()
}

/// Mount-heavy steps for the propagation comparisons (model and kernel,
/// core and kernel, core and model): type changes (each type, with and
/// without MS_REC), binds, new mounts, moves and umounts (plain and lazy)
/// over a few directories, with directories made, files created (left
/// open: busy mounts) and cwds moved (busy too) in between.
pub fn propagation_steps() -> impl Strategy<Value = Vec<Step>> {
    let dirs = || {
        prop::sample::select(vec![
            &b"/"[..],
            b"/a",
            b"/b",
            b"/a/c",
            b"/b/c",
            b"/a/d",
            b"/b/d",
            b"/a/c/d",
            b"/b/c/d",
            b"/b/c/c",
        ])
        .prop_map(Bytes::from)
    };
    let mount = |source: Bytes, target, fstype: &[u8], flags| Op::Mount {
        source,
        target,
        fstype: fstype.into(),
        flags,
    };
    let root_op = prop_oneof![
        3 => dirs().prop_map(|path| Op::Mkdirat { dirfd: FdArg::Cwd, path, mode: 0o777 }),
        5 => (dirs(), prop::sample::select(vec![
            MS_SHARED,
            MS_SHARED | MS_REC,
            MS_SLAVE,
            MS_SLAVE | MS_REC,
            MS_PRIVATE,
            MS_PRIVATE | MS_REC,
            MS_UNBINDABLE,
            MS_UNBINDABLE | MS_REC,
        ]))
            .prop_map(move |(target, flags)| mount(b""[..].into(), target, b"", flags)),
        4 => (dirs(), dirs(), prop::sample::select(vec![MS_BIND, MS_BIND | MS_REC]))
            .prop_map(move |(source, target, flags)| mount(source, target, b"", flags)),
        3 => dirs().prop_map(move |target| mount(b"none"[..].into(), target, b"tmpfs", 0)),
        1 => (dirs(), dirs()).prop_map(move |(source, target)| mount(source, target, b"", MS_MOVE)),
        3 => (dirs(), prop::sample::select(vec![0, 0, MNT_DETACH]))
            .prop_map(|(target, flags)| Op::Umount2 { target, flags }),
        1 => dirs().prop_map(|d| Op::Open {
            dirfd: FdArg::Cwd,
            path: Bytes([&d.0[..], b"/f"].concat()),
            flags: O_CREAT | O_RDWR,
            mode: 0o666,
        }),
        1 => (0..4u8).prop_map(|k| Op::Close(FdArg::Slot(k))),
    ];
    let step = prop_oneof![
        12 => root_op.prop_map(|op| Step { proc: 0, op }),
        // Another process's cwd keeps a mount busy.
        1 => (1..3usize, dirs()).prop_map(|(proc, d)| Step { proc, op: Op::Chdir(d) }),
    ];
    // A tmpfs at /a and directories to mount on, /a often shared.
    let setup = prop::bool::ANY.prop_map(move |shared| {
        let mut ops = vec![mount(b"none"[..].into(), b"/a"[..].into(), b"tmpfs", 0)];
        for d in [&b"/a/c"[..], b"/a/d", b"/a/c/d", b"/b/c", b"/b/d"] {
            ops.push(Op::Mkdirat {
                dirfd: FdArg::Cwd,
                path: d.into(),
                mode: 0o777,
            });
        }
        if shared {
            ops.push(mount(b""[..].into(), b"/a"[..].into(), b"", MS_SHARED));
        }
        ops.into_iter()
            .map(|op| Step { proc: 0, op })
            .collect::<Vec<_>>()
    });
    (setup, prop::collection::vec(step, 1..40)).prop_map(|(mut all, steps)| {
        all.extend(steps);
        all
    })
}

/// A scenario of `len` steps spread over `procs` processes.
pub fn steps_strategy(
    procs: usize,
    len: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0..procs, op_strategy()).prop_map(|(proc, op)| Step { proc, op }),
        len,
    )
}

#[cfg(test)]
mod tests {
    use super::without_inode_numbers;

    #[test]
    fn descriptor_paths_lose_only_inode_numbers() {
        let cases: [(&[u8], &[u8]); 5] = [
            (b"pipe:[1234]", b"pipe:[]"),
            (b"anon_inode:[eventfd]", b"anon_inode:[eventfd]"),
            (b"/a/#200052 (deleted)", b"/a/# (deleted)"),
            (b"/a/c2/x#1", b"/a/c2/x#1"),
            (b"/memfd:m1 (deleted)", b"/memfd:m1 (deleted)"),
        ];
        for (path, want) in cases {
            assert_eq!(without_inode_numbers(path), want, "{path:?}");
        }
    }
}
