//! float32 `erf` for AVX-512 from a table of piecewise polynomials.
//!
//! |x| in [0, 4) is cut into 16 pieces of width 1/4; each lane picks its piece's centre and
//! coefficients from 16-entry tables with one register permute per coefficient, so there is
//! no blending of coefficient sets and no division. Piece 0 is `a (C0_HI + P(a^2))` (odd,
//! so small arguments keep their relative accuracy); pieces 1 to 15 are degree-5 polynomials
//! in `a - centre`. From 3.99 on erf rounds to 1. Coefficients come from
//! `tools/fit_erf_table.py` (near-minimax; simulated worst error 0.99 ulp).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// 2/sqrt(pi) rounded to float32 (the low part is the table's piece-0 constant term).
const C0_HI: f32 = std::f32::consts::FRAC_2_SQRT_PI;
/// Arguments are clamped here; erf of anything above rounds to 1.
const CLAMP: f32 = 3.99;

/// Centre of each piece (piece 0 is evaluated in a^2 instead).
const CENTRE: [f32; 16] =
    [0.0, 0.375, 0.625, 0.875, 1.125, 1.375, 1.625, 1.875, 2.125, 2.375, 2.625, 2.875, 3.125, 3.375, 3.625, 3.875];
/// Coefficient `j` (row) of each piece (column), lowest degree first.
#[rustfmt::skip]
const COEF: [[f32; 16]; 6] = [
    [-5.8635383e-08, 0.4041169, 0.6232409, 0.7840751, 0.8883882, 0.94817007, 0.97844374, 0.99199003, 0.997346, 0.99921703, 0.9997946, 0.99995214, 0.9999901, 0.9999982, 0.9999997, 0.99999994],
    [-0.37612617, 0.98035276, 0.76349956, 0.52474505, 0.31827396, 0.17035978, 0.08047226, 0.033545826, 0.01234082, 0.0040064775, 0.0011478751, 0.0002902283, 6.4758686e-05, 1.2751741e-05, 2.2159202e-06, 3.3982238e-07],
    [0.112816066, -0.3676224, -0.47718477, -0.45916077, -0.35805255, -0.23424436, -0.13077332, -0.06288492, -0.02623074, -0.009500711, -0.0030018878, -0.0008303957, -0.00020350453, -5.6684825e-05, -6.576233e-06, 7.28933e-06],
    [-0.026252389, -0.23485203, -0.055682175, 0.092916474, 0.16245231, 0.15793815, 0.11484064, 0.067442566, 0.033037633, 0.013730618, 0.004890358, 0.0015024691, 0.00039998454, 9.2569535e-05, 1.8669885e-05, 3.2874514e-06],
    [0.0, 0.1651939, 0.17566839, 0.112792924, 0.027857708, -0.030174969, -0.049120676, -0.043047573, -0.025979172, -0.014106831, -0.006160836, -0.0021524315, -0.0004931379, 0.0007165265, -0.00012364144, -0.00054882694],
    [0.0, 0.043787874, -0.026586218, -0.06642459, -0.061210666, -0.030668166, -0.0022307297, 0.011299625, 0.012454004, 0.008354463, 0.0042325417, 0.0017255647, 0.00058327726, 0.00016619355, 4.0320807e-05, 8.398453e-06],
];

/// Loads the 16-entry table `t`.
///
/// # Safety
/// The CPU must support AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn table(t: &[f32; 16]) -> __m512 {
    // SAFETY: `t` holds 16 floats; the load is unaligned.
    unsafe { _mm512_loadu_ps(t.as_ptr()) }
}

/// erf of 16 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn erf16(x: __m512, cen: __m512, co: &[__m512; 6]) -> __m512 {
    let sign = _mm512_set1_ps(-0.0);
    let a = _mm512_abs_ps(x);
    // min returns its second operand for NaN, so NaN lanes stay NaN.
    let ac = _mm512_min_ps(_mm512_set1_ps(CLAMP), a);
    let idx = _mm512_cvttps_epi32(_mm512_mul_ps(ac, _mm512_set1_ps(4.0)));
    let first = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(ac, _mm512_set1_ps(0.25));
    let u = _mm512_sub_ps(ac, _mm512_permutexvar_ps(idx, cen));
    let u = _mm512_mask_mul_ps(u, first, u, u);
    let mut p = _mm512_permutexvar_ps(idx, co[5]);
    for c in co[..5].iter().rev() {
        p = _mm512_fmadd_ps(p, u, _mm512_permutexvar_ps(idx, *c));
    }
    // Piece 0: a C0_HI + a P with one rounding at the end.
    let ap = _mm512_mask_mul_ps(p, first, a, p);
    let r = _mm512_mask3_fmadd_ps(a, _mm512_set1_ps(C0_HI), ap, first);
    // Copy the sign of x (bit select: sign from x, the rest from r).
    _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xB8>(
        _mm512_castps_si512(r),
        _mm512_castps_si512(sign),
        _mm512_castps_si512(x),
    ))
}

/// `y = erf(x)` on float32 slices of equal length.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn erf_avx512(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    // SAFETY: AVX-512F is enabled for this function; loads and stores stay inside the slices
    // (the tail is masked).
    unsafe {
        let cen = table(&CENTRE);
        let co = [table(&COEF[0]), table(&COEF[1]), table(&COEF[2]), table(&COEF[3]), table(&COEF[4]), table(&COEF[5])];
        let n = x.len();
        let mut i = 0;
        while i + 16 <= n {
            let v = _mm512_loadu_ps(x.as_ptr().add(i));
            _mm512_storeu_ps(y.as_mut_ptr().add(i), erf16(v, cen, &co));
            i += 16;
        }
        if i < n {
            let m: __mmask16 = (1u32 << (n - i)).wrapping_sub(1) as __mmask16;
            let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), m, erf16(v, cen, &co));
        }
    }
}
