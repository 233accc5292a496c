//! Memory groups and reclaim (issue 7): charging, limits, per-group LRU
//! lists, shrinker bits, reparenting, drop_caches levels. Every test is
//! bounded (a few thousand operations).

mod common;
use common::xorshift;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use vfscale::abi::*;
use vfscale::reclaim::{GroupId, Shrinker, KIND_BYTES};
use vfscale::{ProcessApi, Vfs};

/// `n` lookups of missing names under `dir`: each leaves one negative
/// dentry charged to the caller's group.
fn miss(p: &vfscale::Process, dir: &str, tag: &str, n: usize) {
    for i in 0..n {
        let e = p.stat(format!("{dir}/{tag}{i}").as_bytes()).unwrap_err();
        assert_eq!(e, Errno::ENOENT);
    }
}

fn setup() -> (Vfs, vfscale::Process) {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    root.mkdir(b"/d", 0o777).unwrap();
    (vfs, root)
}

#[test]
fn group_tree_errors() {
    let vfs = Vfs::new();
    let a = vfs.group_create(0, "a").unwrap();
    assert_eq!(vfs.group_create(0, "a"), Err(Errno::EEXIST));
    assert_eq!(vfs.group_create(0, ""), Err(Errno::EINVAL));
    assert_eq!(vfs.group_create(0, "x/y"), Err(Errno::EINVAL));
    assert_eq!(vfs.group_create(999, "b"), Err(Errno::ENOENT));
    let b = vfs.group_create(a, "b").unwrap();
    assert_eq!(vfs.group_remove(a), Err(Errno::EBUSY));
    assert_eq!(vfs.group_remove(0), Err(Errno::EINVAL));
    vfs.group_remove(b).unwrap();
    assert_eq!(vfs.group_remove(b), Err(Errno::ENOENT));
    assert_eq!(vfs.group_stat(b).unwrap_err(), Errno::ENOENT);
    vfs.group_remove(a).unwrap();
    assert_eq!(vfs.group_stat(a).unwrap_err(), Errno::ENOENT);
    // The name is free again; the pruned ids are reused (nothing was
    // charged to them), as the kernel reuses memcg ids.
    let a2 = vfs.group_create(0, "a").unwrap();
    assert!([a, b].contains(&a2), "{a2}");
    let s = vfs.group_stat(a2).unwrap();
    assert_eq!((s.name.as_str(), s.parent, s.usage_bytes), ("a", 0, 0));
    assert_eq!(vfs.group_table_size(), (0, 3));
    // A process keeps its group from removal (cgroup rmdir: EBUSY).
    let root = vfs.root_process();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, a2).unwrap();
    let child = p.fork().unwrap();
    let thread = child.clone_thread();
    assert_eq!(vfs.group_remove(a2), Err(Errno::EBUSY));
    vfs.group_attach(&p, 0).unwrap();
    drop(child);
    assert_eq!(vfs.group_remove(a2), Err(Errno::EBUSY), "a thread left");
    drop(thread);
    vfs.group_remove(a2).unwrap();
    assert_eq!(vfs.group_attach(&p, a2), Err(Errno::ENOENT));
    assert_eq!(vfs.drop_caches_level(0), Err(Errno::EINVAL));
    assert_eq!(vfs.drop_caches_level(4), Err(Errno::EINVAL));
    assert_eq!(vfs.drop_caches_level(1), Ok(0));
}

#[test]
fn charges_follow_the_creating_process_and_uncharge_on_free() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let h = vfs.group_create(0, "h").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    assert_eq!(p.fork().unwrap().group(), g, "children inherit the group");
    assert_eq!(p.clone_thread().group(), g);
    let fd = p.open(b"/d/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.write(fd, &[7u8; 10000]).unwrap();
    let s = vfs.group_stat(g).unwrap();
    assert_eq!((s.dentries, s.inodes, s.files, s.pages), (1, 1, 1, 3));
    assert_eq!(
        s.usage_bytes,
        KIND_BYTES[0] + KIND_BYTES[1] + KIND_BYTES[2] + 3 * KIND_BYTES[3]
    );
    // Moving the process does not move what it created.
    vfs.group_attach(&p, h).unwrap();
    p.close(fd).unwrap();
    p.unlink(b"/d/f").unwrap();
    let s = vfs.group_stat(g).unwrap();
    assert_eq!(
        (s.dentries, s.inodes, s.files, s.pages, s.usage_bytes),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(vfs.group_stat(h).unwrap().usage_bytes, 0);
    // The stat path of an existing name charges nothing.
    root.open(b"/d/e", O_CREAT | O_WRONLY, 0o644)
        .and_then(|fd| root.close(fd))
        .unwrap();
    p.stat(b"/d/e").unwrap();
    assert_eq!(vfs.group_stat(h).unwrap().usage_bytes, 0);
    // A missing name does: one negative dentry.
    assert_eq!(p.stat(b"/d/missing"), Err(Errno::ENOENT));
    assert_eq!(vfs.group_stat(h).unwrap().dentries, 1);
    assert_eq!(vfs.group_lru_count(h), 1);
    drop((p, root));
    vfs.check_invariants().unwrap();
}

/// The per-thread charge cache (reclaim/mod.rs, `Current`) charges what
/// each call names: a process moved to another group, a removed group
/// whose pruned id is re-created as a new group, and a second namespace
/// used on the same thread in between.
#[test]
fn cached_charges_follow_group_changes_on_one_thread() {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    let files = |g| vfs.group_stat(g).unwrap().files;
    let a = vfs.group_create(0, "a").unwrap();
    let b = vfs.group_create(0, "b").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, a).unwrap();
    let in_a = p.eventfd(0, 0).unwrap();
    assert_eq!((files(a), files(b)), (1, 0));
    vfs.group_attach(&p, b).unwrap();
    let in_b = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    assert_eq!((files(a), files(b)), (1, 1));
    assert_eq!(vfs.group_stat(b).unwrap().inodes, 1, "the socket's node");
    // a's file is uncharged from a while the thread charges b.
    p.close(in_a).unwrap();
    assert_eq!(files(a), 0);
    vfs.group_remove(a).unwrap();
    vfs.drop_caches();
    let c = vfs.group_create(0, "c").unwrap();
    assert_eq!(c, a, "the pruned id is reused");
    vfs.group_attach(&p, c).unwrap();
    let in_c = p.pipe2(0).unwrap();
    assert_eq!((files(c), files(b)), (2, 1));
    // Another namespace on this thread charges its own root group.
    let other = Vfs::new();
    let q = other.root_process();
    let before = other.group_stat(0).unwrap().files;
    let in_other = q.eventfd(0, 0).unwrap();
    assert_eq!(other.group_stat(0).unwrap().files, before + 1);
    let again_c = p.eventfd(0, 0).unwrap();
    assert_eq!((files(c), files(b)), (3, 1));
    for fd in [in_b, in_c[0], in_c[1], again_c] {
        p.close(fd).unwrap();
    }
    q.close(in_other).unwrap();
    assert_eq!((files(c), files(b)), (0, 0));
    assert_eq!(other.group_stat(0).unwrap().files, before);
    drop((p, root, q));
    vfs.check_invariants().unwrap();
    other.check_invariants().unwrap();
}

#[test]
fn counters_equal_list_contents_at_quiescence() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    miss(&p, "/d", "n", 500);
    let s = vfs.group_stat(g).unwrap();
    assert_eq!(s.dentries, 500);
    assert_eq!(vfs.group_lru_count(g), 500);
    // Creating some of those names makes their dentries positive: off the
    // lists, still charged to the creating group.
    for i in 0..100 {
        let fd = p
            .open(format!("/d/n{i}").as_bytes(), O_CREAT | O_WRONLY, 0o644)
            .unwrap();
        p.close(fd).unwrap();
    }
    let s = vfs.group_stat(g).unwrap();
    assert_eq!(s.dentries, 500);
    assert_eq!(s.inodes, 100);
    assert_eq!(vfs.group_lru_count(g), 400);
    assert!(vfs.drop_caches() >= 400);
    assert_eq!(vfs.group_lru_count(g), 0);
    let s = vfs.group_stat(g).unwrap();
    assert_eq!(s.dentries, 100);
    assert!(s.reclaimed >= 400);
    drop((p, root));
    vfs.check_invariants().unwrap();
}

#[test]
fn over_limit_reclaims_own_objects_only() {
    let (vfs, root) = setup();
    let a = vfs.group_create(0, "a").unwrap();
    let b = vfs.group_create(0, "b").unwrap();
    let pa = root.fork().unwrap();
    let pb = root.fork().unwrap();
    vfs.group_attach(&pa, a).unwrap();
    vfs.group_attach(&pb, b).unwrap();
    miss(&pb, "/d", "b", 300);
    miss(&pa, "/d", "a", 300);
    assert_eq!(vfs.group_lru_count(b), 300);
    // a may hold 100 dentries: its next lookups reclaim its own.
    vfs.group_set_max(a, 100 * KIND_BYTES[0] as u64).unwrap();
    miss(&pa, "/d", "x", 200);
    let sa = vfs.group_stat(a).unwrap();
    assert!(sa.usage_bytes <= 100 * KIND_BYTES[0], "{sa:?}");
    assert!(sa.reclaimed >= 400, "{sa:?}");
    assert!(sa.limit_reclaims > 0 && sa.limit_failures == 0, "{sa:?}");
    assert_eq!(vfs.group_lru_count(b), 300, "b's dentries untouched");
    assert_eq!(vfs.group_stat(b).unwrap().reclaimed, 0);
    drop((pa, pb, root));
    vfs.check_invariants().unwrap();
}

#[test]
fn limit_fails_only_when_nothing_is_reclaimable() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    let max = 20 * (KIND_BYTES[0] + KIND_BYTES[1]) as u64;
    vfs.group_set_max(g, max).unwrap();
    // Positive tmpfs dentries are pinned: creation stops with ENOMEM.
    let mut made = 0;
    let err = loop {
        match p.mknodat(
            AT_FDCWD,
            format!("/d/f{made}").as_bytes(),
            S_IFREG | 0o644,
            0,
        ) {
            Ok(()) => made += 1,
            Err(e) => break e,
        }
        assert!(made < 1000);
    };
    assert_eq!(err, Errno::ENOMEM);
    assert!((15..=20).contains(&made), "{made}");
    let s = vfs.group_stat(g).unwrap();
    assert!(s.limit_failures >= 1);
    assert!(s.usage_bytes as u64 <= max);
    // Freeing one makes room again.
    p.unlink(b"/d/f0").unwrap();
    p.mknodat(AT_FDCWD, b"/d/again", S_IFREG | 0o644, 0)
        .unwrap();
    // Data beyond the limit is ENOSPC (pages are pinned too).
    // (At the limit, even an open file does not fit.)
    assert_eq!(p.open(b"/d/again", O_WRONLY, 0), Err(Errno::ENOMEM));
    assert_eq!(p.pipe().map(|_| ()), Err(Errno::ENOMEM));
    assert_eq!(p.eventfd(0, 0).map(|_| ()), Err(Errno::ENOMEM));
    vfs.group_set_max(g, u64::MAX).unwrap();
    let fd = p.open(b"/d/again", O_WRONLY, 0).unwrap();
    let used = vfs.group_stat(g).unwrap().usage_bytes as u64;
    vfs.group_set_max(g, used + 2 * 4096).unwrap();
    assert_eq!(p.write(fd, &[1u8; 8192]), Ok(8192));
    // Over the group's max, data fails as memcg does (ENOMEM); ENOSPC is
    // the instance's size limit, not the group's.
    assert_eq!(p.write(fd, &[1u8; 4096]), Err(Errno::ENOMEM));
    p.close(fd).unwrap();
    drop((p, root));
    vfs.check_invariants().unwrap();
}

#[test]
fn long_symlink_page_is_charged_and_released() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    let statfs_used = |p: &vfscale::Process| {
        let s = p.statfs(b"/").unwrap();
        s.f_blocks - s.f_bfree
    };
    let used0 = statfs_used(&p);
    let long = "t".repeat(200);
    p.symlink(long.as_bytes(), b"/d/long").unwrap();
    p.symlink(b"short", b"/d/short").unwrap();
    let s = vfs.group_stat(g).unwrap();
    assert_eq!((s.inodes, s.pages), (2, 1), "{s:?}");
    assert_eq!(statfs_used(&p), used0 + 1, "the instance counts the page");
    p.unlink(b"/d/long").unwrap();
    let s = vfs.group_stat(g).unwrap();
    assert_eq!((s.inodes, s.pages), (1, 0), "{s:?}");
    assert_eq!(statfs_used(&p), used0);
    // At the group's limit the page does not fit: ENOMEM, nothing created.
    let used = vfs.group_stat(g).unwrap().usage_bytes as u64;
    vfs.group_set_max(g, used + (KIND_BYTES[0] + KIND_BYTES[1]) as u64)
        .unwrap();
    assert_eq!(p.symlink(long.as_bytes(), b"/d/long2"), Err(Errno::ENOMEM));
    assert_eq!(p.lstat(b"/d/long2").unwrap_err(), Errno::ENOENT);
    assert_eq!(statfs_used(&p), used0);
    p.symlink(b"fits", b"/d/short2").unwrap();
    p.symlink(long.as_bytes(), b"/d/long3").unwrap_err();
    vfs.group_set_max(g, u64::MAX).unwrap();
    p.symlink(long.as_bytes(), b"/d/long3").unwrap();
    drop((p, root));
    vfs.check_invariants().unwrap();
}

#[test]
fn reparenting_keeps_objects_reachable_and_counted() {
    let (vfs, root) = setup();
    let parent = vfs.group_create(0, "parent").unwrap();
    let child = vfs.group_create(parent, "child").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, child).unwrap();
    miss(&p, "/d", "c", 200);
    p.mknodat(AT_FDCWD, b"/d/kept", S_IFREG | 0o644, 0).unwrap();
    drop(p);
    vfs.group_remove(child).unwrap();
    // The parent's lists hold the child's dentries, its bits are set, its
    // statistics include them.
    assert_eq!(vfs.group_lru_count(parent), 200);
    assert_eq!(vfs.group_lru_count(child), 0);
    assert!(vfs.group_is_populated(parent));
    // The invariant checker (lists, flags, counts, bits) with every
    // process gone.
    drop(root);
    vfs.check_invariants().unwrap();
    let root = vfs.root_process();
    let s = vfs.group_stat(parent).unwrap();
    assert_eq!((s.dentries, s.inodes), (201, 1));
    assert_eq!(vfs.drop_caches(), 200);
    let s = vfs.group_stat(parent).unwrap();
    assert_eq!((s.dentries, s.inodes), (1, 1));
    root.unlink(b"/d/kept").unwrap();
    let s = vfs.group_stat(parent).unwrap();
    assert_eq!((s.dentries, s.inodes, s.usage_bytes), (0, 0, 0));
}

#[test]
fn bits_clear_after_empty_scan_and_set_on_first_add() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    assert!(!vfs.group_is_populated(g));
    miss(&p, "/d", "n", 3);
    assert!(vfs.group_is_populated(g));
    assert_eq!(vfs.drop_caches(), 3);
    // The pass that emptied the list left the bits; the next clears them.
    vfs.drop_caches();
    assert!(!vfs.group_is_populated(g));
    miss(&p, "/d", "m", 1);
    assert!(vfs.group_is_populated(g));
    drop((p, root));
    vfs.check_invariants().unwrap();
}

#[test]
fn bits_stay_correct_under_concurrent_adds_and_scans() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // The adders start once the scanner has made a pass, so the two
    // overlap even when the scheduler starts the scanner late (a loaded
    // 2-vCPU machine once let the adders finish before its first pass).
    let scanned = Arc::new(AtomicUsize::new(0));
    let mut adders = Vec::new();
    for t in 0..2 {
        let p = root.fork().unwrap();
        vfs.group_attach(&p, g).unwrap();
        let scanned = scanned.clone();
        adders.push(std::thread::spawn(move || {
            // Relaxed: a start signal; nothing is published through it.
            while scanned.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            for round in 0..300 {
                miss(&p, "/d", &format!("t{t}r{round}_"), 3);
            }
        }));
    }
    let v = vfs.clone();
    let (s, passes) = (stop.clone(), scanned.clone());
    let scanner = std::thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            v.drop_caches();
            passes.fetch_add(1, Ordering::Relaxed);
        }
    });
    for a in adders {
        a.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    scanner.join().unwrap();
    drop(root);
    vfs.check_invariants().unwrap();
    // Quiescent: objects on the lists ⇒ bits set; and they are all found.
    let left = vfs.group_lru_count(g);
    if left > 0 {
        assert!(vfs.group_is_populated(g));
    }
    assert_eq!(vfs.drop_caches(), left);
    assert_eq!(vfs.group_stat(g).unwrap().dentries, 0);
}

#[test]
fn memory_pressure_never_fails_while_reclaimable() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    vfs.group_set_max(g, 64 * 1024).unwrap();
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let p = root.fork().unwrap();
            vfs.group_attach(&p, g).unwrap();
            std::thread::spawn(move || miss(&p, "/d", &format!("t{t}_"), 4000))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = vfs.group_stat(g).unwrap();
    assert_eq!(s.limit_failures, 0, "{s:?}");
    assert!(s.reclaimed > 0, "{s:?}");
    drop(root);
    vfs.check_invariants().unwrap();
    assert!(s.usage_bytes <= 64 * 1024 + 3 * KIND_BYTES[0], "{s:?}");
}

/// A shrinker holding a count of objects per group; records its calls.
struct Counting {
    objects: Mutex<Vec<u64>>,
    counts: AtomicU64,
    scanned_groups: Mutex<Vec<GroupId>>,
}

impl Shrinker for Counting {
    fn count(&self, group: GroupId) -> u64 {
        self.counts.fetch_add(1, Ordering::Relaxed);
        self.objects.lock().unwrap()[group as usize]
    }
    fn scan(&self, group: GroupId, nr: u64) -> u64 {
        self.scanned_groups.lock().unwrap().push(group);
        let mut o = self.objects.lock().unwrap();
        let n = o[group as usize].min(nr);
        o[group as usize] -= n;
        n
    }
}

#[test]
fn custom_shrinker_is_called_for_marked_groups_only() {
    let vfs = Vfs::new();
    let groups: Vec<GroupId> = (0..100)
        .map(|i| vfs.group_create(0, &format!("g{i}")).unwrap())
        .collect();
    let s = Arc::new(Counting {
        objects: Mutex::new(vec![0; 101]),
        counts: AtomicU64::new(0),
        scanned_groups: Mutex::new(Vec::new()),
    });
    let id = vfs.register_shrinker(s.clone());
    vfs.drop_caches();
    assert_eq!(
        s.counts.load(Ordering::Relaxed),
        0,
        "no bit set: not called"
    );
    let g = groups[42];
    s.objects.lock().unwrap()[g as usize] = 1000;
    vfs.shrinker_mark(id, g);
    let freed = vfs.drop_caches();
    assert_eq!(freed, 1000);
    assert_eq!(s.objects.lock().unwrap()[g as usize], 0);
    assert!(s.scanned_groups.lock().unwrap().iter().all(|&x| x == g));
    // do_shrink_slab's batches: 128 at a time.
    assert!(s.scanned_groups.lock().unwrap().len() >= 1000 / 128);
    let before = s.counts.load(Ordering::Relaxed);
    vfs.drop_caches();
    vfs.drop_caches();
    // One empty visit clears the bit; then it is not called at all.
    assert!(s.counts.load(Ordering::Relaxed) - before <= 2);
    assert!(!vfs.group_shrinker_bit(g, id));
    // The naive walk calls it for every group.
    let before = s.counts.load(Ordering::Relaxed);
    vfs.drop_caches_naive();
    assert!(s.counts.load(Ordering::Relaxed) - before >= 101);
    vfs.unregister_shrinker(id).unwrap();
    assert_eq!(vfs.unregister_shrinker(id), Err(Errno::ENOENT));
    vfs.check_invariants().unwrap();
}

#[test]
fn idle_groups_with_their_own_mounts_cost_no_visit() {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    for i in 0..50 {
        let g = vfs.group_create(0, &format!("c{i}")).unwrap();
        let p = root.fork().unwrap();
        vfs.group_attach(&p, g).unwrap();
        let dir = format!("/m{i}");
        root.mkdir(dir.as_bytes(), 0o755).unwrap();
        p.mount(b"tmpfs", dir.as_bytes(), b"tmpfs", 0).unwrap();
        p.mknodat(
            AT_FDCWD,
            format!("{dir}/file").as_bytes(),
            S_IFREG | 0o644,
            0,
        )
        .unwrap();
    }
    vfs.drop_caches();
    vfs.drop_caches();
    for i in 1..=50 {
        assert!(!vfs.group_is_populated(i), "group {i} still populated");
    }
    // Each group holds its mount's root and its file.
    assert_eq!(vfs.group_stat(1).unwrap().inodes, 2);
    drop(root);
    vfs.check_invariants().unwrap();
}

#[test]
fn limit_reclaim_is_incremental() {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    miss(&p, "/d", "n", 1000);
    vfs.group_set_max(g, 1000 * KIND_BYTES[0] as u64).unwrap();
    // One more dentry than the limit holds: reclaim starts at a narrow
    // priority and stops once it fits, keeping most of the cache.
    miss(&p, "/d", "extra", 1);
    let s = vfs.group_stat(g).unwrap();
    assert!(s.usage_bytes <= 1000 * KIND_BYTES[0], "{s:?}");
    assert!(s.reclaimed >= 1 && s.reclaimed <= 500, "{s:?}");
    assert_eq!(vfs.group_lru_count(g) as i64, s.dentries);
    drop((p, root));
    vfs.check_invariants().unwrap();
}

/// One call that charges objects, checked at a limit: with nothing
/// reclaimable in the group it fails with ENOMEM (and creates nothing the
/// invariant checker would miss); with reclaimable negative dentries in the
/// group it succeeds by reclaiming them. `prepare` runs unlimited (files to
/// link or rename, mountpoints); `op(p, i)` is the call, `i` 0 then 1.
fn limit_case(
    what: &str,
    prepare: impl Fn(&vfscale::Process),
    op: impl Fn(&vfscale::Process, usize) -> Result<(), Errno>,
) {
    let (vfs, root) = setup();
    let g = vfs.group_create(0, "g").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    prepare(&p);
    let usage = |vfs: &Vfs| vfs.group_stat(g).unwrap().usage_bytes as u64;
    // Exactly at the limit, everything charged pinned: ENOMEM.
    vfs.group_set_max(g, usage(&vfs)).unwrap();
    let before = vfs.group_stat(g).unwrap();
    assert_eq!(op(&p, 0), Err(Errno::ENOMEM), "{what} at the limit");
    let after = vfs.group_stat(g).unwrap();
    assert_eq!(after.limit_failures, before.limit_failures + 1, "{what}");
    assert_eq!(
        after.usage_bytes, before.usage_bytes,
        "{what}: nothing made"
    );
    // Reclaimable objects in the group: the same call reclaims and fits.
    vfs.group_set_max(g, u64::MAX).unwrap();
    miss(&p, "/d", "neg", 40);
    let max = usage(&vfs);
    vfs.group_set_max(g, max).unwrap();
    assert_eq!(op(&p, 1), Ok(()), "{what} with reclaimable objects");
    let s = vfs.group_stat(g).unwrap();
    assert!(
        s.reclaimed > 0 && s.usage_bytes as u64 <= max,
        "{what}: {s:?}"
    );
    assert_eq!(s.limit_failures, before.limit_failures + 1, "{what}");
    drop((p, root));
    vfs.check_invariants()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn link_at_the_limit() {
    limit_case(
        "link",
        |p| p.mknodat(AT_FDCWD, b"/d/f", S_IFREG | 0o644, 0).unwrap(),
        |p, i| p.link(b"/d/f", format!("/d/l{i}").as_bytes()),
    );
}

#[test]
fn rename_whiteout_at_the_limit() {
    limit_case(
        "renameat2(RENAME_WHITEOUT)",
        |p| {
            for i in 0..2 {
                p.mknodat(AT_FDCWD, format!("/d/s{i}").as_bytes(), S_IFREG | 0o644, 0)
                    .unwrap();
            }
        },
        |p, i| {
            let (from, to) = (format!("/d/s{i}"), format!("/d/t{i}"));
            let r = p.renameat2(
                AT_FDCWD,
                from.as_bytes(),
                AT_FDCWD,
                to.as_bytes(),
                RENAME_WHITEOUT,
            );
            if r.is_err() {
                // Nothing moved, no whiteout.
                assert!(p.stat(from.as_bytes()).unwrap().mode & S_IFMT == S_IFREG);
            } else {
                assert_eq!(p.lstat(from.as_bytes()).unwrap().mode & S_IFMT, S_IFCHR);
            }
            r
        },
    );
}

#[test]
fn socket_at_the_limit() {
    limit_case(
        "socket",
        |_| {},
        |p, _| p.socket(AF_UNIX, SOCK_STREAM, 0).map(drop),
    );
}

#[test]
fn socketpair_at_the_limit() {
    limit_case(
        "socketpair",
        |_| {},
        |p, _| p.socketpair(AF_UNIX, SOCK_STREAM, 0).map(drop),
    );
}

#[test]
fn pipe_at_the_limit() {
    limit_case("pipe", |_| {}, |p, _| p.pipe().map(drop));
}

#[test]
fn eventfd_at_the_limit() {
    limit_case("eventfd", |_| {}, |p, _| p.eventfd(0, 0).map(drop));
}

#[test]
fn memfd_at_the_limit() {
    limit_case(
        "memfd_create",
        |_| {},
        |p, _| p.memfd_create(b"m", 0).map(drop),
    );
}

#[test]
fn mount_root_at_the_limit() {
    limit_case(
        "mount tmpfs",
        |p| {
            for i in 0..2 {
                p.mkdir(format!("/d/m{i}").as_bytes(), 0o755).unwrap();
            }
        },
        |p, i| p.mount(b"tmpfs", format!("/d/m{i}").as_bytes(), b"tmpfs", 0),
    );
}

#[test]
fn open_create_at_the_limit() {
    limit_case(
        "open(O_CREAT)",
        |_| {},
        |p, i| {
            p.open(format!("/d/c{i}").as_bytes(), O_CREAT | O_WRONLY, 0o644)
                .map(drop)
        },
    );
}

#[test]
fn removed_groups_are_pruned_and_memory_stays_bounded() {
    let (vfs, root) = setup();
    // 100,000 groups created and removed, every 1,000th after one of its
    // processes cached a negative dentry (charged to it, so its tombstone
    // stays until reclaim frees the dentry).
    for i in 0..100_000 {
        let g = vfs.group_create(0, "g").unwrap();
        if i % 1000 == 0 {
            let p = root.fork().unwrap();
            vfs.group_attach(&p, g).unwrap();
            miss(&p, "/d", &format!("r{i}_"), 1);
        }
        vfs.group_remove(g).unwrap();
        let (tombstones, ids) = vfs.group_table_size();
        assert!(tombstones <= 100 && ids <= 102, "{i}: {tombstones} {ids}");
    }
    let (tombstones, _) = vfs.group_table_size();
    assert_eq!(
        tombstones, 100,
        "each holds its dentry (on the root's list)"
    );
    assert_eq!(vfs.group_lru_count(0), 100);
    assert_eq!(vfs.drop_caches(), 100);
    assert_eq!(
        vfs.group_table_size().0,
        0,
        "pruned once their charges went"
    );
    // A tombstone holding a pinned tmpfs file stays until the file goes.
    let inodes_before = vfs.group_stat(0).unwrap().inodes;
    let g = vfs.group_create(0, "pinned").unwrap();
    let p = root.fork().unwrap();
    vfs.group_attach(&p, g).unwrap();
    p.mknodat(AT_FDCWD, b"/d/pinned", S_IFREG | 0o644, 0)
        .unwrap();
    drop(p);
    vfs.group_remove(g).unwrap();
    vfs.drop_caches();
    assert_eq!(vfs.group_table_size().0, 1);
    assert_eq!(
        vfs.group_stat(0).unwrap().inodes,
        inodes_before + 1,
        "the root's statistics include its removed child's file"
    );
    drop(root);
    vfs.check_invariants().unwrap();
    let root = vfs.root_process();
    root.unlink(b"/d/pinned").unwrap();
    // Its last charge is gone; the next sweep (drop_caches, or a creation
    // once tombstones piled up) prunes it, and its id is the next reused.
    vfs.drop_caches();
    assert_eq!(vfs.group_table_size().0, 0);
    let again = vfs.group_create(0, "again").unwrap();
    assert_eq!(again, g, "the pruned id is reused");
    drop(root);
    vfs.check_invariants().unwrap();
}

#[test]
fn tombstone_with_an_embedders_objects_waits_for_its_shrinker() {
    let vfs = Vfs::new();
    let g = vfs.group_create(0, "g").unwrap();
    let s = Arc::new(Counting {
        objects: Mutex::new(vec![0; 8]),
        counts: AtomicU64::new(0),
        scanned_groups: Mutex::new(Vec::new()),
    });
    let id = vfs.register_shrinker(s.clone());
    s.objects.lock().unwrap()[g as usize] = 10;
    vfs.shrinker_mark(id, g);
    // Nothing of ours is charged to g, but the embedder still has objects
    // of it: the tombstone (and its id) must stay.
    vfs.group_remove(g).unwrap();
    assert_eq!(vfs.group_table_size().0, 1);
    assert!(vfs.group_shrinker_bit(0, id), "the parent inherits the bit");
    // Reclaim frees them (the removed group is still visited) and clears
    // its bit; the sweep after it prunes the tombstone.
    vfs.drop_caches();
    vfs.drop_caches();
    assert_eq!(s.objects.lock().unwrap()[g as usize], 0);
    assert_eq!(vfs.group_table_size().0, 0);
    assert_eq!(vfs.group_create(0, "h").unwrap(), g, "its id is reused");
    vfs.unregister_shrinker(id).unwrap();
    vfs.check_invariants().unwrap();
}

#[test]
fn open_by_handle_at_the_limit() {
    let handle = std::cell::RefCell::new(None);
    limit_case(
        "open_by_handle_at",
        |p| {
            p.mknodat(AT_FDCWD, b"/d/h", S_IFREG | 0o644, 0).unwrap();
            let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
            p.name_to_handle_at(AT_FDCWD, b"/d/h", &mut h, 0).unwrap();
            *handle.borrow_mut() = Some(h);
        },
        |p, _| {
            let h = handle.borrow();
            p.open_by_handle_at(AT_FDCWD, h.as_ref().unwrap(), O_RDONLY)
                .map(drop)
        },
    );
}

/// Threads in small-limited groups race every charging call (creates,
/// links, long symlinks, writes, renames with whiteouts, pipes, sockets,
/// misses) on shared names for a bounded time. Any call may fail with
/// ENOMEM (pinned tmpfs names fill a group) or the usual races' errnos;
/// afterwards the group totals must equal the objects, and after removing
/// every name every counter is zero: no error path leaks or double
/// uncharges a charge.
#[test]
fn limited_groups_race_every_charging_call() {
    let (vfs, root) = setup();
    let parent = vfs.group_create(0, "parent").unwrap();
    let groups = [
        vfs.group_create(parent, "a").unwrap(),
        vfs.group_create(parent, "b").unwrap(),
        vfs.group_create(0, "c").unwrap(),
    ];
    let entry = (KIND_BYTES[0] + KIND_BYTES[1]) as u64;
    vfs.group_set_max(parent, 60 * entry).unwrap();
    vfs.group_set_max(groups[0], 30 * entry).unwrap();
    vfs.group_set_max(groups[2], 16 * 4096 + 20 * entry)
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(600);
    let long = "l".repeat(200);
    std::thread::scope(|s| {
        for (t, &group) in groups.iter().enumerate() {
            let p = root.fork().unwrap();
            vfs.group_attach(&p, group).unwrap();
            let long = long.as_str();
            s.spawn(move || {
                let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1));
                while std::time::Instant::now() < deadline {
                    let a = format!("/d/n{}", rnd(24));
                    let b = format!("/d/n{}", rnd(24));
                    let r = match rnd(11) {
                        0 => p.mknodat(AT_FDCWD, a.as_bytes(), S_IFREG | 0o644, 0),
                        1 => p.unlink(a.as_bytes()),
                        2 => p.link(a.as_bytes(), b.as_bytes()),
                        3 => p.symlink(long.as_bytes(), a.as_bytes()),
                        4 => p
                            .open(a.as_bytes(), O_CREAT | O_WRONLY, 0o644)
                            .and_then(|fd| {
                                let r = p.write(fd, &[1u8; 9000]).map(drop);
                                p.close(fd).unwrap();
                                r
                            }),
                        5 => p.renameat2(
                            AT_FDCWD,
                            a.as_bytes(),
                            AT_FDCWD,
                            b.as_bytes(),
                            RENAME_WHITEOUT,
                        ),
                        6 => p.pipe().map(|[r, w]| {
                            p.close(r).unwrap();
                            p.close(w).unwrap();
                        }),
                        7 => p.socketpair(AF_UNIX, SOCK_STREAM, 0).map(|[x, y]| {
                            p.close(x).unwrap();
                            p.close(y).unwrap();
                        }),
                        8 => p.memfd_create(b"m", 0).and_then(|fd| {
                            let r = p.write(fd, &[2u8; 5000]).map(drop);
                            p.close(fd).unwrap();
                            r
                        }),
                        9 => p.truncate(a.as_bytes(), 0),
                        _ => p
                            .stat(format!("/d/miss{t}_{}", rnd(1000)).as_bytes())
                            .map(drop),
                    };
                    if let Err(e) = r {
                        assert!(
                            [
                                Errno::ENOMEM,
                                Errno::ENOENT,
                                Errno::EEXIST,
                                Errno::EISDIR,
                                Errno::ENOTDIR,
                                Errno::EINVAL,
                                // Opening a whiteout (a 0:0 device).
                                Errno::ENXIO,
                            ]
                            .contains(&e),
                            "thread {t}: {e:?}"
                        );
                    }
                }
            });
        }
    });
    for g in groups.iter().chain([&parent]) {
        let s = vfs.group_stat(*g).unwrap();
        assert_eq!(s.files, 0, "{s:?}");
    }
    drop(root);
    vfs.check_invariants().unwrap();
    // Remove every name: each group's counters return to zero.
    let root = vfs.root_process();
    for e in root.read_dir(b"/d").unwrap() {
        if e.name != b"." && e.name != b".." {
            let mut path = b"/d/".to_vec();
            path.extend_from_slice(&e.name);
            root.unlink(&path).unwrap();
        }
    }
    drop(root);
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
    for g in groups.iter().chain([&parent]) {
        let s = vfs.group_stat(*g).unwrap();
        assert_eq!(
            (s.dentries, s.inodes, s.files, s.pages, s.usage_bytes),
            (0, 0, 0, 0, 0),
            "{s:?}"
        );
    }
}
