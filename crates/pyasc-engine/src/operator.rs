//! An operator's engine side: the plan cache keyed by [`Signature`], compiling traced graphs,
//! re-specialising dynamic-shape traces for new extents, and the one launch path that runs a
//! plan now or queues it on a stream.

use crate::door::Launcher;
use crate::signature::{DynamicKey, Signature};
use crate::trace::{Captured, Extra, Traced};
use pyasc_compiler::{compile, CompileOptions, Compiled};
use pyasc_events::event::{Event, EventKind};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::print::graph_to_string;
use pyasc_ir::tile::KernelPlan;
use pyasc_ir::{DType, Graph};
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::stream::Stream;
use pyasc_runtime::{
    device_for, Device, DeviceKind, InputView, OutputPtr, PlanSource, RunOptions, RunStats, StreamLaunch,
};
use rustc_hash::FxHashMap;
use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
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
    /// With dynamic shapes: the traced graph, and whether the function read a shape
    /// (then other shapes need their own trace).
    pub template: Option<(Graph, bool)>,
    /// Arrays made or captured while tracing, passed after the caller's arguments.
    pub extras: Vec<Extra>,
    /// How many of `extras` are captured arrays (their views come from the caller).
    pub n_captured: usize,
    /// The operator's name.
    pub name: String,
    /// The distinct output buffers (dtype, shape), each allocated once per call.
    pub out_buffers: Vec<(DType, Vec<usize>)>,
    /// Per plan output: its index in `out_buffers` (a plan may return one buffer twice).
    pub out_slots: Vec<usize>,
    /// The operator's use counter at this entry's latest use (least recently used goes first).
    used: AtomicU64,
    /// The latest event collection ([`pyasc_events::event::generation`]) whose launch event carries
    /// this entry's graph IR, fusion groups and tile programs.
    described: AtomicU64,
}

impl Entry {
    fn new(compiled: Compiled, name: &str) -> Entry {
        let plan = &compiled.plan;
        let mut ids = Vec::new();
        let mut out_buffers = Vec::new();
        let out_slots = plan
            .outputs
            .iter()
            .map(|b| {
                ids.iter().position(|x| x == b).unwrap_or_else(|| {
                    let decl = &plan.buffers[b.0 as usize];
                    ids.push(*b);
                    out_buffers.push((decl.dtype, decl.shape.0.clone()));
                    ids.len() - 1
                })
            })
            .collect();
        Entry {
            compiled,
            traced_text: String::new(),
            tuple_out: false,
            compile_micros: 0.0,
            template: None,
            extras: Vec::new(),
            n_captured: 0,
            name: name.to_string(),
            out_buffers,
            out_slots,
            used: AtomicU64::new(0),
            described: AtomicU64::new(0),
        }
    }

    /// Add this entry's graph IR, fusion groups and tile programs to a launch event, once per
    /// event collection.
    fn describe_into(&self, ev: Event) -> Event {
        let generation = pyasc_events::event::generation();
        if self.described.swap(generation, Ordering::Relaxed) == generation {
            return ev;
        }
        let kernels = &self.compiled.plan.kernels;
        let fusion: Vec<String> = kernels
            .iter()
            .map(|k| {
                let lines: Vec<String> = k.locs.iter().map(|l| l.to_string()).collect();
                format!("{}\t{}\t{}", k.name, k.fused_ops, lines.join(" "))
            })
            .collect();
        let programs: Vec<String> = kernels.iter().map(pyasc_ir::print::kernel_to_string).collect();
        ev.label("traced_ir", self.traced_text.clone())
            .label("graph_ir", graph_to_string(&self.compiled.graph))
            .label("fusion", fusion.join("\n"))
            .label("tile_programs", programs.join("\n\u{1e}"))
    }

    /// Every input of the plan: `views` holds the caller's arguments followed by one view per
    /// captured array (in [`Entry::captured`] order); the trace-time constants are put in their
    /// places between them.
    pub fn with_extras<'a>(&self, views: &'a [InputView]) -> Result<Cow<'a, [InputView]>> {
        if self.extras.is_empty() {
            return Ok(Cow::Borrowed(views));
        }
        let Some(n_args) = views.len().checked_sub(self.n_captured) else {
            return Err(IrError::internal("a launch is missing the views of captured arrays"));
        };
        let mut all = views[..n_args].to_vec();
        let mut next = n_args;
        for e in &self.extras {
            match e {
                Extra::Const(c) => all.push(c.view()),
                Extra::Captured(_) => {
                    all.push(views[next].clone());
                    next += 1;
                }
            }
        }
        Ok(Cow::Owned(all))
    }

    /// The arrays the function captured from outside itself, in the order their views follow
    /// the caller's arguments.
    pub fn captured(&self) -> impl Iterator<Item = &Captured> {
        self.extras.iter().filter_map(|e| match e {
            Extra::Captured(c) => Some(c),
            Extra::Const(_) => None,
        })
    }

    /// Elements of all outputs (how much work a launch is).
    pub fn output_elements(&self) -> usize {
        self.out_buffers.iter().map(|(_, s)| s.iter().product::<usize>()).sum()
    }

    /// One output pointer per plan output, from one pointer per distinct output buffer.
    pub fn output_ptrs(&self, buffers: &[*mut u8]) -> Vec<OutputPtr> {
        self.out_slots.iter().map(|s| OutputPtr(buffers[*s])).collect()
    }
}

impl PlanSource for Entry {
    fn plan(&self) -> &KernelPlan {
        &self.compiled.plan
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// How a cache entry was obtained.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Found in the cache.
    Hit,
    /// Compiled from the trace of another shape, without tracing.
    Respecialized,
    /// Traced and compiled.
    Traced,
}

/// Cache statistics.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheInfo {
    /// Calls served from the cache.
    pub hits: u64,
    /// Calls that compiled (or re-specialised) a plan.
    pub misses: u64,
    /// Traces compiled.
    pub compiles: u64,
    /// Entries held.
    pub size: usize,
}

/// What the engine needs to know about an operator.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// Name (kernel names, logs).
    pub name: String,
    /// Where it runs.
    pub device: DeviceKind,
    /// Compiler options (the tile budget is taken from the device).
    pub options: CompileOptions,
    /// Re-plan new extents from one trace per [`DynamicKey`].
    pub dynamic: bool,
    /// Check every kernel's outputs for NaN and infinity.
    pub debug: bool,
}

/// Where a launch runs.
pub enum Order<'a> {
    /// Now, on the calling thread (and the worker team); returns when done.
    Now,
    /// Queued on a stream after conflicting work on the buffers; returns at once.
    Stream {
        /// The stream.
        stream: &'a Stream,
        /// Device buffers the launch reads.
        reads: Vec<Arc<DeviceBuffer>>,
        /// Device buffers the launch writes (its outputs).
        writes: Vec<Arc<DeviceBuffer>>,
        /// Anything else the input views point into, kept until the launch ran.
        keep: Option<Box<dyn Any + Send>>,
    },
}

/// What a launch did.
#[derive(Debug)]
pub enum Launched {
    /// It ran; the statistics hold kernel records when they were asked for.
    Done(RunStats),
    /// It was queued as this task of the stream.
    Queued(u64),
}

/// Kernel records of queued launches that asked for them, waiting to be logged.
static PENDING: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

/// Take the kernel records of queued launches that ran since the last call (launches queued
/// with `record` set; the caller logs them).
pub fn take_queued_records() -> Vec<Event> {
    if !ANY_PENDING.swap(false, Ordering::Acquire) {
        return Vec::new();
    }
    std::mem::take(&mut *pyasc_events::forksafe::lock(&PENDING))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().expect("cache lock poisoned")
}

/// An operator's plans, one per signature, and how to launch them.
pub struct Operator {
    config: OperatorConfig,
    device: &'static dyn Device,
    cache: Mutex<FxHashMap<Signature, Arc<Entry>>>,
    templates: Mutex<HashMap<DynamicKey, Arc<Entry>>>,
    last: Mutex<Option<Arc<Entry>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    compiles: AtomicU64,
    /// Uses so far: stamps entries for least-recently-used eviction.
    tick: AtomicU64,
    /// Most plans (and dynamic-shape traces) kept.
    capacity: AtomicUsize,
}

/// Default number of plans an operator keeps: `PYASC_CACHE_SIZE` when set to a positive whole
/// number (read once), else 512. Past it the least recently used plan is dropped, so calls on
/// ever new shapes keep memory flat.
pub fn default_cache_size() -> usize {
    static SIZE: OnceLock<usize> = OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("PYASC_CACHE_SIZE").ok().and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0).unwrap_or(512)
    })
}

/// Insert `e` under `key`, first dropping the least recently used entries past `capacity`.
fn insert_bounded<K: std::hash::Hash + Eq + Clone, S: std::hash::BuildHasher>(
    map: &mut HashMap<K, Arc<Entry>, S>,
    key: K,
    e: Arc<Entry>,
    capacity: usize,
) {
    while map.len() >= capacity.max(1) {
        let Some(oldest) = map.iter().min_by_key(|(_, v)| v.used.load(Ordering::Relaxed)).map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&oldest);
    }
    map.insert(key, e);
}

impl Operator {
    /// An operator with an empty cache.
    pub fn new(config: OperatorConfig) -> Operator {
        Operator {
            device: device_for(config.device),
            config,
            cache: Mutex::default(),
            templates: Mutex::default(),
            last: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
            tick: AtomicU64::new(0),
            capacity: AtomicUsize::new(default_cache_size()),
        }
    }

    /// Keep at most `n` plans from now on (at least one).
    pub fn set_capacity(&self, n: usize) {
        self.capacity.store(n.max(1), Ordering::Relaxed);
    }

    fn touch(&self, e: &Entry) {
        e.used.store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The configuration.
    pub fn config(&self) -> &OperatorConfig {
        &self.config
    }

    /// The device it runs on.
    pub fn device(&self) -> &'static dyn Device {
        self.device
    }

    fn options(&self) -> CompileOptions {
        let mut options = self.config.options.clone();
        let info = self.device.info();
        options.tile_budget_bytes = info.local_memory_bytes;
        options.tile_budget_hard = info.kind == pyasc_runtime::DeviceKind::NpuTwin;
        options
    }

    /// The plan cached for `sig`, counted as a hit.
    pub fn lookup(&self, sig: &Signature) -> Option<Arc<Entry>> {
        let e = lock(&self.cache).get(sig).cloned();
        if let Some(e) = &e {
            self.hits.fetch_add(1, Ordering::Relaxed);
            self.touch(e);
        }
        e
    }

    /// The plan for `sig`: cached, re-specialised from a dynamic-shape trace, or compiled from
    /// a new trace made by `trace`. `err` turns engine errors into the caller's error type.
    pub fn entry_for<E>(
        &self,
        sig: &Signature,
        trace: impl FnOnce(&Signature) -> std::result::Result<Traced, E>,
        err: impl Fn(IrError) -> E,
    ) -> std::result::Result<(Arc<Entry>, Source), E> {
        if let Some(e) = self.lookup(sig) {
            return Ok((e, Source::Hit));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let special = if self.config.dynamic { self.respecialize(sig).map_err(&err)? } else { None };
        let (entry, source) = match special {
            Some(e) => (Arc::new(e), Source::Respecialized),
            None => {
                let t0 = Instant::now();
                let traced = trace(sig)?;
                if pyasc_events::event::enabled() {
                    let ev = Event::new(EventKind::Trace, self.config.name.clone(), t0, Instant::now());
                    pyasc_events::event::record(ev.label("operator", self.config.name.clone()));
                }
                let e = Arc::new(self.compile_traced(traced, t0).map_err(&err)?);
                if self.config.dynamic {
                    insert_bounded(&mut lock(&self.templates), sig.dynamic_key(), e.clone(), self.capacity());
                }
                (e, Source::Traced)
            }
        };
        self.touch(&entry);
        insert_bounded(&mut lock(&self.cache), sig.to_owned_key(), entry.clone(), self.capacity());
        *lock(&self.last) = Some(entry.clone());
        Ok((entry, source))
    }

    /// Compile a finished trace (`t0`: when tracing began, for `compile_micros`).
    pub fn compile_traced(&self, traced: Traced, t0: Instant) -> Result<Entry> {
        let Traced { graph, shape_read, extras, tuple_out } = traced;
        let template = self.config.dynamic.then(|| (graph.clone(), shape_read));
        let traced_text = graph_to_string(&graph);
        let t_compile = Instant::now();
        let compiled = compile(graph, &self.options())?;
        if pyasc_events::event::enabled() {
            let ev = Event::new(EventKind::Compile, self.config.name.clone(), t_compile, Instant::now())
                .with("kernels", compiled.plan.kernels.len() as u64)
                .label("operator", self.config.name.clone());
            pyasc_events::event::record(ev);
        }
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let mut e = Entry::new(compiled, &self.config.name);
        e.traced_text = traced_text;
        e.tuple_out = tuple_out;
        e.template = template;
        e.n_captured = extras.iter().filter(|x| matches!(x, Extra::Captured(_))).count();
        e.extras = extras;
        e.compile_micros = t0.elapsed().as_secs_f64() * 1e6;
        Ok(e)
    }

    /// With dynamic shapes: a plan for the extents of `sig` from the trace of another call of
    /// the same ranks and dtypes, without tracing again (`None` when it must be traced again).
    pub fn respecialize(&self, sig: &Signature) -> Result<Option<Entry>> {
        let t0 = Instant::now();
        let template = lock(&self.templates).get(&sig.dynamic_key()).cloned();
        let Some(base) = template else { return Ok(None) };
        let Some((graph, shape_read)) = &base.template else { return Ok(None) };
        if *shape_read {
            return Ok(None);
        }
        let mut shapes: Vec<Vec<usize>> = sig.args().iter().map(|a| a.shape().to_vec()).collect();
        shapes.extend(base.extras.iter().map(|c| c.shape().to_vec()));
        let graph = match graph.respecialize(&shapes) {
            None => return Ok(None),
            Some(g) => g?,
        };
        let compiled = compile(graph, &self.options())?;
        let mut e = Entry::new(compiled, &self.config.name);
        e.traced_text = base.traced_text.clone();
        e.tuple_out = base.tuple_out;
        e.extras = base.extras.clone();
        e.n_captured = base.n_captured;
        e.compile_micros = t0.elapsed().as_secs_f64() * 1e6;
        Ok(Some(e))
    }

    fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// The plan compiled most recently.
    pub fn last(&self) -> Option<Arc<Entry>> {
        lock(&self.last).clone()
    }

    /// Hits, misses, compiles and entries.
    pub fn cache_info(&self) -> CacheInfo {
        CacheInfo {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            compiles: self.compiles.load(Ordering::Relaxed),
            size: lock(&self.cache).len(),
        }
    }

    /// Drop the plan cached for `sig` and the dynamic-shape trace it may be made from (an
    /// array it captured changed dtype or shape).
    pub fn invalidate(&self, sig: &Signature) {
        lock(&self.cache).remove(&sig.to_owned_key());
        lock(&self.templates).remove(&sig.dynamic_key());
    }

    /// Drop every plan (statistics are kept).
    pub fn clear(&self) {
        lock(&self.cache).clear();
        lock(&self.templates).clear();
    }

    /// Run `entry` on `inputs` (the caller's arguments, in order), writing `outputs` (one per
    /// plan output, see [`Entry::output_ptrs`]; borrowed for a launch now, owned for a queued
    /// one saves a copy), now or queued on a stream. `record` asks for
    /// a kernel record per kernel: returned by a launch that runs now, and handed to
    /// [`take_queued_records`] by a queued one once it ran.
    ///
    /// # Safety
    /// Every input view and output pointer must address memory valid for the plan's shapes
    /// until the launch has run: for [`Order::Now`] until this returns, for [`Order::Stream`]
    /// until the task is done (kept alive by the buffers and `keep` of the order).
    pub unsafe fn launch(
        &self,
        entry: &Arc<Entry>,
        inputs: &[InputView],
        outputs: Cow<'_, [OutputPtr]>,
        order: Order<'_>,
        record: bool,
    ) -> Result<Launched> {
        let int_arg = |i: usize| {
            let v = inputs.get(i).filter(|v| v.shape.is_empty())?;
            match v.dtype {
                // SAFETY: a Python int argument's view addresses its one int64 value (caller's
                // contract).
                DType::I64 => Some(i128::from(unsafe { *(v.ptr as *const i64) })),
                // SAFETY: as above; a Python int above int64's range is held as uint64.
                DType::U64 => Some(i128::from(unsafe { *(v.ptr as *const u64) })),
                _ => None,
            }
        };
        entry.compiled.check_int_bounds(int_arg)?;
        // Python ints computed from the arguments, one 8-byte slot each, after all other inputs.
        let host = entry.compiled.host_values(int_arg)?;
        let to_stream = match &order {
            Order::Now => None,
            Order::Stream { stream, .. } => Some(stream.id()),
        };
        // Intermediates are kept only for launches that run now, while capture is on.
        let keep_outputs = self.config.debug && matches!(order, Order::Now) && pyasc_runtime::capture::active();
        let who = Launcher { name: &self.config.name, front_end: "operator" };
        crate::door::through(
            who,
            self.device,
            |launch| {
                let opts = RunOptions { record, check_finite: self.config.debug, keep_outputs, launch };
                // SAFETY: the caller's contract, passed on.
                unsafe { self.launch_with(entry, inputs, host, outputs, order, opts) }
            },
            |ev| {
                let ev = entry.describe_into(ev);
                match to_stream {
                    Some(s) => ev.with("to_stream", s),
                    None => ev,
                }
            },
        )
    }

    /// [`Operator::launch`] once the argument checks passed and the options are set; `host`
    /// holds the values of the plan's host-computed inputs.
    ///
    /// # Safety
    /// As for [`Operator::launch`].
    unsafe fn launch_with(
        &self,
        entry: &Arc<Entry>,
        inputs: &[InputView],
        host: Vec<u64>,
        outputs: Cow<'_, [OutputPtr]>,
        order: Order<'_>,
        opts: RunOptions,
    ) -> Result<Launched> {
        let record = opts.record;
        let mut all = entry.with_extras(inputs)?;
        if !host.is_empty() {
            let all = all.to_mut();
            for (h, slot) in entry.compiled.host_ints.iter().zip(&host) {
                all.push(InputView::contiguous(slot as *const u64 as *const u8, h.dtype, Vec::new()));
            }
        }
        match order {
            Order::Now => self.device.execute(&entry.compiled.plan, &all, &outputs, opts).map(Launched::Done),
            Order::Stream { stream, reads, writes, mut keep } => {
                if !host.is_empty() {
                    // The slots' heap storage stays where the views point until the task ran.
                    keep = Some(Box::new((keep, host)));
                }
                let on_done: Option<pyasc_runtime::device::OnDone> = record.then(|| {
                    Box::new(|stats: &RunStats| {
                        pyasc_events::forksafe::lock(&PENDING).extend(stats.kernels.iter().cloned());
                        ANY_PENDING.store(true, Ordering::Release);
                    }) as pyasc_runtime::device::OnDone
                });
                let launch = StreamLaunch {
                    plan: entry.clone(),
                    inputs: all.into_owned(),
                    outputs: outputs.into_owned(),
                    reads,
                    writes,
                    keep,
                    opts,
                    on_done,
                };
                self.device.launch(stream, launch).map(Launched::Queued)
            }
        }
    }
}
