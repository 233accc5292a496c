//! `vfscale mount` / `vfscale umount` as a user runs them: detached mount,
//! use, unmount; and a foreground server that unmounts on SIGTERM.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn can_mount() -> bool {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: /dev/fuse is missing");
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: mounting without fusermount needs root");
        return false;
    }
    true
}

fn mounted(p: &Path) -> bool {
    let want = p.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
}

fn wait_until(cond: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn mount_use_umount() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_vfscale");
    let st = Command::new(bin)
        .args(["mount", "--threads", "2", "--entry-ttl", "100ms"])
        .arg(dir.path())
        .status()
        .unwrap();
    if !st.success() {
        // Leave nothing behind even if the mount half-happened.
        let _ = Command::new(bin)
            .args(["umount", "--lazy"])
            .arg(dir.path())
            .status();
        panic!("vfscale mount failed: {st}");
    }
    assert!(mounted(dir.path()));
    std::fs::write(dir.path().join("hello"), b"hi").unwrap();
    assert_eq!(std::fs::read(dir.path().join("hello")).unwrap(), b"hi");
    let st = Command::new(bin)
        .arg("umount")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    assert!(!mounted(dir.path()));
    // The directory underneath is untouched.
    assert!(!dir.path().join("hello").exists());
    // Bad input: clear errors, not panics.
    let out = Command::new(bin)
        .args(["mount", "--backend", "nfs"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("backend"));
    let out = Command::new(bin)
        .args(["mount", "--entry-ttl", "soon"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(bin)
        .arg("umount")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn foreground_server_unmounts_on_sigterm() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args(["mount", "--foreground"])
        .arg(dir.path())
        .spawn()
        .unwrap();
    let up = wait_until(|| mounted(dir.path()));
    if !up {
        let _ = child.kill();
        panic!("foreground mount did not appear");
    }
    std::fs::create_dir(dir.path().join("d")).unwrap();
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert!(st.success(), "server exit: {st}");
    assert!(!mounted(dir.path()));
}

#[test]
fn passthrough_backend_mount_reaches_the_host_directory() {
    if !can_mount() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("on-host"), b"from the host").unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_vfscale");
    let backend = format!("passthrough:{}", host.path().display());
    let st = Command::new(bin)
        .args([
            "mount",
            "--backend",
            &backend,
            "--entry-ttl",
            "0",
            "--attr-ttl",
            "0",
        ])
        .arg(mnt.path())
        .status()
        .unwrap();
    if !st.success() {
        let _ = Command::new(bin)
            .args(["umount", "--lazy"])
            .arg(mnt.path())
            .status();
        panic!("vfscale mount --backend passthrough failed: {st}");
    }
    // Host files through the mount, and files made through the mount on
    // the host.
    let r = std::fs::read(mnt.path().join("on-host"));
    std::fs::write(mnt.path().join("via-mount"), b"through vfscale").unwrap();
    std::fs::create_dir(mnt.path().join("d")).unwrap();
    let on_host = std::fs::read(host.path().join("via-mount"));
    let dir_on_host = host.path().join("d").is_dir();
    let st = Command::new(bin)
        .arg("umount")
        .arg(mnt.path())
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(r.unwrap(), b"from the host");
    assert_eq!(on_host.unwrap(), b"through vfscale");
    assert!(dir_on_host);
    // A backend that is not a directory: a clear error.
    let out = Command::new(bin)
        .args(["mount", "--backend", "passthrough:/nonexistent/dir"])
        .arg(mnt.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
}

#[test]
fn uring_mount_says_how_it_is_served() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vfscale"))
        .args(["mount", "--uring", "--foreground"])
        .arg(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let up = wait_until(|| mounted(dir.path()));
    if !up {
        let _ = child.kill();
        panic!("foreground --uring mount did not appear");
    }
    std::fs::write(dir.path().join("f"), b"ring").unwrap();
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"ring");
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "server exit: {}", out.status);
    assert!(!mounted(dir.path()));
    let said = String::from_utf8_lossy(&out.stderr);
    // Served over the ring, or over /dev/fuse with the kernel's reason.
    let ring = said.contains("CPU queues)");
    let fallback = said.contains("not using FUSE over io_uring:") && said.contains("on /dev/fuse)");
    assert!(ring ^ fallback, "{said}");
    if fallback {
        eprintln!("SKIPPED (ring refused): {said}");
    }
}
