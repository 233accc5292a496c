//! Mount namespaces (unshare(CLONE_NEWNS), setns(CLONE_NEWNS),
//! /proc/self/mountinfo, pivot_root and mount_setattr) compared with the kernel: scripted scenarios, each
//! a test of its own from a clean tree (the kernel's side in a private
//! tmpfs root of a private mount namespace, `on_kernel_as_root`, its
//! processes worker threads that unshare and setns on their own; vfscale's
//! in a fresh namespace), then seeded random sequences.
//!
//! Processes are forked from a child `p` of the side's root process (and
//! from each other); the scenarios name them `p`, `q`, `r`, `s` and a
//! non-root `u` (uid 1000, for the EPERMs). Each step is logged as one
//! line: who did what and its result (ok or the errno), then the tree
//! every live process of `p`..`s` sees under the scenario's top
//! directories (`/a`, `/b`, `/c`, `/s`; three levels beneath each), as in
//! `propagation_kernel.rs`: every directory with its sorted names and, at a
//! mount root, `@N`, N numbering the devices in the order the walk (over
//! all the processes of the step) first meets them. Every new tmpfs
//! instance gets a marker file `mN` right after it is mounted, and `mN` is
//! also its source string, so a propagated copy or a bind shows which
//! instance it is both in the tree and in mountinfo.
//!
//! At chosen points (`info`) each live process's mountinfo is logged,
//! normalized (`normalize`) so that neither mount ids, device numbers,
//! peer group numbers nor the listing's order are compared: a mount is
//! described by its mount point and its place in the stack there (`/a#2`
//! is the second mount on `/a`), qualified by its parent's description
//! where two would read the same; PARENT_ID becomes the parent's
//! description; shared:N, master:N and propagate_from:N name group N by
//! the least description among its members listed with shared:N (or, for
//! a group with no member in the listing, `?` and the least description of
//! the mounts listed as its slaves). OPTIONS, `unbindable`, the ROOT
//! field, FSTYPE, SOURCE and the first SUPER_OPTION (`rw`/`ro`) are kept;
//! MAJ:MIN and the rest of SUPER_OPTIONS (tmpfs's size, mode, inode64) are
//! dropped, as is the root mount's SOURCE (the kernel's side is a tmpfs
//! named by the harness): a bind of a root directory shows `(root)`. The
//! lines are sorted.
//!
//! The scenarios: unshare's copy (what the copy sees, mounts and umounts
//! afterwards staying in their namespace, the cwd moving onto the copy,
//! CLONE_FS, EPERM for a non-root process); mount options in mountinfo and
//! in the copy (bind remounts the copy's alone, a plain remount the
//! instance's); propagation across namespaces (a shared mount's copies are
//! its peers; MS_SLAVE one-way, MS_PRIVATE cutting it, a recursive bind of
//! a shared tree, an unbindable mount's copy, propagate_from); the mounts
//! of another namespace (at a descriptor inherited from the parent before
//! its unshare: a new mount, a bind from or onto it, a move from or onto
//! it, remounts and umount are EINVAL — check_mnt — while a type change
//! is allowed to a caller with CAP_SYS_ADMIN over that namespace, Linux
//! 6.16's may_change_propagation; then the same at a mount detached
//! meanwhile, where a new mount is ENOENT and a move checks its source
//! first); lifetime (a namespace's mounts go with its last process, peer
//! groups and masters losing their members there, a cwd in one of them);
//! setns (root and cwd at the top of the target's root, mounts shared from
//! then on, setns from a chroot and onto a root with a mount on it);
//! pivot_root (session 38: its refusals, who moves, runc's idiom) and
//! mount_setattr (session 38: flags, atime modes, propagation, EBUSY,
//! its refusals).
//!
//! `VFSCALE_SHOW_KERNEL_LOG=1` prints the kernel's log (lines starting
//! `K`), `VFSCALE_SHOW_LOG=1` vfscale's. `random_sequences_match_the_kernel`
//! runs seeded random sequences over up to three processes (fork,
//! unshare(CLONE_NEWNS), setns, exit while another lives, mkdir, tmpfs
//! mounts, binds and rbinds, moves, the four types with and without MS_REC,
//! umount2 with 0 and MNT_DETACH, chdir into mounts, directory descriptors
//! kept, inherited and fchdir'd to, so that `.`, a path of the random
//! steps too, may be a mount of another namespace or a detached one;
//! since session 38 also chroot, mount_setattr with and without
//! AT_RECURSIVE, and pivot_root by a process in a namespace the sequence
//! made, so that the harness's root stays for the next cases), the
//! mountinfo of every live process logged every five steps and at the end,
//! each case in a directory `/rN` of its own (`VFSCALE_NS_CASES`, default
//! 40, of 30 steps; `VFSCALE_SEED` replays a run, `VFSCALE_NS_ONLY=N` runs
//! its case N alone):
//!
//! ```text
//! VFSCALE_SEED=S VFSCALE_NS_ONLY=N VFSCALE_SHOW_KERNEL_LOG=1 \
//!   cargo test -p vfscale-difftest --test namespace_kernel random -- --nocapture
//! ```

use std::collections::{BTreeMap, HashMap};
use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, VfsConfig};
use vfscale_difftest::script::show_kernel_log;
use vfscale_difftest::script::{compare_with_kernel, compare_with_kernel_reclaimed, Log};
use vfscale_difftest::script::{mount_flag_names as flag_names, unit};
use vfscale_difftest::seeded::seeded_cases;
use vfscale_difftest::tree::{dir_names, walk};
use vfscale_difftest::KernelProcess;

/// The scenarios' top directories, made by the setup.
const TOPS: [&str; 4] = ["a", "b", "c", "s"];

/// How many levels beneath a top directory the tree is walked.
const DEPTH: usize = 3;

/// The process slots: `p`, `q`, `r`, `s` (their trees and mountinfo are
/// logged) and the non-root `u`.
const NAMES: [&str; 5] = ["p", "q", "r", "s", "u"];
const P: usize = 0;
const Q: usize = 1;
const R: usize = 2;
const S: usize = 3;
const U: usize = 4;
/// The slots whose trees and mountinfo are logged.
const LOGGED: usize = 4;

/// unshare(2)'s flags by name.
fn clone_names(flags: i32) -> String {
    let mut out = Vec::new();
    if flags & CLONE_NEWNS != 0 {
        out.push("CLONE_NEWNS".to_string());
    }
    if flags & CLONE_FS != 0 {
        out.push("CLONE_FS".to_string());
    }
    let rest = flags & !(CLONE_NEWNS | CLONE_FS);
    if rest != 0 || out.is_empty() {
        out.push(format!("{rest:#x}"));
    }
    out.join("|")
}

fn umount_flag_names(flags: i32) -> &'static str {
    match flags {
        0 => "0",
        MNT_DETACH => "MNT_DETACH",
        _ => "?",
    }
}

// ---- mountinfo, normalized ----

/// One line of mountinfo, split into its fields.
struct MountLine<'t> {
    id: &'t str,
    parent: &'t str,
    root: &'t str,
    point: &'t str,
    options: &'t str,
    optional: Vec<&'t str>,
    fstype: &'t str,
    source: &'t str,
    super_options: &'t str,
}

fn parse_line(line: &str) -> Option<MountLine<'_>> {
    let mut f = line.split(' ');
    let id = f.next()?;
    let parent = f.next()?;
    let _dev = f.next()?;
    let root = f.next()?;
    let point = f.next()?;
    let options = f.next()?;
    let mut optional = Vec::new();
    loop {
        match f.next()? {
            "-" => break,
            o => optional.push(o),
        }
    }
    let fstype = f.next()?;
    let source = f.next()?;
    let super_options = f.next()?;
    if f.next().is_some() {
        return None;
    }
    Some(MountLine {
        id,
        parent,
        root,
        point,
        options,
        optional,
        fstype,
        source,
        super_options,
    })
}

/// The SOURCE of the root mount in mountinfo `text` (the mount on `/`
/// whose parent is not listed).
fn root_source(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    let parsed: Vec<MountLine> = text.lines().filter_map(parse_line).collect();
    parsed
        .iter()
        .find(|m| m.point == "/" && !parsed.iter().any(|p| p.id == m.parent && p.id != m.id))
        .map(|m| m.source.to_string())
}

/// mountinfo's text with nothing that differs between two equal mount
/// trees (see the module comment): the sorted lines, joined by " ; ".
/// `root_source` is the SOURCE of the first namespace's root mount, shown
/// as `(root)`: the kernel's is the harness's tmpfs, named by it.
fn normalize(text: &[u8], root_source: Option<&str>) -> String {
    let text = String::from_utf8_lossy(text);
    let mut lines = Vec::new();
    let mut parsed = Vec::new();
    for l in text.lines().filter(|l| !l.is_empty()) {
        match parse_line(l) {
            Some(m) => parsed.push(m),
            None => lines.push(format!("unparsed: {l}")),
        }
    }
    let by_id: HashMap<&str, usize> = parsed.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
    // The parent in the listing: none for the root mount (the kernel's
    // is its own parent in a namespace's copy and the unlisted rootfs
    // where the harness pivoted; neither says anything about the tree).
    let parent: Vec<Option<usize>> = parsed
        .iter()
        .enumerate()
        .map(|(i, m)| by_id.get(m.parent).copied().filter(|&p| p != i))
        .collect();
    // The place in the stack at the mount point: one more than the run of
    // ancestors on the same point.
    let base: Vec<String> = parsed
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut depth = 1;
            let mut at = i;
            while let Some(p) = parent[at] {
                if parsed[p].point != m.point || depth > parsed.len() {
                    break;
                }
                depth += 1;
                at = p;
            }
            format!("{}#{depth}", m.point)
        })
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for b in &base {
        *count.entry(b.as_str()).or_default() += 1;
    }
    // Where two read the same, each is qualified by its parent's
    // description (and so on up).
    let describe = |i: usize| -> String {
        let mut out = base[i].clone();
        let mut at = i;
        let mut hops = 0;
        while count[base[at].as_str()] > 1 && hops <= parsed.len() {
            match parent[at] {
                Some(p) => {
                    out.push_str(&format!(" in {}", base[p]));
                    at = p;
                }
                None => break,
            }
            hops += 1;
        }
        out
    };
    let desc: Vec<String> = (0..parsed.len()).map(describe).collect();
    // Groups by number: the least description of the members listed as
    // shared, else of the mounts listed as its slaves.
    let mut shared: BTreeMap<&str, &str> = BTreeMap::new();
    let mut slaves: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, m) in parsed.iter().enumerate() {
        for o in &m.optional {
            let (map, n) = if let Some(n) = o.strip_prefix("shared:") {
                (&mut shared, n)
            } else if let Some(n) = o
                .strip_prefix("master:")
                .or_else(|| o.strip_prefix("propagate_from:"))
            {
                (&mut slaves, n)
            } else {
                continue;
            };
            let e = map.entry(n).or_insert(desc[i].as_str());
            if desc[i].as_str() < *e {
                *e = desc[i].as_str();
            }
        }
    }
    let group = |n: &str| -> String {
        match (shared.get(n), slaves.get(n)) {
            (Some(d), _) => format!("[{d}]"),
            (None, Some(d)) => format!("?[{d}]"),
            (None, None) => "?".into(),
        }
    };
    for (i, m) in parsed.iter().enumerate() {
        let optional: Vec<String> = m
            .optional
            .iter()
            .map(|o| match o.split_once(':') {
                Some((tag, n)) => format!("{tag}:{}", group(n)),
                None => o.to_string(),
            })
            .collect();
        let source = if Some(m.source) == root_source {
            "(root)"
        } else {
            m.source
        };
        let rw = m.super_options.split(',').next().unwrap_or("");
        let in_parent = parent[i].map_or("-", |p| desc[p].as_str());
        lines.push(format!(
            "{} root={} in={} {} {}- {} {} {}",
            desc[i],
            m.root,
            in_parent,
            m.options,
            optional.iter().map(|o| format!("{o} ")).collect::<String>(),
            m.fstype,
            source,
            rw
        ));
    }
    lines.sort();
    lines.join(" ; ")
}

// ---- the scripts' world ----

/// One side's run: the processes, the log, and what the steps need.
/// An fsconfig call's command, key, value and aux.
type FsconfigCall<'a> = (u32, Option<&'a str>, Option<&'a str>, i32);

struct World<T: ProcessApi> {
    /// The processes by slot (`NAMES`).
    procs: Vec<Option<T>>,
    log: Log,
    /// The directory the tops are in ("" for `/`).
    base: String,
    /// The tops walked after each step, relative to `base`.
    tops: Vec<String>,
    /// Markers made so far (the next instance's is one more).
    markers: u32,
    /// Steps logged so far.
    steps: u32,
    /// Descriptors opened by `open_dir`: their slot, label and number (a
    /// fork copies its parent's).
    fds: Vec<(usize, String, Fd)>,
    /// Whether `tmpfs` also makes directories `x`, `x/y` and `y` in each
    /// new instance (the random sequences: their paths then exist).
    populate: bool,
    /// Which slots are in a namespace a random sequence made (an unshare,
    /// or a fork or setns into one): only these pivot_root, so the first
    /// namespace's root, the harness's, stays for the next cases.
    own_ns: Vec<bool>,
    /// Which slots chrooted (their cwd may then be the harness's root
    /// directory while their root is not: `run_case` skips their mount
    /// calls on `.`).
    chrooted: Vec<bool>,
    /// The SOURCE of the first namespace's root mount (`normalize`).
    root_source: Option<String>,
}

impl<T: ProcessApi> World<T> {
    /// `p`, forked from `root`, and `user` as `u`.
    fn new(root: &T, user: Option<T>, base: &str, tops: &[&str]) -> World<T> {
        let mut procs: Vec<Option<T>> = (0..NAMES.len()).map(|_| None).collect();
        procs[P] = Some(root.fork().expect("a child of the root process"));
        procs[U] = user;
        World {
            procs,
            log: Log::new(),
            base: base.to_string(),
            tops: tops.iter().map(|t| t.to_string()).collect(),
            markers: 0,
            steps: 0,
            fds: Vec::new(),
            populate: false,
            own_ns: vec![false; NAMES.len()],
            chrooted: vec![false; NAMES.len()],
            root_source: root.mountinfo().ok().and_then(|t| root_source(&t)),
        }
    }

    fn proc(&self, i: usize) -> &T {
        self.procs[i].as_ref().expect("a live process")
    }

    /// The live logged slots.
    fn live(&self) -> Vec<usize> {
        (0..LOGGED).filter(|&i| self.procs[i].is_some()).collect()
    }

    /// A path of the script as the process names it: one starting with
    /// `/` is relative to `base`, any other to the cwd.
    fn full(&self, path: &str) -> Vec<u8> {
        if !path.starts_with('/') {
            return path.as_bytes().to_vec();
        }
        vfscale_difftest::script::under(&self.base, path)
    }

    /// Logs one step: who did what, its result, and the trees after it.
    fn step(&mut self, who: usize, what: String, r: String) {
        self.steps += 1;
        let n = self.steps;
        let tree = self.trees();
        let case = if self.base.is_empty() {
            String::new()
        } else {
            format!("{} ", self.base)
        };
        self.log.push((
            format!("{case}{n:03} {}: {what}", NAMES[who]),
            format!("{r} | {tree}"),
        ));
    }

    /// A line of the log with no tree (`info`, `cwd`).
    fn note(&mut self, what: String, r: String) {
        self.steps += 1;
        let n = self.steps;
        let case = if self.base.is_empty() {
            String::new()
        } else {
            format!("{} ", self.base)
        };
        self.log.push((format!("{case}{n:03} {what}"), r));
    }

    /// The trees under the tops of every live logged process (see the
    /// module comment), the devices numbered across all of them.
    fn trees(&self) -> String {
        let mut devs: Vec<(u32, u32)> = Vec::new();
        let mut out = Vec::new();
        for i in self.live() {
            let p = self.proc(i);
            if let Ok(x) = p.statx(AT_FDCWD, b"/", 0, STATX_BASIC_STATS) {
                let dev = (x.dev_major, x.dev_minor);
                if !devs.contains(&dev) {
                    devs.push(dev);
                }
            }
            let mut seen = Vec::new();
            for top in &self.tops {
                walk(
                    p,
                    &|rel| self.full(&format!("/{rel}")),
                    top,
                    DEPTH,
                    &mut devs,
                    &mut seen,
                );
            }
            out.push(format!("{}{{{}}}", NAMES[i], seen.join(" ")));
        }
        out.join(" ")
    }

    /// Every live logged process's normalized mountinfo, a line each.
    fn info(&mut self) {
        for i in self.live() {
            let r = match self.proc(i).mountinfo() {
                Ok(text) => normalize(&text, self.root_source.as_deref()),
                Err(e) => format!("{e}"),
            };
            self.note(format!("mountinfo {}", NAMES[i]), r);
        }
    }

    /// What process `i`'s cwd is: its names, whether it is a mount root,
    /// whether it is the process's root directory (the same inode: another
    /// mount of the same instance's root reads the same).
    fn cwd(&mut self, i: usize) {
        let p = self.proc(i);
        let here = p.statx(AT_FDCWD, b".", 0, STATX_BASIC_STATS);
        let root = p.statx(AT_FDCWD, b"/", 0, STATX_BASIC_STATS);
        let r = match (here, dir_names(p, b".")) {
            (Ok(x), Ok(mut names)) => {
                names.sort();
                let at_root = root.is_ok_and(|r| {
                    (r.dev_major, r.dev_minor, r.ino) == (x.dev_major, x.dev_minor, x.ino)
                });
                format!(
                    "[{}]{}{}",
                    names.join(" "),
                    if x.attributes & STATX_ATTR_MOUNT_ROOT != 0 {
                        " mount root"
                    } else {
                        ""
                    },
                    if at_root { " same as /" } else { "" }
                )
            }
            (Err(e), _) | (_, Err(e)) => format!("{e}"),
        };
        self.note(format!("{}: cwd", NAMES[i]), r);
    }

    /// Whether process `i`'s cwd is its root directory (or another mount
    /// of the same directory: the same inode).
    fn cwd_is_root_dir(&self, i: usize) -> bool {
        self.is_root_dir(i, AT_FDCWD)
    }

    /// Whether descriptor `dirfd` (AT_FDCWD: the cwd) of process `i` is
    /// at its root directory (as `cwd_is_root_dir`).
    fn is_root_dir(&self, i: usize, dirfd: Fd) -> bool {
        let p = self.proc(i);
        let id = |dirfd: Fd, path: &[u8], flags: i32| {
            p.statx(dirfd, path, flags, STATX_BASIC_STATS)
                .map(|x| (x.dev_major, x.dev_minor, x.ino))
        };
        id(dirfd, b"", AT_EMPTY_PATH).is_ok_and(|here| id(AT_FDCWD, b"/", 0) == Ok(here))
    }

    // ---- processes ----

    fn fork(&mut self, parent: usize, child: usize) {
        assert!(self.procs[child].is_none(), "slot {child} is free");
        let r = self.proc(parent).fork().map(|c| {
            self.procs[child] = Some(c);
            self.own_ns[child] = self.own_ns[parent];
            self.chrooted[child] = self.chrooted[parent];
            let inherited: Vec<(usize, String, Fd)> = self
                .fds
                .iter()
                .filter(|(s, _, _)| *s == parent)
                .map(|(_, l, fd)| (child, l.clone(), *fd))
                .collect();
            self.fds.extend(inherited);
        });
        self.step(parent, format!("fork -> {}", NAMES[child]), unit(r));
    }

    fn unshare(&mut self, i: usize, flags: i32) {
        let r = self.procs[i]
            .as_mut()
            .expect("a live process")
            .unshare(flags);
        if r.is_ok() && flags & CLONE_NEWNS != 0 {
            self.own_ns[i] = true;
        }
        self.step(i, format!("unshare({})", clone_names(flags)), unit(r));
    }

    /// `i` moves into `other`'s namespace.
    fn setns(&mut self, i: usize, other: usize) {
        assert_ne!(i, other);
        let mut me = self.procs[i].take().expect("a live process");
        let r = me.setns_mount(self.proc(other));
        self.procs[i] = Some(me);
        if r.is_ok() {
            self.own_ns[i] = self.own_ns[other];
            self.chrooted[i] = false;
        }
        self.step(i, format!("setns({})", NAMES[other]), unit(r));
    }

    fn exit(&mut self, i: usize) {
        let p = self.procs[i].take().expect("a live process");
        self.own_ns[i] = false;
        self.chrooted[i] = false;
        self.fds.retain(|(s, _, _)| *s != i);
        p.exit();
        self.step(i, "exit".into(), "ok".into());
    }

    // ---- mounts ----

    /// mount(2) as given ("none" as the source is passed as is).
    fn mount(&mut self, i: usize, source: &str, target: &str, fstype: &str, flags: u64) {
        self.mount_opts(i, (source, target, fstype, flags), None);
    }

    /// `mount` (source, target, type, flags) with mount(2)'s data.
    fn mount_opts(&mut self, i: usize, call: (&str, &str, &str, u64), data: Option<&str>) {
        let (source, target, fstype, flags) = call;
        let src = if source == "none" {
            source.as_bytes().to_vec()
        } else {
            self.full(source)
        };
        let r = self.proc(i).mount_with_data(
            &src,
            &self.full(target),
            fstype.as_bytes(),
            flags,
            data.map(str::as_bytes),
        );
        let what = vfscale_difftest::script::mount_call(source, target, fstype, flags);
        self.step(i, format!("{what} data {data:?}"), unit(r));
    }

    /// A new tmpfs instance on `target` (source `mN`), with its marker
    /// file `mN`.
    fn tmpfs(&mut self, i: usize, target: &str) {
        self.tmpfs_with(i, target, 0);
    }

    /// `tmpfs` with mount(2) flags.
    fn tmpfs_with(&mut self, i: usize, target: &str, flags: u64) {
        let t = self.full(target);
        let n = self.markers + 1;
        let p = self.proc(i);
        let r = p.mount(format!("m{n}").as_bytes(), &t, b"tmpfs", flags);
        let label = match r {
            Ok(()) => {
                let mut m = t.clone();
                m.extend_from_slice(format!("/m{n}").as_bytes());
                let mut made = p
                    .open(&m, O_WRONLY | O_CREAT | O_EXCL, 0o644)
                    .and_then(|fd| p.close(fd));
                if self.populate {
                    for d in ["x", "x/y", "y"] {
                        let mut dir = t.clone();
                        dir.extend_from_slice(format!("/{d}").as_bytes());
                        made = made.and_then(|()| p.mkdir(&dir, 0o755));
                    }
                }
                self.markers = n;
                match made {
                    Ok(()) => format!("ok (m{n})"),
                    Err(e) => format!("ok (marker m{n}: {e})"),
                }
            }
            Err(e) => format!("{e}"),
        };
        let shown = if flags == 0 {
            format!("tmpfs {target}")
        } else {
            format!("tmpfs {target} {}", flag_names(flags))
        };
        self.step(i, shown, label);
    }

    /// A propagation type change (source "none", no fstype).
    fn ty(&mut self, i: usize, target: &str, flags: u64) {
        let r = self.proc(i).mount(b"none", &self.full(target), b"", flags);
        self.step(i, format!("{} {target}", flag_names(flags)), unit(r));
    }

    fn bind(&mut self, i: usize, source: &str, target: &str) {
        self.mount(i, source, target, "", MS_BIND);
    }

    fn rbind(&mut self, i: usize, source: &str, target: &str) {
        self.mount(i, source, target, "", MS_BIND | MS_REC);
    }

    fn mv(&mut self, i: usize, source: &str, target: &str) {
        self.mount(i, source, target, "", MS_MOVE);
    }

    fn umount(&mut self, i: usize, target: &str, flags: i32) {
        let r = self.proc(i).umount2(&self.full(target), flags);
        self.step(
            i,
            format!("umount2 {target} {}", umount_flag_names(flags)),
            unit(r),
        );
    }

    fn pivot_root(&mut self, i: usize, new_root: &str, put_old: &str) {
        let r = self
            .proc(i)
            .pivot_root(&self.full(new_root), &self.full(put_old));
        self.step(i, format!("pivot_root({new_root}, {put_old})"), unit(r));
    }

    // ---- the rest ----

    fn mkdir(&mut self, i: usize, path: &str) {
        let r = self.proc(i).mkdir(&self.full(path), 0o755);
        self.step(i, format!("mkdir {path}"), unit(r));
    }

    /// statfs of `path`: the instance's blocks and inodes, free and
    /// total; a default total (the kernel's, half the host's pages, or the
    /// Vfs's, which differ: docs/COMPATIBILITY.md) shows as "default" with
    /// what is used.
    fn space(&mut self, i: usize, path: &str) {
        // SAFETY: sysinfo writes only into the struct passed; all-zero
        // bytes are a valid value of it.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::sysinfo(&mut info) };
        let half_ram = info.totalram as u64 * info.mem_unit as u64 / 4096 / 2;
        let defaults = VfsConfig::default().tmpfs_limits;
        let shown = |free: u64, total: u64, ours: u64| {
            if total == half_ram || total == ours {
                format!("default, {} used", total - free)
            } else {
                format!("{free}/{total}")
            }
        };
        let r = self.proc(i).statfs(&self.full(path)).map(|st| {
            format!(
                "blocks {} files {} flags {}",
                shown(st.f_bfree, st.f_blocks, defaults.max_bytes / 4096),
                shown(st.f_ffree, st.f_files, defaults.max_inodes),
                flag_names(st.f_flags as u64 & (ST_RDONLY | ST_SYNCHRONOUS) as u64)
            )
        });
        self.step(
            i,
            format!("statfs {path}"),
            r.unwrap_or_else(|e| format!("{e}")),
        );
    }

    /// A new file `path` with `len` bytes written in one write: what the
    /// open and the write did.
    fn fill(&mut self, i: usize, path: &str, len: usize) {
        let p = self.proc(i);
        let r = p
            .open(&self.full(path), O_WRONLY | O_CREAT | O_EXCL, 0o644)
            .and_then(|fd| {
                let n = p.write(fd, &vec![b'x'; len]);
                p.close(fd)?;
                n
            });
        let shown = match r {
            Ok(n) => format!("wrote {n}"),
            Err(e) => format!("{e}"),
        };
        self.step(i, format!("fill {path} {len}"), shown);
    }

    fn chdir(&mut self, i: usize, path: &str) {
        let r = self.proc(i).chdir(&self.full(path));
        self.step(i, format!("chdir {path}"), unit(r));
    }

    fn chroot(&mut self, i: usize, path: &str) {
        let r = self.proc(i).chroot(&self.full(path));
        self.chrooted[i] |= r.is_ok();
        self.step(i, format!("chroot {path}"), unit(r));
    }

    /// Opens directory `path` and keeps the descriptor (labelled `path`).
    fn open_dir(&mut self, i: usize, path: &str) {
        self.open_with(i, path, O_RDONLY | O_DIRECTORY);
    }

    /// Opens `path` with `flags` (mode 0644) and keeps the descriptor
    /// (labelled `path`).
    fn open_with(&mut self, i: usize, path: &str, flags: i32) {
        let r = self.proc(i).open(&self.full(path), flags, 0o644);
        self.keep(i, format!("open {path} {flags:#o}"), path, r);
    }

    /// mount_setattr(2) at `path` (or, for `@label`, at the descriptor
    /// `open_dir` opened there, with an empty path).
    fn setattr(&mut self, i: usize, path: &str, flags: i32, attr: MountAttr) {
        let (dirfd, p) = self.at(i, path);
        let r = self.proc(i).mount_setattr(dirfd, &p, flags, &attr);
        self.step(
            i,
            format!(
                "mount_setattr({path}, {flags:#x}, set {:#x} clr {:#x} prop {} fd {})",
                attr.attr_set,
                attr.attr_clr,
                flag_names(attr.propagation),
                attr.userns_fd as i64
            ),
            unit(r),
        );
    }

    /// Logs a call that makes a descriptor (`what`), keeping the
    /// descriptor it returned as `label`.
    fn keep(&mut self, i: usize, what: String, label: &str, r: SysResult<Fd>) {
        if let Ok(fd) = r {
            self.fds.push((i, label.to_string(), fd));
        }
        self.step(i, what, unit(r.map(|_| ())));
    }

    /// open_tree(2) of `path` (`@label`: that descriptor, with an empty
    /// path); a descriptor it returns is kept as `label`.
    fn open_tree(&mut self, i: usize, path: &str, flags: i32, label: &str) {
        let (dirfd, p) = self.at(i, path);
        let r = self.proc(i).open_tree(dirfd, &p, flags);
        self.keep(
            i,
            format!("open_tree({path}, {flags:#x}) as {label}"),
            label,
            r,
        );
    }

    /// move_mount(2) from `from` to `to` (each a path or `@label`, a
    /// descriptor with an empty path).
    fn move_mount(&mut self, i: usize, from: &str, to: &str, flags: u32) {
        let (from_fd, f) = self.at(i, from);
        let (to_fd, t) = self.at(i, to);
        let r = self.proc(i).move_mount(from_fd, &f, to_fd, &t, flags);
        self.step(i, format!("move_mount({from}, {to}, {flags:#x})"), unit(r));
    }

    /// The tree seen through descriptor `label` (a child of slot `i`,
    /// moved there with fchdir, walks it and exits).
    fn peek(&mut self, i: usize, label: &str) {
        let fd = self.held_fd(i, label).unwrap_or(-1);
        let child = self.proc(i).fork().expect("a child to peek with");
        let r = child.fchdir(fd).map(|()| {
            let (mut devs, mut seen) = (Vec::new(), Vec::new());
            walk(
                &child,
                &|rel| rel.as_bytes().to_vec(),
                ".",
                DEPTH,
                &mut devs,
                &mut seen,
            );
            seen.join(" ")
        });
        drop(child);
        let shown = match r {
            Ok(t) => t,
            Err(e) => format!("{e}"),
        };
        self.note(format!("peek {} {label}", NAMES[i]), shown);
    }

    /// fsopen(2); a descriptor it returns is kept as `label`.
    fn fsopen(&mut self, i: usize, fstype: &str, flags: u32, label: &str) {
        let r = self.proc(i).fsopen(fstype.as_bytes(), flags);
        self.keep(
            i,
            format!("fsopen({fstype}, {flags:#x}) as {label}"),
            label,
            r,
        );
    }

    /// fsconfig(2) on the descriptor labelled `label` (-1 if none).
    fn fsconfig(
        &mut self,
        i: usize,
        label: &str,
        cmd: u32,
        key: Option<&str>,
        value: Option<&str>,
        aux: i32,
    ) {
        self.fsconfig_kept(i, label, (cmd, key, value, aux));
        self.messages(i, label, &[4096]);
    }

    /// `fsconfig` (its command, key, value and aux), leaving what it
    /// logged in the configuration's log.
    fn fsconfig_kept(&mut self, i: usize, label: &str, call: FsconfigCall<'_>) {
        let (cmd, key, value, aux) = call;
        let fd = self.held_fd(i, label).unwrap_or(-1);
        let r = self.proc(i).fsconfig(
            fd,
            cmd,
            key.map(str::as_bytes),
            value.map(str::as_bytes),
            aux,
        );
        self.step(
            i,
            format!("fsconfig({label}, {cmd}, {key:?}, {value:?}, {aux})"),
            unit(r),
        );
    }

    /// Reads the configuration `label`'s messages (fscontext_read) with
    /// segments of `lens` bytes until a read fails; each read's result is
    /// noted.
    fn messages(&mut self, i: usize, label: &str, lens: &[usize]) {
        let Some(fd) = self.held_fd(i, label) else {
            return;
        };
        let mut read = Vec::new();
        for _ in 0..16 {
            let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0; n]).collect();
            let mut segs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            let r = if lens.len() == 1 {
                self.proc(i).read(fd, segs[0])
            } else {
                self.proc(i).readv(fd, &mut segs)
            };
            match r {
                Ok(n) => {
                    let mut text = Vec::new();
                    // The bytes each segment got, in order.
                    let mut left = n;
                    for (b, &len) in bufs.iter().zip(lens) {
                        let take = left.min(len);
                        text.extend_from_slice(&b[..take]);
                        left -= take;
                    }
                    read.push(format!("{:?}", String::from_utf8_lossy(&text)));
                    if n == 0 {
                        break;
                    }
                }
                Err(e) => {
                    read.push(format!("{e}"));
                    break;
                }
            }
        }
        self.note(
            format!("messages {} {label} {lens:?}", NAMES[i]),
            read.join(" "),
        );
    }

    /// fsmount(2) of the configuration labelled `label`; the descriptor
    /// it returns is kept as `as_label`.
    fn fsmount(&mut self, i: usize, label: &str, flags: u32, attr: u64, as_label: &str) {
        let fd = self.held_fd(i, label).unwrap_or(-1);
        let r = self.proc(i).fsmount(fd, flags, attr);
        let what = format!("fsmount({label}, {flags:#x}, {attr:#x}) as {as_label}");
        self.keep(i, what, as_label, r);
    }

    /// fspick(2) of `path` (or `@label`); the descriptor is kept as `as_label`.
    fn fspick(&mut self, i: usize, path: &str, flags: u32, as_label: &str) {
        let (dirfd, p) = self.at(i, path);
        let r = self.proc(i).fspick(dirfd, &p, flags);
        self.keep(
            i,
            format!("fspick({path}, {flags:#x}) as {as_label}"),
            as_label,
            r,
        );
    }

    /// The mode and owner of `path` (or `@label`) as statx reports them.
    fn owner(&mut self, i: usize, path: &str) {
        let (dirfd, p) = self.at(i, path);
        let flags = if p.is_empty() { AT_EMPTY_PATH } else { 0 };
        let r = self
            .proc(i)
            .statx(dirfd, &p, flags, STATX_BASIC_STATS)
            .map(|x| format!("{:o} {}:{}", x.mode, x.uid, x.gid));
        let shown = match r {
            Ok(t) => t,
            Err(e) => format!("{e}"),
        };
        self.note(format!("owner {} {path}", NAMES[i]), shown);
    }

    /// A script path as a call takes it: `@label` is that descriptor with
    /// an empty path, `@label/rel` the path `rel` from it (-1, EBADF, when
    /// the open of `label` failed), anything else a path from AT_FDCWD.
    fn at(&self, i: usize, path: &str) -> (Fd, Vec<u8>) {
        match path.strip_prefix('@') {
            Some(at) => {
                let (label, rel) = at.split_once('/').unwrap_or((at, ""));
                let label = if self.held_fd(i, at).is_some() {
                    at
                } else {
                    label
                };
                let rel = if label == at { "" } else { rel };
                (
                    self.held_fd(i, label).unwrap_or(-1),
                    rel.as_bytes().to_vec(),
                )
            }
            None => (AT_FDCWD, self.full(path)),
        }
    }

    /// The descriptor `open_dir` opened on `label`, as slot `i` has it.
    fn fd(&self, i: usize, label: &str) -> Fd {
        self.held_fd(i, label).expect("opened before")
    }

    /// The descriptor labelled `label` that slot `i` holds, if any (an
    /// open may have failed, on one side or both).
    fn held_fd(&self, i: usize, label: &str) -> Option<Fd> {
        self.fds
            .iter()
            .find(|(s, l, _)| *s == i && l == label)
            .map(|(_, _, fd)| *fd)
    }

    /// The label of the n-th descriptor (modulo how many) slot `i` holds.
    fn nth_fd(&self, i: usize, n: usize) -> Option<String> {
        let held: Vec<&String> = self
            .fds
            .iter()
            .filter(|(s, _, _)| *s == i)
            .map(|(_, l, _)| l)
            .collect();
        (!held.is_empty()).then(|| held[n % held.len()].clone())
    }

    /// Closes the first descriptor labelled `label` that slot `i` holds.
    fn close_dir(&mut self, i: usize, label: &str) {
        let Some(fd) = self.held_fd(i, label) else {
            // Its open failed (the step logged why).
            return self.step(i, format!("close {label}"), "not open".into());
        };
        let at = self
            .fds
            .iter()
            .position(|(s, l, _)| *s == i && l == label)
            .expect("opened before");
        self.fds.remove(at);
        let r = self.proc(i).close(fd);
        self.step(i, format!("close {label}"), unit(r));
    }

    fn fchdir(&mut self, i: usize, label: &str) {
        let r = self.proc(i).fchdir(self.fd(i, label));
        self.step(i, format!("fchdir {label}"), unit(r));
    }

    /// Ends every process (slot order) and returns the log.
    fn finish(mut self) -> Log {
        for i in 0..NAMES.len() {
            if let Some(p) = self.procs[i].take() {
                p.exit();
            }
        }
        self.log
    }
}

/// The names in directory `path`, without `.` and `..`.
fn user_cred() -> Cred {
    Cred::user(1000, 1000, &[1000])
}

/// Runs `body` from a clean tree: the tops made (as one logged step).
fn scenario<T: ProcessApi>(root: &T, user: T, body: impl FnOnce(&mut World<T>)) -> Log {
    let made: SysResult<()> = TOPS
        .iter()
        .try_for_each(|t| root.mkdir(format!("/{t}").as_bytes(), 0o755));
    let mut w = World::new(root, Some(user), "", &TOPS);
    w.step(P, "setup".into(), unit(made));
    body(&mut w);
    w.finish()
}

/// Compares a scenario on the kernel and on vfscale (the same generic
/// function, given twice: once for each side's process type).
fn compare(
    what: &'static str,
    on_kernel: impl FnOnce(&mut World<KernelProcess>) + Send + 'static,
    on_vfscale: impl FnOnce(&mut World<vfscale::Process>),
) {
    compare_with_kernel(
        what,
        move |k| {
            let user = KernelProcess::new(&user_cred()).expect("a uid 1000 process");
            show_kernel_log(what, scenario(k, user, on_kernel))
        },
        move |p| {
            let user = p.with_cred(user_cred()).expect("a uid 1000 process");
            scenario(p, user, on_vfscale)
        },
    );
}

// ---- the scenarios ----

/// unshare's copy: what it sees, what stays on each side afterwards, the
/// cwd moving onto the copy, CLONE_FS, and EPERM for a non-root process.
fn unshare_basics<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.tmpfs(P, "/a/x");
    w.tmpfs(P, "/b");
    w.fork(P, Q);
    // A descriptor of p's alone (q was forked before it).
    w.open_dir(P, "/b");
    w.info();
    w.unshare(Q, CLONE_NEWNS);
    w.info();
    // Mounts and umounts afterwards stay in their namespace.
    w.tmpfs(Q, "/c");
    w.tmpfs(P, "/s");
    w.umount(Q, "/a/x", 0);
    w.umount(Q, "/b", 0);
    w.umount(P, "/b", 0);
    w.close_dir(P, "/b");
    w.umount(P, "/b", 0);
    w.tmpfs(P, "/a/x");
    w.tmpfs(Q, "/b");
    w.info();
    // The cwd moves onto the copy; the namespace left behind (q's first)
    // goes with its last process.
    w.chdir(Q, "/a");
    w.unshare(Q, CLONE_NEWNS);
    w.cwd(Q);
    w.umount(Q, "/a", 0);
    w.umount(P, "/a", 0);
    w.chdir(Q, "/");
    w.umount(Q, "/a", 0);
    w.info();
    // CLONE_FS, alone and with CLONE_NEWNS.
    w.chdir(Q, "/c");
    w.unshare(Q, CLONE_FS);
    w.cwd(Q);
    w.unshare(Q, CLONE_NEWNS | CLONE_FS);
    w.cwd(Q);
    w.chdir(Q, "/");
    // Not root: EPERM (CLONE_FS alone needs nothing).
    w.unshare(U, CLONE_NEWNS);
    w.unshare(U, CLONE_NEWNS | CLONE_FS);
    w.unshare(U, CLONE_FS);
    w.setns(U, Q);
    w.tmpfs(U, "/s");
    // A child of q's is in q's namespace, and keeps it after q's exit.
    w.fork(Q, R);
    w.tmpfs(R, "/a");
    w.exit(Q);
    w.tmpfs(R, "/s");
    w.info();
    w.exit(R);
    w.info();
}

#[test]
fn unshare_basics_match_the_kernel() {
    compare("unshare basics", unshare_basics, unshare_basics);
}

/// Per-mount and per-instance options in mountinfo, and what a copy has
/// of them.
fn options<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs_with(P, "/a", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME);
    w.tmpfs_with(P, "/b", MS_RDONLY);
    w.tmpfs(P, "/c");
    w.mount(P, "none", "/c", "", MS_REMOUNT | MS_BIND | MS_RDONLY);
    w.bind(P, "/a", "/s");
    w.info();
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.info();
    // A bind remount is the copy's alone; a plain remount is the instance's
    // (and resets the mount's flags).
    w.mount(Q, "none", "/c", "", MS_REMOUNT | MS_BIND);
    w.mount(Q, "none", "/b", "", MS_REMOUNT);
    w.mount(Q, "none", "/s", "", MS_REMOUNT | MS_BIND | MS_NOSUID);
    w.info();
    w.exit(Q);
}

#[test]
fn options_match_the_kernel() {
    compare("options", options, options);
}

/// Propagation across namespaces: a shared mount's copy is its peer;
/// MS_SLAVE makes it one-way, MS_PRIVATE cuts it; a recursive bind of a
/// shared tree in one namespace.
fn across_namespaces<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    for d in ["/a/x", "/a/y", "/a/z"] {
        w.mkdir(P, d);
    }
    w.ty(P, "/a", MS_SHARED);
    w.bind(P, "/a", "/b");
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.info();
    // Both ways, mounts and umounts.
    w.tmpfs(P, "/a/x");
    w.tmpfs(Q, "/b/y");
    w.umount(Q, "/a/x", 0);
    w.umount(P, "/b/y", 0);
    w.info();
    // A slave in q: from p's group to q's /a, not back.
    w.ty(Q, "/a", MS_SLAVE);
    w.info();
    w.tmpfs(P, "/a/x");
    w.tmpfs(Q, "/a/y");
    w.umount(Q, "/a/y", 0);
    w.tmpfs(Q, "/b/z");
    w.info();
    w.umount(P, "/a/z", 0);
    w.umount(P, "/a/x", 0);
    // MS_PRIVATE cuts q's /b off.
    w.ty(Q, "/b", MS_PRIVATE);
    w.tmpfs(P, "/a/y");
    w.tmpfs(Q, "/b/y");
    w.info();
    // Shared again in q: a group of its own, still a slave of p's.
    w.ty(Q, "/a", MS_SHARED);
    w.bind(Q, "/a", "/c");
    w.info();
    w.tmpfs(Q, "/c/z");
    w.umount(P, "/a/y", 0);
    w.umount(Q, "/b/y", 0);
    w.umount(Q, "/c", MNT_DETACH);
    // A recursive bind of a shared tree in one namespace.
    w.tmpfs(P, "/c");
    w.mkdir(P, "/c/x");
    w.mkdir(P, "/c/y");
    w.tmpfs(P, "/c/x");
    w.mkdir(P, "/c/x/d");
    w.ty(P, "/c", MS_SHARED | MS_REC);
    w.fork(P, R);
    w.unshare(R, CLONE_NEWNS);
    w.rbind(R, "/c", "/s");
    w.info();
    w.tmpfs(P, "/c/y");
    w.tmpfs(R, "/s/x/d");
    w.info();
    w.umount(R, "/s/y", 0);
    w.umount(P, "/c/x/d", 0);
    w.ty(R, "/s", MS_SLAVE | MS_REC);
    w.tmpfs(P, "/c/y");
    w.tmpfs(R, "/s/x/d");
    w.info();
    // Unbindable mounts are copied too, unbindable.
    w.ty(P, "/c/x", MS_UNBINDABLE);
    w.fork(P, S);
    w.unshare(S, CLONE_NEWNS);
    w.rbind(S, "/c", "/s");
    w.bind(S, "/c/x", "/s");
    w.info();
    w.exit(R);
    w.exit(Q);
    w.exit(S);
    w.info();
}

#[test]
fn propagation_across_namespaces_matches_the_kernel() {
    compare("across namespaces", across_namespaces, across_namespaces);
}

/// propagate_from: a slave whose master's group has no member in the
/// slave's namespace, one further up having one.
fn dominating<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.mkdir(P, "/a/y");
    w.ty(P, "/a", MS_SHARED);
    w.bind(P, "/a", "/b");
    w.ty(P, "/b", MS_SLAVE);
    w.ty(P, "/b", MS_SHARED);
    w.info();
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.info();
    w.ty(Q, "/b", MS_SLAVE);
    w.info();
    w.tmpfs(P, "/a/x");
    w.tmpfs(P, "/b/y");
    w.info();
    w.ty(Q, "/a", MS_PRIVATE);
    w.info();
    // p's /b leaves its group: q's /b goes on to its master's master.
    w.ty(P, "/b", MS_PRIVATE);
    w.info();
    w.umount(P, "/a/x", 0);
    w.tmpfs(P, "/a/y");
    w.ty(P, "/a", MS_PRIVATE);
    w.info();
    w.exit(Q);
}

#[test]
fn propagate_from_matches_the_kernel() {
    compare("propagate_from", dominating, dominating);
}

/// The mounts of another namespace: q, forked after p opened `/a` (a
/// mount root), unshares, then works at that descriptor.
fn other_namespace<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.mkdir(P, "/a/y");
    w.tmpfs(P, "/c");
    w.open_dir(P, "/a");
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.fchdir(Q, "/a");
    w.cwd(Q);
    // Every change to a mount of p's namespace, by q.
    w.tmpfs(Q, ".");
    w.tmpfs(Q, "x");
    w.bind(Q, ".", "/b");
    w.bind(Q, "x", "/b");
    w.rbind(Q, ".", "/b");
    w.bind(Q, "/b", ".");
    w.bind(Q, "/c", "x");
    w.mv(Q, ".", "/b");
    w.mv(Q, "/c", ".");
    w.mv(Q, "/c", "x");
    w.mount(Q, "none", ".", "", MS_REMOUNT);
    w.mount(Q, "none", ".", "", MS_REMOUNT | MS_RDONLY);
    w.mount(Q, "none", ".", "", MS_REMOUNT | MS_BIND);
    w.mount(Q, "none", ".", "", MS_REMOUNT | MS_BIND | MS_RDONLY);
    w.ty(Q, ".", MS_SHARED);
    w.ty(Q, ".", MS_PRIVATE);
    w.ty(Q, ".", MS_SLAVE);
    w.ty(Q, ".", MS_UNBINDABLE);
    w.ty(Q, ".", MS_SHARED | MS_REC);
    w.umount(Q, ".", 0);
    w.umount(Q, ".", MNT_DETACH);
    // Not a mount change: allowed.
    w.mkdir(Q, "x/q");
    w.info();
    // Its parent is p's root mount.
    w.chdir(Q, "..");
    w.cwd(Q);
    w.tmpfs(Q, "b");
    w.chdir(Q, "a");
    w.cwd(Q);
    // p's umount of the mount q's cwd is in.
    w.umount(P, "/a", 0);
    w.umount(P, "/a", MNT_DETACH);
    w.cwd(Q);
    w.chdir(Q, "..");
    w.cwd(Q);
    // At a detached mount: the source is checked before the target.
    w.tmpfs(Q, ".");
    w.bind(Q, "/c", ".");
    w.mv(Q, "/c", ".");
    w.mv(Q, "/b", ".");
    w.mv(Q, ".", "/b");
    w.ty(Q, ".", MS_SHARED);
    w.umount(Q, ".", 0);
    w.chdir(Q, "/");
    w.cwd(Q);
    w.info();
}

#[test]
fn mounts_of_another_namespace_match_the_kernel() {
    compare("another namespace", other_namespace, other_namespace);
}

/// Lifetime: a namespace's mounts go with its last process; peer groups
/// and masters lose their members there.
fn lifetime<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    for d in ["/a/x", "/a/y", "/a/z"] {
        w.mkdir(P, d);
    }
    w.ty(P, "/a", MS_SHARED);
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.tmpfs(Q, "/b");
    w.tmpfs(Q, "/a/x");
    w.tmpfs(Q, "/c");
    w.chdir(Q, "/c");
    w.info();
    // q exits with its cwd in a mount of its own.
    w.exit(Q);
    w.info();
    w.tmpfs(P, "/a/y");
    w.umount(P, "/a/x", 0);
    w.umount(P, "/a/y", 0);
    // A slave of a group whose only member is in r's namespace.
    w.fork(P, R);
    w.unshare(R, CLONE_NEWNS);
    w.ty(P, "/a", MS_SLAVE);
    w.info();
    w.tmpfs(R, "/a/z");
    w.chdir(R, "/a/z");
    w.info();
    w.exit(R);
    w.info();
    w.umount(P, "/a/z", 0);
    // Peers in three namespaces; the middle one's last process exits.
    w.ty(P, "/a", MS_SHARED);
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.fork(Q, R);
    w.fork(P, S);
    w.unshare(S, CLONE_NEWNS);
    w.ty(S, "/a", MS_SLAVE);
    w.tmpfs(Q, "/a/x");
    w.exit(Q);
    w.info();
    w.chdir(R, "/a/x");
    w.tmpfs(P, "/a/y");
    w.exit(R);
    w.info();
    w.umount(P, "/a/x", 0);
    w.ty(P, "/a", MS_PRIVATE);
    w.tmpfs(P, "/a/z");
    w.info();
    w.exit(S);
    w.info();
}

#[test]
fn lifetime_matches_the_kernel() {
    compare("lifetime", lifetime, lifetime);
}

/// setns: root and cwd at the top of the target namespace's root; mounts
/// seen by both from then on.
fn setns<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.fork(P, R);
    w.unshare(R, CLONE_NEWNS);
    w.tmpfs(R, "/b");
    w.tmpfs(R, "/a/x");
    w.chdir(R, "/a");
    w.fork(P, S);
    w.chdir(S, "/a/x");
    w.open_dir(S, "/a");
    w.setns(S, R);
    w.cwd(S);
    w.cwd(R);
    w.info();
    w.tmpfs(S, "/c");
    w.umount(R, "/b", 0);
    w.umount(S, "/a", 0);
    w.chdir(R, "/");
    w.umount(S, "/a/x", 0);
    // The descriptor still names p's /a: another namespace's mount.
    w.fchdir(S, "/a");
    w.cwd(S);
    w.tmpfs(S, ".");
    w.chdir(S, "/");
    // Back into the first namespace (q's), and again into r's.
    w.fork(P, Q);
    w.setns(S, Q);
    w.cwd(S);
    w.info();
    w.setns(S, R);
    w.setns(Q, R);
    w.exit(R);
    w.tmpfs(Q, "/s");
    w.info();
    // From a chroot: root and cwd at the namespace's root again.
    w.chroot(S, "/c");
    w.cwd(S);
    w.info();
    w.setns(S, P);
    w.cwd(S);
    w.info();
    // A mount on top of the root: setns lands on the top, the one who
    // mounted it stays beneath (its marker too: `//m6` is looked up from
    // q's root, beneath the new instance).
    w.tmpfs(Q, "/");
    w.cwd(Q);
    w.setns(S, Q);
    w.cwd(S);
    w.info();
    w.tmpfs(S, "/a");
    w.exit(Q);
    w.info();
}

#[test]
fn setns_matches_the_kernel() {
    compare("setns", setns, setns);
}

/// pivot_root: its refusals in Linux's order (EPERM, a file, a missing
/// path, put_old on the old root's mount, the root itself, not a whole
/// mount, a shared parent), then a pivot with processes whose root or cwd
/// is the old root (moved), one whose cwd is beneath it and one in
/// another namespace (not moved), the old root detached from beneath the
/// new one, and runc's pivot_root(".", ".") from a mount's root.
fn pivot<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    for d in ["/a/old", "/a/a", "/a/b", "/a/c", "/a/s"] {
        w.mkdir(P, d);
    }
    w.tmpfs(P, "/a/old");
    w.umount(P, "/a/old", 0);
    w.pivot_root(U, "/a", "/a/old");
    w.pivot_root(P, "/a/m1", "/a/old");
    w.pivot_root(P, "/a/nothing", "/a/old");
    w.pivot_root(P, "/a", "/a/nothing");
    w.pivot_root(P, "/a", "/b");
    w.pivot_root(P, "/", "/a/old");
    w.pivot_root(P, "/a/old", "/a/old");
    w.pivot_root(P, "/b", "/a/old");
    w.pivot_root(P, "/a", "/");
    w.ty(P, "/", MS_SHARED);
    w.pivot_root(P, "/a", "/a/old");
    w.ty(P, "/", MS_PRIVATE);
    w.ty(P, "/a", MS_SHARED);
    w.tmpfs(P, "/c");
    w.ty(P, "/c", MS_SHARED);
    // put_old on a shared mount.
    w.pivot_root(P, "/c", "/c");
    w.ty(P, "/c", MS_PRIVATE);
    w.pivot_root(P, "/a", "/a/old");
    w.ty(P, "/a", MS_PRIVATE);
    w.fork(P, Q);
    w.fork(P, R);
    w.chdir(R, "/b");
    w.fork(P, S);
    w.unshare(S, CLONE_NEWNS);
    w.info();
    w.pivot_root(P, "/a", "/a/old");
    for i in [P, Q, R, S] {
        w.cwd(i);
    }
    w.info();
    w.tmpfs(Q, "/b");
    w.umount(P, "/old", MNT_DETACH);
    w.cwd(R);
    w.info();
    // runc's idiom: the old root stacked on the new one, then detached.
    w.tmpfs(P, "/c");
    w.mkdir(P, "/c/a");
    w.chdir(P, "/c");
    w.pivot_root(P, ".", ".");
    w.cwd(P);
    w.cwd(Q);
    w.info();
    w.umount(P, ".", MNT_DETACH);
    w.chdir(P, "/");
    w.cwd(P);
    w.cwd(Q);
    w.info();
    // No parent left above the new root to put it on but the rootfs.
    w.pivot_root(P, "/", "/");
    // From a chroot at a mount's root (a root with a parent): the new
    // root takes the old one's place beneath its parent.
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/n");
    w.tmpfs(P, "/a/n");
    w.mkdir(P, "/a/n/old");
    w.chroot(P, "/a");
    w.chroot(R, "/a/n");
    w.pivot_root(P, "/n", "/n/old");
    for i in [P, Q, R] {
        w.cwd(i);
    }
    w.info();
    w.exit(S);
}

#[test]
fn pivot_root_matches_the_kernel() {
    compare("pivot_root", pivot, pivot);
}

/// mount_setattr: recursive read-only and back, the other flags, the
/// atime modes (and their EINVALs), propagation, its refusals in Linux's
/// order (flags, EPERM, the no-op before the walk, the attributes, the
/// idmapping's EINVAL and EBADF, not a mount's root, another namespace's
/// mount), EBUSY with a writer anywhere beneath changing nothing, an
/// empty path at a descriptor, and a symlink followed or not.
fn setattr<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.tmpfs(P, "/a/x");
    w.tmpfs(P, "/b");
    w.setattr(P, "/a", AT_RECURSIVE, MountAttr::set(MOUNT_ATTR_RDONLY));
    w.info();
    w.mkdir(P, "/a/y");
    w.mkdir(P, "/a/x/y");
    w.setattr(P, "/a/x", 0, MountAttr::clear(MOUNT_ATTR_RDONLY));
    w.mkdir(P, "/a/x/y");
    w.setattr(P, "/a", AT_RECURSIVE, MountAttr::clear(MOUNT_ATTR_RDONLY));
    w.setattr(
        P,
        "/a",
        0,
        MountAttr::set(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC),
    );
    w.setattr(
        P,
        "/b",
        0,
        MountAttr::set(MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOSYMFOLLOW),
    );
    w.info();
    w.setattr(
        P,
        "/a",
        0,
        MountAttr::clear(MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NODEV),
    );
    // The atime modes.
    let atime = |mode: u64| MountAttr {
        attr_set: mode,
        attr_clr: MOUNT_ATTR__ATIME,
        ..Default::default()
    };
    w.setattr(P, "/a", 0, atime(MOUNT_ATTR_NOATIME));
    w.setattr(P, "/a/x", 0, atime(MOUNT_ATTR_STRICTATIME));
    w.info();
    w.setattr(P, "/a", 0, atime(MOUNT_ATTR_RELATIME));
    w.setattr(P, "/a", 0, atime(0x30));
    w.setattr(P, "/a", 0, MountAttr::set(MOUNT_ATTR_NOATIME));
    w.setattr(P, "/a", 0, MountAttr::clear(MOUNT_ATTR_NOATIME));
    // Propagation.
    let prop = |p: u64| MountAttr {
        propagation: p,
        ..Default::default()
    };
    w.setattr(P, "/a", AT_RECURSIVE, prop(MS_SHARED));
    w.setattr(P, "/a/x", 0, prop(MS_PRIVATE));
    w.setattr(P, "/a", 0, prop(MS_SHARED | MS_SLAVE));
    w.setattr(P, "/a", 0, prop(MS_REC));
    w.info();
    // Refusals, in order.
    w.setattr(P, "/a", 0x1, MountAttr::set(MOUNT_ATTR_NOSUID));
    w.setattr(U, "/a", 0, MountAttr::set(MOUNT_ATTR_NOSUID));
    w.setattr(P, "/nothing", 0, MountAttr::default());
    w.setattr(P, "/nothing", 0, MountAttr::set(MOUNT_ATTR_NOSUID));
    w.setattr(P, "/nothing", 0, MountAttr::set(1 << 40));
    w.setattr(P, "/a", 0, MountAttr::set(1 << 40));
    w.setattr(P, "/a", 0, MountAttr::clear(MOUNT_ATTR_IDMAP));
    let idmap = |fd: u64| MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        userns_fd: fd,
        ..Default::default()
    };
    w.setattr(P, "/a", 0, idmap(u64::MAX));
    w.setattr(P, "/a", 0, idmap(900));
    w.open_dir(P, "/b");
    let fd = w.fd(P, "/b");
    w.setattr(P, "/a", 0, idmap(fd as u64));
    w.open_with(P, "/c", O_PATH);
    let fd = w.fd(P, "/c");
    w.setattr(P, "/a", 0, idmap(fd as u64));
    w.setattr(P, "/a/x/y", 0, MountAttr::set(MOUNT_ATTR_NOSUID));
    // A writer beneath: EBUSY, nothing changed; then it closes.
    w.open_with(P, "/a/x/f", O_WRONLY | O_CREAT);
    w.setattr(P, "/a", AT_RECURSIVE, MountAttr::set(MOUNT_ATTR_RDONLY));
    w.setattr(P, "/a/x", 0, MountAttr::set(MOUNT_ATTR_RDONLY));
    w.setattr(P, "/a", 0, MountAttr::set(MOUNT_ATTR_RDONLY));
    w.info();
    w.close_dir(P, "/a/x/f");
    w.setattr(
        P,
        "/a",
        AT_RECURSIVE,
        MountAttr::set(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID),
    );
    w.info();
    // An empty path at a descriptor; a symlink followed or not.
    w.setattr(P, "@/b", AT_EMPTY_PATH, MountAttr::set(MOUNT_ATTR_NOEXEC));
    w.setattr(P, "@/b", 0, MountAttr::set(MOUNT_ATTR_NOEXEC));
    let r = w.proc(P).symlink(b"../b", &w.full("/c/l"));
    w.step(P, "symlink ../b /c/l".into(), unit(r));
    w.setattr(P, "/c/l", 0, MountAttr::set(MOUNT_ATTR_NODEV));
    w.setattr(
        P,
        "/c/l",
        AT_SYMLINK_NOFOLLOW,
        MountAttr::set(MOUNT_ATTR_NODEV),
    );
    w.info();
    // Another namespace's mount, through a descriptor kept across unshare.
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.setattr(Q, "@/b", AT_EMPTY_PATH, MountAttr::set(MOUNT_ATTR_NOSUID));
    w.setattr(Q, "/b", 0, MountAttr::set(MOUNT_ATTR_NOSUID));
    w.info();
}

#[test]
fn mount_setattr_matches_the_kernel() {
    compare("mount_setattr", setattr, setattr);
}

/// open_tree and move_mount: detached copies (alone and recursive),
/// seen through their descriptor, changed by mount_setattr before anyone
/// sees them, attached (onto a shared mount too, which propagates them),
/// dropped by a close; a plain O_PATH open_tree; the refusals.
fn detached_trees<T: ProcessApi>(w: &mut World<T>) {
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.tmpfs(P, "/a/x");
    w.mkdir(P, "/a/x/y");
    w.mkdir(P, "/c/d");
    w.mkdir(P, "/c/e");
    // Without OPEN_TREE_CLONE: an O_PATH descriptor, nothing copied.
    w.open_tree(P, "/a", 0, "plain");
    w.peek(P, "plain");
    // A detached copy of one mount, then of the tree.
    w.open_tree(P, "/a", OPEN_TREE_CLONE, "one");
    w.peek(P, "one");
    w.open_tree(P, "/a", OPEN_TREE_CLONE | AT_RECURSIVE, "all");
    w.peek(P, "all");
    w.info();
    // Read-only before anyone sees it; a mount inside is not the root.
    w.setattr(
        P,
        "@all",
        AT_EMPTY_PATH | AT_RECURSIVE,
        MountAttr::set(MOUNT_ATTR_RDONLY),
    );
    w.open_tree(P, "@all/x", 0, "inside");
    w.setattr(
        P,
        "@inside",
        AT_EMPTY_PATH,
        MountAttr::set(MOUNT_ATTR_NOEXEC),
    );
    w.setattr(P, "@all/x", 0, MountAttr::set(MOUNT_ATTR_NOEXEC));
    w.close_dir(P, "inside");
    // Attached, the tree joins the namespace; then it moves as MS_MOVE
    // moves a mount, by its path or its descriptor.
    w.move_mount(P, "@all", "/c/d", MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    w.mkdir(P, "/c/d/z");
    w.move_mount(P, "/c/d", "/c/e", 0);
    w.move_mount(P, "@all", "/c/d", MOVE_MOUNT_F_EMPTY_PATH);
    w.close_dir(P, "all");
    w.info();
    // Onto a shared mount: propagated to its peer.
    w.tmpfs(P, "/s");
    w.mkdir(P, "/s/t");
    w.ty(P, "/s", MS_SHARED);
    w.mkdir(P, "/b/s2");
    w.bind(P, "/s", "/b/s2");
    w.move_mount(P, "@one", "/s/t", MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    // Dropped by its last close before anyone attached it.
    w.open_tree(
        P,
        "/a",
        OPEN_TREE_CLONE | AT_RECURSIVE | OPEN_TREE_CLOEXEC,
        "gone",
    );
    w.peek(P, "gone");
    w.close_dir(P, "gone");
    w.info();
    // A copy of a mount inside a detached tree, and of a file.
    w.open_tree(P, "/a", OPEN_TREE_CLONE | AT_RECURSIVE, "t");
    w.open_tree(P, "@t", AT_EMPTY_PATH, "tx");
    w.open_tree(P, "@t/x", OPEN_TREE_CLONE, "tc");
    w.peek(P, "tc");
    w.open_with(P, "/c/f", O_WRONLY | O_CREAT);
    w.close_dir(P, "/c/f");
    w.open_tree(P, "/c/f", OPEN_TREE_CLONE, "file");
    // Refusals of open_tree.
    w.open_tree(P, "/a", 0x4, "bad");
    w.open_tree(P, "/a", AT_RECURSIVE, "bad");
    w.open_tree(U, "/a", OPEN_TREE_CLONE, "bad");
    w.open_tree(U, "/a", 0, "uplain");
    w.open_tree(P, "/nothing", OPEN_TREE_CLONE, "bad");
    w.open_tree(P, "@plain/nothing", OPEN_TREE_CLONE, "bad");
    w.ty(P, "/a/x", MS_UNBINDABLE);
    w.open_tree(P, "/a/x", OPEN_TREE_CLONE, "bad");
    w.open_tree(P, "/a", OPEN_TREE_CLONE | AT_RECURSIVE, "skips");
    w.peek(P, "skips");
    // Refusals of move_mount.
    w.move_mount(P, "@t", "/c/f", MOVE_MOUNT_F_EMPTY_PATH);
    w.move_mount(P, "@file", "/c/e", MOVE_MOUNT_F_EMPTY_PATH);
    w.move_mount(P, "@t", "/c/e", 0);
    w.move_mount(P, "@t", "/c/e", 0x1000);
    w.move_mount(U, "@t", "/c/e", MOVE_MOUNT_F_EMPTY_PATH);
    w.move_mount(P, "@t/x", "/c/e", 0);
    w.move_mount(P, "@t", "@t/x", MOVE_MOUNT_F_EMPTY_PATH);
    w.move_mount(P, "/c", "/c/e", 0);
    w.move_mount(P, "/a", "/a/x/y", 0);
    // A final symlink is followed only when asked.
    let r = w.proc(P).symlink(b"e", &w.full("/c/l"));
    w.step(P, "symlink e /c/l".into(), unit(r));
    w.move_mount(P, "@t", "/c/l", MOVE_MOUNT_F_EMPTY_PATH);
    w.move_mount(
        P,
        "@t",
        "/c/l",
        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS,
    );
    w.move_mount(P, "@tx", "/c/d", MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    // Another namespace's copy.
    w.open_tree(P, "/a", OPEN_TREE_CLONE, "late");
    w.fork(P, Q);
    w.unshare(Q, CLONE_NEWNS);
    w.open_tree(Q, "@late", AT_EMPTY_PATH | OPEN_TREE_CLONE, "qc");
    w.move_mount(Q, "@late", "/c/e", MOVE_MOUNT_F_EMPTY_PATH);
    w.open_tree(Q, "@plain", AT_EMPTY_PATH | OPEN_TREE_CLONE, "qc");
    w.info();
}

/// fsopen, fsconfig and fsmount: a tmpfs configured (root mode and
/// owner, instance flags, source), made, mounted detached, attached,
/// reconfigured writable; every refusal in Linux's order; a configuration
/// and a mount dropped unused.
fn fs_configs<T: ProcessApi>(w: &mut World<T>) {
    const SET_FLAG: u32 = FSCONFIG_SET_FLAG;
    const SET_STRING: u32 = FSCONFIG_SET_STRING;
    w.fsopen(P, "tmpfs", 0, "fc");
    w.fsopen(P, "nosuchfs", 0, "bad");
    w.fsopen(P, "tmpfs", 0x2, "bad");
    w.fsopen(U, "tmpfs", 0, "bad");
    // The arguments each command takes, then the descriptor.
    w.fsconfig(P, "fc", SET_FLAG, Some("ro"), Some("x"), 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("ro"), None, 1);
    w.fsconfig(P, "fc", SET_STRING, Some("mode"), None, 0);
    w.fsconfig(P, "fc", SET_STRING, None, Some("1"), 0);
    w.fsconfig(P, "fc", 99, Some("ro"), None, 0);
    w.fsconfig(P, "fc", FSCONFIG_CMD_CREATE, Some("ro"), None, 0);
    w.fsconfig(P, "fc", FSCONFIG_SET_FD, Some("source"), None, -1);
    w.fsconfig(P, "fc", FSCONFIG_SET_FD, Some("source"), None, 900);
    w.fsconfig(P, "nothing", SET_FLAG, Some("ro"), None, 0);
    w.open_dir(P, "/c");
    w.fsconfig(P, "/c", SET_FLAG, Some("ro"), None, 0);
    w.fsmount(P, "/c", 0, 0, "bad");
    // Parameters: unknown ones, wrong kinds of value, bad values.
    w.fsconfig(P, "fc", SET_FLAG, Some("bogus"), None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("mode"), None, 0);
    w.fsconfig(P, "fc", SET_STRING, Some("mode"), Some("789"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("mode"), Some("0750"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("uid"), Some("1000"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("gid"), Some("0x10"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("uid"), Some("4294967295"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some("1M"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some("50%"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some("1MB"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some("0xK"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some("0x1k"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("uid"), Some("0x"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("size"), Some(""), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("nr_inodes"), Some("1k"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("nr_blocks"), Some("x"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("huge"), Some("sometimes"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("huge"), Some("never"), 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("inode64"), None, 0);
    w.fsconfig(P, "fc", SET_STRING, Some("inode64"), Some("1"), 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("source"), None, 0);
    w.fsconfig(P, "fc", SET_STRING, Some("source"), Some("src1"), 0);
    w.fsconfig(P, "fc", SET_STRING, Some("source"), Some("src2"), 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("sync"), None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("async"), None, 0);
    // Made, then mounted detached (not before, and once).
    w.fsmount(P, "fc", 0, 0, "early");
    w.fsconfig(P, "fc", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsconfig(P, "fc", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("ro"), None, 0);
    w.fsmount(P, "fc", 0x2, 0, "bad");
    w.fsmount(P, "fc", 0, 0x100000, "bad");
    w.fsmount(
        P,
        "fc",
        0,
        MOUNT_ATTR_NOATIME | MOUNT_ATTR_STRICTATIME,
        "bad",
    );
    w.fsmount(U, "fc", 0, 0, "bad");
    w.fsmount(
        P,
        "fc",
        0,
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOATIME | MOUNT_ATTR_NODEV,
        "m",
    );
    w.fsmount(P, "fc", 0, 0, "again");
    w.peek(P, "m");
    w.owner(P, "@m");
    w.move_mount(P, "@m", "/c", MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    w.mkdir(P, "/c/x");
    // Reconfigured writable: only what is named changes.
    w.fsconfig(P, "fc", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("rw"), None, 0);
    w.fsconfig(P, "fc", SET_FLAG, Some("noswap"), None, 0);
    w.fsconfig(P, "fc", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsconfig(P, "fc", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.info();
    w.mkdir(P, "/c/x");
    w.fsconfig(P, "fc", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.fsconfig(P, "fc", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.close_dir(P, "fc");
    w.info();
    // fspick: the instance behind a mount's root, reconfigured.
    w.fspick(P, "/c/x", 0, "bad");
    w.fspick(P, "/c", 0x10, "bad");
    w.fspick(U, "/c", 0, "bad");
    w.fspick(P, "/c", FSPICK_CLOEXEC, "pick");
    w.fsconfig(P, "pick", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "pick", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "pick", 0, 0, "bad");
    w.fsconfig(P, "pick", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.info();
    w.mkdir(P, "/c/y");
    w.open_dir(P, "/c/x");
    w.fspick(P, "@/c/x", FSPICK_EMPTY_PATH, "bad");
    w.open_tree(P, "/c", 0, "cfd");
    w.fspick(P, "@cfd", FSPICK_EMPTY_PATH, "pick2");
    w.fsconfig(P, "pick2", SET_FLAG, Some("rw"), None, 0);
    w.fsconfig(P, "pick2", FSCONFIG_CMD_RECONFIGURE, None, None, 0);
    w.mkdir(P, "/c/y");
    w.close_dir(P, "pick");
    w.close_dir(P, "pick2");
    w.info();
    // Dropped unused: a configuration, a made instance, a detached mount.
    w.fsopen(P, "tmpfs", FSOPEN_CLOEXEC, "unused");
    w.close_dir(P, "unused");
    w.fsopen(P, "tmpfs", 0, "made");
    w.fsconfig(P, "made", FSCONFIG_CMD_CREATE_EXCL, None, None, 0);
    w.close_dir(P, "made");
    w.fsopen(P, "tmpfs", 0, "f2");
    w.fsconfig(P, "f2", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "f2", FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY, "m2");
    w.close_dir(P, "f2");
    w.peek(P, "m2");
    w.move_mount(P, "@m2", "/b", MOVE_MOUNT_F_EMPTY_PATH);
    w.mkdir(P, "/b/d");
    w.info();
    w.close_dir(P, "m2");
    w.info();
}

/// move_mount(MOVE_MOUNT_SET_GROUP): a private mount joins another's
/// peer group or gets its master (do_set_group), with every refusal.
fn set_groups<T: ProcessApi>(w: &mut World<T>) {
    const SET_GROUP: u32 = MOVE_MOUNT_SET_GROUP;
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.mkdir(P, "/a/x/q");
    w.mkdir(P, "/a/z");
    w.mount(P, "none", "/a", "", MS_SHARED);
    w.bind(P, "/a/x", "/b");
    w.mount(P, "none", "/b", "", MS_PRIVATE);
    w.info();
    // Refused: not roots, from private, to shared, roots not nested,
    // another instance; BENEATH with SET_GROUP.
    w.move_mount(P, "/a/z", "/b", SET_GROUP);
    w.move_mount(P, "/a", "/b/q", SET_GROUP);
    w.move_mount(P, "/b", "/a", SET_GROUP);
    w.move_mount(P, "/a", "/a", SET_GROUP);
    w.move_mount(P, "/a", "/b", MOVE_MOUNT_BENEATH | SET_GROUP);
    w.tmpfs(P, "/c");
    w.move_mount(P, "/a", "/c", SET_GROUP);
    w.umount(P, "/c", 0);
    // /b joins /a's group: a mount under /a/x now reaches /b.
    w.move_mount(P, "/a", "/b", SET_GROUP);
    w.info();
    w.tmpfs(P, "/a/x/q");
    w.info();
    w.move_mount(P, "/a", "/b", SET_GROUP);
    // /b's root is beneath /a's, not the other way.
    w.bind(P, "/a", "/s");
    w.mount(P, "none", "/s", "", MS_PRIVATE);
    w.move_mount(P, "/b", "/s", SET_GROUP);
    // From a slave that is not shared: the master only.
    w.bind(P, "/a", "/c");
    w.mount(P, "none", "/c", "", MS_SLAVE);
    w.umount(P, "/s", 0);
    w.bind(P, "/a/x", "/s");
    w.mount(P, "none", "/s", "", MS_PRIVATE);
    w.move_mount(P, "/c", "/s", SET_GROUP);
    w.info();
    w.tmpfs(P, "/a/z");
    w.info();
    w.move_mount(U, "/a", "/s", SET_GROUP);
}

#[test]
fn move_mount_set_group_matches_the_kernel() {
    compare("set_groups", set_groups, set_groups);
}

/// move_mount(MOVE_MOUNT_BENEATH): a mount goes under the top of a
/// stack, which moves onto it (an umount of the top shows it), with
/// can_move_mount_beneath's refusals, a detached tree put beneath, the
/// top found from a descriptor of a mount covered since, and a move
/// beneath on a shared mount propagating (the copy tucked beneath the
/// peer's copy of the top).
fn beneath<T: ProcessApi>(w: &mut World<T>) {
    const BENEATH: u32 = MOVE_MOUNT_BENEATH;
    w.tmpfs(P, "/a");
    w.mkdir(P, "/a/x");
    w.tmpfs(P, "/b");
    w.mkdir(P, "/b/y");
    w.info();
    // Refused: not a mount's root; beneath itself; a user; a file.
    w.move_mount(P, "/b", "/a/x", BENEATH);
    w.move_mount(P, "/b", "/b", BENEATH);
    w.move_mount(U, "/b", "/a", BENEATH);
    w.move_mount(P, "/b/y", "/a", BENEATH);
    // /b goes beneath /a: /a still shows its own tmpfs, /b is empty.
    w.move_mount(P, "/b", "/a", BENEATH);
    w.info();
    w.umount(P, "/a", 0);
    w.info();
    // Something on the moved mount's root: refused.
    w.tmpfs(P, "/c");
    w.open_dir(P, "/c");
    w.tmpfs(P, "/c");
    w.tmpfs(P, "/s");
    w.move_mount(P, "@/c", "/s", BENEATH | MOVE_MOUNT_F_EMPTY_PATH);
    w.umount(P, "/c", 0);
    w.close_dir(P, "/c");
    // The target named by a descriptor of a mount covered since: the top
    // of its stack is what the mount goes beneath.
    w.open_dir(P, "/s");
    w.tmpfs(P, "/s");
    w.move_mount(P, "/c", "@/s", BENEATH | MOVE_MOUNT_T_EMPTY_PATH);
    w.info();
    w.close_dir(P, "/s");
    w.umount(P, "/s", 0);
    w.umount(P, "/s", 0);
    w.umount(P, "/s", 0);
    // The moved mount's parent is the place's mount: ELOOP.
    w.tmpfs(P, "/a/y");
    w.move_mount(P, "/a", "/a/y", BENEATH);
    w.umount(P, "/a/y", 0);
    // A detached tree goes beneath.
    w.open_tree(P, "/a", OPEN_TREE_CLONE, "t");
    w.tmpfs(P, "/c");
    w.move_mount(P, "@t", "/c", BENEATH | MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    w.umount(P, "/c", 0);
    w.info();
    w.umount(P, "/c", 0);
    // On a shared mount: beneath a mount whose root is the place (a bind
    // of the shared mount onto itself, its peer) is refused; beneath a
    // mount on a subdirectory the copy goes beneath the peer's copy.
    w.mount(P, "none", "/a", "", MS_SHARED);
    w.bind(P, "/a", "/s");
    w.bind(P, "/a", "/a");
    w.tmpfs(P, "/c");
    w.move_mount(P, "/c", "/a", BENEATH);
    w.umount(P, "/a", 0);
    w.tmpfs(P, "/a/y");
    w.info();
    w.move_mount(P, "/c", "/a/y", BENEATH);
    w.info();
    w.umount(P, "/a/y", MNT_DETACH);
    w.info();
    w.umount(P, "/a/y", 0);
    w.info();
}

#[test]
fn move_mount_beneath_matches_the_kernel() {
    compare("beneath", beneath, beneath);
}

/// fsconfig's messages (fc_log: what each parameter's error logs, eight
/// kept, one per read, EMSGSIZE, readv's segments) and reconfiguration's
/// rules (the flags ever named, dirsync, tmpfs's limits and noswap, a
/// failed reconfiguration changing nothing).
fn fs_config_messages<T: ProcessApi>(w: &mut World<T>) {
    const SET_FLAG: u32 = FSCONFIG_SET_FLAG;
    const SET_STRING: u32 = FSCONFIG_SET_STRING;
    const RECONF: u32 = FSCONFIG_CMD_RECONFIGURE;
    w.fsopen(P, "tmpfs", 0, "fc");
    w.messages(P, "fc", &[4096]);
    let params: [(u32, &str, Option<&str>, i32); 28] = [
        (SET_FLAG, "bogus", None, 0),
        (SET_STRING, "bogus", Some("x"), 0),
        (SET_FLAG, "mode", None, 0),
        (SET_STRING, "mode", Some("9"), 0),
        (FSCONFIG_SET_BINARY, "mode", Some("0755"), 4),
        (SET_STRING, "uid", Some("x"), 0),
        (SET_FLAG, "gid", None, 0),
        (SET_STRING, "uid", Some("0xffffffff"), 0),
        (SET_STRING, "gid", Some("4294967295"), 0),
        (SET_STRING, "gid", Some("4294967296"), 0),
        (SET_STRING, "size", Some("1x"), 0),
        (SET_FLAG, "nr_blocks", None, 0),
        (SET_STRING, "nr_inodes", Some("zz"), 0),
        (SET_STRING, "huge", Some("zz"), 0),
        (SET_STRING, "mpol", Some("zz"), 0),
        (SET_STRING, "noswap", Some("1"), 0),
        (FSCONFIG_SET_BINARY, "inode32", Some("1"), 1),
        (SET_FLAG, "casefold", None, 0),
        (SET_STRING, "casefold", Some("utf8"), 0),
        (FSCONFIG_SET_BINARY, "casefold", Some("utf8"), 4),
        (SET_FLAG, "strict_encoding", None, 0),
        (SET_STRING, "strict_encoding", Some("1"), 0),
        (SET_FLAG, "quota", None, 0),
        (SET_FLAG, "source", None, 0),
        (SET_STRING, "source", Some("s1"), 0),
        (SET_STRING, "source", Some("s2"), 0),
        (FSCONFIG_SET_BINARY, "ro", Some("x"), 1),
        (SET_STRING, "dirsync", Some("x"), 0),
    ];
    for (cmd, key, value, aux) in params {
        w.fsconfig(P, "fc", cmd, Some(key), value, aux);
    }
    // Eight kept, the oldest dropped; one per read, EMSGSIZE for a buffer
    // it does not fit (a read of 0 included), the message kept.
    for k in 0..10 {
        w.fsconfig_kept(P, "fc", (SET_FLAG, Some(&format!("bogus{k}")), None, 0));
    }
    w.messages(P, "fc", &[10]);
    w.messages(P, "fc", &[0]);
    w.messages(P, "fc", &[4096]);
    // readv: each segment a read; one filled exactly goes on to the next.
    let exact = "e tmpfs: Unknown parameter 'aa'\n".len();
    for key in ["aa", "bb", "cc", "dd"] {
        w.fsconfig_kept(P, "fc", (SET_FLAG, Some(key), None, 0));
    }
    w.messages(P, "fc", &[exact, exact, 5]);
    w.messages(P, "fc", &[0, 4096]);
    w.messages(P, "fc", &[0, 0]);
    w.messages(P, "fc", &[4096, 4096]);
    w.close_dir(P, "fc");
    // A flag once named is set again by every reconfiguration: clear
    // unless named again.
    w.fsopen(P, "tmpfs", 0, "r");
    w.fsconfig(P, "r", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "r", SET_FLAG, Some("sync"), None, 0);
    w.fsconfig(P, "r", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "r", 0, 0, "rm");
    w.move_mount(P, "@rm", "/c", MOVE_MOUNT_F_EMPTY_PATH);
    w.info();
    w.fsconfig(P, "r", RECONF, None, None, 0);
    w.info();
    w.mkdir(P, "/c/x");
    w.fsconfig(P, "r", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "r", RECONF, None, None, 0);
    w.info();
    w.fsconfig(P, "r", SET_FLAG, Some("dirsync"), None, 0);
    w.fsconfig(P, "r", RECONF, None, None, 0);
    w.fsconfig(P, "r", RECONF, None, None, 0);
    w.info();
    w.close_dir(P, "r");
    w.fsopen(P, "tmpfs", 0, "d");
    w.fsconfig(P, "d", SET_FLAG, Some("dirsync"), None, 0);
    w.fsconfig(P, "d", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "d", 0, 0, "dm");
    w.fsconfig(P, "d", RECONF, None, None, 0);
    w.close_dir(P, "d");
    // tmpfs: no limit set on an instance made without one; noswap only
    // on one made with it; a failed reconfiguration changes nothing.
    for (label, made, given, twice) in [
        ("l1", ("size", "0"), ("size", "1M"), false),
        ("l2", ("nr_blocks", "0"), ("size", "0%"), true),
        ("l3", ("nr_inodes", "0"), ("nr_inodes", "5"), false),
        ("l4", ("size", "1M"), ("size", "0"), true),
        ("l5", ("size", "0"), ("nr_blocks", "0"), false),
    ] {
        w.fsopen(P, "tmpfs", 0, label);
        w.fsconfig(P, label, SET_STRING, Some(made.0), Some(made.1), 0);
        w.fsconfig(P, label, FSCONFIG_CMD_CREATE, None, None, 0);
        w.fsmount(P, label, 0, 0, "lm");
        w.fsconfig(P, label, SET_STRING, Some(given.0), Some(given.1), 0);
        w.fsconfig(P, label, RECONF, None, None, 0);
        if twice {
            w.fsconfig(P, label, SET_STRING, Some("nr_blocks"), Some("10"), 0);
            w.fsconfig(P, label, RECONF, None, None, 0);
        }
        w.close_dir(P, label);
        w.close_dir(P, "lm");
    }
    w.fsopen(P, "tmpfs", 0, "n");
    w.fsconfig(P, "n", SET_FLAG, Some("noswap"), None, 0);
    w.fsconfig(P, "n", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "n", 0, 0, "nm");
    w.fsconfig(P, "n", RECONF, None, None, 0);
    w.fsconfig(P, "n", SET_FLAG, Some("noswap"), None, 0);
    w.fsconfig(P, "n", RECONF, None, None, 0);
    w.close_dir(P, "n");
    w.close_dir(P, "nm");
    w.fsopen(P, "tmpfs", 0, "o");
    w.fsconfig(P, "o", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "o", 0, 0, "om");
    w.move_mount(P, "@om", "/b", MOVE_MOUNT_F_EMPTY_PATH);
    w.fsconfig(P, "o", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "o", SET_FLAG, Some("noswap"), None, 0);
    w.fsconfig(P, "o", RECONF, None, None, 0);
    w.info();
    w.mkdir(P, "/b/x");
    w.fsconfig(P, "o", SET_FLAG, Some("rw"), None, 0);
    w.close_dir(P, "o");
    // tmpfs's limits: applied at the create, refused below what is in
    // use, lifted by 0 (statfs then shows none).
    w.fsopen(P, "tmpfs", 0, "s");
    w.fsconfig(P, "s", SET_STRING, Some("size"), Some("16k"), 0);
    w.fsconfig(P, "s", SET_STRING, Some("nr_inodes"), Some("4"), 0);
    w.fsconfig(P, "s", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "s", 0, 0, "sm");
    w.move_mount(P, "@sm", "/a", MOVE_MOUNT_F_EMPTY_PATH);
    w.space(P, "/a");
    w.fill(P, "/a/f1", 10_000);
    w.fill(P, "/a/f2", 10_000);
    w.fill(P, "/a/f3", 10);
    w.space(P, "/a");
    w.mkdir(P, "/a/d1");
    w.mkdir(P, "/a/d2");
    w.space(P, "/a");
    for (key, value) in [
        ("size", "4k"),
        ("nr_inodes", "2"),
        ("size", "1M"),
        ("nr_inodes", "100"),
        ("nr_blocks", "0"),
        ("nr_inodes", "0"),
        ("size", "1M"),
    ] {
        w.fsconfig(P, "s", SET_STRING, Some(key), Some(value), 0);
        w.fsconfig(P, "s", RECONF, None, None, 0);
        w.space(P, "/a");
        if w.held_fd(P, "s").is_some() {
            // A failed reconfiguration ends the configuration: a fresh one.
            w.close_dir(P, "s");
            w.fspick(P, "/a", 0, "s");
        }
    }
    w.fill(P, "/a/f4", 100_000);
    w.mkdir(P, "/a/d3");
    w.space(P, "/a");
    w.close_dir(P, "s");
    w.fsopen(P, "tmpfs", 0, "pct");
    w.fsconfig(P, "pct", SET_STRING, Some("size"), Some("10%"), 0);
    // (The default inode limit is the Vfs's, not half the host's pages.)
    w.fsconfig(P, "pct", SET_STRING, Some("nr_inodes"), Some("1k"), 0);
    w.fsconfig(P, "pct", FSCONFIG_CMD_CREATE, None, None, 0);
    w.fsmount(P, "pct", 0, 0, "pm");
    w.move_mount(P, "@pm", "/a/d3", MOVE_MOUNT_F_EMPTY_PATH);
    w.space(P, "/a/d3");
    w.close_dir(P, "pct");
    // mount(2)'s options: the same parameters for a new instance, the
    // same reconfiguration for a remount (the options read up to a NUL;
    // tmpfs splits only at a comma before a non-digit).
    for data in [
        "size=16k,mode=700,uid=5,gid=6,nr_inodes=9",
        "size=16k,bogus",
        "size",
        ",,size=8k,,=x,",
        "ro,nr_inodes=0",
        "size=1k,5",
        "source=y",
        "mode=\"700\"",
        "mode=",
        "size=8k\0bogus",
    ] {
        w.mount_opts(P, ("none", "/c/x", "tmpfs", 0), Some(data));
        w.space(P, "/c/x");
        w.owner(P, "/c/x");
        w.umount(P, "/c/x", 0);
    }
    w.mount_opts(
        P,
        ("none", "/c/x", "tmpfs", 0),
        Some("size=16k,nr_inodes=9"),
    );
    w.mount_opts(P, ("none", "/b/x", "tmpfs", 0), Some("nr_inodes=0,sync"));
    for (target, flags, data) in [
        ("/c/x", MS_REMOUNT, "size=1M"),
        ("/b/x", MS_REMOUNT, "nr_inodes=5"),
        ("/c/x", MS_REMOUNT, "ro"),
        ("/c/x", MS_REMOUNT, "size=2M"),
        ("/c/x", MS_REMOUNT, "mode=755,uid=9"),
        ("/c/x", MS_REMOUNT, "bogus"),
        ("/c/x", MS_REMOUNT, "dirsync"),
        ("/c/x", MS_REMOUNT, "size=4k"),
        ("/b/x", MS_REMOUNT | MS_RDONLY, "noswap"),
        ("/c/x", MS_REMOUNT | MS_BIND, "bogus"),
    ] {
        w.mount_opts(P, ("none", target, "tmpfs", flags), Some(data));
        w.space(P, target);
        w.owner(P, target);
    }
    w.fill(P, "/c/x/f", 3_000_000);
    w.mount_opts(P, ("/c/x", "/b/x", "", MS_BIND), Some("bogus"));
    w.info();
    w.umount(P, "/b/x", 0);
    w.umount(P, "/b/x", 0);
    w.umount(P, "/c/x", 0);
    // fspick's configuration names no flag: a bare reconfiguration
    // changes nothing.
    w.fspick(P, "/b", 0, "pick");
    w.fsconfig(P, "pick", RECONF, None, None, 0);
    w.fsconfig(P, "pick", SET_FLAG, Some("ro"), None, 0);
    w.fsconfig(P, "pick", RECONF, None, None, 0);
    w.fsconfig(P, "pick", RECONF, None, None, 0);
    w.info();
    w.close_dir(P, "pick");
}

#[test]
fn fsconfig_messages_and_reconfiguration_match_the_kernel() {
    compare("fs_config_messages", fs_config_messages, fs_config_messages);
}

#[test]
fn fsopen_fsconfig_fsmount_match_the_kernel() {
    compare("fs_configs", fs_configs, fs_configs);
}

#[test]
fn open_tree_and_move_mount_match_the_kernel() {
    compare("detached_trees", detached_trees, detached_trees);
}

// ---- random sequences ----

/// The paths of the random sequences, relative to a case's directory.
const PATHS: [&str; 9] = [
    "/a", "/a/x", "/a/x/y", "/a/y", "/b", "/b/x", "/b/x/y", "/c", "/c/x",
];
const CASE_TOPS: [&str; 3] = ["a", "b", "c"];

/// How many processes a random sequence has at most (slots p, q, r).
const CASE_SLOTS: usize = 3;

/// A propagation type by its index.
const TYPES: [u64; 4] = [MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE];

/// A step of a random sequence; `usize`s pick a live process (modulo how
/// many there are when the step runs).
#[derive(Clone, Debug)]
enum Step {
    /// A child in the first free slot.
    Fork(usize),
    Unshare(usize),
    /// The second moves into the first's namespace.
    Setns(usize, usize),
    /// Unless it is the last.
    Exit(usize),
    Mkdir(usize, &'static str),
    Tmpfs(usize, &'static str),
    /// Source, target, MS_REC.
    Bind(usize, &'static str, &'static str, bool),
    Move(usize, &'static str, &'static str),
    /// Path, type index, MS_REC.
    Type(usize, &'static str, usize, bool),
    /// Path, MNT_DETACH.
    Umount(usize, &'static str, bool),
    /// A path, or the case's directory.
    Chdir(usize, Option<&'static str>),
    /// A directory descriptor kept (a child inherits it; after an unshare
    /// it names a mount of another namespace).
    Open(usize, &'static str),
    /// To the n-th descriptor the process holds (modulo how many).
    Fchdir(usize, usize),
    Close(usize, usize),
    /// new_root, put_old (by a process in a namespace of the sequence's
    /// own; skipped otherwise).
    Pivot(usize, &'static str, &'static str),
    /// mount_setattr: path, `SETATTRS` index, AT_RECURSIVE.
    Setattr(usize, &'static str, usize, bool),
    /// chroot (its root then need not be a mount's: pivot_root's EINVAL).
    Chroot(usize, &'static str),
    /// open_tree(OPEN_TREE_CLONE) of a path (AT_RECURSIVE or not); the
    /// descriptor is kept as those of `Open` are.
    OpenTree(usize, &'static str, bool),
    /// move_mount of the n-th descriptor (modulo how many) onto a path.
    Attach(usize, usize, &'static str),
    /// A new tmpfs by fsopen, fsconfig and fsmount (read-only with the
    /// flag), attached on a path by move_mount.
    Fsmount(usize, &'static str, bool),
    /// move_mount(MOVE_MOUNT_SET_GROUP) from the first path to the second.
    SetGroup(usize, &'static str, &'static str),
    /// move_mount(MOVE_MOUNT_BENEATH) from the first path to the second.
    Beneath(usize, &'static str, &'static str),
}

/// The random sequences' mount_setattr changes: read-only and back, other
/// flags, an atime mode, propagation.
const SETATTRS: [MountAttr; 6] = [
    MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    },
    MountAttr {
        attr_set: 0,
        attr_clr: MOUNT_ATTR_RDONLY,
        propagation: 0,
        userns_fd: 0,
    },
    MountAttr {
        attr_set: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
        attr_clr: MOUNT_ATTR_NODEV,
        propagation: 0,
        userns_fd: 0,
    },
    MountAttr {
        attr_set: MOUNT_ATTR_NOATIME,
        attr_clr: MOUNT_ATTR__ATIME,
        propagation: 0,
        userns_fd: 0,
    },
    MountAttr {
        attr_set: 0,
        attr_clr: 0,
        propagation: MS_SHARED,
        userns_fd: 0,
    },
    MountAttr {
        attr_set: MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: MS_PRIVATE,
        userns_fd: 0,
    },
];

fn random_steps(rnd: &mut dyn FnMut(u64) -> u64, n: usize) -> Vec<Step> {
    // Now and then the cwd (`.`), which an fchdir may have put in
    // another namespace's mount.
    let path = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(12) {
        0 => ".",
        _ => PATHS[rnd(PATHS.len() as u64) as usize],
    };
    // Types more often where a mount root is likely.
    let root = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(12) {
        0..=7 => PATHS[[0, 4, 7][rnd(3) as usize]],
        8 => ".",
        _ => PATHS[rnd(PATHS.len() as u64) as usize],
    };
    (0..n)
        .map(|_| {
            let who = rnd(6) as usize;
            match rnd(39) {
                38 => Step::Beneath(who, root(rnd), root(rnd)),
                37 => Step::SetGroup(who, root(rnd), root(rnd)),
                36 => Step::Fsmount(who, path(rnd), rnd(3) == 0),
                35 => Step::OpenTree(who, root(rnd), rnd(2) == 0),
                34 => Step::Attach(who, rnd(4) as usize, path(rnd)),
                33 => Step::Chroot(who, root(rnd)),
                31 | 32 => Step::Setattr(
                    who,
                    root(rnd),
                    rnd(SETATTRS.len() as u64) as usize,
                    rnd(2) == 0,
                ),
                29 | 30 => {
                    // put_old mostly beneath new_root.
                    let new = root(rnd);
                    let old = match (rnd(3), new) {
                        (0, _) | (_, ".") => path(rnd),
                        _ => PATHS
                            .iter()
                            .copied()
                            .filter(|p| p.starts_with(new))
                            .nth(rnd(3) as usize)
                            .unwrap_or(new),
                    };
                    Step::Pivot(who, new, old)
                }
                26 => Step::Open(who, root(rnd)),
                27 => Step::Fchdir(who, rnd(4) as usize),
                28 => Step::Close(who, rnd(4) as usize),
                0..=2 => Step::Fork(who),
                3..=5 => Step::Unshare(who),
                6 => Step::Setns(who, rnd(6) as usize),
                7 => Step::Exit(who),
                8 => Step::Mkdir(who, path(rnd)),
                9..=12 => Step::Tmpfs(who, root(rnd)),
                13..=15 => Step::Bind(who, path(rnd), path(rnd), rnd(2) == 0),
                16 => Step::Move(who, root(rnd), path(rnd)),
                // MS_SHARED the most often: it makes the peers.
                17..=20 => {
                    let ty = [0, 0, 0, 1, 1, 2, 3][rnd(7) as usize];
                    Step::Type(who, root(rnd), ty, rnd(3) == 0)
                }
                21..=23 => Step::Umount(who, path(rnd), rnd(3) == 0),
                24 => Step::Chdir(who, Some(path(rnd))),
                _ => Step::Chdir(who, None),
            }
        })
        .collect()
}

/// The process pick of a step.
fn step_who(step: &Step) -> usize {
    match *step {
        Step::Fork(k)
        | Step::Unshare(k)
        | Step::Setns(k, _)
        | Step::Exit(k)
        | Step::Mkdir(k, _)
        | Step::Tmpfs(k, _)
        | Step::Bind(k, _, _, _)
        | Step::Move(k, _, _)
        | Step::Type(k, _, _, _)
        | Step::Umount(k, _, _)
        | Step::Chdir(k, _)
        | Step::Open(k, _)
        | Step::Fchdir(k, _)
        | Step::Close(k, _)
        | Step::Pivot(k, _, _)
        | Step::Setattr(k, _, _, _)
        | Step::Chroot(k, _)
        | Step::OpenTree(k, _, _)
        | Step::Attach(k, _, _)
        | Step::Fsmount(k, _, _)
        | Step::SetGroup(k, _, _)
        | Step::Beneath(k, _, _) => k,
    }
}

/// Whether a step is a mount call with `.` for a path.
fn step_names_dot(step: &Step) -> bool {
    match *step {
        Step::Tmpfs(_, t)
        | Step::Type(_, t, _, _)
        | Step::Umount(_, t, _)
        | Step::Setattr(_, t, _, _)
        | Step::Chroot(_, t)
        | Step::OpenTree(_, t, _)
        | Step::Attach(_, _, t)
        | Step::Fsmount(_, t, _) => t == ".",
        Step::Bind(_, s, t, _)
        | Step::Move(_, s, t)
        | Step::Pivot(_, s, t)
        | Step::SetGroup(_, s, t)
        | Step::Beneath(_, s, t) => s == "." || t == ".",
        _ => false,
    }
}

fn run_case<T: ProcessApi>(root: &T, case: usize, steps: &[Step], log: &mut Log) {
    let base = format!("/r{case}");
    let made: SysResult<()> = (|| {
        root.mkdir(base.as_bytes(), 0o755)?;
        for d in PATHS {
            root.mkdir(format!("{base}{d}").as_bytes(), 0o755)?;
        }
        Ok(())
    })();
    let mut w = World::new(root, None, &base, &CASE_TOPS);
    w.populate = true;
    w.step(P, format!("case {case} setup"), unit(made));
    for (n, step) in steps.iter().enumerate() {
        let live = w.live();
        let pick = |k: usize| live[k % live.len()];
        // A mount call on `.` while the cwd is the root directory is left
        // out: the kernel's root is the harness's tmpfs, pivoted onto the
        // host's root (a mount with a parent, the rootfs, where vfscale's
        // root mount is its namespace's first), so moving it is ELOOP
        // there and EINVAL here and MNT_DETACH takes the kernel's whole
        // tree away; a plain umount of one's root remounts it read-only on
        // both sides, which leaves every later case EROFS.
        // The same for a chrooted process, whose cwd may be the harness's
        // root directory while its root is elsewhere.
        let who = pick(step_who(step));
        if step_names_dot(step) && (w.chrooted[who] || w.cwd_is_root_dir(who)) {
            continue;
        }
        match *step {
            Step::Fork(k) => {
                if let Some(child) = (0..CASE_SLOTS).find(|&s| w.procs[s].is_none()) {
                    w.fork(pick(k), child);
                }
            }
            Step::Unshare(k) => w.unshare(pick(k), CLONE_NEWNS),
            Step::Setns(k, j) => {
                let (i, o) = (pick(k), pick(j));
                if i != o {
                    w.setns(i, o);
                } else if live.len() > 1 {
                    w.setns(i, pick(j + 1));
                }
            }
            Step::Exit(k) => {
                if live.len() > 1 {
                    w.exit(pick(k));
                }
            }
            Step::Mkdir(k, d) => w.mkdir(pick(k), d),
            Step::Tmpfs(k, t) => w.tmpfs(pick(k), t),
            Step::Bind(k, s, t, rec) => {
                if rec {
                    w.rbind(pick(k), s, t)
                } else {
                    w.bind(pick(k), s, t)
                }
            }
            Step::Move(k, s, t) => w.mv(pick(k), s, t),
            Step::Type(k, t, i, rec) => w.ty(pick(k), t, TYPES[i] | if rec { MS_REC } else { 0 }),
            Step::Umount(k, t, detach) => w.umount(pick(k), t, if detach { MNT_DETACH } else { 0 }),
            Step::Chdir(k, d) => w.chdir(pick(k), d.unwrap_or("/")),
            Step::Open(k, d) => w.open_dir(pick(k), d),
            Step::Fchdir(k, j) => {
                if let Some(label) = w.nth_fd(pick(k), j) {
                    w.fchdir(pick(k), &label);
                }
            }
            Step::Close(k, j) => {
                if let Some(label) = w.nth_fd(pick(k), j) {
                    w.close_dir(pick(k), &label);
                }
            }
            Step::Pivot(k, new, old) => {
                if w.own_ns[pick(k)] {
                    w.pivot_root(pick(k), new, old);
                }
            }
            Step::Chroot(k, t) => w.chroot(pick(k), t),
            Step::SetGroup(k, s, t) => w.move_mount(pick(k), s, t, MOVE_MOUNT_SET_GROUP),
            Step::Beneath(k, s, t) => w.move_mount(pick(k), s, t, MOVE_MOUNT_BENEATH),
            Step::Setattr(k, t, i, rec) => {
                w.setattr(pick(k), t, if rec { AT_RECURSIVE } else { 0 }, SETATTRS[i])
            }
            Step::OpenTree(k, t, rec) => {
                let rec = if rec { AT_RECURSIVE } else { 0 };
                w.open_tree(pick(k), t, OPEN_TREE_CLONE | rec, t)
            }
            // Not from a descriptor of the root directory, for the reason
            // above (the kernel's root mount has a parent: ELOOP there,
            // EINVAL here).
            Step::Fsmount(_, t, ro) => {
                w.fsopen(who, "tmpfs", 0, "fc");
                if ro {
                    w.fsconfig(who, "fc", FSCONFIG_SET_FLAG, Some("ro"), None, 0);
                }
                w.fsconfig(who, "fc", FSCONFIG_CMD_CREATE, None, None, 0);
                w.fsmount(who, "fc", 0, 0, "fsm");
                w.close_dir(who, "fc");
                w.move_mount(who, "@fsm", t, MOVE_MOUNT_F_EMPTY_PATH);
                w.close_dir(who, "fsm");
            }
            Step::Attach(_, j, t) => {
                if let Some(label) = w.nth_fd(who, j) {
                    if !w.chrooted[who] && !w.is_root_dir(who, w.fd(who, &label)) {
                        w.move_mount(who, &format!("@{label}"), t, MOVE_MOUNT_F_EMPTY_PATH);
                    }
                }
            }
        }
        if n % 5 == 4 {
            w.info();
        }
    }
    w.info();
    log.extend(w.finish());
    // The case's mounts in the first namespace go (unlogged), so that the
    // next cases do not list them and the mount count stays small: the
    // deepest paths first and the case's directory last (`.` may have
    // been it), until none is left.
    for _ in 0..64 {
        let mut any = false;
        for d in PATHS.iter().rev().chain(&[""]) {
            any |= root
                .umount2(format!("{base}{d}").as_bytes(), MNT_DETACH)
                .is_ok();
        }
        if !any {
            break;
        }
    }
}

/// Random sequences over up to three processes of fork, unshare, setns,
/// exit, mkdir, tmpfs mounts, binds, rbinds, moves, type changes, umounts,
/// chdirs and directory descriptors (open, fchdir, close), compared with the kernel step by step (`VFSCALE_NS_CASES`,
/// default 40, of 30 steps; `VFSCALE_SEED` replays; `VFSCALE_NS_ONLY=N`
/// runs case N alone).
#[test]
fn random_sequences_match_the_kernel() {
    let sequences = seeded_cases("VFSCALE_NS_CASES", 40, "VFSCALE_NS_ONLY", |rnd| {
        random_steps(rnd, 30)
    });
    let theirs = sequences.clone();
    compare_with_kernel_reclaimed(
        "namespaces (random)",
        move |k| {
            let mut log = Log::new();
            for (case, steps) in &theirs {
                run_case(k, *case, steps, &mut log);
            }
            show_kernel_log("random", log)
        },
        move |p| {
            let mut log = Log::new();
            for (case, steps) in &sequences {
                run_case(p, *case, steps, &mut log);
            }
            log
        },
    );
}

/// The normalization on a listing of the kernel's shape.
#[test]
fn mountinfo_normalization() {
    let text = b"\
100 90 0:40 / / rw,relatime - tmpfs vfscale-kdiff rw,mode=755,inode64
101 100 0:41 / /a rw,relatime shared:7 - tmpfs m1 rw,inode64
102 100 0:41 / /b rw,relatime shared:7 - tmpfs m1 rw,inode64
103 102 0:42 / /b rw,relatime master:7 propagate_from:3 - tmpfs m2 ro
104 100 0:40 /s /c rw,relatime master:9 unbindable - tmpfs vfscale-kdiff rw
105 101 0:43 / /a/x rw,relatime - tmpfs m3 rw
106 103 0:43 / /a/x rw,relatime - tmpfs m3 rw
";
    assert_eq!(root_source(text).as_deref(), Some("vfscale-kdiff"));
    assert_eq!(
        normalize(text, Some("vfscale-kdiff")),
        [
            "/#1 root=/ in=- rw,relatime - tmpfs (root) rw",
            "/a#1 root=/ in=/#1 rw,relatime shared:[/a#1] - tmpfs m1 rw",
            "/a/x#1 in /a#1 root=/ in=/a#1 rw,relatime - tmpfs m3 rw",
            "/a/x#1 in /b#2 root=/ in=/b#2 rw,relatime - tmpfs m3 rw",
            "/b#1 root=/ in=/#1 rw,relatime shared:[/a#1] - tmpfs m1 rw",
            "/b#2 root=/ in=/b#1 rw,relatime master:[/a#1] propagate_from:?[/b#2] - tmpfs m2 ro",
            "/c#1 root=/s in=/#1 rw,relatime master:?[/c#1] unbindable - tmpfs (root) rw",
        ]
        .join(" ; ")
    );
}
