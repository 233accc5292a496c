//! `vfscale mount` and `vfscale umount`.
//!
//! `mount` serves a fresh namespace until SIGINT, SIGTERM or SIGHUP (then
//! unmounts: EBUSY-free lazy detach if files are still open) or until the
//! mount is unmounted from elsewhere. Without `--foreground` it re-runs
//! itself detached (new session, stdio on /dev/null) and returns once the
//! mount is up.

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct MountArgs {
    /// Directory to mount on.
    pub mountpoint: PathBuf,
    /// The namespace's backing store: `tmpfs` (in memory), or
    /// `passthrough:HOSTDIR` (a host directory, cached by vfscale).
    #[arg(long, default_value = "tmpfs")]
    pub backend: String,
    /// FUSE worker threads, each with its own /dev/fuse descriptor.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// How long the kernel may cache names (e.g. 1s, 200ms, 0).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub entry_ttl: Duration,
    /// How long the kernel may cache attributes.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub attr_ttl: Duration,
    /// Let users other than the mounting one use the mount.
    #[arg(long)]
    pub allow_other: bool,
    /// Let the kernel buffer writes in its page cache (FUSE writeback
    /// cache): faster small writes, data reaches the namespace on flush.
    #[arg(long)]
    pub writeback_cache: bool,
    /// Serve requests over FUSE-over-io_uring (Linux 6.14+): one queue per
    /// CPU, no read()/write() of /dev/fuse per request. Sets the fuse
    /// module's enable_uring parameter for the mount if it is off (root),
    /// and puts it back; falls back to /dev/fuse, saying why, when the
    /// kernel refuses.
    #[arg(long)]
    pub uring: bool,
    /// Stay in the foreground (else detach once mounted).
    #[arg(long)]
    pub foreground: bool,
}

#[derive(Args, Debug)]
pub struct UmountArgs {
    pub mountpoint: PathBuf,
    /// Detach even if busy (MNT_DETACH).
    #[arg(long)]
    pub lazy: bool,
}

/// "1s", "250ms", "2m", "0", or plain seconds ("1.5").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (try 1s, 200ms)"))?;
    let secs = match unit {
        "ns" => v / 1e9,
        "us" => v / 1e6,
        "ms" => v / 1e3,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("unknown unit in {s:?} (ns, us, ms, s, m, h)")),
    };
    if !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration out of range: {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn is_mountpoint(p: &Path) -> bool {
    let Ok(canon) = p.canonicalize() else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = canon.to_string_lossy().into_owned();
    // "id parent dev root MOUNTPOINT opts... - FSTYPE SOURCE superopts"
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let tail = l.split(" - ").nth(1).unwrap_or("");
        let mut t = tail.split(' ');
        let (fstype, source) = (t.next().unwrap_or(""), t.next().unwrap_or(""));
        f.len() > 4 && f[4] == want && fstype.starts_with("fuse") && source == "vfscale"
    })
}

/// What `--backend` names: a fresh tmpfs, or a host directory mirrored by
/// the passthrough backend.
enum Backend {
    Tmpfs,
    Passthrough(PathBuf),
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    if s == "tmpfs" {
        return Ok(Backend::Tmpfs);
    }
    match s.strip_prefix("passthrough:") {
        Some(dir) if Path::new(dir).is_dir() => Ok(Backend::Passthrough(PathBuf::from(dir))),
        Some(dir) => Err(format!("passthrough: {dir:?} is not a directory")),
        None => Err(format!(
            "unknown backend {s:?} (tmpfs, or passthrough:HOSTDIR)"
        )),
    }
}

/// The namespace to serve.
fn namespace(backend: &Backend) -> Result<vfscale::Vfs, String> {
    match backend {
        Backend::Tmpfs => Ok(vfscale::Vfs::new()),
        Backend::Passthrough(dir) => vfscale::Vfs::with_passthrough_root(
            vfscale::VfsConfig::default(),
            dir,
            vfscale::fs::passthrough::PassthroughConfig::default(),
        )
        .map_err(|e| format!("passthrough {}: {e:?}", dir.display())),
    }
}

pub fn mount_main(args: &MountArgs) -> ExitCode {
    let backend = match parse_backend(&args.backend) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("vfscale mount: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.mountpoint.is_dir() {
        eprintln!(
            "vfscale mount: {}: not a directory",
            args.mountpoint.display()
        );
        return ExitCode::from(2);
    }
    if !args.foreground {
        return detach(args);
    }
    let signals = match block_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vfscale mount: cannot block signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let vfs = match namespace(&backend) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("vfscale mount: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cfg = vfscale_fuse::MountConfig {
        threads: args.threads.max(1),
        ttls: vfscale_fuse::Ttls {
            entry: args.entry_ttl,
            attr: args.attr_ttl,
        },
        allow_other: args.allow_other,
        writeback_cache: args.writeback_cache,
        uring: args.uring,
    };
    let mut mounted = match vfscale_fuse::mount(&vfs, &args.mountpoint, &cfg) {
        Ok(m) => m,
        Err(e) => {
            eprintln!(
                "vfscale mount: cannot mount on {}: {e}",
                args.mountpoint.display()
            );
            return ExitCode::FAILURE;
        }
    };
    if let Some(why) = mounted.uring_refusal() {
        eprintln!("vfscale mount: not using FUSE over io_uring: {why}; serving over /dev/fuse");
    }
    let transport = match mounted.transport() {
        vfscale_fuse::Transport::DevFuse => format!("{} threads on /dev/fuse", cfg.threads),
        vfscale_fuse::Transport::IoUring { queues } => {
            format!("io_uring, {queues} CPU queues")
        }
    };
    eprintln!(
        "vfscale mounted on {} ({transport}); stop with Ctrl-C or `vfscale umount {}`",
        mounted.mountpoint().display(),
        mounted.mountpoint().display()
    );
    while mounted.is_served() {
        if let Some(sig) = wait_signal(&signals, Duration::from_millis(200)) {
            eprintln!("vfscale mount: signal {sig}, unmounting");
            if let Err(e) = mounted.unmount() {
                eprintln!("vfscale mount: unmount: {e}; detaching lazily");
                let _ = vfscale_fuse::unmount_path(mounted.mountpoint(), true);
                return ExitCode::SUCCESS;
            }
            break;
        }
    }
    match mounted.join() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vfscale mount: session ended with {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn umount_main(args: &UmountArgs) -> ExitCode {
    match vfscale_fuse::unmount_path(&args.mountpoint, args.lazy) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vfscale umount: {}: {e}", args.mountpoint.display());
            ExitCode::FAILURE
        }
    }
}

/// Re-runs this command with --foreground in a new session and waits until
/// the mount appears (or the child exits).
fn detach(args: &MountArgs) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("vfscale mount: cannot find my own executable");
        return ExitCode::FAILURE;
    };
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    argv.push("--foreground".into());
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&argv)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vfscale mount: cannot start the server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if is_mountpoint(&args.mountpoint) {
            return ExitCode::SUCCESS;
        }
        if let Ok(Some(status)) = child.try_wait() {
            eprintln!("vfscale mount: server exited ({status}) before mounting");
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("vfscale mount: timed out waiting for the mount");
    ExitCode::FAILURE
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (threads started
/// afterwards inherit the mask), so they are taken only by `wait_signal`.
fn block_signals() -> std::io::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; the calls initialise and fill it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(set)
    }
}

fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `set` and `ts` are valid for the call; no siginfo is asked.
    let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    (r > 0).then_some(r)
}
