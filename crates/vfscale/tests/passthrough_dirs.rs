//! The passthrough backend's directories (issue 6, session 5): a cold
//! lookup below the root is one host call on the directory's cached fd
//! (openat2 and the O_NOFOLLOW fallback alike), the number of cached fds
//! is bounded, a directory moved out of the tree on the host (or renamed
//! through vfscale) stops serving lookups, an unchanged directory vouches
//! for its cached misses without a host call per name while host changes
//! are still seen after the TTL, and changes onto host names the cache
//! does not know answer as Linux would (EEXIST) and refresh the cache.
//!
//! Host calls are counted by the backend (`Passthrough::stats`).

mod common_host;

use common_host::{host_names, HostDir};
use std::sync::Arc;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::passthrough::host::HostStats;
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn mirror_with(
    host: &HostDir,
    config: PassthroughConfig,
    component_walk: bool,
) -> (Vfs, Arc<HostStats>) {
    let pt = Passthrough::new(host.path(), config).unwrap();
    if component_walk {
        pt.host().force_component_walk();
    }
    let calls = pt.stats();
    (Vfs::with_root_fs(VfsConfig::default(), Box::new(pt)), calls)
}

fn ttl(ttl: Duration) -> PassthroughConfig {
    PassthroughConfig {
        ttl,
        ..Default::default()
    }
}

fn read_path(p: &impl ProcessApi, path: &[u8]) -> SysResult<Vec<u8>> {
    let fd = p.open(path, O_RDONLY, 0)?;
    let mut buf = vec![0u8; 64];
    let r = p.read(fd, &mut buf);
    p.close(fd).unwrap();
    buf.truncate(r?);
    Ok(buf)
}

/// Lets the host directories' ctimes age past the stamp's settling time
/// (dirs.rs: 50 ms), as a tree that is not being changed.
fn let_settle() {
    std::thread::sleep(Duration::from_millis(120));
}

#[test]
fn a_cold_miss_below_the_root_is_one_host_call() {
    for component_walk in [false, true] {
        let host = HostDir::new("onecall");
        host.mkdir("d/e");
        for i in 0..20 {
            host.write(&format!("d/e/f{i}"), b"x");
        }
        let (vfs, calls) = mirror_with(&host, ttl(Duration::from_secs(3600)), component_walk);
        let p = vfs.root_process();
        // The first miss in d/e opens the directory beneath the root.
        assert_eq!(p.stat(b"/d/e/f0").unwrap().size, 1);
        let before = calls.calls();
        for i in 1..20 {
            assert_eq!(p.stat(format!("/d/e/f{i}").as_bytes()).unwrap().size, 1);
        }
        assert_eq!(
            calls.calls() - before,
            19,
            "one host call per cold miss (component walk: {component_walk})"
        );
        // Misses are one call too, and hits none.
        let before = calls.calls();
        assert_eq!(p.stat(b"/d/e/none").map(|_| ()), Err(Errno::ENOENT));
        assert_eq!(p.stat(b"/d/e/f3").unwrap().size, 1);
        assert_eq!(calls.calls() - before, 1);
        // Symlinks below the root are read through the directory fd too.
        host.symlink("f1", "d/e/l");
        assert_eq!(p.readlink(b"/d/e/l").unwrap(), b"f1");
        assert_eq!(read_path(&p, b"/d/e/l").unwrap(), b"x");
    }
}

#[test]
fn cached_directory_fds_are_bounded() {
    for dir_fds in [0, 4] {
        let host = HostDir::new("bound");
        for i in 0..20 {
            host.mkdir(&format!("d{i}"));
            host.write(&format!("d{i}/f"), format!("{i}").as_bytes());
        }
        let pt = Passthrough::new(
            host.path(),
            PassthroughConfig {
                ttl: Duration::from_secs(3600),
                dir_fds,
                ..Default::default()
            },
        )
        .unwrap();
        let stats = pt.stats();
        let vfs = Vfs::with_root_fs(VfsConfig::default(), Box::new(pt));
        let p = vfs.root_process();
        for round in 0..2 {
            for i in 0..20 {
                assert_eq!(
                    read_path(&p, format!("/d{i}/f").as_bytes()).unwrap(),
                    format!("{i}").as_bytes(),
                    "round {round}"
                );
                assert_eq!(
                    p.stat(format!("/d{i}/g").as_bytes()).map(|_| ()),
                    Err(Errno::ENOENT)
                );
            }
            let held = stats.dir_fds_held();
            assert!(held <= dir_fds, "{held} fds held, bound {dir_fds}");
        }
        if dir_fds > 0 {
            assert_eq!(stats.dir_fds_held(), dir_fds);
        }
        p.exit();
    }
}

#[test]
fn a_directory_moved_out_on_the_host_stops_serving_lookups_after_the_ttl() {
    for component_walk in [false, true] {
        let host = HostDir::new("moveout");
        host.mkdir("d");
        host.write("d/f", b"inside");
        let outside = host.outside();
        let ttl_d = Duration::from_millis(200);
        let (vfs, _) = mirror_with(&host, ttl(ttl_d), component_walk);
        let p = vfs.root_process();
        let q = vfs.root_process();
        assert_eq!(read_path(&p, b"/d/f").unwrap(), b"inside");
        q.chdir(b"/d").unwrap();
        assert_eq!(q.stat(b"f").unwrap().size, 6);
        // The host moves d out of the tree and puts a secret in it.
        std::fs::rename(host.path().join("d"), outside.join("d")).unwrap();
        std::fs::write(outside.join("d/secret"), b"SECRET").unwrap();
        // Within the TTL vfscale may still look names up in the moved
        // directory (documented); after it, never.
        std::thread::sleep(ttl_d + Duration::from_millis(100));
        assert!(p.stat(b"/d/secret").is_err());
        assert!(read_path(&p, b"/d/secret").is_err());
        // Nor from a cwd inside it (the start of a walk is not revalidated,
        // but its fd is re-opened from the root).
        assert!(
            q.stat(b"secret").is_err(),
            "component walk: {component_walk}"
        );
        assert!(read_path(&q, b"secret").is_err());
    }
}

/// A cwd in a directory renamed through vfscale follows it to its new
/// place (its host path moves with it, session 21; before, its lookups
/// failed); one in a directory removed through vfscale finds nothing, even
/// when the host makes a new directory of that name.
#[test]
fn renaming_a_directory_through_vfscale_moves_its_cwds() {
    let host = HostDir::new("vrename");
    host.mkdir("d");
    host.write("d/f", b"x");
    let (vfs, _) = mirror_with(&host, ttl(Duration::from_secs(3600)), false);
    let p = vfs.root_process();
    let q = vfs.root_process();
    q.chdir(b"/d").unwrap();
    assert_eq!(q.stat(b"f").unwrap().size, 1);
    p.rename(b"/d", b"/e").unwrap();
    host.write("e/new", b"y");
    host.mkdir("d");
    host.write("d/new", b"other");
    // Not through the old path, which names another directory by now.
    assert_eq!(q.stat(b"new").unwrap().size, 1);
    assert_eq!(q.stat(b"f").unwrap().size, 1);
    assert_eq!(p.stat(b"/e/new").unwrap().size, 1);
    // rmdir likewise.
    p.mkdir(b"/r", 0o755).unwrap();
    q.chdir(b"/r").unwrap();
    assert_eq!(q.stat(b"x").map(|_| ()), Err(Errno::ENOENT));
    p.rmdir(b"/r").unwrap();
    host.mkdir("r");
    host.write("r/x", b"z");
    assert_eq!(q.stat(b"x").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/r/x").unwrap().size, 1);
}

/// A directory renamed through vfscale into another directory is moved in
/// the cache, as Linux's d_move: `..` from its descriptors and cwds leads
/// to its new parent, and their paths read the new place (session 24;
/// before, the cache forgot the name and `..` led to the old parent —
/// `kernel_diff.rs`'s seed 1795965075634932184). An exchange moves both,
/// and a replaced directory's descriptor reads as deleted.
#[test]
fn a_directory_renamed_into_another_finds_its_new_parent() {
    let host = HostDir::new("dmove");
    host.mkdir("a");
    host.mkdir("b");
    host.mkdir("x");
    host.mkdir("y");
    host.write("b/f", b"1");
    host.write("x/g", b"22");
    let (vfs, _) = mirror_with(&host, ttl(Duration::from_secs(3600)), false);
    let p = vfs.root_process();
    let b = p.open(b"/b", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.rename(b"/b", b"/a/c").unwrap();
    p.fchdir(b).unwrap();
    // `..` is /a now: /a has no `a`, and lists `c`.
    assert_eq!(p.stat(b"../a").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"../c/f").unwrap().size, 1);
    assert_eq!(p.getcwd().unwrap(), b"/a/c");
    assert_eq!(p.fd_path(b).unwrap(), b"/a/c");
    assert_eq!(read_path(&p, b"f").unwrap(), b"1");
    // The old name is gone, in the cache as on the host.
    assert_eq!(p.stat(b"/b").map(|_| ()), Err(Errno::ENOENT));
    // An exchange of two directories in different parents moves both.
    let x = p.open(b"/x", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let y = p.open(b"/a/c", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.mkdir(b"/y/z", 0o755).unwrap();
    p.renameat2(AT_FDCWD, b"/x", AT_FDCWD, b"/y/z", RENAME_EXCHANGE)
        .unwrap();
    assert_eq!(p.fd_path(x).unwrap(), b"/y/z");
    p.fchdir(x).unwrap();
    assert_eq!(p.getcwd().unwrap(), b"/y/z");
    assert_eq!(p.stat(b"../z/g").unwrap().size, 2);
    assert_eq!(p.stat(b"/x/g").map(|_| ()), Err(Errno::ENOENT));
    assert!(p.stat(b"/x").unwrap().mode & S_IFMT == S_IFDIR);
    // The replacing rename of a directory onto an empty one: the
    // replaced one's descriptor reads as deleted, the moved one's as
    // the new name.
    let z = p.open(b"/x", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.rename(b"/a/c", b"/x").unwrap();
    assert_eq!(p.fd_path(y).unwrap(), b"/x");
    assert_eq!(p.fd_path(z).unwrap(), b"/x (deleted)");
    assert_eq!(p.stat(b"/x/f").unwrap().size, 1);
    assert_eq!(p.stat(b"/a/c").map(|_| ()), Err(Errno::ENOENT));
    for fd in [b, x, y, z] {
        p.close(fd).unwrap();
    }
    // The host agrees.
    assert!(host.path().join("x/f").exists());
    assert!(host.path().join("y/z/g").exists());
}

fn vouching_round(dir_stamps: bool) -> (u64, u64) {
    let host = HostDir::new("stamp");
    host.mkdir("d");
    for i in 0..5 {
        host.write(&format!("d/f{i}"), b"x");
    }
    let_settle();
    let ttl_d = Duration::from_millis(300);
    let (vfs, calls) = mirror_with(
        &host,
        PassthroughConfig {
            ttl: ttl_d,
            dir_stamps,
            ..Default::default()
        },
        false,
    );
    let p = vfs.root_process();
    assert!(p.stat(b"/d").is_ok());
    for i in 0..50 {
        assert_eq!(
            p.stat(format!("/d/m{i}").as_bytes()).map(|_| ()),
            Err(Errno::ENOENT)
        );
    }
    for i in 0..5 {
        assert_eq!(p.stat(format!("/d/f{i}").as_bytes()).unwrap().size, 1);
    }
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    // Past the TTL, unchanged: the misses.
    let before = calls.calls();
    for i in 0..50 {
        assert_eq!(
            p.stat(format!("/d/m{i}").as_bytes()).map(|_| ()),
            Err(Errno::ENOENT)
        );
    }
    let misses = calls.calls() - before;
    // The positive entries ask per name (their attributes may change
    // without their directory changing).
    let before = calls.calls();
    for i in 0..5 {
        assert_eq!(p.stat(format!("/d/f{i}").as_bytes()).unwrap().size, 1);
    }
    let hits = calls.calls() - before;
    // Host changes in the cached directory are seen after the TTL.
    host.write("d/m7", b"new");
    std::fs::remove_file(host.path().join("d/f0")).unwrap();
    std::fs::rename(host.path().join("d/f1"), host.path().join("d/m8")).unwrap();
    host.write("d/f2", b"longer");
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    assert_eq!(p.stat(b"/d/m7").unwrap().size, 3);
    assert_eq!(p.stat(b"/d/f0").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/d/f1").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/d/m8").unwrap().size, 1);
    assert_eq!(p.stat(b"/d/f2").unwrap().size, 6);
    for i in (0..50).filter(|&i| i != 7 && i != 8) {
        assert_eq!(
            p.stat(format!("/d/m{i}").as_bytes()).map(|_| ()),
            Err(Errno::ENOENT)
        );
    }
    // A change right after the check: seen after the TTL too (the stamp
    // of a freshly changed directory does not vouch: it may not have
    // settled).
    host.write("d/m9", b"9");
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    assert_eq!(p.stat(b"/d/m9").unwrap().size, 1);
    p.exit();
    (misses, hits)
}

#[test]
fn an_unchanged_directory_vouches_for_its_misses() {
    let (misses, hits) = vouching_round(true);
    // One stat of the directory (its own revalidation) for 50 misses; a
    // little slack for a loaded machine crossing a TTL mid-round.
    assert!(misses <= 5, "{misses} host calls for 50 vouched misses");
    // One stat each, plus re-opening the directory's fd past the TTL.
    assert!((5..=7).contains(&hits), "{hits}");
    let (misses, hits) = vouching_round(false);
    assert!(misses >= 50, "without stamps each miss asks: {misses}");
    assert!((5..=7).contains(&hits), "{hits}");
}

#[test]
fn the_root_vouches_for_its_misses_too() {
    let host = HostDir::new("rootstamp");
    let_settle();
    let ttl_d = Duration::from_millis(300);
    let (vfs, calls) = mirror_with(&host, ttl(ttl_d), true);
    let p = vfs.root_process();
    for i in 0..30 {
        assert!(p.stat(format!("/m{i}").as_bytes()).is_err());
    }
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    let before = calls.calls();
    for i in 0..30 {
        assert_eq!(
            p.stat(format!("/m{i}").as_bytes()).map(|_| ()),
            Err(Errno::ENOENT)
        );
    }
    let spent = calls.calls() - before;
    assert!(spent <= 5, "{spent} host calls for 30 vouched misses");
    host.write("m3", b"3");
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    assert_eq!(p.stat(b"/m3").unwrap().size, 1);
}

/// The host creates `name` after vfscale cached it as missing.
fn negatively_cached(p: &impl ProcessApi, host: &HostDir, name: &str, dir: bool) {
    let path = format!("/{name}");
    assert_eq!(p.stat(path.as_bytes()).map(|_| ()), Err(Errno::ENOENT));
    if dir {
        host.mkdir(name);
    } else {
        host.write(name, b"host");
    }
    // Still cached as missing (long TTL).
    assert_eq!(p.stat(path.as_bytes()).map(|_| ()), Err(Errno::ENOENT));
}

#[test]
fn creating_onto_a_host_name_the_cache_missed_is_eexist() {
    let host = HostDir::new("eexist");
    host.write("src", b"s");
    host.write("src2", b"s2");
    let (vfs, _) = mirror_with(&host, ttl(Duration::from_secs(3600)), false);
    let p = vfs.root_process();
    type Op<'a> = (
        &'a str,
        bool,
        Box<dyn Fn(&vfscale::Process, &[u8]) -> SysResult<()>>,
    );
    let ops: Vec<Op<'_>> = vec![
        (
            "excl",
            false,
            Box::new(|p, path| p.open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644).map(|_| ())),
        ),
        ("mkdir", true, Box::new(|p, path| p.mkdir(path, 0o755))),
        (
            "mknod",
            false,
            Box::new(|p, path| p.mknodat(AT_FDCWD, path, S_IFIFO | 0o644, 0)),
        ),
        (
            "symlink",
            false,
            Box::new(|p, path| p.symlink(b"src", path)),
        ),
        ("link", false, Box::new(|p, path| p.link(b"/src", path))),
        (
            "noreplace",
            false,
            Box::new(|p, path| p.renameat2(AT_FDCWD, b"/src2", AT_FDCWD, path, RENAME_NOREPLACE)),
        ),
        (
            "mkdir_over_dir",
            true,
            Box::new(|p, path| p.mkdir(path, 0o755)),
        ),
    ];
    for (name, dir, op) in &ops {
        let path = format!("/{name}");
        negatively_cached(&p, &host, name, *dir);
        assert_eq!(op(&p, path.as_bytes()), Err(Errno::EEXIST), "{name}");
        // The cache now shows the host's object.
        let st = p.lstat(path.as_bytes()).unwrap();
        assert_eq!(
            st.mode & S_IFMT,
            if *dir { S_IFDIR } else { S_IFREG },
            "{name}"
        );
        // Names never looked up: the lookup asks the host.
        let fresh = format!("{name}_fresh");
        if *dir {
            host.mkdir(&fresh);
        } else {
            host.write(&fresh, b"host");
        }
        assert_eq!(
            op(&p, format!("/{fresh}").as_bytes()),
            Err(Errno::EEXIST),
            "{fresh}"
        );
    }
    // The sources are untouched.
    assert_eq!(host.read("src"), b"s");
    assert_eq!(host.read("src2"), b"s2");
    // O_CREAT without O_EXCL opens the host's file.
    negatively_cached(&p, &host, "creat", false);
    let fd = p.open(b"/creat", O_CREAT | O_RDWR, 0o644).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(p.read(fd, &mut buf).unwrap(), 4);
    assert_eq!(&buf[..4], b"host");
    p.close(fd).unwrap();
    // A plain rename onto it replaces it, as on Linux.
    negatively_cached(&p, &host, "over", false);
    p.rename(b"/src", b"/over").unwrap();
    assert_eq!(host.read("over"), b"s");
    assert_eq!(read_path(&p, b"/over").unwrap(), b"s");
}

#[test]
fn a_name_unlinked_on_the_host_is_enoent_after_the_ttl() {
    let host = HostDir::new("unlinked");
    host.write("g", b"data");
    host.mkdir("d");
    host.write("d/h", b"data");
    let ttl_d = Duration::from_millis(200);
    let (vfs, _) = mirror_with(&host, ttl(ttl_d), false);
    let p = vfs.root_process();
    assert_eq!(read_path(&p, b"/g").unwrap(), b"data");
    assert_eq!(read_path(&p, b"/d/h").unwrap(), b"data");
    std::fs::remove_file(host.path().join("g")).unwrap();
    std::fs::remove_file(host.path().join("d/h")).unwrap();
    std::thread::sleep(ttl_d + Duration::from_millis(100));
    assert_eq!(p.open(b"/g", O_RDONLY, 0).map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p.open(b"/d/h", O_RDONLY, 0).map(|_| ()), Err(Errno::ENOENT));
    // Within the TTL, a change through vfscale of a name the host removed
    // gets the host's ENOENT and drops the stale entry.
    host.write("k", b"k");
    assert_eq!(p.stat(b"/k").unwrap().size, 1);
    std::fs::remove_file(host.path().join("k")).unwrap();
    assert_eq!(p.unlink(b"/k"), Err(Errno::ENOENT));
    assert_eq!(p.stat(b"/k").map(|_| ()), Err(Errno::ENOENT));
}

/// A directory vfscale removes (rmdir, or a rename over it) while a
/// descriptor or the cwd keeps it is an orphan whose attributes, xattrs
/// and syncs still work through that descriptor, as on Linux (they were
/// ESTALE until session 25); lookups and listings in it are ENOENT; the
/// backend's hold of it goes with its inode.
#[test]
fn a_removed_directory_in_use_keeps_its_attributes() {
    let host = HostDir::new("orphan-dirs");
    host.mkdir("d");
    host.mkdir("v");
    host.mkdir("w");
    let (vfs, stats) = mirror_with(&host, ttl(Duration::from_secs(3600)), false);
    let p = vfs.root_process();
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let v = p.open(b"/v", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.rmdir(b"/d").unwrap();
    p.rename(b"/w", b"/v").unwrap();
    for fd in [d, v] {
        p.fchmod(fd, 0o701).unwrap();
        p.fchown(fd, 7, 8).unwrap();
        p.futimens(fd, Some([Timespec { sec: 5, nsec: 0 }; 2]))
            .unwrap();
        p.fsetxattr(fd, b"user.k", b"val", 0).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(p.fgetxattr(fd, b"user.k", &mut buf), Ok(3));
        p.fsync(fd).unwrap();
        let st = p.fstat(fd).unwrap();
        assert_eq!(
            (st.nlink, st.mode & 0o7777, st.uid, st.gid, st.mtime.sec),
            (0, 0o701, 7, 8, 5)
        );
        assert_eq!(
            p.openat(fd, b"x", O_CREAT | O_RDWR, 0o600),
            Err(Errno::ENOENT)
        );
        assert_eq!(p.getdents64(fd, &mut [0u8; 512]), Err(Errno::ENOENT));
    }
    // The cwd: a path call on "." reaches the orphan too.
    p.fchdir(d).unwrap();
    p.chmod(b".", 0o700).unwrap();
    assert_eq!(p.stat(b".").unwrap().mode & 0o7777, 0o700);
    assert_eq!(p.getcwd(), Err(Errno::ENOENT));
    p.chdir(b"/").unwrap();
    p.close(d).unwrap();
    p.close(v).unwrap();
    // The renamed directory took the name, untouched.
    assert_eq!(p.stat(b"/v").unwrap().nlink, 2);
    vfs.drop_caches();
    assert_eq!(stats.data_fds_held(), 0, "the holds went with their inodes");
}

/// A cwd (or a directory descriptor) in a directory the host removed and
/// then made again under the same name: changes through it, and calls on
/// it (chmod, setxattr of "."), answer ENOENT, as in a removed directory
/// on a local filesystem, and never reach the new directory (they went by
/// path, before session 43). The new one is
/// reached by walking to it again.
#[test]
fn changes_in_a_directory_the_host_replaced_never_reach_the_new_one() {
    for ttl_ms in [0, 3_600_000] {
        let host = HostDir::new("replaced-cwd");
        host.mkdir("a/b");
        let (vfs, _) = mirror_with(&host, ttl(Duration::from_millis(ttl_ms)), false);
        let p = vfs.root_process();
        p.chdir(b"/a/b").unwrap();
        let dirfd = p.open(b"/a/b", O_RDONLY | O_DIRECTORY, 0).unwrap();
        std::fs::rename(host.path().join("a/b"), host.path().join("old")).unwrap();
        std::fs::create_dir(host.path().join("a/b")).unwrap();
        assert_eq!(p.open(b"f", O_CREAT | O_WRONLY, 0o644), Err(Errno::ENOENT));
        assert_eq!(p.mkdirat(dirfd, b"d", 0o755), Err(Errno::ENOENT));
        assert_eq!(p.symlink(b"t", b"l"), Err(Errno::ENOENT));
        // Calls on the directory itself go by its name too: not to the
        // new one either.
        assert_eq!(p.chmod(b".", 0o700), Err(Errno::ENOENT));
        assert_eq!(p.setxattr(b".", b"user.x", b"1", 0), Err(Errno::ENOENT));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(host.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_ne!(mode & 0o777, 0o700, "ttl {ttl_ms} ms");
        let names = |rel: &str| host_names(&host.path().join(rel));
        assert!(names("a/b").is_empty(), "ttl {ttl_ms} ms");
        assert!(names("old").is_empty(), "ttl {ttl_ms} ms");
        if ttl_ms == 0 {
            p.chdir(b"/a/b").unwrap();
            let fd = p.open(b"f", O_CREAT | O_WRONLY, 0o644).unwrap();
            p.close(fd).unwrap();
            assert_eq!(names("a/b"), [b"f".to_vec()].into());
        }
        p.close(dirfd).unwrap();
    }
}
