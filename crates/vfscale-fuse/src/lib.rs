//! vfscale's namespace as a real filesystem through FUSE (`fuser`, pure
//! Rust: as root the mount is a mount(2) call, no libfuse, no fusermount).
//!
//! Layers: `ops` (the FUSE operations, each one namespace-level call with
//! the request's credentials, independent of the transport), two
//! transports calling them: `server` (fuser's `Filesystem`, requests read
//! from /dev/fuse) and `uring` (FUSE over io_uring, opt-in), `nodes` (node
//! ids, lookup counts, pinned handles), `creds` (request credentials),
//! `convert` (ABI types), `invalidate` (kernel cache invalidation for
//! changes made beside the mount).
//! This file mounts and unmounts.
//!
//! Threads: `threads` workers, each with its own cloned /dev/fuse
//! descriptor (FUSE_DEV_IOC_CLONE), each handling the requests it read;
//! with the ring, also one thread per possible CPU, pinned to it, serving
//! that CPU's ring queue (the /dev/fuse workers then see only FORGET and
//! INTERRUPT).
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
mod uring;

pub use server::Ttls;
/// The FUSE operations themselves, for harnesses that drive a
/// `fuser::Session` over their own descriptor (the request fuzz target).
pub use server::VfsFs;
/// The ring transport's request decoder and reply encoder without a
/// kernel, for harnesses (the ring fuzz target). Not a stable API.
#[doc(hidden)]
pub use uring::EntryServer as RingEntryServer;
pub use uring::QUEUE_DEPTH as URING_QUEUE_DEPTH;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use vfscale::{Namespace, Vfs};

/// The nice value of the /dev/fuse workers of a mount served over the
/// ring (see `mount`).
const URING_DEVFUSE_NICE: libc::c_int = 19;

/// How to serve a mount.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// Worker threads (each with its own /dev/fuse descriptor).
    pub threads: usize,
    pub ttls: Ttls,
    /// Let other users (not only the mounting one) use the mount.
    pub allow_other: bool,
    /// FUSE_WRITEBACK_CACHE: the kernel buffers writes in its page cache
    /// and sends them later, in pages (see `ops` for what changes).
    pub writeback_cache: bool,
    /// Serve requests over FUSE-over-io_uring (Linux 6.14+) when the
    /// kernel allows it, else over /dev/fuse (`Mounted::transport` and
    /// `Mounted::uring_refusal` say which and why). Sets the fuse module's
    /// `enable_uring` parameter for the mount's FUSE_INIT if it is off
    /// (root only) and puts it back after.
    pub uring: bool,
}

/// How a mount's requests reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// read()/write() on /dev/fuse (fuser's workers).
    DevFuse,
    /// FUSE over io_uring, one queue per possible CPU.
    IoUring { queues: usize },
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
            uring: false,
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
    /// The ring queues' threads (empty over /dev/fuse).
    ring_threads: Vec<JoinHandle<()>>,
    ring_served: Vec<Arc<std::sync::atomic::AtomicU64>>,
    transport: Transport,
    uring_refusal: Option<String>,
}

/// Mounts `vfs`'s root at `mountpoint` and serves it from background
/// threads until unmounted.
pub fn mount(vfs: &Vfs, mountpoint: &Path, cfg: &MountConfig) -> io::Result<Mounted> {
    use fuser::{Config, MountOption, SessionACL};
    use std::os::fd::AsFd;
    let ns = Arc::new(Namespace::new(vfs));
    let mut fs = server::VfsFs::new(ns.clone(), cfg.ttls).writeback_cache(cfg.writeback_cache);
    let nodes = fs.ops.nodes.clone();
    let ops = fs.ops.clone();
    let mut uring_refusal = None;
    let plan = if cfg.uring {
        match uring::prepare(server::URING_MAX_WRITE as usize) {
            Ok(p) => Some(p),
            Err(reason) => {
                uring_refusal = Some(reason);
                None
            }
        }
    } else {
        None
    };
    let granted = Arc::new(AtomicU8::new(server::URING_NOT_ASKED));
    if plan.is_some() {
        fs.uring = Some(granted.clone());
    }
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
    let mut transport = Transport::DevFuse;
    let mut ring_threads = Vec::new();
    let mut ring_served = Vec::new();
    if let Some(plan) = plan {
        // Relaxed: stored by `init` on this thread inside `Session::new`.
        if granted.load(Ordering::Relaxed) == server::URING_GRANTED {
            let fd = session.as_fd().try_clone_to_owned()?;
            // An error here leaves the kernel waiting for the ring: the
            // session is dropped, which unmounts.
            match uring::start(plan, fd, ops)? {
                Ok(rings) => {
                    transport = Transport::IoUring {
                        queues: rings.queues,
                    };
                    ring_threads = rings.threads;
                    ring_served = rings.served;
                }
                Err(reason) => uring_refusal = Some(reason),
            }
        } else {
            drop(plan);
            uring_refusal = Some("the kernel did not offer FUSE_OVER_IO_URING at FUSE_INIT".into());
        }
    }
    let observer = vfs.observe_names(invalidate::Invalidator::start(nodes, session.notifier()));
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let lazy_devfuse = matches!(transport, Transport::IoUring { .. });
    let worker = std::thread::Builder::new()
        .name("vfscale-fuse".into())
        .spawn(move || {
            if lazy_devfuse {
                // Over the ring, fuser's /dev/fuse workers (which inherit
                // this thread's nice value) only see FORGET, BATCH_FORGET
                // and INTERRUPT, none of which a caller waits for: at nice
                // 19 they yield the CPU to callers and ring threads and
                // read the forgets queued meanwhile in batches
                // (PERFORMANCE.md, FUSE session 6: +10% create-unlink at
                // one thread).
                // SAFETY: setpriority on the calling thread (who = 0) has no
                // memory effects.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, URING_DEVFUSE_NICE) };
            }
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
        ring_threads,
        ring_served,
        transport,
        uring_refusal,
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

    /// How requests reach the server.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Why a mount that asked for the ring is served over /dev/fuse.
    pub fn uring_refusal(&self) -> Option<&str> {
        self.uring_refusal.as_deref()
    }

    /// Requests served over the ring so far (0 over /dev/fuse).
    pub fn ring_requests(&self) -> u64 {
        self.ring_served
            .iter()
            // Relaxed: a statistic (see `uring/ring.rs`).
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
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
        let r = match self.worker.take() {
            Some(w) => w
                .join()
                .map_err(|_| io::Error::other("FUSE session thread panicked"))?,
            None => Ok(()),
        };
        // The connection is gone: each queue has had its commands
        // completed with ENOTCONN.
        for t in self.ring_threads.drain(..) {
            t.join()
                .map_err(|_| io::Error::other("FUSE ring thread panicked"))?;
        }
        r
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
