//! Ascend FastGelu, `x / (1 + e^(-1.702|x|)) e^(0.851 (x - |x|))`, to the accuracy of a
//! 16-bit result, for AVX-512: the compiler uses it where the float32 value is rounded to
//! float16 or bfloat16 straight away (`precision="fp16"` layers). A degree-5 Taylor polynomial
//! for `e^r` on the reduced range (error below 2^-18) and `vrcp14ps` with one Newton step for
//! the reciprocal give a relative error below 2^-17 (a float16 ulp is 2^-10 of the value's power
//! of two), so the rounded result is within one float16 ulp of the exact value and equal to its
//! correct rounding unless the exact value lies within 2^-17 of a rounding boundary; the float32
//! kernel pays for a float32-exact exponential and a division. Special values follow the float32 kernel: NaN stays NaN, `+inf` gives `+inf`,
//! `-inf` gives NaN (`-inf * 0`), `-0` gives `-0`.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Taylor coefficients of `e^r` after the leading 1, for |r| <= ln2 / 2 (error below 2^-18).
const P: [f32; 5] = [1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0];

/// 16 lanes of FastGelu with a relative error below 2^-17.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn fast_gelu16(x: __m512) -> __m512 {
    let a = _mm512_abs_ps(x);
    // z = -1.702 |x| clamped to -104 (e^z is 0 below it, so -inf * 0 gives NaN as the
    // formula); max returns its second operand for NaN, so NaN stays NaN.
    let z = _mm512_max_ps(_mm512_set1_ps(-104.0), _mm512_mul_ps(a, _mm512_set1_ps(-1.702)));
    let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
        z,
        _mm512_set1_ps(std::f32::consts::LOG2_E),
    ));
    let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(std::f32::consts::LN_2), z);
    let mut q = _mm512_set1_ps(P[4]);
    for c in P[..4].iter().rev() {
        q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(*c));
    }
    let e = _mm512_scalef_ps(_mm512_fmadd_ps(r, q, _mm512_set1_ps(1.0)), k);
    // vrcp14ps is within 2^-14 of 1 / d; one Newton step, s (2 - d s), brings it to 2^-27.
    let d = _mm512_add_ps(_mm512_set1_ps(1.0), e);
    let s0 = _mm512_rcp14_ps(d);
    let s = _mm512_mul_ps(s0, _mm512_fnmadd_ps(d, s0, _mm512_set1_ps(2.0)));
    // x >= 0: x s; x < 0: x e s.
    let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_setzero_ps());
    let f = _mm512_mask_mul_ps(s, neg, s, e);
    _mm512_mul_ps(x, f)
}

/// `y = fast_gelu(x)` to 16-bit accuracy on float32 slices of equal length.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn fast_gelu_half_avx512(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    let n = x.len();
    let mut i = 0;
    // SAFETY: loads and stores stay inside the slices (the tail is masked).
    unsafe {
        while i + 16 <= n {
            _mm512_storeu_ps(y.as_mut_ptr().add(i), fast_gelu16(_mm512_loadu_ps(x.as_ptr().add(i))));
            i += 16;
        }
        if i < n {
            let m: __mmask16 = ((1u32 << (n - i)) - 1) as __mmask16;
            let v = _mm512_maskz_loadu_ps(m, x.as_ptr().add(i));
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), m, fast_gelu16(v));
        }
    }
}
