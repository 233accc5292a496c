//! Filesystem implementations that plug into the VFS core.

pub mod tmpfs;
