//! Anonymous objects (issue 4): pipes, socket pairs, bare sockets,
//! eventfds, memfds, poll, fcntl, fd_path. Where a value is Linux's, a
//! `host_*` test runs the same sequence on real libc objects first, so the
//! expectation is checked against this machine's kernel.

mod common;
use common::*;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

// ------------------------------------------------------------------ pipes

#[test]
fn pipe_round_trip_and_eof() {
    let (vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    assert_eq!((r, w), (0, 1), "lowest free descriptors");
    assert_eq!(p.write(w, b"hello"), Ok(5));
    let mut b = [0u8; 16];
    assert_eq!(p.read(r, &mut b), Ok(5));
    assert_eq!(&b[..5], b"hello");
    p.close(w).unwrap();
    assert_eq!(p.read(r, &mut b), Ok(0), "EOF after the last writer");
    p.close(r).unwrap();
    assert_eq!(vfs.object_counts().files, 0);
    assert_baseline(&vfs);
}

#[test]
fn pipe_epipe_and_eagain_match_the_host() {
    // The host first.
    let mut fds = [0i32; 2];
    // SAFETY: plain syscalls on descriptors this test owns.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK), 0);
        let mut b = [0u8; 4];
        assert_eq!(libc::read(fds[0], b.as_mut_ptr().cast(), 4), -1);
        assert_eq!(errno(), libc::EAGAIN);
        assert_eq!(libc::fcntl(fds[0], libc::F_GETPIPE_SZ), 65536);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::close(fds[0]);
        assert_eq!(libc::write(fds[1], b.as_ptr().cast(), 4), -1);
        assert_eq!(errno(), libc::EPIPE);
        libc::close(fds[1]);
    }
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let mut b = [0u8; 4];
    assert_eq!(p.read(r, &mut b), Err(Errno::EAGAIN));
    assert_eq!(p.fcntl(r, F_GETPIPE_SZ, 0), Ok(65536));
    p.close(r).unwrap();
    assert_eq!(p.write(w, b"abcd"), Err(Errno::EPIPE));
}

#[test]
fn pipe_capacity_and_atomic_writes() {
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let big = vec![7u8; 70000];
    assert_eq!(
        p.write(w, &big),
        Ok(65536),
        "a non-blocking write fills the pipe"
    );
    assert_eq!(p.write(w, b"x"), Err(Errno::EAGAIN));
    let mut b = vec![0u8; 4000];
    assert_eq!(p.read(r, &mut b[..100]), Ok(100));
    // Capacity is in page slots (Linux 6.18, checked on the host): the
    // first page, partly read, still holds its slot, and the last one is
    // full, so nothing fits, not even one byte.
    assert_eq!(p.write(w, &[1u8; 200]), Err(Errno::EAGAIN));
    assert_eq!(p.write(w, &[1u8; 100]), Err(Errno::EAGAIN));
    assert_eq!(
        p.read(r, &mut b[..4000]),
        Ok(4000),
        "the rest of the first page, and on into the second"
    );
    // One slot free: a write of 5000 takes it whole and stops (its last
    // 904 bytes cannot join the full last page).
    assert_eq!(p.write(w, &[1u8; 5000]), Ok(4096));
    // Resizing below the slots in use is EBUSY, rounding is to a power of two.
    assert_eq!(p.fcntl(w, F_SETPIPE_SZ, 4096), Err(Errno::EBUSY));
    assert_eq!(p.fcntl(w, F_SETPIPE_SZ, 70000), Ok(131072));
    assert_eq!(p.fcntl(r, F_GETPIPE_SZ, 0), Ok(131072));
    assert_eq!(
        p.fcntl(w, F_SETPIPE_SZ, 2 << 20),
        Ok(2 << 20),
        "root may exceed pipe-max-size"
    );
    let user = user(&p.vfs(), 1000, 1000);
    let [_r2, w2] = user.pipe2(0).unwrap();
    assert_eq!(user.fcntl(w2, F_SETPIPE_SZ, 2 << 20), Err(Errno::EPERM));
    assert_eq!(user.fcntl(w2, F_SETPIPE_SZ, 1 << 20), Ok(1 << 20));
    assert_eq!(user.fcntl(w2, F_SETPIPE_SZ, 1), Ok(4096));
    assert_eq!(user.fcntl(w2, F_SETPIPE_SZ, -1), Err(Errno::EINVAL));
}

/// The pipe calls of `pipe_buffers_match_the_host`, on either kernel.
/// Results are byte counts or -errno.
trait PipeCalls {
    /// pipe2 with `flags`: [read end, write end].
    fn pipe2(&mut self, flags: i32) -> [i32; 2];
    fn write(&mut self, fd: i32, data: &[u8]) -> i64;
    fn readv(&mut self, fd: i32, lens: &[usize]) -> (i64, Vec<u8>);
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: i64) -> i64;
    /// poll for POLLOUT at once: the revents.
    fn pollout(&mut self, fd: i32) -> i64;
}

struct Host;

impl PipeCalls for Host {
    fn pipe2(&mut self, flags: i32) -> [i32; 2] {
        let mut fds = [0i32; 2];
        // SAFETY: writes the two descriptors into `fds`.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), flags) }, 0);
        fds
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> i64 {
        // SAFETY: `data` is valid for its length.
        let r = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if r < 0 {
            -(errno() as i64)
        } else {
            r as i64
        }
    }
    fn readv(&mut self, fd: i32, lens: &[usize]) -> (i64, Vec<u8>) {
        let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
        let iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: each iovec points into a live buffer of its length.
        let r = unsafe { libc::readv(fd, iov.as_ptr(), iov.len() as i32) };
        if r < 0 {
            return (-(errno() as i64), Vec::new());
        }
        (r as i64, bufs.concat())
    }
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: i64) -> i64 {
        // SAFETY: integer-argument fcntl commands only.
        let r = unsafe { libc::fcntl(fd, cmd, arg as libc::c_int) };
        if r < 0 {
            -(errno() as i64)
        } else {
            r as i64
        }
    }
    fn pollout(&mut self, fd: i32) -> i64 {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        assert!(unsafe { libc::poll(&mut pfd, 1, 0) } >= 0);
        pfd.revents as i64
    }
}

struct Ours(Process);

fn ours<T: Into<i64>>(r: SysResult<T>) -> i64 {
    match r {
        Ok(v) => v.into(),
        Err(e) => -(e.0 as i64),
    }
}

impl PipeCalls for Ours {
    fn pipe2(&mut self, flags: i32) -> [i32; 2] {
        self.0.pipe2(flags).unwrap()
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> i64 {
        ours(self.0.write(fd, data).map(|n| n as i64))
    }
    fn readv(&mut self, fd: i32, lens: &[usize]) -> (i64, Vec<u8>) {
        let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
        let mut slices: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
        match self.0.readv(fd, &mut slices) {
            Ok(n) => (n as i64, bufs.concat()),
            Err(e) => (-(e.0 as i64), Vec::new()),
        }
    }
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: i64) -> i64 {
        ours(self.0.fcntl(fd, cmd, arg))
    }
    fn pollout(&mut self, fd: i32) -> i64 {
        let mut pfd = [PollFd {
            fd,
            events: POLLOUT,
            revents: 0,
        }];
        self.0.poll(&mut pfd, 0).unwrap();
        pfd[0].revents as i64
    }
}

/// Page slots, merging and packet mode (pipe2 or F_SETFL with O_DIRECT):
/// one script of writes, reads, fcntls and polls, every result logged.
fn pipe_buffer_script(k: &mut dyn PipeCalls) -> Vec<(String, i64)> {
    let mut log: Vec<(String, i64)> = Vec::new();
    let mut note = |what: &str, v: i64| log.push((what.to_string(), v));
    let bytes = |n: usize, b: u8| vec![b; n];
    // Reads until EAGAIN, each asking `len`: the lengths read.
    let drain = |k: &mut dyn PipeCalls, fd: i32, len: usize| -> Vec<i64> {
        let mut v = Vec::new();
        loop {
            let (n, _) = k.readv(fd, &[len]);
            if n < 0 {
                v.push(n);
                return v;
            }
            v.push(n);
        }
    };
    let nb = O_NONBLOCK;
    let [r, w] = k.pipe2(O_DIRECT | nb);
    note("flags r", k.fcntl(r, F_GETFL, 0));
    note("flags w", k.fcntl(w, F_GETFL, 0));
    for n in [100, 200, 10000, 4097, 100, 10] {
        note("write", k.write(w, &bytes(n, b'a')));
    }
    note("zero write", k.write(w, b""));
    for len in [1000, 1000, 100000, 100000, 100000, 10000, 10000, 50, 50] {
        note("read", k.readv(r, &[len]).0);
    }
    note("empty", k.readv(r, &[10]).0);
    // A packet split over two buffers of a vector.
    k.write(w, b"0123456789");
    let (n, got) = k.readv(r, &[4, 100]);
    note("readv", n);
    note(
        "readv bytes",
        i64::from(got[..4] == *b"0123" && got[4..10] == *b"456789"),
    );
    let mut packets = 0;
    while k.write(w, b"p") == 1 {
        packets += 1;
        if packets == 15 {
            note("pollout at 15", k.pollout(w));
        }
    }
    note("one-byte packets", packets);
    note("pollout full", k.pollout(w));
    note("resize 4096", k.fcntl(w, F_SETPIPE_SZ, 4096));
    note("resize 1 MiB", k.fcntl(w, F_SETPIPE_SZ, 1 << 20));
    for v in drain(k, r, 10) {
        note("drain", v);
    }
    note("resize back", k.fcntl(w, F_SETPIPE_SZ, 65536));
    for _ in 0..15 {
        k.write(w, b"q");
    }
    note("8192 into one free slot", k.write(w, &bytes(8192, b'b')));
    drain(k, r, 100000);
    // Ordinary writes merge up to a page; packet writes merge into an
    // ordinary last buffer too, but nothing merges into a packet.
    let [r2, w2] = k.pipe2(nb);
    for n in [3000, 3000] {
        note("ordinary write", k.write(w2, &bytes(n, b'o')));
    }
    note(
        "set O_DIRECT on w",
        k.fcntl(w2, F_SETFL, (O_DIRECT | nb) as i64),
    );
    note(
        "set O_DIRECT on r",
        k.fcntl(r2, F_SETFL, (O_DIRECT | nb) as i64),
    );
    note("flags w2", k.fcntl(w2, F_GETFL, 0));
    note("flags r2", k.fcntl(r2, F_GETFL, 0));
    for n in [100, 100, 2000] {
        note("packet write", k.write(w2, &bytes(n, b'p')));
    }
    note("clear O_DIRECT", k.fcntl(w2, F_SETFL, nb as i64));
    for n in [10, 10] {
        note("ordinary write", k.write(w2, &bytes(n, b'o')));
    }
    for v in drain(k, r2, 100000) {
        note("mixed drain", v);
    }
    let mut writes = 0;
    while k.write(w2, &bytes(3000, b'f')) == 3000 {
        writes += 1;
    }
    note("3000-byte writes to fill", writes);
    note("read 100", k.readv(r2, &[100]).0);
    note("write 100 into a full ring", k.write(w2, &bytes(100, b'x')));
    note("read 4000", k.readv(r2, &[4000]).0);
    note("write 5000 with one slot", k.write(w2, &bytes(5000, b'x')));
    log
}

#[test]
fn pipe_buffers_match_the_host() {
    let host = pipe_buffer_script(&mut Host);
    let (_vfs, p) = setup();
    let ours = pipe_buffer_script(&mut Ours(p));
    assert_eq!(
        ours, host,
        "the same script on vfscale and on the host kernel"
    );
    // A few values the script must have seen (so that a host without
    // packet pipes cannot make it pass vacuously).
    assert!(
        host.contains(&("one-byte packets".to_string(), 16)),
        "{host:?}"
    );
    assert!(
        host.contains(&("3000-byte writes to fill".to_string(), 16)),
        "{host:?}"
    );
}

#[test]
fn o_direct_opens_only_regular_files() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.mknodat(AT_FDCWD, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let f = p.open(b"/f", O_CREAT | O_RDWR | O_DIRECT, 0o644).unwrap();
    assert_eq!(
        p.fcntl(f, F_GETFL, 0).map(|fl| fl as i32 & O_DIRECT),
        Ok(O_DIRECT)
    );
    assert_eq!(p.open(b"/d", O_RDONLY | O_DIRECT, 0), Err(Errno::EINVAL));
    assert_eq!(
        p.open(b"/d", O_RDONLY | O_DIRECTORY | O_DIRECT, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        p.open(b"/d", O_RDWR | O_DIRECT, 0),
        Err(Errno::EISDIR),
        "EISDIR first"
    );
    assert_eq!(
        p.open(b"/fifo", O_RDONLY | O_NONBLOCK | O_DIRECT, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.open(b"/fifo", O_RDWR | O_DIRECT, 0), Err(Errno::EINVAL));
    assert_eq!(
        p.open(b"/fifo", O_WRONLY | O_NONBLOCK | O_DIRECT, 0),
        Err(Errno::ENXIO),
        "no reader: ENXIO before the O_DIRECT test"
    );
    assert!(
        p.open(b"/d", O_PATH | O_DIRECT, 0).is_ok(),
        "O_PATH ignores it"
    );
    // The refused FIFO opens left no reader or writer behind: a
    // non-blocking writer still finds no reader.
    let r = p.open(b"/fifo", O_RDONLY | O_NONBLOCK, 0).unwrap();
    p.close(r).unwrap();
    assert_eq!(
        p.open(b"/fifo", O_WRONLY | O_NONBLOCK, 0),
        Err(Errno::ENXIO)
    );
}

#[test]
fn host_pipe_set_size_rounding() {
    let mut fds = [0i32; 2];
    // SAFETY: plain syscalls on descriptors this test owns.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        assert_eq!(libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 70000), 131072);
        assert_eq!(libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1), 4096);
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

#[test]
fn blocked_reader_wakes_on_data_and_on_last_writer_close() {
    let (vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    let t = p.clone_thread();
    let reader = thread::spawn(move || {
        let mut b = [0u8; 8];
        let first = t.read(r, &mut b).map(|n| b[..n].to_vec());
        let second = t.read(r, &mut b);
        (first, second)
    });
    thread::sleep(Duration::from_millis(20));
    p.write(w, b"wake").unwrap();
    thread::sleep(Duration::from_millis(20));
    // Closing the read fd itself does not end the blocked read (the file
    // is still referenced by it), as Linux; closing the writer does.
    p.close(w).unwrap();
    let (first, second) = reader.join().unwrap();
    assert_eq!(first, Ok(b"wake".to_vec()));
    assert_eq!(second, Ok(0));
    p.close(r).unwrap();
    assert_eq!(vfs.object_counts().files, 0);
}

#[test]
fn blocked_writer_gets_epipe_when_reader_closes() {
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    let t = p.clone_thread();
    let writer = with_timeout_spawn(move || t.write(w, &vec![0u8; 100_000]));
    thread::sleep(Duration::from_millis(30));
    p.close(r).unwrap();
    // 65536 bytes went in before the reader left.
    assert_eq!(writer.join().unwrap(), Ok(65536));
    assert_eq!(p.write(w, b"x"), Err(Errno::EPIPE));
}

fn with_timeout_spawn<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    thread::spawn(f)
}

#[test]
fn pipe_fstat_fd_path_and_status() {
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(O_CLOEXEC).unwrap();
    let (sr, sw) = (p.fstat(r).unwrap(), p.fstat(w).unwrap());
    assert_eq!(sr.mode & S_IFMT, S_IFIFO);
    assert_eq!(sr.ino, sw.ino, "both ends share one inode");
    let [r2, _w2] = p.pipe2(0).unwrap();
    assert_ne!(p.fstat(r2).unwrap().ino, sr.ino, "inode numbers are unique");
    assert_eq!(
        p.fd_path(r).unwrap(),
        format!("pipe:[{}]", sr.ino).into_bytes()
    );
    assert_eq!(p.fcntl(r, F_GETFD, 0), Ok(FD_CLOEXEC as i64));
    assert_eq!(p.fcntl(r, F_GETFL, 0), Ok(O_RDONLY as i64));
    assert_eq!(p.fcntl(w, F_GETFL, 0), Ok(O_WRONLY as i64));
    assert_eq!(p.fcntl(r, F_SETFL, O_NONBLOCK as i64), Ok(0));
    assert_eq!(p.fcntl(r, F_GETFL, 0), Ok(O_NONBLOCK as i64));
    let mut b = [0u8; 1];
    assert_eq!(p.read(r, &mut b), Err(Errno::EAGAIN));
    assert_eq!(p.lseek(r, 0, SEEK_SET), Err(Errno::ESPIPE));
    assert_eq!(p.pread(r, &mut b, 0), Err(Errno::ESPIPE));
    assert_eq!(p.write(r, b"x"), Err(Errno::EBADF), "read end");
    assert_eq!(p.pipe2(O_DIRECT << 4), Err(Errno::EINVAL));
}

#[test]
fn pipe_survives_fork_and_dup() {
    let (vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    let child = p.fork().unwrap();
    let w2 = p.dup(w).unwrap();
    p.close(w).unwrap();
    child.write(w, b"c").unwrap();
    child.exit();
    let mut b = [0u8; 4];
    assert_eq!(p.read(r, &mut b), Ok(1));
    p.close(w2).unwrap();
    assert_eq!(p.read(r, &mut b), Ok(0));
    p.close(r).unwrap();
    assert_baseline(&vfs);
}

#[test]
fn emfile_leaves_nothing_behind() {
    let (vfs, p) = setup();
    p.set_fd_limit(3);
    let fd = p.eventfd(0, 0).unwrap();
    assert_eq!(fd, 0);
    assert_eq!(p.pipe2(0), Ok([1, 2]));
    assert_eq!(p.pipe2(0), Err(Errno::EMFILE));
    p.close(2).unwrap();
    assert_eq!(p.pipe2(0), Err(Errno::EMFILE), "one slot is not enough");
    assert_eq!(p.fd_limit(), 3);
    assert_eq!(p.socketpair(AF_UNIX, SOCK_STREAM, 0), Err(Errno::EMFILE));
    assert_eq!(p.open(b"/", O_RDONLY, 0), Ok(2));
    assert_eq!(p.eventfd(0, 0), Err(Errno::EMFILE));
    assert_eq!(p.memfd_create(b"x", 0), Err(Errno::EMFILE));
    assert_eq!(p.socket(AF_UNIX, SOCK_STREAM, 0), Err(Errno::EMFILE));
    for fd in 0..3 {
        p.close(fd).unwrap();
    }
    assert_baseline(&vfs);
}

// ---------------------------------------------------------------- sockets

#[test]
fn stream_pair_both_directions_and_shutdown() {
    let (vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(p.write(a, b"ping"), Ok(4));
    assert_eq!(p.write(b, b"pong!"), Ok(5));
    assert_eq!(p.read(b, &mut buf), Ok(4));
    assert_eq!(p.read(a, &mut buf), Ok(5));
    assert_eq!(p.read(a, &mut buf), Err(Errno::EAGAIN));
    p.shutdown(a, SHUT_WR).unwrap();
    assert_eq!(p.write(a, b"x"), Err(Errno::EPIPE));
    assert_eq!(p.read(b, &mut buf), Ok(0), "peer sees EOF");
    assert_eq!(p.write(b, b"yz"), Ok(2), "the other direction still works");
    assert_eq!(p.read(a, &mut buf), Ok(2));
    assert_eq!(p.shutdown(a, 7), Err(Errno::EINVAL));
    let st = p.fstat(a).unwrap();
    assert_eq!(st.mode & S_IFMT, S_IFSOCK);
    assert_ne!(st.ino, p.fstat(b).unwrap().ino);
    assert_eq!(
        p.fd_path(a).unwrap(),
        format!("socket:[{}]", st.ino).into_bytes()
    );
    p.close(a).unwrap();
    assert_eq!(p.write(b, b"x"), Err(Errno::EPIPE), "peer gone");
    assert_eq!(p.read(b, &mut buf), Ok(0));
    p.close(b).unwrap();
    assert_baseline(&vfs);
}

#[test]
fn host_stream_pair_semantics() {
    let mut sv = [0i32; 2];
    // SAFETY: plain syscalls on descriptors this test owns.
    unsafe {
        assert_eq!(
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_NONBLOCK,
                0,
                sv.as_mut_ptr()
            ),
            0
        );
        let mut b = [0u8; 16];
        libc::shutdown(sv[0], libc::SHUT_WR);
        assert_eq!(
            libc::send(sv[0], b.as_ptr().cast(), 1, libc::MSG_NOSIGNAL),
            -1
        );
        assert_eq!(errno(), libc::EPIPE);
        assert_eq!(libc::read(sv[1], b.as_mut_ptr().cast(), 16), 0);
        libc::close(sv[0]);
        assert_eq!(
            libc::send(sv[1], b.as_ptr().cast(), 1, libc::MSG_NOSIGNAL),
            -1
        );
        assert_eq!(errno(), libc::EPIPE);
        libc::close(sv[1]);
        // Datagram truncation and zero-length datagrams.
        assert_eq!(
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK,
                0,
                sv.as_mut_ptr()
            ),
            0
        );
        assert_eq!(libc::write(sv[0], b"abcdef".as_ptr().cast(), 6), 6);
        assert_eq!(libc::write(sv[0], b"".as_ptr().cast(), 0), 0);
        assert_eq!(libc::read(sv[1], b.as_mut_ptr().cast(), 3), 3);
        assert_eq!(libc::read(sv[1], b.as_mut_ptr().cast(), 16), 0);
        assert_eq!(libc::read(sv[1], b.as_mut_ptr().cast(), 16), -1);
        assert_eq!(errno(), libc::EAGAIN);
        libc::close(sv[1]);
        assert_eq!(libc::write(sv[0], b"a".as_ptr().cast(), 1), -1);
        assert_eq!(errno(), libc::ECONNREFUSED);
        libc::close(sv[0]);
    }
}

#[test]
fn datagram_boundaries_and_truncation() {
    let (_vfs, p) = setup();
    for ty in [SOCK_DGRAM, SOCK_SEQPACKET] {
        let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(p.write(a, b"abcdef"), Ok(6));
        assert_eq!(p.write(a, b""), Ok(0));
        assert_eq!(p.write(a, b"gh"), Ok(2));
        assert_eq!(p.read(b, &mut buf[..3]), Ok(3), "truncated, rest dropped");
        assert_eq!(&buf[..3], b"abc");
        assert_eq!(p.read(b, &mut buf), Ok(0), "the empty datagram");
        assert_eq!(p.read(b, &mut buf), Ok(2));
        assert_eq!(&buf[..2], b"gh");
        assert_eq!(p.read(b, &mut buf), Err(Errno::EAGAIN));
        p.close(b).unwrap();
        let want = if ty == SOCK_DGRAM {
            Errno::ECONNREFUSED
        } else {
            Errno::EPIPE
        };
        assert_eq!(p.write(a, b"a"), Err(want), "type {ty}");
        p.close(a).unwrap();
    }
}

#[test]
fn bare_socket_and_argument_errors() {
    let (vfs, p) = setup();
    let s = p.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0).unwrap();
    assert_eq!(p.write(s, b"x"), Err(Errno::ENOTCONN));
    let mut b = [0u8; 1];
    assert_eq!(p.read(s, &mut b), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(s, F_GETFD, 0), Ok(FD_CLOEXEC as i64));
    assert_eq!(p.fcntl(s, F_GETFL, 0), Ok(O_RDWR as i64));
    assert_eq!(p.socket(AF_INET, SOCK_STREAM, 0), Err(Errno::EAFNOSUPPORT));
    // SOCK_RDM: no such AF_UNIX type.
    assert_eq!(p.socket(AF_UNIX, 4, 0), Err(Errno::ESOCKTNOSUPPORT));
    assert_eq!(
        p.socket(AF_UNIX, SOCK_STREAM, 9),
        Err(Errno::EPROTONOSUPPORT)
    );
    assert_eq!(
        p.socket(AF_UNIX, SOCK_STREAM | 0x100, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(p.shutdown(s, SHUT_RD), Ok(()));
    let e = p.eventfd(0, 0).unwrap();
    assert_eq!(p.shutdown(e, SHUT_RD), Err(Errno::ENOTSOCK));
    assert_eq!(p.shutdown(99, SHUT_RD), Err(Errno::EBADF));
    p.close(s).unwrap();
    p.close(e).unwrap();
    assert_baseline(&vfs);
}

#[test]
fn blocked_socket_reader_wakes_when_peer_closes() {
    let (_vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let t = p.clone_thread();
    let h = thread::spawn(move || {
        let mut buf = [0u8; 4];
        t.read(a, &mut buf)
    });
    thread::sleep(Duration::from_millis(20));
    p.close(b).unwrap();
    assert_eq!(h.join().unwrap(), Ok(0));
}

// ---------------------------------------------------------------- eventfd

#[test]
fn eventfd_counter_semantics() {
    let (vfs, p) = setup();
    let e = p.eventfd(3, EFD_NONBLOCK).unwrap();
    let mut b = [0u8; 8];
    assert_eq!(p.read(e, &mut b), Ok(8));
    assert_eq!(u64::from_ne_bytes(b), 3);
    assert_eq!(p.read(e, &mut b), Err(Errno::EAGAIN));
    assert_eq!(p.read(e, &mut b[..4]), Err(Errno::EINVAL));
    assert_eq!(p.write(e, &[0u8; 4]), Err(Errno::EINVAL));
    assert_eq!(p.write(e, &u64::MAX.to_ne_bytes()), Err(Errno::EINVAL));
    assert_eq!(p.write(e, &(u64::MAX - 1).to_ne_bytes()), Ok(8));
    assert_eq!(
        p.write(e, &1u64.to_ne_bytes()),
        Err(Errno::EAGAIN),
        "overflow"
    );
    assert_eq!(p.read(e, &mut b), Ok(8));
    assert_eq!(u64::from_ne_bytes(b), u64::MAX - 1);
    let s = p.eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK).unwrap();
    assert_eq!(p.read(s, &mut b), Ok(8));
    assert_eq!(u64::from_ne_bytes(b), 1);
    assert_eq!(p.read(s, &mut b), Ok(8));
    assert_eq!(p.read(s, &mut b), Err(Errno::EAGAIN));
    assert_eq!(p.fd_path(e).unwrap(), b"anon_inode:[eventfd]".to_vec());
    assert_eq!(p.fcntl(e, F_GETFL, 0), Ok((O_RDWR | O_NONBLOCK) as i64));
    assert_eq!(p.eventfd(0, 0x100), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(e, F_GETPIPE_SZ, 0), Err(Errno::EBADF));
    p.close(e).unwrap();
    p.close(s).unwrap();
    assert_baseline(&vfs);
}

#[test]
fn host_eventfd_semantics() {
    // SAFETY: plain syscalls on descriptors this test owns.
    unsafe {
        let e = libc::eventfd(0, libc::EFD_NONBLOCK);
        assert!(e >= 0);
        let max = (u64::MAX).to_ne_bytes();
        assert_eq!(libc::write(e, max.as_ptr().cast(), 8), -1);
        assert_eq!(errno(), libc::EINVAL);
        let v = (u64::MAX - 1).to_ne_bytes();
        assert_eq!(libc::write(e, v.as_ptr().cast(), 8), 8);
        let one = 1u64.to_ne_bytes();
        assert_eq!(libc::write(e, one.as_ptr().cast(), 8), -1);
        assert_eq!(errno(), libc::EAGAIN);
        let mut b = [0u8; 4];
        assert_eq!(libc::read(e, b.as_mut_ptr().cast(), 4), -1);
        assert_eq!(errno(), libc::EINVAL);
        libc::close(e);
    }
}

#[test]
fn eventfd_blocking_read_wakes_on_write() {
    let (_vfs, p) = setup();
    let e = p.eventfd(0, 0).unwrap();
    let t = p.clone_thread();
    let h = thread::spawn(move || {
        let mut b = [0u8; 8];
        t.read(e, &mut b).map(|_| u64::from_ne_bytes(b))
    });
    thread::sleep(Duration::from_millis(20));
    p.write(e, &5u64.to_ne_bytes()).unwrap();
    assert_eq!(h.join().unwrap(), Ok(5));
}

// ------------------------------------------------------------------ memfd

#[test]
fn memfd_is_an_anonymous_regular_file() {
    let (vfs, p) = setup();
    let m = p.memfd_create(b"buf", MFD_CLOEXEC).unwrap();
    assert_eq!(p.write(m, b"0123456789"), Ok(10));
    assert_eq!(p.pread(m, &mut [0u8; 4], 6), Ok(4));
    assert_eq!(p.lseek(m, 2, SEEK_SET), Ok(2));
    let mut b = [0u8; 3];
    assert_eq!(p.read(m, &mut b), Ok(3));
    assert_eq!(&b, b"234");
    p.ftruncate(m, 8192).unwrap();
    let st = p.fstat(m).unwrap();
    assert_eq!(st.mode, S_IFREG | 0o777);
    assert_eq!(st.size, 8192);
    assert_eq!(st.nlink, 0);
    assert_eq!(p.fd_path(m).unwrap(), b"/memfd:buf (deleted)".to_vec());
    assert_eq!(p.fcntl(m, F_GETFD, 0), Ok(FD_CLOEXEC as i64));
    assert_eq!(p.memfd_create(&[b'a'; 250], 0), Err(Errno::EINVAL));
    assert_eq!(p.memfd_create(b"x", 0x100), Err(Errno::EINVAL));
    let m2 = p.memfd_create(b"other", 0).unwrap();
    assert_ne!(p.fstat(m2).unwrap().ino, st.ino);
    p.close(m).unwrap();
    p.close(m2).unwrap();
    assert_baseline(&vfs);
}

/// Seals, each rule checked against Linux 6.18 (a Python run of the same
/// calls on memfds and a tmpfs file of this machine).
#[test]
fn memfd_seals() {
    let (vfs, p) = setup();
    // Without MFD_ALLOW_SEALING: F_SEAL_SEAL from birth, as any tmpfs file.
    let plain = p.memfd_create(b"plain", 0).unwrap();
    assert_eq!(p.fcntl(plain, F_GET_SEALS, 0), Ok(F_SEAL_SEAL as i64));
    assert_eq!(
        p.fcntl(plain, F_ADD_SEALS, F_SEAL_GROW as i64),
        Err(Errno::EPERM)
    );
    mkfile(&p, b"/f", b"");
    let rw = p.open(b"/f", O_RDWR, 0).unwrap();
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fcntl(rw, F_GET_SEALS, 0), Ok(F_SEAL_SEAL as i64));
    // memfd_add_seals' order: write access, the flags, then the seal set.
    assert_eq!(p.fcntl(rw, F_ADD_SEALS, 0x40), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(ro, F_ADD_SEALS, 0x40), Err(Errno::EPERM));
    assert_eq!(p.fcntl(rw, F_ADD_SEALS, 0), Err(Errno::EPERM));
    let [r, w] = p.pipe2(0).unwrap();
    assert_eq!(p.fcntl(r, F_GET_SEALS, 0), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(w, F_ADD_SEALS, 0), Err(Errno::EINVAL));

    // GROW: writes and allocations past the end refused, page by page.
    let g = p.memfd_create(b"g", MFD_ALLOW_SEALING).unwrap();
    assert_eq!(p.fcntl(g, F_GET_SEALS, 0), Ok(0));
    p.ftruncate(g, 5000).unwrap();
    assert_eq!(p.fcntl(g, F_ADD_SEALS, F_SEAL_GROW as i64), Ok(0));
    assert_eq!(p.pwrite(g, &[b'x'; 2000], 4000), Ok(96));
    assert_eq!(p.pwrite(g, &[b'x'; 10], 4995), Err(Errno::EPERM));
    assert_eq!(p.pwrite(g, &[b'x'; 10], 10), Ok(10));
    assert_eq!(p.ftruncate(g, 5001), Err(Errno::EPERM));
    assert_eq!(p.fallocate(g, 0, 0, 5001), Err(Errno::EPERM));
    p.fallocate(g, FALLOC_FL_KEEP_SIZE, 0, 5000).unwrap();
    p.ftruncate(g, 100).unwrap();
    // copy_file_range writes through the same checks.
    let src = p.memfd_create(b"src", 0).unwrap();
    p.write(src, &[b'y'; 200]).unwrap();
    let (mut off_in, mut off_out) = (0i64, 50i64);
    assert_eq!(
        p.copy_file_range(src, Some(&mut off_in), g, Some(&mut off_out), 200, 0),
        Err(Errno::EPERM)
    );
    assert_eq!(p.fstat(g).unwrap().size, 100);

    // SHRINK, then WRITE: truncates down, writes and hole punches refused;
    // zero-byte writes still answer 0.
    let w2 = p.memfd_create(b"w", MFD_ALLOW_SEALING).unwrap();
    p.write(w2, b"abc").unwrap();
    p.fcntl(w2, F_ADD_SEALS, F_SEAL_SHRINK as i64).unwrap();
    assert_eq!(p.ftruncate(w2, 1), Err(Errno::EPERM));
    p.ftruncate(w2, 10).unwrap();
    p.fcntl(w2, F_ADD_SEALS, (F_SEAL_WRITE | F_SEAL_SEAL) as i64)
        .unwrap();
    assert_eq!(p.write(w2, b"d"), Err(Errno::EPERM));
    assert_eq!(p.write(w2, b""), Ok(0));
    assert_eq!(
        p.fallocate(w2, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1),
        Err(Errno::EPERM)
    );
    assert_eq!(
        p.fcntl(w2, F_GET_SEALS, 0),
        Ok((F_SEAL_SHRINK | F_SEAL_WRITE | F_SEAL_SEAL) as i64)
    );
    assert_eq!(
        p.fcntl(w2, F_ADD_SEALS, F_SEAL_GROW as i64),
        Err(Errno::EPERM)
    );

    // EXEC on an executable memfd (mode 0777) seals its contents too, and
    // refuses chmods that change an execute bit.
    let e = p.memfd_create(b"e", MFD_ALLOW_SEALING).unwrap();
    p.fcntl(e, F_ADD_SEALS, F_SEAL_EXEC as i64).unwrap();
    assert_eq!(p.fcntl(e, F_GET_SEALS, 0), Ok(0x3e));
    assert_eq!(p.fchmod(e, 0o666), Err(Errno::EPERM));
    p.fchmod(e, 0o1777).unwrap();
    assert_eq!(p.fstat(e).unwrap().mode, S_IFREG | 0o1777);
    assert_eq!(p.write(e, b"x"), Err(Errno::EPERM));

    // MFD_NOEXEC_SEAL: no execute bits, sealed against them, open to more.
    let n = p.memfd_create(b"n", MFD_NOEXEC_SEAL).unwrap();
    assert_eq!(p.fstat(n).unwrap().mode, S_IFREG | 0o666);
    assert_eq!(p.fcntl(n, F_GET_SEALS, 0), Ok(F_SEAL_EXEC as i64));
    assert_eq!(p.fchmod(n, 0o766), Err(Errno::EPERM));
    p.fcntl(n, F_ADD_SEALS, F_SEAL_GROW as i64).unwrap();
    assert_eq!(
        p.memfd_create(b"x", MFD_NOEXEC_SEAL | MFD_EXEC),
        Err(Errno::EINVAL)
    );
    let x = p.memfd_create(b"x", MFD_EXEC).unwrap();
    assert_eq!(p.fcntl(x, F_GET_SEALS, 0), Ok(F_SEAL_SEAL as i64));

    for fd in [plain, rw, ro, r, w, g, src, w2, e, n, x] {
        p.close(fd).unwrap();
    }
    p.unlink(b"/f").unwrap();
    assert_baseline(&vfs);
}

// ------------------------------------------------------------------- poll

#[test]
fn poll_readiness() {
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(0).unwrap();
    let e = p.eventfd(0, 0).unwrap();
    let mut fds = [
        PollFd {
            fd: r,
            events: POLLIN,
            revents: 0,
        },
        PollFd {
            fd: w,
            events: POLLOUT,
            revents: 0,
        },
        PollFd {
            fd: e,
            events: POLLIN,
            revents: 0,
        },
        PollFd {
            fd: 77,
            events: POLLIN,
            revents: 0,
        },
        PollFd {
            fd: -1,
            events: POLLIN,
            revents: 0,
        },
    ];
    assert_eq!(p.poll(&mut fds, 0), Ok(2));
    assert_eq!(fds.map(|f| f.revents), [0, POLLOUT, 0, POLLNVAL, 0]);
    p.write(w, b"x").unwrap();
    assert_eq!(p.poll(&mut fds[..3], 0), Ok(2));
    assert_eq!(fds[0].revents, POLLIN);
    p.close(w).unwrap();
    let mut one = [PollFd {
        fd: r,
        events: POLLIN,
        revents: 0,
    }];
    assert_eq!(p.poll(&mut one, 0), Ok(1));
    assert_eq!(one[0].revents, POLLIN | POLLHUP);
    // A timeout with nothing ready returns 0.
    let mut ev = [PollFd {
        fd: e,
        events: POLLIN,
        revents: 0,
    }];
    assert_eq!(p.poll(&mut ev, 10), Ok(0));
}

#[test]
fn poll_blocks_until_another_thread_writes() {
    let (_vfs, p) = setup();
    let [a, b] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let e = p.eventfd(0, 0).unwrap();
    let t = Arc::new(p.clone_thread());
    let t2 = t.clone();
    let h = thread::spawn(move || {
        let mut fds = [
            PollFd {
                fd: a,
                events: POLLIN,
                revents: 0,
            },
            PollFd {
                fd: e,
                events: POLLIN,
                revents: 0,
            },
        ];
        let n = t2.poll(&mut fds, -1);
        (n, fds.map(|f| f.revents))
    });
    thread::sleep(Duration::from_millis(30));
    p.write(b, b"!").unwrap();
    assert_eq!(h.join().unwrap(), (Ok(1), [POLLIN, 0]));
}

#[test]
fn fcntl_dupfd_and_bad_commands() {
    let (_vfs, p) = setup();
    let e = p.eventfd(0, 0).unwrap();
    assert_eq!(p.fcntl(e, F_DUPFD, 10), Ok(10));
    assert_eq!(p.fcntl(e, F_DUPFD_CLOEXEC, 10), Ok(11));
    assert_eq!(p.fcntl(11, F_GETFD, 0), Ok(FD_CLOEXEC as i64));
    assert_eq!(p.fcntl(e, F_DUPFD, -1), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(e, 9999, 0), Err(Errno::EINVAL));
    assert_eq!(p.fcntl(50, F_GETFL, 0), Err(Errno::EBADF));
    let fd = p.open(b"/f", O_CREAT | O_WRONLY, 0o644).unwrap();
    assert_eq!(p.fd_path(fd).unwrap(), b"/f".to_vec());
    p.fcntl(fd, F_SETFL, O_APPEND as i64).unwrap();
    p.write(fd, b"ab").unwrap();
    p.lseek(fd, 0, SEEK_SET).unwrap();
    p.write(fd, b"c").unwrap();
    assert_eq!(p.fstat(fd).unwrap().size, 3, "O_APPEND set by F_SETFL");
    p.unlink(b"/f").unwrap();
    assert_eq!(p.fd_path(fd).unwrap(), b"/f (deleted)".to_vec());
}

// ------------------------------------------------------------------ FIFOs

#[test]
fn host_fifo_nonblocking_write_open_needs_a_reader() {
    let dir = std::env::temp_dir().join(format!("vfscale-fifo-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: plain syscalls on a path and descriptors this test owns.
    unsafe {
        assert_eq!(libc::mkfifo(c.as_ptr(), 0o600), 0);
        assert_eq!(
            libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK),
            -1
        );
        assert_eq!(errno(), libc::ENXIO);
        let r = libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK);
        assert!(r >= 0);
        let w = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
        assert!(w >= 0, "a reader exists: the write open succeeds");
        libc::close(w);
        libc::close(r);
        libc::unlink(c.as_ptr());
    }
}

/// Waits until `h` has finished, or fails after 10 s.
fn joined<T>(h: thread::JoinHandle<T>) -> T {
    for _ in 0..1000 {
        if h.is_finished() {
            return h.join().unwrap();
        }
        thread::sleep(Duration::from_millis(10));
    }
    panic!("the blocked open never returned");
}

#[test]
fn blocking_fifo_opens_wait_for_their_partner() {
    let (vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/q", S_IFIFO | 0o666, 0).unwrap();

    // A reader waits for a writer ...
    let t = p.clone_thread();
    let reader = thread::spawn(move || t.open(b"/q", O_RDONLY, 0));
    thread::sleep(Duration::from_millis(30));
    assert!(!reader.is_finished(), "O_RDONLY returned with no writer");
    let w = p.open(b"/q", O_WRONLY, 0).unwrap(); // a reader waits: no block
    let r = joined(reader).unwrap();
    assert_eq!(p.write(w, b"hi"), Ok(2));
    let mut b = [0u8; 4];
    assert_eq!(p.read(r, &mut b), Ok(2));
    p.close(w).unwrap();
    p.close(r).unwrap();

    // ... a writer waits for a reader, and a non-blocking reader is one.
    let t = p.clone_thread();
    let writer = thread::spawn(move || t.open(b"/q", O_WRONLY, 0));
    thread::sleep(Duration::from_millis(30));
    assert!(!writer.is_finished(), "O_WRONLY returned with no reader");
    let r = p.open(b"/q", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let w = joined(writer).unwrap();
    p.close(w).unwrap();
    p.close(r).unwrap();

    // A writer that opens and closes before the waiting reader runs still
    // releases it (Linux counts opens, not open files); the reader then
    // sees EOF.
    let t = p.clone_thread();
    let reader = thread::spawn(move || {
        let r = t.open(b"/q", O_RDONLY, 0)?;
        let mut b = [0u8; 4];
        let n = t.read(r, &mut b);
        t.close(r)?;
        n
    });
    thread::sleep(Duration::from_millis(30));
    let w = p.open(b"/q", O_WRONLY | O_NONBLOCK, 0).unwrap();
    p.close(w).unwrap();
    assert_eq!(joined(reader), Ok(0));

    // O_RDWR never waits; with no reader left a non-blocking writer is
    // refused again.
    let rw = p.open(b"/q", O_RDWR, 0).unwrap();
    p.close(rw).unwrap();
    assert_eq!(p.open(b"/q", O_WRONLY | O_NONBLOCK, 0), Err(Errno::ENXIO));
    p.unlink(b"/q").unwrap();
    assert_baseline(&vfs);
}

#[test]
fn fifo_carries_data_between_opens() {
    let (vfs, p) = setup();
    p.mknodat(AT_FDCWD, b"/q", S_IFIFO | 0o666, 0).unwrap();
    let r = p.open(b"/q", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let w = p.open(b"/q", O_WRONLY | O_NONBLOCK, 0).unwrap();
    assert_eq!(p.write(w, b"through"), Ok(7));
    let mut b = [0u8; 16];
    assert_eq!(p.read(r, &mut b), Ok(7));
    assert_eq!(p.fcntl(r, F_GETPIPE_SZ, 0), Ok(65536));
    p.close(w).unwrap();
    p.close(r).unwrap();
    p.unlink(b"/q").unwrap();
    assert_baseline(&vfs);
}

/// ioctl(FIONREAD) on every kind of descriptor, here and on the host: the
/// bytes a read would find (a regular file's size less the position,
/// negative past the end), ENOTTY where there is nothing to count.
#[test]
fn fionread_matches_the_host() {
    /// A count, or an errno.
    type Answer = Result<i32, i32>;
    fn host_fionread(fd: i32) -> Answer {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) } < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        Ok(n)
    }
    let dir = tempfile::tempdir().unwrap();
    let (_vfs, p) = setup();
    let ours = |fd: Fd| p.fionread(fd).map_err(|e| e.0);
    let mut cases: Vec<(&str, Answer, Answer)> = Vec::new();
    // SAFETY (all the host calls below): plain syscalls on descriptors
    // this test owns, with buffers valid for the lengths given.
    unsafe {
        let path =
            std::ffi::CString::new(dir.path().join("f").into_os_string().into_encoded_bytes())
                .unwrap();
        let hf = libc::open(path.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        libc::write(hf, b"hello".as_ptr().cast(), 5);
        let vf = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(vf, b"hello").unwrap();
        for pos in [1i64, 100] {
            libc::lseek(hf, pos, libc::SEEK_SET);
            p.lseek(vf, pos, SEEK_SET).unwrap();
            cases.push(("regular file", host_fionread(hf), ours(vf)));
        }
        let dpath = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let hd = libc::open(dpath.as_ptr(), libc::O_RDONLY);
        let vd = p.open(b"/", O_RDONLY, 0).unwrap();
        cases.push(("directory", host_fionread(hd), ours(vd)));
        let he = libc::eventfd(0, 0);
        let ve = p.eventfd(0, 0).unwrap();
        cases.push(("eventfd", host_fionread(he), ours(ve)));
        let mut hp = [0; 2];
        libc::pipe(hp.as_mut_ptr());
        libc::write(hp[1], b"abc".as_ptr().cast(), 3);
        let vp = p.pipe2(0).unwrap();
        p.write(vp[1], b"abc").unwrap();
        cases.push(("pipe read end", host_fionread(hp[0]), ours(vp[0])));
        cases.push(("pipe write end", host_fionread(hp[1]), ours(vp[1])));
        for ty in [libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_SEQPACKET] {
            let mut hs = [0; 2];
            libc::socketpair(libc::AF_UNIX, ty, 0, hs.as_mut_ptr());
            let vs = p.socketpair(AF_UNIX, ty, 0).unwrap();
            for m in [&b"xyz"[..], b"12345"] {
                libc::write(hs[0], m.as_ptr().cast(), m.len());
                p.write(vs[0], m).unwrap();
            }
            cases.push(("socket pair", host_fionread(hs[1]), ours(vs[1])));
            let hl = libc::socket(libc::AF_UNIX, ty, 0);
            let vl = p.socket(AF_UNIX, ty, 0).unwrap();
            cases.push(("unconnected socket", host_fionread(hl), ours(vl)));
        }
        let lpath =
            std::ffi::CString::new(dir.path().join("l").into_os_string().into_encoded_bytes())
                .unwrap();
        let hl = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in addr.sun_path.iter_mut().zip(lpath.as_bytes()) {
            *d = *s as libc::c_char;
        }
        libc::bind(
            hl,
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as u32,
        );
        libc::listen(hl, 1);
        let vl = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
        p.bind(vl, b"/l").unwrap();
        p.listen(vl, 1).unwrap();
        cases.push(("listener", host_fionread(hl), ours(vl)));
    }
    cases.push(("closed descriptor", Err(libc::EBADF), ours(999)));
    for (what, host, ours) in &cases {
        assert_eq!(
            ours, host,
            "{what}: vfscale (left) against the host kernel (right)"
        );
    }
    assert!(cases
        .iter()
        .any(|(w, h, _)| *w == "regular file" && *h == Ok(-95)));
}
