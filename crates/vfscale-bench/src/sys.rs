//! Host facts and knobs the bench needs: allowed CPUs and pinning, resident
//! memory, the machine description for reports, a UTC timestamp, and
//! dropping the kernel's page cache.

use serde::Serialize;
use std::sync::OnceLock;

/// The CPUs this process may run on (sched_getaffinity), at least one.
pub fn allowed_cpus() -> &'static [usize] {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    CPUS.get_or_init(|| {
        let cpus = thread_affinity();
        if cpus.is_empty() {
            (0..num_cpus()).collect()
        } else {
            cpus
        }
    })
}

/// The calling thread's CPU set now (empty if the call fails).
fn thread_affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: `set` is writable storage of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set we own, for in-range indices.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Online CPUs usable by this process.
pub fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pins the calling thread to `cpu`; failure (no permission, a cpuset
/// that changed) is ignored: pinning is an aid, not a requirement.
pub fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: CPU_SET writes inside the set for an in-range index; the
    // setaffinity call reads `set` of the size passed.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// How far apart the host put the first two allowed CPUs: the one-way
/// latency, in ns, of handing one cache line between them (two pinned
/// threads take turns bumping a shared counter, `round_trips` turns
/// each). On this project's VM it is bimodal — ~30–45 ns when the two
/// vCPUs share a cache, ~155–180 ns when the host places them far apart,
/// more when a vCPU is time-sliced — and every workload with a line both
/// threads write moves with it (docs/PERFORMANCE.md, "Noise"). None with
/// fewer than two allowed CPUs. Only the two spawned threads are pinned.
pub fn line_transfer_ns(round_trips: u64) -> Option<f64> {
    use std::sync::atomic::{AtomicU64, Ordering};

    #[repr(align(64))]
    struct Line(AtomicU64);

    /// Waits for the counter to reach `first`, `first + 2`, ... and bumps
    /// it each time, until both threads have had `round_trips` turns.
    fn take_turns(line: &Line, cpu: usize, first: u64, round_trips: u64) {
        pin_to_cpu(cpu);
        let mut want = first;
        while want < 2 * round_trips {
            // Acquire/Release: each turn's bump pairs with the other
            // thread's wait; the ordering is what makes the line move.
            while line.0.load(Ordering::Acquire) != want {
                core::hint::spin_loop();
            }
            line.0.store(want + 1, Ordering::Release);
            want += 2;
        }
    }

    let (&a, &b) = match allowed_cpus() {
        [a, b, ..] => (a, b),
        _ => return None,
    };
    let round_trips = round_trips.max(1);
    let line = Line(AtomicU64::new(0));
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| take_turns(&line, b, 1, round_trips));
        s.spawn(|| take_turns(&line, a, 0, round_trips));
    });
    Some(start.elapsed().as_nanos() as f64 / (2 * round_trips) as f64)
}

/// Resident set size in bytes (/proc/self/statm), after giving freed heap
/// memory back to the system so growth measures live objects.
pub fn resident_bytes() -> Option<u64> {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free heap memory.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// The machine a run happened on (the "machine" object of the JSON).
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub git_rev: String,
    pub date: String,
    /// Where the kernel target ran, when it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel_dir: Option<String>,
    /// `line_transfer_ns` just before the first workload and just after
    /// the last: which placement of the CPUs the run's 2-thread rows saw.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line_transfer_ns_before: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line_transfer_ns_after: Option<f64>,
}

impl Machine {
    pub fn detect() -> Machine {
        Machine {
            cpus: num_cpus(),
            cpu_model: cpu_model(),
            kernel: kernel_release(),
            git_rev: git_rev(),
            date: utc_now(),
            kernel_dir: None,
            line_transfer_ns_before: None,
            line_transfer_ns_after: None,
        }
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The vfscale revision: `VFSCALE_GIT_REV` at run time if set, else the one
/// recorded at build time; "+op-counters" follows it when the core was
/// built with its test instrumentation, which costs vfscale's rows ~1%
/// (cargo turns the feature on for every binary built in one invocation
/// with the core's tests or examples: its dev-dependency on itself).
pub fn git_rev() -> String {
    let rev = std::env::var("VFSCALE_GIT_REV")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| env!("VFSCALE_BUILD_GIT_REV").to_string());
    if vfscale::sync::opcount::ENABLED {
        rev + "+op-counters"
    } else {
        rev
    }
}

impl Machine {
    /// "CPU placement: one-way line transfer 31.6 ns before, 33.0 ns after
    /// the run", or None when it was not measured.
    pub fn placement(&self) -> Option<String> {
        let show = |v: Option<f64>| v.map_or("-".to_string(), |ns| format!("{ns:.1} ns"));
        (self.line_transfer_ns_before.is_some() || self.line_transfer_ns_after.is_some()).then(
            || {
                format!(
                    "CPU placement: one-way cache-line transfer between the first two CPUs {} before, {} after the run (this project's VM: ~30-45 ns near, ~155-180 ns far)",
                    show(self.line_transfer_ns_before),
                    show(self.line_transfer_ns_after)
                )
            },
        )
    }
}

/// Now, as "YYYY-MM-DDTHH:MM:SSZ".
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(secs)
}

/// Formats seconds since the epoch as an ISO-8601 UTC timestamp.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil-from-days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// CPU time of the calling thread, in seconds.
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Drops the kernel's clean page cache (writes 1 to
/// /proc/sys/vm/drop_caches): among it, every FUSE directory's cached
/// listing (FOPEN_CACHE_DIR keeps it in the directory's pages), so the
/// next readdir asks the server again. Dentries and inodes stay (that
/// would be 2): a readdir after it measures the listing, not the kernel
/// re-instantiating every child. Not allowed (not root, a read-only
/// /proc): `Unsupported`, saying why.
pub fn drop_page_cache() -> crate::target::OpResult<()> {
    std::fs::write("/proc/sys/vm/drop_caches", b"1").map_err(|e| {
        crate::target::OpError::Unsupported(format!(
            "cannot drop the kernel's page cache (/proc/sys/vm/drop_caches): {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn machine_facts_are_filled() {
        let m = Machine::detect();
        assert!(m.cpus >= 1);
        assert!(!m.kernel.is_empty() && !m.git_rev.is_empty());
        assert!(!allowed_cpus().is_empty());
        assert!(resident_bytes().unwrap() > 0);
    }

    #[test]
    fn line_transfer_is_measured_between_two_cpus() {
        let ns = line_transfer_ns(1_000);
        if allowed_cpus().len() < 2 {
            assert_eq!(ns, None, "one CPU: nothing to measure");
        } else {
            let ns = ns.expect("two CPUs");
            assert!(ns.is_finite() && ns > 0.0, "{ns}");
        }
        // The caller's own affinity is left alone.
        let before = allowed_cpus().to_vec();
        let _ = line_transfer_ns(10);
        assert_eq!(thread_affinity(), before);
    }
}
