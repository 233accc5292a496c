//! The passthrough backend: a superblock that mirrors a host directory, so
//! vfscale is a caching layer in front of a real disk.
//!
//! What it serves (the rest is in docs/COMPATIBILITY.md): lookups and
//! attributes (an inode's number is the host's st_ino, its type, mode,
//! owner, size, times and link count the host's, copied at lookup and
//! refreshed at revalidation), symlink text, directory listings (cached,
//! below), reads and writes of host files (also truncation), and
//! the namespace and attribute changes the core routes here after its own
//! checks (create/mknod/mkdir, symlink, link, unlink/rmdir, rename, chmod,
//! chown, utimes: single-component `*at` calls on a directory fd opened
//! beneath the root; see process/backend_names.rs), and unnamed files
//! (open(O_TMPFILE): the host's own, held from the start; `link` names
//! one through its held file).
//!
//! Caching: every answer is cached in the dcache like any other (negative
//! ones too). A cached entry older than the instance's TTL is revalidated
//! on its next use by the walk: a negative one is vouched for by its
//! directory's unchanged stamp when it can be (dirs.rs: one host stat of
//! the directory per TTL for all its misses), else one host lstat of the
//! name; same host object → its attributes are refreshed; gone or
//! replaced → the entry is dropped and looked up again. Host errors
//! (EACCES, EIO...) are returned unchanged and change nothing in the
//! cache. Lookups and revalidations stat the name on its directory's
//! cached O_PATH fd (one host call; dirs.rs says when such an fd is
//! trusted).
//!
//! Listings: a readdir from the first position with no valid cached
//! listing reads the whole host directory into one (listing.rs) and serves
//! the pass from it; later readdirs use it within the TTL, and past it
//! while one observation of the directory shows its stamp unchanged and
//! settled before the listing was read (the rule that vouches for cached
//! misses; a listing read while the stamp was unsettled is re-read past
//! the TTL instead). Every vfscale name change in a directory (failed ones
//! too) drops its listing; a failed observation drops it and returns the
//! host's error. Positions are the host's d_off + 2 either way, and a
//! position the cached listing does not hold is listed from the host.
//!
//! Invariants:
//! - every host call goes through `host::HostRoot` (see host.rs for the
//!   containment argument);
//! - each live passthrough inode has a `Node` (its host path relative to
//!   the root and, for a directory, its `DirState`), reached from the
//!   inode's `private` pointer without a lookup; the `registry` owns it
//!   from the inode's making until `evict` (when the core frees the
//!   inode), and lists every node for the scan a directory rename makes;
//!   no host call is made under a node's mutex (a cached listing is served
//!   through an `Arc` taken under it). Lock order: the fd ring, then an id
//!   shard, then a registry shard, then a node;
//! - inodes handed to the core carry one reference; a fresh one is counted
//!   against the instance's inode and block limits like tmpfs inodes (the
//!   core's `iput` releases both); a non-directory already live for the
//!   same host file (another name of a host hard link) is shared instead,
//!   through the identity map `ids` (its rules are at the field).

pub mod dirs;
mod fhandle;
pub mod host;
mod listing;

use super::{AttrChange, Filesystem, FoundInode, NameMove, SuperBlock, XattrCall};
use crate::abi::*;
use crate::dir::index::DirIndex;
use crate::inode::{Inode, InodeBody};
use crate::process::DirEntryRef;
use crate::sync::epoch::Collector;
use crate::sync::lock::{Mutex, MutexGuard, RwLock};
use dirs::{mono_ns, real_ns, DirState, FdRing, Observed, Stamp};
use host::{HostRoot, HostStat, HostStats};
use listing::{Listing, ListingBuilder, FIRST};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Tunables of a passthrough instance.
#[derive(Clone, Copy, Debug)]
pub struct PassthroughConfig {
    /// How long a cached entry is trusted before the next use asks the host
    /// again (`Duration::ZERO`: every use). Also how long a cached
    /// directory fd is used before it is re-opened from the root.
    pub ttl: Duration,
    /// How many host directory fds are kept open for lookups (0: none; each
    /// lookup below the root then opens its directory from the root).
    pub dir_fds: usize,
    /// Let an unchanged directory (same ino, mtime and ctime) vouch for
    /// its cached misses instead of asking the host per name. Sound when
    /// the host's directory timestamps come from this machine's clock
    /// (local filesystems); turn off for a network filesystem whose server
    /// clock may lag.
    pub dir_stamps: bool,
    /// Largest directory listing kept (bytes: names plus 21 per entry;
    /// 0: listings are not cached). A larger directory is listed from the
    /// host on every readdir.
    pub listing_max_bytes: usize,
    /// All cached listings of the instance together (bytes): a listing
    /// that does not fit is not kept.
    pub listings_budget: usize,
}

impl Default for PassthroughConfig {
    fn default() -> Self {
        PassthroughConfig {
            ttl: Duration::from_secs(1),
            dir_fds: 1024,
            dir_stamps: true,
            listing_max_bytes: 16 << 20,
            listings_budget: 64 << 20,
        }
    }
}

const SHARDS: usize = 16;
/// Rounds an open makes to hold its file while other opens race with it
/// (`Filesystem::open`); after them, it holds nothing.
const HOLD_ATTEMPTS: usize = 4;
/// Times a host call by path looks again after renames moved the path
/// under it (sync/in_flight.rs); after them, the file counts as gone.
const MOVE_ATTEMPTS: usize = 64;

/// Other names a non-directory was found under, at most this many (the
/// oldest is forgotten first: its file stays reachable by the others).
const MAX_OTHER_PATHS: usize = 8;

/// What the backend keeps per live inode.
struct Node {
    /// Host path relative to the root ("" for the root), kept current by
    /// vfscale's own renames (`names_moved`).
    path: Box<[u8]>,
    /// A non-directory's other names as found by lookups (host hard links
    /// share one inode: `ids`), kept current as `path` is; `path` is the
    /// last one a lookup found, and one of these takes its place when
    /// vfscale removes that name.
    others: Vec<Box<[u8]>>,
    /// A non-directory's host identity (st_dev, st_ino).
    host_id: (u64, u64),
    /// The host object's birth time (`HostStat::birth`; 0 unknown): with
    /// the inode number, what tells it from a later file the host gave
    /// the same number (`is_same_file`).
    birth: u64,
    /// In `ids` under `host_id` (set under both locks; `evict` removes the
    /// entry only then).
    mapped: bool,
    /// Its name was removed through vfscale (unlinked, or replaced by a
    /// rename), or it never had one (O_TMPFILE, until `link`): host calls
    /// by path are ESTALE, never made by its old path, which may name
    /// another file by now.
    gone: bool,
    /// Directories only.
    dir: Option<Box<DirState>>,
    /// Its place in its registry shard's `live` (set under that shard's
    /// lock when registered).
    slot: u32,
    /// A regular file's host file held open while vfscale has open
    /// descriptions of the inode (`Filesystem::open`), or a directory
    /// vfscale removed while it may be in use, held until `evict`
    /// (`hold_removed_dir`).
    data: Option<DataFd>,
}

/// A regular file's host file, opened by the first open description that
/// asked (and could be served), closed after the last such one went. Data,
/// attribute and xattr calls on the inode go through it, so they reach the
/// file vfscale opened after its name was removed or renamed (Linux's
/// open-file semantics), in one host call each.
struct DataFd {
    fd: Arc<OwnedFd>,
    access: Access,
    /// Open descriptions holding it (those `open` returned true for).
    opens: usize,
}

/// What a host fd may do: read, write, or both (neither: any fd serves,
/// as for fsync, lseek, fstat and the f* attribute calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Access {
    read: bool,
    write: bool,
}

impl Access {
    const ANY: Access = Access {
        read: false,
        write: false,
    };
    const READ: Access = Access {
        read: true,
        write: false,
    };
    const WRITE: Access = Access {
        read: false,
        write: true,
    };

    fn of_fmode(fmode: u32) -> Access {
        Access {
            read: fmode & crate::file::FMODE_READ != 0,
            write: fmode & crate::file::FMODE_WRITE != 0,
        }
    }

    fn covers(self, need: Access) -> bool {
        (self.read || !need.read) && (self.write || !need.write)
    }

    fn union(self, other: Access) -> Access {
        Access {
            read: self.read || other.read,
            write: self.write || other.write,
        }
    }

    /// The open(2) access mode (O_RDONLY for `ANY`, an open description
    /// of neither, as `O_ACCMODE` opens are).
    fn open_flags(self) -> i32 {
        match (self.read, self.write) {
            (true, true) => libc::O_RDWR,
            (false, true) => libc::O_WRONLY,
            _ => libc::O_RDONLY,
        }
    }
}

/// One inode's part of a `names_moved` call.
struct PlannedMove<'a> {
    inode: &'a Inode,
    old: Box<[u8]>,
    /// None: the name is gone.
    new: Option<Box<[u8]>>,
    is_dir: bool,
}

/// A live inode's node: the inode's `private` pointer leads to it.
type NodeCell = Mutex<Node>;

/// One shard of the registry of live nodes: `live[node.slot]` owns the
/// node; `free` lists the empty places. Registering and evicting are a
/// push and a store, with no hashing and no table to grow (a hash map by
/// inode address cost a cold miss ~0.2 µs: PERFORMANCE.md, session 29).
#[derive(Default)]
struct Slots {
    live: Vec<Option<Arc<NodeCell>>>,
    free: Vec<u32>,
}

type RegistryShard = Mutex<Slots>;

/// Live non-directory inodes by host identity (st_dev, st_ino) → inode
/// address.
type IdShard = Mutex<HashMap<(u64, u64), usize, BuildHasherDefault<IdHasher>>>;

/// Hashes a host identity with a multiply per word (the default SipHash
/// costs ~150 instructions per map operation): the numbers a host
/// filesystem gives its files are not chosen by an adversary.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Where a name's directory is open: the root fd, or a cached (or, with
/// `dir_fds` 0, a one-use) fd of an inner directory.
enum At {
    Root,
    Fd(Arc<OwnedFd>),
}

/// The passthrough backend of one instance.
pub struct Passthrough {
    host: HostRoot,
    config: PassthroughConfig,
    ttl_ns: u64,
    root_dev: std::sync::atomic::AtomicU64,
    /// Owns every live node (see the module's invariants).
    registry: Box<[RegistryShard]>,
    /// Frees evicted nodes once no caller can still hold one: the core
    /// calls the backend on inodes an epoch guard keeps allocated, which
    /// may be evicted meanwhile.
    retired: Collector,
    /// The identity map: a lookup that finds a host file vfscale already
    /// has an inode for (another name of a host hard link) shares it, as
    /// Linux's icache does. An entry is added with its inode and removed by
    /// `evict` (only its own: a dying inode's entry may have been taken
    /// over by a fresh one), before the core retires the inode, so an
    /// inode found under the shard lock is allocated; it is shared only if
    /// `RefCount::get` succeeds there. Lock order: an id shard, then a
    /// node shard. Directories are not in it (one name each).
    ids: Box<[IdShard]>,
    /// Directories holding an fd (bound and eviction order; dirs.rs).
    ring: Mutex<FdRing<Arc<NodeCell>>>,
    /// Host calls and fds held (`HostRoot`'s, shared).
    stats: Arc<HostStats>,
    fd_serial: AtomicU64,
    /// Bumped when vfscale renames or removes a directory: every cached fd
    /// is re-opened from the root before its next use.
    rename_epoch: AtomicU64,
}

impl Passthrough {
    /// A backend mirroring host directory `dir`.
    pub fn new(dir: &std::path::Path, config: PassthroughConfig) -> SysResult<Passthrough> {
        let host = HostRoot::open(dir)?;
        let st = host.lstat(b"")?;
        Ok(Passthrough {
            stats: host.stats(),
            host,
            ttl_ns: u64::try_from(config.ttl.as_nanos()).unwrap_or(u64::MAX),
            config,
            root_dev: std::sync::atomic::AtomicU64::new(st.st_dev),
            registry: (0..SHARDS).map(|_| Mutex::default()).collect(),
            retired: Collector::new(),
            ids: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
            ring: Mutex::new(FdRing::new()),
            fd_serial: AtomicU64::new(1),
            rename_epoch: AtomicU64::new(0),
        })
    }

    /// The host access layer (tests force its fallback mode).
    pub fn host(&self) -> &HostRoot {
        &self.host
    }

    /// The instance's host statistics (shared: keep them after handing
    /// the backend to a `Vfs`).
    pub fn stats(&self) -> Arc<HostStats> {
        self.stats.clone()
    }

    fn registry_shard(&self, inode: &Inode) -> &RegistryShard {
        &self.registry[(addr_of(inode) >> 6) & (SHARDS - 1)]
    }

    /// The node of `inode`, if it has one (every inode of the instance
    /// does, from its making until `evict`).
    fn node<'i>(&self, inode: &'i Inode) -> Option<&'i NodeCell> {
        let p = inode.private() as *const NodeCell;
        // SAFETY: `register` set it to a node the registry owns until
        // `evict` clears it and retires the registry's reference to
        // `retired`: the node stays allocated until every epoch guard
        // entered before then is gone. The caller holds the inode by a
        // reference (then `evict` has not run) or under such a guard (the
        // core's rule for every backend call), which outlives the borrow.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// `node`, locked.
    fn locked<'i>(&self, inode: &'i Inode) -> Option<MutexGuard<'i, Node>> {
        self.node(inode).map(Mutex::lock)
    }

    /// `node`, as a reference of its own (the fd ring keeps one).
    fn node_arc(&self, inode: &Inode) -> Option<Arc<NodeCell>> {
        let p = inode.private() as *const NodeCell;
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `Arc::as_ptr` of the registry's reference,
        // alive for as long as `node`'s borrow (see there); one more
        // strong count is taken before the new `Arc` owns it.
        Some(unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        })
    }

    /// Gives `node` to live inode `inode` (not yet reachable by anyone
    /// else, or a mount's root being set up) and to the registry.
    fn register(&self, inode: &Inode, mut node: Node) {
        let mut reg = self.registry_shard(inode).lock();
        node.slot = match reg.free.pop() {
            Some(s) => s,
            None => {
                reg.live.push(None);
                u32::try_from(reg.live.len() - 1).expect("under 2^32 live nodes per shard")
            }
        };
        let slot = node.slot as usize;
        let cell = Arc::new(Mutex::new(node));
        inode.set_private(Arc::as_ptr(&cell).cast());
        reg.live[slot] = Some(cell);
    }

    /// The host path of a live passthrough inode.
    fn path_of(&self, inode: &Inode) -> SysResult<Box<[u8]>> {
        self.locked(inode)
            .filter(|n| !n.gone)
            .map(|n| n.path.clone())
            .ok_or(Errno::ESTALE)
    }

    fn raw(&self, at: &At) -> RawFd {
        match at {
            At::Root => self.host.root_fd(),
            At::Fd(fd) => fd.as_raw_fd(),
        }
    }

    /// A trusted fd of directory `dir` (dirs.rs) and, given `name`, the
    /// host path of its child `name`.
    fn dir_at(&self, dir: &Inode, name: Option<&[u8]>) -> SysResult<(At, Box<[u8]>)> {
        self.dir_at_time(dir, name, mono_ns())
    }

    /// `dir_at` with the monotonic time `now` (ns) read by the caller.
    fn dir_at_time(
        &self,
        dir: &Inode,
        name: Option<&[u8]>,
        now: u64,
    ) -> SysResult<(At, Box<[u8]>)> {
        // Relaxed: read before the open below, so a rename that bumps it
        // meanwhile makes the next use re-open (the rename itself races
        // with this lookup either way).
        let epoch = self.rename_epoch.load(Ordering::Relaxed);
        let path = {
            let mut node = self.locked(dir).ok_or(Errno::ESTALE)?;
            if node.gone {
                // A removed directory (a cwd in it): Linux's lookups in a
                // dead directory.
                return Err(Errno::ENOENT);
            }
            let rel = match name {
                Some(n) => host::join(&node.path, n)?,
                None => Box::default(),
            };
            if node.path.is_empty() {
                return Ok((At::Root, rel));
            }
            if let Some(ds) = node.dir.as_deref_mut() {
                if let Some(fd) = &ds.fd {
                    if ds.fd_epoch == epoch && now.saturating_sub(ds.fd_checked_at) < self.ttl_ns {
                        ds.referenced = true;
                        return Ok((At::Fd(fd.clone()), rel));
                    }
                }
            }
            (node.path.clone(), rel)
        };
        Ok((At::Fd(self.open_dir(dir, &path.0, epoch)?), path.1))
    }

    /// Opens directory `dir` at `path` beneath the root and, when fds are
    /// cached, keeps it as `dir`'s fd (and observes its stamp). ENOENT if
    /// the directory there is not `dir` (`is_same_file`; checked with the
    /// fstat the stamp needs, so not when fds are not cached): the host
    /// removed or moved it and put another in its place, and a cwd or a
    /// descriptor in the old one must not list or look up the new one's
    /// names, as `dir_fd` keeps it from changing them.
    fn open_dir(&self, dir: &Inode, path: &[u8], epoch: u64) -> SysResult<Arc<OwnedFd>> {
        let (before, real_before) = (mono_ns(), real_ns());
        let fd = self
            .host
            .open_beneath(path, libc::O_PATH | libc::O_DIRECTORY)?;
        if self.config.dir_fds == 0 {
            return Ok(Arc::new(fd));
        }
        let st = self.host.fstat(fd.as_raw_fd())?;
        let when = Observed {
            before,
            after: mono_ns(),
            real_before,
        };
        let fd = Arc::new(fd);
        // The caller keeps `dir` alive, so its node exists.
        let Some(cell) = self.node_arc(dir) else {
            return Ok(fd);
        };
        // Relaxed: a unique number, nothing else.
        let serial = self.fd_serial.fetch_add(1, Ordering::Relaxed);
        let old = {
            let mut node = cell.lock();
            if !self.is_object(dir.ino(), node.birth, &st) {
                return Err(Errno::ENOENT);
            }
            let ds = node.dir.get_or_insert_with(|| Box::new(DirState::new()));
            ds.observe(&st, when);
            ds.fd_checked_at = before;
            ds.fd_epoch = epoch;
            ds.fd_serial = serial;
            ds.referenced = true;
            ds.fd.replace(fd.clone())
        };
        if old.is_none() {
            self.stats.dir_fds_add(1);
        }
        drop(old);
        self.ring_add(cell, serial);
        Ok(fd)
    }

    /// Lists a newly installed fd and closes the coldest ones while more
    /// than `dir_fds` are held (second chance for recently used ones).
    fn ring_add(&self, cell: Arc<NodeCell>, serial: u64) {
        let cap = self.config.dir_fds;
        let mut closing = Vec::new();
        let mut ring = self.ring.lock();
        ring.entries.push_back((cell, serial));
        let mut budget = 2 * ring.entries.len();
        while self.stats.dir_fds_held() > cap && budget > 0 {
            budget -= 1;
            let Some((a, s)) = ring.entries.pop_front() else {
                break;
            };
            let mut node = a.lock();
            let Some(ds) = node.dir.as_deref_mut() else {
                continue;
            };
            if ds.fd_serial != s || ds.fd.is_none() {
                continue;
            }
            if ds.referenced {
                ds.referenced = false;
                drop(node);
                ring.entries.push_back((a, s));
                continue;
            }
            ds.fd_serial = 0;
            closing.push(ds.fd.take());
            self.stats.dir_fds_add(-1);
        }
        if ring.entries.len() > cap.saturating_mul(2).saturating_add(64) {
            // Entries of closed or re-opened fds: keep the live ones only.
            let entries = std::mem::take(&mut ring.entries);
            ring.entries = entries
                .into_iter()
                .filter(|(a, s)| {
                    a.lock()
                        .dir
                        .as_deref()
                        .is_some_and(|ds| ds.fd_serial == *s && ds.fd.is_some())
                })
                .collect();
        }
        drop(ring);
        drop(closing);
    }

    /// Records a stat of what `dir`'s path leads to (another directory
    /// there is a stamp change: its ino is part of the stamp).
    fn observe(&self, dir: &Inode, st: &libc::stat, when: Observed) {
        if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return;
        }
        if let Some(mut node) = self.locked(dir) {
            node.dir
                .get_or_insert_with(|| Box::new(DirState::new()))
                .observe(st, when);
        }
    }

    /// vfscale's inode number for a host object: the host's own number on
    /// the root's device, a mix of device and number elsewhere.
    fn ino_of(&self, st: &libc::stat) -> u64 {
        self.ino_of_dev(st.st_dev, st.st_ino)
    }

    /// Whether host object `st` is `inode`'s own (`is_object`).
    fn is_same_file(&self, inode: &Inode, st: &HostStat) -> bool {
        let birth = self.locked(inode).map_or(0, |n| n.birth);
        self.is_object(inode.ino(), birth, st)
    }

    /// Whether host object `st` is the one vfscale numbers `ino`, born at
    /// `birth`: the same number and, where both are known, the same birth
    /// (host.rs, Identity).
    fn is_object(&self, ino: u64, birth: u64, st: &HostStat) -> bool {
        self.ino_of(st) == ino && st.born_as(birth)
    }

    fn ino_of_dev(&self, dev: u64, ino: u64) -> u64 {
        // Relaxed: set once at construction.
        if dev == self.root_dev.load(std::sync::atomic::Ordering::Relaxed) {
            ino.max(2)
        } else {
            (ino ^ dev.rotate_left(40)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 2
        }
    }

    /// A fresh inode (one reference) mirroring host object `st`, entry
    /// `name` of the directory open as `at`, at host path `rel`; `start`
    /// holds the clocks read before the stat (`observe_start`). The clock
    /// after it is read here, and only for a directory (the only kind
    /// whose stamp is kept): later than the stat returned, which is all
    /// `Observed::after` promises.
    fn make_inode(
        &self,
        sb: &SuperBlock,
        (at, name): (&At, &[u8]),
        rel: Box<[u8]>,
        st: &HostStat,
        start: (u64, i64),
    ) -> SysResult<FoundInode> {
        let ty = st.st_mode & libc::S_IFMT;
        let body = match ty {
            libc::S_IFDIR => InodeBody::Directory(RwLock::new(DirIndex::new())),
            libc::S_IFREG => InodeBody::Regular(RwLock::new(Default::default())),
            libc::S_IFLNK => InodeBody::Symlink(self.host.readlink_at(self.raw(at), name)?.into()),
            _ => InodeBody::Special(st.st_rdev),
        };
        if ty == libc::S_IFDIR {
            let mut ds = Box::new(DirState::new());
            ds.observe(st, observed(start));
            let node = Node::named(rel, Some(ds), (0, 0), st.birth);
            return self.adopt(sb, st, body, node).map(FoundInode::fresh);
        }
        let id = (st.st_dev, st.st_ino);
        let mut ids = self.id_shard(id).lock();
        if let Some(found) = self.share(&ids, id, st, &rel) {
            drop(ids);
            // SAFETY: `share` took a reference.
            copy_attrs(unsafe { &*found }, st);
            return Ok(FoundInode {
                inode: found,
                fresh: false,
            });
        }
        // A file with one link is mapped only once it gets another
        // through vfscale (`map_identity`): most files have one, and the
        // map's insert and growth are a cold miss's largest added cost. A
        // link the host adds to a file cached before it gives the new
        // name an inode of its own (COMPATIBILITY.md).
        let mut node = Node::named(rel, None, id, st.birth);
        node.mapped = st.st_nlink > 1;
        let mapped = node.mapped;
        let p = self.adopt(sb, st, body, node)?;
        if mapped {
            ids.insert(id, p as usize);
        }
        Ok(FoundInode::fresh(p))
    }

    /// Puts live non-directory `inode` in the identity map if it is not
    /// there (vfscale gave it another name: `link`).
    fn map_identity(&self, inode: &Inode) {
        let Some(cell) = self.node(inode) else {
            return;
        };
        let id = match &*cell.lock() {
            n if !n.mapped && n.dir.is_none() => n.host_id,
            _ => return,
        };
        let mut ids = self.id_shard(id).lock();
        let mut n = cell.lock();
        if !n.mapped {
            n.mapped = true;
            ids.insert(id, addr_of(inode));
        }
    }

    fn id_shard(&self, (dev, ino): (u64, u64)) -> &IdShard {
        &self.ids[(ino ^ dev) as usize & (SHARDS - 1)]
    }

    /// The live inode of host file `id` (stat `st`, just found at `rel`),
    /// with a new reference, if it may serve this name too: the same type
    /// and birth (a later birth is a recycled number's new file), alive,
    /// and either holding its host file (which keeps the number from being
    /// recycled) or still named (a node whose last known name vfscale
    /// removed and that holds nothing may be a recycled number's
    /// predecessor where the host keeps no birth time: a fresh inode is
    /// made instead). Learns `rel` as one of its names. Caller holds
    /// `id`'s shard (`ids`).
    fn share(
        &self,
        ids: &HashMap<(u64, u64), usize, BuildHasherDefault<IdHasher>>,
        id: (u64, u64),
        st: &HostStat,
        rel: &[u8],
    ) -> Option<*const Inode> {
        let &addr = ids.get(&id)?;
        let p = addr as *const Inode;
        // SAFETY: an entry leaves `ids` (under this shard lock, which the
        // caller holds) before the core retires its inode (`evict`).
        let inode = unsafe { &*p };
        if inode.file_type() != st.st_mode & libc::S_IFMT {
            return None;
        }
        let mut node = self.locked(inode)?;
        if (node.gone && node.data.is_none()) || !st.born_as(node.birth) {
            return None;
        }
        if !inode.refcount.get() {
            return None;
        }
        node.learn_path(rel);
        Some(p)
    }

    /// A fresh inode (one reference, reserved in the instance) mirroring
    /// host object `st`, with the backend's `node` for it.
    fn adopt(
        &self,
        sb: &SuperBlock,
        st: &libc::stat,
        body: InodeBody,
        node: Node,
    ) -> SysResult<*const Inode> {
        sb.reserve_inode()?;
        let p = Inode::alloc(
            sb,
            self.ino_of(st),
            st.st_mode,
            (st.st_uid, st.st_gid),
            body,
            0,
        );
        // SAFETY: just allocated, not shared yet.
        let i = unsafe { &*p };
        let fresh = i.refcount.get();
        debug_assert!(fresh);
        copy_attrs(i, st);
        self.register(i, node);
        Ok(p)
    }
}

impl Node {
    /// A named inode's node.
    fn named(path: Box<[u8]>, dir: Option<Box<DirState>>, host_id: (u64, u64), birth: u64) -> Node {
        Node {
            path,
            others: Vec::new(),
            host_id,
            birth,
            mapped: false,
            gone: false,
            dir,
            data: None,
            slot: 0,
        }
    }

    /// Every host path the node knows.
    fn paths_mut(&mut self) -> impl Iterator<Item = &mut Box<[u8]>> {
        core::iter::once(&mut self.path).chain(self.others.iter_mut())
    }

    /// A lookup found the node's file at `rel`: that name becomes the one
    /// host calls use (the last one seen to lead to the file: the host may
    /// have renamed the others behind vfscale), the previous one is kept
    /// among the others.
    fn learn_path(&mut self, rel: &[u8]) {
        if self.gone {
            self.path = rel.into();
            self.gone = false;
            return;
        }
        if *self.path == *rel {
            return;
        }
        let previous = std::mem::replace(&mut self.path, rel.into());
        self.others.retain(|o| **o != *rel);
        if self.others.len() == MAX_OTHER_PATHS {
            self.others.remove(0);
        }
        self.others.push(previous);
    }

    /// vfscale moved the node's name `old` to `new` (None: removed it).
    fn move_path(&mut self, old: &[u8], new: Option<&[u8]>) {
        if self.dir.is_some() {
            // A directory: its one name.
            match new {
                Some(n) => self.path = n.into(),
                None => self.gone = true,
            }
            return;
        }
        let at = if !self.gone && *self.path == *old {
            Some(None)
        } else {
            self.others.iter().position(|o| **o == *old).map(Some)
        };
        match (at, new) {
            (Some(None), Some(n)) => self.path = n.into(),
            (Some(Some(i)), Some(n)) => self.others[i] = n.into(),
            (Some(None), None) => match self.others.pop() {
                Some(o) => self.path = o,
                None => self.gone = true,
            },
            (Some(Some(i)), None) => {
                self.others.remove(i);
            }
            // A name the node did not know (forgotten past
            // `MAX_OTHER_PATHS`, or the node's last one had gone).
            (None, Some(n)) => self.learn_path(n),
            (None, None) => {}
        }
    }
}

fn addr_of(inode: &Inode) -> usize {
    inode as *const Inode as usize
}

/// Clocks before a host stat.
fn observe_start() -> (u64, i64) {
    (mono_ns(), real_ns())
}

fn observed((before, real_before): (u64, i64)) -> Observed {
    Observed {
        before,
        after: mono_ns(),
        real_before,
    }
}

fn cstr(name: &[u8]) -> SysResult<std::ffi::CString> {
    if !host::valid_component(name) {
        return Err(Errno::EINVAL);
    }
    std::ffi::CString::new(name).map_err(|_| Errno::EINVAL)
}

/// The result of a libc call returning -1 on error.
fn check(r: libc::c_long) -> SysResult<()> {
    if r < 0 {
        return Err(Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ));
    }
    Ok(())
}

impl Passthrough {
    /// `inode`'s host file (or directory) opened beneath the root with
    /// `flags`: each data call's own fd.
    /// The host file of `inode`, opened by its host path. ENOENT there is
    /// ESTALE: the inode's file is gone from where vfscale last saw it
    /// (removed on the host, or renamed by another name of it that vfscale
    /// cached as another inode: COMPATIBILITY.md).
    fn open_host(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        flags: i32,
    ) -> SysResult<std::os::fd::OwnedFd> {
        let opened = sb.renames.retry(
            MOVE_ATTEMPTS,
            |&e| e == Errno::ENOENT,
            || self.host.open_beneath(&self.path_of(inode)?, flags),
        );
        opened.map_err(|e| if e == Errno::ENOENT { Errno::ESTALE } else { e })
    }

    /// The held host file of `inode` if it allows `need` (`DataFd`).
    fn held_fd(&self, inode: &Inode, need: Access) -> Option<Arc<OwnedFd>> {
        let node = self.locked(inode)?;
        let data = node.data.as_ref()?;
        data.access.covers(need).then(|| data.fd.clone())
    }

    /// The fd a data call on `inode` makes its call on: the held host file
    /// when it allows `need`, else the file opened by its host path for
    /// `need` and this call alone.
    fn data_fd(&self, sb: &SuperBlock, inode: &Inode, need: Access) -> SysResult<Arc<OwnedFd>> {
        match self.held_fd(inode, need) {
            Some(fd) => Ok(fd),
            None => self.open_host(sb, inode, need.open_flags()).map(Arc::new),
        }
    }

    /// Opens the host file of `inode` for `access`, by its host path, and
    /// checks that it is still the file vfscale knows as `inode` (a host
    /// rename may have put another in its place), refreshing the cached
    /// attributes from it.
    fn open_data(&self, inode: &Inode, path: &[u8], access: Access) -> Option<OwnedFd> {
        let fd = self.host.open_beneath(path, access.open_flags()).ok()?;
        let st = self.host.fstat(fd.as_raw_fd()).ok()?;
        if !self.is_same_file(inode, &st) {
            return None;
        }
        copy_attrs(inode, &st);
        Some(fd)
    }

    /// An O_APPEND write: on the held host file when it allows writes (as
    /// RWF_APPEND), else on the file opened O_APPEND by its host path.
    fn append(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        buf: &[u8],
    ) -> SysResult<(Arc<OwnedFd>, usize)> {
        if let Some(fd) = self.held_fd(inode, Access::WRITE) {
            match host::pwrite_append(fd.as_raw_fd(), buf) {
                // A kernel before 4.16 (no RWF_APPEND).
                Err(Errno::EOPNOTSUPP | Errno::EINVAL) => {}
                r => return r.map(|n| (fd, n)),
            }
        }
        let fd = self.open_host(sb, inode, libc::O_WRONLY | libc::O_APPEND)?;
        let n = host::write(fd.as_raw_fd(), buf)?;
        Ok((Arc::new(fd), n))
    }

    /// The directory `name` of the host directory open as `dir`, opened
    /// to be held (`hold_removed_dir`) once vfscale removed it.
    fn open_for_hold(&self, dir: &OwnedFd, name: &[u8]) -> Option<OwnedFd> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        host::openat_at(dir.as_raw_fd(), name, flags).ok()
    }

    /// Keeps `hold` (the host directory `dir` opened just before vfscale
    /// removed it) for the orphan's attribute, xattr and sync calls, as
    /// the held file of an open description (`DataFd`, with no opens:
    /// `evict` closes it). Not if it is another directory than `dir`'s (a
    /// host rename in between).
    fn hold_removed_dir(&self, dir: &Inode, hold: OwnedFd) {
        let same = self
            .host
            .fstat(hold.as_raw_fd())
            .is_ok_and(|st| self.is_same_file(dir, &st));
        if !same {
            return;
        }
        if let Some(mut node) = self.locked(dir) {
            if node.data.is_none() {
                node.data = Some(DataFd {
                    fd: Arc::new(hold),
                    access: Access::READ,
                    opens: 0,
                });
                self.stats.data_fds_add(1);
            }
        }
    }

    /// The host directory `dir` as an O_PATH fd (opened beneath the root
    /// by its path), checked to be `dir`'s own (`is_same_file`): a
    /// directory the host removed, or moved away and put another in its
    /// place, is ENOENT, as a change in a removed directory is on a local
    /// filesystem — not a change in whatever the host has at its path now
    /// (a cwd or a descriptor kept in it reaches it without a walk that
    /// would revalidate it), even under the old one's recycled number
    /// where the host keeps birth times. The root is the instance's own
    /// held directory (its inode keeps the core's number).
    fn dir_fd(&self, dir: &Inode) -> SysResult<std::os::fd::OwnedFd> {
        let path = self.path_of(dir)?;
        let fd = self
            .host
            .open_beneath(&path, libc::O_PATH | libc::O_DIRECTORY)?;
        if !path.is_empty() && !self.is_same_file(dir, &self.host.fstat(fd.as_raw_fd())?) {
            return Err(Errno::ENOENT);
        }
        Ok(fd)
    }

    /// The parent directory fd and last component of `inode`'s path (None
    /// for the root), for a call on the inode by its name: the name is
    /// checked to be the inode's (`is_same_file`), else ENOENT, as
    /// `dir_fd` checks a directory — a chmod, an xattr or a link of a
    /// cached inode the host has replaced meanwhile must not reach the
    /// replacement.
    fn parent_and_name(&self, inode: &Inode) -> SysResult<Option<(std::os::fd::OwnedFd, Vec<u8>)>> {
        let path = self.path_of(inode)?;
        if path.is_empty() {
            return Ok(None);
        }
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&b""[..], &path[..]),
        };
        let fd = self
            .host
            .open_beneath(dir, libc::O_PATH | libc::O_DIRECTORY)?;
        if !self.is_same_file(inode, &self.host.stat_at(fd.as_raw_fd(), name)?) {
            return Err(Errno::ENOENT);
        }
        Ok(Some((fd, name.to_vec())))
    }

    /// Gives a just-created `name` in `dirfd` the owner `uid`/`gid` and,
    /// unless it is a symlink (`perm` None), exactly the permission bits
    /// `perm`: the host applied this process's umask when it made the file
    /// (the core had applied the caller's already), and the chown cleared
    /// set-user-ID and set-group-ID. Best effort, as a create that made the
    /// file must not fail after it (a non-root vfscale process cannot give
    /// files away). Neither call follows a symlink swapped in meanwhile.
    fn settle_new(
        &self,
        dirfd: &std::os::fd::OwnedFd,
        name: &std::ffi::CString,
        uid: u32,
        gid: u32,
        perm: Option<u32>,
    ) {
        // SAFETY: fchownat on our own fd and a NUL-terminated name.
        let _ = unsafe {
            libc::fchownat(
                dirfd.as_raw_fd(),
                name.as_ptr(),
                uid,
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if let Some(perm) = perm {
            let _ = chmod_nofollow(dirfd, name, perm, libc::AT_SYMLINK_NOFOLLOW);
        }
    }
}

/// Gives the host file open as `file` (an O_TMPFILE file, or one whose
/// vfscale name went while it has others) the name `name` in the
/// directory open as `dirfd`: linkat with AT_EMPTY_PATH (which the host
/// allows with CAP_DAC_READ_SEARCH, or since Linux 6.10 for a file opened
/// under the caller's current credentials), else through its
/// /proc/self/fd link (a magic link that leads only to the file itself).
/// The host refuses a file made with O_EXCL, or one left with no links
/// (ENOENT), as vfs_link does.
fn link_unnamed(file: &OwnedFd, dirfd: &OwnedFd, name: &std::ffi::CString) -> SysResult<()> {
    // SAFETY: our own fds, NUL-terminated strings.
    let r = unsafe {
        libc::linkat(
            file.as_raw_fd(),
            c"".as_ptr(),
            dirfd.as_raw_fd(),
            name.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    match check(r as libc::c_long) {
        Err(Errno::ENOENT | Errno::EPERM) => {}
        done => return done.map(drop),
    }
    let proc_path = host::proc_fd(file.as_raw_fd());
    // SAFETY: as above; AT_SYMLINK_FOLLOW follows the magic link to the
    // file itself.
    check(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_path.as_ptr(),
            dirfd.as_raw_fd(),
            name.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    } as libc::c_long)
    .map(drop)
}

/// fchmodat2 (Linux 6.6+), which with AT_SYMLINK_NOFOLLOW refuses to
/// follow a final symlink (EOPNOTSUPP) where fchmodat would follow it.
fn chmod_nofollow(
    dirfd: &std::os::fd::OwnedFd,
    name: &std::ffi::CString,
    mode: u32,
    flags: libc::c_int,
) -> SysResult<()> {
    // SAFETY: our own fd and a NUL-terminated name.
    check(unsafe {
        libc::syscall(
            libc::SYS_fchmodat2,
            dirfd.as_raw_fd(),
            name.as_ptr(),
            mode & 0o7777,
            flags,
        )
    })
    .map(drop)
}

/// Copies the host's attributes into `inode` (type bits never change).
/// The instance's block count follows the cached sizes exactly, so the
/// core's `iput`, which releases an inode's blocks, leaves it balanced
/// (host sizes are not limited by the instance: no ENOSPC here).
fn copy_attrs(inode: &Inode, st: &libc::stat) {
    let ts = |sec: i64, nsec: i64| Timespec { sec, nsec };
    let old_blocks = inode.update_attr(|w| {
        let old = w.get().blocks;
        w.set_mode(st.st_mode);
        w.set_uid(st.st_uid);
        w.set_gid(st.st_gid);
        w.set_nlink(st.st_nlink as u32);
        w.set_size(st.st_size as u64, st.st_blocks as u64);
        w.set_atime(ts(st.st_atime, st.st_atime_nsec));
        w.set_mtime(ts(st.st_mtime, st.st_mtime_nsec));
        w.set_ctime(ts(st.st_ctime, st.st_ctime_nsec));
        old
    });
    // Pages as `SuperBlock::charge_blocks` counts them.
    let delta = (st.st_blocks as u64 / 8) as i64 - (old_blocks / 8) as i64;
    // SAFETY: an inode's superblock outlives it.
    unsafe { &*inode.sb }.used_blocks.add(delta);
}

impl Filesystem for Passthrough {
    fn fs_type(&self) -> &'static str {
        "passthrough"
    }

    fn dcache_is_authoritative(&self) -> bool {
        false
    }

    fn lookup(&self, sb: &SuperBlock, dir: &Inode, name: &[u8]) -> SysResult<Option<FoundInode>> {
        // One monotonic reading serves the fd's TTL check and as the time
        // before the stat (an earlier "before" only makes the stamp's
        // `stamp_at` more conservative): a miss reads two clocks, not four.
        let start = observe_start();
        let (at, rel) = self.dir_at_time(dir, Some(name), start.0)?;
        match self.host.stat_at(self.raw(&at), name) {
            Ok(st) => self.make_inode(sb, (&at, name), rel, &st, start).map(Some),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn init_root(&self, _sb: &SuperBlock, root: &Inode) {
        let mut ds = Box::new(DirState::new());
        let start = observe_start();
        let mut birth = 0;
        if let Ok(st) = self.host.lstat(b"") {
            copy_attrs(root, &st);
            ds.observe(&st, observed(start));
            birth = st.birth;
        }
        self.register(root, Node::named(Box::default(), Some(ds), (0, 0), birth));
    }

    fn backend_served(&self) -> bool {
        true
    }

    fn revalidate_ttl(&self) -> Option<Duration> {
        Some(self.config.ttl)
    }

    fn revalidate(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        cached: Option<&Inode>,
    ) -> SysResult<bool> {
        let at = match self.dir_at(dir, None) {
            Ok((at, _)) => at,
            // The directory is gone from its path, or the path now leads
            // through something else (a file: ENOTDIR; a symlink: ELOOP
            // from the component walk, EXDEV from openat2 when it leads
            // out): so is the name. An error here would fail every walk
            // through the entry, a mount on it or beneath included, which
            // revalidation keeps reachable (`unmounted_hold`).
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::EXDEV) => {
                return Ok(cached.is_none())
            }
            Err(e) => return Err(e),
        };
        let start = observe_start();
        match self.host.stat_at(self.raw(&at), name) {
            Err(Errno::ENOENT) => Ok(cached.is_none()),
            Err(e) => Err(e),
            Ok(st) => {
                let when = observed(start);
                let Some(i) = cached else {
                    return Ok(false);
                };
                if !self.is_same_file(i, &st) || i.file_type() != st.st_mode & libc::S_IFMT {
                    return Ok(false);
                }
                if i.file_type() == S_IFLNK {
                    // The link text is fixed in the inode: a changed one
                    // needs a new inode.
                    if self.host.readlink_at(self.raw(&at), name)?
                        != i.symlink_target().unwrap_or(&[])
                    {
                        return Ok(false);
                    }
                }
                copy_attrs(i, &st);
                if i.is_dir() {
                    self.observe(i, &st, when);
                }
                Ok(true)
            }
        }
    }

    fn dir_vouches(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        answered_at: u64,
    ) -> SysResult<Option<u64>> {
        if !self.config.dir_stamps {
            return Ok(None);
        }
        let now = mono_ns();
        {
            let Some(node) = self.locked(dir) else {
                return Ok(None);
            };
            let Some(ds) = node.dir.as_deref() else {
                return Ok(None);
            };
            if !ds.vouches_for(answered_at) {
                // A fresh observation cannot help: it could only move
                // `stable_since` later.
                return Ok(None);
            }
            if now.saturating_sub(ds.stamp_at) < self.ttl_ns {
                return Ok(Some(ds.stamp_at));
            }
        }
        // Observe the directory now, through its trusted fd (if it cannot
        // be opened, the name's own revalidation says what that means).
        let Ok((at, _)) = self.dir_at(dir, None) else {
            return Ok(None);
        };
        let start = observe_start();
        let st = self.host.fstat(self.raw(&at))?;
        let when = observed(start);
        self.observe(dir, &st, when);
        let Some(node) = self.locked(dir) else {
            return Ok(None);
        };
        Ok(node
            .dir
            .as_deref()
            .filter(|ds| ds.stamp_at == when.before && ds.vouches_for(answered_at))
            .map(|ds| ds.stamp_at))
    }

    fn names_moved(&self, _sb: &SuperBlock, moves: &[NameMove<'_>]) {
        // Every old and new path first: the moves happened at once.
        let path_in = |(dir, name): (&Inode, &[u8])| {
            self.path_of(dir).and_then(|d| host::join(&d, name)).ok()
        };
        let plan: Vec<PlannedMove> = moves
            .iter()
            .filter_map(|&(inode, from, to)| {
                Some(PlannedMove {
                    inode,
                    old: path_in(from)?,
                    new: to.and_then(path_in),
                    is_dir: inode.is_dir(),
                })
            })
            .collect();
        for &(inode, _, to) in moves {
            if to.is_none() {
                // The host dropped a link (a directory: its last): what an
                // open descriptor's fstat shows, as Linux's drop_nlink.
                inode.update_attr(|w| {
                    let n = w.get().nlink;
                    w.set_nlink(if inode.is_dir() {
                        0
                    } else {
                        n.saturating_sub(1)
                    });
                });
            }
        }
        if plan.iter().any(|m| m.is_dir) {
            // Relaxed: see `dir_at` (cached directory fds re-open).
            self.rename_epoch.fetch_add(1, Ordering::Relaxed);
        }
        if !plan.iter().any(|m| m.is_dir && m.new.is_some()) {
            // Files, and removed (empty) directories: their own nodes only.
            for m in &plan {
                if let Some(mut node) = self.locked(m.inode) {
                    node.move_path(&m.old, m.new.as_deref());
                }
            }
            return;
        }
        // A directory moved: its cached descendants' paths move with it
        // (a scan of the live nodes, for directory renames only). Each path
        // follows the first move it was under (an exchange's two moves
        // must not both apply).
        let under = |p: &[u8], dir: &[u8]| {
            p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/'
        };
        for shard in self.registry.iter() {
            for cell in shard.lock().live.iter().flatten() {
                let mut node = cell.lock();
                let here = Arc::as_ptr(cell).cast::<()>();
                // Its names under a moved directory first (a file moved by
                // an exchange with a directory may have another name
                // inside it), then its own move: no name is both.
                for p in node.paths_mut() {
                    let moved = plan.iter().find(|m| m.is_dir && under(p, &m.old));
                    if let Some(PlannedMove {
                        old, new: Some(n), ..
                    }) = moved
                    {
                        *p = [&n[..], &p[old.len()..]].concat().into();
                    }
                }
                if let Some(m) = plan.iter().find(|m| m.inode.private() == here) {
                    node.move_path(&m.old, m.new.as_deref());
                }
            }
        }
    }

    fn evict(&self, inode: &Inode) {
        // What the node holds (fds, a listing) and the node itself are
        // dropped after every lock is released. The fd ring may keep the
        // node allocated a while: without its directory state, its entry
        // is skipped.
        let addr = addr_of(inode);
        let Some(cell) = self.node(inode) else {
            return;
        };
        inode.clear_private();
        let (slot, mapped, id, dir, data) = {
            let mut node = cell.lock();
            // A call that found the node before it was cleared: its path
            // calls are ESTALE, as a removed name's.
            node.gone = true;
            (
                node.slot,
                node.mapped,
                node.host_id,
                node.dir.take(),
                node.data.take(),
            )
        };
        // The identity map's entry goes first: `share` reaches the node
        // through it, under its shard's lock.
        if mapped {
            let mut ids = self.id_shard(id).lock();
            if ids.get(&id) == Some(&addr) {
                ids.remove(&id);
            }
        }
        let owned = {
            let mut reg = self.registry_shard(inode).lock();
            reg.free.push(slot);
            reg.live[slot as usize].take()
        };
        debug_assert!(owned
            .as_ref()
            .is_some_and(|c| std::ptr::eq(Arc::as_ptr(c), cell)));
        if data.is_some() {
            // Not reached while the core keeps its rule (every held file
            // is released before its inode goes); counted if it ever is.
            self.stats.data_fds_add(-1);
        }
        if dir.is_some_and(|d| d.fd.is_some()) {
            self.stats.dir_fds_add(-1);
        }
        if let Some(owned) = owned {
            // SAFETY: a fresh box, retired once; the inode no longer leads
            // to the node (cleared above) and the registry no longer holds
            // it, so readers entering from now on cannot reach it (the fd
            // ring's own references keep it allocated longer, not shorter).
            unsafe { self.retired.retire_box(Box::into_raw(Box::new(owned))) };
        }
    }

    /// Holds the host file open for the new description when it can (the
    /// held file allows what the description may do, or one that allows
    /// both it and the holders' needs could be opened); a removed name's
    /// inode can only share a held file.
    fn open(&self, sb: &SuperBlock, inode: &Inode, fmode: u32) -> bool {
        let want = Access::of_fmode(fmode);
        let Some(cell) = self.node(inode) else {
            return false;
        };
        // Another open may come to hold a file that covers neither its
        // needs nor ours while we open: the next round opens one covering
        // both.
        let (mut rounds, mut moved) = (0, 0);
        while rounds < HOLD_ATTEMPTS {
            let sample = sb.renames.sample();
            let (path, access) = {
                let mut guard = cell.lock();
                let node = &mut *guard;
                match node.data.as_mut() {
                    Some(d) if d.access.covers(want) => {
                        d.opens += 1;
                        return true;
                    }
                    _ if node.gone => return false,
                    held => (
                        node.path.clone(),
                        want.union(held.map_or(want, |d| d.access)),
                    ),
                }
            };
            let Some(fd) = self.open_data(inode, &path, access) else {
                // Renamed meanwhile (sync/in_flight.rs): look again at the new path.
                if moved < MOVE_ATTEMPTS && sb.renames.moved_since(sample) {
                    moved += 1;
                    continue;
                }
                return false;
            };
            rounds += 1;
            let fd = Arc::new(fd);
            // Whatever fd loses its place is closed after the node unlocks.
            let (held, dropped) = {
                let mut node = cell.lock();
                match &mut node.data {
                    slot @ None => {
                        *slot = Some(DataFd {
                            fd,
                            access,
                            opens: 1,
                        });
                        self.stats.data_fds_add(1);
                        (Some(true), None)
                    }
                    Some(d) if d.access.covers(want) => {
                        d.opens += 1;
                        (Some(true), Some(fd))
                    }
                    Some(d) if access.covers(d.access) => {
                        d.access = access;
                        d.opens += 1;
                        (Some(true), Some(core::mem::replace(&mut d.fd, fd)))
                    }
                    Some(_) => (None, Some(fd)),
                }
            };
            drop(dropped);
            if let Some(held) = held {
                return held;
            }
        }
        false
    }

    fn release(&self, _sb: &SuperBlock, inode: &Inode) {
        let closed = {
            let Some(mut node) = self.locked(inode) else {
                return;
            };
            match node.data.as_mut() {
                Some(d) if d.opens > 1 => {
                    d.opens -= 1;
                    None
                }
                _ => node.data.take(),
            }
        };
        if closed.is_some() {
            self.stats.data_fds_add(-1);
        }
    }

    fn read(&self, sb: &SuperBlock, inode: &Inode, pos: u64, buf: &mut [u8]) -> SysResult<usize> {
        let fd = self.data_fd(sb, inode, Access::READ)?;
        host::pread(fd.as_raw_fd(), buf, pos)
    }

    fn fallocate(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        mode: i32,
        offset: u64,
        len: u64,
    ) -> SysResult<()> {
        let fd = self.data_fd(sb, inode, Access::WRITE)?;
        // SAFETY: fallocate on our own fd.
        let r = unsafe { libc::fallocate(fd.as_raw_fd(), mode, offset as i64, len as i64) };
        check(r as libc::c_long)?;
        self.refresh(sb, inode)
    }

    fn fsync(&self, sb: &SuperBlock, inode: &Inode, datasync: bool) -> SysResult<()> {
        // A regular file or a directory (the core refuses the others;
        // a directory vfscale removed syncs through its hold); fsync works
        // on a read-only fd.
        let fd = self.data_fd(sb, inode, Access::ANY)?;
        // SAFETY: fsync / fdatasync on our own fd.
        let r = unsafe {
            if datasync {
                libc::fdatasync(fd.as_raw_fd())
            } else {
                libc::fsync(fd.as_raw_fd())
            }
        };
        check(r as libc::c_long)
    }

    fn sync_fs(&self, _sb: &SuperBlock) -> SysResult<()> {
        // syncfs wants an fd it may read through, not an O_PATH one.
        let root = self
            .host
            .open_beneath(b"", libc::O_RDONLY | libc::O_DIRECTORY)?;
        // SAFETY: syncfs on our own fd.
        check(unsafe { libc::syncfs(root.as_raw_fd()) } as libc::c_long)
    }

    /// The host filesystem's figures (its type, blocks and inodes), read
    /// from the root's fd; vfscale's own when the host cannot say.
    fn statfs(&self, _sb: &SuperBlock) -> Option<Statfs> {
        // SAFETY: zeroed statfs is a valid output buffer.
        let mut st: libc::statfs = unsafe { core::mem::zeroed() };
        // SAFETY: fstatfs writes only `st`, on our own fd.
        if unsafe { libc::fstatfs(self.host.root_fd(), &mut st) } < 0 {
            return None;
        }
        // The flags, which libc's statfs does not expose: statvfs's, with
        // ST_VALID as statfs(2) reports. Of these the superblock's count
        // (read-only, synchronous); vfscale's mount replaces the host
        // mount's (`Mount::statfs`): it is what vfscale enforces.
        // SAFETY: zeroed statvfs is a valid output buffer.
        let mut vfs: libc::statvfs = unsafe { core::mem::zeroed() };
        // SAFETY: fstatvfs writes only `vfs`, on our own fd.
        let flags = if unsafe { libc::fstatvfs(self.host.root_fd(), &mut vfs) } == 0 {
            vfs.f_flag as i64 | ST_VALID
        } else {
            ST_VALID
        };
        Some(Statfs {
            f_type: st.f_type,
            f_bsize: st.f_bsize,
            f_blocks: st.f_blocks,
            f_bfree: st.f_bfree,
            f_bavail: st.f_bavail,
            f_files: st.f_files,
            f_ffree: st.f_ffree,
            f_fsid: [0; 2],
            f_namelen: st.f_namelen,
            f_frsize: st.f_frsize,
            f_flags: flags,
        })
    }

    fn seek_data_hole(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        offset: u64,
        hole: bool,
    ) -> SysResult<u64> {
        let fd = self.data_fd(sb, inode, Access::ANY)?;
        let whence = if hole {
            libc::SEEK_HOLE
        } else {
            libc::SEEK_DATA
        };
        // SAFETY: lseek on our own fd.
        let r = unsafe { libc::lseek(fd.as_raw_fd(), offset as i64, whence) };
        check(r as libc::c_long)?;
        Ok(r as u64)
    }

    fn write(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        pos: Option<u64>,
        buf: &[u8],
    ) -> SysResult<usize> {
        let (fd, n) = match pos {
            Some(p) => {
                let fd = self.data_fd(sb, inode, Access::WRITE)?;
                let n = host::pwrite(fd.as_raw_fd(), buf, p)?;
                (fd, n)
            }
            None => self.append(sb, inode, buf)?,
        };
        if let Ok(st) = self.host.fstat(fd.as_raw_fd()) {
            copy_attrs(inode, &st);
        }
        Ok(n)
    }

    fn copy_range(
        &self,
        sb: &SuperBlock,
        (from, from_pos): (&Inode, u64),
        (to, to_pos): (&Inode, u64),
        len: usize,
    ) -> SysResult<Option<usize>> {
        let src = self.data_fd(sb, from, Access::READ)?;
        let dst = self.data_fd(sb, to, Access::WRITE)?;
        let (mut pi, mut po) = (from_pos as i64, to_pos as i64);
        // SAFETY: our own fds; the offsets are ours to advance.
        let r = unsafe {
            libc::copy_file_range(src.as_raw_fd(), &mut pi, dst.as_raw_fd(), &mut po, len, 0)
        };
        if let Err(e) = check(r as libc::c_long) {
            // The host has no copy of its own between these files (two
            // host filesystems, a kernel or filesystem without one).
            return match e {
                Errno::EXDEV | Errno::EOPNOTSUPP | Errno::ENOSYS | Errno::EINVAL => Ok(None),
                e => Err(e),
            };
        }
        self.stats.count_copy();
        if let Ok(st) = self.host.fstat(dst.as_raw_fd()) {
            copy_attrs(to, &st);
        }
        Ok(Some(r as usize))
    }

    fn encode_handle(&self, sb: &SuperBlock, inode: &Inode, out: &mut Vec<u8>) -> SysResult<()> {
        self.encode_handle_of(sb, inode, out)
    }

    fn handle_names(&self, sb: &SuperBlock, inode: &Inode, handle: &[u8]) -> bool {
        self.handle_names_inode(sb, inode, handle)
    }

    fn locate_handle(&self, _sb: &SuperBlock, handle: &[u8]) -> SysResult<Vec<Box<[u8]>>> {
        self.locate(handle)
    }

    fn truncate(&self, sb: &SuperBlock, inode: &Inode, len: u64) -> SysResult<()> {
        let fd = self.data_fd(sb, inode, Access::WRITE)?;
        // SAFETY: ftruncate on our own fd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as i64) } < 0 {
            return Err(Errno(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO),
            ));
        }
        if let Ok(st) = self.host.fstat(fd.as_raw_fd()) {
            copy_attrs(inode, &st);
        }
        Ok(())
    }

    fn create(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        mode: u32,
        rdev: u64,
        uid: u32,
        gid: u32,
    ) -> SysResult<()> {
        let fd = self.dir_fd(dir)?;
        let c = cstr(name)?;
        let perm = mode & 0o7777;
        // SAFETY (both): *at calls on our own fd with a NUL-terminated single
        // component; neither follows a final symlink.
        let made = if mode & S_IFMT == S_IFDIR {
            check(unsafe { libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), perm) } as libc::c_long)
        } else {
            check(unsafe { libc::mknodat(fd.as_raw_fd(), c.as_ptr(), mode, rdev) } as libc::c_long)
        };
        self.names_changed(dir);
        made?;
        self.settle_new(&fd, &c, uid, gid, Some(perm));
        Ok(())
    }

    fn symlink(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        target: &[u8],
        uid: u32,
        gid: u32,
    ) -> SysResult<()> {
        let fd = self.dir_fd(dir)?;
        let c = cstr(name)?;
        let t = std::ffi::CString::new(target).map_err(|_| Errno::EINVAL)?;
        // SAFETY: NUL-terminated strings, our own fd. The link text is only
        // ever read back as text: the host never follows it for us.
        let made = check(
            unsafe { libc::symlinkat(t.as_ptr(), fd.as_raw_fd(), c.as_ptr()) } as libc::c_long,
        );
        self.names_changed(dir);
        made?;
        self.settle_new(&fd, &c, uid, gid, None);
        Ok(())
    }

    fn tmpfile(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> SysResult<*const Inode> {
        let dirfd = self.dir_fd(dir)?;
        let perm = mode & 0o7777;
        // SAFETY: our own directory fd and a NUL-terminated "."; the file
        // made has no name, so nothing can be swapped in for it.
        let r = unsafe {
            libc::openat(
                dirfd.as_raw_fd(),
                c".".as_ptr(),
                libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
                perm,
            )
        };
        check(r as libc::c_long)?;
        // SAFETY: a fresh fd that only we own.
        let file = unsafe { OwnedFd::from_raw_fd(r) };
        // As `settle_new` (best effort): the caller's owner, and exactly
        // the bits the core computed (the host applied our umask and the
        // chown clears set-user-ID and set-group-ID).
        // SAFETY (both): calls on our own fd.
        let _ = unsafe { libc::fchown(file.as_raw_fd(), uid, gid) };
        let _ = unsafe { libc::fchmod(file.as_raw_fd(), perm) };
        let st = self.host.fstat(file.as_raw_fd())?;
        let inode = self.adopt(
            sb,
            &st,
            InodeBody::Regular(RwLock::new(Default::default())),
            Node {
                // No name on the host (yet): path calls are ESTALE, data
                // calls go to the held file.
                path: Box::default(),
                others: Vec::new(),
                host_id: (st.st_dev, st.st_ino),
                birth: st.birth,
                mapped: true,
                gone: true,
                dir: None,
                data: Some(DataFd {
                    fd: Arc::new(file),
                    access: Access::READ.union(Access::WRITE),
                    opens: 0,
                }),
                slot: 0,
            },
        )?;
        // Its name, once linked, finds it (the held file keeps the number).
        self.id_shard((st.st_dev, st.st_ino))
            .lock()
            .insert((st.st_dev, st.st_ino), inode as usize);
        // Counted once kept (a refused reservation closed it).
        self.stats.data_fds_add(1);
        Ok(inode)
    }

    fn keep_identity(&self, inode: &Inode) {
        // Directories are not in the map (one name each: their cached
        // entry keeps their inode, and a watch holds that entry:
        // notify/mod.rs).
        self.map_identity(inode);
    }

    fn link(&self, _sb: &SuperBlock, inode: &Inode, dir: &Inode, name: &[u8]) -> SysResult<()> {
        let fd = self.dir_fd(dir)?;
        let c = cstr(name)?;
        let linked = match self.parent_and_name(inode) {
            // No host path: an O_TMPFILE file (the core lets no other
            // file without links have one), or a file whose vfscale name
            // went while the host has others, named through its held file.
            Err(Errno::ESTALE) => match self.held_fd(inode, Access::ANY) {
                Some(held) => link_unnamed(&held, &fd, &c).inspect(|()| {
                    let path = self.path_of(dir).and_then(|d| host::join(&d, name));
                    if let (Some(mut node), Ok(path)) = (self.locked(inode), path) {
                        node.learn_path(&path);
                    }
                }),
                None => Err(Errno::ESTALE),
            },
            source => {
                let (src_dir, src_name) = source?.ok_or(Errno::EPERM)?;
                let src = cstr(&src_name)?;
                // SAFETY: single components on our own fds; flags 0 does
                // not follow a symlink at the source.
                check(unsafe {
                    libc::linkat(
                        src_dir.as_raw_fd(),
                        src.as_ptr(),
                        fd.as_raw_fd(),
                        c.as_ptr(),
                        0,
                    )
                } as libc::c_long)
                .map(drop)
            }
        };
        self.names_changed(dir);
        if linked.is_ok() {
            // The new name's lookup finds this inode, and the node knows
            // the name: removing the old one through vfscale leaves the
            // file named (an inotify watch on it stays with it).
            self.map_identity(inode);
            let path = self.path_of(dir).and_then(|d| host::join(&d, name));
            if let (Some(mut node), Ok(path)) = (self.locked(inode), path) {
                node.learn_path(&path);
            }
        }
        linked
    }

    fn unlink(&self, _sb: &SuperBlock, dir: &Inode, name: &[u8], victim: &Inode) -> SysResult<()> {
        let fd = self.dir_fd(dir)?;
        let c = cstr(name)?;
        let rmdir = victim.is_dir();
        // A directory is held from before its removal: a descriptor or
        // cwd that keeps it reaches the orphan's attributes through the
        // hold, as Linux's do (a file is held by its open descriptions).
        let hold = rmdir.then(|| self.open_for_hold(&fd, name)).flatten();
        let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: a single component on our own fd.
        let removed =
            check(unsafe { libc::unlinkat(fd.as_raw_fd(), c.as_ptr(), flags) } as libc::c_long);
        self.names_changed(dir);
        removed?;
        if let Some(hold) = hold {
            self.hold_removed_dir(victim, hold);
        }
        Ok(())
    }

    fn rename(
        &self,
        _sb: &SuperBlock,
        old_dir: &Inode,
        old_name: &[u8],
        new_dir: &Inode,
        new_name: &[u8],
        victim: Option<&Inode>,
        flags: u32,
        whiteout_owner: (u32, u32),
    ) -> SysResult<()> {
        let ofd = self.dir_fd(old_dir)?;
        let nfd = self.dir_fd(new_dir)?;
        let (o, n) = (cstr(old_name)?, cstr(new_name)?);
        // A directory the rename replaces is held as `unlink` holds one.
        let replaced_dir = victim.filter(|v| v.is_dir() && flags & RENAME_EXCHANGE == 0);
        let hold = replaced_dir.and_then(|_| self.open_for_hold(&nfd, new_name));
        // SAFETY: single components on our own fds; renameat2 never follows
        // symlinks.
        let renamed = check(unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                ofd.as_raw_fd(),
                o.as_ptr(),
                nfd.as_raw_fd(),
                n.as_ptr(),
                flags,
            )
        });
        self.names_changed(old_dir);
        self.names_changed(new_dir);
        renamed?;
        if let (Some(dir), Some(hold)) = (replaced_dir, hold) {
            self.hold_removed_dir(dir, hold);
        }
        if flags & RENAME_WHITEOUT != 0 {
            // The host made the whiteout as this process; it is the caller's.
            self.settle_new(&ofd, &o, whiteout_owner.0, whiteout_owner.1, None);
        }
        Ok(())
    }

    fn setattr(&self, _sb: &SuperBlock, inode: &Inode, change: &AttrChange) -> SysResult<()> {
        let held = self.held_fd(inode, Access::ANY);
        let (fd, name) = match &held {
            // The held file: itself, by an empty path.
            Some(fd) => (fd.clone(), std::ffi::CString::default()),
            None => match self.parent_and_name(inode)? {
                Some((fd, name)) => (Arc::new(fd), cstr(&name)?),
                // The root: its own fd and an empty path.
                None => (Arc::new(self.dir_fd(inode)?), std::ffi::CString::default()),
            },
        };
        let empty = if name.as_bytes().is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
        let nofollow = libc::AT_SYMLINK_NOFOLLOW | empty;
        if change.uid.is_some() || change.gid.is_some() {
            let uid = change.uid.unwrap_or(u32::MAX);
            let gid = change.gid.unwrap_or(u32::MAX);
            // SAFETY: as above.
            check(
                unsafe { libc::fchownat(fd.as_raw_fd(), name.as_ptr(), uid, gid, nofollow) }
                    as libc::c_long,
            )?;
        }
        if let Some(mode) = change.mode {
            chmod_nofollow(&fd, &name, mode, nofollow)?;
        }
        if let Some([a, m]) = change.times {
            let ts = [
                libc::timespec {
                    tv_sec: a.sec,
                    tv_nsec: a.nsec,
                },
                libc::timespec {
                    tv_sec: m.sec,
                    tv_nsec: m.nsec,
                },
            ];
            if empty != 0 {
                // futimens wants an fd that is not O_PATH: the held file,
                // or the root opened again.
                let reopened = match held {
                    Some(_) => None,
                    None => Some(
                        self.host
                            .open_beneath(b"", libc::O_RDONLY | libc::O_DIRECTORY)?,
                    ),
                };
                let target = reopened.as_ref().map_or(fd.as_raw_fd(), |d| d.as_raw_fd());
                // SAFETY: futimens on our own fd with two timespecs.
                check(unsafe { libc::futimens(target, ts.as_ptr()) } as libc::c_long)?;
            } else {
                // SAFETY: our own fd, a NUL-terminated name, two timespecs.
                check(unsafe {
                    libc::utimensat(
                        fd.as_raw_fd(),
                        name.as_ptr(),
                        ts.as_ptr(),
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                } as libc::c_long)?;
            }
        }
        self.refresh(_sb, inode)
    }

    fn xattr(&self, sb: &SuperBlock, inode: &Inode, call: XattrCall<'_>) -> SysResult<usize> {
        let change = matches!(call, XattrCall::Set(..) | XattrCall::Remove(_));
        // By an empty path the fd must not be O_PATH (getxattrat and its
        // kin then take it as fgetxattr does): the held file, or the root
        // opened for it.
        let (fd, name) = match self.held_fd(inode, Access::ANY) {
            Some(fd) => (fd, Vec::new()),
            None => match self.parent_and_name(inode)? {
                Some((fd, name)) => (Arc::new(fd), name),
                None => (
                    Arc::new(
                        self.host
                            .open_beneath(b"", libc::O_RDONLY | libc::O_DIRECTORY)?,
                    ),
                    Vec::new(),
                ),
            },
        };
        let n = self.host.xattr_at(fd.as_raw_fd(), &name, call)?;
        if change {
            // The host set the file's ctime.
            self.refresh(sb, inode)?;
        }
        Ok(n)
    }

    fn refresh(&self, _sb: &SuperBlock, inode: &Inode) -> SysResult<()> {
        if let Some(fd) = self.held_fd(inode, Access::ANY) {
            copy_attrs(inode, &*self.host.fstat(fd.as_raw_fd())?);
            return Ok(());
        }
        let path = self.path_of(inode)?;
        let start = observe_start();
        let st = self.host.lstat(&path)?;
        // The root keeps the core's number; another object at the path is
        // not this one's to describe (the caller keeps what it has).
        if !path.is_empty() && !self.is_same_file(inode, &st) {
            return Err(Errno::ENOENT);
        }
        copy_attrs(inode, &st);
        if inode.is_dir() {
            self.observe(inode, &st, observed(start));
        }
        Ok(())
    }

    fn readdir(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        from: u64,
        emit: &mut dyn FnMut(&DirEntryRef<'_>) -> bool,
    ) -> SysResult<(u64, bool)> {
        // Positions: FIRST (2) is the host's offset 0; an entry's next
        // position is its host d_off + 2 (the host's end marker saturates
        // to the end), from the cache and from the host alike.
        if from >= i64::MAX as u64 {
            return Ok((from, false));
        }
        let mut pos = from;
        let mut host_fd = None;
        let listing = match self.cached_listing(dir)? {
            Some(l) => Some(l),
            None if from == FIRST => {
                let (l, fd) = self.read_listing(dir)?;
                host_fd = Some(fd);
                l
            }
            None => None,
        };
        if let Some(l) = listing {
            if let Some(i) = l.index_of(pos) {
                let (next, refused) = l.emit_from(i, emit);
                if refused || l.complete {
                    return Ok((next, refused));
                }
                // A partial read: the host goes on from its end.
                pos = next;
            }
        }
        let fd = match host_fd {
            Some(fd) => fd,
            None => self
                .host
                .open_beneath(&self.path_of(dir)?, libc::O_RDONLY | libc::O_DIRECTORY)?,
        };
        let mut refused = false;
        self.host
            .list_dir(fd.as_raw_fd(), (pos - FIRST) as i64, |e| {
                let d = self.host_entry(e);
                if !emit(&d) {
                    refused = true;
                    return false;
                }
                pos = d.next;
                true
            })?;
        Ok((pos, refused))
    }
}

impl Passthrough {
    /// A host entry as vfscale lists it.
    fn host_entry<'a>(&self, e: &host::HostDirent<'a>) -> DirEntryRef<'a> {
        // Entries report the root device's numbering (a mount point inside
        // the host tree lists its covered inode, as getdents).
        // Relaxed: set once at construction.
        let dev = self.root_dev.load(Ordering::Relaxed);
        DirEntryRef {
            name: e.name,
            ino: self.ino_of_dev(dev, e.ino),
            dtype: e.dtype,
            next: (e.off as u64).saturating_add(FIRST).min(i64::MAX as u64),
        }
    }

    /// `dir`'s cached listing if it is valid: read or vouched for within
    /// the TTL, or, past it, vouched for now by one observation of the
    /// directory (its stamp unchanged and settled before the listing was
    /// read: dirs.rs). A listing that fails the check is dropped; so is
    /// one whose directory cannot be observed (the error is returned).
    fn cached_listing(&self, dir: &Inode) -> SysResult<Option<Arc<Listing>>> {
        // A dropped listing is freed here, after the shard lock is released.
        let mut stale = None;
        let now = mono_ns();
        // Some(answer): decided without the host; None: expired.
        let within_ttl = self.with_dir_state(dir, |ds| match &ds.listing {
            None => Some(None),
            Some(l) if now.saturating_sub(ds.listing_checked_at) < self.ttl_ns => {
                Some(Some(l.clone()))
            }
            Some(_) if !self.config.dir_stamps => {
                stale = ds.listing.take();
                Some(None)
            }
            Some(_) => None,
        });
        match within_ttl {
            Some(Some(answer)) => return Ok(answer),
            // Not a live node.
            None => return Ok(None),
            Some(None) => {}
        }
        let seen = self.dir_at(dir, None).and_then(|(at, _)| {
            let start = observe_start();
            let st = self.host.fstat(self.raw(&at))?;
            Ok((st, observed(start)))
        });
        let vouched = self.with_dir_state(dir, |ds| {
            if let Ok((st, when)) = &seen {
                ds.observe(st, *when);
                if let Some(l) = &ds.listing {
                    if l.stamp == ds.stamp && ds.vouches_for(l.listed_at) {
                        ds.listing_checked_at = ds.stamp_at;
                        return Some(l.clone());
                    }
                }
            }
            stale = ds.listing.take();
            None
        });
        seen.map(|_| vouched.flatten())
    }

    /// Reads `dir` from the host from its start (open, fstat for the stamp,
    /// getdents64 to the end or the per-listing bound) and keeps the
    /// listing if it is complete, fits the budget and no vfscale change of
    /// the directory's names raced with the read. Returns the listing read
    /// (None: caching is off, or the directory is still at the stamp of an
    /// unkept read) and the host fd (to go on from, past a partial one).
    fn read_listing(&self, dir: &Inode) -> SysResult<(Option<Arc<Listing>>, OwnedFd)> {
        let path = self.path_of(dir)?;
        let generation = self.with_dir_state(dir, |ds| ds.listing_gen);
        let fd = self
            .host
            .open_beneath(&path, libc::O_RDONLY | libc::O_DIRECTORY)?;
        if self.config.listing_max_bytes == 0 {
            return Ok((None, fd));
        }
        let start = observe_start();
        let st = self.host.fstat(fd.as_raw_fd())?;
        let when = observed(start);
        let stamp = Stamp::of(&st);
        let unkept = self.with_dir_state(dir, |ds| {
            ds.observe(&st, when);
            ds.unkept == Some(stamp)
        });
        if unkept == Some(true) {
            return Ok((None, fd));
        }
        // After the observation: what `vouches_for` is asked about.
        let listed_at = when.after;
        let mut b = ListingBuilder::new(self.config.listing_max_bytes);
        let complete = self
            .host
            .list_dir(fd.as_raw_fd(), 0, |e| b.push(&self.host_entry(e)))?;
        let listing = b.finish(complete, stamp, listed_at);
        let listing = match listing.keep(&self.stats, self.config.listings_budget) {
            Ok(kept) => {
                let replaced = self.with_dir_state(dir, |ds| {
                    if Some(ds.listing_gen) != generation {
                        return None;
                    }
                    ds.unkept = None;
                    ds.listing_checked_at = when.before;
                    ds.listing.replace(kept.clone())
                });
                drop(replaced);
                kept
            }
            Err(unkept) => {
                self.with_dir_state(dir, |ds| ds.unkept = Some(stamp));
                unkept
            }
        };
        Ok((Some(listing), fd))
    }

    /// Runs `f` on `dir`'s directory state (made if missing) under its
    /// shard's lock; None if `dir` is no longer a live node.
    fn with_dir_state<R>(&self, dir: &Inode, f: impl FnOnce(&mut DirState) -> R) -> Option<R> {
        let mut node = self.locked(dir)?;
        Some(f(node.dir.get_or_insert_with(|| Box::new(DirState::new()))))
    }

    /// Drops `dir`'s cached listing after vfscale changed (or tried to
    /// change: a failure may have changed the host too) its names, and
    /// keeps a listing read before the change from being installed.
    fn names_changed(&self, dir: &Inode) {
        let stale = self.with_dir_state(dir, |ds| {
            ds.listing_gen += 1;
            ds.unkept = None;
            ds.listing.take()
        });
        drop(stale);
    }
}
