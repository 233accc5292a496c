//! Mounts over a passthrough tree that the host changes underneath them
//! (session 44): random sequences of mounts, binds, unmounts and name
//! changes through vfscale, and removals, renames and replacements of the
//! same directories on the host, with TTL 0 or an hour.
//!
//! What must hold: a successful mount is listed at the path it was given;
//! a successful rmdir or rename leaves nothing at the old path;
//! the mounts listed can all be unmounted by the paths mountinfo names,
//! none left behind; after
//! that, dropping the caches returns the fresh instance's object counts
//! and `check_invariants` passes. Linux before 3.18 keeps a mount whose
//! directory the server removed (COMPATIBILITY.md): so does vfscale.
//! `PROPTEST_CASES` sets the number of cases (default 96).

mod common;
mod common_host;
use common_host::{proptest_config, settled, HostDir};
use proptest::prelude::*;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::{Process, ProcessApi, Vfs};

/// The directories the steps name: on the host, or inside mounts.
const PATHS: [&str; 7] = ["/a", "/a/b", "/a/b/c", "/d", "/d/e", "/a/e", "/d/e/b"];

#[derive(Clone, Debug)]
enum Step {
    HostMkdir(usize),
    HostRemove(usize),
    HostRename(usize, usize),
    HostFile(usize),
    Mkdir(usize),
    Rmdir(usize),
    Rename(usize, usize),
    Mount(usize),
    Bind(usize, usize),
    RecursiveBind(usize, usize),
    Move(usize, usize),
    Shared(usize),
    Unshare,
    OtherStat(usize),
    Umount(usize, bool),
    Stat(usize),
    Chdir(usize),
    /// Opens a directory and keeps the descriptor.
    Open(usize),
    /// A create, a mkdir and a listing through the `n`th kept descriptor.
    AtKept(usize),
    Close(usize),
    DropCaches,
}

fn step() -> impl Strategy<Value = Step> {
    let path = 0..PATHS.len();
    prop_oneof![
        2 => path.clone().prop_map(Step::HostMkdir),
        1 => path.clone().prop_map(Step::HostRemove),
        1 => (path.clone(), path.clone()).prop_map(|(a, b)| Step::HostRename(a, b)),
        1 => path.clone().prop_map(Step::HostFile),
        2 => path.clone().prop_map(Step::Mkdir),
        1 => path.clone().prop_map(Step::Rmdir),
        1 => (path.clone(), path.clone()).prop_map(|(a, b)| Step::Rename(a, b)),
        2 => path.clone().prop_map(Step::Mount),
        1 => (path.clone(), path.clone()).prop_map(|(a, b)| Step::Bind(a, b)),
        1 => (path.clone(), path.clone()).prop_map(|(a, b)| Step::RecursiveBind(a, b)),
        1 => (path.clone(), path.clone()).prop_map(|(a, b)| Step::Move(a, b)),
        1 => path.clone().prop_map(Step::Shared),
        1 => Just(Step::Unshare),
        1 => path.clone().prop_map(Step::OtherStat),
        2 => (path.clone(), any::<bool>()).prop_map(|(a, d)| Step::Umount(a, d)),
        1 => path.clone().prop_map(Step::Stat),
        1 => path.clone().prop_map(Step::Chdir),
        1 => path.clone().prop_map(Step::Open),
        1 => (0..4usize).prop_map(Step::AtKept),
        1 => (0..4usize).prop_map(Step::Close),
        1 => Just(Step::DropCaches),
    ]
}

/// mountinfo's lines as (mount id, mountpoint), the escapes undone.
fn mounts(p: &Process) -> Vec<(u64, String)> {
    String::from_utf8(p.mountinfo().unwrap())
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].parse().unwrap(), f[4].replace("\\040", " "))
        })
        .collect()
}

/// After step `n`, `s`, removed `PATHS[i]`: it is gone (a directory
/// vfscale still kept for a mount beneath it would still be there).
fn gone_after(n: usize, s: &Step, p: &Process, i: usize) -> Result<(), String> {
    match p.stat(PATHS[i].as_bytes()) {
        Err(Errno::ENOENT) => Ok(()),
        other => Err(format!(
            "step {n} {s:?} succeeded, then stat of {}: {other:?}",
            PATHS[i]
        )),
    }
}

/// The host tree every case starts from (/a/b/c, /d/e) under a
/// passthrough root trusting entries for `ttl`.
fn seeded(host: &HostDir, ttl: Duration) -> Vfs {
    host.mkdir("a/b/c");
    host.mkdir("d/e");
    common_host::mirror(host, ttl)
}

fn run(ttl: Duration, steps: &[Step]) -> Result<(), String> {
    let host = HostDir::new("pt-mounts");
    let vfs = seeded(&host, ttl);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    // A process in a namespace of its own, once a step made it: mounts
    // on shared ones propagate into it.
    let mut other: Option<Process> = None;
    // Directory descriptors kept across steps (a mount they are in stays
    // until they close, lazily unmounted or not).
    let mut kept = Vec::new();
    let on_host = |i: usize| host.path().join(&PATHS[i][1..]);
    let path = |i: usize| PATHS[i].as_bytes();
    for (n, s) in steps.iter().enumerate() {
        let before = mounts(&p);
        let mounted = match *s {
            Step::HostMkdir(i) => {
                let _ = std::fs::create_dir_all(on_host(i));
                false
            }
            Step::HostRemove(i) => {
                let _ = std::fs::remove_dir_all(on_host(i))
                    .or_else(|_| std::fs::remove_file(on_host(i)));
                false
            }
            Step::HostRename(i, j) => {
                let _ = std::fs::rename(on_host(i), on_host(j));
                false
            }
            Step::HostFile(i) => {
                let _ = std::fs::remove_dir_all(on_host(i));
                let _ = std::fs::write(on_host(i), b"file");
                false
            }
            Step::Mkdir(i) => {
                let _ = p.mkdir(path(i), 0o755);
                false
            }
            Step::Rmdir(i) => {
                if p.rmdir(path(i)).is_ok() {
                    gone_after(n, s, &p, i)?;
                }
                false
            }
            Step::Rename(i, j) => {
                if p.rename(path(i), path(j)).is_ok() && i != j {
                    gone_after(n, s, &p, i)?;
                }
                false
            }
            Step::Mount(i) => p.mount(b"none", path(i), b"tmpfs", 0).is_ok(),
            Step::Bind(i, j) => p.mount(path(i), path(j), b"", MS_BIND).is_ok(),
            Step::RecursiveBind(i, j) => p.mount(path(i), path(j), b"", MS_BIND | MS_REC).is_ok(),
            Step::Move(i, j) => p.mount(path(i), path(j), b"", MS_MOVE).is_ok(),
            Step::Shared(i) => {
                let _ = p.mount(b"", path(i), b"", MS_SHARED);
                false
            }
            Step::Unshare => {
                if other.is_none() {
                    let mut q = p.fork().unwrap();
                    q.unshare(CLONE_NEWNS).unwrap();
                    other = Some(q);
                }
                false
            }
            Step::OtherStat(i) => {
                if let Some(q) = &other {
                    let _ = q.stat(path(i));
                }
                false
            }
            Step::Umount(i, detach) => {
                let _ = p.umount2(path(i), if detach { MNT_DETACH } else { 0 });
                false
            }
            Step::Stat(i) => {
                let _ = p.stat(path(i));
                false
            }
            Step::Chdir(i) => {
                let _ = p.chdir(path(i));
                false
            }
            Step::Open(i) => {
                if let Ok(fd) = p.open(path(i), O_RDONLY | O_DIRECTORY, 0) {
                    kept.push(fd);
                }
                false
            }
            Step::AtKept(k) => {
                if let Some(&fd) = kept.get(k) {
                    if let Ok(f) = p.openat(fd, b"f", O_CREAT | O_WRONLY, 0o644) {
                        p.close(f).unwrap();
                    }
                    let _ = p.mkdirat(fd, b"g", 0o755);
                    let mut buf = vec![0u8; 4096];
                    let _ = p.getdents64(fd, &mut buf);
                }
                false
            }
            Step::Close(k) => {
                if k < kept.len() {
                    p.close(kept.swap_remove(k)).unwrap();
                }
                false
            }
            Step::DropCaches => {
                vfs.drop_caches();
                false
            }
        };
        if mounted {
            let after = mounts(&p);
            let new: Vec<_> = after.iter().filter(|m| !before.contains(m)).collect();
            let target = match *s {
                Step::Mount(i)
                | Step::Bind(_, i)
                | Step::RecursiveBind(_, i)
                | Step::Move(_, i) => PATHS[i],
                _ => unreachable!(),
            };
            // A line at the target for a new mount (more may come with
            // it: copies propagated to peers, which may be at the same
            // path, a recursive bind's copies beneath); a move's is its
            // mount's, renamed.
            if !new.iter().any(|m| m.1 == target) {
                return Err(format!(
                    "step {n} {s:?}: new mountinfo lines {new:?}, none at {target}"
                ));
            }
        }
    }
    for fd in kept {
        p.close(fd).unwrap();
    }
    unmount_all(&p)?;
    p.exit();
    if let Some(q) = other {
        q.exit();
    }
    settled(&vfs, base)?;
    vfs.check_invariants()?;
    Ok(())
}

/// Every mount goes by a path mountinfo gives: each round unmounts the
/// top of the stack at the newest mount's path whose umount works (a
/// move may have put an older mount on top, a newer one may cover the
/// path of another).
fn unmount_all(p: &Process) -> Result<(), String> {
    let _ = p.chdir(b"/");
    loop {
        let listed = mounts(p);
        if listed.len() == 1 {
            break;
        }
        let mut newest_first = listed[1..].to_vec();
        newest_first.sort_by_key(|m| std::cmp::Reverse(m.0));
        let mut errors = Vec::new();
        let unmounted = newest_first.iter().any(|(_, at)| {
            let done = p.umount2(at.as_bytes(), MNT_DETACH);
            errors.push((at.clone(), done));
            done.is_ok()
        });
        if !unmounted {
            return Err(format!(
                "no listed mount unmounts: {errors:?}; listed {listed:?}"
            ));
        }
        if mounts(p).len() >= listed.len() {
            return Err(format!("an umount ({errors:?}) left {listed:?} listed"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(96))]

    #[test]
    fn mounts_survive_host_changes_and_all_unmount(
        long_ttl in any::<bool>(),
        steps in prop::collection::vec(step(), 1..40),
    ) {
        let ttl = if long_ttl { Duration::from_secs(3600) } else { Duration::ZERO };
        // A case that hangs (a walk retrying forever, a deadlock) fails.
        if let Err(e) = common::with_timeout(60, move || run(ttl, &steps)) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// The same ground raced: one thread mounts, binds and unmounts, one
/// renames, removes and makes directories and reads mountinfo through
/// vfscale, and one changes the host tree, 3,000 steps each (TTL 0, so
/// every walk revalidates). Then the same end as the sequences': every
/// listed mount unmounts by its path, fresh counts, the invariants.
#[test]
fn stress_mounts_race_renames_and_host_changes() {
    let seed = common::seed_from_env();
    println!("VFSCALE_SEED={seed}");
    let host = HostDir::new("pt-mounts-stress");
    let vfs = seeded(&host, Duration::ZERO);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    let path = |r: u64| PATHS[r as usize].as_bytes();
    let n = PATHS.len() as u64;
    std::thread::scope(|s| {
        let mounter = p.fork().unwrap();
        s.spawn(move || {
            let mut rnd = common::xorshift(seed);
            for _ in 0..3000 {
                let _ = match rnd(4) {
                    0 | 1 => mounter.mount(b"none", path(rnd(n)), b"tmpfs", 0),
                    2 => mounter.mount(path(rnd(n)), path(rnd(n)), b"", MS_BIND),
                    _ => mounter.umount2(path(rnd(n)), MNT_DETACH),
                };
            }
        });
        let namer = p.fork().unwrap();
        s.spawn(move || {
            let mut rnd = common::xorshift(seed.rotate_left(21));
            for _ in 0..3000 {
                let _ = match rnd(4) {
                    0 => namer.rename(path(rnd(n)), path(rnd(n))),
                    1 => namer.rmdir(path(rnd(n))),
                    2 => namer.mkdir(path(rnd(n)), 0o755),
                    _ => namer.stat(path(rnd(n))).map(drop),
                };
                if rnd(16) == 0 {
                    mounts(&namer);
                }
            }
        });
        let on_host = |r: u64| host.path().join(&PATHS[r as usize][1..]);
        s.spawn(move || {
            let mut rnd = common::xorshift(seed.rotate_left(42));
            for _ in 0..3000 {
                let _ = match rnd(3) {
                    0 => std::fs::create_dir_all(on_host(rnd(n))),
                    1 => std::fs::remove_dir_all(on_host(rnd(n))),
                    _ => std::fs::rename(on_host(rnd(n)), on_host(rnd(n))),
                };
            }
        });
    });
    unmount_all(&p).unwrap();
    p.exit();
    settled(&vfs, base).unwrap();
    vfs.check_invariants().unwrap();
}

/// A passthrough instance mounted on /m and lazily unmounted 1,500 times
/// while three threads walk into it and miss or find names two levels
/// down. Its cached entries are in no directory index, so its teardown
/// cannot mark them dead as a tmpfs's (`kill_superblock`): a lookup holds
/// the mount until its entry is in. Before session 44 the entries such
/// walks cached after the teardown were never freed.
#[test]
fn lazy_umount_of_a_passthrough_races_walks_inside() {
    let host = HostDir::new("pt-lazy-umount");
    host.mkdir("s/t");
    let source = host.path().to_str().unwrap().as_bytes().to_vec();
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/m", 0o755).unwrap();
    let base = vfs.object_counts();
    std::thread::scope(|s| {
        let mounter = p.fork().unwrap();
        let source = &source;
        s.spawn(move || {
            for _ in 0..1500 {
                let _ = mounter.mount(source, b"/m", b"passthrough", 0);
                let _ = mounter.umount2(b"/m", MNT_DETACH);
            }
        });
        for w in 0..3 {
            let walker = p.fork().unwrap();
            s.spawn(move || {
                for i in 0..1500 {
                    let path: &[u8] = match (i + w) % 3 {
                        0 => b"/m/s/t/missing",
                        1 => b"/m/s/t",
                        _ => b"/m/s/missing",
                    };
                    let _ = walker.stat(path);
                }
            });
        }
    });
    while p.umount2(b"/m", MNT_DETACH).is_ok() {}
    p.exit();
    common::assert_back_to(&vfs, base);
}

/// A bind of a passthrough directory whose directory vfscale then
/// removed (the host had emptied it behind a cached name in it): a walk
/// through the bind to that cached name revalidates it in a dead
/// directory. Before session 44 the revalidation found it invalid but
/// would not drop a name in a dead directory, and the walk retried
/// forever; now a name in a removed directory is ENOENT, as Linux's
/// lookups in a dead directory are.
#[test]
fn a_walk_through_a_bind_of_a_removed_directory_ends() {
    let host = HostDir::new("pt-bind-removed");
    let vfs = seeded(&host, Duration::ZERO);
    let base = vfs.object_counts();
    let p = vfs.root_process();
    p.mkdir(b"/d/e/x", 0o755).unwrap();
    p.mount(b"/d/e", b"/a", b"", MS_BIND).unwrap();
    assert!(p.stat(b"/a/x").is_ok());
    std::fs::remove_dir(host.path().join("d/e/x")).unwrap();
    p.rmdir(b"/d/e").unwrap();
    let q = p.fork().unwrap();
    let seen = common::with_timeout(60, move || q.stat(b"/a/x").map(drop));
    assert_eq!(seen, Err(Errno::ENOENT));
    p.umount2(b"/a", 0).unwrap();
    p.exit();
    settled(&vfs, base).unwrap();
}
