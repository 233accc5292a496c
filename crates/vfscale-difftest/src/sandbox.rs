//! A private tmpfs as the whole world of a thread, for the kernel side of a
//! differential test.
//!
//! `enter_private_tmpfs_root` moves the *calling thread* into a new mount
//! namespace (`unshare(CLONE_NEWNS)`, a per-task operation that also gives
//! it a private fs_struct), makes every mount private (nothing propagates to
//! the host), mounts a fresh tmpfs (mode 0755, owned by root: vfscale's
//! root) on `/tmp` and `pivot_root`s into it, detaching the old root. The
//! tmpfs is then the namespace's root mount, exactly as vfscale's root: `..`
//! at `/` stays, `umount("/")` and `statfs("/")` behave as at a real root.
//!
//! Invariants:
//! - only the calling thread and the threads it spawns afterwards (clone
//!   without CLONE_NEWNS shares the creator's nsproxy) see the tmpfs;
//! - the namespace, and with it the tmpfs, is torn down by the kernel when
//!   the last of those threads exits — whatever way the test ends (panic,
//!   abort, SIGKILL): nothing to unmount, nothing left on the host. Callers
//!   therefore run each case on a thread of its own and let it end.

use std::fmt;
use std::io;

/// Why no private tmpfs could be had: the test prints it and skips.
#[derive(Debug)]
pub enum SandboxError {
    NotRoot,
    Setup(String),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::NotRoot => {
                write!(f, "not root (the kernel side needs mount and setresuid)")
            }
            SandboxError::Setup(e) => write!(f, "{e}"),
        }
    }
}

fn check(rc: libc::c_int, what: &str) -> Result<(), SandboxError> {
    if rc != 0 {
        return Err(SandboxError::Setup(format!(
            "{what}: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Moves the calling thread into a mount namespace of its own (and the
/// namespaces of `more`, `CLONE_NEW*` flags) in which no mount propagates
/// to or from the host's.
pub fn private_mount_namespace(more: libc::c_int) -> Result<(), SandboxError> {
    // SAFETY: unshare only changes this thread's namespaces and fs_struct.
    check(
        unsafe { libc::unshare(libc::CLONE_NEWNS | more) },
        "unshare(CLONE_NEWNS)",
    )?;
    // SAFETY: NULL source/fstype/data are allowed for a propagation change.
    check(
        unsafe {
            libc::mount(
                core::ptr::null(),
                c"/".as_ptr(),
                core::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                core::ptr::null(),
            )
        },
        "making / rprivate",
    )
}

/// A network namespace of the calling thread's own: abstract socket names
/// live there, and differential tests that run at once bind the same ones.
pub fn own_network_namespace() -> Result<(), SandboxError> {
    // SAFETY: unshare only changes this thread's namespaces.
    check(
        unsafe { libc::unshare(libc::CLONE_NEWNET) },
        "unshare(CLONE_NEWNET)",
    )
}

/// Makes a fresh tmpfs the root of a new mount namespace of the calling
/// thread (see the module comment). Call it on a thread that ends with the
/// test case.
pub fn enter_private_tmpfs_root() -> Result<(), SandboxError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(SandboxError::NotRoot);
    }
    // The host's /proc, for KernelProcess::fd_path (before leaving it).
    crate::kernel::open_host_proc();
    private_mount_namespace(0)?;
    // SAFETY: every pointer is a valid NUL-terminated string.
    check(
        unsafe {
            libc::mount(
                c"vfscale-kdiff".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                c"mode=0755".as_ptr().cast(),
            )
        },
        "mount tmpfs on /tmp",
    )?;
    pivot_root_into(c"/tmp")
}

/// Makes the mount at `dir` the root of a new mount namespace of the
/// calling thread (a copy of its current one, nothing propagating), as
/// `enter_private_tmpfs_root` does with its tmpfs: for a filesystem
/// mounted by the caller beforehand. Threads outside the new namespace
/// keep their roots (pivot_root moves only the roots that are the old
/// root of *this* namespace's copy).
pub fn enter_root_at(dir: &std::ffi::CStr) -> Result<(), SandboxError> {
    crate::kernel::open_host_proc();
    private_mount_namespace(0)?;
    pivot_root_into(dir)
}

/// Makes the mount at `dir` this thread's root and cwd, the old root
/// detached.
fn pivot_root_into(dir: &std::ffi::CStr) -> Result<(), SandboxError> {
    // SAFETY: a valid path.
    check(
        unsafe { libc::chdir(dir.as_ptr()) },
        "chdir to the new root",
    )?;
    // pivot_root(".", "."): the old root ends up stacked on the new one at
    // "/", and the detach below removes it (the runc idiom).
    // SAFETY: valid paths.
    check(
        unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) } as i32,
        "pivot_root",
    )?;
    // SAFETY: a valid path.
    check(
        unsafe { libc::umount2(c".".as_ptr(), libc::MNT_DETACH) },
        "detaching the old root",
    )?;
    // SAFETY: a valid path.
    check(unsafe { libc::chdir(c"/".as_ptr()) }, "chdir /")
}

/// Runs `script` on the kernel as root: on a thread of its own that
/// enters a fresh tmpfs root (`enter_private_tmpfs_root`), with a root
/// `KernelProcess`. `Err` says why the kernel side could not run (not
/// root, no namespaces), for the caller to print and skip.
pub fn on_kernel_as_root<T: Send + 'static>(
    script: impl FnOnce(&crate::KernelProcess) -> T + Send + 'static,
) -> Result<T, String> {
    std::thread::spawn(move || {
        enter_private_tmpfs_root().map_err(|e| e.to_string())?;
        let k = crate::KernelProcess::new(&vfscale::Cred::root())?;
        Ok(script(&k))
    })
    .join()
    .expect("kernel side")
}
