//! `dst = a @ b` in float32 on this thread, for products whose right operand is a block of
//! rows read in place: a convolution's weights (`a`, output channels by taps) times its
//! gathered (or, for a 1x1 convolution, its own) input rows (`b`, taps by output positions),
//! written straight into the channel-major output. [`matmul_rows_f32_at`] takes the rows of
//! `b` at any offsets from one pointer (a stride-1 convolution's taps are shifted rows of its
//! padded input); [`matmul_rows_f32`] is the case of rows a fixed stride apart.
//!
//! Nothing is packed. The product runs in blocks of [`KC`] values of `k`; within one, a panel
//! of `b` (`KC` rows by 48 columns on AVX-512, 24 on AVX2: about 24 KiB, kept in the first
//! level cache) is multiplied by every group of eight (four) rows of `a`, whose values are
//! broadcast straight from the weights' rows. The register tile is 8 rows by 48 columns on
//! AVX-512 (24 accumulators, one broadcast and three fused multiply-adds per row and `k`) and
//! 4 by 24 on AVX2 (12 accumulators); a tile's sums over a block are stored (first block) or
//! added to `dst` (later ones). The last columns of a row use as few vectors as they need,
//! masked, so nothing past `n` is read or written. The general-purpose `gemm` crate packs both
//! operands for every call, which for a convolution means all its weights again for every
//! block of output positions.
//!
//! [`matmul_rows_f32`] returns `false` (and writes nothing) where the CPU has neither path,
//! so the caller can fall back to [`super::matmul_f32`].

use super::{MatMut, MatRef};

/// Most values of `k` per block: a panel of `b` of `KC` rows fits the first level cache.
const KC: usize = 128;

/// Columns up to which a whole block of `b` (`KC` rows) stays in the first level cache.
const SMALL_N: usize = 64;

/// Whether [`matmul_rows_f32`] runs on the active ISA (AVX2 with FMA, or AVX-512).
pub fn matmul_rows_f32_runs() -> bool {
    cfg!(target_arch = "x86_64") && crate::isa::active() >= crate::isa::Isa::Avx2Fma
}

/// `dst = a @ b` (every element of `dst` written, none read before), on this thread only,
/// when the active ISA is AVX-512 or AVX2 with FMA; `false` otherwise, with `dst` untouched.
///
/// `a`, `b` and `dst` must have unit column strides (`cs == 1`).
///
/// # Safety
/// Every element addressed by `a`, `b` and `dst` must be valid (readable, and writable for
/// `dst`) for the duration of the call, and `dst` must not overlap `a` or `b`.
///
/// # Panics
/// If the shapes do not match or an operand has a column stride other than 1.
pub unsafe fn matmul_rows_f32(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>) -> bool {
    assert!(a.rows == dst.rows && a.cols == b.rows && b.cols == dst.cols, "shapes do not match");
    assert!(a.cs == 1 && b.cs == 1 && dst.cs == 1, "rows must be contiguous");
    let rows: Vec<isize> = (0..b.rows).map(|r| r as isize * b.rs).collect();
    // SAFETY: row r of `b` starts at b.ptr + r * b.rs and holds b.cols values.
    unsafe { matmul_rows_f32_at(dst, a, b.ptr, &rows) }
}

/// `dst = a @ b` as [`matmul_rows_f32`], with row `r` of `b` the `dst.cols` values starting
/// at `b.offset(rows[r])`: rows anywhere, overlapping ones included (a stride-1 convolution
/// reads its taps as shifted rows of one padded image).
///
/// # Safety
/// For every `r`, `b.offset(rows[r])` must address `dst.cols` readable values; `a` and `dst`
/// as for [`matmul_rows_f32`], `dst` not overlapping `a` or any row of `b`.
///
/// # Panics
/// If `a` has other than `rows.len()` columns or another row count than `dst`, or a column
/// stride other than 1 (or `dst` has).
pub unsafe fn matmul_rows_f32_at(dst: MatMut<f32>, a: MatRef<f32>, b: *const f32, rows: &[isize]) -> bool {
    assert!(a.rows == dst.rows && a.cols == rows.len(), "shapes do not match");
    assert!(a.cs == 1 && dst.cs == 1, "rows must be contiguous");
    if !matmul_rows_f32_runs() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (m, k, n) = (a.rows, a.cols, dst.cols);
        if m == 0 || n == 0 {
            return true;
        }
        if k == 0 {
            for i in 0..m {
                // SAFETY: row i of `dst` holds n writable values.
                unsafe { std::slice::from_raw_parts_mut(dst.ptr.offset(i as isize * dst.rs), n).fill(0.0) };
            }
            return true;
        }
        let wide = crate::isa::active() >= crate::isa::Isa::Avx512;
        let (mr, nr) = if wide { (8, 48) } else { (4, 24) };
        // Tiles of one block of `k`: each panel of `b` against every group of rows, or, when
        // the whole block of `b` fits the first level cache (few columns), each group of rows
        // against every panel (its rows then stay in that cache for all the panels).
        let few = n <= SMALL_N;
        let tiles = |k0: usize, kc: usize, i: usize| {
            let (g, panels) = (m.div_ceil(mr), n.div_ceil(nr));
            let (r0, j0) = if few { ((i / panels) * mr, (i % panels) * nr) } else { ((i % g) * mr, (i / g) * nr) };
            let rows_here = mr.min(m - r0);
            // The next tile's rows, fetched ahead while this one runs.
            let next = if few { i + panels } else { i + 1 };
            let next_r0 = if few { (next / panels) * mr } else { (next % g) * mr };
            let ahead = if next < g * panels && next_r0 != r0 {
                a.ptr.wrapping_offset(next_r0 as isize * a.rs).wrapping_add(k0)
            } else {
                std::ptr::null()
            };
            // The first tile of a panel fetches the next panel of `b` ahead.
            let b_ahead = if !few && r0 == 0 && j0 + nr < n { b.wrapping_add(j0 + nr) } else { std::ptr::null() };
            Tile {
                kc,
                b_ahead,
                a: a.ptr.wrapping_offset(r0 as isize * a.rs).wrapping_add(k0),
                lda: a.rs,
                rows: rows_here,
                ahead,
                ahead_rows: mr.min(m.saturating_sub(next_r0)),
                b: b.wrapping_add(j0),
                offs: rows[k0..].as_ptr(),
                cols: nr.min(n - j0),
                dst: dst.ptr.wrapping_offset(r0 as isize * dst.rs).wrapping_add(j0),
                ldd: dst.rs,
                acc: k0 > 0,
            }
        };
        let count = m.div_ceil(mr) * n.div_ceil(nr);
        // Blocks of `k` of equal length (at most KC): a short last block would store and
        // reload every tile's sums for a few steps (147 taps: 74 + 73, not 128 + 19).
        let step = k.div_ceil(k.div_ceil(KC));
        for k0 in (0..k).step_by(step) {
            let kc = step.min(k - k0);
            for i in 0..count {
                let t = tiles(k0, kc, i);
                // SAFETY: the tile addresses rows of `a` and `dst`, and rows and columns of
                // `b`, inside the caller's operands; the ISA was checked.
                unsafe {
                    if wide {
                        avx512::tile(t)
                    } else {
                        avx2::tile(t)
                    }
                }
            }
        }
    }
    true
}

/// One register tile: `dst[rows x cols] (+)= a[rows x kc] @ b[kc x cols]`.
#[cfg(target_arch = "x86_64")]
struct Tile {
    kc: usize,
    /// Row 0 of the tile's weights; rows `lda` apart.
    a: *const f32,
    lda: isize,
    rows: usize,
    /// Row 0 of the next panel of `b` (null when none), fetched into the cache ahead.
    b_ahead: *const f32,
    /// Row 0 of the next tile's weights (null when none), fetched into the cache ahead.
    ahead: *const f32,
    ahead_rows: usize,
    /// Column 0 of the tile in `b`; row `kk` of the tile starts `offs[kk]` values on.
    b: *const f32,
    offs: *const isize,
    cols: usize,
    dst: *mut f32,
    ldd: isize,
    /// Add to `dst` instead of storing.
    acc: bool,
}

/// At step `kk` of a tile, one cache line of the next tile's weights (its rows' first `kc`
/// values, sixteen per line, a line every other step), and row `kk` of the next panel of `b`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn fetch_ahead(t: &Tile, kk: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let line = kk / 2;
    let per_row = t.kc.div_ceil(16);
    if kk.is_multiple_of(2) && !t.ahead.is_null() && line < per_row * t.ahead_rows {
        let at = t.ahead.wrapping_offset((line / per_row) as isize * t.lda).wrapping_add((line % per_row) * 16);
        // SAFETY: a prefetch never faults; the address is inside the next tile's rows.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at as *const i8) };
    }
    if !t.b_ahead.is_null() {
        // SAFETY: kk < kc, inside the tile's offsets.
        let row = t.b_ahead.wrapping_offset(unsafe { *t.offs.add(kk) });
        for line in 0..3 {
            // SAFETY: as above (a prefetch past the end of a row is harmless).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(16 * line) as *const i8) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{fetch_ahead, Tile};
    use std::arch::x86_64::*;

    /// Rows of the tile.
    const MR: usize = 8;

    /// A lane mask for the first `left` (clamped to 16) of sixteen floats.
    fn mask(left: usize) -> __mmask16 {
        if left >= 16 {
            0xffff
        } else {
            ((1u32 << left) - 1) as __mmask16
        }
    }

    /// The tile with as many vectors as its columns need.
    ///
    /// # Safety
    /// AVX-512F must be available; the tile's operands must be valid as [`Tile`] describes.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(t: Tile) {
        // SAFETY: forwarded.
        unsafe {
            match t.cols.div_ceil(16) {
                1 => tile_nv::<1>(t),
                2 => tile_nv::<2>(t),
                _ => tile_nv::<3>(t),
            }
        }
    }

    /// # Safety
    /// As [`tile`], with `cols <= 16 * NV`.
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_nv<const NV: usize>(t: Tile) {
        if t.cols == 16 * NV {
            // SAFETY: forwarded.
            unsafe { tile_full::<NV, true>(t) }
        } else {
            // SAFETY: forwarded.
            unsafe { tile_full::<NV, false>(t) }
        }
    }

    /// # Safety
    /// As [`tile`], with `cols <= 16 * NV`, and `cols == 16 * NV` when `FULL`.
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_full<const NV: usize, const FULL: bool>(t: Tile) {
        let m: [__mmask16; NV] = std::array::from_fn(|v| mask(t.cols.saturating_sub(16 * v)));
        // Rows past the tile's last read its first row (valid memory; never stored).
        let rows: [*const f32; MR] =
            std::array::from_fn(|i| t.a.wrapping_offset(if i < t.rows { i as isize * t.lda } else { 0 }));
        let mut c = [[_mm512_setzero_ps(); NV]; MR];
        for kk in 0..t.kc {
            fetch_ahead(&t, kk);
            // SAFETY: kk < kc, inside the tile's offsets.
            let bp = t.b.wrapping_offset(unsafe { *t.offs.add(kk) });
            // SAFETY: masked loads read only the tile's columns of row kk of `b`.
            let bv: [__m512; NV] = std::array::from_fn(|v| unsafe {
                if FULL {
                    _mm512_loadu_ps(bp.add(16 * v))
                } else {
                    _mm512_maskz_loadu_ps(m[v], bp.add(16 * v))
                }
            });
            for (ci, row) in c.iter_mut().zip(&rows) {
                // SAFETY: (row, kk) is inside the tile's weights.
                let av = _mm512_set1_ps(unsafe { *row.add(kk) });
                for v in 0..NV {
                    ci[v] = _mm512_fmadd_ps(av, bv[v], ci[v]);
                }
            }
        }
        for (i, ci) in c.iter().enumerate().take(t.rows) {
            let d = t.dst.wrapping_offset(i as isize * t.ldd);
            for v in 0..NV {
                // SAFETY: masked accesses touch only the tile's columns of row i of `dst`.
                unsafe {
                    let sum =
                        if t.acc { _mm512_add_ps(_mm512_maskz_loadu_ps(m[v], d.add(16 * v)), ci[v]) } else { ci[v] };
                    _mm512_mask_storeu_ps(d.add(16 * v), m[v], sum);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Tile;
    use std::arch::x86_64::*;

    /// Rows of the tile.
    const MR: usize = 4;

    /// A lane mask for the first `left` (clamped to 8) of eight floats.
    #[target_feature(enable = "avx2")]
    fn mask(left: usize) -> __m256i {
        let l = left.min(8) as i32;
        _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
    }

    /// The tile with as many vectors as its columns need.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the tile's operands must be valid as [`Tile`] describes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile(t: Tile) {
        // SAFETY: forwarded.
        unsafe {
            match t.cols.div_ceil(8) {
                1 => tile_nv::<1>(t),
                2 => tile_nv::<2>(t),
                _ => tile_nv::<3>(t),
            }
        }
    }

    /// # Safety
    /// As [`tile`], with `cols <= 8 * NV`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile_nv<const NV: usize>(t: Tile) {
        let m: [__m256i; NV] = std::array::from_fn(|v| mask(t.cols.saturating_sub(8 * v)));
        // Rows past the tile's last read its first row (valid memory; never stored).
        let rows: [*const f32; MR] =
            std::array::from_fn(|i| t.a.wrapping_offset(if i < t.rows { i as isize * t.lda } else { 0 }));
        let mut c = [[_mm256_setzero_ps(); NV]; MR];
        for kk in 0..t.kc {
            super::fetch_ahead(&t, kk);
            // SAFETY: kk < kc, inside the tile's offsets.
            let bp = t.b.wrapping_offset(unsafe { *t.offs.add(kk) });
            // SAFETY: masked loads read only the tile's columns of row kk of `b`.
            let bv: [__m256; NV] = std::array::from_fn(|v| unsafe { _mm256_maskload_ps(bp.add(8 * v), m[v]) });
            for (ci, row) in c.iter_mut().zip(&rows) {
                // SAFETY: (row, kk) is inside the tile's weights.
                let av = _mm256_broadcast_ss(unsafe { &*row.add(kk) });
                for v in 0..NV {
                    ci[v] = _mm256_fmadd_ps(av, bv[v], ci[v]);
                }
            }
        }
        for (i, ci) in c.iter().enumerate().take(t.rows) {
            let d = t.dst.wrapping_offset(i as isize * t.ldd);
            for v in 0..NV {
                // SAFETY: masked accesses touch only the tile's columns of row i of `dst`.
                unsafe {
                    let sum = if t.acc { _mm256_add_ps(_mm256_maskload_ps(d.add(8 * v), m[v]), ci[v]) } else { ci[v] };
                    _mm256_maskstore_ps(d.add(8 * v), m[v], sum);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{each_isa, Isa};

    #[test]
    fn products_match_float64_on_every_path_and_tail() {
        let mut state = 11u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let shapes = [
            (1, 1, 1),
            (3, 5, 7),
            (8, 9, 48),
            (9, 17, 49),
            (16, 64, 100),
            (13, 3, 200),
            (64, 147, 33),
            (5, 300, 20),
            (2, 0, 9),
        ];
        let cases: Vec<_> = shapes
            .iter()
            .map(|&(m, k, n)| {
                let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
                // `b` rows are wider than `n` (read in place from a larger block).
                let b: Vec<f32> = (0..k * (n + 5)).map(|_| next()).collect();
                (m, k, n, a, b)
            })
            .collect();
        each_isa(|isa| {
            for (m, k, n, a, b) in &cases {
                let (m, k, n) = (*m, *k, *n);
                // Each destination row sits in a wider row whose extra values must survive.
                let mut dst = vec![f32::NAN; m * (n + 3)];
                // SAFETY: the views address the vectors above, which outlive the call.
                let ok = unsafe {
                    matmul_rows_f32(
                        MatMut { ptr: dst.as_mut_ptr(), rows: m, cols: n, rs: (n + 3) as isize, cs: 1 },
                        MatRef { ptr: a.as_ptr(), rows: m, cols: k, rs: k as isize, cs: 1 },
                        MatRef { ptr: b.as_ptr(), rows: k, cols: n, rs: (n + 5) as isize, cs: 1 },
                    )
                };
                assert_eq!(ok, isa >= Isa::Avx2Fma && cfg!(target_arch = "x86_64"), "{isa:?}");
                if !ok {
                    continue;
                }
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k).map(|t| a[i * k + t] as f64 * b[t * (n + 5) + j] as f64).sum();
                        let got = dst[i * (n + 3) + j] as f64;
                        assert!((got - want).abs() <= 1e-5 * (k as f64).sqrt(), "{isa:?} {m}x{k}x{n} ({i},{j})");
                    }
                    assert!(dst[i * (n + 3) + n..(i + 1) * (n + 3)].iter().all(|v| v.is_nan()), "wrote past a row");
                }
            }
        });
    }

    #[test]
    fn rows_at_any_offsets_overlapping_ones_included() {
        // Rows of `b` at shifted offsets into one buffer, as a stride-1 convolution reads its
        // padded input: row r starts at (r / 3) * 40 + (r % 3) * 5 + 1.
        let (m, k, n) = (11, 30, 97);
        let buf: Vec<f32> = (0..(k / 3) * 40 + 120).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 14.0).collect();
        let rows: Vec<isize> = (0..k).map(|r| ((r / 3) * 40 + (r % 3) * 5 + 1) as isize).collect();
        each_isa(|isa| {
            let mut dst = vec![f32::NAN; m * n];
            // SAFETY: every row addresses n values inside `buf`; the views address the vectors.
            let ok = unsafe {
                matmul_rows_f32_at(
                    MatMut { ptr: dst.as_mut_ptr(), rows: m, cols: n, rs: n as isize, cs: 1 },
                    MatRef { ptr: a.as_ptr(), rows: m, cols: k, rs: k as isize, cs: 1 },
                    buf.as_ptr(),
                    &rows,
                )
            };
            if !ok {
                assert!(isa < Isa::Avx2Fma, "{isa:?}");
                return;
            }
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|t| a[i * k + t] as f64 * buf[rows[t] as usize + j] as f64).sum();
                    assert!((dst[i * n + j] as f64 - want).abs() <= 1e-5 * (k as f64).sqrt(), "{isa:?} ({i},{j})");
                }
            }
        });
    }
}
