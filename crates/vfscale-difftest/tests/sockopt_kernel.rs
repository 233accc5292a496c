//! The SOL_SOCKET options (anon/sockopt.rs) and what they change, run as
//! one script on the kernel (a root and a uid-1000 `KernelProcess` in a
//! private tmpfs root) and on vfscale, every result compared: each
//! option set and read back with edge values and short buffers, as root
//! and not; how many sends of each size SO_SNDBUF lets in on each socket
//! type (the skb truesize accounting, stream segments included) and when
//! poll says POLLOUT; and the timeouts and SO_RCVLOWAT on blocking calls
//! (each wait is 20 ms, so the blocking part takes well under a second).

use std::time::{Duration, Instant};
use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::script::{assert_logs_match, show, Log};
use vfscale_difftest::{on_kernel_as_root, KernelProcess};

fn get<P: ProcessApi>(p: &P, fd: Fd, name: i32, len: usize) -> String {
    let mut buf = vec![0u8; len];
    show(p.getsockopt(fd, SOL_SOCKET, name, &mut buf).map(|n| {
        buf.truncate(n);
        buf
    }))
}

fn timeval(sec: i64, usec: i64) -> Vec<u8> {
    [sec.to_le_bytes(), usec.to_le_bytes()].concat()
}

fn int_opt<P: ProcessApi>(p: &P, fd: Fd, name: i32, v: i32) -> SysResult<()> {
    p.setsockopt(fd, SOL_SOCKET, name, &v.to_le_bytes())
}

const INT_OPTIONS: [i32; 19] = [
    SO_DEBUG,
    SO_REUSEADDR,
    SO_DONTROUTE,
    SO_BROADCAST,
    SO_SNDBUF,
    SO_RCVBUF,
    SO_KEEPALIVE,
    SO_OOBINLINE,
    SO_NO_CHECK,
    SO_PRIORITY,
    SO_BSDCOMPAT,
    SO_REUSEPORT,
    SO_RCVLOWAT,
    SO_SNDLOWAT,
    SO_SNDBUFFORCE,
    SO_RCVBUFFORCE,
    SO_MARK,
    SO_BUF_LOCK,
    SO_PEEK_OFF,
];

/// Every option set with edge values and read back.
fn options<P: ProcessApi>(p: &P, who: &str, log: &mut Log) {
    let mut put = |what: String, r: String| log.push((format!("{who}: {what}"), r));
    let [a, _b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let d = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    for (kind, fd) in [("stream", a), ("dgram", d)] {
        for name in INT_OPTIONS {
            put(format!("{kind} default {name}"), get(p, fd, name, 4));
            for v in [1, 0, 3, 7, -1, 1000, 100_000, i32::MAX, i32::MIN] {
                put(
                    format!("{kind} set {name} {v}"),
                    show(int_opt(p, fd, name, v)),
                );
                put(format!("{kind} get {name} after {v}"), get(p, fd, name, 16));
            }
            put(
                format!("{kind} set {name} short"),
                show(p.setsockopt(fd, SOL_SOCKET, name, &[1, 0])),
            );
            put(
                format!("{kind} set {name} long"),
                show(p.setsockopt(fd, SOL_SOCKET, name, &[5, 0, 0, 0, 9, 9, 9, 9])),
            );
            put(format!("{kind} get {name} 2 bytes"), get(p, fd, name, 2));
        }
    }
    for name in [
        SO_RCVTIMEO_OLD,
        SO_SNDTIMEO_OLD,
        SO_RCVTIMEO_NEW,
        SO_SNDTIMEO_NEW,
    ] {
        put(format!("default timeout {name}"), get(p, a, name, 16));
        for (sec, usec) in [
            (1, 1),
            (0, 999_999),
            (0, 1_000_000),
            (0, -1),
            (2, 500_000),
            (-1, 5),
            (0, 0),
            (i64::MAX, 0),
            (1 << 40, 7),
            (0, 3),
        ] {
            let tv = timeval(sec, usec);
            for len in [16, 8, 3] {
                put(
                    format!("timeout {name} ({sec}, {usec}) len {len}"),
                    show(p.setsockopt(a, SOL_SOCKET, name, &tv[..len])),
                );
            }
            for other in [SO_RCVTIMEO_OLD, SO_SNDTIMEO_NEW] {
                put(format!("then {other}"), get(p, a, other, 16));
            }
            put("then 8 bytes".into(), get(p, a, name, 8));
        }
    }
    let linger = |on: i32, secs: i32| [on.to_le_bytes(), secs.to_le_bytes()].concat();
    put("default linger".into(), get(p, a, SO_LINGER, 8));
    for (on, secs) in [(1, 5), (7, -1), (0, 9), (1, 0), (3, i32::MAX)] {
        for len in [8, 4] {
            put(
                format!("linger ({on}, {secs}) len {len}"),
                show(p.setsockopt(a, SOL_SOCKET, SO_LINGER, &linger(on, secs)[..len])),
            );
        }
        for len in [16, 8, 4] {
            put(format!("then {len}"), get(p, a, SO_LINGER, len));
        }
    }
}

/// Nonblocking sends of `size` bytes until one is refused (at most 3,000):
/// how many went, the bytes, the refusal, and poll's answer then.
fn fill<P: ProcessApi>(p: &P, fd: Fd, size: usize) -> String {
    let data = vec![7u8; size];
    let (mut n, mut bytes) = (0, 0);
    let last = loop {
        match p.sendto(fd, &data, MSG_DONTWAIT, None) {
            Ok(k) if n < 3000 => {
                n += 1;
                bytes += k;
            }
            other => break show(other),
        }
    };
    let mut pfd = [PollFd {
        fd,
        events: POLLOUT,
        revents: 0,
    }];
    p.poll(&mut pfd, 0).unwrap();
    format!(
        "{n} sends, {bytes} bytes, then {last}, poll {:#x}",
        pfd[0].revents
    )
}

/// What SO_SNDBUF lets in: each type and budget, sends of each size, then
/// reads of 1,000 bytes each followed by a send of 10, until empty.
fn budgets<P: ProcessApi>(p: &P, log: &mut Log) {
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        for sndbuf in [None, Some(0), Some(5000), Some(20_000), Some(100_000)] {
            for size in [1, 100, 2000, 5000, 40_000] {
                let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
                if let Some(v) = sndbuf {
                    int_opt(p, a, SO_SNDBUF, v).unwrap();
                }
                let what = format!("type {ty} sndbuf {sndbuf:?} size {size}");
                log.push((format!("{what}: fill"), fill(p, a, size)));
                let mut buf = vec![0u8; 1000];
                for i in 0..200 {
                    let r = p.read(b, &mut buf);
                    let empty = r.is_err();
                    let s = p.sendto(a, b"0123456789", MSG_DONTWAIT, None);
                    log.push((format!("{what}: read {i}"), show(r)));
                    log.push((format!("{what}: send {i}"), show(s)));
                    if empty {
                        break;
                    }
                }
                let big = vec![0u8; 30_000];
                log.push((
                    format!("{what}: large message"),
                    show(p.sendto(a, &big, MSG_DONTWAIT, None)),
                ));
                p.close(a).unwrap();
                p.close(b).unwrap();
            }
        }
        // The largest message: SO_SNDBUF less 32 bytes.
        let [a, _b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        int_opt(p, a, SO_SNDBUF, 5000).unwrap();
        for len in [9_984, 9_985, 30_000] {
            log.push((
                format!("type {ty} message of {len} with sndbuf 10000"),
                show(p.sendto(a, &vec![1u8; len], MSG_DONTWAIT, None)),
            ));
        }
    }
}

/// A blocking call's result, and whether it returned only after the
/// 20 ms timeout (`waited`) or at once.
fn timed<T: std::fmt::Debug>(f: impl FnOnce() -> SysResult<T>) -> String {
    let t = Instant::now();
    let r = show(f());
    let waited = t.elapsed() >= Duration::from_millis(20);
    format!("{r} waited {waited}")
}

/// The timeouts and SO_RCVLOWAT on blocking calls.
fn blocking<P: ProcessApi>(p: &P, log: &mut Log) {
    let ms20 = timeval(0, 20_000);
    let set = |fd: Fd, name: i32, v: &[u8]| p.setsockopt(fd, SOL_SOCKET, name, v).unwrap();
    let mut buf = [0u8; 100];
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        let t = |s: &str| format!("type {ty}: {s}");
        let [a, b] = p.socketpair(AF_UNIX, ty, 0).unwrap();
        set(b, SO_RCVTIMEO, &ms20);
        log.push((t("read empty"), timed(|| p.read(b, &mut buf))));
        set(b, SO_RCVTIMEO, &timeval(-1, 0));
        log.push((t("read, negative timeout"), timed(|| p.read(b, &mut buf))));
        set(b, SO_RCVTIMEO_NEW, &ms20);
        set(b, SO_RCVLOWAT, &10i32.to_le_bytes());
        p.write(a, b"12345").unwrap();
        log.push((t("5 bytes, low-water 10"), timed(|| p.read(b, &mut buf))));
        p.write(a, b"12345").unwrap();
        p.write(a, b"6789012345").unwrap();
        log.push((t("15 bytes, low-water 10"), timed(|| p.read(b, &mut buf))));
        p.write(a, b"123").unwrap();
        log.push((
            t("peek 3 bytes, low-water 10"),
            timed(|| p.recvfrom(b, &mut buf, MSG_PEEK).map(|r| r.0)),
        ));
        log.push((
            t("waitall 3 bytes"),
            timed(|| p.recvfrom(b, &mut buf, MSG_WAITALL).map(|r| r.0)),
        ));
        // A full send buffer: the send returns what went, or EAGAIN.
        set(a, SO_SNDBUF, &0i32.to_le_bytes());
        set(a, SO_SNDTIMEO, &ms20);
        let big = vec![5u8; 100_000];
        let first = if ty == SOCK_STREAM {
            &big[..]
        } else {
            &big[..1000]
        };
        log.push((t("send past the budget"), timed(|| p.write(a, first))));
        log.push((t("send when full"), timed(|| p.write(a, &big[..1000]))));
    }
    // accept and connect.
    let l = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.bind(l, b"/l").unwrap();
    p.listen(l, 0).unwrap();
    set(l, SO_RCVTIMEO, &ms20);
    log.push(("accept, none queued".into(), timed(|| p.accept4(l, 0))));
    let c1 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    log.push(("connect 1".into(), timed(|| p.connect(c1, b"/l"))));
    let c2 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    set(c2, SO_SNDTIMEO, &ms20);
    log.push((
        "connect 2, backlog full".into(),
        timed(|| p.connect(c2, b"/l")),
    ));
    let c3 = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    set(c3, SO_SNDTIMEO, &timeval(-3, 0));
    log.push((
        "connect 3, negative timeout".into(),
        timed(|| p.connect(c3, b"/l")),
    ));
    // A datagram receiver's queue full of an unconnected sender's
    // messages: the next send waits for room, then EAGAIN.
    let r = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    p.bind(r, b"/r").unwrap();
    set(r, SO_RCVTIMEO, &ms20);
    log.push(("dgram recv, none".into(), timed(|| p.read(r, &mut buf))));
    let s = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    set(s, SO_SNDTIMEO, &ms20);
    for i in 0..13 {
        log.push((
            format!("dgram send {i}"),
            timed(|| p.sendto(s, b"m", 0, Some(b"/r"))),
        ));
    }
}

/// recvmsg of up to `len` bytes (nonblocking) with room for 4
/// descriptors: the data, the length returned, the descriptors (closed)
/// and the flags.
fn recv_at<P: ProcessApi>(p: &P, fd: Fd, len: usize, flags: i32) -> String {
    let mut buf = vec![0u8; len];
    show(
        p.recvmsg(fd, &mut [&mut buf], flags | MSG_DONTWAIT, cmsg_space(16))
            .map(|m| {
                for &f in &m.fds {
                    p.close(f).unwrap();
                }
                format!(
                    "{:?} len {} fds {} flags {:#x}",
                    String::from_utf8_lossy(&buf[..m.len.min(len)]),
                    m.len,
                    m.fds.len(),
                    m.flags
                )
            }),
    )
}

/// SO_PEEK_OFF: peeks from the offset, moving it on; reads moving it
/// back; offsets past the queue; negative ones; empty messages; files.
fn peek_offsets<P: ProcessApi>(p: &P, log: &mut Log) {
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        let t = |s: &str| format!("type {ty}: {s}");
        let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        let off = |log: &mut Log, what: &str| {
            log.push((t(&format!("offset {what}")), get(p, b, SO_PEEK_OFF, 4)));
        };
        off(log, "default");
        for m in [&b"abc"[..], b"defg", b"", b"hi"] {
            log.push((t("send"), show(p.sendto(a, m, MSG_DONTWAIT, None))));
        }
        log.push((t("set 0"), show(int_opt(p, b, SO_PEEK_OFF, 0))));
        for i in 0..6 {
            log.push((t(&format!("peek 2 #{i}")), recv_at(p, b, 2, MSG_PEEK)));
            off(log, "after peek");
        }
        log.push((t("read 1"), recv_at(p, b, 1, 0)));
        off(log, "after read");
        log.push((t("peek trunc"), recv_at(p, b, 1, MSG_PEEK | MSG_TRUNC)));
        off(log, "after peek trunc");
        for v in [100, 1, -5, 2, 0] {
            log.push((t(&format!("set {v}")), show(int_opt(p, b, SO_PEEK_OFF, v))));
            log.push((t(&format!("peek 10 at {v}")), recv_at(p, b, 10, MSG_PEEK)));
            off(log, "then");
        }
        log.push((t("set 3"), show(int_opt(p, b, SO_PEEK_OFF, 3))));
        for i in 0..5 {
            log.push((t(&format!("read 3 #{i}")), recv_at(p, b, 3, 0)));
            off(log, "after read");
        }
        // Files under an offset.
        log.push((t("set 1"), show(int_opt(p, b, SO_PEEK_OFF, 1))));
        log.push((t("xx"), show(p.sendto(a, b"xx", MSG_DONTWAIT, None))));
        log.push((
            t("yy with files"),
            show(p.sendmsg(a, &[b"yy"], MSG_DONTWAIT, None, &[r, w], None)),
        ));
        log.push((t("zz"), show(p.sendto(a, b"zz", MSG_DONTWAIT, None))));
        for i in 0..4 {
            log.push((
                t(&format!("peek 10 files #{i}")),
                recv_at(p, b, 10, MSG_PEEK),
            ));
            off(log, "after");
        }
        for i in 0..4 {
            log.push((t(&format!("read 10 files #{i}")), recv_at(p, b, 10, 0)));
            off(log, "after");
        }
        // Past everything, then data arrives, on a shut-down socket.
        log.push((t("set 50"), show(int_opt(p, b, SO_PEEK_OFF, 50))));
        log.push((t("peek empty"), recv_at(p, b, 10, MSG_PEEK)));
        p.shutdown(a, SHUT_WR).unwrap_or(());
        log.push((t("peek at end"), recv_at(p, b, 10, MSG_PEEK)));
        p.close(a).unwrap();
        p.close(b).unwrap();
    }
    let l = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    log.push(("unbound set".into(), show(int_opt(p, l, SO_PEEK_OFF, 7))));
    log.push(("unbound get".into(), get(p, l, SO_PEEK_OFF, 4)));
    p.bind(l, b"/peek").unwrap();
    p.listen(l, 1).unwrap();
    log.push(("listener get".into(), get(p, l, SO_PEEK_OFF, 4)));
    log.push(("listener set".into(), show(int_opt(p, l, SO_PEEK_OFF, -9))));
    log.push(("listener get after".into(), get(p, l, SO_PEEK_OFF, 8)));
}

/// SO_PEERGROUPS: the peer's supplementary groups as of the socketpair,
/// listen or connect, in buffers of 0, 8 and 64 bytes.
fn peer_groups<P: ProcessApi>(root: &P, user: &P, log: &mut Log) {
    let groups = |p: &P, fd: Fd, what: &str, log: &mut Log| {
        for len in [0, 8, 64] {
            log.push((
                format!("groups {what} {len}"),
                get(p, fd, SO_PEERGROUPS, len),
            ));
        }
    };
    let [a, b] = user.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    groups(user, a, "user pair", log);
    let lone = user.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    groups(user, lone, "unconnected", log);
    let l = user.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    user.bind(l, b"\0vfscale-groups").unwrap();
    groups(user, l, "bound", log);
    user.listen(l, 4).unwrap();
    groups(user, l, "listener", log);
    let c = root.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    root.connect(c, b"\0vfscale-groups").unwrap();
    groups(root, c, "root client of the user", log);
    let s = user.accept4(l, 0).unwrap();
    groups(user, s, "accepted from root", log);
    for fd in [a, b, lone, l, s] {
        user.close(fd).unwrap();
    }
    root.close(c).unwrap();
}

/// SO_COOKIE by shape: 8 bytes, never 0, the same when asked again,
/// different for another socket (the numbers themselves differ between
/// the kernel and vfscale); EINVAL for a buffer shorter than 8 bytes.
fn cookies<P: ProcessApi>(p: &P, log: &mut Log) {
    let cookie = |fd: Fd, len: usize| {
        let mut buf = vec![0u8; len];
        p.getsockopt(fd, SOL_SOCKET, SO_COOKIE, &mut buf)
            .map(|n| (n, u64::from_le_bytes(buf[..8].try_into().unwrap())))
    };
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let first = cookie(a, 16);
    log.push(("cookie length".into(), show(first.map(|c| c.0))));
    log.push(("cookie non-zero".into(), show(first.map(|c| c.1 != 0))));
    log.push((
        "cookie again".into(),
        show(cookie(a, 8).map(|c| Ok(c) == first)),
    ));
    log.push((
        "cookie of the peer differs".into(),
        show(cookie(b, 8).map(|c| Ok(c) != first)),
    ));
    log.push(("cookie in 7 bytes".into(), get(p, a, SO_COOKIE, 7)));
    log.push((
        "cookie set".into(),
        show(p.setsockopt(a, SOL_SOCKET, SO_COOKIE, &[0; 8])),
    ));
    p.close(a).unwrap();
    p.close(b).unwrap();
}

fn script<P: ProcessApi>(root: &P, user: &P) -> Log {
    let mut log = Log::new();
    options(root, "root", &mut log);
    options(user, "uid 1000", &mut log);
    budgets(root, &mut log);
    blocking(root, &mut log);
    peek_offsets(root, &mut log);
    peer_groups(root, user, &mut log);
    cookies(root, &mut log);
    log
}

#[test]
fn socket_options_match_the_kernel() {
    let kernel = match on_kernel_as_root(|k| {
        let user = KernelProcess::new(&Cred::user(1000, 1000, &[5, 1000, 4242]))?;
        Ok::<_, String>(script(k, &user))
    }) {
        Ok(Ok(k)) => k,
        Ok(Err(e)) | Err(e) => {
            println!("socket options kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let ours = script(
        &vfs.root_process(),
        &vfs.process(Cred::user(1000, 1000, &[5, 1000, 4242])),
    );
    assert_logs_match(&kernel, &ours);
}
