//! Shared helpers of the mount tests: mount a fresh namespace on a temp
//! dir (or skip with a printed reason), unmount in `Drop` even on panic.
//!
//! The transport: the `uring_*` test files include the classic ones and
//! run every mount over FUSE-over-io_uring (`MountConfig::uring`), chosen
//! here by the test binary's name (or VFSCALE_FUSE_URING=1 for any test);
//! such a mount that the kernel serves over /dev/fuse instead skips its
//! test with the printed reason.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use vfscale::{Process, Vfs};
use vfscale_fuse::{MountConfig, Mounted};

/// A mounted namespace. Field order is drop order: unmount first, then
/// remove the directory.
pub struct TestMount {
    pub mounted: Option<Mounted>,
    pub vfs: Vfs,
    dir: tempfile::TempDir,
}

impl TestMount {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A root process over the same namespace (bypassing the kernel).
    pub fn core(&self) -> Process {
        self.vfs.root_process()
    }
}

/// Mounts with `threads` workers and allow_other, or returns None after
/// printing why the test cannot run here.
pub fn mount_with(threads: usize) -> Option<TestMount> {
    mount_config(MountConfig {
        threads,
        ..MountConfig::default()
    })
}

/// Mounts with `cfg` (allow_other forced on), or returns None after
/// printing why the test cannot run here.
pub fn mount_config(cfg: MountConfig) -> Option<TestMount> {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: /dev/fuse is missing");
        return None;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: mounting without fusermount needs root");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("vfscale-fuse-")
        .tempdir()
        .expect("temp dir");
    // World-searchable, so other uids can reach the mount.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let vfs = Vfs::new();
    let cfg = MountConfig {
        allow_other: true,
        uring: cfg.uring || over_uring(),
        ..cfg
    };
    match vfscale_fuse::mount(&vfs, dir.path(), &cfg) {
        Ok(m) if cfg.uring && m.transport() == vfscale_fuse::Transport::DevFuse => {
            eprintln!(
                "SKIPPED: the ring was refused: {}",
                m.uring_refusal().unwrap_or("no reason given")
            );
            None
        }
        Ok(m) => Some(TestMount {
            mounted: Some(m),
            vfs,
            dir,
        }),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            eprintln!("SKIPPED: mount refused with EPERM (no CAP_SYS_ADMIN here)");
            None
        }
        Err(e) => panic!("mount failed: {e}"),
    }
}

/// True when this test binary's mounts are to be served over io_uring.
pub fn over_uring() -> bool {
    if std::env::var_os("VFSCALE_FUSE_URING").is_some_and(|v| v == "1") {
        return true;
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("uring_"))
        })
        .unwrap_or(false)
}

pub fn mount() -> Option<TestMount> {
    mount_with(2)
}

/// The errno of a failed std::fs call.
pub fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.expect_err("expected an error")
        .raw_os_error()
        .expect("an OS error")
}

pub fn cstr(p: &Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// True if `path` is a mount point in this mount namespace.
pub fn is_mounted(path: &Path) -> bool {
    let want = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
}

/// Unmounts `mounted`, waiting up to 5 s while the kernel calls it busy.
/// A mount is busy for a moment after its last user is gone: the kernel
/// may answer the last close before the server has handled its
/// asynchronous RELEASE, and another test of the same binary that forks a
/// child holds copies of this test's descriptors until the child's exec
/// closes them (each seen once under a full test run's load).
pub fn unmount_once_idle(mounted: &mut Mounted) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match mounted.unmount() {
            Ok(()) => return,
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("unmount of an idle mount: {e}"),
        }
    }
}
