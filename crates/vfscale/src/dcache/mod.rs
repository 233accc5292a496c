//! The dentry cache.

pub mod hash;
