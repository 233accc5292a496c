//! Loom models of the `sync` protocols: every interleaving and every
//! weak-memory outcome loom can produce, within `LOOM_MAX_PREEMPTIONS`.
//! Run with `scripts/loom.sh`.
//!
//! Data that the protocols publish live in `loom::cell::UnsafeCell`s: loom
//! reports any access to them that is not ordered by happens-before, which
//! is how these models check the orderings, not only the outcomes. Harness
//! flags use Relaxed on purpose, so they add no synchronisation that could
//! hide a missing ordering in the code under test. Each model also asserts
//! the set of outcomes it saw across executions, so a model that loom
//! stopped exploring (see [`Ticks`]) fails instead of passing vacuously.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering::*};
use loom::sync::Arc;
use loom::thread;
use std::collections::HashSet;
use std::hash::Hash;
use vfscale::dcache::hash::{Bucket, ChainNode, ChainTable, GrowFrom, RetiredBuckets, TableNode};
use vfscale::sync::{RefCount, SeqCount};

/// Runs `model` under loom and returns the distinct outcomes it produced.
fn outcomes<T, F>(model: F) -> HashSet<T>
where
    T: Eq + Hash + Send + 'static,
    F: Fn() -> T + Sync + Send + 'static,
{
    outcomes_in(loom::model::Builder::new(), model)
}

/// The limits of a three-thread model whose threads spin on each other:
/// two preemptions (three take hours) and room for the spins' branches.
fn spinning_three_threads() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.preemption_bound = Some(2);
    builder
}

/// `outcomes` with `builder`'s limits (a model whose threads wait for each
/// other in spin loops takes more branches than loom's default allows).
fn outcomes_in<T, F>(builder: loom::model::Builder, model: F) -> HashSet<T>
where
    T: Eq + Hash + Send + 'static,
    F: Fn() -> T + Sync + Send + 'static,
{
    let seen = std::sync::Arc::new(std::sync::Mutex::new(HashSet::new()));
    let sink = std::sync::Arc::clone(&seen);
    builder.check(move || {
        let outcome = model();
        sink.lock().unwrap().insert(outcome);
    });
    let set = std::mem::take(&mut *seen.lock().unwrap());
    set
}

// ---------------------------------------------------------------- refcount

/// A refcounted object whose teardown writes its payload.
struct Obj {
    rc: RefCount,
    payload: UnsafeCell<u64>,
    freed: AtomicBool,
    kills: AtomicUsize,
}

// SAFETY: `payload` is read by reference holders and written only by the
// `try_kill` winner; loom checks that those accesses are ordered.
unsafe impl Sync for Obj {}

impl Obj {
    fn new(count: u32) -> Obj {
        Obj {
            rc: RefCount::new(count),
            payload: UnsafeCell::new(7),
            freed: AtomicBool::new(false),
            kills: AtomicUsize::new(0),
        }
    }

    /// A holder's access to the object.
    fn use_it(&self) {
        assert!(
            !self.freed.load(Relaxed),
            "a reference holder saw a freed object"
        );
        // SAFETY: we hold a reference, so no teardown runs concurrently
        // (loom reports it if one does).
        let v = self.payload.with(|p| unsafe { *p });
        assert_eq!(v, 7, "a reference holder saw a torn-down payload");
    }

    /// Drops a reference; the last put tries to kill and tears down.
    fn release(&self) {
        if self.rc.put() && self.rc.try_kill() {
            // SAFETY: the kill winner is the only accessor from now on.
            self.payload.with_mut(|p| unsafe { *p = 0xDEAD });
            assert!(!self.freed.swap(true, Relaxed), "double free");
            self.kills.fetch_add(1, Relaxed);
        }
    }

    /// Returns whether the get succeeded.
    fn try_get_and_use(&self) -> bool {
        if self.rc.get() {
            self.use_it();
            self.release();
            true
        } else {
            assert!(self.rc.is_dead(), "get failed on a live object");
            false
        }
    }

    fn check_end(&self) {
        assert_eq!(self.kills.load(Relaxed), 1, "exactly one kill");
        assert!(self.freed.load(Relaxed));
        assert!(self.rc.is_dead());
        assert!(!self.rc.get(), "a killed object stays dead");
    }
}

/// The owner drops the last reference while another thread takes one.
#[test]
fn refcount_last_put_vs_get() {
    let seen = outcomes(|| {
        let obj = Arc::new(Obj::new(1));
        let o = Arc::clone(&obj);
        let owner = thread::spawn(move || {
            o.use_it();
            o.release();
        });
        let o = Arc::clone(&obj);
        let getter = thread::spawn(move || o.try_get_and_use());
        owner.join().unwrap();
        let got = getter.join().unwrap();
        obj.check_end();
        got
    });
    assert_eq!(seen, HashSet::from([true, false]));
}

/// Two getters race with the owner's last put.
#[test]
fn refcount_last_put_vs_two_gets() {
    let seen = outcomes(|| {
        let obj = Arc::new(Obj::new(1));
        let o = Arc::clone(&obj);
        let owner = thread::spawn(move || {
            o.use_it();
            o.release();
        });
        let getters: Vec<_> = (0..2)
            .map(|_| {
                let o = Arc::clone(&obj);
                thread::spawn(move || o.try_get_and_use())
            })
            .collect();
        owner.join().unwrap();
        let got: Vec<bool> = getters.into_iter().map(|t| t.join().unwrap()).collect();
        obj.check_end();
        (got[0], got[1])
    });
    assert_eq!(seen.len(), 4, "every success/failure combination: {seen:?}");
}

/// A cached object at zero: reclaim tries to kill it while a lookup
/// revives it.
#[test]
fn refcount_reclaim_vs_revive() {
    let seen = outcomes(|| {
        let obj = Arc::new(Obj::new(0));
        let o = Arc::clone(&obj);
        let reclaim = thread::spawn(move || {
            if o.rc.try_kill() {
                // SAFETY: the kill winner is the only accessor from now on.
                o.payload.with_mut(|p| unsafe { *p = 0xDEAD });
                assert!(!o.freed.swap(true, Relaxed), "double free");
                o.kills.fetch_add(1, Relaxed);
            }
        });
        let o = Arc::clone(&obj);
        let lookup = thread::spawn(move || o.try_get_and_use());
        reclaim.join().unwrap();
        let revived = lookup.join().unwrap();
        obj.check_end();
        revived
    });
    assert_eq!(seen, HashSet::from([true, false]));
}

/// The passthrough identity map (`fs/passthrough` `ids`, `share` and
/// `evict`): a lookup shares a live inode found in the map, taking its
/// reference with `get` under the map's lock, while the inode's last
/// holder puts it; the last put kills it and `evict` removes its entry
/// under the map's lock, after which the core frees it. Whatever the
/// interleaving: a shared inode is never freed while the lookup uses it,
/// a killed one is not shared (the lookup makes a fresh one and takes the
/// entry over), `evict` removes only its own entry, and an inode the map
/// still names is not freed (the lookup reads its count). With the entry
/// removed after the free, loom finds the lookup reading a freed inode.
#[test]
fn identity_map_share_vs_last_put() {
    let seen = outcomes(|| {
        let old = Arc::new(Obj::new(1));
        // The map's entry: 1 names the old inode, 2 a fresh one.
        let map = Arc::new(loom::sync::Mutex::new(1u8));
        let evict = |o: &Obj, map: &loom::sync::Mutex<u8>| {
            // The core's free: evict (own entry only), then the free.
            {
                let mut entry = map.lock().unwrap();
                if *entry == 1 {
                    *entry = 0;
                }
            }
            // SAFETY: the kill winner is the only accessor from now on.
            o.payload.with_mut(|p| unsafe { *p = 0xDEAD });
            assert!(!o.freed.swap(true, Relaxed), "double free");
            o.kills.fetch_add(1, Relaxed);
        };
        let (o, m) = (Arc::clone(&old), Arc::clone(&map));
        let holder = thread::spawn(move || {
            if o.rc.put() && o.rc.try_kill() {
                evict(&o, &m);
            }
        });
        // The lookup.
        let shared = {
            let mut entry = map.lock().unwrap();
            if *entry == 1 && {
                assert!(!old.freed.load(Relaxed), "the map led to a freed inode");
                old.rc.get()
            } {
                true
            } else {
                // A fresh inode takes the entry over.
                *entry = 2;
                false
            }
        };
        if shared {
            old.use_it();
            if old.rc.put() && old.rc.try_kill() {
                evict(&old, &map);
            }
        }
        holder.join().unwrap();
        old.check_end();
        let entry = *map.lock().unwrap();
        assert!(entry != 1, "a freed inode left in the map");
        (shared, entry)
    });
    assert!(
        seen.contains(&(true, 0)),
        "shared, then freed by its last user"
    );
    assert!(
        seen.contains(&(false, 2)),
        "dead at the lookup: a fresh inode"
    );
}

// -------------------------------------------------------------- fs contexts

/// pivot_root's chroot_fs_refs against a context's last user
/// (process/fs_context.rs): the swap happens under the context's lock
/// only while it has a user, and the last user reads root under that lock
/// after its decrement. Each root reference is put exactly once: the old
/// one by the swap or by the last user, the new one by the last user when
/// it got it. With the user's read outside the lock, loom finds the new
/// reference leaked (a swap after the read).
#[test]
fn fs_context_last_put_vs_pivot_swap() {
    let seen = outcomes(|| {
        // The context: one user, root 1 (the old root), written under
        // its lock (readers outside it use the seqcount).
        let users = Arc::new(AtomicUsize::new(1));
        let lock = Arc::new(loom::sync::Mutex::new(()));
        let root = Arc::new(AtomicU32::new(1));
        // References held by contexts on the old (1) and new (2) roots.
        let refs = Arc::new([AtomicUsize::new(1), AtomicUsize::new(0)]);
        let put = |refs: &[AtomicUsize; 2], r: u32| refs[r as usize - 1].fetch_sub(1, Relaxed);
        let (u, l, ro, rf) = (
            Arc::clone(&users),
            Arc::clone(&lock),
            Arc::clone(&root),
            Arc::clone(&refs),
        );
        let last_user = thread::spawn(move || {
            if u.fetch_sub(1, AcqRel) == 1 {
                let r = {
                    let _l = l.lock().unwrap();
                    ro.load(Relaxed)
                };
                put(&rf, r);
            }
        });
        // chroot_fs_refs, on a context it found in the registry.
        let swapped = {
            let _l = lock.lock().unwrap();
            if users.load(Acquire) != 0 && root.load(Relaxed) == 1 {
                refs[1].fetch_add(1, Relaxed);
                root.store(2, Relaxed);
                true
            } else {
                false
            }
        };
        if swapped {
            put(&refs, 1);
        }
        last_user.join().unwrap();
        assert_eq!(refs[0].load(Relaxed), 0, "the old root's reference");
        assert_eq!(refs[1].load(Relaxed), 0, "the new root's reference");
        swapped
    });
    assert_eq!(seen, HashSet::from([true, false]));
}

// --------------------------------------------------------------- in-flight

/// A backend rename (sync/in_flight.rs): the host's rename, then the
/// backend's recorded path, inside `enter`. A reader that reads the path
/// and finds nothing on the host there must be told to look again: a
/// failure it accepts is never one the rename caused.
#[test]
fn in_flight_reader_sees_a_move() {
    use vfscale::sync::InFlight;
    let seen = outcomes(|| {
        let renames = Arc::new(InFlight::new());
        // Where the file is on the host, and where vfscale records it (the
        // backend's node, under its shard mutex).
        let host = Arc::new(AtomicU32::new(0));
        let recorded = Arc::new(loom::sync::Mutex::new(0u32));
        let (r, h, rec) = (
            Arc::clone(&renames),
            Arc::clone(&host),
            Arc::clone(&recorded),
        );
        let renamer = thread::spawn(move || {
            let _renaming = r.enter();
            // The host is the kernel: its calls are ordered (SeqCst).
            h.store(1, SeqCst);
            *rec.lock().unwrap() = 1;
        });
        let mut outcome = Vec::new();
        for _ in 0..2 {
            let sample = renames.sample();
            let path = *recorded.lock().unwrap();
            if host.load(SeqCst) == path {
                outcome.push("found");
                break;
            }
            assert!(
                renames.moved_since(sample),
                "a failure the rename caused was accepted"
            );
            outcome.push("again");
        }
        renamer.join().unwrap();
        outcome
    });
    assert!(seen.contains(&vec!["found"]));
    assert!(
        seen.contains(&vec!["again", "found"]),
        "a reader met the move"
    );
}

// ---------------------------------------------------------------- seqcount

/// A writer updates a pair inside write sections; a reader must never
/// accept a pair from two different sections.
#[test]
fn seqcount_no_torn_read() {
    seqcount_no_torn_read_from(SeqCount::read_begin, false);
}

/// The same with `read_begin_even`, which does not wait for an open write
/// section (the stat copy's and the fast walk's): a section begun inside
/// one must fail its retry check (rounding the odd count up instead of
/// down accepts a torn pair: checked when the model was written). The
/// reader yields before trying again, as `read_begin` does while it waits.
#[test]
fn seqcount_even_begin_no_torn_read() {
    seqcount_no_torn_read_from(SeqCount::read_begin_even, true);
}

fn seqcount_no_torn_read_from(read_begin: fn(&SeqCount) -> u32, yield_on_retry: bool) {
    let seen = outcomes(move || {
        let shared = Arc::new((SeqCount::new(), AtomicU32::new(0), AtomicU32::new(0)));
        let s = Arc::clone(&shared);
        let writer = thread::spawn(move || {
            let (seq, a, b) = &*s;
            for v in 1..=2 {
                let _g = seq.write_guard();
                // Relaxed: data under a seqcount (the protocol under test
                // supplies the ordering).
                a.store(v, Relaxed);
                b.store(v, Relaxed);
            }
        });
        let (seq, a, b) = &*shared;
        let accepted = loop {
            let start = read_begin(seq);
            let (x, y) = (a.load(Relaxed), b.load(Relaxed));
            if !seq.read_retry(start) {
                assert_eq!(x, y, "accepted a torn pair");
                break x;
            }
            if yield_on_retry {
                thread::yield_now();
            }
        };
        writer.join().unwrap();
        assert_eq!(seq.raw(), 4);
        accepted
    });
    // Every completed state is a valid answer: before the writer (0),
    // between its sections (1), after both (2). Since the seqcount's
    // writers' lock became a compare-exchange (session 6) loom also reaches
    // the reader that starts after both sections within the preemption
    // bound; before, it saw only {0, 1}.
    assert_eq!(
        seen,
        HashSet::from([0, 1, 2]),
        "the reader accepts each state"
    );
}

/// Two writers that share no other lock update a pair with a
/// read-modify-write inside `write_lock` sections (the inode attribute
/// protocol: the odd count is the writers' lock) while a reader makes one
/// attempt to copy it: no update is lost (with `write_begin` instead of
/// `write_lock` one is: checked when the model was written) and an
/// accepted copy is never torn. The reader does not spin, so that loom's
/// branch budget goes to the writers' race.
#[test]
fn seqcount_write_lock_excludes_writers() {
    let seen = outcomes(|| {
        let shared = Arc::new((SeqCount::new(), AtomicU32::new(0), AtomicU32::new(0)));
        let write = |s: &(SeqCount, AtomicU32, AtomicU32)| {
            let (seq, a, b) = s;
            seq.write_lock();
            // Relaxed: data under the seqcount under test.
            let v = a.load(Relaxed) + 1;
            a.store(v, Relaxed);
            b.store(v, Relaxed);
            seq.write_end();
        };
        let s1 = Arc::clone(&shared);
        let writer = thread::spawn(move || write(&s1));
        let s2 = Arc::clone(&shared);
        let reader = thread::spawn(move || {
            let (seq, a, b) = &*s2;
            let start = seq.read_begin_raw();
            let (x, y) = (a.load(Relaxed), b.load(Relaxed));
            if seq.read_retry(start) {
                None
            } else {
                assert_eq!(x, y, "accepted a torn pair");
                Some(x)
            }
        });
        write(&shared);
        writer.join().unwrap();
        let accepted = reader.join().unwrap();
        let (seq, a, _) = &*shared;
        assert_eq!(a.load(Relaxed), 2, "an update was lost");
        assert_eq!(seq.raw(), 4);
        accepted
    });
    assert!(seen.contains(&None) && seen.contains(&Some(0)) && seen.contains(&Some(2)));
}

// ------------------------------------------------------------- hash chains

/// A node's key, written only at creation.
struct Key(UnsafeCell<u64>);

// SAFETY: the key is never written after creation; loom checks that every
// read happens after the creating write.
unsafe impl Sync for Key {}

struct Node {
    next: AtomicPtr<Node>,
    key: Key,
}

// SAFETY: `next` is the node's own link, used only by the chain code.
unsafe impl ChainNode for Node {
    fn chain_next(&self) -> &AtomicPtr<Node> {
        &self.next
    }
}

// SAFETY: the key never changes.
unsafe impl TableNode for Node {
    fn table_hash(&self) -> u64 {
        self.key()
    }
}

impl Node {
    fn boxed(key: u64) -> *mut Node {
        Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(std::ptr::null_mut()),
            key: Key(UnsafeCell::new(key)),
        }))
    }

    fn key(&self) -> u64 {
        // SAFETY: never written after creation (loom checks the ordering).
        self.key.0.with(|k| unsafe { *k })
    }
}

/// Scheduling points for loom's DPOR. Loom 0.7 drops interleavings when a
/// thread's load precedes its store to a location another thread only reads
/// (tokio-rs/loom#166, #392): a lock's load-then-CAS against a lock-free
/// reader is exactly that, and the chain models ran a single execution.
/// Both sides tick this counter between steps; the ticks conflict, so DPOR
/// explores writer steps at every point of the reader's scan. Relaxed RMWs
/// create no happens-before, so they cannot hide a missing ordering.
#[derive(Default)]
struct Ticks(AtomicUsize);

impl Ticks {
    fn tick(&self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// Scans a bucket lock-free and returns the keys seen, ticking between
/// steps (see [`Ticks`]).
fn scan(bucket: &Bucket<Node>, ticks: &Ticks) -> Vec<u64> {
    ticks.tick();
    // SAFETY: the models free nodes only after every thread has joined.
    let mut chain = unsafe { bucket.iter_lockfree() };
    let mut keys = Vec::new();
    loop {
        ticks.tick();
        let Some(node) = chain.next() else { break };
        keys.push(node.key());
        assert!(keys.len() < 16, "reader looped");
    }
    keys
}

/// Frees every node on the bucket's chain (after all threads joined).
fn free_chain(bucket: &Bucket<Node>) {
    let nodes: Vec<*mut Node> = bucket
        .lock()
        .iter()
        .map(|n| n as *const Node as *mut Node)
        .collect();
    for n in nodes {
        // SAFETY: created by `Node::boxed`, no thread can reach it any more.
        drop(unsafe { Box::from_raw(n) });
    }
}

/// Chain A → B → C. A writer removes B and pushes a new node D (created in
/// the writer) while a reader scans: the reader must see A and C, which are
/// present throughout, and only well-formed nodes.
#[test]
fn chain_reader_vs_remove_and_insert() {
    let seen = outcomes(|| {
        let shared = Arc::new((ChainTable::<Node>::with_bucket_bits(0), Ticks::default()));
        let (a, b, c) = (Node::boxed(1), Node::boxed(2), Node::boxed(3));
        {
            // SAFETY (table accesses in the chain models): the models free
            // nodes and arrays only after every thread has joined.
            let mut g = unsafe { shared.0.bucket(0) }.lock();
            // SAFETY: fresh nodes, freed only after every thread has joined.
            unsafe {
                g.push_front(c);
                g.push_front(b);
                g.push_front(a);
            }
        }
        let sh = Arc::clone(&shared);
        let writer = thread::spawn(move || {
            let (table, ticks) = &*sh;
            let bucket = unsafe { table.bucket(0) };
            ticks.tick();
            {
                let mut g = bucket.lock();
                let b = g.iter().find(|n| n.key() == 2).unwrap() as *const Node;
                assert!(g.remove(b));
            }
            ticks.tick();
            // SAFETY: a fresh node, freed only after every thread has joined.
            unsafe { bucket.lock().push_front(Node::boxed(4)) };
        });
        let (table, ticks) = &*shared;
        let seen = scan(unsafe { table.bucket(0) }, ticks);
        assert!(
            seen.contains(&1) && seen.contains(&3),
            "missed a node: {seen:?}"
        );
        assert!(
            seen.iter().all(|k| (1..=4).contains(k)),
            "garbage: {seen:?}"
        );
        writer.join().unwrap();

        let after: Vec<u64> = unsafe { table.bucket(0) }
            .lock()
            .iter()
            .map(Node::key)
            .collect();
        assert_eq!(after, [4, 1, 3]);
        free_chain(unsafe { table.bucket(0) });
        // SAFETY: `b` was removed and no thread can reach it any more.
        drop(unsafe { Box::from_raw(b) });
        seen
    });
    let want = [vec![1, 2, 3], vec![1, 3], vec![4, 1, 3]];
    assert_eq!(seen, HashSet::from(want));
}

/// A resize of a table made with one bucket and grown by `setup_grows`
/// steps (`resize`: one growth or shrink) while a writer inserts a node
/// and a reader scans lock-free. The insert must land in the new array
/// whether it ran before the resize (then the resize moves it) or after
/// (then the writer, having locked an old bucket, sees the new array and
/// retries); the reader, diverted or not, must reach only initialised
/// nodes and end; afterwards the table has `2^bits_after` buckets and
/// every node is in the bucket its hash maps to, once.
fn resize_under_an_insert_and_a_reader(
    setup_grows: u32,
    resize: fn(&ChainTable<Node>) -> Option<RetiredBuckets<Node>>,
    bits_after: u32,
) {
    let seen = outcomes(move || {
        let shared = Arc::new((ChainTable::<Node>::growing(0, 1), Ticks::default()));
        // SAFETY (table accesses in the models): no bucket lock held where
        // a resize runs; nodes and arrays are freed only after every
        // thread has joined.
        let grown: Vec<_> = (0..setup_grows)
            .filter_map(|g| unsafe { shared.0.grow(GrowFrom(g)) })
            .collect();
        assert_eq!(shared.0.bits(), setup_grows);
        for key in [1, 2] {
            let asked = unsafe { shared.0.lock(key).push_front(Node::boxed(key)) };
            let _ = asked;
        }
        let sh = Arc::clone(&shared);
        let resizer = thread::spawn(move || {
            sh.1.tick();
            resize(&sh.0)
        });
        let sh = Arc::clone(&shared);
        let writer = thread::spawn(move || {
            sh.1.tick();
            let asked = unsafe { sh.0.lock(3).push_front(Node::boxed(3)) };
            let _ = asked;
        });
        let (table, ticks) = &*shared;
        let mut seen = scan(unsafe { table.bucket(1) }, ticks);
        assert!(
            seen.iter().all(|k| (1..=3).contains(k)),
            "garbage: {seen:?}"
        );
        let old = resizer.join().unwrap();
        assert!(old.is_some(), "the only resizer resizes");
        writer.join().unwrap();

        assert_eq!(table.bits(), bits_after);
        let mut placed = Vec::new();
        for (i, b) in unsafe { table.buckets() }.iter().enumerate() {
            for n in b.lock().iter() {
                assert_eq!(table.bucket_index(n.key()), i, "node {} misplaced", n.key());
                placed.push(n.key());
            }
        }
        placed.sort_unstable();
        assert_eq!(placed, [1, 2, 3], "a node lost or duplicated");
        for b in unsafe { table.buckets() } {
            free_chain(b);
        }
        drop((old, grown));
        seen.sort_unstable();
        seen
    });
    // The reader ran before the resize, during it, or after it.
    assert!(seen.len() >= 2, "one outcome only: {seen:?}");
}

/// The table doubles (one bucket → two) under an insert and a reader.
#[test]
fn table_grows_under_an_insert_and_a_reader() {
    // SAFETY: see `resize_under_an_insert_and_a_reader`.
    resize_under_an_insert_and_a_reader(0, |t| unsafe { t.grow(GrowFrom(0)) }, 1);
}

/// The table halves (two buckets → one, `shrink_to`) under an insert and
/// a reader.
#[test]
fn table_shrinks_under_an_insert_and_a_reader() {
    // SAFETY: see `resize_under_an_insert_and_a_reader`.
    resize_under_an_insert_and_a_reader(1, |t| unsafe { t.shrink_to(0) }, 0);
}

/// A node is moved (rename) from chain X to chain Y, whose first node was
/// created by a third thread. A reader standing on the moved node is
/// diverted into Y and must find Y's node fully initialised: this checks
/// the Release store of the moved node's link in `push_front`.
#[test]
fn chain_reader_diverted_by_move() {
    let seen = outcomes(|| {
        let shared = Arc::new((
            Bucket::<Node>::new(),
            Bucket::<Node>::new(),
            Ticks::default(),
        ));
        let moved = Node::boxed(10);
        // SAFETY: a fresh node, freed only after every thread has joined.
        unsafe { shared.0.lock().push_front(moved) };

        let sh = Arc::clone(&shared);
        let creator = thread::spawn(move || {
            sh.2.tick();
            // SAFETY: a fresh node, freed only after every thread has joined.
            unsafe { sh.1.lock().push_front(Node::boxed(20)) };
        });
        let sh = Arc::clone(&shared);
        let mover = thread::spawn(move || {
            let (x, y, ticks) = &*sh;
            ticks.tick();
            let m = x.lock().iter().next().unwrap() as *const Node;
            assert!(x.lock().remove(m));
            ticks.tick();
            // SAFETY: `m` is on no chain now; freed only after the join.
            unsafe { y.lock().push_front(m) };
        });
        let (x, y, ticks) = &*shared;
        let seen = scan(x, ticks);
        assert!(
            matches!(seen[..], [] | [10] | [10, 20]),
            "unexpected: {seen:?}"
        );
        creator.join().unwrap();
        mover.join().unwrap();

        assert!(x.first().is_null());
        let keys: Vec<u64> = y.lock().iter().map(Node::key).collect();
        assert!(keys == [10, 20] || keys == [20, 10], "unexpected: {keys:?}");
        free_chain(y);
        seen
    });
    let want = [vec![], vec![10], vec![10, 20]];
    assert_eq!(seen, HashSet::from(want), "the reader is diverted into Y");
}

// ------------------------------------------------------------------- epoch

/// A reader inside an epoch guard loads the current object and reads it;
/// the reclaimer swaps in a new one, seals the epoch, and "frees" the old
/// one (writes its payload) only if no reader can still hold it. loom
/// reports the free as a data race if it is not ordered after every read
/// that could see the old object; the outcomes show both orders happened.
#[test]
fn epoch_reclaim_waits_for_readers() {
    use vfscale::sync::epoch::Domain;
    let seen = outcomes(|| {
        let domain = Arc::new(Domain::new());
        let objects = Arc::new([UnsafeCell::new(1u32), UnsafeCell::new(2u32)]);
        let current = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (domain, objects, current) = (domain.clone(), objects.clone(), current.clone());
            thread::spawn(move || {
                let record = domain.acquire_record();
                domain.enter(record);
                // Acquire: the object's contents were published with the index.
                let i = current.load(Acquire);
                // SAFETY (model): the read loom checks against the free.
                let v = objects[i].with(|p| unsafe { *p });
                domain.leave(record);
                v
            })
        };
        current.store(1, Release);
        let epoch = domain.seal_epoch();
        let freed = epoch < domain.min_active();
        if freed {
            // The free: a write that must not race with the reader's read.
            objects[0].with_mut(|p| unsafe { *p = 0xdead });
        }
        let v = reader.join().unwrap();
        assert_ne!(v, 0xdead, "read a freed object");
        (v, freed)
    });
    // (1, true): the reader read the old object and left before the scan,
    // which is allowed; loom's race check is what proves the free was
    // ordered after that read. All four orders must have been explored.
    let all = [(1, false), (1, true), (2, false), (2, true)];
    assert_eq!(seen, HashSet::from(all));
}

/// A reader whose record is announced with an old epoch holds back a batch
/// sealed later; once it leaves, the next seal's scan lets the batch go.
#[test]
fn epoch_batches_wait_for_the_oldest_reader() {
    use vfscale::sync::epoch::Domain;
    loom::model(|| {
        let domain = Domain::new();
        let record = domain.acquire_record();
        domain.enter(record);
        let sealed = domain.seal_epoch();
        assert!(
            sealed >= domain.min_active(),
            "an active older reader blocks"
        );
        domain.leave(record);
        let later = domain.seal_epoch();
        assert!(sealed < later);
        assert_eq!(domain.min_active(), u64::MAX, "no reader left");
        domain.release_record(record);
        // A released record is reused, not duplicated.
        let again = domain.acquire_record();
        assert!(std::ptr::eq(again, record));
    });
}

// ------------------------------------------------- mount write access

/// A change through a mount (mount/write.rs) races the switch of the mount
/// to read-only: the switch succeeds only with no unit held, and a unit is
/// never held on a read-only mount. The change writes `data` under its
/// unit; a successful switch then reads it, which loom reports as a race
/// unless the writer's unit was dropped before the switch counted (a
/// change made while the mount was read-only).
#[test]
fn mount_writer_vs_switch_to_read_only() {
    use vfscale::mount::flags::{MountFlags, MNT_READONLY};
    use vfscale::mount::write::Writers;
    let seen = outcomes(|| {
        let flags = Arc::new(MountFlags::new(0));
        let writers = Arc::new(Writers::new());
        let instance_ro = Arc::new(vfscale::sync::atomic::AtomicBool::new(false));
        let data = Arc::new(UnsafeCell::new(0u32));
        let writer = {
            let (flags, writers, data) = (flags.clone(), writers.clone(), data.clone());
            thread::spawn(move || match writers.want(&flags, &instance_ro) {
                Ok(()) => {
                    data.with_mut(|d| unsafe { *d += 1 });
                    writers.drop_one();
                    true
                }
                Err(e) => {
                    assert_eq!(e, vfscale::Errno::EROFS);
                    false
                }
            })
        };
        let switched = writers.make_readonly(&flags, MNT_READONLY).is_ok();
        if switched {
            assert_eq!(flags.get_seqcst(), MNT_READONLY);
            // Frozen: read without the writer's help.
            data.with(|d| unsafe { *d });
        } else {
            assert_eq!(flags.get_seqcst(), 0, "a refused switch leaves the word");
        }
        let wrote = writer.join().unwrap();
        if switched && wrote {
            // The whole change came before the switch.
            assert_eq!(data.with(|d| unsafe { *d }), 1);
        }
        (wrote, switched)
    });
    assert_eq!(
        seen,
        HashSet::from([(true, true), (true, false), (false, true)]),
        "every outcome of the race"
    );
}

// ------------------------------------------------------- sharded refcount

/// A holder takes and drops a reference inside its guard while the owner
/// switches the count to atomic mode: whatever the interleaving, no put
/// reports the last reference early, and afterwards the count is exact
/// (only the base is left, and its put is the last).
#[test]
fn sharded_ref_switch_loses_nothing() {
    use vfscale::sync::epoch::Domain;
    use vfscale::sync::shardref::ShardedRef;
    let seen = outcomes(|| {
        let domain = Arc::new(Domain::new());
        let count = Arc::new(ShardedRef::new(1));
        count.make_sharded();
        let holder = {
            let (domain, count) = (domain.clone(), count.clone());
            thread::spawn(move || {
                let record = domain.acquire_record();
                domain.enter(record);
                assert!(count.get());
                let mode_at_put = count.is_sharded();
                assert!(!count.put(), "a holder's put is never the last");
                domain.leave(record);
                mode_at_put
            })
        };
        let exact = count.make_exact_with(|| domain.synchronize_except(std::ptr::null()));
        let put_sharded = holder.join().unwrap();
        // The holder may still have been between get and put when the
        // count became exact only if the switch waited for it.
        assert!(exact == 1 || exact == 2, "exact count {exact}");
        let left = count.count_at_rest();
        assert_eq!(left, 1, "only the base reference is left");
        assert!(count.put(), "the base's put is the last");
        put_sharded
    });
    assert_eq!(
        seen,
        HashSet::from([true, false]),
        "both modes seen at the put"
    );
}

/// Two owners switch one count to atomic mode at once (two umounts that
/// both read a propagated copy's count, or an umount and a namespace's
/// teardown) while a holder takes a reference. The switches' biases must
/// not stack: two of them once reached the saturated zone, where the
/// holder's get pinned the count forever (api_namespaces.rs's stress saw
/// the leaked mounts). Afterwards the count is exact: the base and the
/// holder's reference.
#[test]
fn sharded_ref_two_switches_and_a_get() {
    use vfscale::sync::epoch::Domain;
    use vfscale::sync::shardref::ShardedRef;
    // The second switcher and the grace period spin while the other
    // thread works: with three threads, two preemptions already take
    // seconds (three, hours). Two are enough for the stacked biases (the
    // old protocol failed here within 0.4 s).
    let seen = outcomes_in(spinning_three_threads(), || {
        let domain = Arc::new(Domain::new());
        // The base and each switcher's reference.
        let count = Arc::new(ShardedRef::new(3));
        count.make_sharded();
        let switcher = {
            let (domain, count) = (domain.clone(), count.clone());
            thread::spawn(move || {
                count.make_exact_with(|| domain.synchronize_except(std::ptr::null()));
                assert!(!count.put(), "the base outlives the switcher");
            })
        };
        let holder = {
            let (domain, count) = (domain.clone(), count.clone());
            thread::spawn(move || {
                let record = domain.acquire_record();
                domain.enter(record);
                assert!(count.get());
                let sharded = count.is_sharded();
                domain.leave(record);
                sharded
            })
        };
        count.make_exact_with(|| domain.synchronize_except(std::ptr::null()));
        assert!(!count.put(), "the base outlives the switcher");
        switcher.join().unwrap();
        let got_sharded = holder.join().unwrap();
        assert_eq!(count.count_at_rest(), 2, "the base and the holder's");
        assert!(!count.is_sharded());
        assert!(!count.put());
        assert!(count.put(), "the base's put is the last");
        got_sharded
    });
    assert_eq!(
        seen,
        HashSet::from([true, false]),
        "the get seen before and after the switches"
    );
}

/// A batch switch (`make_exact_all`: an umount's or a namespace
/// teardown's mounts, one grace period for all) while a holder takes and
/// drops a reference on one of the counts and another thread switches the
/// other alone: every count ends exact, the holder's put never the last,
/// and no interleaving makes either switcher wait for the other forever.
#[test]
fn sharded_ref_batch_switch_loses_nothing() {
    use vfscale::sync::epoch::Domain;
    use vfscale::sync::shardref::ShardedRef;
    let seen = outcomes_in(spinning_three_threads(), || {
        let domain = Arc::new(Domain::new());
        let a = Arc::new(ShardedRef::new(1));
        // The base and the lone switcher's reference.
        let b = Arc::new(ShardedRef::new(2));
        a.make_sharded();
        b.make_sharded();
        let holder = {
            let (domain, a) = (domain.clone(), a.clone());
            thread::spawn(move || {
                let record = domain.acquire_record();
                domain.enter(record);
                assert!(a.get());
                let sharded = a.is_sharded();
                assert!(!a.put(), "a holder's put is never the last");
                domain.leave(record);
                sharded
            })
        };
        let lone = {
            let (domain, b) = (domain.clone(), b.clone());
            thread::spawn(move || {
                b.make_exact_with(|| domain.synchronize_except(std::ptr::null()));
                assert!(!b.put(), "the base outlives the switcher");
            })
        };
        ShardedRef::make_exact_all_with(&[&*a, &*b], || {
            domain.synchronize_except(std::ptr::null())
        });
        let sharded_at_get = holder.join().unwrap();
        lone.join().unwrap();
        for c in [&a, &b] {
            assert!(!c.is_sharded());
            assert_eq!(c.count_at_rest(), 1, "only the base is left");
            assert!(c.put(), "the base's put is the last");
        }
        sharded_at_get
    });
    assert_eq!(
        seen,
        HashSet::from([true, false]),
        "the holder's get before and after the switch"
    );
}

/// A hot dentry's count (dcache/hot.rs): an opener makes the count sharded
/// and drops its reference while the name's remover freezes the count and
/// drops the name's reference. Whatever the interleaving, exactly one of
/// the two puts reports the last reference (a lost one leaks the dentry, a
/// doubled one frees it under the other), and a count frozen first never
/// shards.
#[test]
fn sharded_ref_freeze_races_make_sharded() {
    use vfscale::sync::epoch::Domain;
    use vfscale::sync::shardref::ShardedRef;
    let seen = outcomes(|| {
        let domain = Arc::new(Domain::new());
        // The name's reference and the opener's.
        let count = Arc::new(ShardedRef::new(2));
        let opener = {
            let (domain, count) = (domain.clone(), count.clone());
            thread::spawn(move || {
                let record = domain.acquire_record();
                domain.enter(record);
                let sharded = count.make_sharded();
                let last = count.put();
                domain.leave(record);
                (sharded, last)
            })
        };
        if !count.freeze_if_atomic() {
            assert!(count.freeze_with(|| domain.synchronize_except(std::ptr::null())));
        }
        assert!(!count.is_sharded(), "frozen counts stay atomic");
        let remover_last = count.put();
        let (sharded, opener_last) = opener.join().unwrap();
        assert!(
            remover_last ^ opener_last,
            "exactly one last put (remover {remover_last}, opener {opener_last})"
        );
        assert!(!count.make_sharded(), "a frozen count never shards");
        sharded
    });
    assert_eq!(
        seen,
        HashSet::from([true, false]),
        "sharding both before and after the freeze explored"
    );
}

// ------------------------------------------------------ lock-free fd lookup

/// A file of the type-stable pool: freed memory is reused for the next
/// file at once, so only its count is touched by stale lookups.
struct PoolFile {
    rc: RefCount,
    /// Which open file this incarnation is (written before publication).
    incarnation: UnsafeCell<u32>,
}

// SAFETY: `incarnation` is written by whoever re-initialises the object
// and read by validated reference holders; loom checks the ordering.
unsafe impl Sync for PoolFile {}

/// `FdTable::get`'s protocol on slot `fd_a`: load, take a reference with
/// `get_acquire`, re-check the slot, else put and retry.
fn lookup(slot: &AtomicPtr<PoolFile>) -> Option<u32> {
    loop {
        let p = slot.load(Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: the pool's memory stays a `PoolFile` (type-stable).
        let f = unsafe { &*p };
        if !f.rc.get_acquire() {
            thread::yield_now();
            continue;
        }
        if slot.load(Acquire) == p {
            // SAFETY: a validated reference; loom checks the read is
            // ordered after the incarnation's initialisation.
            let which = f.incarnation.with(|v| unsafe { *v });
            let _ = f.rc.put();
            return Some(which);
        }
        let _ = f.rc.put();
        thread::yield_now();
    }
}

/// A lookup of fd A races with close(A) and the immediate reuse of the same
/// memory as a new file installed at fd B (what the type-stable pool
/// allows): the lookup must return the file that was at A or nothing —
/// never the reused object — and must read its fields only after their
/// initialisation. With a Relaxed `get` the re-check may read a stale slot
/// and hand out the new file as A's.
#[test]
fn fd_lookup_against_close_and_reuse() {
    let seen = outcomes(|| {
        let file = Box::leak(Box::new(PoolFile {
            rc: RefCount::new(1),
            incarnation: UnsafeCell::new(1),
        })) as *mut PoolFile;
        let slots = Arc::new((AtomicPtr::new(file), AtomicPtr::new(std::ptr::null_mut())));
        let s = Arc::clone(&slots);
        let addr = file as usize;
        let closer = thread::spawn(move || {
            // close(A): empty the slot, put the slot's reference.
            let p = s.0.swap(std::ptr::null_mut(), Relaxed);
            // SAFETY: the pool object outlives the model (leaked).
            let f = unsafe { &*p };
            if f.rc.put() && f.rc.try_kill() {
                // Freed, and reused at once for a new file at fd B.
                // SAFETY: the kill winner owns the dead object.
                f.incarnation.with_mut(|v| unsafe { *v = 2 });
                f.rc.reinit(1);
                s.1.store(addr as *mut PoolFile, Release);
            }
        });
        let s = Arc::clone(&slots);
        let reader = thread::spawn(move || lookup(&s.0));
        closer.join().unwrap();
        let got = reader.join().unwrap();
        assert_ne!(got, Some(2), "fd A's lookup returned the reused file");
        got
    });
    assert_eq!(seen, HashSet::from([None, Some(1)]));
}

// ------------------------------------------------------------ in-lookup

/// One thread's lookup of a name that misses the "dcache" (`cache`), as
/// `lookup_slow` does it: check the cache, claim, re-check as leader, ask
/// the backend (`calls` counts; the first call fails with EIO when
/// `fail_first`), publish, complete.
fn in_lookup_miss(
    table: &vfscale::dcache::in_lookup::InLookupTable,
    cache: &loom::sync::Mutex<Option<u32>>,
    calls: &AtomicUsize,
    fail_first: bool,
    waited: &AtomicBool,
) -> Result<u32, vfscale::Errno> {
    use vfscale::dcache::in_lookup::{Claim, Outcome};
    loop {
        if let Some(v) = *cache.lock().unwrap() {
            return Ok(v);
        }
        match table.claim(0x1000, 42 << 32 | 3, b"abc") {
            Claim::Waited(out) => {
                // Relaxed: read after the join.
                waited.store(true, Relaxed);
                if let Outcome::Failed(e) = out {
                    return Err(e);
                }
            }
            Claim::Leader(leader) => {
                if let Some(v) = *cache.lock().unwrap() {
                    leader.complete(Outcome::Done);
                    return Ok(v);
                }
                // Relaxed: a counter read after both threads joined.
                let n = calls.fetch_add(1, Relaxed) + 1;
                if fail_first && n == 1 {
                    leader.complete(Outcome::Failed(vfscale::Errno::EIO));
                    return Err(vfscale::Errno::EIO);
                }
                *cache.lock().unwrap() = Some(7);
                leader.complete(Outcome::Done);
                return Ok(7);
            }
        }
    }
}

#[test]
fn in_lookup_same_name_one_backend_call() {
    let seen = outcomes(|| {
        let table = Arc::new(vfscale::dcache::in_lookup::InLookupTable::new());
        let cache = Arc::new(loom::sync::Mutex::new(None));
        let calls = Arc::new(AtomicUsize::new(0));
        let waited = Arc::new(AtomicBool::new(false));
        let other = {
            let (table, cache, calls, waited) =
                (table.clone(), cache.clone(), calls.clone(), waited.clone());
            thread::spawn(move || in_lookup_miss(&table, &cache, &calls, false, &waited))
        };
        let mine = in_lookup_miss(&table, &cache, &calls, false, &waited);
        let theirs = other.join().unwrap();
        assert_eq!((mine, theirs), (Ok(7), Ok(7)));
        assert_eq!(calls.load(Relaxed), 1, "the backend was asked twice");
        assert_eq!(table.waiting(), 0);
        waited.load(Relaxed)
    });
    // Both the overlapping case (one thread parked on the placeholder) and
    // the sequential one were explored.
    assert_eq!(seen, HashSet::from([true, false]));
}

#[test]
fn in_lookup_error_is_shared_or_retried() {
    const EIO: vfscale::Errno = vfscale::Errno::EIO;
    let seen = outcomes(|| {
        let table = Arc::new(vfscale::dcache::in_lookup::InLookupTable::new());
        let cache = Arc::new(loom::sync::Mutex::new(None));
        let calls = Arc::new(AtomicUsize::new(0));
        let waited = Arc::new(AtomicBool::new(false));
        let other = {
            let (table, cache, calls, waited) =
                (table.clone(), cache.clone(), calls.clone(), waited.clone());
            thread::spawn(move || in_lookup_miss(&table, &cache, &calls, true, &waited))
        };
        let mine = in_lookup_miss(&table, &cache, &calls, true, &waited);
        let theirs = other.join().unwrap();
        let n = calls.load(Relaxed);
        // Either the second thread waited for the failed call and shares its
        // error (one call), or it came after and asked again (two calls,
        // the second succeeds); never a cached error, never a lost waiter.
        match n {
            1 => assert_eq!((mine, theirs), (Err(EIO), Err(EIO))),
            2 => assert!(
                (mine, theirs) == (Err(EIO), Ok(7)) || (mine, theirs) == (Ok(7), Err(EIO)),
                "{mine:?} {theirs:?}"
            ),
            _ => panic!("{n} backend calls"),
        }
        n
    });
    assert_eq!(seen, HashSet::from([1, 2]), "both orders explored");
}

// ------------------------------------------------------------- fast dput

/// A cached dentry's refcount and flags, and its LRU membership under the
/// list lock (`reclaim/list_lru.rs`: `D_ON_LRU` changes only under that lock).
struct Cached {
    rc: RefCount,
    flags: AtomicU32,
    on_list: loom::sync::Mutex<bool>,
}

impl Cached {
    /// dput of a hashed dentry (dcache/mod.rs): the lock-free return when
    /// it is already on the LRU (`fastput::cached_on_lru`), else `lru_add`
    /// (lock, re-check hashed, unused and alive, link).
    fn dput(&self) {
        if self.rc.put() {
            self.keep_cached();
        }
    }

    /// `keep_cached` after a put reached 0: nothing if already listed,
    /// else `lru_add`.
    fn keep_cached(&self) {
        use vfscale::dcache::dentry::{D_HASHED, D_ON_LRU};
        if vfscale::dcache::fastput::cached_on_lru(&self.flags) {
            return;
        }
        let mut on = self.on_list.lock().unwrap();
        let hashed = self.flags.load(Relaxed) & D_HASHED != 0;
        if hashed && self.rc.count() == 0 && !self.rc.is_dead() && !*on {
            *on = true;
            self.flags.fetch_or(D_ON_LRU, Release);
        }
    }

    /// The invariants once every thread is done: dead, or on the LRU, or
    /// referenced — never hashed at 0 on no list, where reclaim could not
    /// find it; the flag agrees with the membership. Returns (dead, on).
    fn at_rest(&self) -> (bool, bool) {
        use vfscale::dcache::dentry::D_ON_LRU;
        let dead = self.rc.is_dead();
        let on = *self.on_list.lock().unwrap();
        assert!(
            dead || on || self.rc.count() != 0,
            "a cached dentry left at 0 on no LRU"
        );
        assert_eq!(
            on,
            self.flags.load(Relaxed) & D_ON_LRU != 0,
            "flag and membership agree"
        );
        assert!(!(dead && on), "a dead dentry on a list");
        (dead, on)
    }

    /// One step of `shrink_lru`: unlink under the lock, then the
    /// publishing kill; a winner unhashes.
    fn shrink(&self) {
        use vfscale::dcache::dentry::{D_HASHED, D_ON_LRU};
        let mut on = self.on_list.lock().unwrap();
        if !*on {
            return;
        }
        *on = false;
        self.flags.fetch_and(!D_ON_LRU, Release);
        if self.rc.try_kill_publishing() {
            self.flags.fetch_and(!D_HASHED, Release);
        }
    }
}

/// fast_dput vs the shrinker (seed 001's lockref lesson applied to the
/// LRU): a lookup revived a cached dentry that is on the LRU; its last put
/// races with the shrinker unlinking it. Whatever the interleaving, the
/// dentry ends dead, or on the LRU, or referenced — never hashed at 0 on
/// no list, where reclaim could not find it. With a plain `try_kill` in
/// the shrinker (a failed compare-exchange writes nothing) loom finds that
/// outcome: the put reads the flag from before the unlink.
#[test]
fn fast_put_vs_shrinker() {
    use vfscale::dcache::dentry::{D_HASHED, D_ON_LRU};
    let seen = outcomes(|| {
        let c = Arc::new(Cached {
            rc: RefCount::new(1),
            flags: AtomicU32::new(D_HASHED | D_ON_LRU),
            on_list: loom::sync::Mutex::new(true),
        });
        let p = Arc::clone(&c);
        let putter = thread::spawn(move || p.dput());
        c.shrink();
        putter.join().unwrap();
        c.at_rest()
    });
    assert_eq!(
        seen,
        HashSet::from([(true, false), (false, true)]),
        "both the kill and the re-add happen"
    );
}

/// A backend rename moves an unused cached dentry between hash chains
/// (`move_cached_names`, process/backend_names.rs: pin, out of the old
/// chain, new place, into the new chain, put) while the shrinker isolates
/// it (`isolate_and_free`, dcache/mod.rs: reads its place with no
/// reference, locks that chain, re-reads the place, unlinks it from the
/// LRU, kills, unhashes from the chain it locked). Whatever the
/// interleaving, a killed dentry is taken out of the chain that holds it,
/// and a live one is in exactly one chain. Without the re-read, or with
/// the mover storing the new place after it left the old chain's lock,
/// loom finds the shrinker unhashing from the chain the dentry has left.
#[test]
fn shrinker_vs_backend_move() {
    use vfscale::dcache::dentry::{D_HASHED, D_ON_LRU};
    let seen = outcomes(|| {
        let c = Arc::new(Cached {
            rc: RefCount::new(0),
            flags: AtomicU32::new(D_HASHED | D_ON_LRU),
            on_list: loom::sync::Mutex::new(true),
        });
        // The dentry's place (its chain) and each chain's membership.
        let place = Arc::new(AtomicUsize::new(0));
        let chains = Arc::new([loom::sync::Mutex::new(true), loom::sync::Mutex::new(false)]);
        let (mc, mp, mch) = (Arc::clone(&c), Arc::clone(&place), Arc::clone(&chains));
        let mover = thread::spawn(move || {
            if !mc.rc.get() {
                return false;
            }
            {
                let mut old = mch[0].lock().unwrap();
                assert!(*old, "the mover's dentry left its chain");
                *old = false;
                // Under the old chain's lock, as `d_move`. Release: pairs
                // with the shrinker's first, unlocked, acquire.
                mp.store(1, Release);
            }
            *mch[1].lock().unwrap() = true;
            mc.dput();
            true
        });
        // The shrinker's isolation.
        let at = place.load(Acquire);
        let mut chain = chains[at].lock().unwrap();
        let mut killed = false;
        if place.load(Acquire) == at {
            let mut on = c.on_list.lock().unwrap();
            if *on {
                *on = false;
                c.flags.fetch_and(!D_ON_LRU, Release);
                if c.flags.load(Relaxed) & D_HASHED != 0 && c.rc.try_kill_publishing() {
                    assert!(*chain, "unhashed from a chain that does not hold it");
                    *chain = false;
                    c.flags.fetch_and(!D_HASHED, Release);
                    killed = true;
                }
            }
        }
        drop(chain);
        let moved = mover.join().unwrap();
        let (dead, _) = c.at_rest();
        let held = chains.iter().filter(|m| *m.lock().unwrap()).count();
        assert_eq!(dead, killed);
        assert_eq!(held, if dead { 0 } else { 1 }, "chains holding it");
        (moved, dead)
    });
    assert!(seen.contains(&(true, false)), "moved, kept");
    assert!(seen.contains(&(false, true)), "killed before the move");
    assert!(seen.contains(&(true, true)), "killed after the move");
}

/// The reclaimer's put of a freed child's parent (`put_parent_reclaiming`,
/// dcache/mod.rs): at 0 the parent goes on its list as any unused dentry,
/// then is isolated from it as the scan would — while a lookup takes and
/// drops a reference. Whatever the interleaving: never killed while the
/// lookup holds it (the lookup's get fails on a dead dentry instead), and
/// never left hashed at 0 on no list.
#[test]
fn reclaiming_parent_put_vs_lookup() {
    use vfscale::dcache::dentry::D_HASHED;
    let seen = outcomes(|| {
        let c = Arc::new(Cached {
            rc: RefCount::new(1), // the freed child's reference
            flags: AtomicU32::new(D_HASHED),
            on_list: loom::sync::Mutex::new(false),
        });
        let l = Arc::clone(&c);
        let lookup = thread::spawn(move || {
            let got = l.rc.get();
            if got {
                l.dput();
            }
            got
        });
        if c.rc.put() {
            c.keep_cached();
            c.shrink();
        }
        let got = lookup.join().unwrap();
        let (dead, _) = c.at_rest();
        (got, dead)
    });
    assert!(seen.contains(&(false, true)), "the lookup came too late");
    assert!(seen.contains(&(true, true)), "freed after the lookup's put");
    assert!(
        seen.contains(&(true, false)),
        "kept: in use at the isolation"
    );
}

// ---------------------------------------------------------------- reclaim

/// The three levels of reclaim bits (`reclaim/bits.rs`): a producer makes a
/// list non-empty (count store), then marks the shrinker bit, the group's
/// populated bit and that bit's summary bit; a scanner that saw the list
/// empty clears each level with a re-check of the level below. Whatever the
/// interleaving, at the end a non-empty list has all three bits.
#[test]
fn reclaim_bit_set_clear_recheck() {
    use vfscale::reclaim::bits::{clear_if_empty, mark_nonempty};
    use vfscale::sync::atomic::AtomicU64;
    let seen = outcomes(|| {
        let count = Arc::new(AtomicUsize::new(0));
        let map = Arc::new(AtomicU64::new(1)); // stale bit of an earlier add
        let populated = Arc::new(AtomicU64::new(1));
        let summary = Arc::new(AtomicU64::new(1));
        let (c, m, p, s) = (
            count.clone(),
            map.clone(),
            populated.clone(),
            summary.clone(),
        );
        let producer = thread::spawn(move || {
            // Under the list lock in the real code; the lock is not what
            // makes the protocol correct, so the model leaves it out.
            c.store(1, Relaxed);
            mark_nonempty(&m, 1);
            mark_nonempty(&p, 1);
            mark_nonempty(&s, 1);
        });
        // The scanner.
        let mut cleared = (false, false, false);
        if count.load(Relaxed) == 0 {
            cleared.0 = clear_if_empty(&map, 1, || count.load(Relaxed) == 0);
        }
        if map.load(Relaxed) == 0 {
            cleared.1 = clear_if_empty(&populated, 1, || map.load(Relaxed) == 0);
        }
        if populated.load(Relaxed) == 0 {
            cleared.2 = clear_if_empty(&summary, 1, || populated.load(Relaxed) == 0);
        }
        producer.join().unwrap();
        assert_eq!(count.load(Relaxed), 1);
        assert_eq!(
            map.load(Relaxed),
            1,
            "non-empty list without its shrinker bit"
        );
        assert_eq!(populated.load(Relaxed), 1, "populated group not in the set");
        assert_eq!(
            summary.load(Relaxed),
            1,
            "populated word not in the summary"
        );
        cleared
    });
    // Both the scanner-first (cleared, then re-set by the producer) and the
    // producer-first (re-check sees the count) paths were explored.
    assert!(seen.contains(&(true, true, true)), "{seen:?}");
    assert!(seen.contains(&(false, false, false)), "{seen:?}");
}

// ------------------------------------------------------- lone-put buffer

/// A namespace with one thread slot's owner-only buffer of lone puts
/// (`defer/queue.rs`, `Slot::local`): the owner pushes and drains it only
/// while it holds the namespace alive; the namespace's drop drains what a
/// call left there, once no owner holds it.
struct LoneNs {
    local: UnsafeCell<Vec<u32>>,
    freed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for LoneNs {
    fn drop(&mut self) {
        // `drain_at_drop`: the strong count is zero.
        let n = self.local.with_mut(|l| {
            // SAFETY: loom checks this access is ordered after every
            // owner's access (the model's claim).
            let l = unsafe { &mut *l };
            let n = l.len();
            l.clear();
            n
        });
        self.freed
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The owner thread queues two lone puts inside a call, frees one at the
/// call's end, and leaves one (a call that missed its end) as it drops its
/// reference; the embedder drops the namespace on another thread at the
/// same time. Whichever reference goes last, the buffer's accesses are
/// ordered (loom's cell checker: the `Arc`'s release decrement and acquire
/// fence carry them) and each object is freed exactly once. The slot's
/// `Weak` upgrade at thread exit is not modelled: loom 0.7 has no `Weak`;
/// it relies on std's guarantee that an upgrade fails once the strong
/// count reached zero.
#[test]
fn lone_put_buffer_vs_namespace_drop() {
    let seen = outcomes(|| {
        let freed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ns = Arc::new(LoneNs {
            local: UnsafeCell::new(Vec::new()),
            freed: freed.clone(),
        });
        let mine = Arc::clone(&ns);
        let f2 = freed.clone();
        let owner = thread::spawn(move || {
            // SAFETY (both closures): the owner, holding `mine`.
            mine.local.with_mut(|l| unsafe { &mut *l }.extend([1, 2]));
            let drained = mine.local.with_mut(|l| unsafe { &mut *l }.pop());
            if drained.is_some() {
                f2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            drop(mine);
        });
        drop(ns);
        owner.join().unwrap();
        freed.load(std::sync::atomic::Ordering::Relaxed)
    });
    assert_eq!(seen, HashSet::from([2]), "each object freed exactly once");
}

/// The writers' queue of a contended lock (sync/spin_queue.rs): two
/// waiters join one queue (three exceed loom's branch budget with the
/// spinning; two cover the races: a join between the head's check of
/// `next` and its release of the tail, and a hand-over to a waiter that
/// has swapped the tail but not linked yet). The head role is held by one waiter at a time,
/// and work done as head is visible to the next head (the protected cell is
/// written without atomics, so loom reports a missing happens-before), and
/// every waiter becomes head once. Outcome: whether the main thread was
/// head first or second.
#[test]
fn spin_queue_head_is_exclusive_and_passes_on() {
    use vfscale::sync::{SpinNode, SpinQueue};
    let seen = outcomes(|| {
        let queue = Arc::new(SpinQueue::new());
        let log = Arc::new(UnsafeCell::new(Vec::new()));
        let as_head = |queue: &SpinQueue, log: &UnsafeCell<Vec<u32>>, me: u32| {
            let node = SpinNode::new();
            let _head = queue.wait_for_turn(&node);
            // SAFETY (model): only the head touches the log.
            log.with_mut(|l| unsafe { (*l).push(me) });
        };
        let other = {
            let (queue, log) = (queue.clone(), log.clone());
            thread::spawn(move || as_head(&queue, &log, 1))
        };
        as_head(&queue, &log, 0);
        other.join().unwrap();
        // SAFETY (model): every waiter has been joined.
        let order = log.with(|l| unsafe { (*l).clone() });
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1], "every waiter was head exactly once");
        order.iter().position(|&w| w == 0).unwrap()
    });
    assert_eq!(
        seen,
        HashSet::from([0, 1]),
        "the main thread was head first and second"
    );
}

// ------------------------------------------------------------ slab depot

/// A batch in the slab's depot (`mem/depot.rs`): an id and a body that
/// whoever holds the batch reads and writes. Loom's cell checker fails any
/// access to the body that the shard mutexes do not order after the
/// previous holder's.
struct DepotBatch {
    id: u32,
    body: UnsafeCell<u32>,
}

// SAFETY: a batch is owned by one place at a time (a shard or a thread);
// the model checks that hand-overs order the body's accesses.
unsafe impl Send for DepotBatch {}

impl DepotBatch {
    fn new(id: u32) -> Box<DepotBatch> {
        Box::new(DepotBatch {
            id,
            body: UnsafeCell::new(id),
        })
    }

    /// What a thread does with the objects of a batch it took: uses them.
    fn take(self: Box<DepotBatch>) -> u32 {
        // SAFETY (both closures): we own the batch; loom checks the order.
        let body = self.body.with(|b| unsafe { *b });
        assert_eq!(body % 100, self.id, "the batch's own objects");
        self.body.with_mut(|b| unsafe { *b += 100 });
        self.id
    }
}

/// The sharded depot's spill/refill/steal protocol: two shards; batch 1
/// sits in shard 0; thread A (home 0) spills batch 2 to its shard and
/// refills twice; thread B (home 1, empty) refills once, so it must steal.
/// Every batch is handed out at most once and none is lost (taken ones
/// plus those left in the depot are exactly {1, 2}), the body accesses
/// are ordered by the shard locks, and A's refills look at its own shard
/// first (A never gets batch 1 while batch 2 is in shard 0 and 1 is not
/// newer). The explored outcomes include B stealing either batch and B
/// finding the depot empty.
#[test]
fn slab_depot_steal_takes_each_batch_once() {
    use vfscale::mem::depot::Depot;
    let seen = outcomes(|| {
        let depot: Arc<Depot<Box<DepotBatch>>> = Arc::new(Depot::new(2));
        depot.push(0, DepotBatch::new(1));
        let d2 = Arc::clone(&depot);
        let a = thread::spawn(move || {
            d2.push(0, DepotBatch::new(2));
            let first = d2.pop(0).map(DepotBatch::take);
            let second = d2.pop(0).map(DepotBatch::take);
            (first, second)
        });
        let b = depot.pop(1).map(DepotBatch::take);
        let (a1, a2) = a.join().unwrap();
        let mut all: Vec<u32> = [a1, a2, b].into_iter().flatten().collect();
        all.extend(depot.take_all().into_iter().map(DepotBatch::take));
        all.sort_unstable();
        assert_eq!(all, vec![1, 2], "each batch once, none lost");
        if a1 == Some(1) {
            // Batch 2 had been stolen before A's first refill, or A's
            // push is not what its pop saw: the home shard is LIFO.
            assert_eq!(b, Some(2), "A takes its own newest batch first");
        }
        (a1, a2, b)
    });
    assert!(seen.iter().any(|o| o.2 == Some(1)), "B stole batch 1");
    assert!(seen.iter().any(|o| o.2 == Some(2)), "B stole batch 2");
    assert!(seen.iter().any(|o| o.2.is_none()), "B found nothing");
}

/// The approximate counter's two fold batches (`sync/counter.rs`): an
/// ordinary updater (fold at 2) and a bulk one (fold at 3) racing on the
/// same shard (loom threads share one OS thread, so one shard index) and
/// on the central value. Once the updates stop the sum is exact and the
/// central value within `max_error`; different fold orders are explored.
/// (A sum taken meanwhile is a snapshot with no bound worth asserting: a
/// unit between a fold's swap and its central add is in neither.)
#[test]
fn approx_counter_bulk_and_ordinary_folds_conserve() {
    use vfscale::sync::ApproxCounter;
    let seen = outcomes(|| {
        let c = Arc::new(ApproxCounter::with_batches(2, 3));
        let c1 = Arc::clone(&c);
        let ordinary = thread::spawn(move || {
            c1.add(1);
            c1.add(1);
        });
        let c2 = Arc::clone(&c);
        let bulk = thread::spawn(move || {
            c2.add_bulk(-2);
            c2.add_bulk(-1);
        });
        ordinary.join().unwrap();
        bulk.join().unwrap();
        assert_eq!(c.sum(), -1, "no update lost");
        assert!((c.read_approx() - c.sum()).abs() <= c.max_error());
        c.read_approx()
    });
    assert!(seen.len() >= 2, "different fold orders: {seen:?}");
}

// ------------------------------------------------------------ POSIX ACLs

/// The ACL protocol of `inode/acl.rs`, on the real `SeqCount`, with an
/// atomic standing for the lock-free ACL map (0: none, else the stored
/// mask + 1; the map's insert publishes with Release, its get reads with
/// Acquire) and a loom mutex for the inode's writer lock. Setting an
/// access ACL takes the writer lock, stores the ACL, then in one
/// attribute write section sets the mode's group bits from it and the
/// ACL bit; chmod changes the mode in a write section alone unless it
/// finds the bit set there, and then, under the writer lock, rewrites the
/// stored ACL's mask and sets the mode. Whatever the order, the mode's
/// group bits end up equal to the stored mask (the checker's invariant),
/// and a reader that validated a mode with the bit finds the ACL stored.
#[test]
fn acl_set_vs_chmod_keeps_the_acl_and_mode_in_step() {
    const BIT: u32 = 1 << 16;
    struct Inode {
        seq: SeqCount,
        mode: AtomicU32,
        acl: AtomicU32,
        writer: loom::sync::Mutex<()>,
    }
    let seen = outcomes(|| {
        let i = Arc::new(Inode {
            seq: SeqCount::new(),
            mode: AtomicU32::new(0o640),
            acl: AtomicU32::new(0),
            writer: loom::sync::Mutex::new(()),
        });
        let i1 = Arc::clone(&i);
        let set_acl = thread::spawn(move || {
            let _w = i1.writer.lock().unwrap();
            // Release: the map's insert; pairs with the readers' Acquire.
            i1.acl.store(0o5 + 1, Release);
            i1.seq.write_lock();
            // Relaxed: inside the write section under test.
            let m = i1.mode.load(Relaxed);
            i1.mode.store((m & !0o070) | 0o050 | BIT, Relaxed);
            i1.seq.write_end();
        });
        let i2 = Arc::clone(&i);
        let chmod = thread::spawn(move || {
            let new = 0o600;
            let plain = |i: &Inode| {
                // Relaxed: inside the write section under test.
                let m = i.mode.load(Relaxed);
                i.mode.store(new | (m & BIT), Relaxed);
            };
            i2.seq.write_lock();
            // Relaxed: inside the write section under test.
            let has_acl = i2.mode.load(Relaxed) & BIT != 0;
            if !has_acl {
                plain(&i2);
            }
            i2.seq.write_end();
            if has_acl {
                let _w = i2.writer.lock().unwrap();
                // Acquire/Release: the map's get and insert.
                if i2.acl.load(Acquire) != 0 {
                    i2.acl.store(((new >> 3) & 7) + 1, Release);
                }
                i2.seq.write_lock();
                plain(&i2);
                i2.seq.write_end();
            }
        });
        let i3 = Arc::clone(&i);
        // One attempt (a retry would spin: loom's branch limit).
        let reader = thread::spawn(move || {
            let start = i3.seq.read_begin_raw();
            // Relaxed: ordered by the seqcount under test.
            let m = i3.mode.load(Relaxed);
            if i3.seq.read_retry(start) {
                return None;
            }
            if m & BIT != 0 {
                // Acquire: the map's get.
                assert_ne!(i3.acl.load(Acquire), 0, "a bit without its ACL");
            }
            Some(m & BIT != 0)
        });
        set_acl.join().unwrap();
        chmod.join().unwrap();
        let saw_bit = reader.join().unwrap();
        // Relaxed: every thread has been joined.
        let mode = i.mode.load(Relaxed);
        let acl = i.acl.load(Relaxed);
        assert_eq!(
            acl,
            ((mode >> 3) & 7) + 1,
            "mode {mode:o} and the ACL's mask"
        );
        (mode & 0o777, saw_bit)
    });
    // The chmod ran before the ACL was set (the ACL's mask wins) or after
    // (the chmod's bits, rewritten into the ACL); the reader saw either.
    assert!(
        seen.contains(&(0o650, Some(false))) && seen.contains(&(0o600, Some(true))),
        "{seen:?}"
    );
}
