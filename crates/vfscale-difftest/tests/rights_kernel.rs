//! Passing open files over AF_UNIX sockets (SCM_RIGHTS), compared with
//! the kernel: one script runs on a root `KernelProcess` (in a private
//! tmpfs root) and on vfscale and every result is compared; descriptor
//! numbers differ between the two, so received descriptors are logged by
//! count and tested by what they do (a received pipe end reads what the
//! original write end wrote). vfscale's own rule against cycles of
//! sockets in flight is tested in `vfscale/tests/api_rights.rs`.

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};
use vfscale_difftest::on_kernel_as_root;

/// A control buffer with room for exactly `n` descriptors (none: no
/// buffer).
fn fd_room(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        cmsg_len(4 * n)
    }
}

/// recvmsg's result: the count, the bytes copied, the received
/// descriptors and the out flags; or -errno.
type Got = Result<(i64, Vec<u8>, Vec<i32>, i32), i64>;

trait RightsCalls {
    fn socketpair(&mut self, ty: i32) -> [i32; 2];
    fn pipe(&mut self) -> [i32; 2];
    fn sendmsg(&mut self, fd: i32, data: &[u8], rights: &[i32]) -> i64;
    /// At most `len` bytes, room for `max_fds` descriptors.
    fn recvmsg(&mut self, fd: i32, len: usize, max_fds: usize, flags: i32) -> Got;
    fn write(&mut self, fd: i32, data: &[u8]) -> i64;
    fn read(&mut self, fd: i32, len: usize) -> Result<Vec<u8>, i64>;
    /// F_GETFD.
    fn cloexec(&mut self, fd: i32) -> i64;
    fn close(&mut self, fd: i32);
}

/// The calls on any process API: the kernel's (`KernelProcess`) or
/// vfscale's.
struct Calls<'a, P: ProcessApi>(&'a P);

fn ours<T: Into<i64>>(r: SysResult<T>) -> i64 {
    r.map(Into::into).unwrap_or_else(|e| -(e.0 as i64))
}

impl<P: ProcessApi> RightsCalls for Calls<'_, P> {
    fn socketpair(&mut self, ty: i32) -> [i32; 2] {
        self.0.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap()
    }
    fn pipe(&mut self) -> [i32; 2] {
        self.0.pipe2(O_NONBLOCK).unwrap()
    }
    fn sendmsg(&mut self, fd: i32, data: &[u8], rights: &[i32]) -> i64 {
        ours(
            self.0
                .sendmsg(fd, &[data], MSG_NOSIGNAL, None, rights, None)
                .map(|n| n as i64),
        )
    }
    fn recvmsg(&mut self, fd: i32, len: usize, max_fds: usize, flags: i32) -> Got {
        let mut buf = vec![0u8; len];
        let r = self
            .0
            .recvmsg(fd, &mut [&mut buf], flags, fd_room(max_fds))
            .map_err(|e| -(e.0 as i64))?;
        buf.truncate(r.len.min(len));
        Ok((r.len as i64, buf, r.fds, r.flags))
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> i64 {
        ours(self.0.write(fd, data).map(|n| n as i64))
    }
    fn read(&mut self, fd: i32, len: usize) -> Result<Vec<u8>, i64> {
        let mut b = vec![0u8; len];
        let n = self.0.read(fd, &mut b).map_err(|e| -(e.0 as i64))?;
        b.truncate(n);
        Ok(b)
    }
    fn cloexec(&mut self, fd: i32) -> i64 {
        ours(self.0.fcntl(fd, F_GETFD, 0))
    }
    fn close(&mut self, fd: i32) {
        self.0.close(fd).unwrap();
    }
}

type Log = Vec<(&'static str, String)>;

/// A receive as logged: count, bytes, how many descriptors, out flags.
/// The descriptors are returned for the script to use and close.
fn received(log: &mut Log, what: &'static str, got: Got) -> Vec<i32> {
    match got {
        Ok((n, data, fds, flags)) => {
            log.push((
                what,
                format!(
                    "{n} {:?} fds {} flags {flags:#x}",
                    String::from_utf8_lossy(&data),
                    fds.len()
                ),
            ));
            fds
        }
        Err(e) => {
            log.push((what, format!("{e}")));
            Vec::new()
        }
    }
}

fn script(c: &mut dyn RightsCalls) -> Log {
    let mut log = Log::new();
    let [a, b] = c.socketpair(SOCK_STREAM);
    let [r, w] = c.pipe();

    // A stream read glues plain bytes before a send that carries files,
    // takes the files and ends with that send's bytes.
    log.push(("write ab", c.write(a, b"ab").to_string()));
    log.push(("sendmsg cd+r", c.sendmsg(a, b"cd", &[r]).to_string()));
    log.push(("write ef", c.write(a, b"ef").to_string()));
    let fds = received(&mut log, "recvmsg abcd", c.recvmsg(b, 100, 4, 0));
    let got = fds.first().copied();
    log.push(("write pipe", c.write(w, b"zz").to_string()));
    if let Some(fd) = got {
        log.push(("read received", format!("{:?}", c.read(fd, 10))));
        log.push(("received cloexec", c.cloexec(fd).to_string()));
    }
    fds.iter().for_each(|&fd| c.close(fd));
    received(&mut log, "recvmsg ef", c.recvmsg(b, 100, 4, 0));

    // MSG_PEEK gives new descriptors and leaves the files queued; a short
    // read takes them with its first bytes; the rest comes without.
    log.push(("sendmsg xyz+r", c.sendmsg(a, b"xyz", &[r]).to_string()));
    log.push(("write tail", c.write(a, b"!").to_string()));
    for what in ["peek 1", "peek 2"] {
        let fds = received(&mut log, what, c.recvmsg(b, 100, 4, MSG_PEEK));
        fds.iter().for_each(|&fd| c.close(fd));
    }
    let fds = received(&mut log, "recvmsg xy", c.recvmsg(b, 2, 4, MSG_CMSG_CLOEXEC));
    if let Some(&fd) = fds.first() {
        log.push(("MSG_CMSG_CLOEXEC", c.cloexec(fd).to_string()));
    }
    fds.iter().for_each(|&fd| c.close(fd));
    received(&mut log, "recvmsg z!", c.recvmsg(b, 100, 4, 0));

    // A peek that has copied what it asked for before a send's files
    // walks on to them and takes copies (a peek of no bytes too, and with
    // no room: MSG_CTRUNC); a read that is not a peek stops where it is.
    log.push(("write gh", c.write(a, b"gh").to_string()));
    log.push(("write ij", c.write(a, b"ij").to_string()));
    log.push(("sendmsg kl+r", c.sendmsg(a, b"kl", &[r]).to_string()));
    log.push(("write mn", c.write(a, b"mn").to_string()));
    for (what, len, room) in [
        ("peek 0 before files", 0, 4),
        ("peek 0 before files, no room", 0, 0),
        ("peek 1 before files", 1, 4),
        ("peek 2 before files", 2, 4),
        ("peek 5 into the files' send", 5, 4),
        ("peek 100", 100, 4),
    ] {
        let fds = received(&mut log, what, c.recvmsg(b, len, room, MSG_PEEK));
        fds.iter().for_each(|&fd| c.close(fd));
    }
    for (what, len) in [
        ("read 0", 0),
        ("read 1", 1),
        ("read 4", 4),
        ("read rest", 100),
    ] {
        let fds = received(&mut log, what, c.recvmsg(b, len, 4, 0));
        fds.iter().for_each(|&fd| c.close(fd));
    }

    // Room for two of three: MSG_CTRUNC; no room at all: the same.
    log.push((
        "sendmsg 3 files",
        c.sendmsg(a, b"q", &[r, w, r]).to_string(),
    ));
    let fds = received(&mut log, "recvmsg room 2", c.recvmsg(b, 100, 2, 0));
    fds.iter().for_each(|&fd| c.close(fd));
    log.push(("sendmsg 1 file", c.sendmsg(a, b"s", &[r]).to_string()));
    received(&mut log, "recvmsg room 0", c.recvmsg(b, 100, 0, 0));

    // No bytes: the stream queues nothing and drops the files.
    log.push(("sendmsg nothing+r", c.sendmsg(a, b"", &[r]).to_string()));
    received(&mut log, "recvmsg after empty", c.recvmsg(b, 100, 4, 0));

    // A send larger than one segment: its files come with the first.
    let big = vec![b'B'; 100_000];
    log.push(("sendmsg big+r", c.sendmsg(a, &big, &[r]).to_string()));
    for what in ["recvmsg big 1", "recvmsg big 2"] {
        let got = c.recvmsg(b, 200_000, 4, 0);
        let fds = received(
            &mut log,
            what,
            got.map(|(n, _, fds, fl)| (n, Vec::new(), fds, fl)),
        );
        fds.iter().for_each(|&fd| c.close(fd));
    }

    // Bad descriptors: EBADF; more than SCM_MAX_FD: EINVAL; both before
    // anything is sent.
    log.push(("sendmsg bad fd", c.sendmsg(a, b"x", &[r, 999]).to_string()));
    let many = vec![r; 254];
    log.push(("sendmsg 254", c.sendmsg(a, b"x", &many).to_string()));
    log.push(("sendmsg 253", c.sendmsg(a, b"y", &many[..253]).to_string()));
    let fds = received(&mut log, "recvmsg 253", c.recvmsg(b, 100, 300, 0));
    fds.iter().for_each(|&fd| c.close(fd));

    // A socket passed over its own connection (into the peer's queue):
    // what is written on the received end arrives at the peer.
    log.push(("sendmsg a over a", c.sendmsg(a, b"A", &[a]).to_string()));
    let fds = received(&mut log, "recvmsg socket", c.recvmsg(b, 100, 4, 0));
    if let Some(&fd) = fds.first() {
        log.push(("write on received", c.write(fd, b"via").to_string()));
        received(&mut log, "recvmsg via", c.recvmsg(b, 100, 4, 0));
    }
    fds.iter().for_each(|&fd| c.close(fd));

    // read(2) takes the bytes and drops the files; the dropped write end
    // no longer keeps the pipe open.
    let [r2, w2] = c.pipe();
    log.push(("sendmsg w2", c.sendmsg(a, b"w", &[w2]).to_string()));
    c.close(w2);
    log.push(("read drops", format!("{:?}", c.read(b, 100))));
    log.push(("pipe EOF", format!("{:?}", c.read(r2, 10))));
    c.close(r2);

    // The receiver's final close puts what its queue held.
    let [r3, w3] = c.pipe();
    log.push(("sendmsg w3", c.sendmsg(a, b"w", &[w3]).to_string()));
    c.close(w3);
    log.push(("pipe open", format!("{:?}", c.read(r3, 10))));
    c.close(b);
    log.push(("pipe EOF after close", format!("{:?}", c.read(r3, 10))));
    c.close(r3);
    c.close(a);

    // Seqpacket and datagram messages carry files whole; a message cut
    // short still brings them (MSG_TRUNC).
    for (ty, name) in [(SOCK_SEQPACKET, "seqpacket"), (SOCK_DGRAM, "dgram")] {
        let [s, t] = c.socketpair(ty);
        log.push((name, c.sendmsg(s, b"m1", &[r]).to_string()));
        log.push((name, c.sendmsg(s, b"", &[w]).to_string()));
        log.push((name, c.sendmsg(s, b"m3", &[]).to_string()));
        for _ in 0..4 {
            let fds = received(&mut log, name, c.recvmsg(t, 1, 4, 0));
            fds.iter().for_each(|&fd| c.close(fd));
        }
        c.close(s);
        c.close(t);
    }
    c.close(r);
    c.close(w);
    log
}

#[test]
fn passing_files_matches_the_kernel() {
    let kernel = match on_kernel_as_root(|k| script(&mut Calls(k))) {
        Ok(k) => k,
        Err(e) => {
            println!("passing-files kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let ours = script(&mut Calls(&vfs.root_process()));
    for (k, o) in kernel.iter().zip(&ours) {
        assert_eq!(o, k, "vfscale (left) against the kernel (right)");
    }
    assert_eq!(ours.len(), kernel.len());
    assert!(
        kernel.contains(&("recvmsg abcd", "4 \"abcd\" fds 1 flags 0x0".into())),
        "{kernel:?}"
    );
    vfs.check_invariants().unwrap();
}
