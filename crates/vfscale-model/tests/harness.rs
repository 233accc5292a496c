//! The operation-sequence harness run against two independent model
//! instances: outcomes must be identical (the harness and the model are
//! deterministic), no call may panic, and once every process has exited no
//! open file may remain (the reference counting balances).

use proptest::prelude::*;
use vfscale::ProcessApi;
use vfscale_model::ops::{
    prelude, proptest_cases, run, scenario_creds, steps_strategy, Outcome, Step,
};
use vfscale_model::{ModelFs, ModelProcess};

/// Runs the prelude and `steps` on `procs` (the scenario's processes of
/// one fresh namespace), then exits them; returns every outcome.
fn run_with_prelude<P: ProcessApi>(procs: Vec<P>, steps: &[Step]) -> Vec<Outcome> {
    let mut all = prelude();
    all.extend_from_slice(steps);
    let out = run(&procs, &all);
    for p in procs {
        p.exit();
    }
    out
}

fn run_on_fresh_model(steps: &[Step]) -> (Vec<Outcome>, ModelFs) {
    let fs = ModelFs::new();
    let procs: Vec<ModelProcess> = scenario_creds()
        .into_iter()
        .map(|c| fs.process(c))
        .collect();
    (run_with_prelude(procs, steps), fs)
}

/// `run_with_prelude` on a fresh vfscale namespace; every step with its
/// outcome.
fn run_on_fresh_vfs(steps: Vec<Step>) -> Vec<(Step, Outcome)> {
    let vfs = vfscale::Vfs::new();
    let procs: Vec<_> = scenario_creds()
        .into_iter()
        .map(|c| vfs.process(c))
        .collect();
    let out = run_with_prelude(procs, &steps);
    prelude().into_iter().chain(steps).zip(out).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_cases(96), ..ProptestConfig::default() })]

    #[test]
    fn two_models_agree(steps in steps_strategy(3, 1..80)) {
        let (a, fs_a) = run_on_fresh_model(&steps);
        let (b, _fs_b) = run_on_fresh_model(&steps);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(fs_a.open_files(), 0);
    }
}

/// The strategy reaches success for most kinds of op (a harness that only
/// produced errors would test little).
#[test]
fn strategy_reaches_successes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut ok = 0usize;
    let mut total = 0usize;
    let mut kinds = std::collections::BTreeSet::new();
    for _ in 0..90 {
        let steps = steps_strategy(3, 60..61)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let (out, _) = run_on_fresh_model(&steps);
        for (step, o) in prelude().iter().chain(&steps).zip(&out) {
            // Calls the model does not implement are counted on vfscale
            // (`strategy_reaches_successes_of_every_call`).
            if *o == Outcome::Err(vfscale::Errno::ENOSYS) {
                continue;
            }
            total += 1;
            if !matches!(o, Outcome::Err(_)) {
                ok += 1;
                let name = format!("{:?}", step.op);
                let kind = name.split(|c: char| !c.is_alphanumeric()).next();
                kinds.insert(kind.unwrap().to_string());
            }
        }
    }
    assert!(ok * 4 > total, "only {ok} of {total} ops succeeded");
    assert!(
        kinds.len() >= 40,
        "only these kinds ever succeed: {kinds:?}"
    );
}

/// Every kind of op succeeds at least once on vfscale (the calls the model
/// lacks included), so the kernel differential test compares more than
/// errors for each of them.
#[test]
fn strategy_reaches_successes_of_every_call() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let kind = |op: &vfscale_model::ops::Op| {
        let name = format!("{op:?}");
        name.split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_string()
    };
    // The calls the model lacks (the model test counts the others).
    let required = [
        "Setxattr",
        "Getxattr",
        "Listxattr",
        "Removexattr",
        "Fallocate",
        "CopyFileRange",
        "Syncfs",
        "NameToHandle",
        "Openat2",
        "Pipe2",
        "Socketpair",
        "Socket",
        "Listener",
        "Client",
        "Bind",
        "Listen",
        "Connect",
        "Accept4",
        "SockName",
        "Sendto",
        "Disconnect",
        "PeerCred",
        "FionRead",
        "Recvfrom",
        "Sendmsg",
        "Recvmsg",
        "Getsockopt",
        "Setsockopt",
        "Shutdown",
        "Eventfd",
        "MemfdCreate",
        "Poll",
        "Fcntl",
        "FdPath",
    ];
    // Sequences until each has succeeded, at most MAX_SEQUENCES of them:
    // some successes need two ops to meet (a getxattr of a name a setxattr
    // set on the same file), so how many sequences that takes moves
    // whenever the generator changes (session 13: from under 150 to ~670;
    // session 14: ~3,400, an accept needing a listener, a client of the
    // same name and type, then the accept in the listener's process;
    // session 15: ~4,100 with sendto/recvfrom added, after the socket
    // calls got their own group, two favoured names for listeners and
    // clients and descriptors that favour the newest — without those,
    // 11,000–53,000; after the generator gaps were closed, which moved
    // the deterministic stream: 16,365, Accept4 last).
    // FIFOs are left out: their opens would block here.
    const MAX_SEQUENCES: usize = 25_000;
    let makes_fifo = |op: &vfscale_model::ops::Op| match op {
        vfscale_model::ops::Op::Fork(ops) => ops.iter().any(|o| o.makes_fifo()),
        op => op.makes_fifo(),
    };
    let mut runner = TestRunner::deterministic();
    let mut succeeded = std::collections::BTreeSet::new();
    for _ in 0..MAX_SEQUENCES {
        if required.iter().all(|k| succeeded.contains(*k)) {
            break;
        }
        let mut steps = steps_strategy(3, 60..61)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        steps.retain(|s| !makes_fifo(&s.op));
        for (step, o) in run_on_fresh_vfs(steps) {
            if !matches!(o, Outcome::Err(_)) {
                succeeded.insert(kind(&step.op));
            }
        }
    }
    let never: Vec<_> = required
        .iter()
        .filter(|k| !succeeded.contains(**k))
        .collect();
    assert!(never.is_empty(), "these kinds never succeed: {never:?}");
}

/// The generator's ACLs take effect (so the differential tests compare ACL
/// semantics, not only their errors): within a few thousand sequences an
/// access ACL and a default ACL are stored (a later getxattr of each
/// answers bytes), and a listing names one. The deterministic stream
/// needed 1,969 sequences before the inode-flag ioctls joined the
/// generator and 3,432 after (the default ACL read back last; leaving the
/// flag calls out of the sequences changes nothing, so it is the stream
/// that moved), hence the bound of 6,000.
#[test]
fn generated_acls_are_stored_and_read_back() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use vfscale_model::ops::Op;
    let mut runner = TestRunner::deterministic();
    let (mut access, mut default, mut listed) = (false, false, false);
    for _ in 0..6_000 {
        if access && default && listed {
            return;
        }
        let mut steps = steps_strategy(3, 60..61)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        steps.retain(|s| !s.op.makes_fifo() && !matches!(s.op, Op::Fork(_)));
        for (step, o) in run_on_fresh_vfs(steps) {
            match (&step.op, &o) {
                (Op::Getxattr { name, .. }, Outcome::Count(_) | Outcome::Data(_)) => {
                    access |= name.0 == b"system.posix_acl_access";
                    default |= name.0 == b"system.posix_acl_default";
                }
                (Op::Listxattr { .. }, Outcome::Data(list)) => {
                    let names: Vec<&[u8]> = list.0.split(|&b| b == 0).collect();
                    listed |= names.contains(&&b"system.posix_acl_access"[..])
                        || names.contains(&&b"system.posix_acl_default"[..]);
                }
                _ => {}
            }
        }
    }
    panic!("stored access ACL read back: {access}, default: {default}, listed: {listed}");
}

/// The generator's inode flags take effect (so the differential tests
/// compare what immutable and append-only forbid, not only the ioctls'
/// errors): within a few hundred sequences, FS_IOC_SETFLAGS (by
/// descriptor or chattr's way) or FS_IOC_FSSETXATTR makes a regular file
/// and a directory immutable and append-only, and a later step of the
/// same sequence fails with EPERM after one was (in the model's
/// deterministic stream, 275 of 3,000 sequences of 60 steps made an
/// inode immutable or append-only).
#[test]
fn generated_inode_flags_take_effect() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use vfscale::abi::*;
    use vfscale_model::ops::{apply, FdMap, Op};
    let mut runner = TestRunner::deterministic();
    // (immutable, append-only) × (regular file, directory) seen set, and an
    // EPERM after one was set.
    let mut seen = [[false; 2]; 2];
    let mut eperm_after = false;
    let (mut sequences, mut protected_sequences) = (0, 0);
    while sequences < 3_000 && !(seen.iter().flatten().all(|s| *s) && eperm_after) {
        sequences += 1;
        let steps = steps_strategy(3, 60..61)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let fs = ModelFs::new();
        let procs: Vec<ModelProcess> = scenario_creds()
            .into_iter()
            .map(|c| fs.process(c))
            .collect();
        let mut maps = vec![FdMap::default(); procs.len()];
        let mut protected = false;
        for s in prelude().iter().chain(&steps) {
            let i = s.proc % procs.len();
            let o = apply(&procs[i], &s.op, &mut maps[i]);
            let (fd, opened) = match (&s.op, &o) {
                (Op::FsSetflags { fd, .. } | Op::FsSetxattr { fd, .. }, Outcome::Unit) => {
                    (maps[i].resolve(*fd), false)
                }
                (Op::Chattr { path, .. }, Outcome::Seq(v))
                    if v[1..] == [Outcome::Unit, Outcome::Unit] =>
                {
                    let flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW;
                    match procs[i].openat(AT_FDCWD, &path.0, flags, 0) {
                        Ok(n) => (n, true),
                        Err(_) => continue,
                    }
                }
                _ => {
                    let eperm = Outcome::Err(vfscale::Errno::EPERM);
                    eperm_after |= protected
                        && (o == eperm || matches!(&o, Outcome::Seq(v) if v.contains(&eperm)));
                    continue;
                }
            };
            let got = (procs[i].fs_ioc_getflags(fd), procs[i].fstat(fd));
            if opened {
                procs[i].close(fd).unwrap();
            }
            let (Ok(flags), Ok(st)) = got else {
                continue;
            };
            let dir = usize::from(s_isdir(st.mode));
            for (k, f) in [FS_IMMUTABLE_FL, FS_APPEND_FL].into_iter().enumerate() {
                if flags & f != 0 {
                    seen[k][dir] = true;
                    protected = true;
                }
            }
        }
        protected_sequences += usize::from(protected);
        for p in procs {
            p.exit();
        }
    }
    println!(
        "{protected_sequences} of {sequences} sequences made an inode immutable or append-only"
    );

    assert!(
        seen.iter().flatten().all(|s| *s) && eperm_after,
        "immutable file, dir: {:?}; append-only file, dir: {:?}; EPERM after: {eperm_after}",
        seen[0],
        seen[1]
    );
}
