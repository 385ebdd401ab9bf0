//! The switch that sends operator calls to graph mode's recorder (the hook points
//! `graph_record` and `graph_resolve` of `pyasc._hooks`) while any thread records a graph (one
//! atomic load per call otherwise), and the hand-back of lazy arguments.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use std::sync::atomic::{AtomicBool, Ordering};

static RECORDING: AtomicBool = AtomicBool::new(false);
/// Set once any thread has entered `graph_mode()`: before that no lazy value can exist, so the
/// cached call path skips looking for one.
static EVER_RECORDED: AtomicBool = AtomicBool::new(false);
static LAZY_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Turn the recording switch on while any thread is inside `pyasc.graph_mode()`.
#[pyfunction]
pub fn _set_graph_recording(on: bool) {
    if on {
        EVER_RECORDED.store(true, Ordering::Release);
    }
    RECORDING.store(on, Ordering::Release);
}

/// True until a thread first enters `graph_mode()`: then no call can be recorded and no lazy
/// value exists, and the cached call path skips both checks (one relaxed load).
#[inline(always)]
pub fn never_used() -> bool {
    !EVER_RECORDED.load(Ordering::Relaxed)
}

/// Register the lazy-array class, whose instances are computed before a call reads them.
#[pyfunction]
pub fn _register_lazy_type(py: Python<'_>, cls: Bound<'_, PyType>) {
    let _ = LAZY_TYPE.set(py, cls.unbind());
}

/// Offer a call to the graph recorder: `Some(result)` when it recorded the call (lazy
/// results), `None` when the call runs now.
pub fn record(py: Python<'_>, op: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>) -> PyResult<Option<Py<PyAny>>> {
    if !RECORDING.load(Ordering::Acquire) {
        return Ok(None);
    }
    let r = crate::hooks::call(py, "graph_record", (op, args))?;
    Ok(if r.is_none() { None } else { Some(r.unbind()) })
}

/// The arguments with every lazy graph-mode value replaced by its array (computing it), or
/// `None` when there is none (a pointer comparison per argument).
pub fn resolve<'py>(py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(lazy) = LAZY_TYPE.get(py) else { return Ok(None) };
    if !args.iter().any(|a| a.get_type().is(lazy.bind(py))) {
        return Ok(None);
    }
    let r = crate::hooks::call(py, "graph_resolve", (args,))?;
    Ok(if r.is_none() { None } else { Some(r.cast_into::<PyTuple>()?) })
}
