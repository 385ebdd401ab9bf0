//! float32 `e^x` of 8 AVX2 lanes: [`super::exp_log`]'s float32 exp written with intrinsics,
//! operation for operation, so it gives what the compiler-vectorised `exp_f32` gives on an
//! AVX2+FMA CPU, for loops the compiler does not vectorise on its own.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::exp_log::{EXP_P, LN2_HI_32, LN2_LO_32, ROUND_MAGIC_32, SCALE_DOWN_BITS, SCALE_UP_BITS};

/// `e^x` of 8 lanes: clamped to [-104, 100] (NaN passes), reduced by `k ln2`, the polynomial,
/// then scaled by `2^k` in two exponent-bit steps so it rounds once into the subnormal range.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) fn exp8(x: __m256) -> __m256 {
    // max/min return their second operand when one is NaN, so NaN lanes stay NaN.
    let x = _mm256_min_ps(_mm256_set1_ps(100.0), _mm256_max_ps(_mm256_set1_ps(-104.0), x));
    let t = _mm256_fmadd_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E), _mm256_set1_ps(ROUND_MAGIC_32));
    let kf = _mm256_sub_ps(t, _mm256_set1_ps(ROUND_MAGIC_32));
    let r = _mm256_fmadd_ps(kf, _mm256_set1_ps(-LN2_HI_32), x);
    let r = _mm256_fmadd_ps(kf, _mm256_set1_ps(-LN2_LO_32), r);
    let mut q = _mm256_set1_ps(EXP_P[5]);
    for c in EXP_P[..5].iter().rev() {
        q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(*c));
    }
    let neg = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps()));
    let (down, up) = (_mm256_set1_epi32(SCALE_DOWN_BITS as i32), _mm256_set1_epi32(SCALE_UP_BITS as i32));
    let s2 = _mm256_blendv_epi8(up, down, neg);
    let s1 = _mm256_sub_epi32(_mm256_slli_epi32::<23>(_mm256_castps_si256(t)), s2);
    let m = _mm256_fmadd_ps(r, q, _mm256_set1_ps(1.0));
    _mm256_mul_ps(_mm256_mul_ps(m, _mm256_castsi256_ps(s1)), _mm256_castsi256_ps(s2))
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::dispatch::Avx2;
    use crate::isa::{detected, Isa};
    use crate::math::exp_log::exp_f32;

    #[test]
    fn exp8_equals_the_portable_exp_bit_for_bit() {
        if detected() < Isa::Avx2Fma {
            return;
        }
        let mut xs: Vec<f32> = (-1100..=1100).map(|i| i as f32 * 0.1 + 0.013).collect();
        xs.extend([0.0, -0.0, 1e-30, -1e-30, -87.5, -103.9, -150.0, 88.8, 99.0, 120.0]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE]);
        while !xs.len().is_multiple_of(8) {
            xs.push(0.5);
        }
        for ch in xs.chunks_exact(8) {
            let mut got = [0.0f32; 8];
            // SAFETY: the CPU has AVX2 and FMA (checked above); 8 elements each.
            unsafe { _mm256_storeu_ps(got.as_mut_ptr(), exp8(_mm256_loadu_ps(ch.as_ptr()))) };
            for (x, g) in ch.iter().zip(got) {
                // `mul_add` is fused on every target, so this is the AVX2 path's arithmetic.
                let want = exp_f32::<Avx2>(*x);
                assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "exp({x}) = {g}, want {want}");
            }
        }
    }
}
