//! The dentry: one name in one directory, bound to an inode or negative.
//!
//! Layout (asserted below): the `Dentry` itself is one line, what a
//! lock-free path walk reads (seq, flags, hash link, parent, hash+len,
//! inode, superblock, the name's first eight bytes, the cookie); its
//! [`DentryTail`] holds in its first line the rest of the inline name and
//! the long-name pointer, in its second the write-hot fields (refcount,
//! LRU links). A walk that stats a cached path whose components are at
//! most 8 bytes long therefore reads the head alone (a chain node that
//! does not match costs that one line too), and never the line that
//! refcount traffic dirties; a longer name adds the tail's first line.
//!
//! Where the tail is: a dentry of the dentry pool (`Dentry::alloc`) has
//! it apart (`D_TAIL_APART`), among the tails of its slab chunk
//! (`mem::slab::tail_of`), so the pool's heads lie packed and the line
//! the CPU fetches beside a head is another head; an anonymous node's
//! dentry (`Dentry::write_at`) has it right after the head, in the
//! node. The tail's fields read as the dentry's own (`Deref`).
//!
//! Invariants:
//! - `parent`, `hash_len`, the name and `inode` change only inside a `seq`
//!   write section, by a writer that holds the parent directory's lock
//!   exclusively (create, unlink, rename), or the dentry's bucket lock after
//!   winning the refcount's kill (reclaim). Readers validate with `seq`.
//! - A dentry is in the hash iff `D_HASHED`; a hashed positive tmpfs dentry is
//!   pinned by one reference (the namespace's) until its name is removed.
//! - Each dentry except a superblock root holds one reference on its parent.
//! - Memory is released only through the epoch collector, so a pointer loaded
//!   under a guard stays readable until the guard drops.

use super::hash::{ChainNode, TableNode};
use super::name::{name_word, NameKey};
use crate::fs::SuperBlock;
use crate::inode::Inode;
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use crate::sync::seqcount::SeqCount;
use crate::sync::shardref::ShardedRef;
use core::ptr;

/// The dentry is in the hash table.
pub const D_HASHED: u32 = 1 << 0;
/// Something is mounted on this dentry (check the mount table).
pub const D_MOUNTED: u32 = 1 << 1;
/// The dentry is on one of its superblock's LRU lists (`reclaim/list_lru.rs`).
pub const D_ON_LRU: u32 = 1 << 2;
/// Put while on an LRU list: the scan gives it a second chance.
pub const D_REFERENCED: u32 = 1 << 5;

/// The bound inode is a directory (cached from the immutable type bits, so a
/// walk need not read the inode's attribute line, which writers dirty).
pub const D_TYPE_DIR: u32 = 1 << 3;
/// The bound inode is a symbolic link.
pub const D_TYPE_SYMLINK: u32 = 1 << 4;
/// The dentry is an alias in its superblock's export table (a file handle
/// was made for its inode, fs/export.rs); removing its name must drop it
/// from there. A high bit, apart from the others.
pub const D_EXPORTED: u32 = 1 << 16;
/// The nameless file of an O_TMPFILE open without O_EXCL, which a link may
/// still give its first name (Linux's I_LINKABLE; process/tmpfile.rs).
pub const D_LINKABLE: u32 = 1 << 18;
/// The dentry's answer came from a backend that wants it revalidated after
/// a TTL (passthrough); `cookie` then holds when it was last validated
/// (monotonic ns), since such dentries are in no child index. The walk's
/// fast path declines these, so tmpfs walks test no extra flag.
pub const D_REVALIDATE: u32 = 1 << 17;
/// The tail is in the dentry pool's chunk, not right after the head (see
/// the module comment); fixed at construction.
const D_TAIL_APART: u32 = 1 << 19;

/// The type flags for `inode` (null: none).
pub(crate) fn type_flags(inode: *const Inode) -> u32 {
    if inode.is_null() {
        return 0;
    }
    // SAFETY: callers pass an inode they hold a reference on.
    match unsafe { &*inode }.file_type() {
        crate::abi::S_IFDIR => D_TYPE_DIR,
        crate::abi::S_IFLNK => D_TYPE_SYMLINK,
        _ => 0,
    }
}

/// Names up to this length live inside the dentry.
pub const INLINE_NAME_LEN: usize = 64;
const INLINE_WORDS: usize = INLINE_NAME_LEN / 8;

/// Storage of a name longer than `INLINE_NAME_LEN`.
pub(crate) struct ExtName(pub Box<[u8]>);

#[repr(C, align(64))]
pub struct Dentry {
    // ---- the head, one line: lock-free lookup ----
    pub(crate) seq: SeqCount,
    pub(crate) flags: AtomicU32,
    hash_next: AtomicPtr<Dentry>,
    pub(crate) parent: AtomicPtr<Dentry>,
    hash_len: AtomicU64,
    pub(crate) inode: AtomicPtr<Inode>,
    pub(crate) sb: *const SuperBlock,
    /// Word 0 of the inline name (zero-padded little-endian bytes 0..8):
    /// a name of up to 8 bytes compares on this line alone.
    name_head: AtomicU64,
    /// Readdir cookie in the parent's child index (under the parent's lock;
    /// written only when the name moves, so it may share the lookup line).
    /// A `D_REVALIDATE` entry is in no index: there it holds the monotonic
    /// time of its last validation.
    pub(crate) cookie: AtomicU64,
}

/// The rest of a dentry (see the module comment).
#[repr(C, align(64))]
pub struct DentryTail {
    // ---- line 0: the rest of the name ----
    /// Words 1.. of an inline name (zero past its end).
    name_tail: [AtomicU64; INLINE_WORDS - 1],
    /// A name longer than `INLINE_NAME_LEN` (null otherwise): read only by
    /// a compare that got past `hash_len` with such a name.
    name_ext: AtomicPtr<ExtName>,
    // ---- line 1: write-hot ----
    /// Sharded while many threads keep opening the dentry (`dcache/hot.rs`).
    pub(crate) refcount: ShardedRef,
    /// The memory group charged for this dentry (uncharged on free).
    pub(crate) group: u32,
    /// The LRU list holding it (null when not on one) and its links, all
    /// touched only under that list's lock.
    pub(crate) lru_list: AtomicPtr<crate::reclaim::list_lru::DentryList>,
    pub(crate) lru_prev: AtomicPtr<Dentry>,
    pub(crate) lru_next: AtomicPtr<Dentry>,
}

// Layout of the real atomics (loom's model atomics are larger).
#[cfg(not(loom))]
const _: () = {
    assert!(
        core::mem::size_of::<Dentry>() == 64,
        "the lookup fields are one line"
    );
    assert!(core::mem::offset_of!(DentryTail, name_ext) + 8 <= 64);
    assert!(
        core::mem::offset_of!(DentryTail, refcount) == 64,
        "write-hot fields start the tail's second line"
    );
    assert!(
        core::mem::size_of::<DentryTail>() == 128,
        "a dentry is three cache lines"
    );
};

impl crate::mem::slab::SlabPool for Dentry {
    const POOL: usize = crate::mem::slab::DENTRY_POOL;
    const TAIL_BYTES: usize = core::mem::size_of::<DentryTail>();
}

impl core::ops::Deref for Dentry {
    type Target = DentryTail;

    #[inline(always)]
    fn deref(&self) -> &DentryTail {
        // SAFETY: every dentry is built with its tail (`write_at`),
        // which lives and dies with it (`Drop for Dentry`).
        unsafe { &*self.tail_ptr() }
    }
}

// SAFETY: all mutable state is atomic; `sb` points to a Sync superblock that
// outlives its dentries.
unsafe impl Send for Dentry {}
// SAFETY: as above.
unsafe impl Sync for Dentry {}
// SAFETY: all mutable state is atomic (the tail is reached only through
// its dentry).
unsafe impl Send for DentryTail {}
// SAFETY: as above.
unsafe impl Sync for DentryTail {}

// SAFETY: `hash_next` is the dentry's only chain link for its whole life.
unsafe impl ChainNode for Dentry {
    fn chain_next(&self) -> &AtomicPtr<Self> {
        &self.hash_next
    }

    /// The inode: a lookup that finds this dentry reads its attributes next.
    #[inline]
    fn prefetch_hint(&self) -> *const u8 {
        // Relaxed: a prefetch hint only, never dereferenced.
        self.inode.load(Ordering::Relaxed) as *const u8
    }
}

// SAFETY: a hashed dentry's parent and name change only while it is out of
// the table (`d_move` removes it first), and this only reads them.
unsafe impl TableNode for Dentry {
    #[inline]
    fn table_hash(&self) -> u64 {
        super::name::bucket_hash(self.parent_ptr(), (self.hash_len() >> 32) as u32)
    }
}

impl Dentry {
    /// A new, unhashed dentry of the dentry pool, its tail apart.
    /// `refcount` is the caller's initial references, `group` the memory
    /// group charged for it.
    pub(crate) fn alloc(
        sb: *const SuperBlock,
        parent: *const Dentry,
        name: &NameKey<'_>,
        inode: *const Inode,
        refcount: u32,
        group: u32,
    ) -> *mut Dentry {
        let d = crate::mem::slab::alloc_in_place::<Dentry>();
        // SAFETY: a free object of the dentry pool that only we own (a
        // previous dentry there was dropped, tail included, when freed).
        unsafe { Self::write_at(d, true, sb, parent, name, inode, refcount, group) };
        d
    }

    /// Builds a new, unhashed dentry at `at` in place (a dentry built on
    /// the stack and moved cost a `memcpy` per object), its tail among its
    /// slab chunk's tails if `tail_apart` (an object of the dentry pool),
    /// else right after it (an anonymous node's).
    ///
    /// # Safety
    /// `at` and its tail are valid for writes, aligned, and hold no live
    /// value; nobody else can reach them yet.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn write_at(
        at: *mut Dentry,
        tail_apart: bool,
        sb: *const SuperBlock,
        parent: *const Dentry,
        name: &NameKey<'_>,
        inode: *const Inode,
        refcount: u32,
        group: u32,
    ) {
        let (tail, placement) = if tail_apart {
            (
                crate::mem::slab::tail_of(at) as *mut DentryTail,
                D_TAIL_APART,
            )
        } else {
            (at.wrapping_add(1) as *mut DentryTail, 0)
        };
        // The name goes straight into the new value (as `store_name` would
        // write it, without its exchange with a previous buffer: there is
        // none).
        let short = name.bytes.len() <= INLINE_NAME_LEN;
        let name_ext = if short {
            ptr::null_mut()
        } else {
            Box::into_raw(Box::new(ExtName(name.bytes.into())))
        };
        // SAFETY: the caller's contract. Not yet shared: the first release
        // that publishes the dentry publishes its fields.
        unsafe {
            at.write(Dentry {
                seq: SeqCount::new(),
                flags: AtomicU32::new(type_flags(inode) | placement),
                hash_next: AtomicPtr::new(ptr::null_mut()),
                parent: AtomicPtr::new(parent as *mut Dentry),
                hash_len: AtomicU64::new(name.hash_len()),
                inode: AtomicPtr::new(inode as *mut Inode),
                sb,
                name_head: AtomicU64::new(if short { name.first_word } else { 0 }),
                cookie: AtomicU64::new(0),
            });
            tail.write(DentryTail {
                name_tail: Default::default(),
                name_ext: AtomicPtr::new(name_ext),
                refcount: ShardedRef::new(refcount),
                group,
                lru_list: AtomicPtr::new(ptr::null_mut()),
                lru_prev: AtomicPtr::new(ptr::null_mut()),
                lru_next: AtomicPtr::new(ptr::null_mut()),
            });
            // Only the words the name has (a loop, not `array::from_fn`,
            // which was not inlined here: 15 calls per create).
            if short {
                let words = name.bytes.len().div_ceil(8);
                for (i, w) in (1..words).zip(&(*tail).name_tail) {
                    // Relaxed: not shared yet (see above).
                    w.store(name_word(name.bytes, i), Ordering::Relaxed);
                }
            }
        }
    }

    /// Where the tail is (see the module comment).
    #[inline(always)]
    fn tail_ptr(&self) -> *const DentryTail {
        // Relaxed: the placement bit is written with the dentry, before
        // anyone can reach it, and never changes.
        if self.flags.load(Ordering::Relaxed) & D_TAIL_APART != 0 {
            crate::mem::slab::tail_of(self) as *const DentryTail
        } else {
            (self as *const Dentry).wrapping_add(1) as *const DentryTail
        }
    }

    /// Writes the name; returns the previous long-name buffer (the caller
    /// retires it through the collector). Call inside a `seq` write section
    /// once the dentry is shared.
    pub(crate) fn store_name(&self, name: &NameKey<'_>) -> *mut ExtName {
        // Relaxed stores: published by the seq write section's release (or by
        // the release that first publishes the dentry).
        self.hash_len.store(name.hash_len(), Ordering::Relaxed);
        if name.bytes.len() <= INLINE_NAME_LEN {
            // Word 0 comes with the key; the rest only for a long name.
            self.name_head.store(name.first_word, Ordering::Relaxed);
            let words = name.bytes.len().div_ceil(8);
            for (i, w) in (1..).zip(&self.name_tail) {
                let word = if i < words {
                    name_word(name.bytes, i)
                } else {
                    0
                };
                w.store(word, Ordering::Relaxed);
            }
            // AcqRel: release publishes a new buffer to `name_eq`'s Acquire; acquire takes ownership of the old one.
            self.name_ext.swap(ptr::null_mut(), Ordering::AcqRel)
        } else {
            let ext = Box::into_raw(Box::new(ExtName(name.bytes.into())));
            self.name_ext.swap(ext, Ordering::AcqRel)
        }
    }

    pub fn hash_len(&self) -> u64 {
        // Relaxed: callers validate through `seq` (lock-free) or hold the
        // parent's directory lock (stable).
        self.hash_len.load(Ordering::Relaxed)
    }

    /// Compares the name with `key`. The answer is meaningful only if the
    /// caller validates `seq` afterwards or holds the parent's lock.
    #[inline(always)]
    pub fn name_eq(&self, key: &NameKey<'_>) -> bool {
        self.hash_len() == key.hash_len() && self.name_eq_same_hash_len(key)
    }

    /// `name_eq` for a caller that has already compared `hash_len` (the
    /// lock-free lookup, which filters the chain on it).
    #[inline(always)]
    pub fn name_eq_same_hash_len(&self, key: &NameKey<'_>) -> bool {
        if key.bytes.len() <= 8 {
            // Relaxed: validated by the caller's seq check.
            return self.name_head.load(Ordering::Relaxed) == key.first_word;
        }
        self.name_eq_long(key)
    }

    /// `name_eq` for names longer than one word (hash and length already
    /// equal).
    #[inline(never)]
    fn name_eq_long(&self, key: &NameKey<'_>) -> bool {
        let len = key.bytes.len();
        if len <= INLINE_NAME_LEN {
            // Relaxed: validated by the caller's seq check.
            (0..len.div_ceil(8))
                .all(|i| self.inline_word(i).load(Ordering::Relaxed) == name_word(key.bytes, i))
        } else {
            // Acquire pairs with the AcqRel swap in `store_name`, so the
            // buffer's bytes are visible.
            let ext = self.name_ext.load(Ordering::Acquire);
            // SAFETY: a long name is replaced only by a rename, which retires
            // the old buffer through the epoch collector; our caller holds a
            // guard, so `ext` is still allocated.
            !ext.is_null() && unsafe { &*ext }.0[..] == *key.bytes
        }
    }

    /// Word `i` (< `INLINE_WORDS`) of the inline name.
    #[inline(always)]
    fn inline_word(&self, i: usize) -> &AtomicU64 {
        match i.checked_sub(1) {
            None => &self.name_head,
            Some(t) => &self.name_tail[t],
        }
    }

    /// Appends the name to `out` (caller holds the parent's lock or validates).
    pub fn name_into(&self, out: &mut Vec<u8>) {
        let len = (self.hash_len() & 0xffff_ffff) as usize;
        if len <= INLINE_NAME_LEN {
            for i in 0..len.div_ceil(8) {
                // Relaxed: see `name_eq`.
                let w = self.inline_word(i).load(Ordering::Relaxed).to_le_bytes();
                out.extend_from_slice(&w[..(len - i * 8).min(8)]);
            }
        } else {
            let ext = self.name_ext.load(Ordering::Acquire);
            if !ext.is_null() {
                // SAFETY: as in `name_eq`.
                out.extend_from_slice(&unsafe { &*ext }.0);
            }
        }
    }

    /// The name's first two words (little-endian, zero past its end) if
    /// it is at most 16 bytes long: what a directory's child index keeps
    /// of it (dir/index.rs). Same rules as `name_into`.
    pub(crate) fn name_words_up_to_16(&self) -> Option<[u64; 2]> {
        let len = (self.hash_len() & 0xffff_ffff) as usize;
        // Relaxed: see `name_eq`.
        (len <= 16).then(|| {
            [
                self.name_head.load(Ordering::Relaxed),
                self.name_tail[0].load(Ordering::Relaxed),
            ]
        })
    }

    pub fn name(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.name_into(&mut v);
        v
    }

    /// Flags snapshot. Acquire pairs with the release in `set/clear_flag`.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }

    pub(crate) fn set_flag(&self, f: u32) {
        // Release: pairs with the Acquire in `flags()`.
        self.flags.fetch_or(f, Ordering::Release);
    }

    pub(crate) fn clear_flag(&self, f: u32) {
        // Release: pairs with the Acquire in `flags()`.
        self.flags.fetch_and(!f, Ordering::Release);
    }

    /// Clears `f` and says whether it was set.
    pub(crate) fn take_flag(&self, f: u32) -> bool {
        // AcqRel: the Release pairs with the Acquire in `flags()`; the
        // Acquire orders what follows after the setter's publication.
        self.flags.fetch_and(!f, Ordering::AcqRel) & f != 0
    }

    pub fn is_hashed(&self) -> bool {
        self.flags() & D_HASHED != 0
    }

    /// The bound inode or null for a negative dentry. Acquire pairs with the
    /// release store in `instantiate` so the inode's fields are visible.
    pub fn inode_ptr(&self) -> *const Inode {
        self.inode.load(Ordering::Acquire)
    }

    pub fn parent_ptr(&self) -> *const Dentry {
        // Acquire: pairs with the release store of a rename.
        self.parent.load(Ordering::Acquire)
    }

    pub fn is_root(&self) -> bool {
        self.parent_ptr().is_null()
    }
}

impl Drop for Dentry {
    fn drop(&mut self) {
        // SAFETY: the tail lives and dies with its head; dropped once,
        // here.
        unsafe { ptr::drop_in_place(self.tail_ptr() as *mut DentryTail) }
    }
}

impl Drop for DentryTail {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no other thread can see the dentry.
        let ext = self.name_ext.load(Ordering::Relaxed);
        if !ext.is_null() {
            // SAFETY: the buffer was made by Box::into_raw in `store_name` and
            // is owned by this dentry alone now that it is being freed.
            drop(unsafe { Box::from_raw(ext) });
        }
    }
}
