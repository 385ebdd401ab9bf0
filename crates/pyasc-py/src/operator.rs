//! The operator object `@pyasc.operator` returns: Python objects in, engine types out. The
//! plan cache, compiling, re-specialisation and launching live in [`pyasc_engine`]; here are
//! the conversions (arguments to a signature and views, results to NumPy arrays or
//! DeviceArrays), tracing the Python function, and the log lines.

use crate::args::{parse, Args};
use crate::arrays::empty;
use crate::compiled::CompiledOp;
use crate::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use crate::log;
use crate::tensor::{captured_array, node_of, Tensor, Trace};
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
    /// Set once the function returned a complex value: calls then run through `pyasc._complex`.
    complex: std::sync::atomic::AtomicBool,
    /// Set once the function returned nested containers: calls then run through `pyasc.pytree`.
    tree_out: std::sync::atomic::AtomicBool,
    /// Set once a call took containers: `cache_info` then adds the companions' statistics.
    tree_used: std::sync::atomic::AtomicBool,
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
        let ctx = py.import("pyasc.dynamic")?;
        ctx.call_method1("_enter_trace", (PyTuple::new(py, tensors.iter().map(|t| t.clone_ref(py)))?,))?;
        let result = self.func.bind(py).call1(PyTuple::new(py, tensors)?);
        ctx.call_method0("_exit_trace")?;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                Trace::abort(&trace);
                return Err(e);
            }
        };
        if !result.is_instance_of::<Tensor>()
            && py.import("pyasc.pytree")?.call_method1("needs_tree", (&result,))?.is_truthy()?
        {
            // Nested results: the call runs again over flat leaves (see `pyasc.pytree`).
            Trace::abort(&trace);
            return Err(PyErr::from_value(py.import("pyasc.pytree")?.getattr("StructuredResult")?.call0()?));
        }
        let (items, tuple_out) = if result.is_instance_of::<PyTuple>() {
            (result.try_iter()?.collect::<PyResult<Vec<_>>>()?, true)
        } else {
            (vec![result], false)
        };
        if items.iter().any(|i| i.hasattr("_pyasc_complex").unwrap_or(false)) {
            // Complex results: the call runs again as pairs of real values.
            return Err(PyErr::from_value(py.import("pyasc._complex")?.getattr("ComplexResult")?.call0()?));
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
                let bound = py.import("pyasc._binding")?.call_method1("bind", (self.func.bind(py), args, kw))?;
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
                Some(proto) => py.import("pyasc._interop")?.getattr("like")?.call1((proto, arr))?,
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
            let convert = py.import("pyasc._interop")?.getattr("like")?;
            results = results.into_iter().map(|r| convert.call1((proto, r))).collect::<PyResult<_>>()?;
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
        let handed =
            py.import("pyasc.debug").and_then(|m| m.call_method1("_record_run", (self.name(), inputs, records, error)));
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
        let stream = crate::stream::current();
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
        let device = crate::placement::operator_kind(DeviceKind::parse(device_type).map_err(to_py)?);
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
        let precision = crate::precision::mode(py, precision_name)?;
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
            complex: std::sync::atomic::AtomicBool::new(false),
            tree_out: std::sync::atomic::AtomicBool::new(false),
            tree_used: std::sync::atomic::AtomicBool::new(false),
            func,
            params,
            settings,
            core: pyasc_engine::Operator::new(config),
        })
    }

    /// Compare a call on `args` with the same function in float64 (see
    /// `pyasc.check_accuracy`).
    #[pyo3(signature = (*args))]
    fn check_accuracy<'py>(slf: &Bound<'py, Self>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let mut all = vec![slf.clone().into_any()];
        all.extend(args.iter());
        py.import("pyasc.accuracy")?.getattr("check_accuracy")?.call1(PyTuple::new(py, all)?)
    }

    /// Predicted duration of a call on `args` on the modelled Ascend NPU (see
    /// `pyasc.npu_cost.estimate`; `double_buffer=False` serializes the pipelines).
    #[pyo3(signature = (*args, **kwargs))]
    fn estimate<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let mut all = vec![slf.clone().into_any()];
        all.extend(args.iter());
        py.import("pyasc.npu_cost")?.getattr("estimate")?.call(PyTuple::new(py, all)?, kwargs)
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
                py.import("pyasc.npu_twin")?.call_method1("check_transfers", (&args,))?;
            }
            if !crate::graph_hook::never_used() {
                if let Some(lazy) = crate::graph_hook::record(py, slf.as_any(), &args)? {
                    return Ok(lazy);
                }
                // Lazy graph-mode values: computed, then the call runs on their arrays.
                if let Some(resolved) = crate::graph_hook::resolve(py, &args)? {
                    args = resolved;
                }
            }
            let complex = || -> PyResult<Py<PyAny>> {
                Ok(py.import("pyasc._complex")?.call_method1("call", (slf, &args))?.unbind())
            };
            let tree = || -> PyResult<Py<PyAny>> {
                me.tree_used.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(py.import("pyasc.pytree")?.call_method1("call", (slf, &args))?.unbind())
            };
            if me.complex.load(std::sync::atomic::Ordering::Relaxed) {
                return complex();
            }
            if me.tree_out.load(std::sync::atomic::Ordering::Relaxed) {
                return tree();
            }
            let mut parsed = match parse(py, &args, &me.params) {
                Ok(p) => p,
                Err(e) => {
                    // Dask arrays: a lazy Dask array of per-chunk calls (see `pyasc.dask_array`).
                    let lazy = py.import("pyasc.dask_array")?;
                    if lazy.call_method1("has_dask", (&args,))?.is_truthy()? {
                        return Ok(lazy.call_method1("call", (slf, &args))?.unbind());
                    }
                    // Complex arguments run as pairs of real ones (see `pyasc._complex`).
                    if py.import("pyasc._complex")?.call_method1("has_complex", (&args,))?.is_truthy()? {
                        return complex();
                    }
                    // Nested arguments run as flat leaves (see `pyasc.pytree`).
                    if py.import("pyasc.pytree")?.call_method1("has_structure", (&args,))?.is_truthy()? {
                        return tree();
                    }
                    return Err(e);
                }
            };
            let entry = match me.entry_with_captured(py, &mut parsed) {
                Ok(e) => e,
                Err(e) if e.is_instance(py, &py.import("pyasc._complex")?.getattr("ComplexResult")?) => {
                    me.complex.store(true, std::sync::atomic::Ordering::Relaxed);
                    drop(parsed);
                    return complex();
                }
                Err(e) if e.is_instance(py, &py.import("pyasc.pytree")?.getattr("StructuredResult")?) => {
                    me.tree_out.store(true, std::sync::atomic::Ordering::Relaxed);
                    drop(parsed);
                    return tree();
                }
                Err(e) => return Err(e),
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
            let args = crate::graph_hook::resolve(py, &args)?.unwrap_or(args);
            let pytree = py.import("pyasc.pytree")?;
            if me.tree_out.load(std::sync::atomic::Ordering::Relaxed)
                || pytree.call_method1("has_structure", (&args,))?.is_truthy()?
            {
                me.tree_used.store(true, std::sync::atomic::Ordering::Relaxed);
                return Ok(pytree.call_method1("compiled", (slf, &args))?.unbind());
            }
            let mut parsed = parse(py, &args, &me.params)?;
            let entry = match me.entry_with_captured(py, &mut parsed) {
                Ok(e) => e,
                Err(e) if e.is_instance(py, &pytree.getattr("StructuredResult")?) => {
                    // Nested results, found by this first trace: the plan is the companion's.
                    me.tree_out.store(true, std::sync::atomic::Ordering::Relaxed);
                    me.tree_used.store(true, std::sync::atomic::Ordering::Relaxed);
                    drop(parsed);
                    return Ok(pytree.call_method1("compiled", (slf, &args))?.unbind());
                }
                Err(e) => return Err(e),
            };
            Ok(Py::new(py, CompiledOp::new(entry, me.device()))?.into_any())
        })
    }

    /// Cache statistics: hits, misses, compiles and entries, the plans of calls with complex
    /// or nested arguments (run by companion operators) included.
    fn cache_info(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let info = slf.get().core.cache_info();
        let companions = py.import("pyasc._complex")?.getattr("companion_cache_info")?.call1((slf,))?;
        let (h, m, c, s): (u64, u64, u64, u64) = companions.extract()?;
        let mut totals = [info.hits + h, info.misses + m, info.compiles + c, info.size as u64 + s];
        if slf.get().tree_used.load(std::sync::atomic::Ordering::Relaxed)
            || slf.get().tree_out.load(std::sync::atomic::Ordering::Relaxed)
        {
            // Calls with nested arguments run companion operators, one per structure.
            for c in py.import("pyasc.pytree")?.call_method1("companion_infos", (slf,))?.try_iter()? {
                let c = c?;
                for (t, f) in totals.iter_mut().zip(["hits", "misses", "compiles", "currsize"]) {
                    *t += c.getattr(f)?.extract::<u64>()?;
                }
            }
        }
        let cls = py.import("pyasc._types")?.getattr("CacheInfo")?;
        Ok(cls.call1((totals[0], totals[1], totals[2], totals[3]))?.unbind())
    }

    /// Drop every compiled plan, those of calls with complex or nested arguments included
    /// (statistics are kept).
    fn cache_clear(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().core.clear();
        slf.py().import("pyasc._complex")?.getattr("companion_cache_clear")?.call1((slf,))?;
        if slf.get().tree_used.load(std::sync::atomic::Ordering::Relaxed)
            || slf.get().tree_out.load(std::sync::atomic::Ordering::Relaxed)
        {
            slf.py().import("pyasc.pytree")?.call_method1("clear", (slf,))?;
        }
        Ok(())
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
