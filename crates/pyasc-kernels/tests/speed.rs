//! Rough throughput per ISA (ignored by default; `cargo test --test speed -- --ignored
//! --nocapture`). A vectorised kernel is several times faster under AVX-512 than under SSE2.

// 1.41421 is the divisor the GELU benchmark writes, not an approximation of sqrt 2.
#![allow(clippy::approx_constant)]

mod common;

use common::for_each_isa;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::op::UnaryOp;
use pyasc_kernels::binary;
use pyasc_kernels::unary;
use pyasc_kernels::Src;
use std::time::Instant;

#[test]
#[ignore]
fn throughput() {
    let n = 4096;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 2048.0) * 0.01).collect();
    let mut y = vec![0.0f32; n];
    let fns = [
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Expm1,
        UnaryOp::Log,
        UnaryOp::Log2,
        UnaryOp::Log1p,
        UnaryOp::Sin,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::Gelu,
        UnaryOp::FastGelu,
        UnaryOp::Silu,
        UnaryOp::Softplus,
        UnaryOp::Floor,
    ];
    for_each_isa(|isa| {
        for f in fns {
            let t = Instant::now();
            for _ in 0..1000 {
                unary::f32(f, &x, &mut y);
            }
            let ns = t.elapsed().as_nanos() as f64 / (1000 * n) as f64;
            println!("{} {f:?}: {ns:.2} ns/elem", isa.name());
        }
        for (name, f, c) in [("add", BinaryOp::Add, 1.5), ("div", BinaryOp::Div, 1.41421)] {
            let t = Instant::now();
            for _ in 0..1000 {
                binary::arith(f, Src::Slice(&x), Src::Scalar(c), &mut y);
            }
            let ns = t.elapsed().as_nanos() as f64 / (1000 * n) as f64;
            println!("{} {name} scalar: {ns:.3} ns/elem", isa.name());
        }
    });
}

#[test]
#[ignore]
fn reduction_throughput() {
    use pyasc_kernels::reduce;
    let n = 1024;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 512.0) * 0.01).collect();
    for_each_isa(|isa| {
        let t = Instant::now();
        let mut acc = 0.0;
        for _ in 0..20000 {
            acc += reduce::sum_f32(std::hint::black_box(&x));
        }
        let sum = t.elapsed().as_nanos() as f64 / (20000 * n) as f64;
        let t = Instant::now();
        for _ in 0..20000 {
            acc += reduce::max_f32(std::hint::black_box(&x)) as f64;
        }
        let max = t.elapsed().as_nanos() as f64 / (20000 * n) as f64;
        println!("{} sum_f32 {sum:.3} ns/elem, max_f32 {max:.3} ns/elem ({acc})", isa.name());
    });
}
