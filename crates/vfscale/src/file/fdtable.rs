//! A process's descriptor table, with lock-free lookups (Linux's
//! `files_lookup_fd_rcu` + `get_file_rcu`).
//!
//! Invariants:
//! - Every change (install, remove, replace, close-on-exec bits, the limit,
//!   growth, fork's copy, teardown) happens under `state`'s mutex. Lookups
//!   (`get`) take no lock and write nothing shared but the file's count.
//!   The limit and the first-free hint are atomics written under the
//!   mutex, so `has_free_slot` (open(O_CREAT)'s EMFILE check before it
//!   creates) reads them, and the slots, without it.
//! - A non-null slot owns one reference to its file. Slots are stored with
//!   Release after the file is initialised, so a lookup that loads the
//!   pointer with Acquire sees an initialised file.
//! - `current` points at the slot array in use. Growth copies the slots into
//!   a larger array under the mutex and publishes it; the replaced arrays
//!   stay allocated (in `FdState::retired`) until the table is dropped, so a
//!   lookup may read any array it loaded. Only `current` is written after a
//!   growth: a lookup's re-check reads `current` again.
//! - Open files come from a type-stable slab pool (`mem::slab::FILE_POOL`)
//!   and are freed without an epoch delay, so a lookup may add to the count
//!   of a file that was closed, freed and reused meanwhile. The protocol
//!   that makes this safe: take a reference with `RefCount::get_acquire`
//!   (it fails on a dead file and never resurrects one), then check that
//!   the slot of the current array still holds the same pointer; if not,
//!   put the reference and start again. A reference that passes the check
//!   is to the file in the slot at that moment (a reused object reinstalled
//!   in the same slot is that file). The loom model is in
//!   tests/loom_sync.rs (`fd_lookup_against_close_and_reuse`). Under
//!   `--cfg vfscale_no_slab` (AddressSanitizer) files go through the epoch
//!   instead, and lookups hold a guard.

use super::{FileRef, OpenFile};
use crate::abi::*;
use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use crate::vfs::VfsInner;
use core::ptr;

/// One array of slots; never shrinks in place.
struct SlotArray {
    slots: Box<[AtomicPtr<OpenFile>]>,
}

impl SlotArray {
    fn with_len(len: usize) -> Box<SlotArray> {
        Box::new(SlotArray {
            slots: (0..len).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
        })
    }
}

struct FdState {
    /// Close-on-exec bit per slot of the current array.
    cloexec: Vec<bool>,
    /// Arrays replaced by growth, kept for lookups that still read them.
    /// Boxed: lookups hold `&SlotArray`, which must not move when the
    /// vector grows.
    #[allow(clippy::vec_box)]
    retired: Vec<Box<SlotArray>>,
}

/// A fresh lock-owner id: positive, so F_GETLK can report it as `l_pid`.
fn next_lock_owner() -> u32 {
    use std::sync::atomic::AtomicU32;
    static NEXT: AtomicU32 = AtomicU32::new(1);
    // Relaxed: only uniqueness matters, which the RMW gives.
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0x7fff_ffff;
    id.max(1)
}

/// A process's descriptor table.
pub struct FdTable {
    state: Mutex<FdState>,
    /// Owner of the POSIX record locks taken through this table
    /// (`filelock/`): a positive 31-bit id, distinct from every other live
    /// table's unless 2^31 tables were made while this one lived.
    lock_owner: u32,
    /// The array in use: owned by the table (a `Box` turned raw).
    current: AtomicPtr<SlotArray>,
    /// The descriptor limit. Written under the mutex; read without it by
    /// `has_free_slot` (an answer that may be stale once returned, as a
    /// locked read's is once the lock is dropped).
    limit: AtomicUsize,
    /// No free slot below this index. Written under the mutex; read as
    /// `limit` is.
    first_free: AtomicUsize,
}

// SAFETY: the raw array pointer is owned by the table (freed in Drop) and
// only read through shared references; the files it holds are Sync.
unsafe impl Send for FdTable {}
// SAFETY: as above; all mutation is atomic or under the mutex.
unsafe impl Sync for FdTable {}

impl Drop for FdTable {
    fn drop(&mut self) {
        // Files still installed are the owner's to put (`take_all`); a table
        // dropped with files in it leaks their references, as before.
        // Relaxed: `&mut self`, no lookup can be running.
        let cur = self.current.load(Ordering::Relaxed);
        // SAFETY: `current` came from `Box::into_raw` and is freed once.
        drop(unsafe { Box::from_raw(cur) });
    }
}

impl FdTable {
    pub fn new(limit: usize) -> FdTable {
        FdTable {
            state: Mutex::new(FdState {
                cloexec: Vec::new(),
                retired: Vec::new(),
            }),
            current: AtomicPtr::new(Box::into_raw(SlotArray::with_len(0))),
            limit: AtomicUsize::new(limit),
            first_free: AtomicUsize::new(0),
            lock_owner: next_lock_owner(),
        }
    }

    /// The owner of the POSIX locks taken through this table.
    pub(crate) fn lock_owner(&self) -> u32 {
        self.lock_owner
    }

    /// The current array. Under the mutex it is the one writers change.
    fn array(&self) -> &SlotArray {
        // Acquire: pairs with the Release in `grow`, so the copied slots are
        // visible.
        // SAFETY: arrays stay allocated for the table's life (invariants).
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Makes slot `i` exist. Caller holds the mutex.
    fn grow(&self, st: &mut FdState, i: usize) {
        let old = self.array();
        if i < old.slots.len() {
            return;
        }
        let len = (i + 1).next_power_of_two().max(8);
        let new = SlotArray::with_len(len);
        for (n, o) in new.slots.iter().zip(old.slots.iter()) {
            // Relaxed: slots change only under the mutex, which we hold.
            n.store(o.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        st.cloexec.resize(len, false);
        // Release: pairs with the Acquire in `array`.
        let old = self.current.swap(Box::into_raw(new), Ordering::Release);
        // SAFETY: `old` came from `Box::into_raw`; it is kept, not freed.
        st.retired.push(unsafe { Box::from_raw(old) });
    }

    /// Stores `file` in slot `i` (which exists). Caller holds the mutex.
    fn set(&self, st: &mut FdState, i: usize, file: *const OpenFile, cloexec: bool) {
        st.cloexec[i] = cloexec;
        // Release: publishes the initialised file to lock-free lookups.
        self.array().slots[i].store(file as *mut OpenFile, Ordering::Release);
    }

    /// Empties slot `i`, returning what it held. Caller holds the mutex.
    fn take(&self, i: usize) -> Option<FileRef> {
        let slot = self.array().slots.get(i)?;
        // Relaxed: a lookup that still sees the file takes a reference of
        // its own (the count decides); nothing is published by emptying.
        let f = slot.swap(ptr::null_mut(), Ordering::Relaxed);
        (!f.is_null()).then_some(FileRef(f))
    }

    /// Whether slot `i` holds a file. Under the mutex exact; without it
    /// (`has_free_slot`) an advisory answer, like the limit's.
    fn occupied(&self, i: usize) -> bool {
        self.array()
            .slots
            .get(i)
            // Relaxed: under the mutex, which orders every store; outside
            // it, see `limit`.
            .is_some_and(|s| !s.load(Ordering::Relaxed).is_null())
    }

    /// Installs `file` at the lowest free descriptor >= `min`.
    #[inline(always)]
    pub(crate) fn install(
        &self,
        file: FileRef,
        cloexec: bool,
        min: usize,
    ) -> Result<Fd, (Errno, FileRef)> {
        let mut st = self.state.lock();
        // Relaxed (both): written only under the mutex, which we hold.
        let first_free = self.first_free.load(Ordering::Relaxed);
        let start = min.max(first_free);
        let limit = self.limit.load(Ordering::Relaxed);
        let Some(fd) = (start..limit).find(|&i| !self.occupied(i)) else {
            return Err((Errno::EMFILE, file));
        };
        self.grow(&mut st, fd);
        self.set(&mut st, fd, file.0, cloexec);
        if min <= first_free {
            // Relaxed: see the field.
            self.first_free.store(fd + 1, Ordering::Relaxed);
        }
        Ok(fd as Fd)
    }

    /// True if a descriptor below the limit is free. Without the mutex:
    /// open(O_CREAT) asks before creating, on every call.
    pub(crate) fn has_free_slot(&self) -> bool {
        // Relaxed (both): an advisory answer (see `limit`); the calling
        // thread's own changes are seen in program order.
        let first = self.first_free.load(Ordering::Relaxed);
        let limit = self.limit.load(Ordering::Relaxed);
        (first..limit).any(|i| !self.occupied(i))
    }

    /// A new reference to the file at `fd`, without taking the table's lock
    /// (see the module comment for the protocol).
    pub(crate) fn get(&self, vfs: &VfsInner, fd: Fd) -> SysResult<FileRef> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        // Files are freed through the epoch only without the slab.
        #[cfg(vfscale_no_slab)]
        let _guard = vfs.collector.enter();
        loop {
            let arr = self.array();
            // Acquire: pairs with the Release in `set`.
            let f = arr
                .slots
                .get(i)
                .ok_or(Errno::EBADF)?
                .load(Ordering::Acquire);
            if f.is_null() {
                return Err(Errno::EBADF);
            }
            // SAFETY: open files live in a type-stable pool (or, without the
            // slab, are retired through the epoch and we hold a guard), so
            // the memory is an `OpenFile`, possibly freed or reused.
            if !unsafe { &*f }.refcount.get_acquire() {
                // Closed meanwhile: the slot no longer holds it.
                continue;
            }
            let cur = self.array();
            // Acquire: as above; a changed array or slot means the
            // reference may be to another (reused) file.
            if ptr::eq(cur, arr) && cur.slots[i].load(Ordering::Acquire) == f {
                return Ok(FileRef(f));
            }
            vfs.fput(FileRef(f));
        }
    }

    /// Removes `fd`, returning its reference for the caller to put.
    pub(crate) fn remove(&self, fd: Fd) -> SysResult<FileRef> {
        let st = self.state.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let f = self.take(i).ok_or(Errno::EBADF)?;
        // Relaxed (both): written only under the mutex, which we hold.
        if i < self.first_free.load(Ordering::Relaxed) {
            self.first_free.store(i, Ordering::Relaxed);
        }
        drop(st);
        Ok(f)
    }

    /// Puts `file` at exactly `fd`, returning what was there.
    pub(crate) fn replace(
        &self,
        fd: Fd,
        file: FileRef,
        cloexec: bool,
    ) -> SysResult<Option<FileRef>> {
        let mut st = self.state.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        // Relaxed: written only under the mutex, which we hold.
        if i >= self.limit.load(Ordering::Relaxed) {
            return Err(Errno::EBADF);
        }
        self.grow(&mut st, i);
        let old = self.take(i);
        self.set(&mut st, i, file.0, cloexec);
        Ok(old)
    }

    pub(crate) fn set_cloexec(&self, fd: Fd, on: bool) -> SysResult<()> {
        let mut st = self.state.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        if !self.occupied(i) {
            return Err(Errno::EBADF);
        }
        st.cloexec[i] = on;
        Ok(())
    }

    pub(crate) fn is_cloexec(&self, fd: Fd) -> SysResult<bool> {
        let st = self.state.lock();
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        if !self.occupied(i) {
            return Err(Errno::EBADF);
        }
        Ok(st.cloexec[i])
    }

    /// Descriptors in use within [first, last].
    pub(crate) fn open_in(&self, first: usize, last: usize) -> Vec<Fd> {
        let _st = self.state.lock();
        let len = self.array().slots.len();
        (first..=last.min(len.saturating_sub(1)))
            .filter(|&i| self.occupied(i))
            .map(|i| i as Fd)
            .collect()
    }

    /// A copy for fork: every slot's file gains a reference.
    pub(crate) fn duplicate(&self) -> FdTable {
        let st = self.state.lock();
        // Relaxed: written only under the mutex, which we hold.
        let copy = FdTable::new(self.limit.load(Ordering::Relaxed));
        let mut cst = copy.state.lock();
        let arr = self.array();
        if !arr.slots.is_empty() {
            copy.grow(&mut cst, arr.slots.len() - 1);
        }
        for (i, s) in arr.slots.iter().enumerate() {
            // Relaxed: under our mutex.
            let f = s.load(Ordering::Relaxed);
            if !f.is_null() {
                // The slot's reference, lent to make another.
                let r = FileRef(f).another();
                copy.set(&mut cst, i, r.0, st.cloexec[i]);
            }
        }
        // Relaxed: both tables' mutexes are held.
        copy.first_free
            .store(self.first_free.load(Ordering::Relaxed), Ordering::Relaxed);
        drop(cst);
        copy
    }

    /// Empties the table, returning every reference for the caller to put.
    pub(crate) fn take_all(&self) -> Vec<FileRef> {
        let _st = self.state.lock();
        // Relaxed: under the mutex.
        self.first_free.store(0, Ordering::Relaxed);
        let len = self.array().slots.len();
        (0..len).filter_map(|i| self.take(i)).collect()
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        let _st = self.state.lock();
        // Relaxed: written under the mutex; readers see it as `limit` says.
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub(crate) fn limit(&self) -> usize {
        // Relaxed: see the field.
        self.limit.load(Ordering::Relaxed)
    }
}
