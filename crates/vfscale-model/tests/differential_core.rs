//! Differential property test: the same random multi-process operation
//! sequences run on vfscale's `Process` and on the global-lock model; every
//! step must give the same result and errno, and at the end vfscale's
//! invariant checker must pass. Failures shrink to a minimal sequence.

use proptest::prelude::*;
use vfscale::{ProcessApi, Vfs};
use vfscale_model::ops::{
    apply, prelude, propagation_steps, proptest_cases, scenario_creds, steps_strategy, FdMap, Op,
    Step, MOUNT_CAP,
};
use vfscale_model::ModelFs;

/// Operations whose difference from the model is documented in
/// docs/COMPATIBILITY.md; they are dropped from the sequences.
fn documented_deviation(op: &Op) -> bool {
    use vfscale::abi::*;
    match op {
        Op::Open { flags, .. } => flags & O_PATH == 0 && flags & O_ACCMODE == O_ACCMODE,
        Op::Renameat2 { flags, .. } => flags & RENAME_WHITEOUT != 0,
        // The model has no pipe buffer (its FIFO reads and writes answer
        // EAGAIN), while vfscale's FIFOs carry data and block like Linux's
        // (`Op::makes_fifo`).
        Op::Mknodat { .. } => op.makes_fifo(),
        Op::Fork(ops) => ops.iter().any(documented_deviation),
        _ => op.not_in_model(),
    }
}

fn compare(steps: &[Step]) -> Result<(), TestCaseError> {
    let model = ModelFs::new();
    let mprocs: Vec<_> = scenario_creds()
        .into_iter()
        .map(|c| model.process(c))
        .collect();
    let vfs = Vfs::new();
    let vprocs: Vec<_> = scenario_creds()
        .into_iter()
        .map(|c| vfs.process(c))
        .collect();
    let mut all = prelude();
    all.extend_from_slice(steps);
    let mut mmaps = vec![FdMap::default(); mprocs.len()];
    let mut vmaps = vec![FdMap::default(); vprocs.len()];
    for (i, step) in all.iter().enumerate() {
        if step.op.adds_mounts() && model.mount_count() >= MOUNT_CAP {
            continue;
        }
        let p = step.proc % mprocs.len();
        let e = apply(&mprocs[p], &step.op, &mut mmaps[p]);
        let g = apply(&vprocs[p], &step.op, &mut vmaps[p]);
        prop_assert_eq!(e, g, "step {} of {}: {:?}", i, all.len(), all[i]);
    }
    for p in vprocs {
        p.exit();
    }
    vfs.drop_caches();
    if let Err(e) = vfs.check_invariants() {
        return Err(TestCaseError::fail(format!(
            "invariants after the sequence: {e}"
        )));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_cases(256), ..ProptestConfig::default() })]

    #[test]
    fn core_matches_model(steps in steps_strategy(3, 1..60).prop_map(|s| s.into_iter().filter(|st| !documented_deviation(&st.op)).collect::<Vec<_>>())) {
        compare(&steps)?;
    }

    /// Mount-heavy sequences, where the plain ones rarely find a mount's
    /// root to change (propagation).
    #[test]
    fn core_matches_model_on_propagation(steps in propagation_steps()) {
        compare(&steps)?;
    }
}
