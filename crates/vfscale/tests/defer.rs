//! Deferred, batched final puts (issue 5): teardown correctness, exact
//! unlink semantics, the queue bound, and exits racing with lookups,
//! unlinks and reclaim. Every scenario runs with deferral on and off and
//! must give the same answers; all bounded to well under a second each.

use std::sync::{Arc, Barrier};
use vfscale::abi::*;
use vfscale::{ObjectCounts, ProcessApi, Vfs, VfsConfig};

fn vfs(defer: bool) -> Vfs {
    Vfs::with_config(VfsConfig {
        defer_puts: defer,
        defer_single_puts: defer,
        fd_limit: 1 << 16,
        ..VfsConfig::default()
    })
}

fn fresh_counts() -> ObjectCounts {
    Vfs::new().object_counts()
}

/// Opens `n` files (created in `dir`, named with `tag`) and `n` sockets in
/// `p`, stat'ing each file (warm caches, as fd-implosion does).
fn fill(p: &vfscale::Process, dir: &str, tag: &str, n: usize) {
    for i in 0..n {
        let path = format!("{dir}/{tag}{i}");
        p.open(path.as_bytes(), O_CREAT | O_RDWR, 0o644).unwrap();
        p.stat(path.as_bytes()).unwrap();
        p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    }
}

#[test]
fn exit_releases_every_object_after_flush() {
    for defer in [true, false] {
        let v = vfs(defer);
        let root = v.root_process();
        root.mkdir(b"/d", 0o755).unwrap();
        let before = v.object_counts();
        let p = v.root_process();
        fill(&p, "/d", "f", 500);
        let c = v.object_counts();
        assert_eq!(c.files, 1000, "defer={defer}");
        // 500 named files + 500 socket nodes.
        assert_eq!(c.dentries, before.dentries + 1000, "defer={defer}");
        p.exit();
        // exit itself drains (a flush point).
        let after = v.object_counts();
        assert_eq!(after.files, 0, "defer={defer}");
        assert_eq!(after.dentries, before.dentries + 500, "only the names stay");
        for i in 0..500 {
            root.unlink(format!("/d/f{i}").as_bytes()).unwrap();
        }
        root.rmdir(b"/d").unwrap();
        root.exit();
        v.flush();
        v.drop_caches();
        assert_eq!(v.object_counts(), fresh_counts(), "defer={defer}");
        v.check_invariants().unwrap();
    }
}

#[test]
fn unlinked_open_file_readable_until_closed_then_space_released() {
    for defer in [true, false] {
        let v = vfs(defer);
        let p = v.root_process();
        let s0 = p.statfs(b"/").unwrap();
        let fd = p.open(b"/big", O_CREAT | O_RDWR, 0o644).unwrap();
        let data = vec![0x5a_u8; 1 << 20];
        assert_eq!(p.write(fd, &data).unwrap(), data.len());
        let s1 = p.statfs(b"/").unwrap();
        assert_eq!(s1.f_bfree, s0.f_bfree - 256, "1 MiB is 256 pages");
        assert_eq!(s1.f_ffree, s0.f_ffree - 1);
        p.unlink(b"/big").unwrap();
        // The name is gone at once...
        assert_eq!(p.stat(b"/big").unwrap_err(), Errno::ENOENT);
        // ... the space and the inode are not, while the file is open.
        let s2 = p.statfs(b"/").unwrap();
        assert_eq!((s2.f_bfree, s2.f_ffree), (s1.f_bfree, s1.f_ffree));
        let mut back = vec![0u8; data.len()];
        assert_eq!(p.pread(fd, &mut back, 0).unwrap(), data.len());
        assert_eq!(back, data);
        // Another process holds it too: its exit alone releases nothing.
        let q = p.fork().unwrap();
        p.close(fd).unwrap();
        let s3 = p.statfs(b"/").unwrap();
        assert_eq!(s3.f_bfree, s1.f_bfree, "still open in the child");
        assert_eq!(q.pread(fd, &mut back[..4], 0).unwrap(), 4);
        // Closed on another thread: released when that close returns
        // (the end of its operation drains), visible after a flush at
        // the latest.
        std::thread::scope(|s| {
            s.spawn(|| q.close(fd).unwrap());
        });
        v.flush();
        let s4 = p.statfs(b"/").unwrap();
        assert_eq!(
            (s4.f_bfree, s4.f_ffree),
            (s0.f_bfree, s0.f_ffree),
            "defer={defer}"
        );
        q.exit();
    }
}

#[test]
fn queue_never_exceeds_its_bound() {
    const BOUND: usize = 16;
    let v = Vfs::with_config(VfsConfig {
        defer_max_entries: BOUND,
        defer_single_puts: true,
        fd_limit: 1 << 16,
        ..VfsConfig::default()
    });
    let p = v.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    fill(&p, "/d", "f", 1000);
    let fd = p.open(b"/d/f0", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(v.defer_high_water(), 1, "a single close queues one file");
    // One operation that queues 2000 final puts (and then 1000 unlinks'
    // inode and dentry kills): far more than the bound.
    p.close_range(0, u32::MAX, 0).unwrap();
    assert_eq!(v.object_counts().files, 0);
    assert_eq!(
        v.defer_high_water(),
        BOUND,
        "filled to the bound, never past it"
    );
    let fd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    for i in 0..1000 {
        p.unlinkat(fd, format!("f{i}").as_bytes(), 0).unwrap();
    }
    p.close(fd).unwrap();
    assert!(v.defer_high_water() <= BOUND);
    let s = p.statfs(b"/").unwrap();
    let fresh = Vfs::new().root_process().statfs(b"/").unwrap();
    assert_eq!(s.f_ffree, fresh.f_ffree - 1, "only /d's inode is in use");
}

#[test]
fn byte_bound_releases_big_dead_files_at_once() {
    // A byte bound below one file's data: its inode's kill drains at once,
    // even inside an operation that queues more.
    let v = Vfs::with_config(VfsConfig {
        defer_max_bytes: 4096,
        defer_single_puts: true,
        ..VfsConfig::default()
    });
    let p = v.root_process();
    let s0 = p.statfs(b"/").unwrap();
    let fd = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(fd, &[1u8; 64 * 1024]).unwrap();
    p.close(fd).unwrap();
    p.unlink(b"/f").unwrap();
    assert_eq!(p.statfs(b"/").unwrap().f_bfree, s0.f_bfree);
    assert!(
        v.defer_high_water() <= 1,
        "drained on reaching the byte bound"
    );
}

#[test]
fn deferral_off_queues_nothing() {
    let v = vfs(false);
    let p = v.root_process();
    fill(&p, "", "f", 100);
    p.close_range(0, u32::MAX, 0).unwrap();
    assert_eq!(v.defer_high_water(), 0);
    assert_eq!(v.object_counts().files, 0);
}

/// N processes exit at once on N threads while other threads stat the same
/// files, unlink them, and reclaim. Afterwards every count is back to a
/// fresh namespace's and the invariant checker is happy.
fn exits_race(defer: bool, seed: usize) {
    const PROCS: usize = 3;
    const FILES: usize = 300;
    let v = vfs(defer);
    let root = v.root_process();
    root.mkdir(b"/d", 0o755).unwrap();
    let procs: Vec<_> = (0..PROCS)
        .map(|k| {
            let p = v.root_process();
            // Every process opens the same shared files and its own sockets.
            for i in 0..FILES {
                let path = format!("/d/f{i}");
                p.open(path.as_bytes(), O_CREAT | O_RDWR, 0o644).unwrap();
                if (i + k) % 3 == 0 {
                    p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
                }
            }
            // And a pipe whose other end another process holds.
            p
        })
        .collect();
    let go = Arc::new(Barrier::new(PROCS + 3));
    std::thread::scope(|s| {
        for p in procs {
            let go = go.clone();
            s.spawn(move || {
                go.wait();
                p.exit();
            });
        }
        let (go1, go2, go3) = (go.clone(), go.clone(), go);
        let v1 = v.clone();
        s.spawn(move || {
            let q = v1.root_process();
            go1.wait();
            for r in 0..3 {
                for i in 0..FILES {
                    let path = format!("/d/f{}", (i * 7 + r + seed) % FILES);
                    match q.stat(path.as_bytes()) {
                        Ok(st) => assert_eq!(st.mode & S_IFMT, S_IFREG),
                        Err(e) => assert_eq!(e, Errno::ENOENT),
                    }
                    if let Ok(fd) = q.open(path.as_bytes(), O_RDONLY, 0) {
                        q.close(fd).unwrap();
                    }
                }
            }
            q.exit();
        });
        let v2 = v.clone();
        s.spawn(move || {
            let q = v2.root_process();
            go2.wait();
            for i in 0..FILES {
                let j = (i + seed) % FILES;
                q.unlink(format!("/d/f{j}").as_bytes()).unwrap();
            }
            q.exit();
        });
        let v3 = v.clone();
        s.spawn(move || {
            go3.wait();
            for _ in 0..20 {
                v3.drop_caches();
                std::thread::yield_now();
            }
        });
    });
    root.rmdir(b"/d").unwrap();
    // Negative children (cached misses of the stat loop) keep the removed
    // directory until reclaim (ARCHITECTURE.md decisions).
    v.flush();
    v.drop_caches();
    let s = root.statfs(b"/").unwrap();
    let fresh = Vfs::new().root_process().statfs(b"/").unwrap();
    assert_eq!((s.f_bfree, s.f_ffree), (fresh.f_bfree, fresh.f_ffree));
    root.exit();
    v.flush();
    v.drop_caches();
    v.check_invariants().unwrap();
    assert_eq!(
        v.object_counts(),
        fresh_counts(),
        "defer={defer} seed={seed}"
    );
}

#[test]
fn exits_race_with_lookups_unlinks_and_reclaim() {
    for seed in 0..4 {
        exits_race(true, seed * 37);
    }
    exits_race(false, 11);
}

#[test]
fn flush_drains_other_threads_and_umount_is_not_kept_busy() {
    let v = vfs(true);
    let p = v.root_process();
    p.mkdir(b"/m", 0o755).unwrap();
    p.mount(b"none", b"/m", b"tmpfs", 0).unwrap();
    let q = p.fork().unwrap();
    let fd = q.open(b"/m/f", O_CREAT | O_RDWR, 0o644).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| q.close(fd).unwrap());
    });
    // The close returned: nothing of it may keep the mount busy.
    p.umount2(b"/m", 0).unwrap();
    q.exit();
    p.rmdir(b"/m").unwrap();
    v.flush();
    v.drop_caches();
    assert_eq!(v.object_counts(), fresh_counts());
}

#[test]
fn syncfs_flushes() {
    let v = vfs(true);
    let p = v.root_process();
    let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(p.syncfs(fd), Ok(()));
    assert_eq!(p.syncfs(999), Err(Errno::EBADF));
    p.close(fd).unwrap();
}

#[test]
fn default_config_queues_lone_puts_until_the_call_ends() {
    let v = Vfs::new();
    let p = v.root_process();
    fill(&p, "", "f", 100);
    let files = v.object_counts().files;
    let fd = p.open(b"/f0", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(v.defer_high_water(), 1, "a lone close queues its file");
    assert_eq!(v.object_counts().files, files, "and frees it as it returns");
    // The last close of an unlinked file releases its space and inode by
    // the time close returns.
    let s0 = p.statfs(b"/").unwrap();
    let fd = p.open(b"/big", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(fd, &[7u8; 64 * 1024]).unwrap();
    p.unlink(b"/big").unwrap();
    assert!(p.statfs(b"/").unwrap().f_bfree < s0.f_bfree);
    p.close(fd).unwrap();
    let s1 = p.statfs(b"/").unwrap();
    assert_eq!((s1.f_bfree, s1.f_ffree), (s0.f_bfree, s0.f_ffree));
    p.close_range(0, u32::MAX, 0).unwrap();
    assert!(v.defer_high_water() > 1, "close_range batches");
    assert_eq!(v.object_counts().files, 0);
    let q = v.root_process();
    fill(&q, "", "g", 100);
    q.exit();
    assert_eq!(v.object_counts().files, 0, "exit batches and drains");
}

/// unlink's drop of the removed name is its call's last act: the dentry
/// and inode it kills are freed by the time unlink returns, counted as a
/// queue of one (as close's file is), whether the name was the last
/// reference or an open file outlived it.
#[test]
fn unlink_frees_its_lone_kills_as_it_returns() {
    let v = Vfs::new();
    let p = v.root_process();
    p.mkdir(b"/d", 0o755).unwrap();
    let before = v.object_counts();
    let s0 = p.statfs(b"/").unwrap();
    // rmdir goes the same way, and is the first put here that kills.
    p.mkdir(b"/d/e", 0o755).unwrap();
    assert_eq!(v.defer_high_water(), 0, "mkdir kills nothing");
    p.rmdir(b"/d/e").unwrap();
    let after = v.object_counts();
    assert_eq!(
        (after.dentries, after.inodes),
        (before.dentries, before.inodes)
    );
    assert_eq!(
        v.defer_high_water(),
        1,
        "a lone kill counts as a queue of one"
    );
    let fd = p.open(b"/d/f", O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    p.unlink(b"/d/f").unwrap();
    let after = v.object_counts();
    assert_eq!(
        (after.dentries, after.inodes),
        (before.dentries, before.inodes)
    );
    assert_eq!(p.statfs(b"/").unwrap().f_ffree, s0.f_ffree);
    // Unlinked while open: the name's put kills nothing; the close frees
    // dentry and inode.
    let fd = p.open(b"/d/g", O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
    p.unlink(b"/d/g").unwrap();
    assert_eq!(v.object_counts().inodes, before.inodes + 1);
    p.close(fd).unwrap();
    let after = v.object_counts();
    assert_eq!(
        (after.dentries, after.inodes),
        (before.dentries, before.inodes)
    );
    assert_eq!(v.defer_high_water(), 1);
}

#[test]
fn lone_puts_inline_when_configured_off() {
    let v = Vfs::with_config(VfsConfig {
        defer_single_puts: false,
        ..VfsConfig::default()
    });
    let p = v.root_process();
    fill(&p, "", "f", 100);
    let fd = p.open(b"/f0", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    assert_eq!(v.defer_high_water(), 0, "a lone close frees inline");
    p.close_range(0, u32::MAX, 0).unwrap();
    assert!(v.defer_high_water() > 1, "close_range still batches");
    assert_eq!(v.object_counts().files, 0);
}

/// Public calls outside `ProcessApi` (the anonymous-object calls, a
/// namespace's `release`) free what they queued before they return: no
/// later call, flush or `drop_caches` is needed.
#[test]
fn calls_outside_process_api_free_their_puts_before_returning() {
    let v = Vfs::new();
    let p = v.root_process();
    let base = v.object_counts();
    p.set_fd_limit(1);
    p.eventfd(0, 0).unwrap();
    let one = v.object_counts();
    // Each failing call made its objects and put them back (EMFILE).
    assert_eq!(p.pipe2(0), Err(Errno::EMFILE));
    assert_eq!(v.object_counts(), one, "pipe2");
    assert_eq!(p.socketpair(AF_UNIX, SOCK_STREAM, 0), Err(Errno::EMFILE));
    assert_eq!(v.object_counts(), one, "socketpair");
    assert_eq!(p.socket(AF_UNIX, SOCK_STREAM, 0), Err(Errno::EMFILE));
    assert_eq!(v.object_counts(), one, "socket");
    assert_eq!(p.memfd_create(b"m", 0), Err(Errno::EMFILE));
    assert_eq!(v.object_counts(), one, "memfd_create");
    assert_eq!(p.eventfd(0, 0), Err(Errno::EMFILE));
    assert_eq!(v.object_counts(), one, "eventfd");
    p.close(0).unwrap();
    assert_eq!(v.object_counts(), base);
    p.set_fd_limit(64);

    // poll holds the last reference of a descriptor another thread closed:
    // its own put is the final one, freed as poll returns.
    let [r, w] = p.pipe2(0).unwrap();
    let files = v.object_counts().files;
    let t = p.clone_thread();
    let v2 = v.clone();
    let (polling_tx, polling_rx) = std::sync::mpsc::channel();
    let poller = std::thread::spawn(move || {
        let mut fds = [PollFd {
            fd: r,
            events: POLLIN,
            revents: 0,
        }];
        polling_tx.send(()).unwrap();
        let n = t.poll(&mut fds, -1);
        // Checked on this thread, before it exits (its exit would drain).
        (n, v2.object_counts().files)
    });
    polling_rx.recv().unwrap();
    // Give poll time to take its reference (not a timing assertion: were
    // the close first, poll reports POLLNVAL and the close frees the read
    // end, so the checks below hold either way; this order is the likely
    // one and the one under test).
    std::thread::sleep(std::time::Duration::from_millis(50));
    p.close(r).unwrap();
    // Wakes the poll (EPIPE in the unlikely order).
    let _ = p.write(w, b"x");
    let (n, after) = poller.join().unwrap();
    assert_eq!(n, Ok(1));
    assert_eq!(after, files - 1, "poll freed the read end as it returned");
    p.close(w).unwrap();

    // A namespace's release of the last reference to an open file.
    let ns = vfscale::Namespace::new(&v);
    let root = std::sync::Arc::new(vfscale::Cred::root());
    let fh = ns.open(&root, ns.root(), O_RDONLY | O_DIRECTORY).unwrap();
    let files = v.object_counts().files;
    ns.release(fh).unwrap();
    assert_eq!(v.object_counts().files, files - 1, "release");
}

/// The drain uncounts a whole batch of files at once and folds it into
/// the open-file count's shared total only every 4096 files
/// (`ApproxCounter::add_bulk`), so after an exit the total lags; the ENFILE
/// check must confirm with the exact count and not refuse opens that fit.
/// (Fails with the check on the approximate total alone.)
#[test]
fn enfile_is_exact_after_a_drained_exit() {
    const LIMIT: usize = 64;
    let v = Vfs::with_config(VfsConfig {
        max_files: LIMIT as u64,
        fd_limit: 1 << 10,
        ..VfsConfig::default()
    });
    let root = v.root_process();
    root.mkdir(b"/d", 0o777).unwrap();
    let user = v.process(vfscale::Cred::user(1000, 1000, &[]));
    // Root may pass the limit; it fills the count up to it, then exits.
    let p = v.root_process();
    for i in 0..LIMIT / 2 {
        let path = format!("/d/f{i}");
        p.open(path.as_bytes(), O_CREAT | O_RDWR, 0o666).unwrap();
        p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    }
    assert_eq!(v.object_counts().files, LIMIT as i64);
    assert_eq!(user.open(b"/d/f0", O_RDONLY, 0), Err(Errno::ENFILE));
    p.exit();
    assert_eq!(v.object_counts().files, 0, "the exit drained");
    // Every open up to the limit fits again. (Past it the check may let
    // a few more through, as Linux's: opens fold into the total only every
    // 32 per thread, so the total can lag below the count by as much.)
    let fds: Vec<i32> = (0..LIMIT)
        .map(|i| {
            let path = format!("/d/f{}", i % (LIMIT / 2));
            user.open(path.as_bytes(), O_RDONLY, 0)
                .unwrap_or_else(|e| panic!("open {i} of {LIMIT}: {e:?}"))
        })
        .collect();
    for fd in fds {
        user.close(fd).unwrap();
    }
    user.exit();
    root.exit();
}
