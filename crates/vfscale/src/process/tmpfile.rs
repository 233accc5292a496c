//! open(O_TMPFILE): an unnamed regular file in a directory's instance.
//!
//! The file is an inode with no links under a dentry named `#<ino>` that
//! is never hashed nor filed in its directory's index (Linux's
//! `d_tmpfile`): the dentry holds references on the directory's dentry and
//! on the inode, the open file holds the dentry, and when the last
//! descriptor goes the pair is freed as an unlinked file's is (the inode's
//! reservation in the instance returns with it). The directory's size and
//! times do not change (shmem_tmpfile).
//!
//! Invariants:
//! - Without O_EXCL the dentry carries `D_LINKABLE` from before it is
//!   published; `linkat(fd, "", ..., AT_EMPTY_PATH)` may then give the inode
//!   its first name (vfs_link's I_LINKABLE). Only that link clears the
//!   flag, with a test-and-clear inside the inode's attribute write
//!   section that raises nlink from 0 (names.rs), so two racing links
//!   cannot both take it, and once the inode had a name and lost it again
//!   no link revives it (ENOENT, as Linux).
//! - The first link takes no inode reservation: the one taken here covers
//!   the inode's first name (shmem_link reserves only for nlink > 0).
//! - On a backend-served instance the backend makes the inode
//!   (`Filesystem::tmpfile`: the host's own O_TMPFILE file, held open by
//!   the backend) and the open description holds it like any backend
//!   file's; the dentry and the linkable rule are the same.

use super::open::{backend_open, open_status};
use super::Process;
use crate::abi::*;
use crate::dcache::dentry::D_LINKABLE;
use crate::dcache::name::NameKey;
use crate::dcache::walk::{WALK_DIRECTORY, WALK_FOLLOW};
use crate::file::{FMODE_READ, FMODE_WRITE, FMODE_WRITER};
use crate::inode::InodeBody;
use crate::sync::lock::RwLock;
use std::io::Write;
use std::sync::Arc;

impl Process {
    /// The O_TMPFILE branch of `sys_openat` (after O_PATH's masking, which
    /// drops the flag: open(O_PATH | O_TMPFILE) opens the directory). Errors
    /// in the kernel's order: the flags (build_open_flags), the file and
    /// descriptor limits, the walk, a read-only mount (EROFS), the
    /// directory's write and search permission, a backend without unnamed
    /// files (EOPNOTSUPP), the instance's inode limit.
    #[cold]
    #[inline(never)]
    pub(super) fn open_tmpfile(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mode: u32,
        resolve: u32,
    ) -> SysResult<Fd> {
        // O_TMPFILE carries O_DIRECTORY, excludes O_CREAT, and the access
        // mode must ask for writing (ACC_MODE: O_RDONLY alone does not).
        if flags & (O_TMPFILE | O_CREAT) != O_TMPFILE || flags & O_ACCMODE == O_RDONLY {
            return Err(Errno::EINVAL);
        }
        if !self.cred.is_root() && self.vfs.at_file_limit() {
            return Err(Errno::ENFILE);
        }
        if !self.files.has_free_slot() {
            return Err(Errno::EMFILE);
        }
        let _guard = self.vfs.collector.enter();
        let walk_flags = WALK_DIRECTORY
            | if flags & O_NOFOLLOW != 0 {
                0
            } else {
                WALK_FOLLOW
            };
        let (dir_path, dir) = loop {
            let found = if resolve == 0 {
                self.lookup_at(&self.cred, dirfd, path, AT_SYMLINK_NOFOLLOW, walk_flags)?
            } else {
                self.lookup_resolving(dirfd, path, walk_flags | resolve)?
            };
            if found.inode.is_null() {
                return Err(Errno::ENOENT);
            }
            // The file's mount reference; a mount detached meanwhile: walk
            // again (as open_found).
            if self.vfs.mntget_rcu(found.path.mnt) {
                break (found.path, found.inode);
            }
        };
        // SAFETY: the walk found it positive, and our guard keeps what it
        // found allocated.
        let (dir, mnt) = unsafe { (&*dir, &*dir_path.mnt) };
        // do_tmpfile: write access to the mount before the directory's
        // permission; the file keeps the unit if it is open for writing.
        let made = mnt.want_write().and_then(|()| {
            self.make_tmpfile(dir_path.dentry, dir, flags, mode)
                .inspect_err(|_| mnt.drop_write())
        });
        let (dentry, inode) = match made {
            Ok(pair) => pair,
            Err(e) => {
                self.vfs.mntput(dir_path.mnt);
                return Err(e);
            }
        };
        let acc = flags & O_ACCMODE;
        let fmode = (if acc == O_RDWR { FMODE_READ } else { 0 })
            | (if acc == O_WRONLY || acc == O_RDWR {
                FMODE_WRITE | FMODE_WRITER
            } else {
                // Access mode 3 grants neither.
                mnt.drop_write();
                0
            });
        // SAFETY: the dentry just made holds a reference on it.
        let fmode = backend_open(unsafe { &*inode }, fmode);
        // F_GETFL shows O_TMPFILE, as Linux's f_flags keep it.
        let status = open_status(flags) | (flags & O_TMPFILE);
        let file = self.vfs.alloc_file(
            dir_path.mnt,
            dentry,
            inode,
            fmode,
            status,
            Arc::as_ptr(&self.cred) as usize,
            core::ptr::null(),
        );
        self.install_opened(file, flags)
    }

    /// The nameless inode and its dentry below `dir_d` (whose inode is
    /// `dir`), one reference on the dentry for the caller.
    fn make_tmpfile(
        &self,
        dir_d: *const crate::dcache::dentry::Dentry,
        dir: &crate::inode::Inode,
        flags: i32,
        mode: u32,
    ) -> SysResult<(
        *const crate::dcache::dentry::Dentry,
        *const crate::inode::Inode,
    )> {
        let dir_perm = dir.perm_attr();
        self.may_write_dir_as(dir, dir_perm)?;
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*dir.sb };
        // The inode and the dentry are charged to our group.
        let bytes = (crate::reclaim::KIND_BYTES[0] + crate::reclaim::KIND_BYTES[1]) as u64;
        self.vfs.admit(bytes, Errno::ENOMEM)?;
        let (uid, gid, m) = self.owner_in_as(dir_perm, S_IFREG | (mode & S_IALLUGO));
        let (inode, ino) = if sb.backend_served {
            let inode = sb.fs.tmpfile(sb, dir, self.backend_mode(m), uid, gid)?;
            // SAFETY: just made by the backend, ours alone.
            unsafe { self.vfs.adopt_backend_inode(inode) };
            // SAFETY: our reference keeps it.
            (inode, unsafe { &*inode }.ino)
        } else {
            sb.reserve_inode()?;
            let (m, acls) = self.new_mode_in(dir, dir_perm.0, m);
            let ino = sb.ino_alloc.alloc();
            let inode = self.vfs.alloc_inode(
                sb,
                ino,
                m,
                uid,
                gid,
                InodeBody::Regular(RwLock::new(Default::default())),
            );
            acls.attach(sb, ino);
            // SAFETY: ours alone until the dentry below is in a file.
            unsafe { &*inode }.update_attr(|w| w.set_nlink(0));
            (inode, ino)
        };
        let mut name = [0u8; 24];
        let len = {
            let mut w = &mut name[..];
            // A u64 and '#' fit 24 bytes.
            let _ = write!(w, "#{ino}");
            24 - w.len()
        };
        let key = NameKey::new(&name[..len]);
        // A directory whose dentry is being killed (removed and unused):
        // answered as a removed directory. (The inode's put returns its
        // reservation.)
        let Some(dentry) = self.vfs.new_unhashed_dentry(sb, dir_d, &key) else {
            self.vfs.iput(inode);
            return Err(Errno::ENOENT);
        };
        let linkable = if flags & O_EXCL != 0 { 0 } else { D_LINKABLE };
        self.vfs.bind_unhashed(dentry, inode, linkable);
        Ok((dentry, inode))
    }
}
