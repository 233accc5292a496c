//! Stand-in.
use super::atomic::*;
pub struct SeqCount(AtomicU32);
impl Default for SeqCount {
    fn default() -> Self {
        Self::new()
    }
}
impl SeqCount {
    pub fn new() -> Self {
        SeqCount(AtomicU32::new(0))
    }
    pub fn read_begin(&self) -> u32 {
        loop {
            let s = self.0.load(Ordering::Acquire);
            if s & 1 == 0 {
                return s;
            }
            spin_hint();
        }
    }
    pub fn read_begin_raw(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
    pub fn read_retry(&self, start: u32) -> bool {
        fence(Ordering::Acquire);
        start & 1 != 0 || self.0.load(Ordering::Relaxed) != start
    }
    pub fn write_begin(&self) {
        let s = self.0.load(Ordering::Relaxed);
        self.0.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }
    pub fn write_end(&self) {
        let s = self.0.load(Ordering::Relaxed);
        self.0.store(s.wrapping_add(1), Ordering::Release);
    }
    pub fn raw(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}
