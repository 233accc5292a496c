//! Memory for the core's objects: slab caches of cache-line-aligned
//! objects (`slab.rs`) and their sharded depots of free batches
//! (`depot.rs`).

pub mod depot;
pub mod slab;

/// A fresh anonymous private mapping of `len` bytes: zero-filled,
/// page-aligned, its own pages (the slab's chunks, the dentry hash's big
/// bucket arrays, which `munmap` gives back). Fails as the allocator
/// does (`handle_alloc_error` with `layout`) when the system refuses.
///
/// `populate` faults every page in, writable, before returning: for
/// memory that is read before it is written (a new bucket array, whose
/// buckets the resize reads and then links). Without it the first read
/// of a page maps the shared zero page, and the write after it copies the
/// page and flushes the old mapping from every CPU the process ran on:
/// a cross-CPU interrupt per page, 2.8–3.7% of a two-thread miss pass's
/// samples (docs/PERFORMANCE.md, session 51).
#[cfg(not(vfscale_no_slab))]
pub(crate) fn map_anonymous(len: usize, layout: std::alloc::Layout, populate: bool) -> *mut u8 {
    let populate = if populate { libc::MAP_POPULATE } else { 0 };
    // SAFETY: an anonymous private mapping; no existing memory is touched.
    let region = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate,
            -1,
            0,
        )
    };
    if region == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(layout);
    }
    region.cast()
}

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
