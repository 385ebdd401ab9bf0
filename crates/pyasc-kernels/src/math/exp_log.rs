//! Exponentials and logarithms: float64 cores accurate to ~1e-14 over the ranges float32 needs,
//! native float32 `e^x` and `2^x`, and the float32 functions built on them.
//!
//! float64 exp: `x = k ln2 + r`, `|r| <= ln2/2` (two-part Cody-Waite ln2), `e^r - 1` by its
//! Taylor polynomial to r^11, scaled by `2^k` built from exponent bits. log: `x = 2^e m` with
//! `m` in `[sqrt(1/2), sqrt(2))`, `log m = 2 atanh(s)`, `s = (m-1)/(m+1)`, odd series to s^17.
//!
//! float32 exp (16 lanes per AVX-512 vector): the same reduction in float32 with a ln2 whose
//! high part has 16 significant bits, so `x - k LN2_HI` is exact without FMA too (Sterbenz),
//! `e^r = 1 + r + r^2 Q(r)` with a degree-4 minimax Q, and the scale `2^k` applied in two
//! exponent-bit steps `2^(k - k/2) 2^(k/2)`: the result overflows to +inf, and rounds once into
//! the subnormal range or to 0, with no per-lane branches. Coefficients: `tools/fit_exp.py`.

use super::{clamp_nan, horner, horner32, mad, mad32, magic_split, pow2i, small_i64_to_f64, ROUND_MAGIC};
use crate::dispatch::Simd;

const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// ln 2 split so that `k * LN2_HI` is exact for |k| < 2^11.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
const LN2: f64 = std::f64::consts::LN_2;

/// Taylor coefficients 1/n! for n = 2..=11 (the tail of `e^r - 1 - r`).
const EXPM1_TAIL: [f64; 10] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
];

/// `e^r - 1` for `|r| <= 0.35`, relative error ~1e-15.
#[inline(always)]
fn expm1_poly<S: Simd>(r: f64) -> f64 {
    mad::<S>(r * r, horner::<S, 10>(r, &EXPM1_TAIL), r)
}

/// `(2^k, e^r - 1)` with `e^x = 2^k (1 + (e^r - 1))`, for x already clamped to [-708, 709].
#[inline(always)]
fn exp_parts<S: Simd>(x: f64) -> (f64, f64) {
    let (kf, k) = magic_split(mad::<S>(x, INV_LN2, ROUND_MAGIC));
    let r = mad::<S>(kf, -LN2_HI, x);
    let r = mad::<S>(kf, -LN2_LO, r);
    (pow2i(k), expm1_poly::<S>(r))
}

/// `e^x` in float64 (relative error ~1e-14; results below 2^-1022 flush to 0).
#[inline(always)]
pub(crate) fn exp64<S: Simd>(x: f64) -> f64 {
    let (s, p) = exp_parts::<S>(clamp_nan(x, -708.0, 709.0));
    let y = mad::<S>(s, p, s);
    let y = if x < -708.0 { 0.0 } else { y };
    if x > 709.7 {
        f64::INFINITY
    } else {
        y
    }
}

/// `e^x - 1` in float64, accurate in relative terms also for tiny |x|.
#[inline(always)]
pub(crate) fn expm1_64<S: Simd>(x: f64) -> f64 {
    let (s, p) = exp_parts::<S>(clamp_nan(x, -60.0, 709.0));
    let y = mad::<S>(s, p, s - 1.0);
    if x > 709.7 {
        f64::INFINITY
    } else {
        y
    }
}

/// Odd-series coefficients of `2 atanh(s) / s` in powers of s^2: 2/(2n+1), n = 1..=8.
const LOG_SERIES: [f64; 8] =
    [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0, 2.0 / 13.0, 2.0 / 15.0, 2.0 / 17.0];

/// Splits a positive finite normal float64 as `(e, log(m))` with `x = 2^e m`.
#[inline(always)]
fn log_parts<S: Simd>(x: f64) -> (f64, f64) {
    const SQRT_HALF_BITS: i64 = 0x3FE6_A09E_667F_3BCD;
    let bits = x.to_bits() as i64;
    let e = bits.wrapping_sub(SQRT_HALF_BITS) >> 52;
    let m = f64::from_bits(bits.wrapping_sub(e << 52) as u64);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let lm = mad::<S>(s * z, horner::<S, 8>(z, &LOG_SERIES), 2.0 * s);
    (small_i64_to_f64(e), lm)
}

/// Natural log of a positive finite normal float64 (no special-value handling).
#[inline(always)]
pub(crate) fn log64<S: Simd>(x: f64) -> f64 {
    let (e, lm) = log_parts::<S>(x);
    mad::<S>(e, LN2, lm)
}

/// `log(1 + u)` for `u >= 0` finite, accurate in relative terms for tiny u.
#[inline(always)]
pub(crate) fn log1p_pos64<S: Simd>(u: f64) -> f64 {
    let w = 1.0 + u;
    // (u - (w - 1)) / w corrects for the rounding of 1 + u.
    log64::<S>(w) + (u - (w - 1.0)) / w
}

/// ln 2 rounded to 16 significant bits: `k * LN2_HI_32` is exact for |k| < 2^8, and so is
/// `x - k * LN2_HI_32` after rounding `x / ln2` to k.
pub(crate) const LN2_HI_32: f32 = 0.693_145_75;
/// `ln 2 - LN2_HI_32`.
pub(crate) const LN2_LO_32: f32 = 1.428_606_8e-6;
/// `1.5 * 2^23 + 254`: adding it to `v` (|v| < 2^21) rounds v to an integer k, and the low bits
/// of the sum shifted into the exponent field give `2^(k + 127)` (two exponent biases).
pub(crate) const ROUND_MAGIC_32: f32 = 12_583_166.0;
/// The bits of `2^-64`, the second scale factor for k < 0 (`2^64` for k >= 0).
pub(crate) const SCALE_DOWN_BITS: u32 = (127 - 64) << 23;
pub(crate) const SCALE_UP_BITS: u32 = (127 + 64) << 23;

/// `(e^r - 1) / r` for |r| <= 0.3467 (fit error 2^-28.3).
pub(crate) const EXP_P: [f32; 6] = [1.0, 0.49999994, 0.16666521, 0.041668262, 0.008368675, 0.0013821055];

/// `(2^f - 1) / f` for |f| <= 1/2 (fit error 2^-28.3).
const EXP2_P: [f32; 6] = [std::f32::consts::LN_2, 0.24022648, 0.055503596, 0.009618499, 0.0013390969, 0.00015329264];

/// A float32 exponential `2^k (1 + r q)` held as `r`, `q` and two normal powers of two
/// `s1 s2 = 2^k` (`s2 = 2^-64` for k < 0, else `2^64`; `-150 <= k <= 150`): `1 + r q` is formed
/// with one rounding, and the multiplies by `s1` and `s2` round only on overflow or in the
/// subnormal range, where the last one rounds once.
#[derive(Copy, Clone)]
pub(crate) struct Exp32 {
    /// Reduced argument, |r| <= 0.35 (`r = f ln2` for exp2).
    pub r: f32,
    /// `(e^r - 1) / r`, in [0.84, 1.19].
    pub q: f32,
    /// `2^(k -+ 64)`.
    pub s1: f32,
    /// `2^(+-64)`.
    pub s2: f32,
}

impl Exp32 {
    /// The scale factors for `t = v + ROUND_MAGIC_32` (k = v rounded).
    #[inline(always)]
    fn new(t: f32, neg: bool, r: f32, q: f32) -> Exp32 {
        let s2 = if neg { SCALE_DOWN_BITS } else { SCALE_UP_BITS };
        let s1 = (t.to_bits() << 23).wrapping_sub(s2);
        Exp32 { r, q, s1: f32::from_bits(s1), s2: f32::from_bits(s2) }
    }

    /// `e^x` for x in [-104, 100] (callers clamp; NaN propagates into `q`).
    #[inline(always)]
    pub(crate) fn exp<S: Simd>(x: f32) -> Exp32 {
        let t = mad32::<S>(x, std::f32::consts::LOG2_E, ROUND_MAGIC_32);
        let kf = t - ROUND_MAGIC_32;
        // Exact: kf * LN2_HI_32 fits in 24 bits and lies within a factor 2 of x.
        let r = mad32::<S>(kf, -LN2_HI_32, x);
        let r = mad32::<S>(kf, -LN2_LO_32, r);
        Exp32::new(t, x < 0.0, r, horner32::<S, 6>(r, &EXP_P))
    }

    /// `e^(x - lo)` for x in [-130, 100] and `|lo|` below a few ulps of `x`: the argument as
    /// a float32 pair, whose low part joins the reduced argument (`r - lo` stays within 0.36).
    #[inline(always)]
    pub(crate) fn exp_lo<S: Simd>(x: f32, lo: f32) -> Exp32 {
        let t = mad32::<S>(x, std::f32::consts::LOG2_E, ROUND_MAGIC_32);
        let kf = t - ROUND_MAGIC_32;
        let r = mad32::<S>(kf, -LN2_HI_32, x);
        let r = mad32::<S>(kf, -LN2_LO_32, r) - lo;
        Exp32::new(t, x < 0.0, r, horner32::<S, 6>(r, &EXP_P))
    }

    /// `2^x` for x in [-160, 150].
    #[inline(always)]
    fn exp2<S: Simd>(x: f32) -> Exp32 {
        let t = x + ROUND_MAGIC_32;
        let f = x - (t - ROUND_MAGIC_32);
        // 2^f = 1 + f P(f) = 1 + r q with r = f, q = P(f).
        Exp32::new(t, x < 0.0, f, horner32::<S, 6>(f, &EXP2_P))
    }

    /// `1 + r q` (`e^r`), one rounding.
    #[inline(always)]
    pub(crate) fn mant<S: Simd>(self) -> f32 {
        mad32::<S>(self.r, self.q, 1.0)
    }

    /// The value `(1 + r q) s1 s2`.
    #[inline(always)]
    pub(crate) fn value<S: Simd>(self) -> f32 {
        self.mant::<S>() * self.s1 * self.s2
    }

    /// `1 + 2^k (1 + r q)` for `k <= 29`, rounded once after the exact `1 + 2^k` (k >= -24):
    /// `2^k r` is exact, so the rounding of `1 + r q` does not enter.
    #[inline(always)]
    pub(crate) fn one_plus<S: Simd>(self) -> f32 {
        let s = self.s1 * self.s2;
        mad32::<S>(s * self.r, self.q, 1.0 + s)
    }
}

/// Keeps a float32 within `[lo, hi]`; NaN passes through unchanged.
#[inline(always)]
pub(crate) fn clamp_nan32(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}

/// Applies log's special cases: NaN -> NaN, x < 0 -> NaN, 0 -> -inf, +inf -> +inf.
#[inline(always)]
fn log_special(x: f32, zero_at: f32, y: f32) -> f32 {
    let y = if x == zero_at { f32::NEG_INFINITY } else { y };
    let y = if x < zero_at { f32::NAN } else { y };
    let y = if x == f32::INFINITY { x } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// float32 `e^x`.
#[inline(always)]
pub(crate) fn exp_f32<S: Simd>(x: f32) -> f32 {
    // Beyond the clamp the result is +inf or 0 anyway; -inf gives 0, NaN stays NaN.
    Exp32::exp::<S>(clamp_nan32(x, -104.0, 100.0)).value::<S>()
}

/// float32 `2^x`.
#[inline(always)]
pub(crate) fn exp2_f32<S: Simd>(x: f32) -> f32 {
    Exp32::exp2::<S>(clamp_nan32(x, -160.0, 150.0)).value::<S>()
}

/// float32 `e^x - 1`.
#[inline(always)]
pub(crate) fn expm1_f32<S: Simd>(x: f32) -> f32 {
    let y = expm1_64::<S>(x as f64) as f32;
    // Keep the sign of ±0.
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// float32 natural log.
#[inline(always)]
pub(crate) fn log_f32<S: Simd>(x: f32) -> f32 {
    log_special(x, 0.0, log64::<S>(x as f64) as f32)
}

/// float32 base-2 log (exact at powers of two).
#[inline(always)]
pub(crate) fn log2_f32<S: Simd>(x: f32) -> f32 {
    let (e, lm) = log_parts::<S>(x as f64);
    log_special(x, 0.0, mad::<S>(lm, INV_LN2, e) as f32)
}

/// float32 `log(1 + x)`.
#[inline(always)]
pub(crate) fn log1p_f32<S: Simd>(x: f32) -> f32 {
    let u = x as f64;
    let w = 1.0 + u;
    let y = log64::<S>(w) + (u - (w - 1.0)) / w;
    let y = if x == 0.0 { x } else { y as f32 };
    log_special(x, -1.0, y)
}

/// float32 base-10 log: `e log10(2) + log(m) / ln 10` in float64, rounded once.
#[inline(always)]
pub(crate) fn log10_f32<S: Simd>(x: f32) -> f32 {
    const INV_LN10: f64 = std::f64::consts::LOG10_E;
    const LOG10_2: f64 = std::f64::consts::LOG10_2;
    let (e, lm) = log_parts::<S>(x as f64);
    log_special(x, 0.0, mad::<S>(lm, INV_LN10, e * LOG10_2) as f32)
}
