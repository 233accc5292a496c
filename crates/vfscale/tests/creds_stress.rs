//! Credentials on a stream under concurrency (anon/creds.rs): two writers
//! share one connection, one giving explicit credentials, one relying on
//! SO_PASSCRED, while a third thread turns the reader's option on and off
//! and the reader reads. Invariants checked on every read: a read that
//! reports credentials holds one writer's bytes only, and the credentials
//! are that writer's (uid 1 for 'A'; uid 0, or the no-credentials 65534
//! for a send made while the option was off, for 'B'); and at the end
//! every byte arrived, once.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn a_reader_with_the_option_never_mixes_writers() {
    const SENDS: usize = 2_000;
    let (vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let on = move |p: &Process, v: bool| {
        p.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &i32::from(v).to_le_bytes())
            .unwrap()
    };
    on(&p, true);
    let me = p.getpid().unwrap();
    let writer = |byte: u8, creds: Option<Ucred>, seed: u64| {
        let w = p.clone_thread();
        std::thread::spawn(move || {
            let mut rnd = xorshift(seed);
            let mut sent = 0;
            for _ in 0..SENDS {
                let chunk = vec![byte; 1 + rnd(300) as usize];
                let mut at = 0;
                while at < chunk.len() {
                    at += w.sendmsg(a, &[&chunk[at..]], 0, None, &[], creds).unwrap();
                }
                sent += chunk.len();
            }
            sent
        })
    };
    let explicit = Ucred {
        pid: me,
        uid: 1,
        gid: 1,
    };
    let wa = writer(b'A', Some(explicit), 1);
    let wb = writer(b'B', None, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let toggler = {
        let (t, stop) = (p.clone_thread(), stop.clone());
        std::thread::spawn(move || {
            let mut v = false;
            while !stop.load(Ordering::Relaxed) {
                on(&t, v);
                v = !v;
                std::thread::yield_now();
            }
            on(&t, true);
        })
    };
    let (mut got_a, mut got_b, mut checked) = (0usize, 0usize, 0usize);
    let mut buf = [0u8; 512];
    loop {
        // Both writers done before this receive: an empty queue then
        // means everything was read.
        let finished = wa.is_finished() && wb.is_finished();
        match p.recvmsg(b, &mut [&mut buf], MSG_DONTWAIT, cmsg_space(12)) {
            Err(Errno::EAGAIN) if finished => break,
            Err(Errno::EAGAIN) => std::thread::yield_now(),
            r => account(r, &buf, &mut got_a, &mut got_b, &mut checked),
        }
    }
    stop.store(true, Ordering::Relaxed);
    toggler.join().unwrap();
    assert_eq!(got_a, wa.join().unwrap(), "every byte of A, once");
    assert_eq!(got_b, wb.join().unwrap(), "every byte of B, once");
    assert!(
        checked > 100,
        "reads with credentials were checked: {checked}"
    );
    for fd in [a, b] {
        p.close(fd).unwrap();
    }
    drop(p);
    vfs.check_invariants().unwrap();
}

/// Checks one read (see the module doc) and counts its bytes.
fn account(
    r: SysResult<RecvMsg>,
    buf: &[u8],
    got_a: &mut usize,
    got_b: &mut usize,
    checked: &mut usize,
) {
    let m = r.unwrap();
    let data = &buf[..m.len];
    let a = data.iter().filter(|&&c| c == b'A').count();
    let b = data.iter().filter(|&&c| c == b'B').count();
    assert_eq!(a + b, data.len(), "only the writers' bytes");
    if let Some(c) = m.creds {
        *checked += 1;
        assert!(a == 0 || b == 0, "one writer per read with credentials");
        if a > 0 {
            assert_eq!((c.uid, c.gid), (1, 1), "A's explicit credentials");
        } else if b > 0 {
            assert!(
                [(0, 0), (65534, 65534)].contains(&(c.uid, c.gid)),
                "B's own credentials or none: {c:?}"
            );
        }
    }
    *got_a += a;
    *got_b += b;
}
