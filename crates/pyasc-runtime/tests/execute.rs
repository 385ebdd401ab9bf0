//! Plans compiled from graphs and executed on the CPU device, checked element by element.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::{DType, Graph, NodeId, Scalar, Shape};
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions};

fn run(g: Graph, inputs: &[InputView], level: u8) -> Vec<Vec<u8>> {
    let c =
        compile(g, &CompileOptions { op_break_level: level, verify_each_pass: true, ..Default::default() }).unwrap();
    let mut outs: Vec<Vec<u8>> = c
        .plan
        .outputs
        .iter()
        .map(|b| {
            let d = &c.plan.buffers[b.0 as usize];
            vec![0u8; d.shape.numel() * d.dtype.size() + 8]
        })
        .collect();
    let ptrs: Vec<OutputPtr> = outs.iter_mut().map(|o| OutputPtr(o.as_mut_ptr())).collect();
    device_for(DeviceKind::Cpu)
        .execute(&c.plan, inputs, &ptrs, RunOptions { record: true, check_finite: false, launch: 0 })
        .unwrap();
    outs
}

fn as_f32(b: &[u8], n: usize) -> Vec<f32> {
    (0..n).map(|i| f32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().unwrap())).collect()
}
fn as_i64(b: &[u8], n: usize) -> Vec<i64> {
    (0..n).map(|i| i64::from_ne_bytes(b[8 * i..8 * i + 8].try_into().unwrap())).collect()
}

#[test]
fn gelu_on_many_tiles_and_threads_matches_float64() {
    let n = 300_001;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32 - 0.5) * 12.0).collect();
    for level in [0, 3] {
        let mut g = Graph::new();
        let xi = g.add_input(VType::strong(DType::F32), Shape(vec![n]));
        let half = g.py_scalar(Scalar::Float(0.5), None);
        let one = g.py_scalar(Scalar::Float(1.0), None);
        let s2 = g.py_scalar(Scalar::Float(std::f64::consts::SQRT_2), None);
        let a = g.binary(BinaryOp::Mul, xi, half, None).unwrap();
        let d = g.binary(BinaryOp::Div, xi, s2, None).unwrap();
        let e = g.unary(UnaryOp::Erf, d, None).unwrap();
        let p = g.binary(BinaryOp::Add, one, e, None).unwrap();
        let y = g.binary(BinaryOp::Mul, a, p, None).unwrap();
        g.outputs.push(y);
        let out = run(g, &[InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![n])], level);
        let y = as_f32(&out[0], n);
        for (xv, yv) in x.iter().zip(&y) {
            let xd = *xv as f64;
            let want = xd * 0.5 * (1.0 + libm::erf(xd / std::f64::consts::SQRT_2));
            // 1 + erf(.) cancels in float32 for x << 0, so the bound scales with |x|.
            assert!((*yv as f64 - want).abs() <= 1e-6 * want.abs().max(xd.abs()), "gelu({xv}) = {yv}, want {want}");
        }
    }
}

#[test]
fn strided_and_broadcast_inputs_are_read_in_place() {
    // out[i, j] = xt[i, j] * row[j] + 1 where xt is a transposed view of a (5, 4) array.
    let base: Vec<i64> = (0..20).collect();
    let xt = InputView { ptr: base.as_ptr() as *const u8, dtype: DType::I64, shape: vec![4, 5], strides: vec![1, 4] };
    let row: Vec<i64> = vec![1, -2, 3, -4, 5];
    let mut g = Graph::new();
    let a = g.add_input(VType::strong(DType::I64), Shape(vec![4, 5]));
    let r = g.add_input(VType::strong(DType::I64), Shape(vec![5]));
    let one = g.py_scalar(Scalar::Int(1), None);
    let m = g.binary(BinaryOp::Mul, a, r, None).unwrap();
    let s = g.binary(BinaryOp::Add, m, one, None).unwrap();
    g.outputs.push(s);
    let out = run(g, &[xt, InputView::contiguous(row.as_ptr() as *const u8, DType::I64, vec![5])], 3);
    let got = as_i64(&out[0], 20);
    let want: Vec<i64> = (0..20).map(|p| base[(p % 5) * 4 + p / 5] * row[p % 5] + 1).collect();
    assert_eq!(got, want);
}

#[test]
fn zero_d_empty_and_identity_outputs() {
    let mut g = Graph::new();
    let s = g.add_input(VType::strong(DType::F32), Shape(vec![]));
    let e = g.add_input(VType::strong(DType::F32), Shape(vec![0, 3]));
    let es = g.unary(UnaryOp::Exp, s, None).unwrap();
    let ee = g.unary(UnaryOp::Exp, e, None).unwrap();
    let c = g.apply(Op::Cast(DType::I32), &[s], None).unwrap();
    g.outputs.extend([es, ee, s, c]);
    let two = [2.5f32];
    let out = run(
        g,
        &[
            InputView::contiguous(two.as_ptr() as *const u8, DType::F32, vec![]),
            InputView::contiguous(std::ptr::NonNull::<f32>::dangling().as_ptr() as *const u8, DType::F32, vec![0, 3]),
        ],
        3,
    );
    assert!((as_f32(&out[0], 1)[0] - 2.5f32.exp()).abs() < 1e-6);
    assert_eq!(as_f32(&out[2], 1)[0], 2.5);
    assert_eq!(i32::from_ne_bytes(out[3][0..4].try_into().unwrap()), 2);
}

#[test]
fn where_and_comparisons_mix_dtypes() {
    let n = 70_000;
    let a: Vec<i32> = (0..n as i32).map(|i| i - 35_000).collect();
    let b: Vec<f64> = (0..n).map(|i| (i as f64).sin() * 40_000.0).collect();
    let mut g = Graph::new();
    let ai = g.add_input(VType::strong(DType::I32), Shape(vec![n]));
    let bi = g.add_input(VType::strong(DType::F64), Shape(vec![n]));
    let lt = g.binary(BinaryOp::Lt, ai, bi, None).unwrap();
    let w = g.apply(Op::Where, &[lt, ai, bi], None).unwrap();
    g.outputs.push(w);
    let out = run(
        g,
        &[
            InputView::contiguous(a.as_ptr() as *const u8, DType::I32, vec![n]),
            InputView::contiguous(b.as_ptr() as *const u8, DType::F64, vec![n]),
        ],
        3,
    );
    for i in 0..n {
        let got = f64::from_ne_bytes(out[0][8 * i..8 * i + 8].try_into().unwrap());
        let want = if (a[i] as f64) < b[i] { a[i] as f64 } else { b[i] };
        assert_eq!(got, want);
    }
}

#[test]
fn null_device_runs_the_compiler_only() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![8]));
    let y = g.unary(UnaryOp::Tanh, x, None).unwrap();
    g.outputs.push(y);
    let c = compile(g, &CompileOptions::default()).unwrap();
    let stats = device_for(DeviceKind::Null).execute(&c.plan, &[], &[], RunOptions::default()).unwrap();
    assert!(stats.kernels.is_empty());
    let _ = NodeId(0);
}
