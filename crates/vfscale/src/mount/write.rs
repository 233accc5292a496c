//! Write access to a mount: Linux's mnt_want_write, mnt_drop_write and
//! mnt_make_readonly. A change made through a mount (a create, an unlink,
//! a chmod, ...) holds one unit of write access for its duration, and a
//! file open for writing holds one from its open to its release
//! (`FMODE_WRITER`); a mount becomes read-only only while no unit is held
//! (else EBUSY), and no unit is granted on a read-only mount (EROFS).
//!
//! Invariants:
//! - A mount's units live in its `Writers`, sharded per thread: taking and
//!   dropping one writes only the caller's line (many threads create and
//!   unlink through one mount).
//! - A writer adds its unit, then a SeqCst fence, then reads the mount's
//!   flag word; a switch to read-only sets `MNT_WRITE_HOLD` in the word,
//!   then a SeqCst fence, then sums the units (Linux's smp_mb pair). The
//!   two fences are ordered one way or the other: either the writer's read
//!   comes after the hold (it waits for the hold to go, then sees the
//!   switch's outcome) or the sum sees the writer's unit (EBUSY). So a
//!   unit is never held on a read-only mount. (Fences, not SeqCst accesses:
//!   the loom model checks fences, not SeqCst loads against stores.)
//! - A writer that sees the mount or its instance read-only takes its unit
//!   back at once and fails with EROFS.
//! - The hold is set and cleared only under the mount table's lock, by a
//!   switcher that does not block between the two: writers spin on it.
//! - An instance (superblock) becomes read-only with every one of its
//!   mounts held (`SuperBlock::mounts`, detached ones included), its bit
//!   stored before the holds are cleared: the same argument covers it, a
//!   writer reading the instance's bit after the word.

use super::flags::{MountFlags, MNT_READONLY, MNT_WRITE_HOLD};
use crate::abi::Errno;
use crate::sync::atomic::{fence, spin_hint, AtomicBool, Ordering};
use crate::sync::ShardedCounter;

/// The units of write access held on one mount.
pub struct Writers(ShardedCounter);

impl Default for Writers {
    fn default() -> Self {
        Self::new()
    }
}

impl Writers {
    pub fn new() -> Writers {
        Writers(ShardedCounter::new())
    }

    /// mnt_want_write: one unit on the mount whose word is `flags` and
    /// whose instance's read-only bit is `instance_readonly`, or EROFS.
    #[inline]
    pub fn want(&self, flags: &MountFlags, instance_readonly: &AtomicBool) -> Result<(), Errno> {
        // Relaxed: the fence below orders it before the word's read.
        self.0.add(1);
        fence(Ordering::SeqCst);
        let mut word = flags.get_acquire();
        while word & MNT_WRITE_HOLD != 0 {
            spin_hint();
            word = flags.get_acquire();
        }
        // Acquire: a switch stores the instance's bit before the release
        // that ended its hold, which the word's read acquired.
        if word & MNT_READONLY != 0 || instance_readonly.load(Ordering::Acquire) {
            self.drop_one();
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// mnt_drop_write: gives one unit back.
    #[inline]
    pub fn drop_one(&self) {
        // Release: what the writer changed happens before a switch whose
        // sum (`busy`, Acquire loads) sees the unit gone.
        self.0.add_release(-1);
    }

    /// Sets the hold on `flags`: writers arriving from now on wait until
    /// `release`. Caller holds the mount table's lock.
    pub fn hold(flags: &MountFlags) {
        flags.set_release(flags.get() | MNT_WRITE_HOLD);
        fence(Ordering::SeqCst);
    }

    /// Whether any unit is held. Meaningful between `hold` and `release`.
    pub fn busy(&self) -> bool {
        self.0.sum_acquire() > 0
    }

    /// Ends a hold, storing `bits` (without the hold) as the mount's word.
    /// Caller holds the mount table's lock.
    pub fn release(flags: &MountFlags, bits: u32) {
        flags.set_release(bits & !MNT_WRITE_HOLD);
    }

    /// mnt_make_readonly for one mount whose new word `bits` has
    /// `MNT_READONLY`: EBUSY (and the word unchanged) while units are held.
    /// Caller holds the mount table's lock.
    pub fn make_readonly(&self, flags: &MountFlags, bits: u32) -> Result<(), Errno> {
        let old = flags.get();
        Self::hold(flags);
        if self.busy() {
            Self::release(flags, old);
            return Err(Errno::EBUSY);
        }
        Self::release(flags, bits);
        Ok(())
    }
}
