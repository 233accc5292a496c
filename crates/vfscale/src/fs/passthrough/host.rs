//! Contained host access for the passthrough backend: every host call is
//! made relative to the host root's directory fd with a relative path that
//! vfscale built from single, validated components.
//!
//! Security boundary (tests/passthrough_containment.rs):
//! - Paths: built only by `join` from components that are never empty,
//!   ".", ".." nor hold '/' or NUL (vfscale's walk hands the backend single
//!   components and resolves "." and ".." in its own namespace).
//! - Symlinks: never followed by the host. With openat2 the whole path is
//!   resolved with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS (a symlink anywhere, even swapped in by a racing
//!   thread between our check and our use, is ELOOP; ".." escapes are
//!   refused by the kernel); without openat2 (ENOSYS, or forced by
//!   `force_component_walk` for the tests) each component is opened with
//!   O_NOFOLLOW from the previous directory's fd, intermediate ones with
//!   O_DIRECTORY too. Symlinks are read as text (readlinkat) and resolved
//!   by vfscale's walk inside vfscale's namespace, so an absolute target
//!   names vfscale's root, never the host's.
//! - Cached directory fds (`dirs.rs`): lookups and revalidations of a
//!   name use `stat_at`/`readlink_at` on an O_PATH fd of its directory
//!   with a single component and AT_SYMLINK_NOFOLLOW, so nothing is
//!   followed and nothing climbs: the answer is about an entry *of that
//!   directory*. Such an fd was opened beneath the root (`open_beneath`)
//!   and is used only while a resolution from the root confirmed, within
//!   the TTL, that the directory's path still leads to it (dirs.rs says
//!   how); a host process that moves a directory out of the tree exposes
//!   its contents to vfscale lookups for at most that long. Data opens and
//!   namespace changes still resolve from the root every time.
//! - Extended attributes (`xattr_at`): getxattrat and its kin on a single
//!   component of a directory fd opened beneath the root, with
//!   AT_SYMLINK_NOFOLLOW; the fallback opens that component O_PATH |
//!   O_NOFOLLOW and uses /proc/self/fd/N, a magic link that resolves to
//!   exactly that inode (a symlink's own), so neither path follows or
//!   climbs.
//! - File handles (`handle_of`, `open_handle`, `path_beneath`): a host
//!   handle is opened only from vfscale's own handles, which carry a keyed
//!   tag (fs/export.rs), so only objects that were beneath the root when
//!   the handle was made; what it opens (O_PATH) is used for its identity
//!   and to learn where the host says it is now, never to resolve a name
//!   from. That place counts only if it is beneath the root, and vfscale
//!   then walks to it from the root through the containment above and
//!   checks that the walk found the same object.
//! - Every host call that resolves a name or reads attributes is counted
//!   in `HostStats` (tests count what revalidation costs).
//!
//! Identity: attributes are read with statx, asking for the birth time
//! when the root's filesystem keeps one locally (`keeps_births`), so a
//! host file is known by (device, number, birth): a number the host
//! recycled for a new file (ext4 reuses a freed one at once) comes with a
//! later birth. Not asked elsewhere: over FUSE a field beyond the basic
//! ones forces a round trip past the attribute cache on every call. The
//! choice is made once, by the root's filesystem (a host mount beneath
//! the root gets the root's mask; statx answers what it keeps).

use crate::abi::{
    Errno, OpenHow, SysResult, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS,
};
use crate::fs::XattrCall;
use crate::sync::counter::ShardedCounter;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// An instance's host statistics: the host calls it made (name
/// resolutions and attribute reads: openat, openat2, fstatat, fstat,
/// readlinkat; directory reads, getdents64, apart), the directory fds it
/// holds and the bytes of its cached listings (listing.rs).
#[derive(Default)]
pub struct HostStats {
    calls: ShardedCounter,
    dir_reads: ShardedCounter,
    copies: ShardedCounter,
    /// Relaxed everywhere: a bound, not a protocol (the fds themselves are
    /// guarded by the backend's shard mutexes).
    dir_fds: std::sync::atomic::AtomicUsize,
    /// Regular files held open for vfscale's open descriptions (the
    /// backend's `open`/`release`), and directories vfscale removed, held
    /// until their inodes go. Relaxed everywhere: a count, as
    /// `dir_fds`.
    data_fds: std::sync::atomic::AtomicUsize,
    /// Relaxed everywhere: a bound, as `dir_fds` (each listing's bytes
    /// are added once when kept and subtracted once when it is dropped).
    listing_bytes: std::sync::atomic::AtomicUsize,
}

impl HostStats {
    /// Host calls so far (exact once the calls being made returned).
    pub fn calls(&self) -> u64 {
        self.calls.sum() as u64
    }

    /// getdents64 calls on host directories so far.
    pub fn dir_reads(&self) -> u64 {
        self.dir_reads.sum() as u64
    }

    /// copy_file_range calls the host served so far (copies vfscale left
    /// to the host rather than reading and writing them).
    pub fn copies(&self) -> u64 {
        self.copies.sum() as u64
    }

    pub(crate) fn count_copy(&self) {
        self.copies.inc();
    }

    /// Bytes of the cached listings held now.
    pub fn listing_bytes(&self) -> usize {
        self.listing_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Adds `bytes` to the listings' total if it stays within `cap`.
    pub(crate) fn listing_bytes_reserve(&self, bytes: usize, cap: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.listing_bytes
            .fetch_update(Relaxed, Relaxed, |held| {
                held.checked_add(bytes).filter(|&total| total <= cap)
            })
            .is_ok()
    }

    pub(crate) fn listing_bytes_release(&self, bytes: usize) {
        self.listing_bytes
            .fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Directory fds held open now.
    pub fn dir_fds_held(&self) -> usize {
        self.dir_fds.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn dir_fds_add(&self, delta: isize) {
        add_signed(&self.dir_fds, delta);
    }

    /// Regular files held open for open descriptions now.
    pub fn data_fds_held(&self) -> usize {
        self.data_fds.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn data_fds_add(&self, delta: isize) {
        add_signed(&self.data_fds, delta);
    }

    fn count(&self) {
        self.calls.inc();
    }
}

/// Relaxed: the counters it serves are bounds and counts, not protocols.
fn add_signed(counter: &std::sync::atomic::AtomicUsize, delta: isize) {
    if delta >= 0 {
        counter.fetch_add(delta as usize, std::sync::atomic::Ordering::Relaxed);
    } else {
        counter.fetch_sub(delta.unsigned_abs(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// `name` NUL-terminated in a stack buffer (no allocation on the lookup
/// path); a component must be valid and at most NAME_MAX bytes.
struct CName {
    buf: [u8; crate::abi::NAME_MAX + 1],
}

impl CName {
    fn new(name: &[u8]) -> SysResult<CName> {
        if !valid_component(name) {
            return Err(Errno::EINVAL);
        }
        if name.len() > crate::abi::NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let mut buf = [0u8; crate::abi::NAME_MAX + 1];
        buf[..name.len()].copy_from_slice(name);
        Ok(CName { buf })
    }

    /// The empty name (AT_EMPTY_PATH's).
    fn empty() -> CName {
        CName {
            buf: [0u8; crate::abi::NAME_MAX + 1],
        }
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }
}

fn last_errno() -> Errno {
    Errno(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

/// A component is safe to hand to the host. One pass over the bytes (two
/// `contains` were two memchr calls, ~30 instructions each for a short
/// name; every miss checks its name twice).
pub(crate) fn valid_component(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.iter().any(|&b| b == b'/' || b == 0)
}

/// `dir/name` for a relative path `dir` ("" is the root).
pub(crate) fn join(dir: &[u8], name: &[u8]) -> SysResult<Box<[u8]>> {
    if !valid_component(name) {
        return Err(Errno::EINVAL);
    }
    // Exactly the length: the conversion to a box then reallocates nothing.
    let slash = usize::from(!dir.is_empty());
    let mut p = Vec::with_capacity(dir.len() + slash + name.len());
    if !dir.is_empty() {
        p.extend_from_slice(dir);
        p.push(b'/');
    }
    p.extend_from_slice(name);
    Ok(p.into())
}

/// A host object's attributes and its birth time.
pub(crate) struct HostStat {
    pub(crate) st: libc::stat,
    /// statx's btime in ns since the epoch; 0 when the host did not say
    /// (not asked, not kept, or before 1970).
    pub(crate) birth: u64,
}

impl core::ops::Deref for HostStat {
    type Target = libc::stat;
    fn deref(&self) -> &libc::stat {
        &self.st
    }
}

impl HostStat {
    fn from_statx(x: &libc::statx) -> HostStat {
        // SAFETY: zeroed stat is a valid value (plain integers); every
        // field the backend reads is set below.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        st.st_dev = libc::makedev(x.stx_dev_major, x.stx_dev_minor);
        st.st_ino = x.stx_ino;
        st.st_mode = u32::from(x.stx_mode) as _;
        st.st_nlink = x.stx_nlink as _;
        st.st_uid = x.stx_uid;
        st.st_gid = x.stx_gid;
        st.st_rdev = libc::makedev(x.stx_rdev_major, x.stx_rdev_minor);
        st.st_size = x.stx_size as _;
        st.st_blksize = x.stx_blksize as _;
        st.st_blocks = x.stx_blocks as _;
        st.st_atime = x.stx_atime.tv_sec as _;
        st.st_atime_nsec = x.stx_atime.tv_nsec as _;
        st.st_mtime = x.stx_mtime.tv_sec as _;
        st.st_mtime_nsec = x.stx_mtime.tv_nsec as _;
        st.st_ctime = x.stx_ctime.tv_sec as _;
        st.st_ctime_nsec = x.stx_ctime.tv_nsec as _;
        let birth = if x.stx_mask & libc::STATX_BTIME != 0 {
            u64::try_from(x.stx_btime.tv_sec)
                .ok()
                .and_then(|s| s.checked_mul(1_000_000_000))
                .and_then(|ns| ns.checked_add(u64::from(x.stx_btime.tv_nsec)))
                .unwrap_or(0)
        } else {
            0
        };
        HostStat { st, birth }
    }

    /// Whether this object may be the one born at `birth`: the same
    /// birth, or either one unknown (the caller compares the numbers).
    pub(crate) fn born_as(&self, birth: u64) -> bool {
        birth == 0 || self.birth == 0 || birth == self.birth
    }
}

/// Filesystems that keep a birth time in the inode and answer it from
/// memory (ext4, XFS, btrfs, tmpfs, F2FS, bcachefs: statfs magic).
fn keeps_births(fs_magic: u32) -> bool {
    [
        0x0000_EF53,
        0x5846_5342,
        0x9123_683E,
        0x0102_1994,
        0xF2F5_2010,
        0xCA45_1A4E,
    ]
    .contains(&fs_magic)
}

/// The host directory a passthrough instance mirrors.
pub struct HostRoot {
    root: OwnedFd,
    /// statx is available and used (else fstatat, without births).
    statx: std::sync::atomic::AtomicBool,
    /// statx's mask: the basic fields, and the birth time where the root's
    /// filesystem keeps one (`keeps_births`).
    statx_mask: u32,
    /// openat2 is available and used (else component walks).
    openat2: std::sync::atomic::AtomicBool,
    /// setxattrat and its kin are available and used (else /proc/self/fd).
    xattrat: std::sync::atomic::AtomicBool,
    calls: Arc<HostStats>,
    /// The root opened for reading: open_by_handle_at's mount fd (an
    /// O_PATH fd is EBADF there). Opened at the first use.
    mount_fd: std::sync::OnceLock<OwnedFd>,
    /// The host mount id of the root (name_to_handle_at's), read once.
    root_mount: std::sync::OnceLock<i32>,
}

impl HostRoot {
    /// Opens `dir` (a host path) as the root.
    pub fn open(dir: &std::path::Path) -> SysResult<HostRoot> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)?;
        // SAFETY: `c` is NUL-terminated; the fd returned is ours.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: a fresh fd nobody else owns.
        let root = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed statfs is a valid output buffer.
        let mut fs: libc::statfs = unsafe { core::mem::zeroed() };
        // SAFETY: fstatfs writes only `fs`; `root` is our open fd.
        let births = unsafe { libc::fstatfs(root.as_raw_fd(), &mut fs) } == 0
            && keeps_births(fs.f_type as u32);
        Ok(HostRoot {
            root,
            statx: std::sync::atomic::AtomicBool::new(true),
            statx_mask: libc::STATX_BASIC_STATS | if births { libc::STATX_BTIME } else { 0 },
            openat2: std::sync::atomic::AtomicBool::new(true),
            xattrat: std::sync::atomic::AtomicBool::new(true),
            calls: Arc::default(),
            mount_fd: std::sync::OnceLock::new(),
            root_mount: std::sync::OnceLock::new(),
        })
    }

    /// The instance's host statistics.
    pub fn stats(&self) -> Arc<HostStats> {
        self.calls.clone()
    }

    /// The root directory's fd.
    pub(crate) fn root_fd(&self) -> RawFd {
        self.root.as_raw_fd()
    }

    /// lstat of the single component `name` in the directory open as
    /// `dir` (the root's fd or a cached directory fd): nothing followed.
    pub(crate) fn stat_at(&self, dir: RawFd, name: &[u8]) -> SysResult<HostStat> {
        let c = CName::new(name)?;
        self.stat_raw(dir, &c, libc::AT_SYMLINK_NOFOLLOW)
    }

    /// fstat of an fd of ours (counted).
    pub(crate) fn fstat(&self, fd: RawFd) -> SysResult<HostStat> {
        self.stat_raw(fd, &CName::empty(), libc::AT_EMPTY_PATH)
    }

    /// statx of `name` at `dir` with `flags` (counted), or fstatat where
    /// statx is refused (ENOSYS: a kernel before 4.11; EPERM: a seccomp
    /// filter that does not know it).
    fn stat_raw(&self, dir: RawFd, name: &CName, flags: i32) -> SysResult<HostStat> {
        use std::sync::atomic::Ordering::Relaxed;
        self.calls.count();
        // Relaxed: a hint; a thread that reads a stale `true` asks statx
        // again and falls back the same way.
        if self.statx.load(Relaxed) {
            // SAFETY: zeroed statx is a valid output buffer.
            let mut x: libc::statx = unsafe { core::mem::zeroed() };
            // SAFETY: statx writes only `x`; `name` is NUL-terminated.
            let r = unsafe { libc::statx(dir, name.as_ptr(), flags, self.statx_mask, &mut x) };
            if r == 0 {
                return Ok(HostStat::from_statx(&x));
            }
            match last_errno() {
                Errno::ENOSYS | Errno::EPERM => self.statx.store(false, Relaxed),
                e => return Err(e),
            }
        }
        // SAFETY: zeroed stat is a valid output buffer.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: fstatat writes only `st`; `name` is NUL-terminated.
        if unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, flags) } < 0 {
            return Err(last_errno());
        }
        Ok(HostStat { st, birth: 0 })
    }

    /// The text of the symlink `name` in the directory open as `dir`.
    pub(crate) fn readlink_at(&self, dir: RawFd, name: &[u8]) -> SysResult<Vec<u8>> {
        let c = CName::new(name)?;
        self.calls.count();
        let mut buf = vec![0u8; crate::abi::PATH_MAX];
        // SAFETY: readlinkat writes at most `buf.len()` bytes into `buf`;
        // it never follows the final component.
        let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(last_errno());
        }
        buf.truncate(n as usize);
        Ok(buf)
    }

    /// Uses O_NOFOLLOW component walks instead of openat2, and extended
    /// attributes through /proc/self/fd instead of setxattrat and its kin
    /// (the fallbacks for kernels without them; tests run both).
    pub fn force_component_walk(&self) {
        // Relaxed: mode switches; each call reads one once and both modes
        // are safe.
        self.openat2
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.xattrat
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// `call` on the entry `name` of the directory open as `dir` (empty:
    /// the directory itself, whose fd must then not be O_PATH: the empty
    /// path of the *xattrat calls takes it as fgetxattr does), a final
    /// symlink never followed:
    /// getxattrat and its kin (Linux 6.13+) with AT_SYMLINK_NOFOLLOW; else
    /// the classic calls on /proc/self/fd/N of an O_PATH | O_NOFOLLOW fd of
    /// the entry, a magic link whose resolution ends at exactly the inode
    /// opened (a symlink's own, for a symlink), nothing further followed.
    pub(crate) fn xattr_at(
        &self,
        dir: RawFd,
        name: &[u8],
        mut call: XattrCall<'_>,
    ) -> SysResult<usize> {
        self.calls.count();
        // Relaxed: see `force_component_walk`.
        if self.xattrat.load(std::sync::atomic::Ordering::Relaxed) {
            match xattrat(dir, name, &mut call) {
                Err(Errno::ENOSYS) => self
                    .xattrat
                    .store(false, std::sync::atomic::Ordering::Relaxed),
                r => return r,
            }
        }
        let entry = if name.is_empty() {
            None
        } else {
            CName::new(name)?;
            Some(openat_raw(dir, name, libc::O_PATH | libc::O_NOFOLLOW)?)
        };
        let fd = entry.as_ref().map_or(dir, |e| e.as_raw_fd());
        let proc = proc_fd(fd);
        let p = proc.as_ptr();
        let cname = |n: &[u8]| std::ffi::CString::new(n).map_err(|_| Errno::EINVAL);
        // SAFETY (each call): NUL-terminated path and name; buffers passed
        // with their lengths, written only within them.
        let r = match call {
            XattrCall::Get(n, buf) => unsafe {
                libc::getxattr(p, cname(n)?.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
            },
            XattrCall::Set(n, v, flags) => unsafe {
                libc::setxattr(p, cname(n)?.as_ptr(), v.as_ptr().cast(), v.len(), flags) as isize
            },
            XattrCall::List(buf) => unsafe {
                libc::listxattr(p, buf.as_mut_ptr().cast(), buf.len())
            },
            XattrCall::Remove(n) => unsafe { libc::removexattr(p, cname(n)?.as_ptr()) as isize },
        };
        if r < 0 {
            return Err(last_errno());
        }
        Ok(r as usize)
    }

    /// Opens `rel` (relative, from `join`; "" is the root) beneath the root
    /// with `flags` (O_NOFOLLOW and O_CLOEXEC are added).
    pub fn open_beneath(&self, rel: &[u8], flags: i32) -> SysResult<OwnedFd> {
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // Relaxed: see `force_component_walk`.
        if self.openat2.load(std::sync::atomic::Ordering::Relaxed) {
            match self.openat2(rel, flags) {
                Err(Errno::ENOSYS) => self
                    .openat2
                    .store(false, std::sync::atomic::Ordering::Relaxed),
                r => return r,
            }
        }
        self.component_walk(rel, flags)
    }

    fn openat2(&self, rel: &[u8], flags: i32) -> SysResult<OwnedFd> {
        let path = if rel.is_empty() { &b"."[..] } else { rel };
        let c = std::ffi::CString::new(path).map_err(|_| Errno::EINVAL)?;
        self.calls.count();
        let how = OpenHow {
            flags: flags as u32 as u64,
            mode: 0,
            resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        // SAFETY: openat2 reads `how` (size given) and the NUL-terminated
        // path; the fd returned is ours.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                c.as_ptr(),
                &how as *const OpenHow,
                core::mem::size_of::<OpenHow>(),
            )
        };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: a fresh fd nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }

    fn component_walk(&self, rel: &[u8], flags: i32) -> SysResult<OwnedFd> {
        if rel.is_empty() {
            self.calls.count();
            return openat_raw(self.root.as_raw_fd(), b".", flags);
        }
        let comps: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
        if !comps.iter().all(|c| valid_component(c)) {
            return Err(Errno::EINVAL);
        }
        let mut cur: Option<OwnedFd> = None;
        for (i, comp) in comps.iter().enumerate() {
            let at = cur
                .as_ref()
                .map_or(self.root.as_raw_fd(), |f| f.as_raw_fd());
            let f = if i + 1 == comps.len() {
                flags
            } else {
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
            };
            self.calls.count();
            cur = Some(openat_raw(at, comp, f).map_err(|e| {
                // A symlink in an inner component: refused, as openat2's
                // RESOLVE_NO_SYMLINKS does.
                if e == Errno::ENOTDIR && is_symlink_at(at, comp) {
                    Errno::ELOOP
                } else {
                    e
                }
            })?);
        }
        cur.ok_or(Errno::EINVAL)
    }

    /// lstat of `rel` beneath the root. A name directly in the root is one
    /// `fstatat(root, name, AT_SYMLINK_NOFOLLOW)`: a single component
    /// from the root fd, nothing followed, so as contained as the openat2
    /// path and a third of its syscalls (open, fstat, close), which
    /// dominate a cold lookup on a machine with slow syscalls.
    pub(crate) fn lstat(&self, rel: &[u8]) -> SysResult<HostStat> {
        if rel.is_empty() {
            return self.fstat(self.root.as_raw_fd());
        }
        if valid_component(rel) {
            return self.stat_at(self.root.as_raw_fd(), rel);
        }
        let fd = self.open_beneath(rel, libc::O_PATH)?;
        self.fstat(fd.as_raw_fd())
    }

    /// The text of the symlink `rel`.
    pub fn readlink(&self, rel: &[u8]) -> SysResult<Vec<u8>> {
        let fd = self.open_beneath(rel, libc::O_PATH)?;
        self.calls.count();
        let mut buf = vec![0u8; crate::abi::PATH_MAX];
        // SAFETY: readlinkat with an empty path reads the O_PATH symlink
        // fd's own text into `buf`, at most its length.
        let n = unsafe {
            libc::readlinkat(
                fd.as_raw_fd(),
                c"".as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(last_errno());
        }
        buf.truncate(n as usize);
        Ok(buf)
    }
}

/// A host file handle (name_to_handle_at's type and bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostHandle {
    pub kind: i32,
    pub bytes: Vec<u8>,
}

/// `struct file_handle` with room for the largest handle.
#[repr(C)]
struct RawHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; crate::abi::MAX_HANDLE_SZ as usize],
}

// The kernel reads the 8-byte header, then `handle_bytes` bytes after it.
const _: () = assert!(core::mem::offset_of!(RawHandle, f_handle) == 8);

/// The host handle and mount id of the object open as `fd`.
fn name_to_handle(fd: RawFd) -> SysResult<(HostHandle, i32)> {
    let mut raw = RawHandle {
        handle_bytes: crate::abi::MAX_HANDLE_SZ,
        handle_type: 0,
        f_handle: [0; crate::abi::MAX_HANDLE_SZ as usize],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: the kernel reads `raw`'s header and writes at most
    // `handle_bytes` bytes into `f_handle`, and `mount_id`; the empty path
    // with AT_EMPTY_PATH names `fd` itself.
    let r = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            fd,
            c"".as_ptr(),
            &mut raw as *mut RawHandle,
            &mut mount_id as *mut libc::c_int,
            libc::AT_EMPTY_PATH,
        )
    };
    if r < 0 {
        return Err(last_errno());
    }
    let len = (raw.handle_bytes as usize).min(raw.f_handle.len());
    Ok((
        HostHandle {
            kind: raw.handle_type,
            bytes: raw.f_handle[..len].to_vec(),
        },
        mount_id,
    ))
}

impl HostRoot {
    /// The host handle of the object open as `fd` (any fd of ours, O_PATH
    /// ones included). EOPNOTSUPP if the host filesystem has none, or the
    /// object is on another host mount than the root (its handle could not
    /// be opened through the root's mount).
    pub(crate) fn handle_of(&self, fd: RawFd) -> SysResult<HostHandle> {
        self.calls.count();
        let (handle, mount) = name_to_handle(fd)?;
        let root_mount = match self.root_mount.get() {
            Some(&m) => m,
            None => *self
                .root_mount
                .get_or_init(|| name_to_handle(self.root.as_raw_fd()).map_or(-1, |(_, m)| m)),
        };
        if mount != root_mount {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(handle)
    }

    /// Opens (O_PATH) the object the host handle `h` names, on the root's
    /// mount: ESTALE if it is gone; EPERM without CAP_DAC_READ_SEARCH.
    /// The fd may be anywhere on that mount (see the module comment for
    /// what it may be used for).
    pub(crate) fn open_handle(&self, h: &HostHandle) -> SysResult<OwnedFd> {
        if h.bytes.len() > crate::abi::MAX_HANDLE_SZ as usize {
            return Err(Errno::ESTALE);
        }
        let mount_fd = match self.mount_fd.get() {
            Some(fd) => fd,
            None => {
                let fd = openat_raw(
                    self.root.as_raw_fd(),
                    b".",
                    libc::O_RDONLY | libc::O_DIRECTORY,
                )?;
                // A racing first use may have set one: the other is closed.
                self.mount_fd.get_or_init(|| fd)
            }
        };
        let mut raw = RawHandle {
            handle_bytes: h.bytes.len() as u32,
            handle_type: h.kind,
            f_handle: [0; crate::abi::MAX_HANDLE_SZ as usize],
        };
        raw.f_handle[..h.bytes.len()].copy_from_slice(&h.bytes);
        self.calls.count();
        // SAFETY: the kernel reads `raw`'s header and `handle_bytes` bytes
        // of it; the fd returned is ours.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_open_by_handle_at,
                mount_fd.as_raw_fd(),
                &raw as *const RawHandle,
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: a fresh fd nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }

    /// Where the object open as `fd` is, relative to the root, by the
    /// host's own account (/proc/self/fd): ESTALE if that is not beneath
    /// the root (moved out of it, removed, or the host's dentry is
    /// disconnected and reads "/"). Only a hint: the caller walks it from
    /// the root, contained, and checks what it finds.
    pub(crate) fn path_beneath(&self, fd: RawFd) -> SysResult<Box<[u8]>> {
        let at = fd_text(fd)?;
        let root = fd_text(self.root.as_raw_fd())?;
        beneath(&root, &at).map(Into::into).ok_or(Errno::ESTALE)
    }
}

/// `at` relative to `root` (both absolute host paths as /proc shows
/// them) if it is `root` ("") or below it, made of valid components;
/// None for anything else, a removed object's " (deleted)" path included.
fn beneath<'a>(root: &[u8], at: &'a [u8]) -> Option<&'a [u8]> {
    const DELETED: &[u8] = b" (deleted)";
    if at.ends_with(DELETED) || root.ends_with(DELETED) {
        return None;
    }
    if at == root {
        return Some(&b""[..]);
    }
    let below = if root == b"/" {
        at.strip_prefix(b"/")?
    } else {
        at.strip_prefix(root)?.strip_prefix(b"/")?
    };
    below
        .split(|&b| b == b'/')
        .all(valid_component)
        .then_some(below)
}

/// /proc/self/fd/`fd`: the magic link to exactly the object open as `fd`.
pub(crate) fn proc_fd(fd: RawFd) -> std::ffi::CString {
    std::ffi::CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a formatted number")
}

/// The text of /proc/self/fd/`fd`: where the host says the object is.
fn fd_text(fd: RawFd) -> SysResult<Vec<u8>> {
    let link = proc_fd(fd);
    let mut buf = vec![0u8; crate::abi::PATH_MAX];
    // SAFETY: readlink writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::readlink(link.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(last_errno());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `struct xattr_args` of setxattrat / getxattrat.
#[repr(C)]
struct XattrArgs {
    value: u64,
    size: u32,
    flags: u32,
}

// The kernel's XATTR_ARGS_SIZE_VER0: the size it checks the block against.
const _: () = assert!(core::mem::size_of::<XattrArgs>() == 16);

const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_GETXATTRAT: libc::c_long = 464;
const SYS_LISTXATTRAT: libc::c_long = 465;
const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// `call` through the *xattrat syscalls on `name` in `dir` (empty: `dir`
/// itself), AT_SYMLINK_NOFOLLOW.
fn xattrat(dir: RawFd, name: &[u8], call: &mut XattrCall<'_>) -> SysResult<usize> {
    let path = if name.is_empty() {
        CName {
            buf: [0; crate::abi::NAME_MAX + 1],
        }
    } else {
        CName::new(name)?
    };
    let at = libc::AT_SYMLINK_NOFOLLOW
        | if name.is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
    let cname = |n: &[u8]| std::ffi::CString::new(n).map_err(|_| Errno::EINVAL);
    let size = core::mem::size_of::<XattrArgs>();
    // SAFETY (each call): NUL-terminated path and name; the argument block
    // and buffers outlive the call, which writes only within the lengths
    // given.
    let r = match call {
        XattrCall::Get(n, buf) => {
            let mut args = XattrArgs {
                value: buf.as_mut_ptr() as u64,
                size: buf.len() as u32,
                flags: 0,
            };
            let n = cname(n)?;
            unsafe {
                libc::syscall(
                    SYS_GETXATTRAT,
                    dir,
                    path.as_ptr(),
                    at,
                    n.as_ptr(),
                    &mut args,
                    size,
                )
            }
        }
        XattrCall::Set(n, v, flags) => {
            let args = XattrArgs {
                value: v.as_ptr() as u64,
                size: v.len() as u32,
                flags: *flags as u32,
            };
            let n = cname(n)?;
            unsafe {
                libc::syscall(
                    SYS_SETXATTRAT,
                    dir,
                    path.as_ptr(),
                    at,
                    n.as_ptr(),
                    &args,
                    size,
                )
            }
        }
        XattrCall::List(buf) => unsafe {
            libc::syscall(
                SYS_LISTXATTRAT,
                dir,
                path.as_ptr(),
                at,
                buf.as_mut_ptr(),
                buf.len(),
            )
        },
        XattrCall::Remove(n) => {
            let n = cname(n)?;
            unsafe { libc::syscall(SYS_REMOVEXATTRAT, dir, path.as_ptr(), at, n.as_ptr()) }
        }
    };
    if r < 0 {
        return Err(last_errno());
    }
    Ok(r as usize)
}

/// Opens the single component `name` of the directory open as `at` (a
/// valid component: nothing climbs; pass O_NOFOLLOW to follow nothing).
pub(crate) fn openat_at(at: RawFd, name: &[u8], flags: i32) -> SysResult<OwnedFd> {
    if !valid_component(name) {
        return Err(Errno::EINVAL);
    }
    openat_raw(at, name, flags)
}

fn openat_raw(at: RawFd, name: &[u8], flags: i32) -> SysResult<OwnedFd> {
    let c = std::ffi::CString::new(name).map_err(|_| Errno::EINVAL)?;
    // SAFETY: NUL-terminated path; the fd returned is ours.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn is_symlink_at(at: RawFd, name: &[u8]) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: zeroed stat is a valid output buffer.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstatat writes only `st`.
    let r = unsafe { libc::fstatat(at, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

pub(crate) fn pread(fd: RawFd, buf: &mut [u8], pos: u64) -> SysResult<usize> {
    // SAFETY: pread writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), pos as i64) };
    if n < 0 {
        return Err(last_errno());
    }
    Ok(n as usize)
}

pub(crate) fn pwrite(fd: RawFd, buf: &[u8], pos: u64) -> SysResult<usize> {
    // SAFETY: pwrite reads at most `buf.len()` bytes from `buf`.
    let n = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), pos as i64) };
    if n < 0 {
        return Err(last_errno());
    }
    Ok(n as usize)
}

pub(crate) fn write(fd: RawFd, buf: &[u8]) -> SysResult<usize> {
    // SAFETY: write reads at most `buf.len()` bytes from `buf`.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(last_errno());
    }
    Ok(n as usize)
}

/// Writes `buf` at the end of the file open as `fd`, whatever its open
/// flags (pwritev2's RWF_APPEND: atomic against other appenders, as an
/// O_APPEND write). EOPNOTSUPP or EINVAL from kernels before 4.16.
pub(crate) fn pwrite_append(fd: RawFd, buf: &[u8]) -> SysResult<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: pwritev2 reads at most `buf.len()` bytes from the one iovec.
    let n = unsafe { libc::pwritev2(fd, &iov, 1, -1, libc::RWF_APPEND) };
    if n < 0 {
        return Err(last_errno());
    }
    Ok(n as usize)
}

/// One host directory entry (borrowed from the getdents64 buffer).
pub(crate) struct HostDirent<'a> {
    pub ino: u64,
    pub off: i64,
    pub dtype: u8,
    pub name: &'a [u8],
}

impl HostRoot {
    /// Reads the host directory open as `fd` from host offset `off`,
    /// handing each entry (without "." and "..") to `emit` until it
    /// returns false; returns whether the read reached the end (false:
    /// `emit` stopped it).
    pub(crate) fn list_dir(
        &self,
        fd: RawFd,
        off: i64,
        mut emit: impl FnMut(&HostDirent<'_>) -> bool,
    ) -> SysResult<bool> {
        // SAFETY: lseek on our own fd.
        if unsafe { libc::lseek(fd, off, libc::SEEK_SET) } < 0 {
            return Err(last_errno());
        }
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            self.calls.dir_reads.inc();
            // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            if n < 0 {
                return Err(last_errno());
            }
            if n == 0 {
                return Ok(true);
            }
            let filled = &buf[..n as usize];
            let mut at = 0usize;
            while at < filled.len() {
                let rec = filled.get(at..at + 19).ok_or(Errno::EIO)?;
                let ino = u64::from_ne_bytes(rec[..8].try_into().expect("8 bytes"));
                let off = i64::from_ne_bytes(rec[8..16].try_into().expect("8 bytes"));
                let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
                let dtype = rec[18];
                let name_bytes = filled.get(at + 19..at + reclen).ok_or(Errno::EIO)?;
                let len = name_bytes
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(name_bytes.len());
                let name = &name_bytes[..len];
                at += reclen;
                if name == b"." || name == b".." {
                    continue;
                }
                if !emit(&HostDirent {
                    ino,
                    off,
                    dtype,
                    name,
                }) {
                    return Ok(false);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// statx's record, converted, says what fstatat says, for a file, a
    /// directory, a symlink (not followed) and the root by its fd; the
    /// birth is known where the filesystem keeps one (the temp directory
    /// is tmpfs or ext4 here; anything else is not checked for it); and
    /// fstatat's fields, without a birth, once statx is refused.
    #[test]
    fn statx_reads_what_fstatat_reads() {
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(format!("vfscale-statx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("f"), vec![7u8; 5000]).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.join("l")).unwrap();
        let root = HostRoot::open(&dir).unwrap();
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: zeroed statfs is a valid output buffer; `c` is a path.
        let mut fs: libc::statfs = unsafe { core::mem::zeroed() };
        // SAFETY: statfs writes only `fs`.
        assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut fs) }, 0);
        let births = keeps_births(fs.f_type as u32);
        let plain = |name: &[u8]| {
            let c = CName::new(name).unwrap();
            // SAFETY: zeroed stat is a valid output buffer.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: fstatat writes only `st`; `c` is NUL-terminated.
            let r = unsafe {
                libc::fstatat(
                    root.root_fd(),
                    c.as_ptr(),
                    &mut st,
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            assert_eq!(r, 0);
            st
        };
        let fields = |st: &libc::stat| {
            (
                (st.st_dev, st.st_ino, st.st_mode, st.st_nlink),
                (st.st_uid, st.st_gid, st.st_rdev, st.st_size),
                (st.st_blksize, st.st_blocks),
                (st.st_mtime, st.st_mtime_nsec, st.st_ctime, st.st_ctime_nsec),
            )
        };
        for name in [&b"f"[..], b"d", b"l"] {
            let x = root.stat_at(root.root_fd(), name).unwrap();
            assert_eq!(fields(&x), fields(&plain(name)), "{name:?}");
            assert_eq!(x.birth != 0, births, "{name:?}");
        }
        let x = root.fstat(root.root_fd()).unwrap();
        // SAFETY: zeroed stat is a valid output buffer.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: fstat writes only `st`.
        assert_eq!(unsafe { libc::fstat(root.root_fd(), &mut st) }, 0);
        assert_eq!(fields(&x), fields(&st));
        assert_eq!(x.birth != 0, births);
        // Where statx is refused (as after an ENOSYS or EPERM): fstatat's
        // fields, no birth, and a birth-less stat is anyone's. (Relaxed: one
        // thread; `stat_raw`'s load is a hint.)
        root.statx
            .store(false, std::sync::atomic::Ordering::Relaxed);
        for name in [&b"f"[..], b"d", b"l"] {
            let y = root.stat_at(root.root_fd(), name).unwrap();
            assert_eq!(fields(&y), fields(&plain(name)), "{name:?}");
            assert_eq!(y.birth, 0, "{name:?}");
            assert!(y.born_as(x.birth) && y.born_as(1));
        }
        if births {
            assert!(x.born_as(x.birth) && !x.born_as(x.birth + 1) && x.born_as(0));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_paths_beneath_the_root_are_beneath_it() {
        let root = &b"/srv/root"[..];
        for (at, rel) in [
            (&b"/srv/root"[..], Some(&b""[..])),
            (b"/srv/root/a", Some(b"a")),
            (b"/srv/root/a/b c/d", Some(b"a/b c/d")),
            // A sibling sharing the root's name as a prefix.
            (b"/srv/rootless/a", None),
            (b"/srv", None),
            (b"/", None),
            (b"/srv/other/a", None),
            // Removed, or a name that /proc would not show.
            (b"/srv/root/a (deleted)", None),
            (b"/srv/root/a/../../etc", None),
            (b"/srv/root//a", None),
            (b"/srv/root/", None),
        ] {
            assert_eq!(beneath(root, at), rel, "{}", String::from_utf8_lossy(at));
        }
        assert_eq!(
            beneath(b"/srv/root (deleted)", b"/srv/root (deleted)/a"),
            None
        );
        // A root at the host's "/": every absolute path is beneath it.
        assert_eq!(beneath(b"/", b"/"), Some(&b""[..]));
        assert_eq!(beneath(b"/", b"/etc/passwd"), Some(&b"etc/passwd"[..]));
    }

    #[test]
    fn valid_components_are_plain_names() {
        for ok in [&b"a"[..], b"f0000123", b"...", b".a", b"a.", &[b'x'; 255]] {
            assert!(valid_component(ok), "{ok:?}");
        }
        for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"a\0", b"\0", b"ab/"] {
            assert!(!valid_component(bad), "{bad:?}");
        }
    }
}
