//! Row reductions against naive references under every ISA: float32/float64 max and min
//! (NaN anywhere gives NaN, infinities, every tail length) and float32 sums against an exact
//! float64 reference.

mod common;

use common::{for_each_isa, Rng};
use pyasc_kernels::reduce;

fn naive_extreme(x: &[f32], max: bool) -> f32 {
    if x.iter().any(|v| v.is_nan()) {
        return f32::NAN;
    }
    x.iter().fold(if max { f32::NEG_INFINITY } else { f32::INFINITY }, |a, &v| if max { a.max(v) } else { a.min(v) })
}

fn same(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

#[test]
fn max_min_f32_every_length_with_nan_and_inf() {
    let mut rng = Rng::new(21);
    for_each_isa(|isa| {
        for len in 1..300 {
            let x: Vec<f32> = (0..len).map(|_| rng.uniform(-1e3, 1e3) as f32).collect();
            for case in 0..4 {
                let mut y = x.clone();
                let at = (rng.next_u32() as usize) % len;
                match case {
                    1 => y[at] = f32::NAN,
                    2 => y[at] = f32::INFINITY,
                    3 => y[at] = f32::NEG_INFINITY,
                    _ => {}
                }
                for max in [true, false] {
                    let got = if max { reduce::max_f32(&y) } else { reduce::min_f32(&y) };
                    let want = naive_extreme(&y, max);
                    assert!(same(got, want), "[{}] len {len} case {case} max {max}: {got} vs {want}", isa.name());
                    let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
                    let got64 = if max { reduce::max_f64(&y64) } else { reduce::min_f64(&y64) };
                    assert!(same(got64 as f32, want), "[{}] f64 len {len} case {case}", isa.name());
                }
            }
        }
    });
}

#[test]
fn sum_f32_close_to_exact() {
    let mut rng = Rng::new(22);
    for_each_isa(|isa| {
        for len in [1usize, 15, 16, 63, 64, 65, 255, 256, 257, 1000, 1024, 4099, 100_000] {
            let x: Vec<f32> = (0..len).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
            // float64 sums of float32 values are exact enough here to serve as the reference
            // at 1e-12 relative to the sum of magnitudes.
            let exact: f64 = x.iter().map(|&v| v as f64).sum();
            let mag: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
            let got = reduce::sum_f32(&x);
            assert!((got - exact).abs() <= 1e-12 * mag, "[{}] len {len}: {got} vs {exact}", isa.name());
        }
    });
}
