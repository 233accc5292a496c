//! preadv, pwritev, preadv2 and pwritev2 (with every RWF_* flag), and
//! posix_fadvise and readahead, on
//! regular files, O_APPEND files, pipes, sockets, eventfds, directories and
//! epolls: one script on the kernel (a private tmpfs root,
//! `on_kernel_as_root`) and on vfscale, every result compared — the
//! errors in Linux's order, where each call reads or writes, what it does
//! to the file position, and the file's bytes after.

use vfscale::abi::*;
use vfscale::ProcessApi;
use vfscale_difftest::script::{compare_with_kernel, show, Log};

const FLAGS: [(&str, i32); 13] = [
    ("0", 0),
    ("HIPRI", RWF_HIPRI),
    ("DSYNC", RWF_DSYNC),
    ("SYNC", RWF_SYNC),
    ("NOWAIT", RWF_NOWAIT),
    ("APPEND", RWF_APPEND),
    ("NOAPPEND", RWF_NOAPPEND),
    ("ATOMIC", RWF_ATOMIC),
    ("DONTCACHE", RWF_DONTCACHE),
    ("APPEND|NOAPPEND", RWF_APPEND | RWF_NOAPPEND),
    ("NOSIGNAL", RWF_NOSIGNAL),
    ("unknown 0x200", 0x200),
    ("DSYNC|NOWAIT|HIPRI", RWF_DSYNC | RWF_NOWAIT | RWF_HIPRI),
];

/// A two-segment read of `len` bytes by `call`: its count and the bytes.
fn read_split(len: usize, call: impl FnOnce(&mut [&mut [u8]]) -> SysResult<usize>) -> String {
    let mut a = vec![0u8; len / 2];
    let mut b = vec![0u8; len - len / 2];
    show(
        call(&mut [&mut a, &mut b])
            .map(|n| String::from_utf8_lossy(&[a, b].concat()[..n]).into_owned()),
    )
}

fn read2<P: ProcessApi>(p: &P, fd: Fd, len: usize, offset: i64, flags: i32) -> String {
    read_split(len, |bufs| p.preadv2(fd, bufs, offset, flags))
}

fn read2_plain<P: ProcessApi>(p: &P, fd: Fd, len: usize, offset: i64) -> String {
    read_split(len, |bufs| p.preadv(fd, bufs, offset))
}

fn contents<P: ProcessApi>(p: &P, path: &[u8]) -> String {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let mut b = vec![0u8; 256];
    let n = p.read(fd, &mut b).unwrap();
    p.close(fd).unwrap();
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn script<P: ProcessApi>(p: &P) -> Log {
    let mut log = Log::new();
    let mut note = |what: &str, r: String| log.push((what.to_string(), r));
    p.umask(0o022);
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(f, b"0123456789").unwrap();
    p.lseek(f, 2, SEEK_SET).unwrap();
    // Positions: preadv leaves the file position, preadv2 at -1 uses it.
    note("preadv at 5", read2_plain(p, f, 4, 5));
    note("position after preadv", show(p.lseek(f, 0, SEEK_CUR)));
    note("preadv at -1", read2_plain(p, f, 4, -1));
    note("preadv at -2", read2_plain(p, f, 4, -2));
    note("preadv2 at -1", read2(p, f, 4, -1, 0));
    note(
        "position after preadv2 at -1",
        show(p.lseek(f, 0, SEEK_CUR)),
    );
    note("preadv2 at -2", read2(p, f, 4, -2, 0));
    note("preadv2 past the end", read2(p, f, 4, 100, 0));
    note("pwritev at 8", show(p.pwritev(f, &[b"ab", b"cd"], 8)));
    note("position after pwritev", show(p.lseek(f, 0, SEEK_CUR)));
    note("pwritev2 at -1", show(p.pwritev2(f, &[b"X", b"Y"], -1, 0)));
    note(
        "position after pwritev2 at -1",
        show(p.lseek(f, 0, SEEK_CUR)),
    );
    note("contents", contents(p, b"/f"));
    // Every flag on a regular file, reading and writing at an offset.
    for (name, flags) in FLAGS {
        note(&format!("preadv2 {name}"), read2(p, f, 4, 0, flags));
        note(
            &format!("pwritev2 {name}"),
            show(p.pwritev2(f, &[b"w", b"v"], 1, flags)),
        );
        note(&format!("contents after {name}"), contents(p, b"/f"));
        note(
            &format!("position after {name}"),
            show(p.lseek(f, 0, SEEK_CUR)),
        );
    }
    // Appending and not.
    note("append at -1", show(p.pwritev2(f, &[b"E"], -1, RWF_APPEND)));
    note("position after append at -1", show(p.lseek(f, 0, SEEK_CUR)));
    let a = p.open(b"/f", O_RDWR | O_APPEND, 0).unwrap();
    note("O_APPEND pwritev at 0", show(p.pwritev(a, &[b"P"], 0)));
    note(
        "O_APPEND NOAPPEND at 0",
        show(p.pwritev2(a, &[b"N"], 0, RWF_NOAPPEND)),
    );
    note(
        "O_APPEND NOAPPEND at -1",
        show(p.pwritev2(a, &[b"M"], -1, RWF_NOAPPEND)),
    );
    note(
        "position of the O_APPEND file",
        show(p.lseek(a, 0, SEEK_CUR)),
    );
    note("contents with appends", contents(p, b"/f"));
    // Empty vectors and too many.
    note("empty, bad flags", show(p.preadv2(f, &mut [], 0, 0x200)));
    note(
        "empty write, bad flags",
        show(p.pwritev2(f, &[b""], 0, 0x200)),
    );
    let mut many: Vec<[u8; 1]> = vec![[0]; 1025];
    let mut refs: Vec<&mut [u8]> = many.iter_mut().map(|b| b.as_mut_slice()).collect();
    note("1025 iovecs", show(p.preadv2(f, &mut refs, 0, 0)));
    note("1025 iovecs, bad fd", show(p.preadv2(99, &mut refs, 0, 0)));
    // Descriptors of every kind.
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    let d = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let [r, w] = p.pipe2(0).unwrap();
    let [s1, s2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let e = p.eventfd(3, 0).unwrap();
    let ep = p.epoll_create1(0).unwrap();
    note("bad fd", read2(p, 99, 4, 0, 0));
    note(
        "write to a read-only file",
        show(p.pwritev2(ro, &[b"x"], 0, 0)),
    );
    note("read a directory", read2(p, d, 4, 0, 0));
    note("read a directory at -1", read2(p, d, 4, -1, 0));
    note("read a directory, NOWAIT", read2(p, d, 4, -1, RWF_NOWAIT));
    note("read an epoll", read2(p, ep, 4, -1, 0));
    note("read an epoll, empty", show(p.preadv2(ep, &mut [], -1, 0)));
    note("readv an epoll, empty", show(p.readv(ep, &mut [])));
    note("writev an epoll, empty", show(p.writev(ep, &[b""])));
    note(
        "write an epoll, empty vector, bad flags",
        show(p.pwritev2(ep, &[], -1, 0x200)),
    );
    note("readv a directory, empty", show(p.readv(d, &mut [])));
    note("preadv on a pipe", read2_plain(p, r, 4, 0));
    note("preadv2 on a pipe at 0", read2(p, r, 4, 0, 0));
    note(
        "pipe, NOWAIT on an empty blocking pipe",
        read2(p, r, 4, -1, RWF_NOWAIT),
    );
    note(
        "pipe write",
        show(p.pwritev2(w, &[b"pi", b"pe"], -1, RWF_NOWAIT)),
    );
    note(
        "pipe write, APPEND",
        show(p.pwritev2(w, &[b"!"], -1, RWF_APPEND)),
    );
    note(
        "pipe write, ATOMIC",
        show(p.pwritev2(w, &[b"!"], -1, RWF_ATOMIC)),
    );
    note(
        "pipe write, DONTCACHE",
        show(p.pwritev2(w, &[b"!"], -1, RWF_DONTCACHE)),
    );
    note("pipe read", read2(p, r, 16, -1, RWF_HIPRI));
    note(
        "socket, NOWAIT on an empty blocking socket",
        read2(p, s1, 4, -1, RWF_NOWAIT),
    );
    note(
        "socket write",
        show(p.pwritev2(s2, &[b"so", b"ck"], -1, RWF_DSYNC)),
    );
    note("socket read", read2(p, s1, 16, -1, RWF_SYNC));
    note("preadv on a socket", read2_plain(p, s1, 4, 0));
    note(
        "eventfd read, NOWAIT",
        show(p.preadv2(e, &mut [&mut [0u8; 8]], -1, RWF_NOWAIT)),
    );
    note(
        "eventfd read, empty, NOWAIT",
        show(p.preadv2(e, &mut [&mut [0u8; 8]], -1, RWF_NOWAIT)),
    );
    let one = 1u64.to_ne_bytes();
    for (name, flags) in FLAGS {
        note(
            &format!("eventfd write {name}"),
            show(p.pwritev2(e, &[&one], -1, flags)),
        );
    }
    note("eventfd preadv", show(p.preadv(e, &mut [&mut [0u8; 8]], 0)));
    // posix_fadvise and readahead on every kind of descriptor.
    let wo = p.open(b"/f", O_WRONLY, 0).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    let kinds = [
        ("file", f),
        ("write-only file", wo),
        ("O_PATH", path),
        ("directory", d),
        ("pipe", r),
        ("socket", s1),
        ("eventfd", e),
        ("epoll", ep),
        ("closed", 99),
    ];
    for (name, fd) in kinds {
        for advice in [-1, 0, 1, 2, 3, 4, 5, 6, 7] {
            note(
                &format!("fadvise {name} {advice}"),
                show(p.posix_fadvise(fd, 0, 100, advice)),
            );
        }
        note(
            &format!("fadvise {name}, negative length"),
            show(p.posix_fadvise(fd, 0, -1, 0)),
        );
        note(
            &format!("fadvise {name}, negative offset"),
            show(p.posix_fadvise(fd, -5, 10, 0)),
        );
        note(&format!("readahead {name}"), show(p.readahead(fd, 0, 4096)));
        note(
            &format!("readahead {name}, huge"),
            show(p.readahead(fd, 0, usize::MAX)),
        );
        note(
            &format!("readahead {name}, negative offset"),
            show(p.readahead(fd, -1, 10)),
        );
    }
    p.close(wo).unwrap();
    p.close(path).unwrap();
    for fd in [f, a, ro, d, r, w, s1, s2, e, ep] {
        p.close(fd).unwrap();
    }
    log
}

#[test]
fn vectored_positional_io_matches_the_kernel() {
    compare_with_kernel("preadv2/pwritev2", script, script);
}
