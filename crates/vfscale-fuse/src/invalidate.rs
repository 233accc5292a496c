//! Kernel cache invalidation: when a name changes through another path
//! (the core API, another mount of the same namespace), the kernel's cached
//! entry for it — positive or negative — is dropped with
//! FUSE_NOTIFY_INVAL_ENTRY, so the mount sees the change at once instead of
//! after the entry TTL.
//!
//! Invariants:
//! - The core calls `Invalidator::name_changed` inside a directory's lock
//!   (vfscale/src/watch.rs): it only maps the directory to a node id and
//!   queues; a separate notifier thread writes to /dev/fuse. Writing from
//!   the core's thread could deadlock: the kernel takes the directory's
//!   inode lock to invalidate, which a request waiting on our directory
//!   lock may hold.
//! - Changes made by this mount's own workers are not reported (the kernel
//!   already knows; invalidating would cost it a LOOKUP on the next access):
//!   workers mark themselves for the duration of a changing request
//!   (`OwnChange`), per mount, so another mount's workers still notify.
//! - Only directories the kernel knows (nodes in the table) are reported:
//!   for any other the kernel has nothing cached.
//! - The notifier thread ends when the invalidator is dropped (the core
//!   registration is removed at unmount), as the channel then closes.

use crate::nodes::NodeTable;
use std::cell::Cell;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use vfscale::{NameChange, NameObserver};

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

/// The core-side observer of one mount.
pub struct Invalidator {
    nodes: Arc<NodeTable>,
    queue: Mutex<Sender<(u64, Vec<u8>)>>,
}

impl Invalidator {
    /// Starts the notifier thread writing through `notifier`.
    pub fn start(nodes: Arc<NodeTable>, notifier: fuser::Notifier) -> Arc<Invalidator> {
        let (tx, rx) = channel::<(u64, Vec<u8>)>();
        std::thread::Builder::new()
            .name("vfscale-fuse-inval".into())
            .spawn(move || {
                for (parent, name) in rx {
                    // ENOENT: the kernel no longer has the directory or
                    // the entry; after unmount the device is gone. Either
                    // way there is nothing left to invalidate.
                    let _ = notifier.inval_entry(fuser::INodeNo(parent), OsStr::from_bytes(&name));
                }
            })
            .expect("spawn the FUSE invalidation thread");
        Arc::new(Invalidator {
            nodes,
            queue: Mutex::new(tx),
        })
    }
}

impl NameObserver for Invalidator {
    fn name_changed(&self, change: &NameChange<'_>) {
        let own = Arc::as_ptr(&self.nodes) as usize;
        if SERVING.with(|s| s.get()) == own {
            return;
        }
        let id = self.nodes.id_of(change.dir_dev, change.dir_ino);
        if !self.nodes.knows(id) {
            return;
        }
        let _ = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send((id, change.name.to_vec()));
    }
}
