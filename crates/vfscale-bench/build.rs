//! Records the vfscale git revision (with "-dirty" when tracked files have
//! changes) as VFSCALE_BUILD_GIT_REV for the reports.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let rev = git(&["rev-parse", "--short=12", "HEAD"]);
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let rev = match rev {
        Some(r) if dirty => format!("{r}-dirty"),
        Some(r) => r,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=VFSCALE_BUILD_GIT_REV={rev}");
    // Rebuild when HEAD moves, its branch moves, or the index changes.
    let mut watch = vec!["HEAD".to_string(), "index".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
            if let Ok(abs) = Path::new(&p).canonicalize() {
                println!("cargo:rerun-if-changed={}", abs.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
