//! The FUSE operations: each request is decoded, its credentials built from
//! the request header, and the matching namespace-level call run on the
//! worker thread that read it. The core decides every permission question
//! (the mount has no `default_permissions`).
//!
//! With the writeback cache on (`MountConfig::writeback_cache`), the kernel
//! keeps written pages and sends WRITEs later, and READs a page before a
//! partial write into it, even on a file opened write-only. So, as libfuse's
//! passthrough servers do, an O_WRONLY open is served as O_RDWR (falling
//! back to O_WRONLY when reading is not permitted: partial-page writes to
//! such a file then fail as they would in Linux's own FUSE client), and
//! O_APPEND is dropped because the kernel already places appends at its
//! cached end of file.
//!
//! Invariants: a reply that carries a node id (lookup, mknod, mkdir,
//! symlink, link, create, readdirplus entries other than "." and "..")
//! counts one lookup in the node table before it is sent (see nodes.rs).

use crate::convert::{attr, dtype_kind, errno, timespec};
use crate::creds::request_cred;
use crate::invalidate::OwnChange;
use crate::nodes::{Node, NodeTable};
use fuser::{
    AccessFlags, CopyFileRangeFlags, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use vfscale::abi::*;
use vfscale::{Cred, Entry, Namespace, SetAttr};

/// Kernel cache lifetimes.
#[derive(Clone, Copy, Debug)]
pub struct Ttls {
    pub entry: Duration,
    pub attr: Duration,
}

pub struct VfsFs {
    pub(crate) ns: Arc<Namespace>,
    pub(crate) nodes: Arc<NodeTable>,
    ttls: Ttls,
    writeback_cache: bool,
}

/// Entries gathered per readdirplus batch before their lookups.
const PLUS_BATCH: usize = 128;

/// The largest READ we serve in one reply: fuser's max_write, which also
/// bounds the max_pages it negotiates. The kernel never asks for more; a
/// request that does (a buggy or hostile sender) must not make us allocate
/// its `size` (up to 4 GiB) before failing.
const MAX_READ: u32 = 16 << 20;

/// Linux's XATTR_SIZE_MAX and XATTR_LIST_MAX: getxattr(2) and listxattr(2)
/// clamp their buffer to this, and no value or list is longer.
const XATTR_BUF_MAX: u32 = 64 << 10;

fn cred(req: &Request) -> Arc<Cred> {
    request_cred(req.uid(), req.gid(), req.pid())
}

impl VfsFs {
    pub fn new(ns: Arc<Namespace>, ttls: Ttls) -> VfsFs {
        let nodes = Arc::new(NodeTable::new(ns.root().dup()));
        VfsFs {
            ns,
            nodes,
            ttls,
            writeback_cache: false,
        }
    }

    /// Asks the kernel for the writeback cache (see the module comment).
    pub fn writeback_cache(mut self, on: bool) -> VfsFs {
        self.writeback_cache = on;
        self
    }

    /// The open flags to serve a kernel OPEN/CREATE with, and the flags to
    /// fall back to if those are refused (see the module comment).
    fn open_flags(&self, flags: i32) -> (i32, Option<i32>) {
        if !self.writeback_cache {
            return (flags, None);
        }
        let flags = flags & !O_APPEND;
        if flags & O_ACCMODE == O_WRONLY {
            (flags & !O_ACCMODE | O_RDWR, Some(flags))
        } else {
            (flags, None)
        }
    }

    fn node(&self, id: INodeNo) -> Result<Arc<Node>, fuser::Errno> {
        self.nodes.get(id.0).ok_or(fuser::Errno::ENOENT)
    }

    fn reply_entry(&self, r: Result<Entry, Errno>, reply: ReplyEntry) {
        match r {
            Ok(e) => {
                let st = e.stat;
                let id = self.nodes.remember(e);
                reply.entry(&self.ttls.entry, &attr(id, &st), Generation(0));
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    /// Serves a request that makes a name in `parent` (mknod, mkdir,
    /// symlink, link): `make` runs as this mount's own change (no
    /// invalidation echoed back) and the entry it returns is the reply.
    fn make_entry(
        &self,
        parent: INodeNo,
        reply: ReplyEntry,
        make: impl FnOnce(&Node) -> Result<Entry, Errno>,
    ) {
        let _own = OwnChange::begin(&self.nodes);
        match self.node(parent) {
            Ok(dir) => self.reply_entry(make(&dir), reply),
            Err(e) => reply.error(e),
        }
    }

    /// LOOKUP of "." or ".." in node `id`: the kernel resolving a file
    /// handle (fuse_get_dentry, fuse_get_parent) for a node it may have
    /// forgotten. A forgotten node is found again by its inode number
    /// among the objects exported at FORGET; one with no name left (or
    /// no link left, for a node whose FORGET is still in flight) is ESTALE.
    fn lookup_dot(&self, req: &Request, id: INodeNo, name: &[u8], reply: ReplyEntry) {
        let node = match self.nodes.get(id.0) {
            Some(n) => Entry {
                handle: n.handle.dup(),
                stat: self.ns.getattr(&n.handle),
            },
            None => match self.ns.exported(self.nodes.ino_of(id.0)) {
                Ok(e) if self.nodes.id_of_stat(&e.stat) == id.0 => e,
                _ => return reply.error(fuser::Errno::ESTALE),
            },
        };
        if node.stat.nlink == 0 {
            // Removed: the kernel evicted its inode and our node only waits
            // for the FORGET in flight. A handle to a removed file is stale
            // (as on ext4; the kernel never asks while it holds the inode).
            return reply.error(fuser::Errno::ESTALE);
        }
        if name == b"." {
            self.reply_entry(Ok(node), reply);
        } else {
            let parent = self.ns.lookup(&cred(req), &node.handle, b"..");
            self.reply_entry(parent, reply);
        }
    }

    fn reply_empty(r: Result<(), Errno>, reply: ReplyEmpty) {
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }
}

macro_rules! node_or_reply {
    ($self:ident, $id:expr, $reply:ident) => {
        match $self.node($id) {
            Ok(n) => n,
            Err(e) => return $reply.error(e),
        }
    };
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
            // holds (`lookup_dot`).
            InitFlags::FUSE_EXPORT_SUPPORT,
        ] {
            // A capability the kernel lacks is simply not used.
            let _ = config.add_capabilities(cap);
        }
        if self.writeback_cache {
            let _ = config.add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        // As at FORGET: file handles the kernel gave out stay usable on a
        // later mount of the same namespace (a server restart).
        self.nodes.clear(|n| {
            let _ = self.ns.export(&n.handle);
        });
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if matches!(name.as_bytes(), b"." | b"..") {
            return self.lookup_dot(req, parent, name.as_bytes(), reply);
        }
        let dir = node_or_reply!(self, parent, reply);
        match self.ns.lookup(&cred(req), &dir.handle, name.as_bytes()) {
            // A miss is answered as node 0 with the entry TTL: the kernel
            // caches the negative entry (compilers probe many missing
            // headers) and counts no lookup for it.
            Err(Errno::ENOENT) if !self.ttls.entry.is_zero() => {
                let mut a = attr(0, &Stat::default());
                a.ino = INodeNo(0);
                reply.entry(&self.ttls.entry, &a, Generation(0));
            }
            r => self.reply_entry(r, reply),
        }
    }

    // BATCH_FORGET: fuser's default splits it into these calls (its
    // `ForgetOne` type is not public).
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if let Some(node) = self
            .nodes
            .last_lookups(ino.0, nlookup)
            .filter(|n| n.handle.stat().nlink > 0)
        {
            // The kernel forgets the node, but may still hold a file handle
            // naming it (export support): keep the object findable by its
            // number while it has a name. Done before the slot goes, so a
            // LOOKUP "." racing this FORGET finds one or the other; outside
            // the table's lock (export takes a directory lock, which
            // name observers hold while taking the table's). A removed
            // object (nlink 0, the common FORGET after an unlink) is
            // skipped, and ENOENT (its last name went meanwhile) ignored:
            // its handles are stale.
            let _ = self.ns.export(&node.handle);
        }
        self.nodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let n = node_or_reply!(self, ino, reply);
        reply.attr(&self.ttls.attr, &attr(n.id, &self.ns.getattr(&n.handle)));
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
        let _own = OwnChange::begin(&self.nodes);
        let n = node_or_reply!(self, ino, reply);
        let set = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: atime.map(timespec),
            mtime: mtime.map(timespec),
            fh: fh.map(|f| f.0),
        };
        match self.ns.setattr(&cred(req), &n.handle, &set) {
            Ok(st) => reply.attr(&self.ttls.attr, &attr(n.id, &st)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        let n = node_or_reply!(self, ino, reply);
        match self.ns.readlink(&cred(req), &n.handle) {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.make_entry(parent, reply, |dir| {
            self.ns
                .mknod(&cred(req), &dir.handle, name.as_bytes(), mode, rdev as u64)
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        self.make_entry(parent, reply, |dir| {
            self.ns
                .mkdir(&cred(req), &dir.handle, name.as_bytes(), mode)
        });
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _own = OwnChange::begin(&self.nodes);
        let dir = node_or_reply!(self, parent, reply);
        Self::reply_empty(
            self.ns.unlink(&cred(req), &dir.handle, name.as_bytes()),
            reply,
        );
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _own = OwnChange::begin(&self.nodes);
        let dir = node_or_reply!(self, parent, reply);
        Self::reply_empty(
            self.ns.rmdir(&cred(req), &dir.handle, name.as_bytes()),
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
        self.make_entry(parent, reply, |dir| {
            self.ns.symlink(
                &cred(req),
                &dir.handle,
                link_name.as_bytes(),
                target.as_os_str().as_bytes(),
            )
        });
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
        let _own = OwnChange::begin(&self.nodes);
        let dir = node_or_reply!(self, parent, reply);
        let newdir = node_or_reply!(self, newparent, reply);
        Self::reply_empty(
            self.ns.rename(
                &cred(req),
                &dir.handle,
                name.as_bytes(),
                &newdir.handle,
                newname.as_bytes(),
                flags.bits(),
            ),
            reply,
        );
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.make_entry(newparent, reply, |dir| {
            let n = self.nodes.get(ino.0).ok_or(Errno::ENOENT)?;
            self.ns
                .link(&cred(req), &n.handle, &dir.handle, newname.as_bytes())
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let n = node_or_reply!(self, ino, reply);
        let cred = cred(req);
        let (wanted, fallback) = self.open_flags(flags.0);
        let mut r = self.ns.open(&cred, &n.handle, wanted);
        if let (Err(Errno::EACCES), Some(flags)) = (r, fallback) {
            r = self.ns.open(&cred, &n.handle, flags);
        }
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(errno(e)),
        }
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
        let mut buf = vec![0u8; size.min(MAX_READ) as usize];
        match self.ns.read(fh.0, offset, &mut buf) {
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyWrite,
    ) {
        let _own = OwnChange::begin(&self.nodes);
        match self.ns.write(&cred(req), fh.0, offset, data) {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: fuser::LockOwner,
        reply: ReplyEmpty,
    ) {
        // Data lives in memory: close has nothing to write back. ENOSYS
        // tells the kernel so once; it then stops sending FLUSH on every
        // close (one round trip fewer per open/close; close(2) still
        // succeeds).
        reply.error(fuser::Errno::ENOSYS);
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
        Self::reply_empty(self.ns.release(fh.0), reply);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        Self::reply_empty(self.ns.fsync(fh.0), reply);
    }

    fn opendir(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let n = node_or_reply!(self, ino, reply);
        let flags = (flags.0 & !O_ACCMODE) | O_RDONLY | O_DIRECTORY;
        match self.ns.open(&cred(req), &n.handle, flags) {
            // FOPEN_CACHE_DIR: the kernel keeps the listing in the
            // directory's page cache and serves later readdirs from it;
            // FOPEN_KEEP_CACHE: the next opendir does not drop it. The
            // kernel resets the cache itself on its own changes through
            // the mount (fuse_dir_changed) and when the directory's mtime
            // differs at offset 0; changes beside the mount reach it as
            // inval_entry + inval_inode on the directory (invalidate.rs).
            // Not for a passthrough directory: its host can change behind
            // us, which the kernel's cached listing would never show.
            Ok(fh) => reply.opened(
                FileHandle(fh),
                if self.ns.changes_are_observed(&n.handle) {
                    FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
                } else {
                    FopenFlags::empty()
                },
            ),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dir = node_or_reply!(self, ino, reply);
        let dev = self.ns.getattr(&dir.handle).dev;
        let r = self.ns.readdir(fh.0, offset, |e| {
            let id = self.nodes.id_of(dev, e.ino);
            !reply.add(
                INodeNo(id),
                e.next,
                dtype_kind(e.dtype),
                OsStr::from_bytes(e.name),
            )
        });
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
        let dir = node_or_reply!(self, ino, reply);
        let dir_stat = self.ns.getattr(&dir.handle);
        let cred = cred(req);
        // A caller who may read but not search the directory must still get
        // every name (`ls` drops entries with inode 0), but no entry a later
        // walk could use without asking us: its entries are looked up with
        // root's credentials and sent with zero TTLs, so any use of them
        // revalidates with a LOOKUP, where the core refuses the search.
        let searchable = self.ns.access(&cred, &dir.handle, X_OK).is_ok();
        let (lookup_cred, ttl) = if searchable {
            (cred, self.ttls.entry)
        } else {
            (request_cred(0, 0, 0), Duration::ZERO)
        };
        let mut cookie = offset;
        loop {
            // Names first (under the directory lock), lookups after it.
            let mut batch: Vec<(Vec<u8>, u64, u64)> = Vec::with_capacity(PLUS_BATCH);
            let r = self.ns.readdir(fh.0, cookie, |e| {
                batch.push((e.name.to_vec(), e.ino, e.next));
                batch.len() < PLUS_BATCH
            });
            if let Err(e) = r {
                return reply.error(errno(e));
            }
            if batch.is_empty() {
                return reply.ok();
            }
            for (name, ino, next) in batch {
                if name == b"." || name == b".." {
                    // The kernel links no node for these and sends no
                    // FORGET: report attributes without counting a lookup.
                    let id = self.nodes.id_of(dir_stat.dev, ino);
                    let a = attr(id, &dir_stat);
                    if reply.add(
                        INodeNo(id),
                        next,
                        OsStr::from_bytes(&name),
                        &self.ttls.entry,
                        &a,
                        Generation(0),
                    ) {
                        return reply.ok();
                    }
                    cookie = next;
                    continue;
                }
                let entry = match self.ns.lookup(&lookup_cred, &dir.handle, &name) {
                    Ok(e) => e,
                    // Gone since the listing: skip it.
                    Err(_) => {
                        cookie = next;
                        continue;
                    }
                };
                let st = entry.stat;
                let id = self.nodes.remember(entry);
                if reply.add(
                    INodeNo(id),
                    next,
                    OsStr::from_bytes(&name),
                    &ttl,
                    &attr(id, &st),
                    Generation(0),
                ) {
                    // Not sent: the kernel will not count this lookup.
                    self.nodes.forget(id, 1);
                    return reply.ok();
                }
                cookie = next;
            }
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
        Self::reply_empty(self.ns.release(fh.0), reply);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let n = node_or_reply!(self, ino, reply);
        let s = self.ns.statfs(&n.handle);
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namelen as u32,
            s.f_frsize as u32,
        );
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let n = node_or_reply!(self, ino, reply);
        Self::reply_empty(self.ns.access(&cred(req), &n.handle, mask.bits()), reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let _own = OwnChange::begin(&self.nodes);
        let dir = node_or_reply!(self, parent, reply);
        // A file created here is new, so its creator may read it whatever
        // the mode: no fallback needed (Linux's O_CREAT opens likewise).
        let (flags, _) = self.open_flags(flags);
        match self
            .ns
            .create(&cred(req), &dir.handle, name.as_bytes(), flags, mode)
        {
            Ok((entry, fh)) => {
                let st = entry.stat;
                let id = self.nodes.remember(entry);
                reply.created(
                    &self.ttls.entry,
                    &attr(id, &st),
                    Generation(0),
                    FileHandle(fh),
                    FopenFlags::empty(),
                );
            }
            Err(e) => reply.error(errno(e)),
        }
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
        match self.ns.lseek(fh.0, offset, whence) {
            Ok(o) => reply.offset(o),
            Err(e) => reply.error(errno(e)),
        }
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
        let n = node_or_reply!(self, ino, reply);
        Self::reply_empty(
            self.ns
                .setxattr(&cred(req), &n.handle, name.as_bytes(), value, flags),
            reply,
        );
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let n = node_or_reply!(self, ino, reply);
        let cred = cred(req);
        if size == 0 {
            return match self.ns.getxattr(&cred, &n.handle, name.as_bytes(), &mut []) {
                Ok(len) => reply.size(len as u32),
                Err(e) => reply.error(errno(e)),
            };
        }
        let mut buf = vec![0u8; size.min(XATTR_BUF_MAX) as usize];
        match self
            .ns
            .getxattr(&cred, &n.handle, name.as_bytes(), &mut buf)
        {
            Ok(len) => reply.data(&buf[..len]),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let n = node_or_reply!(self, ino, reply);
        let cred = cred(req);
        if size == 0 {
            return match self.ns.listxattr(&cred, &n.handle, &mut []) {
                Ok(len) => reply.size(len as u32),
                Err(e) => reply.error(errno(e)),
            };
        }
        let mut buf = vec![0u8; size.min(XATTR_BUF_MAX) as usize];
        match self.ns.listxattr(&cred, &n.handle, &mut buf) {
            Ok(len) => reply.data(&buf[..len]),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let n = node_or_reply!(self, ino, reply);
        Self::reply_empty(
            self.ns.removexattr(&cred(req), &n.handle, name.as_bytes()),
            reply,
        );
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let _own = OwnChange::begin(&self.nodes);
        Self::reply_empty(self.ns.fallocate(fh.0, mode, offset, length), reply);
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
        let _own = OwnChange::begin(&self.nodes);
        // The kernel checked the flags (none are defined) before sending.
        match self
            .ns
            .copy_file_range(&cred(req), fh_in.0, offset_in, fh_out.0, offset_out, len)
        {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(errno(e)),
        }
    }
}
