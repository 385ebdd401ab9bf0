//! Data-movement kernels: `np.pad` (each output element reads the element its per-axis index
//! map names, or the constant; modes constant, edge, reflect, wrap), `np.concatenate` and
//! `np.take`.

use crate::library::LibraryKernel;
use crate::view::InputView;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::library::LibCall;
use pyasc_ir::tile::TileKernel;
use pyasc_ir::view::PadSpec;
use pyasc_ir::{Attr, LibId};
use pyasc_ir::{DType, Scalar};

/// Write `np.pad(x, spec)` into the C-contiguous `out`.
///
/// # Safety
/// `x` must be readable over its view and `out` writable for the padded shape.
pub unsafe fn run_pad(x: &InputView, out: *mut u8, spec: &PadSpec) -> Result<()> {
    let rank = x.shape.len();
    let out_shape: Vec<usize> = spec.widths.iter().zip(&x.shape).map(|((b, a), d)| b + d + a).collect();
    let n: usize = out_shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    // Per axis: the source offset (in elements) of each output index, or None for the constant.
    let tables: Vec<Vec<Option<isize>>> = (0..rank)
        .map(|d| {
            (0..out_shape[d])
                .map(|i| spec.source(i, x.shape[d], spec.widths[d].0).map(|j| j as isize * x.strides[d]))
                .collect()
        })
        .collect();
    macro_rules! fill {
        ($t:ty, $c:expr) => {{
            let dst = out as *mut $t;
            let src = x.ptr as *const $t;
            let c: $t = $c;
            let mut idx = vec![0usize; rank];
            for p in 0..n {
                let mut off = Some(0isize);
                for d in 0..rank {
                    off = match (off, tables[d][idx[d]]) {
                        (Some(o), Some(t)) => Some(o + t),
                        _ => None,
                    };
                }
                // SAFETY: `p` < n elements of the output; offsets come from valid indices.
                unsafe { *dst.add(p) = off.map_or(c, |o| *src.offset(o)) };
                for d in (0..rank).rev() {
                    idx[d] += 1;
                    if idx[d] < out_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }};
    }
    let cv = spec.cval;
    // Integer fill values wrap into the dtype as NumPy's casts do.
    let int = cv.cast(DType::I64).as_i64();
    match x.dtype {
        DType::Bool => fill!(u8, cv.as_bool() as u8),
        DType::I8 => fill!(i8, int as i8),
        DType::U8 => fill!(u8, int as u8),
        DType::I16 => fill!(i16, int as i16),
        DType::U16 => fill!(u16, int as u16),
        DType::I32 => fill!(i32, int as i32),
        DType::U32 => fill!(u32, int as u32),
        DType::I64 => fill!(i64, int),
        DType::U64 => fill!(u64, int as u64),
        DType::F32 => fill!(f32, cv.as_f64() as f32),
        DType::F64 => fill!(
            f64,
            match cv {
                Scalar::Float(f) => f,
                other => other.as_f64(),
            }
        ),
        other => return Err(IrError::new(ErrorKind::Unsupported, format!("pad of {other} arrays"))),
    }
    Ok(())
}

/// Copy every element of the strided view `x` to `dst` + the strided offsets `dst_strides`.
///
/// Axes of length 1 are dropped first; the last remaining axis runs as one typed loop (a
/// `memcpy` where both sides are contiguous), the others step the two offsets.
///
/// # Safety
/// `x` must be readable and the destination writable over `x.shape`.
unsafe fn copy_strided(x: &InputView, dst: *mut u8, dst_strides: &[isize]) {
    if x.shape.contains(&0) {
        return;
    }
    let axes: Vec<(usize, isize, isize)> =
        (0..x.shape.len()).filter(|&k| x.shape[k] != 1).map(|k| (x.shape[k], x.strides[k], dst_strides[k])).collect();
    let size = x.dtype.size();
    let Some(&(inner, si, di)) = axes.last() else {
        // SAFETY: one element, per the contract above.
        unsafe { std::ptr::copy_nonoverlapping(x.ptr, dst, size) };
        return;
    };
    let outer = &axes[..axes.len() - 1];
    let rows: usize = outer.iter().map(|a| a.0).product();
    let mut idx = vec![0usize; outer.len()];
    let (mut so, mut d) = (0isize, 0isize);
    for _ in 0..rows {
        // SAFETY: per the contract above; `so` and `d` address the row's first element.
        unsafe { copy_run(size, x.ptr.offset(so * size as isize), si, dst.offset(d * size as isize), di, inner) };
        for k in (0..outer.len()).rev() {
            let (len, s, t) = outer[k];
            idx[k] += 1;
            so += s;
            d += t;
            if idx[k] < len {
                break;
            }
            idx[k] = 0;
            so -= len as isize * s;
            d -= len as isize * t;
        }
    }
}

/// Copy `n` elements of `size` bytes from `src` (stride `ss` elements) to `dst` (stride `ds`).
///
/// # Safety
/// Both runs must be valid for `n` elements at their strides.
unsafe fn copy_run(size: usize, src: *const u8, ss: isize, dst: *mut u8, ds: isize, n: usize) {
    /// # Safety
    /// As for [`copy_run`], with elements of `T`.
    #[inline(always)]
    unsafe fn typed<T: Copy>(src: *const T, ss: isize, dst: *mut T, ds: isize, n: usize) {
        // SAFETY: per the contract above.
        unsafe {
            if ss == 1 && ds == 1 {
                std::ptr::copy_nonoverlapping(src, dst, n);
            } else {
                for i in 0..n as isize {
                    *dst.offset(i * ds) = *src.offset(i * ss);
                }
            }
        }
    }
    // SAFETY: per the contract above; the element size picks the type of one element.
    unsafe {
        match size {
            1 => typed(src, ss, dst, ds, n),
            2 => typed(src as *const u16, ss, dst as *mut u16, ds, n),
            4 => typed(src as *const u32, ss, dst as *mut u32, ds, n),
            8 => typed(src as *const u64, ss, dst as *mut u64, ds, n),
            _ => {
                for i in 0..n as isize {
                    std::ptr::copy_nonoverlapping(
                        src.offset(i * ss * size as isize),
                        dst.offset(i * ds * size as isize),
                        size,
                    );
                }
            }
        }
    }
}

/// Write `np.concatenate(args, axis)` into the C-contiguous `out`.
///
/// # Safety
/// Every argument must be readable over its view and `out` writable for the joined shape.
pub unsafe fn run_concat(args: &[&InputView], out: *mut u8, axis: usize) -> Result<()> {
    // SAFETY: per this function's contract.
    if unsafe { crate::stack_columns::stack_columns(args, out, axis) } {
        return Ok(());
    }
    let mut shape = args[0].shape.clone();
    shape[axis] = args.iter().map(|a| a.shape[axis]).sum();
    let strides = InputView::contiguous(std::ptr::null(), args[0].dtype, shape).strides;
    let size = args[0].dtype.size() as isize;
    let mut at = 0isize;
    for a in args {
        // SAFETY: each input lands in its own slab of the output along `axis`.
        unsafe { copy_strided(a, out.offset(at * strides[axis] * size), &strides) };
        at += a.shape[axis] as isize;
    }
    Ok(())
}

/// Write `np.take(x, idx, axis)` into the C-contiguous `out`; an index out of range is an
/// error naming the op's line.
///
/// # Safety
/// `x` and `idx` (int64) must be readable over their views and `out` writable for the result.
pub unsafe fn run_take(
    x: &InputView,
    idx: &InputView,
    out: *mut u8,
    axis: usize,
    loc: Option<&pyasc_ir::SourceLoc>,
) -> Result<()> {
    let n_ax = x.shape[axis] as i64;
    let m: usize = idx.shape.iter().product();
    // The indices, in C order, wrapped like NumPy (negative from the end).
    let mut ids = Vec::with_capacity(m);
    let mut pos = vec![0usize; idx.shape.len()];
    for _ in 0..m {
        let off: isize = pos.iter().zip(&idx.strides).map(|(i, s)| *i as isize * s).sum();
        // SAFETY: the index view addresses int64 elements.
        let i = unsafe { *(idx.ptr as *const i64).offset(off) };
        let j = if i < 0 { i + n_ax } else { i };
        if j < 0 || j >= n_ax {
            let mut e = pyasc_ir::IrError::new(
                pyasc_ir::error::ErrorKind::Shape,
                format!("take: index {i} is out of bounds for axis {axis} with size {n_ax}"),
            );
            e.loc = loc.cloned();
            return Err(e);
        }
        ids.push(j as isize);
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            if pos[d] < idx.shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    let outer: usize = x.shape[..axis].iter().product();
    let inner_shape = &x.shape[axis + 1..];
    let inner: usize = inner_shape.iter().product();
    let size = x.dtype.size();
    let mut o = 0usize;
    for p in 0..outer {
        // Offset of the outer index p.
        let mut rem = p;
        let mut base = 0isize;
        for d in (0..axis).rev() {
            base += (rem % x.shape[d]) as isize * x.strides[d];
            rem /= x.shape[d];
        }
        for &j in &ids {
            let row = InputView {
                // SAFETY: `j` is in range; the inner block stays inside `x`.
                ptr: unsafe { x.ptr.offset((base + j * x.strides[axis]) * size as isize) },
                dtype: x.dtype,
                shape: inner_shape.to_vec(),
                strides: x.strides[axis + 1..].to_vec(),
            };
            let dst_strides = InputView::contiguous(std::ptr::null(), x.dtype, inner_shape.to_vec()).strides;
            // SAFETY: the output block of `inner` elements at `o` is this one's.
            unsafe { copy_strided(&row, out.add(o * size), &dst_strides) };
            o += inner;
        }
    }
    Ok(())
}

/// `np.pad` as a library routine.
pub struct PadKernel;
/// `np.concatenate` as a library routine.
pub struct ConcatKernel;
/// `np.take` as a library routine.
pub struct TakeKernel;

impl LibraryKernel for PadKernel {
    fn id(&self) -> LibId {
        LibId::PAD
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Pad(spec), [x]) => unsafe { run_pad(x, out, spec) },
            _ => Err(IrError::internal("pad takes one operand and a pad attribute")),
        }
    }
}

impl LibraryKernel for ConcatKernel {
    fn id(&self) -> LibId {
        LibId::CONCAT
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        let axis = call.attr.axis().ok_or_else(|| IrError::internal("concatenate needs an axis"))?;
        // SAFETY: per the trait's contract.
        unsafe { run_concat(operands, out, axis) }
    }
}

impl LibraryKernel for TakeKernel {
    fn id(&self) -> LibId {
        LibId::TAKE
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, k: &TileKernel) -> Result<()> {
        match (call.attr.axis(), operands) {
            // SAFETY: per the trait's contract.
            (Some(axis), [x, idx]) => unsafe { run_take(x, idx, out, axis, k.locs.first()) },
            _ => Err(IrError::internal("take takes an operand, indices and an axis")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element of a strided view at `idx`, walked naively.
    fn at(data: &[i32], strides: &[isize], idx: &[usize]) -> i32 {
        data[idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum::<isize>() as usize]
    }

    #[test]
    fn strided_copies_match_naive_indexing() {
        let data: Vec<i32> = (0..2 * 3 * 5 * 4).collect();
        // (shape, strides) views of `data`: contiguous, transposed, with unit axes, one column.
        let views: Vec<(Vec<usize>, Vec<isize>)> = vec![
            (vec![2, 3, 5, 4], vec![60, 20, 4, 1]),
            (vec![4, 5, 3, 2], vec![1, 4, 20, 60]),
            (vec![6, 1, 5], vec![20, 0, 4]),
            (vec![30, 1], vec![4, 1]),
            (vec![1, 1], vec![7, 3]),
            (vec![3, 0, 2], vec![1, 1, 1]),
        ];
        for (shape, strides) in views {
            let n: usize = shape.iter().product();
            let view = InputView {
                ptr: data.as_ptr() as *const u8,
                dtype: DType::I32,
                shape: shape.clone(),
                strides: strides.clone(),
            };
            // Into a destination twice as wide along the last axis (every other slot written).
            let mut dst_strides = InputView::contiguous(std::ptr::null(), DType::I32, shape.clone()).strides;
            dst_strides.iter_mut().for_each(|s| *s *= 2);
            let mut out = vec![-1i32; 2 * n.max(1)];
            // SAFETY: the view lies inside `data` and the destination inside `out`.
            unsafe { copy_strided(&view, out.as_mut_ptr() as *mut u8, &dst_strides) };
            let mut idx = vec![0usize; shape.len()];
            for _ in 0..n {
                assert_eq!(at(&out, &dst_strides, &idx), at(&data, &strides, &idx), "{shape:?} {strides:?} at {idx:?}");
                for k in (0..shape.len()).rev() {
                    idx[k] += 1;
                    if idx[k] < shape[k] {
                        break;
                    }
                    idx[k] = 0;
                }
            }
            let written = out.iter().filter(|&&v| v != -1).count();
            assert_eq!(written, if n == 0 { 0 } else { n }, "{shape:?}: exactly the view's elements are written");
        }
    }
}
