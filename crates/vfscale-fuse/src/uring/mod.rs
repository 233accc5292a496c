//! FUSE over io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING): the opt-in
//! second transport (`MountConfig::uring`, `vfscale mount --uring`).
//!
//! Sequence: `prepare` (before the mount) sets the fuse module's
//! `enable_uring` parameter if it is off and we may write it, and builds
//! one io_uring per possible CPU; FUSE_INIT then arrives over /dev/fuse as
//! always and `VfsFs::init` asks for FUSE_OVER_IO_URING (max_write 1 MiB);
//! `start` (after the mount) restores the parameter, and each queue's
//! thread registers its entries. From then on the kernel sends every
//! request but FORGET, BATCH_FORGET and INTERRUPT through the rings
//! (those three, and the notifications we send, stay on /dev/fuse, which
//! fuser's workers keep serving). Until every queue has registered, the
//! kernel holds requests back; a refused REGISTER makes it fall back to
//! /dev/fuse for good.
//!
//! Invariants: the parameter is changed only while a mount asks for the
//! ring, under a process-wide lock, and put back as soon as FUSE_INIT is
//! answered (a connection that negotiated the ring keeps it whatever the
//! parameter says later); every failure before FUSE_INIT leaves the ring
//! unasked, with the reason reported, and the mount served classically.

mod abi;
mod dispatch;
mod harness;
mod ring;

use crate::ops::Ops;
pub use harness::EntryServer;
use ring::Queue;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Ring entries per CPU queue. One thread serves a queue, so more entries
/// only let the kernel hand over several requests per wake-up.
pub const QUEUE_DEPTH: usize = 4;

const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

/// Serialises the parameter's set-mount-restore among this process's
/// mounts.
static PARAM_LOCK: Mutex<()> = Mutex::new(());

/// Puts `enable_uring` back to N when dropped, if we set it.
struct ParamGuard {
    restore: bool,
    _lock: MutexGuard<'static, ()>,
}

impl Drop for ParamGuard {
    fn drop(&mut self) {
        if self.restore {
            let _ = std::fs::write(PARAM, "N");
        }
    }
}

/// What a mount asking for the ring needs before FUSE_INIT.
pub struct Plan {
    queues: Vec<Queue>,
    param: ParamGuard,
}

/// Readies the ring for a mount whose max_write will be `max_write`, or
/// says why it cannot be used here.
pub fn prepare(max_write: usize) -> Result<Plan, String> {
    let lock = PARAM_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let on = match std::fs::read_to_string(PARAM) {
        Ok(s) => matches!(s.trim(), "Y" | "1"),
        Err(e) => {
            return Err(format!(
                "this kernel has no FUSE over io_uring ({PARAM}: {e}; needs Linux 6.14+ \
                 with CONFIG_FUSE_IO_URING=y)"
            ))
        }
    };
    let mut param = ParamGuard {
        restore: false,
        _lock: lock,
    };
    if !on {
        std::fs::write(PARAM, "Y").map_err(|e| {
            format!("{PARAM} is N and cannot be set ({e}; as root: echo Y > {PARAM})")
        })?;
        param.restore = true;
    }
    // The kernel's minimum payload (FUSE_MIN_READ_BUFFER) is 8 KiB.
    let payload = max_write.max(8192);
    let queues = (0..ring::possible_cpus())
        .map(|qid| Queue::new(qid as u16, QUEUE_DEPTH, payload))
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| format!("io_uring is not available ({e})"))?;
    Ok(Plan { queues, param })
}

/// The ring's serving threads.
pub struct Rings {
    pub threads: Vec<JoinHandle<()>>,
    pub queues: usize,
    /// Each queue's count of requests served.
    pub served: Vec<Arc<AtomicU64>>,
}

/// After FUSE_INIT granted the ring: restores the parameter, then starts
/// and registers every queue on `fd` (a descriptor of the connection).
/// `Ok(Err(reason))` when the kernel refused a queue and serves the
/// connection over /dev/fuse instead; `Err` for a failure that leaves the
/// kernel waiting for a ring that will not come (the mount must go).
pub fn start(plan: Plan, fd: OwnedFd, ops: Arc<Ops>) -> io::Result<Result<Rings, String>> {
    let Plan { queues, param } = plan;
    drop(param);
    let fd = Arc::new(fd);
    let (tx, rx) = mpsc::channel();
    let n = queues.len();
    let mut threads = Vec::with_capacity(n);
    let served = queues.iter().map(Queue::served).collect();
    for q in queues {
        let (fd, ops, tx) = (fd.clone(), ops.clone(), tx.clone());
        let t = std::thread::Builder::new()
            .name("vfscale-ring".into())
            .spawn(move || q.serve(fd.as_raw_fd(), ops, tx))?;
        threads.push(t);
    }
    drop(tx);
    let mut refused = None;
    for _ in 0..n {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            // The kernel refused a REGISTER: it has switched the
            // connection back to /dev/fuse.
            Ok(Err(Registration::Refused(e))) => {
                refused.get_or_insert(format!("the kernel refused a ring queue ({e})"));
            }
            Ok(Err(Registration::Failed(e))) => return Err(e),
            Err(_) => return Err(io::Error::other("io_uring queue thread did not start")),
        }
    }
    Ok(match refused {
        None => Ok(Rings {
            threads,
            queues: n,
            served,
        }),
        Some(r) => Err(r),
    })
}

/// Why a queue did not register.
pub enum Registration {
    /// The kernel answered the REGISTER with this error (and falls back).
    Refused(io::Error),
    /// The REGISTER never reached the kernel.
    Failed(io::Error),
}
