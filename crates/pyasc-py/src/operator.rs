//! The operator object `@pyasc.operator` returns: a per-signature cache of compiled plans,
//! tracing on a miss, and the cached call path (parse arguments, look up, allocate
//! outputs, run with the GIL released) entirely in Rust.

use crate::args::{parse, ArgSig, Args};
use crate::arrays::empty;
use crate::compiled::CompiledOp;
use crate::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use crate::log;
use crate::tensor::{node_of, ConstArray, Tensor, Trace, TraceRef};
use pyasc_compiler::{compile, CompileOptions, Compiled};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::print::{graph_to_string, plan_to_string};
use pyasc_ir::tile::BufferId;
use pyasc_ir::{DType, Graph, Shape};
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions, RunStats};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One compiled signature.
pub struct Entry {
    /// Compiler output (graph, plan, pass reports).
    pub compiled: Compiled,
    /// The traced graph before optimisation, as text.
    pub traced_text: String,
    /// True when the function returned a tuple or list (results are returned as a tuple).
    pub tuple_out: bool,
    /// Microseconds spent tracing and compiling.
    pub compile_micros: f64,
    /// With `dynamic_shape=True`: the traced graph, and whether the function read a shape
    /// (then other shapes need their own trace).
    pub template: Option<(Graph, bool)>,
    /// Arrays made while tracing, passed after the caller's arguments.
    pub constants: Vec<ConstArray>,
}

impl Entry {
    /// The caller's argument views followed by the trace-time constants.
    pub fn with_constants(&self, views: &[InputView]) -> Vec<InputView> {
        let mut all = views.to_vec();
        all.extend(self.constants.iter().map(|c| c.view()));
        all
    }
}

/// A traced, compiled operator (what the `pyasc.operator` decorator returns).
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct Operator {
    func: Py<PyAny>,
    name: String,
    params: Vec<String>,
    device: DeviceKind,
    options: CompileOptions,
    debug: bool,
    settings: Py<PyDict>,
    cache: Mutex<HashMap<Vec<u64>, Arc<Entry>>>,
    templates: Mutex<HashMap<Vec<u64>, Arc<Entry>>>,
    dynamic: bool,
    last: Mutex<Option<Arc<Entry>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    compiles: AtomicU64,
}

/// Raw views and output pointers moved into a GIL-free section.
struct Launch<'a> {
    entry: &'a Entry,
    views: &'a [InputView],
    outs: Vec<OutputPtr>,
    opts: RunOptions,
    device: DeviceKind,
}
// SAFETY: the views and outputs point into arrays kept alive by the caller for the whole
// launch, and no Python object is touched while the GIL is released.
unsafe impl Send for Launch<'_> {}

impl Launch<'_> {
    fn run(self) -> pyasc_ir::error::Result<RunStats> {
        device_for(self.device).execute(&self.entry.compiled.plan, self.views, &self.outs, self.opts)
    }
}

impl Operator {
    fn lookup(&self, key: &[u64]) -> Option<Arc<Entry>> {
        self.cache.lock().expect("cache lock poisoned").get(key).cloned()
    }

    /// Trace the function on tensors of the given signatures and compile the graph.
    fn trace_and_compile(&self, py: Python<'_>, sigs: &[ArgSig]) -> PyResult<Entry> {
        let t0 = Instant::now();
        let trace: TraceRef = Arc::new(Mutex::new(Trace { open: true, ..Default::default() }));
        let tensors: Vec<Py<Tensor>> = {
            let mut tr = trace.lock().expect("trace lock poisoned");
            let ids: Vec<_> = sigs.iter().map(|s| tr.graph.add_input(s.vtype, Shape(s.shape.clone()))).collect();
            drop(tr);
            ids.into_iter()
                .zip(sigs)
                .map(|(id, s)| Py::new(py, Tensor::new(trace.clone(), id, s.vtype.dtype, s.shape.clone())))
                .collect::<PyResult<_>>()?
        };
        let ctx = py.import("pyasc.dynamic")?;
        ctx.call_method1("_enter_trace", (PyTuple::new(py, tensors.iter().map(|t| t.clone_ref(py)))?,))?;
        let result = self.func.bind(py).call1(PyTuple::new(py, tensors)?);
        ctx.call_method0("_exit_trace")?;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                trace.lock().expect("trace lock poisoned").open = false;
                return Err(e);
            }
        };
        let (items, tuple_out) = if result.is_instance_of::<PyTuple>() || result.is_instance_of::<PyList>() {
            (result.try_iter()?.collect::<PyResult<Vec<_>>>()?, true)
        } else {
            (vec![result], false)
        };
        let mut outputs = Vec::with_capacity(items.len());
        for item in &items {
            outputs.push(node_of(py, &trace, item).map_err(|_| {
                let tname = item.get_type().name().map(|s| s.to_string()).unwrap_or_default();
                user_error(
                    py,
                    ErrorKind::Trace,
                    format!("operator {} returned a {tname}; return tensors, numbers or a tuple of them", self.name),
                )
            })?);
        }
        let mut tr = trace.lock().expect("trace lock poisoned");
        tr.open = false;
        tr.graph.outputs = outputs;
        let graph = std::mem::take(&mut tr.graph);
        let shape_read = tr.shape_read;
        let constants = std::mem::take(&mut tr.constants);
        drop(tr);
        let template = self.dynamic.then(|| (graph.clone(), shape_read));
        let traced_text = graph_to_string(&graph);
        let mut options = self.options.clone();
        options.tile_budget_bytes = device_for(self.device).info().local_memory_bytes;
        let compiled = compile(graph, &options).map_err(to_py)?;
        let compile_micros = t0.elapsed().as_secs_f64() * 1e6;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        if log::enabled(log::DEBUG) {
            log::emit(py, log::DEBUG, &format!("trace of {}:\n{}", self.name, traced_text));
            for r in &compiled.reports {
                let mut line =
                    format!("pass {}: {:.1} us, {} -> {} nodes", r.name, r.micros, r.nodes_before, r.nodes_after);
                for n in &r.notes {
                    line.push_str("\n  ");
                    line.push_str(n);
                }
                log::emit(py, log::DEBUG, &line);
            }
            log::emit(py, log::DEBUG, &format!("kernel plan of {}:\n{}", self.name, plan_to_string(&compiled.plan)));
        }
        if log::enabled(log::INFO) {
            let dev = device_for(self.device).info();
            log::emit(
                py,
                log::INFO,
                &format!(
                    "compiled {} for {} in {:.0} us: {} kernel(s) on {}",
                    self.name,
                    describe(sigs),
                    compile_micros,
                    compiled.plan.kernels.len(),
                    dev.name
                ),
            );
        }
        Ok(Entry { compiled, traced_text, tuple_out, compile_micros, template, constants })
    }

    /// With `dynamic_shape=True`: a plan for new shapes from the trace of another call of the
    /// same ranks and dtypes, without tracing again (`None` when it must be traced again).
    fn respecialize(&self, py: Python<'_>, sigs: &[ArgSig]) -> PyResult<Option<Entry>> {
        let t0 = Instant::now();
        let template = self.templates.lock().expect("cache lock poisoned").get(&dynamic_key(sigs)).cloned();
        let Some(base) = template else { return Ok(None) };
        let Some((graph, shape_read)) = &base.template else { return Ok(None) };
        if *shape_read {
            return Ok(None);
        }
        let mut shapes: Vec<Vec<usize>> = sigs.iter().map(|s| s.shape.clone()).collect();
        shapes.extend(base.constants.iter().map(|c| c.shape.clone()));
        let graph = match graph.respecialize(&shapes) {
            None => return Ok(None),
            Some(g) => g.map_err(to_py)?,
        };
        let mut options = self.options.clone();
        options.tile_budget_bytes = device_for(self.device).info().local_memory_bytes;
        let compiled = compile(graph, &options).map_err(to_py)?;
        let compile_micros = t0.elapsed().as_secs_f64() * 1e6;
        if log::enabled(log::INFO) {
            log::emit(
                py,
                log::INFO,
                &format!("specialised {} for {} in {:.0} us (no new trace)", self.name, describe(sigs), compile_micros),
            );
        }
        Ok(Some(Entry {
            compiled,
            traced_text: base.traced_text.clone(),
            tuple_out: base.tuple_out,
            compile_micros,
            template: None,
            constants: base.constants.clone(),
        }))
    }

    /// The entry for these arguments, compiling on a miss.
    fn entry_for(&self, py: Python<'_>, key: &[u64], sigs: &[ArgSig]) -> PyResult<Arc<Entry>> {
        if let Some(e) = self.lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(e);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let special = if self.dynamic { self.respecialize(py, sigs)? } else { None };
        let entry = match special {
            Some(e) => Arc::new(e),
            None => {
                let e = Arc::new(self.trace_and_compile(py, sigs)?);
                if self.dynamic {
                    self.templates.lock().expect("cache lock poisoned").insert(dynamic_key(sigs), e.clone());
                }
                e
            }
        };
        self.cache.lock().expect("cache lock poisoned").insert(key.to_vec(), entry.clone());
        *self.last.lock().expect("cache lock poisoned") = Some(entry.clone());
        Ok(entry)
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
}

/// Return one result as itself, several (or a returned tuple) as a tuple.
fn pack<'py>(py: Python<'py>, entry: &Entry, results: Vec<Bound<'py, PyAny>>) -> PyResult<Py<PyAny>> {
    if entry.tuple_out {
        Ok(PyTuple::new(py, results)?.into_any().unbind())
    } else {
        Ok(results.into_iter().next().expect("one output").unbind())
    }
}

/// Raw views and outputs moved into a stream task.
struct AsyncLaunch {
    views: Vec<InputView>,
    outs: Vec<OutputPtr>,
}
// SAFETY: the memory behind every pointer is kept alive by buffers the task owns, and the
// stream ordering guarantees nobody else writes it while the task runs.
unsafe impl Send for AsyncLaunch {}

impl Operator {
    /// DeviceArray arguments: queue the plan on the current stream and return DeviceArrays
    /// at once. Host arrays among the arguments are copied to the device first (a snapshot,
    /// so later changes to them do not race the kernel).
    fn launch_async<'py>(&self, py: Python<'py>, entry: &Arc<Entry>, parsed: &mut Args<'py>) -> PyResult<Py<PyAny>> {
        let stream = crate::stream::current();
        let plan = &entry.compiled.plan;
        let mut views = entry.with_constants(&parsed.views);
        let mut reads: Vec<Arc<DeviceBuffer>> = Vec::new();
        for (i, dev) in parsed.devices.iter().enumerate() {
            if let Some(b) = dev {
                reads.push(b.clone());
            } else if let Some(host) = &parsed.hosts[i] {
                let sig = &parsed.sigs[i];
                let staged = Py::new(py, DeviceArray::alloc(sig.vtype.dtype, sig.shape.clone(), 128).map_err(to_py)?)?;
                staged.get().buf.wait_host(true);
                let view = staged.get().host_view_any(staged.bind(py))?;
                crate::arrays::numpy(py)?.call_method1("copyto", (view, host))?;
                views[i] = staged.get().view();
                reads.push(staged.get().buf.clone());
            }
        }
        for b in &reads {
            b.order_on(&stream, false);
        }
        let mut made: Vec<(BufferId, DeviceArray)> = Vec::with_capacity(plan.outputs.len());
        for b in &plan.outputs {
            if made.iter().any(|(id, _)| id == b) {
                continue;
            }
            let decl = &plan.buffers[b.0 as usize];
            made.push((*b, DeviceArray::alloc(decl.dtype, decl.shape.0.clone(), 128).map_err(to_py)?));
        }
        let outs: Vec<OutputPtr> = plan
            .outputs
            .iter()
            .map(|b| OutputPtr(made.iter().find(|(id, _)| id == b).expect("allocated above").1.data_ptr()))
            .collect();
        let writes: Vec<Arc<DeviceBuffer>> = made.iter().map(|(_, a)| a.buf.clone()).collect();
        let scalars = parsed.take_scalars();
        let launch = AsyncLaunch { views, outs };
        let (task_entry, device) = (entry.clone(), self.device);
        let opts = RunOptions { record: false, check_finite: self.debug };
        let keep = (reads.clone(), writes.clone());
        let name = self.name.clone();
        let seq = stream.enqueue(Box::new(move || {
            // Move the whole launch into the task (not its non-Send fields one by one).
            let launch = launch;
            let _alive = (&keep, &scalars);
            device_for(device)
                .execute(&task_entry.compiled.plan, &launch.views, &launch.outs, opts)
                .map(|_| ())
                .map_err(|mut e| {
                    e.message = format!("in operator {name}: {}", e.message);
                    e
                })
        }));
        for b in &reads {
            b.record_use(&stream, seq, false);
        }
        for b in &writes {
            b.record_use(&stream, seq, true);
        }
        let objs: Vec<(BufferId, Bound<'py, PyAny>)> =
            made.into_iter().map(|(id, a)| Ok((id, Bound::new(py, a)?.into_any()))).collect::<PyResult<_>>()?;
        let results =
            plan.outputs.iter().map(|b| objs.iter().find(|(id, _)| id == b).expect("made above").1.clone()).collect();
        pack(py, entry, results)
    }
}

/// The cache key of a dynamic-shape operator: per argument, its type, rank and which axes
/// have extent 1 (broadcasting depends on those), not the extents.
fn dynamic_key(sigs: &[ArgSig]) -> Vec<u64> {
    sigs.iter()
        .map(|s| {
            let ones = s.shape.iter().enumerate().fold(0u64, |m, (i, d)| m | (((*d == 1) as u64) << (i % 40)));
            let tag = DType::ALL.iter().position(|d| *d == s.vtype.dtype).unwrap_or(0) as u64
                | (s.vtype.weak.is_some() as u64) << 4
                | (s.shape.len() as u64) << 8;
            tag | ones << 16
        })
        .collect()
}

fn describe(sigs: &[ArgSig]) -> String {
    let parts: Vec<String> = sigs
        .iter()
        .map(|s| match s.vtype.weak {
            Some(k) => format!("{k:?}").to_lowercase(),
            None => format!("{}{:?}", s.vtype.dtype, s.shape),
        })
        .collect();
    format!("({})", parts.join(", "))
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
        let device = DeviceKind::parse(device_type).map_err(to_py)?;
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
        let options = CompileOptions { op_break_level, kernel_name: name.clone(), ..CompileOptions::default() };
        if device == DeviceKind::NpuTwin && log::enabled(log::INFO) {
            log::emit(
                py,
                log::INFO,
                &format!("operator {name} targets the NPU twin: it runs on host CPU cores with the NPU's programming model (tiles sized for the 192 KiB Unified Buffer)"),
            );
        }
        Ok(Operator {
            func,
            name,
            params,
            device,
            options,
            debug,
            settings,
            cache: Mutex::new(HashMap::new()),
            templates: Mutex::new(HashMap::new()),
            dynamic,
            last: Mutex::new(None),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
        })
    }

    /// Run the operator: NumPy arrays and scalars in, NumPy arrays out.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let args = self.positional(py, args, kwargs)?;
        let mut parsed = parse(py, &args, &self.params)?;
        let entry = self.entry_for(py, &parsed.key, &parsed.sigs)?;
        if parsed.any_device() {
            return self.launch_async(py, &entry, &mut parsed);
        }
        let plan = &entry.compiled.plan;
        let pooled = parsed.foreign.is_some();
        // One array per distinct output buffer.
        let mut made: Vec<(BufferId, Bound<'py, PyAny>, *mut u8)> = Vec::with_capacity(plan.outputs.len());
        let mut outs = Vec::with_capacity(plan.outputs.len());
        let mut elements = 0usize;
        for b in &plan.outputs {
            if let Some((_, _, p)) = made.iter().find(|(id, _, _)| id == b) {
                outs.push(OutputPtr(*p));
                continue;
            }
            let decl = &plan.buffers[b.0 as usize];
            elements += decl.shape.numel();
            let (arr, p) = empty(py, decl.dtype, &decl.shape.0, pooled).map_err(to_py)?;
            outs.push(OutputPtr(p));
            made.push((*b, arr, p));
        }
        let record = log::enabled(log::DEBUG);
        let opts = RunOptions { record, check_finite: self.debug };
        let all_views: std::borrow::Cow<'_, [InputView]> = if entry.constants.is_empty() {
            std::borrow::Cow::Borrowed(&parsed.views)
        } else {
            std::borrow::Cow::Owned(entry.with_constants(&parsed.views))
        };
        let launch = Launch { entry: &entry, views: &all_views, outs, opts, device: self.device };
        let stats = if elements >= pyasc_runtime::vm::PARALLEL_THRESHOLD {
            py.detach(move || launch.run())
        } else {
            launch.run()
        }
        .map_err(to_py)?;
        if record {
            for k in &stats.kernels {
                log::emit(
                    py,
                    log::DEBUG,
                    &format!(
                        "launch {}: {} elements, {} tiles, {} blocks, {:.1} us",
                        k.name, k.elements, k.tiles, k.blocks, k.micros
                    ),
                );
            }
        }
        let mut results: Vec<Bound<'py, PyAny>> = plan
            .outputs
            .iter()
            .map(|b| made.iter().find(|(id, _, _)| id == b).expect("allocated above").1.clone())
            .collect();
        if let Some(proto) = &parsed.foreign {
            let convert = py.import("pyasc._interop")?.getattr("like")?;
            results = results.into_iter().map(|r| convert.call1((proto, r))).collect::<PyResult<_>>()?;
        }
        pack(py, &entry, results)
    }

    /// Compile (or fetch) the plan for these example arguments without running it; with no
    /// arguments, the plan compiled most recently.
    #[pyo3(signature = (*args, **kwargs))]
    fn get_compiled_op(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<CompiledOp> {
        if args.is_empty() && kwargs.is_none_or(|k| k.is_empty()) && !self.params.is_empty() {
            let last = self.last.lock().expect("cache lock poisoned").clone();
            return match last {
                Some(entry) => Ok(CompiledOp::new(entry, self.device)),
                None => Err(user_error(
                    py,
                    ErrorKind::InvalidArgument,
                    format!("{} has not been compiled yet: call it once or pass example arguments", self.name),
                )),
            };
        }
        let args = self.positional(py, args, kwargs)?;
        let parsed = parse(py, &args, &self.params)?;
        let entry = self.entry_for(py, &parsed.key, &parsed.sigs)?;
        Ok(CompiledOp::new(entry, self.device))
    }

    /// Cache statistics: hits, misses, compiles and entries.
    fn cache_info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let size = self.cache.lock().expect("cache lock poisoned").len();
        let cls = py.import("pyasc._types")?.getattr("CacheInfo")?;
        Ok(cls
            .call1((
                self.hits.load(Ordering::Relaxed),
                self.misses.load(Ordering::Relaxed),
                self.compiles.load(Ordering::Relaxed),
                size,
            ))?
            .unbind())
    }

    /// Drop every compiled plan (statistics are kept).
    fn cache_clear(&self) {
        self.cache.lock().expect("cache lock poisoned").clear();
        self.templates.lock().expect("cache lock poisoned").clear();
    }

    /// The user's function.
    #[getter]
    fn __wrapped__(&self, py: Python<'_>) -> Py<PyAny> {
        self.func.clone_ref(py)
    }

    /// The operator's name (`kernel_name` or the function's name).
    #[getter]
    fn __name__(&self) -> String {
        self.name.clone()
    }

    /// The validated options the operator was created with.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.settings.bind(py).clone()
    }

    /// The device kind name ("cpu" or "npu-twin").
    #[getter]
    fn device(&self) -> &'static str {
        self.device.name()
    }

    fn __repr__(&self) -> String {
        format!("<pyasc.operator {} on {}>", self.name, self.device.name())
    }
}
