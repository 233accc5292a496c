//! tmpfs: the in-memory filesystem.

pub mod data;
