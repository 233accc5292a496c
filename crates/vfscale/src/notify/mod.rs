//! inotify: events about files and directories, queued for the instances
//! that watch them (Linux's fsnotify with its inotify backend).
//!
//! A *mark* ties one inotify instance to one inode with an event mask and
//! a watch descriptor. The namespace's `Registry` maps each watched inode
//! (by address) to its marks; a watched inode holds one extra reference
//! for all of them, so it stays while watched, and its `watched` flag says
//! so to the hooks.
//!
//! The hooks (`VfsInner::notify_*`) are called where Linux calls its
//! fsnotify hooks: name changes inside the directory's exclusive lock (so
//! the events of one directory are queued in the order of its changes),
//! data and attribute changes after they are visible, opens and final
//! closes of files.
//!
//! Invariants:
//! - With no mark in the namespace a hook costs one Relaxed load of
//!   `active`; with marks elsewhere, one more of the inode's (and for a
//!   child's event its parent's) `watched` flag. Only a watched inode's
//!   event takes the registry's lock. A hook that races with a new watch
//!   may miss it: the watch was not there before the change finished.
//! - `active` and every inode's `watched` flag change only under the
//!   registry's lock, and say whether marks exist: `watched` is set while
//!   the inode has at least one mark (and holds the inode reference).
//! - Lock order: directory locks → the registry → its held dentries'
//!   map, or an instance's queue (`Inotify`'s mutex). Inode and dentry
//!   references are dropped after the registry is unlocked (a final put
//!   may free them).
//! - A watched directory of a backend-served instance also holds the
//!   dentry its first watch came through, until its last mark goes, so
//!   reclaim keeps its name and the lookups that follow find the watched
//!   inode (`held_dentries`).
//! - An instance's watch descriptors and its marks change together under
//!   the registry lock; a mark's removal queues the instance's IN_IGNORED.

pub(crate) mod inotify;

use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use crate::vfs::VfsInner;
use inotify::Inotify;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Events a directory's watch also receives for its children, with the
/// child's name (fsnotify's FS_EVENTS_POSS_ON_CHILD).
const EVENTS_ON_CHILD: u32 =
    IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_OPEN;

/// The bits of a mark's mask that select events.
const WATCH_EVENTS: u32 = IN_ALL_EVENTS;

/// The mask flags a mark keeps besides its events.
const MARK_FLAGS: u32 = IN_ONESHOT | IN_EXCL_UNLINK;

struct Mark {
    group: Arc<Inotify>,
    wd: i32,
    mask: u32,
}

/// The namespace's marks (see the module comment).
#[derive(Default)]
pub(crate) struct Registry {
    /// Some inode has a mark.
    active: AtomicBool,
    marks: Mutex<HashMap<usize, Vec<Mark>>>,
    /// Watched directories of backend-served instances, by inode address:
    /// the dentry their first watch was added through, held so that
    /// reclaim cannot forget it (a later lookup of the name would make a
    /// second inode, which the marks would not hear: backends find files
    /// again by identity, directories by their cached entry only). Changed
    /// inside the `marks` lock.
    held_dentries: Mutex<HashMap<usize, usize>>,
    cookies: AtomicU32,
}

/// What a change of the registry let go, to put once it is unlocked:
/// inodes whose last mark went, and the dentries held for them.
#[derive(Default)]
struct Unpinned {
    inodes: Vec<*const Inode>,
    dentries: Vec<*const Dentry>,
}

/// One delivery: the inode whose marks hear the event, the name it
/// carries for them (the child's, when they watch the subject's
/// directory: `on_child`).
struct Target<'a> {
    inode: usize,
    name: &'a [u8],
    on_child: bool,
}

impl Registry {
    /// Queues `mask` for the marks of each target in turn (one
    /// instance's events in the targets' order); a one-shot mark goes
    /// after its first event. `unlinked`: the event comes through a file
    /// whose name was removed (IN_EXCL_UNLINK marks skip it).
    fn deliver(
        &self,
        marks: &mut HashMap<usize, Vec<Mark>>,
        targets: &[Target<'_>],
        mask: u32,
        cookie: u32,
        unlinked: bool,
        unpinned: &mut Unpinned,
    ) {
        let events = mask & WATCH_EVENTS;
        for t in targets {
            let Some(list) = marks.get_mut(&t.inode) else {
                continue;
            };
            let mut i = 0;
            while i < list.len() {
                let m = &list[i];
                let wanted = m.mask & events != 0
                    && (!t.on_child || events & EVENTS_ON_CHILD != 0)
                    && !(unlinked && m.mask & IN_EXCL_UNLINK != 0);
                if !wanted {
                    i += 1;
                    continue;
                }
                m.group.queue(m.wd, mask, cookie, t.name);
                if m.mask & IN_ONESHOT != 0 {
                    let m = list.remove(i);
                    m.group.drop_wd(m.wd);
                } else {
                    i += 1;
                }
            }
            if list.is_empty() {
                self.forget_inode(marks, t.inode, unpinned);
            }
        }
    }

    /// The inode at `addr` has no mark left: its entry, flag and pin go.
    fn forget_inode(
        &self,
        marks: &mut HashMap<usize, Vec<Mark>>,
        addr: usize,
        unpinned: &mut Unpinned,
    ) {
        marks.remove(&addr);
        let inode = addr as *const Inode;
        // SAFETY: the registry's pin kept the inode alive until now.
        unsafe { &*inode }.watched.store(false, Ordering::Relaxed);
        unpinned.inodes.push(inode);
        if let Some(d) = self.held_dentries.lock().remove(&addr) {
            unpinned.dentries.push(d as *const Dentry);
        }
        // Relaxed: see the module comment (a hint, exact under the lock).
        self.active.store(!marks.is_empty(), Ordering::Relaxed);
    }
}

/// An inode's `watched` hint (Relaxed: a hint, see the module comment).
#[inline]
fn watched(inode: &Inode) -> bool {
    inode.watched.load(Ordering::Relaxed)
}

impl VfsInner {
    /// Whether any inode of this namespace is watched (Relaxed: a hint).
    #[inline]
    pub(crate) fn notify_active(&self) -> bool {
        self.notify.active.load(Ordering::Relaxed)
    }

    /// An event on an object reached through the name `d` (open, close,
    /// read, write, attribute changes): for the watches of `d`'s
    /// directory, with the name (fsnotify_parent), then for the object's
    /// own. `via_file`: it came through an open file (IN_EXCL_UNLINK
    /// applies once the name is removed).
    #[inline]
    pub(crate) fn notify_object(&self, d: *const Dentry, inode: &Inode, mask: u32, via_file: bool) {
        if self.notify_active() {
            self.notify_object_slow(d, inode, mask, via_file);
        }
    }

    #[cold]
    fn notify_object_slow(&self, d: *const Dentry, inode: &Inode, mask: u32, via_file: bool) {
        let mask = mask | if inode.is_dir() { IN_ISDIR } else { 0 };
        let _guard = self.collector.enter();
        // SAFETY: the caller holds a reference on `d` (or, for a null one,
        // there is no name); its parent and name are read under the guard.
        let dentry = unsafe { d.as_ref() };
        let parent = dentry
            .map(|d| d.parent_ptr())
            .filter(|p| !p.is_null() && *p != d);
        // SAFETY: a dentry's parent is live while the guard is held.
        let parent_inode = parent.and_then(|p| unsafe { (*p).inode_ptr().as_ref() });
        let parent_watched = parent_inode.is_some_and(watched);
        if !parent_watched && !watched(inode) {
            return;
        }
        let name = if parent_watched {
            dentry.map(|d| d.name()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let unlinked = via_file && dentry.is_some_and(|d| !d.is_hashed());
        let mut targets = Vec::with_capacity(2);
        if let Some(p) = parent_inode.filter(|_| parent_watched) {
            targets.push(Target {
                inode: p as *const Inode as usize,
                name: &name,
                on_child: true,
            });
        }
        targets.push(Target {
            inode: inode as *const Inode as usize,
            name: b"",
            on_child: false,
        });
        self.notify_deliver(&targets, mask, 0, unlinked);
    }

    /// An event on an open file (read, write, open, close): as
    /// `notify_object` through the file's name.
    #[inline]
    pub(crate) fn notify_file(&self, file: &crate::file::OpenFile, mask: u32) {
        if self.notify_active() {
            self.notify_object_slow(file.dentry, file.inode(), mask, true);
        }
    }

    /// A change of the name `name` in directory `dir` (IN_CREATE,
    /// IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO, with IN_ISDIR for a
    /// directory child), for `dir`'s watches. Caller holds `dir`'s lock.
    #[inline]
    pub(crate) fn notify_name(&self, dir: &Inode, name: &[u8], mask: u32, cookie: u32) {
        if self.notify_active() && watched(dir) {
            let targets = [Target {
                inode: dir as *const Inode as usize,
                name,
                on_child: false,
            }];
            self.notify_deliver(&targets, mask, cookie, false);
        }
    }

    /// An event about the inode alone, for its own watches (the link
    /// count's IN_ATTRIB, IN_MOVE_SELF).
    #[inline]
    pub(crate) fn notify_inode(&self, inode: &Inode, mask: u32) {
        if self.notify_active() && watched(inode) {
            let mask = mask | if inode.is_dir() { IN_ISDIR } else { 0 };
            let targets = [Target {
                inode: inode as *const Inode as usize,
                name: b"",
                on_child: false,
            }];
            self.notify_deliver(&targets, mask, 0, false);
        }
    }

    /// A fresh cookie tying an IN_MOVED_FROM to its IN_MOVED_TO.
    pub(crate) fn notify_cookie(&self) -> u32 {
        // Relaxed: only distinctness matters, which the RMW gives.
        let c = self.notify.cookies.fetch_add(1, Ordering::Relaxed);
        c.wrapping_add(1).max(1)
    }

    /// The inode lost its last name and the last dentry that named it
    /// (Linux's fsnotify_inoderemove): IN_DELETE_SELF, then every mark
    /// goes with its IN_IGNORED.
    #[inline]
    pub(crate) fn notify_removed(&self, inode: *const Inode) {
        // SAFETY: the caller holds a reference on the inode.
        if self.notify_active() && watched(unsafe { &*inode }) {
            self.notify_removed_slow(inode, IN_DELETE_SELF);
        }
    }

    #[cold]
    fn notify_removed_slow(&self, inode: *const Inode, event: u32) {
        // SAFETY: as in `notify_removed`.
        let i = unsafe { &*inode };
        let mask = event | if i.is_dir() { IN_ISDIR } else { 0 };
        let mut unpinned = Unpinned::default();
        {
            let mut marks = self.notify.marks.lock();
            let Some(list) = marks.get_mut(&(inode as usize)) else {
                return;
            };
            for m in list.drain(..) {
                if m.mask & WATCH_EVENTS & event != 0 || event == IN_UNMOUNT {
                    m.group.queue(m.wd, mask, 0, b"");
                }
                m.group.drop_wd(m.wd);
            }
            self.notify
                .forget_inode(&mut marks, inode as usize, &mut unpinned);
        }
        self.notify_unpin(unpinned);
    }

    /// The superblock `sb` is being torn down: each of its watched inodes
    /// gets IN_UNMOUNT and loses its marks (IN_IGNORED), unpinned before
    /// the teardown frees the tree.
    pub(crate) fn notify_unmount(&self, sb: &crate::fs::SuperBlock) {
        if !self.notify_active() {
            return;
        }
        // SAFETY (both): a key is a pinned (so live) inode.
        let inode = |a: usize| unsafe { &*(a as *const Inode) };
        let mut doomed: Vec<usize> = self
            .notify
            .marks
            .lock()
            .keys()
            .copied()
            .filter(|&a| core::ptr::eq(inode(a).sb, sb))
            .collect();
        // Linux walks the superblock's inode list, newest first.
        doomed.sort_by_key(|&a| core::cmp::Reverse(inode(a).ino()));
        for a in doomed {
            self.notify_removed_slow(a as *const Inode, IN_UNMOUNT);
        }
    }

    fn notify_deliver(&self, targets: &[Target<'_>], mask: u32, cookie: u32, unlinked: bool) {
        let mut unpinned = Unpinned::default();
        {
            let mut marks = self.notify.marks.lock();
            self.notify
                .deliver(&mut marks, targets, mask, cookie, unlinked, &mut unpinned);
        }
        self.notify_unpin(unpinned);
    }

    fn notify_unpin(&self, unpinned: Unpinned) {
        for d in unpinned.dentries {
            self.dput(d);
        }
        for inode in unpinned.inodes {
            self.iput(inode);
        }
    }

    /// inotify_add_watch's update (inotify_update_watch): the instance's
    /// mark on `inode` gets `mask` (or it ORed in, IN_MASK_ADD), or a new
    /// mark is made; EEXIST for IN_MASK_CREATE on a watched inode.
    pub(crate) fn notify_add_watch(
        &self,
        group: &Arc<Inotify>,
        found: &crate::dcache::walk::Found,
        mask: u32,
    ) -> SysResult<i32> {
        let inode = found.inode();
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*inode.sb };
        // A backend's directory: its dentry, for the registry to hold if
        // this is its first mark. Taken before the registry's lock, as a
        // failed validation puts it again (a directory whose name changed
        // since the walk is watched unheld, as before).
        let mut hold = (sb.backend_served
            && inode.is_dir()
            && self.dget_validated(found.path.dentry, found.seq))
        .then_some(found.path.dentry);
        let r = self.add_watch(group, inode, mask, &mut hold);
        if let Some(d) = hold {
            self.dput(d);
        }
        r
    }

    /// `notify_add_watch` of `inode`; a first mark takes `hold`.
    fn add_watch(
        &self,
        group: &Arc<Inotify>,
        inode: &Inode,
        mask: u32,
        hold: &mut Option<*const Dentry>,
    ) -> SysResult<i32> {
        let addr = inode as *const Inode as usize;
        let keep = mask & (WATCH_EVENTS | MARK_FLAGS);
        let mut marks = self.notify.marks.lock();
        if let Some(m) = marks
            .get_mut(&addr)
            .and_then(|l| l.iter_mut().find(|m| Arc::ptr_eq(&m.group, group)))
        {
            if mask & IN_MASK_CREATE != 0 {
                return Err(Errno::EEXIST);
            }
            m.mask = if mask & IN_MASK_ADD != 0 {
                m.mask | keep
            } else {
                keep
            };
            return Ok(m.wd);
        }
        let first = !marks.contains_key(&addr);
        // The registry's pin. The caller's guard keeps the inode allocated,
        // not alive: one being freed is answered as a name already gone.
        if first && !inode.refcount.get() {
            return Err(Errno::ENOENT);
        }
        let wd = match group.new_wd(addr) {
            Ok(wd) => wd,
            Err(e) => {
                drop(marks);
                if first {
                    self.iput(inode);
                }
                return Err(e);
            }
        };
        if first {
            // Relaxed: see the module comment.
            inode.watched.store(true, Ordering::Relaxed);
            self.notify.active.store(true, Ordering::Relaxed);
            // SAFETY: an inode's superblock outlives it.
            let sb = unsafe { &*inode.sb };
            if sb.backend_served {
                sb.fs.keep_identity(inode);
            }
            if let Some(d) = hold.take() {
                self.notify.held_dentries.lock().insert(addr, d as usize);
            }
        }
        marks.entry(addr).or_default().push(Mark {
            group: group.clone(),
            wd,
            mask: keep,
        });
        Ok(wd)
    }

    /// inotify_rm_watch: EINVAL for a descriptor the instance does not
    /// have; the mark goes with its IN_IGNORED.
    pub(crate) fn notify_rm_watch(&self, group: &Arc<Inotify>, wd: i32) -> SysResult<()> {
        let mut unpinned = Unpinned::default();
        {
            let mut marks = self.notify.marks.lock();
            let addr = group.inode_of(wd).ok_or(Errno::EINVAL)?;
            let list = marks.get_mut(&addr).ok_or(Errno::EINVAL)?;
            let i = list
                .iter()
                .position(|m| Arc::ptr_eq(&m.group, group) && m.wd == wd)
                .ok_or(Errno::EINVAL)?;
            let m = list.remove(i);
            m.group.drop_wd(m.wd);
            if list.is_empty() {
                self.notify.forget_inode(&mut marks, addr, &mut unpinned);
            }
        }
        self.notify_unpin(unpinned);
        Ok(())
    }

    /// The instance's file had its final put: its marks go (nobody can
    /// read their IN_IGNORED).
    pub(crate) fn notify_release(&self, group: &Arc<Inotify>) {
        let mut unpinned = Unpinned::default();
        {
            let mut marks = self.notify.marks.lock();
            for (_, addr) in group.release() {
                let Some(list) = marks.get_mut(&addr) else {
                    continue;
                };
                list.retain(|m| !Arc::ptr_eq(&m.group, group));
                if list.is_empty() {
                    self.notify.forget_inode(&mut marks, addr, &mut unpinned);
                }
            }
        }
        self.notify_unpin(unpinned);
    }
}
