//! Memory for the core's objects: slab caches of cache-line-aligned
//! objects (`slab.rs`) and their sharded depots of free batches
//! (`depot.rs`).

pub mod depot;
pub mod slab;

/// Hints the CPU to fetch `p`'s cache line: for loops over objects spread
/// over the heap (the deferred-put drain, fd-table teardown), where the
/// misses, not the work, dominate, and for an address known before the
/// load that needs it (a hash bucket's hint of its dentry's inode).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, even on an
    // invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
