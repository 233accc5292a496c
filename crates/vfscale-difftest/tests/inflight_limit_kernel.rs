//! Linux's per-user limit on files in flight (too_many_unix_fds): a send
//! carrying files is refused with ETOOMANYREFS once the sender's user has
//! more files in flight than the sender's RLIMIT_NOFILE, unless the
//! sender has CAP_SYS_RESOURCE. One script on the kernel and on vfscale,
//! every result compared, with the descriptor limit at 64 on both sides
//! (this test binary lowers its own soft RLIMIT_NOFILE, so it holds this
//! one test only) and an otherwise unused uid, since the kernel counts per
//! user across the whole host.

use vfscale::abi::*;
use vfscale::{Cred, ProcessApi, Vfs};
use vfscale_difftest::script::{assert_logs_match, show, Log};
use vfscale_difftest::{on_kernel_as_root, KernelProcess};

const LIMIT: usize = 64;
const UID: u32 = 54_321;

/// recvmsg without room for descriptors: the files are dropped (and
/// leave the flight), MSG_CTRUNC says so.
fn take<P: ProcessApi>(p: &P, fd: Fd) -> String {
    let mut buf = [0u8; 8];
    show(
        p.recvmsg(fd, &mut [&mut buf], MSG_DONTWAIT, 0)
            .map(|m| (m.len, m.fds.len(), m.flags)),
    )
}

fn script<P: ProcessApi>(p: &P, who: &str) -> Log {
    let mut log = Log::new();
    let [r, _w] = p.pipe2(O_NONBLOCK).unwrap();
    // SCM_MAX_FD copies of one descriptor: each counts.
    let rights = vec![r; 253];
    for ty in [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM] {
        let t = |s: &str| format!("{who} type {ty}: {s}");
        let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        for i in 0..3 {
            log.push((
                t(&format!("send 253 files #{i}")),
                show(p.sendmsg(a, &[b"x"], MSG_DONTWAIT, None, &rights, None)),
            ));
        }
        log.push((
            t("send 1 file"),
            show(p.sendmsg(a, &[b"y"], MSG_DONTWAIT, None, &rights[..1], None)),
        ));
        log.push((
            t("send no files"),
            show(p.sendmsg(a, &[b"z"], MSG_DONTWAIT, None, &[], None)),
        ));
        for i in 0..5 {
            log.push((t(&format!("take #{i}")), take(p, b)));
            log.push((
                t(&format!("then send 1 file #{i}")),
                show(p.sendmsg(a, &[b"w"], MSG_DONTWAIT, None, &rights[..1], None)),
            ));
        }
        while p.recvmsg(b, &mut [&mut [0u8; 8]], MSG_DONTWAIT, 0).is_ok() {}
        // Over the limit, a datagram send by a name nobody bound: the
        // files are attached (and refused) before the name is looked up.
        if ty == SOCK_DGRAM {
            p.sendmsg(a, &[b"x"], MSG_DONTWAIT, None, &rights, None)
                .unwrap();
            log.push((
                t("send to a missing name over the limit"),
                show(p.sendmsg(
                    a,
                    &[b"v"],
                    MSG_DONTWAIT,
                    Some(b"\0nobody"),
                    &rights[..1],
                    None,
                )),
            ));
            log.push((
                t("without files"),
                show(p.sendmsg(a, &[b"v"], MSG_DONTWAIT, Some(b"\0nobody"), &[], None)),
            ));
            log.push((t("take"), take(p, b)));
        }
        p.close(a).unwrap();
        p.close(b).unwrap();
    }
    log
}

#[test]
fn the_per_user_limit_on_files_in_flight_matches_the_kernel() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write or read only `lim`.
    let set = unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && {
            lim.rlim_cur = LIMIT as u64;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
        }
    };
    assert!(set, "lowering RLIMIT_NOFILE");
    let user = Cred::user(UID, UID, &[UID]);
    let kernel = match on_kernel_as_root(move |root| {
        let u = KernelProcess::new(&user)?;
        let mut log = script(&u, "user");
        log.extend(script(root, "root"));
        Ok::<_, String>(log)
    }) {
        Ok(Ok(k)) => k,
        Ok(Err(e)) | Err(e) => {
            println!("in-flight limit kernel comparison skipped: {e}");
            return;
        }
    };
    let vfs = Vfs::new();
    let (u, root) = (
        vfs.process(Cred::user(UID, UID, &[UID])),
        vfs.root_process(),
    );
    u.set_fd_limit(LIMIT);
    root.set_fd_limit(LIMIT);
    let mut ours = script(&u, "user");
    ours.extend(script(&root, "root"));
    assert_logs_match(&kernel, &ours);
}
