//! The system calls, one `State` method each, written after the Linux code
//! paths they model (function names in the comments are Linux's), with the
//! checks in Linux's order so that the first failing check decides the
//! errno exactly as it would on Linux (reference: Linux 6.12+ with tmpfs).
//!
//! Invariants: a call either fails with no effect on the state, or succeeds
//! with all of its effects; every call runs under the one model lock.

use crate::node::*;
use crate::perm::*;
use crate::pnode::PropType;
use crate::state::*;
use crate::walk::*;
use std::sync::Arc;
use vfscale::abi::*;
use vfscale::{Cred, Fd};

const O_PATH_FLAGS: i32 = O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC;
const O_TMPFILE_BIT: i32 = O_TMPFILE & !O_DIRECTORY;
/// readv/writev: most iovecs per call (UIO_MAXIOV).
const UIO_MAXIOV: usize = 1024;

const MS_PROPAGATION: u64 = MS_UNBINDABLE | MS_PRIVATE | MS_SLAVE | MS_SHARED;

/// What an open file description allows, from the access mode
/// (OPEN_FMODE: 3 allows neither read nor write).
fn acc_rw(flags: i32) -> (bool, bool) {
    match flags & O_ACCMODE {
        O_RDONLY => (true, false),
        O_WRONLY => (false, true),
        O_RDWR => (true, true),
        _ => (false, false),
    }
}

/// The permission an open needs (ACC_MODE: 3 needs read and write).
fn acc_mask(flags: i32) -> u32 {
    match flags & O_ACCMODE {
        O_RDONLY => MAY_READ,
        O_WRONLY => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    }
}

/// rw_verify_area: a range whose end overflows loff_t is EINVAL.
fn verify_range(pos: i64, count: usize) -> SysResult<()> {
    if pos as i128 + count as i128 > i64::MAX as i128 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// utimensat's nsec_valid.
fn nsec_valid(ns: i64) -> bool {
    ns == UTIME_NOW || ns == UTIME_OMIT || (0..=999_999_999).contains(&ns)
}

fn mp_key_of(st: &State, dir: NodeId, name: &[u8], child: NodeId) -> MpKey {
    st.child_key(dir, name, child)
}

impl State {
    // ================= helpers shared by several calls =================

    /// vfs_prepare_mode: strip S_ISGID where the caller may not set it on a
    /// non-directory in a setgid directory, apply the umask (unless the
    /// directory has a default ACL, which `create_node` applies instead),
    /// keep `mask_perms`, add `type_bits`.
    fn prepare_mode(
        &self,
        ctx: &Ctx,
        dir: NodeId,
        mode: u32,
        mask_perms: u32,
        type_bits: u32,
    ) -> u32 {
        let d = self.node(dir);
        let mut mode = mode;
        if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP
            && !s_isdir(mode)
            && d.mode & S_ISGID != 0
            && !in_group_or_root(&ctx.cred, d.gid)
        {
            mode &= !S_ISGID;
        }
        if d.default_acl.is_none() {
            mode &= !self.proc(ctx.pid).umask;
        }
        (mode & mask_perms) | type_bits
    }

    /// Creates an inode named `name` in `dir` (inode_init_owner + the tmpfs
    /// mknod bookkeeping, with the flags a new inode inherits). `mode`
    /// includes the type.
    fn create_node(
        &mut self,
        ctx: &Ctx,
        dir: NodeId,
        name: &[u8],
        mode: u32,
        rdev: u64,
        kind: Kind,
    ) -> NodeId {
        let (uid, gid, mode) = self.init_owner(ctx, dir, mode);
        let id = self.alloc_ino(dir.dev);
        let t = now();
        let mut n = Node::new(id, mode, uid, gid, kind, t);
        self.inherit_acls(dir, &mut n);
        n.flags = self.node(dir).flags & crate::fileattr::INHERITED;
        n.rdev = rdev;
        if n.is_dir() {
            n.nlink = 2;
            self.node_mut(dir).nlink += 1;
            self.pin(dir);
        }
        self.nodes.insert(id, n);
        let d = self.node_mut(dir);
        d.dir_mut().insert(name, id, None);
        d.mtime = t;
        d.ctime = t;
        id
    }

    /// posix_acl_create for a new node `n` in `dir`: with a default ACL
    /// there (and `n` not a symlink), `n` gets the access ACL it makes of
    /// its mode and, if a directory, the default ACL too; without one the
    /// umask applies, except to symlinks (`prepare_mode` left it for this).
    fn inherit_acls(&self, dir: NodeId, n: &mut Node) {
        if n.is_symlink() {
            return;
        }
        let Some(default) = &self.node(dir).default_acl else {
            return;
        };
        let (access, mode) = crate::acl::inherit(default, n.mode);
        n.mode = mode;
        n.access_acl = access;
        if n.is_dir() {
            n.default_acl = Some(default.clone());
        }
    }

    /// inode_init_owner: fsuid owns it; the group is the directory's if the
    /// directory is setgid (and a new directory inherits S_ISGID), else fsgid.
    fn init_owner(&self, ctx: &Ctx, dir: NodeId, mode: u32) -> (u32, u32, u32) {
        let d = self.node(dir);
        if d.mode & S_ISGID != 0 {
            let mode = if s_isdir(mode) { mode | S_ISGID } else { mode };
            (ctx.cred.fsuid, d.gid, mode)
        } else {
            (ctx.cred.fsuid, ctx.cred.fsgid, mode)
        }
    }

    /// may_create's permission part (the directory is known to be alive).
    fn may_create(&self, ctx: &Ctx, dir: NodeId) -> SysResult<()> {
        if self.node(dir).is_dead_dir() {
            return Err(Errno::ENOENT);
        }
        permission(&ctx.cred, self.node(dir), MAY_WRITE | MAY_EXEC)
    }

    /// may_delete: write and search permission on the directory (EPERM for
    /// an immutable one), then EPERM for an append-only directory, for the
    /// sticky rule, and for an append-only or immutable victim.
    fn may_delete(&self, ctx: &Ctx, dir: NodeId, victim: NodeId, isdir: bool) -> SysResult<()> {
        let d = self.node(dir);
        let v = self.node(victim);
        permission(&ctx.cred, d, MAY_WRITE | MAY_EXEC)?;
        if d.is_append() {
            return Err(Errno::EPERM);
        }
        if sticky_denies(&ctx.cred, d, v) || v.is_protected() {
            return Err(Errno::EPERM);
        }
        if isdir {
            if !v.is_dir() {
                return Err(Errno::ENOTDIR);
            }
        } else if v.is_dir() {
            return Err(Errno::EISDIR);
        }
        if d.is_dead_dir() {
            return Err(Errno::ENOENT);
        }
        Ok(())
    }

    fn is_mountpoint(&self, key: &MpKey) -> bool {
        self.mp_count.contains_key(key)
    }

    /// filename_create: walks to the parent of a name to create; "." ".."
    /// and "/" are EEXIST, an existing name EEXIST, and a trailing slash on
    /// a missing name ENOENT unless a directory is being made; then a
    /// read-only mount is EROFS (mnt_want_write, whose error Linux holds
    /// back until the lookup's own errors are reported).
    fn filename_create(
        &mut self,
        ctx: &Ctx,
        dirfd: Fd,
        path: &[u8],
        want_dir: bool,
    ) -> SysResult<(Loc, Vec<u8>)> {
        let p = self.resolve_parent(ctx, dirfd, path)?;
        let Last::Normal(name) = p.last else {
            return Err(Errno::EEXIST);
        };
        if self.lookup_maybe(p.dir.node, &name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        if p.trailing && !want_dir {
            return Err(Errno::ENOENT);
        }
        self.want_write(p.dir.mnt)?;
        Ok((p.dir, name))
    }

    /// do_truncate on a regular file: drops suid/sgid for a non-root
    /// caller, sets the size, and updates mtime and ctime if `times` or if
    /// the size changed.
    fn do_truncate(&mut self, cred: &Cred, id: NodeId, len: u64, times: bool) {
        let kill = kill_privs_mask(cred, self.node(id));
        let n = self.node_mut(id);
        n.mode &= !kill;
        let old = n.data().size;
        n.data_mut().truncate(len);
        if times || old != len {
            let t = now();
            n.mtime = t;
            n.ctime = t;
        }
    }

    fn unlink_name(&mut self, dir: NodeId, name: &[u8]) -> NodeId {
        let t = now();
        let d = self.node_mut(dir);
        let (_, victim) = d.dir_mut().remove(name).expect("model: name");
        d.mtime = t;
        d.ctime = t;
        let v = self.node_mut(victim);
        v.ctime = t;
        if v.is_dir() {
            v.nlink = 0;
            v.dir_mut().dead = true;
            self.node_mut(dir).nlink -= 1;
        } else {
            v.nlink -= 1;
        }
        victim
    }

    fn statfs_of(&self, loc: Loc) -> Statfs {
        let m = self.mount(loc.mnt);
        // flags_by_sb's SB_SYNCHRONOUS and SB_MANDLOCK.
        let mut flags = ST_VALID | self.fses[&m.dev].st_flags;
        // flags_by_mnt's MNT_READONLY or flags_by_sb's SB_RDONLY.
        if self.mnt_is_readonly(loc.mnt) {
            flags |= ST_RDONLY;
        }
        if m.flags.nosuid {
            flags |= ST_NOSUID;
        }
        if m.flags.nodev {
            flags |= ST_NODEV;
        }
        if m.flags.noexec {
            flags |= ST_NOEXEC;
        }
        if m.flags.nodiratime {
            flags |= ST_NODIRATIME;
        }
        if m.flags.nosymfollow {
            flags |= ST_NOSYMFOLLOW;
        }
        flags |= match m.flags.atime {
            AtimeMode::Relatime => ST_RELATIME,
            AtimeMode::NoAtime => ST_NOATIME,
            AtimeMode::Strict => 0,
        };
        Statfs {
            f_type: TMPFS_MAGIC,
            f_bsize: PAGE as i64,
            f_blocks: 0,
            f_bfree: 0,
            f_bavail: 0,
            f_files: 0,
            f_ffree: 0,
            f_fsid: [m.dev as i32, 0],
            f_namelen: NAME_MAX as i64,
            f_frsize: PAGE as i64,
            f_flags: flags,
        }
    }

    fn enfile(&self, cred: &Cred) -> SysResult<()> {
        if self.nr_files >= self.max_files && !cred.is_root() {
            return Err(Errno::ENFILE);
        }
        Ok(())
    }

    fn open_file(&mut self, ctx: &Ctx, loc: Loc, flags: i32, path_only: bool) -> FileId {
        let (readable, writable) = if path_only {
            (false, false)
        } else {
            acc_rw(flags)
        };
        let cred_id = self.proc(ctx.pid).cred_id;
        self.new_file(OpenFile {
            loc,
            readable,
            writable,
            append: flags & O_APPEND != 0 && !path_only,
            noatime: flags & O_NOATIME != 0 && !path_only,
            path_only,
            pos: 0,
            cred_id,
            refs: 1,
        })
    }

    // ================= open files =================

    pub fn sys_openat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mode: u32,
    ) -> SysResult<Fd> {
        let ctx = self.ctx(pid);
        // build_open_how: unknown bits dropped, O_PATH keeps only its few.
        let mut flags = flags & O_VALID;
        if flags & O_PATH != 0 {
            flags &= O_PATH_FLAGS;
        }
        let will_create = flags & (O_CREAT | O_TMPFILE_BIT) != 0;
        let mode = if will_create { mode & S_IALLUGO } else { 0 };
        // build_open_flags
        if flags & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
            return Err(Errno::EINVAL);
        }
        if flags & O_TMPFILE_BIT != 0
            && (flags & O_DIRECTORY == 0 || acc_mask(flags) & MAY_WRITE == 0)
        {
            return Err(Errno::EINVAL);
        }
        check_path(path, false)?;
        let fd = self.alloc_fd(pid, 0)?;
        self.enfile(&ctx.cred)?;
        let cloexec = flags & O_CLOEXEC != 0;
        let start = self.start_loc(&ctx, dirfd, path)?;

        if flags & O_PATH != 0 {
            // do_o_path: no permission check on the file itself.
            let loc = self.walk_full(&ctx, start, path, flags & O_NOFOLLOW == 0)?;
            if flags & O_DIRECTORY != 0 && !self.is_dir(loc.node) {
                return Err(Errno::ENOTDIR);
            }
            let f = self.open_file(&ctx, loc, flags, true);
            self.install_fd(pid, fd, f, cloexec);
            return Ok(fd);
        }

        if flags & O_TMPFILE_BIT != 0 {
            // do_tmpfile + vfs_tmpfile: an unnamed file in the directory.
            let dir = self.walk_full(&ctx, start, path, flags & O_NOFOLLOW == 0)?;
            if !self.is_dir(dir.node) {
                return Err(Errno::ENOTDIR);
            }
            self.want_write(dir.mnt)?;
            permission(&ctx.cred, self.node(dir.node), MAY_WRITE | MAY_EXEC)?;
            let mode = self.prepare_mode(&ctx, dir.node, mode | S_IFREG, S_IALLUGO | S_IFMT, 0);
            let (uid, gid, mode) = self.init_owner(&ctx, dir.node, mode);
            let id = self.alloc_ino(dir.node.dev);
            let mut n = Node::new(id, mode, uid, gid, Kind::Reg(FileData::default()), now());
            self.inherit_acls(dir.node, &mut n);
            n.flags = self.node(dir.node).flags & crate::fileattr::INHERITED;
            n.nlink = 0;
            n.linkable = flags & O_EXCL == 0;
            self.nodes.insert(id, n);
            let loc = Loc {
                mnt: dir.mnt,
                node: id,
            };
            let f = self.open_file(&ctx, loc, flags, false);
            self.install_fd(pid, fd, f, cloexec);
            return Ok(fd);
        }

        // path_openat: walk to the last component, create or follow it.
        let creat = flags & O_CREAT != 0;
        let excl = creat && flags & O_EXCL != 0;
        let follow = flags & O_NOFOLLOW == 0 && !excl;
        let mut must_dir = flags & O_DIRECTORY != 0;
        let mut links = 0;
        let mut start = start;
        let mut path = path.to_vec();
        let mut created = false;
        // The directory of the last component (for may_create_in_sticky).
        let mut last_dir;
        let loc = loop {
            let p = self.walk_parent(&ctx, start, &path, &mut links)?;
            last_dir = p.dir.node;
            self.touch_mnt(p.dir.mnt);
            let name = match &p.last {
                Last::Root | Last::Dot => break p.dir,
                Last::DotDot => break self.dotdot(&ctx, p.dir)?,
                Last::Normal(name) => name.clone(),
            };
            let next = if !creat {
                must_dir |= p.trailing;
                match self.resolve_last(&ctx, &p, follow, &mut links)? {
                    Ok((loc, _)) => break loc,
                    Err(next) => next,
                }
            } else {
                // open_last_lookups, create side: trailing slash is EISDIR.
                if p.trailing {
                    return Err(Errno::EISDIR);
                }
                let dir = p.dir.node;
                // lookup_open
                if self.node(dir).is_dead_dir() {
                    return Err(Errno::ENOENT);
                }
                if let Some(child) = self.node(dir).dir().get(&name) {
                    let key = mp_key_of(self, dir, &name, child);
                    let (loc, _) = self.traverse(
                        Loc {
                            mnt: p.dir.mnt,
                            node: child,
                        },
                        key,
                    );
                    if self.node(loc.node).is_symlink() && follow {
                        if links >= MAXSYMLINKS {
                            return Err(Errno::ELOOP);
                        }
                        links += 1;
                        self.follow_body(loc)?
                    } else {
                        break loc;
                    }
                } else {
                    // lookup_open: without write access to the mount the
                    // create error is EROFS instead of may_o_create's.
                    let create_err = self
                        .want_write(p.dir.mnt)
                        .and_then(|()| permission(&ctx.cred, self.node(dir), MAY_WRITE | MAY_EXEC));
                    if name.len() > NAME_MAX {
                        return Err(Errno::ENAMETOOLONG);
                    }
                    create_err?;
                    let m = self.prepare_mode(&ctx, dir, mode | S_IFREG, S_IALLUGO | S_IFMT, 0);
                    let id =
                        self.create_node(&ctx, dir, &name, m, 0, Kind::Reg(FileData::default()));
                    created = true;
                    break Loc {
                        mnt: p.dir.mnt,
                        node: id,
                    };
                }
            };
            path = next;
            start = p.dir;
        };

        // do_open
        let n = self.node(loc.node);
        if creat {
            if excl && !created {
                return Err(Errno::EEXIST);
            }
            if n.is_dir() {
                return Err(Errno::EISDIR);
            }
            // may_create_in_sticky, fs.protected_regular/fifos = 0: a
            // non-regular, non-FIFO file in a world-writable sticky
            // directory, owned by neither the directory's owner nor the
            // caller (root included).
            let d = self.node(last_dir);
            let ty = n.mode & S_IFMT;
            if d.mode & S_ISVTX != 0
                && d.mode & 0o002 != 0
                && ty != S_IFREG
                && ty != S_IFIFO
                && n.uid != d.uid
                && n.uid != ctx.cred.fsuid
            {
                return Err(Errno::EACCES);
            }
        }
        if must_dir && !n.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let mut acc = if created { 0 } else { acc_mask(flags) };
        if !created && flags & O_TRUNC != 0 {
            acc |= MAY_WRITE;
        }
        let do_trunc = !created && n.is_reg() && flags & O_TRUNC != 0;
        if do_trunc {
            // do_open takes write access for the truncation before may_open.
            self.want_write(loc.mnt)?;
        }
        // may_open
        match n.mode & S_IFMT {
            S_IFLNK => return Err(Errno::ELOOP),
            S_IFDIR if acc & MAY_WRITE != 0 => return Err(Errno::EISDIR),
            S_IFCHR | S_IFBLK if self.mount(loc.mnt).flags.nodev => return Err(Errno::EACCES),
            _ => {}
        }
        inode_permission(&ctx.cred, n, acc, self.fs_is_readonly(loc.node.dev))?;
        // An append-only file opens for writing only in append mode, and
        // is never truncated (a file this open made has no flags to keep).
        if !created
            && n.is_append()
            && ((flags & O_ACCMODE != O_RDONLY && flags & O_APPEND == 0) || flags & O_TRUNC != 0)
        {
            return Err(Errno::EPERM);
        }
        if flags & O_NOATIME != 0 && !owner_or_root(&ctx.cred, n) {
            return Err(Errno::EPERM);
        }
        // do_dentry_open: write access to a non-special inode is write
        // access to the mount (FMODE_WRITER), before the file's own open.
        if acc_rw(flags).1 && !n.is_special() {
            self.want_write(loc.mnt)?;
        }
        // vfs_open: no pipes, sockets or device drivers in the model. A
        // model FIFO has no readers or writers, so it opens only where Linux
        // would neither block nor need a partner: O_RDWR, or
        // O_RDONLY|O_NONBLOCK (O_WRONLY|O_NONBLOCK with no reader is ENXIO,
        // as in Linux; blocking opens are not modelled).
        let fifo_ok = n.mode & S_IFMT == S_IFIFO
            && (flags & O_ACCMODE == O_RDWR
                || (flags & O_ACCMODE == O_RDONLY && flags & O_NONBLOCK != 0));
        if !n.is_reg() && !n.is_dir() && !fifo_ok {
            return Err(Errno::ENXIO);
        }
        // do_dentry_open, after the file's own open: O_DIRECT only where
        // direct I/O is possible (tmpfs regular files).
        if flags & O_DIRECT != 0 && !n.is_reg() {
            return Err(Errno::EINVAL);
        }
        if do_trunc {
            self.do_truncate(&ctx.cred, loc.node, 0, true);
        }
        let f = self.open_file(&ctx, loc, flags, false);
        self.install_fd(pid, fd, f, cloexec);
        Ok(fd)
    }

    pub fn sys_close(&mut self, pid: Pid, fd: Fd) -> SysResult<()> {
        self.close_fd(pid, fd)
    }

    pub fn sys_close_range(
        &mut self,
        pid: Pid,
        first: u32,
        last: u32,
        flags: u32,
    ) -> SysResult<()> {
        if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
            return Err(Errno::EINVAL);
        }
        let n = self.proc(pid).fds.len();
        let end = (last as usize).min(n.saturating_sub(1));
        for i in first as usize..=end {
            if i >= self.proc(pid).fds.len() {
                break;
            }
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                if let Some(e) = self.proc_mut(pid).fds[i].as_mut() {
                    e.cloexec = true;
                }
            } else if self.proc(pid).fds[i].is_some() {
                self.close_fd(pid, i as Fd)?;
            }
        }
        Ok(())
    }

    pub fn sys_dup(&mut self, pid: Pid, fd: Fd) -> SysResult<Fd> {
        let f = self.fd_raw(pid, fd)?;
        let new = self.alloc_fd(pid, 0)?;
        self.file_mut(f).refs += 1;
        self.install_fd(pid, new, f, false);
        Ok(new)
    }

    pub fn sys_dup2(&mut self, pid: Pid, oldfd: Fd, newfd: Fd) -> SysResult<Fd> {
        if oldfd == newfd {
            self.fd_raw(pid, oldfd)?;
            return Ok(newfd);
        }
        self.sys_dup3(pid, oldfd, newfd, 0)
    }

    pub fn sys_dup3(&mut self, pid: Pid, oldfd: Fd, newfd: Fd, flags: i32) -> SysResult<Fd> {
        if flags & !O_CLOEXEC != 0 || oldfd == newfd {
            return Err(Errno::EINVAL);
        }
        // newfd is unsigned in the syscall: negative is past any limit.
        if newfd < 0 || newfd as usize >= self.proc(pid).fd_limit {
            return Err(Errno::EBADF);
        }
        let f = self.fd_raw(pid, oldfd)?;
        self.file_mut(f).refs += 1;
        self.install_fd(pid, newfd, f, flags & O_CLOEXEC != 0);
        Ok(newfd)
    }

    // ================= data =================

    /// Reads at `pos` from regular file `f` (no position update).
    fn read_at(&mut self, f: FileId, pos: i64, buf: &mut [u8]) -> SysResult<usize> {
        verify_range(pos, buf.len())?;
        let file = self.file(f);
        let (loc, noatime) = (file.loc, file.noatime);
        if self.is_dir(loc.node) {
            return Err(Errno::EISDIR);
        }
        if self.is_fifo(loc.node) {
            return fifo_io(buf.len());
        }
        let n = self.node(loc.node).data().read(pos as u64, buf);
        if !noatime {
            self.touch_atime(loc.mnt, loc.node);
        }
        Ok(n)
    }

    /// Writes at `pos` (or at EOF for O_APPEND) to regular file `f`;
    /// returns (bytes, end position).
    fn write_at(&mut self, ctx: &Ctx, f: FileId, pos: i64, data: &[u8]) -> SysResult<(usize, i64)> {
        verify_range(pos, data.len())?;
        if data.is_empty() {
            return Ok((0, pos));
        }
        let file = self.file(f);
        let id = file.loc.node;
        if self.is_fifo(id) {
            return fifo_io(data.len()).map(|n| (n, pos));
        }
        let pos = if file.append {
            self.node(id).data().size as i64
        } else {
            pos
        };
        if pos == i64::MAX {
            return Err(Errno::EFBIG);
        }
        let len = data.len().min((i64::MAX - pos) as usize);
        let kill = kill_privs_mask(&ctx.cred, self.node(id));
        let t = now();
        let n = self.node_mut(id);
        n.mode &= !kill;
        n.mtime = t;
        n.ctime = t;
        n.data_mut().write(pos as u64, &data[..len]);
        Ok((len, pos + len as i64))
    }

    // ================= space =================

    /// fallocate(2) as vfscale and tmpfs: vfs_fallocate's checks in order
    /// (descriptor, arguments, mode, access, type, overflow), then
    /// shmem_fallocate's two modes; a success clears set-id bits as a write.
    pub fn sys_fallocate(
        &mut self,
        pid: Pid,
        fd: Fd,
        mode: i32,
        offset: i64,
        len: i64,
    ) -> SysResult<()> {
        /// FALLOC_FL_MODE_MASK: every mode Linux knows.
        const MODES: i32 = 0x02 | 0x08 | 0x10 | 0x20 | 0x40 | 0x80;
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        if offset < 0 || len <= 0 {
            return Err(Errno::EINVAL);
        }
        if mode & !(MODES | FALLOC_FL_KEEP_SIZE) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let keep = mode & FALLOC_FL_KEEP_SIZE != 0;
        match mode & MODES {
            0 | 0x10 | 0x40 => {}
            FALLOC_FL_PUNCH_HOLE if keep => {}
            0x08 | 0x20 | 0x80 if !keep => {}
            _ => return Err(Errno::EOPNOTSUPP),
        }
        if !self.file(f).writable {
            return Err(Errno::EBADF);
        }
        let id = self.file(f).loc.node;
        // Only a plain allocation on an append-only file, nothing on an
        // immutable one.
        let n = self.node(id);
        if (mode & !FALLOC_FL_KEEP_SIZE != 0 && n.is_append()) || n.is_immutable() {
            return Err(Errno::EPERM);
        }
        match self.node(id).kind {
            Kind::Reg(_) => {}
            Kind::Fifo => return Err(Errno::ESPIPE),
            Kind::Dir(_) => return Err(Errno::EISDIR),
            _ => return Err(Errno::ENODEV),
        }
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)? as u64;
        if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let (off, len) = (offset as u64, len as u64);
        if mode & FALLOC_FL_PUNCH_HOLE != 0 {
            self.node_mut(id).data_mut().punch_hole(off, len);
        } else {
            // A range larger than the instance (vfscale's default size,
            // 1 TiB) is refused before anything is allocated.
            if end.div_ceil(PAGE) - off / PAGE > INSTANCE_PAGES {
                return Err(Errno::ENOSPC);
            }
            let data = self.node_mut(id).data_mut();
            data.allocate(off, len);
            if !keep && end > data.size {
                data.size = end;
            }
        }
        let kill = kill_privs_mask(&ctx.cred, self.node(id));
        let t = now();
        let n = self.node_mut(id);
        n.mode &= !kill;
        n.mtime = t;
        n.ctime = t;
        Ok(())
    }

    /// copy_file_range(2) between regular files of one instance, with
    /// vfs_copy_file_range's checks in order.
    // The syscall's six arguments plus the process.
    #[allow(clippy::too_many_arguments)]
    pub fn sys_copy_file_range(
        &mut self,
        pid: Pid,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        let ctx = self.ctx(pid);
        let fi = self.fd_get(pid, fd_in)?;
        let fo = self.fd_get(pid, fd_out)?;
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let (ni, no) = (self.file(fi).loc.node, self.file(fo).loc.node);
        if self.is_dir(ni) || self.is_dir(no) {
            return Err(Errno::EISDIR);
        }
        if !self.node(ni).is_reg() || !self.node(no).is_reg() {
            return Err(Errno::EINVAL);
        }
        if !self.file(fi).readable || !self.file(fo).writable || self.file(fo).append {
            return Err(Errno::EBADF);
        }
        if ni.dev != no.dev {
            return Err(Errno::EXDEV);
        }
        // generic_copy_file_checks: never into an immutable file (after
        // the cross-instance test: checked on Linux 6.18).
        if self.node(no).is_immutable() {
            return Err(Errno::EPERM);
        }
        let start_in = off_in.as_deref().copied().unwrap_or(self.file(fi).pos);
        let start_out = off_out.as_deref().copied().unwrap_or(self.file(fo).pos);
        let (pi, po) = (start_in as u64, start_out as u64);
        let mut count = len as u64;
        if pi.wrapping_add(count) < pi || po.wrapping_add(count) < po {
            return Err(Errno::EOVERFLOW);
        }
        let size_in = self.node(ni).data().size as i64;
        count = if start_in >= size_in {
            0
        } else {
            count.min((size_in as u64).wrapping_sub(pi))
        };
        if start_out == i64::MAX {
            return Err(Errno::EFBIG);
        }
        count = count.min((i64::MAX as u64).wrapping_sub(po));
        if ni == no && po.wrapping_add(count) > pi && po < pi.wrapping_add(count) {
            return Err(Errno::EINVAL);
        }
        for pos in [start_in, start_out] {
            if count > isize::MAX as u64
                || pos < 0
                || (pos as u64).wrapping_add(count) > i64::MAX as u64
            {
                return Err(Errno::EINVAL);
            }
        }
        if count == 0 {
            return Ok(0);
        }
        let mut buf = vec![0u8; count as usize];
        let n = self.read_at(fi, start_in, &mut buf)?;
        let (w, _) = self.write_at(&ctx, fo, start_out, &buf[..n])?;
        match off_in {
            Some(p) => *p += w as i64,
            None => self.file_mut(fi).pos += w as i64,
        }
        match off_out {
            Some(p) => *p += w as i64,
            None => self.file_mut(fo).pos += w as i64,
        }
        Ok(w)
    }

    /// syncfs(2): the data is in memory; only the descriptor is checked.
    pub fn sys_syncfs(&mut self, pid: Pid, fd: Fd) -> SysResult<()> {
        self.fd_get(pid, fd).map(|_| ())
    }

    fn readable_file(&self, pid: Pid, fd: Fd) -> SysResult<FileId> {
        let f = self.fd_get(pid, fd)?;
        if !self.file(f).readable {
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    fn writable_file(&self, pid: Pid, fd: Fd) -> SysResult<FileId> {
        let f = self.fd_get(pid, fd)?;
        if !self.file(f).writable {
            return Err(Errno::EBADF);
        }
        Ok(f)
    }

    pub fn sys_read(&mut self, pid: Pid, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        let f = self.readable_file(pid, fd)?;
        let pos = self.file(f).pos;
        let n = self.read_at(f, pos, buf)?;
        self.file_mut(f).pos = pos + n as i64;
        Ok(n)
    }

    pub fn sys_write(&mut self, pid: Pid, fd: Fd, buf: &[u8]) -> SysResult<usize> {
        let ctx = self.ctx(pid);
        let f = self.writable_file(pid, fd)?;
        let pos = self.file(f).pos;
        let (n, end) = self.write_at(&ctx, f, pos, buf)?;
        if n > 0 {
            self.file_mut(f).pos = end;
        }
        Ok(n)
    }

    pub fn sys_pread(&mut self, pid: Pid, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.no_fifo_positional(pid, fd)?;
        let f = self.readable_file(pid, fd)?;
        self.read_at(f, offset, buf)
    }

    pub fn sys_pwrite(&mut self, pid: Pid, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize> {
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        self.no_fifo_positional(pid, fd)?;
        let f = self.writable_file(pid, fd)?;
        // With O_APPEND Linux appends and ignores the offset; the file
        // position is not moved either way.
        Ok(self.write_at(&ctx, f, offset, buf)?.0)
    }

    pub fn sys_readv(&mut self, pid: Pid, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        let f = self.readable_file(pid, fd)?;
        if bufs.len() > UIO_MAXIOV {
            return Err(Errno::EINVAL);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let pos = self.file(f).pos;
        let mut tmp = vec![0u8; total];
        let n = self.read_at(f, pos, &mut tmp)?;
        let mut at = 0;
        for b in bufs.iter_mut() {
            if at >= n {
                break;
            }
            let k = b.len().min(n - at);
            b[..k].copy_from_slice(&tmp[at..at + k]);
            at += k;
        }
        self.file_mut(f).pos = pos + n as i64;
        Ok(n)
    }

    pub fn sys_writev(&mut self, pid: Pid, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize> {
        let ctx = self.ctx(pid);
        let f = self.writable_file(pid, fd)?;
        if bufs.len() > UIO_MAXIOV {
            return Err(Errno::EINVAL);
        }
        let data: Vec<u8> = bufs.concat();
        if data.is_empty() {
            return Ok(0);
        }
        let pos = self.file(f).pos;
        let (n, end) = self.write_at(&ctx, f, pos, &data)?;
        self.file_mut(f).pos = end;
        Ok(n)
    }

    pub fn sys_lseek(&mut self, pid: Pid, fd: Fd, offset: i64, whence: i32) -> SysResult<i64> {
        let f = self.fd_get(pid, fd)?;
        if !(SEEK_SET..=SEEK_HOLE).contains(&whence) {
            return Err(Errno::EINVAL);
        }
        let file = self.file(f);
        let pos = file.pos;
        let n = self.node(file.loc.node);
        if n.mode & S_IFMT == S_IFIFO {
            return Err(Errno::ESPIPE);
        }
        let new = if n.is_dir() {
            // offset_dir_llseek: SEEK_SET and SEEK_CUR to any position >= 0.
            let new = match whence {
                SEEK_SET => offset,
                SEEK_CUR => pos.wrapping_add(offset),
                _ => return Err(Errno::EINVAL),
            };
            if new < 0 {
                return Err(Errno::EINVAL);
            }
            new
        } else {
            // shmem_file_llseek / generic_file_llseek_size
            let size = n.data().size;
            match whence {
                SEEK_SET => offset,
                SEEK_CUR if offset == 0 => return Ok(pos),
                SEEK_CUR => pos.wrapping_add(offset),
                SEEK_END => offset.wrapping_add(size as i64),
                _ => {
                    if offset < 0 {
                        return Err(Errno::ENXIO);
                    }
                    let r = if whence == SEEK_DATA {
                        n.data().seek_data(offset as u64)
                    } else {
                        n.data().seek_hole(offset as u64)
                    };
                    r.ok_or(Errno::ENXIO)? as i64
                }
            }
        };
        if new < 0 {
            return Err(Errno::EINVAL);
        }
        self.file_mut(f).pos = new;
        Ok(new)
    }

    pub fn sys_ftruncate(&mut self, pid: Pid, fd: Fd, length: i64) -> SysResult<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        let file = self.file(f);
        let id = file.loc.node;
        if !self.node(id).is_reg() || !file.writable {
            return Err(Errno::EINVAL);
        }
        // do_ftruncate: never an append-only file; an immutable one opened
        // for writing before it became immutable is truncated.
        if self.node(id).is_append() {
            return Err(Errno::EPERM);
        }
        self.do_truncate(&ctx.cred, id, length as u64, true);
        Ok(())
    }

    pub fn sys_truncate(&mut self, pid: Pid, path: &[u8], length: i64) -> SysResult<()> {
        if length < 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let loc = self.resolve_at(&ctx, AT_FDCWD, path, true, false)?;
        let n = self.node(loc.node);
        if n.is_dir() {
            return Err(Errno::EISDIR);
        }
        if !n.is_reg() {
            return Err(Errno::EINVAL);
        }
        // vfs_truncate (6.13+, for fsnotify's pre-content hook): the
        // permission check (EROFS on a read-only instance, sb_permission)
        // comes before write access to the mount (EROFS on a read-only
        // mount of a writable instance only after EACCES).
        inode_permission(&ctx.cred, n, MAY_WRITE, self.fs_is_readonly(loc.node.dev))?;
        self.want_write(loc.mnt)?;
        if self.node(loc.node).is_append() {
            return Err(Errno::EPERM);
        }
        self.do_truncate(&ctx.cred, loc.node, length as u64, false);
        Ok(())
    }

    pub fn sys_fsync(&mut self, pid: Pid, fd: Fd) -> SysResult<()> {
        let f = self.fd_get(pid, fd)?;
        // Pipes have no fsync operation.
        if self.is_fifo(self.file(f).loc.node) {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    fn is_fifo(&self, id: NodeId) -> bool {
        self.node(id).mode & S_IFMT == S_IFIFO
    }

    /// pread/pwrite on a pipe: ESPIPE (after the descriptor check).
    fn no_fifo_positional(&self, pid: Pid, fd: Fd) -> SysResult<()> {
        let f = self.fd_get(pid, fd)?;
        if self.is_fifo(self.file(f).loc.node) {
            return Err(Errno::ESPIPE);
        }
        Ok(())
    }

    // ================= attributes =================

    pub fn sys_fstat(&mut self, pid: Pid, fd: Fd) -> SysResult<Stat> {
        let f = self.fd_raw(pid, fd)?;
        Ok(self.node(self.file(f).loc.node).stat())
    }

    pub fn sys_fstatat(&mut self, pid: Pid, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE)
            != 0
        {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        Ok(self.node(loc.node).stat())
    }

    pub fn sys_statx(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        mask: u32,
    ) -> SysResult<Statx> {
        if mask & 0x8000_0000 != 0 || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
            return Err(Errno::EINVAL);
        }
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE)
            != 0
        {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        let mut sx = self.node(loc.node).statx();
        if self.mount(loc.mnt).root == loc.node {
            sx.attributes |= STATX_ATTR_MOUNT_ROOT;
        }
        // shmem_getattr: the birth time only on request.
        if mask & STATX_BTIME == 0 {
            sx.mask &= !STATX_BTIME;
            sx.btime = Timespec::default();
        }
        // fill_mg_cmtime (tmpfs has multigrain timestamps since 6.13):
        // "If neither time was requested, then don't report them" (the
        // fields stay zero).
        if mask & (STATX_MTIME | STATX_CTIME) == 0 {
            sx.mask &= !(STATX_MTIME | STATX_CTIME);
            sx.mtime = Timespec::default();
            sx.ctime = Timespec::default();
        }
        Ok(sx)
    }

    pub fn sys_faccessat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        mode: i32,
        flags: i32,
    ) -> SysResult<()> {
        if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut ctx = self.ctx(pid);
        if flags & AT_EACCESS == 0 {
            // access_override_creds: the walk and the check use real ids.
            ctx.cred = Arc::new(ctx.cred.with_real_ids());
        }
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        let n = self.node(loc.node);
        if mode & X_OK != 0 && n.is_reg() && self.mount(loc.mnt).flags.noexec {
            return Err(Errno::EACCES);
        }
        inode_permission(&ctx.cred, n, mode as u32, self.fs_is_readonly(loc.node.dev))?;
        // "SuS v2 requires we report a read only fs too": after the
        // permission check passed, for W_OK on a non-special inode.
        if mode & W_OK != 0 && !n.is_special() {
            self.want_write(loc.mnt)?;
        }
        Ok(())
    }

    /// chmod_common: write access to the mount first, then notify_change
    /// (may_setattr: no mode change for an immutable or append-only inode).
    fn chmod(&mut self, ctx: &Ctx, loc: Loc, mode: u32) -> SysResult<()> {
        self.want_write(loc.mnt)?;
        let id = loc.node;
        let n = self.node(id);
        if n.is_protected() {
            return Err(Errno::EPERM);
        }
        if n.is_symlink() {
            return Err(Errno::EOPNOTSUPP);
        }
        if !owner_or_root(&ctx.cred, n) {
            return Err(Errno::EPERM);
        }
        let mut m = (mode & S_IALLUGO) | (n.mode & S_IFMT);
        if !in_group_or_root(&ctx.cred, n.gid) {
            m &= !S_ISGID;
        }
        let n = self.node_mut(id);
        n.mode = m;
        if let Some(a) = &mut n.access_acl {
            crate::acl::follow_mode(a, m);
        }
        n.ctime = now();
        Ok(())
    }

    pub fn sys_fchmodat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        mode: u32,
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        self.chmod(&ctx, loc, mode)
    }

    pub fn sys_fchmod(&mut self, pid: Pid, fd: Fd, mode: u32) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        let loc = self.file(f).loc;
        self.chmod(&ctx, loc, mode)
    }

    /// mnt_want_write + chown_common + notify_change + setattr_prepare +
    /// setattr_copy.
    fn chown(&mut self, ctx: &Ctx, loc: Loc, uid: u32, gid: u32) -> SysResult<()> {
        self.want_write(loc.mnt)?;
        let id = loc.node;
        let cred = &ctx.cred;
        let n = self.node(id);
        let new_uid = (uid != u32::MAX).then_some(uid);
        let new_gid = (gid != u32::MAX).then_some(gid);
        // may_setattr: no owner change for an immutable or append-only
        // inode (chown(-1, -1) changes no owner and passes).
        if (new_uid.is_some() || new_gid.is_some()) && n.is_protected() {
            return Err(Errno::EPERM);
        }
        // ATTR_KILL_SUID / ATTR_KILL_SGID on non-directories.
        let mut new_mode = None;
        if !n.is_dir() {
            if n.mode & S_ISUID != 0 {
                new_mode = Some(n.mode & !S_ISUID);
            }
            if should_drop_sgid(cred, n) {
                new_mode = Some(new_mode.unwrap_or(n.mode) & !S_ISGID);
            }
        }
        if let Some(u) = new_uid {
            if !((cred.fsuid == n.uid && u == n.uid) || cred.is_root()) {
                return Err(Errno::EPERM);
            }
        }
        if let Some(g) = new_gid {
            let owner_ok = cred.fsuid == n.uid && (g == n.gid || cred.in_group(g));
            if !(owner_ok || cred.is_root()) {
                return Err(Errno::EPERM);
            }
        }
        let final_gid = new_gid.unwrap_or(n.gid);
        if let Some(m) = new_mode.as_mut() {
            if !owner_or_root(cred, n) {
                return Err(Errno::EPERM);
            }
            if !in_group_or_root(cred, final_gid) {
                *m &= !S_ISGID;
            }
        }
        let n = self.node_mut(id);
        if let Some(u) = new_uid {
            n.uid = u;
        }
        n.gid = final_gid;
        if let Some(m) = new_mode {
            n.mode = m;
        }
        n.ctime = now();
        Ok(())
    }

    pub fn sys_fchownat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        uid: u32,
        gid: u32,
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        self.chown(&ctx, loc, uid, gid)
    }

    pub fn sys_fchown(&mut self, pid: Pid, fd: Fd, uid: u32, gid: u32) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        let loc = self.file(f).loc;
        self.chown(&ctx, loc, uid, gid)
    }

    /// vfs_utimes: the times checked, then write access to the mount, then
    /// notify_change's checks.
    fn utimes(&mut self, ctx: &Ctx, loc: Loc, times: Option<[Timespec; 2]>) -> SysResult<()> {
        let id = loc.node;
        let mut times = times;
        if let Some(t) = times {
            if !nsec_valid(t[0].nsec) || !nsec_valid(t[1].nsec) {
                return Err(Errno::EINVAL);
            }
            if t[0].nsec == UTIME_NOW && t[1].nsec == UTIME_NOW {
                times = None;
            }
        }
        self.want_write(loc.mnt)?;
        let n = self.node(id);
        match times {
            // ATTR_TOUCH: not an immutable inode; then owner, root, or
            // write permission.
            None => {
                if n.is_immutable() {
                    return Err(Errno::EPERM);
                }
                if !owner_or_root(&ctx.cred, n) {
                    permission(&ctx.cred, n, MAY_WRITE)?;
                }
            }
            // ATTR_TIMES_SET: not an immutable or append-only inode; then
            // owner or root only.
            Some(_) => {
                if n.is_protected() || !owner_or_root(&ctx.cred, n) {
                    return Err(Errno::EPERM);
                }
            }
        }
        let t = now();
        let pick = |ts: Timespec, old: Timespec| match ts.nsec {
            UTIME_NOW => t,
            UTIME_OMIT => old,
            _ => ts,
        };
        let n = self.node_mut(id);
        let [a, m] = times.unwrap_or([Timespec::NOW, Timespec::NOW]);
        n.atime = pick(a, n.atime);
        n.mtime = pick(m, n.mtime);
        n.ctime = t;
        Ok(())
    }

    pub fn sys_utimensat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()> {
        if let Some([a, m]) = times {
            // "Nothing to do, we must not even check the path."
            if a.nsec == UTIME_OMIT && m.nsec == UTIME_OMIT {
                return Ok(());
            }
        }
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let loc = self.resolve_at(&ctx, dirfd, path, follow, flags & AT_EMPTY_PATH != 0)?;
        self.utimes(&ctx, loc, times)
    }

    pub fn sys_futimens(
        &mut self,
        pid: Pid,
        fd: Fd,
        times: Option<[Timespec; 2]>,
    ) -> SysResult<()> {
        // glibc's futimens: a negative fd is EBADF before the syscall.
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        if let Some([a, m]) = times {
            if a.nsec == UTIME_OMIT && m.nsec == UTIME_OMIT {
                return Ok(());
            }
        }
        let ctx = self.ctx(pid);
        let f = self.fd_get(pid, fd)?;
        let loc = self.file(f).loc;
        self.utimes(&ctx, loc, times)
    }

    pub fn sys_statfs(&mut self, pid: Pid, path: &[u8]) -> SysResult<Statfs> {
        let ctx = self.ctx(pid);
        let loc = self.resolve_at(&ctx, AT_FDCWD, path, true, false)?;
        Ok(self.statfs_of(loc))
    }

    pub fn sys_fstatfs(&mut self, pid: Pid, fd: Fd) -> SysResult<Statfs> {
        let f = self.fd_raw(pid, fd)?;
        Ok(self.statfs_of(self.file(f).loc))
    }

    // ================= names =================

    pub fn sys_mkdirat(&mut self, pid: Pid, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let (dir, name) = self.filename_create(&ctx, dirfd, path, true)?;
        self.may_create(&ctx, dir.node)?;
        let mode = self.prepare_mode(&ctx, dir.node, mode, 0o777 | S_ISVTX, 0);
        if self.node(dir.node).nlink >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        let kind = Kind::Dir(DirData::new(dir.node, &name));
        self.create_node(&ctx, dir.node, &name, S_IFDIR | mode, 0, kind);
        Ok(())
    }

    pub fn sys_mknodat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        mode: u32,
        dev: u64,
    ) -> SysResult<()> {
        // glibc: a dev_t that does not fit the syscall's 32 bits is EINVAL.
        if dev > u32::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        // may_mknod
        let ty = mode & S_IFMT;
        match ty {
            0 | S_IFREG | S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK => {}
            S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        }
        let ctx = self.ctx(pid);
        let (dir, name) = self.filename_create(&ctx, dirfd, path, false)?;
        self.may_create(&ctx, dir.node)?;
        let (kind, ty, rdev) = match ty {
            0 | S_IFREG => (Kind::Reg(FileData::default()), S_IFREG, 0),
            S_IFCHR | S_IFBLK => {
                // A whiteout (char 0:0) needs no privilege.
                let whiteout = ty == S_IFCHR && dev == 0;
                if !whiteout && !ctx.cred.is_root() {
                    return Err(Errno::EPERM);
                }
                let k = if ty == S_IFCHR { Kind::Chr } else { Kind::Blk };
                (k, ty, dev)
            }
            S_IFIFO => (Kind::Fifo, ty, 0),
            _ => (Kind::Sock, ty, 0),
        };
        let m = self.prepare_mode(&ctx, dir.node, mode & S_IALLUGO, S_IALLUGO, ty);
        self.create_node(&ctx, dir.node, &name, m, rdev, kind);
        Ok(())
    }

    pub fn sys_unlinkat(&mut self, pid: Pid, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()> {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let p = self.resolve_parent(&ctx, dirfd, path)?;
        let dir = p.dir.node;
        if flags & AT_REMOVEDIR != 0 {
            // do_rmdir
            let name = match p.last {
                Last::DotDot => return Err(Errno::ENOTEMPTY),
                Last::Dot => return Err(Errno::EINVAL),
                Last::Root => return Err(Errno::EBUSY),
                Last::Normal(n) => n,
            };
            self.want_write(p.dir.mnt)?;
            let victim = self.lookup(dir, &name)?;
            self.may_delete(&ctx, dir, victim, true)?;
            if self.is_mountpoint(&MpKey::Dir(victim)) {
                return Err(Errno::EBUSY);
            }
            if !self.node(victim).dir().is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
            self.unlink_name(dir, &name);
            self.maybe_free(victim);
            return Ok(());
        }
        // do_unlinkat
        let Last::Normal(name) = p.last else {
            return Err(Errno::EISDIR);
        };
        self.want_write(p.dir.mnt)?;
        let victim = self.lookup(dir, &name)?;
        if p.trailing {
            return Err(if self.is_dir(victim) {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        self.may_delete(&ctx, dir, victim, false)?;
        if self.is_mountpoint(&MpKey::Name(dir, name.clone())) {
            return Err(Errno::EBUSY);
        }
        self.unlink_name(dir, &name);
        self.maybe_free(victim);
        Ok(())
    }

    /// The child of `anc` on the way down to `d`, if `anc` is a proper
    /// ancestor of `d` (lock_rename's "trap").
    fn child_towards(&self, anc: NodeId, mut d: NodeId) -> Option<NodeId> {
        loop {
            let p = self.node(d).dir().parent;
            if p == anc {
                return Some(d);
            }
            if p == d {
                return None;
            }
            d = p;
        }
    }

    pub fn sys_renameat2(
        &mut self,
        pid: Pid,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        let exchange = flags & RENAME_EXCHANGE != 0;
        let noreplace = flags & RENAME_NOREPLACE != 0;
        if (noreplace || flags & RENAME_WHITEOUT != 0) && exchange {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let old = self.resolve_parent(&ctx, olddirfd, oldpath)?;
        let new = self.resolve_parent(&ctx, newdirfd, newpath)?;
        if old.dir.mnt != new.dir.mnt {
            return Err(Errno::EXDEV);
        }
        let Last::Normal(old_name) = old.last.clone() else {
            return Err(Errno::EBUSY);
        };
        let Last::Normal(new_name) = new.last.clone() else {
            return Err(if noreplace {
                Errno::EEXIST
            } else {
                Errno::EBUSY
            });
        };
        self.want_write(old.dir.mnt)?;
        let (od, nd) = (old.dir.node, new.dir.node);
        let src = self.lookup(od, &old_name)?;
        let tgt = self.lookup_maybe(nd, &new_name)?;
        if noreplace && tgt.is_some() {
            return Err(Errno::EEXIST);
        }
        if exchange {
            let Some(t) = tgt else {
                return Err(Errno::ENOENT);
            };
            if !self.is_dir(t) && new.trailing {
                return Err(Errno::ENOTDIR);
            }
        }
        let is_dir = self.is_dir(src);
        if !is_dir && (old.trailing || (!exchange && new.trailing)) {
            return Err(Errno::ENOTDIR);
        }
        if od != nd {
            if let Some(trap) = self.child_towards(od, nd) {
                if trap == src {
                    return Err(Errno::EINVAL);
                }
            } else if let Some(trap) = self.child_towards(nd, od) {
                if Some(trap) == tgt {
                    return Err(if exchange {
                        Errno::EINVAL
                    } else {
                        Errno::ENOTEMPTY
                    });
                }
            }
        }
        // vfs_rename
        if Some(src) == tgt {
            return Ok(());
        }
        self.may_delete(&ctx, od, src, is_dir)?;
        let new_is_dir = tgt.is_some_and(|t| self.is_dir(t));
        match tgt {
            None => self.may_create(&ctx, nd)?,
            Some(t) => self.may_delete(&ctx, nd, t, if exchange { new_is_dir } else { is_dir })?,
        }
        if od != nd {
            if is_dir {
                permission(&ctx.cred, self.node(src), MAY_WRITE)?;
            }
            if exchange && new_is_dir {
                permission(&ctx.cred, self.node(tgt.unwrap()), MAY_WRITE)?;
            }
        }
        let old_key = mp_key_of(self, od, &old_name, src);
        let new_busy = tgt.is_some_and(|t| {
            let k = mp_key_of(self, nd, &new_name, t);
            self.is_mountpoint(&k)
        });
        if self.is_mountpoint(&old_key) || new_busy {
            return Err(Errno::EBUSY);
        }
        if od != nd {
            if is_dir && !new_is_dir && self.node(nd).nlink >= LINK_MAX {
                return Err(Errno::EMLINK);
            }
            if exchange && !is_dir && new_is_dir && self.node(od).nlink >= LINK_MAX {
                return Err(Errno::EMLINK);
            }
        }
        if exchange {
            self.do_exchange(od, &old_name, src, nd, &new_name, tgt.unwrap());
            return Ok(());
        }
        // shmem_rename2
        if let Some(t) = tgt {
            if self.is_dir(t) && !self.node(t).dir().is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
        }
        let t = now();
        self.node_mut(od).dir_mut().remove(&old_name);
        if flags & RENAME_WHITEOUT != 0 {
            // shmem_whiteout: a char 0:0 device takes the old name.
            let mode = S_IFCHR;
            self.create_node(&ctx, od, &old_name, mode, 0, Kind::Chr);
        }
        let mut cookie = None;
        if let Some(victim) = tgt {
            cookie = self.node(nd).dir().by_name.get(&new_name).map(|e| e.0);
            self.unlink_name(nd, &new_name);
            self.maybe_free(victim);
        }
        if is_dir {
            self.node_mut(od).nlink -= 1;
            self.node_mut(nd).nlink += 1;
            let d = self.node_mut(src).dir_mut();
            d.parent = nd;
            d.name = new_name.clone();
            if od != nd {
                self.pin(nd);
                self.unpin(od);
            }
        }
        self.node_mut(nd).dir_mut().insert(&new_name, src, cookie);
        for d in [od, nd] {
            let n = self.node_mut(d);
            n.mtime = t;
            n.ctime = t;
        }
        self.node_mut(src).ctime = t;
        Ok(())
    }

    /// RENAME_EXCHANGE: the two names swap inodes and keep their cookies.
    fn do_exchange(
        &mut self,
        od: NodeId,
        old_name: &[u8],
        src: NodeId,
        nd: NodeId,
        new_name: &[u8],
        tgt: NodeId,
    ) {
        let t = now();
        self.node_mut(od).dir_mut().replace(old_name, tgt);
        self.node_mut(nd).dir_mut().replace(new_name, src);
        let (src_dir, tgt_dir) = (self.is_dir(src), self.is_dir(tgt));
        if od != nd && src_dir != tgt_dir {
            if src_dir {
                self.node_mut(od).nlink -= 1;
                self.node_mut(nd).nlink += 1;
            } else {
                self.node_mut(nd).nlink -= 1;
                self.node_mut(od).nlink += 1;
            }
        }
        for (id, parent, name) in [(src, nd, new_name), (tgt, od, old_name)] {
            if self.is_dir(id) {
                let old_parent = self.node(id).dir().parent;
                let d = self.node_mut(id).dir_mut();
                d.parent = parent;
                d.name = name.to_vec();
                if old_parent != parent {
                    self.pin(parent);
                    self.unpin(old_parent);
                }
            }
        }
        for d in [od, nd] {
            let n = self.node_mut(d);
            n.mtime = t;
            n.ctime = t;
        }
        self.node_mut(src).ctime = t;
        self.node_mut(tgt).ctime = t;
    }

    pub fn sys_linkat(
        &mut self,
        pid: Pid,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let empty_ok = flags & AT_EMPTY_PATH != 0;
        check_path(oldpath, empty_ok)?;
        // LOOKUP_LINKAT_EMPTY: a dirfd opened under other credentials is
        // ENOENT unless CAP_DAC_READ_SEARCH.
        if empty_ok && oldpath.first() != Some(&b'/') && olddirfd != AT_FDCWD {
            let f = self.fd_raw(pid, olddirfd)?;
            if self.file(f).cred_id != self.proc(pid).cred_id && !ctx.cred.is_root() {
                return Err(Errno::ENOENT);
            }
        }
        let old = self.resolve_at(
            &ctx,
            olddirfd,
            oldpath,
            flags & AT_SYMLINK_FOLLOW != 0,
            empty_ok,
        )?;
        let (dir, name) = self.filename_create(&ctx, newdirfd, newpath, false)?;
        if old.mnt != dir.mnt {
            return Err(Errno::EXDEV);
        }
        // vfs_link
        self.may_create(&ctx, dir.node)?;
        let n = self.node(old.node);
        // No new name for an append-only or immutable file, nor for a
        // directory.
        if n.is_protected() || n.is_dir() {
            return Err(Errno::EPERM);
        }
        if n.nlink == 0 && !n.linkable {
            return Err(Errno::ENOENT);
        }
        if n.nlink >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        let t = now();
        let n = self.node_mut(old.node);
        n.nlink += 1;
        n.linkable = false;
        n.ctime = t;
        let d = self.node_mut(dir.node);
        d.dir_mut().insert(&name, old.node, None);
        d.mtime = t;
        d.ctime = t;
        Ok(())
    }

    pub fn sys_symlinkat(
        &mut self,
        pid: Pid,
        target: &[u8],
        newdirfd: Fd,
        linkpath: &[u8],
    ) -> SysResult<()> {
        check_path(target, false)?;
        let ctx = self.ctx(pid);
        let (dir, name) = self.filename_create(&ctx, newdirfd, linkpath, false)?;
        self.may_create(&ctx, dir.node)?;
        self.create_node(
            &ctx,
            dir.node,
            &name,
            S_IFLNK | 0o777,
            0,
            Kind::Symlink(target.to_vec()),
        );
        Ok(())
    }

    pub fn sys_readlinkat(
        &mut self,
        pid: Pid,
        dirfd: Fd,
        path: &[u8],
        buf: &mut [u8],
    ) -> SysResult<usize> {
        if buf.is_empty() {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        let loc = self.resolve_at(&ctx, dirfd, path, false, true)?;
        let n = self.node(loc.node);
        if !n.is_symlink() {
            return Err(if path.is_empty() {
                Errno::ENOENT
            } else {
                Errno::EINVAL
            });
        }
        let t = n.link_target();
        let k = t.len().min(buf.len());
        buf[..k].copy_from_slice(&t[..k]);
        self.touch_atime(loc.mnt, loc.node);
        Ok(k)
    }

    pub fn sys_getdents64(&mut self, pid: Pid, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        let f = self.fd_get(pid, fd)?;
        let file = self.file(f);
        let (loc, mut pos) = (file.loc, file.pos);
        let n = self.node(loc.node);
        if !n.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let d = n.dir();
        if d.dead {
            return Err(Errno::ENOENT);
        }
        // "." at 0, ".." at 1, then the entries in ascending cookie order
        // from `pos` (the project's stable-cookie scheme; Linux 6.18 tmpfs
        // lists newest first and ends with d_off = INT_MAX).
        let parent_ino = d.parent.ino;
        let start = pos;
        let dots = [(0i64, loc.node.ino, &b"."[..]), (1, parent_ino, &b".."[..])];
        let children = d.by_cookie.range(pos.max(2) as u64..).map(|(&c, name)| {
            let c_node = self.node(d.get(name).expect("model: cookie without name"));
            (
                c as i64,
                c_node.id.ino,
                mode_to_dtype(c_node.mode),
                &name[..],
            )
        });
        let mut entries = dots
            .into_iter()
            .filter(|e| e.0 >= start)
            .map(|(p, ino, name)| (p, ino, DT_DIR, name))
            .chain(children)
            .peekable();
        let mut at = 0;
        let mut first_too_big = false;
        while let Some((p, ino, dtype, name)) = entries.next() {
            // d_off: the cookie of the next entry, or just past this one at
            // the end (where an entry created later would be found).
            let next = entries.peek().map_or(p + 1, |e| e.0);
            match put_dirent64(buf, at, ino, next, dtype, name) {
                Some(k) => {
                    at += k;
                    pos = next;
                }
                None => {
                    first_too_big = at == 0;
                    break;
                }
            }
        }
        self.file_mut(f).pos = pos;
        self.touch_atime(loc.mnt, loc.node);
        if first_too_big {
            return Err(Errno::EINVAL);
        }
        Ok(at)
    }

    // ================= process context =================

    fn set_cwd(&mut self, pid: Pid, loc: Loc) {
        self.loc_get(loc);
        let old = std::mem::replace(&mut self.proc_mut(pid).cwd, loc);
        self.loc_put(old);
    }

    pub fn sys_chdir(&mut self, pid: Pid, path: &[u8]) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let loc = self.resolve_at(&ctx, AT_FDCWD, path, true, false)?;
        if !self.is_dir(loc.node) {
            return Err(Errno::ENOTDIR);
        }
        permission(&ctx.cred, self.node(loc.node), MAY_EXEC)?;
        self.set_cwd(pid, loc);
        Ok(())
    }

    pub fn sys_fchdir(&mut self, pid: Pid, fd: Fd) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let f = self.fd_raw(pid, fd)?;
        let loc = self.file(f).loc;
        if !self.is_dir(loc.node) {
            return Err(Errno::ENOTDIR);
        }
        permission(&ctx.cred, self.node(loc.node), MAY_EXEC)?;
        self.set_cwd(pid, loc);
        Ok(())
    }

    pub fn sys_getcwd(&mut self, pid: Pid) -> SysResult<Vec<u8>> {
        let ctx = self.ctx(pid);
        self.getcwd(&ctx)
    }

    pub fn sys_chroot(&mut self, pid: Pid, path: &[u8]) -> SysResult<()> {
        let ctx = self.ctx(pid);
        let loc = self.resolve_at(&ctx, AT_FDCWD, path, true, false)?;
        if !self.is_dir(loc.node) {
            return Err(Errno::ENOTDIR);
        }
        permission(&ctx.cred, self.node(loc.node), MAY_EXEC)?;
        if !ctx.cred.is_root() {
            return Err(Errno::EPERM);
        }
        self.loc_get(loc);
        let old = std::mem::replace(&mut self.proc_mut(pid).root, loc);
        self.loc_put(old);
        Ok(())
    }

    pub fn sys_umask(&mut self, pid: Pid, mask: u32) -> u32 {
        std::mem::replace(&mut self.proc_mut(pid).umask, mask & 0o777)
    }

    // ================= mounts =================

    /// lock_mount: the topmost mount stacked on `loc`; ENOENT if a dentry
    /// on the way was removed, or the target is in a detached tree
    /// (Linux 6.18: `!is_mounted`).
    fn lock_mount(&self, mut loc: Loc, mut key: MpKey) -> SysResult<(Loc, MpKey)> {
        loop {
            if self.node(loc.node).is_dead_dir()
                || self.node(loc.node).nlink == 0
                || !self.mount(loc.mnt).attached
            {
                return Err(Errno::ENOENT);
            }
            match self.mounted_on.get(&(loc.mnt, key.clone())) {
                None => return Ok((loc, key)),
                Some(&m) => {
                    let mnt = self.mount(m);
                    loc = Loc {
                        mnt: m,
                        node: mnt.root,
                    };
                    key = mnt.root_key.clone();
                }
            }
        }
    }

    /// The opening do_loopback and do_move_mount_old share: the source
    /// named by `source` (an empty name is EINVAL, not ENOENT), then the
    /// target locked (lock_mount), in that order.
    fn mount_source_and_target(
        &mut self,
        ctx: &Ctx,
        source: &[u8],
        tloc: Loc,
        tkey: MpKey,
    ) -> SysResult<((Loc, MpKey), (Loc, MpKey))> {
        if source.is_empty() {
            return Err(Errno::EINVAL);
        }
        check_path(source, false)?;
        let sstart = self.start_loc(ctx, AT_FDCWD, source)?;
        let src = self.walk_full_raw(ctx, sstart, source, true)?;
        Ok((src, self.lock_mount(tloc, tkey)?))
    }

    pub fn sys_mount(
        &mut self,
        pid: Pid,
        source: &[u8],
        target: &[u8],
        fstype: &[u8],
        flags: u64,
    ) -> SysResult<()> {
        // copy_mount_string: strndup_user(PATH_MAX).
        for s in [source, fstype] {
            if s.contains(&0) || s.len() >= PATH_MAX {
                return Err(Errno::EINVAL);
            }
        }
        let ctx = self.ctx(pid);
        check_path(target, false)?;
        let start = self.start_loc(&ctx, AT_FDCWD, target)?;
        let (tloc, tkey) = self.walk_full_raw(&ctx, start, target, true)?;
        // path_mount
        let flags = if flags & MS_MGC_MSK == MS_MGC_VAL {
            flags & !MS_MGC_MSK
        } else {
            flags
        };
        if flags & MS_NOUSER != 0 {
            return Err(Errno::EINVAL);
        }
        if !ctx.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & MS_REMOUNT != 0 {
            // do_reconfigure_mnt / do_remount: a mount's root, in the
            // namespace.
            let m = self.mount(tloc.mnt);
            if !m.attached || tloc.node != m.root {
                return Err(Errno::EINVAL);
            }
            let mf = mnt_flags_of(flags, Some(m.flags));
            let dev = m.dev;
            if flags & MS_BIND != 0 {
                // change_mount_ro_state: making a mount read-only that is
                // not (by either bit) fails while it has writers.
                if mf.readonly && !self.mnt_is_readonly(tloc.mnt) && self.mnt_writers(tloc.mnt) > 0
                {
                    return Err(Errno::EBUSY);
                }
            } else {
                // reconfigure_super: the instance's bit follows MS_RDONLY;
                // going read-only (sb_prepare_remount_readonly) fails while
                // a mount of it without its own read-only bit has writers,
                // or while an unlinked inode of it lives (s_remove_count).
                self.reconfigure_fs_readonly(dev, mf.readonly)?;
                // The other superblock flags a remount sets (MS_RMT_MASK).
                self.fses
                    .get_mut(&dev)
                    .expect("model: dangling fs")
                    .st_flags = sb_st_flags(flags);
            }
            // set_mount_attributes: the mount's flags become the requested
            // ones, its read-only bit included.
            self.mount_mut(tloc.mnt).flags = mf;
            return Ok(());
        }
        if flags & MS_BIND != 0 {
            // do_loopback
            let ((sloc, skey), (tloc, tkey)) =
                self.mount_source_and_target(&ctx, source, tloc, tkey)?;
            // __do_loopback: an unbindable source, or one not in the
            // namespace, is EINVAL.
            let src = self.mount(sloc.mnt);
            if src.unbindable || !src.attached {
                return Err(Errno::EINVAL);
            }
            if self.is_dir(tloc.node) != self.is_dir(sloc.node) {
                return Err(Errno::ENOTDIR);
            }
            // clone_mnt(old, 0): a copy is a peer of its original if that
            // is shared, and a slave of its master.
            let m = self.clone_tree(sloc.mnt, sloc.node, skey, flags & MS_REC != 0, &|st, o| {
                (st.mount(o).group, st.mount(o).master)
            });
            self.attach_recursive(m, tloc.mnt, tkey, false);
            return Ok(());
        }
        if flags & MS_PROPAGATION != 0 {
            // do_change_type: a mount's root, exactly one type, a mount in
            // the namespace (may_change_propagation); MS_REC applies it to
            // every mount beneath too.
            if tloc.node != self.mount(tloc.mnt).root {
                return Err(Errno::EINVAL);
            }
            let t = match flags & !(MS_REC | MS_SILENT) {
                MS_SHARED => PropType::Shared,
                MS_SLAVE => PropType::Slave,
                MS_PRIVATE => PropType::Private,
                MS_UNBINDABLE => PropType::Unbindable,
                _ => return Err(Errno::EINVAL),
            };
            if !self.mount(tloc.mnt).attached {
                return Err(Errno::EINVAL);
            }
            let targets = if flags & MS_REC != 0 {
                self.subtree(tloc.mnt)
            } else {
                vec![tloc.mnt]
            };
            for m in targets {
                self.change_mnt_propagation(m, t);
            }
            return Ok(());
        }
        if flags & MS_MOVE != 0 {
            // do_move_mount_old
            let ((sloc, _), (tloc, tkey)) =
                self.mount_source_and_target(&ctx, source, tloc, tkey)?;
            // do_move_mount: an attached mount with a parent, named by its
            // root, of the target's type.
            let old = self.mount(sloc.mnt);
            if !old.attached
                || old.parent.is_none()
                || sloc.node != old.root
                || self.is_dir(tloc.node) != self.is_dir(sloc.node)
            {
                return Err(Errno::EINVAL);
            }
            // Not from a shared parent; not a tree holding an unbindable
            // mount onto a shared mount.
            let (parent, _) = old.parent.clone().expect("model: checked");
            if self.mount(parent).group.is_some() {
                return Err(Errno::EINVAL);
            }
            if self.mount(tloc.mnt).group.is_some()
                && self
                    .subtree(sloc.mnt)
                    .iter()
                    .any(|&m| self.mount(m).unbindable)
            {
                return Err(Errno::EINVAL);
            }
            // Not onto itself or beneath itself.
            let mut p = Some(tloc.mnt);
            while let Some(m) = p {
                if m == sloc.mnt {
                    return Err(Errno::ELOOP);
                }
                p = self.mount(m).parent.as_ref().map(|(pm, _)| *pm);
            }
            self.attach_recursive(sloc.mnt, tloc.mnt, tkey, true);
            return Ok(());
        }
        // do_new_mount
        if fstype != b"tmpfs" {
            return Err(Errno::ENODEV);
        }
        let mf = mnt_flags_of(flags, None);
        let (tloc, tkey) = self.lock_mount(tloc, tkey)?;
        if !self.is_dir(tloc.node) {
            return Err(Errno::ENOTDIR);
        }
        // A new tmpfs root: mode 1777 owned by root (shmem's default).
        // MS_RDONLY makes both the instance (SB_RDONLY, from the context's
        // sb_flags) and the mount (MNT_READONLY) read-only.
        let dev = self.new_fs(0o1777, ctx.cred.fsuid, ctx.cred.fsgid);
        let fs = self.fses.get_mut(&dev).expect("model: new fs");
        fs.readonly = mf.readonly;
        fs.st_flags = sb_st_flags(flags);
        let root = self.fses[&dev].root;
        let m = self.new_mount(dev, root, None, mf);
        self.attach_recursive(m, tloc.mnt, tkey, false);
        Ok(())
    }

    /// reconfigure_super's read-only part: instance `dev` becomes
    /// read-only (`readonly`) or writable; going read-only
    /// (sb_prepare_remount_readonly) fails while a mount of it without its
    /// own read-only bit has writers, or while an unlinked inode of it
    /// lives (s_remove_count).
    fn reconfigure_fs_readonly(&mut self, dev: u32, readonly: bool) -> SysResult<()> {
        if readonly && !self.fs_is_readonly(dev) {
            let busy = self
                .mounts
                .iter()
                .any(|(&id, m)| m.dev == dev && !m.flags.readonly && self.mnt_writers(id) > 0);
            if busy || self.fs_has_orphans(dev) {
                return Err(Errno::EBUSY);
            }
        }
        self.fses
            .get_mut(&dev)
            .expect("model: dangling fs")
            .readonly = readonly;
        Ok(())
    }

    pub fn sys_umount2(&mut self, pid: Pid, target: &[u8], flags: i32) -> SysResult<()> {
        if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0 {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(pid);
        check_path(target, false)?;
        let start = self.start_loc(&ctx, AT_FDCWD, target)?;
        let (loc, key) = self.walk_full_raw(&ctx, start, target, flags & UMOUNT_NOFOLLOW == 0)?;
        // LOOKUP_MOUNTPOINT: enter what is mounted on the result.
        let (loc, _) = self.traverse(loc, key);
        // can_umount
        if !ctx.cred.is_root() {
            return Err(Errno::EPERM);
        }
        let id = loc.mnt;
        let m = self.mount(id);
        if loc.node != m.root || !m.attached {
            return Err(Errno::EINVAL);
        }
        // do_umount
        let is_root_mnt = id == ctx.root.mnt;
        if is_root_mnt && flags & MNT_EXPIRE != 0 {
            return Err(Errno::EINVAL);
        }
        if is_root_mnt && flags & MNT_DETACH == 0 {
            // The caller's root mount is not unmounted: its instance is
            // made read-only (do_umount_root).
            let dev = m.dev;
            return self.reconfigure_fs_readonly(dev, true);
        }
        // Model limitation (as vfscale): the namespace root is never
        // detached.
        if id == self.ns_root {
            return Err(Errno::EINVAL);
        }
        let m = self.mount(id);
        if flags & MNT_EXPIRE != 0 {
            if flags & (MNT_FORCE | MNT_DETACH) != 0 {
                return Err(Errno::EINVAL);
            }
            if m.refs != 0 {
                return Err(Errno::EBUSY);
            }
            if !m.expiry_mark {
                self.mount_mut(id).expiry_mark = true;
                return Err(Errno::EAGAIN);
            }
        }
        if flags & MNT_DETACH != 0 {
            self.umount_tree(id);
            return Ok(());
        }
        // propagate_mount_busy: `id` itself, then the mounts the umount
        // would propagate to.
        if !m.children.is_empty() || m.refs != 0 || self.propagate_mount_busy(id) {
            return Err(Errno::EBUSY);
        }
        self.umount_tree(id);
        Ok(())
    }

    // ================= lifetime =================

    pub fn sys_fork(&mut self, pid: Pid) -> Pid {
        let p = self.proc(pid);
        let (cred, root, cwd, umask, fds, limit) = (
            p.cred.clone(),
            p.root,
            p.cwd,
            p.umask,
            p.fds.clone(),
            p.fd_limit,
        );
        let child = self.new_proc(cred, root, cwd, umask);
        for e in fds.iter().flatten() {
            self.file_mut(e.file).refs += 1;
        }
        let c = self.proc_mut(child);
        c.fds = fds;
        c.fd_limit = limit;
        child
    }
}

/// Data transfer on a FIFO before pipes exist (docs/COMPATIBILITY.md): an
/// empty transfer is 0, anything else behaves as an empty, writer-less
/// non-blocking pipe would: EAGAIN.
/// Pages of vfscale's default tmpfs instance (`VfsConfig`: 1 TiB), the
/// bound of a fallocate range.
const INSTANCE_PAGES: u64 = (1 << 40) / PAGE;

fn fifo_io(len: usize) -> SysResult<usize> {
    if len == 0 {
        Ok(0)
    } else {
        Err(Errno::EAGAIN)
    }
}

/// The statfs flags of mount(2)'s superblock flags MS_SYNCHRONOUS and
/// MS_MANDLOCK (SB_SYNCHRONOUS, SB_MANDLOCK: accepted, and reported, with
/// no other effect on a memory filesystem).
fn sb_st_flags(flags: u64) -> i64 {
    let mut st = 0;
    if flags & MS_SYNCHRONOUS != 0 {
        st |= ST_SYNCHRONOUS;
    }
    if flags & MS_MANDLOCK != 0 {
        st |= ST_MANDLOCK;
    }
    st
}

/// path_mount's per-mount flags for mount(2) flags `flags`; a remount
/// (`current`: the mount's flags) that names no atime flag keeps its atime
/// bits (the mode and nodiratime).
fn mnt_flags_of(flags: u64, current: Option<MntFlags>) -> MntFlags {
    let mut mf = MntFlags {
        noexec: flags & MS_NOEXEC != 0,
        nodev: flags & MS_NODEV != 0,
        nosuid: flags & MS_NOSUID != 0,
        nodiratime: flags & MS_NODIRATIME != 0,
        nosymfollow: flags & MS_NOSYMFOLLOW != 0,
        readonly: flags & MS_RDONLY != 0,
        // Strict atime wins over noatime.
        atime: if flags & MS_STRICTATIME != 0 {
            AtimeMode::Strict
        } else if flags & MS_NOATIME != 0 {
            AtimeMode::NoAtime
        } else {
            AtimeMode::Relatime
        },
    };
    if let Some(cur) = current {
        if flags & (MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME) == 0 {
            mf.atime = cur.atime;
            mf.nodiratime = cur.nodiratime;
        }
    }
    mf
}
