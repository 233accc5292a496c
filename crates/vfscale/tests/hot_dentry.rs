//! Hot names (dcache/hot.rs): a name that several holders keep open gets a
//! sharded reference count. The count must stay exact where it matters:
//! unlink and rename-over of a hot name free the file at its last close
//! (space and inode back), teardown frees the shards, and concurrent
//! opens, closes, renames and unlinks of one name lose no reference.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

/// Opens `path` three times (the name's reference plus two holders makes
/// it hot on the third open) and returns the descriptors.
fn open_hot(p: &vfscale::Process, path: &[u8]) -> Vec<Fd> {
    (0..3).map(|_| p.open(path, O_RDWR, 0).unwrap()).collect()
}

fn hot_names(v: &Vfs) -> i64 {
    v.object_counts().hot_dentries
}

#[test]
fn a_name_held_open_by_several_becomes_hot_and_stays_exact() {
    let v = Vfs::new();
    let p = v.root_process();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    // One holder at a time: never hot.
    for _ in 0..10 {
        let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
    }
    assert_eq!(hot_names(&v), 0, "one holder at a time stays unsharded");
    let fds = open_hot(&p, b"/f");
    for fd in fds {
        p.close(fd).unwrap();
    }
    // Counted exactly at rest (check_invariants compares every count).
    assert_eq!(hot_names(&v), 1, "three opens at once shard the count");
    // Opens and closes keep balancing in sharded mode.
    for _ in 0..100 {
        let fds = open_hot(&p, b"/f");
        for fd in fds {
            p.close(fd).unwrap();
        }
    }
    assert_eq!(hot_names(&v), 1);
}

#[test]
fn unlinking_a_hot_name_frees_the_file_at_its_last_close() {
    let v = Vfs::new();
    let p = v.root_process();
    let before = v.object_counts();
    let free_before = p.statfs(b"/").unwrap();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(fd, &vec![7u8; 64 * 1024]).unwrap();
    let mut fds = open_hot(&p, b"/f");
    fds.push(fd);
    assert_eq!(hot_names(&v), 1);
    p.unlink(b"/f").unwrap();
    assert_eq!(hot_names(&v), 0, "a removed name is no longer hot");
    assert_eq!(p.stat(b"/f"), Err(Errno::ENOENT));
    // Still readable through every descriptor.
    let mut buf = [0u8; 4];
    assert_eq!(p.pread(fds[0], &mut buf, 100).unwrap(), 4);
    assert_eq!(buf, [7; 4]);
    let held = p.statfs(b"/").unwrap();
    assert!(held.f_bfree < free_before.f_bfree, "the data is still held");
    for fd in fds {
        p.close(fd).unwrap();
    }
    v.flush();
    let after = p.statfs(b"/").unwrap();
    assert_eq!(
        after.f_bfree, free_before.f_bfree,
        "space back at last close"
    );
    assert_eq!(
        after.f_ffree, free_before.f_ffree,
        "inode back at last close"
    );
    assert_eq!(v.object_counts().inodes, before.inodes);
    drop(p);
    v.check_invariants().unwrap();
}

#[test]
fn renaming_over_a_hot_name_and_teardown_free_everything() {
    let v = Vfs::new();
    let p = v.root_process();
    let free_before = p.statfs(b"/").unwrap();
    for name in [&b"/a"[..], b"/b"] {
        let fd = p.open(name, O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, name).unwrap();
        p.close(fd).unwrap();
    }
    let fds = open_hot(&p, b"/b");
    let fds_a = open_hot(&p, b"/a");
    assert_eq!(hot_names(&v), 2);
    p.rename(b"/a", b"/b").unwrap();
    // The moved name stays hot; the replaced one is frozen.
    assert_eq!(hot_names(&v), 1);
    let mut buf = [0u8; 2];
    assert_eq!(p.pread(fds[0], &mut buf, 0).unwrap(), 2);
    assert_eq!(&buf, b"/b", "the replaced file is still open");
    for fd in fds.into_iter().chain(fds_a) {
        p.close(fd).unwrap();
    }
    v.flush();
    p.unlink(b"/b").unwrap();
    v.flush();
    let after = p.statfs(b"/").unwrap();
    assert_eq!(after.f_ffree, free_before.f_ffree);
    assert_eq!(after.f_bfree, free_before.f_bfree);
    // A hot name in a mounted instance: umount tears it down with its
    // shards (ASan sees a leak or a use after free here).
    p.mkdir(b"/m", 0o755).unwrap();
    p.mount(b"tmpfs", b"/m", b"tmpfs", 0).unwrap();
    let fd = p.open(b"/m/x", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    for fd in open_hot(&p, b"/m/x") {
        p.close(fd).unwrap();
    }
    assert_eq!(hot_names(&v), 1);
    p.umount2(b"/m", 0).unwrap();
    assert_eq!(hot_names(&v), 0);
    drop(p);
    v.check_invariants().unwrap();
}

/// Threads open and close one name while another replaces and removes it:
/// every reference taken is dropped exactly once, whichever mode the count
/// is in at the time (a lost one leaks the inode, a doubled one frees a
/// file still open, which the reads below or ASan would catch).
#[test]
fn opens_race_renames_and_unlinks_of_a_hot_name() {
    let v = Vfs::new();
    let root = v.root_process();
    let before = v.object_counts();
    let free_before = root.statfs(b"/").unwrap();
    let fd = root.open(b"/hot", O_CREAT | O_RDWR, 0o644).unwrap();
    root.write(fd, b"data").unwrap();
    root.close(fd).unwrap();
    let stop = AtomicBool::new(false);
    let rounds = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            let p = v.root_process();
            let (stop, rounds) = (&stop, &rounds);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Keep two open at once so the name turns hot.
                    let a = p.open(b"/hot", O_RDONLY, 0);
                    let b = p.open(b"/hot", O_RDONLY, 0);
                    for fd in [a, b].into_iter().flatten() {
                        let mut buf = [0u8; 4];
                        assert_eq!(p.pread(fd, &mut buf, 0).unwrap(), 4);
                        assert_eq!(&buf, b"data");
                        p.close(fd).unwrap();
                    }
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let p = v.root_process();
        let mut most_hot = 0;
        for i in 0..300u64 {
            // Let the openers make progress between name changes, however
            // the threads are scheduled.
            while rounds.load(Ordering::Relaxed) < 4 * i {
                std::thread::yield_now();
            }
            most_hot = most_hot.max(v.object_counts().hot_dentries);
            let fd = p.open(b"/new", O_CREAT | O_RDWR | O_TRUNC, 0o644).unwrap();
            p.write(fd, b"data").unwrap();
            p.close(fd).unwrap();
            if i % 3 == 0 {
                p.unlink(b"/hot").unwrap();
                p.rename(b"/new", b"/hot").unwrap();
            } else {
                p.rename(b"/new", b"/hot").unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(most_hot >= 1, "the name turned hot during the race");
    });
    root.unlink(b"/hot").unwrap();
    v.flush();
    let after = root.statfs(b"/").unwrap();
    assert_eq!(after.f_ffree, free_before.f_ffree, "every inode came back");
    assert_eq!(after.f_bfree, free_before.f_bfree, "every block came back");
    drop(root);
    v.flush();
    v.check_invariants().unwrap();
    assert_eq!(v.object_counts().inodes, before.inodes);
}

/// Two threads creating and unlinking names in one directory contend on
/// its lock; the directory's own count (which every child's creation and
/// free writes) then turns sharded, stays exact (the invariant checker
/// compares count plus shards), and an rmdir of the hot directory later
/// freezes it and frees everything.
#[test]
fn a_directory_whose_name_changes_contend_becomes_hot() {
    let v = Vfs::new();
    let p = v.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = v.object_counts();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2 {
            let p = v.root_process();
            let stop = &stop;
            let v = &v;
            s.spawn(move || {
                let path = format!("/d/t{t}").into_bytes();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let fd = p.open(&path, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
                        p.close(fd).unwrap();
                        p.unlink(&path).unwrap();
                    }
                    if v.object_counts().hot_dirs > 0 || std::time::Instant::now() > deadline {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let hot = v.object_counts();
    assert_eq!(hot.hot_dirs, 1, "contended creates shard the directory");
    assert_eq!(hot.hot_dentries, before.hot_dentries + 1);
    // The checker wants no process alive (counts at rest).
    drop(p);
    v.flush();
    v.check_invariants().unwrap();
    // Children still come and go exactly in sharded mode.
    let p = v.root_process();
    p.mkdir(b"/d/sub", 0o755).unwrap();
    let fd = p.open(b"/d/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.unlink(b"/d/f").unwrap();
    p.rmdir(b"/d/sub").unwrap();
    assert_eq!(p.rmdir(b"/d"), Ok(()));
    v.flush();
    let after = v.object_counts();
    assert_eq!(after.hot_dirs, 0, "rmdir froze the directory's count");
    assert_eq!(after.hot_dentries, before.hot_dentries);
    assert_eq!(after.dentries, before.dentries - 1, "the directory is gone");
    drop(p);
    v.flush();
    v.check_invariants().unwrap();
}
