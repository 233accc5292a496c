//! The fcntl queries and hints of Linux 6.10–6.12 (F_DUPFD_QUERY,
//! F_CREATED_QUERY, F_GET_RW_HINT, F_SET_RW_HINT): one script on the
//! kernel (a private tmpfs root, `on_kernel_as_root`) and on vfscale, as
//! root and as uid 1000, every result compared.
//!
//! The eventfd inode is left out of the hint steps: the kernel's eventfds
//! share one anonymous inode with the whole host (and with every other
//! test of this run), so its hint is whatever some process last set.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::script::{assert_logs_match, show, Log};
use vfscale_difftest::{on_kernel_as_root, KernelProcess};

/// Root's part: the files it opens in the shared tree, then every query.
fn root_script<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("root: {what}"), r));
    p.umask(0o022);
    let a = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let b = p.dup(a).unwrap();
    let c = p.open(b"/f", O_RDWR, 0).unwrap();
    let again = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    let path = p.open(b"/f", O_PATH, 0).unwrap();
    let excl = p.open(b"/g", O_CREAT | O_EXCL | O_WRONLY, 0o600).unwrap();
    let trunc = p.open(b"/g", O_CREAT | O_TRUNC | O_WRONLY, 0o600).unwrap();
    p.symlinkat(b"h", AT_FDCWD, b"/dangling").unwrap();
    let via_link = p.open(b"/dangling", O_CREAT | O_RDWR, 0o600).unwrap();
    let tmp = p.open(b"/", O_TMPFILE | O_RDWR, 0o600).unwrap();
    let dir = p.open(b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    let [s, _s2] = p.socketpair(AF_UNIX, SOCK_STREAM, 0).unwrap();
    let ev = p.eventfd(0, 0).unwrap();
    let mem = p.memfd_create(b"m", 0).unwrap();
    let dupped = p.fcntl(a, F_DUPFD, 20).unwrap() as Fd;
    let all = [
        ("created", a),
        ("dup", b),
        ("reopened", c),
        ("O_CREAT of an existing file", again),
        ("O_PATH", path),
        ("O_EXCL", excl),
        ("O_TRUNC of an existing file", trunc),
        ("through a dangling symlink", via_link),
        ("O_TMPFILE", tmp),
        ("directory", dir),
        ("pipe", r),
        ("socket", s),
        ("eventfd", ev),
        ("memfd", mem),
        ("F_DUPFD", dupped),
    ];
    for (name, fd) in all {
        note(
            &format!("created? {name}"),
            show(p.fcntl(fd, F_CREATED_QUERY, 0)),
        );
    }
    note("created? any arg", show(p.fcntl(a, F_CREATED_QUERY, -7)));
    note("created? closed fd", show(p.fcntl(99, F_CREATED_QUERY, 0)));
    for (x, y) in [
        (a, b),
        (a, c),
        (a, a),
        (a, dupped),
        (a, path),
        (path, path),
        (path, a),
        (r, w),
        (a, 99),
        (a, -1),
        (99, a),
    ] {
        note(
            &format!("same description? {x} {y}"),
            show(p.fcntl(x, F_DUPFD_QUERY, i64::from(y))),
        );
    }
    // The argument is an int: the upper half is dropped.
    note(
        "same description? a, b + 2^32",
        show(p.fcntl(a, F_DUPFD_QUERY, i64::from(b) + (1 << 32))),
    );
    let child = p.fork().unwrap();
    note("fork: created?", show(child.fcntl(a, F_CREATED_QUERY, 0)));
    note(
        "fork: same?",
        show(child.fcntl(b, F_DUPFD_QUERY, i64::from(a))),
    );
    child.exit();

    for (name, fd) in all.iter().filter(|(_, fd)| *fd != ev) {
        note(
            &format!("hint of {name}"),
            show(p.fcntl(*fd, F_GET_RW_HINT, 0)),
        );
    }
    for hint in [1, 2, 0, 3, 4, 5, 6, -1, 1 << 40] {
        note(
            &format!("set hint {hint}"),
            show(p.fcntl(a, F_SET_RW_HINT, hint)),
        );
        note(
            "then through another file",
            show(p.fcntl(c, F_GET_RW_HINT, 0)),
        );
    }
    let ro = p.open(b"/f", O_RDONLY, 0).unwrap();
    note(
        "set through a read-only file",
        show(p.fcntl(ro, F_SET_RW_HINT, 2)),
    );
    note("read back", show(p.fcntl(a, F_GET_RW_HINT, 0)));
    note("set through O_PATH", show(p.fcntl(path, F_SET_RW_HINT, 1)));
    for (name, fd) in [
        ("pipe", w),
        ("socket", s),
        ("memfd", mem),
        ("directory", dir),
    ] {
        note(
            &format!("set hint of {name}"),
            show(p.fcntl(fd, F_SET_RW_HINT, 4)),
        );
        note(
            &format!("hint of {name}"),
            show(p.fcntl(fd, F_GET_RW_HINT, 0)),
        );
    }
    note("the pipe's other end", show(p.fcntl(r, F_GET_RW_HINT, 0)));
    note(
        "the other file keeps its hint",
        show(p.fcntl(excl, F_GET_RW_HINT, 0)),
    );
    p.mkdirat(AT_FDCWD, b"/u", 0o777).unwrap();
    p.chmod(b"/u", 0o777).unwrap();
}

/// uid 1000: root's file, its own files and anonymous objects.
fn user_script<P: ProcessApi>(p: &P, log: &mut Log) {
    let mut note = |what: &str, r: String| log.push((format!("user: {what}"), r));
    let theirs = p.open(b"/f", O_RDONLY, 0).unwrap();
    note(
        "hint of root's file",
        show(p.fcntl(theirs, F_GET_RW_HINT, 0)),
    );
    note(
        "set on root's file",
        show(p.fcntl(theirs, F_SET_RW_HINT, 1)),
    );
    note(
        "set an invalid hint on root's file",
        show(p.fcntl(theirs, F_SET_RW_HINT, 9)),
    );
    let mine = p.open(b"/u/mine", O_CREAT | O_WRONLY, 0o600).unwrap();
    note("created?", show(p.fcntl(mine, F_CREATED_QUERY, 0)));
    note("set on its own file", show(p.fcntl(mine, F_SET_RW_HINT, 3)));
    note(
        "invalid on its own file",
        show(p.fcntl(mine, F_SET_RW_HINT, 6)),
    );
    note("read back", show(p.fcntl(mine, F_GET_RW_HINT, 0)));
    let [r, _w] = p.pipe2(O_NONBLOCK).unwrap();
    note("set on its pipe", show(p.fcntl(r, F_SET_RW_HINT, 2)));
    let mem = p.memfd_create(b"m", 0).unwrap();
    note("set on its memfd", show(p.fcntl(mem, F_SET_RW_HINT, 2)));
    // The eventfd inode belongs to root, whoever made the eventfd.
    let ev = p.eventfd(0, 0).unwrap();
    note("set on an eventfd", show(p.fcntl(ev, F_SET_RW_HINT, 0)));
    note(
        "same description?",
        show(p.fcntl(mine, F_DUPFD_QUERY, i64::from(theirs))),
    );
}

fn script<P: ProcessApi>(root: &P, user: &P) -> Log {
    let mut log = Log::new();
    root_script(root, &mut log);
    user_script(user, &mut log);
    log
}

#[test]
fn fcntl_queries_and_hints_match_the_kernel() {
    let cred = Cred::user(1000, 1000, &[1000]);
    let kernel = match on_kernel_as_root(move |root| {
        let user = KernelProcess::new(&cred)?;
        Ok::<_, String>(script(root, &user))
    }) {
        Ok(Ok(k)) => k,
        Ok(Err(e)) | Err(e) => {
            println!("fcntl kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let root = vfs.root_process();
    let user = vfs.process(Cred::user(1000, 1000, &[1000]));
    let ours = script(&root, &user);
    assert_logs_match(&kernel, &ours);
    root.exit();
    user.exit();
    vfs.check_invariants().unwrap();
}
