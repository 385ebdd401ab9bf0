//! float32 inverse trigonometric and hyperbolic functions, computed in float64 without
//! branches or libm calls so that they vectorise, and rounded once.
//!
//! arctan, arcsin and arccos are `atan(n / d)` of exact float64 numerators and denominators,
//! reduced with one division to `|u| <= tan(pi/12) = 0.268` by the pi/6 and pi/2 identities
//! applied to n and d, where the odd Taylor series to u^19 is accurate to 1e-13. The inverse
//! hyperbolic functions are log1p of cancellation-free arguments.

use super::exp_log::log1p_pos64;
use super::mad;
use crate::dispatch::Simd;

const FRAC_PI_2: f64 = std::f64::consts::FRAC_PI_2;
const FRAC_PI_6: f64 = std::f64::consts::FRAC_PI_6;
const SQRT_3: f64 = 1.732_050_807_568_877_2;
/// tan(pi/12) = 2 - sqrt 3.
const TAN_PI_12: f64 = 0.267_949_192_431_122_7;

/// Coefficients of the odd Taylor series of atan in powers of t^2: (-1)^k / (2k + 1).
const ATAN_SERIES: [f64; 10] =
    [1.0, -1.0 / 3.0, 1.0 / 5.0, -1.0 / 7.0, 1.0 / 9.0, -1.0 / 11.0, 1.0 / 13.0, -1.0 / 15.0, 1.0 / 17.0, -1.0 / 19.0];

/// atan(t) for |t| <= tan(pi/12): the series to t^19.
#[inline(always)]
fn atan_series<S: Simd>(t: f64) -> f64 {
    let z = t * t;
    let mut p = ATAN_SERIES[9];
    for &c in ATAN_SERIES[..9].iter().rev() {
        p = mad::<S>(p, z, c);
    }
    t * p
}

/// atan(n / d) for `n, d >= 0` with one division: the ratio is reduced to
/// `|u| <= tan(pi/12)` through the identities of pi/6 and pi/2 applied to n and d
/// themselves. `d = 0` or `n = inf` gives pi/2; NaN propagates.
#[inline(always)]
fn atan_ratio<S: Simd>(n: f64, d: f64) -> f64 {
    let small = n <= d * TAN_PI_12;
    let low = n <= d;
    let high = n <= d * (SQRT_3 + 2.0);
    // u = n/d; (n sqrt3 - d)/(d sqrt3 + n) (+ pi/6); (d sqrt3 - n)/(n sqrt3 + d) (pi/3 -); d/n (pi/2 -).
    let (num, den, base, sign) = if small {
        (n, d, 0.0, 1.0)
    } else if low {
        (n * SQRT_3 - d, d * SQRT_3 + n, FRAC_PI_6, 1.0)
    } else if high {
        (d * SQRT_3 - n, n * SQRT_3 + d, 2.0 * FRAC_PI_6, -1.0)
    } else {
        (d, n, FRAC_PI_2, -1.0)
    };
    mad::<S>(sign, atan_series::<S>(num / den), base)
}

/// float32 arctan.
#[inline(always)]
pub(crate) fn atan_f32<S: Simd>(x: f32) -> f32 {
    let v = x as f64;
    atan_ratio::<S>(v.abs(), 1.0).copysign(v) as f32
}

/// float32 arcsin: `atan(|x| / sqrt(1 - x^2))` with x's sign (`1 - x^2` is exact enough in
/// float64; |x| > 1 gives NaN from the square root).
#[inline(always)]
pub(crate) fn asin_f32<S: Simd>(x: f32) -> f32 {
    let v = x as f64;
    let s = ((1.0 - v) * (1.0 + v)).sqrt();
    atan_ratio::<S>(v.abs(), s).copysign(v) as f32
}

/// float32 arccos: `atan(sqrt(1 - x^2) / x)` for x >= 0 and `pi - atan(sqrt(1 - x^2) / -x)`.
#[inline(always)]
pub(crate) fn acos_f32<S: Simd>(x: f32) -> f32 {
    let v = x as f64;
    let s = ((1.0 - v) * (1.0 + v)).sqrt();
    let r = atan_ratio::<S>(s, v.abs());
    let r = if v < 0.0 { std::f64::consts::PI - r } else { r };
    // NaN (and |x| > 1, through s) must not take the x >= 0 branch silently.
    (if s.is_nan() { s } else { r }) as f32
}

/// float32 arcsinh: `log1p(a + a^2 / (1 + sqrt(1 + a^2)))` with the sign of x.
#[inline(always)]
pub(crate) fn asinh_f32<S: Simd>(x: f32) -> f32 {
    let a = (x as f64).abs();
    let u = a + a * a / (1.0 + (1.0 + a * a).sqrt());
    let r = log1p_pos64::<S>(if a.is_finite() { u } else { 0.0 }).copysign(x as f64) as f32;
    if x.is_finite() {
        r
    } else {
        x
    }
}

/// float32 arccosh: `log1p(t + sqrt(2t + t^2))`, `t = x - 1` (exact in float64).
#[inline(always)]
pub(crate) fn acosh_f32<S: Simd>(x: f32) -> f32 {
    let t = x as f64 - 1.0;
    let u = t + (2.0 * t + t * t).sqrt();
    let ok = t >= 0.0 && t.is_finite();
    let r = log1p_pos64::<S>(if ok { u } else { 0.0 }) as f32;
    if ok {
        r
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// float32 arctanh: `log1p(2a / (1 - a)) / 2` with the sign of x; ±1 give ±inf.
#[inline(always)]
pub(crate) fn atanh_f32<S: Simd>(x: f32) -> f32 {
    let v = x as f64;
    let a = v.abs();
    let ok = a < 1.0;
    let u = 2.0 * a / (1.0 - a);
    let r = (0.5 * log1p_pos64::<S>(if ok { u } else { 0.0 })).copysign(v) as f32;
    if ok {
        r
    } else if a == 1.0 {
        f32::INFINITY.copysign(x)
    } else {
        f32::NAN
    }
}
