//! Memory for the core's objects: slab caches of cache-line-aligned
//! objects (`slab.rs`) and their sharded depots of free batches
//! (`depot.rs`).

pub mod depot;
pub mod slab;
