//! In-register prefix sums for float32 and float64 line scans, chosen at run time: AVX-512
//! prefix-sums eight float64 lanes per step (three shifted adds), AVX2 four (two); the running
//! value is one broadcast add per step, so the loop is bound by memory, not by the add
//! latency of a sequential loop. float32 inputs are widened to float64 on load and each
//! output is rounded once. float32 running maxima and minima take the same in-register prefix
//! on AVX-512 (sixteen lanes, NumPy's compare-and-keep-the-first rule). Other ISAs take the
//! portable loop of [`run_scalar`].

use crate::isa::{self, Isa};
use crate::scan::{run_scalar, Max, Min, Sum};

/// The float32 segment scan of [`Sum<f32>`](crate::scan::ScanOp::run).
pub(crate) fn sum_f32(x: &[f32], out: Option<&mut [f32]>, carry: Option<f64>, r: f64) -> f64 {
    if let Some(o) = &out {
        assert_eq!(o.len(), x.len(), "a scan's output is as long as its input");
    }
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active()` only reports ISAs the CPU supports; the lengths agree.
        Isa::Avx512 => unsafe {
            avx512::pick::<true>(x.as_ptr().cast(), out.map(|o| o.as_mut_ptr().cast()), x.len(), carry, r)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe {
            avx2::pick::<true>(x.as_ptr().cast(), out.map(|o| o.as_mut_ptr().cast()), x.len(), carry, r)
        },
        _ => run_scalar(Sum::<f32>::default(), x, out, carry, r),
    }
}

/// The float64 segment scan of [`Sum<f64>`](crate::scan::ScanOp::run).
pub(crate) fn sum_f64(x: &[f64], out: Option<&mut [f64]>, carry: Option<f64>, r: f64) -> f64 {
    if let Some(o) = &out {
        assert_eq!(o.len(), x.len(), "a scan's output is as long as its input");
    }
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active()` only reports ISAs the CPU supports; the lengths agree.
        Isa::Avx512 => unsafe {
            avx512::pick::<false>(x.as_ptr().cast(), out.map(|o| o.as_mut_ptr().cast()), x.len(), carry, r)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe {
            avx2::pick::<false>(x.as_ptr().cast(), out.map(|o| o.as_mut_ptr().cast()), x.len(), carry, r)
        },
        _ => run_scalar(Sum::<f64>::default(), x, out, carry, r),
    }
}

/// The float32 segment scan of [`Max<f32>`](crate::scan::Max) (`MAX`) or
/// [`Min<f32>`](crate::scan::Min).
pub(crate) fn extreme_f32<const MAX: bool>(x: &[f32], out: Option<&mut [f32]>, carry: Option<f32>, r: f32) -> f32 {
    if let Some(o) = &out {
        assert_eq!(o.len(), x.len(), "a scan's output is as long as its input");
    }
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active()` only reports ISAs the CPU supports; the lengths agree.
        Isa::Avx512 => unsafe {
            avx512_extreme::extreme::<MAX>(x.as_ptr(), out.map(|o| o.as_mut_ptr()), x.len(), carry, r)
        },
        _ if MAX => run_scalar(Max::<f32>::default(), x, out, carry, r),
        _ => run_scalar(Min::<f32>::default(), x, out, carry, r),
    }
}

/// Reads element `i` (float32 when `F32`, else float64) as float64.
///
/// # Safety
/// `x` must hold element `i`.
#[inline(always)]
unsafe fn read<const F32: bool>(x: *const u8, i: usize) -> f64 {
    // SAFETY: per the contract.
    unsafe {
        if F32 {
            *x.cast::<f32>().add(i) as f64
        } else {
            *x.cast::<f64>().add(i)
        }
    }
}

/// Writes `v` (rounded to float32 when `F32`) to element `i`.
///
/// # Safety
/// `out` must hold element `i`.
#[inline(always)]
unsafe fn write<const F32: bool>(out: *mut u8, i: usize, v: f64) {
    // SAFETY: per the contract.
    unsafe {
        if F32 {
            *out.cast::<f32>().add(i) = v as f32;
        } else {
            *out.cast::<f64>().add(i) = v;
        }
    }
}

/// The tail of a segment, one element at a time, continuing the running value `r`.
///
/// # Safety
/// `x` (and `out` when `STORE`) must hold elements `i..n`.
#[inline(always)]
unsafe fn tail<const F32: bool, const STORE: bool, const CARRY: bool>(
    x: *const u8,
    out: *mut u8,
    mut i: usize,
    n: usize,
    carry: f64,
    mut r: f64,
) -> f64 {
    while i < n {
        // SAFETY: per the contract, `i < n`.
        unsafe {
            r += read::<F32>(x, i);
            if STORE {
                write::<F32>(out, i, if CARRY { carry + r } else { r });
            }
        }
        i += 1;
    }
    r
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::tail;
    use std::arch::x86_64::*;

    /// Lanes of `v` moved up by `8 - IMM`, the lowest filled from `fill`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn up<const IMM: i32>(v: __m512d, fill: __m512d) -> __m512d {
        _mm512_castsi512_pd(_mm512_alignr_epi64::<IMM>(_mm512_castpd_si512(v), _mm512_castpd_si512(fill)))
    }

    /// The segment scan; `out` null when nothing is stored.
    ///
    /// # Safety
    /// AVX-512F; `x` (and `out`, when given) hold `n` elements.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pick<const F32: bool>(
        x: *const u8,
        out: Option<*mut u8>,
        n: usize,
        carry: Option<f64>,
        r: f64,
    ) -> f64 {
        // SAFETY: per the contract.
        unsafe {
            match (out, carry) {
                (None, _) => run::<F32, false, false>(x, std::ptr::null_mut(), n, 0.0, r),
                (Some(o), None) => run::<F32, true, false>(x, o, n, 0.0, r),
                (Some(o), Some(c)) => run::<F32, true, true>(x, o, n, c, r),
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const F32: bool, const STORE: bool, const CARRY: bool>(
        x: *const u8,
        out: *mut u8,
        n: usize,
        carry: f64,
        r: f64,
    ) -> f64 {
        let fill = _mm512_set1_pd(-0.0);
        let last = _mm512_set1_epi64(7);
        let cv = _mm512_set1_pd(carry);
        let mut rv = _mm512_set1_pd(r);
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: elements i..i + 8 are inside the segment.
            let v = unsafe {
                if F32 {
                    _mm512_cvtps_pd(_mm256_loadu_ps(x.cast::<f32>().add(i)))
                } else {
                    _mm512_loadu_pd(x.cast::<f64>().add(i))
                }
            };
            let v = _mm512_add_pd(v, up::<7>(v, fill));
            let v = _mm512_add_pd(v, up::<6>(v, fill));
            let v = _mm512_add_pd(v, up::<4>(v, fill));
            let lanes = _mm512_add_pd(rv, v);
            rv = _mm512_add_pd(rv, _mm512_permutexvar_pd(last, v));
            if STORE {
                let w = if CARRY { _mm512_add_pd(cv, lanes) } else { lanes };
                // SAFETY: as for the load.
                unsafe {
                    if F32 {
                        _mm256_storeu_ps(out.cast::<f32>().add(i), _mm512_cvtpd_ps(w));
                    } else {
                        _mm512_storeu_pd(out.cast::<f64>().add(i), w);
                    }
                }
            }
            i += 8;
        }
        // SAFETY: the rest of the segment.
        unsafe { tail::<F32, STORE, CARRY>(x, out, i, n, carry, _mm512_cvtsd_f64(rv)) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512_extreme {
    use crate::scan::{Max, Min, ScanOp};
    use std::arch::x86_64::*;

    /// `a ⊕ b` lane by lane, `a` first in the line: NumPy's `maximum`/`minimum` (the first
    /// of equal values, NaN propagates).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pick<const MAX: bool>(a: __m512, b: __m512) -> __m512 {
        let keep = if MAX { _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b) } else { _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b) };
        _mm512_mask_blend_ps(keep | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a), b, a)
    }

    /// Lanes of `v` moved up by `16 - IMM`, the lowest filled from `fill`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn up<const IMM: i32>(v: __m512, fill: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_alignr_epi32::<IMM>(_mm512_castps_si512(v), _mm512_castps_si512(fill)))
    }

    #[inline(always)]
    fn scalar<const MAX: bool>(a: f32, b: f32) -> f32 {
        if MAX {
            Max::<f32>::default().combine(a, b)
        } else {
            Min::<f32>::default().combine(a, b)
        }
    }

    /// The segment scan.
    ///
    /// # Safety
    /// AVX-512F; `x` (and `out`, when given) hold `n` elements.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn extreme<const MAX: bool>(
        x: *const f32,
        out: Option<*mut f32>,
        n: usize,
        carry: Option<f32>,
        r: f32,
    ) -> f32 {
        let id = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        let fill = _mm512_set1_ps(id);
        let last = _mm512_set1_epi32(15);
        let cv = _mm512_set1_ps(carry.unwrap_or(id));
        let mut rv = _mm512_set1_ps(r);
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: elements i..i + 16 are inside the segment.
            let v = unsafe { _mm512_loadu_ps(x.add(i)) };
            let v = pick::<MAX>(up::<15>(v, fill), v);
            let v = pick::<MAX>(up::<14>(v, fill), v);
            let v = pick::<MAX>(up::<12>(v, fill), v);
            let v = pick::<MAX>(up::<8>(v, fill), v);
            let lanes = pick::<MAX>(rv, v);
            rv = _mm512_permutexvar_ps(last, lanes);
            if let Some(o) = out {
                let w = if carry.is_some() { pick::<MAX>(cv, lanes) } else { lanes };
                // SAFETY: as for the load.
                unsafe { _mm512_storeu_ps(o.add(i), w) };
            }
            i += 16;
        }
        let mut r = _mm512_cvtss_f32(rv);
        while i < n {
            // SAFETY: `i < n`.
            unsafe {
                r = scalar::<MAX>(r, *x.add(i));
                if let Some(o) = out {
                    *o.add(i) = match carry {
                        Some(c) => scalar::<MAX>(c, r),
                        None => r,
                    };
                }
            }
            i += 1;
        }
        r
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::tail;
    use std::arch::x86_64::*;

    /// The segment scan; `out` null when nothing is stored.
    ///
    /// # Safety
    /// AVX2; `x` (and `out`, when given) hold `n` elements.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pick<const F32: bool>(
        x: *const u8,
        out: Option<*mut u8>,
        n: usize,
        carry: Option<f64>,
        r: f64,
    ) -> f64 {
        // SAFETY: per the contract.
        unsafe {
            match (out, carry) {
                (None, _) => run::<F32, false, false>(x, std::ptr::null_mut(), n, 0.0, r),
                (Some(o), None) => run::<F32, true, false>(x, o, n, 0.0, r),
                (Some(o), Some(c)) => run::<F32, true, true>(x, o, n, c, r),
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn run<const F32: bool, const STORE: bool, const CARRY: bool>(
        x: *const u8,
        out: *mut u8,
        n: usize,
        carry: f64,
        r: f64,
    ) -> f64 {
        let fill = _mm256_set1_pd(-0.0);
        let cv = _mm256_set1_pd(carry);
        let mut rv = _mm256_set1_pd(r);
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: elements i..i + 4 are inside the segment.
            let v = unsafe {
                if F32 {
                    _mm256_cvtps_pd(_mm_loadu_ps(x.cast::<f32>().add(i)))
                } else {
                    _mm256_loadu_pd(x.cast::<f64>().add(i))
                }
            };
            // Lanes up by one (lane 0 from `fill`), then by two.
            let v = _mm256_add_pd(v, _mm256_blend_pd::<0b0001>(_mm256_permute4x64_pd::<0b10_01_00_00>(v), fill));
            let v = _mm256_add_pd(v, _mm256_permute2f128_pd::<0x02>(v, fill));
            let lanes = _mm256_add_pd(rv, v);
            rv = _mm256_add_pd(rv, _mm256_permute4x64_pd::<0xFF>(v));
            if STORE {
                let w = if CARRY { _mm256_add_pd(cv, lanes) } else { lanes };
                // SAFETY: as for the load.
                unsafe {
                    if F32 {
                        _mm_storeu_ps(out.cast::<f32>().add(i), _mm256_cvtpd_ps(w));
                    } else {
                        _mm256_storeu_pd(out.cast::<f64>().add(i), w);
                    }
                }
            }
            i += 4;
        }
        // SAFETY: the rest of the segment.
        unsafe { tail::<F32, STORE, CARRY>(x, out, i, n, carry, _mm256_cvtsd_f64(rv)) }
    }
}
