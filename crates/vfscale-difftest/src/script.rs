//! Scripted comparisons: one script run on a `KernelProcess` and on
//! vfscale through the same `ProcessApi`, each step logged as (what, the
//! result's shape), and the two logs compared line by line.

use vfscale::abi::SysResult;

/// A script's steps: what was done, and the shape of its result.
pub type Log = Vec<(String, String)>;

/// A result's shape, comparable across the two sides: the value's Debug
/// form, or the error's description and name.
pub fn show<T: std::fmt::Debug>(r: SysResult<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{e}"),
    }
}

/// Panics with every line where the logs differ (after checking they are
/// as long). With VFSCALE_SHOW_LOG set, prints vfscale's log first.
pub fn assert_logs_match(kernel: &Log, ours: &Log) {
    if std::env::var_os("VFSCALE_SHOW_LOG").is_some() {
        for (what, r) in ours {
            println!("{what}: {r}");
        }
    }
    assert_eq!(kernel.len(), ours.len(), "the logs' lengths");
    let diffs: Vec<String> = kernel
        .iter()
        .zip(ours)
        .filter(|(k, o)| k != o)
        .map(|(k, o)| format!("{}: kernel {} vfscale {}", k.0, k.1, o.1))
        .collect();
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
