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
}

impl<'a> NameKey<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        NameKey {
            bytes,
            hash: name_hash(bytes),
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

/// Little-endian word `i` of `bytes`, zero-padded past the end.
#[inline(always)]
pub fn name_word(bytes: &[u8], i: usize) -> u64 {
    let start = i * 8;
    match bytes.get(start..start + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().unwrap()),
        None => {
            let tail = bytes.get(start..).unwrap_or(&[]);
            tail.iter().rev().fold(0u64, |w, &b| (w << 8) | b as u64)
        }
    }
}

pub fn name_hash(bytes: &[u8]) -> u32 {
    let mut h: u64 = bytes.len() as u64;
    for i in 0..bytes.len().div_ceil(8) {
        h = (h ^ name_word(bytes, i)).wrapping_mul(MIX);
        h ^= h >> 29;
    }
    (h ^ (h >> 32)) as u32
}

/// The 64-bit hash that picks a bucket for (parent, name).
#[inline]
pub fn bucket_hash(parent: *const Dentry, name_hash: u32) -> u64 {
    let x = (parent as u64).wrapping_mul(MIX) ^ (name_hash as u64);
    let x = x.wrapping_mul(MIX);
    x ^ (x >> 31)
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
}
