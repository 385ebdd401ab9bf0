//! FastGelu to 16-bit accuracy: after rounding to float16 (or bfloat16), within one ulp of the
//! float64 formula rounded the same way, for every float16 input, under every ISA path.

mod common;

use half::{bf16, f16};
use pyasc_ir::op::UnaryOp;
use pyasc_kernels::unary;

/// Distance in ulps of two 16-bit patterns of one format (sign-magnitude order; NaN only
/// matches NaN).
fn ulp16(a: u16, b: u16, nan: impl Fn(u16) -> bool) -> u32 {
    if nan(a) || nan(b) {
        return if nan(a) && nan(b) { 0 } else { u32::MAX };
    }
    let ord = |h: u16| if h & 0x8000 != 0 { -((h & 0x7fff) as i32) } else { h as i32 };
    (ord(a) - ord(b)).unsigned_abs()
}

fn all_f16_inputs() -> Vec<f32> {
    (0..=u16::MAX).map(|h| f16::from_bits(h).to_f32()).collect()
}

#[test]
fn float16_results_are_within_one_ulp_and_nearly_always_correctly_rounded() {
    let x = all_f16_inputs();
    common::for_each_isa(|isa| {
        let mut y = vec![0f32; x.len()];
        unary::f32(UnaryOp::FastGeluHalf, &x, &mut y);
        let mut off = 0;
        for (&xi, &yi) in x.iter().zip(&y) {
            let want = f16::from_f64(pyasc_ir::op_table::fast_gelu(xi as f64)).to_bits();
            let got = f16::from_f32(yi).to_bits();
            let d = ulp16(got, want, |h| f16::from_bits(h).is_nan());
            assert!(d <= 1, "{isa:?}: fast_gelu_half({xi:e}) = {yi:e} is {d} float16 ulps from the exact value");
            off += (d == 1) as usize;
        }
        // Within 2^-17 of a rounding boundary: a small share of the inputs.
        assert!(off * 200 < x.len(), "{isa:?}: {off} of {} results off by one ulp", x.len());
    });
}

#[test]
fn bfloat16_results_are_within_one_ulp() {
    let x: Vec<f32> = (0..=u16::MAX).map(|h| bf16::from_bits(h).to_f32()).collect();
    common::for_each_isa(|isa| {
        let mut y = vec![0f32; x.len()];
        unary::f32(UnaryOp::FastGeluHalf, &x, &mut y);
        for (&xi, &yi) in x.iter().zip(&y) {
            let want = bf16::from_f64(pyasc_ir::op_table::fast_gelu(xi as f64)).to_bits();
            let got = bf16::from_f32(yi).to_bits();
            let d = ulp16(got, want, |h| bf16::from_bits(h).is_nan());
            assert!(d <= 1, "{isa:?}: fast_gelu_half({xi:e}) = {yi:e} is {d} bfloat16 ulps from the exact value");
        }
    });
}

#[test]
fn special_values_match_the_float32_kernel() {
    let x = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -1e-30, 200.0, -200.0];
    let (mut half_y, mut full_y) = ([0f32; 9], [0f32; 9]);
    unary::f32(UnaryOp::FastGeluHalf, &x, &mut half_y);
    unary::f32(UnaryOp::FastGelu, &x, &mut full_y);
    for i in 0..x.len() {
        let (h, f) = (half_y[i], full_y[i]);
        assert!(
            (h.is_nan() && f.is_nan()) || (h.to_bits() == f.to_bits()) || ((h - f).abs() <= f.abs() * 1e-5),
            "x = {:e}: half {h:e}, float32 {f:e}",
            x[i]
        );
        if !f.is_nan() {
            assert_eq!(h.is_sign_negative(), f.is_sign_negative(), "sign of {:e}", x[i]);
        }
    }
}
