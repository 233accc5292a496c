//! Stand-in; replaced by the sync branch.
pub mod atomic;
pub mod counter;
pub mod ino_batch;
pub mod refcount;
pub mod seqcount;
