//! The operation-sequence harness run against two independent model
//! instances: outcomes must be identical (the harness and the model are
//! deterministic), no call may panic, and once every process has exited no
//! open file may remain (the reference counting balances).

use proptest::prelude::*;
use vfscale::ProcessApi;
use vfscale_model::ops::{prelude, run, scenario_creds, steps_strategy, Step};
use vfscale_model::{ModelFs, ModelProcess};

fn run_on_fresh_model(steps: &[Step]) -> (Vec<vfscale_model::ops::Outcome>, ModelFs) {
    let fs = ModelFs::new();
    let procs: Vec<ModelProcess> = scenario_creds()
        .into_iter()
        .map(|c| fs.process(c))
        .collect();
    let mut all = prelude();
    all.extend_from_slice(steps);
    let out = run(&procs, &all);
    for p in procs {
        p.exit();
    }
    (out, fs)
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
    use vfscale_model::ops::Outcome;
    let mut runner = TestRunner::deterministic();
    let mut ok = 0usize;
    let mut total = 0usize;
    let mut kinds = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let steps = steps_strategy(3, 60..61)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let (out, _) = run_on_fresh_model(&steps);
        total += out.len();
        for (step, o) in prelude().iter().chain(&steps).zip(&out) {
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
