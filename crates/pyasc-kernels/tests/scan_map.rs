//! The float32 scan with fused steps against the same steps run as separate elementwise
//! kernels around the plain scan, bit for bit, under every ISA: every tail length, each
//! operation in both operand orders, divisions with subnormal, zero and infinite quotients,
//! and NaN, infinities and signed zeros in the data. ISAs without the fused form say so.

mod common;

use common::{for_each_isa, specials_f32, Rng};
use pyasc_ir::op::BinaryOp;
use pyasc_kernels::binary;
use pyasc_kernels::isa::Isa;
use pyasc_kernels::scan::{ScanOp, Sum};
use pyasc_kernels::scan_map::{sum_map_f32, Step};
use pyasc_kernels::Src;

/// The steps as separate kernels: each is `binary::arith` over the whole slice.
fn steps_apart(x: &[f32], steps: &[Step]) -> Vec<f32> {
    let mut v = x.to_vec();
    for s in steps {
        let mut y = vec![0f32; v.len()];
        let (a, b) =
            if s.swap { (Src::Scalar(s.arg), Src::Slice(&v[..])) } else { (Src::Slice(&v[..]), Src::Scalar(s.arg)) };
        binary::arith::<f32>(s.op, a, b, &mut y);
        v = y;
    }
    v
}

/// The unfused program: steps, the plain scan, steps.
fn unfused(x: &[f32], pre: &[Step], post: &[Step]) -> (Vec<f32>, f64) {
    let op = Sum::<f32>::default();
    let p = steps_apart(x, pre);
    let mut s = vec![0f32; x.len()];
    let r = op.run(&p, Some(&mut s), None, op.identity());
    (steps_apart(&s, post), r)
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn check(isa: Isa, x: &[f32], pre: &[Step], post: &[Step]) {
    let mut got = vec![0f32; x.len()];
    let op = Sum::<f32>::default();
    match sum_map_f32(x, &mut got, pre, post, op.identity()) {
        None => assert_ne!(isa, Isa::Avx512, "AVX-512 has the fused scan"),
        Some(r) => {
            assert_eq!(isa, Isa::Avx512, "only AVX-512 has the fused scan");
            let (want, rw) = unfused(x, pre, post);
            assert!(same(&got, &want), "{isa:?} n={} pre={pre:?} post={post:?}", x.len());
            assert!(r.to_bits() == rw.to_bits() || (r.is_nan() && rw.is_nan()), "{isa:?} running value");
        }
    }
}

fn step(op: BinaryOp, swap: bool, arg: f32) -> Step {
    Step { op, swap, arg }
}

#[test]
fn every_operation_in_both_orders_and_every_tail() {
    let ops = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
    for_each_isa(|isa| {
        let mut rng = Rng::new(3);
        for n in (0..40).chain([47, 48, 49, 1000, 4097]) {
            let x: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0) as f32).collect();
            for op in ops {
                for swap in [false, true] {
                    let s = step(op, swap, 1.7);
                    check(isa, &x, &[s], &[]);
                    check(isa, &x, &[], &[s]);
                }
            }
            // Two steps before (a chain such as `x * 2 + 1`) and one after (`/ n`).
            check(
                isa,
                &x,
                &[step(BinaryOp::Mul, false, 2.0), step(BinaryOp::Add, true, 1.0)],
                &[step(BinaryOp::Div, false, 1000.0)],
            );
            check(
                isa,
                &x,
                &[],
                &[step(BinaryOp::Sub, true, 0.5), step(BinaryOp::Mul, false, 3.0), step(BinaryOp::Div, true, 2.0)],
            );
        }
    });
}

#[test]
fn special_values_and_awkward_divisors() {
    let specials = specials_f32();
    for_each_isa(|isa| {
        let mut rng = Rng::new(9);
        let mut x: Vec<f32> =
            (0..300).map(|_| f32::from_bits(rng.next_u32())).filter(|v| v.is_finite()).take(200).collect();
        x.extend(specials.iter().copied().filter(|v| !v.is_nan()));
        let small: Vec<f32> = (0..64).map(|i| (i as f32 - 20.0) * 1e-39).collect();
        for c in [3.0f32, 1e30, 1e-30, 7e-39, f32::MAX, f32::MIN_POSITIVE, 0.0, -0.0, f32::INFINITY, f32::NAN, 1.7] {
            // Quotients that are subnormal, zero, infinite or NaN take the exact division.
            check(isa, &small, &[step(BinaryOp::Div, false, c)], &[step(BinaryOp::Div, false, c)]);
            check(isa, &x, &[step(BinaryOp::Mul, false, 1e-30)], &[step(BinaryOp::Div, false, c)]);
            check(isa, &specials, &[step(BinaryOp::Div, true, c)], &[step(BinaryOp::Sub, false, c)]);
        }
        // Signed zeros: -0.0 + -0.0 stays -0.0 through the steps and the sum.
        check(isa, &[-0.0; 37], &[step(BinaryOp::Mul, false, 1.0)], &[step(BinaryOp::Add, false, -0.0)]);
    });
}
