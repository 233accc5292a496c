//! The classic transport: fuser's `Filesystem`, fed by requests read from
//! /dev/fuse. Each method converts fuser's decoded arguments, calls the one
//! matching operation in `ops.rs` (shared with the io_uring transport) and
//! delivers its `Reply` through fuser's reply object.
//!
//! Invariants: every request gets exactly one reply (the reply object is
//! consumed by `Deliver::deliver`); a `Reply` variant that does not fit
//! the request's reply type cannot come from `ops.rs` and is sent as EIO.
//! FORGET and INTERRUPT always arrive here, also on a mount served over
//! io_uring (the kernel queues them on /dev/fuse only).

use crate::convert::{attr, dtype_kind, errno, timespec};
pub use crate::ops::Ttls;
use crate::ops::{Caller, DirPlusSink, DirSink, Ops, Reply};
use fuser::{
    AccessFlags, CopyFileRangeFlags, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, IoctlFlags, KernelConfig, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen,
    ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use vfscale::abi::Stat;
use vfscale::{Namespace, SetAttr};

/// What FUSE_INIT settled about the io_uring transport (`UringInit`).
pub(crate) const URING_NOT_ASKED: u8 = 0;
pub(crate) const URING_GRANTED: u8 = 1;
pub(crate) const URING_REFUSED: u8 = 2;

/// The max_write asked for when the ring is: every ring entry's payload
/// buffer must hold max(max_write, max_pages pages), and 1 MiB (256 pages,
/// the kernel's default max_pages_limit) keeps each entry at 1 MiB instead
/// of fuser's 16 MiB.
pub(crate) const URING_MAX_WRITE: u32 = 1 << 20;

pub struct VfsFs {
    pub(crate) ops: Arc<Ops>,
    /// Ask the kernel for FUSE_OVER_IO_URING at INIT and record the answer
    /// (`URING_*`): `None` when the ring is not wanted.
    pub(crate) uring: Option<Arc<AtomicU8>>,
}

fn caller(req: &Request) -> Caller {
    Caller {
        uid: req.uid(),
        gid: req.gid(),
        pid: req.pid(),
    }
}

impl VfsFs {
    pub fn new(ns: Arc<Namespace>, ttls: Ttls) -> VfsFs {
        VfsFs {
            ops: Arc::new(Ops::new(ns, ttls, false)),
            uring: None,
        }
    }

    /// Asks the kernel for the writeback cache (see ops.rs).
    pub fn writeback_cache(self, on: bool) -> VfsFs {
        let ops = Ops::new(self.ops.ns.clone(), self.ops.ttls, on);
        VfsFs {
            ops: Arc::new(ops),
            uring: self.uring,
        }
    }
}

/// A fuser reply object that can carry an operation's `Reply`.
trait Deliver: Sized {
    fn deliver(self, r: Reply, ttls: &Ttls);
}

fn mismatch(r: &Reply) -> fuser::Errno {
    debug_assert!(false, "reply {r:?} does not fit the request");
    fuser::Errno::EIO
}

impl Deliver for ReplyEmpty {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Ok => self.ok(),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyEntry {
    fn deliver(self, r: Reply, ttls: &Ttls) {
        match r {
            Reply::Entry { id, stat } => self.entry(&ttls.entry, &attr(id, &stat), Generation(0)),
            Reply::Negative => {
                let mut a = attr(0, &Stat::default());
                a.ino = INodeNo(0);
                self.entry(&ttls.entry, &a, Generation(0));
            }
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyAttr {
    fn deliver(self, r: Reply, ttls: &Ttls) {
        match r {
            Reply::Attr { id, stat } => self.attr(&ttls.attr, &attr(id, &stat)),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyData {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Data(d) => self.data(&d),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyOpen {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Open { fh, flags } => {
                self.opened(FileHandle(fh), FopenFlags::from_bits_retain(flags))
            }
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyCreate {
    fn deliver(self, r: Reply, ttls: &Ttls) {
        match r {
            Reply::Created { id, stat, fh } => self.created(
                &ttls.entry,
                &attr(id, &stat),
                Generation(0),
                FileHandle(fh),
                FopenFlags::empty(),
            ),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyWrite {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Written(n) => self.written(n),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyStatfs {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Statfs(s) => self.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namelen as u32,
                s.f_frsize as u32,
            ),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyXattr {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::XattrSize(n) => self.size(n),
            Reply::Data(d) => self.data(&d),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyLseek {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Offset(o) => self.offset(o),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl Deliver for ReplyIoctl {
    fn deliver(self, r: Reply, _: &Ttls) {
        match r {
            Reply::Ioctl(d) => self.ioctl(0, &d),
            Reply::Err(e) => self.error(errno(e)),
            r => self.error(mismatch(&r)),
        }
    }
}

impl DirSink for ReplyDirectory {
    fn add(&mut self, id: u64, next: u64, dtype: u8, name: &[u8]) -> bool {
        ReplyDirectory::add(
            self,
            INodeNo(id),
            next,
            dtype_kind(dtype),
            OsStr::from_bytes(name),
        )
    }
}

impl DirPlusSink for ReplyDirectoryPlus {
    fn add(&mut self, id: u64, next: u64, name: &[u8], ttl: Duration, stat: &Stat) -> bool {
        ReplyDirectoryPlus::add(
            self,
            INodeNo(id),
            next,
            OsStr::from_bytes(name),
            &ttl,
            &attr(id, stat),
            Generation(0),
        )
    }
}

impl VfsFs {
    fn send(&self, r: Reply, reply: impl Deliver) {
        reply.deliver(r, &self.ops.ttls);
    }
}

impl Filesystem for VfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        for cap in [
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_READDIRPLUS_AUTO,
            InitFlags::FUSE_PARALLEL_DIROPS,
            InitFlags::FUSE_ASYNC_READ,
            InitFlags::FUSE_BIG_WRITES,
            InitFlags::FUSE_ATOMIC_O_TRUNC,
            InitFlags::FUSE_MAX_PAGES,
            // name_to_handle_at/open_by_handle_at on the mount: the kernel
            // may then LOOKUP "." and ".." of a node id it no longer
            // holds (`Ops::lookup`).
            InitFlags::FUSE_EXPORT_SUPPORT,
            // The creating calls' umask comes with the request and the core
            // applies it, unless a directory's default ACL replaces it (as
            // on tmpfs); without this the kernel would apply it first.
            InitFlags::FUSE_DONT_MASK,
            // The core clears set-user-ID and set-group-ID on write,
            // truncate, chown and fallocate as tmpfs does, with the
            // request's credentials. Without this the kernel clears them
            // itself first, by a SETATTR of the mode with the writer's
            // credentials, which the core refuses to anyone but the owner
            // (a group member's write to a set-group-ID file failed
            // EPERM), and before requests the core then refuses (a
            // fallocate mode tmpfs lacks). The price: a chown(-1, -1),
            // which clears them on tmpfs, reaches the server as an empty
            // SETATTR, the same request a write's clearing sends, and
            // clears nothing (docs/COMPATIBILITY.md).
            InitFlags::FUSE_HANDLE_KILLPRIV_V2,
            // The kernel checks permissions itself before it asks, from its
            // cached attributes and ACLs, and the core checks again
            // (FUSE_POSIX_ACL turns on `default_permissions` with the
            // kernel's ACL support in one step). See ops.rs.
            InitFlags::FUSE_POSIX_ACL,
        ] {
            // A capability the kernel lacks is simply not used.
            let _ = config.add_capabilities(cap);
        }
        if self.ops.writeback_cache() {
            let _ = config.add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE);
        }
        if let Some(uring) = &self.uring {
            // The kernel offers FUSE_OVER_IO_URING only while the fuse
            // module's enable_uring is set; once granted, every request but
            // FORGET and INTERRUPT waits for the ring's queues.
            let granted = config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_ok();
            if granted {
                let _ = config.set_max_write(URING_MAX_WRITE);
            }
            // Relaxed: read by the mounting thread after `Session::new`
            // returned, which joins this call (same thread).
            uring.store(
                if granted {
                    URING_GRANTED
                } else {
                    URING_REFUSED
                },
                Ordering::Relaxed,
            );
        }
        Ok(())
    }

    fn destroy(&mut self) {
        self.ops.destroy();
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.send(
            self.ops.lookup(caller(req), parent.0, name.as_bytes()),
            reply,
        );
    }

    // BATCH_FORGET: fuser's default splits it into these calls (its
    // `ForgetOne` type is not public).
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.ops.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.send(self.ops.getattr(ino.0), reply);
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let a = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: atime.map(timespec),
            mtime: mtime.map(timespec),
            fh: fh.map(|f| f.0),
        };
        self.send(self.ops.setattr(caller(req), ino.0, &a), reply);
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        self.send(self.ops.readlink(caller(req), ino.0), reply);
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = self
            .ops
            .mknod(caller(req), parent.0, name.as_bytes(), mode, rdev, umask);
        self.send(r, reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.send(
            self.ops
                .mkdir(caller(req), parent.0, name.as_bytes(), mode, umask),
            reply,
        );
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.send(
            self.ops.unlink(caller(req), parent.0, name.as_bytes()),
            reply,
        );
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.send(
            self.ops.rmdir(caller(req), parent.0, name.as_bytes()),
            reply,
        );
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        let r = self.ops.symlink(
            caller(req),
            parent.0,
            link_name.as_bytes(),
            target.as_os_str().as_bytes(),
        );
        self.send(r, reply);
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = self.ops.rename(
            caller(req),
            parent.0,
            name.as_bytes(),
            newparent.0,
            newname.as_bytes(),
            flags.bits(),
        );
        self.send(r, reply);
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self
            .ops
            .link(caller(req), ino.0, newparent.0, newname.as_bytes());
        self.send(r, reply);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.send(self.ops.open(caller(req), ino.0, flags.0), reply);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        self.send(self.ops.read(fh.0, offset, size), reply);
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = self.ops.write(caller(req), fh.0, offset, data, flags.0);
        self.send(r, reply);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: fuser::LockOwner,
        reply: ReplyEmpty,
    ) {
        self.send(self.ops.flush(), reply);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.send(self.ops.release(fh.0), reply);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.send(self.ops.fsync(fh.0, datasync), reply);
    }

    fn opendir(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.send(self.ops.opendir(caller(req), ino.0, flags.0), reply);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.ops.readdir(ino.0, fh.0, offset, &mut reply);
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let r = self
            .ops
            .readdirplus(caller(req), ino.0, fh.0, offset, &mut reply);
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.send(self.ops.release(fh.0), reply);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.send(self.ops.fsync(fh.0, datasync), reply);
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        self.send(self.ops.statfs(ino.0), reply);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        self.send(self.ops.access(caller(req), ino.0, mask.bits()), reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self
            .ops
            .create(caller(req), parent.0, name.as_bytes(), mode, umask, flags);
        self.send(r, reply);
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        self.send(self.ops.lseek(fh.0, offset, whence), reply);
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let r = self
            .ops
            .setxattr(caller(req), ino.0, name.as_bytes(), value, flags);
        self.send(r, reply);
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let r = self.ops.getxattr(caller(req), ino.0, name.as_bytes(), size);
        self.send(r, reply);
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.send(self.ops.listxattr(caller(req), ino.0, size), reply);
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.ops.removexattr(caller(req), ino.0, name.as_bytes());
        self.send(r, reply);
    }

    fn fallocate(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self.ops.fallocate(caller(req), fh.0, offset, length, mode);
        self.send(r, reply);
    }

    fn ioctl(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        in_data: &[u8],
        out_size: u32,
        reply: ReplyIoctl,
    ) {
        let r = self.ops.ioctl(caller(req), fh.0, cmd, in_data, out_size);
        self.send(r, reply);
    }

    fn copy_file_range(
        &self,
        req: &Request,
        _ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        _ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        let r =
            self.ops
                .copy_file_range(caller(req), fh_in.0, offset_in, fh_out.0, offset_out, len);
        self.send(r, reply);
    }
}
