//! mount_setattr(2) (process/mount_setattr.rs): per-mount flags and
//! propagation on one mount or a whole subtree, all or nothing. Every
//! expectation was first seen on the host kernel (6.18);
//! `vfscale-difftest/tests/namespace_kernel.rs` `mount_setattr_matches_the_kernel`
//! and its random sequences compare it with the kernel step by step.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// /a a tmpfs with /a/x a tmpfs in it, /a/x/y a directory there.
fn tree() -> (Vfs, Process) {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/a", 0).unwrap();
    tmpfs_at(&p, b"/a/x", 0).unwrap();
    p.mkdir(b"/a/x/y", 0o755).unwrap();
    (vfs, p)
}

fn setattr(p: &Process, path: &[u8], flags: i32, attr: MountAttr) -> SysResult<()> {
    p.mount_setattr(AT_FDCWD, path, flags, &attr)
}

fn readonly(p: &Process, path: &[u8]) -> bool {
    p.statfs(path).unwrap().f_flags & ST_RDONLY != 0
}

#[test]
fn recursive_read_only_and_back() {
    let (vfs, p) = tree();
    setattr(&p, b"/a", AT_RECURSIVE, MountAttr::set(MOUNT_ATTR_RDONLY)).unwrap();
    assert!(readonly(&p, b"/a") && readonly(&p, b"/a/x"));
    assert_eq!(p.mkdir(b"/a/n", 0o755), Err(Errno::EROFS));
    assert_eq!(p.mkdir(b"/a/x/y/n", 0o755), Err(Errno::EROFS));
    // mount(2)'s MS_REC does not reach a remount: only the top changes.
    p.mount(b"", b"/a", b"", MS_REMOUNT | MS_BIND | MS_REC)
        .unwrap();
    assert!(!readonly(&p, b"/a") && readonly(&p, b"/a/x"));
    setattr(&p, b"/a/x", 0, MountAttr::clear(MOUNT_ATTR_RDONLY)).unwrap();
    p.mkdir(b"/a/x/y/n", 0o755).unwrap();
    // Without AT_RECURSIVE, the one mount alone.
    setattr(
        &p,
        b"/a",
        0,
        MountAttr::set(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC),
    )
    .unwrap();
    assert!(readonly(&p, b"/a") && !readonly(&p, b"/a/x"));
    assert_ne!(p.statfs(b"/a").unwrap().f_flags & ST_NOEXEC, 0);
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn a_writer_anywhere_beneath_makes_it_ebusy_and_nothing_changes() {
    let (vfs, p) = tree();
    let fd = p.open(b"/a/x/f", O_WRONLY | O_CREAT, 0o644).unwrap();
    assert_eq!(
        setattr(
            &p,
            b"/a",
            AT_RECURSIVE,
            MountAttr::set(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)
        ),
        Err(Errno::EBUSY)
    );
    assert!(!readonly(&p, b"/a") && !readonly(&p, b"/a/x"));
    assert_eq!(p.statfs(b"/a").unwrap().f_flags & ST_NOSUID, 0);
    // Writers on /a itself are still welcome.
    p.mkdir(b"/a/n", 0o755).unwrap();
    p.close(fd).unwrap();
    setattr(&p, b"/a", AT_RECURSIVE, MountAttr::set(MOUNT_ATTR_RDONLY)).unwrap();
    assert!(readonly(&p, b"/a") && readonly(&p, b"/a/x"));
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}

#[test]
fn errors_in_linuxs_order() {
    let (vfs, p) = tree();
    let u = user(&vfs, 1000, 1000);
    let nosuid = MountAttr::set(MOUNT_ATTR_NOSUID);
    assert_eq!(setattr(&p, b"/a", 0x1, nosuid), Err(Errno::EINVAL));
    assert_eq!(setattr(&u, b"/a", 0, nosuid), Err(Errno::EPERM));
    // A no-op answers before the path is looked at.
    assert_eq!(setattr(&p, b"/none", 0, MountAttr::default()), Ok(()));
    assert_eq!(
        setattr(&p, b"/none", 0, MountAttr::set(1 << 40)),
        Err(Errno::EINVAL)
    );
    assert_eq!(setattr(&p, b"/none", 0, nosuid), Err(Errno::ENOENT));
    assert_eq!(setattr(&p, b"/a/x/y", 0, nosuid), Err(Errno::EINVAL));
    // The atime mode is a value changed as a whole.
    assert_eq!(
        setattr(&p, b"/a", 0, MountAttr::set(MOUNT_ATTR_NOATIME)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        setattr(&p, b"/a", 0, MountAttr::clear(MOUNT_ATTR_NOATIME)),
        Err(Errno::EINVAL)
    );
    let atime = |mode| MountAttr {
        attr_set: mode,
        attr_clr: MOUNT_ATTR__ATIME,
        ..Default::default()
    };
    assert_eq!(setattr(&p, b"/a", 0, atime(0x30)), Err(Errno::EINVAL));
    setattr(&p, b"/a", 0, atime(MOUNT_ATTR_NOATIME)).unwrap();
    assert_ne!(p.statfs(b"/a").unwrap().f_flags & ST_NOATIME, 0);
    setattr(&p, b"/a", 0, atime(MOUNT_ATTR_STRICTATIME)).unwrap();
    assert_eq!(
        p.statfs(b"/a").unwrap().f_flags & (ST_NOATIME | ST_RELATIME),
        0
    );
    // Propagation: one type or none.
    let prop = |t| MountAttr {
        propagation: t,
        ..Default::default()
    };
    assert_eq!(
        setattr(&p, b"/a", 0, prop(MS_SHARED | MS_SLAVE)),
        Err(Errno::EINVAL)
    );
    assert_eq!(setattr(&p, b"/a", 0, prop(MS_REC)), Err(Errno::EINVAL));
    // No user namespaces: an idmapping is EINVAL or EBADF.
    let idmap = |fd: u64| MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        userns_fd: fd,
        ..Default::default()
    };
    assert_eq!(
        setattr(&p, b"/a", 0, MountAttr::clear(MOUNT_ATTR_IDMAP)),
        Err(Errno::EINVAL)
    );
    assert_eq!(setattr(&p, b"/a", 0, idmap(u64::MAX)), Err(Errno::EINVAL));
    assert_eq!(setattr(&p, b"/a", 0, idmap(77)), Err(Errno::EBADF));
    let fd = p.open(b"/a", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(setattr(&p, b"/a", 0, idmap(fd as u64)), Err(Errno::EINVAL));
    // An empty path names the descriptor's mount.
    p.mount_setattr(fd, b"", AT_EMPTY_PATH, &nosuid).unwrap();
    assert_ne!(p.statfs(b"/a").unwrap().f_flags & ST_NOSUID, 0);
    // Another namespace's mount, through a descriptor kept across unshare.
    let mut q = p.fork().unwrap();
    q.unshare(CLONE_NEWNS).unwrap();
    assert_eq!(
        q.mount_setattr(fd, b"", AT_EMPTY_PATH, &MountAttr::set(MOUNT_ATTR_NODEV)),
        Err(Errno::EINVAL)
    );
    drop((p, q, u));
    vfs.flush();
    vfs.check_invariants().unwrap();
}

/// One thread turns a subtree read-only and back while two write into it:
/// each change either happens or is EROFS, a switch either takes effect
/// everywhere or (a writer active) nowhere, and no unit of write access is
/// lost (the last switch succeeds once the writers stop; the checker finds
/// none held).
#[test]
fn stress_recursive_switches_race_writers() {
    let (vfs, p) = tree();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let w = p.fork().unwrap();
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || {
                let dir: &[u8] = if i == 0 { b"/a" } else { b"/a/x/y" };
                let name = [dir, format!("/w{i}").as_bytes()].concat();
                let mut made = 0u64;
                while !stop.load(Ordering::Relaxed) || made < 200 {
                    match w.open(&name, O_WRONLY | O_CREAT | O_EXCL, 0o644) {
                        Ok(fd) => {
                            w.close(fd).unwrap();
                            // The unlink may meet a read-only mount.
                            while let Err(e) = w.unlink(&name) {
                                assert_eq!(e, Errno::EROFS);
                            }
                            made += 1;
                        }
                        Err(e) => assert_eq!(e, Errno::EROFS),
                    }
                }
                done.fetch_add(made, Ordering::Relaxed);
            })
        })
        .collect();
    let mut switched = 0;
    for round in 0..2000 {
        let attr = if round % 2 == 0 {
            MountAttr::set(MOUNT_ATTR_RDONLY)
        } else {
            MountAttr::clear(MOUNT_ATTR_RDONLY)
        };
        match setattr(&p, b"/a", AT_RECURSIVE, attr) {
            Ok(()) => {
                switched += 1;
                let ro = round % 2 == 0;
                assert_eq!(readonly(&p, b"/a"), ro);
                assert_eq!(readonly(&p, b"/a/x"), ro);
            }
            Err(e) => assert_eq!(e, Errno::EBUSY),
        }
    }
    setattr(&p, b"/a", AT_RECURSIVE, MountAttr::clear(MOUNT_ATTR_RDONLY)).unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(switched > 0 && done.load(Ordering::Relaxed) >= 400);
    vfs.flush();
    setattr(&p, b"/a", AT_RECURSIVE, MountAttr::set(MOUNT_ATTR_RDONLY)).unwrap();
    drop(p);
    vfs.flush();
    vfs.check_invariants().unwrap();
}
