//! The byte-range lock list of one inode: POSIX record locks (owned by an
//! fd table) and open-file-description locks (owned by an open file) in one
//! list, as Linux keeps them (`fs/locks.c`, `posix_lock_inode`), so the two
//! kinds conflict with each other. Pure data: the caller holds the inode's
//! lock-context mutex (`mod.rs`) around every call.
//!
//! The list keeps Linux's order, which F_GETLK's answer depends on: each
//! owner's locks form one run sorted by start, and the runs are in the
//! order their owners took a first lock (an owner whose last lock goes
//! leaves; its next lock joins at the end). A test reports the first lock
//! in that order that blocks the request, as `posix_test_lock` does.
//!
//! Invariants (checked by `check`, which the tests run after every call):
//! - ranges are inclusive `[start, end]` with `start <= end`; `end ==
//!   OFFSET_MAX` means "to the end of the file, however long it gets";
//! - one owner's locks never overlap, and two of its locks of the same kind
//!   never touch (`a.end + 1 == b.start`): a request merges with them, as
//!   Linux merges adjacent locks of one owner and type;
//! - locks of different owners overlap only when both are read locks.

use super::Owner;

/// The largest offset a lock can reach (Linux's OFFSET_MAX for a 64-bit
/// `loff_t`).
pub const OFFSET_MAX: u64 = i64::MAX as u64;

/// Shared (read) or exclusive (write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Read,
    Write,
}

/// One held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeLock {
    pub owner: Owner,
    pub kind: LockKind,
    pub start: u64,
    pub end: u64,
}

impl RangeLock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }

    /// Whether this lock keeps `owner` from taking `kind` on `[start, end]`.
    fn blocks(&self, owner: Owner, kind: LockKind, start: u64, end: u64) -> bool {
        self.owner != owner
            && self.overlaps(start, end)
            && (kind == LockKind::Write || self.kind == LockKind::Write)
    }
}

/// The locks of one inode, in Linux's list order (module docs).
#[derive(Default, Debug)]
pub struct RangeLocks {
    locks: Vec<RangeLock>,
}

impl RangeLocks {
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The lock that keeps `owner` from taking `kind` on `[start, end]`:
    /// the first such lock in list order. None if the request would be
    /// granted.
    pub fn conflict(
        &self,
        owner: Owner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Option<RangeLock> {
        self.locks
            .iter()
            .find(|l| l.blocks(owner, kind, start, end))
            .copied()
    }

    /// The first lock of `owner` itself overlapping `[start, end]` (an
    /// F_OFD_GETLK of F_UNLCK asks this, Linux 6.6+).
    pub fn own(&self, owner: Owner, start: u64, end: u64) -> Option<RangeLock> {
        self.locks
            .iter()
            .find(|l| l.owner == owner && l.overlaps(start, end))
            .copied()
    }

    /// Sets `owner`'s lock state on `[start, end]` to `kind` (`None`:
    /// unlocked), splitting and merging its own locks as needed. The caller
    /// checked `conflict` first (an unlock never conflicts).
    pub fn set(&mut self, owner: Owner, kind: Option<LockKind>, start: u64, end: u64) {
        debug_assert!(start <= end && end <= OFFSET_MAX);
        debug_assert!(kind.is_none_or(|k| self.conflict(owner, k, start, end).is_none()));
        // The owner's run starts here (contiguous: module invariants); a
        // new owner's goes at the end.
        let at = self
            .locks
            .iter()
            .position(|l| l.owner == owner)
            .unwrap_or(self.locks.len());
        let (mut start, mut end) = (start, end);
        let mut mine = Vec::new();
        for &l in self.locks.iter().filter(|l| l.owner == owner) {
            // A lock of the same kind that overlaps or touches the request
            // is absorbed into it.
            let touches = l.start <= end.saturating_add(1) && start <= l.end.saturating_add(1);
            if Some(l.kind) == kind && touches {
                start = start.min(l.start);
                end = end.max(l.end);
                continue;
            }
            if !l.overlaps(start, end) {
                mine.push(l);
                continue;
            }
            // Overlapped by a different kind (or an unlock): keep what lies
            // outside the request, on either side.
            if l.start < start {
                mine.push(RangeLock {
                    end: start - 1,
                    ..l
                });
            }
            if l.end > end {
                mine.push(RangeLock {
                    start: end + 1,
                    ..l
                });
            }
        }
        if let Some(kind) = kind {
            mine.push(RangeLock {
                owner,
                kind,
                start,
                end,
            });
        }
        mine.sort_unstable_by_key(|l| l.start);
        self.locks.retain(|l| l.owner != owner);
        self.locks.splice(at..at, mine);
    }

    /// Drops every lock of `owner`; true if it held any.
    pub fn remove_owner(&mut self, owner: Owner) -> bool {
        let before = self.locks.len();
        self.locks.retain(|l| l.owner != owner);
        self.locks.len() != before
    }

    /// Every lock, for tests and the invariant checker.
    pub fn locks(&self) -> &[RangeLock] {
        &self.locks
    }

    /// Panics unless the module invariants hold.
    pub fn check(&self) {
        for w in self.locks.windows(2) {
            if w[0].owner == w[1].owner {
                assert!(w[0].start < w[1].start, "a run out of order: {w:?}");
            }
        }
        for (i, a) in self.locks.iter().enumerate() {
            let run_end = i + self.locks[i..]
                .iter()
                .take_while(|l| l.owner == a.owner)
                .count();
            assert!(
                self.locks[run_end..].iter().all(|l| l.owner != a.owner),
                "{:?}'s locks are not one run",
                a.owner
            );
            assert!(a.start <= a.end && a.end <= OFFSET_MAX, "bad range {a:?}");
            for b in &self.locks[i + 1..] {
                if a.owner == b.owner {
                    assert!(
                        !a.overlaps(b.start, b.end),
                        "one owner overlaps: {a:?} {b:?}"
                    );
                    let touch = a.end.checked_add(1) == Some(b.start)
                        || b.end.checked_add(1) == Some(a.start);
                    assert!(!(touch && a.kind == b.kind), "unmerged: {a:?} {b:?}");
                } else if a.overlaps(b.start, b.end) {
                    assert!(
                        a.kind == LockKind::Read && b.kind == LockKind::Read,
                        "conflicting locks held: {a:?} {b:?}"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: Owner = Owner::Posix(1);
    const B: Owner = Owner::Posix(2);
    const C: Owner = Owner::Ofd(3);

    #[test]
    fn splitting_and_merging_one_owners_locks() {
        let mut l = RangeLocks::default();
        l.set(A, Some(LockKind::Write), 0, 99);
        l.set(A, Some(LockKind::Read), 10, 19);
        let mut got: Vec<_> = l.locks().iter().map(|x| (x.kind, x.start, x.end)).collect();
        got.sort_by_key(|x| x.1);
        assert_eq!(
            got,
            [
                (LockKind::Write, 0, 9),
                (LockKind::Read, 10, 19),
                (LockKind::Write, 20, 99)
            ]
        );
        // Back to write: the three pieces become one again.
        l.set(A, Some(LockKind::Write), 10, 19);
        assert_eq!(
            l.locks(),
            [RangeLock {
                owner: A,
                kind: LockKind::Write,
                start: 0,
                end: 99
            }]
        );
        // An unlock in the middle splits; adjacent relocking merges.
        l.set(A, None, 50, 59);
        assert_eq!(l.locks().len(), 2);
        l.set(A, Some(LockKind::Write), 50, 59);
        assert_eq!(l.locks().len(), 1);
        l.check();
    }

    #[test]
    fn conflicts_follow_kind_and_owner() {
        let mut l = RangeLocks::default();
        l.set(A, Some(LockKind::Read), 0, OFFSET_MAX);
        assert_eq!(l.conflict(B, LockKind::Read, 5, 5), None);
        assert_eq!(
            l.conflict(A, LockKind::Write, 5, 5),
            None,
            "own locks never conflict"
        );
        let c = l.conflict(C, LockKind::Write, 5, 5).expect("conflict");
        assert_eq!((c.owner, c.start, c.end), (A, 0, OFFSET_MAX));
        l.set(B, Some(LockKind::Read), 3, 3);
        // Two readers in the way of a writer: the first owner to lock is
        // reported, whatever the starts.
        assert_eq!(
            l.conflict(C, LockKind::Write, 2, 8).map(|c| c.owner),
            Some(A)
        );
        let mut m = RangeLocks::default();
        m.set(B, Some(LockKind::Read), 50, 60);
        m.set(A, Some(LockKind::Read), 0, 10);
        m.set(B, Some(LockKind::Read), 5, 5);
        assert_eq!(
            m.conflict(C, LockKind::Write, 0, 100)
                .map(|c| (c.owner, c.start)),
            Some((B, 5))
        );
        m.set(B, None, 0, OFFSET_MAX);
        m.set(B, Some(LockKind::Read), 0, 0);
        assert_eq!(
            m.conflict(C, LockKind::Write, 0, 100).map(|c| c.owner),
            Some(A),
            "B came back last"
        );
        m.check();
        assert!(l.remove_owner(A));
        assert_eq!(
            l.conflict(C, LockKind::Write, 2, 8).map(|c| c.owner),
            Some(B)
        );
        assert_eq!(l.conflict(C, LockKind::Write, 4, 8), None);
        assert!(!l.remove_owner(A));
        l.check();
    }

    /// The reference model: every byte of [0, BYTES) and who holds it how.
    /// Requests start below 32 and are at most 8 long or reach to the end
    /// (modelled as byte BYTES - 1), so the bytes past 40 stand for "the
    /// rest of the file".
    const BYTES: usize = 64;

    #[derive(Clone, Debug)]
    struct Model {
        held: Vec<[Option<LockKind>; BYTES]>,
        /// Owners holding anything, in the order they began to.
        order: Vec<usize>,
    }

    fn model_range(start: u64, len: u64) -> (u64, u64) {
        if len == 0 {
            (start, OFFSET_MAX)
        } else {
            (start, start + len - 1)
        }
    }

    fn bytes(start: u64, end: u64) -> std::ops::RangeInclusive<usize> {
        start as usize..=(end.min(BYTES as u64 - 1) as usize)
    }

    fn owner(i: usize) -> Owner {
        [A, B, C][i]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(256)))]
        /// Random lock, unlock and test requests of three owners agree
        /// with the per-byte model: which are granted, and which lock a
        /// refused one reports (of the first owner to have locked that is
        /// in the way, its lowest blocking run of bytes of one kind).
        #[test]
        fn requests_agree_with_a_per_byte_model(
            ops in proptest::collection::vec((0usize..3, 0u8..3, 0u64..32, 0u64..9), 1..60)
        ) {
            let mut real = RangeLocks::default();
            let mut model = Model { held: vec![[None; BYTES]; 3], order: Vec::new() };
            for (who, what, start, len) in ops {
                let (s, e) = model_range(start, len);
                let kind = match what { 0 => Some(LockKind::Read), 1 => Some(LockKind::Write), _ => None };
                // The model's answer: the blocking byte runs of other owners.
                let blocking = |k: LockKind| -> Option<(usize, LockKind, u64, u64)> {
                    for &o in model.order.iter().filter(|&&o| o != who) {
                        let h = &model.held[o];
                        for b in bytes(s, e) {
                            let Some(hk) = h[b] else { continue };
                            if k == LockKind::Read && hk == LockKind::Read { continue; }
                            // The run of `hk` around b.
                            let mut lo = b;
                            while lo > 0 && h[lo - 1] == Some(hk) { lo -= 1; }
                            let mut hi = b;
                            while hi + 1 < BYTES && h[hi + 1] == Some(hk) { hi += 1; }
                            let end = if hi == BYTES - 1 { OFFSET_MAX } else { hi as u64 };
                            return Some((o, hk, lo as u64, end));
                        }
                    }
                    None
                };
                match kind {
                    Some(k) => {
                        let want = blocking(k);
                        let got = real.conflict(owner(who), k, s, e);
                        prop_assert_eq!(
                            got.map(|c| (c.owner, c.kind, c.start, c.end)),
                            want.map(|(o, hk, lo, end)| (owner(o), hk, lo, end))
                        );
                        if got.is_none() {
                            real.set(owner(who), Some(k), s, e);
                            for b in bytes(s, e) { model.held[who][b] = Some(k); }
                        }
                    }
                    None => {
                        real.set(owner(who), None, s, e);
                        for b in bytes(s, e) { model.held[who][b] = None; }
                    }
                }
                let holds = model.held[who].iter().any(Option::is_some);
                let listed = model.order.contains(&who);
                if holds && !listed {
                    model.order.push(who);
                } else if !holds && listed {
                    model.order.retain(|&o| o != who);
                }
                real.check();
            }
        }
    }
}
