//! /proc/self/mountinfo (Linux's show_mountinfo): one line for every mount
//! of the caller's namespace that its root reaches, in the order the
//! mounts were made.
//!
//! Each line names its mount's mountpoint from the process root. Linux's
//! d_path walks each mount's whole chain of parent mounts up to the root,
//! so a namespace whose mounts are stacked N deep (propagation can make
//! 100,000) lists in time quadratic in N. Here a mount's path is its
//! parent mount's path followed by its *segment*, the names from its
//! mountpoint up to the parent mount's root (`Names`): each segment is
//! walked once per listing, so a listing is linear in the mounts and the
//! lengths of their segments.
//!
//! Invariants:
//! - The mount table's lock is held from the first read to the last, so
//!   the tree of mounts (parents, mountpoints, roots, namespaces, peer
//!   groups) stands still.
//! - Renames may move the dentries that segments and root paths are read
//!   from. All of a listing's names are read in one pass inside the
//!   global rename seqcount, as d_path reads inside rename_lock; a pass a
//!   rename overlapped is read again once while holding
//!   `rename_seq_lock`, which stops renames from committing (Linux's
//!   read_seqbegin_or_lock), so a storm of renames cannot starve a
//!   listing. Lock order: the table's lock, then `rename_seq_lock`
//!   (docs/ARCHITECTURE.md).

use super::Process;
use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::dcache::walk::PathPtr;
use crate::mount::flags as mnt_flags;
use crate::mount::propagation::Links;
use crate::mount::Mount;
use std::collections::HashMap;
use std::io::Write;

/// Steps of a lockless pass between looks at the rename seqcount: a pass
/// a rename overlapped is abandoned early (a torn read may even see a
/// loop of parents).
const STEPS_BETWEEN_CHECKS: usize = 64;

/// The names a listing prints, read in one pass.
struct Names {
    /// Each mount of the namespace (and only those: the parents of its
    /// mounts are its own) by its mountpoint seen from the process root,
    /// "" for the root itself (printed "/"); None when the root does not
    /// reach it.
    mountpoints: HashMap<*const Mount, Option<Vec<u8>>>,
    /// Each mount's root seen from its filesystem's root (dentry_path).
    roots: HashMap<*const Mount, Vec<u8>>,
}

/// How a segment's walk from a mountpoint up through its parent mount
/// ended.
enum Segment {
    /// At the process root: the names are the whole path.
    AtRoot(Vec<Vec<u8>>),
    /// At the parent mount's root: the parent's path comes before them.
    AtParentRoot(Vec<Vec<u8>>),
    /// Off the top of a filesystem, or of the mount tree, without meeting
    /// the process root: outside it.
    Outside,
}

/// Counts a pass's steps and says when the rename seqcount it sampled
/// has moved (never, for a pass under `rename_seq_lock`).
struct Pass<'v> {
    seq: Option<(&'v crate::sync::seqcount::SeqCount, u32)>,
    steps: usize,
}

impl Pass<'_> {
    /// One more step; false once a rename overlapped the pass.
    fn step(&mut self) -> bool {
        self.steps += 1;
        !(self.steps.is_multiple_of(STEPS_BETWEEN_CHECKS)
            && self.seq.is_some_and(|(seq, at)| seq.read_retry(at)))
    }

    /// Whether the pass read nothing a rename changed.
    fn valid(&self) -> bool {
        !self.seq.is_some_and(|(seq, at)| seq.read_retry(at))
    }
}

impl Process {
    /// show_mountinfo for every mount of the namespace the root reaches,
    /// in the order they were made.
    pub(crate) fn sys_mountinfo(&self) -> SysResult<Vec<u8>> {
        let _g = self.vfs.collector.enter();
        let list = self.vfs.lock_mounts();
        let (root, _) = self.fs.get();
        // SAFETY (whole function): attached mounts are live under the
        // table lock, and so are their masters (attached too).
        let mut mounts: Vec<&Mount> = list
            .iter()
            .map(|&m| unsafe { &*(m as *const Mount) })
            .filter(|m| m.ns_id() == self.fs.ns.id)
            .collect();
        mounts.sort_by_key(|m| m.id);
        let names = self.listing_names(&mounts, root);
        let links = Links::of(&list);
        let mut out = Vec::new();
        for m in mounts {
            let key: *const Mount = m;
            let Some(mountpoint) = &names.mountpoints[&key] else {
                continue;
            };
            let parent = m.parent_ptr();
            let parent_id = if parent.is_null() {
                m.id
            } else {
                unsafe { &*parent }.id
            };
            let dev = m.sb().dev;
            let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
            let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
            // Writes to a Vec cannot fail.
            let _ = write!(out, "{} {parent_id} {major}:{minor} ", m.id);
            out.extend(escaped(&names.roots[&key]));
            out.push(b' ');
            out.extend(escaped(if mountpoint.is_empty() {
                b"/"
            } else {
                mountpoint
            }));
            out.push(b' ');
            out.extend_from_slice(mount_options(m.flags.get()).as_bytes());
            if m.is_shared() {
                let _ = write!(out, " shared:{}", m.group());
            }
            let master = m.master();
            if !master.is_null() {
                let master_group = unsafe { &*master }.group();
                let _ = write!(out, " master:{master_group}");
                let dominating = self.dominating_group(&links, &names, m);
                if dominating != 0 && dominating != master_group {
                    let _ = write!(out, " propagate_from:{dominating}");
                }
            }
            if m.is_unbindable() {
                out.extend_from_slice(b" unbindable");
            }
            let _ = write!(out, " - {} ", m.sb().fs.fs_type());
            out.extend(escaped(&m.source));
            let ro = m.sb().is_readonly();
            out.extend_from_slice(if ro { b" ro\n" } else { b" rw\n" });
        }
        Ok(out)
    }

    /// The names of `mounts` (the namespace's) seen from `root`: one
    /// lockless pass, else one under `rename_seq_lock`. Under the table
    /// lock and a guard.
    fn listing_names(&self, mounts: &[&Mount], root: PathPtr) -> Names {
        let seq = &self.vfs.rename_seq;
        let mut pass = Pass {
            seq: Some((seq, seq.read_begin())),
            steps: 0,
        };
        if let Some(names) = self.read_names(mounts, root, &mut pass) {
            if pass.valid() {
                return names;
            }
        }
        let _no_renames = self.vfs.rename_seq_lock.lock();
        let mut pass = Pass {
            seq: None,
            steps: 0,
        };
        self.read_names(mounts, root, &mut pass)
            .expect("a pass under rename_seq_lock runs to its end")
    }

    /// One pass over `mounts`' names; None once `pass` says a rename
    /// overlapped it.
    fn read_names(&self, mounts: &[&Mount], root: PathPtr, pass: &mut Pass) -> Option<Names> {
        let mut names = Names {
            mountpoints: HashMap::with_capacity(mounts.len()),
            roots: HashMap::with_capacity(mounts.len()),
        };
        for &m in mounts {
            names.roots.insert(m, dentry_path(m.root, pass)?);
            self.name_mountpoint(m, root, &mut names.mountpoints, pass)?;
        }
        Some(names)
    }

    /// Enters `m`'s mountpoint path in `known`, first those of the parent
    /// mounts it needs (walking up to the first one known, then naming
    /// them downwards: no recursion, however deep the stack).
    fn name_mountpoint(
        &self,
        m: *const Mount,
        root: PathPtr,
        known: &mut HashMap<*const Mount, Option<Vec<u8>>>,
        pass: &mut Pass,
    ) -> Option<()> {
        let mut pending: Vec<(*const Mount, Vec<Vec<u8>>)> = Vec::new();
        let mut cur = m;
        while !known.contains_key(&cur) {
            // SAFETY: attached mounts, and the parents of attached
            // mounts, are live under the table lock.
            let mr = unsafe { &*cur };
            let at = PathPtr {
                mnt: cur,
                dentry: mr.root,
            };
            if at == root {
                known.insert(cur, Some(Vec::new()));
                break;
            }
            let (parent, mountpoint) = (mr.parent_ptr(), mr.mountpoint_ptr());
            if parent.is_null() || mountpoint.is_null() {
                known.insert(cur, None);
                break;
            }
            match segment(parent, mountpoint, root, pass)? {
                Segment::AtRoot(parts) => {
                    known.insert(cur, Some(joined(b"", &parts)));
                    break;
                }
                Segment::Outside => {
                    known.insert(cur, None);
                    break;
                }
                Segment::AtParentRoot(parts) => {
                    pending.push((cur, parts));
                    cur = parent;
                }
            }
        }
        while let Some((child, parts)) = pending.pop() {
            // SAFETY: as above.
            let parent = unsafe { &*child }.parent_ptr();
            let path = known[&parent].as_ref().map(|p| joined(p, &parts));
            known.insert(child, path);
        }
        Some(())
    }

    /// get_dominating_id: the group of the nearest master up `m`'s chain
    /// with a peer in our namespace whose root our root reaches (one
    /// `names` names); 0 if none. Under the table lock.
    fn dominating_group(&self, links: &Links, names: &Names, m: &Mount) -> u64 {
        let mut master = m.master();
        while !master.is_null() {
            let found = std::iter::once(master)
                .chain(links.peers(master))
                .find(|p| names.mountpoints.get(p).is_some_and(Option::is_some));
            if let Some(p) = found {
                // SAFETY: attached mounts are live under the table lock.
                return unsafe { &*p }.group();
            }
            // SAFETY: as above.
            master = unsafe { &*master }.master();
        }
        0
    }
}

/// The walk from `mountpoint` in mount `parent` up to the process root or
/// to `parent`'s root, innermost name first (Linux's prepend_path within
/// one mount); None once `pass` says a rename overlapped it.
fn segment(
    parent: *const Mount,
    mountpoint: *const Dentry,
    root: PathPtr,
    pass: &mut Pass,
) -> Option<Segment> {
    // SAFETY: the table lock keeps `parent` live, and a guard keeps the
    // chain of dentries from its mountpoints upwards allocated.
    let parent_root = unsafe { &*parent }.root;
    let mut parts = Vec::new();
    let mut cur = mountpoint;
    loop {
        if !pass.step() {
            return None;
        }
        if (PathPtr {
            mnt: parent,
            dentry: cur,
        }) == root
        {
            return Some(Segment::AtRoot(parts));
        }
        if cur == parent_root {
            return Some(Segment::AtParentRoot(parts));
        }
        // SAFETY: as above.
        let d = unsafe { &*cur };
        let up = d.parent_ptr();
        if up.is_null() {
            // Its filesystem's root, not the mount's: a directory renamed
            // out of a bind's subtree ("escaped" in prepend_path).
            return Some(Segment::Outside);
        }
        parts.push(d.name());
        cur = up;
    }
}

/// `prefix` (a path from the process root, "" for the root) followed by
/// `parts` (innermost first).
fn joined(prefix: &[u8], parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    for p in parts.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    out
}

/// dentry_path: `d`'s path from its filesystem's root, "//deleted" after
/// it when it was removed; None once `pass` says a rename overlapped it.
/// Caller holds a guard.
fn dentry_path(d: *const Dentry, pass: &mut Pass) -> Option<Vec<u8>> {
    let mut parts = Vec::new();
    let mut cur = d;
    loop {
        if !pass.step() {
            return None;
        }
        // SAFETY: the caller's guard keeps the chain allocated.
        let dr = unsafe { &*cur };
        let parent = dr.parent_ptr();
        if parent.is_null() {
            break;
        }
        parts.push(dr.name());
        cur = parent;
    }
    let mut out = super::context::path_of(&parts);
    // SAFETY: as above.
    let dr = unsafe { &*d };
    if !dr.is_root() && !dr.is_hashed() {
        out.extend_from_slice(b"//deleted");
    }
    Some(out)
}

/// show_mnt_opts: the mount's own flags, Linux's order.
fn mount_options(bits: u32) -> String {
    const NAMES: [(u32, &str); 7] = [
        (mnt_flags::MNT_NOSUID, ",nosuid"),
        (mnt_flags::MNT_NODEV, ",nodev"),
        (mnt_flags::MNT_NOEXEC, ",noexec"),
        (mnt_flags::MNT_NOATIME, ",noatime"),
        (mnt_flags::MNT_NODIRATIME, ",nodiratime"),
        (mnt_flags::MNT_RELATIME, ",relatime"),
        (mnt_flags::MNT_NOSYMFOLLOW, ",nosymfollow"),
    ];
    let mut s = String::from(if bits & mnt_flags::MNT_READONLY != 0 {
        "ro"
    } else {
        "rw"
    });
    for (bit, name) in NAMES {
        if bits & bit != 0 {
            s.push_str(name);
        }
    }
    s
}

/// seq_file's mangle of " \t\n\\": each as a backslash and three octal
/// digits.
fn escaped(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
            out.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}
