//! Inodes: the file objects behind names.
//!
//! Layout (asserted below): the `Inode` itself, two lines, holds the
//! attribute block read by `stat` and by permission checks during
//! lock-free path walks; its [`InodeTail`], one line, holds what writers
//! touch (refcount, the body; for a directory, the directory lock and its
//! index). An inode of the inode pool (`Inode::alloc`) has its tail apart,
//! among its slab chunk's tails (`mem::slab::tail_of`), so the pool's
//! attribute pairs lie packed, each in one adjacent-line pair the CPU
//! fetches together; an anonymous node's inode (`Inode::write_at`)
//! has it right after the head. The tail's fields read as the inode's own
//! (`Deref`).
//!
//! Invariants:
//! - Attribute fields are atomics written only inside `attr_seq` write
//!   sections opened with `SeqCount::write_lock` (the odd count is the
//!   writers' lock: no separate mutex, so a directory's name change writes
//!   no attribute lock on its lock's line); readers copy them under the
//!   seqcount and retry, so `stat` writes no shared memory.
//! - `write_hint` is F_SET_RW_HINT's value (Linux's i_write_hint): kept
//!   and reported, ordering nothing (there is no block layer to read it).
//! - `ino`, `btime`, `sb`, the body's kind (and a device's number) and the
//!   file type bits of `mode` never change; `private` is set at most once
//!   and cleared at most once.
//! - `mode` also carries `MODE_ACL_BITS` (cred/acl.rs): which POSIX ACLs
//!   the superblock's ACL table holds for the inode. Only `perm_attr`
//!   shows them (permission checks and creates branch on them); `attr`,
//!   `stat` and `AttrWriter::get` mask them out, `set_mode` keeps them,
//!   and only inode/acl.rs changes them, holding the inode's ACL writer
//!   lock. Above them it carries the inode flags (inode/flags.rs:
//!   immutable, append-only, nodump, noatime), hidden and kept alike.
//! - The refcount counts dentries bound to the inode plus transient holders;
//!   the inode is retired through the epoch collector when it drops to zero,
//!   so a lock-free reader that loaded the pointer under a guard may still
//!   read it.
//! - For directories, the `RwLock` in the body is the directory lock
//!   (Linux's i_rwsem): shared for lookups that miss and readdir, exclusive
//!   for changes to the directory's names.

pub mod acl;
pub mod flags;
pub mod xattr;

use crate::abi::*;
use crate::cred::acl::MODE_ACL_BITS;
use crate::dir::index::DirIndex;
use crate::fs::tmpfs::data::FileData;
use crate::fs::SuperBlock;
use crate::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use crate::sync::lock::RwLock;
use crate::sync::refcount::RefCount;
use crate::sync::seqcount::SeqCount;
use flags::MODE_HIDDEN_BITS;

/// A plain copy of an inode's attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InodeAttr {
    pub ino: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub size: u64,
    pub blocks: u64,
    pub rdev: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
    pub btime: Timespec,
}

/// A timestamp as two atomics (read under the inode seqcount).
#[derive(Default)]
struct AtomicTime {
    sec: AtomicI64,
    nsec: AtomicI64,
}

impl AtomicTime {
    fn new(t: Timespec) -> Self {
        AtomicTime {
            sec: AtomicI64::new(t.sec),
            nsec: AtomicI64::new(t.nsec),
        }
    }
    // Relaxed: both accessors run inside the inode's seqcount sections, whose
    // fences order them (see SeqCount).
    fn load(&self) -> Timespec {
        Timespec {
            sec: self.sec.load(Ordering::Relaxed),
            nsec: self.nsec.load(Ordering::Relaxed),
        }
    }
    fn store(&self, t: Timespec) {
        self.sec.store(t.sec, Ordering::Relaxed);
        self.nsec.store(t.nsec, Ordering::Relaxed);
    }
}

/// What an inode holds besides attributes.
pub enum InodeBody {
    /// Regular file contents; the lock orders data reads against writes.
    Regular(RwLock<FileData>),
    /// A directory: the lock is the directory lock, the index its children.
    Directory(RwLock<DirIndex>),
    /// The link text, fixed at creation.
    Symlink(Box<[u8]>),
    /// A FIFO made by mknod: its pipe buffer (boxed: the inode's size is
    /// fixed at three lines).
    Fifo(Box<crate::anon::pipe::Pipe>),
    /// Sockets and device nodes created by mknod, anonymous inodes: the
    /// device number (st_rdev; 0 but for device nodes), kept here rather
    /// than in the attribute lines, where `private` took its place.
    Special(u64),
}

#[repr(C, align(64))]
pub struct Inode {
    // ---- lines 0-1: attributes, read lock-free under `attr_seq` ----
    // Line 0: the seqcount and what chmod, chown, link, truncate and write
    // change, so such a change costs a concurrent stat one cache miss, not
    // two (lockref-recovery's chmod loop).
    attr_seq: SeqCount,
    mode: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    nlink: AtomicU32,
    /// The memory group charged for this inode and its data pages (fixed
    /// at creation; fills the padding before `size`).
    pub(crate) group: u32,
    size: AtomicU64,
    ctime: AtomicTime,
    mtime: AtomicTime,
    // Line 1: rarely written (blocks on allocating writes, atime under
    // relatime) or never.
    blocks: AtomicU64,
    atime: AtomicTime,
    pub(crate) ino: u64,
    /// The backend's own state for this inode (Linux's i_private): set at
    /// most once, before the inode is reachable by anyone but its maker,
    /// or by `Filesystem::init_root` before the mount is, and cleared by
    /// the backend's `evict`; the core never reads what it points to. Null
    /// for tmpfs and anonymous inodes.
    private: AtomicPtr<()>,
    /// Birth time, seconds and nanoseconds (kept narrow so that the
    /// write hint fits this line).
    btime_sec: i64,
    btime_nsec: u32,
    write_hint: AtomicU8,
    /// Some inotify mark watches this inode (notify/mod.rs: changed under
    /// its registry's lock, read by the hooks as a hint; in the padding
    /// before `sb`).
    pub(crate) watched: AtomicBool,
    /// The tail is in the inode pool's chunk, not right after the head
    /// (see the module comment); fixed at construction.
    tail_apart: bool,
    pub(crate) sb: *const SuperBlock,
}

/// The rest of an inode (see the module comment).
#[repr(C, align(64))]
pub struct InodeTail {
    pub(crate) refcount: RefCount,
    pub(crate) body: InodeBody,
}

// Layout of the real atomics (loom's model atomics are larger).
#[cfg(not(loom))]
const _: () = {
    assert!(
        core::mem::size_of::<Inode>() == 128,
        "the attributes are one adjacent-line pair"
    );
    assert!(
        core::mem::offset_of!(Inode, mtime) + core::mem::size_of::<AtomicTime>() <= 64,
        "the often-changed attributes share line 0 with the seqcount"
    );
    assert!(
        core::mem::size_of::<InodeTail>() == 64,
        "an inode is three cache lines"
    );
};

impl core::ops::Deref for Inode {
    type Target = InodeTail;

    #[inline(always)]
    fn deref(&self) -> &InodeTail {
        // SAFETY: every inode is built with its tail (`write_at`),
        // which lives and dies with it (`Drop for Inode`).
        unsafe { &*self.tail_ptr() }
    }
}

impl Drop for Inode {
    fn drop(&mut self) {
        // SAFETY: the tail lives and dies with its head; dropped once,
        // here.
        unsafe { core::ptr::drop_in_place(self.tail_ptr() as *mut InodeTail) }
    }
}

// SAFETY: every field is either atomic, lock-protected, immutable after
// construction, or (`sb`) a pointer to a superblock that outlives its inodes
// and is itself Sync.
unsafe impl Send for Inode {}
// SAFETY: as above.
unsafe impl Sync for Inode {}
// SAFETY: the refcount is atomic and the body's state is behind its
// locks or immutable (reached only through its inode).
unsafe impl Send for InodeTail {}
// SAFETY: as above.
unsafe impl Sync for InodeTail {}

/// What tmpfs adds to a directory's size per entry ("." and ".." count).
pub const BOGO_DIRENT_SIZE: u64 = 20;

/// Current wall-clock time at the kernel's timestamp granularity (the
/// coarse clock, as Linux's `current_time`): cheap enough to read inside a
/// directory's critical section, where the precise clock showed up at 6% of
/// create/unlink profiles on this VM.
pub fn now() -> Timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    Timespec {
        sec: ts.tv_sec,
        nsec: ts.tv_nsec,
    }
}

impl crate::mem::slab::SlabPool for Inode {
    const POOL: usize = crate::mem::slab::INODE_POOL;
    const TAIL_BYTES: usize = core::mem::size_of::<InodeTail>();
}

impl Inode {
    /// A new inode of the inode pool, its tail apart, with no reference
    /// (`refcount.get()` takes the first). `group` is the memory group
    /// charged for it.
    pub(crate) fn alloc(
        sb: *const SuperBlock,
        ino: u64,
        mode: u32,
        (uid, gid): (u32, u32),
        body: InodeBody,
        group: u32,
    ) -> *mut Inode {
        let p = crate::mem::slab::alloc_in_place::<Inode>();
        // SAFETY: a free object of the inode pool that only we own (a
        // previous inode there was dropped, tail included, when freed).
        unsafe { Self::write_at(p, true, sb, ino, mode, (uid, gid), body, group) };
        p
    }

    /// Builds a new inode with no reference at `at` in place (an inode
    /// built on the stack and moved cost a `memcpy` per create), its tail
    /// among its slab chunk's tails if `tail_apart` (an object of the
    /// inode pool), else right after it (an anonymous node's).
    ///
    /// # Safety
    /// `at` and its tail are valid for writes, aligned, and hold no live
    /// value; nobody else can reach them yet.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn write_at(
        at: *mut Inode,
        tail_apart: bool,
        sb: *const SuperBlock,
        ino: u64,
        mode: u32,
        (uid, gid): (u32, u32),
        body: InodeBody,
        group: u32,
    ) {
        let tail = if tail_apart {
            crate::mem::slab::tail_of(at) as *mut InodeTail
        } else {
            at.wrapping_add(1) as *mut InodeTail
        };
        let t = now();
        let nlink = if s_isdir(mode) { 2 } else { 1 };
        let size = if s_isdir(mode) {
            2 * BOGO_DIRENT_SIZE
        } else {
            0
        };
        // SAFETY: the caller's contract; not shared yet.
        unsafe {
            at.write(Inode {
                attr_seq: SeqCount::new(),
                mode: AtomicU32::new(mode),
                uid: AtomicU32::new(uid),
                gid: AtomicU32::new(gid),
                nlink: AtomicU32::new(nlink),
                size: AtomicU64::new(size),
                blocks: AtomicU64::new(0),
                atime: AtomicTime::new(t),
                mtime: AtomicTime::new(t),
                ctime: AtomicTime::new(t),
                ino,
                private: AtomicPtr::new(core::ptr::null_mut()),
                btime_sec: t.sec,
                btime_nsec: t.nsec as u32,
                write_hint: AtomicU8::new(0),
                watched: AtomicBool::new(false),
                tail_apart,
                sb,
                group,
            });
            tail.write(InodeTail {
                refcount: RefCount::new(0),
                body,
            });
        }
    }

    /// Where the tail is (see the module comment).
    #[inline(always)]
    fn tail_ptr(&self) -> *const InodeTail {
        if self.tail_apart {
            crate::mem::slab::tail_of(self) as *const InodeTail
        } else {
            (self as *const Inode).wrapping_add(1) as *const InodeTail
        }
    }

    /// The allocated 512-byte blocks of an inode nobody references any
    /// more (its kill was won): no writer is left, so one load replaces
    /// `attr()`'s seqcount-validated copy of every attribute.
    #[inline]
    pub(crate) fn blocks_of_dead(&self) -> i64 {
        // Relaxed: the caller's won kill (an Acquire, `RefCount::try_kill`
        // or the node's dentry count) pairs with every holder's Release
        // put, so their block updates happened before this load.
        self.blocks.load(Ordering::Relaxed) as i64
    }

    /// A consistent copy of the attributes, taken without writing anything.
    pub fn attr(&self) -> InodeAttr {
        loop {
            let seq = self.attr_seq.read_begin();
            // Relaxed loads: ordered by the seqcount's acquire and retry fence.
            let a = InodeAttr {
                ino: self.ino,
                mode: self.mode.load(Ordering::Relaxed) & !MODE_HIDDEN_BITS,
                uid: self.uid.load(Ordering::Relaxed),
                gid: self.gid.load(Ordering::Relaxed),
                nlink: self.nlink.load(Ordering::Relaxed),
                size: self.size.load(Ordering::Relaxed),
                blocks: self.blocks.load(Ordering::Relaxed),
                rdev: 0,
                atime: self.atime.load(),
                mtime: self.mtime.load(),
                ctime: self.ctime.load(),
                btime: self.btime(),
            };
            if !self.attr_seq.read_retry(seq) {
                return InodeAttr {
                    rdev: self.rdev(a.mode),
                    ..a
                };
            }
        }
    }

    /// The attributes as a `Stat`, copied straight out of the atomics under
    /// the seqcount (no intermediate copy on the stat hot path). The
    /// device number (its superblock's, immutable) is read after the copy:
    /// not live across it, it is not spilled (session 8: 4 instructions per
    /// stat).
    #[inline]
    pub fn stat(&self) -> Stat {
        let st = loop {
            // Not waited on: a section begun inside a write fails the
            // retry check, and the copy is tried again.
            let seq = self.attr_seq.read_begin_even();
            // Relaxed loads: ordered by the seqcount (see `attr`).
            let st = Stat {
                dev: 0,
                ino: self.ino,
                mode: self.mode.load(Ordering::Relaxed),
                nlink: self.nlink.load(Ordering::Relaxed),
                uid: self.uid.load(Ordering::Relaxed),
                gid: self.gid.load(Ordering::Relaxed),
                rdev: 0,
                size: self.size.load(Ordering::Relaxed) as i64,
                blksize: crate::fs::BLOCK_SIZE as i64,
                blocks: self.blocks.load(Ordering::Relaxed) as i64,
                atime: self.atime.load(),
                mtime: self.mtime.load(),
                ctime: self.ctime.load(),
            };
            if !self.attr_seq.read_retry(seq) {
                break st;
            }
        };
        let rdev = self.rdev(st.mode);
        Stat {
            dev: self.dev(),
            mode: st.mode & !MODE_HIDDEN_BITS,
            rdev,
            ..st
        }
    }

    /// Sets owner and mode (type bits included) of an inode no other
    /// thread can reach yet (allocated, not yet named): plain stores, the
    /// naming publishes them.
    pub(crate) fn init_owner(&self, mode: u32, uid: u32, gid: u32) {
        debug_assert_eq!(self.file_type(), mode & S_IFMT);
        // Relaxed: published by the Release that links the inode's dentry.
        self.mode.store(mode, Ordering::Relaxed);
        self.uid.store(uid, Ordering::Relaxed);
        self.gid.store(gid, Ordering::Relaxed);
    }

    /// (mode, uid, gid): what a permission check needs. The mode includes
    /// `MODE_ACL_BITS`: pass it to `Inode::permission_as`, or mask them.
    pub fn perm_attr(&self) -> (u32, u32, u32) {
        loop {
            let seq = self.attr_seq.read_begin();
            // Relaxed loads: ordered by the seqcount (see `attr`).
            let r = (
                self.mode.load(Ordering::Relaxed),
                self.uid.load(Ordering::Relaxed),
                self.gid.load(Ordering::Relaxed),
            );
            if !self.attr_seq.read_retry(seq) {
                return r;
            }
        }
    }

    /// The `MODE_ACL_BITS` of an inode being freed (no writer can run):
    /// a plain load, no seqcount.
    pub(crate) fn acl_bits_at_rest(&self) -> u32 {
        // Relaxed: the inode's last put ordered every earlier write.
        self.mode.load(Ordering::Relaxed) & MODE_ACL_BITS
    }

    /// The link count of an inode being freed (no writer can run).
    pub(crate) fn nlink_at_rest(&self) -> u32 {
        // Relaxed: the inode's last put ordered every earlier write.
        self.nlink.load(Ordering::Relaxed)
    }

    /// Birth time (statx's btime), fixed at creation.
    pub(crate) fn btime(&self) -> Timespec {
        Timespec {
            sec: self.btime_sec,
            nsec: i64::from(self.btime_nsec),
        }
    }

    /// F_GET_RW_HINT: the write-life hint last set (0, "not set", at first).
    pub(crate) fn write_hint(&self) -> u64 {
        // Relaxed: a value on its own; nothing is published with it.
        u64::from(self.write_hint.load(Ordering::Relaxed))
    }

    /// F_SET_RW_HINT of a valid hint (at most `RWH_WRITE_LIFE_EXTREME`).
    pub(crate) fn set_write_hint(&self, hint: u64) {
        debug_assert!(hint <= RWH_WRITE_LIFE_EXTREME);
        // Relaxed: as `write_hint`.
        self.write_hint.store(hint as u8, Ordering::Relaxed);
    }

    /// atime_needs_update and touch_atime for a read-like access through a
    /// mount with flags `mnt_flags` (a read, a listing, a readlink, a
    /// symlink followed): noatime (and nodiratime for a directory) never
    /// writes, nor does a file with FS_NOATIME_FL; relatime writes only if atime is not newer than mtime or
    /// ctime or is more than a day old, so repeated reads do not dirty the
    /// inode; strictatime writes whenever the time has moved.
    pub(crate) fn touch_atime(&self, mnt_flags: u32) {
        if let Some(t) = self.atime_update_due(mnt_flags) {
            self.update_attr(|w| w.set_atime(t));
        }
    }

    /// atime_needs_update: the time `touch_atime` would write, or None if
    /// nothing is due.
    pub(crate) fn atime_update_due(&self, mnt_flags: u32) -> Option<Timespec> {
        use crate::mount::flags::{allows_atime, MNT_RELATIME};
        // SAFETY: an inode's superblock outlives it.
        if !allows_atime(mnt_flags, self.is_dir()) || unsafe { &*self.sb }.is_readonly() {
            return None;
        }
        // Relaxed: a hint, as Linux's unlocked test of S_NOATIME.
        if self.mode.load(Ordering::Relaxed) & flags::MODE_NOATIME != 0 {
            return None;
        }
        let a = self.attr();
        let t = now();
        // Nothing to write if atime already reads now.
        if a.atime == t {
            return None;
        }
        (mnt_flags & MNT_RELATIME == 0
            || a.atime <= a.mtime
            || a.atime <= a.ctime
            || t.sec - a.atime.sec >= 24 * 3600)
            .then_some(t)
    }

    /// The file type bits, which never change.
    pub fn file_type(&self) -> u32 {
        // Relaxed: the type bits are immutable after construction.
        self.mode.load(Ordering::Relaxed) & S_IFMT
    }

    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }

    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The device number of the inode's superblock (immutable).
    #[inline]
    pub fn dev(&self) -> u64 {
        // SAFETY: an inode's superblock outlives it.
        unsafe { &*self.sb }.dev
    }

    /// Changes attributes: `f` runs inside a seqcount write section that
    /// excludes other writers (`SeqCount::write_lock`) and edits through the
    /// `AttrWriter`. `f` must not block or take locks (writers spin).
    pub fn update_attr<R>(&self, f: impl FnOnce(&mut AttrWriter<'_>) -> R) -> R {
        self.attr_seq.write_lock();
        let r = f(&mut AttrWriter { inode: self });
        self.attr_seq.write_end();
        r
    }

    /// The device number (st_rdev) of this inode, whose mode is `mode`:
    /// a device node's, else 0. Only a device's body is read, so the
    /// attributes of everything else (the hot stats) stay on their two
    /// lines.
    #[inline]
    pub(crate) fn rdev(&self, mode: u32) -> u64 {
        // The type first, as its own branch: matched as a pair, the
        // compiler was free to load the body's discriminant first.
        if !matches!(mode & S_IFMT, S_IFCHR | S_IFBLK) {
            return 0;
        }
        match &self.body {
            InodeBody::Special(rdev) => *rdev,
            _ => 0,
        }
    }

    /// The backend's state for this inode (`private`), null if it keeps
    /// none.
    #[inline]
    pub(crate) fn private(&self) -> *const () {
        // Acquire: pairs with `set_private`'s Release, so the backend's
        // state written before it is seen whole.
        self.private.load(Ordering::Acquire)
    }

    /// Attaches the backend's state: once, by the backend that made the
    /// inode, before the inode is reachable by anyone else (or, for a
    /// mount's root, in `Filesystem::init_root`).
    pub(crate) fn set_private(&self, p: *const ()) {
        debug_assert!(self.private().is_null());
        // Release: pairs with `private`'s Acquire.
        self.private.store(p as *mut (), Ordering::Release);
    }

    /// Detaches the backend's state (its `evict`): later calls find none.
    /// A caller that loaded it before keeps using it, so the backend frees
    /// it only after such callers' epoch guards are gone.
    pub(crate) fn clear_private(&self) {
        // Release, paired with `private`'s Acquire: this is the unlink
        // of the epoch rule (`sync/epoch.rs`), so it must not be seen
        // after the retire the backend makes next; the collector's
        // barrier at the retire's seal then hides the old pointer from
        // every reader that enters later.
        self.private.store(core::ptr::null_mut(), Ordering::Release);
    }

    pub(crate) fn dir_index(&self) -> Option<&RwLock<DirIndex>> {
        match &self.body {
            InodeBody::Directory(d) => Some(d),
            _ => None,
        }
    }

    pub(crate) fn file_data(&self) -> Option<&RwLock<FileData>> {
        match &self.body {
            InodeBody::Regular(d) => Some(d),
            _ => None,
        }
    }

    pub(crate) fn fifo_pipe(&self) -> Option<&crate::anon::pipe::Pipe> {
        match &self.body {
            InodeBody::Fifo(p) => Some(p),
            _ => None,
        }
    }

    pub(crate) fn symlink_target(&self) -> Option<&[u8]> {
        match &self.body {
            InodeBody::Symlink(t) => Some(t),
            _ => None,
        }
    }
}

/// Write access to an inode's attributes inside `Inode::update_attr`.
pub struct AttrWriter<'a> {
    inode: &'a Inode,
}

// Relaxed stores throughout: the enclosing seqcount write section's release
// fence and final release store order them for readers.
impl AttrWriter<'_> {
    pub fn get(&self) -> InodeAttr {
        let i = self.inode;
        let mode = i.mode.load(Ordering::Relaxed);
        InodeAttr {
            ino: i.ino,
            mode: mode & !MODE_HIDDEN_BITS,
            uid: i.uid.load(Ordering::Relaxed),
            gid: i.gid.load(Ordering::Relaxed),
            nlink: i.nlink.load(Ordering::Relaxed),
            size: i.size.load(Ordering::Relaxed),
            blocks: i.blocks.load(Ordering::Relaxed),
            rdev: i.rdev(mode),
            atime: i.atime.load(),
            mtime: i.mtime.load(),
            ctime: i.ctime.load(),
            btime: i.btime(),
        }
    }
    /// Sets the permission bits; the type, the ACL bits and the flags stay.
    pub fn set_mode(&mut self, mode: u32) {
        let kept = self.inode.mode.load(Ordering::Relaxed) & (S_IFMT | MODE_HIDDEN_BITS);
        self.inode.mode.store(
            kept | (mode & !(S_IFMT | MODE_HIDDEN_BITS)),
            Ordering::Relaxed,
        );
    }
    /// The `MODE_ACL_BITS` now (inode/acl.rs: chmod's test, inside its
    /// write section, of whether an access ACL must follow the mode).
    pub(crate) fn acl_bits(&self) -> u32 {
        self.inode.mode.load(Ordering::Relaxed) & MODE_ACL_BITS
    }
    /// Sets or clears one of `MODE_ACL_BITS` (inode/acl.rs only, holding
    /// the inode's ACL writer lock).
    pub(crate) fn set_acl_bit(&mut self, bit: u32, on: bool) {
        debug_assert_eq!(bit & !MODE_ACL_BITS, 0);
        let m = self.inode.mode.load(Ordering::Relaxed);
        let m = if on { m | bit } else { m & !bit };
        self.inode.mode.store(m, Ordering::Relaxed);
    }
    pub fn set_uid(&mut self, uid: u32) {
        self.inode.uid.store(uid, Ordering::Relaxed);
    }
    pub fn set_gid(&mut self, gid: u32) {
        self.inode.gid.store(gid, Ordering::Relaxed);
    }
    pub fn set_nlink(&mut self, n: u32) {
        let old = self.inode.nlink.load(Ordering::Relaxed);
        self.inode.nlink.store(n, Ordering::Relaxed);
        if (old == 0) != (n == 0) {
            // SAFETY: an inode's superblock outlives it.
            let sb = unsafe { &*self.inode.sb };
            sb.orphans.add(if n == 0 { 1 } else { -1 });
        }
    }
    /// Adds `entries` (possibly negative) directory entries to the size.
    pub fn add_dir_entries(&mut self, entries: i64) {
        let size =
            self.inode.size.load(Ordering::Relaxed) as i64 + entries * BOGO_DIRENT_SIZE as i64;
        self.inode.size.store(size as u64, Ordering::Relaxed);
    }

    pub fn set_size(&mut self, size: u64, blocks: u64) {
        self.inode.size.store(size, Ordering::Relaxed);
        self.inode.blocks.store(blocks, Ordering::Relaxed);
    }
    pub fn set_atime(&mut self, t: Timespec) {
        self.inode.atime.store(t);
    }
    pub fn set_mtime(&mut self, t: Timespec) {
        self.inode.mtime.store(t);
    }
    pub fn set_ctime(&mut self, t: Timespec) {
        self.inode.ctime.store(t);
    }
}
