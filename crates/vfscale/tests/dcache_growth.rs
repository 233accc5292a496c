//! The dentry hash table doubles as names are added and shrinks at
//! drop_caches (`dcache/hash.rs`): through the public API, every name
//! stays reachable across the resizes, cached misses stay misses, and
//! lookups that race the resizes (stat, open, negative lookups from other
//! threads) never fail or succeed wrongly.

use std::sync::atomic::{AtomicBool, Ordering};
use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

fn name(dir: &str, i: usize) -> Vec<u8> {
    format!("{dir}/f{i:05}").into_bytes()
}

fn create(p: &vfscale::Process, path: &[u8]) {
    let fd = p
        .open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644)
        .unwrap_or_else(|e| panic!("create {:?}: {e:?}", String::from_utf8_lossy(path)));
    p.close(fd).unwrap();
}

/// Makes `/pin` and `n` files in it, for `look_up_pinned_until`.
fn make_pinned(p: &vfscale::Process, n: usize) {
    p.mkdir(b"/pin", 0o755).unwrap();
    for i in 0..n {
        create(p, &name("/pin", i));
    }
}

/// Thread `t` of two: stats and opens its half of the `pinned` files in
/// `/pin` and misses a name beside each, until `done` (at least one
/// round): every answer must be right, whatever resize runs meanwhile.
fn look_up_pinned_until(vfs: &Vfs, t: usize, pinned: usize, done: &AtomicBool) {
    let p = vfs.root_process();
    let mut rounds = 0u64;
    // Relaxed: a stop flag; the caller's join orders the rest.
    while !done.load(Ordering::Relaxed) || rounds == 0 {
        for i in (t..pinned).step_by(2) {
            let path = name("/pin", i);
            let st = p
                .stat(&path)
                .unwrap_or_else(|e| panic!("stat of a pinned file failed during a resize: {e:?}"));
            assert_eq!(st.mode & S_IFMT, S_IFREG);
            let fd = p.open(&path, O_RDONLY, 0).unwrap();
            p.close(fd).unwrap();
            assert_eq!(
                p.stat(format!("/pin/none{i}").as_bytes()).unwrap_err(),
                Errno::ENOENT
            );
        }
        rounds += 1;
    }
}

/// 5,000 names grow a fresh table from its initial 1,024 buckets to at
/// least twice as many buckets as names (within one doubling: a shard of
/// the count may cross its threshold early), and then every name, and
/// only those, is found; removing them keeps the size.
#[test]
fn the_table_grows_with_the_names_and_keeps_them() {
    const N: usize = 5_000;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let initial = vfs.dcache_buckets();
    assert_eq!(initial, 1 << 10, "the documented initial size");
    p.mkdir(b"/d", 0o755).unwrap();
    // A cached miss made while the table is small must stay a miss.
    assert_eq!(p.stat(b"/d/absent").unwrap_err(), Errno::ENOENT);
    for i in 0..N {
        create(&p, &name("/d", i));
    }
    let grown = vfs.dcache_buckets();
    assert!(
        grown >= N && grown <= 4 * N.next_power_of_two(),
        "{grown} buckets for {N} names"
    );
    for i in 0..N {
        let st = p.stat(&name("/d", i)).unwrap();
        assert_eq!(st.mode & S_IFMT, S_IFREG);
    }
    assert_eq!(p.stat(b"/d/absent").unwrap_err(), Errno::ENOENT);
    assert_eq!(p.stat(b"/d/f99999").unwrap_err(), Errno::ENOENT);
    for i in 0..N {
        p.unlink(&name("/d", i)).unwrap();
    }
    assert_eq!(
        vfs.dcache_buckets(),
        grown,
        "removals alone never shrink it"
    );
    assert_eq!(p.stat(&name("/d", 7)).unwrap_err(), Errno::ENOENT);
    drop(p);
    vfs.check_invariants().unwrap();
}

/// drop_caches shrinks the table to what the names left in it need: after
/// 20,000 creates and all but 100 unlinks it is back at its initial size,
/// every name left is found and every removed one is not (also through a
/// negative entry a lookup cached before the shrink); the names that come
/// back grow it again. With the names still cached (in use), it keeps its
/// size.
#[test]
fn drop_caches_shrinks_the_table_to_the_names_left() {
    const N: usize = 20_000;
    const LEFT: usize = 100;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let initial = vfs.dcache_buckets();
    p.mkdir(b"/d", 0o755).unwrap();
    for i in 0..N {
        create(&p, &name("/d", i));
    }
    let grown = vfs.dcache_buckets();
    assert!(grown >= 16 * initial, "{N} names in {grown} buckets");
    vfs.drop_caches();
    assert_eq!(
        vfs.dcache_buckets(),
        grown,
        "tmpfs names stay cached: the table keeps its size"
    );
    for i in LEFT..N {
        p.unlink(&name("/d", i)).unwrap();
    }
    assert_eq!(p.stat(&name("/d", N - 1)).unwrap_err(), Errno::ENOENT);
    vfs.drop_caches();
    assert_eq!(vfs.dcache_buckets(), initial, "back to the initial size");
    for i in 0..LEFT {
        let st = p.stat(&name("/d", i)).unwrap();
        assert_eq!(st.mode & S_IFMT, S_IFREG);
    }
    for i in [LEFT, N / 2, N - 1] {
        assert_eq!(p.stat(&name("/d", i)).unwrap_err(), Errno::ENOENT);
    }
    for i in LEFT..N {
        create(&p, &name("/d", i));
    }
    assert!(vfs.dcache_buckets() >= grown / 4, "the names grow it again");
    for i in 0..N {
        p.stat(&name("/d", i)).unwrap();
    }
    drop(p);
    vfs.check_invariants().unwrap();
}

/// Two threads stat, open and miss a fixed set of names while a third
/// creates and unlinks 5,000 names and runs drop_caches after each round,
/// so the table grows and shrinks under the lookups: every answer is
/// right throughout, and the invariants hold after.
#[test]
fn lookups_racing_shrinks_always_answer_right() {
    const ROUNDS: usize = 6;
    const CHURN: usize = 5_000;
    const PINNED: usize = 64;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/churn", 0o755).unwrap();
    make_pinned(&p, PINNED);
    let initial = vfs.dcache_buckets();
    let done = AtomicBool::new(false);
    let mut shrinks = 0;
    std::thread::scope(|s| {
        let (vfs, done) = (&vfs, &done);
        for t in 0..2usize {
            s.spawn(move || look_up_pinned_until(vfs, t, PINNED, done));
        }
        let churner = vfs.root_process();
        for _ in 0..ROUNDS {
            for i in 0..CHURN {
                create(&churner, &name("/churn", i));
            }
            let grown = vfs.dcache_buckets();
            for i in 0..CHURN {
                churner.unlink(&name("/churn", i)).unwrap();
            }
            vfs.drop_caches();
            if vfs.dcache_buckets() < grown {
                shrinks += 1;
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        shrinks, ROUNDS,
        "every round's drop_caches shrank the table"
    );
    assert_eq!(vfs.dcache_buckets(), initial);
    for i in 0..PINNED {
        p.stat(&name("/pin", i)).unwrap();
    }
    drop(p);
    vfs.check_invariants().unwrap();
}

/// One thread creates 20,000 names (several doublings) while two others
/// stat and open a fixed set of files and look up names that do not exist:
/// a lookup that races a resize may take the slow path, but its answer is
/// always right. Afterwards every name is there and the invariants hold.
#[test]
fn lookups_racing_resizes_always_answer_right() {
    const N: usize = 20_000;
    const PINNED: usize = 64;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    p.mkdir(b"/big", 0o755).unwrap();
    make_pinned(&p, PINNED);
    let before = vfs.dcache_buckets();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (vfs, done) = (&vfs, &done);
        for t in 0..2usize {
            s.spawn(move || look_up_pinned_until(vfs, t, PINNED, done));
        }
        let creator = vfs.root_process();
        for i in 0..N {
            create(&creator, &name("/big", i));
        }
        done.store(true, Ordering::Relaxed);
    });
    assert!(
        vfs.dcache_buckets() >= 8 * before,
        "{N} names grew the table only from {before} to {} buckets",
        vfs.dcache_buckets()
    );
    for i in 0..N {
        p.stat(&name("/big", i)).unwrap();
    }
    let listed = {
        let fd = p.open(b"/big", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut n = 0;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let got = p.getdents64(fd, &mut buf).unwrap();
            if got == 0 {
                break;
            }
            n += parse_dirents64(&buf[..got]).len();
        }
        p.close(fd).unwrap();
        n
    };
    assert_eq!(listed, N + 2, "every name listed once, with . and ..");
    drop(p);
    vfs.check_invariants().unwrap();
}

/// An out-of-range growth cap is a cap of 2^32, not a panic: the namespace
/// works and its table grows as usual; a cap below the initial size makes
/// a table that never grows.
#[test]
fn out_of_range_table_sizes_are_clamped() {
    let config = |hash_bits, hash_max_bits| vfscale::VfsConfig {
        hash_bits,
        hash_max_bits,
        ..vfscale::VfsConfig::default()
    };
    let vfs = Vfs::with_config(config(4, 99));
    let p = vfs.root_process();
    for i in 0..200 {
        create(&p, &name("", i));
    }
    assert!(
        vfs.dcache_buckets() > 16,
        "{} buckets",
        vfs.dcache_buckets()
    );
    let vfs = Vfs::with_config(config(6, 2));
    let p = vfs.root_process();
    for i in 0..200 {
        create(&p, &name("", i));
    }
    assert_eq!(
        vfs.dcache_buckets(),
        64,
        "a cap below the start never grows"
    );
    p.stat(&name("", 199)).unwrap();
}
