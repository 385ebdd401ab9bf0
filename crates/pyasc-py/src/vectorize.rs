//! Bindings for vectorized operators whose scalar body loops: Python statement tuples become
//! a structured tile program (see `pyasc_engine::vectorized`), run on NumPy arrays with the
//! GIL released.
//!
//! Statements, as built by `pyasc/_vectorize_lower.py`:
//! `("load", dst, arg)`, `("store", src)`, `("unary", name, dst, src)`,
//! `("binary", name, dst, a, b)`, `("chain", op1, op2, swap, dst, a, b, c)` (`op2(op1(a, b), c)`,
//! `c` first when `swap`), `("select", dst, cond, a, b)`, `("cast", dst, src)`,
//! `("copy", dst, src)`, `("while", cond, [carried], [body])`. Registers are
//! `(dtype name, constant or None)`.

use crate::arrays::{dtype_of, view_of};
use crate::errors::to_py;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::door::{run_now, Launcher};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_ir::program::{IndexMap, Stmt, WhileAny};
use pyasc_ir::tile::{Instr, KernelPlan, Reg, RegDecl, RegKind};
use pyasc_ir::{DType, Scalar};
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

fn bad(m: impl Into<String>) -> IrError {
    IrError::internal(format!("malformed vectorized program: {}", m.into()))
}

fn dtype(name: &str) -> Result<DType> {
    DType::from_name(name).ok_or_else(|| bad(format!("dtype {name}")))
}

fn reg(t: &Bound<'_, PyTuple>, i: usize) -> PyResult<Reg> {
    Ok(Reg(t.get_item(i)?.extract::<u16>()?))
}

fn stmts(list: &Bound<'_, PyList>) -> PyResult<Vec<Stmt>> {
    let mut out = Vec::with_capacity(list.len());
    for item in list.iter() {
        let t = item.cast_into::<PyTuple>()?;
        let tag: String = t.get_item(0)?.extract()?;
        let s = match tag.as_str() {
            "load" => Stmt::Load { dst: reg(&t, 1)?, arg: t.get_item(2)?.extract()?, map: IndexMap::Identity },
            "store" => Stmt::Store { src: reg(&t, 1)?, out: 0, map: IndexMap::Identity },
            "unary" => {
                let name: String = t.get_item(1)?.extract()?;
                let op = UnaryOp::from_name(&name).ok_or_else(|| to_py(bad(format!("unary op {name}"))))?;
                Stmt::Op(Instr::Unary { op, dst: reg(&t, 2)?, src: reg(&t, 3)? })
            }
            "binary" => {
                let name: String = t.get_item(1)?.extract()?;
                let op = BinaryOp::ALL
                    .iter()
                    .copied()
                    .find(|o| o.name() == name)
                    .ok_or_else(|| to_py(bad(format!("binary op {name}"))))?;
                Stmt::Op(Instr::Binary { op, dst: reg(&t, 2)?, a: reg(&t, 3)?, b: reg(&t, 4)? })
            }
            "chain" => {
                let op = |i: usize| -> PyResult<BinaryOp> {
                    let name: String = t.get_item(i)?.extract()?;
                    BinaryOp::ALL
                        .iter()
                        .copied()
                        .find(|o| o.name() == name)
                        .ok_or_else(|| to_py(bad(format!("binary op {name}"))))
                };
                Stmt::Op(Instr::Chain {
                    op1: op(1)?,
                    op2: op(2)?,
                    swap: t.get_item(3)?.extract()?,
                    dst: reg(&t, 4)?,
                    a: reg(&t, 5)?,
                    b: reg(&t, 6)?,
                    c: reg(&t, 7)?,
                })
            }
            "select" => Stmt::Op(Instr::Select { dst: reg(&t, 1)?, cond: reg(&t, 2)?, a: reg(&t, 3)?, b: reg(&t, 4)? }),
            "cast" => Stmt::Op(Instr::Cast { dst: reg(&t, 1)?, src: reg(&t, 2)? }),
            "copy" => Stmt::Op(Instr::Copy { dst: reg(&t, 1)?, src: reg(&t, 2)? }),
            "while" => {
                let carried: Vec<u16> = t.get_item(2)?.extract()?;
                let body = t.get_item(3)?.cast_into::<PyList>()?;
                Stmt::While(WhileAny {
                    cond: reg(&t, 1)?,
                    carried: carried.into_iter().map(Reg).collect(),
                    body: stmts(&body)?,
                })
            }
            other => return Err(to_py(bad(format!("statement {other}")))),
        };
        out.push(s);
    }
    Ok(out)
}

/// A compiled vectorized kernel for one signature of argument dtypes and shapes.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct VectorizedPlan {
    plan: KernelPlan,
    /// The vectorized function's name (its launches carry it).
    name: String,
}

#[pymethods]
impl VectorizedPlan {
    /// Compile `body` over `regs` for arguments `inputs` ((dtype name, shape) each) into one
    /// kernel writing an `out` array of `shape`.
    #[new]
    fn new(
        name: &str,
        inputs: Vec<(String, Vec<usize>)>,
        out: &str,
        shape: Vec<usize>,
        regs: Vec<(String, Option<Bound<'_, PyAny>>)>,
        body: &Bound<'_, PyList>,
    ) -> PyResult<Self> {
        let inputs: Vec<(DType, Vec<usize>)> =
            inputs.into_iter().map(|(d, s)| Ok((dtype(&d)?, s))).collect::<Result<_>>().map_err(to_py)?;
        let mut decls = Vec::with_capacity(regs.len());
        for (d, c) in regs {
            let dt = dtype(&d).map_err(to_py)?;
            let kind = match c {
                None => RegKind::Tile,
                Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => RegKind::Scalar(Scalar::Bool(v.extract()?)),
                Some(v) if v.is_instance_of::<pyo3::types::PyInt>() => RegKind::Scalar(Scalar::Int(v.extract()?)),
                Some(v) => RegKind::Scalar(Scalar::Float(v.extract()?)),
            };
            decls.push(RegDecl { dtype: dt, kind, row: false });
        }
        let body = stmts(body)?;
        let plan =
            pyasc_engine::vectorized::vectorized_plan(name, &inputs, dtype(out).map_err(to_py)?, &shape, decls, body)
                .map_err(to_py)?;
        Ok(VectorizedPlan { plan, name: name.to_string() })
    }

    /// The kernel's tile program as text.
    fn tile_program(&self) -> String {
        pyasc_ir::print::kernel_to_string(&self.plan.kernels[0])
    }

    /// Lanes per tile.
    #[getter]
    fn tile_elems(&self) -> usize {
        self.plan.kernels[0].tile_elems
    }

    /// Run on `inputs` (arrays of the compiled dtypes and shapes) into `out` (a C-contiguous
    /// writable array of the result's dtype and shape).
    fn run(
        &self,
        py: Python<'_>,
        inputs: Vec<Bound<'_, PyUntypedArray>>,
        out: Bound<'_, PyUntypedArray>,
    ) -> PyResult<()> {
        let mut views: Vec<InputView> = Vec::with_capacity(inputs.len());
        for a in &inputs {
            let dt = dtype_of(a).map_err(to_py)?;
            views.push(
                view_of(a, dt)
                    .ok_or_else(|| to_py(IrError::internal("an argument's strides are not whole elements")))?,
            );
        }
        let decl = &self.plan.buffers[self.plan.outputs[0].0 as usize];
        let ok = dtype_of(&out).is_ok_and(|d| d == decl.dtype)
            && out.shape() == decl.shape.0.as_slice()
            && out.is_c_contiguous();
        if !ok {
            return Err(to_py(IrError::internal("the output array does not match the compiled kernel")));
        }
        // SAFETY: the array object is alive for the duration of the call.
        let ptr = OutputPtr(unsafe { (*out.as_array_ptr()).fields.data } as *mut u8);
        let launch = Launch { plan: &self.plan, name: &self.name, views, out: ptr };
        crate::boundary::detach_interruptible(py, move |_| launch.run())?.map_err(to_py)?;
        Ok(())
    }
}

/// One launch's views, moved to the thread that runs it with the GIL released.
struct Launch<'a> {
    plan: &'a KernelPlan,
    name: &'a str,
    views: Vec<InputView>,
    out: OutputPtr,
}

// SAFETY: the views address arrays the caller keeps alive (its arguments) until the launch
// returns; nothing else writes them meanwhile.
unsafe impl Send for Launch<'_> {}

impl Launch<'_> {
    fn run(self) -> Result<()> {
        let who = Launcher { name: self.name, front_end: "vectorized" };
        let cpu = device_for(DeviceKind::Cpu);
        run_now(who, cpu, self.plan, &self.views, &[self.out], RunOptions::default()).map(|_| ())
    }
}
