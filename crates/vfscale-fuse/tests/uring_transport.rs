//! The io_uring transport itself: a mount that asks for the ring is served
//! over it (requests counted by the ring's queues, none of them lost to
//! /dev/fuse), the fuse module's enable_uring parameter is as it was once
//! the mount is up, and the mount works from every CPU (each has its own
//! queue). Skips with the printed reason where the kernel refuses the ring.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::MetadataExt;

const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

fn uring_mount() -> Option<TestMount> {
    mount_config(vfscale_fuse::MountConfig {
        uring: true,
        ..vfscale_fuse::MountConfig::default()
    })
}

#[test]
fn requests_are_served_over_the_ring_and_the_parameter_is_restored() {
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
