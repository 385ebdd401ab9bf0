//! Monitoring functions: core utilization of the executor, the machine's temperature and its
//! measured roofs (memory bandwidth, float32 FMA throughput).

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
    let cores = pyasc_runtime::device_for(pyasc_runtime::DeviceKind::Cpu).info().cores;
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

/// Measure the machine's roofs: copy and triad bandwidth (GB/s) and float32 FMA throughput
/// (GFLOP/s) on all worker cores, with the ISA, thread count and buffer and cache sizes used.
#[pyfunction]
pub fn measure_peaks(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let p = py.detach(pyasc_runtime::peaks::measure);
    let d = pyo3::types::PyDict::new(py);
    d.set_item("copy_gbs", p.copy_gbs)?;
    d.set_item("triad_gbs", p.triad_gbs)?;
    d.set_item("fma_gflops", p.fma_gflops)?;
    d.set_item("isa", p.isa)?;
    d.set_item("threads", p.threads)?;
    d.set_item("buffer_bytes", p.buffer_bytes)?;
    d.set_item("llc_bytes", p.llc_bytes)?;
    Ok(d)
}
