//! A private test switch, `_pyasc._hold_stream(s)`: queue a task on stream `s` that waits
//! until the returned handle's `release()` (or the handle is dropped), so tests can observe
//! work queued behind it before it may run, without depending on timing. A hold left
//! unreleased gives up after [`HOLD_LIMIT`] with an error raised at the stream's next
//! synchronisation, so it can never hang a process; cancelled stream work stops holding too.

use crate::stream::Stream;
use pyasc_ir::error::{ErrorKind, IrError};
use pyo3::prelude::*;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a hold keeps its stream waiting.
const HOLD_LIMIT: Duration = Duration::from_secs(60);

type Gate = Arc<(Mutex<bool>, Condvar)>;

/// The handle of a held stream.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct StreamHold {
    gate: Gate,
}

fn open(gate: &Gate) {
    *gate.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
    gate.1.notify_all();
}

#[pymethods]
impl StreamHold {
    /// Let the stream run the work queued behind the hold.
    fn release(&self) {
        open(&self.gate);
    }
}

impl Drop for StreamHold {
    fn drop(&mut self) {
        open(&self.gate);
    }
}

/// Hold `stream` at its current end until the handle's `release()`.
#[pyfunction]
pub fn _hold_stream(stream: &Stream) -> StreamHold {
    let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
    let g = gate.clone();
    stream.inner.enqueue_named(
        "hold",
        Box::new(move || {
            let began = Instant::now();
            let token = pyasc_runtime::interrupt::current();
            let (m, cv) = &*g;
            let mut released = m.lock().unwrap_or_else(|p| p.into_inner());
            while !*released {
                if let Some(t) = &token {
                    // Cancelled work (Ctrl-C during a synchronisation) stops holding.
                    t.check()?;
                }
                if began.elapsed() > HOLD_LIMIT {
                    return Err(IrError::new(ErrorKind::Device, "a stream hold was never released"));
                }
                released = cv.wait_timeout(released, Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner()).0;
            }
            Ok(())
        }),
    );
    StreamHold { gate }
}
