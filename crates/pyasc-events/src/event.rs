//! One event stream for everything that takes time: tracing and compiling an operator, its
//! compiler passes, launches and the kernels they run, the blocks a kernel is cut into, tasks
//! run on streams, copies, synchronisations and memory-pool allocations and frees.
//!
//! Launches, kernels and blocks are tied together by ids ([`next_id`]): a kernel event carries
//! the counter `launch` (its launch's `id`) and its own `id`; a block event carries `kernel`.
//! The kernel a thread works for is a thread-local ([`set_kernel`]) that the worker pool hands
//! to the threads sharing a kernel's blocks.
//!
//! Each thread appends to its own buffers without taking a lock (a lock-free FIFO per thread
//! that [`drain`] empties from the collecting thread, and a ring of atomics), so the hot path of
//! a launch stays cheap:
//!
//! * Kernel, pass and task events are kept only while someone collects
//!   ([`Collector::start`]); otherwise recording is one relaxed atomic load ([`enabled`]).
//! * Block intervals ([`record_block`]) always go into a per-thread ring of the latest
//!   [`RING_CAPACITY`], which the utilization monitor reads ([`busy_percent`]); while someone
//!   collects they are also kept as [`EventKind::Block`] events.
//!
//! Times are nanoseconds since a process-wide epoch ([`nanos`]), so events from all threads
//! order on one clock.

use crate::forksafe::Locked;
use crossbeam_deque::{Steal, Stealer, Worker};
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What an event stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// One compiler pass (counters: `nodes_before`, `nodes_after`; notes: its decisions).
    Pass,
    /// One kernel of a launched plan (counters: `elements`, `tiles`, `blocks`).
    Kernel,
    /// One block of a kernel on one core.
    Block,
    /// One task run by a stream's worker (a queued launch, an event mark, a wait).
    Task,
    /// A launch of an operator by the calling thread (counter `id`; label `operator`).
    Launch,
    /// Tracing an operator's Python function into a graph.
    Trace,
    /// Compiling a traced graph (the passes nest inside it).
    Compile,
    /// A copy between host and device memory or between buffers (counter `bytes`).
    Copy,
    /// Waiting for a stream's queued work.
    Sync,
    /// A memory-pool allocation (counters `bytes`, `reused`).
    Alloc,
    /// A memory-pool block given back (counter `bytes`).
    Free,
}

impl EventKind {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Pass => "pass",
            EventKind::Kernel => "kernel",
            EventKind::Block => "block",
            EventKind::Task => "task",
            EventKind::Launch => "launch",
            EventKind::Trace => "trace",
            EventKind::Compile => "compile",
            EventKind::Copy => "copy",
            EventKind::Sync => "sync",
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
        }
    }
}

/// One timed interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// What it stands for.
    pub kind: EventKind,
    /// The pass, kernel or task name.
    pub name: Cow<'static, str>,
    /// Start, in nanoseconds since the epoch ([`nanos`]).
    pub start: u64,
    /// End (never before `start`).
    pub end: u64,
    /// The recording thread (small numbers in order of first use).
    pub thread: u32,
    /// The stream whose worker recorded it, if any.
    pub stream: Option<u64>,
    /// Named counts.
    pub counters: Vec<(&'static str, u64)>,
    /// Free-form remarks (a pass's decisions).
    pub notes: Vec<String>,
    /// Named text values (a launch's operator, a kernel's op types, shapes and dtypes).
    pub labels: Vec<(&'static str, String)>,
    /// The latest collection started when it was recorded ([`generation`]; 0 until recorded):
    /// a collector takes the events of its own collection and later ones.
    pub collection: u64,
}

impl Event {
    /// An event of the calling thread from `start` to `end`.
    pub fn new(kind: EventKind, name: impl Into<Cow<'static, str>>, start: Instant, end: Instant) -> Self {
        let (s, e) = (nanos(start), nanos(end));
        Event {
            kind,
            name: name.into(),
            start: s,
            end: e.max(s),
            thread: thread_id(),
            stream: current_stream(),
            counters: Vec::new(),
            notes: Vec::new(),
            labels: Vec::new(),
            collection: 0,
        }
    }

    /// Add a text label.
    pub fn label(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.labels.push((key, value.into()));
        self
    }

    /// The label named `key`, if any.
    pub fn label_of(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// Add a counter.
    pub fn with(mut self, key: &'static str, value: u64) -> Self {
        self.counters.push((key, value));
        self
    }

    /// Duration in microseconds.
    pub fn micros(&self) -> f64 {
        (self.end - self.start) as f64 / 1e3
    }

    /// The counter named `key` (0 when absent).
    pub fn counter(&self, key: &str) -> u64 {
        self.counters.iter().find(|(k, _)| *k == key).map_or(0, |(_, v)| *v)
    }
}

/// The zero of all timestamps: a day before first use where the clock allows, so that
/// instants taken just before the first call still map to distinct times.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(|| {
        let now = Instant::now();
        [86_400, 3_600, 60, 1].iter().find_map(|&s| now.checked_sub(Duration::from_secs(s))).unwrap_or(now)
    })
}

/// Nanoseconds from the epoch to `t`.
pub fn nanos(t: Instant) -> u64 {
    t.saturating_duration_since(epoch()).as_nanos() as u64
}

thread_local! {
    static THREAD: Cell<u32> = const { Cell::new(0) };
    static STREAM: Cell<Option<u64>> = const { Cell::new(None) };
    static KERNEL: Cell<u64> = const { Cell::new(0) };
}

/// A fresh id for a launch or a kernel (never 0, which stands for none).
pub fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Set the kernel the calling thread's blocks belong to (0: none); returns the previous one.
#[inline]
pub fn set_kernel(id: u64) -> u64 {
    KERNEL.with(|k| k.replace(id))
}

/// While alive, the calling thread's blocks belong to a kernel ([`KernelScope::enter`]); the
/// previous kernel is restored on drop, also when the kernel fails.
#[derive(Debug)]
pub struct KernelScope {
    outer: u64,
}

impl KernelScope {
    /// Attribute the calling thread's blocks to kernel `id` until the scope is dropped.
    pub fn enter(id: u64) -> KernelScope {
        KernelScope { outer: set_kernel(id) }
    }
}

impl Drop for KernelScope {
    fn drop(&mut self) {
        set_kernel(self.outer);
    }
}

/// The kernel the calling thread's blocks belong to (0: none).
#[inline]
pub fn current_kernel() -> u64 {
    KERNEL.with(|k| k.get())
}

/// The calling thread's number (1, 2, ... in order of first use).
pub fn thread_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    THREAD.with(|t| {
        if t.get() == 0 {
            t.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

/// Mark the calling thread as the worker of stream `id` (its events carry the stream).
pub fn set_stream(id: Option<u64>) {
    STREAM.with(|s| s.set(id));
}

/// The stream whose worker the calling thread is, if any.
pub fn current_stream() -> Option<u64> {
    STREAM.with(|s| s.get())
}

/// How many block intervals each thread's ring keeps.
pub const RING_CAPACITY: usize = 8192;

/// A fixed-capacity ring of busy intervals, in nanoseconds since the epoch, written by one
/// thread (its owner) without locks and read by any: a reader racing a write may see one slot
/// half-updated, which moves a utilization estimate by at most one block.
#[derive(Debug)]
pub struct BusyRing {
    starts: Box<[AtomicU64]>,
    ends: Box<[AtomicU64]>,
    /// Intervals pushed so far (the next slot is `pushed % capacity`).
    pushed: AtomicUsize,
}

impl BusyRing {
    /// An empty ring holding at most `capacity` intervals (at least one).
    pub fn new(capacity: usize) -> Self {
        let slots = || (0..capacity.max(1)).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        BusyRing { starts: slots(), ends: slots(), pushed: AtomicUsize::new(0) }
    }

    fn capacity(&self) -> usize {
        self.starts.len()
    }

    /// Add the interval `[start, end)`, replacing the oldest one when full. Only the ring's
    /// owner pushes.
    pub fn push(&self, start: u64, end: u64) {
        let n = self.pushed.load(Ordering::Relaxed);
        let slot = n % self.capacity();
        self.starts[slot].store(start, Ordering::Relaxed);
        self.ends[slot].store(end.max(start), Ordering::Relaxed);
        self.pushed.store(n + 1, Ordering::Release);
    }

    fn intervals(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let n = self.len();
        (0..n).map(|i| (self.starts[i].load(Ordering::Relaxed), self.ends[i].load(Ordering::Relaxed)))
    }

    /// Busy nanoseconds inside `[from, to)`: the sum of every interval's overlap with it (blocks on
    /// different cores add up), scaled up to the whole window when the ring has wrapped within it.
    pub fn busy_in(&self, from: u64, to: u64) -> f64 {
        if to <= from {
            return 0.0;
        }
        let busy: u64 = self.intervals().map(|(s, e)| e.min(to).saturating_sub(s.max(from))).sum();
        let full = self.len() == self.capacity();
        let oldest = self.intervals().map(|iv| iv.0).min().unwrap_or(from);
        if full && oldest > from && oldest < to {
            // Intervals older than `oldest` were overwritten: extrapolate from the span still covered.
            busy as f64 * (to - from) as f64 / (to - oldest) as f64
        } else {
            busy as f64
        }
    }

    /// Number of intervals held.
    pub fn len(&self) -> usize {
        self.pushed.load(Ordering::Acquire).min(self.capacity())
    }

    /// True when no interval was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// End of the latest interval (0 when empty).
    fn latest(&self) -> u64 {
        self.intervals().map(|iv| iv.1).max().unwrap_or(0)
    }
}

/// One thread's buffer as every thread sees it: its busy ring, the far end of its event queue
/// (events are taken from it by [`drain`]) and whether the thread has exited.
struct ThreadBuf {
    busy: BusyRing,
    events: Stealer<Event>,
    /// Set when the thread has exited (the buffer is dropped once drained and stale).
    dead: AtomicBool,
}

impl ThreadBuf {
    fn forgettable(&self, before: u64) -> bool {
        self.dead.load(Ordering::Relaxed) && self.events.is_empty() && self.busy.latest() < before
    }
}

type Shared = Arc<ThreadBuf>;

fn registry() -> Locked<'static, Vec<Shared>> {
    static REGISTRY: OnceLock<Mutex<Vec<Shared>>> = OnceLock::new();
    crate::forksafe::lock(REGISTRY.get_or_init(|| Mutex::new(Vec::new())))
}

/// The calling thread's own ends: its shared buffer and the near end of its event queue (a
/// lock-free FIFO only this thread pushes to); marks the buffer dead when the thread exits.
struct Local {
    shared: Shared,
    events: Worker<Event>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.shared.dead.store(true, Ordering::Relaxed);
    }
}

/// Buffers of exited threads are dropped once drained and idle for this long.
const STALE_NANOS: u64 = 60_000_000_000;

thread_local! {
    static LOCAL: Local = {
        let events = Worker::new_fifo();
        let shared = Arc::new(ThreadBuf {
            busy: BusyRing::new(RING_CAPACITY),
            events: events.stealer(),
            dead: AtomicBool::new(false),
        });
        let now = nanos(Instant::now());
        let mut reg = registry();
        // A new thread is rare: the moment to forget threads long gone.
        reg.retain(|b| !b.forgettable(now.saturating_sub(STALE_NANOS)));
        reg.push(shared.clone());
        Local { shared, events }
    };
}

fn with_local(f: impl FnOnce(&Local)) {
    // During thread teardown the buffer may be gone already: the record is dropped.
    let _ = LOCAL.try_with(f);
}

static COLLECTORS: AtomicUsize = AtomicUsize::new(0);
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Counts collections started so far (1 during the first): lets a recorder describe something
/// once per collection.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// True while someone collects events (one relaxed load: cheap enough for every launch).
#[inline]
pub fn enabled() -> bool {
    COLLECTORS.load(Ordering::Relaxed) > 0
}

/// Keep `event` in the calling thread's queue if someone collects (no lock is taken).
pub fn record(mut event: Event) {
    if enabled() {
        event.collection = generation();
        with_local(|l| l.events.push(event));
    }
}

/// Record that the calling thread ran a block of a kernel from `start` to `end` (always kept
/// for the utilization monitor; kept as an event, with the counter `kernel` naming the kernel
/// of [`set_kernel`], while someone collects).
pub fn record_block(start: Instant, end: Instant) {
    let (s, e) = (nanos(start), nanos(end));
    let collect = enabled();
    with_local(|l| {
        l.shared.busy.push(s, e);
        if collect {
            let mut ev = Event::new(EventKind::Block, "block", start, end).with("kernel", current_kernel());
            ev.collection = generation();
            l.events.push(ev);
        }
    });
}

/// Percent of `cores × window` that blocks on all threads were busy during the last `window`,
/// in 0..=100.
pub fn busy_percent(window: Duration, cores: usize) -> f64 {
    let to = nanos(Instant::now());
    let from = to.saturating_sub(window.as_nanos() as u64);
    let capacity = (to - from) as f64 * cores.max(1) as f64;
    if capacity <= 0.0 {
        return 0.0;
    }
    let mut reg = registry();
    let mut busy = 0.0;
    reg.retain(|b| {
        busy += b.busy.busy_in(from, to);
        !b.forgettable(from)
    });
    (100.0 * busy / capacity).clamp(0.0, 100.0)
}

/// Take every event recorded so far on all threads, ordered by start (then thread; of two
/// events of one thread starting together, the enclosing one first).
pub fn drain() -> Vec<Event> {
    let mut all = Vec::new();
    for b in registry().iter() {
        loop {
            match b.events.steal() {
                Steal::Success(e) => all.push(e),
                Steal::Empty => break,
                Steal::Retry => {}
            }
        }
    }
    all.sort_by_key(|e| (e.start, e.thread, std::cmp::Reverse(e.end)));
    all
}

/// Events drained from the threads' queues that a collector still alive may want.
static ARCHIVE: Mutex<Vec<Event>> = Mutex::new(Vec::new());
/// The collections ([`generation`]) of the collectors alive.
static LIVE: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// While alive, events are recorded; [`Collector::finish`] takes them. Collectors nest: each
/// gets every event recorded while it was alive, also those an inner one took.
#[derive(Debug)]
pub struct Collector {
    active: bool,
    generation: u64,
}

impl Collector {
    /// Start recording (events are kept while any collector is alive).
    pub fn start() -> Collector {
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
        crate::forksafe::lock(&LIVE).push(generation);
        COLLECTORS.fetch_add(1, Ordering::Relaxed);
        Collector { active: true, generation }
    }

    /// Stop this collector and take every event recorded on all threads while it was alive,
    /// ordered as by [`drain`].
    pub fn finish(mut self) -> Vec<Event> {
        let mut archive = crate::forksafe::lock(&ARCHIVE);
        archive.extend(drain());
        self.stop();
        let mut mine: Vec<Event> = archive.iter().filter(|e| e.collection >= self.generation).cloned().collect();
        match crate::forksafe::lock(&LIVE).iter().min() {
            None => archive.clear(),
            Some(&oldest) => archive.retain(|e| e.collection >= oldest),
        }
        mine.sort_by_key(|e| (e.start, e.thread, std::cmp::Reverse(e.end)));
        mine
    }

    fn stop(&mut self) {
        if std::mem::take(&mut self.active) {
            let mut live = crate::forksafe::lock(&LIVE);
            if let Some(i) = live.iter().position(|g| *g == self.generation) {
                live.swap_remove(i);
            }
            COLLECTORS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_kept_only_while_collecting() {
        let t = Instant::now();
        record(Event::new(EventKind::Task, "ignored", t, t));
        let c = Collector::start();
        assert!(enabled());
        let ev = Event::new(EventKind::Pass, "fold", t, Instant::now()).with("nodes_before", 3);
        record(ev);
        let h = std::thread::spawn(|| {
            let t = Instant::now();
            record(Event::new(EventKind::Kernel, "k", t, Instant::now()));
            thread_id()
        });
        let other = h.join().unwrap();
        let got = c.finish();
        let mine: Vec<_> = got.iter().filter(|e| e.name == "fold" || e.name == "k").collect();
        assert_eq!(mine.len(), 2, "{got:?}");
        assert!(got.iter().all(|e| e.name != "ignored"));
        let fold = mine.iter().find(|e| e.name == "fold").unwrap();
        assert_eq!(fold.counter("nodes_before"), 3);
        assert_eq!(fold.thread, thread_id());
        assert!(fold.start <= fold.end);
        assert_eq!(mine.iter().find(|e| e.name == "k").unwrap().thread, other);
    }

    #[test]
    fn enclosing_events_come_first_and_blocks_name_their_kernel() {
        let c = Collector::start();
        let outer = Instant::now();
        let kid = next_id();
        {
            let _scope = KernelScope::enter(kid);
            record_block(outer, Instant::now());
            let inner = std::thread::spawn(move || {
                let _scope = KernelScope::enter(kid);
                let t = Instant::now();
                record_block(t, Instant::now());
            });
            inner.join().unwrap();
        }
        assert_eq!(current_kernel(), 0, "the scope restores the outer kernel");
        record(Event::new(EventKind::Kernel, "nest_k", outer, Instant::now()).with("id", kid));
        let got = c.finish();
        let blocks: Vec<_> = got.iter().filter(|e| e.kind == EventKind::Block && e.counter("kernel") == kid).collect();
        assert_eq!(blocks.len(), 2, "{got:?}");
        assert_ne!(blocks[0].thread, blocks[1].thread);
        let k = got.iter().position(|e| e.name == "nest_k").unwrap();
        let b = got
            .iter()
            .position(|e| e.kind == EventKind::Block && e.thread == thread_id() && e.counter("kernel") == kid);
        assert!(k < b.unwrap(), "the kernel encloses its block and starts with it: listed first");
        assert!(generation() >= 1 && next_id() > kid);
    }

    #[test]
    fn nested_collectors_each_get_what_ran_while_they_lived() {
        let at = |name: &'static str| {
            let t = Instant::now();
            record(Event::new(EventKind::Task, name, t, t));
        };
        let outer = Collector::start();
        at("nest_before");
        let inner = Collector::start();
        at("nest_inside");
        let got_inner: Vec<_> = inner.finish().into_iter().filter(|e| e.name.starts_with("nest_")).collect();
        at("nest_after");
        let got_outer: Vec<_> = outer.finish().into_iter().filter(|e| e.name.starts_with("nest_")).collect();
        let names = |v: &[Event]| v.iter().map(|e| e.name.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&got_inner), ["nest_inside"]);
        assert_eq!(names(&got_outer), ["nest_before", "nest_inside", "nest_after"]);
    }

    #[test]
    fn blocks_feed_the_busy_ring_of_their_thread() {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        record_block(start, Instant::now());
        let u = busy_percent(Duration::from_millis(100), 1);
        assert!(u > 20.0, "{u}");
    }

    #[test]
    fn ring_wraps_and_extrapolates() {
        let r = BusyRing::new(2);
        r.push(0, 10);
        r.push(10, 20);
        r.push(20, 30);
        assert_eq!(r.busy_in(0, 30), 20.0 * 30.0 / 20.0);
        assert_eq!(r.busy_in(25, 30), 5.0);
    }
}
