//! Credentials and the POSIX permission model.
//!
//! A `Cred` is immutable once built and shared by `Arc`; changing ids makes a
//! new one (as Linux's `struct cred` is copy-on-write). Permission checks are
//! pure functions of a `Cred` and an inode's (mode, uid, gid) read under the
//! inode's seqcount, so they write no shared memory.

pub mod acl;
pub mod perm;

/// A process's identity for permission checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    pub ruid: u32,
    pub euid: u32,
    /// Filesystem uid: the one permission checks use (equals euid unless set).
    pub fsuid: u32,
    pub rgid: u32,
    pub egid: u32,
    pub fsgid: u32,
    /// Supplementary groups, sorted and deduplicated.
    pub groups: Vec<u32>,
}

impl Cred {
    /// uid 0 with every capability.
    pub fn root() -> Cred {
        Cred::user(0, 0, &[])
    }

    /// An ordinary user (real = effective = filesystem ids).
    pub fn user(uid: u32, gid: u32, groups: &[u32]) -> Cred {
        let mut groups = groups.to_vec();
        groups.sort_unstable();
        groups.dedup();
        Cred {
            ruid: uid,
            euid: uid,
            fsuid: uid,
            rgid: gid,
            egid: gid,
            fsgid: gid,
            groups,
        }
    }

    /// True if the filesystem uid is root (vfscale models capabilities as
    /// "fsuid == 0 has CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_FSETID").
    pub fn is_root(&self) -> bool {
        self.fsuid == 0
    }

    /// True if `gid` is the filesystem gid or a supplementary group.
    pub fn in_group(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.binary_search(&gid).is_ok()
    }

    /// The credential `faccessat` uses without AT_EACCESS: real ids as the
    /// filesystem ids.
    pub fn with_real_ids(&self) -> Cred {
        Cred {
            fsuid: self.ruid,
            fsgid: self.rgid,
            ..self.clone()
        }
    }
}
