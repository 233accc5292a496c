//! The file-handle tests of export.rs, served over FUSE-over-io_uring
//! (`MountConfig::uring`; common/mod.rs picks the transport by this test
//! binary's name). Each test skips with the printed reason where the
//! kernel refuses the ring.

#[path = "export.rs"]
mod export;
