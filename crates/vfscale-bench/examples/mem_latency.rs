//! The latency of one dependent load from a working set of a given size:
//! a pointer chase through the 64-byte lines of an anonymous mapping in one
//! random cyclic order (so neither the prefetchers nor the overlap of
//! independent loads help). It bounds what a hot stat of N random cached
//! files can cost when each needs a line from outside the caches (issue
//! 6's `cold-lookup` hot columns, docs/PERFORMANCE.md "Session 38").
//! Usage: cargo run --release -p vfscale-bench --example mem_latency -- MIB... [--thp] [--stride B]
//! (`--thp` asks for transparent huge pages with MADV_HUGEPAGE; `--stride
//! B` chases one line in every B bytes, so MIB × 64 / B MiB of lines are
//! touched spread over MIB: how a hot set of one line per 192-byte dentry
//! behaves against the same lines packed, session 39; `--threads N` runs
//! N chases at once, each through a mapping of its own, and prints each
//! one's latency: what two vCPUs' misses cost each other, session 46;
//! `--chains K` has each thread follow K independent chains through its
//! cycle, interleaved, so K misses can be in flight at once, as a loop of
//! hot stats keeps several: then the figure is ns per load, not per
//! dependent load).
use std::sync::Barrier;
use std::time::Instant;

const LINE: usize = 64;
const LOADS: usize = 20_000_000;
const MAX_CHAINS: usize = 16;

fn chase(mib: usize, stride: usize, thp: bool, chains: usize, start_together: &Barrier) -> f64 {
    let lines = mib * 1024 * 1024 / stride;
    let bytes = lines * stride;
    // SAFETY: a fresh anonymous private mapping; nothing else uses it.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED, "mmap of {mib} MiB");
    if thp {
        // SAFETY: advice on the mapping made above.
        unsafe { libc::madvise(base, bytes, libc::MADV_HUGEPAGE) };
    }
    // One random cycle through every line (Sattolo's shuffle, xorshift).
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % i as u64) as usize);
    }
    let at = |i: usize| (base as usize + order[i] * stride) as *mut usize;
    for i in 0..lines {
        // SAFETY: both addresses are line starts inside the mapping.
        unsafe { *at(i) = at((i + 1) % lines) as usize };
    }
    let mut heads = [0usize; MAX_CHAINS];
    for (k, head) in heads[..chains].iter_mut().enumerate() {
        *head = at(k * lines / chains) as usize;
    }
    start_together.wait();
    let start = Instant::now();
    for _ in 0..LOADS / chains {
        for head in heads[..chains].iter_mut() {
            // SAFETY: every line holds the address of another line.
            *head = unsafe { *(*head as *const usize) };
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / (LOADS / chains * chains) as f64;
    std::hint::black_box(heads);
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(base, bytes) };
    ns
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let thp = args.iter().any(|a| a == "--thp");
    let flag_value = |flag: &str, default: usize| match args.iter().position(|a| a == flag) {
        Some(i) => args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(0),
        None => default,
    };
    let stride = flag_value("--stride", LINE);
    let threads = flag_value("--threads", 1);
    let chains = flag_value("--chains", 1);
    let sizes: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|&(i, _)| i == 0 || !["--stride", "--threads", "--chains"].contains(&&*args[i - 1]))
        .filter_map(|(_, a)| a.parse().ok())
        .collect();
    if sizes.is_empty()
        || stride < LINE
        || stride % LINE != 0
        || threads == 0
        || !(1..=MAX_CHAINS).contains(&chains)
    {
        eprintln!(
            "usage: mem_latency MIB... [--thp] [--stride B] [--threads N] [--chains K] (B a multiple of {LINE}, N ≥ 1, 1 ≤ K ≤ {MAX_CHAINS})"
        );
        std::process::exit(2);
    }
    for mib in sizes {
        let start_together = Barrier::new(threads);
        let per_thread: Vec<f64> = std::thread::scope(|s| {
            let chasers: Vec<_> = (0..threads)
                .map(|_| s.spawn(|| chase(mib, stride, thp, chains, &start_together)))
                .collect();
            chasers
                .into_iter()
                .map(|c| c.join().expect("chase thread"))
                .collect()
        });
        let each: Vec<String> = per_thread.iter().map(|ns| format!("{ns:.1}")).collect();
        println!(
            "{mib} MiB{}, one line per {stride} bytes ({} MiB of lines), {threads} thread(s) at once, {chains} chain(s) each: {} ns per load",
            if thp { " (THP)" } else { "" },
            mib * LINE / stride,
            each.join(" / ")
        );
    }
}
