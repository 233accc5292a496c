//! `Vfs::flush` and `drop_caches` give back the memory of what they freed,
//! not only its accounting: the inodes they release leave the epoch
//! collector's shards for the slab's free lists (`sync/epoch.rs`,
//! `seal_pending`). Without that, fewer retired objects than a batch (or
//! a batch the barrier's pace held back) wait for this namespace's next
//! retire, which an idle namespace never makes.
//!
//! The slab census is process-wide and sees only the calling thread's
//! free list, so this binary holds this one test, on one thread.

use vfscale::abi::{O_CREAT, O_EXCL, O_WRONLY};
use vfscale::mem::slab;
use vfscale::{ProcessApi, Vfs, VfsConfig};

/// Inode objects carved and not on a free list this thread can see.
fn live_inodes() -> usize {
    let c = slab::census(slab::INODE_POOL);
    c.carved - c.free.len()
}

/// Creates and closes `/d/f0..n` through `p`.
fn create_files(p: &vfscale::Process, n: usize) {
    for i in 0..n {
        let fd = p
            .open(&path(i), O_CREAT | O_EXCL | O_WRONLY, 0o644)
            .unwrap();
        p.close(fd).unwrap();
    }
}

fn path(i: usize) -> Vec<u8> {
    format!("/d/f{i}").into_bytes()
}

const FILES: usize = 300;

#[test]
fn flush_and_drop_caches_return_what_they_free() {
    if cfg!(vfscale_no_slab) {
        println!("skipped: built without the slab (vfscale_no_slab), no census");
        return;
    }
    // flush: the inodes of unlinked files (tmpfs).
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    vfs.flush();
    let idle = live_inodes();
    create_files(&p, FILES);
    assert_eq!(live_inodes(), idle + FILES);
    for i in 0..FILES {
        p.unlink(&path(i)).unwrap();
    }
    vfs.flush();
    assert_eq!(live_inodes(), idle, "flush left unlinked inodes allocated");
    drop((p, vfs));

    // drop_caches: the cached inodes of a passthrough tree (tmpfs keeps
    // its files in its dentries, so only a backend's cache is dropped).
    let host = tempfile::tempdir().unwrap();
    let vfs =
        Vfs::with_passthrough_root(VfsConfig::default(), host.path(), Default::default()).unwrap();
    let p = vfs.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    vfs.drop_caches();
    let idle = live_inodes();
    create_files(&p, FILES);
    vfs.flush();
    assert_eq!(live_inodes(), idle + FILES + 1, "the files and /d");
    assert!(vfs.drop_caches() > FILES, "the files' and /d's dentries");
    assert_eq!(
        live_inodes(),
        idle,
        "drop_caches left reclaimed inodes allocated"
    );
}
