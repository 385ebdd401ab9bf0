//! Per-type arithmetic and bitwise operations behind [`super::arith`] and [`super::bitwise`].
//!
//! Integer division by zero yields 0 (NumPy's result) with the divisor replaced by 1 before
//! dividing, so no lane traps. Float FloorDiv and Mod follow NumPy's `npy_divmod` step by step.

use super::RowSrc;
use crate::dispatch::Simd;
use crate::math::real::Real;
use crate::src::{map2, Src};
use pyasc_ir::op::BinaryOp;

/// Arithmetic of one element type.
pub trait ArithOps: Sized + Copy {
    /// `y = f(a, b)` elementwise in the ISA `S`; `S::DIV_BY_MUL`: divide float32 by a scalar through a float64
    /// multiply (see [`div_by_scalar_f32`]).
    fn arith<S: Simd>(f: BinaryOp, a: Src<'_, Self>, b: Src<'_, Self>, y: &mut [Self]);
    /// `y = f(a, b)` over rows of `c` elements in whole 512-bit vectors when `S` is AVX-512
    /// and a hand-written row loop covers the operands (`super::rows_avx512`); false, with
    /// nothing written, otherwise.
    #[inline(always)]
    fn rows_wide<S: Simd>(
        _f: BinaryOp,
        _a: RowSrc<'_, Self>,
        _b: RowSrc<'_, Self>,
        _y: &mut [Self],
        _c: usize,
    ) -> bool {
        false
    }
}

/// Bitwise operations of one element type.
pub trait BitOps: Sized + Copy {
    /// `a & b`.
    fn and(a: Self, b: Self) -> Self;
    /// `a | b`.
    fn or(a: Self, b: Self) -> Self;
    /// `a ^ b`.
    fn xor(a: Self, b: Self) -> Self;
}

macro_rules! bit_ops {
    ($($t:ty),*) => {$(
        impl BitOps for $t {
            #[inline(always)]
            fn and(a: Self, b: Self) -> Self {
                a & b
            }
            #[inline(always)]
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            #[inline(always)]
            fn xor(a: Self, b: Self) -> Self {
                a ^ b
            }
        }
    )*};
}

bit_ops!(u8, i32, i64, u64);

macro_rules! int_arith {
    ($t:ty) => {
        impl ArithOps for $t {
            #[inline(always)]
            fn arith<S: Simd>(f: BinaryOp, a: Src<'_, Self>, b: Src<'_, Self>, y: &mut [Self]) {
                match f {
                    BinaryOp::Add => map2(a, b, y, <$t>::wrapping_add),
                    BinaryOp::Sub => map2(a, b, y, <$t>::wrapping_sub),
                    BinaryOp::Mul => map2(a, b, y, <$t>::wrapping_mul),
                    BinaryOp::Div => map2(a, b, y, |a: $t, b: $t| {
                        let q = a.wrapping_div(if b == 0 { 1 } else { b });
                        if b == 0 {
                            0
                        } else {
                            q
                        }
                    }),
                    BinaryOp::FloorDiv => map2(a, b, y, |a: $t, b: $t| {
                        let d = if b == 0 { 1 } else { b };
                        let (q, r) = (a.wrapping_div(d), a.wrapping_rem(d));
                        let q = if r != 0 && ((r < 0) != (d < 0)) { q - 1 } else { q };
                        if b == 0 {
                            0
                        } else {
                            q
                        }
                    }),
                    BinaryOp::Mod => map2(a, b, y, |a: $t, b: $t| {
                        let d = if b == 0 { 1 } else { b };
                        let r = a.wrapping_rem(d);
                        let r = if r != 0 && ((r < 0) != (d < 0)) { r + d } else { r };
                        if b == 0 {
                            0
                        } else {
                            r
                        }
                    }),
                    BinaryOp::Pow => map2(a, b, y, |a: $t, b: $t| {
                        let (mut r, mut base, mut e): ($t, $t, $t) = (1, a, b);
                        for _ in 0..<$t>::BITS - 1 {
                            r = if e & 1 != 0 { r.wrapping_mul(base) } else { r };
                            base = base.wrapping_mul(base);
                            e >>= 1;
                        }
                        if b < 0 {
                            0
                        } else {
                            r
                        }
                    }),
                    BinaryOp::Min => map2(a, b, y, |a: $t, b: $t| if a < b { a } else { b }),
                    BinaryOp::Max => map2(a, b, y, |a: $t, b: $t| if a > b { a } else { b }),
                    op => super::table::int::<S, $t>(op, a, b, y),
                }
            }
        }
    };
}

int_arith!(i32);
int_arith!(i64);

/// `a ** b` wrapping, for an unsigned exponent (square and multiply over all 64 bits).
#[inline(always)]
fn pow_u64(a: u64, b: u64) -> u64 {
    let (mut r, mut base, mut e) = (1u64, a, b);
    for _ in 0..u64::BITS {
        r = if e & 1 != 0 { r.wrapping_mul(base) } else { r };
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    r
}

/// uint64 arithmetic: the bits of `+ - *` are int64's, but division, remainder, powers,
/// ordering, right shifts and gcd/lcm read the operands as unsigned (NumPy's uint64 loops;
/// division and remainder by zero give 0).
impl ArithOps for u64 {
    #[inline(always)]
    fn arith<S: Simd>(f: BinaryOp, a: Src<'_, Self>, b: Src<'_, Self>, y: &mut [Self]) {
        let nz = |b: u64| if b == 0 { 1 } else { b };
        match f {
            BinaryOp::Add => map2(a, b, y, u64::wrapping_add),
            BinaryOp::Sub => map2(a, b, y, u64::wrapping_sub),
            BinaryOp::Mul => map2(a, b, y, u64::wrapping_mul),
            BinaryOp::Div | BinaryOp::FloorDiv => map2(a, b, y, |a: u64, b: u64| if b == 0 { 0 } else { a / nz(b) }),
            BinaryOp::Mod | BinaryOp::Fmod => map2(a, b, y, |a: u64, b: u64| if b == 0 { 0 } else { a % nz(b) }),
            BinaryOp::Pow => map2(a, b, y, pow_u64),
            BinaryOp::Min | BinaryOp::Fmin => map2(a, b, y, |a: u64, b: u64| if a < b { a } else { b }),
            BinaryOp::Max | BinaryOp::Fmax => map2(a, b, y, |a: u64, b: u64| if a > b { a } else { b }),
            BinaryOp::LeftShift => map2(a, b, y, |a: u64, b: u64| if b < 64 { a << (b & 63) } else { 0 }),
            BinaryOp::RightShift => map2(a, b, y, |a: u64, b: u64| if b < 64 { a >> (b & 63) } else { 0 }),
            BinaryOp::Gcd => map2(a, b, y, pyasc_ir::op_table::gcd_u64),
            BinaryOp::Lcm => map2(a, b, y, pyasc_ir::op_table::lcm_u64),
            op => super::table::int::<S, u64>(op, a, b, y),
        }
    }
}

/// NumPy's `npy_divmod`: `(floor_divide(a, b), remainder(a, b))`.
#[inline(always)]
fn divmod<T: Real + std::ops::Rem<Output = T> + std::ops::Add<Output = T> + std::ops::Sub<Output = T>>(
    a: T,
    b: T,
) -> (T, T) {
    let zero = T::from(0.0);
    let one = T::from(1.0);
    let half = T::from(0.5);
    let m = a % b;
    let div = (a - m) / b;
    let m_zero = m == zero;
    let fix = !m_zero && ((b < zero) != (m < zero));
    let (m, div) = if fix { (m + b, div - one) } else { (m, div) };
    let m = if m_zero { zero.copysign_(b) } else { m };
    let fl = div.floor_();
    let fl = if div - fl > half { fl + one } else { fl };
    let fl = if div == zero { zero.copysign_(a / b) } else { fl };
    // Division by zero: a / b (inf or NaN) and fmod's NaN.
    let b0 = b == zero;
    (if b0 { a / b } else { fl }, if b0 { a % b } else { m })
}

/// NaN-propagating minimum (`np.minimum`).
#[inline(always)]
fn minimum<T: Real>(a: T, b: T) -> T {
    if a.nan_() || a <= b {
        a
    } else {
        b
    }
}

/// NaN-propagating maximum (`np.maximum`).
#[inline(always)]
fn maximum<T: Real>(a: T, b: T) -> T {
    if a.nan_() || a >= b {
        a
    } else {
        b
    }
}

/// Elements per chunk of [`div_by_scalar_f32`]: a chunk with a subnormal quotient is redone.
const DIV_CHUNK: usize = 64;

/// `y = a / c` for float32, correctly rounded like the division, but multiplying by `1/c` in
/// float64 instead of dividing.
///
/// Write `a = ma 2^ea`, `c = mc 2^ec` with 24-bit integer significands. A normal float32
/// quotient is never exactly a rounding midpoint: that needs `ma 2^25 = (2k + 1) mc`, so
/// `2^25` divides `mc` (impossible for 24 bits). Any other quotient lies at least
/// `1 / (mc 2^25) >= 2^-49` (relative) from every midpoint, and `a * fl(1/c)` in float64 is
/// within about `2^-52` of `a / c`, so rounding it to float32 gives the same result as
/// dividing; overflow to infinity rounds at the midpoint above `f32::MAX`, the same argument.
/// Zero, infinite and NaN `a` or `c` give the quotient's zero, infinity or NaN (`1/±0 = ±inf`,
/// `1/±inf = ±0`). Subnormal quotients have fewer significant bits and may be midpoints: a
/// chunk with a nonzero `a` whose result is below `f32::MIN_POSITIVE` is recomputed by
/// division (a quotient just below it that rounds up to it is far from any midpoint), and so
/// is the last partial chunk.
#[inline(always)]
fn div_by_scalar_f32(a: &[f32], c: f32, y: &mut [f32]) {
    assert_eq!(a.len(), y.len(), "operand length differs from output length");
    let r = 1.0 / c as f64;
    let mut yc = y.chunks_exact_mut(DIV_CHUNK);
    let mut ac = a.chunks_exact(DIV_CHUNK);
    for (yc, ac) in (&mut yc).zip(&mut ac) {
        let mut slow = 0u32;
        for i in 0..DIV_CHUNK {
            let o = (ac[i] as f64 * r) as f32;
            slow |= ((o.abs() < f32::MIN_POSITIVE) & (ac[i] != 0.0)) as u32;
            yc[i] = o;
        }
        if slow != 0 {
            for i in 0..DIV_CHUNK {
                yc[i] = ac[i] / c;
            }
        }
    }
    for (o, &v) in yc.into_remainder().iter_mut().zip(ac.remainder()) {
        *o = v / c;
    }
}

/// Bounds of the float32 quotients and dividends [`div_by_scalar_fma_f32`] handles directly.
const FMA_DIV_LOW: f32 = 7.888_609e-31; // 2^-100
/// See [`FMA_DIV_LOW`].
const FMA_DIV_HIGH: f32 = 1.267_650_6e30; // 2^100

/// `y = a / c` for float32, correctly rounded like the division, from the reciprocal
/// `r = fl(1/c)` and one correction step with fused multiply-adds (Markstein):
/// `q0 = fl(a r)` is within an ulp of `a / c`, the remainder `a - c q0` is exact in one FMA,
/// and `fl(q0 + (a - c q0) r)` is the correctly rounded quotient when `r` is the correctly
/// rounded reciprocal and nothing underflows or overflows. The caller checks that `r` is
/// normal; here dividends and quotients outside [2^-100, 2^100] in magnitude (subnormal,
/// infinite or NaN operands, overflowing or underflowing quotients) make their chunk be
/// recomputed by division. Zero dividends give the zero of `q0`'s sign, which is the
/// quotient's.
#[inline(always)]
fn div_by_scalar_fma_f32(a: &[f32], c: f32, y: &mut [f32]) {
    assert_eq!(a.len(), y.len(), "operand length differs from output length");
    let r = 1.0 / c;
    let mut yc = y.chunks_exact_mut(DIV_CHUNK);
    let mut ac = a.chunks_exact(DIV_CHUNK);
    for (yc, ac) in (&mut yc).zip(&mut ac) {
        let mut slow = 0u32;
        for i in 0..DIV_CHUNK {
            let v = ac[i];
            let q0 = v * r;
            let e = (-q0).mul_add(c, v);
            let q = e.mul_add(r, q0).copysign(q0);
            let (va, qa) = (v.abs(), q0.abs());
            let fine = (va >= FMA_DIV_LOW) & (FMA_DIV_LOW..=FMA_DIV_HIGH).contains(&qa);
            slow |= (!fine & (v != 0.0)) as u32;
            yc[i] = q;
        }
        if slow != 0 {
            for i in 0..DIV_CHUNK {
                yc[i] = ac[i] / c;
            }
        }
    }
    for (o, &v) in yc.into_remainder().iter_mut().zip(ac.remainder()) {
        *o = v / c;
    }
}

/// `y = a / b` for float32 ([`div_by_scalar_f32`] for a scalar divisor if `div_by_mul`).
#[inline(always)]
fn div_f32(a: Src<'_, f32>, b: Src<'_, f32>, y: &mut [f32], div_by_mul: bool) {
    match (a, b) {
        (Src::Slice(a), Src::Scalar(c)) if div_by_mul && (FMA_DIV_LOW..=FMA_DIV_HIGH).contains(&c.abs()) => {
            div_by_scalar_fma_f32(a, c, y)
        }
        (Src::Slice(a), Src::Scalar(c)) if div_by_mul => div_by_scalar_f32(a, c, y),
        _ => map2(a, b, y, |a: f32, b: f32| a / b),
    }
}

/// `y = a / b` for float64 (no wider type to multiply in).
#[inline(always)]
fn div_f64(a: Src<'_, f64>, b: Src<'_, f64>, y: &mut [f64], _div_by_mul: bool) {
    map2(a, b, y, |a: f64, b: f64| a / b);
}

macro_rules! float_arith {
    ($t:ty, $pow:expr, $div:expr, $table:ident, $rows:ident) => {
        impl ArithOps for $t {
            #[inline(always)]
            fn rows_wide<S: Simd>(
                f: BinaryOp,
                a: RowSrc<'_, Self>,
                b: RowSrc<'_, Self>,
                y: &mut [Self],
                c: usize,
            ) -> bool {
                #[cfg(target_arch = "x86_64")]
                if S::AVX512 {
                    // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on)
                    // AVX-512; `arith_rows` checked the operands' lengths.
                    return unsafe { super::rows_avx512::$rows(f, a, b, y, c) };
                }
                let _ = (f, a, b, y, c);
                false
            }
            #[inline(always)]
            fn arith<S: Simd>(f: BinaryOp, a: Src<'_, Self>, b: Src<'_, Self>, y: &mut [Self]) {
                match f {
                    BinaryOp::Add => map2(a, b, y, |a: $t, b: $t| a + b),
                    BinaryOp::Sub => map2(a, b, y, |a: $t, b: $t| a - b),
                    BinaryOp::Mul => map2(a, b, y, |a: $t, b: $t| a * b),
                    BinaryOp::Div => $div(a, b, y, S::DIV_BY_MUL),
                    BinaryOp::FloorDiv => map2(a, b, y, |a: $t, b: $t| divmod(a, b).0),
                    BinaryOp::Mod => map2(a, b, y, |a: $t, b: $t| divmod(a, b).1),
                    BinaryOp::Pow => map2(a, b, y, $pow),
                    BinaryOp::Min => map2(a, b, y, minimum::<$t>),
                    BinaryOp::Max => map2(a, b, y, maximum::<$t>),
                    op => super::table::$table::<S>(op, a, b, y),
                }
            }
        }
    };
}

float_arith!(f32, |a: f32, b: f32| (a as f64).powf(b as f64) as f32, div_f32, float32, rows_f32);
float_arith!(f64, f64::powf, div_f64, float64, rows_f64);
