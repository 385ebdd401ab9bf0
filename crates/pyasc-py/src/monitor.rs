//! Monitoring functions: core utilization of the executor and the machine's temperature.

use pyo3::prelude::*;
use std::time::Duration;

/// Percent of the executor's cores busy running kernel blocks over the last `window_s` seconds.
#[pyfunction]
#[pyo3(signature = (window_s=1.0))]
pub fn utilization(window_s: f64) -> PyResult<f64> {
    if !(window_s.is_finite() && window_s > 0.0 && window_s <= 86_400.0) {
        return Err(crate::errors::to_py(pyasc_ir::error::IrError::new(
            pyasc_ir::error::ErrorKind::InvalidArgument,
            format!("window_s must be a number of seconds in (0, 86400], not {window_s}"),
        )));
    }
    let cores = pyasc_runtime::pool::num_threads();
    Ok(pyasc_runtime::monitor::utilization(Duration::from_secs_f64(window_s), cores))
}

/// The hottest temperature sensor in °C and `None`, or `None` and the reason there is no reading.
#[pyfunction]
pub fn temperature() -> (Option<f64>, Option<String>) {
    match pyasc_runtime::monitor::temperature_celsius() {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    }
}
