//! The VFS instance: the dentry hash, the mount table, the epoch collector,
//! statistics and limits shared by every process of one VFS, in every
//! mount namespace (mount/namespace.rs; elsewhere "namespace" without
//! "mount" means the whole VFS, as in the API's name).
//!
//! Invariants:
//! - Every dentry, inode, mount and superblock reachable by a lock-free walk
//!   is freed only through `collector`, so holding a guard keeps them
//!   readable.
//! - `rename_seq` is written (under `rename_seq_lock`) by every rename that
//!   moves a dentry; walks that went through ".." validate it at their end.
//! - `VfsInner` is dropped only after every `Process` (each holds an `Arc`),
//!   so its `Drop` can tear down the mount tree single-threaded.

use crate::abi::*;
use crate::cred::Cred;
use crate::dcache::dentry::Dentry;
use crate::dcache::hash::ChainTable;
use crate::dcache::name::NameKey;
use crate::dcache::DEFAULT_MAX_UNUSED_DENTRIES;
use crate::dir::index::DirIndex;
use crate::fs::tmpfs::Tmpfs;
use crate::fs::{Filesystem, FsLimits, SuperBlock};
use crate::inode::{Inode, InodeBody};
use crate::mount::MountTable;
use crate::process::Process;
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use crate::sync::counter::{ApproxCounter, ShardedCounter};
use crate::sync::epoch::Collector;
use crate::sync::ino_batch::InoAllocator;
use crate::sync::lock::{Mutex, RwLock};
use crate::sync::seqcount::SeqCount;
use std::sync::Arc;

/// Objects retired per epoch batch (per collector shard, see
/// `sync/epoch.rs`). Each batch costs one heavy barrier
/// (`membarrier`, an IPI to every CPU running this process); measured on
/// lockref-recovery, small batches let a thread that creates and unlinks
/// names interrupt concurrent stat callers thousands of times a second
/// (docs/PERFORMANCE.md). Large batches keep readers undisturbed at the cost
/// of holding that many freed objects a little longer. Where barriers are
/// slow (a VM's IPIs), the collector also paces them by their measured
/// cost, holding up to 16 batches (`sync/epoch.rs`).
pub const RETIRE_BATCH: usize = 4096;

/// The fold batch of the open-file count's bulk updates (the deferred-put
/// drain's, one per batch of up to `defer_max_entries` files): two
/// processes exiting at once write the count's shared line once per 4096
/// files each instead of once per drained batch. Its only approximate
/// reader, the ENFILE check, confirms with the exact sum before failing.
const OPEN_FILES_BULK_BATCH: i64 = 4096;

/// Tunables of a VFS instance.
#[derive(Clone, Debug)]
pub struct VfsConfig {
    /// log2 of the dentry hash table's initial bucket count (16-byte
    /// buckets). The table grows as names are added (×2 past half as many
    /// names as buckets; from 2^18 buckets on ×4 past as many), up to
    /// `hash_max_bits` (`dcache/hash.rs`). Values above 32 count as 32.
    pub hash_bits: u32,
    /// log2 of the most buckets the dentry hash table grows to (default
    /// 2^26, 1 GiB, reached past ~16M names; at most 32; a value not above
    /// `hash_bits` makes a table that never grows).
    pub hash_max_bits: u32,
    /// Unused (negative) dentries kept per superblock before reclaim.
    pub max_unused_dentries: usize,
    /// System-wide open-file limit (ENFILE).
    pub max_files: u64,
    /// Per-process descriptor limit (EMFILE) for new processes.
    pub fd_limit: usize,
    /// Most mounts the namespace holds (Linux's fs.mount-max): a mount,
    /// bind or move that would attach more, counting what propagation
    /// copies, is ENOSPC.
    pub max_mounts: usize,
    /// Limits of each new tmpfs instance.
    pub tmpfs_limits: FsLimits,
    /// Batch final puts (defer/): process exit, close_range, umount,
    /// reclaim and a namespace's drop free what they release in batches
    /// with consolidated locking; off: every final put frees inline.
    pub defer_puts: bool,
    /// With `defer_puts`, also queue the lone final put of every other
    /// operation (close, unlink, ...) until that operation ends (issue 5:
    /// nothing is freed under the caller's locks). On by default: a lone
    /// put goes to an owner-only buffer without a lock (defer/queue.rs),
    /// a few instructions over the inline free (docs/PERFORMANCE.md).
    pub defer_single_puts: bool,
    /// A thread's queue drains as soon as it holds this many objects
    /// (0 is taken as 1, more than 2^24 as 2^24).
    pub defer_max_entries: usize,
    /// ... or this many bytes of memory (objects plus file data of dead
    /// inodes), so an unlinked file's space is released promptly.
    pub defer_max_bytes: usize,
}

impl Default for VfsConfig {
    fn default() -> Self {
        VfsConfig {
            hash_bits: 10,
            hash_max_bits: 26,
            max_unused_dentries: DEFAULT_MAX_UNUSED_DENTRIES,
            max_files: 1 << 24,
            max_mounts: 100_000,
            fd_limit: 1024,
            tmpfs_limits: FsLimits {
                max_bytes: 1 << 40,
                max_inodes: 1 << 32,
            },
            defer_puts: true,
            defer_single_puts: true,
            defer_max_entries: 1024,
            defer_max_bytes: 16 << 20,
        }
    }
}

/// Live object counts (sums of sharded counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    pub dentries: i64,
    pub inodes: i64,
    pub files: i64,
    pub mounts: i64,
    /// Names whose reference count is sharded (dcache/hot.rs).
    pub hot_dentries: i64,
    /// Of those, directories (sharded when name changes in them contend).
    pub hot_dirs: i64,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub dentries: ShardedCounter,
    pub inodes: ShardedCounter,
    pub mounts: ShardedCounter,
    pub hot_dentries: ShardedCounter,
    pub hot_dirs: ShardedCounter,
}

impl Stats {
    /// A hot dentry's count went back to atomic mode (frozen or discarded).
    pub(crate) fn note_cold(&self, d: &Dentry) {
        self.hot_dentries.dec();
        if d.flags() & crate::dcache::dentry::D_TYPE_DIR != 0 {
            self.hot_dirs.dec();
        }
    }
}

pub struct VfsInner {
    pub(crate) collector: Collector,
    pub(crate) dcache: ChainTable<Dentry>,
    pub(crate) rename_seq: SeqCount,
    pub(crate) rename_seq_lock: Mutex<()>,
    pub(crate) mounts: MountTable,
    /// Every process's root, cwd and umask (process/fs_context.rs).
    pub(crate) fs_contexts: crate::process::FsContexts,
    pub(crate) stats: Stats,
    /// Open files: its approximate value is the ENFILE check's first look
    /// (confirmed by the exact sum at the limit), its exact sum
    /// `object_counts().files` (one counter for both, updated once per
    /// file, or once per batch by the deferred-put drain).
    pub(crate) open_files: ApproxCounter,
    pub(crate) config: VfsConfig,
    next_dev: AtomicU64,
    /// The internal anonymous mount (pipes, sockets, eventfds, memfds),
    /// set right after construction.
    pub(crate) anon: std::sync::OnceLock<crate::anon::AnonMount>,
    /// Name-change observers (watch.rs).
    pub(crate) watchers: crate::watch::Watchers,
    /// inotify marks (notify/mod.rs).
    pub(crate) notify: crate::notify::Registry,
    /// AF_UNIX sockets bound to paths (process/sockets.rs).
    pub(crate) bound_sockets: crate::anon::socket::BoundSockets,
    /// Each user's files in flight in AF_UNIX messages (anon/rights.rs).
    pub(crate) unix_inflight: crate::anon::rights::InflightUsers,
    /// Advisory file locks (`filelock/`).
    pub(crate) file_locks: crate::filelock::FileLocks,
    /// Names whose backend lookup is in flight (dcache/in_lookup.rs).
    pub(crate) in_lookup: crate::dcache::in_lookup::InLookupTable,
    /// Per-thread queues of deferred final puts.
    pub(crate) defer: crate::defer::DeferQueues,
    /// Memory groups and shrinkers (`reclaim/`).
    pub(crate) reclaim: crate::reclaim::Reclaim,
}

/// A namespace: the handle embedders keep. Cheap to clone.
#[derive(Clone)]
pub struct Vfs {
    pub(crate) inner: Arc<VfsInner>,
}

impl Default for Vfs {
    fn default() -> Self {
        Self::new()
    }
}

impl Vfs {
    /// A namespace whose root is a fresh tmpfs (mode 0755, owned by root).
    pub fn new() -> Vfs {
        Self::with_config(VfsConfig::default())
    }

    pub fn with_config(config: VfsConfig) -> Vfs {
        Self::with_root_fs(config, Box::new(Tmpfs))
    }

    /// A namespace whose root instance is served by `fs` (tests wrap tmpfs
    /// in `fs::faulty::FaultyFs`; the passthrough backend will use it too).
    pub fn with_root_fs(config: VfsConfig, fs: Box<dyn Filesystem>) -> Vfs {
        let inner = Arc::new(VfsInner {
            collector: Collector::new().batch_size(RETIRE_BATCH),
            dcache: ChainTable::growing(config.hash_bits, config.hash_max_bits),
            rename_seq: SeqCount::new(),
            rename_seq_lock: Mutex::new(()),
            mounts: MountTable::default(),
            fs_contexts: Default::default(),
            stats: Stats::default(),
            open_files: ApproxCounter::with_batches(
                crate::sync::counter::DEFAULT_BATCH,
                OPEN_FILES_BULK_BATCH,
            ),
            config: config.clone(),
            next_dev: AtomicU64::new(1),
            anon: std::sync::OnceLock::new(),
            watchers: Default::default(),
            notify: Default::default(),
            bound_sockets: Default::default(),
            unix_inflight: Default::default(),
            file_locks: Default::default(),
            in_lookup: crate::dcache::in_lookup::InLookupTable::new(),
            defer: crate::defer::DeferQueues::new(
                config.defer_puts,
                config.defer_single_puts,
                config.defer_max_entries,
                config.defer_max_bytes,
            ),
            reclaim: Default::default(),
        });
        inner.defer.set_owner(Arc::downgrade(&inner));
        let sb = inner.new_superblock(fs, S_IFDIR | 0o755, (0, 0));
        let root = sb.root();
        inner.dget(root);
        let source = sb.fs.fs_type().as_bytes();
        let m = inner.new_mount(sb.clone(), root, crate::mount::flags::MNT_DEFAULT, source);
        let ns_id = inner.next_namespace_id();
        // SAFETY: just created; freed only by the VFS's drop.
        inner.set_namespace(unsafe { &*m }, ns_id);
        let _ = inner
            .mounts
            .init_ns
            .set(crate::mount::namespace::MntNamespace::new(ns_id, m));
        inner.lock_mounts().push(m as usize);
        // The root's attachment reference is the base of its sharded count.
        // SAFETY: just created; freed only by the VFS's drop.
        unsafe { &*m }.refcount.make_sharded();
        let anon = inner.init_anon();
        let _ = inner.anon.set(anon);
        Vfs { inner }
    }

    /// A namespace whose root mirrors host directory `host_dir` through the
    /// passthrough backend (fs/passthrough).
    pub fn with_passthrough_root(
        config: VfsConfig,
        host_dir: &std::path::Path,
        pt: crate::fs::passthrough::PassthroughConfig,
    ) -> SysResult<Vfs> {
        let fs = crate::fs::passthrough::Passthrough::new(host_dir, pt)?;
        Ok(Self::with_root_fs(config, Box::new(fs)))
    }

    /// A process with `cred`, rooted at the namespace root.
    pub fn process(&self, cred: Cred) -> Process {
        Process::new(self.inner.clone(), cred)
    }

    /// A root-credential process.
    pub fn root_process(&self) -> Process {
        self.process(Cred::root())
    }

    /// Live dentries, inodes, open files and mounts.
    pub fn object_counts(&self) -> ObjectCounts {
        let s = &self.inner.stats;
        ObjectCounts {
            dentries: s.dentries.sum(),
            inodes: s.inodes.sum(),
            files: self.inner.open_files.sum(),
            mounts: s.mounts.sum(),
            hot_dentries: s.hot_dentries.sum(),
            hot_dirs: s.hot_dirs.sum(),
        }
    }

    /// Inodes that have file locks or lock waiters right now (`flock`,
    /// `fcntl_lock`); zero once every locked file is closed.
    pub fn lock_contexts(&self) -> usize {
        self.inner.file_locks.contexts()
    }

    /// The processes' fs contexts (root, cwd and umask) alive now: one per
    /// process but for `clone_thread` siblings sharing one; zero once every
    /// process exited.
    pub fn fs_contexts(&self) -> usize {
        self.inner.fs_contexts.len()
    }

    /// Buckets in the dentry hash table's current array (it grows with the
    /// namespace: `VfsConfig::hash_bits`, `hash_max_bits`).
    pub fn dcache_buckets(&self) -> usize {
        self.inner.dcache.bucket_count()
    }

    /// Threads parked right now waiting for another thread's backend lookup
    /// of the same name (tests use it to order their steps).
    pub fn in_lookup_waiting(&self) -> usize {
        self.inner.in_lookup.waiting()
    }

    /// Frees everything any thread of this namespace has queued for
    /// deferred freeing: afterwards `statfs` and `object_counts` reflect
    /// every close, unlink and exit that returned before the call. The
    /// memory of the objects those released goes back too, once no
    /// reader holds it (at once when no other thread is inside an
    /// operation): the epoch's batches would otherwise keep it until this
    /// namespace frees more (`sync/epoch.rs`, `seal_pending`).
    pub fn flush(&self) {
        self.inner.flush_all();
        self.inner.collector.seal_pending();
    }

    /// The longest any thread's deferred-put queue of this namespace has
    /// been (never above `VfsConfig::defer_max_entries`).
    pub fn defer_high_water(&self) -> usize {
        self.inner.defer.high_water()
    }
}

impl VfsInner {
    /// Whether the system-wide open-file limit is reached (ENFILE), as
    /// Linux's `alloc_empty_file`: the central value first (it may lag by
    /// `max_error`, mostly drained files not yet folded), and the exact sum
    /// only when that says the limit is reached, so a lagging count never
    /// refuses an open wrongly.
    pub(crate) fn at_file_limit(&self) -> bool {
        let max = self.config.max_files;
        let approx = u64::try_from(self.open_files.read_approx()).unwrap_or(0);
        approx >= max && u64::try_from(self.open_files.sum()).unwrap_or(0) >= max
    }

    /// A new filesystem instance with an empty root directory of mode
    /// `root_mode`, owned by `(uid, gid)` `root_owner`.
    pub(crate) fn new_superblock(
        &self,
        fs: Box<dyn Filesystem>,
        root_mode: u32,
        root_owner: (u32, u32),
    ) -> Arc<SuperBlock> {
        let backend_served = fs.backend_served();
        let revalidate_ttl_ns = fs
            .revalidate_ttl()
            .map(|t| t.as_nanos().min(u64::MAX as u128) as u64);
        let (max_pages, max_inodes) = SuperBlock::limit_fields(self.config.tmpfs_limits);
        let sb = Arc::new(SuperBlock {
            backend_served,
            revalidate_ttl_ns,
            // Relaxed: a unique number; nothing is published through it.
            dev: self.next_dev.fetch_add(1, Ordering::Relaxed),
            fs,
            root: AtomicPtr::new(core::ptr::null_mut()),
            ino_alloc: InoAllocator::new(2),
            rename_lock: Mutex::new(()),
            lru: Default::default(),
            used_blocks: ApproxCounter::new(),
            used_inodes: ApproxCounter::new(),
            max_pages,
            max_inodes,
            mounts: Mutex::new(Default::default()),
            readonly: crate::sync::atomic::AtomicBool::new(false),
            st_flags: crate::sync::atomic::AtomicI64::new(0),
            tmpfs_options: crate::sync::atomic::AtomicU32::new(0),
            orphans: crate::sync::ShardedCounter::new(),
            xattrs: crate::inode::xattr::XattrTable::new(),
            acls: Default::default(),
            exports: crate::fs::export::ExportTable::new(instance_salt()),
            renames: crate::sync::InFlight::new(),
        });
        self.register_sb_shrinker(&sb);
        sb.reserve_inode()
            .expect("an empty instance has room for its root");
        let inode = self.alloc_inode(
            &sb,
            1,
            root_mode,
            root_owner.0,
            root_owner.1,
            InodeBody::Directory(RwLock::new(DirIndex::new())),
        );
        let root = Dentry::alloc(
            &*sb,
            core::ptr::null(),
            &NameKey::new(b"/"),
            inode,
            1,
            self.charge(crate::reclaim::ObjKind::Dentry),
        );
        self.stats.dentries.inc();
        // SAFETY: just allocated; the root dentry keeps it.
        sb.fs.init_root(&sb, unsafe { &*inode });
        // Release: pairs with the acquire in `SuperBlock::root`.
        sb.root.store(root, Ordering::Release);
        sb
    }

    /// Allocates an inode with one reference (the caller's, normally handed
    /// to the dentry that names it). The caller has reserved it with
    /// `SuperBlock::reserve_inode`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alloc_inode(
        &self,
        sb: &SuperBlock,
        ino: u64,
        mode: u32,
        uid: u32,
        gid: u32,
        body: InodeBody,
    ) -> *const Inode {
        let group = self.charge(crate::reclaim::ObjKind::Inode);
        let p = Inode::alloc(sb, ino, mode, (uid, gid), body, group);
        // SAFETY: just made, not shared yet.
        let inode = unsafe { &*p };
        let fresh = inode.refcount.get();
        debug_assert!(fresh);
        self.stats.inodes.inc();
        p
    }

    /// Frees the whole tree of an instance whose last mount is gone: every
    /// dentry (named or negative) and inode, through the collector.
    ///
    /// No new walk reaches the tree, but one that crossed into it before
    /// its last mount went holds only a guard and may still add names: a
    /// create, or a lookup's negative entry. So every directory is first
    /// marked dead under its exclusive lock, as rmdir marks one (creates
    /// and lookups check that under the lock, and answer ENOENT), and
    /// only then are the unused entries reaped from the LRU lists and the
    /// named tree freed: whatever such a walk added, it added before its
    /// directory was marked, where this finds it. (Before session 44 the
    /// lists were reaped first and the tree read under shared locks: a
    /// name added meanwhile was never freed.)
    pub(crate) fn kill_superblock(&self, sb: &SuperBlock) {
        let _guard = self.collector.enter();
        self.notify_unmount(sb);
        self.unregister_sb_shrinker(sb);
        let mut tree = Vec::new();
        let mut stack = vec![sb.root()];
        while let Some(d) = stack.pop() {
            tree.push(d);
            // SAFETY: a guard keeps the tree allocated (a walker inside it
            // holds one too), and a positive dentry keeps its inode.
            let inode = unsafe { &*d }.inode_ptr();
            if let Some(index) = unsafe { inode.as_ref() }.and_then(|i| i.dir_index()) {
                let mut locked = index.write();
                locked.mark_dead();
                stack.extend(locked.iter_from(0).map(|(_, c)| c));
            }
        }
        // Names pin their dentries: these are negative or (a backend's
        // cached names, in no index) unused entries, none in `tree`.
        for list in sb.lru.lists() {
            while self.shrink_dentry_list(list, 4096, true) > 0 {}
        }
        for d in tree {
            // SAFETY: nothing outside this teardown can reach the tree any
            // more (no mount, every directory dead), and freeing goes
            // through the collector.
            let dr = unsafe { &*d };
            let inode = dr.inode_ptr();
            if dr.is_hashed() {
                self.unhash(dr);
            }
            // A hot name's shards (dcache/hot.rs): the count no longer
            // matters, and a reader may still be adding to them.
            if dr.refcount.discard(&self.collector) {
                self.stats.note_cold(dr);
            }
            if !inode.is_null() {
                self.iput(inode);
            }
            self.stats.dentries.dec();
            self.uncharge(dr.group, crate::reclaim::ObjKind::Dentry);
            // SAFETY: unhashed and unreachable; readers hold guards.
            unsafe { self.collector.retire_slab(d as *mut Dentry) };
        }
    }
}

/// A per-instance salt for file-handle generations: a process-wide
/// counter mixed with the clock, so instances (and runs) differ.
fn instance_salt() -> u32 {
    // A `std` atomic: a process-global id source (loom cannot hold one in a
    // static). Relaxed: only uniqueness matters, which the RMW gives.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = crate::inode::now();
    let x = (n ^ (t.sec as u64) << 20 ^ t.nsec as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 32) as u32
}

impl Drop for VfsInner {
    fn drop(&mut self) {
        // Every thread's queue first (nobody else can use this VFS now),
        // then tear down with inline puts.
        self.drain_at_drop();
        self.defer.enabled = false;
        if let Some(anon) = self.anon.take() {
            self.drop_anon(&anon);
        }
        // The first namespace's tree (every other one went with its last
        // process, and each process holds the VFS): counts made exact, then
        // every mount detached, children first (mount/namespace.rs).
        if let Some(ns) = self.mounts.init_ns.get() {
            self.dissolve(ns);
            debug_assert!(
                self.lock_mounts().is_empty(),
                "an attached mount outside the first namespace"
            );
        }
        // SAFETY: we hold the last reference to the VFS: no thread is inside
        // a guard of this collector.
        unsafe { self.collector.reclaim_all() };
    }
}
