//! Differential testing of vfscale against the real kernel.
//!
//! - `sandbox`: a fresh tmpfs as the root of a private mount namespace of
//!   one thread (root only), torn down by the kernel when the thread and
//!   its workers end, however the test ends;
//! - `kernel`: `KernelProcess`, a `ProcessApi` whose calls are real
//!   syscalls made by one dedicated thread with its own fd table, root, cwd,
//!   umask and credentials (see the module for why a thread and not a
//!   forked child);
//! - `snapshot`: a whole-tree summary through any `ProcessApi`, to compare
//!   the final namespaces of both sides;
//! - `seeded`: the property tests' replayable runner and fresh-thread
//!   cases;
//! - `compare`: the steps left out of a comparison and the outcomes
//!   compared by shape (readdir order, autobound socket names);
//! - `script`: the log and comparison of the scripted kernel comparisons.
//!
//! The operation sequences and the outcome comparison are the model's
//! harness (`vfscale_model::ops`), unchanged: `apply` is generic over
//! `ProcessApi`.

pub mod compare;
pub mod kernel;
pub mod sandbox;
pub mod script;
pub mod seeded;
pub mod snapshot;
pub mod tree;

pub use kernel::KernelProcess;
pub use sandbox::{
    enter_private_tmpfs_root, enter_root_at, on_kernel_as_root, own_network_namespace,
    private_mount_namespace, SandboxError,
};
