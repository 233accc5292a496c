//! The node table: FUSE node ids ↔ pinned namespace handles, with the
//! kernel's lookup counts.
//!
//! Invariants:
//! - A node id is derived from the object's (device, inode number): the
//!   inode number itself on the served root's filesystem (with the root's
//!   number and 1 swapped, since FUSE's root is node 1), `dev << 48 | ino`
//!   on other filesystems mounted inside the namespace. vfscale never reuses
//!   an inode number within a filesystem, so a stale id the kernel sends
//!   finds nothing (ENOENT/ESTALE), never another object. Generation is 0.
//! - Each id's slot lives in one shard (chosen by the id) and its lookup
//!   count is changed only under that shard's mutex: LOOKUP adds before the
//!   reply is sent, FORGET subtracts what the kernel had counted and removes
//!   the slot at zero. A reply carrying an id therefore always finds its
//!   slot alive, and the slot's handle pins the dentry (and so the inode):
//!   the kernel is never handed a dying inode.
//! - Operations clone the slot's `Arc<Node>` under the shard lock and run
//!   without it, so a FORGET during an operation only drops the table's
//!   reference; the handle is released by whoever drops the last `Arc`.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use vfscale::abi::Stat;
use vfscale::{Entry, Handle};

const SHARDS: usize = 64;

/// The root node's id (FUSE_ROOT_ID).
pub const ROOT_ID: u64 = 1;

/// One node the kernel knows.
pub struct Node {
    pub id: u64,
    pub handle: Handle,
}

struct Slot {
    node: Arc<Node>,
    nlookup: u64,
}

pub struct NodeTable {
    shards: Box<[Mutex<HashMap<u64, Slot>>]>,
    root: Arc<Node>,
    root_dev: u64,
    root_ino: u64,
}

impl NodeTable {
    pub fn new(root: Handle) -> NodeTable {
        let st = root.stat();
        NodeTable {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            root: Arc::new(Node {
                id: ROOT_ID,
                handle: root,
            }),
            root_dev: st.dev,
            root_ino: st.ino,
        }
    }

    /// The node id of the object with (`dev`, `ino`).
    pub fn id_of(&self, dev: u64, ino: u64) -> u64 {
        if dev == self.root_dev {
            if ino == self.root_ino {
                ROOT_ID
            } else if ino == ROOT_ID {
                self.root_ino
            } else {
                ino
            }
        } else {
            (dev << 48) | (ino & ((1 << 48) - 1))
        }
    }

    /// The inode number on the served root's filesystem that node `id`
    /// stands for (the inverse of `id_of` there).
    pub fn ino_of(&self, id: u64) -> u64 {
        if id == ROOT_ID {
            self.root_ino
        } else if id == self.root_ino {
            ROOT_ID
        } else {
            id
        }
    }

    pub fn id_of_stat(&self, st: &Stat) -> u64 {
        self.id_of(st.dev, st.ino)
    }

    fn shard(&self, id: u64) -> &Mutex<HashMap<u64, Slot>> {
        let h = id ^ (id >> 7) ^ (id >> 48);
        &self.shards[(h as usize) % SHARDS]
    }

    /// The node `id`, if the kernel holds a lookup on it.
    /// True if the kernel knows node `id` (no reference taken: callable
    /// where dropping a handle is not allowed).
    pub fn knows(&self, id: u64) -> bool {
        id == ROOT_ID || self.shard(id).lock().contains_key(&id)
    }

    pub fn get(&self, id: u64) -> Option<Arc<Node>> {
        if id == ROOT_ID {
            return Some(self.root.clone());
        }
        self.shard(id).lock().get(&id).map(|s| s.node.clone())
    }

    /// Counts one kernel lookup of `entry` and returns its node id. The
    /// entry's handle becomes the node's pin, or is released if the node
    /// already has one.
    pub fn remember(&self, entry: Entry) -> u64 {
        let id = self.id_of_stat(&entry.stat);
        if id == ROOT_ID {
            return id;
        }
        let spare = {
            let mut shard = self.shard(id).lock();
            match shard.get_mut(&id) {
                Some(slot) => {
                    slot.nlookup += 1;
                    Some(entry.handle)
                }
                None => {
                    shard.insert(
                        id,
                        Slot {
                            node: Arc::new(Node {
                                id,
                                handle: entry.handle,
                            }),
                            nlookup: 1,
                        },
                    );
                    None
                }
            }
        };
        // Released outside the shard lock (a dput may free a tree).
        drop(spare);
        id
    }

    /// The node `id` if forgetting `n` lookups would remove it (the
    /// kernel drops its last reference), else None.
    pub fn last_lookups(&self, id: u64, n: u64) -> Option<Arc<Node>> {
        if id == ROOT_ID {
            return None;
        }
        let shard = self.shard(id).lock();
        let slot = shard.get(&id)?;
        (slot.nlookup <= n).then(|| slot.node.clone())
    }

    /// The kernel forgets `n` lookups of `id`.
    pub fn forget(&self, id: u64, n: u64) {
        if id == ROOT_ID {
            return;
        }
        let gone = {
            let mut shard = self.shard(id).lock();
            match shard.get_mut(&id) {
                Some(slot) if slot.nlookup > n => {
                    slot.nlookup -= n;
                    None
                }
                Some(_) => shard.remove(&id),
                None => None,
            }
        };
        drop(gone);
    }

    /// Drops every node (the session ended: the kernel forgot them all),
    /// calling `each` on each outside the table's locks.
    pub fn clear(&self, mut each: impl FnMut(&Node)) {
        for s in self.shards.iter() {
            let drained: Vec<Slot> = s.lock().drain().map(|(_, v)| v).collect();
            for slot in &drained {
                each(&slot.node);
            }
            drop(drained);
        }
    }
}
