//! splice(2), tee(2), vmsplice(2) and sendfile(2) between regular files, pipes,
//! sockets (stream and datagram), eventfds, epolls and directories: one
//! script on the kernel (a private tmpfs root, `on_kernel_as_root`) and on
//! vfscale, every result compared — the errors in Linux's order, the
//! counts (where a splice from a file stops at the pipe's free pages),
//! offsets and file positions after, the bytes that arrive, and what a
//! spliced pipe buffer does to a later write (it is never merged into).
//! No step waits: every pipe read is sized by FIONREAD first, and the
//! pipe ends that could wait have data or room.

use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_difftest::script::{compare_with_kernel, show, Log};
use vfscale_difftest::seeded::seeded_cases;

/// Everything queued in a pipe or socket, without waiting.
fn drain<P: ProcessApi>(p: &P, fd: Fd) -> String {
    let queued = match p.fionread(fd) {
        Ok(n) => n as usize,
        Err(e) => return format!("{e}"),
    };
    if queued == 0 {
        return "(empty)".into();
    }
    let mut buf = vec![0u8; queued];
    show(p.read(fd, &mut buf).map(|n| summary(&buf[..n])))
}

/// Short contents in full, long ones by length and a checksum.
fn summary(b: &[u8]) -> String {
    if b.len() <= 64 {
        return String::from_utf8_lossy(b).into_owned();
    }
    let sum = b
        .iter()
        .fold(0u64, |h, &c| h.wrapping_mul(31).wrapping_add(c as u64));
    format!("{} bytes, sum {sum:x}", b.len())
}

fn contents<P: ProcessApi + ?Sized>(p: &P, path: &[u8]) -> String {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let mut b = vec![0u8; 400_000];
    let n = p.read(fd, &mut b).unwrap();
    p.close(fd).unwrap();
    summary(&b[..n])
}

fn splice_at<P: ProcessApi>(
    p: &P,
    i: Fd,
    oi: Option<i64>,
    o: Fd,
    oo: Option<i64>,
    len: usize,
    flags: u32,
) -> String {
    let (mut a, mut b) = (oi.unwrap_or(0), oo.unwrap_or(0));
    let r = p.splice(
        i,
        oi.is_some().then_some(&mut a),
        o,
        oo.is_some().then_some(&mut b),
        len,
        flags,
    );
    let mut s = show(r);
    if oi.is_some() {
        s += &format!(" off_in {a}");
    }
    if oo.is_some() {
        s += &format!(" off_out {b}");
    }
    s
}

fn sendfile_at<P: ProcessApi>(p: &P, o: Fd, i: Fd, off: Option<i64>, count: usize) -> String {
    let mut at = off.unwrap_or(0);
    let r = p.sendfile(o, i, off.is_some().then_some(&mut at), count);
    match off {
        Some(_) => format!("{} offset {at}", show(r)),
        None => show(r),
    }
}

fn pos<P: ProcessApi>(p: &P, fd: Fd) -> String {
    show(p.lseek(fd, 0, SEEK_CUR))
}

/// Bytes a non-blocking pipe still takes, written a byte at a time (each
/// byte merges into the last buffer if that one allows it).
fn room<P: ProcessApi>(p: &P, w: Fd) -> usize {
    let mut n = 0;
    while p.write(w, b"+").is_ok() {
        n += 1;
    }
    n
}

fn script<P: ProcessApi>(p: &P) -> Log {
    let mut log = Log::new();
    let mut note = |what: &str, r: String| log.push((what.to_string(), r));
    p.umask(0o022);
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(f, "0123456789".repeat(10).as_bytes()).unwrap();
    p.lseek(f, 0, SEEK_SET).unwrap();
    let big_bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let big = p.open(b"/big", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(big, &big_bytes).unwrap();
    let a = p.open(b"/a", O_CREAT | O_RDWR | O_APPEND, 0o644).unwrap();
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    let wo = p.open(b"/f", O_WRONLY, 0).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    let d = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let [br, bw] = p.pipe2(0).unwrap();
    let [s1, s2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let [d1, d2] = p.socketpair(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    let e = p.eventfd(3, 0).unwrap();
    let ep = p.epoll_create1(0).unwrap();

    // Argument and descriptor checks, in Linux's order.
    note("len 0, bad fds", splice_at(p, 99, None, 98, None, 0, 0));
    note("bad flags", splice_at(p, 99, None, 98, None, 1, 0x10));
    note("bad fd_in", splice_at(p, 99, None, w, None, 1, 0));
    note("bad fd_out", splice_at(p, f, None, 99, None, 1, 0));
    note("O_PATH in", splice_at(p, path, None, w, None, 1, 0));
    note("file to file", splice_at(p, f, None, a, None, 1, 0));
    note(
        "offset on the pipe out",
        splice_at(p, f, Some(0), w, Some(0), 1, 0),
    );
    note(
        "offset on the pipe in",
        splice_at(p, r, Some(0), f, None, 1, 0),
    );
    note("pipe to itself", splice_at(p, r, None, w, None, 1, 0));
    note("write-only in", splice_at(p, wo, None, w, None, 1, 0));
    note("read end as out", splice_at(p, f, None, r, None, 1, 0));
    note("eventfd in", splice_at(p, e, None, w, None, 8, 0));
    note("epoll in", splice_at(p, ep, None, w, None, 8, 0));
    note("directory in", splice_at(p, d, None, w, None, 8, 0));
    note(
        "socket in with an offset",
        splice_at(p, s1, Some(0), w, None, 8, 0),
    );
    note("negative offset", splice_at(p, f, Some(-1), w, None, 8, 0));
    note(
        "offset at the end",
        splice_at(p, f, Some(i64::MAX - 2), w, None, 8, 0),
    );
    note("huge len", splice_at(p, f, Some(0), w, None, usize::MAX, 0));
    p.write(w, b"pipe").unwrap();
    note("pipe to eventfd", splice_at(p, r, None, e, None, 8, 0));
    note("pipe to epoll", splice_at(p, r, None, ep, None, 8, 0));
    note(
        "pipe to an O_APPEND file",
        splice_at(p, r, None, a, None, 8, 0),
    );
    note(
        "pipe to a socket at an offset",
        splice_at(p, r, None, s2, Some(0), 8, 0),
    );
    note(
        "pipe to a read-only file",
        splice_at(p, r, None, ro, None, 8, 0),
    );
    note("pipe after the refusals", drain(p, r));

    // File to pipe: offsets, positions, the end of the file.
    note(
        "file to pipe at 5",
        splice_at(p, f, Some(5), w, None, 10, 0),
    );
    note("file position after", pos(p, f));
    note(
        "file to pipe at the position",
        splice_at(p, f, None, w, None, 7, 0),
    );
    note("file position after it", pos(p, f));
    note(
        "file to pipe past the end",
        splice_at(p, f, Some(200), w, None, 7, 0),
    );
    note(
        "file to pipe across the end",
        splice_at(p, f, Some(95), w, None, 70, 0),
    );
    note("pipe holds", drain(p, r));
    // A big file into an empty pipe: 16 pages from an offset inside one.
    note(
        "big at 100",
        splice_at(p, big, Some(100), w, None, 70_000, 0),
    );
    note(
        "big into the full pipe",
        splice_at(p, big, Some(0), w, None, 10, 0),
    );
    note("big pipe holds", drain(p, r));
    note(
        "big, page-aligned",
        splice_at(p, big, Some(4096), w, None, 70_000, 0),
    );
    note("big, aligned, holds", drain(p, r));
    // Spliced buffers are not merged into: a one-page pipe holding three
    // spliced bytes is full; one holding three written bytes is not.
    note("one-page pipe", show(p.fcntl(w, F_SETPIPE_SZ, 4096)));
    note(
        "three spliced bytes",
        splice_at(p, f, Some(0), w, None, 3, 0),
    );
    note("room after a splice", room(p, w).to_string());
    note("it holds", drain(p, r));
    p.write(w, b"abc").unwrap();
    note("room after a write", room(p, w).to_string());
    note("it holds now", drain(p, r));
    note("default size again", show(p.fcntl(w, F_SETPIPE_SZ, 65536)));

    // Pipe to file.
    p.write(w, b"hello").unwrap();
    note(
        "pipe to file at 3",
        splice_at(p, r, None, f, Some(3), 100, 0),
    );
    note("file position unmoved", pos(p, f));
    p.write(w, b"world").unwrap();
    note(
        "pipe to file at its position",
        splice_at(p, r, None, f, None, 2, 0),
    );
    note("file position moved", pos(p, f));
    note("the rest stays", drain(p, r));
    note("file now", contents(p, b"/f"));
    note(
        "empty pipe, non-blocking",
        splice_at(p, r, None, f, None, 5, 0),
    );
    note(
        "empty blocking pipe, SPLICE_F_NONBLOCK",
        splice_at(p, br, None, f, None, 5, SPLICE_F_NONBLOCK),
    );
    p.write(bw, b"blocking").unwrap();
    note(
        "blocking pipe with bytes",
        splice_at(p, br, None, f, Some(50), 100, 0),
    );
    let [cr, cw] = p.pipe2(0).unwrap();
    p.close(cw).unwrap();
    note(
        "empty pipe with no writer",
        splice_at(p, cr, None, f, None, 5, 0),
    );
    note("tee from it", show(p.tee(cr, w, 5, 0)));
    let [dr, dw] = p.pipe2(O_NONBLOCK).unwrap();
    p.close(dr).unwrap();
    note(
        "tee from it to a pipe with no reader",
        show(p.tee(cr, dw, 5, 0)),
    );
    note(
        "pipe to pipe from it to a pipe with no reader",
        splice_at(p, cr, None, dw, None, 5, 0),
    );
    p.close(dw).unwrap();
    note(
        "pipe to pipe from it",
        splice_at(p, cr, None, w, None, 5, 0),
    );

    // Pipe to pipe, and what a moved buffer keeps.
    let [r2, w2] = p.pipe2(O_NONBLOCK).unwrap();
    p.write(w, b"abcdef").unwrap();
    note("pipe to pipe, part", splice_at(p, r, None, w2, None, 4, 0));
    note("source keeps", drain(p, r));
    note("target has", drain(p, r2));
    note("one-page target", show(p.fcntl(w2, F_SETPIPE_SZ, 4096)));
    p.write(w, b"xy").unwrap();
    note(
        "a whole buffer moves",
        splice_at(p, r, None, w2, None, 10, 0),
    );
    note("room after a whole move", room(p, w2).to_string());
    note("target holds", drain(p, r2));
    p.write(w, b"xyz").unwrap();
    note(
        "part of a buffer moves",
        splice_at(p, r, None, w2, None, 2, 0),
    );
    note("room after a part", room(p, w2).to_string());
    note("full target", splice_at(p, r, None, w2, None, 1, 0));
    note(
        "full target, blocking source",
        splice_at(p, br, None, w2, None, 1, 0),
    );
    note("target holds now", drain(p, r2));
    note("source left", drain(p, r));
    note("empty source", splice_at(p, r, None, w2, None, 1, 0));
    p.close(r2).unwrap();
    p.write(w, b"q").unwrap();
    note(
        "target with no reader",
        splice_at(p, r, None, w2, None, 1, 0),
    );
    note("tee to it", show(p.tee(r, w2, 1, 0)));
    note("source after", drain(p, r));
    p.close(w2).unwrap();

    // tee.
    let [r3, w3] = p.pipe2(O_NONBLOCK).unwrap();
    note("tee, bad flags", show(p.tee(99, 98, 1, 0x10)));
    note("tee, len 0", show(p.tee(99, 98, 0, 0)));
    note("tee, bad fd", show(p.tee(99, w3, 1, 0)));
    note("tee, empty", show(p.tee(r, w3, 4, 0)));
    note(
        "tee, empty blocking, flag",
        show(p.tee(br, w3, 4, SPLICE_F_NONBLOCK)),
    );
    p.write(w, b"tee").unwrap();
    p.write(w, b"data").unwrap();
    note("tee 5", show(p.tee(r, w3, 5, 0)));
    note("tee copy", drain(p, r3));
    note("tee all", show(p.tee(r, w3, 100, 0)));
    note("tee copy again", drain(p, r3));
    note("tee to itself", show(p.tee(r, w, 4, 0)));
    note("tee a file", show(p.tee(f, w3, 4, 0)));
    note("tee into a read end", show(p.tee(r, r3, 4, 0)));
    note("tee source kept", drain(p, r));

    // Sockets.
    p.write(s2, b"sockdata").unwrap();
    note("socket to pipe", splice_at(p, s1, None, w, None, 100, 0));
    note("from the socket", drain(p, r));
    note(
        "empty socket, pipe non-blocking",
        splice_at(p, s1, None, w, None, 100, 0),
    );
    note(
        "empty socket, SPLICE_F_NONBLOCK",
        splice_at(p, s1, None, bw, None, 100, SPLICE_F_NONBLOCK),
    );
    p.write(w, b"to the socket").unwrap();
    note("pipe to socket", splice_at(p, r, None, s2, None, 100, 0));
    note("socket got", drain(p, s1));
    p.write(w, b"partly").unwrap();
    note(
        "pipe to socket, part",
        splice_at(p, r, None, s2, None, 4, 0),
    );
    note("socket got part", drain(p, s1));
    note("pipe kept", drain(p, r));
    p.sendto(d2, b"dg1", 0, None).unwrap();
    p.sendto(d2, b"dg2", 0, None).unwrap();
    note("datagram to pipe", splice_at(p, d1, None, w, None, 100, 0));
    note("one datagram", drain(p, r));
    note("the other stays", drain(p, d1));
    p.write(w, b"abc").unwrap();
    p.write(w, b"def").unwrap();
    note(
        "pipe to datagram socket",
        splice_at(p, r, None, d2, None, 100, 0),
    );
    note("datagram", drain(p, d1));
    p.shutdown(s2, SHUT_WR).unwrap();
    note("socket at its end", splice_at(p, s1, None, w, None, 100, 0));
    let [x1, x2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    p.close(x2).unwrap();
    p.write(w, b"z").unwrap();
    note(
        "pipe to a socket with no peer",
        splice_at(p, r, None, x1, None, 1, 0),
    );
    note("pipe kept z", drain(p, r));
    p.close(x1).unwrap();

    // vmsplice: the direction is the file's.
    let vm = |fd: Fd, data: &[&[u8]], flags: u32| {
        let mut owned: Vec<Vec<u8>> = data.iter().map(|d| d.to_vec()).collect();
        let mut refs: Vec<&mut [u8]> = owned.iter_mut().map(|b| b.as_mut_slice()).collect();
        show(p.vmsplice(fd, &mut refs, flags))
    };
    let [vr, vw] = p.pipe2(O_NONBLOCK).unwrap();
    note("vmsplice, bad flags", vm(vw, &[b"x"], 0x10));
    note("vmsplice, bad fd", vm(99, &[b"x"], 0));
    note("vmsplice, O_PATH", vm(path, &[b"x"], 0));
    note("vmsplice, a file", vm(f, &[b"x"], 0));
    note("vmsplice, a file, nothing", vm(f, &[], 0));
    note("vmsplice, a socket", vm(s1, &[b"x"], 0));
    let many: Vec<&[u8]> = vec![b"x"; 1025];
    note("vmsplice, 1025 iovecs", vm(vw, &many, 0));
    note(
        "vmsplice into the pipe",
        vm(vw, &[b"vm", b"", b"splice"], 0),
    );
    note("vmspliced", drain(p, vr));
    note(
        "vmsplice one-page pipe",
        show(p.fcntl(vw, F_SETPIPE_SZ, 4096)),
    );
    note("vmsplice a byte", vm(vw, &[b"1"], 0));
    note("room after a vmsplice", room(p, vw).to_string());
    note(
        "vmsplice into the full pipe",
        vm(vw, &[b"2"], SPLICE_F_NONBLOCK),
    );
    let mut a3 = [0u8; 3];
    let mut a10 = [0u8; 10];
    note(
        "vmsplice out of the pipe",
        show(
            p.vmsplice(vr, &mut [&mut a3, &mut a10], 0)
                .map(|n| String::from_utf8_lossy(&[&a3[..], &a10[..]].concat()[..n]).into_owned()),
        ),
    );
    note(
        "vmsplice out of the empty pipe",
        show(p.vmsplice(vr, &mut [&mut a3], SPLICE_F_NONBLOCK)),
    );
    p.write(vw, b"hello").unwrap();
    p.close(vw).unwrap();
    note(
        "vmsplice out, the writer gone",
        show(
            p.vmsplice(vr, &mut [&mut a3, &mut a10], 0)
                .map(|n| String::from_utf8_lossy(&[&a3[..], &a10[..]].concat()[..n]).into_owned()),
        ),
    );
    note(
        "vmsplice out at the end",
        show(p.vmsplice(vr, &mut [&mut a3], 0)),
    );
    let [vr2, vw2] = p.pipe2(0).unwrap();
    p.close(vr2).unwrap();
    note("vmsplice with no reader", vm(vw2, &[b"x"], 0));
    p.close(vw2).unwrap();
    p.close(vr).unwrap();

    // sendfile.
    note("sendfile, bad in", sendfile_at(p, w, 99, None, 8));
    note("sendfile, bad out", sendfile_at(p, 99, f, None, 8));
    note("sendfile, write-only in", sendfile_at(p, w, wo, None, 8));
    note("sendfile, read-only out", sendfile_at(p, ro, f, None, 8));
    note(
        "sendfile, negative offset",
        sendfile_at(p, w, f, Some(-1), 8),
    );
    note(
        "sendfile, offset at the end",
        sendfile_at(p, w, f, Some(i64::MAX - 2), 8),
    );
    note(
        "sendfile, socket in at an offset",
        sendfile_at(p, w, s1, Some(0), 8),
    );
    note("sendfile, pipe in", sendfile_at(p, s2, r, None, 8));
    note("sendfile, directory in", sendfile_at(p, w, d, Some(0), 8));
    note("sendfile, eventfd in", sendfile_at(p, w, e, None, 8));
    // A count of 0 answers 0 before the input's splice_read is looked
    // for, and sendfile to a non-pipe asks only for an llseek method
    // (eventfds and epolls have one, sockets and pipes do not).
    note(
        "sendfile 0, eventfd to a pipe",
        sendfile_at(p, w, e, None, 0),
    );
    note(
        "sendfile 0, eventfd to a socket",
        sendfile_at(p, s2, e, None, 0),
    );
    note(
        "sendfile 0, epoll to a file",
        sendfile_at(p, f, ep, None, 0),
    );
    note(
        "sendfile 0, socket to a socket",
        sendfile_at(p, s2, s1, None, 0),
    );
    note("sendfile 0, pipe to a file", sendfile_at(p, f, r, None, 0));
    note("sendfile to a pipe", sendfile_at(p, w, f, Some(5), 8));
    note("sent", drain(p, r));
    p.lseek(f, 10, SEEK_SET).unwrap();
    note("sendfile at the position", sendfile_at(p, w, f, None, 4));
    note("position after sendfile", pos(p, f));
    note("sent from the position", drain(p, r));
    note(
        "sendfile to an O_APPEND file",
        sendfile_at(p, a, f, Some(0), 8),
    );
    note("sendfile to an eventfd", sendfile_at(p, e, f, Some(0), 8));
    note(
        "sendfile to an eventfd at the end",
        sendfile_at(p, e, f, Some(100), 8),
    );
    note("sendfile to an epoll", sendfile_at(p, ep, f, Some(0), 8));
    let g = p.open(b"/g", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(g, b"--").unwrap();
    note("sendfile file to file", sendfile_at(p, g, f, Some(0), 12));
    note("out position after", pos(p, g));
    note(
        "sendfile big to file",
        sendfile_at(p, g, big, Some(1), 70_000),
    );
    note("g now", contents(p, b"/g"));
    note(
        "sendfile a file to itself",
        sendfile_at(p, f, f, Some(0), 4),
    );
    note("f now", contents(p, b"/f"));
    let [t1, t2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    note("sendfile to a socket", sendfile_at(p, t1, f, Some(20), 10));
    note("the socket got", drain(p, t2));
    note("sendfile socket to socket", sendfile_at(p, t2, t1, None, 8));
    p.write(t1, b"sockin").unwrap();
    note("sendfile socket to pipe", sendfile_at(p, w, t2, None, 100));
    note("pipe got", drain(p, r));
    note(
        "sendfile big to a datagram socket",
        sendfile_at(p, d2, big, Some(0), 70_000),
    );
    note("first datagram", drain(p, d1));
    note("second datagram", drain(p, d1));
    note(
        "sendfile into a one-page pipe",
        show(p.fcntl(w, F_SETPIPE_SZ, 4096)),
    );
    note(
        "sendfile big into it",
        sendfile_at(p, w, big, Some(10), 70_000),
    );
    note(
        "sendfile into the full pipe",
        sendfile_at(p, w, big, Some(10), 10),
    );
    note("one page", drain(p, r));
    p.close(r).unwrap();
    note(
        "sendfile to a pipe with no reader",
        sendfile_at(p, w, f, Some(0), 4),
    );
    note(
        "splice to a pipe with no reader",
        splice_at(p, f, Some(0), w, None, 4, 0),
    );

    for fd in [
        f, big, a, ro, wo, path, d, w, br, bw, s1, s2, d1, d2, e, ep, cr, r3, w3, g, t1, t2,
    ] {
        p.close(fd).unwrap();
    }
    log
}

#[test]
fn splice_tee_and_sendfile_match_the_kernel() {
    compare_with_kernel("splice/tee/sendfile", script, script);
}

/// A step of a random sequence over the objects of `objects`: slots, not
/// descriptors.
#[derive(Clone, Debug)]
enum Step {
    Write(usize, usize),
    Read(usize, usize),
    Splice(usize, Option<i64>, usize, Option<i64>, usize, u32),
    Tee(usize, usize, usize, u32),
    Sendfile(usize, usize, Option<i64>, usize),
    /// SPLICE_F_NONBLOCK is always added: vmsplice ignores O_NONBLOCK.
    Vmsplice(usize, usize, u32),
    Seek(usize, i64),
    PipeSize(usize, i64),
    Shutdown(usize, i32),
    Close(usize),
}

/// Slots of `objects`: regular files, pipe ends, a FIFO opened both
/// ways, socket pairs, an eventfd, a directory. Every stream end is
/// non-blocking, so no step waits.
const SLOTS: usize = 18;
const STREAM_SOCKETS: [usize; 2] = [9, 10];
const PIPES: [usize; 5] = [4, 5, 6, 7, 8];
const WRITTEN_FILES: [usize; 3] = [1, 2, 3];
const SOCKETS: [usize; 6] = [9, 10, 11, 12, 13, 14];

fn objects<P: ProcessApi + ?Sized>(p: &P) -> Vec<Option<Fd>> {
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let text: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    p.write(f, &text).unwrap();
    p.lseek(f, 0, SEEK_SET).unwrap();
    let g = p.open(b"/g", O_CREAT | O_RDWR, 0o644).unwrap();
    let a = p.open(b"/a", O_CREAT | O_RDWR | O_APPEND, 0o644).unwrap();
    let m = p.memfd_create(b"m", 0).unwrap();
    let [ar, aw] = p.pipe2(O_NONBLOCK).unwrap();
    let [br, bw] = p.pipe2(O_NONBLOCK).unwrap();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let fifo = p.open(b"/fifo", O_RDWR | O_NONBLOCK, 0).unwrap();
    let pair = |ty| p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
    let [s1, s2] = pair(SOCK_STREAM);
    let [d1, d2] = pair(SOCK_DGRAM);
    let [q1, q2] = pair(SOCK_SEQPACKET);
    let e = p.eventfd(0, EFD_NONBLOCK).unwrap();
    let d = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    [
        f, g, a, m, ar, aw, br, bw, fifo, s1, s2, d1, d2, q1, q2, e, d, ro,
    ]
    .into_iter()
    .map(Some)
    .collect()
}

fn random_steps(rnd: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<Step> {
    const LENS: [usize; 8] = [1, 7, 100, 4096, 5000, 70_000, 1 << 40, 0];
    const OFFSETS: [Option<i64>; 8] = [
        None,
        None,
        None,
        Some(0),
        Some(3),
        Some(4090),
        Some(20_000),
        Some(-1),
    ];
    let mut steps = Vec::new();
    while steps.len() < n {
        let mut slot = || rnd(SLOTS as u64) as usize;
        let (x, y) = (slot(), slot());
        let len = LENS[rnd(8) as usize];
        let (o1, o2) = (OFFSETS[rnd(8) as usize], OFFSETS[rnd(8) as usize]);
        let flags = match rnd(8) {
            0 => 0x10,
            1 => SPLICE_F_NONBLOCK | SPLICE_F_MORE,
            2 => SPLICE_F_MOVE,
            _ => 0,
        };
        // A stream socket splices into a pipe by its skbs, which vfscale
        // does not copy (COMPATIBILITY.md): not compared here.
        let stream_into_pipe = STREAM_SOCKETS.contains(&x) && PIPES.contains(&y);
        // A pipe, and a socket's queue filled by sendfile, hold a file's
        // pages in Linux, so a later write to the file shows through them
        // (vfscale copies, COMPATIBILITY.md): only /f, never written, is
        // spliced into pipes or sent to sockets, and nothing writes it (the
        // read-only descriptor's writes are EBADF).
        let writes_f = y == 0;
        let by_reference = PIPES.contains(&y) || SOCKETS.contains(&y);
        if writes_f || WRITTEN_FILES.contains(&x) && by_reference {
            continue;
        }
        steps.push(match rnd(20) {
            0..=2 if x != 0 => Step::Write(x, len.min(70_000)),
            3..=4 => Step::Read(x, len.min(70_000)),
            5..=8 if !stream_into_pipe => Step::Splice(x, o1, y, o2, len, flags),
            9..=10 => Step::Tee(x, y, len, flags),
            // A file sent into itself grows as it is read: up to 2 GiB
            // on each side with a huge count (Linux's MAX_RW_COUNT).
            11..=12 if !stream_into_pipe => {
                Step::Sendfile(y, x, o1, if x == y { len.min(70_000) } else { len })
            }
            13..=14 => Step::Vmsplice(x, len.min(70_000), flags),
            15 => Step::Seek(x, [0, 5, 4096, 9_999, 100_000][rnd(5) as usize]),
            16 => Step::PipeSize(x, [4096, 8192, 65_536][rnd(3) as usize]),
            17 => Step::Shutdown(x, [SHUT_RD, SHUT_WR, SHUT_RDWR][rnd(3) as usize]),
            18 if rnd(4) == 0 => Step::Close(x),
            _ => continue,
        });
    }
    steps
}

/// What a pipe or socket holds, taken without waiting (datagrams and
/// packets one by one).
fn drain_all<P: ProcessApi + ?Sized>(p: &P, fd: Fd) -> String {
    let mut out = Vec::new();
    for _ in 0..64 {
        match p.fionread(fd) {
            Ok(n) if n > 0 => {
                let mut buf = vec![0u8; n as usize];
                match p.read(fd, &mut buf) {
                    Ok(k) => out.push(summary(&buf[..k])),
                    Err(e) => {
                        out.push(format!("{e}"));
                        break;
                    }
                }
            }
            Ok(_) => break,
            Err(e) => {
                out.push(format!("{e}"));
                break;
            }
        }
    }
    out.join(" | ")
}

fn run_steps<P: ProcessApi + ?Sized>(p: &P, case: usize, steps: &[Step], log: &mut Log) {
    let mut fds = objects(p);
    for (i, step) in steps.iter().enumerate() {
        let fd = |s: usize| fds[s];
        let r = match step.clone() {
            Step::Write(s, len) => match fd(s) {
                Some(f) if s == 15 => show(p.write(f, &(len as u64).to_ne_bytes())),
                Some(f) => {
                    let data: Vec<u8> = (0..len).map(|k| b'A' + ((i + k) % 26) as u8).collect();
                    show(p.write(f, &data))
                }
                None => continue,
            },
            Step::Read(s, len) => match fd(s) {
                Some(f) => {
                    let mut buf = vec![0u8; len];
                    show(p.read(f, &mut buf).map(|n| summary(&buf[..n])))
                }
                None => continue,
            },
            Step::Splice(x, o1, y, o2, len, flags) => match (fd(x), fd(y)) {
                (Some(a), Some(b)) => {
                    let (mut v1, mut v2) = (o1.unwrap_or(0), o2.unwrap_or(0));
                    let r = p.splice(
                        a,
                        o1.is_some().then_some(&mut v1),
                        b,
                        o2.is_some().then_some(&mut v2),
                        len,
                        flags,
                    );
                    format!("{} {v1} {v2}", show(r))
                }
                _ => continue,
            },
            Step::Tee(x, y, len, flags) => match (fd(x), fd(y)) {
                (Some(a), Some(b)) => show(p.tee(a, b, len, flags)),
                _ => continue,
            },
            Step::Sendfile(y, x, o, len) => match (fd(y), fd(x)) {
                (Some(b), Some(a)) => {
                    let mut v = o.unwrap_or(0);
                    let r = p.sendfile(b, a, o.is_some().then_some(&mut v), len);
                    format!("{} {v}", show(r))
                }
                _ => continue,
            },
            Step::Vmsplice(s, len, flags) => match fd(s) {
                Some(f) => {
                    // Two segments at fixed offsets in their pages (the
                    // second one page-aligned): vmsplice's buffers follow
                    // the pages of the caller's memory, so both runs must
                    // place them alike.
                    let (la, lb) = (len / 2, len - len / 2);
                    let mut mem = vec![b'#'; la + lb + 4 * 4096];
                    let base = (4096 - mem.as_ptr() as usize % 4096) % 4096;
                    let (sa, sb) = (base + 100, base + (la + 100).next_multiple_of(4096) + 4096);
                    for (k, c) in mem[sa..sa + la].iter_mut().enumerate() {
                        *c = b'a' + ((i + k) % 26) as u8;
                    }
                    let (head, tail) = mem.split_at_mut(sb);
                    let r = p.vmsplice(
                        f,
                        &mut [&mut head[sa..sa + la], &mut tail[..lb]],
                        flags | SPLICE_F_NONBLOCK,
                    );
                    // Only reading changes the buffers: then show the bytes.
                    let seen = [&mem[sa..sa + la], &mem[sb..sb + lb]].concat();
                    show(r.map(|n| summary(&seen[..n])))
                }
                None => continue,
            },
            Step::Seek(s, to) => match fd(s) {
                Some(f) => show(p.lseek(f, to, SEEK_SET)),
                None => continue,
            },
            Step::PipeSize(s, size) => match fd(s) {
                Some(f) => show(p.fcntl(f, F_SETPIPE_SZ, size)),
                None => continue,
            },
            Step::Shutdown(s, how) => match fd(s) {
                Some(f) => show(p.shutdown(f, how)),
                None => continue,
            },
            Step::Close(s) => match fds[s].take() {
                Some(f) => show(p.close(f)),
                None => continue,
            },
        };
        log.push((format!("case {case} step {i}: {step:?}"), r));
    }
    // What every object holds at the end.
    for path in [&b"/f"[..], b"/g", b"/a"] {
        log.push((
            format!("case {case} end {}", String::from_utf8_lossy(path)),
            contents(p, path),
        ));
    }
    if let Some(m) = fds[3] {
        let mut b = vec![0u8; 400_000];
        log.push((
            format!("case {case} end memfd"),
            show(p.pread(m, &mut b, 0).map(|n| summary(&b[..n]))),
        ));
    }
    for s in [4, 6, 8, 9, 10, 11, 12, 13, 14] {
        if let Some(f) = fds[s] {
            log.push((format!("case {case} end slot {s}"), drain_all(p, f)));
        }
    }
    for f in fds.into_iter().flatten() {
        p.close(f).unwrap();
    }
    for path in [&b"/f"[..], b"/g", b"/a", b"/fifo"] {
        p.unlink(path).unwrap();
    }
}

/// Random sequences of writes, reads, splices, tees, sendfiles,
/// vmsplices, seeks, pipe resizes, shutdowns and closes, compared with the
/// kernel step by step (`VFSCALE_SPLICE_CASES`, default 120, of 30 steps;
/// `VFSCALE_SEED` replays; `VFSCALE_SPLICE_ONLY=N` runs case N alone).
#[test]
fn random_sequences_match_the_kernel() {
    let sequences = seeded_cases(
        "VFSCALE_SPLICE_CASES",
        120,
        "VFSCALE_SPLICE_ONLY",
        |mut rnd| random_steps(&mut rnd, 30),
    );
    let theirs = sequences.clone();
    let run_all = |cases: Vec<(usize, Vec<Step>)>| {
        move |p: &dyn ProcessApi| {
            let mut log = Log::new();
            for (case, steps) in &cases {
                run_steps(p, *case, steps, &mut log);
            }
            log
        }
    };
    let on_kernel = run_all(theirs);
    let on_vfscale = run_all(sequences);
    compare_with_kernel(
        "splice (random)",
        move |k| on_kernel(k),
        move |p| on_vfscale(p),
    );
}
