//! The passthrough backend's security boundary: no path given to vfscale
//! reaches a host object outside the mirrored directory — not through
//! "..", absolute or relative symlinks, nor a directory swapped for a
//! symlink by a racing host thread between vfscale's check and its use.
//! Each attack runs with openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
//! and with the O_NOFOLLOW component-walk fallback.
//!
//! Every attack targets a file `secret` outside the root holding SECRET;
//! a success would read those bytes, so the checks are "never SECRET".

mod common_host;

use common_host::HostDir;
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{ProcessApi, Vfs, VfsConfig};

const SECRET: &[u8] = b"SECRET";

fn mirror(host: &HostDir, ttl: Duration, component_walk: bool) -> Vfs {
    let pt = Passthrough::new(
        host.path(),
        PassthroughConfig {
            ttl,
            ..Default::default()
        },
    )
    .unwrap();
    if component_walk {
        pt.host().force_component_walk();
    }
    Vfs::with_root_fs(VfsConfig::default(), Box::new(pt))
}

/// A host thread that keeps swapping `d` (a real directory) and `evil` (a
/// symlink to the outside directory) in the mirrored root by renames,
/// each atomic on the host, until stopped — or dropped, so that a failed
/// test case does not leave it renaming in a removed tree.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u32>>,
}

impl Swapper {
    fn start(root: &std::path::Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, root) = (stop.clone(), root.to_path_buf());
            std::thread::spawn(move || {
                let (d, evil, tmp) = (root.join("d"), root.join("evil"), root.join("tmp"));
                let mut swaps = 0u32;
                while !stop.load(SeqCst) {
                    std::fs::rename(&d, &tmp).unwrap();
                    std::fs::rename(&evil, &d).unwrap();
                    std::fs::rename(&tmp, &evil).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        Swapper {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the thread: how many swaps it made.
    fn stop(mut self) -> u32 {
        self.stop.store(true, SeqCst);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_path(p: &impl ProcessApi, path: &[u8]) -> SysResult<Vec<u8>> {
    let fd = p.open(path, O_RDONLY, 0)?;
    let mut buf = vec![0u8; 64];
    let r = p.read(fd, &mut buf);
    p.close(fd).unwrap();
    buf.truncate(r?);
    Ok(buf)
}

/// A host tree with an outside secret and the usual escape attempts.
fn hostile_tree(tag: &str) -> HostDir {
    let host = HostDir::new(tag);
    let outside = host.outside();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    host.write("inside", b"inside");
    // Absolute symlinks to the host root and to the outside directory.
    host.symlink("/", "to_root");
    host.symlink(outside.to_str().unwrap(), "to_outside_abs");
    // Relative symlinks climbing out.
    host.symlink("../outside", "to_outside_rel");
    host.symlink("../outside/secret", "secret_rel");
    host.mkdir("sub");
    host.symlink("../../outside/secret", "sub/deep_rel");
    if host_user_xattrs(&outside) {
        let p = std::ffi::CString::new(outside.join("secret").to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated strings; the value's length is passed.
        let r = unsafe {
            libc::setxattr(
                p.as_ptr(),
                c"user.secret".as_ptr(),
                SECRET.as_ptr().cast(),
                SECRET.len(),
                0,
            )
        };
        assert_eq!(r, 0);
    }
    host
}

/// Whether the host filesystem holding `dir` takes user.* attributes.
fn host_user_xattrs(dir: &std::path::Path) -> bool {
    let probe = dir.join("xattr-probe");
    std::fs::write(&probe, b"").unwrap();
    let p = std::ffi::CString::new(probe.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings; the value's length is passed.
    let r = unsafe {
        libc::setxattr(
            p.as_ptr(),
            c"user.probe".as_ptr(),
            b"1".as_ptr().cast(),
            1,
            0,
        )
    };
    let _ = std::fs::remove_file(&probe);
    r == 0
}

fn attacks_fail(vfs: &Vfs, host: &HostDir) {
    let p = vfs.root_process();
    let outside = host.outside();
    let abs_secret = outside.join("secret");
    let abs_secret = abs_secret.to_str().unwrap();
    let attempts: Vec<Vec<u8>> = vec![
        b"/../outside/secret".to_vec(),
        b"/../../../../outside/secret".to_vec(),
        b"/sub/../../outside/secret".to_vec(),
        b"/to_outside_rel/secret".to_vec(),
        b"/secret_rel".to_vec(),
        b"/sub/deep_rel".to_vec(),
        b"/to_outside_abs/secret".to_vec(),
        format!("/to_root{abs_secret}").into_bytes(),
        abs_secret.as_bytes().to_vec(),
        format!("/to_root/..{abs_secret}").into_bytes(),
    ];
    for path in &attempts {
        let r = read_path(&p, path);
        assert_ne!(
            r.as_deref(),
            Ok(SECRET),
            "{} escaped",
            String::from_utf8_lossy(path)
        );
        assert!(r.is_err(), "{}: {:?}", String::from_utf8_lossy(path), r);
    }
    // Extended attributes (routed to the host): nothing set through an
    // attempt lands on the secret, nothing read is its attribute.
    let secret_path = std::ffi::CString::new(abs_secret).unwrap();
    let host_get = |name: &str| {
        let n = std::ffi::CString::new(name).unwrap();
        let mut buf = [0u8; 64];
        // SAFETY: NUL-terminated strings; the buffer's length is passed.
        unsafe {
            libc::lgetxattr(
                secret_path.as_ptr(),
                n.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        }
    };
    for path in &attempts {
        let _ = p.setxattr(path, b"user.esc", b"x", 0);
        let _ = p.lsetxattr(path, b"trusted.esc", b"x", 0);
        let _ = p.removexattr(path, b"user.secret");
        let mut buf = [0u8; 64];
        let r = p.getxattr(path, b"user.secret", &mut buf);
        assert!(
            r.is_err(),
            "{}: read the secret's attribute",
            String::from_utf8_lossy(path)
        );
    }
    assert!(
        host_get("user.esc") < 0 && host_get("trusted.esc") < 0,
        "an attribute escaped"
    );
    // The secret's own attribute (when the host takes user xattrs) is intact.
    if host_user_xattrs(&outside) {
        assert_eq!(
            host_get("user.secret"),
            6,
            "an escape removed the secret's attribute"
        );
    }
    // ".." at the root is the root.
    assert_eq!(p.stat(b"/..").unwrap().ino, p.stat(b"/").unwrap().ino);
    assert_eq!(read_path(&p, b"/../inside").unwrap(), b"inside");
    // "/" through a symlink to the host's "/" is vfscale's root.
    assert_eq!(read_path(&p, b"/to_root/inside").unwrap(), b"inside");
    // chdir above the root stays inside too.
    p.chdir(b"/sub").unwrap();
    assert_eq!(read_path(&p, b"../../../inside").unwrap(), b"inside");
    assert!(read_path(&p, b"../../outside/secret").is_err());
}

#[test]
fn escapes_through_dotdot_and_symlinks_fail() {
    for component_walk in [false, true] {
        let host = hostile_tree("escapes");
        let vfs = mirror(&host, Duration::from_secs(3600), component_walk);
        attacks_fail(&vfs, &host);
        // Revalidating every use changes nothing.
        let vfs = mirror(&host, Duration::ZERO, component_walk);
        attacks_fail(&vfs, &host);
    }
}

#[test]
fn hard_links_are_inside_by_the_hosts_own_rules() {
    // A hard link inside the root *is* the file (the host put it there):
    // vfscale shows it under the inside name only, and never the outside
    // name.
    let host = HostDir::new("hardlink");
    let outside = host.outside();
    std::fs::write(outside.join("shared"), b"shared").unwrap();
    std::fs::hard_link(outside.join("shared"), host.path().join("hl")).unwrap();
    let vfs = mirror(&host, Duration::ZERO, false);
    let p = vfs.root_process();
    assert_eq!(read_path(&p, b"/hl").unwrap(), b"shared");
    assert_eq!(p.stat(b"/hl").unwrap().nlink, 2);
    assert!(read_path(&p, b"/../outside/shared").is_err());
    assert!(p.stat(b"/shared").is_err());
}

#[test]
fn swapping_a_directory_for_a_symlink_never_leaks() {
    // A host thread keeps swapping `d` between a real directory holding
    // `f` = "inside" and a symlink to the outside directory holding
    // `f` = SECRET, while vfscale (revalidating on every use, so each open
    // reaches the host) reads /d/f. Between vfscale's lookup of `d` (a
    // directory) and its open of `d/f` the swap can land: that open must
    // fail, never read SECRET. With a 2 ms TTL, lookups also use d's
    // cached directory fd, which follows the real directory around the
    // tree and is re-opened from the root (refusing the symlink) each TTL.
    for (component_walk, ttl) in [
        (false, Duration::ZERO),
        (true, Duration::ZERO),
        (false, Duration::from_millis(2)),
        (true, Duration::from_millis(2)),
    ] {
        let host = HostDir::new("swap");
        let outside = host.outside();
        std::fs::write(outside.join("f"), SECRET).unwrap();
        let real = host.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f"), b"inside").unwrap();
        let d = host.path().join("d");
        std::os::unix::fs::symlink(&outside, host.path().join("evil")).unwrap();
        std::fs::rename(&real, &d).unwrap();
        let vfs = mirror(&host, ttl, component_walk);
        let swapper = Swapper::start(host.path());
        let p = vfs.root_process();
        let (mut inside, mut refused) = (0u32, 0u32);
        for _ in 0..3000 {
            match read_path(&p, b"/d/f") {
                Ok(data) => {
                    assert_ne!(
                        data, SECRET,
                        "read the outside file (component_walk {component_walk})"
                    );
                    assert_eq!(data, b"inside");
                    inside += 1;
                }
                Err(_) => refused += 1,
            }
            // Also the lookup and stat paths.
            if let Ok(st) = p.stat(b"/d/f") {
                assert_eq!(st.size, 6, "stat of the outside file");
            }
        }
        let swaps = swapper.stop();
        assert!(swaps > 0);
        // The race really ran both ways at least once in most runs; the
        // safety property above is what must always hold.
        eprintln!("component_walk {component_walk}, ttl {ttl:?}: {inside} inside reads, {refused} refused, {swaps} swaps");
    }
}

#[test]
fn names_with_slashes_or_dots_never_reach_the_host() {
    let host = hostile_tree("names");
    let vfs = mirror(&host, Duration::ZERO, false);
    let p = vfs.root_process();
    // Components are split by vfscale: a name can never carry a '/', and
    // "." / ".." are resolved in vfscale's namespace. A NUL is EINVAL.
    assert_eq!(p.stat(b"/a\0b").map(|_| ()), Err(Errno::EINVAL));
    assert_eq!(p.stat(b"/./inside").unwrap().size, 6);
    assert_eq!(p.stat(b"/sub/./../inside").unwrap().size, 6);
}

#[test]
fn changes_never_land_outside_while_a_directory_is_swapped() {
    // As `swapping_a_directory_for_a_symlink_never_leaks`, but vfscale
    // creates, renames and removes names inside `d` while the host swaps
    // `d` for a symlink to the outside directory: nothing may ever appear
    // in (or vanish from) the outside directory.
    for component_walk in [false, true] {
        let host = HostDir::new("swapchange");
        let outside = host.outside();
        std::fs::write(outside.join("keep"), SECRET).unwrap();
        let real = host.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&outside, host.path().join("evil")).unwrap();
        std::fs::rename(&real, host.path().join("d")).unwrap();
        let vfs = mirror(&host, Duration::ZERO, component_walk);
        let swapper = Swapper::start(host.path());
        let p = vfs.root_process();
        for i in 0..1500 {
            let _ = p.mkdir(b"/d/newdir", 0o755);
            let _ = p.rmdir(b"/d/newdir");
            if let Ok(fd) = p.open(b"/d/newfile", O_CREAT | O_WRONLY, 0o644) {
                let _ = p.write(fd, b"x");
                p.close(fd).unwrap();
            }
            let _ = p.rename(b"/d/newfile", b"/d/renamed");
            let _ = p.unlink(b"/d/renamed");
            let _ = p.unlink(b"/d/newfile");
            let _ = p.symlink(b"/", b"/d/link");
            let _ = p.unlink(b"/d/link");
            let _ = p.unlink(b"/d/keep");
            let _ = p.chmod(b"/d/keep", 0o777);
            if i % 100 == 0 {
                let names: Vec<_> = std::fs::read_dir(&outside)
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                assert_eq!(names, ["keep"], "component_walk {component_walk}");
            }
        }
        swapper.stop();
        let names: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["keep"], "component_walk {component_walk}");
        assert_eq!(std::fs::read(outside.join("keep")).unwrap(), SECRET);
        use std::os::unix::fs::PermissionsExt;
        assert_ne!(
            std::fs::metadata(outside.join("keep"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o777,
            "chmod reached the outside file"
        );
    }
}

/// What a run could change in the outside directory, entry by entry
/// (recursively, links not followed): type and permission bits, owner,
/// link count, size, modification and change times, contents or link
/// target, and user.* attributes; the directory's own times too, so an
/// entry made and removed again still shows.
fn outside_state(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut state = Vec::new();
    let describe = |p: &std::path::Path, m: &std::fs::Metadata| {
        format!(
            "{} mode {:o} owner {}:{} nlink {} size {} mtime {}.{} ctime {}.{}",
            p.display(),
            m.mode(),
            m.uid(),
            m.gid(),
            m.nlink(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        )
    };
    state.push(describe(dir, &std::fs::symlink_metadata(dir).unwrap()));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let m = std::fs::symlink_metadata(&p).unwrap();
        state.push(describe(&p, &m));
        if m.file_type().is_dir() {
            state.extend(outside_state(&p));
        } else if m.file_type().is_symlink() {
            state.push(format!("-> {:?}", std::fs::read_link(&p).unwrap()));
        } else {
            state.push(format!("data {:?}", std::fs::read(&p).unwrap()));
            if let Ok(names) = xattr_names(&p) {
                state.push(format!("xattrs {names:?}"));
            }
        }
    }
    state
}

fn xattr_names(p: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: a NUL-terminated path and a buffer of the length passed.
    let n = unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// One call of `random_operations_never_touch_the_outside`, on paths and
/// symlink targets drawn from the pools there (by index).
#[derive(Clone, Debug)]
enum Op {
    Read(usize),
    Create(usize, bool),
    Mkdir(usize),
    Rmdir(usize),
    Unlink(usize),
    Rename(usize, usize),
    Link(usize, usize),
    Symlink(usize, usize),
    Chmod(usize),
    Chown(usize),
    Truncate(usize),
    Utimes(usize),
    SetXattr(usize),
    RemoveXattr(usize),
    List(usize),
    Stat(usize),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // Three in four paths through the swapped directory, where the races
    // are.
    let p = || prop_oneof![3 => 0..16usize, 1 => 0..64usize];
    prop_oneof![
        p().prop_map(Op::Read),
        (p(), any::<bool>()).prop_map(|(a, t)| Op::Create(a, t)),
        p().prop_map(Op::Mkdir),
        p().prop_map(Op::Rmdir),
        p().prop_map(Op::Unlink),
        (p(), p()).prop_map(|(a, b)| Op::Rename(a, b)),
        (p(), p()).prop_map(|(a, b)| Op::Link(a, b)),
        (p(), p()).prop_map(|(a, b)| Op::Symlink(a, b)),
        p().prop_map(Op::Chmod),
        p().prop_map(Op::Chown),
        p().prop_map(Op::Truncate),
        p().prop_map(Op::Utimes),
        p().prop_map(Op::SetXattr),
        p().prop_map(Op::RemoveXattr),
        p().prop_map(Op::List),
        p().prop_map(Op::Stat),
    ]
}

/// How many times `run_hostile_ops` makes its sequence of calls.
const ROUNDS: usize = 8;

/// Runs `ops` (`ROUNDS` times over) through vfscale while a host thread
/// keeps swapping `d` (a real directory) and `evil` (a symlink to the
/// outside directory), then checks that no read, stat or listing showed
/// an outside object (by its bytes or its host inode number: passthrough
/// numbers inodes on the root's device as the host does) and that nothing
/// outside changed.
fn run_hostile_ops(ops: &[Op], component_walk: bool, ttl: Duration) {
    let host = HostDir::new("randomops");
    let outside = host.outside();
    std::fs::write(outside.join("keep"), SECRET).unwrap();
    std::fs::create_dir(outside.join("nested")).unwrap();
    std::fs::write(outside.join("nested/inner"), SECRET).unwrap();
    host.write("inside", b"inside");
    host.mkdir("real/sub");
    host.write("real/f", b"inside");
    host.symlink("/", "to_root");
    host.symlink(outside.to_str().unwrap(), "to_outside_abs");
    host.symlink("../outside", "to_outside_rel");
    std::os::unix::fs::symlink(&outside, host.path().join("evil")).unwrap();
    std::fs::rename(host.path().join("real"), host.path().join("d")).unwrap();
    let before = outside_state(&outside);
    let host_ino = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(p).unwrap().ino()
    };
    // The outside objects and the directory above the root.
    let forbidden = [
        host_ino(&outside),
        host_ino(&outside.join("keep")),
        host_ino(&outside.join("nested")),
        host_ino(&outside.join("nested/inner")),
        host_ino(host.path().parent().unwrap()),
    ];

    let abs = outside.to_str().unwrap();
    let dirs: Vec<String> = vec![
        // The swapped names first (`op_strategy` favours them).
        "/d".into(),
        "/evil".into(),
        "/d/sub".into(),
        "/evil/sub".into(),
        "/to_outside_rel".into(),
        "/to_outside_abs".into(),
        "/..".into(),
        "/../outside".into(),
        "/d/../../outside".into(),
        format!("/to_root{abs}"),
        abs.into(),
        "/evil/nested".into(),
        "".into(),
        "/d/sub/..".into(),
        "/to_root".into(),
        "/d/sub/../..".into(),
    ];
    let leaves = ["keep", "f", "new", "nested"];
    let paths: Vec<Vec<u8>> = dirs
        .iter()
        .flat_map(|d| leaves.iter().map(move |l| format!("{d}/{l}").into_bytes()))
        .collect();
    assert_eq!(paths.len(), 64);
    let targets: [&[u8]; 4] = [b"/", b"../outside/keep", abs.as_bytes(), b"f"];

    let vfs = mirror(&host, ttl, component_walk);
    let base = vfs.object_counts();
    let swapper = Swapper::start(host.path());
    let p = vfs.root_process();
    let ctx = |op: &Op| format!("{op:?} (component_walk {component_walk}, ttl {ttl:?})");
    // Each call several times, so that some land in the swap's windows.
    for op in ops.iter().cycle().take(ops.len() * ROUNDS) {
        let path = |i: usize| paths[i].as_slice();
        match *op {
            Op::Read(a) => {
                if let Ok(data) = read_path(&p, path(a)) {
                    assert!(!data.starts_with(SECRET), "{}", ctx(op));
                }
            }
            Op::Create(a, trunc) => {
                let flags = O_CREAT | O_WRONLY | if trunc { O_TRUNC } else { O_APPEND };
                if let Ok(fd) = p.open(path(a), flags, 0o644) {
                    let _ = p.write(fd, b"x");
                    p.close(fd).unwrap();
                }
            }
            Op::Mkdir(a) => drop(p.mkdir(path(a), 0o755)),
            Op::Rmdir(a) => drop(p.rmdir(path(a))),
            Op::Unlink(a) => drop(p.unlink(path(a))),
            Op::Rename(a, b) => drop(p.rename(path(a), path(b))),
            Op::Link(a, b) => drop(p.link(path(a), path(b))),
            Op::Symlink(t, a) => drop(p.symlink(targets[t % targets.len()], path(a))),
            Op::Chmod(a) => drop(p.chmod(path(a), 0o777)),
            Op::Chown(a) => drop(p.chown(path(a), 1234, 1234)),
            Op::Truncate(a) => drop(p.truncate(path(a), 1)),
            Op::Utimes(a) => drop(p.utimensat(AT_FDCWD, path(a), None, 0)),
            Op::SetXattr(a) => drop(p.setxattr(path(a), b"user.planted", b"1", 0)),
            Op::RemoveXattr(a) => drop(p.removexattr(path(a), b"user.secret")),
            Op::List(a) => {
                if let Ok(entries) = p.read_dir(dir_of(path(a))) {
                    // ("." and ".." are vfscale's own: see the stats.)
                    for e in entries.iter().filter(|e| e.name != b"." && e.name != b"..") {
                        assert!(!forbidden.contains(&e.ino), "{:?}: {}", e.name, ctx(op));
                    }
                }
            }
            Op::Stat(a) => {
                for q in [path(a), dir_of(path(a))] {
                    if let Ok(st) = p.stat(q) {
                        assert!(!forbidden.contains(&st.ino), "{}", ctx(op));
                    }
                }
            }
        }
    }
    swapper.stop();
    assert_eq!(
        outside_state(&outside),
        before,
        "the outside changed (component_walk {component_walk}, ttl {ttl:?})"
    );
    // The race left the cache consistent: everything the run looked up
    // goes with the caches, and the invariants hold.
    p.exit();
    common_host::settled(&vfs, base).unwrap();
    vfs.check_invariants().unwrap();
}

/// The directory part of one of the pool's paths ("/" for a name in the
/// root).
fn dir_of(path: &[u8]) -> &[u8] {
    match &path[..path.iter().rposition(|&c| c == b'/').unwrap()] {
        b"" => b"/",
        dir => dir,
    }
}

proptest! {
    // Few cases (each runs beside a swapping host thread); PROPTEST_CASES
    // raises it for a longer hunt.
    #![proptest_config(common_host::proptest_config(64))]

    /// Random sequences of every kind of call, on paths that climb out by
    /// "..", absolute and relative symlinks, the host root, and a directory
    /// the host keeps swapping for a symlink to the outside: no call reads
    /// or lists anything outside the root, and none changes anything there
    /// (names, data, modes, owners, times, links, attributes).
    #[test]
    fn random_operations_never_touch_the_outside(
        ops in proptest::collection::vec(op_strategy(), 1..150),
        component_walk in any::<bool>(),
        ttl_ms in prop_oneof![Just(0u64), Just(2), Just(3_600_000)],
    ) {
        run_hostile_ops(&ops, component_walk, Duration::from_millis(ttl_ms));
    }
}
