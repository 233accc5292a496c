//! The permission model as a table, with every expected cell taken from the
//! real kernel.
//!
//! Rows: file and directory modes (each of the nine rwx bits alone, none,
//! all, and the "class match denies" shapes 0707/0070/0700), sticky
//! directories, setgid directories and set-id files. Columns: callers —
//! root, the owner (uid 1000), a member of the file's group through a
//! *supplementary* group (uid 1001, groups 1001+2000), another user (uid
//! 1002), and a set-uid-like caller whose real ids are "other" and whose
//! effective ids are the owner's (to tell faccessat's real-id check from
//! AT_EACCESS). Cells: open for read/write, create/mkdir/unlink/rename in a
//! directory, chmod, chown (to another uid, to the caller's own group, to a
//! foreign group), utimensat (NOW, explicit, UTIME_NOW pair), faccessat
//! (real vs effective ids), getdents on the directory, search (stat and
//! chdir through it), sticky unlink/rename, setgid inheritance, suid/sgid
//! clearing on write, truncate and chown.
//!
//! Every cell is computed twice: on `KernelProcess`es (per-thread
//! credentials on a private tmpfs, see `vfscale_difftest`) and on vfscale
//! processes with the same credentials; each cell's outcome (result or
//! errno, plus the resulting mode/owner where the call changes them) must
//! match. The failing cells are printed, one per line. Skips with a printed
//! reason when not root.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::{enter_private_tmpfs_root, KernelProcess};

const OWNER: u32 = 1000;
const FILE_GROUP: u32 = 2000;
const OTHER: u32 = 1002;
const FOREIGN_GROUP: u32 = 4000;

/// The callers, by column name.
fn callers() -> Vec<(&'static str, Cred)> {
    let setuid_like = Cred {
        ruid: OTHER,
        euid: OWNER,
        fsuid: OWNER,
        rgid: OTHER,
        egid: OWNER,
        fsgid: OWNER,
        groups: vec![OTHER],
    };
    vec![
        ("root", Cred::root()),
        ("owner", Cred::user(OWNER, OWNER, &[OWNER])),
        ("group", Cred::user(1001, 1001, &[1001, FILE_GROUP])),
        ("other", Cred::user(OTHER, OTHER, &[OTHER])),
        ("suid", setuid_like),
    ]
}

const MODES: [u32; 14] = [
    0o000, 0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001, 0o777, 0o707, 0o070,
    0o700,
];

fn res<T>(x: SysResult<T>) -> String {
    match x {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("{e}"),
    }
}

/// mode/uid/gid of `path` as root sees it.
fn attrs<P: ProcessApi>(root: &P, path: &[u8]) -> String {
    match root.lstat(path) {
        Ok(s) => format!("mode={:o} uid={} gid={}", s.mode, s.uid, s.gid),
        Err(e) => format!("absent({e})"),
    }
}

struct Table<'a, P: ProcessApi> {
    root: &'a P,
    callers: Vec<(&'static str, Cred, P)>,
    next: usize,
    cells: Vec<(String, String)>,
}

impl<P: ProcessApi> Table<'_, P> {
    /// A fresh base directory `/mN` (root, 0755) for one cell.
    fn base(&mut self) -> String {
        self.next += 1;
        let b = format!("/m{}", self.next);
        self.root.mkdir(b.as_bytes(), 0o755).unwrap();
        b
    }

    fn cell(&mut self, name: String, outcome: String) {
        self.cells.push((name, outcome));
    }

    /// `/mN/f`: 4 bytes, owner 1000:2000, `mode`.
    fn file(&mut self, mode: u32) -> String {
        let b = self.base();
        let f = format!("{b}/f");
        let fd = self
            .root
            .open(f.as_bytes(), O_CREAT | O_WRONLY, 0o600)
            .unwrap();
        self.root.write(fd, b"data").unwrap();
        self.root.close(fd).unwrap();
        self.root.chown(f.as_bytes(), OWNER, FILE_GROUP).unwrap();
        self.root.chmod(f.as_bytes(), mode).unwrap();
        f
    }

    /// `/mN/d` (owner 1000:2000, `mode`) holding `victim`, a root file.
    fn dir(&mut self, mode: u32) -> String {
        let b = self.base();
        let d = format!("{b}/d");
        self.root.mkdir(d.as_bytes(), 0o755).unwrap();
        let v = format!("{d}/victim");
        let fd = self
            .root
            .open(v.as_bytes(), O_CREAT | O_WRONLY, 0o644)
            .unwrap();
        self.root.close(fd).unwrap();
        self.root.chown(d.as_bytes(), OWNER, FILE_GROUP).unwrap();
        self.root.chmod(d.as_bytes(), mode).unwrap();
        d
    }

    fn file_cells(&mut self) {
        for mode in MODES {
            for c in 0..self.callers.len() {
                let who = self.callers[c].0;
                let egid = self.callers[c].1.egid;
                let tag = |op: &str| format!("file {mode:03o} {who:5} {op}");
                for (op, flags) in [("open(O_RDONLY)", O_RDONLY), ("open(O_WRONLY)", O_WRONLY)] {
                    let f = self.file(mode);
                    let p = &self.callers[c].2;
                    let r = p.open(f.as_bytes(), flags, 0);
                    if let Ok(fd) = r {
                        p.close(fd).unwrap();
                    }
                    self.cell(tag(op), res(r));
                }
                let f = self.file(mode);
                let r = self.callers[c].2.chmod(f.as_bytes(), 0o640);
                self.cell(
                    tag("chmod 0640"),
                    format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                );
                for (op, uid, gid) in [
                    ("chown owner->other uid", OTHER, u32::MAX),
                    ("chown group->own group", u32::MAX, egid),
                    ("chown group->foreign group", u32::MAX, FOREIGN_GROUP),
                    ("chown group->file group", u32::MAX, FILE_GROUP),
                ] {
                    let f = self.file(mode);
                    let r = self.callers[c].2.chown(f.as_bytes(), uid, gid);
                    self.cell(
                        tag(op),
                        format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                    );
                }
                for (op, times) in [
                    ("utimensat(NULL)", None),
                    ("utimensat(NOW,NOW)", Some([Timespec::NOW, Timespec::NOW])),
                    (
                        "utimensat(explicit)",
                        Some([Timespec::new(1, 0), Timespec::new(2, 0)]),
                    ),
                    ("utimensat(NOW,OMIT)", Some([Timespec::NOW, Timespec::OMIT])),
                ] {
                    let f = self.file(mode);
                    let r = self.callers[c]
                        .2
                        .utimensat(AT_FDCWD, f.as_bytes(), times, 0);
                    self.cell(tag(op), res(r));
                }
                let f = self.file(mode);
                for (bit, bname) in [(R_OK, "R"), (W_OK, "W"), (X_OK, "X"), (F_OK, "F")] {
                    for (flags, fname) in [(0, "real"), (AT_EACCESS, "effective")] {
                        let r = self.callers[c]
                            .2
                            .faccessat(AT_FDCWD, f.as_bytes(), bit, flags);
                        self.cell(tag(&format!("faccessat {bname}_OK {fname}")), res(r));
                    }
                }
            }
        }
    }

    fn dir_cells(&mut self) {
        for mode in MODES {
            for c in 0..self.callers.len() {
                let who = self.callers[c].0;
                let tag = |op: &str| format!("dir  {mode:03o} {who:5} {op}");
                let d = self.dir(mode);
                let new = format!("{d}/new");
                let r = self.callers[c]
                    .2
                    .open(new.as_bytes(), O_CREAT | O_WRONLY, 0o666);
                if let Ok(fd) = r {
                    self.callers[c].2.close(fd).unwrap();
                }
                self.cell(
                    tag("create"),
                    format!("{} {}", res(r), attrs(self.root, new.as_bytes())),
                );
                let d = self.dir(mode);
                let sub = format!("{d}/sub");
                let r = self.callers[c].2.mkdir(sub.as_bytes(), 0o777);
                self.cell(
                    tag("mkdir"),
                    format!("{} {}", res(r), attrs(self.root, sub.as_bytes())),
                );
                let d = self.dir(mode);
                let r = self.callers[c].2.unlink(format!("{d}/victim").as_bytes());
                self.cell(tag("unlink"), res(r));
                let d = self.dir(mode);
                let r = self.callers[c].2.rename(
                    format!("{d}/victim").as_bytes(),
                    format!("{d}/renamed").as_bytes(),
                );
                self.cell(tag("rename within"), res(r));
                let d = self.dir(mode);
                let p = &self.callers[c].2;
                let listing = match p.open(d.as_bytes(), O_RDONLY | O_DIRECTORY, 0) {
                    Err(e) => format!("open {e}"),
                    Ok(fd) => {
                        let mut buf = vec![0u8; 4096];
                        let out = match p.getdents64(fd, &mut buf) {
                            Err(e) => format!("getdents {e}"),
                            Ok(n) => {
                                let mut names: Vec<String> = parse_dirents64(&buf[..n])
                                    .into_iter()
                                    .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                                    .collect();
                                names.sort();
                                names.join(",")
                            }
                        };
                        p.close(fd).unwrap();
                        out
                    }
                };
                self.cell(tag("readdir"), listing);
                let r = self.callers[c].2.stat(format!("{d}/victim").as_bytes());
                self.cell(tag("search (stat d/victim)"), res(r));
                let r = self.callers[c]
                    .2
                    .faccessat(AT_FDCWD, d.as_bytes(), X_OK, AT_EACCESS);
                self.cell(tag("faccessat X_OK effective"), res(r));
                let p = &self.callers[c].2;
                let r = p.open(format!("{d}/victim").as_bytes(), O_PATH, 0);
                if let Ok(fd) = r {
                    p.close(fd).unwrap();
                }
                self.cell(tag("open(O_PATH) d/victim"), res(r));
            }
        }
    }

    /// Sticky directories: `/mN/s` owned by uid 1000 (the "owner" caller),
    /// group 2000, holding `v` owned by uid 1001 (the "group" caller) and
    /// `mine` owned by each caller in turn.
    fn sticky_cells(&mut self) {
        for mode in [0o1777, 0o1770, 0o1733] {
            for c in 0..self.callers.len() {
                let who = self.callers[c].0;
                let tag = |op: &str| format!("sticky {mode:04o} {who:5} {op}");
                let setup = |t: &mut Self| {
                    let b = t.base();
                    let s = format!("{b}/s");
                    t.root.mkdir(s.as_bytes(), 0o755).unwrap();
                    t.root.chown(s.as_bytes(), OWNER, FILE_GROUP).unwrap();
                    t.root.chmod(s.as_bytes(), mode).unwrap();
                    let v = format!("{s}/v");
                    let fd = t
                        .root
                        .open(v.as_bytes(), O_CREAT | O_WRONLY, 0o666)
                        .unwrap();
                    t.root.close(fd).unwrap();
                    t.root.chown(v.as_bytes(), 1001, 1001).unwrap();
                    s
                };
                let s = setup(self);
                let r = self.callers[c].2.unlink(format!("{s}/v").as_bytes());
                self.cell(tag("unlink another's file"), res(r));
                let s = setup(self);
                let r = self.callers[c]
                    .2
                    .rename(format!("{s}/v").as_bytes(), format!("{s}/w").as_bytes());
                self.cell(tag("rename another's file"), res(r));
                let s = setup(self);
                let mine = format!("{s}/mine");
                let p = &self.callers[c].2;
                let made = p.open(mine.as_bytes(), O_CREAT | O_WRONLY, 0o644);
                if let Ok(fd) = made {
                    p.close(fd).unwrap();
                }
                let r = p.rename(mine.as_bytes(), format!("{s}/v").as_bytes());
                self.cell(
                    tag("create own + rename over another's"),
                    format!("{} then {}", res(made), res(r)),
                );
                let s = setup(self);
                let r =
                    self.callers[c]
                        .2
                        .open(format!("{s}/v").as_bytes(), O_CREAT | O_RDWR, 0o644);
                if let Ok(fd) = r {
                    self.callers[c].2.close(fd).unwrap();
                }
                self.cell(tag("open(O_CREAT) another's file"), res(r));
            }
        }
    }

    /// Setgid directories: group and setgid-bit inheritance.
    fn setgid_cells(&mut self) {
        for dmode in [0o2777, 0o777, 0o2770] {
            for c in 0..self.callers.len() {
                let who = self.callers[c].0;
                let tag = |op: &str| format!("setgid-dir {dmode:04o} {who:5} {op}");
                for (op, fmode, is_dir) in [
                    ("create 0644", 0o644, false),
                    ("create 02755", 0o2755, false),
                    ("create 02745 (no g+x)", 0o2745, false),
                    ("mkdir 0755", 0o755, true),
                    ("mkdir 02755", 0o2755, true),
                ] {
                    let b = self.base();
                    let g = format!("{b}/g");
                    self.root.mkdir(g.as_bytes(), 0o755).unwrap();
                    self.root.chown(g.as_bytes(), OWNER, FILE_GROUP).unwrap();
                    self.root.chmod(g.as_bytes(), dmode).unwrap();
                    let n = format!("{g}/n");
                    let p = &self.callers[c].2;
                    let old = p.umask(0);
                    let r = if is_dir {
                        p.mkdir(n.as_bytes(), fmode)
                    } else {
                        p.open(n.as_bytes(), O_CREAT | O_WRONLY, fmode)
                            .and_then(|fd| p.close(fd))
                    };
                    p.umask(old);
                    self.cell(
                        tag(op),
                        format!("{} {}", res(r), attrs(self.root, n.as_bytes())),
                    );
                }
            }
        }
    }

    /// Set-id bits cleared by write, truncate and chown.
    fn setid_cells(&mut self) {
        for mode in [0o6777, 0o6767, 0o4777, 0o2777, 0o2767, 0o6755] {
            for c in 0..self.callers.len() {
                let who = self.callers[c].0;
                let egid = self.callers[c].1.egid;
                let uid = self.callers[c].1.euid;
                let tag = |op: &str| format!("setid {mode:04o} {who:5} {op}");
                let f = self.file(mode);
                let p = &self.callers[c].2;
                let r = p.open(f.as_bytes(), O_WRONLY, 0).and_then(|fd| {
                    let w = p.write(fd, b"x");
                    p.close(fd).unwrap();
                    w
                });
                self.cell(
                    tag("write"),
                    format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                );
                let f = self.file(mode);
                let p = &self.callers[c].2;
                let r = p.open(f.as_bytes(), O_WRONLY, 0).and_then(|fd| {
                    let w = p.write(fd, b"");
                    p.close(fd).unwrap();
                    w
                });
                self.cell(
                    tag("write 0 bytes"),
                    format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                );
                let f = self.file(mode);
                let r = self.callers[c].2.truncate(f.as_bytes(), 1);
                self.cell(
                    tag("truncate"),
                    format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                );
                for (op, u, g) in [
                    ("chown(-1,-1)", u32::MAX, u32::MAX),
                    ("chown(-1,own group)", u32::MAX, egid),
                    ("chown(self,-1)", uid, u32::MAX),
                ] {
                    let f = self.file(mode);
                    let r = self.callers[c].2.chown(f.as_bytes(), u, g);
                    self.cell(
                        tag(op),
                        format!("{} {}", res(r), attrs(self.root, f.as_bytes())),
                    );
                }
                // A setgid directory keeps its bit across chown.
                let d = self.dir(mode & 0o7777);
                let r = self.callers[c].2.chown(d.as_bytes(), u32::MAX, egid);
                self.cell(
                    tag("dir chown(-1,own group)"),
                    format!("{} {}", res(r), attrs(self.root, d.as_bytes())),
                );
            }
        }
    }
}

/// Every cell of the matrix on one side; `make` builds a process with a
/// credential.
fn matrix<P: ProcessApi>(root: &P, make: &dyn Fn(&Cred) -> P) -> Vec<(String, String)> {
    root.umask(0o022);
    let callers = callers()
        .into_iter()
        .map(|(n, c)| {
            let p = make(&c);
            p.umask(0o022);
            (n, c, p)
        })
        .collect();
    let mut t = Table {
        root,
        callers,
        next: 0,
        cells: Vec::new(),
    };
    t.file_cells();
    t.dir_cells();
    t.sticky_cells();
    t.setgid_cells();
    t.setid_cells();
    t.cells
}

#[test]
fn permission_matrix_matches_kernel() {
    let kernel = std::thread::spawn(|| {
        enter_private_tmpfs_root().map_err(|e| e.to_string())?;
        let root = KernelProcess::new(&Cred::root())?;
        let make = |c: &Cred| KernelProcess::new(c).expect("kernel process");
        Ok::<_, String>(matrix(&root, &make))
    })
    .join()
    .expect("kernel side");
    let kernel = match kernel {
        Ok(k) => k,
        Err(e) => {
            println!("permission matrix skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let root = vfs.root_process();
    let make = |c: &Cred| vfs.process(c.clone());
    let ours = matrix(&root, &make);
    assert_eq!(kernel.len(), ours.len());
    if std::env::var_os("VFSCALE_PERM_DUMP").is_some() {
        for (name, k) in &kernel {
            println!("{name}: {k}");
        }
    }
    let mut failing = Vec::new();
    for ((name, k), (_, o)) in kernel.iter().zip(&ours) {
        if k != o {
            failing.push(format!("{name}: kernel `{k}` vfscale `{o}`"));
        }
    }
    // Not vacuous: both outcomes occur in quantity.
    let denied = kernel
        .iter()
        .filter(|(_, k)| k.contains("EACCES") || k.contains("EPERM"))
        .count();
    let allowed = kernel.iter().filter(|(_, k)| k.starts_with("ok")).count();
    println!("{} cells: {allowed} allowed, {denied} denied", kernel.len());
    assert!(
        denied > 300 && allowed > 300,
        "{denied} denied, {allowed} allowed"
    );
    assert!(
        failing.is_empty(),
        "{} of {} cells differ from the kernel:\n{}",
        failing.len(),
        kernel.len(),
        failing.join("\n")
    );
    drop(root);
    vfs.drop_caches();
    vfs.check_invariants().unwrap();
}
