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
//! `VfsConfig::defer_single_puts` is set; the outermost scope's end drains.

use super::drain;
use crate::dcache::dentry::Dentry;
use crate::file::OpenFile;
use crate::inode::Inode;
use crate::mount::Mount;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use crate::vfs::VfsInner;
use std::cell::{Cell, RefCell};
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
            Deferred::Dentry(_) => core::mem::size_of::<Dentry>(),
            Deferred::Inode(i) => {
                // SAFETY: the queue owns the killed inode.
                let blocks = unsafe { &*i }.attr().blocks;
                core::mem::size_of::<Inode>().saturating_add(
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

/// One thread's queue for one `Vfs`.
pub(crate) struct Slot {
    vfs: Weak<VfsInner>,
    queue: Mutex<Queue>,
    /// `queue.items.len()`, readable without the lock (a hint for
    /// `PENDING`). Relaxed everywhere: written under the mutex, read as a
    /// snapshot; it orders nothing.
    len: AtomicUsize,
}

// SAFETY: the raw pointers in the queue are dead objects the queue owns;
// any thread may free them (module invariant of `defer`).
unsafe impl Send for Slot {}
// SAFETY: as above; the queue is behind a mutex.
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
            if slot.len.load(Ordering::Relaxed) == 0 {
                continue;
            }
            // The namespace is gone: its drop drained this slot already.
            if let Some(vfs) = slot.vfs.upgrade() {
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
            slots: Mutex::new(Vec::new()),
            high_water: AtomicUsize::new(0),
            owner: OnceLock::new(),
        }
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

    /// The calling thread's slot for this `Vfs`, registering one if needed;
    /// `None` while the thread tears its locals down. The pointer stays
    /// valid while the thread runs (`MINE` holds the slot).
    #[inline]
    fn my_slot(&self) -> Option<*const Slot> {
        let (id, slot) = LAST.with(Cell::get);
        if id == self.id {
            return Some(slot);
        }
        let slot = MINE
            .try_with(|m| {
                let mut m = m.try_borrow_mut().ok()?;
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
                    .map(|m| m.0.iter().map(|(_, s)| s.len.load(Ordering::Relaxed)).sum())
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        PENDING.with(|p| p.set(n));
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

impl VfsInner {
    /// Opens a batch scope (see [`BatchScope`]).
    pub(crate) fn batch_scope(&self) -> BatchScope<'_> {
        SCOPES.with(|s| s.set(s.get() + 1));
        BatchScope { vfs: self }
    }

    /// Queues a dead object on the calling thread's queue; drains at once
    /// when the queue reaches its bound. Call only when `defer.active()`.
    pub(crate) fn defer_put(&self, item: Deferred) {
        let bytes = item.bytes();
        let d = &self.defer;
        let queued = d.my_slot().map(|slot| {
            // SAFETY: `my_slot`'s pointer is kept alive by `MINE`.
            let slot = unsafe { &*slot };
            let mut q = slot.queue.lock();
            q.items.push(item);
            q.bytes = q.bytes.saturating_add(bytes);
            let len = q.items.len();
            slot.len.store(len, Ordering::Relaxed);
            if len > d.high_water.load(Ordering::Relaxed) {
                // Relaxed: a statistic.
                d.high_water.fetch_max(len, Ordering::Relaxed);
            }
            len >= d.max_entries || q.bytes >= d.max_bytes
        });
        match queued {
            Some(over) => {
                PENDING.with(|p| p.set(p.get() + 1));
                if over {
                    self.drain_mine();
                }
            }
            // The thread is tearing its locals down: no queue; free now.
            None => self.drain_items(vec![item]),
        }
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
        let drained = match self.defer.my_slot() {
            // SAFETY: `my_slot`'s pointer is kept alive by `MINE`.
            Some(slot) => self.drain_slot(unsafe { &*slot }),
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
        for slot in self.defer.all_slots() {
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

    #[test]
    fn flush_drains_a_live_thread_queue() {
        let v = queueing_vfs();
        let f = detached_file(&v);
        let inner = v.inner.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            inner.fput(f);
            tx.send(()).unwrap();
            // Stay alive with the queue untouched until the flush is seen.
            done_rx.recv().unwrap();
        });
        rx.recv().unwrap();
        assert_eq!(v.object_counts().files, 1, "still queued on the thread");
        v.flush();
        assert_eq!(v.object_counts().files, 0, "flushed from another thread");
        done_tx.send(()).unwrap();
        t.join().unwrap();
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
