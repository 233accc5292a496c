//! Inode flags (chattr/lsattr: FS_IOC_GETFLAGS, FS_IOC_SETFLAGS,
//! FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR) and what they enforce: one
//! script on the kernel (a private tmpfs root, `on_kernel_as_root`, with a
//! second process of uid 1000) and on vfscale, every result compared.
//!
//! The script covers the four ioctls' errors in Linux's order (EBADF for
//! bad and O_PATH descriptors; FSSETXATTR's EOPNOTSUPP for xflags outside
//! FS_XFLAGS_MASK before EROFS and before the owner check; EROFS through a
//! read-only bind and on a read-only instance; ENOTTY on pipes, sockets,
//! eventfds, inotify descriptors and FIFOs, EINVAL on epoll descriptors
//! (ep_eventpoll_ioctl's answer to what it does not know); EPERM for a non-owner
//! and for a non-root owner changing FS_IMMUTABLE_FL or FS_APPEND_FL;
//! EOPNOTSUPP for the flags tmpfs does not keep; FSSETXATTR's EINVALs,
//! the extent-size flags a zero size clears, PREALLOC and HASATTR dropped, nextents
//! ignored), what the flags read back as (GETFLAGS, FSGETXATTR, statx's
//! `attributes` and `attributes_mask`), which flags new inodes inherit,
//! whether a call changed ctime, and what FS_IMMUTABLE_FL and
//! FS_APPEND_FL forbid on files and directories (opens, access, writes
//! through older descriptors, truncates, attribute and time changes,
//! names, xattrs, fallocate, copy_file_range, sendfile, splice, F_SETFL),
//! FS_NOATIME_FL's reads, what a non-root owner may change, where the
//! flags' EPERM falls among other errors (the victim's kind, sticky
//! directories), the set-ID bits a chown or a write still drops on an
//! immutable file, POSIX ACLs, O_TMPFILE files, memfds, and that a flag
//! change queues no inotify event.
//!
//! Logged: results, errnos, flags, sizes, modes, contents, and times only
//! as "changed or not" (never inode numbers, devices or times
//! themselves). `VFSCALE_SHOW_KERNEL_LOG=1` prints the kernel's log
//! (lines starting `K`), `VFSCALE_SHOW_LOG=1` vfscale's.
//!
//! `random_sequences_match_the_kernel` then runs seeded random sequences
//! of flag changes mixed with opens, writes, truncates, chmods, renames,
//! unlinks, links and xattr calls on a small tree, as root and as uid 1000
//! (`VFSCALE_FLAGS_CASES`, default 100, of 40 steps; `VFSCALE_SEED`
//! replays a run; `VFSCALE_FLAGS_ONLY=N` runs its case N alone;
//! `VFSCALE_SHOW_LOG=1` prints vfscale's log).

use std::cell::RefCell;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::cred::acl::{
    value_of as acl, ACL_GROUP_OBJ as GROUP_OBJ, ACL_OTHER as OTHER, ACL_UNDEFINED_ID as U,
    ACL_USER_OBJ as USER_OBJ,
};
use vfscale::{Cred, ProcessApi};
use vfscale_difftest::script::show_kernel_log;
use vfscale_difftest::script::unit;
use vfscale_difftest::script::{compare_with_kernel, compare_with_kernel_reclaimed, Log};
use vfscale_difftest::seeded::seeded_cases;
use vfscale_difftest::KernelProcess;

/// An old time: under relatime a read updates an access time this old.
const OLD: i64 = 1000;

/// A result as text: the value through `f`, or the errno.
fn s<T>(r: SysResult<T>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => f(v),
        Err(e) => format!("{e}"),
    }
}

fn num(r: SysResult<usize>) -> String {
    s(r, |n| n.to_string())
}

fn hex(r: SysResult<u32>) -> String {
    s(r, |f| format!("{f:#x}"))
}

fn fsx_str(x: FsXattr) -> String {
    format!(
        "xflags {:#x} extsize {} nextents {} projid {} cowextsize {}",
        x.xflags, x.extsize, x.nextents, x.projid, x.cowextsize
    )
}

fn fsx(r: SysResult<FsXattr>) -> String {
    s(r, fsx_str)
}

/// A `struct fsxattr` of these xflags, every other field 0.
fn xf(xflags: u32) -> FsXattr {
    FsXattr {
        xflags,
        ..FsXattr::default()
    }
}

/// statx's attributes and the bits it answers for.
fn attrs_of(r: SysResult<Statx>) -> String {
    s(r, |x| {
        format!("attrs {:#x} mask {:#x}", x.attributes, x.attributes_mask)
    })
}

/// A descriptor's shape: the number is not compared.
fn fdr(r: SysResult<Fd>) -> String {
    s(r, |_| "fd".into())
}

/// One side's run: the root process, the uid 1000 process, the log.
struct Run<'a> {
    p: &'a dyn ProcessApi,
    u: &'a dyn ProcessApi,
    log: RefCell<Log>,
}

impl<'a> Run<'a> {
    fn log(&self, what: &str, r: String) {
        self.log.borrow_mut().push((what.to_string(), r));
    }

    /// Opens as `who`, logs the shape, returns the descriptor or -1.
    fn open_by(&self, who: &dyn ProcessApi, what: &str, path: &[u8], flags: i32) -> Fd {
        let r = who.open(path, flags, 0o644);
        let fd = *r.as_ref().unwrap_or(&-1);
        self.log(what, fdr(r));
        fd
    }

    fn open(&self, what: &str, path: &[u8], flags: i32) -> Fd {
        self.open_by(self.p, what, path, flags)
    }

    /// An open by `who` whose descriptor is closed at once.
    fn try_open_by(&self, who: &dyn ProcessApi, what: &str, path: &[u8], flags: i32) {
        let r = who.open(path, flags, 0o644);
        if let Ok(fd) = r {
            who.close(fd).unwrap();
        }
        self.log(what, fdr(r));
    }

    fn try_open(&self, what: &str, path: &[u8], flags: i32) {
        self.try_open_by(self.p, what, path, flags)
    }

    /// The flags of `path` as `who` reads them: GETFLAGS and FSGETXATTR
    /// through a read-only descriptor, statx's attributes (the last
    /// component not followed).
    fn state_by(&self, who: &dyn ProcessApi, what: &str, path: &[u8]) {
        let r = who.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0);
        let (g, x) = match r {
            Ok(fd) => {
                let g = hex(who.fs_ioc_getflags(fd));
                let x = fsx(who.fs_ioc_fsgetxattr(fd));
                who.close(fd).unwrap();
                (g, x)
            }
            Err(e) => (format!("open {e}"), "-".to_string()),
        };
        let a = attrs_of(who.statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS));
        self.log(&format!("{what}: flags"), format!("{g}; {x}; {a}"));
    }

    fn state(&self, what: &str, path: &[u8]) {
        self.state_by(self.p, what, path)
    }

    /// The flags of the file open on `fd` of `who`.
    fn fd_state_by(&self, who: &dyn ProcessApi, what: &str, fd: Fd) {
        let g = hex(who.fs_ioc_getflags(fd));
        let x = fsx(who.fs_ioc_fsgetxattr(fd));
        let a = attrs_of(who.statx(fd, b"", AT_EMPTY_PATH, STATX_BASIC_STATS));
        self.log(&format!("{what}: flags"), format!("{g}; {x}; {a}"));
    }

    /// SETFLAGS on `path` as `who`, through a read-only descriptor.
    fn set_by(&self, who: &dyn ProcessApi, what: &str, path: &[u8], flags: u32) {
        let r = who.open(path, O_RDONLY | O_NONBLOCK, 0).and_then(|fd| {
            let r = who.fs_ioc_setflags(fd, flags);
            who.close(fd).unwrap();
            r
        });
        self.log(what, unit(r));
    }

    fn set(&self, what: &str, path: &[u8], flags: u32) {
        self.set_by(self.p, what, path, flags)
    }

    /// A protected file's section start: `path` opened for writing, for
    /// reading and writing, for appending and for reading before `flag`
    /// (named `flag_name`) is set through the read-only descriptor, then
    /// the flags read back and every open of `OPENS` tried. The four
    /// descriptors, in that order.
    fn protect(&self, label: &str, path: &[u8], flag: u32, flag_name: &str) -> [Fd; 4] {
        let w = self.open(&format!("{label}: open O_WRONLY before"), path, O_WRONLY);
        let rw = self.open(&format!("{label}: open O_RDWR before"), path, O_RDWR);
        let ap = self.open(
            &format!("{label}: open O_WRONLY|O_APPEND before"),
            path,
            O_WRONLY | O_APPEND,
        );
        let ro = self.open(&format!("{label}: open O_RDONLY before"), path, O_RDONLY);
        self.times(&format!("{label}: SETFLAGS {flag_name}"), path, || {
            unit(self.p.fs_ioc_setflags(ro, flag))
        });
        self.state(label, path);
        for (name, flags) in OPENS {
            self.try_open(&format!("{label}: open {name}"), path, flags);
        }
        [w, rw, ap, ro]
    }

    /// `op`'s result, and whether it changed `path`'s ctime and mtime
    /// (read by lstat before and after, the clock given time to move).
    fn times(&self, what: &str, path: &[u8], op: impl FnOnce() -> String) {
        let before = self.p.lstat(path);
        std::thread::sleep(Duration::from_millis(15));
        let r = op();
        let after = self.p.lstat(path);
        let changes = match (before, after) {
            (Ok(b), Ok(a)) => format!(
                "ctime {}, mtime {}",
                if a.ctime != b.ctime {
                    "changed"
                } else {
                    "kept"
                },
                if a.mtime != b.mtime {
                    "changed"
                } else {
                    "kept"
                }
            ),
            (b, a) => format!("lstat {:?} {:?}", b.err(), a.err()),
        };
        self.log(what, format!("{r}; {changes}"));
    }

    /// The bytes of `path` (up to 64).
    fn content(&self, what: &str, path: &[u8]) {
        let r = self.p.open(path, O_RDONLY, 0).and_then(|fd| {
            let mut buf = [0u8; 64];
            let n = self.p.pread(fd, &mut buf, 0);
            self.p.close(fd).unwrap();
            n.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
        });
        self.log(&format!("{what}: content"), s(r, |c| format!("{c:?}")));
    }

    /// Whether a read of `path` (through `fd`, or a fresh descriptor)
    /// kept its access time, set to OLD (and the mtime to OLD + 1000)
    /// just before.
    fn atime_kept(&self, what: &str, path: &[u8], fd: Option<Fd>) {
        let p = self.p;
        let times = [Timespec::new(OLD, 0), Timespec::new(OLD + 1000, 0)];
        let r = p
            .utimensat(AT_FDCWD, path, Some(times), AT_SYMLINK_NOFOLLOW)
            .and_then(|()| {
                let opened = fd.is_none();
                let fd = match fd {
                    Some(fd) => fd,
                    None => p.open(path, O_RDONLY, 0)?,
                };
                let st = p.fstat(fd)?;
                let n = if st.mode & S_IFMT == S_IFDIR {
                    p.lseek(fd, 0, SEEK_SET)
                        .and_then(|_| p.getdents64(fd, &mut [0u8; 4096]))
                } else {
                    p.pread(fd, &mut [0u8; 4], 0)
                };
                if opened {
                    p.close(fd).unwrap();
                }
                n
            })
            .and_then(|_| p.lstat(path))
            .map(|st| st.atime.sec == OLD);
        self.log(
            &format!("{what}: atime kept after a read"),
            s(r, |k| k.to_string()),
        );
    }

    fn into_log(self) -> Log {
        self.log.into_inner()
    }
}

/// Makes a regular file holding `data` (mode 0644).
fn mkfile(p: &dyn ProcessApi, path: &[u8], data: &[u8]) -> SysResult<()> {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)?;
    let r = p.write(fd, data).map(|_| ());
    p.close(fd)?;
    r
}

/// The tree the script starts from, made by root; its result is logged.
fn setup(p: &dyn ProcessApi) -> String {
    let r: SysResult<()> = (|| {
        p.mkdir(b"/d", 0o755)?;
        mkfile(p, b"/d/f", b"hello")?;
        mkfile(p, b"/d/src", b"source bytes")?;
        p.mkdir(b"/u", 0o777)?;
        p.chmod(b"/u", 0o777)?;
        p.mknodat(AT_FDCWD, b"/d/fifo", S_IFIFO | 0o666, 0)?;
        p.mknodat(AT_FDCWD, b"/d/chr", S_IFCHR | 0o666, 0)?;
        p.mknodat(AT_FDCWD, b"/d/blk", S_IFBLK | 0o666, 0)?;
        p.symlink(b"f", b"/d/sl")?;
        Ok(())
    })();
    unit(r)
}

/// The script, with `user` a second process of uid 1000, ended at the end.
fn script<P: ProcessApi>(p: &P, user: P) -> Log {
    let log = script_steps(p, &user);
    user.exit();
    log
}

fn script_steps(p: &dyn ProcessApi, u: &dyn ProcessApi) -> Log {
    let r = Run {
        p,
        u,
        log: RefCell::new(Log::new()),
    };
    p.umask(0o022);
    r.log("setup", setup(p));
    errors(&r);
    fsxattr_cases(&r);
    setflags_cases(&r);
    ctime_cases(&r);
    readonly_mounts(&r);
    immutable_file(&r);
    append_file(&r);
    immutable_dir(&r);
    append_dir(&r);
    inheritance(&r);
    noatime(&r);
    non_root(&r);
    memfds(&r);
    more_orders(&r);
    statx_attributes(&r);
    file_attr_calls(&r);
    r.into_log()
}

/// The four ioctls on one descriptor: GETFLAGS, SETFLAGS(0),
/// SETFLAGS(NODUMP), FSGETXATTR, FSSETXATTR of no flags, of a bit outside
/// FS_XFLAGS_MASK, of REALTIME.
fn four(r: &Run, who: &dyn ProcessApi, what: &str, fd: Fd) {
    r.log(&format!("{what}: GETFLAGS"), hex(who.fs_ioc_getflags(fd)));
    r.log(
        &format!("{what}: SETFLAGS 0"),
        unit(who.fs_ioc_setflags(fd, 0)),
    );
    r.log(
        &format!("{what}: SETFLAGS NODUMP"),
        unit(who.fs_ioc_setflags(fd, FS_NODUMP_FL)),
    );
    r.log(
        &format!("{what}: SETFLAGS SYNC"),
        unit(who.fs_ioc_setflags(fd, FS_SYNC_FL)),
    );
    r.log(
        &format!("{what}: FSGETXATTR"),
        fsx(who.fs_ioc_fsgetxattr(fd)),
    );
    r.log(
        &format!("{what}: FSSETXATTR 0"),
        unit(who.fs_ioc_fssetxattr(fd, &xf(0))),
    );
    r.log(
        &format!("{what}: FSSETXATTR 0x40000"),
        unit(who.fs_ioc_fssetxattr(fd, &xf(0x40000))),
    );
    r.log(
        &format!("{what}: FSSETXATTR 0x4"),
        unit(who.fs_ioc_fssetxattr(fd, &xf(0x4))),
    );
    r.log(
        &format!("{what}: FSSETXATTR REALTIME"),
        unit(who.fs_ioc_fssetxattr(fd, &xf(FS_XFLAG_REALTIME))),
    );
    r.log(
        &format!("{what}: FSSETXATTR projid -1"),
        unit(who.fs_ioc_fssetxattr(
            fd,
            &FsXattr {
                projid: u32::MAX,
                ..FsXattr::default()
            },
        )),
    );
}

/// EBADF, ENOTTY and the descriptors that are not a tmpfs inode's.
fn errors(r: &Run) {
    let p = r.p;
    four(r, p, "fd 99", 99);
    four(r, p, "fd -1", -1);
    let opath = r.open("O_PATH /d/f", b"/d/f", O_PATH);
    four(r, p, "O_PATH file", opath);
    let opath_dir = r.open("O_PATH /d", b"/d", O_PATH | O_DIRECTORY);
    four(r, p, "O_PATH directory", opath_dir);
    let opath_link = r.open("O_PATH|O_NOFOLLOW /d/sl", b"/d/sl", O_PATH | O_NOFOLLOW);
    four(r, p, "O_PATH symlink", opath_link);
    let [pr, pw] = p.pipe2(O_NONBLOCK).unwrap_or([-1, -1]);
    four(r, p, "pipe read end", pr);
    four(r, p, "pipe write end", pw);
    let [sa, sb] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap_or([-1, -1]);
    four(r, p, "socketpair", sa);
    let sd = p.socket(AF_UNIX, SOCK_DGRAM, 0).unwrap_or(-1);
    four(r, p, "datagram socket", sd);
    r.log("bind /d/sock", unit(p.bind(sd, b"/d/sock")));
    four(r, p, "bound socket", sd);
    let ev = p.eventfd(0, 0).unwrap_or(-1);
    four(r, p, "eventfd", ev);
    let ep = p.epoll_create1(0).unwrap_or(-1);
    four(r, p, "epoll", ep);
    let ino = p.inotify_init1(0).unwrap_or(-1);
    four(r, p, "inotify", ino);
    let fifo = r.open("open /d/fifo O_RDWR", b"/d/fifo", O_RDWR);
    four(r, p, "FIFO O_RDWR", fifo);
    let fifo_r = r.open(
        "open /d/fifo O_RDONLY|O_NONBLOCK",
        b"/d/fifo",
        O_RDONLY | O_NONBLOCK,
    );
    four(r, p, "FIFO O_RDONLY", fifo_r);
    // Device nodes have no driver (open is ENXIO on both sides for a
    // node of device 0), sockets cannot be opened: O_PATH only.
    r.try_open("open /d/chr", b"/d/chr", O_RDONLY);
    r.try_open("open /d/blk", b"/d/blk", O_RDONLY);
    r.try_open("open /d/sock", b"/d/sock", O_RDONLY);
    r.try_open("open /d/sl O_NOFOLLOW", b"/d/sl", O_RDONLY | O_NOFOLLOW);
    let chr = r.open("O_PATH /d/chr", b"/d/chr", O_PATH);
    four(r, p, "O_PATH device", chr);
    let sockp = r.open("O_PATH /d/sock", b"/d/sock", O_PATH);
    four(r, p, "O_PATH socket", sockp);
    // A regular file, a directory: they work, and the changes stay.
    let f = r.open("open /d/f O_RDONLY", b"/d/f", O_RDONLY);
    four(r, p, "file O_RDONLY", f);
    r.state("after the file's four", b"/d/f");
    r.log("file: SETFLAGS 0 again", unit(p.fs_ioc_setflags(f, 0)));
    let wo = r.open("open /d/f O_WRONLY", b"/d/f", O_WRONLY);
    r.log("O_WRONLY file: GETFLAGS", hex(p.fs_ioc_getflags(wo)));
    r.log(
        "O_WRONLY file: SETFLAGS NOATIME",
        unit(p.fs_ioc_setflags(wo, FS_NOATIME_FL)),
    );
    r.log("O_WRONLY file: SETFLAGS 0", unit(p.fs_ioc_setflags(wo, 0)));
    let d = r.open("open /d O_DIRECTORY", b"/d", O_RDONLY | O_DIRECTORY);
    four(r, p, "directory", d);
    r.log("directory: SETFLAGS 0 again", unit(p.fs_ioc_setflags(d, 0)));
    let root = r.open("open /", b"/", O_RDONLY | O_DIRECTORY);
    r.log("root: GETFLAGS", hex(p.fs_ioc_getflags(root)));
    r.log("root: FSGETXATTR", fsx(p.fs_ioc_fsgetxattr(root)));
    // A closed descriptor.
    r.log("close the file", unit(p.close(f)));
    r.log("closed fd: GETFLAGS", hex(p.fs_ioc_getflags(f)));
    r.log("closed fd: SETFLAGS", unit(p.fs_ioc_setflags(f, 0)));
    for fd in [
        opath, opath_dir, opath_link, pr, pw, sa, sb, sd, ev, ep, ino,
    ] {
        p.close(fd).unwrap_or(());
    }
    for fd in [fifo, fifo_r, chr, sockp, wo, d, root] {
        p.close(fd).unwrap_or(());
    }
}

/// FSSETXATTR's cases on a file and a directory, each followed by what
/// GETFLAGS and FSGETXATTR read back.
fn fsxattr_cases(r: &Run) {
    let p = r.p;
    let x = |xflags: u32, extsize: u32, nextents: u32, projid: u32, cowextsize: u32| FsXattr {
        xflags,
        extsize,
        nextents,
        projid,
        cowextsize,
    };
    let file_cases: Vec<(&str, FsXattr)> = vec![
        ("0", xf(0)),
        ("NODUMP", xf(FS_XFLAG_NODUMP)),
        ("NODUMP|NOATIME", xf(FS_XFLAG_NODUMP | FS_XFLAG_NOATIME)),
        ("IMMUTABLE", xf(FS_XFLAG_IMMUTABLE)),
        ("0 (clears IMMUTABLE)", xf(0)),
        ("APPEND|NODUMP", xf(FS_XFLAG_APPEND | FS_XFLAG_NODUMP)),
        (
            "IMMUTABLE|APPEND|NODUMP|NOATIME",
            xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND | FS_XFLAG_NODUMP | FS_XFLAG_NOATIME),
        ),
        ("NODUMP again", xf(FS_XFLAG_NODUMP)),
        ("SYNC", xf(FS_XFLAG_SYNC)),
        ("REALTIME", xf(FS_XFLAG_REALTIME)),
        ("PREALLOC", xf(FS_XFLAG_PREALLOC)),
        ("bit 0x4 (outside the mask)", xf(0x4)),
        ("RTINHERIT", xf(FS_XFLAG_RTINHERIT)),
        ("PROJINHERIT", xf(FS_XFLAG_PROJINHERIT)),
        ("NOSYMLINKS", xf(FS_XFLAG_NOSYMLINKS)),
        ("NODEFRAG", xf(FS_XFLAG_NODEFRAG)),
        ("FILESTREAM", xf(FS_XFLAG_FILESTREAM)),
        ("DAX", xf(FS_XFLAG_DAX)),
        ("0x20000 (outside)", xf(0x20000)),
        ("0x40000 (outside)", xf(0x40000)),
        ("0x40000000 (outside)", xf(0x4000_0000)),
        (
            "IMMUTABLE|REALTIME",
            xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_REALTIME),
        ),
        ("IMMUTABLE|0x40000", xf(FS_XFLAG_IMMUTABLE | 0x40000)),
        ("EXTSIZE, extsize 0", xf(FS_XFLAG_EXTSIZE)),
        (
            "EXTSIZE|NOATIME, extsize 0",
            xf(FS_XFLAG_EXTSIZE | FS_XFLAG_NOATIME),
        ),
        ("EXTSIZE, extsize 4096", x(FS_XFLAG_EXTSIZE, 4096, 0, 0, 0)),
        ("extsize 4096 alone", x(0, 4096, 0, 0, 0)),
        ("EXTSZINHERIT on a file", xf(FS_XFLAG_EXTSZINHERIT)),
        (
            "EXTSZINHERIT|0x40000 on a file",
            xf(FS_XFLAG_EXTSZINHERIT | 0x40000),
        ),
        ("COWEXTSIZE, cowextsize 0", xf(FS_XFLAG_COWEXTSIZE)),
        (
            "COWEXTSIZE, cowextsize 4096",
            x(FS_XFLAG_COWEXTSIZE, 0, 0, 0, 4096),
        ),
        ("cowextsize 4096 alone", x(0, 0, 0, 0, 4096)),
        ("projid 5", x(0, 0, 0, 5, 0)),
        ("projid -1", x(0, 0, 0, u32::MAX, 0)),
        ("projid -2", x(0, 0, 0, u32::MAX - 1, 0)),
        (
            "projid -1 with REALTIME",
            x(FS_XFLAG_REALTIME, 0, 0, u32::MAX, 0),
        ),
        (
            "projid -1 with EXTSZINHERIT",
            x(FS_XFLAG_EXTSZINHERIT, 0, 0, u32::MAX, 0),
        ),
        ("IMMUTABLE with projid 5", x(FS_XFLAG_IMMUTABLE, 0, 0, 5, 0)),
        ("NODUMP with nextents 7", x(FS_XFLAG_NODUMP, 0, 7, 0, 0)),
        ("HASATTR|NOATIME", xf(FS_XFLAG_HASATTR | FS_XFLAG_NOATIME)),
        ("HASATTR alone", xf(FS_XFLAG_HASATTR)),
        ("HASATTR|0x40000", xf(FS_XFLAG_HASATTR | 0x40000)),
        ("every xflag of the mask", xf(FS_XFLAGS_MASK)),
        ("all bits", xf(u32::MAX)),
        ("0 at the end", xf(0)),
    ];
    mkfile(p, b"/d/x", b"x").unwrap_or(());
    let f = r.open("open /d/x", b"/d/x", O_RDONLY);
    fssetxattr_each(r, "file", f, &file_cases);
    p.close(f).unwrap_or(());
    let dir_cases: Vec<(&str, FsXattr)> = vec![
        ("NODUMP", xf(FS_XFLAG_NODUMP)),
        ("EXTSIZE, extsize 0", xf(FS_XFLAG_EXTSIZE)),
        ("EXTSIZE, extsize 4096", x(FS_XFLAG_EXTSIZE, 4096, 0, 0, 0)),
        ("EXTSZINHERIT, extsize 0", xf(FS_XFLAG_EXTSZINHERIT)),
        (
            "EXTSZINHERIT|NOATIME, extsize 0",
            xf(FS_XFLAG_EXTSZINHERIT | FS_XFLAG_NOATIME),
        ),
        (
            "EXTSZINHERIT, extsize 4096",
            x(FS_XFLAG_EXTSZINHERIT, 4096, 0, 0, 0),
        ),
        ("COWEXTSIZE, cowextsize 0", xf(FS_XFLAG_COWEXTSIZE)),
        (
            "COWEXTSIZE, cowextsize 8",
            x(FS_XFLAG_COWEXTSIZE, 0, 0, 0, 8),
        ),
        ("DAX", xf(FS_XFLAG_DAX)),
        ("PROJINHERIT", xf(FS_XFLAG_PROJINHERIT)),
        ("RTINHERIT", xf(FS_XFLAG_RTINHERIT)),
        (
            "projid -1 with EXTSIZE",
            x(FS_XFLAG_EXTSIZE, 0, 0, u32::MAX, 0),
        ),
        ("IMMUTABLE|APPEND", xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND)),
        ("0", xf(0)),
    ];
    p.mkdir(b"/d/xd", 0o755).unwrap_or(());
    let d = r.open("open /d/xd", b"/d/xd", O_RDONLY | O_DIRECTORY);
    fssetxattr_each(r, "directory", d, &dir_cases);
    p.close(d).unwrap_or(());
}

/// FSSETXATTR of each case on `fd` (a `kind`), each followed by what
/// GETFLAGS and FSGETXATTR read back.
fn fssetxattr_each(r: &Run, kind: &str, fd: Fd, cases: &[(&str, FsXattr)]) {
    let p = r.p;
    for (what, a) in cases {
        let res = unit(p.fs_ioc_fssetxattr(fd, a));
        let back = format!(
            "{}; {}",
            hex(p.fs_ioc_getflags(fd)),
            fsx(p.fs_ioc_fsgetxattr(fd))
        );
        r.log(
            &format!("{kind} FSSETXATTR {what}"),
            format!("{res} => {back}"),
        );
    }
}

/// SETFLAGS's cases on a file and a directory, each followed by what
/// GETFLAGS, FSGETXATTR and statx read back.
fn setflags_cases(r: &Run) {
    let p = r.p;
    let cases: [(&str, u32); 27] = [
        ("0", 0),
        ("NODUMP", FS_NODUMP_FL),
        ("NOATIME", FS_NOATIME_FL),
        ("IMMUTABLE", FS_IMMUTABLE_FL),
        ("APPEND", FS_APPEND_FL),
        (
            "all four",
            FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL,
        ),
        (
            "all four again",
            FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL,
        ),
        ("SYNC (0x8)", FS_SYNC_FL),
        ("IMMUTABLE|SYNC", FS_IMMUTABLE_FL | FS_SYNC_FL),
        ("NODUMP|SYNC", FS_NODUMP_FL | FS_SYNC_FL),
        ("SECRM (0x1)", 0x1),
        ("UNRM (0x2)", 0x2),
        ("COMPR (0x4)", 0x4),
        ("DIRSYNC (0x10000)", 0x1_0000),
        ("TOPDIR (0x20000)", 0x2_0000),
        ("EXTENT (0x80000)", 0x8_0000),
        ("VERITY (0x100000)", FS_VERITY_FL),
        ("NOCOW (0x800000)", 0x80_0000),
        ("DAX (0x2000000)", FS_DAX_FL),
        ("INLINE_DATA (0x10000000)", 0x1000_0000),
        ("PROJINHERIT (0x20000000)", FS_PROJINHERIT_FL),
        ("CASEFOLD (0x40000000)", 0x4000_0000),
        ("RESERVED (0x80000000)", 0x8000_0000),
        ("every bit", u32::MAX),
        ("NOATIME|NODUMP", FS_NOATIME_FL | FS_NODUMP_FL),
        ("IMMUTABLE|APPEND", FS_IMMUTABLE_FL | FS_APPEND_FL),
        ("0 at the end", 0),
    ];
    for (kind, path, flags) in [
        ("file", &b"/d/x"[..], O_RDONLY),
        ("directory", &b"/d/xd"[..], O_RDONLY | O_DIRECTORY),
    ] {
        let fd = r.open(&format!("open the {kind}"), path, flags);
        for (what, v) in cases {
            let res = unit(p.fs_ioc_setflags(fd, v));
            let back = format!(
                "{}; {}; {}",
                hex(p.fs_ioc_getflags(fd)),
                fsx(p.fs_ioc_fsgetxattr(fd)),
                attrs_of(p.statx(fd, b"", AT_EMPTY_PATH, STATX_BASIC_STATS))
            );
            r.log(
                &format!("{kind} SETFLAGS {what}"),
                format!("{res} => {back}"),
            );
        }
        p.close(fd).unwrap_or(());
    }
}

/// Which calls change ctime (and mtime): a SETFLAGS that succeeds, even
/// to the same flags; not one that fails, nor the reads.
fn ctime_cases(r: &Run) {
    let p = r.p;
    let path = b"/d/x";
    let fd = r.open("ctime: open /d/x", path, O_RDONLY);
    let set = |v: u32| move || unit(p.fs_ioc_setflags(fd, v));
    let setx = |a: FsXattr| move || unit(p.fs_ioc_fssetxattr(fd, &a));
    r.times("ctime: SETFLAGS NODUMP", path, set(FS_NODUMP_FL));
    r.times("ctime: SETFLAGS NODUMP again", path, set(FS_NODUMP_FL));
    r.times("ctime: SETFLAGS SYNC (fails)", path, set(FS_SYNC_FL));
    r.times("ctime: GETFLAGS", path, || hex(p.fs_ioc_getflags(fd)));
    r.times("ctime: FSGETXATTR", path, || fsx(p.fs_ioc_fsgetxattr(fd)));
    r.times(
        "ctime: FSSETXATTR NOATIME",
        path,
        setx(xf(FS_XFLAG_NOATIME)),
    );
    r.times(
        "ctime: FSSETXATTR NOATIME again",
        path,
        setx(xf(FS_XFLAG_NOATIME)),
    );
    r.times(
        "ctime: FSSETXATTR HASATTR alone",
        path,
        setx(xf(FS_XFLAG_HASATTR)),
    );
    r.times(
        "ctime: FSSETXATTR EXTSIZE, extsize 0",
        path,
        setx(xf(FS_XFLAG_EXTSIZE)),
    );
    r.times(
        "ctime: FSSETXATTR REALTIME (fails)",
        path,
        setx(xf(FS_XFLAG_REALTIME)),
    );
    r.times("ctime: FSSETXATTR 0x40000 (fails)", path, setx(xf(0x40000)));
    r.times("ctime: SETFLAGS IMMUTABLE", path, set(FS_IMMUTABLE_FL));
    r.times("ctime: chown -1 -1 of an immutable file", path, || {
        unit(p.chown(path, u32::MAX, u32::MAX))
    });
    r.times("ctime: chmod of an immutable file (fails)", path, || {
        unit(p.chmod(path, 0o600))
    });
    r.times("ctime: SETFLAGS 0", path, set(0));
    r.times("ctime: SETFLAGS 0 again", path, set(0));
    p.close(fd).unwrap_or(());
    // As a non-owner (fails) and through the user's own file.
    let ufd = r.open_by(r.u, "ctime: user opens /d/x", path, O_RDONLY);
    r.times("ctime: user SETFLAGS (fails)", path, || {
        unit(r.u.fs_ioc_setflags(ufd, FS_NODUMP_FL))
    });
    r.u.close(ufd).unwrap_or(());
    // A directory's.
    let dpath = b"/d/xd";
    let dfd = r.open("ctime: open /d/xd", dpath, O_RDONLY | O_DIRECTORY);
    r.times("ctime: directory SETFLAGS NOATIME", dpath, || {
        unit(p.fs_ioc_setflags(dfd, FS_NOATIME_FL))
    });
    r.times("ctime: directory SETFLAGS 0", dpath, || {
        unit(p.fs_ioc_setflags(dfd, 0))
    });
    p.close(dfd).unwrap_or(());
}

/// EROFS through a read-only bind and on an instance remounted
/// read-only, and where it falls among the other errors.
fn readonly_mounts(r: &Run) {
    let p = r.p;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/m", 0o755)?;
        p.mount(b"none", b"/m", b"tmpfs", 0)?;
        mkfile(p, b"/m/f", b"data")?;
        mkfile(p, b"/m/i", b"immutable")?;
        p.mkdir(b"/m/dir", 0o755)?;
        p.mknodat(AT_FDCWD, b"/m/fifo", S_IFIFO | 0o666, 0)?;
        p.mkdir(b"/ro", 0o755)?;
        p.mount(b"/m", b"/ro", b"", MS_BIND)?;
        p.mount(b"", b"/ro", b"", MS_REMOUNT | MS_BIND | MS_RDONLY)?;
        Ok(())
    })();
    r.log("ro: mount /m, bind it read-only at /ro", unit(prep));
    r.set("ro: SETFLAGS NODUMP /m/f (writable)", b"/m/f", FS_NODUMP_FL);
    r.set("ro: SETFLAGS IMMUTABLE /m/i", b"/m/i", FS_IMMUTABLE_FL);
    r.state("ro: /ro/f", b"/ro/f");
    r.state("ro: /ro/dir", b"/ro/dir");
    r.state("ro: /ro/i", b"/ro/i");
    let f = r.open("ro: open /ro/f", b"/ro/f", O_RDONLY);
    four(r, p, "read-only bind, file", f);
    r.log(
        "read-only bind, file: SETFLAGS NODUMP (the same)",
        unit(p.fs_ioc_setflags(f, FS_NODUMP_FL)),
    );
    r.log(
        "read-only bind, file: FSSETXATTR projid -1",
        unit(p.fs_ioc_fssetxattr(
            f,
            &FsXattr {
                projid: u32::MAX,
                ..FsXattr::default()
            },
        )),
    );
    r.log(
        "read-only bind, file: FSSETXATTR EXTSZINHERIT",
        unit(p.fs_ioc_fssetxattr(f, &xf(FS_XFLAG_EXTSZINHERIT))),
    );
    r.log(
        "read-only bind, file: FSSETXATTR HASATTR|0x20000",
        unit(p.fs_ioc_fssetxattr(f, &xf(FS_XFLAG_HASATTR | 0x20000))),
    );
    let d = r.open("ro: open /ro/dir", b"/ro/dir", O_RDONLY | O_DIRECTORY);
    four(r, p, "read-only bind, directory", d);
    let fifo = r.open("ro: open /ro/fifo O_RDWR", b"/ro/fifo", O_RDWR);
    four(r, p, "read-only bind, FIFO", fifo);
    // The immutable file through the read-only bind: the flag's EPERM
    // comes before the mount's EROFS for an open, not for the names.
    r.try_open("ro: open /ro/i O_WRONLY", b"/ro/i", O_WRONLY);
    r.try_open("ro: open /ro/f O_WRONLY", b"/ro/f", O_WRONLY);
    r.try_open(
        "ro: open /ro/i O_RDONLY|O_TRUNC",
        b"/ro/i",
        O_RDONLY | O_TRUNC,
    );
    r.log("ro: access /ro/i W_OK", unit(p.access(b"/ro/i", W_OK)));
    r.log("ro: access /ro/f W_OK", unit(p.access(b"/ro/f", W_OK)));
    r.log("ro: unlink /ro/i", unit(p.unlink(b"/ro/i")));
    r.log("ro: chmod /ro/i", unit(p.chmod(b"/ro/i", 0o600)));
    r.log("ro: truncate /ro/i", unit(p.truncate(b"/ro/i", 0)));
    r.log(
        "ro: setxattr /ro/i",
        unit(p.setxattr(b"/ro/i", b"user.a", b"v", 0)),
    );
    r.log(
        "ro: utimensat /ro/i NULL",
        unit(p.utimensat(AT_FDCWD, b"/ro/i", None, 0)),
    );
    // The user, a non-owner: EROFS before EPERM; the mask's EOPNOTSUPP
    // before both.
    let uf = r.open_by(r.u, "ro: user opens /ro/f", b"/ro/f", O_RDONLY);
    four(r, r.u, "read-only bind, user", uf);
    r.u.close(uf).unwrap_or(());
    // The instance itself read-only: through both mounts.
    r.log("ro: close the FIFO", unit(p.close(fifo)));
    r.log(
        "ro: remount /m read-only",
        unit(p.mount(b"", b"/m", b"", MS_REMOUNT | MS_RDONLY)),
    );
    let mf = r.open("ro: open /m/f", b"/m/f", O_RDONLY);
    four(r, p, "read-only instance, file", mf);
    r.log(
        "read-only instance, old fd: SETFLAGS 0",
        unit(p.fs_ioc_setflags(f, 0)),
    );
    r.state("ro: /m/f", b"/m/f");
    r.try_open("ro: open /m/i O_WRONLY", b"/m/i", O_WRONLY);
    r.log("ro: access /m/i W_OK", unit(p.access(b"/m/i", W_OK)));
    r.log(
        "ro: remount /m read-write",
        unit(p.mount(b"", b"/m", b"", MS_REMOUNT)),
    );
    r.log(
        "read-write again: SETFLAGS 0",
        unit(p.fs_ioc_setflags(mf, 0)),
    );
    r.log(
        "read-only bind again: SETFLAGS 0",
        unit(p.fs_ioc_setflags(f, 0)),
    );
    r.state("ro: /m/f at the end", b"/m/f");
    for fd in [f, d, mf] {
        p.close(fd).unwrap_or(());
    }
    r.set("ro: SETFLAGS 0 /m/i", b"/m/i", 0);
}

/// What each time argument of utimensat does to `path`, as `who`.
fn utimes_cases(r: &Run, who: &dyn ProcessApi, what: &str, path: &[u8]) {
    let t = Timespec::new(OLD, 0);
    for (name, times) in [
        ("NULL", None),
        ("NOW NOW", Some([Timespec::NOW, Timespec::NOW])),
        ("OMIT OMIT", Some([Timespec::OMIT, Timespec::OMIT])),
        ("NOW OMIT", Some([Timespec::NOW, Timespec::OMIT])),
        ("OMIT NOW", Some([Timespec::OMIT, Timespec::NOW])),
        ("t OMIT", Some([t, Timespec::OMIT])),
        ("t t", Some([t, t])),
    ] {
        r.log(
            &format!("{what}: utimensat {name}"),
            unit(who.utimensat(AT_FDCWD, path, times, 0)),
        );
    }
}

/// The name and xattr calls on `path` (with `other` a plain file in the
/// same directory, `dir` a directory to move to), as root.
fn name_cases(r: &Run, what: &str, path: &[u8], other: &[u8], dir: &[u8]) {
    let p = r.p;
    let elsewhere = [dir, b"/moved"].concat();
    let new = [path, b".new"].concat();
    r.log(&format!("{what}: unlink"), unit(p.unlink(path)));
    r.log(&format!("{what}: rename"), unit(p.rename(path, &new)));
    r.log(
        &format!("{what}: rename to another directory"),
        unit(p.rename(path, &elsewhere)),
    );
    r.log(
        &format!("{what}: rename NOREPLACE"),
        unit(p.renameat2(AT_FDCWD, path, AT_FDCWD, &new, RENAME_NOREPLACE)),
    );
    r.log(
        &format!("{what}: rename onto itself"),
        unit(p.rename(path, path)),
    );
    r.log(
        &format!("{what}: rename another file over it"),
        unit(p.rename(other, path)),
    );
    r.log(
        &format!("{what}: rename it over another file"),
        unit(p.rename(path, other)),
    );
    r.log(
        &format!("{what}: RENAME_EXCHANGE"),
        unit(p.renameat2(AT_FDCWD, path, AT_FDCWD, other, RENAME_EXCHANGE)),
    );
    r.log(&format!("{what}: link"), unit(p.link(path, &new)));
    r.log(
        &format!("{what}: link into another directory"),
        unit(p.link(path, &elsewhere)),
    );
    let fd = p.open(path, O_RDONLY, 0).unwrap_or(-1);
    r.log(
        &format!("{what}: linkat AT_EMPTY_PATH"),
        unit(p.linkat(fd, b"", AT_FDCWD, &new, AT_EMPTY_PATH)),
    );
    for (name, call) in [
        ("setxattr user.a", p.setxattr(path, b"user.a", b"v", 0)),
        (
            "setxattr trusted.a",
            p.setxattr(path, b"trusted.a", b"v", 0),
        ),
        (
            "setxattr user.pre (exists)",
            p.setxattr(path, b"user.pre", b"w", 0),
        ),
        (
            "setxattr user.a XATTR_REPLACE (absent)",
            p.setxattr(path, b"user.a", b"v", XATTR_REPLACE),
        ),
        ("lsetxattr user.a", p.lsetxattr(path, b"user.a", b"v", 0)),
        ("fsetxattr user.a", p.fsetxattr(fd, b"user.a", b"v", 0)),
        ("removexattr user.pre", p.removexattr(path, b"user.pre")),
        (
            "removexattr trusted.pre",
            p.removexattr(path, b"trusted.pre"),
        ),
        (
            "removexattr user.absent",
            p.removexattr(path, b"user.absent"),
        ),
        ("fremovexattr user.pre", p.fremovexattr(fd, b"user.pre")),
    ] {
        r.log(&format!("{what}: {name}"), unit(call));
    }
    let mut buf = [0u8; 64];
    r.log(
        &format!("{what}: getxattr user.pre"),
        s(p.getxattr(path, b"user.pre", &mut buf), |n| {
            format!("{:?}", String::from_utf8_lossy(&buf[..n]))
        }),
    );
    let mut buf = [0u8; 128];
    r.log(
        &format!("{what}: listxattr"),
        s(p.listxattr(path, &mut buf), |n| {
            let mut names: Vec<String> = buf[..n]
                .split(|&b| b == 0)
                .filter(|n| !n.is_empty())
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            names.sort();
            names.join(",")
        }),
    );
    p.close(fd).unwrap_or(());
}

/// The attribute calls on `path`, as root.
fn attr_cases(r: &Run, what: &str, path: &[u8]) {
    let p = r.p;
    let fd = p.open(path, O_RDONLY | O_NONBLOCK, 0).unwrap_or(-1);
    r.log(&format!("{what}: chmod"), unit(p.chmod(path, 0o600)));
    r.log(
        &format!("{what}: chmod to its mode"),
        unit(p.chmod(path, 0o644)),
    );
    r.log(&format!("{what}: fchmod"), unit(p.fchmod(fd, 0o600)));
    r.log(&format!("{what}: chown 0 0"), unit(p.chown(path, 0, 0)));
    r.log(
        &format!("{what}: chown 1000 -1"),
        unit(p.chown(path, 1000, u32::MAX)),
    );
    r.log(
        &format!("{what}: chown -1 0"),
        unit(p.chown(path, u32::MAX, 0)),
    );
    r.log(
        &format!("{what}: chown -1 -1"),
        unit(p.chown(path, u32::MAX, u32::MAX)),
    );
    r.log(
        &format!("{what}: fchown -1 -1"),
        unit(p.fchown(fd, u32::MAX, u32::MAX)),
    );
    r.log(
        &format!("{what}: fchownat -1 -1 AT_SYMLINK_NOFOLLOW"),
        unit(p.fchownat(AT_FDCWD, path, u32::MAX, u32::MAX, AT_SYMLINK_NOFOLLOW)),
    );
    utimes_cases(r, p, what, path);
    r.log(
        &format!("{what}: futimens NULL"),
        unit(p.futimens(fd, None)),
    );
    r.log(
        &format!("{what}: futimens t t"),
        unit(p.futimens(fd, Some([Timespec::new(OLD, 0); 2]))),
    );
    for (name, mode) in [
        ("F_OK", F_OK),
        ("R_OK", R_OK),
        ("W_OK", W_OK),
        ("X_OK", X_OK),
    ] {
        r.log(
            &format!("{what}: access {name}"),
            unit(p.access(path, mode)),
        );
    }
    r.log(
        &format!("{what}: faccessat W_OK AT_EACCESS"),
        unit(p.faccessat(AT_FDCWD, path, W_OK, AT_EACCESS)),
    );
    p.close(fd).unwrap_or(());
}

/// The open flags tried on a flagged file.
const OPENS: [(&str, i32); 13] = [
    ("O_RDONLY", O_RDONLY),
    ("O_WRONLY", O_WRONLY),
    ("O_RDWR", O_RDWR),
    ("O_RDONLY|O_TRUNC", O_RDONLY | O_TRUNC),
    ("O_WRONLY|O_APPEND", O_WRONLY | O_APPEND),
    ("O_RDWR|O_APPEND", O_RDWR | O_APPEND),
    ("O_WRONLY|O_APPEND|O_TRUNC", O_WRONLY | O_APPEND | O_TRUNC),
    ("O_RDONLY|O_APPEND", O_RDONLY | O_APPEND),
    ("O_RDONLY|O_CREAT", O_RDONLY | O_CREAT),
    ("O_WRONLY|O_CREAT", O_WRONLY | O_CREAT),
    ("O_WRONLY|O_CREAT|O_APPEND", O_WRONLY | O_CREAT | O_APPEND),
    ("O_RDONLY|O_CREAT|O_EXCL", O_RDONLY | O_CREAT | O_EXCL),
    ("O_PATH", O_PATH),
];

/// fallocate's cases on `fd` (open for writing) and `ro` (read-only).
fn fallocate_cases(r: &Run, what: &str, fd: Fd, ro: Fd) {
    let p = r.p;
    let keep = FALLOC_FL_KEEP_SIZE;
    let punch = FALLOC_FL_PUNCH_HOLE;
    for (name, f, mode, off, len) in [
        ("mode 0", fd, 0, 0, 100),
        ("mode 0 past the end", fd, 0, 0, 8192),
        ("KEEP_SIZE", fd, keep, 0, 16384),
        ("PUNCH_HOLE|KEEP_SIZE", fd, punch | keep, 0, 1),
        ("PUNCH_HOLE alone", fd, punch, 0, 1),
        ("COLLAPSE_RANGE (0x8)", fd, 0x8, 0, 4096),
        ("ZERO_RANGE (0x10)", fd, 0x10, 0, 1),
        ("ZERO_RANGE|KEEP_SIZE", fd, 0x10 | keep, 0, 1),
        ("INSERT_RANGE (0x20)", fd, 0x20, 0, 4096),
        ("UNSHARE_RANGE (0x40)", fd, 0x40, 0, 1),
        ("len 0", fd, 0, 0, 0),
        ("offset -1", fd, 0, -1, 1),
        ("mode 0x100", fd, 0x100, 0, 1),
        ("read-only fd, mode 0", ro, 0, 0, 100),
        ("read-only fd, PUNCH_HOLE|KEEP_SIZE", ro, punch | keep, 0, 1),
        ("read-only fd, len 0", ro, 0, 0, 0),
        ("read-only fd, mode 0x100", ro, 0x100, 0, 1),
        ("read-only fd, PUNCH_HOLE alone", ro, punch, 0, 1),
    ] {
        r.log(
            &format!("{what}: fallocate {name}"),
            unit(p.fallocate(f, mode, off, len)),
        );
    }
}

/// A file with FS_IMMUTABLE_FL, as root: descriptors opened before the
/// flag keep working, nothing else changes it.
fn immutable_file(r: &Run) {
    let p = r.p;
    let path = b"/d/i";
    let prep: SysResult<()> = (|| {
        mkfile(p, path, b"0123456789")?;
        mkfile(p, b"/d/other", b"other")?;
        p.mkdir(b"/d/sub", 0o755)?;
        p.setxattr(path, b"user.pre", b"v", 0)?;
        p.setxattr(path, b"trusted.pre", b"v", 0)?;
        Ok(())
    })();
    r.log("immutable: setup", unit(prep));
    let [w, rw, ap, ro] = r.protect("immutable", path, FS_IMMUTABLE_FL, "IMMUTABLE");
    r.try_open(
        "immutable: open O_RDONLY|O_NOATIME",
        path,
        O_RDONLY | O_NOATIME,
    );
    // Descriptors from before the flag.
    r.log("immutable: write (old fd)", num(p.write(w, b"ab")));
    r.log(
        "immutable: pwrite (old O_RDWR fd)",
        num(p.pwrite(rw, b"XY", 4)),
    );
    r.log(
        "immutable: write (old O_APPEND fd)",
        num(p.write(ap, b"++")),
    );
    r.log(
        "immutable: writev (old fd)",
        num(p.writev(w, &[b"c", b"d"])),
    );
    r.content("immutable: after the writes", path);
    r.log("immutable: ftruncate (old fd)", unit(p.ftruncate(w, 6)));
    r.log(
        "immutable: ftruncate (old O_RDWR fd)",
        unit(p.ftruncate(rw, 8)),
    );
    r.log(
        "immutable: ftruncate (read-only fd)",
        unit(p.ftruncate(ro, 1)),
    );
    r.log("immutable: truncate by path", unit(p.truncate(path, 2)));
    r.log(
        "immutable: truncate by path to its size",
        unit(p.truncate(path, 8)),
    );
    r.content("immutable: after the truncates", path);
    r.log("immutable: fsync (old fd)", unit(p.fsync(w)));
    // fcntl F_SETFL on the old descriptors.
    r.log(
        "immutable: F_SETFL O_APPEND (old fd)",
        s(p.fcntl(w, F_SETFL, i64::from(O_APPEND)), |v| v.to_string()),
    );
    r.log(
        "immutable: F_GETFL (old fd)",
        s(p.fcntl(w, F_GETFL, 0), |v| format!("{:#o}", v & 0o7777777)),
    );
    r.log(
        "immutable: F_SETFL 0 (old fd)",
        s(p.fcntl(w, F_SETFL, 0), |v| v.to_string()),
    );
    r.log(
        "immutable: F_SETFL O_NOATIME (old fd)",
        s(p.fcntl(ro, F_SETFL, i64::from(O_NOATIME)), |v| {
            v.to_string()
        }),
    );
    // Data moved into it through the old descriptors.
    let src = r.open("immutable: open /d/src", b"/d/src", O_RDONLY);
    let mut off = 0i64;
    r.log(
        "immutable: copy_file_range into it",
        num(p.copy_file_range(src, Some(&mut off), w, None, 4, 0)),
    );
    let mut off = 0i64;
    r.log(
        "immutable: copy_file_range into it (O_RDWR fd)",
        num(p.copy_file_range(src, Some(&mut off), rw, Some(&mut 0), 4, 0)),
    );
    let (mut oi, mut oo) = (0i64, 0i64);
    r.log(
        "immutable: copy_file_range from it",
        num(p.copy_file_range(ro, Some(&mut oi), rw, Some(&mut oo), 0, 0)),
    );
    let other = r.open("immutable: open /d/other O_RDWR", b"/d/other", O_RDWR);
    let mut oi = 0i64;
    r.log(
        "immutable: copy_file_range from it to another file",
        num(p.copy_file_range(ro, Some(&mut oi), other, None, 3, 0)),
    );
    let mut off = 0i64;
    r.log(
        "immutable: sendfile into it",
        num(p.sendfile(w, src, Some(&mut off), 3)),
    );
    let [pr, pw] = p.pipe2(O_NONBLOCK).unwrap_or([-1, -1]);
    p.write(pw, b"piped").unwrap_or(0);
    r.log(
        "immutable: splice into it",
        num(p.splice(pr, None, rw, Some(&mut 1), 5, 0)),
    );
    r.content("immutable: after copy, sendfile, splice", path);
    fallocate_cases(r, "immutable", w, ro);
    r.log(
        "immutable: fallocate of the O_APPEND fd",
        unit(p.fallocate(ap, 0, 0, 1)),
    );
    attr_cases(r, "immutable", path);
    name_cases(r, "immutable", path, b"/d/other", b"/d/sub");
    // A second name made before the flag: neither may go.
    p.fs_ioc_setflags(ro, 0).unwrap_or(());
    r.log(
        "immutable: link /d/i2 (flag off)",
        unit(p.link(path, b"/d/i2")),
    );
    r.log(
        "immutable: SETFLAGS IMMUTABLE again",
        unit(p.fs_ioc_setflags(ro, FS_IMMUTABLE_FL)),
    );
    r.state("immutable: its second name", b"/d/i2");
    r.log(
        "immutable: unlink the second name",
        unit(p.unlink(b"/d/i2")),
    );
    // Flags of an immutable file may still change (root).
    r.log(
        "immutable: SETFLAGS IMMUTABLE|NODUMP",
        unit(p.fs_ioc_setflags(w, FS_IMMUTABLE_FL | FS_NODUMP_FL)),
    );
    r.log(
        "immutable: FSSETXATTR IMMUTABLE|NOATIME",
        unit(p.fs_ioc_fssetxattr(w, &xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_NOATIME))),
    );
    r.state("immutable: flags changed", path);
    // The user (not the owner, no write permission): EPERM before EACCES.
    let u = r.u;
    r.try_open_by(u, "immutable: user opens O_WRONLY", path, O_WRONLY);
    r.try_open_by(
        u,
        "immutable: user opens O_RDONLY|O_TRUNC",
        path,
        O_RDONLY | O_TRUNC,
    );
    r.try_open_by(u, "immutable: user opens O_RDONLY", path, O_RDONLY);
    r.log("immutable: user access W_OK", unit(u.access(path, W_OK)));
    r.log("immutable: user access R_OK", unit(u.access(path, R_OK)));
    r.log(
        "immutable: user utimensat NULL",
        unit(u.utimensat(AT_FDCWD, path, None, 0)),
    );
    r.log(
        "immutable: user utimensat NULL of /d/other (control)",
        unit(u.utimensat(AT_FDCWD, b"/d/other", None, 0)),
    );
    r.log("immutable: user chmod", unit(u.chmod(path, 0o600)));
    r.log(
        "immutable: user chown -1 -1",
        unit(u.chown(path, u32::MAX, u32::MAX)),
    );
    r.log(
        "immutable: user setxattr",
        unit(u.setxattr(path, b"user.a", b"v", 0)),
    );
    r.log("immutable: user truncate", unit(u.truncate(path, 0)));
    // Cleared: everything works again.
    r.log("immutable: SETFLAGS 0", unit(p.fs_ioc_setflags(ro, 0)));
    r.try_open("immutable: cleared, open O_WRONLY", path, O_WRONLY);
    r.log("immutable: cleared, chmod", unit(p.chmod(path, 0o644)));
    r.log("immutable: cleared, rename", unit(p.rename(path, b"/d/i3")));
    r.log("immutable: cleared, unlink", unit(p.unlink(b"/d/i3")));
    for fd in [w, rw, ap, ro, src, other, pr, pw] {
        p.close(fd).unwrap_or(());
    }
}

/// A file with FS_APPEND_FL, as root: writes only, at the end for new
/// descriptors; no truncate, no names, no attribute changes.
fn append_file(r: &Run) {
    let p = r.p;
    let path = b"/d/a";
    let prep: SysResult<()> = (|| {
        mkfile(p, path, b"abc")?;
        p.setxattr(path, b"user.pre", b"v", 0)?;
        p.setxattr(path, b"trusted.pre", b"v", 0)?;
        Ok(())
    })();
    r.log("append: setup", unit(prep));
    let [w, rw, ap, ro] = r.protect("append", path, FS_APPEND_FL, "APPEND");
    let ap2 = r.open(
        "append: open O_WRONLY|O_APPEND after",
        path,
        O_WRONLY | O_APPEND,
    );
    // Writes: old descriptors write where they are; O_APPEND ones at the end.
    r.log("append: write (old fd, at 0)", num(p.write(w, b"W")));
    r.log(
        "append: pwrite at 1 (old O_RDWR fd)",
        num(p.pwrite(rw, b"P", 1)),
    );
    r.log("append: write (old O_APPEND fd)", num(p.write(ap, b"+A")));
    r.log("append: write (new O_APPEND fd)", num(p.write(ap2, b"+B")));
    r.log(
        "append: pwrite at 0 (new O_APPEND fd)",
        num(p.pwrite(ap2, b"+C", 0)),
    );
    r.content("append: after the writes", path);
    r.log("append: ftruncate (old fd)", unit(p.ftruncate(w, 1)));
    r.log("append: ftruncate (O_APPEND fd)", unit(p.ftruncate(ap2, 1)));
    r.log("append: ftruncate to its size", unit(p.ftruncate(ap2, 9)));
    r.log("append: ftruncate (read-only fd)", unit(p.ftruncate(ro, 1)));
    r.log("append: truncate by path", unit(p.truncate(path, 1)));
    r.content("append: after the truncates", path);
    // F_SETFL: O_APPEND may not change, either way.
    for (name, fd, arg) in [
        ("F_SETFL 0 on the O_APPEND fd", ap2, 0),
        ("F_SETFL O_APPEND on the O_APPEND fd", ap2, O_APPEND),
        (
            "F_SETFL O_APPEND|O_NONBLOCK on the O_APPEND fd",
            ap2,
            O_APPEND | O_NONBLOCK,
        ),
        ("F_SETFL O_NONBLOCK on the O_APPEND fd", ap2, O_NONBLOCK),
        ("F_SETFL O_APPEND on the old fd", w, O_APPEND),
        ("F_SETFL 0 on the old fd", w, 0),
        ("F_SETFL O_APPEND on the read-only fd", ro, O_APPEND),
    ] {
        r.log(
            &format!("append: {name}"),
            s(p.fcntl(fd, F_SETFL, i64::from(arg)), |v| v.to_string()),
        );
    }
    r.log(
        "append: F_GETFL of the O_APPEND fd",
        s(p.fcntl(ap2, F_GETFL, 0), |v| {
            format!("{:#o}", v & 0o7777777)
        }),
    );
    // Data moved into it.
    let src = r.open("append: open /d/src", b"/d/src", O_RDONLY);
    let mut off = 0i64;
    r.log(
        "append: copy_file_range into it (old fd)",
        num(p.copy_file_range(src, Some(&mut off), w, None, 2, 0)),
    );
    let mut off = 0i64;
    r.log(
        "append: copy_file_range into it (O_APPEND fd)",
        num(p.copy_file_range(src, Some(&mut off), ap2, None, 2, 0)),
    );
    let mut off = 0i64;
    r.log(
        "append: sendfile into it (old fd)",
        num(p.sendfile(w, src, Some(&mut off), 2)),
    );
    let mut off = 0i64;
    r.log(
        "append: sendfile into it (O_APPEND fd)",
        num(p.sendfile(ap2, src, Some(&mut off), 2)),
    );
    let [pr, pw] = p.pipe2(O_NONBLOCK).unwrap_or([-1, -1]);
    p.write(pw, b"pipe").unwrap_or(0);
    r.log(
        "append: splice into it (old fd, offset 0)",
        num(p.splice(pr, None, rw, Some(&mut 0), 2, 0)),
    );
    r.log(
        "append: splice into it (O_APPEND fd)",
        num(p.splice(pr, None, ap2, None, 2, 0)),
    );
    r.content("append: after copy, sendfile, splice", path);
    fallocate_cases(r, "append", w, ro);
    r.log(
        "append: fallocate PUNCH_HOLE|KEEP_SIZE of the O_APPEND fd",
        unit(p.fallocate(ap2, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1)),
    );
    r.log(
        "append: size after fallocate",
        s(p.stat(path), |st| st.size.to_string()),
    );
    attr_cases(r, "append", path);
    name_cases(r, "append", path, b"/d/other", b"/d/sub");
    // The user: EPERM for what the flag forbids, EACCES where the mode does.
    let u = r.u;
    r.try_open_by(
        u,
        "append: user opens O_WRONLY|O_APPEND",
        path,
        O_WRONLY | O_APPEND,
    );
    r.try_open_by(u, "append: user opens O_WRONLY", path, O_WRONLY);
    r.log(
        "append: user utimensat NULL (mode 0644)",
        unit(u.utimensat(AT_FDCWD, path, None, 0)),
    );
    r.log("append: chmod 0666 (fails)", unit(p.chmod(path, 0o666)));
    p.fs_ioc_setflags(ro, 0).unwrap_or(());
    r.log("append: chmod 0666 (flag off)", unit(p.chmod(path, 0o666)));
    r.log(
        "append: SETFLAGS APPEND again",
        unit(p.fs_ioc_setflags(ro, FS_APPEND_FL)),
    );
    r.try_open_by(
        u,
        "append: user opens O_WRONLY|O_APPEND (0666)",
        path,
        O_WRONLY | O_APPEND,
    );
    r.try_open_by(u, "append: user opens O_RDWR (0666)", path, O_RDWR);
    r.log(
        "append: user utimensat NULL (0666)",
        unit(u.utimensat(AT_FDCWD, path, None, 0)),
    );
    r.log(
        "append: user utimensat NOW NOW (0666)",
        unit(u.utimensat(AT_FDCWD, path, Some([Timespec::NOW; 2]), 0)),
    );
    r.log(
        "append: user utimensat t t (0666)",
        unit(u.utimensat(AT_FDCWD, path, Some([Timespec::new(OLD, 0); 2]), 0)),
    );
    r.log("append: user truncate (0666)", unit(u.truncate(path, 0)));
    r.log(
        "append: user setxattr (0666)",
        unit(u.setxattr(path, b"user.a", b"v", 0)),
    );
    r.log("append: user SETFLAGS 0 (not the owner)", {
        let fd = u.open(path, O_RDONLY, 0);
        s(fd, |fd| {
            let x = unit(u.fs_ioc_setflags(fd, 0));
            u.close(fd).unwrap();
            x
        })
    });
    r.log("append: SETFLAGS 0", unit(p.fs_ioc_setflags(ro, 0)));
    r.log("append: cleared, truncate", unit(p.truncate(path, 0)));
    r.log("append: cleared, unlink", unit(p.unlink(path)));
    for fd in [w, rw, ap, ro, ap2, src, pr, pw] {
        p.close(fd).unwrap_or(());
    }
}

/// Names made and removed in `dir` (holding a file `c`, an empty
/// directory `sd` and a symlink `sl`), as root; `out` is a directory
/// elsewhere.
fn dir_name_cases(r: &Run, what: &str, dir: &[u8], out: &[u8]) {
    let p = r.p;
    let at = |name: &str| [dir, b"/", name.as_bytes()].concat();
    let there = |name: &str| [out, b"/", name.as_bytes()].concat();
    let log = |name: &str, res: SysResult<()>| r.log(&format!("{what}: {name}"), unit(res));
    r.try_open(
        &format!("{what}: O_CREAT of a new name"),
        &at("new"),
        O_CREAT | O_WRONLY,
    );
    r.try_open(
        &format!("{what}: O_CREAT of an existing name"),
        &at("c"),
        O_CREAT | O_WRONLY,
    );
    r.try_open(
        &format!("{what}: O_CREAT|O_EXCL of an existing name"),
        &at("c"),
        O_CREAT | O_EXCL | O_WRONLY,
    );
    r.try_open(&format!("{what}: open a child O_RDWR"), &at("c"), O_RDWR);
    r.try_open(
        &format!("{what}: open it O_DIRECTORY"),
        dir,
        O_RDONLY | O_DIRECTORY,
    );
    r.try_open(&format!("{what}: O_TMPFILE in it"), dir, O_TMPFILE | O_RDWR);
    log("mkdir", p.mkdir(&at("nd"), 0o755));
    log("mkdir of an existing name", p.mkdir(&at("sd"), 0o755));
    log(
        "mknod a FIFO",
        p.mknodat(AT_FDCWD, &at("fifo"), S_IFIFO | 0o644, 0),
    );
    log(
        "mknod a file",
        p.mknodat(AT_FDCWD, &at("node"), S_IFREG | 0o644, 0),
    );
    log("symlink", p.symlink(b"c", &at("sl2")));
    log("link into it", p.link(b"/d/f", &at("l")));
    log("link a child out", p.link(&at("c"), &there("lc")));
    let sock = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap_or(-1);
    log("bind a socket into it", p.bind(sock, &at("sock")));
    p.close(sock).unwrap_or(());
    log("write into a child", {
        let fd = p.open(&at("c"), O_WRONLY | O_APPEND, 0);
        fd.and_then(|fd| {
            let w = p.write(fd, b"+");
            p.close(fd)?;
            w.map(|_| ())
        })
    });
    log("chmod a child", p.chmod(&at("c"), 0o640));
    log(
        "setxattr on a child",
        p.setxattr(&at("c"), b"user.a", b"v", 0),
    );
    log("unlink a child", p.unlink(&at("c")));
    log("unlink a missing name", p.unlink(&at("missing")));
    log("unlink the symlink", p.unlink(&at("sl")));
    log("rmdir a child", p.rmdir(&at("sd")));
    log("rename a child within", p.rename(&at("c"), &at("c2")));
    log("rename a child out", p.rename(&at("c"), &there("c")));
    log(
        "rename a child directory out",
        p.rename(&at("sd"), &there("sd")),
    );
    log("rename a file in", p.rename(&there("in"), &at("in")));
    log(
        "rename a file in over a child",
        p.rename(&there("in2"), &at("c")),
    );
    log(
        "RENAME_EXCHANGE of a child and a file outside",
        p.renameat2(AT_FDCWD, &at("c"), AT_FDCWD, &there("in2"), RENAME_EXCHANGE),
    );
    log(
        "RENAME_NOREPLACE in over a child",
        p.renameat2(
            AT_FDCWD,
            &there("in2"),
            AT_FDCWD,
            &at("c"),
            RENAME_NOREPLACE,
        ),
    );
    log(
        "rename the directory itself",
        p.rename(dir, &[dir, b"2"].concat()),
    );
    log(
        "move the directory elsewhere",
        p.rename(dir, &there("moved")),
    );
    log("rmdir it (not empty)", p.rmdir(dir));
    log("chmod it", p.chmod(dir, 0o700));
    log("utimensat it NULL", p.utimensat(AT_FDCWD, dir, None, 0));
    log(
        "utimensat it t t",
        p.utimensat(AT_FDCWD, dir, Some([Timespec::new(OLD, 0); 2]), 0),
    );
    log("setxattr on it", p.setxattr(dir, b"user.a", b"v", 0));
    log("access it W_OK", p.access(dir, W_OK));
    log("access it X_OK", p.access(dir, X_OK));
    r.log(
        &format!("{what}: stat a child"),
        s(p.stat(&at("c")), |st| format!("{:o} {}", st.mode, st.size)),
    );
    r.log(
        &format!("{what}: readlink"),
        s(p.readlink(&at("sl")), |t| {
            String::from_utf8_lossy(&t).into_owned()
        }),
    );
    r.log(
        &format!("{what}: listing"),
        s(p.read_dir(dir), |ents| {
            let mut names: Vec<String> = ents
                .iter()
                .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                .collect();
            names.sort();
            names.join(" ")
        }),
    );
    r.log(
        &format!("{what}: create in the child directory"),
        unit(mkfile(p, &at("sd/x"), b"x").and_then(|()| p.unlink(&at("sd/x")))),
    );
    // An O_TMPFILE made elsewhere, linked in.
    let tmp = p.open(out, O_TMPFILE | O_RDWR, 0o600).unwrap_or(-1);
    log(
        "linkat an O_TMPFILE into it",
        p.linkat(tmp, b"", AT_FDCWD, &at("tmp"), AT_EMPTY_PATH),
    );
    p.close(tmp).unwrap_or(());
}

/// A directory with FS_IMMUTABLE_FL: no name in it changes; what is in
/// it can.
fn immutable_dir(r: &Run) {
    let p = r.p;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/di", 0o755)?;
        mkfile(p, b"/di/c", b"child")?;
        p.mkdir(b"/di/sd", 0o755)?;
        p.symlink(b"c", b"/di/sl")?;
        p.mkdir(b"/de", 0o755)?;
        p.mkdir(b"/o1", 0o755)?;
        mkfile(p, b"/o1/in", b"in")?;
        mkfile(p, b"/o1/in2", b"in2")?;
        p.mkdir(b"/o1/emptyd", 0o755)?;
        Ok(())
    })();
    r.log("immutable dir: setup", unit(prep));
    r.set(
        "immutable dir: SETFLAGS IMMUTABLE /di",
        b"/di",
        FS_IMMUTABLE_FL,
    );
    r.set(
        "immutable dir: SETFLAGS IMMUTABLE /de",
        b"/de",
        FS_IMMUTABLE_FL,
    );
    r.state("immutable dir", b"/di");
    dir_name_cases(r, "immutable dir", b"/di", b"/o1");
    r.log("immutable dir: rmdir the empty one", unit(p.rmdir(b"/de")));
    r.log(
        "immutable dir: rename the empty one",
        unit(p.rename(b"/de", b"/de2")),
    );
    r.log(
        "immutable dir: rename a directory over the empty one",
        unit(p.rename(b"/o1/emptyd", b"/de")),
    );
    let u = r.u;
    r.log(
        "immutable dir: user creates in it",
        unit(mkfile(u, b"/di/u", b"u")),
    );
    r.log(
        "immutable dir: user access W_OK",
        unit(u.access(b"/di", W_OK)),
    );
    r.log(
        "immutable dir: user lists it",
        num(u.read_dir(b"/di").map(|e| e.len())),
    );
    r.set("immutable dir: SETFLAGS 0 /di", b"/di", 0);
    r.set("immutable dir: SETFLAGS 0 /de", b"/de", 0);
    r.log(
        "immutable dir: cleared, rmdir the empty one",
        unit(p.rmdir(b"/de")),
    );
    r.log(
        "immutable dir: cleared, create in it",
        unit(mkfile(p, b"/di/after", b"")),
    );
}

/// A directory with FS_APPEND_FL: names may be added, not removed.
fn append_dir(r: &Run) {
    let p = r.p;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/da", 0o777)?;
        p.chmod(b"/da", 0o777)?;
        mkfile(p, b"/da/c", b"child")?;
        p.mkdir(b"/da/sd", 0o755)?;
        p.symlink(b"c", b"/da/sl")?;
        p.mkdir(b"/dae", 0o755)?;
        p.mkdir(b"/o2", 0o755)?;
        mkfile(p, b"/o2/in", b"in")?;
        mkfile(p, b"/o2/in2", b"in2")?;
        Ok(())
    })();
    r.log("append dir: setup", unit(prep));
    r.set("append dir: SETFLAGS APPEND /da", b"/da", FS_APPEND_FL);
    r.set("append dir: SETFLAGS APPEND /dae", b"/dae", FS_APPEND_FL);
    r.state("append dir", b"/da");
    dir_name_cases(r, "append dir", b"/da", b"/o2");
    r.state("append dir: a file made in it", b"/da/new");
    r.state("append dir: a directory made in it", b"/da/nd");
    r.log("append dir: rmdir the empty one", unit(p.rmdir(b"/dae")));
    r.log(
        "append dir: rename the empty one",
        unit(p.rename(b"/dae", b"/dae2")),
    );
    r.log(
        "append dir: unlink a name just made",
        unit(p.unlink(b"/da/new")),
    );
    r.log(
        "append dir: rename a name just made",
        unit(p.rename(b"/da/new", b"/da/new2")),
    );
    let u = r.u;
    r.log(
        "append dir: user creates in it",
        unit(mkfile(u, b"/da/u", b"u")),
    );
    r.log(
        "append dir: user unlinks its own file",
        unit(u.unlink(b"/da/u")),
    );
    r.log(
        "append dir: user SETFLAGS 0 on it (not the owner)",
        s(u.open(b"/da", O_RDONLY | O_DIRECTORY, 0), |fd| {
            let x = unit(u.fs_ioc_setflags(fd, 0));
            u.close(fd).unwrap();
            x
        }),
    );
    r.set("append dir: SETFLAGS 0 /da", b"/da", 0);
    r.set("append dir: SETFLAGS 0 /dae", b"/dae", 0);
    r.log(
        "append dir: cleared, rmdir the empty one",
        unit(p.rmdir(b"/dae")),
    );
    r.log("append dir: cleared, unlink", unit(p.unlink(b"/da/c")));
}

/// Which flags new inodes take from their directory: NODUMP and NOATIME,
/// never IMMUTABLE or APPEND; files, directories, symlinks, nodes,
/// sockets, O_TMPFILE files; names moved or linked in keep their own.
fn inheritance(r: &Run) {
    let p = r.p;
    let all = FS_NODUMP_FL | FS_NOATIME_FL;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/in", 0o777)?;
        p.chmod(b"/in", 0o777)?;
        mkfile(p, b"/in-out", b"out")?;
        Ok(())
    })();
    r.log("inherit: setup", unit(prep));
    r.set(
        "inherit: SETFLAGS NODUMP|NOATIME|APPEND /in",
        b"/in",
        all | FS_APPEND_FL,
    );
    let made: SysResult<()> = (|| {
        mkfile(p, b"/in/f", b"file")?;
        p.mkdir(b"/in/d", 0o755)?;
        p.symlink(b"f", b"/in/sl")?;
        p.mknodat(AT_FDCWD, b"/in/fifo", S_IFIFO | 0o644, 0)?;
        p.mknodat(AT_FDCWD, b"/in/chr", S_IFCHR | 0o644, 0)?;
        p.mknodat(AT_FDCWD, b"/in/node", S_IFREG | 0o644, 0)?;
        let sock = p.socket(AF_UNIX, SOCK_STREAM, 0)?;
        let b = p.bind(sock, b"/in/sock");
        p.close(sock)?;
        b?;
        mkfile(p, b"/in/d/g", b"grandchild")?;
        p.mkdir(b"/in/d/e", 0o755)?;
        Ok(())
    })();
    r.log("inherit: make one of each kind", unit(made));
    for name in ["f", "d", "sl", "fifo", "chr", "node", "sock", "d/g", "d/e"] {
        r.state(
            &format!("inherit: /in/{name}"),
            format!("/in/{name}").as_bytes(),
        );
    }
    // Through the symlink, statx follows to the file.
    r.log(
        "inherit: statx /in/sl followed",
        attrs_of(p.statx(AT_FDCWD, b"/in/sl", 0, STATX_BASIC_STATS)),
    );
    let tmp = r.open("inherit: O_TMPFILE in /in", b"/in", O_TMPFILE | O_RDWR);
    r.fd_state_by(p, "inherit: the O_TMPFILE file", tmp);
    r.log(
        "inherit: link the O_TMPFILE in",
        unit(p.linkat(tmp, b"", AT_FDCWD, b"/in/t", AT_EMPTY_PATH)),
    );
    r.state("inherit: /in/t", b"/in/t");
    let tmp2 = r.open("inherit: O_TMPFILE in /", b"/", O_TMPFILE | O_RDWR);
    r.log(
        "inherit: link an O_TMPFILE of / into /in",
        unit(p.linkat(tmp2, b"", AT_FDCWD, b"/in/t2", AT_EMPTY_PATH)),
    );
    r.state("inherit: /in/t2", b"/in/t2");
    // Names moved or linked in keep their flags.
    r.log(
        "inherit: rename /in-out in",
        unit(p.rename(b"/in-out", b"/in/moved")),
    );
    r.state("inherit: /in/moved", b"/in/moved");
    r.log(
        "inherit: link /d/f in",
        unit(p.link(b"/d/f", b"/in/linked")),
    );
    r.state("inherit: /in/linked", b"/in/linked");
    // A file made by the user: its own, with the flags.
    r.log(
        "inherit: user makes /in/u",
        unit(mkfile(r.u, b"/in/u", b"u")),
    );
    r.state_by(r.u, "inherit: /in/u as the user", b"/in/u");
    // The directory's own flags changed: only new inodes see it.
    r.set("inherit: SETFLAGS NOATIME /in", b"/in", FS_NOATIME_FL);
    r.log(
        "inherit: rename /in/f out",
        unit(p.rename(b"/in/f", b"/in-f")),
    );
    r.state("inherit: /in-f", b"/in-f");
    r.log("inherit: make /in/f2", unit(mkfile(p, b"/in/f2", b"")));
    r.state("inherit: /in/f2", b"/in/f2");
    r.state("inherit: /in/d/g still", b"/in/d/g");
    r.set(
        "inherit: SETFLAGS IMMUTABLE|NODUMP /in/d",
        b"/in/d",
        FS_IMMUTABLE_FL | FS_NODUMP_FL,
    );
    r.log(
        "inherit: make in /in/d (immutable)",
        unit(mkfile(p, b"/in/d/h", b"")),
    );
    r.set("inherit: SETFLAGS NODUMP /in/d", b"/in/d", FS_NODUMP_FL);
    r.log("inherit: make /in/d/h", unit(mkfile(p, b"/in/d/h", b"")));
    r.state("inherit: /in/d/h", b"/in/d/h");
    r.set("inherit: SETFLAGS 0 /in", b"/in", 0);
    r.log("inherit: make /in/f3", unit(mkfile(p, b"/in/f3", b"")));
    r.state("inherit: /in/f3", b"/in/f3");
    // The root directory and a new instance's root.
    r.set("inherit: SETFLAGS NODUMP /", b"/", FS_NODUMP_FL);
    r.log(
        "inherit: make /rootchild",
        unit(p.mkdir(b"/rootchild", 0o755)),
    );
    r.state("inherit: /rootchild", b"/rootchild");
    r.state("inherit: /", b"/");
    r.set("inherit: SETFLAGS 0 /", b"/", 0);
    r.log(
        "inherit: mount a tmpfs on /rootchild",
        unit(p.mount(b"none", b"/rootchild", b"tmpfs", 0)),
    );
    r.state("inherit: the new instance's root", b"/rootchild");
    r.set(
        "inherit: SETFLAGS NOATIME on the new root",
        b"/rootchild",
        FS_NOATIME_FL,
    );
    r.log(
        "inherit: make /rootchild/x",
        unit(mkfile(p, b"/rootchild/x", b"")),
    );
    r.state("inherit: /rootchild/x", b"/rootchild/x");
    r.log("inherit: umount it", unit(p.umount2(b"/rootchild", 0)));
    r.state("inherit: /rootchild again", b"/rootchild");
    p.close(tmp).unwrap_or(());
    p.close(tmp2).unwrap_or(());
}

/// FS_NOATIME_FL: a read leaves the access time alone (under relatime it
/// would update an access time older than the mtime).
fn noatime(r: &Run) {
    let p = r.p;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/na", 0o755)?;
        mkfile(p, b"/na/plain", b"plain")?;
        mkfile(p, b"/na/flagged", b"flagged")?;
        p.mkdir(b"/na/dir", 0o755)?;
        p.mkdir(b"/na/flagged-dir", 0o755)?;
        Ok(())
    })();
    r.log("noatime: setup", unit(prep));
    let before = r.open("noatime: open /na/flagged before", b"/na/flagged", O_RDONLY);
    r.set(
        "noatime: SETFLAGS NOATIME /na/flagged",
        b"/na/flagged",
        FS_NOATIME_FL,
    );
    r.set(
        "noatime: SETFLAGS NOATIME /na/flagged-dir",
        b"/na/flagged-dir",
        FS_NOATIME_FL,
    );
    r.atime_kept("noatime: /na/plain", b"/na/plain", None);
    r.atime_kept("noatime: /na/flagged", b"/na/flagged", None);
    r.atime_kept(
        "noatime: /na/flagged, fd from before",
        b"/na/flagged",
        Some(before),
    );
    r.atime_kept("noatime: /na/dir", b"/na/dir", None);
    r.atime_kept("noatime: /na/flagged-dir", b"/na/flagged-dir", None);
    // Inherited from the directory.
    r.set("noatime: SETFLAGS NOATIME /na", b"/na", FS_NOATIME_FL);
    r.log(
        "noatime: make /na/child",
        unit(mkfile(p, b"/na/child", b"child")),
    );
    r.atime_kept("noatime: /na/child (inherited)", b"/na/child", None);
    // Other flags leave reads alone; the flag cleared, reads update again.
    r.set(
        "noatime: SETFLAGS NODUMP /na/flagged",
        b"/na/flagged",
        FS_NODUMP_FL,
    );
    r.atime_kept("noatime: /na/flagged, NODUMP only", b"/na/flagged", None);
    r.atime_kept(
        "noatime: fd from before, flag off",
        b"/na/flagged",
        Some(before),
    );
    // Explicit times are still set; a write still changes mtime.
    r.set(
        "noatime: SETFLAGS NOATIME /na/plain",
        b"/na/plain",
        FS_NOATIME_FL,
    );
    r.log(
        "noatime: utimensat sets atime anyway",
        unit(p.utimensat(AT_FDCWD, b"/na/plain", Some([Timespec::new(OLD, 0); 2]), 0)),
    );
    r.log(
        "noatime: atime is the one set",
        s(p.stat(b"/na/plain"), |st| (st.atime.sec == OLD).to_string()),
    );
    r.times("noatime: write changes mtime", b"/na/plain", || {
        unit(mkfile(p, b"/na/plain", b"again"))
    });
    r.set("noatime: SETFLAGS 0 /na", b"/na", 0);
    p.close(before).unwrap_or(());
}

/// What uid 1000 may change: on its own file NODUMP and NOATIME (even
/// when root made it immutable), never IMMUTABLE or APPEND; on another's
/// file nothing (EPERM before EOPNOTSUPP, after the mask's EOPNOTSUPP).
fn non_root(r: &Run) {
    let (p, u) = (r.p, r.u);
    let prep: SysResult<()> = (|| {
        mkfile(u, b"/u/f", b"user file")?;
        u.mkdir(b"/u/d", 0o755)?;
        mkfile(p, b"/d/g", b"group file")?;
        p.chown(b"/d/g", 0, 1000)?;
        p.chmod(b"/d/g", 0o664)?;
        Ok(())
    })();
    r.log("user: setup", unit(prep));
    let f = r.open_by(u, "user: open its file O_RDONLY", b"/u/f", O_RDONLY);
    let x = |xflags: u32, projid: u32, extsize: u32| FsXattr {
        xflags,
        extsize,
        projid,
        ..FsXattr::default()
    };
    let own = |r: &Run, what: &str, fd: Fd| {
        for (name, v) in [
            ("NODUMP", FS_NODUMP_FL),
            ("NODUMP|NOATIME", FS_NODUMP_FL | FS_NOATIME_FL),
            ("IMMUTABLE", FS_IMMUTABLE_FL),
            ("APPEND", FS_APPEND_FL),
            ("IMMUTABLE|NODUMP", FS_IMMUTABLE_FL | FS_NODUMP_FL),
            ("SYNC", FS_SYNC_FL),
            ("IMMUTABLE|SYNC", FS_IMMUTABLE_FL | FS_SYNC_FL),
            ("APPEND|VERITY", FS_APPEND_FL | FS_VERITY_FL),
            ("VERITY", FS_VERITY_FL),
            ("0x40000000", 0x4000_0000),
            ("DAX", FS_DAX_FL),
            ("0", 0),
        ] {
            let res = unit(u.fs_ioc_setflags(fd, v));
            r.log(
                &format!("{what}: SETFLAGS {name}"),
                format!("{res} => {}", hex(u.fs_ioc_getflags(fd))),
            );
        }
        for (name, a) in [
            ("NODUMP", xf(FS_XFLAG_NODUMP)),
            ("NOATIME", xf(FS_XFLAG_NOATIME)),
            ("IMMUTABLE", xf(FS_XFLAG_IMMUTABLE)),
            ("APPEND|NODUMP", xf(FS_XFLAG_APPEND | FS_XFLAG_NODUMP)),
            ("REALTIME", xf(FS_XFLAG_REALTIME)),
            (
                "IMMUTABLE|REALTIME",
                xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_REALTIME),
            ),
            ("0x40000", xf(0x40000)),
            ("IMMUTABLE|0x40000", xf(FS_XFLAG_IMMUTABLE | 0x40000)),
            ("projid -1", x(0, u32::MAX, 0)),
            ("IMMUTABLE, projid -1", x(FS_XFLAG_IMMUTABLE, u32::MAX, 0)),
            ("projid 5", x(0, 5, 0)),
            ("extsize 4096", x(0, 0, 4096)),
            ("EXTSIZE, extsize 0", xf(FS_XFLAG_EXTSIZE)),
            ("EXTSZINHERIT", xf(FS_XFLAG_EXTSZINHERIT)),
            ("HASATTR", xf(FS_XFLAG_HASATTR)),
            ("0", xf(0)),
        ] {
            let res = unit(u.fs_ioc_fssetxattr(fd, &a));
            r.log(
                &format!("{what}: FSSETXATTR {name}"),
                format!("{res} => {}", fsx(u.fs_ioc_fsgetxattr(fd))),
            );
        }
    };
    own(r, "user, own file", f);
    let d = r.open_by(
        u,
        "user: open its directory",
        b"/u/d",
        O_RDONLY | O_DIRECTORY,
    );
    own(r, "user, own directory", d);
    // Root makes the user's file immutable: the user may change the rest.
    r.set(
        "user: root SETFLAGS IMMUTABLE /u/f",
        b"/u/f",
        FS_IMMUTABLE_FL,
    );
    for (name, v) in [
        ("IMMUTABLE|NODUMP", FS_IMMUTABLE_FL | FS_NODUMP_FL),
        (
            "IMMUTABLE|NODUMP|NOATIME",
            FS_IMMUTABLE_FL | FS_NODUMP_FL | FS_NOATIME_FL,
        ),
        ("IMMUTABLE", FS_IMMUTABLE_FL),
        ("NODUMP (drops IMMUTABLE)", FS_NODUMP_FL),
        ("0", 0),
        ("IMMUTABLE|APPEND", FS_IMMUTABLE_FL | FS_APPEND_FL),
        ("IMMUTABLE|SYNC", FS_IMMUTABLE_FL | FS_SYNC_FL),
    ] {
        let res = unit(u.fs_ioc_setflags(f, v));
        r.log(
            &format!("user, own immutable file: SETFLAGS {name}"),
            format!("{res} => {}", hex(u.fs_ioc_getflags(f))),
        );
    }
    r.log(
        "user, own immutable file: FSSETXATTR IMMUTABLE|NOATIME",
        unit(u.fs_ioc_fssetxattr(f, &xf(FS_XFLAG_IMMUTABLE | FS_XFLAG_NOATIME))),
    );
    r.log(
        "user, own immutable file: FSSETXATTR NOATIME",
        unit(u.fs_ioc_fssetxattr(f, &xf(FS_XFLAG_NOATIME))),
    );
    r.state_by(u, "user, own immutable file", b"/u/f");
    r.try_open_by(
        u,
        "user, own immutable file: open O_WRONLY",
        b"/u/f",
        O_WRONLY,
    );
    r.log(
        "user, own immutable file: chmod",
        unit(u.chmod(b"/u/f", 0o600)),
    );
    r.log(
        "user, own immutable file: chown -1 -1",
        unit(u.chown(b"/u/f", u32::MAX, u32::MAX)),
    );
    r.log(
        "user, own immutable file: chown -1 1000",
        unit(u.chown(b"/u/f", u32::MAX, 1000)),
    );
    utimes_cases(r, u, "user, own immutable file", b"/u/f");
    r.log("user, own immutable file: unlink", unit(u.unlink(b"/u/f")));
    r.log(
        "user, own immutable file: setxattr",
        unit(u.setxattr(b"/u/f", b"user.a", b"v", 0)),
    );
    // Appending only.
    r.set("user: root SETFLAGS APPEND /u/f", b"/u/f", FS_APPEND_FL);
    for (name, v) in [
        ("APPEND|NODUMP", FS_APPEND_FL | FS_NODUMP_FL),
        ("0", 0),
        ("IMMUTABLE|APPEND", FS_IMMUTABLE_FL | FS_APPEND_FL),
        ("APPEND", FS_APPEND_FL),
    ] {
        let res = unit(u.fs_ioc_setflags(f, v));
        r.log(
            &format!("user, own append file: SETFLAGS {name}"),
            format!("{res} => {}", hex(u.fs_ioc_getflags(f))),
        );
    }
    r.try_open_by(u, "user, own append file: open O_WRONLY", b"/u/f", O_WRONLY);
    r.try_open_by(
        u,
        "user, own append file: open O_WRONLY|O_APPEND",
        b"/u/f",
        O_WRONLY | O_APPEND,
    );
    utimes_cases(r, u, "user, own append file", b"/u/f");
    r.log(
        "user, own append file: chmod",
        unit(u.chmod(b"/u/f", 0o600)),
    );
    r.log(
        "user, own append file: FSSETXATTR APPEND|NOATIME",
        unit(u.fs_ioc_fssetxattr(f, &xf(FS_XFLAG_APPEND | FS_XFLAG_NOATIME))),
    );
    r.set("user: root SETFLAGS 0 /u/f", b"/u/f", 0);
    // Root's files: the user is not the owner (in the group of /d/g).
    for (what, path, flags) in [
        ("user, root's file", &b"/d/f"[..], O_RDONLY),
        ("user, root's group-writable file", &b"/d/g"[..], O_RDWR),
        ("user, root's directory", &b"/d"[..], O_RDONLY | O_DIRECTORY),
    ] {
        let fd = r.open_by(u, &format!("{what}: open"), path, flags);
        four(r, u, what, fd);
        r.log(
            &format!("{what}: SETFLAGS to its flags"),
            unit(u.fs_ioc_setflags(fd, u.fs_ioc_getflags(fd).unwrap_or(0))),
        );
        r.log(
            &format!("{what}: SETFLAGS IMMUTABLE"),
            unit(u.fs_ioc_setflags(fd, FS_IMMUTABLE_FL)),
        );
        r.log(
            &format!("{what}: FSSETXATTR IMMUTABLE|0x40000"),
            unit(u.fs_ioc_fssetxattr(fd, &xf(FS_XFLAG_IMMUTABLE | 0x40000))),
        );
        r.log(
            &format!("{what}: FSSETXATTR DAX"),
            unit(u.fs_ioc_fssetxattr(fd, &xf(FS_XFLAG_DAX))),
        );
        r.log(
            &format!("{what}: FSSETXATTR extsize 4096"),
            unit(u.fs_ioc_fssetxattr(fd, &x(0, 0, 4096))),
        );
        u.close(fd).unwrap_or(());
    }
    r.state("user: /d/f after the user's tries", b"/d/f");
    // Root on the user's file: CAP_FOWNER and CAP_LINUX_IMMUTABLE.
    r.set(
        "user: root SETFLAGS IMMUTABLE|APPEND /u/d",
        b"/u/d",
        FS_IMMUTABLE_FL | FS_APPEND_FL,
    );
    r.state_by(u, "user: /u/d as the user", b"/u/d");
    r.log(
        "user: SETFLAGS IMMUTABLE|APPEND|NODUMP on /u/d",
        unit(u.fs_ioc_setflags(d, FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL)),
    );
    r.log("user: mkdir in /u/d", unit(u.mkdir(b"/u/d/x", 0o755)));
    r.set("user: root SETFLAGS 0 /u/d", b"/u/d", 0);
    u.close(f).unwrap_or(());
    u.close(d).unwrap_or(());
}

/// memfds are tmpfs files too: their flags and what they forbid.
fn memfds(r: &Run) {
    let (p, u) = (r.p, r.u);
    let m = p.memfd_create(b"flags", 0).unwrap_or(-1);
    r.log(
        "memfd: create",
        fdr(if m >= 0 { Ok(m) } else { Err(Errno::EINVAL) }),
    );
    r.fd_state_by(p, "memfd: new", m);
    r.log("memfd: write", num(p.write(m, b"memory")));
    for (name, v) in [
        ("NODUMP", FS_NODUMP_FL),
        ("SYNC", FS_SYNC_FL),
        ("NOATIME|NODUMP", FS_NOATIME_FL | FS_NODUMP_FL),
        ("APPEND", FS_APPEND_FL),
    ] {
        r.log(
            &format!("memfd: SETFLAGS {name}"),
            unit(p.fs_ioc_setflags(m, v)),
        );
    }
    r.fd_state_by(p, "memfd: append", m);
    r.log("memfd: write (APPEND)", num(p.write(m, b"+")));
    r.log("memfd: pwrite at 0 (APPEND)", num(p.pwrite(m, b"M", 0)));
    r.log("memfd: ftruncate (APPEND)", unit(p.ftruncate(m, 1)));
    r.log(
        "memfd: F_SETFL O_APPEND (APPEND)",
        s(p.fcntl(m, F_SETFL, i64::from(O_APPEND)), |v| v.to_string()),
    );
    r.log("memfd: fchmod (APPEND)", unit(p.fchmod(m, 0o600)));
    r.log(
        "memfd: SETFLAGS IMMUTABLE",
        unit(p.fs_ioc_setflags(m, FS_IMMUTABLE_FL)),
    );
    r.log("memfd: write (IMMUTABLE)", num(p.write(m, b"!")));
    r.log("memfd: ftruncate (IMMUTABLE)", unit(p.ftruncate(m, 2)));
    r.log("memfd: fchmod (IMMUTABLE)", unit(p.fchmod(m, 0o600)));
    r.log(
        "memfd: fchown -1 -1 (IMMUTABLE)",
        unit(p.fchown(m, u32::MAX, u32::MAX)),
    );
    r.log(
        "memfd: futimens NULL (IMMUTABLE)",
        unit(p.futimens(m, None)),
    );
    r.log(
        "memfd: fsetxattr (IMMUTABLE)",
        unit(p.fsetxattr(m, b"user.a", b"v", 0)),
    );
    r.log(
        "memfd: fallocate (IMMUTABLE)",
        unit(p.fallocate(m, 0, 0, 10)),
    );
    r.log("memfd: size", s(p.fstat(m), |st| st.size.to_string()));
    r.fd_state_by(p, "memfd: immutable", m);
    r.log(
        "memfd: FSSETXATTR EXTSIZE",
        unit(p.fs_ioc_fssetxattr(m, &xf(FS_XFLAG_EXTSIZE))),
    );
    r.log(
        "memfd: FSSETXATTR EXTSZINHERIT",
        unit(p.fs_ioc_fssetxattr(m, &xf(FS_XFLAG_EXTSZINHERIT))),
    );
    r.log("memfd: SETFLAGS 0", unit(p.fs_ioc_setflags(m, 0)));
    p.close(m).unwrap_or(());
    // The user's own memfd.
    let um = u.memfd_create(b"user", MFD_CLOEXEC).unwrap_or(-1);
    r.log(
        "memfd: user's SETFLAGS NODUMP",
        unit(u.fs_ioc_setflags(um, FS_NODUMP_FL)),
    );
    r.log(
        "memfd: user's SETFLAGS IMMUTABLE",
        unit(u.fs_ioc_setflags(um, FS_IMMUTABLE_FL)),
    );
    r.log(
        "memfd: user's FSSETXATTR APPEND",
        unit(u.fs_ioc_fssetxattr(um, &xf(FS_XFLAG_APPEND))),
    );
    r.fd_state_by(u, "memfd: user's", um);
    u.close(um).unwrap_or(());
}

/// Where the flags' EPERM falls among other errors (the kind of the
/// victim, a sticky directory), their side effects (set-ID bits a chown
/// or a write still drops), POSIX ACLs, O_TMPFILE files, and inotify.
fn more_orders(r: &Run) {
    let (p, u) = (r.p, r.u);
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/mo", 0o777)?;
        p.chmod(b"/mo", 0o777)?;
        mkfile(p, b"/mo/f", b"file")?;
        p.mkdir(b"/mo/d", 0o755)?;
        p.mkdir(b"/mo/full", 0o755)?;
        mkfile(p, b"/mo/full/x", b"x")?;
        mkfile(p, b"/mo/suid", b"suid")?;
        p.chmod(b"/mo/suid", 0o6755)?;
        p.setxattr(
            b"/mo/f",
            b"system.posix_acl_access",
            &acl(&[(USER_OBJ, 6, U), (GROUP_OBJ, 4, U), (OTHER, 4, U)]),
            0,
        )?;
        Ok(())
    })();
    r.log("orders: setup", unit(prep));
    let both = FS_IMMUTABLE_FL;
    r.set("orders: SETFLAGS IMMUTABLE /mo/f", b"/mo/f", both);
    r.set("orders: SETFLAGS IMMUTABLE /mo/d", b"/mo/d", both);
    r.set(
        "orders: SETFLAGS APPEND /mo/full",
        b"/mo/full",
        FS_APPEND_FL,
    );
    // The victim's flag before its kind.
    r.log(
        "orders: unlink an immutable directory",
        unit(p.unlink(b"/mo/d")),
    );
    r.log("orders: rmdir an immutable file", unit(p.rmdir(b"/mo/f")));
    r.log(
        "orders: rmdir a non-empty append-only directory",
        unit(p.rmdir(b"/mo/full")),
    );
    r.log(
        "orders: rename a file over an immutable directory",
        unit(p.rename(b"/mo/suid", b"/mo/d")),
    );
    r.log(
        "orders: rename a directory over an immutable file",
        unit(p.rename(b"/mo/full", b"/mo/f")),
    );
    r.log(
        "orders: rename an immutable directory over a file",
        unit(p.rename(b"/mo/d", b"/mo/suid")),
    );
    r.log(
        "orders: RENAME_WHITEOUT of an immutable file",
        unit(p.renameat2(AT_FDCWD, b"/mo/f", AT_FDCWD, b"/mo/w", RENAME_WHITEOUT)),
    );
    r.log(
        "orders: RENAME_EXCHANGE of two directories, one append-only",
        unit(p.renameat2(AT_FDCWD, b"/mo/full", AT_FDCWD, b"/mo/d", RENAME_EXCHANGE)),
    );
    r.log(
        "orders: chown an immutable directory",
        unit(p.chown(b"/mo/d", 1000, 1000)),
    );
    r.log(
        "orders: chown -1 -1 an immutable directory",
        unit(p.chown(b"/mo/d", u32::MAX, u32::MAX)),
    );
    // The user in a world-writable directory: the flag before the rest.
    r.log(
        "orders: user unlinks an immutable root file",
        unit(u.unlink(b"/mo/f")),
    );
    r.log(
        "orders: user renames an immutable root file",
        unit(u.rename(b"/mo/f", b"/mo/g")),
    );
    r.log(
        "orders: user unlinks an append-only directory",
        unit(u.rmdir(b"/mo/full")),
    );
    p.chmod(b"/mo", 0o1777).unwrap_or(());
    r.log(
        "orders: user unlinks an immutable root file (sticky)",
        unit(u.unlink(b"/mo/f")),
    );
    r.log(
        "orders: user unlinks a plain root file (sticky)",
        unit(u.unlink(b"/mo/suid")),
    );
    p.chmod(b"/mo", 0o777).unwrap_or(());
    // POSIX ACLs on flagged files.
    let plain = acl(&[(USER_OBJ, 7, U), (GROUP_OBJ, 5, U), (OTHER, 5, U)]);
    r.log(
        "orders: set an access ACL on an immutable file",
        unit(p.setxattr(b"/mo/f", b"system.posix_acl_access", &plain, 0)),
    );
    r.log(
        "orders: remove the access ACL of an immutable file",
        unit(p.removexattr(b"/mo/f", b"system.posix_acl_access")),
    );
    r.log(
        "orders: set a default ACL on an immutable directory",
        unit(p.setxattr(b"/mo/d", b"system.posix_acl_default", &plain, 0)),
    );
    r.log(
        "orders: set a default ACL on an append-only directory",
        unit(p.setxattr(b"/mo/full", b"system.posix_acl_default", &plain, 0)),
    );
    r.log(
        "orders: set a malformed ACL on an immutable file",
        unit(p.setxattr(b"/mo/f", b"system.posix_acl_access", b"xx", 0)),
    );
    r.log(
        "orders: the immutable file's mode",
        s(p.stat(b"/mo/f"), |st| format!("{:o}", st.mode)),
    );
    // Set-ID bits: a chown that changes nothing still drops them.
    r.set("orders: SETFLAGS IMMUTABLE /mo/suid", b"/mo/suid", both);
    r.times(
        "orders: chown -1 -1 an immutable set-ID file",
        b"/mo/suid",
        || unit(p.chown(b"/mo/suid", u32::MAX, u32::MAX)),
    );
    r.log(
        "orders: its mode after",
        s(p.stat(b"/mo/suid"), |st| format!("{:o}", st.mode)),
    );
    r.set("orders: SETFLAGS 0 /mo/suid", b"/mo/suid", 0);
    // ... and a write by its owner through an old descriptor.
    let prep: SysResult<()> = (|| {
        mkfile(u, b"/mo/us", b"user set-ID")?;
        u.chmod(b"/mo/us", 0o4755)?;
        Ok(())
    })();
    r.log("orders: user makes a set-user-ID file", unit(prep));
    let uw = r.open_by(u, "orders: user opens it O_WRONLY", b"/mo/us", O_WRONLY);
    r.set("orders: SETFLAGS IMMUTABLE /mo/us", b"/mo/us", both);
    r.log("orders: user writes (old fd)", num(u.write(uw, b"W")));
    r.log(
        "orders: its mode after the write",
        s(p.stat(b"/mo/us"), |st| format!("{:o}", st.mode)),
    );
    r.log("orders: user ftruncates (old fd)", unit(u.ftruncate(uw, 2)));
    r.log("orders: user fchmod (old fd)", unit(u.fchmod(uw, 0o4755)));
    u.close(uw).unwrap_or(());
    r.set("orders: SETFLAGS 0 /mo/us", b"/mo/us", 0);
    // O_TMPFILE files with flags: never linked in.
    for (name, flags) in [
        ("IMMUTABLE", FS_IMMUTABLE_FL),
        ("APPEND", FS_APPEND_FL),
        ("NODUMP", FS_NODUMP_FL),
    ] {
        let tmp = p.open(b"/mo", O_TMPFILE | O_RDWR, 0o600).unwrap_or(-1);
        r.log(
            &format!("orders: O_TMPFILE SETFLAGS {name}"),
            unit(p.fs_ioc_setflags(tmp, flags)),
        );
        r.log(
            &format!("orders: link the {name} O_TMPFILE"),
            unit(p.linkat(
                tmp,
                b"",
                AT_FDCWD,
                format!("/mo/t-{name}").as_bytes(),
                AT_EMPTY_PATH,
            )),
        );
        r.log(
            &format!("orders: write the {name} O_TMPFILE"),
            num(p.write(tmp, b"x")),
        );
        p.close(tmp).unwrap_or(());
    }
    // No inotify event for a flag change; chmod's IN_ATTRIB as a control.
    let ino = p.inotify_init1(IN_NONBLOCK).unwrap_or(-1);
    let wd = p.inotify_add_watch(ino, b"/mo/us", IN_ALL_EVENTS);
    r.log("orders: watch /mo/us", s(wd, |_| "wd".into()));
    let events = |what: &str| {
        let mut buf = [0u8; 256];
        let got = p.read(ino, &mut buf).map(|n| {
            InotifyEvent::parse_all(&buf[..n])
                .unwrap_or_default()
                .iter()
                .map(|e| format!("{:#x}", e.mask))
                .collect::<Vec<_>>()
                .join(" ")
        });
        r.log(&format!("orders: events after {what}"), s(got, |e| e));
    };
    let fd = p.open(b"/mo/us", O_RDONLY | O_PATH, 0).unwrap_or(-1);
    p.close(fd).unwrap_or(());
    events("an O_PATH open");
    let fd = p.open(b"/mo/us", O_RDONLY, 0).unwrap_or(-1);
    events("an open");
    r.log(
        "orders: SETFLAGS NODUMP (watched)",
        unit(p.fs_ioc_setflags(fd, FS_NODUMP_FL)),
    );
    events("SETFLAGS");
    r.log(
        "orders: FSSETXATTR NOATIME (watched)",
        unit(p.fs_ioc_fssetxattr(fd, &xf(FS_XFLAG_NOATIME))),
    );
    events("FSSETXATTR");
    r.log("orders: chmod (watched)", unit(p.chmod(b"/mo/us", 0o644)));
    events("chmod");
    p.close(fd).unwrap_or(());
    p.close(ino).unwrap_or(());
    for path in [&b"/mo/f"[..], b"/mo/d", b"/mo/full"] {
        r.set("orders: SETFLAGS 0 at the end", path, 0);
    }
}

/// statx's `attributes` and `attributes_mask` on every kind of inode, by
/// path and by descriptor.
fn statx_attributes(r: &Run) {
    let p = r.p;
    let prep: SysResult<()> = (|| {
        p.mkdir(b"/sx", 0o755)?;
        mkfile(p, b"/sx/f", b"f")?;
        p.symlink(b"f", b"/sx/sl")?;
        p.mkdir(b"/sx/bind", 0o755)?;
        p.mount(b"/sx", b"/sx/bind", b"", MS_BIND)?;
        Ok(())
    })();
    r.log("statx: setup", unit(prep));
    r.set(
        "statx: SETFLAGS IMMUTABLE|APPEND|NODUMP|NOATIME /sx/f",
        b"/sx/f",
        FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL,
    );
    let at = |what: &str, path: &[u8], flags: i32, mask: u32| {
        r.log(
            &format!("statx: {what}"),
            attrs_of(p.statx(AT_FDCWD, path, flags, mask)),
        );
    };
    let nofollow = AT_SYMLINK_NOFOLLOW;
    at("/", b"/", 0, STATX_BASIC_STATS);
    at("/d", b"/d", 0, STATX_BASIC_STATS);
    at("/d/f", b"/d/f", 0, STATX_BASIC_STATS);
    at("/sx/f", b"/sx/f", 0, STATX_BASIC_STATS);
    at("/sx/f, mask 0", b"/sx/f", 0, 0);
    at(
        "/sx/f, AT_STATX_DONT_SYNC",
        b"/sx/f",
        AT_STATX_DONT_SYNC,
        STATX_BASIC_STATS,
    );
    at("/sx/sl followed", b"/sx/sl", 0, STATX_BASIC_STATS);
    at(
        "/sx/sl not followed",
        b"/sx/sl",
        nofollow,
        STATX_BASIC_STATS,
    );
    at("/d/fifo", b"/d/fifo", 0, STATX_BASIC_STATS);
    at("/d/chr", b"/d/chr", 0, STATX_BASIC_STATS);
    at("/d/blk", b"/d/blk", 0, STATX_BASIC_STATS);
    at("/d/sock", b"/d/sock", 0, STATX_BASIC_STATS);
    at("/m (a mount's root)", b"/m", 0, STATX_BASIC_STATS);
    at("/m/f", b"/m/f", 0, STATX_BASIC_STATS);
    at("/ro (a bind's root)", b"/ro", 0, STATX_BASIC_STATS);
    at("/ro/f", b"/ro/f", 0, STATX_BASIC_STATS);
    at(
        "/sx/bind (a bind's root)",
        b"/sx/bind",
        0,
        STATX_BASIC_STATS,
    );
    at("/sx/bind/f", b"/sx/bind/f", 0, STATX_BASIC_STATS);
    at(
        "/sx/bind/bind (under the bind)",
        b"/sx/bind/bind",
        0,
        STATX_BASIC_STATS,
    );
    at("/m/..", b"/m/..", 0, STATX_BASIC_STATS);
    at("/sx/bind/.", b"/sx/bind/.", 0, STATX_BASIC_STATS);
    let empty = |what: &str, fd: Fd| {
        r.log(
            &format!("statx AT_EMPTY_PATH: {what}"),
            attrs_of(p.statx(fd, b"", AT_EMPTY_PATH, STATX_BASIC_STATS)),
        );
    };
    let [pr, pw] = p.pipe2(0).unwrap_or([-1, -1]);
    empty("pipe", pr);
    let [sa, sb] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap_or([-1, -1]);
    empty("socketpair", sa);
    let ev = p.eventfd(0, 0).unwrap_or(-1);
    empty("eventfd", ev);
    let m = p.memfd_create(b"sx", 0).unwrap_or(-1);
    p.fs_ioc_setflags(m, FS_NODUMP_FL).unwrap_or(());
    empty("memfd with NODUMP", m);
    let opath = p.open(b"/sx/f", O_PATH, 0).unwrap_or(-1);
    empty("O_PATH /sx/f", opath);
    let opath_link = p.open(b"/sx/sl", O_PATH | O_NOFOLLOW, 0).unwrap_or(-1);
    empty("O_PATH|O_NOFOLLOW /sx/sl", opath_link);
    let root = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap_or(-1);
    empty("/", root);
    let fifo = p.open(b"/d/fifo", O_RDWR, 0).unwrap_or(-1);
    empty("FIFO", fifo);
    r.log(
        "statx: AT_FDCWD with an empty path",
        attrs_of(p.statx(AT_FDCWD, b"", AT_EMPTY_PATH, STATX_BASIC_STATS)),
    );
    for fd in [pr, pw, sa, sb, ev, m, opath, opath_link, root, fifo] {
        p.close(fd).unwrap_or(());
    }
    r.set("statx: SETFLAGS 0 /sx/f", b"/sx/f", 0);
    r.log("statx: umount the bind", unit(p.umount2(b"/sx/bind", 0)));
}

/// file_getattr as `who`: the record's bytes beyond the first version
/// (zeros) checked, the record shown.
fn fga(r: &Run, who: &dyn ProcessApi, what: &str, dirfd: Fd, path: &[u8], size: usize, flags: i32) {
    let mut buf = vec![0xa5u8; size];
    let res = who.file_getattr(dirfd, path, &mut buf, flags).map(|()| {
        let a = FileAttr::from_bytes(buf[..FILE_ATTR_SIZE_VER0].try_into().unwrap());
        let tail_zero = buf[FILE_ATTR_SIZE_VER0..].iter().all(|&b| b == 0);
        format!(
            "xflags {:#x} extsize {} nextents {} projid {} cowextsize {} tail zero {tail_zero}",
            a.xflags, a.extsize, a.nextents, a.projid, a.cowextsize
        )
    });
    r.log(what, s(res, |v| v));
}

/// file_setattr as `who` of `a`, in a record of `size` bytes whose byte
/// past the first version is `tail`.
#[allow(clippy::too_many_arguments)]
fn fsa(
    r: &Run,
    who: &dyn ProcessApi,
    what: &str,
    dirfd: Fd,
    path: &[u8],
    a: FileAttr,
    size: usize,
    tail: u8,
    flags: i32,
) {
    let mut buf = vec![0u8; size.max(FILE_ATTR_SIZE_VER0 + 1)];
    buf[..FILE_ATTR_SIZE_VER0].copy_from_slice(&a.to_bytes());
    buf[FILE_ATTR_SIZE_VER0] = tail;
    r.log(
        what,
        unit(who.file_setattr(dirfd, path, &buf[..size], flags)),
    );
}

fn xa(xflags: u64) -> FileAttr {
    FileAttr {
        xflags,
        ..FileAttr::default()
    }
}

/// file_getattr and file_setattr (Linux 6.17): the argument checks in
/// their order, paths and descriptors, symlinks followed or not, the
/// inodes without flags (EOPNOTSUPP where the ioctls say ENOTTY), the
/// record's sizes, unknown xflags (EINVAL here), what is set.
fn file_attr_calls(r: &Run) {
    let p = r.p;
    let u = r.u;
    let _ = p.mkdir(b"/fa", 0o755);
    let _ = mkfile(p, b"/fa/f", b"x");
    let _ = p.symlink(b"f", b"/fa/ln");
    let _ = p.mknodat(AT_FDCWD, b"/fa/fifo", S_IFIFO | 0o644, 0);
    let _ = p.mkdir(b"/fa/d", 0o755);
    for (what, path, flags) in [
        ("get file", &b"/fa/f"[..], 0),
        ("get link followed", b"/fa/ln", 0),
        ("get link itself", b"/fa/ln", AT_SYMLINK_NOFOLLOW),
        ("get fifo", b"/fa/fifo", 0),
        ("get dir", b"/fa/d", 0),
        ("get missing", b"/fa/zz", 0),
        ("get empty path", b"", 0),
        ("get cwd by empty path", b"", AT_EMPTY_PATH),
        ("get bad at flag", b"/fa/f", 0x2),
        ("get through a file", b"/fa/f/x", 0),
    ] {
        fga(r, p, what, AT_FDCWD, path, FILE_ATTR_SIZE_VER0, flags);
    }
    for size in [0, 16, 23, 25, 32, 4096, 4097] {
        fga(
            r,
            p,
            &format!("get size {size}"),
            AT_FDCWD,
            b"/fa/f",
            size,
            0,
        );
    }
    let fd = p.open(b"/fa/f", O_RDONLY, 0).unwrap_or(-1);
    let opath = p.open(b"/fa/f", O_PATH, 0).unwrap_or(-1);
    let dfd = p.open(b"/fa", O_RDONLY | O_DIRECTORY, 0).unwrap_or(-1);
    let [pr, pw] = p.pipe2(0).unwrap_or([-1, -1]);
    fga(r, p, "get by descriptor", fd, b"", 24, AT_EMPTY_PATH);
    fga(
        r,
        p,
        "get by O_PATH descriptor",
        opath,
        b"",
        24,
        AT_EMPTY_PATH,
    );
    fga(r, p, "get relative to O_PATH", opath, b"x", 24, 0);
    fga(r, p, "get relative to dir", dfd, b"f", 24, 0);
    fga(r, p, "get bad descriptor", 99, b"", 24, AT_EMPTY_PATH);
    fga(r, p, "get pipe", pr, b"", 24, AT_EMPTY_PATH);
    let f = b"/fa/f";
    for (what, a, size, tail, flags) in [
        ("set immutable", xa(0x8), 24, 0, 0),
        ("set none", xa(0), 24, 0, 0),
        ("set nodump|noatime", xa(0xc0), 24, 0, 0),
        ("set unknown 0x4", xa(0x4), 24, 0, 0),
        ("set bit 40", xa(1 << 40), 24, 0, 0),
        ("set prealloc", xa(0x2), 24, 0, 0),
        ("set hasattr|append", xa(0x8000_0010), 24, 0, 0),
        ("set sync", xa(0x20), 24, 0, 0),
        (
            "set extsize",
            FileAttr {
                extsize: 4096,
                ..xa(0x800)
            },
            24,
            0,
            0,
        ),
        (
            "set projid -1",
            FileAttr {
                projid: u32::MAX,
                ..xa(0)
            },
            24,
            0,
            0,
        ),
        (
            "set nextents",
            FileAttr {
                nextents: 9,
                ..xa(0x40)
            },
            24,
            0,
            0,
        ),
        ("set size 32, zero tail", xa(0), 32, 0, 0),
        ("set size 32, tail 1", xa(0), 32, 1, 0),
        ("set size 16", xa(0), 16, 0, 0),
        ("set size 4097", xa(0), 4097, 0, 0),
        ("set bad at flag", xa(0), 24, 0, 0x2),
    ] {
        fsa(r, p, what, AT_FDCWD, f, a, size, tail, flags);
        fga(r, p, &format!("{what}: now"), AT_FDCWD, f, 24, 0);
    }
    fsa(
        r,
        p,
        "set link itself",
        AT_FDCWD,
        b"/fa/ln",
        xa(0),
        24,
        0,
        AT_SYMLINK_NOFOLLOW,
    );
    fsa(
        r,
        p,
        "set through link",
        AT_FDCWD,
        b"/fa/ln",
        xa(0x40),
        24,
        0,
        0,
    );
    fsa(r, p, "set fifo", AT_FDCWD, b"/fa/fifo", xa(0), 24, 0, 0);
    fsa(
        r,
        p,
        "set dir append",
        AT_FDCWD,
        b"/fa/d",
        xa(0x10),
        24,
        0,
        0,
    );
    fsa(r, p, "set missing", AT_FDCWD, b"/fa/zz", xa(0), 24, 0, 0);
    fsa(
        r,
        p,
        "set by descriptor",
        fd,
        b"",
        xa(0),
        24,
        0,
        AT_EMPTY_PATH,
    );
    fsa(
        r,
        p,
        "set by O_PATH descriptor",
        opath,
        b"",
        xa(0),
        24,
        0,
        AT_EMPTY_PATH,
    );
    fsa(r, p, "set pipe", pw, b"", xa(0), 24, 0, AT_EMPTY_PATH);
    fsa(r, u, "user: set root's file", AT_FDCWD, f, xa(0), 24, 0, 0);
    fsa(
        r,
        u,
        "user: set unknown on root's file",
        AT_FDCWD,
        f,
        xa(0x4),
        24,
        0,
        0,
    );
    fga(r, u, "user: get root's file", AT_FDCWD, f, 24, 0);
    // The read-only instance: EROFS after the path, EINVAL before it.
    let _ = p.mkdir(b"/fa/ro", 0o755);
    let _ = p.mount(b"none", b"/fa/ro", b"tmpfs", 0);
    let _ = mkfile(p, b"/fa/ro/f", b"");
    r.log(
        "remount ro",
        unit(p.mount(b"", b"/fa/ro", b"", MS_REMOUNT | MS_RDONLY)),
    );
    fsa(r, p, "ro: set", AT_FDCWD, b"/fa/ro/f", xa(0), 24, 0, 0);
    fsa(
        r,
        p,
        "ro: set unknown",
        AT_FDCWD,
        b"/fa/ro/f",
        xa(0x4),
        24,
        0,
        0,
    );
    fsa(
        r,
        p,
        "ro: set missing",
        AT_FDCWD,
        b"/fa/ro/zz",
        xa(0),
        24,
        0,
        0,
    );
    fga(r, p, "ro: get", AT_FDCWD, b"/fa/ro/f", 24, 0);
    r.log("umount ro", unit(p.umount2(b"/fa/ro", 0)));
    for fd in [fd, opath, dfd, pr, pw] {
        let _ = p.close(fd);
    }
}

#[test]
fn file_flags_match_the_kernel() {
    compare_with_kernel(
        "file flags",
        move |k| show_kernel_log("file flags", script(k, kernel_user())),
        move |p| {
            let user = p.with_cred(Cred::user(1000, 1000, &[1000])).unwrap();
            script(p, user)
        },
    );
}

fn kernel_user() -> KernelProcess {
    KernelProcess::new(&Cred::user(1000, 1000, &[1000])).expect("a uid 1000 process")
}

/// The names of the random sequences, relative to a case's directory
/// (the setup makes all but the last file and the last directory).
const FILES: [&str; 6] = ["a", "b", "u", "s/x", "t", "s/y"];
const DIRS: [&str; 3] = ["s", "e", "s/d"];

/// Inode flags, shown in hex.
#[derive(Clone, Copy)]
struct Fl(u32);

impl std::fmt::Debug for Fl {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// open's flags, shown in octal.
#[derive(Clone, Copy)]
struct Of(i32);

impl std::fmt::Debug for Of {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{:#o}", self.0)
    }
}

/// A step of a random sequence: `user` steps are the uid 1000 process's;
/// open files by age (0 the newest still open, counted modulo how many
/// are), each used by the process that opened it; paths by name.
#[derive(Clone, Debug)]
enum Step {
    SetFlags(bool, &'static str, Fl),
    SetFlagsFd(usize, Fl),
    GetFlagsFd(usize),
    /// xflags, extsize, projid.
    FsSetXattr(usize, Fl, u32, u32),
    Open(bool, &'static str, Of),
    Close(usize),
    Write(usize),
    Pwrite(usize, i64),
    Ftruncate(usize, i64),
    Truncate(bool, &'static str, i64),
    Fallocate(usize, i32),
    /// F_SETFL with O_APPEND or without.
    SetFl(usize, bool),
    Chmod(bool, &'static str, u32),
    /// Path, whether to -1 -1 (else to the caller's ids).
    Chown(bool, &'static str, bool),
    /// Path, which times (0 NULL, 1 explicit, 2 OMIT OMIT).
    Utimens(bool, &'static str, u8),
    Setxattr(bool, &'static str),
    Removexattr(bool, &'static str),
    Rename(bool, &'static str, &'static str, u32),
    Unlink(bool, &'static str),
    Link(bool, &'static str, &'static str),
    Mkdir(bool, &'static str),
    Rmdir(bool, &'static str),
    AccessW(bool, &'static str),
    /// An O_TMPFILE file in a directory (kept open).
    Tmpfile(bool, &'static str),
    /// linkat(fd, "", AT_EMPTY_PATH) of a root-opened file to a name.
    LinkFd(usize, &'static str),
    /// statx's attributes, the last component not followed.
    Statx(bool, &'static str),
}

fn random_steps(rnd: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<Step> {
    let any = |rnd: &mut dyn FnMut(u64) -> u64| match rnd(16) {
        0 => ".",
        1..=4 => DIRS[rnd(3) as usize],
        _ => FILES[rnd(6) as usize],
    };
    let file = |rnd: &mut dyn FnMut(u64) -> u64| FILES[rnd(6) as usize];
    let flags = |rnd: &mut dyn FnMut(u64) -> u64| {
        Fl(match rnd(14) {
            0 | 1 => 0,
            2 => FS_NODUMP_FL,
            3 => FS_NOATIME_FL,
            4 | 5 => FS_IMMUTABLE_FL,
            6 | 7 => FS_APPEND_FL,
            8 => FS_IMMUTABLE_FL | FS_APPEND_FL,
            9 => FS_IMMUTABLE_FL | FS_NODUMP_FL,
            10 => FS_APPEND_FL | FS_NOATIME_FL,
            11 => FS_NODUMP_FL | FS_NOATIME_FL,
            12 => [FS_SYNC_FL, FS_IMMUTABLE_FL | FS_SYNC_FL, FS_DAX_FL][rnd(3) as usize],
            _ => rnd(0x100) as u32,
        })
    };
    let mut steps = Vec::new();
    while steps.len() < n {
        // A third of the path steps are the user's.
        let user = rnd(3) == 0;
        let slot = |rnd: &mut dyn FnMut(u64) -> u64| {
            let among = if rnd(5) == 0 { 6 } else { 3 };
            rnd(among) as usize
        };
        let step = match rnd(47) {
            0..=6 | 41..=43 => Step::SetFlags(user, any(rnd), flags(rnd)),
            7..=9 => Step::SetFlagsFd(slot(rnd), flags(rnd)),
            10 => Step::GetFlagsFd(slot(rnd)),
            11 => {
                let x = match rnd(8) {
                    0 => FS_XFLAG_EXTSIZE,
                    1 => FS_XFLAG_EXTSZINHERIT,
                    2 => FS_XFLAG_HASATTR | FS_XFLAG_NODUMP,
                    3 => 0x40000,
                    4 => FS_XFLAG_REALTIME,
                    _ => xflags_of(flags(rnd).0),
                };
                let (ext, proj) = match rnd(6) {
                    0 => (4096, 0),
                    1 => (0, [5, u32::MAX][rnd(2) as usize]),
                    _ => (0, 0),
                };
                Step::FsSetXattr(slot(rnd), Fl(x), ext, proj)
            }
            12..=19 => {
                let mut f = [O_RDONLY, O_WRONLY, O_RDWR][rnd(3) as usize];
                for (bit, odds) in [(O_APPEND, 3), (O_TRUNC, 8), (O_CREAT, 2)] {
                    if rnd(odds) == 0 {
                        f |= bit;
                    }
                }
                Step::Open(user, if rnd(8) == 0 { any(rnd) } else { file(rnd) }, Of(f))
            }
            20 => Step::Close(slot(rnd)),
            21..=23 => Step::Write(slot(rnd)),
            24 => Step::Pwrite(slot(rnd), [0, 2, 100][rnd(3) as usize]),
            25 => Step::Ftruncate(slot(rnd), [0, 1, 50][rnd(3) as usize]),
            26 => Step::Truncate(user, file(rnd), [0, 3][rnd(2) as usize]),
            27 => Step::Fallocate(
                slot(rnd),
                [
                    0,
                    FALLOC_FL_KEEP_SIZE,
                    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    0x10,
                ][rnd(4) as usize],
            ),
            28 => Step::SetFl(slot(rnd), rnd(2) == 0),
            29 => Step::Chmod(user, any(rnd), [0o644, 0o666, 0o600][rnd(3) as usize]),
            30 => Step::Chown(user, any(rnd), rnd(2) == 0),
            31 => Step::Utimens(user, any(rnd), rnd(3) as u8),
            32 => Step::Setxattr(user, any(rnd)),
            33 => Step::Removexattr(user, any(rnd)),
            34..=35 => Step::Rename(
                user,
                any(rnd),
                any(rnd),
                [0, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE][rnd(5) as usize],
            ),
            36 => Step::Unlink(user, file(rnd)),
            37 => Step::Link(user, file(rnd), any(rnd)),
            38 => Step::Mkdir(user, DIRS[rnd(3) as usize]),
            39 => Step::Rmdir(user, DIRS[rnd(3) as usize]),
            44 => Step::Tmpfile(user, [".", "s", "e"][rnd(3) as usize]),
            45 => Step::LinkFd(slot(rnd), file(rnd)),
            46 => Step::Statx(user, any(rnd)),
            _ => Step::AccessW(user, any(rnd)),
        };
        steps.push(step);
    }
    steps
}

/// Runs one case in its own directory `/cN` (both processes' cwd),
/// logging every step's result, then every name's state as root sees it.
fn run_steps(p: &dyn ProcessApi, u: &dyn ProcessApi, case: usize, steps: &[Step], log: &mut Log) {
    let dir = format!("/c{case}").into_bytes();
    let setup: SysResult<()> = (|| {
        p.mkdir(&dir, 0o777)?;
        p.chmod(&dir, 0o777)?;
        p.chdir(&dir)?;
        u.chdir(&dir)?;
        mkfile(p, b"a", b"alpha")?;
        p.chmod(b"a", 0o666)?;
        mkfile(p, b"b", b"bravo")?;
        mkfile(u, b"u", b"user")?;
        p.mkdir(b"s", 0o777)?;
        p.chmod(b"s", 0o777)?;
        mkfile(p, b"s/x", b"x-ray")?;
        p.setxattr(b"a", b"user.k", b"v", 0)?;
        Ok(())
    })();
    log.push((format!("case {case} setup"), unit(setup)));
    // The open files, oldest first, with whether the user opened each.
    let mut fds: Vec<(bool, Fd)> = Vec::new();
    let who = |user: bool| if user { u } else { p };
    for (i, step) in steps.iter().enumerate() {
        // The s-th newest (modulo how many are open).
        let at = |s: usize, fds: &[(bool, Fd)]| {
            (!fds.is_empty()).then(|| fds[fds.len() - 1 - s % fds.len()])
        };
        let none = "(none)".to_string();
        let with_fd = |s: usize, f: &dyn Fn(&dyn ProcessApi, Fd) -> String| match at(s, &fds) {
            Some((user, fd)) => f(who(user), fd),
            None => none.clone(),
        };
        let res = match *step {
            Step::SetFlags(user, path, fl) => {
                let x = who(user);
                unit(
                    x.open(path.as_bytes(), O_RDONLY | O_NONBLOCK, 0)
                        .and_then(|fd| {
                            let r = x.fs_ioc_setflags(fd, fl.0);
                            x.close(fd)?;
                            r
                        }),
                )
            }
            Step::SetFlagsFd(s, fl) => with_fd(s, &|x, fd| unit(x.fs_ioc_setflags(fd, fl.0))),
            Step::GetFlagsFd(s) => with_fd(s, &|x, fd| {
                format!(
                    "{}; {}",
                    hex(x.fs_ioc_getflags(fd)),
                    fsx(x.fs_ioc_fsgetxattr(fd))
                )
            }),
            Step::FsSetXattr(s, fl, extsize, projid) => with_fd(s, &|x, fd| {
                let a = FsXattr {
                    xflags: fl.0,
                    extsize,
                    projid,
                    ..FsXattr::default()
                };
                unit(x.fs_ioc_fssetxattr(fd, &a))
            }),
            Step::Open(user, path, of) => {
                let r = who(user).open(path.as_bytes(), of.0, 0o644);
                if let Ok(fd) = r {
                    fds.push((user, fd));
                }
                fdr(r)
            }
            Step::Close(s) => match at(s, &fds) {
                Some((user, fd)) => {
                    fds.retain(|&(w, f)| (w, f) != (user, fd));
                    unit(who(user).close(fd))
                }
                None => none,
            },
            Step::Write(s) => with_fd(s, &|x, fd| num(x.write(fd, b"wr"))),
            Step::Pwrite(s, off) => with_fd(s, &|x, fd| num(x.pwrite(fd, b"PW", off))),
            Step::Ftruncate(s, len) => with_fd(s, &|x, fd| unit(x.ftruncate(fd, len))),
            Step::Truncate(user, path, len) => unit(who(user).truncate(path.as_bytes(), len)),
            Step::Fallocate(s, mode) => with_fd(s, &|x, fd| unit(x.fallocate(fd, mode, 0, 10))),
            Step::SetFl(s, append) => with_fd(s, &|x, fd| {
                let arg = if append { O_APPEND } else { 0 };
                s_(x.fcntl(fd, F_SETFL, i64::from(arg)))
            }),
            Step::Chmod(user, path, mode) => unit(who(user).chmod(path.as_bytes(), mode)),
            Step::Chown(user, path, minus_one) => {
                let id = if minus_one {
                    u32::MAX
                } else if user {
                    1000
                } else {
                    0
                };
                unit(who(user).chown(path.as_bytes(), id, id))
            }
            Step::Utimens(user, path, which) => {
                let times = match which {
                    0 => None,
                    1 => Some([Timespec::new(OLD, 0); 2]),
                    _ => Some([Timespec::OMIT; 2]),
                };
                unit(who(user).utimensat(AT_FDCWD, path.as_bytes(), times, 0))
            }
            Step::Setxattr(user, path) => {
                unit(who(user).setxattr(path.as_bytes(), b"user.k", b"w", 0))
            }
            Step::Removexattr(user, path) => {
                unit(who(user).removexattr(path.as_bytes(), b"user.k"))
            }
            Step::Rename(user, from, to, flags) => {
                unit(who(user).renameat2(AT_FDCWD, from.as_bytes(), AT_FDCWD, to.as_bytes(), flags))
            }
            Step::Unlink(user, path) => unit(who(user).unlink(path.as_bytes())),
            Step::Link(user, from, to) => unit(who(user).link(from.as_bytes(), to.as_bytes())),
            Step::Mkdir(user, path) => unit(who(user).mkdir(path.as_bytes(), 0o777)),
            Step::Rmdir(user, path) => unit(who(user).rmdir(path.as_bytes())),
            Step::AccessW(user, path) => unit(who(user).access(path.as_bytes(), W_OK)),
            Step::Tmpfile(user, path) => {
                let r = who(user).open(path.as_bytes(), O_TMPFILE | O_RDWR, 0o644);
                if let Ok(fd) = r {
                    fds.push((user, fd));
                }
                fdr(r)
            }
            // A user's linkat by descriptor meets fs.protected_hardlinks on
            // the kernel side (compare::protected_link_by_fd): root's only.
            Step::LinkFd(s, path) => match at(s, &fds) {
                Some((false, fd)) => {
                    unit(p.linkat(fd, b"", AT_FDCWD, path.as_bytes(), AT_EMPTY_PATH))
                }
                Some((true, _)) => "(the user's)".to_string(),
                None => none,
            },
            Step::Statx(user, path) => attrs_of(who(user).statx(
                AT_FDCWD,
                path.as_bytes(),
                AT_SYMLINK_NOFOLLOW,
                STATX_BASIC_STATS,
            )),
        };
        log.push((format!("case {case} step {i}: {step:?}"), res));
    }
    for (user, fd) in fds {
        who(user).close(fd).unwrap_or(());
    }
    // Every name's state, as root sees it.
    for name in FILES
        .iter()
        .chain(&DIRS)
        .chain(&["e/x", "e/y", "e/d", "s/d/x"])
    {
        let path = name.as_bytes();
        let st = s(p.lstat(path), |st| {
            format!(
                "{:o} size {} nlink {} uid {}",
                st.mode, st.size, st.nlink, st.uid
            )
        });
        let flags = s(p.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0), |fd| {
            let f = hex(p.fs_ioc_getflags(fd));
            let mut buf = [0u8; 64];
            let data = if p.fstat(fd).is_ok_and(|st| st.mode & S_IFMT == S_IFREG) {
                s(p.pread(fd, &mut buf, 0), |n| {
                    format!("{:?}", String::from_utf8_lossy(&buf[..n]))
                })
            } else {
                "-".into()
            };
            p.close(fd).unwrap();
            format!("{f} {data}")
        });
        let mut buf = [0u8; 16];
        let xattr = s(p.lgetxattr(path, b"user.k", &mut buf), |n| {
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        log.push((
            format!("case {case} end: {name}"),
            format!("{st}; {flags}; user.k {xattr}"),
        ));
    }
    p.chdir(b"/").unwrap_or(());
    u.chdir(b"/").unwrap_or(());
}

/// fcntl's result as text.
fn s_(r: SysResult<i64>) -> String {
    s(r, |v| v.to_string())
}

/// Random sequences of flag changes (by path and by descriptor, as root
/// and as uid 1000) mixed with opens, writes, truncates, fallocates,
/// F_SETFL, attribute changes, xattrs and name changes, compared with the
/// kernel step by step, then each name's state (`VFSCALE_FLAGS_CASES`,
/// default 100, of 40 steps; `VFSCALE_SEED` replays; `VFSCALE_FLAGS_ONLY=N`
/// runs case N alone).
#[test]
fn random_sequences_match_the_kernel() {
    let sequences = seeded_cases(
        "VFSCALE_FLAGS_CASES",
        100,
        "VFSCALE_FLAGS_ONLY",
        |mut rnd| random_steps(&mut rnd, 40),
    );
    let theirs = sequences.clone();
    let run_all = |cases: Vec<(usize, Vec<Step>)>| {
        move |p: &dyn ProcessApi, u: &dyn ProcessApi| {
            p.umask(0o022);
            u.umask(0o022);
            let mut log = Log::new();
            for (case, steps) in &cases {
                run_steps(p, u, *case, steps, &mut log);
            }
            log
        }
    };
    let on_kernel = run_all(theirs);
    let on_vfscale = run_all(sequences);
    compare_with_kernel_reclaimed(
        "file flags (random)",
        move |k| {
            let user = kernel_user();
            let log = on_kernel(k, &user);
            user.exit();
            show_kernel_log("file flags (random)", log)
        },
        move |p| {
            let user = p.with_cred(Cred::user(1000, 1000, &[1000])).unwrap();
            let log = on_vfscale(p, &user);
            user.exit();
            log
        },
    );
}
