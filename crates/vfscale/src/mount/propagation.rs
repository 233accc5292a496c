//! Mount propagation: peer groups, masters and slaves, unbindable mounts
//! (Linux's fs/pnode.c and the propagating half of fs/namespace.c), in
//! the one mount table.
//!
//! Invariants:
//! - Every field here is written and read only under the mount table's
//!   lock; the lock orders every access, so each is Relaxed.
//! - A mount with a peer group (`group != 0`) is shared; its peers are the
//!   attached mounts with the same group. A mount with a master is that
//!   mount's slave: it receives what its master receives. Peers have the
//!   same master.
//! - Only attached mounts take part. A mount leaves propagation before it
//!   is detached (`make_private_all`, umount_tree's change_mnt_propagation):
//!   its slaves go to a peer or to its own master, so no attached mount
//!   names a detached master.
//! - What propagates (`attach_tree`): a tree attached on a shared mount D
//!   is copied onto the same mountpoint dentry in every mount that
//!   receives from D and sees that dentry (`propagation_groups`); a copy
//!   goes beneath a mount already there. An umount takes the copies on
//!   the same place that have nothing else mounted on them
//!   (`umount_set`, after 6.16's propagate_umount).

use super::anon::is_anon_ns;
use super::Mount;
use crate::abi::{Errno, SysResult};
use crate::dcache::dentry::Dentry;
use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering::Relaxed};
use crate::vfs::VfsInner;
use std::collections::{HashMap, HashSet};

/// A mount's place in propagation (see the module's invariants).
pub(crate) struct Propagation {
    /// The peer group; 0 when private.
    group: AtomicU64,
    /// The mount this one receives from; null when none.
    master: AtomicPtr<Mount>,
    unbindable: AtomicBool,
}

impl Propagation {
    pub(crate) fn new() -> Propagation {
        Propagation {
            group: AtomicU64::new(0),
            master: AtomicPtr::new(core::ptr::null_mut()),
            unbindable: AtomicBool::new(false),
        }
    }
}

/// What a mount's copy shares with its original (clone_mnt's CL_ flags).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum CloneKind {
    /// A bind: a peer of a shared original, a slave of its master.
    Bind,
    /// CL_MAKE_SHARED: a peer of the original, shared.
    Peer,
    /// CL_SLAVE: the original's slave.
    Slave,
    /// CL_SLAVE | CL_MAKE_SHARED: the original's slave, in a group of its own.
    SharedSlave,
}

/// A type change (do_change_type's single MS_* bit).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum PropagationType {
    Shared,
    Slave,
    Private,
    Unbindable,
}

/// One mount of a tree being attached: its parent's index in the tree
/// (`None` for the tree's root) and the dentry it sits on.
#[derive(Clone, Copy)]
pub(crate) struct TreeMount {
    pub mount: *const Mount,
    pub parent: Option<usize>,
    pub mountpoint: *const Dentry,
}

/// A group of peers receiving propagation, and the index of the group it
/// receives from (`None` for the origin's own group).
struct Group {
    members: Vec<*const Mount>,
    from: Option<usize>,
}

/// The table's relations, indexed once per decision (the table keeps
/// only its list of attached mounts): each group's members, each mount's
/// slaves and children, in table order. A snapshot: rebuilt after the
/// table changes.
pub(crate) struct Links {
    members: HashMap<u64, Vec<*const Mount>>,
    slaves: HashMap<*const Mount, Vec<*const Mount>>,
    children: HashMap<*const Mount, Vec<*const Mount>>,
}

impl Links {
    /// Indexes the attached mounts in `list`. Under the table lock.
    pub(crate) fn of(list: &[usize]) -> Links {
        let mut links = Links {
            members: HashMap::new(),
            slaves: HashMap::new(),
            children: HashMap::new(),
        };
        for &x in list {
            let m = x as *const Mount;
            let mr = mnt(m);
            if mr.is_shared() {
                links.members.entry(mr.group()).or_default().push(m);
            }
            if !mr.master().is_null() {
                links.slaves.entry(mr.master()).or_default().push(m);
            }
            let parent = mr.parent_ptr();
            if !parent.is_null() {
                links.children.entry(parent).or_default().push(m);
            }
        }
        links
    }

    /// `m`'s peers, itself excluded.
    pub(crate) fn peers(&self, m: *const Mount) -> impl Iterator<Item = *const Mount> + '_ {
        let group = self
            .members
            .get(&mnt(m).group())
            .filter(|_| mnt(m).is_shared());
        group
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&p| p != m)
    }

    fn slaves(&self, m: *const Mount) -> &[*const Mount] {
        self.slaves.get(&m).map_or(&[], Vec::as_slice)
    }

    /// The mounts directly on `m`.
    pub(crate) fn children(&self, m: *const Mount) -> &[*const Mount] {
        self.children.get(&m).map_or(&[], Vec::as_slice)
    }

    /// `m` and every mount beneath it, parents before children.
    pub(crate) fn subtree(&self, m: *const Mount) -> Vec<*const Mount> {
        let mut order = vec![m];
        let mut i = 0;
        while i < order.len() {
            order.extend_from_slice(self.children(order[i]));
            i += 1;
        }
        order
    }
}

/// The mount behind a pointer the table lock keeps valid.
fn mnt<'a>(m: *const Mount) -> &'a Mount {
    // SAFETY: callers pass attached mounts (live while the table lock is
    // held) or mounts they hold a reference on.
    unsafe { &*m }
}

impl Mount {
    pub(crate) fn is_shared(&self) -> bool {
        self.propagation.group.load(Relaxed) != 0
    }

    pub(crate) fn is_unbindable(&self) -> bool {
        self.propagation.unbindable.load(Relaxed)
    }

    pub(crate) fn group(&self) -> u64 {
        self.propagation.group.load(Relaxed)
    }

    pub(crate) fn master(&self) -> *const Mount {
        self.propagation.master.load(Relaxed)
    }

    fn set_master(&self, m: *const Mount) {
        self.propagation.master.store(m as *mut Mount, Relaxed);
    }

    fn set_group(&self, g: u64) {
        self.propagation.group.store(g, Relaxed);
    }
}

impl VfsInner {
    /// A fresh peer group number (unique; ids and groups share a counter).
    fn new_group(&self) -> u64 {
        // Relaxed: a unique number; nothing is published through it.
        self.mounts.next_id.fetch_add(1, Relaxed)
    }

    /// set_mnt_shared: `m` gets a group of its own unless it has one, and
    /// stops being unbindable.
    fn make_shared(&self, m: &Mount) {
        if !m.is_shared() {
            m.set_group(self.new_group());
        }
        m.propagation.unbindable.store(false, Relaxed);
    }

    /// Every group that receives propagation from `origin`: its own group
    /// first (`origin` its first member), then the groups of its members'
    /// slaves, and of theirs, each with the group it receives from.
    fn propagation_groups(links: &Links, origin: *const Mount) -> Vec<Group> {
        let mut members = vec![origin];
        members.extend(links.peers(origin));
        let mut seen: HashSet<*const Mount> = members.iter().copied().collect();
        let mut groups = vec![Group {
            members,
            from: None,
        }];
        let mut i = 0;
        while i < groups.len() {
            for m in groups[i].members.clone() {
                for &s in links.slaves(m) {
                    if !seen.insert(s) {
                        continue;
                    }
                    let mut members = vec![s];
                    members.extend(links.peers(s).filter(|&p| seen.insert(p)));
                    groups.push(Group {
                        members,
                        from: Some(i),
                    });
                }
            }
            i += 1;
        }
        groups
    }

    /// The mounts receiving propagation from `origin` (propagation_next's
    /// walk), `origin` excluded.
    fn receivers(links: &Links, origin: *const Mount) -> Vec<*const Mount> {
        Self::propagation_groups(links, origin)
            .into_iter()
            .flat_map(|g| g.members)
            .filter(|&m| m != origin)
            .collect()
    }

    /// do_set_group's change (MOVE_MOUNT_SET_GROUP): `to`, private, joins
    /// the peer group of `from` if it has one (becoming shared, so no
    /// longer unbindable) and gets its master if it has one (becoming a
    /// slave); EINVAL if `to` is shared or a slave, or `from` is neither.
    /// Under the table lock; the caller checked the rest.
    pub(crate) fn set_peer_group(&self, from: *const Mount, to: *const Mount) -> SysResult<()> {
        let (f, t) = (mnt(from), mnt(to));
        if t.is_shared() || !t.master().is_null() || (!f.is_shared() && f.master().is_null()) {
            return Err(Errno::EINVAL);
        }
        if !f.master().is_null() {
            t.set_master(f.master());
        }
        if f.is_shared() {
            t.set_group(f.group());
            t.propagation.unbindable.store(false, Relaxed);
        }
        Ok(())
    }

    /// change_mnt_propagation for one mount. Under the table lock.
    pub(crate) fn change_propagation(&self, list: &[usize], m: *const Mount, t: PropagationType) {
        let mr = mnt(m);
        if t == PropagationType::Shared {
            return self.make_shared(mr);
        }
        self.make_slave(list, m);
        if t != PropagationType::Slave {
            mr.set_master(core::ptr::null());
            mr.propagation
                .unbindable
                .store(t == PropagationType::Unbindable, Relaxed);
        }
    }

    /// do_make_slave: `m` leaves its group for a slave's place under a
    /// peer (one with its root if any) or, without peers, keeps its
    /// master; its slaves go to that new master (masterless: private).
    fn make_slave(&self, list: &[usize], m: *const Mount) {
        let master = self.leave_group(&mut Links::of(list), m, true);
        mnt(m).set_master(master);
    }

    /// do_make_slave's hand-over, `links` gaining `m`'s slaves under
    /// their new master: `m` leaves its group and its master's slaves; its
    /// slaves go to a peer (one with its root if any) or, without peers,
    /// to its own master, which it returns (null: its slaves are private
    /// now; not looked for when `m` has no slaves and `needs_master` is
    /// false: the caller makes it private).
    fn leave_group(&self, links: &mut Links, m: *const Mount, needs_master: bool) -> *const Mount {
        let mr = mnt(m);
        let mut master = mr.master();
        // The index is not pruned as mounts leave (a group or a master's
        // slaves of 100,000 copies made a teardown quadratic): a member
        // that left has group 0, a slave that left another master.
        let slaves: Vec<*const Mount> = links
            .slaves
            .remove(&m)
            .unwrap_or_default()
            .into_iter()
            .filter(|&s| mnt(s).master() == m)
            .collect();
        if mr.is_shared() {
            let group = mr.group();
            // A peer is looked for only when someone needs it: `m` itself,
            // becoming a slave, or its slaves.
            if needs_master || !slaves.is_empty() {
                if let Some(members) = links.members.get(&group) {
                    let mut peers = members
                        .iter()
                        .copied()
                        .filter(|&p| p != m && mnt(p).group() == group);
                    if let Some(first) = peers.next() {
                        master = std::iter::once(first)
                            .chain(peers)
                            .find(|&p| mnt(p).root == mr.root)
                            .unwrap_or(first);
                    }
                }
            }
            mr.set_group(0);
        }
        for &s in &slaves {
            mnt(s).set_master(master);
        }
        if !master.is_null() {
            links.slaves.entry(master).or_default().extend(slaves);
        }
        master
    }

    /// umount_tree's change to private of every mount in `leaving`, in
    /// order, before they are detached: each hands its slaves on as
    /// do_make_slave does, with the table indexed once (a mount costs its
    /// group and its slaves, not a scan of the table). Under the table
    /// lock.
    pub(crate) fn make_private_all(&self, list: &[usize], leaving: &[*const Mount]) {
        let mut links = Links::of(list);
        for &m in leaving {
            if mnt(m).is_shared() || !mnt(m).master().is_null() || !links.slaves(m).is_empty() {
                self.leave_group(&mut links, m, false);
                mnt(m).set_master(core::ptr::null());
            }
            mnt(m).propagation.unbindable.store(false, Relaxed);
        }
    }

    /// clone_mnt's propagation for `copy`, a new copy of `old`.
    fn clone_propagation(&self, old: *const Mount, copy: *const Mount, kind: CloneKind) {
        let (o, c) = (mnt(old), mnt(copy));
        match kind {
            CloneKind::Bind | CloneKind::Peer => {
                c.set_master(o.master());
                c.set_group(o.group());
                if kind == CloneKind::Peer {
                    self.make_shared(c);
                }
            }
            CloneKind::Slave | CloneKind::SharedSlave => {
                c.set_master(old);
                c.set_group(0);
                if kind == CloneKind::SharedSlave {
                    self.make_shared(c);
                }
            }
        }
    }

    /// `m` and every mount beneath it, parents before children. Under the
    /// table lock.
    pub(crate) fn subtree(&self, list: &[usize], m: *const Mount) -> Vec<*const Mount> {
        Links::of(list).subtree(m)
    }

    /// clone_mnt: a new, unattached mount of `root` (a dentry of `from`'s
    /// instance, referenced by the caller and handed over) with `from`'s
    /// flags, joining its propagation as `kind` says.
    pub(crate) fn clone_mount(
        &self,
        from: *const Mount,
        root: *const Dentry,
        kind: CloneKind,
    ) -> *const Mount {
        let f = mnt(from);
        let copy = self.new_mount(f.sb_arc(), root, f.flags.get(), &f.source);
        self.clone_propagation(from, copy, kind);
        copy
    }

    /// A copy of `tree` (new mounts of the same roots and flags, each a
    /// `kind` copy of its original), to be attached on `mountpoint`.
    fn copy_tree(&self, tree: &[TreeMount], kind: CloneKind) -> Vec<TreeMount> {
        tree.iter()
            .map(|t| {
                let root = mnt(t.mount).root;
                self.dget(root);
                let copy = self.clone_mount(t.mount, root, kind);
                TreeMount {
                    mount: copy,
                    parent: t.parent,
                    mountpoint: t.mountpoint,
                }
            })
            .collect()
    }

    /// attach_recursive_mnt: `tree` (new mounts, parents first; its root
    /// not attached) goes on (dest, mountpoint), the top of that place's
    /// stack. When `dest` is shared, the tree becomes shared and a copy
    /// goes on the same dentry in every mount receiving from `dest` that
    /// sees it (propagate_mnt), beneath a mount already there. ENOSPC
    /// (count_mounts) when the table would hold more than `max_mounts`;
    /// the tree is then freed. Under the table lock (passes its list).
    pub(crate) fn attach_tree(
        &self,
        list: &mut Vec<usize>,
        tree: &[TreeMount],
        dest: *const Mount,
        mountpoint: *const Dentry,
    ) -> crate::abi::SysResult<()> {
        let copies = match self.propagate(list, tree, dest, mountpoint, tree.len()) {
            Ok(copies) => copies,
            Err(e) => {
                for t in tree {
                    self.mntput(t.mount);
                }
                return Err(e);
            }
        };
        self.attach_copy(list, tree, dest, mountpoint);
        for (target, copy) in copies {
            self.attach_copy(list, &copy, target, mountpoint);
        }
        Ok(())
    }

    /// MS_MOVE's attach_recursive_mnt: the attached `old` (with the
    /// mounts beneath it) moves onto (dest, mountpoint), beneath the mount
    /// there if any (MOVE_MOUNT_BENEATH), propagating as `attach_tree`
    /// (ENOSPC for the copies alone). A detached tree's
    /// root (move_mount; anon.rs) brings its whole tree into `dest`'s
    /// namespace, which then counts it too. Under the table lock.
    pub(crate) fn move_tree(
        &self,
        list: &mut Vec<usize>,
        old: *const Mount,
        dest: *const Mount,
        mountpoint: *const Dentry,
    ) -> crate::abi::SysResult<()> {
        let order = self.subtree(list, old);
        let tree: Vec<TreeMount> = order
            .iter()
            .enumerate()
            .map(|(i, &m)| TreeMount {
                mount: m,
                parent: (i > 0).then(|| {
                    let p = mnt(m).parent_ptr();
                    order
                        .iter()
                        .position(|&x| x == p)
                        .expect("a subtree's parent")
                }),
                mountpoint: if i == 0 {
                    mountpoint
                } else {
                    mnt(m).mountpoint_ptr()
                },
            })
            .collect();
        let anon = mnt(old).is_anon_root().then(|| mnt(old).ns_id());
        let new = if anon.is_some() { tree.len() } else { 0 };
        let copies = self.propagate(list, &tree, dest, mountpoint, new)?;
        // MOVE_MOUNT_BENEATH's place holds a mount, which goes on top of
        // the moved tree (elsewhere the place is the top of its stack).
        let above = self.mounts.lookup(dest, mountpoint);
        self.move_mount(list, old, dest, mountpoint, above);
        if let Some(anon) = anon {
            self.adopt_anon_tree(&order, anon, mnt(dest));
        }
        for (target, copy) in copies {
            self.attach_copy(list, &copy, target, mountpoint);
        }
        Ok(())
    }

    /// propagate_mnt: when `dest` is shared, makes `tree` shared and
    /// returns a copy of it for each receiving mount that sees
    /// `mountpoint` (need_secondary), with its place — or ENOSPC, changing
    /// nothing, when `new` more mounts in `dest`'s namespace, or the copies
    /// in theirs, would take a namespace past `max_mounts`
    /// (count_mounts).
    fn propagate(
        &self,
        list: &[usize],
        tree: &[TreeMount],
        dest: *const Mount,
        mountpoint: *const Dentry,
        new: usize,
    ) -> crate::abi::SysResult<Vec<(*const Mount, Vec<TreeMount>)>> {
        let shared = mnt(dest).is_shared();
        let groups = if shared {
            Self::propagation_groups(&Links::of(list), dest)
        } else {
            Vec::new()
        };
        let targets: Vec<(usize, *const Mount)> = groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| g.members.iter().map(move |&n| (i, n)))
            // need_secondary: nothing propagates into a detached tree.
            .filter(|&(_, n)| n != dest && sees(mnt(n), mountpoint) && !is_anon_ns(mnt(n).ns_id()))
            .collect();
        let mut adding: HashMap<u64, usize> = HashMap::new();
        *adding.entry(mnt(dest).ns_id()).or_default() += new;
        for &(_, n) in &targets {
            *adding.entry(mnt(n).ns_id()).or_default() += tree.len();
        }
        if adding
            .iter()
            .any(|(&ns, &more)| self.namespace_mounts(ns) + more > self.config.max_mounts)
        {
            return Err(crate::abi::Errno::ENOSPC);
        }
        if !shared {
            return Ok(Vec::new());
        }
        for t in tree {
            self.make_shared(mnt(t.mount));
        }
        // The copy each group received first (the source tree for dest's).
        let mut first: Vec<Option<Vec<TreeMount>>> = vec![None; groups.len()];
        first[0] = Some(tree.to_vec());
        let mut out = Vec::new();
        for (i, n) in targets {
            let copy = match &first[i] {
                Some(peer) => self.copy_tree(peer, CloneKind::Peer),
                None => {
                    // A slave of the copy in the nearest group up the
                    // chain that got one (find_master).
                    let mut up = groups[i].from;
                    while let Some(u) = up {
                        if first[u].is_some() {
                            break;
                        }
                        up = groups[u].from;
                    }
                    let master = first[up.expect("dest's group has the source")]
                        .as_ref()
                        .expect("a group with a copy");
                    let kind = if mnt(n).is_shared() {
                        CloneKind::SharedSlave
                    } else {
                        CloneKind::Slave
                    };
                    let copy = self.copy_tree(master, kind);
                    first[i] = Some(copy.clone());
                    copy
                }
            };
            out.push((n, copy));
        }
        Ok(out)
    }

    /// Attaches a tree of new mounts on (target, mountpoint): the mounts
    /// beneath its root first, then the root, so the tree appears at once;
    /// beneath the mount already on that place, if any, which moves onto
    /// the topmost mount stacked on the tree's root.
    fn attach_copy(
        &self,
        list: &mut Vec<usize>,
        tree: &[TreeMount],
        target: *const Mount,
        mountpoint: *const Dentry,
    ) {
        for t in &tree[1..] {
            let parent = tree[t.parent.expect("a submount's parent")].mount;
            self.attach_mount(list, t.mount, parent, t.mountpoint);
        }
        let root = tree[0].mount;
        let above = self.mounts.lookup(target, mountpoint);
        if above.is_null() {
            self.attach_mount(list, root, target, mountpoint);
        } else {
            let mut top = root;
            loop {
                let next = self.mounts.lookup(top, mnt(top).root);
                if next.is_null() {
                    break;
                }
                top = next;
            }
            self.attach_beneath(list, root, target, mountpoint, above, top);
        }
        // The namespace is the target's: the tree's inner mounts were hooked
        // before its root was, and the mount moved onto it by its top.
        let ns = mnt(target).ns_id();
        for t in tree {
            self.set_namespace(mnt(t.mount), ns);
        }
        if !above.is_null() {
            self.set_namespace(mnt(above), ns);
        }
    }

    /// The copies whose counts propagate_mount_busy reads before `m` is
    /// unmounted: for each mount receiving from `m`'s parent, the one on
    /// `m`'s mountpoint, unless it has submounts other than one covering
    /// it. Under the table lock.
    pub(crate) fn umount_copies(&self, links: &Links, m: *const Mount) -> Vec<*const Mount> {
        let mr = mnt(m);
        let parent = mr.parent_ptr();
        if parent.is_null() {
            return Vec::new();
        }
        Self::receivers(links, parent)
            .into_iter()
            .map(|q| self.mounts.lookup(q, mr.mountpoint_ptr()))
            .filter(|&c| !c.is_null())
            .filter(|&c| match links.children(c) {
                [] => true,
                [only] => *only == self.overmount(c),
                _ => false,
            })
            .collect()
    }

    /// The mount on `m`'s own root, or null.
    fn overmount(&self, m: *const Mount) -> *const Mount {
        self.mounts.lookup(m, mnt(m).root)
    }

    /// propagate_umount: the mounts an umount of `set` (a mount and, for a
    /// lazy one, everything beneath it) takes with it — the copies on the
    /// same places in the mounts receiving from their parents that have
    /// nothing left on them but such copies and one mount covering them —
    /// and, for each mount covering a copy taken, the place it moves to
    /// (where the bottom of the taken stack was). Under the table lock.
    pub(crate) fn umount_set(
        &self,
        links: &Links,
        set: &[*const Mount],
    ) -> (
        Vec<*const Mount>,
        Vec<(*const Mount, *const Mount, *const Dentry)>,
    ) {
        let mut gone: HashSet<*const Mount> = set.iter().copied().collect();
        // gather_candidates (Linux adds each at the head of its list: the
        // list is read backwards below).
        let mut candidates: Vec<*const Mount> = Vec::new();
        let mut is_candidate: HashSet<*const Mount> = HashSet::new();
        for &m in set {
            let mr = mnt(m);
            let parent = mr.parent_ptr();
            if parent.is_null() {
                continue;
            }
            for q in Self::receivers(links, parent) {
                let c = self.mounts.lookup(q, mr.mountpoint_ptr());
                if !c.is_null() && !gone.contains(&c) && is_candidate.insert(c) {
                    candidates.push(c);
                }
            }
        }
        // The set's mounts and taken ones have left their parents' child
        // lists (umount_tree unhooks the set before propagate_umount,
        // umount_one each taken copy).
        let mut taken: Vec<*const Mount> = Vec::new();
        let children = |c: *const Mount, gone: &HashSet<*const Mount>| -> Vec<*const Mount> {
            links
                .children(c)
                .iter()
                .copied()
                .filter(|k| !gone.contains(k))
                .collect()
        };
        // trim_one: a candidate with a submount that stays (but one
        // covering it) stays, and so do its candidate ancestors it does
        // not cover (trim_ancestors); one with nothing on it goes now.
        let mut marked: HashSet<*const Mount> = HashSet::new();
        let mut undecided = Vec::new();
        for &c in candidates.iter().rev() {
            if !is_candidate.contains(&c) {
                continue;
            }
            let kids = children(c, &gone);
            let over = self.overmount(c);
            let staying: Vec<_> = kids.iter().filter(|k| !is_candidate.contains(k)).collect();
            if staying.iter().any(|&&k| k != over) {
                is_candidate.remove(&c);
                self.trim_ancestors(c, &mut is_candidate, &mut marked);
            } else if !staying.is_empty() {
                self.trim_ancestors(c, &mut is_candidate, &mut marked);
                undecided.push(c);
            } else if kids.is_empty() {
                is_candidate.remove(&c);
                gone.insert(c);
                taken.push(c);
            } else {
                undecided.push(c);
            }
        }
        // handle_locked (no mount is locked here): a candidate left goes
        // with its candidate ancestors.
        for c in undecided {
            let mut m = c;
            while is_candidate.remove(&m) {
                gone.insert(m);
                taken.push(m);
                m = mnt(m).parent_ptr();
            }
        }
        // reparent: a mount covering a taken copy, itself staying, moves
        // to where the bottom of the taken stack was.
        let mut moves = Vec::new();
        for &m in &taken {
            let over = self.overmount(m);
            if over.is_null() || gone.contains(&over) {
                continue;
            }
            let mut p = over;
            let mp = loop {
                let mp = mnt(p).mountpoint_ptr();
                p = mnt(p).parent_ptr();
                if !gone.contains(&p) {
                    break mp;
                }
            };
            moves.push((over, p, mp));
        }
        (taken, moves)
    }

    /// trim_ancestors: above `m`, each candidate ancestor that `m`'s line
    /// does not cover completely stops being a candidate.
    fn trim_ancestors(
        &self,
        mut m: *const Mount,
        is_candidate: &mut HashSet<*const Mount>,
        marked: &mut HashSet<*const Mount>,
    ) {
        let mut p = mnt(m).parent_ptr();
        while !p.is_null() && is_candidate.contains(&p) {
            if !marked.insert(m) {
                return;
            }
            if m != self.overmount(p) {
                is_candidate.remove(&p);
            }
            m = p;
            p = mnt(p).parent_ptr();
        }
    }
}

/// need_secondary's test: `m` shows `mountpoint` (is_subdir of its root).
fn sees(m: &Mount, mountpoint: *const Dentry) -> bool {
    mountpoint == m.root || crate::process::is_ancestor(m.root, mountpoint)
}

/// tree_contains_unbindable, for MS_MOVE onto a shared mount.
pub(crate) fn any_unbindable(mounts: &[*const Mount]) -> bool {
    mounts.iter().any(|&m| mnt(m).is_unbindable())
}
