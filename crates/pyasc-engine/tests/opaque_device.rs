//! The opaque test device: memory the host cannot address, reached only through the
//! `Device` trait (allocation, copies, fills, imports) and used by plans launched now and on
//! streams, checked against float64 references.

use pyasc_compiler::CompileOptions;
use pyasc_engine::{Launched, Operator, OperatorConfig, Order, Signature, Trace, Traced};
use pyasc_ir::dtype::WeakKind;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::DType;
use pyasc_runtime::stream::Stream;
use pyasc_runtime::{device_for, Device, DeviceKind, InputView, OutputPtr, DLPACK_CPU};
use std::sync::Arc;

fn opaque() -> &'static dyn Device {
    device_for(DeviceKind::OpaqueTest)
}

/// `sqrt(x) * s` for an f32 array `x` and a Python float `s`.
fn trace_fn(sig: &Signature) -> Result<Traced, String> {
    let (tr, inputs) = Trace::begin(sig);
    let (x, s) = (inputs[0].id, inputs[1].id);
    let r = Trace::apply(&tr, Op::Unary(UnaryOp::Sqrt), &[x], None).map_err(|e| e.message)?;
    let y = Trace::apply(&tr, Op::Binary(BinaryOp::Mul), &[r.id, s], None).map_err(|e| e.message)?;
    Ok(Trace::finish(&tr, vec![y.id], false))
}

fn sig(n: usize) -> Signature {
    let mut s = Signature::new();
    s.push_array(DType::F32, &[n]);
    s.push_weak(WeakKind::Float);
    s
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
}

fn assert_close(got: &[f32], x: &[f32], s: f64) {
    assert_eq!(got.len(), x.len());
    for (i, (g, xv)) in got.iter().zip(x).enumerate() {
        let want = (*xv as f64).sqrt() * s;
        assert!((*g as f64 - want).abs() <= 1e-6 * want.abs().max(1.0), "element {i}: {g} vs {want}");
    }
}

#[test]
fn host_memory_devices_expose_their_buffers_to_the_host() {
    for kind in [DeviceKind::Cpu, DeviceKind::NpuTwin, DeviceKind::Null] {
        let dev = device_for(kind);
        let b = dev.alloc(32, 128).unwrap();
        assert_eq!(dev.host_ptr(&b), Some(b.ptr()));
        assert_eq!(dev.device_ptr(&b), b.ptr());
        assert_eq!(dev.dlpack_device(), Some((DLPACK_CPU, 0)));
        dev.copy_in(&b, 0, &[9u8; 32]).unwrap();
        dev.fill_zero(&b, 8, 16).unwrap();
        // SAFETY: the buffer holds 32 bytes and no work is queued on it.
        let seen = unsafe { std::slice::from_raw_parts(b.ptr(), 32) }.to_vec();
        assert_eq!(seen, [[9u8; 8], [0; 8], [0; 8], [9; 8]].concat());
        // Imports share the memory.
        let mut src = vec![3u8; 16];
        // SAFETY: `src` outlives the buffer, which nothing else writes.
        let imp = unsafe { dev.import_host(src.as_mut_ptr(), 16, Box::new(()), false) }.unwrap();
        assert_eq!(dev.host_ptr(&imp), Some(src.as_mut_ptr()));
    }
}

#[test]
fn opaque_buffers_are_reached_only_through_the_device() {
    let dev = opaque();
    assert_eq!(dev.info().kind, DeviceKind::OpaqueTest);
    let a = dev.alloc(64, 128).unwrap();
    let b = dev.alloc(64, 128).unwrap();
    assert_eq!(dev.host_ptr(&a), None, "not host addressable");
    assert_eq!(dev.dlpack_device(), None, "no DLPack export");
    assert!(a.ptr() != b.ptr());
    let data: Vec<u8> = (0..64).collect();
    dev.copy_in(&a, 0, &data).unwrap();
    let mut back = vec![0u8; 64];
    dev.copy_out(&a, 0, &mut back).unwrap();
    assert_eq!(back, data);
    dev.fill_zero(&a, 4, 8).unwrap();
    dev.copy_out(&a, 0, &mut back).unwrap();
    assert_eq!(back[..4], data[..4]);
    assert!(back[4..12].iter().all(|v| *v == 0));
    assert_eq!(back[12..], data[12..]);
    // A copy queued on a stream; the host read waits for it.
    let s = Stream::new();
    dev.copy_async(&s, &b, 16, &a, 32, 32).unwrap();
    let mut tail = vec![0u8; 32];
    dev.copy_out(&b, 16, &mut tail).unwrap();
    assert_eq!(tail, data[32..]);
    dev.synchronize(&s).unwrap();
    // Ranges are checked.
    let err = dev.copy_out(&a, 60, &mut [0u8; 8]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(dev.fill_zero(&a, 0, 65).is_err());
    assert!(dev.copy_async(&s, &b, 40, &a, 0, 32).is_err());
}

#[test]
fn opaque_imports_copy_and_let_the_owner_go() {
    let dev = opaque();
    let mut src: Vec<u8> = (100..132).collect();
    let owner = Arc::new(());
    // SAFETY: `src` holds 32 bytes and lives past the call.
    let buf = unsafe { dev.import_host(src.as_mut_ptr(), 32, Box::new(owner.clone()), true) }.unwrap();
    assert_eq!(Arc::strong_count(&owner), 1, "the owner is released once copied");
    src.fill(0);
    let mut back = vec![0u8; 32];
    dev.copy_out(&buf, 0, &mut back).unwrap();
    assert_eq!(back, (100..132).collect::<Vec<u8>>(), "a copy, not a view of the source");
    dev.copy_in(&buf, 0, &[1u8; 32]).unwrap();
    assert!(src.iter().all(|v| *v == 0), "writing the copy leaves the source alone");
}

#[test]
fn plans_run_on_opaque_buffers_now_and_on_streams() {
    let op = Operator::new(OperatorConfig {
        name: "opaque_sqrt".into(),
        device: DeviceKind::OpaqueTest,
        options: CompileOptions { kernel_name: "opaque_sqrt".into(), verify_each_pass: true, ..Default::default() },
        dynamic: false,
        debug: false,
    });
    let dev = op.device();
    assert_eq!(dev.info().kind, DeviceKind::OpaqueTest);
    let n = 5000;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.37).collect();
    let (entry, _) = op.entry_for(&sig(n), trace_fn, |e| e.message).unwrap();
    let xb = dev.alloc(n * 4, 128).unwrap();
    dev.copy_in(&xb, 0, &f32_bytes(&x)).unwrap();
    let scale = Box::new(3.0f64);
    let view_of = |b: &pyasc_runtime::buffer::DeviceBuffer, s: &f64| {
        vec![
            InputView::contiguous(dev.device_ptr(b), DType::F32, vec![n]),
            InputView { ptr: s as *const f64 as *const u8, dtype: DType::F64, shape: vec![], strides: vec![] },
        ]
    };

    // Now, on device buffers.
    let yb = dev.alloc(n * 4, 128).unwrap();
    let outs = entry.output_ptrs(&[dev.device_ptr(&yb)]);
    // SAFETY: both buffers and the scalar outlive the launch, which runs now.
    let done = unsafe { op.launch(&entry, &view_of(&xb, &scale), outs.into(), Order::Now, false) }.unwrap();
    assert!(matches!(done, Launched::Done(_)));
    let mut back = vec![0u8; n * 4];
    dev.copy_out(&yb, 0, &mut back).unwrap();
    assert_close(&f32s(&back), &x, 3.0);

    // Queued on a stream: reads and writes are the device buffers themselves.
    let stream = Stream::new();
    let zb = dev.alloc(n * 4, 128).unwrap();
    let inputs = view_of(&xb, &scale);
    let outs = vec![OutputPtr(dev.device_ptr(&zb))];
    let order = Order::Stream {
        stream: &stream,
        reads: vec![xb.clone()],
        writes: vec![zb.clone()],
        keep: Some(Box::new(scale)),
    };
    // SAFETY: the views point into `xb` (moved into the launch) and the boxed scalar (`keep`).
    let done = unsafe { op.launch(&entry, &inputs, outs.into(), order, false) }.unwrap();
    assert!(matches!(done, Launched::Queued(_)));
    // The host copy waits for the launch that writes `zb`.
    dev.copy_out(&zb, 0, &mut back).unwrap();
    assert_close(&f32s(&back), &x, 3.0);
    dev.synchronize(&stream).unwrap();
    // A device copy on the stream after the launch, then a fill, read back in order.
    let wb = dev.alloc(n * 4, 128).unwrap();
    dev.copy_async(&stream, &wb, 0, &zb, 0, n * 4).unwrap();
    dev.synchronize(&stream).unwrap();
    dev.copy_out(&wb, 0, &mut back).unwrap();
    assert_close(&f32s(&back), &x, 3.0);
}
