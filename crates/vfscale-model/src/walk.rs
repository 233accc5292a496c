//! Path resolution, as Linux's fs/namei.c does it (link_path_walk,
//! walk_component, follow_dotdot, handle_mounts), plus getcwd's d_path.
//!
//! Invariants and rules kept:
//! - every component looked up, the last one included, first needs search
//!   (exec) permission on the directory it is looked up in (may_lookup);
//!   a path that is only slashes needs none;
//! - a non-directory reached before the last component is ENOTDIR;
//! - a lookup in a removed directory is ENOENT; a name over 255 bytes is
//!   ENAMETOOLONG when it is looked up (not before);
//! - symlinks are expanded textually: the body replaces the component and is
//!   walked from the symlink's directory (from the process root if absolute);
//!   each expansion counts, the 41st is ELOOP; a trailing slash forces the
//!   last symlink to be followed and requires a directory;
//! - ".." never leaves the process root, climbs out of mount roots to the
//!   mountpoint, and crosses into whatever is mounted on the result; "."
//!   does nothing;
//! - after a normal component, mounts stacked on the result are entered.

use crate::node::NodeId;
use crate::perm::{permission, MAY_EXEC};
use crate::state::*;
use std::sync::Arc;
use vfscale::abi::*;
use vfscale::{Cred, Fd};

/// The calling process's view for one operation.
pub(crate) struct Ctx {
    pub pid: Pid,
    pub cred: Arc<Cred>,
    pub root: Loc,
    pub cwd: Loc,
}

/// The last component of a path walked up to its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Last {
    /// The path was only slashes.
    Root,
    Dot,
    DotDot,
    Normal(Vec<u8>),
}

/// A path walked up to (not including) its last component.
pub(crate) struct Parent {
    pub dir: Loc,
    pub last: Last,
    /// The last component was followed by a slash.
    pub trailing: bool,
}

/// getname(): a NUL inside is EINVAL (the API's rule), PATH_MAX bytes or
/// more ENAMETOOLONG, empty ENOENT unless `empty_ok`.
pub(crate) fn check_path(path: &[u8], empty_ok: bool) -> SysResult<()> {
    if path.contains(&0) {
        return Err(Errno::EINVAL);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if path.is_empty() && !empty_ok {
        return Err(Errno::ENOENT);
    }
    Ok(())
}

impl State {
    pub(crate) fn ctx(&self, pid: Pid) -> Ctx {
        let p = self.proc(pid);
        Ctx {
            pid,
            cred: p.cred.clone(),
            root: p.root,
            cwd: p.cwd,
        }
    }

    /// Where a walk of `path` relative to `dirfd` starts (path_init): the
    /// root for an absolute path (dirfd unused), else the cwd or the fd's
    /// location, which must be a directory unless the path is empty.
    pub(crate) fn start_loc(&self, ctx: &Ctx, dirfd: Fd, path: &[u8]) -> SysResult<Loc> {
        if path.first() == Some(&b'/') {
            return Ok(ctx.root);
        }
        if dirfd == AT_FDCWD {
            return Ok(ctx.cwd);
        }
        let f = self.fd_raw(ctx.pid, dirfd)?;
        let loc = self.file(f).loc;
        if !path.is_empty() && !self.is_dir(loc.node) {
            return Err(Errno::ENOTDIR);
        }
        Ok(loc)
    }

    fn may_lookup(&self, cred: &Cred, dir: Loc) -> SysResult<()> {
        permission(cred, self.node(dir.node), MAY_EXEC)
    }

    /// Looks `name` up in directory `dir` (no permission check, no mounts).
    pub(crate) fn lookup(&self, dir: NodeId, name: &[u8]) -> SysResult<NodeId> {
        let d = self.node(dir).dir();
        if d.dead {
            return Err(Errno::ENOENT);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        d.get(name).ok_or(Errno::ENOENT)
    }

    /// Like `lookup` but a missing name is `Ok(None)` (the create side).
    pub(crate) fn lookup_maybe(&self, dir: NodeId, name: &[u8]) -> SysResult<Option<NodeId>> {
        match self.lookup(dir, name) {
            Ok(n) => Ok(Some(n)),
            Err(Errno::ENOENT) if !self.node(dir).is_dead_dir() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The mountpoint key of `child`, found as `name` in `parent`.
    pub(crate) fn child_key(&self, parent: NodeId, name: &[u8], child: NodeId) -> MpKey {
        if self.is_dir(child) {
            MpKey::Dir(child)
        } else {
            MpKey::Name(parent, name.to_vec())
        }
    }

    /// Enters the mounts stacked on `loc` (whose dentry is `key`).
    pub(crate) fn traverse(&self, mut loc: Loc, mut key: MpKey) -> (Loc, MpKey) {
        if self.mounted_on.is_empty() {
            return (loc, key);
        }
        while let Some(&m) = self.mounted_on.get(&(loc.mnt, key.clone())) {
            let mnt = self.mount(m);
            loc = Loc {
                mnt: m,
                node: mnt.root,
            };
            key = mnt.root_key.clone();
        }
        (loc, key)
    }

    /// True if directory `d` is `anc` or below it (is_subdir).
    pub(crate) fn is_subdir(&self, mut d: NodeId, anc: NodeId) -> bool {
        loop {
            if d == anc {
                return true;
            }
            let p = self.node(d).dir().parent;
            if p == d {
                return false;
            }
            d = p;
        }
    }

    /// follow_dotdot + step_into.
    pub(crate) fn dotdot(&self, ctx: &Ctx, loc: Loc) -> SysResult<Loc> {
        let stay = |st: &State| st.traverse(loc, MpKey::Dir(loc.node)).0;
        if loc == ctx.root {
            return Ok(stay(self));
        }
        let mut cur = loc;
        if cur.node == self.mount(cur.mnt).root {
            // choose_mountpoint: climb to the first mountpoint that is not
            // itself a mount root; the process root or a parentless mount
            // stops the climb and ".." stays where it was.
            let mut m = cur.mnt;
            loop {
                let Some((pm, key)) = self.mount(m).parent.clone() else {
                    return Ok(stay(self));
                };
                let MpKey::Dir(mp) = key else {
                    unreachable!("model: a directory mounted on a non-directory");
                };
                if (Loc { mnt: pm, node: mp }) == ctx.root {
                    return Ok(stay(self));
                }
                if mp != self.mount(pm).root {
                    cur = Loc { mnt: pm, node: mp };
                    break;
                }
                m = pm;
            }
        }
        let parent = self.node(cur.node).dir().parent;
        // path_connected: in a bind mount of a subtree, a ".." that left the
        // subtree (its directory was moved out) is ENOENT.
        let mnt = self.mount(cur.mnt);
        let fs_root = self.fses[&mnt.dev].root;
        if mnt.root != fs_root && !self.is_subdir(parent, mnt.root) {
            return Err(Errno::ENOENT);
        }
        let l = Loc {
            mnt: cur.mnt,
            node: parent,
        };
        Ok(self.traverse(l, MpKey::Dir(parent)).0)
    }

    /// Counts one symlink expansion (MAXSYMLINKS = 40 allowed).
    fn count_link(links: &mut u32) -> SysResult<()> {
        if *links >= MAXSYMLINKS {
            return Err(Errno::ELOOP);
        }
        *links += 1;
        Ok(())
    }

    /// Reads a symlink body while following it (pick_link: ELOOP on a
    /// nosymfollow mount; touches its atime).
    pub(crate) fn follow_body(&mut self, loc: Loc) -> SysResult<Vec<u8>> {
        if self.mount(loc.mnt).flags.nosymfollow {
            return Err(Errno::ELOOP);
        }
        self.touch_atime(loc.mnt, loc.node);
        Ok(self.node(loc.node).link_target().to_vec())
    }

    /// Walks `path` from `start` up to its last component (link_path_walk).
    /// `path` must be non-empty and already checked.
    pub(crate) fn walk_parent(
        &mut self,
        ctx: &Ctx,
        start: Loc,
        path: &[u8],
        links: &mut u32,
    ) -> SysResult<Parent> {
        let mut buf = path.to_vec();
        let mut cur = start;
        let mut i = 0;
        if buf.first() == Some(&b'/') {
            cur = ctx.root;
            while i < buf.len() && buf[i] == b'/' {
                i += 1;
            }
            if i == buf.len() {
                return Ok(Parent {
                    dir: cur,
                    last: Last::Root,
                    trailing: false,
                });
            }
        }
        loop {
            self.may_lookup(&ctx.cred, cur)?;
            let s = i;
            while i < buf.len() && buf[i] != b'/' {
                i += 1;
            }
            let comp = buf[s..i].to_vec();
            let slash = i < buf.len();
            while i < buf.len() && buf[i] == b'/' {
                i += 1;
            }
            if i == buf.len() {
                let last = match &comp[..] {
                    b"." => Last::Dot,
                    b".." => Last::DotDot,
                    _ => Last::Normal(comp),
                };
                return Ok(Parent {
                    dir: cur,
                    last,
                    trailing: slash,
                });
            }
            match &comp[..] {
                b"." => {}
                b".." => cur = self.dotdot(ctx, cur)?,
                name => {
                    let child = self.lookup(cur.node, name)?;
                    let key = self.child_key(cur.node, name, child);
                    let (loc, _) = self.traverse(
                        Loc {
                            mnt: cur.mnt,
                            node: child,
                        },
                        key,
                    );
                    if self.node(loc.node).is_symlink() {
                        Self::count_link(links)?;
                        let mut body = self.follow_body(loc)?;
                        body.push(b'/');
                        body.extend_from_slice(&buf[i..]);
                        buf = body;
                        i = 0;
                        if buf[0] == b'/' {
                            cur = ctx.root;
                            while buf[i] == b'/' {
                                i += 1;
                            }
                        }
                        continue;
                    }
                    cur = loc;
                }
            }
            if !self.is_dir(cur.node) {
                return Err(Errno::ENOTDIR);
            }
        }
    }

    /// Resolves the last component of a parent walk (lookup_last); if it is
    /// a symlink to follow, returns the path to walk next instead.
    pub(crate) fn resolve_last(
        &mut self,
        ctx: &Ctx,
        p: &Parent,
        follow: bool,
        links: &mut u32,
    ) -> SysResult<Result<(Loc, MpKey), Vec<u8>>> {
        match &p.last {
            Last::Root | Last::Dot => Ok(Ok((p.dir, MpKey::Dir(p.dir.node)))),
            Last::DotDot => {
                let l = self.dotdot(ctx, p.dir)?;
                Ok(Ok((l, MpKey::Dir(l.node))))
            }
            Last::Normal(name) => {
                let child = self.lookup(p.dir.node, name)?;
                let key = self.child_key(p.dir.node, name, child);
                let (loc, key) = self.traverse(
                    Loc {
                        mnt: p.dir.mnt,
                        node: child,
                    },
                    key,
                );
                if self.node(loc.node).is_symlink() && (follow || p.trailing) {
                    Self::count_link(links)?;
                    let mut body = self.follow_body(loc)?;
                    if p.trailing {
                        body.push(b'/');
                    }
                    return Ok(Err(body));
                }
                if p.trailing && !self.is_dir(loc.node) {
                    return Err(Errno::ENOTDIR);
                }
                Ok(Ok((loc, key)))
            }
        }
    }

    /// Walks a whole non-empty, checked path (path_lookupat); `follow`
    /// follows a final symlink. Does not count as a use of the mount.
    pub(crate) fn walk_full_raw(
        &mut self,
        ctx: &Ctx,
        start: Loc,
        path: &[u8],
        follow: bool,
    ) -> SysResult<(Loc, MpKey)> {
        let mut links = 0;
        let mut start = start;
        let mut path = path.to_vec();
        loop {
            let p = self.walk_parent(ctx, start, &path, &mut links)?;
            match self.resolve_last(ctx, &p, follow, &mut links)? {
                Ok(r) => return Ok(r),
                Err(next) => {
                    path = next;
                    start = p.dir;
                }
            }
        }
    }

    /// `walk_full_raw` that counts as a use of the resulting mount.
    pub(crate) fn walk_full(
        &mut self,
        ctx: &Ctx,
        start: Loc,
        path: &[u8],
        follow: bool,
    ) -> SysResult<Loc> {
        let (loc, _) = self.walk_full_raw(ctx, start, path, follow)?;
        self.touch_mnt(loc.mnt);
        Ok(loc)
    }

    /// user_path_at: checks `path`, and resolves it relative to `dirfd`;
    /// with `empty_ok` an empty path names `dirfd` itself (AT_EMPTY_PATH).
    pub(crate) fn resolve_at(
        &mut self,
        ctx: &Ctx,
        dirfd: Fd,
        path: &[u8],
        follow: bool,
        empty_ok: bool,
    ) -> SysResult<Loc> {
        check_path(path, empty_ok)?;
        let start = self.start_loc(ctx, dirfd, path)?;
        if path.is_empty() {
            return Ok(start);
        }
        self.walk_full(ctx, start, path, follow)
    }

    /// filename_parentat: checks `path` and walks it to its parent.
    pub(crate) fn resolve_parent(
        &mut self,
        ctx: &Ctx,
        dirfd: Fd,
        path: &[u8],
    ) -> SysResult<Parent> {
        check_path(path, false)?;
        let start = self.start_loc(ctx, dirfd, path)?;
        let p = self.walk_parent(ctx, start, path, &mut 0)?;
        self.touch_mnt(p.dir.mnt);
        Ok(p)
    }

    /// getcwd(2): the cwd's path from the process root; "(unreachable)" in
    /// front if the walk up meets the namespace root or a detached mount
    /// without passing the process root ("(unreachable)/" if it escaped a
    /// bind's subtree); ENOENT for a removed cwd;
    /// ENAMETOOLONG past PATH_MAX bytes (with the NUL).
    pub(crate) fn getcwd(&self, ctx: &Ctx) -> SysResult<Vec<u8>> {
        let cwd = ctx.cwd;
        if self.node(cwd.node).is_dead_dir() {
            return Err(Errno::ENOENT);
        }
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut cur = cwd;
        let mut unreachable = false;
        while cur != ctx.root {
            let m = self.mount(cur.mnt);
            if cur.node == m.root {
                match &m.parent {
                    Some((pm, MpKey::Dir(mp))) => {
                        cur = Loc {
                            mnt: *pm,
                            node: *mp,
                        };
                        continue;
                    }
                    _ => {
                        unreachable = true;
                        break;
                    }
                }
            }
            let d = self.node(cur.node).dir();
            let parent = d.parent;
            if parent == cur.node {
                // Its filesystem's root but not the mount's: a directory
                // moved out of a bind's subtree. prepend_path's "escaped"
                // drops the names.
                names.clear();
                unreachable = true;
                break;
            }
            names.push(d.name.clone());
            cur = Loc {
                mnt: cur.mnt,
                node: parent,
            };
        }
        let mut out = Vec::new();
        if unreachable {
            out.extend_from_slice(b"(unreachable)");
        }
        if names.is_empty() {
            out.push(b'/');
        }
        for n in names.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(n);
        }
        if out.len() + 1 > PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok(out)
    }
}
