//! flock(2) and fcntl(2)'s lock commands: who owns a lock, when it goes,
//! what conflicts, blocking waits, deadlock detection, errors (every
//! expected value is what Linux 6.18 does on tmpfs), and a multi-thread
//! check that the locks really exclude.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn lk(l_type: i16, l_start: i64, l_len: i64) -> Flock {
    Flock {
        l_type,
        l_whence: SEEK_SET as i16,
        l_start,
        l_len,
        l_pid: 0,
    }
}

/// F_GETLK / F_OFD_GETLK's answer for a request of `l_type` on the range.
fn probe(p: &Process, fd: Fd, cmd: i32, l_type: i16, start: i64, len: i64) -> Flock {
    let mut l = lk(l_type, start, len);
    p.fcntl_lock(fd, cmd, &mut l).unwrap();
    l
}

fn setup_file() -> (Vfs, Process) {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"0123456789");
    (vfs, p)
}

/// Every lock went with its files: no context left, invariants hold.
fn all_released(vfs: &Vfs) {
    assert_eq!(vfs.lock_contexts(), 0, "a lock outlived its files");
}

// ------------------------------------------------------------------ flock

#[test]
fn flock_belongs_to_the_open_file_description() {
    let (vfs, p) = setup_file();
    let a = p.open(b"/f", O_RDONLY, 0).unwrap();
    let b = p.open(b"/f", O_RDONLY, 0).unwrap();
    let a2 = p.dup(a).unwrap();
    assert_eq!(p.flock(a, LOCK_EX), Ok(()));
    // Another description conflicts, even in the same process.
    assert_eq!(p.flock(b, LOCK_EX | LOCK_NB), Err(Errno::EWOULDBLOCK));
    assert_eq!(p.flock(b, LOCK_SH | LOCK_NB), Err(Errno::EWOULDBLOCK));
    // A duplicate is the same description: the same lock.
    assert_eq!(p.flock(a2, LOCK_EX | LOCK_NB), Ok(()));
    assert_eq!(p.flock(a2, LOCK_SH | LOCK_NB), Ok(()), "converted");
    assert_eq!(p.flock(b, LOCK_SH | LOCK_NB), Ok(()), "readers share");
    assert_eq!(p.flock(a, LOCK_EX | LOCK_NB), Err(Errno::EWOULDBLOCK));
    // A conversion drops the old lock first, and a failed one does not
    // bring it back (Linux's flock_lock_inode): `a` holds nothing now.
    assert_eq!(p.flock(b, LOCK_EX | LOCK_NB), Ok(()));
    assert_eq!(p.flock(b, LOCK_SH), Ok(()));
    assert_eq!(p.flock(a, LOCK_SH | LOCK_NB), Ok(()));
    // Closing one of two descriptors of a description keeps its lock.
    p.close(a).unwrap();
    assert_eq!(p.flock(b, LOCK_EX | LOCK_NB), Err(Errno::EWOULDBLOCK));
    p.close(a2).unwrap();
    assert_eq!(p.flock(b, LOCK_EX | LOCK_NB), Ok(()));
    assert_eq!(p.flock(b, LOCK_UN), Ok(()));
    assert_eq!(p.flock(b, LOCK_UN), Ok(()), "unlocking nothing is fine");
    p.close(b).unwrap();
    all_released(&vfs);
    drop(p);
    vfs.check_invariants().unwrap();
}

#[test]
fn flock_is_released_by_the_last_close_at_once() {
    let (vfs, p) = setup_file();
    let q = vfs.root_process();
    for _ in 0..100 {
        let a = p.open(b"/f", O_RDONLY, 0).unwrap();
        p.flock(a, LOCK_EX).unwrap();
        p.close(a).unwrap();
        // No deferred put may keep the lock past close's return.
        let b = q.open(b"/f", O_RDONLY, 0).unwrap();
        assert_eq!(q.flock(b, LOCK_EX | LOCK_NB), Ok(()));
        q.close(b).unwrap();
    }
    all_released(&vfs);
}

#[test]
fn a_forked_child_shares_the_description_and_its_flock() {
    let (vfs, p) = setup_file();
    let a = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.flock(a, LOCK_EX).unwrap();
    let child = p.fork().unwrap();
    let other = vfs.root_process();
    let b = other.open(b"/f", O_RDONLY, 0).unwrap();
    p.close(a).unwrap();
    assert_eq!(
        other.flock(b, LOCK_SH | LOCK_NB),
        Err(Errno::EWOULDBLOCK),
        "the child still holds it"
    );
    child.exit();
    assert_eq!(other.flock(b, LOCK_SH | LOCK_NB), Ok(()));
    other.close(b).unwrap();
    all_released(&vfs);
}

#[test]
fn flock_waits_for_the_holder() {
    // A lost wake-up would hang: fail instead.
    with_timeout(120, flock_waits_for_the_holder_body);
}

fn flock_waits_for_the_holder_body() {
    let (vfs, p) = setup_file();
    let a = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.flock(a, LOCK_EX).unwrap();
    let got = Arc::new(AtomicBool::new(false));
    let q = vfs.root_process();
    let waiter = {
        let got = got.clone();
        std::thread::spawn(move || {
            let b = q.open(b"/f", O_RDONLY, 0).unwrap();
            q.flock(b, LOCK_SH).unwrap();
            got.store(true, Ordering::SeqCst);
            q.close(b).unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !got.load(Ordering::SeqCst),
        "got the lock while it was held"
    );
    p.flock(a, LOCK_UN).unwrap();
    waiter.join().unwrap();
    assert!(got.load(Ordering::SeqCst));
    p.close(a).unwrap();
    all_released(&vfs);
}

#[test]
fn flock_errors() {
    let (vfs, p) = setup_file();
    let fd = p.open(b"/f", O_RDONLY, 0).unwrap();
    for bad in [0, 3, LOCK_NB, LOCK_SH | LOCK_EX, 16] {
        assert_eq!(p.flock(fd, bad), Err(Errno::EINVAL), "operation {bad}");
    }
    // The operation is checked before the descriptor.
    assert_eq!(p.flock(99, 0), Err(Errno::EINVAL));
    assert_eq!(p.flock(99, LOCK_EX), Err(Errno::EBADF));
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    assert_eq!(p.flock(path, LOCK_EX), Err(Errno::EBADF));
    // The obsolete LOCK_MAND: accepted, does nothing.
    assert_eq!(p.flock(fd, LOCK_MAND | LOCK_READ_OBSOLETE), Ok(()));
    assert_eq!(vfs.lock_contexts(), 0);
    // Directories lock too.
    let dir = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(p.flock(dir, LOCK_EX | LOCK_NB), Ok(()));
    for f in [fd, path, dir] {
        p.close(f).unwrap();
    }
    all_released(&vfs);
}

/// LOCK_READ of the obsolete mandatory locks (only ever with LOCK_MAND).
const LOCK_READ_OBSOLETE: i32 = 64;

// ------------------------------------------------------------ POSIX locks

#[test]
fn posix_locks_belong_to_the_process() {
    let (vfs, p1) = setup_file();
    let p2 = vfs.root_process();
    let a = p1.open(b"/f", O_RDWR, 0).unwrap();
    let b = p2.open(b"/f", O_RDWR, 0).unwrap();
    p1.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 10)).unwrap();
    let mut r = lk(F_RDLCK, 5, 1);
    assert_eq!(p2.fcntl_lock(b, F_SETLK, &mut r), Err(Errno::EAGAIN));
    let got = probe(&p2, b, F_GETLK, F_RDLCK, 5, 1);
    assert_eq!((got.l_type, got.l_start, got.l_len), (F_WRLCK, 0, 10));
    assert!(got.l_pid > 0, "the holder's owner id: {}", got.l_pid);
    assert_eq!(p2.fcntl_lock(b, F_SETLK, &mut lk(F_RDLCK, 10, 10)), Ok(()));
    // The owner's own locks never conflict, through any of its descriptors.
    let a2 = p1.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(probe(&p1, a2, F_GETLK, F_WRLCK, 0, 10).l_type, F_UNLCK);
    assert_eq!(
        p1.fcntl_lock(a2, F_SETLK, &mut lk(F_RDLCK, 2, 2)),
        Ok(()),
        "split, same owner"
    );
    // A clone_thread sibling shares the table, so the owner.
    let t = p1.clone_thread();
    assert_eq!(
        probe(&t, a2, F_GETLK, F_WRLCK, 0, 100).l_type,
        F_RDLCK,
        "p2's lock at 10..20"
    );
    assert_eq!(probe(&t, a2, F_GETLK, F_WRLCK, 0, 10).l_type, F_UNLCK);
    drop(t);
    // Closing ANY descriptor of the file drops all of the process's locks
    // on it (POSIX's rule), here one that never locked anything.
    p1.close(a2).unwrap();
    assert_eq!(probe(&p2, b, F_GETLK, F_WRLCK, 0, 0).l_type, F_UNLCK);
    assert_eq!(p1.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 10)), Ok(()));
    // A fork does not inherit POSIX locks.
    let child = p1.fork().unwrap();
    assert_eq!(
        child.fcntl_lock(a, F_SETLK, &mut lk(F_RDLCK, 0, 1)),
        Err(Errno::EAGAIN)
    );
    child.exit();
    assert_eq!(
        probe(&p2, b, F_GETLK, F_RDLCK, 0, 1).l_type,
        F_WRLCK,
        "the child's exit kept the parent's"
    );
    // Exit drops them.
    p1.exit();
    assert_eq!(probe(&p2, b, F_GETLK, F_WRLCK, 0, 0).l_type, F_UNLCK);
    p2.close(b).unwrap();
    all_released(&vfs);
}

#[test]
fn ranges_split_merge_and_report() {
    let (vfs, p) = setup_file();
    let q = vfs.root_process();
    let a = p.open(b"/f", O_RDWR, 0).unwrap();
    let b = q.open(b"/f", O_RDWR, 0).unwrap();
    p.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 100)).unwrap();
    p.fcntl_lock(a, F_SETLK, &mut lk(F_RDLCK, 40, 10)).unwrap();
    p.fcntl_lock(a, F_SETLK, &mut lk(F_UNLCK, 60, 5)).unwrap();
    let report = |start, len| {
        let l = probe(&q, b, F_GETLK, F_WRLCK, start, len);
        (l.l_type, l.l_start, l.l_len)
    };
    assert_eq!(report(0, 0), (F_WRLCK, 0, 40), "the lowest blocking lock");
    assert_eq!(report(40, 10), (F_RDLCK, 40, 10));
    assert_eq!(
        report(60, 5),
        (F_UNLCK, 60, 5),
        "only l_type changes when free"
    );
    assert_eq!(report(62, 100), (F_WRLCK, 65, 35));
    // Readers may share the read-locked piece.
    assert_eq!(q.fcntl_lock(b, F_SETLK, &mut lk(F_RDLCK, 45, 2)), Ok(()));
    // Relock everything write: p's pieces merge, but q's reader is in the way.
    assert_eq!(
        p.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 100)),
        Err(Errno::EAGAIN)
    );
    q.fcntl_lock(b, F_SETLK, &mut lk(F_UNLCK, 0, 0)).unwrap();
    assert_eq!(p.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 100)), Ok(()));
    assert_eq!(report(50, 1), (F_WRLCK, 0, 100), "merged into one");
    // To the end of the file, however long: l_len 0.
    p.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 100, 0)).unwrap();
    assert_eq!(report(1 << 40, 1), (F_WRLCK, 0, 0));
    p.close(a).unwrap();
    q.close(b).unwrap();
    all_released(&vfs);
}

#[test]
fn whence_and_negative_lengths() {
    let (vfs, p) = setup_file();
    let q = vfs.root_process();
    let a = p.open(b"/f", O_RDWR, 0).unwrap();
    let b = q.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.lseek(a, 4, SEEK_SET), Ok(4));
    // SEEK_CUR from offset 4, 2 bytes back: bytes 2 and 3.
    let mut l = lk(F_WRLCK, 0, -2);
    l.l_whence = SEEK_CUR as i16;
    p.fcntl_lock(a, F_SETLK, &mut l).unwrap();
    let got = probe(&q, b, F_GETLK, F_RDLCK, 0, 0);
    assert_eq!(
        (got.l_start, got.l_len, got.l_whence),
        (2, 2, SEEK_SET as i16)
    );
    // SEEK_END of the 10-byte file, one byte before its end: byte 9.
    let mut l = lk(F_WRLCK, -1, 1);
    l.l_whence = SEEK_END as i16;
    p.fcntl_lock(a, F_SETLK, &mut l).unwrap();
    let got = probe(&q, b, F_GETLK, F_RDLCK, 5, 0);
    assert_eq!((got.l_start, got.l_len), (9, 1));
    p.close(a).unwrap();
    q.close(b).unwrap();
    all_released(&vfs);
}

#[test]
fn fcntl_lock_errors() {
    let (vfs, p) = setup_file();
    let rd = p.open(b"/f", O_RDONLY, 0).unwrap();
    let wr = p.open(b"/f", O_WRONLY, 0).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    let set = |fd, l: &mut Flock| p.fcntl_lock(fd, F_SETLK, l);
    // The lock's kind needs the matching access mode.
    assert_eq!(set(rd, &mut lk(F_WRLCK, 0, 1)), Err(Errno::EBADF));
    assert_eq!(set(wr, &mut lk(F_RDLCK, 0, 1)), Err(Errno::EBADF));
    assert_eq!(set(rd, &mut lk(F_UNLCK, 0, 1)), Ok(()));
    assert_eq!(
        set(path, &mut lk(F_UNLCK, 0, 1)),
        Err(Errno::EBADF),
        "O_PATH"
    );
    assert_eq!(set(99, &mut lk(F_RDLCK, 0, 1)), Err(Errno::EBADF));
    assert_eq!(
        p.fcntl_lock(99, 1234, &mut lk(F_RDLCK, 0, 1)),
        Err(Errno::EBADF),
        "fd first"
    );
    assert_eq!(
        p.fcntl_lock(rd, 1234, &mut lk(F_RDLCK, 0, 1)),
        Err(Errno::EINVAL)
    );
    assert_eq!(set(rd, &mut lk(7, 0, 1)), Err(Errno::EINVAL), "type");
    let mut l = lk(F_RDLCK, 0, 1);
    l.l_whence = 3;
    assert_eq!(set(rd, &mut l), Err(Errno::EINVAL), "whence");
    assert_eq!(
        set(rd, &mut lk(F_RDLCK, -1, 1)),
        Err(Errno::EINVAL),
        "before 0"
    );
    assert_eq!(
        set(rd, &mut lk(F_RDLCK, 2, -3)),
        Err(Errno::EINVAL),
        "reaches before 0"
    );
    assert_eq!(
        set(rd, &mut lk(F_RDLCK, i64::MAX, 2)),
        Err(Errno::EOVERFLOW)
    );
    assert_eq!(
        set(rd, &mut lk(F_RDLCK, i64::MAX, 1)),
        Ok(()),
        "the last byte"
    );
    let mut l = lk(F_RDLCK, i64::MAX, 1);
    l.l_whence = SEEK_END as i16;
    assert_eq!(set(rd, &mut l), Err(Errno::EOVERFLOW), "10 + MAX");
    // A bad range is reported before a bad type (Linux converts first).
    assert_eq!(set(rd, &mut lk(9, -1, 1)), Err(Errno::EINVAL));
    // F_GETLK of F_UNLCK is EINVAL; F_OFD_GETLK of F_UNLCK asks for the
    // description's own locks (Linux 6.6+); F_OFD_* need l_pid 0.
    assert_eq!(
        p.fcntl_lock(rd, F_GETLK, &mut lk(F_UNLCK, 0, 1)),
        Err(Errno::EINVAL)
    );
    p.fcntl_lock(rd, F_OFD_SETLK, &mut lk(F_RDLCK, 3, 2))
        .unwrap();
    let own = probe(&p, rd, F_OFD_GETLK, F_UNLCK, 0, 0);
    assert_eq!(
        (own.l_type, own.l_start, own.l_len, own.l_pid),
        (F_RDLCK, 3, 2, -1)
    );
    let other = probe(&p, wr, F_OFD_GETLK, F_UNLCK, 0, 0);
    assert_eq!(
        other.l_type, F_UNLCK,
        "another description's locks are not its own"
    );
    assert_eq!(
        p.fcntl_lock(rd, F_OFD_GETLK, &mut lk(7, 0, 1)),
        Err(Errno::EINVAL)
    );
    let mut l = lk(F_RDLCK, 0, 1);
    l.l_pid = 1;
    assert_eq!(p.fcntl_lock(rd, F_OFD_SETLK, &mut l), Err(Errno::EINVAL));
    assert_eq!(p.fcntl_lock(rd, F_OFD_GETLK, &mut l), Err(Errno::EINVAL));
    assert_eq!(
        p.fcntl_lock(rd, F_SETLK, &mut l),
        Ok(()),
        "POSIX ignores l_pid"
    );
    for fd in [rd, wr, path] {
        p.close(fd).unwrap();
    }
    all_released(&vfs);
}

// -------------------------------------------------------------- OFD locks

#[test]
fn ofd_locks_belong_to_the_description_and_meet_posix_locks() {
    let (vfs, p) = setup_file();
    let a = p.open(b"/f", O_RDWR, 0).unwrap();
    let b = p.open(b"/f", O_RDWR, 0).unwrap();
    p.fcntl_lock(a, F_OFD_SETLK, &mut lk(F_WRLCK, 0, 5))
        .unwrap();
    // Same process, other description: a conflict.
    assert_eq!(
        p.fcntl_lock(b, F_OFD_SETLK, &mut lk(F_RDLCK, 4, 1)),
        Err(Errno::EAGAIN)
    );
    let got = probe(&p, b, F_OFD_GETLK, F_RDLCK, 0, 0);
    assert_eq!(
        (got.l_type, got.l_start, got.l_len, got.l_pid),
        (F_WRLCK, 0, 5, -1)
    );
    // ...and with the process's own POSIX locks.
    assert_eq!(
        p.fcntl_lock(b, F_SETLK, &mut lk(F_RDLCK, 0, 1)),
        Err(Errno::EAGAIN)
    );
    p.fcntl_lock(b, F_SETLK, &mut lk(F_RDLCK, 5, 5)).unwrap();
    assert_eq!(
        p.fcntl_lock(a, F_OFD_SETLK, &mut lk(F_WRLCK, 9, 1)),
        Err(Errno::EAGAIN)
    );
    let got = probe(&p, a, F_OFD_GETLK, F_WRLCK, 9, 1);
    assert!(got.l_pid > 0, "a POSIX holder reports its owner id");
    // Closing another descriptor drops POSIX locks, not OFD ones.
    let c = p.open(b"/f", O_RDONLY, 0).unwrap();
    p.close(c).unwrap();
    assert_eq!(p.fcntl_lock(a, F_OFD_SETLK, &mut lk(F_WRLCK, 9, 1)), Ok(()));
    assert_eq!(
        p.fcntl_lock(b, F_OFD_SETLK, &mut lk(F_RDLCK, 4, 1)),
        Err(Errno::EAGAIN)
    );
    // The description's last close drops its OFD locks.
    let a2 = p.dup(a).unwrap();
    p.close(a).unwrap();
    assert_eq!(
        p.fcntl_lock(b, F_OFD_SETLK, &mut lk(F_RDLCK, 4, 1)),
        Err(Errno::EAGAIN)
    );
    p.close(a2).unwrap();
    assert_eq!(p.fcntl_lock(b, F_OFD_SETLK, &mut lk(F_RDLCK, 4, 1)), Ok(()));
    p.close(b).unwrap();
    all_released(&vfs);
}

// ------------------------------------------------------- waits, deadlocks

#[test]
fn setlkw_waits_and_a_cycle_is_edeadlk() {
    // A lost wake-up would hang: fail instead.
    with_timeout(120, setlkw_waits_and_a_cycle_is_edeadlk_body);
}

fn setlkw_waits_and_a_cycle_is_edeadlk_body() {
    let (vfs, p1) = setup_file();
    let p2 = vfs.root_process();
    let a = p1.open(b"/f", O_RDWR, 0).unwrap();
    let b = p2.open(b"/f", O_RDWR, 0).unwrap();
    p1.fcntl_lock(a, F_SETLK, &mut lk(F_WRLCK, 0, 1)).unwrap();
    p2.fcntl_lock(b, F_SETLK, &mut lk(F_WRLCK, 1, 1)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let done2 = done.clone();
        let p1 = &p1;
        let w = s.spawn(move || {
            // p1 waits for p2's byte 1.
            let r = p1.fcntl_lock(a, F_SETLKW, &mut lk(F_WRLCK, 1, 1));
            done2.store(true, Ordering::SeqCst);
            r
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "F_SETLKW did not wait");
        // p2 waiting for p1's byte 0 would wait forever: EDEADLK.
        assert_eq!(
            p2.fcntl_lock(b, F_SETLKW, &mut lk(F_WRLCK, 0, 1)),
            Err(Errno::EDEADLK)
        );
        assert!(!done.load(Ordering::SeqCst));
        p2.fcntl_lock(b, F_SETLK, &mut lk(F_UNLCK, 1, 1)).unwrap();
        assert_eq!(w.join().unwrap(), Ok(()));
    });
    assert_eq!(
        probe(&p2, b, F_GETLK, F_RDLCK, 0, 0).l_len,
        2,
        "p1 holds 0 and 1, merged"
    );
    p1.close(a).unwrap();
    p2.close(b).unwrap();
    all_released(&vfs);
}

/// Threads of separate processes take write locks on overlapping ranges
/// (F_SETLKW, F_OFD_SETLKW) and flock(LOCK_EX) on one file, and count
/// who is inside each protected region: never two at once. Readers
/// (F_RDLCK, LOCK_SH) are counted too: never inside with a writer.
#[test]
fn locks_exclude_under_contention() {
    // A lost wake-up would hang: fail instead.
    with_timeout(120, locks_exclude_under_contention_body);
}

fn locks_exclude_under_contention_body() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 300;
    let (vfs, p) = setup_file();
    // writers (bit 16 and up) and readers inside regions 0 (bytes 0..8,
    // POSIX), 1 (bytes 4..12, OFD; overlaps region 0) and 2 (flock).
    let inside: [AtomicUsize; 3] = Default::default();
    const WRITER: usize = 1 << 16;
    let enter = |r: usize, writer: bool| {
        let was = inside[r].fetch_add(if writer { WRITER } else { 1 }, Ordering::SeqCst);
        if writer {
            assert_eq!(was, 0, "region {r}: a writer met {was:#x}");
        } else {
            assert!(was < WRITER, "region {r}: a reader met a writer");
        }
    };
    let leave = |r: usize, writer: bool| {
        inside[r].fetch_sub(if writer { WRITER } else { 1 }, Ordering::SeqCst);
    };
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let q = vfs.root_process();
            let (enter, leave) = (&enter, &leave);
            s.spawn(move || {
                let fd = q.open(b"/f", O_RDWR, 0).unwrap();
                for i in 0..ROUNDS {
                    let writer = (i + t) % 3 != 0;
                    let ty = if writer { F_WRLCK } else { F_RDLCK };
                    match i % 3 {
                        0 => {
                            q.fcntl_lock(fd, F_SETLKW, &mut lk(ty, 0, 8)).unwrap();
                            enter(0, writer);
                            enter(1, writer);
                            leave(1, writer);
                            leave(0, writer);
                            q.fcntl_lock(fd, F_SETLK, &mut lk(F_UNLCK, 0, 8)).unwrap();
                        }
                        1 => {
                            q.fcntl_lock(fd, F_OFD_SETLKW, &mut lk(ty, 4, 8)).unwrap();
                            enter(1, writer);
                            leave(1, writer);
                            q.fcntl_lock(fd, F_OFD_SETLK, &mut lk(F_UNLCK, 4, 8))
                                .unwrap();
                        }
                        _ => {
                            q.flock(fd, if writer { LOCK_EX } else { LOCK_SH }).unwrap();
                            enter(2, writer);
                            leave(2, writer);
                            q.flock(fd, LOCK_UN).unwrap();
                        }
                    }
                }
                q.close(fd).unwrap();
            });
        }
    });
    all_released(&vfs);
    drop(p);
    vfs.check_invariants().unwrap();
}

/// A thread waiting in F_SETLKW while a sibling closes the descriptor: the
/// close drops the process's locks before the wait ends, so the lock the
/// wait then gets is undone and the call fails with EBADF (Linux's
/// fcntl_setlk does the same), leaving nothing behind.
#[test]
fn a_lock_granted_after_its_descriptor_closed_is_undone() {
    // A lost wake-up would hang: fail instead.
    with_timeout(
        120,
        a_lock_granted_after_its_descriptor_closed_is_undone_body,
    );
}

fn a_lock_granted_after_its_descriptor_closed_is_undone_body() {
    let (vfs, p) = setup_file();
    let holder = vfs.root_process();
    let h = holder.open(b"/f", O_RDWR, 0).unwrap();
    holder
        .fcntl_lock(h, F_SETLK, &mut lk(F_WRLCK, 0, 1))
        .unwrap();
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    let sibling = p.clone_thread();
    std::thread::scope(|s| {
        let w = s.spawn(|| sibling.fcntl_lock(fd, F_SETLKW, &mut lk(F_WRLCK, 0, 1)));
        std::thread::sleep(Duration::from_millis(50));
        p.close(fd).unwrap();
        holder
            .fcntl_lock(h, F_SETLK, &mut lk(F_UNLCK, 0, 0))
            .unwrap();
        assert_eq!(w.join().unwrap(), Err(Errno::EBADF));
    });
    assert_eq!(probe(&holder, h, F_GETLK, F_WRLCK, 0, 0).l_type, F_UNLCK);
    holder.close(h).unwrap();
    all_released(&vfs);
}

/// The lock context of an inode is made by the first lock and dropped with
/// the last, here thousands of times while other threads look it up: if a
/// thread ever locked in a context that was being dropped (a second
/// context for the inode), two writers would be inside at once.
#[test]
fn contexts_come_and_go_without_two_for_one_inode() {
    // A lost wake-up would hang: fail instead.
    with_timeout(120, contexts_come_and_go_without_two_for_one_inode_body);
}

fn contexts_come_and_go_without_two_for_one_inode_body() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 3000;
    let (vfs, _p) = setup_file();
    // Writers inside, per kind of lock (a flock and a POSIX lock do not
    // exclude each other, but both live in the inode's one context).
    let inside = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let start = std::sync::Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let q = vfs.root_process();
            let (inside, start) = (&inside, &start);
            s.spawn(move || {
                let fd = q.open(b"/f", O_RDWR, 0).unwrap();
                start.wait();
                for i in 0..ROUNDS {
                    let posix = (i + t) % 2 == 0;
                    if posix {
                        q.fcntl_lock(fd, F_SETLKW, &mut lk(F_WRLCK, 0, 0)).unwrap();
                    } else {
                        q.flock(fd, LOCK_EX).unwrap();
                    }
                    let n = &inside[usize::from(posix)];
                    assert_eq!(n.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                    n.fetch_sub(1, Ordering::SeqCst);
                    if posix {
                        q.fcntl_lock(fd, F_SETLK, &mut lk(F_UNLCK, 0, 0)).unwrap();
                    } else {
                        q.flock(fd, LOCK_UN).unwrap();
                    }
                }
                q.close(fd).unwrap();
            });
        }
    });
    all_released(&vfs);
}

/// Deadlock detection follows chains: P1 waits for P2, P2 for P3; P3
/// asking for P1's byte would close the cycle. P1 waits with two threads
/// (a `clone_thread` sibling shares its locks) in two files' contexts: the
/// end of one wait must not hide the other, which nothing wakes.
#[test]
fn a_chain_of_waiting_processes_is_edeadlk() {
    with_timeout(120, a_chain_of_waiting_processes_is_edeadlk_body);
}

fn a_chain_of_waiting_processes_is_edeadlk_body() {
    let (vfs, p1) = setup_file();
    mkfile(&p1, b"/g", b"");
    let (p2, p3) = (vfs.root_process(), vfs.root_process());
    let t1 = p1.clone_thread();
    let procs = [&p1, &p2, &p3];
    let f: Vec<Fd> = procs
        .iter()
        .map(|p| p.open(b"/f", O_RDWR, 0).unwrap())
        .collect();
    let g = p2.open(b"/g", O_RDWR, 0).unwrap();
    let g1 = p1.open(b"/g", O_RDWR, 0).unwrap();
    for (i, p) in procs.iter().enumerate() {
        p.fcntl_lock(f[i], F_SETLK, &mut lk(F_WRLCK, i as i64, 1))
            .unwrap();
    }
    p2.fcntl_lock(g, F_SETLK, &mut lk(F_WRLCK, 0, 1)).unwrap();
    std::thread::scope(|s| {
        // p1 waits for p2 twice: byte 1 of /f, byte 0 of /g; p2 for p3.
        let w1 = s.spawn(|| p1.fcntl_lock(f[0], F_SETLKW, &mut lk(F_WRLCK, 1, 1)));
        let w1g = s.spawn(|| t1.fcntl_lock(g1, F_SETLKW, &mut lk(F_WRLCK, 0, 1)));
        std::thread::sleep(Duration::from_millis(30));
        let w2 = s.spawn(|| p2.fcntl_lock(f[1], F_SETLKW, &mut lk(F_WRLCK, 2, 1)));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            p3.fcntl_lock(f[2], F_SETLKW, &mut lk(F_WRLCK, 0, 1)),
            Err(Errno::EDEADLK),
            "p3 -> p1 -> p2 -> p3"
        );
        // p2 releases /g: p1's wait there ends; its wait in /f goes on,
        // woken by nothing, and must still count.
        p2.fcntl_lock(g, F_SETLK, &mut lk(F_UNLCK, 0, 0)).unwrap();
        assert_eq!(w1g.join().unwrap(), Ok(()));
        assert_eq!(
            p3.fcntl_lock(f[2], F_SETLKW, &mut lk(F_WRLCK, 0, 1)),
            Err(Errno::EDEADLK),
            "p1 still waits for p2"
        );
        // Unwind: p3 lets p2 have byte 2, p2 then lets p1 have byte 1.
        p3.fcntl_lock(f[2], F_SETLK, &mut lk(F_UNLCK, 0, 0))
            .unwrap();
        assert_eq!(w2.join().unwrap(), Ok(()));
        p2.fcntl_lock(f[1], F_SETLK, &mut lk(F_UNLCK, 0, 0))
            .unwrap();
        assert_eq!(w1.join().unwrap(), Ok(()));
    });
    for (i, p) in procs.iter().enumerate() {
        p.close(f[i]).unwrap();
    }
    p2.close(g).unwrap();
    p1.close(g1).unwrap();
    drop(t1);
    all_released(&vfs);
}
