//! The whole model's state — inodes, filesystem instances, mounts, open file
//! descriptions and processes — in plain maps behind one lock, and the
//! reference counting that decides when an object goes away.
//!
//! Invariants (hold whenever the lock is released):
//! - `nodes` holds every inode that has a name (`nlink > 0`), or is pinned
//!   (`pins > 0`), of every live filesystem instance; an inode with neither
//!   is removed at once (`maybe_free`);
//! - a mount is in `mounts` while it is attached, or detached but still
//!   referenced (`refs > 0`: open files, cwds, roots); `mounted_on` maps
//!   (parent mount, mountpoint dentry) to the attached mount on top of it,
//!   and `mp_count` counts attached mounts per mountpoint dentry (Linux's
//!   `is_local_mountpoint`);
//! - a filesystem instance lives while any mount of it does (`Fs::mounts`);
//! - an open file description lives while an fd refers to it (`refs`), and
//!   holds one pin on its inode and one ref on its mount; `nr_files` counts
//!   them (the ENFILE limit);
//! - a process's root and cwd each hold a pin and a mount ref;
//! - read-only state has two bits, as Linux's: the mount's
//!   (`MntFlags::readonly`, MNT_READONLY) and the instance's
//!   (`Fs::readonly`, SB_RDONLY); a mount is effectively read-only when
//!   either is set (`mnt_is_readonly`). Neither bit is set while a writer
//!   (`mnt_writers`) exists on a mount it covers: the remounts that set
//!   them refuse (EBUSY), and opens for writing refuse (EROFS) after.

use crate::node::*;
use crate::pnode::GroupId;
use std::collections::HashMap;
use std::sync::Arc;
use vfscale::abi::*;
use vfscale::{Cred, Fd};

pub(crate) type MountId = u64;
pub(crate) type FileId = u64;
pub(crate) type Pid = u64;

/// A position in the namespace: a mount and an inode inside it (Linux's
/// `struct path`; directories have one dentry, so the inode names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub mnt: MountId,
    pub node: NodeId,
}

/// A dentry as a mountpoint: a directory (its one dentry), or one name of a
/// non-directory (hard links are distinct dentries).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MpKey {
    Dir(NodeId),
    Name(NodeId, Vec<u8>),
}

/// atime policy of a mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtimeMode {
    Relatime,
    Strict,
    NoAtime,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct MntFlags {
    pub noexec: bool,
    pub nodev: bool,
    pub nosuid: bool,
    pub nodiratime: bool,
    pub nosymfollow: bool,
    /// MNT_READONLY: no writes through this mount (the instance may still
    /// be written through others).
    pub readonly: bool,
    pub atime: AtimeMode,
}

impl Default for MntFlags {
    fn default() -> Self {
        MntFlags {
            noexec: false,
            nodev: false,
            nosuid: false,
            nodiratime: false,
            nosymfollow: false,
            readonly: false,
            atime: AtimeMode::Relatime,
        }
    }
}

pub(crate) struct Mount {
    pub dev: u32,
    pub root: NodeId,
    pub root_key: MpKey,
    /// Parent mount and mountpoint while attached to the namespace.
    pub parent: Option<(MountId, MpKey)>,
    /// Attached mounts on top of dentries of this mount.
    pub children: Vec<MountId>,
    /// Open files, cwds and roots inside this mount.
    pub refs: u32,
    pub flags: MntFlags,
    pub attached: bool,
    /// MNT_EXPIRE's mark: set by a first umount2(MNT_EXPIRE), cleared by any
    /// later use of the mount.
    pub expiry_mark: bool,
    /// Propagation (pnode.rs): the peer group (shared), the group it
    /// receives from (slave), and T_UNBINDABLE.
    pub group: Option<GroupId>,
    pub master: Option<GroupId>,
    pub unbindable: bool,
}

pub(crate) struct Fs {
    pub root: NodeId,
    pub next_ino: u64,
    /// Mount records (attached or detached-but-referenced) of this instance.
    pub mounts: u32,
    /// SB_RDONLY: the instance is read-only through every mount of it.
    pub readonly: bool,
    /// SB_SYNCHRONOUS and SB_MANDLOCK as statfs reports them
    /// (ST_SYNCHRONOUS, ST_MANDLOCK): set from mount(2)'s flags by a new
    /// mount and replaced by a remount of the instance (MS_RMT_MASK); no
    /// other effect on a memory filesystem.
    pub st_flags: i64,
}

/// An open file description (Linux `struct file`).
pub(crate) struct OpenFile {
    pub loc: Loc,
    pub readable: bool,
    pub writable: bool,
    pub append: bool,
    pub noatime: bool,
    /// O_PATH: only usable as a dirfd and by fstat, fchdir, fstatfs, close,
    /// dup; everything else is EBADF.
    pub path_only: bool,
    pub pos: i64,
    /// The opener's credential identity (Linux compares `f_cred` pointers
    /// for linkat(AT_EMPTY_PATH)).
    pub cred_id: u64,
    /// Fd table entries referring to it, over all processes.
    pub refs: u32,
}

#[derive(Clone, Copy)]
pub(crate) struct FdEntry {
    pub file: FileId,
    pub cloexec: bool,
}

pub(crate) struct Proc {
    pub cred: Arc<Cred>,
    pub cred_id: u64,
    pub root: Loc,
    pub cwd: Loc,
    pub umask: u32,
    pub fds: Vec<Option<FdEntry>>,
    pub fd_limit: usize,
}

pub(crate) struct State {
    pub nodes: HashMap<NodeId, Node>,
    pub fses: HashMap<u32, Fs>,
    pub mounts: HashMap<MountId, Mount>,
    pub mounted_on: HashMap<(MountId, MpKey), MountId>,
    pub mp_count: HashMap<MpKey, u32>,
    pub files: HashMap<FileId, OpenFile>,
    pub procs: HashMap<Pid, Proc>,
    /// The namespace's first mount; it cannot be unmounted.
    pub ns_root: MountId,
    pub next_dev: u32,
    pub next_mount: MountId,
    /// The last peer group id handed out (pnode.rs).
    pub next_group: GroupId,
    pub next_file: FileId,
    pub next_pid: Pid,
    pub next_cred: u64,
    pub nr_files: usize,
    pub max_files: usize,
}

/// The current time (CLOCK_REALTIME).
pub(crate) fn now() -> Timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    Timespec::new(ts.tv_sec, ts.tv_nsec)
}

impl State {
    pub fn new(max_files: usize) -> State {
        let mut st = State {
            nodes: HashMap::new(),
            fses: HashMap::new(),
            mounts: HashMap::new(),
            mounted_on: HashMap::new(),
            mp_count: HashMap::new(),
            files: HashMap::new(),
            procs: HashMap::new(),
            ns_root: 0,
            next_dev: 1,
            next_mount: 1,
            next_group: 0,
            next_file: 1,
            next_pid: 1,
            next_cred: 1,
            nr_files: 0,
            max_files,
        };
        let dev = st.new_fs(0o755, 0, 0);
        st.ns_root = st.new_mount(dev, st.fses[&dev].root, None, MntFlags::default());
        // The namespace root is attached without a parent.
        st.mount_mut(st.ns_root).attached = true;
        st
    }

    // ---- accessors ----

    pub fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(&id).expect("model: dangling inode")
    }
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        self.nodes.get_mut(&id).expect("model: dangling inode")
    }
    pub fn mount(&self, id: MountId) -> &Mount {
        self.mounts.get(&id).expect("model: dangling mount")
    }
    pub fn mount_mut(&mut self, id: MountId) -> &mut Mount {
        self.mounts.get_mut(&id).expect("model: dangling mount")
    }
    pub fn proc(&self, pid: Pid) -> &Proc {
        self.procs.get(&pid).expect("model: process has exited")
    }
    pub fn proc_mut(&mut self, pid: Pid) -> &mut Proc {
        self.procs.get_mut(&pid).expect("model: process has exited")
    }
    pub fn file(&self, id: FileId) -> &OpenFile {
        self.files.get(&id).expect("model: dangling file")
    }
    pub fn file_mut(&mut self, id: FileId) -> &mut OpenFile {
        self.files.get_mut(&id).expect("model: dangling file")
    }
    pub fn is_dir(&self, id: NodeId) -> bool {
        self.node(id).is_dir()
    }

    // ---- creation ----

    /// A new, empty tmpfs instance; returns its device number.
    pub fn new_fs(&mut self, mode: u32, uid: u32, gid: u32) -> u32 {
        let dev = self.next_dev;
        self.next_dev += 1;
        let root = NodeId { dev, ino: 1 };
        let mut n = Node::new(
            root,
            S_IFDIR | mode,
            uid,
            gid,
            Kind::Dir(DirData::new(root, b"")),
            now(),
        );
        n.nlink = 2;
        self.nodes.insert(root, n);
        self.fses.insert(
            dev,
            Fs {
                root,
                next_ino: 2,
                mounts: 0,
                readonly: false,
                st_flags: 0,
            },
        );
        dev
    }

    /// A new inode number in filesystem `dev`.
    pub fn alloc_ino(&mut self, dev: u32) -> NodeId {
        let fs = self.fses.get_mut(&dev).expect("model: dangling fs");
        let ino = fs.next_ino;
        fs.next_ino += 1;
        NodeId { dev, ino }
    }

    /// A mount record of `dev` rooted at `root`, attached at `at` if given.
    pub fn new_mount(
        &mut self,
        dev: u32,
        root: NodeId,
        at: Option<(MountId, MpKey)>,
        flags: MntFlags,
    ) -> MountId {
        let id = self.next_mount;
        self.next_mount += 1;
        let root_key = MpKey::Dir(root);
        self.new_mount_keyed(id, dev, root, root_key, at, flags);
        id
    }

    pub fn new_mount_keyed(
        &mut self,
        id: MountId,
        dev: u32,
        root: NodeId,
        root_key: MpKey,
        at: Option<(MountId, MpKey)>,
        flags: MntFlags,
    ) {
        self.node_mut(root).pins += 1;
        self.fses.get_mut(&dev).expect("model: dangling fs").mounts += 1;
        self.mounts.insert(
            id,
            Mount {
                dev,
                root,
                root_key,
                parent: None,
                children: Vec::new(),
                refs: 0,
                flags,
                attached: at.is_some(),
                expiry_mark: false,
                group: None,
                master: None,
                unbindable: false,
            },
        );
        if let Some((parent, key)) = at {
            self.attach(id, parent, key);
        }
    }

    /// Attaches mount `id` on top of `key` in mount `parent`.
    pub fn attach(&mut self, id: MountId, parent: MountId, key: MpKey) {
        self.mounted_on.insert((parent, key.clone()), id);
        *self.mp_count.entry(key.clone()).or_insert(0) += 1;
        self.mount_mut(parent).children.push(id);
        let m = self.mount_mut(id);
        m.parent = Some((parent, key));
        m.attached = true;
    }

    /// MS_MOVE: attached mount `id` leaves its place for `key` in mount
    /// `parent`, its children with it.
    pub fn move_mount(&mut self, id: MountId, parent: MountId, key: MpKey) {
        self.detach_one(id);
        self.attach(id, parent, key);
    }

    /// Detaches mount `id` from its parent (not its children).
    pub fn detach_one(&mut self, id: MountId) {
        let m = self.mount_mut(id);
        m.attached = false;
        if let Some((parent, key)) = m.parent.take() {
            self.mounted_on.remove(&(parent, key.clone()));
            let c = self.mp_count.get_mut(&key).expect("model: mp_count");
            *c -= 1;
            if *c == 0 {
                self.mp_count.remove(&key);
            }
            self.mount_mut(parent).children.retain(|&c| c != id);
        }
    }

    /// Detaches the mounts of `ids` (umount_tree's end: each becomes a
    /// parentless detached mount; `ids` holds every attached mount below
    /// each of them) and frees those nobody references.
    pub fn detach_mounts(&mut self, ids: &[MountId]) {
        for &m in ids.iter().rev() {
            self.detach_one(m);
        }
        for &m in ids {
            self.maybe_free_mount(m);
        }
    }

    fn maybe_free_mount(&mut self, id: MountId) {
        let m = self.mount(id);
        if m.attached || m.refs > 0 {
            return;
        }
        let m = self.mounts.remove(&id).expect("model: mount");
        debug_assert!(m.children.is_empty());
        let fs = self.fses.get_mut(&m.dev).expect("model: fs");
        fs.mounts -= 1;
        if fs.mounts == 0 {
            // Nothing can reach this instance any more: drop it whole.
            self.fses.remove(&m.dev);
            self.nodes.retain(|k, _| k.dev != m.dev);
        } else {
            self.unpin(m.root);
        }
    }

    // ---- references ----

    pub fn pin(&mut self, id: NodeId) {
        self.node_mut(id).pins += 1;
    }

    pub fn unpin(&mut self, id: NodeId) {
        let n = self.node_mut(id);
        n.pins -= 1;
        self.maybe_free(id);
    }

    /// Frees an inode that has neither a name nor a pin; a directory's
    /// parent pointer stops pinning the parent.
    pub fn maybe_free(&mut self, id: NodeId) {
        let n = self.node(id);
        if n.nlink > 0 || n.pins > 0 {
            return;
        }
        let n = self.nodes.remove(&id).expect("model: node");
        if let Kind::Dir(d) = n.kind {
            if d.parent != id {
                self.unpin(d.parent);
            }
        }
    }

    pub fn mnt_get(&mut self, id: MountId) {
        self.mount_mut(id).refs += 1;
    }

    pub fn mnt_put(&mut self, id: MountId) {
        let m = self.mount_mut(id);
        m.refs -= 1;
        m.expiry_mark = false;
        self.maybe_free_mount(id);
    }

    pub fn loc_get(&mut self, loc: Loc) {
        self.pin(loc.node);
        self.mnt_get(loc.mnt);
    }

    pub fn loc_put(&mut self, loc: Loc) {
        self.unpin(loc.node);
        self.mnt_put(loc.mnt);
    }

    /// A use of a path in `mnt` that ends with a path_put (clears the
    /// MNT_EXPIRE mark, as Linux's mntput does).
    pub fn touch_mnt(&mut self, mnt: MountId) {
        if let Some(m) = self.mounts.get_mut(&mnt) {
            m.expiry_mark = false;
        }
    }

    // ---- open files and fds ----

    /// A new open file description at `loc` with one reference.
    pub fn new_file(&mut self, file: OpenFile) -> FileId {
        let id = self.next_file;
        self.next_file += 1;
        self.loc_get(file.loc);
        self.files.insert(id, OpenFile { refs: 1, ..file });
        self.nr_files += 1;
        id
    }

    pub fn file_put(&mut self, id: FileId) {
        let f = self.file_mut(id);
        f.refs -= 1;
        if f.refs == 0 {
            let f = self.files.remove(&id).expect("model: file");
            self.nr_files -= 1;
            self.loc_put(f.loc);
        }
    }

    /// The file behind `fd`, O_PATH ones included (fdget_raw).
    pub fn fd_raw(&self, pid: Pid, fd: Fd) -> SysResult<FileId> {
        let p = self.proc(pid);
        usize::try_from(fd)
            .ok()
            .and_then(|i| p.fds.get(i).copied().flatten())
            .map(|e| e.file)
            .ok_or(Errno::EBADF)
    }

    /// The file behind `fd`, O_PATH ones excluded (fdget).
    pub fn fd_get(&self, pid: Pid, fd: Fd) -> SysResult<FileId> {
        let id = self.fd_raw(pid, fd)?;
        if self.file(id).path_only {
            return Err(Errno::EBADF);
        }
        Ok(id)
    }

    /// The lowest free descriptor >= `min` below the process's limit.
    pub fn alloc_fd(&self, pid: Pid, min: usize) -> SysResult<Fd> {
        let p = self.proc(pid);
        let mut i = min;
        while i < p.fds.len() && p.fds[i].is_some() {
            i += 1;
        }
        if i >= p.fd_limit {
            return Err(Errno::EMFILE);
        }
        Ok(i as Fd)
    }

    /// Puts `file` (whose reference the caller hands over) at `fd`, closing
    /// what was there.
    pub fn install_fd(&mut self, pid: Pid, fd: Fd, file: FileId, cloexec: bool) {
        let i = fd as usize;
        let p = self.proc_mut(pid);
        if p.fds.len() <= i {
            p.fds.resize(i + 1, None);
        }
        let old = p.fds[i].replace(FdEntry { file, cloexec });
        if let Some(old) = old {
            self.file_put(old.file);
        }
    }

    pub fn close_fd(&mut self, pid: Pid, fd: Fd) -> SysResult<()> {
        let p = self.proc_mut(pid);
        let e = usize::try_from(fd)
            .ok()
            .and_then(|i| p.fds.get_mut(i))
            .and_then(|e| e.take())
            .ok_or(Errno::EBADF)?;
        while matches!(p.fds.last(), Some(None)) {
            p.fds.pop();
        }
        self.file_put(e.file);
        Ok(())
    }

    // ---- processes ----

    pub fn new_proc(&mut self, cred: Arc<Cred>, root: Loc, cwd: Loc, umask: u32) -> Pid {
        let pid = self.next_pid;
        self.next_pid += 1;
        let cred_id = self.next_cred;
        self.next_cred += 1;
        self.loc_get(root);
        self.loc_get(cwd);
        self.procs.insert(
            pid,
            Proc {
                cred,
                cred_id,
                root,
                cwd,
                umask,
                fds: Vec::new(),
                fd_limit: 1024,
            },
        );
        pid
    }

    pub fn exit_proc(&mut self, pid: Pid) {
        let Some(p) = self.procs.remove(&pid) else {
            return;
        };
        for e in p.fds.into_iter().flatten() {
            self.file_put(e.file);
        }
        self.loc_put(p.root);
        self.loc_put(p.cwd);
    }

    // ---- read-only state ----

    /// __mnt_is_readonly: the mount's own bit or its instance's.
    pub fn mnt_is_readonly(&self, mnt: MountId) -> bool {
        let m = self.mount(mnt);
        m.flags.readonly || self.fs_is_readonly(m.dev)
    }

    /// sb_rdonly of instance `dev`.
    pub fn fs_is_readonly(&self, dev: u32) -> bool {
        self.fses.get(&dev).is_some_and(|f| f.readonly)
    }

    /// mnt_want_write's verdict for a change through `mnt`.
    pub fn want_write(&self, mnt: MountId) -> SysResult<()> {
        if self.mnt_is_readonly(mnt) {
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// The writers of mount `mnt` (mnt_get_writers, as far as a syscall
    /// can see it between two calls): open file descriptions with write
    /// access to a non-special inode through `mnt` (FMODE_WRITER). The
    /// model counts them from the open files; it may be slow.
    pub fn mnt_writers(&self, mnt: MountId) -> usize {
        self.files
            .values()
            .filter(|f| f.writable && f.loc.mnt == mnt && !self.node(f.loc.node).is_special())
            .count()
    }

    /// Whether instance `dev` holds an inode with no name left that is
    /// still alive (Linux's s_remove_count): an unlinked file or removed
    /// directory kept by an open file, a cwd or root, a mount's root or a
    /// removed child directory, or an unnamed O_TMPFILE.
    pub fn fs_has_orphans(&self, dev: u32) -> bool {
        self.nodes.values().any(|n| n.id.dev == dev && n.nlink == 0)
    }

    // ---- time ----

    /// touch_atime: updates atime after a read-like access under the mount's
    /// atime policy (relatime: only if atime <= mtime, atime <= ctime, or
    /// atime is a day old); never for an inode with FS_NOATIME_FL
    /// (S_NOATIME), nor through an effectively read-only mount (IS_NOATIME
    /// for SB_RDONLY, then mnt_get_write_access failing).
    pub fn touch_atime(&mut self, mnt: MountId, id: NodeId) {
        if self.node(id).flags & FS_NOATIME_FL != 0 || self.mnt_is_readonly(mnt) {
            return;
        }
        let flags = self.mount(mnt).flags;
        let n = self.node_mut(id);
        let update = match flags.atime {
            AtimeMode::NoAtime => false,
            _ if flags.nodiratime && n.is_dir() => false,
            AtimeMode::Strict => true,
            AtimeMode::Relatime => {
                let t = now();
                n.atime <= n.mtime || n.atime <= n.ctime || t.sec - n.atime.sec >= 24 * 60 * 60
            }
        };
        if update {
            n.atime = now();
        }
    }
}
