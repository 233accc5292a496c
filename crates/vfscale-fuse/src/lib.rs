//! vfscale's namespace as a real filesystem through FUSE (`fuser`, pure
//! Rust: as root the mount is a mount(2) call, no libfuse, no fusermount).
//!
//! Layers: `server` (the FUSE operations, each one namespace-level call
//! with the request's credentials), `nodes` (node ids, lookup counts,
//! pinned handles), `creds` (request credentials), `convert` (ABI types),
//! `invalidate` (kernel cache invalidation for changes made beside the
//! mount).
//! This file mounts and unmounts.
//!
//! Threads: `threads` workers, each with its own cloned /dev/fuse
//! descriptor (FUSE_DEV_IOC_CLONE), each handling the requests it read.
//!
//! Invariants: a `Mounted` is unmounted when dropped (lazily if busy), so a
//! test that panics leaves no mount behind; a server that dies leaves a
//! mount whose every access fails with ENOTCONN until `umount -l`.

mod convert;
mod creds;
mod invalidate;
mod nodes;
mod ops;
mod server;

pub use server::Ttls;
/// The FUSE operations themselves, for harnesses that drive a
/// `fuser::Session` over their own descriptor (the request fuzz target).
pub use server::VfsFs;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use vfscale::{Namespace, Vfs};

/// How to serve a mount.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// Worker threads (each with its own /dev/fuse descriptor).
    pub threads: usize,
    pub ttls: Ttls,
    /// Let other users (not only the mounting one) use the mount.
    pub allow_other: bool,
    /// FUSE_WRITEBACK_CACHE: the kernel buffers writes in its page cache
    /// and sends them later, in pages (see `server` for what changes).
    pub writeback_cache: bool,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            threads: 2,
            ttls: Ttls {
                entry: Duration::from_secs(1),
                attr: Duration::from_secs(1),
            },
            allow_other: false,
            writeback_cache: false,
        }
    }
}

/// A served mount. Dropping it unmounts.
pub struct Mounted {
    mountpoint: PathBuf,
    ns: Arc<Namespace>,
    worker: Option<JoinHandle<io::Result<()>>>,
    done: Arc<AtomicBool>,
    /// The kernel-invalidation registration, removed once served no more.
    observer: Option<(Vfs, vfscale::ObserverId)>,
}

/// Mounts `vfs`'s root at `mountpoint` and serves it from background
/// threads until unmounted.
pub fn mount(vfs: &Vfs, mountpoint: &Path, cfg: &MountConfig) -> io::Result<Mounted> {
    use fuser::{Config, MountOption, SessionACL};
    let ns = Arc::new(Namespace::new(vfs));
    let fs = server::VfsFs::new(ns.clone(), cfg.ttls).writeback_cache(cfg.writeback_cache);
    let nodes = fs.ops.nodes.clone();
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("vfscale".into()),
        MountOption::Subtype("vfscale".into()),
        MountOption::RW,
        MountOption::Dev,
        MountOption::Suid,
        MountOption::Exec,
    ];
    config.acl = if cfg.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(cfg.threads.max(1));
    config.clone_fd = true;
    let session = fuser::Session::new(fs, mountpoint, &config)?;
    let observer = vfs.observe_names(invalidate::Invalidator::start(nodes, session.notifier()));
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let worker = std::thread::Builder::new()
        .name("vfscale-fuse".into())
        .spawn(move || {
            let r = session.run();
            // Release: pairs with the Acquire in `is_served`.
            flag.store(true, Ordering::Release);
            r
        })?;
    Ok(Mounted {
        mountpoint: mountpoint.canonicalize()?,
        ns,
        worker: Some(worker),
        done,
        observer: Some((vfs.clone(), observer)),
    })
}

fn umount2(path: &Path, flags: i32) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unmounts the vfscale mount at `mountpoint` (`vfscale umount`): EBUSY
/// while files are open in it, unless `lazy` (MNT_DETACH).
pub fn unmount_path(mountpoint: &Path, lazy: bool) -> io::Result<()> {
    umount2(mountpoint, if lazy { libc::MNT_DETACH } else { 0 })
}

impl Mounted {
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The namespace served (for calls that bypass the kernel).
    pub fn namespace(&self) -> &Arc<Namespace> {
        &self.ns
    }

    /// True until the session ends (unmounted by anyone, or aborted).
    pub fn is_served(&self) -> bool {
        // Acquire: pairs with the Release store when the session ends.
        !self.done.load(Ordering::Acquire)
    }

    /// Unmounts (EBUSY while busy, the mount staying up) and waits for the
    /// workers to finish.
    pub fn unmount(&mut self) -> io::Result<()> {
        if self.is_served() {
            umount2(&self.mountpoint, 0)?;
        }
        self.join()
    }

    /// Waits for the session to end (after an unmount from elsewhere).
    pub fn join(&mut self) -> io::Result<()> {
        self.stop_invalidating();
        match self.worker.take() {
            Some(w) => w
                .join()
                .map_err(|_| io::Error::other("FUSE session thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Mounted {
    fn stop_invalidating(&mut self) {
        if let Some((vfs, id)) = self.observer.take() {
            vfs.unobserve_names(id);
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.stop_invalidating();
        if self.worker.is_none() {
            return;
        }
        if self.is_served() && umount2(&self.mountpoint, 0).is_err() {
            // Busy (or already gone): detach; the session ends when the
            // last file in it is closed, so do not wait for it here.
            let _ = umount2(&self.mountpoint, libc::MNT_DETACH);
            return;
        }
        let _ = self.join();
    }
}
