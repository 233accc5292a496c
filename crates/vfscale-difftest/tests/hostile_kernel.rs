//! Hostile input, checked against the real kernel: every call below runs
//! on a root `KernelProcess` in a private tmpfs and on a root vfscale
//! process, and each pair of results must be equal (errno for errno).
//! Covers invalid flag bits per call, huge and negative offsets and sizes,
//! negative and huge fds, fds of the wrong type (O_PATH, directories,
//! regular files as dirfds), symlink loops, over-long names and paths.
//! The same expectations are pinned, without a kernel, in
//! `crates/vfscale/tests/hostile_input.rs`. Skips when not root.

use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};
use vfscale_difftest::on_kernel_as_root;

/// The result of one call, reduced to what must agree.
fn r<T: std::fmt::Debug>(x: SysResult<T>) -> Result<String, i32> {
    x.map(|v| format!("{v:?}")).map_err(|e| e.0)
}

fn ok_kind<T>(x: SysResult<T>) -> Result<(), i32> {
    x.map(|_| ()).map_err(|e| e.0)
}

/// Runs every hostile call on `p` (root, fresh tmpfs as `/`).
pub fn hostile_calls<P: ProcessApi>(p: &P) -> Vec<(&'static str, Result<String, i32>)> {
    let mut out: Vec<(&'static str, Result<String, i32>)> = Vec::new();
    macro_rules! case {
        ($name:expr, $e:expr) => {
            out.push(($name, $e))
        };
    }
    p.mkdir(b"/d", 0o755).unwrap();
    let f = p.open(b"/d/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(f, b"hello").unwrap();
    let dfd = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let pfd = p.open(b"/d/f", O_PATH, 0).unwrap();
    p.symlink(b"loop2", b"/d/loop1").unwrap();
    p.symlink(b"loop1", b"/d/loop2").unwrap();
    p.symlink(b"f", b"/d/lf").unwrap();

    // ---- invalid flag bits ----
    case!(
        "openat unknown flag ignored",
        ok_kind(p.openat(AT_FDCWD, b"/d/f", O_RDONLY | 0x4000_0000, 0)).map(|_| String::new())
    );
    case!(
        "unlinkat flag 1",
        ok_kind(p.unlinkat(AT_FDCWD, b"/d/none", 1)).map(|_| String::new())
    );
    case!(
        "unlinkat flag 0x100",
        ok_kind(p.unlinkat(AT_FDCWD, b"/d/none", 0x100)).map(|_| String::new())
    );
    case!(
        "renameat2 unknown flag",
        ok_kind(p.renameat2(AT_FDCWD, b"/d/f", AT_FDCWD, b"/d/g", 8)).map(|_| String::new())
    );
    case!(
        "renameat2 noreplace|exchange",
        ok_kind(p.renameat2(
            AT_FDCWD,
            b"/d/f",
            AT_FDCWD,
            b"/d/lf",
            RENAME_NOREPLACE | RENAME_EXCHANGE
        ))
        .map(|_| String::new())
    );
    case!(
        "fstatat unknown AT flag",
        ok_kind(p.fstatat(AT_FDCWD, b"/d/f", 0x1)).map(|_| String::new())
    );
    case!(
        "fstatat AT_REMOVEDIR",
        ok_kind(p.fstatat(AT_FDCWD, b"/d/f", AT_REMOVEDIR)).map(|_| String::new())
    );
    case!(
        "statx unknown AT flag",
        ok_kind(p.statx(AT_FDCWD, b"/d/f", 0x1, STATX_BASIC_STATS)).map(|_| String::new())
    );
    case!(
        "statx reserved mask bit",
        ok_kind(p.statx(AT_FDCWD, b"/d/f", 0, 0x8000_0000)).map(|_| String::new())
    );
    case!(
        "linkat unknown flag",
        ok_kind(p.linkat(AT_FDCWD, b"/d/f", AT_FDCWD, b"/d/h", 0x1)).map(|_| String::new())
    );
    case!(
        "linkat AT_SYMLINK_NOFOLLOW",
        ok_kind(p.linkat(AT_FDCWD, b"/d/f", AT_FDCWD, b"/d/h", AT_SYMLINK_NOFOLLOW))
            .map(|_| String::new())
    );
    case!(
        "fchownat unknown flag",
        ok_kind(p.fchownat(AT_FDCWD, b"/d/f", u32::MAX, u32::MAX, 0x1)).map(|_| String::new())
    );
    case!(
        "utimensat unknown flag",
        ok_kind(p.utimensat(AT_FDCWD, b"/d/f", None, 0x1)).map(|_| String::new())
    );
    case!(
        "faccessat unknown flag",
        ok_kind(p.faccessat(AT_FDCWD, b"/d/f", F_OK, 0x1)).map(|_| String::new())
    );
    case!(
        "faccessat bad mode",
        ok_kind(p.faccessat(AT_FDCWD, b"/d/f", 8, 0)).map(|_| String::new())
    );
    case!(
        "fchmodat unknown flag",
        ok_kind(p.fchmodat(AT_FDCWD, b"/d/f", 0o644, 0x1)).map(|_| String::new())
    );
    case!("dup3 bad flag", r(p.dup3(f, 20, 1)));
    case!("dup3 same fd", r(p.dup3(f, f, 0)));
    case!(
        "close_range bad flag",
        ok_kind(p.close_range(50, 60, 1)).map(|_| String::new())
    );
    case!(
        "close_range first > last",
        ok_kind(p.close_range(60, 50, 0)).map(|_| String::new())
    );
    case!(
        "umount2 unknown flag",
        ok_kind(p.umount2(b"/d", 0x10)).map(|_| String::new())
    );
    case!(
        "umount2 expire|detach",
        ok_kind(p.umount2(b"/d", MNT_EXPIRE | MNT_DETACH)).map(|_| String::new())
    );
    case!("lseek bad whence", r(p.lseek(f, 0, 7)));
    case!("lseek negative whence", r(p.lseek(f, 0, -1)));

    // ---- huge offsets and sizes ----
    case!("lseek negative result", r(p.lseek(f, -10, SEEK_SET)));
    case!(
        "lseek SEEK_CUR overflow",
        r({
            let _ = p.lseek(f, 5, SEEK_SET);
            p.lseek(f, i64::MAX, SEEK_CUR)
        })
    );
    case!("lseek SEEK_END overflow", r(p.lseek(f, i64::MAX, SEEK_END)));
    case!("lseek beyond EOF", r(p.lseek(f, 1 << 40, SEEK_SET)));
    case!("lseek SEEK_DATA beyond EOF", r(p.lseek(f, 100, SEEK_DATA)));
    case!("lseek SEEK_HOLE beyond EOF", r(p.lseek(f, 100, SEEK_HOLE)));
    case!("pwrite at i64::MAX", r(p.pwrite(f, b"x", i64::MAX)));
    case!("pwrite at i64::MAX, empty", r(p.pwrite(f, b"", i64::MAX)));
    case!("pwrite negative offset", r(p.pwrite(f, b"x", -1)));
    case!("pread negative offset", r(p.pread(f, &mut [0u8; 4], -1)));
    case!("pread at i64::MAX", r(p.pread(f, &mut [0u8; 4], i64::MAX)));
    case!(
        "pwrite at MAX_FILE_SIZE-1",
        r(p.pwrite(f, b"xy", MAX_FILE_SIZE - 1))
    );
    case!(
        "ftruncate negative",
        ok_kind(p.ftruncate(f, -1)).map(|_| String::new())
    );
    case!(
        "ftruncate i64::MAX",
        ok_kind(p.ftruncate(f, i64::MAX)).map(|_| String::new())
    );
    case!(
        "truncate negative",
        ok_kind(p.truncate(b"/d/f", -1)).map(|_| String::new())
    );
    case!(
        "truncate i64::MAX",
        ok_kind(p.truncate(b"/d/f", i64::MAX)).map(|_| String::new())
    );
    case!("size after", r(p.fstat(f).map(|s| s.size)));

    // ---- bad descriptors ----
    for (name, fd) in [
        ("fd -1", -1),
        ("fd -100", -100),
        ("fd i32::MAX", i32::MAX),
        ("fd 1<<20", 1 << 20),
    ] {
        case!(name, r(p.read(fd, &mut [0u8; 1])));
        case!(name, r(p.write(fd, b"x")));
        case!(name, ok_kind(p.close(fd)).map(|_| String::new()));
        case!(name, r(p.dup(fd)));
        case!(name, ok_kind(p.fstat(fd)).map(|_| String::new()));
        case!(name, ok_kind(p.fchdir(fd)).map(|_| String::new()));
        case!(name, ok_kind(p.fstatat(fd, b"x", 0)).map(|_| String::new()));
        case!(
            name,
            ok_kind(p.fstatat(fd, b"/d/f", 0)).map(|_| String::new())
        );
        case!(
            name,
            ok_kind(p.fstatat(fd, b"", AT_EMPTY_PATH)).map(|_| String::new())
        );
        case!(name, r(p.dup2(f, fd)));
        case!(name, ok_kind(p.ftruncate(fd, 0)).map(|_| String::new()));
        case!(name, r(p.getdents64(fd, &mut [0u8; 64])));
    }

    // ---- descriptors of the wrong type ----
    case!("O_PATH read", r(p.read(pfd, &mut [0u8; 1])));
    case!("O_PATH write", r(p.write(pfd, b"x")));
    case!("O_PATH pread", r(p.pread(pfd, &mut [0u8; 1], 0)));
    case!(
        "O_PATH fchmod",
        ok_kind(p.fchmod(pfd, 0o600)).map(|_| String::new())
    );
    case!(
        "O_PATH fchown",
        ok_kind(p.fchown(pfd, 0, 0)).map(|_| String::new())
    );
    case!(
        "O_PATH ftruncate",
        ok_kind(p.ftruncate(pfd, 0)).map(|_| String::new())
    );
    case!("O_PATH fsync", ok_kind(p.fsync(pfd)).map(|_| String::new()));
    case!("O_PATH lseek", r(p.lseek(pfd, 0, SEEK_SET)));
    case!("O_PATH getdents", r(p.getdents64(pfd, &mut [0u8; 64])));
    case!(
        "O_PATH futimens",
        ok_kind(p.futimens(pfd, None)).map(|_| String::new())
    );
    case!("O_PATH fstat", ok_kind(p.fstat(pfd)).map(|_| String::new()));
    case!("dir read", r(p.read(dfd, &mut [0u8; 1])));
    case!("dir write", r(p.write(dfd, b"x")));
    case!(
        "dir ftruncate",
        ok_kind(p.ftruncate(dfd, 0)).map(|_| String::new())
    );
    case!("dir pwrite", r(p.pwrite(dfd, b"x", 0)));
    case!("file getdents", r(p.getdents64(f, &mut [0u8; 64])));
    case!("file fchdir", ok_kind(p.fchdir(f)).map(|_| String::new()));
    case!(
        "file as dirfd",
        ok_kind(p.fstatat(f, b"x", 0)).map(|_| String::new())
    );
    case!(
        "file as dirfd, mkdirat",
        ok_kind(p.mkdirat(f, b"x", 0o755)).map(|_| String::new())
    );
    case!(
        "file as dirfd, absolute path",
        ok_kind(p.fstatat(f, b"/d", 0)).map(|_| String::new())
    );
    case!(
        "file as dirfd, empty path",
        ok_kind(p.fstatat(f, b"", AT_EMPTY_PATH)).map(|_| String::new())
    );
    case!("open dir for write", r(p.open(b"/d", O_WRONLY, 0)));
    case!(
        "open file O_DIRECTORY",
        r(p.open(b"/d/f", O_RDONLY | O_DIRECTORY, 0))
    );
    case!(
        "open file/ (trailing slash)",
        r(p.open(b"/d/f/", O_RDONLY, 0))
    );
    case!(
        "creat with trailing slash",
        r(p.open(b"/d/new/", O_CREAT | O_RDWR, 0o644))
    );
    case!(
        "mkdir over file",
        ok_kind(p.mkdir(b"/d/f", 0o755)).map(|_| String::new())
    );
    case!(
        "rmdir a file",
        ok_kind(p.rmdir(b"/d/f")).map(|_| String::new())
    );
    case!(
        "unlink a dir",
        ok_kind(p.unlink(b"/d")).map(|_| String::new())
    );
    case!(
        "rename dir onto file",
        ok_kind(p.rename(b"/d", b"/d/f")).map(|_| String::new())
    );
    case!(
        "rename into own subtree",
        ok_kind(p.rename(b"/d", b"/d/sub")).map(|_| String::new())
    );
    case!("readlink of a file", r(p.readlink(b"/d/f")));
    case!(
        "readlinkat len 0",
        r(p.readlinkat(AT_FDCWD, b"/d/lf", &mut []))
    );
    case!("getdents len 0", r(p.getdents64(dfd, &mut [])));
    case!("getdents len 1", r(p.getdents64(dfd, &mut [0u8; 1])));

    // ---- symlink loops ----
    case!("open loop", r(p.open(b"/d/loop1", O_RDONLY, 0)));
    case!(
        "stat loop",
        ok_kind(p.stat(b"/d/loop1")).map(|_| String::new())
    );
    case!(
        "lstat loop",
        ok_kind(p.lstat(b"/d/loop1")).map(|_| String::new())
    );
    case!(
        "loop as directory",
        ok_kind(p.stat(b"/d/loop1/x")).map(|_| String::new())
    );
    case!(
        "creat through loop",
        r(p.open(b"/d/loop1", O_CREAT | O_RDWR, 0o644))
    );
    case!(
        "chdir loop",
        ok_kind(p.chdir(b"/d/loop1")).map(|_| String::new())
    );
    case!(
        "O_NOFOLLOW on symlink",
        r(p.open(b"/d/lf", O_RDONLY | O_NOFOLLOW, 0))
    );
    let mut chain_ok = Ok(());
    for i in 0..45 {
        let target = if i == 0 {
            b"f".to_vec()
        } else {
            format!("c{}", i - 1).into_bytes()
        };
        let name = format!("/d/c{i}").into_bytes();
        chain_ok = chain_ok.and(p.symlink(&target, &name));
    }
    case!("chain setup", ok_kind(chain_ok).map(|_| String::new()));
    case!(
        "chain of 40",
        ok_kind(p.stat(b"/d/c39")).map(|_| String::new())
    );
    case!(
        "chain of 41",
        ok_kind(p.stat(b"/d/c40")).map(|_| String::new())
    );
    case!(
        "chain of 45",
        ok_kind(p.stat(b"/d/c44")).map(|_| String::new())
    );

    // ---- long names and paths ----
    let long_name = |n: usize| {
        let mut v = b"/d/".to_vec();
        v.extend(std::iter::repeat_n(b'n', n));
        v
    };
    case!(
        "name 255",
        r(p.open(&long_name(255), O_CREAT | O_RDWR, 0o644))
    );
    case!(
        "name 256",
        r(p.open(&long_name(256), O_CREAT | O_RDWR, 0o644))
    );
    case!(
        "name 256 stat",
        ok_kind(p.stat(&long_name(256))).map(|_| String::new())
    );
    case!(
        "name 256 mkdir",
        ok_kind(p.mkdir(&long_name(256), 0o755)).map(|_| String::new())
    );
    case!(
        "name 256 symlink target ok",
        ok_kind(p.symlink(&long_name(256), b"/d/longt")).map(|_| String::new())
    );
    let path_of = |n: usize| {
        let mut v = Vec::new();
        while v.len() < n {
            v.extend_from_slice(b"/.");
        }
        v.truncate(n);
        if v.ends_with(b"/") {
            v.pop();
            v.push(b'.');
        }
        v
    };
    case!(
        "path 4095",
        ok_kind(p.stat(&path_of(4095))).map(|_| String::new())
    );
    case!(
        "path 4096",
        ok_kind(p.stat(&path_of(4096))).map(|_| String::new())
    );
    case!(
        "path 1 MiB",
        ok_kind(p.stat(&path_of(1 << 20))).map(|_| String::new())
    );
    case!(
        "symlink target 4095",
        ok_kind(p.symlink(&vec![b'a'; 4095], b"/d/t4095")).map(|_| String::new())
    );
    case!(
        "symlink target 4096",
        ok_kind(p.symlink(&vec![b'a'; 4096], b"/d/t4096")).map(|_| String::new())
    );
    case!(
        "symlink empty target",
        ok_kind(p.symlink(b"", b"/d/empty")).map(|_| String::new())
    );
    case!("empty path", ok_kind(p.stat(b"")).map(|_| String::new()));
    case!(
        "mkdir empty",
        ok_kind(p.mkdir(b"", 0o755)).map(|_| String::new())
    );
    case!(
        "rename empty",
        ok_kind(p.rename(b"", b"/d/x")).map(|_| String::new())
    );
    case!("rmdir .", ok_kind(p.rmdir(b"/d/.")).map(|_| String::new()));
    case!(
        "rmdir ..",
        ok_kind(p.rmdir(b"/d/..")).map(|_| String::new())
    );
    case!("rmdir /", ok_kind(p.rmdir(b"/")).map(|_| String::new()));
    case!(
        "rename /",
        ok_kind(p.rename(b"/", b"/d/x")).map(|_| String::new())
    );
    case!(
        "rename to .",
        ok_kind(p.rename(b"/d/f", b"/d/.")).map(|_| String::new())
    );
    case!(
        "link to dir",
        ok_kind(p.link(b"/d", b"/d2")).map(|_| String::new())
    );
    case!(
        "mknod bad type",
        ok_kind(p.mknodat(AT_FDCWD, b"/d/m", 0o170000 | 0o644, 0)).map(|_| String::new())
    );
    case!(
        "mknod S_IFDIR",
        ok_kind(p.mknodat(AT_FDCWD, b"/d/m", S_IFDIR | 0o644, 0)).map(|_| String::new())
    );
    case!(
        "chmod type bits ignored",
        ok_kind(p.chmod(b"/d/f", S_IFDIR | 0o600)).map(|_| String::new())
    );
    case!("mode after", r(p.stat(b"/d/f").map(|s| s.mode)));
    case!(
        "utimensat bad nsec",
        ok_kind(p.utimensat(
            AT_FDCWD,
            b"/d/f",
            Some([Timespec::new(0, -1), Timespec::OMIT]),
            0
        ))
        .map(|_| String::new())
    );
    case!(
        "utimensat huge nsec",
        ok_kind(p.utimensat(
            AT_FDCWD,
            b"/d/f",
            Some([Timespec::new(0, 1_000_000_000), Timespec::OMIT]),
            0
        ))
        .map(|_| String::new())
    );
    case!(
        "chroot a file",
        ok_kind(p.chroot(b"/d/f")).map(|_| String::new())
    );
    case!("getcwd", r(p.getcwd()));
    out
}

#[test]
fn hostile_input_matches_kernel() {
    let kernel = match on_kernel_as_root(hostile_calls) {
        Ok(k) => k,
        Err(e) => {
            println!("hostile-input kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let v = vfs.root_process();
    let ours = hostile_calls(&v);
    let mut diffs = Vec::new();
    for ((name, k), (_, o)) in kernel.iter().zip(&ours) {
        let show = |x: &Result<String, i32>| match x {
            Ok(s) => format!("Ok({s})"),
            Err(e) => format!("{}", Errno(*e)),
        };
        if k != o {
            diffs.push(format!("{name}: kernel {} vfscale {}", show(k), show(o)));
        }
    }
    assert_eq!(kernel.len(), ours.len());
    if std::env::var_os("VFSCALE_HOSTILE_DUMP").is_some() {
        for (name, k) in &kernel {
            println!("{name}: {k:?}");
        }
    }
    // The comparison is not vacuous: errors were met.
    let errors = kernel.iter().filter(|(_, k)| k.is_err()).count();
    assert!(
        errors > 100,
        "only {errors} of {} calls failed",
        kernel.len()
    );
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    v.exit();
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}
