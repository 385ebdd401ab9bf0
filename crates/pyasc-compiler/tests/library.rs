//! Library kernels through the compiler: one trait per op, fusion rules, the attribute
//! arena, and unknown ops rejected.

use pyasc_compiler::fuse::FusePass;
use pyasc_compiler::{compile, CompileOptions, CompileState, Pass};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::print::graph_to_string;
use pyasc_ir::verify::verify;
use pyasc_ir::view::{PadMode, PadSpec};
use pyasc_ir::{Attr, DType, Graph, LibId, Node, Scalar, Shape};

fn opts(level: u8) -> CompileOptions {
    CompileOptions { op_break_level: level, verify_each_pass: true, ..CompileOptions::default() }
}

#[test]
fn matmul_epilogue_runs_in_the_matmul_kernel() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![8, 16]));
    let w = g.add_input(VType::strong(DType::F32), Shape(vec![16, 4]));
    let b = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
    let p = g.library(LibId::MATMUL, Attr::None, &[x, w], None).unwrap();
    let s = g.binary(BinaryOp::Add, p, b, None).unwrap();
    let y = g.unary(UnaryOp::Gelu, s, None).unwrap();
    g.outputs.push(y);
    let c = compile(g.clone(), &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 1);
    let k = &c.plan.kernels[0];
    let call = k.library.as_ref().expect("a library kernel");
    assert_eq!((call.id, call.operands), (LibId::MATMUL, 2));
    assert_eq!(k.body.len(), 2, "bias and activation run as the epilogue");
    assert_eq!(k.fused_ops, 3);
    // Level 2 keeps the product a kernel of its own.
    let c = compile(g, &opts(2)).unwrap();
    assert_eq!(c.plan.kernels.len(), 2);
    assert!(c.plan.kernels[0].library.is_some() && c.plan.kernels[0].body.is_empty());
    assert!(c.plan.kernels[1].library.is_none());
}

#[test]
fn data_movement_ops_take_no_epilogue_and_keep_their_attributes() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![3, 4]));
    let i = g.add_input(VType::strong(DType::I32), Shape(vec![2]));
    let spec = PadSpec { widths: vec![(1, 1), (0, 2)], mode: PadMode::Constant, cval: Scalar::Float(0.0) };
    let p = g.pad(spec.clone(), x, None).unwrap();
    let c = g.library(LibId::CONCAT, Attr::Axis(0), &[x, x], None).unwrap();
    let t = g.library(LibId::TAKE, Attr::Axis(1), &[x, i], None).unwrap();
    let e = g.unary(UnaryOp::Exp, c, None).unwrap();
    g.outputs.extend([p, e, t]);
    assert_eq!(g.node(p).shape, Shape(vec![5, 6]));
    assert_eq!(g.node(c).shape, Shape(vec![6, 4]));
    assert_eq!(g.node(t).shape, Shape(vec![3, 2]));
    let text = graph_to_string(&g);
    assert!(text.contains("concatenate[0]") && text.contains("take[1]") && text.contains("pad"), "{text}");
    let c = compile(g, &opts(3)).unwrap();
    let calls: Vec<_> = c.plan.kernels.iter().filter_map(|k| k.library.as_ref()).collect();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().any(|l| l.attr == Attr::Pad(spec.clone())));
    assert!(calls.iter().any(|l| l.id == LibId::TAKE && l.attr == Attr::Axis(1)));
    // The exp of the concatenation is a kernel of its own, and so is the cast of take's
    // indices to int64 (the routine reads them from memory).
    assert_eq!(c.plan.kernels.len(), 5);
    assert!(c.plan.kernels.iter().all(|k| k.library.is_none() || k.body.is_empty()));
    let take = c.plan.kernels.iter().find(|k| k.library.as_ref().is_some_and(|l| l.id == LibId::TAKE)).unwrap();
    assert_eq!(c.plan.buffers[take.args[1].0 as usize].dtype, DType::I64);
}

#[test]
fn equal_library_ops_are_merged_by_attribute() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![3, 4]));
    let a = g.library(LibId::CONCAT, Attr::Axis(1), &[x, x], None).unwrap();
    let b = g.library(LibId::CONCAT, Attr::Axis(1), &[x, x], None).unwrap();
    let c = g.library(LibId::CONCAT, Attr::Axis(0), &[x, x], None).unwrap();
    g.outputs.extend([a, b, c]);
    let c = compile(g, &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 2);
    assert_eq!(c.plan.outputs[0], c.plan.outputs[1]);
}

fn with_unknown_op() -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
    let a = g.add_attr(Attr::None);
    // Pushed as is: `apply` would refuse it.
    let y = g.push(Node {
        op: Op::Library(LibId(999), a),
        inputs: vec![x],
        vtype: VType::strong(DType::F32),
        shape: Shape(vec![4]),
        loc: None,
    });
    g.outputs.push(y);
    g
}

#[test]
fn an_unknown_op_is_an_error_never_an_elementwise_default() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
    let a = g.add_attr(Attr::None);
    let err = g.apply(Op::Library(LibId(999), a), &[x], None).unwrap_err();
    assert!(err.message.contains("unknown library op #999"), "{}", err.message);

    let g = with_unknown_op();
    assert!(verify(&g).unwrap_err().message.contains("unknown library op"));
    // Fusion on its own (no verifier in front of it) refuses it too.
    let mut st = CompileState::new(g.clone(), opts(3));
    let err = FusePass.run(&mut st).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(err.message.contains("unknown library op"), "{}", err.message);
    assert!(compile(g, &CompileOptions { verify_each_pass: false, ..opts(3) }).is_err());
}

#[test]
fn a_library_call_of_the_wrong_shape_fails_plan_verification() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![3, 4]));
    let spec = PadSpec { widths: vec![(1, 1), (1, 1)], mode: PadMode::Edge, cval: Scalar::Float(0.0) };
    let p = g.pad(spec, x, None).unwrap();
    g.outputs.push(p);
    let plan = compile(g, &opts(3)).unwrap().plan;
    plan.verify().unwrap();
    let mut bad = plan.clone();
    bad.kernels[0].library.as_mut().unwrap().attr =
        Attr::Pad(PadSpec { widths: vec![(0, 0), (1, 1)], mode: PadMode::Edge, cval: Scalar::Float(0.0) });
    assert!(bad.verify().is_err());
    let mut bad = plan;
    bad.kernels[0].library.as_mut().unwrap().id = LibId(77);
    assert!(bad.verify().unwrap_err().message.contains("unknown library op"));
}

#[test]
fn respecialization_asks_each_library_op() {
    // A product re-infers for new shapes; a padding's widths fix its result, so a graph
    // holding one is traced again.
    let mut g = Graph::new();
    let a = g.add_input(VType::strong(DType::F32), Shape(vec![4, 3]));
    let b = g.add_input(VType::strong(DType::F32), Shape(vec![3, 2]));
    let p = g.library(LibId::MATMUL, Attr::None, &[a, b], None).unwrap();
    g.outputs.push(p);
    let h = g.respecialize(&[vec![5, 7], vec![7, 6]]).unwrap().unwrap();
    assert_eq!(h.node(p).shape, Shape(vec![5, 6]));
    assert!(g.respecialize(&[vec![5, 7], vec![8, 6]]).unwrap().is_err());
    let spec = PadSpec { widths: vec![(1, 1), (0, 0)], mode: PadMode::Edge, cval: Scalar::Float(0.0) };
    let q = g.pad(spec, p, None).unwrap();
    g.outputs.push(q);
    assert!(g.respecialize(&[vec![5, 7], vec![7, 6]]).is_none());
}
