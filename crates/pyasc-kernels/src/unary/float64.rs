//! float64 transcendental functions, per element through Rust std and `libm`.
//!
//! The activations are written in cancellation-free forms; Gelu corrects for the rounding of
//! `x / sqrt 2`, which `erfc` would otherwise amplify by `2 z^2` for large negative x.

use super::FloatFn;
use crate::src::map1;

#[inline(always)]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[inline(always)]
fn gelu(x: f64) -> f64 {
    const R_HI: f64 = std::f64::consts::FRAC_1_SQRT_2;
    // 1/sqrt 2 - R_HI.
    const R_LO: f64 = -4.833_646_656_726_457e-17;
    const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    let z = -x * R_HI;
    // Exact -x/sqrt 2 = z + dz.
    let dz = (-x).mul_add(R_HI, -z) + (-x) * R_LO;
    // erfc(z + dz) = erfc(z) - 2/sqrt(pi) e^(-z^2) dz + O(dz^2).
    let e = libm::erfc(z) - TWO_OVER_SQRT_PI * (-z * z).exp() * dz;
    0.5 * x * e
}

#[inline(always)]
fn fast_gelu(x: f64) -> f64 {
    let d = if x < 0.0 { 2.0 * x } else { 0.0 };
    x * (0.851 * d).exp() / (1.0 + (-1.702 * x.abs()).exp())
}

#[inline(always)]
fn softplus(x: f64) -> f64 {
    let m = if x > 0.0 || x.is_nan() { x } else { 0.0 };
    m + (-x.abs()).exp().ln_1p()
}

/// `y = f(x)` for the float64 functions that need std or `libm`.
pub(super) fn apply(f: FloatFn, x: &[f64], y: &mut [f64]) {
    match f {
        FloatFn::Exp => map1(x, y, f64::exp),
        FloatFn::Exp2 => map1(x, y, f64::exp2),
        FloatFn::Log => map1(x, y, f64::ln),
        FloatFn::Log2 => map1(x, y, f64::log2),
        FloatFn::Log1p => map1(x, y, f64::ln_1p),
        FloatFn::Expm1 => map1(x, y, f64::exp_m1),
        FloatFn::Rsqrt => map1(x, y, |v| 1.0 / v.sqrt()),
        FloatFn::Sin => map1(x, y, f64::sin),
        FloatFn::Cos => map1(x, y, f64::cos),
        FloatFn::Tan => map1(x, y, f64::tan),
        FloatFn::Tanh => map1(x, y, f64::tanh),
        FloatFn::Sigmoid => map1(x, y, sigmoid),
        FloatFn::Erf => map1(x, y, libm::erf),
        FloatFn::Erfc => map1(x, y, libm::erfc),
        FloatFn::Gelu => map1(x, y, gelu),
        FloatFn::FastGelu => map1(x, y, fast_gelu),
        FloatFn::Silu => map1(x, y, |v| v * sigmoid(v)),
        FloatFn::Softplus => map1(x, y, softplus),
        _ => unreachable!("handled by the shared real-number kernels"),
    }
}
