//! inotify (inotify_init1, inotify_add_watch, inotify_rm_watch and reads
//! of an instance): one script on the kernel (a private tmpfs root,
//! `on_kernel_as_root`, with a second process of uid 1000) and on
//! vfscale, every result compared, and after every step the events
//! queued in every instance, read without waiting (all instances are
//! non-blocking) and compared record by record: watch descriptors
//! exactly, masks, names, and cookies by their pattern (each nonzero
//! cookie as the ordinal of its first appearance on that side, so a
//! MOVED_FROM and its MOVED_TO must share one). The script covers the
//! errors of the three calls in Linux's order, the instance's descriptor
//! (flags, FIONREAD, poll, epoll, reads too small for the next record),
//! every event and which calls send it (O_PATH opens, the last close of a
//! dup'd file, truncates, utimensat's three cases, link counts), the
//! order of a parent's named event and the child's own, merged events,
//! IN_DELETE_SELF and IN_IGNORED (at the unlink, or at the last close),
//! IN_MOVE_SELF, renames over a watched target and RENAME_EXCHANGE,
//! IN_DONT_FOLLOW, IN_ONESHOT, IN_EXCL_UNLINK, IN_MASK_ADD and
//! IN_MASK_CREATE, wd numbering, two instances on one file, another
//! user's watches (EACCES, and what it sees of root's changes), and a
//! full queue's IN_Q_OVERFLOW (when the host's limit is the default).
//!
//! A log line is `what: result => events`, the events `iN: wd MASK [cK]
//! [name], ...` for each instance that had any (reads between slashes),
//! `-` if none; lines without `=>` left the events queued.
//!
//! `random_sequences_match_the_kernel` then runs seeded random sequences
//! of watches, opens, closes, reads, writes, attribute changes and name
//! changes over a small tree on both sides, step by step
//! (`VFSCALE_INOTIFY_CASES`, default 120, of 60 steps; `VFSCALE_SEED`
//! replays a run, and with `VFSCALE_INOTIFY_ONLY=N` only its case N,
//! which `VFSCALE_SHOW_LOG=1` prints).

use std::cell::RefCell;
use std::collections::HashMap;
use vfscale::abi::*;
use vfscale::{Cred, ProcessApi};
use vfscale_difftest::script::{
    compare_with_kernel, compare_with_kernel_in, compare_with_kernel_reclaimed, show, Log,
};
use vfscale_difftest::seeded::{env_u64, seed_from_env, xorshift};
use vfscale_difftest::KernelProcess;

/// The bits of an event's mask (and of a watch's), by name.
const MASK_NAMES: [(u32, &str); 22] = [
    (IN_ACCESS, "ACCESS"),
    (IN_MODIFY, "MODIFY"),
    (IN_ATTRIB, "ATTRIB"),
    (IN_CLOSE_WRITE, "CLOSE_WRITE"),
    (IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"),
    (IN_OPEN, "OPEN"),
    (IN_MOVED_FROM, "MOVED_FROM"),
    (IN_MOVED_TO, "MOVED_TO"),
    (IN_CREATE, "CREATE"),
    (IN_DELETE, "DELETE"),
    (IN_DELETE_SELF, "DELETE_SELF"),
    (IN_MOVE_SELF, "MOVE_SELF"),
    (IN_UNMOUNT, "UNMOUNT"),
    (IN_Q_OVERFLOW, "Q_OVERFLOW"),
    (IN_IGNORED, "IGNORED"),
    (IN_ISDIR, "ISDIR"),
    (IN_ONLYDIR, "ONLYDIR"),
    (IN_DONT_FOLLOW, "DONT_FOLLOW"),
    (IN_EXCL_UNLINK, "EXCL_UNLINK"),
    (IN_MASK_CREATE, "MASK_CREATE"),
    (IN_MASK_ADD, "MASK_ADD"),
    (IN_ONESHOT, "ONESHOT"),
];

fn mask_str(mask: u32) -> String {
    let mut parts: Vec<String> = MASK_NAMES
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    let rest = MASK_NAMES.iter().fold(mask, |m, (bit, _)| m & !bit);
    if rest != 0 || parts.is_empty() {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

/// A descriptor's shape: the numbers are not compared.
fn fdr(r: SysResult<Fd>) -> String {
    show(r.map(|_| "fd"))
}

fn poll(p: &dyn ProcessApi, fd: Fd) -> String {
    let mut pfd = [PollFd {
        fd,
        events: POLLIN | POLLOUT | POLLPRI | POLLRDHUP,
        revents: 0,
    }];
    show(
        p.poll(&mut pfd, 0)
            .map(|n| format!("{n} {:#x}", pfd[0].revents)),
    )
}

fn epoll_ready(p: &dyn ProcessApi, ep: Fd) -> String {
    let mut out = [EpollEvent::default(); 4];
    show(p.epoll_wait(ep, &mut out, 0).map(|n| {
        out[..n]
            .iter()
            .map(|e| format!("{:#x}@{}", e.events, e.data))
            .collect::<Vec<_>>()
            .join(" ")
    }))
}

/// One side's run: its log, the inotify instances whose events are read
/// after each step (with the process that holds each), and the cookies
/// seen so far on this side.
struct Run<'a> {
    p: &'a dyn ProcessApi,
    log: RefCell<Log>,
    instances: RefCell<Vec<(String, &'a dyn ProcessApi, Fd)>>,
    cookies: RefCell<HashMap<u32, usize>>,
}

impl<'a> Run<'a> {
    fn new(p: &'a dyn ProcessApi) -> Self {
        Run {
            p,
            log: RefCell::new(Log::new()),
            instances: RefCell::new(Vec::new()),
            cookies: RefCell::new(HashMap::new()),
        }
    }

    /// The records of one read: `wd MASK [cookie ordinal] [name]`, by
    /// commas; a nonzero cookie as `cN`, N its ordinal on this side.
    fn records(&self, buf: &[u8]) -> String {
        let Some(events) = InotifyEvent::parse_all(buf) else {
            return format!("{} bytes of broken records", buf.len());
        };
        let mut cookies = self.cookies.borrow_mut();
        events
            .iter()
            .map(|e| {
                let mut s = format!("{} {}", e.wd, mask_str(e.mask));
                if e.cookie != 0 {
                    let next = cookies.len() + 1;
                    s += &format!(" c{}", cookies.entry(e.cookie).or_insert(next));
                }
                if !e.name.is_empty() {
                    s += &format!(" {}", String::from_utf8_lossy(&e.name));
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One read of `len` bytes from instance `fd` of `p`: the byte count
    /// and the records.
    fn read_by(&self, p: &dyn ProcessApi, fd: Fd, len: usize) -> String {
        let mut buf = vec![0u8; len];
        match p.read(fd, &mut buf) {
            Ok(n) => format!("{n}: {}", self.records(&buf[..n])),
            Err(e) => format!("{e}"),
        }
    }

    fn read(&self, fd: Fd, len: usize) -> String {
        self.read_by(self.p, fd, len)
    }

    /// Everything queued in instance `fd` of `p`: reads of 64 KiB until
    /// EAGAIN (each read's records between slashes; empty if none).
    fn drain(&self, p: &dyn ProcessApi, fd: Fd) -> String {
        let mut reads = Vec::new();
        let mut buf = vec![0u8; 65_536];
        for _ in 0..16 {
            match p.read(fd, &mut buf) {
                Ok(0) => {
                    reads.push("0".to_string());
                    break;
                }
                Ok(n) => reads.push(self.records(&buf[..n])),
                Err(Errno::EAGAIN) => break,
                Err(e) => {
                    reads.push(format!("{e}"));
                    break;
                }
            }
        }
        reads.join(" / ")
    }

    /// The events of every instance, by its label ("-" if none).
    fn drain_all(&self) -> String {
        let instances = self.instances.borrow().clone();
        let out: Vec<String> = instances
            .iter()
            .filter_map(|(label, p, fd)| {
                let d = self.drain(*p, *fd);
                (!d.is_empty()).then(|| format!("{label}: {d}"))
            })
            .collect();
        if out.is_empty() {
            "-".into()
        } else {
            out.join("; ")
        }
    }

    /// Logs a step's result and then the events it queued.
    fn step(&self, what: &str, r: String) {
        let events = self.drain_all();
        self.log
            .borrow_mut()
            .push((what.to_string(), format!("{r} => {events}")));
    }

    /// Logs a step's result, leaving the events queued.
    fn quiet(&self, what: &str, r: String) {
        self.log.borrow_mut().push((what.to_string(), r));
    }

    /// Logs an open's shape; the descriptor, or -1.
    fn fd(&self, what: &str, r: SysResult<Fd>) -> Fd {
        let fd = *r.as_ref().unwrap_or(&-1);
        self.step(what, fdr(r));
        fd
    }

    /// Logs an add_watch; the wd, or -1.
    fn watch(&self, what: &str, ino: Fd, path: &[u8], mask: u32) -> i32 {
        let r = self.p.inotify_add_watch(ino, path, mask);
        let wd = *r.as_ref().unwrap_or(&-1);
        self.step(what, show(r));
        wd
    }

    /// Reads instance `fd` of `p` after every step from now on.
    fn instance(&self, label: &str, p: &'a dyn ProcessApi, fd: Fd) {
        self.instances.borrow_mut().push((label.into(), p, fd));
    }

    /// Stops reading instance `fd` of the main process.
    fn forget(&self, fd: Fd) {
        let me = self.p as *const dyn ProcessApi as *const ();
        self.instances.borrow_mut().retain(|(_, p, f)| {
            let theirs = *p as *const dyn ProcessApi as *const ();
            !(*f == fd && theirs == me)
        });
    }

    /// Everything queued in instance `fd`, in short: the sizes of the
    /// reads, the number of records, and the first and last two.
    fn summary(&self, fd: Fd) -> String {
        let mut sizes = Vec::new();
        let mut events = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let end = loop {
            match self.p.read(fd, &mut buf) {
                Ok(n) if n > 0 && sizes.len() < 64 => {
                    sizes.push(n);
                    events.extend(InotifyEvent::parse_all(&buf[..n]).unwrap_or_default());
                }
                r => break show(r),
            }
        };
        let brief = |e: &InotifyEvent| format!("{} {}", e.wd, mask_str(e.mask));
        let last: Vec<String> = events.iter().rev().take(2).rev().map(brief).collect();
        format!(
            "reads {sizes:?} then {end}: {} records, first {:?}, last {last:?}",
            events.len(),
            events.first().map(brief),
        )
    }

    fn into_log(self) -> Log {
        self.log.into_inner()
    }
}

/// The script, with `user` a second process of uid 1000 (for EACCES and
/// events seen by another user), ended at the end; `overflow` when the
/// host's queue limit is Linux's default, which vfscale's is.
fn script<P: ProcessApi>(p: &P, user: P, overflow: bool) -> Log {
    let log = script_steps(p, &user, overflow);
    user.exit();
    log
}

fn script_steps(p: &dyn ProcessApi, user: &dyn ProcessApi, overflow: bool) -> Log {
    let r = Run::new(p);
    p.umask(0o022);
    let add = |ino: Fd, path: &[u8], mask: u32| show(p.inotify_add_watch(ino, path, mask));
    let rm = |ino: Fd, wd: i32| show(p.inotify_rm_watch(ino, wd));
    let lossy = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();

    // inotify_init1 and the instance's descriptor.
    r.step("init1 with flag 1", fdr(p.inotify_init1(1)));
    r.step("init1 O_RDWR", fdr(p.inotify_init1(O_RDWR)));
    r.step(
        "init1 O_NONBLOCK|O_DIRECT",
        fdr(p.inotify_init1(O_NONBLOCK | O_DIRECT)),
    );
    r.step("init1 every bit", fdr(p.inotify_init1(-1)));
    let blk = r.fd("init1 0", p.inotify_init1(0));
    r.step("blocking: F_GETFL", show(p.fcntl(blk, F_GETFL, 0)));
    r.step("blocking: F_GETFD", show(p.fcntl(blk, F_GETFD, 0)));
    r.step("blocking: FIONREAD", show(p.fionread(blk)));
    r.step("blocking: poll", poll(p, blk));
    r.step("blocking: close", show(p.close(blk)));
    let i0 = r.fd(
        "init1 IN_NONBLOCK|IN_CLOEXEC",
        p.inotify_init1(IN_NONBLOCK | IN_CLOEXEC),
    );
    r.instance("i0", p, i0);
    r.step("F_GETFD", show(p.fcntl(i0, F_GETFD, 0)));
    r.step("F_GETFL", show(p.fcntl(i0, F_GETFL, 0)));
    r.step("read, empty", r.read(i0, 4096));
    r.step("read 0 bytes, empty", r.read(i0, 0));
    r.step("read 1 byte, empty", r.read(i0, 1));
    r.step("write", show(p.write(i0, b"x")));
    r.step("lseek", show(p.lseek(i0, 0, SEEK_CUR)));
    r.step("pread", show(p.pread(i0, &mut [0; 64], 0)));
    r.step("FIONREAD, empty", show(p.fionread(i0)));
    r.step("poll, empty", poll(p, i0));
    r.step("fd path", show(p.fd_path(i0).map(lossy)));
    r.step("getdents64", show(p.getdents64(i0, &mut [0; 256])));
    r.step("fchmod", show(p.fchmod(i0, 0o600)));
    let i0_dup = r.fd(
        "F_DUPFD_CLOEXEC",
        p.fcntl(i0, F_DUPFD_CLOEXEC, 0).map(|n| n as Fd),
    );
    r.step("the dup's F_GETFD", show(p.fcntl(i0_dup, F_GETFD, 0)));

    // The tree: /d (watched throughout), /e, files, links.
    r.step("mkdir /d", show(p.mkdir(b"/d", 0o755)));
    r.step("mkdir /e", show(p.mkdir(b"/e", 0o755)));
    let f = r.fd("creat /d/f", p.open(b"/d/f", O_CREAT | O_RDWR, 0o644));
    r.step("write /d/f", show(p.write(f, b"hello, world")));
    r.step("close /d/f", show(p.close(f)));
    let g = r.fd("creat /g", p.open(b"/g", O_CREAT | O_RDWR, 0o644));
    r.step("symlink /sl", show(p.symlink(b"/d/f", b"/sl")));
    r.step("symlink /sd", show(p.symlink(b"/d", b"/sd")));
    r.step("symlink /dangling", show(p.symlink(b"/nope", b"/dangling")));
    let [pr, pw] = p.pipe2(O_NONBLOCK).unwrap_or([-1, -1]);
    let ep = r.fd("epoll_create1", p.epoll_create1(0));
    let opath = r.fd("O_PATH /g", p.open(b"/g", O_PATH, 0));

    // inotify_rm_watch's errors (before any watch).
    r.step("rm: bad fd", rm(99, 1));
    r.step("rm: a file's fd", rm(g, 1));
    r.step("rm: an O_PATH fd", rm(opath, 1));
    r.step("rm: no watches", rm(i0, 1));
    r.step("rm: wd 0", rm(i0, 0));
    r.step("rm: wd -1", rm(i0, -1));

    // inotify_add_watch's errors, in Linux's order.
    let long = [b"/".as_slice(), &[b'x'; 300]].concat();
    r.step("add: bad fd", add(99, b"/d", IN_CREATE));
    r.step("add: bad fd, no event bits", add(99, b"/d", 0));
    r.step(
        "add: bad fd, MASK_ADD|MASK_CREATE",
        add(99, b"/d", IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE),
    );
    r.step("add: a file's fd", add(g, b"/d", IN_CREATE));
    r.step(
        "add: a file's fd, missing path",
        add(g, b"/nope", IN_CREATE),
    );
    r.step("add: a pipe", add(pr, b"/d", IN_CREATE));
    r.step("add: an epoll", add(ep, b"/d", IN_CREATE));
    r.step("add: an O_PATH fd", add(opath, b"/d", IN_CREATE));
    r.step("add: no event bits", add(i0, b"/d", 0));
    // Any bit of a mask's known ones makes a watch, even with no event.
    r.step(
        "add: only flags",
        add(
            i0,
            b"/d",
            IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_ONESHOT | IN_MASK_ADD,
        ),
    );
    r.step("add: IN_IGNORED alone", add(i0, b"/d", IN_IGNORED));
    r.step("add: IN_ISDIR alone", add(i0, b"/d", IN_ISDIR));
    r.step("add: IN_UNMOUNT alone", add(i0, b"/d", IN_UNMOUNT));
    r.step("add: an unused bit alone", add(i0, b"/d", 0x1000));
    r.step("add: no event bits, missing path", add(i0, b"/nope", 0));
    r.step(
        "add: MASK_ADD|MASK_CREATE",
        add(i0, b"/d", IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE),
    );
    r.step(
        "add: MASK_ADD|MASK_CREATE, missing path",
        add(i0, b"/nope", IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE),
    );
    r.step("add: missing", add(i0, b"/nope", IN_CREATE));
    r.step("add: empty path", add(i0, b"", IN_CREATE));
    r.step("add: through a file", add(i0, b"/d/f/x", IN_CREATE));
    r.step("add: a name too long", add(i0, &long, IN_CREATE));
    r.step(
        "add: ONLYDIR on a file",
        add(i0, b"/d/f", IN_CREATE | IN_ONLYDIR),
    );
    r.step(
        "add: ONLYDIR|DONT_FOLLOW on a link to a directory",
        add(i0, b"/sd", IN_CREATE | IN_ONLYDIR | IN_DONT_FOLLOW),
    );
    r.step("add: a dangling link", add(i0, b"/dangling", IN_ATTRIB));
    r.step(
        "add: a missing path under a dangling link",
        add(i0, b"/dangling/x", IN_ATTRIB),
    );

    r.step("rm the flags-only watch", rm(i0, 1));

    // A watch; the same object again (the same wd), by a link and with
    // ONLYDIR; MASK_CREATE on it.
    let wd_d = r.watch("watch /d", i0, b"/d", IN_ALL_EVENTS);
    r.step("watch /d again", add(i0, b"/d", IN_ALL_EVENTS));
    r.step("watch /d through /sd", add(i0, b"/sd", IN_ALL_EVENTS));
    r.step(
        "watch /d through /sd, ONLYDIR",
        add(i0, b"/sd", IN_ALL_EVENTS | IN_ONLYDIR),
    );
    r.step("watch /d as /d/.", add(i0, b"/d/.", IN_ALL_EVENTS));
    r.step(
        "watch /d, MASK_CREATE",
        add(i0, b"/d", IN_CREATE | IN_MASK_CREATE),
    );
    r.step(
        "watch /d through /sd, MASK_CREATE|MASK_ADD",
        add(i0, b"/sd", IN_CREATE | IN_MASK_CREATE | IN_MASK_ADD),
    );
    r.step("its mask unchanged: creat /d/probe", {
        let x = p.open(b"/d/probe", O_CREAT | O_WRONLY, 0o644);
        let s = fdr(x);
        if let Ok(x) = x {
            p.close(x).unwrap();
        }
        s
    });
    r.step("unlink /d/probe", show(p.unlink(b"/d/probe")));
    r.step("the instance's dup reads the same queue", {
        p.chmod(b"/d/f", 0o644).unwrap();
        r.read(i0_dup, 4096)
    });
    r.step("close the dup", show(p.close(i0_dup)));

    // Events of a watched directory's children, by name.
    let a = r.fd("creat /d/a", p.open(b"/d/a", O_CREAT | O_WRONLY, 0o644));
    r.step("write /d/a", show(p.write(a, b"abc")));
    r.quiet("write /d/a, unread", show(p.write(a, b"1")));
    r.step("write /d/a again: merged", show(p.write(a, b"2")));
    r.step("write 0 bytes", show(p.write(a, b"")));
    r.step("pwrite", show(p.pwrite(a, b"xy", 10)));
    r.step("pwrite 0 bytes", show(p.pwrite(a, b"", 10)));
    r.step("writev of two buffers", show(p.writev(a, &[b"ab", b"cd"])));
    r.step("ftruncate", show(p.ftruncate(a, 4)));
    r.step("ftruncate to the same size", show(p.ftruncate(a, 4)));
    r.step("fallocate", show(p.fallocate(a, 0, 0, 100)));
    r.step(
        "fallocate KEEP_SIZE",
        show(p.fallocate(a, FALLOC_FL_KEEP_SIZE, 0, 8192)),
    );
    r.step(
        "fallocate PUNCH_HOLE",
        show(p.fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10)),
    );
    r.step("truncate by path", show(p.truncate(b"/d/a", 50)));
    r.step("fchmod", show(p.fchmod(a, 0o640)));
    r.step("fsync", show(p.fsync(a)));
    r.step("read a write-only file", show(p.read(a, &mut [0; 8])));
    r.step("close /d/a (written)", show(p.close(a)));
    let a = r.fd("open /d/a O_RDONLY", p.open(b"/d/a", O_RDONLY, 0));
    r.step("read", show(p.read(a, &mut [0; 2])));
    r.quiet("read, unread", show(p.read(a, &mut [0; 2])));
    r.step("read again: merged", show(p.read(a, &mut [0; 2])));
    r.step("pread", show(p.pread(a, &mut [0; 2], 1)));
    r.step(
        "readv into two buffers",
        show(p.readv(a, &mut [&mut [0; 1], &mut [0; 1]])),
    );
    r.step("read at the end", show(p.pread(a, &mut [0; 2], 1000)));
    r.step("read 0 bytes", show(p.read(a, &mut [])));
    r.quiet("read, unread again", show(p.read(a, &mut [0; 2])));
    r.quiet("fchmod between", show(p.fchmod(a, 0o644)));
    r.step("read once more: not merged", show(p.read(a, &mut [0; 2])));
    r.step("write a read-only file", show(p.write(a, b"x")));
    r.step("close /d/a (read)", show(p.close(a)));
    let a = r.fd(
        "open /d/a O_WRONLY|O_TRUNC",
        p.open(b"/d/a", O_WRONLY | O_TRUNC, 0),
    );
    r.step("close it, unwritten", show(p.close(a)));
    let a = r.fd(
        "open /d/a O_RDONLY|O_TRUNC of an empty file",
        p.open(b"/d/a", O_RDONLY | O_TRUNC, 0),
    );
    r.step("close it", show(p.close(a)));
    let a = r.fd(
        "open /d/a O_CREAT of an existing file",
        p.open(b"/d/a", O_CREAT | O_RDWR, 0o644),
    );
    r.step("close it, unwritten", show(p.close(a)));
    r.step(
        "open /d/a O_CREAT|O_EXCL of an existing file",
        fdr(p.open(b"/d/a", O_CREAT | O_EXCL | O_RDWR, 0o644)),
    );
    r.step(
        "open /d/a O_DIRECTORY",
        fdr(p.open(b"/d/a", O_RDONLY | O_DIRECTORY, 0)),
    );
    let a = r.fd("open /d/a O_PATH", p.open(b"/d/a", O_PATH, 0));
    r.step("read through it", show(p.read(a, &mut [0; 2])));
    r.step("fchmod through it", show(p.fchmod(a, 0o600)));
    r.step("close the O_PATH descriptor", show(p.close(a)));
    let a = r.fd("open /d/a O_RDONLY", p.open(b"/d/a", O_RDONLY, 0));
    let a2 = r.fd("dup it", p.dup(a));
    r.step("close the first of two", show(p.close(a)));
    r.step("close the last", show(p.close(a2)));

    // Children created and removed.
    r.step("mkdir /d/sub", show(p.mkdir(b"/d/sub", 0o755)));
    r.step(
        "mknod /d/fifo",
        show(p.mknodat(AT_FDCWD, b"/d/fifo", S_IFIFO | 0o644, 0)),
    );
    let fifo = r.fd(
        "open /d/fifo O_RDONLY|O_NONBLOCK",
        p.open(b"/d/fifo", O_RDONLY | O_NONBLOCK, 0),
    );
    r.step("close the fifo", show(p.close(fifo)));
    r.step("symlink /d/s", show(p.symlink(b"a", b"/d/s")));
    r.step("readlink /d/s", show(p.readlink(b"/d/s").map(lossy)));
    r.step("link /d/a /d/a2", show(p.link(b"/d/a", b"/d/a2")));
    r.step("link /d/a /e/a3", show(p.link(b"/d/a", b"/e/a3")));
    r.step("link onto an existing name", show(p.link(b"/d/a", b"/d/s")));
    r.step("mkdir an existing name", show(p.mkdir(b"/d/sub", 0o755)));
    r.step("chmod /d/a", show(p.chmod(b"/d/a", 0o600)));
    r.step("chmod /d/a, same mode", show(p.chmod(b"/d/a", 0o600)));
    r.step("chown /d/a", show(p.chown(b"/d/a", 0, 0)));
    r.step(
        "chown /d/a, nothing",
        show(p.chown(b"/d/a", u32::MAX, u32::MAX)),
    );
    r.step(
        "lchown /d/s",
        show(p.fchownat(AT_FDCWD, b"/d/s", 0, 0, AT_SYMLINK_NOFOLLOW)),
    );
    r.step("chmod /d/sub", show(p.chmod(b"/d/sub", 0o700)));
    let t = Timespec::new(1_000_000, 0);
    for (what, times) in [
        ("utimensat both now", None),
        ("utimensat both set", Some([t, t])),
        ("utimensat atime only", Some([t, Timespec::OMIT])),
        (
            "utimensat mtime only",
            Some([Timespec::OMIT, Timespec::NOW]),
        ),
        ("utimensat neither", Some([Timespec::OMIT, Timespec::OMIT])),
    ] {
        r.step(what, show(p.utimensat(AT_FDCWD, b"/d/a", times, 0)));
    }
    r.step(
        "utimensat on /d/sub",
        show(p.utimensat(AT_FDCWD, b"/d/sub", None, 0)),
    );
    r.step(
        "utimensat NOFOLLOW on /d/s",
        show(p.utimensat(AT_FDCWD, b"/d/s", None, AT_SYMLINK_NOFOLLOW)),
    );
    r.step(
        "setxattr user.k",
        show(p.setxattr(b"/d/a", b"user.k", b"v", 0)),
    );
    r.step(
        "setxattr user.k, XATTR_CREATE: exists",
        show(p.setxattr(b"/d/a", b"user.k", b"v", XATTR_CREATE)),
    );
    r.step(
        "setxattr user.k, same value",
        show(p.setxattr(b"/d/a", b"user.k", b"v", 0)),
    );
    r.step(
        "getxattr user.k",
        show(p.getxattr(b"/d/a", b"user.k", &mut [0; 16])),
    );
    r.step(
        "removexattr user.k",
        show(p.removexattr(b"/d/a", b"user.k")),
    );
    r.step(
        "removexattr user.k, absent",
        show(p.removexattr(b"/d/a", b"user.k")),
    );
    r.step(
        "setxattr on /d/sub",
        show(p.setxattr(b"/d/sub", b"user.k", b"v", 0)),
    );
    r.step("stat /d/a", show(p.stat(b"/d/a").map(|s| s.size)));
    r.step("access /d/a", show(p.access(b"/d/a", R_OK)));
    r.step("unlink /d/a2", show(p.unlink(b"/d/a2")));
    r.step("unlink /e/a3", show(p.unlink(b"/e/a3")));
    r.step("unlink /d/s", show(p.unlink(b"/d/s")));
    r.step("unlink /d/fifo", show(p.unlink(b"/d/fifo")));
    r.step("unlink a missing name", show(p.unlink(b"/d/nope")));
    r.step("rmdir /d/sub", show(p.rmdir(b"/d/sub")));
    r.step("rmdir a file", show(p.rmdir(b"/d/a")));

    // The watched directory itself: opens, getdents64, closes.
    let dd = r.fd(
        "open /d O_DIRECTORY",
        p.open(b"/d", O_RDONLY | O_DIRECTORY, 0),
    );
    r.step("getdents64 of /d", show(p.getdents64(dd, &mut [0; 4096])));
    r.step(
        "getdents64 at its end",
        show(p.getdents64(dd, &mut [0; 4096])),
    );
    r.step(
        "getdents64 into a small buffer",
        show(p.getdents64(dd, &mut [0; 4])),
    );
    r.step("fchmod /d", show(p.fchmod(dd, 0o755)));
    r.step("close /d", show(p.close(dd)));
    let dd = r.fd("open /d O_PATH", p.open(b"/d", O_PATH | O_DIRECTORY, 0));
    r.step(
        "getdents64 through O_PATH",
        show(p.getdents64(dd, &mut [0; 4096])),
    );
    r.step("close the O_PATH /d", show(p.close(dd)));
    r.step("stat /d", show(p.stat(b"/d").map(|s| s.nlink)));
    r.step("creat /d/b O_EXCL", {
        let x = p.open(b"/d/b", O_CREAT | O_EXCL | O_RDONLY, 0o644);
        let s = fdr(x);
        if let Ok(x) = x {
            p.close(x).unwrap();
        }
        s
    });

    // Renames: in one directory, out of it, into it, directories.
    r.step("rename /d/a /d/c", show(p.rename(b"/d/a", b"/d/c")));
    r.step("rename /d/c /e/c", show(p.rename(b"/d/c", b"/e/c")));
    let wd_e = r.watch("watch /e", i0, b"/e", IN_MOVE | IN_CREATE | IN_DELETE);
    r.step("rename /e/c /d/a", show(p.rename(b"/e/c", b"/d/a")));
    r.step("rename /d/a onto itself", show(p.rename(b"/d/a", b"/d/a")));
    r.step(
        "rename /d/a NOREPLACE onto /d/b",
        show(p.renameat2(AT_FDCWD, b"/d/a", AT_FDCWD, b"/d/b", RENAME_NOREPLACE)),
    );
    r.step("mkdir /d/dir", show(p.mkdir(b"/d/dir", 0o755)));
    r.step("rename /d/dir /e/dir", show(p.rename(b"/d/dir", b"/e/dir")));
    r.step(
        "rename /e/dir /d/dir2",
        show(p.rename(b"/e/dir", b"/d/dir2")),
    );
    r.step(
        "rename a missing name",
        show(p.rename(b"/d/nope", b"/d/nope2")),
    );
    r.step(
        "rename a directory into itself",
        show(p.rename(b"/d/dir2", b"/d/dir2/x")),
    );

    // A child watched too: the parent's named event, then the child's.
    let wd_a = r.watch("watch /d/a", i0, b"/d/a", IN_ALL_EVENTS);
    r.step(
        "watch /d/a through a hard link",
        show(
            p.link(b"/d/a", b"/e/hl")
                .and_then(|()| p.inotify_add_watch(i0, b"/e/hl", IN_ALL_EVENTS)),
        ),
    );
    r.step("unlink the hard link", show(p.unlink(b"/e/hl")));
    let a = r.fd("open /d/a O_RDWR", p.open(b"/d/a", O_RDWR, 0));
    r.step("write", show(p.write(a, b"w")));
    r.quiet("write, unread", show(p.write(a, b"w")));
    r.step("write again: nothing merged", show(p.write(a, b"w")));
    r.step("pread", show(p.pread(a, &mut [0; 4], 0)));
    r.step("chmod", show(p.chmod(b"/d/a", 0o644)));
    r.step("rename /d/a /d/b2", show(p.rename(b"/d/a", b"/d/b2")));
    r.step("write after the rename", show(p.write(a, b"w")));
    r.step("rename /d/b2 /e/b3", show(p.rename(b"/d/b2", b"/e/b3")));
    r.step("write in /e", show(p.write(a, b"w")));
    r.step("rename /e/b3 /d/a", show(p.rename(b"/e/b3", b"/d/a")));
    r.step("link /d/a /d/a3", show(p.link(b"/d/a", b"/d/a3")));
    r.step("unlink /d/a3", show(p.unlink(b"/d/a3")));
    r.step("close", show(p.close(a)));
    r.step("unlink /d/a, not open", show(p.unlink(b"/d/a")));
    r.step("rm the deleted watch", rm(i0, wd_a));

    // A watched file unlinked while open: DELETE_SELF at the last close.
    let h = r.fd("creat /d/h", p.open(b"/d/h", O_CREAT | O_RDWR, 0o644));
    let wd_h = r.watch("watch /d/h", i0, b"/d/h", IN_ALL_EVENTS);
    r.step("unlink /d/h, open", show(p.unlink(b"/d/h")));
    r.step("write the unlinked file", show(p.write(h, b"data")));
    r.step("fchmod the unlinked file", show(p.fchmod(h, 0o600)));
    r.step("rm an unknown wd", rm(i0, wd_h + 100));
    let h2 = r.fd("dup it", p.dup(h));
    r.step("close the first", show(p.close(h)));
    r.step("close the last", show(p.close(h2)));
    // Two names, one open: the last unlink deletes although it is open.
    let h = r.fd("creat /d/h", p.open(b"/d/h", O_CREAT | O_RDWR, 0o644));
    r.step("link /d/h /d/h2", show(p.link(b"/d/h", b"/d/h2")));
    let wd_h = r.watch("watch /d/h", i0, b"/d/h", IN_ALL_EVENTS);
    r.step("unlink /d/h, the open name", show(p.unlink(b"/d/h")));
    r.step("unlink /d/h2, the last name", show(p.unlink(b"/d/h2")));
    r.step("write it", show(p.write(h, b"x")));
    r.step("close it", show(p.close(h)));
    r.step("rm the gone watch", rm(i0, wd_h));
    // An O_PATH descriptor holds the name too.
    let h = r.fd("creat /d/h", p.open(b"/d/h", O_CREAT | O_RDWR, 0o644));
    r.step("close it", show(p.close(h)));
    r.watch("watch /d/h", i0, b"/d/h", IN_ALL_EVENTS);
    let h = r.fd("open it O_PATH", p.open(b"/d/h", O_PATH, 0));
    r.step("unlink /d/h, open O_PATH", show(p.unlink(b"/d/h")));
    r.step("close the O_PATH", show(p.close(h)));

    // A file renamed over a watched target; RENAME_EXCHANGE.
    for name in [&b"/d/t1"[..], b"/d/t2", b"/e/x1"] {
        let x = p.open(name, O_CREAT | O_RDONLY, 0o644).unwrap_or(-1);
        r.step(&format!("creat {}", lossy(name.to_vec())), show(p.close(x)));
    }
    r.step("mkdir /e/xd", show(p.mkdir(b"/e/xd", 0o755)));
    let wd_t1 = r.watch("watch /d/t1", i0, b"/d/t1", IN_ALL_EVENTS);
    r.watch("watch /d/t2", i0, b"/d/t2", IN_ALL_EVENTS);
    r.step(
        "rename /d/t1 over /d/t2",
        show(p.rename(b"/d/t1", b"/d/t2")),
    );
    r.step(
        "NOREPLACE over /d/t2",
        show(p.renameat2(AT_FDCWD, b"/e/x1", AT_FDCWD, b"/d/t2", RENAME_NOREPLACE)),
    );
    r.watch("watch /e/x1", i0, b"/e/x1", IN_ALL_EVENTS);
    r.step(
        "watch /e, all of it",
        add(i0, b"/e", IN_ALL_EVENTS | IN_MASK_ADD),
    );
    r.step(
        "EXCHANGE /d/t2 and /e/x1",
        show(p.renameat2(AT_FDCWD, b"/d/t2", AT_FDCWD, b"/e/x1", RENAME_EXCHANGE)),
    );
    r.step(
        "EXCHANGE /e/x1 and /e/xd (a directory)",
        show(p.renameat2(AT_FDCWD, b"/e/x1", AT_FDCWD, b"/e/xd", RENAME_EXCHANGE)),
    );
    r.step(
        "EXCHANGE with a missing name",
        show(p.renameat2(AT_FDCWD, b"/e/x1", AT_FDCWD, b"/e/nope", RENAME_EXCHANGE)),
    );
    r.step(
        "EXCHANGE|NOREPLACE",
        show(p.renameat2(
            AT_FDCWD,
            b"/e/x1",
            AT_FDCWD,
            b"/d/t2",
            RENAME_EXCHANGE | RENAME_NOREPLACE,
        )),
    );
    r.step("a watched directory: watch /e/x1", {
        add(i0, b"/e/x1", IN_ALL_EVENTS)
    });
    r.step(
        "rename the watched directory /e/x1 to /d/xx",
        show(p.rename(b"/e/x1", b"/d/xx")),
    );
    r.step("creat in it", {
        let x = p.open(b"/d/xx/in", O_CREAT | O_RDONLY, 0o644);
        let s = fdr(x);
        if let Ok(x) = x {
            p.close(x).unwrap();
        }
        s
    });
    r.step("mkdir /d/xd", show(p.mkdir(b"/d/xd", 0o755)));
    // /e/xd is the file t2 was, since the exchanges.
    r.step(
        "rename a directory over a file",
        show(p.rename(b"/d/xd", b"/e/xd")),
    );
    r.step(
        "rename a file over a directory",
        show(p.rename(b"/e/xd", b"/d/xx")),
    );
    r.step(
        "rename a directory over a full one",
        show(p.rename(b"/d/xd", b"/d/xx")),
    );
    r.watch("watch the empty /d/xd", i0, b"/d/xd", IN_ALL_EVENTS);
    r.step(
        "rename a directory over an empty one",
        show(p.rename(b"/d/xx", b"/d/xd")),
    );
    r.step("and back", show(p.rename(b"/d/xd", b"/d/xx")));
    let xx = r.fd(
        "open /d/xx O_DIRECTORY",
        p.open(b"/d/xx", O_RDONLY | O_DIRECTORY, 0),
    );
    r.step("unlink /d/xx/in", show(p.unlink(b"/d/xx/in")));
    // vfscale reports a removed directory's IN_DELETE_SELF at the rmdir,
    // Linux at its last close (COMPATIBILITY.md): its own watch goes first.
    let wd_xx = r.watch(
        "the watch on /d/xx",
        i0,
        b"/d/xx",
        IN_ALL_EVENTS | IN_MASK_ADD,
    );
    r.step("rm the watch on /d/xx", rm(i0, wd_xx));
    r.step("rmdir /d/xx, open", show(p.rmdir(b"/d/xx")));
    r.step(
        "getdents64 of the removed directory",
        show(p.getdents64(xx, &mut [0; 4096])),
    );
    r.step("close it", show(p.close(xx)));
    r.step("rmdir /e/xd, a file", show(p.rmdir(b"/e/xd")));
    r.step("rm wd_t1 (its file lives on as /e/xd)", rm(i0, wd_t1));

    // A small read, FIONREAD, poll and epoll with events queued.
    let wd_f = r.watch("watch /d/f", i0, b"/d/f", IN_ATTRIB | IN_MODIFY);
    r.quiet("chmod /d/f, unread", show(p.chmod(b"/d/f", 0o600)));
    r.quiet("chmod /e, unread", show(p.chmod(b"/e", 0o755)));
    r.quiet("FIONREAD, 3 queued", show(p.fionread(i0)));
    r.quiet("poll, 3 queued", poll(p, i0));
    r.quiet(
        "epoll: add",
        show(p.epoll_ctl(
            ep,
            EPOLL_CTL_ADD,
            i0,
            Some(EpollEvent {
                events: EPOLLIN | EPOLLOUT,
                data: 7,
            }),
        )),
    );
    r.quiet("epoll: ready", epoll_ready(p, ep));
    r.quiet("read 0 bytes", r.read(i0, 0));
    r.quiet("read 16 bytes, a named record first", r.read(i0, 16));
    r.quiet("read 31 bytes", r.read(i0, 31));
    r.quiet("read 40 bytes: one record fits", r.read(i0, 40));
    r.quiet("FIONREAD, 2 queued", show(p.fionread(i0)));
    r.quiet("read 15 bytes", r.read(i0, 15));
    r.quiet("read 16 bytes: one fits", r.read(i0, 16));
    r.quiet("read 1 byte more than a record", r.read(i0, 17));
    r.quiet("FIONREAD, empty", show(p.fionread(i0)));
    r.quiet("poll, empty", poll(p, i0));
    r.step("epoll: nothing ready", epoll_ready(p, ep));
    // Names of 15 and 16 bytes: 16 and 32 bytes of padded name.
    for name in [&b"/d/fifteen_bytes__"[..], b"/d/sixteen_bytes___"] {
        let x = p.open(name, O_CREAT | O_RDONLY, 0o644).unwrap_or(-1);
        p.close(x).unwrap_or(());
        r.quiet("creat, unread", show(p.fionread(i0)));
        r.step("a long name's record", r.read(i0, 4096));
    }

    // IN_MASK_ADD ORs, a plain add_watch replaces (flags included).
    let m = p.open(b"/d/m", O_CREAT | O_RDONLY, 0o644).unwrap_or(-1);
    r.step("creat /d/m", show(p.close(m)));
    r.step("rm the /d watch", rm(i0, wd_d));
    r.step("rm it again", rm(i0, wd_d));
    let wd_m = r.watch("watch /d/m, OPEN", i0, b"/d/m", IN_OPEN);
    r.step(
        "MASK_ADD CLOSE_NOWRITE",
        add(i0, b"/d/m", IN_CLOSE_NOWRITE | IN_MASK_ADD),
    );
    let m = r.fd("open /d/m", p.open(b"/d/m", O_RDONLY, 0));
    r.step("close /d/m", show(p.close(m)));
    r.step("replace with ACCESS", add(i0, b"/d/m", IN_ACCESS));
    let m = r.fd("open /d/m again", p.open(b"/d/m", O_RDONLY, 0));
    r.step("read it (empty)", show(p.read(m, &mut [0; 4])));
    r.step("close it", show(p.close(m)));
    r.step(
        "MASK_ADD ONESHOT|OPEN",
        add(i0, b"/d/m", IN_OPEN | IN_ONESHOT | IN_MASK_ADD),
    );
    let m = r.fd(
        "open /d/m: one event, then IGNORED",
        p.open(b"/d/m", O_RDONLY, 0),
    );
    r.step("close it", show(p.close(m)));
    r.step("rm the one-shot watch", rm(i0, wd_m));
    let wd_m = r.watch(
        "watch /d/m again: a new wd",
        i0,
        b"/d/m",
        IN_ALL_EVENTS | IN_ONESHOT,
    );
    r.quiet("chmod, unread", show(p.chmod(b"/d/m", 0o600)));
    r.step("chmod again", show(p.chmod(b"/d/m", 0o644)));
    r.step("rm it", rm(i0, wd_m));
    let wd_m = r.watch(
        "watch /d/m ONESHOT, rm before",
        i0,
        b"/d/m",
        IN_OPEN | IN_ONESHOT,
    );
    r.step("rm it before its event", rm(i0, wd_m));
    let wd_m = r.watch(
        "watch /d/m ONESHOT again",
        i0,
        b"/d/m",
        IN_ATTRIB | IN_ONESHOT,
    );
    r.step("a plain add drops ONESHOT", add(i0, b"/d/m", IN_ATTRIB));
    r.step("chmod: no IGNORED after", show(p.chmod(b"/d/m", 0o600)));
    r.step("rm it", rm(i0, wd_m));
    r.step(
        "ONESHOT|MASK_CREATE on a new object",
        add(i0, b"/d/m", IN_ATTRIB | IN_ONESHOT | IN_MASK_CREATE),
    );
    r.step(
        "MASK_ADD without ONESHOT keeps it",
        add(i0, b"/d/m", IN_MODIFY | IN_MASK_ADD),
    );
    r.step("chmod", show(p.chmod(b"/d/m", 0o600)));
    r.step(
        "watch /d/m with DELETE_SELF only",
        add(i0, b"/d/m", IN_DELETE_SELF),
    );
    r.step("chmod, not asked for", show(p.chmod(b"/d/m", 0o644)));
    r.step("unlink /d/m", show(p.unlink(b"/d/m")));
    r.step("rm the /d/f watch", rm(i0, wd_f));

    // IN_DONT_FOLLOW: the link itself.
    r.step("symlink /e/ln", show(p.symlink(b"../d/f", b"/e/ln")));
    let wd_ln = r.watch(
        "watch /e/ln DONT_FOLLOW",
        i0,
        b"/e/ln",
        IN_ALL_EVENTS | IN_DONT_FOLLOW,
    );
    r.watch("watch /e/ln, followed", i0, b"/e/ln", IN_ALL_EVENTS);
    let x = r.fd("open through the link", p.open(b"/e/ln", O_RDWR, 0));
    r.step("write through it", show(p.write(x, b"z")));
    r.step("close it", show(p.close(x)));
    r.step("readlink", show(p.readlink(b"/e/ln").map(lossy)));
    r.step(
        "lchown the link",
        show(p.fchownat(AT_FDCWD, b"/e/ln", 0, 0, AT_SYMLINK_NOFOLLOW)),
    );
    r.step(
        "utimensat NOFOLLOW on the link",
        show(p.utimensat(AT_FDCWD, b"/e/ln", None, AT_SYMLINK_NOFOLLOW)),
    );
    r.step("chmod through the link", show(p.chmod(b"/e/ln", 0o644)));
    let x = r.fd(
        "open the link O_PATH|O_NOFOLLOW",
        p.open(b"/e/ln", O_PATH | O_NOFOLLOW, 0),
    );
    r.step("close it", show(p.close(x)));
    r.step(
        "open the link O_NOFOLLOW",
        fdr(p.open(b"/e/ln", O_RDONLY | O_NOFOLLOW, 0)),
    );
    r.step("rename /e/ln /e/ln2", show(p.rename(b"/e/ln", b"/e/ln2")));
    r.step("link /e/ln2 /e/ln3", show(p.link(b"/e/ln2", b"/e/ln3")));
    r.step("unlink /e/ln3", show(p.unlink(b"/e/ln3")));
    r.step("unlink /e/ln2", show(p.unlink(b"/e/ln2")));
    r.step("rm the link's watch", rm(i0, wd_ln));

    // A watch on / sees its directories by name.
    let wd_root = r.watch(
        "watch /",
        i0,
        b"/",
        IN_OPEN | IN_ACCESS | IN_CLOSE | IN_ATTRIB,
    );
    r.step(
        "watch /e, OPEN|ACCESS|CLOSE",
        add(i0, b"/e", IN_OPEN | IN_ACCESS | IN_CLOSE),
    );
    let ed = r.fd("open /e", p.open(b"/e", O_RDONLY | O_DIRECTORY, 0));
    r.step("getdents64 of /e", show(p.getdents64(ed, &mut [0; 4096])));
    r.step("close /e", show(p.close(ed)));
    r.step("chmod /e", show(p.chmod(b"/e", 0o755)));
    r.step("chmod /", show(p.chmod(b"/", 0o755)));
    let rd = r.fd("open /", p.open(b"/", O_RDONLY | O_DIRECTORY, 0));
    r.step("getdents64 of /", show(p.getdents64(rd, &mut [0; 4096])));
    r.step("close /", show(p.close(rd)));
    r.step("rm the / watch", rm(i0, wd_root));
    r.step("rm the /e watch", rm(i0, wd_e));

    // IN_EXCL_UNLINK: an unlinked child's events, with and without, in
    // two instances.
    let i1 = r.fd("a second instance", p.inotify_init1(IN_NONBLOCK));
    r.instance("i1", p, i1);
    r.step("mkdir /x", show(p.mkdir(b"/x", 0o755)));
    r.watch(
        "i0: watch /x EXCL_UNLINK",
        i0,
        b"/x",
        IN_ALL_EVENTS | IN_EXCL_UNLINK,
    );
    r.step("i1: watch /x", add(i1, b"/x", IN_ALL_EVENTS));
    let k = r.fd("creat /x/k", p.open(b"/x/k", O_CREAT | O_RDWR, 0o644));
    r.step(
        "i0: watch /x/k EXCL_UNLINK",
        add(i0, b"/x/k", IN_ALL_EVENTS | IN_EXCL_UNLINK),
    );
    r.step("i1: watch /x/k", add(i1, b"/x/k", IN_ALL_EVENTS));
    r.step("write /x/k", show(p.write(k, b"k")));
    r.step("unlink /x/k, open", show(p.unlink(b"/x/k")));
    r.step("write the unlinked /x/k", show(p.write(k, b"k")));
    r.step("read it", show(p.pread(k, &mut [0; 4], 0)));
    r.step("fchmod it", show(p.fchmod(k, 0o600)));
    r.step("close it", show(p.close(k)));
    // Two instances on one file: each its own wds.
    let y = p.open(b"/x/y", O_CREAT | O_RDWR, 0o644).unwrap_or(-1);
    r.step("creat /x/y", show(p.close(y)));
    r.step(
        "i1: watch /x/y",
        add(i1, b"/x/y", IN_MODIFY | IN_CLOSE_WRITE),
    );
    r.step("i0: watch /x/y", add(i0, b"/x/y", IN_MODIFY | IN_OPEN));
    let y = r.fd("open /x/y", p.open(b"/x/y", O_WRONLY, 0));
    r.step("write /x/y", show(p.write(y, b"y")));
    r.step("close /x/y", show(p.close(y)));
    r.step("rmdir /x, full", show(p.rmdir(b"/x")));
    r.step("unlink /x/y", show(p.unlink(b"/x/y")));
    r.step("rmdir /x", show(p.rmdir(b"/x")));
    r.step("i1: rm wd 1", show(p.inotify_rm_watch(i1, 1)));
    r.step("i1: watch /e: the next wd", add(i1, b"/e", IN_CREATE));
    r.forget(i1);
    r.step("close i1 with a watch", show(p.close(i1)));
    r.step("watch through the closed i1", add(i1, b"/e", IN_CREATE));
    let k = p.open(b"/e/k", O_CREAT | O_RDONLY, 0o644).unwrap_or(-1);
    r.step("creat /e/k", show(p.close(k)));

    // Another user: EACCES without read permission; events it may see.
    r.step("creat /priv", {
        let x = p.open(b"/priv", O_CREAT | O_RDWR, 0o600).unwrap_or(-1);
        show(p.close(x))
    });
    r.step("creat /pub", {
        let x = p.open(b"/pub", O_CREAT | O_RDWR, 0o644).unwrap_or(-1);
        show(p.close(x))
    });
    r.step("creat /wonly", {
        let x = p.open(b"/wonly", O_CREAT | O_RDWR, 0o602).unwrap_or(-1);
        show(p.close(x))
    });
    r.step("mkdir /closed", show(p.mkdir(b"/closed", 0o700)));
    r.step("creat /closed/f", {
        let x = p.open(b"/closed/f", O_CREAT | O_RDWR, 0o644).unwrap_or(-1);
        show(p.close(x))
    });
    r.step("mkdir /nolist", show(p.mkdir(b"/nolist", 0o711)));
    let ui = user.inotify_init1(IN_NONBLOCK);
    r.step("user: init1", fdr(ui));
    let ui = ui.unwrap_or(-1);
    r.instance("user", user, ui);
    let uadd = |path: &[u8], mask: u32| show(user.inotify_add_watch(ui, path, mask));
    r.step("user: watch /priv", uadd(b"/priv", IN_ALL_EVENTS));
    r.step("user: watch /wonly", uadd(b"/wonly", IN_ALL_EVENTS));
    r.step("user: watch /closed", uadd(b"/closed", IN_ALL_EVENTS));
    r.step("user: watch /closed/f", uadd(b"/closed/f", IN_ALL_EVENTS));
    r.step("user: watch /nolist", uadd(b"/nolist", IN_ALL_EVENTS));
    r.step("user: watch /pub", uadd(b"/pub", IN_ALL_EVENTS));
    r.step("user: watch /", uadd(b"/", IN_CREATE | IN_DELETE));
    r.step(
        "user: watch /priv, bad mask first",
        uadd(b"/priv", IN_MASK_ADD | IN_MASK_CREATE | IN_OPEN),
    );
    r.step("user: rm an unknown wd", show(user.inotify_rm_watch(ui, 5)));
    r.step("root: write /pub", {
        let x = p.open(b"/pub", O_WRONLY, 0).unwrap_or(-1);
        let w = show(p.write(x, b"pub"));
        p.close(x).unwrap_or(());
        w
    });
    r.step("root: chmod /pub 0600", show(p.chmod(b"/pub", 0o600)));
    r.step("root: truncate /pub", show(p.truncate(b"/pub", 0)));
    r.step("user: watch /pub again", uadd(b"/pub", IN_ATTRIB));
    r.step("root: write /pub again", {
        let x = p.open(b"/pub", O_WRONLY, 0).unwrap_or(-1);
        let w = show(p.write(x, b"pub"));
        p.close(x).unwrap_or(());
        w
    });
    r.step("root: unlink /priv", show(p.unlink(b"/priv")));
    r.step("root: unlink /pub", show(p.unlink(b"/pub")));
    r.instances
        .borrow_mut()
        .retain(|(l, _, _)| l.as_str() != "user");
    r.step("user: close its instance", show(user.close(ui)));

    // A full queue: one IN_Q_OVERFLOW (wd -1) in place of the events
    // beyond the limit; none of them merge (MODIFY and ACCESS by turns).
    if overflow {
        let q = r.fd("creat /q", p.open(b"/q", O_CREAT | O_RDWR, 0o644));
        r.watch("watch /q", i0, b"/q", IN_MODIFY | IN_ACCESS);
        let mut failed = 0;
        for _ in 0..INOTIFY_MAX_QUEUED_EVENTS / 2 + 2 {
            failed += usize::from(p.pwrite(q, b"x", 0).is_err());
            failed += usize::from(p.pread(q, &mut [0], 0).is_err());
        }
        r.quiet("the limit and 4 more events: failures", failed.to_string());
        r.quiet("FIONREAD of a full queue", show(p.fionread(i0)));
        r.quiet("poll a full queue", poll(p, i0));
        r.quiet("read a full queue", r.summary(i0));
        r.step("the next event", show(p.pwrite(q, b"x", 0)));
        r.step("close /q", show(p.close(q)));
    }

    r.step("close i0", {
        r.forget(i0);
        show(p.close(i0))
    });
    for fd in [g, pr, pw, ep, opath] {
        p.close(fd).unwrap_or(());
    }
    r.into_log()
}

fn kernel_user() -> KernelProcess {
    KernelProcess::new(&Cred::user(1000, 1000, &[1000])).expect("a uid 1000 process")
}

/// Whether the host's `max_queued_events` is Linux's default.
fn default_queue_limit() -> bool {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events");
    let default = limit.is_ok_and(|l| l.trim() == INOTIFY_MAX_QUEUED_EVENTS.to_string());
    if !default {
        println!("max_queued_events is not the default: no overflow steps");
    }
    default
}

#[test]
fn inotify_matches_the_kernel() {
    let overflow = default_queue_limit();
    compare_with_kernel(
        "inotify",
        move |k| script(k, kernel_user(), overflow),
        move |p| {
            let user = p.with_cred(Cred::user(1000, 1000, &[1000])).unwrap();
            script(p, user, overflow)
        },
    );
}

/// The names of the random sequences, relative to a case's directory:
/// the directory, two directories in it and one nested, files and
/// symlinks (the setup makes all but the last file and the last link).
const DIRS: [&str; 4] = [".", "a", "b", "a/n"];
const FILES: [&str; 6] = ["a/x", "a/y", "b/x", "b/y", "a/n/x", "a/n/z"];
const LINKS: [&str; 2] = ["a/s", "b/s"];

/// A watch's mask, shown by name.
#[derive(Clone, Copy)]
struct Mask(u32);

impl std::fmt::Debug for Mask {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if self.0 & IN_ALL_EVENTS == IN_ALL_EVENTS {
            let flags = self.0 & !IN_ALL_EVENTS;
            f.write_str("ALL_EVENTS")?;
            if flags != 0 {
                write!(f, "|{}", mask_str(flags))?;
            }
            Ok(())
        } else {
            f.write_str(&mask_str(self.0))
        }
    }
}

/// open's flags, shown by name.
#[derive(Clone, Copy)]
struct OFlags(i32);

impl std::fmt::Debug for OFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let access = match self.0 & (O_PATH | O_ACCMODE) {
            O_RDONLY => "O_RDONLY",
            O_WRONLY => "O_WRONLY",
            O_RDWR => "O_RDWR",
            _ => "O_PATH",
        };
        let mut s = access.to_string();
        for (bit, name) in [
            (O_CREAT, "O_CREAT"),
            (O_TRUNC, "O_TRUNC"),
            (O_EXCL, "O_EXCL"),
            (O_DIRECTORY, "O_DIRECTORY"),
            (O_NOFOLLOW, "O_NOFOLLOW"),
        ] {
            if self.0 & bit != 0 {
                s += "|";
                s += name;
            }
        }
        f.write_str(&s)
    }
}

/// A step of a random sequence: instances by slot (in the order they
/// were made), open files by age (0 the newest still open, 1 the one
/// before, ...), paths by name.
#[derive(Clone, Debug)]
enum Step {
    Watch(usize, &'static str, Mask),
    Unwatch(usize, i32),
    /// A second or third instance, IN_NONBLOCK and maybe IN_CLOEXEC.
    NewInstance(bool),
    /// Closes an instance (never the first).
    CloseInstance(usize),
    /// One read of so many bytes, the rest left queued.
    SmallRead(usize, usize),
    Fionread(usize),
    Open(&'static str, OFlags),
    Close(usize),
    Dup(usize),
    Read(usize, usize),
    Write(usize, usize),
    Pread(usize, usize, i64),
    Pwrite(usize, usize, i64),
    Ftruncate(usize, i64),
    Truncate(&'static str, i64),
    Fchmod(usize),
    Chmod(&'static str, u32),
    Chown(&'static str),
    /// Path, which times (0 both now, 1 atime, 2 mtime, 3 neither),
    /// AT_SYMLINK_NOFOLLOW.
    Utimens(&'static str, u8, bool),
    Setxattr(&'static str),
    Getdents(usize),
    Mkdir(&'static str),
    Rmdir(&'static str),
    Unlink(&'static str),
    Link(&'static str, &'static str),
    Symlink(&'static str, &'static str),
    /// From, to, renameat2's flags.
    Rename(&'static str, &'static str, u32),
}

/// Whether one of `fds` holds the directory `at` names (in case `case`'s
/// directory): it is that directory or something below it, unlinked ones
/// included (an open file's name keeps its directory, as Linux's
/// d_parent), by the descriptor's `/proc`-style path.
fn holds_open<P: ProcessApi + ?Sized>(p: &P, case: usize, at: &str, fds: &[Fd]) -> bool {
    if !p
        .lstat(at.as_bytes())
        .is_ok_and(|st| st.mode & S_IFMT == S_IFDIR)
    {
        return false;
    }
    let dir = format!("/c{case}/{at}");
    fds.iter().any(|&f| {
        p.fd_path(f).is_ok_and(|path| {
            let rest = path.strip_prefix(dir.as_bytes());
            rest.is_some_and(|r| r.is_empty() || r.starts_with(b"/") || r.starts_with(b" "))
        })
    })
}

/// A sequence's steps, each with whether the events are read after it
/// (else they stay queued, to merge with the next ones or be read in
/// part by a small read).
fn random_steps(rnd: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<(Step, bool)> {
    let mut instances = 1usize;
    let mut steps = Vec::new();
    let any = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(10) {
        0..=2 => DIRS[rnd(4) as usize],
        3..=8 => FILES[rnd(6) as usize],
        _ => LINKS[rnd(2) as usize],
    };
    let file = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(10) {
        0 => DIRS[rnd(4) as usize],
        1 => LINKS[rnd(2) as usize],
        _ => FILES[rnd(6) as usize],
    };
    let mask = |rnd: &mut dyn FnMut(u64) -> u64| {
        let mut m = match rnd(5) {
            0..=2 => IN_ALL_EVENTS,
            3 => (1 << rnd(12)) | (1 << rnd(12)),
            _ => rnd(0x1000) as u32,
        };
        for (bit, odds) in [
            (IN_ONLYDIR, 12),
            (IN_DONT_FOLLOW, 8),
            (IN_EXCL_UNLINK, 5),
            (IN_MASK_ADD, 6),
            (IN_MASK_CREATE, 12),
            (IN_ONESHOT, 10),
        ] {
            if rnd(odds) == 0 {
                m |= bit;
            }
        }
        Mask(m)
    };
    // Every case starts with a directory of files watched, and a file.
    steps.push((
        Step::Watch(0, DIRS[1 + rnd(3) as usize], Mask(IN_ALL_EVENTS)),
        true,
    ));
    steps.push((
        Step::Watch(0, FILES[rnd(6) as usize], Mask(IN_ALL_EVENTS)),
        true,
    ));
    while steps.len() < n {
        let ino = |rnd: &mut dyn FnMut(u64) -> u64| rnd(instances as u64) as usize;
        // Mostly one of the last few files opened.
        let slot = |rnd: &mut dyn FnMut(u64) -> u64| {
            let among = if rnd(6) == 0 { 8 } else { 3 };
            rnd(among) as usize
        };
        let len = [0, 1, 5, 100][rnd(4) as usize];
        let off = [0, 3, 4096][rnd(3) as usize];
        let step = match rnd(44) {
            0..=4 => Step::Watch(ino(rnd), any(rnd), mask(rnd)),
            5 => Step::Unwatch(ino(rnd), rnd(8) as i32),
            6 if instances < 3 && rnd(2) == 0 => {
                instances += 1;
                Step::NewInstance(rnd(2) == 0)
            }
            // The first instance stays.
            7 if instances > 1 && rnd(3) == 0 => {
                Step::CloseInstance(1 + rnd(instances as u64 - 1) as usize)
            }
            8 => Step::SmallRead(ino(rnd), [0, 16, 17, 32, 40, 48, 64][rnd(7) as usize]),
            9 => Step::Fionread(ino(rnd)),
            10..=16 => {
                let mut flags = [O_RDONLY, O_WRONLY, O_RDWR][rnd(3) as usize];
                for (bit, odds) in [
                    (O_CREAT, 3),
                    (O_TRUNC, 6),
                    (O_EXCL, 10),
                    (O_DIRECTORY, 10),
                    (O_NOFOLLOW, 10),
                ] {
                    if rnd(odds) == 0 {
                        flags |= bit;
                    }
                }
                if rnd(8) == 0 {
                    flags = O_PATH | (flags & (O_DIRECTORY | O_NOFOLLOW));
                }
                // Directories are opened to be read.
                if rnd(6) == 0 {
                    Step::Open(DIRS[rnd(4) as usize], OFlags(O_RDONLY | O_DIRECTORY))
                } else {
                    Step::Open(file(rnd), OFlags(flags))
                }
            }
            17..=19 => Step::Close(slot(rnd)),
            20 => Step::Dup(slot(rnd)),
            21..=22 => Step::Read(slot(rnd), len),
            23..=24 => Step::Write(slot(rnd), len),
            25 => Step::Pread(slot(rnd), len, off),
            26 => Step::Pwrite(slot(rnd), len, off),
            27 => Step::Ftruncate(slot(rnd), off),
            28 => Step::Truncate(file(rnd), off),
            29 => Step::Fchmod(slot(rnd)),
            30 => Step::Chmod(any(rnd), [0o644, 0o755, 0o600][rnd(3) as usize]),
            31 => Step::Chown(any(rnd)),
            32 => Step::Utimens(any(rnd), rnd(4) as u8, rnd(4) == 0),
            33 => Step::Setxattr(any(rnd)),
            34 => Step::Getdents(slot(rnd)),
            35 => Step::Mkdir(any(rnd)),
            36 => Step::Rmdir(any(rnd)),
            37..=38 => Step::Unlink(file(rnd)),
            39 => Step::Link(file(rnd), any(rnd)),
            40 => Step::Symlink(any(rnd), any(rnd)),
            41..=43 => Step::Rename(
                any(rnd),
                any(rnd),
                [0, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE][rnd(5) as usize],
            ),
            _ => continue,
        };
        steps.push((step, rnd(8) != 0));
    }
    steps
}

/// Runs one case in its own directory `/cN` (made the cwd), logging each
/// step's result and the events it queued.
fn run_steps(p: &dyn ProcessApi, case: usize, steps: &[(Step, bool)], log: &mut Log) {
    let r = Run::new(p);
    let dir = format!("/c{case}").into_bytes();
    let setup = [
        p.mkdir(&dir, 0o755),
        p.chdir(&dir),
        p.mkdir(b"a", 0o755),
        p.mkdir(b"b", 0o755),
        p.mkdir(b"a/n", 0o755),
        p.symlink(b"x", b"a/s"),
    ];
    let files = FILES[..5]
        .iter()
        .map(|name| {
            p.open(name.as_bytes(), O_CREAT | O_WRONLY, 0o644)
                .and_then(|f| p.write(f, b"hello").and_then(|_| p.close(f)))
        })
        .collect::<Vec<_>>();
    r.quiet(
        &format!("case {case} setup"),
        format!("{setup:?} {files:?}"),
    );
    let i0 = p.inotify_init1(IN_NONBLOCK);
    r.quiet(&format!("case {case} init1"), fdr(i0));
    let mut inos: Vec<Option<Fd>> = vec![i0.ok()];
    r.instance("i0", p, i0.unwrap_or(-1));
    // The open files, oldest first.
    let mut fds: Vec<Fd> = Vec::new();
    for (i, (step, drain)) in steps.iter().enumerate() {
        // The s-th newest open file.
        let fd = |s: usize, fds: &[Fd]| fds.len().checked_sub(s + 1).map(|k| fds[k]);
        let ino = |k: usize, inos: &[Option<Fd>]| inos.get(k).copied().flatten();
        let none = "(none)".to_string();
        let res = match *step {
            Step::Watch(k, at, mask) => match ino(k, &inos) {
                Some(i) => show(p.inotify_add_watch(i, at.as_bytes(), mask.0)),
                None => none,
            },
            Step::Unwatch(k, wd) => match ino(k, &inos) {
                Some(i) => show(p.inotify_rm_watch(i, wd)),
                None => none,
            },
            Step::NewInstance(cloexec) => {
                let x = p.inotify_init1(IN_NONBLOCK | if cloexec { IN_CLOEXEC } else { 0 });
                inos.push(x.ok());
                if let Ok(x) = x {
                    r.instance(&format!("i{}", inos.len() - 1), p, x);
                }
                fdr(x)
            }
            Step::CloseInstance(k) => match ino(k, &inos) {
                Some(i) => {
                    inos[k] = None;
                    r.forget(i);
                    show(p.close(i))
                }
                None => none,
            },
            Step::SmallRead(k, len) => match ino(k, &inos) {
                Some(i) => r.read(i, len),
                None => none,
            },
            Step::Fionread(k) => match ino(k, &inos) {
                Some(i) => show(p.fionread(i)),
                None => none,
            },
            Step::Open(at, flags) => {
                let x = p.open(at.as_bytes(), flags.0, 0o644);
                fds.extend(x.as_ref().ok());
                fdr(x)
            }
            Step::Close(s) => match fd(s, &fds) {
                Some(f) => {
                    fds.retain(|&x| x != f);
                    show(p.close(f))
                }
                None => none,
            },
            Step::Dup(s) => match fd(s, &fds) {
                Some(f) => {
                    let x = p.dup(f);
                    fds.extend(x.as_ref().ok());
                    fdr(x)
                }
                None => none,
            },
            Step::Read(s, len) => match fd(s, &fds) {
                Some(f) => show(p.read(f, &mut vec![0; len])),
                None => none,
            },
            Step::Write(s, len) => match fd(s, &fds) {
                Some(f) => show(p.write(f, &vec![b'w'; len])),
                None => none,
            },
            Step::Pread(s, len, off) => match fd(s, &fds) {
                Some(f) => show(p.pread(f, &mut vec![0; len], off)),
                None => none,
            },
            Step::Pwrite(s, len, off) => match fd(s, &fds) {
                Some(f) => show(p.pwrite(f, &vec![b'p'; len], off)),
                None => none,
            },
            Step::Ftruncate(s, len) => match fd(s, &fds) {
                Some(f) => show(p.ftruncate(f, len)),
                None => none,
            },
            Step::Truncate(at, len) => show(p.truncate(at.as_bytes(), len)),
            Step::Fchmod(s) => match fd(s, &fds) {
                Some(f) => show(p.fchmod(f, 0o640)),
                None => none,
            },
            Step::Chmod(at, mode) => show(p.chmod(at.as_bytes(), mode)),
            Step::Chown(at) => show(p.chown(at.as_bytes(), 0, 0)),
            Step::Utimens(at, which, nofollow) => {
                let t = Timespec::new(7, 0);
                let times = match which {
                    0 => None,
                    1 => Some([t, Timespec::OMIT]),
                    2 => Some([Timespec::OMIT, t]),
                    _ => Some([Timespec::OMIT, Timespec::OMIT]),
                };
                let flags = if nofollow { AT_SYMLINK_NOFOLLOW } else { 0 };
                show(p.utimensat(AT_FDCWD, at.as_bytes(), times, flags))
            }
            Step::Setxattr(at) => show(p.setxattr(at.as_bytes(), b"user.k", b"v", 0)),
            // Only whether it listed: how many entries a cursor finds after
            // new names appear differs (COMPATIBILITY.md, readdir order).
            Step::Getdents(s) => match fd(s, &fds) {
                Some(f) => show(p.getdents64(f, &mut [0; 4096]).map(|_| "listed")),
                None => none,
            },
            Step::Mkdir(at) => show(p.mkdir(at.as_bytes(), 0o755)),
            // A directory some descriptor holds open is not removed: vfscale
            // reports its IN_DELETE_SELF at the rmdir, Linux at the last
            // close (COMPATIBILITY.md). Each side decides from its own
            // descriptors, so both skip the same steps.
            Step::Rmdir(at) if holds_open(p, case, at, &fds) => "(skipped: open)".to_string(),
            Step::Rmdir(at) => show(p.rmdir(at.as_bytes())),
            // The same for a directory a rename would replace.
            Step::Rename(_, to, flags)
                if flags & RENAME_EXCHANGE == 0 && holds_open(p, case, to, &fds) =>
            {
                "(skipped: open)".to_string()
            }
            Step::Unlink(at) => show(p.unlink(at.as_bytes())),
            Step::Link(from, to) => show(p.link(from.as_bytes(), to.as_bytes())),
            Step::Symlink(target, at) => show(p.symlink(target.as_bytes(), at.as_bytes())),
            Step::Rename(from, to, flags) => {
                show(p.renameat2(AT_FDCWD, from.as_bytes(), AT_FDCWD, to.as_bytes(), flags))
            }
        };
        let what = format!("case {case} step {i}: {step:?}");
        if *drain && !matches!(step, Step::SmallRead(..)) {
            r.step(&what, res);
        } else {
            r.quiet(&what, res);
        }
    }
    // The last closes' events, then the instances closed.
    let closes: Vec<String> = fds.into_iter().map(|f| show(p.close(f))).collect();
    r.step(
        &format!("case {case} end: close the files"),
        closes.join(" "),
    );
    for i in inos.into_iter().flatten() {
        p.close(i).unwrap_or(());
    }
    p.chdir(b"/").unwrap_or(());
    log.extend(r.into_log());
}

/// Random sequences of watches, unwatches, instances, small reads, opens,
/// closes, dups, reads, writes, truncates, attribute changes, getdents64
/// and name changes, compared with the kernel step by step with the
/// events of every instance (`VFSCALE_INOTIFY_CASES`, default 120, of 60
/// steps; `VFSCALE_SEED` replays; `VFSCALE_INOTIFY_ONLY=N` runs case N
/// alone, `VFSCALE_INOTIFY_STEPS=K` only its first K steps).
#[test]
fn random_sequences_match_the_kernel() {
    let cases = env_u64("VFSCALE_INOTIFY_CASES").unwrap_or(120) as usize;
    compare_random("inotify (random)", cases, None);
}

/// The random sequences with vfscale's side on a passthrough root over a
/// fresh host directory (on /dev/shm, a tmpfs as the kernel side's): the
/// backend's own create, unlink and rename paths report the same events
/// (`VFSCALE_INOTIFY_PT_CASES`, default 40; the other variables as above).
#[test]
fn random_sequences_on_passthrough_match_the_kernel() {
    use vfscale::fs::passthrough::PassthroughConfig;
    use vfscale::{Vfs, VfsConfig};
    let cases = env_u64("VFSCALE_INOTIFY_PT_CASES").unwrap_or(40) as usize;
    let host = std::path::PathBuf::from(format!(
        "/dev/shm/vfscale-inotify-{}-{}",
        std::process::id(),
        seed_from_env()
    ));
    if std::fs::create_dir(&host).is_err() {
        println!("passthrough inotify comparison skipped: cannot make {host:?}");
        return;
    }
    let vfs = Vfs::with_passthrough_root(
        VfsConfig::default(),
        &host,
        PassthroughConfig {
            ttl: std::time::Duration::ZERO,
            ..PassthroughConfig::default()
        },
    )
    .expect("a passthrough root over a fresh directory");
    compare_random("inotify (random, passthrough)", cases, Some(vfs));
    let _ = std::fs::remove_dir_all(&host);
}

/// `cases` random sequences (or the one `VFSCALE_INOTIFY_ONLY` names, cut
/// to `VFSCALE_INOTIFY_STEPS`) on the kernel and on vfscale (`vfs`, else a
/// fresh tmpfs namespace). The sequences remove directories they looked
/// up missing names in, so the caches are dropped before the check.
fn compare_random(what: &str, cases: usize, vfs: Option<vfscale::Vfs>) {
    let seed = seed_from_env();
    println!("seed {seed} (replay with VFSCALE_SEED={seed})");
    let mut rnd = xorshift(seed);
    let sequences: Vec<Vec<(Step, bool)>> =
        (0..cases).map(|_| random_steps(&mut rnd, 60)).collect();
    let sequences: Vec<(usize, Vec<(Step, bool)>)> = match env_u64("VFSCALE_INOTIFY_ONLY") {
        Some(c) => {
            let mut steps = sequences[c as usize].clone();
            steps.truncate(env_u64("VFSCALE_INOTIFY_STEPS").map_or(steps.len(), |k| k as usize));
            vec![(c as usize, steps)]
        }
        None => sequences.into_iter().enumerate().collect(),
    };
    let theirs = sequences.clone();
    let run_all = |cases: Vec<(usize, Vec<(Step, bool)>)>| {
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
    match vfs {
        Some(vfs) => {
            compare_with_kernel_in(what, vfs, move |k| on_kernel(k), move |p| on_vfscale(p))
        }
        None => compare_with_kernel_reclaimed(what, move |k| on_kernel(k), move |p| on_vfscale(p)),
    }
}
