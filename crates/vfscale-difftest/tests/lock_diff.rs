//! Differential test of the file locks against the real kernel: random
//! sequences of flock(2) and fcntl(2) lock calls (POSIX and OFD, tests and
//! non-blocking sets, valid and invalid arguments), seeks, truncates and
//! reopens, from two processes with two descriptors each on one file, run
//! on vfscale and, step by step, as real syscalls on a private tmpfs
//! (`KernelProcess`: each has its own fd table, so its own POSIX lock
//! owner, as two processes have). Every step must give the same result and
//! errno, and every F_GETLK the same answer (`l_pid` aside: the kernel
//! reports the test process's pid for both simulated processes, vfscale
//! each process's lock-owner id; both must agree on "-1 for an OFD lock").
//! After the last step every lock must be gone with its files.
//!
//! Skips (with a printed reason) when not root or when the private tmpfs
//! cannot be mounted. `VFSCALE_LOCKDIFF_CASES` (default 300) cases of up to
//! 50 steps; `VFSCALE_SEED` replays a run.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vfscale::abi::*;
use vfscale::{Cred, Errno, ProcessApi, Vfs};
use vfscale_difftest::seeded::{on_fresh_thread, seeded_runner};
use vfscale_difftest::{enter_private_tmpfs_root, KernelProcess, SandboxError};

/// Descriptor slots: (process, open flags). Slot i belongs to process
/// i / 2.
const SLOTS: [i32; 4] = [O_RDWR, O_RDONLY, O_RDWR, O_WRONLY];

#[derive(Clone, Debug)]
enum Op {
    Flock { slot: usize, operation: i32 },
    Lock { slot: usize, cmd: i32, lock: Flock },
    Seek { slot: usize, off: i64 },
    Truncate { slot: usize, len: i64 },
    Reopen { slot: usize },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let slot = 0usize..4;
    prop_oneof![
        2 => (slot.clone(), prop::sample::select(vec![
            LOCK_SH | LOCK_NB, LOCK_EX | LOCK_NB, LOCK_UN, 0, 3, LOCK_NB,
        ]))
            .prop_map(|(slot, operation)| Op::Flock { slot, operation }),
        6 => (
            slot.clone(),
            prop::sample::select(vec![F_GETLK, F_SETLK, F_OFD_GETLK, F_OFD_SETLK]),
            prop::sample::select(vec![F_RDLCK, F_WRLCK, F_UNLCK, F_RDLCK, F_WRLCK, 5]),
            prop::sample::select(vec![SEEK_SET, SEEK_SET, SEEK_SET, SEEK_CUR, SEEK_END, 4]),
            -3i64..20,
            -5i64..12,
            prop::sample::select(vec![0, 0, 0, 7]),
        )
            .prop_map(|(slot, cmd, l_type, whence, l_start, l_len, l_pid)| Op::Lock {
                slot,
                cmd,
                lock: Flock { l_type, l_whence: whence as i16, l_start, l_len, l_pid },
            }),
        1 => (slot.clone(), 0i64..15).prop_map(|(slot, off)| Op::Seek { slot, off }),
        1 => (slot.clone(), 0i64..30).prop_map(|(slot, len)| Op::Truncate { slot, len }),
        1 => slot.prop_map(|slot| Op::Reopen { slot }),
    ]
}

/// What one step returned, comparable across the two sides.
#[derive(Debug, PartialEq)]
enum Outcome {
    Done(Result<(), Errno>),
    Tested(Result<(i16, i16, i64, i64, bool), Errno>),
    Seeked(Result<i64, Errno>),
}

struct Side<P: ProcessApi> {
    procs: Vec<P>,
    fds: [Fd; 4],
}

impl<P: ProcessApi> Side<P> {
    fn open(&mut self, slot: usize) {
        let p = &self.procs[slot / 2];
        self.fds[slot] = p.open(b"/f", SLOTS[slot], 0).expect("open /f");
    }

    fn new(procs: Vec<P>) -> Self {
        let fd = procs[0]
            .open(b"/f", O_CREAT | O_WRONLY, 0o644)
            .expect("create /f");
        assert_eq!(procs[0].write(fd, b"0123456789"), Ok(10));
        procs[0].close(fd).expect("close");
        let mut side = Side {
            procs,
            fds: [-1; 4],
        };
        for slot in 0..4 {
            side.open(slot);
        }
        side
    }

    fn step(&mut self, op: &Op) -> Outcome {
        match *op {
            Op::Flock { slot, operation } => {
                Outcome::Done(self.procs[slot / 2].flock(self.fds[slot], operation))
            }
            Op::Lock { slot, cmd, lock } => {
                let mut l = lock;
                let r = self.procs[slot / 2].fcntl_lock(self.fds[slot], cmd, &mut l);
                if cmd == F_GETLK || cmd == F_OFD_GETLK {
                    Outcome::Tested(
                        r.map(|()| (l.l_type, l.l_whence, l.l_start, l.l_len, l.l_pid == -1)),
                    )
                } else {
                    Outcome::Done(r)
                }
            }
            Op::Seek { slot, off } => {
                Outcome::Seeked(self.procs[slot / 2].lseek(self.fds[slot], off, SEEK_SET))
            }
            Op::Truncate { slot, len } => {
                Outcome::Done(self.procs[slot / 2].ftruncate(self.fds[slot], len))
            }
            Op::Reopen { slot } => {
                let r = self.procs[slot / 2].close(self.fds[slot]);
                self.open(slot);
                Outcome::Done(r)
            }
        }
    }

    fn close_all(&self) {
        for (slot, &fd) in self.fds.iter().enumerate() {
            self.procs[slot / 2].close(fd).expect("close");
        }
    }
}

fn compare(steps: Vec<Op>) -> Result<(), TestCaseError> {
    on_fresh_thread(move || compare_on_this_thread(&steps))
}

fn compare_on_this_thread(steps: &[Op]) -> Result<(), TestCaseError> {
    enter_private_tmpfs_root().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let kprocs = (0..2)
        .map(|_| KernelProcess::new(&Cred::root()).map_err(TestCaseError::fail))
        .collect::<Result<Vec<_>, _>>()?;
    let mut kernel = Side::new(kprocs);
    let vfs = Vfs::new();
    let mut ours = Side::new((0..2).map(|_| vfs.root_process()).collect());
    for (i, op) in steps.iter().enumerate() {
        let want = kernel.step(op);
        let got = ours.step(op);
        prop_assert_eq!(got, want, "step {} {:?} (steps: {:?})", i, op, steps);
    }
    ours.close_all();
    kernel.close_all();
    prop_assert_eq!(vfs.lock_contexts(), 0, "locks outlived their files");
    Ok(())
}

#[test]
fn locks_match_kernel() {
    let probe = std::thread::spawn(enter_private_tmpfs_root)
        .join()
        .unwrap_or_else(|_| Err(SandboxError::Setup("probe panicked".into())));
    if let Err(e) = probe {
        println!("lock differential test skipped: {e}");
        return;
    }
    let (mut runner, seed) = seeded_runner("lock differential test", "VFSCALE_LOCKDIFF_CASES", 300);
    let strategy = proptest::collection::vec(op_strategy(), 1..50);
    if let Err(e) = runner.run(&strategy, compare) {
        panic!("seed {seed}: {e}");
    }
}
