//! Debug checks: after a kernel, find the first NaN or infinity it wrote.
//!
//! Run only for operators created with `debug=True` (compiled one op per kernel, so the
//! kernel's source line is the op's); without it nothing here runs.

use crate::view::InputView;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::DType;

/// Index of the first non-finite element of a contiguous float buffer, if any.
///
/// # Safety
/// `ptr` must address `n` elements of `dtype`.
pub unsafe fn first_non_finite(ptr: *const u8, dtype: DType, n: usize) -> Option<(usize, f64)> {
    // SAFETY: per the contract above.
    unsafe {
        match dtype {
            DType::F32 => std::slice::from_raw_parts(ptr as *const f32, n)
                .iter()
                .position(|v| !v.is_finite())
                .map(|i| (i, *(ptr as *const f32).add(i) as f64)),
            DType::F64 => std::slice::from_raw_parts(ptr as *const f64, n)
                .iter()
                .position(|v| !v.is_finite())
                .map(|i| (i, *(ptr as *const f64).add(i))),
            _ => None,
        }
    }
}

fn has_non_finite(v: &InputView) -> bool {
    if !v.dtype.is_float() {
        return false;
    }
    // Arguments may be strided: walk every element through its strides.
    let n: usize = v.shape.iter().product();
    let mut idx = vec![0usize; v.shape.len()];
    for _ in 0..n {
        let off: isize = idx.iter().zip(&v.strides).map(|(i, s)| *i as isize * s).sum();
        // SAFETY: the view's strides address its elements.
        let bad = unsafe {
            match v.dtype {
                DType::F32 => !(*(v.ptr as *const f32).offset(off)).is_finite(),
                _ => !(*(v.ptr as *const f64).offset(off)).is_finite(),
            }
        };
        if bad {
            return true;
        }
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < v.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    false
}

/// Check the outputs of kernel `k` for NaN/Inf: contiguous buffers, each of its dtype and
/// element count in `out_decls` (a reduction's output has fewer elements than the kernel's
/// iteration space).
pub fn check_kernel(k: &TileKernel, args: &[&InputView], outs: &[*mut u8], out_decls: &[(DType, usize)]) -> Result<()> {
    for (p, (dt, n)) in outs.iter().zip(out_decls) {
        // SAFETY: kernel outputs are contiguous buffers of their declared element counts.
        if let Some((i, v)) = unsafe { first_non_finite(*p, *dt, *n) } {
            let what = if v.is_nan() { "NaN" } else { "an infinity" };
            let ops = k.locs.first().map(|l| l.to_string()).unwrap_or_else(|| "an unknown line".into());
            let inputs = if args.iter().any(|a| has_non_finite(a)) {
                "its inputs already held NaN or infinity"
            } else {
                "its inputs were all finite"
            };
            let mut err = IrError::new(
                ErrorKind::Numerical,
                format!("kernel {} (the op at {ops}) produced {what} at flat index {i}; {inputs}", k.name),
            );
            err.loc = k.locs.first().cloned();
            return Err(err);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_bad_element() {
        let v = [1.0f32, 2.0, f32::INFINITY, f32::NAN];
        // SAFETY: `v` holds 4 float32 values.
        assert_eq!(unsafe { first_non_finite(v.as_ptr() as *const u8, DType::F32, 4) }.map(|x| x.0), Some(2));
        let w = [1.0f64, 2.0];
        // SAFETY: `w` holds 2 float64 values.
        assert_eq!(unsafe { first_non_finite(w.as_ptr() as *const u8, DType::F64, 2) }, None);
        let s = InputView { ptr: v.as_ptr() as *const u8, dtype: DType::F32, shape: vec![2], strides: vec![2] };
        assert!(has_non_finite(&s), "element 2 is inf");
        let s = InputView { ptr: v.as_ptr() as *const u8, dtype: DType::F32, shape: vec![2], strides: vec![1] };
        assert!(!has_non_finite(&s));
    }
}
