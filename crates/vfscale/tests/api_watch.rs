//! Name-change notifications (watch.rs): every change of a name's meaning
//! in a directory is reported once, as (directory, name), and nothing else.

mod common;
use common::*;
use std::sync::{Arc, Mutex};
use vfscale::{InodeChange, NameChange, NameObserver};

#[derive(Default)]
struct Log(Mutex<Vec<(u64, Vec<u8>)>>);

impl NameObserver for Log {
    fn name_changed(&self, c: &NameChange<'_>) {
        self.0.lock().unwrap().push((c.dir_ino, c.name.to_vec()));
    }
}

impl Log {
    fn take(&self) -> Vec<(u64, Vec<u8>)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[test]
fn every_name_change_is_reported_once() {
    let (vfs, p) = setup();
    let log = Arc::new(Log::default());
    let id = vfs.observe_names(log.clone());
    let root = p.stat(b"/").unwrap().ino;
    p.mkdir(b"/d", 0o755).unwrap();
    let d = p.stat(b"/d").unwrap().ino;
    mkfile(&p, b"/d/f", b"x");
    p.symlink(b"f", b"/d/s").unwrap();
    p.link(b"/d/f", b"/h").unwrap();
    let n = |dir: u64, name: &[u8]| (dir, name.to_vec());
    assert_eq!(
        log.take(),
        vec![n(root, b"d"), n(d, b"f"), n(d, b"s"), n(root, b"h")]
    );
    // Reads, attribute changes and lookups of missing names are not name
    // changes (the last caches a negative entry: no change of meaning).
    assert_eq!(p.stat(b"/d/missing").unwrap_err(), Errno::ENOENT);
    read_file(&p, b"/d/f");
    p.chmod(b"/d/f", 0o600).unwrap();
    assert_eq!(log.take(), vec![]);
    // A rename reports both places; replacing a target reports it too.
    p.rename(b"/d/f", b"/g").unwrap();
    assert_eq!(log.take(), vec![n(d, b"f"), n(root, b"g")]);
    mkfile(&p, b"/t", b"victim");
    log.take();
    p.rename(b"/g", b"/t").unwrap();
    let got = log.take();
    assert!(
        got.contains(&n(root, b"g")) && got.contains(&n(root, b"t")),
        "{got:?}"
    );
    // Renaming one hard link over another of the same inode changes
    // nothing (POSIX): nothing is reported.
    p.rename(b"/t", b"/h").unwrap();
    assert_eq!(log.take(), vec![]);
    p.unlink(b"/d/s").unwrap();
    p.unlink(b"/h").unwrap();
    p.rmdir(b"/d").unwrap();
    assert_eq!(log.take(), vec![n(d, b"s"), n(root, b"h"), n(root, b"d")]);
    // Unregistered: silence.
    assert!(vfs.unobserve_names(id));
    assert!(!vfs.unobserve_names(id));
    p.mkdir(b"/e", 0o755).unwrap();
    assert_eq!(log.take(), vec![]);
}

/// Logs inode changes only.
#[derive(Default)]
struct InodeLog(Mutex<Vec<InodeChange>>);

impl NameObserver for InodeLog {
    fn name_changed(&self, _: &NameChange<'_>) {}
    fn inode_changed(&self, c: &InodeChange) {
        self.0.lock().unwrap().push(*c);
    }
}

impl InodeLog {
    fn take(&self) -> Vec<(u64, bool)> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .into_iter()
            .map(|c| (c.ino, c.data))
            .collect()
    }
}

#[test]
fn attribute_and_data_changes_are_reported_per_inode() {
    let (vfs, p) = setup();
    mkfile(&p, b"/f", b"");
    let st = p.stat(b"/f").unwrap();
    let log = Arc::new(InodeLog::default());
    let id = vfs.observe_names(log.clone());
    let f = st.ino;
    // Attributes only.
    p.chmod(b"/f", 0o600).unwrap();
    p.chown(b"/f", 7, 8).unwrap();
    p.utimensat(AT_FDCWD, b"/f", None, 0).unwrap();
    assert_eq!(log.take(), vec![(f, false); 3]);
    // Contents: write, truncate, fallocate, copy_file_range into it.
    let fd = p.open(b"/f", O_RDWR, 0).unwrap();
    assert_eq!(p.write(fd, b"data").unwrap(), 4);
    p.ftruncate(fd, 2).unwrap();
    p.fallocate(fd, 0, 0, 8192).unwrap();
    assert_eq!(log.take(), vec![(f, true); 3]);
    mkfile(&p, b"/src", b"copied");
    log.take();
    let src = p.open(b"/src", O_RDONLY, 0).unwrap();
    let mut off_in = 0i64;
    let mut off_out = 0i64;
    p.copy_file_range(src, Some(&mut off_in), fd, Some(&mut off_out), 6, 0)
        .unwrap();
    p.close(src).unwrap();
    p.close(fd).unwrap();
    let got = log.take();
    assert_eq!(got, vec![(f, true)], "{got:?}");
    // Failed changes, reads and lookups report nothing.
    assert_eq!(p.chmod(b"/missing", 0o600).unwrap_err(), Errno::ENOENT);
    read_file(&p, b"/f");
    p.stat(b"/f").unwrap();
    assert_eq!(log.take(), vec![]);
    // Unregistered: silence.
    assert!(vfs.unobserve_names(id));
    p.chmod(b"/f", 0o644).unwrap();
    assert_eq!(log.take(), vec![]);
}
