//! vfscale: a user-space virtual filesystem core that keeps scaling as cores
//! are added. See docs/ARCHITECTURE.md for the layers and the hot-path rules.
//!
//! ```
//! use vfscale::{abi::*, ProcessApi, Vfs};
//! let vfs = Vfs::new();
//! let p = vfs.root_process();
//! p.mkdir(b"/etc", 0o755).unwrap();
//! let fd = p.open(b"/etc/hosts", O_CREAT | O_WRONLY, 0o644).unwrap();
//! p.write(fd, b"127.0.0.1 localhost\n").unwrap();
//! p.close(fd).unwrap();
//! assert_eq!(p.stat(b"/etc/hosts").unwrap().size, 20);
//! ```

pub mod abi;
pub mod anon;
pub mod check;
pub mod cred;
pub mod dcache;
pub(crate) mod defer;
pub mod dir;
pub mod file;
pub mod filelock;
pub mod fs;
pub mod inode;
pub mod mem;
pub mod mount;
pub(crate) mod notify;
pub mod process;
pub mod reclaim;
pub mod sync;
pub mod vfs;
pub mod watch;

pub use abi::{Errno, SysResult};
pub use cred::Cred;
pub use process::{Entry, Fh, Handle, Namespace, SetAttr};
pub use process::{Fd, Process, ProcessApi};
pub use vfs::{ObjectCounts, Vfs, VfsConfig};
pub use watch::{InodeChange, NameChange, NameObserver, ObserverId};

/// The cases a unit property test runs: `default`, or `PROPTEST_CASES` for
/// a longer run (an explicit `cases` in a config would override the
/// variable, so each test asks here).
#[cfg(test)]
pub(crate) fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The README's Rust examples, compiled (and run, unless marked `no_run`)
/// by `cargo test --doc`, so the front page cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
