//! The process level of the API: a `Process` with credentials, root, cwd,
//! umask and an fd table, and methods named after the syscalls.

pub mod api;

pub use api::{Fd, ProcessApi};
