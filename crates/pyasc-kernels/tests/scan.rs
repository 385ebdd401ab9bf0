//! Segment scans under every ISA: the in-register float32/float64 prefix sums against a
//! float64 reference (every tail length, with and without a carry, signed zeros, NaN and
//! infinities), totals without stores equal to the running value with stores, and column
//! scans equal to line scans.

mod common;

use common::{for_each_isa, Rng};
use pyasc_kernels::scan::{columns, run_scalar, LogSumExp, Max, Min, Prod, ScanOp, Sum};

/// Values in (-100, 100) on a grid of 2^-10: every float32 holds them and every sum of a few
/// thousand is exact in float64.
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| ((rng.uniform(-100.0, 100.0) * 1024.0).round() / 1024.0) as f32).collect()
}

#[test]
fn float32_sums_round_each_exact_prefix_once() {
    for_each_isa(|isa| {
        for n in (0..40).chain([63, 64, 65, 1000, 4097]) {
            let x = data(n, n as u64 + 1);
            for carry in [None, Some(12.5f64)] {
                let op = Sum::<f32>::default();
                let mut out = vec![0f32; n];
                let r = op.run(&x, Some(&mut out), carry, op.identity());
                let mut exact = -0.0f64;
                for (k, v) in x.iter().enumerate() {
                    exact += *v as f64;
                    let want = (carry.unwrap_or(-0.0) + exact) as f32;
                    assert_eq!(out[k].to_bits(), want.to_bits(), "{isa:?} n={n} k={k} carry={carry:?}");
                }
                assert_eq!(r, exact, "{isa:?} n={n}");
                assert_eq!(op.run(&x, None, carry, op.identity()).to_bits(), r.to_bits(), "{isa:?} totals n={n}");
            }
        }
    });
}

#[test]
fn float64_sums_agree_with_the_sequential_loop() {
    for_each_isa(|isa| {
        for n in [0usize, 1, 3, 7, 8, 9, 31, 100, 1025] {
            let mut rng = Rng::new(7 + n as u64);
            let x: Vec<f64> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let op = Sum::<f64>::default();
            let mut out = vec![0f64; n];
            let r = op.run(&x, Some(&mut out), Some(1.0), -0.0);
            let mut want = vec![0f64; n];
            let rs = run_scalar(op, &x, Some(&mut want), Some(1.0), -0.0);
            for k in 0..n {
                assert!((out[k] - want[k]).abs() <= 1e-13 * (k as f64 + 1.0), "{isa:?} n={n} k={k}");
            }
            assert!((r - rs).abs() <= 1e-13 * n as f64);
            assert_eq!(op.run(&x, None, Some(1.0), -0.0).to_bits(), r.to_bits(), "{isa:?} totals n={n}");
        }
    });
}

#[test]
fn sums_keep_signed_zeros_and_propagate_nan_and_infinities() {
    for_each_isa(|isa| {
        let op = Sum::<f32>::default();
        let x = vec![-0.0f32; 19];
        let mut out = vec![1f32; 19];
        op.run(&x, Some(&mut out), None, op.identity());
        assert!(out.iter().all(|v| *v == 0.0 && v.is_sign_negative()), "{isa:?} {out:?}");
        let mut x = data(37, 3);
        x[5] = f32::INFINITY;
        x[20] = f32::NAN;
        let mut out = vec![0f32; 37];
        op.run(&x, Some(&mut out), None, op.identity());
        assert!(out[..5].iter().all(|v| v.is_finite()), "{isa:?}");
        assert!(out[5..20].iter().all(|v| *v == f32::INFINITY), "{isa:?}");
        assert!(out[20..].iter().all(|v| v.is_nan()), "{isa:?}");
    });
}

/// `columns` against one line scan per column, bit for bit.
fn columns_match<S: ScanOp>(op: S, x: &[S::T], rows: usize, w: usize)
where
    S::T: PartialEq + std::fmt::Debug,
{
    let mut acc = vec![op.identity(); w];
    let mut out = vec![x[0]; rows * w];
    // SAFETY: both buffers hold `rows` rows of `w` elements.
    unsafe { columns(op, &mut acc, x.as_ptr(), w as isize, out.as_mut_ptr(), w as isize, rows) };
    for c in 0..w {
        let col: Vec<S::T> = (0..rows).map(|k| x[k * w + c]).collect();
        let mut want = col.clone();
        run_scalar(op, &col, Some(&mut want), None, op.identity());
        let got: Vec<S::T> = (0..rows).map(|k| out[k * w + c]).collect();
        assert_eq!(got, want, "column {c}");
    }
}

#[test]
fn column_scans_equal_line_scans() {
    for_each_isa(|_| {
        let (rows, w) = (37, 45);
        let x = data(rows * w, 11);
        columns_match(Sum::<f32>::default(), &x, rows, w);
        columns_match(Max::<f32>::default(), &x, rows, w);
        columns_match(Prod::<f32>::default(), &x.iter().map(|v| 1.0 + v / 1000.0).collect::<Vec<_>>(), rows, w);
        columns_match(LogSumExp::<f32>::default(), &x, rows, w);
        let xi: Vec<i64> = x.iter().map(|v| (*v * 1e15) as i64).collect();
        columns_match(Sum::<i64>::default(), &xi, rows, w);
        columns_match(Prod::<i64>::default(), &xi, rows, w);
        let xb: Vec<u8> = x.iter().map(|v| (*v > 50.0) as u8).collect();
        columns_match(Max::<u8>::default(), &xb, rows, w);
        columns_match(Min::<u8>::default(), &xb, rows, w);
    });
}

/// `op.run` against the portable loop, bit for bit, with and without a carry and stores.
fn same_as_portable<S: ScanOp<T = f32, A = f32>>(op: S, x: &[f32], carry: Option<f32>) {
    let mut got = vec![0f32; x.len()];
    let mut want = vec![0f32; x.len()];
    let r = op.run(x, Some(&mut got), carry, op.identity());
    let rw = run_scalar(op, x, Some(&mut want), carry, op.identity());
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want), "n={} carry={carry:?}", x.len());
    assert_eq!(r.to_bits(), rw.to_bits());
    assert_eq!(op.run(x, None, carry, op.identity()).to_bits(), r.to_bits());
}

#[test]
fn float32_maxima_and_minima_match_numpys_rule_on_every_isa() {
    for_each_isa(|_| {
        let mut rng = Rng::new(5);
        for n in (0..40).chain([64, 100, 1000]) {
            // Few distinct values (ties, signed zeros), infinities and NaN at random places.
            let pool = [-0.0f32, 0.0, 1.0, -1.0, 2.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3.0, -7.0];
            for nan_ok in [false, true] {
                let x: Vec<f32> = (0..n)
                    .map(|_| loop {
                        let v = pool[(rng.next_u32() % pool.len() as u32) as usize];
                        if nan_ok || !v.is_nan() {
                            break v;
                        }
                    })
                    .collect();
                for carry in [None, Some(0.0), Some(-0.0), Some(2.5), Some(f32::NAN)] {
                    same_as_portable(Max::<f32>::default(), &x, carry);
                    same_as_portable(Min::<f32>::default(), &x, carry);
                }
            }
        }
    });
}
