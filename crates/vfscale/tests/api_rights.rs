//! Passing open files over AF_UNIX sockets (SCM_RIGHTS): vfscale's own
//! rule against cycles of sockets in flight (ETOOMANYREFS, where Linux's
//! garbage collector would let them form), a blocking send with files, and
//! stress tests that lose nothing. The comparison with the kernel is
//! `vfscale-difftest/tests/rights_kernel.rs`.

mod common;
use common::*;
use std::sync::Arc;

fn send(p: &Process, fd: Fd, rights: &[Fd]) -> SysResult<usize> {
    p.sendmsg(fd, &[b"x"], 0, None, rights, None)
}

/// Receives one message with room for 4 descriptors and closes them;
/// returns how many came.
fn take(p: &Process, fd: Fd) -> usize {
    let mut buf = [0u8; 16];
    let r = p.recvmsg(fd, &mut [&mut buf], 0, cmsg_space(16)).unwrap();
    for &f in &r.fds {
        p.close(f).unwrap();
    }
    r.fds.len()
}

#[test]
fn sockets_in_flight_never_form_a_cycle() {
    let (vfs, p) = setup();
    let pair = |ty| p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
    let [a, b] = pair(SOCK_STREAM);
    let [c, d] = pair(SOCK_STREAM);
    let [r, w] = p.pipe2(0).unwrap();

    // b into its own queue (Linux lets it, and its collector frees the
    // pair once both are closed): refused.
    assert_eq!(send(&p, a, &[b]), Err(Errno::ETOOMANYREFS));
    // a into b's queue: a's own queue holds no files.
    assert_eq!(send(&p, a, &[a]), Ok(1));
    // a is in flight: nothing may queue files to it...
    assert_eq!(send(&p, b, &[r]), Err(Errno::ETOOMANYREFS));
    assert_eq!(send(&p, b, &[]), Ok(1), "plain data still goes");
    // ...and b, which holds files, may not be passed.
    assert_eq!(send(&p, c, &[b]), Err(Errno::ETOOMANYREFS));
    // Taking the message lifts both.
    assert_eq!(take(&p, b), 1);
    assert_eq!(take(&p, a), 0);
    assert_eq!(send(&p, b, &[r]), Ok(1));
    assert_eq!(take(&p, a), 1);
    assert_eq!(send(&p, c, &[b]), Ok(1));
    assert_eq!(take(&p, d), 1);

    // A listener is never passed (its unaccepted connections may hold
    // files).
    let l = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(l, b"/l").unwrap();
    p.listen(l, 4).unwrap();
    assert_eq!(send(&p, c, &[l]), Err(Errno::ETOOMANYREFS));

    // A socket passed before it listens: files to its unaccepted
    // connections are refused while it is in flight.
    let s = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(s, b"/s").unwrap();
    assert_eq!(send(&p, c, &[s]), Ok(1));
    p.listen(s, 4).unwrap();
    let k = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.connect(k, b"/s").unwrap();
    assert_eq!(send(&p, k, &[r]), Err(Errno::ETOOMANYREFS));
    assert_eq!(take(&p, d), 1);
    assert_eq!(send(&p, k, &[r]), Ok(1));
    let accepted = p.accept4(s, 0).unwrap();
    assert_eq!(take(&p, accepted), 1);

    // Datagrams: a socket in flight takes no files by name either.
    let x = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(x, b"/x").unwrap();
    let y = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    assert_eq!(send(&p, c, &[x]), Ok(1));
    assert_eq!(
        p.sendmsg(y, &[b"m"], 0, Some(b"/x"), &[w], None),
        Err(Errno::ETOOMANYREFS)
    );
    assert_eq!(take(&p, d), 1);
    assert_eq!(p.sendmsg(y, &[b"m"], 0, Some(b"/x"), &[w], None), Ok(1));
    // A refused send loses nothing: the pipe still has its two ends.
    assert_eq!(take(&p, x), 1);

    for fd in [a, b, c, d, r, w, l, s, k, accepted, x, y] {
        p.close(fd).unwrap();
    }
    for name in [&b"/l"[..], b"/s", b"/x"] {
        p.unlink(name).unwrap();
    }
    drop(p);
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}

#[test]
fn a_blocking_send_with_files_waits_for_room() {
    let (vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let [r, w] = p.pipe2(0).unwrap();
    // Fill the direction past its budget (six segments cost 214,528
    // bytes of 212,992), then send files: the send waits until a read
    // frees a segment.
    let fill = vec![0u8; 210_000];
    assert_eq!(p.write(a, &fill), Ok(fill.len()));
    let sender = p.clone_thread();
    let t = std::thread::spawn(move || sender.sendmsg(a, &[&[1u8; 30_000]], 0, None, &[r], None));
    tick();
    assert!(!t.is_finished(), "the send waits for room");
    let mut buf = vec![0u8; 100_000];
    let mut got = 0;
    while got < fill.len() {
        got += p
            .read(b, &mut buf[..(fill.len() - got).min(100_000)])
            .unwrap();
    }
    assert_eq!(with_timeout(10, move || t.join().unwrap()), Ok(30_000));
    let r2 = p.recvmsg(b, &mut [&mut buf], 0, cmsg_len(4)).unwrap();
    assert_eq!((r2.len, r2.fds.len()), (30_000, 1));
    // The received read end reads the pipe.
    assert_eq!(p.write(w, b"ok"), Ok(2));
    let mut two = [0u8; 2];
    assert_eq!(p.read(r2.fds[0], &mut two), Ok(2));
    assert_eq!(&two, b"ok");
    for fd in [a, b, r, w, r2.fds[0]] {
        p.close(fd).unwrap();
    }
    drop(p);
    assert_baseline(&vfs);
}

/// Threads pass random descriptors over random sockets, receive, close
/// and make new pairs, all on one descriptor table; then everything is
/// closed and nothing is left (no file lost in flight, no cycle kept
/// alive), and every call answered one of the errors it may.
#[test]
fn passing_files_at_random_loses_nothing() {
    const THREADS: u64 = 4;
    const STEPS: usize = 20_000;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let allowed = [
        Errno::EBADF,
        Errno::ENOTSOCK,
        Errno::EAGAIN,
        Errno::ETOOMANYREFS,
        Errno::EPIPE,
        Errno::ECONNRESET,
        Errno::ENOTCONN,
        Errno::ECONNREFUSED,
        Errno::EMFILE,
    ];
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let p = p.clone_thread();
            std::thread::spawn(move || {
                let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64 ^ (t + 1));
                let mut rnd = move |n: u64| next(n) as i32;
                let mut ok = [0usize; 2];
                for _ in 0..STEPS {
                    let fd = 3 + rnd(24);
                    let r = match rnd(12) {
                        0 => p
                            .socketpair(
                                AF_UNIX,
                                [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM][rnd(3) as usize]
                                    | SOCK_NONBLOCK,
                                0,
                            )
                            .map(|_| 0),
                        1 => p.pipe2(O_NONBLOCK).map(|_| 0),
                        2..=5 => {
                            let rights: Vec<Fd> = (0..rnd(4)).map(|_| 3 + rnd(24)).collect();
                            let r = p.sendmsg(fd, &[b"data"], 0, None, &rights, None);
                            ok[0] += usize::from(r.is_ok());
                            r.map(|_| 0)
                        }
                        6..=8 => {
                            let mut buf = [0u8; 8];
                            let flags = if rnd(4) == 0 { MSG_PEEK } else { 0 };
                            let r = p.recvmsg(
                                fd,
                                &mut [&mut buf],
                                flags,
                                [0, cmsg_len(4), cmsg_len(8)][rnd(3) as usize],
                            );
                            ok[1] += r.as_ref().map_or(0, |m| m.fds.len());
                            r.map(|_| 0)
                        }
                        9 => {
                            let mut buf = [0u8; 8];
                            p.read(fd, &mut buf).map(|_| 0)
                        }
                        _ => p.close(fd).map(|_| 0),
                    };
                    if let Err(e) = r {
                        // A read of a pipe or a listener-less socket may
                        // also say EINVAL; anything else is a bug.
                        assert!(allowed.contains(&e) || e == Errno::EINVAL, "{e:?}");
                    }
                }
                ok
            })
        })
        .collect();
    let mut ok = [0usize; 2];
    for t in threads {
        let o = with_timeout(60, move || t.join().unwrap());
        ok[0] += o[0];
        ok[1] += o[1];
    }
    assert!(ok[0] > 100 && ok[1] > 10, "too little happened: {ok:?}");
    p.close_range(0, u32::MAX, 0).unwrap();
    drop(p);
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}

/// The race the rule's mutex settles: two sends, each passing one socket
/// into the other's queue. Both going through would make a cycle (each
/// socket in flight, held only by the other's queue, once the processes
/// close them): exactly one goes, every time, and nothing is left.
#[test]
fn two_sends_racing_to_close_a_cycle_never_both_go() {
    let vfs = Vfs::new();
    let p = vfs.root_process();
    for _ in 0..300 {
        let [x, x_peer] = p
            .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
            .unwrap();
        let [y, y_peer] = p
            .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
            .unwrap();
        let start = Arc::new(std::sync::Barrier::new(2));
        // x into y's queue (sent from y's peer), and y into x's.
        let racers: Vec<_> = [(y_peer, x), (x_peer, y)]
            .into_iter()
            .map(|(via, passed)| {
                let (p, start) = (p.clone_thread(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    p.sendmsg(via, &[b"s"], 0, None, &[passed], None)
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        // Whichever takes the rule's mutex second finds the first's
        // counts: exactly one goes.
        let mut sorted = results.clone();
        sorted.sort();
        assert_eq!(sorted, [Ok(1), Err(Errno::ETOOMANYREFS)], "{results:?}");
        for fd in [x, x_peer, y, y_peer] {
            p.close(fd).unwrap();
        }
    }
    drop(p);
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}

/// Linux's per-user limit (too_many_unix_fds): a user with more files in
/// flight than the sender's descriptor limit sends no more until some
/// are received; the count is per real uid across processes and sockets;
/// root is exempt. (`inflight_limit_kernel.rs` compares the same with the
/// kernel.)
#[test]
fn a_user_with_too_many_files_in_flight_sends_no_more() {
    let vfs = Vfs::new();
    let (u1, u2, root) = (
        user(&vfs, 1000, 1000),
        user(&vfs, 1000, 1000),
        vfs.root_process(),
    );
    for p in [&u1, &u2, &root] {
        p.set_fd_limit(8);
    }
    let [a, b] = u1
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let [c, d] = u2
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let [r, w] = u1.pipe2(0).unwrap();
    let nine = [r; 9];
    assert_eq!(
        send(&u1, a, &nine),
        Ok(1),
        "0 in flight: not over the limit"
    );
    assert_eq!(send(&u1, a, &[r]), Err(Errno::ETOOMANYREFS), "9 > 8");
    // The same user through another process and socket.
    let [r2, w2] = u2.pipe2(0).unwrap();
    assert_eq!(send(&u2, c, &[r2]), Err(Errno::ETOOMANYREFS));
    assert_eq!(send(&u2, c, &[]), Ok(1), "a send without files goes");
    // Room for 4: the other 5 are closed; all 9 leave the flight.
    assert_eq!(take(&u1, b), 4);
    assert_eq!(send(&u2, c, &[r2]), Ok(1), "received files leave the count");
    // Root passes the limit.
    let [e, f] = root
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let [rr, wr] = root.pipe2(0).unwrap();
    for _ in 0..3 {
        assert_eq!(send(&root, e, &[rr; 9]), Ok(1));
    }
    for fd in [e, f, rr, wr] {
        root.close(fd).unwrap();
    }
    for fd in [c, d, r2, w2] {
        u2.close(fd).unwrap();
    }
    for fd in [a, b, r, w] {
        u1.close(fd).unwrap();
    }
    drop((u1, u2, root));
    vfs.check_invariants().unwrap();
    assert_baseline(&vfs);
}
