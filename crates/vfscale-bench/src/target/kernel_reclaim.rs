//! The kernel side of `reclaim-groups`: seed 004's experiment (a memory
//! cgroup per container, a tmpfs mount populated from inside it, then
//! `echo 3 > /proc/sys/vm/drop_caches` five times), as root.
//!
//! Hierarchy: cgroup v2 when the host mounts cgroup2 with the memory
//! controller available, else cgroup v1's memory hierarchy as before; why v2
//! was not used is printed. Everything made is undone on every path (the
//! `Made` guard): mounts, directories, cgroups, and a `+memory` this run
//! wrote into the v2 root's `cgroup.subtree_control`.
//!
//! Membership: v1 moves the calling thread (its `tasks` file). v2 has no
//! per-thread membership for the memory controller (a domain controller;
//! threaded subtrees cannot enable it), so for each group a forked child
//! joins the group (`cgroup.procs`), mounts the tmpfs and creates the file,
//! and exits: its mount and file stay, charged to the group. The child runs
//! only async-signal-safe calls (everything it needs is prepared before the
//! fork). The calling thread first unshares its mount namespace (made
//! rprivate), which the children share, so every mount vanishes with it
//! even if cleanup fails.

use crate::target::OpError;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn unsupported(why: String) -> OpError {
    OpError::Unsupported(format!("cannot run: {why}"))
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths here have no NUL")
}

fn fail(what: &str, e: std::io::Error) -> OpError {
    OpError::Failed(format!("{what}: {e}"))
}

/// Which hierarchy a run uses.
enum Hierarchy {
    /// The v1 memory hierarchy; `home` is this thread's memory cgroup.
    V1 { home: PathBuf },
    /// A cgroup2 mount; `enabled_memory`: this run added `+memory` to the
    /// root's subtree_control (undone at the end).
    V2 { root: PathBuf, enabled_memory: bool },
}

/// The cgroup2 mount point, from /proc/self/mountinfo.
fn cgroup2_mount() -> Result<PathBuf, String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    info.lines()
        .find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            if post.split(' ').next()? != "cgroup2" {
                return None;
            }
            pre.split(' ').nth(4).map(PathBuf::from)
        })
        .ok_or_else(|| "the host mounts no cgroup2 hierarchy".into())
}

/// cgroup v2 with the memory controller usable for new children of the
/// mount's root (enabling it in the root's subtree_control if needed).
fn v2() -> Result<Hierarchy, String> {
    let root = cgroup2_mount()?;
    let read = |f: &str| {
        std::fs::read_to_string(root.join(f)).map_err(|e| format!("{}/{f}: {e}", root.display()))
    };
    let has_memory = |s: &str| s.split_whitespace().any(|c| c == "memory");
    if !has_memory(&read("cgroup.controllers")?) {
        return Err(format!(
            "cgroup2 at {} lacks the memory controller (it is bound to the v1 hierarchy)",
            root.display()
        ));
    }
    let mut enabled_memory = false;
    if !has_memory(&read("cgroup.subtree_control")?) {
        std::fs::write(root.join("cgroup.subtree_control"), "+memory").map_err(|e| {
            format!(
                "enabling +memory in {}/cgroup.subtree_control: {e} (a container's \
                 cgroup root that holds processes cannot delegate controllers)",
                root.display()
            )
        })?;
        enabled_memory = true;
    }
    Ok(Hierarchy::V2 {
        root,
        enabled_memory,
    })
}

/// This thread's memory cgroup directory (v1), from /proc/thread-self.
fn v1() -> Result<Hierarchy, String> {
    let root = Path::new("/sys/fs/cgroup/memory");
    if !root.join("tasks").exists() {
        return Err("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory".into());
    }
    let text = std::fs::read_to_string("/proc/thread-self/cgroup")
        .map_err(|e| format!("/proc/thread-self/cgroup: {e}"))?;
    let rel = text
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            ctl.split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .ok_or("this thread is in no memory cgroup")?;
    Ok(Hierarchy::V1 {
        home: root.join(rel.trim_start_matches('/')),
    })
}

fn move_thread(cg: &Path) -> std::io::Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    std::fs::write(cg.join("tasks"), tid.to_string())
}

/// Everything a run made, undone in reverse on drop.
struct Made {
    hierarchy: Hierarchy,
    base: PathBuf,
    cgroups: Vec<PathBuf>,
    mounts: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Drop for Made {
    fn drop(&mut self) {
        if let Hierarchy::V1 { home } = &self.hierarchy {
            let _ = move_thread(home);
        }
        for m in self.mounts.iter().rev() {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::umount2(cstr(m).as_ptr(), libc::MNT_DETACH) };
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir_all(d);
        }
        for c in self.cgroups.iter().rev() {
            let _ = std::fs::remove_dir(c);
        }
        let _ = std::fs::remove_dir(&self.base);
        if let Hierarchy::V2 {
            root,
            enabled_memory: true,
        } = &self.hierarchy
        {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "-memory");
        }
    }
}

/// Makes this thread's mount namespace private (so the children's mounts
/// vanish with it).
fn private_mount_namespace() -> Result<(), OpError> {
    super::kernel::enter_private_mount_namespace().map_err(unsupported)
}

/// A tmpfs on `m` with one empty file, made from inside v2 group `cg` by a
/// forked child.
fn populate_v2(cg: &Path, m: &Path) -> Result<(), OpError> {
    let procs = cstr(&cg.join("cgroup.procs"));
    let target = cstr(m);
    let file = cstr(&m.join("file"));
    // SAFETY: the child calls only async-signal-safe functions (open,
    // write, close, mount, _exit) on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(fail("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY (child): see above; every path ends in _exit.
        unsafe {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                libc::_exit(1);
            }
            libc::close(fd);
            if libc::mount(
                c"vfscale-reclaim".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                core::ptr::null(),
            ) != 0
            {
                libc::_exit(2);
            }
            let fd = libc::open(file.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
            if fd < 0 {
                libc::_exit(3);
            }
            libc::close(fd);
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(fail("waitpid", std::io::Error::last_os_error()));
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (_, code) => Err(OpError::Failed(format!(
            "cgroup v2 child (join, mount, create) failed at step {code}"
        ))),
    }
}

fn populate_v1(cg: &Path, m: &Path) -> Result<(), OpError> {
    move_thread(cg).map_err(|e| fail("join cgroup", e))?;
    // SAFETY: NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            c"vfscale-reclaim".as_ptr(),
            cstr(m).as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            core::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(fail("mount tmpfs", std::io::Error::last_os_error()));
    }
    std::fs::write(m.join("file"), b"").map_err(|e| fail("create", e))
}

pub(super) fn run(dir: &Path, groups: usize, passes: usize) -> Result<Vec<f64>, OpError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(unsupported("not root".into()));
    }
    let hierarchy = match v2() {
        Ok(h) => h,
        Err(why_not_v2) => {
            let h = v1().map_err(|why_not_v1| {
                unsupported(format!("cgroup v2: {why_not_v2}; cgroup v1: {why_not_v1}"))
            })?;
            eprintln!("reclaim-groups (kernel): cgroup v1 ({why_not_v2})");
            h
        }
    };
    let base = match &hierarchy {
        Hierarchy::V1 { home } => home.clone(),
        Hierarchy::V2 { root, .. } => root.clone(),
    }
    .join(format!("vfscale-reclaim-{}", std::process::id()));
    let mut made = Made {
        hierarchy,
        base: base.clone(),
        cgroups: Vec::new(),
        mounts: Vec::new(),
        dirs: Vec::new(),
    };
    private_mount_namespace()?;
    std::fs::create_dir(&base)
        .map_err(|e| unsupported(format!("mkdir {}: {e}", base.display())))?;
    if let Hierarchy::V2 { .. } = made.hierarchy {
        std::fs::write(base.join("cgroup.subtree_control"), "+memory")
            .map_err(|e| unsupported(format!("+memory under {}: {e}", base.display())))?;
        eprintln!(
            "reclaim-groups (kernel): cgroup v2 under {}",
            base.display()
        );
    }
    for i in 0..groups {
        let cg = base.join(i.to_string());
        std::fs::create_dir(&cg).map_err(|e| fail("mkdir cgroup", e))?;
        made.cgroups.push(cg.clone());
        let m = dir.join(format!("reclaim-{i}"));
        std::fs::create_dir(&m).map_err(|e| fail("mkdir", e))?;
        made.dirs.push(m.clone());
        // Recorded first: a failure after the mount still unmounts it.
        made.mounts.push(m.clone());
        match &made.hierarchy {
            Hierarchy::V1 { .. } => populate_v1(&cg, &m)?,
            Hierarchy::V2 { .. } => populate_v2(&cg, &m)?,
        }
    }
    if let Hierarchy::V1 { home } = &made.hierarchy {
        move_thread(home).map_err(|e| fail("leave cgroup", e))?;
    }
    let mut times = Vec::with_capacity(passes);
    for _ in 0..passes {
        let t = std::time::Instant::now();
        std::fs::write("/proc/sys/vm/drop_caches", b"3")
            .map_err(|e| unsupported(format!("/proc/sys/vm/drop_caches: {e}")))?;
        times.push(t.elapsed().as_secs_f64());
    }
    drop(made);
    Ok(times)
}
