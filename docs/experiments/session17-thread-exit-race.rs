//! Session 17: pthread_join returns before the exited thread has closed its
//! descriptor table (the kernel clears the tid in exit_mm, then runs
//! exit_files), so a listener the thread left open may still be bound
//! right after the join; waiting until tgkill(pid, tid, 0) fails closes the
//! window (docs/TESTING.md, session 17). A cargo project with libc:
//! `cargo run --release` prints ~200 of 3000 without the wait, 0 with `-- fix`.
use std::os::linux::net::SocketAddrExt;
use std::os::fd::AsRawFd;
fn main() {
    let fix = std::env::args().nth(1).is_some();
    let mut alive = 0;
    for i in 0..3000 {
        let name = format!("\0racechk{i}");
        let n2 = name.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            unsafe { assert_eq!(libc::unshare(libc::CLONE_FILES), 0) };
            let l = std::os::unix::net::UnixListener::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(&n2.as_bytes()[1..]).unwrap()).unwrap();
            std::mem::forget(l); // left for the thread's exit to close
            tx.send(unsafe { libc::gettid() }).unwrap();
        });
        let tid = rx.recv().unwrap();
        h.join().unwrap();
        if fix {
            while unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) } == 0 { std::thread::yield_now(); }
        }
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name.as_bytes()[1..]).unwrap();
        if std::os::unix::net::UnixStream::connect_addr(&addr).is_ok() { alive += 1; }
        let _ = std::io::stdout().as_raw_fd();
    }
    println!("fix={fix}: listener still alive after join in {alive} of 3000");
}
