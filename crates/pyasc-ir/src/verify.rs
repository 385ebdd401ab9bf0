//! The graph verifier, run after every pass in tests and debug builds.
//!
//! Checks: operands precede users (SSA order in the arena), arities, input numbering,
//! constants are 0-d, every node's type equals what [`crate::infer`] (or, for views and
//! library ops, the view and the registered library op) derives; an unknown library op is
//! an error.

use crate::error::{IrError, Result};
use crate::graph::Graph;
use crate::op::Op;
use crate::shape::Shape;

/// Check every structural and typing invariant of `g`.
pub fn verify(g: &Graph) -> Result<()> {
    for (i, n) in g.nodes.iter().enumerate() {
        let here = || format!("node %{i} ({})", n.op.name());
        if let Op::Library(id, _) = n.op {
            id.op().map_err(|e| IrError::internal(format!("{}: {}", here(), e.message)))?;
        }
        if !n.op.arity_ok(n.inputs.len()) {
            return Err(IrError::internal(format!("{} has {} operands", here(), n.inputs.len())));
        }
        if let Some(bad) = n.inputs.iter().find(|op| op.index() >= i) {
            return Err(IrError::internal(format!("{} uses %{} which does not precede it", here(), bad.0)));
        }
        match n.op {
            Op::Input(k) => {
                if g.inputs.get(k as usize).map(|id| id.index()) != Some(i) {
                    return Err(IrError::internal(format!("{} is not argument {k}", here())));
                }
            }
            Op::Fill(_) => {}
            Op::Const(_) => {
                if n.shape != Shape::scalar() {
                    return Err(IrError::internal(format!("{} is not 0-d", here())));
                }
            }
            _ => {
                let operands: Vec<_> = n.inputs.iter().map(|o| (g.node(*o).vtype, &g.node(*o).shape)).collect();
                let (vt, shape) = g.infer_op(&n.op, &operands).map_err(|e| e.at(n.loc.as_ref()))?;
                if vt.dtype != n.vtype.dtype || shape != n.shape {
                    return Err(IrError::internal(format!(
                        "{} is typed {} {} but its operands give {} {}",
                        here(),
                        n.vtype.dtype,
                        n.shape,
                        vt.dtype,
                        shape
                    )));
                }
            }
        }
    }
    for o in &g.outputs {
        if o.index() >= g.nodes.len() {
            return Err(IrError::internal(format!("output %{} does not exist", o.0)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::VType;
    use crate::graph::NodeId;
    use crate::op::UnaryOp;
    use crate::DType;

    #[test]
    fn accepts_traced_graphs_and_rejects_broken_ones() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
        let y = g.unary(UnaryOp::Exp, x, None).unwrap();
        g.outputs.push(y);
        verify(&g).unwrap();

        let mut bad = g.clone();
        bad.nodes[1].vtype = VType::strong(DType::F64);
        assert!(verify(&bad).is_err());

        let mut bad = g.clone();
        bad.nodes[1].inputs = vec![NodeId(1)];
        assert!(verify(&bad).is_err());

        let mut bad = g;
        bad.outputs.push(NodeId(9));
        assert!(verify(&bad).is_err());
    }
}
