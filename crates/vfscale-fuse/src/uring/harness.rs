//! Ring entries served without a kernel or a ring, for harnesses that feed
//! the transport arbitrary requests: the fuzz target
//! `fuzz/fuzz_targets/uring_requests.rs` and the randomised test below.
//!
//! `EntryServer::serve` runs one entry through exactly the code a queue
//! thread runs (`dispatch::serve_catching`) and then reads the reply as the
//! kernel would (`check_reply`). `EntryServer::run_script` turns a byte
//! string into a sequence of well-framed requests whose node ids and file
//! handles are mostly ones the server handed out (so the sequence reaches
//! deep states) and whose argument structs and payloads are raw bytes.
//!
//! Invariants checked on every reply: the out header's length covers
//! exactly the payload it announces, which fits the entry's payload
//! buffer; the error is 0 or a negated errno, and an error carries no
//! payload; the unique is the request's; a listing is whole records.

use super::abi::*;
use super::dispatch::{dirent_len, serve_catching};
use crate::ops::{Ops, Ttls};
use std::sync::Arc;
use vfscale::Namespace;

/// The payload buffer of one entry in the harness (the kernel's is at least
/// max_write + a page; 8 KiB is the smallest the decoder must cope with).
pub const PAYLOAD_SIZE: usize = 8192;

/// Ring entries served without a kernel or a ring. Not a stable API.
pub struct EntryServer {
    ops: Ops,
}

/// Opcodes the kernel sends over a ring, which a script picks from.
const RING_OPCODES: [u32; 35] = [
    LOOKUP,
    GETATTR,
    SETATTR,
    READLINK,
    SYMLINK,
    MKNOD,
    MKDIR,
    UNLINK,
    RMDIR,
    RENAME,
    LINK,
    OPEN,
    READ,
    WRITE,
    STATFS,
    RELEASE,
    FSYNC,
    SETXATTR,
    GETXATTR,
    LISTXATTR,
    REMOVEXATTR,
    FLUSH,
    OPENDIR,
    READDIR,
    RELEASEDIR,
    FSYNCDIR,
    ACCESS,
    CREATE,
    FALLOCATE,
    READDIRPLUS,
    RENAME2,
    LSEEK,
    COPY_FILE_RANGE,
    IOCTL,
    DESTROY,
];

/// Opcodes whose argument struct starts with a file handle.
fn takes_fh(opcode: u32) -> bool {
    matches!(
        opcode,
        READ | WRITE
            | RELEASE
            | RELEASEDIR
            | FSYNC
            | READDIR
            | READDIRPLUS
            | FALLOCATE
            | LSEEK
            | COPY_FILE_RANGE
            | IOCTL
    )
}

impl EntryServer {
    /// The size of the header buffer of one ring entry
    /// (`struct fuse_uring_req_header`).
    pub const HEADER_SIZE: usize = HEADER_SIZE;

    pub fn new(ns: Arc<Namespace>, ttls: Ttls) -> EntryServer {
        EntryServer {
            ops: Ops::new(ns, ttls, false),
        }
    }

    /// Serves the request laid out in `header` and `payload` as the kernel
    /// lays it in a ring entry, then checks the reply written there:
    /// `Ok((error, reply payload length))`, or what is malformed.
    pub fn serve(
        &self,
        header: &mut [u8; HEADER_SIZE],
        payload: &mut [u8],
    ) -> Result<(i32, usize), String> {
        let opcode = u32_at(header, IN_OUT_OFF + IN_OPCODE);
        let unique = u64_at(header, IN_OUT_OFF + IN_UNIQUE);
        serve_catching(&self.ops, header, payload);
        check_reply(opcode, unique, header, payload)
    }

    /// Releases every node, as at the end of a session.
    pub fn destroy(&self) {
        self.ops.destroy();
    }

    /// Serves the requests `script` describes, checking every reply.
    /// Each request takes six bytes — opcode (mostly an index into the ring's
    /// opcodes; from 238, a raw value), node (an index into the node ids
    /// handed out; 0xff: an id never handed out), file handle (likewise,
    /// among the handles handed out), flags (bit 0: uid/gid 1000, else
    /// root; bit 1: the payload as short names, see `short_names`; bit 2:
    /// with a `user.` prefix), argument length, payload length — then the
    /// argument struct and the payload, raw. File handles and the second node of
    /// LINK and RENAME are written over the argument struct's first field.
    /// A MKNOD of a FIFO makes a regular file instead (opening an empty
    /// FIFO blocks by design, which a single-threaded harness would take
    /// for a hang). Returns the number of requests served.
    pub fn run_script(&self, mut script: &[u8]) -> Result<usize, String> {
        let mut ids: Vec<u64> = vec![1];
        let mut fhs: Vec<u64> = vec![0];
        let mut served = 0;
        while let [op_pick, node_pick, fh_pick, creds, arg_len, body_len, rest @ ..] = script {
            let opcode = match *op_pick {
                0..=237 => RING_OPCODES[*op_pick as usize % RING_OPCODES.len()],
                raw => u32::from(raw) * 7,
            };
            let pick = |list: &[u64], i: u8| match i {
                0xff => 0x7777_0000_0000 | u64::from(*op_pick),
                i => list[i as usize % list.len()],
            };
            let node = pick(&ids, *node_pick);
            let arg_len = (*arg_len as usize).min(OP_IN_SIZE).min(rest.len());
            let (arg, rest) = rest.split_at(arg_len);
            let body_len = (*body_len as usize).min(rest.len());
            let (body, rest) = rest.split_at(body_len);
            script = rest;

            let mut header = [0u8; HEADER_SIZE];
            let mut payload = vec![0u8; PAYLOAD_SIZE];
            let uid = if creds & 1 == 0 { 0 } else { 1000 };
            served += 1;
            put_u32(&mut header, IN_OUT_OFF + IN_OPCODE, opcode);
            put_u64(&mut header, IN_OUT_OFF + IN_UNIQUE, 2 * served as u64);
            put_u64(&mut header, IN_OUT_OFF + IN_NODEID, node);
            put_u32(&mut header, IN_OUT_OFF + IN_UID, uid);
            put_u32(&mut header, IN_OUT_OFF + IN_GID, uid);
            put_u32(&mut header, IN_OUT_OFF + IN_PID, 1);
            header[OP_IN_OFF..OP_IN_OFF + arg.len()].copy_from_slice(arg);
            if takes_fh(opcode) {
                put_u64(&mut header, OP_IN_OFF, pick(&fhs, *fh_pick));
            } else if matches!(opcode, LINK | RENAME | RENAME2) {
                put_u64(&mut header, OP_IN_OFF, pick(&ids, *fh_pick));
            }
            if opcode == MKNOD && u32_at(&header, OP_IN_OFF) & 0o170000 == 0o010000 {
                let mode = u32_at(&header, OP_IN_OFF);
                put_u32(&mut header, OP_IN_OFF, mode & !0o170000 | 0o100000);
            }
            let body_len = if creds & 2 == 0 {
                payload[..body.len()].copy_from_slice(body);
                body.len()
            } else {
                short_names(body, creds & 4 != 0, &mut payload)
            };
            put_u32(&mut header, ENT_PAYLOAD_SZ_OFF, body_len as u32);

            let (error, len) = self.serve(&mut header, &mut payload)?;
            if error != 0 {
                continue;
            }
            let reply = &payload[..len];
            match opcode {
                LOOKUP | MKNOD | MKDIR | SYMLINK | LINK | CREATE => {
                    let id = u64_at(reply, 0);
                    if id == 0 && opcode != LOOKUP {
                        return Err(format!("opcode {opcode}: a new entry replied as node 0"));
                    }
                    if id != 0 {
                        ids.push(id);
                    }
                    if opcode == CREATE {
                        fhs.push(u64_at(reply, ENTRY_OUT_SIZE));
                    }
                }
                OPEN | OPENDIR => fhs.push(u64_at(reply, 0)),
                _ => {}
            }
        }
        Ok(served)
    }
}

/// Writes `raw` into `out` as NUL-terminated names of up to 4 letters
/// from "abcd" (so names meet again: lookups hit, creates collide,
/// renames replace), each prefixed with `user.` if `xattr` (a namespace
/// any owner may set); returns the bytes written.
fn short_names(raw: &[u8], xattr: bool, out: &mut [u8]) -> usize {
    let mut len = 0;
    let mut name_len = 0;
    for &b in raw {
        if len + 8 > out.len() {
            break;
        }
        if name_len == 0 && xattr {
            out[len..len + 5].copy_from_slice(b"user.");
            len += 5;
        }
        if b % 5 == 0 || name_len == 4 {
            out[len] = 0;
            name_len = 0;
        } else {
            out[len] = b'a' + b % 4;
            name_len += 1;
        }
        len += 1;
    }
    len
}

/// The kernel's reading of the reply in `header`/`payload` to a request
/// with `opcode` and `unique` (the module's invariants).
fn check_reply(
    opcode: u32,
    unique: u64,
    header: &[u8],
    payload: &[u8],
) -> Result<(i32, usize), String> {
    let len = u32_at(header, IN_OUT_OFF) as usize;
    let error = u32_at(header, IN_OUT_OFF + 4) as i32;
    let body = u32_at(header, ENT_PAYLOAD_SZ_OFF) as usize;
    if u64_at(header, IN_OUT_OFF + 8) != unique {
        return Err(format!("opcode {opcode}: the reply carries another unique"));
    }
    if len != OUT_HEADER_SIZE + body || body > payload.len() {
        return Err(format!(
            "opcode {opcode}: reply length {len} for a {body}-byte payload in a {}-byte buffer",
            payload.len()
        ));
    }
    if !(-4095..=0).contains(&error) || (error != 0 && body != 0) {
        return Err(format!(
            "opcode {opcode}: error {error} with a {body}-byte payload"
        ));
    }
    if error == 0 && matches!(opcode, READDIR | READDIRPLUS) {
        // The name length is the last 8 bytes but 4 of each record's head.
        let head = if opcode == READDIR {
            DIRENT_SIZE
        } else {
            ENTRY_OUT_SIZE + DIRENT_SIZE
        };
        let mut at = 0;
        while at < body {
            let name_len = u32_at(payload, at + head - 8) as usize;
            let rec = dirent_len(head, name_len);
            if name_len == 0 || name_len > 255 || at + rec > body {
                return Err(format!(
                    "opcode {opcode}: a record at {at} (name {name_len} bytes) overruns the {body}-byte listing"
                ));
            }
            at += rec;
        }
    }
    Ok((error, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use vfscale::fs::FsLimits;
    use vfscale::{Vfs, VfsConfig};

    /// xorshift64*: scripts from a seed, reproducible without a crate.
    fn script(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect()
    }

    /// A namespace small enough that no script exhausts the machine.
    fn small_vfs() -> Vfs {
        Vfs::with_config(VfsConfig {
            hash_bits: 8,
            tmpfs_limits: FsLimits {
                max_bytes: 64 << 20,
                max_inodes: 4096,
            },
            ..VfsConfig::default()
        })
    }

    #[test]
    fn random_request_sequences_get_well_formed_replies_and_leave_a_sound_namespace() {
        for seed in 0..300 {
            let vfs = small_vfs();
            let ns = Arc::new(Namespace::new(&vfs));
            let ttl = Duration::from_secs(1);
            let server = EntryServer::new(
                ns.clone(),
                Ttls {
                    entry: ttl,
                    attr: ttl,
                },
            );
            let served = server
                .run_script(&script(seed, 16384))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert!(served > 50, "seed {seed}: only {served} requests");
            server.destroy();
            drop((server, ns));
            vfs.drop_caches();
            vfs.check_invariants()
                .unwrap_or_else(|e| panic!("seed {seed}: invariant violated: {e}"));
        }
    }

    #[test]
    fn a_malformed_reply_is_reported() {
        let mut header = [0u8; HEADER_SIZE];
        put_u64(&mut header, IN_OUT_OFF + 8, 5);
        put_u32(&mut header, IN_OUT_OFF, OUT_HEADER_SIZE as u32 + 16);
        put_u32(&mut header, ENT_PAYLOAD_SZ_OFF, 16);
        assert!(check_reply(GETATTR, 5, &header, &[0; 32]).is_ok());
        assert!(
            check_reply(GETATTR, 6, &header, &[0; 32]).is_err(),
            "unique"
        );
        assert!(
            check_reply(GETATTR, 5, &header, &[0; 8]).is_err(),
            "overflow"
        );
        put_u32(&mut header, IN_OUT_OFF + 4, -2i32 as u32);
        assert!(
            check_reply(GETATTR, 5, &header, &[0; 32]).is_err(),
            "error with data"
        );
        // A listing whose one record claims a longer name than it holds.
        put_u32(&mut header, IN_OUT_OFF + 4, 0);
        let mut listing = [0u8; 32];
        put_u32(&mut listing, 16, 200);
        assert!(
            check_reply(READDIR, 5, &header, &listing).is_err(),
            "record"
        );
    }
}
