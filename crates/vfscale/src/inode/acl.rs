//! An inode's POSIX ACLs (tmpfs's, Linux's simple_set_acl and friends):
//! permission checks that consult them, setting, reading and removing
//! them through the `system.posix_acl_*` attribute names, chmod keeping
//! the access ACL in step with the mode, and a new inode's ACLs inherited
//! from its directory's default ACL.
//!
//! Invariants:
//! - The ACLs live in the superblock's attribute table (inode/xattr.rs)
//!   under their attribute names, in the checked byte form of
//!   cred/acl.rs; `MODE_ACL_BITS` in the inode's mode word say which
//!   exist. Both change together, holding the table's shard lock for the
//!   inode, inside which the attribute write section is opened (lock
//!   order: shard mutex, then `update_attr`; nothing is taken inside the
//!   write section). A new inode's ACLs are stored before its name is
//!   published, so no walk sees its bits without them.
//! - Readers take no lock for an inode without ACL bits (the permission
//!   fast path reads only `perm_attr`). A check that read a bit and then
//!   finds no ACL in the table (removed meanwhile) uses the mode bits: the
//!   outcome of a check ordered after the removal, whose mode it read.
//! - chmod, and setting an access ACL, change the mode and the ACL in one
//!   attribute write section under the shard lock, so the ACL's owner,
//!   mask-or-group and other entries always equal the mode's bits.

use super::xattr::XattrMap;
use super::Inode;
use crate::abi::*;
use crate::cred::acl::{self, AclEntry, AclKind, MODE_ACCESS_ACL, MODE_DEFAULT_ACL};
use crate::cred::perm::{may_access, root_overrides, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::cred::Cred;
use crate::fs::SuperBlock;

impl Inode {
    fn acl_table(&self) -> &super::xattr::XattrTable {
        // SAFETY: an inode's superblock outlives it.
        &unsafe { &*self.sb }.xattrs
    }

    /// Linux's generic_permission from a (mode, uid, gid) copy of this
    /// inode's `perm_attr` that the caller read (see `may_write_dir_as`):
    /// the mode bits, or the access ACL when the mode says there is one.
    #[inline]
    pub fn permission_as(
        &self,
        cred: &Cred,
        (mode, uid, gid): (u32, u32, u32),
        mask: u32,
    ) -> Result<(), Errno> {
        if mode & MODE_ACCESS_ACL == 0 {
            return may_access(cred, mode, uid, gid, mask);
        }
        self.permission_with_acl(cred, mode, uid, gid, mask)
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
        let verdict = self.acl_table().read(self.ino, |m| {
            m.get(acl::XATTR_ACCESS)
                .map(|bytes| acl::permission(bytes, cred, uid, gid, mask))
        });
        verdict.unwrap_or_else(|| may_access(cred, mode, uid, gid, mask))
    }

    /// getxattr of an ACL name on a tmpfs inode: the ACL's bytes (their
    /// length for an empty buffer; ERANGE if they do not fit), ENODATA if
    /// there is none, EOPNOTSUPP on a symlink (vfs_get_acl).
    pub(crate) fn get_acl(&self, kind: AclKind, buf: &mut [u8]) -> Result<usize, Errno> {
        if s_islnk(self.file_type()) {
            return Err(Errno::EOPNOTSUPP);
        }
        self.acl_table().read(self.ino, |m| {
            let v = m.get(kind.name()).ok_or(Errno::ENODATA)?;
            if buf.is_empty() {
                return Ok(v.len());
            }
            let out = buf.get_mut(..v.len()).ok_or(Errno::ERANGE)?;
            out.copy_from_slice(v);
            Ok(v.len())
        })
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
        self.acl_table().write(self.ino, |m| {
            self.update_attr(|w| {
                let mut stored = entries.as_deref();
                if kind == AclKind::Access {
                    let a = w.get();
                    let (mut mode, not_equiv) = match stored {
                        Some(e) => acl::equiv_mode(e, a.mode),
                        None => (a.mode, false),
                    };
                    if !not_equiv {
                        stored = None;
                    }
                    if !cred.is_root() && !cred.in_group(a.gid) {
                        mode &= !S_ISGID;
                    }
                    w.set_mode(mode);
                }
                store(m, w, kind, stored);
                w.set_ctime(now);
            });
        });
        Ok(())
    }

    /// chmod's change of the mode to `mode` (type bits ignored) at `ctime`:
    /// with an access ACL, its owner, mask-or-group and other entries
    /// follow (posix_acl_chmod), under the table's shard lock. The ACL bit
    /// is read again inside the write section, so an ACL set meanwhile is
    /// not missed.
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
        self.acl_table().write(self.ino, |m| {
            self.update_attr(|w| {
                plain(w);
                if let Some(mut entries) = m.get(acl::XATTR_ACCESS).map(|b| owned(b)) {
                    acl::chmod_masq(&mut entries, mode);
                    m.insert(acl::XATTR_ACCESS.into(), acl::to_bytes(&entries));
                }
            })
        });
    }
}

impl Inode {
    /// The invariants of this module, for the checker of a quiescent VFS
    /// (check.rs): the mode's ACL bits name exactly the stored ACLs, which
    /// are valid, a default ACL only on a directory, and an access ACL
    /// that says more than the mode bits whose base entries equal them.
    pub(crate) fn check_acls(&self) -> Result<(), String> {
        let mode = self.perm_attr().0;
        self.acl_table().read(self.ino, |m| {
            for kind in [AclKind::Access, AclKind::Default] {
                let stored = m.get(kind.name());
                if stored.is_some() != (mode & kind.mode_bit() != 0) {
                    return Err(format!(
                        "inode {}: {kind:?} ACL bit and table disagree",
                        self.ino
                    ));
                }
                let Some(bytes) = stored else { continue };
                let entries = acl::parse(bytes)
                    .ok()
                    .flatten()
                    .filter(|e| acl::check_valid(e).is_ok() && **bytes == *acl::to_bytes(e))
                    .ok_or_else(|| format!("inode {}: stored {kind:?} ACL is not valid", self.ino))?;
                if kind == AclKind::Default && !self.is_dir() {
                    return Err(format!("inode {}: a default ACL on a non-directory", self.ino));
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
            Ok(())
        })
    }
}

/// The entries of a stored ACL, to edit.
fn owned(bytes: &[u8]) -> Vec<AclEntry> {
    acl::entries(bytes).collect()
}

/// Stores (or, for `None`, drops) the `kind` ACL of the inode whose map
/// `m` is and sets its mode bit to match; the caller holds the shard lock
/// and the write section.
fn store(m: &mut XattrMap, w: &mut super::AttrWriter<'_>, kind: AclKind, acl: Option<&[AclEntry]>) {
    match acl {
        Some(e) => {
            m.insert(kind.name().into(), acl::to_bytes(e));
        }
        None => {
            m.remove(kind.name());
        }
    }
    w.set_acl_bit(kind.mode_bit(), acl.is_some());
}

/// What a new inode takes from its directory's default ACL
/// (posix_acl_create): its access ACL (unless the mode says it all) and,
/// for a directory, the default ACL itself. Empty when the directory has
/// none, which is nearly always: then nothing is allocated.
#[derive(Default)]
pub(crate) struct InheritedAcls {
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
    pub(crate) fn for_new(dir: &Inode, dir_mode: u32, mode: u32, umask: u32) -> (u32, Self) {
        debug_assert!(!s_islnk(mode));
        if dir_mode & MODE_DEFAULT_ACL == 0 {
            return (mode & !umask, InheritedAcls::default());
        }
        let inherited = dir.acl_table().read(dir.ino, |m| {
            m.get(acl::XATTR_DEFAULT).map(|default| {
                let mut access = owned(default);
                let (mode, not_equiv) = acl::create_masq(&mut access, mode);
                let mut acls = InheritedAcls::default();
                let mut bits = 0;
                if not_equiv {
                    acls.access = Some(acl::to_bytes(&access));
                    bits |= MODE_ACCESS_ACL;
                }
                if s_isdir(mode) {
                    acls.default = Some(default.clone());
                    bits |= MODE_DEFAULT_ACL;
                }
                (mode | bits, acls)
            })
        });
        // Removed since the directory's mode was read: as if before.
        inherited.unwrap_or((mode & !umask, InheritedAcls::default()))
    }

    /// Stores the ACLs for inode `ino` of `sb`, which nobody else can
    /// reach yet (its mode already carries their bits).
    pub(crate) fn attach(self, sb: &SuperBlock, ino: u64) {
        if self.access.is_none() && self.default.is_none() {
            return;
        }
        sb.xattrs.write(ino, |m| {
            for (kind, v) in [
                (AclKind::Access, self.access),
                (AclKind::Default, self.default),
            ] {
                if let Some(v) = v {
                    m.insert(kind.name().into(), v);
                }
            }
        });
    }
}
