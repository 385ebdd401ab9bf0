//! The event stream seen from Python: a collector that records tracing, compiles and their
//! passes, launches and their kernels (synchronous and queued on streams), kernel blocks,
//! stream tasks, copies, synchronisations and pool allocations, and hands them over as dicts.

use pyasc_engine::event::{Collector, Event};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// Records events from its creation until `finish()`.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct EventCollector {
    inner: Mutex<Option<Collector>>,
}

fn to_dict<'py>(py: Python<'py>, e: &Event) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", e.kind.name())?;
    d.set_item("name", e.name.as_ref())?;
    d.set_item("start_ns", e.start)?;
    d.set_item("end_ns", e.end)?;
    d.set_item("micros", e.micros())?;
    d.set_item("thread", e.thread)?;
    d.set_item("stream", e.stream)?;
    let counters = PyDict::new(py);
    for (k, v) in &e.counters {
        counters.set_item(*k, *v)?;
    }
    d.set_item("counters", counters)?;
    d.set_item("notes", e.notes.clone())?;
    let labels = PyDict::new(py);
    for (k, v) in &e.labels {
        labels.set_item(*k, v)?;
    }
    d.set_item("labels", labels)?;
    Ok(d)
}

#[pymethods]
impl EventCollector {
    /// Start recording.
    #[new]
    fn py_new() -> Self {
        EventCollector { inner: Mutex::new(Some(Collector::start())) }
    }

    /// Stop recording and return every event recorded on all threads, ordered by start, as
    /// dicts (kind, name, start_ns, end_ns, micros, thread, stream, counters, notes, labels). Work still
    /// queued on streams records nothing more once this returns: synchronise first.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let taken = self.inner.lock().expect("collector lock poisoned").take();
        let events = taken.map(Collector::finish).unwrap_or_default();
        events.iter().map(|e| to_dict(py, e)).collect()
    }
}
