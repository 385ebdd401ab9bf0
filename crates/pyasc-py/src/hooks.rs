//! The one door from the binding back into the Python package: the functions of `pyasc._hooks`,
//! which features register themselves with (see that module). The binding calls hook points
//! by name and never imports a feature module.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

static HOOKS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

pyo3::create_exception!(
    _pyasc,
    CompanionNeeded,
    pyo3::exceptions::PyException,
    "Raised by a trace whose result a companion runs (its name is the argument)."
);

/// The hook module.
pub(crate) fn hooks(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(HOOKS.get_or_try_init(py, || py.import("pyasc._hooks").map(Bound::unbind))?.bind(py))
}

/// Call hook function `name` with `args`.
pub fn call<'py>(py: Python<'py>, name: &str, args: impl pyo3::call::PyCallArgs<'py>) -> PyResult<Bound<'py, PyAny>> {
    hooks(py)?.getattr(name)?.call1(args)
}

/// The companion registered for `args` that the binding could not read, if any.
pub fn companion_for_arguments<'py>(py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Option<String>> {
    call(py, "companion_for_arguments", (args,))?.extract()
}

/// Run a call of `op` on `args` through companion `name`.
pub fn call_companion<'py>(
    py: Python<'py>,
    name: &str,
    op: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Py<PyAny>> {
    Ok(call(py, "call_companion", (name, op, args))?.unbind())
}

/// The companion named by a [`CompanionNeeded`] error, if `e` is one.
pub fn companion_needed(py: Python<'_>, e: &PyErr) -> Option<String> {
    if !e.is_instance_of::<CompanionNeeded>(py) {
        return None;
    }
    e.value(py).getattr("args").ok()?.get_item(0).ok()?.extract().ok()
}
