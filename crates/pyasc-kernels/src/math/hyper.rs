//! float32 tanh, sigmoid and the activation functions (gelu is in [`super::erf`]), computed in
//! float64 from the exp and log cores (all formulas are cancellation-free, so accuracy holds
//! in ulps near 0 too).

use super::exp_log::{exp64, expm1_64, log1p_pos64};
use crate::dispatch::Simd;

/// `tanh a = expm1(2a) / (expm1(2a) + 2)`, relative-accurate for tiny |a| as well.
#[inline(always)]
pub(crate) fn tanh_f32<S: Simd>(x: f32) -> f32 {
    let a = (x as f64).abs();
    let a = if a > 20.0 { 20.0 } else { a };
    let e = expm1_64::<S>(2.0 * a);
    (e / (e + 2.0)).copysign(x as f64) as f32
}

/// Logistic function in float64: `1 / (1 + e^-x)` (exact 0 below -745, 1 above 40).
#[inline(always)]
fn sigmoid64<S: Simd>(x: f64) -> f64 {
    1.0 / (1.0 + exp64::<S>(-x))
}

/// float32 `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid_f32<S: Simd>(x: f32) -> f32 {
    sigmoid64::<S>(x as f64) as f32
}

/// float32 `x sigmoid(x)` (NaN at -inf, as the naive formula).
#[inline(always)]
pub(crate) fn silu_f32<S: Simd>(x: f32) -> f32 {
    let x = x as f64;
    (x * sigmoid64::<S>(x)) as f32
}

/// float32 Ascend FastGelu: `x / (1 + e^(-1.702|x|)) e^(0.851 (x - |x|))`, with one
/// exponential: for x < 0 the second factor is `e^(-1.702|x|)` itself.
#[inline(always)]
pub(crate) fn fast_gelu_f32<S: Simd>(x: f32) -> f32 {
    let x = x as f64;
    let e = exp64::<S>(-1.702 * x.abs());
    // -inf gives -inf * 0 = NaN, as the formula.
    let num = if x < 0.0 { x * e } else { x };
    (num / (1.0 + e)) as f32
}

/// float32 `max(x, 0) + log1p(e^-|x|)`.
#[inline(always)]
pub(crate) fn softplus_f32<S: Simd>(x: f32) -> f32 {
    let x = x as f64;
    let m = if x > 0.0 { x } else { 0.0 };
    let m = if x.is_nan() { x } else { m };
    (m + log1p_pos64::<S>(exp64::<S>(-x.abs()))) as f32
}
