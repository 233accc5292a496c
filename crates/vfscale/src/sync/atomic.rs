//! The atomics facade: `std` atomics normally, `loom`'s under `cfg(loom)`.
//!
//! Invariant: every atomic on a hot path of this crate comes from here, so a
//! `--cfg loom` build model-checks the real protocol code, not a copy of it.
//! Loom atomics are not `const`-constructible, so `static` atomics (global id
//! sources) use `std::sync::atomic` directly and are not modelled.

#[cfg(not(loom))]
pub use std::sync::atomic::{
    fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

/// Tells the CPU we are busy-waiting. Under loom it yields to another model
/// thread instead, which loom requires of every spin loop.
#[inline]
pub fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Gives up the rest of the time slice after spinning for a while (a lock
/// holder may have been preempted). Under loom the same as [`spin_hint`].
#[inline]
pub fn yield_thread() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}
