//! Scans through the compiler: the elementwise producer is a kernel of its own, the scan and
//! its elementwise consumers one kernel (at `op_break_level` 3), scans of different kinds or
//! axes are never merged, and bad axes are shape errors.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::library::ScanKind;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::print::graph_to_string;
use pyasc_ir::{Attr, DType, Graph, LibId, Scalar, Shape};

fn opts(level: u8) -> CompileOptions {
    CompileOptions { op_break_level: level, verify_each_pass: true, ..CompileOptions::default() }
}

#[test]
fn consumers_run_in_the_scan_kernel() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![64, 1000]));
    let two = g.constant(Scalar::Float(2.0), VType::strong(DType::F32), None);
    let p = g.binary(BinaryOp::Mul, x, two, None).unwrap();
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 1), &[p], None).unwrap();
    let n = g.constant(Scalar::Float(1000.0), VType::strong(DType::F32), None);
    let y = g.binary(BinaryOp::Div, s, n, None).unwrap();
    g.outputs.push(y);
    assert!(graph_to_string(&g).contains("cumsum[1]"));
    let c = compile(g.clone(), &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 2);
    let k = &c.plan.kernels[1];
    let call = k.library.as_ref().expect("the scan kernel");
    assert_eq!((call.id, &call.attr), (LibId::SCAN, &Attr::Scan(ScanKind::Sum, 1)));
    assert_eq!(k.fused_ops, 2, "the division runs as the scan's epilogue");
    // Below level 3 the consumer is a kernel of its own.
    assert_eq!(compile(g, &opts(2)).unwrap().plan.kernels.len(), 3);
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
