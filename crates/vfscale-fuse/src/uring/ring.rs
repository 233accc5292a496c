//! The ring queues: one io_uring per possible CPU, each served by one
//! thread pinned to that CPU. The kernel hands a request to the queue of
//! the CPU its caller runs on (fuse_uring_task_to_queue), so the request is
//! served on the caller's CPU, and the reply rides the SQE that fetches the
//! next request (FUSE_IO_URING_CMD_COMMIT_AND_FETCH): no read()/write() of
//! /dev/fuse and no cross-CPU wake-up per request.
//!
//! Invariants: each entry (header + payload buffer) has exactly one command
//! in the kernel or is being served by its thread, never both; the buffers
//! outlive every command that names them (a stopped queue waits, bounded,
//! for the kernel to complete its commands — at teardown it completes them
//! all with ENOTCONN — and leaks its buffers rather than free memory the
//! kernel may still write if some are still out); a panic while serving
//! is answered EIO and the queue goes on; each queue's commands are
//! submitted by the thread that serves them, because the kernel copies
//! requests into the buffers from that task's context (task work).

use super::abi::{self, HEADER_SIZE};
use super::{dispatch, Registration};
use crate::ops::Ops;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Ring = IoUring<squeue::Entry128, cqueue::Entry>;

/// How long a stopped queue waits for the kernel to give its commands back
/// before leaking its buffers instead, and the step of that wait.
const DRAIN_BOUND: Duration = Duration::from_secs(2);
const DRAIN_STEP_NS: u32 = 50_000_000;

/// One header + payload pair the kernel fills with a request.
struct Ent {
    header: Box<[u8]>,
    payload: Box<[u8]>,
    /// `struct iovec[2]` as (base, len) pairs, read by the kernel at
    /// REGISTER.
    iov: Box<[u64; 4]>,
    /// Whether the entry's last command was REGISTER (to resubmit it
    /// after EINTR/EAGAIN) or COMMIT_AND_FETCH.
    registered: bool,
    commit_id: u64,
}

// `Ent::iov` is two `struct iovec`s as four u64s: 64-bit pointers only.
const _: () = assert!(std::mem::size_of::<libc::iovec>() == 16);
const _: () = assert!(std::mem::size_of::<usize>() == 8);
const _: () = assert!(std::mem::size_of::<squeue::Entry128>() == 128);

/// One CPU's queue, built before FUSE_INIT (so that a kernel or sandbox
/// without io_uring is found out before the ring is asked for).
pub struct Queue {
    // Field order is drop order: the ring (and with it every command the
    // kernel holds) goes before the buffers.
    ring: Ring,
    ents: Vec<Ent>,
    qid: u16,
    /// Commands submitted and not completed.
    inflight: usize,
    /// Requests served (written by this queue's thread only).
    served: Arc<AtomicU64>,
}

/// The possible CPUs (the kernel makes one queue per possible CPU and
/// uses the ring only once every queue has registered). Hosts with many hot-pluggable CPU slots get a queue (a mostly idle
/// thread and untouched buffers) per slot.
pub fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| cpu_count(&s))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The CPU count of a sysfs CPU list ("0-3,8-11" → 12, numbered from 0).
fn cpu_count(list: &str) -> Option<usize> {
    list.trim()
        .split(',')
        .filter_map(|r| r.rsplit('-').next()?.parse::<usize>().ok())
        .max()
        .map(|last| last + 1)
}

impl Queue {
    pub fn new(qid: u16, depth: usize, payload_size: usize) -> io::Result<Queue> {
        let ring = Ring::builder()
            .setup_cqsize((depth * 2) as u32)
            .build(depth as u32)?;
        let ents = (0..depth)
            .map(|_| {
                let header = vec![0u8; HEADER_SIZE].into_boxed_slice();
                // Zeroed by the allocator's fresh mapping: pages are touched
                // only as requests use them.
                let payload = vec![0u8; payload_size].into_boxed_slice();
                let iov = Box::new([
                    header.as_ptr() as u64,
                    HEADER_SIZE as u64,
                    payload.as_ptr() as u64,
                    payload_size as u64,
                ]);
                Ent {
                    header,
                    payload,
                    iov,
                    registered: false,
                    commit_id: 0,
                }
            })
            .collect();
        Ok(Queue {
            ring,
            ents,
            qid,
            inflight: 0,
            served: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The count of requests this queue has served.
    pub fn served(&self) -> Arc<AtomicU64> {
        self.served.clone()
    }

    fn command(&self, idx: usize, fd: RawFd) -> squeue::Entry128 {
        let ent = &self.ents[idx];
        if ent.registered {
            opcode::UringCmd80::new(types::Fd(fd), abi::CMD_COMMIT_AND_FETCH)
                .cmd(abi::cmd_req(self.qid, ent.commit_id))
                .build()
                .user_data(idx as u64)
        } else {
            let e = opcode::UringCmd80::new(types::Fd(fd), abi::CMD_REGISTER)
                .cmd(abi::cmd_req(self.qid, 0))
                .addr(Some(ent.iov.as_ptr() as u64))
                .build()
                .user_data(idx as u64);
            with_len(e, 2)
        }
    }

    fn push(&mut self, idx: usize, fd: RawFd) -> io::Result<()> {
        let e = self.command(idx, fd);
        // SAFETY: the command names this entry's iovecs, header and payload
        // buffers, which live in `self.ents` until after the ring is
        // dropped, or are leaked if commands are still in flight then
        // (`serve`'s exit), so the kernel never writes freed memory.
        let pushed = unsafe { self.ring.submission().push(&e) };
        match pushed {
            Ok(()) => {
                self.inflight += 1;
                Ok(())
            }
            // One command per entry and `depth` SQ slots: cannot be full.
            Err(_) => Err(io::Error::other("io_uring submission queue full")),
        }
    }

    /// Submits every entry's REGISTER. A refused one (the kernel then
    /// serves the connection over /dev/fuse) is reported as its errno.
    fn register(&mut self, fd: RawFd, early: &mut Vec<(u64, i32)>) -> Result<(), Registration> {
        for idx in 0..self.ents.len() {
            self.push(idx, fd).map_err(Registration::Failed)?;
        }
        self.ring.submit().map_err(Registration::Failed)?;
        // The kernel runs REGISTER inline: a refusal is already completed.
        early.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        self.inflight -= early.len();
        if let Some(&(_, res)) = early.iter().find(|&&(_, res)| res < 0) {
            return Err(Registration::Refused(io::Error::from_raw_os_error(-res)));
        }
        Ok(())
    }

    /// Registers (reporting the outcome on `ready`), then serves requests
    /// until the connection ends. Runs on the queue's own thread.
    pub fn serve(
        mut self,
        fd: RawFd,
        ops: Arc<Ops>,
        ready: mpsc::Sender<Result<(), Registration>>,
    ) {
        pin_to_cpu(self.qid as usize);
        let mut done: Vec<(u64, i32)> = Vec::with_capacity(self.ents.len());
        let r = self.register(fd, &mut done);
        let failed = r.is_err();
        let _ = ready.send(r);
        if !failed {
            self.run(fd, &ops, &mut done);
        }
        self.drain();
        if self.inflight > 0 {
            // The kernel may still hold commands naming the buffers:
            // close the ring, then leak the buffers rather than free them.
            let Queue { ring, ents, .. } = self;
            drop(ring);
            std::mem::forget(ents);
        }
    }

    /// Once the queue stops (the connection ended): submits what is
    /// pending and waits, for a bounded time, until the kernel has
    /// completed every command still naming this queue's buffers (it
    /// completes them with ENOTCONN when the connection is torn down), so
    /// that they can be freed.
    fn drain(&mut self) {
        let deadline = Instant::now() + DRAIN_BOUND;
        while self.inflight > 0 && Instant::now() < deadline {
            let ts = types::Timespec::new().nsec(DRAIN_STEP_NS);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                Err(_) => return,
            }
            let n = self.ring.completion().count();
            self.inflight -= n.min(self.inflight);
        }
    }

    fn run(&mut self, fd: RawFd, ops: &Ops, done: &mut Vec<(u64, i32)>) {
        loop {
            for (user_data, res) in done.drain(..) {
                let idx = user_data as usize;
                if idx >= self.ents.len() {
                    continue;
                }
                if res == -libc::EINTR || res == -libc::EAGAIN {
                    if self.push(idx, fd).is_err() {
                        return;
                    }
                    continue;
                }
                if res < 0 {
                    // ENOTCONN/ECONNABORTED: unmounted or aborted. Anything
                    // else is a protocol error this queue cannot recover
                    // from; the connection's other queues go on.
                    if res != -libc::ENOTCONN && res != -libc::ECONNABORTED {
                        eprintln!(
                            "vfscale-fuse: io_uring queue {} stopped: {}",
                            self.qid,
                            io::Error::from_raw_os_error(-res)
                        );
                    }
                    return;
                }
                let ent = &mut self.ents[idx];
                ent.registered = true;
                ent.commit_id = abi::u64_at(&ent.header, abi::ENT_COMMIT_ID_OFF);
                dispatch::serve_catching(ops, &mut ent.header, &mut ent.payload);
                // Relaxed: a statistic, read by `Mounted::ring_requests`
                // with no ordering against the requests themselves.
                self.served.fetch_add(1, Ordering::Relaxed);
                if self.push(idx, fd).is_err() {
                    return;
                }
            }
            // Submits the replies (COMMIT_AND_FETCH) and sleeps until the
            // next request arrives.
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => {
                    eprintln!("vfscale-fuse: io_uring queue {} stopped: {e}", self.qid);
                    return;
                }
            }
            done.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            self.inflight -= done.len();
        }
    }
}

/// `e` with the SQE's `len` field set (FUSE's REGISTER takes the iovec
/// count there, which `UringCmd80` does not expose).
fn with_len(e: squeue::Entry128, len: u32) -> squeue::Entry128 {
    // SAFETY: `Entry128` is `#[repr(C)]` over (`io_uring_sqe`, [u8; 64]),
    // 128 bytes (asserted above), made only of integers and unions of
    // integers, so every byte pattern is a valid value of both types; the
    // uapi places the 32-bit `len` at byte 24 of `io_uring_sqe`.
    let mut raw: [u8; 128] = unsafe { std::mem::transmute(e) };
    raw[24..28].copy_from_slice(&len.to_le_bytes());
    // SAFETY: as above.
    unsafe { std::mem::transmute::<[u8; 128], squeue::Entry128>(raw) }
}

/// Pins the calling thread to `cpu` (best effort: a CPU that is offline
/// leaves the thread where it is; its queue gets no requests then).
fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data, zero is an empty set; CPU_SET
    // writes inside it (checked against its size below); the call reads
    // `size_of::<cpu_set_t>()` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return;
        }
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::cpu_count;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_count("0-1\n"), Some(2));
        assert_eq!(cpu_count("0"), Some(1));
        assert_eq!(cpu_count("0-3,8-11"), Some(12));
        assert_eq!(cpu_count(""), None);
        assert_eq!(cpu_count("x"), None);
    }
}
