//! Exponentials and logarithms: float64 cores accurate to ~1e-14 over the ranges float32 needs,
//! and the float32 functions built on them.
//!
//! exp: `x = k ln2 + r`, `|r| <= ln2/2` (two-part Cody-Waite ln2), `e^r - 1` by its Taylor
//! polynomial to r^11, scaled by `2^k` built from exponent bits. log: `x = 2^e m` with
//! `m` in `[sqrt(1/2), sqrt(2))`, `log m = 2 atanh(s)`, `s = (m-1)/(m+1)`, odd series to s^17.

use super::{clamp_nan, horner, mad, magic_split, pow2i, small_i64_to_f64, ROUND_MAGIC};
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

/// `2^x` in float64 for `x` in [-1022, 1023] (no special-value handling).
#[inline(always)]
fn exp2_64<S: Simd>(x: f64) -> f64 {
    let (kf, k) = magic_split(x + ROUND_MAGIC);
    let r = (x - kf) * LN2;
    let s = pow2i(k);
    mad::<S>(s, expm1_poly::<S>(r), s)
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
    exp64::<S>(x as f64) as f32
}

/// float32 `2^x`.
#[inline(always)]
pub(crate) fn exp2_f32<S: Simd>(x: f32) -> f32 {
    let y = exp2_64::<S>(clamp_nan(x as f64, -200.0, 200.0)) as f32;
    let y = if x < -200.0 { 0.0 } else { y };
    if x > 200.0 {
        f32::INFINITY
    } else {
        y
    }
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
