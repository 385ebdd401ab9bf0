//! Scans through the compiler: a scan along the last axis of short enough rows is an
//! instruction of one row kernel with its elementwise producers and consumers (and reductions
//! of the same rows); other scans are library kernels with their consumers as epilogues; scans
//! of different kinds or axes are never merged, and bad axes are shape errors.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::library::ScanKind;
use pyasc_ir::op::{Axes, BinaryOp, Op, ReduceOp, UnaryOp};
use pyasc_ir::print::{graph_to_string, kernel_to_string, plan_to_string};
use pyasc_ir::tile::Instr;
use pyasc_ir::{Attr, DType, Graph, LibId, Scalar, Shape};

fn opts(level: u8) -> CompileOptions {
    CompileOptions { op_break_level: level, verify_each_pass: true, ..CompileOptions::default() }
}

/// `cumsum(x * 2, axis) / n` over an `f32` input of `shape`.
fn producer_scan_consumer(shape: Vec<usize>, axis: usize) -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(shape));
    let two = g.constant(Scalar::Float(2.0), VType::strong(DType::F32), None);
    let p = g.binary(BinaryOp::Mul, x, two, None).unwrap();
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, axis), &[p], None).unwrap();
    let n = g.constant(Scalar::Float(1000.0), VType::strong(DType::F32), None);
    let y = g.binary(BinaryOp::Div, s, n, None).unwrap();
    g.outputs.push(y);
    g
}

#[test]
fn row_scans_fuse_with_producers_and_consumers() {
    let g = producer_scan_consumer(vec![64, 1000], 1);
    assert!(graph_to_string(&g).contains("cumsum[1]"));
    let c = compile(g.clone(), &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 1, "one pass: {}", plan_to_string(&c.plan));
    let k = &c.plan.kernels[0];
    assert!(k.library.is_none());
    assert_eq!(k.row_len, 1000);
    assert_eq!(k.fused_ops, 3);
    assert_eq!(k.outs.len(), 1, "the scan's result stays in a tile");
    assert_eq!(c.plan.buffers.len(), 2, "an input and the result: no intermediate buffer");
    // The producer and the consumer run inside the scan (the scan_map pass).
    assert!(matches!(k.body[..], [Instr::ScanMap { kind: ScanKind::Sum, pre: 1, len: 2, .. }]), "{:?}", k.body);
    assert!(kernel_to_string(k).contains("div(scan_cumsum(mul("), "{}", kernel_to_string(k));
    // Level 2 fuses the same way; level 1 keeps the consumer apart, level 0 everything.
    assert_eq!(compile(g.clone(), &opts(2)).unwrap().plan.kernels.len(), 1);
    assert_eq!(compile(g.clone(), &opts(1)).unwrap().plan.kernels.len(), 2);
    assert_eq!(compile(g, &opts(0)).unwrap().plan.kernels.len(), 3);
}

#[test]
fn other_axes_and_long_rows_keep_the_library_kernel_with_its_epilogue() {
    for (shape, axis) in [(vec![64, 1000], 0), (vec![2, 20000], 1), (vec![64, 1], 1)] {
        let c = compile(producer_scan_consumer(shape.clone(), axis), &opts(3)).unwrap();
        assert_eq!(c.plan.kernels.len(), 2, "{shape:?} axis {axis}");
        let k = &c.plan.kernels[1];
        let call = k.library.as_ref().expect("the scan kernel");
        assert_eq!((call.id, &call.attr), (LibId::SCAN, &Attr::Scan(ScanKind::Sum, axis)));
        assert_eq!(k.fused_ops, 2, "the division runs as the scan's epilogue");
    }
}

#[test]
fn a_row_scan_with_nothing_to_fuse_calls_the_routine() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![64, 1000]));
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 1), &[x], None).unwrap();
    g.outputs.push(s);
    let c = compile(g, &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 1);
    let k = &c.plan.kernels[0];
    assert!(k.library.is_some() && k.body.is_empty(), "{}", plan_to_string(&c.plan));
}

#[test]
fn row_scans_share_a_kernel_with_reductions_of_their_rows() {
    // cumsum(x - max(x)) / sum(exp(x)) and the maximum of the running sums: one row kernel.
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F64), Shape(vec![8, 300]));
    let m = g.apply(Op::Reduce { op: ReduceOp::Max, axes: Axes(2), keepdims: true }, &[x], None).unwrap();
    let d = g.binary(BinaryOp::Sub, x, m, None).unwrap();
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::LogSumExp, 1), &[d], None).unwrap();
    let e = g.unary(UnaryOp::Exp, s, None).unwrap();
    let t = g.apply(Op::Reduce { op: ReduceOp::Sum, axes: Axes(2), keepdims: false }, &[e], None).unwrap();
    g.outputs.extend([e, t]);
    let c = compile(g, &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 1, "{}", plan_to_string(&c.plan));
    let k = &c.plan.kernels[0];
    assert_eq!(k.outs.len(), 2);
    assert!(k.body.iter().any(|i| matches!(i, Instr::Scan { kind: ScanKind::LogSumExp, .. })));
}

#[test]
fn scans_of_other_kinds_or_axes_stay_apart_and_bad_axes_are_shape_errors() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::I64), Shape(vec![3, 4]));
    let a = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 0), &[x], None).unwrap();
    let b = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 0), &[x], None).unwrap();
    let c = g.library(LibId::SCAN, Attr::Scan(ScanKind::Prod, 0), &[x], None).unwrap();
    let d = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 1), &[x], None).unwrap();
    g.outputs.extend([a, b, c, d]);
    let compiled = compile(g.clone(), &opts(3)).unwrap();
    assert_eq!(compiled.plan.kernels.len(), 3, "equal scans are one kernel, others their own");
    let err = g.library(LibId::SCAN, Attr::Scan(ScanKind::Max, 2), &[x], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Shape);
    let err = g.library(LibId::SCAN, Attr::Scan(ScanKind::LogSumExp, 0), &[x], None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::DType);
}
