//! Sums of an arithmetic result, `sum(map(a, b))` for one row, without storing `map(a, b)`.
//!
//! Each element of `map(a, b)` is computed and rounded in the input dtype exactly as the
//! binary kernel would, then added in the same lanes, blocks and pairwise merges as
//! [`crate::reduce::sum_f32`] and [`crate::reduce::sum_f64`]: the result is bit-identical to
//! the two passes it replaces (a square and a row sum, say), one pass over the row cheaper.

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::reduce::{merge_lanes, pairwise_blocks, sum_block, PAIRWISE_BLOCK, PAIRWISE_BLOCK_F32, SUM_LANES};
use crate::src::Src;
use pyasc_ir::op::BinaryOp;

/// The block sum of [`sum_block`] over `f(a[i], b[i])` (`a` and `b` of one length): each
/// chunk's mapped values go through a small buffer and are added as `sum_block` adds them.
#[inline(always)]
fn sum_block2<T: Copy + Default>(a: &[T], b: &[T], f: impl Fn(T, T) -> T, to: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; SUM_LANES];
    let (ca, cb) = (a.chunks_exact(SUM_LANES), b.chunks_exact(SUM_LANES));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    let mut t = [T::default(); SUM_LANES];
    for (x, y) in ca.zip(cb) {
        for ((d, u), v) in t.iter_mut().zip(x).zip(y) {
            *d = f(*u, *v);
        }
        for (s, v) in acc.iter_mut().zip(&t) {
            *s += to(*v);
        }
    }
    let mut s = 0.0;
    for (u, v) in ta.iter().zip(tb) {
        s += to(f(*u, *v));
    }
    merge_lanes(acc, s)
}

/// The lanes of [`sum_block2`] on AVX-512 over `$n` float32 values: `$load(i)` gives the eight
/// mapped values at `i` as a `__m256`, `$at(i)` the mapped value at `i` for the tail. Lanes
/// `8j..8j + 8` of the accumulator are the `j`-th vector, fed by the `j`-th eight elements of
/// each chunk (the autovectorized loop keeps its lanes on the stack). Expands inside a
/// function with AVX-512F enabled.
#[cfg(target_arch = "x86_64")]
macro_rules! lanes_avx512 {
    ($n:expr, $load:expr, $at:expr) => {{
        use std::arch::x86_64::*;
        let (n, load, at) = ($n, $load, $at);
        let mut acc = [_mm512_setzero_pd(); SUM_LANES / 8];
        let full = n / SUM_LANES * SUM_LANES;
        let mut i = 0;
        while i < full {
            for (j, s) in acc.iter_mut().enumerate() {
                *s = _mm512_add_pd(*s, _mm512_cvtps_pd(load(i + 8 * j)));
            }
            i += SUM_LANES;
        }
        let mut lanes = [0.0f64; SUM_LANES];
        for (j, s) in acc.iter().enumerate() {
            // SAFETY: lanes 8j..8j + 8 lie inside the array.
            unsafe { _mm512_storeu_pd(lanes.as_mut_ptr().add(8 * j), *s) };
        }
        let tail: f64 = (full..n).fold(0.0, |s, i| s + at(i) as f64);
        merge_lanes(lanes, tail)
    }};
}

/// [`sum_block2`] for float32 on AVX-512.
///
/// # Safety
/// The CPU must support AVX-512F; `a` and `b` have one length.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum_block2_avx512(a: &[f32], b: &[f32], map: BinaryOp) -> f64 {
    use std::arch::x86_64::*;
    assert_eq!(a.len(), b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // SAFETY: the loads read whole vectors inside `a` and `b` (the macro loads only below
    // its last whole chunk); AVX-512F is enabled.
    let load = |i: usize| unsafe {
        let (u, v) = (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
        match map {
            BinaryOp::Add => _mm256_add_ps(u, v),
            BinaryOp::Sub => _mm256_sub_ps(u, v),
            _ => _mm256_mul_ps(u, v),
        }
    };
    let at = |i: usize| match map {
        BinaryOp::Add => a[i] + b[i],
        BinaryOp::Sub => a[i] - b[i],
        _ => a[i] * b[i],
    };
    lanes_avx512!(a.len(), load, at)
}

/// The block sum of `(x[i] - c)^2` for float32 on AVX-512, as [`sum_block`] adds it.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum_sq_dev_block_avx512(x: &[f32], c: f32) -> f64 {
    use std::arch::x86_64::*;
    let (px, vc) = (x.as_ptr(), _mm256_set1_ps(c));
    // SAFETY: as in `sum_block2_avx512`.
    let load = |i: usize| unsafe {
        let d = _mm256_sub_ps(_mm256_loadu_ps(px.add(i)), vc);
        _mm256_mul_ps(d, d)
    };
    let at = |i: usize| (x[i] - c) * (x[i] - c);
    lanes_avx512!(x.len(), load, at)
}

/// Pairwise sum of `f(a[i], b[i])` over `n` elements, `BLOCK` per block.
#[inline(always)]
fn sum_pairs<T: Copy + Default, const BLOCK: usize>(
    a: Src<'_, T>,
    b: Src<'_, T>,
    n: usize,
    f: impl Fn(T, T) -> T,
    to: impl Fn(T) -> f64,
) -> f64 {
    match (a, b) {
        (Src::Slice(x), Src::Slice(y)) => pairwise_blocks::<BLOCK>(n, |r| sum_block2(&x[r.clone()], &y[r], &f, &to)),
        (Src::Slice(x), Src::Scalar(v)) => pairwise_blocks::<BLOCK>(n, |r| sum_block(&x[r], |u| to(f(u, v)))),
        (Src::Scalar(u), Src::Slice(y)) => pairwise_blocks::<BLOCK>(n, |r| sum_block(&y[r], |v| to(f(u, v)))),
        // A uniform row is summed like any other, value by value.
        (Src::Scalar(u), Src::Scalar(v)) => pairwise_blocks::<BLOCK>(n, |r| sum_block(&vec![f(u, v); r.len()], &to)),
    }
}

struct SumMapK<'a, T> {
    map: BinaryOp,
    a: Src<'a, T>,
    b: Src<'a, T>,
    n: usize,
}

impl Kernel for SumMapK<'_, f32> {
    type Out = f64;
    #[inline(always)]
    fn run<S: Simd>(self) -> f64 {
        let (a, b, n) = (self.a, self.b, self.n);
        #[cfg(target_arch = "x86_64")]
        if let (true, Src::Slice(x), Src::Slice(y)) = (S::AVX512, a, b) {
            let map = self.map;
            if n <= PAIRWISE_BLOCK_F32 {
                // One block: as `pairwise_blocks` gives it (see `reduce::pairwise`).
                // SAFETY: as below.
                return unsafe { sum_block2_avx512(x, y, map) };
            }
            // SAFETY: `S::AVX512` says the CPU has AVX-512F; the slices have length `n`.
            return pairwise_blocks::<PAIRWISE_BLOCK_F32>(n, |r| unsafe {
                sum_block2_avx512(&x[r.clone()], &y[r], map)
            });
        }
        match self.map {
            BinaryOp::Add => sum_pairs::<f32, PAIRWISE_BLOCK_F32>(a, b, n, |u, v| u + v, |v| v as f64),
            BinaryOp::Sub => sum_pairs::<f32, PAIRWISE_BLOCK_F32>(a, b, n, |u, v| u - v, |v| v as f64),
            _ => sum_pairs::<f32, PAIRWISE_BLOCK_F32>(a, b, n, |u, v| u * v, |v| v as f64),
        }
    }
}

impl Kernel for SumMapK<'_, f64> {
    type Out = f64;
    #[inline(always)]
    fn run<S: Simd>(self) -> f64 {
        let (a, b, n) = (self.a, self.b, self.n);
        match self.map {
            BinaryOp::Add => sum_pairs::<f64, PAIRWISE_BLOCK>(a, b, n, |u, v| u + v, |v| v),
            BinaryOp::Sub => sum_pairs::<f64, PAIRWISE_BLOCK>(a, b, n, |u, v| u - v, |v| v),
            _ => sum_pairs::<f64, PAIRWISE_BLOCK>(a, b, n, |u, v| u * v, |v| v),
        }
    }
}

/// True when [`sum_map_f32`] and [`sum_map_f64`] compute `map` (add, sub, mul).
pub fn maps(map: BinaryOp) -> bool {
    matches!(map, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)
}

fn check<T>(s: &Src<'_, T>, n: usize) {
    if let Src::Slice(x) = s {
        assert_eq!(x.len(), n, "operand length");
    }
}

/// `sum(map(a, b))` over `n` float32 elements, each `map` result rounded to float32 and the
/// sum accumulated in float64 pairwise, as `sum_f32` does. Panics unless `maps(map)` and
/// every slice operand holds `n` elements.
pub fn sum_map_f32(map: BinaryOp, a: Src<'_, f32>, b: Src<'_, f32>, n: usize) -> f64 {
    assert!(maps(map), "no mapped sum for {}", map.name());
    check(&a, n);
    check(&b, n);
    dispatch(SumMapK { map, a, b, n })
}

/// `sum(map(a, b))` over `n` float64 elements, pairwise as `sum_f64`. Panics unless
/// `maps(map)` and every slice operand holds `n` elements.
pub fn sum_map_f64(map: BinaryOp, a: Src<'_, f64>, b: Src<'_, f64>, n: usize) -> f64 {
    assert!(maps(map), "no mapped sum for {}", map.name());
    check(&a, n);
    check(&b, n);
    dispatch(SumMapK { map, a, b, n })
}

/// `sum((x[i] - c)^2)` over float32 `x`, each difference and square rounded to float32 and
/// the squares summed in float64 as `sum_f32` sums: a variance's sum of squared deviations,
/// bit-identical to the difference and square stored and then summed.
pub fn sum_sq_dev_f32(x: &[f32], c: f32) -> f64 {
    struct K<'a>(&'a [f32], f32);
    impl Kernel for K<'_> {
        type Out = f64;
        #[inline(always)]
        fn run<S: Simd>(self) -> f64 {
            let (x, c) = (self.0, self.1);
            #[cfg(target_arch = "x86_64")]
            if S::AVX512 {
                if x.len() <= PAIRWISE_BLOCK_F32 {
                    // One block: as `pairwise_blocks` gives it (see `reduce::pairwise`).
                    // SAFETY: as below.
                    return unsafe { sum_sq_dev_block_avx512(x, c) };
                }
                // SAFETY: `S::AVX512` says the CPU has AVX-512F.
                return pairwise_blocks::<PAIRWISE_BLOCK_F32>(x.len(), |r| unsafe {
                    sum_sq_dev_block_avx512(&x[r], c)
                });
            }
            pairwise_blocks::<PAIRWISE_BLOCK_F32>(x.len(), |r| {
                sum_block(&x[r], |u| {
                    let d = u - c;
                    (d * d) as f64
                })
            })
        }
    }
    dispatch(K(x, c))
}

/// `sum((x[i] - c)^2)` over float64 `x`, each difference and square rounded to float64,
/// pairwise as `sum_f64`.
pub fn sum_sq_dev_f64(x: &[f64], c: f64) -> f64 {
    struct K<'a>(&'a [f64], f64);
    impl Kernel for K<'_> {
        type Out = f64;
        #[inline(always)]
        fn run<S: Simd>(self) -> f64 {
            let (x, c) = (self.0, self.1);
            pairwise_blocks::<PAIRWISE_BLOCK>(x.len(), |r| {
                sum_block(&x[r], |u| {
                    let d = u - c;
                    d * d
                })
            })
        }
    }
    dispatch(K(x, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::{sum_f32, sum_f64};

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / 65536.0 - 128.0).collect()
    }

    #[test]
    fn bit_identical_to_map_then_sum() {
        for n in [0, 1, 7, 63, 64, 65, 255, 1000, 1024, 4099, (1 << 14) + 3, 3 * (1 << 14) + 17] {
            let (a, b) = (values(n, 1), values(n, 7));
            for map in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul] {
                let f = |u: f32, v: f32| match map {
                    BinaryOp::Add => u + v,
                    BinaryOp::Sub => u - v,
                    _ => u * v,
                };
                let t: Vec<f32> = a.iter().zip(&b).map(|(u, v)| f(*u, *v)).collect();
                let want = sum_f32(&t);
                assert_eq!(
                    sum_map_f32(map, Src::Slice(&a), Src::Slice(&b), n).to_bits(),
                    want.to_bits(),
                    "{n} {map:?}"
                );
                let ts: Vec<f32> = a.iter().map(|u| f(*u, 0.75)).collect();
                let got = sum_map_f32(map, Src::Slice(&a), Src::Scalar(0.75), n);
                assert_eq!(got.to_bits(), sum_f32(&ts).to_bits());
                let tl: Vec<f32> = b.iter().map(|v| f(0.75, *v)).collect();
                let got = sum_map_f32(map, Src::Scalar(0.75), Src::Slice(&b), n);
                assert_eq!(got.to_bits(), sum_f32(&tl).to_bits());
                let tu = vec![f(0.5, 1.25); n];
                assert_eq!(sum_map_f32(map, Src::Scalar(0.5), Src::Scalar(1.25), n).to_bits(), sum_f32(&tu).to_bits());
                let (a64, b64): (Vec<f64>, Vec<f64>) =
                    (a.iter().map(|v| *v as f64 * 1.1).collect(), b.iter().map(|v| *v as f64).collect());
                let t64: Vec<f64> = a64
                    .iter()
                    .zip(&b64)
                    .map(|(u, v)| match map {
                        BinaryOp::Add => u + v,
                        BinaryOp::Sub => u - v,
                        _ => u * v,
                    })
                    .collect();
                let got = sum_map_f64(map, Src::Slice(&a64), Src::Slice(&b64), n);
                assert_eq!(got.to_bits(), sum_f64(&t64).to_bits(), "{n} {map:?} f64");
            }
        }
    }

    #[test]
    fn squared_deviations_match_difference_square_then_sum() {
        for n in [0, 1, 7, 63, 64, 65, 255, 1000, 1024, 4099, (1 << 14) + 3, 3 * (1 << 14) + 17] {
            let x = values(n, 3);
            for c in [0.0f32, 0.3, -17.25, 1e30] {
                let t: Vec<f32> = x.iter().map(|u| (u - c) * (u - c)).collect();
                assert_eq!(sum_sq_dev_f32(&x, c).to_bits(), sum_f32(&t).to_bits(), "{n} {c}");
                let x64: Vec<f64> = x.iter().map(|v| *v as f64 * 1.1).collect();
                let c64 = c as f64 * 0.9;
                let t64: Vec<f64> = x64.iter().map(|u| (u - c64) * (u - c64)).collect();
                assert_eq!(sum_sq_dev_f64(&x64, c64).to_bits(), sum_f64(&t64).to_bits(), "{n} {c} f64");
            }
        }
        assert!(sum_sq_dev_f32(&[1.0, f32::NAN], 0.0).is_nan());
        assert_eq!(sum_sq_dev_f32(&[f32::INFINITY, 1.0], 0.0), f64::INFINITY);
    }

    #[test]
    fn nan_and_infinity_propagate() {
        let a = [1.0f32, f32::INFINITY, 2.0];
        let b = [1.0f32, 0.0, 3.0];
        assert!(sum_map_f32(BinaryOp::Mul, Src::Slice(&a), Src::Slice(&b), 3).is_nan());
        assert_eq!(sum_map_f32(BinaryOp::Add, Src::Slice(&a), Src::Slice(&b), 3), f64::INFINITY);
    }
}
