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
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
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
