//! float32 cube root, vectorisable: every float32 is a normal float64, so a first guess from
//! the float64 exponent bits (`hi / 3 + B`, the classic bit trick, within 7%) is refined by two
//! Halley steps `y (y^3 + 2x) / (2 y^3 + x)` (cubic convergence: 7% -> 1e-4 -> 1e-13) in float64
//! and rounded once, within 0.5 ulp plus a hair.

/// Added to a third of the high word of `|x|`'s float64 bits: makes the exponent of the guess
/// `e / 3` with the bias restored, and centres its error.
const B: u32 = 715_094_163;

/// float32 `cbrt(x)`: negative for negative x; ±0, ±inf and NaN map to themselves.
#[inline(always)]
pub(crate) fn cbrt_f32(x: f32) -> f32 {
    let a = (x as f64).abs();
    let hi = (a.to_bits() >> 32) as u32;
    let mut y = f64::from_bits(((hi / 3 + B) as u64) << 32);
    for _ in 0..2 {
        let y3 = y * y * y;
        y *= (y3 + 2.0 * a) / (2.0 * y3 + a);
    }
    let r = (y as f32).copysign(x);
    // 0, inf and NaN: the guess is meaningless there, and the root is x itself.
    if x == 0.0 || !x.is_finite() {
        x
    } else {
        r
    }
}
