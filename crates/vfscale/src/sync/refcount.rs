//! Stand-in.
use super::atomic::*;
const DEAD_ZONE_START: u32 = 0xC000_0000;
const DEAD: u32 = 0xE000_0000;
pub struct RefCount(AtomicU32);
impl RefCount {
    pub fn new(initial: u32) -> RefCount {
        RefCount(AtomicU32::new(initial))
    }
    pub fn get(&self) -> bool {
        self.0.fetch_add(1, Ordering::Relaxed) < DEAD_ZONE_START
    }
    pub fn put(&self) -> bool {
        self.0.fetch_sub(1, Ordering::Release) == 1
    }
    pub fn try_kill(&self) -> bool {
        self.0
            .compare_exchange(0, DEAD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    pub fn is_dead(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= DEAD_ZONE_START
    }
    pub fn count(&self) -> u32 {
        let c = self.0.load(Ordering::Relaxed);
        if c >= DEAD_ZONE_START {
            0
        } else {
            c
        }
    }
}
