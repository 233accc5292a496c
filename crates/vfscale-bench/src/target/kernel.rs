//! The `kernel` target: the same operations as real syscalls (libc, no
//! wrappers) on a directory of the host, relative to a directory fd so the
//! kernel walks the same components vfscale does.
//!
//! `KernelDir` keeps the base directory for a whole run: `--kernel-dir`, or
//! (as root) a private tmpfs, or a temporary directory. The tmpfs is mounted
//! only after `unshare(CLONE_NEWNS)` and making `/` rprivate on the calling
//! thread, so the mount is invisible to the host and vanishes with the
//! namespace however the bench dies; it is also unmounted on drop. Worker
//! threads spawned later by that thread inherit the namespace.

use super::{count_dirents, failed, AnonKind, Kind, OpResult, Target, TargetId, GETDENTS_BUF};
use crate::target::OpError;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

enum Cleanup {
    /// A tmpfs mounted on a temporary directory: unmount, then remove.
    Unmount(tempfile::TempDir),
    /// A temporary directory, removed when dropped.
    Remove(#[allow(dead_code)] tempfile::TempDir),
    Keep,
}

/// The host directory the kernel target works in.
pub struct KernelDir {
    path: PathBuf,
    how: String,
    cleanup: Cleanup,
}

impl KernelDir {
    /// `explicit` is `--kernel-dir`; otherwise a private tmpfs when root,
    /// else a temporary directory.
    pub fn setup(explicit: Option<&Path>) -> Result<KernelDir, String> {
        if let Some(dir) = explicit {
            if !dir.is_dir() {
                return Err(format!("--kernel-dir {}: not a directory", dir.display()));
            }
            return Ok(KernelDir {
                how: format!(
                    "{} (given with --kernel-dir), on {}",
                    dir.display(),
                    fs_type(dir)
                ),
                path: dir.to_path_buf(),
                cleanup: Cleanup::Keep,
            });
        }
        let tmp = tempfile::Builder::new()
            .prefix("vfscale-bench-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        // SAFETY: geteuid has no preconditions.
        let why_not = if unsafe { libc::geteuid() } != 0 {
            "not root".to_string()
        } else {
            match mount_private_tmpfs(tmp.path()) {
                Ok(()) => {
                    return Ok(KernelDir {
                        path: tmp.path().to_path_buf(),
                        how: format!(
                            "a private tmpfs at {} (own mount namespace)",
                            tmp.path().display()
                        ),
                        cleanup: Cleanup::Unmount(tmp),
                    })
                }
                Err(e) => e,
            }
        };
        Ok(KernelDir {
            path: tmp.path().to_path_buf(),
            how: format!(
                "a temporary directory {} on {} (no private tmpfs: {why_not})",
                tmp.path().display(),
                fs_type(tmp.path())
            ),
            cleanup: Cleanup::Remove(tmp),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the directory is, for the report.
    pub fn describe(&self) -> &str {
        &self.how
    }
}

impl Drop for KernelDir {
    fn drop(&mut self) {
        if let Cleanup::Unmount(dir) = &self.cleanup {
            if let Ok(c) = CString::new(dir.path().as_os_str().as_bytes()) {
                // SAFETY: `c` is a valid NUL-terminated path.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
        }
        // Dropping `cleanup` removes the (now empty) temporary directory.
        self.cleanup = Cleanup::Keep;
    }
}

fn last_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Enters a new mount namespace on this thread and makes every mount in it
/// private, so mounts made here never propagate to the host and vanish
/// with the namespace.
pub(crate) fn enter_private_mount_namespace() -> Result<(), String> {
    // SAFETY: unshare only changes this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(last_err("unshare(CLONE_NEWNS)"));
    }
    // SAFETY: NULL source/fstype/data are allowed for a propagation change.
    let rc = unsafe {
        libc::mount(
            core::ptr::null(),
            c"/".as_ptr(),
            core::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            core::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(last_err("making / rprivate"));
    }
    Ok(())
}

/// Enters a private mount namespace on this thread (see
/// `enter_private_mount_namespace`) and mounts a tmpfs on `dir`.
fn mount_private_tmpfs(dir: &Path) -> Result<(), String> {
    // Mounting without a private namespace could propagate to the host:
    // give up on tmpfs then.
    enter_private_mount_namespace()?;
    let target = CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: every pointer is a valid NUL-terminated string.
    let rc = unsafe {
        libc::mount(
            c"vfscale-bench".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755".as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(last_err("mount tmpfs"));
    }
    Ok(())
}

/// The filesystem type of `path`, by statfs magic.
pub fn fs_type(path: &Path) -> String {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return "unknown".into();
    };
    let mut st = core::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a valid path and `st` is writable statfs storage.
    if unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return "unknown".into();
    }
    // SAFETY: statfs succeeded and filled `st`.
    let magic = unsafe { st.assume_init() }.f_type as u64;
    match magic {
        0x0102_1994 => "tmpfs".into(),
        0xEF53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x6573_5546 => "fuse".into(),
        0x6969 => "nfs".into(),
        0x0102_1997 => "9p".into(),
        0x2FC1_2FC1 => "zfs".into(),
        m => format!("type {m:#x}"),
    }
}

/// One run's directory below the `KernelDir`, removed on drop.
pub struct KernelTarget {
    dir: PathBuf,
    dirfd: libc::c_int,
    /// `Kernel`, or `Fuse` when the directory is a vfscale FUSE mount.
    id: TargetId,
}

impl KernelTarget {
    pub fn new(base: &KernelDir, label: &str) -> Result<KernelTarget, String> {
        KernelTarget::in_dir(base.path(), label, TargetId::Kernel)
    }

    /// A run directory below `base`, reported as target `id`.
    pub fn in_dir(base: &Path, label: &str, id: TargetId) -> Result<KernelTarget, String> {
        let dir = base.join(format!("{label}-{}", std::process::id()));
        // A leftover of an aborted run of ours may be there.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let c = CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: `c` is a valid NUL-terminated path.
        let dirfd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        if dirfd < 0 {
            return Err(last_err(&format!("open {}", dir.display())));
        }
        Ok(KernelTarget { dir, dirfd, id })
    }
}

impl Drop for KernelTarget {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.dirfd) };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

impl Target for KernelTarget {
    type Path = CString;
    type Thread = Vec<u8>;

    fn id(&self) -> TargetId {
        self.id
    }

    fn reclaim_groups(
        &self,
        groups: usize,
        passes: usize,
        naive: bool,
    ) -> OpResult<(usize, Vec<f64>)> {
        if naive {
            return Err(OpError::Unsupported(
                "the kernel's walk is what it is (no naive switch)".into(),
            ));
        }
        if self.id != TargetId::Kernel {
            return Err(OpError::Unsupported("kernel target only".into()));
        }
        let cap = std::env::var("VFSCALE_BENCH_KERNEL_GROUPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let groups = groups.min(cap);
        let dir = self.dir.clone();
        // A thread of its own: it unshares its mount namespace, so every
        // tmpfs it (or its children, cgroup v2) mounts goes away with it
        // even if cleanup fails, and under cgroup v1 it moves only itself
        // between memory cgroups (kernel_reclaim.rs).
        std::thread::scope(|s| {
            s.spawn(|| super::kernel_reclaim::run(&dir, groups, passes))
                .join()
        })
        .map_err(|_| OpError::Failed("reclaim-groups thread panicked".into()))?
        .map(|t| (groups, t))
    }

    fn in_process(&self) -> bool {
        false
    }

    fn fd_implosion(
        &self,
        procs: usize,
        objects: usize,
        _deferral: Option<bool>,
    ) -> OpResult<super::Implosion> {
        super::kernel_implosion::implosion(self.dirfd, procs, objects)
    }

    fn path(&self, rel: &str) -> CString {
        CString::new(rel).expect("bench paths have no NUL")
    }

    fn thread(&self) -> OpResult<Vec<u8>> {
        Ok(vec![0; GETDENTS_BUF])
    }

    #[inline]
    fn stat(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<Kind> {
        let mut st = core::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `p` is NUL-terminated and `st` is writable stat storage.
        if unsafe { libc::fstatat(self.dirfd, p.as_ptr(), st.as_mut_ptr(), 0) } != 0 {
            return Err(failed("fstatat", p, &errno()));
        }
        // SAFETY: fstatat succeeded and filled `st`.
        Ok(Kind::from_mode(unsafe { st.assume_init() }.st_mode))
    }

    #[inline]
    fn anon_churn(&self, _th: &mut Vec<u8>, kind: AnonKind) -> OpResult<()> {
        let what = kind.name();
        // SAFETY (all arms): plain syscalls; every descriptor made here is
        // closed once below.
        let fds: [libc::c_int; 2] = unsafe {
            match kind {
                AnonKind::Socket => [libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0), -1],
                AnonKind::Pipe => {
                    let mut fds = [-1; 2];
                    if libc::pipe2(fds.as_mut_ptr(), 0) != 0 {
                        fds[0] = -1;
                    }
                    fds
                }
                AnonKind::Eventfd => [libc::eventfd(0, 0), -1],
                AnonKind::Memfd => [libc::memfd_create(c"churn".as_ptr(), 0), -1],
            }
        };
        if fds[0] < 0 {
            return Err(failed("create", &what, &errno()));
        }
        for fd in fds.into_iter().filter(|&fd| fd >= 0) {
            // SAFETY: made above, closed once.
            if unsafe { libc::close(fd) } != 0 {
                return Err(failed("close", &what, &errno()));
            }
        }
        Ok(())
    }

    #[inline]
    fn open_close(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        // SAFETY: `p` is NUL-terminated.
        let fd = unsafe { libc::openat(self.dirfd, p.as_ptr(), libc::O_RDONLY) };
        if fd < 0 {
            return Err(failed("openat", p, &errno()));
        }
        close(fd, p)
    }

    #[inline]
    fn create(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY;
        // SAFETY: `p` is NUL-terminated; the mode argument is passed as the
        // variadic the C prototype expects.
        let fd = unsafe { libc::openat(self.dirfd, p.as_ptr(), flags, 0o644 as libc::c_uint) };
        if fd < 0 {
            return Err(failed("openat(O_CREAT|O_EXCL)", p, &errno()));
        }
        close(fd, p)
    }

    #[inline]
    fn unlink(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        // SAFETY: `p` is NUL-terminated.
        if unsafe { libc::unlinkat(self.dirfd, p.as_ptr(), 0) } != 0 {
            return Err(failed("unlinkat", p, &errno()));
        }
        Ok(())
    }

    fn mkdir(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        // SAFETY: `p` is NUL-terminated.
        if unsafe { libc::mkdirat(self.dirfd, p.as_ptr(), 0o755) } != 0 {
            return Err(failed("mkdirat", p, &errno()));
        }
        Ok(())
    }

    fn rmdir(&self, _th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        // SAFETY: `p` is NUL-terminated.
        if unsafe { libc::unlinkat(self.dirfd, p.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(failed("unlinkat(AT_REMOVEDIR)", p, &errno()));
        }
        Ok(())
    }

    fn readdir(&self, buf: &mut Vec<u8>, p: &CString) -> OpResult<u64> {
        // SAFETY: `p` is NUL-terminated.
        let fd =
            unsafe { libc::openat(self.dirfd, p.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        if fd < 0 {
            return Err(failed("openat(O_DIRECTORY)", p, &errno()));
        }
        let mut n = 0;
        let res = loop {
            // SAFETY: `buf` is writable for `buf.len()` bytes and `fd` is open.
            let len =
                unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            match len {
                0 => break Ok(n),
                l if l < 0 => break Err(failed("getdents64", p, &errno())),
                l => n += count_dirents(&buf[..l as usize]),
            }
        };
        close(fd, p)?;
        res
    }

    #[inline]
    fn chmod(&self, _th: &mut Vec<u8>, p: &CString, mode: u32) -> OpResult<()> {
        // SAFETY: `p` is NUL-terminated.
        if unsafe { libc::fchmodat(self.dirfd, p.as_ptr(), mode, 0) } != 0 {
            return Err(failed("fchmodat", p, &errno()));
        }
        Ok(())
    }
}

#[inline]
fn close(fd: libc::c_int, p: &CString) -> OpResult<()> {
    // SAFETY: `fd` was returned by a successful open and is closed once.
    if unsafe { libc::close(fd) } != 0 {
        return Err(failed("close", p, &errno()));
    }
    Ok(())
}
