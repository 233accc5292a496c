//! Mount propagation in the model (pnode.rs): shared, slave, private and
//! unbindable mounts, and how binds, new mounts, moves and umounts spread
//! through them. Each expectation is what Linux 6.18 does for the same
//! calls (checked on the host in a private mount namespace, and by
//! vfscale-difftest's model_kernel_rdonly.rs at random).
//!
//! A mount is told from its mountpoint by `dev`: each tmpfs instance has
//! its own, and a copy of a mount shows the same instance.

use vfscale::abi::*;
use vfscale::{Cred, Errno, ProcessApi};
use vfscale_model::{ModelFs, ModelProcess};

fn root() -> (ModelFs, ModelProcess) {
    let fs = ModelFs::new();
    let p = fs.process(Cred::root());
    (fs, p)
}

fn dev(p: &ModelProcess, path: &[u8]) -> u64 {
    p.stat(path).unwrap().dev
}

fn exists(p: &ModelProcess, path: &[u8]) -> bool {
    p.stat(path).is_ok()
}

/// A tmpfs at /a holding directories x and y, and an empty /b.
fn tmpfs_a(p: &ModelProcess) {
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    p.mount(b"none", b"/a", b"tmpfs", 0).unwrap();
    p.mkdir(b"/a/x", 0o755).unwrap();
    p.mkdir(b"/a/y", 0o755).unwrap();
}

fn make(p: &ModelProcess, path: &[u8], flags: u64) {
    p.mount(b"", path, b"", flags).unwrap();
}

fn tmpfs(p: &ModelProcess, path: &[u8]) {
    p.mount(b"none", path, b"tmpfs", 0).unwrap();
}

#[test]
fn change_type_checks() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    // A mount's root, one type at a time, nothing else beside MS_REC and
    // MS_SILENT.
    assert_eq!(p.mount(b"", b"/a/x", b"", MS_SHARED), Err(Errno::EINVAL));
    assert_eq!(
        p.mount(b"", b"/a", b"", MS_SHARED | MS_SLAVE),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.mount(b"", b"/a", b"", MS_SHARED | MS_NOEXEC),
        Err(Errno::EINVAL)
    );
    for flags in [
        MS_SHARED,
        MS_SHARED | MS_REC,
        MS_SLAVE | MS_SILENT,
        MS_PRIVATE,
        MS_UNBINDABLE | MS_REC,
    ] {
        assert_eq!(p.mount(b"", b"/a", b"", flags), Ok(()), "{flags:#x}");
    }
}

#[test]
fn shared_peers_propagate_both_ways() {
    let (fs, p) = root();
    tmpfs_a(&p);
    make(&p, b"/a", MS_SHARED);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    let a = dev(&p, b"/a");
    assert_eq!(dev(&p, b"/b"), a);
    // A mount on one peer shows on the other, and back.
    tmpfs(&p, b"/a/x");
    let x = dev(&p, b"/a/x");
    assert_ne!(x, a);
    assert_eq!(dev(&p, b"/b/x"), x);
    tmpfs(&p, b"/b/y");
    let y = dev(&p, b"/b/y");
    assert_eq!(dev(&p, b"/a/y"), y);
    // The new mounts are shared too: a mount inside one copy shows in the
    // other.
    p.mkdir(b"/a/x/d", 0o755).unwrap();
    tmpfs(&p, b"/b/x/d");
    assert_eq!(dev(&p, b"/a/x/d"), dev(&p, b"/b/x/d"));
    // An umount propagates too (the copies have no submounts: y's).
    p.umount2(b"/a/y", 0).unwrap();
    assert_eq!(dev(&p, b"/b/y"), a);
    // x's copies have a submount each: the umount of one propagates to
    // none (EBUSY here: /a/x has its own submount).
    assert_eq!(p.umount2(b"/a/x", 0), Err(Errno::EBUSY));
    p.umount2(b"/a/x", MNT_DETACH).unwrap();
    assert_eq!(dev(&p, b"/a/x"), a);
    assert_eq!(dev(&p, b"/b/x"), a);
    p.umount2(b"/b", 0).unwrap();
    p.umount2(b"/a", 0).unwrap();
    assert_eq!(fs.mount_count(), 1);
}

#[test]
fn slaves_receive_but_do_not_send() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    make(&p, b"/a", MS_SHARED);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    make(&p, b"/b", MS_SLAVE);
    let a = dev(&p, b"/a");
    tmpfs(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/a/x"));
    tmpfs(&p, b"/b/y");
    assert_eq!(dev(&p, b"/a/y"), a);
    // The master's umount reaches the slave's copy.
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x"), a);
    // A private mount receives nothing.
    make(&p, b"/b", MS_PRIVATE);
    tmpfs(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), a);
    // MS_SLAVE of a mount with neither peers nor master: private.
    make(&p, b"/b", MS_SLAVE);
    p.umount2(b"/a/x", 0).unwrap();
    tmpfs(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), a);
}

#[test]
fn slave_of_slave_gets_copies_through_the_middle() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    p.mkdir(b"/c", 0o755).unwrap();
    make(&p, b"/a", MS_SHARED);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    // /b: a slave of /a that is shared itself; /c: a peer of /b made its
    // slave.
    make(&p, b"/b", MS_SLAVE);
    make(&p, b"/b", MS_SHARED);
    p.mount(b"/b", b"/c", b"", MS_BIND).unwrap();
    make(&p, b"/c", MS_SLAVE);
    tmpfs(&p, b"/a/x");
    let x = dev(&p, b"/a/x");
    assert_eq!(dev(&p, b"/b/x"), x);
    assert_eq!(dev(&p, b"/c/x"), x);
    // /b/x is a slave of /a/x and /c/x a slave of /b/x: a mount in /b/x
    // reaches /c/x only.
    p.mkdir(b"/a/x/d", 0o755).unwrap();
    tmpfs(&p, b"/b/x/d");
    assert_eq!(dev(&p, b"/c/x/d"), dev(&p, b"/b/x/d"));
    assert_eq!(dev(&p, b"/a/x/d"), x);
    // MS_PRIVATE on the middle, alone in its group: its slave passes to
    // its master.
    make(&p, b"/b", MS_PRIVATE);
    tmpfs(&p, b"/a/y");
    assert_eq!(dev(&p, b"/c/y"), dev(&p, b"/a/y"));
    assert_ne!(dev(&p, b"/b/y"), dev(&p, b"/a/y"));
}

#[test]
fn copies_are_tucked_under_existing_mounts() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    make(&p, b"/a", MS_SHARED);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    make(&p, b"/b", MS_SLAVE);
    // Only on the slave: then the master's mount on the same dentry goes
    // beneath it there.
    tmpfs(&p, b"/b/x");
    p.mkdir(b"/b/x/only_top", 0o755).unwrap();
    let top = dev(&p, b"/b/x");
    tmpfs(&p, b"/a/x");
    p.mkdir(b"/a/x/only_copy", 0o755).unwrap();
    assert_eq!(dev(&p, b"/b/x"), top);
    assert!(exists(&p, b"/b/x/only_top"));
    // Unmounting the top reveals the copy.
    p.umount2(b"/b/x", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/a/x"));
    assert!(exists(&p, b"/b/x/only_copy"));
}

#[test]
fn umount_propagation_busy_and_overmounts() {
    let (fs, p) = root();
    tmpfs_a(&p);
    make(&p, b"/a", MS_SHARED);
    p.mount(b"/a", b"/b", b"", MS_BIND).unwrap();
    let a = dev(&p, b"/a");
    tmpfs(&p, b"/a/x");
    // A busy copy makes the umount EBUSY; a lazy one takes it anyway.
    let q = fs.process(Cred::root());
    q.chdir(b"/b/x").unwrap();
    assert_eq!(p.umount2(b"/a/x", 0), Err(Errno::EBUSY));
    p.umount2(b"/a/x", MNT_DETACH).unwrap();
    assert_eq!(dev(&p, b"/b/x"), a);
    q.chdir(b"/").unwrap();
    // A copy covered whole by a mount of its own goes, and that mount
    // slides down into its place; a copy with another submount stays.
    tmpfs(&p, b"/a/x");
    make(&p, b"/b/x", MS_PRIVATE);
    tmpfs(&p, b"/b/x");
    let over = dev(&p, b"/b/x");
    p.umount2(b"/a/x", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x"), over);
    p.umount2(b"/b/x", 0).unwrap();
    assert_eq!(dev(&p, b"/b/x"), a);
    tmpfs(&p, b"/a/y");
    make(&p, b"/b/y", MS_PRIVATE);
    p.mkdir(b"/b/y/d", 0o755).unwrap();
    tmpfs(&p, b"/b/y/d");
    let copy = dev(&p, b"/b/y");
    p.umount2(b"/a/y", 0).unwrap();
    assert_eq!(dev(&p, b"/a/y"), a);
    assert_eq!(dev(&p, b"/b/y"), copy);
}

#[test]
fn unbindable_mounts() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    p.mkdir(b"/c", 0o755).unwrap();
    tmpfs(&p, b"/a/x");
    make(&p, b"/a/x", MS_UNBINDABLE);
    assert_eq!(p.mount(b"/a/x", b"/b", b"", MS_BIND), Err(Errno::EINVAL));
    // A recursive bind leaves it (and what is beneath it) out.
    p.mount(b"/a", b"/b", b"", MS_BIND | MS_REC).unwrap();
    assert_eq!(dev(&p, b"/b/x"), dev(&p, b"/a"));
    // MS_SLAVE keeps the bit, MS_SHARED clears it.
    make(&p, b"/a/x", MS_SLAVE);
    assert_eq!(p.mount(b"/a/x", b"/c", b"", MS_BIND), Err(Errno::EINVAL));
    make(&p, b"/a/x", MS_SHARED);
    p.mount(b"/a/x", b"/c", b"", MS_BIND).unwrap();
    // Not movable onto a shared mount while unbindable.
    p.umount2(b"/c", 0).unwrap();
    make(&p, b"/a/x", MS_UNBINDABLE);
    make(&p, b"/b", MS_SHARED);
    assert_eq!(p.mount(b"/a/x", b"/b/y", b"", MS_MOVE), Err(Errno::EINVAL));
    p.mount(b"/a/x", b"/c", b"", MS_MOVE).unwrap();
}

#[test]
fn moves_from_and_onto_shared_mounts() {
    let (_fs, p) = root();
    tmpfs_a(&p);
    tmpfs(&p, b"/a/x");
    make(&p, b"/a", MS_SHARED);
    // Not out of a shared parent.
    assert_eq!(p.mount(b"/a/x", b"/b", b"", MS_MOVE), Err(Errno::EINVAL));
    make(&p, b"/a", MS_PRIVATE);
    p.mount(b"/a/x", b"/b", b"", MS_MOVE).unwrap();
    // Onto a shared mount: it propagates like a new mount.
    make(&p, b"/a", MS_SHARED);
    p.mkdir(b"/c", 0o755).unwrap();
    p.mount(b"/a", b"/c", b"", MS_BIND).unwrap();
    p.mount(b"/b", b"/a/y", b"", MS_MOVE).unwrap();
    assert_eq!(dev(&p, b"/c/y"), dev(&p, b"/a/y"));
    assert_eq!(dev(&p, b"/b"), dev(&p, b"/"));
}

/// The mounts of the tree a lazy umount takes count as gone when
/// propagate_umount looks at a candidate's submounts (umount_tree hides
/// them first): here the copy a lazily unmounted mount sits on goes too,
/// and with it every copy the move below had spread (found by
/// model_kernel_rdonly.rs, `model_matches_kernel_on_propagation`).
#[test]
fn lazy_umount_takes_the_copies_it_sits_on() {
    let (fs, p) = root();
    p.mkdir(b"/a", 0o777).unwrap();
    p.mkdir(b"/b", 0o777).unwrap();
    tmpfs(&p, b"/a");
    for d in [&b"/a/c"[..], b"/a/d", b"/a/c/d", b"/b/c", b"/b/d"] {
        p.mkdir(d, 0o755).unwrap();
    }
    make(&p, b"/a", MS_SHARED);
    // Peers of /a rooted at its c (one overmounting /a/c), and /a itself
    // at /a/d.
    p.mount(b"/a/c", b"/b/c", b"", MS_BIND).unwrap();
    p.mount(b"/a/c", b"/b/d", b"", MS_BIND).unwrap();
    p.mount(b"/a", b"/a/d", b"", MS_BIND).unwrap();
    p.mount(b"/a/c", b"/a/c", b"", MS_BIND).unwrap();
    assert_eq!(fs.mount_count(), 9);
    // Moved onto a peer, /a's tree is copied into every peer that shows c.
    p.mount(b"/a", b"/b/d", b"", MS_MOVE).unwrap();
    assert_eq!(fs.mount_count(), 37);
    assert_eq!(p.stat(b"/b/c").unwrap().mode & 0o7777, 0o1777);
    p.umount2(b"/b/c/d", MNT_DETACH).unwrap();
    assert_eq!(fs.mount_count(), 9);
    let st = p.stat(b"/b/c").unwrap();
    assert_eq!(st.mode & 0o7777, 0o755);
    assert!(exists(&p, b"/b/c/d") && !exists(&p, b"/b/c/c"));
}
