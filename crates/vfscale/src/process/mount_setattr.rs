//! mount_setattr(2): per-mount flags and propagation changed on one mount
//! or, with AT_RECURSIVE, on every mount beneath it too, all or nothing
//! (Linux 6.18's build_mount_kattr and do_mount_setattr: its checks in its
//! order). Container runtimes use it for recursive read-only volumes,
//! which mount(2) cannot make (its MS_REC does not reach a remount).
//!
//! The change runs under the mount table's lock: first every mount that
//! becomes read-only is held against new writers (mount/write.rs); if one
//! has a writer, every hold is undone and nothing changes (EBUSY); then
//! each mount's word gets its new flags, and its propagation its new type.

use super::Process;
use crate::abi::*;
use crate::mount::flags::{from_mount_attr, MNT_NOATIME, MNT_READONLY, MNT_RELATIME};
use crate::mount::propagation::PropagationType;
use crate::mount::write::Writers;
use crate::mount::Mount;

/// The MOUNT_ATTR_* values mount_setattr knows.
const VALID: u64 = MOUNT_ATTR_RDONLY
    | MOUNT_ATTR_NOSUID
    | MOUNT_ATTR_NODEV
    | MOUNT_ATTR_NOEXEC
    | MOUNT_ATTR__ATIME
    | MOUNT_ATTR_NODIRATIME
    | MOUNT_ATTR_IDMAP
    | MOUNT_ATTR_NOSYMFOLLOW;

/// What a call changes on each mount (Linux's mount_kattr).
struct Change {
    set: u32,
    clear: u32,
    propagation: Option<PropagationType>,
}

impl Change {
    /// build_mount_kattr: the attributes as per-mount flags. `fd_open`
    /// says whether a descriptor is open (MOUNT_ATTR_IDMAP's user
    /// namespace, which vfscale has none of).
    fn of(attr: &MountAttr, fd_open: impl Fn(Fd) -> bool) -> SysResult<Change> {
        let propagation = match attr.propagation {
            0 => None,
            MS_UNBINDABLE => Some(PropagationType::Unbindable),
            MS_PRIVATE => Some(PropagationType::Private),
            MS_SLAVE => Some(PropagationType::Slave),
            MS_SHARED => Some(PropagationType::Shared),
            _ => return Err(Errno::EINVAL),
        };
        if (attr.attr_set | attr.attr_clr) & !VALID != 0 {
            return Err(Errno::EINVAL);
        }
        let mut set = from_mount_attr(attr.attr_set);
        let mut clear = from_mount_attr(attr.attr_clr);
        // The atime mode is a value: changing it clears the whole field.
        if attr.attr_clr & MOUNT_ATTR__ATIME != 0 {
            if attr.attr_clr & MOUNT_ATTR__ATIME != MOUNT_ATTR__ATIME {
                return Err(Errno::EINVAL);
            }
            clear |= MNT_RELATIME | MNT_NOATIME;
            match attr.attr_set & MOUNT_ATTR__ATIME {
                MOUNT_ATTR_RELATIME => set |= MNT_RELATIME,
                MOUNT_ATTR_NOATIME => set |= MNT_NOATIME,
                MOUNT_ATTR_STRICTATIME => {}
                _ => return Err(Errno::EINVAL),
            }
        } else if attr.attr_set & MOUNT_ATTR__ATIME != 0 {
            return Err(Errno::EINVAL);
        }
        // build_mount_idmapped: an idmapping cannot be cleared, and one is
        // given by a user namespace's descriptor, which vfscale has none of.
        if attr.attr_clr & MOUNT_ATTR_IDMAP != 0 {
            return Err(Errno::EINVAL);
        }
        if attr.attr_set & MOUNT_ATTR_IDMAP != 0 {
            let fd = Fd::try_from(attr.userns_fd).map_err(|_| Errno::EINVAL)?;
            return Err(if fd_open(fd) {
                Errno::EINVAL
            } else {
                Errno::EBADF
            });
        }
        Ok(Change {
            set,
            clear,
            propagation,
        })
    }

    /// recalc_flags.
    fn flags_for(&self, m: &Mount) -> u32 {
        (m.flags.get() & !self.clear) | self.set
    }
}

impl Process {
    pub(crate) fn sys_mount_setattr(
        &self,
        dirfd: Fd,
        path: &[u8],
        flags: i32,
        attr: &MountAttr,
    ) -> SysResult<()> {
        if flags & !(AT_EMPTY_PATH | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) != 0 {
            return Err(Errno::EINVAL);
        }
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if attr.attr_set == 0 && attr.attr_clr == 0 && attr.propagation == 0 {
            return Ok(());
        }
        // fdget: an O_PATH descriptor is not one.
        let change = Change::of(attr, |fd| {
            self.fd_file_nopath(fd).map(|f| self.vfs.fput(f)).is_ok()
        })?;
        if change.set & MNT_READONLY != 0 {
            // Files closed on any thread must not keep a mount writable
            // (as a read-only remount).
            self.vfs.flush_all();
        }
        let _g = self.vfs.collector.enter();
        // The walk follows a final symlink unless AT_SYMLINK_NOFOLLOW.
        let at_flags = flags & (AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
        let tgt = self.lookup_at(&self.cred, dirfd, path, at_flags, 0)?;
        let list = self.vfs.lock_mounts();
        // SAFETY (whole function): the walk's guard keeps the mount
        // allocated, the table lock keeps attached mounts attached.
        let m = unsafe { &*tgt.path.mnt };
        // A mount of the caller's namespace, or a detached tree's root
        // (mount/anon.rs: changed before move_mount shows it).
        if tgt.path.dentry != m.root || !(self.in_namespace(tgt.path.mnt) || m.is_anon_root()) {
            return Err(Errno::EINVAL);
        }
        let mounts: Vec<&Mount> = if flags & AT_RECURSIVE != 0 {
            self.vfs
                .subtree(&list, tgt.path.mnt)
                .into_iter()
                .map(|x| unsafe { &*x })
                .collect()
        } else {
            vec![m]
        };
        // mount_setattr_prepare: hold every mount that becomes read-only;
        // one with a writer undoes them all.
        let held: Vec<(&Mount, u32)> = mounts
            .iter()
            .filter(|x| change.set & MNT_READONLY != 0 && x.flags.get() & MNT_READONLY == 0)
            .map(|x| (*x, x.flags.get()))
            .collect();
        for (x, _) in &held {
            Writers::hold(&x.flags);
        }
        if held.iter().any(|(x, _)| x.writers.busy()) {
            for (x, old) in held {
                Writers::release(&x.flags, old);
            }
            return Err(Errno::EBUSY);
        }
        // mount_setattr_commit.
        for x in &mounts {
            let bits = change.flags_for(x);
            if held.iter().any(|(h, _)| core::ptr::eq(*h, *x)) {
                Writers::release(&x.flags, bits);
            } else {
                x.flags.set(bits);
            }
            if let Some(t) = change.propagation {
                self.vfs.change_propagation(&list, *x, t);
            }
        }
        Ok(())
    }
}
