//! `_run_pipeline`: the host's software pipeline over micro-batches of axis 0.
//!
//! Each stage is a compiled operator (one plan for a full micro-batch, one for the shorter
//! last one). The workers take micro-batches in order, and each runs its micro-batch through
//! every stage on its own core ([`pool::serial`]), so while one worker runs stage `k` of
//! micro-batch `i + 1`, another runs stage `k + 1` (or later) of micro-batch `i`. The values
//! handed between stages are micro-batch sized pool blocks, freed after the last stage that
//! reads them: at most one micro-batch per worker is in flight, and its hand-offs stay in
//! that core's cache. Final results are written straight into their rows of the result
//! arrays.

use crate::arrays::{dtype_of, view_of};
use crate::boundary::detach_interruptible;
use crate::compiled::CompiledOp;
use crate::errors::to_py;
use crate::operands::captured_array;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::Entry;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::DType;
use pyasc_runtime::memory::{allocate, PoolBlock};
use pyasc_runtime::{interrupt, pool, DeviceKind, InputView, OutputPtr, RunOptions};
use pyo3::prelude::*;
use std::sync::Arc;

/// Where a stage reads an input or writes an output: `(0, i)` is leaf or result `i`,
/// `(1, v)` hand-off value `v`.
type Binding = (u8, usize);

/// A stage's plan for one micro-batch length, with the views of the arrays it captured
/// (passed after its arguments, whole, to every micro-batch).
type Plan = (Arc<Entry>, Vec<InputView>);

/// One stage: its plans for a full and for the last micro-batch, and its bindings.
struct Stage {
    full: Plan,
    tail: Option<Plan>,
    inputs: Vec<Binding>,
    outputs: Vec<Binding>,
    /// Hand-off values whose last reader this stage is (freed after it).
    frees: Vec<usize>,
}

/// Everything the workers share, with the GIL released.
struct Run {
    stages: Vec<Stage>,
    leaves: Vec<(InputView, bool)>,
    /// Results: base address, bytes per row of axis 0.
    results: Vec<(usize, usize)>,
    values: usize,
    micro_batch: usize,
    rows: usize,
}

// SAFETY: the views and result addresses point into arrays the caller keeps alive until the
// run returns; every micro-batch writes only its own rows of the results.
unsafe impl Send for Run {}
// SAFETY: as above; shared access only reads the plans and addresses.
unsafe impl Sync for Run {}

fn bad(m: impl Into<String>) -> PyErr {
    to_py(IrError::internal(format!("pipeline: {}", m.into())))
}

/// A hand-off value of one micro-batch: its block, dtype and shape.
type Value = Option<(PoolBlock, DType, Vec<usize>)>;

impl Run {
    /// Run micro-batch `i` through every stage on the calling thread.
    fn micro_batch(&self, i: usize) -> Result<()> {
        let r0 = i * self.micro_batch;
        let rows = self.micro_batch.min(self.rows - r0);
        let mut values: Vec<Value> = (0..self.values).map(|_| None).collect();
        for st in &self.stages {
            let (entry, captured) =
                if rows == self.micro_batch { &st.full } else { st.tail.as_ref().unwrap_or(&st.full) };
            let mut views = Vec::with_capacity(st.inputs.len() + captured.len());
            for &(kind, idx) in &st.inputs {
                views.push(if kind == 0 {
                    let (v, cut) = &self.leaves[idx];
                    if *cut {
                        let mut s = v.clone();
                        // SAFETY: rows r0..r0+rows lie inside the leaf (its axis 0 is the batch).
                        s.ptr = unsafe { v.ptr.offset(r0 as isize * v.strides[0] * v.dtype.size() as isize) };
                        s.shape[0] = rows;
                        s
                    } else {
                        v.clone()
                    }
                } else {
                    let (block, dt, shape) =
                        values[idx].as_ref().ok_or_else(|| IrError::internal("a stage reads a value not yet made"))?;
                    InputView::contiguous(block.as_ptr() as *const u8, *dt, shape.clone())
                });
            }
            views.extend(captured.iter().cloned());
            let mut outs = Vec::with_capacity(st.outputs.len());
            for (j, &(kind, idx)) in st.outputs.iter().enumerate() {
                let (dt, shape) = &entry.out_buffers[j];
                if kind == 0 {
                    let (base, row_bytes) = self.results[idx];
                    outs.push(OutputPtr((base + r0 * row_bytes) as *mut u8));
                } else {
                    let block = allocate(shape.iter().product::<usize>() * dt.size())?;
                    outs.push(OutputPtr(block.as_ptr()));
                    values[idx] = Some((block, *dt, shape.clone()));
                }
            }
            let all = entry.with_extras(&views)?;
            pyasc_runtime::execute_plan(&entry.compiled.plan, &all, &outs, RunOptions::default())?;
            for v in &st.frees {
                values[*v] = None;
            }
        }
        Ok(())
    }

    /// Run every micro-batch, the workers taking them in order.
    fn all(&self) -> Result<()> {
        let count = self.rows.div_ceil(self.micro_batch);
        let token = interrupt::current();
        let threads = pool::num_threads().min(count);
        pool::for_blocks(count, threads.saturating_sub(1), |i| {
            interrupt::with_token(token.clone(), || {
                if let Some(t) = &token {
                    t.check()?;
                }
                pool::serial(|| self.micro_batch(i))
            })
        })
    }
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
    let ok = op.device_kind() == DeviceKind::Cpu
        && e.compiled.host_ints.is_empty()
        && e.out_slots.len() == outputs
        && e.out_slots.iter().enumerate().all(|(i, s)| *s == i);
    if !ok {
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
    stages: Vec<(PyRef<'_, CompiledOp>, Option<PyRef<'_, CompiledOp>>, Vec<Binding>, Vec<Binding>)>,
    leaves: Vec<Bound<'_, PyUntypedArray>>,
    cut: Vec<bool>,
    results: Vec<Bound<'_, PyUntypedArray>>,
    values: usize,
    micro_batch: usize,
    rows: usize,
) -> PyResult<bool> {
    if micro_batch == 0 || cut.len() != leaves.len() {
        return Err(bad("a micro-batch of at least one row and a cut flag per leaf"));
    }
    let mut leaf_views = Vec::with_capacity(leaves.len());
    for (a, c) in leaves.iter().zip(&cut) {
        let dt = dtype_of(a).map_err(to_py)?;
        let v = view_of(a, dt).ok_or_else(|| bad("a leaf's strides are not whole elements"))?;
        if *c && v.shape.first() != Some(&rows) {
            return Err(bad("a cut leaf has another axis-0 length than the batch"));
        }
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
    let mut last_reader = vec![None; values];
    let mut keep = Vec::new();
    let mut plan = Vec::with_capacity(stages.len());
    for (g, (full, tail, inputs, outputs)) in stages.iter().enumerate() {
        let Some(full_p) = stage_plan(py, full, outputs.len(), &mut keep)? else { return Ok(false) };
        let tail_p = match tail {
            Some(t) => match stage_plan(py, t, outputs.len(), &mut keep)? {
                Some(p) => Some(p),
                None => return Ok(false),
            },
            None => None,
        };
        for (p, n) in [(Some(&full_p), micro_batch), (tail_p.as_ref(), rows % micro_batch)] {
            let Some((e, _)) = p else { continue };
            for (&(kind, idx), (dt, shape)) in outputs.iter().zip(&e.out_buffers) {
                let fits = shape.first() == Some(&n)
                    && match kind {
                        0 => {
                            result_rows.get(idx).is_some_and(|r| r.1 * n == shape.iter().product::<usize>() * dt.size())
                        }
                        _ => idx < values,
                    };
                if !fits {
                    return Err(bad("a stage's results do not match their destinations"));
                }
            }
        }
        for &(kind, idx) in inputs {
            let ok = if kind == 0 { idx < leaf_views.len() } else { idx < values };
            if !ok {
                return Err(bad("a stage reads an unknown input"));
            }
            if kind == 1 {
                last_reader[idx] = Some(g);
            }
        }
        plan.push(Stage {
            full: full_p,
            tail: tail_p,
            inputs: inputs.clone(),
            outputs: outputs.clone(),
            frees: vec![],
        });
    }
    for (v, g) in last_reader.iter().enumerate() {
        if let Some(g) = g {
            plan[*g].frees.push(v);
        }
    }
    if !rows.is_multiple_of(micro_batch) && plan.iter().any(|s| s.tail.is_none()) {
        return Err(bad("a batch that is no multiple of the micro-batch needs the tail plans"));
    }
    let run = Run { stages: plan, leaves: leaf_views, results: result_rows, values, micro_batch, rows };
    detach_interruptible(py, move |_| run.all())?.map_err(to_py)?;
    drop(keep);
    Ok(true)
}
