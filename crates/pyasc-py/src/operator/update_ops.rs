//! Tracing entry points for updates (`y[idx] = v`, augmented assignment, `x.at[idx]`): the
//! scatter op, `nonzero` with a static size and the rebinding of a tracer object to its updated
//! value. The rules (which writes are allowed, index forms, views) live in
//! `python/pyasc/api/updates.py`.

use crate::errors::to_py;
use crate::operator::tensor::{apply, node_of, trace_of, Tensor};
use pyasc_ir::error::IrError;
use pyasc_ir::library::ScatterMode;
use pyasc_ir::{Attr, LibId};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// `base` with `vals` combined into its flat elements `indices` (int64, C order) by `mode`
/// (`set add multiply min max`); `vals` has the indices' shape and the base's dtype.
#[pyfunction]
pub fn apply_scatter(
    py: Python<'_>,
    base: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    vals: &Bound<'_, PyAny>,
    mode: &str,
) -> PyResult<Py<Tensor>> {
    let mode = ScatterMode::from_name(mode).ok_or_else(|| PyTypeError::new_err(format!("unknown scatter {mode}")))?;
    let trace =
        trace_of(&[base, indices, vals]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids = [node_of(py, &trace, base)?, node_of(py, &trace, indices)?, node_of(py, &trace, vals)?];
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Scatter(mode));
    apply(py, &trace, pyasc_ir::op::Op::Library(LibId::SCATTER, attr), &ids)
}

/// Make tracer `target` hold the value of `value` (same dtype and shape): the tracer object
/// now refers to the updated array; earlier uses keep the node they read.
#[pyfunction]
pub fn rebind(target: &Bound<'_, Tensor>, value: &Bound<'_, Tensor>) -> PyResult<()> {
    let (t, v) = (target.get(), value.get());
    if !std::sync::Arc::ptr_eq(&t.trace, &v.trace) || t.dims() != v.dims() || t.dt() != v.dt() {
        return Err(to_py(IrError::internal(format!(
            "an update of a {} {:?} tensor produced a {} {:?} value",
            t.dt(),
            t.dims(),
            v.dt(),
            v.dims()
        ))));
    }
    t.set_id(v.id());
    Ok(())
}

/// The flat positions (int64, C order) of the first `size` non-zero elements of `x`, padded
/// with -1 (`nonzero` with a static size, JAX's rule).
#[pyfunction]
pub fn apply_nonzero(py: Python<'_>, x: &Bound<'_, PyAny>, size: usize) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Count(size));
    apply(py, &trace, pyasc_ir::op::Op::Library(LibId::NONZERO, attr), &[id])
}
