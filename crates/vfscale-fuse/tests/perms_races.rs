//! Permission checks as another uid (the client runs in a child process
//! with other credentials), rename/unlink races from several threads, and a
//! 100,000-entry readdir.

mod common;

use common::*;
use std::collections::HashSet;
use std::fs;
use std::os::unix::process::CommandExt;
use std::process::Command;
use vfscale::ProcessApi;

/// Runs `script` with /bin/sh as uid/gid 1000 (std drops the supplementary
/// groups when a root parent sets the uid);
/// returns (exit code, stderr).
fn as_user(script: &str) -> (i32, String) {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .uid(1000)
        .gid(1000)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run /bin/sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn permissions_are_decided_by_the_core_for_other_uids() {
    let Some(m) = mount() else { return };
    let root = m.path().display().to_string();
    // Set up through the core, so the kernel has cached no name the user
    // will walk: without `default_permissions` the kernel checks search
    // permission only by sending LOOKUP, which a cached name skips
    // (COMPATIBILITY.md).
    let core = m.core();
    let mk = |path: &[u8], mode: u32| {
        let fd = core
            .open(path, vfscale::abi::O_CREAT | vfscale::abi::O_WRONLY, mode)
            .unwrap();
        core.write(fd, b"r").unwrap();
        core.close(fd).unwrap();
        core.chmod(path, mode).unwrap();
    };
    core.chmod(b"/", 0o755).unwrap();
    core.mkdir(b"/private", 0o700).unwrap();
    mk(b"/private/secret", 0o644);
    mk(b"/readonly", 0o644);
    core.mkdir(b"/shared", 0o777).unwrap();
    core.chmod(b"/shared", 0o1777).unwrap();
    mk(b"/shared/roots", 0o644);

    // A directory the user may read but not search: every name is listed.
    core.mkdir(b"/listonly", 0o744).unwrap();
    core.chmod(b"/listonly", 0o744).unwrap();
    mk(b"/listonly/one", 0o644);
    mk(b"/listonly/two", 0o644);
    let out = Command::new("/bin/ls")
        .arg(m.p("listonly"))
        .uid(1000)
        .gid(1000)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&out.stdout);
    assert!(names.contains("one") && names.contains("two"), "{names:?}");
    // But nothing inside can be opened.
    let (code, _) = as_user(&format!("cat {root}/listonly/one"));
    assert_ne!(code, 0);

    // Search permission denied.
    let (code, err) = as_user(&format!("cat {root}/private/secret"));
    assert_ne!(code, 0);
    assert!(err.contains("Permission denied"), "{err}");
    // Read allowed, write denied.
    assert_eq!(as_user(&format!("cat {root}/readonly")).0, 0);
    let (code, err) = as_user(&format!("echo x >> {root}/readonly"));
    assert_ne!(code, 0);
    assert!(err.contains("Permission denied"), "{err}");
    // Creating in a directory without write permission.
    let (code, err) = as_user(&format!("mkdir {root}/nope"));
    assert_ne!(code, 0);
    assert!(err.contains("Permission denied"), "{err}");
    // chmod of someone else's file.
    let (code, err) = as_user(&format!("chmod 777 {root}/readonly"));
    assert_ne!(code, 0);
    assert!(err.contains("Operation not permitted"), "{err}");
    // Sticky directory: may create and remove own files, not root's.
    assert_eq!(
        as_user(&format!(
            "touch {root}/shared/mine && rm {root}/shared/mine"
        ))
        .0,
        0
    );
    let (code, err) = as_user(&format!("rm -f {root}/shared/roots"));
    assert_ne!(code, 0);
    assert!(err.contains("Operation not permitted"), "{err}");
    assert!(m.p("shared/roots").exists());
    // Files the user creates belong to the user.
    assert_eq!(as_user(&format!("touch {root}/shared/owned")).0, 0);
    let st = core.stat(b"/shared/owned").unwrap();
    assert_eq!((st.uid, st.gid), (1000, 1000));
    // access(2) from the user: test -w uses it (faccessat).
    assert_ne!(as_user(&format!("test -w {root}/readonly")).0, 0);
    assert_eq!(as_user(&format!("test -r {root}/readonly")).0, 0);
}

#[test]
fn rename_and_unlink_races_keep_the_namespace_consistent() {
    let Some(m) = mount_with(2) else { return };
    fs::create_dir(m.p("a")).unwrap();
    fs::create_dir(m.p("b")).unwrap();
    const THREADS: usize = 4;
    const ROUNDS: usize = 1000;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let name = format!("f{}", i % 8);
                    let (from, to) = if (i + t) % 2 == 0 {
                        ("a", "b")
                    } else {
                        ("b", "a")
                    };
                    match i % 3 {
                        0 => {
                            let _ = fs::write(m.p(&format!("{from}/{name}")), b"x");
                        }
                        1 => {
                            let _ = fs::rename(
                                m.p(&format!("{from}/{name}")),
                                m.p(&format!("{to}/{name}")),
                            );
                        }
                        _ => {
                            let _ = fs::remove_file(m.p(&format!("{to}/{name}")));
                        }
                    }
                }
            });
        }
    });
    // The mount and the core agree on what is left, name by name.
    let core = m.core();
    for dir in ["a", "b"] {
        let via_mount: HashSet<String> = fs::read_dir(m.p(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let via_core: HashSet<String> = core
            .read_dir(format!("/{dir}").as_bytes())
            .unwrap()
            .into_iter()
            .map(|e| String::from_utf8(e.name).unwrap())
            .filter(|n| n != "." && n != "..")
            .collect();
        assert_eq!(via_mount, via_core, "directory {dir}");
        for n in &via_mount {
            assert!(fs::metadata(m.p(&format!("{dir}/{n}"))).unwrap().is_file());
        }
    }
    fs::remove_dir_all(m.p("a")).unwrap();
    fs::remove_dir_all(m.p("b")).unwrap();
    // With the session gone (and its handles released), the core's own
    // invariant checker finds every reference accounted for.
    drop(core);
    let TestMount { mounted, vfs, .. } = m;
    let mut mounted = mounted.unwrap();
    unmount_once_idle(&mut mounted);
    drop(mounted);
    // Removed directories live on while cached negative children point at
    // them (ARCHITECTURE.md, Decisions): reclaim those first.
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}

/// The kernel checks permissions itself before it asks (the server takes
/// FUSE_POSIX_ACL, which turns on `default_permissions`), and the core
/// checks again. Without that, the core's refusal of a LOOKUP was the
/// only search check, and the kernel takes a refused LOOKUP that
/// revalidates a cached name as "the name is gone": one walk by a user
/// who may not search a directory detached a mount stacked below it, in
/// every namespace. And the checks the kernel makes without any request
/// were made by nobody: "." and ".." from a directory, write permission on
/// a socket for connect.
#[test]
fn the_kernel_checks_before_it_asks() {
    // Entry TTL 0: every walk revalidates its names with a LOOKUP.
    let Some(m) = mount_config(vfscale_fuse::MountConfig {
        ttls: vfscale_fuse::Ttls {
            entry: std::time::Duration::ZERO,
            attr: std::time::Duration::ZERO,
        },
        ..vfscale_fuse::MountConfig::default()
    }) else {
        return;
    };
    let root = m.path().display().to_string();
    // Made through the mount: a change made beside it (the core API)
    // reaches the kernel as an asynchronous invalidation, which could
    // unhash a name between the walk and the mount below (ENOENT).
    use std::os::unix::fs::PermissionsExt;
    let mode = |rel: &str, mode: u32| {
        fs::set_permissions(m.p(rel), fs::Permissions::from_mode(mode)).unwrap()
    };
    mode(".", 0o755);
    fs::create_dir_all(m.p("m/p/x")).unwrap();
    mode("m", 0o755);
    mode("m/p", 0o700);
    let sock = cstr(&m.p("m/sock"));
    // SAFETY: NUL-terminated path.
    let r = unsafe { libc::mknod(sock.as_ptr(), libc::S_IFSOCK | 0o644, 0) };
    assert_eq!(r, 0, "mknod: {}", std::io::Error::last_os_error());
    mode("m/sock", 0o644);

    // A tmpfs on /m/p/x (the walk to it caches every name in the kernel).
    let x = cstr(&m.p("m/p/x"));
    // SAFETY: NUL-terminated strings; tmpfs takes no data here.
    let r = unsafe {
        libc::mount(
            c"none".as_ptr(),
            x.as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "mount tmpfs: {}", std::io::Error::last_os_error());
    let (code, err) = as_user(&format!("stat {root}/m/p/x"));
    assert_ne!(code, 0);
    assert!(err.contains("Permission denied"), "{err}");
    let stacked = is_mounted(&m.p("m/p/x"));
    // SAFETY: NUL-terminated path.
    unsafe { libc::umount2(x.as_ptr(), libc::MNT_DETACH) };
    assert!(
        stacked,
        "a walk refused for search permission detached a mount"
    );

    // ".." from a directory the user may not search.
    let (code, err) = as_user(&format!("ls {root}/m/p/.."));
    assert_ne!(code, 0, "listed through an unsearchable directory");
    assert!(err.contains("Permission denied"), "{err}");

    // connect(2) to a socket the user may not write: EACCES before any
    // listener is looked for (ECONNREFUSED would mean it was let through).
    let sock = m.p("m/sock");
    let connect = std::thread::spawn(move || {
        // SAFETY: the raw setresuid changes only this thread's
        // credentials (glibc's wrapper would change every thread's).
        let r = unsafe { libc::syscall(libc::SYS_setresuid, 1000, 1000, 1000) };
        assert_eq!(r, 0, "setresuid: {}", std::io::Error::last_os_error());
        std::os::unix::net::UnixStream::connect(sock).map(drop)
    })
    .join()
    .unwrap();
    assert_eq!(errno(connect), libc::EACCES);
}

/// Entries of the large listing (bounded: a few seconds in a debug build).
const LARGE: usize = 100_000;

#[test]
fn readdir_of_100k_entries_is_complete_and_unique() {
    let Some(m) = mount() else { return };
    let core = m.core();
    core.mkdir(b"/big", 0o755).unwrap();
    for i in 0..LARGE {
        let fd = core
            .open(
                format!("/big/entry-{i}").as_bytes(),
                vfscale::abi::O_CREAT | vfscale::abi::O_WRONLY,
                0o644,
            )
            .unwrap();
        core.close(fd).unwrap();
    }
    let mut seen = HashSet::with_capacity(LARGE);
    for e in fs::read_dir(m.p("big")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(seen.insert(name), "duplicate entry");
    }
    assert_eq!(seen.len(), LARGE);
    assert!(seen.contains("entry-0") && seen.contains(&format!("entry-{}", LARGE - 1)));
}

/// POSIX ACLs through the mount, as on tmpfs: an access ACL set through
/// the mount lets user 1000 read a file the mode bits deny (and its
/// removal takes that back), and a default ACL set through the mount
/// replaces the creating process's umask (the server asks for
/// FUSE_DONT_MASK, so the kernel leaves the umask to the core).
#[test]
fn acls_through_the_mount() {
    let Some(m) = mount() else { return };
    let root = m.path().display().to_string();
    let core = m.core();
    core.chmod(b"/", 0o755).unwrap();
    let fd = core
        .open(
            b"/secret",
            vfscale::abi::O_CREAT | vfscale::abi::O_WRONLY,
            0o600,
        )
        .unwrap();
    core.write(fd, b"s").unwrap();
    core.close(fd).unwrap();
    core.chmod(b"/secret", 0o600).unwrap();
    use vfscale::cred::acl::{value_of as acl, ACL_UNDEFINED_ID as U};
    let set = |path: &str, name: &str, value: &[u8]| {
        let p = std::ffi::CString::new(path).unwrap();
        let n = std::ffi::CString::new(name).unwrap();
        // SAFETY: valid NUL-terminated strings and a value buffer of the
        // given length.
        let r = unsafe {
            libc::setxattr(
                p.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        assert_eq!(
            r,
            0,
            "setxattr {path} {name}: {}",
            std::io::Error::last_os_error()
        );
    };
    assert_ne!(as_user(&format!("cat {root}/secret")).0, 0);
    set(
        &format!("{root}/secret"),
        "system.posix_acl_access",
        &acl(&[
            (1, 6, U),
            (2, 4, 1000),
            (4, 0, U),
            (0x10, 4, U),
            (0x20, 0, U),
        ]),
    );
    assert_eq!(core.stat(b"/secret").unwrap().mode & 0o777, 0o640);
    // The mount shows the new mode at once: the kernel drops its cached
    // attributes after a setxattr of its own (not echoed back to it).
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(m.p("secret"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640
    );
    assert_eq!(as_user(&format!("cat {root}/secret")).0, 0);
    let p = std::ffi::CString::new(format!("{root}/secret")).unwrap();
    let n = std::ffi::CString::new("system.posix_acl_access").unwrap();
    // SAFETY: valid NUL-terminated strings.
    assert_eq!(unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) }, 0);
    core.chmod(b"/secret", 0o600).unwrap();
    assert_ne!(as_user(&format!("cat {root}/secret")).0, 0);

    core.mkdir(b"/shared", 0o777).unwrap();
    core.chmod(b"/shared", 0o777).unwrap();
    set(
        &format!("{root}/shared"),
        "system.posix_acl_default",
        &acl(&[(1, 7, U), (4, 7, U), (0x20, 5, U)]),
    );
    let (code, err) = as_user(&format!(
        "umask 077; touch {root}/shared/f && mkdir {root}/shared/d"
    ));
    assert_eq!(code, 0, "{err}");
    // 0666 and 0777 masked by the default ACL (rwx, rwx, r-x), not by
    // the umask 077.
    assert_eq!(core.stat(b"/shared/f").unwrap().mode & 0o777, 0o664);
    assert_eq!(core.stat(b"/shared/d").unwrap().mode & 0o777, 0o775);
    // Without a default ACL the umask applies, as before.
    let (code, err) = as_user(&format!("umask 077; touch {root}/plain"));
    assert_ne!(code, 0, "{err}");
    core.mkdir(b"/open", 0o777).unwrap();
    core.chmod(b"/open", 0o777).unwrap();
    let (code, err) = as_user(&format!("umask 027; touch {root}/open/f"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(core.stat(b"/open/f").unwrap().mode & 0o777, 0o640);
}

/// Set-user-ID and set-group-ID are cleared through the mount exactly
/// when tmpfs clears them, by the core with the caller's credentials (the
/// server asks for FUSE_HANDLE_KILLPRIV_V2). Without it the kernel
/// cleared them itself by a SETATTR of the mode with the writer's
/// credentials, which the core refuses to a non-owner: a group member's
/// write to a group-writable set-group-ID file failed EPERM (found by
/// `mount_diff.rs`); and it cleared them before a fallocate the core then
/// refused.
#[test]
fn set_id_bits_are_cleared_as_on_tmpfs() {
    let Some(m) = mount() else { return };
    let root = m.path().display().to_string();
    let core = m.core();
    core.chmod(b"/", 0o777).unwrap();
    let setuid_file = |name: &str| {
        let path = format!("/{name}");
        let fd = core
            .open(
                path.as_bytes(),
                vfscale::abi::O_CREAT | vfscale::abi::O_WRONLY,
                0o755,
            )
            .unwrap();
        core.close(fd).unwrap();
        core.chown(path.as_bytes(), 1000, 1000).unwrap();
        core.chmod(path.as_bytes(), 0o6755).unwrap();
        path
    };
    let mode = |path: &str| core.stat(path.as_bytes()).unwrap().mode & 0o7777;
    // A fallocate mode tmpfs lacks fails and changes nothing.
    let refused = setuid_file("refused");
    let (code, _) = as_user(&format!("fallocate -z -l 1 {root}{refused}"));
    assert_ne!(code, 0, "zero-range is not a tmpfs mode");
    assert_eq!(mode(&refused), 0o6755);
    // A group member (not the owner) may write a group-writable
    // set-group-ID file, which clears set-group-ID.
    let shared = setuid_file("shared");
    core.chown(shared.as_bytes(), 1001, 1000).unwrap();
    core.chmod(shared.as_bytes(), 0o2775).unwrap();
    let (code, err) = as_user(&format!("sh -c 'printf x >> \"$0\"' {root}{shared}"));
    assert_eq!(code, 0, "a group member's write: {err}");
    assert_eq!(mode(&shared), 0o775);
    // A fallocate, a write and a truncate by the owner clear both bits.
    for (name, cmd) in [
        ("allocated", "fallocate -l 4096"),
        ("written", "sh -c 'printf x >> \"$0\"'"),
        ("truncated", "truncate -s 7"),
    ] {
        let path = setuid_file(name);
        let (code, err) = as_user(&format!("{cmd} {root}{path}"));
        assert_eq!(code, 0, "{cmd}: {err}");
        assert_eq!(mode(&path), 0o755, "{cmd}");
    }
    // Root's write keeps them (CAP_FSETID), as on tmpfs.
    let by_root = setuid_file("by-root");
    std::fs::OpenOptions::new()
        .append(true)
        .open(m.p("by-root"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"x"))
        .unwrap();
    assert_eq!(mode(&by_root), 0o6755);
}
