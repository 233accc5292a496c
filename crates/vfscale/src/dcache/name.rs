//! Name hashing and the lookup key.
//!
//! A name's 32-bit hash is computed once per path component (word at a time);
//! the bucket is chosen by mixing it with the parent dentry's address, so one
//! table serves every directory of every superblock.

use super::dentry::Dentry;

/// A path component prepared for hash lookups.
#[derive(Clone, Copy, Debug)]
pub struct NameKey<'a> {
    pub bytes: &'a [u8],
    pub hash: u32,
    /// The name's first little-endian word, zero-padded: names of up to 8
    /// bytes compare with one load.
    pub first_word: u64,
}

impl<'a> NameKey<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        if bytes.len() <= 8 {
            // One word: the hash without `name_hash`'s loop.
            let w = name_word(bytes, 0);
            let h = if bytes.is_empty() { 0 } else { hash_mix(0, w) };
            return NameKey {
                bytes,
                hash: hash_finish(h, bytes.len()),
                first_word: w,
            };
        }
        NameKey {
            bytes,
            hash: name_hash(bytes),
            first_word: name_word(bytes, 0),
        }
    }

    /// A key for a component about to be looked up: ENAMETOOLONG past
    /// NAME_MAX (Linux checks the last component only when it looks it up).
    pub fn lookup(bytes: &'a [u8]) -> crate::abi::SysResult<Self> {
        if bytes.len() > crate::abi::NAME_MAX {
            return Err(crate::abi::Errno::ENAMETOOLONG);
        }
        Ok(Self::new(bytes))
    }

    /// hash in the high half, length in the low half: what `Dentry::hash_len`
    /// stores, so one compare rejects most non-matches.
    pub fn hash_len(&self) -> u64 {
        ((self.hash as u64) << 32) | self.bytes.len() as u64
    }
}

const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
const LOW_BYTES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
const SLASHES: u64 = 0x2f2f_2f2f_2f2f_2f2f;

/// Little-endian word `i` of `bytes`, zero-padded past the end.
#[inline(always)]
pub fn name_word(bytes: &[u8], i: usize) -> u64 {
    load_word(bytes, i * 8).0
}

/// Bytes `at..at + 8` of `s` as a little-endian word, zero past the end of
/// `s`, and how many of the eight bytes were real. Never reads outside `s`:
/// a short tail is put together from two overlapping loads, not byte by
/// byte.
#[inline(always)]
pub fn load_word(s: &[u8], at: usize) -> (u64, usize) {
    let tail = s.get(at..).unwrap_or(&[]);
    if let Some(w) = tail.first_chunk::<8>() {
        return (u64::from_le_bytes(*w), 8);
    }
    let n = tail.len();
    // 4 to 7 bytes first: one compare on the way to the most common tail.
    let w = if n >= 4 {
        let lo = u32::from_le_bytes(tail[..4].try_into().unwrap()) as u64;
        let hi = u32::from_le_bytes(tail[n - 4..].try_into().unwrap()) as u64;
        lo | hi << (8 * (n - 4))
    } else if n > 0 {
        tail[0] as u64
            | (tail[n / 2] as u64) << (8 * (n / 2))
            | (tail[n - 1] as u64) << (8 * (n - 1))
    } else {
        0
    };
    (w, n)
}

/// One step of the name hash: every whole or zero-padded 8-byte word of a
/// name, in order. The multiply is the step's last operation, so the
/// running value's high half is its best-mixed part: the next step folds
/// it down (into the bits the next multiply spreads upward) before adding
/// its word; the first step has nothing to fold (`h` is 0, which the
/// compiler sees in the one-word paths).
#[inline(always)]
fn hash_mix(h: u64, word: u64) -> u64 {
    (h ^ (h >> 29) ^ word).wrapping_mul(MIX)
}

/// The end of the name hash: the high half of the last multiply (where
/// every bit of the words reaches), plus the length, which goes in last so
/// a scanner that learns the length only at the end hashes in one pass. No
/// multiply here: the bucket index multiplies once more
/// (`ChainTable::bucket_index`), and every operation on this chain delays
/// the first memory access of a lookup (session 8: a one-word name's hash
/// is a multiply, a shift and an add).
#[inline(always)]
fn hash_finish(h: u64, len: usize) -> u32 {
    ((h >> 32) as u32).wrapping_add(len as u32)
}

pub fn name_hash(bytes: &[u8]) -> u32 {
    let mut h = 0;
    for i in 0..bytes.len().div_ceil(8) {
        h = hash_mix(h, name_word(bytes, i));
    }
    hash_finish(h, bytes.len())
}

/// How a scanned path component ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComponentEnd {
    /// At a `/` or at the end of the path.
    Separator,
    /// At a NUL byte (EINVAL at the API boundary).
    Nul,
    /// The component is longer than NAME_MAX; scanning stopped.
    TooLong,
}

/// Scans the component that starts at `path[at]` (not a `/`) eight bytes at
/// a time, hashing as it goes (Linux's `hash_name`): returns its key, where
/// it ends and how. One pass over the bytes finds the separator, notices a
/// NUL and computes the same hash as `name_hash`.
#[inline(always)]
pub fn scan_component(path: &[u8], at: usize) -> (NameKey<'_>, ComponentEnd) {
    let mut h = 0;
    let mut i = at;
    let mut first_word = None;
    loop {
        let (w, real) = load_word(path, i);
        let delim = zero_bytes(w) | zero_bytes(w ^ SLASHES);
        // The lowest flagged byte is exact (the trick's false positives lie
        // only above a true zero byte); bytes past the path's end count as
        // the end.
        let k = ((delim.trailing_zeros() / 8) as usize).min(real);
        if k == 8 {
            h = hash_mix(h, w);
            first_word.get_or_insert(w);
            i += 8;
            if i - at > crate::abi::NAME_MAX {
                return (NameKey::new(&path[at..i]), ComponentEnd::TooLong);
            }
            continue;
        }
        let last = if k > 0 {
            w & (u64::MAX >> (64 - 8 * k))
        } else {
            0
        };
        if k > 0 {
            h = hash_mix(h, last);
        }
        i += k;
        let bytes = &path[at..i];
        let end = if k < real && w >> (8 * k) & 0xff == 0 {
            ComponentEnd::Nul
        } else if bytes.len() > crate::abi::NAME_MAX {
            ComponentEnd::TooLong
        } else {
            ComponentEnd::Separator
        };
        let key = NameKey {
            bytes,
            hash: hash_finish(h, bytes.len()),
            first_word: first_word.unwrap_or(last),
        };
        return (key, end);
    }
}

/// The fast walk's scan of a short component: the key of the component at
/// `path[at..]` (`at` <= `path.len()`) when it is 1 to 8 bytes long and
/// ends at a `/` or at the end of the path, with the hash `name_hash`
/// gives. One load (two for a tail under 8 bytes; one more byte for an
/// 8-byte name, the common generated-name length, e.g. `cold-lookup`'s
/// `f0000000`) and no loop. `None` otherwise (a longer or empty
/// component): the caller runs `scan_component`.
///
/// A NUL is an ordinary byte here (the full scan looks for it): no cached
/// name holds one (every path that names something is checked for NUL
/// first), so a key with one matches no dentry, and a walk that meets it
/// falls back to the full walk, which reports EINVAL. Looking for the
/// separator alone is half the bit tricks.
#[inline(always)]
pub fn scan_short_component(path: &[u8], at: usize) -> Option<NameKey<'_>> {
    let rest = path.get(at..)?;
    let (w, real) = load_word(rest, 0);
    let slashes = zero_bytes(w ^ SLASHES);
    // Up to the first slash (the lowest flagged byte is exact) or the end
    // of the path: 8 when the word holds neither.
    let k = ((slashes.trailing_zeros() / 8) as usize).min(real);
    // The 1-to-7-byte case first, with the one compare it always had.
    let word = if k.wrapping_sub(1) < 7 {
        // The bytes below the first slash: `slashes ^ (slashes - 1)` sets
        // every bit up to its flag, the top bit of that byte (all bits if
        // there is none). Bytes past the end of the path are zero already.
        w & ((slashes ^ slashes.wrapping_sub(1)) >> 8)
    } else if k == 8 && rest.get(8).is_none_or(|&b| b == b'/') {
        // Eight name bytes, ending at a `/` or at the end of the path.
        w
    } else {
        return None;
    };
    Some(NameKey {
        bytes: rest.get(..k)?,
        hash: hash_finish(hash_mix(0, word), k),
        first_word: word,
    })
}

/// True if `name` is "." or "..", which no dentry is named.
pub fn is_dot_or_dotdot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// The high bit of every zero byte of `w` set, at least for the lowest one
/// (the classic has-zero-byte trick).
#[inline(always)]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(LOW_BYTES) & !w & HIGH_BITS
}

/// The 64-bit key that picks a bucket for (parent, name); the table's
/// Fibonacci multiply (`ChainTable::bucket_index`) mixes it. The parent's
/// multiply does not depend on the name, so it runs beside the name hash.
#[inline]
pub fn bucket_hash(parent: *const Dentry, name_hash: u32) -> u64 {
    (parent as u64).wrapping_mul(MIX) ^ (name_hash as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_separates_and_repeats() {
        assert_eq!(name_hash(b"abc"), name_hash(b"abc"));
        assert_ne!(name_hash(b"abc"), name_hash(b"abd"));
        assert_ne!(name_hash(b"a"), name_hash(b"a\0"));
        assert_eq!(
            name_word(b"abcdefghij", 1),
            u64::from_le_bytes(*b"ij\0\0\0\0\0\0")
        );
        let k = NameKey::new(b"xyz");
        assert_eq!(k.hash_len() & 0xffff_ffff, 3);
    }

    #[test]
    fn load_word_matches_bytewise_padding() {
        let s: Vec<u8> = (1..=20).collect();
        for at in 0..=s.len() {
            let mut want = [0u8; 8];
            let real = (s.len() - at).min(8);
            want[..real].copy_from_slice(&s[at..at + real]);
            assert_eq!(
                load_word(&s, at),
                (u64::from_le_bytes(want), real),
                "at {at}"
            );
        }
    }

    #[test]
    fn scan_component_agrees_with_name_hash() {
        let names: [&[u8]; 8] = [
            b"a",
            b"file",
            b"exactly8",
            b"seventeen_bytes_x",
            b"with space",
            &[0xff, 0x80, 0x7f],
            b"0123456789abcdef",
            b"q",
        ];
        for name in names {
            for (suffix, end) in [
                (&b""[..], ComponentEnd::Separator),
                (b"/", ComponentEnd::Separator),
                (b"//x", ComponentEnd::Separator),
                (b"\0rest", ComponentEnd::Nul),
            ] {
                let mut path = b"//".to_vec();
                path.extend_from_slice(name);
                path.extend_from_slice(suffix);
                let (key, got_end) = scan_component(&path, 2);
                assert_eq!(key.bytes, name);
                assert_eq!(key.hash, name_hash(name), "{name:?}");
                assert_eq!(key.first_word, NameKey::new(name).first_word, "{name:?}");
                assert_eq!(got_end, end, "{name:?} {suffix:?}");
            }
        }
    }

    #[test]
    fn name_key_new_agrees_with_name_hash() {
        let names: [&[u8]; 6] = [
            b"",
            b"a",
            b"file",
            b"exactly8",
            b"nine_byte",
            b"0123456789abcdefX",
        ];
        for name in names {
            let k = NameKey::new(name);
            assert_eq!(k.hash, name_hash(name), "{name:?}");
            assert_eq!(k.first_word, name_word(name, 0), "{name:?}");
        }
    }

    /// The short scan takes the component up to the first slash (NUL
    /// included) when it is 1 to 8 bytes long, and agrees with
    /// `scan_component` wherever that finds no NUL.
    #[test]
    fn scan_short_component_agrees_with_scan_component() {
        let paths: [&[u8]; 19] = [
            b"/a",
            b"/file",
            b"/file/x",
            b"/seven77",
            b"/exactly8",
            b"/exactly8/",
            b"/exactly8/x",
            b"/exactly8\0",
            b"/exactly8x",
            b"/exactly8x/y",
            b"/exactl\0/",
            b"/fi\0le",
            b"/\0",
            b"//x",
            b"/ab//",
            b"/.",
            b"/../x",
            b"/",
            b"/\0\0\0\0\0\0\0\0/",
        ];
        for path in paths {
            let component = path[1..].split(|&b| b == b'/').next().unwrap();
            let want = (1..=8).contains(&component.len()).then_some(component);
            let short = scan_short_component(path, 1);
            assert_eq!(short.map(|k| k.bytes), want, "{path:?}");
            let Some(short) = short else { continue };
            assert_eq!(short.hash, name_hash(component), "{path:?}");
            assert_eq!(short.first_word, name_word(component, 0), "{path:?}");
            let (key, end) = scan_component(path, 1);
            if end != ComponentEnd::Nul {
                assert_eq!(end, ComponentEnd::Separator, "{path:?}");
                assert_eq!(short.bytes, key.bytes, "{path:?}");
                assert_eq!(short.hash, key.hash, "{path:?}");
                assert_eq!(short.first_word, key.first_word, "{path:?}");
            }
        }
    }

    /// A million names of one directory spread over 2^20 buckets as a
    /// random function would: about 1/e of the buckets empty, short chains.
    /// One-word names and names whose words differ only in the last one.
    #[test]
    fn names_spread_over_buckets() {
        let bits = 20;
        let table: crate::dcache::hash::ChainTable<crate::dcache::dentry::Dentry> =
            crate::dcache::hash::ChainTable::with_bucket_bits(bits);
        let parent = 0x7f12_3456_7840usize as *const Dentry;
        let formats: [fn(u32) -> String; 2] =
            [|i| format!("e{i}"), |i| format!("a_common_prefix_{i}")];
        for name_of in formats {
            let mut counts = vec![0u32; 1 << bits];
            for i in 0..1u32 << bits {
                let name = name_of(i);
                counts[table.bucket_index(bucket_hash(parent, name_hash(name.as_bytes())))] += 1;
            }
            let empty = counts.iter().filter(|&&c| c == 0).count() as f64 / counts.len() as f64;
            let longest = *counts.iter().max().unwrap();
            assert!(
                (0.34..0.40).contains(&empty),
                "{}: empty fraction {empty}",
                name_of(0)
            );
            assert!(longest <= 12, "{}: longest chain {longest}", name_of(0));
        }
    }

    #[test]
    fn scan_component_stops_past_name_max() {
        let long = vec![b'x'; 300];
        let (_, end) = scan_component(&long, 0);
        assert_eq!(end, ComponentEnd::TooLong);
        let exact = vec![b'y'; crate::abi::NAME_MAX];
        let (key, end) = scan_component(&exact, 0);
        assert_eq!(
            (key.bytes.len(), end),
            (crate::abi::NAME_MAX, ComponentEnd::Separator)
        );
        assert_eq!(key.hash, name_hash(&exact));
    }
}
