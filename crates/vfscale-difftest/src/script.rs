//! Scripted comparisons: one script run on a `KernelProcess` and on
//! vfscale through the same `ProcessApi`, each step logged as (what, the
//! result's shape), and the two logs compared line by line.

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

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

/// Runs `on_kernel` on the host kernel (as root, in a private tmpfs root:
/// `on_kernel_as_root`) and `on_vfscale` on the root process of a fresh
/// namespace, asserts that their logs match, then that the namespace's
/// invariants hold once the process has exited and its puts are flushed.
/// Prints why and does nothing more when the kernel side cannot run.
/// (Pass the same generic script twice: each side gets its own instance.)
pub fn compare_with_kernel(
    what: &str,
    on_kernel: impl FnOnce(&crate::KernelProcess) -> Log + Send + 'static,
    on_vfscale: impl FnOnce(&vfscale::Process) -> Log,
) {
    compare_then_check(what, on_kernel, on_vfscale, false)
}

/// `compare_with_kernel` for scripts that remove directories after
/// looking up missing names in them: the cached misses keep a removed
/// directory until they are reclaimed (ARCHITECTURE.md, Decisions, "rmdir
/// leaves negative children to the LRU"), so the caches are dropped before
/// the invariants are checked.
pub fn compare_with_kernel_reclaimed(
    what: &str,
    on_kernel: impl FnOnce(&crate::KernelProcess) -> Log + Send + 'static,
    on_vfscale: impl FnOnce(&vfscale::Process) -> Log,
) {
    compare_then_check(what, on_kernel, on_vfscale, true)
}

/// `compare_with_kernel_reclaimed` with vfscale's side in the namespace
/// `vfs` (a passthrough root, say) instead of a fresh tmpfs one.
pub fn compare_with_kernel_in(
    what: &str,
    vfs: Vfs,
    on_kernel: impl FnOnce(&crate::KernelProcess) -> Log + Send + 'static,
    on_vfscale: impl FnOnce(&vfscale::Process) -> Log,
) {
    compare_in(what, Some(vfs), on_kernel, on_vfscale, true)
}

fn compare_then_check(
    what: &str,
    on_kernel: impl FnOnce(&crate::KernelProcess) -> Log + Send + 'static,
    on_vfscale: impl FnOnce(&vfscale::Process) -> Log,
    reclaim: bool,
) {
    compare_in(what, None, on_kernel, on_vfscale, reclaim)
}

fn compare_in(
    what: &str,
    vfs: Option<Vfs>,
    on_kernel: impl FnOnce(&crate::KernelProcess) -> Log + Send + 'static,
    on_vfscale: impl FnOnce(&vfscale::Process) -> Log,
    reclaim: bool,
) {
    let kernel = match crate::on_kernel_as_root(on_kernel) {
        Ok(k) => k,
        Err(e) => {
            println!("{what} kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = vfs.unwrap_or_default();
    let root = vfs.root_process();
    let ours = on_vfscale(&root);
    assert_logs_match(&kernel, &ours);
    root.exit();
    vfs.flush();
    if reclaim {
        vfs.drop_caches();
    }
    vfs.check_invariants().unwrap();
}

/// A script's path beneath its case directory `base` ("" for the root):
/// "/" and "" name `base` itself, "/x" and "x" name `base/x`.
pub fn under(base: &str, path: &str) -> Vec<u8> {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() {
        return if base.is_empty() {
            b"/".to_vec()
        } else {
            base.as_bytes().to_vec()
        };
    }
    format!("{base}/{rel}").into_bytes()
}

/// How a script logs a mount(2) call.
pub fn mount_call(source: &str, target: &str, fstype: &str, flags: u64) -> String {
    format!(
        "mount({source}, {target}, {fstype:?}, {})",
        mount_flag_names(flags)
    )
}

/// A result as text: "ok" or the errno.
pub fn unit(r: SysResult<()>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("{e}"),
    }
}

/// mount(2)'s flags by name (the old callers' magic number first, bits
/// no name covers in hex).
pub fn mount_flag_names(flags: u64) -> String {
    const NAMES: [(u64, &str); 14] = [
        (MS_RDONLY, "MS_RDONLY"),
        (MS_NOSUID, "MS_NOSUID"),
        (MS_REMOUNT, "MS_REMOUNT"),
        (MS_BIND, "MS_BIND"),
        (MS_MOVE, "MS_MOVE"),
        (MS_REC, "MS_REC"),
        (MS_SILENT, "MS_SILENT"),
        (MS_UNBINDABLE, "MS_UNBINDABLE"),
        (MS_PRIVATE, "MS_PRIVATE"),
        (MS_SLAVE, "MS_SLAVE"),
        (MS_SHARED, "MS_SHARED"),
        (MS_NOATIME, "MS_NOATIME"),
        (MS_NODEV, "MS_NODEV"),
        (MS_NOEXEC, "MS_NOEXEC"),
    ];
    let mut rest = flags;
    let mut out = Vec::new();
    if flags & MS_MGC_MSK == MS_MGC_VAL {
        out.push("MS_MGC_VAL".to_string());
        rest &= !MS_MGC_MSK;
    }
    for (bit, name) in NAMES {
        if rest & bit != 0 {
            out.push(name.to_string());
            rest &= !bit;
        }
    }
    if rest != 0 || out.is_empty() {
        out.push(format!("{rest:#x}"));
    }
    out.join("|")
}

/// With VFSCALE_SHOW_KERNEL_LOG set, prints the kernel's log of `what`
/// (lines starting `K`: to read a script against Linux's source, or to
/// see what the kernel answered before vfscale did).
pub fn show_kernel_log(what: &str, log: Log) -> Log {
    if std::env::var_os("VFSCALE_SHOW_KERNEL_LOG").is_some() {
        println!("K == {what}");
        for (step, r) in &log {
            println!("K {step}: {r}");
        }
    }
    log
}
