//! pyasc-py: the only crate that knows Python exists.
//!
//! * [`tensor`]: the tracer tensor handed to operator functions.
//! * [`trace_ops`]: tracing reductions, matmul, views, data movement and creation.
//! * [`operator`]: the operator object: Python arguments and results around the engine's
//!   cache and launch path, tracing the Python function, log lines.
//! * [`args`]: turning call arguments into typed signatures and raw views.
//! * [`arrays`]: NumPy dtype mapping and output allocation.
//! * [`compiled`]: `CompiledOp`, the introspection object.
//! * [`boundary`]: panics become `InternalError`s; long GIL-free work stays interruptible.
//! * [`errors`]: mapping typed Rust errors onto the `pyasc` exception classes.
//! * [`frames`]: finding the user's file and line.
//! * [`log`]: the bridge to Python's `logging`.
//! * [`dlpack`]: exporting memory as DLPack capsules; [`dlpack_import`]: importing them, bfloat16
//!   included.
//! * [`host_access`]: host reads and writes of DeviceArrays, viewed or copied through their device.
//! * [`precision`]: `precision_scope` and the `precision_mode` option.
//! * [`placement`]: which device new DeviceArrays and CPU operators go to (and its test switch).
//! * [`monitor`]: utilization and temperature.
//! * [`detection`]: box IoU and non-maximum suppression on NumPy arrays.
//! * [`events`]: the event stream (passes, kernels, blocks, stream tasks) as Python dicts.

use pyo3::prelude::*;

pub mod args;
pub mod arrays;
pub mod block_kernel;
pub mod boundary;
pub mod compiled;
pub mod detection;
pub mod device_array;
pub mod dlpack;
pub mod dlpack_import;
pub mod errors;
pub mod events;
pub mod frames;
pub mod gears;
pub mod graph_hook;
pub mod hooks;
pub mod host_access;
pub mod kernel_launch;
pub mod library_launch;
pub mod log;
pub mod monitor;
pub mod operands;
pub mod operator;
pub mod pipeline_run;
pub mod placement;
pub mod precision;
pub mod stencil;
pub mod stream;
pub mod stream_hold;
pub mod tensor;
pub mod trace_ops;
pub mod trace_sort;
pub mod update_ops;
pub mod vectorized;

/// The extension module `pyasc._pyasc`.
#[pymodule]
fn _pyasc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::Tensor>()?;
    m.add_class::<operator::Operator>()?;
    m.add_class::<compiled::CompiledOp>()?;
    m.add_class::<vectorized::VectorizedPlan>()?;
    m.add_class::<block_kernel::BlockKernelPlan>()?;
    m.add_class::<arrays::PoolBuffer>()?;
    m.add_class::<device_array::DeviceArray>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<stream::Event>()?;
    m.add_class::<events::EventCollector>()?;
    m.add_function(wrap_pyfunction!(device_array::to_device, m)?)?;
    m.add_function(wrap_pyfunction!(graph_hook::_set_graph_recording, m)?)?;
    m.add_function(wrap_pyfunction!(graph_hook::_register_lazy_type, m)?)?;
    m.add_function(wrap_pyfunction!(device_array::empty, m)?)?;
    m.add_function(wrap_pyfunction!(device_array::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(device_array::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(placement::_use_opaque_test_device, m)?)?;
    m.add_function(wrap_pyfunction!(stream::current_stream, m)?)?;
    m.add_function(wrap_pyfunction!(stream::synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(stream_hold::_hold_stream, m)?)?;
    m.add_class::<stream_hold::StreamHold>()?;
    m.add_function(wrap_pyfunction!(memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_host_empty, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_set_debug_capture, m)?)?;
    m.add_function(wrap_pyfunction!(_debug_capture_active, m)?)?;
    m.add_function(wrap_pyfunction!(operands::apply_unary, m)?)?;
    m.add_function(wrap_pyfunction!(operands::apply_binary, m)?)?;
    m.add_function(wrap_pyfunction!(operands::apply_where, m)?)?;
    m.add_function(wrap_pyfunction!(operands::apply_cast, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_conv, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_pool, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_pixel_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_attention, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_view, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_pad, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_fill, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_concat, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_take, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_scan, m)?)?;
    m.add_function(wrap_pyfunction!(trace_sort::apply_sort, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_box_iou, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_nms, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_nms_fast, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_nms_mask, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_filter_rows, m)?)?;
    m.add_function(wrap_pyfunction!(detection::_filter_rows_fast, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_constant_array, m)?)?;
    m.add_function(wrap_pyfunction!(update_ops::apply_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(update_ops::rebind, m)?)?;
    m.add_function(wrap_pyfunction!(update_ops::apply_nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops::apply_capture, m)?)?;
    m.add_function(wrap_pyfunction!(gears::gears_begin, m)?)?;
    m.add_function(wrap_pyfunction!(gears::gear_flags, m)?)?;
    m.add_function(wrap_pyfunction!(gears::gears_unsupported, m)?)?;
    m.add_function(wrap_pyfunction!(log::set_native_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(precision::precision_scope_push, m)?)?;
    m.add_function(wrap_pyfunction!(precision::precision_scope_pop, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(stencil::stencil_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline_run::_run_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(monitor::utilization, m)?)?;
    m.add_function(wrap_pyfunction!(monitor::temperature, m)?)?;
    m.add_function(wrap_pyfunction!(monitor::measure_peaks, m)?)?;
    m.add_class::<dlpack::DLPackView>()?;
    m.add_function(wrap_pyfunction!(dlpack::_dlpack_selftest, m)?)?;
    m.add_function(wrap_pyfunction!(boundary::_set_test_panic, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CompanionNeeded", m.py().get_type::<hooks::CompanionNeeded>())?;
    m.add("UNARY_OPS", unary_ops(m.py())?)?;
    let codes = pyo3::types::PyDict::new(m.py());
    for kind in pyasc_ir::error::ErrorKind::ALL {
        codes.set_item(kind.class_name(), kind.code())?;
    }
    m.add("ERROR_CODES", codes)?;
    m.add("BINARY_OPS", binary_ops(m.py())?)?;
    Ok(())
}

/// The op table's unary rows as `(name, kind, ufuncs, api)` tuples, from which the Python
/// package builds `pyasc.<name>` and its NumPy ufunc dispatch.
fn unary_ops(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyTuple>> {
    use pyasc_ir::op::{UnaryKind, UnaryOp};
    let rows = UnaryOp::ALL.iter().map(|&op| {
        let kind = match op.kind() {
            UnaryKind::Numeric => "numeric",
            UnaryKind::Float => "float",
            UnaryKind::Rounding => "rounding",
            UnaryKind::Classify => "classify",
            UnaryKind::Bitwise => "bitwise",
        };
        (op.name(), kind, op.ufuncs().to_vec(), op.is_api())
    });
    pyo3::types::PyTuple::new(py, rows)
}

/// The op table's binary rows as `(name, class, ufuncs, commutative)` tuples.
fn binary_ops(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyTuple>> {
    use pyasc_ir::op::{BinaryClass, BinaryOp};
    let rows = BinaryOp::ALL.iter().map(|&op| {
        let class = match op.class() {
            BinaryClass::Arith => "arith",
            BinaryClass::Float => "float",
            BinaryClass::Integer => "integer",
            BinaryClass::Compare => "compare",
            BinaryClass::Bitwise => "bitwise",
        };
        (op.name(), class, op.ufuncs().to_vec(), op.is_commutative())
    });
    pyo3::types::PyTuple::new(py, rows)
}

/// Facts about a device kind ("cpu", "npu", "auto") as a dict.
#[pyfunction]
fn device_info(py: Python<'_>, device_type: &str) -> PyResult<Py<PyAny>> {
    let kind = pyasc_runtime::DeviceKind::parse(device_type).map_err(errors::to_py)?;
    let info = pyasc_runtime::device_for(kind).info();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("kind", info.kind.name())?;
    d.set_item("name", info.name)?;
    d.set_item("cores", info.cores)?;
    d.set_item("isa", info.isa)?;
    d.set_item("detected_isa", info.detected_isa)?;
    d.set_item("local_memory_bytes", info.local_memory_bytes)?;
    Ok(d.into_any().unbind())
}

/// Statistics of the caching memory pool as a dict (bytes in use, cached, peak; counts).
#[pyfunction]
fn memory_stats(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let s = pyasc_runtime::memory::stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("bytes_in_use", s.in_use)?;
    d.set_item("bytes_cached", s.cached)?;
    d.set_item("bytes_reserved", s.in_use + s.cached)?;
    d.set_item("peak_bytes_in_use", s.peak)?;
    d.set_item("allocations", s.allocations)?;
    d.set_item("reuses", s.reuses)?;
    Ok(d.into_any().unbind())
}

/// Start the pool's peak over from the bytes in use now.
#[pyfunction]
fn reset_peak_memory_stats() {
    pyasc_runtime::memory::reset_peak();
}

/// A new uninitialised C-contiguous NumPy array; large ones live in warm pool blocks, so
/// filling one does not fault in fresh pages from the OS as `np.empty` does past 32 MiB.
#[pyfunction]
fn _host_empty<'py>(py: Python<'py>, shape: Vec<usize>, dtype: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let dt = crate::operands::parse_dtype(py, dtype)?;
    Ok(crate::arrays::empty(py, dt, &shape, false).map_err(crate::errors::to_py)?.0)
}

/// Return every cached (free) pool block, and the stencil sweep's kept buffers, to the system.
#[pyfunction]
fn empty_cache() {
    pyasc_runtime::memory::empty_cache();
    pyasc_runtime::stencil::release_kept();
}

/// Switch the keeping of debug operators' intermediate results on or off (`pyasc.debug`).
#[pyfunction]
fn _set_debug_capture(on: bool) {
    pyasc_runtime::capture::set_active(on);
}

/// Whether debug operators keep their intermediate results now.
#[pyfunction]
fn _debug_capture_active() -> bool {
    pyasc_runtime::capture::active()
}
