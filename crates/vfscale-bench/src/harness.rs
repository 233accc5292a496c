//! The measuring loop every workload uses.
//!
//! `measure` runs `threads` workers, each pinned to a CPU (when allowed) and
//! with its own state made on its own thread before any timing. All start
//! together at a barrier, warm up, meet at a second barrier, then run the
//! operation in batches and check a shared stop flag after each batch; the
//! coordinating thread sleeps through the warm-up and the measured window
//! and raises the flags. The timed loop holds only the operation. The first
//! failing operation stops everyone and is returned: nothing of a run with
//! a failure is counted.
//!
//! Optionally thread 0 records its progress at `intervals` evenly spaced
//! instants (to show a collapse over time), and a background closure runs
//! on its own pinned thread during the measured window (a disturber).
//!
//! `measure_rounds` is the variant for an operation the system must be
//! reset before: the same pinned workers with their own state, but all do
//! one operation per round, and the calling thread runs an untimed reset
//! between rounds while they wait at a barrier.

use crate::sys;
use crate::target::{OpError, OpResult};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How to measure one point.
#[derive(Clone, Debug)]
pub struct Spec {
    pub threads: usize,
    /// Operations between two checks of the stop flag.
    pub batch: u32,
    /// Consecutive intervals thread 0 reports rates for (0 or 1: none).
    pub intervals: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// What one point measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Operations completed by all workers in the measured window.
    pub ops: u64,
    /// The measured window: the longest of the workers' own windows.
    pub secs: f64,
    /// Thread 0's operations per second in each interval, in order.
    pub interval_rates: Vec<f64>,
    /// Operations the background closure reported.
    pub background_ops: u64,
}

impl Measured {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.secs
    }
}

/// A background closure: makes its state, calls `BgCtl::start`, works
/// until `BgCtl::stopped`, and returns its operation count.
pub type Background<'a> = &'a (dyn Fn(&BgCtl<'_>) -> OpResult<u64> + Sync);

/// The background thread's view of the run.
pub struct BgCtl<'a> {
    shared: &'a Shared,
    started: std::cell::Cell<bool>,
}

impl BgCtl<'_> {
    /// Waits until the measured window opens (call once, state ready).
    pub fn start(&self) {
        if !self.started.replace(true) {
            self.shared.barrier.wait();
            self.shared.barrier.wait();
        }
    }

    /// Whether the measured window has closed (or a thread failed).
    #[inline]
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }
}

struct Shared {
    barrier: Barrier,
    warm_stop: AtomicBool,
    stop: AtomicBool,
    error: Mutex<Option<OpError>>,
    cv: Condvar,
}

impl Shared {
    fn fail(&self, e: OpError) {
        let mut g = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.warm_stop.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        self.cv.notify_all();
    }

    /// Sleeps for `d` or until a failure; true on failure.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut g = self.error.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if g.is_some() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn take_error(&self) -> Option<OpError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

struct Marks {
    t0: Instant,
    step: Duration,
    next: Instant,
    left: usize,
    at: Vec<(Instant, u64)>,
}

#[inline(always)]
fn spin<S, O>(
    s: &mut S,
    op: &O,
    batch: u32,
    stop: &AtomicBool,
    mut marks: Option<&mut Marks>,
) -> OpResult<u64>
where
    O: Fn(&mut S) -> OpResult<()>,
{
    let mut n = 0u64;
    loop {
        for _ in 0..batch {
            op(s)?;
        }
        n += u64::from(batch);
        // Stop before marking: the last interval (last mark to the end)
        // then always holds at least one batch.
        if stop.load(Ordering::Relaxed) {
            return Ok(n);
        }
        if let Some(m) = marks.as_deref_mut() {
            if m.left > 0 {
                let now = Instant::now();
                if now >= m.next {
                    m.at.push((now, n));
                    m.left -= 1;
                    while m.next <= now {
                        m.next += m.step;
                    }
                }
            }
        }
    }
}

/// Measures `op` on `spec.threads` threads; `make(i)` builds thread i's
/// state on thread i.
pub fn measure<S, M, O>(spec: &Spec, make: M, op: O) -> OpResult<Measured>
where
    M: Fn(usize) -> OpResult<S> + Sync,
    O: Fn(&mut S) -> OpResult<()> + Sync,
{
    measure_with(spec, make, op, None)
}

/// `measure`, with `background` running on one more thread during the
/// measured window.
pub fn measure_with<S, M, O>(
    spec: &Spec,
    make: M,
    op: O,
    background: Option<Background<'_>>,
) -> OpResult<Measured>
where
    M: Fn(usize) -> OpResult<S> + Sync,
    O: Fn(&mut S) -> OpResult<()> + Sync,
{
    assert!(spec.threads > 0 && spec.batch > 0);
    let cpus = sys::allowed_cpus();
    let extra = usize::from(background.is_some());
    let shared = Shared {
        barrier: Barrier::new(spec.threads + extra + 1),
        warm_stop: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        cv: Condvar::new(),
    };
    let (make, op, shared_ref) = (&make, &op, &shared);
    let results = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..spec.threads)
            .map(|tid| {
                let cpu = cpus[tid % cpus.len()];
                scope.spawn(move || worker(tid, cpu, spec, shared_ref, make, op))
            })
            .collect();
        let bg = background.map(|bg| {
            let cpu = cpus[spec.threads % cpus.len()];
            scope.spawn(move || {
                sys::pin_to_cpu(cpu);
                let ctl = BgCtl {
                    shared: shared_ref,
                    started: std::cell::Cell::new(false),
                };
                let r = bg(&ctl);
                // A closure that failed before starting still owes the
                // barriers their waits.
                ctl.start();
                r.unwrap_or_else(|e| {
                    shared_ref.fail(e);
                    0
                })
            })
        });
        shared.barrier.wait();
        if !shared.sleep(spec.warmup) {
            shared.warm_stop.store(true, Ordering::Relaxed);
        }
        shared.barrier.wait();
        if !shared.sleep(spec.duration) {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let w: Vec<_> = workers
            .into_iter()
            .map(|h| h.join().expect("bench worker panicked"))
            .collect();
        let b = bg.map_or(0, |h| h.join().expect("bench background thread panicked"));
        (w, b)
    });
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let (workers, background_ops) = results;
    let mut m = Measured {
        background_ops,
        ..Measured::default()
    };
    for (i, (ops, secs, marks)) in workers.into_iter().enumerate() {
        m.ops += ops;
        m.secs = m.secs.max(secs);
        if i == 0 {
            m.interval_rates = marks;
        }
    }
    if m.ops == 0 || m.secs <= 0.0 {
        return Err(OpError::Failed("no operation completed".into()));
    }
    Ok(m)
}

fn worker<S, M, O>(
    tid: usize,
    cpu: usize,
    spec: &Spec,
    shared: &Shared,
    make: &M,
    op: &O,
) -> (u64, f64, Vec<f64>)
where
    M: Fn(usize) -> OpResult<S>,
    O: Fn(&mut S) -> OpResult<()>,
{
    sys::pin_to_cpu(cpu);
    let mut state = match make(tid) {
        Ok(s) => Some(s),
        Err(e) => {
            shared.fail(e);
            None
        }
    };
    shared.barrier.wait();
    if let Some(s) = state.as_mut() {
        if let Err(e) = spin(s, op, spec.batch, &shared.warm_stop, None) {
            shared.fail(e);
        }
    }
    shared.barrier.wait();
    let t0 = Instant::now();
    let want_marks = tid == 0 && spec.intervals > 1;
    let step = spec.duration / spec.intervals.max(1) as u32;
    let mut marks = Marks {
        t0,
        step,
        next: t0 + step,
        left: if want_marks { spec.intervals - 1 } else { 0 },
        at: Vec::new(),
    };
    let mut ops = 0;
    if let Some(s) = state.as_mut() {
        if !shared.stop.load(Ordering::Relaxed) {
            let m = want_marks.then_some(&mut marks);
            match spin(s, op, spec.batch, &shared.stop, m) {
                Ok(n) => ops = n,
                Err(e) => shared.fail(e),
            }
        }
    }
    let end = Instant::now();
    let secs = (end - t0).as_secs_f64();
    drop(state);
    let mut rates = Vec::new();
    if want_marks {
        let mut prev = (marks.t0, 0u64);
        for &(at, n) in marks.at.iter().chain(std::iter::once(&(end, ops))) {
            let dt = (at - prev.0).as_secs_f64();
            if dt > 0.0 {
                rates.push((n - prev.1) as f64 / dt);
            }
            prev = (at, n);
        }
    }
    (ops, secs, rates)
}

/// `measure` for an operation the system must be reset before (readdir
/// with the kernel's cache dropped): in rounds. Before each round the
/// calling thread runs `between` (untimed) while the workers wait; then
/// every worker does `op` once, and the round lasts until the slowest of
/// them is done (each times itself from the round's barrier). One untimed
/// round warms up; then rounds are measured until their summed time
/// reaches `duration`, and at least `min_rounds` of them. `ops` counts one
/// per worker per measured round. The first failure (of `between`, of a
/// state's `make`, of `op`) ends the point and is returned.
pub fn measure_rounds<S, M, O, B>(
    threads: usize,
    min_rounds: u64,
    duration: Duration,
    make: M,
    op: O,
    mut between: B,
) -> OpResult<Measured>
where
    M: Fn(usize) -> OpResult<S> + Sync,
    O: Fn(&mut S) -> OpResult<()> + Sync,
    B: FnMut() -> OpResult<()>,
{
    assert!(threads > 0 && min_rounds > 0);
    let cpus = sys::allowed_cpus();
    // Each round: `start` (the coordinator has run `between`, or raised
    // `stop`), the workers' `op`, `done`. `round_ns` and `stop` are
    // written before one of those barriers and read after it: the barrier
    // orders them, so Relaxed suffices.
    let start = Barrier::new(threads + 1);
    let done = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let round_ns = AtomicU64::new(0);
    let error: Mutex<Option<OpError>> = Mutex::new(None);
    let fail = |e: OpError| {
        let mut g = error.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert(e);
    };
    let failed = || error.lock().unwrap_or_else(|p| p.into_inner()).is_some();
    let (make, op, fail) = (&make, &op, &fail);
    let (start, done, stop, round_ns) = (&start, &done, &stop, &round_ns);
    let mut m = Measured::default();
    std::thread::scope(|scope| {
        for tid in 0..threads {
            let cpu = cpus[tid % cpus.len()];
            scope.spawn(move || {
                sys::pin_to_cpu(cpu);
                let mut state = make(tid).map_err(fail).ok();
                loop {
                    start.wait();
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Some(s) = state.as_mut() {
                        let t0 = Instant::now();
                        match op(s) {
                            Ok(()) => {
                                let ns = t0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
                                round_ns.fetch_max(ns, Ordering::Relaxed);
                            }
                            Err(e) => fail(e),
                        }
                    }
                    done.wait();
                }
            });
        }
        let mut rounds = 0u64;
        let mut warm = true;
        let mut last = Ok(());
        loop {
            if failed() || (!warm && rounds >= min_rounds && m.secs >= duration.as_secs_f64()) {
                break;
            }
            if let Err(e) = between() {
                last = Err(e);
                break;
            }
            start.wait();
            done.wait();
            let ns = round_ns.swap(0, Ordering::Relaxed);
            if warm {
                warm = false;
            } else {
                rounds += 1;
                m.secs += ns as f64 / 1e9;
            }
        }
        stop.store(true, Ordering::Relaxed);
        start.wait();
        m.ops = rounds * threads as u64;
        if let Err(e) = last {
            fail(e);
        }
    });
    if let Some(e) = error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(m)
}

/// Runs `work` once on a pinned thread with state from `make` (made there,
/// untimed) and returns its result and its duration in seconds.
pub fn timed_once<S, R, M, W>(make: M, work: W) -> OpResult<(R, f64)>
where
    M: FnOnce() -> OpResult<S> + Send,
    W: FnOnce(&mut S) -> OpResult<R> + Send,
    R: Send,
{
    let cpu = sys::allowed_cpus()[0];
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                sys::pin_to_cpu(cpu);
                let mut s = make()?;
                let t0 = Instant::now();
                let r = work(&mut s)?;
                let secs = t0.elapsed().as_secs_f64();
                drop(s);
                Ok((r, secs))
            })
            .join()
            .expect("bench thread panicked")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(threads: usize, intervals: usize) -> Spec {
        Spec {
            threads,
            batch: 16,
            intervals,
            warmup: Duration::from_millis(2),
            duration: Duration::from_millis(30),
        }
    }

    #[test]
    fn counts_every_thread_and_reports_intervals() {
        let calls = AtomicU64::new(0);
        let m = measure(&spec(2, 5), Ok, |_| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        assert!(m.ops > 0 && m.ops % 16 == 0);
        // Warm-up calls are not counted.
        assert!(calls.load(Ordering::Relaxed) > m.ops);
        // Each worker times its own window, which opens after the barrier.
        assert!(m.secs >= 0.02, "{}", m.secs);
        // Five intervals asked; a worker descheduled across a boundary (a
        // loaded CI machine) merges two, so fewer may come back, never more
        // than one partial extra.
        assert!(
            (1..=6).contains(&m.interval_rates.len()),
            "{:?}",
            m.interval_rates
        );
        assert!(m.interval_rates.iter().all(|r| r.is_finite() && *r > 0.0));
    }

    #[test]
    fn rounds_reset_before_each_round_and_count_every_worker() {
        let resets = AtomicU64::new(0);
        let calls = AtomicU64::new(0);
        // A duration every round exceeds: exactly min_rounds measured,
        // after the one warm-up round.
        let m = measure_rounds(
            2,
            4,
            Duration::from_nanos(1),
            |_| Ok(()),
            |_| {
                // Every worker of a round sees that round's reset.
                assert_eq!(
                    resets.load(Ordering::Relaxed),
                    calls.fetch_add(1, Ordering::Relaxed) / 2 + 1
                );
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            },
            || {
                resets.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(m.ops, 4 * 2);
        assert_eq!(resets.load(Ordering::Relaxed), 5);
        assert_eq!(calls.load(Ordering::Relaxed), 5 * 2);
        // Four rounds of at least 1 ms each were summed.
        assert!(m.secs >= 0.004, "{}", m.secs);
    }

    #[test]
    fn a_failing_reset_or_round_aborts_the_point() {
        let resets = AtomicU64::new(0);
        let err = measure_rounds(
            2,
            3,
            Duration::from_nanos(1),
            |_| Ok(()),
            |_| Ok(()),
            || {
                if resets.fetch_add(1, Ordering::Relaxed) == 2 {
                    Err(OpError::Unsupported("no reset".into()))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(err.unwrap_err(), OpError::Unsupported("no reset".into()));
        let calls = AtomicU64::new(0);
        let err = measure_rounds(
            2,
            3,
            Duration::from_nanos(1),
            |_| Ok(()),
            |_| {
                if calls.fetch_add(1, Ordering::Relaxed) == 3 {
                    Err(OpError::Failed("boom".into()))
                } else {
                    Ok(())
                }
            },
            || Ok(()),
        );
        assert_eq!(err.unwrap_err(), OpError::Failed("boom".into()));
        // Only the failing round ran to its end: no further round began.
        assert_eq!(calls.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_failing_operation_aborts_the_point() {
        let calls = AtomicU64::new(0);
        let err = measure(
            &spec(2, 0),
            |_| Ok(()),
            |_| {
                if calls.fetch_add(1, Ordering::Relaxed) == 100 {
                    Err(OpError::Failed("boom".into()))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(err, OpError::Failed("boom".into()));
        let err = measure(
            &spec(1, 0),
            |_| Err::<(), _>(OpError::Failed("mk".into())),
            |_| Ok(()),
        );
        assert_eq!(err.unwrap_err(), OpError::Failed("mk".into()));
    }

    #[test]
    fn background_runs_in_the_measured_window() {
        let bg = |ctl: &BgCtl<'_>| {
            ctl.start();
            // At least one op even if this thread is descheduled past the
            // whole window (a loaded CI machine): what is checked is that
            // the count reaches the result, not how many fit.
            let mut n = 0;
            loop {
                n += 1;
                std::hint::spin_loop();
                if ctl.stopped() {
                    break;
                }
            }
            Ok(n)
        };
        let m = measure_with(&spec(1, 0), |_| Ok(()), |_| Ok(()), Some(&bg)).unwrap();
        assert!(m.background_ops > 0);
        let early = |_: &BgCtl<'_>| Err(OpError::Failed("bg".into()));
        let err = measure_with(&spec(1, 0), |_| Ok(()), |_| Ok(()), Some(&early));
        assert_eq!(err.unwrap_err(), OpError::Failed("bg".into()));
    }

    #[test]
    fn timed_once_times_the_work_only() {
        // The setup sleeps far longer than any descheduling of the empty
        // work on a loaded machine: timing the setup would read >= 0.3.
        let ((), secs) = timed_once(
            || {
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            },
            |_| Ok(()),
        )
        .unwrap();
        assert!(secs < 0.15, "{secs}");
    }
}
