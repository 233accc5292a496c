//! Linux errno values, as returned by every call of the process API.
//!
//! The numbers are the x86-64/aarch64 Linux ABI values so that results can be
//! compared one-to-one with real syscalls (the differential tests do exactly
//! that). `Errno` is a plain `i32` newtype: creating one allocates nothing,
//! which keeps the negative-lookup path free of allocation.

use core::fmt;

/// A Linux error number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(pub i32);

/// The result type of every fallible vfscale call.
pub type SysResult<T> = Result<T, Errno>;

macro_rules! errnos {
    ($($name:ident = $val:expr, $text:expr;)*) => {
        impl Errno {
            $(#[doc = $text] pub const $name: Errno = Errno($val);)*

            /// The symbolic name (`"ENOENT"`), or `None` for an unknown number.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($val => Some(stringify!($name)),)* _ => None }
            }

            /// The strerror-style description.
            pub fn description(self) -> &'static str {
                match self.0 { $($val => $text,)* _ => "Unknown error" }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    EBADF = 9, "Bad file descriptor";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    EXDEV = 18, "Invalid cross-device link";
    ENODEV = 19, "No such device";
    ENOTDIR = 20, "Not a directory";
    EISDIR = 21, "Is a directory";
    EINVAL = 22, "Invalid argument";
    ENFILE = 23, "Too many open files in system";
    EMFILE = 24, "Too many open files";
    ENOTTY = 25, "Inappropriate ioctl for device";
    ETXTBSY = 26, "Text file busy";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ESPIPE = 29, "Illegal seek";
    EROFS = 30, "Read-only file system";
    EMLINK = 31, "Too many links";
    EPIPE = 32, "Broken pipe";
    EDOM = 33, "Numerical argument out of domain";
    ERANGE = 34, "Numerical result out of range";
    EDEADLK = 35, "Resource deadlock avoided";
    ENAMETOOLONG = 36, "File name too long";
    ENOSYS = 38, "Function not implemented";
    ENOTEMPTY = 39, "Directory not empty";
    ELOOP = 40, "Too many levels of symbolic links";
    ENODATA = 61, "No data available";
    EOVERFLOW = 75, "Value too large for defined data type";
    ENOTSOCK = 88, "Socket operation on non-socket";
    EMSGSIZE = 90, "Message too long";
    EPROTOTYPE = 91, "Protocol wrong type for socket";
    ENOPROTOOPT = 92, "Protocol not available";
    EPROTONOSUPPORT = 93, "Protocol not supported";
    ESOCKTNOSUPPORT = 94, "Socket type not supported";
    EOPNOTSUPP = 95, "Operation not supported";
    EAFNOSUPPORT = 97, "Address family not supported by protocol";
    EADDRINUSE = 98, "Address already in use";
    ECONNRESET = 104, "Connection reset by peer";
    EISCONN = 106, "Transport endpoint is already connected";
    ENOTCONN = 107, "Transport endpoint is not connected";
    ETOOMANYREFS = 109, "Too many references: cannot splice";
    ECONNREFUSED = 111, "Connection refused";
    ESTALE = 116, "Stale file handle";
}

impl Errno {
    /// `EWOULDBLOCK` is `EAGAIN` on Linux.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    /// `ENOTSUP` is `EOPNOTSUPP` on Linux.
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?})", self.description(), self)
    }
}

impl std::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_the_host_abi() {
        assert_eq!(Errno::ENOENT.0, libc::ENOENT);
        assert_eq!(Errno::ENAMETOOLONG.0, libc::ENAMETOOLONG);
        assert_eq!(Errno::ELOOP.0, libc::ELOOP);
        assert_eq!(Errno::ENOTEMPTY.0, libc::ENOTEMPTY);
        assert_eq!(Errno::ESTALE.0, libc::ESTALE);
        assert_eq!(Errno::EOVERFLOW.0, libc::EOVERFLOW);
        assert_eq!(Errno::EDEADLK.0, libc::EDEADLK);
        assert_eq!(Errno::EDOM.0, libc::EDOM);
        assert_eq!(format!("{:?}", Errno::EXDEV), "EXDEV");
        assert_eq!(format!("{:?}", Errno(4095)), "Errno(4095)");
    }
}
