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
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, root) = (stop.clone(), host.path().to_path_buf());
            std::thread::spawn(move || {
                let (d, evil, tmp) = (root.join("d"), root.join("evil"), root.join("tmp"));
                let mut swaps = 0u32;
                while !stop.load(SeqCst) {
                    // d (dir) <-> evil (symlink), via rename: atomic on the host.
                    std::fs::rename(&d, &tmp).unwrap();
                    std::fs::rename(&evil, &d).unwrap();
                    std::fs::rename(&tmp, &evil).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
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
        stop.store(true, SeqCst);
        let swaps = swapper.join().unwrap();
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
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, root) = (stop.clone(), host.path().to_path_buf());
            std::thread::spawn(move || {
                let (d, evil, tmp) = (root.join("d"), root.join("evil"), root.join("tmp"));
                while !stop.load(SeqCst) {
                    std::fs::rename(&d, &tmp).unwrap();
                    std::fs::rename(&evil, &d).unwrap();
                    std::fs::rename(&tmp, &evil).unwrap();
                }
            })
        };
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
        stop.store(true, SeqCst);
        swapper.join().unwrap();
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
