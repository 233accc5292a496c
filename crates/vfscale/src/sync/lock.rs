//! The blocking locks of the core: thin wrappers over parking_lot that
//! report each acquisition to [`super::opcount`]. Every mutex and rwlock in
//! the core is one of these, so the op counters see all lock traffic.

pub use parking_lot::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use super::opcount::note_lock;

#[derive(Debug, Default)]
pub struct Mutex<T>(parking_lot::Mutex<T>);

impl<T> Mutex<T> {
    pub const fn new(v: T) -> Self {
        Mutex(parking_lot::const_mutex(v))
    }

    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        note_lock();
        self.0.lock()
    }
}

#[derive(Debug, Default)]
pub struct RwLock<T>(parking_lot::RwLock<T>);

impl<T> RwLock<T> {
    pub const fn new(v: T) -> Self {
        RwLock(parking_lot::const_rwlock(v))
    }

    #[inline]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        note_lock();
        self.0.read()
    }

    #[inline]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        note_lock();
        self.0.write()
    }
}
