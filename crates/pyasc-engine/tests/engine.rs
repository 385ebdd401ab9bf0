//! The engine without Python: tracing through the engine API, the signature cache,
//! re-specialisation of new extents, and the synchronous and stream-ordered launch paths,
//! checked against float64 references and through the event stream.

use pyasc_compiler::CompileOptions;
use pyasc_engine::event::{Collector, EventKind};
use pyasc_engine::{Launched, Operator, OperatorConfig, Order, Signature, Source, Trace, Traced};
use pyasc_ir::dtype::WeakKind;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::{DType, Scalar};
use pyasc_runtime::stream::Stream;
use pyasc_runtime::{DeviceKind, InputView, OutputPtr};
use std::cell::Cell;
use std::sync::Arc;

/// `exp(x * s) + 1` for an f32 array `x` and a Python float `s`, traced through the engine.
fn trace_fn(sig: &Signature) -> Result<Traced, String> {
    let (tr, inputs) = Trace::begin(sig);
    let (x, s) = (inputs[0].id, inputs[1].id);
    let m = Trace::apply(&tr, Op::Binary(BinaryOp::Mul), &[x, s], None).map_err(|e| e.message)?;
    let e = Trace::apply(&tr, Op::Unary(UnaryOp::Exp), &[m.id], None).map_err(|e| e.message)?;
    let one = Trace::scalar(&tr, Scalar::Float(1.0), None);
    let y = Trace::apply(&tr, Op::Binary(BinaryOp::Add), &[e.id, one], None).map_err(|e| e.message)?;
    assert_eq!((y.dtype, y.shape.as_slice()), (sig.args()[0].vtype().dtype, sig.args()[0].shape()));
    Ok(Trace::finish(&tr, vec![y.id], false))
}

fn reference(x: &[f32], s: f64) -> Vec<f64> {
    x.iter().map(|v| (*v as f64 * s).exp() + 1.0).collect()
}

fn op(name: &str, dynamic: bool) -> Operator {
    Operator::new(OperatorConfig {
        name: name.into(),
        device: DeviceKind::Cpu,
        options: CompileOptions { kernel_name: name.into(), verify_each_pass: true, ..Default::default() },
        dynamic,
        debug: false,
    })
}

fn sig(n: usize) -> Signature {
    let mut s = Signature::new();
    s.push_array(DType::F32, &[n]);
    s.push_weak(WeakKind::Float);
    s
}

fn input(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 / n as f32 - 0.5) * 4.0).collect()
}

/// Views of `x` and the scalar `s` (stored as f64 bits, as weak floats are).
fn views(x: &[f32], s: &f64) -> Vec<InputView> {
    vec![
        InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![x.len()]),
        InputView { ptr: s as *const f64 as *const u8, dtype: DType::F64, shape: vec![], strides: vec![] },
    ]
}

fn run_now(op: &Operator, sig: &Signature, x: &[f32], s: f64, record: bool) -> (Vec<f32>, Launched) {
    let (entry, _) = op.entry_for(sig, trace_fn, |e| e.message).unwrap();
    let mut out = vec![0f32; x.len()];
    let outs = entry.output_ptrs(&[out.as_mut_ptr() as *mut u8]);
    // SAFETY: the input and output memory outlive the launch, which runs now.
    let done = unsafe { op.launch(&entry, &views(x, &s), outs.into(), Order::Now, record) }.unwrap();
    (out, done)
}

fn assert_close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(((*g as f64) - w).abs() <= 1e-6 * w.abs().max(1.0), "element {i}: {g} vs {w}");
    }
}

#[test]
fn traced_graph_runs_and_matches_float64() {
    let op = op("eng_sync", false);
    let x = input(1000);
    let (y, done) = run_now(&op, &sig(1000), &x, 0.75, true);
    assert_close(&y, &reference(&x, 0.75));
    let Launched::Done(stats) = done else { panic!("a launch now runs now") };
    assert_eq!(stats.kernels.len(), 1);
    assert_eq!(stats.kernels[0].counter("elements"), 1000);
    let entry = op.last().unwrap();
    assert!(entry.traced_text.contains("exp"), "{}", entry.traced_text);
    assert_eq!(entry.compiled.reports.len(), pyasc_compiler::pipeline().len());
    assert!(entry.compiled.reports.iter().all(|r| r.kind == EventKind::Pass && r.start <= r.end));
}

#[test]
fn cache_hits_and_misses_follow_the_signature() {
    let op = op("eng_cache", false);
    let traces = Cell::new(0);
    let get = |s: &Signature| {
        op.entry_for(
            s,
            |s| {
                traces.set(traces.get() + 1);
                trace_fn(s)
            },
            |e| e.message,
        )
        .unwrap()
    };
    let (a, src) = get(&sig(16));
    assert_eq!(src, Source::Traced);
    let (b, src) = get(&sig(16));
    assert_eq!(src, Source::Hit);
    assert!(Arc::ptr_eq(&a, &b));
    // A new scalar value is the same signature; a new extent or dtype is not.
    assert_eq!(get(&sig(17)).1, Source::Traced);
    let mut f64sig = Signature::new();
    f64sig.push_array(DType::F64, &[16]);
    f64sig.push_weak(WeakKind::Float);
    assert_eq!(get(&f64sig).1, Source::Traced);
    let mut intsig = sig(16);
    intsig.clear();
    intsig.push_array(DType::F32, &[16]);
    intsig.push_weak(WeakKind::Int);
    assert_eq!(get(&intsig).1, Source::Traced);
    assert_eq!(traces.get(), 4);
    let info = op.cache_info();
    assert_eq!((info.hits, info.misses, info.compiles, info.size), (1, 4, 4, 4));
    op.clear();
    assert_eq!(op.cache_info().size, 0);
    assert_eq!(get(&sig(16)).1, Source::Traced);
}

#[test]
fn dynamic_operator_respecializes_new_extents_without_tracing() {
    let op = op("eng_dyn", true);
    let x = input(64);
    let (y, _) = run_now(&op, &sig(64), &x, 0.5, false);
    assert_close(&y, &reference(&x, 0.5));
    let (entry, src) =
        op.entry_for(&sig(1001), |_| -> Result<Traced, String> { panic!("traced again") }, |e| e.message).unwrap();
    assert_eq!(src, Source::Respecialized);
    assert_eq!(entry.out_buffers[0].1, vec![1001]);
    let x = input(1001);
    let (y, _) = run_now(&op, &sig(1001), &x, -1.25, false);
    assert_close(&y, &reference(&x, -1.25));
    // Extent 1 broadcasts differently: a new trace.
    let (_, src) = op.entry_for(&sig(1), trace_fn, |e| e.message).unwrap();
    assert_eq!(src, Source::Traced);
    assert_eq!(op.cache_info().compiles, 2);
}

#[test]
fn stream_launch_gives_the_numbers_of_a_launch_now() {
    let op = op("eng_stream", false);
    let n = 70_000; // large enough to spread over the worker team
    let x = input(n);
    let s = 0.3f64;
    let (now, _) = run_now(&op, &sig(n), &x, s, false);
    let dev = op.device();
    let bytes = n * 4;
    let src = dev.alloc(bytes, 128).unwrap();
    let dst = dev.alloc(bytes, 128).unwrap();
    // SAFETY: `x` holds `bytes` bytes.
    dev.copy_in(&src, 0, unsafe { std::slice::from_raw_parts(x.as_ptr() as *const u8, bytes) }).unwrap();
    let scalar = Box::new(s);
    let stream = Stream::new();
    let (entry, src_kind) = op.entry_for(&sig(n), trace_fn, |e| e.message).unwrap();
    assert_eq!(src_kind, Source::Hit);
    let inputs = vec![
        InputView::contiguous(src.ptr(), DType::F32, vec![n]),
        InputView { ptr: &*scalar as *const f64 as *const u8, dtype: DType::F64, shape: vec![], strides: vec![] },
    ];
    let order = Order::Stream {
        stream: &stream,
        reads: vec![src.clone()],
        writes: vec![dst.clone()],
        keep: Some(Box::new(scalar)),
    };
    // SAFETY: the buffers and the scalar are moved into the launch, which keeps them alive.
    let queued = unsafe { op.launch(&entry, &inputs, vec![OutputPtr(dst.ptr())].into(), order, true) }.unwrap();
    assert!(matches!(queued, Launched::Queued(seq) if seq >= 1));
    dev.synchronize(&stream).unwrap();
    let mut out = vec![0f32; n];
    // SAFETY: `out` holds `bytes` bytes.
    dev.copy_out(&dst, 0, unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, bytes) }).unwrap();
    assert_eq!(out, now);
    assert_close(&out, &reference(&x, s));
    // The queued launch asked for records: they wait to be logged.
    let records = pyasc_engine::take_queued_records();
    assert!(records.iter().any(|r| r.name.starts_with("eng_stream") && r.counter("elements") == n as u64));
}

#[test]
fn events_are_recorded_on_both_launch_paths() {
    let collector = Collector::start();
    let op = op("eng_events", false);
    let x = input(40_000);
    run_now(&op, &sig(40_000), &x, 1.0, false);
    let dev = op.device();
    let out = dev.alloc(40_000 * 4, 128).unwrap();
    let stream = Stream::new();
    let entry = op.last().unwrap();
    let scalar = Box::new(2.0f64);
    let inputs = views(&x, &scalar);
    let order =
        Order::Stream { stream: &stream, reads: vec![], writes: vec![out.clone()], keep: Some(Box::new(scalar)) };
    // SAFETY: `x` outlives the launch (the test synchronises below); the rest is moved in.
    unsafe { op.launch(&entry, &inputs, vec![OutputPtr(out.ptr())].into(), order, false) }.unwrap();
    stream.synchronize().unwrap();
    let events = collector.finish();
    let mine = |kind: EventKind| -> Vec<_> {
        events.iter().filter(|e| e.kind == kind && e.name.starts_with("eng_events")).collect()
    };
    let kernels = mine(EventKind::Kernel);
    assert_eq!(kernels.len(), 2, "{events:?}");
    assert!(kernels.iter().all(|e| e.start <= e.end && e.counter("elements") == 40_000));
    assert_eq!(kernels.iter().filter(|e| e.stream == Some(stream.id())).count(), 1, "one kernel ran on the stream");
    assert_eq!(kernels.iter().filter(|e| e.stream.is_none()).count(), 1, "one ran on this thread");
    let tasks = mine(EventKind::Task);
    assert_eq!(tasks.len(), 1);
    assert!(tasks[0].start <= kernels.iter().find(|k| k.stream.is_some()).unwrap().start);
    assert!(events.iter().any(|e| e.kind == EventKind::Pass && e.name == "fuse"));
    assert!(events.iter().any(|e| e.kind == EventKind::Block && e.start <= e.end));
}

#[test]
fn device_copies_are_ordered_on_streams_and_checked() {
    for kind in [DeviceKind::Cpu, DeviceKind::Null] {
        let dev = pyasc_runtime::device_for(kind);
        let a = dev.alloc(64, 128).unwrap();
        let b = dev.alloc(64, 128).unwrap();
        let data: Vec<u8> = (0..64).collect();
        dev.copy_in(&a, 0, &data).unwrap();
        let s = Stream::new();
        dev.copy_async(&s, &b, 16, &a, 0, 48).unwrap();
        // A host read of `b` waits for the queued copy.
        let mut back = vec![0u8; 48];
        dev.copy_out(&b, 16, &mut back).unwrap();
        assert_eq!(back, data[..48]);
        dev.synchronize(&s).unwrap();
        assert!(dev.copy_in(&a, 60, &data[..8]).is_err(), "past the end");
        assert!(dev.copy_async(&s, &b, 0, &a, 32, 64).is_err());
        // Memory imported read-only is never written, neither from the host nor on a stream.
        let mut frozen = vec![7u8; 64];
        let ro = pyasc_runtime::buffer::DeviceBuffer::external(frozen.as_mut_ptr(), 64, Box::new(()), true);
        assert!(dev.copy_in(&ro, 0, &data[..8]).is_err());
        assert!(dev.copy_async(&s, &ro, 0, &a, 0, 8).is_err());
        dev.copy_async(&s, &b, 0, &ro, 0, 8).unwrap();
        dev.synchronize(&s).unwrap();
        drop(ro);
        assert!(frozen.iter().all(|&v| v == 7));
    }
}

#[test]
fn null_device_compiles_and_launches_without_running() {
    let op = Operator::new(OperatorConfig {
        name: "eng_null".into(),
        device: DeviceKind::Null,
        options: CompileOptions { kernel_name: "eng_null".into(), ..Default::default() },
        dynamic: false,
        debug: false,
    });
    let x = input(32);
    let (y, done) = run_now(&op, &sig(32), &x, 1.0, true);
    assert!(y.iter().all(|v| *v == 0.0), "nothing ran");
    assert!(matches!(done, Launched::Done(stats) if stats.kernels.is_empty()));
    let entry = op.last().unwrap();
    let out = op.device().alloc(32 * 4, 128).unwrap();
    let stream = Stream::new();
    let scalar = Box::new(1.0f64);
    let inputs = views(&x, &scalar);
    let order =
        Order::Stream { stream: &stream, reads: vec![], writes: vec![out.clone()], keep: Some(Box::new(scalar)) };
    // SAFETY: `x` outlives the launch (synchronised below); the rest is moved in.
    unsafe { op.launch(&entry, &inputs, vec![OutputPtr(out.ptr())].into(), order, false) }.unwrap();
    op.device().synchronize(&stream).unwrap();
}

#[test]
fn the_plan_cache_is_bounded_and_keeps_the_recently_used() {
    let op = op("bounded", false);
    op.set_capacity(4);
    for n in 1..=10 {
        op.entry_for(&sig(n), trace_fn, |e| e.message).unwrap();
        // Keep the first shape in use: it must survive every eviction.
        assert!(op.lookup(&sig(1)).is_some(), "the most recently used plan was evicted at {n}");
        assert!(op.cache_info().size <= 4);
    }
    assert_eq!(op.cache_info().size, 4);
    assert!(op.lookup(&sig(10)).is_some() && op.lookup(&sig(9)).is_some());
    assert!(op.lookup(&sig(2)).is_none() && op.lookup(&sig(5)).is_none());
    let compiles = op.cache_info().compiles;
    op.entry_for(&sig(2), trace_fn, |e| e.message).unwrap();
    assert_eq!(op.cache_info().compiles, compiles + 1, "an evicted shape compiles again");
}
