//! Deferred, batched final puts (DESIGN.md §3 rule 7, issue 5, seed 002).
//!
//! When deferral is on (`VfsConfig::defer_puts`), the put that kills an
//! open file, an unhashed dentry, an inode or a mount inside a batch scope
//! (process exit, close_range, umount, reclaim, a namespace's drop; every
//! operation when `VfsConfig::defer_single_puts` is set) does not free it
//! inline: the dead object goes to the calling thread's queue for that
//! `Vfs` ([`queue`]: a lone put to the slot's lock-free owner-only buffer,
//! freed one by one at the call's end; a batch scope's to the locked
//! queue), and [`drain`] frees whole batches, grouping the work
//! by the lock or shared counter it needs so each is touched once per
//! batch, and walking parent references iteratively. Process exit hands
//! its whole descriptor table to the drain in chunks of the bound
//! (`VfsInner::fput_many`), without going through the queue.
//!
//! Invariants:
//! - A queued object is dead (its refcount won `try_kill`) and owned by the
//!   queue alone: nobody can revive or reach it through a table, so any
//!   thread may free it. Dentries and inodes still go through the epoch
//!   collector when freed, for lock-free readers that loaded them earlier.
//! - Names are removed synchronously; only freeing lags, and never past the
//!   end of the top-level operation that queued it (`VfsInner::op_end`,
//!   called by every `ProcessApi` method, by the other public calls that
//!   can put through `VfsInner::call_end`, and by `Process`/`Handle`/
//!   `Namespace` drops), a bound (`defer_max_entries`/`defer_max_bytes`:
//!   the queue drains as soon as it reaches either), `Vfs::flush`, umount,
//!   syncfs, `drop_caches`, process exit or the `Vfs`'s drop.
//! - A drain never queues: while a thread drains, its puts run inline
//!   (`queue::DRAINING`), so draining is not re-entrant and cannot recurse.

pub(crate) mod drain;
pub(crate) mod queue;

pub(crate) use queue::{DeferQueues, Deferred};
