//! The per-thread, per-`Vfs` queues of dead objects waiting to be freed.
//!
//! Layout: each `Vfs` owns a registry of slots, one per thread that ever
//! queued into it (`DeferQueues::slots`); the thread reaches its slots
//! through a thread-local list (`MINE`), keyed by the `Vfs`'s unique id
//! (never an address, which a later `Vfs` could reuse). A slot's queue is
//! under its own mutex: its owner takes it to push (uncontended: the line
//! stays in the owner's cache), a flusher on another thread to take the
//! batch. So:
//! - `Vfs::flush` (and umount, syncfs, `drop_caches`) drains every
//!   thread's slot of that `Vfs`, not only the caller's;
//! - the `Vfs`'s drop drains every slot before it tears the namespace down,
//!   so nothing queued outlives it (a slot holds only a `Weak` to its
//!   `Vfs`: a thread's leftover queue never keeps a namespace alive);
//! - a thread that exits drains its slots in its thread-local destructor
//!   (when the `Vfs` still lives; otherwise the `Vfs`'s drop already did),
//!   and a slot whose thread is gone is dropped from the registry by the
//!   next flush.
//!
//! The end-of-operation check reads one `const`-initialised thread-local
//! without a destructor (`PENDING`): a plain TLS load and a branch on the
//! stat path, which has nothing queued.
//!
//! Thread teardown: `PENDING`, `DRAINING`, `SCOPES` and `LAST` are `const`
//! cells without destructors, usable at any time, so they are read with
//! `with`; `MINE`, `SPARE` (and drain.rs's `SCRATCH`) have destructors and
//! are reached only with `try_with`, falling back when already gone, since
//! `MINE`'s own destructor drains.
//!
//! What queues: a final put inside a batch scope (`VfsInner::batch_scope`:
//! exit, close_range, umount, `drop_caches`), or any final put when
//! `VfsConfig::defer_single_puts` is set (the default); the outermost
//! scope's end drains.
//!
//! Lone puts (outside a batch scope) skip the mutex: they go to the slot's
//! owner-only buffer (`Slot::local`, at most `LOCAL_CAP` entries), and the
//! end of the operation frees them one by one with the inline free path
//! (`drain::free_one`; a batch of one gains nothing from grouping). Cost of
//! a queued lone put over an inline one: two TLS loads, a store into the
//! buffer and the end-of-call branch (docs/PERFORMANCE.md, issue 5). A put
//! that is its call's last act (`close`: `fput_ending_call`; unlink's name
//! reference: `ending_call`) skips the buffer when nothing is queued on the
//! thread: the drain that would run next would free exactly that one
//! object, so it is freed there, the same way (`drain::free_one` with the
//! thread marked draining).
//! Who may touch `local` (its ownership rule):
//! - the slot's owner thread, while it holds the slot's `Vfs` alive (inside
//!   an operation on it: `defer_put`, `drain_mine`, `flush_all`; or after
//!   upgrading `Slot::vfs` at thread exit);
//! - the `Vfs`'s drop (`drain_at_drop`), once its strong count is zero:
//!   then no owner holds it alive, and none can upgrade to it any more; the
//!   `Arc`'s release decrement / acquire fence orders the owner's writes
//!   before the drop's reads.
//!
//! Other threads' flushes never touch `local`: what it holds belongs to an
//! operation still running on its owner (every public entry point ends
//! with `VfsInner::op_end`), which frees it before returning. So
//! `Vfs::flush` completes the frees of every *finished* operation.

use super::drain;
use crate::dcache::dentry::Dentry;
use crate::file::{FileRef, OpenFile};
use crate::inode::Inode;
use crate::mount::Mount;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use crate::vfs::VfsInner;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::sync::{Arc, OnceLock, Weak};

/// A dead object waiting to be freed; the queue owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deferred {
    /// A killed open file (its dentry and mount references still held).
    File(*const OpenFile),
    /// A killed, unhashed dentry (its inode and parent references held).
    Dentry(*const Dentry),
    /// A killed inode.
    Inode(*const Inode),
    /// A killed, detached mount.
    Mount(*const Mount),
}

impl Deferred {
    /// Memory the object holds (for the byte bound): its own size, and an
    /// inode's file data.
    fn bytes(self) -> usize {
        match self {
            Deferred::File(_) => core::mem::size_of::<OpenFile>(),
            Deferred::Dentry(_) => crate::mem::slab::footprint::<Dentry>(),
            Deferred::Inode(i) => {
                // SAFETY: the queue owns the killed inode.
                let blocks = unsafe { &*i }.blocks_of_dead() as u64;
                crate::mem::slab::footprint::<Inode>().saturating_add(
                    usize::try_from(blocks.saturating_mul(512)).unwrap_or(usize::MAX),
                )
            }
            Deferred::Mount(_) => core::mem::size_of::<Mount>(),
        }
    }
}

#[derive(Default)]
struct Queue {
    items: Vec<Deferred>,
    bytes: usize,
}

/// Capacity of a slot's owner-only buffer of lone puts (also capped by
/// `defer_max_entries`); an operation that releases more drains early.
const LOCAL_CAP: usize = 16;

/// Up to this many lone puts are freed one by one; more go through the
/// grouped drain (`drain::drain_batch`).
const ONE_BY_ONE_MAX: usize = 4;

/// The owner-only buffer of lone puts (module doc, "Lone puts").
struct LocalPuts {
    items: [Deferred; LOCAL_CAP],
    len: usize,
    bytes: usize,
}

impl Default for LocalPuts {
    fn default() -> Self {
        LocalPuts {
            items: [Deferred::File(core::ptr::null()); LOCAL_CAP],
            len: 0,
            bytes: 0,
        }
    }
}

/// One thread's queue for one `Vfs`.
pub(crate) struct Slot {
    vfs: Weak<VfsInner>,
    queue: Mutex<Queue>,
    /// `queue.items.len()`, readable without the lock (a hint for
    /// `PENDING`). Relaxed everywhere: written under the mutex, read as a
    /// snapshot; it orders nothing.
    len: AtomicUsize,
    /// Lone puts of the operation running on the owner thread; see the
    /// module doc for who may touch it.
    local: UnsafeCell<LocalPuts>,
    /// `local.len`, readable by anyone (recounts, thread exit). Relaxed:
    /// written by whoever may touch `local`, read as a hint; `local`'s
    /// contents are ordered by the ownership rule, not by this.
    local_len: AtomicUsize,
}

// SAFETY: the raw pointers in the queue are dead objects the queue owns;
// any thread may free them (module invariant of `defer`).
unsafe impl Send for Slot {}
// SAFETY: as above; the queue is behind a mutex, and `local` is touched by
// one thread at a time under its ownership rule (module doc).
unsafe impl Sync for Slot {}

impl Slot {
    /// Swaps the queue with `into` (empty; its capacity becomes the
    /// queue's, so neither side reallocates in steady state).
    fn take_into(&self, into: &mut Vec<Deferred>) {
        let mut q = self.queue.lock();
        q.bytes = 0;
        self.len.store(0, Ordering::Relaxed);
        core::mem::swap(&mut q.items, into);
    }
}

/// The deferred-put state of one `Vfs`.
pub(crate) struct DeferQueues {
    /// Unique among all `Vfs` instances of the process.
    id: u64,
    pub(crate) enabled: bool,
    /// Queue lone final puts too, not only those inside a batch scope.
    single: bool,
    max_entries: usize,
    max_bytes: usize,
    /// `min(max_entries, LOCAL_CAP)`: the owner-only buffer drains there.
    local_cap: usize,
    /// Every thread's slot for this `Vfs` (cold: touched when a thread
    /// first queues, and by flushes).
    slots: Mutex<Vec<Arc<Slot>>>,
    /// The longest any queue of this `Vfs` has been (tests check the bound).
    high_water: AtomicUsize,
    /// The owning `Vfs`, for slots (set right after construction).
    owner: OnceLock<Weak<VfsInner>>,
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    /// Objects this thread queued that it has not seen drained (over all
    /// its slots; may overcount when another thread flushed them).
    static PENDING: Cell<usize> = const { Cell::new(0) };
    /// This thread is draining: its puts run inline.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    /// Batch scopes open on this thread (`VfsInner::batch_scope`).
    static SCOPES: Cell<u32> = const { Cell::new(0) };
    /// Drains at a queue's bound are held off (`VfsInner::hold_drains`):
    /// the thread holds a lock a drain may take (an LRU list's).
    static HELD: Cell<u32> = const { Cell::new(0) };
    /// The thread runs a call's last puts (`VfsInner::ending_call`).
    static ENDING: Cell<bool> = const { Cell::new(false) };
    static MINE: RefCell<ThreadSlots> = const { RefCell::new(ThreadSlots(Vec::new())) };
    /// The slot used last (`Vfs` id, slot): kept alive by `MINE`, reset
    /// whenever `MINE` drops a slot.
    static LAST: Cell<(u64, *const Slot)> = const { Cell::new((0, core::ptr::null())) };
    /// An empty batch vector to swap with a queue (keeps its capacity).
    static SPARE: Cell<Vec<Deferred>> = const { Cell::new(Vec::new()) };
}

/// The calling thread's slots, by `Vfs` id; drained when the thread exits.
struct ThreadSlots(Vec<(u64, Arc<Slot>)>);

impl Drop for ThreadSlots {
    fn drop(&mut self) {
        LAST.with(|l| l.set((0, core::ptr::null())));
        for (_, slot) in self.0.drain(..) {
            if slot.len.load(Ordering::Relaxed) == 0 && slot.local_len.load(Ordering::Relaxed) == 0
            {
                continue;
            }
            // The namespace is gone: its drop drained this slot already.
            if let Some(vfs) = slot.vfs.upgrade() {
                // We own `local` and hold the namespace (ownership rule).
                vfs.drain_local(&slot);
                vfs.drain_slot(&slot);
            }
        }
    }
}

impl DeferQueues {
    pub(crate) fn new(
        enabled: bool,
        single: bool,
        max_entries: usize,
        max_bytes: usize,
    ) -> DeferQueues {
        DeferQueues {
            // Relaxed: a unique number; nothing is published through it.
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            enabled,
            single,
            // A bound of 0 would mean "never queue": treat as 1; above
            // 2^24 as 2^24 (a batch's runs are counted in u32).
            max_entries: max_entries.clamp(1, 1 << 24),
            max_bytes: max_bytes.max(1),
            local_cap: max_entries.clamp(1, LOCAL_CAP),
            slots: Mutex::new(Vec::new()),
            high_water: AtomicUsize::new(0),
            owner: OnceLock::new(),
        }
    }

    /// The `Vfs`'s unique id (never reused by a later `Vfs`, unlike its
    /// address): thread-local caches key on it (`MINE`, `reclaim::CURRENT`).
    #[inline(always)]
    pub(crate) fn vfs_id(&self) -> u64 {
        self.id
    }

    pub(crate) fn set_owner(&self, vfs: Weak<VfsInner>) {
        let _ = self.owner.set(vfs);
    }

    /// True when a final put should queue: deferral is on, this thread is
    /// not draining, and it is inside a batch scope (or lone puts queue
    /// too, `VfsConfig::defer_single_puts`).
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.enabled && !DRAINING.with(Cell::get) && (self.single || SCOPES.with(Cell::get) != 0)
    }

    /// True if batched teardown is on (exit and `fput_many` batch).
    #[inline]
    pub(crate) fn batching(&self) -> bool {
        self.enabled && !DRAINING.with(Cell::get)
    }

    pub(crate) fn high_water(&self) -> usize {
        // Relaxed: a statistic.
        self.high_water.load(Ordering::Relaxed)
    }

    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Records a queue length for `high_water`.
    #[inline]
    fn note_len(&self, len: usize) {
        // Relaxed: a statistic (the load keeps the line shared: it is
        // written only when a queue grows past every earlier length).
        if len > self.high_water.load(Ordering::Relaxed) {
            self.high_water.fetch_max(len, Ordering::Relaxed);
        }
    }

    /// The calling thread's slot for this `Vfs`, registering one if needed;
    /// `None` while the thread tears its locals down. The pointer stays
    /// valid while the thread runs (`MINE` holds the slot).
    #[inline]
    fn my_slot(&self) -> Option<*const Slot> {
        let (id, slot) = LAST.with(Cell::get);
        if id == self.id {
            return Some(slot);
        }
        self.my_slot_slow(true)
    }

    /// The calling thread's slot for this `Vfs` if it has one (never
    /// registers).
    fn my_registered_slot(&self) -> Option<*const Slot> {
        let (id, slot) = LAST.with(Cell::get);
        if id == self.id {
            return Some(slot);
        }
        self.my_slot_slow(false)
    }

    #[cold]
    fn my_slot_slow(&self, register: bool) -> Option<*const Slot> {
        let slot = MINE
            .try_with(|m| {
                let mut m = m.try_borrow_mut().ok()?;
                if !register {
                    let (_, s) = m.0.iter().find(|(id, _)| *id == self.id)?;
                    return Some(Arc::as_ptr(s));
                }
                Some(Arc::as_ptr(&self.find_or_register(&mut m)))
            })
            .ok()
            .flatten()?;
        LAST.with(|l| l.set((self.id, slot)));
        Some(slot)
    }

    #[cold]
    fn find_or_register(&self, mine: &mut ThreadSlots) -> Arc<Slot> {
        if let Some((_, s)) = mine.0.iter().find(|(id, _)| *id == self.id) {
            return Arc::clone(s);
        }
        // Forget slots of namespaces that are gone.
        LAST.with(|l| l.set((0, core::ptr::null())));
        mine.0.retain(|(_, s)| s.vfs.strong_count() > 0);
        let slot = Arc::new(Slot {
            vfs: self.owner.get().cloned().unwrap_or_default(),
            queue: Mutex::new(Queue::default()),
            len: AtomicUsize::new(0),
            local: UnsafeCell::new(LocalPuts::default()),
            local_len: AtomicUsize::new(0),
        });
        self.slots.lock().push(Arc::clone(&slot));
        mine.0.push((self.id, Arc::clone(&slot)));
        slot
    }

    /// Every slot (for flushes).
    fn all_slots(&self) -> Vec<Arc<Slot>> {
        self.slots.lock().clone()
    }

    /// Drops slots whose thread has exited and whose queue is empty.
    fn prune(&self) {
        self.slots
            .lock()
            .retain(|s| Arc::strong_count(s) > 1 || s.len.load(Ordering::Relaxed) > 0);
    }

    /// Sums this thread's queued entries over its slots (after a drain).
    fn recount_pending() {
        let n = MINE
            .try_with(|m| {
                m.try_borrow()
                    .map(|m| {
                        m.0.iter()
                            .map(|(_, s)| {
                                s.len.load(Ordering::Relaxed) + s.local_len.load(Ordering::Relaxed)
                            })
                            .sum()
                    })
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        PENDING.with(|p| p.set(n));
    }
}

/// See `VfsInner::hold_drains`.
pub(crate) struct DrainHold;

impl Drop for DrainHold {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get() - 1));
    }
}

/// An open batch scope: final puts queue until it closes, then drain
/// (operations that drop many references at once: close_range, umount,
/// reclaim). Scopes nest; the outermost one drains.
pub(crate) struct BatchScope<'v> {
    vfs: &'v VfsInner,
}

impl Drop for BatchScope<'_> {
    fn drop(&mut self) {
        let n = SCOPES.with(|s| {
            let n = s.get().saturating_sub(1);
            s.set(n);
            n
        });
        if n == 0 {
            self.vfs.op_end();
        }
    }
}

/// The end of a public call that is not a `ProcessApi` method (those end
/// in `Process::done`): frees what the call queued when dropped. Declare
/// it first in the call, so it drops after everything else.
pub(crate) struct CallEnd<'v> {
    vfs: &'v VfsInner,
}

impl Drop for CallEnd<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.vfs.op_end();
    }
}

impl VfsInner {
    /// Marks a public call whose end must drain (see [`CallEnd`]).
    #[inline(always)]
    pub(crate) fn call_end(&self) -> CallEnd<'_> {
        CallEnd { vfs: self }
    }

    /// Holds off drains at a queue's bound while the guard lives: for
    /// code that holds a lock a drain's puts may take (a dentry LRU
    /// list's: a freed dentry's inode put may queue, and a drain then puts
    /// dentries onto that list). Puts made meanwhile go to the slot's
    /// locked queue (never the fixed owner-only buffer).
    pub(crate) fn hold_drains(&self) -> DrainHold {
        HELD.with(|h| h.set(h.get() + 1));
        DrainHold
    }

    /// Opens a batch scope (see [`BatchScope`]).
    pub(crate) fn batch_scope(&self) -> BatchScope<'_> {
        SCOPES.with(|s| s.set(s.get() + 1));
        BatchScope { vfs: self }
    }

    /// Queues a dead object on the calling thread's queue; drains at once
    /// when the queue reaches its bound. Call only when `defer.active()`.
    #[inline]
    pub(crate) fn defer_put(&self, item: Deferred) {
        if SCOPES.with(Cell::get) == 0 && HELD.with(Cell::get) == 0 {
            self.defer_lone_put(item)
        } else {
            self.defer_batched_put(item)
        }
    }

    /// `fput` as the last act of a top-level call (close): the call's end
    /// drains right after it returns. A lone final put that finds nothing
    /// queued on this thread is therefore freed here, exactly as that drain
    /// would free its queue of one (`drain::free_one`, this thread marked
    /// draining), without the round trip through the owner-only buffer;
    /// it still counts as a queue of one (`high_water`). Anything else
    /// (other puts pending, a batch scope, deferral off) takes `fput`.
    #[inline]
    pub(crate) fn fput_ending_call(&self, f: FileRef) {
        let file = f.file();
        if !(file.refcount.put() && file.refcount.try_kill()) {
            return;
        }
        let d = &self.defer;
        if d.enabled
            && d.single
            && !DRAINING.with(Cell::get)
            && SCOPES.with(Cell::get) == 0
            && PENDING.with(Cell::get) == 0
        {
            return self.free_as_lone_queue(Deferred::File(f.0));
        }
        self.final_fput(f);
    }

    /// Runs `last_puts`, the puts that end a top-level call (unlink's drop
    /// of the removed name's reference), under `fput_ending_call`'s rule:
    /// a lone put among them that finds nothing queued on this thread is
    /// freed at once, as the call's end would free its queue of one, and
    /// not through the owner-only buffer.
    #[inline]
    pub(crate) fn ending_call<R>(&self, last_puts: impl FnOnce() -> R) -> R {
        ENDING.with(|e| e.set(true));
        let r = last_puts();
        ENDING.with(|e| e.set(false));
        r
    }

    /// Frees `item` now, exactly as the call's end would free a queue
    /// holding only it (`drain::free_one`, this thread marked draining);
    /// it still counts as a queue of one (`high_water`).
    #[inline(always)]
    fn free_as_lone_queue(&self, item: Deferred) {
        self.defer.note_len(1);
        DRAINING.with(|f| f.set(true));
        drain::free_one(self, item);
        DRAINING.with(|f| f.set(false));
    }

    /// A put inside a batch scope: into the slot's locked queue, where
    /// other threads' flushes find it.
    #[inline(never)]
    fn defer_batched_put(&self, item: Deferred) {
        let d = &self.defer;
        let Some(slot) = d.my_slot() else {
            // The thread is tearing its locals down: no queue; free now.
            return self.drain_items(vec![item]);
        };
        // SAFETY: `my_slot`'s pointer is kept alive by `MINE`.
        let slot = unsafe { &*slot };
        PENDING.with(|p| p.set(p.get() + 1));
        let bytes = item.bytes();
        let over = {
            let mut q = slot.queue.lock();
            q.items.push(item);
            q.bytes = q.bytes.saturating_add(bytes);
            let len = q.items.len();
            slot.len.store(len, Ordering::Relaxed);
            d.note_len(len);
            len >= d.max_entries || q.bytes >= d.max_bytes
        };
        // Held: the queue grows past its bound until the holder's call
        // ends (`op_end`) or a later put drains it.
        if over && HELD.with(Cell::get) == 0 {
            self.drain_mine();
        }
    }

    /// A lone put: into the owner-only buffer, no lock.
    #[inline]
    fn defer_lone_put(&self, item: Deferred) {
        if ENDING.with(Cell::get) && PENDING.with(Cell::get) == 0 {
            return self.free_as_lone_queue(item);
        }
        let d = &self.defer;
        let (id, slot) = LAST.with(Cell::get);
        if id != d.id {
            return self.defer_lone_put_slow(item);
        }
        // SAFETY: `LAST`'s slot is kept alive by `MINE`.
        let slot = unsafe { &*slot };
        PENDING.with(|p| p.set(p.get() + 1));
        // SAFETY: we are the slot's owner, inside an operation on this
        // `Vfs` (`&self` keeps it alive): the ownership rule of `local`.
        // No other reference to it is live (drains take items out before
        // freeing them).
        let local = unsafe { &mut *slot.local.get() };
        let len = local.len;
        // `len < local_cap <= LOCAL_CAP`: a full buffer drained at its
        // push (the index check below never fails).
        local.items[len] = item;
        local.len = len + 1;
        slot.local_len.store(len + 1, Ordering::Relaxed);
        local.bytes = local.bytes.saturating_add(item.bytes());
        d.note_len(len + 1);
        if len + 1 >= d.local_cap || local.bytes >= d.max_bytes {
            self.drain_mine();
        }
    }

    /// `defer_lone_put` for a thread whose cached slot is another `Vfs`'s
    /// (or none yet).
    #[cold]
    #[inline(never)]
    fn defer_lone_put_slow(&self, item: Deferred) {
        if self.defer.my_slot().is_none() {
            // The thread is tearing its locals down: no queue; free now.
            return self.drain_items(vec![item]);
        }
        // `my_slot` cached it in `LAST`.
        self.defer_lone_put(item)
    }

    /// Frees the lone puts in `slot`'s owner-only buffer; returns how many.
    /// Only under the ownership rule of `local` (module doc).
    #[inline]
    pub(crate) fn drain_local(&self, slot: &Slot) -> usize {
        let was = DRAINING.with(|f| f.replace(true));
        let mut total = 0;
        loop {
            // SAFETY: the caller keeps the ownership rule. The reference
            // ends before the object is freed (and frees run inline while
            // draining, so nothing is pushed meanwhile anyway).
            let local = unsafe { &mut *slot.local.get() };
            let n = local.len;
            if n == 0 {
                break;
            }
            local.bytes = 0;
            if n <= ONE_BY_ONE_MAX {
                // Last in, first out: the objects are independent.
                local.len = n - 1;
                let item = local.items[n - 1];
                slot.local_len.store(n - 1, Ordering::Relaxed);
                total += 1;
                drain::free_one(self, item);
                continue;
            }
            local.len = 0;
            slot.local_len.store(0, Ordering::Relaxed);
            total += n;
            let mut batch = SPARE.try_with(Cell::take).unwrap_or_default();
            batch.extend_from_slice(&local.items[..n]);
            drain::drain_batch(self, &mut batch);
            let _ = SPARE.try_with(|s| s.set(batch));
        }
        DRAINING.with(|f| f.set(was));
        total
    }

    /// End of a top-level operation: drains the calling thread's queue if
    /// it queued anything. The common case is one TLS load and a branch.
    #[inline(always)]
    pub(crate) fn op_end(&self) {
        if PENDING.with(Cell::get) != 0 {
            self.drain_mine();
        }
    }

    /// Drains the calling thread's queue for this `Vfs`.
    #[cold]
    #[inline(never)]
    pub(crate) fn drain_mine(&self) {
        // The common case: one lone put (a close, an unlink) in the slot
        // `LAST` caches, freed as its inline put would have been.
        let (id, slot) = LAST.with(Cell::get);
        if id == self.defer.id && PENDING.with(Cell::get) == 1 {
            // SAFETY: `LAST`'s slot is kept alive by `MINE`.
            let slot = unsafe { &*slot };
            // SAFETY: we are its owner, inside an operation on this `Vfs`
            // (ownership rule of `local`); the reference ends before the
            // free.
            let local = unsafe { &mut *slot.local.get() };
            if local.len == 1 {
                local.len = 0;
                local.bytes = 0;
                let item = local.items[0];
                slot.local_len.store(0, Ordering::Relaxed);
                PENDING.with(|p| p.set(0));
                let was = DRAINING.with(|f| f.replace(true));
                drain::free_one(self, item);
                DRAINING.with(|f| f.set(was));
                return;
            }
        }
        self.drain_mine_general();
    }

    #[inline(never)]
    fn drain_mine_general(&self) {
        let drained = match self.defer.my_registered_slot() {
            Some(slot) => {
                // SAFETY: the slot pointer is kept alive by `MINE`.
                let slot = unsafe { &*slot };
                // We are the owner, inside an operation on this `Vfs`.
                let mut n = self.drain_local(slot);
                // Only the owner pushes to the locked queue: a zero here
                // is exact for our own pushes, so no lock is needed.
                if slot.len.load(Ordering::Relaxed) != 0 {
                    n += self.drain_slot(slot);
                }
                n
            }
            None => 0,
        };
        let left = PENDING.with(Cell::get).saturating_sub(drained);
        if drained == 0 || left != 0 {
            // Another thread flushed ours, or another `Vfs` has some.
            DeferQueues::recount_pending();
        } else {
            PENDING.with(|p| p.set(0));
        }
    }

    /// Frees everything queued in `slot` (any thread's); returns how many.
    pub(crate) fn drain_slot(&self, slot: &Slot) -> usize {
        let mut total = 0;
        // try_with: a thread's exit may drain after its SPARE is gone.
        let mut items = SPARE.try_with(Cell::take).unwrap_or_default();
        loop {
            slot.take_into(&mut items);
            if items.is_empty() {
                break;
            }
            total += items.len();
            let was = DRAINING.with(|f| f.replace(true));
            drain::drain_batch(self, &mut items);
            DRAINING.with(|f| f.set(was));
        }
        let _ = SPARE.try_with(|s| s.set(items));
        total
    }

    /// Drains every thread's queue of this `Vfs` (flush points).
    pub(crate) fn flush_all(&self) {
        if let Some(mine) = self.defer.my_registered_slot() {
            // SAFETY: kept alive by `MINE`; we are its owner, inside an
            // operation on this `Vfs` (ownership rule of `local`).
            self.drain_local(unsafe { &*mine });
        }
        for slot in self.defer.all_slots() {
            self.drain_slot(&slot);
        }
        self.defer.prune();
        DeferQueues::recount_pending();
    }

    /// The `Vfs`'s drop: frees every thread's queue, owner-only buffers
    /// included (`&mut self`: the strong count is zero, so no owner may
    /// touch its buffer any more, ownership rule of `local`).
    pub(crate) fn drain_at_drop(&mut self) {
        for slot in self.defer.all_slots() {
            self.drain_local(&slot);
            self.drain_slot(&slot);
        }
        self.defer.prune();
        DeferQueues::recount_pending();
    }

    /// Frees a batch with this thread marked as draining (its puts inline).
    pub(crate) fn drain_items(&self, mut items: Vec<Deferred>) {
        let was = DRAINING.with(|f| f.replace(true));
        drain::drain_batch(self, &mut items);
        DRAINING.with(|f| f.set(was));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::abi::*;
    use crate::{ProcessApi, Vfs};

    /// A file reference whose final put the test makes by hand, outside any
    /// top-level operation (so nothing drains it but the path under test).
    fn queueing_vfs() -> Vfs {
        Vfs::with_config(crate::VfsConfig {
            defer_single_puts: true,
            ..crate::VfsConfig::default()
        })
    }

    fn detached_file(v: &Vfs) -> crate::file::FileRef {
        let p = v.root_process();
        let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
        let f = p.files.remove(fd).unwrap();
        p.exit();
        f
    }

    #[test]
    fn exiting_thread_drains_its_queue() {
        let v = queueing_vfs();
        let f = detached_file(&v);
        assert_eq!(v.object_counts().files, 1);
        let inner = v.inner.clone();
        std::thread::spawn(move || {
            inner.fput(f);
            assert_eq!(super::PENDING.with(|p| p.get()), 1, "queued, not freed");
        })
        .join()
        .unwrap();
        // No flush: the thread's exit drained it.
        assert_eq!(v.object_counts().files, 0);
    }

    /// Runs `work` on a new thread; `work` calls its argument to signal
    /// that it queued and to park until the returned sender fires. Returns
    /// once it parked.
    fn parked(
        work: impl FnOnce(&dyn Fn()) + Send + 'static,
    ) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            work(&|| {
                tx.send(()).unwrap();
                go_rx.recv().unwrap();
            })
        });
        rx.recv().unwrap();
        (go_tx, t)
    }

    #[test]
    fn flush_drains_a_live_thread_queue() {
        let v = queueing_vfs();
        let f = detached_file(&v);
        let inner = v.inner.clone();
        let (go, t) = parked(move |pause| {
            // Inside a batch scope (as exit, close_range): the locked queue.
            let _scope = inner.batch_scope();
            inner.fput(f);
            // Stay alive with the queue untouched until the flush is seen.
            pause();
        });
        assert_eq!(v.object_counts().files, 1, "still queued on the thread");
        v.flush();
        assert_eq!(v.object_counts().files, 0, "flushed from another thread");
        go.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn a_running_call_frees_its_own_lone_puts() {
        // A lone put belongs to the call still running on its thread: a
        // flush elsewhere leaves it (the owner-only buffer), the call's end
        // frees it.
        let v = queueing_vfs();
        let f = detached_file(&v);
        let inner = v.inner.clone();
        let (go, t) = parked(move |pause| {
            inner.fput(f);
            pause();
            inner.op_end();
            assert_eq!(super::PENDING.with(|p| p.get()), 0);
            assert_eq!(inner.open_files.sum(), 0, "freed at the call's end");
        });
        v.flush();
        assert_eq!(v.object_counts().files, 1, "the owner's call still runs");
        go.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(v.object_counts().files, 0);
    }

    #[test]
    fn lone_puts_drain_at_the_entry_bound() {
        // More lone puts in one call than the bound: the buffer drains
        // each time it fills, so it never holds more than the bound.
        let v = Vfs::with_config(crate::VfsConfig {
            defer_single_puts: true,
            defer_max_entries: 8,
            ..crate::VfsConfig::default()
        });
        let files: Vec<_> = (0..20).map(|_| detached_file(&v)).collect();
        assert_eq!(v.object_counts().files, 20);
        for f in files {
            v.inner.fput(f);
        }
        assert_eq!(v.defer_high_water(), 8);
        assert_eq!(v.object_counts().files, 4, "two full buffers drained");
        v.inner.op_end();
        assert_eq!(v.object_counts().files, 0);
    }

    #[test]
    fn dropping_the_vfs_frees_queued_objects() {
        // The queue lives on this (still running) thread; the namespace's
        // drop must free it (the ASan run would report a leak otherwise),
        // and the slot must not keep the namespace alive.
        let v = queueing_vfs();
        let f = detached_file(&v);
        let weak = std::sync::Arc::downgrade(&v.inner);
        v.inner.fput(f);
        drop(v);
        assert!(
            weak.upgrade().is_none(),
            "the queue kept the namespace alive"
        );
        // Our thread's slot is stale now: the next end of operation on
        // another namespace must not trip over it.
        let w = Vfs::new();
        let p = w.root_process();
        p.mkdir(b"/x", 0o755).unwrap();
        p.exit();
        w.flush();
        assert_eq!(w.object_counts().files, 0);
    }
}
