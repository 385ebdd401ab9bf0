//! Applying a kernel argument's views (transpose, reshape, slices, broadcasts) to the
//! argument's memory at launch: new extents, strides and start address, no copy, except for
//! a reshape of memory whose strides cannot express it, which is first gathered into a
//! contiguous pool block (as NumPy copies in that case).

use crate::layout::gather_elems;
use crate::memory::{allocate, PoolBlock};
use crate::view::InputView;
use pyasc_ir::error::Result;
use pyasc_ir::view::{Strided, ViewSpec};

/// `v` read through `specs`, in order. Copies made on the way are pushed to `owned`, which
/// must outlive the returned view.
pub fn apply_views(v: &InputView, specs: &[ViewSpec], owned: &mut Vec<PoolBlock>) -> Result<InputView> {
    let size = v.dtype.size() as isize;
    let mut base = v.ptr;
    let mut cur = Strided { shape: v.shape.clone(), strides: v.strides.clone(), offset: 0 };
    for spec in specs {
        match spec.apply(&cur) {
            Some(next) => cur = next,
            None => {
                // Gather the current view into contiguous memory, then view that.
                let n: usize = cur.shape.iter().product();
                let block = allocate(n * v.dtype.size())?;
                // SAFETY: the view addresses valid elements; the block holds n elements.
                unsafe {
                    let src = base.offset(cur.offset * size);
                    let dims: Vec<usize> = if cur.shape.is_empty() { vec![1] } else { cur.shape.clone() };
                    let st: Vec<isize> = if cur.strides.is_empty() { vec![0] } else { cur.strides.clone() };
                    if n > 0 {
                        gather_elems(v.dtype.size(), src, &dims, &st, 0, block.as_ptr(), n);
                    }
                }
                base = block.as_ptr();
                owned.push(block);
                let contiguous = InputView::contiguous(base, v.dtype, cur.shape.clone());
                cur = spec
                    .apply(&Strided { shape: contiguous.shape, strides: contiguous.strides, offset: 0 })
                    .expect("a contiguous operand reshapes without copying");
            }
        }
    }
    // SAFETY: the offset addresses element [0, ...] of the view inside the same memory.
    let ptr = unsafe { base.offset(cur.offset * size) };
    Ok(InputView { ptr, dtype: v.dtype, shape: cur.shape, strides: cur.strides })
}
