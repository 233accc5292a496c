//! The `ITERS [THREADS,...]` arguments of the timing examples.

/// The iteration count (the first of `args`, else `default_iters`) and the
/// thread counts (the second, comma-separated, else `default_threads`).
/// `args` is left at the argument after them.
pub fn iters_and_threads(
    args: &mut impl Iterator<Item = String>,
    default_iters: u64,
    default_threads: &[usize],
) -> (u64, Vec<usize>) {
    let iters = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(default_iters);
    let threads = args
        .next()
        .map(|a| a.split(',').map(|t| t.parse().unwrap()).collect())
        .unwrap_or_else(|| default_threads.to_vec());
    (iters, threads)
}
