//! The passthrough backend's cached directory listings (issue 6, session
//! 7): a full listing read from the start is served to later readdirs of
//! the unchanged directory without a host read (within the TTL, or past
//! it when the directory's settled stamp vouches for it), vfscale's own
//! name changes drop it at once (failed ones too), positions resume as the
//! host's do whether served from the cache or the host, and host errors
//! surface and leave no stale listing.
//!
//! Contract checked by the property test against a model of the host:
//! with TTL 0 every listing equals the host's current set of names; with a
//! long TTL a listing equals the host's set at some moment since
//! vfscale's last change that reached the host (the cached moment) or now.

mod common_host;

use common_host::{host_names, listed, HostDir, Names};
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::faulty::{CallKind, FaultControl, FaultyFs, Trigger};
use vfscale::fs::passthrough::host::HostStats;
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{Process, ProcessApi, Vfs, VfsConfig};

fn mirror(host: &HostDir, config: PassthroughConfig) -> (Vfs, Arc<HostStats>) {
    let pt = Passthrough::new(host.path(), config).unwrap();
    let stats = pt.stats();
    (Vfs::with_root_fs(VfsConfig::default(), Box::new(pt)), stats)
}

fn ttl(ttl: Duration) -> PassthroughConfig {
    PassthroughConfig {
        ttl,
        ..Default::default()
    }
}

fn names(list: &[&str]) -> Names {
    list.iter().map(|n| n.as_bytes().to_vec()).collect()
}

/// Lets the host directories' ctimes age past the stamp's settling time
/// (dirs.rs: 50 ms), as a tree that is not being changed.
fn let_settle() {
    std::thread::sleep(Duration::from_millis(120));
}

/// One getdents64 call on `fd` with room for about `room` short entries.
fn getdents(p: &Process, fd: Fd, room: usize) -> Vec<Dirent> {
    let mut buf = vec![0u8; 24 * room];
    let n = p.getdents64(fd, &mut buf).unwrap();
    parse_dirents64(&buf[..n])
}

/// The rest of the pass on `fd`, `room` entries per getdents64 call.
fn rest_of_pass(p: &Process, fd: Fd, room: usize) -> Vec<Dirent> {
    let mut all = Vec::new();
    loop {
        let chunk = getdents(p, fd, room);
        if chunk.is_empty() {
            return all;
        }
        all.extend(chunk);
    }
}

#[test]
fn a_repeated_listing_within_the_ttl_reads_nothing_from_the_host() {
    let host = HostDir::new("lcache");
    host.mkdir("d");
    for i in 0..500 {
        host.write(&format!("d/f{i:03}"), b"");
    }
    let (vfs, stats) = mirror(&host, ttl(Duration::from_secs(3600)));
    let p = vfs.root_process();
    let first = listed(&p, b"/d").unwrap();
    assert_eq!(first, host_names(&host.path().join("d")));
    assert!(stats.listing_bytes() > 0, "the listing was kept");
    let (calls, reads) = (stats.calls(), stats.dir_reads());
    for _ in 0..3 {
        assert_eq!(listed(&p, b"/d").unwrap(), first);
    }
    assert_eq!(stats.dir_reads(), reads, "served from the cache");
    assert_eq!(stats.calls(), calls, "not even an open");
    // A host change within the TTL is seen after it (the documented
    // contract; lookups behave the same).
    host.write("d/late", b"");
    assert_eq!(listed(&p, b"/d").unwrap(), first);
    // Freed with the inode.
    p.exit();
    vfs.drop_caches();
    assert_eq!(stats.listing_bytes(), 0);
}

#[test]
fn every_name_change_through_vfscale_drops_the_listing() {
    let host = HostDir::new("lchange");
    host.write("f", b"data");
    host.mkdir("d");
    host.mkdir("e");
    let (vfs, _) = mirror(&host, ttl(Duration::from_secs(3600)));
    let p = vfs.root_process();
    type Op = fn(&Process) -> SysResult<()>;
    let ops: [(&str, Op); 9] = [
        ("create", |p| {
            p.open(b"/c", O_CREAT | O_WRONLY, 0o644).map(|_| ())
        }),
        ("mknod", |p| {
            p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0)
        }),
        ("mkdir", |p| p.mkdir(b"/m", 0o755)),
        ("symlink", |p| p.symlink(b"f", b"/s")),
        ("link", |p| p.link(b"/f", b"/h")),
        ("unlink", |p| p.unlink(b"/h")),
        ("rmdir", |p| p.rmdir(b"/m")),
        ("rename out", |p| p.rename(b"/c", b"/d/c")),
        ("rename in", |p| p.rename(b"/e/x", b"/x")),
    ];
    host.write("e/x", b"");
    for (what, op) in ops {
        // Both directories a rename touches are cached.
        for dir in [&b"/"[..], b"/d", b"/e"] {
            listed(&p, dir).unwrap();
        }
        op(&p).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        for (dir, sub) in [(&b"/"[..], ""), (b"/d", "d"), (b"/e", "e")] {
            assert_eq!(
                listed(&p, dir).unwrap(),
                host_names(&host.path().join(sub)),
                "{what} in {sub:?}"
            );
        }
    }
    // A change that failed on the host (vfscale believed the name absent:
    // a cached miss within the TTL) may still have changed it: dropped.
    assert_eq!(p.stat(b"/late").map(|_| ()), Err(Errno::ENOENT));
    listed(&p, b"/").unwrap();
    host.mkdir("late");
    assert_eq!(p.mkdir(b"/late", 0o755), Err(Errno::EEXIST));
    assert!(listed(&p, b"/").unwrap().contains(&b"late"[..]));
}

#[test]
fn past_the_ttl_an_unchanged_directory_vouches_for_its_listing() {
    let host = HostDir::new("lvouch");
    for i in 0..50 {
        host.write(&format!("f{i}"), b"");
    }
    host.mkdir("d");
    let (vfs, stats) = mirror(&host, ttl(Duration::ZERO));
    let p = vfs.root_process();
    let_settle();
    // Read while settled: kept and vouched for at each later use.
    let want = host_names(host.path());
    assert_eq!(listed(&p, b"/").unwrap(), want);
    let reads = stats.dir_reads();
    assert_eq!(listed(&p, b"/").unwrap(), want);
    assert_eq!(stats.dir_reads(), reads, "vouched for by the stamp");
    // Any host change is seen at the next listing.
    host.write("new", b"");
    assert_eq!(listed(&p, b"/").unwrap(), host_names(host.path()));
    std::fs::remove_file(host.path().join("f3")).unwrap();
    assert_eq!(listed(&p, b"/").unwrap(), host_names(host.path()));
    // Read while unsettled (just changed): not trusted past the TTL, so
    // read again (a change in the same timestamp tick is not missed).
    let reads = stats.dir_reads();
    assert_eq!(listed(&p, b"/").unwrap(), host_names(host.path()));
    assert!(stats.dir_reads() > reads);
    // The directory replaced by another one (new inode) at the same path.
    assert_eq!(listed(&p, b"/d").unwrap(), names(&[]));
    std::fs::remove_dir(host.path().join("d")).unwrap();
    host.mkdir("d");
    host.write("d/inner", b"");
    assert_eq!(listed(&p, b"/d").unwrap(), names(&["inner"]));
}

#[test]
fn without_stamps_a_listing_serves_for_the_ttl_only() {
    let host = HostDir::new("lnostamp");
    host.write("a", b"");
    let (vfs, stats) = mirror(
        &host,
        PassthroughConfig {
            ttl: Duration::ZERO,
            dir_stamps: false,
            ..Default::default()
        },
    );
    let p = vfs.root_process();
    let_settle();
    listed(&p, b"/").unwrap();
    let reads = stats.dir_reads();
    assert_eq!(listed(&p, b"/").unwrap(), names(&["a"]));
    assert!(stats.dir_reads() > reads, "re-read past the TTL");
}

#[test]
fn positions_resume_alike_from_the_cache_and_the_host() {
    let host = HostDir::new("lpos");
    for i in 0..300 {
        host.write(&format!("entry-{i}"), b"");
    }
    let cached_cfg = ttl(Duration::from_secs(3600));
    let uncached_cfg = PassthroughConfig {
        listing_max_bytes: 0,
        ..cached_cfg
    };
    let full = |vfs: &Vfs| {
        let p = vfs.root_process();
        let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let all = rest_of_pass(&p, fd, 7);
        p.close(fd).unwrap();
        all
    };
    let (cached, cstats) = mirror(&host, cached_cfg);
    let (uncached, ustats) = mirror(&host, uncached_cfg);
    full(&cached);
    // The first pass read the host directory once (a 32 KiB read and the
    // one that found its end), not once per 7-entry call.
    assert_eq!(cstats.dir_reads(), 2);
    let from_cache = full(&cached);
    assert_eq!(cstats.dir_reads(), 2);
    let from_host = full(&uncached);
    assert_eq!(from_cache, from_host, "same entries, same positions");
    assert!(cstats.listing_bytes() > 0);
    assert_eq!(ustats.listing_bytes(), 0);
    // seekdir to every 37th position (and to the end) resumes alike.
    for k in (2..from_host.len())
        .step_by(37)
        .chain([from_host.len() - 1])
    {
        let pos = from_host[k].off;
        let rest = |vfs: &Vfs| {
            let p = vfs.root_process();
            let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
            assert_eq!(p.lseek(fd, pos, SEEK_SET).unwrap(), pos);
            let got = rest_of_pass(&p, fd, 11);
            p.close(fd).unwrap();
            got
        };
        let want = &from_host[k + 1..];
        assert_eq!(rest(&uncached), want, "host, from {pos}");
        assert_eq!(rest(&cached), want, "cache, from {pos}");
    }
}

#[test]
fn a_pass_returns_each_lasting_entry_once_across_a_rebuild() {
    let host = HostDir::new("lrebuild");
    for i in 0..200 {
        host.write(&format!("keep{i}"), b"");
    }
    for i in 0..50 {
        host.write(&format!("gone{i}"), b"");
    }
    let (vfs, _) = mirror(&host, ttl(Duration::ZERO));
    let p = vfs.root_process();
    let_settle();
    let q = vfs.root_process();
    listed(&q, b"/").unwrap();
    let fd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let mut seen: Vec<Vec<u8>> = getdents(&p, fd, 40).into_iter().map(|e| e.name).collect();
    // Between two calls of the pass the host changes and another listing
    // rebuilds the cache.
    for i in 0..50 {
        std::fs::remove_file(host.path().join(format!("gone{i}"))).unwrap();
        host.write(&format!("new{i}"), b"");
    }
    assert_eq!(listed(&q, b"/").unwrap(), host_names(host.path()));
    seen.extend(rest_of_pass(&p, fd, 40).into_iter().map(|e| e.name));
    let mut once = Names::new();
    for n in &seen {
        assert!(once.insert(n.clone()), "{n:?} twice");
    }
    for i in 0..200 {
        assert!(
            once.contains(format!("keep{i}").as_bytes()),
            "keep{i} missing"
        );
    }
}

#[test]
fn host_errors_surface_and_leave_no_stale_listing() {
    let host = HostDir::new("lerr");
    host.mkdir("p/d");
    host.write("p/d/old", b"");
    let (vfs, stats) = mirror(&host, ttl(Duration::ZERO));
    let p = vfs.root_process();
    let_settle();
    assert_eq!(listed(&p, b"/p/d").unwrap(), names(&["old"]));
    let fd = p.open(b"/p/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    // ENOENT: the directory removed on the host.
    std::fs::remove_file(host.path().join("p/d/old")).unwrap();
    std::fs::remove_dir(host.path().join("p/d")).unwrap();
    let mut buf = [0u8; 512];
    assert_eq!(p.getdents64(fd, &mut buf), Err(Errno::ENOENT));
    assert_eq!(stats.listing_bytes(), 0, "dropped");
    host.mkdir("p/d");
    host.write("p/d/new", b"");
    assert_eq!(listed(&p, b"/p/d").unwrap(), names(&["new"]));
    p.close(fd).unwrap();
    // EACCES: the parent made unsearchable, seen by a thread without
    // CAP_DAC_OVERRIDE (a non-root fsuid drops it for that thread only),
    // listing through a directory fd opened before.
    let_settle();
    assert_eq!(listed(&p, b"/p/d").unwrap(), names(&["new"]));
    assert!(stats.listing_bytes() > 0);
    let fd = p.open(b"/p/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let pdir = host.path().join("p");
    std::fs::set_permissions(&pdir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let denied = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: a per-thread credential change, undone below.
            let old = unsafe { libc::setfsuid(65534) };
            let mut buf = [0u8; 512];
            let r = p.getdents64(fd, &mut buf).map(|_| ());
            // SAFETY: as above.
            unsafe { libc::setfsuid(old as u32) };
            (old == 0).then_some(r)
        })
        .join()
        .unwrap()
    });
    std::fs::set_permissions(&pdir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(r) = denied {
        assert_eq!(r, Err(Errno::EACCES));
        assert_eq!(stats.listing_bytes(), 0, "dropped");
    }
    p.close(fd).unwrap();
    assert_eq!(listed(&p, b"/p/d").unwrap(), names(&["new"]));
}

#[test]
fn injected_faults_leave_the_listing_in_step_with_the_host() {
    let host = HostDir::new("lfault");
    host.write("a", b"");
    let control = FaultControl::new(11);
    let pt = Passthrough::new(host.path(), ttl(Duration::from_secs(3600))).unwrap();
    let vfs = Vfs::with_root_fs(
        VfsConfig::default(),
        Box::new(FaultyFs::new(pt, control.clone())),
    );
    let p = vfs.root_process();
    assert_eq!(listed(&p, b"/").unwrap(), names(&["a"]));
    control.fail(CallKind::Readdir, Trigger::Nth(1), Errno::EIO);
    control.fail(CallKind::Change, Trigger::OneIn(1), Errno::EIO);
    control.arm();
    assert_eq!(listed(&p, b"/").map(|_| ()), Err(Errno::EIO));
    // Changes that failed before the host: nothing to drop, nothing stale.
    assert_eq!(p.mkdir(b"/m", 0o755), Err(Errno::EIO));
    assert_eq!(p.unlink(b"/a"), Err(Errno::EIO));
    control.disarm();
    assert_eq!(listed(&p, b"/").unwrap(), host_names(host.path()));
    assert_eq!(host_names(host.path()), names(&["a"]));
    p.mkdir(b"/m", 0o755).unwrap();
    assert_eq!(listed(&p, b"/").unwrap(), names(&["a", "m"]));
}

#[test]
fn listings_over_the_bounds_are_not_kept_but_list_in_full() {
    let host = HostDir::new("lbound");
    for i in 0..400 {
        host.write(&format!("name-{i:04}"), b"");
    }
    for (max, budget) in [(2_000, 1 << 20), (1 << 20, 2_000)] {
        let (vfs, stats) = mirror(
            &host,
            PassthroughConfig {
                ttl: Duration::from_secs(3600),
                listing_max_bytes: max,
                listings_budget: budget,
                ..Default::default()
            },
        );
        let p = vfs.root_process();
        for _ in 0..2 {
            assert_eq!(listed(&p, b"/").unwrap(), host_names(host.path()));
            assert_eq!(stats.listing_bytes(), 0, "max {max} budget {budget}");
        }
    }
}

/// One step of the property test.
#[derive(Clone, Debug)]
enum Step {
    HostCreate(u8),
    HostUnlink(u8),
    HostRename(u8, u8),
    VfsCreate(u8),
    VfsMkdir(u8),
    VfsUnlink(u8),
    VfsRename(u8, u8),
    /// A full listing with room for this many entries per call.
    List(u8),
    /// A pass with a step between two of its calls, and a second listing
    /// (rebuilding the cache) there too.
    Interrupted(u8, Box<Step>),
}

fn leaf() -> impl Strategy<Value = Step> {
    let n = 0u8..12;
    prop_oneof![
        n.clone().prop_map(Step::HostCreate),
        n.clone().prop_map(Step::HostUnlink),
        (n.clone(), n.clone()).prop_map(|(a, b)| Step::HostRename(a, b)),
        n.clone().prop_map(Step::VfsCreate),
        n.clone().prop_map(Step::VfsMkdir),
        n.clone().prop_map(Step::VfsUnlink),
        (n.clone(), n).prop_map(|(a, b)| Step::VfsRename(a, b)),
        (1u8..6).prop_map(Step::List),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => leaf(),
        1 => (1u8..6, leaf()).prop_map(|(r, s)| Step::Interrupted(r, Box::new(s))),
    ]
}

/// The host and vfscale side of a property run.
struct Run {
    host: HostDir,
    p: Process,
    long_ttl: bool,
    /// Host sets a listing may show (long TTL: since vfscale's last
    /// change that reached the host).
    allowed: Vec<Names>,
}

impl Run {
    fn name(i: u8) -> String {
        format!("n{i}")
    }

    fn path(i: u8) -> Vec<u8> {
        format!("/n{i}").into_bytes()
    }

    fn apply(&mut self, s: &Step) {
        let before = host_names(self.host.path());
        let h = |i| self.host.path().join(Self::name(i));
        let p = &self.p;
        let vfs_change = match s {
            Step::HostCreate(i) => {
                let _ = std::fs::write(h(*i), b"");
                false
            }
            Step::HostUnlink(i) => {
                let _ = std::fs::remove_file(h(*i)).or_else(|_| std::fs::remove_dir(h(*i)));
                false
            }
            Step::HostRename(a, b) => {
                let _ = std::fs::rename(h(*a), h(*b));
                false
            }
            Step::VfsCreate(i) => {
                if let Ok(fd) = p.open(&Self::path(*i), O_CREAT | O_WRONLY, 0o644) {
                    p.close(fd).unwrap();
                }
                true
            }
            Step::VfsMkdir(i) => {
                let _ = p.mkdir(&Self::path(*i), 0o755);
                true
            }
            Step::VfsUnlink(i) => {
                let _ = p
                    .unlink(&Self::path(*i))
                    .or_else(|_| p.rmdir(&Self::path(*i)));
                true
            }
            Step::VfsRename(a, b) => {
                let _ = p.rename(&Self::path(*a), &Self::path(*b));
                true
            }
            Step::List(room) => {
                self.check_full(*room);
                false
            }
            Step::Interrupted(room, inner) => {
                self.interrupted(*room, inner);
                false
            }
        };
        let after = host_names(self.host.path());
        if vfs_change && after != before {
            self.allowed.clear();
        }
        if self.allowed.last() != Some(&after) {
            self.allowed.push(after);
        }
    }

    fn check_full(&self, room: u8) {
        let fd = self.p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut got = Names::new();
        for e in rest_of_pass(&self.p, fd, room as usize) {
            if e.name != b"." && e.name != b".." {
                assert!(got.insert(e.name.clone()), "{:?} twice", e.name);
            }
        }
        self.p.close(fd).unwrap();
        let now = host_names(self.host.path());
        if self.long_ttl {
            assert!(
                got == now || self.allowed.contains(&got),
                "listed {got:?}, host {now:?}, allowed {:?}",
                self.allowed
            );
        } else {
            assert_eq!(got, now, "TTL 0: the host's current set");
        }
    }

    /// A pass interrupted by `inner` and a full listing: names present on
    /// the host throughout come exactly once (where the host promises it),
    /// and nothing comes that the host never had during the pass.
    fn interrupted(&mut self, room: u8, inner: &Step) {
        let start = host_names(self.host.path());
        let fd = self.p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut got: Vec<Vec<u8>> = getdents(&self.p, fd, room as usize)
            .into_iter()
            .map(|e| e.name)
            .collect();
        let allowed_before = self.allowed.clone();
        self.apply(inner);
        self.check_full(6);
        let end = host_names(self.host.path());
        got.extend(
            rest_of_pass(&self.p, fd, room as usize)
                .into_iter()
                .map(|e| e.name),
        );
        self.p.close(fd).unwrap();
        got.retain(|n| n != b"." && n != b"..");
        let once: Names = got.iter().cloned().collect();
        let ever: Names = allowed_before
            .iter()
            .chain(&self.allowed)
            .flatten()
            .chain(&start)
            .chain(&end)
            .cloned()
            .collect();
        assert!(once.is_subset(&ever), "listed {once:?}, never on the host");
        if !resumes_stably(self.host.path()) {
            // tmpfs (Linux 6.18) restarts a pass whose resume position's
            // entry was removed, the same fd or not: the host's own
            // listing repeats names there, and vfscale's with it.
            return;
        }
        assert_eq!(once.len(), got.len(), "a name twice in {got:?}");
        if !self.long_ttl {
            for n in start.intersection(&end) {
                assert!(once.contains(n), "{n:?} present throughout, not listed");
            }
        }
    }
}

/// Whether the host's listing positions survive the removal of the entry
/// a pass is to resume at (ext4's hash positions do; tmpfs's do not).
fn resumes_stably(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a zeroed statfs is a valid output buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated; statfs writes only `st`.
    assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
    st.f_type != libc::TMPFS_MAGIC
}

proptest! {
    // PROPTEST_CASES raises the count; unlike the tests that race a host
    // thread, these cases replay, so the regression file is kept.
    #![proptest_config(ProptestConfig {
        failure_persistence: ProptestConfig::default().failure_persistence,
        ..common_host::proptest_config(48)
    })]

    #[test]
    fn listings_match_the_host_model(
        long_ttl in any::<bool>(),
        steps in prop::collection::vec(step(), 1..30),
    ) {
        let host = HostDir::new("lprop");
        for i in (0..12).step_by(3) {
            host.write(&Run::name(i), b"");
        }
        let ttl_d = if long_ttl { Duration::from_secs(3600) } else { Duration::ZERO };
        let (vfs, _) = mirror(&host, ttl(ttl_d));
        let p = vfs.root_process();
        let allowed = vec![host_names(host.path())];
        let mut run = Run { host, p, long_ttl, allowed };
        for s in &steps {
            run.apply(s);
        }
        run.check_full(4);
        run.p.exit();
    }
}
