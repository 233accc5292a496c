//! What the differential tests leave out of a step-by-step comparison, and
//! how they compare the outcomes that cannot be equal byte for byte. Each
//! filter reads the state of one side (any `ProcessApi`: vfscale's core or
//! the kernel) just before the step; both sides agree on it up to that
//! step, or the comparison would already have failed.

use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_model::ops::{scenario_creds, FdMap, Op, Outcome, XattrAt};

/// Readdir order is a documented deviation (docs/COMPATIBILITY.md: Linux
/// 6.18's tmpfs lists newest first and does not show entries created
/// behind its cursor; vfscale lists in creation order), so the records one
/// getdents64 call returns, and whether a too-small buffer meets a record
/// (EINVAL) or the end (0), are not compared; its other errors are. Names
/// and types are compared as sets in the final tree.
pub fn same_modulo_readdir_order(op: &Op, left: &Outcome, right: &Outcome) -> bool {
    step_by_step(op, left, right, &|op, left, right| {
        let listing = |o: &Outcome| matches!(o, Outcome::Dirents(_) | Outcome::Err(Errno::EINVAL));
        match (op, left, right) {
            (Op::Getdents64 { .. }, l, r) => listing(l) && listing(r),
            _ => same_socket_name(op, left, right),
        }
    })
}

/// Whether the outcomes of `op` agree: equal, or `alike` by a rule of the
/// caller's; a fork's steps one by one.
pub fn step_by_step(
    op: &Op,
    left: &Outcome,
    right: &Outcome,
    alike: &dyn Fn(&Op, &Outcome, &Outcome) -> bool,
) -> bool {
    match (op, left, right) {
        (Op::Fork(ops), Outcome::Child(l), Outcome::Child(r)) => {
            l.len() == r.len()
                && ops
                    .iter()
                    .zip(l.iter().zip(r))
                    .all(|(op, (l, r))| step_by_step(op, l, r, alike))
        }
        _ => left == right || alike(op, left, right),
    }
}

/// An autobound name is NUL and five hex digits, chosen differently by
/// each side: compared by shape.
fn same_socket_name(op: &Op, left: &Outcome, right: &Outcome) -> bool {
    let autobound = |o: &Outcome| matches!(o, Outcome::Data(b) if b.0.len() == 6 && b.0[0] == 0 && b.0[1..].iter().all(u8::is_ascii_hexdigit));
    match (op, left, right) {
        (Op::SockName { .. }, l, r) => autobound(l) && autobound(r),
        // recvfrom's sender name, after the same count and bytes.
        (Op::Recvfrom { .. }, Outcome::Seq(l), Outcome::Seq(r)) => {
            l.len() == 3 && r.len() == 3 && l[..2] == r[..2] && autobound(&l[2]) && autobound(&r[2])
        }
        // recvmsg's likewise, with the same credentials, descriptors and
        // flags after it.
        (Op::Recvmsg { .. }, Outcome::Seq(l), Outcome::Seq(r)) => {
            l.len() == 6
                && r.len() == 6
                && l[..2] == r[..2]
                && autobound(&l[2])
                && autobound(&r[2])
                && l[3..] == r[3..]
        }
        _ => false,
    }
}

/// Directory offsets are opaque cookies whose values differ between
/// implementations, so a seek on a directory other than a rewind is
/// skipped.
pub fn directory_seek<P: ProcessApi>(p: &P, fds: &FdMap, op: &Op) -> bool {
    match op {
        Op::Lseek { fd, off, whence } if (*off, *whence) != (0, SEEK_SET) => p
            .fstat(fds.resolve(*fd))
            .is_ok_and(|st| st.mode & S_IFMT == S_IFDIR),
        _ => false,
    }
}

/// An allocating fallocate of more than 1 GiB on a memfd: the kernel's
/// internal shm mount has no size limit, so shmem_fallocate takes page
/// after page until the host runs out of memory (the OOM kills of the
/// kernel differential test in sessions 17 and 18: 24 GB of shmem).
/// Skipped, in a fork too (whatever the file there).
pub fn memfd_flood<P: ProcessApi>(p: &P, fds: &FdMap, op: &Op) -> bool {
    let big = |mode: i32, len: i64| len > 1 << 30 && mode & FALLOC_FL_PUNCH_HOLE == 0;
    match op {
        Op::Fallocate { fd, mode, len, .. } if big(*mode, *len) => {
            matches!(p.fd_path(fds.resolve(*fd)), Ok(path) if path.starts_with(b"/memfd:"))
        }
        Op::Fork(ops) => ops
            .iter()
            .any(|op| matches!(op, Op::Fallocate { mode, len, .. } if big(*mode, *len))),
        _ => false,
    }
}

/// F_GET_RW_HINT or F_SET_RW_HINT on an eventfd: the kernel's eventfds
/// share one anonymous inode with the whole host (its hint is whatever any
/// process last set, and setting it would change it for all of them),
/// where vfscale's share one per namespace. Skipped; in a fork, any hint
/// call (its descriptors are not resolved here).
pub fn eventfd_write_hint<P: ProcessApi>(p: &P, fds: &FdMap, op: &Op) -> bool {
    let hint = |cmd: i32| matches!(cmd, F_GET_RW_HINT | F_SET_RW_HINT);
    match op {
        Op::Fcntl { fd, cmd, .. } if hint(*cmd) => {
            matches!(p.fd_path(fds.resolve(*fd)), Ok(path) if path == b"anon_inode:[eventfd]")
        }
        Op::Fork(ops) => ops
            .iter()
            .any(|op| matches!(op, Op::Fcntl { cmd, .. } if hint(*cmd))),
        _ => false,
    }
}

/// Calls on the namespace's root mount that the sandbox cannot mirror,
/// skipped: umount2 of the caller's root mount with MNT_DETACH, or of the
/// namespace's root by a process chrooted elsewhere (Linux detaches it,
/// or, for the namespace root seen from a chroot, unmounts it as an
/// ordinary mount, and returns 0; vfscale answers EINVAL:
/// docs/COMPATIBILITY.md), and MS_MOVE of the namespace's root (EINVAL in
/// memory, where it has no parent; the kernel side's root is a tmpfs
/// mounted in the host's tree, so moving it anywhere in the sandbox is
/// ELOOP there). Without MNT_DETACH the caller's root mount is compared:
/// both make its instance read-only (do_umount_root). `namespace_root` is
/// the (dev, ino) of the namespace's own root, which a process chrooted
/// below it still reaches through its cwd. Also inside a fork.
pub fn root_mount_op<P: ProcessApi>(p: &P, namespace_root: Option<(u64, u64)>, op: &Op) -> bool {
    let resolves_to = |path: &[u8]| p.stat(path).ok().map(|t| (t.dev, t.ino));
    match op {
        Op::Umount2 { target, flags } => {
            let Some(t) = resolves_to(&target.0) else {
                return false;
            };
            let own_root = resolves_to(b"/");
            (Some(t) == own_root && flags & MNT_DETACH != 0)
                || (Some(t) == namespace_root && Some(t) != own_root)
        }
        Op::Mount { source, flags, .. } if flags & MS_MOVE != 0 => {
            resolves_to(&source.0).is_some() && resolves_to(&source.0) == namespace_root
        }
        // A child's steps, resolved as the parent would (a child that
        // changed its directories first may be skipped for nothing).
        Op::Fork(ops) => ops.iter().any(|op| root_mount_op(p, namespace_root, op)),
        _ => false,
    }
}

/// Steps the kernel side cannot run, or runs as something else than the
/// in-memory sides see: a FIFO (its open would hang; `Op::makes_fifo`), a
/// device node with a number (vfscale and its model have no drivers), a
/// NUL byte inside a path or a symlink's target (EINVAL in memory, a
/// shorter C string for the kernel), a new mount of another type than
/// tmpfs (ENODEV in memory; the host's ext4 would parse the source
/// first — binds, remounts, propagation changes and moves ignore the type
/// and are compared whatever it says).
pub fn kernel_cannot_compare(op: &Op) -> bool {
    let has_nul = |b: &[u8]| b.contains(&0);
    match op {
        Op::Mknodat {
            mode, dev, path, ..
        } => {
            let t = mode & S_IFMT;
            op.makes_fifo() || ((t == S_IFCHR || t == S_IFBLK) && *dev != 0) || has_nul(&path.0)
        }
        Op::Symlinkat { target, path, .. } => has_nul(&target.0) || has_nul(&path.0),
        Op::Mount {
            source,
            target,
            fstype,
            flags,
        } => {
            // path_mount drops the old magic number first (its bits would
            // read as propagation flags).
            let flags = if flags & MS_MGC_MSK == MS_MGC_VAL {
                flags & !MS_MGC_MSK
            } else {
                *flags
            };
            let new_instance = flags
                & (MS_BIND
                    | MS_REMOUNT
                    | MS_MOVE
                    | MS_SHARED
                    | MS_PRIVATE
                    | MS_SLAVE
                    | MS_UNBINDABLE)
                == 0;
            has_nul(&source.0)
                || has_nul(&target.0)
                || has_nul(&fstype.0)
                || (new_instance && fstype.0 != b"tmpfs")
        }
        op => path_args(op).iter().any(|p| has_nul(p)),
    }
}

/// A mount(2) that makes a mount shared or unbindable: Linux does it,
/// vfscale and the model answer EINVAL (docs/COMPATIBILITY.md, "shared
/// and unbindable propagation"). A remount or a bind ignores these bits
/// (path_mount tries them first) and is compared; so is MS_MOVE, built
/// since session 28 (but for the namespace root's: `root_mount_op`).
pub fn unbuilt_mount(op: &Op) -> bool {
    let Op::Mount { flags, .. } = op else {
        return false;
    };
    let flags = if flags & MS_MGC_MSK == MS_MGC_VAL {
        flags & !MS_MGC_MSK
    } else {
        *flags
    };
    flags & (MS_REMOUNT | MS_BIND | MS_NOUSER) == 0 && flags & (MS_SHARED | MS_UNBINDABLE) != 0
}

/// The paths `op` resolves in the namespace (not a symlink's target, a
/// mount's type or a socket's name, which may be abstract).
pub fn path_args(op: &Op) -> Vec<&[u8]> {
    match op {
        Op::Open { path, .. }
        | Op::Openat2 { path, .. }
        | Op::Truncate { path, .. }
        | Op::Fstatat { path, .. }
        | Op::Statx { path, .. }
        | Op::Faccessat { path, .. }
        | Op::Fchmodat { path, .. }
        | Op::Fchownat { path, .. }
        | Op::Utimensat { path, .. }
        | Op::Mkdirat { path, .. }
        | Op::Mknodat { path, .. }
        | Op::Unlinkat { path, .. }
        | Op::Symlinkat { path, .. }
        | Op::Readlinkat { path, .. }
        | Op::NameToHandle { path, .. }
        | Op::Statfs(path)
        | Op::Chdir(path)
        | Op::Chroot(path)
        | Op::Umount2 { target: path, .. } => vec![&path.0[..]],
        Op::Renameat2 { old, new, .. } | Op::Linkat { old, new, .. } => {
            vec![&old.0[..], &new.0[..]]
        }
        Op::Mount { source, target, .. } => vec![&source.0[..], &target.0[..]],
        Op::Setxattr { at, .. }
        | Op::Getxattr { at, .. }
        | Op::Listxattr { at, .. }
        | Op::Removexattr { at, .. } => match at {
            XattrAt::Path(p) | XattrAt::Lpath(p) => vec![&p.0[..]],
            XattrAt::Fd(_) => vec![],
        },
        _ => vec![],
    }
}

/// linkat(fd, "", AT_EMPTY_PATH) of a source that `fs.protected_hardlinks`
/// protects from this caller: the kernel side cannot retry it with
/// CAP_FOWNER (see `KernelProcess::linkat`), so it reads EPERM there while
/// vfscale (which does not model the sysctl, docs/COMPATIBILITY.md) links.
/// Protected: not the caller's, and not a regular file without set-id
/// execution that the caller may read and write (may_linkat).
pub fn protected_link_by_fd<P: ProcessApi>(p: &P, fds: &FdMap, proc: usize, op: &Op) -> bool {
    let Op::Linkat {
        olddirfd,
        old,
        flags,
        ..
    } = op
    else {
        return false;
    };
    let cred = &scenario_creds()[proc];
    if cred.is_root() || !old.0.is_empty() || flags & AT_EMPTY_PATH == 0 {
        return false;
    }
    // The source is the descriptor's file, or the cwd for AT_FDCWD.
    let Ok(st) = p.fstatat(fds.resolve(*olddirfd), b"", AT_EMPTY_PATH) else {
        return false;
    };
    if st.uid == cred.fsuid {
        return false;
    }
    let class = if cred.in_group(st.gid) {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    let safe_type = st.mode & S_IFMT == S_IFREG
        && st.mode & S_ISUID == 0
        && st.mode & (S_ISGID | S_IXGRP) != (S_ISGID | S_IXGRP);
    !(safe_type && class & 6 == 6)
}
