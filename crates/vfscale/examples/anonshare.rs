//! Finds cache lines two threads both touch while churning anonymous
//! objects (issue 4's scaling rule: a create+close writes nothing shared).
//! No PMU is needed: run it under `valgrind --tool=lackey --trace-mem=yes`;
//! thread A churns, then (A parked, so its stack and thread-locals are not
//! reused) thread B churns, each after a warm-up, and the phases are
//! delimited by stores to `MARK` (its address is printed first).
//! `scripts/anon_shared_lines.py` intersects the two measured phases' line
//! sets. Usage: anonshare socket|pipe|eventfd|memfd [OPS]
#[path = "shared/anon_churn.rs"]
mod anon_churn;

#[path = "shared/lackey_phases.rs"]
mod lackey_phases;

use vfscale::Vfs;

fn main() {
    let kind: &'static str =
        Box::leak(std::env::args().nth(1).unwrap_or_default().into_boxed_str());
    let ops = lackey_phases::start(2, 2000);
    let vfs = Vfs::new();
    let (pa, pb) = (vfs.root_process(), vfs.root_process());
    let churn = |p: vfscale::Process| {
        move || assert!(anon_churn::churn(&p, kind), "kind: {}", anon_churn::KINDS)
    };
    lackey_phases::a_then_b(ops, churn(pa), churn(pb));
}
