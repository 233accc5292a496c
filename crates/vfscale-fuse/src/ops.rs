//! The FUSE operations, independent of the transport: each takes the
//! decoded arguments of one request and returns a `Reply` (or, for the
//! directory listings, fills a `DirSink`). Both transports call these and
//! only these: `server.rs` (fuser's `Filesystem`, requests read from
//! /dev/fuse) and `uring/` (FUSE over io_uring). Each operation is one
//! namespace-level call with the request's credentials, run on the thread
//! that received the request. Permissions are checked twice: by the kernel
//! before it sends a request (the server takes FUSE_POSIX_ACL, which turns
//! on `default_permissions` with the kernel's ACL support: modes, owners
//! and ACLs from its attribute cache, refreshed at the attribute TTL and
//! on every invalidation), then by the core with the request's
//! credentials. The kernel's check is what keeps a LOOKUP from being
//! refused for search permission — the kernel takes any refused LOOKUP of
//! a cached name as "gone" and detaches mounts on it — and the only check
//! of what it does without asking (`.` and `..`, socket connects, the
//! sticky rule for opens of sockets and devices).
//!
//! With the writeback cache on (`MountConfig::writeback_cache`), the kernel
//! keeps written pages and sends WRITEs later, and READs a page before a
//! partial write into it, even on a file opened write-only. So, as libfuse's
//! passthrough servers do, an O_WRONLY open is served as O_RDWR (falling
//! back to O_WRONLY when reading is not permitted: partial-page writes to
//! such a file then fail as they would in Linux's own FUSE client), and
//! O_APPEND is dropped because the kernel already places appends at its
//! cached end of file (kept for an append-only file, which opens for
//! writing in no other mode).
//!
//! Invariants: a reply that carries a node id (lookup, mknod, mkdir,
//! symlink, link, create, readdirplus entries other than "." and "..")
//! counts one lookup in the node table before it is returned (see
//! nodes.rs); a transport that cannot deliver such a reply must not exist
//! (both deliver every reply or the connection is gone, and with it every
//! count). A readdirplus entry that does not fit is never counted.

use crate::creds::request_cred;
use crate::invalidate::OwnChange;
use crate::nodes::{Node, NodeTable};
use std::sync::Arc;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::{Cred, Entry, Namespace, SetAttr};

/// Kernel cache lifetimes.
#[derive(Clone, Copy, Debug)]
pub struct Ttls {
    pub entry: Duration,
    pub attr: Duration,
}

/// Who sent a request (from its `fuse_in_header`).
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
}

impl Caller {
    fn cred(self) -> Arc<Cred> {
        request_cred(self.uid, self.gid, self.pid)
    }
}

/// FOPEN_KEEP_CACHE and FOPEN_CACHE_DIR (include/uapi/linux/fuse.h).
pub const FOPEN_KEEP_CACHE: u32 = 1 << 1;
pub const FOPEN_CACHE_DIR: u32 = 1 << 3;

/// The answer to one request, for the transport to encode.
#[derive(Debug)]
pub enum Reply {
    /// Success without a body.
    Ok,
    Err(Errno),
    /// A node (counted in the node table), with the entry TTL.
    Entry {
        id: u64,
        stat: Stat,
    },
    /// A cached miss: node id 0 with the entry TTL.
    Negative,
    Attr {
        id: u64,
        stat: Stat,
    },
    Data(Vec<u8>),
    Open {
        fh: u64,
        flags: u32,
    },
    Created {
        id: u64,
        stat: Stat,
        fh: u64,
    },
    Written(u32),
    Statfs(Statfs),
    /// The size an xattr value or list would need (a size-0 query).
    XattrSize(u32),
    Offset(i64),
    /// A successful ioctl (result 0) and the bytes it hands back.
    Ioctl(Vec<u8>),
}

impl Reply {
    fn from_empty(r: Result<(), Errno>) -> Reply {
        match r {
            Ok(()) => Reply::Ok,
            Err(e) => Reply::Err(e),
        }
    }
}

/// A READDIR reply being filled: `add` returns true when the entry did
/// not fit (and was not added).
pub trait DirSink {
    fn add(&mut self, id: u64, next: u64, dtype: u8, name: &[u8]) -> bool;
}

/// A READDIRPLUS reply being filled: `add` returns true when the entry
/// did not fit (and was not added).
pub trait DirPlusSink {
    fn add(&mut self, id: u64, next: u64, name: &[u8], ttl: Duration, stat: &Stat) -> bool;
}

/// Entries gathered per readdirplus batch before their lookups.
const PLUS_BATCH: usize = 128;

/// The largest READ we serve in one reply: the largest max_write either
/// transport negotiates (fuser's 16 MiB), which also bounds max_pages. The
/// kernel never asks for more; a request that does (a buggy or hostile
/// sender) must not make us allocate its `size` (up to 4 GiB) before
/// failing.
pub const MAX_READ: u32 = 16 << 20;

/// Linux's XATTR_SIZE_MAX and XATTR_LIST_MAX: getxattr(2) and listxattr(2)
/// clamp their buffer to this, and no value or list is longer.
const XATTR_BUF_MAX: u32 = 64 << 10;

/// The state every operation shares: one per mount, shared by every
/// worker of both transports.
pub struct Ops {
    pub(crate) ns: Arc<Namespace>,
    pub(crate) nodes: Arc<NodeTable>,
    pub(crate) ttls: Ttls,
    writeback_cache: bool,
}

impl Ops {
    pub fn new(ns: Arc<Namespace>, ttls: Ttls, writeback_cache: bool) -> Ops {
        let nodes = Arc::new(NodeTable::new(ns.root().dup()));
        Ops {
            ns,
            nodes,
            ttls,
            writeback_cache,
        }
    }

    pub fn writeback_cache(&self) -> bool {
        self.writeback_cache
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

    fn node(&self, id: u64) -> Result<Arc<Node>, Errno> {
        self.nodes.get(id).ok_or(Errno::ENOENT)
    }

    fn entry(&self, r: Result<Entry, Errno>) -> Reply {
        match r {
            Ok(e) => {
                let stat = e.stat;
                let id = self.nodes.remember(e);
                Reply::Entry { id, stat }
            }
            Err(e) => Reply::Err(e),
        }
    }

    /// Serves a request that makes a name in `parent` (mknod, mkdir,
    /// symlink, link): `make` runs as this mount's own change (no
    /// invalidation echoed back) and the entry it returns is the reply.
    fn make_entry(&self, parent: u64, make: impl FnOnce(&Node) -> Result<Entry, Errno>) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        match self.node(parent) {
            Ok(dir) => self.entry(make(&dir)),
            Err(e) => Reply::Err(e),
        }
    }

    /// Releases everything the kernel held (the session ended). As at
    /// FORGET: file handles the kernel gave out stay usable on a later
    /// mount of the same namespace (a server restart).
    pub fn destroy(&self) {
        self.nodes.clear(|n| {
            let _ = self.ns.export(&n.handle);
        });
    }

    /// LOOKUP of "." or ".." in node `id`: the kernel resolving a file
    /// handle (fuse_get_dentry, fuse_get_parent) for a node it may have
    /// forgotten. A forgotten node is found again by its inode number
    /// among the objects exported at FORGET; one with no name left and no
    /// user (or no link left, for a node whose FORGET is still in flight)
    /// is ESTALE.
    fn lookup_dot(&self, c: Caller, id: u64, name: &[u8]) -> Reply {
        let node = match self.nodes.get(id) {
            Some(n) => Entry {
                handle: n.handle.dup(),
                stat: self.ns.getattr(&n.handle),
            },
            None => match self.ns.exported(self.nodes.ino_of(id)) {
                Ok(e) if self.nodes.id_of_stat(&e.stat) == id => e,
                _ => return Reply::Err(Errno::ESTALE),
            },
        };
        if node.stat.nlink == 0 {
            // Removed: the kernel evicted its inode and our node only waits
            // for the FORGET in flight. A handle to a removed file is stale
            // (as on ext4; the kernel never asks while it holds the inode).
            return Reply::Err(Errno::ESTALE);
        }
        if name == b"." {
            self.entry(Ok(node))
        } else {
            let parent = self.ns.lookup(&c.cred(), &node.handle, b"..");
            self.entry(parent)
        }
    }

    pub fn lookup(&self, c: Caller, parent: u64, name: &[u8]) -> Reply {
        if matches!(name, b"." | b"..") {
            return self.lookup_dot(c, parent, name);
        }
        let dir = match self.node(parent) {
            Ok(d) => d,
            Err(e) => return Reply::Err(e),
        };
        match self.ns.lookup(&c.cred(), &dir.handle, name) {
            // A miss is answered as node 0 with the entry TTL: the kernel
            // caches the negative entry (compilers probe many missing
            // headers) and counts no lookup for it.
            Err(Errno::ENOENT) if !self.ttls.entry.is_zero() => Reply::Negative,
            r => self.entry(r),
        }
    }

    /// FORGET (and each node of a BATCH_FORGET): no reply.
    pub fn forget(&self, id: u64, nlookup: u64) {
        if let Some(node) = self
            .nodes
            .last_lookups(id, nlookup)
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
        self.nodes.forget(id, nlookup);
    }

    pub fn getattr(&self, id: u64) -> Reply {
        match self.node(id) {
            Ok(n) => Reply::Attr {
                id: n.id,
                stat: self.ns.getattr(&n.handle),
            },
            Err(e) => Reply::Err(e),
        }
    }

    /// `set` as the transport decoded it (its `fh` is the FUSE file handle,
    /// which is the core's handle number).
    pub fn setattr(&self, c: Caller, id: u64, set: &SetAttr) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        let n = match self.node(id) {
            Ok(n) => n,
            Err(e) => return Reply::Err(e),
        };
        match self.ns.setattr(&c.cred(), &n.handle, set) {
            Ok(stat) => Reply::Attr { id: n.id, stat },
            Err(e) => Reply::Err(e),
        }
    }

    pub fn readlink(&self, c: Caller, id: u64) -> Reply {
        let r = self
            .node(id)
            .and_then(|n| self.ns.readlink(&c.cred(), &n.handle));
        match r {
            Ok(t) => Reply::Data(t),
            Err(e) => Reply::Err(e),
        }
    }

    /// MKNOD; `umask` is the request's (the kernel leaves it to us:
    /// FUSE_DONT_MASK, so a default ACL can replace it, as on tmpfs).
    pub fn mknod(
        &self,
        c: Caller,
        parent: u64,
        name: &[u8],
        mode: u32,
        rdev: u32,
        umask: u32,
    ) -> Reply {
        self.make_entry(parent, |dir| {
            self.ns
                .mknod(&c.cred(), &dir.handle, name, mode, rdev as u64, umask)
        })
    }

    /// MKDIR; `umask` as MKNOD's.
    pub fn mkdir(&self, c: Caller, parent: u64, name: &[u8], mode: u32, umask: u32) -> Reply {
        self.make_entry(parent, |dir| {
            self.ns.mkdir(&c.cred(), &dir.handle, name, mode, umask)
        })
    }

    pub fn unlink(&self, c: Caller, parent: u64, name: &[u8]) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        Reply::from_empty(
            self.node(parent)
                .and_then(|dir| self.ns.unlink(&c.cred(), &dir.handle, name)),
        )
    }

    pub fn rmdir(&self, c: Caller, parent: u64, name: &[u8]) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        Reply::from_empty(
            self.node(parent)
                .and_then(|dir| self.ns.rmdir(&c.cred(), &dir.handle, name)),
        )
    }

    pub fn symlink(&self, c: Caller, parent: u64, name: &[u8], target: &[u8]) -> Reply {
        self.make_entry(parent, |dir| {
            self.ns.symlink(&c.cred(), &dir.handle, name, target)
        })
    }

    pub fn rename(
        &self,
        c: Caller,
        parent: u64,
        name: &[u8],
        newparent: u64,
        newname: &[u8],
        flags: u32,
    ) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        let r = self.node(parent).and_then(|dir| {
            let newdir = self.node(newparent)?;
            self.ns
                .rename(&c.cred(), &dir.handle, name, &newdir.handle, newname, flags)
        });
        Reply::from_empty(r)
    }

    pub fn link(&self, c: Caller, id: u64, newparent: u64, newname: &[u8]) -> Reply {
        self.make_entry(newparent, |dir| {
            let n = self.nodes.get(id).ok_or(Errno::ENOENT)?;
            self.ns.link(&c.cred(), &n.handle, &dir.handle, newname)
        })
    }

    pub fn open(&self, c: Caller, id: u64, flags: i32) -> Reply {
        let n = match self.node(id) {
            Ok(n) => n,
            Err(e) => return Reply::Err(e),
        };
        let cred = c.cred();
        // The kernel opens FIFOs itself and never asks us; an OPEN of one
        // (a fuzzer, a confused peer) must not park this worker until a
        // partner opens the other end: open(2) with O_NONBLOCK semantics.
        let flags = if n.handle.file_type() == S_IFIFO {
            flags | O_NONBLOCK
        } else {
            flags
        };
        let (wanted, fallback) = self.open_flags(flags);
        let mut r = self.ns.open(&cred, &n.handle, wanted);
        if let (Err(Errno::EACCES), Some(flags)) = (r, fallback) {
            r = self.ns.open(&cred, &n.handle, flags);
        }
        // An append-only file (chattr +a) opens for writing in append mode
        // only: then the kernel's O_APPEND stays (its writes land at the
        // end of the file either way).
        if r == Err(Errno::EPERM) && flags & O_APPEND != 0 && wanted & O_APPEND == 0 {
            r = self.ns.open(&cred, &n.handle, wanted | O_APPEND);
        }
        match r {
            Ok(fh) => Reply::Open { fh, flags: 0 },
            Err(e) => Reply::Err(e),
        }
    }

    pub fn read(&self, fh: u64, offset: u64, size: u32) -> Reply {
        let mut buf = vec![0u8; size.min(MAX_READ) as usize];
        match self.ns.read(fh, offset, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                Reply::Data(buf)
            }
            Err(e) => Reply::Err(e),
        }
    }

    /// WRITE; `flags` is the file's status as the kernel holds it
    /// (fuse_write_in.flags: F_SETFL may have set or cleared O_APPEND since
    /// the OPEN), which decides whether the data is appended.
    pub fn write(&self, c: Caller, fh: u64, offset: u64, data: &[u8], flags: i32) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        match self
            .ns
            .write(&c.cred(), fh, offset, data, flags & O_APPEND != 0)
        {
            Ok(n) => Reply::Written(n as u32),
            Err(e) => Reply::Err(e),
        }
    }

    pub fn flush(&self) -> Reply {
        // Data lives in memory: close has nothing to write back. ENOSYS
        // tells the kernel so once; it then stops sending FLUSH on every
        // close (one round trip fewer per open/close; close(2) still
        // succeeds).
        Reply::Err(Errno::ENOSYS)
    }

    /// RELEASE and RELEASEDIR.
    pub fn release(&self, fh: u64) -> Reply {
        Reply::from_empty(self.ns.release(fh))
    }

    /// FSYNC and FSYNCDIR: a backend's file or directory is synced on the
    /// backend (`datasync`: FUSE_FSYNC_FDATASYNC).
    pub fn fsync(&self, fh: u64, datasync: bool) -> Reply {
        Reply::from_empty(self.ns.fsync(fh, datasync))
    }

    pub fn opendir(&self, c: Caller, id: u64, flags: i32) -> Reply {
        let n = match self.node(id) {
            Ok(n) => n,
            Err(e) => return Reply::Err(e),
        };
        let flags = (flags & !O_ACCMODE) | O_RDONLY | O_DIRECTORY;
        match self.ns.open(&c.cred(), &n.handle, flags) {
            // FOPEN_CACHE_DIR: the kernel keeps the listing in the
            // directory's page cache and serves later readdirs from it;
            // FOPEN_KEEP_CACHE: the next opendir does not drop it. The
            // kernel resets the cache itself on its own changes through
            // the mount (fuse_dir_changed) and when the directory's mtime
            // differs at offset 0; changes beside the mount reach it as
            // inval_entry + inval_inode on the directory (invalidate.rs).
            // Not for a passthrough directory: its host can change behind
            // us, which the kernel's cached listing would never show.
            Ok(fh) => Reply::Open {
                fh,
                flags: if self.ns.changes_are_observed(&n.handle) {
                    FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE
                } else {
                    0
                },
            },
            Err(e) => Reply::Err(e),
        }
    }

    pub fn readdir(
        &self,
        id: u64,
        fh: u64,
        offset: u64,
        sink: &mut dyn DirSink,
    ) -> Result<(), Errno> {
        let dir = self.node(id)?;
        let dev = self.ns.getattr(&dir.handle).dev;
        self.ns.readdir(fh, offset, |e| {
            let id = self.nodes.id_of(dev, e.ino);
            !sink.add(id, e.next, e.dtype, e.name)
        })
    }

    pub fn readdirplus(
        &self,
        c: Caller,
        id: u64,
        fh: u64,
        offset: u64,
        sink: &mut dyn DirPlusSink,
    ) -> Result<(), Errno> {
        let dir = self.node(id)?;
        let dir_stat = self.ns.getattr(&dir.handle);
        let cred = c.cred();
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
            self.ns.readdir(fh, cookie, |e| {
                batch.push((e.name.to_vec(), e.ino, e.next));
                batch.len() < PLUS_BATCH
            })?;
            if batch.is_empty() {
                return Ok(());
            }
            for (name, ino, next) in batch {
                if name == b"." || name == b".." {
                    // The kernel links no node for these and sends no
                    // FORGET: report attributes without counting a lookup.
                    let id = self.nodes.id_of(dir_stat.dev, ino);
                    if sink.add(id, next, &name, self.ttls.entry, &dir_stat) {
                        return Ok(());
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
                if sink.add(id, next, &name, ttl, &st) {
                    // Not sent: the kernel will not count this lookup.
                    self.nodes.forget(id, 1);
                    return Ok(());
                }
                cookie = next;
            }
        }
    }

    pub fn statfs(&self, id: u64) -> Reply {
        match self.node(id) {
            Ok(n) => Reply::Statfs(self.ns.statfs(&n.handle)),
            Err(e) => Reply::Err(e),
        }
    }

    pub fn access(&self, c: Caller, id: u64, mask: i32) -> Reply {
        Reply::from_empty(
            self.node(id)
                .and_then(|n| self.ns.access(&c.cred(), &n.handle, mask)),
        )
    }

    /// CREATE; `umask` as MKNOD's.
    pub fn create(
        &self,
        c: Caller,
        parent: u64,
        name: &[u8],
        mode: u32,
        umask: u32,
        flags: i32,
    ) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        let dir = match self.node(parent) {
            Ok(d) => d,
            Err(e) => return Reply::Err(e),
        };
        // A file created here is new, so its creator may read it whatever
        // the mode: no fallback needed (Linux's O_CREAT opens likewise).
        let (flags, _) = self.open_flags(flags);
        match self
            .ns
            .create(&c.cred(), &dir.handle, name, flags, mode, umask)
        {
            Ok((entry, fh)) => {
                let stat = entry.stat;
                let id = self.nodes.remember(entry);
                Reply::Created { id, stat, fh }
            }
            Err(e) => Reply::Err(e),
        }
    }

    pub fn lseek(&self, fh: u64, offset: i64, whence: i32) -> Reply {
        match self.ns.lseek(fh, offset, whence) {
            Ok(o) => Reply::Offset(o),
            Err(e) => Reply::Err(e),
        }
    }

    pub fn setxattr(&self, c: Caller, id: u64, name: &[u8], value: &[u8], flags: i32) -> Reply {
        // An ACL change is reported as a chmod; the kernel updates itself.
        let _own = OwnChange::begin(&self.nodes);
        Reply::from_empty(
            self.node(id)
                .and_then(|n| self.ns.setxattr(&c.cred(), &n.handle, name, value, flags)),
        )
    }

    pub fn getxattr(&self, c: Caller, id: u64, name: &[u8], size: u32) -> Reply {
        let n = match self.node(id) {
            Ok(n) => n,
            Err(e) => return Reply::Err(e),
        };
        let cred = c.cred();
        if size == 0 {
            return match self.ns.getxattr(&cred, &n.handle, name, &mut []) {
                Ok(len) => Reply::XattrSize(len as u32),
                Err(e) => Reply::Err(e),
            };
        }
        let mut buf = vec![0u8; size.min(XATTR_BUF_MAX) as usize];
        match self.ns.getxattr(&cred, &n.handle, name, &mut buf) {
            Ok(len) => {
                buf.truncate(len);
                Reply::Data(buf)
            }
            Err(e) => Reply::Err(e),
        }
    }

    pub fn listxattr(&self, c: Caller, id: u64, size: u32) -> Reply {
        let n = match self.node(id) {
            Ok(n) => n,
            Err(e) => return Reply::Err(e),
        };
        let cred = c.cred();
        if size == 0 {
            return match self.ns.listxattr(&cred, &n.handle, &mut []) {
                Ok(len) => Reply::XattrSize(len as u32),
                Err(e) => Reply::Err(e),
            };
        }
        let mut buf = vec![0u8; size.min(XATTR_BUF_MAX) as usize];
        match self.ns.listxattr(&cred, &n.handle, &mut buf) {
            Ok(len) => {
                buf.truncate(len);
                Reply::Data(buf)
            }
            Err(e) => Reply::Err(e),
        }
    }

    pub fn removexattr(&self, c: Caller, id: u64, name: &[u8]) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        Reply::from_empty(
            self.node(id)
                .and_then(|n| self.ns.removexattr(&c.cred(), &n.handle, name)),
        )
    }

    pub fn fallocate(&self, c: Caller, fh: u64, offset: u64, length: u64, mode: i32) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        Reply::from_empty(self.ns.fallocate(&c.cred(), fh, mode, offset, length))
    }

    /// FUSE_IOCTL: the inode-flag ioctls the kernel forwards for lsattr
    /// and chattr (fuse_fileattr_get and _set open the file and pass its
    /// handle; on a 64-bit kernel with compat support FS_IOC_GETFLAGS and
    /// _SETFLAGS arrive as their 32-bit twins, which carry the same int).
    /// Any other command is ENOTTY, as an ioctl no filesystem knows.
    pub fn ioctl(&self, c: Caller, fh: u64, cmd: u32, input: &[u8], out_size: u32) -> Reply {
        const GETFLAGS32: u32 = 0x8004_6601;
        const SETFLAGS32: u32 = 0x4004_6602;
        let cred = c.cred();
        let ns = &self.ns;
        let word = || -> Result<u32, Errno> {
            let b = input.get(..4).ok_or(Errno::EINVAL)?;
            Ok(u32::from_ne_bytes(b.try_into().map_err(|_| Errno::EINVAL)?))
        };
        let cmd = match cmd {
            GETFLAGS32 => FS_IOC_GETFLAGS,
            SETFLAGS32 => FS_IOC_SETFLAGS,
            c => u64::from(c),
        };
        let r = match cmd {
            FS_IOC_GETFLAGS => ns.getflags(&cred, fh).map(|f| f.to_ne_bytes().to_vec()),
            FS_IOC_SETFLAGS => word()
                .and_then(|f| ns.setflags(&cred, fh, f))
                .map(|()| Vec::new()),
            FS_IOC_FSGETXATTR => ns.fsgetxattr(&cred, fh).map(|x| x.to_bytes().to_vec()),
            FS_IOC_FSSETXATTR => FsXattr::from_bytes(input)
                .ok_or(Errno::EINVAL)
                .and_then(|x| ns.fssetxattr(&cred, fh, &x))
                .map(|()| Vec::new()),
            _ => Err(Errno::ENOTTY),
        };
        match r {
            Ok(mut out) => {
                out.truncate(out_size as usize);
                Reply::Ioctl(out)
            }
            Err(e) => Reply::Err(e),
        }
    }

    pub fn copy_file_range(
        &self,
        c: Caller,
        fh_in: u64,
        offset_in: u64,
        fh_out: u64,
        offset_out: u64,
        len: u64,
    ) -> Reply {
        let _own = OwnChange::begin(&self.nodes);
        // The kernel checked the flags (none are defined) before sending.
        match self
            .ns
            .copy_file_range(&c.cred(), fh_in, offset_in, fh_out, offset_out, len)
        {
            Ok(n) => Reply::Written(n as u32),
            Err(e) => Reply::Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vfscale::Vfs;

    const ROOT: u64 = 1;

    /// Operations over a fresh namespace of `vfs` (5 s TTLs, no writeback
    /// cache).
    fn ops_over(vfs: &Vfs) -> Ops {
        let ttl = Duration::from_secs(5);
        Ops::new(
            Arc::new(Namespace::new(vfs)),
            Ttls {
                entry: ttl,
                attr: ttl,
            },
            false,
        )
    }

    /// A FALLOCATE runs with the request's credentials, so one by a caller
    /// without CAP_FSETID clears set-user-ID and set-group-ID, as on tmpfs
    /// (it ran with root's, which keep them; the kernel's own clearing
    /// before the request hid that on the mount).
    #[test]
    fn fallocate_clears_set_id_bits_with_the_callers_credentials() {
        let vfs = Vfs::new();
        let ops = ops_over(&vfs);
        let root = Caller {
            uid: 0,
            gid: 0,
            pid: 1,
        };
        let owner = Caller {
            uid: 1000,
            gid: 1000,
            pid: std::process::id(),
        };
        let Reply::Entry { id, .. } = ops.mknod(root, ROOT, b"f", S_IFREG | 0o755, 0, 0) else {
            panic!("mknod failed");
        };
        let set = |s: SetAttr| assert!(matches!(ops.setattr(root, id, &s), Reply::Attr { .. }));
        set(SetAttr {
            uid: Some(1000),
            gid: Some(1000),
            ..SetAttr::default()
        });
        set(SetAttr {
            mode: Some(0o6755),
            ..SetAttr::default()
        });
        let Reply::Open { fh, .. } = ops.open(owner, id, O_WRONLY) else {
            panic!("the owner's open failed");
        };
        assert!(matches!(ops.fallocate(owner, fh, 0, 4096, 0), Reply::Ok));
        let Reply::Attr { stat, .. } = ops.getattr(id) else {
            panic!("getattr failed");
        };
        assert_eq!(stat.mode & 0o7777, 0o755);
        assert_eq!(stat.size, 4096);
    }

    /// An OPEN of a FIFO (which the kernel never sends: it opens FIFOs
    /// itself) answers at once, as open(2) with O_NONBLOCK would: a reader
    /// succeeds, a writer without a reader gets ENXIO. Without the
    /// O_NONBLOCK the worker would wait for a partner forever; the test
    /// waits for the answers on another thread, up to a bound far above
    /// any scheduling delay, so a regression fails instead of hanging.
    #[test]
    fn an_open_of_a_fifo_never_waits_for_a_partner() {
        let vfs = Vfs::new();
        let ops = Arc::new(ops_over(&vfs));
        let root = Caller {
            uid: 0,
            gid: 0,
            pid: 1,
        };
        let Reply::Entry { id, .. } = ops.mknod(root, ROOT, b"fifo", S_IFIFO | 0o644, 0, 0) else {
            panic!("mknod of a FIFO failed");
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = ops.clone();
        std::thread::spawn(move || {
            // The writer first, while there is no reader.
            let writer = worker.open(root, id, O_WRONLY);
            let reader = worker.open(root, id, O_RDONLY);
            let _ = tx.send((format!("{reader:?}"), format!("{writer:?}")));
        });
        let (reader, writer) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("an OPEN of a FIFO waited for a partner");
        assert!(reader.starts_with("Open"), "reader: {reader}");
        assert_eq!(writer, format!("{:?}", Reply::Err(Errno::ENXIO)));
    }
}
