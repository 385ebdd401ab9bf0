//! Every float32 input of `exp`, `exp2`, `sigmoid` and `erf` against float64 references rounded to float32,
//! under every ISA (ignored by default: about a minute per function in release mode;
//! `cargo test --release --test exhaustive -- --ignored --nocapture`).

mod common;

use common::{for_each_isa, ulp_f32};
use pyasc_ir::op::UnaryOp;
use pyasc_kernels::unary;

/// Runs `f` on all 2^32 bit patterns and returns nothing; panics above `limit` ulp.
fn exhaustive(f: UnaryOp, reference: fn(f64) -> f64, limit: u64) {
    const CHUNK: u64 = 1 << 16;
    let mut x = vec![0.0f32; CHUNK as usize];
    let mut y = vec![0.0f32; CHUNK as usize];
    for_each_isa(|isa| {
        let mut worst = (0u64, 0.0f32);
        for start in (0..1u64 << 32).step_by(CHUNK as usize) {
            for (i, v) in x.iter_mut().enumerate() {
                *v = f32::from_bits((start + i as u64) as u32);
            }
            unary::f32(f, &x, &mut y);
            for (&v, &g) in x.iter().zip(&y) {
                let d = ulp_f32(g, reference(v as f64) as f32);
                if d > worst.0 {
                    worst = (d, v);
                }
            }
        }
        println!("{f:?} [{}]: max {} ulp over all float32 (at x = {:e})", isa.name(), worst.0, worst.1);
        assert!(worst.0 <= limit, "{f:?} [{}]: {} ulp at x = {:e}", isa.name(), worst.0, worst.1);
    });
}

#[test]
#[ignore]
fn exp_all() {
    exhaustive(UnaryOp::Exp, f64::exp, 2);
}

#[test]
#[ignore]
fn exp2_all() {
    exhaustive(UnaryOp::Exp2, f64::exp2, 2);
}

#[test]
#[ignore]
fn sigmoid_all() {
    exhaustive(UnaryOp::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 2);
}

#[test]
#[ignore]
fn erf_all() {
    exhaustive(UnaryOp::Erf, libm::erf, 2);
}

#[test]
#[ignore]
fn log10_all() {
    exhaustive(UnaryOp::Log10, f64::log10, 1);
}

#[test]
#[ignore]
fn cbrt_all() {
    exhaustive(UnaryOp::Cbrt, f64::cbrt, 1);
}
