//! float32 sine, cosine and tangent, computed in float64.
//!
//! Reduction: `x = k pi/2 + r` with pi/2 split in three parts (Cody-Waite: 26 + 26 + 53 bits,
//! so `k * P1` and `k * P2` are exact for |k| < 2^27 even without FMA); the vector path is used
//! for |x| < 2^27 and larger lanes are recomputed one by one with float64 `sin`/`cos`/`tan`
//! (full Payne-Hanek reduction) by the caller, see [`HUGE`]. `sin r`, `cos r` on
//! `|r| <= pi/4` by Taylor polynomials to r^13 / r^14.

use super::{horner, mad, magic_split, ROUND_MAGIC};
use crate::dispatch::Simd;

/// Lanes with `|x| >= HUGE` (or non-finite) take the per-element float64 fallback.
pub(crate) const HUGE: f32 = 134_217_728.0;

const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// First 26 bits of pi/2.
const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5000_0000);
/// Next 26 bits of pi/2.
const PIO2_2: f64 = f64::from_bits(0x3E51_10B4_6000_0000);
/// pi/2 - PIO2_1 - PIO2_2, rounded.
const PIO2_3: f64 = f64::from_bits(0x3C91_A626_3314_5C07);

/// (-1)^n / (2n+1)! for n = 1..=6.
const SIN: [f64; 6] = [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0, -1.0 / 39916800.0, 1.0 / 6227020800.0];
/// (-1)^n / (2n)! for n = 1..=7.
const COS: [f64; 7] =
    [-1.0 / 2.0, 1.0 / 24.0, -1.0 / 720.0, 1.0 / 40320.0, -1.0 / 3628800.0, 1.0 / 479001600.0, -1.0 / 87178291200.0];

/// `(sin r, cos r, k)` for `x = k pi/2 + r`.
#[inline(always)]
fn reduce<S: Simd>(x: f32) -> (f64, f64, i64) {
    let x = x as f64;
    let (kf, k) = magic_split(mad::<S>(x, TWO_OVER_PI, ROUND_MAGIC));
    let r = mad::<S>(kf, -PIO2_1, x);
    let r = mad::<S>(kf, -PIO2_2, r);
    let r = mad::<S>(kf, -PIO2_3, r);
    let z = r * r;
    // r (1 + z P(z)) keeps the sign of r = -0.
    let s = r * mad::<S>(z, horner::<S, 6>(z, &SIN), 1.0);
    let c = mad::<S>(z, horner::<S, 7>(z, &COS), 1.0);
    (s, c, k)
}

/// Sign flip for quadrants 2 and 3.
#[inline(always)]
fn quadrant_sign(v: f64, k: i64) -> f64 {
    if k & 2 != 0 {
        -v
    } else {
        v
    }
}

/// Whether a lane needs the float64 fallback (huge, infinite or NaN).
#[inline(always)]
pub(crate) fn needs_wide(x: f32) -> bool {
    !x.is_finite() || x.abs() >= HUGE
}

/// float32 sine for |x| < [`HUGE`].
#[inline(always)]
pub(crate) fn sin_f32<S: Simd>(x: f32) -> f32 {
    let (s, c, k) = reduce::<S>(x);
    let v = if k & 1 != 0 { c } else { s };
    quadrant_sign(v, k) as f32
}

/// float32 cosine for |x| < [`HUGE`].
#[inline(always)]
pub(crate) fn cos_f32<S: Simd>(x: f32) -> f32 {
    let (s, c, k) = reduce::<S>(x);
    let v = if k & 1 != 0 { s } else { c };
    quadrant_sign(v, k.wrapping_add(1)) as f32
}

/// float32 tangent for |x| < [`HUGE`].
#[inline(always)]
pub(crate) fn tan_f32<S: Simd>(x: f32) -> f32 {
    let (s, c, k) = reduce::<S>(x);
    let v = if k & 1 != 0 { -c / s } else { s / c };
    v as f32
}
