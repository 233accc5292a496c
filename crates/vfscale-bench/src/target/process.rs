//! The generic adapter that makes any `ProcessApi` implementation a target:
//! one shared filesystem instance (`S`), one process per thread made by
//! `spawn`. vfscale itself and the global-lock reference model are both
//! targets through it.

use super::{
    count_dirents, failed, AnonKind, Implosion, Kind, Op, OpError, OpResult, Target, TargetId,
    GETDENTS_BUF,
};
use std::fmt;
use vfscale::abi::{O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_WRONLY};
use vfscale::ProcessApi;

/// An absolute path inside the process's namespace.
pub struct BytePath(Vec<u8>);

impl fmt::Debug for BytePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(&self.0), f)
    }
}

/// A filesystem instance shared by all threads, and how to make a process
/// over it.
pub struct ProcessTarget<S, P> {
    id: TargetId,
    state: S,
    spawn: fn(&S) -> P,
}

impl<S, P> ProcessTarget<S, P> {
    pub fn new(id: TargetId, state: S, spawn: fn(&S) -> P) -> Self {
        ProcessTarget { id, state, spawn }
    }

    /// The shared instance (for target-specific workloads).
    pub fn state(&self) -> &S {
        &self.state
    }
}

/// One thread's process and getdents buffer.
pub struct ProcThread<P> {
    pub process: P,
    buf: Vec<u8>,
}

/// Anonymous objects, which only some `ProcessApi` implementations have
/// (they are not part of the shared trait: the reference model lacks them).
pub trait AnonOps {
    /// Why this process type cannot make anonymous objects, or `None`.
    const LACKS: Option<&'static str>;
    /// Creates one object of `kind` and closes it.
    fn anon_churn(&self, kind: AnonKind) -> Result<(), vfscale::Errno>;
}

impl AnonOps for vfscale::Process {
    const LACKS: Option<&'static str> = None;

    #[inline]
    fn anon_churn(&self, kind: AnonKind) -> Result<(), vfscale::Errno> {
        use vfscale::abi::{AF_UNIX, SOCK_STREAM};
        match kind {
            AnonKind::Socket => self.close(self.socket(AF_UNIX, SOCK_STREAM, 0)?),
            AnonKind::Pipe => {
                let [r, w] = self.pipe2(0)?;
                self.close(r)?;
                self.close(w)
            }
            AnonKind::Eventfd => self.close(self.eventfd(0, 0)?),
            AnonKind::Memfd => self.close(self.memfd_create(b"churn", 0)?),
        }
    }
}

impl AnonOps for vfscale_model::ModelProcess {
    const LACKS: Option<&'static str> =
        Some("the reference model implements path and fd calls only, no anonymous objects");

    fn anon_churn(&self, _kind: AnonKind) -> Result<(), vfscale::Errno> {
        Err(vfscale::Errno::ENOSYS)
    }
}

/// fd-implosion on a namespace type: only vfscale has anonymous objects
/// and a deferral switch.
pub trait ImplosionOps {
    const LACKS: Option<&'static str>;
    const MODES: &'static [Option<bool>];
    fn implosion(procs: usize, objects: usize, deferral: Option<bool>) -> OpResult<Implosion>;
}

impl ImplosionOps for vfscale::Vfs {
    const LACKS: Option<&'static str> = None;
    const MODES: &'static [Option<bool>] = &[Some(true), Some(false)];
    fn implosion(procs: usize, objects: usize, deferral: Option<bool>) -> OpResult<Implosion> {
        crate::workload::fd_implosion::vfscale_implosion(procs, objects, deferral.unwrap_or(true))
    }
}

impl ImplosionOps for vfscale_model::ModelFs {
    const LACKS: Option<&'static str> = <vfscale_model::ModelProcess as AnonOps>::LACKS;
    const MODES: &'static [Option<bool>] = &[None];
    fn implosion(_: usize, _: usize, _: Option<bool>) -> OpResult<Implosion> {
        Err(OpError::Unsupported(Self::LACKS.unwrap_or("").to_string()))
    }
}

/// Memory groups and drop_caches (`reclaim-groups`), which only vfscale has.
pub trait ReclaimOps {
    const LACKS: Option<&'static str>;
    /// See `Target::reclaim_groups`; runs on a fresh instance of its own.
    fn reclaim_groups(groups: usize, passes: usize, naive: bool) -> Result<Vec<f64>, String>;
}

impl ReclaimOps for vfscale::Process {
    const LACKS: Option<&'static str> = None;

    fn reclaim_groups(groups: usize, passes: usize, naive: bool) -> Result<Vec<f64>, String> {
        use vfscale::abi::AT_FDCWD;
        let e = |what: &str, err: vfscale::Errno| format!("{what}: {err}");
        let vfs = vfscale::Vfs::new();
        let root = vfs.root_process();
        root.mkdir(b"/s", 0o755).map_err(|x| e("mkdir /s", x))?;
        for i in 0..groups {
            let g = vfs
                .group_create(0, &format!("c{i}"))
                .map_err(|x| e("group_create", x))?;
            let p = root.fork().map_err(|x| e("fork", x))?;
            vfs.group_attach(&p, g).map_err(|x| e("group_attach", x))?;
            let dir = format!("/s/{i}");
            root.mkdir(dir.as_bytes(), 0o755)
                .map_err(|x| e("mkdir", x))?;
            p.mount(b"tmpfs", dir.as_bytes(), b"tmpfs", 0)
                .map_err(|x| e("mount", x))?;
            p.mknodat(AT_FDCWD, format!("{dir}/file").as_bytes(), 0o100644, 0)
                .map_err(|x| e("create", x))?;
        }
        let mut times = Vec::with_capacity(passes);
        for _ in 0..passes {
            let t = std::time::Instant::now();
            if naive {
                vfs.drop_caches_naive();
            } else {
                vfs.drop_caches_level(3).map_err(|x| e("drop_caches", x))?;
            }
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(times)
    }
}

impl ReclaimOps for vfscale_model::ModelProcess {
    const LACKS: Option<&'static str> = Some("the reference model has no memory groups or reclaim");

    fn reclaim_groups(_: usize, _: usize, _: bool) -> Result<Vec<f64>, String> {
        Err(<Self as ReclaimOps>::LACKS.unwrap_or_default().to_string())
    }
}

impl<S: Sync + ImplosionOps, P: ProcessApi + AnonOps + ReclaimOps> Target for ProcessTarget<S, P> {
    type Path = BytePath;
    type Thread = ProcThread<P>;

    fn id(&self) -> TargetId {
        self.id
    }

    fn lacks(&self, op: Op) -> Option<&'static str> {
        match op {
            Op::AnonChurn => <P as AnonOps>::LACKS,
            Op::FdImplosion => S::LACKS,
            Op::ReclaimGroups => <P as ReclaimOps>::LACKS,
            _ => None,
        }
    }

    fn fd_implosion(
        &self,
        procs: usize,
        objects: usize,
        deferral: Option<bool>,
    ) -> OpResult<Implosion> {
        S::implosion(procs, objects, deferral)
    }

    fn deferral_modes(&self) -> &'static [Option<bool>] {
        S::MODES
    }

    #[inline]
    fn anon_churn(&self, th: &mut ProcThread<P>, kind: AnonKind) -> OpResult<()> {
        if let Some(why) = <P as AnonOps>::LACKS {
            return Err(OpError::Unsupported(why.to_string()));
        }
        th.process
            .anon_churn(kind)
            .map_err(|e| failed("anon-churn", &kind.name(), &e))
    }

    fn reclaim_groups(
        &self,
        groups: usize,
        passes: usize,
        naive: bool,
    ) -> OpResult<(usize, Vec<f64>)> {
        if let Some(why) = <P as ReclaimOps>::LACKS {
            return Err(OpError::Unsupported(why.to_string()));
        }
        P::reclaim_groups(groups, passes, naive)
            .map(|t| (groups, t))
            .map_err(OpError::Failed)
    }

    fn in_process(&self) -> bool {
        true
    }

    fn path(&self, rel: &str) -> BytePath {
        let mut p = Vec::with_capacity(rel.len() + 1);
        p.push(b'/');
        p.extend_from_slice(rel.as_bytes());
        BytePath(p)
    }

    fn thread(&self) -> OpResult<ProcThread<P>> {
        Ok(ProcThread {
            process: (self.spawn)(&self.state),
            buf: vec![0; GETDENTS_BUF],
        })
    }

    #[inline]
    fn stat(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<Kind> {
        match th.process.stat(&p.0) {
            Ok(st) => Ok(Kind::from_mode(st.mode)),
            Err(e) => Err(failed("stat", p, &e)),
        }
    }

    #[inline]
    fn open_close(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<()> {
        let fd = th
            .process
            .open(&p.0, O_RDONLY, 0)
            .map_err(|e| failed("open", p, &e))?;
        th.process.close(fd).map_err(|e| failed("close", p, &e))
    }

    #[inline]
    fn create(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<()> {
        let fd = th
            .process
            .open(&p.0, O_CREAT | O_EXCL | O_WRONLY, 0o644)
            .map_err(|e| failed("open(O_CREAT|O_EXCL)", p, &e))?;
        th.process.close(fd).map_err(|e| failed("close", p, &e))
    }

    #[inline]
    fn unlink(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<()> {
        th.process.unlink(&p.0).map_err(|e| failed("unlink", p, &e))
    }

    fn mkdir(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<()> {
        th.process
            .mkdir(&p.0, 0o755)
            .map_err(|e| failed("mkdir", p, &e))
    }

    fn rmdir(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<()> {
        th.process.rmdir(&p.0).map_err(|e| failed("rmdir", p, &e))
    }

    fn readdir(&self, th: &mut ProcThread<P>, p: &BytePath) -> OpResult<u64> {
        let fd = th
            .process
            .open(&p.0, O_RDONLY | O_DIRECTORY, 0)
            .map_err(|e| failed("open(O_DIRECTORY)", p, &e))?;
        let mut n = 0;
        let res = loop {
            match th.process.getdents64(fd, &mut th.buf) {
                Ok(0) => break Ok(n),
                Ok(len) => n += count_dirents(&th.buf[..len]),
                Err(e) => break Err(failed("getdents64", p, &e)),
            }
        };
        th.process.close(fd).map_err(|e| failed("close", p, &e))?;
        res
    }

    #[inline]
    fn chmod(&self, th: &mut ProcThread<P>, p: &BytePath, mode: u32) -> OpResult<()> {
        th.process
            .chmod(&p.0, mode)
            .map_err(|e| failed("chmod", p, &e))
    }
}
