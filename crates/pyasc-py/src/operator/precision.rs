//! Python's side of `pyasc.precision_scope` and the `precision_mode` option.

use crate::errors::user_error;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::precision::{Precision, PrecisionMode};
use pyo3::prelude::*;

/// Open a precision scope on this thread: `"fp32"`, `"fp16"` or `"bf16"`.
#[pyfunction]
pub fn precision_scope_push(py: Python<'_>, precision: &str) -> PyResult<()> {
    let p = Precision::parse(precision).ok_or_else(|| {
        let msg = format!("precision_scope takes 'fp32', 'fp16' or 'bf16', not {precision:?}");
        user_error(py, ErrorKind::InvalidArgument, msg)
    })?;
    pyasc_engine::scope::push(p);
    Ok(())
}

/// Close this thread's innermost precision scope.
#[pyfunction]
pub fn precision_scope_pop(py: Python<'_>) -> PyResult<()> {
    if pyasc_engine::scope::pop() {
        Ok(())
    } else {
        Err(user_error(py, ErrorKind::InvalidArgument, "no precision_scope is open on this thread"))
    }
}

/// The policy named by an operator's validated `precision_mode` setting.
pub fn mode(py: Python<'_>, name: Option<String>) -> PyResult<PrecisionMode> {
    match name {
        None => Ok(PrecisionMode::Fp32),
        Some(s) => PrecisionMode::parse(&s)
            .ok_or_else(|| user_error(py, ErrorKind::InvalidArgument, format!("unknown precision_mode {s:?}"))),
    }
}
