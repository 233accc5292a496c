//! tmpfs: the in-memory filesystem. Its namespace lives in the dcache itself
//! (positive dentries are pinned while their name exists, as Linux's tmpfs
//! does); file contents live in `data::FileData` inside the inode.
pub mod data;

use super::{Filesystem, SuperBlock};
use crate::abi::SysResult;
use crate::inode::Inode;

/// The in-memory backend: the dcache is the namespace.
pub struct Tmpfs;

impl Filesystem for Tmpfs {
    fn fs_type(&self) -> &'static str {
        "tmpfs"
    }

    fn has_inode_flags(&self) -> bool {
        true
    }

    fn dcache_is_authoritative(&self) -> bool {
        true
    }

    fn lookup(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
    ) -> SysResult<Option<super::FoundInode>> {
        Ok(None)
    }
}
