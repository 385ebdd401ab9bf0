//! Implicit broadcasts: an elementwise op reads the operand of a `broadcast_to` view itself.
//!
//! Needs: a folded graph. Guarantees: every operand of an elementwise op (unary, binary,
//! `where`, cast) that is a `broadcast_to` view is replaced by the view's operand when NumPy's
//! broadcasting of the op's operands still gives the op's shape; the view, if nothing else
//! reads it, is left for [`crate::dce`]. A view reads memory, so what it views must be in a
//! buffer before the kernel runs: gradients broadcast a value per row back over its rows
//! (`broadcast_to(sum(x * g, -1, keepdims=True), x.shape)`), and without this pass each such
//! view split layer norm's backward into another pass over the rows. Read implicitly, the
//! per-row value stays in the row kernel that computes it.

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::Op;
use pyasc_ir::view::ViewSpec;
use pyasc_ir::{Attr, Graph, NodeId, Shape};

/// Reads the operands of broadcast views directly in elementwise ops.
pub struct ImplicitBroadcastPass;

impl Pass for ImplicitBroadcastPass {
    fn name(&self) -> &'static str {
        "implicit_broadcast"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let g = &mut st.graph;
        let mut replaced = 0usize;
        for i in 0..g.len() {
            let n = g.node(NodeId(i as u32));
            let elementwise = matches!(n.op, Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast(_));
            if !elementwise {
                continue;
            }
            let shape = n.shape.clone();
            let mut inputs = n.inputs.clone();
            let mut changed = false;
            for j in 0..inputs.len() {
                let Some(base) = broadcast_base(g, inputs[j]) else { continue };
                let mut trial = inputs.clone();
                trial[j] = base;
                if broadcast_all(g, &trial).is_some_and(|s| s == shape) {
                    inputs = trial;
                    changed = true;
                    replaced += 1;
                }
            }
            if changed {
                g.nodes[i].inputs = inputs;
            }
        }
        if replaced > 0 {
            st.notes.push(format!("{replaced} broadcast view(s) read implicitly"));
        }
        Ok(())
    }
}

/// The operand of `x` when `x` is a `broadcast_to` view.
fn broadcast_base(g: &Graph, x: NodeId) -> Option<NodeId> {
    let Op::View(a) = g.node(x).op else { return None };
    match g.attr(a) {
        Ok(Attr::View(ViewSpec::BroadcastTo(_))) => Some(g.node(x).inputs[0]),
        _ => None,
    }
}

/// NumPy's broadcast of the shapes of `inputs`.
fn broadcast_all(g: &Graph, inputs: &[NodeId]) -> Option<Shape> {
    let mut s = Shape::scalar();
    for x in inputs {
        s = s.broadcast(&g.node(*x).shape).ok()?;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{compile, CompileOptions};
    use pyasc_ir::dtype::VType;
    use pyasc_ir::op::{Axes, BinaryOp, ReduceOp};
    use pyasc_ir::DType;

    /// `x * broadcast_to(sum(x, -1, keepdims), x.shape)`: the sum and the product share one
    /// row kernel once the view is read implicitly.
    #[test]
    fn a_per_row_value_broadcast_by_a_view_stays_in_its_row_kernel() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![8, 64]));
        let s = g.apply(Op::Reduce { op: ReduceOp::Sum, axes: Axes(1 << 1), keepdims: true }, &[x], None).unwrap();
        let b = g.view(ViewSpec::BroadcastTo(vec![8, 64]), s, None).unwrap();
        let y = g.binary(BinaryOp::Mul, x, b, None).unwrap();
        g.outputs = vec![y];
        let compiled = compile(g.clone(), &CompileOptions::default()).unwrap();
        assert_eq!(compiled.plan.kernels.len(), 1);
        let mut st = CompileState::new(g, CompileOptions::default());
        ImplicitBroadcastPass.run(&mut st).unwrap();
        assert_eq!(st.graph.node(y).inputs, vec![x, s]);
    }

    /// Two broadcast operands whose bases broadcast to less than the op's shape: only one
    /// is replaced.
    #[test]
    fn a_view_that_gives_the_shape_is_kept() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::F32), Shape(vec![4, 1]));
        let c = g.add_input(VType::strong(DType::F32), Shape(vec![4, 1]));
        let ab = g.view(ViewSpec::BroadcastTo(vec![4, 5]), a, None).unwrap();
        let cb = g.view(ViewSpec::BroadcastTo(vec![4, 5]), c, None).unwrap();
        let y = g.binary(BinaryOp::Add, ab, cb, None).unwrap();
        g.outputs = vec![y];
        let mut st = CompileState::new(g, CompileOptions::default());
        ImplicitBroadcastPass.run(&mut st).unwrap();
        assert_eq!(st.graph.node(y).inputs, vec![a, cb]);
        assert_eq!(st.graph.node(y).shape, Shape(vec![4, 5]));
    }
}
