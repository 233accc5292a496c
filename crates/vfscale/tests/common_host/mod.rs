//! A scratch host directory for the passthrough tests, removed on drop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct HostDir {
    base: PathBuf,
    root: PathBuf,
}

impl HostDir {
    /// `<tmp>/vfscale-pt-<pid>-<n>-<tag>/root`, with the parent free for
    /// "outside" files.
    pub fn new(tag: &str) -> HostDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir().join(format!(
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
