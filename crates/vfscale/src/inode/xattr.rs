//! Extended attributes (tmpfs's simple_xattrs), kept beside the inodes
//! rather than in them: a per-superblock table from inode number to a
//! name → value map. The inode stays three cache lines (its third line has
//! no free word), and inodes that never get an attribute pay nothing: not
//! even the free path looks at the table until some inode of the
//! superblock has had one.
//!
//! Invariants:
//! - A map for inode number `ino` is dropped when that inode is freed
//!   (`iput` calls `forget`), and inode numbers are never reused within a
//!   superblock, so no inode can see another's map. (A set that found the
//!   inode lock-free and races with its final `iput` can leave a map
//!   behind: unreachable, and freed with the superblock.)
//! - Each shard's mutex protects its maps; no other lock is taken inside it.
//! - `used` goes false → true once (Release) before the first map is
//!   inserted; `forget` reads it (Acquire) and skips the table while false.

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::lock::Mutex;
use std::collections::{BTreeMap, HashMap};

/// Names to values of one inode.
pub type XattrMap = BTreeMap<Box<[u8]>, Box<[u8]>>;

const SHARDS: usize = 16;

pub struct XattrTable {
    used: AtomicBool,
    shards: [Mutex<HashMap<u64, XattrMap>>; SHARDS],
}

impl Default for XattrTable {
    fn default() -> Self {
        XattrTable::new()
    }
}

impl XattrTable {
    pub fn new() -> XattrTable {
        XattrTable {
            used: AtomicBool::new(false),
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    fn shard(&self, ino: u64) -> &Mutex<HashMap<u64, XattrMap>> {
        &self.shards[(ino ^ (ino >> 11)) as usize % SHARDS]
    }

    /// Runs `f` on inode `ino`'s attributes (an empty map if it has none).
    pub fn read<R>(&self, ino: u64, f: impl FnOnce(&XattrMap) -> R) -> R {
        // Acquire: pairs with the Release in `write`.
        if !self.used.load(Ordering::Acquire) {
            return f(&XattrMap::new());
        }
        let shard = self.shard(ino).lock();
        match shard.get(&ino) {
            Some(m) => f(m),
            None => f(&XattrMap::new()),
        }
    }

    /// Runs `f` on inode `ino`'s attributes, which it may change; an empty
    /// map left behind is dropped.
    pub fn write<R>(&self, ino: u64, f: impl FnOnce(&mut XattrMap) -> R) -> R {
        // Relaxed: only decides whether the store below is needed; the
        // store is the publication.
        if !self.used.load(Ordering::Relaxed) {
            // Release: pairs with the Acquire loads in `read` and `forget`;
            // set before any map exists.
            self.used.store(true, Ordering::Release);
        }
        let mut shard = self.shard(ino).lock();
        let m = shard.entry(ino).or_default();
        let r = f(m);
        if m.is_empty() {
            shard.remove(&ino);
        }
        r
    }

    /// Drops inode `ino`'s attributes (the inode is being freed).
    pub fn forget(&self, ino: u64) {
        // Acquire: pairs with the Release in `write`: a map inserted before
        // the inode was freed is seen here.
        if !self.used.load(Ordering::Acquire) {
            return;
        }
        let gone = self.shard(ino).lock().remove(&ino);
        drop(gone);
    }
}
