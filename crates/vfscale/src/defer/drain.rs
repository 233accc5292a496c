//! Freeing a batch of dead objects with consolidated locking.
//!
//! A batch is processed in phases, so each lock or shared counter is taken
//! once per group instead of once per object:
//! 1. files: special files (pipes, sockets, eventfds, anonymous nodes) are
//!    released one by one (each has its own object lock); plain files are
//!    freed and their dentry and mount references collected; the open-file
//!    count is updated once for the batch (`ApproxCounter::add_bulk`);
//! 2. mount references: sorted, so each mount's count is put in one run;
//! 3. dentry references, then killed dentries, round after round until no
//!    parent dies (iterative: no recursion on deep trees): the kills' LRU
//!    unlinks are grouped by superblock (one LRU lock per superblock and
//!    round), their inode references collected, their parents' references
//!    put in the next round;
//! 4. killed inodes, grouped by superblock: inode and block accounting
//!    updated once per superblock;
//! 5. killed mounts, inline (rare: umount).
//!
//! The whole batch runs in a slab bulk free scope (`slab::bulk_free`), so
//! the thread's free lists spill to the depot about once per 1024 objects.
//!
//! Invariants: the whole batch runs inside one epoch guard (dentries found
//! at count 0 may be freed by the shrinker meanwhile, and we still read
//! them); the caller has marked the thread as draining, so every put made
//! here that is not handled by a phase runs inline and nothing is queued.

use super::Deferred;
use crate::dcache::dentry::{Dentry, D_ON_LRU};
use crate::file::{FileRef, OpenFile, FMODE_SPECIAL};
use crate::fs::SuperBlock;
use crate::inode::Inode;
use crate::mem::prefetch;
use crate::mount::Mount;
use crate::vfs::VfsInner;

/// Objects a batch works on, by kind.
#[derive(Default)]
struct Batch {
    files: Vec<*const OpenFile>,
    dentry_puts: Vec<*const Dentry>,
    dentry_kills: Vec<*const Dentry>,
    inode_puts: Vec<*const Inode>,
    inode_kills: Vec<*const Inode>,
    mount_puts: Vec<*const Mount>,
    mount_kills: Vec<*const Mount>,
}

/// How far ahead of the current object the loops prefetch.
pub(crate) const AHEAD: usize = 8;

/// Prefetches `bytes` of `p` from `offset` on, line by line.
#[inline(always)]
fn prefetch_lines(p: *const u8, offset: usize, bytes: usize) {
    let mut at = offset;
    while at < offset + bytes {
        prefetch(p.wrapping_add(at));
        at += 64;
    }
}

thread_local! {
    /// The work lists of the thread's last batch, kept for their capacity
    /// (a drain at the end of every operation must not allocate).
    static SCRATCH: core::cell::Cell<Batch> = core::cell::Cell::new(Batch::default());
}

/// Frees every object in `items` and leaves it empty.
pub(crate) fn drain_batch(v: &VfsInner, items: &mut Vec<Deferred>) {
    // The slab's lists may grow while the batch frees (one depot spill per
    // ~1024 objects instead of per 64; trimmed when the scope ends).
    let _bulk = crate::mem::slab::bulk_free();
    let _guard = v.collector.enter();
    // During thread teardown the scratch may be gone: start empty then.
    let mut b = SCRATCH.try_with(core::cell::Cell::take).unwrap_or_default();
    for it in items.drain(..) {
        match it {
            Deferred::File(f) => b.files.push(f),
            Deferred::Dentry(d) => b.dentry_kills.push(d),
            Deferred::Inode(i) => b.inode_kills.push(i),
            Deferred::Mount(m) => b.mount_kills.push(m),
        }
    }
    free_files(v, &mut b);
    put_mounts(&mut b);
    loop {
        put_dentries(v, &mut b);
        if b.dentry_kills.is_empty() {
            break;
        }
        free_dentries(v, &mut b);
    }
    put_inodes(&mut b);
    free_inodes(v, &mut b);
    for m in b.mount_kills.drain(..) {
        v.free_mount(m);
    }
    let _ = SCRATCH.try_with(|s| s.set(b));
}

/// Frees one dead object the way its inline final put would have (a lone
/// put's drain: grouping a batch of one saves nothing). The caller has
/// marked the thread as draining. Small, so the common case (a file)
/// inlines into the end-of-call drain.
#[inline]
pub(crate) fn free_one(v: &VfsInner, item: Deferred) {
    match item {
        Deferred::File(f) => {
            // SAFETY: the queue owns the killed file.
            let file = unsafe { &*f };
            if file.fmode & FMODE_SPECIAL != 0 {
                return v.release_special(FileRef(f), false);
            }
            let (d, m) = (file.dentry, file.mnt);
            v.free_file(FileRef(f));
            v.dput(d);
            v.mntput(m);
        }
        other => free_other(v, other),
    }
}

/// `free_one` for a dentry, an inode or a mount.
#[inline(never)]
fn free_other(v: &VfsInner, item: Deferred) {
    match item {
        Deferred::File(_) => free_one(v, item),
        Deferred::Dentry(d) => {
            // As `dput` after its kill: the guard covers the parent walk.
            let _guard = v.collector.enter();
            if let Some(parent) = v.free_dentry(d) {
                v.dput(parent);
            }
        }
        Deferred::Inode(i) => {
            // SAFETY: the queue owns the killed inode; its superblock
            // outlives it.
            let (ir, sb) = unsafe { (&*i, &*(*i).sb) };
            let blocks = v.release_inode(ir, sb);
            sb.release_inode();
            let _ = sb.charge_blocks(-blocks);
            v.stats.inodes.dec();
        }
        Deferred::Mount(m) => v.free_mount(m),
    }
}

/// Size of an anonymous node (dentry, inode and object in one allocation).
const ANON_NODE_BYTES: usize = core::mem::size_of::<crate::anon::AnonInode>();

/// Phase 1: files.
fn free_files(v: &VfsInner, b: &mut Batch) {
    let files = core::mem::take(&mut b.files);
    let mut freed = 0i64;
    for (i, &f) in files.iter().enumerate() {
        if let Some(&next) = files.get(i + AHEAD) {
            // What the release of the file AHEAD touches: the file's lines
            // are cached by now (its kill read them), so read its pointers
            // and prefetch the dentry's refcount line, or the whole
            // anonymous node (dentry, inode and socket or pipe in one).
            // SAFETY: the queue owns the killed file.
            let nf = unsafe { &*next };
            prefetch(next);
            if nf.fmode & crate::file::FMODE_ANON != 0 {
                prefetch_lines(nf.dentry as *const u8, 0, ANON_NODE_BYTES);
            } else {
                prefetch_lines(nf.dentry as *const u8, 128, 64);
            }
        }
        // SAFETY: the queue owns the killed file.
        let file = unsafe { &*f };
        // Uncounted below, with the batch's other files.
        freed += 1;
        if file.fmode & FMODE_SPECIAL != 0 {
            v.release_special_uncounted(FileRef(f), false);
            continue;
        }
        b.dentry_puts.push(file.dentry);
        b.mount_puts.push(file.mnt);
        // Freed once, here.
        v.release_file(f);
    }
    if freed > 0 {
        // One update per batch, folded into the shared total only once
        // per `OPEN_FILES_BULK_BATCH` files this thread releases.
        v.open_files.add_bulk(-freed);
    }
    b.files = files;
    b.files.clear();
}

/// Phase 2: mount references, each mount's in one run and one update.
fn put_mounts(b: &mut Batch) {
    b.mount_puts.sort_unstable();
    let mut i = 0;
    while i < b.mount_puts.len() {
        let m = b.mount_puts[i];
        let run = b.mount_puts[i..].iter().take_while(|&&x| x == m).count();
        i += run;
        // SAFETY: the batch owned these references.
        let mr = unsafe { &*m };
        let n = u32::try_from(run).unwrap_or(u32::MAX);
        if mr.refcount.put_many(n) && mr.refcount.try_kill() {
            b.mount_kills.push(m);
        }
    }
    b.mount_puts.clear();
}

/// Phase 3a: dentry references. A dentry left at 0 stays cached if hashed
/// (lock-free when already on its LRU) and is killed otherwise.
fn put_dentries(v: &VfsInner, b: &mut Batch) {
    let puts = core::mem::take(&mut b.dentry_puts);
    for (i, &d) in puts.iter().enumerate() {
        if let Some(&next) = puts.get(i + AHEAD) {
            // The refcount's line (line 2).
            prefetch((next as *const u8).wrapping_add(128));
        }
        // SAFETY: the batch owned this reference; the guard keeps the
        // dentry allocated after the put.
        let dr = unsafe { &*d };
        if !dr.refcount.put() {
            continue;
        }
        if v.keep_cached(d) {
            continue;
        }
        if dr.refcount.try_kill() {
            b.dentry_kills.push(d);
        }
    }
    b.dentry_puts = puts;
    b.dentry_puts.clear();
}

/// Phase 3b: killed dentries: off their lists (each list's lock once per
/// run of its dentries), then released; inode and parent references are
/// collected for the next phases.
fn free_dentries(v: &VfsInner, b: &mut Batch) {
    let mut kills = core::mem::take(&mut b.dentry_kills);
    for &d in &kills {
        // SAFETY: the batch owns the killed dentry.
        let dr = unsafe { &*d };
        if dr.flags() & D_ON_LRU != 0 {
            // SAFETY: a dentry's superblock outlives it.
            unsafe { &*dr.sb }.lru.remove(dr);
        }
        let (inode, parent) = v.release_dentry(dr);
        if !inode.is_null() {
            b.inode_puts.push(inode);
        }
        if !parent.is_null() {
            b.dentry_puts.push(parent);
        }
    }
    v.stats.dentries.add(-(kills.len() as i64));
    kills.clear();
    b.dentry_kills = kills;
}

/// Phase 4a: inode references.
fn put_inodes(b: &mut Batch) {
    for i in b.inode_puts.drain(..) {
        // SAFETY: the batch owned this reference.
        let ir = unsafe { &*i };
        if ir.refcount.put() && ir.refcount.try_kill() {
            b.inode_kills.push(i);
        }
    }
}

/// Phase 4b: killed inodes, accounted once per superblock.
fn free_inodes(v: &VfsInner, b: &mut Batch) {
    let kills = &mut b.inode_kills;
    if kills.is_empty() {
        return;
    }
    // SAFETY (closures): the batch owns the killed inodes.
    kills.sort_unstable_by_key(|&i| unsafe { &*i }.sb as usize);
    let mut start = 0;
    while start < kills.len() {
        // SAFETY: as above.
        let sb_ptr = unsafe { &*kills[start] }.sb;
        // SAFETY: an inode's superblock outlives it.
        let sb: &SuperBlock = unsafe { &*sb_ptr };
        let mut pages = 0i64;
        let mut n = 0i64;
        while start < kills.len() {
            let i = kills[start];
            // SAFETY: as above.
            let ir = unsafe { &*i };
            if ir.sb != sb_ptr {
                break;
            }
            // Per inode, as `charge_blocks` rounds each one.
            pages += v.release_inode(ir, sb) / 8;
            n += 1;
            start += 1;
        }
        sb.release_inodes(n);
        let _ = sb.charge_blocks(-pages * 8);
        v.stats.inodes.add(-n);
    }
    kills.clear();
}
