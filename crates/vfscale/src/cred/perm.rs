//! The POSIX permission model as pure functions of a `Cred` and an inode's
//! (mode, uid, gid).
//!
//! Invariants:
//! - Nothing here reads or writes shared state: callers read the inode's
//!   fields (under its seqcount) and pass plain values, so a check never
//!   contends with another core.
//! - `mode` arguments named after an inode include the file type bits
//!   (`S_IFMT`); decisions that depend on the type read them from there.
//! - "Root" means `cred.is_root()` (fsuid 0) and stands for holding
//!   CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN and
//!   CAP_FSETID; no other capability model exists.
//! - The semantics are those of Linux since 6.2 (`setattr_should_drop_sgid`,
//!   `mode_strip_sgid`), where the set-group-ID bit is also dropped for
//!   callers outside the file's group. The expected values in the tests
//!   follow the kernel source; the `may_access` table was checked in full,
//!   and the other rules case by case, against a 6.18 kernel on tmpfs.

use super::Cred;
use crate::abi::{s_isdir, s_isreg, Errno, S_IALLUGO, S_ISGID, S_ISUID, S_ISVTX, S_IXGRP};

/// Execute, or search for a directory (Linux `MAY_EXEC`).
pub const MAY_EXEC: u32 = 1;
/// Write (Linux `MAY_WRITE`).
pub const MAY_WRITE: u32 = 2;
/// Read (Linux `MAY_READ`).
pub const MAY_READ: u32 = 4;

/// The execute bits of all three classes.
const S_IXUGO: u32 = 0o111;

/// Linux `in_group_or_capable` with CAP_FSETID: may this caller keep a
/// set-group-ID bit tied to group `gid`?
fn in_group_or_root(cred: &Cred, gid: u32) -> bool {
    cred.is_root() || cred.in_group(gid)
}

/// Linux `inode_owner_or_capable`: owner, or CAP_FOWNER.
pub fn owner_or_root(cred: &Cred, inode_uid: u32) -> bool {
    cred.fsuid == inode_uid || cred.is_root()
}

/// Linux `setattr_should_drop_sgid`: the set-group-ID bit goes when the
/// file is group-executable (a real set-gid program), or when the caller
/// could not have set it (not in the group, not root).
fn sgid_must_drop(cred: &Cred, mode: u32, gid: u32) -> bool {
    mode & S_ISGID != 0 && (mode & S_IXGRP != 0 || !in_group_or_root(cred, gid))
}

/// `generic_permission`: may `cred` access an inode with `mode`, `uid`,
/// `gid` for `mask` (MAY_READ | MAY_WRITE | MAY_EXEC; other bits are
/// ignored, so a mask of 0 is an existence check and always succeeds).
///
/// Exactly one class applies: the owner's bits if fsuid == uid (even when
/// group or other bits would allow more), else the group's if the caller is
/// in `gid`, else other's. Failing that, root may read and write anything,
/// search any directory, and execute a non-directory only if some execute
/// bit is set. EACCES otherwise.
pub fn may_access(cred: &Cred, mode: u32, uid: u32, gid: u32, mask: u32) -> Result<(), Errno> {
    let mask = mask & (MAY_READ | MAY_WRITE | MAY_EXEC);
    let class_bits = if cred.fsuid == uid {
        mode >> 6
    } else if mask & (mode ^ (mode >> 3)) != 0 && cred.in_group(gid) {
        // As Linux does, the group lookup is skipped when the group and
        // other bits agree on what is asked: the answer would be the same.
        mode >> 3
    } else {
        mode
    };
    if mask & !class_bits & 0o7 == 0 || root_overrides(cred, mode, mask) {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// generic_permission's capability part: root may read and write
/// anything, search any directory, and execute a non-directory with some
/// execute bit set, whatever the mode bits or an ACL say.
pub fn root_overrides(cred: &Cred, mode: u32, mask: u32) -> bool {
    cred.is_root() && (mask & MAY_EXEC == 0 || s_isdir(mode) || mode & S_IXUGO != 0)
}

/// True when every caller may search (MAY_EXEC) an inode with `mode` (as
/// `Inode::perm_attr` reads it): all three execute bits are set and no
/// access ACL names anyone, so whichever class applies grants it (and
/// root needs only one). The path walk may then skip the full check.
pub fn may_search_fast(mode: u32) -> bool {
    mode & (S_IXUGO | super::acl::MODE_ACCESS_ACL) == S_IXUGO
}

/// The sticky-directory rule for unlink, rmdir and rename out of a
/// directory: in a directory with S_ISVTX, only the victim's owner, the
/// directory's owner, or root may remove an entry. `false` means the caller
/// must fail with EPERM (write and search permission on the directory are
/// checked separately, first).
pub fn sticky_may_delete(cred: &Cred, dir_mode: u32, dir_uid: u32, victim_uid: u32) -> bool {
    dir_mode & S_ISVTX == 0 || cred.fsuid == victim_uid || cred.fsuid == dir_uid || cred.is_root()
}

/// open(O_CREAT) of an existing name in a sticky directory (the kernel's
/// `may_create_in_sticky`, with fs.protected_regular and
/// fs.protected_fifos at their kernel default 0): in a world-writable
/// sticky directory, a file that is neither regular nor a FIFO (a symlink
/// met with O_NOFOLLOW, a socket, a device node) owned by neither the
/// directory's owner nor the caller is EACCES. Root is not exempt.
pub fn may_open_existing_in_sticky(
    cred: &Cred,
    dir_mode: u32,
    dir_uid: u32,
    file_type: u32,
    file_uid: u32,
) -> Result<(), Errno> {
    use crate::abi::{S_IFIFO, S_IFMT, S_IFREG};
    let ty = file_type & S_IFMT;
    if dir_mode & S_ISVTX == 0
        || ty == S_IFREG
        || ty == S_IFIFO
        || file_uid == dir_uid
        || file_uid == cred.fsuid
        || dir_mode & 0o002 == 0
    {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// chmod(2): only the owner or root may change the mode; EPERM otherwise.
pub fn may_chmod(cred: &Cred, inode_uid: u32) -> Result<(), Errno> {
    if owner_or_root(cred, inode_uid) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The mode after a permitted chmod(2) to `requested`: the file type is
/// kept, only `S_IALLUGO` bits are taken from `requested`, and a caller who
/// is neither root nor in the file's group loses S_ISGID (whether or not
/// S_IXGRP is set). Linux keeps S_ISVTX and S_ISUID as requested, on every
/// file type.
pub fn chmod_mode(cred: &Cred, inode_mode: u32, inode_gid: u32, requested: u32) -> u32 {
    let mut mode = (requested & S_IALLUGO) | (inode_mode & !S_IALLUGO);
    if !in_group_or_root(cred, inode_gid) {
        mode &= !S_ISGID;
    }
    mode
}

/// chown(2)'s id checks (`None` is -1, "leave unchanged"). Root may set any
/// ids. Otherwise only the owner may act: it may "change" the uid to the
/// uid it already has, and change the group to the current group or to any
/// group it belongs to. EPERM otherwise.
///
/// This is not quite all of chown: when the call must also clear set-id
/// bits, Linux additionally requires owner or root, so a non-owner's
/// `chown(f, -1, -1)` of a set-id file fails. `check_chown` covers that.
pub fn may_chown(
    cred: &Cred,
    inode_uid: u32,
    inode_gid: u32,
    new_uid: Option<u32>,
    new_gid: Option<u32>,
) -> Result<(), Errno> {
    if cred.is_root() {
        return Ok(());
    }
    let is_owner = cred.fsuid == inode_uid;
    let uid_ok = new_uid.is_none_or(|uid| is_owner && uid == inode_uid);
    let gid_ok = new_gid.is_none_or(|gid| is_owner && (gid == inode_gid || cred.in_group(gid)));
    if uid_ok && gid_ok {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The mode after a permitted chown(2) (even one with both ids `None`) of
/// an inode with `mode` and group `inode_gid` (the group before the call).
/// Directories are untouched. Any other inode loses S_ISUID, even when root
/// calls; it loses S_ISGID when S_IXGRP is set (even for root) or when the
/// caller is neither root nor in `inode_gid`.
///
/// The group is an argument because Linux 6.2+ decides that last case on
/// membership of the file's current group.
pub fn chown_mode(cred: &Cred, mode: u32, inode_gid: u32, is_dir: bool) -> u32 {
    if is_dir {
        return mode;
    }
    let mut new_mode = mode & !S_ISUID;
    if sgid_must_drop(cred, mode, inode_gid) {
        new_mode &= !S_ISGID;
    }
    new_mode
}

/// All of chown(2)'s decision in one call: the checks of `may_chown`, then
/// the mode from `chown_mode`, and — when that mode differs — the
/// owner-or-root requirement Linux applies to any mode change (EPERM).
/// Returns the mode the inode has afterwards.
pub fn check_chown(
    cred: &Cred,
    mode: u32,
    inode_uid: u32,
    inode_gid: u32,
    new_uid: Option<u32>,
    new_gid: Option<u32>,
) -> Result<u32, Errno> {
    may_chown(cred, inode_uid, inode_gid, new_uid, new_gid)?;
    let new_mode = chown_mode(cred, mode, inode_gid, s_isdir(mode));
    if new_mode != mode {
        // Linux turns the set-id clearing into ATTR_MODE, which
        // setattr_prepare only grants to the owner or root.
        may_chmod(cred, inode_uid)?;
    }
    Ok(new_mode)
}

/// Linux `should_remove_suid` for write(2), truncate and fallocate on a
/// regular file: `Some(new mode)` if this caller's write must clear set-id
/// bits, `None` if the mode stays. S_ISUID always goes; S_ISGID goes when
/// S_IXGRP is set or the caller is not in the file's group `gid`. Root
/// (CAP_FSETID) clears nothing, and nothing happens to non-regular files.
pub fn write_strip_mode(cred: &Cred, mode: u32, gid: u32) -> Option<u32> {
    if cred.is_root() || !s_isreg(mode) {
        return None;
    }
    let mut cleared = mode & S_ISUID;
    if sgid_must_drop(cred, mode, gid) {
        cleared |= S_ISGID;
    }
    (cleared != 0).then_some(mode & !cleared)
}

/// Owner, group and mode of a new inode created with `mode` (file type
/// included) in a directory with `dir_mode` and `dir_gid`: Linux
/// `mode_strip_sgid` followed by `inode_init_owner`.
///
/// The uid is the fsuid. In a set-group-ID directory the gid is the
/// directory's, a new directory inherits S_ISGID, and a new non-directory
/// with S_ISGID and S_IXGRP made by a caller neither root nor in `dir_gid`
/// loses S_ISGID. Elsewhere the gid is the fsgid and the mode is unchanged.
///
/// Pass `mode` before the umask and apply the umask to the result: Linux
/// strips S_ISGID before applying the umask, which differs from the other
/// order when the umask clears S_IXGRP. (The umask never touches S_ISGID, so
/// applying it afterwards is otherwise exact.) The caller also masks the
/// requested mode first: mkdir keeps only 0o1777, open/mknod `S_IALLUGO`.
pub fn new_inode_owner(cred: &Cred, dir_mode: u32, dir_gid: u32, mode: u32) -> (u32, u32, u32) {
    let dir_is_setgid = dir_mode & S_ISGID != 0;
    let mut mode = mode;
    if !dir_is_setgid {
        return (cred.fsuid, cred.fsgid, mode);
    }
    if s_isdir(mode) {
        mode |= S_ISGID;
    } else if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP && !in_group_or_root(cred, dir_gid) {
        mode &= !S_ISGID;
    }
    (cred.fsuid, dir_gid, mode)
}

/// utimensat(2)/utimes(2) permission. `explicit_times` is false only for
/// "set both to now" (a null `times`, or both `UTIME_NOW`); any other call
/// is explicit, including one `UTIME_NOW` with one `UTIME_OMIT`. (Both
/// `UTIME_OMIT` returns 0 before the path is even looked up: not a case for
/// this function.) `can_write` is `may_access(.., MAY_WRITE)` succeeding.
///
/// Owner and root may always; otherwise explicit times fail with EPERM and
/// "now" needs write permission, else EACCES.
pub fn may_set_times(
    cred: &Cred,
    inode_uid: u32,
    explicit_times: bool,
    can_write: bool,
) -> Result<(), Errno> {
    if owner_or_root(cred, inode_uid) {
        Ok(())
    } else if explicit_times {
        Err(Errno::EPERM)
    } else if can_write {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{S_IFDIR, S_IFIFO, S_IFLNK, S_IFREG};

    // Every table below uses one file owned by OWNER:GROUP.
    const OWNER: u32 = 1000;
    const GROUP: u32 = 3000;

    fn owner() -> Cred {
        Cred::user(OWNER, OWNER, &[])
    }
    fn owner_in_group() -> Cred {
        Cred::user(OWNER, OWNER, &[GROUP])
    }
    /// In the file's group by its primary (filesystem) gid.
    fn group_primary() -> Cred {
        Cred::user(2000, GROUP, &[])
    }
    /// In the file's group by a supplementary group.
    fn group_supplementary() -> Cred {
        Cred::user(2001, 2001, &[4000, GROUP])
    }
    fn other() -> Cred {
        Cred::user(4000, 4000, &[5000])
    }
    fn root() -> Cred {
        Cred::root()
    }

    /// Callers in the column order of the access table.
    fn access_columns() -> [(&'static str, Cred); 5] {
        [
            ("owner", owner()),
            ("group", group_primary()),
            ("supplementary", group_supplementary()),
            ("other", other()),
            ("root", root()),
        ]
    }

    /// Decodes "rwx"/"r-x"-style strings into the set of allowed masks.
    fn allowed_bits(rwx: &str) -> u32 {
        let b = rwx.as_bytes();
        (if b[0] == b'r' { MAY_READ } else { 0 })
            | (if b[1] == b'w' { MAY_WRITE } else { 0 })
            | (if b[2] == b'x' { MAY_EXEC } else { 0 })
    }

    #[test]
    fn may_access_matrix() {
        // mode, then what owner, group, supplementary-group member, other and
        // root may each do.
        let table: &[(u32, [&str; 5])] = &[
            (S_IFREG | 0o640, ["rw-", "r--", "r--", "---", "rw-"]),
            (S_IFREG | 0o644, ["rw-", "r--", "r--", "r--", "rw-"]),
            // The owner class applies alone, even when others get more.
            (S_IFREG | 0o077, ["---", "rwx", "rwx", "rwx", "rwx"]),
            // Likewise the group class.
            (S_IFREG | 0o707, ["rwx", "---", "---", "rwx", "rwx"]),
            // Root may not execute a file no one may execute...
            (
                S_IFREG, // mode 000
                ["---", "---", "---", "---", "rw-"],
            ),
            (S_IFREG | 0o666, ["rw-", "rw-", "rw-", "rw-", "rw-"]),
            // ...but any one execute bit is enough for root.
            (S_IFREG | 0o001, ["---", "---", "---", "--x", "rwx"]),
            (S_IFREG | 0o010, ["---", "--x", "--x", "---", "rwx"]),
            (S_IFREG | 0o100, ["--x", "---", "---", "---", "rwx"]),
            // Set-id and sticky bits grant nothing.
            (S_IFREG | 0o7000, ["---", "---", "---", "---", "rw-"]),
            (S_IFREG | 0o4755, ["rwx", "r-x", "r-x", "r-x", "rwx"]),
            // Root searches every directory.
            (
                S_IFDIR, // mode 000
                ["---", "---", "---", "---", "rwx"],
            ),
            (S_IFDIR | 0o755, ["rwx", "r-x", "r-x", "r-x", "rwx"]),
            (S_IFDIR | 0o1733, ["rwx", "-wx", "-wx", "-wx", "rwx"]),
            (S_IFDIR | 0o2750, ["rwx", "r-x", "r-x", "---", "rwx"]),
        ];
        for &(mode, row) in table {
            for ((who, cred), rwx) in access_columns().iter().zip(row) {
                let allowed = allowed_bits(rwx);
                // Every combination: a mask is allowed iff each of its bits is.
                for mask in 0..8 {
                    let want = if mask & !allowed == 0 {
                        Ok(())
                    } else {
                        Err(Errno::EACCES)
                    };
                    assert_eq!(
                        may_access(cred, mode, OWNER, GROUP, mask),
                        want,
                        "{who} mask {mask} on {mode:o}"
                    );
                }
            }
        }
    }

    #[test]
    fn may_access_uses_filesystem_ids_and_ignores_other_mask_bits() {
        // euid 0 but fsuid 1000: an ordinary caller, and the owner.
        let setfsuid = Cred { euid: 0, ..owner() };
        assert_eq!(
            may_access(&setfsuid, S_IFREG | 0o070, OWNER, GROUP, MAY_READ),
            Err(Errno::EACCES)
        );
        // faccessat without AT_EACCESS: real ids decide.
        let setuid_root = Cred {
            euid: 0,
            fsuid: 0,
            ..owner()
        };
        assert_eq!(
            may_access(
                &setuid_root,
                S_IFREG, // mode 000
                OWNER,
                GROUP,
                MAY_READ
            ),
            Ok(())
        );
        assert_eq!(
            may_access(
                &setuid_root.with_real_ids(),
                S_IFREG, // mode 000
                OWNER,
                GROUP,
                MAY_READ
            ),
            Err(Errno::EACCES)
        );
        // Bits outside rwx (Linux MAY_APPEND, MAY_OPEN...) are not checked.
        assert_eq!(
            may_access(
                &other(),
                S_IFREG, // mode 000
                OWNER,
                GROUP,
                0o10 | 0o20
            ),
            Ok(())
        );
        assert_eq!(
            may_access(
                &other(),
                S_IFREG, // mode 000
                OWNER,
                GROUP,
                0o10 | MAY_READ
            ),
            Err(Errno::EACCES)
        );
    }

    #[test]
    fn may_search_fast_cases() {
        assert!(may_search_fast(S_IFDIR | 0o111));
        assert!(may_search_fast(S_IFDIR | 0o755));
        assert!(may_search_fast(S_IFDIR | 0o1777));
        assert!(!may_search_fast(S_IFDIR | 0o754));
        assert!(!may_search_fast(S_IFDIR | 0o700));
        assert!(!may_search_fast(S_IFDIR | 0o011));
        assert!(!may_search_fast(
            S_IFDIR | 0o777 | crate::cred::acl::MODE_ACCESS_ACL
        ));
        assert!(!may_search_fast(S_IFDIR));
    }

    #[test]
    fn may_search_fast_never_grants_what_may_access_denies() {
        let creds = access_columns();
        for perms in 0..=0o7777 {
            let mode = S_IFDIR | perms;
            if may_search_fast(mode) {
                for (who, cred) in &creds {
                    assert_eq!(
                        may_access(cred, mode, OWNER, GROUP, MAY_EXEC),
                        Ok(()),
                        "{who} on {mode:o}"
                    );
                }
            }
        }
    }

    #[test]
    fn sticky_may_delete_matrix() {
        const DIR_OWNER: u32 = 1000;
        const VICTIM_OWNER: u32 = 2000;
        let dir_owner = Cred::user(DIR_OWNER, 1, &[]);
        let victim_owner = Cred::user(VICTIM_OWNER, 1, &[]);
        let stranger = Cred::user(3000, 1, &[DIR_OWNER, VICTIM_OWNER]);
        let sticky = S_IFDIR | 0o1777;
        let plain = S_IFDIR | 0o777;
        let table = [
            (&dir_owner, sticky, true),
            (&victim_owner, sticky, true),
            // Group ids never count, even ones numerically equal to the uids.
            (&stranger, sticky, false),
            (&root(), sticky, true),
            (&stranger, plain, true),
            (&dir_owner, plain, true),
        ];
        for (cred, dir_mode, want) in table {
            assert_eq!(
                sticky_may_delete(cred, dir_mode, DIR_OWNER, VICTIM_OWNER),
                want,
                "fsuid {} dir {dir_mode:o}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn may_chmod_matrix() {
        assert_eq!(may_chmod(&owner(), OWNER), Ok(()));
        assert_eq!(may_chmod(&group_primary(), OWNER), Err(Errno::EPERM));
        assert_eq!(may_chmod(&group_supplementary(), OWNER), Err(Errno::EPERM));
        assert_eq!(may_chmod(&other(), OWNER), Err(Errno::EPERM));
        assert_eq!(may_chmod(&root(), OWNER), Ok(()));
    }

    #[test]
    fn chmod_mode_matrix() {
        let table = [
            // Owner outside the group: S_ISGID dropped, S_ISUID/S_ISVTX kept.
            (owner(), S_IFREG | 0o644, 0o7755, S_IFREG | 0o5755),
            (owner(), S_IFREG | 0o644, 0o2644, S_IFREG | 0o644),
            (owner(), S_IFDIR | 0o755, 0o2775, S_IFDIR | 0o775),
            (owner_in_group(), S_IFREG | 0o644, 0o7755, S_IFREG | 0o7755),
            (owner_in_group(), S_IFDIR | 0o755, 0o2775, S_IFDIR | 0o2775),
            (root(), S_IFREG | 0o644, 0o7755, S_IFREG | 0o7755),
            // The sticky bit stays on regular files too.
            (owner(), S_IFREG | 0o644, 0o1600, S_IFREG | 0o1600),
            // Type bits in the request are ignored; the file keeps its type.
            (owner(), S_IFDIR | 0o755, S_IFREG | 0o700, S_IFDIR | 0o700),
            (owner(), S_IFREG | 0o4755, 0o644, S_IFREG | 0o644),
        ];
        for (cred, mode, requested, want) in table {
            assert_eq!(
                chmod_mode(&cred, mode, GROUP, requested),
                want,
                "fsuid {} {mode:o} -> {requested:o}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn may_chown_matrix() {
        let eperm = Err(Errno::EPERM);
        let table = [
            (owner(), None, None, Ok(())),
            (owner(), Some(OWNER), None, Ok(())),
            (owner(), Some(2000), None, eperm),
            // The current group is allowed even outside it...
            (owner(), None, Some(GROUP), Ok(())),
            // ...as is the caller's own group, primary or supplementary.
            (owner(), None, Some(OWNER), Ok(())),
            (Cred::user(OWNER, OWNER, &[6000]), None, Some(6000), Ok(())),
            (owner(), None, Some(6000), eperm),
            (owner(), Some(OWNER), Some(OWNER), Ok(())),
            (owner(), Some(OWNER), Some(6000), eperm),
            (owner(), Some(2000), Some(OWNER), eperm),
            // Non-owners can change nothing, not even to the same ids.
            (group_primary(), None, None, Ok(())),
            (group_primary(), None, Some(GROUP), eperm),
            (group_supplementary(), None, Some(4000), eperm),
            (other(), Some(OWNER), None, eperm),
            (other(), Some(4000), None, eperm),
            (root(), Some(5), Some(5), Ok(())),
            (root(), Some(0), None, Ok(())),
            (root(), None, Some(123), Ok(())),
        ];
        for (cred, new_uid, new_gid, want) in table {
            assert_eq!(
                may_chown(&cred, OWNER, GROUP, new_uid, new_gid),
                want,
                "fsuid {} -> {new_uid:?}:{new_gid:?}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn chown_mode_matrix() {
        let table = [
            // Root clears S_ISUID, and S_ISGID of a group-executable file.
            (root(), S_IFREG | 0o6755, S_IFREG | 0o755),
            (root(), S_IFREG | 0o2644, S_IFREG | 0o2644),
            (root(), S_IFREG | 0o6745, S_IFREG | 0o2745),
            (owner(), S_IFREG | 0o4755, S_IFREG | 0o755),
            // Without S_IXGRP, S_ISGID stays only for members of the group.
            (owner(), S_IFREG | 0o2644, S_IFREG | 0o644),
            (owner_in_group(), S_IFREG | 0o2644, S_IFREG | 0o2644),
            (owner_in_group(), S_IFREG | 0o2775, S_IFREG | 0o775),
            (owner_in_group(), S_IFREG | 0o1755, S_IFREG | 0o1755),
            (owner(), S_IFREG | 0o644, S_IFREG | 0o644),
            // Every non-directory type, not only regular files.
            (owner(), S_IFIFO | 0o4666, S_IFIFO | 0o666),
            (owner(), S_IFLNK | 0o777, S_IFLNK | 0o777),
            // Directories keep everything.
            (root(), S_IFDIR | 0o6755, S_IFDIR | 0o6755),
            (owner(), S_IFDIR | 0o2755, S_IFDIR | 0o2755),
        ];
        for (cred, mode, want) in table {
            assert_eq!(
                chown_mode(&cred, mode, GROUP, s_isdir(mode)),
                want,
                "fsuid {} {mode:o}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn check_chown_matrix() {
        let eperm = Err(Errno::EPERM);
        let table = [
            // A non-owner's chown(-1, -1) succeeds only if no bit must go.
            (other(), S_IFREG | 0o755, None, None, Ok(S_IFREG | 0o755)),
            (other(), S_IFREG | 0o4755, None, None, eperm),
            (other(), S_IFREG | 0o2644, None, None, eperm),
            (
                group_primary(),
                S_IFREG | 0o2644,
                None,
                None,
                Ok(S_IFREG | 0o2644),
            ),
            (owner(), S_IFREG | 0o4755, None, None, Ok(S_IFREG | 0o755)),
            (
                owner(),
                S_IFREG | 0o2644,
                None,
                Some(OWNER),
                Ok(S_IFREG | 0o644),
            ),
            (
                owner_in_group(),
                S_IFREG | 0o2644,
                None,
                Some(OWNER),
                Ok(S_IFREG | 0o2644),
            ),
            (owner(), S_IFREG | 0o644, Some(2000), None, eperm),
            (
                root(),
                S_IFREG | 0o6755,
                Some(5),
                Some(5),
                Ok(S_IFREG | 0o755),
            ),
            (
                root(),
                S_IFDIR | 0o6755,
                Some(5),
                Some(5),
                Ok(S_IFDIR | 0o6755),
            ),
        ];
        for (cred, mode, new_uid, new_gid, want) in table {
            assert_eq!(
                check_chown(&cred, mode, OWNER, GROUP, new_uid, new_gid),
                want,
                "fsuid {} {mode:o} -> {new_uid:?}:{new_gid:?}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn write_strip_mode_matrix() {
        let table = [
            (owner(), S_IFREG | 0o6755, Some(S_IFREG | 0o755)),
            (owner(), S_IFREG | 0o4755, Some(S_IFREG | 0o755)),
            // S_ISGID without S_IXGRP stays for group members only.
            (owner_in_group(), S_IFREG | 0o2644, None),
            (group_primary(), S_IFREG | 0o2666, None),
            (group_supplementary(), S_IFREG | 0o2666, None),
            (owner(), S_IFREG | 0o2644, Some(S_IFREG | 0o644)),
            (other(), S_IFREG | 0o2666, Some(S_IFREG | 0o666)),
            (owner_in_group(), S_IFREG | 0o2674, Some(S_IFREG | 0o674)),
            (owner_in_group(), S_IFREG | 0o4644, Some(S_IFREG | 0o644)),
            (owner(), S_IFREG | 0o644, None),
            (owner(), S_IFREG | 0o1755, None),
            // Root (CAP_FSETID) keeps everything.
            (root(), S_IFREG | 0o6775, None),
            (root(), S_IFREG | 0o2644, None),
            // Only regular files are affected.
            (owner(), S_IFDIR | 0o6755, None),
            (owner(), S_IFIFO | 0o4666, None),
        ];
        for (cred, mode, want) in table {
            assert_eq!(
                write_strip_mode(&cred, mode, GROUP),
                want,
                "fsuid {} {mode:o}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn new_inode_owner_matrix() {
        let plain_dir = S_IFDIR | 0o777;
        let setgid_dir = S_IFDIR | 0o2777;
        let table = [
            // An ordinary directory: fsuid/fsgid, mode as given.
            (
                owner(),
                plain_dir,
                S_IFREG | 0o644,
                (OWNER, OWNER, S_IFREG | 0o644),
            ),
            (
                owner(),
                plain_dir,
                S_IFREG | 0o2755,
                (OWNER, OWNER, S_IFREG | 0o2755),
            ),
            (
                owner(),
                plain_dir,
                S_IFDIR | 0o755,
                (OWNER, OWNER, S_IFDIR | 0o755),
            ),
            // A set-gid directory: its group, inherited by subdirectories.
            (
                owner(),
                setgid_dir,
                S_IFREG | 0o644,
                (OWNER, GROUP, S_IFREG | 0o644),
            ),
            (
                owner(),
                setgid_dir,
                S_IFDIR | 0o755,
                (OWNER, GROUP, S_IFDIR | 0o2755),
            ),
            (
                owner(),
                setgid_dir,
                S_IFDIR | 0o1777,
                (OWNER, GROUP, S_IFDIR | 0o3777),
            ),
            // A set-gid program from outside the group loses S_ISGID...
            (
                owner(),
                setgid_dir,
                S_IFREG | 0o2755,
                (OWNER, GROUP, S_IFREG | 0o755),
            ),
            (
                owner(),
                setgid_dir,
                S_IFREG | 0o6777,
                (OWNER, GROUP, S_IFREG | 0o4777),
            ),
            // ...but not without S_IXGRP, nor for members or root.
            (
                owner(),
                setgid_dir,
                S_IFREG | 0o2745,
                (OWNER, GROUP, S_IFREG | 0o2745),
            ),
            (
                owner_in_group(),
                setgid_dir,
                S_IFREG | 0o2755,
                (OWNER, GROUP, S_IFREG | 0o2755),
            ),
            (
                root(),
                setgid_dir,
                S_IFREG | 0o2755,
                (0, GROUP, S_IFREG | 0o2755),
            ),
        ];
        for (cred, dir_mode, mode, want) in table {
            assert_eq!(
                new_inode_owner(&cred, dir_mode, GROUP, mode),
                want,
                "fsuid {} dir {dir_mode:o} mode {mode:o}",
                cred.fsuid
            );
        }
    }

    #[test]
    fn new_inode_owner_uses_filesystem_ids_and_precedes_the_umask() {
        let cred = Cred {
            euid: 5,
            egid: 6,
            ..Cred::user(OWNER, 7000, &[])
        };
        assert_eq!(
            new_inode_owner(&cred, S_IFDIR | 0o755, GROUP, S_IFREG | 0o600),
            (OWNER, 7000, S_IFREG | 0o600)
        );
        // Linux: open(O_CREAT, 02755) with umask 010 in a set-gid directory,
        // by a non-member, makes 0745. The strip sees S_IXGRP before the
        // umask removes it.
        let umask = 0o010;
        let (_, _, mode) = new_inode_owner(&owner(), S_IFDIR | 0o2777, GROUP, S_IFREG | 0o2755);
        assert_eq!(mode & !umask, S_IFREG | 0o745);
    }

    #[test]
    fn may_set_times_matrix() {
        let (eperm, eacces) = (Err(Errno::EPERM), Err(Errno::EACCES));
        // caller, explicit_times, can_write, expected
        let table = [
            (owner(), false, false, Ok(())),
            (owner(), true, false, Ok(())),
            (root(), false, false, Ok(())),
            (root(), true, false, Ok(())),
            (group_primary(), false, true, Ok(())),
            (group_primary(), true, true, eperm),
            (other(), false, true, Ok(())),
            (other(), false, false, eacces),
            (other(), true, false, eperm),
            (other(), true, true, eperm),
        ];
        for (cred, explicit, can_write, want) in table {
            assert_eq!(
                may_set_times(&cred, OWNER, explicit, can_write),
                want,
                "fsuid {} explicit {explicit} write {can_write}",
                cred.fsuid
            );
        }
    }
}
