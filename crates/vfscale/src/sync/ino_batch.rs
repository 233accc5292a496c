//! Stand-in.
use super::atomic::*;
pub struct InoAllocator(AtomicU64);
impl InoAllocator {
    pub fn new(first: u64) -> Self {
        InoAllocator(AtomicU64::new(first.max(1)))
    }
    pub fn alloc(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}
