//! The build smoke tests of build_smoke.rs (cc and rustc building and
//! running programs on the mount), served over FUSE-over-io_uring
//! (`MountConfig::uring`; common/mod.rs picks the transport by this test
//! binary's name). Each test skips with the printed reason where the
//! kernel refuses the ring.

#[path = "build_smoke.rs"]
mod build_smoke;
