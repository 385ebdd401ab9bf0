//! Streams and events: in-order asynchronous work queues, CUDA-style.
//!
//! A [`Stream`] owns a worker thread that runs enqueued tasks one after another (a task
//! may itself spread a kernel over all cores). Each task gets a sequence number; waiting for
//! a number waits until the worker has finished that task. The first error of a task is
//! kept and returned by the next synchronising call ([`Stream::synchronize`] or
//! [`Stream::take_error`]); later tasks still run. An [`Event`] marks a point in a stream:
//! `record` enqueues the mark, `synchronize` waits for it, and another stream can wait for it
//! with [`Stream::wait_event`].

use crate::buffer::DeviceBuffer;
use pyasc_events::event::{self, EventKind};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Instant;

/// Work run on a stream.
pub type Task = Box<dyn FnOnce() -> Result<()> + Send>;

/// A queued task: its number, name, closure and the buffers it writes.
struct Queued {
    seq: u64,
    name: Cow<'static, str>,
    task: Task,
    writes: Vec<Arc<DeviceBuffer>>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    submitted: u64,
    completed: u64,
    error: Option<IrError>,
    closing: bool,
    worker: bool,
    /// The task the worker runs now, with the buffers it writes (poisoned if it is lost in
    /// a forked child).
    running: Option<(u64, Vec<Arc<DeviceBuffer>>)>,
}

/// The shared core of a stream, also held by buffers that wait for it.
pub struct StreamCore {
    id: u64,
    state: Mutex<State>,
    cv: Condvar,
    /// Tasks numbered up to this one are cancelled.
    cancel_upto: AtomicU64,
}

/// Every stream core and event alive (for fork handling).
static CORES: Mutex<Vec<Weak<StreamCore>>> = Mutex::new(Vec::new());
static EVENTS: Mutex<Vec<Weak<EventInner>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Mark what failed tasks write as invalid (called without any stream lock held).
fn poison_failed(failed: Option<(IrError, Vec<Queued>)>) {
    if let Some((e, tasks)) = failed {
        for w in tasks.iter().flat_map(|q| &q.writes) {
            w.poison(&e);
        }
    }
}

/// Add `item` to a registry, forgetting items that are gone.
fn register<T>(registry: &Mutex<Vec<Weak<T>>>, item: &Arc<T>) {
    let mut r = lock(registry);
    r.retain(|w| w.strong_count() > 0);
    r.push(Arc::downgrade(item));
}

impl StreamCore {
    /// Block until task `seq` (and every task before it) has finished.
    pub fn wait_for(self: &Arc<Self>, seq: u64) {
        let mut st = lock(&self.state);
        while st.completed < seq {
            if let Some(failed) = self.ensure_worker(&mut st) {
                drop(st);
                poison_failed(Some(failed));
                st = lock(&self.state);
                continue;
            }
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Like [`StreamCore::wait_for`], asking `poll` every
    /// [`POLL_INTERVAL`](crate::interrupt::POLL_INTERVAL) whether to give up; false when it did.
    pub fn wait_for_polling(self: &Arc<Self>, seq: u64, poll: &mut dyn FnMut() -> bool) -> bool {
        let mut st = lock(&self.state);
        while st.completed < seq {
            if let Some(failed) = self.ensure_worker(&mut st) {
                drop(st);
                poison_failed(Some(failed));
                st = lock(&self.state);
                continue;
            }
            st = self.cv.wait_timeout(st, crate::interrupt::POLL_INTERVAL).unwrap_or_else(|p| p.into_inner()).0;
            if st.completed < seq {
                drop(st);
                if poll() {
                    return false;
                }
                st = lock(&self.state);
            }
        }
        true
    }

    /// True when task `seq` has finished.
    pub fn is_done(&self, seq: u64) -> bool {
        lock(&self.state).completed >= seq
    }

    /// True when task `seq` was cancelled ([`Stream::cancel_queued`]).
    pub fn is_cancelled(&self, seq: u64) -> bool {
        self.cancel_upto.load(Ordering::Relaxed) >= seq
    }

    /// The stream's id (0 is the default stream).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Return (and clear) the first error of the stream's tasks, without waiting.
    pub fn take_error(&self) -> Result<()> {
        match lock(&self.state).error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Start the worker thread if queued work has none (a new stream, or a forked child).
    /// If no thread can start, the queued work fails: it is returned, for the caller to
    /// [`poison_failed`] once it no longer holds the stream's lock (see [`crate::fork`]).
    #[must_use]
    fn ensure_worker(self: &Arc<Self>, st: &mut State) -> Option<(IrError, Vec<Queued>)> {
        if st.worker || st.queue.is_empty() {
            return None;
        }
        st.worker = true;
        let core = self.clone();
        if std::thread::Builder::new().name(format!("pyasc-stream-{}", self.id)).spawn(move || core.run()).is_ok() {
            return None;
        }
        st.worker = false;
        let e = IrError::new(ErrorKind::Device, format!("cannot start the worker thread of stream {}", self.id));
        let failed: Vec<Queued> = st.queue.drain(..).collect();
        if let Some(last) = failed.last() {
            st.completed = last.seq;
        }
        st.error.get_or_insert_with(|| e.clone());
        self.cv.notify_all();
        Some((e, failed))
    }

    fn run(self: Arc<Self>) {
        event::set_stream(Some(self.id));
        loop {
            let (seq, name, task) = {
                let mut st = lock(&self.state);
                let q = loop {
                    if let Some(t) = st.queue.pop_front() {
                        break t;
                    }
                    if st.closing {
                        st.worker = false;
                        return;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                };
                st.running = Some((q.seq, q.writes));
                (q.seq, q.name, q.task)
            };
            let began = event::enabled().then(Instant::now);
            let token = Some(Arc::new(crate::interrupt::Token::for_task(self.clone(), seq)));
            let result = crate::interrupt::with_token(token, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(task))
                    .unwrap_or_else(|_| Err(IrError::internal("a stream task panicked")))
            });
            if let Some(t) = began {
                event::record(event::Event::new(EventKind::Task, name, t, Instant::now()).with("seq", seq));
            }
            let mut st = lock(&self.state);
            let done = st.running.take();
            match result {
                // A cancelled task's error was answered by the interrupt itself.
                Err(e) if !self.is_cancelled(seq) => {
                    st.error.get_or_insert(e);
                }
                _ => {}
            }
            st.completed = seq;
            self.cv.notify_all();
            drop(st);
            drop(done);
        }
    }

    /// In a forked child: the worker thread is gone. The task it was running is lost (failed,
    /// its outputs poisoned); queued tasks run on a new worker started on the next use.
    fn reset_in_child(&self, st: &mut State) {
        st.worker = false;
        if let Some((seq, writes)) = st.running.take() {
            let e = IrError::new(
                ErrorKind::Device,
                format!(
                    "task {seq} of stream {} was running when the process forked and did not finish in the child",
                    self.id
                ),
            );
            for w in &writes {
                w.poison(&e);
            }
            st.completed = seq;
            st.error.get_or_insert(e);
        }
    }
}

/// Locks of every stream and event, held across `fork()` so that no thread holds one
/// when the process is copied (see [`crate::fork`]).
pub(crate) struct HeldForFork {
    // Guards first: they are dropped before the objects they borrow from.
    streams: Vec<MutexGuard<'static, State>>,
    _event_guards: Vec<MutexGuard<'static, EvState>>,
    _cores_registry: MutexGuard<'static, Vec<Weak<StreamCore>>>,
    _events_registry: MutexGuard<'static, Vec<Weak<EventInner>>>,
    cores: Vec<Arc<StreamCore>>,
    _events: Vec<Arc<EventInner>>,
}

impl HeldForFork {
    /// Lock the registries, then every live stream and event.
    pub(crate) fn lock_all() -> HeldForFork {
        let cores_reg = lock(&CORES);
        let events_reg = lock(&EVENTS);
        let cores: Vec<Arc<StreamCore>> = cores_reg.iter().filter_map(Weak::upgrade).collect();
        let evs: Vec<Arc<EventInner>> = events_reg.iter().filter_map(Weak::upgrade).collect();
        // SAFETY: each guard borrows from an `Arc` kept in this struct, dropped after the guards.
        let streams = cores
            .iter()
            .map(|c| unsafe {
                std::mem::transmute::<MutexGuard<'_, State>, MutexGuard<'static, State>>(lock(&c.state))
            })
            .collect();
        // SAFETY: as above.
        let events = evs
            .iter()
            .map(|e| unsafe {
                std::mem::transmute::<MutexGuard<'_, EvState>, MutexGuard<'static, EvState>>(lock(&e.state))
            })
            .collect();
        HeldForFork {
            streams,
            _event_guards: events,
            _cores_registry: cores_reg,
            _events_registry: events_reg,
            cores,
            _events: evs,
        }
    }

    /// In the child: reset every stream for the threads that are gone, then release.
    pub(crate) fn release_in_child(mut self) {
        for (core, st) in self.cores.iter().zip(self.streams.iter_mut()) {
            core.reset_in_child(st);
        }
    }
}

/// A handle to a stream; the worker stops once every handle is gone and the queue is empty.
pub struct Stream {
    core: Arc<StreamCore>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Stream {
    /// A new stream with its own worker thread (started on first use).
    pub fn new() -> Arc<Stream> {
        Self::with_id(NEXT_ID.fetch_add(1, Ordering::Relaxed))
    }

    fn with_id(id: u64) -> Arc<Stream> {
        crate::fork::install();
        let core = Arc::new(StreamCore {
            id,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            cancel_upto: AtomicU64::new(0),
        });
        register(&CORES, &core);
        Arc::new(Stream { core })
    }

    /// The default stream, on which everything launched without a stream is ordered.
    pub fn default_stream() -> Arc<Stream> {
        static DEFAULT: OnceLock<Arc<Stream>> = OnceLock::new();
        DEFAULT.get_or_init(|| Self::with_id(0)).clone()
    }

    /// The shared core (for buffers that must wait for this stream).
    pub fn core(&self) -> &Arc<StreamCore> {
        &self.core
    }

    /// The stream's id (0 is the default stream).
    pub fn id(&self) -> u64 {
        self.core.id
    }

    /// Queue `task`; returns its sequence number at once.
    pub fn enqueue(&self, task: Task) -> u64 {
        self.enqueue_named("task", task)
    }

    /// Queue `task` under `name` (the name of its event in the event stream).
    pub fn enqueue_named(&self, name: impl Into<Cow<'static, str>>, task: Task) -> u64 {
        self.enqueue_writing(name, task, Vec::new())
    }

    /// Queue `task` under `name`; it writes `writes` (whose contents are marked invalid if
    /// the task is lost, as in a forked child).
    pub fn enqueue_writing(
        &self,
        name: impl Into<Cow<'static, str>>,
        task: Task,
        writes: Vec<Arc<DeviceBuffer>>,
    ) -> u64 {
        let name = name.into();
        let mut st = lock(&self.core.state);
        st.submitted += 1;
        let seq = st.submitted;
        st.queue.push_back(Queued { seq, name, task, writes });
        let failed = self.core.ensure_worker(&mut st);
        self.core.cv.notify_all();
        drop(st);
        poison_failed(failed);
        seq
    }

    /// Sequence number of the last task queued so far.
    pub fn last_submitted(&self) -> u64 {
        lock(&self.core.state).submitted
    }

    /// Wait for every queued task; returns (and clears) the first error since the last sync.
    pub fn synchronize(&self) -> Result<()> {
        let last = self.last_submitted();
        let t = event::enabled().then(Instant::now);
        self.core.wait_for(last);
        if let Some(t) = t {
            event::record(
                event::Event::new(EventKind::Sync, "synchronize", t, Instant::now()).with("stream", self.id()),
            );
        }
        self.take_error()
    }

    /// Like [`Stream::synchronize`], asking `poll` every
    /// [`POLL_INTERVAL`](crate::interrupt::POLL_INTERVAL) whether to give up; `None` when it did
    /// (the work goes on unless cancelled with [`Stream::cancel_queued`]).
    pub fn synchronize_polling(&self, poll: &mut dyn FnMut() -> bool) -> Option<Result<()>> {
        let last = self.last_submitted();
        let t = event::enabled().then(Instant::now);
        let done = self.core.wait_for_polling(last, poll);
        if let Some(t) = t {
            event::record(
                event::Event::new(EventKind::Sync, "synchronize", t, Instant::now()).with("stream", self.id()),
            );
        }
        done.then(|| self.take_error())
    }

    /// Cancel the work queued so far: a kernel running now stops at its next tile, queued
    /// kernels stop before their first; what they write is marked invalid (reads raise), and
    /// their errors are not reported by the next synchronisation. Later work is not affected.
    pub fn cancel_queued(&self) {
        let last = self.last_submitted();
        self.core.cancel_upto.fetch_max(last, Ordering::Relaxed);
    }

    /// Return (and clear) the first error of the stream's tasks, without waiting.
    pub fn take_error(&self) -> Result<()> {
        self.core.take_error()
    }

    /// True when every queued task has finished.
    pub fn query(&self) -> bool {
        let st = lock(&self.core.state);
        st.completed == st.submitted
    }

    /// Make later work on this stream wait until `event`'s latest recorded point is reached.
    pub fn wait_event(&self, event: &Event) {
        let target = lock(&event.inner.state).recorded;
        if target == 0 {
            return;
        }
        let ev = event.inner.clone();
        self.enqueue_named(
            "wait event",
            Box::new(move || {
                ev.wait_gen(target);
                Ok(())
            }),
        );
    }

    /// Make later work on this stream wait until task `seq` of `other` has finished.
    pub fn wait_stream(&self, other: &Arc<StreamCore>, seq: u64) {
        if Arc::ptr_eq(other, &self.core) || other.is_done(seq) {
            return;
        }
        let other = other.clone();
        self.enqueue_named(
            "wait stream",
            Box::new(move || {
                other.wait_for(seq);
                Ok(())
            }),
        );
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = lock(&self.core.state);
        st.closing = true;
        self.core.cv.notify_all();
    }
}

#[derive(Default)]
struct EvState {
    recorded: u64,
    completed: u64,
    time: Option<Instant>,
}

struct EventInner {
    state: Mutex<EvState>,
    cv: Condvar,
}

impl EventInner {
    fn wait_gen(&self, gen: u64) {
        let mut st = lock(&self.state);
        while st.completed < gen {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn wait_gen_polling(&self, gen: u64, poll: &mut dyn FnMut() -> bool) -> bool {
        let mut st = lock(&self.state);
        while st.completed < gen {
            st = self.cv.wait_timeout(st, crate::interrupt::POLL_INTERVAL).unwrap_or_else(|p| p.into_inner()).0;
            if st.completed < gen {
                drop(st);
                if poll() {
                    return false;
                }
                st = lock(&self.state);
            }
        }
        true
    }
}

/// A point in a stream that can be waited for and timed.
#[derive(Clone)]
pub struct Event {
    inner: Arc<EventInner>,
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

impl Event {
    /// A new, never recorded event (waiting for it returns at once).
    pub fn new() -> Event {
        crate::fork::install();
        let inner = Arc::new(EventInner { state: Mutex::new(EvState::default()), cv: Condvar::new() });
        register(&EVENTS, &inner);
        Event { inner }
    }

    /// Mark the current end of `stream`: the event completes when the work queued so far does.
    pub fn record(&self, stream: &Stream) {
        let gen = {
            let mut st = lock(&self.inner.state);
            st.recorded += 1;
            st.recorded
        };
        let ev = self.inner.clone();
        stream.enqueue_named(
            "record event",
            Box::new(move || {
                let mut st = lock(&ev.state);
                if gen > st.completed {
                    st.completed = gen;
                    st.time = Some(Instant::now());
                }
                ev.cv.notify_all();
                Ok(())
            }),
        );
    }

    /// Wait until the latest recorded point is reached.
    pub fn synchronize(&self) {
        let target = lock(&self.inner.state).recorded;
        self.inner.wait_gen(target);
    }

    /// Like [`Event::synchronize`], asking `poll` every
    /// [`POLL_INTERVAL`](crate::interrupt::POLL_INTERVAL) whether to give up; false when it did.
    pub fn synchronize_polling(&self, poll: &mut dyn FnMut() -> bool) -> bool {
        let target = lock(&self.inner.state).recorded;
        self.inner.wait_gen_polling(target, poll)
    }

    /// True when the latest recorded point has been reached (or it was never recorded).
    pub fn query(&self) -> bool {
        let st = lock(&self.inner.state);
        st.completed >= st.recorded
    }

    /// Milliseconds from this event to `end` (both recorded and complete).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f64> {
        let (a, b) = (self.time(), end.time());
        match (a, b) {
            (Some(a), Some(b)) => Ok(if b >= a {
                b.duration_since(a).as_secs_f64() * 1e3
            } else {
                -(a.duration_since(b).as_secs_f64() * 1e3)
            }),
            _ => Err(IrError::new(
                pyasc_ir::error::ErrorKind::InvalidArgument,
                "elapsed_time needs two events that were recorded and have completed",
            )),
        }
    }

    fn time(&self) -> Option<Instant> {
        let st = lock(&self.inner.state);
        if st.recorded > 0 && st.completed >= st.recorded {
            st.time
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn tasks_run_in_order_and_enqueue_returns_at_once() {
        let s = Stream::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        s.enqueue(Box::new(move || {
            let (m, cv) = &*g;
            let mut open = m.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            Ok(())
        }));
        for i in 0..100 {
            let l = log.clone();
            s.enqueue(Box::new(move || {
                l.lock().unwrap().push(i);
                Ok(())
            }));
        }
        // Nothing ran yet: the first task is still blocked.
        assert!(log.lock().unwrap().is_empty());
        assert!(!s.query());
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        s.synchronize().unwrap();
        assert_eq!(*log.lock().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn first_error_is_reported_once_and_the_stream_keeps_working() {
        let s = Stream::new();
        s.enqueue(Box::new(|| Err(IrError::internal("first"))));
        s.enqueue(Box::new(|| Err(IrError::internal("second"))));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        s.enqueue(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        let err = s.synchronize().unwrap_err();
        assert_eq!(err.message, "first");
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        s.synchronize().unwrap();
    }

    #[test]
    fn events_order_streams_and_time_them() {
        let a = Stream::new();
        let b = Stream::new();
        let value = Arc::new(AtomicUsize::new(0));
        let start = Event::new();
        let end = Event::new();
        start.record(&a);
        let v = value.clone();
        a.enqueue(Box::new(move || {
            std::thread::sleep(Duration::from_millis(30));
            v.store(7, Ordering::SeqCst);
            Ok(())
        }));
        end.record(&a);
        b.wait_event(&end);
        let v = value.clone();
        let seen = Arc::new(AtomicUsize::new(0));
        let s2 = seen.clone();
        b.enqueue(Box::new(move || {
            s2.store(v.load(Ordering::SeqCst), Ordering::SeqCst);
            Ok(())
        }));
        b.synchronize().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 7, "b waited for a's event");
        end.synchronize();
        let ms = start.elapsed_ms(&end).unwrap();
        assert!((25.0..2000.0).contains(&ms), "{ms} ms");
        assert!(Event::new().elapsed_ms(&end).is_err());
        // Waiting for a never-recorded event does not block.
        b.wait_event(&Event::new());
        b.synchronize().unwrap();
    }

    #[test]
    fn cancelled_work_stops_early_unreported_and_later_work_runs() {
        let s = Stream::new();
        let out = DeviceBuffer::alloc(8, 128).unwrap();
        let started = Arc::new(AtomicUsize::new(0));
        let st = started.clone();
        // A long task that checks its token like a kernel does between tiles.
        s.enqueue_writing(
            "long",
            Box::new(move || {
                st.store(1, Ordering::SeqCst);
                let token = crate::interrupt::current().expect("stream tasks have a token");
                let began = Instant::now();
                while began.elapsed() < Duration::from_secs(20) {
                    token.check()?;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(())
            }),
            vec![out.clone()],
        );
        let queued_ran = Arc::new(AtomicUsize::new(0));
        let q = queued_ran.clone();
        s.enqueue(Box::new(move || {
            q.fetch_add(1, Ordering::SeqCst);
            crate::interrupt::current().unwrap().check()
        }));
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let mut polls = 0;
        let interrupted = s.synchronize_polling(&mut || {
            polls += 1;
            true
        });
        assert!(interrupted.is_none() && polls == 1);
        let began = Instant::now();
        s.cancel_queued();
        // Cancelled errors are not reported; the stream stopped well before the 20 s task.
        s.synchronize().unwrap();
        assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
        assert_eq!(queued_ran.load(Ordering::SeqCst), 1, "queued tasks still run, and see the cancellation");
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        s.enqueue(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            crate::interrupt::current().unwrap().check()
        }));
        s.synchronize().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dropping_a_stream_finishes_its_work() {
        let ran = Arc::new(AtomicUsize::new(0));
        {
            let s = Stream::new();
            for _ in 0..10 {
                let r = ran.clone();
                s.enqueue(Box::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }));
            }
            let core = s.core().clone();
            let last = s.last_submitted();
            drop(s);
            core.wait_for(last);
        }
        assert_eq!(ran.load(Ordering::SeqCst), 10);
    }
}
