//! A host inode number recycled behind vfscale's back (fs/passthrough
//! host.rs, Identity): the host removes a file or directory vfscale has
//! cached and makes a new one under the same name, which gets the old
//! one's number (ext4 gives a freed number to the next file at once). The
//! number alone cannot tell them apart; the birth time does. So a cwd, a
//! directory descriptor or an O_PATH descriptor held on the old object
//! never reaches the new one, as on a local filesystem, where they keep
//! the removed object: before session 46 changes through them went to the
//! new object, checked against the old one's cached owner and mode.
//!
//! On a scratch ext4 (`Ext4Scratch`), so the number is recycled every time;
//! skipped with a printed reason where one cannot be mounted.

mod common_host;

use common_host::{host_names, Ext4Scratch, HostDir};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;
use vfscale::abi::*;
use vfscale::fs::passthrough::{Passthrough, PassthroughConfig};
use vfscale::{ProcessApi, Vfs, VfsConfig};

fn mirror(host: &HostDir, ttl: Duration) -> Vfs {
    let config = PassthroughConfig {
        ttl,
        ..Default::default()
    };
    let pt = Passthrough::new(host.path(), config).unwrap();
    Vfs::with_root_fs(VfsConfig::default(), Box::new(pt))
}

/// Removes `path` and makes it again with `remake` until the new object
/// has the old one's number (at most 16 tries), after a pause that puts
/// its birth on a later clock tick than the old one's (the births of two
/// objects made in one tick are equal: host.rs says so). False, with the
/// reason printed, if the number never came back or the filesystem keeps
/// no birth time.
fn remake_with_the_same_number(path: &Path, remake: impl Fn(&Path)) -> bool {
    let old = std::fs::symlink_metadata(path).unwrap();
    let Ok(old_birth) = old.created() else {
        println!("skipped: the scratch filesystem keeps no birth time");
        return false;
    };
    std::thread::sleep(Duration::from_millis(20));
    for _ in 0..16 {
        if old.is_dir() {
            std::fs::remove_dir(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
        remake(path);
        let new = std::fs::symlink_metadata(path).unwrap();
        if new.ino() == old.ino() {
            assert_ne!(new.created().unwrap(), old_birth, "a birth a tick later");
            return true;
        }
    }
    println!("skipped: the host never gave {path:?} its old number back");
    false
}

#[test]
fn a_directory_remade_under_its_recycled_number_is_not_the_old_one() {
    let Some(scratch) = Ext4Scratch::new("recycled-dir") else {
        return;
    };
    for ttl_ms in [0, 3_600_000] {
        let host = HostDir::new_in(&scratch.path(), "dir");
        host.mkdir("a/b");
        let vfs = mirror(&host, Duration::from_millis(ttl_ms));
        let p = vfs.root_process();
        p.chdir(b"/a/b").unwrap();
        let dirfd = p.open(b"/a/b", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let old_ino = p.stat(b".").unwrap().ino;
        let b = host.path().join("a/b");
        if !remake_with_the_same_number(&b, |d| std::fs::create_dir(d).unwrap()) {
            return;
        }
        assert_eq!(std::fs::metadata(&b).unwrap().ino(), old_ino);
        host.write("a/b/new", b"x");
        // Changes through the old directory: ENOENT, as in a removed one.
        assert_eq!(p.open(b"f", O_CREAT | O_WRONLY, 0o644), Err(Errno::ENOENT));
        assert_eq!(p.mkdirat(dirfd, b"d", 0o755), Err(Errno::ENOENT));
        assert_eq!(p.chmod(b".", 0o700), Err(Errno::ENOENT));
        // Nor does a lookup from it find the new one's names.
        assert_eq!(
            p.stat(b"new").map(|_| ()),
            Err(Errno::ENOENT),
            "ttl {ttl_ms} ms"
        );
        assert_eq!(
            p.fstatat(dirfd, b"new", 0).map(|_| ()),
            Err(Errno::ENOENT),
            "ttl {ttl_ms} ms"
        );
        assert_ne!(
            std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(host_names(&b), [b"new".to_vec()].into(), "ttl {ttl_ms} ms");
        if ttl_ms == 0 {
            // A walk reaches the new directory, as a new one.
            p.chdir(b"/a/b").unwrap();
            assert_eq!(p.stat(b"new").unwrap().size, 1);
            let fd = p.open(b"f", O_CREAT | O_WRONLY, 0o644).unwrap();
            p.close(fd).unwrap();
            assert_eq!(host_names(&b), [b"f".to_vec(), b"new".to_vec()].into());
        }
        p.close(dirfd).unwrap();
        p.exit();
    }
}

#[test]
fn a_file_remade_under_its_recycled_number_is_not_the_old_one() {
    let Some(scratch) = Ext4Scratch::new("recycled-file") else {
        return;
    };
    let host = HostDir::new_in(&scratch.path(), "file");
    host.write("f", b"old");
    let f = host.path().join("f");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let vfs = mirror(&host, Duration::ZERO);
    let p = vfs.root_process();
    let held = p.open(b"/f", O_PATH, 0).unwrap();
    let remade = remake_with_the_same_number(&f, |f| {
        std::fs::write(f, b"new!").unwrap();
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).unwrap();
    });
    if !remade {
        return;
    }
    // A walk revalidates the name and finds a new file: a new inode, whose
    // changes are not the old one's.
    p.chmod(b"/f", 0o640).unwrap();
    assert_eq!(p.stat(b"/f").unwrap().size, 4);
    assert_eq!(p.stat(b"/f").unwrap().mode & 0o777, 0o640);
    let old = p.fstat(held).unwrap();
    assert_eq!(
        (old.mode & 0o777, old.size),
        (0o644, 3),
        "the old file's attributes"
    );
    // A change through the old file's descriptor cannot reach the removed
    // file (vfscale holds no host fd of it) and must not reach the new one.
    let owner = std::fs::metadata(&f).unwrap().uid();
    assert!(p
        .fchownat(held, b"", owner + 1000, u32::MAX, AT_EMPTY_PATH)
        .is_err());
    assert_eq!(std::fs::metadata(&f).unwrap().uid(), owner);
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o640
    );
    p.close(held).unwrap();
    p.exit();
}
