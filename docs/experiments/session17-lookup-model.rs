//! Session 17's model of a hot stat's memory accesses at 100,000 entries in
//! shuffled order (docs/PERFORMANCE.md, issue 6, "Session 17"): session
//! 10's layouts, but every layout is built first and the passes are timed
//! round-robin (R rounds, median and minimum per layout), so a noisy
//! moment lands on all layouts alike; each lookup also copies the inode's
//! 16 words into a stack buffer as `stat` does (W adds a dependent chain
//! of 4W register operations; THP=1 puts every region on huge pages).
//! Run: `rustc -O -C target-cpu=native docs/experiments/session17-lookup-model.rs -o /tmp/lm3 && /tmp/lm3`
use std::time::Instant;
const N: usize = 100_000;
fn rng(s: &mut u64) -> u64 { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; *s }
extern "C" { fn mmap(a: *mut u8, l: usize, p: i32, f: i32, fd: i32, o: i64) -> *mut u8; }
extern "C" { fn madvise(a: *mut u8, l: usize, adv: i32) -> i32; }
fn map(l: usize) -> *mut u8 { unsafe {
    let big = l + (2 << 20);
    let p = mmap(std::ptr::null_mut(), big, 3, 0x22, -1, 0);
    let a = ((p as usize + (2<<20) - 1) & !((2usize<<20)-1)) as *mut u8;
    if std::env::var("THP").is_ok() { madvise(a, l, 14); }
    a } }
#[inline(always)] fn prefetch(p: *const u8) { unsafe { core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0) } }
struct L { name: &'static str, buckets: *mut u64, bb: usize, bits: u32, hint: bool }
fn build(name: &'static str, bb: usize, bits: u32, dent: &dyn Fn(usize)->usize, ino: &dyn Fn(usize)->usize, hint: bool) -> L {
    let base = map(N * 512 + 8192);
    let nb = 1usize << bits;
    let buckets = map(nb * bb) as *mut u64;
    for i in 0..N {
        let d = unsafe { base.add(dent(i)) } as *mut u64;
        let io = unsafe { base.add(ino(i)) } as *mut u64;
        let h = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> (64 - bits);
        let b = unsafe { buckets.add(h as usize * bb / 8) };
        unsafe { *d = *b; *d.add(1) = i as u64; *d.add(2) = io as u64; *b = d as u64;
            if bb == 16 { *b.add(1) = io as u64; }
            for k in 0..16 { *io.add(k) = k as u64 + i as u64; } }
    }
    L { name, buckets, bb, bits, hint }
}
#[inline(never)]
fn pass(l: &L, order: &[usize], w: u64) -> f64 {
    let t = Instant::now();
    let mut sum = 0u64;
    for &i in order {
        let h = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> (64 - l.bits);
        let b = unsafe { l.buckets.add(h as usize * l.bb / 8) };
        if l.hint { let hint = unsafe { *b.add(1) } as *const u8; prefetch(hint); prefetch(hint.wrapping_add(64)); }
        let mut d = unsafe { *b } as *const u64;
        loop { if unsafe { *d.add(1) } == i as u64 { break; } d = unsafe { *d } as *const u64; }
        let ino = unsafe { *d.add(2) } as *const u64;
        let mut buf = [0u64; 24];
        for k in 0..16 { buf[k] = unsafe { std::ptr::read_volatile(ino.add(k)) }; }
        let (mut a, mut b2, mut c, mut e) = (i as u64, 1u64, 2u64, 3u64);
        for k in 0..w { a = a.wrapping_add(k); b2 ^= a; c = c.wrapping_add(b2 >> 3); e ^= c << 1; }
        buf[16] = a ^ b2 ^ c ^ e;
        std::hint::black_box(&mut buf);
        sum = sum.wrapping_add(buf[3]);
    }
    std::hint::black_box(sum);
    t.elapsed().as_nanos() as f64 / order.len() as f64
}
fn main() {
    let w: u64 = std::env::var("W").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let rounds: usize = std::env::var("R").ok().and_then(|v| v.parse().ok()).unwrap_or(9);
    let mut order: Vec<usize> = (0..N).collect();
    let mut s = 88172645463325252u64;
    for i in (1..N).rev() { let j = (rng(&mut s) % (i as u64 + 1)) as usize; order.swap(i, j); }
    let ls = vec![
        build("today: 192+192 separate, 16B hint 2^18", 16, 18, &|i| i*192, &|i| N*192+4096 + i*192, true),
        build("pair 384, 8B 2^18", 8, 18, &|i| i*384, &|i| i*384+192, false),
        build("split hot 64+128 separate, 16B hint 2^18", 16, 18, &|i| i*64, &|i| N*64+4096 + i*128, true),
        build("split hot 64+128 separate, 8B 2^17", 8, 17, &|i| i*64, &|i| N*64+4096 + i*128, false),
        build("hot192 pair, 8B 2^18", 8, 18, &|i| i*192, &|i| i*192+64, false),
        build("hot192 pair, 8B 2^17", 8, 17, &|i| i*192, &|i| i*192+64, false),
    ];
    let mut t: Vec<Vec<f64>> = vec![vec![]; ls.len()];
    for _ in 0..rounds { for (k, l) in ls.iter().enumerate() { t[k].push(pass(l, &order, w)); } }
    for (k, l) in ls.iter().enumerate() { let mut v = t[k].clone(); v.sort_by(|a,b| a.partial_cmp(b).unwrap());
        println!("{:45} median {:6.1}  min {:6.1}", l.name, v[v.len()/2], v[0]); }
}
