//! Conversions between 16-bit floats (IEEE float16, bfloat16) and float32, in bulk.
//!
//! Every path gives the same bits: float32 -> 16-bit rounds to nearest even (ties to even,
//! subnormals kept, values past the largest finite one become infinity), 16-bit -> float32 is
//! exact, and a NaN stays a NaN of the same sign with its payload's upper bits kept and its
//! quiet bit set (as the F16C instructions do). Paths, chosen per call from [`isa::active`]:
//! - AVX-512: `vcvtph2ps` / `vcvtps2ph` for float16; for bfloat16 `vcvtneps2bf16` where the
//!   CPU has AVX-512 BF16 (vectors holding a subnormal, which it reads as zero, take the
//!   integer rounding) and integer rounding elsewhere, 16 lanes;
//! - AVX2 with F16C: the same at 8 lanes;
//! - elsewhere (and under `PYASC_ISA=sse2|scalar`): one element at a time in portable code.

use crate::isa::{self, Isa};

/// The bits of `x` rounded to the nearest bfloat16 (ties to even; NaN kept and quieted).
#[inline]
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x0040) as u16;
    }
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

/// The float32 value of bfloat16 bits `h` (exact; a NaN is quieted).
#[inline]
pub fn bf16_value(h: u16) -> f32 {
    let b = (h as u32) << 16;
    let nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0;
    f32::from_bits(if nan { b | 0x0040_0000 } else { b })
}

/// The bits of `x` rounded to the nearest float16 (portable code).
#[inline]
pub fn f16_bits(x: f32) -> u16 {
    half::f16::from_f32_const(x).to_bits()
}

/// The float32 value of float16 bits `h` (portable code).
#[inline]
pub fn f16_value(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32_const()
}

/// `dst[i] = float32(src[i])` for float16 bits `src`.
///
/// # Panics
/// If the slices differ in length.
pub fn f16_to_f32(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "conversion lengths differ");
    #[cfg(target_arch = "x86_64")]
    match isa::active() {
        // SAFETY: the active ISA is one this CPU runs (AVX-512F includes the conversions).
        Isa::Avx512 => return unsafe { x86::f16_to_f32_512(src, dst) },
        // SAFETY: F16C checked at run time.
        Isa::Avx2Fma if std::arch::is_x86_feature_detected!("f16c") => return unsafe { x86::f16_to_f32_256(src, dst) },
        _ => {}
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f16_value(*s);
    }
}

/// `dst[i] = float16(src[i])` (bits), rounded to nearest even.
///
/// # Panics
/// If the slices differ in length.
pub fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len(), "conversion lengths differ");
    #[cfg(target_arch = "x86_64")]
    match isa::active() {
        // SAFETY: as in `f16_to_f32`.
        Isa::Avx512 => return unsafe { x86::f32_to_f16_512(src, dst) },
        // SAFETY: F16C checked at run time.
        Isa::Avx2Fma if std::arch::is_x86_feature_detected!("f16c") => return unsafe { x86::f32_to_f16_256(src, dst) },
        _ => {}
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f16_bits(*s);
    }
}

/// `dst[i] = float32(src[i])` for bfloat16 bits `src`.
///
/// # Panics
/// If the slices differ in length.
pub fn bf16_to_f32(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "conversion lengths differ");
    #[cfg(target_arch = "x86_64")]
    match isa::active() {
        // SAFETY: the active ISA is one this CPU runs.
        Isa::Avx512 => return unsafe { x86::bf16_to_f32_512(src, dst) },
        // SAFETY: as above.
        Isa::Avx2Fma => return unsafe { x86::bf16_to_f32_256(src, dst) },
        _ => {}
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = bf16_value(*s);
    }
}

/// `dst[i] = bfloat16(src[i])` (bits), rounded to nearest even.
///
/// # Panics
/// If the slices differ in length.
pub fn f32_to_bf16(src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len(), "conversion lengths differ");
    #[cfg(target_arch = "x86_64")]
    match isa::active() {
        // SAFETY: the active ISA is one this CPU runs.
        Isa::Avx512 if std::arch::is_x86_feature_detected!("avx512bf16") => {
            // SAFETY: AVX-512 BF16 checked at run time (AVX-512F by the active ISA).
            return unsafe { x86::f32_to_bf16_512bf16(src, dst) };
        }
        // SAFETY: the active ISA is one this CPU runs.
        Isa::Avx512 => return unsafe { x86::f32_to_bf16_512(src, dst) },
        // SAFETY: as above.
        Isa::Avx2Fma => return unsafe { x86::f32_to_bf16_256(src, dst) },
        _ => {}
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = bf16_bits(*s);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The vector bodies; each ends with the portable code for the last partial vector.

    use super::{bf16_bits, bf16_value, f16_bits, f16_value};
    use std::arch::x86_64::*;

    const RNE: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

    #[target_feature(enable = "avx512f")]
    pub unsafe fn f16_to_f32_512(src: &[u16], dst: &mut [f32]) {
        let n = src.len() / 16 * 16;
        for i in (0..n).step_by(16) {
            // SAFETY: i + 16 <= n <= len of both slices.
            unsafe {
                let h = _mm256_loadu_si256(src.as_ptr().add(i) as *const __m256i);
                _mm512_storeu_ps(dst.as_mut_ptr().add(i), _mm512_cvtph_ps(h));
            }
        }
        for i in n..src.len() {
            dst[i] = f16_value(src[i]);
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn f32_to_f16_512(src: &[f32], dst: &mut [u16]) {
        let n = src.len() / 16 * 16;
        for i in (0..n).step_by(16) {
            // SAFETY: as above.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, _mm512_cvtps_ph::<RNE>(x));
            }
        }
        for i in n..src.len() {
            dst[i] = f16_bits(src[i]);
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn f16_to_f32_256(src: &[u16], dst: &mut [f32]) {
        let n = src.len() / 8 * 8;
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for i in n..src.len() {
            dst[i] = f16_value(src[i]);
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn f32_to_f16_256(src: &[f32], dst: &mut [u16]) {
        let n = src.len() / 8 * 8;
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n.
            unsafe {
                let x = _mm256_loadu_ps(src.as_ptr().add(i));
                _mm_storeu_si128(
                    dst.as_mut_ptr().add(i) as *mut __m128i,
                    _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x),
                );
            }
        }
        for i in n..src.len() {
            dst[i] = f16_bits(src[i]);
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn bf16_to_f32_512(src: &[u16], dst: &mut [f32]) {
        let n = src.len() / 16 * 16;
        let (exp, quiet) = (_mm512_set1_epi32(0x7F80_0000), _mm512_set1_epi32(0x0040_0000));
        for i in (0..n).step_by(16) {
            // SAFETY: i + 16 <= n.
            unsafe {
                let h = _mm256_loadu_si256(src.as_ptr().add(i) as *const __m256i);
                let b = _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h));
                // NaN: all exponent bits and a non-zero mantissa, i.e. |b| > infinity.
                let abs = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFF_FFFF));
                let nan = _mm512_cmpgt_epi32_mask(abs, exp);
                let b = _mm512_mask_or_epi32(b, nan, b, quiet);
                _mm512_storeu_si512(dst.as_mut_ptr().add(i) as *mut __m512i, b);
            }
        }
        for i in n..src.len() {
            dst[i] = bf16_value(src[i]);
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn f32_to_bf16_512(src: &[f32], dst: &mut [u16]) {
        let n = src.len() / 16 * 16;
        let (one, bias) = (_mm512_set1_epi32(1), _mm512_set1_epi32(0x7FFF));
        for i in (0..n).step_by(16) {
            // SAFETY: i + 16 <= n.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                let b = _mm512_castps_si512(x);
                let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(b), one);
                let r = _mm512_srli_epi32::<16>(_mm512_add_epi32(_mm512_add_epi32(b, bias), odd));
                let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
                let q = _mm512_or_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(0x40));
                let r = _mm512_mask_mov_epi32(r, nan, q);
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, _mm512_cvtepi32_epi16(r));
            }
        }
        for i in n..src.len() {
            dst[i] = bf16_bits(src[i]);
        }
    }

    /// `vcvtneps2bf16` rounds to nearest even and quiets NaNs as [`bf16_bits`] does, but
    /// reads subnormal inputs as zero: a vector holding one goes through the integer path.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512bf16")]
    pub unsafe fn f32_to_bf16_512bf16(src: &[f32], dst: &mut [u16]) {
        let n = src.len() / 16 * 16;
        for i in (0..n).step_by(16) {
            // SAFETY: i + 16 <= n.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                // fpclass 0x20: denormal.
                if _mm512_fpclass_ps_mask::<0x20>(x) != 0 {
                    f32_to_bf16_512(&src[i..i + 16], &mut dst[i..i + 16]);
                    continue;
                }
                let h: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(x));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, h);
            }
        }
        for i in n..src.len() {
            dst[i] = bf16_bits(src[i]);
        }
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn bf16_to_f32_256(src: &[u16], dst: &mut [f32]) {
        let n = src.len() / 8 * 8;
        let (exp, quiet) = (_mm256_set1_epi32(0x7F80_0000), _mm256_set1_epi32(0x0040_0000));
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
                let b = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
                let abs = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFF_FFFF));
                let nan = _mm256_cmpgt_epi32(abs, exp);
                let b = _mm256_or_si256(b, _mm256_and_si256(nan, quiet));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, b);
            }
        }
        for i in n..src.len() {
            dst[i] = bf16_value(src[i]);
        }
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn f32_to_bf16_256(src: &[f32], dst: &mut [u16]) {
        let n = src.len() / 8 * 8;
        let (one, bias) = (_mm256_set1_epi32(1), _mm256_set1_epi32(0x7FFF));
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n.
            unsafe {
                let x = _mm256_loadu_ps(src.as_ptr().add(i));
                let b = _mm256_castps_si256(x);
                let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(b), one);
                let r = _mm256_srli_epi32::<16>(_mm256_add_epi32(_mm256_add_epi32(b, bias), odd));
                let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
                let q = _mm256_or_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(0x40));
                let r = _mm256_blendv_epi8(r, q, nan);
                // Pack the low 16 bits of 8 lanes: values fit u16, so an unsigned saturating
                // pack keeps them; the pack works per 128-bit half, then the halves are joined.
                let p = _mm256_packus_epi32(r, r);
                let p = _mm256_permute4x64_epi64::<0b1000>(p);
                _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, _mm256_castsi256_si128(p));
            }
        }
        for i in n..src.len() {
            dst[i] = bf16_bits(src[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer AVX-512 rounding, which CPUs with AVX-512 BF16 only use for vectors holding
    /// a subnormal, on every bfloat16 pattern's neighbourhood.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn integer_avx512_rounding_matches_on_cpus_with_avx512_bf16_too() {
        if !std::arch::is_x86_feature_detected!("avx512bw") {
            return;
        }
        let x: Vec<f32> = (0..=u16::MAX)
            .flat_map(|h| [0u32, 1, 0x7FFF, 0x8000, 0x8001].map(move |d| f32::from_bits(((h as u32) << 16) | d)))
            .collect();
        let mut h = vec![0u16; x.len()];
        // SAFETY: AVX-512 F/BW checked above.
        unsafe { x86::f32_to_bf16_512(&x, &mut h) };
        for (a, b) in x.iter().zip(&h) {
            assert_eq!(*b, bf16_bits(*a), "{:#x}", a.to_bits());
        }
    }

    #[test]
    fn portable_rounding_matches_the_definition() {
        // Ties go to even, one past a tie rounds up, overflow goes to infinity.
        assert_eq!(bf16_bits(f32::from_bits(0x3F80_8000)), 0x3F80);
        assert_eq!(bf16_bits(f32::from_bits(0x3F81_8000)), 0x3F82);
        assert_eq!(bf16_bits(f32::from_bits(0x3F80_8001)), 0x3F81);
        assert_eq!(bf16_bits(f32::MAX), 0x7F80);
        assert_eq!(bf16_bits(-f32::MAX), 0xFF80);
        // The smallest subnormal survives; NaN payloads keep their top bits and get quieted.
        assert_eq!(bf16_bits(f32::from_bits(0x0001_0000)), 0x0001);
        assert_eq!(bf16_bits(f32::from_bits(0xFF81_2345)), 0xFFC1);
        assert_eq!(bf16_value(0x7F81).to_bits(), 0x7FC1_0000);
        assert_eq!(f16_bits(65520.0), 0x7C00);
        assert_eq!(f16_bits(65519.99), 0x7BFF);
        assert_eq!(f16_bits(f32::from_bits(0x3300_0000)), 0x0000); // 2**-25: a tie, to even 0
        assert_eq!(f16_bits(f32::from_bits(0x3300_0001)), 0x0001);
        assert_eq!(f16_value(0x7C01).to_bits(), 0x7FC0_2000);
    }
}
