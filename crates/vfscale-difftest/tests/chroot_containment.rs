//! Chroot containment, checked against the kernel.
//!
//! A process chroot'ed into `/jail` resolves `..` at its root, `/..`,
//! absolute symlinks, relative symlinks with many `..`, `..`-chains longer
//! than the tree and symlink loops; none of them may reach outside the jail.
//! Each probe lists the directory it reaches (every directory holds a
//! `here_*` marker naming it) or reports the errno, so a probe's outcome
//! names *where* it landed without comparing inode numbers across sides.
//!
//! Two Linux behaviours are escapes by design and vfscale matches them
//! (docs/COMPATIBILITY.md, "chroot"):
//! - a cwd that is not below the root (left outside by `chroot` without
//!   `chdir`, reached with `fchdir` on a descriptor opened before the
//!   chroot, or moved out by a rename of one of its ancestors) walks `..`
//!   upwards past the jail, because `..` stops only *at* the process root
//!   and such a walk never meets it;
//! - `getcwd` of such a cwd is reported with an `(unreachable)` prefix.
//!
//! The probes run on `KernelProcess`es in a private tmpfs and on vfscale;
//! every outcome must match. Without root, the kernel side is skipped with
//! a printed reason and vfscale's outcomes are still checked against the
//! containment rule: no probe from inside the jail lands outside it except
//! the escapes named above.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::{enter_private_tmpfs_root, KernelProcess};

fn listing<P: ProcessApi>(p: &P, path: &[u8]) -> String {
    match p.read_dir(path) {
        Ok(entries) => {
            let mut names: Vec<String> = entries
                .into_iter()
                .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                .filter(|n| n.starts_with("here_"))
                .collect();
            names.sort();
            format!("at {}", names.join(","))
        }
        Err(e) => format!("{e:?}"),
    }
}

fn file<P: ProcessApi>(p: &P, path: &str) {
    let fd = p.open(path.as_bytes(), O_CREAT | O_WRONLY, 0o644).unwrap();
    p.close(fd).unwrap();
}

/// Builds the tree: `/` (here_root, secret), `/jail` (here_jail, a/b,
/// symlinks), `/jail/a` (here_a), `/jail/a/b` (here_b).
fn build<P: ProcessApi>(root: &P) {
    file(root, "/here_root");
    file(root, "/secret");
    root.mkdir(b"/jail", 0o755).unwrap();
    file(root, "/jail/here_jail");
    root.mkdir(b"/jail/a", 0o755).unwrap();
    file(root, "/jail/a/here_a");
    root.mkdir(b"/jail/a/b", 0o755).unwrap();
    file(root, "/jail/a/b/here_b");
    root.mkdir(b"/jail/m", 0o755).unwrap();
    file(root, "/jail/m/here_m");
    root.mkdir(b"/jail/m/n", 0o755).unwrap();
    file(root, "/jail/m/n/here_n");
    root.symlink(b"/", b"/jail/abs_root").unwrap();
    root.symlink(b"/secret", b"/jail/abs_secret").unwrap();
    root.symlink(b"/..", b"/jail/abs_dotdot").unwrap();
    root.symlink(b"../../../../../..", b"/jail/a/b/rel_up")
        .unwrap();
    root.symlink(b"../../../../../../secret", b"/jail/a/b/rel_secret")
        .unwrap();
    root.symlink(b"..", b"/jail/dotdot").unwrap();
    root.symlink(b"loop2", b"/jail/loop1").unwrap();
    root.symlink(b"loop1", b"/jail/loop2").unwrap();
    root.symlink(b"a/b/rel_up/a", b"/jail/chain").unwrap();
}

/// Each probe: (name, outcome).
type Probes = Vec<(String, String)>;

const INSIDE_PROBES: &[&str] = &[
    "/",
    "/..",
    "/../..",
    "..",
    "../../../..",
    "/./../a/../..",
    "/a/b/../../..",
    "/abs_root",
    "/abs_root/..",
    "/abs_dotdot",
    "/a/b/rel_up",
    "/a/b/rel_up/..",
    "/dotdot",
    "/dotdot/dotdot/a",
    "/chain",
    "/chain/b/rel_up",
    "/loop1",
    "/loop1/x",
    "/jail",
    "/secret",
];

fn probes<P: ProcessApi>(root: &P, make: &dyn Fn() -> P) -> Probes {
    build(root);
    let mut out: Probes = Vec::new();
    let mut probe = |name: &str, outcome: String| out.push((name.to_string(), outcome));

    // 1. Inside the jail, cwd at its root.
    let p = make();
    p.chroot(b"/jail").unwrap();
    p.chdir(b"/").unwrap();
    for path in INSIDE_PROBES {
        probe(
            &format!("inside: list {path}"),
            listing(&p, path.as_bytes()),
        );
    }
    let long_up = "../".repeat(60);
    probe("inside: list ../ x60", listing(&p, long_up.as_bytes()));
    for path in ["/abs_secret", "/a/b/rel_secret", "/../secret", "/loop1"] {
        let r = p.stat(path.as_bytes()).map(|s| s.mode & S_IFMT);
        probe(&format!("inside: stat {path}"), format!("{r:?}"));
    }
    p.chdir(b"/a/b").unwrap();
    let r = p.chdir(b"../../../../..");
    probe("inside: chdir ../../../../.. from /a/b", format!("{r:?}"));
    probe(
        "inside: getcwd after",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    probe("inside: list . after", listing(&p, b"."));
    p.chdir(b"/a/b").unwrap();
    let r = p.chdir(b"rel_up");
    probe("inside: chdir rel_up", format!("{r:?}"));
    probe(
        "inside: getcwd after rel_up",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    // openat relative to a descriptor of the jail root.
    let jfd = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let r = p.openat(jfd, b"../../secret", O_RDONLY, 0);
    probe(
        "inside: openat(jailfd, ../../secret)",
        format!("{:?}", r.map(|_| ())),
    );
    let r = p.fstatat(jfd, b"..", 0).map(|s| s.mode & S_IFMT);
    probe("inside: fstatat(jailfd, ..)", format!("{r:?}"));
    // A nested chroot narrows the root further.
    p.chroot(b"/m").unwrap();
    p.chdir(b"/").unwrap();
    probe("nested: list /..", listing(&p, b"/.."));
    probe("nested: list /n/../..", listing(&p, b"/n/../.."));
    p.exit();

    // 2. chroot without chdir: the cwd stays outside and `..` climbs.
    let p = make();
    p.chdir(b"/jail/a").unwrap();
    p.chroot(b"/jail/m").unwrap();
    probe("no-chdir: list .", listing(&p, b"."));
    probe("no-chdir: list ..", listing(&p, b".."));
    probe("no-chdir: list ../..", listing(&p, b"../.."));
    probe("no-chdir: list /..", listing(&p, b"/.."));
    probe(
        "no-chdir: getcwd",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    p.exit();

    // 3. fchdir to a descriptor opened before the chroot, then `..`.
    let p = make();
    let outside = p.open(b"/jail", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.chroot(b"/jail/a").unwrap();
    p.chdir(b"/").unwrap();
    probe("fchdir: list / before", listing(&p, b"/"));
    p.fchdir(outside).unwrap();
    probe("fchdir: list .", listing(&p, b"."));
    probe("fchdir: list ..", listing(&p, b".."));
    probe("fchdir: list ../jail/a/..", listing(&p, b"../jail/a/.."));
    probe(
        "fchdir: getcwd",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    let r = p.openat(outside, b"../secret", O_RDONLY, 0);
    probe(
        "fchdir: openat(outside, ../secret)",
        format!("{:?}", r.map(|_| ())),
    );
    p.exit();

    // 4. The cwd's ancestor is renamed out of the jail.
    let p = make();
    p.chroot(b"/jail").unwrap();
    p.chdir(b"/a/b").unwrap();
    root.rename(b"/jail/a", b"/moved").unwrap();
    probe("renamed-out: list .", listing(&p, b"."));
    probe(
        "renamed-out: getcwd",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    probe("renamed-out: list ..", listing(&p, b".."));
    probe("renamed-out: list ../..", listing(&p, b"../.."));
    probe("renamed-out: list ../../..", listing(&p, b"../../.."));
    probe("renamed-out: list /", listing(&p, b"/"));
    probe("renamed-out: list /..", listing(&p, b"/.."));
    // Moved back in: the walk meets the root again.
    root.rename(b"/moved", b"/jail/a").unwrap();
    probe("moved-back: list ../../..", listing(&p, b"../../.."));
    probe(
        "moved-back: getcwd",
        format!("{:?}", p.getcwd().map(String::from_utf8)),
    );
    p.exit();
    out
}

/// Probes that Linux lets out of the jail by design (see the module
/// comment): they alone may land on `here_root`.
fn escape_allowed(name: &str) -> bool {
    name.starts_with("no-chdir:") || name.starts_with("fchdir:") || name.starts_with("renamed-out:")
}

fn vfscale_probes() -> (Vfs, Probes) {
    let vfs = Vfs::new();
    let root = vfs.root_process();
    let make = || vfs.root_process();
    let out = probes(&root, &make);
    root.exit();
    (vfs, out)
}

#[test]
fn chroot_never_resolves_outside_except_linux_escapes() {
    let (vfs, ours) = vfscale_probes();
    let mut bad = Vec::new();
    for (name, outcome) in &ours {
        // `/secret` exists only outside the jail: reaching it is an escape.
        let outside =
            outcome.contains("here_root") || (name.contains("secret") && outcome.starts_with("Ok"));
        if outside && !escape_allowed(name) {
            bad.push(format!("{name}: {outcome}"));
        }
    }
    assert!(bad.is_empty(), "escaped the chroot:\n{}", bad.join("\n"));
    // The documented escapes do escape (as on Linux).
    let (_, o) = ours
        .iter()
        .find(|(n, _)| n == "fchdir: openat(outside, ../secret)")
        .unwrap();
    assert_eq!(o, "Ok(())");
    for name in [
        "no-chdir: list ../..",
        "fchdir: list ..",
        "renamed-out: list ../..",
    ] {
        let (_, o) = ours.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(o, "at here_root", "{name}");
    }
    // Inside, `..` at the root stays at the root.
    let (_, o) = ours.iter().find(|(n, _)| n == "inside: list /..").unwrap();
    assert_eq!(o, "at here_jail");
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}

#[test]
fn chroot_probes_match_kernel() {
    let kernel = std::thread::spawn(|| {
        enter_private_tmpfs_root().map_err(|e| e.to_string())?;
        let root = KernelProcess::new(&Cred::root())?;
        let make = || KernelProcess::new(&Cred::root()).expect("kernel process");
        Ok::<_, String>(probes(&root, &make))
    })
    .join()
    .expect("kernel side");
    let kernel = match kernel {
        Ok(k) => k,
        Err(e) => {
            println!("chroot kernel comparison skipped: {e}");
            return;
        }
    };
    let (vfs, ours) = vfscale_probes();
    if std::env::var_os("VFSCALE_CHROOT_DUMP").is_some() {
        for (name, k) in &kernel {
            println!("{name}: {k}");
        }
    }
    assert_eq!(kernel.len(), ours.len());
    let failing: Vec<String> = kernel
        .iter()
        .zip(&ours)
        .filter(|((_, k), (_, o))| k != o)
        .map(|((n, k), (_, o))| format!("{n}: kernel `{k}` vfscale `{o}`"))
        .collect();
    assert!(
        failing.is_empty(),
        "{} of {} probes differ:\n{}",
        failing.len(),
        kernel.len(),
        failing.join("\n")
    );
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}
