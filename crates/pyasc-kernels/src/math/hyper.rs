//! float32 tanh, sigmoid and the activation functions (gelu is in [`super::erf`]): sigmoid,
//! silu and fast_gelu in native float32 from [`Exp32`], the others in float64 from the exp and log cores (all
//! formulas are cancellation-free, so accuracy holds in ulps near 0 too).

use super::exp_log::{clamp_nan32, exp64, expm1_64, log1p_pos64, Exp32};
use super::fma32;
use crate::dispatch::Simd;

/// `tanh a = expm1(2a) / (expm1(2a) + 2)`, relative-accurate for tiny |a| as well.
#[inline(always)]
pub(crate) fn tanh_f32<S: Simd>(x: f32) -> f32 {
    let a = (x as f64).abs();
    let a = if a > 20.0 { 20.0 } else { a };
    let e = expm1_64::<S>(2.0 * a);
    (e / (e + 2.0)).copysign(x as f64) as f32
}

/// `(n, d, s2)` with `sigmoid(x) = (n / d) s2`, in native float32: with `z = e^-|x| = 2^k
/// (1 + r q)`, `d = 1 + z` (rounded once) and `n = 1` for x >= 0, `n = z 2^64` (and `s2 =
/// 2^-64`) for x < 0, so a subnormal result is rounded once, at the end.
#[inline(always)]
fn sigmoid_parts<S: Simd>(x: f32) -> (f32, f32, f32) {
    let e = Exp32::exp::<S>(clamp_nan32(-x.abs(), -130.0, 0.0));
    let d = e.one_plus::<S>();
    let neg = x < 0.0;
    let n = if neg { e.mant::<S>() * e.s1 } else { 1.0 };
    (n, d, if neg { e.s2 } else { 1.0 })
}

/// float32 `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid_f32<S: Simd>(x: f32) -> f32 {
    let (n, d, s) = sigmoid_parts::<S>(x);
    n / d * s
}

/// float32 `x sigmoid(x)` (NaN at -inf, as the naive formula).
#[inline(always)]
pub(crate) fn silu_f32<S: Simd>(x: f32) -> f32 {
    let (n, d, s) = sigmoid_parts::<S>(x);
    let y = x * n / d * s;
    // Below -130 the product underflows (the clamped exponential would not).
    let y = if x < -130.0 { -0.0 } else { y };
    if x == f32::NEG_INFINITY {
        f32::NAN
    } else {
        y
    }
}

/// float32 Ascend FastGelu: `x / (1 + e^(-1.702|x|)) e^(0.851 (x - |x|))`, in native float32
/// with one exponential (for x < 0 the second factor is `e^(-1.702|x|)` itself, so the result
/// is `x e / (1 + e)`, as silu's). `1.702 |x|` is carried as a float32 pair `p + l` (1.702
/// itself as two floats), so the exponential sees the argument to about 2^-48 relative.
#[inline(always)]
pub(crate) fn fast_gelu_f32<S: Simd>(x: f32) -> f32 {
    const C_HI: f32 = 1.702;
    const C_LO: f32 = (1.702f64 - 1.702f32 as f64) as f32;
    let a = x.abs();
    let p = C_HI * a;
    let l = fma32::<S>(C_HI, a, -p) + C_LO * a;
    // Past the clamp (and for infinities) the low part has nothing to correct.
    let l = if p <= 130.0 { l } else { 0.0 };
    let e = Exp32::exp_lo::<S>(clamp_nan32(-p, -130.0, 0.0), l);
    let d = e.one_plus::<S>();
    // One division for both signs (the selects run before it): x < 0 scales by s2 after it.
    let neg = x < 0.0;
    let num = if neg { x * e.mant::<S>() * e.s1 } else { x };
    let y = num / d * if neg { e.s2 } else { 1.0 };
    // Past the clamp the result is below the smallest subnormal; -inf gives -inf * 0 = NaN,
    // as the formula.
    let y = if p > 130.0 && x < 0.0 { -0.0 } else { y };
    if x == f32::NEG_INFINITY {
        f32::NAN
    } else {
        y
    }
}

/// float32 `max(x, 0) + log1p(e^-|x|)`.
#[inline(always)]
pub(crate) fn softplus_f32<S: Simd>(x: f32) -> f32 {
    let x = x as f64;
    let m = if x > 0.0 { x } else { 0.0 };
    let m = if x.is_nan() { x } else { m };
    (m + log1p_pos64::<S>(exp64::<S>(-x.abs()))) as f32
}

/// float32 sinh: `(E + E / (E + 1)) / 2` with `E = expm1(|x|)`, relative-accurate near 0.
#[inline(always)]
pub(crate) fn sinh_f32<S: Simd>(x: f32) -> f32 {
    let a = (x as f64).abs();
    // Past 90 the float32 result is inf anyway; NaN passes the clamp.
    let a = if a > 90.0 { 90.0 } else { a };
    let e = expm1_64::<S>(a);
    (0.5 * (e + e / (e + 1.0))).copysign(x as f64) as f32
}

/// float32 cosh: `(e^a + e^-a) / 2`.
#[inline(always)]
pub(crate) fn cosh_f32<S: Simd>(x: f32) -> f32 {
    let a = (x as f64).abs();
    let a = if a > 90.0 { 90.0 } else { a };
    let e = exp64::<S>(a);
    (0.5 * (e + 1.0 / e)) as f32
}
