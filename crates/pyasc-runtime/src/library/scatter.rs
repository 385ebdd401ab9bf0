//! The scatter routine: copy the base into the output, then combine each value with the
//! element its flat index names, in C order of the indices (see
//! [`pyasc_ir::library::Scatter`]); and its inverse companion `nonzero` with a static size
//! ([`pyasc_ir::library::NonZero`]).

use crate::library::LibraryKernel;
use crate::view::InputView;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::library::{LibCall, ScatterMode};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType, LibId};

/// Runs [`pyasc_ir::library::Scatter`].
pub struct ScatterKernel;

/// Element offsets of a view, in C order of its indices.
fn offsets(v: &InputView) -> Vec<isize> {
    let n: usize = v.shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = v.shape.len();
    let mut idx = vec![0usize; rank];
    for _ in 0..n {
        out.push(idx.iter().zip(&v.strides).map(|(i, s)| *i as isize * s).sum());
        for k in (0..rank).rev() {
            idx[k] += 1;
            if idx[k] < v.shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Combine `old` and `new` as `mode` says, for one element type.
trait Combine: Copy {
    fn combine(self, new: Self, mode: ScatterMode) -> Self;
}

macro_rules! int_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combine(self, new: Self, mode: ScatterMode) -> Self {
                match mode {
                    ScatterMode::Set => new,
                    ScatterMode::Add => self.wrapping_add(new),
                    ScatterMode::Mul => self.wrapping_mul(new),
                    ScatterMode::Min => self.min(new),
                    ScatterMode::Max => self.max(new),
                }
            }
        }
    )*};
}
int_combine!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combine(self, new: Self, mode: ScatterMode) -> Self {
                match mode {
                    ScatterMode::Set => new,
                    ScatterMode::Add => self + new,
                    ScatterMode::Mul => self * new,
                    ScatterMode::Min if self.is_nan() || new.is_nan() => <$t>::NAN,
                    ScatterMode::Max if self.is_nan() || new.is_nan() => <$t>::NAN,
                    ScatterMode::Min => self.min(new),
                    ScatterMode::Max => self.max(new),
                }
            }
        }
    )*};
}
float_combine!(f32, f64);

/// Booleans as NumPy's bool ufuncs: add is `or`, multiply is `and`.
#[derive(Copy, Clone)]
struct B(u8);

impl Combine for B {
    fn combine(self, new: Self, mode: ScatterMode) -> Self {
        let (a, b) = (self.0 != 0, new.0 != 0);
        B(match mode {
            ScatterMode::Set => b,
            ScatterMode::Add | ScatterMode::Max => a || b,
            ScatterMode::Mul | ScatterMode::Min => a && b,
        } as u8)
    }
}

/// `out = base; out.flat[idx[k]] op= vals[k]` for `k` in C order.
///
/// # Safety
/// `base`, `idx` (int64) and `vals` (the base's dtype, the indices' shape) must be readable
/// over their views and `out` writable for the base's shape, C-contiguous.
pub unsafe fn run_scatter(
    base: &InputView,
    idx: &InputView,
    vals: &InputView,
    out: *mut u8,
    mode: ScatterMode,
    loc: Option<&pyasc_ir::SourceLoc>,
) -> Result<()> {
    let n: usize = base.shape.iter().product();
    let size = base.dtype.size();
    for (k, off) in offsets(base).into_iter().enumerate() {
        // SAFETY: per the contract: element `off` of the base, element `k` of the output.
        unsafe { std::ptr::copy_nonoverlapping(base.ptr.offset(off * size as isize), out.add(k * size), size) };
    }
    let ids = offsets(idx);
    let vs = offsets(vals);
    let mut flat = Vec::with_capacity(ids.len());
    for off in ids {
        // SAFETY: the index view addresses int64 elements.
        let i = unsafe { *(idx.ptr as *const i64).offset(off) };
        let j = if i < 0 { i + n as i64 } else { i };
        if j < 0 || j >= n as i64 {
            let mut e = IrError::new(
                ErrorKind::Shape,
                format!("scatter: index {i} is out of bounds for an array of {n} elements"),
            );
            e.loc = loc.cloned();
            return Err(e);
        }
        flat.push(j as usize);
    }
    macro_rules! go {
        ($t:ty) => {{
            let dst = out as *mut $t;
            let src = vals.ptr as *const $t;
            for (j, v) in flat.iter().zip(&vs) {
                // SAFETY: `j` is in range of the output; `v` is an element of the values.
                unsafe { *dst.add(*j) = (*dst.add(*j)).combine(*src.offset(*v), mode) };
            }
        }};
    }
    match base.dtype {
        DType::Bool => go!(B),
        DType::I8 => go!(i8),
        DType::U8 => go!(u8),
        DType::I16 => go!(i16),
        DType::U16 => go!(u16),
        DType::I32 => go!(i32),
        DType::U32 => go!(u32),
        DType::I64 => go!(i64),
        DType::U64 => go!(u64),
        DType::F32 => go!(f32),
        DType::F64 => go!(f64),
        other => return Err(IrError::internal(format!("scatter of {other} is not supported"))),
    }
    Ok(())
}

impl LibraryKernel for ScatterKernel {
    fn id(&self) -> LibId {
        LibId::SCATTER
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Scatter(mode), [b, i, v]) => unsafe { run_scatter(b, i, v, out, *mode, k.locs.first()) },
            _ => Err(IrError::internal("scatter takes a mode, a base, indices and values")),
        }
    }
}

/// Runs [`pyasc_ir::library::NonZero`].
pub struct NonZeroKernel;

/// Write the flat positions of the first `out`-length non-zero elements of `mask` (bools),
/// padded with -1.
///
/// # Safety
/// `mask` must be readable over its view and `out` writable for `size` int64 elements.
pub unsafe fn run_nonzero(mask: &InputView, out: *mut u8, size: usize) {
    let out = out as *mut i64;
    let mut k = 0usize;
    for (p, off) in offsets(mask).into_iter().enumerate() {
        if k == size {
            break;
        }
        // SAFETY: `off` addresses an element of the mask.
        if unsafe { *mask.ptr.offset(off) } != 0 {
            // SAFETY: `k < size`.
            unsafe { *out.add(k) = p as i64 };
            k += 1;
        }
    }
    for j in k..size {
        // SAFETY: `j < size`.
        unsafe { *out.add(j) = -1 };
    }
}

impl LibraryKernel for NonZeroKernel {
    fn id(&self) -> LibId {
        LibId::NONZERO
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            (Attr::Count(n), [m]) if m.dtype == DType::Bool => {
                // SAFETY: per the trait's contract.
                unsafe { run_nonzero(m, out, *n) };
                Ok(())
            }
            _ => Err(IrError::internal("nonzero takes a size and one bool operand")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<T>(data: &[T], dtype: DType, shape: Vec<usize>) -> InputView {
        InputView::contiguous(data.as_ptr() as *const u8, dtype, shape)
    }

    fn scatter_f64(base: &[f64], idx: &[i64], vals: &[f64], mode: ScatterMode) -> Result<Vec<f64>> {
        let mut out = vec![0.0f64; base.len()];
        let (b, i, v) = (
            view(base, DType::F64, vec![base.len()]),
            view(idx, DType::I64, vec![idx.len()]),
            view(vals, DType::F64, vec![vals.len()]),
        );
        // SAFETY: the views cover the vectors above, which outlive the call.
        unsafe { run_scatter(&b, &i, &v, out.as_mut_ptr() as *mut u8, mode, None) }?;
        Ok(out)
    }

    #[test]
    fn repeated_indices_follow_numpy_and_jax() {
        let base = [1.0, 2.0, 3.0];
        let (idx, vals) = ([0, 0, -1, 0], [10.0, 20.0, 30.0, 40.0]);
        assert_eq!(scatter_f64(&base, &idx, &vals, ScatterMode::Set).unwrap(), vec![40.0, 2.0, 30.0]);
        assert_eq!(scatter_f64(&base, &idx, &vals, ScatterMode::Add).unwrap(), vec![71.0, 2.0, 33.0]);
        assert_eq!(scatter_f64(&base, &idx, &vals, ScatterMode::Mul).unwrap(), vec![8000.0, 2.0, 90.0]);
        assert_eq!(scatter_f64(&base, &idx, &vals, ScatterMode::Min).unwrap(), vec![1.0, 2.0, 3.0]);
        assert_eq!(scatter_f64(&base, &idx, &vals, ScatterMode::Max).unwrap(), vec![40.0, 2.0, 30.0]);
        let nan = scatter_f64(&base, &[1], &[f64::NAN], ScatterMode::Min).unwrap();
        assert!(nan[1].is_nan());
    }

    #[test]
    fn nonzero_pads_with_minus_one_and_truncates() {
        let m = [0u8, 1, 1, 0, 1];
        let mut out = [0i64; 4];
        // SAFETY: the view covers `m`, the output holds 4 elements.
        unsafe { run_nonzero(&view(&m, DType::Bool, vec![5]), out.as_mut_ptr() as *mut u8, 4) };
        assert_eq!(out, [1, 2, 4, -1]);
        let mut two = [0i64; 2];
        // SAFETY: as above, with 2 elements.
        unsafe { run_nonzero(&view(&m, DType::Bool, vec![5]), two.as_mut_ptr() as *mut u8, 2) };
        assert_eq!(two, [1, 2]);
    }

    #[test]
    fn an_index_out_of_range_is_a_shape_error() {
        let err = scatter_f64(&[1.0, 2.0], &[2], &[0.0], ScatterMode::Set).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Shape);
        assert!(scatter_f64(&[1.0, 2.0], &[-3], &[0.0], ScatterMode::Add).is_err());
    }

    #[test]
    fn strided_base_and_broadcast_values() {
        // The base is the transpose of [[1, 2], [3, 4]]; the values one element broadcast.
        let data = [1i32, 2, 3, 4];
        let base =
            InputView { ptr: data.as_ptr() as *const u8, dtype: DType::I32, shape: vec![2, 2], strides: vec![1, 2] };
        let idx = [3i64, 0];
        let one = [7i32];
        let vals = InputView { ptr: one.as_ptr() as *const u8, dtype: DType::I32, shape: vec![2], strides: vec![0] };
        let mut out = [0i32; 4];
        // SAFETY: every view addresses the arrays above.
        unsafe {
            run_scatter(
                &base,
                &view(&idx, DType::I64, vec![2]),
                &vals,
                out.as_mut_ptr() as *mut u8,
                ScatterMode::Add,
                None,
            )
        }
        .unwrap();
        assert_eq!(out, [8, 3, 2, 11]);
    }
}
