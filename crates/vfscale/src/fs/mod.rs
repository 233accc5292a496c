//! Superblocks and the backend trait.
//!
//! A `SuperBlock` is one filesystem instance: its root dentry, inode-number
//! allocator, space accounting, rename lock and the LRU of unused negative
//! dentries. The `Filesystem` trait is what a backend supplies; tmpfs keeps
//! its whole namespace in the dcache (so a dcache miss is a definite
//! "no such name"), a passthrough backend answers misses from the host.
//!
//! Invariants:
//! - A superblock outlives every dentry and inode that points to it: it is
//!   owned by `Arc` from its mounts, and its `Drop` frees its whole tree.
//! - `rename_lock` is taken by cross-directory renames before any directory
//!   lock (the lock order is in docs/ARCHITECTURE.md).

pub mod export;
pub mod faulty;
pub mod passthrough;
pub mod tmpfs;

use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, Ordering};
use crate::sync::counter::ApproxCounter;
use crate::sync::ino_batch::InoAllocator;
use crate::sync::lock::Mutex;

/// An extended-attribute call for a backend (`Filesystem::xattr`).
pub enum XattrCall<'a> {
    /// The value of a name into the buffer (its size when the buffer is
    /// empty; ERANGE when it does not fit).
    Get(&'a [u8], &'a mut [u8]),
    /// A name's value, with XATTR_CREATE / XATTR_REPLACE flags.
    Set(&'a [u8], &'a [u8], i32),
    /// The NUL-terminated names into the buffer (as `Get`).
    List(&'a mut [u8]),
    Remove(&'a [u8]),
}

/// What a backend supplies to the VFS.
pub trait Filesystem: Send + Sync {
    /// The type name given to mount(2) ("tmpfs").
    fn fs_type(&self) -> &'static str;

    /// True if regular files and directories carry inode flags
    /// (FS_IOC_GETFLAGS and kin; inode/flags.rs): tmpfs.
    fn has_inode_flags(&self) -> bool {
        false
    }

    /// True if every existing name is always in the dcache, so a miss is a
    /// definite ENOENT and needs no backend call (tmpfs).
    fn dcache_is_authoritative(&self) -> bool;

    /// Looks up a name the dcache does not hold. `Ok(None)`: no such name.
    /// The found inode comes with one reference, the caller's: a fresh one
    /// (not reachable by anyone else) the core counts and charges to the
    /// caller's memory group before publishing it; a shared one (another
    /// name's inode: a host hard link) was counted and charged when it was
    /// made.
    fn lookup(&self, sb: &SuperBlock, dir: &Inode, name: &[u8]) -> SysResult<Option<FoundInode>>;

    // ---- backend-served instances (passthrough). tmpfs keeps the
    // defaults: its data and listings live in memory and the core never
    // calls the methods below for it (`SuperBlock::backend_served` is
    // false), so its hot paths pay one cached flag test at most. ----

    /// Called once the instance's root inode exists.
    fn init_root(&self, _sb: &SuperBlock, _root: &Inode) {}

    /// True if file data and directory listings come from the backend
    /// (`read`/`write`/`truncate`/`readdir`) and namespace and attribute
    /// changes go to it (`create` ... `setattr`, after the core's checks;
    /// xattr writes and fallocate are EROFS).
    fn backend_served(&self) -> bool {
        false
    }

    /// How long a cached entry is trusted before `revalidate` (None:
    /// forever).
    fn revalidate_ttl(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether the cached answer for `name` in `dir` (`cached` None: a
    /// negative entry) still holds; refreshes a positive one's attributes.
    fn revalidate(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
        _cached: Option<&Inode>,
    ) -> SysResult<bool> {
        Ok(true)
    }

    /// Whether directory `dir` itself vouches that a cached *negative*
    /// entry of it, answered at `answered_at` (CLOCK_MONOTONIC ns, taken
    /// before the backend was asked), still holds, without asking about
    /// the name: `Some(t)` — it held at `t` (the entry's new validation
    /// time); `None` — ask about the name (`revalidate`).
    fn dir_vouches(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _answered_at: u64,
    ) -> SysResult<Option<u64>> {
        Ok(None)
    }

    /// After the backend's `rename` or `unlink` succeeded through vfscale:
    /// each `(inode, from, to)` says where one name of an inode went —
    /// `Some((dir, name))`, or `None` when that name is gone (unlinked,
    /// removed, replaced by a rename). All of one call's moves happened at
    /// once (RENAME_EXCHANGE swaps two).
    fn names_moved(&self, _sb: &SuperBlock, _moves: &[NameMove<'_>]) {}

    /// The core is freeing `inode` (backend-served instances only).
    fn evict(&self, _inode: &Inode) {}

    /// An inotify watch now holds `inode` (backend-served instances
    /// only): a later lookup of any of the backend object's names should
    /// find this inode rather than make another, or the watch would miss
    /// the events of changes made through that name (Linux's icache finds
    /// the watched inode by number).
    fn keep_identity(&self, _inode: &Inode) {}
    /// An open file description of regular file `inode` is being made
    /// (`fmode`: its `FMODE_READ` / `FMODE_WRITE` bits). True: the backend
    /// now holds the backend's file open for it until `release`, so the
    /// description's data calls reach that file even after its name is
    /// removed or renamed (Linux's open-file semantics). False: nothing is
    /// held; data calls find the file by its name, each on its own.
    fn open(&self, _sb: &SuperBlock, _inode: &Inode, _fmode: u32) -> bool {
        false
    }
    /// The last reference to a description `open` returned true for went.
    fn release(&self, _sb: &SuperBlock, _inode: &Inode) {}

    fn read(
        &self,
        _sb: &SuperBlock,
        _inode: &Inode,
        _pos: u64,
        _buf: &mut [u8],
    ) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    /// Writes at `pos`, or at the end (O_APPEND) when None.
    fn write(
        &self,
        _sb: &SuperBlock,
        _inode: &Inode,
        _pos: Option<u64>,
        _buf: &[u8],
    ) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn truncate(&self, _sb: &SuperBlock, _inode: &Inode, _len: u64) -> SysResult<()> {
        Err(Errno::EINVAL)
    }

    /// copy_file_range of up to `len` bytes from `from` at `from_pos` to
    /// `to` at `to_pos` (two regular files of the instance, the ranges
    /// checked by the core) by the backend's own means: a host's
    /// copy_file_range (reflinks, server-side copies). `Ok(None)`: it has
    /// none for these files, and the core copies through `read` and
    /// `write`. Fewer bytes is a short copy, as the syscall's.
    fn copy_range(
        &self,
        _sb: &SuperBlock,
        _from: (&Inode, u64),
        _to: (&Inode, u64),
        _len: usize,
    ) -> SysResult<Option<usize>> {
        Ok(None)
    }

    /// fallocate(2) of the backend's file, after the VFS's checks
    /// (vfs_fallocate's), refreshing the cached attributes.
    fn fallocate(
        &self,
        _sb: &SuperBlock,
        _inode: &Inode,
        _mode: i32,
        _offset: u64,
        _len: u64,
    ) -> SysResult<()> {
        Err(Errno::EOPNOTSUPP)
    }

    /// fsync (or, `datasync`, fdatasync) of the backend's file or
    /// directory: what was written through to it reaches stable storage.
    fn fsync(&self, _sb: &SuperBlock, _inode: &Inode, _datasync: bool) -> SysResult<()> {
        Ok(())
    }

    /// syncfs of the backend's filesystem.
    fn sync_fs(&self, _sb: &SuperBlock) -> SysResult<()> {
        Ok(())
    }

    /// The backend's own statfs figures (None: the instance's limits).
    fn statfs(&self, _sb: &SuperBlock) -> Option<Statfs> {
        None
    }

    /// lseek's SEEK_DATA (`hole` false) or SEEK_HOLE from `offset` (>= 0)
    /// in the backend's file.
    fn seek_data_hole(
        &self,
        _sb: &SuperBlock,
        _inode: &Inode,
        _offset: u64,
        _hole: bool,
    ) -> SysResult<u64> {
        Err(Errno::EINVAL)
    }

    // ---- namespace and attribute changes of backend-served instances:
    // the core checks vfscale's permissions, calls these, then drops the
    // affected cached names (the next lookup asks the backend). ----

    /// Creates `name` in `dir`: `mode` holds the type (S_IFREG, S_IFDIR,
    /// S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK) and permission bits; the new
    /// object is owned by `uid`/`gid`.
    #[allow(clippy::too_many_arguments)]
    fn create(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
        _mode: u32,
        _rdev: u64,
        _uid: u32,
        _gid: u32,
    ) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// An unnamed regular file in directory `dir` (open(O_TMPFILE)): a
    /// fresh inode with one reference and no links, owned by `uid`/`gid`
    /// with permission bits `mode`, whose backend file the backend holds
    /// (its first `open` shares it; `link` may give it a name once).
    fn tmpfile(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _mode: u32,
        _uid: u32,
        _gid: u32,
    ) -> SysResult<*const Inode> {
        Err(Errno::EOPNOTSUPP)
    }

    /// File handles of an instance whose dcache is not authoritative
    /// (fs/export.rs): the backend's own bytes for live `inode`, appended
    /// to `out` (at most `export::BACKEND_HANDLE_MAX` in all), by which
    /// `locate_handle` can find the object after vfscale forgot it.
    /// EOPNOTSUPP: no handles for it (the default).
    fn encode_handle(&self, _sb: &SuperBlock, _inode: &Inode, _out: &mut Vec<u8>) -> SysResult<()> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Whether live `inode` is, now, the object whose `encode_handle`
    /// bytes are `handle` (not a removed one whose number was reused).
    fn handle_names(&self, _sb: &SuperBlock, _inode: &Inode, _handle: &[u8]) -> bool {
        false
    }

    /// Where the object `handle` names may be found: paths relative to the
    /// instance root ("" is the root; components joined by '/'), each to be
    /// walked and checked with `handle_names`. ESTALE (or no paths): it is
    /// gone, or cannot be found.
    fn locate_handle(&self, _sb: &SuperBlock, _handle: &[u8]) -> SysResult<Vec<Box<[u8]>>> {
        Err(Errno::ESTALE)
    }

    /// A symlink `name` in `dir` with text `target`, owned by `uid`/`gid`.
    fn symlink(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
        _target: &[u8],
        _uid: u32,
        _gid: u32,
    ) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// A new name `name` in `dir` for `inode`.
    fn link(&self, _sb: &SuperBlock, _inode: &Inode, _dir: &Inode, _name: &[u8]) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// Removes `name` from `dir`, whose inode is `victim` (rmdir when it
    /// is a directory; the core checked the call matches its type). The
    /// victim may stay in use (a descriptor or cwd keeps it), as an
    /// orphan whose attribute calls still work on Linux.
    fn unlink(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
        _victim: &Inode,
    ) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// renameat2 of `old_name` in `old_dir` to `new_name` in `new_dir`,
    /// where `victim` is (the inode the new name had: replaced, or with
    /// RENAME_EXCHANGE moved to the old name); a RENAME_WHITEOUT's
    /// whiteout belongs to `whiteout_owner` (uid, gid).
    #[allow(clippy::too_many_arguments)]
    fn rename(
        &self,
        _sb: &SuperBlock,
        _old_dir: &Inode,
        _old_name: &[u8],
        _new_dir: &Inode,
        _new_name: &[u8],
        _victim: Option<&Inode>,
        _flags: u32,
        _whiteout_owner: (u32, u32),
    ) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// Changes attributes of `inode` (None: unchanged; times as
    /// utimensat's, UTIME_NOW / UTIME_OMIT allowed) and refreshes its
    /// cached copy.
    fn setattr(&self, _sb: &SuperBlock, _inode: &Inode, _change: &AttrChange) -> SysResult<()> {
        Err(Errno::EROFS)
    }

    /// Re-reads `inode`'s attributes from the backend.
    fn refresh(&self, _sb: &SuperBlock, _inode: &Inode) -> SysResult<()> {
        Ok(())
    }

    /// An extended-attribute call on a backend-served inode, made after the
    /// core's name, size and permission checks (process/xattr.rs); returns
    /// the byte count of a get or list (0 for a change).
    fn xattr(&self, _sb: &SuperBlock, _inode: &Inode, _call: XattrCall<'_>) -> SysResult<usize> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Lists `dir` from position `from` (>= 2; the core emits "." and
    /// ".."), as `VfsInner::list_dir`.
    fn readdir(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _from: u64,
        _emit: &mut dyn FnMut(&crate::process::DirEntryRef<'_>) -> bool,
    ) -> SysResult<(u64, bool)> {
        Err(Errno::ENOTDIR)
    }
}

/// An inode `Filesystem::lookup` found, with one reference for the caller.
#[derive(Clone, Copy, Debug)]
pub struct FoundInode {
    pub inode: *const Inode,
    /// Made by this lookup (the core counts and charges it), rather than
    /// another name's inode with a new reference.
    pub fresh: bool,
}

impl FoundInode {
    /// A fresh inode (see `Filesystem::lookup`).
    pub fn fresh(inode: *const Inode) -> FoundInode {
        FoundInode { inode, fresh: true }
    }
}

/// Where a rename or unlink moved one name of an inode
/// (`Filesystem::names_moved`): the inode, the name's old directory and
/// name, and its new ones, or None when the name was removed (the inode
/// may keep other names: host hard links).
pub type NameMove<'a> = (
    &'a Inode,
    (&'a Inode, &'a [u8]),
    Option<(&'a Inode, &'a [u8])>,
);

/// An attribute change handed to a backend (`Filesystem::setattr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttrChange {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// [atime, mtime] as utimensat's.
    pub times: Option<[Timespec; 2]>,
}

/// Space and inode limits of an instance (statfs reports them).
#[derive(Clone, Copy, Debug)]
pub struct FsLimits {
    pub max_bytes: u64,
    pub max_inodes: u64,
}

pub struct SuperBlock {
    pub(crate) dev: u64,
    pub(crate) fs: Box<dyn Filesystem>,
    pub(crate) root: AtomicPtr<Dentry>,
    pub(crate) ino_alloc: InoAllocator,
    /// Serializes cross-directory renames (Linux's s_vfs_rename_mutex).
    pub(crate) rename_lock: Mutex<()>,
    /// Unused dentries, one list per memory group (`reclaim/list_lru.rs`).
    pub(crate) lru: crate::reclaim::list_lru::ListLru,
    pub(crate) used_blocks: ApproxCounter,
    pub(crate) used_inodes: ApproxCounter,
    /// The size limit in pages and the inode limit (`VfsConfig::
    /// tmpfs_limits` unless fsconfig's parameters set them; `UNLIMITED`:
    /// none, as tmpfs's 0). Changed only by a reconfiguration, under the
    /// mount table's lock; read as a bound that a racing create or write
    /// may see either side of (as shmem's max_blocks).
    pub(crate) max_pages: AtomicI64,
    pub(crate) max_inodes: AtomicI64,
    /// Mounts of this instance (`*const Mount`), attached or detached but
    /// alive; the last one to go tears the tree down. Lock order: after
    /// the mount table's lock.
    pub(crate) mounts: Mutex<std::collections::HashSet<usize>>,
    /// The instance is read-only (SB_RDONLY): changed with every mount in
    /// `mounts` held (mount/write.rs).
    pub(crate) readonly: AtomicBool,
    /// SB_SYNCHRONOUS and SB_MANDLOCK as statfs reports them
    /// (ST_SYNCHRONOUS, ST_MANDLOCK): set by mount(2) of a new instance
    /// and replaced by a plain remount (Linux's MS_RMT_MASK), no other
    /// effect (nothing here is written back). Written under the mount
    /// table's lock.
    pub(crate) st_flags: crate::sync::atomic::AtomicI64,
    /// What a reconfiguration of a tmpfs instance checks against
    /// (mount/config.rs `TMPFS_*`: made with noswap, without a size or an
    /// inode limit): set when fsconfig makes the instance and changed by
    /// its reconfigurations, under the mount table's lock; 0 for
    /// instances mount(2) makes.
    pub(crate) tmpfs_options: crate::sync::atomic::AtomicU32,
    /// Inodes of this instance with no link left that are still alive (an
    /// open unlinked file, a removed cwd, an O_TMPFILE): Linux's
    /// s_remove_count, which makes a remount read-only EBUSY. Counted
    /// where a link count reaches or leaves zero (`AttrWriter::set_nlink`)
    /// and when such an inode is freed.
    pub(crate) orphans: crate::sync::ShardedCounter,
    /// Extended attributes of this instance's inodes, by inode number.
    pub(crate) xattrs: crate::inode::xattr::XattrTable,
    /// POSIX ACLs, beside the other attributes (inode/acl.rs).
    pub(crate) acls: crate::inode::acl::AclTable,
    /// Inodes file handles were made for (fs/export.rs).
    pub(crate) exports: export::ExportTable,
    /// Backend renames in flight, from the backend's call to the cached
    /// dentry's move (process/backend_names.rs): host calls by path and
    /// handle decoding look again across one (sync/in_flight.rs).
    pub(crate) renames: crate::sync::InFlight,
    /// `fs.backend_served()`, cached: data, listings, revalidation and
    /// changes go to the backend (process/backend_names.rs).
    pub(crate) backend_served: bool,
    /// `fs.revalidate_ttl()` in nanoseconds, cached (None: never).
    pub(crate) revalidate_ttl_ns: Option<u64>,
}

// SAFETY: the raw pointer is to the root dentry, owned by this superblock;
// everything else is Sync.
unsafe impl Send for SuperBlock {}
// SAFETY: as above.
unsafe impl Sync for SuperBlock {}

pub const BLOCK_SIZE: u64 = 4096;

/// A limit that is none (tmpfs's size or nr_inodes of 0).
pub(crate) const UNLIMITED: i64 = i64::MAX;

impl SuperBlock {
    /// The limit fields of a new instance with `limits`.
    pub(crate) fn limit_fields(limits: FsLimits) -> (AtomicI64, AtomicI64) {
        let clamp = |n: u64| AtomicI64::new(i64::try_from(n).unwrap_or(UNLIMITED));
        (
            clamp(limits.max_bytes / BLOCK_SIZE),
            clamp(limits.max_inodes),
        )
    }

    /// The size limit in pages and the inode limit (`UNLIMITED`: none).
    pub(crate) fn limits(&self) -> (i64, i64) {
        // Relaxed (both): bounds, not publication (field doc).
        (
            self.max_pages.load(Ordering::Relaxed),
            self.max_inodes.load(Ordering::Relaxed),
        )
    }

    /// Sets the limits given (tmpfs's size and nr_inodes; 0: none).
    /// Caller holds the mount table's lock, or nobody else can reach the
    /// instance yet.
    pub(crate) fn set_limits(&self, pages: Option<u64>, inodes: Option<u64>) {
        let limit = |n: u64| match n {
            0 => UNLIMITED,
            n => i64::try_from(n).unwrap_or(UNLIMITED),
        };
        // Relaxed (both): as `limits`.
        if let Some(n) = pages {
            self.max_pages.store(limit(n), Ordering::Relaxed);
        }
        if let Some(n) = inodes {
            self.max_inodes.store(limit(n), Ordering::Relaxed);
        }
    }

    pub fn root(&self) -> *const Dentry {
        // Acquire: pairs with the release store at creation.
        self.root.load(Ordering::Acquire)
    }

    /// Reserves one inode against the instance limit (ENOSPC when full).
    /// Hard links take one each, as in tmpfs. The check is exact near the
    /// limit and a cheap approximate read elsewhere (percpu_counter_compare).
    pub(crate) fn reserve_inode(&self) -> SysResult<()> {
        if self.used_inodes.compare(self.limits().1).is_ge() {
            return Err(Errno::ENOSPC);
        }
        self.used_inodes.add(1);
        Ok(())
    }

    /// `reserve_inode` only if at least `slack` more inodes fit under the
    /// instance limit (a cheap approximate read far from it, exact near
    /// it): true if reserved. Far from the limit the reservation cannot
    /// fail, so the limit is read once, not again by `reserve_inode`.
    pub(crate) fn reserve_inode_if_far(&self, slack: i64) -> bool {
        let max = self.limits().1;
        if !self.used_inodes.compare(max.saturating_sub(slack)).is_lt() {
            return false;
        }
        self.used_inodes.add(1);
        true
    }

    pub(crate) fn release_inode(&self) {
        self.used_inodes.add(-1);
    }

    /// Releases `n` inodes at once (a deferred-put batch).
    pub(crate) fn release_inodes(&self, n: i64) {
        self.used_inodes.add(-n);
    }

    /// Accounts a change of allocated 512-byte blocks; growth past the limit
    /// is ENOSPC (exact near the limit, like `reserve_inode`).
    /// Whether `pages` more pages fit in the instance now: a check before
    /// allocating that much (fallocate), which the charge afterwards makes
    /// exact.
    pub(crate) fn pages_fit(&self, pages: u64) -> bool {
        let max_pages = self.limits().0 as u64;
        pages <= max_pages && !self.used_blocks.compare((max_pages - pages) as i64).is_gt()
    }

    pub(crate) fn charge_blocks(&self, delta_512: i64) -> SysResult<()> {
        let delta_pages = delta_512 / 8;
        if delta_pages == 0 {
            // The free of an empty file: no shared counter to touch.
            return Ok(());
        }
        let max_pages = self.limits().0;
        if delta_pages > 0 && self.used_blocks.compare(max_pages - delta_pages).is_gt() {
            return Err(Errno::ENOSPC);
        }
        self.used_blocks.add(delta_pages);
        Ok(())
    }

    /// Whether the instance is read-only (SB_RDONLY; mount/write.rs).
    #[inline]
    pub fn is_readonly(&self) -> bool {
        // Relaxed: a snapshot for errno order and statfs; changes are
        // refused through `Mount::write_access`, which reads it in order.
        self.readonly.load(Ordering::Relaxed)
    }

    pub fn statfs(&self) -> Statfs {
        let mut st = self.statfs_unflagged();
        if self.is_readonly() {
            st.f_flags |= ST_RDONLY;
        }
        // Relaxed: a snapshot, as the read-only bit's.
        st.f_flags |= self.st_flags.load(Ordering::Relaxed);
        st
    }

    /// The statfs flags of mount(2)'s superblock flags `flags` that an
    /// instance keeps (`st_flags`).
    pub(crate) fn st_flags_of(flags: u64) -> i64 {
        let mut st = 0;
        if flags & MS_SYNCHRONOUS != 0 {
            st |= ST_SYNCHRONOUS;
        }
        if flags & MS_MANDLOCK != 0 {
            st |= ST_MANDLOCK;
        }
        st
    }

    fn statfs_unflagged(&self) -> Statfs {
        if let Some(backend) = self.fs.statfs(self) {
            return Statfs {
                f_fsid: [self.dev as i32, (self.dev >> 32) as i32],
                ..backend
            };
        }
        // shmem_statfs: an unlimited count shows as 0 total, 0 free.
        let (max_pages, max_inodes) = self.limits();
        let shown = |max: i64| if max == UNLIMITED { 0 } else { max as u64 };
        let (total, files) = (shown(max_pages), shown(max_inodes));
        let used = self.used_blocks.sum().max(0) as u64;
        let files_used = self.used_inodes.sum().max(0) as u64;
        let free = total.saturating_sub(used);
        Statfs {
            f_type: TMPFS_MAGIC,
            f_bsize: BLOCK_SIZE as i64,
            f_blocks: total,
            f_bfree: free,
            f_bavail: free,
            f_files: files,
            f_ffree: files.saturating_sub(files_used),
            f_fsid: [self.dev as i32, (self.dev >> 32) as i32],
            f_namelen: NAME_MAX as i64,
            f_frsize: BLOCK_SIZE as i64,
            // The superblock's flags; a mount adds its own (`Mount::statfs`).
            f_flags: ST_VALID,
        }
    }
}
