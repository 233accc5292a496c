//! unshare(2) (the mount namespace, CLONE_FS and CLONE_FILES) and setns(2)
//! of the mount namespace, and /proc/self/mountinfo (mount/namespace.rs
//! holds the namespaces).
//!
//! A process changes namespace by getting a new fs context (root, cwd,
//! umask and namespace, process/mod.rs's FsContext): its `clone_thread`
//! siblings keep the old one, as Linux's unshare copies a shared
//! fs_struct. Lock order: the context's lock, then the mount table's.

use super::{FsContext, Process};
use crate::abi::*;
use crate::dcache::dentry::Dentry;
use crate::dcache::walk::PathPtr;
use crate::mount::flags as mnt_flags;
use crate::mount::propagation::Links;
use crate::mount::Mount;
use crate::sync::atomic::{AtomicUsize, Ordering};
use std::io::Write;
use std::sync::Arc;

impl Process {
    pub(crate) fn sys_unshare(&mut self, flags: i32) -> SysResult<()> {
        if flags & !(CLONE_NEWNS | CLONE_FS | CLONE_FILES) != 0 {
            return Err(Errno::EINVAL);
        }
        let new_ns = flags & CLONE_NEWNS != 0;
        if new_ns && !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if flags & CLONE_FILES != 0 {
            self.unshare_files();
        }
        // CLONE_FS alone changes nothing for a context nobody shares.
        if !new_ns && (flags & CLONE_FS == 0 || self.fs.user_count() == 1) {
            return Ok(());
        }
        let fs = {
            let _g = self.vfs.collector.enter();
            // No sibling moves root or cwd (and puts the old one) while
            // they are copied.
            let _l = self.fs.lock.lock();
            let (root, cwd) = self.fs.get();
            let umask = self.umask_bits();
            if new_ns {
                let (ns, root, cwd) = self.vfs.copy_namespace(&self.fs.ns, root, cwd);
                FsContext::new(&self.vfs, root, cwd, umask, ns)
            } else {
                for p in [root, cwd] {
                    // The context holds references: these cannot fail.
                    self.vfs.dget(p.dentry);
                    self.vfs.mntget(p.mnt);
                }
                self.fs.ns.get();
                FsContext::new(&self.vfs, root, cwd, umask, self.fs.ns.clone())
            }
        };
        self.replace_fs(fs);
        Ok(())
    }

    /// unshare_fd: a thread sharing its fd table (`clone_thread`) gets a
    /// copy of its own; locks stay with the old table's owner, as Linux's
    /// with the old files_struct.
    fn unshare_files(&mut self) {
        // Acquire: as `user_count` (a sibling that left is seen gone).
        if self.live_threads.load(Ordering::Acquire) == 1 {
            return;
        }
        let copy = Arc::new(self.files.duplicate());
        let old_files = std::mem::replace(&mut self.files, copy);
        let old_live = std::mem::replace(&mut self.live_threads, Arc::new(AtomicUsize::new(1)));
        // Two siblings unsharing at once: the one whose decrement is last
        // closes what the old table still holds.
        self.leave_files(&old_files, &old_live);
    }

    /// setns(CLONE_NEWNS) into `other`'s namespace (mntns_install): root
    /// only, and not while a sibling shares the fs context; root and cwd
    /// become the top of the stack on the namespace's root.
    pub(crate) fn sys_setns_mount(&mut self, other: &Process) -> SysResult<()> {
        if !self.cred.is_root() {
            return Err(Errno::EPERM);
        }
        if self.fs.user_count() != 1 {
            return Err(Errno::EINVAL);
        }
        let ns = other.fs.ns.clone();
        let fs = {
            let _g = self.vfs.collector.enter();
            let list = self.vfs.lock_mounts();
            // `other`'s context keeps the namespace, hence its root,
            // attached.
            let top = self.vfs.follow_mounts(ns.root_path());
            for _ in 0..2 {
                self.vfs.mntget(top.mnt);
                self.vfs.dget(top.dentry);
            }
            drop(list);
            ns.get();
            FsContext::new(&self.vfs, top, top, self.umask_bits(), ns)
        };
        self.replace_fs(fs);
        Ok(())
    }

    /// Moves this process to the context `fs`, leaving its old one.
    fn replace_fs(&mut self, fs: Arc<FsContext>) {
        let old = std::mem::replace(&mut self.fs, fs);
        old.put(&self.vfs);
    }

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
        let links = Links::of(&list);
        let mut out = Vec::new();
        for m in mounts {
            let at = PathPtr {
                mnt: m,
                dentry: m.root,
            };
            let (mountpoint, unreachable) = self.path_from_root(root, at);
            if unreachable {
                continue;
            }
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
            out.extend(escaped(&self.dentry_path(m.root)));
            out.push(b' ');
            out.extend(escaped(&mountpoint));
            out.push(b' ');
            out.extend_from_slice(mount_options(m.flags.get()).as_bytes());
            if m.is_shared() {
                let _ = write!(out, " shared:{}", m.group());
            }
            let master = m.master();
            if !master.is_null() {
                let master_group = unsafe { &*master }.group();
                let _ = write!(out, " master:{master_group}");
                let dominating = self.dominating_group(&links, m, root);
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

    /// dentry_path: `d`'s path from its filesystem's root, "//deleted"
    /// after it when it was removed. Caller holds a guard.
    fn dentry_path(&self, d: *const Dentry) -> Vec<u8> {
        loop {
            let seq = self.vfs.rename_seq.read_begin();
            let mut parts = Vec::new();
            let mut cur = d;
            loop {
                // SAFETY: the caller's guard keeps the chain allocated.
                let dr = unsafe { &*cur };
                let parent = dr.parent_ptr();
                if parent.is_null() {
                    break;
                }
                parts.push(dr.name());
                cur = parent;
            }
            if self.vfs.rename_seq.read_retry(seq) {
                continue;
            }
            let mut out = super::context::path_of(&parts);
            // SAFETY: as above.
            let dr = unsafe { &*d };
            if !dr.is_root() && !dr.is_hashed() {
                out.extend_from_slice(b"//deleted");
            }
            return out;
        }
    }

    /// get_dominating_id: the group of the nearest master up `m`'s chain
    /// with a peer in our namespace whose root our root reaches; 0 if none.
    /// Under the table lock.
    fn dominating_group(&self, links: &Links, m: &Mount, root: PathPtr) -> u64 {
        let mut master = m.master();
        while !master.is_null() {
            let found = std::iter::once(master)
                .chain(links.peers(master))
                .find(|&p| {
                    // SAFETY: attached mounts are live under the table lock.
                    let pr = unsafe { &*p };
                    pr.ns_id() == self.fs.ns.id && {
                        let at = PathPtr {
                            mnt: p,
                            dentry: pr.root,
                        };
                        !self.path_from_root(root, at).1
                    }
                });
            if let Some(p) = found {
                // SAFETY: as above.
                return unsafe { &*p }.group();
            }
            // SAFETY: as above.
            master = unsafe { &*master }.master();
        }
        0
    }
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
