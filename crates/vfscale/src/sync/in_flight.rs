//! Operations in flight, for readers whose check failed because of one:
//! a backend rename is several steps (the host's rename, the backend's
//! paths, the cached dentry's move), and a reader between them may find
//! the host's new state with vfscale's old one (a host path that names
//! nothing, a cached negative entry where the host has the file). Such a
//! reader looks again when an operation was in flight when it failed, or
//! finished since it started.
//!
//! Protocol: an operation increments `started` before its first step and
//! `finished` after its last (the guard's drop, also on failure). A
//! reader samples `finished` before it reads vfscale's state; after a
//! failure it reads `started`, then `finished`. If the operation that
//! caused the failure had finished before the sample, the reader read its
//! outcome, so the failure has another cause; else that operation is
//! counted in `started` (its first step came before the failure, which
//! came before these loads) but not in the sample, and is either in
//! flight (`started != finished`) or finished since (`finished !=
//! sample`). SeqCst throughout: the argument orders an operation's first
//! step before the reader's failure and the reader's loads after it,
//! across two atomics and the host (loom model `in_flight_reader_sees_a_move`).

use super::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct InFlight {
    started: AtomicU64,
    finished: AtomicU64,
}

/// An operation in flight; its drop counts it finished.
pub struct Entered<'a>(&'a InFlight);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::SeqCst);
    }
}

impl InFlight {
    pub fn new() -> InFlight {
        InFlight::default()
    }

    /// An operation starts (before its first step).
    pub fn enter(&self) -> Entered<'_> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Entered(self)
    }

    /// Taken before reading the state an operation changes.
    pub fn sample(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// After a check of state read after `sample` failed: whether an
    /// operation may have changed it meanwhile (look again). Yields first
    /// if one is still in flight, so a reader looking again does not spin
    /// against it.
    pub fn moved_since(&self, sample: u64) -> bool {
        let started = self.started.load(Ordering::SeqCst);
        let finished = self.finished.load(Ordering::SeqCst);
        if started != finished {
            #[cfg(not(loom))]
            std::thread::yield_now();
            return true;
        }
        finished != sample
    }

    /// Runs `attempt` again while it fails with an error `stale` matches
    /// and an operation was in flight or finished since it started (at
    /// most `limit` runs); returns its last result.
    pub fn retry<T, E>(
        &self,
        limit: usize,
        stale: impl Fn(&E) -> bool,
        mut attempt: impl FnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        let mut runs = 1;
        loop {
            let sample = self.sample();
            match attempt() {
                Err(e) if stale(&e) && runs < limit && self.moved_since(sample) => runs += 1,
                r => return r,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_failure_looks_again_only_across_an_operation() {
        let m = InFlight::new();
        let before = m.sample();
        assert!(!m.moved_since(before), "none: the failure stands");
        let op = m.enter();
        assert!(m.moved_since(before), "in flight");
        drop(op);
        assert!(m.moved_since(before), "finished since the sample");
        assert!(!m.moved_since(m.sample()), "finished before the sample");
    }

    /// Runs of `retry` (limit 5) whose attempts fail with `errors` in
    /// turn, then succeed; `retry`'s result.
    fn runs(m: &InFlight, errors: &[u8]) -> (usize, Result<(), u8>) {
        let mut runs = 0;
        let r = m.retry(
            5,
            |&e| e == 1,
            || {
                runs += 1;
                errors.get(runs - 1).map_or(Ok(()), |&e| Err(e))
            },
        );
        (runs, r)
    }

    #[test]
    fn retry_runs_again_only_across_an_operation() {
        let m = InFlight::new();
        assert_eq!(runs(&m, &[1, 1]), (1, Err(1)), "nothing moved: one run");
        let op = m.enter();
        assert_eq!(runs(&m, &[1; 9]), (5, Err(1)), "in flight: up to the limit");
        assert_eq!(runs(&m, &[2]), (1, Err(2)), "another error stands");
        assert_eq!(runs(&m, &[1, 1]), (3, Ok(())), "until it succeeds");
        drop(op);
    }
}
