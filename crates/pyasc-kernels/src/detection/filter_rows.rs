//! Row filtering by one column: the rows of a row-major matrix whose value in a given column
//! is strictly greater than a threshold, in their order (NumPy's `x[x[:, c] > t]`).
//!
//! The work is two passes over blocks of [`BLOCK_ROWS`] rows, each pass's blocks independent
//! so that a host can spread them over threads: [`select_rows`] lists a block's selected rows
//! (reading one value per row) into the block's own part of one index buffer, then
//! [`copy_rows`] copies them to their place in the result, found from the blocks' counts.
//! Neither pass allocates: threads that grow vectors at once contend for the allocator's lock
//! (two threads filtering a `(25200, 85)` prediction slept on it in every call). A detector's
//! prediction touches one cache line per row in the first pass and only the kept rows' lines
//! in the second, where a mask then a gather would write and read the mask and walk the rows
//! twice. A NaN is never greater than
//! the threshold, so its row is never kept (as NumPy's comparison).

use std::ops::Range;

/// Rows per block of either pass.
pub const BLOCK_ROWS: usize = 2048;

/// How many rows ahead the first pass asks for the value it will read: rows a few hundred
/// bytes apart cross a page every dozen rows, where the hardware's stride prefetch stops.
/// Far enough ahead to cover a miss to memory: a (25200, 85) float32 YOLO prediction just
/// evicted from the caches filters in 132-169 us at 96 rows ahead, 187-210 us at 24 (warm:
/// 68-73 against 81-99 us), NumPy's `x[x[:, 4] > t]` taking 194-243 us in the same runs.
const PREFETCH_ROWS: usize = 96;

/// How many kept rows ahead the second pass asks for the row it will copy (kept rows lie
/// anywhere, so no hardware prefetch finds them).
const PREFETCH_COPIES: usize = 4;

/// Hints the CPU to bring the cache line holding `v` into the cache.
#[inline(always)]
fn prefetch<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and `v` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(v as *const T as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Number of blocks of `n` rows.
pub fn blocks(n: usize) -> usize {
    n.div_ceil(BLOCK_ROWS)
}

/// The rows of block `b` of `n` rows.
pub fn block_range(b: usize, n: usize) -> Range<usize> {
    b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(n)
}

/// Writes to the front of `out` the rows `r` in `rows` (of a matrix with `cols` columns stored
/// in `x`) whose value in column `col` is strictly greater than `t`, and returns how many
/// there are. `out` holds at least `rows.len()` slots.
pub fn select_rows<T: Copy + PartialOrd>(
    x: &[T],
    cols: usize,
    col: usize,
    t: T,
    rows: Range<usize>,
    out: &mut [u32],
) -> usize {
    assert!(col < cols && rows.end * cols <= x.len(), "select_rows: rows or column out of range");
    let len = rows.len();
    assert!(out.len() >= len, "select_rows: {} slots for {len} rows", out.len());
    let column = &x[rows.start * cols + col..];
    let mut kept = 0;
    for (k, r) in rows.enumerate() {
        if k + PREFETCH_ROWS < len {
            prefetch(&column[(k + PREFETCH_ROWS) * cols]);
        }
        // Written whether kept or not, and counted only when kept: no branch to mispredict.
        out[kept] = r as u32;
        kept += usize::from(column[k * cols] > t);
    }
    kept
}

/// Copies rows `idx` of `x` (`cols` columns) into `out`, one after another.
pub fn copy_rows<T: Copy>(x: &[T], cols: usize, idx: &[u32], out: &mut [T]) {
    assert_eq!(out.len(), idx.len() * cols, "copy_rows: the output holds one row per index");
    let line = (64 / std::mem::size_of::<T>().max(1)).max(1);
    for (k, (dst, &r)) in out.chunks_exact_mut(cols.max(1)).zip(idx).enumerate() {
        if let Some(&ahead) = idx.get(k + PREFETCH_COPIES) {
            let row = &x[ahead as usize * cols..(ahead as usize + 1) * cols];
            row.iter().step_by(line).for_each(prefetch);
            if let Some(last) = row.last() {
                prefetch(last);
            }
        }
        let r = r as usize;
        dst.copy_from_slice(&x[r * cols..(r + 1) * cols]);
    }
}

/// `x[x[:, col] > t]` of a matrix of `cols` columns, on the calling thread.
pub fn filter_rows<T: Copy + PartialOrd>(x: &[T], cols: usize, col: usize, t: T) -> Vec<T> {
    let n = x.len().checked_div(cols).unwrap_or(0);
    let mut idx = vec![0u32; n];
    let mut kept = 0;
    for b in 0..blocks(n) {
        kept += select_rows(x, cols, col, t, block_range(b, n), &mut idx[kept..]);
    }
    idx.truncate(kept);
    let Some(&fill) = x.first() else { return Vec::new() };
    let mut out = vec![fill; idx.len() * cols];
    copy_rows(x, cols, &idx, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: &[f32], cols: usize, col: usize, t: f32) -> Vec<f32> {
        x.chunks_exact(cols).filter(|r| r[col] > t).flatten().copied().collect()
    }

    #[test]
    fn keeps_the_rows_above_the_threshold_in_order() {
        // 5000 rows over three blocks, with NaN, ties at the threshold and infinities.
        let cols = 7;
        let x: Vec<f32> = (0..5000 * cols)
            .map(|i| match i % 13 {
                0 => f32::NAN,
                1 => 0.5,
                2 => f32::INFINITY,
                3 => f32::NEG_INFINITY,
                _ => ((i * 7919) % 1000) as f32 / 1000.0,
            })
            .collect();
        for col in [0, 3, 6] {
            for t in [0.5f32, -1.0, 2.0, f32::NEG_INFINITY] {
                let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
                let (got, want) = (bits(filter_rows(&x, cols, col, t)), bits(reference(&x, cols, col, t)));
                assert!(got == want, "col {col} t {t}: {} values against {}", got.len(), want.len());
            }
        }
    }

    #[test]
    fn blocks_cover_every_row_once() {
        for n in [0, 1, BLOCK_ROWS - 1, BLOCK_ROWS, BLOCK_ROWS + 1, 3 * BLOCK_ROWS + 5] {
            let covered: usize = (0..blocks(n)).map(|b| block_range(b, n).len()).sum();
            assert_eq!(covered, n);
            assert!((0..blocks(n)).all(|b| !block_range(b, n).is_empty()));
        }
    }

    #[test]
    fn empty_inputs_give_empty_results() {
        assert!(filter_rows::<f64>(&[], 4, 1, 0.0).is_empty());
        assert!(filter_rows(&[1.0f64, 2.0, 3.0, 4.0], 4, 1, 5.0).is_empty());
    }
}
