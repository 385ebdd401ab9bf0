//! float32 functions of two operands, computed in float64 without branches or libm calls so
//! that they vectorise, and rounded once: `hypot`, `logaddexp`, `logaddexp2`.

use super::exp_log::{exp64, log1p_pos64};
use crate::dispatch::Simd;

/// float32 `sqrt(a^2 + b^2)`: exact squares in float64 cannot overflow; an infinite operand
/// gives inf even beside NaN (C `hypot`).
#[inline(always)]
pub(crate) fn hypot_f32(a: f32, b: f32) -> f32 {
    let (p, q) = (a as f64, b as f64);
    let r = (p * p + q * q).sqrt() as f32;
    if a.is_infinite() || b.is_infinite() {
        f32::INFINITY
    } else {
        r
    }
}

/// `m + log1p(e^(-|d|))` for `d = a - b`, `m = max(a, b)`; equal operands (infinities too)
/// give `a + ln 2`; NaN propagates.
#[inline(always)]
fn add_exp<S: Simd>(p: f64, q: f64, ln2: f64, scale: f64) -> f64 {
    let d = p - q;
    let m = if d > 0.0 { p } else { q };
    // exp(-|d| * scale): scale = ln 2 for base 2; log1p(..) / scale back into that base.
    let e = exp64::<S>(-(d.abs() * scale).min(800.0));
    let r = m + log1p_pos64::<S>(e) / scale;
    let r = if p == q { p + ln2 } else { r };
    if d.is_nan() && p != q {
        d
    } else {
        r
    }
}

/// float32 `log(e^a + e^b)`.
#[inline(always)]
pub(crate) fn logaddexp_f32<S: Simd>(a: f32, b: f32) -> f32 {
    add_exp::<S>(a as f64, b as f64, std::f64::consts::LN_2, 1.0) as f32
}

/// float32 `log2(2^a + 2^b)`.
#[inline(always)]
pub(crate) fn logaddexp2_f32<S: Simd>(a: f32, b: f32) -> f32 {
    add_exp::<S>(a as f64, b as f64, 1.0, std::f64::consts::LN_2) as f32
}
