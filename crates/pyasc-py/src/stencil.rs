//! The binding of the stencil sweep: NumPy fields in, a program as tuples, the result written in place.
//!
//! `pyasc.stencil` traces a stencil body into instruction tuples and calls [`stencil_sweep`]
//! with C-contiguous float32 or float64 arrays. Reads are given as per-axis offsets and checked
//! against the halo here, then turned into linear offsets of the grid.

use crate::errors::to_py;
use numpy::{
    Element, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_kernels::stencil::{BinOp, Instr, Operand, Program, StencilFloat, UnOp};
use pyasc_kernels::stencil_sweep::{sweep, Fixed, Layout};
use pyo3::prelude::*;

/// An operand as Python sends it: (kind, index, (d0, d1, d2), value); kind 0 reads field
/// `index` at the offsets, 1 is register `index`, 2 the constant `value`.
type PyOperand = (u8, usize, (i64, i64, i64), f64);
/// An instruction: (op name, operands, destination register or -1 for the output). `sum`,
/// `sum*` and `sum/` sum their operands (value 1.0 on an operand after the first: subtract it),
/// the last two then scale by their last operand, a constant.
type PyInstr = (String, Vec<PyOperand>, i64);

fn invalid(msg: impl Into<String>) -> PyErr {
    to_py(IrError::new(ErrorKind::InvalidArgument, msg))
}

fn operand(l: &Layout, o: &PyOperand) -> PyResult<Operand> {
    Ok(match o.0 {
        0 => {
            let d = [o.2 .0 as isize, o.2 .1 as isize, o.2 .2 as isize];
            for (axis, &v) in d.iter().enumerate() {
                if v < -(l.lo[axis] as isize) || v > l.hi[axis] as isize {
                    return Err(invalid(format!("stencil read {d:?} lies outside the halo {:?}/{:?}", l.lo, l.hi)));
                }
            }
            Operand::Read { field: o.1, offset: l.offset(d) }
        }
        1 => Operand::Tmp(o.1),
        2 => Operand::Const(o.3),
        k => return Err(invalid(format!("unknown stencil operand kind {k}"))),
    })
}

fn program(l: &Layout, instrs: &[PyInstr], tmps: usize) -> PyResult<Program> {
    let mut out = Vec::with_capacity(instrs.len());
    for (name, ops, dest) in instrs {
        let dest = if *dest < 0 { None } else { Some(*dest as usize) };
        let bin = match name.as_str() {
            "add" => Some(BinOp::Add),
            "sub" => Some(BinOp::Sub),
            "mul" => Some(BinOp::Mul),
            "div" => Some(BinOp::Div),
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            _ => None,
        };
        if let Some(kind) = name.strip_prefix("sum") {
            // Operands to sum (value 1.0: subtract it), then for "sum*" / "sum/" the constant.
            let (terms, post) = match kind {
                "" => (ops.as_slice(), None),
                "*" | "/" if ops.len() > 2 => {
                    let op = if kind == "*" { BinOp::Mul } else { BinOp::Div };
                    (&ops[..ops.len() - 1], Some((op, ops[ops.len() - 1].3)))
                }
                _ => return Err(invalid(format!("unknown stencil op {name:?}"))),
            };
            let neg = terms.iter().skip(1).map(|o| o.3 != 0.0).collect();
            let ops = terms.iter().map(|o| operand(l, o)).collect::<PyResult<_>>()?;
            out.push(Instr::Sum { ops, neg, post, dest });
            continue;
        }
        let ins = match (bin, ops.as_slice()) {
            (Some(op), [a, b]) => Instr::Bin { op, a: operand(l, a)?, b: operand(l, b)?, dest },
            (None, [a]) => {
                let op = match name.as_str() {
                    "neg" => UnOp::Neg,
                    "abs" => UnOp::Abs,
                    "sqrt" => UnOp::Sqrt,
                    "copy" => UnOp::Copy,
                    other => return Err(invalid(format!("unknown stencil op {other:?}"))),
                };
                Instr::Un { op, a: operand(l, a)?, dest }
            }
            _ => return Err(invalid(format!("stencil op {name:?} with {} operands", ops.len()))),
        };
        out.push(ins);
    }
    Ok(Program { instrs: out, tmps })
}

fn layout(shape: &[usize], lo: &[usize], hi: &[usize]) -> PyResult<Layout> {
    let r = shape.len();
    if !(1..=3).contains(&r) || lo.len() != r || hi.len() != r {
        return Err(invalid("a stencil grid has 1 to 3 axes and a halo per axis"));
    }
    let mut l = Layout { shape: [1; 3], lo: [0; 3], hi: [0; 3] };
    l.shape[..r].copy_from_slice(shape);
    l.lo[..r].copy_from_slice(lo);
    l.hi[..r].copy_from_slice(hi);
    l.check().map_err(invalid)?;
    Ok(l)
}

#[allow(clippy::too_many_arguments)]
fn run<T: StencilFloat + Element>(
    py: Python<'_>,
    fields: &[Bound<'_, PyUntypedArray>],
    out: &Bound<'_, PyUntypedArray>,
    fixed: Option<&Bound<'_, PyUntypedArray>>,
    cval: f64,
    prog: &Program,
    l: &Layout,
    steps: usize,
    cache_bytes: usize,
) -> PyResult<()> {
    let views: Vec<PyReadonlyArrayDyn<T>> =
        fields.iter().map(|f| f.cast::<numpy::PyArrayDyn<T>>().map(|a| a.readonly())).collect::<Result<_, _>>()?;
    let slices: Vec<&[T]> = views.iter().map(|v| v.as_slice()).collect::<Result<_, _>>()?;
    let fixed_view: Option<PyReadonlyArrayDyn<T>> =
        fixed.map(|f| f.cast::<numpy::PyArrayDyn<T>>().map(|a| a.readonly())).transpose()?;
    let fixed_slice = fixed_view.as_ref().map(|v| v.as_slice()).transpose()?;
    let mut out_view: PyReadwriteArrayDyn<T> = out.cast::<numpy::PyArrayDyn<T>>()?.readwrite();
    let out_slice = out_view.as_slice_mut()?;
    let fixed = match fixed_slice {
        Some(a) => Fixed::From(a),
        None => Fixed::Const(T::from_f64(cval)),
    };
    let threads = pyasc_runtime::pool::num_threads();
    let par = |n: usize, f: &(dyn Fn(usize) + Sync)| {
        let _ = pyasc_runtime::pool::for_blocks(n, threads.saturating_sub(1), |b| {
            f(b);
            Ok::<(), ()>(())
        });
    };
    // The state between blocks of steps lives in a warm pool block: a fresh allocation faults
    // in its pages on every call (a tenth of 100 Jacobi steps over 2048 x 2048 float32, perf).
    let spare_block = if steps > 1 {
        Some(pyasc_runtime::memory::allocate(std::mem::size_of_val(out_slice)).map_err(crate::errors::to_py)?)
    } else {
        None
    };
    let n = out_slice.len();
    py.detach(|| {
        // SAFETY: the block holds at least `n` cells of `T` (aligned for any float), is ours
        // alone and outlives the sweep.
        let spare = spare_block.as_ref().map(|b| unsafe { std::slice::from_raw_parts_mut(b.as_ptr() as *mut T, n) });
        sweep(prog, l, &slices, fixed, out_slice, spare, steps, threads, cache_bytes, &par)
    })
    .map_err(invalid)
}

/// Bytes of the per-band buffers of temporal blocking (two of them live in one core's L2).
const CACHE_BYTES: usize = 1 << 20;

/// Applies a traced stencil program `steps` times (see `pyasc.stencil`).
///
/// `fields` are C-contiguous arrays of one shape and dtype (float32 or float64); `out` has it
/// too and receives the result; `cache_bytes` bounds a band's two local buffers (temporal
/// blocking; 0 turns it off); cells within `lo`/`hi` of an edge are fixed: `fixed`'s values,
/// or `cval` when `fixed` is None.
#[pyfunction]
#[pyo3(signature = (fields, out, fixed, cval, instrs, tmps, lo, hi, steps, cache_bytes = CACHE_BYTES))]
#[allow(clippy::too_many_arguments)]
pub fn stencil_sweep(
    py: Python<'_>,
    fields: Vec<Bound<'_, PyUntypedArray>>,
    out: Bound<'_, PyUntypedArray>,
    fixed: Option<Bound<'_, PyUntypedArray>>,
    cval: f64,
    instrs: Vec<PyInstr>,
    tmps: usize,
    lo: Vec<usize>,
    hi: Vec<usize>,
    steps: usize,
    cache_bytes: usize,
) -> PyResult<()> {
    crate::boundary::guard(|| {
        let l = layout(out.shape(), &lo, &hi)?;
        let prog = program(&l, &instrs, tmps)?;
        prog.check(fields.len()).map_err(invalid)?;
        if fields.is_empty() || fields.iter().any(|f| f.shape() != out.shape()) {
            return Err(invalid("stencil fields and out must share one shape"));
        }
        if out.dtype().is_equiv_to(&numpy::dtype::<f32>(py)) {
            run::<f32>(py, &fields, &out, fixed.as_ref(), cval, &prog, &l, steps, cache_bytes)
        } else if out.dtype().is_equiv_to(&numpy::dtype::<f64>(py)) {
            run::<f64>(py, &fields, &out, fixed.as_ref(), cval, &prog, &l, steps, cache_bytes)
        } else {
            Err(invalid("the stencil sweep computes in float32 or float64"))
        }
    })
}
