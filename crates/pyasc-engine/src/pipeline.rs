//! The host's software pipeline over micro-batches of axis 0.
//!
//! Each stage is a compiled operator (one plan for a full micro-batch, one for the shorter
//! last one). The workers take micro-batches in order, and each runs its micro-batch through
//! every stage on its own core ([`pool::serial`]), so while one worker runs stage `k` of
//! micro-batch `i + 1`, another runs stage `k + 1` (or later) of micro-batch `i`. The values
//! handed between stages are micro-batch sized pool blocks, freed after the last stage that
//! reads them: at most one micro-batch per worker is in flight, and its hand-offs stay in
//! that core's cache. Final results are written straight into their rows of the result
//! arrays. Every stage of every micro-batch is launched through the [door](crate::door).

use crate::door::{self, Launcher};
use crate::operator::Entry;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::DType;
use pyasc_runtime::memory::{allocate, PoolBlock};
use pyasc_runtime::{device_for, interrupt, pool, DeviceKind, InputView, OutputPtr, RunOptions};
use std::sync::Arc;

/// Where a stage reads an input or writes an output.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Leaf (for inputs) or result (for outputs) `i`.
    Outer(usize),
    /// Hand-off value `v` between stages.
    Value(usize),
}

/// A stage's plan for one micro-batch length, with the views of the arrays it captured
/// (passed after its arguments, whole, to every micro-batch).
pub type Plan = (Arc<Entry>, Vec<InputView>);

/// One stage: its plans for a full and for the last micro-batch, and its bindings.
pub struct Stage {
    /// The plan for `micro_batch` rows.
    pub full: Plan,
    /// The plan for the last, shorter micro-batch (`None` when the rows are a multiple).
    pub tail: Option<Plan>,
    /// Where each argument comes from.
    pub inputs: Vec<Binding>,
    /// Where each result goes.
    pub outputs: Vec<Binding>,
}

/// A leaf: its view, and whether it is cut along axis 0 (else every micro-batch reads it whole).
pub type Leaf = (InputView, bool);

/// A result: base address of a C-contiguous array of `rows` rows, and bytes per row.
pub type ResultRows = (usize, usize);

/// The stage plans a pipeline can run on the workers: host CPU plans that compute no host
/// integers and write distinct buffers, one per result.
pub fn runs_on_workers(e: &Entry, outputs: usize) -> bool {
    e.compiled.host_ints.is_empty()
        && e.out_slots.len() == outputs
        && e.out_slots.iter().enumerate().all(|(i, s)| *s == i)
}

/// A checked pipeline, ready to run.
pub struct Pipeline {
    stages: Vec<Stage>,
    /// Per stage: hand-off values whose last reader it is (freed after it).
    frees: Vec<Vec<usize>>,
    leaves: Vec<Leaf>,
    results: Vec<ResultRows>,
    values: usize,
    micro_batch: usize,
    rows: usize,
}

// SAFETY: the views and result addresses point into arrays the caller keeps alive until the
// run returns; every micro-batch writes only its own rows of the results.
unsafe impl Send for Pipeline {}
// SAFETY: as above; shared access only reads the plans and addresses.
unsafe impl Sync for Pipeline {}

fn bad(m: impl Into<String>) -> IrError {
    IrError::internal(format!("pipeline: {}", m.into()))
}

/// A hand-off value of one micro-batch: its block, dtype and shape.
type Value = Option<(PoolBlock, DType, Vec<usize>)>;

impl Pipeline {
    /// Check that the stages fit their leaves, results and hand-off values (`values` of them)
    /// for `rows` rows in micro-batches of `micro_batch`.
    pub fn new(
        stages: Vec<Stage>,
        leaves: Vec<Leaf>,
        results: Vec<ResultRows>,
        values: usize,
        micro_batch: usize,
        rows: usize,
    ) -> Result<Pipeline> {
        if micro_batch == 0 {
            return Err(bad("a micro-batch of at least one row"));
        }
        if leaves.iter().any(|(v, cut)| *cut && v.shape.first() != Some(&rows)) {
            return Err(bad("a cut leaf has another axis-0 length than the batch"));
        }
        let mut last_reader = vec![None; values];
        for (g, st) in stages.iter().enumerate() {
            for (p, n) in [(Some(&st.full), micro_batch), (st.tail.as_ref(), rows % micro_batch)] {
                let Some((e, _)) = p else { continue };
                if !runs_on_workers(e, st.outputs.len()) {
                    return Err(bad("a stage's plan cannot run on the workers"));
                }
                for (b, (dt, shape)) in st.outputs.iter().zip(&e.out_buffers) {
                    let fits = shape.first() == Some(&n)
                        && match *b {
                            Binding::Outer(i) => {
                                results.get(i).is_some_and(|r| r.1 * n == shape.iter().product::<usize>() * dt.size())
                            }
                            Binding::Value(v) => v < values,
                        };
                    if !fits {
                        return Err(bad("a stage's results do not match their destinations"));
                    }
                }
            }
            for b in &st.inputs {
                match *b {
                    Binding::Outer(i) if i < leaves.len() => {}
                    Binding::Value(v) if v < values => last_reader[v] = Some(g),
                    _ => return Err(bad("a stage reads an unknown input")),
                }
            }
        }
        if !rows.is_multiple_of(micro_batch) && stages.iter().any(|s| s.tail.is_none()) {
            return Err(bad("a batch that is no multiple of the micro-batch needs the tail plans"));
        }
        let mut frees = vec![Vec::new(); stages.len()];
        for (v, g) in last_reader.iter().enumerate() {
            if let Some(g) = g {
                frees[*g].push(v);
            }
        }
        Ok(Pipeline { stages, frees, leaves, results, values, micro_batch, rows })
    }

    /// Run micro-batch `i` through every stage on the calling thread.
    fn micro_batch(&self, i: usize) -> Result<()> {
        let r0 = i * self.micro_batch;
        let rows = self.micro_batch.min(self.rows - r0);
        let mut values: Vec<Value> = (0..self.values).map(|_| None).collect();
        for (st, frees) in self.stages.iter().zip(&self.frees) {
            let (entry, captured) =
                if rows == self.micro_batch { &st.full } else { st.tail.as_ref().unwrap_or(&st.full) };
            let mut views = Vec::with_capacity(st.inputs.len() + captured.len());
            for b in &st.inputs {
                views.push(match *b {
                    Binding::Outer(idx) => {
                        let (v, cut) = &self.leaves[idx];
                        let mut s = v.clone();
                        if *cut {
                            // SAFETY: rows r0..r0+rows lie inside the leaf (its axis 0 is the batch).
                            s.ptr = unsafe { v.ptr.offset(r0 as isize * v.strides[0] * v.dtype.size() as isize) };
                            s.shape[0] = rows;
                        }
                        s
                    }
                    Binding::Value(idx) => {
                        let (block, dt, shape) = values[idx]
                            .as_ref()
                            .ok_or_else(|| IrError::internal("a stage reads a value not yet made"))?;
                        InputView::contiguous(block.as_ptr() as *const u8, *dt, shape.clone())
                    }
                });
            }
            views.extend(captured.iter().cloned());
            let mut outs = Vec::with_capacity(st.outputs.len());
            for (j, b) in st.outputs.iter().enumerate() {
                let (dt, shape) = &entry.out_buffers[j];
                match *b {
                    Binding::Outer(idx) => {
                        let (base, row_bytes) = self.results[idx];
                        outs.push(OutputPtr((base + r0 * row_bytes) as *mut u8));
                    }
                    Binding::Value(idx) => {
                        let block = allocate(shape.iter().product::<usize>() * dt.size())?;
                        outs.push(OutputPtr(block.as_ptr()));
                        values[idx] = Some((block, *dt, shape.clone()));
                    }
                }
            }
            let all = entry.with_extras(&views)?;
            let who = Launcher { name: &entry.name, front_end: "pipeline" };
            door::run_now(who, device_for(DeviceKind::Cpu), &entry.compiled.plan, &all, &outs, RunOptions::default())?;
            for v in frees {
                values[*v] = None;
            }
        }
        Ok(())
    }

    /// Run every micro-batch, the workers taking them in order.
    pub fn run(&self) -> Result<()> {
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
