//! memfd: an anonymous regular file. It is an `AnonInode` whose inode body
//! is ordinary tmpfs file data, so read, write, pread, lseek, ftruncate and
//! fstat take the regular-file paths unchanged; its dentry stores the name
//! ("memfd:NAME") because it is user-given. Created by
//! `Process::memfd_create` (process/anon.rs); freed like every anonymous
//! node by its last file's close, which also returns its blocks to the
//! anonymous superblock's accounting (anon/mod.rs).
//!
//! Seals (F_ADD_SEALS) are not implemented (docs/COMPATIBILITY.md).
