//! Typed Rust errors become instances of the exception classes in `pyasc.errors`, with
//! `.code`, `.filename` and `.lineno` set.

use pyasc_ir::error::{ErrorKind, IrError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Convert an error into the matching `pyasc` exception.
pub fn to_py(e: IrError) -> PyErr {
    Python::attach(|py| match make(py, &e) {
        Ok(err) => err,
        Err(fallback) => fallback,
    })
}

/// The `pyasc.errors` module.
pub(crate) fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS.get_or_try_init(py, || py.import("pyasc.errors").map(|m| m.unbind()))?.bind(py))
}

fn make(py: Python<'_>, e: &IrError) -> PyResult<PyErr> {
    let module = errors_module(py)?;
    let cls = module.getattr(e.kind.class_name())?;
    let (file, line) = match &e.loc {
        Some(l) => (Some(l.file.to_string()), Some(l.line)),
        None => (None, None),
    };
    let inst = cls.call1((e.to_string(),))?;
    inst.setattr("filename", file)?;
    inst.setattr("lineno", line)?;
    Ok(PyErr::from_value(inst))
}

/// A new error of `kind` at the user's current line.
pub fn user_error(py: Python<'_>, kind: ErrorKind, msg: impl Into<String>) -> PyErr {
    let loc = crate::frames::user_loc(py);
    to_py(IrError::new(kind, msg).at(loc.as_ref()))
}
