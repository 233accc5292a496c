//! Session 14's variant of session 10's lookup model
//! (`session10-lookup-model.rs`; docs/PERFORMANCE.md, "Session 14" under
//! issue 6): the same accesses (bucket, dentry line, the inode's two
//! lines), with `FENCE=1` in the environment putting an `lfence` in each
//! iteration so that lookups cannot overlap (the serial latency of one),
//! and the layouts compared there: today's separate pools, session 10's
//! 384-byte pairs, pairs with the dentry's lookup line moved next to the
//! inode's attribute lines ("hotadj"), and the three hot lines packed.
//! Run: `rustc -O -C target-cpu=native docs/experiments/session14-lookup-model.rs -o /tmp/lm14 && /tmp/lm14 && FENCE=1 /tmp/lm14`
use std::time::Instant;
const N: usize = 100_000;
static mut L1: usize = 64;

fn rng(s: &mut u64) -> u64 { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; *s }
fn map(bytes: usize) -> *mut u8 {
    unsafe { libc_mmap(bytes) }
}
extern "C" { fn mmap(a: *mut u8, l: usize, p: i32, f: i32, fd: i32, o: i64) -> *mut u8; }
unsafe fn libc_mmap(l: usize) -> *mut u8 { mmap(std::ptr::null_mut(), l, 3, 0x22, -1, 0) }
#[inline(always)] fn prefetch(p: *const u8) { unsafe { core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0) } }
// layout: dentry_off(i), inode_off(i) in bytes from base
fn run(name: &str, bucket_bytes: usize, bucket_bits: u32, stride: usize, dent_off: &dyn Fn(usize)->usize, ino_off: &dyn Fn(usize)->usize, region: usize, use_hint: bool, order: &[usize]) {
    let base = map(region);
    let nb = 1usize << bucket_bits;
    let buckets = map(nb * bucket_bytes) as *mut u64;
    let _ = stride;
    // hash of i -> bucket; chains: head insert
    for i in 0..N {
        let d = unsafe { base.add(dent_off(i)) } as *mut u64;
        let ino = unsafe { base.add(ino_off(i)) } as *mut u64;
        let h = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> (64 - bucket_bits);
        let b = unsafe { buckets.add(h as usize * bucket_bytes / 8) };
        unsafe {
            *d = *b; // next
            *d.add(1) = i as u64; // key
            *d.add(2) = ino as u64;
            *b = d as u64;
            if bucket_bytes == 16 { *b.add(1) = ino as u64; }
            for k in 0..8 { *ino.add(k) = k as u64 + i as u64; *ino.add(L1/8 + k) = k as u64; }
        }
    }
    let fence = std::env::var("FENCE").is_ok_and(|v| v == "1");
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut sum = 0u64;
        for &i in order {
            let h = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> (64 - bucket_bits);
            let b = unsafe { buckets.add(h as usize * bucket_bytes / 8) };
            if use_hint && bucket_bytes == 16 { let hint = unsafe { *b.add(1) } as *const u8; prefetch(hint); prefetch(hint.wrapping_add(unsafe { L1 })); }
            let mut d = unsafe { *b } as *const u64;
            loop {
                if unsafe { *d.add(1) } == i as u64 { break; }
                d = unsafe { *d } as *const u64;
            }
            let ino = unsafe { *d.add(2) } as *const u64;
            if fence { unsafe { core::arch::x86_64::_mm_lfence(); } }
            let l1 = unsafe { L1 } / 8; if use_hint && bucket_bytes == 16 {} for k in 0..8 { sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(ino.add(k)) }); sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(ino.add(l1 + k)) }); }
        }
        std::hint::black_box(sum);
        let ns = t.elapsed().as_nanos() as f64 / order.len() as f64;
        if ns < best { best = ns; }
    }
    println!("{name}: {best:.1} ns");
}
fn main() {
    let mut order: Vec<usize> = (0..N).collect();
    let mut s = 88172645463325252u64;
    for i in (1..N).rev() { let j = (rng(&mut s) % (i as u64 + 1)) as usize; order.swap(i, j); }
    let region = N * 384 + (1<<22);
    for _ in 0..2 {
    run("sep192 16B hint 2^18", 16, 18, 192, &|i| i*192, &|i| N*192 + i*192, region, true, &order);
    run("pair384 16B hint 2^18 (s10)", 16, 18, 384, &|i| i*384, &|i| i*384+192, region, true, &order);
    run("pair384 hotadj 16B hint 2^18", 16, 18, 384, &|i| i*384+128, &|i| i*384+192, region, true, &order);
    run("pair384 hotadj 8B 2^18", 8, 18, 384, &|i| i*384+128, &|i| i*384+192, region, false, &order);
    run("hot192 8B 2^18", 8, 18, 192, &|i| i*192, &|i| i*192+64, region, false, &order);
    }
}
