//! Memory for the core's objects: slab caches of cache-line-aligned
//! objects (`slab.rs`).

pub mod slab;
