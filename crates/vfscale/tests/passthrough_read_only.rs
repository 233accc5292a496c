//! Read-only switches on a passthrough instance racing creates: an
//! open(O_CREAT) that answers EROFS made nothing, on the host or in
//! vfscale. The create's unit of write access is the one the opened file
//! keeps (`backend_create` hands it on), so no switch fits between the
//! host create and the open; before session 28 the open took a second
//! unit after the create, and a switch in between left the file made and
//! the open refused.

mod common_host;

use common_host::HostDir;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

#[test]
fn a_refused_create_made_nothing() {
    let host = HostDir::new("rdonly-create");
    let vfs =
        Vfs::with_passthrough_root(Default::default(), host.path(), Default::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let creators: Vec<_> = (0..2)
        .map(|t| {
            let p = vfs.root_process();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut made, mut refused) = (0u32, Vec::new());
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let name = format!("/{t}-{i}");
                    match p.open(name.as_bytes(), O_CREAT | O_EXCL | O_WRONLY, 0o644) {
                        Ok(fd) => {
                            assert_eq!(p.write(fd, b"x"), Ok(1));
                            p.close(fd).unwrap();
                            made += 1;
                        }
                        Err(e) => {
                            assert_eq!(e, Errno::EROFS, "{name}");
                            refused.push(name);
                        }
                    }
                }
                (made, refused)
            })
        })
        .collect();
    let p = vfs.root_process();
    let (mut switched, mut busy) = (0u32, 0u32);
    // Two seconds, and on a loaded machine (where the creators can keep
    // every switch busy for that long) on until one switch got through.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2)
        || (switched == 0 && start.elapsed() < Duration::from_secs(60))
    {
        match p.mount(b"", b"/", b"", MS_REMOUNT | MS_BIND | MS_RDONLY) {
            Ok(()) => {
                switched += 1;
                p.mount(b"", b"/", b"", MS_REMOUNT | MS_BIND).unwrap();
            }
            Err(e) => {
                assert_eq!(e, Errno::EBUSY);
                busy += 1;
            }
        }
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    let mut refused_total = 0;
    let mut made_total = 0;
    for c in creators {
        let (made, refused) = c.join().unwrap();
        made_total += made;
        refused_total += refused.len();
        for name in refused {
            assert_eq!(
                p.lstat(name.as_bytes()).err(),
                Some(Errno::ENOENT),
                "{name}"
            );
            assert!(
                !host.path().join(&name[1..]).exists(),
                "{name} was made on the host"
            );
        }
    }
    assert!(
        made_total > 0 && switched > 0,
        "made {made_total}, refused {refused_total}, switched {switched}, busy {busy}"
    );
    // Every file made is on the host with its byte; no unit is left.
    let on_host = std::fs::read_dir(host.path()).unwrap().count();
    assert_eq!(on_host, made_total as usize);
    p.mount(b"", b"/", b"", MS_REMOUNT | MS_BIND | MS_RDONLY)
        .unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
}

/// A switch of a passthrough instance to read-only frees the instance's
/// unused dentries first (`shrink_dcache_sb`), which evicts their inodes
/// and retires the backend's nodes: names looked up before (a file, a
/// directory's child, a missing name in a removed directory) are found
/// again from the host afterwards, with their data, and a removed
/// directory held only by a negative name does not make the switch EBUSY.
#[test]
fn an_instance_switch_frees_cached_names_and_finds_them_again() {
    let host = HostDir::new("rdonly-shrink");
    std::fs::create_dir(host.path().join("d")).unwrap();
    std::fs::write(host.path().join("d/f"), b"data").unwrap();
    let vfs =
        Vfs::with_passthrough_root(Default::default(), host.path(), Default::default()).unwrap();
    let p = vfs.root_process();
    assert_eq!(p.stat(b"/d/f").unwrap().size, 4);
    p.mkdir(b"/gone", 0o755).unwrap();
    assert_eq!(p.stat(b"/gone/missing"), Err(Errno::ENOENT));
    p.rmdir(b"/gone").unwrap();
    let cached = vfs.object_counts();
    p.mount(b"", b"/", b"", MS_REMOUNT | MS_RDONLY).unwrap();
    let after = vfs.object_counts();
    assert!(
        after.dentries < cached.dentries && after.inodes < cached.inodes,
        "nothing freed: {cached:?} then {after:?}"
    );
    let fd = p.open(b"/d/f", O_RDONLY, 0).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(p.read(fd, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"data");
    p.close(fd).unwrap();
    assert_eq!(p.mkdir(b"/d/new", 0o755), Err(Errno::EROFS));
    p.mount(b"", b"/", b"", MS_REMOUNT).unwrap();
    p.mkdir(b"/d/new", 0o755).unwrap();
    assert!(host.path().join("d/new").is_dir());
    drop(p);
    vfs.check_invariants().unwrap();
}
