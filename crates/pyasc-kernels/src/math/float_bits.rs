//! float32 functions defined by the float32 format itself: `spacing` and `nextafter` step by
//! one float32 ulp, which no float64 computation reproduces.

/// The distance from x to the next float32 away from zero, with x's sign (`np.spacing`).
#[inline(always)]
pub(crate) fn spacing_f32(x: f32) -> f32 {
    let a = x.abs();
    let next = f32::from_bits(a.to_bits().wrapping_add(1));
    // Zeros of either sign step up: NumPy's spacing(-0.0) is the smallest positive float.
    let d = if x < 0.0 { a - next } else { next - a };
    if x.is_nan() {
        x
    } else if x.is_infinite() {
        f32::NAN
    } else {
        d
    }
}

/// The next float32 after `a` toward `b` (C `nextafterf`).
#[inline(always)]
pub(crate) fn nextafter_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        return a + b;
    }
    if a == b {
        return b;
    }
    if a == 0.0 {
        return f32::from_bits(1).copysign(b);
    }
    let bits = a.to_bits();
    let up = (b > a) == (a > 0.0);
    f32::from_bits(if up { bits + 1 } else { bits - 1 })
}
