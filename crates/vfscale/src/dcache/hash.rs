//! The dentry hash table: an array of bit-locked chains
//! ([`crate::sync::bitlock`]) that grows with the namespace, generic
//! over the node type so the protocol can be tested and loom-checked
//! without dentries.
//!
//! Why it grows: a lookup's first miss is its bucket, and a random bucket of
//! a big array also costs a TLB miss (a hot stat of 30,000 files in random
//! order: 186–260 ns with 2^20 buckets, 140–151 ns with 2^16, session 9;
//! docs/PERFORMANCE.md). A table sized to the names it holds keeps its
//! buckets within the TLB's reach while chains stay short, and a small
//! namespace does not reserve megabytes.
//!
//! Invariants (besides those of the chains, which this module inherits):
//! - `current` holds the bucket array's address with `32 - log2(size)` (the
//!   index's shift) in the low six bits (the array is 64-byte aligned). Lock-free readers load it
//!   once per lookup; the array it names stays allocated while they hold an
//!   epoch guard, because a replaced array is retired through the epoch
//!   scheme (the caller of [`ChainTable::grow`] and of the shrinks does
//!   that). So while a thread holds its guard, no later array can have the
//!   address, and hence the tagged word, of one it loaded.
//! - A hash always maps to the same bucket of a given array: the top `bits`
//!   bits of the hash times the 64-bit golden ratio (Fibonacci hashing). The
//!   multiply spreads every input bit into the high bits, so a weak hash
//!   (say, a name hash XOR a parent address) still spreads over the buckets.
//! - **Chains change only under the lock of a bucket of the current
//!   array.** [`ChainTable::lock`] locks the bucket, then checks that the
//!   array is still current (else it retries in the new one). A resize
//!   locks every bucket of the old array before moving any node, publishes
//!   the new array (Release) before unlocking them, and so a locker that
//!   gets an old bucket after the resize sees the new array and retries.
//!   The new array's buckets are filled without their locks: no locker
//!   can reach an array before it is published.
//! - **The table grows on inserts**, when a shard of the name count passes
//!   its share of the buckets, halved for tables under `2^DENSE_FROM_BITS`
//!   buckets (at most half as many names as buckets there, as many above);
//!   it doubles below that size and quadruples from it on
//!   (`growth_step`). `SHARDS` counters, each covering a fixed slice of
//!   the hash space, are changed under bucket locks by [`LockedBucket`]
//!   and recounted by every resize, so no insert writes a line that every
//!   insert writes. Growth stops at `max_bits`.
//! - **It shrinks only when asked** ([`ChainTable::shrink_to_fit`], which
//!   drop_caches calls): to the smallest size, not below the one it was
//!   made with, that its names would fill to a quarter of its growth
//!   threshold, so a shrunk table grows again only after its names have
//!   quadrupled. Removals alone never shrink it (Linux's dcache hash never
//!   resizes at all): a namespace that once held N names keeps at most
//!   16 × 4N bytes of buckets until the next drop_caches.
//! - A resize moves every node while lock-free readers may be scanning: a
//!   reader standing on a moved node continues down its new chain, so it
//!   can miss, never loop (each node's link is rewritten once per resize,
//!   to a node moved before it) and never reach a freed node (nothing is
//!   removed while the old buckets are locked). A lock-free miss was never
//!   authoritative (callers confirm it under the bucket lock), so readers
//!   need nothing new.
//! - Arrays are allocated zeroed: all-zero bytes are empty, unlocked
//!   buckets. From `MAP_FROM_BYTES` on they are mappings of their own
//!   (zero pages from the system, unmapped when freed); below, the
//!   allocator writes the zeros itself (the 64-byte alignment the tag
//!   needs), so such an array is resident from its allocation.
//!
//! Readers never write, and nothing here frees a node: see
//! [`crate::sync::bitlock`].

use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::*};
pub use crate::sync::bitlock::{Bucket, BucketGuard, ChainIter, ChainNode};
use crossbeam_utils::CachePadded;
use std::alloc::Layout;

/// 2^64 / φ: the Fibonacci-hashing multiplier.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Largest table: 2^32 buckets (the index is taken from the high 32 bits).
pub const MAX_BUCKET_BITS: u32 = 32;
/// The array's alignment, whose low bits carry its size in `current`.
const ARRAY_ALIGN: usize = 64;
const BITS_MASK: usize = ARRAY_ALIGN - 1;
/// Name-count shards: each counts the names whose hash falls in one
/// 1/SHARDS of the hash space (the top `SHARD_BITS` bits of the product).
const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;
/// From this size on (4 MiB of buckets) a table fills up to one name per
/// bucket before growing; smaller ones grow at half that. Measured
/// (docs/PERFORMANCE.md, "the dentry hash grows"): up to ~100,000 names
/// short chains pay (a table at load 0.4 stats as fast as one at 0.1, one
/// at 0.8 ~10% slower), while at a million names the memory does (2^21
/// buckets and the retired 2^20 array cost 50 bytes per name, a tenth of
/// issue 6's 512-byte budget; 2^20 costs 17).
const DENSE_FROM_BITS: u32 = 18;
/// Buckets of the current array run ahead of the one being moved, whose
/// first node a resize prefetches (the nodes are scattered).
const MOVE_PREFETCH_AHEAD: usize = 8;

// The size fits in the alignment's bits.
const _: () = assert!(MAX_BUCKET_BITS as usize <= BITS_MASK);

/// A node that a [`ChainTable`] can rehash.
///
/// # Safety
///
/// `table_hash` must return the hash the node was inserted under for as
/// long as it is in the table (a node whose hash changes is removed first,
/// and re-inserted under the new one), and must only read the node.
pub unsafe trait TableNode: ChainNode {
    fn table_hash(&self) -> u64;
}

/// A hash table of bit-locked chains, `2^bits` of them, growing up to
/// `2^max_bits`.
pub struct ChainTable<N> {
    /// The current bucket array, tagged with its bits (see the module docs).
    current: AtomicPtr<Bucket<N>>,
    /// Names per hash-space shard, for the growth test.
    counts: [CachePadded<AtomicUsize>; SHARDS],
    /// Held by the thread that is resizing.
    resizing: AtomicBool,
    /// The size it was made with: shrinks stop there.
    min_bits: u32,
    max_bits: u32,
}

// SAFETY: the table owns its bucket arrays (shared only through the
// atomics above); nodes are `Sync` (`ChainNode`) and the table never
// frees them.
unsafe impl<N: ChainNode> Send for ChainTable<N> {}
// SAFETY: as above; every shared access is through atomics.
unsafe impl<N: ChainNode> Sync for ChainTable<N> {}

/// The top `bits` bits of `hash × GOLDEN`: also how the in-lookup table
/// (`in_lookup.rs`) picks a shard from the same key.
#[inline(always)]
pub(crate) fn index_in(hash: u64, bits: u32) -> usize {
    // Two shifts so that bits == 0 needs no branch (a single shift by 64
    // would overflow).
    ((hash.wrapping_mul(GOLDEN) >> 32) >> (32 - bits)) as usize
}

/// The count shard of bucket `i` of a `2^bits` array: the top
/// `SHARD_BITS` bits of the bucket's hashes (or the bucket itself, for
/// arrays with fewer buckets than shards).
#[inline(always)]
fn shard_of(i: usize, bits: u32) -> usize {
    i >> bits.saturating_sub(SHARD_BITS)
}

/// The names a `2^bits` table holds before it grows, all shards at their
/// threshold (`grow_past`'s density).
fn capacity(bits: u32) -> usize {
    let buckets = 1usize << bits;
    if bits < DENSE_FROM_BITS {
        (buckets / 2).max(1)
    } else {
        buckets
    }
}

/// How far below its growth threshold a shrink leaves the table: a shrunk
/// table holds at most 1/`SHRINK_SLACK` of what would grow it again.
const SHRINK_SLACK: usize = 4;

/// The count past which one shard asks a `2^bits` table that may grow
/// up to `2^max_bits` to do so: the buckets its slice of the hash space
/// has, halved below `2^DENSE_FROM_BITS` buckets (at least one name).
fn grow_past(bits: u32, max_bits: u32) -> usize {
    if bits >= max_bits {
        return usize::MAX;
    }
    let share = 1usize << bits.saturating_sub(SHARD_BITS);
    let share = if bits < DENSE_FROM_BITS {
        share / 2
    } else {
        share
    };
    share.max(1)
}

/// How many times two a `2^bits` table grows by: ×2 below
/// `2^DENSE_FROM_BITS` buckets, ×4 from there on, where a resize moves
/// hundreds of thousands of scattered nodes (one miss each): a million
/// names then cost one resize of a quarter of them instead of two of
/// three quarters (docs/PERFORMANCE.md).
fn growth_step(bits: u32) -> u32 {
    if bits < DENSE_FROM_BITS {
        1
    } else {
        2
    }
}

/// The tagged word of a `2^bits` array at `base`: the tag is `32 - bits`,
/// the shift `index_in` applies, so a lookup takes it as it is (the
/// compiler folds `32 - (32 - tag)` away).
#[inline(always)]
fn encode<N>(base: *mut Bucket<N>, bits: u32) -> *mut Bucket<N> {
    base.map_addr(|a| a | (MAX_BUCKET_BITS - bits) as usize)
}

#[inline(always)]
fn decode<N>(tagged: *mut Bucket<N>) -> (*mut Bucket<N>, u32) {
    (
        tagged.map_addr(|a| a & !BITS_MASK),
        MAX_BUCKET_BITS - (tagged.addr() & BITS_MASK) as u32,
    )
}

fn array_layout<N>(bits: u32) -> Layout {
    Layout::array::<Bucket<N>>(1usize << bits)
        .and_then(|l| l.align_to(ARRAY_ALIGN))
        .expect("ChainTable: bucket array too large")
}

/// A `2^bits` array of empty, unlocked buckets, tagged with `bits`;
/// `filled`: a resize's, whose every page is about to be written (see
/// `alloc_zeroed_array`).
fn new_array<N: ChainNode>(bits: u32, filled: bool) -> *mut Bucket<N> {
    let layout = array_layout::<N>(bits);
    #[cfg(not(loom))]
    // A `Bucket` is an `AtomicPtr` and an `AtomicUsize`, for which
    // all-zero bytes are valid: the null pointer with the lock bit clear
    // (an empty unlocked chain) and no hint.
    let base = alloc_zeroed_array(layout, filled) as *mut Bucket<N>;
    #[cfg(loom)]
    let _ = filled;
    #[cfg(loom)]
    // SAFETY: as above; loom atomics carry model state, so each bucket is
    // constructed in place below.
    let base = unsafe { std::alloc::alloc(layout) } as *mut Bucket<N>;
    if base.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    #[cfg(loom)]
    for i in 0..1usize << bits {
        // SAFETY: inside the allocation, which is uninitialised.
        unsafe { base.add(i).write(Bucket::new()) };
    }
    encode(base, bits)
}

/// A bucket array replaced by a resize: frees it when dropped. Drop it only
/// when no reader can still be scanning it (retire it through the epoch
/// scheme), and never while a locker may still wait on one of its buckets
/// (the same grace period covers them: lockers hold epoch guards).
pub struct RetiredBuckets<N> {
    tagged: *mut Bucket<N>,
}

// SAFETY: owned memory holding atomics; freeing it on another thread is
// what retiring means.
unsafe impl<N> Send for RetiredBuckets<N> {}

impl<N> Drop for RetiredBuckets<N> {
    fn drop(&mut self) {
        free_array(self.tagged);
    }
}

fn free_array<N>(tagged: *mut Bucket<N>) {
    let (base, bits) = decode(tagged);
    #[cfg(loom)]
    for i in 0..1usize << bits {
        // SAFETY: constructed by `new_array`, dropped once here.
        unsafe { core::ptr::drop_in_place(base.add(i)) };
    }
    free_zeroed_array(base as *mut u8, array_layout::<N>(bits));
}

/// Arrays of at least this size are mapped from the system and unmapped
/// when freed, so a replaced array's memory goes back whatever the
/// allocator keeps: glibc's heap kept the freed arrays of a table that a
/// drop_caches shrank and new names grew again (docs/PERFORMANCE.md,
/// session 50). Not in the no-slab build, whose AddressSanitizer run
/// should see every array.
#[cfg(not(any(loom, vfscale_no_slab)))]
const MAP_FROM_BYTES: usize = 256 << 10;

/// Zeroed memory for `layout` (a non-zero size, an alignment of at most a
/// page): mapped from `MAP_FROM_BYTES` on, else from the allocator.
/// `filled` populates a mapping: a resize reads each bucket before it
/// links into it, and it links into nearly every page (after a growth
/// the names are about a quarter of the buckets, after a shrink more than
/// a sixteenth; a 4 KiB page holds 256 buckets). Lazily, each page was
/// the zero page first and then a copy-on-write fault with a TLB flush of
/// every CPU the process ran on, while other threads' writers waited for
/// the resize (docs/PERFORMANCE.md, session 51). A table's first array stays lazy:
/// a fixed table made big for few names keeps its untouched pages
/// unbacked.
#[cfg(not(loom))]
fn alloc_zeroed_array(layout: Layout, filled: bool) -> *mut u8 {
    #[cfg(not(vfscale_no_slab))]
    if layout.size() >= MAP_FROM_BYTES {
        // Zero-filled and page-aligned, which covers the layout's
        // alignment.
        return crate::mem::map_anonymous(layout.size(), layout, filled);
    }
    #[cfg(vfscale_no_slab)]
    let _ = filled;
    // SAFETY: the layout has a non-zero size (at least one bucket).
    unsafe { std::alloc::alloc_zeroed(layout) }
}

#[cfg(loom)]
fn free_zeroed_array(base: *mut u8, layout: Layout) {
    // SAFETY: allocated by `new_array` with this layout, freed once.
    unsafe { std::alloc::dealloc(base, layout) };
}

/// Frees what `alloc_zeroed_array` returned for the same layout.
#[cfg(not(loom))]
fn free_zeroed_array(base: *mut u8, layout: Layout) {
    #[cfg(not(vfscale_no_slab))]
    if layout.size() >= MAP_FROM_BYTES {
        // SAFETY: the whole mapping `alloc_zeroed_array` made for this
        // size, unmapped once; no reference into it outlives the array.
        unsafe { libc::munmap(base.cast(), layout.size()) };
        return;
    }
    // SAFETY: allocated by `alloc_zeroed_array` with this layout, freed
    // once.
    unsafe { std::alloc::dealloc(base, layout) };
}

impl<N> Drop for ChainTable<N> {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no other thread can reach the table.
        free_array(self.current.load(Relaxed));
    }
}

/// A locked bucket of the current array: the chain operations, with the
/// name count kept.
#[must_use = "the bucket unlocks when the guard is dropped"]
pub struct LockedBucket<'t, N: ChainNode> {
    guard: BucketGuard<'t, N>,
    table: &'t ChainTable<N>,
    /// The bucket's index, and the log2 size of its array.
    index: usize,
    bits: u32,
}

/// Returned by an insert that took its shard past the growth threshold:
/// the caller calls [`ChainTable::grow`] with it once it holds no bucket
/// lock.
#[must_use = "pass it to ChainTable::grow after unlocking"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowFrom(pub u32);

impl<N: ChainNode> LockedBucket<'_, N> {
    #[inline]
    pub fn first(&self) -> *const N {
        self.guard.first()
    }

    #[inline]
    pub fn iter(&self) -> ChainIter<'_, N> {
        self.guard.iter()
    }

    /// Pushes `node` (see [`BucketGuard::push_front`]); `Some` when the
    /// table should now grow.
    ///
    /// # Safety
    ///
    /// As [`BucketGuard::push_front`], and `node`'s `table_hash` maps to
    /// this bucket.
    #[inline]
    pub unsafe fn push_front(&mut self, node: *const N) -> Option<GrowFrom> {
        // SAFETY: forwarded contract.
        unsafe { self.guard.push_front(node) };
        // Relaxed: a statistic for the growth test; pairs with nothing (a
        // resize recounts under every bucket lock).
        let n = self.count().fetch_add(1, Relaxed) + 1;
        (n > grow_past(self.bits, self.table.max_bits)).then_some(GrowFrom(self.bits))
    }

    /// Unlinks `node` if it is on this chain (see [`BucketGuard::remove`]).
    #[inline]
    pub fn remove(&mut self, node: *const N) -> bool {
        let removed = self.guard.remove(node);
        if removed {
            // Relaxed: as in `push_front`.
            self.count().fetch_sub(1, Relaxed);
        }
        removed
    }

    /// The name count of this bucket's shard.
    #[inline(always)]
    fn count(&self) -> &AtomicUsize {
        // The mask only spares a bounds check: `shard_of` < SHARDS.
        &self.table.counts[shard_of(self.index, self.bits) & (SHARDS - 1)]
    }
}

impl<N: TableNode> ChainTable<N> {
    /// A table of `2^bits` empty buckets that never grows (`bits <= 32`;
    /// 0 gives one bucket).
    pub fn with_bucket_bits(bits: u32) -> ChainTable<N> {
        Self::growing(bits, bits)
    }

    /// A table of `2^bits` empty buckets that grows as names are added,
    /// up to `2^max_bits` (either above 32 counts as 32; `max_bits` below
    /// `bits` means `bits`).
    pub fn growing(bits: u32, max_bits: u32) -> ChainTable<N> {
        let bits = bits.min(MAX_BUCKET_BITS);
        let max_bits = max_bits.clamp(bits, MAX_BUCKET_BITS);
        ChainTable {
            current: AtomicPtr::new(new_array(bits, false)),
            counts: core::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
            resizing: AtomicBool::new(false),
            min_bits: bits,
            max_bits,
        }
    }

    #[inline(always)]
    fn current(&self) -> (*mut Bucket<N>, u32) {
        // Acquire: pairs with the Release that published the array (its
        // buckets were filled before).
        decode(self.current.load(Acquire))
    }

    /// log2 of the current bucket count.
    pub fn bits(&self) -> u32 {
        self.current().1
    }

    #[inline]
    pub fn bucket_count(&self) -> usize {
        1 << self.bits()
    }

    /// The bucket index of `hash` in the current array: the top `bits`
    /// bits of `hash × GOLDEN`.
    #[inline]
    pub fn bucket_index(&self, hash: u64) -> usize {
        index_in(hash, self.bits())
    }

    /// The bucket of the current array that holds every node whose hash is
    /// `hash`, for a lock-free reader (a resize may move its nodes
    /// meanwhile: see the module docs).
    ///
    /// # Safety
    ///
    /// The caller holds an epoch guard for as long as it uses the bucket,
    /// and replaced arrays are retired through that epoch scheme.
    #[inline]
    pub unsafe fn bucket(&self, hash: u64) -> &Bucket<N> {
        let (base, bits) = self.current();
        // SAFETY: `index_in` keeps the top `bits` bits of a 64-bit value,
        // so the index is below 2^bits, the array's length; the caller's
        // guard keeps the array allocated.
        unsafe { &*base.add(index_in(hash, bits)) }
    }

    /// Locks the bucket of `hash` in the current array.
    ///
    /// # Safety
    ///
    /// As [`ChainTable::bucket`], for as long as the guard lives.
    #[inline]
    pub unsafe fn lock(&self, hash: u64) -> LockedBucket<'_, N> {
        loop {
            // SAFETY: forwarded contract.
            if let Some(locked) = unsafe { self.lock_with(hash, |b| Some(b.lock())) } {
                return locked;
            }
        }
    }

    /// Locks the bucket of `hash` if its lock is free and no resize is
    /// replacing the array (`None` otherwise).
    ///
    /// # Safety
    ///
    /// As [`ChainTable::lock`].
    #[inline]
    pub unsafe fn try_lock(&self, hash: u64) -> Option<LockedBucket<'_, N>> {
        // SAFETY: forwarded contract.
        unsafe { self.lock_with(hash, Bucket::try_lock) }
    }

    /// One attempt: `acquire` the bucket of `hash` in the array that is
    /// current, and keep it if that array is still current once locked.
    ///
    /// # Safety
    ///
    /// As [`ChainTable::lock`].
    #[inline(always)]
    unsafe fn lock_with<'t, A>(&'t self, hash: u64, acquire: A) -> Option<LockedBucket<'t, N>>
    where
        A: FnOnce(&'t Bucket<N>) -> Option<BucketGuard<'t, N>>,
    {
        // Acquire: as in `current`.
        let tagged = self.current.load(Acquire);
        let (base, bits) = decode(tagged);
        let i = index_in(hash, bits);
        // SAFETY: as in `bucket`.
        let guard = acquire(unsafe { &*base.add(i) })?;
        // Relaxed: the lock's Acquire orders this load after the unlock
        // that let us in, and a resizer publishes its array before it
        // unlocks the old buckets: a replaced array shows here. No later
        // array can carry `tagged` again: ours stays allocated while the
        // caller's guard lives (module docs).
        if self.current.load(Relaxed) != tagged {
            return None;
        }
        Some(LockedBucket {
            guard,
            table: self,
            index: i,
            bits,
        })
    }

    /// Grows the table (`growth_step`) if it still has `from.0` bits
    /// (another thread may have grown it first, or be doing so: then
    /// nothing happens) and is below its maximum. Returns the replaced
    /// array, to be retired through the epoch scheme (see
    /// [`RetiredBuckets`]). A request that a shrink and regrowth to the
    /// same size made stale still grows the table: one step early, which
    /// costs memory, never a name.
    ///
    /// Stops the table's writers while it runs (every bucket locked);
    /// readers go on, and may miss (see the module docs).
    ///
    /// # Safety
    ///
    /// The caller holds no bucket lock of this table, and every thread that
    /// reads or locks the table holds an epoch guard (see `bucket`).
    pub unsafe fn grow(&self, from: GrowFrom) -> Option<RetiredBuckets<N>> {
        if from.0 >= self.max_bits {
            return None;
        }
        // SAFETY: forwarded contract.
        unsafe {
            self.resize_exclusive(|bits| {
                (bits == from.0).then(|| (bits + growth_step(bits)).min(self.max_bits))
            })
        }
    }

    /// Shrinks the table to the smallest size, not below the one it was
    /// made with, that its names fill to at most 1/`SHRINK_SLACK` of that
    /// size's growth threshold; nothing when it is that size already (or
    /// another thread is resizing). Returns the replaced array, as `grow`.
    ///
    /// The name count is the shards' sum read without the bucket locks: a
    /// racing insert or remove moves it by a name or so, which only moves
    /// the chosen size by as much as those names would.
    ///
    /// # Safety
    ///
    /// As [`ChainTable::grow`].
    pub unsafe fn shrink_to_fit(&self) -> Option<RetiredBuckets<N>> {
        // At its first size already (a namespace that never grew: an idle
        // drop_caches, reclaim-groups' passes): no shrink, and no read of
        // the 64 count lines.
        if self.bits() <= self.min_bits {
            return None;
        }
        // Relaxed: a statistic (see `LockedBucket::push_front`).
        let names: usize = self.counts.iter().map(|c| c.load(Relaxed)).sum();
        let fits = (self.min_bits..self.max_bits)
            .find(|&b| names.saturating_mul(SHRINK_SLACK) <= capacity(b))
            .unwrap_or(self.max_bits);
        // SAFETY: forwarded contract.
        unsafe { self.shrink_to(fits) }
    }

    /// Shrinks the table to `2^bits` buckets (not below the size it was
    /// made with) if it is bigger, whatever it holds: the chains get
    /// longer. `shrink_to_fit` chooses the size; tests and models force
    /// one. Returns the replaced array, as `grow`.
    ///
    /// # Safety
    ///
    /// As [`ChainTable::grow`].
    pub unsafe fn shrink_to(&self, bits: u32) -> Option<RetiredBuckets<N>> {
        let target = bits.max(self.min_bits);
        // SAFETY: forwarded contract.
        unsafe { self.resize_exclusive(|current| (target < current).then_some(target)) }
    }

    /// Becomes the table's only resizer (or returns `None` if another
    /// thread is one), asks `pick` for the new size given the current one,
    /// and resizes to it (`None`: no resize).
    ///
    /// # Safety
    ///
    /// As [`ChainTable::grow`].
    unsafe fn resize_exclusive(
        &self,
        pick: impl FnOnce(u32) -> Option<u32>,
    ) -> Option<RetiredBuckets<N>> {
        // Acquire: pairs with the Release that ended the last resize.
        if self
            .resizing
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_err()
        {
            return None;
        }
        let (old, bits) = self.current();
        let retired = pick(bits).map(|new_bits| {
            // SAFETY: forwarded contract; we are the only resizer.
            unsafe { self.resize(old, bits, new_bits) }
        });
        // Release: pairs with the next resizer's Acquire.
        self.resizing.store(false, Release);
        retired
    }

    /// The resize proper, to `2^new_bits` buckets (more or fewer): see
    /// `grow`.
    ///
    /// # Safety
    ///
    /// `grow`'s, and the caller is the only resizer and read `old`/`bits`
    /// from `current` after becoming it.
    unsafe fn resize(&self, old: *mut Bucket<N>, bits: u32, new_bits: u32) -> RetiredBuckets<N> {
        let new_tagged = new_array::<N>(new_bits, true);
        let (new, _) = decode(new_tagged);
        let len = 1usize << bits;
        // SAFETY (all old-bucket derefs): below `len`, in the old array,
        // which stays allocated until the caller retires it.
        let old_bucket = |i: usize| unsafe { &*old.add(i) };
        // 1. Every old bucket locked: no chain or count changes from here.
        for i in 0..len {
            core::mem::forget(old_bucket(i).lock());
        }
        // 2. Every node moved to its bucket in the new array (unpublished,
        // so only lock-free readers diverted through a moved node see it),
        // the names counted per shard of the new array.
        let mut counts = vec![0usize; SHARDS];
        for i in 0..len {
            if i + MOVE_PREFETCH_AHEAD < len {
                let ahead = old_bucket(i + MOVE_PREFETCH_AHEAD).first();
                if !ahead.is_null() {
                    crate::mem::prefetch(ahead as *const u8);
                }
            }
            // SAFETY: locked by step 1, released by step 4.
            let mut p = unsafe { old_bucket(i).detach_chain_locked() };
            while !p.is_null() {
                // SAFETY: a node of the table: live (nothing is removed
                // while every bucket is locked).
                let node = unsafe { &*p };
                // Relaxed: the chain is ours while every bucket is locked.
                let next = node.chain_next().load(Relaxed);
                let j = index_in(node.table_hash(), new_bits);
                // SAFETY: `j` < 2^new_bits; the new array is ours until
                // step 3 publishes it (no locker can reach it: no bucket
                // lock needed), and `p` left its old chain with the detach
                // above.
                unsafe { (*new.add(j)).push_front_unpublished(p) };
                counts[shard_of(j, new_bits)] += 1;
                p = next;
            }
        }
        // Every shard, those the new array maps no bucket to (tiny arrays)
        // set to zero: a shrink may leave names counted there.
        for (count, n) in self.counts.iter().zip(counts) {
            // Relaxed: published by the Release below, and no insert or
            // remove can run until then.
            count.store(n, Relaxed);
        }
        // 3. Publish. Release: pairs with the Acquire in `current` and
        // `lock`: the new array's chains and the counts are visible.
        self.current.store(new_tagged, Release);
        // 4. Let the waiting lockers in: they find the new array and retry.
        for i in 0..len {
            // SAFETY: locked by step 1 through a forgotten guard.
            unsafe { old_bucket(i).unlock_forgotten() };
        }
        RetiredBuckets {
            tagged: encode(old, bits),
        }
    }

    /// The current array's buckets, e.g. for a full scan under each
    /// bucket's lock.
    ///
    /// # Safety
    ///
    /// As [`ChainTable::bucket`], and no resize may run meanwhile (the
    /// scan would miss the nodes it moves).
    pub unsafe fn buckets(&self) -> &[Bucket<N>] {
        let (base, bits) = self.current();
        // SAFETY: the array has 2^bits initialised buckets; the caller's
        // guard keeps it allocated.
        unsafe { core::slice::from_raw_parts(base, 1 << bits) }
    }
}

impl<N> core::fmt::Debug for ChainTable<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Relaxed: a diagnostic snapshot; pairs with nothing.
        let (_, bits) = decode(self.current.load(Relaxed));
        f.debug_struct("ChainTable")
            .field("buckets", &(1usize << bits))
            .field("max_buckets", &(1usize << self.max_bits))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    // Relaxed `stop`: it publishes no data; the joins order the final checks.
    use super::*;
    use std::time::{Duration, Instant};

    const MAGIC: u64 = 0x5EED_F00D_CAFE_D00D;

    struct Node {
        next: AtomicPtr<Node>,
        key: u64,
        magic: u64,
    }

    // SAFETY: `next` is the node's own link, used only by the chain code.
    unsafe impl ChainNode for Node {
        fn chain_next(&self) -> &AtomicPtr<Node> {
            &self.next
        }
    }

    // SAFETY: the key never changes.
    unsafe impl TableNode for Node {
        fn table_hash(&self) -> u64 {
            self.key
        }
    }

    fn node(key: u64) -> Node {
        Node {
            next: AtomicPtr::new(core::ptr::null_mut()),
            key,
            magic: MAGIC,
        }
    }

    /// xorshift64: a tiny deterministic generator for the stress test.
    fn rng(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn sizes_and_index_range() {
        let t: ChainTable<Node> = ChainTable::with_bucket_bits(0);
        assert_eq!(t.bucket_count(), 1);
        assert_eq!(t.bucket_index(u64::MAX), 0);
        let t: ChainTable<Node> = ChainTable::with_bucket_bits(10);
        assert_eq!(t.bucket_count(), 1024);
        // SAFETY (all table accesses in these tests): nothing is retired
        // (or the retired arrays are kept until the end), and every node
        // outlives the table's use.
        assert!(unsafe { t.buckets() }
            .iter()
            .all(|b| b.first().is_null() && !b.is_locked()));
        let mut used = std::collections::HashSet::new();
        for h in 0..4096u64 {
            let i = t.bucket_index(h);
            assert!(i < 1024);
            assert!(core::ptr::eq(unsafe { t.bucket(h) }, unsafe {
                &t.buckets()[i]
            }));
            used.insert(i);
        }
        // Consecutive hashes (weak low-entropy input) must still spread.
        assert!(used.len() > 900, "only {} buckets used", used.len());
    }

    #[test]
    fn lookup_after_insert_and_remove() {
        let t = ChainTable::with_bucket_bits(4);
        let nodes: Vec<Node> = (0..100).map(node).collect();
        for n in &nodes {
            // SAFETY: live nodes on no chain that outlive the table's use.
            assert_eq!(unsafe { t.lock(n.key).push_front(n) }, None);
        }
        let find = |k: u64| {
            // SAFETY: every node outlives this scan.
            unsafe { t.bucket(k).iter_lockfree() }.any(|n| n.key == k)
        };
        assert!((0..100).all(find));
        for n in nodes.iter().filter(|n| n.key % 2 == 0) {
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        assert!((0..100).all(|k| find(k) == (k % 2 == 1)));
        let total: usize = unsafe { t.buckets() }
            .iter()
            .map(|b| b.lock().iter().count())
            .sum();
        assert_eq!(total, 50);
    }

    /// A key spread from a small integer (the tests' names).
    fn spread(i: u64) -> u64 {
        i.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Every node sits in the bucket its hash maps to; returns how many.
    fn check_placement(t: &ChainTable<Node>) -> usize {
        let mut total = 0;
        // SAFETY: see `sizes_and_index_range`; no resize runs.
        for (i, b) in unsafe { t.buckets() }.iter().enumerate() {
            for n in b.lock().iter() {
                assert_eq!(t.bucket_index(n.key), i, "node {} misplaced", n.key);
                assert_eq!(n.magic, MAGIC);
                total += 1;
            }
        }
        total
    }

    /// Inserts double the table so that it holds no more names than
    /// buckets (at most half as many, but for one shard's skew), removals
    /// never shrink it, and every node stays in the bucket its hash maps
    /// to across the resizes.
    #[test]
    fn grows_with_the_names_and_keeps_them() {
        const N: usize = 20_000;
        let t = ChainTable::growing(2, 20);
        let nodes: Vec<Node> = (0..N as u64).map(|i| node(spread(i))).collect();
        let mut retired = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            // SAFETY: see `sizes_and_index_range`.
            let grow = unsafe { t.lock(n.key).push_front(n) };
            if let Some(from) = grow {
                assert_eq!(from.0, t.bits());
                // SAFETY: no bucket lock held; single thread.
                let old = unsafe { t.grow(from) }.expect("a current, non-maximal size doubles");
                retired.push(old);
                assert_eq!(t.bits(), from.0 + 1);
                // A stale request (already doubled) does nothing.
                // SAFETY: as above.
                assert!(unsafe { t.grow(from) }.is_none());
            }
            let names = i + 1;
            assert!(
                names <= t.bucket_count().max(64),
                "{names} names in {} buckets",
                t.bucket_count()
            );
        }
        assert_eq!(retired.len() as u32, t.bits() - 2);
        assert!(
            N * 8 > t.bucket_count(),
            "{} buckets for {N} names: grew too far",
            t.bucket_count()
        );
        assert_eq!(check_placement(&t), N);
        let bits = t.bits();
        for n in &nodes {
            // SAFETY: as above.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        assert_eq!(t.bits(), bits, "removals never shrink the table");
        assert_eq!(check_placement(&t), 0);
    }

    /// From 2^18 buckets on a resize quadruples the table (capped at its
    /// maximum), and keeps every node in its bucket.
    #[test]
    fn big_tables_quadruple() {
        let t = ChainTable::growing(18, 21);
        let nodes: Vec<Node> = (0..100).map(|i| node(spread(i))).collect();
        for n in &nodes {
            // SAFETY: see `sizes_and_index_range`.
            assert_eq!(unsafe { t.lock(n.key).push_front(n) }, None);
        }
        // SAFETY: as above; single thread, no lock held.
        let old = unsafe { t.grow(GrowFrom(18)) };
        assert!(old.is_some());
        assert_eq!(t.bits(), 20);
        assert_eq!(check_placement(&t), 100);
        // SAFETY: as above.
        assert!(unsafe { t.grow(GrowFrom(20)) }.is_some());
        assert_eq!(t.bits(), 21, "capped at the maximum");
        assert_eq!(check_placement(&t), 100);
    }

    /// A table made with a fixed size never asks to grow.
    #[test]
    fn a_fixed_table_never_grows() {
        let t = ChainTable::with_bucket_bits(3);
        let nodes: Vec<Node> = (0..1000).map(|i| node(spread(i))).collect();
        for n in &nodes {
            // SAFETY: see `sizes_and_index_range`.
            assert_eq!(unsafe { t.lock(n.key).push_front(n) }, None);
        }
        // SAFETY: as above.
        assert!(unsafe { t.grow(GrowFrom(3)) }.is_none());
        assert_eq!(t.bits(), 3);
        assert_eq!(check_placement(&t), 1000);
    }

    /// Inserts `nodes` one by one, growing the table whenever an insert
    /// asks (single thread); the replaced arrays go to `retired`.
    fn fill(t: &ChainTable<Node>, nodes: &[Node], retired: &mut Vec<RetiredBuckets<Node>>) {
        for n in nodes {
            // SAFETY: see `sizes_and_index_range`. (A statement of its own:
            // the bucket unlocks at its end, and `grow` must not hold it.)
            let asked = unsafe { t.lock(n.key).push_front(n) };
            if let Some(from) = asked {
                // SAFETY: no bucket lock held; single thread.
                retired.extend(unsafe { t.grow(from) });
            }
        }
    }

    /// `shrink_to_fit` takes the table down to the smallest size that its
    /// names fill to a quarter of the growth threshold, never below the
    /// size it was made with, and keeps every node in its bucket, once; at
    /// that size already it does nothing, and the names that come back
    /// grow it again.
    #[test]
    fn shrinks_to_fit_the_names_left_and_keeps_them() {
        const N: usize = 20_000;
        const LEFT: usize = 100;
        let t = ChainTable::growing(4, 20);
        let nodes: Vec<Node> = (0..N as u64).map(|i| node(spread(i))).collect();
        let mut retired = Vec::new();
        fill(&t, &nodes, &mut retired);
        let grown = t.bits();
        assert!(grown >= 15, "{N} names in 2^{grown} buckets");
        for n in &nodes[LEFT..] {
            // SAFETY: see `sizes_and_index_range`.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        assert_eq!(t.bits(), grown, "removals alone never shrink it");
        // SAFETY: as above; no bucket lock held, single thread.
        retired.extend(unsafe { t.shrink_to_fit() });
        // 4 × 100 names fill half of 2^10 buckets (the growth threshold
        // below 2^18), and not of 2^9.
        assert_eq!(t.bits(), 10);
        assert_eq!(check_placement(&t), LEFT);
        for n in &nodes[..LEFT] {
            // SAFETY: as above.
            assert!(unsafe { t.lock(n.key) }.iter().any(|m| m.key == n.key));
        }
        // SAFETY: as above.
        assert!(unsafe { t.shrink_to_fit() }.is_none(), "fits already");
        for n in &nodes[..LEFT] {
            // SAFETY: as above.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        // SAFETY: as above.
        retired.extend(unsafe { t.shrink_to_fit() });
        assert_eq!(t.bits(), 4, "not below the size it was made with");
        // SAFETY: as above.
        assert!(unsafe { t.shrink_to(0) }.is_none());
        fill(&t, &nodes, &mut retired);
        assert_eq!(t.bits(), grown, "the same names grow it as far again");
        assert_eq!(check_placement(&t), N);
        for n in &nodes {
            // SAFETY: as above.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
    }

    /// A shrink below 64 buckets (one per count shard) recounts every
    /// shard: counts left in shards the small array maps no bucket to
    /// would keep the next `shrink_to_fit` from seeing an empty table.
    #[test]
    fn a_shrink_to_a_tiny_table_recounts_every_shard() {
        let t = ChainTable::growing(0, 12);
        let nodes: Vec<Node> = (0..1000).map(|i| node(spread(i))).collect();
        let mut retired = Vec::new();
        fill(&t, &nodes, &mut retired);
        assert!(t.bits() >= 10);
        for n in &nodes[2..] {
            // SAFETY: see `sizes_and_index_range`.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        // SAFETY: as above; no bucket lock held, single thread.
        retired.extend(unsafe { t.shrink_to_fit() });
        assert_eq!(t.bits(), 4, "2 names fill a quarter of half of 16 buckets");
        assert_eq!(check_placement(&t), 2);
        for n in &nodes[..2] {
            // SAFETY: as above.
            assert!(unsafe { t.lock(n.key) }.remove(n));
        }
        // SAFETY: as above.
        retired.extend(unsafe { t.shrink_to_fit() });
        assert_eq!(t.bits(), 0, "an empty table shrinks to its first size");
    }

    /// A table made with a fixed size never shrinks either.
    #[test]
    fn a_fixed_table_never_shrinks() {
        let t: ChainTable<Node> = ChainTable::with_bucket_bits(6);
        // SAFETY: see `sizes_and_index_range`.
        assert!(unsafe { t.shrink_to_fit() }.is_none());
        // SAFETY: as above.
        assert!(unsafe { t.shrink_to(2) }.is_none());
        assert_eq!(t.bits(), 6);
    }

    /// Writers insert and remove their own mobile nodes — all of them
    /// first, then at random — growing the table whenever an insert asks,
    /// while one reader scans lock-free and another looks up under the
    /// bucket lock, for `run_for`; with `shrinking`, a fifth thread keeps
    /// halving the table (`shrink_to`) meanwhile and the count of its
    /// shrinks is returned. Lock-free scans must reach only valid nodes
    /// and end; while the table cannot resize they must also stay in their
    /// bucket and find every pinned node (a resize may divert a scan: then
    /// it may miss). The locked lookup must always find every pinned node.
    /// At rest, exactly the pinned nodes and the mobile ones left linked
    /// are in the table, each in its bucket, once.
    fn stress(
        table: &ChainTable<Node>,
        pinned: u64,
        mobile: u64,
        run_for: Duration,
        shrinking: bool,
    ) -> u64 {
        const WRITERS: u64 = 2;
        let resizable = table.max_bits > table.bits();
        let nodes: Vec<Node> = (0..pinned + mobile).map(|i| node(spread(i))).collect();
        let retired = std::sync::Mutex::new(Vec::new());
        let grow = |from: Option<GrowFrom>| {
            if let Some(from) = from {
                // SAFETY: called with no bucket lock held; the replaced
                // arrays are kept until every thread has finished.
                if let Some(old) = unsafe { table.grow(from) } {
                    retired.lock().unwrap().push(old);
                }
            }
        };
        for n in &nodes[..pinned as usize] {
            // SAFETY: live nodes on no chain; `nodes` outlives the table's use.
            let asked = unsafe { table.lock(n.key).push_front(n) };
            // (The statement above unlocked the bucket: `grow` needs that.)
            grow(asked);
        }
        let stop = AtomicBool::new(false);
        let deadline = Instant::now() + run_for;
        let (nodes, stop, grow, retired) = (&nodes, &stop, &grow, &retired);
        let pinned_key = move |seed: &mut u64| spread(rng(seed) % pinned);
        let shrinks = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    s.spawn(move || {
                        let mine: Vec<&Node> = nodes[pinned as usize..]
                            .iter()
                            .skip(w as usize)
                            .step_by(WRITERS as usize)
                            .collect();
                        let mut linked = vec![false; mine.len()];
                        let mut seed = 0x1234_5678 + w;
                        let mut step = 0usize;
                        while step < mine.len() || Instant::now() < deadline {
                            let i = if step < mine.len() {
                                step
                            } else {
                                rng(&mut seed) as usize % mine.len()
                            };
                            step += 1;
                            let n = mine[i];
                            // SAFETY: see `sizes_and_index_range`.
                            let mut g = unsafe { table.lock(n.key) };
                            let asked = if linked[i] {
                                assert!(g.remove(n), "a linked node must be found");
                                None
                            } else {
                                // SAFETY: `n` is on no chain (only this
                                // writer links it) and outlives the scope.
                                unsafe { g.push_front(n) }
                            };
                            drop(g);
                            grow(asked);
                            linked[i] = !linked[i];
                        }
                        stop.store(true, Relaxed);
                        linked.iter().filter(|&&l| l).count()
                    })
                })
                .collect();
            s.spawn(move || {
                let mut seed = 0x9876_5432;
                let mut scans = 0u64;
                while !stop.load(Relaxed) {
                    let want = pinned_key(&mut seed);
                    let bucket = table.bucket_index(want);
                    let mut found = false;
                    // SAFETY: no node or array is freed before the scope ends.
                    let chain = unsafe { table.bucket(want).iter_lockfree() };
                    for (steps, n) in chain.enumerate() {
                        assert_eq!(n.magic, MAGIC, "reached a garbage node");
                        assert!(steps < 100_000, "reader looped");
                        if !resizable {
                            assert_eq!(table.bucket_index(n.key), bucket, "left the bucket");
                        }
                        found |= n.key == want;
                    }
                    assert!(found || resizable, "pinned node {want:#x} missed");
                    scans += 1;
                }
                assert!(scans > 0);
            });
            s.spawn(move || {
                let mut seed = 0x5555_0001;
                let mut lookups = 0u64;
                while !stop.load(Relaxed) {
                    let want = pinned_key(&mut seed);
                    // SAFETY: as above.
                    let found = unsafe { table.lock(want) }.iter().any(|n| n.key == want);
                    assert!(found, "pinned node {want:#x} missed under the lock");
                    lookups += 1;
                }
                assert!(lookups > 0);
            });
            let shrinker = s.spawn(move || {
                let mut shrinks = 0u64;
                while shrinking && !stop.load(Relaxed) {
                    // SAFETY: no bucket lock held; the replaced arrays are
                    // kept until every thread has finished.
                    if let Some(old) = unsafe { table.shrink_to(table.bits().saturating_sub(1)) } {
                        retired.lock().unwrap().push(old);
                        shrinks += 1;
                    }
                    std::thread::yield_now();
                }
                shrinks
            });
            let linked: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
            let shrinks = shrinker.join().unwrap();
            assert_eq!(check_placement(table), pinned as usize + linked);
            shrinks
        });
        // Empty the table before `nodes` goes: the caller may look again.
        for n in nodes.iter() {
            // SAFETY: see `sizes_and_index_range`.
            unsafe { table.lock(n.key) }.remove(n);
        }
        shrinks
    }

    /// `stress` on a fixed 16-bucket table: chains of ~16 nodes churned by
    /// two writers under two readers.
    #[test]
    fn stress_lockfree_readers_vs_writers() {
        let table = ChainTable::with_bucket_bits(4);
        stress(&table, 32, 224, Duration::from_millis(300), false);
        assert_eq!(table.bits(), 4);
    }

    /// `stress` on a table that starts with one bucket: the writers' 4,000
    /// inserts grow it past 2^11 while the readers run; at rest every node
    /// is in its bucket exactly once (without the re-check of the array
    /// after locking it loses nodes).
    #[test]
    fn stress_resizes_vs_readers_and_writers() {
        const PINNED: u64 = 64;
        const MOBILE: u64 = 4000;
        let table = ChainTable::growing(0, 14);
        stress(&table, PINNED, MOBILE, Duration::from_millis(400), false);
        assert!(
            table.bits() >= 11,
            "{} names never grew the table past {} bits",
            PINNED + MOBILE,
            table.bits()
        );
    }

    /// `stress` with a thread halving the table while the writers' inserts
    /// grow it back: shrinks and growths race each other, the lockers and
    /// the lock-free readers, and at rest every node is in its bucket
    /// exactly once.
    #[test]
    fn stress_shrinks_and_growths_vs_readers_and_writers() {
        let table = ChainTable::growing(0, 14);
        let shrinks = stress(&table, 64, 4000, Duration::from_millis(400), true);
        assert!(shrinks > 0, "the table never shrank");
    }
}
