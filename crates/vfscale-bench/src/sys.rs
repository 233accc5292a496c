//! Host facts and knobs the bench needs: allowed CPUs and pinning, resident
//! memory, the machine description for reports, a UTC timestamp, and
//! dropping the kernel's page cache.

use serde::Serialize;
use std::sync::OnceLock;

/// The CPUs this process may run on (sched_getaffinity), at least one.
pub fn allowed_cpus() -> &'static [usize] {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    CPUS.get_or_init(|| {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
        // SAFETY: `set` is writable storage of the size passed.
        let rc = unsafe {
            libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set)
        };
        let cpus: Vec<usize> = if rc == 0 {
            // SAFETY: CPU_ISSET reads the set we own, for in-range indices.
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect()
        } else {
            Vec::new()
        };
        if cpus.is_empty() {
            (0..num_cpus()).collect()
        } else {
            cpus
        }
    })
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
/// recorded at build time.
pub fn git_rev() -> String {
    std::env::var("VFSCALE_GIT_REV")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| env!("VFSCALE_BUILD_GIT_REV").to_string())
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
}
