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
/// # Safety
/// `x` must be readable and the destination writable over `x.shape`.
unsafe fn copy_strided(x: &InputView, dst: *mut u8, dst_strides: &[isize]) {
    let n: usize = x.shape.iter().product();
    if n == 0 {
        return;
    }
    let rank = x.shape.len();
    let size = x.dtype.size();
    let mut idx = vec![0usize; rank];
    for _ in 0..n {
        let (mut so, mut d) = (0isize, 0isize);
        for k in 0..rank {
            so += idx[k] as isize * x.strides[k];
            d += idx[k] as isize * dst_strides[k];
        }
        // SAFETY: per the contract above.
        unsafe { std::ptr::copy_nonoverlapping(x.ptr.offset(so * size as isize), dst.offset(d * size as isize), size) };
        for k in (0..rank).rev() {
            idx[k] += 1;
            if idx[k] < x.shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Write `np.concatenate(args, axis)` into the C-contiguous `out`.
///
/// # Safety
/// Every argument must be readable over its view and `out` writable for the joined shape.
pub unsafe fn run_concat(args: &[&InputView], out: *mut u8, axis: usize) -> Result<()> {
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
