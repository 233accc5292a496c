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
//! - A writer adds its unit, then reads the mount's flag word; a switch to
//!   read-only sets `MNT_WRITE_HOLD` in the word, then sums the units. All
//!   four are SeqCst accesses (Linux puts an smp_mb between the two steps
//!   of each side), so in their single total order either the writer's
//!   read comes after the hold (it waits for the hold to go, then sees the
//!   switch's outcome) or the sum sees the writer's unit (EBUSY). So a
//!   unit is never held on a read-only mount. A SeqCst RMW is one locked
//!   instruction on x86, as a Relaxed one: the protocol costs the writer
//!   no fence.
//! - Under loom a SeqCst fence follows each side's first step: loom models
//!   SeqCst accesses as AcqRel (tokio-rs/loom#180), under which the store
//!   buffering above would be allowed; its fences are modelled, and with
//!   them the loom model checks the same two-step argument.
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
use crate::sync::atomic::{spin_hint, AtomicBool, Ordering};
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
        self.0.add_seqcst(1);
        loom_fence();
        let mut word = flags.get_seqcst();
        while word & MNT_WRITE_HOLD != 0 {
            spin_hint();
            word = flags.get_seqcst();
        }
        // SeqCst: a switch stores the instance's bit before the store that
        // ended its hold, which the word's read saw.
        if word & MNT_READONLY != 0 || instance_readonly.load(Ordering::SeqCst) {
            self.drop_one();
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// mnt_drop_write: gives one unit back.
    #[inline]
    pub fn drop_one(&self) {
        // Release: what the writer changed happens before a switch whose
        // sum (`busy`, SeqCst loads) sees the unit gone.
        self.0.add_release(-1);
    }

    /// Sets the hold on `flags`: writers arriving from now on wait until
    /// `release`. Caller holds the mount table's lock.
    pub fn hold(flags: &MountFlags) {
        flags.set_seqcst(flags.get() | MNT_WRITE_HOLD);
        loom_fence();
    }

    /// Whether any unit is held. Meaningful between `hold` and `release`.
    pub fn busy(&self) -> bool {
        self.0.sum_seqcst() > 0
    }

    /// Ends a hold, storing `bits` (without the hold) as the mount's word.
    /// Caller holds the mount table's lock.
    pub fn release(flags: &MountFlags, bits: u32) {
        flags.set_seqcst(bits & !MNT_WRITE_HOLD);
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

/// The SeqCst fence loom needs between a side's two steps (module
/// invariants); nothing in a real build, where the SeqCst accesses order
/// them.
#[inline(always)]
fn loom_fence() {
    #[cfg(loom)]
    crate::sync::atomic::fence(Ordering::SeqCst);
}
