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
