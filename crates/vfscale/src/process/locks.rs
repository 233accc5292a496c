//! flock(2) and fcntl(2)'s lock commands (`filelock/` holds the locks and
//! says what each kind's owner is), and the close-time hook that drops a
//! process's POSIX locks.

use super::Process;
use crate::abi::*;
use crate::file::{FdTable, FileRef, FMODE_READ, FMODE_WRITE};
use crate::filelock::{range::LockKind, range_of, report, Owner};

impl Process {
    /// flock(2), in Linux's order of checks: the operation (EINVAL; the
    /// obsolete LOCK_MAND is accepted and ignored), then the descriptor
    /// (EBADF, O_PATH included).
    pub(crate) fn sys_flock(&self, fd: Fd, operation: i32) -> SysResult<()> {
        if operation & LOCK_MAND != 0 {
            return Ok(());
        }
        let kind = match operation & !LOCK_NB {
            LOCK_SH => Some(LockKind::Read),
            LOCK_EX => Some(LockKind::Write),
            LOCK_UN => None,
            _ => return Err(Errno::EINVAL),
        };
        let f = self.fd_file_nopath(fd)?;
        let wait = operation & LOCK_NB == 0;
        let r = self.vfs.file_locks.flock(f.file(), kind, wait);
        self.vfs.fput(f);
        r
    }

    /// fcntl(2)'s lock commands. The descriptor is checked first (EBADF,
    /// O_PATH included), then the command (EINVAL), then as Linux's
    /// `fcntl_getlk` / `fcntl_setlk` do.
    pub(crate) fn sys_fcntl_lock(&self, fd: Fd, cmd: i32, lock: &mut Flock) -> SysResult<()> {
        let f = self.fd_file_nopath(fd)?;
        let r = self.lock_range(fd, &f, cmd, lock);
        self.vfs.fput(f);
        r
    }

    fn lock_range(&self, fd: Fd, f: &FileRef, cmd: i32, lock: &mut Flock) -> SysResult<()> {
        let (ofd, set, wait) = match cmd {
            F_GETLK => (false, false, false),
            F_SETLK => (false, true, false),
            F_SETLKW => (false, true, true),
            F_OFD_GETLK => (true, false, false),
            F_OFD_SETLK => (true, true, false),
            F_OFD_SETLKW => (true, true, true),
            _ => return Err(Errno::EINVAL),
        };
        let file = f.file();
        let owner = if ofd {
            Owner::of_file(file)
        } else {
            Owner::Posix(self.files.lock_owner())
        };
        // F_GETLK of anything but a lock is EINVAL before the range is
        // looked at; F_OFD_GETLK takes F_UNLCK too (the caller's own locks,
        // Linux 6.6+), and leaves a bad type to the conversion.
        if !set && !ofd && lock.l_type != F_RDLCK && lock.l_type != F_WRLCK {
            return Err(Errno::EINVAL);
        }
        let pos = *file.pos.lock();
        let size = file.inode().attr().size;
        let req = range_of(lock, owner, pos, size)?;
        if set {
            let needs = match req.kind {
                Some(LockKind::Read) => FMODE_READ,
                Some(LockKind::Write) => FMODE_WRITE,
                None => 0,
            };
            if file.fmode & needs != needs {
                return Err(Errno::EBADF);
            }
        }
        if ofd && lock.l_pid != 0 {
            return Err(Errno::EINVAL);
        }
        let locks = &self.vfs.file_locks;
        if !set {
            report(lock, locks.test_range(file.inode, req));
            return Ok(());
        }
        locks.set_range(file.inode, req, wait)?;
        // A sibling thread may have closed `fd` while we waited: its close
        // dropped our locks before this one was granted, and nothing would
        // drop it now. Undo it, as Linux's fcntl_setlk does.
        if !ofd && req.kind.is_some() && !self.fd_is(fd, file) {
            let undo = crate::filelock::RangeRequest { kind: None, ..req };
            locks.set_range(file.inode, undo, false)?;
            return Err(Errno::EBADF);
        }
        Ok(())
    }

    /// Whether `fd` still refers to `file`.
    fn fd_is(&self, fd: Fd, file: &crate::file::OpenFile) -> bool {
        match self.fd_file(fd) {
            Ok(now) => {
                let same = core::ptr::eq(now.file(), file);
                self.vfs.fput(now);
                same
            }
            Err(_) => false,
        }
    }

    /// Puts a reference that this process's descriptor table held, after
    /// dropping the table's POSIX locks on the file's inode (every close of
    /// a descriptor does, as on Linux).
    pub(crate) fn put_closed(&self, f: FileRef) {
        self.forget_posix_locks(&f);
        self.vfs.fput(f);
    }

    /// The lock half of `put_closed`, for callers that put in their own way.
    #[inline]
    pub(crate) fn forget_posix_locks(&self, f: &FileRef) {
        self.forget_posix_locks_of(&self.files, f);
    }

    /// `forget_posix_locks` for a descriptor of table `files` (the locks'
    /// owner), which may be one this process no longer uses.
    pub(crate) fn forget_posix_locks_of(&self, files: &FdTable, f: &FileRef) {
        let locks = &self.vfs.file_locks;
        if locks.any() {
            locks.on_close(f.file().inode, files.lock_owner());
        }
    }
}
