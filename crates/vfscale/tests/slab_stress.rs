//! Multi-thread stress of the slab (`mem/slab.rs`) and its per-CPU depot
//! shards (`mem/depot.rs`): threads allocate, free their own objects and
//! each other's (as the epoch collector frees on another thread than the
//! allocator), sometimes inside bulk free scopes (the deferred-put drain's),
//! and move between CPUs so spills, refills and steals meet in every shard.
//!
//! Checks: no object is handed out twice (each object carries an owner
//! word claimed by compare-exchange on allocation and released on free;
//! a second holder would find it taken); a thread's free list stays within
//! its bound inside and outside bulk scopes; at the end, with every thread
//! gone (their lists spilled to the depot), the free objects are distinct
//! and exactly the objects ever carved. The only user of the 64-byte class
//! in this test binary is this test, so the census balances.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use vfscale::mem::slab::{self, SlabPool};

#[repr(C, align(64))]
struct Obj {
    /// 0 while free; the holder's tag while allocated.
    owner: AtomicU64,
    _pad: [u64; 7],
}

impl SlabPool for Obj {
    const POOL: usize = slab::class_of::<Obj>();
}

/// A small deterministic generator (xorshift64*), seeded per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Allocates an object and claims it for `tag`.
fn take(tag: u64) -> (usize, u64) {
    let p = slab::alloc_in_place::<Obj>();
    // SAFETY: a free object of Obj's pool: fresh (zeroed) or a freed Obj
    // whose owner word we reset to 0 before freeing it.
    let owner = unsafe { &(*p).owner };
    assert_eq!(
        owner.compare_exchange(0, tag, SeqCst, SeqCst),
        Ok(0),
        "object {p:p} handed out while another holder has it"
    );
    (p as usize, tag)
}

/// Releases and frees an object claimed with `tag`.
fn give_back((addr, tag): (usize, u64)) {
    let p = addr as *mut Obj;
    // SAFETY: allocated by `take`, freed once, here.
    unsafe {
        assert_eq!((*p).owner.swap(0, SeqCst), tag, "owner changed under us");
        slab::free(p);
    }
}

/// Pins the calling thread to one of its allowed CPUs (best effort), so
/// the threads' home shards change during the run.
fn move_to_cpu(k: usize) {
    // SAFETY: zeroed cpu_set_t values are valid empty sets; the calls only
    // read and write the sets we pass.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .collect();
        if cpus.len() < 2 {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[k % cpus.len()], &mut set);
        libc::sched_setaffinity(0, size, &set);
    }
}

#[test]
fn threads_never_share_an_object_and_the_free_objects_balance() {
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 60;
    let pool = slab::class_of::<Obj>();
    // Objects handed between threads: freed by whoever takes them.
    let exchange: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    // Plain threads joined one by one, not a scope: `join` waits for the
    // thread's end, thread-local destructors (the list spills) included;
    // a scope returns when the closures return, before those.
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let exchange = Arc::clone(&exchange);
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                let mut serial = 0u64;
                let mut mine: Vec<(usize, u64)> = Vec::new();
                for round in 0..ROUNDS {
                    if round % 10 == 0 {
                        move_to_cpu((t + round / 10) as usize);
                    }
                    for _ in 0..rng.below(3000) {
                        serial += 1;
                        mine.push(take((t + 1) << 40 | serial));
                    }
                    // Hand some to the other threads, free some of theirs.
                    let give = rng.below(mine.len() as u64 / 2 + 1) as usize;
                    let given: Vec<_> = mine.drain(..give).collect();
                    let theirs: Vec<_> = {
                        let mut x = exchange.lock().unwrap();
                        let theirs = std::mem::take(&mut *x);
                        x.extend(given);
                        theirs
                    };
                    if round % 3 == 0 {
                        // A drain: thousands of frees in a bulk scope.
                        let scope = slab::bulk_free();
                        for o in theirs.into_iter().chain(mine.drain(..)) {
                            give_back(o);
                        }
                        let inside = slab::census(pool);
                        assert!(inside.local <= slab::BULK_LIST_MAX, "{}", inside.local);
                        drop(scope);
                        let after = slab::census(pool);
                        assert!(after.local < 128, "trimmed at the scope's end");
                    } else {
                        let keep = rng.below(mine.len() as u64 + 1) as usize;
                        for o in theirs.into_iter().chain(mine.drain(keep..)) {
                            give_back(o);
                        }
                        assert!(slab::census(pool).local < 128);
                    }
                }
                for o in mine {
                    give_back(o);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for o in std::mem::take(&mut *exchange.lock().unwrap()) {
        give_back(o);
    }
    // Every thread is gone and its lists are in the depot; this thread's
    // list holds what it just freed.
    let c = slab::census(pool);
    if c.carved == 0 {
        return; // vfscale_no_slab: objects come from Box.
    }
    let mut free = c.free.clone();
    free.sort_unstable();
    free.dedup();
    assert_eq!(free.len(), c.free.len(), "an object is free twice");
    assert_eq!(free.len(), c.carved, "every carved object is free again");
    for &a in &free {
        // SAFETY: a free object of the pool; its memory stays mapped.
        let owner = unsafe { &(*(a as *const Obj)).owner };
        assert_eq!(owner.load(SeqCst), 0, "a free object still owned");
    }
    let shards_used = c.shard_batches.iter().filter(|&&b| b > 0).count();
    assert!(shards_used >= 1);
}

/// A split object (`SlabPool::TAIL_BYTES`), shaped as a dentry: a
/// one-line head and a two-line tail, in the dentry pool (which nothing
/// else in this test binary uses). Its drop checks its tail is intact.
#[repr(C, align(64))]
struct Head {
    id: u64,
    _pad: [u64; 7],
}

const TAIL_WORDS: usize = 16;

impl SlabPool for Head {
    const POOL: usize = slab::DENTRY_POOL;
    const TAIL_BYTES: usize = TAIL_WORDS * 8;
}

static HEADS_DROPPED: AtomicU64 = AtomicU64::new(0);

fn tail_words(head: *const Head) -> *mut [u64; TAIL_WORDS] {
    slab::tail_of(head) as *mut [u64; TAIL_WORDS]
}

impl Drop for Head {
    fn drop(&mut self) {
        // SAFETY: the tail written with this head in the test below.
        let tail = unsafe { &*tail_words(self) };
        assert!(tail
            .iter()
            .enumerate()
            .all(|(k, &w)| w == self.id ^ k as u64));
        HEADS_DROPPED.fetch_add(1, SeqCst);
    }
}

#[test]
fn split_objects_keep_heads_and_tails_apart() {
    const N: u64 = 20_000; // several chunks
    let heads: Vec<*mut Head> = (0..N)
        .map(|id| {
            let h = slab::alloc_in_place::<Head>();
            // SAFETY: a free object of the pool with its tail, ours alone.
            unsafe {
                h.write(Head { id, _pad: [0; 7] });
                tail_words(h).write(core::array::from_fn(|k| id ^ k as u64));
            }
            h
        })
        .collect();
    // Every line a head or a tail covers is covered once, and a tail lies
    // in its head's chunk (1 MiB, aligned) where the slab is in use.
    let mut lines: Vec<usize> = Vec::new();
    for &h in &heads {
        let (head, tail) = (h as usize, tail_words(h) as usize);
        assert_eq!(tail % 64, 0);
        lines.push(head / 64);
        lines.extend((0..TAIL_WORDS / 8).map(|k| tail / 64 + k));
        if slab::census(slab::DENTRY_POOL).carved > 0 {
            assert_eq!(head >> 20, tail >> 20, "a tail outside its head's chunk");
        }
    }
    let all = lines.len();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), all, "a head or tail overlaps another");
    // Heads carved from fresh chunks lie packed: most neighbours in
    // allocation order are one line apart.
    if slab::census(slab::DENTRY_POOL).carved > 0 {
        let packed = heads
            .windows(2)
            .filter(|w| w[1] as usize == w[0] as usize + 64)
            .count();
        assert!(packed as u64 > N * 9 / 10, "{packed} of {N} packed");
    }
    // Every value is intact (each drop checks its tail), then freed.
    for (id, &h) in (0..).zip(&heads) {
        // SAFETY: allocated above, freed once, here.
        unsafe {
            assert_eq!((*h).id, id);
            slab::free(h);
        }
    }
    assert_eq!(HEADS_DROPPED.load(SeqCst), N);
}

/// An object of the inode pool (which nothing else in this test binary
/// uses), head and tail filled with a pattern of its holder's tag.
#[repr(C, align(64))]
struct Patterned {
    words: [u64; 24],
}

const PATTERN_TAIL_WORDS: usize = 8;

impl SlabPool for Patterned {
    const POOL: usize = slab::INODE_POOL;
    const TAIL_BYTES: usize = PATTERN_TAIL_WORDS * 8;
}

fn pattern_tail(p: *const Patterned) -> *mut [u64; PATTERN_TAIL_WORDS] {
    slab::tail_of(p) as *mut [u64; PATTERN_TAIL_WORDS]
}

/// Threads allocate, fill, check and free objects of a releasable pool
/// while another thread keeps giving wholly free chunks back
/// (`release_free_chunks`, `MADV_DONTNEED`): a released chunk that held a
/// live object would zero its pattern. Chunks are released (the bytes
/// given back are counted), and every object reads back what its holder
/// wrote.
#[test]
fn released_chunks_never_hold_a_live_object() {
    const THREADS: u64 = 3;
    const ROUNDS: u64 = 100;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let releaser = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut released = 0;
            while !done.load(SeqCst) {
                released += slab::release_free_chunks();
                std::thread::yield_now();
            }
            released
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (t + 7));
                let mut serial = 0u64;
                let mut mine: Vec<(*mut Patterned, u64)> = Vec::new();
                for _ in 0..ROUNDS {
                    for _ in 0..rng.below(12_000) {
                        serial += 1;
                        let tag = (t + 1) << 40 | serial;
                        let p = slab::alloc_in_place::<Patterned>();
                        // SAFETY: a free object of the pool with its tail,
                        // ours alone until freed.
                        unsafe {
                            (*p).words = [tag; 24];
                            *pattern_tail(p) = [!tag; PATTERN_TAIL_WORDS];
                        }
                        mine.push((p, tag));
                    }
                    // Free all but a scattered few (one in 800: a chunk
                    // mostly comes free with a handful of live objects,
                    // or wholly), each checked first; the few stay for
                    // some rounds.
                    let mut kept = Vec::new();
                    for (p, tag) in mine.drain(..) {
                        // SAFETY: allocated and filled above, freed once.
                        unsafe {
                            assert!((*p).words.iter().all(|&w| w == tag), "head lost");
                            assert!((*pattern_tail(p)).iter().all(|&w| w == !tag), "tail lost");
                            if rng.below(800) == 0 && rng.below(4) != 0 {
                                kept.push((p, tag));
                            } else {
                                slab::free(p);
                            }
                        }
                    }
                    mine = kept;
                }
                for (p, _) in mine {
                    // SAFETY: as above.
                    unsafe { slab::free(p) };
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    done.store(true, SeqCst);
    let released = releaser.join().unwrap() + slab::release_free_chunks();
    if slab::census(slab::INODE_POOL).carved > 0 {
        assert!(released > 0, "no chunk was ever given back");
    }
}
