//! create-unlink (seeds 001/003): each thread creates (open O_CREAT|O_EXCL,
//! close) and unlinks its own name in one shared directory. Every operation
//! takes the directory's exclusive lock, so this is the directory-mutex case;
//! it also exercises inode and dentry allocation and their final puts.

use super::{per_thread, Ctx, Workload};
use crate::params;
use crate::target::{Op, OpResult, Target};

pub struct CreateUnlink;

impl Workload for CreateUnlink {
    fn name(&self) -> &'static str {
        "create-unlink"
    }
    fn about(&self) -> &'static str {
        "each thread creates and unlinks its own name in one shared directory (one op = both)"
    }
    fn needs(&self) -> &'static [Op] {
        &[Op::Create, Op::Unlink, Op::Mkdir]
    }
    fn run<T: Target>(&self, t: &T, ctx: &mut Ctx<'_>) -> OpResult<()> {
        let mut th = t.thread()?;
        t.mkdir(&mut th, &t.path("d"))?;
        let paths: Vec<_> = (0..ctx.max_threads())
            .map(|i| t.path(&format!("d/t{i}")))
            .collect();
        per_thread(t, ctx, 64, &paths, &params! {}, |t, th, p| {
            t.create(th, p)?;
            t.unlink(th, p)
        })
    }
}
