//! Stress (issue 4): threads churning anonymous objects (pipes, socket
//! pairs, eventfds, memfds, bare sockets) while other threads pass data
//! through pipes with blocking reads and writes; afterwards every counter
//! is back at the baseline. Bounded: a few thousand iterations per thread.

mod common;
use common::*;
use std::thread;

const CHURN: usize = 2000;
const BYTES: usize = 256 * 1024;

#[test]
fn churn_beside_pipe_traffic_then_counters_return() {
    let vfs = Vfs::new();
    let mut handles = Vec::new();
    for t in 0..2 {
        let p = vfs.root_process();
        handles.push(thread::spawn(move || {
            for i in 0..CHURN {
                match (i + t) % 5 {
                    0 => {
                        let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
                        p.write(w, b"x").unwrap();
                        p.close(w).unwrap();
                        p.close(r).unwrap();
                    }
                    1 => {
                        let [a, b] = p.socketpair(AF_UNIX, SOCK_DGRAM, 0).unwrap();
                        p.write(a, b"m").unwrap();
                        p.close(b).unwrap();
                        p.close(a).unwrap();
                    }
                    2 => p.close(p.eventfd(1, 0).unwrap()).unwrap(),
                    3 => {
                        let m = p.memfd_create(b"s", 0).unwrap();
                        p.write(m, &[1u8; 5000]).unwrap();
                        p.close(m).unwrap();
                    }
                    _ => p.close(p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap()).unwrap(),
                }
            }
        }));
    }
    // A producer/consumer pair per pipe, blocking both ways.
    for _ in 0..2 {
        let p = vfs.root_process();
        let [r, w] = p.pipe2(0).unwrap();
        let reader = p.clone_thread();
        handles.push(thread::spawn(move || {
            let chunk = [7u8; 3000];
            let mut sent = 0;
            while sent < BYTES {
                sent += p.write(w, &chunk[..chunk.len().min(BYTES - sent)]).unwrap();
            }
            p.close(w).unwrap();
        }));
        handles.push(thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut got = 0;
            loop {
                let n = reader.read(r, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                assert!(buf[..n].iter().all(|&b| b == 7));
                got += n;
            }
            assert_eq!(got, BYTES);
            reader.close(r).unwrap();
            assert_eq!(reader.close(r), Err(Errno::EBADF));
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_baseline(&vfs);
}

/// How many nonblocking 10-byte sends a stream end takes before EAGAIN.
fn sends_until_full(p: &Process, a: Fd) -> usize {
    let mut n = 0;
    while p.sendto(a, b"0123456789", MSG_DONTWAIT, None).is_ok() {
        n += 1;
    }
    n
}

/// Two writers with blocking sends of random sizes and a reader with
/// random read sizes on one stream, while a fourth thread changes the
/// writer end's SO_SNDBUF (anon/socket.rs charges each segment's
/// truesize to it until the reader has read the segment to its end).
/// Every byte arrives once, each writer's in its order; afterwards the
/// budget is whole again: the end takes exactly as many sends as a fresh
/// one with the same SO_SNDBUF. Fails if a segment read to its end is
/// not freed (checked by breaking that rule); how much a partly read
/// stream lets in is compared with the kernel in sockopt_kernel.rs.
#[test]
fn stream_segments_are_charged_until_read_while_the_budget_changes() {
    const PER_WRITER: usize = 4_000_000;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2u8 {
        let p = p.clone_thread();
        writers.push(thread::spawn(move || {
            // Each byte: the writer in the top bit, a running count below.
            let mut seq = 0usize;
            let mut x = 0x9e37_79b9u32.wrapping_mul(u32::from(w) + 1);
            while seq < PER_WRITER {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let len = (1 + x as usize % 9000).min(PER_WRITER - seq);
                let chunk: Vec<u8> = (seq..seq + len)
                    .map(|i| (w << 7) | (i % 127) as u8)
                    .collect();
                // A blocking send returns only when all of it went.
                assert_eq!(p.write(a, &chunk), Ok(len));
                seq += len;
            }
        }));
    }
    let flipper = {
        let p = p.clone_thread();
        let done = done.clone();
        thread::spawn(move || {
            let mut i = 0usize;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let v: i32 = [0, 3000, 50_000, 212_992 / 2][i % 4];
                p.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &v.to_le_bytes())
                    .unwrap();
                i += 1;
                thread::yield_now();
            }
        })
    };
    let mut next = [0usize; 2];
    let mut x = 12345u32;
    let mut buf = vec![0u8; 10_000];
    while next[0] + next[1] < 2 * PER_WRITER {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let want = 1 + x as usize % buf.len();
        let n = p.read(b, &mut buf[..want]).unwrap();
        assert!(n > 0);
        for &byte in &buf[..n] {
            let w = usize::from(byte >> 7);
            assert_eq!(
                usize::from(byte & 0x7f),
                next[w] % 127,
                "writer {w}'s order"
            );
            next[w] += 1;
        }
    }
    for t in writers {
        t.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    assert_eq!(next, [PER_WRITER; 2]);
    assert_eq!(p.fionread(b), Ok(0));
    for v in [0i32, 50_000] {
        p.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &v.to_le_bytes())
            .unwrap();
        let [c, d] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
        p.setsockopt(c, SOL_SOCKET, SO_SNDBUF, &v.to_le_bytes())
            .unwrap();
        let fresh = sends_until_full(&p, c);
        assert_eq!(sends_until_full(&p, a), fresh, "the budget is whole again");
        let mut drain = vec![0u8; 1 << 20];
        while p.recvfrom(b, &mut drain, MSG_DONTWAIT).is_ok() {}
        for fd in [c, d] {
            p.close(fd).unwrap();
        }
    }
    for fd in [a, b] {
        p.close(fd).unwrap();
    }
}

/// The timeout paths lose and duplicate nothing: a writer and a reader on
/// one stream with the shortest SO_SNDTIMEO/SO_RCVTIMEO (1 ms, one 4 ms
/// tick) and the smallest budget,
/// each retrying what a timed-out call did not move (EAGAIN, or a partial
/// count), and a reader with SO_RCVLOWAT above what usually waits; each
/// side now and then pauses 10 ms, so the other's calls time out. Every
/// byte arrives once, in order.
#[test]
fn timed_out_stream_calls_move_each_byte_once() {
    const TOTAL: usize = 2_000_000;
    let vfs = Vfs::new();
    let p = vfs.root_process();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let ms1 = [0i64.to_le_bytes(), 1000i64.to_le_bytes()].concat();
    p.setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &ms1).unwrap();
    p.setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &ms1).unwrap();
    p.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &0i32.to_le_bytes())
        .unwrap();
    p.setsockopt(b, SOL_SOCKET, SO_RCVLOWAT, &3000i32.to_le_bytes())
        .unwrap();
    let writer = {
        let p = p.clone_thread();
        thread::spawn(move || {
            let data: Vec<u8> = (0..TOTAL).map(|i| (i % 251) as u8).collect();
            let (mut sent, mut timeouts) = (0, 0);
            for round in 0.. {
                if sent == TOTAL {
                    break;
                }
                if round % 64 == 63 {
                    thread::sleep(std::time::Duration::from_millis(10));
                }
                let end = (sent + 7000).min(TOTAL);
                match p.write(a, &data[sent..end]) {
                    Ok(n) => {
                        assert!(n > 0 && n <= end - sent);
                        timeouts += usize::from(n < end - sent);
                        sent += n;
                    }
                    Err(e) => {
                        assert_eq!(e, Errno::EAGAIN);
                        timeouts += 1;
                    }
                }
            }
            p.close(a).unwrap();
            timeouts
        })
    };
    let (mut got, mut read_timeouts) = (0, 0);
    let mut buf = vec![0u8; 5000];
    for round in 0.. {
        if round % 64 == 63 {
            thread::sleep(std::time::Duration::from_millis(10));
        }
        match p.read(b, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                for (i, &x) in buf[..n].iter().enumerate() {
                    assert_eq!(x, ((got + i) % 251) as u8, "byte {}", got + i);
                }
                got += n;
            }
            Err(e) => {
                assert_eq!(e, Errno::EAGAIN);
                read_timeouts += 1;
            }
        }
    }
    let timeouts = writer.join().unwrap();
    assert_eq!(got, TOTAL);
    println!("calls that timed out: writer {timeouts}, reader {read_timeouts}");
    p.close(b).unwrap();
}
