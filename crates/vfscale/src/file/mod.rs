//! Open files (open file descriptions) and per-process fd tables.
//!
//! Invariants:
//! - An `OpenFile` holds one reference on its dentry and one on its mount for
//!   its whole life; `fput` of the last reference releases both.
//! - An fd table slot owns one file reference; the table's mutex protects the
//!   slot vector (a per-process lock: threads of different processes never
//!   share it).
//! - `pos` (the file offset, or the readdir cookie of a directory) is under
//!   its own mutex, like Linux's f_pos_lock.

use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::inode::Inode;
use crate::mount::Mount;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::lock::Mutex;
use crate::sync::refcount::RefCount;
use crate::vfs::VfsInner;

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
/// Reads and writes go to the private object, not to file data.
pub const FMODE_STREAMS: u32 = FMODE_PIPE | FMODE_SOCKET | FMODE_EVENTFD;
/// Any of these: the final put takes `release_special`.
pub const FMODE_SPECIAL: u32 = FMODE_PIPE | FMODE_SOCKET | FMODE_EVENTFD | FMODE_ANON;

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
    _line0_end: [u8; 12],
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
}

impl VfsInner {
    /// A new open file with one reference; takes over the caller's dentry
    /// and mount references. `private`: the pipe, socket or eventfd the
    /// FMODE bits name (null for plain files).
    #[allow(clippy::too_many_arguments)]
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
        self.stats.files.inc();
        let group = self.charge(crate::reclaim::ObjKind::File);
        self.open_files.add(1);
        FileRef(Box::into_raw(Box::new(OpenFile {
            mnt,
            dentry,
            inode,
            fmode,
            status: AtomicU32::new(status as u32),
            opener,
            private,
            group,
            _line0_end: [0; 12],
            refcount: RefCount::new(1),
            pos: Mutex::new(0),
        })))
    }

    pub(crate) fn fget(&self, f: &FileRef) -> FileRef {
        let ok = f.file().refcount.get();
        debug_assert!(ok);
        FileRef(f.0)
    }

    /// Drops a file reference; the last one releases the dentry and mount.
    pub(crate) fn fput(&self, f: FileRef) {
        let file = f.file();
        if file.refcount.put() && file.refcount.try_kill() {
            if file.fmode & FMODE_SPECIAL != 0 {
                return self.release_special(f, false);
            }
            let (d, m) = (file.dentry, file.mnt);
            self.free_file(f);
            self.dput(d);
            self.mntput(m);
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
        self.stats.files.dec();
        self.uncharge(f.file().group, crate::reclaim::ObjKind::File);
        self.open_files.add(-1);
        // SAFETY: the caller won the kill; fd tables hand out references
        // only under their lock from slots that own one, so nobody else can
        // reach the file.
        drop(unsafe { Box::from_raw(f.0 as *mut OpenFile) });
    }
}

struct Slot {
    file: FileRef,
    cloexec: bool,
}

/// A process's descriptor table.
pub struct FdTable {
    slots: Mutex<FdSlots>,
}

struct FdSlots {
    slots: Vec<Option<Slot>>,
    limit: usize,
    /// No free slot below this index.
    first_free: usize,
}

impl FdTable {
    pub fn new(limit: usize) -> FdTable {
        FdTable {
            slots: Mutex::new(FdSlots {
                slots: Vec::new(),
                limit,
                first_free: 0,
            }),
        }
    }

    /// Installs `file` at the lowest free descriptor >= `min`.
    pub(crate) fn install(
        &self,
        file: FileRef,
        cloexec: bool,
        min: usize,
    ) -> Result<Fd, (Errno, FileRef)> {
        let mut t = self.slots.lock();
        let start = min.max(t.first_free);
        let fd = (start..t.limit).find(|&i| t.slots.get(i).is_none_or(|s| s.is_none()));
        let Some(fd) = fd else {
            return Err((Errno::EMFILE, file));
        };
        if t.slots.len() <= fd {
            t.slots.resize_with(fd + 1, || None);
        }
        t.slots[fd] = Some(Slot { file, cloexec });
        if min <= t.first_free {
            t.first_free = fd + 1;
        }
        Ok(fd as Fd)
    }

    /// True if a descriptor below the limit is free.
    pub(crate) fn has_free_slot(&self) -> bool {
        let t = self.slots.lock();
        let first = t.first_free;
        (first..t.limit).any(|i| t.slots.get(i).is_none_or(|s| s.is_none()))
    }

    /// A new reference to the file at `fd`.
    pub(crate) fn get(&self, vfs: &VfsInner, fd: Fd) -> SysResult<FileRef> {
        let t = self.slots.lock();
        match usize::try_from(fd)
            .ok()
            .and_then(|i| t.slots.get(i))
            .and_then(|s| s.as_ref())
        {
            Some(s) => Ok(vfs.fget(&s.file)),
            None => Err(Errno::EBADF),
        }
    }

    /// Removes `fd`, returning its reference for the caller to put.
    pub(crate) fn remove(&self, fd: Fd) -> SysResult<FileRef> {
        let mut t = self.slots.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let slot = t
            .slots
            .get_mut(i)
            .and_then(|s| s.take())
            .ok_or(Errno::EBADF)?;
        t.first_free = t.first_free.min(i);
        Ok(slot.file)
    }

    /// Puts `file` at exactly `fd`, returning what was there.
    pub(crate) fn replace(
        &self,
        fd: Fd,
        file: FileRef,
        cloexec: bool,
    ) -> SysResult<Option<FileRef>> {
        let mut t = self.slots.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        if i >= t.limit {
            return Err(Errno::EBADF);
        }
        if t.slots.len() <= i {
            t.slots.resize_with(i + 1, || None);
        }
        let old = t.slots[i].replace(Slot { file, cloexec });
        Ok(old.map(|s| s.file))
    }

    pub(crate) fn set_cloexec(&self, fd: Fd, on: bool) -> SysResult<()> {
        let mut t = self.slots.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        match t.slots.get_mut(i).and_then(|s| s.as_mut()) {
            Some(s) => {
                s.cloexec = on;
                Ok(())
            }
            None => Err(Errno::EBADF),
        }
    }

    pub(crate) fn is_cloexec(&self, fd: Fd) -> SysResult<bool> {
        let t = self.slots.lock();
        usize::try_from(fd)
            .ok()
            .and_then(|i| t.slots.get(i))
            .and_then(|s| s.as_ref())
            .map(|s| s.cloexec)
            .ok_or(Errno::EBADF)
    }

    /// Descriptors in use within [first, last].
    pub(crate) fn open_in(&self, first: usize, last: usize) -> Vec<Fd> {
        let t = self.slots.lock();
        (first..=last.min(t.slots.len().saturating_sub(1)))
            .filter(|&i| t.slots.get(i).is_some_and(|s| s.is_some()))
            .map(|i| i as Fd)
            .collect()
    }

    /// A copy for fork: every slot's file gains a reference.
    pub(crate) fn duplicate(&self, vfs: &VfsInner) -> FdTable {
        let t = self.slots.lock();
        let slots = t
            .slots
            .iter()
            .map(|s| {
                s.as_ref().map(|s| Slot {
                    file: vfs.fget(&s.file),
                    cloexec: s.cloexec,
                })
            })
            .collect();
        FdTable {
            slots: Mutex::new(FdSlots {
                slots,
                limit: t.limit,
                first_free: t.first_free,
            }),
        }
    }

    /// Empties the table, returning every reference for the caller to put.
    pub(crate) fn take_all(&self) -> Vec<FileRef> {
        let mut t = self.slots.lock();
        t.first_free = 0;
        t.slots.drain(..).flatten().map(|s| s.file).collect()
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        self.slots.lock().limit = limit;
    }

    pub(crate) fn limit(&self) -> usize {
        self.slots.lock().limit
    }
}
