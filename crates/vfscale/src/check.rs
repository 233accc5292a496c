//! The invariant checker: a full scan of a quiescent VFS that cross-checks
//! every structure against every other. Stress tests, the soak and fault
//! tests call it after their threads stop.
//!
//! What it proves (when no operation is running and no process is alive
//! other than those the caller counts through `extra refs` — normally none):
//! - names ↔ dentries: every indexed child is hashed, positive, points back
//!   to its directory, carries its cookie, and is what an exact lookup of its
//!   name returns; every hashed positive dentry is indexed;
//! - names ↔ inodes: a directory's nlink is 2 + its subdirectories; any other
//!   inode's nlink is the number of names bound to it (on superblocks whose
//!   dentries are the names, not a cache of a backend's: passthrough
//!   instances keep the host's link counts over a partial cache);
//! - refcounts at rest: a positive dentry holds 1 (its name, but for a
//!   backend's cached names) + one per child
//!   dentry (positive or negative) + one per mount using it as root or
//!   mountpoint + one per removed child a mount still keeps (a bind
//!   mount's removed source); an inode holds one per dentry bound to it;
//! - counters: live dentry, inode, file and mount counts equal what the scan
//!   finds; no mount holds a unit of write access (`mount/write.rs`);
//! - mounts: the table finds each attached mount on its place (one mount
//!   per place), whose dentry is flagged mounted; a master is an attached
//!   mount, the same for all of a group's peers, and a shared mount is not
//!   unbindable (`mount/propagation.rs`);
//! - reclaim: every unused negative dentry is on an LRU list; every list's
//!   links, flags and count agree; a group with a non-empty list has its
//!   shrinker bit and populated bit set (`reclaim/`);
//! - memory groups: every group's per-kind counters equal the objects that
//!   record it, found by this same walk (`reclaim/check.rs`);
//! - POSIX ACLs: an inode's ACL bits name exactly the ACLs its table holds,
//!   each valid, an access ACL's base entries equal to the mode's bits
//!   (`inode/acl.rs`).

use crate::dcache::dentry::Dentry;
use crate::dcache::name::NameKey;
use crate::dir::index::INDEXED_NAME_MAX;
use crate::inode::Inode;
use crate::mount::Mount;
use crate::reclaim::check::GroupTally;
use crate::reclaim::ObjKind;
use crate::vfs::Vfs;
use std::collections::HashMap;

/// What a successful check counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub dentries: i64,
    pub negative_dentries: i64,
    pub inodes: i64,
    pub mounts: i64,
    /// Names whose reference count is sharded (dcache/hot.rs).
    pub hot_dentries: i64,
}

impl Vfs {
    /// Checks every invariant of a quiescent VFS with no open files, cwds
    /// or roots held (drop every `Process` first). Returns the first
    /// violation found.
    pub fn check_invariants(&self) -> Result<CheckReport, String> {
        let v = &*self.inner;
        let _guard = v.collector.enter();
        let mounts: Vec<*const Mount> =
            v.lock_mounts().iter().map(|&m| m as *const Mount).collect();
        let mut per_namespace: HashMap<u64, usize> = HashMap::new();
        for &m in &mounts {
            // SAFETY: attached mounts are live (quiescent VFS, our guard).
            *per_namespace.entry(unsafe { &*m }.ns_id()).or_default() += 1;
        }
        let counted = v.mounts.ns_mounts.lock().clone();
        if per_namespace != counted {
            return Err(format!(
                "namespace mount counts {counted:?} disagree with the table {per_namespace:?}"
            ));
        }
        v.fs_contexts.check()?;
        // Each detached tree (mount/anon.rs) has its origin and one root;
        // no origin outlives its tree.
        let mut anon_roots: HashMap<u64, usize> = HashMap::new();
        for &m in &mounts {
            // SAFETY: attached mounts are live (quiescent VFS, our guard).
            let mr = unsafe { &*m };
            if crate::mount::anon::is_anon_ns(mr.ns_id()) {
                *anon_roots.entry(mr.ns_id()).or_default() +=
                    usize::from(mr.parent_ptr().is_null());
            }
        }
        let mut with_origin = v.mounts.anon.tree_ids();
        with_origin.sort_unstable();
        let mut in_table: Vec<u64> = anon_roots.keys().copied().collect();
        in_table.sort_unstable();
        if with_origin != in_table || anon_roots.values().any(|&n| n != 1) {
            return Err(format!(
                "detached trees {in_table:?} (roots {anon_roots:?}) disagree with their origins {with_origin:?}"
            ));
        }
        // The first namespace's root (pivot_root changes it) is attached
        // there, without a parent.
        let init_root = {
            let _list = v.lock_mounts();
            v.init_namespace().root()
        };
        // SAFETY: attached mounts are live (quiescent VFS, our guard).
        let ir = unsafe { &*init_root };
        if !mounts.contains(&init_root)
            || !ir.parent_ptr().is_null()
            || ir.ns_id() != v.init_namespace().id
        {
            return Err("the first namespace's root is not its parentless mount".into());
        }
        let mut extra_refs: HashMap<usize, i64> = HashMap::new();
        let mut tally = GroupTally::default();
        let mut sb_roots = Vec::new();
        let mut cached_roots = Vec::new();
        for &m in &mounts {
            // SAFETY (whole function): the caller guarantees quiescence and
            // we hold a guard; every pointer reached is live.
            let mr = unsafe { &*m };
            *extra_refs.entry(mr.root as usize).or_default() += 1;
            let mp = mr.mountpoint_ptr();
            if !mp.is_null() {
                *extra_refs.entry(mp as usize).or_default() += 1;
            }
            let root = mr.sb().root();
            if !sb_roots.contains(&root) {
                sb_roots.push(root);
                // A backend serves its names (passthrough): its dentries
                // are a cache of them. (FaultyFs over tmpfs is not
                // authoritative either, but keeps tmpfs's pinned,
                // indexed names.)
                if mr.sb().backend_served {
                    cached_roots.push(root);
                }
                v.check_reclaim(mr.sb())?;
            }
            v.check_mount_place(&mounts, mr)?;
            let expected_mnt_refs = 1 + mounts
                .iter()
                .filter(|&&c| unsafe { &*c }.parent_ptr() == m)
                .count() as u32;
            // No file is open and no change runs: no unit of write access
            // is held (mount/write.rs).
            if mr.writers.busy() {
                return Err(format!("mount {} holds write access at rest", mr.id()));
            }
            if mr.refcount.count_at_rest() != i64::from(expected_mnt_refs) {
                return Err(format!(
                    "mount {} holds {} references, expected {expected_mnt_refs}",
                    mr.id(),
                    mr.refcount.count_at_rest()
                ));
            }
        }
        // A mount whose root was removed (a bind mount of a directory later
        // rmdir'ed) keeps that dentry, unhashed, and it keeps its parent
        // (as Linux's d_parent); so does each removed ancestor it keeps.
        let mut kept_removed: HashMap<usize, ()> = HashMap::new();
        for &m in &mounts {
            let mut dp = unsafe { &*m }.root;
            loop {
                let d = unsafe { &*dp };
                if d.is_hashed() || d.is_root() || kept_removed.insert(dp as usize, ()).is_some() {
                    break;
                }
                *extra_refs.entry(d.parent_ptr() as usize).or_default() += 1;
                dp = d.parent_ptr();
            }
        }
        // Children per parent, from the hash (negative ones are only there).
        let mut children: HashMap<usize, i64> = HashMap::new();
        let mut hashed = 0i64;
        let mut negative = 0i64;
        let mut hot = 0i64;
        // Positive children per parent, from the hash: how a superblock
        // whose dentries are a cache (in no child index) is walked.
        let mut hashed_children: HashMap<usize, Vec<*const Dentry>> = HashMap::new();
        // SAFETY: the guard above; the VFS is quiescent, so no resize runs.
        for b in unsafe { v.dcache.buckets() } {
            let mut p = b.first();
            while !p.is_null() {
                let d = unsafe { &*p };
                hashed += 1;
                tally.add(d.group, ObjKind::Dentry, 1);
                if d.inode_ptr().is_null() {
                    negative += 1;
                } else {
                    hashed_children
                        .entry(d.parent_ptr() as usize)
                        .or_default()
                        .push(p);
                }
                if !d.is_hashed() {
                    return Err("a dentry in a hash chain lacks D_HASHED".into());
                }
                if d.refcount.is_sharded() {
                    if d.inode_ptr().is_null() {
                        return Err("a negative dentry has a sharded count".into());
                    }
                    hot += 1;
                }
                if d.inode_ptr().is_null()
                    && d.refcount.count() == 0
                    && d.flags() & crate::dcache::dentry::D_ON_LRU == 0
                {
                    return Err("an unused negative dentry on no LRU list".into());
                }
                *children.entry(d.parent_ptr() as usize).or_default() += 1;
                p = d.chain_next_ptr();
            }
        }
        let mut names_per_inode: HashMap<usize, u32> = HashMap::new();
        // Inodes of superblocks whose dentries cache a backend's names.
        let mut cached_inodes: HashMap<usize, ()> = HashMap::new();
        let mut inodes_seen: HashMap<usize, ()> = HashMap::new();
        let mut positive = 0i64;
        // (dentry, whether its superblock's dentries are a cache)
        let mut stack: Vec<(*const Dentry, bool)> = sb_roots
            .iter()
            .map(|&r| (r, cached_roots.contains(&r)))
            .collect();
        while let Some((dp, cached)) = stack.pop() {
            let d = unsafe { &*dp };
            let ip = d.inode_ptr();
            if ip.is_null() {
                return Err("a reachable dentry is negative".into());
            }
            positive += 1;
            if d.is_root() {
                tally.add(d.group, ObjKind::Dentry, 1);
            }
            *names_per_inode.entry(ip as usize).or_default() += 1;
            if cached {
                cached_inodes.insert(ip as usize, ());
            }
            inodes_seen.insert(ip as usize, ());
            // A name pins its dentry, but for a backend's cached names
            // (unused ones wait on an LRU list at 0).
            let pin = i64::from(!cached || d.is_root());
            let expected = pin
                + children.get(&(dp as usize)).copied().unwrap_or(0)
                + extra_refs.get(&(dp as usize)).copied().unwrap_or(0);
            if d.refcount.count_at_rest() != expected {
                return Err(format!(
                    "dentry {:?} holds {} references, expected {expected}",
                    String::from_utf8_lossy(&d.name()),
                    d.refcount.count_at_rest()
                ));
            }
            let inode: &Inode = unsafe { &*ip };
            if cached {
                // A backend's cached names: in no child index, and the link
                // count is the backend's.
                for &c in hashed_children.get(&(dp as usize)).into_iter().flatten() {
                    stack.push((c, true));
                }
                continue;
            }
            let Some(index) = inode.dir_index() else {
                continue;
            };
            let index = index.read();
            let mut subdirs = 0;
            for (cookie, entry) in index.entries_from(0) {
                let cp = entry.dentry();
                let c = unsafe { &*cp };
                let name = c.name();
                let kept = entry.short_name().map(|(bytes, len)| bytes[..len].to_vec());
                if kept.is_some() != (name.len() <= INDEXED_NAME_MAX)
                    || kept.as_ref().is_some_and(|k| *k != name)
                {
                    return Err(format!(
                        "the index keeps {kept:?} as the name of child {:?}",
                        String::from_utf8_lossy(&name)
                    ));
                }
                if !std::ptr::eq(c.parent_ptr(), dp) {
                    return Err(format!(
                        "child {:?} does not point back to its directory",
                        String::from_utf8_lossy(&name)
                    ));
                }
                if c.cookie.load(core::sync::atomic::Ordering::Relaxed) != cookie {
                    return Err(format!(
                        "child {:?} carries the wrong cookie",
                        String::from_utf8_lossy(&name)
                    ));
                }
                if !c.is_hashed() || v.lookup_exact(dp, &NameKey::new(&name)) != cp {
                    return Err(format!(
                        "child {:?} is not what a lookup of its name finds",
                        String::from_utf8_lossy(&name)
                    ));
                }
                let ci = c.inode_ptr();
                if ci.is_null() {
                    return Err(format!(
                        "indexed child {:?} is negative",
                        String::from_utf8_lossy(&name)
                    ));
                }
                // SAFETY: quiescent VFS under a guard (see the top of this function).
                let child_inode = unsafe { &*ci };
                if (entry.ino, entry.file_type()) != (child_inode.ino(), child_inode.file_type()) {
                    return Err(format!(
                        "the index's inode number or type of child {:?} is stale",
                        String::from_utf8_lossy(&name)
                    ));
                }
                if child_inode.is_dir() {
                    subdirs += 1;
                }
                stack.push((cp, cached));
            }
            let nlink = inode.attr().nlink;
            if nlink != 2 + subdirs {
                return Err(format!(
                    "directory inode {} has nlink {nlink}, expected {}",
                    inode.ino(),
                    2 + subdirs
                ));
            }
        }
        // The removed dentries mounts keep: each holds its mounts (and its
        // removed children kept the same way), and its inode.
        let mut removed_per_inode: HashMap<usize, u32> = HashMap::new();
        for &dp in kept_removed.keys() {
            let d = unsafe { &*(dp as *const Dentry) };
            tally.add(d.group, ObjKind::Dentry, 1);
            let expected = extra_refs.get(&dp).copied().unwrap_or(0);
            if d.refcount.count_at_rest() != expected {
                return Err(format!(
                    "removed dentry {:?} kept by a mount holds {} references, expected {expected}",
                    String::from_utf8_lossy(&d.name()),
                    d.refcount.count_at_rest()
                ));
            }
            let ip = d.inode_ptr();
            if !ip.is_null() {
                *removed_per_inode.entry(ip as usize).or_default() += 1;
            }
        }
        // Inodes only removed dentries keep (a removed file or directory
        // a bind mount still uses): counted and checked with the others.
        for &ip in removed_per_inode.keys() {
            names_per_inode.entry(ip).or_default();
        }
        for (&ip, &names) in &names_per_inode {
            // SAFETY: inodes collected from live dentries of a quiescent VFS.
            let inode = unsafe { &*(ip as *const Inode) };
            tally_inode(&mut tally, inode);
            inode.check_acls()?;
            inodes_seen.insert(ip, ());
            let removed = removed_per_inode.get(&ip).copied().unwrap_or(0);
            if !inode.is_dir() && !cached_inodes.contains_key(&ip) && inode.attr().nlink != names {
                return Err(format!(
                    "inode {} has nlink {} but {names} names",
                    inode.ino(),
                    inode.attr().nlink
                ));
            }
            if inode.refcount.count() != names + removed {
                return Err(format!(
                    "inode {} holds {} references, expected {}",
                    inode.ino(),
                    inode.refcount.count(),
                    names + removed
                ));
            }
        }
        if hashed - negative + sb_roots.len() as i64 != positive {
            return Err(format!("{} hashed positive dentries but {positive} reachable (unlinked names still hashed, or lost subtrees)", hashed - negative + sb_roots.len() as i64));
        }
        let counts = self.object_counts();
        let report = CheckReport {
            dentries: hashed + sb_roots.len() as i64 + kept_removed.len() as i64,
            negative_dentries: negative,
            hot_dentries: hot,
            inodes: inodes_seen.len() as i64,
            mounts: mounts.len() as i64,
        };
        if counts.dentries != report.dentries
            || counts.inodes != report.inodes
            || counts.files != 0
            || counts.mounts != report.mounts
            || counts.hot_dentries != report.hot_dentries
        {
            return Err(format!(
                "object counters {counts:?} disagree with the scan {report:?}"
            ));
        }
        // The anonymous mount's internal objects: its root and the shared
        // eventfd node (every other anonymous node died with its files).
        let anon = v.anon();
        // SAFETY: the anonymous mount and its nodes live as long as the VFS.
        let anon_root = unsafe { &*(*anon.mnt).sb().root() };
        // SAFETY: as above.
        let eventfd = unsafe { &*anon.eventfd_node };
        for d in [anon_root, &eventfd.dentry] {
            tally.add(d.group, ObjKind::Dentry, 1);
            // SAFETY: both are positive and keep their inodes.
            tally_inode(&mut tally, unsafe { &*d.inode_ptr() });
        }
        v.check_group_totals(&tally)?;
        // Locks live only while an open file can reach their inode.
        let lock_contexts = v.file_locks.contexts();
        if lock_contexts != 0 {
            return Err(format!(
                "{lock_contexts} inodes keep file locks with no open file"
            ));
        }
        Ok(report)
    }
}

/// Counts an inode and the data pages it keeps in its group.
fn tally_inode(tally: &mut GroupTally, inode: &Inode) {
    tally.add(inode.group, ObjKind::Inode, 1);
    // SAFETY: an inode's superblock outlives it.
    if !unsafe { &*inode.sb }.backend_served {
        tally.add(inode.group, ObjKind::Page, inode.attr().blocks as i64 / 8);
    }
}

impl crate::vfs::VfsInner {
    /// The mount part of the checker (see the module's list): `m` is one of
    /// the attached `mounts`.
    fn check_mount_place(&self, mounts: &[*const Mount], m: &Mount) -> Result<(), String> {
        let parent = m.parent_ptr();
        if m.ns_id() == 0 {
            return Err(format!("attached mount {} is in no namespace", m.id()));
        }
        if parent.is_null() {
            // A namespace's root: the only one of its namespace.
            if mounts.iter().any(|&o| {
                // SAFETY: attached mounts are live (quiescent VFS).
                let or = unsafe { &*o };
                !core::ptr::eq(or, m) && or.parent_ptr().is_null() && or.ns_id() == m.ns_id()
            }) {
                return Err(format!("namespace of mount {} has two roots", m.id()));
            }
        } else {
            // SAFETY: an attached mount holds its parent.
            if unsafe { &*parent }.ns_id() != m.ns_id() {
                return Err(format!(
                    "mount {} is in another namespace than its parent",
                    m.id()
                ));
            }
            let mp = m.mountpoint_ptr();
            if !core::ptr::eq(self.mounts.lookup(parent, mp), m) {
                return Err(format!("mount {} is not what its place finds", m.id()));
            }
            // SAFETY: an attached mount holds its mountpoint.
            if unsafe { &*mp }.flags() & crate::dcache::dentry::D_MOUNTED == 0 {
                return Err(format!("mount {}'s mountpoint is not flagged", m.id()));
            }
        }
        let master = m.master();
        if !master.is_null() && !mounts.contains(&master) {
            return Err(format!("mount {} has a detached master", m.id()));
        }
        if m.is_shared() && m.is_unbindable() {
            return Err(format!("mount {} is shared and unbindable", m.id()));
        }
        for &o in mounts {
            // SAFETY: attached mounts are live (the checker's caller keeps
            // the VFS quiescent).
            let or = unsafe { &*o };
            if m.is_shared() && or.group() == m.group() && or.master() != master {
                return Err(format!("peers {} and {} have two masters", m.id(), or.id()));
            }
        }
        Ok(())
    }
}
