//! Extended attributes of the model: setxattr, getxattr, listxattr,
//! removexattr and their `l` and `f` forms, with tmpfs's namespaces.
//!
//! Invariants:
//! - checks fail in Linux's order: the syscall entry's flags, name (ERANGE)
//!   and size (E2BIG); the target (walk or descriptor); for a change, a
//!   read-only mount (EROFS, mnt_want_write); xattr_permission
//!   (for a change, EPERM first on an immutable or append-only inode; then
//!   EPERM/ENODATA for the namespace rules, EACCES from the mode bits, no
//!   check at all for `system.*`); then the handler lookup (EINVAL for a
//!   bare prefix, EOPNOTSUPP for `system.*` and unknown prefixes), except
//!   for the two POSIX ACL names, which go to the node's ACLs (`set_acl`:
//!   no flags, an empty value removes, listed first);
//! - `user.*`, `trusted.*` and `security.*` values live in the inode
//!   (`Node::xattrs`), so hard links share them and they die with it;
//! - `trusted.*` names are listed for root only; a change sets ctime.

use crate::acl;
use crate::node::Node;
use crate::perm::{owner_or_root, permission, MAY_READ, MAY_WRITE};
use crate::state::{now, Loc, Pid, State};
use crate::walk::Ctx;
use vfscale::abi::*;
use vfscale::{Cred, Fd};

/// Where an xattr call finds its inode.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// A path, following a final symlink or not.
    Path(&'a [u8], bool),
    /// A descriptor; `at_fdcwd_is_cwd`: fsetxattr and fgetxattr (Linux
    /// 6.13+) take AT_FDCWD as the working directory, flistxattr and
    /// fremovexattr look every fd up as a file.
    Fd(Fd, bool),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Space {
    User,
    Trusted,
    Security,
    System,
    Other,
}

fn space_of(name: &[u8]) -> Space {
    for (prefix, space) in [
        (&b"user."[..], Space::User),
        (b"trusted.", Space::Trusted),
        (b"security.", Space::Security),
        (b"system.", Space::System),
    ] {
        if name.starts_with(prefix) {
            return space;
        }
    }
    Space::Other
}

/// The name as the syscall imports it: cut at a NUL, 1..=255 bytes.
fn check_name(name: &[u8]) -> SysResult<&[u8]> {
    let name = match name.iter().position(|&b| b == 0) {
        Some(i) => &name[..i],
        None => name,
    };
    if name.is_empty() || name.len() > XATTR_NAME_MAX {
        return Err(Errno::ERANGE);
    }
    Ok(name)
}

/// The handler lookup after the permission check.
fn stored_space(name: &[u8], space: Space) -> SysResult<()> {
    match space {
        Space::User | Space::Trusted | Space::Security => {
            // Nothing after the prefix (the first dot ends it).
            if name.iter().position(|&b| b == b'.').map(|i| i + 1) == Some(name.len()) {
                Err(Errno::EINVAL)
            } else {
                Ok(())
            }
        }
        Space::System | Space::Other => Err(Errno::EOPNOTSUPP),
    }
}

/// Linux's xattr_permission, with cap_inode_setxattr for `security.*`:
/// first (may_write_xattr) no change at all to an immutable or
/// append-only inode's attributes, in any namespace, ACLs included.
fn xattr_permission(cred: &Cred, node: &Node, space: Space, write: bool) -> SysResult<()> {
    if write && node.is_protected() {
        return Err(Errno::EPERM);
    }
    match space {
        Space::Security => {
            return if write && !cred.is_root() {
                Err(Errno::EPERM)
            } else {
                Ok(())
            };
        }
        Space::System => return Ok(()),
        Space::Trusted => {
            return match (cred.is_root(), write) {
                (true, _) => Ok(()),
                (false, true) => Err(Errno::EPERM),
                (false, false) => Err(Errno::ENODATA),
            };
        }
        Space::User => {
            if !node.is_reg() && !node.is_dir() {
                return Err(if write { Errno::EPERM } else { Errno::ENODATA });
            }
            if node.is_dir() && node.mode & S_ISVTX != 0 && write && !owner_or_root(cred, node) {
                return Err(Errno::EPERM);
            }
        }
        Space::Other => {}
    }
    permission(cred, node, if write { MAY_WRITE } else { MAY_READ })
}

/// The size for an empty buffer, else the bytes (ERANGE if they do not fit).
fn copy_out(v: &[u8], buf: &mut [u8]) -> SysResult<usize> {
    if buf.is_empty() {
        return Ok(v.len());
    }
    if v.len() > buf.len() {
        return Err(Errno::ERANGE);
    }
    buf[..v.len()].copy_from_slice(v);
    Ok(v.len())
}

impl State {
    /// The inode an xattr call works on, with the mount it was reached
    /// through (whose write access a change needs).
    fn xattr_target(&mut self, ctx: &Ctx, pid: Pid, at: Target<'_>) -> SysResult<Loc> {
        match at {
            Target::Path(path, follow) => self.resolve_at(ctx, AT_FDCWD, path, follow, false),
            Target::Fd(AT_FDCWD, true) => self.resolve_at(ctx, AT_FDCWD, b"", true, true),
            Target::Fd(fd, _) => {
                let f = self.fd_get(pid, fd)?;
                Ok(self.file(f).loc)
            }
        }
    }

    pub fn sys_setxattr(
        &mut self,
        pid: Pid,
        at: Target<'_>,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        let name = check_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(Errno::E2BIG);
        }
        let ctx = self.ctx(pid);
        let loc = self.xattr_target(&ctx, pid, at)?;
        // mnt_want_write (or _file) before do_setxattr.
        self.want_write(loc.mnt)?;
        let id = loc.node;
        let space = space_of(name);
        if name == acl::ACCESS || name == acl::DEFAULT {
            // do_set_acl reads the value before vfs_set_acl checks
            // anything (an empty one removes the ACL).
            let new = match value {
                [] => None,
                v => acl::decode(v)?,
            };
            xattr_permission(&ctx.cred, self.node(id), space, true)?;
            return self.set_acl(&ctx.cred, id, name, new);
        }
        xattr_permission(&ctx.cred, self.node(id), space, true)?;
        stored_space(name, space)?;
        let n = self.node_mut(id);
        let exists = n.xattrs.contains_key(name);
        if flags & XATTR_CREATE != 0 && exists {
            return Err(Errno::EEXIST);
        }
        if flags & XATTR_REPLACE != 0 && !exists {
            return Err(Errno::ENODATA);
        }
        n.xattrs.insert(name.to_vec(), value.to_vec());
        n.ctime = now();
        Ok(())
    }

    pub fn sys_getxattr(
        &mut self,
        pid: Pid,
        at: Target<'_>,
        name: &[u8],
        buf: &mut [u8],
    ) -> SysResult<usize> {
        let name = check_name(name)?;
        let ctx = self.ctx(pid);
        let id = self.xattr_target(&ctx, pid, at)?.node;
        let space = space_of(name);
        xattr_permission(&ctx.cred, self.node(id), space, false)?;
        let n = self.node(id);
        if name == acl::ACCESS || name == acl::DEFAULT {
            if n.is_symlink() {
                return Err(Errno::EOPNOTSUPP);
            }
            let a = if name == acl::ACCESS {
                &n.access_acl
            } else {
                &n.default_acl
            };
            return copy_out(&acl::encode(a.as_ref().ok_or(Errno::ENODATA)?), buf);
        }
        stored_space(name, space)?;
        let v = n.xattrs.get(name).ok_or(Errno::ENODATA)?;
        copy_out(v, buf)
    }

    pub fn sys_listxattr(&mut self, pid: Pid, at: Target<'_>, buf: &mut [u8]) -> SysResult<usize> {
        let ctx = self.ctx(pid);
        let id = self.xattr_target(&ctx, pid, at)?.node;
        let mut list = Vec::new();
        let n = self.node(id);
        for (name, present) in [
            (acl::ACCESS, n.access_acl.is_some()),
            (acl::DEFAULT, n.default_acl.is_some()),
        ] {
            if present {
                list.extend_from_slice(name);
                list.push(0);
            }
        }
        // Descending byte order (Linux 6.18's tmpfs).
        for k in n.xattrs.keys().rev() {
            if !ctx.cred.is_root() && k.starts_with(b"trusted.") {
                continue;
            }
            list.extend_from_slice(k);
            list.push(0);
        }
        if list.len() > XATTR_LIST_MAX {
            return Err(Errno::E2BIG);
        }
        copy_out(&list, buf)
    }

    pub fn sys_removexattr(&mut self, pid: Pid, at: Target<'_>, name: &[u8]) -> SysResult<()> {
        let name = check_name(name)?;
        let ctx = self.ctx(pid);
        let loc = self.xattr_target(&ctx, pid, at)?;
        // mnt_want_write (or _file) before removexattr.
        self.want_write(loc.mnt)?;
        let id = loc.node;
        let space = space_of(name);
        xattr_permission(&ctx.cred, self.node(id), space, true)?;
        if name == acl::ACCESS || name == acl::DEFAULT {
            return self.set_acl(&ctx.cred, id, name, None);
        }
        stored_space(name, space)?;
        let n = self.node_mut(id);
        n.xattrs.remove(name).ok_or(Errno::ENODATA)?;
        n.ctime = now();
        Ok(())
    }

    /// Sets (Some) or removes (None) the ACL `name` names (the value
    /// decoded by the caller): a symlink has none (EOPNOTSUPP); a default
    /// ACL on a non-directory is EACCES to set and nothing to remove; the
    /// owner or root only (EPERM); then it must be well-formed (EINVAL).
    /// An access ACL sets the mode's rwx bits and is dropped when they say
    /// it all; either change of an access ACL drops S_ISGID for a caller
    /// outside the group, and any change sets ctime.
    fn set_acl(
        &mut self,
        cred: &Cred,
        id: crate::node::NodeId,
        name: &[u8],
        new: Option<acl::Acl>,
    ) -> SysResult<()> {
        let n = self.node(id);
        if n.is_symlink() {
            return Err(Errno::EOPNOTSUPP);
        }
        let access = name == acl::ACCESS;
        if !access && !n.is_dir() {
            return if new.is_some() {
                Err(Errno::EACCES)
            } else {
                Ok(())
            };
        }
        if !owner_or_root(cred, n) {
            return Err(Errno::EPERM);
        }
        if let Some(a) = &new {
            acl::check(a)?;
        }
        let keep_sgid = cred.is_root() || cred.in_group(n.gid);
        let n = self.node_mut(id);
        if access {
            if let Some(a) = &new {
                n.mode = (n.mode & !0o777) | acl::mode_bits(a);
            }
            if !keep_sgid {
                n.mode &= !S_ISGID;
            }
            n.access_acl = new.filter(|a| !acl::mode_says_all(a));
        } else {
            n.default_acl = new;
        }
        n.ctime = now();
        Ok(())
    }
}
