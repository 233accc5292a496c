//! The permission and race tests of perms_races.rs, served over FUSE-over-io_uring
//! (`MountConfig::uring`; common/mod.rs picks the transport by this test
//! binary's name). Each test skips with the printed reason where the
//! kernel refuses the ring.

#[path = "perms_races.rs"]
mod perms_races;
