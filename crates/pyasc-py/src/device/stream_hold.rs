//! A private test switch, `_pyasc._hold_stream(s)`: queue a task on stream `s` that waits
//! until the returned handle's `release()` (or the handle is dropped); see
//! `pyasc_runtime::hold`.

use crate::device::stream::Stream;
use pyasc_runtime::hold::{hold, Hold};
use pyo3::prelude::*;

/// The handle of a held stream.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct StreamHold {
    hold: Hold,
}

#[pymethods]
impl StreamHold {
    /// Let the stream run the work queued behind the hold.
    fn release(&self) {
        self.hold.release();
    }
}

/// Hold `stream` at its current end until the handle's `release()`.
#[pyfunction]
pub fn _hold_stream(stream: &Stream) -> StreamHold {
    StreamHold { hold: hold(&stream.inner) }
}
