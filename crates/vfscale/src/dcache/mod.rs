//! The dentry cache: the hash of (parent, name) → dentry, reference counting,
//! and the dentry side of reclaim (the per-group LRU lists live in
//! `reclaim/list_lru.rs`; adding, isolating and freeing dentries is here).
//!
//! Rules (see docs/ARCHITECTURE.md for the whole picture):
//! - `lookup_rcu` writes nothing: it scans a chain under the caller's epoch
//!   guard and returns the dentry with the `seq` value the caller must
//!   validate. A miss may be spurious (a concurrent rename can divert the
//!   scan into another chain), so callers confirm misses with `lookup_slow`,
//!   which scans with the bucket locked under the shared directory lock.
//! - Chain membership changes only under the bucket lock: insertions by
//!   `lookup_slow`/create (dedup-scanning first, so a name has at most one
//!   live dentry), removals by unlink/rmdir/rename and, on backend-served
//!   instances, by revalidation and `forget_name` (under the exclusive
//!   directory lock, holding a reference), and by the shrinker (which
//!   kills the dentry, refcount 0 → dead, while holding the bucket lock).
//!   Hence a dentry found under a bucket lock is never dead.
//! - Concurrent misses of one name on a backend share one backend call
//!   (`in_lookup.rs`); unused entries of backend-served instances are not
//!   pinned, so code that inserts under such a directory pins it first.
//! - Freeing goes through the epoch collector; final puts walk up parents
//!   iteratively, never recursively. With deferral on, a kill queues the
//!   dead dentry or inode instead (defer/), freed in batches.
//! - A put that leaves a hashed dentry at 0 already on its LRU takes no
//!   lock (`fastput.rs`); the shrinker's kill attempt after unlinking one
//!   is therefore `try_kill_publishing`.

pub mod dentry;
pub mod fastput;
pub mod hash;
pub mod hot;
pub mod in_lookup;
pub mod name;
pub mod walk;

use crate::fs::SuperBlock;
use crate::inode::Inode;
use crate::sync::atomic::Ordering;
use crate::vfs::VfsInner;
use dentry::{Dentry, D_HASHED};
use hash::{Bucket, GrowFrom, LockedBucket};
use name::{bucket_hash, NameKey};

/// Result of a lock-free lookup.
pub(crate) enum RcuLookup {
    /// Found, with the `seq` value to validate later.
    Found(*const Dentry, u32),
    /// No dentry in the chain (may be spurious: confirm with `lookup_slow`).
    Miss,
}

/// Negative dentries beyond this many per superblock are reclaimed (oldest
/// first) when a new one is added.
pub const DEFAULT_MAX_UNUSED_DENTRIES: usize = 1 << 16;

// SAFETY helper: every `unsafe { &*d }` on a dentry pointer in this module
// relies on the caller's epoch guard (or a held reference) keeping it
// allocated; the functions say which.
impl VfsInner {
    /// The bucket of (parent, name hash) in the current array, for a
    /// lock-free reader. Caller holds an epoch guard (the table's arrays
    /// are retired through it).
    #[inline(always)]
    pub(crate) fn bucket_of(&self, parent: *const Dentry, hash: u32) -> &Bucket<Dentry> {
        debug_assert!(crate::sync::epoch::is_pinned());
        // SAFETY: the caller's guard; `grow_dcache` retires arrays through
        // the collector.
        unsafe { self.dcache.bucket(bucket_hash(parent, hash)) }
    }

    /// Locks the bucket of (parent, name hash). Caller holds an epoch
    /// guard for as long as it holds the lock.
    #[inline]
    pub(crate) fn lock_bucket(&self, parent: *const Dentry, hash: u32) -> LockedBucket<'_, Dentry> {
        debug_assert!(crate::sync::epoch::is_pinned());
        // SAFETY: as in `bucket_of`.
        unsafe { self.dcache.lock(bucket_hash(parent, hash)) }
    }

    /// `lock_bucket` if the lock is free (and no resize is replacing the
    /// array), else `None`.
    fn try_lock_bucket(
        &self,
        parent: *const Dentry,
        hash: u32,
    ) -> Option<LockedBucket<'_, Dentry>> {
        debug_assert!(crate::sync::epoch::is_pinned());
        // SAFETY: as in `bucket_of`.
        unsafe { self.dcache.try_lock(bucket_hash(parent, hash)) }
    }

    /// Grows the dentry hash table when an insert asked for it (`grow`,
    /// from `LockedBucket::push_front`). Caller holds no bucket lock and an
    /// epoch guard.
    #[inline(always)]
    pub(crate) fn grow_dcache(&self, grow: Option<GrowFrom>) {
        if let Some(from) = grow {
            self.grow_dcache_now(from);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_dcache_now(&self, from: GrowFrom) {
        // SAFETY: no bucket lock held (caller), and every user of the table
        // holds a guard (`bucket_of`, `lock_bucket`).
        if let Some(old) = unsafe { self.dcache.grow(from) } {
            // SAFETY: a fresh box; the replaced array is unreachable for
            // readers that load `current` from now on.
            unsafe { self.collector.retire_box_now(Box::into_raw(Box::new(old))) };
        }
    }

    /// Shrinks the dentry hash table to the names it now holds
    /// (`ChainTable::shrink_to_fit`): reclaim's last step, once the names
    /// it freed are out of the table.
    pub(crate) fn shrink_dcache(&self) {
        let _guard = self.collector.enter();
        // SAFETY: no bucket lock held here, and every user of the table
        // holds a guard (`bucket_of`, `lock_bucket`).
        if let Some(old) = unsafe { self.dcache.shrink_to_fit() } {
            // SAFETY: as in `grow_dcache_now`.
            unsafe { self.collector.retire_box_now(Box::into_raw(Box::new(old))) };
        }
    }

    /// Lock-free lookup of `key` in `parent` (a resize running meanwhile
    /// can make it miss, as a rename can). Caller holds an epoch guard.
    #[inline(always)]
    pub(crate) fn lookup_rcu(&self, parent: *const Dentry, key: &NameKey<'_>) -> RcuLookup {
        let hl = key.hash_len();
        let bucket = self.bucket_of(parent, key.hash);
        let hint = bucket.prefetch_hint() as *const u8;
        if !hint.is_null() {
            crate::mem::prefetch(hint);
            crate::mem::prefetch(hint.wrapping_add(64));
        }
        let mut p = bucket.first();
        while !p.is_null() {
            // SAFETY: chain nodes are freed only through the epoch collector
            // and the caller holds a guard.
            let d = unsafe { &*p };
            // `seq` first, so everything compared below is validated by the
            // caller's retry check (the name included: a rename may change
            // it under us; an odd count always fails that check). Same line
            // as `hash_len`: no extra miss for the nodes that do not match.
            let seq = d.seq.read_begin_even();
            if d.hash_len() == hl
                && std::ptr::eq(d.parent_ptr(), parent)
                && d.name_eq_same_hash_len(key)
            {
                return RcuLookup::Found(p, seq);
            }
            // Acquire: pairs with the release that linked the next node.
            p = d.chain_next_ptr();
        }
        RcuLookup::Miss
    }

    /// Exact lookup with the bucket locked; returns null if absent. Caller
    /// holds an epoch guard.
    fn lookup_in_locked_bucket(
        guard_first: *const Dentry,
        parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> *const Dentry {
        let mut p = guard_first;
        while !p.is_null() {
            // SAFETY: under the bucket lock, chain nodes are live.
            let d = unsafe { &*p };
            if std::ptr::eq(d.parent_ptr(), parent) && d.name_eq(key) {
                return p;
            }
            p = d.chain_next_ptr();
        }
        core::ptr::null()
    }

    /// The slow lookup of a name in directory `parent` (inode `dir`), called
    /// after a lock-free miss or failed validation. Takes the directory lock
    /// shared; asks the backend when the dcache is not authoritative; caches
    /// the answer (possibly as a negative dentry). Returns the dentry and a
    /// `seq` to validate; no reference is taken. Caller holds an epoch guard.
    ///
    /// Concurrent misses on one name share one backend call: the first
    /// claims the name in the in-lookup table (`in_lookup.rs`), the others
    /// park until it has published its answer. A backend error other than
    /// ENOENT is returned to the leader and its waiters and is not cached.
    ///
    /// `Ok(None)`: `parent` was reclaimed meanwhile (an unused entry of a
    /// backend-served instance can be; tmpfs pins every name, so its
    /// directories are live while their lock shows them not dead), or its
    /// mount `mnt` went (the last, lazily) since the walk crossed it; the
    /// caller walks again. For backend-served instances references on
    /// `parent` and on `mnt` are held while a child is inserted: the
    /// instance's teardown waits for the last mount reference, and its
    /// cached entries are in no directory index for the teardown to mark
    /// (a tmpfs's teardown marks its directories dead instead, which this
    /// checks under the directory's lock: `kill_superblock`).
    pub(crate) fn lookup_slow(
        &self,
        mnt: *const crate::mount::Mount,
        parent: *const Dentry,
        dir: &Inode,
        key: &NameKey<'_>,
    ) -> crate::abi::SysResult<Option<(*const Dentry, u32)>> {
        // SAFETY: the caller's guard keeps `parent` and its superblock
        // allocated.
        let pd = unsafe { &*parent };
        if !unsafe { &*pd.sb }.backend_served {
            return self.lookup_slow_pinned(parent, dir, key).map(Some);
        }
        if !self.mntget_rcu(mnt) {
            return Ok(None);
        }
        if !pd.refcount.get() {
            self.mntput(mnt);
            return Ok(None);
        }
        let r = self.lookup_slow_pinned(parent, dir, key);
        self.dput(parent);
        self.mntput(mnt);
        r.map(Some)
    }

    /// `lookup_slow` with `parent` kept live by the caller (a reference, or
    /// tmpfs's pinning).
    fn lookup_slow_pinned(
        &self,
        parent: *const Dentry,
        dir: &Inode,
        key: &NameKey<'_>,
    ) -> crate::abi::SysResult<(*const Dentry, u32)> {
        let index = dir.dir_index().ok_or(crate::abi::Errno::ENOTDIR)?;
        let locked = index.read();
        if locked.is_dead() {
            return Err(crate::abi::Errno::ENOENT);
        }
        // SAFETY: the caller keeps `parent` live.
        let pd = unsafe { &*parent };
        let sb = unsafe { &*pd.sb };
        if let Some(found) = self.lookup_cached_locked(parent, key) {
            return Ok(found);
        }
        if sb.fs.dcache_is_authoritative() {
            let d = self.cache_lookup_answer(sb, parent, key, None, 0)?;
            // SAFETY: see `cache_lookup_answer`.
            let seq = unsafe { &*d }.seq.read_begin();
            drop(locked);
            return Ok((d, seq));
        }
        loop {
            let leader = match self
                .in_lookup
                .claim(parent as usize, key.hash_len(), key.bytes)
            {
                in_lookup::Claim::Leader(l) => l,
                in_lookup::Claim::Waited(in_lookup::Outcome::Failed(e)) => return Err(e),
                in_lookup::Claim::Waited(_) => {
                    // The answer is cached now (or the leader gave up).
                    if let Some(found) = self.lookup_cached_locked(parent, key) {
                        return Ok(found);
                    }
                    continue;
                }
            };
            // A leader that finished between our miss and our claim has
            // published its answer already: no second backend call.
            if let Some(found) = self.lookup_cached_locked(parent, key) {
                leader.complete(in_lookup::Outcome::Done);
                return Ok(found);
            }
            // The answer's time is taken before asking: it describes the
            // backend at some moment after this (`Filesystem::dir_vouches`).
            let asked_at = precise_monotonic_ns();
            let found = match sb.fs.lookup(sb, dir, key.bytes) {
                Ok(found) => found,
                // ENOENT is an answer ("no such name"): cache it negative.
                Err(crate::abi::Errno::ENOENT) => None,
                Err(e) => {
                    leader.complete(in_lookup::Outcome::Failed(e));
                    return Err(e);
                }
            };
            let d = match self.cache_lookup_answer(sb, parent, key, found, asked_at) {
                Ok(d) => d,
                Err(e) => {
                    leader.complete(in_lookup::Outcome::Failed(e));
                    return Err(e);
                }
            };
            // SAFETY: see `cache_lookup_answer`.
            let seq = unsafe { &*d }.seq.read_begin();
            leader.complete(in_lookup::Outcome::Done);
            drop(locked);
            return Ok((d, seq));
        }
    }

    /// The cached dentry for (parent, key) and its `seq`, scanning with the
    /// bucket locked. Caller holds an epoch guard and `parent`'s directory
    /// lock (shared or exclusive).
    fn lookup_cached_locked(
        &self,
        parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> Option<(*const Dentry, u32)> {
        let b = self.lock_bucket(parent, key.hash);
        let found = Self::lookup_in_locked_bucket(b.first(), parent, key);
        // SAFETY: live under the bucket lock (module invariant).
        (!found.is_null()).then(|| (found, unsafe { &*found }.seq.read_begin()))
    }

    /// Caches a lookup's answer (`found` None: negative), obtained
    /// from a backend asked at `asked_at` (`precise_monotonic_ns`), as a
    /// fresh unused dentry and returns it; if one appeared meanwhile, drops
    /// the backend's inode reference and returns that one. Caller holds the
    /// directory lock shared and an epoch guard: the returned dentry is
    /// hashed and cannot be moved or removed except by the shrinker, which
    /// the guard covers.
    fn cache_lookup_answer(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
        found: Option<crate::fs::FoundInode>,
        asked_at: u64,
    ) -> crate::abi::SysResult<*const Dentry> {
        let inode = found.map_or(core::ptr::null(), |f| f.inode);
        if !inode.is_null() && found.is_some_and(|f| f.fresh) {
            // The admission below then makes room for it and the dentry
            // together.
            // SAFETY: a fresh inode is the backend's and ours alone.
            unsafe { self.adopt_backend_inode(inode) };
        }
        // A new dentry is charged to the caller's group: make room first
        // (ENOMEM only if its limit holds nothing reclaimable).
        if let Err(e) = self.admit(
            crate::reclaim::KIND_BYTES[0] as u64,
            crate::abi::Errno::ENOMEM,
        ) {
            if !inode.is_null() {
                self.iput(inode);
            }
            return Err(e);
        }
        let (d, inserted) = self.insert_dentry(sb, parent, key, inode, 0);
        if inserted {
            if sb.revalidate_ttl_ns.is_some() {
                // SAFETY: hashed under our directory lock and guard.
                let dr = unsafe { &*d };
                // Relaxed: pairs with nothing. Every value ever stored
                // (0 before this store, later ones by `fetch_max` in
                // revalidation) is a time at which the answer was known to
                // hold, so whichever one a reader sees is a true claim
                // (`dir_vouches` relies on that); nothing else is
                // published through it.
                dr.cookie.store(asked_at, Ordering::Relaxed);
                dr.set_flag(dentry::D_REVALIDATE);
            }
            // A fresh dentry at count zero: cached, reclaimable.
            self.lru_add(sb, d);
        } else if !inode.is_null() {
            // Lost a race with another miss: drop the backend's reference.
            self.iput(inode);
        }
        Ok(d)
    }

    /// Counts a backend's fresh inode and charges it to the caller's group
    /// (`iput` uncounts and uncharges it, as any inode).
    ///
    /// # Safety
    /// `inode` was just made by the backend (`Filesystem::lookup`,
    /// `tmpfile`) and no one else references it yet.
    pub(crate) unsafe fn adopt_backend_inode(&self, inode: *const Inode) {
        self.stats.inodes.inc();
        let group = self.charge(crate::reclaim::ObjKind::Inode);
        // SAFETY: the caller's contract: ours alone.
        unsafe { (*(inode as *mut Inode)).group = group };
    }

    /// Inserts a new dentry for (parent, key) unless one exists. Returns the
    /// dentry and whether it is new. A new one starts with `refs` references
    /// and takes one on `parent` (which the caller keeps alive). Existing
    /// ones get no reference.
    pub(crate) fn insert_dentry(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
        inode: *const Inode,
        refs: u32,
    ) -> (*const Dentry, bool) {
        let b = self.lock_bucket(parent, key.hash);
        let found = Self::lookup_in_locked_bucket(b.first(), parent, key);
        if !found.is_null() {
            return (found, false);
        }
        let d = self.new_dentry(sb, parent, key, inode, refs);
        self.link(b, d);
        (d, true)
    }

    /// Inserts a new dentry for (parent, key) that the caller knows is
    /// absent: it holds the parent's directory lock exclusively and found no
    /// live dentry for the name. Same contract as `insert_dentry` otherwise.
    pub(crate) fn insert_new_dentry(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
        inode: *const Inode,
        refs: u32,
    ) -> *const Dentry {
        let d = self.new_dentry(sb, parent, key, inode, refs);
        self.hash_fresh(d, parent, key)
    }

    /// Hashes a fresh dentry for (parent, key) and reports a positive one
    /// to the name observers. Caller holds the parent's directory lock
    /// exclusively, and the name is absent.
    #[inline(always)]
    fn hash_fresh(
        &self,
        d: *const Dentry,
        parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> *const Dentry {
        let b = self.lock_bucket(parent, key.hash);
        debug_assert!(Self::lookup_in_locked_bucket(b.first(), parent, key).is_null());
        self.link(b, d);
        // SAFETY: fresh and hashed; the caller keeps the parent locked.
        let dr = unsafe { &*d };
        if !dr.inode_ptr().is_null() {
            self.watchers.changed(dr);
        }
        d
    }

    /// A fresh negative dentry for (parent, key), not hashed: made before
    /// the directory lock by a create, named under it by
    /// `link_prepared_dentry` or put if unused. `None` if `parent` is
    /// dying (no directory lock keeps it alive here). Its reference on
    /// `parent` is taken now.
    pub(crate) fn new_unhashed_dentry(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> Option<*const Dentry> {
        // SAFETY: the caller's guard keeps `parent` allocated.
        if !unsafe { &*parent }.refcount.get() {
            return None;
        }
        self.stats.dentries.inc();
        Some(self.alloc_dentry(sb, parent, key, core::ptr::null(), 1))
    }

    /// Names `inode` with a dentry from `new_unhashed_dentry` (whose
    /// parent and key these are): `insert_new_dentry` with the allocation
    /// done. Same contract (parent locked exclusively, name absent).
    pub(crate) fn link_prepared_dentry(
        &self,
        d: *const Dentry,
        parent: *const Dentry,
        key: &NameKey<'_>,
        inode: *const Inode,
    ) -> *const Dentry {
        // SAFETY: ours alone until linked below.
        let dr = unsafe { &*d };
        dr.set_flag(dentry::type_flags(inode));
        // Relaxed: published by the Release that links the dentry.
        dr.inode.store(inode as *mut Inode, Ordering::Relaxed);
        self.hash_fresh(d, parent, key)
    }

    /// Binds `inode` (whose reference passes to it) to a dentry from
    /// `new_unhashed_dentry` that stays unhashed and out of its parent's
    /// index: an O_TMPFILE file's (process/tmpfile.rs). `extra` flags are
    /// set with the type flags.
    pub(crate) fn bind_unhashed(&self, d: *const Dentry, inode: *const Inode, extra: u32) {
        // SAFETY: ours alone: unhashed, and in no file yet.
        let dr = unsafe { &*d };
        dr.set_flag(dentry::type_flags(inode) | extra);
        // Release: pairs with the acquire in `Dentry::inode_ptr`.
        dr.inode.store(inode as *mut Inode, Ordering::Release);
    }

    /// A fresh dentry holding a reference on `parent`, which the caller
    /// keeps alive (directory lock held, directory not dead).
    fn new_dentry(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
        inode: *const Inode,
        refs: u32,
    ) -> *const Dentry {
        // SAFETY: the caller keeps `parent` alive, so it is not dead.
        let got = unsafe { &*parent }.refcount.get();
        debug_assert!(got, "parent of a new dentry must be live");
        self.stats.dentries.inc();
        self.alloc_dentry(sb, parent, key, inode, refs)
    }

    /// A charged dentry, built in its slab object (`Dentry::alloc`: head
    /// and tail written in place, the name's words stored only as far as
    /// the name goes; built first and moved, a dentry cost a `memcpy` per
    /// create).
    fn alloc_dentry(
        &self,
        sb: &SuperBlock,
        parent: *const Dentry,
        key: &NameKey<'_>,
        inode: *const Inode,
        refs: u32,
    ) -> *const Dentry {
        // The fast walk relies on it (its lookup of a dot name must miss).
        debug_assert!(
            !name::is_dot_or_dotdot(key.bytes),
            "a dentry named {:?}",
            key.bytes
        );
        let group = self.charge(crate::reclaim::ObjKind::Dentry);
        Dentry::alloc(sb, parent, key, inode, refs, group)
    }

    /// Publishes a fresh dentry in its locked bucket (`b`, locked for its
    /// parent and name), unlocks it, and grows the table if the insert
    /// asked for that (which needs the bucket unlocked).
    fn link(&self, mut b: LockedBucket<'_, Dentry>, d: *const Dentry) {
        // SAFETY: `d` is a fresh allocation, not in any chain.
        let grow = unsafe {
            (*d).set_flag(D_HASHED);
            b.push_front(d)
        };
        drop(b);
        self.grow_dcache(grow);
    }

    /// Makes a negative dentry positive. Caller holds the parent's directory
    /// lock exclusively and a reference on `d`.
    pub(crate) fn instantiate(&self, d: &Dentry, inode: *const Inode) {
        // SAFETY: a dentry's superblock outlives it.
        let sb = unsafe { &*d.sb };
        sb.lru.remove(d);
        d.seq.write_begin();
        d.set_flag(dentry::type_flags(inode));
        // Release: pairs with the acquire in `Dentry::inode_ptr`.
        d.inode.store(inode as *mut Inode, Ordering::Release);
        d.seq.write_end();
        self.bucket_of(d.parent_ptr(), (d.hash_len() >> 32) as u32)
            .refresh_hint(d);
        self.watchers.changed(d);
    }

    /// Removes a hashed dentry's name (unlink, rmdir, the target of a
    /// rename). Caller holds the parent's directory lock exclusively.
    pub(crate) fn unhash(&self, d: &Dentry) {
        let b = self.lock_bucket(d.parent_ptr(), (d.hash_len() >> 32) as u32);
        self.unhash_locked(d, b);
    }

    /// `unhash` with `d`'s bucket already locked (`b`, from
    /// `lookup_exact_locked`): unlink takes the bucket lock once for its
    /// lookup and the removal.
    pub(crate) fn unhash_locked(&self, d: &Dentry, b: LockedBucket<'_, Dentry>) {
        // `d` is in this bucket's chain: its parent and name change only
        // under the directory lock the caller holds.
        unhash_from_chain(d, b);
        self.watchers.changed(d);
    }

    /// Moves a hashed dentry to (new_parent, key). Caller holds both
    /// directory locks exclusively and the rename seqcount write section, and
    /// has moved the parent reference. `Some` asks the caller for
    /// `grow_dcache` once it has left the write section (a resize there
    /// would keep every walk that samples the seqcount retrying).
    #[must_use]
    pub(crate) fn d_move(
        &self,
        d: &Dentry,
        new_parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> Option<GrowFrom> {
        // As in `alloc_dentry`.
        debug_assert!(
            !name::is_dot_or_dotdot(key.bytes),
            "a dentry renamed {:?}",
            key.bytes
        );
        let old_place = self.watchers.place_of(d);
        let old_name = {
            let mut b = self.lock_bucket(d.parent_ptr(), (d.hash_len() >> 32) as u32);
            let removed = b.remove(d);
            debug_assert!(removed);
            // The new place is stored under the old chain's lock: the
            // shrinker re-reads an unused dentry's place under the lock of
            // the chain it read (`isolate_and_free`), so it sees the
            // dentry in that chain or its new place.
            d.seq.write_begin();
            // Release: pairs with the acquire in `parent_ptr`.
            d.parent.store(new_parent as *mut Dentry, Ordering::Release);
            let old_name = d.store_name(key);
            d.seq.write_end();
            old_name
        };
        let grow = {
            let mut b = self.lock_bucket(new_parent, key.hash);
            // SAFETY: `d` was just removed from its old chain, and its new
            // parent and name are those of this bucket.
            unsafe { b.push_front(d) }
        };
        self.watchers.notify_at(old_place);
        self.watchers.changed(d);
        if !old_name.is_null() {
            // SAFETY: the swap in `store_name` unlinked the buffer; readers
            // that loaded it hold guards.
            unsafe { self.collector.retire_box(old_name) };
        }
        grow
    }

    /// Takes a reference on a dentry found lock-free at `seq`; fails if it is
    /// dead or changed since. Caller holds an epoch guard.
    pub(crate) fn dget_validated(&self, d: *const Dentry, seq: u32) -> bool {
        // SAFETY: the caller's guard keeps `d` allocated.
        let dr = unsafe { &*d };
        if !dr.refcount.get() {
            return false;
        }
        if dr.seq.read_retry(seq) {
            self.dput(d);
            return false;
        }
        true
    }

    /// Takes a reference on a dentry the caller already keeps alive.
    pub(crate) fn dget(&self, d: *const Dentry) {
        // SAFETY: the caller holds a reference or the directory lock.
        let ok = unsafe { &*d }.refcount.get();
        debug_assert!(ok, "dget of a dead dentry");
    }

    /// Drops a reference. The last reference to an unhashed dentry kills it
    /// and drops its parent's reference in turn (a loop, not recursion); a
    /// hashed one stays cached on the LRU.
    pub(crate) fn dput(&self, mut d: *const Dentry) {
        // The guard must be taken before the put: once the count is zero the
        // shrinker may free a hashed dentry, and we still read it below.
        let _guard = self.collector.enter();
        loop {
            // SAFETY: the caller owned a reference, so `d` is allocated.
            let dr = unsafe { &*d };
            if !dr.refcount.put() {
                return;
            }
            if self.keep_cached(d) {
                return;
            }
            if !dr.refcount.try_kill() {
                return;
            }
            if self.defer.active() {
                return self.defer_put(crate::defer::Deferred::Dentry(d));
            }
            match self.free_dentry(d) {
                Some(parent) => d = parent,
                None => return,
            }
        }
    }

    /// After a put left `d` (allocated under the caller's guard) at zero:
    /// true if it stays cached — hashed, and on its list already (no lock:
    /// fast_dput, fastput.rs; marked referenced once for the shrinker's
    /// second chance) or added now. False: unhashed, the caller kills it.
    pub(crate) fn keep_cached(&self, d: *const Dentry) -> bool {
        // SAFETY: see above.
        let dr = unsafe { &*d };
        if fastput::cached_on_lru(&dr.flags) {
            if dr.flags() & dentry::D_REFERENCED == 0 {
                dr.set_flag(dentry::D_REFERENCED);
            }
            return true;
        }
        if dr.is_hashed() {
            // SAFETY: a dentry's superblock outlives it.
            self.lru_add(unsafe { &*dr.sb }, d);
            return true;
        }
        false
    }

    /// Frees a killed, unhashed dentry: drops its inode, retires it, and
    /// returns the parent whose reference the caller must now drop.
    pub(crate) fn free_dentry(&self, d: *const Dentry) -> Option<*const Dentry> {
        // SAFETY: the caller won the kill, so nobody else frees `d`.
        let dr = unsafe { &*d };
        if dr.flags() & dentry::D_ON_LRU != 0 {
            // SAFETY: a dentry's superblock outlives it.
            unsafe { &*dr.sb }.lru.remove(dr);
        }
        let (inode, parent) = self.unaccount_dentry(dr);
        let d = d as *mut Dentry;
        if !inode.is_null() && self.put_inode(inode) {
            // SAFETY: the dentry as in `release_dentry`; the inode was named
            // only by it (its last reference), and readers that reached it
            // through the dentry hold guards. One retire for the pair: the
            // inode of an unlinked file usually dies with its dentry.
            unsafe { self.collector.retire_slab_pair(d, inode as *mut Inode) };
        } else {
            // SAFETY: as in `release_dentry`.
            unsafe { self.collector.retire_slab(d) };
        }
        self.stats.dentries.dec();
        (!parent.is_null()).then_some(parent)
    }

    /// The per-dentry part of freeing a killed dentry that is unhashed and
    /// off its list: uncharges and retires it. Returns its inode and parent,
    /// whose references the caller drops, and leaves the dentry count to
    /// the caller (the batched drain updates it once per batch).
    pub(crate) fn release_dentry(&self, dr: &Dentry) -> (*const Inode, *const Dentry) {
        let found = self.unaccount_dentry(dr);
        // SAFETY: unhashed, off the list and dead: no new reader can reach
        // it; current readers hold guards.
        unsafe {
            self.collector
                .retire_slab(dr as *const Dentry as *mut Dentry)
        };
        found
    }

    /// `release_dentry` but the retire: uncharges the dentry, returns its
    /// inode and parent.
    fn unaccount_dentry(&self, dr: &Dentry) -> (*const Inode, *const Dentry) {
        if dr.flags() & dentry::D_EXPORTED != 0 {
            // A handle reaches an exported dentry until it is freed (an
            // unlinked file kept open included, as on Linux): fs/export.rs.
            // SAFETY: an exported dentry is positive and keeps its inode;
            // a dentry's superblock outlives it.
            let ino = unsafe { &*dr.inode_ptr() }.ino;
            unsafe { &*dr.sb }.exports.remove_alias(ino, dr);
        }
        self.uncharge(dr.group, crate::reclaim::ObjKind::Dentry);
        let inode = dr.inode_ptr();
        // dentry_unlink_inode's fsnotify_inoderemove: the last dentry of
        // an inode with no name left.
        // SAFETY: a positive dentry keeps its inode.
        if !inode.is_null() && self.notify_active() && unsafe { &*inode }.nlink_at_rest() == 0 {
            self.notify_removed(inode);
        }
        (inode, dr.parent_ptr())
    }

    /// Puts an unused hashed dentry on its superblock's list for its group
    /// (a put of one already there marks it referenced: second chance),
    /// shrinking the list when it is over its bound.
    pub(crate) fn lru_add(&self, sb: &SuperBlock, d: *const Dentry) {
        // SAFETY: the caller (dput) holds an epoch guard taken before its
        // put, so `d` is allocated even if the shrinker freed it meanwhile.
        let dr = unsafe { &*d };
        let group = self.reclaim.groups.live(dr.group).id;
        let list = sb.lru.list_for(group);
        let over = {
            let mut l = list.lock();
            // Re-check under the list lock that it is still hashed and
            // unused before linking it.
            if dr.is_hashed() && dr.refcount.count() == 0 && !dr.refcount.is_dead() {
                if dr.flags() & dentry::D_ON_LRU != 0 {
                    dr.set_flag(dentry::D_REFERENCED);
                } else if l.add(dr) {
                    // Empty → non-empty: the count is stored; now the bits.
                    self.note_nonempty(group, sb.lru.shrinker_id());
                }
            }
            l.len() > self.config.max_unused_dentries
        };
        if over {
            self.shrink_dentry_list(list, 64, false);
        }
    }

    /// Isolates and frees up to `nr` dentries from the cold end of `list`
    /// (Linux's `dentry_lru_isolate`): a referenced one gets a second chance
    /// (rotated, flag cleared), one whose bucket lock is busy is skipped
    /// (rotated), one in use again leaves the list (its last put re-adds
    /// it). `force` (teardown) waits for bucket locks and ignores the
    /// referenced flag. A freed dentry's parent that its put leaves unused
    /// is freed too, and so on up (`put_parent_reclaiming`). Returns how
    /// many were freed.
    pub(crate) fn shrink_dentry_list(
        &self,
        list: &crate::reclaim::list_lru::DentryList,
        nr: usize,
        force: bool,
    ) -> usize {
        let mut parents = Vec::new();
        let mut freed = 0;
        {
            // A freed dentry's inode put may queue: no drain (which puts
            // dentries onto lists) while this list is locked.
            let _hold = self.hold_drains();
            let mut l = list.lock();
            for _ in 0..nr {
                let p = l.oldest();
                if p.is_null() {
                    break;
                }
                // SAFETY: on the list, hence not freed (list invariant).
                let d = unsafe { &*p };
                if !force && d.flags() & dentry::D_REFERENCED != 0 {
                    d.clear_flag(dentry::D_REFERENCED);
                    l.rotate(d);
                    continue;
                }
                match self.isolate_and_free(&mut l, p, force) {
                    Isolated::Busy => l.rotate(d),
                    Isolated::InUse => {}
                    Isolated::Freed(parent) => {
                        parents.extend(parent);
                        freed += 1;
                    }
                }
            }
        }
        for parent in parents {
            freed += self.put_parent_reclaiming(parent, force);
        }
        freed
    }

    /// Takes `p`, unused on `l` (its list, locked by the caller), off the
    /// list and frees it: unless its bucket lock is busy (`force` off: it
    /// stays) or it is in use again (its last put re-adds it).
    fn isolate_and_free(
        &self,
        l: &mut crate::reclaim::list_lru::LockedList<'_>,
        p: *const Dentry,
        force: bool,
    ) -> Isolated {
        // SAFETY: on the list, hence not freed (list invariant).
        let d = unsafe { &*p };
        let (parent, hash) = (d.parent_ptr(), (d.hash_len() >> 32) as u32);
        let b = if force {
            Some(self.lock_bucket(parent, hash))
        } else {
            self.try_lock_bucket(parent, hash)
        };
        let Some(b) = b else {
            return Isolated::Busy;
        };
        // A backend's rename moves an unused dentry (pinned while it moves,
        // unused before and after): one moved since we read its place is
        // in another chain. `d_move` stores the new place under the old
        // chain's lock, so under this lock a dentry still placed here is in
        // this chain, or has not reached it yet and is pinned by its mover,
        // whose pin fails the kill below.
        if d.parent_ptr() != parent || (d.hash_len() >> 32) as u32 != hash {
            return Isolated::Busy;
        }
        l.remove(d);
        // Publishing: a racing last put must see D_ON_LRU cleared
        // (fastput.rs).
        if !d.is_hashed() || !d.refcount.try_kill_publishing() {
            return Isolated::InUse;
        }
        // Hashed, placed in this chain, and now dead: no mover can pin it,
        // so it is in this chain (see above). No watcher hears of it:
        // dropping a cached name changes no name.
        unhash_from_chain(d, b);
        Isolated::Freed(self.free_dentry(p))
    }

    /// The reclaimer's put of a freed dentry's parent (Linux's
    /// `shrink_kill`): a parent this put leaves unused — a backend's cached
    /// directory whose last cached child went (tmpfs pins its positive
    /// names) — is freed at once, and so on up, instead of waiting on its
    /// list for a later pass: `drop_caches` empties a cached chain in one
    /// call (found by the passthrough differential test: each call freed
    /// one level). It first goes on its list as any unused dentry (another
    /// reclaimer may take it from there), then is isolated from it as the
    /// scan would. Returns how many were freed.
    fn put_parent_reclaiming(&self, mut d: *const Dentry, force: bool) -> usize {
        let _guard = self.collector.enter();
        let mut freed = 0;
        loop {
            // SAFETY: the child owned a reference, so `d` is allocated.
            let dr = unsafe { &*d };
            if !dr.refcount.put() {
                return freed;
            }
            if !self.keep_cached(d) {
                // Unhashed (a removed directory a cached child kept): as dput.
                if !dr.refcount.try_kill() {
                    return freed;
                }
                if self.defer.active() {
                    self.defer_put(crate::defer::Deferred::Dentry(d));
                    return freed + 1;
                }
                freed += 1;
                match self.free_dentry(d) {
                    Some(parent) => d = parent,
                    None => return freed,
                }
                continue;
            }
            // Relaxed: re-checked under the list's lock (`holds`), which
            // orders it, as in `DentryLru::remove`.
            let list = dr.lru_list.load(core::sync::atomic::Ordering::Relaxed);
            // SAFETY: lists live as long as the superblock, which outlives
            // its dentries; null when another reclaimer took `d` off.
            let Some(list) = (unsafe { list.as_ref() }) else {
                return freed;
            };
            // As in `shrink_dentry_list`.
            let _hold = self.hold_drains();
            let mut l = list.lock();
            if !l.holds(dr) {
                return freed;
            }
            match self.isolate_and_free(&mut l, d, force) {
                Isolated::Freed(parent) => {
                    freed += 1;
                    drop(l);
                    match parent {
                        Some(parent) => d = parent,
                        None => return freed,
                    }
                }
                Isolated::Busy | Isolated::InUse => return freed,
            }
        }
    }

    /// Drops a reference to an inode; the last one frees it.
    pub(crate) fn iput(&self, inode: *const Inode) {
        if self.put_inode(inode) {
            // SAFETY: as in `release_inode`.
            unsafe { self.collector.retire_slab(inode as *mut Inode) };
        }
    }

    /// `iput` but the retire: true if this put was the last and the inode
    /// is to be freed now (killed and unaccounted); the caller retires it.
    /// False if it lives on or its free was deferred.
    fn put_inode(&self, inode: *const Inode) -> bool {
        // SAFETY: the caller owned a reference.
        let i = unsafe { &*inode };
        if !(i.refcount.put() && i.refcount.try_kill()) {
            return false;
        }
        if self.defer.active() {
            self.defer_put(crate::defer::Deferred::Inode(inode));
            return false;
        }
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*i.sb };
        let blocks = self.unaccount_inode(i, sb);
        sb.release_inode();
        let _ = sb.charge_blocks(-blocks);
        self.stats.inodes.dec();
        true
    }

    /// The per-inode part of freeing a killed inode: the backend's
    /// eviction, its extended attributes, its page and object charges, and
    /// retiring it. Returns its size in 512-byte blocks; the instance's
    /// inode and space accounting and the inode count are the caller's (the
    /// batched drain updates them once per superblock).
    pub(crate) fn release_inode(&self, i: &Inode, sb: &SuperBlock) -> i64 {
        let blocks = self.unaccount_inode(i, sb);
        // SAFETY: no dentry refers to the inode any more; lock-free readers
        // that loaded it hold guards.
        unsafe { self.collector.retire_slab(i as *const Inode as *mut Inode) };
        blocks
    }

    /// `release_inode` but the retire.
    fn unaccount_inode(&self, i: &Inode, sb: &SuperBlock) -> i64 {
        if i.nlink_at_rest() == 0 {
            sb.orphans.dec();
        }
        if sb.backend_served {
            sb.fs.evict(i);
        }
        sb.xattrs.forget(i.ino);
        sb.acls.forget(i.ino, i.acl_bits_at_rest());
        let blocks = i.blocks_of_dead();
        // A backend-served inode's blocks mirror the host's and were never
        // charged as pages (reclaim/check.rs counts the same way).
        if !sb.backend_served {
            self.charge_pages(i.group, -(blocks / 8));
        }
        self.uncharge(i.group, crate::reclaim::ObjKind::Inode);
        blocks
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the times backend entries record
/// (taken before the backend is asked; compared with a backend's own
/// observation times, so it must not be coarse). The fast walk compares
/// them with the coarse clock of the same base, which trails by at most a
/// tick: an entry then looks fresh for up to a tick longer.
pub(crate) fn precise_monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Monotonic coarse time in nanoseconds (the fast walk's freshness test).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `VfsInner::unmounted_hold`'s answer.
enum Unmounted<'a> {
    /// No mount on the entry or beneath it: drop it while this is held.
    Held(crate::mount::MountsLocked<'a>),
    /// A mount sits on it or beneath it: keep it.
    Mounted,
    /// The mount table is busy: keep it for now.
    Busy,
}

impl VfsInner {
    /// When `d`'s answer needs its backend's word again: (now, when it
    /// was answered); None if it may be used as it is (its instance
    /// revalidates nothing, or the answer is within the TTL).
    pub(crate) fn stale_answer_stamps(d: &Dentry) -> Option<(u64, u64)> {
        // SAFETY: a dentry's superblock outlives it.
        let ttl = unsafe { &*d.sb }.revalidate_ttl_ns?;
        let now = precise_monotonic_ns();
        // Relaxed: see `cache_lookup_answer`.
        let answered_at = d.cookie.load(Ordering::Relaxed);
        (now.saturating_sub(answered_at) >= ttl).then_some((now, answered_at))
    }

    /// Revalidates a cached dentry of a backend that asked for it, found by
    /// a walk in `parent` (inode `dir`) under `key`: Ok(true) if it may be
    /// used; Ok(false) if it was dropped (the walk retries and misses);
    /// a backend error is returned and changes nothing. Caller holds an
    /// epoch guard.
    pub(crate) fn revalidate_dentry(
        &self,
        parent: *const Dentry,
        dir: &Inode,
        d: &Dentry,
        key: &NameKey<'_>,
    ) -> crate::abi::SysResult<bool> {
        let Some((now, answered_at)) = Self::stale_answer_stamps(d) else {
            return Ok(true);
        };
        // SAFETY: a dentry's superblock outlives it.
        let sb = unsafe { &*d.sb };
        let index = dir.dir_index().ok_or(crate::abi::Errno::ENOTDIR)?;
        let valid_at = {
            let shared = index.read();
            // A name in a directory vfscale removed (reached through a
            // bind of it, or a cwd in it) is gone, as lookups in Linux's
            // dead directories are; it is not dropped (`unhash_if_still`
            // leaves a dead directory's names), so answering "invalid"
            // would send the walk back to it forever.
            if shared.is_dead() {
                return Err(crate::abi::Errno::ENOENT);
            }
            if !d.is_hashed() || !core::ptr::eq(d.parent_ptr(), parent) {
                return Ok(false);
            }
            // SAFETY: a dentry's inode lives as long as the dentry, which
            // the caller's guard keeps allocated.
            let cached = unsafe { d.inode_ptr().as_ref() };
            // A miss may be vouched for by its unchanged directory; a
            // positive entry's attributes need the backend's word on the
            // name itself (a write changes a file, not its directory).
            let vouched = match cached {
                None => sb.fs.dir_vouches(sb, dir, answered_at)?,
                Some(_) => None,
            };
            match vouched {
                Some(at) => Some(at),
                None => sb.fs.revalidate(sb, dir, key.bytes, cached)?.then_some(now),
            }
        };
        if let Some(at) = valid_at {
            // Relaxed: as above. Never moved back (a racing revalidation
            // may have stored a later time).
            d.cookie.fetch_max(at, Ordering::Relaxed);
            return Ok(true);
        }
        // A reference keeps the shrinker from killing it under us (it only
        // kills unused entries); a dead one is gone already.
        if !d.refcount.get() {
            return Ok(false);
        }
        {
            let no_mounts = match self.unmounted_hold(d) {
                Unmounted::Held(list) => list,
                Unmounted::Mounted => {
                    // Trusted for another TTL, as a valid answer would be.
                    d.cookie.fetch_max(now, Ordering::Relaxed);
                    self.dput(d);
                    return Ok(true);
                }
                Unmounted::Busy => {
                    self.dput(d);
                    return Ok(true);
                }
            };
            self.unhash_if_still(dir, parent, key, d, no_mounts);
        }
        // Unhashed, our put is the last unless someone else uses it (their
        // put frees it then).
        self.dput(d);
        Ok(false)
    }

    /// Before a cached entry its backend no longer vouches for is dropped
    /// by a revalidation: whether a mount sits on `d` or on an entry
    /// beneath it, which then stays cached. Dropping it would leave those
    /// mounts where no walk reaches them: listed, never unmountable, their
    /// mountpoints holding the dropped entry's parent. Linux since 3.18
    /// detaches such mounts lazily (`d_invalidate`); vfscale keeps them
    /// where they are, as Linux did before: a directory removed on the
    /// host stays the mountpoint it was until it is unmounted
    /// (docs/COMPATIBILITY.md). Without a mount, the mount table's lock,
    /// which keeps one from being attached on `d` until the caller has
    /// dropped it (a mount on a dropped entry is refused: ENOENT). The lock
    /// is only tried (it is the outermost, and a walk may hold directory
    /// locks): while the table is busy the entry is kept, to be asked
    /// about again at its next use. (`forget_name`, which runs with no
    /// lock held, waits for the table's lock instead.)
    fn unmounted_hold(&self, d: &Dentry) -> Unmounted<'_> {
        if d.flags() & dentry::D_MOUNTED != 0 {
            return Unmounted::Mounted;
        }
        let Some(list) = self.try_lock_mounts() else {
            return Unmounted::Busy;
        };
        if Self::mounted_at_or_beneath(&list, d) {
            Unmounted::Mounted
        } else {
            Unmounted::Held(list)
        }
    }

    /// Whether a mount sits on the directory `d` or on an entry beneath
    /// it. A backend's rmdir and rename refuse such a victim with EBUSY
    /// (`process/backend_names.rs`): its host directory may be empty, or
    /// gone, while vfscale still keeps names in it for the mounts
    /// (`unmounted_hold`), and removing it would leave those mounts where
    /// no walk reaches them. Takes the table's lock: the caller holds no
    /// directory lock.
    pub(crate) fn mounts_beneath(&self, d: &Dentry) -> bool {
        Self::any_mount_beneath(&self.lock_mounts(), d)
    }

    /// Whether `d` is a mountpoint or, a directory, has one beneath it,
    /// under the table's lock `list`.
    pub(crate) fn mounted_at_or_beneath(list: &crate::mount::MountsLocked<'_>, d: &Dentry) -> bool {
        d.flags() & dentry::D_MOUNTED != 0 || Self::any_mount_beneath(list, d)
    }

    /// `mounts_beneath` under the table's lock `list`.
    fn any_mount_beneath(list: &crate::mount::MountsLocked<'_>, d: &Dentry) -> bool {
        // Under the table's lock: mounts are attached, and their
        // mountpoints (which they hold) and those entries' parents alive.
        // Only a directory has entries beneath it, and only mounts on its
        // own instance can be on them.
        d.flags() & dentry::D_TYPE_DIR != 0
            && list.iter().any(|&m| {
                // SAFETY: attached mounts are live under the table lock.
                let mut x = unsafe { &*(m as *const crate::mount::Mount) }.mountpoint_ptr();
                // SAFETY: as above.
                if x.is_null() || !core::ptr::eq(unsafe { &*x }.sb, d.sb) {
                    return false;
                }
                while !x.is_null() {
                    if core::ptr::eq(x, d) {
                        return true;
                    }
                    // SAFETY: a dentry holds its parent.
                    x = unsafe { &*x }.parent_ptr();
                }
                false
            })
    }

    /// Drops the cached entry for (parent, key), if any, after a backend
    /// changed that name: the next lookup asks the backend. A mount on the
    /// entry or beneath it keeps it (as `unmounted_hold`). Caller holds an
    /// epoch guard and no lock: this one waits for the mount table's, so
    /// no mount is attached on the entry between the check and the drop
    /// (before session 44 it only tried the lock and dropped the entry
    /// unchecked while the table was busy: a mount being attached on it
    /// then hung off a dropped entry, or its attachment found it freed).
    pub(crate) fn forget_name(&self, parent: *const Dentry, dir: &Inode, key: &NameKey<'_>) {
        let Some(index) = dir.dir_index() else {
            return;
        };
        let d = {
            let _locked = index.read();
            let d = self.lookup_exact(parent, key);
            if d.is_null() {
                return;
            }
            // SAFETY: found under the bucket lock: allocated (guard). A
            // reference keeps the shrinker off it; if it lost the race,
            // the shrinker unhashed it already.
            if !unsafe { &*d }.refcount.get() {
                return;
            }
            d
        };
        // SAFETY: our reference keeps it.
        let dr = unsafe { &*d };
        let list = self.lock_mounts();
        if !Self::mounted_at_or_beneath(&list, dr) {
            self.unhash_if_still(dir, parent, key, dr, list);
        } else {
            drop(list);
        }
        self.dput(d);
    }

    /// Unhashes `d`, which the caller found as `parent`'s entry under
    /// `key` and holds a reference on, if it still is that entry (a rename
    /// may have moved it since), under `dir`'s exclusive lock and, until
    /// it is done, the table's lock `no_mounts`, under which no mount was
    /// found on it or beneath it.
    fn unhash_if_still(
        &self,
        dir: &Inode,
        parent: *const Dentry,
        key: &NameKey<'_>,
        d: &Dentry,
        no_mounts: crate::mount::MountsLocked<'_>,
    ) {
        let Some(index) = dir.dir_index() else {
            return;
        };
        let locked = index.write();
        if !locked.is_dead()
            && d.is_hashed()
            && core::ptr::eq(d.parent_ptr(), parent)
            && d.hash_len() == key.hash_len()
        {
            self.unhash(d);
        }
        // The directory's lock goes first: the table's release may
        // dissolve detached trees (mount/mod.rs `MountsLocked`).
        drop((locked, no_mounts));
    }
}

impl Dentry {
    /// Next node in the hash chain (lock-free readers).
    pub(crate) fn chain_next_ptr(&self) -> *const Dentry {
        use hash::ChainNode;
        // Acquire: pairs with the release that published the next node.
        self.chain_next().load(Ordering::Acquire)
    }
}

impl VfsInner {
    /// Exact lookup with the bucket locked (null if absent). The caller
    /// holds the directory lock, so the answer stays true while it does.
    pub(crate) fn lookup_exact(&self, parent: *const Dentry, key: &NameKey<'_>) -> *const Dentry {
        self.lookup_exact_locked(parent, key).1
    }

    /// `lookup_exact`, returning the name's bucket still locked, for a
    /// caller that may unhash what it found (`unhash_locked`). While it
    /// holds the guard it must take no lock that is held while a bucket
    /// lock is taken (a directory's index lock, an LRU list lock).
    #[inline(always)]
    pub(crate) fn lookup_exact_locked(
        &self,
        parent: *const Dentry,
        key: &NameKey<'_>,
    ) -> (LockedBucket<'_, Dentry>, *const Dentry) {
        let b = self.lock_bucket(parent, key.hash);
        let found = Self::lookup_in_locked_bucket(b.first(), parent, key);
        (b, found)
    }
}

/// Takes hashed `d` out of its chain, whose bucket `b` the caller locked
/// (and knows holds `d`), inside `d`'s seqcount write section, so a
/// lock-free walk that read it retries; then unlocks the bucket.
#[inline]
fn unhash_from_chain(d: &Dentry, mut b: LockedBucket<'_, Dentry>) {
    d.seq.write_begin();
    d.clear_flag(D_HASHED);
    let removed = b.remove(d);
    debug_assert!(removed);
    d.seq.write_end();
    drop(b);
}

/// What `isolate_and_free` did with an unused dentry of a list.
enum Isolated {
    /// Its bucket lock was busy: still on the list.
    Busy,
    /// In use again: off the list (its last put re-adds it).
    InUse,
    /// Freed; its parent's reference is the caller's to drop.
    Freed(Option<*const Dentry>),
}
