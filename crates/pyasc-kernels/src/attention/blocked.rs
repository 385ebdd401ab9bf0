//! The float32 attention block on register-blocked micro-kernels, written once over the
//! crate's float32 vectors ([`SimdF32`]) and compiled for AVX2+FMA ([`attend_avx2`]) and
//! AVX-512 ([`attend_avx512`]).
//!
//! Both products are one micro-kernel, `C[r, 0..48] (+)= sum_t A[r, t] * B[t, 0..48]` for `MR`
//! rows `r` at a time, `NV = 48 / lanes` vectors a row. For `S^T = K Q^T` the rows of `A` are
//! keys and `B` is `Q^T`; for `O^T = alpha * O^T + V^T P^T` the rows of `A` are value channels
//! (read down the value matrix) and `B` is `P^T`. The online softmax works on whole vectors of
//! queries with the crate's float32 `exp` of the ISA.
//!
//! The blocking fills each ISA's register file: AVX2 (16 ymm) takes 2 rows, 12 accumulators,
//! with 2 broadcasts of `A` and one load of `B` at a time (6 loads and 2 broadcasts per 12
//! FMAs, so the two FMA pipes stay busy instead of waiting on loads); AVX-512 (32 zmm) takes 8
//! rows, 24 accumulators, with the 3 vectors of a row of `B` and one broadcast at a time (one
//! broadcast per 3 FMAs). Whichever of the row's vectors or the rows' broadcasts are fewer is
//! what the micro-kernel holds across the step. Each accumulator sums over `t` in order with
//! one FMA a step, whatever the blocking, so both ISAs compute the same sums.

use super::{add_mask, causal_mask, key_limit, store, MaskFn, QueryBlock, BLOCK_K, BLOCK_Q};
use crate::dispatch::{Avx2, Avx512};
use crate::vector::SimdF32;

/// `C[r, :] = (alpha * C[r, :] if alpha) + sum_t A[r, t] * B[t, :]` for `r < R`, with
/// `A[r, t]` at `a + r*ars + t*ats`, `B` rows and `C` rows [`BLOCK_Q`] apart, `NV` vectors of
/// `S` a row.
///
/// # Safety
/// Every addressed element must be valid; `b` must hold `kdim` rows, `c` `R` rows; the CPU
/// must support `S`'s ISA, and the caller must be compiled for it (this is inlined there).
#[inline(always)]
unsafe fn tile<S: SimdF32, const NV: usize, const R: usize>(
    a: *const f32,
    ars: isize,
    ats: isize,
    b: *const f32,
    kdim: usize,
    c: *mut f32,
    alpha: Option<&[S::V; NV]>,
) {
    // SAFETY: per the contract.
    unsafe {
        let mut acc = [[S::zero(); NV]; R];
        if let Some(al) = alpha {
            for (r, row) in acc.iter_mut().enumerate() {
                for (v, x) in row.iter_mut().enumerate() {
                    *x = S::mul(S::loadu(c.add(r * BLOCK_Q + v * S::LANES)), al[v]);
                }
            }
        }
        let mut ap = a;
        let mut bp = b;
        for _ in 0..kdim {
            if R <= NV {
                // Fewer rows than vectors: the rows' broadcasts stay, each vector of `B` is
                // loaded once and used by every row.
                let mut s = [S::zero(); R];
                for (r, x) in s.iter_mut().enumerate() {
                    *x = S::splat(*ap.offset(r as isize * ars));
                }
                for v in 0..NV {
                    let bv = S::loadu(bp.add(v * S::LANES));
                    for (row, sr) in acc.iter_mut().zip(&s) {
                        row[v] = S::fmadd(*sr, bv, row[v]);
                    }
                }
            } else {
                // Fewer vectors than rows: the row of `B` stays, each row's broadcast is used
                // by every vector.
                let mut bv = [S::zero(); NV];
                for (v, x) in bv.iter_mut().enumerate() {
                    *x = S::loadu(bp.add(v * S::LANES));
                }
                for (r, row) in acc.iter_mut().enumerate() {
                    let s = S::splat(*ap.offset(r as isize * ars));
                    for v in 0..NV {
                        row[v] = S::fmadd(s, bv[v], row[v]);
                    }
                }
            }
            ap = ap.offset(ats);
            bp = bp.add(BLOCK_Q);
        }
        for (r, row) in acc.iter().enumerate() {
            for (v, x) in row.iter().enumerate() {
                S::storeu(c.add(r * BLOCK_Q + v * S::LANES), *x);
            }
        }
    }
}

/// [`tile`] for `rows` rows, `MR` at a time and the rest (fewer than `MR`) in one call, row
/// `r` of `A` at `a + r*ars`.
///
/// # Safety
/// As for [`tile`], over `rows` rows.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn panel<S: SimdF32, const NV: usize, const MR: usize>(
    a: *const f32,
    ars: isize,
    ats: isize,
    b: *const f32,
    kdim: usize,
    c: *mut f32,
    rows: usize,
    alpha: Option<&[S::V; NV]>,
) {
    const { assert!(MR <= 8, "the remainder below takes at most 7 rows") };
    let mut r = 0;
    // SAFETY: each call covers rows r..r+MR, or the last rows..rows, of the caller's range.
    unsafe {
        while r + MR <= rows {
            tile::<S, NV, MR>(a.offset(r as isize * ars), ars, ats, b, kdim, c.add(r * BLOCK_Q), alpha);
            r += MR;
        }
        if r < rows {
            let (ar, cr) = (a.offset(r as isize * ars), c.add(r * BLOCK_Q));
            match rows - r {
                1 => tile::<S, NV, 1>(ar, ars, ats, b, kdim, cr, alpha),
                2 => tile::<S, NV, 2>(ar, ars, ats, b, kdim, cr, alpha),
                3 => tile::<S, NV, 3>(ar, ars, ats, b, kdim, cr, alpha),
                4 => tile::<S, NV, 4>(ar, ars, ats, b, kdim, cr, alpha),
                5 => tile::<S, NV, 5>(ar, ars, ats, b, kdim, cr, alpha),
                6 => tile::<S, NV, 6>(ar, ars, ats, b, kdim, cr, alpha),
                _ => tile::<S, NV, 7>(ar, ars, ats, b, kdim, cr, alpha),
            }
        }
    }
}

/// The online-softmax step of one block of `bc` keys: updates the running maxima `m` and
/// sums `l`, turns the scores into `exp(s - max)` in place and returns each query's factor
/// `exp(old max - new max)` for the output so far. A query with only `-inf` scores so far
/// keeps the maximum `-inf` and subtracts 0 instead, so its weights are `exp(-inf) = 0`.
///
/// # Safety
/// `st` must hold `bc` rows of [`BLOCK_Q`]; the CPU must support `S`'s ISA, and the caller
/// must be compiled for it.
#[inline(always)]
unsafe fn softmax_step<S: SimdF32, const NV: usize>(
    st: &mut [f32],
    bc: usize,
    m: &mut [f32; BLOCK_Q],
    l: &mut [f32; BLOCK_Q],
) -> [S::V; NV] {
    debug_assert!(st.len() >= bc * BLOCK_Q);
    let p = st.as_mut_ptr();
    // SAFETY: every access is inside `st`, `m` or `l`.
    unsafe {
        let mut alpha = [S::zero(); NV];
        let ninf = S::splat(f32::NEG_INFINITY);
        for (v, al) in alpha.iter_mut().enumerate() {
            let old = S::loadu(m.as_ptr().add(v * S::LANES));
            let mut mx = old;
            for j in 0..bc {
                mx = S::max(mx, S::loadu(p.add(j * BLOCK_Q + v * S::LANES)));
            }
            // A NaN score may be dropped from the maximum, but its weight `exp(NaN - max)` is
            // NaN and so is the row's sum: the row ends NaN, as an unfused softmax gives.
            let safe = S::zero_where_eq(mx, ninf);
            *al = S::exp(S::sub(old, safe));
            let mut sum = S::zero();
            for j in 0..bc {
                let q = p.add(j * BLOCK_Q + v * S::LANES);
                let e = S::exp(S::sub(S::loadu(q), safe));
                S::storeu(q, e);
                sum = S::add(sum, e);
            }
            let lp = l.as_mut_ptr().add(v * S::LANES);
            S::storeu(lp, S::fmadd(S::loadu(lp), *al, sum));
            S::storeu(m.as_mut_ptr().add(v * S::LANES), mx);
        }
        alpha
    }
}

/// A float32 block on `S`'s micro-kernels ([`panel`] of `MR` rows, `NV` vectors a row): for
/// each block of keys, `S^T = K Q^T` (plus the mask), the online softmax, then
/// `O^T = alpha * O^T + V^T P^T`; finally `O / l`. Inlined into the ISA's entry point, which
/// is compiled for it.
///
/// # Safety
/// As for [`super::attend_f32`]; the CPU must support `S`'s ISA, and the caller must be
/// compiled for it.
#[inline(always)]
unsafe fn attend_blocked<S: SimdF32, const NV: usize, const MR: usize>(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    const { assert!(NV * S::LANES == BLOCK_Q, "NV vectors make a row of BLOCK_Q queries") };
    let (st, rest) = scratch.split_at_mut(BLOCK_K * BLOCK_Q);
    let (mb, ot) = rest.split_at_mut(BLOCK_K * BLOCK_Q);
    let ot = &mut ot[..b.dv * BLOCK_Q];
    ot.fill(0.0);
    if mask.is_some() {
        mb.fill(0.0);
    }
    let mut m = [f32::NEG_INFINITY; BLOCK_Q];
    let mut l = [0.0f32; BLOCK_Q];
    let lim = key_limit(b);
    let mut first = true;
    for j0 in (0..lim).step_by(BLOCK_K) {
        let bc = BLOCK_K.min(lim - j0);
        let st = &mut st[..bc * BLOCK_Q];
        if let Some(f) = mask {
            f(&mut mb[..bc * BLOCK_Q], j0, bc);
        }
        // SAFETY: keys j0..j0+bc and their d columns lie inside the key matrix; `qt` holds d
        // rows and `st` bc rows of BLOCK_Q.
        unsafe {
            let a = b.k.ptr.offset(j0 as isize * b.k.rs);
            panel::<S, NV, MR>(a, b.k.rs, b.k.cs, b.qt.as_ptr(), b.d, st.as_mut_ptr(), bc, None);
        }
        if mask.is_some() {
            add_mask(st, mb);
        }
        if b.causal {
            causal_mask(st, b.q0, j0, bc);
        }
        // SAFETY: `st` holds bc rows.
        let alpha = unsafe { softmax_step::<S, NV>(st, bc, &mut m, &mut l) };
        // SAFETY: rows j0..j0+bc and channels 0..dv lie inside the value matrix; `st` holds bc
        // rows and `ot` dv rows of BLOCK_Q. The first block has nothing to rescale (and `ot`
        // is zero, so reading it is harmless either way).
        unsafe {
            let a = b.v.ptr.offset(j0 as isize * b.v.rs);
            let al = if first { None } else { Some(&alpha) };
            panel::<S, NV, MR>(a, b.v.cs, b.v.rs, st.as_ptr(), bc, ot.as_mut_ptr(), b.dv, al);
        }
        first = false;
    }
    // SAFETY: `out` addresses the caller's rows x dv block.
    unsafe { store(ot, (&m, &l), b, out, out_rs) };
}

/// The AVX2+FMA block (2 rows of 6 ymm vectors); see [`super::attend_f32`].
///
/// # Safety
/// As for [`super::attend_f32`], and the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn attend_avx2(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    // SAFETY: forwarded; this function is compiled for AVX2 and FMA.
    unsafe { attend_blocked::<Avx2, { BLOCK_Q / 8 }, 2>(b, mask, scratch, out, out_rs) }
}

/// The AVX-512 block (8 rows of 3 zmm vectors); see [`super::attend_f32`].
///
/// # Safety
/// As for [`super::attend_f32`], and the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn attend_avx512(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    // SAFETY: forwarded; this function is compiled for AVX-512F.
    unsafe { attend_blocked::<Avx512, { BLOCK_Q / 16 }, 8>(b, mask, scratch, out, out_rs) }
}
