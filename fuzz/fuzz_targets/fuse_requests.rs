//! Fuzz target: the FUSE request boundary, from raw bytes.
//!
//! The server (`vfscale_fuse::VfsFs` inside a `fuser::Session`) reads from
//! one end of a SOCK_SEQPACKET socket pair instead of /dev/fuse, so each
//! write here is one request exactly as the kernel would deliver it: a
//! `fuse_in_header` this harness fills in (correct length, a fresh
//! `unique`, a node id picked from the ids the server has handed out, uid
//! root or 1000) followed by a body taken verbatim from the input. fuser
//! decodes it and our server runs it against a fresh `Vfs`.
//!
//! Checked: no panic and no unbounded allocation (libFuzzer's -rss_limit)
//! anywhere on the path; every request except FORGET/BATCH_FORGET gets
//! exactly one reply carrying its `unique`, within 10 s (a missing reply
//! hangs the kernel's caller); after DESTROY the session ends cleanly, and
//! once the namespace is gone and caches are dropped
//! `Vfs::check_invariants` passes.
//!
//! Two things are patched before sending, both facts the kernel guarantees:
//! - a MKNOD of S_IFIFO becomes S_IFREG, because a read of an empty FIFO
//!   with a writer open blocks by design, which this single-threaded
//!   harness would report as a hang;
//! - the `size` fields of WRITE and SETXATTR, and IOCTL's `in_size`, are
//!   made to match the bytes that follow: fuser 0.18's decoder `assert!`s
//!   that they do, or (IOCTL, found by this target in session 9) slices
//!   the payload by `in_size` unchecked — a panic in its worker thread on
//!   malformed input. The kernel never sends such a request (it builds
//!   the payload from these sizes), so it is fuser's to fix, not ours.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;
use vfscale::{Namespace, Vfs, VfsConfig};

const HEADER_LEN: usize = 40;
const OUT_HEADER_LEN: usize = 16;

const FUSE_LOOKUP: u32 = 1;
const FUSE_FORGET: u32 = 2;
const FUSE_SYMLINK: u32 = 6;
const FUSE_MKNOD: u32 = 8;
const FUSE_MKDIR: u32 = 9;
const FUSE_LINK: u32 = 13;
const FUSE_WRITE: u32 = 16;
const FUSE_SETXATTR: u32 = 21;
const FUSE_INIT: u32 = 26;
const FUSE_CREATE: u32 = 35;
const FUSE_DESTROY: u32 = 38;
const FUSE_IOCTL: u32 = 39;
const FUSE_BATCH_FORGET: u32 = 42;
const FUSE_TMPFILE: u32 = 51;

const S_IFMT: u32 = 0o170000;
const S_IFIFO: u32 = 0o010000;
const S_IFREG: u32 = 0o100000;

/// Replies that carry a `fuse_entry_out` (whose first field is the node id).
fn replies_with_entry(opcode: u32) -> bool {
    matches!(
        opcode,
        FUSE_LOOKUP
            | FUSE_SYMLINK
            | FUSE_MKNOD
            | FUSE_MKDIR
            | FUSE_LINK
            | FUSE_CREATE
            | FUSE_TMPFILE
    )
}

struct Client {
    sock: UnixStream,
    unique: u64,
    pid: u32,
    /// FORGETs sent: well-formed ones get no reply, malformed ones may get
    /// an error reply from the decoder (at most one each).
    forgets: Vec<u64>,
}

impl Client {
    fn send(&mut self, opcode: u32, nodeid: u64, uid: u32, body: &[u8]) -> u64 {
        self.unique += 2;
        let mut msg = Vec::with_capacity(HEADER_LEN + body.len());
        msg.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&opcode.to_ne_bytes());
        msg.extend_from_slice(&self.unique.to_ne_bytes());
        msg.extend_from_slice(&nodeid.to_ne_bytes());
        msg.extend_from_slice(&uid.to_ne_bytes());
        msg.extend_from_slice(&uid.to_ne_bytes()); // gid
        msg.extend_from_slice(&self.pid.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(body);
        self.sock.write_all(&msg).expect("request write");
        self.unique
    }

    /// The reply to request `unique`: (error, payload).
    fn reply(&mut self, opcode: u32, unique: u64) -> (i32, Vec<u8>) {
        let mut buf = vec![0u8; (1 << 20) + 4096];
        loop {
            let n = match self.sock.read(&mut buf) {
                Ok(n) => n,
                Err(e) => panic!("no reply to opcode {opcode} (unique {unique}): {e}"),
            };
            assert!(
                n >= OUT_HEADER_LEN,
                "short reply ({n} bytes) to opcode {opcode}"
            );
            let len = u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize;
            assert_eq!(len, n, "reply length field disagrees with the message");
            let error = i32::from_ne_bytes(buf[4..8].try_into().unwrap());
            let got = u64::from_ne_bytes(buf[8..16].try_into().unwrap());
            assert!(
                error <= 0 && error > -4096,
                "reply error {error} is not -errno"
            );
            if let Some(i) = self.forgets.iter().position(|&f| f == got) {
                assert_ne!(error, 0, "a FORGET got a success reply");
                self.forgets.swap_remove(i);
                continue;
            }
            assert_eq!(
                got, unique,
                "reply to opcode {opcode} carries another unique"
            );
            buf.truncate(n);
            return (error, buf.split_off(OUT_HEADER_LEN));
        }
    }
}

fn init_body() -> Vec<u8> {
    let mut b = Vec::new();
    for word in [7u32, 31, 128 << 10, 0, 0] {
        b.extend_from_slice(&word.to_ne_bytes());
    }
    b.resize(64, 0);
    b
}

fuzz_target!(|data: &[u8]| {
    let vfs = Vfs::with_config(VfsConfig {
        hash_bits: 8,
        ..VfsConfig::default()
    });
    let ns = Arc::new(Namespace::new(&vfs));
    let server = vfscale_fuse::VfsFs::new(
        ns.clone(),
        vfscale_fuse::Ttls {
            entry: Duration::from_secs(1),
            attr: Duration::from_secs(1),
        },
    );
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
    assert_eq!(rc, 0, "socketpair: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned here alone.
    let (ours, theirs) = unsafe {
        (
            UnixStream::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
        )
    };
    ours.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut client = Client {
        sock: ours,
        unique: 0,
        pid: std::process::id(),
        forgets: Vec::new(),
    };

    // The handshake: INIT is queued before the session reads it.
    let init = client.send(FUSE_INIT, 0, 0, &init_body());
    let mut config = fuser::Config::default();
    config.n_threads = Some(1);
    let session =
        fuser::Session::from_fd(server, theirs, fuser::SessionACL::All, config).expect("handshake");
    let (error, _) = client.reply(FUSE_INIT, init);
    assert_eq!(error, 0, "INIT failed");
    let worker = std::thread::spawn(move || session.run());

    let mut ids: Vec<u64> = vec![1];
    let mut rest = data;
    let mut sent = 0;
    while rest.len() >= 4 && sent < 128 {
        let opcode = u32::from(rest[0] % 53);
        let nodeid = match rest[1] {
            0xff => u64::from(rest[2]) << 40 | 7, // an id never handed out
            pick => ids[pick as usize % ids.len()],
        };
        let uid = if rest[2] & 1 == 0 { 0 } else { 1000 };
        let len = (rest[3] as usize).min(rest.len() - 4);
        let mut body = rest[4..4 + len].to_vec();
        rest = &rest[4 + len..];
        if opcode == FUSE_INIT || opcode == FUSE_DESTROY {
            continue; // the harness owns the session's start and end
        }
        if opcode == FUSE_MKNOD && body.len() >= 4 {
            let mode = u32::from_ne_bytes(body[0..4].try_into().unwrap());
            if mode & S_IFMT == S_IFIFO {
                body[0..4].copy_from_slice(&(mode & !S_IFMT | S_IFREG).to_ne_bytes());
            }
        }
        if opcode == FUSE_WRITE && body.len() >= 40 {
            let size = (body.len() - 40) as u32;
            body[16..20].copy_from_slice(&size.to_ne_bytes());
        }
        if opcode == FUSE_IOCTL && body.len() >= 32 {
            // `fuse_ioctl_in`: fh, flags, cmd, arg, then in_size at 24.
            let in_size = (body.len() - 32) as u32;
            body[24..28].copy_from_slice(&in_size.to_ne_bytes());
        }
        if opcode == FUSE_SETXATTR && body.len() >= 8 {
            if let Some(nul) = body[8..].iter().position(|&b| b == 0) {
                let size = (body.len() - 8 - nul - 1) as u32;
                body[0..4].copy_from_slice(&size.to_ne_bytes());
            }
        }
        let unique = client.send(opcode, nodeid, uid, &body);
        sent += 1;
        if opcode == FUSE_FORGET || opcode == FUSE_BATCH_FORGET {
            client.forgets.push(unique);
            continue;
        }
        let (error, payload) = client.reply(opcode, unique);
        if error == 0 && replies_with_entry(opcode) && payload.len() >= 8 {
            let id = u64::from_ne_bytes(payload[0..8].try_into().unwrap());
            // Node 0 is a cacheable negative entry, which only LOOKUP sends.
            if id != 0 {
                ids.push(id);
            } else {
                assert_eq!(opcode, FUSE_LOOKUP, "a created entry replied as node 0");
            }
        }
    }

    let destroy = client.send(FUSE_DESTROY, 0, 0, &[]);
    let (error, _) = client.reply(FUSE_DESTROY, destroy);
    assert_eq!(error, 0, "DESTROY failed");
    worker
        .join()
        .expect("session thread panicked")
        .expect("session ended with an error");
    drop(ns);
    vfs.drop_caches();
    if let Err(e) = vfs.check_invariants() {
        panic!("invariant violated: {e}");
    }
});
