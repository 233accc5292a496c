//! How much it costs this thread to take over a cache line that another
//! CPU just wrote: measured by every spinning waiter of the core's locks
//! (lock.rs `spin_then`), read by the directory lock to decide whether a contended name change backs off
//! (lock.rs).
//!
//! Why measure: the host places this project's two vCPUs either near each
//! other (a line moves between them in ~25–45 ns) or far apart (~155–215
//! ns), and the placement flips within minutes (docs/PERFORMANCE.md,
//! "Noise"). Backing off when the directory lock is busy lets its holder
//! run several name changes in a row with the lock's, the index's and the
//! directory's lines in its own cache: twice the throughput of one shared
//! directory at 2 threads when lines are far, but a quarter less when they
//! are near, where handing the lock over every time is cheap and the two
//! threads overlap their work outside it (create-unlink, session 11). No
//! fixed setting is right for both, so the lock asks what a hand-over
//! costs right now.
//!
//! How: a spinning waiter (for the directory lock, the head of its
//! writers' queue) times, with the processor's time-stamp counter, the single load of the lock word that
//! first finds the lock released after finding it held. The holder's
//! release took the line away from the waiter, so that load is one line
//! transfer from the releasing CPU. Each thread keeps its own moving
//! average (no shared line is written to keep it); a sample is clipped so
//! that one preemption between the two stamps cannot flip the decision.
//!
//! Invariants: nothing here takes part in any protocol. A wrong estimate
//! changes only how long a contended writer waits before queueing, never
//! whether the lock excludes. Under loom there is no clock: every
//! hand-over counts as far and samples are ignored.

/// A hand-over at least this slow is "far": contended name changes back
/// off. The queue head's estimates read 39–49 ns in this VM's near
/// placement (one-way ~25–45 ns by `examples/line_transfer.rs`) and
/// ~150–170 ns in the far one (~155–215 ns); the VM also spends stretches
/// at ~60–85 ns one-way, where no run has been measured on purpose. The
/// threshold sits low, just above the near estimates, because the backoff
/// keeps two threads at ~87% of one thread's rate wherever they are,
/// while handing over at once wins only when hand-overs are cheap (a
/// model, and one full run at an intermediate placement that fell to
/// 1.48 M/s: docs/PERFORMANCE.md, session 11). With 60 instead of 100 the
/// near placement read the same (3.09–3.44 M/s, 14 alternations).
const FAR_NS: u32 = 70;

/// Samples above this are clipped (a preemption, an interrupt).
#[cfg(not(loom))]
const CLIP_NS: u32 = 1_000;

/// Weight of a new sample in the moving average: 1 / 2^`AVERAGE_SHIFT`.
#[cfg(not(loom))]
const AVERAGE_SHIFT: u32 = 3;

/// A point in time for [`note_handoff`], in time-stamp-counter ticks.
#[derive(Clone, Copy)]
pub struct Stamp(u64);

/// The time now. On x86-64 the counter read is fenced on both sides, so
/// the load timed between two stamps can neither start before the first
/// nor finish after the second (Linux's `rdtsc_ordered`).
#[inline]
pub fn stamp() -> Stamp {
    Stamp(ticks())
}

#[cfg(all(target_arch = "x86_64", not(loom)))]
#[inline]
fn ticks() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: LFENCE and RDTSC exist on every x86-64 processor (SSE2 is
    // part of the baseline) and touch no memory.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

#[cfg(all(not(target_arch = "x86_64"), not(loom)))]
#[inline]
fn ticks() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

#[cfg(loom)]
#[inline]
fn ticks() -> u64 {
    0
}

/// Counter ticks per microsecond, measured once against the system clock
/// (over ~20 µs; the time-stamp counter runs at a fixed rate on the
/// processors this runs on). 1000 where ticks are nanoseconds already.
#[cfg(not(loom))]
fn ticks_per_us() -> u64 {
    static RATE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *RATE.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1000;
        }
        let (t0, c0) = (std::time::Instant::now(), ticks());
        while t0.elapsed() < std::time::Duration::from_micros(20) {
            core::hint::spin_loop();
        }
        let (ns, c) = (t0.elapsed().as_nanos() as u64, ticks() - c0);
        (c * 1000 / ns.max(1)).max(1)
    })
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's moving average of hand-over cost, in ns. Starts
    /// "far", the safer guess: backing off costs a near pair a quarter of
    /// its rate, not backing off costs a far pair half of it.
    static AVERAGE_NS: core::cell::Cell<u32> = const { core::cell::Cell::new(FAR_NS * 2) };
}

/// Records one hand-over: the load timed from `started` to now moved the
/// lock's line here from the CPU that released it.
#[inline]
pub fn note_handoff(started: Stamp) {
    #[cfg(not(loom))]
    {
        let ticks = ticks().saturating_sub(started.0);
        let ns = (ticks * 1000 / ticks_per_us()).min(CLIP_NS as u64) as u32;
        AVERAGE_NS.with(|avg| {
            let old = avg.get();
            // old + (ns - old) / 2^SHIFT, in integers that cannot overflow.
            avg.set(old - (old >> AVERAGE_SHIFT) + (ns >> AVERAGE_SHIFT));
        });
    }
    // Under loom there is no clock: the stamp is dropped unread.
    #[cfg(loom)]
    let _ = started.0;
}

/// Whether hand-overs of a line between this thread's CPU and others are
/// currently slow (this project's far placement).
#[inline]
pub fn handoff_is_far() -> bool {
    #[cfg(not(loom))]
    return AVERAGE_NS.with(|avg| avg.get()) >= FAR_NS;
    #[cfg(loom)]
    true
}

/// This thread's current estimate, in ns (`examples/createbench.rs`
/// prints it; the unit test reads it).
pub fn handoff_estimate_ns() -> u32 {
    #[cfg(not(loom))]
    return AVERAGE_NS.with(|avg| avg.get());
    #[cfg(loom)]
    (FAR_NS * 2)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A load of a line this thread owns is fast; the estimate follows
    /// cheap hand-overs down to "near", and a run of slow ones (clipped)
    /// back up to "far".
    #[test]
    fn estimate_follows_samples() {
        std::thread::spawn(|| {
            assert!(handoff_is_far(), "starts far");
            let x = std::sync::atomic::AtomicU64::new(1);
            // A preemption between two stamps is clipped but still raises
            // the average; on a busy machine give it a few rounds.
            for _round in 0..20 {
                for _ in 0..64 {
                    let s = stamp();
                    std::hint::black_box(x.load(std::sync::atomic::Ordering::Relaxed));
                    note_handoff(s);
                }
                if !handoff_is_far() {
                    break;
                }
            }
            assert!(
                !handoff_is_far(),
                "local loads measured {} ns",
                handoff_estimate_ns()
            );
            for _ in 0..64 {
                let s = stamp();
                std::thread::sleep(std::time::Duration::from_micros(50));
                note_handoff(s);
            }
            assert!(handoff_is_far());
            assert!(handoff_estimate_ns() <= CLIP_NS, "samples are clipped");
        })
        .join()
        .unwrap();
    }
}
