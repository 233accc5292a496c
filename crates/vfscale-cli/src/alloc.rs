//! The process allocator of the `vfscale` binary (every bench target
//! shares it) and of the examples that stand in for it: mimalloc, asked
//! for a plain `mi_malloc` when the layout's alignment is one every block
//! of that size already has.
//!
//! Why not `mimalloc::MiMalloc` alone: it hands every request to
//! `mi_malloc_aligned`, whose fast path takes a block only from the size
//! class's free list. When that list is empty — a create-then-free churn
//! empties it every time, since frees go to the page's local list first —
//! it falls to the generic aligned path, which for a block size that is
//! not a power of two over-allocates and aligns by hand: a socket's
//! 80-byte cell cost the anon-churn socket ~120 instructions per
//! create+close that way (session 18, callgrind). `mi_malloc` takes the
//! local frees back instead. The line is std's `System` allocator's:
//! alignments up to 16 bytes (mimalloc's MI_MAX_ALIGN_SIZE) and no larger
//! than the size.

use std::alloc::{GlobalAlloc, Layout};

pub struct Alloc;

/// The alignment every mimalloc block of at least this size has.
const MIN_ALIGN: usize = 16;

fn plain(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

// SAFETY: each method returns memory from mimalloc with at least the
// layout's size and alignment (`plain` layouts: a block of that size is
// aligned to min(16, its size class) >= align; others go to MiMalloc's
// aligned calls), or null; every block, whichever call made it, is freed
// by `mi_free` (MiMalloc's dealloc), which takes both.
unsafe impl GlobalAlloc for Alloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: mi_malloc has no preconditions.
            unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's layout, passed on.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: mi_zalloc has no preconditions.
            unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's layout, passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (caller's contract), so
        // from mimalloc, whose mi_free takes any of its blocks.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            // SAFETY: `ptr` is a live mimalloc block (caller's contract);
            // mi_realloc keeps the contents up to the smaller size.
            unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            // SAFETY: the caller's arguments, passed on.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}
