//! In-register prefix sums for float32 and float64 line scans, chosen at run time: AVX-512
//! prefix-sums eight float64 lanes per vector (three shifted adds) and two vectors per step
//! (the second takes the first's total before the running value is added, so the running
//! value's chain is one add per sixteen elements); AVX2 four lanes (two shifted adds) per
//! step. float32 inputs are widened to float64 on load and each output is rounded once. The
//! AVX-512 float32 loop also carries the fused steps of [`crate::scan_map`] (applied to the
//! float32 lanes on load and after the rounding on store). float32 running maxima and minima
//! take the same in-register prefix on AVX-512 (sixteen lanes, NumPy's
//! compare-and-keep-the-first rule). Other ISAs take the portable loop of [`run_scalar`].

use crate::isa::{self, Isa};
use crate::scan::{run_scalar, Max, Min, Sum};
use crate::scan_map::Step;

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

/// The fused float32 scan of [`crate::scan_map::sum_map_f32`] (arguments checked there);
/// `None` unless the AVX-512 scan runs.
pub(crate) fn sum_map_f32(x: &[f32], out: &mut [f32], pre: &[Step], post: &[Step], r: f64) -> Option<f64> {
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active()` only reports ISAs the CPU supports; the lengths agree.
        Isa::Avx512 => Some(unsafe { avx512::pick_map(x.as_ptr(), out.as_mut_ptr(), x.len(), pre, post, r) }),
        _ => None,
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

/// The tail of a segment, one element at a time, continuing the running value `r`; with
/// `MAP`, float32 elements pass through the first of `steps` before the sum and outputs
/// through the second.
///
/// # Safety
/// `x` (and `out` when `STORE`) must hold elements `i..n`; `MAP` only with `F32`.
#[inline(always)]
unsafe fn tail<const F32: bool, const STORE: bool, const CARRY: bool, const MAP: bool>(
    x: *const u8,
    out: *mut u8,
    mut i: usize,
    n: usize,
    carry: f64,
    mut r: f64,
    (pre, post): (&[Step], &[Step]),
) -> f64 {
    while i < n {
        // SAFETY: per the contract, `i < n`.
        unsafe {
            if MAP {
                r += pre.iter().fold(*x.cast::<f32>().add(i), |v, s| s.apply(v)) as f64;
                let y = post.iter().fold((if CARRY { carry + r } else { r }) as f32, |v, s| s.apply(v));
                *out.cast::<f32>().add(i) = y;
            } else {
                r += read::<F32>(x, i);
                if STORE {
                    write::<F32>(out, i, if CARRY { carry + r } else { r });
                }
            }
        }
        i += 1;
    }
    r
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::tail;
    use crate::scan_map::{Step, MAX_STEPS};
    use pyasc_ir::op::BinaryOp;
    use std::arch::x86_64::*;

    /// Lanes of `v` moved up by `8 - IMM`, the lowest filled from `fill`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    fn up<const IMM: i32>(v: __m512d, fill: __m512d) -> __m512d {
        _mm512_castsi512_pd(_mm512_alignr_epi64::<IMM>(_mm512_castpd_si512(v), _mm512_castpd_si512(fill)))
    }

    /// The running sums of the eight lanes of `v` (`fill` is -0.0 in every lane).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    fn prefix(v: __m512d, fill: __m512d) -> __m512d {
        let v = _mm512_add_pd(v, up::<7>(v, fill));
        let v = _mm512_add_pd(v, up::<6>(v, fill));
        _mm512_add_pd(v, up::<4>(v, fill))
    }

    /// One fused step in vector form: the operand broadcast, and its float64 reciprocal.
    #[derive(Copy, Clone)]
    struct VStep {
        op: BinaryOp,
        swap: bool,
        c: __m256,
        recip: __m512d,
    }

    /// The fused steps of a scan in vector form, with the scalar steps for the tail.
    pub(super) struct Map<'a> {
        pre: [VStep; MAX_STEPS],
        post: [VStep; MAX_STEPS],
        lens: (usize, usize),
        steps: (&'a [Step], &'a [Step]),
    }

    impl<'a> Map<'a> {
        /// The vector form of `pre` and `post` (at most [`MAX_STEPS`] each).
        #[inline]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
        fn new(pre: &'a [Step], post: &'a [Step]) -> Self {
            let none = VStep { op: BinaryOp::Add, swap: false, c: _mm256_setzero_ps(), recip: _mm512_setzero_pd() };
            let vector = |steps: &[Step]| {
                let mut v = [none; MAX_STEPS];
                for (d, s) in v.iter_mut().zip(steps) {
                    let recip = _mm512_set1_pd(1.0 / s.arg as f64);
                    *d = VStep { op: s.op, swap: s.swap, c: _mm256_set1_ps(s.arg), recip };
                }
                v
            };
            Map { pre: vector(pre), post: vector(post), lens: (pre.len(), post.len()), steps: (pre, post) }
        }
    }

    /// `s` applied to eight float32 lanes, rounded as the elementwise kernels round. A
    /// division by the scalar multiplies by its float64 reciprocal, which is the correctly
    /// rounded quotient unless that is subnormal (see the binary kernels' division by a
    /// scalar): lanes where a nonzero dividend gives a zero or subnormal product are flagged
    /// in `slow`, and the caller redoes the segment with `EXACT` (true division).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    fn apply<const EXACT: bool>(s: &VStep, v: __m256, slow: &mut __mmask8) -> __m256 {
        match (s.op, s.swap) {
            (BinaryOp::Add, false) => _mm256_add_ps(v, s.c),
            (BinaryOp::Add, true) => _mm256_add_ps(s.c, v),
            (BinaryOp::Sub, false) => _mm256_sub_ps(v, s.c),
            (BinaryOp::Sub, true) => _mm256_sub_ps(s.c, v),
            (BinaryOp::Mul, false) => _mm256_mul_ps(v, s.c),
            (BinaryOp::Mul, true) => _mm256_mul_ps(s.c, v),
            (_, false) if EXACT => _mm256_div_ps(v, s.c),
            (_, false) => {
                let q = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(v), s.recip));
                let nonzero = _mm256_cmp_ps_mask::<_CMP_NEQ_UQ>(v, _mm256_setzero_ps());
                // Class bits: +0 (0x02), -0 (0x04), subnormal (0x20).
                *slow |= _mm256_mask_fpclass_ps_mask::<0x26>(nonzero, q);
                q
            }
            (_, true) => _mm256_div_ps(s.c, v),
        }
    }

    /// Elements `i..i + 8` as float64 (float32 ones through the map's first steps with `MAP`).
    ///
    /// # Safety
    /// AVX-512F; `x` holds those elements (float32 when `F32`, else float64).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn load<const F32: bool, const MAP: bool, const EXACT: bool>(
        x: *const u8,
        i: usize,
        m: &Map<'_>,
        slow: &mut __mmask8,
    ) -> __m512d {
        // SAFETY: per the contract.
        unsafe {
            if F32 {
                let mut v = _mm256_loadu_ps(x.cast::<f32>().add(i));
                if MAP {
                    for s in &m.pre[..m.lens.0] {
                        v = apply::<EXACT>(s, v, slow);
                    }
                }
                _mm512_cvtps_pd(v)
            } else {
                _mm512_loadu_pd(x.cast::<f64>().add(i))
            }
        }
    }

    /// Stores `lanes` (plus `carry` when `CARRY`) to elements `i..i + 8` (float32 ones through
    /// the map's last steps with `MAP`).
    ///
    /// # Safety
    /// AVX-512F; `out` holds those elements (float32 when `F32`, else float64).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn store<const F32: bool, const CARRY: bool, const MAP: bool, const EXACT: bool>(
        out: *mut u8,
        i: usize,
        lanes: __m512d,
        carry: __m512d,
        m: &Map<'_>,
        slow: &mut __mmask8,
    ) {
        let w = if CARRY { _mm512_add_pd(carry, lanes) } else { lanes };
        // SAFETY: per the contract.
        unsafe {
            if F32 {
                let mut y = _mm512_cvtpd_ps(w);
                if MAP {
                    for s in &m.post[..m.lens.1] {
                        y = apply::<EXACT>(s, y, slow);
                    }
                }
                _mm256_storeu_ps(out.cast::<f32>().add(i), y);
            } else {
                _mm512_storeu_pd(out.cast::<f64>().add(i), w);
            }
        }
    }

    /// The segment scan; `out` null when nothing is stored.
    ///
    /// # Safety
    /// AVX-512F; `x` (and `out`, when given) hold `n` elements.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    pub(super) unsafe fn pick<const F32: bool>(
        x: *const u8,
        out: Option<*mut u8>,
        n: usize,
        carry: Option<f64>,
        r: f64,
    ) -> f64 {
        let m = Map::new(&[], &[]);
        // SAFETY: per the contract.
        unsafe {
            match (out, carry) {
                (None, _) => run::<F32, false, false, false, false>(x, std::ptr::null_mut(), n, 0.0, r, &m).0,
                (Some(o), None) => run::<F32, true, false, false, false>(x, o, n, 0.0, r, &m).0,
                (Some(o), Some(c)) => run::<F32, true, true, false, false>(x, o, n, c, r, &m).0,
            }
        }
    }

    /// The float32 segment scan with `pre` and `post` fused.
    ///
    /// # Safety
    /// AVX-512F; `x` and `out` hold `n` elements; at most [`MAX_STEPS`] steps on each side.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    pub(super) unsafe fn pick_map(x: *const f32, out: *mut f32, n: usize, pre: &[Step], post: &[Step], r: f64) -> f64 {
        let m = Map::new(pre, post);
        // SAFETY: per the contract.
        unsafe {
            let (total, slow) = run::<true, true, false, true, false>(x.cast(), out.cast(), n, 0.0, r, &m);
            if slow == 0 {
                return total;
            }
            // A quotient was subnormal: the segment again, dividing.
            run::<true, true, false, true, true>(x.cast(), out.cast(), n, 0.0, r, &m).0
        }
    }

    /// The segment scan's loop; returns the running value and the lanes of a fast division
    /// that need the exact one (see [`apply`]).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn run<const F32: bool, const STORE: bool, const CARRY: bool, const MAP: bool, const EXACT: bool>(
        x: *const u8,
        out: *mut u8,
        n: usize,
        carry: f64,
        r: f64,
        m: &Map<'_>,
    ) -> (f64, __mmask8) {
        let mut slow: __mmask8 = 0;
        let fill = _mm512_set1_pd(-0.0);
        let last = _mm512_set1_epi64(7);
        let cv = _mm512_set1_pd(carry);
        let mut rv = _mm512_set1_pd(r);
        let mut i = 0;
        // Two vectors a step: the second's prefix takes the first's total before the running
        // value is added, so the running value's chain has one add per sixteen elements.
        while i + 16 <= n {
            // SAFETY: elements i..i + 16 are inside the segment.
            let (v0, v1) = unsafe {
                (load::<F32, MAP, EXACT>(x, i, m, &mut slow), load::<F32, MAP, EXACT>(x, i + 8, m, &mut slow))
            };
            let (p0, p1) = (prefix(v0, fill), prefix(v1, fill));
            let q1 = _mm512_add_pd(p1, _mm512_permutexvar_pd(last, p0));
            let (l0, l1) = (_mm512_add_pd(rv, p0), _mm512_add_pd(rv, q1));
            rv = _mm512_add_pd(rv, _mm512_permutexvar_pd(last, q1));
            if STORE {
                // SAFETY: as for the loads.
                unsafe {
                    store::<F32, CARRY, MAP, EXACT>(out, i, l0, cv, m, &mut slow);
                    store::<F32, CARRY, MAP, EXACT>(out, i + 8, l1, cv, m, &mut slow);
                }
            }
            i += 16;
        }
        while i + 8 <= n {
            // SAFETY: elements i..i + 8 are inside the segment.
            let v = prefix(unsafe { load::<F32, MAP, EXACT>(x, i, m, &mut slow) }, fill);
            let lanes = _mm512_add_pd(rv, v);
            rv = _mm512_add_pd(rv, _mm512_permutexvar_pd(last, v));
            if STORE {
                // SAFETY: as for the load.
                unsafe { store::<F32, CARRY, MAP, EXACT>(out, i, lanes, cv, m, &mut slow) };
            }
            i += 8;
        }
        // SAFETY: the rest of the segment.
        let total = unsafe { tail::<F32, STORE, CARRY, MAP>(x, out, i, n, carry, _mm512_cvtsd_f64(rv), m.steps) };
        (total, slow)
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
        unsafe { tail::<F32, STORE, CARRY, false>(x, out, i, n, carry, _mm256_cvtsd_f64(rv), (&[], &[])) }
    }
}
