//! Mount propagation within the one namespace: shared, slave, private and
//! unbindable mounts (Linux's fs/pnode.c and the propagation parts of
//! fs/namespace.c, 6.18).
//!
//! The model keeps Linux's relations at the level of peer groups:
//! - `Mount::group` is the mount's peer group (MS_SHARED; the mounts of a
//!   group are peers, a mount may be alone in its group);
//! - `Mount::master` is the *group* the mount receives propagation from
//!   (MS_SLAVE). Linux links a slave to one mount of that group, but every
//!   peer of a group shares its master and propagation from a master walks
//!   all of its peers' slaves, so only the group is observable;
//! - `Mount::unbindable` is T_UNBINDABLE.
//!
//! Invariants (whenever the lock is released): only mounts in the
//! namespace (reachable from `State::ns_root`) have a group or a master;
//! the peers of a group share one master; a group that is some mount's
//! master has a mount in the namespace.

use crate::node::NodeId;
use crate::state::*;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A peer group.
pub(crate) type GroupId = u64;

/// A mount's propagation links: its peer group and its master.
pub(crate) type Links = (Option<GroupId>, Option<GroupId>);

/// The propagation type mount(2) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PropType {
    Shared,
    Slave,
    Private,
    Unbindable,
}

impl State {
    fn new_group(&mut self) -> GroupId {
        self.next_group += 1;
        self.next_group
    }

    /// Whether mount `m` is in the namespace (is_mounted): its chain of
    /// parents ends at the namespace root. Not true of detached mounts,
    /// nor of a tree being built by copy_tree before it is attached.
    pub(crate) fn in_namespace(&self, mut m: MountId) -> bool {
        loop {
            match &self.mount(m).parent {
                Some((p, _)) => m = *p,
                None => return m == self.ns_root,
            }
        }
    }

    /// Mounts of the namespace matching `f`, in id order.
    fn mounts_where(&self, f: impl Fn(&Mount) -> bool) -> Vec<MountId> {
        let mut v: Vec<MountId> = self
            .mounts
            .iter()
            .filter(|(_, m)| f(m))
            .map(|(&id, _)| id)
            .filter(|&id| self.in_namespace(id))
            .collect();
        v.sort_unstable();
        v
    }

    /// The peers of group `g` (the mounts in it).
    fn group_members(&self, g: GroupId) -> Vec<MountId> {
        self.mounts_where(|m| m.group == Some(g))
    }

    /// The mounts whose master is group `g`.
    fn group_slaves(&self, g: GroupId) -> Vec<MountId> {
        self.mounts_where(|m| m.master == Some(g))
    }

    /// The mounts beneath `m`, `m` first (next_mnt's pre-order).
    pub(crate) fn subtree(&self, m: MountId) -> Vec<MountId> {
        let mut out = Vec::new();
        let mut stack = vec![m];
        while let Some(x) = stack.pop() {
            out.push(x);
            stack.extend(self.mount(x).children.iter().rev().copied());
        }
        out
    }

    /// The mount stacked on the root of `m` (Linux's `m->overmount`).
    fn overmount(&self, m: MountId) -> Option<MountId> {
        let key = self.mount(m).root_key.clone();
        self.mounted_on.get(&(m, key)).copied()
    }

    /// is_subdir(dentry `key`, root of mount `m`): whether the dentry is
    /// visible in `m`.
    pub(crate) fn key_under_root(&self, key: &MpKey, m: MountId) -> bool {
        let mnt = self.mount(m);
        match key {
            MpKey::Dir(d) => self.is_dir(mnt.root) && self.is_subdir(*d, mnt.root),
            MpKey::Name(p, _) => {
                *key == mnt.root_key || (self.is_dir(mnt.root) && self.is_subdir(*p, mnt.root))
            }
        }
    }

    /// propagation_next(p, p) to the end: every mount that receives
    /// propagation from `p` — its peers, the slaves of its group, their
    /// peers and slaves, and so on down — `p` excluded.
    pub(crate) fn receivers(&self, p: MountId) -> Vec<MountId> {
        let Some(g) = self.mount(p).group else {
            return Vec::new();
        };
        let mut out: Vec<MountId> = self
            .group_members(g)
            .into_iter()
            .filter(|&m| m != p)
            .collect();
        let mut seen = HashSet::from([g]);
        let mut queue = vec![g];
        while let Some(g) = queue.pop() {
            for s in self.group_slaves(g) {
                match self.mount(s).group {
                    Some(g2) => {
                        if seen.insert(g2) {
                            out.extend(self.group_members(g2));
                            queue.push(g2);
                        }
                    }
                    None => out.push(s),
                }
            }
        }
        out
    }

    /// change_mnt_propagation (6.18): MS_SHARED gives `m` a group if it
    /// has none and clears its unbindable bit (set_mnt_shared). The other
    /// types take `m` out of its group: if it had peers its slaves stay
    /// with them and its would-be master is that group; if it was alone,
    /// the group's slaves pass to `m`'s own master (or become private when
    /// it has none: transfer_propagation). Then MS_SLAVE makes `m` a slave
    /// of that master (private if none), leaving the unbindable bit;
    /// MS_PRIVATE and MS_UNBINDABLE drop the master and clear or set the
    /// bit.
    pub(crate) fn change_mnt_propagation(&mut self, m: MountId, t: PropType) {
        if t == PropType::Shared {
            if self.mount(m).group.is_none() {
                let g = self.new_group();
                self.mount_mut(m).group = Some(g);
            }
            self.mount_mut(m).unbindable = false;
            return;
        }
        let mut master = self.mount(m).master;
        if let Some(g) = self.mount(m).group {
            let alone = self.group_members(g).iter().all(|&p| p == m);
            if alone {
                for s in self.group_slaves(g) {
                    self.mount_mut(s).master = master;
                }
            } else {
                master = Some(g);
            }
            self.mount_mut(m).group = None;
        }
        let mnt = self.mount_mut(m);
        if t == PropType::Slave {
            mnt.master = master;
        } else {
            mnt.master = None;
            mnt.unbindable = t == PropType::Unbindable;
        }
    }

    /// copy_tree / clone_mnt: a copy of mount `src` rooted at `root`, with
    /// (if `recurse`) copies of the mounts below it whose mountpoints lie
    /// inside the copied subtree, except unbindable ones and everything
    /// beneath them. `rel` gives each copy its (group, master) from its
    /// original. Returns the new, unattached mount.
    pub(crate) fn clone_tree(
        &mut self,
        src: MountId,
        root: NodeId,
        root_key: MpKey,
        recurse: bool,
        rel: &dyn Fn(&State, MountId) -> Links,
    ) -> MountId {
        let (dev, flags) = {
            let m = self.mount(src);
            (m.dev, m.flags)
        };
        let (group, master) = rel(self, src);
        let id = self.next_mount;
        self.next_mount += 1;
        self.new_mount_keyed(id, dev, root, root_key.clone(), None, flags);
        let m = self.mount_mut(id);
        m.group = group;
        m.master = master;
        if recurse {
            let children = self.mount(src).children.clone();
            for c in children {
                let (pkey, croot, ckey, unbindable) = {
                    let cm = self.mount(c);
                    (
                        cm.parent.clone().expect("model: child").1,
                        cm.root,
                        cm.root_key.clone(),
                        cm.unbindable,
                    )
                };
                let inside = match &pkey {
                    MpKey::Dir(d) => self.is_subdir(*d, root),
                    MpKey::Name(p, _) => pkey == root_key || self.is_subdir(*p, root),
                };
                if inside && !unbindable {
                    let copy = self.clone_tree(c, croot, ckey, true, rel);
                    self.attach(copy, id, pkey);
                }
            }
        }
        id
    }

    /// attach_recursive_mnt: attaches the tree rooted at `src` (a new
    /// mount, a bind's copy, or — `moving` — an attached tree that leaves
    /// its place) on `key` in `dest`, the topmost mount there. When `dest`
    /// is shared, every mount of the tree becomes shared (a group of its
    /// own if it had none: invent_group_ids, set_mnt_shared) and
    /// propagate_mnt gives every mount receiving propagation from `dest`
    /// whose root shows `key` a copy of the tree on the same dentry; a copy
    /// is tucked under what was already mounted there (that mount moves
    /// onto the topmost mount stacked on the copy's root).
    pub(crate) fn attach_recursive(
        &mut self,
        src: MountId,
        dest: MountId,
        key: MpKey,
        moving: bool,
    ) {
        let mut copies = Vec::new();
        if self.mount(dest).group.is_some() {
            for p in self.subtree(src) {
                if self.mount(p).group.is_none() {
                    let g = self.new_group();
                    self.mount_mut(p).group = Some(g);
                }
                self.mount_mut(p).unbindable = false;
            }
            copies = self.propagate_mnt(dest, &key, src);
        }
        if moving {
            self.detach_one(src);
        }
        for (n, copy) in copies {
            let under = self.mounted_on.get(&(n, key.clone())).copied();
            if let Some(q) = under {
                let mut top = copy;
                while let Some(o) = self.overmount(top) {
                    top = o;
                }
                let top_key = self.mount(top).root_key.clone();
                self.move_mount(q, top, top_key);
            }
            self.attach(copy, n, key.clone());
        }
        self.attach(src, dest, key);
    }

    /// propagate_mnt: the copies of the tree at `src` for the mounts that
    /// receive propagation from `dest` and see `key` (need_secondary), as
    /// (receiving mount, unattached copy) pairs. Copies in `dest`'s peers
    /// are peers of the originals; copies in a slave are slaves of the
    /// copies in the nearest group up its chain of masters that received
    /// one (`dest`'s own group: the originals), and peers of each other
    /// within a shared slave's group (find_master, CL_SLAVE,
    /// CL_MAKE_SHARED).
    fn propagate_mnt(
        &mut self,
        dest: MountId,
        key: &MpKey,
        src: MountId,
    ) -> Vec<(MountId, MountId)> {
        let g = self.mount(dest).group.expect("model: shared destination");
        // Plan first (the copies are not receivers), then copy.
        type Rel = HashMap<MountId, Links>;
        let mut plan: Vec<(MountId, Rel)> = Vec::new();
        let originals = self.subtree(src);
        let own: HashMap<MountId, GroupId> = originals
            .iter()
            .map(|&o| (o, self.mount(o).group.expect("model: invented group")))
            .collect();
        let peer_rel: Rel = originals
            .iter()
            .map(|&o| (o, (Some(own[&o]), self.mount(o).master)))
            .collect();
        for n in self.group_members(g) {
            if n != dest && self.key_under_root(key, n) {
                plan.push((n, peer_rel.clone()));
            }
        }
        // The slaves, group by group down the master tree, each with the
        // groups of the copies its copies are to be slaves of.
        let mut queue = vec![(g, own)];
        while let Some((g, masters)) = queue.pop() {
            let mut done = HashSet::new();
            for s in self.group_slaves(g) {
                let sg = self.mount(s).group;
                if let Some(sg) = sg {
                    if !done.insert(sg) {
                        continue;
                    }
                }
                let members = match sg {
                    Some(sg) => self.group_members(sg),
                    None => vec![s],
                };
                let receiving: Vec<MountId> = members
                    .into_iter()
                    .filter(|&n| self.key_under_root(key, n))
                    .collect();
                let mut groups = masters.clone();
                if !receiving.is_empty() {
                    let mut rel = Rel::new();
                    for &o in &originals {
                        let copy_group = sg.map(|_| self.new_group());
                        if let Some(cg) = copy_group {
                            groups.insert(o, cg);
                        }
                        rel.insert(o, (copy_group, Some(masters[&o])));
                    }
                    for n in receiving {
                        plan.push((n, rel.clone()));
                    }
                }
                if let Some(sg) = sg {
                    queue.push((sg, groups));
                }
            }
        }
        let (root, root_key) = {
            let m = self.mount(src);
            (m.root, m.root_key.clone())
        };
        plan.into_iter()
            .map(|(n, rel)| {
                let copy = self.clone_tree(src, root, root_key.clone(), true, &|_, o| rel[&o]);
                (n, copy)
            })
            .collect()
    }

    /// propagate_mount_busy, past the caller's own check of `m` (no
    /// submounts, no users): unmounting `m` would also unmount, in every
    /// mount receiving propagation from its parent, the mount on the same
    /// dentry; one of those is busy when it has users and no submounts
    /// other than one covering it whole (on its root).
    pub(crate) fn propagate_mount_busy(&self, m: MountId) -> bool {
        let Some((parent, key)) = self.mount(m).parent.clone() else {
            return false;
        };
        self.receivers(parent).into_iter().any(|q| {
            let Some(&c) = self.mounted_on.get(&(q, key.clone())) else {
                return false;
            };
            let cm = self.mount(c);
            let pullable =
                cm.children.is_empty() || (cm.children.len() == 1 && self.overmount(c).is_some());
            pullable && cm.refs > 0
        })
    }

    /// umount_tree(m, UMOUNT_PROPAGATE): unmounts `m` and every mount
    /// beneath it, plus what propagate_umount (6.16+) adds: in each mount
    /// receiving propagation from the parent of an unmounted mount, the
    /// mount on the same dentry (gather_candidates), kept when it would
    /// reveal or shift a mount that stays: a candidate goes only if each
    /// of its submounts either goes with its whole subtree (the mounts of
    /// the set count as going) or is the one mount covering its root
    /// (trim_one, trim_ancestors); such a covering
    /// mount that stays slides down to where the bottom of the unmounted
    /// stack was (reparent). Every unmounted mount becomes private, its
    /// slaves passing to a surviving peer or master (bulk_make_private).
    pub(crate) fn umount_tree(&mut self, m: MountId) {
        let set = self.subtree(m);
        let in_set: HashSet<MountId> = set.iter().copied().collect();
        // gather_candidates
        let mut candidates = BTreeSet::new();
        for &x in &set {
            let (p, key) = self
                .mount(x)
                .parent
                .clone()
                .expect("model: unmounting a root");
            for q in self.receivers(p) {
                if let Some(&c) = self.mounted_on.get(&(q, key.clone())) {
                    if !in_set.contains(&c) {
                        candidates.insert(c);
                    }
                }
            }
        }
        // trim_one / trim_ancestors / handle_locked, as their fixpoint.
        let mut ok = candidates;
        loop {
            let rejected: Vec<MountId> = ok
                .iter()
                .copied()
                .filter(|&c| {
                    let over = self.overmount(c);
                    self.mount(c)
                        .children
                        .iter()
                        .any(|&n| Some(n) != over && !self.goes_whole(n, &ok, &in_set))
                })
                .collect();
            if rejected.is_empty() {
                break;
            }
            for c in rejected {
                ok.remove(&c);
            }
        }
        let gone: Vec<MountId> = set.iter().copied().chain(ok.iter().copied()).collect();
        let gone_set: HashSet<MountId> = gone.iter().copied().collect();
        // reparent: a staying mount on the root of an unmounted candidate
        // goes where the bottom of the unmounted stack was.
        let mut reparent = Vec::new();
        for &c in &ok {
            if let Some(o) = self.overmount(c).filter(|o| !gone_set.contains(o)) {
                let mut p = o;
                let at = loop {
                    let (pp, mp) = self.mount(p).parent.clone().expect("model: attached");
                    if !gone_set.contains(&pp) {
                        break (pp, mp);
                    }
                    p = pp;
                };
                reparent.push((o, at));
            }
        }
        self.bulk_make_private(&gone_set);
        for &(o, _) in &reparent {
            self.detach_one(o);
        }
        self.detach_mounts(&gone);
        for (o, (p, mp)) in reparent {
            self.attach(o, p, mp);
        }
    }

    /// Whether `n` goes with everything beneath it: it is in the set being
    /// unmounted (umount_tree hides those from their parents' lists of
    /// submounts before propagate_umount looks), or a candidate still
    /// accepted.
    fn goes_whole(&self, n: MountId, ok: &BTreeSet<MountId>, set: &HashSet<MountId>) -> bool {
        set.contains(&n)
            || (ok.contains(&n)
                && self
                    .mount(n)
                    .children
                    .iter()
                    .all(|&c| self.goes_whole(c, ok, set)))
    }

    /// bulk_make_private: the mounts of `gone` (still attached) lose their
    /// group and master; the slaves of a group left with no mount pass to
    /// the nearest group up its chain of masters that keeps one (or become
    /// private).
    fn bulk_make_private(&mut self, gone: &HashSet<MountId>) {
        let survives =
            |st: &State, g: GroupId| st.group_members(g).iter().any(|m| !gone.contains(m));
        let master_of = |st: &State, g: GroupId| {
            st.group_members(g)
                .first()
                .and_then(|&m| st.mount(m).master)
        };
        let groups: BTreeSet<GroupId> = gone.iter().filter_map(|&m| self.mount(m).group).collect();
        let mut transfers = Vec::new();
        for g in groups {
            if survives(self, g) {
                continue;
            }
            let mut to = master_of(self, g);
            while let Some(h) = to {
                if survives(self, h) {
                    break;
                }
                to = master_of(self, h);
            }
            for s in self.group_slaves(g) {
                if !gone.contains(&s) {
                    transfers.push((s, to));
                }
            }
        }
        for (s, to) in transfers {
            self.mount_mut(s).master = to;
        }
        for &m in gone {
            let mnt = self.mount_mut(m);
            mnt.group = None;
            mnt.master = None;
        }
    }
}
