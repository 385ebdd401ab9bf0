//! The operator object `@pyasc.operator` returns: Python objects in, engine types out. The
//! plan cache, compiling, re-specialisation and launching live in [`pyasc_engine`]; here are
//! the conversions (arguments to a signature and views, results to NumPy arrays or
//! DeviceArrays), tracing the Python function, and the log lines.

pub mod args;
pub mod compiled;
pub mod gears;
pub mod grad;
pub mod operands;
pub mod precision;
pub mod tensor;
pub mod trace_ops;
pub mod trace_sort;
pub mod update_ops;

use crate::arrays::empty;
use crate::device::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use crate::hooks;
use crate::log;
use crate::operator::args::{parse, Args};
use crate::operator::compiled::CompiledOp;
use crate::operator::tensor::{captured_array, node_of, Tensor, Trace};
use pyasc_compiler::CompileOptions;
use pyasc_engine::event::Event;
use pyasc_engine::{Entry, Launched, OperatorConfig, Order, Signature, Source, Traced};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::print::plan_to_string;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunStats};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::Arc;

/// A traced, compiled operator (what the `pyasc.operator` decorator returns).
#[pyclass(module = "pyasc._pyasc", frozen, weakref)]
pub struct Operator {
    /// Set once the function returned what a companion runs (a complex value, nested
    /// containers): every call then runs through that companion (see `pyasc._hooks`).
    companion: std::sync::OnceLock<String>,
    func: Py<PyAny>,
    params: Vec<String>,
    settings: Py<PyDict>,
    core: pyasc_engine::Operator,
}

/// A launch that runs now, moved into a GIL-free section.
struct NowLaunch<'a> {
    core: &'a pyasc_engine::Operator,
    entry: &'a Arc<Entry>,
    views: &'a [InputView],
    outs: &'a [OutputPtr],
    record: bool,
}
// SAFETY: the views and outputs point into arrays kept alive by the caller for the whole
// launch, and no Python object is touched while the GIL is released.
unsafe impl Send for NowLaunch<'_> {}

impl NowLaunch<'_> {
    fn run(self) -> pyasc_ir::error::Result<RunStats> {
        crate::boundary::test_panic(crate::boundary::PANIC_IN_LAUNCH);
        // SAFETY: see the Send impl: all memory outlives this synchronous launch.
        match unsafe { self.core.launch(self.entry, self.views, self.outs.into(), Order::Now, self.record) }? {
            Launched::Done(stats) => Ok(stats),
            Launched::Queued(_) => Err(pyasc_ir::IrError::internal("a launch now was queued")),
        }
    }
}

/// Log one line per kernel record (`launch <kernel>: ...`).
fn log_launches(py: Python<'_>, records: &[Event]) {
    for k in records {
        log::emit(
            py,
            log::DEBUG,
            &format!(
                "launch {}: {} elements, {} tiles, {} blocks, {:.1} us",
                k.name,
                k.counter("elements"),
                k.counter("tiles"),
                k.counter("blocks"),
                k.micros()
            ),
        );
    }
}

/// Log the kernel records of queued launches that have run since the last call.
pub fn log_queued_launches(py: Python<'_>) {
    if log::enabled(log::DEBUG) {
        log_launches(py, &pyasc_engine::take_queued_records());
    }
}

impl Operator {
    fn name(&self) -> &str {
        &self.core.config().name
    }

    fn device(&self) -> DeviceKind {
        self.core.config().device
    }

    /// Trace the function on tensors of the given signature.
    fn trace(&self, py: Python<'_>, sig: &Signature) -> PyResult<Traced> {
        let (trace, inputs) = Trace::begin(sig);
        let tensors: Vec<Py<Tensor>> = inputs
            .into_iter()
            .map(|n| Py::new(py, Tensor::new(trace.clone(), n.id, n.dtype, n.shape)))
            .collect::<PyResult<_>>()?;
        hooks::call(py, "enter_trace", (PyTuple::new(py, tensors.iter().map(|t| t.clone_ref(py)))?,))?;
        let result = self.func.bind(py).call1(PyTuple::new(py, tensors)?);
        hooks::call(py, "exit_trace", ())?;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                Trace::abort(&trace);
                return Err(e);
            }
        };
        let (items, tuple_out) = if result.is_instance_of::<PyTuple>() {
            (result.try_iter()?.collect::<PyResult<Vec<_>>>()?, true)
        } else {
            (vec![result.clone()], false)
        };
        if !(items.len() == 1 && items[0].is_instance_of::<Tensor>()) {
            // Results a companion runs (complex values, nested containers): the call runs again
            // through it (see `pyasc._hooks`).
            let kind = hooks::call(py, "companion_for_result", (&result, PyTuple::new(py, &items)?))?;
            if !kind.is_none() {
                Trace::abort(&trace);
                return Err(PyErr::from_value(py.get_type::<hooks::CompanionNeeded>().call1((kind,))?));
            }
        }
        let mut outputs = Vec::with_capacity(items.len());
        for item in &items {
            outputs.push(node_of(py, &trace, item).map_err(|_| {
                let tname = item.get_type().name().map(|s| s.to_string()).unwrap_or_default();
                user_error(
                    py,
                    ErrorKind::Trace,
                    format!("operator {} returned a {tname}; return tensors, numbers or a tuple of them", self.name()),
                )
            })?);
        }
        Ok(Trace::finish(&trace, outputs, tuple_out))
    }

    /// The entry for a signature, compiling on a miss (and logging what was compiled).
    fn entry_for(&self, py: Python<'_>, sig: &Signature) -> PyResult<Arc<Entry>> {
        let (entry, source) = self.core.entry_for(sig, |s| self.trace(py, s), to_py)?;
        match source {
            Source::Hit => {}
            Source::Traced => self.log_compiled(py, sig, &entry),
            Source::Respecialized => {
                if log::enabled(log::INFO) {
                    log::emit(
                        py,
                        log::INFO,
                        &format!(
                            "specialised {} for {sig} in {:.0} us (no new trace)",
                            self.name(),
                            entry.compile_micros
                        ),
                    );
                }
            }
        }
        Ok(entry)
    }

    /// The entry for the parsed arguments, with the views of the arrays it captured appended
    /// to them. A captured array whose dtype or shape changed since the trace is traced again.
    fn entry_with_captured<'py>(&self, py: Python<'py>, parsed: &mut Args<'py>) -> PyResult<Arc<Entry>> {
        let mut entry = self.entry_for(py, parsed.sig())?;
        for _ in 0..3 {
            if entry.n_captured == 0 || self.bind_captured(py, &entry, parsed)? {
                return Ok(entry);
            }
            parsed.clear_captured();
            self.core.invalidate(parsed.sig());
            entry = self.entry_for(py, parsed.sig())?;
        }
        Err(user_error(
            py,
            ErrorKind::Trace,
            format!("{}: the arrays it captures keep changing dtype or shape while it is traced", self.name()),
        ))
    }

    /// Push the views of `entry`'s captured arrays; false when one no longer has the dtype and
    /// shape it was traced with.
    fn bind_captured<'py>(&self, py: Python<'py>, entry: &Entry, parsed: &mut Args<'py>) -> PyResult<bool> {
        for c in entry.captured() {
            let obj = captured_array(py, c).ok_or_else(|| {
                to_py(pyasc_ir::IrError::internal("a captured array's handle is not a Python object"))
            })?;
            let (dtype, shape) = parsed.push_captured(py, &obj)?;
            if dtype != c.dtype || shape != c.shape {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn log_compiled(&self, py: Python<'_>, sig: &Signature, entry: &Entry) {
        let compiled = &entry.compiled;
        if log::enabled(log::DEBUG) {
            log::emit(py, log::DEBUG, &format!("trace of {}:\n{}", self.name(), entry.traced_text));
            for r in &compiled.reports {
                let mut line = format!(
                    "pass {}: {:.1} us, {} -> {} nodes",
                    r.name,
                    r.micros(),
                    r.counter("nodes_before"),
                    r.counter("nodes_after")
                );
                for n in &r.notes {
                    line.push_str("\n  ");
                    line.push_str(n);
                }
                log::emit(py, log::DEBUG, &line);
            }
            log::emit(py, log::DEBUG, &format!("kernel plan of {}:\n{}", self.name(), plan_to_string(&compiled.plan)));
        }
        if log::enabled(log::INFO) {
            let dev = self.core.device().info();
            log::emit(
                py,
                log::INFO,
                &format!(
                    "compiled {} for {sig} in {:.0} us: {} kernel(s) on {}",
                    self.name(),
                    entry.compile_micros,
                    compiled.plan.kernels.len(),
                    dev.name
                ),
            );
        }
    }

    fn positional<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        match kwargs {
            Some(kw) if !kw.is_empty() => {
                let bound = hooks::call(py, "bind", (self.func.bind(py), args, kw))?;
                Ok(bound.cast_into::<PyTuple>()?)
            }
            _ => Ok(args.clone()),
        }
    }

    /// Run now: NumPy (or the foreign framework's) arrays out.
    fn launch_now<'py>(&self, py: Python<'py>, entry: &Arc<Entry>, parsed: &Args<'py>) -> PyResult<Py<PyAny>> {
        let pooled = parsed.foreign.is_some();
        if let ([(dtype, shape)], [_]) = (entry.out_buffers.as_slice(), entry.out_slots.as_slice()) {
            // One output: the common case, without collections.
            let (arr, p) = empty(py, *dtype, shape, pooled).map_err(to_py)?;
            self.run_now(py, entry, parsed, &[OutputPtr(p)])?;
            let arr = match &parsed.foreign {
                Some(proto) => hooks::call(py, "like", (proto, arr))?,
                None => arr,
            };
            return if entry.tuple_out { Ok(PyTuple::new(py, [arr])?.into_any().unbind()) } else { Ok(arr.unbind()) };
        }
        let mut objs: Vec<Bound<'py, PyAny>> = Vec::with_capacity(entry.out_buffers.len());
        let mut ptrs: Vec<*mut u8> = Vec::with_capacity(entry.out_buffers.len());
        for (dtype, shape) in &entry.out_buffers {
            let (arr, p) = empty(py, *dtype, shape, pooled).map_err(to_py)?;
            objs.push(arr);
            ptrs.push(p);
        }
        self.run_now(py, entry, parsed, &entry.output_ptrs(&ptrs))?;
        let mut results: Vec<Bound<'py, PyAny>> = entry.out_slots.iter().map(|s| objs[*s].clone()).collect();
        if let Some(proto) = &parsed.foreign {
            results = results.into_iter().map(|r| hooks::call(py, "like", (proto, r))).collect::<PyResult<_>>()?;
        }
        pack(py, entry, results)
    }

    /// The launch itself, with the GIL released when it is large enough to spread over cores.
    fn run_now(&self, py: Python<'_>, entry: &Arc<Entry>, parsed: &Args<'_>, outs: &[OutputPtr]) -> PyResult<()> {
        let record = log::enabled(log::DEBUG);
        let launch = NowLaunch { core: &self.core, entry, views: parsed.views(), outs, record };
        let stats = if entry.output_elements() >= pyasc_runtime::vm::PARALLEL_THRESHOLD {
            // Interruptible: Ctrl-C stops the kernels between tiles; the outputs are dropped.
            crate::boundary::detach_interruptible(py, move |_| launch.run())?
        } else {
            launch.run()
        }
        .map_err(to_py)?;
        if record {
            log_launches(py, &stats.kernels);
        }
        if !stats.outputs.is_empty() || stats.error.is_some() {
            self.hand_over_intermediates(py, parsed, stats)?;
        }
        Ok(())
    }

    /// Give the intermediate results a debug run kept to `pyasc.debug` (one tuple per kernel
    /// output: kernel, op names, source lines, dtype, shape, bytes), then raise the run's error if any.
    fn hand_over_intermediates(&self, py: Python<'_>, parsed: &Args<'_>, stats: RunStats) -> PyResult<()> {
        let records = stats
            .outputs
            .into_iter()
            .map(|o| {
                let locs: Vec<(String, u32)> = o.locs.iter().map(|l| (l.file.to_string(), l.line)).collect();
                let bytes = pyo3::types::PyBytes::new(py, &o.bytes);
                (o.kernel, o.op, locs, o.dtype.name(), PyTuple::new(py, o.shape)?, bytes).into_pyobject(py)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let inputs: Vec<(&str, Vec<usize>)> =
            parsed.views().iter().map(|v| (v.dtype.name(), v.shape.clone())).collect();
        let error = stats.error.as_ref().map(|e| e.to_string());
        let handed = hooks::call(py, "record_run", (self.name(), inputs, records, error));
        // The run's own error wins over a failure to keep its results.
        match (stats.error, handed) {
            (Some(e), _) => Err(to_py(e)),
            (None, r) => r.map(|_| ()),
        }
    }

    /// The device of the DeviceArray arguments (the first one's), after checking that the
    /// operator's device can read every one of them: its own buffers, or host memory when
    /// both devices address host memory.
    fn arrays_device(&self, py: Python<'_>, parsed: &Args<'_>) -> PyResult<DeviceKind> {
        let (mine, op_dev) = (self.device(), self.core.device());
        let mut home = None;
        for (i, (buf, kind)) in parsed.devices().iter().enumerate().filter_map(|(i, d)| Some((i, d.as_ref()?))) {
            let shared = device_for(*kind).host_ptr(buf).is_some() && op_dev.host_ptr(buf).is_some();
            if *kind != mine && !shared {
                return Err(user_error(
                    py,
                    ErrorKind::Device,
                    format!(
                        "argument {i} is a DeviceArray on the {} device, which operator {} on the {} device \
                         cannot read; pass np.asarray(a) instead",
                        kind.name(),
                        self.name(),
                        mine.name()
                    ),
                ));
            }
            home.get_or_insert(*kind);
        }
        Ok(home.unwrap_or(mine))
    }

    /// DeviceArray arguments: queue the plan on the current stream and return DeviceArrays
    /// at once. Host arrays among the arguments are copied to the device first (a snapshot,
    /// so later changes to them do not race the kernel).
    fn launch_queued<'py>(&self, py: Python<'py>, entry: &Arc<Entry>, parsed: &mut Args<'py>) -> PyResult<Py<PyAny>> {
        let home = self.arrays_device(py, parsed)?;
        let stream = crate::device::stream::current();
        // The scalar arguments' storage moves into the launch (the views keep pointing at it).
        let scalars = parsed.take_scalars();
        let mut views = std::borrow::Cow::Borrowed(parsed.views());
        let mut reads: Vec<Arc<DeviceBuffer>> = Vec::new();
        for (i, dev) in parsed.devices().iter().enumerate() {
            if let Some((b, _)) = dev {
                reads.push(b.clone());
            } else if let Some(host) = &parsed.hosts()[i] {
                let v = &parsed.views()[i];
                let staged = DeviceArray::alloc_on(home, v.dtype, v.shape.clone(), 128).map_err(to_py)?;
                let staged = Bound::new(py, staged)?;
                DeviceArray::write_host(&staged, host.bind(py))?;
                views.to_mut()[i] = staged.get().view();
                reads.push(staged.get().buf.clone());
            }
        }
        let made: Vec<DeviceArray> = entry
            .out_buffers
            .iter()
            .map(|(dtype, shape)| DeviceArray::alloc_on(home, *dtype, shape.clone(), 128).map_err(to_py))
            .collect::<PyResult<_>>()?;
        let outs: Vec<OutputPtr> = entry.out_slots.iter().map(|s| OutputPtr(made[*s].data_ptr())).collect();
        let writes: Vec<Arc<DeviceBuffer>> = made.iter().map(|a| a.buf.clone()).collect();
        let weak = parsed.sig().args().iter().any(|a| matches!(a, pyasc_engine::ArgType::Weak(_)));
        let keep: Option<Box<dyn std::any::Any + Send>> = if weak { Some(Box::new(scalars)) } else { None };
        let order = Order::Stream { stream: &stream, reads, writes, keep };
        let record = log::enabled(log::DEBUG);
        // SAFETY: the views point into device buffers moved into the launch (`reads`), scalar
        // storage moved into `keep`, or the entry's constants; outputs are in `writes`.
        unsafe { self.core.launch(entry, &views, outs.into(), order, record) }.map_err(to_py)?;
        if let ([_], [_]) = (made.as_slice(), entry.out_slots.as_slice()) {
            let arr = Bound::new(py, made.into_iter().next().expect("one output"))?.into_any();
            return if entry.tuple_out { Ok(PyTuple::new(py, [arr])?.into_any().unbind()) } else { Ok(arr.unbind()) };
        }
        let objs: Vec<Bound<'py, PyAny>> =
            made.into_iter().map(|a| Ok(Bound::new(py, a)?.into_any())).collect::<PyResult<_>>()?;
        let results = entry.out_slots.iter().map(|s| objs[*s].clone()).collect();
        pack(py, entry, results)
    }
}

/// Return one result as itself, several (or a returned tuple) as a tuple.
fn pack<'py>(py: Python<'py>, entry: &Entry, results: Vec<Bound<'py, PyAny>>) -> PyResult<Py<PyAny>> {
    if entry.tuple_out {
        Ok(PyTuple::new(py, results)?.into_any().unbind())
    } else {
        Ok(results.into_iter().next().expect("one output").unbind())
    }
}

#[pymethods]
impl Operator {
    /// Wrap `func`. Options are validated by the Python decorator.
    #[new]
    #[pyo3(signature = (func, name, device_type, op_break_level, settings))]
    fn py_new(
        py: Python<'_>,
        func: Py<PyAny>,
        name: String,
        device_type: &str,
        op_break_level: u8,
        settings: Py<PyDict>,
    ) -> PyResult<Self> {
        let device = crate::device::placement::operator_kind(DeviceKind::parse(device_type).map_err(to_py)?);
        let params: Vec<String> = func
            .bind(py)
            .getattr("__code__")
            .and_then(|c| {
                let n: usize = c.getattr("co_argcount")?.extract()?;
                let names: Vec<String> = c.getattr("co_varnames")?.extract()?;
                Ok(names.into_iter().take(n).collect())
            })
            .unwrap_or_default();
        let debug: bool = settings.bind(py).get_item("debug")?.map(|d| d.extract()).transpose()?.unwrap_or(false);
        // Geared operators pad their inputs to fixed gear shapes (in Python) and cache per gear.
        let geared = settings.bind(py).get_item("gears")?.is_some_and(|g| !g.is_none());
        let dynamic: bool =
            settings.bind(py).get_item("dynamic_shape")?.map(|d| d.extract()).transpose()?.unwrap_or(false) && !geared;
        // Debug operators run one op per kernel, so a NaN is traced to the op's own line.
        let op_break_level = if debug { 0 } else { op_break_level };
        let precision_name: Option<String> =
            settings.bind(py).get_item("precision_mode")?.map(|d| d.extract()).transpose()?;
        let precision = crate::operator::precision::mode(py, precision_name)?;
        let single_kernel: bool =
            settings.bind(py).get_item("fused")?.map(|d| d.extract()).transpose()?.unwrap_or(false);
        let options = CompileOptions {
            op_break_level,
            kernel_name: name.clone(),
            precision,
            single_kernel,
            ..CompileOptions::default()
        };
        let config = OperatorConfig { name: name.clone(), device, options, dynamic, debug };
        if device == DeviceKind::NpuTwin && log::enabled(log::INFO) {
            log::emit(
                py,
                log::INFO,
                &format!("operator {name} targets the NPU twin: it runs on host CPU cores with the NPU's programming model (tiles sized for the 192 KiB Unified Buffer)"),
            );
        }
        Ok(Operator {
            companion: std::sync::OnceLock::new(),
            func,
            params,
            settings,
            core: pyasc_engine::Operator::new(config),
        })
    }

    /// Run the operator: NumPy arrays and scalars in, NumPy arrays out.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let me = slf.get();
        crate::boundary::guard(|| {
            let mut args = me.positional(py, args, kwargs)?;
            if me.device() == DeviceKind::NpuTwin {
                // Global-memory transfers of the twin must be 32-byte aligned.
                hooks::call(py, "check_transfers", (&args,))?;
            }
            if !crate::graph::graph_hook::never_used() {
                if let Some(lazy) = crate::graph::graph_hook::record(py, slf.as_any(), &args)? {
                    return Ok(lazy);
                }
                // Lazy graph-mode values: computed, then the call runs on their arrays.
                if let Some(resolved) = crate::graph::graph_hook::resolve(py, &args)? {
                    args = resolved;
                }
            }
            if let Some(kind) = me.companion.get() {
                return hooks::call_companion(py, kind, slf.as_any(), &args);
            }
            let mut parsed = match parse(py, &args, &me.params) {
                Ok(p) => p,
                Err(e) => {
                    // Arguments a companion takes (Dask arrays, complex numbers, containers).
                    return match hooks::companion_for_arguments(py, &args)? {
                        Some(kind) => hooks::call_companion(py, &kind, slf.as_any(), &args),
                        None => Err(e),
                    };
                }
            };
            let entry = match me.entry_with_captured(py, &mut parsed) {
                Ok(e) => e,
                Err(e) => {
                    let Some(kind) = hooks::companion_needed(py, &e) else { return Err(e) };
                    drop(parsed);
                    let kind = me.companion.get_or_init(|| kind);
                    return hooks::call_companion(py, kind, slf.as_any(), &args);
                }
            };
            log_queued_launches(py);
            if parsed.any_device() {
                me.launch_queued(py, &entry, &mut parsed)
            } else {
                me.launch_now(py, &entry, &parsed)
            }
        })
    }

    /// Compile (or fetch) the plan for these example arguments without running it; with no
    /// arguments, the plan compiled most recently.
    #[pyo3(signature = (*args, **kwargs))]
    fn get_compiled_op(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let me = slf.get();
        crate::boundary::guard(|| {
            if args.is_empty() && kwargs.is_none_or(|k| k.is_empty()) && !me.params.is_empty() {
                return match me.core.last() {
                    Some(entry) => Ok(Py::new(py, CompiledOp::new(entry, me.device()))?.into_any()),
                    None => Err(user_error(
                        py,
                        ErrorKind::InvalidArgument,
                        format!("{} has not been compiled yet: call it once or pass example arguments", me.name()),
                    )),
                };
            }
            let args = me.positional(py, args, kwargs)?;
            let args = crate::graph::graph_hook::resolve(py, &args)?.unwrap_or(args);
            let compiled = |kind: &str| Ok(hooks::call(py, "compiled_companion", (kind, slf, &args))?.unbind());
            if let Some(kind) = me.companion.get() {
                return compiled(kind);
            }
            let mut parsed = match parse(py, &args, &me.params) {
                Ok(p) => p,
                Err(e) => {
                    return match hooks::companion_for_arguments(py, &args)? {
                        Some(kind) => compiled(&kind),
                        None => Err(e),
                    };
                }
            };
            let entry = match me.entry_with_captured(py, &mut parsed) {
                Ok(e) => e,
                Err(e) => {
                    // Results a companion runs, found by this first trace: the plan is the companion's.
                    let Some(kind) = hooks::companion_needed(py, &e) else { return Err(e) };
                    drop(parsed);
                    return compiled(me.companion.get_or_init(|| kind));
                }
            };
            Ok(Py::new(py, CompiledOp::new(entry, me.device()))?.into_any())
        })
    }

    /// This operator's own cache statistics (hits, misses, compiles, entries); `cache_info()`
    /// adds its companions' (`pyasc.core._operator_methods`).
    fn _core_cache_info(&self) -> (u64, u64, u64, u64) {
        let info = self.core.cache_info();
        (info.hits, info.misses, info.compiles, info.size as u64)
    }

    /// Drop this operator's own compiled plans (statistics are kept); `cache_clear()` clears
    /// its companions' too.
    fn _core_cache_clear(&self) {
        self.core.clear();
    }

    /// The user's function.
    #[getter]
    fn __wrapped__(&self, py: Python<'_>) -> Py<PyAny> {
        self.func.clone_ref(py)
    }

    /// The operator's name (`kernel_name` or the function's name).
    #[getter]
    fn __name__(&self) -> String {
        self.name().to_string()
    }

    /// The validated options the operator was created with.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.settings.bind(py).clone()
    }

    /// The device kind name ("cpu" or "npu-twin").
    #[getter]
    #[pyo3(name = "device")]
    fn device_name(&self) -> &'static str {
        self.device().name()
    }

    fn __repr__(&self) -> String {
        format!("<pyasc.operator {} on {}>", self.name(), self.device().name())
    }
}
