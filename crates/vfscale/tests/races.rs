//! Whole-operation races under a seeded randomized scheduler.
//!
//! Each scenario runs a few threads with scripted operations on one `Vfs`.
//! Before every scripted step a thread asks its `Sched` (a xorshift stream
//! seeded from the run seed and the thread index) whether to run on, yield
//! once or twice, or spin for a short random count, so each seed pushes the
//! threads into a different interleaving of whole operations; the
//! interleavings *inside* one operation come from real preemption (the
//! threads outnumber the cores). Every run ends with op-specific assertions
//! and `Vfs::check_invariants` after `drop_caches`, then a teardown that
//! must leave only the root.
//!
//! Many seeds run per scenario, bounded by a time budget (`RACE_BUDGET`, or
//! `VFSCALE_RACE_SECS` seconds per scenario) and a seed count. A failing
//! run prints its seed; `VFSCALE_SEED=<seed>` replays that seed first (the
//! preemption inside operations still varies, so a replay reproduces the
//! schedule of steps, not every instruction). See docs/TESTING.md for why
//! this harness and not `shuttle`.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

/// Per-thread seeded scheduling decisions.
struct Sched(u64);

impl Sched {
    fn new(seed: u64, thread: u64) -> Sched {
        Sched((seed ^ (thread + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// The scheduling point before a step.
    fn step(&mut self) {
        match self.below(8) {
            0 | 1 => std::thread::yield_now(),
            2 => {
                std::thread::yield_now();
                std::thread::yield_now();
            }
            3 => {
                for _ in 0..self.below(256) {
                    std::hint::spin_loop();
                }
            }
            _ => {}
        }
    }
}

fn budget() -> Duration {
    let secs = std::env::var("VFSCALE_RACE_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs)
}

/// Runs `scenario(seed)` for many seeds within the budget; prints the seed
/// of a failing run and fails with its panic.
fn run_seeds(name: &str, max_seeds: u64, scenario: impl Fn(u64)) {
    let replay: Option<u64> = std::env::var("VFSCALE_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    let base = replay.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let deadline = Instant::now() + budget();
    let mut runs = 0;
    for i in 0..max_seeds {
        let seed = base.wrapping_add(i.wrapping_mul(0x2545_F491_4F6C_DD1D));
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| scenario(seed))) {
            eprintln!("race `{name}` failed with seed {seed}; replay with VFSCALE_SEED={seed}");
            resume_unwind(e);
        }
        runs += 1;
        if Instant::now() > deadline {
            break;
        }
    }
    eprintln!("race `{name}`: {runs} seeds from {base}");
    assert!(runs >= 1);
}

/// drop_caches, the invariant checker, then the tree below `dirs` removed
/// and only the root left.
fn settle(vfs: &Vfs, paths_to_remove: &[&[u8]]) {
    vfs.drop_caches();
    vfs.check_invariants()
        .unwrap_or_else(|e| panic!("invariant violated: {e}"));
    let p = vfs.root_process();
    for path in paths_to_remove {
        match p.lstat(path) {
            Ok(s) if s.mode & S_IFMT == S_IFDIR => p.rmdir(path).unwrap(),
            Ok(_) => p.unlink(path).unwrap(),
            Err(e) => assert_eq!(e, Errno::ENOENT),
        }
    }
    drop(p);
    vfs.drop_caches();
    let r = vfs.check_invariants().unwrap();
    assert_eq!((r.dentries, r.inodes), (1, 1), "only the root is left");
}

const STEPS: usize = 40;

/// Walks of `/a/b/c/f` (and `..`-detours) while another thread renames the
/// ancestor `/a` to `/x` and back and a third renames `c` to `c2` and
/// back: every walk finds the one file (same inode) or ENOENT, never
/// another error or another inode; getcwd of a process inside `c` names
/// one of the four real locations.
#[test]
fn walk_vs_rename_of_an_ancestor() {
    run_seeds("walk vs rename", 400, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        for d in ["/a", "/a/b", "/a/b/c"] {
            root.mkdir(d.as_bytes(), 0o755).unwrap();
        }
        let fd = root.open(b"/a/b/c/f", O_CREAT | O_WRONLY, 0o644).unwrap();
        root.close(fd).unwrap();
        let ino = root.stat(b"/a/b/c/f").unwrap().ino;
        let done = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 0);
                for i in 0..STEPS {
                    sch.step();
                    let (from, to) = if i.is_multiple_of(2) {
                        (&b"/a"[..], &b"/x"[..])
                    } else {
                        (&b"/x"[..], &b"/a"[..])
                    };
                    p.rename(from, to).unwrap();
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 1);
                for _ in 0..STEPS {
                    sch.step();
                    // The ancestor's name may change under us: try both.
                    let r = p
                        .rename(b"/a/b/c", b"/a/b/c2")
                        .or_else(|_| p.rename(b"/x/b/c", b"/x/b/c2"));
                    sch.step();
                    match r {
                        // Renamed: rename it back, by whichever name the
                        // ancestor has when we try (both attempts can miss
                        // while the ancestor flips, so retry).
                        Ok(()) => loop {
                            let back = p
                                .rename(b"/a/b/c2", b"/a/b/c")
                                .or_else(|_| p.rename(b"/x/b/c2", b"/x/b/c"));
                            match back {
                                Ok(()) => break,
                                Err(e) => assert_eq!(e, Errno::ENOENT, "rename of c2"),
                            }
                            std::thread::yield_now();
                        },
                        Err(e) => assert_eq!(e, Errno::ENOENT, "rename of c"),
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 2);
                let paths: [&[u8]; 6] = [
                    b"/a/b/c/f",
                    b"/x/b/c/f",
                    b"/a/b/c2/f",
                    b"/a/b/c/../c/f",
                    b"/x/b/../b/c2/./f",
                    b"/a/../x/b/c/f",
                ];
                let mut found = 0;
                for i in 0..STEPS * 3 {
                    sch.step();
                    match p.stat(paths[i % paths.len()]) {
                        Ok(st) => {
                            assert_eq!(st.ino, ino, "a walk found another inode");
                            found += 1;
                        }
                        Err(e) => assert_eq!(e, Errno::ENOENT, "walk"),
                    }
                }
                let _ = found;
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 3);
                // Enter c by whatever name it has now.
                let entered = [&b"/a/b/c"[..], b"/x/b/c", b"/a/b/c2", b"/x/b/c2"]
                    .iter()
                    .any(|d| p.chdir(d).is_ok());
                if !entered {
                    return;
                }
                for _ in 0..STEPS {
                    sch.step();
                    let cwd = p.getcwd().unwrap();
                    assert!(
                        [&b"/a/b/c"[..], b"/x/b/c", b"/a/b/c2", b"/x/b/c2"].contains(&&cwd[..]),
                        "getcwd {:?}",
                        String::from_utf8_lossy(&cwd)
                    );
                    assert_eq!(p.stat(b"f").unwrap().ino, ino, "lookup from cwd");
                    assert!(p.stat(b"../../b").is_ok(), "`..` from cwd");
                }
            });
        });
        assert_eq!(done.load(Ordering::SeqCst), 2);
        // STEPS is even: /a is back under its name.
        assert_eq!(root.stat(b"/a/b/c/f").unwrap().ino, ino);
        drop(root);
        settle(&vfs, &[b"/a/b/c/f", b"/a/b/c", b"/a/b", b"/a"]);
    });
}

/// Lookups and opens of names another thread creates and unlinks, while a
/// third thread reclaims caches: a lookup finds a complete file or
/// ENOENT; an open file stays readable after its unlink (nlink 0) and is
/// freed at close.
#[test]
fn lookup_vs_unlink_vs_reclaim() {
    run_seeds("lookup vs unlink", 400, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/d", 0o777).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 0);
                for i in 0..STEPS {
                    let name = format!("/d/f{}", i % 4);
                    sch.step();
                    // Written under a temporary name, then linked in whole.
                    let fd = p
                        .open(b"/d/tmp", O_CREAT | O_WRONLY | O_TRUNC, 0o644)
                        .unwrap();
                    p.write(fd, b"contents").unwrap();
                    p.close(fd).unwrap();
                    p.rename(b"/d/tmp", name.as_bytes()).unwrap();
                    sch.step();
                    p.unlink(name.as_bytes()).unwrap();
                }
                stop.store(true, Ordering::SeqCst);
            });
            s.spawn(|| {
                let mut sch = Sched::new(seed, 1);
                while !stop.load(Ordering::SeqCst) {
                    sch.step();
                    vfs.drop_caches();
                }
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 2);
                let mut buf = [0u8; 16];
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let name = format!("/d/f{}", i % 4);
                    sch.step();
                    match p.stat(name.as_bytes()) {
                        Ok(st) => assert_eq!(st.size, 8, "a linked file is complete"),
                        Err(e) => assert_eq!(e, Errno::ENOENT),
                    }
                    match p.open(name.as_bytes(), O_RDONLY, 0) {
                        Ok(fd) => {
                            sch.step();
                            assert_eq!(p.pread(fd, &mut buf, 0).unwrap(), 8);
                            assert_eq!(&buf[..8], b"contents");
                            assert!(p.fstat(fd).unwrap().nlink <= 1);
                            p.close(fd).unwrap();
                        }
                        Err(e) => assert_eq!(e, Errno::ENOENT),
                    }
                }
            });
        });
        drop(root);
        settle(&vfs, &[b"/d"]);
    });
}

/// A process exits while others look up and remove the directory that is
/// its cwd, and it looks up through that cwd until it exits: lookups from
/// the cwd give the file or ENOENT; after the exit nothing pins the
/// directory (teardown leaves only the root).
#[test]
fn exit_vs_lookup_through_cwd() {
    run_seeds("exit vs lookup", 400, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/e", 0o777).unwrap();
        for d in 0..3 {
            root.mkdir(format!("/e/d{d}").as_bytes(), 0o777).unwrap();
            let fd = root
                .open(format!("/e/d{d}/f").as_bytes(), O_CREAT | O_WRONLY, 0o644)
                .unwrap();
            root.close(fd).unwrap();
        }
        std::thread::scope(|s| {
            for d in 0..3u64 {
                let vfs = &vfs;
                s.spawn(move || {
                    let p = vfs.root_process();
                    let mut sch = Sched::new(seed, d);
                    sch.step();
                    // The remover may have been first.
                    if let Err(e) = p.chdir(format!("/e/d{d}").as_bytes()) {
                        assert_eq!(e, Errno::ENOENT);
                        p.exit();
                        return;
                    }
                    let child = p.fork().unwrap();
                    let steps = sch.below(STEPS as u64);
                    for _ in 0..steps {
                        sch.step();
                        for q in [&p, &child] {
                            match q.stat(b"f") {
                                Ok(_) => {}
                                Err(e) => assert_eq!(e, Errno::ENOENT),
                            }
                            match q.stat(b".") {
                                Ok(st) => assert_eq!(st.mode & S_IFMT, S_IFDIR),
                                Err(e) => assert_eq!(e, Errno::ENOENT),
                            }
                        }
                    }
                    child.exit();
                    sch.step();
                    p.exit();
                });
            }
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 9);
                for d in 0..3 {
                    sch.step();
                    p.unlink(format!("/e/d{d}/f").as_bytes()).unwrap();
                    sch.step();
                    p.rmdir(format!("/e/d{d}").as_bytes()).unwrap();
                    sch.step();
                    assert_eq!(
                        p.stat(format!("/e/d{d}/f").as_bytes()).unwrap_err(),
                        Errno::ENOENT
                    );
                }
            });
        });
        drop(root);
        settle(&vfs, &[b"/e"]);
    });
}

/// readdir with a small buffer (many getdents64 calls) while another
/// thread creates and unlinks other names: every entry present for the
/// whole readdir is returned exactly once, and no name twice.
#[test]
fn readdir_vs_create_unlink() {
    run_seeds("readdir vs create/unlink", 300, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/r", 0o777).unwrap();
        for i in 0..40 {
            let fd = root
                .open(
                    format!("/r/stable{i:02}").as_bytes(),
                    O_CREAT | O_WRONLY,
                    0o644,
                )
                .unwrap();
            root.close(fd).unwrap();
        }
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 0);
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let name = format!("/r/churn{}", sch.below(12));
                    sch.step();
                    if i.is_multiple_of(2) {
                        if let Ok(fd) = p.open(name.as_bytes(), O_CREAT | O_WRONLY, 0o644) {
                            p.close(fd).unwrap();
                        }
                    } else {
                        let _ = p.unlink(name.as_bytes());
                    }
                }
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 1);
                for _ in 0..4 {
                    let fd = p.open(b"/r", O_RDONLY | O_DIRECTORY, 0).unwrap();
                    let mut names: Vec<Vec<u8>> = Vec::new();
                    let mut buf = vec![0u8; 96 + sch.below(128) as usize];
                    loop {
                        sch.step();
                        let n = p.getdents64(fd, &mut buf).unwrap();
                        if n == 0 {
                            break;
                        }
                        names.extend(parse_dirents64(&buf[..n]).into_iter().map(|e| e.name));
                    }
                    p.close(fd).unwrap();
                    for i in 0..40 {
                        let want = format!("stable{i:02}").into_bytes();
                        let seen = names.iter().filter(|n| **n == want).count();
                        assert_eq!(seen, 1, "stable{i:02} returned {seen} times");
                    }
                    for n in [&b"."[..], b".."] {
                        assert_eq!(names.iter().filter(|x| x[..] == *n).count(), 1);
                    }
                }
                stop.store(true, Ordering::SeqCst);
            });
        });
        drop(root);
        let p = vfs.root_process();
        for i in 0..12 {
            let _ = p.unlink(format!("/r/churn{i}").as_bytes());
        }
        for i in 0..40 {
            p.unlink(format!("/r/stable{i:02}").as_bytes()).unwrap();
        }
        drop(p);
        settle(&vfs, &[b"/r"]);
    });
}

/// stat and open of a name that another thread keeps replacing with
/// rename-over: the name never disappears (rename is atomic), and each
/// open reads one whole version.
#[test]
fn stat_vs_rename_over() {
    run_seeds("stat vs rename-over", 400, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/o", 0o777).unwrap();
        let fd = root.open(b"/o/target", O_CREAT | O_WRONLY, 0o644).unwrap();
        root.write(fd, b"version-0000").unwrap();
        root.close(fd).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 0);
                for v in 1..=STEPS {
                    sch.step();
                    let fd = p
                        .open(b"/o/new", O_CREAT | O_WRONLY | O_EXCL, 0o644)
                        .unwrap();
                    p.write(fd, format!("version-{v:04}").as_bytes()).unwrap();
                    p.close(fd).unwrap();
                    sch.step();
                    p.rename(b"/o/new", b"/o/target").unwrap();
                }
                stop.store(true, Ordering::SeqCst);
            });
            for t in 1..3 {
                let (vfs, stop) = (&vfs, &stop);
                s.spawn(move || {
                    let p = vfs.root_process();
                    let mut sch = Sched::new(seed, t);
                    let mut buf = [0u8; 32];
                    let mut last = 0u32;
                    while !stop.load(Ordering::SeqCst) {
                        sch.step();
                        let st = p
                            .stat(b"/o/target")
                            .expect("rename-over never hides the name");
                        assert_eq!(st.size, 12);
                        let fd = p
                            .open(b"/o/target", O_RDONLY, 0)
                            .expect("open during rename-over");
                        sch.step();
                        let n = p.read(fd, &mut buf).unwrap();
                        p.close(fd).unwrap();
                        assert_eq!(n, 12);
                        let text = std::str::from_utf8(&buf[..n]).unwrap();
                        let v: u32 = text.strip_prefix("version-").unwrap().parse().unwrap();
                        assert!(v >= last, "versions go back: {v} after {last}");
                        last = v;
                    }
                });
            }
        });
        drop(root);
        settle(&vfs, &[b"/o/target", b"/o"]);
    });
}

/// linkat against the last holder of what it links: a thread links `/a/f`
/// to `/b/g` while another unlinks `/a/f` (in another directory, so under
/// another directory lock), and a thread links an O_TMPFILE file by its
/// descriptor while a sibling thread of the same descriptor table closes
/// it. The link takes the new name's inode reference before it counts the
/// link, so it either names a live inode or answers ENOENT; every name it
/// made reads the data written before it, and the link counts and the
/// instance's inode count add up at the end.
#[test]
fn link_vs_last_put() {
    run_seeds("link vs last put", 300, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/a", 0o777).unwrap();
        root.mkdir(b"/b", 0o777).unwrap();
        let free_before = root.statfs(b"/").unwrap().f_ffree;
        let tmp_fd = std::sync::atomic::AtomicI32::new(-1);
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 0);
                for _ in 0..STEPS {
                    // Named with its data already written.
                    let fd = p.open(b"/a/n", O_CREAT | O_WRONLY | O_EXCL, 0o644).unwrap();
                    p.write(fd, b"named").unwrap();
                    p.close(fd).unwrap();
                    p.rename(b"/a/n", b"/a/f").unwrap();
                    sch.step();
                    p.unlink(b"/a/f").unwrap();
                }
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 1);
                let mut buf = [0u8; 8];
                for _ in 0..STEPS {
                    sch.step();
                    match p.link(b"/a/f", b"/b/g") {
                        Ok(()) => {
                            let fd = p.open(b"/b/g", O_RDONLY, 0).unwrap();
                            assert_eq!(p.read(fd, &mut buf), Ok(5));
                            assert!(p.fstat(fd).unwrap().nlink >= 1);
                            p.close(fd).unwrap();
                            p.unlink(b"/b/g").unwrap();
                        }
                        Err(e) => assert_eq!(e, Errno::ENOENT),
                    }
                }
            });
            let opener = vfs.root_process();
            let linker = opener.clone_thread();
            let tmp_fd = &tmp_fd;
            s.spawn(move || {
                let mut sch = Sched::new(seed, 2);
                for _ in 0..STEPS {
                    let fd = opener.open(b"/b", O_TMPFILE | O_RDWR, 0o600).unwrap();
                    opener.write(fd, b"unnamed").unwrap();
                    tmp_fd.store(fd, Ordering::SeqCst);
                    sch.step();
                    tmp_fd.store(-1, Ordering::SeqCst);
                    opener.close(fd).unwrap();
                }
            });
            s.spawn(move || {
                let mut sch = Sched::new(seed, 3);
                let mut buf = [0u8; 8];
                for _ in 0..STEPS * 4 {
                    sch.step();
                    let fd = tmp_fd.load(Ordering::SeqCst);
                    if fd < 0 {
                        continue;
                    }
                    match linker.linkat(fd, b"", AT_FDCWD, b"/b/t", AT_EMPTY_PATH) {
                        Ok(()) => {
                            let t = linker.open(b"/b/t", O_RDONLY, 0).unwrap();
                            assert_eq!(linker.read(t, &mut buf), Ok(7));
                            assert_eq!(linker.fstat(t).unwrap().nlink, 1);
                            linker.close(t).unwrap();
                            linker.unlink(b"/b/t").unwrap();
                        }
                        // Closed (and maybe reused by the next one) meanwhile,
                        // or already named and unnamed once.
                        Err(e) => assert!(
                            matches!(e, Errno::EBADF | Errno::ENOENT),
                            "linkat by descriptor: {e:?}"
                        ),
                    }
                }
            });
        });
        assert_eq!(root.statfs(b"/").unwrap().f_ffree, free_before);
        drop(root);
        settle(&vfs, &[b"/a", b"/b"]);
    });
}

/// A memfd's writers appending while another thread seals it against
/// growth: once F_ADD_SEALS returns, no write extends the file (the seal
/// and every write's test of it are ordered by the data lock), and every
/// write either appended whole or was refused with EPERM.
#[test]
fn appends_vs_grow_seal() {
    run_seeds("appends vs grow seal", 200, |seed| {
        let vfs = Vfs::new();
        let owner = vfs.root_process();
        let m = owner.memfd_create(b"m", MFD_ALLOW_SEALING).unwrap();
        let sealed_at = std::sync::atomic::AtomicI64::new(-1);
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let writer = owner.clone_thread();
                s.spawn(move || {
                    let mut sch = Sched::new(seed, t);
                    for _ in 0..STEPS {
                        sch.step();
                        match writer.write(m, b"0123456789") {
                            Ok(n) => assert_eq!(n, 10),
                            Err(e) => assert_eq!(e, Errno::EPERM),
                        }
                    }
                });
            }
            let sealer = owner.clone_thread();
            let sealed_at = &sealed_at;
            s.spawn(move || {
                let mut sch = Sched::new(seed, 2);
                for _ in 0..STEPS / 2 {
                    sch.step();
                }
                sealer
                    .fcntl(m, F_ADD_SEALS, i64::from(F_SEAL_GROW))
                    .unwrap();
                sealed_at.store(sealer.fstat(m).unwrap().size, Ordering::SeqCst);
            });
        });
        let size = owner.fstat(m).unwrap().size;
        assert_eq!(
            size,
            sealed_at.load(Ordering::SeqCst),
            "grew after the seal"
        );
        assert_eq!(size % 10, 0, "a write was cut short");
        owner.close(m).unwrap();
        drop(owner);
        settle(&vfs, &[]);
    });
}

/// POSIX ACLs against chmod and creates: the owner of `/d/f` sets and
/// removes its access ACL (a named user 1001 and a mask) while it also
/// chmods it, user 1001 opens it for reading, root sets and removes `/d`'s
/// default ACL while user 1002 creates files in `/d`. Every open either
/// succeeds or is EACCES; every new file's mode is what the umask or the
/// default ACL makes of it; at the end the invariant checker finds each
/// inode's ACL bits naming exactly its stored ACLs and every access ACL's
/// base entries equal to its mode (so no chmod missed an ACL set at the
/// same time), and user 1001's answer agrees with the final ACL.
#[test]
fn acl_vs_chmod_vs_create() {
    use vfscale::cred::acl::{value_of as acl, ACL_UNDEFINED_ID as U};
    let named = |mask: u16| {
        acl(&[
            (1, 6, U),
            (2, 4, 1001),
            (4, 0, U),
            (0x10, mask, U),
            (0x20, 0, U),
        ])
    };
    let default = acl(&[(1, 7, U), (4, 5, U), (0x10, 4, U), (0x20, 0, U)]);
    run_seeds("acl vs chmod vs create", 300, |seed| {
        let vfs = Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/d", 0o777).unwrap();
        root.chmod(b"/d", 0o777).unwrap();
        let fd = root.open(b"/d/f", O_CREAT | O_WRONLY, 0o640).unwrap();
        root.close(fd).unwrap();
        root.chown(b"/d/f", 1000, 1000).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
                let mut sch = Sched::new(seed, 0);
                for _ in 0..STEPS {
                    sch.step();
                    if sch.below(3) == 0 {
                        p.removexattr(b"/d/f", b"system.posix_acl_access").unwrap();
                    } else {
                        let v = named([0, 4, 6][sch.below(3) as usize]);
                        p.setxattr(b"/d/f", b"system.posix_acl_access", &v, 0)
                            .unwrap();
                    }
                }
            });
            s.spawn(|| {
                let p = vfs.process(vfscale::Cred::user(1000, 1000, &[]));
                let mut sch = Sched::new(seed, 1);
                for _ in 0..STEPS {
                    sch.step();
                    let mode = [0o640, 0o604, 0o660, 0o600][sch.below(4) as usize];
                    p.chmod(b"/d/f", mode).unwrap();
                }
            });
            s.spawn(|| {
                let p = vfs.process(vfscale::Cred::user(1001, 1001, &[]));
                let mut sch = Sched::new(seed, 2);
                for _ in 0..STEPS {
                    sch.step();
                    match p.open(b"/d/f", O_RDONLY, 0) {
                        Ok(fd) => p.close(fd).unwrap(),
                        Err(e) => assert_eq!(e, Errno::EACCES),
                    }
                }
            });
            s.spawn(|| {
                let p = vfs.root_process();
                let mut sch = Sched::new(seed, 3);
                for i in 0..STEPS {
                    sch.step();
                    if i % 2 == 0 {
                        p.setxattr(b"/d", b"system.posix_acl_default", &default, 0)
                            .unwrap();
                    } else {
                        p.removexattr(b"/d", b"system.posix_acl_default").unwrap();
                    }
                }
            });
            s.spawn(|| {
                let p = vfs.process(vfscale::Cred::user(1002, 1002, &[]));
                p.umask(0o022);
                let mut sch = Sched::new(seed, 4);
                for i in 0..STEPS {
                    sch.step();
                    let name = format!("/d/n{i}").into_bytes();
                    let fd = p.open(&name, O_CREAT | O_WRONLY, 0o666).unwrap();
                    p.close(fd).unwrap();
                    // The umask makes 0644; the default ACL 0640 (mask r--,
                    // other none) with an access ACL.
                    let m = p.stat(&name).unwrap().mode & 0o7777;
                    let acl = p.getxattr(&name, b"system.posix_acl_access", &mut []);
                    match m {
                        0o644 => assert_eq!(acl, Err(Errno::ENODATA)),
                        0o640 => assert_eq!(acl, Ok(36)),
                        _ => panic!("new file mode {m:o}"),
                    }
                }
            });
        });
        let fresh = vfs.process(vfscale::Cred::user(1001, 1001, &[]));
        let may = fresh
            .open(b"/d/f", O_RDONLY, 0)
            .map(|fd| fresh.close(fd).unwrap());
        let mode = root.stat(b"/d/f").unwrap().mode;
        let has_acl = root
            .getxattr(b"/d/f", b"system.posix_acl_access", &mut [])
            .is_ok();
        // With the ACL, user 1001 reads by its named entry (r--) within the
        // mask, which is the mode's group class, unless that class is
        // empty (then Linux does not look at the ACL); else by "other".
        let expected = if has_acl && mode & 0o070 != 0 {
            mode & 0o040 != 0
        } else {
            mode & 0o004 != 0
        };
        assert_eq!(may.is_ok(), expected, "mode {mode:o}, ACL {has_acl}");
        drop(fresh);
        drop(root);
        let names: Vec<Vec<u8>> = (0..STEPS)
            .map(|i| format!("/d/n{i}").into_bytes())
            .collect();
        let mut paths: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
        paths.extend([&b"/d/f"[..], b"/d"]);
        settle(&vfs, &paths);
    });
}
