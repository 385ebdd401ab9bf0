//! The AVX-512 stencil sum against the portable loop, bit for bit, over every alignment.

use crate::stencil::simd::{sum, Lanes};
use crate::stencil::{sum_loop, BinOp};
use crate::test_rng::Rng;

/// Values with the specials a sum must carry: NaN, infinities, signed zeros, subnormals.
fn value(r: &mut Rng) -> f64 {
    match r.below(40) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => 1e-310,
        5 => 1e-40,
        _ => (r.below(2_000_001) as f64 - 1e6) / 997.0,
    }
}

/// Same bits, or both NaN (the sign of a NaN from `a - b` is not specified across paths).
fn same<T: Copy + Into<f64>>(a: T, b: T, bits: impl Fn(T) -> u64) -> bool {
    let (x, y): (f64, f64) = (a.into(), b.into());
    (x.is_nan() && y.is_nan()) || bits(a) == bits(b)
}

fn check<T>(from: fn(f64) -> T, bits: fn(T) -> u64, seed: u64)
where
    T: Lanes + crate::stencil::StencilFloat + Into<f64>,
{
    let mut r = Rng(seed);
    for case in 0..600 {
        let k = 2 + r.below(7);
        let len = match case % 4 {
            0 => r.below(20),
            1 => r.below(70),
            _ => r.below(400),
        };
        // One buffer per operand, the operand starting at a random cell of it (every alignment).
        let bufs: Vec<Vec<T>> = (0..k).map(|_| (0..len + 40).map(|_| from(value(&mut r))).collect()).collect();
        let starts: Vec<usize> = (0..k).map(|_| r.below(33)).collect();
        let ops: Vec<&[T]> = bufs.iter().zip(&starts).map(|(b, &s)| &b[s..s + len]).collect();
        let neg: Vec<bool> = (1..k).map(|_| r.below(3) == 0).collect();
        let c = from(value(&mut r));
        let post = match r.below(3) {
            0 => None,
            1 => Some((BinOp::Mul, c)),
            _ => Some((BinOp::Div, c)),
        };
        let at = r.below(17);
        let mut want = vec![from(7.0); len + 40];
        let mut got = want.clone();
        sum_loop(&ops, &neg, post, &mut want[at..at + len]);
        // SAFETY: the caller checked for AVX-512F; every operand holds `len` cells.
        unsafe { sum(&ops, &neg, post, &mut got[at..at + len]) };
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(same(g, w, bits), "case {case}: {k} operands, {len} cells, cell {i}: {} != {}", g.into(), w.into());
        }
    }
}

#[test]
fn wide_sums_match_the_portable_loop() {
    if !std::is_x86_feature_detected!("avx512f") {
        eprintln!("no AVX-512F on this CPU: the wide sum is not used here");
        return;
    }
    check::<f32>(|v| v as f32, |v| v.to_bits() as u64, 0x9e37_79b9_7f4a_7c15);
    check::<f64>(|v| v, f64::to_bits, 0xd1b5_4a32_d192_ed03);
}
