//! Stand-in.
pub use std::sync::atomic::{
    fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
pub fn spin_hint() {
    std::hint::spin_loop()
}
