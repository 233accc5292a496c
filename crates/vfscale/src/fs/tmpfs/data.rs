//! The contents of a tmpfs regular file: sparse, page-chunked storage.
//!
//! A file is a logical length plus an ordered map from chunk index to one
//! page-sized (4096-byte) chunk. A chunk that is not in the map is a hole and
//! reads as zeros, so a huge sparse file costs only the pages written.
//!
//! Invariants (kept by every `&mut self` method):
//! - no chunk starts at or beyond `len`: truncation drops them;
//! - every stored byte at or beyond `len` is zero: truncation zeroes the
//!   tail of the last partial chunk, so growing the file again (by
//!   `set_len` or by a write past EOF) exposes zeros without touching data;
//! - `len <= MAX_FILE_SIZE`, provided callers of `set_len` respect its
//!   documented precondition (writes check it themselves).
//!
//! A chunk that fallocate added and nothing has written (or fallocated
//! again) since is *unwritten* (tmpfs's preallocated page that is not yet uptodate): it
//! counts in `blocks_512` and reads as zeros, but `SEEK_DATA`/`SEEK_HOLE`
//! see it as a hole, as Linux's `mapping_seek_hole_data` does. Only
//! unwritten chunks may lie at or past `len` (fallocate with KEEP_SIZE).
//!
//! An empty `FileData` owns no heap memory (`BTreeMap::new` does not
//! allocate), because the per-empty-file memory budget is tight.
//!
//! `FileData` is not synchronised: the inode wraps it in its own lock.
//! Writing zeros still allocates the chunks written, as tmpfs does: data is
//! never inspected to decide whether it is a hole.

use std::collections::BTreeMap;
use std::fmt;

use crate::abi::{Errno, MAX_FILE_SIZE};

/// Bytes per chunk: the page size, which is also tmpfs's hole granularity.
pub const CHUNK_SIZE: usize = 4096;
const CHUNK_BYTES: u64 = CHUNK_SIZE as u64;
/// 512-byte units per chunk, for `st_blocks`.
const SECTORS_PER_CHUNK: u64 = CHUNK_BYTES / 512;

type Chunk = [u8; CHUNK_SIZE];

/// One allocated chunk: its bytes and whether it is unwritten (see the
/// module documentation). Dereferences to the bytes.
#[derive(Clone)]
struct Slot {
    bytes: Box<Chunk>,
    unwritten: bool,
}

impl std::ops::Deref for Slot {
    type Target = Chunk;
    fn deref(&self) -> &Chunk {
        &self.bytes
    }
}

impl std::ops::DerefMut for Slot {
    fn deref_mut(&mut self) -> &mut Chunk {
        &mut self.bytes
    }
}

/// The bytes of one regular file. See the module documentation.
#[derive(Clone)]
pub struct FileData {
    /// Allocated chunks by index (`offset / CHUNK_SIZE`).
    chunks: BTreeMap<u64, Slot>,
    /// Logical length in bytes (`st_size`).
    len: u64,
}

impl Default for FileData {
    fn default() -> Self {
        FileData::new()
    }
}

impl fmt::Debug for FileData {
    // The derived form would print every byte of every chunk.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileData")
            .field("len", &self.len)
            .field("allocated_chunks", &self.chunks.len())
            .finish()
    }
}

/// Index of the chunk holding byte `offset`.
const fn chunk_index(offset: u64) -> u64 {
    offset / CHUNK_BYTES
}

/// Offset of byte `offset` inside its chunk.
const fn offset_in_chunk(offset: u64) -> usize {
    (offset % CHUNK_BYTES) as usize
}

/// First byte of chunk `index`. Indexes come from offsets below 2^63, so
/// the product cannot overflow.
const fn chunk_start(index: u64) -> u64 {
    index * CHUNK_BYTES
}

fn zeroed_chunk() -> Slot {
    // Going through a zeroed Vec lets the allocator hand out zeroed pages
    // directly instead of building a 4 KiB array on the stack and copying it.
    Slot {
        bytes: vec![0u8; CHUNK_SIZE]
            .into_boxed_slice()
            .try_into()
            .expect("the vector has exactly CHUNK_SIZE bytes"),
        unwritten: false,
    }
}

impl FileData {
    /// An empty file. Allocates nothing.
    pub const fn new() -> FileData {
        FileData {
            chunks: BTreeMap::new(),
            len: 0,
        }
    }

    /// The logical length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if the length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the bytes at `offset..` into `buf` and returns how many were
    /// copied: `buf.len()` unless EOF comes first, 0 at or after EOF. Holes
    /// read as zeros.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        if offset >= self.len || buf.is_empty() {
            return 0;
        }
        let count = buf
            .len()
            .min(usize::try_from(self.len - offset).unwrap_or(usize::MAX));
        let buf = &mut buf[..count];
        let end = offset + count as u64;
        // `filled` is the file offset up to which `buf` has been written;
        // gaps between stored chunks are holes and get zeros.
        let mut filled = offset;
        for (&index, chunk) in self
            .chunks
            .range(chunk_index(offset)..=chunk_index(end - 1))
        {
            let from = chunk_start(index).max(filled);
            buf[(filled - offset) as usize..(from - offset) as usize].fill(0);
            let to = (chunk_start(index) + CHUNK_BYTES).min(end);
            let src = &chunk[offset_in_chunk(from)..offset_in_chunk(from) + (to - from) as usize];
            buf[(from - offset) as usize..(to - offset) as usize].copy_from_slice(src);
            filled = to;
        }
        buf[(filled - offset) as usize..].fill(0);
        count
    }

    /// Writes all of `data` at `offset`, growing the file if it ends past
    /// EOF, and returns `data.len()`. A gap between the old EOF and `offset`
    /// becomes a hole. A zero-length write changes nothing, wherever it is.
    ///
    /// EFBIG if the write would end beyond `MAX_FILE_SIZE`; nothing is
    /// written then. (Linux's syscall layer rejects `pos + count` overflowing
    /// `loff_t` with EINVAL before the filesystem sees it, so the process
    /// layer should check that first; this is the filesystem's own bound.)
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&end| end <= MAX_FILE_SIZE as u64)
            .ok_or(Errno::EFBIG)?;
        let mut written = 0usize;
        while written < data.len() {
            let pos = offset + written as u64;
            let within = offset_in_chunk(pos);
            let take = (CHUNK_SIZE - within).min(data.len() - written);
            let chunk = self
                .chunks
                .entry(chunk_index(pos))
                .or_insert_with(zeroed_chunk);
            chunk.unwritten = false;
            chunk[within..within + take].copy_from_slice(&data[written..written + take]);
            written += take;
        }
        self.len = self.len.max(end);
        Ok(data.len())
    }

    /// Truncates or extends the file to `new_len` bytes. Truncation frees
    /// every chunk wholly past the new end and zeroes the rest of the last
    /// partial chunk, so a later extension reads zeros; extension allocates
    /// nothing.
    ///
    /// Precondition: `new_len <= MAX_FILE_SIZE` (the caller turns larger
    /// lengths into EFBIG/EINVAL as truncate(2) does).
    pub fn set_len(&mut self, new_len: u64) {
        debug_assert!(
            new_len <= MAX_FILE_SIZE as u64,
            "set_len past MAX_FILE_SIZE"
        );
        // Not shrinking still frees what lies past the end (preallocated
        // chunks, fallocate KEEP_SIZE), as shmem_setattr truncates from the
        // new size whenever it does not grow.
        if new_len <= self.len {
            // Chunks from this index on lie wholly at or beyond the new end.
            let first_dropped = new_len.div_ceil(CHUNK_BYTES);
            drop(self.chunks.split_off(&first_dropped));
            self.zero_stored(new_len, self.len);
        }
        self.len = new_len;
    }

    /// Zeroes `offset..offset + len` without changing the length, freeing
    /// the chunks wholly inside the range (they become holes), as
    /// `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)` on tmpfs does.
    /// Like tmpfs, a chunk counts as wholly inside when the requested range
    /// covers it, even if the range runs past EOF: punching `0..4096` of a
    /// 100-byte file frees its only chunk, punching `0..200` only zeroes it.
    pub fn punch_hole(&mut self, offset: u64, len: u64) {
        let requested_end = offset.saturating_add(len);
        if offset >= requested_end {
            return;
        }
        // No early return at EOF: chunks preallocated past it (fallocate
        // KEEP_SIZE) are freed too, as shmem_truncate_range does.
        let first_whole = offset.div_ceil(CHUNK_BYTES);
        // Not below `first_whole`: a range inside one chunk has no whole
        // chunk, and BTreeMap panics on an inverted range.
        let past_whole = chunk_index(requested_end).max(first_whole);
        // Removing one key at a time is O(k log n) without allocating, where
        // splitting and re-appending the map would be O(n).
        while let Some(index) = self
            .chunks
            .range(first_whole..past_whole)
            .next()
            .map(|(&index, _)| index)
        {
            self.chunks.remove(&index);
        }
        self.zero_stored(offset, requested_end.min(self.len));
    }

    /// Allocates zeroed chunks for every hole in `offset..offset + len`
    /// without changing the length or any stored byte (fallocate mode 0 /
    /// FALLOC_FL_KEEP_SIZE). Chunks past EOF count in `blocks_512`, as
    /// tmpfs's preallocated pages do. Returns the chunk indices it
    /// allocated, for `free_chunks` to undo (ENOSPC).
    pub fn allocate(&mut self, offset: u64, len: u64) -> Vec<u64> {
        let end = offset.saturating_add(len);
        let mut added = Vec::new();
        if offset >= end {
            return added;
        }
        for index in chunk_index(offset)..=chunk_index(end - 1) {
            match self.chunks.entry(index) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    let mut slot = zeroed_chunk();
                    slot.unwritten = true;
                    v.insert(slot);
                    added.push(index);
                }
                // A second fallocate over an unwritten chunk initialises
                // it (shmem_get_folio's SGP_FALLOC on a fallocated folio
                // marks it uptodate): it is data from now on.
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    o.get_mut().unwritten = false
                }
            }
        }
        added
    }

    /// How many chunks `allocate(offset, len)` would add (the holes among
    /// the chunks the range touches).
    pub fn holes_in(&self, offset: u64, len: u64) -> u64 {
        let end = offset.saturating_add(len);
        if offset >= end {
            return 0;
        }
        let (first, last) = (chunk_index(offset), chunk_index(end - 1));
        (last - first + 1) - self.chunks.range(first..=last).count() as u64
    }

    /// Frees the chunks at `indices` (they become holes again).
    pub fn free_chunks(&mut self, indices: &[u64]) {
        for i in indices {
            self.chunks.remove(i);
        }
    }

    /// Zeroes the stored bytes of `start..end`; holes in the range stay holes.
    fn zero_stored(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        for (&index, chunk) in self
            .chunks
            .range_mut(chunk_index(start)..=chunk_index(end - 1))
        {
            let from = chunk_start(index).max(start);
            let to = (chunk_start(index) + CHUNK_BYTES).min(end);
            chunk[offset_in_chunk(from)..offset_in_chunk(from) + (to - from) as usize].fill(0);
        }
    }

    /// Written chunks at or after index `from`, in order.
    fn data_chunks(&self, from: u64) -> impl Iterator<Item = u64> + '_ {
        self.chunks
            .range(from..)
            .filter(|(_, slot)| !slot.unwritten)
            .map(|(&index, _)| index)
    }

    /// `lseek(SEEK_DATA)`: the first offset at or after `offset` that lies in
    /// a written chunk. ENXIO if `offset` is at or past EOF or no data
    /// follows it.
    pub fn seek_data(&self, offset: u64) -> Result<u64, Errno> {
        if offset >= self.len {
            return Err(Errno::ENXIO);
        }
        match self.data_chunks(chunk_index(offset)).next() {
            // No written chunk starts at or past `len`, so the result is
            // below EOF.
            Some(index) => Ok(chunk_start(index).max(offset)),
            None => Err(Errno::ENXIO),
        }
    }

    /// `lseek(SEEK_HOLE)`: the first offset at or after `offset` that lies in
    /// a missing or unwritten chunk, or EOF (which always counts as a hole).
    /// ENXIO if `offset` is at or past EOF.
    pub fn seek_hole(&self, offset: u64) -> Result<u64, Errno> {
        if offset >= self.len {
            return Err(Errno::ENXIO);
        }
        let mut next_index = chunk_index(offset);
        for index in self.data_chunks(next_index) {
            if index != next_index {
                break;
            }
            next_index += 1;
        }
        if next_index == chunk_index(offset) {
            // `offset` itself is in a hole.
            return Ok(offset);
        }
        Ok(chunk_start(next_index).min(self.len))
    }

    /// Allocated 512-byte blocks (`st_blocks`): whole chunks, as tmpfs
    /// counts whole pages.
    pub fn blocks_512(&self) -> u64 {
        self.chunks.len() as u64 * SECTORS_PER_CHUNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CS: u64 = CHUNK_BYTES;

    fn read_all(data: &FileData) -> Vec<u8> {
        let mut buf = vec![0xAA; data.len() as usize];
        assert_eq!(data.read_at(0, &mut buf), buf.len());
        buf
    }

    fn read(data: &FileData, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0xAA; len];
        let n = data.read_at(offset, &mut buf);
        buf.truncate(n);
        buf
    }

    /// Checks the module's invariants by looking at the private fields.
    fn assert_invariants(data: &FileData) {
        for (&index, chunk) in &data.chunks {
            assert!(
                chunk_start(index) < data.len,
                "chunk {index} at or past EOF"
            );
            let end_in_chunk = data.len - chunk_start(index);
            if end_in_chunk < CS {
                assert!(
                    chunk[end_in_chunk as usize..].iter().all(|&b| b == 0),
                    "nonzero bytes past EOF in chunk {index}"
                );
            }
        }
    }

    #[test]
    fn empty_file_owns_nothing_and_is_small() {
        let data = FileData::new();
        assert!(data.is_empty());
        assert_eq!(data.len(), 0);
        assert_eq!(data.blocks_512(), 0);
        assert_eq!(data.chunks.len(), 0);
        // Part of the <= 512 bytes per empty file budget.
        assert!(std::mem::size_of::<FileData>() <= 32);
        assert_eq!(read(&data, 0, 10), b"");
        assert_eq!(FileData::default().len(), 0);
    }

    #[test]
    fn write_then_read_within_one_chunk() {
        let mut data = FileData::new();
        assert_eq!(data.write_at(0, b"hello"), Ok(5));
        assert_eq!(data.len(), 5);
        assert!(!data.is_empty());
        assert_eq!(read(&data, 0, 100), b"hello");
        assert_eq!(read(&data, 1, 3), b"ell");
        assert_eq!(read(&data, 5, 10), b"", "read at EOF");
        assert_eq!(read(&data, 6, 10), b"", "read after EOF");
        assert_eq!(data.blocks_512(), 8);
        // Overwrite in the middle keeps the length.
        assert_eq!(data.write_at(1, b"EL"), Ok(2));
        assert_eq!(read_all(&data), b"hELlo");
    }

    #[test]
    fn write_spanning_chunk_boundaries() {
        let mut data = FileData::new();
        let payload: Vec<u8> = (0..3 * CS as usize).map(|i| (i % 251) as u8 + 1).collect();
        // Starts 10 bytes before the first boundary and crosses three.
        let start = CS - 10;
        assert_eq!(data.write_at(start, &payload), Ok(payload.len()));
        assert_eq!(data.len(), start + payload.len() as u64);
        assert_eq!(
            data.chunks.keys().copied().collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(data.blocks_512(), 32);
        let all = read_all(&data);
        assert!(all[..start as usize].iter().all(|&b| b == 0));
        assert_eq!(&all[start as usize..], &payload[..]);
        // A read exactly across one boundary.
        assert_eq!(read(&data, CS - 1, 2), &payload[9..11]);
        // A read of exactly one whole chunk.
        assert_eq!(read(&data, CS, CS as usize), &payload[10..10 + CS as usize]);
        assert_invariants(&data);
    }

    #[test]
    fn write_exactly_at_a_boundary_allocates_one_chunk() {
        let mut data = FileData::new();
        data.write_at(2 * CS, &[7; CHUNK_SIZE]).unwrap();
        assert_eq!(data.chunks.keys().copied().collect::<Vec<_>>(), [2]);
        assert_eq!(data.len(), 3 * CS);
        assert_eq!(read(&data, 2 * CS - 1, 2), [0, 7]);
    }

    #[test]
    fn holes_read_as_zeros_between_chunks() {
        let mut data = FileData::new();
        data.write_at(0, b"a").unwrap();
        data.write_at(5 * CS, b"b").unwrap();
        assert_eq!(data.blocks_512(), 16, "only the two written chunks");
        let all = read_all(&data);
        assert_eq!(all.len() as u64, 5 * CS + 1);
        assert_eq!(all[0], b'a');
        assert_eq!(all[5 * CS as usize], b'b');
        assert!(all[1..5 * CS as usize].iter().all(|&b| b == 0));
    }

    #[test]
    fn huge_sparse_offsets() {
        let mut data = FileData::new();
        let far = 1u64 << 40;
        // Crosses the chunk boundary at 2^40.
        data.write_at(far - 3, b"abcdef").unwrap();
        assert_eq!(data.len(), far + 3);
        assert_eq!(data.blocks_512(), 16);
        assert_eq!(read(&data, far - 4, 100), b"\0abcdef");
        assert_eq!(read(&data, 0, 4), [0; 4]);
        assert_eq!(data.seek_data(0), Ok(far - CS));
        assert_eq!(data.seek_hole(0), Ok(0));
        assert_eq!(data.seek_hole(far - 3), Ok(far + 3), "EOF is the hole");
        // Extending far beyond allocates nothing.
        data.set_len(far * 2);
        assert_eq!(data.blocks_512(), 16);
        assert_eq!(data.seek_hole(far), Ok(far + CS));
        assert_eq!(read(&data, far + 1, 4), b"ef\0\0");
        assert_invariants(&data);
    }

    #[test]
    fn truncate_then_extend_reads_zeros() {
        let mut data = FileData::new();
        data.write_at(0, &[0xFF; 3 * CHUNK_SIZE]).unwrap();
        // Cut in the middle of chunk 1: chunk 2 is freed, chunk 1's tail zeroed.
        data.set_len(CS + 100);
        assert_eq!(data.len(), CS + 100);
        assert_eq!(data.blocks_512(), 16);
        assert_invariants(&data);
        // Grow by set_len: the old bytes must not come back.
        data.set_len(3 * CS);
        let all = read_all(&data);
        assert!(all[..CS as usize + 100].iter().all(|&b| b == 0xFF));
        assert!(all[CS as usize + 100..].iter().all(|&b| b == 0));
        // Grow by writing past EOF inside the same partial chunk.
        data.set_len(10);
        data.write_at(20, b"x").unwrap();
        assert_eq!(
            read_all(&data),
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0\0\0\0\0\0\0x"
        );
        assert_invariants(&data);
    }

    #[test]
    fn truncate_on_a_boundary_and_to_zero() {
        let mut data = FileData::new();
        data.write_at(0, &[1; 2 * CHUNK_SIZE]).unwrap();
        data.set_len(CS);
        assert_eq!(data.chunks.keys().copied().collect::<Vec<_>>(), [0]);
        data.set_len(0);
        assert!(data.is_empty());
        assert_eq!(data.blocks_512(), 0);
        data.set_len(5);
        assert_eq!(read_all(&data), [0; 5]);
    }

    #[test]
    fn write_limit_is_efbig_and_writes_nothing() {
        let max = MAX_FILE_SIZE as u64;
        let mut data = FileData::new();
        assert_eq!(data.write_at(max - 2, b"abc"), Err(Errno::EFBIG));
        assert_eq!(
            data.write_at(u64::MAX, b"a"),
            Err(Errno::EFBIG),
            "overflowing end"
        );
        assert_eq!(data.write_at(max, b"a"), Err(Errno::EFBIG));
        assert_eq!(data.len(), 0);
        assert_eq!(data.blocks_512(), 0);
        // Ending exactly at the limit is allowed.
        assert_eq!(data.write_at(max - 2, b"ab"), Ok(2));
        assert_eq!(data.len(), max);
        assert_eq!(read(&data, max - 3, 10), b"\0ab");
    }

    #[test]
    fn zero_length_write_changes_nothing() {
        let mut data = FileData::new();
        assert_eq!(data.write_at(1000, b""), Ok(0));
        assert_eq!(data.write_at(u64::MAX, b""), Ok(0));
        assert_eq!(data.len(), 0);
        assert_eq!(data.blocks_512(), 0);
    }

    #[test]
    fn writing_zeros_allocates_like_tmpfs() {
        let mut data = FileData::new();
        data.write_at(0, &[0; 10]).unwrap();
        assert_eq!(data.blocks_512(), 8);
        assert_eq!(data.seek_data(0), Ok(0));
    }

    #[test]
    fn punch_hole_frees_whole_chunks_and_zeroes_edges() {
        let mut data = FileData::new();
        data.write_at(0, &[9; 4 * CHUNK_SIZE]).unwrap();
        // From the middle of chunk 0 to the middle of chunk 3.
        data.punch_hole(100, 3 * CS);
        assert_eq!(data.len(), 4 * CS, "length unchanged");
        assert_eq!(data.chunks.keys().copied().collect::<Vec<_>>(), [0, 3]);
        let all = read_all(&data);
        assert!(all[..100].iter().all(|&b| b == 9));
        assert!(all[100..3 * CS as usize + 100].iter().all(|&b| b == 0));
        assert!(all[3 * CS as usize + 100..].iter().all(|&b| b == 9));
        assert_eq!(data.seek_hole(0), Ok(CS));
        assert_eq!(data.seek_data(CS), Ok(3 * CS));
    }

    #[test]
    fn punch_hole_past_eof_and_overflowing_length() {
        // Expected block counts come from probing fallocate on a real tmpfs.
        let mut data = FileData::new();
        data.write_at(0, &[5; 100]).unwrap();
        data.punch_hole(200, 1000);
        assert_eq!(read_all(&data), [5; 100]);
        data.punch_hole(50, u64::MAX);
        assert_eq!(data.len(), 100);
        let all = read_all(&data);
        assert_eq!(&all[..50], &[5; 50]);
        assert_eq!(&all[50..], &[0; 50]);
        // The chunk is only partly covered: zeroed but kept.
        assert_eq!(data.blocks_512(), 8);
        data.write_at(0, &[5; 100]).unwrap();
        data.punch_hole(0, 200);
        assert_eq!(read_all(&data), [0; 100]);
        assert_eq!(data.blocks_512(), 8);
        // Covered as a whole by the request, though EOF is at 100: freed.
        data.write_at(0, &[5; 100]).unwrap();
        data.punch_hole(0, CS);
        assert_eq!(data.blocks_512(), 0);
        assert_eq!(read_all(&data), [0; 100]);
        assert_eq!(data.len(), 100);
        data.write_at(0, &[5; 100]).unwrap();
        data.punch_hole(0, u64::MAX);
        assert_eq!(data.blocks_512(), 0);
        data.punch_hole(0, 0);
        assert_eq!(data.len(), 100);
    }

    #[test]
    fn seek_data_and_hole_follow_linux_tmpfs() {
        // The same layout as a probe of a real tmpfs: one byte at 10000.
        let mut data = FileData::new();
        data.write_at(10_000, b"x").unwrap();
        for (offset, want_data, want_hole) in [
            (0, Ok(8192), Ok(0)),
            (5000, Ok(8192), Ok(5000)),
            (8191, Ok(8192), Ok(8191)),
            (8192, Ok(8192), Ok(10_001)),
            (10_000, Ok(10_000), Ok(10_001)),
            (10_001, Err(Errno::ENXIO), Err(Errno::ENXIO)),
        ] {
            assert_eq!(data.seek_data(offset), want_data, "SEEK_DATA {offset}");
            assert_eq!(data.seek_hole(offset), want_hole, "SEEK_HOLE {offset}");
        }
        // Data followed only by a trailing hole.
        data.set_len(5 * CS);
        assert_eq!(data.seek_data(3 * CS), Err(Errno::ENXIO));
        assert_eq!(data.seek_hole(3 * CS), Ok(3 * CS));
        assert_eq!(data.seek_hole(9000), Ok(3 * CS));
        assert_eq!(FileData::new().seek_data(0), Err(Errno::ENXIO));
        assert_eq!(FileData::new().seek_hole(0), Err(Errno::ENXIO));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Write(u64, Vec<u8>),
        SetLen(u64),
        Punch(u64, u64),
        Read(u64, usize),
    }

    /// Offsets stay within a few chunks so the Vec model stays cheap, but
    /// cover both sides of several boundaries.
    const SPAN: u64 = 6 * CS;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..SPAN, prop::collection::vec(1u8..=255, 0..(CHUNK_SIZE + 200)))
                .prop_map(|(o, d)| Op::Write(o, d)),
            1 => (0..SPAN).prop_map(Op::SetLen),
            1 => (0..SPAN, 0..(3 * CS)).prop_map(|(o, l)| Op::Punch(o, l)),
            1 => (0..SPAN + 10, 0..(2 * CHUNK_SIZE)).prop_map(|(o, l)| Op::Read(o, l)),
        ]
    }

    /// SEEK_DATA/SEEK_HOLE derived from the chunk map one chunk at a time.
    fn expected_seek(data: &FileData, offset: u64, want_data: bool) -> Result<u64, Errno> {
        if offset >= data.len {
            return Err(Errno::ENXIO);
        }
        let mut pos = offset;
        while pos < data.len {
            let written = data
                .chunks
                .get(&chunk_index(pos))
                .is_some_and(|slot| !slot.unwritten);
            if written == want_data {
                return Ok(pos);
            }
            pos = chunk_start(chunk_index(pos) + 1);
        }
        if want_data {
            Err(Errno::ENXIO)
        } else {
            Ok(data.len)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(128)))]

        #[test]
        fn matches_a_vec_model(ops in prop::collection::vec(op(), 1..40)) {
            let mut data = FileData::new();
            let mut model: Vec<u8> = Vec::new();
            for op in ops {
                match op {
                    Op::Write(offset, bytes) => {
                        prop_assert_eq!(data.write_at(offset, &bytes), Ok(bytes.len()));
                        if !bytes.is_empty() {
                            let end = offset as usize + bytes.len();
                            if model.len() < end {
                                model.resize(end, 0);
                            }
                            model[offset as usize..end].copy_from_slice(&bytes);
                        }
                    }
                    Op::SetLen(len) => {
                        data.set_len(len);
                        model.resize(len as usize, 0);
                    }
                    Op::Punch(offset, len) => {
                        data.punch_hole(offset, len);
                        let end = ((offset + len) as usize).min(model.len());
                        if (offset as usize) < end {
                            model[offset as usize..end].fill(0);
                        }
                    }
                    Op::Read(offset, len) => {
                        let start = (offset as usize).min(model.len());
                        let end = (offset as usize + len).min(model.len());
                        prop_assert_eq!(read(&data, offset, len), &model[start..end]);
                    }
                }
                prop_assert_eq!(data.len(), model.len() as u64);
                prop_assert_eq!(read_all(&data), model.clone());
                assert_invariants(&data);
                prop_assert_eq!(data.blocks_512(), data.chunks.len() as u64 * 8);
                // Holes really are zero: the model has no data in a missing chunk.
                for (index, bytes) in model.chunks(CHUNK_SIZE).enumerate() {
                    if !data.chunks.contains_key(&(index as u64)) {
                        prop_assert!(bytes.iter().all(|&b| b == 0), "data in hole {}", index);
                    }
                }
                // Seek results agree with the chunk map, on and around boundaries.
                let mut probe = 0;
                while probe <= data.len() + 1 {
                    for offset in [probe, probe + 1, probe + CS - 1] {
                        prop_assert_eq!(data.seek_data(offset), expected_seek(&data, offset, true));
                        prop_assert_eq!(data.seek_hole(offset), expected_seek(&data, offset, false));
                    }
                    probe += CS;
                }
            }
        }
    }
}
