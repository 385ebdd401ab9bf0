//! Scan primitives: running sums, products, maxima, minima and log-sum-exps over a contiguous
//! segment of a line ([`ScanOp::run`]) and over many columns at once ([`columns`]).
//!
//! A segment is scanned as `out[k] = carry ⊕ r_k` with `r_k = r ⊕ x_0 ⊕ … ⊕ x_k` (in the
//! accumulator type) and returns the segment's running value `r`. A caller that splits a line
//! into fixed blocks, scans them with `carry` the prefix of the earlier blocks' totals and folds
//! those totals in order gets the same bits whether the blocks run one after another or in
//! parallel (the totals come from the same code with the stores left out).
//!
//! float32 sums accumulate in float64 (each output is rounded once: more accurate than NumPy's
//! float32 loop), and on AVX-512 or AVX2 a vector of inputs is prefix-summed in registers
//! (`simd`; float32 maxima and minima too, on AVX-512); float32 log-sum-exps compute in float64; products, maxima and minima keep the
//! element type, as NumPy's loops do. Integer sums and products wrap; max/min propagate NaN
//! and keep the first of equal values (NumPy's `maximum`/`minimum`). Bools are scanned as
//! 0/1 bytes by [`Max`] (or) and [`Min`] (and).

use crate::dispatch::{dispatch, Kernel, Simd};
use std::marker::PhantomData;

/// The in-register prefix sums (also run by [`crate::scan_map`]).
pub(crate) mod simd;

/// A scan's element type `T`, accumulator type `A` and combining operation.
pub trait ScanOp: Copy + Send + Sync + 'static {
    /// Element type of the input and the output.
    type T: Copy + Send + Sync + 'static;
    /// Type the running value is held in.
    type A: Copy + Send + Sync + 'static;
    /// The identity of [`ScanOp::combine`].
    fn identity(self) -> Self::A;
    /// An element as an accumulator.
    fn load(self, x: Self::T) -> Self::A;
    /// `a ⊕ b` (`a` comes first in the line).
    fn combine(self, a: Self::A, b: Self::A) -> Self::A;
    /// An accumulator as an output element.
    fn store(self, a: Self::A) -> Self::T;
    /// Scan the segment `x`: with `out`, `out[k] = carry ⊕ r_k` (`carry` `None` is the
    /// identity); returns the last `r_k` (`r` for an empty segment). `out` is as long as `x`.
    #[inline]
    fn run(self, x: &[Self::T], out: Option<&mut [Self::T]>, carry: Option<Self::A>, r: Self::A) -> Self::A {
        run_scalar(self, x, out, carry, r)
    }
}

/// The portable segment scan (also the reference the SIMD paths are tested against).
#[inline(always)]
pub fn run_scalar<S: ScanOp>(op: S, x: &[S::T], out: Option<&mut [S::T]>, carry: Option<S::A>, mut r: S::A) -> S::A {
    match (out, carry) {
        (None, _) => {
            for v in x {
                r = op.combine(r, op.load(*v));
            }
        }
        (Some(out), None) => {
            for (v, o) in x.iter().zip(out) {
                r = op.combine(r, op.load(*v));
                *o = op.store(r);
            }
        }
        (Some(out), Some(c)) => {
            for (v, o) in x.iter().zip(out) {
                r = op.combine(r, op.load(*v));
                *o = op.store(op.combine(c, r));
            }
        }
    }
    r
}

/// Running sums (wrapping for integers).
#[derive(Copy, Clone, Debug, Default)]
pub struct Sum<T>(PhantomData<T>);
/// Running products (wrapping for integers).
#[derive(Copy, Clone, Debug, Default)]
pub struct Prod<T>(PhantomData<T>);
/// Running maxima (NaN propagates; bool: logical or).
#[derive(Copy, Clone, Debug, Default)]
pub struct Max<T>(PhantomData<T>);
/// Running minima (NaN propagates; bool: logical and).
#[derive(Copy, Clone, Debug, Default)]
pub struct Min<T>(PhantomData<T>);
/// Running `log(sum(exp))`, NumPy's `logaddexp` in float64.
#[derive(Copy, Clone, Debug, Default)]
pub struct LogSumExp<T>(PhantomData<T>);

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl ScanOp for Sum<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { 0 }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { a.wrapping_add(b) }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
        }
        impl ScanOp for Prod<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { 1 }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { a.wrapping_mul(b) }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
        }
        impl ScanOp for Max<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { <$t>::MIN }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { a.max(b) }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
        }
        impl ScanOp for Min<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { <$t>::MAX }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { a.min(b) }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
        }
    )*};
}

int_ops!(u8, i8, i16, u16, i32, u32, i64, u64);

/// NumPy's `npy_logaddexp`, in float64.
#[inline(always)]
pub fn logaddexp(x: f64, y: f64) -> f64 {
    if x == y {
        // Equal infinities (and equal finite values) without computing inf - inf.
        x + std::f64::consts::LN_2
    } else {
        let t = x - y;
        if t > 0.0 {
            x + (-t).exp().ln_1p()
        } else if t <= 0.0 {
            y + t.exp().ln_1p()
        } else {
            t
        }
    }
}

macro_rules! float_ops {
    ($($t:ty, $sum_run:expr, $max_run:expr, $min_run:expr),*) => {$(
        impl ScanOp for Sum<$t> {
            type T = $t;
            type A = f64;
            // -0.0 keeps the sign of a leading -0.0.
            #[inline(always)]
            fn identity(self) -> f64 { -0.0 }
            #[inline(always)]
            fn load(self, x: $t) -> f64 { x as f64 }
            #[inline(always)]
            fn combine(self, a: f64, b: f64) -> f64 { a + b }
            #[inline(always)]
            fn store(self, a: f64) -> $t { a as $t }
            #[inline]
            fn run(self, x: &[$t], out: Option<&mut [$t]>, carry: Option<f64>, r: f64) -> f64 {
                $sum_run(x, out, carry, r)
            }
        }
        impl ScanOp for Prod<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { 1.0 }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { a * b }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
        }
        impl ScanOp for Max<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { <$t>::NEG_INFINITY }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { if a >= b || a.is_nan() { a } else { b } }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
            #[inline]
            fn run(self, x: &[$t], out: Option<&mut [$t]>, carry: Option<$t>, r: $t) -> $t {
                ($max_run)(x, out, carry, r)
            }
        }
        impl ScanOp for Min<$t> {
            type T = $t;
            type A = $t;
            #[inline(always)]
            fn identity(self) -> $t { <$t>::INFINITY }
            #[inline(always)]
            fn load(self, x: $t) -> $t { x }
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t { if a <= b || a.is_nan() { a } else { b } }
            #[inline(always)]
            fn store(self, a: $t) -> $t { a }
            #[inline]
            fn run(self, x: &[$t], out: Option<&mut [$t]>, carry: Option<$t>, r: $t) -> $t {
                ($min_run)(x, out, carry, r)
            }
        }
        impl ScanOp for LogSumExp<$t> {
            type T = $t;
            type A = f64;
            #[inline(always)]
            fn identity(self) -> f64 { f64::NEG_INFINITY }
            #[inline(always)]
            fn load(self, x: $t) -> f64 { x as f64 }
            #[inline(always)]
            fn combine(self, a: f64, b: f64) -> f64 { logaddexp(a, b) }
            #[inline(always)]
            fn store(self, a: f64) -> $t { a as $t }
        }
    )*};
}

float_ops!(
    f32,
    crate::scan::simd::sum_f32,
    crate::scan::simd::extreme_f32::<true>,
    crate::scan::simd::extreme_f32::<false>,
    f64,
    crate::scan::simd::sum_f64,
    |x, o, c, r| run_scalar(Max::<f64>::default(), x, o, c, r),
    |x, o, c, r| run_scalar(Min::<f64>::default(), x, o, c, r)
);

/// One step of a column scan: for each column `c`, `acc[c] = acc[c] ⊕ x[c]` and
/// `out[c] = acc[c]`, over `rows` consecutive rows.
struct Columns<'a, S: ScanOp> {
    op: S,
    acc: &'a mut [S::A],
    x: *const S::T,
    x_row: isize,
    out: *mut S::T,
    out_row: isize,
    rows: usize,
}

impl<S: ScanOp> Kernel for Columns<'_, S> {
    type Out = ();
    #[inline(always)]
    fn run<I: Simd>(self) {
        let w = self.acc.len();
        let op = self.op;
        for k in 0..self.rows {
            // SAFETY: per `columns`' contract, row `k` of `x` and `out` holds `w` elements.
            let (x, out) = unsafe {
                (
                    std::slice::from_raw_parts(self.x.offset(k as isize * self.x_row), w),
                    std::slice::from_raw_parts_mut(self.out.offset(k as isize * self.out_row), w),
                )
            };
            for ((a, v), o) in self.acc.iter_mut().zip(x).zip(out) {
                *a = op.combine(*a, op.load(*v));
                *o = op.store(*a);
            }
        }
    }
}

/// Scan `acc.len()` columns down `rows` rows at once: row `k` of the input starts at
/// `x + k * x_row` and of the output at `out + k * out_row` (elements), each contiguous;
/// `acc` holds the running value of each column (the identity to start).
///
/// # Safety
/// Every row of `x` must be readable and every row of `out` writable for `acc.len()`
/// elements, and the output rows must not overlap the input rows or each other.
pub unsafe fn columns<S: ScanOp>(
    op: S,
    acc: &mut [S::A],
    x: *const S::T,
    x_row: isize,
    out: *mut S::T,
    out_row: isize,
    rows: usize,
) {
    dispatch(Columns { op, acc, x, x_row, out, out_row, rows });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logaddexp_matches_numpy_on_edges() {
        assert_eq!(logaddexp(f64::INFINITY, f64::INFINITY), f64::INFINITY);
        assert_eq!(logaddexp(f64::NEG_INFINITY, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(logaddexp(f64::NEG_INFINITY, 2.0), 2.0);
        assert!(logaddexp(f64::NAN, 1.0).is_nan());
        assert!((logaddexp(0.0, 0.0) - std::f64::consts::LN_2).abs() < 1e-16);
    }

    #[test]
    fn max_keeps_the_first_of_equal_values_and_propagates_nan() {
        let op = Max::<f64>::default();
        let x = [-0.0, 0.0, 1.0, f64::NAN, 5.0];
        let mut out = [0.0; 5];
        op.run(&x, Some(&mut out), None, op.identity());
        assert!(out[0] == 0.0 && out[0].is_sign_negative() && out[1].is_sign_negative());
        assert_eq!(out[2], 1.0);
        assert!(out[3].is_nan() && out[4].is_nan());
    }

    #[test]
    fn integer_sums_and_products_wrap() {
        let x = [100i8, 100, 100];
        let mut out = [0i8; 3];
        Sum::<i8>::default().run(&x, Some(&mut out), None, 0);
        assert_eq!(out, [100, -56, 44]);
        Prod::<i8>::default().run(&x, Some(&mut out), None, 1);
        assert_eq!(out, [100, 16, 64]);
    }
}
