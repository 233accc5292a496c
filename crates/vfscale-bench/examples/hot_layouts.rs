//! What the layout of a file's hot lines is worth to issue 6's hot stat,
//! without the rest of the stat: N "files" whose lookups chase a bucket,
//! a dentry's lookup line and an inode's attribute lines laid out as
//! vfscale lays them out today and as a hot/cold split would, looked up
//! in a shuffled order with about as much other work per lookup as a
//! real stat has (register-only instructions, `--work K`: K adds in a
//! chain), so that the out-of-order window overlaps about as many lookups
//! as it overlaps stats. Session 40, docs/PERFORMANCE.md.
//! Usage: cargo run --release -p vfscale-bench --example hot_layouts --
//! [FILES] [--work K]   (FILES default 100000, K default 100)
use std::time::Instant;

/// One layout: the stride between dentries' lookup lines and between
/// inodes' attribute blocks, how many attribute lines a lookup reads,
/// and whether the attribute line sits right after the lookup line.
struct Layout {
    name: &'static str,
    dentry_stride: usize,
    inode_stride: usize,
    attr_lines: usize,
    beside: bool,
}

const LAYOUTS: [Layout; 5] = [
    Layout {
        name: "today: 192-byte dentries, 192-byte inodes, 2 attribute lines",
        dentry_stride: 192,
        inode_stride: 192,
        attr_lines: 2,
        beside: false,
    },
    Layout {
        name: "inodes padded to 256 bytes (attributes one pair)",
        dentry_stride: 192,
        inode_stride: 256,
        attr_lines: 2,
        beside: false,
    },
    Layout {
        name: "split: lookup lines dense, attribute pairs dense",
        dentry_stride: 64,
        inode_stride: 128,
        attr_lines: 2,
        beside: false,
    },
    Layout {
        name: "split, attributes in one line",
        dentry_stride: 64,
        inode_stride: 64,
        attr_lines: 1,
        beside: false,
    },
    Layout {
        name: "lookup line and one attribute line as one pair",
        dentry_stride: 128,
        inode_stride: 0,
        attr_lines: 1,
        beside: true,
    },
];

/// Buckets per file: the grown dentry hash's 2^18 for 100,000 names.
const BUCKET_BITS: u32 = 18;

/// A zeroed anonymous mapping of `bytes` (never unmapped: the process
/// is short).
fn mapping(bytes: usize) -> *mut u64 {
    // SAFETY: a fresh private anonymous mapping; nothing else uses it.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap of {bytes} bytes");
    p as *mut u64
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn bucket_of(hash: u64) -> usize {
    ((hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) >> (32 - BUCKET_BITS)) as usize
}

/// About `work` register-only instructions in one dependency chain.
#[inline(always)]
fn other_work(work: u32) {
    for _ in 0..work / 10 {
        // SAFETY: register arithmetic only (`nomem`, `nostack`).
        unsafe {
            core::arch::asm!(
                ".rept 10", "add {0}, 1", ".endr",
                out(reg) _,
                options(nomem, nostack),
            )
        };
    }
}

/// ns per lookup of `files` files laid out as `l`, best of 5 shuffled
/// passes.
fn run(l: &Layout, files: usize, work: u32) -> f64 {
    // Each bucket: the first node, then the inode it points to (the
    // bucket's prefetch hint, as `dcache/hash.rs`).
    let buckets = mapping((16usize << BUCKET_BITS) + 4096);
    let dentries = mapping(files * l.dentry_stride + 4096);
    let inodes = if l.beside {
        dentries
    } else {
        mapping(files * l.inode_stride + 4096)
    };
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let hashes: Vec<u64> = (0..files).map(|_| xorshift(&mut x) | 1).collect();
    for (i, &h) in hashes.iter().enumerate() {
        // SAFETY (this block): every offset lies inside its mapping, and
        // words are 8-byte aligned (strides are multiples of 64).
        unsafe {
            let d = dentries.add(i * l.dentry_stride / 8);
            let inode = if l.beside {
                d.add(8)
            } else {
                inodes.add(i * l.inode_stride / 8)
            };
            let b = buckets.add(bucket_of(h) * 2);
            *d = h;
            *d.add(1) = *b;
            *d.add(2) = inode as u64;
            *b = d as u64;
            *b.add(1) = inode as u64;
            *inode.add(1) = i as u64;
        }
    }
    let mut best = f64::MAX;
    let mut order: Vec<u64> = hashes.clone();
    for _ in 0..5 {
        for i in (1..files).rev() {
            order.swap(i, (xorshift(&mut x) % (i as u64 + 1)) as usize);
        }
        let start = Instant::now();
        let mut sum = 0u64;
        for &h in &order {
            other_work(work);
            // SAFETY (this block): the chain holds the node with hash `h`
            // (inserted above), every pointer followed was stored above.
            unsafe {
                let b = buckets.add(bucket_of(h) * 2);
                core::arch::x86_64::_mm_prefetch(
                    *b.add(1) as *const i8,
                    core::arch::x86_64::_MM_HINT_T0,
                );
                let mut d = *b as *const u64;
                while *d != h {
                    d = *d.add(1) as *const u64;
                }
                let a = *d.add(2) as *const u64;
                let mut v = core::ptr::read_volatile(a) + *a.add(1);
                if l.attr_lines == 2 {
                    v += *a.add(9);
                }
                sum = sum.wrapping_add(v);
            }
        }
        best = best.min(start.elapsed().as_nanos() as f64 / files as f64);
        std::hint::black_box(sum);
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut files = 100_000;
    let mut work = 100;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--work" => work = it.next().and_then(|k| k.parse().ok()).expect("--work K"),
            n => files = n.parse().expect("FILES"),
        }
    }
    println!("{files} files, ~{work} other instructions per lookup; ns per lookup, two runs");
    for l in &LAYOUTS {
        let (a, b) = (run(l, files, work), run(l, files, work));
        println!("{:64} {a:7.1} {b:7.1}", l.name);
    }
}
