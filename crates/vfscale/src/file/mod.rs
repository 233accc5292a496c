//! Open files (open file descriptions) and per-process fd tables.
//!
//! Invariants:
//! - An `OpenFile` holds one reference on its dentry and one on its mount for
//!   its whole life; `fput` of the last reference releases both.
//! - An fd table slot owns one file reference (fdtable.rs: changes under the
//!   table's mutex, lookups lock-free).
//! - Open files live in a type-stable slab pool and are freed at once (no
//!   epoch delay): a lock-free fd lookup may still add to the count of a
//!   freed or reused file, so the count is re-initialised with an atomic
//!   store (`RefCount::reinit`), never overwritten by a plain write.
//! - `pos` (the file offset, or the readdir cookie of a directory) is under
//!   its own mutex, like Linux's f_pos_lock.

use crate::dcache::dentry::Dentry;
use crate::inode::Inode;
use crate::mount::Mount;
use crate::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use crate::sync::lock::Mutex;
use crate::sync::refcount::RefCount;
use crate::vfs::VfsInner;
use core::ptr;

mod fdtable;
pub use fdtable::FdTable;

/// The description may be read from.
pub const FMODE_READ: u32 = 1;
/// The description may be written to.
pub const FMODE_WRITE: u32 = 2;
/// An O_PATH description: a location only.
pub const FMODE_PATH: u32 = 4;
/// `private` is a `Pipe` (an anonymous pipe end or an open FIFO) whose
/// reader/writer counts this file is in.
pub const FMODE_PIPE: u32 = 8;
/// `private` is a `Socket`.
pub const FMODE_SOCKET: u32 = 16;
/// `private` is an `EventFd` the file owns; `dentry`/`inode` are the
/// namespace's shared eventfd inode, not referenced.
pub const FMODE_EVENTFD: u32 = 32;
/// `dentry` is an `AnonInode` the file holds a reference on; `mnt` (the
/// anonymous mount) is not referenced.
pub const FMODE_ANON: u32 = 64;
/// The backend holds its file open for this description
/// (`Filesystem::open`); the final put releases it.
pub const FMODE_BACKEND: u32 = 128;
/// The description holds a unit of write access to its mount
/// (mount/write.rs), given back at its release: a regular file opened for
/// writing (Linux's FMODE_WRITER).
pub const FMODE_WRITER: u32 = 256;
/// The open that made the description created its file (Linux's
/// FMODE_CREATED, read by F_CREATED_QUERY).
pub const FMODE_CREATED: u32 = 512;
/// `private` is an `Epoll` the file owns a reference on (`Arc::into_raw`);
/// `dentry`/`inode` are the namespace's shared anonymous inode, as for an
/// eventfd (Linux's `anon_inode:[eventpoll]`).
pub const FMODE_EPOLL: u32 = 1024;
/// `private` is an `Inotify` the file owns a reference on
/// (`Arc::into_raw`), on the shared anonymous inode as an epoll (Linux's
/// `anon_inode:inotify`).
pub const FMODE_INOTIFY: u32 = 2048;
/// An O_PATH description open_tree(OPEN_TREE_CLONE) made at the root of
/// a detached tree (mount/anon.rs): its final put dissolves the tree if
/// it is still detached (Linux's FMODE_NEED_UNMOUNT).
pub const FMODE_NEED_UNMOUNT: u32 = 4096;
/// `private` is a `MountConfig` (fsopen's, mount/config.rs) the file owns
/// a reference on (`Arc::into_raw`), on the shared anonymous inode
/// (Linux's `anon_inode:[fscontext]`).
pub const FMODE_MOUNT_CONFIG: u32 = 8192;
/// Reads and writes go to the private object, not to file data.
pub const FMODE_STREAMS: u32 =
    FMODE_PIPE | FMODE_SOCKET | FMODE_EVENTFD | FMODE_EPOLL | FMODE_INOTIFY | FMODE_MOUNT_CONFIG;
/// On the namespace's one shared anonymous inode, unreferenced.
pub const FMODE_SHARED_ANON: u32 = FMODE_EVENTFD | FMODE_EPOLL | FMODE_INOTIFY | FMODE_MOUNT_CONFIG;
/// Any of these: the final put takes `release_special`.
pub const FMODE_SPECIAL: u32 = FMODE_STREAMS | FMODE_ANON | FMODE_NEED_UNMOUNT;

#[repr(C, align(64))]
pub struct OpenFile {
    // ---- line 0: read-mostly ----
    pub(crate) mnt: *const Mount,
    pub(crate) dentry: *const Dentry,
    pub(crate) inode: *const Inode,
    pub(crate) fmode: u32,
    /// Status flags settable after open (O_APPEND, O_NONBLOCK, ...).
    pub(crate) status: AtomicU32,
    /// Identity of the credentials that opened it (`Arc` address), for
    /// linkat(AT_EMPTY_PATH)'s same-credentials rule.
    pub(crate) opener: usize,
    /// The pipe, socket or eventfd behind the file (see the FMODE_* bits);
    /// null for plain files.
    pub(crate) private: *const (),
    /// The memory group charged for this open file.
    pub(crate) group: u32,
    /// The epoll items that watch this file (anon/epoll.rs), allocated at
    /// the first EPOLL_CTL_ADD of it and freed by its final put; null for
    /// a file no epoll ever watched. Only stream files can be watched.
    pub(crate) watchers: AtomicPtr<crate::anon::epoll::Watchers>,
    // ---- line 1: write-hot ----
    pub(crate) refcount: RefCount,
    pub(crate) pos: Mutex<u64>,
}

// Layout of the real atomics (loom's model atomics are larger).
#[cfg(not(loom))]
const _: () = {
    assert!(
        core::mem::offset_of!(OpenFile, refcount) == 64,
        "refcount on its own line"
    );
    assert!(core::mem::size_of::<OpenFile>() == 128);
};

impl crate::mem::slab::SlabPool for OpenFile {
    const POOL: usize = crate::mem::slab::FILE_POOL;
}

// SAFETY: the raw pointers are references the file owns (see invariants);
// all mutable state is atomic or lock-protected.
unsafe impl Send for OpenFile {}
// SAFETY: as above.
unsafe impl Sync for OpenFile {}

impl OpenFile {
    pub fn inode(&self) -> &Inode {
        // SAFETY: the file's dentry reference keeps the inode alive.
        unsafe { &*self.inode }
    }

    /// The mount the file was opened through (the anonymous objects'
    /// internal mount for pipes, sockets and the like).
    pub fn mount(&self) -> &Mount {
        // SAFETY: the file references its mount, or it is the anonymous
        // mount, which lives as long as the namespace.
        unsafe { &*self.mnt }
    }

    pub fn status(&self) -> i32 {
        // Relaxed: a plain flag word; no data is published through it.
        self.status.load(Ordering::Relaxed) as i32
    }

    pub fn is_path(&self) -> bool {
        self.fmode & FMODE_PATH != 0
    }
}

/// An owned reference to an open file; dropping it without `fput` leaks.
#[derive(Debug, PartialEq, Eq)]
pub struct FileRef(pub(crate) *const OpenFile);

// SAFETY: the reference may be dropped (via fput) from any thread.
unsafe impl Send for FileRef {}

impl FileRef {
    pub fn file(&self) -> &OpenFile {
        // SAFETY: we own a reference.
        unsafe { &*self.0 }
    }

    /// Another reference to the same file (ours keeps it live).
    pub(crate) fn another(&self) -> FileRef {
        let ok = self.file().refcount.get();
        debug_assert!(ok);
        FileRef(self.0)
    }
}

impl VfsInner {
    /// A new open file with one reference; takes over the caller's dentry
    /// and mount references. `private`: the pipe, socket or eventfd the
    /// FMODE bits name (null for plain files).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn alloc_file(
        &self,
        mnt: *const Mount,
        dentry: *const Dentry,
        inode: *const Inode,
        fmode: u32,
        status: i32,
        opener: usize,
        private: *const (),
    ) -> FileRef {
        let group = self.charge(crate::reclaim::ObjKind::File);
        self.open_files.add(1);
        let f = crate::mem::slab::alloc_in_place::<OpenFile>();
        // SAFETY: `f` is an object of the file pool that nobody owns: every
        // field but the count is written plainly (lock-free lookups touch
        // only the count of a file they have not validated), the count with
        // an atomic store, last, so it publishes the others.
        unsafe {
            ptr::addr_of_mut!((*f).mnt).write(mnt);
            ptr::addr_of_mut!((*f).dentry).write(dentry);
            ptr::addr_of_mut!((*f).inode).write(inode);
            ptr::addr_of_mut!((*f).fmode).write(fmode);
            ptr::addr_of_mut!((*f).status).write(AtomicU32::new(status as u32));
            ptr::addr_of_mut!((*f).opener).write(opener);
            ptr::addr_of_mut!((*f).private).write(private);
            ptr::addr_of_mut!((*f).group).write(group);
            ptr::addr_of_mut!((*f).watchers).write(AtomicPtr::new(ptr::null_mut()));
            ptr::addr_of_mut!((*f).pos).write(Mutex::new(0));
            // The pool's memory only ever holds open files (or zeros), so
            // the count is a valid `RefCount` to store into.
            (*f).refcount.reinit(1);
        }
        FileRef(f)
    }

    /// Drops a file reference; the last one releases the dentry and mount.
    pub(crate) fn fput(&self, f: FileRef) {
        let file = f.file();
        if file.refcount.put() && file.refcount.try_kill() {
            self.final_fput(f);
        }
    }

    /// What follows the kill of a file: queued (defer/) or freed now.
    #[inline]
    pub(crate) fn final_fput(&self, f: FileRef) {
        if self.defer.active() {
            return self.defer_put(crate::defer::Deferred::File(f.0));
        }
        let file = f.file();
        if file.fmode & FMODE_SPECIAL != 0 {
            return self.release_special(f, false);
        }
        let (d, m) = (file.dentry, file.mnt);
        self.free_file(f);
        self.dput(d);
        self.mntput(m);
    }

    /// Drops many file references (process exit, close_range): with
    /// deferral on, the killed files are freed in batches of the queue's
    /// bound, each with consolidated locking; otherwise one `fput` each.
    pub(crate) fn fput_many(&self, files: Vec<FileRef>) {
        if !self.defer.batching() {
            for f in files {
                self.fput(f);
            }
            return;
        }
        let chunk = self.defer.max_entries();
        let mut dead = Vec::with_capacity(chunk.min(files.len()));
        for (i, f) in files.iter().enumerate() {
            // Teardown is bound by cache misses, and the kill is a locked
            // RMW that waits for its line: fetch the files ahead first.
            if let Some(next) = files.get(i + crate::defer::drain::AHEAD) {
                crate::mem::prefetch(next.0);
                crate::mem::prefetch((next.0 as *const u8).wrapping_add(64));
            }
            let file = f.file();
            let rc = &file.refcount;
            if rc.kill_if_sole() || (rc.put() && rc.try_kill()) {
                dead.push(crate::defer::Deferred::File(f.0));
                if dead.len() >= chunk {
                    self.drain_items(core::mem::take(&mut dead));
                }
            }
        }
        if !dead.is_empty() {
            self.drain_items(dead);
        }
    }

    /// `fput` by a caller that keeps using the file's dentry, inode or
    /// mount pointers under its epoch guard after the put: an anonymous
    /// node freed by it goes through the collector instead of at once.
    pub(crate) fn fput_in_guard(&self, f: FileRef) {
        let file = f.file();
        if file.refcount.put() && file.refcount.try_kill() {
            if file.fmode & FMODE_SPECIAL != 0 {
                return self.release_special(f, true);
            }
            let (d, m) = (file.dentry, file.mnt);
            self.free_file(f);
            self.dput(d);
            self.mntput(m);
        }
    }

    /// Frees a killed file's memory and uncounts it.
    pub(crate) fn free_file(&self, f: FileRef) {
        self.open_files.add(-1);
        self.release_file(f.0);
    }

    /// The per-file part of freeing a killed file: uncharges it and returns
    /// its memory to its pool (the file counts are the caller's; the
    /// batched drain updates them once per batch).
    pub(crate) fn release_file(&self, f: *const OpenFile) {
        // SAFETY: the caller won the kill, so the file is still ours to read
        // (and its dentry reference, put after this, keeps the inode).
        let file = unsafe { &*f };
        // __fput's fsnotify_close, first.
        if file.fmode & FMODE_PATH == 0 {
            let event = if file.fmode & FMODE_WRITE != 0 {
                crate::abi::IN_CLOSE_WRITE
            } else {
                crate::abi::IN_CLOSE_NOWRITE
            };
            self.notify_file(file, event);
        }
        // Its flock and OFD locks die with it (filelock/).
        self.file_locks.on_release(file);
        if file.fmode & FMODE_WRITER != 0 {
            // SAFETY: the file's mount reference, put after this, keeps it.
            unsafe { &*file.mnt }.drop_write();
        }
        if file.fmode & FMODE_BACKEND != 0 {
            // SAFETY: the dentry reference, put after this, keeps the inode,
            // and an inode's superblock outlives it.
            let (inode, sb) = unsafe { (&*file.inode, &*(*file.inode).sb) };
            sb.fs.release(sb, inode);
        }
        self.uncharge(file.group, crate::reclaim::ObjKind::File);
        // SAFETY: the caller won the kill and the file is in no fd table;
        // lock-free lookups that still hold its address only add to its
        // dead count, which the type-stable pool keeps a `RefCount`
        // (module invariants). Without the slab they hold epoch guards.
        #[cfg(not(vfscale_no_slab))]
        unsafe {
            crate::mem::slab::free(f as *mut OpenFile)
        };
        #[cfg(vfscale_no_slab)]
        unsafe {
            self.collector.retire_slab(f as *mut OpenFile)
        };
    }
}
