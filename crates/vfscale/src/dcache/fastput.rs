//! The lock-free final put of a cached dentry (Linux's `fast_dput`).
//!
//! A put that leaves a hashed dentry at count 0 keeps it cached; it must be
//! on its superblock's LRU so the shrinker can find it. When it already is
//! (`D_ON_LRU`), the put returns without taking the LRU lock.
//!
//! The race this closes: the shrinker, under the LRU lock, unlinks a dentry
//! (clearing `D_ON_LRU`) and then tries to kill it, which fails if a lookup
//! revived it meanwhile ("its last put re-adds it"). That reviver's last put
//! decrements the count and then reads `D_ON_LRU`: two threads each write
//! one word and read the other, the store-buffer pattern. Were the stale
//! flag read, the put would return and the dentry would stay hashed, at 0,
//! on no list: never reclaimed.
//!
//! Protocol (modelled in `tests/loom_sync.rs`, `fast_put_vs_shrinker`):
//! - `D_ON_LRU` changes only under its list's lock (reclaim/list_lru.rs);
//! - the shrinker's kill attempt after unlinking is
//!   `RefCount::try_kill_publishing`, a writing RMW with release, even when
//!   it fails;
//! - the put side calls [`cached_on_lru`] after its `RefCount::put`
//!   returned true: an acquire fence, then the flags. If the put follows the
//!   shrinker's RMW in the count's modification order, it reads from that
//!   RMW's release sequence and the fence makes the cleared flag visible
//!   (slow path: take the lock and re-add). If it precedes it, the
//!   shrinker's RMW reads 0 and kills the dentry.

use super::dentry::{D_HASHED, D_ON_LRU};
use crate::sync::atomic::{fence, AtomicU32, Ordering};

/// True if a dentry whose count a put just dropped to 0 is hashed and on
/// an LRU list, so the put may return without any lock. `flags` is the
/// dentry's flag word; call only right after `put()` returned true.
#[inline]
pub fn cached_on_lru(flags: &AtomicU32) -> bool {
    // Acquire fence: pairs with the Release RMW of
    // `RefCount::try_kill_publishing` (and of every earlier put, whose
    // release sequence our put read from), so a flag cleared before it is
    // seen below.
    fence(Ordering::Acquire);
    // Relaxed: ordered by the fence above.
    let f = flags.load(Ordering::Relaxed);
    f & (D_HASHED | D_ON_LRU) == D_HASHED | D_ON_LRU
}
