//! The row maximum (or minimum) of float32 products and its first position, in one pass
//! over each row: a detector's `c = x[:, 5:] * x[:, 4:5]` followed by `c.max(1)` and
//! `c.argmax(1)`, without writing `c`.
//!
//! Each row is multiplied by its own scale (or one scale for every row). The AVX-512 path
//! keeps, per lane, the best product seen and where it was first seen, then joins the lanes:
//! the extreme, and the smallest position holding it. Rows where that shortcut could differ
//! from the separate passes (a NaN product, an extreme of zero whose sign the separate max
//! picks by lane order, or every product at the starting infinity) are recomputed the way
//! those passes compute them: the products into a row buffer, then
//! [`crate::reduce::extreme_and_arg_rows_f32`]. Results are bit-identical to the multiply,
//! the reduction and the arg reduction run one after another.

use crate::dispatch::{dispatch, Kernel, Simd};

/// `rows` rows of `row_len` float32 values, each times its scale.
struct ScaledRows<'a> {
    x: &'a [f32],
    stride: usize,
    scale: &'a [f32],
    row_len: usize,
    max: bool,
    value: &'a mut [f32],
    index: &'a mut [i64],
}

impl Kernel for ScaledRows<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let ScaledRows { x, stride, scale, row_len, max, value, index } = self;
        let mut buf: Vec<f32> = Vec::new();
        for r in 0..value.len() {
            let row = &x[r * stride..r * stride + row_len];
            let s = if scale.len() == 1 { scale[0] } else { scale[r] };
            #[cfg(target_arch = "x86_64")]
            if S::AVX512 {
                // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
                let fast = unsafe {
                    if max {
                        scaled_extreme_arg::<true>(row, s)
                    } else {
                        scaled_extreme_arg::<false>(row, s)
                    }
                };
                if let Some((v, i)) = fast {
                    value[r] = v;
                    index[r] = i as i64;
                    continue;
                }
            }
            buf.clear();
            buf.extend(row.iter().map(|v| v * s));
            crate::reduce::extreme_and_arg_rows_f32(&buf, row_len, max, &mut value[r..r + 1], &mut index[r..r + 1]);
        }
    }
}

/// For each of the `value.len()` rows of `row_len` (> 0) float32 values in `x`, row `r`
/// starting at `x[r * stride]` (`stride >= row_len`): the largest (`max`) or smallest product
/// of the row's values with its scale (`scale[r]`, or `scale[0]` for every row when `scale`
/// has one element), and the first position of that product. The same values as
/// multiplying, then [`crate::reduce::extreme_and_arg_rows_f32`].
pub fn scaled_extreme_and_arg_rows_f32(
    x: &[f32],
    stride: usize,
    scale: &[f32],
    row_len: usize,
    max: bool,
    value: &mut [f32],
    index: &mut [i64],
) {
    let rows = value.len();
    let spans = rows == 0 || x.len() >= (rows - 1) * stride + row_len;
    assert!(row_len > 0 && stride >= row_len && spans, "rows do not match the output");
    assert_eq!(rows, index.len(), "one value and one index per row");
    assert!(scale.len() == 1 || scale.len() == rows, "one scale, or one per row");
    dispatch(ScaledRows { x, stride, scale, row_len, max, value, index })
}

/// One row's extreme product and its first position, or `None` where the separate passes
/// must decide (see the module documentation).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scaled_extreme_arg<const MAX: bool>(x: &[f32], s: f32) -> Option<(f32, usize)> {
    use std::arch::x86_64::*;
    let init = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
    let scale = _mm512_set1_ps(s);
    let mut best = _mm512_set1_ps(init);
    let mut at = _mm512_set1_epi32(i32::MAX);
    let mut pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let step = _mm512_set1_epi32(16);
    let mut nan: __mmask16 = 0;
    let (n, p) = (x.len(), x.as_ptr());
    let mut i = 0;
    while i < n {
        let lanes: __mmask16 = if n - i >= 16 { 0xffff } else { ((1u32 << (n - i)) - 1) as __mmask16 };
        // SAFETY: the masked load reads only lanes inside `x`.
        let v = _mm512_mul_ps(unsafe { _mm512_maskz_loadu_ps(lanes, p.add(i)) }, scale);
        nan |= _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(lanes, v, v);
        // Strictly better: each lane keeps the first position of its extreme.
        let better = if MAX {
            _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(lanes, v, best)
        } else {
            _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(lanes, v, best)
        };
        best = _mm512_mask_mov_ps(best, better, v);
        at = _mm512_mask_mov_epi32(at, better, pos);
        pos = _mm512_add_epi32(pos, step);
        i += 16;
    }
    if nan != 0 {
        return None;
    }
    let m = if MAX { _mm512_reduce_max_ps(best) } else { _mm512_reduce_min_ps(best) };
    if m == 0.0 || m == init {
        return None;
    }
    let hit = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(best, _mm512_set1_ps(m));
    let first = _mm512_reduce_min_epi32(_mm512_mask_mov_epi32(_mm512_set1_epi32(i32::MAX), hit, at));
    Some((m, first as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Multiply, then the separate row passes: the reference.
    fn separate(x: &[f32], scale: &[f32], c: usize, max: bool) -> (Vec<f32>, Vec<i64>) {
        let rows = x.len() / c;
        let prod: Vec<f32> =
            x.iter().enumerate().map(|(i, v)| v * if scale.len() == 1 { scale[0] } else { scale[i / c] }).collect();
        let (mut v, mut a) = (vec![0f32; rows], vec![0i64; rows]);
        crate::reduce::extreme_and_arg_rows_f32(&prod, c, max, &mut v, &mut a);
        (v, a)
    }

    #[test]
    fn products_extremes_and_positions_match_the_separate_passes() {
        // Zeros' signs follow the reduction's lane order, which depends on the ISA: the
        // reference and the fused pass run under the same one.
        crate::isa::each_isa(|_| {
            let pool = [0.0f32, -0.0, 1.5, -1.5, 3.0, 0.25, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
            let mut state = 5u64;
            let mut next = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) as usize
            };
            for c in [1usize, 2, 15, 16, 17, 80, 129] {
                for case in 0..30 {
                    let rows = 19;
                    // Few distinct values (many ties), signed zeros and infinities; NaN in some cases.
                    let kinds = if case % 3 == 0 { pool.len() } else { pool.len() - 1 };
                    let x: Vec<f32> = (0..rows * c).map(|_| pool[next() % kinds]).collect();
                    let per_row: Vec<f32> = (0..rows).map(|_| pool[next() % kinds]).collect();
                    for scale in [&per_row[..], &[0.5f32][..], &[-2.0f32][..]] {
                        for max in [true, false] {
                            let (want_v, want_a) = separate(&x, scale, c, max);
                            let (mut v, mut a) = (vec![0f32; rows], vec![0i64; rows]);
                            scaled_extreme_and_arg_rows_f32(&x, c, scale, c, max, &mut v, &mut a);
                            // The same rows read in place from wider ones (three values apart).
                            let wide: Vec<f32> = x.chunks(c).flat_map(|r| r.iter().copied().chain([7.0; 3])).collect();
                            let (mut v2, mut a2) = (vec![0f32; rows], vec![0i64; rows]);
                            scaled_extreme_and_arg_rows_f32(&wide, c + 3, scale, c, max, &mut v2, &mut a2);
                            assert!(v2.iter().zip(&v).all(|(p, q)| p.to_bits() == q.to_bits()) && a2 == a);
                            for r in 0..rows {
                                let same =
                                    v[r].to_bits() == want_v[r].to_bits() || (v[r].is_nan() && want_v[r].is_nan());
                                assert!(same, "row {r} of {c}: {} vs {}", v[r], want_v[r]);
                            }
                            assert_eq!(a, want_a, "rows of {c}, max {max}");
                        }
                    }
                }
            }
        });
    }
}
