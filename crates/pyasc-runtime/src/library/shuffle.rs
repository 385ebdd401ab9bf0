//! `pixel_shuffle`: output row `(*, c, h*r + i)` interleaves the `r` input rows
//! `(*, c*r*r + i*r + j, h)` for `j` in `0..r`, element `w` of row `j` landing at `w*r + j`.
//! Rows are spread over the worker pool in blocks; elements move by their size, whatever
//! their dtype.

use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{shuffle_shape, LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::Attr;

/// Output rows per block handed to one worker.
const BLOCK_ROWS: usize = 64;

/// The shuffle for elements stored as `T` (any type of the element's size).
///
/// # Safety
/// `x` must be a live view of elements of `T`'s size; `out` must hold the C-contiguous result.
unsafe fn shuffle_typed<T: Copy + Send + Sync>(x: &InputView, out: *mut u8, r: usize) -> Result<()> {
    let n = x.shape.len();
    let oshape = shuffle_shape(&pyasc_ir::Shape(x.shape.clone()), r)?;
    let (c, h, w) = (oshape.0[n - 3], x.shape[n - 2], x.shape[n - 1]);
    let (cs, hs, ws) = (x.strides[n - 3], x.strides[n - 2], x.strides[n - 1]);
    let lead: usize = x.shape[..n - 3].iter().product();
    // Output rows: (lead, c, h*r).
    let rows = lead * c * h * r;
    if rows == 0 || w == 0 {
        return Ok(());
    }
    let (lead_shape, lead_strides) = (&x.shape[..n - 3], &x.strides[..n - 3]);
    let (px, po) = (SendPtr(x.ptr as *mut u8), SendPtr(out));
    let ow = w * r;
    let blocks = rows.div_ceil(BLOCK_ROWS);
    let run_block = |b: usize| -> Result<()> {
        let (px, po) = (&px, &po);
        for row in b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(rows) {
            let oh = row % (h * r);
            let (hi, i) = (oh / r, oh % r);
            let rest = row / (h * r);
            let (l, ci) = (rest / c, rest % c);
            let mut base = 0isize;
            let mut rem = l;
            for d in (0..lead_shape.len()).rev() {
                base += (rem % lead_shape[d]) as isize * lead_strides[d];
                rem /= lead_shape[d];
            }
            let dst = (po.0 as *mut T).wrapping_add(row * ow);
            for j in 0..r {
                let ch = ci * r * r + i * r + j;
                let src = (px.0 as *const T).wrapping_offset(base + ch as isize * cs + hi as isize * hs);
                for k in 0..w {
                    // SAFETY: (ch, hi, k) lies inside the input and k*r + j inside the output row;
                    // blocks write disjoint rows.
                    unsafe { dst.add(k * r + j).write(*src.offset(k as isize * ws)) };
                }
            }
        }
        Ok(())
    };
    crate::pool::for_blocks(blocks, num_threads().saturating_sub(1), run_block)
}

/// `out = pixel_shuffle(x, r)`; `out` is C-contiguous with the result's shape.
///
/// # Safety
/// `x` must be a live view of its dtype and `out` must hold the result.
pub unsafe fn run_shuffle(x: &InputView, out: *mut u8, r: usize) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match x.dtype.size() {
            1 => shuffle_typed::<u8>(x, out, r),
            2 => shuffle_typed::<u16>(x, out, r),
            4 => shuffle_typed::<u32>(x, out, r),
            8 => shuffle_typed::<u64>(x, out, r),
            s => Err(IrError::internal(format!("pixel_shuffle of {s}-byte elements"))),
        }
    }
}

/// `pixel_shuffle` as a library routine.
pub struct ShuffleKernel;

impl crate::library::LibraryKernel for ShuffleKernel {
    fn id(&self) -> LibId {
        LibId::PIXEL_SHUFFLE
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Upscale(r), [x]) => unsafe { run_shuffle(x, out, *r) },
            _ => Err(IrError::internal("pixel_shuffle takes one operand and a factor")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::DType;

    #[test]
    fn rows_interleave_as_torch_does() {
        // x[c, h, w] = 100*c + 10*h + w, 8 channels, r = 2: 2 output channels of 6x4.
        let (c, h, w, r) = (8usize, 3usize, 2usize, 2usize);
        let x: Vec<i32> = (0..c * h * w).map(|i| (100 * (i / (h * w)) + 10 * (i / w % h) + i % w) as i32).collect();
        let v = InputView::contiguous(x.as_ptr() as *const u8, DType::I32, vec![c, h, w]);
        let mut got = vec![-1i32; c * h * w];
        // SAFETY: the view addresses `x`; `got` holds the result.
        unsafe { run_shuffle(&v, got.as_mut_ptr() as *mut u8, r) }.unwrap();
        for oc in 0..c / (r * r) {
            for oy in 0..h * r {
                for ox in 0..w * r {
                    let ch = oc * r * r + (oy % r) * r + ox % r;
                    let want = (100 * ch + 10 * (oy / r) + ox / r) as i32;
                    assert_eq!(got[(oc * h * r + oy) * w * r + ox], want, "({oc}, {oy}, {ox})");
                }
            }
        }
    }
}
