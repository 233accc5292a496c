//! The dentry hash table: a fixed array of bit-locked chains
//! ([`crate::sync::bitlock`]), generic over the node type so the protocol
//! can be tested and loom-checked without dentries.
//!
//! Invariants (besides those of the chains, which this module inherits):
//! - the table never resizes: a bucket's address is stable for the table's
//!   life, so a reader needs no protection to reach a bucket, only to follow
//!   its nodes (epoch guard);
//! - a hash always maps to the same bucket: the high bits of the hash times
//!   the 64-bit golden ratio (Fibonacci hashing). The multiply spreads every
//!   input bit into the high bits, so a weak hash (say, a name hash XOR a
//!   parent address) still spreads over the buckets;
//! - buckets are allocated zeroed, so a huge table costs untouched pages
//!   until used.
//!
//! Readers never write, a moved node may divert a lock-free reader (validate
//! misses with the rename seqcount), and nothing here frees a node: see
//! [`crate::sync::bitlock`].

pub use crate::sync::bitlock::{Bucket, BucketGuard, ChainIter, ChainNode};

/// 2^64 / φ: the Fibonacci-hashing multiplier.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Largest table: 2^32 buckets (the index is taken from the high 32 bits).
pub const MAX_BUCKET_BITS: u32 = 32;

/// A hash table of `2^bits` bit-locked chains.
pub struct ChainTable<N> {
    buckets: Box<[Bucket<N>]>,
    bits: u32,
}

impl<N: ChainNode> ChainTable<N> {
    /// A table of `2^bits` empty buckets (`bits <= 32`; 0 gives one bucket).
    pub fn with_bucket_bits(bits: u32) -> ChainTable<N> {
        assert!(
            bits <= MAX_BUCKET_BITS,
            "ChainTable: {bits} bucket bits is too many"
        );
        ChainTable {
            buckets: empty_buckets(1usize << bits),
            bits,
        }
    }

    /// The bucket index of `hash`: the top `bits` bits of `hash × GOLDEN`.
    #[inline]
    pub fn bucket_index(&self, hash: u64) -> usize {
        // Two shifts so that bits == 0 needs no branch (a single shift by 64
        // would overflow).
        ((hash.wrapping_mul(GOLDEN) >> 32) >> (32 - self.bits)) as usize
    }

    /// The bucket that holds every node whose hash is `hash`.
    #[inline]
    pub fn bucket(&self, hash: u64) -> &Bucket<N> {
        let i = self.bucket_index(hash);
        debug_assert!(i < self.buckets.len());
        // SAFETY: `bucket_index` keeps the top `bits` bits of a 64-bit
        // value, so `i < 2^bits`, the table's length (fixed at creation).
        unsafe { self.buckets.get_unchecked(i) }
    }

    #[inline]
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// All buckets, e.g. for a full scan under each bucket's lock.
    pub fn buckets(&self) -> &[Bucket<N>] {
        &self.buckets
    }
}

impl<N> core::fmt::Debug for ChainTable<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChainTable")
            .field("buckets", &self.buckets.len())
            .finish()
    }
}

#[cfg(not(loom))]
fn empty_buckets<N: ChainNode>(n: usize) -> Box<[Bucket<N>]> {
    let zeroed = Box::<[Bucket<N>]>::new_zeroed_slice(n);
    // SAFETY: a `Bucket` is an `AtomicPtr` and an `AtomicUsize`, for which
    // all-zero bytes are valid: the null pointer with the lock bit clear, an
    // empty unlocked chain, and no hint.
    unsafe { zeroed.assume_init() }
}

#[cfg(loom)]
fn empty_buckets<N: ChainNode>(n: usize) -> Box<[Bucket<N>]> {
    // Loom atomics carry model state, so they must be constructed.
    (0..n).map(|_| Bucket::new()).collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    // Relaxed `stop`: it publishes no data; the joins order the final checks.
    use super::*;
    use crate::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};
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
        assert!(t
            .buckets()
            .iter()
            .all(|b| b.first().is_null() && !b.is_locked()));
        let mut used = std::collections::HashSet::new();
        for h in 0..4096u64 {
            let i = t.bucket_index(h);
            assert!(i < 1024);
            assert!(core::ptr::eq(t.bucket(h), &t.buckets()[i]));
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
            unsafe { t.bucket(n.key).lock().push_front(n) };
        }
        let find = |k: u64| {
            // SAFETY: every node outlives this scan.
            unsafe { t.bucket(k).iter_lockfree() }.any(|n| n.key == k)
        };
        assert!((0..100).all(find));
        for n in nodes.iter().filter(|n| n.key % 2 == 0) {
            assert!(t.bucket(n.key).lock().remove(n));
        }
        assert!((0..100).all(|k| find(k) == (k % 2 == 1)));
        let total: usize = t.buckets().iter().map(|b| b.lock().iter().count()).sum();
        assert_eq!(total, 50);
    }

    /// Writers insert and remove nodes while lock-free readers scan. Readers
    /// must only ever see valid nodes of the bucket they scan, and must
    /// always find the pinned nodes, which stay in the table throughout.
    #[test]
    fn stress_lockfree_readers_vs_writers() {
        const PINNED: u64 = 32;
        const MOBILE: u64 = 224;
        const WRITERS: u64 = 2;
        let table = ChainTable::with_bucket_bits(4);
        let nodes: Vec<Node> = (0..PINNED + MOBILE).map(node).collect();
        for n in &nodes[..PINNED as usize] {
            // SAFETY: live nodes on no chain; `nodes` outlives the table's use.
            unsafe { table.bucket(n.key).lock().push_front(n) };
        }
        let stop = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_millis(300);
        let (table, nodes, stop) = (&table, &nodes, &stop);
        let linked_mobile: usize = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    s.spawn(move || {
                        let mine: Vec<&Node> = nodes[PINNED as usize..]
                            .iter()
                            .filter(|n| n.key % WRITERS == w)
                            .collect();
                        let mut linked = vec![false; mine.len()];
                        let mut seed = 0x1234_5678 + w;
                        while Instant::now() < deadline {
                            for _ in 0..64 {
                                let i = rng(&mut seed) as usize % mine.len();
                                let n = mine[i];
                                let mut g = table.bucket(n.key).lock();
                                if linked[i] {
                                    assert!(g.remove(n), "a linked node must be found");
                                } else {
                                    // SAFETY: `n` is on no chain (only this
                                    // writer links it) and outlives the scope.
                                    unsafe { g.push_front(n) };
                                }
                                linked[i] = !linked[i];
                            }
                        }
                        stop.store(true, Relaxed);
                        linked.iter().filter(|&&l| l).count()
                    })
                })
                .collect();
            for r in 0..2u64 {
                s.spawn(move || {
                    let mut seed = 0x9876_5432 + r;
                    let mut scans = 0u64;
                    while !stop.load(Relaxed) {
                        let want = rng(&mut seed) % PINNED;
                        let bucket = table.bucket_index(want);
                        let mut found = false;
                        // SAFETY: no node is freed before the scope ends.
                        let chain = unsafe { table.buckets()[bucket].iter_lockfree() };
                        for (steps, n) in chain.enumerate() {
                            assert_eq!(n.magic, MAGIC, "reached a garbage node");
                            assert_eq!(table.bucket_index(n.key), bucket, "left the bucket");
                            assert!(steps < 100_000, "reader looped");
                            found |= n.key == want;
                        }
                        assert!(found, "pinned node {want} missed");
                        scans += 1;
                    }
                    assert!(scans > 0);
                });
            }
            writers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        // Quiescent: exactly the pinned nodes plus the linked mobile ones.
        let linked: usize = table
            .buckets()
            .iter()
            .map(|b| b.lock().iter().count())
            .sum();
        assert_eq!(linked, PINNED as usize + linked_mobile);
        for n in &nodes[..PINNED as usize] {
            assert!(table
                .bucket(n.key)
                .lock()
                .iter()
                .any(|m| core::ptr::eq(m, n)));
        }
    }
}
