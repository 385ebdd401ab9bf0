//! The bridge to Python's `logging`: the level is mirrored in an atomic so a disabled
//! log costs one load; records go to the `pyasc` logger.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Python's DEBUG level.
pub const DEBUG: u32 = 10;
/// Python's INFO level.
pub const INFO: u32 = 20;
/// Python's WARNING level.
pub const WARNING: u32 = 30;

static LEVEL: AtomicU32 = AtomicU32::new(WARNING);
static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Set the level below which native code does not even format records.
#[pyfunction]
pub fn set_native_log_level(level: u32) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// True when records of `level` would be emitted.
pub fn enabled(level: u32) -> bool {
    level >= LEVEL.load(Ordering::Relaxed)
}

/// `logging.getLogger("pyasc")`.
pub(crate) fn logger(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    LOGGER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("logging")?.call_method1("getLogger", ("pyasc",))?.unbind())
    })
}

/// Emit a record through `logging.getLogger("pyasc")`.
pub fn emit(py: Python<'_>, level: u32, msg: &str) {
    if let Ok(l) = logger(py) {
        let _ = l.bind(py).call_method1("log", (level, msg));
    }
}
