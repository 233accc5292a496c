//! Kernel cache invalidation for changes made beside the mount (the core
//! API, another mount of the same namespace):
//! - a name changed: the kernel's cached entry for it — positive or
//!   negative — is dropped with FUSE_NOTIFY_INVAL_ENTRY, and the directory's
//!   attributes and cached listing (FOPEN_CACHE_DIR keeps it in the
//!   directory's page cache) with FUSE_NOTIFY_INVAL_INODE;
//! - an inode's attributes changed (chmod, chown, utimes): INVAL_INODE with
//!   offset -1 (attributes only, cached pages kept);
//! - its contents changed (write, truncate, fallocate): INVAL_INODE over the
//!   whole file (attributes and every cached page).
//!
//! So the mount sees the change at once instead of after the TTLs.
//!
//! Invariants:
//! - The core calls `Invalidator::name_changed` inside a directory's lock
//!   (vfscale/src/watch.rs): it only maps the directory to a node id and
//!   queues; a separate notifier thread writes to /dev/fuse. Writing from
//!   the core's thread could deadlock: the kernel takes the directory's
//!   inode lock to invalidate, which a request waiting on our directory
//!   lock may hold. `inode_changed` queues likewise (the kernel takes the
//!   file's locks to drop its pages, which a WRITE we serve may hold).
//! - Changes made by this mount's own workers are not reported (the kernel
//!   already knows; invalidating would cost it a LOOKUP or GETATTR on the
//!   next access): workers mark themselves for the duration of a changing
//!   request (`OwnChange`), per mount, so another mount's workers still
//!   notify.
//! - Only nodes the kernel knows (in the table) are reported: for any other
//!   the kernel has nothing cached.
//! - The notifier sends each batch of queued notices in order, an inode's
//!   INVAL_INODE once per batch (a burst of changes in one directory costs
//!   one listing invalidation, not one per name).
//! - The notifier thread ends when the invalidator is dropped (the core
//!   registration is removed at unmount), as the channel then closes.

use crate::nodes::NodeTable;
use std::cell::Cell;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use vfscale::{InodeChange, NameChange, NameObserver};

thread_local! {
    /// The node table of the mount whose changing request this thread is
    /// serving, as an address (0: none).
    static SERVING: Cell<usize> = const { Cell::new(0) };
}

/// Marks the current thread as making a change for the mount owning
/// `nodes` until dropped.
pub struct OwnChange(usize);

impl OwnChange {
    pub fn begin(nodes: &NodeTable) -> OwnChange {
        let prev = SERVING.with(|s| s.replace(nodes as *const NodeTable as usize));
        OwnChange(prev)
    }
}

impl Drop for OwnChange {
    fn drop(&mut self) {
        SERVING.with(|s| s.set(self.0));
    }
}

/// One queued notice for the kernel.
enum Notice {
    /// Drop the entry `name` in directory `parent`.
    Entry(u64, Vec<u8>),
    /// Drop node `id`'s attributes, and its cached pages if `data`.
    Inode(u64, bool),
}

/// The core-side observer of one mount.
pub struct Invalidator {
    nodes: Arc<NodeTable>,
    queue: Mutex<Sender<Notice>>,
}

/// Sends one batch: entries in order, then each inode once.
fn send_batch(notifier: &fuser::Notifier, batch: Vec<Notice>) {
    let mut inodes: Vec<(u64, bool)> = Vec::new();
    for n in batch {
        match n {
            // ENOENT: the kernel no longer has the directory or the
            // entry; after unmount the device is gone. Either way there
            // is nothing left to invalidate.
            Notice::Entry(parent, name) => {
                let _ = notifier.inval_entry(fuser::INodeNo(parent), OsStr::from_bytes(&name));
            }
            Notice::Inode(id, data) => match inodes.iter_mut().find(|(i, _)| *i == id) {
                Some((_, d)) => *d |= data,
                None => inodes.push((id, data)),
            },
        }
    }
    for (id, data) in inodes {
        // Offset 0, length 0: attributes and every page (a directory's
        // pages are its cached listing); offset -1: attributes only.
        let offset = if data { 0 } else { -1 };
        let _ = notifier.inval_inode(fuser::INodeNo(id), offset, 0);
    }
}

impl Invalidator {
    /// Starts the notifier thread writing through `notifier`.
    pub fn start(nodes: Arc<NodeTable>, notifier: fuser::Notifier) -> Arc<Invalidator> {
        let (tx, rx) = channel::<Notice>();
        std::thread::Builder::new()
            .name("vfscale-fuse-inval".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    batch.extend(rx.try_iter().take(4096));
                    send_batch(&notifier, batch);
                }
            })
            .expect("spawn the FUSE invalidation thread");
        Arc::new(Invalidator {
            nodes,
            queue: Mutex::new(tx),
        })
    }

    /// The node id of (`dev`, `ino`) if the kernel may cache something for
    /// it and the change is not this mount's own.
    fn known(&self, dev: u64, ino: u64) -> Option<u64> {
        let own = Arc::as_ptr(&self.nodes) as usize;
        if SERVING.with(|s| s.get()) == own {
            return None;
        }
        let id = self.nodes.id_of(dev, ino);
        self.nodes.knows(id).then_some(id)
    }

    fn queue(&self, notices: impl IntoIterator<Item = Notice>) {
        let q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        for n in notices {
            let _ = q.send(n);
        }
    }
}

impl NameObserver for Invalidator {
    fn name_changed(&self, change: &NameChange<'_>) {
        if let Some(id) = self.known(change.dir_dev, change.dir_ino) {
            self.queue([
                Notice::Entry(id, change.name.to_vec()),
                Notice::Inode(id, true),
            ]);
        }
    }

    fn inode_changed(&self, change: &InodeChange) {
        if let Some(id) = self.known(change.dev, change.ino) {
            self.queue([Notice::Inode(id, change.data)]);
        }
    }
}
