//! float32 `e^x` for AVX-512: the reduction and polynomial of [`super::exp_log`]'s float32
//! exp, with the scaling by `2^k` done by `vscalefps`, which rounds once (also into the
//! subnormal range) and overflows to infinity on its own, so no exponent-field arithmetic and
//! no second scale factor are needed.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::exp_log::{EXP_P, LN2_HI_32, LN2_LO_32};

/// `e^x` of 16 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn exp16(x: __m512) -> __m512 {
    // Beyond [-104, 100] the result is 0 or +inf anyway; min/max return their second operand
    // for NaN, so NaN lanes stay NaN.
    let x = _mm512_max_ps(_mm512_set1_ps(-104.0), _mm512_min_ps(_mm512_set1_ps(100.0), x));
    let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
        x,
        _mm512_set1_ps(std::f32::consts::LOG2_E),
    ));
    // Exact: k * LN2_HI_32 fits in 24 bits and lies within a factor 2 of x.
    let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(LN2_HI_32), x);
    let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(LN2_LO_32), r);
    let mut q = _mm512_set1_ps(EXP_P[5]);
    for c in EXP_P[..5].iter().rev() {
        q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(*c));
    }
    _mm512_scalef_ps(_mm512_fmadd_ps(r, q, _mm512_set1_ps(1.0)), k)
}

/// `y = e^x` on float32 slices of equal length.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn exp_avx512(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    let n = x.len();
    let mut i = 0;
    // SAFETY: loads and stores stay inside the slices (the tail is masked).
    unsafe {
        while i + 16 <= n {
            _mm512_storeu_ps(y.as_mut_ptr().add(i), exp16(_mm512_loadu_ps(x.as_ptr().add(i))));
            i += 16;
        }
        if i < n {
            let m: __mmask16 = ((1u32 << (n - i)) - 1) as __mmask16;
            let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), m, exp16(v));
        }
    }
}
