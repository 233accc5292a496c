//! Test instrumentation: per-thread counts of refcount operations and lock
//! acquisitions, compiled in only with the `op-counters` feature (the test
//! suite enables it; release builds of users never pay for it).
//!
//! It exists to prove a hot-path rule (DESIGN §3.1): a `stat` of a cached
//! path performs no refcount operation and takes no lock. Counting happens
//! at the two choke points every such operation goes through: `RefCount`
//! and the lock wrappers in [`super::lock`] and the bucket bit-lock.

/// Operation counts of the calling thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// `RefCount::get`, `put` and `try_kill` calls.
    pub refcount_ops: u64,
    /// Mutex, rwlock and bucket-lock acquisitions.
    pub lock_acquisitions: u64,
}

#[cfg(feature = "op-counters")]
thread_local! {
    static COUNTS: core::cell::Cell<OpCounts> = const { core::cell::Cell::new(OpCounts { refcount_ops: 0, lock_acquisitions: 0 }) };
}

#[inline(always)]
pub(crate) fn note_refcount_op() {
    #[cfg(feature = "op-counters")]
    COUNTS.with(|c| {
        let mut v = c.get();
        v.refcount_ops += 1;
        c.set(v);
    });
}

#[inline(always)]
pub(crate) fn note_lock() {
    #[cfg(feature = "op-counters")]
    COUNTS.with(|c| {
        let mut v = c.get();
        v.lock_acquisitions += 1;
        c.set(v);
    });
}

/// The calling thread's counts so far (all zero without `op-counters`).
pub fn thread_counts() -> OpCounts {
    #[cfg(feature = "op-counters")]
    return COUNTS.with(|c| c.get());
    #[cfg(not(feature = "op-counters"))]
    OpCounts::default()
}

/// True when the counters are compiled in.
pub const ENABLED: bool = cfg!(feature = "op-counters");
