//! Path resolution.
//!
//! One walk runs inside the caller's epoch guard and takes no reference and
//! no lock while every component is cached: each step looks the name up in
//! the hash, checks search permission on the directory from attributes read
//! under the inode seqcount, and validates the directory's dentry `seq` after
//! finding the child (so the child was really in that directory at that
//! moment). A miss goes to `lookup_slow` (shared directory lock), which
//! caches the answer. Any failed validation restarts the walk from the start
//! (Linux's fallback from RCU walk to ref walk, reduced to "try again":
//! there is nothing to undo because nothing was taken).
//!
//! Walks that went through ".." or crossed a mount validate the global
//! rename and mount seqcounts at the end, whether they found something or
//! failed: a concurrent rename could otherwise carry the walk outside the
//! process root, and a concurrent change of a mount stack show a mount
//! without the one on top of it (a name there missing).
//!
//! The result is a dentry pointer plus the `seq` to validate when taking a
//! reference (`VfsInner::dget_validated`); callers that only read attributes
//! (stat, access, readlink) take none.

use super::dentry::{Dentry, D_MOUNTED, D_REVALIDATE, D_TYPE_DIR, D_TYPE_SYMLINK};
use super::name::{load_word, scan_component, scan_short_component, ComponentEnd, NameKey};
use super::RcuLookup;
use crate::abi::*;
use crate::cred::perm::{may_search_fast, MAY_EXEC};
use crate::cred::Cred;
use crate::inode::Inode;
use crate::mount::flags::MNT_NOSYMFOLLOW;
use crate::mount::Mount;
use crate::sync::atomic::Ordering;
use crate::vfs::VfsInner;

/// A (mount, dentry) pair: a location in the namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathPtr {
    pub mnt: *const Mount,
    pub dentry: *const Dentry,
}

/// Follow a symlink in the final component.
pub const WALK_FOLLOW: u32 = 1;
/// The final component must be a directory.
pub const WALK_DIRECTORY: u32 = 2;
/// A negative final component is returned instead of ENOENT.
pub const WALK_ALLOW_NEGATIVE: u32 = 4;
/// openat2's resolve flags are walk flags at their RESOLVE_* bits shifted
/// past the walk's own three, so that `walk_resolve_flags` is a shift.
const RESOLVE_SHIFT: u32 = 3;
/// openat2's RESOLVE_BENEATH: the walk may not leave its root (the
/// caller passes the dirfd's directory as the root): an absolute path or
/// symlink, or ".." at the root, is EXDEV.
pub const WALK_BENEATH: u32 = (RESOLVE_BENEATH as u32) << RESOLVE_SHIFT;
/// RESOLVE_IN_ROOT: the caller passes the dirfd's directory as the root;
/// the walk itself is an ordinary one.
pub const WALK_IN_ROOT: u32 = (RESOLVE_IN_ROOT as u32) << RESOLVE_SHIFT;
/// RESOLVE_NO_XDEV: crossing a mount, down or up (or by an absolute
/// symlink from another mount than the root's), is EXDEV.
pub const WALK_NO_XDEV: u32 = (RESOLVE_NO_XDEV as u32) << RESOLVE_SHIFT;
/// RESOLVE_NO_SYMLINKS: a symlink the walk would follow is ELOOP.
pub const WALK_NO_SYMLINKS: u32 = (RESOLVE_NO_SYMLINKS as u32) << RESOLVE_SHIFT;
/// RESOLVE_CACHED: EAGAIN wherever the walk would ask the backend (a miss,
/// a stale answer) or meets a cached miss (Linux's tmpfs keeps none, so
/// its RCU walk cannot answer ENOENT there either).
pub const WALK_CACHED: u32 = (RESOLVE_CACHED as u32) << RESOLVE_SHIFT;
/// Any of openat2's resolve flags: the fast walk declines such walks.
/// (RESOLVE_NO_MAGICLINKS has no walk flag: vfscale has no magic links.)
pub const WALK_RESOLVE: u32 =
    WALK_BENEATH | WALK_IN_ROOT | WALK_NO_XDEV | WALK_NO_SYMLINKS | WALK_CACHED;
const _: () = assert!(
    WALK_RESOLVE & (WALK_FOLLOW | WALK_DIRECTORY | WALK_ALLOW_NEGATIVE) == 0,
    "the resolve flags sit above the walk's own"
);

/// The walk flags for openat2's `resolve` (checked: no unknown bit).
pub fn walk_resolve_flags(resolve: u64) -> u32 {
    debug_assert_eq!(resolve & !RESOLVE_VALID, 0);
    ((resolve as u32) << RESOLVE_SHIFT) & WALK_RESOLVE
}

/// What a walk resolved.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub path: PathPtr,
    /// `seq` of `path.dentry` when it was validated.
    pub seq: u32,
    /// The inode, or null for a negative final component.
    pub inode: *const Inode,
}

impl Found {
    /// The inode of a positive result.
    pub fn inode(&self) -> &Inode {
        debug_assert!(!self.inode.is_null());
        // SAFETY: a positive result's inode is kept allocated by the guard
        // the walk ran under, which outlives this borrow by construction of
        // the callers (they hold it for the whole operation).
        unsafe { &*self.inode }
    }

    /// The mount the result is in.
    pub fn mount(&self) -> &crate::mount::Mount {
        // SAFETY: as `inode`: the walk's guard keeps its mount allocated.
        unsafe { &*self.path.mnt }
    }
}

/// What the fast walk resolved: a dentry in the mount it started from (the
/// fast path never crosses a mount).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastHit {
    pub dentry: *const Dentry,
    /// `seq` of `dentry` when it was validated.
    pub seq: u32,
    /// The inode, or null for a negative final component.
    pub inode: *const Inode,
}

impl FastHit {
    /// The result as a location in `mnt`, the mount the walk started in.
    #[inline(always)]
    pub fn in_mount(self, mnt: *const Mount) -> Found {
        Found {
            path: PathPtr {
                mnt,
                dentry: self.dentry,
            },
            seq: self.seq,
            inode: self.inode,
        }
    }
}

/// The last component of a path split off for create/remove operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Last<'p> {
    Name(&'p [u8]),
    Dot,
    DotDot,
    /// The path was "/" (or only slashes).
    Root,
}

/// The parent directory of a path's last component.
#[derive(Clone, Copy, Debug)]
pub struct Parent<'p> {
    pub dir: Found,
    pub last: Last<'p>,
    /// The path ended in a slash.
    pub trailing_slash: bool,
    /// Whether Linux's walk would know its root by the last component
    /// (`symlink_jump_allowed`): an absolute path, a scoped walk, or a
    /// `..` or absolute link on the way to the directory. Worked out under
    /// RESOLVE_NO_XDEV only (false otherwise), the one flag that asks.
    pub root_known: bool,
}

enum WalkError {
    Errno(Errno),
    Retry,
}

impl From<Errno> for WalkError {
    fn from(e: Errno) -> Self {
        WalkError::Errno(e)
    }
}

/// Checks a path at the API boundary: NUL bytes and lengths.
pub fn check_path(path: &[u8]) -> SysResult<()> {
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if has_nul(path) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Word-at-a-time NUL search: a short path costs a few instructions, not a
/// call into memchr.
#[inline(always)]
fn has_nul(bytes: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_ne_bytes(c.try_into().unwrap());
        if w.wrapping_sub(LO) & !w & HI != 0 {
            return true;
        }
    }
    // The tail (under 8 bytes) as one zero-padded word: a zero byte among
    // its real bytes is a NUL (the lowest flagged byte is exact).
    let (w, real) = load_word(chunks.remainder(), 0);
    let lowest_zero = (w.wrapping_sub(LO) & !w & HI).trailing_zeros() as usize / 8;
    lowest_zero < real
}

/// Search permission for a directory whose mode does not grant it to
/// everyone: the full check, out of line so the fast walk does not keep the
/// credential's fields live in its loop (root and 0755 directories never
/// get here).
#[cold]
#[inline(never)]
fn may_search_slow(cred: &Cred, dir: &Inode, perm: (u32, u32, u32)) -> bool {
    dir.permission_as(cred, perm, MAY_EXEC).is_ok()
}

/// Pending path text: a stack of segments (the original path and the
/// targets of symlinks being followed). Targets live in inodes kept
/// allocated by the walk's guard. The first few live inline, so a walk
/// that follows no deep symlink chain allocates nothing.
struct Segments {
    inline: [(*const u8, usize); INLINE_SEGMENTS],
    len: usize,
    spill: Vec<(*const u8, usize)>,
}

const INLINE_SEGMENTS: usize = 4;

impl Segments {
    fn new(path: &[u8]) -> Segments {
        let mut inline = [(core::ptr::null(), 0); INLINE_SEGMENTS];
        inline[0] = (path.as_ptr(), path.len());
        Segments {
            inline,
            len: 1,
            spill: Vec::new(),
        }
    }

    fn top(&mut self) -> Option<&mut (*const u8, usize)> {
        if let Some(t) = self.spill.last_mut() {
            return Some(t);
        }
        self.inline[..self.len].last_mut()
    }

    /// Segments on the stack.
    fn depth(&self) -> usize {
        self.len + self.spill.len()
    }

    fn pop(&mut self) {
        if self.spill.pop().is_none() {
            self.len -= 1;
        }
    }

    /// Pushes a symlink target; the caller bounds the depth by MAXSYMLINKS.
    fn push(&mut self, target: &[u8]) {
        let seg = (target.as_ptr(), target.len());
        if self.len < INLINE_SEGMENTS && self.spill.is_empty() {
            self.inline[self.len] = seg;
            self.len += 1;
        } else {
            self.spill.push(seg);
        }
    }

    /// True if any segment still holds a component.
    fn has_more(&self) -> bool {
        // SAFETY: see `slice`.
        self.inline[..self.len]
            .iter()
            .chain(&self.spill)
            .any(|&(p, n)| unsafe { slice(p, n) }.iter().any(|&b| b != b'/'))
    }
}

/// # Safety
/// `p..p+n` must be a live byte range: the user's path (borrowed for the
/// walk) or a symlink target of an inode the walk's guard keeps allocated.
unsafe fn slice<'a>(p: *const u8, n: usize) -> &'a [u8] {
    // SAFETY: guaranteed by this function's contract (see above).
    unsafe { core::slice::from_raw_parts(p, n) }
}

impl VfsInner {
    /// Resolves `path` from `start` (used for relative paths) with `root` as
    /// the process root. The caller holds an epoch guard for as long as it
    /// uses the result. Inlined: the fast path is the whole cost of a stat.
    #[inline(always)]
    pub(crate) fn walk(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
    ) -> SysResult<Found> {
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        // The fast path checks for NUL bytes in its own scan (one pass over
        // the path); it declines any path that holds one, and the full walk
        // below reports it. It knows none of openat2's resolve flags.
        if flags & WALK_RESOLVE == 0 {
            if let Some(r) = self.walk_fast(cred, root, start, path, flags) {
                return r;
            }
        }
        self.walk_slow(cred, root, start, path, flags)
    }

    /// `walk`'s checks and fast path only: None when the full walk
    /// (`walk_slow`) must run. For callers that prepare something before
    /// the slow path (a process sets its charge group: the slow path may
    /// create a negative dentry) without keeping more values live across
    /// the fast path.
    #[inline(always)]
    pub(crate) fn walk_fast_only(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
    ) -> Option<SysResult<Found>> {
        if path.len() >= PATH_MAX {
            return Some(Err(Errno::ENAMETOOLONG));
        }
        if path.is_empty() {
            return Some(Err(Errno::ENOENT));
        }
        self.walk_fast(cred, root, start, path, flags)
    }

    /// Everything the fast path declines: the full walk with its retries.
    #[inline(never)]
    pub(crate) fn walk_slow(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
    ) -> SysResult<Found> {
        self.walk_slow_learning_root(cred, root, start, path, flags)
            .map(|(found, _)| found)
    }

    /// `walk_slow`, saying also whether the walk learnt its root on the
    /// way (`symlink_jump_allowed`).
    fn walk_slow_learning_root(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
    ) -> SysResult<(Found, bool)> {
        check_path(path)?;
        let mut attempts = 0u32;
        loop {
            let mut root_known = false;
            match self.walk_once(cred, root, start, path, flags, &mut root_known) {
                Ok(f) => return Ok((f, root_known)),
                Err(WalkError::Errno(e)) => return Err(e),
                Err(WalkError::Retry) => {
                    attempts += 1;
                    if attempts > 16 {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    /// The fast path for the common case: every component a plain, cached
    /// name (no ".", "..", symlink, mountpoint, miss or trailing slash).
    /// `None` means "not that case, or a validation failed": the caller
    /// runs the full walk, which holds all the semantics. Writes nothing.
    #[inline(always)]
    fn walk_fast(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
    ) -> Option<SysResult<Found>> {
        let absolute = path[0] == b'/';
        let from = if absolute { root } else { start };
        Some(
            self.walk_fast_from(cred, from.dentry, path, absolute, flags)?
                .map(|hit| hit.in_mount(from.mnt)),
        )
    }

    /// The fast path from the dentry `from` (the root for an absolute
    /// path, else the start directory): `walk_fast` without the mount,
    /// which the fast path never changes (it declines mountpoints). For
    /// callers that need only the inode (the stat family) and so need not
    /// read a (mount, dentry) pair consistently. `path` is not empty and
    /// shorter than PATH_MAX (the caller checked); `absolute` says whether
    /// it starts with a slash (the caller tested that to pick `from`);
    /// `from` is a directory (every walk starts in one: root, cwd, a dirfd
    /// that `start_dir` checked, a parent). Writes nothing.
    #[inline(always)]
    pub(crate) fn walk_fast_from(
        &self,
        cred: &Cred,
        from: *const Dentry,
        path: &[u8],
        absolute: bool,
        flags: u32,
    ) -> Option<SysResult<FastHit>> {
        let mut cur = from;
        // SAFETY (all derefs): the caller's guard keeps everything reachable
        // from `from` allocated (see `walk_once`).
        let mut d = unsafe { &*cur };
        debug_assert!(
            d.flags() & D_TYPE_DIR != 0,
            "the fast walk starts in a directory"
        );
        // A section begun inside a write fails the retry check below.
        let mut seq = d.seq.read_begin_even();
        let n = path.len();
        // Past the leading slash. More slashes ("//x", "a//b") are empty
        // components, which the scan's rare branch skips; "/" alone (or a
        // trailing slash) ends in one, which goes to the full walk.
        let mut i = usize::from(absolute);
        // When the oldest backend entry the walk went through was validated
        // (u64::MAX: none yet). Their TTL is tested once, before the walk
        // answers: nothing the walk does before that has an effect, and a
        // clock read in the middle of the walk stalls it where it is about
        // to miss on the next bucket (session 7: ~230 ns per hot stat one
        // level below the root, in the clock call, on the shared VM).
        let mut oldest_validation = u64::MAX;
        loop {
            // No test for "." and "..": no dentry has either name (asserted
            // where dentries are named: `alloc_dentry`, `d_move`), so their
            // lookup misses and the full walk resolves them.
            let key = match scan_short_component(path, i) {
                Some(key) => key,
                None => {
                    // Nine bytes or more or an empty component: the
                    // general scan (a NUL it meets, the full walk reports;
                    // one in a short name is a key no dentry matches).
                    let (key, end) = scan_component(path, i);
                    if end != ComponentEnd::Separator {
                        return None;
                    }
                    if key.bytes.is_empty() {
                        // A run of slashes: skipped, unless nothing follows
                        // it (the path's end: a trailing slash, or "/").
                        while i < n && path[i] == b'/' {
                            i += 1;
                        }
                        if i == n {
                            return None;
                        }
                        continue;
                    }
                    if key.bytes.len() < 8 {
                        return None;
                    }
                    key
                }
            };
            i += key.bytes.len();
            if !cred.is_root() {
                // SAFETY: a validated positive dentry's inode.
                let dir = unsafe { &*d.inode_ptr() };
                let perm = dir.perm_attr();
                if !may_search_fast(perm.0) && !may_search_slow(cred, dir, perm) {
                    return None;
                }
            }
            let RcuLookup::Found(c, cseq) = self.lookup_rcu(cur, &key) else {
                return None;
            };
            if d.seq.read_retry(seq) {
                return None;
            }
            let cd = unsafe { &*c };
            let inode = cd.inode_ptr();
            let cflags = cd.flags();
            if cd.seq.read_retry(cseq) {
                return None;
            }
            // Mountpoints and symlinks go to the full walk; a backend's entry
            // counts toward the TTL test at the end (one branch for tmpfs
            // entries, which never have the flag).
            if cflags & (D_MOUNTED | D_TYPE_SYMLINK | D_REVALIDATE) != 0 {
                if cflags & (D_MOUNTED | D_TYPE_SYMLINK) != 0 {
                    return None;
                }
                // Relaxed: see `VfsInner::revalidate_dentry`.
                oldest_validation = oldest_validation.min(cd.cookie.load(Ordering::Relaxed));
            }
            let at_end = i == n;
            // Both answers below pass the TTL test first (`stale_answer`): a
            // stale entry anywhere on the path sends the walk to the full
            // one, which revalidates it. An inner positive component pays
            // nothing for it (tmpfs stats, session 7: testing on every
            // component cost 12 of 240 instructions per stat-same).
            if inode.is_null() {
                if Self::stale_answer(cd, oldest_validation) {
                    return None;
                }
                // A cached miss: valid as it stands for the last component
                // (and ENOENT for an inner one, as the full walk says).
                if at_end && flags & WALK_ALLOW_NEGATIVE != 0 {
                    return Some(Ok(FastHit {
                        dentry: c,
                        seq: cseq,
                        inode,
                    }));
                }
                // ...unless a later component holds a NUL: that is EINVAL,
                // checked before anything else.
                if has_nul(&path[i..]) {
                    return None;
                }
                return Some(Err(Errno::ENOENT));
            }
            cur = c;
            d = cd;
            seq = cseq;
            if at_end {
                if flags & WALK_DIRECTORY != 0 && cflags & D_TYPE_DIR == 0 {
                    return None;
                }
                if Self::stale_answer(cd, oldest_validation) {
                    return None;
                }
                return Some(Ok(FastHit {
                    dentry: cur,
                    seq,
                    inode,
                }));
            }
            // The walk goes on below this entry: it must be a directory.
            // Tested here, on the flags read and validated above, so the
            // start (root or cwd: a directory, which chroot and chdir
            // demand, and a positive dentry never changes type) is not.
            if cflags & D_TYPE_DIR == 0 {
                return None;
            }
            // Past the separator that ended the component (not the end:
            // `at_end` was false); more slashes are the next scan's.
            i += 1;
        }
    }

    /// True if the walk may not answer: it went through backend entries
    /// (`oldest_validation` is the oldest one's validation time, u64::MAX
    /// if none) and they are past their TTL. `d` is one of the walk's
    /// dentries.
    #[inline(always)]
    fn stale_answer(d: &Dentry, oldest_validation: u64) -> bool {
        oldest_validation != u64::MAX && !Self::validated_within_ttl(d, oldest_validation)
    }

    /// True if the backend entries validated at `validated_at` (the oldest
    /// of a walk's) are still within their instance's TTL; `d` is one of
    /// the walk's dentries (the fast walk stays in one superblock: it
    /// declines mountpoints).
    #[inline(always)]
    fn validated_within_ttl(d: &Dentry, validated_at: u64) -> bool {
        // SAFETY: a dentry's superblock outlives it; the caller's guard
        // keeps the dentry allocated.
        let sb = unsafe { &*d.sb };
        let Some(ttl) = sb.revalidate_ttl_ns else {
            return false;
        };
        super::monotonic_ns().saturating_sub(validated_at) < ttl
    }

    /// Splits off the last component and resolves the directory before it.
    #[inline(always)]
    pub(crate) fn walk_parent<'p>(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &'p [u8],
        resolve: u32,
    ) -> SysResult<Parent<'p>> {
        check_path(path)?;
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if resolve & WALK_BENEATH != 0 && path[0] == b'/' {
            return Err(Errno::EXDEV);
        }
        let trimmed_len = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
        let trailing_slash = trimmed_len < path.len();
        // Worked out only for RESOLVE_NO_XDEV, which alone reads it (a
        // parent walk of openat or unlink pays nothing).
        let mut root_known = resolve & WALK_NO_XDEV != 0
            && (path[0] == b'/' || resolve & (WALK_BENEATH | WALK_IN_ROOT) != 0);
        if trimmed_len == 0 {
            let dir = self.walk(
                cred,
                root,
                start,
                b"/",
                WALK_FOLLOW | WALK_DIRECTORY | resolve,
            )?;
            return Ok(Parent {
                dir,
                last: Last::Root,
                trailing_slash: false,
                root_known,
            });
        }
        let trimmed = &path[..trimmed_len];
        let (dir_part, name) = match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) => (&trimmed[..i + 1], &trimmed[i + 1..]),
            None => (&b""[..], trimmed),
        };
        // The directory part without its trailing slashes: WALK_DIRECTORY
        // already demands a directory, and the fast walk declines trailing
        // slashes (so "/d/f" would always take the full walk).
        let dir_len = dir_part
            .iter()
            .rposition(|&b| b != b'/')
            .map_or(0, |i| i + 1);
        let dir = if dir_part.is_empty() {
            self.walk_start(start)?
        } else if dir_len == 0 {
            // "/name": the process root, as a walk of "/" gives it.
            self.walk_start(root)?
        } else if resolve & WALK_NO_XDEV != 0 {
            // Only RESOLVE_NO_XDEV asks what the walk learnt (and only the
            // full walk knows openat2's flags).
            let (dir, learnt) = self.walk_slow_learning_root(
                cred,
                root,
                start,
                &dir_part[..dir_len],
                WALK_FOLLOW | WALK_DIRECTORY | resolve,
            )?;
            root_known |= learnt;
            dir
        } else {
            self.walk(
                cred,
                root,
                start,
                &dir_part[..dir_len],
                WALK_FOLLOW | WALK_DIRECTORY | resolve,
            )?
        };
        // Like link_path_walk, search permission on the directory holding
        // the last component is checked before that component is used.
        if !cred.is_root() {
            let perm = dir.inode().perm_attr();
            if !may_search_fast(perm.0) && !may_search_slow(cred, dir.inode(), perm) {
                return Err(Errno::EACCES);
            }
        }
        let last = match name {
            b"." => Last::Dot,
            b".." => Last::DotDot,
            n => Last::Name(n),
        };
        Ok(Parent {
            dir,
            last,
            trailing_slash,
            root_known,
        })
    }

    /// The start location itself as a walk result (empty dir part).
    fn walk_start(&self, start: PathPtr) -> SysResult<Found> {
        // SAFETY: the caller's guard keeps the start dentry (a cwd or an
        // open directory, both referenced) allocated.
        let d = unsafe { &*start.dentry };
        let seq = d.seq.read_begin();
        let inode = d.inode_ptr();
        if inode.is_null() {
            return Err(Errno::ENOENT);
        }
        // SAFETY: a referenced positive dentry keeps its inode.
        if !unsafe { &*inode }.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(Found {
            path: start,
            seq,
            inode,
        })
    }

    /// One walk; an error it meets after going up, crossing a mount or
    /// jumping to the root is believed only if no rename or mount change
    /// raced it (`global_raced`), as Linux's RCU walk legitimizes its
    /// mount sequence before a negative answer: a walk that read a place
    /// in the middle of a change of its mounts (MOVE_MOUNT_BENEATH's move
    /// and re-hook, a propagated copy tucked beneath, an umount's
    /// covering mount moving down) may have seen a mount without the one
    /// stacked on it and found nothing there.
    #[inline(always)]
    fn walk_once(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
        root_known: &mut bool,
    ) -> Result<Found, WalkError> {
        // The global rename and mount seqcounts, sampled only when the walk
        // first goes up, crosses a mount or jumps to the root: plain walks
        // never read those (often written) lines.
        let mut global: Option<(u32, u32)> = None;
        match self.walk_sampling(cred, root, start, path, flags, root_known, &mut global) {
            Err(WalkError::Errno(_)) if self.global_raced(global) => Err(WalkError::Retry),
            r => r,
        }
    }

    /// Whether a rename or a mount change ran since `global` was sampled
    /// (never, when it was not).
    fn global_raced(&self, global: Option<(u32, u32)>) -> bool {
        global.is_some_and(|(rename_seq, mount_seq)| {
            self.rename_seq.read_retry(rename_seq) || self.mounts.seq.read_retry(mount_seq)
        })
    }

    /// `walk_once`'s walk, sampling the global seqcounts into `global`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn walk_sampling(
        &self,
        cred: &Cred,
        root: PathPtr,
        start: PathPtr,
        path: &[u8],
        flags: u32,
        root_known: &mut bool,
        global: &mut Option<(u32, u32)>,
    ) -> Result<Found, WalkError> {
        let sample = |g: &mut Option<(u32, u32)>| {
            g.get_or_insert_with(|| (self.rename_seq.read_begin(), self.mounts.seq.read_begin()));
        };
        let mut cur = if path[0] != b'/' {
            start
        } else if flags & WALK_BENEATH != 0 {
            return Err(Errno::EXDEV.into());
        } else {
            root
        };
        // SAFETY (all dentry/inode derefs below): the caller holds an epoch
        // guard; everything reached from `root`/`start` is freed only
        // through the collector.
        let mut cur_d = unsafe { &*cur.dentry };
        let mut cur_seq = cur_d.seq.read_begin();
        let mut cur_inode = cur_d.inode_ptr();
        if cur_d.seq.read_retry(cur_seq) {
            return Err(WalkError::Retry);
        }
        if cur_inode.is_null() {
            return Err(Errno::ENOENT.into());
        }
        let mut links = 0u32;
        // Whether Linux's walk would have set its root by now
        // (`symlink_jump_allowed`); only RESOLVE_NO_XDEV asks.
        *root_known = path[0] == b'/' || flags & (WALK_BENEATH | WALK_IN_ROOT) != 0;
        let mut segs = Segments::new(path);
        let mut must_be_dir = false;
        loop {
            // Next component from the top segment, popping exhausted ones.
            let comp = loop {
                let Some(top) = segs.top() else { break None };
                // SAFETY: see `slice`.
                let s = unsafe { slice(top.0, top.1) };
                let mut start = 0;
                while start < s.len() && s[start] == b'/' {
                    start += 1;
                }
                if start == s.len() {
                    segs.pop();
                    continue;
                }
                let mut end = start;
                while end < s.len() && s[end] != b'/' {
                    end += 1;
                }
                let rest = &s[end..];
                *top = (rest.as_ptr(), rest.len());
                break Some((&s[start..end], rest));
            };
            let Some((comp, rest_top)) = comp else {
                // Path exhausted: `cur` is the result (root, ".", "..", or a
                // followed symlink's directory).
                return self.finish_at(cur, cur_seq, cur_inode, flags, must_be_dir, *global);
            };
            // Last component: nothing but slashes after it in this segment
            // (a trailing slash) and nothing in the segments below.
            let is_last =
                rest_top.iter().all(|&b| b == b'/') && (segs.depth() == 1 || !segs.has_more());
            if is_last && !rest_top.is_empty() {
                must_be_dir = true;
            }
            // The current inode must be a searchable directory. The type
            // comes from the dentry: the inode's attribute line is written by
            // every create in this directory, the dentry's is not.
            if cur_d.flags() & D_TYPE_DIR == 0 {
                return Err(Errno::ENOTDIR.into());
            }
            // SAFETY: see above.
            let dir = unsafe { &*cur_inode };
            if !cred.is_root() {
                let perm = dir.perm_attr();
                if !may_search_fast(perm.0) && !may_search_slow(cred, dir, perm) {
                    return Err(Errno::EACCES.into());
                }
            }
            if comp == b"." {
                if is_last {
                    return self.finish_at(cur, cur_seq, cur_inode, flags, must_be_dir, *global);
                }
                continue;
            }
            if comp == b".." {
                *root_known = true;
                sample(global);
                // Like Linux's step_into after "..": descend into whatever is
                // mounted where ".." landed (even at the process root).
                // Not connected (an error): believed only if no rename or
                // mount change raced the climb (`walk_once`; Linux's RCU
                // walk says ECHILD and lets the ref walk decide).
                cur = self.follow_dotdot(root, cur, flags)?;
                // SAFETY: as above.
                if unsafe { &*cur.dentry }.flags() & D_MOUNTED != 0 {
                    let below = cur;
                    cur = self.follow_mounts(cur);
                    if flags & WALK_NO_XDEV != 0 && cur != below {
                        return Err(Errno::EXDEV.into());
                    }
                }
                cur_d = unsafe { &*cur.dentry };
                cur_seq = cur_d.seq.read_begin();
                cur_inode = cur_d.inode_ptr();
                if cur_inode.is_null() || cur_d.seq.read_retry(cur_seq) {
                    return Err(WalkError::Retry);
                }
                if is_last {
                    return self.finish_at(cur, cur_seq, cur_inode, flags, must_be_dir, *global);
                }
                continue;
            }
            if comp.len() > NAME_MAX {
                return Err(Errno::ENAMETOOLONG.into());
            }
            let key = NameKey::new(comp);
            let (child, child_seq) = match self.lookup_rcu(cur.dentry, &key) {
                RcuLookup::Found(d, seq) => {
                    if cur_d.seq.read_retry(cur_seq) {
                        return Err(WalkError::Retry);
                    }
                    (d, seq)
                }
                RcuLookup::Miss if flags & WALK_CACHED != 0 => {
                    return Err(Errno::EAGAIN.into());
                }
                RcuLookup::Miss => match self.lookup_slow(cur.mnt, cur.dentry, dir, &key)? {
                    Some(found) => found,
                    // The directory's entry was reclaimed: walk again.
                    None => return Err(WalkError::Retry),
                },
            };
            // SAFETY: chain nodes are freed only through the collector; guard held.
            let child_d = unsafe { &*child };
            let child_inode = child_d.inode_ptr();
            let child_flags = child_d.flags();
            if child_d.seq.read_retry(child_seq) {
                return Err(WalkError::Retry);
            }
            if child_flags & D_REVALIDATE != 0 {
                if flags & WALK_CACHED != 0 && Self::stale_answer_stamps(child_d).is_some() {
                    return Err(Errno::EAGAIN.into());
                }
                if !self.revalidate_dentry(cur.dentry, dir, child_d, &key)? {
                    return Err(WalkError::Retry);
                }
            }
            if child_inode.is_null() {
                if flags & WALK_CACHED != 0 {
                    return Err(Errno::EAGAIN.into());
                }
                if is_last && flags & WALK_ALLOW_NEGATIVE != 0 {
                    let f = Found {
                        path: PathPtr {
                            mnt: cur.mnt,
                            dentry: child,
                        },
                        seq: child_seq,
                        inode: child_inode,
                    };
                    return self.finish(f, flags, *global);
                }
                return Err(Errno::ENOENT.into());
            }
            let follow = !is_last || flags & WALK_FOLLOW != 0 || must_be_dir;
            if follow && child_flags & D_TYPE_SYMLINK != 0 {
                // SAFETY: a validated positive dentry's inode, under the guard.
                let ci = unsafe { &*child_inode };
                links += 1;
                // pick_link: a nosymfollow mount follows no link.
                // SAFETY: the guard keeps the walk's mount allocated.
                let mnt_flags = unsafe { &*cur.mnt }.flags.get();
                if links > MAXSYMLINKS
                    || flags & WALK_NO_SYMLINKS != 0
                    || mnt_flags & MNT_NOSYMFOLLOW != 0
                {
                    return Err(Errno::ELOOP.into());
                }
                follow_accessed(ci, mnt_flags, flags)?;
                let target = ci.symlink_target().unwrap_or(&[]);
                if target.is_empty() {
                    return Err(Errno::ENOENT.into());
                }
                if target[0] == b'/' {
                    symlink_jump_allowed(flags, cur, root, *root_known)?;
                    *root_known = true;
                    sample(global);
                    cur = root;
                    // SAFETY: as above.
                    cur_d = unsafe { &*cur.dentry };
                    cur_seq = cur_d.seq.read_begin();
                    cur_inode = cur_d.inode_ptr();
                }
                segs.push(target);
                continue;
            }
            let mut next = PathPtr {
                mnt: cur.mnt,
                dentry: child,
            };
            let mut next_seq = child_seq;
            let mut next_inode = child_inode;
            if child_flags & D_MOUNTED != 0 {
                sample(global);
                next = self.follow_mounts(next);
                if flags & WALK_NO_XDEV != 0 && next.mnt != cur.mnt {
                    return Err(Errno::EXDEV.into());
                }
                if next.dentry != child {
                    // SAFETY: a mount's root dentry, under the guard.
                    let nd = unsafe { &*next.dentry };
                    next_seq = nd.seq.read_begin();
                    next_inode = nd.inode_ptr();
                }
            }
            cur = next;
            // SAFETY: as above.
            cur_d = unsafe { &*cur.dentry };
            cur_seq = next_seq;
            cur_inode = next_inode;
            if is_last {
                return self.finish_at(cur, cur_seq, cur_inode, flags, must_be_dir, *global);
            }
        }
    }

    /// `finish` with the walk's current position as the result.
    #[inline(always)]
    fn finish_at(
        &self,
        cur: PathPtr,
        seq: u32,
        inode: *const Inode,
        flags: u32,
        must_be_dir: bool,
        global: Option<(u32, u32)>,
    ) -> Result<Found, WalkError> {
        let dir_flag = if must_be_dir { WALK_DIRECTORY } else { 0 };
        self.finish(
            Found {
                path: cur,
                seq,
                inode,
            },
            flags | dir_flag,
            global,
        )
    }

    fn finish(&self, f: Found, flags: u32, global: Option<(u32, u32)>) -> Result<Found, WalkError> {
        if self.global_raced(global) {
            return Err(WalkError::Retry);
        }
        if flags & WALK_DIRECTORY != 0 && !f.inode.is_null() && !f.inode().is_dir() {
            return Err(Errno::ENOTDIR.into());
        }
        Ok(f)
    }

    /// One ".." step (Linux's follow_dotdot): never above `root`; at a
    /// mount's root, up through the mounts it is stacked on to its
    /// mountpoint in the parent mount, and on to that directory's parent.
    /// Reaching the root (or the namespace's top) that way stays where the
    /// walk is (choose_mountpoint finds no mountpoint), and the caller then
    /// descends into whatever is mounted there. ENOENT where the step
    /// would leave the subtree of a bind mount's root (Linux's
    /// path_connected: a directory renamed out of a bind's subtree must not
    /// become a way out of it).
    ///
    /// With openat2's flags (`resolve`): staying at the root is EXDEV for
    /// BENEATH, and leaving a mount for its parent is EXDEV for NO_XDEV.
    fn follow_dotdot(&self, root: PathPtr, cur: PathPtr, resolve: u32) -> Result<PathPtr, Errno> {
        let in_root = |at: PathPtr| {
            if resolve & WALK_BENEATH != 0 {
                Err(Errno::EXDEV)
            } else {
                Ok(at)
            }
        };
        if cur == root {
            return in_root(cur);
        }
        let mut at = cur;
        // SAFETY (all mount derefs): mounts reached by a walk are freed
        // only through the collector; the caller holds a guard.
        let mut m = unsafe { &*cur.mnt };
        if cur.dentry == m.root {
            loop {
                let (parent, mountpoint) = (m.parent_ptr(), m.mountpoint_ptr());
                // Both null at the top; one of them only while a detach
                // races this read, which the walk's mount seqcount check
                // then retries.
                if parent.is_null() || mountpoint.is_null() {
                    return in_root(cur);
                }
                let up = PathPtr {
                    mnt: parent,
                    dentry: mountpoint,
                };
                if up == root {
                    return in_root(cur);
                }
                m = unsafe { &*parent };
                at = up;
                // A mount stacked on another's root: climb on.
                if mountpoint != m.root {
                    break;
                }
            }
            if resolve & WALK_NO_XDEV != 0 {
                return Err(Errno::EXDEV);
            }
        }
        // SAFETY: as in `walk_once`.
        let parent = unsafe { &*at.dentry }.parent_ptr();
        if parent.is_null() {
            return Ok(at);
        }
        if !connected(m, parent) {
            return Err(Errno::ENOENT);
        }
        Ok(PathPtr {
            mnt: at.mnt,
            dentry: parent,
        })
    }

    /// Descends through every mount stacked on `p`.
    pub(crate) fn follow_mounts(&self, mut p: PathPtr) -> PathPtr {
        loop {
            let child = self.mounts.lookup(p.mnt, p.dentry);
            if child.is_null() {
                return p;
            }
            // SAFETY: the caller holds a guard; mounts are retired.
            p = PathPtr {
                mnt: child,
                dentry: unsafe { &*child }.root,
            };
        }
    }
}

/// pick_link's atime: a symlink followed is accessed through the mount
/// the link is on (`mnt_flags`). Linux's RCU walk cannot write the time,
/// so under RESOLVE_CACHED (`resolve`) a due update is EAGAIN.
pub(crate) fn follow_accessed(link: &Inode, mnt_flags: u32, resolve: u32) -> SysResult<()> {
    if resolve & WALK_CACHED != 0 && link.atime_update_due(mnt_flags).is_some() {
        return Err(Errno::EAGAIN);
    }
    link.touch_atime(mnt_flags);
    Ok(())
}

/// Whether a walk at `cur` may jump to `root` for an absolute symlink
/// under openat2's flags (Linux's nd_jump_root): never beneath a dirfd,
/// and without crossing mounts only from the root's mount, once the walk
/// knows its root. Linux's walk learns the root lazily (set_root: at an
/// absolute path, a "..", a jump, or from the start when scoped); before
/// that, its RESOLVE_NO_XDEV check compares the walk's mount with none and
/// refuses every jump. `root_known` says whether that happened.
pub(crate) fn symlink_jump_allowed(
    resolve: u32,
    cur: PathPtr,
    root: PathPtr,
    root_known: bool,
) -> SysResult<()> {
    if resolve & WALK_BENEATH != 0
        || (resolve & WALK_NO_XDEV != 0 && (!root_known || cur.mnt != root.mnt))
    {
        return Err(Errno::EXDEV);
    }
    Ok(())
}

/// path_connected: `dentry` is within the subtree `m` shows. Always, for
/// a mount of its filesystem's root; for a bind of a directory, only if
/// the directory is `dentry` or one of its ancestors. Caller holds a guard
/// (a dentry keeps its parent allocated) and validates the rename
/// seqcount after.
pub(crate) fn connected(m: &Mount, dentry: *const Dentry) -> bool {
    // SAFETY: a mount keeps its root dentry referenced.
    if unsafe { &*m.root }.is_root() {
        return true;
    }
    let mut p = dentry;
    while !p.is_null() {
        if p == m.root {
            return true;
        }
        // SAFETY: as above: each dentry keeps its parent allocated.
        p = unsafe { &*p }.parent_ptr();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::has_nul;

    /// The word-at-a-time NUL search agrees with a byte scan, for a NUL at
    /// every position of paths of every length around the word size
    /// (whole words, the tail word, and the zero padding past the end).
    #[test]
    fn has_nul_agrees_with_a_byte_scan() {
        for len in 0..24 {
            let clean: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(!has_nul(&clean), "len {len}");
            for at in 0..len {
                let mut p = clean.clone();
                p[at] = 0;
                assert!(has_nul(&p), "len {len}, NUL at {at}");
                // A 0x80..0xff byte before it must not hide or fake one.
                if at > 0 {
                    p[at - 1] = 0x80;
                    assert!(has_nul(&p), "len {len}, NUL at {at} after 0x80");
                }
            }
            let high: Vec<u8> = (0..len).map(|i| 0x80 | i as u8).collect();
            assert!(!has_nul(&high), "len {len}, high bytes");
        }
    }
}
