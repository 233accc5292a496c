//! Extended attributes: setxattr, getxattr, listxattr, removexattr and
//! their `l` (no symlink following) and `f` (descriptor) variants.
//!
//! tmpfs semantics: `user.*` (regular files and directories only),
//! `trusted.*` (root only; hidden from others' listings) and `security.*`
//! (anyone reads, root writes) are stored; `system.posix_acl_access` and
//! `system.posix_acl_default` are the inode's POSIX ACLs (inode/acl.rs:
//! no xattr_permission check, listed first); other `system.*` names and
//! unknown namespaces are EOPNOTSUPP. Checks run in Linux's order: name and
//! size (ERANGE, E2BIG), then xattr_permission (EPERM / ENODATA for the
//! namespace rules, EACCES from the mode bits), then the namespace itself.
//! Values live in the superblock's table (inode/xattr.rs) under its shard
//! lock; a change sets ctime. On a backend-served instance (passthrough)
//! they live on the host file instead: the same checks, then
//! `Filesystem::xattr` (system.* stays EOPNOTSUPP there too: the VFS's
//! xattr_permission checks nothing for it, so routing it would let any
//! caller write the host's ACLs with the vfscale process's rights).

use super::Process;
use crate::abi::*;
use crate::cred::acl::{self, AclKind};
use crate::cred::perm::{MAY_READ, MAY_WRITE};
use crate::cred::Cred;
use crate::dcache::dentry::Dentry;
use crate::fs::XattrCall;
use crate::inode::flags::MODE_PROTECTED;
use crate::inode::{now, Inode};
use crate::mount::Mount;

/// Where an xattr call finds its inode.
#[derive(Clone, Copy)]
pub(crate) enum XattrAt<'a> {
    /// A path, following a final symlink or not.
    Path(&'a [u8], bool),
    Fd(Fd),
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Space {
    User,
    Trusted,
    Security,
    /// `system.*`: the two POSIX ACL names on tmpfs (`AclKind`), else
    /// EOPNOTSUPP; the VFS applies no permission check to it.
    System,
    /// No known prefix.
    Unsupported,
}

/// The namespace of `name` by its prefix, as xattr_permission matches it
/// (an empty suffix is refused later, by the handler lookup).
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
    Space::Unsupported
}

/// The handler lookup after the permission check (xattr_resolve_name):
/// tmpfs stores user, trusted and security names; a name that is only a
/// prefix is EINVAL; anything else EOPNOTSUPP.
fn stored_space(name: &[u8], space: Space) -> SysResult<()> {
    match space {
        Space::User | Space::Trusted | Space::Security => {
            let prefix = name.iter().position(|&b| b == b'.').map_or(0, |i| i + 1);
            if prefix == name.len() {
                Err(Errno::EINVAL)
            } else {
                Ok(())
            }
        }
        Space::System | Space::Unsupported => Err(Errno::EOPNOTSUPP),
    }
}

/// Where the attributes of an inode live. Pipes, sockets and eventfds are
/// on Linux's pipefs, sockfs and anon_inodefs, which store none: after
/// the permission check every name is EOPNOTSUPP, except a socket's
/// read-only `system.sockprotoname` (its protocol's name), which is also
/// its only listed name.
#[derive(Clone, Copy)]
pub(crate) enum Store {
    Tmpfs,
    Nothing,
    Socket(&'static [u8]),
}

/// The one attribute of a socket (sockfs).
const SOCKPROTONAME: &[u8] = b"system.sockprotoname";

fn store_of(file: &crate::file::OpenFile) -> Store {
    use crate::file::{FMODE_PIPE, FMODE_SHARED_ANON, FMODE_SOCKET};
    if file.fmode & FMODE_SOCKET != 0 {
        // SAFETY: FMODE_SOCKET says `private` is the file's socket, which
        // its reference keeps alive (anon/mod.rs).
        let sock = unsafe { &*(file.private as *const crate::anon::socket::Socket) };
        // unix_create1: stream sockets use unix_stream_proto, the others
        // unix_dgram_proto; the dentry is named after the proto.
        Store::Socket(if sock.socket_type() == SOCK_STREAM {
            b"UNIX-STREAM\0"
        } else {
            b"UNIX\0"
        })
    } else if file.fmode & (FMODE_PIPE | FMODE_SHARED_ANON) != 0 {
        Store::Nothing
    } else {
        Store::Tmpfs
    }
}

/// setxattr/removexattr on an inode with no attribute store.
/// sockfs also has a `security.*` handler that leaves the work to an LSM:
/// without one, its answer is EAGAIN, which setxattr turns into EOPNOTSUPP
/// (after asking the LSM's setsecurity) and removexattr returns as is
/// (checked against Linux 6.18).
/// `value` is None for a removal.
fn change_without_store(
    cred: &Cred,
    inode: &Inode,
    store: Store,
    name: &[u8],
    value: Option<&[u8]>,
) -> SysResult<()> {
    let remove = value.is_none();
    let name = check_name(name)?;
    let space = space_of(name);
    // The eventfd inode (no type bits) is S_PRIVATE on Linux: the security
    // hooks, and with them the CAP_SYS_ADMIN check of security.*, are
    // skipped.
    let private = inode.file_type() == 0;
    if !(private && space == Space::Security) {
        xattr_permission(cred, inode, space, true)?;
    }
    if let Some(kind) = AclKind::of_name(name) {
        return change_acl(cred, inode, store, kind, value);
    }
    match store {
        Store::Socket(_) if space == Space::Security => {
            stored_space(name, space)?;
            Err(if remove {
                Errno::EAGAIN
            } else {
                Errno::EOPNOTSUPP
            })
        }
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// getxattr on an inode with no attribute store.
fn get_without_store(
    cred: &Cred,
    inode: &Inode,
    store: Store,
    name: &[u8],
    buf: &mut [u8],
) -> SysResult<usize> {
    let space = space_of(name);
    xattr_permission(cred, inode, space, false)?;
    match store {
        Store::Socket(proto) if name == SOCKPROTONAME => copy_out(proto, buf),
        Store::Socket(_) if space == Space::Security => {
            stored_space(name, space)?;
            Err(Errno::EOPNOTSUPP)
        }
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// listxattr on an inode with no attribute store.
fn list_without_store(store: Store, buf: &mut [u8]) -> SysResult<usize> {
    match store {
        Store::Socket(_) => {
            let mut name = SOCKPROTONAME.to_vec();
            name.push(0);
            copy_out(&name, buf)
        }
        _ => Ok(0),
    }
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

/// Name checks of the syscall entry (strncpy_from_user into a 256-byte
/// buffer): empty or too long is ERANGE, a NUL inside is as if truncated.
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

/// Linux's xattr_permission (and, for ACLs, may_write_xattr): no change
/// to an immutable or append-only inode's attributes, in any namespace.
fn xattr_permission(cred: &Cred, inode: &Inode, space: Space, write: bool) -> SysResult<()> {
    let (mode, uid, gid) = inode.perm_attr();
    if write && mode & MODE_PROTECTED != 0 {
        return Err(Errno::EPERM);
    }
    match space {
        Space::Security => {
            // No LSM: reads are free; writes need CAP_SYS_ADMIN
            // (cap_inode_setxattr).
            return if write && !cred.is_root() {
                Err(Errno::EPERM)
            } else {
                Ok(())
            };
        }
        Space::Trusted => {
            return match (cred.is_root(), write) {
                (true, _) => Ok(()),
                (false, true) => Err(Errno::EPERM),
                (false, false) => Err(Errno::ENODATA),
            };
        }
        Space::User => {
            let ty = mode & S_IFMT;
            if ty != S_IFREG && ty != S_IFDIR {
                return Err(if write { Errno::EPERM } else { Errno::ENODATA });
            }
            if ty == S_IFDIR && mode & S_ISVTX != 0 && write && !cred.is_root() && cred.fsuid != uid
            {
                return Err(Errno::EPERM);
            }
        }
        // No restriction from the VFS on system.*.
        Space::System => return Ok(()),
        Space::Unsupported => {}
    }
    inode.permission_as(
        cred,
        (mode, uid, gid),
        if write { MAY_WRITE } else { MAY_READ },
    )
}

/// setxattr (`value` Some) or removexattr of an ACL name on an inode whose
/// attributes live in `store`. Linux parses the value before it asks the
/// filesystem, so a malformed one is EINVAL even where the answer is
/// EOPNOTSUPP: anonymous objects (pipefs, sockfs, anon_inodefs have no
/// ACLs) and passthrough inodes (whose host ACLs vfscale does not route;
/// see the module comment).
fn change_acl(
    cred: &Cred,
    inode: &Inode,
    store: Store,
    kind: AclKind,
    value: Option<&[u8]>,
) -> SysResult<()> {
    // An empty value is no ACL: a removal (do_set_acl parses only a
    // non-empty one).
    let value = value.filter(|v| !v.is_empty());
    if matches!(store, Store::Tmpfs) && super::backend_names::backend_of(inode).is_none() {
        return inode.set_acl(cred, kind, value);
    }
    if let Some(v) = value {
        acl::parse(v)?;
    }
    Err(Errno::EOPNOTSUPP)
}

/// setxattr on a found inode.
pub(crate) fn set_inode(
    cred: &Cred,
    inode: &Inode,
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
    let space = space_of(name);
    let acl_kind = AclKind::of_name(name);
    // do_set_acl parses a value before vfs_set_acl's checks.
    if acl_kind.is_some() && !value.is_empty() {
        acl::parse(value)?;
    }
    xattr_permission(cred, inode, space, true)?;
    if let Some(kind) = acl_kind {
        // XATTR_CREATE and XATTR_REPLACE mean nothing to an ACL (do_set_acl).
        return change_acl(cred, inode, Store::Tmpfs, kind, Some(value));
    }
    stored_space(name, space)?;
    if let Some(sb) = super::backend_names::backend_of(inode) {
        return sb
            .fs
            .xattr(sb, inode, XattrCall::Set(name, value, flags))
            .map(drop);
    }
    // SAFETY: an inode's superblock outlives it.
    let sb = unsafe { &*inode.sb };
    sb.xattrs.write(inode.ino(), |m| {
        let exists = m.contains_key(name);
        if flags & XATTR_CREATE != 0 && exists {
            return Err(Errno::EEXIST);
        }
        if flags & XATTR_REPLACE != 0 && !exists {
            return Err(Errno::ENODATA);
        }
        m.insert(name.into(), value.into());
        Ok(())
    })?;
    let t = now();
    inode.update_attr(|a| a.set_ctime(t));
    Ok(())
}

/// getxattr on a found inode: the value's length when `buf` is empty, else
/// the bytes copied (ERANGE if `buf` is too small).
pub(crate) fn get_inode(
    cred: &Cred,
    inode: &Inode,
    name: &[u8],
    buf: &mut [u8],
) -> SysResult<usize> {
    let name = check_name(name)?;
    let space = space_of(name);
    xattr_permission(cred, inode, space, false)?;
    if let Some(kind) = AclKind::of_name(name) {
        if super::backend_names::backend_of(inode).is_some() {
            return Err(Errno::EOPNOTSUPP);
        }
        return inode.read_acl(kind, |v| copy_out(v, buf))?;
    }
    stored_space(name, space)?;
    if let Some(sb) = super::backend_names::backend_of(inode) {
        return sb.fs.xattr(sb, inode, XattrCall::Get(name, buf));
    }
    // SAFETY: an inode's superblock outlives it.
    let sb = unsafe { &*inode.sb };
    sb.xattrs.read(inode.ino(), |m| {
        let v = m.get(name).ok_or(Errno::ENODATA)?;
        if buf.is_empty() {
            return Ok(v.len());
        }
        if v.len() > buf.len() {
            return Err(Errno::ERANGE);
        }
        buf[..v.len()].copy_from_slice(v);
        Ok(v.len())
    })
}

/// listxattr on a found inode: NUL-terminated names (trusted.* only for
/// root); the list's length when `buf` is empty.
pub(crate) fn list_inode(cred: &Cred, inode: &Inode, buf: &mut [u8]) -> SysResult<usize> {
    // What the caller may see of a name (the stored namespaces; trusted.*
    // for root only).
    let shown = |k: &[u8]| {
        matches!(space_of(k), Space::User | Space::Security)
            || (space_of(k) == Space::Trusted && cred.is_root())
    };
    let mut out;
    if let Some(sb) = super::backend_names::backend_of(inode) {
        out = Vec::new();
        for k in backend_names(sb, inode)?.split(|&b| b == 0) {
            if !k.is_empty() && shown(k) {
                out.extend_from_slice(k);
                out.push(0);
            }
        }
    } else {
        // The ACL names first (simple_xattr_list), then the rest.
        out = inode.acl_names();
        // SAFETY: an inode's superblock outlives it.
        let sb = unsafe { &*inode.sb };
        // Descending byte order, as Linux 6.18's tmpfs lists its names
        // whatever order they were set in (checked on the host).
        sb.xattrs.read(inode.ino(), |m| {
            for k in m.keys().rev().filter(|k| shown(k)) {
                out.extend_from_slice(k);
                out.push(0);
            }
        });
    }
    let list = out;
    if list.len() > XATTR_LIST_MAX {
        return Err(Errno::E2BIG);
    }
    if buf.is_empty() {
        return Ok(list.len());
    }
    if list.len() > buf.len() {
        return Err(Errno::ERANGE);
    }
    buf[..list.len()].copy_from_slice(&list);
    Ok(list.len())
}

/// removexattr on a found inode.
pub(crate) fn remove_inode(cred: &Cred, inode: &Inode, name: &[u8]) -> SysResult<()> {
    let name = check_name(name)?;
    let space = space_of(name);
    xattr_permission(cred, inode, space, true)?;
    if let Some(kind) = AclKind::of_name(name) {
        return change_acl(cred, inode, Store::Tmpfs, kind, None);
    }
    stored_space(name, space)?;
    if let Some(sb) = super::backend_names::backend_of(inode) {
        return sb.fs.xattr(sb, inode, XattrCall::Remove(name)).map(drop);
    }
    // SAFETY: an inode's superblock outlives it.
    let sb = unsafe { &*inode.sb };
    sb.xattrs.write(inode.ino(), |m| {
        m.remove(name).map(drop).ok_or(Errno::ENODATA)
    })?;
    let t = now();
    inode.update_attr(|a| a.set_ctime(t));
    Ok(())
}

/// After a successful change of attribute `name` of `inode` (reached
/// through dentry `d`): inotify's IN_ATTRIB (fsnotify_xattr); and an ACL
/// change may change the mode, so observers (the FUSE server's kernel
/// invalidation) hear of it as of a chmod. Other attribute changes touch
/// only ctime and are not reported to them (COMPATIBILITY.md).
pub(crate) fn xattr_changed(
    vfs: &crate::vfs::VfsInner,
    d: *const Dentry,
    inode: &Inode,
    name: &[u8],
) {
    vfs.notify_object(d, inode, IN_ATTRIB, false);
    if AclKind::of_name(check_name(name).unwrap_or_default()).is_some() {
        vfs.watchers.inode_changed(inode, false);
    }
}

/// The host's list of `inode`'s names (NUL-terminated), read whole: asked
/// for its size, then read, again if it grew in between.
fn backend_names(sb: &crate::fs::SuperBlock, inode: &Inode) -> SysResult<Vec<u8>> {
    loop {
        let size = sb.fs.xattr(sb, inode, XattrCall::List(&mut []))?;
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut names = vec![0u8; size];
        match sb.fs.xattr(sb, inode, XattrCall::List(&mut names)) {
            Ok(n) => {
                names.truncate(n);
                return Ok(names);
            }
            Err(Errno::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
}

impl Process {
    /// Runs `op` on the inode `at` names and the mount it was found
    /// through (O_PATH descriptors: EBADF).
    fn with_xattr_inode<R>(
        &self,
        at: XattrAt<'_>,
        fd_only: bool,
        op: impl FnOnce(&Mount, &Inode, Store, *const Dentry) -> SysResult<R>,
    ) -> SysResult<R> {
        match at {
            // Linux 6.13+ (path_setxattrat and path_getxattrat, which
            // fsetxattr and fgetxattr call): a negative fd is not looked up
            // as a file but as the dirfd of an empty path, so AT_FDCWD
            // names the working directory (and -1 is EBADF; checked
            // against 6.18). flistxattr and fremovexattr (`fd_only`) look
            // any fd up as a file.
            XattrAt::Fd(AT_FDCWD) if !fd_only => {
                let _g = self.vfs.collector.enter();
                let found = self.lookup_at(&self.cred, AT_FDCWD, b"", AT_EMPTY_PATH, 0)?;
                op(
                    found.mount(),
                    found.inode(),
                    Store::Tmpfs,
                    found.path.dentry,
                )
            }
            XattrAt::Fd(fd) => self.with_file(fd, false, |f| {
                op(f.mount(), f.inode(), store_of(f), f.dentry)
            }),
            XattrAt::Path(path, follow) => {
                let _g = self.vfs.collector.enter();
                let flags = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
                let found = self.lookup_at(
                    &self.cred,
                    AT_FDCWD,
                    path,
                    flags,
                    if follow {
                        crate::dcache::walk::WALK_FOLLOW
                    } else {
                        0
                    },
                )?;
                // A path never reaches an anonymous object.
                op(
                    found.mount(),
                    found.inode(),
                    Store::Tmpfs,
                    found.path.dentry,
                )
            }
        }
    }

    pub(crate) fn sys_setxattr(
        &self,
        at: XattrAt<'_>,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> SysResult<()> {
        // Linux's setxattr_copy runs before the path walk or fd lookup:
        // flags, then the name, then the size.
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        check_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(Errno::E2BIG);
        }
        self.with_xattr_inode(at, false, |mnt, i, store, d| {
            // filename_setxattr / file_setxattr: write access first.
            let _write = mnt.write_access()?;
            match store {
                Store::Tmpfs => set_inode(&self.cred, i, name, value, flags),
                _ => change_without_store(&self.cred, i, store, name, Some(value)),
            }
            .inspect(|()| xattr_changed(&self.vfs, d, i, name))
        })
    }

    pub(crate) fn sys_getxattr(
        &self,
        at: XattrAt<'_>,
        name: &[u8],
        buf: &mut [u8],
    ) -> SysResult<usize> {
        // The name is imported before the walk (import_xattr_name).
        check_name(name)?;
        self.with_xattr_inode(at, false, |_, i, store, _| match store {
            Store::Tmpfs => get_inode(&self.cred, i, name, buf),
            _ => get_without_store(&self.cred, i, store, name, buf),
        })
    }

    pub(crate) fn sys_listxattr(&self, at: XattrAt<'_>, buf: &mut [u8]) -> SysResult<usize> {
        // flistxattr looks any fd up as a file (AT_FDCWD: EBADF).
        let fd_only = matches!(at, XattrAt::Fd(_));
        self.with_xattr_inode(at, fd_only, |_, i, store, _| match store {
            Store::Tmpfs => list_inode(&self.cred, i, buf),
            _ => list_without_store(store, buf),
        })
    }

    pub(crate) fn sys_removexattr(&self, at: XattrAt<'_>, name: &[u8]) -> SysResult<()> {
        // The name is imported first; fremovexattr then looks its fd up
        // as a file (path_removexattrat has no negative-dirfd case, so
        // AT_FDCWD is EBADF there).
        check_name(name)?;
        let fd_only = matches!(at, XattrAt::Fd(_));
        self.with_xattr_inode(at, fd_only, |mnt, i, store, d| {
            // As setxattr.
            let _write = mnt.write_access()?;
            match store {
                Store::Tmpfs => remove_inode(&self.cred, i, name),
                _ => change_without_store(&self.cred, i, store, name, None),
            }
            .inspect(|()| xattr_changed(&self.vfs, d, i, name))
        })
    }
}
