//! float32 vectors of the x86-64 ISA markers of [`crate::dispatch`]: [`SimdF32`] extends
//! [`Simd`] with a vector type and the few operations hand-vectorised kernels need, so such a
//! kernel is written once, generic over `S: SimdF32`, and instantiated for AVX2+FMA ([`Avx2`],
//! 8 lanes in a `__m256`) and AVX-512 ([`Avx512`], 16 lanes in a `__m512`).
//!
//! Every operation is `#[inline(always)]` and `unsafe`: it must be called, and gets inlined,
//! only inside a function compiled for the marker's ISA (`#[target_feature(enable = ...)]`),
//! so each instantiation is that ISA's instructions with nothing in between. Each operation is
//! one instruction (or the crate's vectorised `exp` of that ISA), so a kernel written over the
//! trait does the same arithmetic, rounding for rounding, as one written with the intrinsics.

use crate::dispatch::{Avx2, Avx512, Simd};
use crate::math::exp_avx2::exp8;
use crate::math::exp_avx512::exp16;
use std::arch::x86_64::*;

/// float32 vector operations of one ISA marker.
///
/// # Safety
/// Every method requires that the CPU supports the ISA of the marker (AVX2 and FMA for
/// [`Avx2`], AVX-512F for [`Avx512`]), and a pointer must address [`SimdF32::LANES`] valid
/// elements (any alignment).
pub(crate) trait SimdF32: Simd {
    /// The vector of [`SimdF32::LANES`] float32 values.
    type V: Copy;
    /// float32 lanes per vector.
    const LANES: usize;
    /// Every lane 0.
    unsafe fn zero() -> Self::V;
    /// Every lane `x`.
    unsafe fn splat(x: f32) -> Self::V;
    /// A load at any alignment.
    unsafe fn loadu(p: *const f32) -> Self::V;
    /// A store at any alignment.
    unsafe fn storeu(p: *mut f32, v: Self::V);
    /// `a + b`.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, rounded once.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// The lane-wise maximum as `maxps` gives it: `b` where either is NaN (or both are zeros).
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    /// `a` with 0 in the lanes where `a == b` (ordered: never where either is NaN).
    unsafe fn zero_where_eq(a: Self::V, b: Self::V) -> Self::V;
    /// `e^x` lane by lane: the crate's vectorised float32 `exp` of this ISA.
    unsafe fn exp(x: Self::V) -> Self::V;
}

impl SimdF32 for Avx2 {
    type V = __m256;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn loadu(p: *const f32) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA, 8 valid elements).
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn storeu(p: *mut f32, v: __m256) {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA, 8 valid elements).
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn max(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn zero_where_eq(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { _mm256_blendv_ps(a, _mm256_setzero_ps(), _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b)) }
    }
    #[inline(always)]
    unsafe fn exp(x: __m256) -> __m256 {
        // SAFETY: the caller holds the trait's contract (AVX2 and FMA).
        unsafe { exp8(x) }
    }
}

impl SimdF32 for Avx512 {
    type V = __m512;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn loadu(p: *const f32) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F, 16 valid elements).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn storeu(p: *mut f32, v: __m512) {
        // SAFETY: the caller holds the trait's contract (AVX-512F, 16 valid elements).
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn max(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn zero_where_eq(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { _mm512_mask_mov_ps(a, _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b), _mm512_setzero_ps()) }
    }
    #[inline(always)]
    unsafe fn exp(x: __m512) -> __m512 {
        // SAFETY: the caller holds the trait's contract (AVX-512F).
        unsafe { exp16(x) }
    }
}
