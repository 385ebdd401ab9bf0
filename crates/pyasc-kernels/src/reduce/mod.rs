//! Reductions of one tile row to one value: sum, product, max, min, argmax, argmin, any, all.
//!
//! Float sums and products accumulate in float64 with pairwise blocks (for float32 input
//! that is far more accurate than NumPy's float32 pairwise sum; for float64 it matches its
//! error growth). max/min propagate NaN; argmax/argmin return the first NaN's index if there
//! is one, else the first extreme (NumPy's rules). Integer sums and products wrap.

use crate::dispatch::{dispatch, Kernel, Simd};

mod avx512;

/// Block below which pairwise summation of float64 values adds sequentially (in `SUM_LANES`
/// independent lanes), as NumPy's pairwise sum does.
pub(crate) const PAIRWISE_BLOCK: usize = 256;
/// The same for float32 values accumulated in float64: each lane adds at most 256 values, whose
/// float64 rounding errors stay some 2**-45 below a float32 ulp, and a 1,024-element row folds its
/// lanes once instead of four times (layer_norm's two row sums cost a fifth of its time).
pub(crate) const PAIRWISE_BLOCK_F32: usize = 1 << 14;
/// Independent lanes of the portable max/min.
const LANES: usize = 16;
/// Independent float64 accumulators of a sum block (eight AVX-512 vectors: enough adds in
/// flight to hide their latency).
pub(crate) const SUM_LANES: usize = 64;

#[inline(always)]
pub(crate) fn sum_block<T: Copy>(x: &[T], to: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; SUM_LANES];
    let chunks = x.chunks_exact(SUM_LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += to(*v);
        }
    }
    let mut s = 0.0;
    for v in tail {
        s += to(*v);
    }
    merge_lanes(acc, s)
}

/// The end of a block sum: the lanes folded pairwise, then the tail's sum `s` added.
#[inline(always)]
pub(crate) fn merge_lanes(mut acc: [f64; SUM_LANES], s: f64) -> f64 {
    let mut w = SUM_LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0] + s
}

/// Pairwise summation without recursion (so it inlines into each ISA's copy): blocks are
/// summed in lanes, and block sums are merged like a binary counter, which adds the same
/// pairs a recursive halving would.
#[inline(always)]
fn pairwise<T: Copy, const BLOCK: usize>(x: &[T], to: &impl Fn(T) -> f64) -> f64 {
    if x.len() <= BLOCK {
        // One block (a row of a row kernel, typically): the merge would only add it to +0.0,
        // which changes no block sum (lanes start at +0.0, so a block sum is never -0.0).
        return sum_block(x, to);
    }
    pairwise_blocks::<BLOCK>(x.len(), |r| sum_block(&x[r], to))
}

/// The merge of [`pairwise`]: `block(range)` sums the elements of one block of `BLOCK` (the
/// last may be shorter) out of `n`.
#[inline(always)]
pub(crate) fn pairwise_blocks<const BLOCK: usize>(n: usize, block: impl Fn(std::ops::Range<usize>) -> f64) -> f64 {
    // levels[i] holds the sum of 2^i consecutive blocks, when present.
    let mut levels = [0.0f64; 64];
    let mut full = [false; 64];
    for start in (0..n).step_by(BLOCK) {
        let mut s = block(start..(start + BLOCK).min(n));
        let mut i = 0;
        while full[i] {
            s += levels[i];
            full[i] = false;
            i += 1;
        }
        levels[i] = s;
        full[i] = true;
    }
    let mut total = 0.0;
    for i in 0..64 {
        if full[i] {
            total += levels[i];
        }
    }
    total
}

struct SumK<'a, T> {
    x: &'a [T],
}

impl Kernel for SumK<'_, f32> {
    type Out = f64;
    #[inline(always)]
    fn run<S: Simd>(self) -> f64 {
        pairwise::<f32, PAIRWISE_BLOCK_F32>(self.x, &|v: f32| v as f64)
    }
}

impl Kernel for SumK<'_, f64> {
    type Out = f64;
    #[inline(always)]
    fn run<S: Simd>(self) -> f64 {
        pairwise::<f64, PAIRWISE_BLOCK>(self.x, &|v: f64| v)
    }
}

/// Sum of float32 values, accumulated in float64 pairwise.
pub fn sum_f32(x: &[f32]) -> f64 {
    dispatch(SumK { x })
}

/// Sum of float64 values, pairwise.
pub fn sum_f64(x: &[f64]) -> f64 {
    dispatch(SumK { x })
}

/// 64-bit integers with wrapping sums and products.
pub trait WrapInt: Copy + Send + Sync + 'static {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `a + b`, wrapping.
    fn add(a: Self, b: Self) -> Self;
    /// `a * b`, wrapping.
    fn mul(a: Self, b: Self) -> Self;
}

macro_rules! wrap_int {
    ($($t:ty),*) => {$(
        impl WrapInt for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
        }
    )*};
}

wrap_int!(i64, u64);

struct IntFoldK<'a, T> {
    x: &'a [T],
    prod: bool,
}

impl<T: WrapInt> Kernel for IntFoldK<'_, T> {
    type Out = T;
    #[inline(always)]
    fn run<S: Simd>(self) -> T {
        if self.prod {
            fold_lanes(self.x, T::ONE, T::mul)
        } else {
            fold_lanes(self.x, T::ZERO, T::add)
        }
    }
}

/// `f` folded over `x` from `init` (`f` is associative and commutative on integers, so LLVM
/// vectorises the loop for the ISA of the kernel copy it is inlined into).
#[inline(always)]
fn fold_lanes<T: Copy>(x: &[T], init: T, f: impl Fn(T, T) -> T) -> T {
    x.iter().fold(init, |a, b| f(a, *b))
}

/// Wrapping sum of int64 values.
pub fn sum_i64(x: &[i64]) -> i64 {
    dispatch(IntFoldK { x, prod: false })
}

/// Wrapping product of int64 values.
pub fn prod_i64(x: &[i64]) -> i64 {
    dispatch(IntFoldK { x, prod: true })
}

/// Wrapping sum of uint64 values.
pub fn sum_u64(x: &[u64]) -> u64 {
    dispatch(IntFoldK { x, prod: false })
}

/// Wrapping product of uint64 values.
pub fn prod_u64(x: &[u64]) -> u64 {
    dispatch(IntFoldK { x, prod: true })
}

/// Product of floats, accumulated in float64.
pub fn prod_f64<T: Copy + Into<f64>>(x: &[T]) -> f64 {
    x.iter().fold(1.0f64, |a, b| a * (*b).into())
}

struct ExtremeK<'a, T> {
    x: &'a [T],
    max: bool,
}

macro_rules! float_extreme {
    ($t:ty) => {
        impl Kernel for ExtremeK<'_, $t> {
            type Out = $t;
            #[inline(always)]
            fn run<S: Simd>(self) -> $t {
                let init = if self.max { <$t>::NEG_INFINITY } else { <$t>::INFINITY };
                let mut acc = [init; LANES];
                let mut nan = [false; LANES];
                let chunks = self.x.chunks_exact(LANES);
                let tail = chunks.remainder();
                for c in chunks {
                    for i in 0..LANES {
                        let v = c[i];
                        nan[i] |= v != v;
                        acc[i] = if self.max {
                            if v > acc[i] {
                                v
                            } else {
                                acc[i]
                            }
                        } else if v < acc[i] {
                            v
                        } else {
                            acc[i]
                        };
                    }
                }
                let mut best = init;
                let mut any_nan = nan.iter().any(|n| *n);
                for v in acc.iter().chain(tail) {
                    any_nan |= v != v;
                    best = if self.max { best.max(*v) } else { best.min(*v) };
                }
                if any_nan {
                    <$t>::NAN
                } else {
                    best
                }
            }
        }
    };
}

float_extreme!(f32);
float_extreme!(f64);

/// float32 max/min, through the AVX-512 kernel where the CPU has it.
struct ExtremeF32<'a> {
    x: &'a [f32],
    max: bool,
}

impl Kernel for ExtremeF32<'_> {
    type Out = f32;
    #[inline(always)]
    fn run<S: Simd>(self) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if S::AVX512 {
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
            return unsafe {
                if self.max {
                    crate::reduce::avx512::extreme_f32::<true>(self.x)
                } else {
                    crate::reduce::avx512::extreme_f32::<false>(self.x)
                }
            };
        }
        ExtremeK { x: self.x, max: self.max }.run::<S>()
    }
}

/// Largest float32 (NaN if any is NaN); the caller never passes an empty row.
pub fn max_f32(x: &[f32]) -> f32 {
    dispatch(ExtremeF32 { x, max: true })
}
/// Smallest float32 (NaN if any is NaN).
pub fn min_f32(x: &[f32]) -> f32 {
    dispatch(ExtremeF32 { x, max: false })
}
/// Largest float64 (NaN if any is NaN).
pub fn max_f64(x: &[f64]) -> f64 {
    dispatch(ExtremeK { x, max: true })
}
/// Smallest float64 (NaN if any is NaN).
pub fn min_f64(x: &[f64]) -> f64 {
    dispatch(ExtremeK { x, max: false })
}

struct IntExtremeK<'a, T> {
    x: &'a [T],
    max: bool,
}

impl<T: Copy + Ord + Send + Sync> Kernel for IntExtremeK<'_, T> {
    type Out = Option<T>;
    #[inline(always)]
    fn run<S: Simd>(self) -> Option<T> {
        let first = *self.x.first()?;
        Some(if self.max { fold_lanes(self.x, first, T::max) } else { fold_lanes(self.x, first, T::min) })
    }
}

/// Largest of integers (or bools as 0/1); `None` for an empty row.
pub fn max_int<T: Copy + Ord + Send + Sync>(x: &[T]) -> Option<T> {
    dispatch(IntExtremeK { x, max: true })
}
/// Smallest integer; `None` for an empty row.
pub fn min_int<T: Copy + Ord + Send + Sync>(x: &[T]) -> Option<T> {
    dispatch(IntExtremeK { x, max: false })
}

/// Index of the first largest (`max`) or smallest value; a NaN wins at its first position.
pub fn arg_extreme<T: Copy + PartialOrd>(x: &[T], max: bool) -> usize {
    let mut best = 0usize;
    for (i, v) in x.iter().enumerate() {
        #[allow(clippy::eq_op)]
        if v != v {
            return i;
        }
        let b = x[best];
        if (max && *v > b) || (!max && *v < b) {
            best = i;
        }
    }
    best
}

/// The first index whose value satisfies `hit`, `x.len()` if none: blocks of 16 tested
/// whole (a loop the compiler vectorises), then the block that holds the first hit.
#[inline(always)]
fn first_where<T: Copy>(x: &[T], hit: impl Fn(T) -> bool) -> usize {
    let mut at = 0;
    for c in x.chunks(16) {
        if c.iter().fold(false, |a, v| a | hit(*v)) {
            return at + c.iter().position(|v| hit(*v)).unwrap_or(0);
        }
        at += c.len();
    }
    x.len()
}

/// The first position of `m` in `x` (of the first NaN when `m` is NaN), `x.len()` when none.
fn first_position(x: &[f32], m: f32) -> usize {
    if m.is_nan() {
        first_where(x, |v: f32| v.is_nan())
    } else {
        first_where(x, |v| v == m)
    }
}

/// [`arg_extreme`] of float32 values: the SIMD max/min first, then its first position (the
/// first NaN's when there is one); the same index as the scalar walk, far fewer branches.
pub fn arg_extreme_f32(x: &[f32], max: bool) -> usize {
    let m = if max { max_f32(x) } else { min_f32(x) };
    first_position(x, m).min(x.len().saturating_sub(1))
}

/// Each row's float32 max or min (`extreme`) or the position of its first max or min
/// (`arg`), for `rows.len() / row_len` rows, in one dispatch: short rows (a detector's 80
/// class scores) spend their time in the per-call dispatch otherwise, and the scan for the
/// first position runs compiled for the ISA.
struct RowsF32<'a> {
    x: &'a [f32],
    row_len: usize,
    max: bool,
    extreme: Option<&'a mut [f32]>,
    arg: Option<&'a mut [i64]>,
}

impl Kernel for RowsF32<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (mut extreme, mut arg) = (self.extreme, self.arg);
        for (r, row) in self.x.chunks_exact(self.row_len).enumerate() {
            let m = ExtremeF32 { x: row, max: self.max }.run::<S>();
            if let Some(e) = extreme.as_deref_mut() {
                e[r] = m;
            }
            if let Some(a) = arg.as_deref_mut() {
                #[cfg(target_arch = "x86_64")]
                let i = if S::AVX512 {
                    // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
                    unsafe { crate::reduce::avx512::first_equal_f32(row, m) }
                } else {
                    first_position(row, m)
                };
                #[cfg(not(target_arch = "x86_64"))]
                let i = first_position(row, m);
                a[r] = i.min(row.len() - 1) as i64;
            }
        }
    }
}

/// [`max_f32`] or [`min_f32`] of each row of `row_len` (> 0) elements of `x` into `out`.
pub fn extreme_rows_f32(x: &[f32], row_len: usize, max: bool, out: &mut [f32]) {
    assert!(row_len > 0 && x.len() == out.len() * row_len, "rows do not match the output");
    dispatch(RowsF32 { x, row_len, max, extreme: Some(out), arg: None })
}

/// [`arg_extreme_f32`] of each row of `row_len` (> 0) elements of `x` into `out`.
pub fn arg_extreme_rows_f32(x: &[f32], row_len: usize, max: bool, out: &mut [i64]) {
    assert!(row_len > 0 && x.len() == out.len() * row_len, "rows do not match the output");
    dispatch(RowsF32 { x, row_len, max, extreme: None, arg: Some(out) })
}

/// [`extreme_rows_f32`] and [`arg_extreme_rows_f32`] of the same rows in one pass: each row's
/// extreme is found once and its first position searched right after, while the row is in
/// the L1 cache. The values are the same as the two calls'.
pub fn extreme_and_arg_rows_f32(x: &[f32], row_len: usize, max: bool, value: &mut [f32], index: &mut [i64]) {
    assert!(row_len > 0 && x.len() == value.len() * row_len, "rows do not match the output");
    assert_eq!(value.len(), index.len(), "one value and one index per row");
    dispatch(RowsF32 { x, row_len, max, extreme: Some(value), arg: Some(index) })
}

/// [`arg_extreme`] of float64 values, as [`arg_extreme_f32`].
pub fn arg_extreme_f64(x: &[f64], max: bool) -> usize {
    let m = if max { max_f64(x) } else { min_f64(x) };
    let i = if m.is_nan() { first_where(x, |v: f64| v.is_nan()) } else { first_where(x, |v| v == m) };
    i.min(x.len().saturating_sub(1))
}

/// True when any byte is non-zero.
pub fn any_u8(x: &[u8]) -> bool {
    x.iter().fold(0u8, |a, b| a | b) != 0
}
/// True when every byte is non-zero (true for an empty row).
pub fn all_u8(x: &[u8]) -> bool {
    x.iter().fold(1u8, |a, b| a & (*b != 0) as u8) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_arg_extremes_match_the_scalar_walk() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        for n in [1usize, 2, 15, 16, 17, 80, 100, 257] {
            for case in 0..40 {
                // Few distinct values (many ties), signed zeros, infinities and NaNs.
                let pool = [0.0f32, -0.0, 1.5, -1.5, 3.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
                let kinds = if case % 4 == 0 { 8 } else { 7 };
                let x: Vec<f32> = (0..n).map(|_| pool[next() as usize % kinds]).collect();
                let y: Vec<f64> = x.iter().map(|v| *v as f64).collect();
                for max in [true, false] {
                    assert_eq!(arg_extreme_f32(&x, max), arg_extreme(&x, max), "{x:?} {max}");
                    assert_eq!(arg_extreme_f64(&y, max), arg_extreme(&y, max), "{y:?} {max}");
                }
            }
        }
    }

    #[test]
    fn row_extremes_in_one_dispatch_and_in_pairs_match_the_row_by_row_ones() {
        let pool = [0.0f32, -0.0, 1.5, -1.5, 3.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let mut state = 11u64;
        for row_len in [1usize, 7, 16, 80, 129] {
            let rows = 23;
            let x: Vec<f32> = (0..rows * row_len)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // NaN in a few rows only (every pool entry in row 5, none elsewhere).
                    pool[(state >> 33) as usize % if i / row_len == 5 { 8 } else { 7 }]
                })
                .collect();
            for max in [true, false] {
                let (mut e, mut a) = (vec![0.0f32; rows], vec![0i64; rows]);
                extreme_rows_f32(&x, row_len, max, &mut e);
                arg_extreme_rows_f32(&x, row_len, max, &mut a);
                let (mut pe, mut pa) = (vec![0.0f32; rows], vec![0i64; rows]);
                extreme_and_arg_rows_f32(&x, row_len, max, &mut pe, &mut pa);
                for (r, row) in x.chunks(row_len).enumerate() {
                    let want = if max { max_f32(row) } else { min_f32(row) };
                    for got in [e[r], pe[r]] {
                        assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{row:?}");
                    }
                    assert_eq!(a[r] as usize, arg_extreme(row, max), "{row:?} {max}");
                    assert_eq!(pa[r], a[r], "{row:?} {max}");
                }
            }
        }
    }

    #[test]
    fn pairwise_sums_are_accurate() {
        // 1e7 copies of 0.1f32: a float32 running sum drifts far; pairwise-in-f64 does not.
        let x = vec![0.1f32; 10_000_000];
        let want = 0.1f32 as f64 * 1e7;
        assert!((sum_f32(&x) - want).abs() / want < 1e-12);
        let y: Vec<f64> = (1..=100_000).map(|i| 1.0 / i as f64).collect();
        let exact: f64 = (1..=100_000).rev().map(|i| 1.0 / i as f64).sum();
        assert!((sum_f64(&y) - exact).abs() < 1e-13);
        assert_eq!(sum_f64(&[]), 0.0);
        assert_eq!(sum_i64(&[i64::MAX, 1]), i64::MIN);
    }

    #[test]
    fn extremes_propagate_nan_and_args_pick_first() {
        for n in [1usize, 5, 16, 17, 100] {
            let mut x: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            let mx = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(max_f32(&x), mx);
            assert_eq!(min_f32(&x), x.iter().cloned().fold(f32::INFINITY, f32::min));
            assert_eq!(arg_extreme(&x, true), x.iter().position(|v| *v == mx).unwrap());
            x[n / 2] = f32::NAN;
            assert!(max_f32(&x).is_nan() && min_f32(&x).is_nan());
            assert_eq!(arg_extreme(&x, false), n / 2);
        }
        assert!(any_u8(&[0, 0, 1]) && !any_u8(&[0, 0]) && all_u8(&[]) && !all_u8(&[1, 0]));
        assert_eq!(prod_i64(&[3, -2, 7]), -42);
        assert_eq!(prod_f64(&[0.5f32, 4.0]), 2.0);
        assert_eq!(max_int(&[3i32, 9, -1]), Some(9));
        assert_eq!(max_int(&[1u64, u64::MAX, 7]), Some(u64::MAX));
        assert_eq!(arg_extreme(&[1u64, u64::MAX, 7], false), 0);
        assert_eq!(arg_extreme_f32(&[], true), 0);
        assert_eq!(sum_u64(&[u64::MAX, 2]), 1);
        assert_eq!(prod_u64(&[1 << 63, 2]), 0);
    }
}
