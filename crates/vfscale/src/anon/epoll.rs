//! epoll: an interest list of (file, descriptor) items and a ready list,
//! with Linux's rules (fs/eventpoll.c): level- and edge-triggered items,
//! one-shot items, nested epolls with the loop and path checks, and items
//! that go away with the last close of the file they watch.
//!
//! Locks, outermost first (ARCHITECTURE.md's lock order):
//! - `Epoll::items` (Linux's ep->mtx): the interest list. Held by
//!   epoll_ctl and through every scan of the ready list, so each file
//!   polled under it is alive: a watched file's final put removes its
//!   items under this lock before the file goes (`release_watched`).
//!   Epolls nest downwards: a scan polls a watched epoll, taking that
//!   one's `items` inside its own; the loop check keeps the graph acyclic
//!   and shallow, so this is a partial order.
//! - a watched object's own lock (its `WaitCell`), taken by polls under
//!   `items`;
//! - `Epoll::ready` (Linux's ep->lock): the ready list, the sleepers of
//!   epoll_wait, the pollers of the epoll file itself. Taken by wakes
//!   inside a watched object's lock (`Item::callback`), upwards from an
//!   epoll to the epolls that watch it; never held while taking `items`
//!   or an object's lock.
//! - `Watchers` (a file's list of the items that watch it): a leaf.
//!
//! Before all of them, `GRAPH` (Linux's epnested_mutex and RCU): the
//! walks of the graph of epolls that a nested insert makes (the loop and
//! path checks) hold it for writing, and the releases that make a file
//! unreachable from the graph hold it for reading, so a walk never
//! reaches a freed file.
//!
//! Invariants:
//! - An item is in its epoll's `items` from EPOLL_CTL_ADD until DEL, the
//!   watched file's final put, or the epoll's own release, whichever
//!   comes first; then `removed` is set and its registration is taken
//!   off the watched object, so later wakes of it do nothing.
//! - `Item::linked` (on the ready list, or taken by a running scan) and
//!   `Item::overflowed` are read and written under `ready`.
//! - While a scan runs (`Ready::scanning`), wakes put items on
//!   `overflow`, not on the list; the scan's end puts them back where
//!   Linux's ep_done_scan does, so the order of reports is Linux's.
//! - Nothing here is lock-free (every atomic is written under one of the
//!   locks above or is a one-way flag), so no loom model is needed
//!   (docs/TESTING.md); `tests/api_epoll.rs` stresses it.

use super::wait::{Patience, Poller, WaitCell};
use crate::abi::*;
use crate::file::OpenFile;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Weak};

/// The bits of an item's events that are modes, not events (Linux's
/// EP_PRIVATE_BITS): an item with none but these is disabled.
const EP_PRIVATE_BITS: u32 = EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE;
/// What EPOLLEXCLUSIVE may come with (EPOLLEXCLUSIVE_OK_BITS).
const EXCLUSIVE_OK_BITS: u32 =
    EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;
/// Longest chain of epolls watching epolls, in links (EP_MAX_NESTS).
const EP_MAX_NESTS: usize = 4;
/// How many wake-up paths of each length may reach one file (the first
/// is not counted: path_limits).
const PATH_LIMITS: [usize; EP_MAX_NESTS + 1] = [1000, 500, 100, 50, 10];

type Key = (usize, Fd);

/// See the module comment. One for the whole process: items never cross
/// namespaces, and only nested inserts and the releases of watched files
/// take it.
static GRAPH: RwLock<()> = RwLock::new(());

/// One watched (file, descriptor) pair.
pub(crate) struct Item {
    file: *const OpenFile,
    fd: Fd,
    ep: Weak<Epoll>,
    /// Its registration with the watched object.
    poller: Arc<Poller>,
    /// The events asked for, with EPOLLERR | EPOLLHUP and the mode bits.
    events: AtomicU32,
    data: AtomicU64,
    removed: AtomicBool,
    linked: AtomicBool,
    overflowed: AtomicBool,
}

// SAFETY: `file` is only dereferenced while the item is in its epoll's
// `items` and that lock is held (see the module's invariants), when the
// file is alive; the rest is atomic or immutable.
unsafe impl Send for Item {}
// SAFETY: as above.
unsafe impl Sync for Item {}

impl Item {
    fn key(&self) -> Key {
        (self.file as usize, self.fd)
    }

    /// The watched file. Call only under the epoll's `items` lock with
    /// the item in it.
    fn file(&self) -> &OpenFile {
        // SAFETY: see `unsafe impl Send`.
        unsafe { &*self.file }
    }

    /// ep_item_poll: the file's events that the item asks for, its
    /// registration renewed (a socket's may move to a new queue).
    fn poll_now(&self) -> u32 {
        let m = super::file_poll(self.file(), Some(&self.poller));
        u32::from(m as u16) & self.events.load(SeqCst)
    }

    pub(crate) fn is_exclusive(&self) -> bool {
        self.events.load(SeqCst) & EPOLLEXCLUSIVE != 0
    }

    /// ep_poll_callback: a watched object changed (`key`: what may have
    /// become ready, 0 for anything).
    pub(crate) fn callback(self: &Arc<Self>, key: u32) {
        if self.removed.load(SeqCst) {
            return;
        }
        let ev = self.events.load(SeqCst);
        // Disabled (a reported one-shot item), or not the events asked for.
        if ev & !EP_PRIVATE_BITS == 0 || (key != 0 && key & ev == 0) {
            return;
        }
        let Some(ep) = self.ep.upgrade() else {
            return;
        };
        let mut g = ep.ready.lock();
        if g.scanning {
            if !self.overflowed.swap(true, SeqCst) {
                g.overflow.push(self.clone());
            }
        } else if !self.linked.swap(true, SeqCst) {
            g.list.push_back(self.clone());
        }
        // The epoll's sleepers, and the epolls and polls watching it.
        ep.ready.wake_keyed(&mut g, EPOLLIN | EPOLLRDNORM, None);
    }
}

#[derive(Default)]
struct Ready {
    list: VecDeque<Arc<Item>>,
    scanning: bool,
    overflow: Vec<Arc<Item>>,
}

/// An epoll instance (its file owns one reference).
pub struct Epoll {
    items: Mutex<BTreeMap<Key, Arc<Item>>>,
    ready: WaitCell<Ready>,
    /// The epoll's own file, for the walks upwards through the epolls
    /// that watch it (set once, before the file is installed).
    file: AtomicPtr<OpenFile>,
}

/// The items that watch one file (`OpenFile::watchers`).
#[derive(Default)]
pub(crate) struct Watchers {
    items: Mutex<Vec<Arc<Item>>>,
}

fn watchers_of(file: &OpenFile) -> Option<&Watchers> {
    let p = file.watchers.load(SeqCst);
    // SAFETY: once set, the list lives until the file's final put, and
    // the caller holds the file (a reference, or `items` with one of the
    // file's items in it).
    (!p.is_null()).then(|| unsafe { &*p })
}

fn watchers_or_new(file: &OpenFile) -> &Watchers {
    if let Some(w) = watchers_of(file) {
        return w;
    }
    let new = Box::into_raw(Box::default());
    match file
        .watchers
        .compare_exchange(std::ptr::null_mut(), new, SeqCst, SeqCst)
    {
        // SAFETY: just published; freed only by the file's final put.
        Ok(_) => unsafe { &*new },
        Err(won) => {
            // SAFETY: ours was never published.
            drop(unsafe { Box::from_raw(new) });
            // SAFETY: as in `watchers_of`.
            unsafe { &*won }
        }
    }
}

/// The epolls watching `file` (through its watchers' items).
fn watching_epolls(file: &OpenFile) -> Vec<Arc<Epoll>> {
    watchers_of(file).map_or_else(Vec::new, |w| {
        w.items
            .lock()
            .iter()
            .filter_map(|i| i.ep.upgrade())
            .collect()
    })
}

/// A file's final put (eventpoll_release_file): every item that watches
/// it leaves its epoll, then the list is freed. The file must still be
/// whole (its object not yet released).
pub(crate) fn release_watched(file: &OpenFile) {
    if file.watchers.load(SeqCst).is_null() {
        return;
    }
    let _graph = GRAPH.read();
    let p = file.watchers.swap(std::ptr::null_mut(), SeqCst);
    // SAFETY: published by `watchers_or_new`; nobody can add to it now
    // (adding needs a reference to the file).
    let w = unsafe { Box::from_raw(p) };
    let items = std::mem::take(&mut *w.items.lock());
    for item in items {
        if let Some(ep) = item.ep.upgrade() {
            let mut map = ep.items.lock();
            if map.get(&item.key()).is_some_and(|i| Arc::ptr_eq(i, &item)) {
                map.remove(&item.key());
                ep.detach(&item, false);
            }
        }
    }
    // An epoll's release that found one of these items still listed
    // touched `w` under that epoll's lock, which we took after it.
    drop(w);
}

impl Epoll {
    pub(crate) fn new() -> Arc<Epoll> {
        Arc::new(Epoll {
            items: Mutex::new(BTreeMap::new()),
            ready: WaitCell::new(Ready::default()),
            file: AtomicPtr::new(std::ptr::null_mut()),
        })
    }

    pub(crate) fn set_file(&self, file: *const OpenFile) {
        self.file.store(file as *mut OpenFile, SeqCst);
    }

    fn own_file(&self) -> Option<&OpenFile> {
        let p = self.file.load(SeqCst);
        // SAFETY: the file's release clears the pointer under `GRAPH`
        // before the file goes, and the walks that call this hold it.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Takes `item` off its watched object and the ready list (its
    /// entry in `items` is gone already; that lock is held). `unlist`:
    /// also take it off the file's watchers (EPOLL_CTL_DEL and the
    /// epoll's release; a file's final put frees the whole list).
    fn detach(&self, item: &Arc<Item>, unlist: bool) {
        item.removed.store(true, SeqCst);
        let file = item.file();
        super::file_unregister(file, &item.poller);
        if unlist {
            if let Some(w) = watchers_of(file) {
                w.items.lock().retain(|i| !Arc::ptr_eq(i, item));
            }
        }
        let mut g = self.ready.lock();
        if item.linked.swap(false, SeqCst) {
            g.list.retain(|i| !Arc::ptr_eq(i, item));
        }
        if item.overflowed.swap(false, SeqCst) {
            g.overflow.retain(|i| !Arc::ptr_eq(i, item));
        }
    }

    /// The epoll file's final put (ep_free): every item leaves.
    pub(crate) fn release(&self) {
        let _graph = GRAPH.read();
        self.file.store(std::ptr::null_mut(), SeqCst);
        let mut map = self.items.lock();
        for (_, item) in std::mem::take(&mut *map) {
            self.detach(&item, true);
        }
        drop(map);
        let mut g = self.ready.lock();
        g.list.clear();
        g.overflow.clear();
    }

    /// One pass over the ready list under `items` (ep_send_events, or
    /// with `out` None the readiness test of __ep_eventpoll_poll, which
    /// stops at the first ready item). Items with nothing to report
    /// leave the list; a level-triggered item reported goes back to its
    /// end; a one-shot item reported is disabled. True if any item was
    /// ready.
    fn scan(&self, mut out: Option<(&mut [EpollEvent], &mut usize)>) -> bool {
        let mut tx = {
            let mut g = self.ready.lock();
            g.scanning = true;
            std::mem::take(&mut g.list)
        };
        let mut found = false;
        let mut gone = Vec::new();
        while let Some(item) = tx.front() {
            if let Some((events, n)) = &out {
                if **n >= events.len() {
                    break;
                }
            }
            let revents = item.poll_now();
            if revents == 0 {
                gone.extend(tx.pop_front());
                continue;
            }
            found = true;
            let Some((events, n)) = &mut out else {
                break;
            };
            let item = tx.pop_front().expect("the front item");
            events[**n] = EpollEvent {
                events: revents,
                data: item.data.load(SeqCst),
            };
            **n += 1;
            let ev = item.events.load(SeqCst);
            if ev & EPOLLONESHOT != 0 {
                item.events.store(ev & EP_PRIVATE_BITS, SeqCst);
                gone.push(item);
            } else if ev & EPOLLET == 0 {
                // Level-triggered: looked at again by the next wait.
                self.ready.lock().list.push_back(item);
            } else {
                gone.push(item);
            }
        }
        // ep_done_scan: what came in meanwhile goes first (oldest
        // first), after what this scan did not reach; the level-triggered
        // items put back come last.
        let mut g = self.ready.lock();
        g.scanning = false;
        for item in &gone {
            item.linked.store(false, SeqCst);
        }
        let mut front = tx;
        for item in std::mem::take(&mut g.overflow) {
            item.overflowed.store(false, SeqCst);
            if !item.removed.load(SeqCst) && !item.linked.swap(true, SeqCst) {
                front.push_back(item);
            }
        }
        front.append(&mut g.list);
        g.list = front;
        if !g.list.is_empty() {
            self.ready.notify_blocked(&mut g);
        }
        found
    }

    /// The epoll file's own readiness (ep_eventpoll_poll): EPOLLIN if an
    /// item on its ready list has something to report; registers `p`.
    pub(crate) fn poll(&self, p: Option<&Arc<Poller>>) -> i16 {
        {
            let mut g = self.ready.lock();
            if let Some(p) = p {
                self.ready.register(&mut g, p);
            }
            if g.list.is_empty() && !g.scanning {
                return 0;
            }
        }
        let _items = self.items.lock();
        if self.scan(None) {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    pub(crate) fn unregister(&self, p: &Arc<Poller>) {
        self.ready.unregister(p);
    }

    /// epoll_wait once the arguments are checked: reports up to
    /// `events.len()` items, waiting as `patience` allows while none is
    /// ready (a wake whose items turn out to have nothing waits on).
    pub(crate) fn wait(&self, events: &mut [EpollEvent], patience: Patience) -> usize {
        loop {
            let available = {
                let g = self.ready.lock();
                !g.list.is_empty() || g.scanning
            };
            if available {
                let mut n = 0;
                let _items = self.items.lock();
                self.scan(Some((events, &mut n)));
                if n > 0 {
                    return n;
                }
            }
            let mut g = self.ready.lock();
            while g.list.is_empty() && !g.scanning {
                match patience {
                    Patience::Never => return 0,
                    Patience::Forever => self.ready.wait(&mut g),
                    Patience::Until(deadline) => {
                        if self.ready.wait_until(&mut g, deadline) {
                            return 0;
                        }
                    }
                }
            }
        }
    }

    /// epoll_ctl after the descriptors are looked up: `me` is this
    /// epoll's file, `target` the file `fd` names (both held by the
    /// caller), `event` the caller's (None for EPOLL_CTL_DEL).
    /// `may_keep_awake`: the caller may use EPOLLWAKEUP.
    pub(crate) fn ctl(
        self: &Arc<Self>,
        me: &OpenFile,
        op: i32,
        target: &OpenFile,
        fd: Fd,
        event: Option<EpollEvent>,
        may_keep_awake: bool,
    ) -> SysResult<()> {
        // do_epoll_ctl's order.
        if !super::pollable(target) {
            return Err(Errno::EPERM);
        }
        let mut event = event;
        if let Some(e) = &mut event {
            if !may_keep_awake {
                e.events &= !EPOLLWAKEUP;
            }
        }
        if std::ptr::eq(me, target) {
            return Err(Errno::EINVAL);
        }
        let target_ep = super::epoll_of(target);
        if let Some(e) = &event {
            if e.events & EPOLLEXCLUSIVE != 0
                && (op == EPOLL_CTL_MOD
                    || (op == EPOLL_CTL_ADD
                        && (target_ep.is_some() || e.events & !EXCLUSIVE_OK_BITS != 0)))
            {
                return Err(Errno::EINVAL);
            }
        }
        // The graph checks of an insert that can make or lengthen a
        // chain: into an epoll that is watched itself, or of an epoll.
        let full_check = op == EPOLL_CTL_ADD
            && (target_ep.is_some() || watchers_of(me).is_some_and(|w| !w.items.lock().is_empty()));
        let _graph = full_check.then(|| GRAPH.write());
        if full_check {
            if let Some(t) = &target_ep {
                if self.loop_check(t) {
                    return Err(Errno::ELOOP);
                }
            }
        }
        let mut map = self.items.lock();
        let key = (target as *const OpenFile as usize, fd);
        match (op, map.get(&key).cloned(), event) {
            (EPOLL_CTL_ADD, Some(_), _) => Err(Errno::EEXIST),
            (EPOLL_CTL_ADD, None, Some(e)) => {
                let item = Arc::new_cyclic(|me: &Weak<Item>| Item {
                    file: target,
                    fd,
                    ep: Arc::downgrade(self),
                    poller: Arc::new(Poller::for_item(me.clone())),
                    events: AtomicU32::new(e.events | EPOLLERR | EPOLLHUP),
                    data: AtomicU64::new(e.data),
                    removed: AtomicBool::new(false),
                    linked: AtomicBool::new(false),
                    overflowed: AtomicBool::new(false),
                });
                watchers_or_new(target).items.lock().push(item.clone());
                map.insert(key, item.clone());
                if full_check && self.reverse_path_check(target, target_ep.as_deref()) {
                    map.remove(&key);
                    self.detach(&item, true);
                    return Err(Errno::EINVAL);
                }
                self.queue_if_ready(&item);
                Ok(())
            }
            (EPOLL_CTL_DEL, Some(item), _) => {
                map.remove(&key);
                self.detach(&item, true);
                Ok(())
            }
            (EPOLL_CTL_MOD, Some(item), Some(e)) => {
                if item.events.load(SeqCst) & EPOLLEXCLUSIVE != 0 {
                    return Err(Errno::EINVAL);
                }
                item.events.store(e.events | EPOLLERR | EPOLLHUP, SeqCst);
                item.data.store(e.data, SeqCst);
                self.queue_if_ready(&item);
                Ok(())
            }
            (EPOLL_CTL_DEL | EPOLL_CTL_MOD, None, _) => Err(Errno::ENOENT),
            _ => Err(Errno::EINVAL),
        }
    }

    /// After an insert or a change (under `items`, so no scan runs):
    /// polls the file, registering the item, and queues it if it has
    /// something to report and is not queued yet — only then are the
    /// epoll's waiters and watchers woken (ep_insert, ep_modify).
    fn queue_if_ready(&self, item: &Arc<Item>) {
        if item.poll_now() == 0 {
            return;
        }
        let mut g = self.ready.lock();
        if !item.linked.swap(true, SeqCst) {
            g.list.push_back(item.clone());
            self.ready.wake_keyed(&mut g, EPOLLIN | EPOLLRDNORM, None);
        }
    }

    /// ep_loop_check: adding `to` to this epoll would close a loop, or
    /// make a chain of epolls longer than EP_MAX_NESTS links.
    fn loop_check(self: &Arc<Self>, to: &Arc<Epoll>) -> bool {
        let down = to.depth_below(self);
        down > EP_MAX_NESTS || down + 1 + self.depth_above() > EP_MAX_NESTS
    }

    /// The longest chain of epolls below this one (usize::MAX if `into`
    /// is among them or the chain is too long).
    fn depth_below(&self, into: &Arc<Epoll>) -> usize {
        self.depth_below_from(into, 0)
    }

    fn depth_below_from(&self, into: &Arc<Epoll>, depth: usize) -> usize {
        let below: Vec<Arc<Epoll>> = self
            .items
            .lock()
            .values()
            .filter_map(|i| super::epoll_of(i.file()))
            .collect();
        let mut result = 0;
        for e in below {
            if Arc::ptr_eq(&e, into) || depth > EP_MAX_NESTS {
                return usize::MAX;
            }
            let d = e.depth_below_from(into, depth + 1);
            if d == usize::MAX {
                return usize::MAX;
            }
            result = result.max(d + 1);
            if result > EP_MAX_NESTS {
                break;
            }
        }
        result
    }

    /// The longest chain of epolls above this one.
    fn depth_above(&self) -> usize {
        let Some(f) = self.own_file() else {
            return 0;
        };
        watching_epolls(f)
            .iter()
            .map(|e| e.depth_above() + 1)
            .max()
            .unwrap_or(0)
    }

    /// reverse_path_check: from each non-epoll file the new item makes
    /// reachable (the target, or the files below a target epoll), too
    /// many or too long chains of epolls would lead up to it.
    fn reverse_path_check(&self, target: &OpenFile, target_ep: Option<&Epoll>) -> bool {
        let mut files: Vec<*const OpenFile> = Vec::new();
        match target_ep {
            None => files.push(target),
            Some(t) => t.files_below(&mut files),
        }
        files.dedup();
        files.into_iter().any(|f| {
            let mut counts = [0usize; EP_MAX_NESTS + 1];
            // SAFETY: the target (the caller holds it), or a watched file,
            // which cannot be freed while we hold `GRAPH`.
            paths_too_many(unsafe { &*f }, 0, &mut counts)
        })
    }

    /// The non-epoll files watched at or below this epoll.
    fn files_below(&self, out: &mut Vec<*const OpenFile>) {
        let items: Vec<Arc<Item>> = self.items.lock().values().cloned().collect();
        for i in items {
            match super::epoll_of(i.file()) {
                Some(e) => e.files_below(out),
                None => out.push(i.file),
            }
        }
    }
}

/// reverse_path_check_proc: counts the chains of epolls above `file`.
fn paths_too_many(file: &OpenFile, depth: usize, counts: &mut [usize; EP_MAX_NESTS + 1]) -> bool {
    if depth > EP_MAX_NESTS {
        return true;
    }
    for ep in watching_epolls(file) {
        let above = ep.own_file();
        let watched =
            above.is_some_and(|f| watchers_of(f).is_some_and(|w| !w.items.lock().is_empty()));
        let too_many = if watched {
            paths_too_many(above.expect("a watched file"), depth + 1, counts)
        } else if depth == 0 {
            false
        } else {
            counts[depth] += 1;
            counts[depth] > PATH_LIMITS[depth]
        };
        if too_many {
            return true;
        }
    }
    false
}
