//! A scratch host directory for the passthrough tests, removed on drop,
//! and the listings the tests compare (vfscale's and the host's).
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use vfscale::abi::SysResult;
use vfscale::ProcessApi;

/// A property test's configuration: `cases` cases unless `PROPTEST_CASES`
/// asks for another number, and no regression files (the tests race a host
/// thread or read the host's state: a saved case would not replay).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..Default::default()
    }
}

/// A passthrough root mirroring `host`, its entries trusted for `ttl`
/// (the other settings the defaults).
pub fn mirror(host: &HostDir, ttl: std::time::Duration) -> vfscale::Vfs {
    vfscale::Vfs::with_passthrough_root(
        vfscale::VfsConfig::default(),
        host.path(),
        vfscale::fs::passthrough::PassthroughConfig {
            ttl,
            ..Default::default()
        },
    )
    .unwrap()
}

/// After every process exited: whether dropping the caches freed every
/// dentry, inode and open file the run made, back to `base` (the fresh
/// instance's counts; invalidated entries included).
pub fn settled(vfs: &vfscale::Vfs, base: vfscale::ObjectCounts) -> Result<(), String> {
    vfs.drop_caches();
    let now = vfs.object_counts();
    let (got, want) = (
        (now.dentries, now.inodes, now.files),
        (base.dentries, base.inodes, base.files),
    );
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "(dentries, inodes, files) {got:?} after drop_caches, {want:?} fresh"
        ))
    }
}

/// A listing's names, without "." and "..".
pub type Names = BTreeSet<Vec<u8>>;

/// The names vfscale lists in `path`, each checked to appear once.
pub fn listed(p: &impl ProcessApi, path: &[u8]) -> SysResult<Names> {
    let mut names = Names::new();
    for e in p.read_dir(path)? {
        if e.name != b"." && e.name != b".." {
            assert!(names.insert(e.name.clone()), "{:?} listed twice", e.name);
        }
    }
    Ok(names)
}

/// The names the host lists in `dir`.
pub fn host_names(dir: &Path) -> Names {
    use std::os::unix::ffi::OsStrExt;
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect()
}

pub struct HostDir {
    base: PathBuf,
    root: PathBuf,
}

impl HostDir {
    /// `<tmp>/vfscale-pt-<pid>-<n>-<tag>/root`, with the parent free for
    /// "outside" files.
    pub fn new(tag: &str) -> HostDir {
        HostDir::new_in(&std::env::temp_dir(), tag)
    }

    /// The same in `parent` (`Ext4Scratch::path`, for one).
    pub fn new_in(parent: &Path, tag: &str) -> HostDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let base = parent.join(format!(
            "vfscale-pt-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        HostDir { base, root }
    }

    /// The mirrored directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// A directory beside the mirrored one (outside it).
    pub fn outside(&self) -> PathBuf {
        let o = self.base.join("outside");
        std::fs::create_dir_all(&o).unwrap();
        o
    }

    pub fn write(&self, rel: &str, data: &[u8]) {
        std::fs::write(self.root.join(rel), data).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }

    pub fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.root.join(rel)).unwrap();
    }

    pub fn symlink(&self, target: &str, rel: &str) {
        std::os::unix::fs::symlink(target, self.root.join(rel)).unwrap();
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// A scratch ext4 filesystem on a loop device, mounted under the temp
/// directory, unmounted (lazily) and removed on drop. ext4 gives a freed
/// inode number to the next file it makes, so a test of a host number
/// recycled behind vfscale's back does not depend on chance on it.
pub struct Ext4Scratch {
    base: PathBuf,
}

impl Ext4Scratch {
    /// None, with the reason printed, where one cannot be made (not root,
    /// no mkfs.ext4, no loop device: a container may have none).
    pub fn new(tag: &str) -> Option<Ext4Scratch> {
        let base = std::env::temp_dir().join(format!("vfscale-ext4-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("mnt")).unwrap();
        let scratch = Ext4Scratch { base };
        let image = scratch.base.join("image");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(32 << 20)
            .unwrap();
        let ran = |program: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(program)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let made = ["mkfs.ext4", "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"]
            .iter()
            .any(|mkfs| ran(mkfs, &["-q".as_ref(), "-F".as_ref(), image.as_os_str()]));
        if !made {
            println!("skipped: no mkfs.ext4 to make a scratch ext4 image with");
            return None;
        }
        let mounted = ran(
            "mount",
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                image.as_os_str(),
                scratch.path().as_os_str(),
            ],
        );
        if !mounted {
            println!(
                "skipped: cannot loop-mount a scratch ext4 image (not root, or no loop device)"
            );
            return None;
        }
        Some(scratch)
    }

    /// Where it is mounted.
    pub fn path(&self) -> PathBuf {
        self.base.join("mnt")
    }
}

impl Drop for Ext4Scratch {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .args(["-l".as_ref(), self.path().as_os_str()])
            .status();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
