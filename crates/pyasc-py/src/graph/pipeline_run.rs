//! `_run_pipeline`: the arguments of the host's software pipeline over micro-batches of axis
//! 0 (`pyasc_engine::pipeline`, which schedules and launches the stages), converted from
//! Python: compiled stages, leaves and result arrays as views and addresses.

use crate::arrays::{dtype_of, view_of};
use crate::boundary::detach_interruptible;
use crate::errors::to_py;
use crate::operator::compiled::CompiledOp;
use crate::operator::operands::captured_array;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::pipeline::{runs_on_workers, Binding, Pipeline, Plan, Stage};
use pyasc_ir::error::IrError;
use pyasc_runtime::DeviceKind;
use pyo3::prelude::*;

/// A binding as Python sends it: `(0, i)` is leaf or result `i`, `(1, v)` hand-off value `v`.
type PyBinding = (u8, usize);

fn binding(b: &PyBinding) -> PyResult<Binding> {
    match b.0 {
        0 => Ok(Binding::Outer(b.1)),
        1 => Ok(Binding::Value(b.1)),
        k => Err(bad(format!("unknown binding kind {k}"))),
    }
}

fn bad(m: impl Into<String>) -> PyErr {
    to_py(IrError::internal(format!("pipeline: {}", m.into())))
}

/// The plan of `op` when it can run as a pipeline stage on the workers: a host CPU plan that
/// computes no host integers and writes `outputs` distinct buffers, and whose captured arrays
/// are NumPy arrays of the dtype and shape it was traced with (kept alive in `keep`).
fn stage_plan<'py>(
    py: Python<'py>,
    op: &CompiledOp,
    outputs: usize,
    keep: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<Option<Plan>> {
    let e = op.entry();
    if op.device_kind() != DeviceKind::Cpu || !runs_on_workers(e, outputs) {
        return Ok(None);
    }
    let mut captured = Vec::with_capacity(e.n_captured);
    for c in e.captured() {
        let Some(obj) = captured_array(py, c) else { return Ok(None) };
        let Ok(arr) = obj.cast::<PyUntypedArray>() else { return Ok(None) };
        let view = dtype_of(arr).ok().filter(|dt| *dt == c.dtype).and_then(|dt| view_of(arr, dt));
        match view {
            Some(v) if v.shape == c.shape => captured.push(v),
            _ => return Ok(None),
        }
        keep.push(obj);
    }
    Ok(Some((e.clone(), captured)))
}

/// Run pipeline stages over micro-batches of `rows` rows of axis 0 (see the module docs).
///
/// `stages`: per stage `(full, tail, inputs, outputs)`: its compiled operator for
/// `micro_batch` rows and for the last, shorter micro-batch (None when `rows` is a multiple),
/// and where each argument comes from and each result goes (`(0, i)`: leaf or result `i`,
/// `(1, v)`: hand-off value `v`). `leaves` are the inputs, `cut` says which are cut along
/// axis 0; `results` are C-contiguous arrays of `rows` rows, written in place. Returns false,
/// having run nothing, when a stage cannot run on the workers (another device, host-computed
/// integers, a buffer returned twice, a captured array that changed or is not a NumPy array):
/// the caller then uses streams.
#[pyfunction]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn _run_pipeline(
    py: Python<'_>,
    stages: Vec<(PyRef<'_, CompiledOp>, Option<PyRef<'_, CompiledOp>>, Vec<PyBinding>, Vec<PyBinding>)>,
    leaves: Vec<Bound<'_, PyUntypedArray>>,
    cut: Vec<bool>,
    results: Vec<Bound<'_, PyUntypedArray>>,
    values: usize,
    micro_batch: usize,
    rows: usize,
) -> PyResult<bool> {
    if cut.len() != leaves.len() {
        return Err(bad("a cut flag per leaf"));
    }
    let mut leaf_views = Vec::with_capacity(leaves.len());
    for (a, c) in leaves.iter().zip(&cut) {
        let dt = dtype_of(a).map_err(to_py)?;
        let v = view_of(a, dt).ok_or_else(|| bad("a leaf's strides are not whole elements"))?;
        leaf_views.push((v, *c));
    }
    let mut result_rows = Vec::with_capacity(results.len());
    for r in &results {
        let dt = dtype_of(r).map_err(to_py)?;
        if !r.is_c_contiguous() || r.shape().first() != Some(&rows) {
            return Err(bad("results must be C-contiguous arrays of the batch's rows"));
        }
        // SAFETY: the array object is alive for the duration of the call.
        let base = unsafe { (*r.as_array_ptr()).fields.data } as usize;
        result_rows.push((base, r.shape()[1..].iter().product::<usize>() * dt.size()));
    }
    let mut keep = Vec::new();
    let mut plan = Vec::with_capacity(stages.len());
    for (full, tail, inputs, outputs) in &stages {
        let Some(full) = stage_plan(py, full, outputs.len(), &mut keep)? else { return Ok(false) };
        let tail = match tail {
            Some(t) => match stage_plan(py, t, outputs.len(), &mut keep)? {
                Some(p) => Some(p),
                None => return Ok(false),
            },
            None => None,
        };
        let inputs = inputs.iter().map(binding).collect::<PyResult<_>>()?;
        let outputs = outputs.iter().map(binding).collect::<PyResult<_>>()?;
        plan.push(Stage { full, tail, inputs, outputs });
    }
    let run = Pipeline::new(plan, leaf_views, result_rows, values, micro_batch, rows).map_err(to_py)?;
    detach_interruptible(py, move |_| run.run())?.map_err(to_py)?;
    drop(keep);
    Ok(true)
}
