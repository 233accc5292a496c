//! The operation-sequence harness run against two independent model
//! instances: outcomes must be identical (the harness and the model are
//! deterministic), no call may panic, and once every process has exited no
//! open file may remain (the reference counting balances).

use proptest::prelude::*;
use vfscale::ProcessApi;
use vfscale_model::ops::{prelude, run, scenario_creds, steps_strategy, Outcome, Step};
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
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

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
/// semantics, not only their errors): within a few hundred sequences an
/// access ACL and a default ACL are stored (a later getxattr of each
/// answers bytes), and a listing names one.
#[test]
fn generated_acls_are_stored_and_read_back() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use vfscale_model::ops::Op;
    let mut runner = TestRunner::deterministic();
    let (mut access, mut default, mut listed) = (false, false, false);
    for _ in 0..2_000 {
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
