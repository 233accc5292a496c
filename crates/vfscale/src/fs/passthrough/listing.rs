//! Cached directory listings of the passthrough backend: a host directory's
//! full listing, read once from its start and served to later readdirs
//! while it is valid (mod.rs, `Passthrough::readdir`, says when).
//!
//! Invariants:
//! - **content.** A `Listing` holds, in host order, every entry one host
//!   listing of its directory from host offset 0 to the end returned
//!   (without "." and ".."), with the directory's stamp observed before
//!   the first getdents64 (`stamp`, `listed_at`: mono time after that
//!   observation). A partial listing (`complete` false: the read stopped
//!   at the per-listing bound) holds a prefix of one such listing and is
//!   never kept.
//! - **positions.** `positions[i]` is the position entry `i` starts at
//!   (`FIRST`, then the previous entry's `next`: its host d_off + 2),
//!   `positions[n]` where the listing ends. `FIRST` is always the start
//!   and the end position always the end (as to the host: offset 0
//!   restarts, the last d_off follows the last entry). The others,
//!   `positions[1..n]`, are looked up by binary search when `ordered`:
//!   strictly monotone, increasing or decreasing (ext4 hashes increase;
//!   tmpfs on Linux 6.18 lists newest first with decreasing offsets), and
//!   holding neither `FIRST` nor the end. A listing that is not ordered is
//!   never kept. A position that no entry starts at is not served from
//!   the cache at all (the host answers it): every position means what it
//!   means to the host.
//! - **memory.** Struct of arrays, no allocation per entry: names packed
//!   in one buffer (`name_ends[i]` is where entry `i`'s name ends), inode
//!   numbers, types. A kept listing's `bytes()` are counted in its
//!   instance's `HostStats::listing_bytes` from `keep` until it is dropped,
//!   which `keep` holds within the instance budget.

use super::dirs::Stamp;
use super::host::HostStats;
use crate::process::DirEntryRef;
use std::sync::Arc;

/// The position of a directory's first entry after "." and ".." (the host's
/// offset 0).
pub(crate) const FIRST: u64 = 2;

/// Bytes a listing spends per entry besides its name: position, inode
/// number, name end, type.
const ENTRY_BYTES: usize = 8 + 8 + 4 + 1;

/// One directory's cached listing (module invariants).
pub(crate) struct Listing {
    positions: Box<[u64]>,
    inos: Box<[u64]>,
    name_ends: Box<[u32]>,
    dtypes: Box<[u8]>,
    names: Box<[u8]>,
    pub complete: bool,
    ordered: bool,
    descending: bool,
    pub stamp: Stamp,
    pub listed_at: u64,
    /// Set when kept: the instance's statistics, credited when dropped.
    charged: Option<Arc<HostStats>>,
}

impl Listing {
    /// Heap bytes of the listing.
    pub(crate) fn bytes(&self) -> usize {
        self.names.len() + self.inos.len() * ENTRY_BYTES + 8
    }

    /// The index of the entry that starts at `pos` (the entry count: the
    /// end), if `pos` is one of the listing's positions.
    pub(crate) fn index_of(&self, pos: u64) -> Option<usize> {
        let n = self.inos.len();
        if pos == FIRST {
            return Some(0);
        }
        if pos == self.positions[n] {
            return Some(n);
        }
        if !self.ordered {
            return None;
        }
        let middle = self.positions.get(1..n).unwrap_or_default();
        let found = if self.descending {
            middle.binary_search_by(|p| pos.cmp(p))
        } else {
            middle.binary_search(&pos)
        };
        found.ok().map(|i| i + 1)
    }

    /// Hands entries from index `i` on to `emit` until it refuses one or
    /// the listing ends; returns the position after the last entry taken
    /// and whether `emit` refused one.
    pub(crate) fn emit_from(
        &self,
        i: usize,
        emit: &mut dyn FnMut(&DirEntryRef<'_>) -> bool,
    ) -> (u64, bool) {
        let mut start = if i == 0 {
            0
        } else {
            self.name_ends[i - 1] as usize
        };
        // One zipped walk: no index checks per array and entry.
        let entries = self.inos[i..]
            .iter()
            .zip(&self.name_ends[i..])
            .zip(&self.dtypes[i..])
            .zip(self.positions[i..].windows(2));
        for (((&ino, &end), &dtype), at_next) in entries {
            let end = end as usize;
            let e = DirEntryRef {
                name: self.names.get(start..end).unwrap_or_default(),
                ino,
                dtype,
                next: at_next[1],
            };
            if !emit(&e) {
                return (at_next[0], true);
            }
            start = end;
        }
        (self.positions[self.inos.len()], false)
    }

    /// The listing charged to `stats` if it is complete and fits the
    /// instance budget `per_instance`; else the listing, uncharged.
    pub(crate) fn keep(
        mut self,
        stats: &Arc<HostStats>,
        per_instance: usize,
    ) -> Result<Arc<Listing>, Arc<Listing>> {
        if !self.complete
            || !self.ordered
            || !stats.listing_bytes_reserve(self.bytes(), per_instance)
        {
            return Err(Arc::new(self));
        }
        self.charged = Some(stats.clone());
        Ok(Arc::new(self))
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        if let Some(stats) = self.charged.take() {
            stats.listing_bytes_release(self.bytes());
        }
    }
}

/// Collects a listing from a host read (`push` per entry, `finish`).
pub(crate) struct ListingBuilder {
    positions: Vec<u64>,
    inos: Vec<u64>,
    name_ends: Vec<u32>,
    dtypes: Vec<u8>,
    names: Vec<u8>,
    limit: usize,
}

impl ListingBuilder {
    /// An empty listing of at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> ListingBuilder {
        ListingBuilder {
            positions: vec![FIRST],
            inos: Vec::new(),
            name_ends: Vec::new(),
            dtypes: Vec::new(),
            names: Vec::new(),
            limit: limit.min(u32::MAX as usize),
        }
    }

    fn bytes(&self) -> usize {
        self.names.len() + self.inos.len() * ENTRY_BYTES + 8
    }

    /// Appends an entry whose next position is `e.next`; false (nothing
    /// appended) when it would break the bound: the read stops there and
    /// the listing is partial.
    pub(crate) fn push(&mut self, e: &DirEntryRef<'_>) -> bool {
        if e.name.len() > u8::MAX as usize || self.bytes() + ENTRY_BYTES + e.name.len() > self.limit
        {
            return false;
        }
        self.names.extend_from_slice(e.name);
        // Below `limit`, itself at most u32::MAX.
        self.name_ends.push(self.names.len() as u32);
        self.inos.push(e.ino);
        self.dtypes.push(e.dtype);
        self.positions.push(e.next);
        true
    }

    /// The listing; `complete`: the host read reached the end.
    pub(crate) fn finish(self, complete: bool, stamp: Stamp, listed_at: u64) -> Listing {
        let n = self.inos.len();
        let middle = self.positions.get(1..n).unwrap_or_default();
        let descending = middle.len() > 1 && middle[0] > middle[1];
        let end = self.positions[n];
        let ordered = middle
            .windows(2)
            .all(|w| if descending { w[0] > w[1] } else { w[0] < w[1] })
            && !middle.contains(&FIRST)
            && (n == 0 || end != FIRST)
            && !middle.contains(&end);
        Listing {
            ordered,
            descending,
            positions: self.positions.into(),
            inos: self.inos.into(),
            name_ends: self.name_ends.into(),
            dtypes: self.dtypes.into(),
            names: self.names.into(),
            complete,
            stamp,
            listed_at,
            charged: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &[u8], next: u64) -> DirEntryRef<'_> {
        DirEntryRef {
            name,
            ino: next * 10,
            dtype: 8,
            next,
        }
    }

    fn built(nexts: &[u64], limit: usize) -> (Listing, usize) {
        let mut b = ListingBuilder::new(limit);
        let names: Vec<Vec<u8>> = nexts.iter().map(|n| format!("n{n}").into_bytes()).collect();
        let taken = nexts
            .iter()
            .zip(&names)
            .take_while(|(&n, name)| b.push(&entry(name, n)))
            .count();
        (b.finish(taken == nexts.len(), Stamp::default(), 0), taken)
    }

    fn collect(l: &Listing, from: u64, room: usize) -> (Vec<(Vec<u8>, u64)>, u64, bool) {
        let mut got = Vec::new();
        let i = l.index_of(from).expect("a position of the listing");
        let (pos, refused) = l.emit_from(i, &mut |e| {
            if got.len() == room {
                return false;
            }
            got.push((e.name.to_vec(), e.next));
            true
        });
        (got, pos, refused)
    }

    #[test]
    fn positions_resume_where_the_host_would() {
        let (empty, _) = built(&[], 1 << 20);
        assert!(empty.complete && empty.ordered);
        assert_eq!(collect(&empty, FIRST, 9), (vec![], FIRST, false));
        assert_eq!(empty.index_of(7), None);
        let (l, _) = built(&[10, 20, 35], 1 << 20);
        assert!(l.complete);
        let (got, pos, refused) = collect(&l, FIRST, 2);
        assert_eq!(got, [(b"n10".to_vec(), 10), (b"n20".to_vec(), 20)]);
        assert_eq!((pos, refused), (20, true));
        let (got, pos, refused) = collect(&l, 20, 9);
        assert_eq!(got, [(b"n35".to_vec(), 35)]);
        assert_eq!((pos, refused), (35, false));
        // The end is a position (empty); others are not the cache's.
        assert_eq!(collect(&l, 35, 9).0, []);
        assert_eq!(l.index_of(11), None);
        assert_eq!(l.index_of(36), None);
        // Refusing the first entry leaves the position unchanged.
        assert_eq!(collect(&l, 10, 0), (vec![], 10, true));
    }

    #[test]
    fn decreasing_positions_are_searched_too() {
        // tmpfs: newest first, offsets counting down, a large end marker.
        let (l, _) = built(&[40, 30, 20, 1000], 1 << 20);
        assert!(l.ordered && l.descending);
        let (got, pos, _) = collect(&l, 30, 9);
        assert_eq!(got, [(b"n20".to_vec(), 20), (b"n1000".to_vec(), 1000)]);
        assert_eq!(pos, 1000);
        assert_eq!(collect(&l, 40, 1).0, [(b"n30".to_vec(), 30)]);
        assert_eq!(collect(&l, 1000, 9).0, []);
        assert_eq!(l.index_of(35), None);
    }

    #[test]
    fn unordered_listings_serve_from_the_start_only_and_are_not_kept() {
        let stats = Arc::new(HostStats::default());
        for nexts in [
            &[10, 30, 20, 40][..],
            &[10, 10, 40],
            &[10, 2, 40],
            &[10, 40, 20, 40],
        ] {
            let (l, taken) = built(nexts, 1 << 20);
            assert!(
                l.complete && taken == nexts.len() && !l.ordered,
                "{nexts:?}"
            );
            assert_eq!(collect(&l, FIRST, 99).0.len(), nexts.len());
            assert_eq!(l.index_of(nexts[0]), None);
            assert!(l.keep(&stats, 1 << 20).is_err(), "{nexts:?}");
        }
    }

    #[test]
    fn the_bound_stops_the_listing() {
        let (l, taken) = built(&[10, 20, 30], 8 + 2 * (ENTRY_BYTES + 3));
        assert_eq!((l.complete, taken), (false, 2));
        let stats = Arc::new(HostStats::default());
        assert!(l.keep(&stats, 1 << 20).is_err(), "a partial listing");
        assert_eq!(stats.listing_bytes(), 0);
    }

    #[test]
    fn kept_listings_stay_within_the_instance_budget_until_dropped() {
        let stats = Arc::new(HostStats::default());
        let (a, _) = built(&[10, 20], 1 << 20);
        let size = a.bytes();
        let budget = size + size / 2;
        let a = a.keep(&stats, budget).ok().expect("fits");
        assert_eq!(stats.listing_bytes(), size);
        let (b, _) = built(&[10, 20], 1 << 20);
        let b = b.keep(&stats, budget).err().expect("over the budget");
        assert_eq!(stats.listing_bytes(), size);
        drop((a, b));
        assert_eq!(stats.listing_bytes(), 0);
        let (b, _) = built(&[10, 20], 1 << 20);
        assert!(b.keep(&stats, budget).is_ok());
    }
}
