//! The binding of the stencil sweep: NumPy fields in, a program as tuples, the result written in place.
//!
//! `pyasc.stencil` traces a stencil body into instruction tuples and calls [`stencil_sweep`]
//! with C-contiguous float32 or float64 arrays. Reads are given as per-axis offsets and checked
//! against the halo here, then turned into linear offsets of the grid. The sweep is the
//! library op `pyasc_ir::library::StencilSweep`, launched through the engine's door
//! ([`crate::library_launch`]).

use crate::arrays::{dtype_of, view_of};
use crate::errors::to_py;
use crate::library_launch::{launch_into, plan_for, STENCIL};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::attr::Attr;
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_ir::library::stencil::{BinOp, FixedCells, Instr, Layout, Operand, Program, StencilSpec, UnOp};
use pyasc_ir::library::LibId;
use pyasc_runtime::{InputView, OutputPtr};
use pyo3::prelude::*;
use std::sync::Arc;

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

/// The view of a C-contiguous float32 or float64 array.
fn field(a: &Bound<'_, PyUntypedArray>) -> PyResult<InputView> {
    let ok = a.is_c_contiguous() && dtype_of(a).is_ok_and(|d| matches!(d, pyasc_ir::DType::F32 | pyasc_ir::DType::F64));
    match dtype_of(a).ok().filter(|_| ok).and_then(|d| view_of(a, d)) {
        Some(v) => Ok(v),
        None => Err(invalid("the stencil sweep computes on C-contiguous float32 or float64 arrays")),
    }
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
        let mut inputs = fields.iter().map(field).collect::<PyResult<Vec<_>>>()?;
        let fixed_cells = match &fixed {
            Some(a) => {
                inputs.push(field(a)?);
                FixedCells::Array
            }
            None => FixedCells::Const(cval),
        };
        let target = field(&out)?;
        if inputs.iter().any(|v| v.dtype != target.dtype || v.shape != target.shape) {
            return Err(invalid("stencil fields, fixed cells and out must share one shape and dtype"));
        }
        // SAFETY: the array object is alive for the duration of the call.
        let writeable = unsafe { (*out.as_array_ptr()).fields.flags } & numpy::npyffi::flags::NPY_ARRAY_WRITEABLE != 0;
        if !writeable {
            return Err(invalid("the stencil sweep's out array is read-only"));
        }
        let spec = StencilSpec { program: prog, layout: l, steps, fixed: fixed_cells, cache_bytes };
        let plan = plan_for(LibId::STENCIL, Attr::Stencil(Arc::new(spec)), &inputs, None)?;
        // SAFETY: the views address the caller's arrays, alive until the call returns; `out`
        // is a writable C-contiguous array of the result's shape and dtype.
        unsafe { launch_into(py, STENCIL, plan, inputs, OutputPtr(target.ptr as *mut u8)) }
    })
}
