//! Precision policies and scopes made explicit.
//!
//! Needs: a verified traced graph, its [`ScopeSpan`]s and the operator's [`PrecisionMode`].
//! Guarantees: every op that runs in a 16-bit type has that type (its float32 operands get
//! `Cast` nodes to it), every consumer that stays in float32 gets a `Cast` back, the results
//! have the dtypes of the fp32 program, and no scope is left in the graph. Promotion then
//! computes 16-bit ops in float32 lanes, rounds where values are stored, and feeds the cube
//! ops their 16-bit operands.
//!
//! Which ops go to the 16-bit type `L`:
//! - inside `precision_scope("fp16")` / `("bf16")`: every float32 op traced there;
//!   inside `precision_scope("fp32")`: none;
//! - elsewhere, under `force_*`: every float32 op; under `mixed_*`: only the cube ops
//!   (matrix products and convolutions: [`pyasc_ir::library::LibraryOp::is_cube`]), whose
//!   16-bit operands accumulate in float32. Everything else (exp, log, division, softmax,
//!   norms, reductions, elementwise math) stays float32, as in PyTorch's autocast lists.
//!
//! "Float32 op": its result is float32, or it is a comparison, classification or conversion
//! of float32 operands. Float64 ops keep float64. Ops with no 16-bit form (scans, sorts,
//! `spacing`, `nextafter`) stay float32 whatever the policy.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, with_inputs};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_ir::precision::{Precision, PrecisionMode};
use pyasc_ir::{DType, Graph, LibId, Node, NodeId, Op};
use std::collections::HashMap;

/// Applies the precision policy and the precision scopes.
pub struct PrecisionPass;

impl Pass for PrecisionPass {
    fn name(&self) -> &'static str {
        "precision"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let mode = st.options.precision;
        if mode == PrecisionMode::Fp32 && st.graph.scopes.is_empty() {
            return Ok(());
        }
        let mut cx = Cx::default();
        st.graph = retype(&st.graph, mode, &mut cx)?;
        st.notes.push(format!("{mode}: {} ops in 16 bits, {} casts inserted", cx.low, cx.casts));
        Ok(())
    }
}

/// What the rewrite counts and reuses.
#[derive(Default)]
struct Cx {
    low: usize,
    casts: usize,
    /// One cast per (value, dtype).
    memo: HashMap<(NodeId, DType), NodeId>,
}

impl Cx {
    fn cast(&mut self, g: &mut Graph, x: NodeId, to: DType, n: &Node) -> NodeId {
        if g.node(x).dtype() == to {
            return x;
        }
        if let Some(&c) = self.memo.get(&(x, to)) {
            return c;
        }
        self.casts += 1;
        let shape = g.node(x).shape.clone();
        let c = g.push(Node { op: Op::Cast(to), inputs: vec![x], vtype: VType::strong(to), shape, loc: n.loc.clone() });
        self.memo.insert((x, to), c);
        c
    }
}

/// True when `n` has a 16-bit form.
fn has_low_form(n: &Node) -> bool {
    !matches!(
        n.op,
        Op::Input(_)
            | Op::Const(_)
            | Op::Fill(_)
            | Op::Library(LibId::SCAN | LibId::SORT, _)
            | Op::Unary(UnaryOp::Spacing)
            | Op::Binary(BinaryOp::NextAfter)
    )
}

/// True when `n` is a float32 op of `g` (see the module docs).
fn is_f32_op(g: &Graph, n: &Node) -> bool {
    let dt = n.dtype();
    dt == DType::F32 || (!dt.is_float() && n.inputs.iter().any(|x| g.node(*x).dtype() == DType::F32))
}

fn is_cube(n: &Node) -> bool {
    matches!(n.op, Op::Library(id, _) if id.op().is_ok_and(|op| op.is_cube()))
}

/// The 16-bit type node `id` of `g` runs in, if any.
fn target(g: &Graph, id: NodeId, mode: PrecisionMode) -> Option<DType> {
    let n = g.node(id);
    if !has_low_form(n) || !is_f32_op(g, n) {
        return None;
    }
    let p = match (g.scope_of(id), mode) {
        (Some(p), _) => p,
        (None, PrecisionMode::Force(p)) => p,
        (None, PrecisionMode::Mixed(p)) if is_cube(n) => p,
        (None, _) => Precision::Fp32,
    };
    p.low_dtype()
}

fn retype(g: &Graph, mode: PrecisionMode, cx: &mut Cx) -> Result<Graph> {
    let live = g.live();
    let (mut out, mut map) = with_inputs(g);
    for (i, n) in g.nodes.iter().enumerate() {
        if !live[i] || map[i].is_some() {
            continue;
        }
        let ops: Vec<NodeId> = n.inputs.iter().map(|o| map[o.index()].expect("operands precede users")).collect();
        let low = target(g, NodeId(i as u32), mode).and_then(|l| {
            let low_ops: Vec<NodeId> = ops
                .iter()
                .map(|&x| if out.node(x).dtype() == DType::F32 { cx.cast(&mut out, x, l, n) } else { x })
                .collect();
            let op = match n.op {
                Op::Cast(DType::F32) => Op::Cast(l),
                op => op,
            };
            // An op whose 16-bit form does not type (a library op rejecting 16-bit operands)
            // stays in float32.
            out.apply(op, &low_ops, n.loc.clone()).ok()
        });
        map[i] = Some(match low {
            Some(id) => {
                cx.low += 1;
                id
            }
            None => {
                // Operands that went to 16 bits come back to the dtype this op was traced with.
                let ops =
                    ops.iter().zip(&n.inputs).map(|(&x, old)| cx.cast(&mut out, x, g.node(*old).dtype(), n)).collect();
                copy_node(&mut out, n, ops)
            }
        });
    }
    out.outputs = g
        .outputs
        .iter()
        .map(|o| {
            let x = map[o.index()].expect("outputs are live");
            cx.cast(&mut out, x, g.node(*o).dtype(), g.node(*o))
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::CompileOptions;
    use pyasc_ir::verify::verify;
    use pyasc_ir::{Attr, Shape};

    fn run(g: Graph, mode: PrecisionMode) -> Graph {
        let mut st = CompileState::new(g, CompileOptions { precision: mode, ..CompileOptions::default() });
        PrecisionPass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        assert!(st.graph.scopes.is_empty());
        st.graph
    }

    /// exp(a @ b) + 1 over float32 inputs.
    fn program() -> Graph {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::F32), Shape(vec![4, 8]));
        let b = g.add_input(VType::strong(DType::F32), Shape(vec![8, 3]));
        let m = g.library(LibId::MATMUL, Attr::None, &[a, b], None).unwrap();
        let e = g.unary(UnaryOp::Exp, m, None).unwrap();
        let one = g.py_scalar(pyasc_ir::Scalar::Float(1.0), None);
        let s = g.binary(BinaryOp::Add, e, one, None).unwrap();
        g.outputs.push(s);
        g
    }

    fn dtypes(g: &Graph, pick: impl Fn(&Op) -> bool) -> Vec<DType> {
        g.nodes.iter().filter(|n| pick(&n.op)).map(|n| n.dtype()).collect()
    }

    #[test]
    fn mixed_puts_only_the_matmul_in_16_bits() {
        let g = run(program(), PrecisionMode::Mixed(Precision::Bf16));
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Library(..))), vec![DType::BF16]);
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Unary(_) | Op::Binary(_))), vec![DType::F32, DType::F32]);
        // Two operand casts in, one result cast out.
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Cast(_))), vec![DType::BF16, DType::BF16, DType::F32]);
        assert_eq!(g.node(g.outputs[0]).dtype(), DType::F32);
    }

    #[test]
    fn force_puts_every_float32_op_in_16_bits_and_returns_float32() {
        let g = run(program(), PrecisionMode::Force(Precision::Fp16));
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Library(..) | Op::Unary(_) | Op::Binary(_))), vec![DType::F16; 3]);
        let out = g.node(g.outputs[0]);
        assert_eq!((out.op, out.dtype()), (Op::Cast(DType::F32), DType::F32));
    }

    #[test]
    fn scopes_override_the_policy_innermost_first() {
        // Under mixed_bf16, an fp32 scope around the matmul keeps it in float32 and an fp16
        // scope around exp puts exp in float16.
        let mut g = program();
        g.scopes.push(pyasc_ir::precision::ScopeSpan { start: 2, end: 3, precision: Precision::Fp32 });
        g.scopes.push(pyasc_ir::precision::ScopeSpan { start: 3, end: 4, precision: Precision::Fp16 });
        let g = run(g, PrecisionMode::Mixed(Precision::Bf16));
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Library(..))), vec![DType::F32]);
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Unary(_))), vec![DType::F16]);
        assert_eq!(dtypes(&g, |op| matches!(op, Op::Binary(_))), vec![DType::F32]);
    }

    #[test]
    fn float64_and_fp32_graphs_are_left_alone() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::F64), Shape(vec![4]));
        let e = g.unary(UnaryOp::Exp, a, None).unwrap();
        g.outputs.push(e);
        let before = g.clone();
        assert_eq!(run(g, PrecisionMode::Force(Precision::Bf16)).nodes, before.nodes);
        let p = program();
        assert_eq!(run(p.clone(), PrecisionMode::Fp32), p);
    }
}
