//! One request served from a ring entry: decode the `fuse_in_header`, the
//! opcode's struct (op_in) and the payload (names, write data), call the
//! matching operation of `ops.rs` (the same code the classic transport
//! runs) and encode its `Reply` as the kernel's out structs in the same
//! entry's header and payload buffers.
//!
//! Layouts: the INIT we answer (fuser's defaults plus `VfsFs::init`'s)
//! asks for no request extensions (FUSE_SECURITY_CTX, FUSE_CREATE_SUPP_GROUP)
//! and no FUSE_SETXATTR_EXT, so names and data follow the op struct
//! directly and SETXATTR's struct is the 8-byte compat one.
//!
//! Invariants: every request gets a reply written (an unknown opcode is
//! ENOSYS, like fuser's defaults); inputs are read completely before the
//! payload buffer is overwritten by the reply; no reply body exceeds the
//! payload buffer (reads and listings are clamped to it, fixed structs are
//! far smaller than its 8 KiB minimum).

use super::abi::*;
use crate::ops::{Caller, DirPlusSink, DirSink, Ops, Reply};
use std::time::Duration;
use vfscale::abi::{Errno, Stat, Timespec};
use vfscale::SetAttr;

/// `serve`, answering EIO if it panics (no operation should; a panic
/// escaping would end the queue's thread and leave every later request of
/// its CPU waiting for ever).
pub fn serve_catching(ops: &Ops, header: &mut [u8], payload: &mut [u8]) {
    let unique = u64_at(header, IN_OUT_OFF + IN_UNIQUE);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve(ops, header, payload)));
    if r.is_err() {
        finish(header, unique, -libc::EIO, 0);
    }
}

/// Serves the request in `header`/`payload` and writes its reply there.
pub fn serve(ops: &Ops, header: &mut [u8], payload: &mut [u8]) {
    let in_h = &header[IN_OUT_OFF..IN_OUT_OFF + 40];
    let opcode = u32_at(in_h, IN_OPCODE);
    let unique = u64_at(in_h, IN_UNIQUE);
    let node = u64_at(in_h, IN_NODEID);
    let c = Caller {
        uid: u32_at(in_h, IN_UID),
        gid: u32_at(in_h, IN_GID),
        pid: u32_at(in_h, IN_PID),
    };
    let op: [u8; OP_IN_SIZE] = {
        let mut a = [0u8; OP_IN_SIZE];
        a.copy_from_slice(&header[OP_IN_OFF..OP_IN_OFF + OP_IN_SIZE]);
        a
    };
    let in_len = (u32_at(header, ENT_PAYLOAD_SZ_OFF) as usize).min(payload.len());
    let reply = match opcode {
        READDIR | READDIRPLUS => {
            let fh = u64_at(&op, 0);
            let offset = u64_at(&op, 8);
            let size = (u32_at(&op, 16) as usize).min(payload.len());
            let r = if opcode == READDIR {
                let mut sink = RingDir {
                    buf: &mut payload[..size],
                    len: 0,
                };
                ops.readdir(node, fh, offset, &mut sink).map(|()| sink.len)
            } else {
                let mut sink = RingDirPlus {
                    buf: &mut payload[..size],
                    len: 0,
                };
                ops.readdirplus(c, node, fh, offset, &mut sink)
                    .map(|()| sink.len)
            };
            return match r {
                Ok(len) => finish(header, unique, 0, len),
                Err(e) => finish(header, unique, -e.0, 0),
            };
        }
        _ => {
            let cap = payload.len() as u32;
            decode_and_call(ops, opcode, node, c, &op, &payload[..in_len], cap)
        }
    };
    let (error, len) = encode(ops, reply, payload);
    finish(header, unique, error, len);
}

/// Writes the out header and the reply's payload size.
fn finish(header: &mut [u8], unique: u64, error: i32, len: usize) {
    put_u32(header, IN_OUT_OFF, (OUT_HEADER_SIZE + len) as u32);
    put_u32(header, IN_OUT_OFF + 4, error as u32);
    put_u64(header, IN_OUT_OFF + 8, unique);
    put_u32(header, ENT_PAYLOAD_SZ_OFF, len as u32);
}

fn time(sec: u64, nsec: u32) -> Timespec {
    Timespec::new(sec as i64, nsec as i64)
}

/// Decodes and runs one request whose reply body must fit in `cap` bytes.
fn decode_and_call(
    ops: &Ops,
    opcode: u32,
    node: u64,
    c: Caller,
    op: &[u8],
    p: &[u8],
    cap: u32,
) -> Reply {
    match opcode {
        LOOKUP => ops.lookup(c, node, split_name(p).0),
        GETATTR => ops.getattr(node),
        SETATTR => {
            let valid = u32_at(op, 0);
            let has = |bit: u32| valid & bit != 0;
            let a = SetAttr {
                mode: has(FATTR_MODE).then(|| u32_at(op, 68)),
                uid: has(FATTR_UID).then(|| u32_at(op, 76)),
                gid: has(FATTR_GID).then(|| u32_at(op, 80)),
                size: has(FATTR_SIZE).then(|| u64_at(op, 16)),
                atime: if has(FATTR_ATIME_NOW) {
                    Some(Timespec::NOW)
                } else {
                    has(FATTR_ATIME).then(|| time(u64_at(op, 32), u32_at(op, 56)))
                },
                mtime: if has(FATTR_MTIME_NOW) {
                    Some(Timespec::NOW)
                } else {
                    has(FATTR_MTIME).then(|| time(u64_at(op, 40), u32_at(op, 60)))
                },
                fh: has(FATTR_FH).then(|| u64_at(op, 8)),
            };
            ops.setattr(c, node, &a)
        }
        READLINK => ops.readlink(c, node),
        SYMLINK => {
            let (name, rest) = split_name(p);
            ops.symlink(c, node, name, split_name(rest).0)
        }
        // fuse_mknod_in: mode, rdev, umask; fuse_mkdir_in: mode, umask.
        MKNOD => ops.mknod(
            c,
            node,
            split_name(p).0,
            u32_at(op, 0),
            u32_at(op, 4),
            u32_at(op, 8),
        ),
        MKDIR => ops.mkdir(c, node, split_name(p).0, u32_at(op, 0), u32_at(op, 4)),
        UNLINK => ops.unlink(c, node, split_name(p).0),
        RMDIR => ops.rmdir(c, node, split_name(p).0),
        RENAME | RENAME2 => {
            let flags = if opcode == RENAME2 { u32_at(op, 8) } else { 0 };
            let (old, rest) = split_name(p);
            ops.rename(c, node, old, u64_at(op, 0), split_name(rest).0, flags)
        }
        LINK => ops.link(c, u64_at(op, 0), node, split_name(p).0),
        OPEN => ops.open(c, node, u32_at(op, 0) as i32),
        OPENDIR => ops.opendir(c, node, u32_at(op, 0) as i32),
        // The kernel never asks for more than max_pages pages, which the
        // buffer holds; a larger request gets a short read.
        READ => ops.read(u64_at(op, 0), u64_at(op, 8), u32_at(op, 16).min(cap)),
        // fuse_write_in: fh u64, offset u64, size u32, write_flags u32,
        // lock_owner u64, flags u32 (the file's status).
        WRITE => {
            let size = (u32_at(op, 16) as usize).min(p.len());
            let flags = u32_at(op, 32) as i32;
            ops.write(c, u64_at(op, 0), u64_at(op, 8), &p[..size], flags)
        }
        STATFS => ops.statfs(node),
        RELEASE | RELEASEDIR => ops.release(u64_at(op, 0)),
        // fuse_fsync_in: fh u64, fsync_flags u32 (bit 0: FUSE_FSYNC_FDATASYNC).
        FSYNC | FSYNCDIR => ops.fsync(u64_at(op, 0), u32_at(op, 8) & 1 != 0),
        SETXATTR => {
            // fuse_setxattr_in without FUSE_SETXATTR_EXT (not negotiated):
            // size u32, flags u32.
            let (name, value) = split_name(p);
            let size = (u32_at(op, 0) as usize).min(value.len());
            ops.setxattr(c, node, name, &value[..size], u32_at(op, 4) as i32)
        }
        GETXATTR => ops.getxattr(c, node, split_name(p).0, u32_at(op, 0)),
        LISTXATTR => ops.listxattr(c, node, u32_at(op, 0)),
        REMOVEXATTR => ops.removexattr(c, node, split_name(p).0),
        FLUSH => ops.flush(),
        ACCESS => ops.access(c, node, u32_at(op, 0) as i32),
        CREATE => ops.create(
            c,
            node,
            split_name(p).0,
            u32_at(op, 4),
            u32_at(op, 8),
            u32_at(op, 0) as i32,
        ),
        DESTROY => Reply::Ok,
        FALLOCATE => ops.fallocate(
            c,
            u64_at(op, 0),
            u64_at(op, 8),
            u64_at(op, 16),
            u32_at(op, 24) as i32,
        ),
        LSEEK => ops.lseek(u64_at(op, 0), u64_at(op, 8) as i64, u32_at(op, 16) as i32),
        COPY_FILE_RANGE => ops.copy_file_range(
            c,
            u64_at(op, 0),
            u64_at(op, 8),
            u64_at(op, 24),
            u64_at(op, 32),
            u64_at(op, 40),
        ),
        // fuse_ioctl_in: fh u64, flags u32, cmd u32, arg u64, in_size u32,
        // out_size u32; the input bytes follow.
        IOCTL => {
            let size = (u32_at(op, 24) as usize).min(p.len());
            ops.ioctl(c, u64_at(op, 0), u32_at(op, 12), &p[..size], u32_at(op, 28))
        }
        _ => Reply::Err(Errno::ENOSYS),
    }
}

/// `struct fuse_attr` for node `id`.
fn put_attr(b: &mut [u8], id: u64, st: &Stat) {
    put_u64(b, 0, id);
    put_u64(b, 8, st.size.max(0) as u64);
    put_u64(b, 16, st.blocks.max(0) as u64);
    put_u64(b, 24, st.atime.sec as u64);
    put_u64(b, 32, st.mtime.sec as u64);
    put_u64(b, 40, st.ctime.sec as u64);
    put_u32(b, 48, st.atime.nsec.clamp(0, 999_999_999) as u32);
    put_u32(b, 52, st.mtime.nsec.clamp(0, 999_999_999) as u32);
    put_u32(b, 56, st.ctime.nsec.clamp(0, 999_999_999) as u32);
    put_u32(b, 60, st.mode);
    put_u32(b, 64, st.nlink);
    put_u32(b, 68, st.uid);
    put_u32(b, 72, st.gid);
    put_u32(b, 76, st.rdev as u32);
    put_u32(b, 80, st.blksize as u32);
    put_u32(b, 84, 0);
}

/// `struct fuse_entry_out`: node `id` with `ttl` for the entry and its
/// attributes (as fuser's `ReplyEntry::entry` sends them).
fn put_entry(b: &mut [u8], id: u64, st: &Stat, ttl: Duration) {
    put_u64(b, 0, id);
    put_u64(b, 8, 0);
    put_u64(b, 16, ttl.as_secs());
    put_u64(b, 24, ttl.as_secs());
    put_u32(b, 32, ttl.subsec_nanos());
    put_u32(b, 36, ttl.subsec_nanos());
    put_attr(&mut b[40..ENTRY_OUT_SIZE], id, st);
}

/// Encodes `r` into `out`: (negated errno or 0, payload length).
fn encode(ops: &Ops, r: Reply, out: &mut [u8]) -> (i32, usize) {
    let fixed = |out: &mut [u8], len: usize| out[..len].fill(0);
    match r {
        Reply::Ok => (0, 0),
        Reply::Err(e) => (-e.0, 0),
        Reply::Entry { id, stat } => {
            fixed(out, ENTRY_OUT_SIZE);
            put_entry(out, id, &stat, ops.ttls.entry);
            (0, ENTRY_OUT_SIZE)
        }
        Reply::Negative => {
            fixed(out, ENTRY_OUT_SIZE);
            put_entry(out, 0, &Stat::default(), ops.ttls.entry);
            (0, ENTRY_OUT_SIZE)
        }
        Reply::Attr { id, stat } => {
            fixed(out, ATTR_OUT_SIZE);
            put_u64(out, 0, ops.ttls.attr.as_secs());
            put_u32(out, 8, ops.ttls.attr.subsec_nanos());
            put_attr(&mut out[16..ATTR_OUT_SIZE], id, &stat);
            (0, ATTR_OUT_SIZE)
        }
        Reply::Data(d) => {
            let n = d.len().min(out.len());
            out[..n].copy_from_slice(&d[..n]);
            (0, n)
        }
        Reply::Open { fh, flags } => {
            fixed(out, OPEN_OUT_SIZE);
            put_u64(out, 0, fh);
            put_u32(out, 8, flags);
            (0, OPEN_OUT_SIZE)
        }
        Reply::Created { id, stat, fh } => {
            fixed(out, ENTRY_OUT_SIZE + OPEN_OUT_SIZE);
            put_entry(out, id, &stat, ops.ttls.entry);
            put_u64(out, ENTRY_OUT_SIZE, fh);
            (0, ENTRY_OUT_SIZE + OPEN_OUT_SIZE)
        }
        Reply::Written(n) => {
            fixed(out, 8);
            put_u32(out, 0, n);
            (0, 8)
        }
        Reply::Statfs(s) => {
            fixed(out, STATFS_OUT_SIZE);
            put_u64(out, 0, s.f_blocks);
            put_u64(out, 8, s.f_bfree);
            put_u64(out, 16, s.f_bavail);
            put_u64(out, 24, s.f_files);
            put_u64(out, 32, s.f_ffree);
            put_u32(out, 40, s.f_bsize as u32);
            put_u32(out, 44, s.f_namelen as u32);
            put_u32(out, 48, s.f_frsize as u32);
            (0, STATFS_OUT_SIZE)
        }
        Reply::XattrSize(n) => {
            fixed(out, 8);
            put_u32(out, 0, n);
            (0, 8)
        }
        Reply::Offset(o) => {
            put_u64(out, 0, o as u64);
            (0, 8)
        }
        // fuse_ioctl_out (result 0, no retry, no iovecs), then the bytes.
        Reply::Ioctl(d) => {
            let n = d.len().min(out.len() - IOCTL_OUT_SIZE);
            fixed(out, IOCTL_OUT_SIZE);
            out[IOCTL_OUT_SIZE..IOCTL_OUT_SIZE + n].copy_from_slice(&d[..n]);
            (0, IOCTL_OUT_SIZE + n)
        }
    }
}

/// `fuse_dirent` records, each padded to 8 bytes (FUSE_DIRENT_ALIGN).
pub(super) fn dirent_len(fixed: usize, name_len: usize) -> usize {
    (fixed + name_len + 7) & !7
}

fn put_dirent(b: &mut [u8], id: u64, next: u64, dtype: u32, name: &[u8]) {
    b.fill(0);
    put_u64(b, 0, id);
    put_u64(b, 8, next);
    put_u32(b, 16, name.len() as u32);
    put_u32(b, 20, dtype);
    b[DIRENT_SIZE..DIRENT_SIZE + name.len()].copy_from_slice(name);
}

struct RingDir<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl DirSink for RingDir<'_> {
    fn add(&mut self, id: u64, next: u64, dtype: u8, name: &[u8]) -> bool {
        let n = dirent_len(DIRENT_SIZE, name.len());
        let Some(rec) = self.buf.get_mut(self.len..self.len + n) else {
            return true;
        };
        put_dirent(rec, id, next, dtype as u32, name);
        self.len += n;
        false
    }
}

struct RingDirPlus<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl DirPlusSink for RingDirPlus<'_> {
    fn add(&mut self, id: u64, next: u64, name: &[u8], ttl: Duration, st: &Stat) -> bool {
        let n = dirent_len(ENTRY_OUT_SIZE + DIRENT_SIZE, name.len());
        let Some(rec) = self.buf.get_mut(self.len..self.len + n) else {
            return true;
        };
        rec.fill(0);
        put_entry(rec, id, st, ttl);
        // d_type from the mode, as fuser's readdirplus sends it.
        let dtype = (st.mode & 0o170000) >> 12;
        put_dirent(&mut rec[ENTRY_OUT_SIZE..], id, next, dtype, name);
        self.len += n;
        false
    }
}

#[cfg(test)]
mod tests {
    //! Requests laid out as the kernel lays them in a ring entry, served
    //! without a kernel: the decoding and the reply encodings.

    use super::*;
    use crate::ops::Ttls;
    use std::sync::Arc;
    use vfscale::{Namespace, Vfs};

    const ROOT: u64 = 1;

    struct Entry {
        header: Vec<u8>,
        payload: Vec<u8>,
    }

    fn ops() -> Ops {
        let vfs = Vfs::new();
        let ttl = Duration::from_secs(5);
        Ops::new(
            Arc::new(Namespace::new(&vfs)),
            Ttls {
                entry: ttl,
                attr: ttl,
            },
            false,
        )
    }

    /// Serves `opcode` on `node` with op struct `op` and payload `p`.
    fn call(ops: &Ops, opcode: u32, node: u64, op: &[u8], p: &[u8]) -> Entry {
        let mut e = Entry {
            header: vec![0u8; HEADER_SIZE],
            payload: vec![0u8; 8192],
        };
        put_u32(&mut e.header, IN_OPCODE, opcode);
        put_u64(&mut e.header, IN_UNIQUE, 77);
        put_u64(&mut e.header, IN_NODEID, node);
        e.header[OP_IN_OFF..OP_IN_OFF + op.len()].copy_from_slice(op);
        e.payload[..p.len()].copy_from_slice(p);
        put_u32(&mut e.header, ENT_PAYLOAD_SZ_OFF, p.len() as u32);
        serve(ops, &mut e.header, &mut e.payload);
        assert_eq!(u64_at(&e.header, 8), 77, "reply carries the unique");
        e
    }

    fn error(e: &Entry) -> i32 {
        u32_at(&e.header, 4) as i32
    }

    fn body(e: &Entry) -> &[u8] {
        &e.payload[..u32_at(&e.header, ENT_PAYLOAD_SZ_OFF) as usize]
    }

    fn le(fields: &[(usize, u64, usize)], len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        for &(off, v, size) in fields {
            b[off..off + size].copy_from_slice(&v.to_le_bytes()[..size]);
        }
        b
    }

    #[test]
    fn create_write_read_lookup_unlink() {
        let ops = ops();
        // A miss: node 0 with the entry TTL (a cached negative entry).
        let miss = call(&ops, LOOKUP, ROOT, &[], b"f\0");
        assert_eq!(error(&miss), 0);
        assert_eq!(body(&miss).len(), ENTRY_OUT_SIZE);
        assert_eq!(u64_at(body(&miss), 0), 0);
        assert_eq!(u64_at(body(&miss), 16), 5);
        // CREATE: flags, mode, umask, open_flags.
        let op = le(
            &[
                (0, (libc::O_RDWR | libc::O_CREAT) as u64, 4),
                (4, 0o100644, 4),
            ],
            16,
        );
        let c = call(&ops, CREATE, ROOT, &op, b"f\0");
        assert_eq!(error(&c), 0);
        assert_eq!(body(&c).len(), ENTRY_OUT_SIZE + OPEN_OUT_SIZE);
        let id = u64_at(body(&c), 0);
        assert!(id > ROOT);
        assert_eq!(u64_at(body(&c), 40), id, "attr.ino is the node id");
        assert_eq!(u32_at(body(&c), 40 + 60), 0o100644);
        let fh = u64_at(body(&c), ENTRY_OUT_SIZE);
        // WRITE: fh, offset, size; the data in the payload.
        let op = le(&[(0, fh, 8), (8, 0, 8), (16, 5, 4)], 40);
        let w = call(&ops, WRITE, id, &op, b"hello");
        assert_eq!((error(&w), u32_at(body(&w), 0)), (0, 5));
        let op = le(&[(0, fh, 8), (8, 1, 8), (16, 100, 4)], 40);
        let r = call(&ops, READ, id, &op, &[]);
        assert_eq!((error(&r), body(&r)), (0, &b"ello"[..]));
        let g = call(&ops, GETATTR, id, &[0; 16], &[]);
        assert_eq!(body(&g).len(), ATTR_OUT_SIZE);
        assert_eq!(u64_at(body(&g), 16 + 8), 5, "size");
        let hit = call(&ops, LOOKUP, ROOT, &[], b"f\0");
        assert_eq!(u64_at(body(&hit), 0), id);
        assert_eq!(
            error(&call(&ops, RELEASE, id, &le(&[(0, fh, 8)], 24), &[])),
            0
        );
        assert_eq!(error(&call(&ops, UNLINK, ROOT, &[], b"f\0")), 0);
        assert_eq!(error(&call(&ops, UNLINK, ROOT, &[], b"f\0")), -libc::ENOENT);
        // RENAME2 of a missing name; then mkdir and rename it.
        let op = le(&[(0, ROOT, 8)], 16);
        assert_eq!(
            error(&call(&ops, RENAME2, ROOT, &op, b"a\0b\0")),
            -libc::ENOENT
        );
        let d = call(&ops, MKDIR, ROOT, &le(&[(0, 0o755, 4)], 8), b"a\0");
        assert_eq!(u32_at(body(&d), 40 + 60), 0o40755);
        assert_eq!(error(&call(&ops, RENAME2, ROOT, &op, b"a\0b\0")), 0);
        assert_eq!(
            u64_at(body(&call(&ops, LOOKUP, ROOT, &[], b"b\0")), 0),
            u64_at(body(&d), 0)
        );
    }

    #[test]
    fn readdir_fills_whole_records_within_the_size() {
        let ops = ops();
        for name in [&b"one\0"[..], b"two\0", b"three\0"] {
            call(&ops, MKDIR, ROOT, &le(&[(0, 0o755, 4)], 8), name);
        }
        let o = call(&ops, OPENDIR, ROOT, &[0; 8], &[]);
        let fh = u64_at(body(&o), 0);
        let all = call(
            &ops,
            READDIR,
            ROOT,
            &le(&[(0, fh, 8), (16, 4096, 4)], 40),
            &[],
        );
        // ".", "..", one, two, three: 24-byte heads, names padded to 8.
        assert_eq!(body(&all).len(), 5 * 32);
        let mut names = Vec::new();
        let mut at = 0;
        let b = body(&all);
        while at < b.len() {
            let len = u32_at(b, at + 16) as usize;
            names.push(b[at + 24..at + 24 + len].to_vec());
            at += (24 + len + 7) & !7;
        }
        assert_eq!(names, [&b"."[..], b"..", b"one", b"two", b"three"]);
        // Room for two records only.
        let two = call(
            &ops,
            READDIR,
            ROOT,
            &le(&[(0, fh, 8), (16, 70, 4)], 40),
            &[],
        );
        assert_eq!(body(&two).len(), 64);
        // READDIRPLUS: each record an entry_out plus a dirent.
        let plus = call(
            &ops,
            READDIRPLUS,
            ROOT,
            &le(&[(0, fh, 8), (16, 4096, 4)], 40),
            &[],
        );
        assert_eq!(body(&plus).len(), 5 * (ENTRY_OUT_SIZE + 32));
    }

    #[test]
    fn unknown_opcodes_and_garbage_get_an_error_not_a_panic() {
        let ops = ops();
        assert_eq!(error(&call(&ops, 9999, ROOT, &[], &[])), -libc::ENOSYS);
        // A node nobody looked up.
        assert_eq!(error(&call(&ops, GETATTR, 12345, &[], &[])), -libc::ENOENT);
        // A payload size past the buffer, a name without its NUL, a WRITE
        // whose size exceeds its data.
        let mut e = Entry {
            header: vec![0xff; HEADER_SIZE],
            payload: vec![0xff; 8192],
        };
        put_u32(&mut e.header, IN_OPCODE, LOOKUP);
        serve(&ops, &mut e.header, &mut e.payload);
        assert!((u32_at(&e.header, 4) as i32) < 0);
        let op = le(&[(0, 1, 8), (16, 1 << 30, 4)], 40);
        assert!(error(&call(&ops, WRITE, ROOT, &op, b"x")) < 0);
    }
}
