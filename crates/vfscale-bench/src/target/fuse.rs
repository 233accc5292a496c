//! The `fuse` target: vfscale mounted through FUSE for the run (a fresh
//! namespace on a temporary directory, two server threads, 60 s TTLs), driven with the
//! kernel target's real syscalls. Unmounted when the target is dropped.
//! The `fuse-uring` target is the same mount served over FUSE-over-io_uring
//! (`MountConfig::uring`); where the kernel refuses the ring it is not run
//! (instantiation says why) rather than measured over /dev/fuse.
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
    id: TargetId,
    _mount: vfscale_fuse::Mounted,
    _dir: tempfile::TempDir,
    _vfs: vfscale::Vfs,
}

impl FuseTarget {
    pub fn new(label: &str, uring: bool) -> Result<FuseTarget, String> {
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
            uring,
            ..vfscale_fuse::MountConfig::default()
        };
        let mount = vfscale_fuse::mount(&vfs, dir.path(), &cfg)
            .map_err(|e| format!("FUSE mount on {}: {e}", dir.path().display()))?;
        if let Some(why) = mount.uring_refusal() {
            return Err(format!("FUSE over io_uring refused: {why}"));
        }
        let id = if uring {
            TargetId::FuseUring
        } else {
            TargetId::Fuse
        };
        let inner = KernelTarget::in_dir(dir.path(), label, id)?;
        Ok(FuseTarget {
            inner,
            id,
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
        self.id
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
