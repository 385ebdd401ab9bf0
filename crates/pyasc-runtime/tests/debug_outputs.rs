//! Debug runs: kept kernel outputs and NaN checks of reductions, whose outputs are smaller
//! than their kernels' iteration spaces.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::op::{Axes, Op, ReduceOp, UnaryOp};
use pyasc_ir::{DType, Graph, Shape, SourceLoc};
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions, RunStats};
use std::sync::Arc;

fn loc(line: u32) -> Option<SourceLoc> {
    Some(SourceLoc { file: Arc::from("user.py"), line })
}

/// `exp(x).sum(axis=1)` over `rows x cols`, one op per kernel; the output and the run's stats.
fn run_exp_sum(x: &[f32], rows: usize, cols: usize, keep: bool) -> (Vec<f32>, RunStats) {
    let mut g = Graph::new();
    let xi = g.add_input(VType::strong(DType::F32), Shape(vec![rows, cols]));
    let e = g.unary(UnaryOp::Exp, xi, loc(2)).unwrap();
    let s = g.apply(Op::Reduce { op: ReduceOp::Sum, axes: Axes(0b10), keepdims: false }, &[e], loc(3)).unwrap();
    g.outputs.push(s);
    let c = compile(g, &CompileOptions { op_break_level: 0, verify_each_pass: true, ..Default::default() }).unwrap();
    // NaN past the output's `rows` elements: a check that read the kernel's whole iteration
    // space instead of the output buffer would report it.
    let mut out = vec![f32::NAN; rows * cols];
    let ptrs = [OutputPtr(out.as_mut_ptr() as *mut u8)];
    let view = InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![rows, cols]);
    let opts = RunOptions { check_finite: true, keep_outputs: keep, ..RunOptions::default() };
    let stats = device_for(DeviceKind::Cpu).execute(&c.plan, &[view], &ptrs, opts).unwrap();
    out.truncate(rows);
    (out, stats)
}

#[test]
fn kept_outputs_are_every_kernels_result_in_order() {
    let (rows, cols) = (37, 300);
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i % 17) as f32 - 8.0) / 4.0).collect();
    let (out, stats) = run_exp_sum(&x, rows, cols, true);
    assert!(stats.error.is_none());
    assert_eq!(stats.outputs.len(), 2);
    let (e, s) = (&stats.outputs[0], &stats.outputs[1]);
    assert_eq!((e.op.as_str(), e.shape.as_slice(), e.dtype), ("exp", &[rows, cols][..], DType::F32));
    assert_eq!((s.op.as_str(), s.shape.as_slice()), ("reduce_sum", &[rows][..]));
    assert_eq!(e.locs[0].line, 2);
    assert_eq!(s.locs[0].line, 3);
    let f = |b: &[u8]| -> Vec<f32> { b.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect() };
    let exp = f(&e.bytes);
    for (got, xv) in exp.iter().zip(&x) {
        let want = (*xv as f64).exp();
        assert!((*got as f64 - want).abs() <= 2e-7 * want, "exp({xv}) = {got}");
    }
    assert_eq!(f(&s.bytes), out);
    for (r, got) in out.iter().enumerate() {
        let want: f64 = x[r * cols..(r + 1) * cols].iter().map(|v| (*v as f64).exp()).sum();
        assert!((*got as f64 - want).abs() <= 1e-5 * want, "row {r}: {got} vs {want}");
    }
    // Without keep_outputs nothing is copied.
    let (again, stats) = run_exp_sum(&x, rows, cols, false);
    assert!(stats.outputs.is_empty() && stats.error.is_none());
    assert_eq!(again, out);
}

#[test]
fn a_failed_check_ends_a_kept_run_with_its_error_and_outputs_so_far() {
    let (rows, cols) = (4, 8);
    let mut x = vec![0.5f32; rows * cols];
    x[13] = 200.0; // exp overflows to infinity in float32
    let (_, stats) = run_exp_sum(&x, rows, cols, true);
    let err = stats.error.expect("the check fails");
    assert!(err.to_string().contains("infinity at flat index 13"), "{err}");
    assert_eq!(err.loc.map(|l| l.line), Some(2));
    assert_eq!(stats.outputs.len(), 1, "the run stops after the failing kernel");
}
