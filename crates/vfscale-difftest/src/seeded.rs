//! The scaffolding of the differential property tests: a proptest runner
//! whose seed can be replayed, and each case on a fresh thread (whose
//! private mount namespace, `sandbox`, dies with it).

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// The value of environment variable `name` as a number, if set.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// `VFSCALE_SEED`, or else a seed from the clock.
pub fn seed_from_env() -> u64 {
    env_u64("VFSCALE_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    })
}

/// A xorshift generator from `seed`: each call gives a number below its
/// argument (the random sequences of the scripted kernel comparisons).
pub fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed | 1;
    move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

/// The random cases of a scripted kernel comparison, each with its
/// number: `cases_var` (default `default_cases`) values of `make`, fed a
/// generator seeded from `VFSCALE_SEED` or the clock (printed, for a
/// replay); `only_var=N` keeps case N alone.
pub fn seeded_cases<T>(
    cases_var: &str,
    default_cases: u64,
    only_var: &str,
    mut make: impl FnMut(&mut dyn FnMut(u64) -> u64) -> T,
) -> Vec<(usize, T)> {
    let seed = seed_from_env();
    println!("seed {seed} (replay with VFSCALE_SEED={seed})");
    let mut rnd = xorshift(seed);
    let cases = env_u64(cases_var).unwrap_or(default_cases) as usize;
    let mut all: Vec<(usize, T)> = (0..cases).map(|i| (i, make(&mut rnd))).collect();
    if let Some(only) = env_u64(only_var) {
        all.retain(|&(i, _)| i as u64 == only);
    }
    all
}

/// A runner of `cases_var` cases (default `default_cases`), seeded from
/// `VFSCALE_SEED` or else the clock; prints the seed, which the caller
/// repeats in its failure message.
pub fn seeded_runner(what: &str, cases_var: &str, default_cases: u64) -> (TestRunner, u64) {
    let seed = seed_from_env();
    let cases = env_u64(cases_var).unwrap_or(default_cases) as u32;
    println!("{what}: seed {seed} (replay with VFSCALE_SEED={seed}), {cases} cases");
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    (runner, seed)
}

/// Runs one case on a fresh thread; a panic there fails the case.
pub fn on_fresh_thread(
    case: impl FnOnce() -> Result<(), TestCaseError> + Send + 'static,
) -> Result<(), TestCaseError> {
    std::thread::spawn(case).join().unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(TestCaseError::fail(format!("panicked: {msg}")))
    })
}
