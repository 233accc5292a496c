//! `ProcessApi` for `Process`: each method forwards to the `sys_*`
//! implementation in the module of its family.

use super::xattr::XattrAt;
use super::{Process, ProcessApi};
use crate::abi::*;

impl Process {
    /// Ends a top-level operation: frees what it queued (defer/).
    #[inline(always)]
    fn done<R>(&self, r: R) -> R {
        self.vfs.op_end();
        r
    }
}

impl ProcessApi for Process {
    fn openat(&self, dirfd: Fd, path: &[u8], flags: i32, mode: u32) -> SysResult<Fd> {
        self.done(self.sys_openat(dirfd, path, flags, mode))
    }
    fn openat2(&self, dirfd: Fd, path: &[u8], how: &OpenHow) -> SysResult<Fd> {
        self.done(self.sys_openat2(dirfd, path, how))
    }
    fn close(&self, fd: Fd) -> SysResult<()> {
        self.done(self.sys_close(fd))
    }
    fn close_range(&self, first: u32, last: u32, flags: u32) -> SysResult<()> {
        self.done(self.sys_close_range(first, last, flags))
    }
    fn dup(&self, fd: Fd) -> SysResult<Fd> {
        self.done(self.sys_dup(fd))
    }
    fn dup2(&self, oldfd: Fd, newfd: Fd) -> SysResult<Fd> {
        self.done(self.sys_dup3(oldfd, newfd, 0, true))
    }
    fn dup3(&self, oldfd: Fd, newfd: Fd, flags: i32) -> SysResult<Fd> {
        self.done(self.sys_dup3(oldfd, newfd, flags, false))
    }
    fn read(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_read(fd, buf))
    }
    fn write(&self, fd: Fd, buf: &[u8]) -> SysResult<usize> {
        self.done(self.sys_write(fd, buf))
    }
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: i64) -> SysResult<usize> {
        self.done(self.sys_pread(fd, buf, offset))
    }
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: i64) -> SysResult<usize> {
        self.done(self.sys_pwrite(fd, buf, offset))
    }
    fn readv(&self, fd: Fd, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        self.done(self.sys_readv(fd, bufs))
    }
    fn writev(&self, fd: Fd, bufs: &[&[u8]]) -> SysResult<usize> {
        self.done(self.sys_writev(fd, bufs))
    }
    fn lseek(&self, fd: Fd, offset: i64, whence: i32) -> SysResult<i64> {
        self.done(self.sys_lseek(fd, offset, whence))
    }
    fn ftruncate(&self, fd: Fd, length: i64) -> SysResult<()> {
        self.done(self.sys_ftruncate(fd, length))
    }
    fn truncate(&self, path: &[u8], length: i64) -> SysResult<()> {
        self.done(self.sys_truncate_path(path, length))
    }
    fn fsync(&self, fd: Fd) -> SysResult<()> {
        self.done(self.sys_fsync(fd, false))
    }
    fn fdatasync(&self, fd: Fd) -> SysResult<()> {
        self.done(self.sys_fsync(fd, true))
    }
    fn fstat(&self, fd: Fd) -> SysResult<Stat> {
        self.done(self.sys_fstat(fd))
    }
    fn fstatat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Stat> {
        self.done(self.sys_fstatat(dirfd, path, flags))
    }
    fn statx(&self, dirfd: Fd, path: &[u8], flags: i32, mask: u32) -> SysResult<Statx> {
        self.done(self.sys_statx(dirfd, path, flags, mask))
    }
    fn faccessat(&self, dirfd: Fd, path: &[u8], mode: i32, flags: i32) -> SysResult<()> {
        self.done(self.sys_faccessat(dirfd, path, mode, flags))
    }
    fn fchmodat(&self, dirfd: Fd, path: &[u8], mode: u32, flags: i32) -> SysResult<()> {
        self.done(self.sys_fchmodat(dirfd, path, mode, flags))
    }
    fn fchmod(&self, fd: Fd, mode: u32) -> SysResult<()> {
        self.done(self.sys_fchmod(fd, mode))
    }
    fn fchownat(&self, dirfd: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> SysResult<()> {
        self.done(self.sys_fchownat(dirfd, path, uid, gid, flags))
    }
    fn fchown(&self, fd: Fd, uid: u32, gid: u32) -> SysResult<()> {
        self.done(self.sys_fchown(fd, uid, gid))
    }
    fn utimensat(
        &self,
        dirfd: Fd,
        path: &[u8],
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> SysResult<()> {
        self.done(self.sys_utimensat(dirfd, path, times, flags))
    }
    fn futimens(&self, fd: Fd, times: Option<[Timespec; 2]>) -> SysResult<()> {
        self.done(self.sys_futimens(fd, times))
    }
    fn statfs(&self, path: &[u8]) -> SysResult<Statfs> {
        self.done(self.sys_statfs(path))
    }
    fn fstatfs(&self, fd: Fd) -> SysResult<Statfs> {
        self.done(self.sys_fstatfs(fd))
    }
    fn mkdirat(&self, dirfd: Fd, path: &[u8], mode: u32) -> SysResult<()> {
        self.done(self.sys_mkdirat(dirfd, path, mode))
    }
    fn mknodat(&self, dirfd: Fd, path: &[u8], mode: u32, dev: u64) -> SysResult<()> {
        self.done(self.sys_mknodat(dirfd, path, mode, dev))
    }
    fn unlinkat(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<()> {
        self.done(self.sys_unlinkat(dirfd, path, flags))
    }
    fn renameat2(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.done(self.sys_renameat2(olddirfd, oldpath, newdirfd, newpath, flags))
    }
    fn linkat(
        &self,
        olddirfd: Fd,
        oldpath: &[u8],
        newdirfd: Fd,
        newpath: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        self.done(self.sys_linkat(olddirfd, oldpath, newdirfd, newpath, flags))
    }
    fn symlinkat(&self, target: &[u8], newdirfd: Fd, linkpath: &[u8]) -> SysResult<()> {
        self.done(self.sys_symlinkat(target, newdirfd, linkpath))
    }
    fn readlinkat(&self, dirfd: Fd, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_readlinkat(dirfd, path, buf))
    }
    fn name_to_handle_at(
        &self,
        dirfd: Fd,
        path: &[u8],
        handle: &mut FileHandle,
        flags: i32,
    ) -> SysResult<u64> {
        self.sys_name_to_handle_at(dirfd, path, handle, flags)
    }
    fn open_by_handle_at(&self, mount_fd: Fd, handle: &FileHandle, flags: i32) -> SysResult<Fd> {
        self.sys_open_by_handle_at(mount_fd, handle, flags)
    }
    fn getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_getdents64(fd, buf))
    }
    fn setxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.done(self.sys_setxattr(XattrAt::Path(path, true), name, value, flags))
    }
    fn lsetxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.done(self.sys_setxattr(XattrAt::Path(path, false), name, value, flags))
    }
    fn fsetxattr(&self, fd: Fd, name: &[u8], value: &[u8], flags: i32) -> SysResult<()> {
        self.done(self.sys_setxattr(XattrAt::Fd(fd), name, value, flags))
    }
    fn getxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_getxattr(XattrAt::Path(path, true), name, buf))
    }
    fn lgetxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_getxattr(XattrAt::Path(path, false), name, buf))
    }
    fn fgetxattr(&self, fd: Fd, name: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_getxattr(XattrAt::Fd(fd), name, buf))
    }
    fn listxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_listxattr(XattrAt::Path(path, true), buf))
    }
    fn llistxattr(&self, path: &[u8], buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_listxattr(XattrAt::Path(path, false), buf))
    }
    fn flistxattr(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.done(self.sys_listxattr(XattrAt::Fd(fd), buf))
    }
    fn removexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.done(self.sys_removexattr(XattrAt::Path(path, true), name))
    }
    fn lremovexattr(&self, path: &[u8], name: &[u8]) -> SysResult<()> {
        self.done(self.sys_removexattr(XattrAt::Path(path, false), name))
    }
    fn fremovexattr(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        self.done(self.sys_removexattr(XattrAt::Fd(fd), name))
    }
    fn fallocate(&self, fd: Fd, mode: i32, offset: i64, len: i64) -> SysResult<()> {
        self.done(self.sys_fallocate(fd, mode, offset, len))
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
        self.done(self.sys_copy_file_range(fd_in, off_in, fd_out, off_out, len, flags))
    }
    fn sendfile(
        &self,
        out_fd: Fd,
        in_fd: Fd,
        offset: Option<&mut i64>,
        count: usize,
    ) -> SysResult<usize> {
        self.done(self.sys_sendfile(out_fd, in_fd, offset, count))
    }
    fn splice(
        &self,
        fd_in: Fd,
        off_in: Option<&mut i64>,
        fd_out: Fd,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> SysResult<usize> {
        self.done(self.sys_splice(fd_in, off_in, fd_out, off_out, len, flags))
    }
    fn vmsplice(&self, fd: Fd, bufs: &mut [&mut [u8]], flags: u32) -> SysResult<usize> {
        self.done(self.sys_vmsplice(fd, bufs, flags))
    }
    fn tee(&self, fd_in: Fd, fd_out: Fd, len: usize, flags: u32) -> SysResult<usize> {
        self.done(self.sys_tee(fd_in, fd_out, len, flags))
    }
    fn chdir(&self, path: &[u8]) -> SysResult<()> {
        self.done(self.sys_chdir(path))
    }
    fn fchdir(&self, fd: Fd) -> SysResult<()> {
        self.done(self.sys_fchdir(fd))
    }
    fn getcwd(&self) -> SysResult<Vec<u8>> {
        self.done(self.sys_getcwd())
    }
    fn chroot(&self, path: &[u8]) -> SysResult<()> {
        self.done(self.sys_chroot(path))
    }
    fn umask(&self, mask: u32) -> u32 {
        self.done(self.sys_umask(mask))
    }
    fn mount(&self, source: &[u8], target: &[u8], fstype: &[u8], flags: u64) -> SysResult<()> {
        self.done(self.sys_mount(source, target, fstype, flags, None))
    }
    fn mount_with_data(
        &self,
        source: &[u8],
        target: &[u8],
        fstype: &[u8],
        flags: u64,
        data: Option<&[u8]>,
    ) -> SysResult<()> {
        self.done(self.sys_mount(source, target, fstype, flags, data))
    }
    fn umount2(&self, target: &[u8], flags: i32) -> SysResult<()> {
        self.done(self.sys_umount2(target, flags))
    }
    fn mount_setattr(&self, dirfd: Fd, path: &[u8], flags: i32, attr: &MountAttr) -> SysResult<()> {
        self.done(self.sys_mount_setattr(dirfd, path, flags, attr))
    }
    fn open_tree(&self, dirfd: Fd, path: &[u8], flags: i32) -> SysResult<Fd> {
        self.done(self.sys_open_tree(dirfd, path, flags))
    }
    fn move_mount(
        &self,
        from_dfd: Fd,
        from_path: &[u8],
        to_dfd: Fd,
        to_path: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        self.done(self.sys_move_mount(from_dfd, from_path, to_dfd, to_path, flags))
    }
    fn fsopen(&self, fstype: &[u8], flags: u32) -> SysResult<Fd> {
        self.done(self.sys_fsopen(fstype, flags))
    }
    fn fsconfig(
        &self,
        fd: Fd,
        cmd: u32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        aux: i32,
    ) -> SysResult<()> {
        self.done(self.sys_fsconfig(fd, cmd, key, value, aux))
    }
    fn fsmount(&self, fd: Fd, flags: u32, attr_flags: u64) -> SysResult<Fd> {
        self.done(self.sys_fsmount(fd, flags, attr_flags))
    }
    fn fspick(&self, dirfd: Fd, path: &[u8], flags: u32) -> SysResult<Fd> {
        self.done(self.sys_fspick(dirfd, path, flags))
    }
    fn pivot_root(&self, new_root: &[u8], put_old: &[u8]) -> SysResult<()> {
        self.done(self.sys_pivot_root(new_root, put_old))
    }
    fn unshare(&mut self, flags: i32) -> SysResult<()> {
        self.sys_unshare(flags)
    }
    fn setns_mount(&mut self, other: &Self) -> SysResult<()> {
        self.sys_setns_mount(other)
    }
    fn mountinfo(&self) -> SysResult<Vec<u8>> {
        self.sys_mountinfo()
    }
    fn fork(&self) -> SysResult<Self> {
        self.done(self.sys_fork())
    }
    fn syncfs(&self, fd: Fd) -> SysResult<()> {
        self.done(self.sys_syncfs(fd))
    }
    // The anonymous-object calls are inherent methods (process/anon.rs),
    // which end their own calls (`VfsInner::call_end`).
    fn pipe2(&self, flags: i32) -> SysResult<[Fd; 2]> {
        Process::pipe2(self, flags)
    }
    fn socketpair(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<[Fd; 2]> {
        Process::socketpair(self, domain, ty, protocol)
    }
    fn socket(&self, domain: i32, ty: i32, protocol: i32) -> SysResult<Fd> {
        Process::socket(self, domain, ty, protocol)
    }
    fn bind(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        Process::bind(self, fd, name)
    }
    fn listen(&self, fd: Fd, backlog: i32) -> SysResult<()> {
        Process::listen(self, fd, backlog)
    }
    fn connect(&self, fd: Fd, name: &[u8]) -> SysResult<()> {
        Process::connect(self, fd, name)
    }
    fn peer_cred(&self, fd: Fd) -> SysResult<Ucred> {
        Process::peer_cred(self, fd)
    }
    fn getpid(&self) -> SysResult<i32> {
        Ok(self.ucred().pid)
    }
    fn getsockopt(&self, fd: Fd, level: i32, name: i32, buf: &mut [u8]) -> SysResult<usize> {
        Process::getsockopt(self, fd, level, name, buf)
    }
    fn setsockopt(&self, fd: Fd, level: i32, name: i32, value: &[u8]) -> SysResult<()> {
        Process::setsockopt(self, fd, level, name, value)
    }
    fn disconnect(&self, fd: Fd) -> SysResult<()> {
        Process::disconnect(self, fd)
    }
    fn accept4(&self, fd: Fd, flags: i32) -> SysResult<Fd> {
        Process::accept4(self, fd, flags)
    }
    fn shutdown(&self, fd: Fd, how: i32) -> SysResult<()> {
        Process::shutdown(self, fd, how)
    }
    fn socket_name(&self, fd: Fd, peer: bool) -> SysResult<Vec<u8>> {
        if peer {
            Process::getpeername(self, fd)
        } else {
            Process::getsockname(self, fd)
        }
    }
    fn sendto(&self, fd: Fd, buf: &[u8], flags: i32, name: Option<&[u8]>) -> SysResult<usize> {
        Process::sendto(self, fd, buf, flags, name)
    }
    fn recvfrom(&self, fd: Fd, buf: &mut [u8], flags: i32) -> SysResult<(usize, Vec<u8>)> {
        Process::recvfrom(self, fd, buf, flags)
    }
    fn sendmsg(
        &self,
        fd: Fd,
        bufs: &[&[u8]],
        flags: i32,
        name: Option<&[u8]>,
        rights: &[Fd],
        creds: Option<Ucred>,
    ) -> SysResult<usize> {
        Process::sendmsg(self, fd, bufs, flags, name, rights, creds)
    }
    fn recvmsg(
        &self,
        fd: Fd,
        bufs: &mut [&mut [u8]],
        flags: i32,
        control_len: usize,
    ) -> SysResult<RecvMsg> {
        Process::recvmsg(self, fd, bufs, flags, control_len)
    }
    fn fionread(&self, fd: Fd) -> SysResult<i32> {
        Process::fionread(self, fd)
    }
    fn fs_ioc_getflags(&self, fd: Fd) -> SysResult<u32> {
        Process::fs_ioc_getflags(self, fd)
    }
    fn fs_ioc_setflags(&self, fd: Fd, flags: u32) -> SysResult<()> {
        Process::fs_ioc_setflags(self, fd, flags)
    }
    fn fs_ioc_fsgetxattr(&self, fd: Fd) -> SysResult<FsXattr> {
        Process::fs_ioc_fsgetxattr(self, fd)
    }
    fn fs_ioc_fssetxattr(&self, fd: Fd, attr: &FsXattr) -> SysResult<()> {
        Process::fs_ioc_fssetxattr(self, fd, attr)
    }
    fn file_getattr(&self, dirfd: Fd, path: &[u8], attr: &mut [u8], flags: i32) -> SysResult<()> {
        Process::file_getattr(self, dirfd, path, attr, flags)
    }
    fn file_setattr(&self, dirfd: Fd, path: &[u8], attr: &[u8], flags: i32) -> SysResult<()> {
        Process::file_setattr(self, dirfd, path, attr, flags)
    }
    fn eventfd(&self, initval: u32, flags: i32) -> SysResult<Fd> {
        Process::eventfd(self, initval, flags)
    }
    fn memfd_create(&self, name: &[u8], flags: u32) -> SysResult<Fd> {
        Process::memfd_create(self, name, flags)
    }
    fn poll(&self, fds: &mut [PollFd], timeout_ms: i32) -> SysResult<usize> {
        Process::poll(self, fds, timeout_ms)
    }
    fn posix_fadvise(&self, fd: Fd, offset: i64, len: i64, advice: i32) -> SysResult<()> {
        self.done(self.sys_fadvise(fd, offset, len, advice))
    }
    fn readahead(&self, fd: Fd, offset: i64, count: usize) -> SysResult<()> {
        self.done(self.sys_readahead(fd, offset, count))
    }
    fn preadv2(&self, fd: Fd, bufs: &mut [&mut [u8]], offset: i64, flags: i32) -> SysResult<usize> {
        self.done(self.sys_preadv2(fd, bufs, offset, flags))
    }
    fn pwritev2(&self, fd: Fd, bufs: &[&[u8]], offset: i64, flags: i32) -> SysResult<usize> {
        self.done(self.sys_pwritev2(fd, bufs, offset, flags))
    }
    fn inotify_init1(&self, flags: i32) -> SysResult<Fd> {
        Process::inotify_init1(self, flags)
    }
    fn inotify_add_watch(&self, fd: Fd, path: &[u8], mask: u32) -> SysResult<i32> {
        Process::inotify_add_watch(self, fd, path, mask)
    }
    fn inotify_rm_watch(&self, fd: Fd, wd: i32) -> SysResult<()> {
        Process::inotify_rm_watch(self, fd, wd)
    }
    fn epoll_create1(&self, flags: i32) -> SysResult<Fd> {
        Process::epoll_create1(self, flags)
    }
    fn epoll_ctl(&self, epfd: Fd, op: i32, fd: Fd, event: Option<EpollEvent>) -> SysResult<()> {
        Process::epoll_ctl(self, epfd, op, fd, event)
    }
    fn epoll_wait(&self, epfd: Fd, events: &mut [EpollEvent], timeout_ms: i32) -> SysResult<usize> {
        Process::epoll_wait(self, epfd, events, timeout_ms)
    }
    fn flock(&self, fd: Fd, operation: i32) -> SysResult<()> {
        self.done(self.sys_flock(fd, operation))
    }
    fn fcntl_lock(&self, fd: Fd, cmd: i32, lock: &mut Flock) -> SysResult<()> {
        self.done(self.sys_fcntl_lock(fd, cmd, lock))
    }
    fn fcntl(&self, fd: Fd, cmd: i32, arg: i64) -> SysResult<i64> {
        Process::fcntl(self, fd, cmd, arg)
    }
    fn fd_path(&self, fd: Fd) -> SysResult<Vec<u8>> {
        Process::fd_path(self, fd)
    }
    fn exit(mut self) {
        self.release_everything();
    }
}
