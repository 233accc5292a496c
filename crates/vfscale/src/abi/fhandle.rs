//! `struct file_handle` of name_to_handle_at(2) / open_by_handle_at(2).

/// The largest `handle_bytes` the calls accept (Linux's MAX_HANDLE_SZ).
pub const MAX_HANDLE_SZ: u32 = 128;
/// name_to_handle_at: the handle need only identify the object, not open it
/// (Linux 6.5+). vfscale's handles always do both.
pub const AT_HANDLE_FID: i32 = 0x200;
/// name_to_handle_at: return the 64-bit unique mount id (Linux 6.12+);
/// vfscale's mount ids are unique 64-bit values already.
pub const AT_HANDLE_MNT_ID_UNIQUE: i32 = 0x001;
/// name_to_handle_at: a handle that can be reopened connected to its path
/// (Linux 6.13+); EINVAL with AT_HANDLE_FID or AT_EMPTY_PATH.
pub const AT_HANDLE_CONNECTABLE: i32 = 0x002;

/// A file handle: `handle_bytes` is the caller's buffer size on input to
/// name_to_handle_at and the encoded size on output (also when the buffer
/// was too small: EOVERFLOW); `f_handle` holds the opaque bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileHandle {
    pub handle_bytes: u32,
    pub handle_type: i32,
    pub f_handle: Vec<u8>,
}

impl FileHandle {
    /// An empty handle with room for `bytes` bytes (the input of
    /// name_to_handle_at).
    pub fn with_capacity(bytes: u32) -> FileHandle {
        FileHandle {
            handle_bytes: bytes,
            handle_type: 0,
            f_handle: Vec::new(),
        }
    }
}
