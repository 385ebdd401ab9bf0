//! float32 math kernels against float64 references rounded to float32, under every ISA:
//! millions of random bit patterns, dense sweeps around 0, ±1, thresholds and subnormals,
//! and special values. Run with `--nocapture` to see the measured maximum ulp error.

mod common;

use common::{for_each_isa, inputs_f32, ulp_f32};
use pyasc_ir::op::UnaryOp;
use pyasc_kernels::unary;

const N_RANDOM: usize = 4_000_000;

/// Checks `f` against `reference` (float64, rounded to float32) within `limit` ulp.
fn check(f: UnaryOp, reference: fn(f64) -> f64, centers: &[f32], limit: u64) {
    let x = inputs_f32(N_RANDOM, centers, f as u64 + 1);
    let want: Vec<f32> = x.iter().map(|&v| reference(v as f64) as f32).collect();
    let mut y = vec![0.0f32; x.len()];
    for_each_isa(|isa| {
        y.fill(0.0);
        unary::f32(f, &x, &mut y);
        let mut worst = (0u64, 0usize);
        for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
            let d = ulp_f32(g, w);
            if d > worst.0 {
                worst = (d, i);
            }
        }
        let i = worst.1;
        println!("{f:?} [{}]: max {} ulp at x = {:e} (got {:e}, want {:e})", isa.name(), worst.0, x[i], y[i], want[i]);
        assert!(worst.0 <= limit, "{f:?} [{}]: {} ulp at x = {:e}", isa.name(), worst.0, x[i]);
    });
}

#[test]
fn exp() {
    check(UnaryOp::Exp, f64::exp, &[88.72284, -87.33655, -103.97208, -88.0], 2);
}

#[test]
fn exp2() {
    check(UnaryOp::Exp2, f64::exp2, &[128.0, -126.0, -149.0, -150.0], 2);
}

#[test]
fn expm1() {
    check(UnaryOp::Expm1, f64::exp_m1, &[88.72284, -17.0, 0.35, -0.35], 2);
}

#[test]
fn log() {
    check(UnaryOp::Log, f64::ln, &[f32::MAX, std::f32::consts::FRAC_1_SQRT_2, std::f32::consts::SQRT_2, 2.0], 2);
}

#[test]
fn log2() {
    check(UnaryOp::Log2, f64::log2, &[f32::MAX, std::f32::consts::FRAC_1_SQRT_2, std::f32::consts::SQRT_2, 2.0], 2);
}

#[test]
fn log10() {
    check(UnaryOp::Log10, f64::log10, &[f32::MAX, 10.0, 1000.0, 1e-38], 1);
}

#[test]
fn cbrt() {
    check(UnaryOp::Cbrt, f64::cbrt, &[1.0, -8.0, 1e-40, f32::MAX], 1);
}

#[test]
fn log1p() {
    check(UnaryOp::Log1p, f64::ln_1p, &[-0.99999, -0.5, f32::MAX, 0.41421357], 2);
}

#[test]
fn sin() {
    check(UnaryOp::Sin, f64::sin, &[std::f32::consts::PI, std::f32::consts::FRAC_PI_2, 134217728.0, 100000.0], 2);
}

#[test]
fn cos() {
    check(UnaryOp::Cos, f64::cos, &[std::f32::consts::PI, std::f32::consts::FRAC_PI_2, 134217728.0, 100000.0], 2);
}

#[test]
fn tan() {
    check(
        UnaryOp::Tan,
        f64::tan,
        &[std::f32::consts::FRAC_PI_4, std::f32::consts::FRAC_PI_2, 134217728.0, 100000.0],
        2,
    );
}

#[test]
fn tanh() {
    check(UnaryOp::Tanh, f64::tanh, &[0.0625, 0.55, 9.0, 20.0], 2);
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn sigmoid_() {
    check(UnaryOp::Sigmoid, sigmoid, &[-103.0, -88.0, 17.0, 40.0], 2);
}

#[test]
fn erf() {
    check(UnaryOp::Erf, libm::erf, &[2.0, 4.0, 3.9, 0.5], 2);
}

#[test]
fn erfc() {
    check(UnaryOp::Erfc, libm::erfc, &[2.0, 4.0, 9.2, 10.05], 2);
}

fn gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

#[test]
fn gelu_() {
    check(UnaryOp::Gelu, gelu, &[-5.0, -13.0, -14.2, 3.0], 4);
}

fn fast_gelu(x: f64) -> f64 {
    let d = if x < 0.0 { 2.0 * x } else { 0.0 };
    x / (1.0 + (-1.702 * x.abs()).exp()) * (0.851 * d).exp()
}

#[test]
fn fast_gelu_() {
    check(UnaryOp::FastGelu, fast_gelu, &[-5.0, -60.0, -61.0, -63.5, -76.4, 3.0, 0.01], 4);
}

#[test]
fn silu() {
    check(UnaryOp::Silu, |x| x * sigmoid(x), &[-5.0, -100.0, -110.0, 3.0], 4);
}

fn softplus(x: f64) -> f64 {
    let m = if x > 0.0 || x.is_nan() { x } else { 0.0 };
    m + (-x.abs()).exp().ln_1p()
}

#[test]
fn softplus_() {
    check(UnaryOp::Softplus, softplus, &[-100.0, -103.0, 17.0, 3.0], 4);
}

#[test]
fn sqrt_reciprocal_rsqrt() {
    check(UnaryOp::Sqrt, f64::sqrt, &[4.0], 0);
    check(UnaryOp::Reciprocal, |x| 1.0 / x, &[3.0], 0);
    check(UnaryOp::Rsqrt, |x| 1.0 / x.sqrt(), &[4.0], 1);
}

#[test]
fn inverse_trig() {
    check(UnaryOp::Arcsin, f64::asin, &[1.0, -1.0, 0.5, 1e-20], 1);
    check(UnaryOp::Arccos, f64::acos, &[1.0, -1.0, 0.5, 1e-20], 1);
    check(UnaryOp::Arctan, f64::atan, &[1.0, 0.267_949_2, 3.732_051, 1e30], 1);
}

#[test]
fn hyperbolic() {
    check(UnaryOp::Sinh, f64::sinh, &[0.0, 1e-3, 89.4, -89.4], 1);
    check(UnaryOp::Cosh, f64::cosh, &[0.0, 1e-3, 89.4, -89.4], 1);
    check(UnaryOp::Arcsinh, libm::asinh, &[0.0, 1e-3, 1e19, -1e19], 1);
    check(UnaryOp::Arccosh, pyasc_ir::op_table::acosh, &[1.0, 1.0001, 1e19, 2.0], 1);
    check(UnaryOp::Arctanh, libm::atanh, &[0.0, 1.0, -1.0, 0.5], 1);
}
