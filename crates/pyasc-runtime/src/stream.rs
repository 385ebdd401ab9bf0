//! Streams and events: in-order asynchronous work queues, CUDA-style.
//!
//! A [`Stream`] owns a worker thread that runs enqueued tasks one after another (a task
//! may itself spread a kernel over all cores). Each task gets a sequence number; waiting for
//! a number waits until the worker has finished that task. The first error of a task is
//! kept and returned by the next synchronising call ([`Stream::synchronize`] or
//! [`Stream::take_error`]); later tasks still run. An [`Event`] marks a point in a stream:
//! `record` enqueues the mark, `synchronize` waits for it, and another stream can wait for it
//! with [`Stream::wait_event`].

use pyasc_ir::error::{IrError, Result};
use pyasc_ir::event::{self, EventKind};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

/// Work run on a stream.
pub type Task = Box<dyn FnOnce() -> Result<()> + Send>;

#[derive(Default)]
struct State {
    queue: VecDeque<(u64, Cow<'static, str>, Task)>,
    submitted: u64,
    completed: u64,
    error: Option<IrError>,
    closing: bool,
    worker: bool,
}

/// The shared core of a stream, also held by buffers that wait for it.
pub struct StreamCore {
    id: u64,
    state: Mutex<State>,
    cv: Condvar,
}

impl StreamCore {
    /// Block until task `seq` (and every task before it) has finished.
    pub fn wait_for(&self, seq: u64) {
        let mut st = self.state.lock().expect("stream lock poisoned");
        while st.completed < seq {
            st = self.cv.wait(st).expect("stream lock poisoned");
        }
    }

    /// True when task `seq` has finished.
    pub fn is_done(&self, seq: u64) -> bool {
        self.state.lock().expect("stream lock poisoned").completed >= seq
    }

    /// The stream's id (0 is the default stream).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Return (and clear) the first error of the stream's tasks, without waiting.
    pub fn take_error(&self) -> Result<()> {
        match self.state.lock().expect("stream lock poisoned").error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn run(self: Arc<Self>) {
        event::set_stream(Some(self.id));
        loop {
            let (seq, name, task) = {
                let mut st = self.state.lock().expect("stream lock poisoned");
                loop {
                    if let Some(t) = st.queue.pop_front() {
                        break t;
                    }
                    if st.closing {
                        st.worker = false;
                        return;
                    }
                    st = self.cv.wait(st).expect("stream lock poisoned");
                }
            };
            let began = event::enabled().then(Instant::now);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task))
                .unwrap_or_else(|_| Err(IrError::internal("a stream task panicked")));
            if let Some(t) = began {
                event::record(event::Event::new(EventKind::Task, name, t, Instant::now()).with("seq", seq));
            }
            let mut st = self.state.lock().expect("stream lock poisoned");
            if let Err(e) = result {
                st.error.get_or_insert(e);
            }
            st.completed = seq;
            self.cv.notify_all();
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
        Arc::new(Stream { core: Arc::new(StreamCore { id, state: Mutex::new(State::default()), cv: Condvar::new() }) })
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
        let name = name.into();
        let mut st = self.core.state.lock().expect("stream lock poisoned");
        st.submitted += 1;
        let seq = st.submitted;
        st.queue.push_back((seq, name, task));
        if !st.worker {
            st.worker = true;
            let core = self.core.clone();
            std::thread::Builder::new()
                .name(format!("pyasc-stream-{}", self.core.id))
                .spawn(move || core.run())
                .expect("cannot start a stream worker thread");
        }
        self.core.cv.notify_all();
        seq
    }

    /// Sequence number of the last task queued so far.
    pub fn last_submitted(&self) -> u64 {
        self.core.state.lock().expect("stream lock poisoned").submitted
    }

    /// Wait for every queued task; returns (and clears) the first error since the last sync.
    pub fn synchronize(&self) -> Result<()> {
        let last = self.last_submitted();
        self.core.wait_for(last);
        self.take_error()
    }

    /// Return (and clear) the first error of the stream's tasks, without waiting.
    pub fn take_error(&self) -> Result<()> {
        self.core.take_error()
    }

    /// True when every queued task has finished.
    pub fn query(&self) -> bool {
        let st = self.core.state.lock().expect("stream lock poisoned");
        st.completed == st.submitted
    }

    /// Make later work on this stream wait until `event`'s latest recorded point is reached.
    pub fn wait_event(&self, event: &Event) {
        let target = event.inner.state.lock().expect("event lock poisoned").recorded;
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
        let mut st = self.core.state.lock().expect("stream lock poisoned");
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
        let mut st = self.state.lock().expect("event lock poisoned");
        while st.completed < gen {
            st = self.cv.wait(st).expect("event lock poisoned");
        }
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
        Event { inner: Arc::new(EventInner { state: Mutex::new(EvState::default()), cv: Condvar::new() }) }
    }

    /// Mark the current end of `stream`: the event completes when the work queued so far does.
    pub fn record(&self, stream: &Stream) {
        let gen = {
            let mut st = self.inner.state.lock().expect("event lock poisoned");
            st.recorded += 1;
            st.recorded
        };
        let ev = self.inner.clone();
        stream.enqueue_named(
            "record event",
            Box::new(move || {
                let mut st = ev.state.lock().expect("event lock poisoned");
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
        let target = self.inner.state.lock().expect("event lock poisoned").recorded;
        self.inner.wait_gen(target);
    }

    /// True when the latest recorded point has been reached (or it was never recorded).
    pub fn query(&self) -> bool {
        let st = self.inner.state.lock().expect("event lock poisoned");
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
        let st = self.inner.state.lock().expect("event lock poisoned");
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
