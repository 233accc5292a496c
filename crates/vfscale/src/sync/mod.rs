//! Concurrency primitives for the hot paths (DESIGN.md §3, rules 2-5).
//!
//! Invariants kept by every module here:
//! - all shared state is reached through [`atomic`], the loom facade, so the
//!   protocols can be model-checked with `RUSTFLAGS="--cfg loom"`
//!   (`scripts/loom.sh`); the only exceptions are process-global id sources
//!   (thread numbers, allocator ids), which loom cannot hold in a `static`;
//! - nothing here frees memory that a lock-free reader may still hold: the
//!   caller's epoch reclamation does that;
//! - every ordering weaker than `SeqCst` says what it pairs with.

pub mod atomic;
pub mod bitlock;
pub mod counter;
pub mod epoch;
pub mod handoff;
pub mod in_flight;
pub mod ino_batch;
pub mod lock;
pub mod opcount;
pub mod refcount;
pub mod seqcount;
pub mod shardref;
pub mod spin_queue;

pub use bitlock::{Bucket, BucketGuard, ChainIter, ChainNode};
pub use counter::{shard_index, ApproxCounter, ShardedCounter};
pub use in_flight::InFlight;
pub use ino_batch::InoAllocator;
pub use refcount::RefCount;
pub use seqcount::{SeqCount, SeqWriteGuard};
pub use spin_queue::{SpinNode, SpinQueue};
