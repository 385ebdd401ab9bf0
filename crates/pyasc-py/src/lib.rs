//! pyasc-py: the only crate that knows Python exists.
//!
//! The modules mirror the Python package (`python/pyasc`):
//!
//! * [`operator`] (`pyasc/core`): the operator object, Python arguments and results around the
//!   engine's cache and launch path; its children: the tracer [`operator::tensor`], operands,
//!   call arguments, the tracing entry points (`trace_ops`, `trace_sort`, `update_ops`), gears,
//!   precision scopes and `CompiledOp`.
//! * [`device`] (`pyasc/device`): DeviceArray, streams and events, host access, placement,
//!   monitors, DLPack export and import.
//! * [`graph`] (`pyasc/graph`): the switch to graph mode's recorder and the pipeline's entry point.
//! * [`lang`] (`pyasc/lang`): kernel-language block programs and their stream launches.
//! * [`nn`] (`pyasc/nn`): the detection routines' entry points.
//! * [`stencil`] and [`vectorize`] (`pyasc/stencil`, `pyasc/vectorize`): their programs from
//!   statement tuples.
//! * The boundary itself: [`arrays`] (NumPy dtype mapping, views, output allocation),
//!   [`boundary`] (panics become `InternalError`s; long GIL-free work stays interruptible),
//!   [`errors`] (typed Rust errors onto `pyasc.errors`), [`frames`] (the user's file and line),
//!   [`hooks`] (the one way back into Python), [`library_launch`] (a routine's one-kernel plan
//!   through the door), [`log`] (Python's `logging`), [`events`] (the event stream as Python dicts),
//!   [`warm`] (the cached Python objects, made at import so that a fork never finds one half made).

use pyo3::prelude::*;

pub mod arrays;
pub mod boundary;
pub mod device;
pub mod errors;
pub mod events;
pub mod frames;
pub mod graph;
pub mod hooks;
pub mod lang;
pub mod library_launch;
pub mod log;
pub mod nn;
pub mod operator;
pub mod stencil;
pub mod vectorize;
pub mod warm;

/// The extension module `pyasc._pyasc`.
#[pymodule]
fn _pyasc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<operator::tensor::Tensor>()?;
    m.add_class::<operator::Operator>()?;
    m.add_class::<operator::compiled::CompiledOp>()?;
    m.add_class::<vectorize::VectorizedPlan>()?;
    m.add_class::<lang::block_kernel::BlockKernelPlan>()?;
    m.add_class::<arrays::PoolBuffer>()?;
    m.add_class::<device::device_array::DeviceArray>()?;
    m.add_class::<device::stream::Stream>()?;
    m.add_class::<device::stream::Event>()?;
    m.add_class::<events::EventCollector>()?;
    m.add_function(wrap_pyfunction!(device::device_array::to_device, m)?)?;
    m.add_function(wrap_pyfunction!(warm::_warm, m)?)?;
    m.add_function(wrap_pyfunction!(graph::graph_hook::_set_graph_recording, m)?)?;
    m.add_function(wrap_pyfunction!(graph::graph_hook::_register_lazy_type, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_array::empty, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_array::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_array::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(device::placement::_use_opaque_test_device, m)?)?;
    m.add_function(wrap_pyfunction!(device::stream::current_stream, m)?)?;
    m.add_function(wrap_pyfunction!(device::stream::synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(device::stream_hold::_hold_stream, m)?)?;
    m.add_class::<device::stream_hold::StreamHold>()?;
    m.add_function(wrap_pyfunction!(memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_host_empty, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_set_debug_capture, m)?)?;
    m.add_function(wrap_pyfunction!(_debug_capture_active, m)?)?;
    m.add_function(wrap_pyfunction!(operator::operands::apply_unary, m)?)?;
    m.add_function(wrap_pyfunction!(operator::operands::apply_binary, m)?)?;
    m.add_function(wrap_pyfunction!(operator::operands::apply_where, m)?)?;
    m.add_function(wrap_pyfunction!(operator::operands::apply_cast, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_conv, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_pool, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_pixel_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_attention, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_view, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_pad, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_fill, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_concat, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_take, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_scan, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_sort::apply_sort, m)?)?;
    m.add_function(wrap_pyfunction!(operator::grad::apply_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(operator::grad::apply_stop_gradient, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_box_iou, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_nms, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_nms_fast, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_nms_mask, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_filter_rows, m)?)?;
    m.add_function(wrap_pyfunction!(nn::detection::_filter_rows_fast, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_constant_array, m)?)?;
    m.add_function(wrap_pyfunction!(operator::update_ops::apply_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(operator::update_ops::rebind, m)?)?;
    m.add_function(wrap_pyfunction!(operator::update_ops::apply_nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(operator::trace_ops::apply_capture, m)?)?;
    m.add_function(wrap_pyfunction!(operator::gears::gears_begin, m)?)?;
    m.add_function(wrap_pyfunction!(operator::gears::gear_flags, m)?)?;
    m.add_function(wrap_pyfunction!(operator::gears::gears_unsupported, m)?)?;
    m.add_function(wrap_pyfunction!(log::set_native_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(operator::precision::precision_scope_push, m)?)?;
    m.add_function(wrap_pyfunction!(operator::precision::precision_scope_pop, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(stencil::stencil_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(graph::pipeline_run::_run_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(device::monitor::utilization, m)?)?;
    m.add_function(wrap_pyfunction!(device::monitor::temperature, m)?)?;
    m.add_function(wrap_pyfunction!(device::monitor::measure_peaks, m)?)?;
    m.add_class::<device::dlpack::DLPackView>()?;
    m.add_function(wrap_pyfunction!(device::dlpack::_dlpack_selftest, m)?)?;
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
    let dt = crate::operator::operands::parse_dtype(py, dtype)?;
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
