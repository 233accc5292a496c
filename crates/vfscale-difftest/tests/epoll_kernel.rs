//! epoll (epoll_create1, epoll_ctl, epoll_wait) on pipes, eventfds,
//! sockets and nested epolls: one script on the kernel (a private tmpfs
//! root, `on_kernel_as_root`) and on vfscale, every result compared —
//! the errors in Linux's order, level- and edge-triggered reports (which
//! wakes an edge-triggered item sees), one-shot items, the order of
//! reports and maxevents, items that outlive a close of their
//! descriptor, the loop and depth checks of nested epolls, and what the
//! other calls do with an epoll descriptor. Every wait has a timeout of 0.
//!
//! `random_sequences_match_the_kernel` then runs seeded random sequences
//! of writes, reads, shutdowns, dups, closes and epoll calls over a small
//! set of objects on both sides, step by step (`VFSCALE_EPOLL_CASES`,
//! default 150, of 40 steps; `VFSCALE_SEED` replays a run, and with
//! `VFSCALE_EPOLL_ONLY=N` only its case N, which `VFSCALE_SHOW_LOG`
//! prints).

use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_difftest::script::{compare_with_kernel, show, Log};
use vfscale_difftest::seeded::{env_u64, seed_from_env, xorshift};

fn ev(events: u32, data: u64) -> Option<EpollEvent> {
    Some(EpollEvent { events, data })
}

/// What a wait of at most `max` events with no timeout returns.
fn wait<P: ProcessApi + ?Sized>(p: &P, ep: Fd, max: usize) -> String {
    let mut out = vec![EpollEvent::default(); max];
    match p.epoll_wait(ep, &mut out, 0) {
        Ok(n) => out[..n]
            .iter()
            .map(|e| format!("{:#x}@{}", e.events, e.data))
            .collect::<Vec<_>>()
            .join(" "),
        Err(e) => format!("{e:?}"),
    }
}

fn errors<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("errors: {what}"), r));
    let ep = p.epoll_create1(0).unwrap();
    let cl = p.epoll_create1(EPOLL_CLOEXEC).unwrap();
    note("cloexec", show(p.fcntl(cl, F_GETFD, 0)));
    note("status flags", show(p.fcntl(ep, F_GETFL, 0)));
    note("create1 1", show(p.epoll_create1(1)));
    note("create1 O_NONBLOCK", show(p.epoll_create1(O_NONBLOCK)));
    for size in [0, -1, i32::MIN] {
        note(&format!("create {size}"), show(p.epoll_create(size)));
    }
    let old = p.epoll_create(1).unwrap();
    note("create 1: close-on-exec", show(p.fcntl(old, F_GETFD, 0)));
    note("create 1: an epoll", wait(p, old, 1));
    p.close(old).unwrap();
    note(
        "fd path",
        show(
            p.fd_path(ep)
                .map(|v| String::from_utf8_lossy(&v).into_owned()),
        ),
    );
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let d = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    let mem = p.memfd_create(b"m", 0).unwrap();
    let add = |epfd, fd, events| p.epoll_ctl(epfd, EPOLL_CTL_ADD, fd, ev(events, 7));
    note("bad epfd", show(add(99, r, EPOLLIN)));
    note("bad fd", show(add(ep, 99, EPOLLIN)));
    note("bad both", show(add(99, 98, EPOLLIN)));
    note("regular file", show(add(ep, f, EPOLLIN)));
    note("directory", show(add(ep, d, EPOLLIN)));
    note("memfd", show(add(ep, mem, EPOLLIN)));
    note("O_PATH target", show(add(ep, path, EPOLLIN)));
    note("O_PATH epfd", show(add(path, r, EPOLLIN)));
    note("pipe as epfd", show(add(r, w, EPOLLIN)));
    note("regular file as epfd", show(add(f, w, EPOLLIN)));
    note("regular file as epfd and target", show(add(f, f, EPOLLIN)));
    note("itself", show(add(ep, ep, EPOLLIN)));
    note("null event", show(p.epoll_ctl(ep, EPOLL_CTL_ADD, r, None)));
    note(
        "null event, bad fds",
        show(p.epoll_ctl(99, EPOLL_CTL_MOD, 98, None)),
    );
    note("bad op", show(p.epoll_ctl(ep, 9, r, ev(EPOLLIN, 0))));
    note(
        "bad op, regular file",
        show(p.epoll_ctl(ep, 9, f, ev(EPOLLIN, 0))),
    );
    note("del absent", show(p.epoll_ctl(ep, EPOLL_CTL_DEL, r, None)));
    note(
        "mod absent",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN, 0))),
    );
    note("add", show(add(ep, r, EPOLLIN)));
    note("add again", show(add(ep, r, EPOLLOUT)));
    note("add the other end", show(add(ep, w, EPOLLOUT)));
    note(
        "del with a null event",
        show(p.epoll_ctl(ep, EPOLL_CTL_DEL, w, None)),
    );
    note("del twice", show(p.epoll_ctl(ep, EPOLL_CTL_DEL, w, None)));
    note(
        "mod exclusive",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLEXCLUSIVE, 0))),
    );
    note(
        "exclusive with RDHUP",
        show(add(ep, w, EPOLLOUT | EPOLLEXCLUSIVE | EPOLLRDHUP)),
    );
    note(
        "exclusive one-shot",
        show(add(ep, w, EPOLLOUT | EPOLLEXCLUSIVE | EPOLLONESHOT)),
    );
    note(
        "exclusive with PRI",
        show(add(ep, w, EPOLLOUT | EPOLLEXCLUSIVE | EPOLLPRI)),
    );
    let inner = p.epoll_create1(0).unwrap();
    note(
        "exclusive epoll",
        show(add(ep, inner, EPOLLIN | EPOLLEXCLUSIVE)),
    );
    note(
        "exclusive",
        show(add(ep, w, EPOLLOUT | EPOLLEXCLUSIVE | EPOLLET)),
    );
    note(
        "mod of an exclusive item",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, w, ev(EPOLLOUT, 1))),
    );
    note(
        "del of an exclusive item",
        show(p.epoll_ctl(ep, EPOLL_CTL_DEL, w, None)),
    );
    note(
        "wakeup (dropped for want of the capability, or kept)",
        show(add(ep, w, EPOLLOUT | EPOLLWAKEUP)),
    );
    let mut none: [EpollEvent; 0] = [];
    note("wait for 0", show(p.epoll_wait(ep, &mut none, 0)));
    note("wait for 0, bad epfd", show(p.epoll_wait(99, &mut none, 0)));
    note("wait, bad epfd", wait(p, 99, 1));
    note("wait on a pipe", wait(p, r, 1));
    note("wait on O_PATH", wait(p, path, 1));
    note("wait", wait(p, ep, 4));
    // What other calls make of an epoll descriptor.
    let mut b = [0u8; 8];
    note("read", show(p.read(ep, &mut b)));
    note("write", show(p.write(ep, b"12345678")));
    note("pread", show(p.pread(ep, &mut b, 0)));
    note("lseek", show(p.lseek(ep, 5, SEEK_SET)));
    note("fsync", show(p.fsync(ep)));
    note("ftruncate", show(p.ftruncate(ep, 0)));
    note("fionread", show(p.fionread(ep)));
    note("fstat mode", show(p.fstat(ep).map(|s| s.mode)));
    note("send", show(p.sendto(ep, b"x", 0, None)));
    for fd in [cl, r, w, f, d, path, mem, inner, ep] {
        p.close(fd).unwrap();
    }
}

fn level_and_edge<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("triggers: {what}"), r));
    let ep = p.epoll_create1(0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let add = |fd, events, data| p.epoll_ctl(ep, EPOLL_CTL_ADD, fd, ev(events, data));
    note("add read end", show(add(r, EPOLLIN, 1)));
    note("empty", wait(p, ep, 4));
    p.write(w, b"abc").unwrap();
    note("after a write", wait(p, ep, 4));
    note("level: again", wait(p, ep, 4));
    let mut b = [0u8; 2];
    p.read(r, &mut b).unwrap();
    note("after a partial read", wait(p, ep, 4));
    p.read(r, &mut b).unwrap();
    note("after reading it all", wait(p, ep, 4));
    note(
        "edge",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLET, 2))),
    );
    note("edge: nothing", wait(p, ep, 4));
    p.write(w, b"x").unwrap();
    note("edge: a write", wait(p, ep, 4));
    note("edge: not again", wait(p, ep, 4));
    p.write(w, b"y").unwrap();
    note("edge: another write", wait(p, ep, 4));
    p.read(r, &mut b[..1]).unwrap();
    note("edge: a read", wait(p, ep, 4));
    note(
        "modify while ready",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLET, 3))),
    );
    note("edge: after modify", wait(p, ep, 4));
    // The write end, edge-triggered: woken when a read frees a slot of a
    // full pipe, not by a read that frees none, nor once it is not full.
    let mut drain = [0u8; 64];
    while p.read(r, &mut drain).is_ok() {}
    note("add write end", show(add(w, EPOLLOUT | EPOLLET, 4)));
    note("write end: room", wait(p, ep, 4));
    note("write end: not again", wait(p, ep, 4));
    let page = [7u8; 4096];
    let mut n = 0;
    while p.write(w, &page).is_ok() {
        n += 1;
    }
    note("pages to fill", n.to_string());
    note("full", wait(p, ep, 4));
    let mut small = [0u8; 100];
    p.read(r, &mut small).unwrap();
    note("a read that frees no slot", wait(p, ep, 4));
    let mut big = vec![0u8; 8192];
    p.read(r, &mut big).unwrap();
    note("a read that frees slots of the full pipe", wait(p, ep, 4));
    p.read(r, &mut big).unwrap();
    note("a read that frees slots of a pipe not full", wait(p, ep, 4));
    note(
        "level write end",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, w, ev(EPOLLOUT, 5))),
    );
    note("level write end: reported", wait(p, ep, 4));
    // One-shot: once, then disabled until modified.
    note(
        "one-shot",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLONESHOT, 6))),
    );
    note("one-shot: first", wait(p, ep, 4));
    p.write(w, b"z").ok();
    note("one-shot: disabled", wait(p, ep, 4));
    note(
        "one-shot: re-armed",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLONESHOT, 7))),
    );
    note("one-shot: again", wait(p, ep, 4));
    // Hang-up and error.
    p.close(w).unwrap();
    note("writer gone", wait(p, ep, 4));
    note(
        "rearm after writer gone",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, r, ev(EPOLLIN | EPOLLRDHUP, 8))),
    );
    note("hung up", wait(p, ep, 4));
    let [r2, w2] = p.pipe2(O_NONBLOCK).unwrap();
    note("add a write end", show(add(w2, EPOLLOUT | EPOLLET, 9)));
    note("fresh write end", wait(p, ep, 4));
    p.close(r2).unwrap();
    note("reader gone", wait(p, ep, 4));
    note("an event of no interest", show(add(r, 0, 10)));
    for fd in [r, w2, ep] {
        p.close(fd).unwrap();
    }
}

fn eventfds_and_order<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("order: {what}"), r));
    let ep = p.epoll_create1(0).unwrap();
    let e1 = p.eventfd(0, EFD_NONBLOCK).unwrap();
    let e2 = p.eventfd(0, EFD_NONBLOCK).unwrap();
    let e3 = p.eventfd(0, EFD_NONBLOCK).unwrap();
    for (i, e) in [e1, e2, e3].into_iter().enumerate() {
        note(
            "add",
            show(p.epoll_ctl(ep, EPOLL_CTL_ADD, e, ev(EPOLLIN, i as u64 + 1))),
        );
    }
    let one = 1u64.to_ne_bytes();
    p.write(e3, &one).unwrap();
    p.write(e1, &one).unwrap();
    p.write(e2, &one).unwrap();
    note("three, in write order", wait(p, ep, 8));
    note("two of three", wait(p, ep, 2));
    note("two more", wait(p, ep, 2));
    note("one", wait(p, ep, 1));
    let mut b = [0u8; 8];
    p.read(e1, &mut b).unwrap();
    note("one read", wait(p, ep, 8));
    // Edge-triggered eventfd: a write of 0 is a wake-up too.
    note(
        "edge",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, e2, ev(EPOLLIN | EPOLLET, 20))),
    );
    note("edge: first", wait(p, ep, 8));
    note("edge: quiet", wait(p, ep, 8));
    p.write(e2, &0u64.to_ne_bytes()).unwrap();
    note("edge: a write of 0", wait(p, ep, 8));
    note(
        "out edge",
        show(p.epoll_ctl(ep, EPOLL_CTL_MOD, e2, ev(EPOLLOUT | EPOLLET, 21))),
    );
    note("out edge: first", wait(p, ep, 8));
    p.write(e2, &one).unwrap();
    note("out edge: a write", wait(p, ep, 8));
    p.read(e2, &mut b).unwrap();
    note("out edge: a read", wait(p, ep, 8));
    // An item stays while its file is open through another descriptor.
    let dup = p.dup(e3).unwrap();
    p.close(e3).unwrap();
    note("closed but duplicated", wait(p, ep, 8));
    note(
        "del by the closed number",
        show(p.epoll_ctl(ep, EPOLL_CTL_DEL, e3, None)),
    );
    note(
        "del by the duplicate",
        show(p.epoll_ctl(ep, EPOLL_CTL_DEL, dup, None)),
    );
    note(
        "add the duplicate",
        show(p.epoll_ctl(ep, EPOLL_CTL_ADD, dup, ev(EPOLLIN, 30))),
    );
    note("both names of one file", wait(p, ep, 8));
    p.close(dup).unwrap();
    note("the file closed", wait(p, ep, 8));
    let again = p.eventfd(5, 0).unwrap();
    note(
        "a new file on the old number",
        show(p.epoll_ctl(ep, EPOLL_CTL_ADD, again, ev(EPOLLIN, 31))),
    );
    note("only the new one", wait(p, ep, 8));
    let mut pfd = [PollFd {
        fd: ep,
        events: POLLIN | POLLOUT,
        revents: 0,
    }];
    note(
        "poll the epoll",
        show(p.poll(&mut pfd, 0).map(|n| (n, pfd[0].revents))),
    );
    for fd in [e1, e2, again] {
        p.close(fd).unwrap();
    }
    pfd[0].revents = 0;
    note(
        "poll the emptied epoll",
        show(p.poll(&mut pfd, 0).map(|n| (n, pfd[0].revents))),
    );
    p.close(ep).unwrap();
}

fn sockets<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("sockets: {what}"), r));
    let ep = p.epoll_create1(0).unwrap();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let add = |fd, events, data| p.epoll_ctl(ep, EPOLL_CTL_ADD, fd, ev(events, data));
    note("add a", show(add(a, EPOLLIN | EPOLLRDHUP | EPOLLET, 1)));
    note("add b", show(add(b, EPOLLIN | EPOLLOUT | EPOLLET, 2)));
    note("fresh pair", wait(p, ep, 4));
    p.write(a, b"hi").unwrap();
    note("a sent", wait(p, ep, 4));
    p.write(b, b"yo").unwrap();
    note("b sent", wait(p, ep, 4));
    p.write(b, b"more").unwrap();
    note("b sent more", wait(p, ep, 4));
    let mut buf = [0u8; 64];
    p.read(b, &mut buf).unwrap();
    note("b read", wait(p, ep, 4));
    p.shutdown(b, SHUT_WR).unwrap();
    note("b shut its writing", wait(p, ep, 4));
    p.close(b).unwrap();
    note("b closed", wait(p, ep, 4));
    // Seqpacket and datagram pairs.
    let [s1, s2] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    let [d1, d2] = p
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    note("add s2", show(add(s2, EPOLLIN | EPOLLET, 3)));
    note("add d2", show(add(d2, EPOLLIN | EPOLLET, 4)));
    note("add d1", show(add(d1, EPOLLOUT | EPOLLET, 5)));
    note("packets: fresh", wait(p, ep, 4));
    p.write(s1, b"p").unwrap();
    p.write(d1, b"d").unwrap();
    note("packets: sent", wait(p, ep, 4));
    p.read(d2, &mut buf).unwrap();
    note("packets: a datagram read", wait(p, ep, 4));
    // A socket watched before it connects, then connected; a listener.
    let l = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(l, b"/sock").unwrap();
    p.listen(l, 4).unwrap();
    let c = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    note("add the listener", show(add(l, EPOLLIN, 6)));
    note("add the unconnected", show(add(c, EPOLLIN | EPOLLET, 7)));
    note("unconnected", wait(p, ep, 8));
    note("connect", show(p.connect(c, b"/sock")));
    note("a connection queued", wait(p, ep, 8));
    let acc = p.accept4(l, SOCK_NONBLOCK).unwrap();
    note("accepted", wait(p, ep, 8));
    p.write(acc, b"hello").unwrap();
    note("data for the connected one", wait(p, ep, 8));
    for fd in [a, s1, s2, d1, d2, l, c, acc, ep] {
        p.close(fd).unwrap();
    }
}

fn nesting<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("nesting: {what}"), r));
    let outer = p.epoll_create1(0).unwrap();
    let inner = p.epoll_create1(0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let add = |ep, fd, events, data| p.epoll_ctl(ep, EPOLL_CTL_ADD, fd, ev(events, data));
    note("inner watches the pipe", show(add(inner, r, EPOLLIN, 1)));
    note(
        "outer watches inner",
        show(add(outer, inner, EPOLLIN | EPOLLOUT, 2)),
    );
    note("quiet", wait(p, outer, 4));
    p.write(w, b"x").unwrap();
    note("outer sees inner ready", wait(p, outer, 4));
    note("inner itself", wait(p, inner, 4));
    note("a loop", show(add(inner, outer, EPOLLIN, 3)));
    note(
        "a loop through the pipe's epoll",
        show(add(inner, inner, EPOLLIN, 3)),
    );
    let mut b = [0u8; 8];
    p.read(r, &mut b).unwrap();
    note("drained", wait(p, outer, 4));
    // Chains: each new epoll watches the last.
    let mut chain = vec![outer];
    for i in 0..7 {
        let e = p.epoll_create1(0).unwrap();
        note(
            &format!("chain link {i}"),
            show(add(e, *chain.last().unwrap(), EPOLLIN, 10 + i)),
        );
        chain.push(e);
    }
    // And downwards: the chain's top under a new epoll that is watched.
    let top = p.epoll_create1(0).unwrap();
    let over = p.epoll_create1(0).unwrap();
    note("over watches top", show(add(over, top, EPOLLIN, 30)));
    note(
        "top takes the third link",
        show(add(top, chain[3], EPOLLIN, 31)),
    );
    note(
        "top takes the second link",
        show(add(top, chain[2], EPOLLIN, 32)),
    );
    note("a pipe under over", show(add(top, w, EPOLLOUT, 33)));
    note("over", wait(p, over, 4));
    p.close(inner).unwrap();
    note(
        "inner closed (still watched by the chain? no: by outer)",
        wait(p, outer, 4),
    );
    for fd in chain.into_iter().chain([r, w, top, over]) {
        p.close(fd).unwrap();
    }
}

fn script<P: ProcessApi>(p: &P) -> Log {
    let mut log = Log::new();
    errors(p, &mut log);
    level_and_edge(p, &mut log);
    eventfds_and_order(p, &mut log);
    sockets(p, &mut log);
    nesting(p, &mut log);
    log
}

#[test]
fn epoll_matches_the_kernel() {
    compare_with_kernel("epoll", script, script);
}

/// One step of a random sequence; every operand is a slot (an object
/// made at the start of the case, or a dup), never a descriptor number.
#[derive(Clone, Debug)]
enum Step {
    Write(usize, usize),
    Read(usize, usize),
    Ctl(usize, i32, usize, u32),
    Wait(usize, usize),
    Shutdown(usize, i32),
    Dup(usize),
    Close(usize),
    /// A datagram socket (slot 9, 10 or 11) connects to another by its
    /// name, or (None) disconnects.
    Connect(usize, Option<usize>),
    /// poll(2) with no timeout.
    Poll(usize),
    /// splice(2) between two slots, SPLICE_F_NONBLOCK.
    Splice(usize, usize, usize),
    /// A new non-blocking stream socket connects to the listener (a new
    /// slot).
    Dial,
    /// accept4 on the listener (a new slot: the connection, or none).
    Accept,
    /// setsockopt(SO_SNDBUF): a writer's budget, whose room decides when
    /// a read wakes it.
    SndBuf(usize, i32),
}

/// The abstract name of the datagram socket in slot 9, 10 or 11 (`which`
/// 0, 1, 2) or of the listener (3): abstract names are shared by the
/// whole network namespace, so they carry the process id (two runs of
/// this test at once must not collide).
fn socket_name(which: usize) -> Vec<u8> {
    format!(
        "\0vfscale-epoll-{}-{}",
        ["g", "h", "k", "l"][which],
        std::process::id()
    )
    .into_bytes()
}

/// The objects of a case: two epolls, a pipe's ends, an eventfd, a
/// stream, a seqpacket and a datagram pair, and a third datagram socket;
/// the datagram sockets are named (`socket_name`).
fn objects<P: ProcessApi + ?Sized>(p: &P) -> Vec<Option<Fd>> {
    let ep0 = p.epoll_create1(0).unwrap();
    let ep1 = p.epoll_create1(0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let e = p.eventfd(0, EFD_NONBLOCK).unwrap();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let [c, d] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    let [g, h] = p
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let k = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    for (i, fd) in [g, h, k].into_iter().enumerate() {
        p.bind(fd, &socket_name(i)).unwrap();
    }
    // A FIFO's two ends, and a second FIFO opened for both.
    p.mknodat(AT_FDCWD, b"/epoll-fifo", S_IFIFO | 0o644, 0)
        .unwrap();
    p.mknodat(AT_FDCWD, b"/epoll-fifo2", S_IFIFO | 0o644, 0)
        .unwrap();
    let fr = p.open(b"/epoll-fifo", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let fw = p.open(b"/epoll-fifo", O_WRONLY | O_NONBLOCK, 0).unwrap();
    let frw = p.open(b"/epoll-fifo2", O_RDWR | O_NONBLOCK, 0).unwrap();
    // A listening stream socket (slot 15) that `Dial` connects to.
    let l = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(l, &socket_name(3)).unwrap();
    p.listen(l, 2).unwrap();
    [ep0, ep1, r, w, e, a, b, c, d, g, h, k, fr, fw, frw, l]
        .map(Some)
        .to_vec()
}

const OBJECTS: usize = 16;
const LISTENER: usize = 15;

/// Slots of pipes and FIFOs, and of the stream socket pair. A stream
/// socket's bytes enter a pipe by skbs, and a splice into one is one skb
/// of whole pipe buffers whatever SO_SNDBUF says (MSG_SPLICE_PAGES); vfscale
/// copies bytes and charges them as write(2)'s segments
/// (COMPATIBILITY.md), so neither direction is spliced here.
const PIPE_SLOTS: [usize; 5] = [2, 3, 12, 13, 14];
const STREAM_SLOTS: [usize; 2] = [5, 6];

fn random_steps(rnd: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<Step> {
    let bits = [
        EPOLLIN,
        EPOLLOUT,
        EPOLLRDHUP,
        EPOLLPRI,
        EPOLLET,
        EPOLLONESHOT,
        EPOLLERR,
        EPOLLHUP,
    ];
    let mut slots = OBJECTS;
    (0..n)
        .map(|_| {
            let slot = |rnd: &mut dyn FnMut(u64) -> u64| rnd(slots as u64) as usize;
            match rnd(22) {
                0..=2 => Step::Write(slot(rnd), [1, 8, 100, 70_000][rnd(4) as usize]),
                3..=4 => Step::Read(slot(rnd), [1, 8, 4096, 200_000][rnd(4) as usize]),
                5..=8 => {
                    let mut events = 0;
                    for b in bits {
                        if rnd(3) == 0 {
                            events |= b;
                        }
                    }
                    if rnd(30) == 0 {
                        events |= EPOLLEXCLUSIVE;
                    }
                    let op = [EPOLL_CTL_ADD, EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL]
                        [rnd(4) as usize];
                    let ep = if rnd(4) == 0 {
                        slot(rnd)
                    } else {
                        rnd(2) as usize
                    };
                    Step::Ctl(ep, op, slot(rnd), events)
                }
                9..=12 => Step::Wait(rnd(2) as usize, 1 + rnd(4) as usize),
                13 => Step::Shutdown(slot(rnd), [SHUT_RD, SHUT_WR, SHUT_RDWR][rnd(3) as usize]),
                14 => match rnd(4) {
                    0 => {
                        slots += 1;
                        Step::Dup(rnd(slots as u64 - 1) as usize)
                    }
                    1 => Step::Poll(slot(rnd)),
                    _ => Step::Connect(
                        9 + rnd(3) as usize,
                        (rnd(4) != 0).then(|| 9 + rnd(3) as usize),
                    ),
                },
                16..=18 => {
                    // Mostly between a pipe and a socket or another pipe
                    // (one end must be a pipe).
                    const PIPE_IN: [usize; 3] = [2, 12, 14];
                    const PIPE_OUT: [usize; 3] = [3, 13, 14];
                    const OTHERS: [usize; 7] = [5, 6, 7, 8, 9, 10, 11];
                    let other = |rnd: &mut dyn FnMut(u64) -> u64| {
                        if rnd(3) == 0 {
                            PIPE_OUT[rnd(3) as usize]
                        } else {
                            OTHERS[rnd(7) as usize]
                        }
                    };
                    let (from, to) = match rnd(4) {
                        0 => (slot(rnd), slot(rnd)),
                        1 => (other(rnd), PIPE_OUT[rnd(3) as usize]),
                        _ => (PIPE_IN[rnd(3) as usize], other(rnd)),
                    };
                    if STREAM_SLOTS.contains(&from) && PIPE_SLOTS.contains(&to)
                        || STREAM_SLOTS.contains(&to)
                    {
                        Step::Poll(from)
                    } else {
                        Step::Splice(from, to, [1, 100, 5000][rnd(3) as usize])
                    }
                }
                19 => {
                    slots += 1;
                    Step::Dial
                }
                20 => {
                    slots += 1;
                    Step::Accept
                }
                21 => Step::SndBuf(slot(rnd), [1, 2048, 4608, 65_536, 212_992][rnd(5) as usize]),
                _ => Step::Close(slot(rnd)),
            }
        })
        .collect()
}

/// Runs `steps` on `p`, logging each result (events by slot).
fn run_steps<P: ProcessApi + ?Sized>(p: &P, case: usize, steps: &[Step], log: &mut Log) {
    let mut fds = objects(p);
    for (i, step) in steps.iter().enumerate() {
        let fd = |s: usize, fds: &[Option<Fd>]| fds.get(s).copied().flatten();
        let r = match *step {
            Step::Write(s, len) => match fd(s, &fds) {
                // An eventfd takes 8 bytes: a count of 1.
                Some(f) if s == 4 => show(p.write(f, &1u64.to_ne_bytes()[..len.min(8)])),
                Some(f) => show(p.write(f, &vec![b'w'; len])),
                None => continue,
            },
            Step::Read(s, len) => match fd(s, &fds) {
                Some(f) => show(p.read(f, &mut vec![0; len])),
                None => continue,
            },
            Step::Ctl(ep, op, t, events) => match (fd(ep, &fds), fd(t, &fds)) {
                (Some(e), Some(f)) => show(p.epoll_ctl(
                    e,
                    op,
                    f,
                    Some(EpollEvent {
                        events,
                        data: t as u64,
                    }),
                )),
                _ => continue,
            },
            Step::Wait(ep, max) => match fd(ep, &fds) {
                Some(e) => wait(p, e, max),
                None => continue,
            },
            Step::Shutdown(s, how) => match fd(s, &fds) {
                Some(f) => show(p.shutdown(f, how)),
                None => continue,
            },
            Step::Dup(s) => match fd(s, &fds) {
                Some(f) => {
                    let new = p.dup(f).unwrap();
                    fds.push(Some(new));
                    format!("dup of {s}")
                }
                None => {
                    fds.push(None);
                    continue;
                }
            },
            Step::Connect(s, to) => match fd(s, &fds) {
                Some(f) => show(match to {
                    Some(t) => p.connect(f, &socket_name(t - 9)),
                    None => p.disconnect(f),
                }),
                None => continue,
            },
            Step::Poll(s) => match fd(s, &fds) {
                Some(f) => {
                    let mut pfd = [PollFd {
                        fd: f,
                        events: POLLIN | POLLOUT | POLLRDHUP,
                        revents: 0,
                    }];
                    show(p.poll(&mut pfd, 0).map(|n| (n, pfd[0].revents)))
                }
                None => continue,
            },
            Step::Close(s) => match fd(s, &fds) {
                Some(f) => {
                    fds[s] = None;
                    show(p.close(f))
                }
                None => continue,
            },
            Step::SndBuf(s, size) => match fd(s, &fds) {
                Some(f) => show(p.setsockopt(f, SOL_SOCKET, SO_SNDBUF, &size.to_ne_bytes())),
                None => continue,
            },
            Step::Dial => {
                let c = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
                fds.push(Some(c));
                show(p.connect(c, &socket_name(3)))
            }
            Step::Accept => match fd(LISTENER, &fds) {
                Some(l) => {
                    let r = p.accept4(l, SOCK_NONBLOCK);
                    fds.push(r.ok());
                    show(r.map(|_| "a connection"))
                }
                None => {
                    fds.push(None);
                    continue;
                }
            },
            Step::Splice(from, to, len) => match (fd(from, &fds), fd(to, &fds)) {
                (Some(a), Some(b)) => show(p.splice(a, None, b, None, len, SPLICE_F_NONBLOCK)),
                _ => continue,
            },
        };
        log.push((format!("case {case} step {i}: {step:?}"), r));
    }
    for f in fds.into_iter().flatten() {
        p.close(f).unwrap();
    }
    p.unlink(b"/epoll-fifo").unwrap();
    p.unlink(b"/epoll-fifo2").unwrap();
}

#[test]
fn random_sequences_match_the_kernel() {
    let seed = seed_from_env();
    let cases = env_u64("VFSCALE_EPOLL_CASES").unwrap_or(150) as usize;
    println!("seed {seed} (replay with VFSCALE_SEED={seed})");
    let mut rnd = xorshift(seed);
    let sequences: Vec<Vec<Step>> = (0..cases).map(|_| random_steps(&mut rnd, 40)).collect();
    let sequences: Vec<Vec<Step>> = match std::env::var("VFSCALE_EPOLL_ONLY") {
        Ok(c) => vec![sequences[c.parse::<usize>().unwrap()].clone()],
        Err(_) => sequences,
    };
    let theirs = sequences.clone();
    let run_all = |steps: Vec<Vec<Step>>| {
        move |p: &dyn ProcessApi| {
            let mut log = Log::new();
            for (case, steps) in steps.iter().enumerate() {
                run_steps(p, case, steps, &mut log);
            }
            log
        }
    };
    let on_kernel = run_all(theirs);
    let on_vfscale = run_all(sequences);
    compare_with_kernel(
        "epoll (random)",
        move |k| on_kernel(k),
        move |p| on_vfscale(p),
    );
}
