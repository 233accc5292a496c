//! Credentials over AF_UNIX sockets (SCM_CREDENTIALS, SO_PASSCRED) and the
//! socket options (getsockopt/setsockopt), run as one script on the kernel
//! (a root `KernelProcess` in a private tmpfs root) and on vfscale, every
//! result compared. Pids differ between the two (the kernel's is the test
//! process's, vfscale's its own numbering), so a credentials' pid is
//! logged as whether one is given; autobound names by their shape.

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};
use vfscale_difftest::on_kernel_as_root;
use vfscale_difftest::script::{assert_logs_match, show, Log};
use vfscale_model::ops::mask_pid;

fn name_shape(n: &[u8]) -> String {
    if n.len() == 6 && n[0] == 0 && n[1..].iter().all(u8::is_ascii_hexdigit) {
        "autobound".to_string()
    } else {
        format!("{n:?}")
    }
}

/// recvmsg of up to 100 bytes with `control` bytes of control buffer: the
/// data, the credentials (pid given?, uid, gid), the descriptor count
/// (each closed) and the flags.
fn recv<P: ProcessApi>(p: &P, fd: Fd, control: usize, flags: i32) -> String {
    recv_up_to(p, fd, 100, control, flags)
}

/// `recv` of up to `len` bytes.
fn recv_up_to<P: ProcessApi>(p: &P, fd: Fd, len: usize, control: usize, flags: i32) -> String {
    let mut buf = vec![0u8; len];
    match p.recvmsg(fd, &mut [&mut buf], flags | MSG_DONTWAIT, control) {
        Ok(m) => {
            for &f in &m.fds {
                p.close(f).unwrap();
            }
            format!(
                "{:?} creds {:?} fds {} flags {:#x} from {}",
                String::from_utf8_lossy(&buf[..m.len.min(len)]),
                m.creds.map(|c| (c.pid != 0, c.uid, c.gid)),
                m.fds.len(),
                m.flags,
                name_shape(&m.name)
            )
        }
        Err(e) => format!("{e}"),
    }
}

fn passcred<P: ProcessApi>(p: &P, fd: Fd, on: bool) {
    p.setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &i32::from(on).to_le_bytes())
        .unwrap();
}

fn send<P: ProcessApi>(p: &P, fd: Fd, data: &[u8], rights: &[Fd], creds: Option<Ucred>) -> String {
    show(p.sendmsg(fd, &[data], MSG_DONTWAIT, None, rights, creds))
}

/// getsockopt into `len` bytes, SO_PEERCRED's pid as whether one is given.
fn opt<P: ProcessApi>(p: &P, fd: Fd, level: i32, name: i32, len: usize) -> String {
    let mut buf = vec![0u8; len];
    match p.getsockopt(fd, level, name, &mut buf) {
        Ok(n) => {
            buf.truncate(n);
            if name == SO_PEERCRED {
                mask_pid(&mut buf);
            }
            format!("{buf:?}")
        }
        Err(e) => format!("{e}"),
    }
}

fn script<P: ProcessApi>(p: &P) -> Log {
    let mut log: Log = Vec::new();
    let mut put = |what: String, r: String| log.push((what, r));
    let me = p.getpid().unwrap();
    let own = Ucred {
        pid: me,
        uid: 0,
        gid: 0,
    };
    let both = cmsg_space(12) + cmsg_space(8);
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        let t = |s: &str| format!("type {ty}: {s}");
        let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        put(t("write x1"), send(p, a, b"x1", &[], None));
        passcred(p, b, true);
        put(t("write x2"), send(p, a, b"x2", &[], None));
        for i in 0..2 {
            put(t(&format!("recv x {i}")), recv(p, b, cmsg_space(12), 0));
        }
        put(t("y1"), send(p, a, b"y1", &[], None));
        put(t("y2"), send(p, a, b"y2", &[], None));
        for i in 0..2 {
            put(t(&format!("recv y {i}")), recv(p, b, cmsg_space(12), 0));
        }
        put(t("explicit e1"), send(p, a, b"e1", &[], Some(own)));
        put(
            t("uid 1000 e2"),
            send(p, a, b"e2", &[], Some(Ucred { uid: 1000, ..own })),
        );
        put(t("e3"), send(p, a, b"e3", &[], None));
        for i in 0..3 {
            put(t(&format!("recv e {i}")), recv(p, b, cmsg_space(12), 0));
        }
        put(t("z"), send(p, a, b"z", &[], None));
        put(t("recv no control"), recv(p, b, 0, 0));
        if ty == SOCK_STREAM {
            // A peek that has its byte walks on to a later send's files,
            // unless another writer's bytes come first (with SO_PASSCRED).
            let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
            let other = Some(Ucred { uid: 1000, ..own });
            put(t("w1"), send(p, a, b"w1", &[], None));
            put(t("w2 by uid 1000, files"), send(p, a, b"w2", &[r], other));
            put(t("peek 1 before them"), recv_up_to(p, b, 1, both, MSG_PEEK));
            put(t("read w1"), recv(p, b, both, 0));
            put(t("read w2"), recv(p, b, both, 0));
            put(t("w3 by uid 1000"), send(p, a, b"w3", &[], other));
            put(t("w4 by uid 1000, files"), send(p, a, b"w4", &[w], other));
            put(
                t("peek 1 before the same writer's"),
                recv_up_to(p, b, 1, both, MSG_PEEK),
            );
            for i in 0..2 {
                put(t(&format!("read w {i}")), recv(p, b, both, 0));
            }
            p.close(r).unwrap();
            p.close(w).unwrap();
        }
        let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
        for room in [16, 20, 27, 28, 31, 32, both - 4, both] {
            put(
                t(&format!("send f {room}")),
                send(p, a, b"f", &[r, w], None),
            );
            put(t(&format!("recv room {room}")), recv(p, b, room, 0));
        }
        p.close(r).unwrap();
        p.close(w).unwrap();
        put(t("pk"), send(p, a, b"pk", &[], None));
        put(t("peek"), recv(p, b, cmsg_space(12), MSG_PEEK));
        put(t("after peek"), recv(p, b, cmsg_space(12), 0));
        put(t("empty"), recv(p, b, cmsg_space(12), 0));
        put(t("opt b"), opt(p, b, SOL_SOCKET, SO_PASSCRED, 4));
        put(t("opt a"), opt(p, a, SOL_SOCKET, SO_PASSCRED, 4));
        if ty != SOCK_DGRAM {
            p.shutdown(a, SHUT_WR).unwrap();
            put(t("eof"), recv(p, b, cmsg_space(12), 0));
        }
        // Passcred turned off again: no credentials.
        passcred(p, b, false);
        // The sender's option alone attaches them; a datagram or seqpacket
        // sender with it gets a name.
        let [c, d] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        passcred(p, c, true);
        put(t("sender passcred"), send(p, c, b"s", &[], None));
        put(
            t("sender name"),
            name_shape(&p.socket_name(c, false).unwrap()),
        );
        put(t("recv without option"), recv(p, d, cmsg_space(12), 0));
        put(t("s2"), send(p, c, b"s2", &[], None));
        passcred(p, d, true);
        put(t("recv with option"), recv(p, d, cmsg_space(12), 0));
        // Explicit credentials that root may and may not give.
        for (what, cr) in [
            ("pid 0", Ucred { pid: 0, ..own }),
            ("pid -1", Ucred { pid: -1, ..own }),
            ("pid 1", Ucred { pid: 1, ..own }),
            (
                "uid -1",
                Ucred {
                    uid: u32::MAX,
                    ..own
                },
            ),
            (
                "gid -1",
                Ucred {
                    gid: u32::MAX,
                    ..own
                },
            ),
            (
                "uid 1000 gid 100",
                Ucred {
                    uid: 1000,
                    gid: 100,
                    ..own
                },
            ),
        ] {
            put(
                t(&format!("explicit {what}")),
                send(p, c, b"c", &[], Some(cr)),
            );
            put(t(&format!("recv {what}")), recv(p, d, cmsg_space(12), 0));
        }
        for fd in [a, b, c, d] {
            p.close(fd).unwrap();
        }
    }
    // Reading an option, by socket kind and buffer length.
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let lone = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 1).unwrap();
    let l = p
        .socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    p.bind(l, b"\0creds-listener").unwrap();
    p.listen(l, 4).unwrap();
    for (what, fd) in [("pair", a), ("lone dgram", lone), ("listener", l)] {
        for name in [
            SO_TYPE,
            SO_ERROR,
            SO_SNDBUF,
            SO_RCVBUF,
            SO_PASSCRED,
            SO_PEERCRED,
            SO_ACCEPTCONN,
            SO_PROTOCOL,
            SO_DOMAIN,
            SO_SNDLOWAT,
            999,
        ] {
            for len in [16, 2, 0] {
                put(
                    format!("getsockopt {what} {name} {len}"),
                    opt(p, fd, SOL_SOCKET, name, len),
                );
            }
        }
    }
    put("getsockopt tcp level".into(), opt(p, a, 6, 1, 4));
    let set = |name: i32, v: &[u8]| show(p.setsockopt(a, SOL_SOCKET, name, v));
    for (what, name, v) in [
        ("passcred 2", SO_PASSCRED, &2i32.to_le_bytes()[..]),
        ("passcred short", SO_PASSCRED, &[1u8, 0][..]),
        (
            "passcred 1<<32",
            SO_PASSCRED,
            &(1u64 << 32).to_le_bytes()[..],
        ),
        ("type", SO_TYPE, &1i32.to_le_bytes()[..]),
        ("unknown", 999, &1i32.to_le_bytes()[..]),
        ("unknown short", 999, &[1u8][..]),
    ] {
        put(format!("setsockopt {what}"), set(name, v));
        put(
            "then passcred".to_string(),
            opt(p, a, SOL_SOCKET, SO_PASSCRED, 4),
        );
    }
    put(
        "setsockopt tcp level".into(),
        show(p.setsockopt(a, 6, 1, &1i32.to_le_bytes())),
    );
    let f = p.open(b"/plain", O_CREAT | O_RDWR, 0o600).unwrap();
    put("getsockopt file".into(), opt(p, f, SOL_SOCKET, SO_TYPE, 4));
    put(
        "setsockopt file".into(),
        show(p.setsockopt(f, SOL_SOCKET, SO_PASSCRED, &[1, 0, 0, 0])),
    );
    put(
        "getsockopt bad fd".into(),
        opt(p, 999, SOL_SOCKET, SO_TYPE, 4),
    );
    // SO_ERROR takes a pending reset.
    p.write(a, b"x").unwrap();
    p.write(b, b"y").unwrap();
    p.close(a).unwrap();
    put("so_error".into(), opt(p, b, SOL_SOCKET, SO_ERROR, 4));
    put("so_error again".into(), opt(p, b, SOL_SOCKET, SO_ERROR, 4));
    put("read after".into(), recv(p, b, 0, 0));
    // Autobind: a connect, a datagram send without a peer, a failed
    // datagram connect, each with SO_PASSCRED.
    let u = p
        .socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    passcred(p, u, true);
    put("connect".into(), show(p.connect(u, b"\0creds-listener")));
    put(
        "connect's name".into(),
        name_shape(&p.socket_name(u, false).unwrap()),
    );
    put("early send".into(), send(p, u, b"early", &[], None));
    let acc = p.accept4(l, SOCK_NONBLOCK).unwrap();
    put(
        "accepted's option".into(),
        opt(p, acc, SOL_SOCKET, SO_PASSCRED, 4),
    );
    put("recv early".into(), recv(p, acc, cmsg_space(12), 0));
    // A listener's option goes to the connections it takes: data sent
    // before the accept carries the client's credentials.
    let l2 = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(l2, b"\0creds-listener-2").unwrap();
    passcred(p, l2, true);
    p.listen(l2, 4).unwrap();
    let u2 = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    put(
        "connect 2".into(),
        show(p.connect(u2, b"\0creds-listener-2")),
    );
    put(
        "its name".into(),
        name_shape(&p.socket_name(u2, false).unwrap()),
    );
    put("early send 2".into(), send(p, u2, b"early", &[], None));
    passcred(p, l2, false);
    let acc2 = p.accept4(l2, SOCK_NONBLOCK).unwrap();
    put(
        "accepted's option 2".into(),
        opt(p, acc2, SOL_SOCKET, SO_PASSCRED, 4),
    );
    put("recv early 2".into(), recv(p, acc2, cmsg_space(12), 0));
    let d = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    passcred(p, d, true);
    put("dgram send no peer".into(), send(p, d, b"x", &[], None));
    put(
        "its name".into(),
        name_shape(&p.socket_name(d, false).unwrap()),
    );
    let d2 = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    passcred(p, d2, true);
    put(
        "dgram connect nobody".into(),
        show(p.connect(d2, b"\0nobody-here")),
    );
    put(
        "its name".into(),
        name_shape(&p.socket_name(d2, false).unwrap()),
    );
    // write(2) is a sendmsg: it autobinds too.
    let w = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    passcred(p, w, true);
    put("dgram write no peer".into(), show(p.write(w, b"x")));
    put(
        "its name".into(),
        name_shape(&p.socket_name(w, false).unwrap()),
    );
    let [x, y] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    passcred(p, x, true);
    put("seqpacket write".into(), show(p.write(x, b"w")));
    put(
        "its name".into(),
        name_shape(&p.socket_name(x, false).unwrap()),
    );
    passcred(p, y, true);
    put("recv the write".into(), recv(p, y, cmsg_space(12), 0));
    let s = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    passcred(p, s, true);
    put(
        "stream write unconnected".into(),
        send(p, s, b"x", &[], None),
    );
    put(
        "its name".into(),
        name_shape(&p.socket_name(s, false).unwrap()),
    );
    log
}

#[test]
fn credentials_and_options_match_the_kernel() {
    let kernel = match on_kernel_as_root(script) {
        Ok(k) => k,
        Err(e) => {
            println!("credentials kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let ours = script(&vfs.root_process());
    assert_logs_match(&kernel, &ours);
}
