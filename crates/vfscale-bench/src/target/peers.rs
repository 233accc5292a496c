//! The peer crates a Rust user would pick today, as targets, through their
//! own public `FileSystem` traits and nothing else:
//! - `vfs-memoryfs`: `vfs::MemoryFS` (one `RwLock` over a map keyed by full
//!   path; the root is "", other paths start with "/");
//! - `virtual-filesystem`: `virtual_filesystem::memory_fs::MemoryFS` (one
//!   `Mutex` over a tree of hash maps).
//!
//! Neither has descriptors, permissions or getdents: "open+close" is
//! opening a file handle and dropping it, "create" is `create_file` (which
//! truncates an existing file rather than failing, the closest these APIs
//! come to O_CREAT|O_EXCL) and dropping the handle, readdir is iterating the
//! crate's listing to its end. They have no chmod, which `lacks` says.

use super::{failed, Kind, Op, OpResult, Target, TargetId};

/// Why peers cannot run anon-churn.
const NO_PROCESSES: &str = "no processes or descriptor tables to tear down";
const NO_ANON: &str = "a path-keyed file store has no pipes, sockets or eventfds";
const NO_CHMOD: &str = "no chmod (the crate has no permission model)";

/// The `vfs` crate's in-memory filesystem.
pub struct VfsMemoryFs {
    fs: vfs::MemoryFS,
}

impl VfsMemoryFs {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        VfsMemoryFs {
            fs: vfs::MemoryFS::new(),
        }
    }
}

impl Target for VfsMemoryFs {
    type Path = String;
    type Thread = ();

    fn id(&self) -> TargetId {
        TargetId::VfsMemoryFs
    }

    fn lacks(&self, op: Op) -> Option<&'static str> {
        match op {
            Op::Chmod => Some(NO_CHMOD),
            Op::AnonChurn => Some(NO_ANON),
            Op::FdImplosion => Some(NO_PROCESSES),
            _ => None,
        }
    }

    fn in_process(&self) -> bool {
        true
    }

    fn path(&self, rel: &str) -> String {
        format!("/{rel}")
    }

    fn thread(&self) -> OpResult<()> {
        Ok(())
    }

    #[inline]
    fn stat(&self, _: &mut (), p: &String) -> OpResult<Kind> {
        use vfs::FileSystem;
        match self.fs.metadata(p) {
            Ok(m) => Ok(match m.file_type {
                vfs::VfsFileType::File => Kind::File,
                vfs::VfsFileType::Directory => Kind::Dir,
            }),
            Err(e) => Err(failed("metadata", p, &e)),
        }
    }

    #[inline]
    fn open_close(&self, _: &mut (), p: &String) -> OpResult<()> {
        use vfs::FileSystem;
        let f = self
            .fs
            .open_file(p)
            .map_err(|e| failed("open_file", p, &e))?;
        drop(f);
        Ok(())
    }

    #[inline]
    fn create(&self, _: &mut (), p: &String) -> OpResult<()> {
        use vfs::FileSystem;
        let f = self
            .fs
            .create_file(p)
            .map_err(|e| failed("create_file", p, &e))?;
        // Dropping the writer flushes it into the filesystem (its close).
        drop(f);
        Ok(())
    }

    #[inline]
    fn unlink(&self, _: &mut (), p: &String) -> OpResult<()> {
        use vfs::FileSystem;
        self.fs
            .remove_file(p)
            .map_err(|e| failed("remove_file", p, &e))
    }

    fn mkdir(&self, _: &mut (), p: &String) -> OpResult<()> {
        use vfs::FileSystem;
        self.fs
            .create_dir(p)
            .map_err(|e| failed("create_dir", p, &e))
    }

    fn rmdir(&self, _: &mut (), p: &String) -> OpResult<()> {
        use vfs::FileSystem;
        self.fs
            .remove_dir(p)
            .map_err(|e| failed("remove_dir", p, &e))
    }

    fn readdir(&self, _: &mut (), p: &String) -> OpResult<u64> {
        use vfs::FileSystem;
        let it = self.fs.read_dir(p).map_err(|e| failed("read_dir", p, &e))?;
        Ok(it.count() as u64)
    }
}

/// The `virtual-filesystem` crate's in-memory filesystem.
pub struct VirtualFs {
    fs: virtual_filesystem::memory_fs::MemoryFS,
}

impl VirtualFs {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        VirtualFs {
            fs: virtual_filesystem::memory_fs::MemoryFS::default(),
        }
    }
}

impl Target for VirtualFs {
    type Path = String;
    type Thread = ();

    fn id(&self) -> TargetId {
        TargetId::VirtualFs
    }

    fn lacks(&self, op: Op) -> Option<&'static str> {
        match op {
            Op::Chmod => Some(NO_CHMOD),
            Op::AnonChurn => Some(NO_ANON),
            Op::FdImplosion => Some(NO_PROCESSES),
            _ => None,
        }
    }

    fn in_process(&self) -> bool {
        true
    }

    fn path(&self, rel: &str) -> String {
        format!("/{rel}")
    }

    fn thread(&self) -> OpResult<()> {
        Ok(())
    }

    #[inline]
    fn stat(&self, _: &mut (), p: &String) -> OpResult<Kind> {
        use virtual_filesystem::FileSystem;
        match self.fs.metadata(p) {
            Ok(m) if m.is_file() => Ok(Kind::File),
            Ok(m) if m.is_directory() => Ok(Kind::Dir),
            Ok(_) => Ok(Kind::Other),
            Err(e) => Err(failed("metadata", p, &e)),
        }
    }

    #[inline]
    fn open_close(&self, _: &mut (), p: &String) -> OpResult<()> {
        use virtual_filesystem::FileSystem;
        let f = self
            .fs
            .open_file(p)
            .map_err(|e| failed("open_file", p, &e))?;
        drop(f);
        Ok(())
    }

    #[inline]
    fn create(&self, _: &mut (), p: &String) -> OpResult<()> {
        use virtual_filesystem::FileSystem;
        let f = self
            .fs
            .create_file(p)
            .map_err(|e| failed("create_file", p, &e))?;
        drop(f);
        Ok(())
    }

    #[inline]
    fn unlink(&self, _: &mut (), p: &String) -> OpResult<()> {
        use virtual_filesystem::FileSystem;
        self.fs
            .remove_file(p)
            .map_err(|e| failed("remove_file", p, &e))
    }

    fn mkdir(&self, _: &mut (), p: &String) -> OpResult<()> {
        use virtual_filesystem::FileSystem;
        self.fs
            .create_dir(p)
            .map_err(|e| failed("create_dir", p, &e))
    }

    fn rmdir(&self, _: &mut (), p: &String) -> OpResult<()> {
        use virtual_filesystem::FileSystem;
        self.fs
            .remove_dir(p)
            .map_err(|e| failed("remove_dir", p, &e))
    }

    fn readdir(&self, _: &mut (), p: &String) -> OpResult<u64> {
        use virtual_filesystem::FileSystem;
        let it = self.fs.read_dir(p).map_err(|e| failed("read_dir", p, &e))?;
        let mut n = 0;
        for e in it {
            e.map_err(|e| failed("read_dir entry", p, &e))?;
            n += 1;
        }
        Ok(n)
    }
}
