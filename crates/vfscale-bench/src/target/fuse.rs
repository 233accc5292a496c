//! The `fuse` target: vfscale mounted through FUSE for the run (a fresh
//! namespace on a temporary directory, two server threads, 60 s TTLs), driven with the
//! kernel target's real syscalls. Unmounted when the target is dropped.
//!
//! Needs root and /dev/fuse; otherwise instantiation explains why not.

use super::{kernel::KernelTarget, Kind, Op, OpResult, Target, TargetId};
use std::ffi::CString;

/// FUSE server threads of a bench mount.
const SERVER_THREADS: usize = 2;

/// Entry and attribute TTLs of a bench mount. Long, because with the tmpfs
/// backend every change reaches the kernel's caches as an invalidation
/// (vfscale-fuse/src/invalidate.rs), so the TTL only decides how often the
/// kernel re-asks about names and attributes nothing changed: with 1 s, a
/// name created more than a second ago costs a LOOKUP before its unlink
/// (readdir-large's unlink phase: 3 requests per unlink instead of 2).
const TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// A mounted vfscale and the run directory on it. Field order is drop
/// order: run directory removed, then unmount, then the mountpoint removed.
pub struct FuseTarget {
    inner: KernelTarget,
    _mount: vfscale_fuse::Mounted,
    _dir: tempfile::TempDir,
    _vfs: vfscale::Vfs,
}

impl FuseTarget {
    pub fn new(label: &str) -> Result<FuseTarget, String> {
        if !std::path::Path::new("/dev/fuse").exists() {
            return Err("/dev/fuse is missing".into());
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting without fusermount needs root".into());
        }
        let dir = tempfile::Builder::new()
            .prefix("vfscale-bench-fuse-")
            .tempdir()
            .map_err(|e| format!("cannot make a mountpoint: {e}"))?;
        let vfs = vfscale::Vfs::new();
        let cfg = vfscale_fuse::MountConfig {
            threads: SERVER_THREADS,
            ttls: vfscale_fuse::Ttls {
                entry: TTL,
                attr: TTL,
            },
            ..vfscale_fuse::MountConfig::default()
        };
        let mount = vfscale_fuse::mount(&vfs, dir.path(), &cfg)
            .map_err(|e| format!("FUSE mount on {}: {e}", dir.path().display()))?;
        let inner = KernelTarget::in_dir(dir.path(), label, TargetId::Fuse)?;
        Ok(FuseTarget {
            inner,
            _mount: mount,
            _dir: dir,
            _vfs: vfs,
        })
    }
}

impl Target for FuseTarget {
    type Path = CString;
    type Thread = Vec<u8>;

    fn id(&self) -> TargetId {
        TargetId::Fuse
    }
    fn lacks(&self, op: Op) -> Option<&'static str> {
        (op == Op::FdImplosion)
            .then_some("the descriptors would be the kernel's: the kernel target measures that")
    }

    fn in_process(&self) -> bool {
        true
    }
    fn path(&self, rel: &str) -> CString {
        self.inner.path(rel)
    }
    fn thread(&self) -> OpResult<Vec<u8>> {
        self.inner.thread()
    }
    fn stat(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<Kind> {
        self.inner.stat(th, p)
    }
    fn open_close(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        self.inner.open_close(th, p)
    }
    fn create(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        self.inner.create(th, p)
    }
    fn unlink(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        self.inner.unlink(th, p)
    }
    fn mkdir(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        self.inner.mkdir(th, p)
    }
    fn rmdir(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<()> {
        self.inner.rmdir(th, p)
    }
    fn readdir(&self, th: &mut Vec<u8>, p: &CString) -> OpResult<u64> {
        self.inner.readdir(th, p)
    }
    fn chmod(&self, th: &mut Vec<u8>, p: &CString, mode: u32) -> OpResult<()> {
        self.inner.chmod(th, p, mode)
    }
}
