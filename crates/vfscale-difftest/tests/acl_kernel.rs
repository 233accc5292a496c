//! POSIX ACLs (`system.posix_acl_access`, `system.posix_acl_default`) run
//! as one script on the kernel (root and three other users in a private
//! tmpfs root) and on vfscale, every result compared: access decisions of
//! each user under many ACLs (read, write, execute, directory search),
//! what chmod does to an ACL, what new files, directories, nodes, sockets
//! and O_TMPFILE files inherit from a default ACL under two umasks, the
//! set-group-ID rule, and the errors of malformed or misplaced ACLs.

use vfscale::abi::*;
use vfscale::cred::acl::{
    value_of as acl, ACL_GROUP as GROUP, ACL_GROUP_OBJ as GROUP_OBJ, ACL_MASK as MASK,
    ACL_OTHER as OTHER, ACL_UNDEFINED_ID as U, ACL_USER as USER, ACL_USER_OBJ as USER_OBJ,
};
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::kernel::KernelProcess;
use vfscale_difftest::on_kernel_as_root;
use vfscale_difftest::script::{assert_logs_match, show, Log};

const ACCESS: &[u8] = b"system.posix_acl_access";
const DEFAULT: &[u8] = b"system.posix_acl_default";

/// The users besides root: uid 1000 (group 1000, also in 100), uid 1001
/// (group 100), uid 1002 (group 1002 only).
fn users() -> [Cred; 3] {
    [
        Cred::user(1000, 1000, &[100]),
        Cred::user(1001, 100, &[]),
        Cred::user(1002, 1002, &[]),
    ]
}

fn getx<P: ProcessApi>(p: &P, path: &[u8], name: &[u8]) -> String {
    let mut buf = [0u8; 256];
    show(p.lgetxattr(path, name, &mut buf).map(|n| buf[..n].to_vec()))
}

fn list<P: ProcessApi>(p: &P, path: &[u8]) -> String {
    let mut buf = [0u8; 512];
    show(
        p.llistxattr(path, &mut buf)
            .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned()),
    )
}

fn mode<P: ProcessApi>(p: &P, path: &[u8]) -> String {
    show(
        p.fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
            .map(|s| format!("{:o}", s.mode)),
    )
}

/// What each user may do with `path`: access(2) for r, w, x (effective
/// ids), then opens for reading and for writing.
fn access_of<P: ProcessApi>(users: &[&P], path: &[u8]) -> String {
    let mut out = String::new();
    for u in users {
        for (bit, c) in [(R_OK, 'r'), (W_OK, 'w'), (X_OK, 'x')] {
            let ok = u.faccessat(AT_FDCWD, path, bit, AT_EACCESS).is_ok();
            out.push(if ok { c } else { '-' });
        }
        for flags in [O_RDONLY, O_WRONLY] {
            out.push(match u.openat(AT_FDCWD, path, flags, 0) {
                Ok(fd) => {
                    u.close(fd).unwrap();
                    'o'
                }
                Err(e) => e.name().and_then(|n| n.chars().nth(1)).unwrap_or('?'),
            });
        }
        out.push(' ');
    }
    out
}

/// Access ACLs worth comparing: named users and groups with and without
/// a mask that limits them, an empty mask, overlapping group entries.
fn access_acls() -> Vec<Vec<(u16, u16, u32)>> {
    vec![
        vec![(USER_OBJ, 6, U), (GROUP_OBJ, 4, U), (OTHER, 0, U)],
        vec![
            (USER_OBJ, 7, U),
            (USER, 6, 1000),
            (GROUP_OBJ, 4, U),
            (MASK, 7, U),
            (OTHER, 0, U),
        ],
        vec![
            (USER_OBJ, 7, U),
            (USER, 7, 1000),
            (GROUP_OBJ, 0, U),
            (MASK, 4, U),
            (OTHER, 5, U),
        ],
        vec![
            (USER_OBJ, 7, U),
            (USER, 7, 1000),
            (GROUP_OBJ, 5, U),
            (MASK, 0, U),
            (OTHER, 5, U),
        ],
        vec![
            (USER_OBJ, 0, U),
            (GROUP_OBJ, 0, U),
            (GROUP, 6, 100),
            (MASK, 6, U),
            (OTHER, 7, U),
        ],
        vec![
            (USER_OBJ, 7, U),
            (GROUP_OBJ, 2, U),
            (GROUP, 4, 100),
            (GROUP, 1, 1002),
            (MASK, 7, U),
            (OTHER, 1, U),
        ],
        vec![
            (USER_OBJ, 7, U),
            (USER, 1, 1001),
            (USER, 4, 1001),
            (GROUP_OBJ, 7, U),
            (MASK, 7, U),
            (OTHER, 0, U),
        ],
        vec![
            (USER_OBJ, 5, U),
            (GROUP_OBJ, 7, U),
            (MASK, 3, U),
            (OTHER, 6, U),
        ],
    ]
}

/// Default ACLs for the inheritance part.
fn default_acls() -> Vec<Vec<(u16, u16, u32)>> {
    vec![
        vec![(USER_OBJ, 7, U), (GROUP_OBJ, 5, U), (OTHER, 0, U)],
        vec![
            (USER_OBJ, 6, U),
            (USER, 7, 1002),
            (GROUP_OBJ, 5, U),
            (MASK, 6, U),
            (OTHER, 4, U),
        ],
        vec![
            (USER_OBJ, 7, U),
            (GROUP_OBJ, 7, U),
            (MASK, 1, U),
            (OTHER, 2, U),
        ],
    ]
}

fn script<P: ProcessApi>(root: &P, users: &[&P]) -> Log {
    let mut log: Log = Vec::new();
    let mut put = |what: String, r: String| log.push((what, r));
    root.mkdirat(AT_FDCWD, b"/t", 0o777).unwrap();
    root.fchmodat(AT_FDCWD, b"/t", 0o777, 0).unwrap();

    // Access decisions on files of several owners and modes.
    for (i, entries) in access_acls().iter().enumerate() {
        for (owner, group) in [(1000, 100), (0, 1002)] {
            let path = format!("/t/f{i}-{owner}").into_bytes();
            let t = |s: &str| format!("acl {i} owner {owner}: {s}");
            let fd = root
                .openat(AT_FDCWD, &path, O_CREAT | O_WRONLY, 0o644)
                .unwrap();
            root.close(fd).unwrap();
            root.fchownat(AT_FDCWD, &path, owner, group, 0).unwrap();
            put(
                t("set"),
                show(root.setxattr(&path, ACCESS, &acl(entries), 0)),
            );
            put(t("mode"), mode(root, &path));
            put(t("get"), getx(root, &path, ACCESS));
            put(t("list"), list(root, &path));
            put(t("access"), access_of(users, &path));
            for m in [0o640, 0o705, 0o2777] {
                put(
                    t(&format!("chmod {m:o}")),
                    show(root.fchmodat(AT_FDCWD, &path, m, 0)),
                );
                put(t(&format!("get after {m:o}")), getx(root, &path, ACCESS));
                put(t(&format!("access after {m:o}")), access_of(users, &path));
            }
            put(t("remove"), show(root.removexattr(&path, ACCESS)));
            put(t("mode after remove"), mode(root, &path));
            put(t("get after remove"), getx(root, &path, ACCESS));
            put(t("access after remove"), access_of(users, &path));
        }
    }

    // Directory search through an ACL.
    root.mkdirat(AT_FDCWD, b"/t/sd", 0o700).unwrap();
    root.mkdirat(AT_FDCWD, b"/t/sd/in", 0o777).unwrap();
    for (i, entries) in access_acls().iter().enumerate() {
        put(
            format!("search acl {i}: set"),
            show(root.setxattr(b"/t/sd", ACCESS, &acl(entries), 0)),
        );
        for (u, p) in users.iter().enumerate() {
            put(
                format!("search acl {i}: user {u} stat"),
                show(p.fstatat(AT_FDCWD, b"/t/sd/in", 0).map(|s| s.ino != 0)),
            );
            put(
                format!("search acl {i}: user {u} mkdir"),
                show(p.mkdirat(AT_FDCWD, &format!("/t/sd/u{u}-{i}").into_bytes(), 0o755)),
            );
        }
    }

    // Inheritance from default ACLs.
    for (i, entries) in default_acls().iter().enumerate() {
        let dir = format!("/t/dd{i}");
        let at = |s: &str| format!("{dir}/{s}").into_bytes();
        let t = |s: &str| format!("default {i}: {s}");
        root.mkdirat(AT_FDCWD, dir.as_bytes(), 0o777).unwrap();
        root.fchmodat(AT_FDCWD, dir.as_bytes(), 0o777, 0).unwrap();
        put(
            t("set"),
            show(root.setxattr(dir.as_bytes(), DEFAULT, &acl(entries), 0)),
        );
        put(t("get"), getx(root, dir.as_bytes(), DEFAULT));
        put(t("list"), list(root, dir.as_bytes()));
        put(t("dir mode"), mode(root, dir.as_bytes()));
        for umask in [0o022, 0o077] {
            let p = users[0];
            let old = p.umask(umask);
            let u = |s: &str| at(&format!("{s}-{umask:o}"));
            let fd = p.openat(AT_FDCWD, &u("file"), O_CREAT | O_WRONLY, 0o666);
            put(t(&format!("create {umask:o}")), show(fd.map(|_| ())));
            put(
                t(&format!("mkdir {umask:o}")),
                show(p.mkdirat(AT_FDCWD, &u("sub"), 0o777)),
            );
            put(
                t(&format!("mknod {umask:o}")),
                show(p.mknodat(AT_FDCWD, &u("fifo"), S_IFIFO | 0o640, 0)),
            );
            put(
                t(&format!("symlink {umask:o}")),
                show(p.symlinkat(b"x", AT_FDCWD, &u("link"))),
            );
            let sock = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
            put(
                t(&format!("bind {umask:o}")),
                show(p.bind(sock, &u("sock"))),
            );
            let tmp = p.openat(AT_FDCWD, dir.as_bytes(), O_TMPFILE | O_RDWR, 0o751);
            if let Ok(fd) = tmp {
                let st = p.fstat(fd).map(|s| format!("{:o}", s.mode));
                put(t(&format!("tmpfile mode {umask:o}")), show(st));
                let mut buf = [0u8; 256];
                let acl = p.fgetxattr(fd, ACCESS, &mut buf).map(|n| buf[..n].to_vec());
                put(t(&format!("tmpfile acl {umask:o}")), show(acl));
                p.close(fd).unwrap();
            }
            for name in ["file", "sub", "fifo", "link", "sock"] {
                let path = u(name);
                put(t(&format!("{name} {umask:o} mode")), mode(root, &path));
                put(
                    t(&format!("{name} {umask:o} access")),
                    getx(root, &path, ACCESS),
                );
                put(
                    t(&format!("{name} {umask:o} default")),
                    getx(root, &path, DEFAULT),
                );
                put(t(&format!("{name} {umask:o} list")), list(root, &path));
            }
            // A directory made in the new directory inherits again.
            put(
                t(&format!("nested {umask:o}")),
                show(p.mkdirat(AT_FDCWD, &at(&format!("sub-{umask:o}/deeper")), 0o700)),
            );
            let deeper = at(&format!("sub-{umask:o}/deeper"));
            put(t(&format!("nested {umask:o} mode")), mode(root, &deeper));
            put(
                t(&format!("nested {umask:o} default")),
                getx(root, &deeper, DEFAULT),
            );
            p.close(sock).unwrap();
            if let Ok(fd) = fd {
                p.close(fd).unwrap();
            }
            p.umask(old);
        }
        put(
            t("remove default"),
            show(root.removexattr(dir.as_bytes(), DEFAULT)),
        );
        put(t("list after"), list(root, dir.as_bytes()));
        let after = at("after");
        put(
            t("create after"),
            show(root.mkdirat(AT_FDCWD, &after, 0o777)),
        );
        put(t("after mode"), mode(root, &after));
    }

    // Errors and edge cases.
    let f = b"/t/e";
    let fd = root.openat(AT_FDCWD, f, O_CREAT | O_WRONLY, 0o644).unwrap();
    root.close(fd).unwrap();
    root.fchownat(AT_FDCWD, f, 1000, 50, 0).unwrap();
    root.symlinkat(b"e", AT_FDCWD, b"/t/l").unwrap();
    let good = acl(&[
        (USER_OBJ, 7, U),
        (USER, 5, 1001),
        (GROUP_OBJ, 5, U),
        (MASK, 5, U),
        (OTHER, 0, U),
    ]);
    let plain = acl(&[(USER_OBJ, 7, 7), (GROUP_OBJ, 5, 9), (OTHER, 1, 3)]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("short", vec![2, 0, 0]),
        ("version 1", {
            let mut v = good.clone();
            v[0] = 1;
            v
        }),
        ("ragged", {
            let mut v = good.clone();
            v.push(0);
            v
        }),
        ("bare header", acl(&[])),
        (
            "unknown tag",
            acl(&[
                (USER_OBJ, 7, U),
                (0x40, 1, U),
                (GROUP_OBJ, 5, U),
                (OTHER, 0, U),
            ]),
        ),
        (
            "named id -1",
            acl(&[
                (USER_OBJ, 7, U),
                (USER, 1, U),
                (GROUP_OBJ, 5, U),
                (MASK, 5, U),
                (OTHER, 0, U),
            ]),
        ),
        (
            "out of order",
            acl(&[(GROUP_OBJ, 5, U), (USER_OBJ, 7, U), (OTHER, 0, U)]),
        ),
        (
            "no mask",
            acl(&[
                (USER_OBJ, 7, U),
                (USER, 5, 1001),
                (GROUP_OBJ, 5, U),
                (OTHER, 0, U),
            ]),
        ),
        (
            "two masks",
            acl(&[
                (USER_OBJ, 7, U),
                (GROUP_OBJ, 5, U),
                (MASK, 5, U),
                (MASK, 5, U),
                (OTHER, 0, U),
            ]),
        ),
        (
            "perm 8",
            acl(&[(USER_OBJ, 8, U), (GROUP_OBJ, 5, U), (OTHER, 0, U)]),
        ),
        ("no other", acl(&[(USER_OBJ, 7, U), (GROUP_OBJ, 5, U)])),
        ("plain, ids ignored", plain.clone()),
        ("good", good.clone()),
    ];
    for (what, value) in &cases {
        put(
            format!("root set {what}"),
            show(root.setxattr(f, ACCESS, value, 0)),
        );
        put(format!("root mode {what}"), mode(root, f));
        put(format!("get {what}"), getx(root, f, ACCESS));
        put(
            format!("owner default {what}"),
            show(users[0].setxattr(f, DEFAULT, value, 0)),
        );
        put(
            format!("symlink {what}"),
            show(root.lsetxattr(b"/t/l", ACCESS, value, 0)),
        );
    }
    put(
        "empty value removes".into(),
        show(root.setxattr(f, ACCESS, b"", 0)),
    );
    put("after empty".into(), getx(root, f, ACCESS));
    put(
        "create flag".into(),
        show(root.setxattr(f, ACCESS, &good, XATTR_CREATE)),
    );
    put(
        "create flag again".into(),
        show(root.setxattr(f, ACCESS, &good, XATTR_CREATE)),
    );
    put(
        "replace flag".into(),
        show(root.setxattr(f, DEFAULT, &good, XATTR_REPLACE)),
    );
    put(
        "not owner".into(),
        show(users[1].setxattr(f, ACCESS, &good, 0)),
    );
    put(
        "not owner remove".into(),
        show(users[1].removexattr(f, ACCESS)),
    );
    put("owner reads".into(), getx(users[0], f, ACCESS));
    put("other reads".into(), getx(users[2], f, ACCESS));
    put("symlink get".into(), getx(root, b"/t/l", ACCESS));
    put(
        "symlink remove".into(),
        show(root.lremovexattr(b"/t/l", ACCESS)),
    );
    put("file default get".into(), getx(root, f, DEFAULT));
    put(
        "file default remove".into(),
        show(root.removexattr(f, DEFAULT)),
    );
    put("small buffer".into(), {
        let mut buf = [0u8; 8];
        show(root.getxattr(f, ACCESS, &mut buf))
    });
    put("size query".into(), show(root.getxattr(f, ACCESS, &mut [])));
    put("list".into(), list(root, f));
    put(
        "user xattr".into(),
        show(root.setxattr(f, b"user.z", b"1", 0)),
    );
    put("list with user".into(), list(root, f));
    put(
        "other system name".into(),
        show(root.setxattr(f, b"system.posix_acl", &good, 0)),
    );
    // The set-group-ID bit: the owner (not in group 50) loses it when
    // setting or removing an access ACL, as with chmod; root keeps it.
    for (who, p) in [("owner", users[0]), ("root", root)] {
        root.fchmodat(AT_FDCWD, f, 0o2775, 0).unwrap();
        put(
            format!("{who} sets, sgid"),
            show(p.setxattr(f, ACCESS, &plain, 0)),
        );
        put(format!("{who} sets, mode"), mode(root, f));
        root.fchmodat(AT_FDCWD, f, 0o2775, 0).unwrap();
        put(
            format!("{who} removes, sgid"),
            show(p.removexattr(f, ACCESS)),
        );
        put(format!("{who} removes, mode"), mode(root, f));
    }
    // A file with an ACL passed by descriptor, and a pipe's.
    let fd = root.openat(AT_FDCWD, f, O_RDONLY, 0).unwrap();
    put("fset".into(), show(root.fsetxattr(fd, ACCESS, &good, 0)));
    put("fget".into(), {
        let mut buf = [0u8; 256];
        show(
            root.fgetxattr(fd, ACCESS, &mut buf)
                .map(|n| buf[..n].to_vec()),
        )
    });
    root.close(fd).unwrap();
    let [r, w] = root.pipe2(0).unwrap();
    put("pipe set".into(), show(root.fsetxattr(r, ACCESS, &good, 0)));
    put(
        "pipe set broken".into(),
        show(root.fsetxattr(r, ACCESS, &[2, 0], 0)),
    );
    put(
        "pipe get".into(),
        show(root.fgetxattr(r, ACCESS, &mut [0u8; 64])),
    );
    put("pipe remove".into(), show(root.fremovexattr(r, ACCESS)));
    root.close(r).unwrap();
    root.close(w).unwrap();
    let m = root.memfd_create(b"m", 0).unwrap();
    put(
        "memfd set".into(),
        show(root.fsetxattr(m, ACCESS, &good, 0)),
    );
    put(
        "memfd get".into(),
        show(root.fgetxattr(m, ACCESS, &mut [0u8; 64])),
    );
    root.close(m).unwrap();
    log
}

#[test]
fn acls_match_the_kernel() {
    let kernel = match on_kernel_as_root(|k| {
        let us = users()
            .iter()
            .map(KernelProcess::new)
            .collect::<Result<Vec<_>, String>>()?;
        let refs: Vec<&KernelProcess> = us.iter().collect();
        Ok::<_, String>(script(k, &refs))
    }) {
        Ok(Ok(k)) => k,
        Ok(Err(e)) | Err(e) => {
            println!("ACL kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let us: Vec<_> = users().into_iter().map(|c| vfs.process(c)).collect();
    let refs: Vec<_> = us.iter().collect();
    let ours = script(&vfs.root_process(), &refs);
    assert_logs_match(&kernel, &ours);
}
