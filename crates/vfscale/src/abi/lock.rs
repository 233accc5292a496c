//! File-lock constants and `struct flock`, as Linux's x86-64 ABI has them.

/// flock(2): shared lock.
pub const LOCK_SH: i32 = 1;
/// flock(2): exclusive lock.
pub const LOCK_EX: i32 = 2;
/// flock(2): with LOCK_SH or LOCK_EX, fail with EWOULDBLOCK instead of
/// waiting.
pub const LOCK_NB: i32 = 4;
/// flock(2): unlock.
pub const LOCK_UN: i32 = 8;
/// flock(2): the obsolete mandatory-lock flag, which Linux accepts and
/// ignores (the call succeeds and does nothing).
pub const LOCK_MAND: i32 = 32;

/// fcntl(2) commands for POSIX record locks (owned by the process).
pub const F_GETLK: i32 = 5;
pub const F_SETLK: i32 = 6;
pub const F_SETLKW: i32 = 7;
/// fcntl(2) commands for open-file-description locks.
pub const F_OFD_GETLK: i32 = 36;
pub const F_OFD_SETLK: i32 = 37;
pub const F_OFD_SETLKW: i32 = 38;

/// `l_type` values.
pub const F_RDLCK: i16 = 0;
pub const F_WRLCK: i16 = 1;
pub const F_UNLCK: i16 = 2;

/// `struct flock` (64-bit offsets).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flock {
    pub l_type: i16,
    /// SEEK_SET, SEEK_CUR or SEEK_END: what `l_start` is relative to.
    pub l_whence: i16,
    pub l_start: i64,
    /// 0: to the end of the file, however far it grows; negative: the
    /// bytes before `l_start`.
    pub l_len: i64,
    /// F_GETLK's answer: the blocking lock's owner (vfscale reports the
    /// owning process's lock-owner id; -1 for an OFD lock). Must be 0 in
    /// the F_OFD_* commands.
    pub l_pid: i32,
}

const _: () = assert!(core::mem::size_of::<Flock>() == 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_constants_match_the_host_abi() {
        assert_eq!(LOCK_SH, libc::LOCK_SH);
        assert_eq!(LOCK_EX, libc::LOCK_EX);
        assert_eq!(LOCK_NB, libc::LOCK_NB);
        assert_eq!(LOCK_UN, libc::LOCK_UN);
        assert_eq!(F_GETLK, libc::F_GETLK);
        assert_eq!(F_SETLK, libc::F_SETLK);
        assert_eq!(F_SETLKW, libc::F_SETLKW);
        assert_eq!(F_OFD_GETLK, libc::F_OFD_GETLK);
        assert_eq!(F_OFD_SETLK, libc::F_OFD_SETLK);
        assert_eq!(F_OFD_SETLKW, libc::F_OFD_SETLKW);
        assert_eq!(F_RDLCK, libc::F_RDLCK as i16);
        assert_eq!(F_WRLCK, libc::F_WRLCK as i16);
        assert_eq!(F_UNLCK, libc::F_UNLCK as i16);
        assert_eq!(
            core::mem::size_of::<Flock>(),
            core::mem::size_of::<libc::flock>()
        );
        assert_eq!(
            core::mem::offset_of!(Flock, l_pid),
            core::mem::offset_of!(libc::flock, l_pid)
        );
    }
}
