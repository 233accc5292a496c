//! Epoch-based reclamation with asymmetric fences: what keeps memory that a
//! lock-free reader may hold allocated (Linux's RCU, in user space).
//!
//! Readers pay two plain stores per operation: `enter` publishes the global
//! epoch in the thread's record, `leave` publishes zero. No locked
//! instruction, no fence the CPU executes (a compiler fence only). The cost
//! is moved to the side that frees memory, which is rare and batched: it
//! bumps the epoch and issues one process-wide memory barrier
//! (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`) per sealed batch, which
//! upgrades every running reader's compiler fence to a full fence at that
//! moment (the pairing liburcu's "memb" flavour uses). Where `membarrier`
//! is missing, readers use a real `SeqCst` fence after their store, and the
//! reclaimer a `SeqCst` fence (the symmetric textbook scheme; the loom model
//! in `tests/loom_sync.rs` checks that one).
//!
//! Invariants:
//! - An object is retired only after it was made unreachable for new
//!   readers (unhashed, unlinked, swapped out). Retired objects collect in
//!   per-thread shards of the collector; a full shard is *sealed* with the
//!   epoch `E` it was sealed in (the epoch is then `E + 1`).
//! - A sealed batch is freed once, after a heavy barrier that follows its
//!   sealing, every thread record is idle (0) or shows an epoch `> E`: such
//!   a reader loaded the epoch after the bump (Acquire, pairing with the
//!   bump's release), so it cannot see the unlinked objects; an idle one
//!   left with a Release store after its last use of them, or its next
//!   enter is ordered after the barrier.
//! - A thread's record is written only by that thread (`active`); guards
//!   nest (only the outermost enter/leave touch the record) and are `!Send`.
//! - Records are never freed: a thread that exits releases its record for
//!   reuse. The set of records is a lock-free, append-only list.
//! - The epoch domain (epoch counter and records) is process-wide; each
//!   `Collector` (one per `Vfs`) owns only its retired objects, so dropping
//!   it frees them all (no guard can borrow it any more).
//!
//! - **Barriers are paced by their cost.** A shard that reaches its batch
//!   is sealed at once only if the last heavy barrier ended at least
//!   `PACE` times that barrier's (smoothed) cost ago; otherwise it keeps
//!   collecting, and asks again every `PACE_CHECK_EVERY` objects, until
//!   the pace allows or it holds `MAX_DEFERRAL` batches. Delaying a seal
//!   only delays frees, so this is a policy, not part of the protocol (the
//!   loom build seals at every full batch). A seal carries every other
//!   shard the pace held back (they may see no further retire), and
//!   `seal_pending` seals every shard whatever it holds, for the callers
//!   that want memory back now (`Vfs::flush`, reclaim). Why: a
//!   `membarrier` IPIs every CPU running the process, and on a VM that
//!   costs what the hypervisor makes it cost — 8 µs with one thread, a median of 341 µs and up to
//!   7 ms with two threads on the 2-vCPU Zen 5 VM (session 48), where one
//!   barrier per 4,096 retired objects took two threads creating and
//!   unlinking names from ~2.3 M to ~0.8 M operations a second
//!   (docs/PERFORMANCE.md, "The heavy barrier's pace").
//!
//! Rule for callers: never block (sleep, wait for I/O or another thread)
//! inside a guard. A held guard delays every collector's reclamation.

use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::marker::PhantomData;

/// Retired-object shards per collector (threads map onto them by record).
const SHARDS: usize = 8;
/// Objects per shard before it is sealed, unless configured.
const DEFAULT_BATCH: usize = 1024;
/// A full shard whose seal the pace put off asks again after this many
/// more objects (one clock read per this many retires).
const PACE_CHECK_EVERY: usize = 64;
/// A shard holds at most this many batches before it is sealed whatever
/// the pace: the bound on memory waiting for a barrier.
const MAX_DEFERRAL: usize = 16;

/// One thread's announcement: 0 when outside every guard, else the epoch
/// it saw when it entered. Aligned to two cache lines: every guard writes
/// `active`, so two threads' records must never share a line (or the
/// adjacent-line prefetch pair).
#[repr(C, align(128))]
pub struct Record {
    active: AtomicU64,
    in_use: AtomicBool,
    /// Immutable once the record is published.
    next: *const Record,
    shard: usize,
}

#[cfg(not(loom))]
const _: () =
    assert!(core::mem::align_of::<Record>() == 128 && core::mem::size_of::<Record>() == 128);

// SAFETY: `next` is written before the record is published and never after;
// the rest is atomic.
unsafe impl Sync for Record {}
// SAFETY: as above.
unsafe impl Send for Record {}

/// The epoch counter and the list of thread records.
pub struct Domain {
    epoch: CachePadded<AtomicU64>,
    records: AtomicPtr<Record>,
    record_count: AtomicUsize,
}

impl Domain {
    #[cfg(not(loom))]
    const fn new() -> Domain {
        Domain {
            epoch: CachePadded::new(AtomicU64::new(1)),
            records: AtomicPtr::new(core::ptr::null_mut()),
            record_count: AtomicUsize::new(0),
        }
    }

    /// A domain of its own (loom models build one per execution).
    #[cfg(loom)]
    pub fn new() -> Domain {
        Domain {
            epoch: CachePadded::new(AtomicU64::new(1)),
            records: AtomicPtr::new(core::ptr::null_mut()),
            record_count: AtomicUsize::new(0),
        }
    }

    /// A record for the calling thread: an idle released one, or a new one.
    pub fn acquire_record(&self) -> &Record {
        // Acquire: pairs with the Release publication below, so `next` and
        // `shard` of every listed record are visible.
        let mut p = self.records.load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: records are never freed.
            let r = unsafe { &*p };
            // Acquire: pairs with the Release in `release_record`, so the
            // previous owner's last `active = 0` is ordered before our use.
            if !r.in_use.load(Ordering::Relaxed)
                && r.in_use
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return r;
            }
            p = r.next as *mut Record;
        }
        let shard = self.record_count.fetch_add(1, Ordering::Relaxed) % SHARDS;
        let rec = Box::into_raw(Box::new(Record {
            active: AtomicU64::new(0),
            in_use: AtomicBool::new(true),
            next: core::ptr::null(),
            shard,
        }));
        let mut head = self.records.load(Ordering::Relaxed);
        loop {
            // SAFETY: not yet published; we own it.
            unsafe { (*rec).next = head };
            // Release: publishes the record's fields with it.
            match self.records.compare_exchange_weak(
                head,
                rec,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        // SAFETY: published records are never freed.
        unsafe { &*rec }
    }

    /// Gives a record back for reuse by another thread (thread exit).
    pub fn release_record(&self, r: &Record) {
        // Release: pairs with the Acquire in `acquire_record`.
        r.active.store(0, Ordering::Release);
        r.in_use.store(false, Ordering::Release);
    }

    /// Waits for a grace period: returns once every reader that was inside
    /// a guard when it was called (other than the record `me`) has left it.
    /// Readers do not block inside guards, so this ends; the caller must
    /// not hold a lock that a reader inside a guard may wait for.
    pub fn synchronize_except(&self, me: *const Record) {
        let sealed = self.seal_epoch();
        let mut spins = 0u32;
        while self.min_active_except(me) <= sealed {
            spins += 1;
            if spins < 64 {
                crate::sync::atomic::spin_hint();
            } else {
                crate::sync::atomic::yield_thread();
            }
        }
    }

    /// Outermost guard entry: announce the current epoch.
    #[inline(always)]
    pub fn enter(&self, r: &Record) {
        // Acquire: pairs with the SeqCst bump in `seal_epoch`; a reader that
        // sees epoch E+1 also sees everything unlinked before that bump.
        let e = self.epoch.load(Ordering::Acquire);
        // Relaxed store + light barrier: ordered against the reader's
        // following loads by the reclaimer's heavy barrier (see module doc).
        r.active.store(e, Ordering::Relaxed);
        barrier::light();
    }

    /// Outermost guard exit.
    #[inline(always)]
    pub fn leave(&self, r: &Record) {
        // Release: every read made under the guard happens before this
        // store; pairs with the Acquire load in `min_active`.
        r.active.store(0, Ordering::Release);
    }

    /// Closes the current epoch for a batch of retired objects: returns the
    /// batch's epoch `E` and issues the heavy barrier after the bump.
    pub fn seal_epoch(&self) -> u64 {
        let e = self.epoch.fetch_add(1, Ordering::SeqCst);
        let start = pacing::now_ns();
        barrier::heavy();
        pacing::note_barrier(start, pacing::now_ns());
        e
    }

    /// The oldest epoch any reader is inside, or `u64::MAX` if none is.
    /// Batches sealed in an epoch below this are free to reclaim. Must
    /// follow a heavy barrier that follows the batches' sealing.
    pub fn min_active(&self) -> u64 {
        self.min_active_except(core::ptr::null())
    }

    /// `min_active`, ignoring the record `me` (the caller's own).
    pub fn min_active_except(&self, me: *const Record) -> u64 {
        let mut min = u64::MAX;
        // Acquire: see `acquire_record`.
        let mut p = self.records.load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: records are never freed.
            let r = unsafe { &*p };
            // Acquire: pairs with the Release in `leave`.
            let a = r.active.load(Ordering::Acquire);
            if a != 0 && !core::ptr::eq(r, me) {
                min = min.min(a);
            }
            p = r.next as *mut Record;
        }
        min
    }
}

/// The light and heavy halves of the asymmetric fence.
mod barrier {
    #[cfg(not(loom))]
    use std::sync::atomic::{AtomicU8, Ordering};

    /// Where `membarrier` works: compiler fence for readers.
    #[cfg(not(loom))]
    const MEMBARRIER: u8 = 1;
    /// Fallback: real fences on both sides.
    #[cfg(not(loom))]
    const FENCES: u8 = 2;

    #[cfg(not(loom))]
    static STRATEGY: AtomicU8 = AtomicU8::new(FENCES);

    #[cfg(not(loom))]
    const CMD_QUERY: libc::c_int = 0;
    #[cfg(not(loom))]
    const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    #[cfg(not(loom))]
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    #[cfg(not(loom))]
    fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: membarrier takes two integers and touches no memory of ours.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_int) }
    }

    /// Picks the strategy once per process (before any guard can matter:
    /// called when a collector is created, and a change from fences to
    /// membarrier only makes readers cheaper after readers already fenced).
    #[cfg(not(loom))]
    pub(super) fn detect() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let cmds = membarrier(CMD_QUERY);
            if cmds >= 0
                && cmds & (CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED) as libc::c_long
                    == (CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED) as libc::c_long
                && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
            {
                // SeqCst: a plain flag, but readers that see MEMBARRIER stop
                // fencing; no reclaimer may still rely on their fences, and
                // reclaimers issue heavy barriers only after reading this.
                STRATEGY.store(MEMBARRIER, Ordering::SeqCst);
            }
        });
    }

    #[cfg(loom)]
    pub(super) fn detect() {}

    #[inline(always)]
    pub(super) fn light() {
        #[cfg(not(loom))]
        {
            // The compiler fence is all a reader needs under membarrier
            // (the reclaimer's IPI orders the CPU); written unconditionally
            // so the test below is one compare and a not-taken branch.
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            // Relaxed: the strategy is set once, before readers rely on it
            // (see `detect`).
            if STRATEGY.load(Ordering::Relaxed) != MEMBARRIER {
                std::sync::atomic::fence(Ordering::SeqCst);
            }
        }
        #[cfg(loom)]
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn heavy() {
        #[cfg(not(loom))]
        {
            if STRATEGY.load(Ordering::SeqCst) == MEMBARRIER {
                let r = membarrier(CMD_PRIVATE_EXPEDITED);
                assert!(r == 0, "membarrier failed after registration");
            } else {
                std::sync::atomic::fence(Ordering::SeqCst);
            }
        }
        #[cfg(loom)]
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
    }
}

/// How often heavy barriers may come: `PACE` × their smoothed cost apart
/// (so a thread spends at most about 1/`PACE` of its time in them), per
/// process, as the barrier itself is process-wide.
mod pacing {
    #[cfg(not(loom))]
    use crossbeam_utils::CachePadded;
    #[cfg(not(loom))]
    use std::sync::atomic::{AtomicU64, Ordering};

    #[cfg(not(loom))]
    const PACE: u64 = 32;

    /// The smoothed cost of a heavy barrier and when the last one ended
    /// (CLOCK_MONOTONIC ns). Relaxed throughout: they steer when to seal,
    /// and no memory is published through them; a stale value only moves a
    /// seal earlier or later. On a line of their own: each barrier writes
    /// them, and a neighbour every reader loads (`barrier::STRATEGY`, the
    /// epoch) must not be invalidated by it.
    #[cfg(not(loom))]
    struct Pace {
        cost_ns: AtomicU64,
        last_end_ns: AtomicU64,
    }
    #[cfg(not(loom))]
    static PACE_STATE: CachePadded<Pace> = CachePadded::new(Pace {
        cost_ns: AtomicU64::new(0),
        last_end_ns: AtomicU64::new(0),
    });

    #[cfg(not(loom))]
    pub(super) use crate::dcache::precise_monotonic_ns as now_ns;

    #[cfg(not(loom))]
    pub(super) fn note_barrier(start: u64, end: u64) {
        let took = end.saturating_sub(start);
        let old = PACE_STATE.cost_ns.load(Ordering::Relaxed);
        // An average over the last ~8 barriers: one slow IPI does not stop
        // the seals, a slow placement does.
        PACE_STATE
            .cost_ns
            .store(old - old / 8 + took / 8, Ordering::Relaxed);
        PACE_STATE.last_end_ns.store(end, Ordering::Relaxed);
    }

    /// Whether a heavy barrier now keeps to the pace.
    #[cfg(not(loom))]
    pub(super) fn barrier_due() -> bool {
        due_at(
            now_ns(),
            PACE_STATE.last_end_ns.load(Ordering::Relaxed),
            PACE_STATE.cost_ns.load(Ordering::Relaxed),
        )
    }

    /// At `now`, after a barrier that ended at `last_end` and barriers
    /// costing `cost` (ns): whether another keeps to the pace.
    #[cfg(not(loom))]
    pub(super) fn due_at(now: u64, last_end: u64, cost: u64) -> bool {
        now.saturating_sub(last_end) >= cost.saturating_mul(PACE)
    }

    #[cfg(loom)]
    pub(super) fn now_ns() -> u64 {
        0
    }

    #[cfg(loom)]
    pub(super) fn note_barrier(_start: u64, _end: u64) {}

    #[cfg(loom)]
    pub(super) fn barrier_due() -> bool {
        true
    }
}

#[cfg(not(loom))]
static DOMAIN: Domain = Domain::new();

#[cfg(not(loom))]
fn domain() -> &'static Domain {
    &DOMAIN
}

/// Under loom the process-wide domain is created on first use (loom atomics
/// are not `const`); model tests build their own `Domain` instead.
#[cfg(loom)]
fn domain() -> &'static Domain {
    static D: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let p = *D.get_or_init(|| Box::into_raw(Box::new(Domain::new())) as usize);
    // SAFETY: leaked on creation, never freed.
    unsafe { &*(p as *const Domain) }
}

/// The thread's record and guard nesting depth. `const`-initialised and
/// without a destructor, so reaching it is one thread-pointer offset.
struct Local {
    record: Cell<*const Record>,
    nesting: Cell<u32>,
}

/// Releases the thread's record when the thread exits.
struct ReleaseOnExit;

impl Drop for ReleaseOnExit {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            let r = l.record.replace(core::ptr::null());
            if !r.is_null() {
                // SAFETY: records are never freed.
                domain().release_record(unsafe { &*r });
            }
        });
    }
}

thread_local! {
    static LOCAL: Local = const {
        Local { record: Cell::new(core::ptr::null()), nesting: Cell::new(0) }
    };
    static RELEASE: ReleaseOnExit = const { ReleaseOnExit };
}

#[cold]
fn register_thread(l: &Local) -> *const Record {
    let r = domain().acquire_record() as *const Record;
    // Registering the exit hook fails only while the thread is already
    // tearing its locals down; the record then stays claimed (idle) forever,
    // which is harmless.
    let _ = RELEASE.try_with(|_| ());
    l.record.set(r);
    r
}

/// Enters the epoch for the current thread, for code that protects
/// memory it does not reach through a collector (the shards of a
/// `ShardedRef`, freed after `synchronize`).
#[inline(always)]
pub fn pin() -> Guard<'static> {
    LOCAL.with(|l| {
        let n = l.nesting.get();
        if n == 0 {
            let mut r = l.record.get();
            if r.is_null() {
                r = register_thread(l);
            }
            // SAFETY: records are never freed.
            domain().enter(unsafe { &*r });
        }
        l.nesting.set(n + 1);
    });
    Guard {
        _collector: PhantomData,
        _not_send: PhantomData,
    }
}

/// True while the current thread is inside a guard (for assertions: a
/// thread that waits for a grace period must not be).
pub fn is_pinned() -> bool {
    LOCAL.with(|l| l.nesting.get() > 0)
}

/// Waits for a grace period (Linux's `synchronize_rcu`): every guard held
/// by another thread when this is called has been dropped when it returns.
/// The caller's own guard, if any, is not waited for. Must not be called
/// while holding a lock that a thread inside a guard may wait for.
pub fn synchronize() {
    let me = LOCAL.with(|l| l.record.get());
    domain().synchronize_except(me);
}

/// Proof that the current thread is inside an epoch: objects reachable now
/// stay allocated until it is dropped.
pub struct Guard<'c> {
    _collector: PhantomData<&'c Collector>,
    /// Guards are tied to their thread's record.
    _not_send: PhantomData<*const ()>,
}

impl Drop for Guard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        LOCAL.with(|l| {
            let n = l.nesting.get() - 1;
            l.nesting.set(n);
            if n == 0 {
                // SAFETY: set by the outermost `enter`, never freed.
                domain().leave(unsafe { &*l.record.get() });
            }
        });
    }
}

/// Whether a shard that now holds `n` objects, the last `step` just
/// added, is sealed: from its batch on, each time it reaches the batch or
/// another `PACE_CHECK_EVERY` objects past it, if `due` (the pace) allows,
/// and at `MAX_DEFERRAL` batches whatever the pace.
fn seals_now(n: usize, batch: usize, step: usize, due: impl FnOnce() -> bool) -> bool {
    n >= batch
        && (n >= batch.saturating_mul(MAX_DEFERRAL)
            || (n - batch) % PACE_CHECK_EVERY < step && due())
}

struct Retired {
    ptr: *mut (),
    free: unsafe fn(*mut ()),
}

// SAFETY: a retired object is owned by the collector alone; freeing it on
// another thread is what retiring means (retired types are `Send`).
unsafe impl Send for Retired {}

struct Sealed {
    epoch: u64,
    items: Vec<Retired>,
}

/// One namespace's retired objects.
pub struct Collector {
    shards: Box<[CachePadded<Mutex<Vec<Retired>>>]>,
    limbo: Mutex<Vec<Sealed>>,
    batch: usize,
}

impl Default for Collector {
    fn default() -> Self {
        Self::new()
    }
}

impl Collector {
    pub fn new() -> Collector {
        barrier::detect();
        Collector {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
            limbo: Mutex::new(Vec::new()),
            batch: DEFAULT_BATCH,
        }
    }

    /// Objects per shard before a batch is sealed (and one heavy barrier
    /// issued): larger batches mean fewer process-wide barriers.
    pub fn batch_size(mut self, n: usize) -> Collector {
        self.batch = n.max(1);
        self
    }

    /// Enters the epoch for the current thread.
    #[inline(always)]
    pub fn enter(&self) -> Guard<'_> {
        pin()
    }

    /// Frees `ptr` (a `Box<T>`) once no reader can hold it.
    ///
    /// # Safety
    /// `ptr` came from `Box::into_raw`, is retired once, and is already
    /// unreachable for readers that enter from now on.
    pub unsafe fn retire_box<T: Send>(&self, ptr: *mut T) {
        // SAFETY: forwarded contract.
        unsafe { self.retire_with(ptr as *mut (), free_box::<T>) }
    }

    /// `retire_box` for a big object whose memory should go back soon (a
    /// resized table's old bucket array): sealed at once as a batch of its
    /// own, so the next seal after every reader has left frees it, instead
    /// of waiting for a full batch of retirements (which a phase that only
    /// creates names never makes).
    ///
    /// # Safety
    /// As `retire_box`.
    pub unsafe fn retire_box_now<T: Send>(&self, ptr: *mut T) {
        self.seal(vec![Retired {
            ptr: ptr as *mut (),
            free: free_box::<T>,
        }]);
    }

    /// Frees `ptr` (an object of the slab allocator, `mem::slab`) once no
    /// reader can hold it.
    ///
    /// # Safety
    /// As `retire_box`, for a pointer from `mem::slab::alloc::<T>`.
    pub unsafe fn retire_slab<T: Send + crate::mem::slab::SlabPool>(&self, ptr: *mut T) {
        // SAFETY: forwarded contract.
        unsafe { self.retire_with(ptr as *mut (), crate::mem::slab::free_erased::<T>) }
    }

    /// `retire_slab` for two objects at once (a dentry and the inode it
    /// was the last to name): one shard lock for both.
    ///
    /// # Safety
    /// As `retire_slab`, for each of `a` and `b`.
    pub unsafe fn retire_slab_pair<A, B>(&self, a: *mut A, b: *mut B)
    where
        A: Send + crate::mem::slab::SlabPool,
        B: Send + crate::mem::slab::SlabPool,
    {
        // SAFETY: forwarded contract.
        unsafe {
            self.retire_items([
                Retired {
                    ptr: a as *mut (),
                    free: crate::mem::slab::free_erased::<A>,
                },
                Retired {
                    ptr: b as *mut (),
                    free: crate::mem::slab::free_erased::<B>,
                },
            ])
        }
    }

    /// Queues `ptr` to be released by `free` after a grace period.
    unsafe fn retire_with(&self, ptr: *mut (), free: unsafe fn(*mut ())) {
        // SAFETY: forwarded contract.
        unsafe { self.retire_items([Retired { ptr, free }]) }
    }

    /// Queues each item to be released by its `free` after a grace period.
    unsafe fn retire_items<const N: usize>(&self, items: [Retired; N]) {
        let shard = LOCAL.with(|l| {
            let r = l.record.get();
            if r.is_null() {
                0
            } else {
                // SAFETY: records are never freed.
                unsafe { &*r }.shard
            }
        });
        let full = {
            let mut pending = self.shards[shard].lock();
            pending.extend(items);
            seals_now(pending.len(), self.batch, N, pacing::barrier_due)
                .then(|| std::mem::take(&mut *pending))
        };
        if let Some(mut items) = full {
            self.take_held_back(shard, &mut items);
            self.seal(items);
        }
    }

    /// Moves into `items` every shard but `sealing` that holds a batch or
    /// more (the pace held it back): the barrier is paid now, and such a
    /// shard may get no further retire to ask again. One shard lock at a
    /// time, as in `retire_items`.
    fn take_held_back(&self, sealing: usize, items: &mut Vec<Retired>) {
        for (i, other) in self.shards.iter().enumerate() {
            if i != sealing {
                let mut held = other.lock();
                if held.len() >= self.batch {
                    items.append(&mut held);
                }
            }
        }
    }

    /// Seals whatever the shards hold, below their batch too, and frees
    /// every sealed batch no reader can hold (a guard of the caller's
    /// included: what it holds waits for the next seal). For the points
    /// where memory should go back now (`Vfs::flush`, `drop_caches`): the
    /// batch and the pace leave up to `MAX_DEFERRAL` batches per shard
    /// waiting for a further retire, which an idle namespace never makes.
    /// One heavy barrier, and none when nothing waits.
    pub fn seal_pending(&self) {
        let mut items = Vec::new();
        for s in self.shards.iter() {
            items.append(&mut s.lock());
        }
        if !items.is_empty() || !self.limbo.lock().is_empty() {
            self.seal(items);
        }
    }

    /// Seals a batch and frees every sealed batch no reader can hold.
    fn seal(&self, items: Vec<Retired>) {
        let d = domain();
        let epoch = d.seal_epoch();
        let oldest = d.min_active();
        let ready: Vec<Sealed> = {
            let mut limbo = self.limbo.lock();
            limbo.push(Sealed { epoch, items });
            let (ready, waiting) = std::mem::take(&mut *limbo)
                .into_iter()
                .partition(|b| b.epoch < oldest);
            *limbo = waiting;
            ready
        };
        for batch in ready {
            free_all(batch.items);
        }
    }

    /// Frees everything retired into this collector.
    ///
    /// # Safety
    /// No reader may still hold any object retired here (for a `Vfs`: the
    /// last reference is being dropped).
    pub unsafe fn reclaim_all(&self) {
        loop {
            let mut items: Vec<Retired> = Vec::new();
            for s in self.shards.iter() {
                items.append(&mut s.lock());
            }
            for b in std::mem::take(&mut *self.limbo.lock()) {
                items.extend(b.items);
            }
            if items.is_empty() {
                return;
            }
            // Freeing may retire more (an object owning others): loop.
            free_all(items);
        }
    }
}

/// Frees a retired `Box<T>` (`retire_box`, `retire_box_now`).
///
/// # Safety
/// `p` came from `Box::<T>::into_raw` and is freed once, after its grace
/// period.
unsafe fn free_box<T>(p: *mut ()) {
    // SAFETY: the contract above.
    drop(unsafe { Box::from_raw(p as *mut T) });
}

fn free_all(items: Vec<Retired>) {
    for r in items {
        // SAFETY: every reader that could hold it has left (the caller's
        // epoch check), and each retired object is listed once.
        unsafe { (r.free)(r.ptr) };
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no guard borrows this collector, and objects
        // retired here are read only under its guards.
        unsafe { self.reclaim_all() };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize as StdCount;
    use std::sync::Arc;

    struct Tracked(Arc<StdCount>);
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A full shard asks the pace when it reaches its batch and every
    /// `PACE_CHECK_EVERY` objects past it (also when a pair steps over the
    /// mark), not in between, and seals at `MAX_DEFERRAL` batches unasked.
    #[test]
    fn a_full_shard_seals_as_the_pace_allows() {
        let asks = std::cell::Cell::new(0);
        let ask = |answer: bool| {
            asks.set(asks.get() + 1);
            answer
        };
        assert!(!seals_now(99, 100, 1, || ask(true)), "below the batch");
        assert_eq!(asks.get(), 0);
        assert!(seals_now(100, 100, 1, || ask(true)), "at the batch, due");
        assert!(
            !seals_now(100, 100, 1, || ask(false)),
            "at the batch, not due"
        );
        assert_eq!(asks.get(), 2);
        assert!(!seals_now(101, 100, 1, || ask(true)), "between the checks");
        assert!(!seals_now(163, 100, 1, || ask(true)));
        assert_eq!(asks.get(), 2, "no clock read between the checks");
        assert!(seals_now(164, 100, 1, || ask(true)), "the next check");
        assert!(seals_now(165, 100, 2, || ask(true)), "a pair over the mark");
        assert!(!seals_now(166, 100, 2, || ask(true)));
        assert_eq!(asks.get(), 4);
        let cap = 100 * MAX_DEFERRAL;
        assert!(seals_now(cap + 1, 100, 1, || ask(false)), "the cap");
        assert_eq!(asks.get(), 4, "the cap asks nothing");
        // A batch of one (the tests' size) asks at every multiple step.
        assert!(seals_now(1, 1, 1, || ask(true)));
    }

    /// A seal takes along the other shards at or past their batch (held
    /// back by the pace), not its own nor those below the batch.
    #[test]
    fn a_seal_takes_the_shards_the_pace_held_back() {
        unsafe fn free_tracked(p: *mut ()) {
            // SAFETY: the test retires boxes of `Tracked` only, once each.
            drop(unsafe { Box::from_raw(p as *mut Tracked) });
        }
        let freed = Arc::new(StdCount::new(0));
        let tracked = || Retired {
            ptr: Box::into_raw(Box::new(Tracked(freed.clone()))) as *mut (),
            free: free_tracked,
        };
        let c = Collector::new().batch_size(2);
        c.shards[1].lock().extend([tracked(), tracked(), tracked()]);
        c.shards[2].lock().extend([tracked()]);
        c.shards[3].lock().extend([tracked(), tracked()]);
        let mut items = vec![tracked()];
        c.take_held_back(3, &mut items);
        let left: Vec<usize> = c.shards.iter().map(|s| s.lock().len()).collect();
        assert_eq!(items.len(), 4, "its own item and shard 1's three");
        assert_eq!(left[1..4], [0, 1, 2]);
        free_all(items);
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 4);
    }

    /// `seal_pending` frees what waits below the batch once no guard
    /// holds it, and nothing a guard of the caller's may hold. (Other
    /// tests' guards may be inside at any moment, the epoch domain being
    /// process-wide: they only delay frees, so the test calls again until
    /// they are out.)
    #[test]
    fn sealing_pending_objects_frees_them_once_no_guard_holds_them() {
        let c = Collector::new().batch_size(1024);
        let freed = Arc::new(StdCount::new(0));
        let retire = |n: usize| {
            for _ in 0..n {
                let p = Box::into_raw(Box::new(Tracked(freed.clone())));
                // SAFETY: a fresh box, retired once, never shared.
                unsafe { c.retire_box(p) };
            }
        };
        let freed_now = || freed.load(std::sync::atomic::Ordering::SeqCst);
        let seal_until_freed = |n: usize| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            c.seal_pending();
            while freed_now() < n && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
                c.seal_pending();
            }
            assert_eq!(freed_now(), n);
        };
        retire(3);
        assert_eq!(freed_now(), 0, "below the batch nothing is sealed");
        seal_until_freed(3);
        let g = c.enter();
        retire(2);
        c.seal_pending();
        assert_eq!(freed_now(), 3, "the caller's own guard holds them");
        drop(g);
        seal_until_freed(5);
    }

    /// The pace: a barrier is due `PACE` of its costs after the last one
    /// ended; before any was measured (cost 0), at once.
    #[test]
    fn barriers_are_due_pace_times_their_cost_apart() {
        assert!(pacing::due_at(1_000, 1_000, 0));
        assert!(!pacing::due_at(1_000 + 31 * 300, 1_000, 300));
        assert!(pacing::due_at(1_000 + 32 * 300, 1_000, 300));
        // A clock read before the last end (another thread's) is not due
        // unless nothing was measured.
        assert!(!pacing::due_at(500, 1_000, 300));
        assert!(pacing::due_at(500, 1_000, 0));
    }

    #[test]
    fn a_held_guard_keeps_retired_objects() {
        let c = Collector::new().batch_size(1);
        let freed = Arc::new(StdCount::new(0));
        let g = c.enter();
        // SAFETY: fresh boxes, retired once.
        unsafe { c.retire_box(Box::into_raw(Box::new(Tracked(freed.clone())))) };
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 0);
        // Another thread's seal must not free what this guard may hold.
        std::thread::scope(|s| {
            s.spawn(|| unsafe { c.retire_box(Box::into_raw(Box::new(Tracked(freed.clone())))) });
        });
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 0);
        drop(g);
        // The next seal with no reader inside frees both batches. Other
        // tests' guards may be inside at that moment (the epoch domain is
        // process-wide; they can only delay frees, never cause them), so
        // seal again until they are out.
        let later = Arc::new(StdCount::new(0));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while freed.load(std::sync::atomic::Ordering::SeqCst) < 2
            && std::time::Instant::now() < deadline
        {
            // SAFETY: a fresh box, retired once.
            unsafe { c.retire_box(Box::into_raw(Box::new(Tracked(later.clone())))) };
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// Two objects retired together (`retire_slab_pair`'s one shard lock)
    /// wait in the shard like any two retires, and each is freed once, by
    /// its own `free`. (No guard is held here: the epoch domain is
    /// process-wide, and a guard would hold back the frees that the other
    /// tests of this module assert.)
    #[test]
    fn a_retired_pair_is_queued_and_frees_both() {
        unsafe fn free_tracked(p: *mut ()) {
            // SAFETY: the test retires boxes of `Tracked` only, once each.
            drop(unsafe { Box::from_raw(p as *mut Tracked) });
        }
        let tracked = |n: &Arc<StdCount>| Retired {
            ptr: Box::into_raw(Box::new(Tracked(n.clone()))) as *mut (),
            free: free_tracked,
        };
        let freed = |n: &Arc<StdCount>| n.load(std::sync::atomic::Ordering::SeqCst);
        let (first, second) = (Arc::new(StdCount::new(0)), Arc::new(StdCount::new(0)));
        let c = Collector::new().batch_size(3);
        // SAFETY: fresh boxes, retired once.
        unsafe { c.retire_items([tracked(&first), tracked(&second)]) };
        assert_eq!(c.shards.iter().map(|s| s.lock().len()).sum::<usize>(), 2);
        assert_eq!(
            (freed(&first), freed(&second)),
            (0, 0),
            "below the batch: kept"
        );
        drop(c);
        assert_eq!((freed(&first), freed(&second)), (1, 1));
    }

    #[test]
    fn guards_nest_and_drop_frees_the_rest() {
        let freed = Arc::new(StdCount::new(0));
        {
            let c = Collector::new();
            let outer = c.enter();
            let inner = c.enter();
            drop(inner);
            // Still inside the outer guard: the record stays announced.
            let announced =
                LOCAL.with(|l| unsafe { &*l.record.get() }.active.load(Ordering::SeqCst));
            assert_ne!(announced, 0);
            drop(outer);
            let announced =
                LOCAL.with(|l| unsafe { &*l.record.get() }.active.load(Ordering::SeqCst));
            assert_eq!(announced, 0);
            for _ in 0..10 {
                unsafe { c.retire_box(Box::into_raw(Box::new(Tracked(freed.clone())))) };
            }
            assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 0);
        }
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 10);
    }

    /// Readers inside guards never see a freed object while writers swap
    /// and retire with tiny batches (under ASan this also proves no
    /// use-after-free).
    #[test]
    fn stress_readers_never_see_freed_objects() {
        struct Obj {
            alive: std::sync::atomic::AtomicBool,
            value: u64,
        }
        impl Drop for Obj {
            fn drop(&mut self) {
                self.alive.store(false, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let new_obj = |value| {
            Box::into_raw(Box::new(Obj {
                alive: std::sync::atomic::AtomicBool::new(true),
                value,
            }))
        };
        let c = Collector::new().batch_size(4);
        let cur = std::sync::atomic::AtomicPtr::new(new_obj(0));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _g = c.enter();
                        let p = cur.load(std::sync::atomic::Ordering::Acquire);
                        // SAFETY: loaded under a guard; retired objects are
                        // freed only after every guard that saw them left.
                        let o = unsafe { &*p };
                        let value = o.value;
                        // Hold it a while: it must stay alive and unchanged
                        // (not freed, not reused) for the whole guard.
                        for _ in 0..200 {
                            std::hint::spin_loop();
                        }
                        assert!(o.alive.load(std::sync::atomic::Ordering::SeqCst));
                        assert_eq!(std::hint::black_box(o.value), value);
                        last = last.max(value);
                    }
                    last
                });
            }
            let writers: Vec<_> = (0..2u64)
                .map(|w| {
                    let (c, cur) = (&c, &cur);
                    s.spawn(move || {
                        for i in 0..20_000 {
                            let old =
                                cur.swap(new_obj(w << 32 | i), std::sync::atomic::Ordering::AcqRel);
                            // SAFETY: swapped out: unreachable for new readers.
                            unsafe { c.retire_box(old) };
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        // SAFETY: the last object is unreachable once we drop the collector.
        unsafe { c.retire_box(cur.load(std::sync::atomic::Ordering::Acquire)) };
    }

    #[test]
    fn exited_threads_give_their_records_back() {
        let before = DOMAIN.record_count.load(Ordering::SeqCst);
        for _ in 0..100 {
            std::thread::spawn(|| drop(Collector::new().enter()))
                .join()
                .unwrap();
        }
        // Sequential threads reuse released records instead of growing the list.
        assert!(
            DOMAIN.record_count.load(Ordering::SeqCst) <= before + 40,
            "records leak"
        );
    }
}
