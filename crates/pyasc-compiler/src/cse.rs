//! Common subexpression elimination.
//!
//! Needs: nothing beyond a verified graph. Guarantees: no two nodes have the same op,
//! the same operands (sorted for commutative ops) and the same type; equal constants
//! (bitwise, so NaN matches NaN and -0.0 does not match 0.0) are one node; views and library
//! ops compare by their attributes. Arguments are never merged.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, rebuild};
use pyasc_ir::error::Result;
use pyasc_ir::op::Op;
use pyasc_ir::NodeId;
use std::collections::HashMap;

/// Merges structurally equal nodes.
pub struct CsePass;

#[derive(PartialEq, Eq, Hash)]
enum Key {
    Const(u8, u64, String),
    Op(String, Vec<NodeId>, String),
}

impl Pass for CsePass {
    fn name(&self) -> &'static str {
        "cse"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let mut seen: HashMap<Key, NodeId> = HashMap::new();
        let mut merged = 0usize;
        st.graph = rebuild(&st.graph, |g, n, mut ops| {
            let ty = format!("{:?}{:?}", n.vtype, n.shape);
            let key = match n.op {
                Op::Input(_) => return Ok(copy_node(g, n, ops)),
                Op::Const(v) => {
                    let (tag, bits) = v.bits();
                    Key::Const(tag, bits, ty)
                }
                Op::Binary(b) if b.is_commutative() => {
                    ops.sort();
                    Key::Op(format!("{:?}", n.op), ops.clone(), ty)
                }
                // Library ops and views are equal when their attributes are (not only their
                // ids): `x[:, 0] - w` beside `x[:, 0] + w` reads the column once.
                Op::Library(id, a) => Key::Op(format!("{id:?}{:?}", g.attr(a)?), ops.clone(), ty),
                Op::View(a) => Key::Op(format!("View{:?}", g.attr(a)?), ops.clone(), ty),
                _ => Key::Op(format!("{:?}", n.op), ops.clone(), ty),
            };
            if let Some(&id) = seen.get(&key) {
                merged += 1;
                return Ok(id);
            }
            let id = copy_node(g, n, ops);
            seen.insert(key, id);
            Ok(id)
        })?;
        if merged > 0 {
            st.notes.push(format!("merged {merged} repeated subexpressions"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::CompileOptions;
    use pyasc_ir::dtype::VType;
    use pyasc_ir::op::{BinaryOp, UnaryOp};
    use pyasc_ir::{DType, Graph, Shape};

    #[test]
    fn merges_repeats_and_commuted_operands() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
        let y = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
        let a = g.binary(BinaryOp::Add, x, y, None).unwrap();
        let b = g.binary(BinaryOp::Add, y, x, None).unwrap();
        let ea = g.unary(UnaryOp::Exp, a, None).unwrap();
        let eb = g.unary(UnaryOp::Exp, b, None).unwrap();
        let s = g.binary(BinaryOp::Sub, ea, eb, None).unwrap();
        g.outputs.push(s);
        let mut st = CompileState::new(g, CompileOptions::default());
        CsePass.run(&mut st).unwrap();
        assert_eq!(st.graph.len(), 5, "{}", pyasc_ir::print::graph_to_string(&st.graph));
    }

    #[test]
    fn merges_equal_views_of_the_same_operand_only() {
        use pyasc_ir::view::{SliceDim, ViewSpec};
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![6, 5]));
        let col = |c: usize| {
            ViewSpec::Slice(vec![SliceDim { start: 0, step: 1, len: 6 }, SliceDim { start: c, step: 1, len: 1 }])
        };
        let a = g.view(col(0), x, None).unwrap();
        let b = g.view(col(0), x, None).unwrap();
        let c = g.view(col(1), x, None).unwrap();
        let t = g.view(ViewSpec::Transpose(vec![1, 0]), x, None).unwrap();
        let s = g.binary(BinaryOp::Sub, a, b, None).unwrap();
        let s = g.binary(BinaryOp::Sub, s, c, None).unwrap();
        g.outputs.extend([s, t]);
        let mut st = CompileState::new(g, CompileOptions::default());
        CsePass.run(&mut st).unwrap();
        // x, two column views (0 and 1), the transpose and the two subtractions.
        assert_eq!(st.graph.len(), 6, "{}", pyasc_ir::print::graph_to_string(&st.graph));
    }
}
