//! Python's view of streams and events: `pyasc.Stream`, `pyasc.Event`, the current stream
//! of each thread (`with pyasc.stream(s)`), and device-wide `pyasc.synchronize()`.
//! Waiting always releases the GIL.

use crate::errors::to_py;
use pyasc_runtime::stream::{Event as RtEvent, Stream as RtStream};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, Weak};

thread_local! {
    static CURRENT: RefCell<Vec<Arc<RtStream>>> = const { RefCell::new(Vec::new()) };
}

static LIVE: Mutex<Vec<Weak<RtStream>>> = Mutex::new(Vec::new());

/// The stream work of this thread goes to: the innermost `with pyasc.stream(s)`, else the
/// default stream.
pub fn current() -> Arc<RtStream> {
    CURRENT.with(|c| c.borrow().last().cloned()).unwrap_or_else(RtStream::default_stream)
}

/// An in-order queue of asynchronous work (operator launches and copies on DeviceArrays).
#[pyclass(module = "pyasc._pyasc", name = "Stream", frozen)]
pub struct Stream {
    /// The runtime stream.
    pub inner: Arc<RtStream>,
}

impl Stream {
    /// Wrap a runtime stream.
    pub fn wrap(inner: Arc<RtStream>) -> Self {
        Stream { inner }
    }
}

#[pymethods]
impl Stream {
    /// A new stream with its own worker.
    #[new]
    fn py_new() -> Self {
        let inner = RtStream::new();
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&inner));
        Stream { inner }
    }

    /// Wait for all work queued on the stream; raises the first error of that work.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        sync_all(py, vec![self.inner.clone()])
    }

    /// True when all queued work has finished.
    fn query(&self) -> bool {
        self.inner.query()
    }

    /// Make later work on this stream wait for `event`.
    fn wait_event(&self, event: &Event) {
        self.inner.wait_event(&event.inner);
    }

    /// Record a new event (or `event`) at the current end of this stream and return it.
    #[pyo3(signature = (event = None))]
    fn record_event(&self, py: Python<'_>, event: Option<Py<Event>>) -> PyResult<Py<Event>> {
        let ev = match event {
            Some(e) => e,
            None => Py::new(py, Event { inner: RtEvent::new() })?,
        };
        ev.get().inner.record(&self.inner);
        Ok(ev)
    }

    /// The stream's id (0 is the default stream).
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        let inner = slf.get().inner.clone();
        CURRENT.with(|c| c.borrow_mut().push(inner));
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        CURRENT.with(|c| c.borrow_mut().pop());
        false
    }

    fn __eq__(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn __hash__(&self) -> u64 {
        self.inner.id()
    }

    fn __repr__(&self) -> String {
        if self.inner.id() == 0 {
            "<pyasc.Stream default>".to_string()
        } else {
            format!("<pyasc.Stream {}>", self.inner.id())
        }
    }
}

/// A point in a stream: record it, wait for it from another stream, time between two.
#[pyclass(module = "pyasc._pyasc", name = "Event", frozen)]
pub struct Event {
    inner: RtEvent,
}

#[pymethods]
impl Event {
    /// A new event, not yet recorded.
    #[new]
    fn py_new() -> Self {
        Event { inner: RtEvent::new() }
    }

    /// Record the event at the current end of `stream` (default: the current stream).
    #[pyo3(signature = (stream = None))]
    fn record(&self, stream: Option<&Stream>) {
        match stream {
            Some(s) => self.inner.record(&s.inner),
            None => self.inner.record(&current()),
        }
    }

    /// Make `stream` (default: the current stream) wait for this event.
    #[pyo3(signature = (stream = None))]
    fn wait(&self, stream: Option<&Stream>) {
        match stream {
            Some(s) => s.inner.wait_event(&self.inner),
            None => current().wait_event(&self.inner),
        }
    }

    /// Block until the recorded point is reached.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let ev = self.inner.clone();
        crate::boundary::guard(|| {
            crate::boundary::detach_interruptible(py, move |poll| {
                ev.synchronize_polling(poll);
            })
        })
    }

    /// True when the recorded point has been reached (or the event was never recorded).
    fn query(&self) -> bool {
        self.inner.query()
    }

    /// Milliseconds from this event to `end`; both must be recorded and complete.
    fn elapsed_time(&self, end: &Event) -> PyResult<f64> {
        self.inner.elapsed_ms(&end.inner).map_err(to_py)
    }
}

/// The stream of the calling thread.
#[pyfunction]
pub fn current_stream() -> Stream {
    Stream::wrap(current())
}

/// Wait for every stream (the default one and all live ones); raise the first error.
#[pyfunction]
pub fn synchronize(py: Python<'_>) -> PyResult<()> {
    let mut streams = vec![RtStream::default_stream()];
    streams.extend(LIVE.lock().unwrap_or_else(|p| p.into_inner()).iter().filter_map(|w| w.upgrade()));
    sync_all(py, streams)
}

/// Wait for `streams` with the GIL released; raise the first error. Ctrl-C stops the wait,
/// cancels the work queued on them so far (what it writes becomes invalid) and raises
/// `KeyboardInterrupt`.
fn sync_all(py: Python<'_>, streams: Vec<Arc<RtStream>>) -> PyResult<()> {
    let waited = streams.clone();
    let r = crate::boundary::guard(|| {
        let out = crate::boundary::detach_interruptible(py, move |poll| {
            let mut first = Ok(());
            for s in streams {
                match s.synchronize_polling(poll) {
                    Some(r) if first.is_ok() => first = r,
                    Some(_) => {}
                    None => return None,
                }
            }
            Some(first)
        });
        if out.is_err() {
            // Interrupted: stop the work waited for.
            for s in &waited {
                s.cancel_queued();
            }
        }
        out
    })?;
    // `None` (interrupted) always comes with the interrupt's exception, returned above.
    let r = r.unwrap_or(Ok(()));
    crate::operator::log_queued_launches(py);
    r.map_err(to_py)
}
