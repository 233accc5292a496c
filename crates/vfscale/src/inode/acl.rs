//! An inode's POSIX ACLs (tmpfs's, Linux's simple_set_acl and friends):
//! permission checks that consult them, setting, reading and removing
//! them through the `system.posix_acl_*` attribute names, chmod keeping
//! the access ACL in step with the mode, and a new inode's ACLs inherited
//! from its directory's default ACL.
//!
//! Invariants:
//! - The ACLs live in the superblock's `AclTable`, a lock-free map from
//!   (inode number, kind) to the checked byte form of cred/acl.rs;
//!   `MODE_ACL_BITS` in the inode's mode word say which exist. Readers
//!   (permission checks, getxattr, creates reading a default ACL) take no
//!   lock and write no shared memory: the map's reads run under its own
//!   epoch guard, and a replaced or removed value is freed only after
//!   every guard that could see it is gone.
//! - Writers of one inode's ACLs (setxattr/removexattr of an ACL name, a
//!   chmod of an inode with an access ACL) hold the table's writer lock
//!   for that inode (a striped mutex; lock order: that mutex, then the
//!   attribute write section; nothing is taken inside either besides).
//!   A value is stored before the write section that sets its bit and
//!   removed after the one that clears it, so a reader that saw a bit
//!   finds the ACL unless a removal overtook it; it then uses the mode
//!   bits, the outcome of a check ordered after the removal. A new
//!   inode's ACLs are stored before its name is published.
//! - An access ACL's owner, mask-or-group and other entries equal the
//!   mode's bits whenever no writer holds the inode's writer lock: setting
//!   one sets the mode from it (in its write section, from the ACL alone),
//!   and chmod rewrites it under the writer lock after finding its bit in
//!   its own write section.
//! - An inode's entries go when it is freed (`forget`, called only for an
//!   inode with bits); inode numbers are not reused within a superblock.

use super::flags::MODE_IMMUTABLE;
use super::Inode;
use crate::abi::*;
use crate::cred::acl::{self, AclEntry, AclKind, MODE_ACCESS_ACL, MODE_ACL_BITS, MODE_DEFAULT_ACL};
use crate::cred::perm::{may_access, root_overrides, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::cred::Cred;
use crate::fs::SuperBlock;
use crate::sync::lock::{Mutex, MutexGuard};

const WRITER_STRIPES: usize = 16;

/// A superblock's POSIX ACLs (see the module comment), allocated at the
/// first ACL stored: the map and its locks take ~18 KB, which every
/// tmpfs instance (each mount) would pay otherwise (7.6 KB per instance
/// before ACLs, 25.8 KB with an eager map). Until then nothing reads it:
/// readers come only for inodes whose mode has an ACL bit, set after a
/// store.
#[derive(Default)]
pub(crate) struct AclTable(std::sync::OnceLock<Box<AclMap>>);

struct AclMap {
    map: papaya::HashMap<(u64, AclKind), Box<[u8]>>,
    writers: [Mutex<()>; WRITER_STRIPES],
}

impl AclTable {
    fn map(&self) -> &AclMap {
        self.0.get_or_init(|| {
            Box::new(AclMap {
                map: papaya::HashMap::new(),
                writers: std::array::from_fn(|_| Mutex::new(())),
            })
        })
    }

    /// Runs `f` on inode `ino`'s `kind` ACL, if it has one. Lock-free.
    fn read<R>(&self, ino: u64, kind: AclKind, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.0.get()?.map.pin().get(&(ino, kind)).map(|v| f(v))
    }

    /// The writer lock of inode `ino`'s ACLs.
    fn lock_writer(&self, ino: u64) -> MutexGuard<'_, ()> {
        self.map().writers[(ino ^ (ino >> 7)) as usize % WRITER_STRIPES].lock()
    }

    fn store(&self, ino: u64, kind: AclKind, value: Box<[u8]>) {
        self.map().map.pin().insert((ino, kind), value);
    }

    fn remove(&self, ino: u64, kind: AclKind) {
        if let Some(m) = self.0.get() {
            m.map.pin().remove(&(ino, kind));
        }
    }

    /// Drops inode `ino`'s ACLs (it is being freed; `mode` its last mode
    /// word, whose bits say which there are).
    #[inline]
    pub(crate) fn forget(&self, ino: u64, mode: u32) {
        if mode & MODE_ACL_BITS != 0 {
            self.forget_some(ino, mode);
        }
    }

    #[cold]
    #[inline(never)]
    fn forget_some(&self, ino: u64, mode: u32) {
        for kind in [AclKind::Access, AclKind::Default] {
            if mode & kind.mode_bit() != 0 {
                self.remove(ino, kind);
            }
        }
    }
}

impl Inode {
    fn acl_table(&self) -> &AclTable {
        // SAFETY: an inode's superblock outlives it.
        &unsafe { &*self.sb }.acls
    }

    /// Linux's generic_permission from a (mode, uid, gid) copy of this
    /// inode's `perm_attr` that the caller read (see `may_write_dir_as`):
    /// the mode bits, or the access ACL when the mode says there is one.
    /// Always inlined: out of line, the call costs an open more than the
    /// check (session 35: 23 instructions a call against 14 inline).
    #[inline(always)]
    pub fn permission_as(
        &self,
        cred: &Cred,
        (mode, uid, gid): (u32, u32, u32),
        mask: u32,
    ) -> Result<(), Errno> {
        // inode_permission's sb_permission (writing a regular file, a
        // directory or a symlink of a read-only instance), then
        // IS_IMMUTABLE, both before the bits.
        if mask & MAY_WRITE != 0 && (mode & MODE_IMMUTABLE != 0 || self.on_readonly_instance()) {
            return Err(self.write_refused(mode));
        }
        if mode & MODE_ACCESS_ACL == 0 {
            return may_access(cred, mode, uid, gid, mask);
        }
        self.permission_with_acl(cred, mode, uid, gid, mask)
    }

    /// Why a write to an inode that is immutable (by `mode`) or on a
    /// read-only instance is refused: the instance first (out of line, so
    /// the permission check stays small enough to inline). Only an
    /// immutable inode may be EPERM: the instance may have turned
    /// writable again since the caller saw it read-only, and that refusal
    /// stays EROFS.
    #[cold]
    #[inline(never)]
    fn write_refused(&self, mode: u32) -> Errno {
        if mode & MODE_IMMUTABLE == 0 || self.on_readonly_instance() {
            Errno::EROFS
        } else {
            Errno::EPERM
        }
    }

    /// The instance is read-only and this is a regular file, a directory
    /// or a symlink (sb_permission's test).
    #[inline]
    fn on_readonly_instance(&self) -> bool {
        // SAFETY: an inode's superblock outlives it.
        unsafe { &*self.sb }.is_readonly()
            && matches!(self.file_type(), S_IFREG | S_IFDIR | S_IFLNK)
    }

    /// `permission_as` with a fresh read of the attributes.
    #[inline]
    pub fn permission(&self, cred: &Cred, mask: u32) -> Result<(), Errno> {
        self.permission_as(cred, self.perm_attr(), mask)
    }

    /// acl_permission_check with an ACL: the owner's bits come from the
    /// mode; anyone else is judged by the ACL unless the mode's group class
    /// (the ACL's mask) is empty, in which case the mode's group and other
    /// bits answer, as without one. Root's override is tried first: it
    /// grants whatever the ACL would have refused, so the answer is the
    /// same without reading the table.
    #[cold]
    #[inline(never)]
    fn permission_with_acl(
        &self,
        cred: &Cred,
        mode: u32,
        uid: u32,
        gid: u32,
        mask: u32,
    ) -> Result<(), Errno> {
        let mask = mask & (MAY_READ | MAY_WRITE | MAY_EXEC);
        if cred.fsuid == uid || mode & S_IRWXG == 0 || root_overrides(cred, mode, mask) {
            return may_access(cred, mode, uid, gid, mask);
        }
        let verdict = self.acl_table().read(self.ino, AclKind::Access, |bytes| {
            acl::permission(bytes, cred, uid, gid, mask)
        });
        verdict.unwrap_or_else(|| may_access(cred, mode, uid, gid, mask))
    }

    /// getxattr of an ACL name on a tmpfs inode: `f` on the ACL's bytes,
    /// ENODATA if there is none, EOPNOTSUPP on a symlink (vfs_get_acl).
    pub(crate) fn read_acl<R>(
        &self,
        kind: AclKind,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Errno> {
        if s_islnk(self.file_type()) {
            return Err(Errno::EOPNOTSUPP);
        }
        self.acl_table()
            .read(self.ino, kind, f)
            .ok_or(Errno::ENODATA)
    }

    /// The ACL names this inode has, access first, each NUL-terminated
    /// (posix_acl_listxattr).
    pub(crate) fn acl_names(&self) -> Vec<u8> {
        let bits = self.perm_attr().0;
        let mut out = Vec::new();
        for kind in [AclKind::Access, AclKind::Default] {
            if bits & kind.mode_bit() != 0 {
                out.extend_from_slice(kind.name());
                out.push(0);
            }
        }
        out
    }

    /// setxattr (`value` Some) or removexattr (`None`, or a value of a bare
    /// header) of an ACL name on a tmpfs inode, after the syscall's own
    /// checks: Linux's do_set_acl, set_posix_acl and simple_set_acl, in
    /// their order. The value is parsed first (EINVAL, EOPNOTSUPP for
    /// another version); a symlink has no ACLs (EOPNOTSUPP); a default ACL
    /// on a non-directory is EACCES to set and nothing to remove; only the
    /// owner or root may change one (EPERM); then the ACL must be valid
    /// (EINVAL). Setting an access ACL sets the mode's rwx bits from it and
    /// stores nothing when those bits say it all; setting or removing one
    /// clears S_ISGID for a caller outside the file's group (not root), as
    /// chmod does. Any change sets ctime.
    pub(crate) fn set_acl(
        &self,
        cred: &Cred,
        kind: AclKind,
        value: Option<&[u8]>,
    ) -> Result<(), Errno> {
        let entries = match value {
            Some(v) => acl::parse(v)?,
            None => None,
        };
        if s_islnk(self.file_type()) {
            return Err(Errno::EOPNOTSUPP);
        }
        if kind == AclKind::Default && !self.is_dir() {
            return if entries.is_some() {
                Err(Errno::EACCES)
            } else {
                Ok(())
            };
        }
        let (_, uid, _) = self.perm_attr();
        if cred.fsuid != uid && !cred.is_root() {
            return Err(Errno::EPERM);
        }
        if let Some(e) = &entries {
            acl::check_valid(e)?;
        }
        let now = super::now();
        let table = self.acl_table();
        let _writer = table.lock_writer(self.ino);
        // An access ACL the mode bits say in full is not kept (its bits
        // still become the mode's).
        let stored = match (&entries, kind) {
            (Some(e), AclKind::Access) if !acl::equiv_mode(e, 0).1 => None,
            (Some(e), _) => Some(acl::to_bytes(e)),
            (None, _) => None,
        };
        let has = stored.is_some();
        if let Some(v) = stored {
            table.store(self.ino, kind, v);
        }
        self.update_attr(|w| {
            if kind == AclKind::Access {
                let a = w.get();
                let mut mode = match &entries {
                    Some(e) => acl::equiv_mode(e, a.mode).0,
                    None => a.mode,
                };
                if !cred.is_root() && !cred.in_group(a.gid) {
                    mode &= !S_ISGID;
                }
                w.set_mode(mode);
            }
            w.set_acl_bit(kind.mode_bit(), has);
            w.set_ctime(now);
        });
        if !has {
            table.remove(self.ino, kind);
        }
        Ok(())
    }

    /// chmod's change of the mode to `mode` (type bits ignored) at `ctime`:
    /// with an access ACL, its owner, mask-or-group and other entries
    /// follow (posix_acl_chmod), under the inode's writer lock. The ACL bit
    /// is read inside the write section, so an ACL whose setter set the
    /// bit before it is rewritten, and one set after it takes its mode
    /// from the ACL.
    pub(crate) fn chmod_with_acl(&self, mode: u32, ctime: Timespec) {
        let plain = |w: &mut super::AttrWriter<'_>| {
            w.set_mode(mode);
            w.set_ctime(ctime);
        };
        let done = self.update_attr(|w| {
            if w.acl_bits() & MODE_ACCESS_ACL != 0 {
                return false;
            }
            plain(w);
            true
        });
        if done {
            return;
        }
        let table = self.acl_table();
        let _writer = table.lock_writer(self.ino);
        // Removed meanwhile (its remover held the lock): nothing to rewrite.
        let rewritten = table.read(self.ino, AclKind::Access, |b| {
            let mut entries = owned(b);
            acl::chmod_masq(&mut entries, mode);
            acl::to_bytes(&entries)
        });
        if let Some(v) = rewritten {
            table.store(self.ino, AclKind::Access, v);
        }
        self.update_attr(plain);
    }
}

impl Inode {
    /// The invariants of this module, for the checker of a quiescent VFS
    /// (check.rs): the mode's ACL bits name exactly the stored ACLs, which
    /// are valid, a default ACL only on a directory, and an access ACL
    /// that says more than the mode bits whose base entries equal them.
    pub(crate) fn check_acls(&self) -> Result<(), String> {
        let mode = self.perm_attr().0;
        for kind in [AclKind::Access, AclKind::Default] {
            let stored = self.acl_table().read(self.ino, kind, |b| b.to_vec());
            {
                if stored.is_some() != (mode & kind.mode_bit() != 0) {
                    return Err(format!(
                        "inode {}: {kind:?} ACL bit and table disagree",
                        self.ino
                    ));
                }
                let Some(bytes) = stored else { continue };
                let entries = acl::parse(&bytes)
                    .ok()
                    .flatten()
                    .filter(|e| acl::check_valid(e).is_ok() && *bytes == *acl::to_bytes(e))
                    .ok_or_else(|| {
                        format!("inode {}: stored {kind:?} ACL is not valid", self.ino)
                    })?;
                if kind == AclKind::Default && !self.is_dir() {
                    return Err(format!(
                        "inode {}: a default ACL on a non-directory",
                        self.ino
                    ));
                }
                if kind == AclKind::Access {
                    let (equiv, not_equiv) = acl::equiv_mode(&entries, mode);
                    if equiv != mode || !not_equiv {
                        return Err(format!(
                            "inode {}: access ACL gives mode {equiv:o} ({not_equiv}), inode has {mode:o}",
                            self.ino
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The entries of a stored ACL, to edit.
fn owned(bytes: &[u8]) -> Vec<AclEntry> {
    acl::entries(bytes).collect()
}

/// What a new inode takes from its directory's default ACL
/// (posix_acl_create): its access ACL (unless the mode says it all) and,
/// for a directory, the default ACL itself. `None` when the directory has
/// none, which is nearly always: one word passed down the create path,
/// nothing allocated.
#[derive(Default)]
pub(crate) struct InheritedAcls(Option<Box<Inherited>>);

struct Inherited {
    access: Option<Box<[u8]>>,
    default: Option<Box<[u8]>>,
}

impl InheritedAcls {
    /// The mode of a new inode of `mode` (type and special bits included,
    /// after `new_inode_owner`) in `dir`, whose `perm_attr` the caller read
    /// as `dir_mode`, and the ACLs to attach: without a default ACL on the
    /// directory the mode less the umask, as before; with one, the umask is
    /// not used and the default ACL masks the mode instead. The returned
    /// mode carries the `MODE_ACL_BITS` of what is returned. Not for
    /// symlinks, which take neither ACLs nor the umask.
    #[inline]
    pub(crate) fn for_new(dir: &Inode, dir_mode: u32, mode: u32, umask: u32) -> (u32, Self) {
        debug_assert!(!s_islnk(mode));
        if dir_mode & MODE_DEFAULT_ACL == 0 {
            return (mode & !umask, InheritedAcls(None));
        }
        Self::from_default(dir, mode, umask)
    }

    #[cold]
    #[inline(never)]
    fn from_default(dir: &Inode, mode: u32, umask: u32) -> (u32, Self) {
        let inherited = dir.acl_table().read(dir.ino, AclKind::Default, |default| {
            let mut access = owned(default);
            let (mode, not_equiv) = acl::create_masq(&mut access, mode);
            let mut bits = 0;
            let mut acls = Inherited {
                access: None,
                default: None,
            };
            if not_equiv {
                acls.access = Some(acl::to_bytes(&access));
                bits |= MODE_ACCESS_ACL;
            }
            if s_isdir(mode) {
                acls.default = Some(default.into());
                bits |= MODE_DEFAULT_ACL;
            }
            (mode | bits, InheritedAcls(Some(Box::new(acls))))
        });
        // Removed since the directory's mode was read: as if before.
        inherited.unwrap_or((mode & !umask, InheritedAcls(None)))
    }

    /// Stores the ACLs for inode `ino` of `sb`, which nobody else can
    /// reach yet (its mode already carries their bits).
    #[inline]
    pub(crate) fn attach(self, sb: &SuperBlock, ino: u64) {
        if let Some(acls) = self.0 {
            acls.attach(sb, ino);
        }
    }
}

impl Inherited {
    #[cold]
    #[inline(never)]
    fn attach(self, sb: &SuperBlock, ino: u64) {
        for (kind, v) in [
            (AclKind::Access, self.access),
            (AclKind::Default, self.default),
        ] {
            if let Some(v) = v {
                sb.acls.store(ino, kind, v);
            }
        }
    }
}
