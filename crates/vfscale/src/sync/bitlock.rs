//! Bit-locked intrusive chains (Linux `hlist_bl`): the buckets of the dentry
//! hash table ([`crate::dcache::hash`]).
//!
//! A [`Bucket`] is two words: a pointer to the first node, with bit 0 as the
//! bucket's spin lock, and the first node's *prefetch hint* (for dentries,
//! their inode), so a reader that loads the bucket can start fetching what
//! it will read after the node while the node itself is still on its way
//! (a hot stat in random order: bucket → dentry → inode was three
//! dependent misses, now two). Nodes link through an [`AtomicPtr`] they
//! embed ([`ChainNode`]).
//!
//! Invariants:
//! - **Readers never write.** A lock-free reader loads the head and the links
//!   with Acquire and writes nothing, not even the lock bit.
//! - **Writers hold the bucket lock.** Every change to a chain (head or link)
//!   is made under its bucket's lock, with a Release store, so a reader that
//!   reaches a node sees it fully initialised.
//! - **A removed node keeps its `next`.** Removal only makes the predecessor
//!   skip the node; a reader standing on it continues down the chain. Hence
//!   a lock-free reader never falls off a chain because of a removal.
//! - **Moves can divert readers.** A node removed and pushed onto another
//!   chain (rename) gets a new `next`; a reader standing on it continues
//!   down the *new* chain and can miss nodes of the old one (or, if it was
//!   re-added to the same chain, visit some nodes twice). A lock-free miss
//!   is therefore not authoritative: callers validate misses with a rename
//!   seqcount (or retry under the lock).
//! - **The hint is a guess.** It is written with the head (under the lock)
//!   and by [`Bucket::refresh_hint`] (without it, so a race can leave it
//!   stale), read Relaxed, and used only as a prefetch address, which never
//!   faults: a stale or wrong hint costs one useless prefetch, nothing else.
//! - **Nothing here frees.** A node may be freed only after it has been
//!   removed and the caller's epoch reclamation guarantees that no reader
//!   that could have reached it is still running.

use super::atomic::{spin_hint, yield_thread, AtomicPtr, AtomicUsize, Ordering::*};
use core::marker::PhantomData;

/// The lock bit in a bucket's head word. Nodes are at least 2-aligned
/// (checked at compile time in [`BucketGuard::push_front`]), so bit 0 of a
/// node pointer is always free.
const LOCK_BIT: usize = 1;

/// Spins (with `spin_hint`) before a waiter starts yielding its time slice.
const SPINS_BEFORE_YIELD: u32 = 128;

/// A node that can be linked into a bucket chain.
///
/// # Safety
///
/// `chain_next` must always return the same `AtomicPtr`, owned by `self`
/// and written by nothing but this module (the node's intrusive link).
pub unsafe trait ChainNode: Sized + Sync {
    fn chain_next(&self) -> &AtomicPtr<Self>;

    /// An address a reader of this node will load soon after the node
    /// itself (null for none): the bucket keeps the first node's, so a
    /// reader can prefetch it in parallel with the node (see
    /// [`Bucket::prefetch_hint`]).
    fn prefetch_hint(&self) -> *const u8 {
        core::ptr::null()
    }
}

/// The head of one chain: a node pointer with the bucket lock in bit 0.
/// All-zero bytes are a valid, empty, unlocked bucket.
#[repr(C)]
pub struct Bucket<N> {
    head: AtomicPtr<N>,
    hint: AtomicUsize,
}

// A bucket is exactly two words (the table allocates them zeroed and packs
// four per cache line).
#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Bucket<u64>>() == 2 * core::mem::size_of::<usize>());

fn unlocked<N>(p: *mut N) -> *mut N {
    p.map_addr(|a| a & !LOCK_BIT)
}

fn is_locked_word<N>(p: *mut N) -> bool {
    p.addr() & LOCK_BIT != 0
}

impl<N: ChainNode> Bucket<N> {
    /// An empty, unlocked bucket.
    pub fn new() -> Bucket<N> {
        Bucket {
            head: AtomicPtr::new(core::ptr::null_mut()),
            hint: AtomicUsize::new(0),
        }
    }

    /// The first node, for a lock-free reader (null if empty). Never blocks,
    /// even while the bucket is locked.
    #[inline]
    pub fn first(&self) -> *const N {
        // Acquire: pairs with the Release stores of the head in `push_front`,
        // `remove` and the unlock, so the node pointed to is initialised.
        unlocked(self.head.load(Acquire))
    }

    /// The first node's prefetch hint (0 if none): a guess that may be
    /// stale, for prefetching only, never to be dereferenced.
    #[inline]
    pub fn prefetch_hint(&self) -> usize {
        // Relaxed: a hint, publishes nothing; pairs with nothing.
        self.hint.load(Relaxed)
    }

    /// Refreshes the hint if `node` is the first node (its hint changed).
    #[inline]
    pub fn refresh_hint(&self, node: &N) {
        if core::ptr::eq(self.first(), node) {
            // Relaxed: a hint (see `prefetch_hint`).
            self.hint.store(node.prefetch_hint().addr(), Relaxed);
        }
    }

    /// Iterates the chain without the lock, as a reader (see the module docs
    /// for what a concurrent writer may make it see or miss).
    ///
    /// # Safety
    ///
    /// Every node reachable from this bucket during `'g`, including nodes
    /// removed while the iteration runs, must stay allocated for `'g`: the
    /// caller holds an epoch guard that outlives `'g` and frees removed
    /// nodes only through that epoch scheme.
    #[inline]
    pub unsafe fn iter_lockfree<'g>(&self) -> ChainIter<'g, N> {
        ChainIter {
            cur: self.first(),
            _nodes: PhantomData,
        }
    }

    /// True if some thread holds the lock (a Relaxed snapshot; a hint only).
    #[inline]
    pub fn is_locked(&self) -> bool {
        is_locked_word(self.head.load(Relaxed))
    }

    /// Takes the bucket lock without waiting; None if it is held.
    #[inline]
    pub fn try_lock(&self) -> Option<BucketGuard<'_, N>> {
        // Relaxed: only a guess for the compare-exchange, which checks it.
        let mut cur = self.head.load(Relaxed);
        loop {
            if is_locked_word(cur) {
                return None;
            }
            // Acquire on success: pairs with the Release of the unlock, so
            // the previous holder's chain changes are visible to us.
            match self
                .head
                .compare_exchange(cur, cur.map_addr(|a| a | LOCK_BIT), Acquire, Relaxed)
            {
                Ok(_) => return Some(BucketGuard { bucket: self }),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Takes the bucket lock, spinning (then yielding) while it is held.
    /// Hold it briefly: lock-free readers do not wait, but writers of every
    /// name hashing to this bucket do.
    pub fn lock(&self) -> BucketGuard<'_, N> {
        super::opcount::note_lock();
        let mut spins = 0u32;
        loop {
            if let Some(guard) = self.try_lock() {
                return guard;
            }
            // Wait with plain loads, so waiters do not bounce the line with
            // failed compare-exchanges.
            while self.is_locked() {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    spin_hint();
                } else {
                    yield_thread();
                }
            }
        }
    }

    /// Empties a bucket whose lock the caller holds through a guard it
    /// forgot (`mem::forget`), and returns the chain's first node (null if
    /// none): the table's resize takes every chain out this way. The bucket
    /// stays locked, and the nodes keep their links until the caller
    /// relinks them.
    ///
    /// # Safety
    ///
    /// The caller holds this bucket's lock (a forgotten guard) and releases
    /// it with [`Bucket::unlock_forgotten`].
    pub unsafe fn detach_chain_locked(&self) -> *const N {
        // Relaxed: we hold the lock, so the head is ours to read.
        let first = unlocked(self.head.load(Relaxed));
        // Relaxed: a hint (see `prefetch_hint`).
        self.hint.store(0, Relaxed);
        // Release: pairs with the Acquire of `first` in lock-free readers,
        // which from now on see an empty chain (a miss is never
        // authoritative, see the module docs).
        self.head
            .store(core::ptr::without_provenance_mut(LOCK_BIT), Release);
        first
    }

    /// Links `node` at the front of a bucket of an array that no other
    /// thread can lock or read from its head yet: the one a resize fills
    /// before it publishes it. No lock is taken (the array's publication
    /// orders the heads); the node's link is stored as `push_front` stores
    /// it, for readers standing on the node.
    ///
    /// # Safety
    ///
    /// As `BucketGuard::push_front`, and the caller is the only thread
    /// that can reach this bucket other than through nodes already on its
    /// chain, until it publishes the array with a Release store.
    pub unsafe fn push_front_unpublished(&self, node: *const N) {
        const { assert!(core::mem::align_of::<N>() > LOCK_BIT) };
        debug_assert!(!node.is_null());
        // SAFETY: the caller guarantees `node` is live.
        let link = unsafe { (*node).chain_next() };
        // Relaxed: the head is ours alone (see Safety).
        let first = unlocked(self.head.load(Relaxed));
        // Release: as in `BucketGuard::push_front` (a lock-free reader
        // standing on the moved node reaches `first` through this store).
        link.store(first, Release);
        // Relaxed: a hint (see `Bucket::prefetch_hint`).
        // SAFETY: the caller guarantees `node` is live.
        let hint = unsafe { (*node).prefetch_hint() };
        self.hint.store(hint.addr(), Relaxed);
        // Relaxed: no reader loads this head before the array's Release
        // publication, which orders this store before it.
        self.head.store(node.cast_mut(), Relaxed);
    }

    /// Releases a lock held through a forgotten guard.
    ///
    /// # Safety
    ///
    /// The caller holds this bucket's lock and forgot its guard.
    pub unsafe fn unlock_forgotten(&self) {
        // Relaxed: we hold the lock, so the head is ours to read.
        let head = self.head.load(Relaxed);
        // Release: as a guard's unlock; pairs with the Acquire of the next
        // locker, which must see everything done under the lock (for the
        // resize: the new table's publication, see `dcache::hash`).
        self.head.store(unlocked(head), Release);
    }
}

impl<N: ChainNode> Default for Bucket<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<N> core::fmt::Debug for Bucket<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Relaxed: a diagnostic snapshot; pairs with nothing.
        let head = self.head.load(Relaxed);
        f.debug_struct("Bucket")
            .field("first", &unlocked(head))
            .field("locked", &is_locked_word(head))
            .finish()
    }
}

/// The held lock of a [`Bucket`]; unlocks on drop.
#[must_use = "the bucket unlocks when the guard is dropped"]
pub struct BucketGuard<'a, N: ChainNode> {
    bucket: &'a Bucket<N>,
}

impl<N: ChainNode> BucketGuard<'_, N> {
    /// The first node (null if empty).
    #[inline]
    pub fn first(&self) -> *const N {
        // Relaxed: only the lock holder changes the head, and the lock's
        // Acquire made the previous holder's stores visible.
        unlocked(self.bucket.head.load(Relaxed))
    }

    /// Links `node` at the front of the chain and publishes it to readers.
    ///
    /// # Safety
    ///
    /// `node` points to a live node that is on no chain, and stays allocated
    /// until it has been removed from this chain and the caller's epoch
    /// reclamation says no reader can still reach it.
    pub unsafe fn push_front(&mut self, node: *const N) {
        const { assert!(core::mem::align_of::<N>() > LOCK_BIT) };
        debug_assert!(!node.is_null());
        // SAFETY: the caller guarantees `node` is live.
        let link = unsafe { (*node).chain_next() };
        // Release, not Relaxed: if `node` was moved here from another chain,
        // a lock-free reader standing on it reaches our first node through
        // this store alone, and must see that node initialised (it pairs
        // with the Acquire link loads of `ChainIter`).
        link.store(self.first().cast_mut(), Release);
        // Relaxed: a hint (see `Bucket::prefetch_hint`).
        // SAFETY: the caller guarantees `node` is live.
        let hint = unsafe { (*node).prefetch_hint() };
        self.bucket.hint.store(hint.addr(), Relaxed);
        // Release: publishes the node's initialisation (pairs with the
        // Acquire in `Bucket::first`). The lock bit stays set.
        let new_head = node.cast_mut().map_addr(|a| a | LOCK_BIT);
        self.bucket.head.store(new_head, Release);
    }

    /// Unlinks `node` from this chain; false if it is not on it (then it is
    /// never dereferenced). The node's own `next` is left intact, so a
    /// lock-free reader standing on it continues down the chain; the caller
    /// must not reuse or free it before its epoch reclamation allows.
    pub fn remove(&mut self, node: *const N) -> bool {
        if node.is_null() {
            return false;
        }
        let mut cur = self.first();
        if cur == node {
            // SAFETY: `cur` (== `node`) is on this chain, so it is live (the
            // `push_front` contract). We dereference the pointer read from
            // the chain, never the caller's argument. Relaxed: links of nodes
            // on this chain change only under this lock, which we hold.
            let next = unsafe { (*cur).chain_next() }.load(Relaxed);
            // No hint for the new head: reading its hint would be a cache
            // miss under the lock (a create/unlink churn paid it), and a
            // hint is only worth having for the first node of a chain that
            // long-lived lookups keep reading, which a push sets.
            // Relaxed: a hint (see `Bucket::prefetch_hint`).
            self.bucket.hint.store(0, Relaxed);
            // Release: the reader that loads this head must see `next`
            // initialised, which we know through the lock (pairs with the
            // Acquire in `Bucket::first`).
            let new_head = next.map_addr(|a| a | LOCK_BIT);
            self.bucket.head.store(new_head, Release);
            return true;
        }
        while !cur.is_null() {
            // SAFETY: `cur` is on this chain, so live (`push_front` contract).
            let link = unsafe { (*cur).chain_next() };
            // Relaxed (both loads): links of nodes on this chain change only
            // under this lock, which we hold.
            let after = link.load(Relaxed);
            if after.cast_const() == node {
                // SAFETY: `after` (== `node`) is on this chain, so live.
                let next = unsafe { (*after).chain_next() }.load(Relaxed);
                // Release: pairs with the Acquire link loads of `ChainIter`.
                // Strictly, a reader that reached `cur` already sees `next`
                // initialised (`next` was pushed before `cur`, and `cur`'s
                // push happened after under this lock); Release keeps that
                // from being load-bearing. Free on x86; removal is rare.
                link.store(next, Release);
                return true;
            }
            cur = after;
        }
        false
    }

    /// Iterates the chain under the lock.
    #[inline]
    pub fn iter(&self) -> ChainIter<'_, N> {
        ChainIter {
            cur: self.first(),
            _nodes: PhantomData,
        }
    }
}

impl<N: ChainNode> Drop for BucketGuard<'_, N> {
    #[inline]
    fn drop(&mut self) {
        // Release: pairs with the Acquire of the next `try_lock` (and of
        // lock-free readers' `first`), publishing our chain changes.
        self.bucket
            .head
            .store(unlocked(self.first().cast_mut()), Release);
    }
}

/// Iterator over a chain, yielding node references valid for `'g`.
pub struct ChainIter<'g, N> {
    cur: *const N,
    _nodes: PhantomData<&'g N>,
}

impl<'g, N: ChainNode> Iterator for ChainIter<'g, N> {
    type Item = &'g N;

    #[inline]
    fn next(&mut self) -> Option<&'g N> {
        if self.cur.is_null() {
            return None;
        }
        // SAFETY: `cur` was reachable from the bucket, so it is live for
        // 'g: under the lock by the `push_front` contract, without it by the
        // `iter_lockfree` contract.
        let node = unsafe { &*self.cur };
        // Acquire: pairs with the Release link stores of `push_front` and
        // `remove`, so the next node is initialised.
        self.cur = node.chain_next().load(Acquire);
        Some(node)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    // Relaxed harness atomics: they publish no data; thread joins order
    // the final checks.
    use super::*;
    use std::sync::atomic::AtomicU64;

    struct Node {
        next: AtomicPtr<Node>,
        key: u64,
    }

    // SAFETY: `next` is the node's own link, used only by the chain code.
    unsafe impl ChainNode for Node {
        fn chain_next(&self) -> &AtomicPtr<Node> {
            &self.next
        }

        /// The key as an address: tells the nodes' hints apart.
        fn prefetch_hint(&self) -> *const u8 {
            core::ptr::without_provenance(self.key as usize * 64)
        }
    }

    fn node(key: u64) -> Node {
        Node {
            next: AtomicPtr::new(core::ptr::null_mut()),
            key,
        }
    }

    fn keys(b: &Bucket<Node>) -> Vec<u64> {
        b.lock().iter().map(|n| n.key).collect()
    }

    #[test]
    fn push_remove_iterate() {
        let (a, b, c) = (node(1), node(2), node(3));
        let bucket: Bucket<Node> = Bucket::new();
        assert!(bucket.first().is_null());
        {
            let mut g = bucket.lock();
            // SAFETY: live nodes on no chain; they outlive the bucket's use.
            unsafe {
                g.push_front(&c);
                g.push_front(&b);
                g.push_front(&a);
            }
        }
        assert_eq!(keys(&bucket), [1, 2, 3]);
        assert_eq!(bucket.first(), &a as *const Node);
        assert!(bucket.lock().remove(&b), "middle");
        assert_eq!(keys(&bucket), [1, 3]);
        assert!(!bucket.lock().remove(&b), "no longer on the chain");
        assert!(bucket.lock().remove(&a), "head");
        assert_eq!(keys(&bucket), [3]);
        assert!(bucket.lock().remove(&c), "last");
        assert!(bucket.first().is_null());
        assert!(!bucket.is_locked());
    }

    #[test]
    fn the_hint_is_the_first_nodes() {
        let (a, b, c) = (node(1), node(2), node(3));
        let bucket = Bucket::new();
        assert_eq!(bucket.prefetch_hint(), 0, "an empty bucket has none");
        {
            let mut g = bucket.lock();
            // SAFETY: live nodes on no chain; they outlive the bucket's use.
            unsafe {
                g.push_front(&c);
                g.push_front(&b);
            }
        }
        assert_eq!(bucket.prefetch_hint(), 2 * 64);
        {
            let mut g = bucket.lock();
            // SAFETY: as above.
            unsafe { g.push_front(&a) };
            assert_eq!(bucket.prefetch_hint(), 64, "pushed in front");
            assert!(g.remove(&b));
            assert_eq!(bucket.prefetch_hint(), 64, "a removal behind the head");
            assert!(g.remove(&a));
            assert_eq!(bucket.prefetch_hint(), 0, "the head removed: none");
        }
        // A node's hint is refreshed only where the node is first.
        bucket.refresh_hint(&a);
        assert_eq!(bucket.prefetch_hint(), 0, "not on the chain");
        bucket.refresh_hint(&c);
        assert_eq!(bucket.prefetch_hint(), 3 * 64);
        assert!(bucket.lock().remove(&c));
        assert_eq!(bucket.prefetch_hint(), 0, "emptied");
    }

    #[test]
    fn removed_node_keeps_its_next() {
        let (a, b, c) = (node(1), node(2), node(3));
        let bucket = Bucket::new();
        let mut g = bucket.lock();
        // SAFETY: live nodes on no chain; they outlive the bucket's use.
        unsafe {
            g.push_front(&c);
            g.push_front(&b);
            g.push_front(&a);
        }
        assert!(g.remove(&b));
        assert_eq!(b.next.load(Relaxed), &c as *const Node as *mut Node);
        assert!(g.remove(&a));
        assert_eq!(a.next.load(Relaxed), &c as *const Node as *mut Node);
    }

    #[test]
    fn lock_bit_hidden_from_readers() {
        let a = node(7);
        let bucket = Bucket::new();
        let mut g = bucket.lock();
        // SAFETY: a live node on no chain that outlives the bucket's use.
        unsafe { g.push_front(&a) };
        assert!(bucket.is_locked());
        assert!(bucket.try_lock().is_none());
        assert_eq!(bucket.first(), &a as *const Node);
        // SAFETY: `a` outlives the iteration.
        let seen: Vec<u64> = unsafe { bucket.iter_lockfree() }.map(|n| n.key).collect();
        assert_eq!(seen, [7]);
        drop(g);
        assert!(!bucket.is_locked());
        assert!(bucket.try_lock().is_some());
    }

    #[test]
    fn lock_excludes() {
        // Non-atomic read-modify-write under the lock: lost updates would
        // show if two threads were ever inside at once.
        let bucket: Bucket<Node> = Bucket::new();
        let value = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let _g = bucket.lock();
                        let v = value.load(Relaxed);
                        value.store(v + 1, Relaxed);
                    }
                });
            }
        });
        assert_eq!(value.load(Relaxed), 80_000);
    }
}
