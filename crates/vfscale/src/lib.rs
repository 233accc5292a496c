//! vfscale: a user-space virtual filesystem core that keeps scaling as cores
//! are added. See docs/ARCHITECTURE.md for the layers and the hot-path rules.

pub mod abi;
pub mod cred;
pub mod dcache;
pub mod process;
pub mod sync;

pub use abi::{Errno, SysResult};
pub use cred::Cred;
pub use process::{Fd, ProcessApi};
