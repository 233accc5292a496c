//! Stand-in.
use super::atomic::*;
#[derive(Default)]
pub struct ShardedCounter(AtomicI64);
impl ShardedCounter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&self, d: i64) {
        self.0.fetch_add(d, Ordering::Relaxed);
    }
    pub fn inc(&self) {
        self.add(1)
    }
    pub fn dec(&self) {
        self.add(-1)
    }
    pub fn sum(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}
#[derive(Default)]
pub struct ApproxCounter(AtomicI64);
impl ApproxCounter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&self, d: i64) {
        self.0.fetch_add(d, Ordering::Relaxed);
    }
    pub fn read_approx(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
    pub fn sum(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}
