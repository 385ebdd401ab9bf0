//! `CompiledOp`: what `op.get_compiled_op(*args)` returns, for looking at the graph, the
//! kernels, their tile programs and the buffers.

use pyasc_engine::Entry;
use pyasc_ir::print::{graph_to_string, kernel_to_string};
use pyasc_ir::tile::BufferKind;
use pyasc_runtime::DeviceKind;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// A compiled signature of an operator.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct CompiledOp {
    entry: Arc<Entry>,
    device: DeviceKind,
}

impl CompiledOp {
    /// Wrap a cache entry.
    pub fn new(entry: Arc<Entry>, device: DeviceKind) -> Self {
        CompiledOp { entry, device }
    }

    /// The cache entry: the plan and what a launch of it needs.
    pub fn entry(&self) -> &Arc<Entry> {
        &self.entry
    }

    /// The device the plan was compiled for.
    pub fn device_kind(&self) -> DeviceKind {
        self.device
    }
}

#[pymethods]
impl CompiledOp {
    /// The optimised graph IR as text (`traced=True`: as traced, before the passes).
    #[pyo3(signature = (traced = false))]
    fn graph_ir(&self, traced: bool) -> String {
        if traced {
            self.entry.traced_text.clone()
        } else {
            graph_to_string(&self.entry.compiled.graph)
        }
    }

    /// One dict per kernel: name, shape, fused op count, instructions, tile size, source lines,
    /// and `in_place_stack`: a stack whose columns the kernels before it write in place (a
    /// launch skips it unless it keeps every kernel's output).
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let plan = &self.entry.compiled.plan;
        plan.kernels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let d = PyDict::new(py);
                d.set_item("name", &k.name)?;
                d.set_item("shape", k.shape.0.clone())?;
                d.set_item("fused_ops", k.fused_ops)?;
                d.set_item("instructions", k.body.len())?;
                d.set_item("tile_elems", k.tile_elems)?;
                d.set_item("registers", k.regs.len())?;
                d.set_item("source_lines", k.locs.iter().map(|l| l.to_string()).collect::<Vec<_>>())?;
                d.set_item("in_place_stack", plan.stack_columns.iter().any(|s| s.kernel == i))?;
                Ok(d)
            })
            .collect()
    }

    /// The tile program of kernel `i` as text.
    fn tile_program(&self, i: usize) -> PyResult<String> {
        self.entry
            .compiled
            .plan
            .kernels
            .get(i)
            .map(kernel_to_string)
            .ok_or_else(|| PyIndexError::new_err(format!("kernel {i} does not exist")))
    }

    /// One dict per pass: name, microseconds, nodes before and after, notes.
    fn pass_reports<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.entry
            .compiled
            .reports
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("name", r.name.as_ref())?;
                d.set_item("micros", r.micros())?;
                d.set_item("nodes_before", r.counter("nodes_before"))?;
                d.set_item("nodes_after", r.counter("nodes_after"))?;
                d.set_item("notes", r.notes.clone())?;
                Ok(d)
            })
            .collect()
    }

    /// One dict per buffer: name, shape, dtype, bytes, where it lives.
    fn memory_usage<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let plan = &self.entry.compiled.plan;
        plan.buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let d = PyDict::new(py);
                let role = match b.kind {
                    BufferKind::Input(k) => format!("argument {k}"),
                    BufferKind::Computed if plan.outputs.iter().any(|o| o.0 as usize == i) => "output".to_string(),
                    BufferKind::Computed => "intermediate".to_string(),
                };
                d.set_item("name", format!("b{i}"))?;
                d.set_item("shape", b.shape.0.clone())?;
                d.set_item("dtype", b.dtype.name())?;
                d.set_item("bytes", b.shape.numel() * b.dtype.size())?;
                d.set_item("role", role)?;
                d.set_item(
                    "location",
                    if matches!(b.kind, BufferKind::Input(_)) { "host (read in place)" } else { "host" },
                )?;
                Ok(d)
            })
            .collect()
    }

    /// Bytes of all buffers the plan allocates (outputs and intermediates).
    #[getter]
    fn peak_memory_bytes(&self) -> usize {
        let plan = &self.entry.compiled.plan;
        plan.buffers.iter().filter(|b| b.kind == BufferKind::Computed).map(|b| b.shape.numel() * b.dtype.size()).sum()
    }

    /// Microseconds spent tracing and compiling this signature.
    #[getter]
    fn compile_micros(&self) -> f64 {
        self.entry.compile_micros
    }

    /// Per result: its shape and NumPy dtype, in the order the function returns them.
    #[getter]
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<(Vec<usize>, Bound<'py, PyAny>)>> {
        let e = &self.entry;
        e.out_slots
            .iter()
            .map(|&s| {
                let (dt, shape) = &e.out_buffers[s];
                Ok((shape.clone(), crate::arrays::np_dtype(py, *dt)?))
            })
            .collect()
    }

    /// True when the function returned a tuple or list (results then come back as a tuple).
    #[getter]
    fn returns_tuple(&self) -> bool {
        self.entry.tuple_out
    }

    /// The device the plan was compiled for.
    #[getter]
    fn device(&self) -> &'static str {
        self.device.name()
    }
}
