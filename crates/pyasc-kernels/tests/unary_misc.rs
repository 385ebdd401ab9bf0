//! Exact unary kernels (rounding, sign, relu, ...), integer and bool unary ops, classification,
//! and the float64 functions against float64 references, under every ISA.

mod common;

use common::{for_each_isa, inputs_f32, rel_f64, Rng};
use pyasc_ir::op::UnaryOp;
use pyasc_kernels::unary;

/// NumPy's sign: NaN stays NaN, ±0 gives +0.
fn np_sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

fn relu(x: f64) -> f64 {
    if x.is_nan() || x > 0.0 {
        x
    } else {
        0.0
    }
}

/// A function and its float64 reference.
type Case = (UnaryOp, fn(f64) -> f64);

const EXACT: [Case; 9] = [
    (UnaryOp::Neg, |x| -x),
    (UnaryOp::Abs, f64::abs),
    (UnaryOp::Square, |x| x * x),
    (UnaryOp::Floor, f64::floor),
    (UnaryOp::Ceil, f64::ceil),
    (UnaryOp::Round, f64::round_ties_even),
    (UnaryOp::Sign, np_sign),
    (UnaryOp::Relu, relu),
    (UnaryOp::Sqrt, f64::sqrt),
];

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn exact_float_fns_bitwise() {
    let x32 = inputs_f32(200_000, &[0.5, 1.5, 2.5, 8388607.5], 11);
    let mut rng = Rng::new(12);
    let mut x64: Vec<f64> = (0..200_000).map(|_| f64::from_bits(rng.next_u64())).collect();
    x64.extend(x32.iter().map(|&v| v as f64));
    x64.extend([0.5, -0.5, 1.5, 2.5, -2.5, 4503599627370495.5, -0.0, 0.49999999999999994]);
    let mut y32 = vec![0.0f32; x32.len()];
    let mut y64 = vec![0.0f64; x64.len()];
    for_each_isa(|isa| {
        for (f, r) in EXACT {
            unary::f32(f, &x32, &mut y32);
            for (&x, &y) in x32.iter().zip(&y32) {
                let want = r(x as f64) as f32;
                let same = y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan());
                assert!(same, "{f:?} [{}] f32({x:e}) = {y:e}, want {want:e}", isa.name());
            }
            unary::f64(f, &x64, &mut y64);
            for (&x, &y) in x64.iter().zip(&y64) {
                assert!(same64(y, r(x)), "{f:?} [{}] f64({x:e}) = {y:e}, want {:e}", isa.name(), r(x));
            }
        }
    });
}

#[test]
fn float64_functions() {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let cases: [Case; 13] = [
        (UnaryOp::Exp, f64::exp),
        (UnaryOp::Exp2, f64::exp2),
        (UnaryOp::Log, f64::ln),
        (UnaryOp::Log2, f64::log2),
        (UnaryOp::Log1p, f64::ln_1p),
        (UnaryOp::Expm1, f64::exp_m1),
        (UnaryOp::Sin, f64::sin),
        (UnaryOp::Cos, f64::cos),
        (UnaryOp::Tan, f64::tan),
        (UnaryOp::Tanh, f64::tanh),
        (UnaryOp::Erf, libm::erf),
        (UnaryOp::Erfc, libm::erfc),
        (UnaryOp::Reciprocal, |x| 1.0 / x),
    ];
    let mut rng = Rng::new(13);
    let x: Vec<f64> = (0..20_000).map(|_| rng.uniform(-30.0, 30.0)).collect();
    let mut y = vec![0.0; x.len()];
    for_each_isa(|_| {
        for (f, r) in cases {
            unary::f64(f, &x, &mut y);
            for (&v, &g) in x.iter().zip(&y) {
                assert!(same64(g, r(v)), "{f:?}({v})");
            }
        }
        // Activations: cancellation-free formulas, compared where the naive one is accurate.
        let acts: [Case; 4] = [
            (UnaryOp::Sigmoid, |x| 1.0 / (1.0 + (-x).exp())),
            (UnaryOp::Silu, |x| x / (1.0 + (-x).exp())),
            (UnaryOp::Softplus, |x| (1.0 + x.exp()).ln()),
            (UnaryOp::Gelu, |x| 0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)),
        ];
        let xm: Vec<f64> = (0..20_000).map(|i| -3.0 + 6.0 * i as f64 / 20_000.0).collect();
        let mut ym = vec![0.0; xm.len()];
        for (f, r) in acts {
            unary::f64(f, &xm, &mut ym);
            for (&v, &g) in xm.iter().zip(&ym) {
                assert!(rel_f64(g, r(v)) < 1e-14 || (g - r(v)).abs() < 1e-300, "{f:?}({v}) = {g}, want {}", r(v));
            }
        }
        let mut s = [0.0];
        unary::f64(UnaryOp::Sigmoid, &[-800.0], &mut s);
        assert_eq!(s[0], sigmoid(-800.0));
        // Gelu far in the tail, against mpmath at 40 digits.
        let xs = [-30.0, -8.0, -20.5];
        let want = [-1.472014178144456e-196, -4.976768459417427e-15, -2.206758018052147e-92];
        let mut g = [0.0; 3];
        unary::f64(UnaryOp::Gelu, &xs, &mut g);
        for (&g, &w) in g.iter().zip(&want) {
            assert!(rel_f64(g, w) < 1e-14, "gelu tail: {g:e} vs {w:e}");
        }
        unary::f64(UnaryOp::Rsqrt, &[4.0], &mut s);
        assert_eq!(s[0], 0.5);
    });
}

#[test]
fn special_values_f32() {
    let x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, -1.0];
    let mut y = [0.0f32; 6];
    for_each_isa(|_| {
        unary::f32(UnaryOp::Exp, &x, &mut y);
        assert!(y[0].is_nan() && y[1] == f32::INFINITY && y[2] == 0.0 && y[3] == 1.0);
        unary::f32(UnaryOp::Log, &x, &mut y);
        assert!(y[0].is_nan() && y[1] == f32::INFINITY && y[2].is_nan());
        assert!(y[3] == f32::NEG_INFINITY && y[4] == f32::NEG_INFINITY && y[5].is_nan());
        unary::f32(UnaryOp::Sin, &x, &mut y);
        assert!(y[0].is_nan() && y[1].is_nan() && y[2].is_nan());
        assert!(y[4] == 0.0 && y[4].is_sign_negative());
        unary::f32(UnaryOp::Tanh, &x, &mut y);
        assert!(y[0].is_nan() && y[1] == 1.0 && y[2] == -1.0 && y[4].is_sign_negative());
        unary::f32(UnaryOp::Erf, &x, &mut y);
        assert!(y[0].is_nan() && y[1] == 1.0 && y[2] == -1.0);
        unary::f32(UnaryOp::Erfc, &x, &mut y);
        assert!(y[0].is_nan() && y[1] == 0.0 && y[2] == 2.0);
        unary::f32(UnaryOp::Log1p, &x, &mut y);
        assert!(y[5] == f32::NEG_INFINITY && y[2].is_nan());
    });
}

#[test]
fn int_and_bool_unary() {
    let mut rng = Rng::new(14);
    let mut x32: Vec<i32> = (0..1001).map(|_| rng.next_u32() as i32 >> (rng.next_u32() % 31)).collect();
    x32.extend([0, 1, -1, i32::MIN, i32::MAX]);
    let x64: Vec<i64> = x32.iter().map(|&v| (v as i64) << (v & 31)).chain([i64::MIN, i64::MAX]).collect();
    let mut y32 = vec![0; x32.len()];
    let mut y64 = vec![0; x64.len()];
    for_each_isa(|_| {
        for f in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Square, UnaryOp::Not, UnaryOp::Relu] {
            unary::i32(f, &x32, &mut y32);
            unary::i64(f, &x64, &mut y64);
            macro_rules! check {
                ($x:expr, $y:expr) => {
                    for (&v, &g) in $x.iter().zip($y.iter()) {
                        let want = match f {
                            UnaryOp::Neg => v.wrapping_neg(),
                            UnaryOp::Abs => v.wrapping_abs(),
                            UnaryOp::Sign => v.signum(),
                            UnaryOp::Square => v.wrapping_mul(v),
                            UnaryOp::Not => !v,
                            UnaryOp::Relu => v.max(0),
                            _ => unreachable!("no integer kernel"),
                        };
                        assert_eq!(g, want, "{f:?}({v})");
                    }
                };
            }
            check!(x32, y32);
            check!(x64, y64);
        }
        let b = [0u8, 1, 1, 0, 2];
        let mut nb = [9u8; 5];
        unary::bool_not(&b, &mut nb);
        assert_eq!(nb, [1, 0, 0, 1, 0]);
    });
}

#[test]
fn classification() {
    let x = [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, 5e-324];
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let mut y = [9u8; 7];
    for_each_isa(|_| {
        for (f, want) in [
            (UnaryOp::IsNan, [0, 0, 1, 0, 0, 0, 0]),
            (UnaryOp::IsInf, [0, 0, 0, 1, 1, 0, 0]),
            (UnaryOp::IsFinite, [1, 1, 0, 0, 0, 1, 1]),
        ] {
            unary::classify_f64(f, &x, &mut y);
            assert_eq!(y, want, "{f:?} f64");
            unary::classify_f32(f, &x32, &mut y);
            // f64::MAX overflows to inf in float32.
            let mut w32 = want;
            w32[5] = (f == UnaryOp::IsInf) as u8;
            assert_eq!(y, w32, "{f:?} f32");
        }
    });
}
