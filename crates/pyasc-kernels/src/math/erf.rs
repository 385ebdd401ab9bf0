//! float32 `erf`, `erfc` and `gelu` in native float32 arithmetic (16 lanes per AVX-512 vector).
//!
//! Small arguments use odd/even polynomials: `erf x = x (2/sqrt(pi) + x^2 P(x^2))` for
//! |x| < 0.47 (2/sqrt(pi) split in two floats) and `gelu x = x (1/2 + x S(x^2))` for
//! |x| < 0.47 sqrt 2. Beyond, the tail `erfc z = e^(-z^2) g(z)` (and `erfc(a/sqrt2)/2 =
//! e^(-a^2/2) h(a)` for gelu) is evaluated once per lane: the smooth factor is one polynomial
//! whose coefficients are picked per lane from two fitted sets (in `z` near, in `1/z` far), and
//! `e^(-z^2)` comes from the exactly split square `z^2 = hi + lo`, so erfc keeps its relative
//! accuracy down to the subnormal range. erfc of negative x is `2 - erfc|x|`, and gelu of
//! positive x is `x (1 - erfc(x/sqrt2)/2)`; neither cancels. These coefficients come from
//! `tools/fit_erf.py` (near-minimax, mpmath references).
//!
//! erf itself needs no exponential: a polynomial below 1.1 and a rational for `-erfc` up to
//! 3.92, blended into one evaluation (see [`erf_f32`]; `tools/fit_erf_rational.py`). Under
//! AVX-512 erf takes the table-driven kernel of [`super::erf_table`] instead.

use super::{fma32, horner32, mad32};
use crate::dispatch::Simd;

/// ln 2 rounded to float32 (`k * LN2_HI` is exact inside an FMA).
const LN2_HI: f32 = std::f32::consts::LN_2;
/// `ln 2 - LN2_HI`.
const LN2_LO: f32 = -1.904_654_2e-9;
/// `1.5 * 2^23`: adding it rounds a float32 below 2^22 in magnitude to an integer.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// The tail factor is scaled by `2^(k + SCALE_BIAS)` and then by `2^-SCALE_BIAS`, so that only
/// the last step rounds when the result is subnormal.
const SCALE_BIAS: i32 = 64;
/// `2^-SCALE_BIAS`.
const SCALE_DOWN: f32 = f32::from_bits(((127 - SCALE_BIAS) as u32) << 23);

/// `(e^r - 1 - r) / r^2` for |r| <= 0.35 (fit error 2^-28.1).
const EXP_Q: [f32; 5] = [0.49999994, 0.16666517, 0.04166828, 0.008369248, 0.0013820775];

/// 2/sqrt(pi) = ERF_C0_HI + ERF_C0_LO.
const ERF_C0_HI: f32 = std::f32::consts::FRAC_2_SQRT_PI;
/// Low part of 2/sqrt(pi).
const ERF_C0_LO: f32 = -5.8635383e-08;

/// `(erf(x) / x - 2/sqrt(pi)) / x^2` in x^2 for |x| <= 0.75 (fit error 2^-33.1).
const ERF_SMALL: [f32; 6] = [-0.37612638, 0.11283762, -0.026863316, 0.0052113575, -0.0008265965, 8.9077694e-05];

/// `erf(x/sqrt2) / 2x` in x^2 for |x| <= 0.47 sqrt 2 (fit error 2^-26.4).
const GELU_SMALL: [f32; 5] = [0.3989423, -0.06649117, 0.009982154, -0.0012164557, 0.0001424288];

/// Centre of the first piece of `G_NEAR`.
const G_ZC: f32 = 1.1104529;
/// Centre (in 1/v) of `G_FAR`.
const G_TC: f32 = 0.3344164;

/// `erfc(z) e^(z^2)` on [0.47, 1.75] in v - G_ZC (fit error 2^-27.2).
const G_NEAR: [f32; 10] = [
    0.3991884,
    -0.24181934,
    0.13065924,
    -0.064485624,
    0.029529974,
    -0.012679135,
    0.0051161167,
    -0.0019841623,
    0.00082899444,
    -0.00028553655,
];

/// v times `erfc(z) e^(z^2)` on [1.75, 10.1] in 1/v - G_TC (fit error 2^-29.0).
const G_FAR: [f32; 10] = [
    0.5368485,
    -0.14320856,
    -0.114737205,
    0.19523415,
    -0.103241555,
    -0.09480649,
    0.2794158,
    -0.2883147,
    -0.098693095,
    0.56399137,
];

/// Centre of the first piece of `H_NEAR`.
const H_ZC: f32 = 1.5764372;
/// Centre (in 1/v) of `H_FAR`.
const H_TC: f32 = 0.23823746;

/// `erfc(a/sqrt2) e^(a^2/2) / 2` on [0.6647, 2.475] in v - H_ZC (fit error 2^-27.3).
const H_NEAR: [f32; 10] = [
    0.19908072,
    -0.08510402,
    0.03245974,
    -0.011311079,
    0.0036577156,
    -0.0011091961,
    0.00031603803,
    -8.6471475e-05,
    2.5593932e-05,
    -6.2949734e-06,
];

/// v times `erfc(a/sqrt2) e^(a^2/2) / 2` on [2.475, 14.28] in 1/v - H_TC (fit error 2^-28.9).
const H_FAR: [f32; 10] = [
    0.3793553,
    -0.1437791,
    -0.16019584,
    0.38838843,
    -0.29528165,
    -0.36247668,
    1.5513695,
    -2.3254218,
    -0.9629119,
    9.0739355,
];

/// Splits `e^-(hi + lo)` (`0 <= hi <= 104`, `|lo| <= ulp(hi)`) as `(r, w, k)` with
/// `e^-(hi + lo) = 2^k (1 + r + w)`, `|r| <= 0.35`, `w = r^2 Q(r)` small.
#[inline(always)]
fn exp_neg<S: Simd>(hi: f32, lo: f32) -> (f32, f32, i32) {
    let t = mad32::<S>(-hi, std::f32::consts::LOG2_E, ROUND_MAGIC);
    let kf = t - ROUND_MAGIC;
    let k = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = fma32::<S>(kf, -LN2_HI, -hi);
    let r = mad32::<S>(kf, -LN2_LO, r) - lo;
    (r, r * r * horner32::<S, 5>(r, &EXP_Q), k)
}

/// `m 2^k` for `-150 <= k <= 0` with a single rounding (into the subnormal range if need be).
#[inline(always)]
fn scale<S: Simd>(m: f32, k: i32) -> f32 {
    let p = f32::from_bits((k.wrapping_add(127 + SCALE_BIAS) as u32) << 23);
    m * p * SCALE_DOWN
}

/// A fitted factor `f(v)` in two pieces: `f(v)` in `v - zc` below `split`, `v f(v)` in
/// `1/v - tc` from `split` on (smooth and free of cancellation out to the last float32 result);
/// `d ln(v f(v)) / d ln(1/v) ~ -kappa / v^2` there.
struct Factor<const N: usize> {
    split: f32,
    zc: f32,
    tc: f32,
    kappa: f32,
    near: [f32; N],
    far: [f32; N],
}

/// `erfc(z) e^(z^2)`.
const G: Factor<10> = Factor { split: 1.75, zc: G_ZC, tc: G_TC, kappa: 0.8, near: G_NEAR, far: G_FAR };

/// `erfc(a/sqrt2) e^(a^2/2) / 2`.
const H: Factor<10> =
    Factor { split: 1.75 * std::f32::consts::SQRT_2, zc: H_ZC, tc: H_TC, kappa: 1.6, near: H_NEAR, far: H_FAR };

/// `e^(-v^2/d) f(v)` (`d` 2 if `half`, else 1) for `v` in [0.47, 14.3], in pieces that the
/// callers combine with one final rounding.
struct Tail {
    /// `v` is in the far piece.
    far: bool,
    /// `e^(-v^2/d) f(v) = 2^k (c + b)` near, `2^k (c + b) / v` far.
    c: f32,
    /// See `c`; `|b| < |c| / 2`.
    b: f32,
    /// See `c`.
    k: i32,
    /// `1/v = t (1 + e)` to first order.
    t: f32,
    /// See `t`.
    e: f32,
}

#[inline(always)]
fn tail<S: Simd, const N: usize>(v: f32, half: bool, f: &Factor<N>) -> Tail {
    let hi = v * v;
    let lo = fma32::<S>(v, v, -hi);
    let (hi, lo) = if half { (0.5 * hi, 0.5 * lo) } else { (hi, lo) };
    let (r, w, k) = exp_neg::<S>(hi, lo);
    let far = v >= f.split;
    let t = 1.0 / v;
    // 1/v = t (1 + e) to first order, with e exact: v f(v) at 1/v is v f(v) at t times
    // (1 + e d ln(v f(v)) / d ln t).
    let e = fma32::<S>(-v, t, 1.0);
    let w = if far { mad32::<S>(e * t, -f.kappa * t, w) } else { w };
    let u = if far { t - f.tc } else { v - f.zc };
    let pick = |i: usize| if far { f.far[i] } else { f.near[i] };
    let mut acc = pick(N - 1);
    let mut i = N - 1;
    while i > 1 {
        i -= 1;
        acc = mad32::<S>(acc, u, pick(i));
    }
    // f e^r = (c + s)(1 + r + w) = c + b with b = s + (c + s)(r + w), c exact.
    let c = pick(0);
    let s = acc * u;
    let cs = c + s;
    let b = fma32::<S>(cs, r, mad32::<S>(cs, w, s));
    Tail { far, c, b, k, t, e }
}

/// gelu uses its small-argument polynomial below this.
const GELU_SMALL_MAX: f32 = 0.47 * std::f32::consts::SQRT_2;
/// Lanes that do not need the tail evaluate it here instead: a far-out or tiny argument would
/// make subnormal intermediate results, which cost a microcode assist each on x86.
const SAFE: f32 = 1.0;

/// `erf x` for |x| <= 0.75 (erfc uses it below 0.47, where `1 - erf` does not cancel).
#[inline(always)]
fn erf_small<S: Simd>(x: f32) -> f32 {
    let z = x * x;
    let s = x * mad32::<S>(z, horner32::<S, 6>(z, &ERF_SMALL), ERF_C0_LO);
    mad32::<S>(x, ERF_C0_HI, s)
}

/// `erfc v` for `v` in [0.47, 10.1] (NaN stays NaN).
#[inline(always)]
fn erfc_tail<S: Simd>(v: f32) -> f32 {
    let p = tail::<S, 10>(v, false, &G);
    // Far: (c + b) / v = (c + b) t (1 + e) = t c + t d with d = b + (c + b) e.
    let d = mad32::<S>(p.c + p.b, p.e, p.b);
    let (t, d) = if p.far { (p.t, d) } else { (1.0, p.b) };
    scale::<S>(fma32::<S>(t, p.c, t * d), p.k)
}

/// From here on erf rounds to ±1 (erfc(3.9192) is half an ulp of 1).
const ERF_TOP: f32 = 3.92;
/// erf switches from the near polynomial to the far rational here.
const ERF_SPLIT: f32 = 1.1;

/// `erf(x)/x - ERF_C0_HI` in x^2 for |x| < 1.1 (relative fit error 2^-27.6).
const ERF_NEAR_N: [f32; 7] =
    [-5.8635383e-08, -0.3761261, 0.112833545, -0.026843019, 0.0051667667, -0.0007816658, 7.21139e-05];
/// Numerator of `-erfc x` in x^2 on [1.1, 3.92] (absolute fit error 2^-25.6).
const ERF_FAR_N: [f32; 7] =
    [-0.75678337, 0.2371402, -0.028317163, 0.0013806745, 1.1277275e-06, -2.4512985e-06, 6.280113e-08];
/// Denominator (constant term 1) of `ERF_FAR_N`.
const ERF_FAR_Q: [f32; 6] = [1.0, 1.8036348, 0.4210196, 0.24273351, 0.0009685945, 0.0064999047];

/// float32 `erf`: `|x| (C0_HI + N(x^2))` below [`ERF_SPLIT`] (`N(0) = C0_LO`, so 2/sqrt(pi)
/// is exact to 2^-40 and the small correction term carries the rounding), `1 + N(x^2)/Q(x^2)`
/// (`N/Q` is `-erfc x`, at most 0.12 in magnitude) from there to [`ERF_TOP`], then 1, sign restored. Both
/// pieces run through one Horner scheme whose coefficients are picked per lane (`Q = 1` near),
/// so a vector pays for one piece and one division. Without FMA it evaluates in float64.
/// Coefficients from `tools/fit_erf_rational.py`.
#[inline(always)]
pub(crate) fn erf_f32<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    let far = a >= ERF_SPLIT;
    let pick_n = |i: usize| if far { ERF_FAR_N[i] } else { ERF_NEAR_N[i] };
    let pick_q = |i: usize| if far { ERF_FAR_Q[i] } else { 0.0 };
    // Beyond ERF_TOP (and for infinities) the result is replaced by 1 at the end.
    let (m, k) = if far { (1.0, 1.0) } else { (a, ERF_C0_HI) };
    let y = if S::FMA {
        let t = a * a;
        let mut n = pick_n(6);
        let mut i = 6;
        while i > 0 {
            i -= 1;
            n = n.mul_add(t, pick_n(i));
        }
        let mut q = pick_q(5);
        let mut i = 5;
        while i > 1 {
            i -= 1;
            q = q.mul_add(t, pick_q(i));
        }
        let q = q.mul_add(t, 1.0);
        m.mul_add(k, m * (n / q))
    } else {
        let t = a as f64 * a as f64;
        let mut n = pick_n(6) as f64;
        let mut i = 6;
        while i > 0 {
            i -= 1;
            n = n * t + pick_n(i) as f64;
        }
        let mut q = pick_q(5) as f64;
        let mut i = 5;
        while i > 1 {
            i -= 1;
            q = q * t + pick_q(i) as f64;
        }
        let q = q * t + 1.0;
        (m as f64 * (k as f64 + n / q)) as f32
    };
    // N/Q < 0 far (its fit error is below erfc(ERF_TOP)), so no lane exceeds 1.
    let y = if a > ERF_TOP { 1.0 } else { y };
    y.copysign(x)
}

/// float32 `erfc`.
#[inline(always)]
pub(crate) fn erfc_f32<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    let v = if a > 10.1 { SAFE } else { a };
    let v = if a < 0.47 { SAFE } else { v };
    // erfc(10.06) and beyond round to 0.
    let e = if a > 10.1 { 0.0 } else { erfc_tail::<S>(v) };
    let big = if x < 0.0 { 2.0 - e } else { e };
    if a < 0.47 {
        1.0 - erf_small::<S>(x)
    } else {
        big
    }
}

/// float32 `x/2 (1 + erf(x/sqrt 2)) = x/2 erfc(-x/sqrt 2)`; NaN at -inf, as that formula.
#[inline(always)]
pub(crate) fn gelu_f32<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    // Above 6, gelu x rounds to x; below -14.3 to -0.
    let v = if x > 6.0 { SAFE } else { a };
    let v = if a < GELU_SMALL_MAX || x < -14.3 { SAFE } else { v };
    let p = tail::<S, 10>(v, true, &H);
    // |x| erfc(|x|/sqrt2)/2 = 2^k (c + b) far (no division there), 2^k |x| (c + b) near,
    // scaled only after the product (it may be subnormal).
    let w = if p.far { 1.0 } else { v };
    let m = scale::<S>(fma32::<S>(w, p.c, w * p.b), p.k);
    // -inf gives NaN, as the formula.
    let neg = if x < -14.3 { x * 0.0 } else { -m };
    let pos = if x > 6.0 { x } else { x - m };
    let big = if x < 0.0 { neg } else { pos };
    let small = x * mad32::<S>(x, horner32::<S, 5>(x * x, &GELU_SMALL), 0.5);
    if a < GELU_SMALL_MAX {
        small
    } else {
        big
    }
}
