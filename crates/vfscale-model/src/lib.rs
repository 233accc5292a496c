//! `vfscale-model`: the reference model of vfscale's process API — the same
//! `ProcessApi` over one big lock and plain maps (the 2008 design).
//!
//! It has two jobs: property tests run random operation sequences (see
//! [`ops`]) against vfscale's real `Process` and against this model and
//! require identical results and errno; and it is the `global-lock` target of
//! the benchmarks.
//!
//! Invariants:
//! - ONE `parking_lot::Mutex` guards the whole state (inodes, mounts, open
//!   files, processes); every call takes it once and runs to completion
//!   under it, so calls are linearizable in lock order;
//! - semantics follow Linux (6.12+) with tmpfs: errno values and the order
//!   in which checks fail are Linux's; where the model departs from Linux
//!   (no pipes/devices behind FIFOs and device nodes, umount of the
//!   caller's root mount EBUSY instead of a read-only remount) it says so
//!   where it departs; read-only mounts and instances are modelled
//!   (state.rs), and so are tmpfs's inode flags (fileattr.rs) and mount
//!   propagation within the one namespace — shared, slave, private and
//!   unbindable mounts (pnode.rs);
//! - a `ModelProcess` is a process until `exit` (or drop), which closes its
//!   descriptors and releases its root and cwd.

mod acl;
mod fileattr;
mod node;
#[cfg(feature = "proptest")]
pub mod ops;
mod perm;
mod pnode;
mod state;
mod sys;
mod walk;
mod xattr;

use parking_lot::Mutex;
use state::{Pid, State};
use std::sync::Arc;
use vfscale::abi::*;
use vfscale::{Cred, Fd, ProcessApi};
use xattr::Target;

/// Default system-wide limit on open file descriptions (ENFILE).
pub const DEFAULT_MAX_FILES: usize = 1 << 24;
/// Default per-process descriptor limit (RLIMIT_NOFILE, EMFILE).
pub const DEFAULT_FD_LIMIT: usize = 1024;

/// A model filesystem namespace: one tmpfs mounted at "/" (mode 0755, owned
/// by root), more via `mount`. Clones are handles to the same namespace.
#[derive(Clone)]
pub struct ModelFs {
    state: Arc<Mutex<State>>,
}

impl Default for ModelFs {
    fn default() -> Self {
        ModelFs::new()
    }
}

impl ModelFs {
    pub fn new() -> ModelFs {
        ModelFs {
            state: Arc::new(Mutex::new(State::new(DEFAULT_MAX_FILES))),
        }
    }

    /// A new process with `cred`, root = cwd = "/", umask 0o022, no
    /// descriptors, descriptor limit `DEFAULT_FD_LIMIT`.
    pub fn process(&self, cred: Cred) -> ModelProcess {
        let mut st = self.state.lock();
        let root = state::Loc {
            mnt: st.ns_root,
            node: st.mount(st.ns_root).root,
        };
        let pid = st.new_proc(Arc::new(cred), root, root, 0o022);
        ModelProcess {
            fs: self.clone(),
            pid,
        }
    }

    /// Sets the system-wide open-file limit (ENFILE for non-root callers).
    pub fn set_max_files(&self, n: usize) {
        self.state.lock().max_files = n;
    }

    /// Open file descriptions in the whole namespace.
    pub fn open_files(&self) -> usize {
        self.state.lock().nr_files
    }

    /// Inodes alive in all filesystem instances (for leak checks in tests).
    pub fn inode_count(&self) -> usize {
        self.state.lock().nodes.len()
    }

    /// Mount records alive, attached or lazily detached (for tests).
    pub fn mount_count(&self) -> usize {
        self.state.lock().mounts.len()
    }
}

/// One process of a `ModelFs`: credentials, root, cwd, umask and an fd
/// table. Dropping it is `exit`.
pub struct ModelProcess {
    fs: ModelFs,
    pid: Pid,
}

impl ModelProcess {
    fn with<R>(&self, f: impl FnOnce(&mut State, Pid) -> R) -> R {
        let mut st = self.fs.state.lock();
        f(&mut st, self.pid)
    }

    /// Sets this process's descriptor limit (RLIMIT_NOFILE): descriptors at
    /// or above it are not allocated (EMFILE) nor accepted by dup2/dup3
    /// (EBADF); open ones stay open.
    pub fn set_fd_limit(&self, n: usize) {
        self.with(|st, pid| st.proc_mut(pid).fd_limit = n)
    }

    /// The credentials this process runs with.
    pub fn cred(&self) -> Cred {
        self.with(|st, pid| (*st.proc(pid).cred).clone())
    }

    /// The namespace this process lives in.
    pub fn fs(&self) -> &ModelFs {
        &self.fs
    }
}

impl Drop for ModelProcess {
    fn drop(&mut self) {
        self.with(|st, pid| st.exit_proc(pid));
    }
}

impl ProcessApi for ModelProcess {
    fn openat(&self, dirfd: Fd, path: &[u8], flags: i32, mode: u32) -> SysResult<Fd> {
        self.with(|st, pid| st.sys_openat(pid, dirfd, path, flags, mode))
    }
    fn close(&self, fd: Fd) -> SysResult<()> {
        self.with(|st, pid| st.sys_close(pid, fd))
    }
    fn close_range(&self, first: u32, last: u32, flags: u32) -> SysResult<()> {
        self.with(|st, pid| st.sys_close_range(pid, first, last, flags))
    }
    fn dup(&self, fd: Fd) -> SysResult<Fd> {
        self.with(|st, pid| st.sys_dup(pid, fd))
    }
    fn dup2(&self, oldfd: Fd, newfd: Fd) -> SysResult<Fd> {
        self.with(|st, pid| st.sys_dup2(pid, oldfd, newfd))
    }
    fn dup3(&self, oldfd: Fd, newfd: Fd, flags: i32) -> SysResult<Fd> {
        self.with(|st, pid| st.sys_dup3(pid, oldfd, newfd, flags))
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_read(pid, fd, buf))
    }
    fn fallocate(&self, fd: Fd, mode: i32, offset: i64, len: i64) -> SysResult<()> {
        self.with(|st, pid| st.sys_fallocate(pid, fd, mode, offset, len))
    }
    fn copy_file_range(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        self.with(|st, pid| st.sys_copy_file_range(pid, fd_in, off_in, fd_out, off_out, len, flags))
    }
    fn syncfs(&self, fd: Fd) -> SysResult<()> {
        self.with(|st, pid| st.sys_syncfs(pid, fd))
    }

    fn setxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_setxattr(pid, Target::Path(path, true), name, value, flags))
    }
    fn lsetxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_setxattr(pid, Target::Path(path, false), name, value, flags))
    }
    fn fsetxattr(&self, fd: Fd, name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_setxattr(pid, Target::Fd(fd, true), name, value, flags))
    }
    fn getxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_getxattr(pid, Target::Path(path, true), name, buf))
    }
    fn lgetxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_getxattr(pid, Target::Path(path, false), name, buf))
    }
    fn fgetxattr(&self, fd: Fd, name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_getxattr(pid, Target::Fd(fd, true), name, buf))
    }
    fn listxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_listxattr(pid, Target::Path(path, true), buf))
    }
    fn llistxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_listxattr(pid, Target::Path(path, false), buf))
    }
    fn flistxattr(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_listxattr(pid, Target::Fd(fd, false), buf))
    }
    fn removexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_removexattr(pid, Target::Path(path, true), name))
    }
    fn lremovexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_removexattr(pid, Target::Path(path, false), name))
    }
    fn fremovexattr(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_removexattr(pid, Target::Fd(fd, false), name))
    }
    fn fs_ioc_getflags(&self, fd: Fd) -> SysResult<u32> {
        self.with(|st, pid| st.sys_fs_ioc_getflags(pid, fd))
    }
    fn fs_ioc_setflags(&self, fd: Fd, flags: u32) -> SysResult<()> {
        self.with(|st, pid| st.sys_fs_ioc_setflags(pid, fd, flags))
    }
    fn fs_ioc_fsgetxattr(&self, fd: Fd) -> SysResult<FsXattr> {
        self.with(|st, pid| st.sys_fs_ioc_fsgetxattr(pid, fd))
    }
    fn fs_ioc_fssetxattr(&self, fd: Fd, attr: &FsXattr) -> SysResult<()> {
        self.with(|st, pid| st.sys_fs_ioc_fssetxattr(pid, fd, *attr))
    }
    fn write(&self, fd: Fd, buf: &[u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_write(pid, fd, buf))
    }
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
        self.with(|st, pid| st.sys_pread(pid, fd, buf, offset))
    }
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize> {
        self.with(|st, pid| st.sys_pwrite(pid, fd, buf, offset))
    }
    fn readv(&self, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_readv(pid, fd, bufs))
    }
    fn writev(&self, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_writev(pid, fd, bufs))
    }
    fn lseek(&self, fd: Fd, offset: i64, whence: i32) -> SysResult<i64> {
        self.with(|st, pid| st.sys_lseek(pid, fd, offset, whence))
    }
    fn ftruncate(&self, fd: Fd, length: i64) -> SysResult<()> {
        self.with(|st, pid| st.sys_ftruncate(pid, fd, length))
    }
    fn truncate(&self, path: &[u8], length: i64) -> SysResult<()> {
        self.with(|st, pid| st.sys_truncate(pid, path, length))
    }
    fn fsync(&self, fd: Fd) -> SysResult<()> {
        self.with(|st, pid| st.sys_fsync(pid, fd))
    }
    fn fdatasync(&self, fd: Fd) -> SysResult<()> {
        self.with(|st, pid| st.sys_fsync(pid, fd))
    }

    fn fstat(&self, fd: Fd) -> SysResult<Stat> {
        self.with(|st, pid| st.sys_fstat(pid, fd))
    }
    fn fstatat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat> {
        self.with(|st, pid| st.sys_fstatat(pid, dirfd, path, flags))
    }
    fn statx(&self, dirfd: Fd, path: &[u8], flags: i32, mask: u32) -> SysResult<Statx> {
        self.with(|st, pid| st.sys_statx(pid, dirfd, path, flags, mask))
    }
    fn faccessat(&self, dirfd: Fd, path: &[u8], mode: i32, flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_faccessat(pid, dirfd, path, mode, flags))
    }
    fn fchmodat(&self, dirfd: Fd, path: &[u8], mode: u32, flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_fchmodat(pid, dirfd, path, mode, flags))
    }
    fn fchmod(&self, fd: Fd, mode: u32) -> SysResult<()> {
        self.with(|st, pid| st.sys_fchmod(pid, fd, mode))
    }
    fn fchownat(&self, dirfd: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_fchownat(pid, dirfd, path, uid, gid, flags))
    }
    fn fchown(&self, fd: Fd, uid: u32, gid: u32) -> SysResult<()> {
        self.with(|st, pid| st.sys_fchown(pid, fd, uid, gid))
    }
    fn utimensat(
        &self,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()> {
        self.with(|st, pid| st.sys_utimensat(pid, dirfd, path, times, flags))
    }
    fn futimens(&self, fd: Fd, times: Option<[Timespec; 2]>) -> SysResult<()> {
        self.with(|st, pid| st.sys_futimens(pid, fd, times))
    }
    fn statfs(&self, path: &[u8]) -> SysResult<Statfs> {
        self.with(|st, pid| st.sys_statfs(pid, path))
    }
    fn fstatfs(&self, fd: Fd) -> SysResult<Statfs> {
        self.with(|st, pid| st.sys_fstatfs(pid, fd))
    }

    fn mkdirat(&self, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()> {
        self.with(|st, pid| st.sys_mkdirat(pid, dirfd, path, mode))
    }
    fn mknodat(&self, dirfd: Fd, path: &[u8], mode: u32, dev: u64) -> SysResult<()> {
        self.with(|st, pid| st.sys_mknodat(pid, dirfd, path, mode, dev))
    }
    fn unlinkat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_unlinkat(pid, dirfd, path, flags))
    }
    fn renameat2(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.with(|st, pid| st.sys_renameat2(pid, olddirfd, oldpath, newdirfd, newpath, flags))
    }
    fn linkat(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        self.with(|st, pid| st.sys_linkat(pid, olddirfd, oldpath, newdirfd, newpath, flags))
    }
    fn symlinkat(&self, target: &[u8], newdirfd: Fd, linkpath: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_symlinkat(pid, target, newdirfd, linkpath))
    }
    fn readlinkat(&self, dirfd: Fd, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_readlinkat(pid, dirfd, path, buf))
    }
    fn getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.with(|st, pid| st.sys_getdents64(pid, fd, buf))
    }

    fn chdir(&self, path: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_chdir(pid, path))
    }
    fn fchdir(&self, fd: Fd) -> SysResult<()> {
        self.with(|st, pid| st.sys_fchdir(pid, fd))
    }
    fn getcwd(&self) -> SysResult<Vec<u8>> {
        self.with(|st, pid| st.sys_getcwd(pid))
    }
    fn chroot(&self, path: &[u8]) -> SysResult<()> {
        self.with(|st, pid| st.sys_chroot(pid, path))
    }
    fn umask(&self, mask: u32) -> u32 {
        self.with(|st, pid| st.sys_umask(pid, mask))
    }

    fn mount(&self, source: &[u8], target: &[u8], fstype: &[u8], flags: u64) -> SysResult<()> {
        self.with(|st, pid| st.sys_mount(pid, source, target, fstype, flags))
    }
    fn umount2(&self, target: &[u8], flags: i32) -> SysResult<()> {
        self.with(|st, pid| st.sys_umount2(pid, target, flags))
    }

    fn fork(&self) -> SysResult<Self> {
        let pid = self.with(|st, pid| st.sys_fork(pid));
        Ok(ModelProcess {
            fs: self.fs.clone(),
            pid,
        })
    }
    fn exit(self) {
        drop(self);
    }
}
