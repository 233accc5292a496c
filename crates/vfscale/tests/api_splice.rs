//! splice, tee and sendfile across threads: blocking transfers that wait
//! for a pipe's data or room, or for a socket's, and are released by
//! another thread; a waiter on epoll woken by a splice; and stress runs
//! where several threads splice out of one pipe (every record arrives
//! exactly once, in order within each destination) and a chain of pipes
//! joined by splice and tee carries a numbered stream intact. The
//! single-threaded semantics are compared with Linux in
//! `vfscale-difftest/tests/splice_kernel.rs`.

mod common;
use common::*;
use std::thread;
use std::time::Duration;

/// Records of 8 bytes (a counter), so any count of whole records is a
/// multiple of 8 and a pipe's merged buffers hold whole records.
fn record(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

fn records(bytes: &[u8]) -> Vec<u64> {
    assert_eq!(bytes.len() % 8, 0, "records are whole");
    bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_blocking_splice_from_a_pipe_waits_for_the_writer_and_ends_at_eof() {
    let (vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    let f = p.open(b"/out", O_CREAT | O_RDWR, 0o644).unwrap();
    let t = p.clone_thread();
    let writer = thread::spawn(move || {
        for i in 0..3000u64 {
            t.write(w, &record(i)).unwrap();
            if i % 500 == 0 {
                thread::sleep(Duration::from_millis(2));
            }
        }
        t.close(w).unwrap();
    });
    let t = p.clone_thread();
    let total = with_timeout(30, move || {
        let mut total = 0;
        loop {
            let n = t.splice(r, None, f, None, 1 << 20, 0).unwrap();
            if n == 0 {
                break total;
            }
            total += n;
        }
    });
    writer.join().unwrap();
    assert_eq!(total, 3000 * 8);
    assert_eq!(p.lseek(f, 0, SEEK_CUR).unwrap(), 3000 * 8);
    assert_eq!(
        records(&read_file(&p, b"/out")),
        (0..3000).collect::<Vec<_>>()
    );
    for fd in [r, f] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/out").unwrap();
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn a_blocking_splice_into_a_full_pipe_waits_for_the_reader() {
    let (vfs, p) = setup();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    mkfile(&p, b"/in", &data);
    let f = p.open(b"/in", O_RDONLY, 0).unwrap();
    let [r, w] = p.pipe2(0).unwrap();
    let t = p.clone_thread();
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 10_000];
        loop {
            thread::sleep(Duration::from_micros(200));
            let n = t.read(r, &mut buf).unwrap();
            if n == 0 {
                break got;
            }
            got.extend_from_slice(&buf[..n]);
        }
    });
    let t = p.clone_thread();
    with_timeout(30, move || {
        let mut off = 0i64;
        let mut turn = 0;
        while (off as usize) < 300_000 {
            // sendfile and splice take turns filling the pipe.
            turn += 1;
            let n = if turn % 2 == 0 {
                t.sendfile(w, f, Some(&mut off), 100_000).unwrap()
            } else {
                t.splice(f, Some(&mut off), w, None, 100_000, 0).unwrap()
            };
            assert!(n > 0);
        }
        t.close(w).unwrap();
    });
    assert_eq!(reader.join().unwrap(), data);
    for fd in [r, f] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/in").unwrap();
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn splices_wait_for_a_socket_without_holding_the_pipe() {
    let (vfs, p) = setup();
    let [s1, s2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let [r, w] = p.pipe2(0).unwrap();
    // An empty blocking socket: the splice into the pipe waits for a
    // write to the socket, and meanwhile the pipe stays usable (a poll of
    // it answers).
    let t = p.clone_thread();
    let splicer = thread::spawn(move || t.splice(s1, None, w, None, 100, 0));
    thread::sleep(Duration::from_millis(20));
    let t = p.clone_thread();
    let polled = with_timeout(10, move || {
        let mut pfd = [PollFd {
            fd: r,
            events: POLLIN,
            revents: 0,
        }];
        t.poll(&mut pfd, 0).unwrap()
    });
    assert_eq!(polled, 0);
    p.write(s2, b"late").unwrap();
    assert_eq!(with_timeout(10, move || splicer.join().unwrap()), Ok(4));
    let mut buf = [0u8; 16];
    assert_eq!(p.read(r, &mut buf).unwrap(), 4);
    assert_eq!(&buf[..4], b"late");
    // A full blocking socket: the splice out of the pipe sends all it
    // takes once a reader drains the socket.
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 249) as u8).collect();
    let t = p.clone_thread();
    let data = payload.clone();
    let feeder = thread::spawn(move || {
        t.write(w, &data[..60_000]).unwrap();
        let mut sent = 0;
        while sent < 60_000 {
            sent += t.splice(r, None, s2, None, 60_000 - sent, 0).unwrap();
        }
        // Then the rest straight from a file by sendfile.
        mkfile(&t, b"/rest", &data[60_000..]);
        let f = t.open(b"/rest", O_RDONLY, 0).unwrap();
        let mut off = 0;
        while off < 140_000 {
            t.sendfile(s2, f, Some(&mut off), 140_000).unwrap();
        }
        t.close(f).unwrap();
        t.shutdown(s2, SHUT_WR).unwrap();
    });
    let t = p.clone_thread();
    let got = with_timeout(30, move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 7000];
        loop {
            thread::sleep(Duration::from_micros(100));
            let n = t.read(s1, &mut buf).unwrap();
            if n == 0 {
                break got;
            }
            got.extend_from_slice(&buf[..n]);
        }
    });
    feeder.join().unwrap();
    assert_eq!(got, payload);
    for fd in [r, w, s1, s2] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/rest").unwrap();
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn a_splice_into_a_pipe_wakes_its_epoll_waiter() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"spliced");
    let f = p.open(b"/f", O_RDONLY, 0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let ep = p.epoll_create1(0).unwrap();
    p.epoll_ctl(
        ep,
        EPOLL_CTL_ADD,
        r,
        Some(EpollEvent {
            events: EPOLLIN | EPOLLET,
            data: 5,
        }),
    )
    .unwrap();
    let t = p.clone_thread();
    let waiter = thread::spawn(move || {
        let mut out = [EpollEvent::default(); 4];
        let n = t.epoll_wait(ep, &mut out, -1).unwrap();
        out[..n].to_vec()
    });
    thread::sleep(Duration::from_millis(20));
    assert_eq!(p.splice(f, Some(&mut 0), w, None, 100, 0), Ok(7));
    let got = with_timeout(10, move || waiter.join().unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].events, got[0].data), (EPOLLIN, 5));
    for fd in [f, r, w, ep] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/f").unwrap();
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn stress_splicers_share_one_pipe_and_records_arrive_once_in_order() {
    const RECORDS: u64 = 20_000;
    const SPLICERS: usize = 3;
    let (vfs, p) = setup();
    let mut next = xorshift(seed_from_env());
    let [r, w] = p.pipe2(0).unwrap();
    let t = p.clone_thread();
    let writer = thread::spawn(move || {
        for i in 0..RECORDS {
            t.write(w, &record(i)).unwrap();
        }
        t.close(w).unwrap();
    });
    let splicers: Vec<_> = (0..SPLICERS)
        .map(|k| {
            let t = p.clone_thread();
            let path = format!("/out{k}");
            let seed = next(u64::MAX);
            thread::spawn(move || {
                let mut rnd = xorshift(seed);
                let f = t.open(path.as_bytes(), O_CREAT | O_RDWR, 0o644).unwrap();
                loop {
                    // Whole records at a time, of a random count.
                    let len = 8 * (1 + rnd(64) as usize);
                    let n = t.splice(r, None, f, None, len, 0).unwrap();
                    assert_eq!(n % 8, 0);
                    if n == 0 {
                        break;
                    }
                }
                t.close(f).unwrap();
                path
            })
        })
        .collect();
    writer.join().unwrap();
    let mut all = Vec::new();
    for s in splicers {
        let path = with_timeout(60, move || s.join().unwrap());
        let got = records(&read_file(&p, path.as_bytes()));
        p.unlink(path.as_bytes()).unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "in order in {path}");
        all.extend(got);
    }
    all.sort_unstable();
    assert_eq!(all, (0..RECORDS).collect::<Vec<_>>(), "each record once");
    p.close(r).unwrap();
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn stress_a_chain_of_pipes_joined_by_splice_and_tee_carries_the_stream() {
    const RECORDS: u64 = 20_000;
    let (vfs, p) = setup();
    let [r1, w1] = p.pipe2(0).unwrap();
    let [r2, w2] = p.pipe2(0).unwrap();
    let [r3, w3] = p.pipe2(0).unwrap();
    let t = p.clone_thread();
    let writer = thread::spawn(move || {
        for i in 0..RECORDS {
            t.write(w1, &record(i)).unwrap();
        }
        t.close(w1).unwrap();
    });
    // The middle stage copies what it sees into a side pipe with tee,
    // then moves the same bytes on with splice.
    let t = p.clone_thread();
    let middle = thread::spawn(move || {
        let mut side = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = t.tee(r1, w3, 1 << 16, 0).unwrap();
            if n == 0 {
                break;
            }
            let got = t.read(r3, &mut buf[..n]).unwrap();
            side.extend_from_slice(&buf[..got]);
            let mut moved = 0;
            while moved < got {
                moved += t.splice(r1, None, w2, None, got - moved, 0).unwrap();
            }
        }
        t.close(w2).unwrap();
        side
    });
    let t = p.clone_thread();
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 5000];
        loop {
            let n = t.read(r2, &mut buf).unwrap();
            if n == 0 {
                break got;
            }
            got.extend_from_slice(&buf[..n]);
        }
    });
    writer.join().unwrap();
    let side = with_timeout(60, move || middle.join().unwrap());
    let got = with_timeout(60, move || reader.join().unwrap());
    let want: Vec<u64> = (0..RECORDS).collect();
    assert_eq!(records(&got), want);
    assert_eq!(records(&side), want);
    for fd in [r1, r2, r3, w3] {
        p.close(fd).unwrap();
    }
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn vmsplice_splits_at_the_callers_pages_and_copies_the_bytes() {
    let (vfs, p) = setup();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    assert_eq!(p.fcntl(w, F_SETPIPE_SZ, 4096), Ok(4096));
    // Ten bytes across a page boundary of the caller's memory are two
    // buffers: a one-page pipe takes the first six.
    let mut mem = vec![b'a'; 3 * 4096];
    let skew = 4096 - mem.as_ptr() as usize % 4096;
    let at = skew + 4090;
    let n = p
        .vmsplice(w, &mut [&mut mem[at..at + 10]], SPLICE_F_NONBLOCK)
        .unwrap();
    assert_eq!(n, 6);
    // The pipe holds a copy: changing the memory afterwards changes
    // nothing it delivers (Linux would show the change).
    mem[at] = b'Z';
    let mut buf = [0u8; 16];
    assert_eq!(p.read(r, &mut buf), Ok(6));
    assert_eq!(&buf[..6], b"aaaaaa");
    // Within one page it is one buffer, taken whole.
    let n = p
        .vmsplice(w, &mut [&mut mem[skew..skew + 100]], SPLICE_F_NONBLOCK)
        .unwrap();
    assert_eq!(n, 100);
    for fd in [r, w] {
        p.close(fd).unwrap();
    }
    p.exit();
    assert_baseline(&vfs);
}

#[test]
fn stress_opposite_splices_and_tees_between_two_pipes_do_not_deadlock() {
    // Two threads move bytes A -> B and B -> A with splices and tees (not
    // waiting for data: one thread may finish while the other's source is
    // empty): the pipes are locked in address order, so neither holds one
    // while taking the other's in the opposite order. The bytes in flight
    // are conserved. An inverted lock order would show as a hang caught
    // by the timeout, but its window is a few instructions wide: this is
    // a smoke check of the ordering, which holds by construction
    // (`lock_both`).
    const ROUNDS: usize = 30_000;
    let (vfs, p) = setup();
    let start = std::sync::Arc::new(std::sync::Barrier::new(2));
    let [ar, aw] = p.pipe2(0).unwrap();
    let [br, bw] = p.pipe2(0).unwrap();
    p.write(aw, &[b'a'; 3000]).unwrap();
    p.write(bw, &[b'b'; 3000]).unwrap();
    let movers: Vec<_> = [(ar, bw), (br, aw)]
        .into_iter()
        .enumerate()
        .map(|(k, (from, to))| {
            let t = p.clone_thread();
            let start = start.clone();
            thread::spawn(move || {
                let [sr, sw] = t.pipe2(O_NONBLOCK).unwrap();
                let mut moved = 0;
                start.wait();
                for i in 0..ROUNDS {
                    let len = 1 + (i * 7 + k) % 500;
                    if i % 3 == 0 {
                        // A tee copies, then a read of the side pipe drops
                        // the copy.
                        match t.tee(from, sw, len, SPLICE_F_NONBLOCK) {
                            Ok(n) => {
                                let mut buf = vec![0u8; n];
                                assert_eq!(t.read(sr, &mut buf), Ok(n));
                            }
                            Err(e) => assert_eq!(e, Errno::EAGAIN),
                        }
                    }
                    match t.splice(from, None, to, None, len, SPLICE_F_NONBLOCK) {
                        Ok(n) => moved += n,
                        Err(e) => assert_eq!(e, Errno::EAGAIN),
                    }
                }
                t.close(sr).unwrap();
                t.close(sw).unwrap();
                moved
            })
        })
        .collect();
    let moved: usize = with_timeout(60, move || {
        movers.into_iter().map(|m| m.join().unwrap()).sum()
    });
    assert!(moved > 0);
    let total = p.fionread(ar).unwrap() + p.fionread(br).unwrap();
    assert_eq!(total, 6000, "bytes in flight are conserved");
    for fd in [ar, aw, br, bw] {
        p.close(fd).unwrap();
    }
    p.exit();
    assert_baseline(&vfs);
}
