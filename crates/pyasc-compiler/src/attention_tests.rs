//! Tests of the attention rewrite: the traced formula with and without masks becomes one
//! kernel; shared scores and lower fusion levels stay unfused.

use super::*;
use crate::pass::{compile, CompileOptions};
use pyasc_ir::Shape;

fn opts(level: u8) -> CompileOptions {
    CompileOptions { op_break_level: level, verify_each_pass: true, ..CompileOptions::default() }
}

/// `softmax(q @ k^T / 8 [+ mask]) @ v` as traced, returning the scores too when `leak`.
fn traced(dt: DType, mask: Option<DType>, leak: bool) -> Graph {
    let mut g = Graph::new();
    let f = VType::strong(dt);
    let q = g.add_input(f, Shape(vec![2, 5, 8]));
    let k = g.add_input(f, Shape(vec![2, 7, 8]));
    let v = g.add_input(f, Shape(vec![2, 7, 3]));
    let kt = g.view(ViewSpec::Transpose(vec![0, 2, 1]), k, None).unwrap();
    let mm = g.library(LibId::MATMUL, Attr::None, &[q, kt], None).unwrap();
    let c = g.constant(Scalar::Float(8.0), VType::weak(pyasc_ir::dtype::WeakKind::Float), None);
    let mut s = g.binary(BinaryOp::Div, mm, c, None).unwrap();
    match mask {
        Some(DType::Bool) => {
            let m = g.add_input(VType::strong(DType::Bool), Shape(vec![5, 7]));
            let ninf =
                g.constant(Scalar::Float(f64::NEG_INFINITY), VType::weak(pyasc_ir::dtype::WeakKind::Float), None);
            s = g.apply(Op::Where, &[m, s, ninf], None).unwrap();
        }
        Some(mdt) => {
            let m = g.add_input(VType::strong(mdt), Shape(vec![7]));
            s = g.binary(BinaryOp::Add, m, s, None).unwrap();
        }
        None => {}
    }
    let last = Axes(1 << 2);
    let mx = g.apply(Op::Reduce { op: ReduceOp::Max, axes: last, keepdims: true }, &[s], None).unwrap();
    let d = g.binary(BinaryOp::Sub, s, mx, None).unwrap();
    let e = g.unary(UnaryOp::Exp, d, None).unwrap();
    let sum = g.apply(Op::Reduce { op: ReduceOp::Sum, axes: last, keepdims: true }, &[e], None).unwrap();
    let p = g.binary(BinaryOp::Div, e, sum, None).unwrap();
    let o = g.library(LibId::MATMUL, Attr::None, &[p, v], None).unwrap();
    g.outputs.push(o);
    if leak {
        g.outputs.push(s);
    }
    g
}

fn attention_calls(g: Graph, level: u8) -> (usize, usize, Graph) {
    let c = compile(g, &opts(level)).unwrap();
    let calls = c.plan.kernels.iter().filter(|k| k.library.as_ref().is_some_and(|l| l.id == LibId::ATTENTION)).count();
    (calls, c.plan.kernels.len(), c.graph)
}

#[test]
fn the_traced_formula_becomes_one_attention_kernel() {
    for mask in [None, Some(DType::Bool), Some(DType::F32)] {
        let (calls, kernels, g) = attention_calls(traced(DType::F32, mask, false), 3);
        assert_eq!((calls, kernels), (1, 1), "{mask:?}: {}", pyasc_ir::print::graph_to_string(&g));
        let spec = g.nodes.iter().find_map(|n| match n.op {
            Op::Library(LibId::ATTENTION, a) => g.attr(a).ok().cloned(),
            _ => None,
        });
        let Some(Attr::Attention(spec)) = spec else { panic!("no attention node") };
        assert_eq!(spec.scale, 0.125);
        assert_eq!(spec.mask != AttnMask::None, mask.is_some());
    }
}

#[test]
fn a_wider_additive_mask_keeps_the_wider_result_dtype() {
    let (calls, _, g) = attention_calls(traced(DType::F32, Some(DType::F64), false), 3);
    assert_eq!(calls, 1);
    let out = g.node(g.outputs[0]);
    assert_eq!(out.dtype(), DType::F64);
}

#[test]
fn shared_scores_and_lower_levels_stay_unfused() {
    assert_eq!(attention_calls(traced(DType::F32, None, true), 3).0, 0);
    assert_eq!(attention_calls(traced(DType::F32, None, false), 2).0, 0);
}
