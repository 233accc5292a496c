//! Differential test of the FUSE mount against the kernel's own tmpfs: the
//! kernel differential test's random multi-process sequences
//! (`vfscale_model::ops`) run as real syscalls twice, step by step — on a
//! private tmpfs (as `kernel_diff.rs`) and on a vfscale namespace mounted
//! through FUSE (`vfscale_fuse::mount`, served by this process) — and
//! every step must give the same result and errno, and the final trees the
//! same names, types, modes, link counts, sizes, owners, data and link
//! text. `kernel_diff.rs` checks the core against Linux; this checks what
//! a program using `vfscale mount` sees: the FUSE translation (request
//! credentials, node ids and lookup counts, open handles, readdir offsets,
//! the umask and ACL plumbing) and the kernel's FUSE client in front of it.
//!
//! Two tests give the mount zero entry and attribute TTLs, so every walk
//! and stat asks the core, and every permission check of the kernel's (the
//! server turns on `default_permissions`) uses attributes fetched for it.
//! A third gives it 60 s TTLs, so the kernel answers from what the
//! server's replies left in its caches and from its own invalidation after
//! each change (a SETATTR reply carrying the old attributes passes the
//! first two and fails this one).
//!
//! How the mount side is set up: a thread of its own leaves the host's
//! mount namespace (`unshare(CLONE_NEWNS)`, everything private) and
//! network namespace (abstract socket names are per network namespace,
//! and the tmpfs side binds the same ones) and mounts the namespace on its
//! `/tmp`; then a second thread copies that mount namespace and
//! `pivot_root`s into the mount (`sandbox::enter_root_at`) and starts one
//! `KernelProcess` per scenario process there, so the mount is their
//! namespace's root as the tmpfs is on the other side. The FUSE server's
//! threads stay in the first namespace, with its root: a `pivot_root` in
//! theirs would move their root into the mount they serve, and they would
//! pin it. (A first version chrooted the processes instead: a sequence's
//! own chroot then left a cwd outside the root from which `..` reached
//! the host's `/`, and a long run made three directories there.) The case
//! then enters the private tmpfs (`sandbox`) for the tmpfs side. When the
//! case ends, the processes and their namespace are gone, the mount is
//! unmounted, the server's end awaited and the core's invariant checker
//! run on the namespace.
//!
//! Left out, as FUSE-inherent or not about the filesystem:
//! - FIFOs (would hang both sides) and device nodes with a device number
//!   (vfscale has no drivers);
//! - O_TMPFILE (fuser has no FUSE_TMPFILE: EOPNOTSUPP through the mount,
//!   documented), for openat2 too;
//! - openat2's RESOLVE_CACHED (the FUSE client's revalidation cannot run
//!   in its RCU walk: EAGAIN through the mount, a cached answer on tmpfs);
//! - connectable file handles (the kernel encodes them for FUSE, whose
//!   export operations find parents, not for tmpfs);
//! - chown(-1, -1) (it clears set-user-ID on tmpfs, not through the
//!   mount: documented);
//! - file seals (shmem's: every tmpfs file answers F_GET_SEALS, a FUSE
//!   file EINVAL);
//! - seeks in directories (cookies differ);
//! - umount2 with MNT_FORCE (on the FUSE mount, fuse_umount_begin aborts
//!   the connection before anything else is checked);
//! - statfs's `f_type` (FUSE_SUPER_MAGIC by the kernel);
//! - statx's STATX_MTIME and STATX_CTIME result bits when the mask asks
//!   for neither (tmpfs's multigrain timestamps leave them out,
//!   fill_mg_cmtime; the kernel's FUSE client reports them).
//! - a stat the kernel's FUSE client may answer from its attribute cache
//!   even after its own invalidation (fuse_update_get_attr): one with
//!   AT_STATX_DONT_SYNC ("whatever the system has cached"), or a statx
//!   whose mask asks for no basic field (a mask of 0 is never sent, and
//!   the invalidation marks only the basic fields stale, so STATX_BTIME
//!   alone waits for the TTL). After a create in a directory such a stat
//!   may report the directory's size from before, where tmpfs has nothing
//!   but the inode. The answer must name a file of the same type, and the stat
//!   asked again past the cache (without the flag, with the basic fields)
//!   must give tmpfs's answer (in a child, where it cannot be asked again,
//!   the type alone is compared).
//!
//! Session 20's version also left out what the kernel's FUSE client did
//! not check without `default_permissions` ("." and "..", socket
//! connects, the sticky rule for opens of sockets, `fs.protected_hardlinks`
//! for a link by descriptor, a refused LOOKUP dropping cached names and
//! the mounts on them); since the server turns it on, none of that is
//! left out.
//!
//! `mount_over_the_ring_matches_tmpfs` runs the same over
//! FUSE-over-io_uring (the ring transport decodes requests itself);
//! `mount_with_cached_entries_and_attributes_matches_tmpfs` with the long
//! TTLs.
//!
//! Skips (with a printed reason) when not root, without /dev/fuse, or when
//! the private tmpfs or the mount (or the ring) cannot be made. Bounded for CI:
//! `VFSCALE_MDIFF_CASES` (default 200) cases of up to 60 steps;
//! `VFSCALE_SEED` replays a run; failures shrink to a minimal sequence.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use vfscale::abi::*;
use vfscale::{Cred, Vfs};
use vfscale_difftest::compare::{
    directory_seek, eventfd_write_hint, memfd_flood, same_modulo_readdir_order, step_by_step,
};
use vfscale_difftest::seeded::{on_fresh_thread, seeded_runner};
use vfscale_difftest::snapshot::{same_trees, snapshot};
use vfscale_difftest::{
    enter_private_tmpfs_root, enter_root_at, own_network_namespace, private_mount_namespace,
    KernelProcess,
};
use vfscale_fuse::{MountConfig, Ttls};
use vfscale_model::ops::{
    apply, prelude, scenario_creds, steps_strategy, FdMap, Op, Outcome, StatSummary, Step,
};

/// Where the mount side's thread mounts the namespace, in its own mount
/// namespace (the host's `/tmp` is untouched).
const MOUNTPOINT: &str = "/tmp";

/// How long the server may take to end after the unmount before its
/// connection is aborted (fusectl) and the case fails.
const END_WAIT: Duration = Duration::from_secs(20);

/// How the mount side is served: over the ring or /dev/fuse, and the
/// kernel's entry and attribute TTLs.
#[derive(Clone, Copy)]
struct Serving {
    ring: bool,
    ttl: Duration,
}

/// The FUSE connections of this process's mounts that are still up: each
/// connection number (fusectl's directory name, the superblock's minor)
/// with the case that mounted it. A number is freed when its superblock
/// dies and the next mount may take it at once, so the end-of-case
/// timeout aborts a connection by number only while the registry (locked
/// across a mount and its registration) still names its own case: aborting
/// a number another test's new mount took would kill that test's session
/// (seen once: "the session ended with ECONNABORTED"). Every FUSE mount of
/// this binary is made by `start_mount_side`.
static CONNECTIONS: std::sync::Mutex<Vec<(u32, u64)>> = std::sync::Mutex::new(Vec::new());

/// The registry, even if a test panicked while holding it.
fn connections() -> std::sync::MutexGuard<'static, Vec<(u32, u64)>> {
    CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The TTLs of the cached variant: longer than any case.
const CACHED_TTL: Duration = Duration::from_secs(60);

/// Operations left out of the sequences (module comment).
fn left_out(op: &Op) -> bool {
    match op {
        Op::Mknodat { mode, dev, .. } => {
            let t = mode & S_IFMT;
            op.makes_fifo() || ((t == S_IFCHR || t == S_IFBLK) && *dev != 0)
        }
        Op::Open { flags, .. } => flags & O_TMPFILE == O_TMPFILE,
        // openat2: O_TMPFILE as above; RESOLVE_CACHED is EAGAIN through
        // the mount wherever the FUSE client must revalidate (zero TTLs:
        // everywhere), where tmpfs answers from its dcache.
        Op::Openat2 { how, .. } => {
            how.flags as i32 & O_TMPFILE == O_TMPFILE || how.resolve & RESOLVE_CACHED != 0
        }
        // chown(-1, -1) clears set-user-ID on tmpfs; through the mount it
        // is an empty SETATTR and clears nothing (vfscale-fuse's
        // server.rs, FUSE_HANDLE_KILLPRIV_V2; documented).
        Op::Fchown { uid, gid, .. } | Op::Fchownat { uid, gid, .. } => {
            (*uid, *gid) == (u32::MAX, u32::MAX)
        }
        // FUSE's export operations can find a parent (LOOKUP of ".."), so
        // the kernel encodes connectable handles there; tmpfs cannot.
        Op::NameToHandle { flags, .. } => flags & AT_HANDLE_CONNECTABLE != 0,
        // Seals are shmem's: every tmpfs file answers them, a FUSE file
        // EINVAL (the kernel's fcntl, before any request).
        Op::Fcntl { cmd, .. } => *cmd == F_ADD_SEALS || *cmd == F_GET_SEALS,
        // Inode flags through the mount (COMPATIBILITY.md, "inode flags"
        // and the FUSE table): the kernel forwards the ioctls on a file it
        // opens as the caller, and it knows no flags of its own, so its
        // own checks (permission, type, empty copies) answer first where
        // tmpfs says EPERM. No flag is ever set here.
        op if op.inode_flags_call() => true,
        // A forced unmount of the FUSE mount aborts its connection
        // (fuse_umount_begin), whatever do_umount answers after.
        Op::Umount2 { flags, .. } => flags & MNT_FORCE != 0,
        // A child's descriptors are not known here (`directory_seek`
        // needs them): no seeks in a fork but rewinds.
        Op::Fork(ops) => ops.iter().any(|o| {
            left_out(o)
                || matches!(o, Op::Lseek { off, whence, .. } if (*off, *whence) != (0, SEEK_SET))
        }),
        _ => false,
    }
}

/// statfs through FUSE reports the kernel's FUSE_SUPER_MAGIC as the type,
/// and the kernel's flags of the FUSE mount; the rest is the core's answer
/// and must match. statx through FUSE reports mtime and ctime whatever the
/// mask asks, tmpfs only when asked for one of them.
fn same_but_the_fs_type(op: &Op, tmpfs: &Outcome, mount: &Outcome) -> bool {
    match (op, tmpfs, mount) {
        (
            Op::Statfs(_) | Op::Fstatfs(_),
            Outcome::Statfs {
                f_bsize: a,
                f_namelen: b,
                ..
            },
            Outcome::Statfs {
                f_type,
                f_bsize: c,
                f_namelen: d,
                ..
            },
        ) => *f_type == FUSE_SUPER_MAGIC && (a, b) == (c, d),
        (Op::Statx { mask, .. }, Outcome::Statx(a, m), Outcome::Statx(b, n))
            if mask & (STATX_MTIME | STATX_CTIME) == 0 =>
        {
            a == b && m | STATX_MTIME | STATX_CTIME == *n
        }
        _ => false,
    }
}

const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;

/// Whether the two outcomes of `op` agree, allowing for what the module
/// comment lists (a fork's steps one by one).
fn same_on_both(op: &Op, tmpfs: &Outcome, mount: &Outcome) -> bool {
    let in_a_child = matches!(op, Op::Fork(_));
    step_by_step(op, tmpfs, mount, &|op, tmpfs, mount| {
        same_modulo_readdir_order(op, tmpfs, mount)
            || same_but_the_fs_type(op, tmpfs, mount)
            || (in_a_child && from_the_attribute_cache(op, tmpfs, mount))
    })
}

/// Whether `mount` may be the kernel's cached attributes where `tmpfs` is
/// the inode's own: a stat the kernel need not send to the server (the
/// module comment), naming a file of the same type (and for statx the
/// same result mask, but for the bits `same_but_the_fs_type` allows).
fn from_the_attribute_cache(op: &Op, tmpfs: &Outcome, mount: &Outcome) -> bool {
    let cached = |flags: i32| flags & AT_STATX_SYNC_TYPE == AT_STATX_DONT_SYNC;
    let same_type = |a: &StatSummary, b: &StatSummary| a.mode & S_IFMT == b.mode & S_IFMT;
    let times = STATX_MTIME | STATX_CTIME;
    match (op, tmpfs, mount) {
        (Op::Fstatat { flags, .. }, Outcome::Stat(a), Outcome::Stat(b)) => {
            cached(*flags) && same_type(a, b)
        }
        (Op::Statx { flags, mask, .. }, Outcome::Statx(a, m), Outcome::Statx(b, n)) => {
            (cached(*flags) || mask & STATX_BASIC_STATS == 0)
                && same_type(a, b)
                && m | times == n | times
        }
        _ => false,
    }
}

/// `op` (a stat `from_the_attribute_cache` accepted) asked so the kernel
/// asks the server: without AT_STATX_DONT_SYNC, and for statx with the
/// basic fields (the answer's mask is compared as for `op`).
fn past_the_cache(op: &Op) -> Op {
    let mut op = op.clone();
    match &mut op {
        Op::Fstatat { flags, .. } => *flags &= !AT_STATX_DONT_SYNC,
        Op::Statx { flags, mask, .. } => {
            *flags &= !AT_STATX_DONT_SYNC;
            *mask |= STATX_BASIC_STATS;
        }
        _ => {}
    }
    op
}

/// The mount side of a case: its processes, and the thread that owns the
/// mount and tears it down when told.
struct MountSide {
    procs: Vec<KernelProcess>,
    root: KernelProcess,
    finish: mpsc::Sender<()>,
    owner: std::thread::JoinHandle<Result<(), String>>,
}

impl MountSide {
    /// Ends the processes, unmounts and waits for the server; then the
    /// core's invariant checker's verdict on the namespace.
    fn finish(self) -> Result<(), String> {
        drop(self.procs);
        drop(self.root);
        let _ = self.finish.send(());
        self.owner
            .join()
            .map_err(|_| "the mount side's thread panicked".to_string())?
    }
}

/// Starts the mount side (call it while still in the host's mount
/// namespace: it needs /dev/fuse), served as `serving` says. `Err` says
/// why it cannot run here.
fn start_mount_side(serving: Serving) -> Result<MountSide, String> {
    let Serving { ring, ttl } = serving;
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let (finish, finished) = mpsc::channel::<()>();
    static CASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: only a unique number is needed.
    let case = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let owner = std::thread::spawn(move || -> Result<(), String> {
        let setup = || -> Result<_, String> {
            leave_host_namespaces()?;
            let vfs = Vfs::new();
            let cfg = MountConfig {
                threads: 2,
                ttls: Ttls {
                    entry: ttl,
                    attr: ttl,
                },
                allow_other: true,
                uring: ring,
                ..MountConfig::default()
            };
            let mut registry = connections();
            let mounted = vfscale_fuse::mount(&vfs, Path::new(MOUNTPOINT), &cfg)
                .map_err(|e| format!("mount: {e}"))?;
            let minor = connection_number()?;
            // A number this registry still lists belonged to a superblock
            // that is gone (the kernel gave the number out again).
            registry.retain(|&(n, _)| n != minor);
            registry.push((minor, case));
            drop(registry);
            if ring && mounted.transport() == vfscale_fuse::Transport::DevFuse {
                let why = mounted.uring_refusal().unwrap_or("no reason given");
                return Err(format!("the ring was refused: {why}"));
            }
            // The processes get a namespace of their own whose root is
            // (a copy of) the mount: the server threads, here, keep theirs.
            let (procs, root) = std::thread::spawn(|| {
                let dir = std::ffi::CString::new(MOUNTPOINT).expect("no NUL");
                enter_root_at(&dir).map_err(|e| e.to_string())?;
                let procs = scenario_creds()
                    .iter()
                    .map(KernelProcess::new)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok::<_, String>((procs, KernelProcess::new(&Cred::root())?))
            })
            .join()
            .map_err(|_| "the processes' thread panicked".to_string())??;
            Ok((vfs, mounted, minor, procs, root))
        };
        let (vfs, mut mounted, minor, procs, root) = match setup() {
            Ok(s) => s,
            Err(e) => {
                let _ = ready_tx.send(Err(e.clone()));
                return Err(e);
            }
        };
        let _ = ready_tx.send(Ok((procs, root)));
        // The processes are gone once this returns (or the driver died).
        let _ = finished.recv();
        // The processes' namespace (with whatever the sequence mounted in
        // it) is gone with them; here the mount has nothing on or in it.
        vfscale_fuse::unmount_path(Path::new(MOUNTPOINT), true)
            .map_err(|e| format!("unmount: {e}"))?;
        let deadline = Instant::now() + END_WAIT;
        while mounted.is_served() && Instant::now() < deadline {
            // A file of the mount sent over a socket that was then closed
            // stays open in the kernel (and the mount with it) until the
            // AF_UNIX garbage collector runs, which the release of any
            // AF_UNIX socket schedules while files are in flight.
            drop(std::os::unix::net::UnixStream::pair());
            std::thread::sleep(Duration::from_millis(2));
        }
        let ours = {
            let mut registry = connections();
            let ours = registry.contains(&(minor, case));
            if ours && mounted.is_served() {
                let _ = std::fs::write(format!("/sys/fs/fuse/connections/{minor}/abort"), "1");
            }
            registry.retain(|&entry| entry != (minor, case));
            ours
        };
        if mounted.is_served() {
            if !ours {
                // The superblock is gone (the kernel has ended the
                // connection) and its number is another mount's: leave the
                // threads rather than wait on them.
                std::mem::forget(mounted);
                return Err(format!(
                    "the server did not end within {END_WAIT:?} of the unmount, its \
                     superblock gone (connection number {minor} reused; not aborted)"
                ));
            }
            let _ = mounted.join();
            return Err(format!(
                "the server did not end within {END_WAIT:?} of the unmount (aborted)"
            ));
        }
        mounted
            .join()
            .map_err(|e| format!("the session ended with {e}"))?;
        drop(mounted);
        vfs.drop_caches();
        vfs.check_invariants()
            .map(drop)
            .map_err(|e| format!("invariants after the sequence: {e}"))
    });
    match ready_rx.recv() {
        Ok(Ok((procs, root))) => Ok(MountSide {
            procs,
            root,
            finish,
            owner,
        }),
        Ok(Err(e)) => {
            let _ = owner.join();
            Err(e)
        }
        Err(_) => Err("the mount side's thread died during setup".into()),
    }
}

/// A mount namespace of the calling thread's own, nothing propagating,
/// and a network namespace: abstract socket names live there, and the
/// tmpfs side binds the same ones.
fn leave_host_namespaces() -> Result<(), String> {
    private_mount_namespace(libc::CLONE_NEWNET).map_err(|e| e.to_string())?;
    // fusectl, for aborting a connection that outlives its unmount (it may
    // already be mounted: then this fails harmlessly).
    // SAFETY: valid NUL-terminated strings; no data.
    unsafe {
        libc::mount(
            c"fusectl".as_ptr(),
            c"/sys/fs/fuse/connections".as_ptr(),
            c"fusectl".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    Ok(())
}

/// The mount's FUSE connection number (its device's minor), for fusectl.
fn connection_number() -> Result<u32, String> {
    use std::os::linux::fs::MetadataExt;
    let dev = std::fs::metadata(MOUNTPOINT)
        .map_err(|e| format!("stat of the mount: {e}"))?
        .st_dev();
    Ok(libc::minor(dev))
}

/// Runs `steps` on both sides on a fresh thread (the mount served over
/// `serving`).
fn compare(steps: Vec<Step>, serving: Serving) -> Result<(), TestCaseError> {
    on_fresh_thread(move || compare_on_this_thread(&steps, serving))
}

fn compare_on_this_thread(steps: &[Step], serving: Serving) -> Result<(), TestCaseError> {
    let mount = start_mount_side(serving).map_err(TestCaseError::fail)?;
    // Abstract socket names of their own for the tmpfs side too: the
    // tests of this file run at once.
    own_network_namespace().map_err(|e| TestCaseError::fail(e.to_string()))?;
    enter_private_tmpfs_root().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let tprocs = KernelProcess::scenario().map_err(TestCaseError::fail)?;
    let mut all = prelude();
    all.extend_from_slice(steps);
    let mut tmaps = vec![FdMap::default(); tprocs.len()];
    let mut mmaps = vec![FdMap::default(); tprocs.len()];
    for (i, step) in all.iter().enumerate() {
        let p = step.proc % tprocs.len();
        if directory_seek(&tprocs[p], &tmaps[p], &step.op)
            || memfd_flood(&tprocs[p], &tmaps[p], &step.op)
            || eventfd_write_hint(&tprocs[p], &tmaps[p], &step.op)
        {
            continue;
        }
        let t = apply(&tprocs[p], &step.op, &mut tmaps[p]);
        let mut m = apply(&mount.procs[p], &step.op, &mut mmaps[p]);
        if !same_on_both(&step.op, &t, &m) && from_the_attribute_cache(&step.op, &t, &m) {
            m = apply(&mount.procs[p], &past_the_cache(&step.op), &mut mmaps[p]);
        }
        if same_on_both(&step.op, &t, &m) {
            continue;
        }
        prop_assert_eq!(
            t,
            m,
            "step {} of {} (left: tmpfs, right: the mount): {:?}",
            i,
            all.len(),
            all[i]
        );
    }
    let troot = KernelProcess::new(&Cred::root()).map_err(TestCaseError::fail)?;
    let ts = snapshot(&troot, 8);
    let ms = snapshot(&mount.root, 8);
    same_trees(&ts, &ms, "left: tmpfs, right: the mount")?;
    drop(tprocs);
    drop(troot);
    mount.finish().map_err(TestCaseError::fail)
}

/// Whether both sides can run here; prints why not.
fn both_sides_available(serving: Serving) -> bool {
    if !Path::new("/dev/fuse").exists() {
        println!("mount differential test skipped: /dev/fuse is missing");
        return false;
    }
    let probe = std::thread::spawn(move || {
        let mount = start_mount_side(serving)?;
        enter_private_tmpfs_root().map_err(|e| e.to_string())?;
        mount.finish()
    })
    .join()
    .unwrap_or_else(|_| Err("probe panicked".into()));
    match probe {
        Ok(()) => true,
        Err(e) => {
            println!("mount differential test skipped: {e}");
            false
        }
    }
}

fn run_cases(serving: Serving, what: &str) {
    if !both_sides_available(serving) {
        return;
    }
    let (mut runner, seed) = seeded_runner(what, "VFSCALE_MDIFF_CASES", 200);
    let strategy = steps_strategy(3, 1..60).prop_map(|s| {
        s.into_iter()
            .filter(|st| !left_out(&st.op))
            .collect::<Vec<_>>()
    });
    if let Err(e) = runner.run(&strategy, |steps| compare(steps, serving)) {
        panic!("seed {seed}: {e}");
    }
}

#[test]
fn mount_matches_tmpfs() {
    run_cases(
        Serving {
            ring: false,
            ttl: Duration::ZERO,
        },
        "mount differential test",
    );
}

/// The same over FUSE-over-io_uring (the ring's own request decoder,
/// `uring/dispatch.rs`); skips when the kernel refuses the ring.
#[test]
fn mount_over_the_ring_matches_tmpfs() {
    run_cases(
        Serving {
            ring: true,
            ttl: Duration::ZERO,
        },
        "mount differential test (io_uring)",
    );
}

/// The same with long TTLs, as a mount is used: walks, stats and the
/// kernel's permission checks are answered from the kernel's caches, so
/// what is compared is the attributes and entries the server's replies
/// leave there and the kernel's own invalidation after each change.
#[test]
fn mount_with_cached_entries_and_attributes_matches_tmpfs() {
    run_cases(
        Serving {
            ring: false,
            ttl: CACHED_TTL,
        },
        "mount differential test (TTLs 60 s)",
    );
}
