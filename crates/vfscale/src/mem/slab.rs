//! Slab caches for the core's cache-line-aligned objects (dentries, inodes,
//! open files, anonymous nodes, eventfd counters).
//!
//! Why: a general-purpose allocator serves a 64-byte-aligned 192-byte
//! object by over-allocating (mimalloc's aligned path took 256 bytes, glibc
//! adds its header and alignment slack), which made every empty file cost
//! ~130 bytes more than its objects (docs/PERFORMANCE.md, bytes per file).
//! Here objects of 64, 128, 192 or 256 bytes are carved out of 1 MiB
//! mmap'ed chunks at exact strides, and freed objects are reused.
//! Dentries and inodes have pools of their own, so the dentries of a
//! directory filled in a row lie in one ascending run (a listing streams
//! through them) instead of alternating with inodes; measured on
//! readdir-large, alternating cost a third of the listing speed.
//!
//! Invariants:
//! - An object's memory belongs to its size class forever: chunks are
//!   never unmapped (the memory stays for the next object of the class).
//!   Reclaim may give a chunk's *pages* back ([`release_free_chunks`],
//!   `MADV_DONTNEED`, as Linux's slab shrinking frees empty slabs) when
//!   every object of the chunk is free and in hands it holds; the
//!   objects stay on the free lists, and their memory reads as zeros
//!   until reused, which `alloc_in_place`'s contract allows. Only pools
//!   whose freed objects nothing reads are released (`RELEASABLE`).
//! - An object is in exactly one place while free: one thread's free list
//!   of its class, or one batch in its class's depot (`depot.rs`); a live
//!   object is in neither. So no object is handed out twice.
//! - Each thread keeps a free list per class (`LOCAL`); lists exchange
//!   whole batches of `BATCH` objects with the class's depot, which has
//!   one shard per CPU: a thread spills to and refills from the shard of
//!   the CPU it runs on and steals from the others only when that one is
//!   empty, so the common alloc and free touch only the thread's own
//!   memory, and two threads freeing at once (two processes exiting)
//!   never write the same depot line.
//! - A list holds fewer than `2 * BATCH` objects, except inside a bulk
//!   free scope (`BulkFree`, the deferred-put drain), where it may grow to
//!   `BULK_LIST_MAX` so the drain spills once per ~`BULK_LIST_MAX`
//!   objects instead of once per `BATCH`; the scope's end trims it back
//!   to `BATCH`. So a thread never holds more than `BULK_LIST_MAX` free
//!   objects of a class, and more than `2 * BATCH` only while it drains.
//! - `free` drops the value before it touches any free list, so a value
//!   whose drop frees other slab objects cannot re-enter a borrowed list.
//! - **Split objects** (`SlabPool::TAIL_BYTES` > 0: dentries, inodes) keep
//!   their head — what a hot lookup and stat read — apart from their tail:
//!   a chunk of a split pool (aligned to its size) holds its N heads packed
//!   first and the N tails after them, tail `i` belonging to head `i`, so
//!   [`tail_of`] finds a tail from its head's address alone. Why: the
//!   CPU fetches lines in adjacent pairs and a hot stat of 100,000 files
//!   is bound by the memory its lines span, not by their number
//!   (docs/PERFORMANCE.md, sessions 39–42); packed heads make the pair's
//!   other line another hot head instead of a cold name tail or refcount.
//! - With `--cfg vfscale_no_slab` (the AddressSanitizer run) objects come
//!   from the global allocator instead (a split object's head and tail in
//!   one allocation, the tail right after the head), so every use after
//!   free is still caught there.

#[cfg(not(vfscale_no_slab))]
use std::alloc::Layout;
#[cfg(not(vfscale_no_slab))]
use std::cell::UnsafeCell;
#[cfg(not(vfscale_no_slab))]
use std::sync::OnceLock;

#[cfg(not(vfscale_no_slab))]
use super::depot::{depot_shards, home_shard, Depot};

/// Object sizes served: 64, 128, 192 and 256 bytes, one pool each, plus
/// the dedicated pools below.
const SIZE_CLASSES: usize = 4;
/// Pools: the size classes, then one each for dentries, inodes, open
/// files and anonymous nodes.
const CLASSES: usize = SIZE_CLASSES + 4;
/// The dentry pool: dentries alone, so a directory's dentries created in a
/// row lie in one ascending run that a listing streams through (and the
/// inodes in another), instead of alternating with the inodes.
pub const DENTRY_POOL: usize = SIZE_CLASSES;
/// The inode pool (see `DENTRY_POOL`).
pub const INODE_POOL: usize = SIZE_CLASSES + 1;
/// The open-file pool. Type-stable: its memory only ever holds open files
/// (its chunks are never unmapped nor released: not in `RELEASABLE`),
/// which the lock-free fd lookup relies on (file/fdtable.rs).
pub const FILE_POOL: usize = SIZE_CLASSES + 2;
/// The anonymous-node pool (`anon::AnonInode`: a dentry, an inode and a
/// pipe or socket in one object, larger than the size classes): pipes
/// and sockets churn through it.
pub const ANON_POOL: usize = SIZE_CLASSES + 3;
/// The largest object a dedicated pool serves.
const MAX_DEDICATED: usize = 1024;
#[cfg(not(vfscale_no_slab))]
const CHUNK_BYTES: usize = 1 << 20;
/// Objects moved between a thread and the depot at a time.
#[cfg(not(vfscale_no_slab))]
const BATCH: usize = 64;

/// The size class of `T`, checked at compile time: a multiple of 64 bytes,
/// at most 256, aligned to 64.
pub const fn class_of<T>() -> usize {
    let size = core::mem::size_of::<T>();
    assert!(size.is_multiple_of(64) && size > 0 && size <= 64 * SIZE_CLASSES);
    assert!(core::mem::align_of::<T>() == 64);
    size / 64 - 1
}

/// Types with a pool of their own (else they share their size class's).
pub trait SlabPool {
    const POOL: usize;
    /// The size of the object's tail, kept apart from the `T` itself (its
    /// head) in a dedicated pool; 0 for whole objects. A split object is
    /// made with [`alloc_in_place`] (its tail written through
    /// [`tail_of`]) and its `Drop` drops its tail.
    const TAIL_BYTES: usize = 0;
}

/// `T`'s pool, checked at compile time: a size class holds objects of
/// exactly its size; a dedicated pool any multiple of 64 bytes up to
/// `MAX_DEDICATED`, aligned to 64.
const fn pool_of<T: SlabPool>() -> usize {
    assert!(T::POOL < CLASSES);
    if T::POOL < SIZE_CLASSES {
        assert!(class_of::<T>() == T::POOL);
    } else {
        let size = core::mem::size_of::<T>();
        assert!(size.is_multiple_of(64) && size > 0 && size <= MAX_DEDICATED);
        assert!(core::mem::align_of::<T>() == 64);
    }
    assert!(T::TAIL_BYTES.is_multiple_of(64) && T::TAIL_BYTES <= MAX_DEDICATED);
    assert!(T::TAIL_BYTES == 0 || T::POOL >= SIZE_CLASSES);
    T::POOL
}

/// The bytes one object of `T` occupies, head and tail.
pub const fn footprint<T: SlabPool>() -> usize {
    core::mem::size_of::<T>() + T::TAIL_BYTES
}

/// The layout of one object's memory where objects come from the global
/// allocator (`vfscale_no_slab`): head and tail together.
#[cfg(vfscale_no_slab)]
fn boxed_layout<T: SlabPool>() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(footprint::<T>(), core::mem::align_of::<T>())
        .expect("a slab object's layout")
}

/// How many objects one chunk holds: heads of `size` bytes, each with a
/// tail of `tail` bytes (0 for whole objects).
#[cfg(not(vfscale_no_slab))]
const fn per_chunk(size: usize, tail: usize) -> usize {
    CHUNK_BYTES / (size + tail)
}

/// The tail of the split object whose head is `head` (see
/// `SlabPool::TAIL_BYTES`): in a chunk of `T`'s pool, the tail with the
/// head's index, after all the heads.
#[inline(always)]
pub fn tail_of<T: SlabPool>(head: *const T) -> *mut u8 {
    const { assert!(T::TAIL_BYTES > 0) };
    #[cfg(vfscale_no_slab)]
    {
        head.wrapping_add(1) as *mut u8
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let size = core::mem::size_of::<T>();
        let n = const { per_chunk(core::mem::size_of::<T>(), T::TAIL_BYTES) };
        let addr = head as usize;
        let base = addr & !(CHUNK_BYTES - 1);
        let index = (addr - base) / size;
        head.cast::<u8>()
            .wrapping_add(n * size - (addr - base) + index * T::TAIL_BYTES) as *mut u8
    }
}

/// The size of the objects of `pool`.
#[cfg(not(vfscale_no_slab))]
fn object_size(pool: usize, type_size: usize) -> usize {
    if pool < SIZE_CLASSES {
        (pool + 1) * 64
    } else {
        type_size
    }
}

/// A batch of free objects (their addresses).
#[cfg(not(vfscale_no_slab))]
type Batch = Vec<usize>;

/// Each class's depot of free batches, sharded per CPU (`depot.rs`),
/// created on first use (its shard count reads the CPU count).
#[cfg(not(vfscale_no_slab))]
static DEPOTS: [OnceLock<Depot<Batch>>; CLASSES] = [const { OnceLock::new() }; CLASSES];

/// Objects carved out of chunks so far, per class (a statistic for
/// `census`). Relaxed everywhere: read after the threads that carved
/// are joined; pairs with nothing.
#[cfg(not(vfscale_no_slab))]
static CARVED: [std::sync::atomic::AtomicUsize; CLASSES] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; CLASSES];

/// Objects per chunk of each class, stored when a chunk is mapped (the
/// same value each time; 0 until then). Relaxed: read by
/// `release_free_chunks`, which releases nothing of a class it reads as
/// 0; pairs with nothing.
#[cfg(not(vfscale_no_slab))]
static PER_CHUNK: [std::sync::atomic::AtomicUsize; CLASSES] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; CLASSES];

/// The pools whose wholly free chunks `release_free_chunks` gives back:
/// dentries and inodes, freed only after the epoch's grace period, so no
/// reader touches a free one. Not the open-file pool (type-stable: a
/// stale fd lookup may add to a freed file's count, which must keep its
/// dead value, `file/fdtable.rs`) nor the others (not what reclaim frees).
#[cfg(not(vfscale_no_slab))]
const RELEASABLE: [usize; 2] = [DENTRY_POOL, INODE_POOL];

/// Each class's depot's `pushes` after `release_free_chunks` last
/// scanned it: a depot nothing came back to since is not scanned again
/// (an idle reclaim pass stays cheap). Relaxed: a heuristic (a push that
/// lands while a scan runs is counted as seen: its chunk waits for the
/// next change); pairs with nothing.
#[cfg(not(vfscale_no_slab))]
static SCANNED_PUSHES: [std::sync::atomic::AtomicUsize; CLASSES] =
    [const { std::sync::atomic::AtomicUsize::new(usize::MAX) }; CLASSES];

/// The length at which a list spills outside a bulk free scope.
#[cfg(not(vfscale_no_slab))]
const LIST_LIMIT: usize = 2 * BATCH;

/// The length at which a list spills inside a bulk free scope: 1024
/// objects, so a drain of 1024 files (the default `defer_max_entries`)
/// takes each class's depot lock about once instead of sixteen times.
/// The bound keeps the memory a draining thread withholds from others to
/// 1024 objects per pool (64 KiB to 1 MiB by object size; ~1.7 MiB over
/// all eight pools at worst), and the scope's end gives all but `BATCH`
/// of them back.
pub const BULK_LIST_MAX: usize = 1024;

// Whole batches, and room above the ordinary limit.
#[cfg(not(vfscale_no_slab))]
const _: () = assert!(BULK_LIST_MAX.is_multiple_of(BATCH) && BULK_LIST_MAX > LIST_LIMIT);

#[cfg(not(vfscale_no_slab))]
struct Local {
    /// The free lists. Each keeps the buffer its own thread allocated:
    /// refills copy a batch in and spills copy objects out, so a list's
    /// growth inside a bulk scope never reallocates (and frees) a buffer
    /// another thread's allocator arena owns, a write to a line that
    /// thread uses.
    free: [Vec<usize>; CLASSES],
    /// Empty batch buffers (left by refills) that spills fill next, so a
    /// spill rarely allocates and a stolen batch's buffer is rarely freed
    /// by the thread that stole it; at most `MAX_SPARES`.
    spare: Vec<Batch>,
    /// A list spills when a free would make it this long: `LIST_LIMIT`,
    /// or `BULK_LIST_MAX` inside a bulk free scope.
    limit: usize,
    /// Nesting depth of bulk free scopes.
    bulk_depth: usize,
}

#[cfg(not(vfscale_no_slab))]
impl Drop for Local {
    fn drop(&mut self) {
        let home = home_shard();
        for (class, list) in self.free.iter_mut().enumerate() {
            if !list.is_empty() {
                depot(class).push(home, std::mem::take(list));
            }
        }
    }
}

#[cfg(not(vfscale_no_slab))]
thread_local! {
    /// Touched only through [`with_local`].
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local {
            free: [const { Vec::new() }; CLASSES],
            spare: Vec::new(),
            limit: LIST_LIMIT,
            bulk_depth: 0,
        })
    };
}

/// Runs `f` on the calling thread's free lists; `None` during thread
/// teardown (the lists are gone). No `RefCell`: the lists are reached only
/// here, by their own thread, and `f` never re-enters this module's list
/// functions (it touches the lists and at most the depot; `free` drops the
/// value before calling here), so no second reference can exist.
#[cfg(not(vfscale_no_slab))]
#[inline(always)]
fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL
        .try_with(|l| {
            // SAFETY: see above: the only reference to the thread's lists
            // while `f` runs.
            f(unsafe { &mut *l.get() })
        })
        .ok()
}

#[cfg(not(vfscale_no_slab))]
fn depot(class: usize) -> &'static Depot<Batch> {
    DEPOTS[class].get_or_init(|| Depot::new(depot_shards()))
}

/// A batch of free objects of `class`: from the depot (this CPU's shard
/// first, then stolen), else a new chunk.
#[cfg(not(vfscale_no_slab))]
#[cold]
fn refill(class: usize, size: usize, tail: usize) -> Batch {
    let home = home_shard();
    if let Some(b) = depot(class).pop(home) {
        return b;
    }
    // Chunks come straight from mmap: page-aligned (so 64-aligned objects
    // need no slack) and outside the allocator's size classes, whose
    // rounding of a 64-byte-aligned 64 KiB request cost a quarter more.
    let chunk = map_chunk();
    let n = per_chunk(size, tail);
    CARVED[class].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    PER_CHUNK[class].store(n, std::sync::atomic::Ordering::Relaxed);
    // Highest address first, so pops hand out ascending addresses; all
    // but one batch go to this CPU's shard, under one lock. A split
    // pool's tails lie after the heads (`tail_of`), untouched here.
    let mut all: Vec<usize> = (0..n).rev().map(|i| chunk as usize + i * size).collect();
    let mine = all.split_off(all.len().saturating_sub(BATCH));
    depot(class).push_all(home, all.chunks(BATCH).map(<[usize]>::to_vec));
    mine
}

/// Empty batch buffers a thread keeps for its spills.
#[cfg(not(vfscale_no_slab))]
const MAX_SPARES: usize = 16;

/// Moves all but the newest `keep` objects of `list` (the cache-warm ones,
/// which this thread's next allocations take) to this CPU's depot shard,
/// in batches of `BATCH` (filling spare buffers first), under one
/// acquisition of its lock.
#[cfg(not(vfscale_no_slab))]
fn spill_excess(class: usize, list: &mut Vec<usize>, keep: usize, spare: &mut Vec<Batch>) {
    let Some(excess) = list.len().checked_sub(keep).filter(|&e| e > 0) else {
        return;
    };
    depot(class).push_all(
        home_shard(),
        list[..excess].chunks(BATCH).map(|objects| {
            let mut b = spare.pop().unwrap_or_else(|| Vec::with_capacity(BATCH));
            b.extend_from_slice(objects);
            b
        }),
    );
    list.drain(..excess);
}

/// Keeps an emptied batch buffer for a later spill, if it is a full-size
/// one and there is room.
#[cfg(not(vfscale_no_slab))]
fn recycle(spare: &mut Vec<Batch>, mut batch: Batch) {
    if spare.len() < MAX_SPARES && batch.capacity() >= BATCH {
        batch.clear();
        spare.push(batch);
    }
}

/// A fresh `CHUNK_BYTES` region aligned to its size (so `tail_of` finds
/// an object's chunk from its address). No `MADV_HUGEPAGE`: with
/// the kernel's `defrag=madvise` a huge-page fault may compact memory
/// synchronously, which made the create rate of a million files swing by
/// 2x between runs; listing speed did not depend on the page size.
#[cfg(not(vfscale_no_slab))]
fn map_chunk() -> *mut u8 {
    // Twice the size, then the unaligned ends are unmapped. The holes
    // left keep neighbouring chunks from merging into one mapping, so
    // each chunk is a mapping of its own: vm.max_map_count's default of
    // 65,530 would be reached at 64 GiB of objects.
    let region = super::map_anonymous(
        2 * CHUNK_BYTES,
        Layout::from_size_align(CHUNK_BYTES, CHUNK_BYTES).expect("chunk layout"),
        // Half of it is unmapped at once, and objects are carved (written)
        // before they are read.
        false,
    )
    .cast::<libc::c_void>();
    let start = region as usize;
    let chunk = start.next_multiple_of(CHUNK_BYTES);
    let end = start + 2 * CHUNK_BYTES;
    // SAFETY: both ranges lie inside the mapping just made and outside
    // the chunk kept; page-aligned (mmap's start and the chunk are).
    unsafe {
        if chunk > start {
            libc::munmap(region, chunk - start);
        }
        if end > chunk + CHUNK_BYTES {
            libc::munmap(
                (chunk + CHUNK_BYTES) as *mut libc::c_void,
                end - chunk - CHUNK_BYTES,
            );
        }
    }
    region.cast::<u8>().wrapping_add(chunk - start)
}

/// Moves `value` into a slab object of its pool (a whole object: split
/// ones are built with `alloc_in_place`).
pub fn alloc<T: SlabPool>(value: T) -> *mut T {
    const { assert!(T::TAIL_BYTES == 0) };
    #[cfg(vfscale_no_slab)]
    {
        let _ = const { pool_of::<T>() };
        Box::into_raw(Box::new(value))
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let class = const { pool_of::<T>() };
        let size = object_size(class, core::mem::size_of::<T>());
        let p = take_object(class, size, 0) as *mut T;
        // SAFETY: a free, exclusively owned object of T's size and alignment.
        unsafe { p.write(value) };
        p
    }
}

/// A free object of `class`: from this thread's list, else a batch.
#[cfg(not(vfscale_no_slab))]
#[inline(always)]
fn take_object(class: usize, size: usize, tail: usize) -> usize {
    match with_local(|l| l.free[class].pop()) {
        Some(Some(a)) => a,
        _ => take_object_slow(class, size, tail),
    }
}

/// `take_object` with an empty list (refill it) or no list (teardown).
#[cfg(not(vfscale_no_slab))]
#[cold]
#[inline(never)]
fn take_object_slow(class: usize, size: usize, tail: usize) -> usize {
    with_local(|l| {
        let list = &mut l.free[class];
        if list.is_empty() {
            let batch = refill(class, size, tail);
            list.extend_from_slice(&batch);
            recycle(&mut l.spare, batch);
        }
        list.pop()
    })
    .flatten()
    // Thread teardown: no local list; one object from the depot.
    .unwrap_or_else(|| {
        let mut b = refill(class, size, tail);
        let a = b.pop().expect("a refill is never empty");
        if !b.is_empty() {
            depot(class).push(home_shard(), b);
        }
        a
    })
}

/// An object of `T`'s pool to initialise in place: either memory no `T`
/// has used yet (zero-filled) or a freed `T` of this pool whose fields
/// still hold their last values. For type-stable pools, whose freed
/// objects other threads may still touch through atomics (see
/// `FILE_POOL`); such fields must be re-initialised with atomic stores.
/// A split object's tail (at [`tail_of`]) is in the same state.
pub fn alloc_in_place<T: SlabPool>() -> *mut T {
    #[cfg(vfscale_no_slab)]
    {
        let _ = const { pool_of::<T>() };
        let layout = boxed_layout::<T>();
        // SAFETY: a non-zero size (checked by `pool_of`).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        p as *mut T
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let class = const { pool_of::<T>() };
        let size = object_size(class, core::mem::size_of::<T>());
        take_object(class, size, T::TAIL_BYTES) as *mut T
    }
}

/// Drops the value at `p` and returns its memory to the slab.
///
/// # Safety
/// `p` came from [`alloc`] or [`alloc_in_place`] with the same `T`, is
/// freed once, and nobody can reach it any more.
pub unsafe fn free<T: SlabPool>(p: *mut T) {
    #[cfg(vfscale_no_slab)]
    {
        // SAFETY: the contract: a live value, dropped once, whose memory
        // the global allocator gave with this layout (`alloc` boxes a
        // whole object: the same layout).
        unsafe {
            core::ptr::drop_in_place(p);
            std::alloc::dealloc(p as *mut u8, boxed_layout::<T>());
        }
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let class = const { pool_of::<T>() };
        // SAFETY: the contract: a live value, dropped once.
        unsafe { core::ptr::drop_in_place(p) };
        let addr = p as usize;
        let pushed = with_local(|l| {
            let list = &mut l.free[class];
            if list.len() + 1 >= l.limit {
                return false;
            }
            list.push(addr);
            true
        });
        if pushed != Some(true) {
            free_slow(class, addr);
        }
    }
}

/// `free` onto a full list (all but the newest `BATCH` objects go to the
/// depot; the recently freed, cache-warm ones stay for this thread's next
/// allocations) or with no list (teardown: straight to the depot).
#[cfg(not(vfscale_no_slab))]
#[cold]
#[inline(never)]
fn free_slow(class: usize, addr: usize) {
    let spilled = with_local(|l| {
        let list = &mut l.free[class];
        list.push(addr);
        spill_excess(class, list, BATCH, &mut l.spare);
    });
    if spilled.is_none() {
        depot(class).push(home_shard(), vec![addr]);
    }
}

/// A scope in which the calling thread's free lists may grow to
/// `BULK_LIST_MAX` objects before they spill (the deferred-put drain frees
/// thousands of objects in a row); dropping the last one trims every list
/// back to `BATCH`. Scopes nest. Not `Send`: it belongs to its thread's
/// lists.
pub struct BulkFree {
    _thread_bound: core::marker::PhantomData<*const ()>,
}

/// Opens a [`BulkFree`] scope on the calling thread.
pub fn bulk_free() -> BulkFree {
    #[cfg(not(vfscale_no_slab))]
    let _ = with_local(|l| {
        l.bulk_depth += 1;
        l.limit = BULK_LIST_MAX;
    });
    BulkFree {
        _thread_bound: core::marker::PhantomData,
    }
}

impl Drop for BulkFree {
    fn drop(&mut self) {
        #[cfg(not(vfscale_no_slab))]
        let _ = with_local(|l| {
            l.bulk_depth = l.bulk_depth.saturating_sub(1);
            if l.bulk_depth > 0 {
                return;
            }
            l.limit = LIST_LIMIT;
            for (class, list) in l.free.iter_mut().enumerate() {
                if list.len() >= LIST_LIMIT {
                    spill_excess(class, list, BATCH, &mut l.spare);
                }
            }
        });
    }
}

/// Where the free objects of one pool are (tests: no object is free twice,
/// and the free ones balance with what was carved once every other user
/// of the pool is gone).
#[derive(Debug, Clone, Default)]
pub struct Census {
    /// Objects carved out of chunks for the pool since the start.
    pub carved: usize,
    /// Addresses of the free objects in the depot and in the calling
    /// thread's list (other threads' lists are not visible).
    pub free: Vec<usize>,
    /// Free objects held by the calling thread's list.
    pub local: usize,
    /// Batches per depot shard.
    pub shard_batches: Vec<usize>,
}

/// Gives the pages of every chunk of the `RELEASABLE` pools whose
/// objects are all free back to the system (`MADV_DONTNEED`), and
/// returns the bytes given back. Reclaim calls it (`drop_caches`): the
/// cache it empties would otherwise keep its memory in the free lists
/// for good.
///
/// Scans a pool only when its depot holds a chunk's worth of objects and
/// batches came back to it since the last scan, so that a pass with
/// nothing new to give back costs a few lock acquisitions.
///
/// A chunk qualifies when all its objects are in the depot or in the
/// calling thread's list: the depot's batches are taken out first (so
/// no other thread can allocate from them while the chunk is released)
/// and put back after. Objects in other threads' lists are not seen, so
/// their chunks stay (a missed release, never a wrong one). Meanwhile
/// other threads find the depot empty and map fresh chunks.
pub fn release_free_chunks() -> usize {
    #[cfg(vfscale_no_slab)]
    {
        0
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let mut released = 0;
        for class in RELEASABLE {
            let per_chunk = PER_CHUNK[class].load(std::sync::atomic::Ordering::Relaxed);
            let d = depot(class);
            let held: usize = d.lens().iter().sum();
            if per_chunk == 0
                || held * BATCH < per_chunk
                || d.pushes() == SCANNED_PUSHES[class].load(std::sync::atomic::Ordering::Relaxed)
            {
                continue;
            }
            let batches = d.take_all();
            let mut free_in: std::collections::HashMap<usize, usize> =
                std::collections::HashMap::new();
            let mut count = |a: &usize| *free_in.entry(a & !(CHUNK_BYTES - 1)).or_default() += 1;
            batches.iter().flatten().for_each(&mut count);
            with_local(|l| l.free[class].iter().for_each(&mut count));
            for (&chunk, &free) in &free_in {
                if free == per_chunk {
                    // SAFETY: the chunk is a mapping of its own of
                    // CHUNK_BYTES (`map_chunk`) whose every object is
                    // free and held by this call (taken from the depot or
                    // in this thread's list, which nothing here pops), so
                    // no live value lies in it; its objects' next owners
                    // write them whole (`alloc`, `alloc_in_place`).
                    let r = unsafe {
                        libc::madvise(chunk as *mut libc::c_void, CHUNK_BYTES, libc::MADV_DONTNEED)
                    };
                    if r == 0 {
                        released += CHUNK_BYTES;
                    }
                }
            }
            d.push_all(home_shard(), batches);
            SCANNED_PUSHES[class].store(d.pushes(), std::sync::atomic::Ordering::Relaxed);
        }
        released
    }
}

/// A census of `pool` (see [`Census`]); empty under `vfscale_no_slab`.
#[doc(hidden)]
pub fn census(pool: usize) -> Census {
    #[cfg(vfscale_no_slab)]
    {
        let _ = pool;
        Census::default()
    }
    #[cfg(not(vfscale_no_slab))]
    {
        let Some(class) = (pool < CLASSES).then_some(pool) else {
            return Census::default();
        };
        let d = depot(class);
        let mut free = Vec::new();
        d.for_each(|b| free.extend_from_slice(b));
        let local = with_local(|l| {
            free.extend_from_slice(&l.free[class]);
            l.free[class].len()
        })
        .unwrap_or(0);
        Census {
            carved: CARVED[class].load(std::sync::atomic::Ordering::Relaxed),
            free,
            local,
            shard_batches: d.lens(),
        }
    }
}

/// The collector's free function for slab objects (`Collector::retire`).
///
/// # Safety
/// As [`free`].
pub unsafe fn free_erased<T: SlabPool>(p: *mut ()) {
    // SAFETY: forwarded contract.
    unsafe { free(p as *mut T) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Obj([u64; 24]);
    impl SlabPool for Obj {
        const POOL: usize = class_of::<Obj>();
    }

    #[test]
    fn objects_are_aligned_distinct_and_reused() {
        let a = alloc(Obj([1; 24]));
        let b = alloc(Obj([2; 24]));
        assert_eq!(a as usize % 64, 0);
        assert_ne!(a, b);
        // SAFETY: fresh objects of ours.
        unsafe {
            assert_eq!((*a).0[23], 1);
            assert_eq!((*b).0[0], 2);
            free(a);
        }
        let c = alloc(Obj([3; 24]));
        #[cfg(not(vfscale_no_slab))]
        assert_eq!(c, a, "a freed object is reused first");
        unsafe {
            free(b);
            free(c);
        }
    }

    #[test]
    fn values_are_dropped_and_threads_exchange_batches() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        #[repr(C, align(64))]
        struct Counted(u8);
        impl SlabPool for Counted {
            const POOL: usize = class_of::<Counted>();
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, SeqCst);
            }
        }
        let ptrs: Vec<usize> = (0..1000).map(|_| alloc(Counted(7)) as usize).collect();
        // Freed on another thread (as the epoch collector may), then
        // allocated again there and here.
        std::thread::spawn(move || {
            for p in ptrs {
                // SAFETY: each allocated above, freed once.
                unsafe { free(p as *mut Counted) };
            }
            let again: Vec<usize> = (0..500).map(|_| alloc(Counted(8)) as usize).collect();
            for p in again {
                unsafe { free(p as *mut Counted) };
            }
        })
        .join()
        .unwrap();
        assert_eq!(DROPS.load(SeqCst), 1500);
        let mine: Vec<*mut Counted> = (0..300).map(|_| alloc(Counted(9))).collect();
        let mut sorted: Vec<usize> = mine.iter().map(|&p| p as usize).collect();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 300, "no object handed out twice");
        for p in mine {
            unsafe { free(p) };
        }
    }
}
