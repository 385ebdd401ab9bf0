//! Bindings for the kernel language: statement tuples traced by `pyasc/lang` become a
//! [`BlockProgram`], run on NumPy arrays (the kernel's global memory) with the GIL released, or
//! queued on a stream (see `kernel_launch`).
//!
//! Statements: `("copy", to_local, global, reg, start, lo, hi, count, pad, site)`,
//! `("unary", name, dst, src, len, site)`, `("binary", name, dst, a, b, len, site)`,
//! `("select", dst, cond, a, b, len, site)`, `("cast", dst, src, len, site)`,
//! `("copy_reg", dst, src, len, site)`, `("reduce", name, dst, src, rows, cols, site)`,
//! `("broadcast", dst, src, rows, cols, site)`, `("row_op", name, dst, a, b, rows, cols, site)`, `("loop", var, start, end, step, [body])`.
//! Expressions: an int, `("block",)`, `("block_num",)`, `("var", i)`, `("arg", i)` or
//! `(op, a, b)` with op one of `add sub mul floordiv mod min max`. Sites: `(file, line)` or
//! `None`. Registers: `(dtype name, constant or None, byte offset, capacity)`.

use crate::arrays::dtype_of;
use crate::errors::to_py;
use crate::library_launch::{launch_into, plan_for, KERNEL};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::block::{BStmt, BlockProgram, Expr, ExprId, Exprs, IntOp};
use pyasc_ir::error::{IrError, SourceLoc};
use pyasc_ir::library::LibId;
use pyasc_ir::op::{BinaryOp, ReduceOp, UnaryOp};
use pyasc_ir::tile::{Instr, Reg, RegDecl, RegKind};
use pyasc_ir::{DType, Scalar};
use pyasc_runtime::block::PreparedBlock;
use pyasc_runtime::block_launch::block_call;
use pyasc_runtime::{InputView, OutputPtr};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

fn bad(m: impl Into<String>) -> PyErr {
    to_py(IrError::internal(format!("malformed kernel program: {}", m.into())))
}

fn dtype(name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| bad(format!("dtype {name}")))
}

fn expr(v: &Bound<'_, PyAny>, ex: &mut Exprs) -> PyResult<ExprId> {
    if let Ok(c) = v.extract::<i64>() {
        return Ok(ex.intern(Expr::Const(c)));
    }
    let t = v.cast::<PyTuple>()?;
    let tag: String = t.get_item(0)?.extract()?;
    let op = match tag.as_str() {
        "block" => return Ok(ex.intern(Expr::Block)),
        "block_num" => return Ok(ex.intern(Expr::BlockNum)),
        "var" => return Ok(ex.intern(Expr::Var(t.get_item(1)?.extract()?))),
        "arg" => return Ok(ex.intern(Expr::Arg(t.get_item(1)?.extract()?))),
        "add" => IntOp::Add,
        "sub" => IntOp::Sub,
        "mul" => IntOp::Mul,
        "floordiv" => IntOp::FloorDiv,
        "mod" => IntOp::Mod,
        "min" => IntOp::Min,
        "max" => IntOp::Max,
        other => return Err(bad(format!("expression {other}"))),
    };
    let a = expr(&t.get_item(1)?, ex)?;
    let b = expr(&t.get_item(2)?, ex)?;
    Ok(ex.intern(Expr::Bin(op, a, b)))
}

fn site(v: &Bound<'_, PyAny>) -> PyResult<Option<SourceLoc>> {
    if v.is_none() {
        return Ok(None);
    }
    let (file, line): (String, u32) = v.extract()?;
    Ok(Some(SourceLoc { file: file.into(), line }))
}

fn stmts(list: &Bound<'_, PyList>, exprs: &mut Exprs) -> PyResult<Vec<BStmt>> {
    let mut out = Vec::with_capacity(list.len());
    for item in list.iter() {
        let t = item.cast_into::<PyTuple>()?;
        let tag: String = t.get_item(0)?.extract()?;
        let reg = |i: usize| -> PyResult<Reg> { Ok(Reg(t.get_item(i)?.extract::<u16>()?)) };
        let mut ex = |i: usize| -> PyResult<ExprId> { expr(&t.get_item(i)?, exprs) };
        let name = || -> PyResult<String> { t.get_item(1)?.extract() };
        let last = || -> PyResult<Option<SourceLoc>> { site(&t.get_item(t.len() - 1)?) };
        let op = |ins: Instr, len: ExprId| -> PyResult<BStmt> { Ok(BStmt::Op { ins, len, site: last()? }) };
        let s = match tag.as_str() {
            "copy" => BStmt::Copy {
                to_local: t.get_item(1)?.extract()?,
                global: t.get_item(2)?.extract()?,
                reg: reg(3)?,
                start: ex(4)?,
                lo: ex(5)?,
                hi: ex(6)?,
                count: ex(7)?,
                pad: t.get_item(8)?.extract()?,
                site: last()?,
            },
            "unary" => {
                let op_ = UnaryOp::from_name(&name()?).ok_or_else(|| bad("unary op"))?;
                op(Instr::Unary { op: op_, dst: reg(2)?, src: reg(3)? }, ex(4)?)?
            }
            "binary" => {
                let op_ = BinaryOp::from_name(&name()?).ok_or_else(|| bad("binary op"))?;
                op(Instr::Binary { op: op_, dst: reg(2)?, a: reg(3)?, b: reg(4)? }, ex(5)?)?
            }
            "select" => op(Instr::Select { dst: reg(1)?, cond: reg(2)?, a: reg(3)?, b: reg(4)? }, ex(5)?)?,
            "cast" => op(Instr::Cast { dst: reg(1)?, src: reg(2)? }, ex(3)?)?,
            "copy_reg" => op(Instr::Copy { dst: reg(1)?, src: reg(2)? }, ex(3)?)?,
            "reduce" => BStmt::Reduce {
                op: ReduceOp::from_name(&name()?).ok_or_else(|| bad("reduction"))?,
                dst: reg(2)?,
                src: reg(3)?,
                rows: ex(4)?,
                cols: ex(5)?,
                site: last()?,
            },
            "broadcast" => BStmt::Broadcast { dst: reg(1)?, src: reg(2)?, rows: ex(3)?, cols: ex(4)?, site: last()? },
            "row_op" => BStmt::RowOp {
                op: BinaryOp::from_name(&name()?).ok_or_else(|| bad("row op"))?,
                dst: reg(2)?,
                a: reg(3)?,
                b: reg(4)?,
                rows: ex(5)?,
                cols: ex(6)?,
                site: last()?,
            },
            "loop" => {
                let (start, end) = (ex(2)?, ex(3)?);
                let body = stmts(&t.get_item(5)?.cast_into::<PyList>()?, exprs)?;
                BStmt::Loop { var: t.get_item(1)?.extract()?, start, end, step: t.get_item(4)?.extract()?, body }
            }
            other => return Err(bad(format!("statement {other}"))),
        };
        out.push(s);
    }
    Ok(out)
}

/// A traced kernel-language kernel for one signature, ready to launch (verified and
/// strip-planned once, when traced).
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct BlockKernelPlan {
    program: Arc<PreparedBlock>,
}

#[pymethods]
impl BlockKernelPlan {
    /// Build and verify a program: `globals` the dtype names of the array arguments, `args`
    /// the number of integer scalar arguments, `regs` the registers, `ub_bytes` the Unified
    /// Buffer per block, `vars` the loop variables, `body` the statements.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        globals: Vec<String>,
        args: usize,
        regs: Vec<(String, Option<Bound<'_, PyAny>>, usize, usize)>,
        ub_bytes: usize,
        vars: usize,
        body: &Bound<'_, PyList>,
    ) -> PyResult<Self> {
        let globals = globals.iter().map(|g| dtype(g)).collect::<PyResult<Vec<_>>>()?;
        let (mut decls, mut at, mut cap) = (Vec::new(), Vec::new(), Vec::new());
        for (d, c, a, n) in regs {
            let kind = match c {
                None => RegKind::Tile,
                Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => RegKind::Scalar(Scalar::Bool(v.extract()?)),
                Some(v) if v.is_instance_of::<pyo3::types::PyInt>() => RegKind::Scalar(Scalar::Int(v.extract()?)),
                Some(v) => RegKind::Scalar(Scalar::Float(v.extract()?)),
            };
            decls.push(RegDecl { dtype: dtype(&d)?, kind, row: false });
            at.push(a);
            cap.push(n);
        }
        let mut exprs = Exprs::default();
        let body = stmts(body, &mut exprs)?;
        let program =
            BlockProgram { name: name.into(), globals, args, regs: decls, at, cap, ub_bytes, vars, exprs, body };
        let prepared = PreparedBlock::new(program).map_err(to_py)?;
        Ok(BlockKernelPlan { program: Arc::new(prepared) })
    }

    /// The program as text (for debugging).
    fn text(&self) -> String {
        format!("{:#?}", self.program.program.body)
    }

    /// The program's strip plan as text (for debugging).
    fn plan_text(&self) -> String {
        format!("{:#?}", self.program.plan)
    }

    /// Run blocks `0..block_dim` on `arrays` (C-contiguous, of the traced dtypes; written in
    /// place) with integer scalar `args`. Returns the worker threads used.
    fn run(
        &self,
        py: Python<'_>,
        arrays: Vec<Bound<'_, PyUntypedArray>>,
        args: Vec<i64>,
        block_dim: usize,
    ) -> PyResult<usize> {
        let mut globals = Vec::with_capacity(arrays.len());
        for (a, want) in arrays.iter().zip(&self.program.program.globals) {
            if dtype_of(a).ok() != Some(*want) || !a.is_c_contiguous() {
                return Err(to_py(IrError::internal("an array does not match the traced kernel")));
            }
            // SAFETY: the array object is alive for the duration of the call.
            let ptr = unsafe { (*a.as_array_ptr()).fields.data } as *const u8;
            globals.push(InputView::contiguous(ptr, *want, vec![a.len()]));
        }
        let name = &self.program.program.name;
        let plan =
            plan_for(LibId::BLOCK_LAUNCH, block_call(&self.program, args, block_dim, None), &globals, Some(name))?;
        let mut threads = 0i64;
        // SAFETY: the arrays are alive for the duration of the call (written in place where the
        // kernel stores); `threads` holds the plan's int64 result.
        unsafe { launch_into(py, KERNEL, plan, globals, OutputPtr(&mut threads as *mut i64 as *mut u8))? };
        Ok(threads as usize)
    }

    /// Queue blocks `0..block_dim` on `stream` (default: the current stream) over `arrays`
    /// (NumPy arrays and DeviceArrays of the traced dtypes and lengths, C-contiguous; those at
    /// `written` are stored into) with integer scalar `args`; returns at once with the task's
    /// number. `npu` applies the NPU twin's alignment rules to DeviceArrays.
    #[pyo3(signature = (arrays, written, args, block_dim, stream = None, npu = false))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &self,
        py: Python<'_>,
        arrays: Vec<Bound<'_, PyAny>>,
        written: Vec<usize>,
        args: Vec<i64>,
        block_dim: usize,
        stream: Option<&crate::device::stream::Stream>,
        npu: bool,
    ) -> PyResult<u64> {
        crate::boundary::guard(|| {
            let stream = stream.map_or_else(crate::device::stream::current, |s| s.inner.clone());
            crate::lang::kernel_launch::enqueue(py, &self.program, &arrays, &written, args, block_dim, &stream, npu)
        })
    }
}
