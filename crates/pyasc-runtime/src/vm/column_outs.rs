//! Per-row outputs stored as columns of a stack ([`pyasc_ir::tile::StackColumns`]): the row
//! kernel computes a tile's values into scratch and writes them with the stack's row stride,
//! and the `concatenate` that would copy them there is skipped.
//!
//! A launch that keeps or checks every kernel's output runs the plan as compiled instead
//! (those read each buffer whole and contiguous).

use super::RunOptions;
use crate::view::InputView;
use pyasc_ir::tile::KernelPlan;

/// Which buffers are columns of a stack in this launch, and which kernels are skipped.
pub(super) struct ColumnOuts {
    /// Per buffer: `(stack, column, columns)` when it is written in place.
    pub of: Vec<Option<(usize, usize, usize)>>,
    /// Per kernel: a copy into a stack that is skipped.
    pub skipped: Vec<bool>,
}

impl ColumnOuts {
    /// The stacks of `plan` written in place under `opts`.
    pub fn new(plan: &KernelPlan, opts: &RunOptions) -> Self {
        let mut c = ColumnOuts { of: vec![None; plan.buffers.len()], skipped: vec![false; plan.kernels.len()] };
        if opts.keep_outputs || opts.check_finite {
            return c;
        }
        for s in &plan.stack_columns {
            c.skipped[s.kernel] = true;
            for (i, b) in s.columns.iter().enumerate() {
                c.of[b.0 as usize] = Some((s.stack.0 as usize, i, s.columns.len()));
            }
        }
        c
    }

    /// The view of column buffer `b` inside its stack's memory `stack`, `None` when `b` is
    /// no column written in place.
    pub fn view(&self, b: usize, stack: &InputView) -> Option<InputView> {
        let (_, i, cols) = self.of[b]?;
        let n = stack.shape.first().copied().unwrap_or(0);
        // SAFETY: column `i` of a C-contiguous `(n, cols)` stack starts `i` elements in.
        let ptr = unsafe { stack.ptr.add(i * stack.dtype.size()) };
        Some(InputView { ptr, dtype: stack.dtype, shape: vec![n], strides: vec![cols as isize] })
    }
}

/// Writes `rows` per-row values of `size` bytes from `src` to every `step`-th element of
/// `dst`.
///
/// # Safety
/// `src` must hold `rows` values and `dst` address `(rows - 1) * step + 1` elements.
pub(super) unsafe fn scatter(dst: *mut u8, src: *const u8, rows: usize, step: usize, size: usize) {
    macro_rules! each {
        ($t:ty) => {
            for r in 0..rows {
                // SAFETY: per this function's contract.
                unsafe { *(dst as *mut $t).add(r * step) = *(src as *const $t).add(r) };
            }
        };
    }
    match size {
        1 => each!(u8),
        2 => each!(u16),
        4 => each!(u32),
        8 => each!(u64),
        _ => {
            for r in 0..rows {
                // SAFETY: per this function's contract.
                unsafe { std::ptr::copy_nonoverlapping(src.add(r * size), dst.add(r * step * size), size) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_rows_land_in_their_column_of_every_width() {
        for size in [1usize, 2, 4, 8, 3] {
            let (rows, step) = (5, 3);
            let src: Vec<u8> = (0..rows * size).map(|i| i as u8 + 1).collect();
            let mut dst = vec![0u8; rows * step * size];
            // SAFETY: `src` holds `rows` values, `dst` `rows * step` of `size` bytes.
            unsafe { scatter(dst.as_mut_ptr(), src.as_ptr(), rows, step, size) };
            for r in 0..rows {
                assert_eq!(&dst[r * step * size..][..size], &src[r * size..][..size]);
                assert!(dst[r * step * size + size..][..(step - 1) * size].iter().all(|b| *b == 0));
            }
        }
    }

    #[test]
    fn a_column_views_its_stack_with_the_row_stride() {
        let stack = [0f32; 12];
        let v = InputView::contiguous(stack.as_ptr() as *const u8, pyasc_ir::DType::F32, vec![4, 3]);
        let c = ColumnOuts { of: vec![None, Some((0, 2, 3))], skipped: vec![] };
        let col = c.view(1, &v).expect("a column");
        assert_eq!((col.shape.clone(), col.strides.clone()), (vec![4], vec![3]));
        assert_eq!(col.ptr as usize - stack.as_ptr() as usize, 8);
        assert!(c.view(0, &v).is_none());
    }
}
