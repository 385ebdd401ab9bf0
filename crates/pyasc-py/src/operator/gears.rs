//! Tracing with gears: the Python wrapper of a geared operator names the valid extents and
//! the padded axes of the arguments; the engine masks reductions over them
//! ([`pyasc_engine::gears`]) and says when it cannot.

use crate::operator::tensor::{trace_of, Tensor};
use pyasc_engine::gears::{Flags, Gears};
use pyasc_engine::trace::Trace;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::collections::HashMap;

/// Start masking padding in the trace of `valid[0]`: `valid[g]` is the traced valid extent of
/// gear `g`; `inputs` pairs each padded argument with its per-axis gear (or None).
#[pyfunction]
pub fn gears_begin(valid: Vec<Bound<'_, Tensor>>, inputs: Vec<(Bound<'_, Tensor>, Flags)>) -> PyResult<()> {
    let first = valid.first().ok_or_else(|| PyTypeError::new_err("gears need at least one valid extent"))?;
    let trace = first.get().trace.clone();
    let valid = valid.iter().map(|t| t.get().id()).collect();
    let inputs: HashMap<_, _> = inputs.into_iter().map(|(t, f)| (t.get().id(), f)).collect();
    Trace::lock(&trace).gears = Some(Gears::new(valid, inputs));
    Ok(())
}

/// The padded axes of a traced tensor (per axis: its gear, or None); None outside a geared
/// trace or when they cannot be followed.
#[pyfunction]
pub fn gear_flags(x: &Bound<'_, PyAny>) -> Option<Flags> {
    let trace = trace_of(&[x])?;
    let id = x.cast::<Tensor>().ok()?.get().id();
    let mut t = Trace::lock(&trace);
    let t = &mut *t;
    let gears = t.gears.as_mut()?;
    match gears.flags(&t.graph, id) {
        Ok(f) => Some(f),
        Err(why) => {
            gears.unsupported.get_or_insert(why);
            None
        }
    }
}

/// Why the padding of this geared trace cannot be kept out of its results `outputs` (None:
/// it is).
#[pyfunction]
pub fn gears_unsupported(outputs: Vec<Bound<'_, PyAny>>) -> Option<String> {
    let refs: Vec<&Bound<'_, PyAny>> = outputs.iter().collect();
    let trace = trace_of(&refs)?;
    let mut t = Trace::lock(&trace);
    let t = &mut *t;
    let gears = t.gears.as_mut()?;
    for o in &outputs {
        if let Ok(x) = o.cast::<Tensor>() {
            if let Err(why) = gears.flags(&t.graph, x.get().id()) {
                gears.unsupported.get_or_insert(why);
            }
        }
    }
    gears.unsupported.clone()
}
