//! The AVX-512 float32 attention block: both products are one register-blocked micro-kernel,
//! `C[r, 0..48] (+)= sum_t A[r, t] * B[t, 0..48]` for up to 8 rows `r` at a time (24 zmm
//! accumulators, one broadcast of `A` per 3 FMAs). For `S^T = K Q^T` the rows of `A` are keys
//! and `B` is `Q^T`; for `O^T = alpha * O^T + V^T P^T` the rows of `A` are value channels
//! (read down the value matrix) and `B` is `P^T`. The online softmax works on whole vectors
//! of 16 queries.

use std::arch::x86_64::*;

use super::{attend_blocked, Blocked, MaskFn, QueryBlock, BLOCK_Q};
use crate::math::exp_avx512::exp16;

/// Vectors per row of a block (`BLOCK_Q / 16`).
const NV: usize = BLOCK_Q / 16;
/// Rows of one micro-kernel call.
const MR: usize = 8;

/// `C[r, :] = (alpha * C[r, :] if accumulate) + sum_t A[r, t] * B[t, :]` for `r < R`, with
/// `A[r, t]` at `a + r*ars + t*ats`, `B` rows and `C` rows [`BLOCK_Q`] apart.
///
/// # Safety
/// Every addressed element must be valid; `b` must hold `kdim` rows, `c` `R` rows.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn tile<const R: usize>(
    a: *const f32,
    ars: isize,
    ats: isize,
    b: *const f32,
    kdim: usize,
    c: *mut f32,
    alpha: Option<&[__m512; NV]>,
) {
    let mut acc = [[_mm512_setzero_ps(); NV]; R];
    // SAFETY: per the contract.
    unsafe {
        if let Some(al) = alpha {
            for (r, row) in acc.iter_mut().enumerate() {
                for (v, x) in row.iter_mut().enumerate() {
                    *x = _mm512_mul_ps(_mm512_loadu_ps(c.add(r * BLOCK_Q + v * 16)), al[v]);
                }
            }
        }
        let mut ap = a;
        let mut bp = b;
        for _ in 0..kdim {
            let mut bv = [_mm512_setzero_ps(); NV];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = _mm512_loadu_ps(bp.add(v * 16));
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let s = _mm512_set1_ps(*ap.offset(r as isize * ars));
                for v in 0..NV {
                    row[v] = _mm512_fmadd_ps(s, bv[v], row[v]);
                }
            }
            ap = ap.offset(ats);
            bp = bp.add(BLOCK_Q);
        }
        for (r, row) in acc.iter().enumerate() {
            for (v, x) in row.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * BLOCK_Q + v * 16), *x);
            }
        }
    }
}

/// The AVX-512 parts of [`super::attend_blocked`].
struct Avx512Block;

impl Blocked for Avx512Block {
    type Alpha = [__m512; NV];

    /// [`tile`] for `rows` rows in chunks of [`MR`], row `r` of `A` at `a + r*ars`.
    ///
    /// # Safety
    /// As for [`tile`], over `rows` rows.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn panel(
        a: *const f32,
        ars: isize,
        ats: isize,
        b: *const f32,
        kdim: usize,
        c: *mut f32,
        rows: usize,
        alpha: Option<&[__m512; NV]>,
    ) {
        let mut r = 0;
        // SAFETY: each call covers rows r..r+n of the caller's range.
        unsafe {
            while r < rows {
                let (ar, cr) = (a.offset(r as isize * ars), c.add(r * BLOCK_Q));
                let n = (rows - r).min(MR);
                match n {
                    8 => tile::<8>(ar, ars, ats, b, kdim, cr, alpha),
                    7 => tile::<7>(ar, ars, ats, b, kdim, cr, alpha),
                    6 => tile::<6>(ar, ars, ats, b, kdim, cr, alpha),
                    5 => tile::<5>(ar, ars, ats, b, kdim, cr, alpha),
                    4 => tile::<4>(ar, ars, ats, b, kdim, cr, alpha),
                    3 => tile::<3>(ar, ars, ats, b, kdim, cr, alpha),
                    2 => tile::<2>(ar, ars, ats, b, kdim, cr, alpha),
                    _ => tile::<1>(ar, ars, ats, b, kdim, cr, alpha),
                }
                r += n;
            }
        }
    }

    /// The online-softmax step of one block of `bc` keys: updates the running maxima `m` and
    /// sums `l`, turns the scores into `exp(s - max)` in place and returns each query's factor
    /// `exp(old max - new max)` for the output so far. A query with only `-inf` scores so far
    /// keeps the maximum `-inf` and subtracts 0 instead, so its weights are `exp(-inf) = 0`.
    ///
    /// # Safety
    /// `st` must hold `bc` rows of [`BLOCK_Q`].
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn softmax_step(st: &mut [f32], bc: usize, m: &mut [f32; BLOCK_Q], l: &mut [f32; BLOCK_Q]) -> [__m512; NV] {
        let mut alpha = [_mm512_setzero_ps(); NV];
        let p = st.as_mut_ptr();
        let ninf = _mm512_set1_ps(f32::NEG_INFINITY);
        // SAFETY: every access is inside `st`, `m` or `l`.
        unsafe {
            for (v, al) in alpha.iter_mut().enumerate() {
                let old = _mm512_loadu_ps(m.as_ptr().add(v * 16));
                let mut mx = old;
                for j in 0..bc {
                    mx = _mm512_max_ps(mx, _mm512_loadu_ps(p.add(j * BLOCK_Q + v * 16)));
                }
                // A NaN score may be dropped from the maximum, but its weight `exp(NaN - max)` is
                // NaN and so is the row's sum: the row ends NaN, as an unfused softmax gives.
                let dead = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(mx, ninf);
                let safe = _mm512_mask_mov_ps(mx, dead, _mm512_setzero_ps());
                *al = exp16(_mm512_sub_ps(old, safe));
                let mut sum = _mm512_setzero_ps();
                for j in 0..bc {
                    let q = p.add(j * BLOCK_Q + v * 16);
                    let e = exp16(_mm512_sub_ps(_mm512_loadu_ps(q), safe));
                    _mm512_storeu_ps(q, e);
                    sum = _mm512_add_ps(sum, e);
                }
                let lp = l.as_mut_ptr().add(v * 16);
                _mm512_storeu_ps(lp, _mm512_fmadd_ps(_mm512_loadu_ps(lp), *al, sum));
                _mm512_storeu_ps(m.as_mut_ptr().add(v * 16), mx);
            }
        }
        alpha
    }
}

/// The AVX-512 block; see [`super::attend_f32`].
///
/// # Safety
/// As for [`super::attend_f32`], and the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn attend(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    // SAFETY: forwarded; this function is compiled for AVX-512F.
    unsafe { attend_blocked::<Avx512Block>(b, mask, scratch, out, out_rs) }
}
