//! Fuzz target: the process API as an arbitrary operation sequence.
//!
//! A byte decoder (each op: one selector byte, then argument bytes) drives
//! two processes (root, and uid 1000 in group 1000) on a fresh `Vfs` over
//! a small pool of names, so operations collide; `drop_caches` runs among
//! the calls too. Checked: no panic from any call; after the sequence,
//! every process exits, caches are dropped and
//! `Vfs::check_invariants` passes (names <-> dentries <-> inodes <-> nlink,
//! refcounts at rest, object counters, no file lock left behind).

#![no_main]

use libfuzzer_sys::fuzz_target;
use vfscale::abi::*;
use vfscale::{Cred, Fd, Process, ProcessApi, Vfs, VfsConfig};

const NAMES: [&[u8]; 12] = [
    b"/a",
    b"/a/b",
    b"/a/f",
    b"/a/b/g",
    b"f",
    b"b",
    b"/a/../a/b",
    b"/l",
    b"/a/b/../f",
    b"..",
    b"/",
    b"/a/b/g/",
];

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn name(&mut self) -> Option<&'static [u8]> {
        Some(NAMES[self.byte()? as usize % NAMES.len()])
    }
    /// The next byte's count (at most 47) of raw bytes.
    fn run(&mut self) -> Option<&[u8]> {
        let n = (self.byte()? % 48) as usize;
        let (run, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        Some(run)
    }
}

fn step(vfs: &Vfs, procs: &mut Vec<Process>, fds: &mut Vec<Fd>, bytes: &mut Bytes) -> Option<()> {
    let sel = bytes.byte()?;
    let p = &procs[(sel >> 5) as usize % procs.len()];
    let a = bytes.name()?;
    let arg = bytes.byte()?;
    let fd = || {
        fds.get(arg as usize % fds.len().max(1))
            .copied()
            .unwrap_or(-1)
    };
    let mut buf = [0u8; 64];
    match sel & 31 {
        0 => {
            // The high bit: an unnamed file in `a` (O_EXCL with the next).
            let flags = if arg & 0x80 == 0 {
                O_CREAT | O_RDWR
            } else {
                O_TMPFILE | O_RDWR | if arg & 0x40 != 0 { O_EXCL } else { 0 }
            };
            if let Ok(f) = p.open(a, flags, 0o644 | u32::from(arg & 7) << 6) {
                fds.push(f);
            }
        }
        // The high bit: openat2 from a descriptor (or the cwd) with the
        // next byte's resolve flags.
        1 if arg & 0x80 != 0 => {
            let resolve = u64::from(bytes.byte()?);
            let dirfd = if resolve & 0x80 != 0 { fd() } else { AT_FDCWD };
            let how = OpenHow {
                flags: u64::from(arg & 0x43),
                mode: if arg & 0x40 != 0 { 0o600 } else { 0 },
                resolve: resolve & 0x7f,
            };
            if let Ok(f) = p.openat2(dirfd, a, &how) {
                fds.push(f);
            }
        }
        1 => {
            if let Ok(f) = p.open(
                a,
                i32::from(arg) & (O_ACCMODE | O_DIRECTORY | O_NOFOLLOW | O_TRUNC | O_APPEND),
                0,
            ) {
                fds.push(f);
            }
        }
        2 => drop(p.close(fd())),
        3 => drop(p.write(fd(), &[arg; 7])),
        4 => drop(p.read(fd(), &mut buf)),
        5 => drop(p.unlink(a)),
        6 => drop(p.mkdir(a, 0o700 | u32::from(arg) & 0o77)),
        7 => drop(p.rmdir(a)),
        8 => drop(p.rename(a, bytes.name()?)),
        9 => drop(p.renameat2(AT_FDCWD, a, AT_FDCWD, bytes.name()?, u32::from(arg & 3))),
        // The high bit: link a descriptor's file (an unnamed one's first name).
        10 if arg & 0x80 != 0 => drop(p.linkat(fd(), b"", AT_FDCWD, a, AT_EMPTY_PATH)),
        10 => drop(p.link(a, bytes.name()?)),
        11 => drop(p.symlink(bytes.name()?, a)),
        12 => drop(p.chmod(a, u32::from(arg) << 4 | 0o7)),
        13 => drop(p.chown(a, u32::from(arg & 1) * 1000, u32::from(arg & 2) * 500)),
        14 => drop(p.truncate(a, i64::from(arg) - 8)),
        15 => drop(p.chdir(a)),
        16 => drop(p.read_dir(a)),
        // One in sixteen: drop_caches between the calls (unused names,
        // removed directories kept by them, their parents).
        17 if arg & 0xf0 == 0xf0 => drop(vfs.drop_caches()),
        17 => drop(p.stat(a)),
        18 => drop(p.lseek(fd(), i64::from(arg), i32::from(arg % 5))),
        19 => drop(p.getdents64(fd(), &mut buf)),
        20 => drop(p.fchdir(fd())),
        21 => drop(p.dup(fd())),
        22 => drop(p.unlinkat(AT_FDCWD, a, AT_REMOVEDIR)),
        23 => drop(p.readlink(a)),
        24 => drop(p.ftruncate(fd(), i64::from(arg))),
        25 => drop(p.pwrite(fd(), b"xyz", i64::from(arg) * 1000)),
        26 => {
            if procs.len() < 4 {
                if let Ok(child) = p.fork() {
                    procs.push(child);
                }
            }
        }
        27 => {
            if procs.len() > 2 {
                procs.pop().unwrap().exit();
            }
        }
        // Mount namespaces: unshare (CLONE_NEWNS, or CLONE_FS with bit
        // 0x40), or setns into another process's and a mountinfo listing.
        28 if arg % 10 >= 8 => {
            let i = (sel >> 5) as usize % procs.len();
            if arg % 10 == 8 {
                let flags = if arg & 0x40 != 0 {
                    CLONE_FS
                } else {
                    CLONE_NEWNS
                };
                let _ = procs[i].unshare(flags);
            } else {
                let j = usize::from(bytes.byte()?) % procs.len();
                if i != j {
                    let (lo, hi) = procs.split_at_mut(i.max(j));
                    let (me, other) = if i < j {
                        (&mut lo[i], &hi[0])
                    } else {
                        (&mut hi[0], &lo[j])
                    };
                    let _ = me.setns_mount(other);
                }
                let _ = procs[i].mountinfo();
            }
        }
        // A new tmpfs (bit 0x40: with options from the input, bit 0x20 a
        // remount instead), a bind or a move from another name, or a
        // propagation type; the high bit adds MS_REC.
        28 if arg % 8 == 0 && arg & 0x40 != 0 => {
            let flags = if arg & 0x20 != 0 { MS_REMOUNT } else { 0 };
            let data = bytes.run()?;
            let _ = p.mount_with_data(b"none", a, b"tmpfs", flags, Some(data));
        }
        28 => {
            let rec = if arg & 0x80 != 0 { MS_REC } else { 0 };
            let (source, fstype, flags) = match arg % 8 {
                0 => (&b"none"[..], &b"tmpfs"[..], 0),
                1 => (bytes.name()?, &b""[..], MS_BIND | rec),
                2 => (bytes.name()?, &b""[..], MS_MOVE),
                3 => (&b""[..], &b""[..], MS_SHARED | rec),
                4 => (&b""[..], &b""[..], MS_SLAVE | rec),
                5 => (&b""[..], &b""[..], MS_PRIVATE | rec),
                6 => (&b""[..], &b""[..], MS_UNBINDABLE | rec),
                _ => (&b""[..], &b""[..], MS_SHARED | MS_SLAVE),
            };
            let _ = p.mount(source, a, fstype, flags);
        }
        // pivot_root with bit 0x40 (to the given name, put_old another),
        // else umount2.
        29 if arg & 0x40 != 0 => drop(p.pivot_root(a, bytes.name()?)),
        29 => {
            let _ = p.umount2(a, i32::from(arg & 2));
        }
        // mount_setattr with bit 0x40 (AT_RECURSIVE with 0x20; the
        // attributes and propagation from the next bytes), else chroot.
        30 if arg & 0x40 != 0 => {
            let attr = MountAttr {
                attr_set: u64::from(bytes.byte()?) | u64::from(bytes.byte()? & 0x30) << 16,
                attr_clr: u64::from(bytes.byte()?),
                propagation: [0, MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, MS_REC]
                    [usize::from(arg & 7) % 6],
                userns_fd: u64::from(arg & 0x10),
            };
            let flags = if arg & 0x20 != 0 { AT_RECURSIVE } else { 0 };
            drop(p.mount_setattr(AT_FDCWD, a, flags, &attr));
        }
        // With bit 0x80: move_mount of a kept descriptor onto the name
        // (0x04; a final symlink followed with 0x10), else open_tree of
        // the name (a detached copy with 0x01, AT_RECURSIVE with 0x02),
        // its descriptor kept. Else chroot.
        30 if arg & 0x84 == 0x84 => {
            let follow = if arg & 0x10 != 0 {
                MOVE_MOUNT_T_SYMLINKS
            } else {
                0
            };
            drop(p.move_mount(fd(), b"", AT_FDCWD, a, MOVE_MOUNT_F_EMPTY_PATH | follow));
        }
        30 if arg & 0x80 != 0 => {
            let flags =
                i32::from(arg & 1) * OPEN_TREE_CLONE + i32::from(arg & 2) * (AT_RECURSIVE / 2);
            if let Ok(f) = p.open_tree(AT_FDCWD, a, flags) {
                fds.push(f);
            }
        }
        30 => drop(p.chroot(a)),
        // File locks, never a waiting form (one thread would wait forever);
        // sockets by name, all non-blocking for the same reason.
        _ => match arg % 15 {
            0 => drop(p.fchmod(fd(), u32::from(arg))),
            1 => drop(p.flock(fd(), i32::from(bytes.byte()?) | LOCK_NB)),
            // POSIX ACLs: set (an entry list from the next bytes: tags,
            // permissions past rwx and ids of the two users, -1 and others)
            // or remove either kind, on a path or a descriptor.
            2 => {
                let b = bytes.byte()?;
                let name: &[u8] = if b & 1 == 0 {
                    b"system.posix_acl_access"
                } else {
                    b"system.posix_acl_default"
                };
                let value = if b & 2 != 0 {
                    Vec::new()
                } else {
                    let tags = [1u16, 2, 4, 8, 0x10, 0x20, 0x40];
                    let ids = [1000u32, 0, u32::MAX, 500];
                    let mut entries = Vec::new();
                    for _ in 0..(b >> 2) % 8 {
                        let (t, q) = (bytes.byte()?, bytes.byte()?);
                        entries.push((
                            tags[usize::from(t) % tags.len()],
                            u16::from(q & 15),
                            ids[usize::from(t >> 4) % ids.len()],
                        ));
                    }
                    vfscale::cred::acl::value_of(&entries)
                };
                let _ = match (b & 0x80 != 0, value.is_empty()) {
                    (false, true) => p.removexattr(a, name),
                    (false, false) => p.setxattr(a, name, &value, 0),
                    (true, true) => p.fremovexattr(fd(), name),
                    (true, false) => p.fsetxattr(fd(), name, &value, 0),
                };
            }
            4 => {
                let types = [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM];
                let ty = types[usize::from(bytes.byte()?) % types.len()];
                if let Ok(s) = p.socket(AF_UNIX, ty | SOCK_NONBLOCK, 0) {
                    fds.push(s);
                }
            }
            5 | 6 => {
                // A pool name, its abstract twin, or empty (autobind).
                let name: Vec<u8> = match bytes.byte()? % 3 {
                    0 => a.to_vec(),
                    1 => [b"\0".as_slice(), a].concat(),
                    _ => Vec::new(),
                };
                let _ = if arg % 14 == 5 {
                    p.bind(fd(), &name)
                } else {
                    p.connect(fd(), &name)
                };
            }
            3 => {
                // Datagrams by name (or to the peer), non-blocking (this arm
                // shared arm 2's number, unreachable, until session 31).
                let b = bytes.byte()?;
                if b & 1 == 0 {
                    let name = [b"\0".as_slice(), a].concat();
                    let to = match b % 3 {
                        0 => Some(a),
                        1 => Some(name.as_slice()),
                        _ => None,
                    };
                    // Carrying up to two descriptors (SCM_RIGHTS) and, every
                    // other time, credentials (SCM_CREDENTIALS; some
                    // invalid), after turning SO_PASSCRED on or off.
                    let rights: Vec<Fd> = (0..(b >> 2) % 3).map(|_| fd()).collect();
                    let creds = (b & 0x10 != 0).then(|| Ucred {
                        pid: i32::from(arg) - 2,
                        uid: [0, 1000, u32::MAX][usize::from(arg) % 3],
                        gid: 0,
                    });
                    let _ = p.setsockopt(fd(), SOL_SOCKET, SO_PASSCRED, &[b >> 7, 0, 0, 0]);
                    // And any other option (names 0 to 79) with the next 0
                    // to 19 input bytes as its value, read back at a length
                    // of 0 to 31 (SO_SNDBUF's budget changes what sends
                    // take; every call here is non-blocking, so timeouts
                    // change nothing).
                    if arg & 1 == 0 {
                        let name = i32::from(arg >> 1) % 80;
                        let value: Vec<u8> = (0..b % 20).filter_map(|_| bytes.byte()).collect();
                        let _ = p.setsockopt(fd(), SOL_SOCKET, name, &value);
                        let mut out = vec![0u8; usize::from(b >> 3)];
                        let _ = p.getsockopt(fd(), SOL_SOCKET, name, &mut out);
                    }
                    let _ = p.sendmsg(fd(), &[b"dgram"], MSG_DONTWAIT, to, &rights, creds);
                } else {
                    let mut buf = [0u8; 8];
                    let flags = [0, MSG_PEEK, MSG_TRUNC, MSG_OOB][usize::from(b >> 1) % 4];
                    // A control buffer of 0 to 63 bytes.
                    let room = usize::from(b >> 2);
                    if let Ok(m) = p.recvmsg(fd(), &mut [&mut buf], flags | MSG_DONTWAIT, room) {
                        fds.extend(m.fds);
                    }
                }
            }
            7 => {
                if bytes.byte()? & 1 == 0 {
                    let _ = p.listen(fd(), i32::from(arg >> 4));
                } else if let Ok(s) = p.accept4(fd(), SOCK_NONBLOCK) {
                    fds.push(s);
                }
            }
            // epoll: a new instance, an interest-list change with any
            // events (nested epolls included), a wait that does not block.
            8 => match bytes.byte()? % 3 {
                0 => {
                    if let Ok(e) = p.epoll_create1(0) {
                        fds.push(e);
                    }
                }
                1 => {
                    let op = i32::from(bytes.byte()? % 5);
                    let events =
                        u32::from_le_bytes([bytes.byte()?, bytes.byte()?, 0, bytes.byte()?]);
                    let event = (arg & 1 == 0).then_some(EpollEvent { events, data: 0 });
                    let _ = p.epoll_ctl(fd(), op, fd(), event);
                }
                _ => {
                    let mut out = [EpollEvent::default(); 4];
                    let n = usize::from(arg) % 5;
                    let _ = p.epoll_wait(fd(), &mut out[..n], 0);
                }
            },
            // Vectored positional I/O with any RWF_* flags, at an offset
            // or at the file position (-1); never waits (RWF_NOWAIT is
            // forced on, which only streams accept); advice.
            9 => {
                let flags = i32::from(bytes.byte()?) << 1 | RWF_NOWAIT;
                let offset = i64::from(bytes.byte()? as i8);
                match arg % 4 {
                    0 => {
                        let mut a = [0u8; 3];
                        let mut b = [0u8; 5];
                        let _ = p.preadv2(fd(), &mut [&mut a, &mut b], offset, flags);
                    }
                    1 => drop(p.pwritev2(fd(), &[b"ab", b"cde"], offset, flags)),
                    2 => drop(p.posix_fadvise(fd(), offset, offset * 3, flags & 7)),
                    _ => drop(p.readahead(fd(), offset, flags as usize)),
                }
            }
            // splice, tee, vmsplice and sendfile with any flags but
            // SPLICE_F_NONBLOCK forced on; a splice or sendfile only into a
            // file that never waits by itself (a regular file, one with
            // O_NONBLOCK, or a bad descriptor), since a socket or
            // sendfile's pipe waits by its own mode.
            10 => {
                let out = fds
                    .get(usize::from(bytes.byte()?) % fds.len().max(1))
                    .copied()
                    .unwrap_or(-1);
                let flags = u32::from(bytes.byte()?) | SPLICE_F_NONBLOCK;
                let offset = i64::from(bytes.byte()? as i8);
                let len = usize::from(bytes.byte()?) * 97;
                let never_waits = p
                    .fcntl(out, F_GETFL, 0)
                    .map_or(true, |fl| fl & i64::from(O_NONBLOCK) != 0)
                    || p.fstat(out).is_ok_and(|st| st.mode & S_IFMT == S_IFREG);
                let mut at = offset;
                let given = (flags & 0x20 != 0).then_some(&mut at);
                match arg % 4 {
                    3 => {
                        let mut a = [b'v'; 5];
                        let mut b = [b'w'; 3];
                        let _ = p.vmsplice(out, &mut [&mut a, &mut b], flags & 0x1f | 2);
                    }
                    0 if never_waits => {
                        let mut at2 = offset;
                        let given2 = (flags & 0x40 != 0).then_some(&mut at2);
                        let _ = p.splice(fd(), given, out, given2, len, flags & 0x1f | 2);
                    }
                    1 => {
                        let _ = p.tee(fd(), out, len, flags & 0x1f | 2);
                    }
                    2 if never_waits => {
                        let _ = p.sendfile(out, fd(), given, len);
                    }
                    _ => {}
                }
            }
            // inotify: an instance (always non-blocking), a watch on a
            // name with any mask bits, a removal of any watch descriptor,
            // a read of any descriptor that cannot wait.
            11 => match bytes.byte()? % 4 {
                0 => {
                    if let Ok(i) = p.inotify_init1(IN_NONBLOCK | i32::from(arg & 0x40) << 13) {
                        fds.push(i);
                    }
                }
                1 => {
                    let m = u32::from_le_bytes([bytes.byte()?, bytes.byte()?, 0, bytes.byte()?]);
                    let _ = p.inotify_add_watch(fd(), a, m | u32::from(arg & 7) << 24);
                }
                2 => drop(p.inotify_rm_watch(fd(), i32::from(bytes.byte()? as i8))),
                _ => {
                    let f = fd();
                    let never_waits = p
                        .fcntl(f, F_GETFL, 0)
                        .is_ok_and(|fl| fl & i64::from(O_NONBLOCK) != 0);
                    if never_waits {
                        let n = usize::from(bytes.byte()?) % buf.len();
                        let _ = p.read(f, &mut buf[..n]);
                    }
                }
            },
            // Inode flags: set (mostly the four tmpfs keeps, sometimes
            // others), as flags, as an fsxattr record or by path
            // (file_setattr, a record of fuzzed size and tail), or read.
            12 => {
                let b = bytes.byte()?;
                let flags = u32::from(b & 0xf8) | u32::from(b & 7) << 27;
                let x = FsXattr {
                    xflags: xflags_of(flags) | u32::from(b & 3) << 11,
                    extsize: u32::from(b & 4),
                    ..FsXattr::default()
                };
                let mut rec = vec![0u8; 20 + usize::from(bytes.byte()? % 16)];
                let n = rec.len().min(FILE_ATTR_SIZE_VER0);
                let attr = FileAttr {
                    xflags: u64::from(x.xflags),
                    extsize: x.extsize,
                    ..FileAttr::default()
                };
                rec[..n].copy_from_slice(&attr.to_bytes()[..n]);
                let at = i32::from(arg & 0x40) << 2; // AT_SYMLINK_NOFOLLOW
                let _ = match bytes.byte()? % 6 {
                    0 => p.fs_ioc_setflags(fd(), flags).map(drop),
                    1 => p.fs_ioc_fssetxattr(fd(), &x),
                    2 => p.fs_ioc_getflags(fd()).map(drop),
                    3 => p.fs_ioc_fsgetxattr(fd()).map(drop),
                    4 => p.file_setattr(AT_FDCWD, a, &rec, at),
                    _ => p.file_getattr(AT_FDCWD, a, &mut rec, at),
                };
            }
            // fsopen's configurations: a new one kept (or fspick's of the
            // name), or fsconfig of a kept descriptor (a command, a tmpfs
            // key with a value from the next byte), or fsmount of one (the
            // descriptor kept).
            13 => {
                let b = bytes.byte()?;
                match b % 4 {
                    0 => {
                        if let Ok(f) = p.fsopen(if b & 4 == 0 { b"tmpfs" } else { b"x" }, 0) {
                            fds.push(f);
                        }
                    }
                    3 => {
                        if let Ok(f) = p.fspick(AT_FDCWD, a, u32::from(b >> 4)) {
                            fds.push(f);
                        }
                    }
                    1 => {
                        let f = p.fsmount(fd(), 0, u64::from(bytes.byte()?));
                        if let Ok(f) = f {
                            fds.push(f);
                        }
                    }
                    _ => {
                        let keys: [&[u8]; 8] = [
                            b"ro", b"rw", b"mode", b"uid", b"size", b"source", b"noswap", b"x",
                        ];
                        let values: [&[u8]; 4] = [b"0700", b"1k", b"", b"42"];
                        let v = bytes.byte()?;
                        let cmd = u32::from(v % 10);
                        let value = (v & 0x10 != 0).then_some(values[usize::from(v >> 5) % 4]);
                        let key = (v & 0x80 == 0).then_some(keys[usize::from(b >> 3) % 8]);
                        let _ = p.fsconfig(fd(), cmd, key, value, i32::from(v & 0x40 != 0));
                    }
                }
            }
            _ => {
                let cmds = [F_GETLK, F_SETLK, F_OFD_GETLK, F_OFD_SETLK, 99];
                let cmd = cmds[usize::from(bytes.byte()?) % cmds.len()];
                let mut lock = Flock {
                    l_type: i16::from(bytes.byte()? % 4),
                    l_whence: i16::from(bytes.byte()? % 4),
                    l_start: i64::from(bytes.byte()? as i8),
                    l_len: i64::from(bytes.byte()? as i8),
                    l_pid: i32::from(bytes.byte()? % 2),
                };
                let _ = p.fcntl_lock(fd(), cmd, &mut lock);
            }
        },
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    // A small hash table: a fresh Vfs per input, and the invariant checker
    // walks every bucket.
    let vfs = Vfs::with_config(VfsConfig {
        hash_bits: 8,
        ..VfsConfig::default()
    });
    let mut procs = vec![vfs.root_process(), vfs.process(Cred::user(1000, 1000, &[]))];
    let mut fds: Vec<Fd> = Vec::new();
    let mut bytes = Bytes(data);
    let mut n = 0;
    while n < 256 && step(&vfs, &mut procs, &mut fds, &mut bytes).is_some() {
        n += 1;
    }
    for p in procs {
        p.exit();
    }
    vfs.drop_caches();
    if let Err(e) = vfs.check_invariants() {
        panic!("invariant violated: {e}");
    }
});
