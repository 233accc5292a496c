//! File handles of passthrough objects: the backend's part of a vfscale
//! handle (the core wraps it with the inode number and a keyed tag,
//! fs/export.rs) is the host's own handle of the object, so a handle
//! outlives vfscale's cache of it, as a handle outlives the kernel's.
//!
//! Layout: `[host type: i32 LE][length: u8][host bytes]`, then, for a
//! non-directory that has a name, the same for the directory it was named
//! in when the handle was made (when both fit in
//! `export::BACKEND_HANDLE_MAX`).
//!
//! Why the directory: the host opens a directory's handle *connected* (its
//! path is known), but a non-directory's, once the host's own dentry is
//! gone, disconnected: no path, and vfscale reaches host files by path.
//! So a non-directory is found as Linux's exportfs_get_name finds a name:
//! by listing its directory for the host inode number.
//!
//! Invariants:
//! - `handle_names` is the only judge of identity: it compares the host
//!   handle of what vfscale has now (the held file, else the object at the
//!   inode's host path) with the handle's, type and bytes, so a removed
//!   file whose host number was reused (another generation) is not it.
//! - `locate_handle` only proposes paths beneath the root (host.rs
//!   `path_beneath`); the core walks them from the root and asks
//!   `handle_names` of what it found.

use super::host::{join, HostHandle};
use super::{Access, Passthrough};
use crate::abi::*;
use crate::fs::export::BACKEND_HANDLE_MAX;
use crate::fs::SuperBlock;
use crate::inode::Inode;
use std::os::fd::{AsRawFd, OwnedFd};

/// Non-directory names gathered from one directory listing, at most.
const MAX_CANDIDATES: usize = 8;

fn put(out: &mut Vec<u8>, h: &HostHandle) {
    out.extend_from_slice(&h.kind.to_le_bytes());
    out.push(h.bytes.len() as u8);
    out.extend_from_slice(&h.bytes);
}

/// Bytes `put` writes for `h`.
fn put_len(h: &HostHandle) -> usize {
    5 + h.bytes.len()
}

/// The first host handle in `bytes` and what follows it.
fn take(bytes: &[u8]) -> Option<(HostHandle, &[u8])> {
    let kind = i32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let len = *bytes.get(4)? as usize;
    let own = bytes.get(5..5 + len)?;
    Some((
        HostHandle {
            kind,
            bytes: own.to_vec(),
        },
        &bytes[5 + len..],
    ))
}

/// The object's host handle and its directory's, if the handle has one.
fn parse(handle: &[u8]) -> Option<(HostHandle, Option<HostHandle>)> {
    let (file, rest) = take(handle)?;
    if rest.is_empty() {
        return Some((file, None));
    }
    let (dir, rest) = take(rest)?;
    rest.is_empty().then_some((file, Some(dir)))
}

/// A handle the host cannot open (any more) is stale; so is one this
/// process may not open (no CAP_DAC_READ_SEARCH): vfscale cannot find its
/// object (docs/COMPATIBILITY.md). Other errors (EIO, EMFILE) stand.
fn stale(e: Errno) -> Errno {
    match e {
        Errno::ENOENT | Errno::EPERM | Errno::EACCES | Errno::EOPNOTSUPP | Errno::EINVAL => {
            Errno::ESTALE
        }
        e => e,
    }
}

/// How long the host is asked again to open a handle while it answers
/// ENOMEM (`open_host_handle`).
const ENOMEM_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

impl Passthrough {
    /// The host's open of handle `h` (`stale` errors as ESTALE). The host
    /// answers ENOMEM, not ESTALE, for a handle of a removed file whose
    /// inode it is still evicting (Linux's iget_locked fails on an inode
    /// being freed, and ext4 reports that as ENOMEM; the eviction of a
    /// removed file frees its blocks, which takes a while): asked again
    /// every millisecond, it says ESTALE once the eviction is done; an
    /// ENOMEM that lasts `ENOMEM_PATIENCE` is returned.
    fn open_host_handle(&self, h: &HostHandle) -> SysResult<OwnedFd> {
        let start = std::time::Instant::now();
        loop {
            match self.host.open_handle(h) {
                Err(Errno::ENOMEM) if start.elapsed() < ENOMEM_PATIENCE => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                r => return r.map_err(stale),
            }
        }
    }

    /// An fd of `inode`'s host object: its held file, else its host path
    /// opened O_PATH.
    fn object_fd(&self, sb: &SuperBlock, inode: &Inode) -> SysResult<std::sync::Arc<OwnedFd>> {
        match self.held_fd(inode, Access::ANY) {
            Some(fd) => Ok(fd),
            None => self
                .open_host(sb, inode, libc::O_PATH)
                .map(std::sync::Arc::new),
        }
    }

    /// `Filesystem::encode_handle`.
    pub(super) fn encode_handle_of(
        &self,
        sb: &SuperBlock,
        inode: &Inode,
        out: &mut Vec<u8>,
    ) -> SysResult<()> {
        let file = self
            .host
            .handle_of(self.object_fd(sb, inode)?.as_raw_fd())?;
        if put_len(&file) > BACKEND_HANDLE_MAX {
            return Err(Errno::EOPNOTSUPP);
        }
        put(out, &file);
        if inode.is_dir() {
            return Ok(());
        }
        // The directory it is named in now, if it has a name (best effort:
        // without it the handle still serves while vfscale holds the
        // object, or while the host can say where it is).
        let Ok(path) = self.path_of(inode) else {
            return Ok(());
        };
        let dir = path
            .iter()
            .rposition(|&b| b == b'/')
            .map_or(&b""[..], |i| &path[..i]);
        let parent = self
            .host
            .open_beneath(dir, libc::O_PATH | libc::O_DIRECTORY)
            .and_then(|fd| self.host.handle_of(fd.as_raw_fd()));
        if let Ok(parent) = parent {
            if put_len(&file) + put_len(&parent) <= BACKEND_HANDLE_MAX {
                put(out, &parent);
            }
        }
        Ok(())
    }

    /// `Filesystem::handle_names`.
    pub(super) fn handle_names_inode(&self, sb: &SuperBlock, inode: &Inode, handle: &[u8]) -> bool {
        let Some((file, _)) = parse(handle) else {
            return false;
        };
        self.object_fd(sb, inode)
            .and_then(|fd| self.host.handle_of(fd.as_raw_fd()))
            .is_ok_and(|now| now == file)
    }

    /// `Filesystem::locate_handle`.
    pub(super) fn locate(&self, handle: &[u8]) -> SysResult<Vec<Box<[u8]>>> {
        let (file, dir) = parse(handle).ok_or(Errno::ESTALE)?;
        let fd = self.open_host_handle(&file)?;
        let st = self.host.fstat(fd.as_raw_fd())?;
        let mut found = Vec::new();
        // Where the host says it is: a directory's place is always known;
        // a non-directory's while the host's dentry is connected.
        if let Ok(path) = self.host.path_beneath(fd.as_raw_fd()) {
            found.push(path);
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return Ok(found);
        }
        let Some(dir) = dir else {
            return Ok(found);
        };
        let Ok(dir_path) = self
            .open_host_handle(&dir)
            .and_then(|d| self.host.path_beneath(d.as_raw_fd()))
        else {
            return Ok(found);
        };
        // Re-opened by its path, contained: the listing is of a directory
        // beneath the root.
        let listing = self
            .host
            .open_beneath(&dir_path, libc::O_RDONLY | libc::O_DIRECTORY)?;
        self.host.list_dir(listing.as_raw_fd(), 0, |e| {
            if e.ino == st.st_ino {
                // The place the host named may be one of these.
                match join(&dir_path, e.name) {
                    Ok(path) if !found.contains(&path) => found.push(path),
                    _ => {}
                }
            }
            found.len() < MAX_CANDIDATES
        })?;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_what_put_wrote_and_refuses_the_rest() {
        let file = HostHandle {
            kind: 1,
            bytes: vec![7; 8],
        };
        let dir = HostHandle {
            kind: -3,
            bytes: vec![],
        };
        let mut one = Vec::new();
        put(&mut one, &file);
        assert_eq!(one.len(), put_len(&file));
        assert_eq!(parse(&one), Some((file.clone(), None)));
        let mut two = one.clone();
        put(&mut two, &dir);
        assert_eq!(parse(&two), Some((file.clone(), Some(dir))));
        // Truncated, or trailing bytes: not a handle this backend made.
        assert_eq!(parse(&one[..one.len() - 1]), None);
        assert_eq!(parse(&[]), None);
        two.push(0);
        assert_eq!(parse(&two), None);
    }
}
