//! The error function in float64 (relative error ~1e-14) and float32 `erf`/`erfc` on top.
//!
//! For |x| < 1, `erf x = x P(x^2)` (Taylor to x^33). For 1 <= |x| <= 10.5,
//! `erfc x = e^(-x^2) g(x)` with the smooth factor `g = erfc e^(x^2)` given by Chebyshev
//! expansions on [1, 2], [2, 4] and [4, 10.5] (coefficients computed with mpmath at 40
//! digits); beyond 10.5, erfc underflows every float32 result. All pieces are evaluated and
//! selected, so the code stays branch-free.

use super::exp_log::exp64;
use super::{horner, mad};
use crate::dispatch::Simd;

/// Taylor coefficients of `erf(x) / x` in powers of x^2.
const ERF_SMALL: [f64; 17] = [
    std::f64::consts::FRAC_2_SQRT_PI,
    -0.37612638903183754,
    0.11283791670955126,
    -0.026866170645131252,
    0.005223977625442188,
    -0.0008548327023450853,
    0.00012055332981789664,
    -1.492565035840625e-05,
    1.6462114365889248e-06,
    -1.6365844691234924e-07,
    1.4807192815879218e-08,
    -1.2290555301717928e-09,
    9.422759064650411e-11,
    -6.7113668551641105e-12,
    4.4632242632864775e-13,
    -2.7835162072109215e-14,
    1.6342614095367152e-15,
];

/// Chebyshev coefficients of `erfc(x) e^(x^2)` on [1, 2].
const G1: [f64; 15] = [
    0.331427281639452,
    -0.0850021377067432,
    0.009951127341466115,
    -0.0010810888102208325,
    0.0001102324363119495,
    -1.0636830518218601e-05,
    9.775012680479055e-07,
    -8.597922867888315e-08,
    7.267708411724842e-09,
    -5.92354384059248e-10,
    4.6683928572192346e-11,
    -3.566127699920895e-12,
    2.645877690568859e-13,
    -1.9101252151284302e-14,
    1.3377839153951851e-15,
];

/// Chebyshev coefficients of `erfc(x) e^(x^2)` on [2, 4].
const G2: [f64; 17] = [
    0.1874295690262241,
    -0.05794652883669097,
    0.008595247387396534,
    -0.0012284613640242594,
    0.00016974366686180488,
    -2.2738329337044562e-05,
    2.959844378804878e-06,
    -3.7513575581379714e-07,
    4.6372828761738244e-08,
    -5.599455392564087e-09,
    6.613160896679808e-10,
    -7.648271522188293e-11,
    8.670904324669656e-12,
    -9.645456149599564e-13,
    1.0536815229934182e-13,
    -1.1311350180887004e-14,
    1.1818156036856033e-15,
];

/// Chebyshev coefficients of `erfc(x) e^(x^2)` on [4, 10.5].
const G3: [f64; 23] = [
    0.08571277611164935,
    -0.03959944150237841,
    0.009050845795207044,
    -0.0020475042424736734,
    0.00045860059689974825,
    -0.00010172974615844683,
    2.2355578491963817e-05,
    -4.868128480649928e-06,
    1.0507105120801109e-06,
    -2.2482759928767082e-07,
    4.77041982380705e-08,
    -1.0039076911776568e-08,
    2.0957824493013636e-09,
    -4.3410474520171525e-10,
    8.923093553107016e-11,
    -1.8204631381785677e-11,
    3.686917122877443e-12,
    -7.413550056687434e-13,
    1.4802455453561526e-13,
    -2.935255060910125e-14,
    5.780969893951282e-15,
    -1.1295891751928191e-15,
    2.117282419157807e-16,
];

/// Sums a Chebyshev series `sum c[j] T_j(t)` by Clenshaw's recurrence.
#[inline(always)]
fn clenshaw<S: Simd, const N: usize>(t: f64, c: &[f64; N]) -> f64 {
    let t2 = 2.0 * t;
    let (mut b1, mut b2) = (0.0, 0.0);
    let mut j = N - 1;
    while j > 0 {
        let b0 = mad::<S>(t2, b1, c[j] - b2);
        b2 = b1;
        b1 = b0;
        j -= 1;
    }
    mad::<S>(t, b1, c[0] - b2)
}

/// `(erf a if a < 1, erfc a if a >= 1)` for `a = |x|`; the caller selects on `a < 1`.
#[inline(always)]
fn parts<S: Simd>(a: f64) -> (f64, f64) {
    let z = a * a;
    let small = a * horner::<S, 17>(z, &ERF_SMALL);
    let g1 = clenshaw::<S, 15>(mad::<S>(a, 2.0, -3.0), &G1);
    let g2 = clenshaw::<S, 17>(mad::<S>(a, 1.0, -3.0), &G2);
    let g3 = clenshaw::<S, 23>(mad::<S>(a, 2.0 / 6.5, -14.5 / 6.5), &G3);
    let g = if a < 2.0 { g1 } else { g2 };
    let g = if a < 4.0 { g } else { g3 };
    let large = exp64::<S>(-z) * g;
    let large = if a > 10.5 { 0.0 } else { large };
    (small, large)
}

/// float64 `erf x` (for float32-accuracy purposes).
#[inline(always)]
pub(crate) fn erf64<S: Simd>(x: f64) -> f64 {
    let a = x.abs();
    let (small, large) = parts::<S>(a);
    let r = if a < 1.0 { small } else { 1.0 - large };
    r.copysign(x)
}

/// float64 `erfc x` (for float32-accuracy purposes).
#[inline(always)]
pub(crate) fn erfc64<S: Simd>(x: f64) -> f64 {
    let a = x.abs();
    let (small, large) = parts::<S>(a);
    let pos = if a < 1.0 { 1.0 - small } else { large };
    let neg = if a < 1.0 { 1.0 + small } else { 2.0 - large };
    if x < 0.0 {
        neg
    } else {
        pos
    }
}

/// float32 `erf`.
#[inline(always)]
pub(crate) fn erf_f32<S: Simd>(x: f32) -> f32 {
    erf64::<S>(x as f64) as f32
}

/// float32 `erfc`.
#[inline(always)]
pub(crate) fn erfc_f32<S: Simd>(x: f32) -> f32 {
    erfc64::<S>(x as f64) as f32
}
