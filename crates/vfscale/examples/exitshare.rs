//! Finds cache lines two exiting processes both write (issue 5: N
//! processes exiting at once must not serialise on shared lines). Run it
//! under `valgrind --tool=lackey --trace-mem=yes`: thread A builds a
//! process holding OBJECTS files (in one shared directory) and sockets,
//! then exits it (measured); then thread B does the same with its own
//! process (measured) while A stays parked. The measured exits are
//! delimited by stores to `MARK` (its address is printed first), and
//! `scripts/anon_shared_lines.py MARK OBJECTS` intersects their written
//! lines. Each thread is pinned to its own CPU (A to 0, B to 1, where the
//! machine has two), as two processes exiting at once run: the slab's
//! depot is sharded by CPU (mem/depot.rs). Usage: exitshare [OBJECTS]
//! [on|off]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use vfscale::abi::*;
use vfscale::{ProcessApi, Vfs, VfsConfig};

static MARK: AtomicU64 = AtomicU64::new(0);

/// Pins the calling thread to CPU `cpu` modulo the CPUs it may use (best
/// effort: without the permission it stays where it is).
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read
    // and write the set we pass.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .collect();
        let Some(&target) = cpus.get(cpu % cpus.len().max(1)) else {
            return;
        };
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(target, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn build_and_exit(vfs: &Vfs, tag: usize, objects: usize, first_mark: u64) {
    pin_to(tag);
    let p = vfs.root_process();
    for j in 0..objects {
        if j % 2 == 0 {
            let path = format!("/imp/p{tag}_{j}");
            p.open(path.as_bytes(), O_CREAT | O_RDWR, 0o644).unwrap();
            p.stat(path.as_bytes()).unwrap();
        } else {
            p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
        }
    }
    MARK.store(first_mark, Ordering::SeqCst);
    p.exit();
    MARK.store(first_mark + 1, Ordering::SeqCst);
}

fn main() {
    let objects: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let defer = std::env::args().nth(2).is_none_or(|a| a != "off");
    eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
    let vfs = Arc::new(Vfs::with_config(VfsConfig {
        defer_puts: defer,
        fd_limit: objects + 64,
        ..VfsConfig::default()
    }));
    vfs.root_process().mkdir(b"/imp", 0o755).unwrap();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let a_done = Arc::new(Barrier::new(2));
    let (vfs_a, a_done2) = (vfs.clone(), a_done.clone());
    let a = std::thread::spawn(move || {
        build_and_exit(&vfs_a, 0, objects, 1);
        a_done2.wait();
        // Parked until B is done: B must not reuse A's stack or locals.
        done_rx.recv().unwrap();
    });
    a_done.wait();
    let vfs_b = vfs.clone();
    let b = std::thread::spawn(move || build_and_exit(&vfs_b, 1, objects, 3));
    b.join().unwrap();
    done_tx.send(()).unwrap();
    a.join().unwrap();
}
