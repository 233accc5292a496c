//! Inodes of the model: one `Node` per inode, kept in a plain map by
//! `NodeId` (filesystem instance, inode number).
//!
//! Invariants:
//! - `mode` always carries the file type bits, and they never change;
//! - a directory's `parent` is the directory that holds (or, once removed,
//!   last held) its one name; a filesystem root is its own parent;
//! - `by_name` and `by_cookie` describe the same entries; cookies start at 2
//!   (0 and 1 are "." and "..") and come from `next_cookie`, which only grows;
//! - a directory's `nlink` is 2 + its subdirectories while it has a name, 0
//!   once removed (`dead`); a removed directory is empty;
//! - regular file data is sparse: a page exists once a write or fallocate
//!   touched it (as tmpfs allocates on write, never on read of a hole);
//!   pages past `round_up(size, PAGE)` are only fallocate's (KEEP_SIZE), and
//!   a page fallocate added stays *unwritten* (a hole for SEEK_DATA and
//!   SEEK_HOLE, as a shmem page that is not uptodate) until written.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use vfscale::abi::*;

/// Page size of the modelled tmpfs (st_blksize, allocation unit).
pub(crate) const PAGE: u64 = 4096;
/// tmpfs charges each directory entry 20 bytes of i_size (BOGO_DIRENT_SIZE);
/// an empty directory has 2 (for "." and "..").
pub(crate) const BOGO_DIRENT_SIZE: i64 = 20;
/// Symlink bodies of up to this many bytes (with the NUL) are stored inline
/// by tmpfs and use no block (SHORT_SYMLINK_LEN).
const SHORT_SYMLINK_LEN: usize = 128;
/// Cookie of the first real directory entry (after "." = 0 and ".." = 1).
pub(crate) const FIRST_COOKIE: u64 = 2;

/// An inode's identity: filesystem instance (st_dev) and inode number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct NodeId {
    pub dev: u32,
    pub ino: u64,
}

/// Regular file contents: sparse pages plus the size.
#[derive(Default)]
pub(crate) struct FileData {
    pages: BTreeMap<u64, Box<[u8]>>,
    /// Pages fallocate added that no write has touched since.
    unwritten: BTreeSet<u64>,
    pub size: u64,
}

impl FileData {
    /// Copies bytes at `off` into `buf`; returns the count (0 at or past EOF).
    pub fn read(&self, off: u64, buf: &mut [u8]) -> usize {
        if off >= self.size {
            return 0;
        }
        let n = (buf.len() as u64).min(self.size - off) as usize;
        let mut done = 0;
        while done < n {
            let pos = off + done as u64;
            let (idx, in_page) = (pos / PAGE, (pos % PAGE) as usize);
            let chunk = (PAGE as usize - in_page).min(n - done);
            let dst = &mut buf[done..done + chunk];
            match self.pages.get(&idx) {
                Some(p) => dst.copy_from_slice(&p[in_page..in_page + chunk]),
                None => dst.fill(0),
            }
            done += chunk;
        }
        n
    }

    /// Writes `data` at `off`, allocating the pages it touches.
    pub fn write(&mut self, off: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let pos = off + done as u64;
            let (idx, in_page) = (pos / PAGE, (pos % PAGE) as usize);
            let chunk = (PAGE as usize - in_page).min(data.len() - done);
            let page = self
                .pages
                .entry(idx)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            page[in_page..in_page + chunk].copy_from_slice(&data[done..done + chunk]);
            self.unwritten.remove(&idx);
            done += chunk;
        }
        if !data.is_empty() {
            self.size = self.size.max(off + data.len() as u64);
        }
    }

    /// Sets the size. Not growing frees whole pages past the new end
    /// (preallocated ones included) and zeroes the tail of a partial last
    /// page (shmem_setattr's shmem_truncate_range); growing allocates
    /// nothing.
    pub fn truncate(&mut self, size: u64) {
        if size <= self.size {
            let keep = size.div_ceil(PAGE);
            let _ = self.pages.split_off(&keep);
            let _ = self.unwritten.split_off(&keep);
            if size & (PAGE - 1) != 0 {
                if let Some(p) = self.pages.get_mut(&(size / PAGE)) {
                    p[(size % PAGE) as usize..].fill(0);
                }
            }
        }
        self.size = size;
    }

    /// fallocate mode 0 / KEEP_SIZE: allocates the holes of the range as
    /// unwritten pages; the size is the caller's.
    pub fn allocate(&mut self, off: u64, len: u64) {
        for idx in off / PAGE..=(off + len - 1) / PAGE {
            if let std::collections::btree_map::Entry::Vacant(v) = self.pages.entry(idx) {
                v.insert(vec![0u8; PAGE as usize].into_boxed_slice());
                self.unwritten.insert(idx);
            } else {
                // A second fallocate initialises an unwritten page (SGP_FALLOC
                // on a fallocated folio marks it uptodate).
                self.unwritten.remove(&idx);
            }
        }
    }

    /// fallocate PUNCH_HOLE|KEEP_SIZE: frees the pages the range covers
    /// (even past EOF) and zeroes the rest of it below the size.
    pub fn punch_hole(&mut self, off: u64, len: u64) {
        let end = off.saturating_add(len);
        if off >= end {
            return;
        }
        let (first, past) = (off.div_ceil(PAGE), end / PAGE);
        let covered: Vec<u64> = self
            .pages
            .range(first..past.max(first))
            .map(|(&idx, _)| idx)
            .collect();
        for idx in covered {
            self.pages.remove(&idx);
            self.unwritten.remove(&idx);
        }
        let zero_end = end.min(self.size);
        let mut pos = off;
        while pos < zero_end {
            let (idx, in_page) = (pos / PAGE, (pos % PAGE) as usize);
            let n = (PAGE as usize - in_page).min((zero_end - pos) as usize);
            if let Some(p) = self.pages.get_mut(&idx) {
                p[in_page..in_page + n].fill(0);
            }
            pos += n as u64;
        }
    }

    /// Pages written (not fallocate's unwritten ones) from index `from`.
    fn data_pages(&self, from: u64) -> impl Iterator<Item = u64> + '_ {
        self.pages
            .range(from..)
            .map(|(&idx, _)| idx)
            .filter(|idx| !self.unwritten.contains(idx))
    }

    /// SEEK_DATA: the first offset >= `off` inside a written page.
    pub fn seek_data(&self, off: u64) -> Option<u64> {
        if off >= self.size {
            return None;
        }
        let idx = self.data_pages(off / PAGE).next()?;
        let at = (idx * PAGE).max(off);
        (at < self.size).then_some(at)
    }

    /// SEEK_HOLE: the first offset >= `off` outside every written page,
    /// or the size (the virtual hole at EOF). None if `off` >= size.
    pub fn seek_hole(&self, off: u64) -> Option<u64> {
        if off >= self.size {
            return None;
        }
        let mut idx = off / PAGE;
        while self.pages.contains_key(&idx) && !self.unwritten.contains(&idx) {
            idx += 1;
        }
        Some((idx * PAGE).max(off).min(self.size))
    }

    /// 512-byte blocks of the allocated pages.
    pub fn blocks(&self) -> i64 {
        self.pages.len() as i64 * (PAGE as i64 / 512)
    }
}

/// Directory contents.
pub(crate) struct DirData {
    pub parent: NodeId,
    /// The name in `parent` (kept after removal; empty for a root).
    pub name: Vec<u8>,
    pub by_name: HashMap<Vec<u8>, (u64, NodeId)>,
    pub by_cookie: BTreeMap<u64, Vec<u8>>,
    pub next_cookie: u64,
    /// Removed by rmdir or replaced by rename (Linux S_DEAD): lookups and
    /// creations in it fail with ENOENT, getdents64 with ENOENT.
    pub dead: bool,
}

impl DirData {
    pub fn new(parent: NodeId, name: &[u8]) -> DirData {
        DirData {
            parent,
            name: name.to_vec(),
            by_name: HashMap::new(),
            by_cookie: BTreeMap::new(),
            next_cookie: FIRST_COOKIE,
            dead: false,
        }
    }

    /// Adds `name` with a fresh cookie (or the given one, for a rename that
    /// replaces an entry and takes over its position).
    pub fn insert(&mut self, name: &[u8], node: NodeId, cookie: Option<u64>) {
        let cookie = cookie.unwrap_or_else(|| {
            let c = self.next_cookie;
            self.next_cookie += 1;
            c
        });
        self.by_cookie.insert(cookie, name.to_vec());
        self.by_name.insert(name.to_vec(), (cookie, node));
    }

    /// Removes `name`; returns its cookie and inode.
    pub fn remove(&mut self, name: &[u8]) -> Option<(u64, NodeId)> {
        let (cookie, node) = self.by_name.remove(name)?;
        self.by_cookie.remove(&cookie);
        Some((cookie, node))
    }

    /// Points an existing name at another inode (RENAME_EXCHANGE), keeping
    /// its cookie.
    pub fn replace(&mut self, name: &[u8], node: NodeId) {
        if let Some(e) = self.by_name.get_mut(name) {
            e.1 = node;
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<NodeId> {
        self.by_name.get(name).map(|e| e.1)
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// What an inode is, with its type-specific state.
pub(crate) enum Kind {
    Reg(FileData),
    Dir(DirData),
    Symlink(Vec<u8>),
    Fifo,
    Sock,
    Chr,
    Blk,
}

/// One inode.
pub(crate) struct Node {
    pub id: NodeId,
    /// Type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    /// Device number of a character or block device node (the mknod value).
    pub rdev: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
    pub btime: Timespec,
    pub kind: Kind,
    /// References from outside the namespace that keep an unlinked inode
    /// alive: open files, process roots and cwds, mount roots, and (for a
    /// directory) each child directory's parent pointer.
    pub pins: u32,
    /// An O_TMPFILE inode opened without O_EXCL: linkat may give it a name.
    pub linkable: bool,
    /// Extended attributes (tmpfs keeps them on every inode type), by name.
    pub xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
    /// POSIX ACLs (acl.rs): the access ACL, and a directory's default.
    pub access_acl: Option<crate::acl::Acl>,
    pub default_acl: Option<crate::acl::Acl>,
    /// Inode flags (chattr's letters, FS_*_FL; fileattr.rs): only
    /// `TMPFS_FL_MODIFIABLE` bits. Any inode type may carry them (a new
    /// inode takes `TMPFS_FL_INHERITED` from its directory), but only
    /// regular files and directories can have them changed.
    pub flags: u32,
}

impl Node {
    pub fn new(id: NodeId, mode: u32, uid: u32, gid: u32, kind: Kind, now: Timespec) -> Node {
        Node {
            id,
            mode,
            uid,
            gid,
            nlink: 1,
            rdev: 0,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            kind,
            pins: 0,
            linkable: false,
            xattrs: BTreeMap::new(),
            access_acl: None,
            default_acl: None,
            flags: 0,
        }
    }

    pub fn is_dir(&self) -> bool {
        s_isdir(self.mode)
    }
    pub fn is_reg(&self) -> bool {
        s_isreg(self.mode)
    }
    pub fn is_symlink(&self) -> bool {
        s_islnk(self.mode)
    }
    /// special_file: a character or block device, a FIFO or a socket
    /// (opened for writing, it takes no write access to its mount).
    pub fn is_special(&self) -> bool {
        matches!(self.mode & S_IFMT, S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK)
    }

    pub fn dir(&self) -> &DirData {
        match &self.kind {
            Kind::Dir(d) => d,
            _ => panic!("model: {:?} is not a directory", self.id),
        }
    }
    pub fn dir_mut(&mut self) -> &mut DirData {
        match &mut self.kind {
            Kind::Dir(d) => d,
            _ => panic!("model: {:?} is not a directory", self.id),
        }
    }
    pub fn data(&self) -> &FileData {
        match &self.kind {
            Kind::Reg(f) => f,
            _ => panic!("model: {:?} is not a regular file", self.id),
        }
    }
    pub fn data_mut(&mut self) -> &mut FileData {
        match &mut self.kind {
            Kind::Reg(f) => f,
            _ => panic!("model: {:?} is not a regular file", self.id),
        }
    }
    pub fn link_target(&self) -> &[u8] {
        match &self.kind {
            Kind::Symlink(t) => t,
            _ => panic!("model: {:?} is not a symlink", self.id),
        }
    }

    /// IS_IMMUTABLE: no writes, names, attribute or xattr changes.
    pub fn is_immutable(&self) -> bool {
        self.flags & FS_IMMUTABLE_FL != 0
    }
    /// IS_APPEND: writes at the end only; names, attributes and xattrs
    /// stay.
    pub fn is_append(&self) -> bool {
        self.flags & FS_APPEND_FL != 0
    }
    /// IS_IMMUTABLE || IS_APPEND.
    pub fn is_protected(&self) -> bool {
        self.is_immutable() || self.is_append()
    }

    /// True for a directory removed by rmdir or rename.
    pub fn is_dead_dir(&self) -> bool {
        matches!(&self.kind, Kind::Dir(d) if d.dead)
    }

    /// st_size as tmpfs reports it.
    pub fn size(&self) -> i64 {
        match &self.kind {
            Kind::Reg(f) => f.size as i64,
            Kind::Dir(d) => (2 + d.by_name.len() as i64) * BOGO_DIRENT_SIZE,
            Kind::Symlink(t) => t.len() as i64,
            _ => 0,
        }
    }

    /// st_blocks as tmpfs reports it.
    pub fn blocks(&self) -> i64 {
        match &self.kind {
            Kind::Reg(f) => f.blocks(),
            Kind::Symlink(t) if t.len() + 1 > SHORT_SYMLINK_LEN => PAGE as i64 / 512,
            _ => 0,
        }
    }

    pub fn stat(&self) -> Stat {
        Stat {
            dev: self.id.dev as u64,
            ino: self.id.ino,
            mode: self.mode,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: self.rdev,
            size: self.size(),
            blksize: PAGE as i64,
            blocks: self.blocks(),
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
        }
    }

    pub fn statx(&self) -> Statx {
        let rdev = self.rdev as u32;
        Statx {
            mask: STATX_BASIC_STATS | STATX_BTIME,
            blksize: PAGE as u32,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            mode: self.mode as u16,
            ino: self.id.ino,
            size: self.size() as u64,
            blocks: self.blocks() as u64,
            atime: self.atime,
            btime: self.btime,
            ctime: self.ctime,
            mtime: self.mtime,
            // new_decode_dev: 12 bits of major, 20 of minor.
            rdev_major: (rdev & 0xfff00) >> 8,
            rdev_minor: (rdev & 0xff) | ((rdev >> 12) & 0xfff00),
            dev_major: 0,
            dev_minor: self.id.dev,
            // shmem_getattr: the flags it reports, for any inode type;
            // STATX_ATTR_MOUNT_ROOT is the path's (sys_statx).
            attributes: crate::fileattr::statx_attributes(self.flags),
            attributes_mask: STATX_ATTR_MASK_TMPFS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_data() {
        let mut f = FileData::default();
        f.write(5000, b"abc");
        assert_eq!(f.size, 5003);
        assert_eq!(f.blocks(), 8);
        let mut b = [1u8; 8];
        assert_eq!(f.read(4998, &mut b), 5);
        assert_eq!(&b[..5], &[0, 0, b'a', b'b', b'c']);
        assert_eq!(f.seek_data(0), Some(4096));
        assert_eq!(f.seek_hole(0), Some(0));
        assert_eq!(f.seek_hole(4100), Some(5003));
        assert_eq!(f.seek_data(5003), None);
        f.truncate(5001);
        f.truncate(6000);
        assert_eq!(f.read(5000, &mut b), 8);
        assert_eq!(&b[..3], &[b'a', 0, 0]);
        f.truncate(4096);
        assert_eq!(f.blocks(), 0);
        f.write(0, b"");
        assert_eq!(f.size, 4096);
    }
}
