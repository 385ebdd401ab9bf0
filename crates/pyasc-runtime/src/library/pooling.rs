//! 2-D max and average pooling over the last two axes of a strided input.
//!
//! Each output row is accumulated in a row buffer: for every input row its window covers
//! (rows in the padding are skipped) and every window column, the taps that fall inside the
//! input are folded into the buffer by [`pyasc_kernels::pool_taps::fold_taps`] (vectorized for
//! the active ISA at strides 1 and 2). Max pooling starts from `-inf` and propagates NaN; average pooling adds the
//! taps in window order and divides by the full window size (padding counts as zeros). Rows
//! of every plane are spread over the worker pool in blocks.

use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{LibCall, LibId, PoolKind, PoolSpec};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType};
use pyasc_kernels::pool_taps::{fold_taps, PoolFloat, Taps};

/// A float element type pooling computes in.
trait Float: PoolFloat + std::ops::Div<Output = Self> {
    const NEG_INF: Self;
    const ZERO: Self;
    fn from_usize(v: usize) -> Self;
}

impl Float for f32 {
    const NEG_INF: Self = f32::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn from_usize(v: usize) -> Self {
        v as f32
    }
}

impl Float for f64 {
    const NEG_INF: Self = f64::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn from_usize(v: usize) -> Self {
        v as f64
    }
}

/// Output positions per block of rows handed to one worker.
const BLOCK_OUTPUTS: usize = 16 << 10;

/// Pooling in element type `T`.
///
/// # Safety
/// `x` must be a live view of `T` elements, `out` must hold the C-contiguous result.
unsafe fn pool_typed<T: Float>(x: &InputView, out: *mut u8, spec: &PoolSpec) -> Result<()> {
    let r = x.shape.len();
    let (h, w) = (x.shape[r - 2], x.shape[r - 1]);
    let (hs, ws) = (x.strides[r - 2], x.strides[r - 1]);
    let oshape = spec.out_shape(&pyasc_ir::Shape(x.shape.clone()))?;
    let (oh, ow) = (oshape.0[r - 2], oshape.0[r - 1]);
    let planes: usize = x.shape[..r - 2].iter().product();
    if planes == 0 || oh == 0 || ow == 0 {
        return Ok(());
    }
    let [kh, kw] = spec.kernel;
    let [sh, sw] = spec.stride;
    let [ph, pw] = spec.pad;
    let rows_per_block = (BLOCK_OUTPUTS / ow).clamp(1, oh);
    let row_blocks = oh.div_ceil(rows_per_block);
    let (px, po) = (SendPtr(x.ptr as *mut u8), SendPtr(out));
    let token = crate::interrupt::current();
    let divisor = T::from_usize(kh * kw);
    // The leading axes, for each plane's offset (the view itself holds a raw pointer).
    let (lead, lead_strides) = (&x.shape[..r - 2], &x.strides[..r - 2]);
    let run_block = |b: usize| -> Result<()> {
        if let Some(t) = &token {
            t.check()?;
        }
        let (px, po) = (&px, &po);
        let (plane, rb) = (b / row_blocks, b % row_blocks);
        // Offset of this plane in the input, over the leading axes.
        let mut rem = plane;
        let mut base = 0isize;
        for d in (0..r - 2).rev() {
            base += (rem % lead[d]) as isize * lead_strides[d];
            rem /= lead[d];
        }
        let src = (px.0 as *const T).wrapping_offset(base);
        let mut acc = vec![if spec.kind == PoolKind::Max { T::NEG_INF } else { T::ZERO }; ow];
        let mut taps: Vec<Taps<T>> = Vec::with_capacity(kh * kw);
        for oy in rb * rows_per_block..((rb + 1) * rows_per_block).min(oh) {
            acc.fill(if spec.kind == PoolKind::Max { T::NEG_INF } else { T::ZERO });
            taps.clear();
            for ky in 0..kh {
                let iy = (oy * sh + ky) as isize - ph as isize;
                if iy < 0 || iy >= h as isize {
                    continue;
                }
                let row = src.wrapping_offset(iy * hs);
                for kx in 0..kw {
                    // Output columns whose tap kx lies inside the row: 0 <= ox*sw + kx - pw < w.
                    let off = kx as isize - pw as isize;
                    let lo = if off >= 0 { 0 } else { ((-off) as usize).div_ceil(sw) };
                    let hi = if w as isize - off <= 0 { 0 } else { ((w as isize - off) as usize).div_ceil(sw).min(ow) };
                    if lo >= hi {
                        continue;
                    }
                    let first = row.wrapping_offset((lo * sw) as isize * ws + off * ws);
                    taps.push(Taps { lo, hi, first });
                }
            }
            // SAFETY: every tap read lies inside the input row (lo..hi above).
            unsafe { fold_taps(&mut acc, &taps, sw as isize * ws, spec.kind == PoolKind::Max) };
            let o = (po.0 as *mut T).wrapping_add((plane * oh + oy) * ow);
            for (i, a) in acc.iter().enumerate() {
                let v = if spec.kind == PoolKind::Avg { *a / divisor } else { *a };
                // SAFETY: row oy of this plane lies inside the output; blocks write disjoint rows.
                unsafe { o.add(i).write(v) };
            }
        }
        Ok(())
    };
    let threads = num_threads();
    crate::pool::for_blocks(planes * row_blocks, threads.saturating_sub(1), run_block)
}

/// `out = pool2d(x)` with `spec`; `out` is C-contiguous with the result's shape.
///
/// # Safety
/// `x` must be a live view of its dtype and `out` must hold the result.
pub unsafe fn run_pool(x: &InputView, out: *mut u8, spec: &PoolSpec) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match x.dtype {
            DType::F32 => pool_typed::<f32>(x, out, spec),
            DType::F64 => pool_typed::<f64>(x, out, spec),
            other => Err(IrError::internal(format!("pool2d computes in float32 or float64, not {other}"))),
        }
    }
}

/// Pooling as a library routine.
pub struct PoolKernel;

impl crate::library::LibraryKernel for PoolKernel {
    fn id(&self) -> LibId {
        LibId::POOL
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Pool(spec), [x]) => unsafe { run_pool(x, out, spec) },
            _ => Err(IrError::internal("pool2d takes one operand and a pool attribute")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window definition in f64, padding as -inf (max) or 0 (avg).
    fn reference(x: &[f64], shape: [usize; 3], s: &PoolSpec) -> Vec<f64> {
        let [c, h, w] = shape;
        let o = s.out_shape(&pyasc_ir::Shape(shape.to_vec())).unwrap().0;
        let mut out = vec![];
        for ci in 0..c {
            for oy in 0..o[1] {
                for ox in 0..o[2] {
                    let mut vals = vec![];
                    for ky in 0..s.kernel[0] {
                        for kx in 0..s.kernel[1] {
                            let iy = (oy * s.stride[0] + ky) as isize - s.pad[0] as isize;
                            let ix = (ox * s.stride[1] + kx) as isize - s.pad[1] as isize;
                            let inside = iy >= 0 && ix >= 0 && iy < h as isize && ix < w as isize;
                            vals.push(if inside { Some(x[(ci * h + iy as usize) * w + ix as usize]) } else { None });
                        }
                    }
                    out.push(match s.kind {
                        PoolKind::Max => vals.iter().flatten().fold(f64::NEG_INFINITY, |a, v| a.max(*v)),
                        PoolKind::Avg => vals.iter().flatten().sum::<f64>() / vals.len() as f64,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn pooling_matches_the_window_definition() {
        let shape = [3, 9, 11];
        let x: Vec<f64> = (0..297).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
        for kind in [PoolKind::Max, PoolKind::Avg] {
            for (kernel, stride, pad) in [([2, 2], [2, 2], [0, 0]), ([3, 3], [2, 1], [1, 1]), ([3, 2], [1, 3], [1, 1])]
            {
                let s = PoolSpec { kind, kernel, stride, pad };
                let want = reference(&x, shape, &s);
                let mut got = vec![f64::NAN; want.len()];
                let v = InputView::contiguous(x.as_ptr() as *const u8, DType::F64, shape.to_vec());
                // SAFETY: the view addresses `x`; `got` holds the result.
                unsafe { run_pool(&v, got.as_mut_ptr() as *mut u8, &s) }.unwrap();
                assert_eq!(got, want, "{s:?}");
            }
        }
    }

    #[test]
    fn max_pooling_propagates_nan() {
        let x = [1.0f32, f32::NAN, 3.0, 4.0];
        let s = PoolSpec { kind: PoolKind::Max, kernel: [2, 2], stride: [2, 2], pad: [0, 0] };
        let v = InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![1, 2, 2]);
        let mut got = [0.0f32];
        // SAFETY: as above.
        unsafe { run_pool(&v, got.as_mut_ptr() as *mut u8, &s) }.unwrap();
        assert!(got[0].is_nan());
    }
}
