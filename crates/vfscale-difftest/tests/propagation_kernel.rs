//! Mount propagation (MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, each
//! with and without MS_REC) compared with the kernel: scripted scenarios,
//! each a test of its own from a clean tree (the kernel's side in a private
//! tmpfs root of a private mount namespace, `on_kernel_as_root`; vfscale's
//! in a fresh namespace), then seeded random sequences.
//!
//! Each step is logged as one line: the call and its result (ok or the
//! errno), then the visible tree under the scenario's top directories
//! (`/a`, `/b`, `/c`, `/s`; three levels beneath each): every directory
//! with its sorted names, and at a mount root (statx's
//! STATX_ATTR_MOUNT_ROOT) `@N`, N numbering the devices in the order the
//! walk first meets them (`/` is 0), so that neither device numbers nor
//! mount ids are compared, only which mounts share an instance. Every new
//! tmpfs instance gets a marker file `mN` (its ordinal in the scenario)
//! right after it is mounted: a propagated copy shares the instance and
//! shows the same marker wherever it appears.
//!
//! The scenarios: type changes and their errors (not at a mount root,
//! two type bits, MS_SILENT and MS_MGC_VAL ignored, MS_REMOUNT and
//! MS_BIND taking precedence, MS_RDONLY with a type); peers of shared
//! binds; slaves (one-way propagation, MS_PRIVATE breaking it); MS_REC
//! type changes of trees; a shared slave propagating onward; unbindable
//! mounts (bind EINVAL, rbind skipping them and what is beneath them,
//! MS_MOVE of a tree holding one into a shared mount EINVAL, MS_MOVE of a
//! mount whose parent is shared EINVAL); propagation only where the
//! mountpoint is visible (a peer rooted at a subdirectory); tucking (a
//! propagated copy goes beneath a mount already on the spot); umount
//! propagation (EBUSY for a busy copy, a descriptor or a cwd in it; a copy
//! with a submount left in place; MNT_DETACH); binds of a shared mount onto
//! itself and beneath itself; a new instance on a shared mount's
//! subdirectory, bound elsewhere, then unmounted piece by piece; the order
//! of errors.
//!
//! `VFSCALE_SHOW_KERNEL_LOG=1` prints the kernel's log (lines starting
//! `K`), `VFSCALE_SHOW_LOG=1` vfscale's. `random_sequences_match_the_kernel`
//! runs seeded random sequences of mkdir, tmpfs mounts, binds and rbinds,
//! moves, the four types with and without MS_REC, umount2 with 0 and
//! MNT_DETACH, directory descriptors opened and closed and chdirs inside
//! mounts (to make them busy), each case in a directory `/rN` of its own
//! (`VFSCALE_PROP_CASES`, default 100, of 30 steps; `VFSCALE_SEED` replays
//! a run; `VFSCALE_PROP_ONLY=N` runs its case N alone).

use std::cell::{Cell, RefCell};
use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_difftest::script::show_kernel_log;
use vfscale_difftest::script::{compare_with_kernel, compare_with_kernel_reclaimed, Log};
use vfscale_difftest::script::{mount_flag_names as flag_names, unit};
use vfscale_difftest::seeded::seeded_cases;
use vfscale_difftest::tree::walk;

/// The scenarios' top directories, made by the setup.
const TOPS: [&str; 4] = ["a", "b", "c", "s"];

/// How many levels beneath a top directory the tree is walked.
const DEPTH: usize = 3;

fn umount_flag_names(flags: i32) -> &'static str {
    match flags {
        0 => "0",
        MNT_DETACH => "MNT_DETACH",
        _ => "?",
    }
}

/// One side's run: the process, the log, and what the steps need.
struct Run<'a> {
    p: &'a dyn ProcessApi,
    log: RefCell<Log>,
    /// The directory the tops are in ("" for `/`).
    base: String,
    /// The tops walked after each step, relative to `base`.
    tops: Vec<String>,
    /// Markers made so far (the next instance's is one more).
    markers: Cell<u32>,
    /// Steps logged so far.
    steps: Cell<u32>,
    /// Descriptors opened by `open_dir`, by label.
    fds: RefCell<Vec<(String, Fd)>>,
    /// Whether `tmpfs` also makes directories `x`, `x/y` and `y` in each
    /// new instance (the random sequences: their paths then exist).
    populate: bool,
}

impl<'a> Run<'a> {
    fn new(p: &'a dyn ProcessApi, base: &str, tops: &[&str]) -> Run<'a> {
        Run {
            p,
            log: RefCell::new(Log::new()),
            base: base.to_string(),
            tops: tops.iter().map(|t| t.to_string()).collect(),
            markers: Cell::new(0),
            steps: Cell::new(0),
            fds: RefCell::new(Vec::new()),
            populate: false,
        }
    }

    /// A path of the script (relative to `base`, written with a leading
    /// `/` in the scenarios) as the process names it.
    fn full(&self, path: &str) -> Vec<u8> {
        vfscale_difftest::script::under(&self.base, path)
    }

    /// Logs one step: what, its result, and the tree after it.
    fn step(&self, what: String, r: String) {
        let n = self.steps.get() + 1;
        self.steps.set(n);
        let tree = self.tree();
        let case = if self.base.is_empty() {
            String::new()
        } else {
            format!("{} ", self.base)
        };
        self.log
            .borrow_mut()
            .push((format!("{case}{n:03} {what}"), format!("{r} | {tree}")));
    }

    /// The visible tree under the tops (see the module comment).
    fn tree(&self) -> String {
        let mut devs: Vec<(u32, u32)> = Vec::new();
        if let Ok(x) = self.p.statx(AT_FDCWD, b"/", 0, STATX_BASIC_STATS) {
            devs.push((x.dev_major, x.dev_minor));
        }
        let mut out = Vec::new();
        for top in &self.tops {
            walk(
                self.p,
                &|rel| self.full(rel),
                top,
                DEPTH,
                &mut devs,
                &mut out,
            );
        }
        out.join(" ")
    }

    /// mount(2) as given.
    fn mount(&self, source: &str, target: &str, fstype: &str, flags: u64) {
        let src = if source == "none" {
            source.as_bytes().to_vec()
        } else {
            self.full(source)
        };
        let r = self
            .p
            .mount(&src, &self.full(target), fstype.as_bytes(), flags);
        let what = vfscale_difftest::script::mount_call(source, target, fstype, flags);
        self.step(what, unit(r));
    }

    /// A new tmpfs instance on `target`, with its marker file.
    fn tmpfs(&self, target: &str) {
        let t = self.full(target);
        let r = self.p.mount(b"tmpfs", &t, b"tmpfs", 0);
        let label = match r {
            Ok(()) => {
                let n = self.markers.get() + 1;
                self.markers.set(n);
                let mut m = t.clone();
                m.extend_from_slice(format!("/m{n}").as_bytes());
                let mut made = self
                    .p
                    .open(&m, O_WRONLY | O_CREAT | O_EXCL, 0o644)
                    .and_then(|fd| self.p.close(fd));
                if self.populate {
                    for d in ["x", "x/y", "y"] {
                        let mut dir = t.clone();
                        dir.extend_from_slice(format!("/{d}").as_bytes());
                        made = made.and_then(|()| self.p.mkdir(&dir, 0o755));
                    }
                }
                match made {
                    Ok(()) => format!("ok (m{n})"),
                    Err(e) => format!("ok (marker m{n}: {e})"),
                }
            }
            Err(e) => format!("{e}"),
        };
        self.step(format!("tmpfs {target}"), label);
    }

    /// A propagation type change (source "none", no fstype).
    fn ty(&self, target: &str, flags: u64) {
        let r = self.p.mount(b"none", &self.full(target), b"", flags);
        self.step(format!("{} {target}", flag_names(flags)), unit(r));
    }

    fn bind(&self, source: &str, target: &str) {
        self.mount(source, target, "", MS_BIND);
    }

    fn rbind(&self, source: &str, target: &str) {
        self.mount(source, target, "", MS_BIND | MS_REC);
    }

    fn mv(&self, source: &str, target: &str) {
        self.mount(source, target, "", MS_MOVE);
    }

    /// move_mount(2) with MOVE_MOUNT_BENEATH: `source` goes beneath the
    /// top of the stack at `target`.
    fn beneath(&self, source: &str, target: &str) {
        let r = self.p.move_mount(
            AT_FDCWD,
            &self.full(source),
            AT_FDCWD,
            &self.full(target),
            MOVE_MOUNT_BENEATH,
        );
        self.step(format!("move_mount {source} beneath {target}"), unit(r));
    }

    fn umount(&self, target: &str, flags: i32) {
        let r = self.p.umount2(&self.full(target), flags);
        self.step(
            format!("umount2 {target} {}", umount_flag_names(flags)),
            unit(r),
        );
    }

    fn mkdir(&self, path: &str) {
        let r = self.p.mkdir(&self.full(path), 0o755);
        self.step(format!("mkdir {path}"), unit(r));
    }

    /// Opens directory `path` and keeps the descriptor (labelled `path`).
    fn open_dir(&self, path: &str) {
        let r = self
            .p
            .open(&self.full(path), O_RDONLY | O_DIRECTORY, 0)
            .map(|fd| self.fds.borrow_mut().push((path.to_string(), fd)));
        self.step(format!("open {path}"), unit(r));
    }

    /// Closes the descriptor `open_dir` opened on `path`.
    fn close_dir(&self, path: &str) {
        let mut fds = self.fds.borrow_mut();
        let i = fds
            .iter()
            .position(|(p, _)| p == path)
            .expect("opened before");
        let (_, fd) = fds.remove(i);
        drop(fds);
        let r = self.p.close(fd);
        self.step(format!("close {path}"), unit(r));
    }

    fn chdir(&self, path: &str) {
        let r = self.p.chdir(&self.full(path));
        let shown = if path.is_empty() { "." } else { path };
        self.step(format!("chdir {shown}"), unit(r));
    }

    fn into_log(self) -> Log {
        for (_, fd) in self.fds.borrow_mut().drain(..) {
            let _ = self.p.close(fd);
        }
        let _ = self.p.chdir(b"/");
        self.log.into_inner()
    }
}

/// Runs `body` from a clean tree: the tops made (as one logged step).
fn scenario(p: &dyn ProcessApi, body: fn(&Run)) -> Log {
    let r = Run::new(p, "", &TOPS);
    let made: SysResult<()> = TOPS
        .iter()
        .try_for_each(|t| p.mkdir(format!("/{t}").as_bytes(), 0o755));
    r.step("setup".into(), unit(made));
    body(&r);
    r.into_log()
}

/// Compares scenario `body` on the kernel and on vfscale.
fn compare(what: &'static str, body: fn(&Run)) {
    compare_with_kernel(
        what,
        move |k| show_kernel_log(what, scenario(k, body)),
        move |p| scenario(p, body),
    );
}

// ---- the scenarios ----

/// Type changes: where they apply, their errors, and the flags that
/// override them or are ignored; what each type then does shows through
/// binds and mounts.
fn type_changes(r: &Run) {
    // Not a mount root; a missing path (the lookup comes first).
    r.ty("/a", MS_SHARED);
    r.ty("/nowhere", MS_SHARED);
    r.ty("/nowhere", MS_SHARED | MS_PRIVATE);
    r.ty("/a", MS_SHARED | MS_PRIVATE);
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.mkdir("/a/z");
    r.ty("/a/x", MS_SHARED);
    r.ty("/a/x", MS_SHARED | MS_REC);
    // Two type bits, a type with other bits.
    r.ty("/a", MS_SHARED | MS_PRIVATE);
    r.ty("/a", MS_SLAVE | MS_UNBINDABLE);
    r.ty("/a", MS_SHARED | MS_RDONLY);
    r.ty("/a", MS_SHARED | MS_MOVE);
    r.ty("/a", MS_SHARED | MS_NOSUID);
    r.ty("/a", MS_PRIVATE | MS_NOEXEC | MS_NODEV | MS_NOATIME);
    // MS_SILENT and MS_REC are the only bits a type goes with (MS_NOSUID
    // and the other per-mount bits too are EINVAL); an fstype is ignored.
    r.ty("/a", MS_SHARED | MS_REC | MS_SILENT);
    r.ty("/a", MS_PRIVATE | MS_SILENT);
    r.mount("none", "/a", "tmpfs", MS_SHARED);
    // /a is shared: a bind is its peer.
    r.bind("/a", "/b");
    r.tmpfs("/a/x");
    // MS_REMOUNT takes precedence: /b stays a peer.
    r.ty("/b", MS_PRIVATE | MS_REMOUNT);
    r.tmpfs("/b/y");
    r.ty("/b", MS_PRIVATE | MS_REMOUNT | MS_BIND);
    r.tmpfs("/a/z");
    // MS_BIND takes precedence: "none" is looked up as the source, and
    // a bind of /a with MS_PRIVATE is a peer of /a all the same.
    r.ty("/c", MS_PRIVATE | MS_BIND);
    r.mount("/a", "/c", "", MS_BIND | MS_PRIVATE);
    r.umount("/a/z", 0);
    r.tmpfs("/a/z");
    r.umount("/c/z", 0);
    r.mount("/a", "/s", "", MS_BIND | MS_REMOUNT | MS_SHARED);
    // A slave of a group; a slave of nothing is private.
    r.ty("/c", MS_SLAVE);
    r.ty("/c", MS_SLAVE);
    r.umount("/a/x", 0);
    r.tmpfs("/c/x");
    r.tmpfs("/a/x");
    // Unbindable, then shared again (bindable).
    r.ty("/b", MS_UNBINDABLE);
    r.bind("/b", "/s");
    r.ty("/b", MS_SHARED);
    r.bind("/b", "/s");
    r.tmpfs("/s/y");
    r.ty("/s", MS_PRIVATE);
    r.ty("/s", MS_SLAVE);
    r.tmpfs("/b/z");
    // /b left /a's group when it became unbindable: /a/x's umount does
    // not reach /b/x, it reaches the copy tucked beneath /c/x.
    r.umount("/a/x", MNT_DETACH);
    r.umount("/c", 0);
    r.umount("/s", MNT_DETACH);
    r.umount("/b", 0);
    r.umount("/b/z", 0);
    r.umount("/b/y", 0);
    r.umount("/b/x", 0);
    r.umount("/c/x", 0);
    r.umount("/c", 0);
    r.umount("/b", 0);
    r.umount("/a/y", 0);
    r.umount("/a/z", 0);
    r.umount("/a", 0);
    r.umount("/a", 0);
}

#[test]
fn type_changes_match_the_kernel() {
    compare("type changes", type_changes);
}

/// Peers: binds of a shared mount and mounts under any of them.
fn peers(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.tmpfs("/a/x");
    r.tmpfs("/b/y");
    r.bind("/b", "/c");
    // Stacked on the copies in every peer.
    r.tmpfs("/c/x");
    r.mkdir("/c/x/d");
    r.tmpfs("/b/x/d");
    r.umount("/a/x/d", 0);
    r.umount("/a/x", 0);
    r.umount("/b/x", 0);
    r.umount("/c/x", 0);
    // A bind of a private mount into a shared one is copied to the peers.
    r.tmpfs("/s");
    r.mkdir("/s/q");
    r.bind("/s", "/c/y");
    r.tmpfs("/s/q");
    r.umount("/b/y", 0);
    r.umount("/a/y", 0);
    r.umount("/a/y", 0);
    // MS_MOVE of a private mount into a shared one: copied too.
    r.mv("/s", "/b/x");
    r.umount("/c/x", 0);
    r.umount("/s/q", 0);
    r.umount("/c/x/q", 0);
    r.umount("/c/x", 0);
    r.umount("/c", 0);
    r.umount("/a", 0);
    r.umount("/b", 0);
}

#[test]
fn peers_match_the_kernel() {
    compare("peers", peers);
}

/// Slaves: propagation from master to slave only; MS_PRIVATE ends it.
fn slaves(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.mkdir("/a/z");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.bind("/a", "/c");
    r.ty("/b", MS_SLAVE);
    r.tmpfs("/a/x");
    r.tmpfs("/b/y");
    r.tmpfs("/c/z");
    // A slave's umount stays there; a master's reaches the slave, even
    // the slave's own mount on the spot (umount propagates by place).
    r.umount("/b/x", 0);
    r.tmpfs("/b/x");
    r.umount("/a/x", 0);
    r.umount("/c/z", 0);
    r.umount("/b/y", 0);
    r.umount("/b/x", 0);
    r.umount("/b/x", 0);
    // A slave of a slave.
    r.bind("/b", "/s");
    r.ty("/s", MS_SLAVE);
    r.tmpfs("/c/x");
    r.tmpfs("/b/y");
    // Private: no more propagation.
    r.ty("/b", MS_PRIVATE);
    r.tmpfs("/a/z");
    r.umount("/c/x", 0);
    r.ty("/s", MS_PRIVATE);
    r.tmpfs("/a/y");
    r.umount("/a/y", 0);
    r.umount("/a/z", 0);
    r.umount("/b/x", 0);
    r.umount("/s/x", 0);
    r.umount("/s", 0);
    r.umount("/c", 0);
    r.umount("/s/z", 0);
    r.umount("/s", 0);
    // The last peer made a slave has no master: it is private.
    r.ty("/b", MS_SHARED);
    r.ty("/a", MS_SLAVE);
    r.bind("/a", "/c");
    r.tmpfs("/c/x");
    r.umount("/c/x", 0);
    r.umount("/c", 0);
    r.umount("/b/y", 0);
    r.umount("/b", 0);
    r.umount("/a", 0);
}

#[test]
fn slaves_match_the_kernel() {
    compare("slaves", slaves);
}

/// MS_REC type changes of trees, and what an rbind of a shared tree is.
fn recursive_types(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.tmpfs("/a/x");
    r.mkdir("/a/x/y");
    r.tmpfs("/a/x/y");
    r.tmpfs("/a/y");
    r.ty("/a", MS_SHARED | MS_REC);
    r.rbind("/a", "/b");
    r.mkdir("/a/x/y/d");
    r.tmpfs("/a/x/y/d");
    r.tmpfs("/b/y");
    // Without MS_REC only the root changes.
    r.ty("/b", MS_SLAVE);
    r.tmpfs("/b/x/y/d");
    r.umount("/a/x/y/d", 0);
    r.umount("/b/x/y/d", 0);
    r.ty("/b", MS_SLAVE | MS_REC);
    r.tmpfs("/b/x/y/d");
    r.tmpfs("/a/y");
    r.umount("/a/y", 0);
    r.ty("/b", MS_PRIVATE | MS_REC);
    r.tmpfs("/a/x/y/d");
    r.umount("/a/x/y/d", 0);
    r.ty("/a", MS_UNBINDABLE | MS_REC);
    r.rbind("/a", "/c");
    r.rbind("/b", "/c");
    r.ty("/b/x", MS_UNBINDABLE);
    r.rbind("/b", "/s");
    r.ty("/a", MS_PRIVATE | MS_REC);
    r.rbind("/a", "/c");
    r.umount("/b", 0);
    r.umount("/b", MNT_DETACH);
    r.umount("/s", MNT_DETACH);
    r.umount("/c", MNT_DETACH);
    r.umount("/a", MNT_DETACH);
    r.umount("/c", MNT_DETACH);
}

#[test]
fn recursive_types_match_the_kernel() {
    compare("recursive types", recursive_types);
}

/// A shared slave: a slave of /a's group that has peers of its own.
fn shared_slave(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.ty("/b", MS_SLAVE);
    r.ty("/b", MS_SHARED);
    r.bind("/b", "/c");
    r.tmpfs("/a/x");
    r.tmpfs("/c/y");
    r.bind("/c", "/s");
    r.tmpfs("/s/x");
    r.umount("/b/y", 0);
    r.umount("/c/x", 0);
    r.umount("/a/x", 0);
    r.umount("/a/x", 0);
    r.ty("/c", MS_SLAVE);
    r.tmpfs("/a/y");
    r.tmpfs("/b/x");
    r.umount("/a/y", MNT_DETACH);
    r.umount("/s", 0);
    r.umount("/c", 0);
    r.umount("/b/x", 0);
    r.umount("/b", 0);
    r.umount("/a", 0);
    r.umount("/s", 0);
    r.umount("/c", 0);
}

#[test]
fn shared_slave_matches_the_kernel() {
    compare("shared slave", shared_slave);
}

/// Unbindable mounts.
fn unbindable(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/z");
    r.tmpfs("/a/x");
    r.mkdir("/a/x/y");
    r.tmpfs("/a/x/y");
    r.tmpfs("/a/z");
    r.ty("/a/x", MS_UNBINDABLE);
    // A bind of it or of a directory in it; the target's lookup first.
    r.bind("/a/x", "/b");
    r.bind("/a/x", "/nowhere");
    r.bind("/nowhere", "/b");
    r.bind("/a/x/y", "/b");
    r.mkdir("/a/x/d");
    r.bind("/a/x/d", "/b");
    r.rbind("/a/x", "/b");
    // An rbind of its parent skips it and what is beneath it.
    r.rbind("/a", "/b");
    r.bind("/a", "/c");
    r.umount("/c", 0);
    r.umount("/b", MNT_DETACH);
    // A move of it is no bind.
    r.mv("/a/x", "/c");
    r.ty("/c", MS_SHARED);
    r.ty("/c", MS_UNBINDABLE | MS_REC);
    r.rbind("/c/y", "/b");
    r.umount("/b", 0);
    // Moves into a shared mount of trees holding unbindable mounts.
    r.tmpfs("/s");
    r.mkdir("/s/q");
    r.ty("/s", MS_SHARED);
    r.mv("/c", "/s/q");
    r.mv("/c/y", "/s/q");
    r.ty("/c", MS_PRIVATE);
    r.mv("/c", "/s/q");
    r.ty("/c/y", MS_PRIVATE);
    r.mv("/c", "/s/q");
    // A mount whose parent is shared does not move (the target's lookup
    // first, then the source's; a source not at a mount root EINVAL).
    r.mv("/s/q", "/b");
    r.mv("/s/q/y", "/b");
    r.mv("/s/q", "/nowhere");
    r.mv("/nowhere", "/b");
    r.mv("/s/q/d", "/b");
    r.mv("/s/q/d", "/nowhere");
    r.mv("/s/q/y", "/s/q/y");
    r.ty("/s", MS_PRIVATE);
    r.mv("/s/q", "/b");
    r.umount("/b", MNT_DETACH);
    r.ty("/a", MS_UNBINDABLE);
    r.bind("/a", "/b");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.tmpfs("/a/x");
    r.umount("/a", MNT_DETACH);
    r.umount("/b", MNT_DETACH);
    r.umount("/s", MNT_DETACH);
}

#[test]
fn unbindable_matches_the_kernel() {
    compare("unbindable", unbindable);
}

/// Propagation only where the mountpoint is visible: a peer rooted at a
/// subdirectory.
fn visibility(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/d");
    r.mkdir("/a/d/x");
    r.mkdir("/a/e");
    r.ty("/a", MS_SHARED);
    r.bind("/a/d", "/b");
    r.tmpfs("/a/e");
    r.tmpfs("/a/d/x");
    r.mkdir("/b/y");
    r.tmpfs("/b/y");
    r.bind("/a/e", "/c");
    r.mkdir("/c/n");
    r.tmpfs("/c/n");
    // The peer at a subdirectory of a subdirectory.
    r.mkdir("/a/d/x/k");
    r.bind("/b/x", "/s");
    r.tmpfs("/a/d/x/k");
    r.umount("/b/x/k", 0);
    r.umount("/b/x", 0);
    r.umount("/s", 0);
    r.umount("/b/x", 0);
    r.mv("/b", "/s");
    r.umount("/c/n", 0);
    r.umount("/a/e", 0);
    r.umount("/c", 0);
    r.umount("/s/y", 0);
    r.umount("/s", 0);
    r.umount("/a", 0);
}

#[test]
fn visibility_matches_the_kernel() {
    compare("visibility", visibility);
}

/// Tucking: a propagated copy that meets a mount already on the spot goes
/// beneath it.
fn tucking(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.mkdir("/a/z");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.ty("/b", MS_SLAVE);
    r.tmpfs("/b/x");
    r.tmpfs("/a/x");
    r.umount("/b/x", 0);
    r.umount("/b/x", 0);
    r.umount("/a/x", 0);
    // A master's umount removes the copy beneath and leaves the mount
    // that was tucked over it.
    r.tmpfs("/b/y");
    r.tmpfs("/a/y");
    r.umount("/a/y", 0);
    r.umount("/b/y", 0);
    // Tucked beneath a stack of two.
    r.tmpfs("/b/z");
    r.tmpfs("/b/z");
    r.tmpfs("/a/z");
    r.umount("/b/z", 0);
    r.umount("/b/z", 0);
    r.umount("/b/z", 0);
    r.umount("/a/z", 0);
    // A peer (not a slave) with a mount of its own on the spot: the
    // mount was propagated, so both peers get the new one on top.
    r.bind("/a", "/c");
    r.tmpfs("/c/x");
    r.tmpfs("/a/x");
    r.umount("/c/x", 0);
    r.umount("/c/x", 0);
    r.umount("/c", 0);
    r.umount("/b", 0);
    r.umount("/a", 0);
}

#[test]
fn tucking_matches_the_kernel() {
    compare("tucking", tucking);
}

/// Umount propagation: busy copies, copies with submounts, MNT_DETACH.
fn umount_propagation(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/y");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    // From either peer.
    r.tmpfs("/a/x");
    r.umount("/b/x", 0);
    // A descriptor in the copy.
    r.tmpfs("/a/x");
    r.open_dir("/b/x");
    r.umount("/a/x", 0);
    r.umount("/b/x", 0);
    r.close_dir("/b/x");
    r.umount("/a/x", 0);
    // A cwd in the copy.
    r.tmpfs("/a/y");
    r.chdir("/b/y");
    r.umount("/a/y", 0);
    r.chdir("/");
    r.umount("/a/y", 0);
    // MNT_DETACH with a busy copy.
    r.tmpfs("/a/x");
    r.open_dir("/b/x");
    r.umount("/a/x", MNT_DETACH);
    r.close_dir("/b/x");
    r.tmpfs("/a/y");
    r.chdir("/b/y");
    r.umount("/b/y", MNT_DETACH);
    r.chdir("/");
    // A submount in one peer is in the other too: EBUSY.
    r.tmpfs("/a/x");
    r.mkdir("/a/x/sub");
    r.tmpfs("/b/x/sub");
    r.umount("/a/x", 0);
    r.umount("/a/x/sub", 0);
    r.umount("/a/x", 0);
    // A slave's copy with a submount of its own stays (private); busy
    // or not.
    r.ty("/b", MS_SLAVE);
    r.tmpfs("/a/x");
    r.mkdir("/b/x/sub");
    r.tmpfs("/b/x/sub");
    r.umount("/a/x", 0);
    r.tmpfs("/a/y");
    r.mkdir("/a/y/sub");
    r.tmpfs("/b/y/sub");
    r.open_dir("/b/y");
    r.umount("/a/y", 0);
    r.close_dir("/b/y");
    // The copy left behind no longer receives.
    r.tmpfs("/a/x");
    r.umount("/b/x/sub", 0);
    r.umount("/b/x", 0);
    r.umount("/b/x", 0);
    r.umount("/a/x", 0);
    // A busy slave copy, no submount: EBUSY.
    r.tmpfs("/a/x");
    r.open_dir("/b/x");
    r.umount("/a/x", 0);
    r.close_dir("/b/x");
    r.umount("/a/x", 0);
    // MNT_DETACH of a tree in a shared mount: the copies go with it.
    r.tmpfs("/a/x");
    r.mkdir("/a/x/sub");
    r.tmpfs("/a/x/sub");
    r.umount("/a/x", MNT_DETACH);
    r.umount("/b/y/sub", 0);
    r.umount("/b/y", 0);
    r.umount("/b", 0);
    r.umount("/a", 0);
}

#[test]
fn umount_propagation_matches_the_kernel() {
    compare("umount propagation", umount_propagation);
}

/// Binds of a shared mount onto itself and beneath itself.
fn loops(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.mkdir("/a/x/y");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/a/x");
    r.bind("/a", "/a/x/y");
    r.bind("/a", "/a/x/x");
    r.umount("/a/x/x", 0);
    r.umount("/a/x", 0);
    r.bind("/a", "/b");
    r.rbind("/a", "/a/x");
    r.rbind("/b", "/b/x/x");
    r.umount("/a/x", MNT_DETACH);
    r.umount("/a/x", MNT_DETACH);
    r.bind("/a", "/a");
    r.umount("/a", 0);
    r.rbind("/b", "/b");
    r.umount("/b", MNT_DETACH);
    r.umount("/b", MNT_DETACH);
    r.mv("/a", "/a/x");
    r.mv("/b", "/a/x");
    r.umount("/a", MNT_DETACH);
    r.umount("/a", MNT_DETACH);
    r.umount("/b", MNT_DETACH);
}

#[test]
fn loops_match_the_kernel() {
    compare("loops", loops);
}

/// A new instance on a shared mount's subdirectory, bound elsewhere, then
/// unmounted piece by piece.
fn instance_on_subdir(r: &Run) {
    r.tmpfs("/a");
    r.mkdir("/a/x");
    r.ty("/a", MS_SHARED);
    r.bind("/a", "/b");
    r.tmpfs("/a/x");
    r.mkdir("/a/x/sub");
    r.bind("/a/x", "/c");
    r.tmpfs("/c/sub");
    r.umount("/c/sub", 0);
    r.tmpfs("/b/x/sub");
    r.umount("/c", 0);
    r.umount("/a/x", 0);
    r.umount("/a/x/sub", 0);
    r.umount("/c", 0);
    r.bind("/b/x", "/s");
    r.tmpfs("/s/sub");
    r.umount("/b/x", 0);
    r.umount("/s/sub", MNT_DETACH);
    r.umount("/b/x", 0);
    r.tmpfs("/s/sub");
    r.umount("/s", 0);
    r.umount("/s/sub", 0);
    r.umount("/s", 0);
    r.umount("/b", 0);
    r.umount("/a", 0);
}

#[test]
fn instance_on_subdir_matches_the_kernel() {
    compare("instance on a subdirectory", instance_on_subdir);
}

// ---- random sequences ----

/// The paths of the random sequences, relative to a case's directory.
const PATHS: [&str; 9] = ["a", "a/x", "a/x/y", "a/y", "b", "b/x", "b/x/y", "c", "c/x"];
const CASE_TOPS: [&str; 3] = ["a", "b", "c"];

/// A propagation type by its index.
const TYPES: [u64; 4] = [MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE];

/// A step of a random sequence.
#[derive(Clone, Debug)]
enum Step {
    Mkdir(&'static str),
    Tmpfs(&'static str),
    /// Source, target, MS_REC.
    Bind(&'static str, &'static str, bool),
    Move(&'static str, &'static str),
    /// move_mount(MOVE_MOUNT_BENEATH): source, target.
    Beneath(&'static str, &'static str),
    /// Path, type index, MS_REC.
    Type(&'static str, usize, bool),
    /// Path, MNT_DETACH.
    Umount(&'static str, bool),
    Open(&'static str),
    /// The n-th open descriptor (modulo how many).
    Close(usize),
    /// A path, or the case's directory.
    Chdir(Option<&'static str>),
}

fn random_steps(rnd: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<Step> {
    let path = |rnd: &mut dyn FnMut(u64) -> u64| PATHS[rnd(PATHS.len() as u64) as usize];
    // Types more often where a mount root is likely.
    let root = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(3) {
        0 | 1 => CASE_TOPS[rnd(3) as usize],
        _ => PATHS[rnd(PATHS.len() as u64) as usize],
    };
    (0..n)
        .map(|_| match rnd(21) {
            20 => Step::Beneath(root(rnd), root(rnd)),
            0 => Step::Mkdir(path(rnd)),
            1..=4 => Step::Tmpfs(path(rnd)),
            5..=7 => Step::Bind(path(rnd), path(rnd), rnd(2) == 0),
            8 => Step::Move(root(rnd), path(rnd)),
            // MS_SHARED the most often: it makes the peers.
            9..=12 => {
                let ty = [0, 0, 0, 1, 1, 2, 3, 3][rnd(8) as usize];
                Step::Type(root(rnd), ty, rnd(3) == 0)
            }
            13..=15 => Step::Umount(path(rnd), rnd(3) == 0),
            16 => Step::Open(path(rnd)),
            17 => Step::Close(rnd(4) as usize),
            18 => Step::Chdir(Some(path(rnd))),
            _ => Step::Chdir(None),
        })
        .collect()
}

fn run_case(p: &dyn ProcessApi, case: usize, steps: &[Step], log: &mut Log) {
    let base = format!("/r{case}");
    let mut r = Run::new(p, &base, &CASE_TOPS);
    r.populate = true;
    let made: SysResult<()> = (|| {
        p.mkdir(base.as_bytes(), 0o755)?;
        for d in ["a", "a/x", "a/x/y", "a/y", "b", "b/x", "b/x/y", "c", "c/x"] {
            p.mkdir(&r.full(d), 0o755)?;
        }
        Ok(())
    })();
    r.step(format!("case {case} setup"), unit(made));
    let mut fds: Vec<Fd> = Vec::new();
    for step in steps {
        match *step {
            Step::Mkdir(d) => r.mkdir(d),
            Step::Tmpfs(t) => r.tmpfs(t),
            Step::Bind(s, t, rec) => {
                if rec {
                    r.rbind(s, t)
                } else {
                    r.bind(s, t)
                }
            }
            Step::Move(s, t) => r.mv(s, t),
            Step::Beneath(s, t) => r.beneath(s, t),
            Step::Type(t, i, rec) => r.ty(t, TYPES[i] | if rec { MS_REC } else { 0 }),
            Step::Umount(t, detach) => r.umount(t, if detach { MNT_DETACH } else { 0 }),
            Step::Open(d) => {
                let res = p.open(&r.full(d), O_RDONLY | O_DIRECTORY, 0);
                if let Ok(fd) = res {
                    fds.push(fd);
                }
                r.step(format!("open {d}"), unit(res.map(|_| ())));
            }
            Step::Close(n) => {
                if fds.is_empty() {
                    continue;
                }
                let fd = fds.remove(n % fds.len());
                r.step(format!("close #{n}"), unit(p.close(fd)));
            }
            Step::Chdir(d) => r.chdir(d.unwrap_or("")),
        }
    }
    // The case's mounts go (unlogged), so the mount count stays small.
    for fd in fds {
        let _ = p.close(fd);
    }
    let _ = p.chdir(b"/");
    for top in CASE_TOPS {
        let t = r.full(top);
        for _ in 0..256 {
            if p.umount2(&t, MNT_DETACH).is_err() {
                break;
            }
        }
    }
    log.extend(r.into_log());
}

/// Random sequences of mkdir, tmpfs mounts, binds, rbinds, moves, type
/// changes, umounts and busy-making descriptors and cwds, compared with
/// the kernel step by step (`VFSCALE_PROP_CASES`, default 100, of 30
/// steps; `VFSCALE_SEED` replays; `VFSCALE_PROP_ONLY=N` runs case N alone).
#[test]
fn random_sequences_match_the_kernel() {
    let sequences = seeded_cases("VFSCALE_PROP_CASES", 100, "VFSCALE_PROP_ONLY", |mut rnd| {
        random_steps(&mut rnd, 30)
    });
    let theirs = sequences.clone();
    let run_all = |cases: Vec<(usize, Vec<Step>)>| {
        move |p: &dyn ProcessApi| {
            let mut log = Log::new();
            for (case, steps) in &cases {
                run_case(p, *case, steps, &mut log);
            }
            log
        }
    };
    let on_kernel = run_all(theirs);
    let on_vfscale = run_all(sequences);
    compare_with_kernel_reclaimed(
        "propagation (random)",
        move |k| show_kernel_log("random", on_kernel(k)),
        move |p| on_vfscale(p),
    );
}
