//! End-to-end compiler tests: traced graphs in, kernel plans out.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_ir::tile::{Instr, RegKind};
use pyasc_ir::{DType, Graph, NodeId, Scalar, Shape};

fn opts(level: u8) -> CompileOptions {
    CompileOptions { op_break_level: level, verify_each_pass: true, ..CompileOptions::default() }
}

/// x * 0.5 * (1.0 + erf(x / 1.41421)), with the rounded constant the article writes.
#[allow(clippy::approx_constant)]
fn gelu(g: &mut Graph, x: NodeId) -> NodeId {
    let half = g.py_scalar(Scalar::Float(0.5), None);
    let one = g.py_scalar(Scalar::Float(1.0), None);
    let s2 = g.py_scalar(Scalar::Float(1.41421), None);
    let a = g.binary(BinaryOp::Mul, x, half, None).unwrap();
    let d = g.binary(BinaryOp::Div, x, s2, None).unwrap();
    let e = g.unary(UnaryOp::Erf, d, None).unwrap();
    let p = g.binary(BinaryOp::Add, one, e, None).unwrap();
    g.binary(BinaryOp::Mul, a, p, None).unwrap()
}

#[test]
fn gelu_is_one_kernel_with_scalar_constants() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![1 << 20]));
    let y = gelu(&mut g, x);
    g.outputs.push(y);
    let c = compile(g, &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 1);
    let k = &c.plan.kernels[0];
    assert_eq!(k.fused_ops, 5);
    // (x * 0.5) * (1 + erf(..)): the first multiply is chained into the last one.
    assert_eq!(k.body.len(), 4);
    assert!(k.regs.iter().all(|r| r.dtype == DType::F32));
    assert_eq!(k.regs.iter().filter(|r| matches!(r.kind, RegKind::Scalar(_))).count(), 3);
    assert!(matches!(k.body.last(), Some(Instr::Chain { op2: BinaryOp::Mul, .. })));
    assert_eq!(c.reports.len(), pyasc_compiler::pipeline().len());
}

#[test]
fn level_zero_gives_one_kernel_per_op() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![64]));
    let y = gelu(&mut g, x);
    g.outputs.push(y);
    let c = compile(g, &opts(0)).unwrap();
    assert_eq!(c.plan.kernels.len(), 5);
    assert!(c.plan.kernels.iter().all(|k| k.fused_ops == 1));
}

#[test]
fn broadcast_producers_fuse_by_level() {
    // exp(a[N,1]) + b[N,M]: level 1 materialises exp(a); level 3 recomputes it unless
    // the broadcast factor is large.
    let build = |m: usize| {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::F64), Shape(vec![16, 1]));
        let b = g.add_input(VType::strong(DType::F64), Shape(vec![16, m]));
        let e = g.unary(UnaryOp::Exp, a, None).unwrap();
        let s = g.binary(BinaryOp::Add, e, b, None).unwrap();
        g.outputs.push(s);
        g
    };
    assert_eq!(compile(build(4), &opts(1)).unwrap().plan.kernels.len(), 2);
    assert_eq!(compile(build(4), &opts(3)).unwrap().plan.kernels.len(), 1);
    assert_eq!(compile(build(64), &opts(3)).unwrap().plan.kernels.len(), 2);
}

#[test]
fn outputs_of_different_shapes_get_their_own_kernels_and_leaves_are_copied() {
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::I32), Shape(vec![3, 4]));
    let r = g.add_input(VType::strong(DType::I32), Shape(vec![4]));
    let s = g.binary(BinaryOp::Add, x, r, None).unwrap();
    let t = g.unary(UnaryOp::Neg, r, None).unwrap();
    let seven = g.py_scalar(Scalar::Int(7), None);
    g.outputs.extend([s, t, x, seven]);
    let c = compile(g, &opts(3)).unwrap();
    assert_eq!(c.plan.kernels.len(), 4);
    assert_eq!(c.plan.outputs.len(), 4);
    let shapes: Vec<_> = c.plan.outputs.iter().map(|b| c.plan.buffers[b.0 as usize].shape.clone()).collect();
    assert_eq!(shapes, vec![Shape(vec![3, 4]), Shape(vec![4]), Shape(vec![3, 4]), Shape(vec![])]);
    let dt = c.plan.buffers[c.plan.outputs[3].0 as usize].dtype;
    assert_eq!(dt, DType::I64, "a bare Python int is returned as int64");
}

#[test]
fn registers_are_reused_after_last_use() {
    // A long chain needs only a couple of scratch tiles.
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F32), Shape(vec![4096]));
    let mut v = x;
    for _ in 0..20 {
        let t = g.unary(UnaryOp::Sin, v, None).unwrap();
        v = g.binary(BinaryOp::Add, t, x, None).unwrap();
    }
    g.outputs.push(v);
    let c = compile(g, &opts(3)).unwrap();
    let k = &c.plan.kernels[0];
    let tiles = k.regs.iter().filter(|r| r.kind == RegKind::Tile).count();
    assert!(tiles <= 2, "{tiles} scratch tiles");
    assert_eq!(k.body.len(), 40);
}

#[test]
fn an_operand_used_twice_is_freed_once() {
    // (x + 1) * (x + 1) after CSE reads one register twice; its register must not be handed
    // out twice afterwards.
    let mut g = Graph::new();
    let x = g.add_input(VType::strong(DType::F64), Shape(vec![64]));
    let one = g.py_scalar(Scalar::Float(1.0), None);
    let a = g.binary(BinaryOp::Add, x, one, None).unwrap();
    let sq = g.binary(BinaryOp::Mul, a, a, None).unwrap();
    let e = g.unary(UnaryOp::Exp, x, None).unwrap();
    let t = g.unary(UnaryOp::Tanh, e, None).unwrap();
    let y = g.binary(BinaryOp::Add, sq, t, None).unwrap();
    g.outputs.push(y);
    let c = compile(g, &opts(3)).unwrap();
    c.plan.verify().unwrap();
}
