//! inotify across threads and against a simple expectation: the events of
//! common sequences, a blocking read woken by another thread's change, the
//! queue's overflow, watches that outlive their inode's names, and a stress
//! run of changes, watches and removals with an invariant check. The
//! single-threaded semantics are compared with Linux in
//! `vfscale-difftest/tests/inotify_kernel.rs`.

mod common;
use common::*;

fn events(p: &Process, fd: Fd) -> Vec<InotifyEvent> {
    let mut buf = vec![0u8; 65536];
    match p.read(fd, &mut buf) {
        Ok(n) => InotifyEvent::parse_all(&buf[..n]).expect("whole records"),
        Err(Errno::EAGAIN) => Vec::new(),
        Err(e) => panic!("read: {e}"),
    }
}

fn ev(wd: i32, mask: u32, name: &str) -> (i32, u32, String) {
    (wd, mask, name.to_string())
}

fn plain(v: Vec<InotifyEvent>) -> Vec<(i32, u32, String)> {
    v.into_iter()
        .map(|e| (e.wd, e.mask, String::from_utf8(e.name).unwrap()))
        .collect()
}

#[test]
fn a_directory_watch_sees_its_children() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p.inotify_add_watch(i, b"/d", IN_ALL_EVENTS).unwrap();
    assert_eq!(wd, 1);
    let fd = p.open(b"/d/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    p.write(fd, b"x").unwrap();
    p.write(fd, b"y").unwrap();
    p.close(fd).unwrap();
    p.unlink(b"/d/f").unwrap();
    assert_eq!(
        plain(events(&p, i)),
        vec![
            ev(wd, IN_CREATE, "f"),
            ev(wd, IN_OPEN, "f"),
            ev(wd, IN_MODIFY, "f"),
            ev(wd, IN_CLOSE_WRITE, "f"),
            ev(wd, IN_DELETE, "f"),
        ]
    );
}

#[test]
fn a_blocking_read_is_woken_by_another_threads_change() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let i = p.inotify_init1(0).unwrap();
    let wd = p.inotify_add_watch(i, b"/d", IN_CREATE).unwrap();
    let t = p.clone_thread();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let n = t.read(i, &mut buf).unwrap();
        plain(InotifyEvent::parse_all(&buf[..n]).unwrap())
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.mkdir(b"/d/sub", 0o755).unwrap();
    let got = with_timeout(10, move || reader.join().unwrap());
    assert_eq!(got, vec![ev(wd, IN_CREATE | IN_ISDIR, "sub")]);
}

#[test]
fn a_full_queue_drops_events_behind_one_overflow_record() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p.inotify_add_watch(i, b"/d", IN_CREATE).unwrap();
    for n in 0..INOTIFY_MAX_QUEUED_EVENTS + 10 {
        mkfile(&p, format!("/d/{n}").as_bytes(), b"");
    }
    let mut all = Vec::new();
    loop {
        let got = events(&p, i);
        if got.is_empty() {
            break;
        }
        all.extend(got);
    }
    assert_eq!(all.len(), INOTIFY_MAX_QUEUED_EVENTS + 1);
    for (n, e) in all[..INOTIFY_MAX_QUEUED_EVENTS].iter().enumerate() {
        assert_eq!(
            (e.wd, e.mask, &e.name),
            (wd, IN_CREATE, &n.to_string().into_bytes())
        );
    }
    let last = all.last().unwrap();
    assert_eq!(
        (last.wd, last.mask, last.name.len()),
        (-1, IN_Q_OVERFLOW, 0)
    );
    // Room again: new events queue.
    mkfile(&p, b"/d/again", b"");
    assert_eq!(plain(events(&p, i)), vec![ev(wd, IN_CREATE, "again")]);
}

#[test]
fn a_watched_file_open_when_unlinked_reports_its_deletion_at_the_last_close() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"data");
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p.inotify_add_watch(i, b"/f", IN_ALL_EVENTS).unwrap();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let dup = p.dup(fd).unwrap();
    p.unlink(b"/f").unwrap();
    assert_eq!(
        plain(events(&p, i)),
        vec![ev(wd, IN_OPEN, ""), ev(wd, IN_ATTRIB, "")]
    );
    p.close(fd).unwrap();
    assert_eq!(plain(events(&p, i)), vec![]);
    p.close(dup).unwrap();
    assert_eq!(
        plain(events(&p, i)),
        vec![
            ev(wd, IN_CLOSE_NOWRITE, ""),
            ev(wd, IN_DELETE_SELF, ""),
            ev(wd, IN_IGNORED, "")
        ]
    );
    // The watch went with the inode: its descriptor is unknown now.
    assert_eq!(p.inotify_rm_watch(i, wd), Err(Errno::EINVAL));
    p.close(i).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
}

/// Threads create and remove names in a watched directory while others add
/// and remove watches on the same directory and close whole instances.
/// The instance that watches throughout sees every change, in an order
/// that makes sense per name (each name's events alternate create,
/// delete), and the namespace is consistent afterwards (no pin left).
#[test]
fn concurrent_changes_and_watch_churn_keep_every_event_and_no_pin() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    let steady = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p
        .inotify_add_watch(steady, b"/d", IN_CREATE | IN_DELETE)
        .unwrap();
    const WRITERS: usize = 2;
    const ROUNDS: usize = 1500;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..WRITERS {
        let q = p.clone_thread();
        threads.push(std::thread::spawn(move || {
            for r in 0..ROUNDS {
                let name = format!("/d/t{t}-{}", r % 7);
                let fd = q
                    .open(name.as_bytes(), O_CREAT | O_EXCL | O_WRONLY, 0o644)
                    .unwrap();
                q.write(fd, b"x").unwrap();
                q.close(fd).unwrap();
                q.unlink(name.as_bytes()).unwrap();
            }
        }));
    }
    let churn = {
        let q = p.clone_thread();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rounds = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || rounds < 50 {
                let i = q.inotify_init1(IN_NONBLOCK).unwrap();
                let w = q
                    .inotify_add_watch(i, b"/d", IN_ALL_EVENTS | IN_ONESHOT)
                    .unwrap();
                let _ = q.inotify_add_watch(i, b"/", IN_ALL_EVENTS);
                if rounds.is_multiple_of(2) {
                    let _ = q.inotify_rm_watch(i, w);
                }
                let _ = events(&q, i);
                q.close(i).unwrap();
                rounds += 1;
            }
        })
    };
    let mut seen: Vec<InotifyEvent> = Vec::new();
    while threads.iter().any(|t| !t.is_finished()) {
        seen.extend(events(&p, steady));
    }
    for t in threads {
        t.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    seen.extend(events(&p, steady));
    assert!(
        seen.iter().all(|e| e.wd == wd && e.mask != IN_Q_OVERFLOW),
        "only the steady watch's events, no overflow"
    );
    let mut live = std::collections::HashMap::<Vec<u8>, bool>::new();
    for e in &seen {
        let exists = live.entry(e.name.clone()).or_insert(false);
        match e.mask {
            IN_CREATE => assert!(!*exists, "{:?} created twice", e.name),
            IN_DELETE => assert!(*exists, "{:?} deleted while absent", e.name),
            m => panic!("unexpected event {m:#x}"),
        }
        *exists = e.mask == IN_CREATE;
    }
    let creates = seen.iter().filter(|e| e.mask == IN_CREATE).count();
    assert_eq!(creates, WRITERS * ROUNDS);
    assert_eq!(seen.len(), 2 * WRITERS * ROUNDS);
    p.close(steady).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
}

/// The instance under the watches goes away: IN_UNMOUNT (with IN_ISDIR for
/// a directory) and IN_IGNORED for each watched inode, newest first — what
/// Linux 6.18 sent for the same tree on a host tmpfs (a watch on the
/// mount's root, a file and a directory; checked with a probe).
#[test]
fn an_unmount_ends_every_watch_on_the_instance() {
    let (vfs, p) = setup();
    tmpfs_at(&p, b"/m", 0).unwrap();
    p.mkdir(b"/m/sub", 0o755).unwrap();
    mkfile(&p, b"/m/f", b"");
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let root = p.inotify_add_watch(i, b"/m", IN_ALL_EVENTS).unwrap();
    let f = p.inotify_add_watch(i, b"/m/f", IN_ALL_EVENTS).unwrap();
    let sub = p.inotify_add_watch(i, b"/m/sub", IN_ALL_EVENTS).unwrap();
    // Watches pin inodes, not the mount.
    p.umount2(b"/m", 0).unwrap();
    assert_eq!(
        plain(events(&p, i)),
        vec![
            ev(f, IN_UNMOUNT, ""),
            ev(f, IN_IGNORED, ""),
            ev(sub, IN_UNMOUNT | IN_ISDIR, ""),
            ev(sub, IN_IGNORED, ""),
            ev(root, IN_UNMOUNT | IN_ISDIR, ""),
            ev(root, IN_IGNORED, ""),
        ]
    );
    p.close(i).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
}

/// Changes through the namespace-level (handle) API — what the FUSE
/// server makes of the kernel's requests — report as the syscalls do.
#[test]
fn changes_through_handles_report_as_syscalls() {
    let (vfs, p) = setup();
    let ns = vfscale::Namespace::new(&vfs);
    let root = std::sync::Arc::new(vfscale::Cred::root());
    p.mkdir(b"/d", 0o755).unwrap();
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let wd = p.inotify_add_watch(i, b"/d", IN_ALL_EVENTS).unwrap();
    let d = ns.lookup(&root, ns.root(), b"d").unwrap();
    let (f, fh) = ns.create(&root, &d.handle, b"f", O_RDWR, 0o644, 0).unwrap();
    ns.write(&root, fh, 0, b"data", false).unwrap();
    let set = |s: vfscale::SetAttr| ns.setattr(&root, &f.handle, &s).map(drop);
    set(vfscale::SetAttr {
        mode: Some(0o600),
        ..Default::default()
    })
    .unwrap();
    set(vfscale::SetAttr {
        size: Some(1),
        ..Default::default()
    })
    .unwrap();
    set(vfscale::SetAttr {
        atime: Some(Timespec::NOW),
        mtime: Some(Timespec::NOW),
        ..Default::default()
    })
    .unwrap();
    ns.setxattr(&root, &f.handle, b"user.k", b"v", 0).unwrap();
    ns.release(fh).unwrap();
    ns.unlink(&root, &d.handle, b"f").unwrap();
    assert_eq!(
        plain(events(&p, i)),
        vec![
            ev(wd, IN_CREATE, "f"),
            ev(wd, IN_OPEN, "f"),
            ev(wd, IN_MODIFY, "f"),
            ev(wd, IN_ATTRIB, "f"),
            ev(wd, IN_MODIFY, "f"),
            ev(wd, IN_ATTRIB, "f"),
            ev(wd, IN_CLOSE_WRITE, "f"),
            ev(wd, IN_DELETE, "f"),
        ]
    );
}

/// Calls that move bytes between files report IN_ACCESS on the source,
/// then IN_MODIFY on the destination — the events and order a host tmpfs
/// gave for the same calls (copy_file_range, sendfile, splice both ways;
/// probed with Python's os module, session 34).
#[test]
fn calls_that_move_bytes_report_access_then_modify() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/d/a", b"hello world");
    mkfile(&p, b"/d/b", b"");
    let i = p.inotify_init1(IN_NONBLOCK).unwrap();
    let d = p.inotify_add_watch(i, b"/d", IN_ALL_EVENTS).unwrap();
    let a = p.inotify_add_watch(i, b"/d/a", IN_ALL_EVENTS).unwrap();
    let b = p.inotify_add_watch(i, b"/d/b", IN_ALL_EVENTS).unwrap();
    let fa = p.open(b"/d/a", O_RDONLY, 0).unwrap();
    let fb = p.open(b"/d/b", O_WRONLY, 0).unwrap();
    let _ = events(&p, i);
    let moved = vec![
        ev(d, IN_ACCESS, "a"),
        ev(a, IN_ACCESS, ""),
        ev(d, IN_MODIFY, "b"),
        ev(b, IN_MODIFY, ""),
    ];
    assert_eq!(p.copy_file_range(fa, None, fb, None, 5, 0), Ok(5));
    assert_eq!(plain(events(&p, i)), moved, "copy_file_range");
    let mut at = 0;
    assert_eq!(p.sendfile(fb, fa, Some(&mut at), 5), Ok(5));
    assert_eq!(plain(events(&p, i)), moved, "sendfile");
    let [r, w] = p.pipe2(0).unwrap();
    assert_eq!(p.splice(fa, None, w, None, 3, 0), Ok(3));
    assert_eq!(plain(events(&p, i)), moved[..2].to_vec(), "splice in");
    assert_eq!(p.splice(r, None, fb, None, 3, 0), Ok(3));
    assert_eq!(plain(events(&p, i)), moved[2..].to_vec(), "splice out");
}
