//! Differential test of the reference model against the real kernel, on
//! namespaces with read-only mounts: each case starts with a tmpfs at `/a`
//! (read-only, or written to and then made read-only or writable again by
//! a plain remount or a bind remount, or rbound at `/b` and the bind made
//! read-only or writable), then runs random multi-process steps (the
//! model's generator, `vfscale_model::ops`) on the model's `ModelProcess`
//! and, step by step, as real syscalls on a private tmpfs
//! (`KernelProcess`). Every step must give the same result and errno, and
//! at the end both namespaces must hold the same names with the same
//! types, modes, link counts, sizes, owners, file data and link text.
//!
//! It checks the model's restatement of Linux's read-only rules (EROFS at
//! each write site, EBUSY of the remounts, statfs's ST_RDONLY, no atime
//! through a read-only mount) against Linux itself, independently of
//! vfscale; `model_matches_kernel_on_propagation` does the same for mount
//! propagation (shared, slave, private and unbindable mounts) with
//! mount-heavy sequences.
//!
//! Skips (with a printed reason) when not root or when the private tmpfs
//! cannot be mounted. Bounded for CI: `VFSCALE_KDIFF_CASES` (default 48)
//! cases of up to 60 steps; `VFSCALE_SEED` replays a run (the seed is
//! printed); failures shrink to a minimal sequence.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vfscale::abi::*;
use vfscale::{Cred, ProcessApi};
use vfscale_difftest::compare::{
    directory_seek, kernel_cannot_compare, protected_link_by_fd, root_mount_op,
    same_modulo_readdir_order, step_by_step,
};
use vfscale_difftest::seeded::{on_fresh_thread, seeded_runner};
use vfscale_difftest::snapshot::{same_trees, snapshot};
use vfscale_difftest::{enter_private_tmpfs_root, KernelProcess, SandboxError};
use vfscale_model::ops::{
    apply, prelude, scenario_creds, steps_strategy, FdArg, FdMap, Op, Step, MOUNT_CAP,
};
use vfscale_model::ModelFs;

/// Operations the two sides cannot compare: calls the model lacks
/// (`Op::not_in_model`), what the kernel side cannot run as the model sees
/// it (`kernel_cannot_compare`: FIFOs, device numbers, NUL bytes, other
/// filesystem types), and steps of a child whose state the filters below
/// cannot read.
fn not_comparable(op: &Op) -> bool {
    match op {
        Op::Fork(ops) => ops.iter().any(|o| {
            not_comparable(o)
                || matches!(o, Op::Linkat { old, flags, .. } if old.0.is_empty() && flags & AT_EMPTY_PATH != 0)
                || matches!(o, Op::Umount2 { .. })
                || matches!(o, Op::Lseek { off, whence, .. } if (*off, *whence) != (0, SEEK_SET))
        }),
        op => op.not_in_model() || kernel_cannot_compare(op),
    }
}

/// Runs `steps` on both sides on a fresh thread (which owns the private
/// tmpfs namespace and ends with the case).
fn compare(steps: Vec<Step>) -> Result<(), TestCaseError> {
    on_fresh_thread(move || compare_on_this_thread(&steps))
}

fn compare_on_this_thread(steps: &[Step]) -> Result<(), TestCaseError> {
    let model = ModelFs::new();
    enter_private_tmpfs_root().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let kprocs = KernelProcess::scenario().map_err(TestCaseError::fail)?;
    let mprocs: Vec<_> = scenario_creds()
        .into_iter()
        .map(|c| model.process(c))
        .collect();
    let mut all = prelude();
    all.extend_from_slice(steps);
    let mut kmaps = vec![FdMap::default(); kprocs.len()];
    let mut mmaps = vec![FdMap::default(); mprocs.len()];
    let namespace_root = mprocs[0].stat(b"/").ok().map(|r| (r.dev, r.ino));
    for (i, step) in all.iter().enumerate() {
        let p = step.proc % mprocs.len();
        // Read on the model's side (both sides agree up to here): seeks in
        // directories (opaque cookies), umount of a root (the model's
        // documented EBUSY, Linux's read-only remount), and linkat by a
        // descriptor the kernel side cannot retry with CAP_FOWNER.
        if directory_seek(&mprocs[p], &mmaps[p], &step.op)
            || root_mount_op(&mprocs[p], namespace_root, &step.op)
            || protected_link_by_fd(&mprocs[p], &mmaps[p], p, &step.op)
            || (step.op.adds_mounts() && model.mount_count() >= MOUNT_CAP)
        {
            continue;
        }
        let e = apply(&kprocs[p], &step.op, &mut kmaps[p]);
        let g = apply(&mprocs[p], &step.op, &mut mmaps[p]);
        if step_by_step(&step.op, &e, &g, &same_modulo_readdir_order) {
            continue;
        }
        prop_assert_eq!(
            e,
            g,
            "step {} of {} (left: kernel, right: model): {:?}",
            i,
            all.len(),
            all[i]
        );
    }
    // The final namespaces, as root.
    let kroot = KernelProcess::new(&Cred::root()).map_err(TestCaseError::fail)?;
    let mroot = model.process(Cred::root());
    let ks = snapshot(&kroot, 8);
    let ms = snapshot(&mroot, 8);
    same_trees(&ks, &ms, "left: kernel, right: model")?;
    Ok(())
}

/// Whether the kernel side can run here; prints why not.
fn kernel_side_available() -> bool {
    let probe = std::thread::spawn(enter_private_tmpfs_root)
        .join()
        .unwrap_or_else(|_| Err(SandboxError::Setup("probe panicked".into())));
    match probe {
        Ok(()) => true,
        Err(e) => {
            println!("model-vs-kernel read-only test skipped: {e}");
            false
        }
    }
}

/// The first steps of each case: a tmpfs at `/a`, read-only or not, maybe
/// given a file (left open for writing, or closed, or unlinked while open
/// for reading: a writer makes a later read-only remount EBUSY, and an
/// unlinked inode still alive a plain one), a directory and a symlink,
/// then maybe
/// remounted (the instance with a plain remount, or the mount alone with
/// MS_BIND), or rbound at `/b` and the bind remounted.
fn readonly_mounts() -> impl Strategy<Value = Vec<Step>> {
    let step = |op| Step { proc: 0, op };
    let mount = move |source: &[u8], target: &[u8], fstype: &[u8], flags| {
        step(Op::Mount {
            source: source.into(),
            target: target.into(),
            fstype: fstype.into(),
            flags,
        })
    };
    let first = vec![
        MS_RDONLY,
        MS_RDONLY | MS_NOATIME,
        MS_RDONLY | MS_NOEXEC,
        0,
        MS_STRICTATIME,
    ];
    let again = vec![
        0,
        MS_RDONLY,
        MS_RDONLY,
        MS_RDONLY | MS_STRICTATIME,
        MS_RDONLY | MS_NOEXEC,
        MS_STRICTATIME,
    ];
    (
        prop::sample::select(first),
        0..4u8,
        prop::sample::select(again),
        0..5u8,
    )
        .prop_map(move |(flags, fill, again, how)| {
            let mut steps = vec![mount(b"none", b"/a", b"tmpfs", flags)];
            if fill > 0 {
                steps.push(step(Op::Open {
                    dirfd: FdArg::Cwd,
                    path: b"/a/a"[..].into(),
                    flags: O_CREAT | O_WRONLY,
                    mode: 0o666,
                }));
                steps.push(step(Op::Write {
                    fd: FdArg::Slot(0),
                    data: b"data"[..].into(),
                }));
                if fill != 2 {
                    steps.push(step(Op::Close(FdArg::Slot(0))));
                }
                if fill == 3 {
                    steps.push(step(Op::Open {
                        dirfd: FdArg::Cwd,
                        path: b"/a/a"[..].into(),
                        flags: O_RDONLY,
                        mode: 0,
                    }));
                    steps.push(step(Op::Unlinkat {
                        dirfd: FdArg::Cwd,
                        path: b"/a/a"[..].into(),
                        flags: 0,
                    }));
                }
                steps.push(step(Op::Mkdirat {
                    dirfd: FdArg::Cwd,
                    path: b"/a/b"[..].into(),
                    mode: 0o777,
                }));
                steps.push(step(Op::Symlinkat {
                    target: b"a"[..].into(),
                    dirfd: FdArg::Cwd,
                    path: b"/a/l"[..].into(),
                }));
            }
            match how {
                1 => steps.push(mount(b"", b"/a", b"", MS_REMOUNT | again)),
                2 => steps.push(mount(b"", b"/a", b"", MS_REMOUNT | MS_BIND | again)),
                3 | 4 => {
                    steps.push(mount(b"/a", b"/b", b"", MS_BIND | MS_REC));
                    let bind = if how == 3 { MS_BIND } else { 0 };
                    steps.push(mount(b"", b"/b", b"", MS_REMOUNT | bind | again));
                }
                _ => {}
            }
            steps
        })
}

/// The random sequences after `readonly_mounts`.
#[test]
fn model_matches_kernel_on_readonly_mounts() {
    if !kernel_side_available() {
        return;
    }
    let (mut runner, seed) =
        seeded_runner("model-vs-kernel read-only test", "VFSCALE_KDIFF_CASES", 48);
    let strategy = (readonly_mounts(), steps_strategy(3, 1..60)).prop_map(|(mut all, s)| {
        all.extend(s.into_iter().filter(|st| !not_comparable(&st.op)));
        all
    });
    if let Err(e) = runner.run(&strategy, compare) {
        panic!("seed {seed}: {e}");
    }
}

/// Random mount propagation sequences (shared, slave, private and
/// unbindable mounts; binds, new mounts, moves and umounts that propagate
/// or not), model against kernel: every step's result and the final
/// visible trees.
#[test]
fn model_matches_kernel_on_propagation() {
    if !kernel_side_available() {
        return;
    }
    let (mut runner, seed) = seeded_runner(
        "model-vs-kernel propagation test",
        "VFSCALE_KDIFF_CASES",
        48,
    );
    if let Err(e) = runner.run(&vfscale_model::ops::propagation_steps(), compare) {
        panic!("seed {seed}: {e}");
    }
}

/// What `atime_script` saw after each read: whether the file's atime kept
/// the old value it was given (true) or the read updated it (false).
#[derive(Debug, PartialEq, Eq)]
struct AtimeSeen {
    through_readonly_bind: bool,
    through_writable_mount: bool,
    on_readonly_instance: bool,
}

/// Reads a file (relatime would update its atime: it is older than the
/// mtime) through a read-only bind, through its writable mount, and after
/// a plain read-only remount of the instance; atime is not in the random
/// test's outcomes, so this script checks it. Run as root.
fn atime_script<P: ProcessApi>(p: &P) -> SysResult<AtimeSeen> {
    const OLD: i64 = 1000;
    let age = |p: &P| {
        p.utimensat(
            AT_FDCWD,
            b"/x/f",
            Some([Timespec::new(OLD, 0), Timespec::OMIT]),
            0,
        )
    };
    let read_kept = |p: &P, path: &[u8]| -> SysResult<bool> {
        let fd = p.open(path, O_RDONLY, 0)?;
        p.read(fd, &mut [0u8; 4])?;
        p.close(fd)?;
        Ok(p.stat(b"/x/f")?.atime.sec == OLD)
    };
    p.mkdir(b"/x", 0o755)?;
    p.mkdir(b"/y", 0o755)?;
    p.mount(b"none", b"/x", b"tmpfs", 0)?;
    let fd = p.open(b"/x/f", O_CREAT | O_WRONLY, 0o644)?;
    p.write(fd, b"data")?;
    p.close(fd)?;
    p.mount(b"/x", b"/y", b"", MS_BIND)?;
    p.mount(b"", b"/y", b"", MS_REMOUNT | MS_BIND | MS_RDONLY)?;
    age(p)?;
    let through_readonly_bind = read_kept(p, b"/y/f")?;
    let through_writable_mount = read_kept(p, b"/x/f")?;
    age(p)?;
    p.mount(b"", b"/x", b"", MS_REMOUNT | MS_RDONLY)?;
    let on_readonly_instance = read_kept(p, b"/x/f")?;
    Ok(AtimeSeen {
        through_readonly_bind,
        through_writable_mount,
        on_readonly_instance,
    })
}

/// No atime update through an effectively read-only mount, on both sides;
/// the read through the writable mount shows that an update is seen.
#[test]
fn atime_kept_through_readonly_mounts() {
    if !kernel_side_available() {
        return;
    }
    let kernel = std::thread::spawn(|| {
        enter_private_tmpfs_root().map_err(|e| e.to_string())?;
        let k = KernelProcess::new(&Cred::root())?;
        atime_script(&k).map_err(|e| format!("{e:?}"))
    })
    .join()
    .expect("kernel side panicked");
    let model = atime_script(&ModelFs::new().process(Cred::root()));
    let want = AtimeSeen {
        through_readonly_bind: true,
        through_writable_mount: false,
        on_readonly_instance: true,
    };
    assert_eq!(kernel, Ok(want), "kernel");
    assert_eq!(
        model.map_err(|e| format!("{e:?}")),
        kernel,
        "model against kernel"
    );
}
