//! `KernelProcess`: the process API as real Linux syscalls.
//!
//! Each `KernelProcess` is one dedicated thread that, before serving calls,
//! unshares its fd table and fs_struct (`unshare(CLONE_FILES | CLONE_FS)`,
//! both allowed in a multi-threaded process), closes every inherited
//! descriptor (vfscale's fd table starts empty), starts at `/` (the private
//! tmpfs its creator pivoted into, see `sandbox`), sets umask 022 and finally takes its credentials with the *raw*
//! `setgroups`/`setresgid`/`setresuid` syscalls. Those are per-thread on
//! Linux (glibc's wrappers broadcast them to every thread of the process;
//! the raw syscalls do not), so one test process can hold root and non-root
//! "processes" side by side and replay steps in lock-step with vfscale.
//!
//! Why threads and not forked children: a forked child would need the ops
//! and outcomes serialised over a pipe, and a `fork()` of a multi-threaded
//! test binary may only call async-signal-safe functions; a thread runs the
//! same generic `vfscale_model::ops::apply` as vfscale does, with no
//! encoding layer in between. `fork()` of a `KernelProcess` is a new thread
//! spawned *by its worker* (so it starts sharing that worker's fd table,
//! fs_struct and credentials) which then unshares both tables: a copy, as
//! fork gives.
//!
//! `fd_path` is the one call that runs elsewhere: `readlink` of
//! `/proc/PID/task/TID/fd/N` by a reader thread that shares the worker's
//! fs_struct but not its fd table (see `spawn_proc_reader`).
//!
//! Invariants:
//! - every other syscall of a `KernelProcess` runs on its own worker
//!   thread, one at a time, in the order the calls were made (a channel of
//!   jobs); the reader runs only while the worker waits for the next job;
//! - errno is read on the worker thread right after the failing syscall;
//! - the worker thread exits (closing its private fd table) when the
//!   `KernelProcess` is dropped or `exit`ed.

use std::ffi::CString;
use std::sync::mpsc;
use std::thread;
use vfscale::abi::*;
use vfscale::{Cred, Errno, Fd, ProcessApi};

type Job = Box<dyn FnOnce() + Send>;

/// One simulated process on the real kernel.
pub struct KernelProcess {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<thread::JoinHandle<()>>,
    /// The worker's thread id (for /proc/PID/task/TID/fd).
    tid: i32,
    /// The `/proc` reader of `fd_path` (see `ProcReader`), if `/proc` was
    /// reachable.
    proc_reader: Option<mpsc::Sender<Job>>,
}

/// A descriptor of the host's `/proc`, opened once in the test process's
/// fd table before any thread moved into a private tmpfs (`sandbox`).
static HOST_PROC: std::sync::OnceLock<i32> = std::sync::OnceLock::new();

/// Opens the host's `/proc` for `fd_path` (call before `pivot_root`, from
/// the test process's shared fd table); later calls are no-ops.
pub fn open_host_proc() {
    HOST_PROC.get_or_init(|| {
        // SAFETY: a valid path; the descriptor is kept for the process's life.
        unsafe {
            libc::open(
                c"/proc".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        }
    });
}

/// `fd_path` reads `/proc/PID/task/TID/fd/N`, but the worker's namespace is
/// a bare tmpfs and its fd table must hold exactly the sequence's
/// descriptors. So each worker, right after unsharing its tables and
/// before closing what it inherited (which includes `HOST_PROC`), spawns a
/// reader thread that shares its fs_struct (root and cwd: readlink of an fd
/// link formats the path against the *reader's* root, as the process
/// itself would see it) but unshares the fd table and keeps only
/// `HOST_PROC`. The reader keeps root's credentials (ptrace access to the
/// worker's fd table).
fn spawn_proc_reader() -> Option<mpsc::Sender<Job>> {
    let proc_fd = *HOST_PROC.get()?;
    if proc_fd < 0 {
        return None;
    }
    let (jobs, queue) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("kernel-proc-reader".into())
        .spawn(move || {
            // SAFETY: unshare/close_range affect this thread's own table.
            let ok = unsafe { libc::unshare(libc::CLONE_FILES) } == 0
                && (proc_fd == 0
                    || unsafe {
                        libc::syscall(libc::SYS_close_range, 0u32, proc_fd as u32 - 1, 0u32)
                    } == 0)
                && unsafe {
                    libc::syscall(libc::SYS_close_range, proc_fd as u32 + 1, u32::MAX, 0u32)
                } == 0;
            let _ = ready_tx.send(ok);
            if ok {
                while let Ok(job) = queue.recv() {
                    job();
                }
            }
        })
        .ok()?;
    ready_rx.recv().ok()?.then_some(jobs)
}

fn errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

fn sys(rc: libc::c_long) -> SysResult<i64> {
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc)
    }
}

fn unit(rc: libc::c_long) -> SysResult<()> {
    sys(rc).map(|_| ())
}

/// A path for the kernel. A NUL byte inside is vfscale's documented EINVAL
/// (the C string would end there); tests drop such ops.
fn cpath(p: &[u8]) -> SysResult<CString> {
    CString::new(p).map_err(|_| Errno::EINVAL)
}

fn setup_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Gives the calling thread private copies of its fd table and fs_struct.
fn unshare_tables() -> Result<(), String> {
    // SAFETY: unshare of CLONE_FILES|CLONE_FS affects only this thread.
    if unsafe { libc::unshare(libc::CLONE_FILES | libc::CLONE_FS) } != 0 {
        return Err(setup_err("unshare(CLONE_FILES|CLONE_FS)"));
    }
    Ok(())
}

/// `fs.protected_hardlinks` (a sysctl, on in most distributions) makes
/// linkat EPERM for a source the caller neither owns nor may read and
/// write; vfscale does not model it (docs/COMPATIBILITY.md). A non-root
/// worker therefore keeps CAP_FOWNER in its *permitted* set only; when its
/// linkat fails with EPERM, a helper thread (spawned by the worker, so
/// sharing its fd table and fs_struct, with its own copy of the
/// credentials) raises CAP_FOWNER into its effective set and retries. In
/// linkat, CAP_FOWNER only lifts the protected_hardlinks check (directory
/// write/search checks use CAP_DAC_OVERRIDE, which stays off), so the retry
/// gives the plain POSIX link rules vfscale applies, without touching the
/// host-wide sysctl. The worker's own cred struct never changes: linkat
/// AT_EMPTY_PATH compares the opener's cred with the caller's *by pointer*.
/// Left over: linkat(fd, "", AT_EMPTY_PATH) is not retried (the helper
/// could not pass that pointer check), so a protected source named by an
/// fd alone still reads EPERM on the kernel side.
const CAP_FOWNER: u32 = 3;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

thread_local! {
    /// Whether this worker holds CAP_FOWNER in its permitted set (non-root).
    static LINK_CAP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets this thread's capability sets (the low 32 capabilities).
fn capset(effective: u32, permitted: u32) -> Result<(), String> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [
        CapData {
            effective,
            permitted,
            inheritable: 0,
        },
        CapData::default(),
    ];
    // SAFETY: a v3 header and its two data words; pid 0 is this thread.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(setup_err("capset"));
    }
    Ok(())
}

/// Gives this thread a fresh copy of its credentials (capset with the
/// current sets commits a new cred struct), as fork's copy_creds does.
fn copy_cred() -> Result<(), String> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: a v3 header and room for its two data words.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(setup_err("capget"));
    }
    // SAFETY: as above; setting the sets just read is always allowed.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(setup_err("capset"));
    }
    Ok(())
}

/// Sets this thread's credentials (raw syscalls: per-thread).
fn set_thread_creds(cred: &Cred) -> Result<(), String> {
    let non_root = cred.euid != 0;
    if non_root {
        // Keep the permitted set across the uid change (per-thread bit).
        // SAFETY: plain integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) } != 0 {
            return Err(setup_err("prctl(PR_SET_KEEPCAPS)"));
        }
    }
    let groups: Vec<libc::gid_t> = cred.groups.clone();
    // SAFETY: `groups` is a valid array of `groups.len()` gids.
    let rc = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    if rc != 0 {
        return Err(setup_err("setgroups"));
    }
    // SAFETY: plain integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_setresgid, cred.rgid, cred.egid, cred.egid) };
    if rc != 0 {
        return Err(setup_err("setresgid"));
    }
    // SAFETY: plain integer argument; setfsgid returns the previous value.
    unsafe { libc::syscall(libc::SYS_setfsgid, cred.fsgid) };
    // SAFETY: plain integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_setresuid, cred.ruid, cred.euid, cred.euid) };
    if rc != 0 {
        return Err(setup_err("setresuid"));
    }
    // SAFETY: plain integer argument.
    unsafe { libc::syscall(libc::SYS_setfsuid, cred.fsuid) };
    if non_root {
        capset(0, 1 << CAP_FOWNER)?;
        LINK_CAP.with(|c| c.set(true));
    }
    Ok(())
}

impl KernelProcess {
    /// A vectored read on the kernel's thread: `call` gets the iovecs of
    /// buffers as long as `bufs` and returns the syscall's result; what it
    /// read is copied back.
    fn read_vectored(
        &self,
        bufs: &mut [&mut [u8]],
        call: impl FnOnce(*const libc::iovec, usize) -> i64 + Send + 'static,
    ) -> SysResult<usize> {
        let lens: Vec<usize> = bufs.iter().map(|b| b.len()).collect();
        let (r, data) = self.call(move || {
            let mut owned: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
            let iov: Vec<libc::iovec> = owned
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_ptr().cast(),
                    iov_len: b.len(),
                })
                .collect();
            (sys(call(iov.as_ptr(), iov.len())), owned)
        });
        let n = r? as usize;
        let mut left = n;
        for (dst, src) in bufs.iter_mut().zip(&data) {
            let k = left.min(dst.len());
            dst[..k].copy_from_slice(&src[..k]);
            left -= k;
        }
        Ok(n)
    }

    /// A call that takes up to two loff_t pointers (copy_file_range,
    /// splice, sendfile): a given offset is passed by pointer (NULL when
    /// absent) and what the kernel left there is written back.
    fn with_offsets(
        &self,
        first: Option<&mut i64>,
        second: Option<&mut i64>,
        call: impl FnOnce(*mut i64, *mut i64) -> libc::c_long + Send + 'static,
    ) -> SysResult<usize> {
        let (given_a, given_b) = (first.as_deref().copied(), second.as_deref().copied());
        let (r, a, b) = self.call(move || {
            let (mut a, mut b) = (given_a.unwrap_or(0), given_b.unwrap_or(0));
            let pa: *mut i64 = if given_a.is_some() {
                &mut a
            } else {
                core::ptr::null_mut()
            };
            let pb: *mut i64 = if given_b.is_some() {
                &mut b
            } else {
                core::ptr::null_mut()
            };
            (sys(call(pa, pb)), a, b)
        });
        if let Some(o) = first {
            *o = a;
        }
        if let Some(o) = second {
            *o = b;
        }
        r.map(|n| n as usize)
    }

    /// A vectored write on the kernel's thread (as `read_vectored`).
    fn write_vectored(
        &self,
        bufs: &[&[u8]],
        call: impl FnOnce(*const libc::iovec, usize) -> i64 + Send + 'static,
    ) -> SysResult<usize> {
        let owned: Vec<Vec<u8>> = bufs.iter().map(|b| b.to_vec()).collect();
        self.call(move || {
            let iov: Vec<libc::iovec> = owned
                .iter()
                .map(|b| libc::iovec {
                    iov_base: b.as_ptr() as *mut _,
                    iov_len: b.len(),
                })
                .collect();
            sys(call(iov.as_ptr(), iov.len())).map(|n| n as usize)
        })
    }

    /// One process per credential of the random sequences' scenario
    /// (`vfscale_model::ops::scenario_creds`), as `new` makes them.
    pub fn scenario() -> Result<Vec<KernelProcess>, String> {
        vfscale_model::ops::scenario_creds()
            .iter()
            .map(KernelProcess::new)
            .collect()
    }

    /// A process with the creating thread's root (see `sandbox`), cwd `/`,
    /// an empty fd table, umask 022 and `cred`. Call it on the thread that
    /// entered the private tmpfs.
    pub fn new(cred: &Cred) -> Result<KernelProcess, String> {
        let cred = cred.clone();
        Self::start(move || {
            unshare_tables()?;
            let reader = spawn_proc_reader();
            // SAFETY: closes descriptors of this thread's private table only.
            if unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) } != 0 {
                return Err(setup_err("close_range"));
            }
            // SAFETY: a valid NUL-terminated path.
            if unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
                return Err(setup_err("chdir /"));
            }
            // SAFETY: umask has no preconditions (this thread's fs_struct).
            unsafe { libc::umask(0o022) };
            set_thread_creds(&cred)?;
            Ok(reader)
        })
    }

    fn start(
        setup: impl FnOnce() -> Result<Option<mpsc::Sender<Job>>, String> + Send + 'static,
    ) -> Result<KernelProcess, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = thread::Builder::new()
            .name("kernel-process".into())
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                let r = setup().map(|reader| (tid, reader));
                let ok = r.is_ok();
                let _ = ready_tx.send(r);
                if ok {
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                }
            })
            .map_err(|e| format!("spawn: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok((tid, proc_reader))) => Ok(KernelProcess {
                jobs: Some(jobs),
                thread: Some(thread),
                tid,
                proc_reader,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err("the worker thread died during setup".into())
            }
        }
    }

    /// Runs `f` on the worker thread and returns its result.
    fn call<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .as_ref()
            .expect("live until drop")
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .expect("the worker thread is alive");
        rx.recv().expect("the worker thread answered")
    }
}

impl Drop for KernelProcess {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            // pthread_join returns once the kernel cleared the thread's tid
            // (exit_mm), before the exiting thread closes its descriptor
            // table (exit_files) and drops its cwd and root (exit_fs): a
            // process's exit is not over until the task is gone, or the
            // next step may still find its sockets bound and its mounts
            // busy (a 20,000-case run saw a closed listener's EPROTOTYPE).
            let start = std::time::Instant::now();
            // SAFETY: tgkill with signal 0 only checks that the thread
            // exists.
            while unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), self.tid, 0) } == 0
                && start.elapsed() < std::time::Duration::from_secs(1)
            {
                std::thread::yield_now();
            }
        }
    }
}

fn stat_from(s: &libc::stat) -> Stat {
    Stat {
        dev: s.st_dev,
        ino: s.st_ino,
        mode: s.st_mode,
        nlink: s.st_nlink as u32,
        uid: s.st_uid,
        gid: s.st_gid,
        rdev: s.st_rdev,
        size: s.st_size,
        blksize: s.st_blksize,
        blocks: s.st_blocks,
        atime: Timespec::new(s.st_atime, s.st_atime_nsec),
        mtime: Timespec::new(s.st_mtime, s.st_mtime_nsec),
        ctime: Timespec::new(s.st_ctime, s.st_ctime_nsec),
    }
}

fn ts(t: &libc::statx_timestamp) -> Timespec {
    Timespec::new(t.tv_sec, t.tv_nsec as i64)
}

fn statx_from(s: &libc::statx) -> Statx {
    Statx {
        mask: s.stx_mask,
        blksize: s.stx_blksize,
        nlink: s.stx_nlink,
        uid: s.stx_uid,
        gid: s.stx_gid,
        mode: s.stx_mode,
        ino: s.stx_ino,
        size: s.stx_size,
        blocks: s.stx_blocks,
        atime: ts(&s.stx_atime),
        btime: ts(&s.stx_btime),
        ctime: ts(&s.stx_ctime),
        mtime: ts(&s.stx_mtime),
        rdev_major: s.stx_rdev_major,
        rdev_minor: s.stx_rdev_minor,
        dev_major: s.stx_dev_major,
        dev_minor: s.stx_dev_minor,
        attributes: s.stx_attributes,
        attributes_mask: s.stx_attributes_mask,
    }
}

/// The kernel's `struct statfs` on 64-bit Linux: libc's keeps `f_flags`
/// private.
#[repr(C)]
#[derive(Default)]
struct KernelStatfs {
    f_type: i64,
    f_bsize: i64,
    f_blocks: u64,
    f_bfree: u64,
    f_bavail: u64,
    f_files: u64,
    f_ffree: u64,
    f_fsid: [i32; 2],
    f_namelen: i64,
    f_frsize: i64,
    f_flags: i64,
    f_spare: [i64; 4],
}

const _: () = assert!(core::mem::size_of::<KernelStatfs>() == core::mem::size_of::<libc::statfs>());

fn statfs_from(s: &KernelStatfs) -> Statfs {
    Statfs {
        f_type: s.f_type,
        f_bsize: s.f_bsize,
        f_blocks: s.f_blocks,
        f_bfree: s.f_bfree,
        f_bavail: s.f_bavail,
        f_files: s.f_files,
        f_ffree: s.f_ffree,
        f_fsid: s.f_fsid,
        f_namelen: s.f_namelen,
        f_frsize: s.f_frsize,
        f_flags: s.f_flags,
    }
}

fn times_arg(times: &Option<[Timespec; 2]>) -> Option<[libc::timespec; 2]> {
    times.map(|t| {
        t.map(|x| libc::timespec {
            tv_sec: x.sec,
            tv_nsec: x.nsec,
        })
    })
}

fn utimensat_raw(
    dirfd: Fd,
    path: Option<&CString>,
    times: &Option<[Timespec; 2]>,
    flags: i32,
) -> SysResult<()> {
    let t = times_arg(times);
    let tp = t.as_ref().map_or(core::ptr::null(), |a| a.as_ptr());
    let pp = path.map_or(core::ptr::null(), |p| p.as_ptr());
    // SAFETY: `pp` is NULL or a valid C string; `tp` is NULL or two timespecs.
    unit(unsafe { libc::syscall(libc::SYS_utimensat, dirfd, pp, tp, flags) })
}

/// Where a kernel-side xattr call finds its inode.
enum XattrTarget {
    /// A path; `true` follows a final symlink.
    Path(CString, bool),
    Fd(Fd),
}

impl KernelProcess {
    fn set_xattr(&self, at: XattrTarget, name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        let n = cpath(name)?;
        let v = value.to_vec();
        self.call(move || {
            let (np, vp, vl) = (n.as_ptr(), v.as_ptr(), v.len());
            // SAFETY (all arms): valid C strings and a readable value buffer.
            unit(match &at {
                XattrTarget::Path(p, true) => unsafe {
                    libc::syscall(libc::SYS_setxattr, p.as_ptr(), np, vp, vl, flags)
                },
                XattrTarget::Path(p, false) => unsafe {
                    libc::syscall(libc::SYS_lsetxattr, p.as_ptr(), np, vp, vl, flags)
                },
                XattrTarget::Fd(fd) => unsafe {
                    libc::syscall(libc::SYS_fsetxattr, *fd, np, vp, vl, flags)
                },
            })
        })
    }

    /// getxattr (`name` given) or listxattr into `buf`.
    fn get_xattr(&self, at: XattrTarget, name: Option<&[u8]>, buf: &mut [u8]) -> SysResult<usize> {
        let n = name.map(cpath).transpose()?;
        let len = buf.len();
        let (r, data) = self.call(move || {
            let mut b = vec![0u8; len];
            let bp = b.as_mut_ptr();
            // SAFETY (all arms): valid C strings and a writable buffer of
            // `len` bytes.
            let rc = match (&at, &n) {
                (XattrTarget::Path(p, true), Some(n)) => unsafe {
                    libc::syscall(libc::SYS_getxattr, p.as_ptr(), n.as_ptr(), bp, len)
                },
                (XattrTarget::Path(p, false), Some(n)) => unsafe {
                    libc::syscall(libc::SYS_lgetxattr, p.as_ptr(), n.as_ptr(), bp, len)
                },
                (XattrTarget::Fd(fd), Some(n)) => unsafe {
                    libc::syscall(libc::SYS_fgetxattr, *fd, n.as_ptr(), bp, len)
                },
                (XattrTarget::Path(p, true), None) => unsafe {
                    libc::syscall(libc::SYS_listxattr, p.as_ptr(), bp, len)
                },
                (XattrTarget::Path(p, false), None) => unsafe {
                    libc::syscall(libc::SYS_llistxattr, p.as_ptr(), bp, len)
                },
                (XattrTarget::Fd(fd), None) => unsafe {
                    libc::syscall(libc::SYS_flistxattr, *fd, bp, len)
                },
            };
            (sys(rc), b)
        });
        let n = r? as usize;
        let k = n.min(buf.len());
        buf[..k].copy_from_slice(&data[..k]);
        Ok(n)
    }

    fn remove_xattr(&self, at: XattrTarget, name: &[u8]) -> SysResult<()> {
        let n = cpath(name)?;
        self.call(move || {
            // SAFETY (all arms): valid C strings.
            unit(match &at {
                XattrTarget::Path(p, true) => unsafe {
                    libc::syscall(libc::SYS_removexattr, p.as_ptr(), n.as_ptr())
                },
                XattrTarget::Path(p, false) => unsafe {
                    libc::syscall(libc::SYS_lremovexattr, p.as_ptr(), n.as_ptr())
                },
                XattrTarget::Fd(fd) => unsafe {
                    libc::syscall(libc::SYS_fremovexattr, *fd, n.as_ptr())
                },
            })
        })
    }
}

impl ProcessApi for KernelProcess {
    fn openat(&self, dirfd: Fd, path: &[u8], flags: i32, mode: u32) -> SysResult<Fd> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_openat, dirfd, p.as_ptr(), flags, mode) })
                .map(|n| n as Fd)
        })
    }
    /// Asked again while it answers EAGAIN (at most 50 times): Linux
    /// answers EAGAIN to a scoped walk through ".." and to a cached walk
    /// whenever any mount or rename on the whole host raced it (the global
    /// mount and rename seqcounts; its manual page tells callers to expect
    /// that), and the differential tests mount all the time; vfscale
    /// retries such races inside. A deterministic EAGAIN (RESOLVE_CACHED
    /// of what is not cached) stays one.
    fn openat2(&self, dirfd: Fd, path: &[u8], how: &OpenHow) -> SysResult<Fd> {
        let p = cpath(path)?;
        let how = *how;
        self.call(move || {
            let once = || {
                // SAFETY: `p` is a valid C string; openat2 reads `how`,
                // whose size is given.
                sys(unsafe {
                    libc::syscall(
                        libc::SYS_openat2,
                        dirfd,
                        p.as_ptr(),
                        &how as *const OpenHow,
                        core::mem::size_of::<OpenHow>(),
                    )
                })
                .map(|n| n as Fd)
            };
            let mut r = once();
            for _ in 0..50 {
                if r != Err(Errno::EAGAIN) {
                    break;
                }
                r = once();
            }
            r
        })
    }
    fn close(&self, fd: Fd) -> SysResult<()> {
        // SAFETY: closes a descriptor of the worker's private table.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_close, fd) }))
    }
    fn close_range(&self, first: u32, last: u32, flags: u32) -> SysResult<()> {
        // SAFETY: as close.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) }))
    }
    fn dup(&self, fd: Fd) -> SysResult<Fd> {
        // SAFETY: plain integer argument.
        self.call(move || sys(unsafe { libc::syscall(libc::SYS_dup, fd) }).map(|n| n as Fd))
    }
    fn dup2(&self, oldfd: Fd, newfd: Fd) -> SysResult<Fd> {
        // SAFETY: plain integer arguments (glibc's dup2: the x86-64 syscall
        // or dup3 plus the oldfd == newfd check elsewhere).
        self.call(move || sys(unsafe { libc::dup2(oldfd, newfd) } as libc::c_long).map(|n| n as Fd))
    }
    fn dup3(&self, oldfd: Fd, newfd: Fd, flags: i32) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            sys(unsafe { libc::syscall(libc::SYS_dup3, oldfd, newfd, flags) }).map(|n| n as Fd)
        })
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        let len = buf.len();
        let (r, data) = self.call(move || {
            let mut b = vec![0u8; len];
            // SAFETY: `b` is writable for `len` bytes.
            let r = sys(unsafe { libc::syscall(libc::SYS_read, fd, b.as_mut_ptr(), len) });
            (r, b)
        });
        let n = r? as usize;
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }
    fn write(&self, fd: Fd, buf: &[u8]) -> SysResult<usize> {
        let b = buf.to_vec();
        self.call(move || {
            // SAFETY: `b` is readable for its length.
            sys(unsafe { libc::syscall(libc::SYS_write, fd, b.as_ptr(), b.len()) })
                .map(|n| n as usize)
        })
    }
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
        let len = buf.len();
        let (r, data) = self.call(move || {
            let mut b = vec![0u8; len];
            // SAFETY: `b` is writable for `len` bytes.
            let r =
                sys(unsafe { libc::syscall(libc::SYS_pread64, fd, b.as_mut_ptr(), len, offset) });
            (r, b)
        });
        let n = r? as usize;
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize> {
        let b = buf.to_vec();
        self.call(move || {
            // SAFETY: `b` is readable for its length.
            sys(unsafe { libc::syscall(libc::SYS_pwrite64, fd, b.as_ptr(), b.len(), offset) })
                .map(|n| n as usize)
        })
    }
    fn readv(&self, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        // SAFETY: `iov` holds `n` iovecs of live, writable buffers.
        self.read_vectored(bufs, move |iov, n| unsafe {
            libc::syscall(libc::SYS_readv, fd, iov, n)
        })
    }
    fn writev(&self, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize> {
        // SAFETY: `iov` holds `n` iovecs of live buffers.
        self.write_vectored(bufs, move |iov, n| unsafe {
            libc::syscall(libc::SYS_writev, fd, iov, n)
        })
    }
    fn posix_fadvise(&self, fd: Fd, offset: i64, len: i64, advice: i32) -> SysResult<()> {
        // SAFETY: plain integer arguments.
        self.call(move || {
            unit(unsafe { libc::syscall(libc::SYS_fadvise64, fd, offset, len, advice) })
        })
    }
    fn readahead(&self, fd: Fd, offset: i64, count: usize) -> SysResult<()> {
        // SAFETY: plain integer arguments.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_readahead, fd, offset, count) }))
    }
    fn preadv(&self, fd: Fd, bufs: &mut [&mut [u8]], offset: i64) -> SysResult<usize> {
        // SAFETY: as in `readv`.
        self.read_vectored(bufs, move |iov, n| unsafe {
            libc::preadv(fd, iov, n as i32, offset) as i64
        })
    }
    fn pwritev(&self, fd: Fd, bufs: &[&[u8]], offset: i64) -> SysResult<usize> {
        // SAFETY: as in `writev`.
        self.write_vectored(bufs, move |iov, n| unsafe {
            libc::pwritev(fd, iov, n as i32, offset) as i64
        })
    }
    fn preadv2(&self, fd: Fd, bufs: &mut [&mut [u8]], offset: i64, flags: i32) -> SysResult<usize> {
        // SAFETY: as in `readv`.
        self.read_vectored(bufs, move |iov, n| unsafe {
            libc::preadv2(fd, iov, n as i32, offset, flags) as i64
        })
    }
    fn pwritev2(&self, fd: Fd, bufs: &[&[u8]], offset: i64, flags: i32) -> SysResult<usize> {
        // SAFETY: as in `writev`.
        self.write_vectored(bufs, move |iov, n| unsafe {
            libc::pwritev2(fd, iov, n as i32, offset, flags) as i64
        })
    }
    fn lseek(&self, fd: Fd, offset: i64, whence: i32) -> SysResult<i64> {
        // SAFETY: plain integer arguments.
        self.call(move || sys(unsafe { libc::syscall(libc::SYS_lseek, fd, offset, whence) }))
    }
    fn ftruncate(&self, fd: Fd, length: i64) -> SysResult<()> {
        // SAFETY: plain integer arguments.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_ftruncate, fd, length) }))
    }
    fn truncate(&self, path: &[u8], length: i64) -> SysResult<()> {
        let p = cpath(path)?;
        // SAFETY: `p` is a valid C string.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_truncate, p.as_ptr(), length) }))
    }
    fn fsync(&self, fd: Fd) -> SysResult<()> {
        // SAFETY: plain integer argument.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_fsync, fd) }))
    }
    fn fdatasync(&self, fd: Fd) -> SysResult<()> {
        // SAFETY: plain integer argument.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_fdatasync, fd) }))
    }

    fn fstat(&self, fd: Fd) -> SysResult<Stat> {
        self.call(move || {
            // SAFETY: all-zero is a valid `stat`.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: `st` is writable stat storage.
            unit(unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st) }).map(|()| stat_from(&st))
        })
    }
    fn fstatat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: all-zero is a valid `stat`.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: `p` is a valid C string, `st` writable stat storage.
            unit(unsafe { libc::syscall(libc::SYS_newfstatat, dirfd, p.as_ptr(), &mut st, flags) })
                .map(|()| stat_from(&st))
        })
    }
    fn statx(&self, dirfd: Fd, path: &[u8], flags: i32, mask: u32) -> SysResult<Statx> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: all-zero is a valid `statx`.
            let mut st: libc::statx = unsafe { core::mem::zeroed() };
            // SAFETY: `p` is a valid C string, `st` writable statx storage.
            unit(unsafe { libc::syscall(libc::SYS_statx, dirfd, p.as_ptr(), flags, mask, &mut st) })
                .map(|()| statx_from(&st))
        })
    }
    fn faccessat(&self, dirfd: Fd, path: &[u8], mode: i32, flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            unit(unsafe { libc::syscall(libc::SYS_faccessat2, dirfd, p.as_ptr(), mode, flags) })
        })
    }
    fn fchmodat(&self, dirfd: Fd, path: &[u8], mode: u32, flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            unit(unsafe { libc::syscall(libc::SYS_fchmodat2, dirfd, p.as_ptr(), mode, flags) })
        })
    }
    fn fchmod(&self, fd: Fd, mode: u32) -> SysResult<()> {
        // SAFETY: plain integer arguments.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_fchmod, fd, mode) }))
    }
    fn fchownat(&self, dirfd: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            unit(unsafe { libc::syscall(libc::SYS_fchownat, dirfd, p.as_ptr(), uid, gid, flags) })
        })
    }
    fn fchown(&self, fd: Fd, uid: u32, gid: u32) -> SysResult<()> {
        // SAFETY: plain integer arguments.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_fchown, fd, uid, gid) }))
    }
    fn utimensat(
        &self,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()> {
        let p = cpath(path)?;
        self.call(move || utimensat_raw(dirfd, Some(&p), &times, flags))
    }
    fn futimens(&self, fd: Fd, times: Option<[Timespec; 2]>) -> SysResult<()> {
        // glibc's futimens: a negative fd is EBADF before the syscall (whose
        // NULL path with AT_FDCWD would be EFAULT).
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        self.call(move || utimensat_raw(fd, None, &times, 0))
    }
    fn statfs(&self, path: &[u8]) -> SysResult<Statfs> {
        let p = cpath(path)?;
        self.call(move || {
            let mut st = KernelStatfs::default();
            // SAFETY: `p` is a valid C string, `st` writable statfs storage.
            unit(unsafe { libc::syscall(libc::SYS_statfs, p.as_ptr(), &mut st) })
                .map(|()| statfs_from(&st))
        })
    }
    fn fstatfs(&self, fd: Fd) -> SysResult<Statfs> {
        self.call(move || {
            let mut st = KernelStatfs::default();
            // SAFETY: `st` is writable statfs storage.
            unit(unsafe { libc::syscall(libc::SYS_fstatfs, fd, &mut st) })
                .map(|()| statfs_from(&st))
        })
    }

    fn mkdirat(&self, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()> {
        let p = cpath(path)?;
        // SAFETY: `p` is a valid C string.
        self.call(move || {
            unit(unsafe { libc::syscall(libc::SYS_mkdirat, dirfd, p.as_ptr(), mode) })
        })
    }
    fn mknodat(&self, dirfd: Fd, path: &[u8], mode: u32, dev: u64) -> SysResult<()> {
        let p = cpath(path)?;
        // glibc's mknodat: a dev_t wider than the syscall's 32 bits is
        // EINVAL before the call.
        let dev = u32::try_from(dev).map_err(|_| Errno::EINVAL)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            unit(unsafe { libc::syscall(libc::SYS_mknodat, dirfd, p.as_ptr(), mode, dev) })
        })
    }
    fn unlinkat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        // SAFETY: `p` is a valid C string.
        self.call(move || {
            unit(unsafe { libc::syscall(libc::SYS_unlinkat, dirfd, p.as_ptr(), flags) })
        })
    }
    fn renameat2(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        let (o, n) = (cpath(oldpath)?, cpath(newpath)?);
        self.call(move || {
            // SAFETY: `o` and `n` are valid C strings.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    olddirfd,
                    o.as_ptr(),
                    newdirfd,
                    n.as_ptr(),
                    flags,
                )
            })
        })
    }
    fn linkat(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        let (o, n) = (cpath(oldpath)?, cpath(newpath)?);
        self.call(move || {
            let link = move |o: &CString, n: &CString, flags: i32| {
                // SAFETY: `o` and `n` are valid C strings.
                unit(unsafe {
                    libc::syscall(
                        libc::SYS_linkat,
                        olddirfd,
                        o.as_ptr(),
                        newdirfd,
                        n.as_ptr(),
                        flags,
                    )
                })
            };
            let r = link(&o, &n, flags);
            let empty_path = o.as_bytes().is_empty();
            if r != Err(Errno::EPERM)
                || !LINK_CAP.with(|c| c.get())
                || (empty_path && flags & AT_EMPTY_PATH != 0)
            {
                return r;
            }
            // With a non-empty path AT_EMPTY_PATH only adds the opener
            // check, which the first attempt passed; the helper (another
            // cred) would fail it, so it retries without the flag.
            let flags = flags & !AT_EMPTY_PATH;
            // Shares this worker's fd table and fs_struct (std's clone flags).
            thread::spawn(move || {
                capset(1 << CAP_FOWNER, 1 << CAP_FOWNER).expect("raise CAP_FOWNER");
                link(&o, &n, flags)
            })
            .join()
            .expect("the linkat helper thread")
        })
    }
    fn symlinkat(&self, target: &[u8], newdirfd: Fd, linkpath: &[u8]) -> SysResult<()> {
        let (t, l) = (cpath(target)?, cpath(linkpath)?);
        self.call(move || {
            // SAFETY: `t` and `l` are valid C strings.
            unit(unsafe { libc::syscall(libc::SYS_symlinkat, t.as_ptr(), newdirfd, l.as_ptr()) })
        })
    }
    fn readlinkat(&self, dirfd: Fd, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        let p = cpath(path)?;
        let len = buf.len();
        let (r, data) = self.call(move || {
            let mut b = vec![0u8; len];
            // SAFETY: `p` is a valid C string, `b` writable for `len` bytes.
            let r = sys(unsafe {
                libc::syscall(libc::SYS_readlinkat, dirfd, p.as_ptr(), b.as_mut_ptr(), len)
            });
            (r, b)
        });
        let n = r? as usize;
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }
    fn getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        let len = buf.len();
        let (r, data) = self.call(move || {
            let mut b = vec![0u8; len];
            // SAFETY: `b` is writable for `len` bytes.
            let r = sys(unsafe { libc::syscall(libc::SYS_getdents64, fd, b.as_mut_ptr(), len) });
            (r, b)
        });
        let n = r? as usize;
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    fn chdir(&self, path: &[u8]) -> SysResult<()> {
        let p = cpath(path)?;
        // SAFETY: `p` is a valid C string.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_chdir, p.as_ptr()) }))
    }
    fn fchdir(&self, fd: Fd) -> SysResult<()> {
        // SAFETY: plain integer argument.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_fchdir, fd) }))
    }
    fn getcwd(&self) -> SysResult<Vec<u8>> {
        self.call(move || {
            let mut b = vec![0u8; PATH_MAX + 1];
            // SAFETY: `b` is writable for its length.
            let n = sys(unsafe { libc::syscall(libc::SYS_getcwd, b.as_mut_ptr(), b.len()) })?;
            // The syscall's length counts the terminating NUL.
            b.truncate((n as usize).saturating_sub(1));
            Ok(b)
        })
    }
    fn chroot(&self, path: &[u8]) -> SysResult<()> {
        let p = cpath(path)?;
        // SAFETY: `p` is a valid C string.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_chroot, p.as_ptr()) }))
    }
    fn umask(&self, mask: u32) -> u32 {
        // SAFETY: umask cannot fail.
        self.call(move || unsafe { libc::syscall(libc::SYS_umask, mask) } as u32)
    }

    fn mount(&self, source: &[u8], target: &[u8], fstype: &[u8], flags: u64) -> SysResult<()> {
        self.mount_with_data(source, target, fstype, flags, None)
    }
    fn mount_with_data(
        &self,
        source: &[u8],
        target: &[u8],
        fstype: &[u8],
        flags: u64,
        data: Option<&[u8]>,
    ) -> SysResult<()> {
        let (s, t, f) = (cpath(source)?, cpath(target)?, cpath(fstype)?);
        // The bytes up to a NUL, NUL-terminated, as a C caller passes them.
        let d = data.map(|d| {
            let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
            std::ffi::CString::new(&d[..end]).expect("cut at the first NUL")
        });
        self.call(move || {
            let data_ptr = d.as_ref().map_or(core::ptr::null(), |d| d.as_ptr());
            // SAFETY: valid C strings; data a C string or NULL.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_mount,
                    s.as_ptr(),
                    t.as_ptr(),
                    f.as_ptr(),
                    flags,
                    data_ptr,
                )
            })
        })
    }
    fn umount2(&self, target: &[u8], flags: i32) -> SysResult<()> {
        let t = cpath(target)?;
        // SAFETY: `t` is a valid C string.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_umount2, t.as_ptr(), flags) }))
    }

    fn syncfs(&self, fd: Fd) -> SysResult<()> {
        // SAFETY: plain integer argument.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_syncfs, fd) }))
    }

    fn setxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.set_xattr(XattrTarget::Path(cpath(path)?, true), name, value, flags)
    }
    fn lsetxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.set_xattr(XattrTarget::Path(cpath(path)?, false), name, value, flags)
    }
    fn fsetxattr(&self, fd: Fd, name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.set_xattr(XattrTarget::Fd(fd), name, value, flags)
    }
    fn getxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Path(cpath(path)?, true), Some(name), buf)
    }
    fn lgetxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Path(cpath(path)?, false), Some(name), buf)
    }
    fn fgetxattr(&self, fd: Fd, name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Fd(fd), Some(name), buf)
    }
    fn listxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Path(cpath(path)?, true), None, buf)
    }
    fn llistxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Path(cpath(path)?, false), None, buf)
    }
    fn flistxattr(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.get_xattr(XattrTarget::Fd(fd), None, buf)
    }
    fn removexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.remove_xattr(XattrTarget::Path(cpath(path)?, true), name)
    }
    fn lremovexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.remove_xattr(XattrTarget::Path(cpath(path)?, false), name)
    }
    fn fremovexattr(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        self.remove_xattr(XattrTarget::Fd(fd), name)
    }

    fn fallocate(&self, fd: Fd, mode: i32, offset: i64, len: i64) -> SysResult<()> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            unit(unsafe { libc::syscall(libc::SYS_fallocate, fd, mode, offset, len) })
        })
    }
    fn copy_file_range(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        // SAFETY: each offset pointer is NULL or a live i64.
        self.with_offsets(off_in, off_out, move |pa, pb| unsafe {
            libc::syscall(libc::SYS_copy_file_range, fd_in, pa, fd_out, pb, len, flags)
        })
    }

    fn sendfile(
        &self,
        out_fd: Fd,
        in_fd: Fd,
        offset: Option<&mut i64>,
        count: usize,
    ) -> SysResult<usize> {
        // SAFETY: the offset pointer is NULL or a live i64.
        self.with_offsets(offset, None, move |p, _| unsafe {
            libc::syscall(libc::SYS_sendfile, out_fd, in_fd, p, count)
        })
    }

    fn splice(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        // SAFETY: each offset pointer is NULL or a live i64.
        self.with_offsets(off_in, off_out, move |pa, pb| unsafe {
            libc::syscall(libc::SYS_splice, fd_in, pa, fd_out, pb, len, flags)
        })
    }

    fn vmsplice(&self, fd: Fd, bufs: &mut [&mut [u8]], flags: u32) -> SysResult<usize> {
        // Each buffer with its offset in its page: Linux splits the bytes
        // into pipe buffers at page boundaries, so the kernel's copies
        // start at the same offsets.
        let data: Vec<(Vec<u8>, usize)> = bufs
            .iter()
            .map(|b| (b.to_vec(), b.as_ptr() as usize % 4096))
            .collect();
        let (r, data) = self.call(move || {
            // Each segment in fresh pages of its own mapping, unmapped
            // after the call: the pipe keeps references to the pages it
            // took until they are read, and nothing can write them once
            // they are unmapped (a reused heap buffer would change the
            // bytes the pipe still holds).
            let maps: Vec<(*mut u8, usize, usize)> = data
                .iter()
                .map(|(bytes, skew)| {
                    let size = bytes.len() + skew + 4096;
                    // SAFETY: a fresh private anonymous mapping.
                    let at = unsafe {
                        libc::mmap(
                            core::ptr::null_mut(),
                            size,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                            -1,
                            0,
                        )
                    };
                    assert_ne!(at, libc::MAP_FAILED, "mmap for vmsplice");
                    let start = at.cast::<u8>().wrapping_add(*skew);
                    // SAFETY: `start..start + len` lies inside the mapping.
                    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), start, bytes.len()) };
                    (at.cast::<u8>(), size, *skew)
                })
                .collect();
            let iov: Vec<libc::iovec> = maps
                .iter()
                .zip(&data)
                .map(|(&(at, _, skew), (bytes, _))| libc::iovec {
                    iov_base: at.wrapping_add(skew).cast(),
                    iov_len: bytes.len(),
                })
                .collect();
            // SAFETY: `iov` holds iovecs inside live mappings.
            let r = sys(unsafe {
                libc::syscall(libc::SYS_vmsplice, fd, iov.as_ptr(), iov.len(), flags)
            });
            let back: Vec<Vec<u8>> = maps
                .iter()
                .zip(&data)
                .map(|(&(at, size, skew), (bytes, _))| {
                    let mut out = vec![0u8; bytes.len()];
                    // SAFETY: the bytes lie inside the live mapping, which
                    // is then unmapped once.
                    unsafe {
                        core::ptr::copy_nonoverlapping(at.add(skew), out.as_mut_ptr(), out.len());
                        libc::munmap(at.cast(), size);
                    }
                    out
                })
                .collect();
            (r, back)
        });
        let n = r? as usize;
        // Reading from a pipe filled the buffers; writing left them as they
        // were, so copying back is the same either way.
        let mut left = n;
        for (dst, src) in bufs.iter_mut().zip(&data) {
            let k = left.min(dst.len());
            dst[..k].copy_from_slice(&src[..k]);
            left -= k;
        }
        Ok(n)
    }

    fn tee(&self, fd_in: Fd, fd_out: Fd, len: usize, flags: u32) -> SysResult<usize> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            sys(unsafe { libc::syscall(libc::SYS_tee, fd_in, fd_out, len, flags) })
        })
        .map(|n| n as usize)
    }

    fn name_to_handle_at(
        &self,
        dirfd: Fd,
        path: &[u8],
        handle: &mut FileHandle,
        flags: i32,
    ) -> SysResult<u64> {
        let p = cpath(path)?;
        let bytes = handle.handle_bytes;
        let (r, h) = self.call(move || {
            // struct file_handle: u32 handle_bytes, i32 handle_type, bytes.
            let mut raw = vec![0u8; 8 + MAX_HANDLE_SZ as usize + 8];
            raw[..4].copy_from_slice(&bytes.to_ne_bytes());
            let mut mount_id: i32 = 0;
            // SAFETY: `p` is a valid C string; `raw` has room for the
            // header and the largest handle; `mount_id` is writable.
            let r = sys(unsafe {
                libc::syscall(
                    libc::SYS_name_to_handle_at,
                    dirfd,
                    p.as_ptr(),
                    raw.as_mut_ptr(),
                    &mut mount_id,
                    flags,
                )
            });
            (r.map(|_| mount_id as u64), raw)
        });
        let hb = u32::from_ne_bytes(h[..4].try_into().expect("4 bytes"));
        handle.handle_bytes = hb;
        if let Ok(id) = r {
            handle.handle_type = i32::from_ne_bytes(h[4..8].try_into().expect("4 bytes"));
            handle.f_handle = h[8..8 + (hb as usize).min(MAX_HANDLE_SZ as usize)].to_vec();
            return Ok(id);
        }
        r
    }
    fn open_by_handle_at(&self, mount_fd: Fd, handle: &FileHandle, flags: i32) -> SysResult<Fd> {
        let mut raw = Vec::with_capacity(8 + handle.f_handle.len());
        raw.extend_from_slice(&handle.handle_bytes.to_ne_bytes());
        raw.extend_from_slice(&handle.handle_type.to_ne_bytes());
        raw.extend_from_slice(&handle.f_handle);
        raw.resize(8 + MAX_HANDLE_SZ as usize, 0);
        self.call(move || {
            // SAFETY: `raw` is a file_handle with room for the largest one.
            sys(unsafe {
                libc::syscall(libc::SYS_open_by_handle_at, mount_fd, raw.as_ptr(), flags)
            })
            .map(|n| n as Fd)
        })
    }

    fn pipe2(&self, flags: i32) -> SysResult<[Fd; 2]> {
        self.call(move || {
            let mut fds = [-1i32; 2];
            // SAFETY: `fds` has room for two descriptors.
            unit(unsafe { libc::syscall(libc::SYS_pipe2, fds.as_mut_ptr(), flags) }).map(|()| fds)
        })
    }
    fn socketpair(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<[Fd; 2]> {
        self.call(move || {
            let mut fds = [-1i32; 2];
            // SAFETY: `fds` has room for two descriptors.
            unit(unsafe {
                libc::syscall(libc::SYS_socketpair, domain, ty, protocol, fds.as_mut_ptr())
            })
            .map(|()| fds)
        })
    }
    fn socket(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            sys(unsafe { libc::syscall(libc::SYS_socket, domain, ty, protocol) }).map(|n| n as Fd)
        })
    }
    fn bind(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let addr = unix_addr(name);
        self.call(move || {
            // SAFETY: `addr` holds the family and the name's bytes.
            unit(unsafe { libc::syscall(libc::SYS_bind, fd, addr.as_ptr(), addr.len()) })
        })
    }
    fn listen(&self, fd: Fd, backlog: i32) -> SysResult<()> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            unit(unsafe { libc::syscall(libc::SYS_listen, fd, backlog) })
        })
    }
    fn connect(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        let addr = unix_addr(name);
        self.call(move || {
            // SAFETY: `addr` holds the family and the name's bytes.
            unit(unsafe { libc::syscall(libc::SYS_connect, fd, addr.as_ptr(), addr.len()) })
        })
    }
    fn peer_cred(&self, fd: Fd) -> SysResult<vfscale::abi::Ucred> {
        self.call(move || {
            let mut c = libc::ucred {
                pid: 0,
                uid: 0,
                gid: 0,
            };
            let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
            // SAFETY: `c` has room for `len` bytes.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_getsockopt,
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_PEERCRED,
                    (&mut c as *mut libc::ucred).cast::<u8>(),
                    &mut len,
                )
            })?;
            Ok(vfscale::abi::Ucred {
                pid: c.pid,
                uid: c.uid,
                gid: c.gid,
            })
        })
    }
    fn getsockopt(&self, fd: Fd, level: i32, name: i32, buf: &mut [u8]) -> SysResult<usize> {
        let len = buf.len();
        let got = self.call(move || {
            let mut v = vec![0u8; len];
            let mut n = len as libc::socklen_t;
            // SAFETY: `v` has room for `n` bytes.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_getsockopt,
                    fd,
                    level,
                    name,
                    v.as_mut_ptr(),
                    &mut n,
                )
            })?;
            v.truncate(n as usize);
            Ok(v)
        })?;
        buf[..got.len()].copy_from_slice(&got);
        Ok(got.len())
    }
    fn setsockopt(&self, fd: Fd, level: i32, name: i32, value: &[u8]) -> SysResult<()> {
        let v = value.to_vec();
        self.call(move || {
            // SAFETY: `v` holds `v.len()` bytes.
            unit(unsafe {
                libc::syscall(libc::SYS_setsockopt, fd, level, name, v.as_ptr(), v.len())
            })
        })
    }
    fn getpid(&self) -> SysResult<i32> {
        // Every worker is a thread of this process: SCM_CREDENTIALS
        // carries the thread group's id (task_tgid).
        // SAFETY: getpid has no preconditions.
        Ok(unsafe { libc::getpid() })
    }
    fn disconnect(&self, fd: Fd) -> SysResult<()> {
        self.call(move || {
            let addr = [libc::AF_UNSPEC as u8, 0];
            // SAFETY: a two-byte address holding only the family.
            unit(unsafe { libc::syscall(libc::SYS_connect, fd, addr.as_ptr(), addr.len()) })
        })
    }
    fn accept4(&self, fd: Fd, flags: i32) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: no address wanted (null pointers).
            sys(unsafe { libc::syscall(libc::SYS_accept4, fd, 0usize, 0usize, flags) })
                .map(|n| n as Fd)
        })
    }
    fn shutdown(&self, fd: Fd, how: i32) -> SysResult<()> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            unit(unsafe { libc::syscall(libc::SYS_shutdown, fd, how) })
        })
    }
    fn socket_name(&self, fd: Fd, peer: bool) -> SysResult<Vec<u8>> {
        self.call(move || {
            let mut buf = [0u8; 2 + 108];
            let mut len = buf.len() as libc::socklen_t;
            let nr = if peer {
                libc::SYS_getpeername
            } else {
                libc::SYS_getsockname
            };
            // SAFETY: `buf` has room for `len` bytes.
            unit(unsafe { libc::syscall(nr, fd, buf.as_mut_ptr(), &mut len) })?;
            let mut name = buf[2..(len as usize).clamp(2, buf.len())].to_vec();
            // A path name comes back with its terminating NUL.
            if name.first() != Some(&0) && name.last() == Some(&0) {
                name.pop();
            }
            Ok(name)
        })
    }
    fn sendto(&self, fd: Fd, buf: &[u8], flags: i32, name: Option<&[u8]>) -> SysResult<usize> {
        let addr = name.map(unix_addr);
        let data = buf.to_vec();
        self.call(move || {
            let (ptr, len) = match &addr {
                Some(a) => (a.as_ptr(), a.len()),
                None => (std::ptr::null(), 0),
            };
            // SAFETY: `data` is valid for its length, the address (if
            // any) holds the family and the name's bytes.
            sys(unsafe {
                libc::syscall(
                    libc::SYS_sendto,
                    fd,
                    data.as_ptr(),
                    data.len(),
                    flags | libc::MSG_NOSIGNAL,
                    ptr,
                    len,
                )
            })
            .map(|n| n as usize)
        })
    }
    fn recvfrom(&self, fd: Fd, buf: &mut [u8], flags: i32) -> SysResult<(usize, Vec<u8>)> {
        let len = buf.len();
        let (n, data, name) = self.call(move || {
            let mut data = vec![0u8; len];
            let mut addr = [0u8; 2 + 108];
            let mut alen = addr.len() as libc::socklen_t;
            // SAFETY: `data` has room for `len` bytes, `addr` for `alen`.
            let n = sys(unsafe {
                libc::syscall(
                    libc::SYS_recvfrom,
                    fd,
                    data.as_mut_ptr(),
                    len,
                    flags,
                    addr.as_mut_ptr(),
                    &mut alen,
                )
            })? as usize;
            Ok((n, data, sun_path(&addr, alen as usize)))
        })?;
        let copied = n.min(len);
        buf[..copied].copy_from_slice(&data[..copied]);
        Ok((n, name))
    }
    fn sendmsg(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        flags: i32,
        name: Option<&[u8]>,
        rights: &[Fd],
        creds: Option<Ucred>,
    ) -> SysResult<usize> {
        let mut addr = name.map(unix_addr);
        let data = bufs.concat();
        let rights = rights.to_vec();
        self.call(move || {
            let mut iov = libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            };
            let bytes = std::mem::size_of_val(&rights[..]);
            // The credentials' message first, then the descriptors' (the
            // order vfscale checks them in).
            let creds_space = if creds.is_some() { cmsg_space(12) } else { 0 };
            let rights_space = if rights.is_empty() {
                0
            } else {
                cmsg_space(bytes)
            };
            let space = creds_space + rights_space;
            let mut control = vec![0u64; space.div_ceil(8)];
            // SAFETY: an all-zero msghdr is an empty one.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if let Some(a) = addr.as_mut() {
                msg.msg_name = a.as_mut_ptr().cast();
                msg.msg_namelen = a.len() as libc::socklen_t;
            }
            if space > 0 {
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = space;
                // SAFETY: the buffer has room for each header and its data
                // (CMSG_SPACE each) and is 8-byte aligned.
                unsafe {
                    let mut c = libc::CMSG_FIRSTHDR(&msg);
                    if let Some(cr) = creds {
                        (*c).cmsg_level = libc::SOL_SOCKET;
                        (*c).cmsg_type = libc::SCM_CREDENTIALS;
                        (*c).cmsg_len = cmsg_len(12);
                        let b = cr.to_bytes();
                        std::ptr::copy_nonoverlapping(b.as_ptr(), libc::CMSG_DATA(c), 12);
                        c = libc::CMSG_NXTHDR(&msg, c);
                    }
                    if !rights.is_empty() {
                        (*c).cmsg_level = libc::SOL_SOCKET;
                        (*c).cmsg_type = libc::SCM_RIGHTS;
                        (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as usize;
                        std::ptr::copy_nonoverlapping(
                            rights.as_ptr(),
                            libc::CMSG_DATA(c).cast::<i32>(),
                            rights.len(),
                        );
                    }
                }
            }
            // SAFETY: `msg` points at live buffers.
            sys(unsafe { libc::syscall(libc::SYS_sendmsg, fd, &msg, flags | libc::MSG_NOSIGNAL) })
                .map(|n| n as usize)
        })
    }
    fn recvmsg(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        flags: i32,
        control_len: usize,
    ) -> SysResult<RecvMsg> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let (m, data) = self.call(move || {
            let mut data = vec![0u8; len];
            let mut addr = [0u8; 2 + 108];
            let mut iov = libc::iovec {
                iov_base: data.as_mut_ptr().cast(),
                iov_len: len,
            };
            let mut control = vec![0u64; control_len.div_ceil(8)];
            // SAFETY: as in `sendmsg`.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_name = addr.as_mut_ptr().cast();
            msg.msg_namelen = addr.len() as libc::socklen_t;
            if control_len > 0 {
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = control_len;
            }
            // SAFETY: `msg` points at live buffers.
            let n = sys(unsafe { libc::syscall(libc::SYS_recvmsg, fd, &mut msg, flags) })? as usize;
            let mut fds = Vec::new();
            let mut creds = None;
            // SAFETY: the kernel filled the control buffer within its length.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    let data = libc::CMSG_DATA(c);
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                        let k = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
                        let p = data.cast::<i32>();
                        fds.extend((0..k).map(|i| p.add(i).read_unaligned()));
                    }
                    // A credentials message cut short by the buffer is
                    // not reported (vfscale delivers none: COMPATIBILITY).
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_CREDENTIALS
                        && (*c).cmsg_len == cmsg_len(12)
                    {
                        let w = |i: usize| data.add(4 * i).cast::<u32>().read_unaligned();
                        creds = Some(Ucred {
                            pid: w(0) as i32,
                            uid: w(1),
                            gid: w(2),
                        });
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            let m = RecvMsg {
                len: n,
                name: sun_path(&addr, msg.msg_namelen as usize),
                creds,
                fds,
                flags: msg.msg_flags,
            };
            Ok((m, data))
        })?;
        let mut at = 0;
        for b in bufs.iter_mut() {
            let k = b.len().min(m.len.min(len).saturating_sub(at));
            b[..k].copy_from_slice(&data[at..at + k]);
            at += k;
        }
        Ok(m)
    }
    fn fionread(&self, fd: Fd) -> SysResult<i32> {
        self.call(move || {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int.
            unit(unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::FIONREAD, &mut n) })?;
            Ok(n)
        })
    }
    fn fs_ioc_getflags(&self, fd: Fd) -> SysResult<u32> {
        self.call(move || {
            let mut flags: libc::c_uint = 0;
            // SAFETY: FS_IOC_GETFLAGS writes one int (despite its `long`).
            unit(unsafe { libc::syscall(libc::SYS_ioctl, fd, FS_IOC_GETFLAGS, &mut flags) })?;
            Ok(flags)
        })
    }
    fn fs_ioc_setflags(&self, fd: Fd, flags: u32) -> SysResult<()> {
        self.call(move || {
            let flags: libc::c_uint = flags;
            // SAFETY: FS_IOC_SETFLAGS reads one int.
            unit(unsafe { libc::syscall(libc::SYS_ioctl, fd, FS_IOC_SETFLAGS, &flags) })
        })
    }
    fn fs_ioc_fsgetxattr(&self, fd: Fd) -> SysResult<FsXattr> {
        self.call(move || {
            let mut raw = [0u8; FSXATTR_SIZE];
            // SAFETY: FS_IOC_FSGETXATTR writes a 28-byte struct fsxattr.
            unit(unsafe {
                libc::syscall(libc::SYS_ioctl, fd, FS_IOC_FSGETXATTR, raw.as_mut_ptr())
            })?;
            Ok(FsXattr::from_bytes(&raw).expect("a whole record"))
        })
    }
    fn fs_ioc_fssetxattr(&self, fd: Fd, attr: &FsXattr) -> SysResult<()> {
        let raw = attr.to_bytes();
        self.call(move || {
            // SAFETY: FS_IOC_FSSETXATTR reads a 28-byte struct fsxattr.
            unit(unsafe { libc::syscall(libc::SYS_ioctl, fd, FS_IOC_FSSETXATTR, raw.as_ptr()) })
        })
    }
    fn file_getattr(&self, dirfd: Fd, path: &[u8], attr: &mut [u8], flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        let mut buf = vec![0u8; attr.len()];
        let r = self.call(move || {
            // SAFETY: file_getattr writes at most `buf.len()` bytes.
            unit(unsafe {
                libc::syscall(468, dirfd, p.as_ptr(), buf.as_mut_ptr(), buf.len(), flags)
            })
            .map(|()| buf)
        })?;
        attr.copy_from_slice(&r);
        Ok(())
    }
    fn file_setattr(&self, dirfd: Fd, path: &[u8], attr: &[u8], flags: i32) -> SysResult<()> {
        let p = cpath(path)?;
        let buf = attr.to_vec();
        self.call(move || {
            // SAFETY: file_setattr reads at most `buf.len()` bytes.
            unit(unsafe { libc::syscall(469, dirfd, p.as_ptr(), buf.as_ptr(), buf.len(), flags) })
        })
    }
    fn eventfd(&self, initval: u32, flags: i32) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: plain integer arguments.
            sys(unsafe { libc::syscall(libc::SYS_eventfd2, initval, flags) }).map(|n| n as Fd)
        })
    }
    fn memfd_create(&self, name: &[u8], flags: u32) -> SysResult<Fd> {
        let n = cpath(name)?;
        self.call(move || {
            // SAFETY: `n` is a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_memfd_create, n.as_ptr(), flags) })
                .map(|n| n as Fd)
        })
    }
    fn inotify_init1(&self, flags: i32) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: an integer argument.
            sys(unsafe { libc::syscall(libc::SYS_inotify_init1, flags) }).map(|n| n as Fd)
        })
    }
    fn inotify_add_watch(&self, fd: Fd, path: &[u8], mask: u32) -> SysResult<i32> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_inotify_add_watch, fd, p.as_ptr(), mask) })
                .map(|n| n as i32)
        })
    }
    fn inotify_rm_watch(&self, fd: Fd, wd: i32) -> SysResult<()> {
        // SAFETY: integer arguments.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_inotify_rm_watch, fd, wd) }))
    }
    fn poll(&self, fds: &mut [PollFd], timeout_ms: i32) -> SysResult<usize> {
        let mut owned = fds.to_vec();
        let (r, owned) = self.call(move || {
            // SAFETY: PollFd has struct pollfd's layout (abi/anon.rs asserts
            // its size; fields in the same order) and `owned` is writable.
            let r = sys(unsafe {
                libc::syscall(libc::SYS_poll, owned.as_mut_ptr(), owned.len(), timeout_ms)
            });
            (r, owned)
        });
        fds.copy_from_slice(&owned);
        r.map(|n| n as usize)
    }
    fn epoll_create(&self, size: i32) -> SysResult<Fd> {
        // SAFETY: epoll_create takes an integer.
        self.call(move || {
            sys(unsafe { libc::syscall(libc::SYS_epoll_create, size) }).map(|n| n as Fd)
        })
    }
    fn epoll_create1(&self, flags: i32) -> SysResult<Fd> {
        // SAFETY: epoll_create1 takes an integer.
        self.call(move || {
            sys(unsafe { libc::syscall(libc::SYS_epoll_create1, flags) }).map(|n| n as Fd)
        })
    }
    fn epoll_ctl(&self, epfd: Fd, op: i32, fd: Fd, event: Option<EpollEvent>) -> SysResult<()> {
        self.call(move || {
            let mut e = event.map(|e| libc::epoll_event {
                events: e.events,
                u64: e.data,
            });
            let p = e
                .as_mut()
                .map_or(core::ptr::null_mut(), |e| e as *mut libc::epoll_event);
            // SAFETY: `p` is null or points at an event that outlives the call.
            unit(unsafe { libc::syscall(libc::SYS_epoll_ctl, epfd, op, fd, p) })
        })
    }
    fn epoll_wait(&self, epfd: Fd, events: &mut [EpollEvent], timeout_ms: i32) -> SysResult<usize> {
        let max = events.len();
        let (r, got) = self.call(move || {
            let mut buf = vec![libc::epoll_event { events: 0, u64: 0 }; max];
            // SAFETY: `buf` has room for `max` events.
            let r = sys(unsafe {
                libc::syscall(
                    libc::SYS_epoll_wait,
                    epfd,
                    buf.as_mut_ptr(),
                    max as i32,
                    timeout_ms,
                )
            });
            (r, buf)
        });
        let n = r? as usize;
        for (out, e) in events.iter_mut().zip(&got[..n]) {
            *out = EpollEvent {
                events: e.events,
                data: e.u64,
            };
        }
        Ok(n)
    }
    fn flock(&self, fd: Fd, operation: i32) -> SysResult<()> {
        // SAFETY: flock takes two integers.
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_flock, fd, operation) }))
    }
    fn fcntl_lock(&self, fd: Fd, cmd: i32, lock: &mut Flock) -> SysResult<()> {
        let l = *lock;
        let (r, out) = self.call(move || {
            // SAFETY: all-zero is a valid `flock`.
            let mut k: libc::flock = unsafe { core::mem::zeroed() };
            k.l_type = l.l_type;
            k.l_whence = l.l_whence;
            k.l_start = l.l_start;
            k.l_len = l.l_len;
            k.l_pid = l.l_pid;
            // SAFETY: the lock commands read and write one `struct flock`.
            let r = unit(unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, &mut k) });
            (r, k)
        });
        lock.l_type = out.l_type;
        lock.l_whence = out.l_whence;
        lock.l_start = out.l_start;
        lock.l_len = out.l_len;
        lock.l_pid = out.l_pid;
        r
    }
    fn fcntl(&self, fd: Fd, cmd: i32, arg: i64) -> SysResult<i64> {
        self.call(move || match cmd {
            // The write-life hint goes through a pointer to a u64 (vfscale's
            // `fcntl`: the result, or the argument).
            F_GET_RW_HINT => {
                let mut hint = 0u64;
                // SAFETY: the command writes one u64 to the pointer.
                sys(unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, &mut hint) })
                    .map(|_| hint as i64)
            }
            F_SET_RW_HINT => {
                let hint = arg as u64;
                // SAFETY: the command reads one u64 from the pointer.
                sys(unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, &hint) })
            }
            // SAFETY: the other commands tests use take an integer argument.
            _ => sys(unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, arg) }),
        })
    }
    fn fd_path(&self, fd: Fd) -> SysResult<Vec<u8>> {
        let Some(reader) = &self.proc_reader else {
            return Err(Errno::ENOSYS);
        };
        let (Some(&proc_fd), tid) = (HOST_PROC.get(), self.tid) else {
            return Err(Errno::ENOSYS);
        };
        // SAFETY: getpid has no preconditions.
        let link = format!("{}/task/{tid}/fd/{fd}", unsafe { libc::getpid() });
        let link = CString::new(link).expect("no NUL in a number path");
        let (tx, rx) = mpsc::sync_channel(1);
        reader
            .send(Box::new(move || {
                let mut b = vec![0u8; PATH_MAX + 64];
                // SAFETY: `link` is a valid C string, `b` writable.
                let r = sys(unsafe {
                    libc::syscall(
                        libc::SYS_readlinkat,
                        proc_fd,
                        link.as_ptr(),
                        b.as_mut_ptr(),
                        b.len(),
                    )
                });
                let _ = tx.send(r.map(|n| {
                    b.truncate(n as usize);
                    b
                }));
            }))
            .map_err(|_| Errno::ENOSYS)?;
        // /proc says ENOENT for a descriptor that is not open.
        rx.recv().map_err(|_| Errno::ENOSYS)?.map_err(|e| {
            if e == Errno::ENOENT {
                Errno::EBADF
            } else {
                e
            }
        })
    }

    fn mount_setattr(&self, dirfd: Fd, path: &[u8], flags: i32, attr: &MountAttr) -> SysResult<()> {
        let p = cpath(path)?;
        let a = *attr;
        self.call(move || {
            // SAFETY: a valid C string and a `struct mount_attr` (repr(C),
            // MOUNT_ATTR_SIZE_VER0 bytes) that outlive the call.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_mount_setattr,
                    dirfd,
                    p.as_ptr(),
                    flags,
                    &a as *const MountAttr,
                    core::mem::size_of::<MountAttr>(),
                )
            })
        })
    }
    fn open_tree(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Fd> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: `p` is a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_open_tree, dirfd, p.as_ptr(), flags) })
                .map(|n| n as Fd)
        })
    }
    fn move_mount(
        &self,
        from_dfd: Fd,
        from_path: &[u8],
        to_dfd: Fd,
        to_path: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        let (f, t) = (cpath(from_path)?, cpath(to_path)?);
        self.call(move || {
            // SAFETY: valid C strings.
            unit(unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    from_dfd,
                    f.as_ptr(),
                    to_dfd,
                    t.as_ptr(),
                    flags,
                )
            })
        })
    }
    fn fsopen(&self, fstype: &[u8], flags: u32) -> SysResult<Fd> {
        let t = cpath(fstype)?;
        self.call(move || {
            // SAFETY: a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_fsopen, t.as_ptr(), flags) }).map(|n| n as Fd)
        })
    }
    fn fsconfig(
        &self,
        fd: Fd,
        cmd: u32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        aux: i32,
    ) -> SysResult<()> {
        let key = key.map(cpath).transpose()?;
        let value = value.map(cpath).transpose()?;
        self.call(move || {
            let ptr = |s: &Option<std::ffi::CString>| {
                s.as_ref().map_or(core::ptr::null(), |c| c.as_ptr())
            };
            // SAFETY: valid C strings or null pointers.
            unit(unsafe { libc::syscall(libc::SYS_fsconfig, fd, cmd, ptr(&key), ptr(&value), aux) })
        })
    }
    fn fsmount(&self, fd: Fd, flags: u32, attr_flags: u64) -> SysResult<Fd> {
        self.call(move || {
            // SAFETY: plain integer arguments (the attribute bits are an
            // unsigned int for the kernel).
            sys(unsafe { libc::syscall(libc::SYS_fsmount, fd, flags, attr_flags as u32) })
                .map(|n| n as Fd)
        })
    }
    fn fspick(&self, dirfd: Fd, path: &[u8], flags: u32) -> SysResult<Fd> {
        let p = cpath(path)?;
        self.call(move || {
            // SAFETY: a valid C string.
            sys(unsafe { libc::syscall(libc::SYS_fspick, dirfd, p.as_ptr(), flags) })
                .map(|n| n as Fd)
        })
    }
    fn pivot_root(&self, new_root: &[u8], put_old: &[u8]) -> SysResult<()> {
        let (n, o) = (cpath(new_root)?, cpath(put_old)?);
        // SAFETY: valid C strings. pivot_root moves every thread whose root
        // or cwd is the old root, as vfscale moves every process.
        self.call(move || {
            unit(unsafe { libc::syscall(libc::SYS_pivot_root, n.as_ptr(), o.as_ptr()) })
        })
    }
    fn unshare(&mut self, flags: i32) -> SysResult<()> {
        // SAFETY: unshare affects this worker thread alone (a shared
        // fs_struct, the `fd_path` reader's, is copied, not changed).
        self.call(move || unit(unsafe { libc::syscall(libc::SYS_unshare, flags) }))
    }
    fn setns_mount(&mut self, other: &Self) -> SysResult<()> {
        let tid = other.tid;
        self.call(move || {
            // setns refuses a shared fs_struct (the `fd_path` reader's):
            // the worker takes its own copy first, as a process has.
            // SAFETY: affects this worker thread alone.
            unit(unsafe { libc::syscall(libc::SYS_unshare, libc::CLONE_FS) })?;
            // PIDFD_THREAD (O_EXCL): a pidfd of the other worker thread.
            // SAFETY: plain integer arguments.
            let pidfd = sys(unsafe { libc::syscall(libc::SYS_pidfd_open, tid, libc::O_EXCL) })?;
            // SAFETY: `pidfd` is ours; closed right after.
            let r = unit(unsafe { libc::syscall(libc::SYS_setns, pidfd, libc::CLONE_NEWNS) });
            // SAFETY: as above.
            unsafe { libc::close(pidfd as i32) };
            r
        })
    }
    fn mountinfo(&self) -> SysResult<Vec<u8>> {
        // /proc/PID/task/TID/mountinfo: the worker's namespace, its paths
        // from the worker's root, read by the reader (which has /proc).
        let Some(reader) = &self.proc_reader else {
            return Err(Errno::ENOSYS);
        };
        let (Some(&proc_fd), tid) = (HOST_PROC.get(), self.tid) else {
            return Err(Errno::ENOSYS);
        };
        // SAFETY: getpid has no preconditions.
        let file = format!("{}/task/{tid}/mountinfo", unsafe { libc::getpid() });
        let file = CString::new(file).expect("no NUL in a number path");
        let (tx, rx) = mpsc::sync_channel(1);
        reader
            .send(Box::new(move || {
                let _ = tx.send(read_at(proc_fd, &file));
            }))
            .map_err(|_| Errno::ENOSYS)?;
        rx.recv().map_err(|_| Errno::ENOSYS)?
    }

    fn fork(&self) -> SysResult<Self> {
        // The child's fd_path goes to the parent's reader, which shares the
        // parent's root: the child's root until it calls chroot (tests do
        // not compare fd_path after a child's chroot).
        let reader = self.proc_reader.clone();
        self.call(|| {
            let link_cap = LINK_CAP.with(|c| c.get());
            KernelProcess::start(move || {
                LINK_CAP.with(|c| c.set(link_cap));
                unshare_tables()?;
                // fork copies the credentials (a new cred struct); a thread
                // shares them, so make a copy with the same values.
                copy_cred()?;
                Ok(reader)
            })
        })
        .map_err(|_| Errno::EAGAIN)
    }
    fn exit(self) {
        drop(self);
    }
}

/// The whole of file `name` beneath directory descriptor `dir`.
fn read_at(dir: i32, name: &std::ffi::CStr) -> SysResult<Vec<u8>> {
    // SAFETY: a valid C string; the descriptor is closed below.
    let fd = sys(unsafe {
        libc::syscall(
            libc::SYS_openat,
            dir,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    })? as i32;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let r = loop {
        // SAFETY: `buf` is writable for its length.
        match sys(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) as libc::c_long }) {
            Ok(0) => break Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n as usize]),
            Err(e) => break Err(e),
        }
    };
    // SAFETY: ours, opened above.
    unsafe { libc::close(fd) };
    r
}

/// A sockaddr_un for `name` (sun_path's bytes, no terminator added: the
/// kernel terminates a path name itself); longer than sun_path it is
/// passed whole, for the kernel's EINVAL.
/// The sun_path bytes of a returned address of `alen` bytes (a path name
/// comes back with its terminating NUL, which is dropped).
fn sun_path(addr: &[u8], alen: usize) -> Vec<u8> {
    let mut name = addr[2.min(alen)..alen.min(addr.len())].to_vec();
    if name.first() != Some(&0) && name.last() == Some(&0) {
        name.pop();
    }
    name
}

fn unix_addr(name: &[u8]) -> Vec<u8> {
    let mut a = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
    a.extend_from_slice(name);
    a
}
