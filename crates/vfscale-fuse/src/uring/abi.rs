//! The kernel's FUSE-over-io_uring ABI (include/uapi/linux/fuse.h): the
//! per-entry header buffer, the SQE command payload, the opcodes and the
//! little-endian field access used to decode requests and encode replies.
//!
//! Invariants: every offset below is the uapi header's; the sizes the
//! kernel checks (`HEADER_SIZE`, `CMD_REQ_SIZE`) are const-asserted. Field
//! readers never index out of range: a field past the end reads as 0
//! (decoders then see an empty or zero argument, never a panic).

/// `struct fuse_uring_req_header`: in_out[128] (fuse_in_header on a
/// request, fuse_out_header on its reply), op_in[128] (the opcode's
/// argument struct), then `struct fuse_uring_ent_in_out`.
pub const IN_OUT_OFF: usize = 0;
pub const OP_IN_OFF: usize = 128;
pub const OP_IN_SIZE: usize = 128;
pub const ENT_IN_OUT_OFF: usize = 256;
/// In `fuse_uring_ent_in_out`: flags u64, commit_id u64, payload_sz u32,
/// padding u32, reserved u64.
pub const ENT_COMMIT_ID_OFF: usize = ENT_IN_OUT_OFF + 8;
pub const ENT_PAYLOAD_SZ_OFF: usize = ENT_IN_OUT_OFF + 16;
pub const HEADER_SIZE: usize = ENT_IN_OUT_OFF + 32;
const _: () = assert!(HEADER_SIZE == 288);

/// `enum fuse_uring_cmd`.
pub const CMD_REGISTER: u32 = 1;
pub const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_cmd_req` (in the SQE's 80-byte command area):
/// flags u64, commit_id u64, qid u16, padding[6].
pub const CMD_REQ_SIZE: usize = 24;
const _: () = assert!(CMD_REQ_SIZE <= 80);

/// The command area of an SQE for `cmd` on queue `qid`.
pub fn cmd_req(qid: u16, commit_id: u64) -> [u8; 80] {
    let mut c = [0u8; 80];
    put_u64(&mut c, 8, commit_id);
    put_u16(&mut c, 16, qid);
    c
}

/// `struct fuse_in_header` fields (offsets in in_out).
pub const IN_OPCODE: usize = 4;
pub const IN_UNIQUE: usize = 8;
pub const IN_NODEID: usize = 16;
pub const IN_UID: usize = 24;
pub const IN_GID: usize = 28;
pub const IN_PID: usize = 32;
/// `struct fuse_out_header`: len u32, error i32, unique u64.
pub const OUT_HEADER_SIZE: usize = 16;

/// Opcodes served over the ring (`enum fuse_opcode`). FORGET,
/// BATCH_FORGET, INTERRUPT and INIT never come this way.
pub const LOOKUP: u32 = 1;
pub const GETATTR: u32 = 3;
pub const SETATTR: u32 = 4;
pub const READLINK: u32 = 5;
pub const SYMLINK: u32 = 6;
pub const MKNOD: u32 = 8;
pub const MKDIR: u32 = 9;
pub const UNLINK: u32 = 10;
pub const RMDIR: u32 = 11;
pub const RENAME: u32 = 12;
pub const LINK: u32 = 13;
pub const OPEN: u32 = 14;
pub const READ: u32 = 15;
pub const WRITE: u32 = 16;
pub const STATFS: u32 = 17;
pub const RELEASE: u32 = 18;
pub const FSYNC: u32 = 20;
pub const SETXATTR: u32 = 21;
pub const GETXATTR: u32 = 22;
pub const LISTXATTR: u32 = 23;
pub const REMOVEXATTR: u32 = 24;
pub const FLUSH: u32 = 25;
pub const OPENDIR: u32 = 27;
pub const READDIR: u32 = 28;
pub const RELEASEDIR: u32 = 29;
pub const FSYNCDIR: u32 = 30;
pub const ACCESS: u32 = 34;
pub const CREATE: u32 = 35;
pub const DESTROY: u32 = 38;
pub const IOCTL: u32 = 39;
pub const FALLOCATE: u32 = 43;
pub const READDIRPLUS: u32 = 44;
pub const RENAME2: u32 = 45;
pub const LSEEK: u32 = 46;
pub const COPY_FILE_RANGE: u32 = 47;

/// `fuse_setattr_in.valid` bits.
pub const FATTR_MODE: u32 = 1 << 0;
pub const FATTR_UID: u32 = 1 << 1;
pub const FATTR_GID: u32 = 1 << 2;
pub const FATTR_SIZE: u32 = 1 << 3;
pub const FATTR_ATIME: u32 = 1 << 4;
pub const FATTR_MTIME: u32 = 1 << 5;
pub const FATTR_FH: u32 = 1 << 6;
pub const FATTR_ATIME_NOW: u32 = 1 << 7;
pub const FATTR_MTIME_NOW: u32 = 1 << 8;

/// Reply sizes: `fuse_attr`, `fuse_entry_out`, `fuse_attr_out`,
/// `fuse_open_out`, `fuse_kstatfs`, `fuse_dirent` (fixed part),
/// `fuse_ioctl_out`.
pub const ATTR_SIZE: usize = 88;
pub const ENTRY_OUT_SIZE: usize = 40 + ATTR_SIZE;
pub const ATTR_OUT_SIZE: usize = 16 + ATTR_SIZE;
pub const OPEN_OUT_SIZE: usize = 16;
pub const STATFS_OUT_SIZE: usize = 80;
pub const DIRENT_SIZE: usize = 24;
pub const IOCTL_OUT_SIZE: usize = 16;
const _: () = assert!(ENTRY_OUT_SIZE == 128 && ATTR_OUT_SIZE == 104);

fn field<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = off.checked_add(N).and_then(|end| b.get(off..end)) {
        a.copy_from_slice(s);
    }
    a
}

pub fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(field(b, off))
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(field(b, off))
}

fn put<const N: usize>(b: &mut [u8], off: usize, v: [u8; N]) {
    if let Some(s) = off.checked_add(N).and_then(|end| b.get_mut(off..end)) {
        s.copy_from_slice(&v);
    }
}

pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    put(b, off, v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    put(b, off, v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    put(b, off, v.to_le_bytes());
}

/// Splits NUL-terminated strings off the front of `b`: the first string
/// and what follows its NUL (empty if there is no NUL).
pub fn split_name(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == 0) {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &[]),
    }
}
