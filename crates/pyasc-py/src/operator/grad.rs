//! Tracing entry points of differentiation: `apply_vjp` appends the backward nodes of the
//! open trace (`pyasc.grad`, `vjp`, `jvp` and friends in `pyasc/core/autodiff.py` build on
//! it) and `apply_stop_gradient` marks a value that differentiation treats as a constant.

use crate::errors::to_py;
use crate::frames::user_loc;
use crate::operator::operands::{node_of, trace_of};
use crate::operator::tensor::{Tensor, Trace};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// The cotangents of `wrt` given one cotangent per output (`None`: ones), all traced
/// tensors of one open trace; a value no output depends on gets zeros.
#[pyfunction]
pub fn apply_vjp(
    py: Python<'_>,
    outputs: Vec<Bound<'_, PyAny>>,
    cotangents: Vec<Option<Bound<'_, PyAny>>>,
    wrt: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<Py<Tensor>>> {
    let all: Vec<&Bound<'_, PyAny>> = outputs.iter().chain(wrt.iter()).collect();
    let trace = trace_of(&all).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    if cotangents.len() != outputs.len() {
        return Err(PyTypeError::new_err("one cotangent per output"));
    }
    let outs = outputs.iter().map(|o| node_of(py, &trace, o)).collect::<PyResult<Vec<_>>>()?;
    let cts = cotangents
        .iter()
        .map(|c| c.as_ref().map(|c| node_of(py, &trace, c)).transpose())
        .collect::<PyResult<Vec<_>>>()?;
    let wrt = wrt.iter().map(|w| node_of(py, &trace, w)).collect::<PyResult<Vec<_>>>()?;
    let loc = user_loc(py);
    let nodes = crate::boundary::guard(|| Trace::vjp(&trace, &outs, &cts, &wrt, loc).map_err(to_py))?;
    nodes.into_iter().map(|n| Py::new(py, Tensor::new(trace.clone(), n.id, n.dtype, n.shape))).collect()
}

/// `stop_gradient(x)` on a traced tensor.
#[pyfunction]
pub fn apply_stop_gradient(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let n = Trace::stop_gradient(&trace, id, user_loc(py)).map_err(to_py)?;
    Py::new(py, Tensor::new(trace, n.id, n.dtype, n.shape))
}
