//! Stand-in.
use crate::sync::atomic::*;
use std::marker::PhantomData;
/// # Safety
/// chain_next must return the same link for the node's lifetime.
pub unsafe trait ChainNode {
    fn chain_next(&self) -> &AtomicPtr<Self>
    where
        Self: Sized;
}
pub struct Bucket<N> {
    head: AtomicUsize,
    _p: PhantomData<*const N>,
}
pub struct ChainTable<N> {
    buckets: Box<[Bucket<N>]>,
    bits: u32,
}
unsafe impl<N> Send for ChainTable<N> {}
unsafe impl<N> Sync for ChainTable<N> {}
impl<N: ChainNode> ChainTable<N> {
    pub fn with_bucket_bits(bits: u32) -> Self {
        let buckets = (0..1usize << bits)
            .map(|_| Bucket {
                head: AtomicUsize::new(0),
                _p: PhantomData,
            })
            .collect();
        ChainTable { buckets, bits }
    }
    pub fn bucket(&self, hash: u64) -> &Bucket<N> {
        &self.buckets[(hash >> (64 - self.bits)) as usize]
    }
}
impl<N: ChainNode> Bucket<N> {
    pub fn first(&self) -> *const N {
        (self.head.load(Ordering::Acquire) & !1) as *const N
    }
    pub fn lock(&self) -> BucketGuard<'_, N> {
        loop {
            let h = self.head.load(Ordering::Relaxed);
            if h & 1 == 0
                && self
                    .head
                    .compare_exchange_weak(h, h | 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return BucketGuard { b: self };
            }
            spin_hint();
        }
    }
}
pub struct BucketGuard<'a, N: ChainNode> {
    b: &'a Bucket<N>,
}
impl<N: ChainNode> BucketGuard<'_, N> {
    pub fn first(&self) -> *const N {
        (self.b.head.load(Ordering::Relaxed) & !1) as *const N
    }
    /// # Safety
    /// node valid, not in any chain.
    pub unsafe fn push_front(&mut self, node: *const N) {
        (*node)
            .chain_next()
            .store(self.first() as *mut N, Ordering::Relaxed);
        self.b.head.store(node as usize | 1, Ordering::Release);
    }
    /// # Safety
    /// chain nodes valid.
    pub unsafe fn remove(&mut self, node: *const N) -> bool {
        let mut p = self.first();
        if p == node {
            let next = (*node).chain_next().load(Ordering::Relaxed);
            self.b.head.store(next as usize | 1, Ordering::Release);
            return true;
        }
        while !p.is_null() {
            let next = (*p).chain_next().load(Ordering::Relaxed);
            if next as *const N == node {
                (*p).chain_next().store(
                    (*node).chain_next().load(Ordering::Relaxed),
                    Ordering::Release,
                );
                return true;
            }
            p = next;
        }
        false
    }
}
impl<N: ChainNode> Drop for BucketGuard<'_, N> {
    fn drop(&mut self) {
        self.b.head.fetch_and(!1, Ordering::Release);
    }
}
