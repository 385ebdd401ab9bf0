//! AVX-512 float32 max/min of a row: four independent vector accumulators (the compare
//! latency would otherwise bound the loop) and a NaN mask collected alongside; and the search
//! for the first position of a value, with the compare masks of up to 128 elements joined
//! before one branch.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Largest (`MAX`) or smallest element of `x`, NaN if any element is NaN, `±inf` for an
/// empty slice. Among equal values (+0 and -0) each lane keeps the first it saw.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn extreme_f32<const MAX: bool>(x: &[f32]) -> f32 {
    let init = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
    let pick = |v: __m512, acc: __m512| if MAX { _mm512_max_ps(v, acc) } else { _mm512_min_ps(v, acc) };
    let fill = _mm512_set1_ps(init);
    let mut acc = [fill; 4];
    let mut nan: __mmask16 = 0;
    let n = x.len();
    let p = x.as_ptr();
    let mut i = 0;
    // SAFETY: every load reads inside `x` (the tail is masked); AVX-512F is enabled.
    unsafe {
        while i + 64 <= n {
            for (j, a) in acc.iter_mut().enumerate() {
                let v = _mm512_loadu_ps(p.add(i + 16 * j));
                nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
                *a = pick(v, *a);
            }
            i += 64;
        }
        while i < n {
            let m: __mmask16 = if n - i >= 16 { 0xffff } else { ((1u32 << (n - i)) - 1) as __mmask16 };
            let v = _mm512_mask_loadu_ps(fill, m, p.add(i));
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            acc[0] = pick(v, acc[0]);
            i += 16;
        }
    }
    if nan != 0 {
        return f32::NAN;
    }
    let v = pick(pick(acc[0], acc[1]), pick(acc[2], acc[3]));
    if MAX {
        _mm512_reduce_max_ps(v)
    } else {
        _mm512_reduce_min_ps(v)
    }
}

/// Position of the first element of `x` equal to `m` (the first NaN when `m` is NaN),
/// `x.len()` when there is none. The compares of each run of 128 elements are joined into two
/// 64-bit masks before a single branch: for short rows (80 class scores) whose hit lies
/// anywhere, a branch per 16 elements mispredicts once per row (and a 128-bit mask costs a
/// multi-instruction shift per compare).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn first_equal_f32(x: &[f32], m: f32) -> usize {
    let n = x.len();
    let p = x.as_ptr();
    let target = _mm512_set1_ps(m);
    let nan = m.is_nan();
    let mut i = 0;
    while i < n {
        let end = (i + 128).min(n);
        // Bit `k` of `lo` (`hi`) is element `i + k` (`i + 64 + k`).
        let (mut lo, mut hi) = (0u64, 0u64);
        let mut j = i;
        while j < end {
            let lanes: __mmask16 = if end - j >= 16 { 0xffff } else { ((1u32 << (end - j)) - 1) as __mmask16 };
            // SAFETY: the masked load reads only lanes inside `x`; AVX-512F is enabled.
            let v = unsafe { _mm512_maskz_loadu_ps(lanes, p.add(j)) };
            let hit = if nan {
                _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(lanes, v, v)
            } else {
                _mm512_mask_cmp_ps_mask::<_CMP_EQ_OQ>(lanes, v, target)
            };
            let at = j - i;
            if at < 64 {
                lo |= u64::from(hit) << at;
            } else {
                hi |= u64::from(hit) << (at - 64);
            }
            j += 16;
        }
        if lo | hi != 0 {
            let pos = if lo != 0 { lo.trailing_zeros() } else { 64 + hi.trailing_zeros() };
            return i + pos as usize;
        }
        i = end;
    }
    n
}
