//! Anonymous objects: pipes, sockets, eventfds, epolls and memfds — files
//! with no name in any directory (seed 000).
//!
//! Each is built so that creating and closing one writes no memory shared
//! with other threads:
//! - an `AnonInode` is one allocation holding a dentry and an inode (and the
//!   pipe or socket). The dentry is never hashed, is parented to itself and
//!   sits on no LRU; the inode is on no superblock list. Its dentry's
//!   refcount counts the open files that point at it (a pipe's two ends
//!   share one); the last file's close frees it at once: nobody can reach
//!   it lock-free (fd tables hand out references under their lock), except
//!   a `*at` call that used the fd as a directory/AT_EMPTY_PATH start under
//!   an epoch guard — that one final put goes through the epoch collector
//!   (`VfsInner::fput_in_guard`);
//! - inode numbers come from the anonymous superblock's per-thread batches
//!   (`sync::ino_batch`); dentry/inode/file statistics are per-thread
//!   sharded counters (`sync::counter`);
//! - the internal mount is never referenced by anonymous files (no
//!   `mntget`/`mntput`): the namespace keeps it until it is dropped;
//! - eventfds and epolls have no inode of their own: every eventfd or
//!   epoll file points at the namespace's one anonymous inode without a
//!   reference (Linux's anon_inode, named `anon_inode:[eventfd]` or
//!   `anon_inode:[eventpoll]` by the file's kind);
//! - a file's final put first takes it out of every epoll that watches it
//!   (`epoll::release_watched`), while its object is still whole.
//!
//! Names (`pipe:[N]`, `socket:[N]`, `anon_inode:[eventfd]`,
//! `/memfd:NAME (deleted)`) are formatted on demand from the kind and the
//! inode number; only a memfd stores its (user-given) name, in its dentry.

pub(crate) mod creds;
pub(crate) mod dgram;
pub(crate) mod epoll;
pub mod eventfd;
pub mod memfd;
pub mod pipe;
pub(crate) mod rights;
pub(crate) mod scatter;
pub mod socket;
pub(crate) mod sockopt;
pub(crate) mod splice;
pub(crate) mod wait;

use crate::abi::*;
use crate::dcache::dentry::{Dentry, DentryTail};
use crate::dcache::name::NameKey;
use crate::file::{
    FileRef, OpenFile, FMODE_ANON, FMODE_EPOLL, FMODE_EVENTFD, FMODE_INOTIFY, FMODE_MOUNT_CONFIG,
    FMODE_NEED_UNMOUNT, FMODE_PIPE, FMODE_SHARED_ANON, FMODE_SOCKET, FMODE_STREAMS,
};
use crate::fs::tmpfs::Tmpfs;
use crate::inode::{Inode, InodeBody, InodeTail};
use crate::mount::Mount;
use crate::notify::inotify::Inotify;
use crate::sync::atomic::Ordering;
use crate::vfs::VfsInner;
use epoll::Epoll;
use eventfd::EventFd;
use pipe::Pipe;
use socket::Socket;
use std::sync::Arc;
use wait::Poller;

/// The object behind a `FMODE_STREAMS` file.
pub(crate) enum Stream<'a> {
    Pipe(&'a Pipe),
    Socket(&'a Socket),
    EventFd(&'a EventFd),
    Epoll(&'a Epoll),
    Inotify(&'a Inotify),
    /// fsopen's configuration (mount/config.rs): neither read nor polled.
    MountConfig,
}

pub(crate) fn stream(file: &OpenFile) -> Option<Stream<'_>> {
    let p = file.private;
    // SAFETY (all arms): the FMODE bit says what `private` points to, and
    // the file's reference keeps it alive.
    if file.fmode & FMODE_PIPE != 0 {
        Some(Stream::Pipe(unsafe { &*(p as *const Pipe) }))
    } else if file.fmode & FMODE_SOCKET != 0 {
        Some(Stream::Socket(unsafe { &*(p as *const Socket) }))
    } else if file.fmode & FMODE_EVENTFD != 0 {
        Some(Stream::EventFd(unsafe { &*(p as *const EventFd) }))
    } else if file.fmode & FMODE_EPOLL != 0 {
        Some(Stream::Epoll(unsafe { &*(p as *const Epoll) }))
    } else if file.fmode & FMODE_INOTIFY != 0 {
        Some(Stream::Inotify(unsafe { &*(p as *const Inotify) }))
    } else if file.fmode & FMODE_MOUNT_CONFIG != 0 {
        Some(Stream::MountConfig)
    } else {
        None
    }
}

/// Whether epoll may watch the file (Linux's file_can_poll: the objects
/// with a poll operation; regular files and directories have none).
pub(crate) fn pollable(file: &OpenFile) -> bool {
    file.fmode & FMODE_STREAMS & !FMODE_MOUNT_CONFIG != 0
}

/// The epoll behind an epoll file, as a new reference.
pub(crate) fn epoll_of(file: &OpenFile) -> Option<Arc<Epoll>> {
    // SAFETY: an epoll file's private pointer is an `Epoll`'s.
    unsafe { owned_private(file, FMODE_EPOLL) }
}

/// The inotify instance behind an inotify file, as a new reference.
pub(crate) fn inotify_of(file: &OpenFile) -> Option<Arc<Inotify>> {
    // SAFETY: an inotify file's private pointer is an `Inotify`'s.
    unsafe { owned_private(file, FMODE_INOTIFY) }
}

/// A new reference on the object a file of kind `fmode` owns (its private
/// pointer is an `Arc::into_raw` reference, alive while the file is).
///
/// # Safety
/// A file with the `fmode` bit must own an `Arc<T>` through `private`.
unsafe fn owned_private<T>(file: &OpenFile, fmode: u32) -> Option<Arc<T>> {
    if file.fmode & fmode == 0 {
        return None;
    }
    let p = file.private as *const T;
    // SAFETY: per the caller, `p` is the file's `Arc<T>` reference, alive
    // while the file is; we add one of our own.
    unsafe {
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}

/// The readiness of one open file, as poll(2) reports it; registers `p`
/// with it if given.
pub(crate) fn file_poll(file: &OpenFile, p: Option<&Arc<Poller>>) -> i16 {
    match stream(file) {
        Some(Stream::Pipe(pipe)) => pipe.poll(
            file.fmode & crate::file::FMODE_READ != 0,
            file.fmode & crate::file::FMODE_WRITE != 0,
            p,
        ),
        Some(Stream::Socket(s)) => s.poll(p),
        Some(Stream::EventFd(e)) => e.poll(p),
        Some(Stream::Epoll(e)) => e.poll(p),
        Some(Stream::Inotify(i)) => i.poll(p),
        // Regular files and directories are always ready (as is a file
        // without a poll operation: select and poll report it so).
        Some(Stream::MountConfig) | None => POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM,
    }
}

/// Takes `p`'s registration off the file's object.
pub(crate) fn file_unregister(file: &OpenFile, p: &Arc<Poller>) {
    match stream(file) {
        Some(Stream::Pipe(pipe)) => pipe.unregister(p),
        Some(Stream::Socket(s)) => s.unregister(p),
        Some(Stream::EventFd(e)) => e.unregister(p),
        Some(Stream::Epoll(e)) => e.unregister(p),
        Some(Stream::Inotify(i)) => i.unregister(p),
        Some(Stream::MountConfig) | None => {}
    }
}

/// What an anonymous inode carries besides its inode body.
pub(crate) enum AnonObj {
    Pipe(Pipe),
    Socket(Socket),
    /// A memfd (data in the inode body): its seals (memfd.rs).
    Memfd(crate::sync::atomic::AtomicU32),
    /// The shared eventfd inode.
    Plain,
}

/// A dentry and an inode in one allocation (the dentry first, so a file's
/// `dentry` pointer is the node's address), each with its tail right
/// after it (`Dentry::write_at`, `Inode::write_at`): the
/// tails are dropped with their heads.
#[repr(C)]
pub(crate) struct AnonInode {
    pub(crate) dentry: Dentry,
    dentry_tail: core::mem::ManuallyDrop<DentryTail>,
    pub(crate) inode: Inode,
    inode_tail: core::mem::ManuallyDrop<InodeTail>,
    pub(crate) obj: AnonObj,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(AnonInode, dentry) == 0);
    assert!(offset_of!(AnonInode, dentry_tail) == size_of::<Dentry>());
    assert!(offset_of!(AnonInode, inode_tail) == offset_of!(AnonInode, inode) + size_of::<Inode>());
};

impl crate::mem::slab::SlabPool for AnonInode {
    const POOL: usize = crate::mem::slab::ANON_POOL;
}

/// The internal anonymous filesystem of a namespace.
pub(crate) struct AnonMount {
    pub(crate) mnt: *const Mount,
    /// The shared eventfd inode (no refcount: lives as long as this).
    pub(crate) eventfd_node: *const AnonInode,
}

// SAFETY: the pointers are owned by the namespace and only read.
unsafe impl Send for AnonMount {}
// SAFETY: as above.
unsafe impl Sync for AnonMount {}

impl VfsInner {
    /// Creates the anonymous mount. Its root and the eventfd inode are
    /// internal and not counted in `object_counts`.
    pub(crate) fn init_anon(&self) -> AnonMount {
        let sb = self.new_superblock(Box::new(Tmpfs), S_IFDIR | 0o755, (0, 0));
        let root = sb.root();
        self.dget(root);
        // A kernel-internal mount (Linux's kern_mount) has no per-mount flags:
        // statfs reports none, and a memfd's atime is strict, as Linux's.
        let mnt = self.new_mount(sb, root, 0, b"anon_inodefs");
        self.stats.mounts.dec();
        self.stats.dentries.dec();
        self.stats.inodes.dec();
        let eventfd_node = self.new_anon_node(
            mnt,
            0o600,
            InodeBody::Special(0),
            AnonObj::Plain,
            b"[eventfd]",
            1,
            0,
        );
        AnonMount { mnt, eventfd_node }
    }

    /// Releases the anonymous mount (namespace teardown, single-threaded).
    pub(crate) fn drop_anon(&self, a: &AnonMount) {
        // SAFETY: allocated by `new_anon_node`, never freed before; no
        // eventfd file is left (every process is gone).
        let node = unsafe { &*a.eventfd_node };
        self.uncharge(node.dentry.group, crate::reclaim::ObjKind::Dentry);
        self.uncharge(node.inode.group, crate::reclaim::ObjKind::Inode);
        // SAFETY: as above: ours alone, freed once.
        unsafe { crate::mem::slab::free(a.eventfd_node as *mut AnonInode) };
        self.stats.mounts.inc();
        self.stats.dentries.inc();
        self.stats.inodes.inc();
        self.mntput(a.mnt);
    }

    pub(crate) fn anon(&self) -> &AnonMount {
        self.anon
            .get()
            .expect("the anonymous mount is set up with the namespace")
    }

    /// A new anonymous node with `files` file references. `ino` 0 takes the
    /// next number from the anonymous superblock's per-thread batch.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_anon_node(
        &self,
        mnt: *const Mount,
        mode: u32,
        body: InodeBody,
        obj: AnonObj,
        name: &[u8],
        files: u32,
        uid_gid: u64,
    ) -> *const AnonInode {
        // SAFETY: the anonymous mount lives as long as the namespace.
        let sb = unsafe { &*mnt }.sb();
        let ino = sb.ino_alloc.alloc();
        let inode_group = self.charge(crate::reclaim::ObjKind::Inode);
        let dentry_group = self.charge(crate::reclaim::ObjKind::Dentry);
        // Built in place in a slab object (a node is 512 bytes: built on the
        // stack and moved into a `Box`, it cost two `memcpy`s and the
        // allocator's aligned path per pipe or socket).
        let node = crate::mem::slab::alloc_in_place::<AnonInode>();
        // SAFETY: `node` is a free object of the anonymous-node pool that
        // only we own (a previous node there was dropped when freed): each
        // field is written once, before anything reads it, and nothing is
        // shared until the caller installs the node's files.
        unsafe {
            Inode::write_at(
                core::ptr::addr_of_mut!((*node).inode),
                false,
                sb,
                ino,
                mode,
                ((uid_gid >> 32) as u32, uid_gid as u32),
                body,
                inode_group,
            );
            Dentry::write_at(
                core::ptr::addr_of_mut!((*node).dentry),
                false,
                sb,
                core::ptr::null(),
                &NameKey::new(name),
                core::ptr::null(),
                files,
                dentry_group,
            );
            core::ptr::addr_of_mut!((*node).obj).write(obj);
        }
        // SAFETY: initialised above, not shared yet.
        let n = unsafe { &*node };
        // Relaxed: not yet shared; publication to other threads goes
        // through the fd table's lock.
        n.dentry
            .parent
            .store(node as *mut Dentry, Ordering::Relaxed);
        n.dentry
            .inode
            .store(&n.inode as *const Inode as *mut Inode, Ordering::Relaxed);
        node
    }

    /// Counts a new anonymous node in the statistics (per-thread shards).
    pub(crate) fn count_anon_node(&self) {
        self.stats.dentries.inc();
        self.stats.inodes.inc();
    }

    /// Drops one file's reference on an anonymous node; the last frees it —
    /// at once, or through the epoch collector if `in_guard` (a lock-free
    /// reader may still hold its address).
    pub(crate) fn anon_put(&self, node: *const AnonInode, in_guard: bool) {
        // SAFETY: the caller's file held a reference.
        let n = unsafe { &*node };
        if !(n.dentry.refcount.put() && n.dentry.refcount.try_kill()) {
            return;
        }
        self.stats.dentries.dec();
        self.stats.inodes.dec();
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*n.inode.sb };
        let blocks = n.inode.blocks_of_dead();
        if blocks > 0 {
            let _ = sb.charge_blocks(-blocks);
            self.charge_pages(n.inode.group, -(blocks / 8));
        }
        self.uncharge(n.dentry.group, crate::reclaim::ObjKind::Dentry);
        self.uncharge(n.inode.group, crate::reclaim::ObjKind::Inode);
        if in_guard {
            // SAFETY: dead and unreachable except by guarded readers.
            unsafe { self.collector.retire_slab(node as *mut AnonInode) };
        } else {
            // SAFETY: we won the kill and nobody else can reach the node.
            unsafe { crate::mem::slab::free(node as *mut AnonInode) };
        }
    }

    /// The final put of a file with `FMODE_SPECIAL` bits (`fput`'s cold
    /// path): closes the pipe end or socket, frees the eventfd, dissolves
    /// a detached tree open_tree made (mount/anon.rs), then drops the node
    /// (anonymous) or the dentry and mount (a FIFO, a detached tree's
    /// root).
    pub(crate) fn release_special(&self, f: FileRef, in_guard: bool) {
        self.open_files.add(-1);
        self.release_special_uncounted(f, in_guard);
    }

    /// `release_special` without uncounting the file: the batched drain
    /// uncounts its files once per batch.
    pub(crate) fn release_special_uncounted(&self, f: FileRef, in_guard: bool) {
        let file = f.file();
        let fmode = file.fmode;
        // Epoll items watching the file go first, while it is whole.
        epoll::release_watched(file);
        if fmode & FMODE_EPOLL != 0 {
            // SAFETY: the file owns one reference (`Arc::into_raw`), given
            // back once, here.
            let ep = unsafe { Arc::from_raw(file.private as *const Epoll) };
            ep.release();
        }
        if fmode & FMODE_INOTIFY != 0 {
            // SAFETY: as for the epoll: the file's one reference, given
            // back once, here.
            let group = unsafe { Arc::from_raw(file.private as *const Inotify) };
            self.notify_release(&group);
        }
        if fmode & FMODE_PIPE != 0 {
            // SAFETY: a pipe file's private pointer is its pipe, kept by the
            // node or FIFO inode the file references.
            unsafe { &*(file.private as *const Pipe) }.release_end(
                fmode & crate::file::FMODE_READ != 0,
                fmode & crate::file::FMODE_WRITE != 0,
            );
        }
        if fmode & FMODE_SOCKET != 0 {
            // SAFETY: as above, for the socket.
            let sock = unsafe { &*(file.private as *const Socket) };
            let in_flight = sock.release();
            if let Some(b) = sock.binding() {
                self.unbind_socket(b);
            }
            // No socket lock is held here; the files in flight hold no
            // files themselves (anon/rights.rs), so this nests once.
            if !in_flight.is_empty() {
                self.fput_many(in_flight);
            }
        }
        if fmode & (FMODE_MOUNT_CONFIG | FMODE_NEED_UNMOUNT) != 0 {
            self.release_mount_api_file(file);
        }
        let (d, m, private) = (file.dentry, file.mnt, file.private);
        self.release_file(f.0);
        if fmode & FMODE_EVENTFD != 0 {
            // SAFETY: the file owned its eventfd (`slab::alloc`), freed once.
            unsafe { crate::mem::slab::free(private as *mut eventfd::EventFd) };
        } else if fmode & FMODE_SHARED_ANON != 0 {
            // On the shared inode, unreferenced; the epoll, inotify or
            // mount configuration went above.
        } else if fmode & FMODE_ANON != 0 {
            self.anon_put(d as *const AnonInode, in_guard);
        } else {
            self.dput(d);
            self.mntput(m);
        }
    }
}

/// Linux's name of an anonymous file, from its kind and inode.
pub(crate) fn anon_fd_path(fmode: u32, inode: &Inode, dentry: &Dentry) -> Vec<u8> {
    if fmode & FMODE_EVENTFD != 0 {
        return b"anon_inode:[eventfd]".to_vec();
    }
    if fmode & FMODE_EPOLL != 0 {
        return b"anon_inode:[eventpoll]".to_vec();
    }
    if fmode & FMODE_INOTIFY != 0 {
        return b"anon_inode:inotify".to_vec();
    }
    if fmode & FMODE_MOUNT_CONFIG != 0 {
        return b"anon_inode:[fscontext]".to_vec();
    }
    match inode.file_type() {
        S_IFIFO => format!("pipe:[{}]", inode.ino()).into_bytes(),
        S_IFSOCK => format!("socket:[{}]", inode.ino()).into_bytes(),
        _ => {
            let mut v = b"/".to_vec();
            dentry.name_into(&mut v);
            v.extend_from_slice(b" (deleted)");
            v
        }
    }
}
