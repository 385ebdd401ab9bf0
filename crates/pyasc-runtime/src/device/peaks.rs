//! The machine's roofs for the profiler: memory bandwidth (a copy and a triad over buffers far
//! larger than the last-level cache, on all worker cores) and peak float32 fused multiply-add
//! throughput with the active ISA's widest vectors (on all worker cores).
//!
//! Each figure is the best of a few repeats: a roof is what the machine can reach.

use pyasc_kernels::isa::{self, Isa};
use rayon::prelude::*;
use std::time::Instant;

/// Measured roofs.
#[derive(Clone, Debug, PartialEq)]
pub struct Peaks {
    /// `b = a` over all cores, bytes read plus written per second, in GB/s.
    pub copy_gbs: f64,
    /// `a = b + s * c` over all cores, in GB/s (three streams).
    pub triad_gbs: f64,
    /// Float32 FMA throughput over all cores, in GFLOP/s (an FMA counts two).
    pub fma_gflops: f64,
    /// The ISA the FMA loop used.
    pub isa: &'static str,
    /// Worker threads used.
    pub threads: usize,
    /// Bytes of each buffer of the bandwidth runs.
    pub buffer_bytes: usize,
    /// The last-level cache size found (bytes; 0 when unknown).
    pub llc_bytes: usize,
}

/// The largest cache size listed under `/sys/devices/system/cpu/cpu0/cache` (0 when unknown).
pub fn last_level_cache_bytes() -> usize {
    let Ok(dirs) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else { return 0 };
    dirs.flatten()
        .filter_map(|d| std::fs::read_to_string(d.path().join("size")).ok())
        .filter_map(|s| crate::memory::parse_bytes(s.trim()))
        .max()
        .unwrap_or(0)
}

/// Best seconds of `repeats` runs of `f`.
fn best_of(repeats: usize, mut f: impl FnMut()) -> f64 {
    (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Bandwidth roofs over buffers of `bytes` bytes each; returns (copy, triad) in GB/s.
pub fn bandwidth(bytes: usize, repeats: usize) -> (f64, f64) {
    let n = (bytes / 4).max(1 << 16);
    let a: Vec<f32> = vec![1.0; n];
    let mut b: Vec<f32> = vec![2.0; n];
    let mut c: Vec<f32> = vec![0.5; n];
    let chunk = (n / (crate::pool::num_threads() * 8)).max(1 << 14);
    let copy = best_of(repeats, || {
        crate::pool::install(|| {
            b.par_chunks_mut(chunk).zip(a.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s))
        })
    });
    let triad = best_of(repeats, || {
        crate::pool::install(|| {
            c.par_chunks_mut(chunk).zip(a.par_chunks(chunk)).zip(b.par_chunks(chunk)).for_each(|((d, x), y)| {
                for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                    *d = x + 3.0 * y;
                }
            })
        })
    });
    std::hint::black_box((&b, &c));
    let bytes = (n * 4) as f64;
    (2.0 * bytes / copy / 1e9, 3.0 * bytes / triad / 1e9)
}

/// FMAs per accumulator per call of the FMA loop.
const FMA_STEPS: usize = 1 << 16;
/// Calls of the FMA loop per worker in one measurement.
const CALLS: usize = 64;
/// Independent accumulators (enough to hide the FMA latency on every core we know).
const ACCS: usize = 12;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_avx512(seed: f32) -> f32 {
    use std::arch::x86_64::*;
    let (m, k) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(seed * 1e-7));
    let mut acc = [_mm512_set1_ps(seed); ACCS];
    for _ in 0..FMA_STEPS {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, m, k);
        }
    }
    acc.iter().map(|a| _mm512_reduce_add_ps(*a)).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_avx2(seed: f32) -> f32 {
    use std::arch::x86_64::*;
    let (m, k) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(seed * 1e-7));
    let mut acc = [_mm256_set1_ps(seed); ACCS];
    for _ in 0..FMA_STEPS {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_ps(*a, m, k);
        }
    }
    let mut total = 0.0;
    for a in acc {
        // SAFETY: a __m256 is eight f32 lanes.
        let lanes: [f32; 8] = unsafe { std::mem::transmute(a) };
        total += lanes.iter().sum::<f32>();
    }
    total
}

/// Portable loop (SSE2, NEON or scalar: as the compiler vectorises it; a multiply and an add).
fn fma_portable(seed: f32) -> f32 {
    let mut acc = [[seed; 4]; ACCS];
    for _ in 0..FMA_STEPS {
        for a in acc.iter_mut() {
            for v in a.iter_mut() {
                *v = *v * 0.999_999 + seed * 1e-7;
            }
        }
    }
    acc.iter().flatten().sum()
}

/// Float32 lanes per FMA loop step for `isa`, and the loop.
fn fma_kernel(isa: Isa) -> (usize, fn(f32) -> f32) {
    #[cfg(target_arch = "x86_64")]
    {
        fn avx512(s: f32) -> f32 {
            // SAFETY: chosen only when the active ISA (probed) includes AVX-512F.
            unsafe { fma_avx512(s) }
        }
        fn avx2(s: f32) -> f32 {
            // SAFETY: chosen only when the active ISA (probed) includes AVX2 and FMA.
            unsafe { fma_avx2(s) }
        }
        match isa {
            Isa::Avx512 => return (16, avx512),
            Isa::Avx2Fma => return (8, avx2),
            _ => {}
        }
    }
    let _ = isa;
    (4, fma_portable)
}

/// Peak float32 FMA throughput of the active ISA over all worker threads, in GFLOP/s.
pub fn fma_gflops(repeats: usize) -> (f64, &'static str) {
    let isa = isa::active();
    let (lanes, f) = fma_kernel(isa);
    let threads = crate::pool::num_threads();
    // Each worker runs the loop CALLS times (about 15 ms on a 3 GHz AVX-512 core): one call
    // alone (a fraction of a millisecond) ended before a sleeping worker had woken to steal
    // its share, so two workers measured one core's peak.
    let secs = best_of(repeats, || {
        let s: f32 = crate::pool::install(|| {
            (0..threads).into_par_iter().map(|i| (0..CALLS).map(|j| f(1.0 + (i + j) as f32)).sum::<f32>()).sum()
        });
        std::hint::black_box(s);
    });
    let flops = (threads * CALLS * ACCS * FMA_STEPS * lanes * 2) as f64;
    (flops / secs / 1e9, isa.name())
}

/// Measure every roof (a second or two: buffers of eight times the last-level cache, at least
/// 64 MiB each).
pub fn measure() -> Peaks {
    let llc = last_level_cache_bytes();
    let bytes = (8 * llc).max(64 << 20);
    let (copy_gbs, triad_gbs) = bandwidth(bytes, 5);
    let (fma_gflops, isa) = fma_gflops(5);
    Peaks {
        copy_gbs,
        triad_gbs,
        fma_gflops,
        isa,
        threads: crate::pool::num_threads(),
        buffer_bytes: bytes,
        llc_bytes: llc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_compute_what_they_should() {
        // 12 accumulators x lanes of x -> 0.999999 x + 1e-7 s, from x = s = 1: a fixed point near
        // 1e-7 / 1e-6 = 0.1 is approached slowly; after 65536 steps x = 0.1 + 0.9 * 0.999999^65536.
        let expect = 0.1 + 0.9 * 0.999_999f64.powi(FMA_STEPS as i32);
        for isa in isa::available() {
            let (lanes, f) = fma_kernel(isa);
            let got = f(1.0) as f64 / (ACCS * lanes) as f64;
            assert!((got - expect).abs() < 1e-2, "{isa:?}: {got} vs {expect}");
        }
    }

    #[test]
    fn roofs_are_positive() {
        let (copy, triad) = bandwidth(1 << 22, 1);
        assert!(copy > 0.0 && triad > 0.0);
        let (g, name) = fma_gflops(1);
        assert!(g > 0.0 && !name.is_empty());
    }
}
