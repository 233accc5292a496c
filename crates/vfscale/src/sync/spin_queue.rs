//! The queue of writers waiting for one contended lock (Linux's optimistic
//! spin queue, `kernel/locking/osq_lock.c`, reduced to an MCS queue).
//!
//! Why: with test-and-test-and-set every waiter reads the lock word between
//! pauses, so every waiter holds a shared copy of the lock's cache line —
//! and the holder's writes to that line (the release, and the directory
//! index's own fields beside the lock word) each have to take it back from
//! all of them. On a 16-core machine create-unlink in one directory spent
//! 91% of its samples spinning and fell from 0.97 M/s at 1 thread to 0.31 M
//! at 16 (docs/PERFORMANCE.md, "Wider scaling"). Behind this queue only the
//! *head* waiter watches the lock; the others each spin on their own node,
//! on their own stack and cache line, until the head hands the role on.
//!
//! Protocol (MCS):
//! - `tail` points to the last queued node, or is null when nobody waits.
//! - Joining swaps `tail` to the new node; a non-null previous tail is the
//!   predecessor, which learns its successor through its `next` and later
//!   sets the successor's `turn`. A node whose swap found null is the head
//!   at once.
//! - Leaving (the head, once it holds the lock itself) clears `tail` if it
//!   is still the last node; otherwise it waits for its successor to have
//!   linked itself (`next` non-null: the successor swapped `tail` before
//!   linking) and sets the successor's `turn`. After that store it never
//!   touches the successor again, and the successor, having seen `turn`,
//!   never touches its predecessor: so a node may live on its owner's stack
//!   and be dropped as soon as [`SpinQueue::wait_for_turn`]'s guard is.
//! - Waiters behind the head spin, then yield their time slice: a queue
//!   cannot be left early, so on an oversubscribed machine a preempted
//!   predecessor must be given the CPU back rather than spun against.
//!
//! The queue only orders *who may try* for the lock; mutual exclusion is the
//! lock's own, so a bug here could cost fairness or progress, never
//! exclusion. The loom model `spin_queue_*` (tests/loom_sync.rs) checks that
//! the head role is held by one waiter at a time and passes to every waiter.

use super::atomic::{spin_hint, yield_thread, AtomicBool, AtomicPtr, Ordering::*};
use core::ptr;

/// Spins on `turn` before a queued waiter starts yielding its time slice.
const SPINS_BEFORE_YIELD: u32 = 1024;

/// One waiter's place in the queue: on its own cache line, so the spinning
/// of one waiter does not disturb another's.
#[repr(align(64))]
pub struct SpinNode {
    next: AtomicPtr<SpinNode>,
    turn: AtomicBool,
}

const _: () = assert!(core::mem::align_of::<SpinNode>() == 64);

impl SpinNode {
    pub fn new() -> SpinNode {
        SpinNode {
            next: AtomicPtr::new(ptr::null_mut()),
            turn: AtomicBool::new(false),
        }
    }
}

impl Default for SpinNode {
    fn default() -> Self {
        SpinNode::new()
    }
}

/// The queue's tail word; all-zero is an empty queue.
#[derive(Default)]
pub struct SpinQueue {
    tail: AtomicPtr<SpinNode>,
}

impl core::fmt::Debug for SpinQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SpinQueue")
    }
}

/// The head role in a queue; dropping it hands the role to the next waiter.
pub struct QueueHead<'q> {
    queue: &'q SpinQueue,
    node: &'q SpinNode,
}

impl SpinQueue {
    #[cfg(not(loom))]
    pub const fn new() -> SpinQueue {
        SpinQueue {
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg(loom)]
    pub fn new() -> SpinQueue {
        SpinQueue {
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// True while some waiter is in the queue (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub fn has_waiters(&self) -> bool {
        // Relaxed: a snapshot that orders nothing.
        !self.tail.load(Relaxed).is_null()
    }

    /// Joins the queue with `node` and returns once it is the head.
    /// `node` must not be in any queue (a fresh [`SpinNode::new`]).
    pub fn wait_for_turn<'q>(&'q self, node: &'q SpinNode) -> QueueHead<'q> {
        let me = node as *const SpinNode as *mut SpinNode;
        // AcqRel: Release publishes our node's initialised fields to the
        // successor that will swap after us and write our `next`; Acquire
        // pairs with the predecessor's swap, so its node is initialised
        // before we write its `next`.
        let predecessor = self.tail.swap(me, AcqRel);
        if !predecessor.is_null() {
            // SAFETY: a node stays alive until its owner's QueueHead is
            // dropped, and that drop does not return before it has handed
            // the turn to its successor — us, whom it can only find through
            // the `next` we store here. So the predecessor is alive now.
            // Release pairs with the Acquire load of `next` in `drop`.
            unsafe { (*predecessor).next.store(me, Release) };
            let mut spins = 0;
            // Acquire pairs with the predecessor's Release store of `turn`:
            // everything it did as head happens before we become head.
            while !node.turn.load(Acquire) {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    spin_hint();
                } else {
                    yield_thread();
                }
            }
        }
        QueueHead { queue: self, node }
    }
}

impl Drop for QueueHead<'_> {
    fn drop(&mut self) {
        let me = self.node as *const SpinNode as *mut SpinNode;
        // Acquire pairs with the successor's Release store of our `next`.
        let mut next = self.node.next.load(Acquire);
        if next.is_null() {
            // Release: the next waiter to join (swap with AcqRel) sees our
            // head's work done; Relaxed on failure, then we wait for `next`.
            if self
                .queue
                .tail
                .compare_exchange(me, ptr::null_mut(), Release, Relaxed)
                .is_ok()
            {
                return;
            }
            // A successor swapped the tail after us but has not linked yet.
            let mut spins = 0;
            loop {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    spin_hint();
                } else {
                    yield_thread();
                }
                // Acquire pairs with the successor's Release store of `next`.
                next = self.node.next.load(Acquire);
                if !next.is_null() {
                    break;
                }
            }
        }
        // SAFETY: the successor waits in `wait_for_turn` until this store,
        // so its node is alive; we do not touch it afterwards.
        // Release pairs with the successor's Acquire load of `turn`.
        unsafe { (*next).turn.store(true, Release) };
    }
}
