//! The Linux ABI as vfscale's API speaks it: errno values, flag and mode
//! constants, attribute records, and the `linux_dirent64` layout.
//!
//! Nothing here has state; everything is `Copy` data or a pure function.

pub mod anon;
pub mod errno;
pub mod fhandle;
pub mod fileattr;
pub mod flags;
pub mod lock;
pub mod notify;
pub mod stat;

pub use anon::*;
pub use errno::{Errno, SysResult};
pub use fhandle::*;
pub use fileattr::*;
pub use flags::*;
pub use lock::*;
pub use notify::*;
pub use stat::*;

/// A file descriptor number.
pub type Fd = i32;
