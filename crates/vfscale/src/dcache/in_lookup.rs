//! In-lookup placeholders (Linux's `d_alloc_parallel` / DCACHE_PAR_LOOKUP):
//! the table of names whose backend lookup is in flight.
//!
//! When a name misses the dcache of a directory whose backend is not
//! authoritative, the first thread to `claim` it becomes the *leader*: it
//! asks the backend, publishes the answer in the dcache, and then
//! `complete`s its claim. Threads that claim the same (parent, name) while
//! the leader is in flight park on the placeholder's condition variable and
//! wake with the leader's outcome: `Ok` means "the answer is in the dcache
//! now, look again"; `Err(e)` is the leader's backend error, shared with
//! every waiter (the error is not cached: the next miss asks again).
//!
//! The placeholders live here, not in the dentry hash, so the lock-free path
//! walk can never see one (it finds nothing, falls back to `lookup_slow`,
//! and waits there) and the hash chains and their hot path are unchanged.
//!
//! Invariants:
//! - at most one placeholder per (parent, name) exists at a time: `claim`
//!   searches and inserts under the shard's mutex;
//! - a placeholder leaves the table (under the shard mutex) before its
//!   waiters are woken, and the leader publishes its answer in the dcache
//!   before that, so a thread that claims after the removal finds the
//!   answer when it re-checks the dcache (no second backend call);
//! - the outcome is set under the placeholder's own mutex and `notify_all`
//!   follows while it is held, so a waiter that checked the state and went
//!   to sleep under the same mutex cannot miss it (no lost wake-up);
//! - a leader that returns without completing (an early return, a panic)
//!   completes on drop with `Retry`, so waiters never sleep forever;
//! - nothing here spins: waiters park. Lock order: the shard mutex, then a
//!   placeholder's mutex (never the reverse); both are leaves below the
//!   directory lock the callers hold shared.
//!
//! Under `cfg(loom)` the mutexes and condition variables are loom's, so the
//! protocol is model-checked (tests/loom_sync.rs, `in_lookup_*`).

use crate::abi::Errno;
use crate::dcache::dentry::Dentry;
use crossbeam_utils::CachePadded;
use std::sync::Arc;

#[cfg(not(loom))]
mod imp {
    pub(super) use parking_lot::{Condvar, Mutex, MutexGuard};
    pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock()
    }
    pub(super) fn wait<'a, T>(c: &Condvar, mut g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        c.wait(&mut g);
        g
    }
}

#[cfg(loom)]
mod imp {
    pub(super) use loom::sync::{Condvar, Mutex, MutexGuard};
    pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().expect("loom mutex")
    }
    pub(super) fn wait<'a, T>(c: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        c.wait(g).expect("loom condvar")
    }
}

use imp::{lock, wait, Condvar, Mutex};

/// Shards of the table: concurrent misses on different names rarely
/// share a shard mutex, each on a line of its own.
const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;

/// The shard of (parent, name hash): the top bits of the dentry hash's own
/// key, multiplied (`index_in`), where every bit of both reaches. Not the
/// name hash's low bits: those stay the same across names that differ only
/// in their last bytes (the hash keeps the high half of a multiply, whose
/// low bits see only the low bytes of the name's words), and in session 51
/// every miss of `f0000000`, `f0000001`, ... in one directory took one
/// shard's mutex: its line and its vector's were written by two threads'
/// misses on every miss (`pthot missshare` under lackey).
fn shard_of(parent: usize, hash_len: u64) -> usize {
    let key = super::name::bucket_hash(parent as *const Dentry, (hash_len >> 32) as u32);
    super::hash::index_in(key, SHARD_BITS)
}

/// How an in-flight lookup ended, as its waiters see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The answer (positive or negative) is in the dcache: look again.
    Done,
    /// The backend failed with this error (not cached).
    Failed(Errno),
    /// The leader gave up without an answer: look again (and maybe lead).
    Retry,
}

struct Placeholder {
    parent: usize,
    hash_len: u64,
    name: PlaceholderName,
    outcome: Mutex<Option<Outcome>>,
    cond: Condvar,
}

/// Names up to this long are kept in the placeholder itself (a cold
/// lookup's second allocation otherwise; most names are shorter).
const INLINE_NAME: usize = 40;

// The inline length is kept in a byte.
const _: () = assert!(INLINE_NAME <= u8::MAX as usize);

/// A placeholder's copy of its name.
enum PlaceholderName {
    Inline { len: u8, bytes: [u8; INLINE_NAME] },
    Heap(Box<[u8]>),
}

impl PlaceholderName {
    fn new(name: &[u8]) -> PlaceholderName {
        if name.len() <= INLINE_NAME {
            let mut bytes = [0u8; INLINE_NAME];
            bytes[..name.len()].copy_from_slice(name);
            PlaceholderName::Inline {
                len: name.len() as u8,
                bytes,
            }
        } else {
            PlaceholderName::Heap(name.into())
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            PlaceholderName::Inline { len, bytes } => &bytes[..*len as usize],
            PlaceholderName::Heap(b) => b,
        }
    }
}

/// The placeholders of one shard's names.
type Shard = Mutex<Vec<Arc<Placeholder>>>;

/// The in-lookup table of one VFS.
pub struct InLookupTable {
    shards: Box<[CachePadded<Shard>]>,
    /// Threads parked on a placeholder right now (tests observe it).
    waiting: crate::sync::atomic::AtomicUsize,
}

impl Default for InLookupTable {
    fn default() -> Self {
        Self::new()
    }
}

/// What `claim` gives the caller.
pub enum Claim<'t> {
    /// The caller asks the backend and must `complete` (or drop) the claim.
    Leader(Leader<'t>),
    /// Another thread's lookup of the same name ended so.
    Waited(Outcome),
}

/// The leader's claim on a name; completing it wakes the waiters.
pub struct Leader<'t> {
    table: &'t InLookupTable,
    shard: usize,
    ph: Option<Arc<Placeholder>>,
}

impl InLookupTable {
    pub fn new() -> Self {
        InLookupTable {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
            waiting: crate::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Threads parked waiting for another thread's lookup.
    pub fn waiting(&self) -> usize {
        // Relaxed: a statistic for tests; nothing is published through it.
        self.waiting.load(crate::sync::atomic::Ordering::Relaxed)
    }

    /// Claims (parent, name) for a backend lookup, or waits for the thread
    /// that holds the claim and returns how its lookup ended.
    pub fn claim(&self, parent: usize, hash_len: u64, name: &[u8]) -> Claim<'_> {
        let shard = shard_of(parent, hash_len);
        let ph = {
            let mut list = lock(&self.shards[shard]);
            let existing = list
                .iter()
                .find(|p| p.parent == parent && p.hash_len == hash_len && p.name.bytes() == name)
                .cloned();
            match existing {
                Some(p) => p,
                None => {
                    let p = Arc::new(Placeholder {
                        parent,
                        hash_len,
                        name: PlaceholderName::new(name),
                        outcome: Mutex::new(None),
                        cond: Condvar::new(),
                    });
                    list.push(p.clone());
                    return Claim::Leader(Leader {
                        table: self,
                        shard,
                        ph: Some(p),
                    });
                }
            }
        };
        // Relaxed: statistics (see `waiting`).
        use crate::sync::atomic::Ordering::Relaxed;
        self.waiting.fetch_add(1, Relaxed);
        let mut g = lock(&ph.outcome);
        while g.is_none() {
            g = wait(&ph.cond, g);
        }
        let out = g.expect("checked above");
        drop(g);
        self.waiting.fetch_sub(1, Relaxed);
        Claim::Waited(out)
    }
}

impl Leader<'_> {
    /// Ends the claim: removes the placeholder and wakes its waiters with
    /// `outcome`. Call after publishing the answer in the dcache.
    pub fn complete(mut self, outcome: Outcome) {
        self.finish(outcome);
    }

    fn finish(&mut self, outcome: Outcome) {
        let Some(ph) = self.ph.take() else { return };
        {
            let mut list = lock(&self.table.shards[self.shard]);
            if let Some(i) = list.iter().position(|p| Arc::ptr_eq(p, &ph)) {
                list.swap_remove(i);
            }
        }
        let mut g = lock(&ph.outcome);
        *g = Some(outcome);
        ph.cond.notify_all();
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        self.finish(Outcome::Retry);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Names that differ only in their last bytes (a directory of
    /// `f0000000`, `f0000001`, ...) spread over the shards, in one
    /// directory: the old choice, the name hash's low bits, put all 256
    /// of these on one shard.
    #[test]
    fn names_of_one_directory_spread_over_the_shards() {
        let parent = 0x7f12_3456_7880usize;
        let mut used = [0usize; SHARDS];
        for i in 0..256 {
            let name = format!("f{i:07}");
            let key = crate::dcache::name::NameKey::new(name.as_bytes());
            used[shard_of(parent, key.hash_len())] += 1;
        }
        let shards = used.iter().filter(|&&n| n > 0).count();
        let most = used.iter().max().copied().unwrap_or(0);
        assert!(
            shards >= SHARDS * 3 / 4 && most <= 16,
            "256 names took {shards} shards, {most} at most on one"
        );
    }

    /// Names that share a prefix, at the inline bound and past it, are
    /// told apart: a second claim of the same name waits, another name
    /// leads.
    #[test]
    fn names_inline_and_on_the_heap_match_exactly() {
        let table = InLookupTable::new();
        for len in [0, 1, INLINE_NAME - 1, INLINE_NAME, INLINE_NAME + 1, 255] {
            let name = vec![b'n'; len];
            let mut longer = name.clone();
            longer.push(b'x');
            assert_eq!(PlaceholderName::new(&name).bytes(), &name[..]);
            let Claim::Leader(first) = table.claim(1, 7, &name) else {
                panic!("the first claim of a {len}-byte name leads");
            };
            let Claim::Leader(other) = table.claim(1, 7, &longer) else {
                panic!("a longer name of the same hash leads too");
            };
            std::thread::scope(|s| {
                let waiter = s.spawn(|| match table.claim(1, 7, &name) {
                    Claim::Waited(o) => o,
                    Claim::Leader(_) => panic!("a second claim of a {len}-byte name led"),
                });
                while table.waiting() == 0 {
                    std::thread::yield_now();
                }
                first.complete(Outcome::Failed(Errno::EIO));
                assert_eq!(waiter.join().unwrap(), Outcome::Failed(Errno::EIO));
            });
            other.complete(Outcome::Done);
        }
    }
}
