//! POSIX ACLs in the model, written from POSIX.1e draft 17 and Linux's
//! rules as plainly as possible (no shared code with vfscale's
//! cred/acl.rs, so the two can disagree).
//!
//! Invariants:
//! - A node's ACLs (`Node::access_acl`, `Node::default_acl`) are decoded
//!   entry lists that passed `check`: ranks in order (owner, named users,
//!   owning group, named groups, mask, other), the three base entries once,
//!   a mask whenever a named entry exists, permissions within rwx, base
//!   entries' ids -1.
//! - An access ACL's owner, mask-or-owning-group and other permissions are
//!   the node's rwx bits (set from it, kept by `chmod`); an ACL the mode
//!   bits say in full is not kept.

use crate::node::Node;
use vfscale::abi::*;
use vfscale::Cred;

pub(crate) const ACCESS: &[u8] = b"system.posix_acl_access";
pub(crate) const DEFAULT: &[u8] = b"system.posix_acl_default";

const USER_OBJ: u16 = 1;
const USER: u16 = 2;
const GROUP_OBJ: u16 = 4;
const GROUP: u16 = 8;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;
const NO_ID: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Entry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

pub(crate) type Acl = Vec<Entry>;

/// The value setxattr got, as Linux reads it: `None` for a header with no
/// entries; EINVAL for a bad length, tag or named id; EOPNOTSUPP for
/// another version.
pub(crate) fn decode(value: &[u8]) -> SysResult<Option<Acl>> {
    if value.len() < 4 {
        return Err(Errno::EINVAL);
    }
    if u32::from_le_bytes(value[..4].try_into().unwrap()) != 2 {
        return Err(Errno::EOPNOTSUPP);
    }
    let body = &value[4..];
    if !body.len().is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    if body.is_empty() {
        return Ok(None);
    }
    let mut acl = Vec::new();
    for c in body.chunks(8) {
        let tag = u16::from_le_bytes([c[0], c[1]]);
        let perm = u16::from_le_bytes([c[2], c[3]]);
        let id = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        let id = match tag {
            USER_OBJ | GROUP_OBJ | MASK | OTHER => NO_ID,
            USER | GROUP if id != NO_ID => id,
            _ => return Err(Errno::EINVAL),
        };
        acl.push(Entry { tag, perm, id });
    }
    Ok(Some(acl))
}

/// The attribute form.
pub(crate) fn encode(acl: &[Entry]) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for e in acl {
        v.extend_from_slice(&e.tag.to_le_bytes());
        v.extend_from_slice(&e.perm.to_le_bytes());
        v.extend_from_slice(&e.id.to_le_bytes());
    }
    v
}

fn rank(tag: u16) -> usize {
    [USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER]
        .iter()
        .position(|&t| t == tag)
        .unwrap_or(usize::MAX)
}

/// Well-formedness (EINVAL otherwise): ranks never go down, one each of
/// owner, owning group and other, at most one mask, a mask if anything is
/// named, permissions within rwx.
pub(crate) fn check(acl: &[Entry]) -> SysResult<()> {
    let count = |tag| acl.iter().filter(|e| e.tag == tag).count();
    let ordered = acl.windows(2).all(|w| rank(w[0].tag) <= rank(w[1].tag));
    let named = count(USER) + count(GROUP) > 0;
    let ok = ordered
        && count(USER_OBJ) == 1
        && count(GROUP_OBJ) == 1
        && count(OTHER) == 1
        && count(MASK) <= 1
        && (!named || count(MASK) == 1)
        && acl.iter().all(|e| e.perm <= 7);
    if ok {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

fn perm_of(acl: &[Entry], tag: u16) -> Option<u16> {
    acl.iter().find(|e| e.tag == tag).map(|e| e.perm)
}

/// Whether the base entries and no mask say it all (the mode suffices).
pub(crate) fn mode_says_all(acl: &[Entry]) -> bool {
    acl.len() == 3
}

/// The rwx bits an ACL gives the mode: owner, mask (else owning group),
/// other.
pub(crate) fn mode_bits(acl: &[Entry]) -> u32 {
    let p = |tag| u32::from(perm_of(acl, tag).unwrap_or(0));
    let group = perm_of(acl, MASK).unwrap_or_else(|| perm_of(acl, GROUP_OBJ).unwrap_or(0));
    p(USER_OBJ) << 6 | u32::from(group) << 3 | p(OTHER)
}

/// Sets the owner, mask-or-owning-group and other entries to `mode`'s
/// rwx bits (chmod).
pub(crate) fn follow_mode(acl: &mut [Entry], mode: u32) {
    let has_mask = perm_of(acl, MASK).is_some();
    for e in acl.iter_mut() {
        let bits = match e.tag {
            USER_OBJ => mode >> 6,
            MASK => mode >> 3,
            GROUP_OBJ if !has_mask => mode >> 3,
            OTHER => mode,
            _ => continue,
        };
        e.perm = (bits & 7) as u16;
    }
}

/// A new node's access ACL from its directory's default ACL and the
/// requested `mode`: each base class keeps only what both grant, and the
/// mode's rwx bits become those. Returns the ACL (None when the mode says
/// it all) and the mode.
pub(crate) fn inherit(default: &[Entry], mode: u32) -> (Option<Acl>, u32) {
    let mut acl = default.to_vec();
    let both = |tag, shift: u32| perm_of(&acl, tag).unwrap_or(0) & ((mode >> shift) & 7) as u16;
    let group_tag = if perm_of(&acl, MASK).is_some() {
        MASK
    } else {
        GROUP_OBJ
    };
    let (u, g, o) = (both(USER_OBJ, 6), both(group_tag, 3), both(OTHER, 0));
    for e in acl.iter_mut() {
        if e.tag == USER_OBJ {
            e.perm = u;
        } else if e.tag == group_tag {
            e.perm = g;
        } else if e.tag == OTHER {
            e.perm = o;
        }
    }
    let mode = (mode & !0o777) | u32::from(u) << 6 | u32::from(g) << 3 | u32::from(o);
    let keep = !mode_says_all(&acl);
    (keep.then_some(acl), mode)
}

/// Access by the ACL for a caller who is not the owner: a named user
/// entry of theirs (limited by the mask); else the group entries of
/// theirs (owning group and named), one of which must grant everything
/// asked within the mask, EACCES if none does; else other.
pub(crate) fn allows(acl: &[Entry], cred: &Cred, node: &Node, want: u32) -> bool {
    let want = (want & 7) as u16;
    let mask = perm_of(acl, MASK).unwrap_or(7);
    let has = |perm: u16| perm & want == want;
    if let Some(e) = acl.iter().find(|e| e.tag == USER && e.id == cred.fsuid) {
        return has(e.perm & mask);
    }
    let mine: Vec<u16> = acl
        .iter()
        .filter(|e| {
            (e.tag == GROUP_OBJ && cred.in_group(node.gid))
                || (e.tag == GROUP && cred.in_group(e.id))
        })
        .map(|e| e.perm)
        .collect();
    if !mine.is_empty() {
        return mine.iter().any(|&p| has(p & mask));
    }
    has(perm_of(acl, OTHER).unwrap_or(0))
}
