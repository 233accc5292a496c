//! File handles for vfscale's own namespace (name_to_handle_at /
//! open_by_handle_at): the per-superblock table of *exported* inodes.
//!
//! A handle is `FILEID_INO64_GEN`: the inode number (8 bytes, little
//! endian) and a 32-bit generation. tmpfs inode numbers are never reused
//! within an instance (64-bit per-thread batches, sync/ino_batch.rs), so the
//! number alone tells a dead inode from a live one; the generation is a
//! per-instance salt mixed with the number, so a handle made on another
//! instance (or forged) is ESTALE rather than another instance's inode.
//!
//! Cheap scheme (docs/ARCHITECTURE.md, Decisions): the table holds only
//! inodes a handle was made for. create and unlink never touch it — the
//! free of a dentry pays one test of a flag (`D_EXPORTED`) on a line it
//! already has in cache — so their cost is unchanged; `name_to_handle_at`
//! registers the named dentry, `link` adds a new name of an exported
//! inode, and freeing an exported dentry (`unaccount_dentry`) drops that
//! alias. A removed name stays an alias while it lives (an unlinked file
//! kept open): Linux's handle reaches that inode too.
//!
//! Backends whose dcache is not authoritative (passthrough) may forget an
//! object and find it again; their handles are `FILEID_VFSCALE_BACKEND`:
//! the inode number (8 bytes), a 64-bit tag, and the backend's own bytes
//! (`Filesystem::encode_handle`). The tag is a keyed hash (SipHash with
//! this instance's random key) of the number and the bytes: a handle
//! vfscale did not make here is ESTALE before the backend sees its bytes,
//! which it could otherwise hand to the host (a forged host handle is a
//! way out of a directory tree: the "shocker" escape).
//!
//! Invariants:
//! - An alias in the table is a positive dentry that is not freed: it is
//!   added by a caller holding a reference to it (`export_dentry`) or the
//!   exclusive lock of its directory (`link`), and removed by the step that
//!   frees it, before the retire. So a dentry found here under the shard
//!   mutex, by a caller holding an epoch guard, is allocated until that
//!   guard drops (it may be dead: `find_alias` skips those).
//! - `D_EXPORTED` is set on every dentry in the table, before it is added.
//! - `exported` counts entries (Relaxed: a hint that lets `note_link` skip
//!   the lock when nothing is exported; a stale zero can only come from a
//!   registration racing the link, which holds a different name's lock and
//!   is ordered by that directory lock: see `note_link`).

use crate::dcache::dentry::Dentry;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::lock::Mutex;
use std::collections::HashMap;

/// Shards of the table (a power of two).
const SHARDS: usize = 16;

/// The handle type vfscale's handles carry (Linux's FILEID_INO64_GEN).
pub const FILEID_INO64_GEN: i32 = 0x81;
/// Bytes of an encoded handle: inode number and generation.
pub const HANDLE_LEN: usize = 12;
/// The handle type of a backend's handles (no Linux filesystem uses it).
pub const FILEID_VFSCALE_BACKEND: i32 = 0x56;
/// Bytes of a backend handle before the backend's own: number and tag.
const BACKEND_HEADER: usize = 16;
/// The most bytes a backend's own part of a handle may hold.
pub const BACKEND_HANDLE_MAX: usize = crate::abi::MAX_HANDLE_SZ as usize - BACKEND_HEADER;

struct Aliases(Vec<*const Dentry>);

// SAFETY: the pointers are only dereferenced under the invariants above.
unsafe impl Send for Aliases {}

pub struct ExportTable {
    salt: u32,
    /// Keys the tags of backend handles.
    key: std::hash::RandomState,
    exported: AtomicUsize,
    shards: Box<[Mutex<HashMap<u64, Aliases>>]>,
}

impl ExportTable {
    /// An empty table; `salt` distinguishes this instance's handles.
    pub fn new(salt: u32) -> ExportTable {
        ExportTable {
            salt,
            key: std::hash::RandomState::new(),
            exported: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, ino: u64) -> &Mutex<HashMap<u64, Aliases>> {
        &self.shards[(ino.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize & (SHARDS - 1)]
    }

    /// The generation of inode `ino` in this instance.
    pub fn generation(&self, ino: u64) -> u32 {
        let x = ino.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ (self.salt as u64).rotate_left(17);
        (x >> 32) as u32 ^ self.salt
    }

    /// Encodes the handle of inode `ino`.
    pub fn encode(&self, ino: u64) -> [u8; HANDLE_LEN] {
        let mut h = [0u8; HANDLE_LEN];
        h[..8].copy_from_slice(&ino.to_le_bytes());
        h[8..].copy_from_slice(&self.generation(ino).to_le_bytes());
        h
    }

    /// The inode number a handle names, if it is one of this instance's.
    pub fn decode(&self, handle_type: i32, bytes: &[u8]) -> Option<u64> {
        if handle_type != FILEID_INO64_GEN || bytes.len() != HANDLE_LEN {
            return None;
        }
        let ino = u64::from_le_bytes(bytes[..8].try_into().ok()?);
        let generation = u32::from_le_bytes(bytes[8..].try_into().ok()?);
        (generation == self.generation(ino)).then_some(ino)
    }

    fn tag(&self, ino: u64, own: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.key.hash_one((ino, own))
    }

    /// The handle of inode `ino` whose backend's own bytes are `own` (at
    /// most `BACKEND_HANDLE_MAX`).
    pub fn encode_backend(&self, ino: u64, own: &[u8]) -> Vec<u8> {
        let mut h = Vec::with_capacity(BACKEND_HEADER + own.len());
        h.extend_from_slice(&ino.to_le_bytes());
        h.extend_from_slice(&self.tag(ino, own).to_le_bytes());
        h.extend_from_slice(own);
        h
    }

    /// The inode number and backend bytes of a backend handle, if this
    /// instance made it.
    pub fn decode_backend<'h>(&self, handle_type: i32, bytes: &'h [u8]) -> Option<(u64, &'h [u8])> {
        if handle_type != FILEID_VFSCALE_BACKEND || bytes.len() < BACKEND_HEADER {
            return None;
        }
        let ino = u64::from_le_bytes(bytes[..8].try_into().ok()?);
        let tag = u64::from_le_bytes(bytes[8..BACKEND_HEADER].try_into().ok()?);
        let own = &bytes[BACKEND_HEADER..];
        (tag == self.tag(ino, own)).then_some((ino, own))
    }

    /// Registers `d` (positive, inode `ino`) as a name of an exported
    /// inode. Caller holds a reference to `d` or its directory's exclusive
    /// lock (so `d` is not freed before this returns).
    pub(crate) fn add_alias(&self, ino: u64, d: &Dentry) {
        let mut shard = self.shard(ino).lock();
        d.set_flag(crate::dcache::dentry::D_EXPORTED);
        let entry = shard.entry(ino).or_insert_with(|| {
            // Relaxed: see the module comment.
            self.exported.fetch_add(1, Ordering::Relaxed);
            Aliases(Vec::new())
        });
        if !entry.0.iter().any(|&a| core::ptr::eq(a, d)) {
            entry.0.push(d);
        }
    }

    /// A new name `d` of inode `ino` (link): registered if the inode is
    /// exported. Caller holds `d`'s parent lock exclusively. The source
    /// name's registration, if any, happened under its own parent's lock
    /// before the caller's walk reached it (or races it harmlessly: the new
    /// name is then simply not an alias, see ARCHITECTURE.md).
    pub(crate) fn note_link(&self, ino: u64, d: &Dentry) {
        // Relaxed: see the module comment.
        if self.exported.load(Ordering::Relaxed) == 0 {
            return;
        }
        if self.shard(ino).lock().contains_key(&ino) {
            self.add_alias(ino, d);
        }
    }

    /// `d` (inode `ino`) is being freed (its last reference is gone).
    pub(crate) fn remove_alias(&self, ino: u64, d: &Dentry) {
        let mut shard = self.shard(ino).lock();
        if let Some(entry) = shard.get_mut(&ino) {
            entry.0.retain(|&a| !core::ptr::eq(a, d));
            if entry.0.is_empty() {
                shard.remove(&ino);
                // Relaxed: see the module comment.
                self.exported.fetch_sub(1, Ordering::Relaxed);
            }
        }
        d.clear_flag(crate::dcache::dentry::D_EXPORTED);
    }

    /// A live dentry of exported inode `ino` with its `seq` — a name if it
    /// has one, else a removed one still in use — or None (ESTALE). Caller
    /// holds an epoch guard, which keeps the dentry allocated.
    pub(crate) fn find_alias(&self, ino: u64) -> Option<(*const Dentry, u32)> {
        let shard = self.shard(ino).lock();
        // SAFETY (both): in the table, hence allocated (invariants).
        let live = |&&d: &&*const Dentry| !unsafe { &*d }.refcount.is_dead();
        let aliases = &shard.get(&ino)?.0;
        let &d = aliases
            .iter()
            .filter(live)
            .find(|&&d| unsafe { &*d }.is_hashed())
            .or_else(|| aliases.iter().find(live))?;
        // SAFETY: as above.
        Some((d, unsafe { &*d }.seq.read_begin()))
    }
}
