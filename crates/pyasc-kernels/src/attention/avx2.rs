//! The AVX2+FMA float32 attention block: both products are one register-blocked micro-kernel,
//! `C[r, 0..48] (+)= sum_t A[r, t] * B[t, 0..48]` for 2 rows `r` at a time (12 ymm
//! accumulators, 6 loads of `B` and 2 broadcasts of `A` per 12 FMAs, so the two FMA pipes
//! stay busy instead of waiting on loads). For `S^T = K Q^T` the rows of `A` are keys and `B`
//! is `Q^T`; for `O^T = alpha * O^T + V^T P^T` the rows of `A` are value channels (read down
//! the value matrix) and `B` is `P^T`. The online softmax works on whole vectors of 8 queries
//! with the crate's float32 `exp` ([`exp8`]).

use std::arch::x86_64::*;

use super::{attend_blocked, Blocked, MaskFn, QueryBlock, BLOCK_Q};
use crate::math::exp_avx2::exp8;

/// Vectors per row of a block (`BLOCK_Q / 8`).
const NV: usize = BLOCK_Q / 8;
/// Rows of one micro-kernel call.
const MR: usize = 2;

/// `C[r, :] = (alpha * C[r, :] if alpha) + sum_t A[r, t] * B[t, :]` for `r < R`, with
/// `A[r, t]` at `a + r*ars + t*ats`, `B` rows and `C` rows [`BLOCK_Q`] apart.
///
/// # Safety
/// Every addressed element must be valid; `b` must hold `kdim` rows, `c` `R` rows; the CPU
/// must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile<const R: usize>(
    a: *const f32,
    ars: isize,
    ats: isize,
    b: *const f32,
    kdim: usize,
    c: *mut f32,
    alpha: Option<&[f32; BLOCK_Q]>,
) {
    let mut acc = [[_mm256_setzero_ps(); NV]; R];
    // SAFETY: per the contract.
    unsafe {
        if let Some(al) = alpha {
            for (r, row) in acc.iter_mut().enumerate() {
                for (v, x) in row.iter_mut().enumerate() {
                    let f = _mm256_loadu_ps(al.as_ptr().add(v * 8));
                    *x = _mm256_mul_ps(_mm256_loadu_ps(c.add(r * BLOCK_Q + v * 8)), f);
                }
            }
        }
        let mut ap = a;
        let mut bp = b;
        for _ in 0..kdim {
            let mut s = [_mm256_setzero_ps(); R];
            for (r, x) in s.iter_mut().enumerate() {
                *x = _mm256_broadcast_ss(&*ap.offset(r as isize * ars));
            }
            for v in 0..NV {
                let bv = _mm256_loadu_ps(bp.add(v * 8));
                for (row, sr) in acc.iter_mut().zip(&s) {
                    row[v] = _mm256_fmadd_ps(*sr, bv, row[v]);
                }
            }
            ap = ap.offset(ats);
            bp = bp.add(BLOCK_Q);
        }
        for (r, row) in acc.iter().enumerate() {
            for (v, x) in row.iter().enumerate() {
                _mm256_storeu_ps(c.add(r * BLOCK_Q + v * 8), *x);
            }
        }
    }
}

/// The AVX2+FMA parts of [`super::attend_blocked`].
struct Avx2Block;

impl Blocked for Avx2Block {
    type Alpha = [f32; BLOCK_Q];

    /// [`tile`] for `rows` rows in chunks of [`MR`], row `r` of `A` at `a + r*ars`.
    ///
    /// # Safety
    /// As for [`tile`], over `rows` rows.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn panel(
        a: *const f32,
        ars: isize,
        ats: isize,
        b: *const f32,
        kdim: usize,
        c: *mut f32,
        rows: usize,
        alpha: Option<&[f32; BLOCK_Q]>,
    ) {
        let mut r = 0;
        // SAFETY: each call covers rows r..r+n of the caller's range.
        unsafe {
            while r + MR <= rows {
                tile::<MR>(a.offset(r as isize * ars), ars, ats, b, kdim, c.add(r * BLOCK_Q), alpha);
                r += MR;
            }
            if r < rows {
                tile::<1>(a.offset(r as isize * ars), ars, ats, b, kdim, c.add(r * BLOCK_Q), alpha);
            }
        }
    }

    /// The online-softmax step of one block of `bc` keys: updates the running maxima `m` and
    /// sums `l`, turns the scores into `exp(s - max)` in place and returns each query's factor
    /// `exp(old max - new max)` for the output so far. A query with only `-inf` scores so far
    /// keeps the maximum `-inf` and subtracts 0 instead, so its weights are `exp(-inf) = 0`.
    ///
    /// # Safety
    /// `st` must hold `bc` rows of [`BLOCK_Q`]; the CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn softmax_step(
        st: &mut [f32],
        bc: usize,
        m: &mut [f32; BLOCK_Q],
        l: &mut [f32; BLOCK_Q],
    ) -> [f32; BLOCK_Q] {
        debug_assert!(st.len() >= bc * BLOCK_Q);
        let mut alpha = [0.0f32; BLOCK_Q];
        let p = st.as_mut_ptr();
        let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
        // SAFETY: every access is inside `st`, `m`, `l` or `alpha`.
        unsafe {
            for v in 0..NV {
                let old = _mm256_loadu_ps(m.as_ptr().add(v * 8));
                let mut mx = old;
                for j in 0..bc {
                    mx = _mm256_max_ps(mx, _mm256_loadu_ps(p.add(j * BLOCK_Q + v * 8)));
                }
                // A NaN score may be dropped from the maximum, but its weight `exp(NaN - max)` is
                // NaN and so is the row's sum: the row ends NaN, as an unfused softmax gives.
                let dead = _mm256_cmp_ps::<_CMP_EQ_OQ>(mx, ninf);
                let safe = _mm256_blendv_ps(mx, _mm256_setzero_ps(), dead);
                let al = exp8(_mm256_sub_ps(old, safe));
                _mm256_storeu_ps(alpha.as_mut_ptr().add(v * 8), al);
                let mut sum = _mm256_setzero_ps();
                for j in 0..bc {
                    let q = p.add(j * BLOCK_Q + v * 8);
                    let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(q), safe));
                    _mm256_storeu_ps(q, e);
                    sum = _mm256_add_ps(sum, e);
                }
                let lp = l.as_mut_ptr().add(v * 8);
                _mm256_storeu_ps(lp, _mm256_fmadd_ps(_mm256_loadu_ps(lp), al, sum));
                _mm256_storeu_ps(m.as_mut_ptr().add(v * 8), mx);
            }
        }
        alpha
    }
}

/// The AVX2 block; see [`super::attend_f32`].
///
/// # Safety
/// As for [`super::attend_f32`], and the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn attend(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    // SAFETY: forwarded; this function is compiled for AVX2 and FMA.
    unsafe { attend_blocked::<Avx2Block>(b, mask, scratch, out, out_rs) }
}
