//! The io_uring transport itself: a mount that asks for the ring is served
//! over it (requests counted by the ring's queues, none of them lost to
//! /dev/fuse), the fuse module's enable_uring parameter is as it was once
//! the mount is up, the mount works from every CPU (each has its own
//! queue), and a refused ring falls back to /dev/fuse with its reason.
//! Skips with the printed reason where the kernel refuses the ring. The
//! tests take `SERIAL` because the fallback test disables io_uring for the
//! whole machine for the duration of one mount call.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::MetadataExt;

const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";
const IO_URING_DISABLED: &str = "/proc/sys/kernel/io_uring_disabled";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn uring_mount() -> Option<TestMount> {
    mount_config(vfscale_fuse::MountConfig {
        uring: true,
        ..vfscale_fuse::MountConfig::default()
    })
}

#[test]
fn requests_are_served_over_the_ring_and_the_parameter_is_restored() {
    let _serial = serial();
    let before = fs::read_to_string(PARAM).ok();
    let Some(m) = uring_mount() else { return };
    assert_eq!(
        fs::read_to_string(PARAM).ok(),
        before,
        "enable_uring restored"
    );
    let mounted = m.mounted.as_ref().unwrap();
    let vfscale_fuse::Transport::IoUring { queues } = mounted.transport() else {
        panic!("not served over the ring");
    };
    assert!(queues >= 1);
    let start = mounted.ring_requests();
    for i in 0..50 {
        let p = m.p(&format!("f{i}"));
        fs::write(&p, b"abc").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"abc");
        fs::remove_file(&p).unwrap();
    }
    // create (+ write, flush...) + read + unlink: several per iteration.
    assert!(
        mounted.ring_requests() - start >= 150,
        "ring served {} requests",
        mounted.ring_requests() - start
    );
}

/// Pins the calling thread to `cpu`; false if that CPU is not usable.
fn pin(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (cpu is
    // below its bit count, checked); the call reads the whole set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return false;
        }
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[test]
fn every_cpus_queue_serves_its_callers() {
    let _serial = serial();
    let Some(m) = uring_mount() else { return };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for cpu in 0..cpus {
            let m = &m;
            s.spawn(move || {
                if !pin(cpu) {
                    return;
                }
                let d = m.p(&format!("cpu{cpu}"));
                fs::create_dir(&d).unwrap();
                for i in 0..20 {
                    let p = d.join(format!("f{i}"));
                    fs::write(&p, [cpu as u8; 10]).unwrap();
                    assert_eq!(fs::metadata(&p).unwrap().size(), 10);
                }
                let mut names: Vec<_> = fs::read_dir(&d)
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                names.sort();
                assert_eq!(names.len(), 20);
                for i in 0..20 {
                    fs::remove_file(d.join(format!("f{i}"))).unwrap();
                }
                fs::remove_dir(&d).unwrap();
            });
        }
    });
}

#[test]
fn a_refused_ring_falls_back_to_dev_fuse_with_its_reason() {
    let _serial = serial();
    let Ok(before) = fs::read_to_string(IO_URING_DISABLED) else {
        eprintln!("SKIPPED: no {IO_URING_DISABLED} (kernel before 6.6)");
        return;
    };
    if fs::write(IO_URING_DISABLED, "2").is_err() {
        eprintln!("SKIPPED: cannot write {IO_URING_DISABLED}");
        return;
    }
    // io_uring_setup now fails with EPERM: the ring cannot be built.
    let param_before = fs::read_to_string(PARAM).ok();
    let dir = tempfile::tempdir().unwrap();
    let vfs = vfscale::Vfs::new();
    let cfg = vfscale_fuse::MountConfig {
        uring: true,
        ..vfscale_fuse::MountConfig::default()
    };
    let mounted = vfscale_fuse::mount(&vfs, dir.path(), &cfg);
    fs::write(IO_URING_DISABLED, before.trim()).unwrap();
    let mut mounted = mounted.expect("mounted over /dev/fuse");
    assert_eq!(
        fs::read_to_string(PARAM).ok(),
        param_before,
        "enable_uring restored"
    );
    assert_eq!(mounted.transport(), vfscale_fuse::Transport::DevFuse);
    let why = mounted.uring_refusal().expect("a reason");
    assert!(why.contains("io_uring is not available"), "{why}");
    let p = dir.path().join("f");
    fs::write(&p, b"classic").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"classic");
    assert_eq!(mounted.ring_requests(), 0);
    unmount_once_idle(&mut mounted);
}
