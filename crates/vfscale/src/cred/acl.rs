//! POSIX access control lists as Linux keeps them (fs/posix_acl.c), as
//! pure functions over their extended-attribute form.
//!
//! An ACL lives in the superblock's attribute table (inode/xattr.rs) under
//! `system.posix_acl_access` or `system.posix_acl_default`, in the byte
//! form getxattr returns: a little-endian `u32` version (2), then 8-byte
//! entries (`u16` tag, `u16` permission bits, `u32` id). inode/acl.rs keeps
//! the table and the inode's mode in step; this module only reads and
//! rewrites byte strings.
//!
//! Invariants:
//! - A stored ACL passed `parse` and `check_valid`: its entries are in
//!   Linux's order (owner, named users, owning group, named groups, mask,
//!   other; a mask whenever a named entry exists), each permission is at
//!   most rwx, and the ids of the four unnamed entries read
//!   `ACL_UNDEFINED_ID`, as posix_acl_to_xattr writes them. Named ids are
//!   neither sorted nor deduplicated: Linux accepts any order of them.
//! - The owner, owning-group-or-mask and other entries of an access ACL
//!   agree with the inode's mode bits (`equiv_mode` when set, `chmod_masq`
//!   on every chmod), so the mode alone answers the owner's and the
//!   "other" class's checks, as generic_permission assumes.

use super::Cred;
use crate::abi::{Errno, S_IRWXG, S_IRWXO, S_IRWXU};

/// The attribute names of the two ACLs.
pub const XATTR_ACCESS: &[u8] = b"system.posix_acl_access";
pub const XATTR_DEFAULT: &[u8] = b"system.posix_acl_default";

/// Entry tags (include/uapi/linux/posix_acl.h).
pub const ACL_USER_OBJ: u16 = 0x01;
pub const ACL_USER: u16 = 0x02;
pub const ACL_GROUP_OBJ: u16 = 0x04;
pub const ACL_GROUP: u16 = 0x08;
pub const ACL_MASK: u16 = 0x10;
pub const ACL_OTHER: u16 = 0x20;
/// The id stored for an entry that names no user or group.
pub const ACL_UNDEFINED_ID: u32 = u32::MAX;
/// `POSIX_ACL_XATTR_VERSION`.
const VERSION: u32 = 2;
const HEADER: usize = 4;
const ENTRY: usize = 8;
const PERM_BITS: u16 = 0o7;

/// Bits of an inode's mode word above the file type that say which ACLs
/// its superblock's table holds for it, so a permission check or a create
/// looks at the table only when there is something to find. They never
/// leave the inode: `stat` and `attr` mask them out.
pub const MODE_ACCESS_ACL: u32 = 1 << 16;
pub const MODE_DEFAULT_ACL: u32 = 1 << 17;
pub const MODE_ACL_BITS: u32 = MODE_ACCESS_ACL | MODE_DEFAULT_ACL;
const _: () = assert!(MODE_ACL_BITS & (crate::abi::S_IFMT | crate::abi::S_IALLUGO) == 0);

/// Which of the two ACLs a name means.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AclKind {
    Access,
    Default,
}

impl AclKind {
    /// The kind an attribute name names, if it is one of the two.
    pub fn of_name(name: &[u8]) -> Option<AclKind> {
        match name {
            XATTR_ACCESS => Some(AclKind::Access),
            XATTR_DEFAULT => Some(AclKind::Default),
            _ => None,
        }
    }

    pub fn name(self) -> &'static [u8] {
        match self {
            AclKind::Access => XATTR_ACCESS,
            AclKind::Default => XATTR_DEFAULT,
        }
    }

    /// The mode-word bit that says the inode has one.
    pub fn mode_bit(self) -> u32 {
        match self {
            AclKind::Access => MODE_ACCESS_ACL,
            AclKind::Default => MODE_DEFAULT_ACL,
        }
    }
}

/// One entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AclEntry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

/// The entries of a stored (already checked) ACL.
pub fn entries(bytes: &[u8]) -> impl Iterator<Item = AclEntry> + '_ {
    bytes
        .get(HEADER..)
        .unwrap_or(&[])
        .chunks_exact(ENTRY)
        .map(|e| AclEntry {
            tag: u16::from_le_bytes([e[0], e[1]]),
            perm: u16::from_le_bytes([e[2], e[3]]),
            id: u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
        })
}

/// The attribute form of `entries`.
pub fn to_bytes(entries: &[AclEntry]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(HEADER + ENTRY * entries.len());
    out.extend_from_slice(&VERSION.to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.tag.to_le_bytes());
        out.extend_from_slice(&e.perm.to_le_bytes());
        out.extend_from_slice(&e.id.to_le_bytes());
    }
    out.into()
}

/// An ACL attribute value from (tag, permission bits, id) triples, in the
/// order given: what setxattr of an ACL name takes (for embedders and
/// tests; nothing is checked here).
pub fn value_of(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let entries: Vec<AclEntry> = entries
        .iter()
        .map(|&(tag, perm, id)| AclEntry { tag, perm, id })
        .collect();
    to_bytes(&entries).into_vec()
}

/// posix_acl_from_xattr: the entries of a value setxattr was given, or
/// `None` for a header with no entries (which removes the ACL). EINVAL for
/// a short or ragged value, an unknown tag or a named entry with id -1;
/// EOPNOTSUPP for another version. The ids of unnamed entries are
/// normalised to `ACL_UNDEFINED_ID`. Order and permissions are
/// `check_valid`'s business, later.
pub fn parse(value: &[u8]) -> Result<Option<Vec<AclEntry>>, Errno> {
    if value.len() < HEADER {
        return Err(Errno::EINVAL);
    }
    if value[..HEADER] != VERSION.to_le_bytes() {
        return Err(Errno::EOPNOTSUPP);
    }
    if !(value.len() - HEADER).is_multiple_of(ENTRY) {
        return Err(Errno::EINVAL);
    }
    if value.len() == HEADER {
        return Ok(None);
    }
    let mut out = Vec::with_capacity((value.len() - HEADER) / ENTRY);
    for mut e in entries(value) {
        match e.tag {
            ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => e.id = ACL_UNDEFINED_ID,
            ACL_USER | ACL_GROUP if e.id != ACL_UNDEFINED_ID => {}
            _ => return Err(Errno::EINVAL),
        }
        out.push(e);
    }
    Ok(Some(out))
}

/// posix_acl_valid: the entries in order, each class once, a mask if
/// anything is named, permissions within rwx. EINVAL otherwise.
pub fn check_valid(entries: &[AclEntry]) -> Result<(), Errno> {
    #[derive(PartialEq)]
    enum State {
        UserObj,
        User,
        Group,
        Other,
        Done,
    }
    let mut state = State::UserObj;
    let mut needs_mask = false;
    for e in entries {
        if e.perm & !PERM_BITS != 0 {
            return Err(Errno::EINVAL);
        }
        state = match (e.tag, state) {
            (ACL_USER_OBJ, State::UserObj) => State::User,
            (ACL_USER, State::User) => {
                needs_mask = true;
                State::User
            }
            (ACL_GROUP_OBJ, State::User) => State::Group,
            (ACL_GROUP, State::Group) => {
                needs_mask = true;
                State::Group
            }
            (ACL_MASK, State::Group) => State::Other,
            (ACL_OTHER, State::Other) => State::Done,
            (ACL_OTHER, State::Group) if !needs_mask => State::Done,
            _ => return Err(Errno::EINVAL),
        };
    }
    if state == State::Done {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// posix_acl_equiv_mode: `mode` with its rwx bits taken from the ACL (the
/// mask's bits as the group class when there is one), and whether the ACL
/// says more than those bits (a mask or a named entry).
pub fn equiv_mode(entries: &[AclEntry], mode: u32) -> (u32, bool) {
    let mut bits = 0;
    let mut not_equiv = false;
    for e in entries {
        let p = u32::from(e.perm) & S_IRWXO;
        match e.tag {
            ACL_USER_OBJ => bits |= p << 6,
            ACL_GROUP_OBJ => bits |= p << 3,
            ACL_OTHER => bits |= p,
            ACL_MASK => {
                bits = (bits & !S_IRWXG) | (p << 3);
                not_equiv = true;
            }
            _ => not_equiv = true,
        }
    }
    ((mode & !(S_IRWXU | S_IRWXG | S_IRWXO)) | bits, not_equiv)
}

/// posix_acl_permission for a caller that is not the owner (the owner's
/// bits are the mode's, checked before): the first named user entry that
/// is the caller, limited by the mask; else any group entry of the
/// caller's that grants all of `want` (limited by the mask); else EACCES
/// if some group entry was the caller's; else the other entry.
pub fn permission(
    bytes: &[u8],
    cred: &Cred,
    inode_uid: u32,
    inode_gid: u32,
    want: u32,
) -> Result<(), Errno> {
    let want = (want & 0o7) as u16;
    let mask = entries(bytes)
        .find(|e| e.tag == ACL_MASK)
        .map_or(PERM_BITS, |e| e.perm);
    let grants = |perm: u16, masked: bool| {
        let perm = if masked { perm & mask } else { perm };
        if perm & want == want {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    };
    let mut found_group = false;
    for e in entries(bytes) {
        match e.tag {
            ACL_USER_OBJ if cred.fsuid == inode_uid => return grants(e.perm, false),
            ACL_USER if cred.fsuid == e.id => return grants(e.perm, true),
            ACL_GROUP_OBJ | ACL_GROUP => {
                let gid = if e.tag == ACL_GROUP_OBJ {
                    inode_gid
                } else {
                    e.id
                };
                if cred.in_group(gid) {
                    found_group = true;
                    if e.perm & want == want {
                        return grants(e.perm, true);
                    }
                }
            }
            ACL_OTHER if found_group => return Err(Errno::EACCES),
            ACL_OTHER => return grants(e.perm, false),
            _ => {}
        }
    }
    Err(Errno::EIO)
}

/// posix_acl_create_masq: a default ACL made into a new inode's access ACL
/// for a create with `mode` (umask not applied). The owner, other and
/// mask-or-owning-group entries lose what `mode` does not grant, and
/// `mode`'s rwx bits lose what they do not grant. Returns the new mode and
/// whether the ACL says more than it (a named entry or a mask).
pub fn create_masq(entries: &mut [AclEntry], mode: u32) -> (u32, bool) {
    let mut mode = mode;
    let mut not_equiv = false;
    let (mut group_obj, mut mask_obj) = (None, None);
    for (i, e) in entries.iter_mut().enumerate() {
        match e.tag {
            ACL_USER_OBJ => {
                e.perm &= ((mode >> 6) & S_IRWXO) as u16;
                mode &= (u32::from(e.perm) << 6) | !S_IRWXU;
            }
            ACL_USER | ACL_GROUP => not_equiv = true,
            ACL_GROUP_OBJ => group_obj = Some(i),
            ACL_OTHER => {
                e.perm &= (mode & S_IRWXO) as u16;
                mode &= u32::from(e.perm) | !S_IRWXO;
            }
            ACL_MASK => {
                mask_obj = Some(i);
                not_equiv = true;
            }
            _ => {}
        }
    }
    if let Some(i) = mask_obj.or(group_obj) {
        let e = &mut entries[i];
        e.perm &= ((mode >> 3) & S_IRWXO) as u16;
        mode &= (u32::from(e.perm) << 3) | !S_IRWXG;
    }
    (mode, not_equiv)
}

/// __posix_acl_chmod_masq: an access ACL after chmod to `mode`: the owner,
/// other and mask-or-owning-group entries take the mode's bits; named
/// entries stay.
pub fn chmod_masq(entries: &mut [AclEntry], mode: u32) {
    let mut group_slot = None;
    for (i, e) in entries.iter_mut().enumerate() {
        match e.tag {
            ACL_USER_OBJ => e.perm = ((mode & S_IRWXU) >> 6) as u16,
            ACL_OTHER => e.perm = (mode & S_IRWXO) as u16,
            ACL_MASK => group_slot = Some(i),
            ACL_GROUP_OBJ if group_slot.is_none() => group_slot = Some(i),
            _ => {}
        }
    }
    if let Some(i) = group_slot {
        entries[i].perm = ((mode & S_IRWXG) >> 3) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(tag: u16, perm: u16, id: u32) -> AclEntry {
        AclEntry { tag, perm, id }
    }

    /// u::rw-, u:1000:rwx, g::r--, g:50:-w-, m::r-x, o::---
    fn sample() -> Vec<AclEntry> {
        vec![
            e(ACL_USER_OBJ, 6, ACL_UNDEFINED_ID),
            e(ACL_USER, 7, 1000),
            e(ACL_GROUP_OBJ, 4, ACL_UNDEFINED_ID),
            e(ACL_GROUP, 2, 50),
            e(ACL_MASK, 5, ACL_UNDEFINED_ID),
            e(ACL_OTHER, 0, ACL_UNDEFINED_ID),
        ]
    }

    #[test]
    fn parse_round_trips_and_normalises_unnamed_ids() {
        let mut raw = sample();
        raw[0].id = 7;
        let parsed = parse(&to_bytes(&raw)).unwrap().unwrap();
        assert_eq!(parsed, sample());
        assert_eq!(to_bytes(&parsed), to_bytes(&sample()));
    }

    #[test]
    fn parse_errors_as_linux() {
        assert_eq!(parse(b"\x02\x00\x00"), Err(Errno::EINVAL));
        assert_eq!(parse(b"\x01\x00\x00\x00"), Err(Errno::EOPNOTSUPP));
        // The version is checked before the length's remainder.
        assert_eq!(parse(b"\x03\x00\x00\x00\x01"), Err(Errno::EOPNOTSUPP));
        assert_eq!(parse(b"\x02\x00\x00\x00\x01"), Err(Errno::EINVAL));
        assert_eq!(parse(b"\x02\x00\x00\x00"), Ok(None));
        assert_eq!(
            parse(&to_bytes(&[e(0x40, 0, 0)])),
            Err(Errno::EINVAL),
            "unknown tag"
        );
        assert_eq!(
            parse(&to_bytes(&[e(ACL_USER, 0, ACL_UNDEFINED_ID)])),
            Err(Errno::EINVAL),
            "named entry with id -1"
        );
    }

    #[test]
    fn validity_follows_posix_acl_valid() {
        assert_eq!(check_valid(&sample()), Ok(()));
        let minimal = [
            e(ACL_USER_OBJ, 7, 0),
            e(ACL_GROUP_OBJ, 5, 0),
            e(ACL_OTHER, 0, 0),
        ];
        assert_eq!(check_valid(&minimal), Ok(()));
        // A named entry needs a mask.
        let mut no_mask = sample();
        no_mask.remove(4);
        assert_eq!(check_valid(&no_mask), Err(Errno::EINVAL));
        // Out of order, missing, doubled, or with bits past rwx.
        let mut swapped = sample();
        swapped.swap(0, 1);
        assert_eq!(check_valid(&swapped), Err(Errno::EINVAL));
        assert_eq!(check_valid(&minimal[..2]), Err(Errno::EINVAL));
        assert_eq!(check_valid(&[]), Err(Errno::EINVAL));
        let mut wide = sample();
        wide[1].perm = 8;
        assert_eq!(check_valid(&wide), Err(Errno::EINVAL));
        // Duplicate named ids pass, as on Linux.
        let mut dup = sample();
        dup.insert(1, e(ACL_USER, 1, 1000));
        assert_eq!(check_valid(&dup), Ok(()));
    }

    #[test]
    fn equiv_mode_takes_the_mask_as_group_class() {
        assert_eq!(equiv_mode(&sample(), 0o104777), (0o104650, true));
        let minimal = [
            e(ACL_USER_OBJ, 7, 0),
            e(ACL_GROUP_OBJ, 5, 0),
            e(ACL_OTHER, 1, 0),
        ];
        assert_eq!(equiv_mode(&minimal, 0o100000), (0o100751, false));
    }

    #[test]
    fn permission_walks_entries_in_linux_order() {
        let acl = to_bytes(&sample());
        let user = |uid, gid, groups: &[u32]| Cred::user(uid, gid, groups);
        // Named user: its entry limited by the mask (rwx & r-x).
        assert_eq!(permission(&acl, &user(1000, 1, &[]), 0, 9, 4), Ok(()));
        assert_eq!(
            permission(&acl, &user(1000, 1, &[]), 0, 9, 2),
            Err(Errno::EACCES)
        );
        // The owning group grants read (r-- & r-x).
        assert_eq!(permission(&acl, &user(2, 9, &[]), 0, 9, 4), Ok(()));
        // Group 50's entry is -w- but the mask has no w: refused, and
        // "other" is not consulted once a group matched.
        assert_eq!(
            permission(&acl, &user(2, 50, &[]), 0, 9, 2),
            Err(Errno::EACCES)
        );
        assert_eq!(
            permission(&acl, &user(2, 50, &[]), 0, 9, 1),
            Err(Errno::EACCES)
        );
        // Any matching group entry that grants everything wins.
        assert_eq!(permission(&acl, &user(2, 50, &[9]), 0, 9, 4), Ok(()));
        // Nobody matched: other (---).
        assert_eq!(
            permission(&acl, &user(3, 3, &[]), 0, 9, 4),
            Err(Errno::EACCES)
        );
        assert_eq!(permission(&acl, &user(3, 3, &[]), 0, 9, 0), Ok(()));
    }

    #[test]
    fn create_masq_intersects_mode_and_acl() {
        let mut acl = sample();
        let (mode, not_equiv) = create_masq(&mut acl, 0o100666);
        assert!(not_equiv);
        // u::rw- & rw- ; mask r-x & rw- = r-- ; o::--- .
        assert_eq!(mode, 0o100640);
        assert_eq!(acl[0].perm, 6);
        assert_eq!(acl[4].perm, 4);
        assert_eq!(acl[1].perm, 7, "named entries keep their bits");
        let mut minimal = vec![
            e(ACL_USER_OBJ, 7, 0),
            e(ACL_GROUP_OBJ, 5, 0),
            e(ACL_OTHER, 5, 0),
        ];
        assert_eq!(create_masq(&mut minimal, 0o040777), (0o040755, false));
    }

    #[test]
    fn chmod_masq_sets_owner_mask_and_other() {
        let mut acl = sample();
        chmod_masq(&mut acl, 0o100_751);
        let perms: Vec<u16> = acl.iter().map(|e| e.perm).collect();
        assert_eq!(perms, [7, 7, 4, 2, 5, 1]);
        let mut minimal = vec![
            e(ACL_USER_OBJ, 7, 0),
            e(ACL_GROUP_OBJ, 5, 0),
            e(ACL_OTHER, 5, 0),
        ];
        chmod_masq(&mut minimal, 0o640);
        let perms: Vec<u16> = minimal.iter().map(|e| e.perm).collect();
        assert_eq!(perms, [6, 4, 0]);
    }
}
