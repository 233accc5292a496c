use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs};

#[test]
fn smoke() {
    let vfs = Vfs::default();
    let p = vfs.root_process();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mount(b"none", b"/a", b"tmpfs", 0).unwrap();
    p.mount(b"", b"/a", b"", MS_SHARED).unwrap();
    p.mkdir(b"/a/x", 0o755).unwrap();
    let mut q = p.fork().unwrap();
    q.unshare(CLONE_NEWNS).unwrap();
    p.mount(b"t2", b"/a/x", b"tmpfs", 0).unwrap();
    println!("{}", String::from_utf8_lossy(&p.mountinfo().unwrap()));
    println!("{}", String::from_utf8_lossy(&q.mountinfo().unwrap()));
    q.exit();
    println!("{}", String::from_utf8_lossy(&p.mountinfo().unwrap()));
}
