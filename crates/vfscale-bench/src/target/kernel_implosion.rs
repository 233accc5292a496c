//! fd-implosion on the kernel (seed 002's program): forked processes each
//! open K objects (half AF_UNIX sockets, half regular files in the run
//! directory, each stat'ed), report ready through a pipe and sleep; the
//! parent SIGTERMs them all together and times until every one is reaped.
//!
//! The children run only raw syscalls on buffers built before `fork` (the
//! bench is multi-threaded: a child must not allocate or take locks).
//! RLIMIT_NOFILE is raised in the parent (children inherit it) to K plus
//! slack when allowed; otherwise K is capped by the hard limit and the cap
//! is reported. The parent's limit is restored afterwards.

use super::Implosion;
use super::{OpError, OpResult};
use std::ffi::CString;
use std::time::Instant;

/// Descriptors a child needs besides its objects (stdio, the pipe, ...).
const SLACK: usize = 64;

fn err(what: &str) -> OpError {
    OpError::Failed(format!(
        "fd-implosion (kernel): {what}: {}",
        std::io::Error::last_os_error()
    ))
}

/// Raises RLIMIT_NOFILE so a process can hold `objects` descriptors;
/// returns how many it may hold, why fewer if so, and the old limit.
fn raise_nofile(objects: usize) -> OpResult<(usize, Option<String>, libc::rlimit)> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is writable rlimit storage.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) } != 0 {
        return Err(err("getrlimit"));
    }
    let want = (objects + SLACK) as libc::rlim_t;
    let both = libc::rlimit {
        rlim_cur: want.max(old.rlim_cur),
        rlim_max: want.max(old.rlim_max),
    };
    // SAFETY: plain syscall on a valid struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &both) } == 0 {
        return Ok((objects, None, old));
    }
    // Not allowed to raise the hard limit: use all of it.
    let soft = libc::rlimit {
        rlim_cur: old.rlim_max,
        rlim_max: old.rlim_max,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &soft) } != 0 {
        return Err(err("setrlimit"));
    }
    let fit = (old.rlim_max as usize).saturating_sub(SLACK).max(2);
    Ok((
        objects.min(fit),
        Some(format!("RLIMIT_NOFILE hard limit {}", old.rlim_max)),
        old,
    ))
}

/// The child: build the objects, say 'R' (or 'E' on failure), sleep until
/// killed. Only async-signal-safe calls on prepared buffers.
fn child(dirfd: libc::c_int, paths: &[CString], sockets: usize, ready: libc::c_int) -> ! {
    // SAFETY (whole body): raw syscalls on NUL-terminated prepared paths and
    // stack buffers; `_exit` never returns.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        let mut st = core::mem::MaybeUninit::<libc::stat>::uninit();
        let mut ok = true;
        for p in paths {
            let fd = libc::openat(dirfd, p.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
            if fd < 0 || libc::fstatat(dirfd, p.as_ptr(), st.as_mut_ptr(), 0) != 0 {
                ok = false;
                break;
            }
        }
        for _ in 0..sockets {
            if !ok || libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) < 0 {
                ok = false;
                break;
            }
        }
        let b = if ok { b'R' } else { b'E' };
        libc::write(ready, &b as *const u8 as *const libc::c_void, 1);
        if !ok {
            libc::_exit(1);
        }
        loop {
            libc::pause();
        }
    }
}

pub(super) fn implosion(dirfd: libc::c_int, procs: usize, objects: usize) -> OpResult<Implosion> {
    let (per_proc, capped_by, old) = raise_nofile(objects)?;
    let files = per_proc.div_ceil(2);
    let sockets = per_proc - files;
    let names: Vec<Vec<CString>> = (0..procs)
        .map(|i| {
            (0..files)
                .map(|j| CString::new(format!("imp{i}_{j}")).expect("no NUL"))
                .collect()
        })
        .collect();
    let mut pipe = [-1; 2];
    // SAFETY: `pipe` is a writable pair.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(err("pipe2"));
    }
    let mut pids = Vec::with_capacity(procs);
    let mut result = Ok(());
    for paths in &names {
        // SAFETY: the child runs only `child`, which never returns.
        match unsafe { libc::fork() } {
            0 => child(dirfd, paths, sockets, pipe[1]),
            -1 => {
                result = Err(err("fork"));
                break;
            }
            pid => pids.push(pid),
        }
    }
    // SAFETY: our copy of the write end; children keep theirs.
    unsafe { libc::close(pipe[1]) };
    for _ in 0..pids.len() {
        let mut b = 0u8;
        // SAFETY: one byte into `b`.
        let n = unsafe { libc::read(pipe[0], &mut b as *mut u8 as *mut libc::c_void, 1) };
        if n != 1 || b != b'R' {
            result = result.and(Err(OpError::Failed(
                "fd-implosion (kernel): a child could not open its objects".into(),
            )));
            break;
        }
    }
    // SAFETY: our read end, closed once.
    unsafe { libc::close(pipe[0]) };
    let t0 = Instant::now();
    for &pid in &pids {
        // SAFETY: our child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    for &pid in &pids {
        let mut status = 0;
        // SAFETY: our child; `status` is writable.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    let secs = t0.elapsed().as_secs_f64();
    // SAFETY: restoring the limit read before (lowering is always allowed).
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    for p in names.iter().flatten() {
        // SAFETY: NUL-terminated; a missing file is fine.
        unsafe { libc::unlinkat(dirfd, p.as_ptr(), 0) };
    }
    result?;
    Ok(Implosion {
        objects: (pids.len() * per_proc) as u64,
        secs: secs.max(1e-9),
        per_proc,
        capped_by,
        exit_cpu_secs_max: None,
    })
}
