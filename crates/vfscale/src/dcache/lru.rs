//! The per-superblock LRU of unused dentries (negative ones, in tmpfs).
//!
//! Invariants:
//! - A dentry is linked here iff its `D_ON_LRU` flag is set; both change only
//!   under `inner`'s mutex, and the links (`lru_prev`/`lru_next`) are touched
//!   only under it.
//! - A dentry on the list is never freed: the kill path unlinks it first.
//! - Lock order: this mutex before any hash-bucket lock.

use super::dentry::{Dentry, D_ON_LRU};
use crate::sync::atomic::Ordering;
use crate::sync::lock::{Mutex, MutexGuard};
use core::ptr;

pub struct LruList {
    head: *const Dentry,
    tail: *const Dentry,
    len: usize,
}

// SAFETY: the list is only reachable through the mutex in `DentryLru`, and
// the dentries it links are Sync.
unsafe impl Send for LruList {}

pub struct DentryLru {
    inner: Mutex<LruList>,
}

impl Default for DentryLru {
    fn default() -> Self {
        DentryLru {
            inner: Mutex::new(LruList {
                head: ptr::null(),
                tail: ptr::null(),
                len: 0,
            }),
        }
    }
}

// Relaxed link accesses throughout: the links are protected by the mutex.
impl LruList {
    /// Links `d` at the head (most recently used) unless already linked.
    pub fn add(&mut self, d: &Dentry) {
        if d.flags() & D_ON_LRU != 0 {
            return;
        }
        d.set_flag(D_ON_LRU);
        d.lru_prev.store(ptr::null_mut(), Ordering::Relaxed);
        d.lru_next
            .store(self.head as *mut Dentry, Ordering::Relaxed);
        if let Some(h) = unsafe_ref(self.head) {
            h.lru_prev
                .store(d as *const Dentry as *mut Dentry, Ordering::Relaxed);
        } else {
            self.tail = d;
        }
        self.head = d;
        self.len += 1;
    }

    /// Unlinks `d` if it is linked.
    pub fn remove(&mut self, d: &Dentry) {
        if d.flags() & D_ON_LRU == 0 {
            return;
        }
        let prev = d.lru_prev.load(Ordering::Relaxed);
        let next = d.lru_next.load(Ordering::Relaxed);
        match unsafe_ref(prev) {
            Some(p) => p.lru_next.store(next, Ordering::Relaxed),
            None => self.head = next,
        }
        match unsafe_ref(next) {
            Some(n) => n.lru_prev.store(prev, Ordering::Relaxed),
            None => self.tail = prev,
        }
        d.clear_flag(D_ON_LRU);
        self.len -= 1;
    }

    /// The least recently used dentry, if any.
    pub fn oldest(&self) -> *const Dentry {
        self.tail
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn unsafe_ref<'a>(p: *const Dentry) -> Option<&'a Dentry> {
    // SAFETY: every pointer linked in an LRU list is a live dentry (the kill
    // path unlinks before freeing) and callers hold the list mutex.
    unsafe { p.as_ref() }
}

impl DentryLru {
    pub fn lock(&self) -> MutexGuard<'_, LruList> {
        self.inner.lock()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
