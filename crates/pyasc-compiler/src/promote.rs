//! Dtype promotion made explicit.
//!
//! Needs: a verified graph whose node types follow NumPy's rules (implicit promotion).
//! Guarantees: every elementwise op's operands already have the dtype the op computes in
//! (inserted `Cast` nodes), so lowering never mixes dtypes in one instruction; and ops
//! the kernels do not define are rewritten to ones they do:
//! bool `+ * minimum maximum` become `or and and or`, `floor/ceil/round` of integers
//! disappear, `isnan/isinf/isfinite` of integers become `x != x` / `x == x`,
//! casts to the operand's own dtype disappear. Integer powers with a negative constant
//! exponent are rejected as NumPy rejects them.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, rebuild};
use pyasc_ir::dtype::{promote_v, VType};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::op::{BinaryOp, Op, ReduceOp, UnaryKind, UnaryOp};
use pyasc_ir::{DType, Graph, Node, NodeId, Scalar};

/// Inserts casts and rewrites ops into the forms the kernels implement.
pub struct PromotePass;

impl Pass for PromotePass {
    fn name(&self) -> &'static str {
        "promote"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let mut casts = 0usize;
        st.graph = rebuild(&st.graph, |g, n, ops| rewrite(g, n, ops, &mut casts))?;
        if casts > 0 {
            st.notes.push(format!("inserted {casts} casts"));
        }
        Ok(())
    }
}

fn cast_to(g: &mut Graph, x: NodeId, to: DType, n: &Node, casts: &mut usize) -> NodeId {
    if g.node(x).dtype() == to {
        return x;
    }
    *casts += 1;
    let shape = g.node(x).shape.clone();
    g.push(Node { op: Op::Cast(to), inputs: vec![x], vtype: VType::strong(to), shape, loc: n.loc.clone() })
}

fn rewrite(g: &mut Graph, n: &Node, ops: Vec<NodeId>, casts: &mut usize) -> Result<NodeId> {
    let dt = n.dtype();
    let bool_result = dt == DType::Bool;
    match n.op {
        Op::Unary(u) => {
            let x = ops[0];
            let xd = g.node(x).dtype();
            match u.kind() {
                UnaryKind::Rounding if !xd.is_float() => return Ok(x),
                UnaryKind::Classify if !xd.is_float() && u == UnaryOp::SignBit => {
                    let zero = g.constant(Scalar::Int(0), VType::strong(xd), n.loc.clone());
                    return g.apply(Op::Binary(BinaryOp::Lt), &[x, zero], n.loc.clone());
                }
                UnaryKind::Classify if !xd.is_float() => {
                    let cmp = if u == UnaryOp::IsFinite { BinaryOp::Eq } else { BinaryOp::Ne };
                    return g.apply(Op::Binary(cmp), &[x, x], n.loc.clone());
                }
                UnaryKind::Classify => return Ok(copy_node(g, n, vec![x])),
                _ => {}
            }
            let x = cast_to(g, x, dt, n, casts);
            Ok(copy_node(g, n, vec![x]))
        }
        Op::Binary(b) => {
            let (a, c) = (ops[0], ops[1]);
            if b == BinaryOp::Pow && dt.is_int() {
                if let Op::Const(v) = g.node(c).op {
                    if v.as_i64() < 0 {
                        return Err(
                            // NumPy raises ValueError here: an invalid value, not a dtype.
                            IrError::new(
                                ErrorKind::InvalidArgument,
                                "integers to negative integer powers are not allowed",
                            )
                            .at(n.loc.as_ref()),
                        );
                    }
                }
            }
            let mut compute = if b.is_compare() { promote_v(g.node(a).vtype, g.node(c).vtype).dtype } else { dt };
            // A Python int outside the integer dtype it meets compares by its true value
            // (NumPy 2): compare in int64 rather than wrap the constant.
            let outside = |x: NodeId| match g.node(x).op {
                Op::Const(v @ Scalar::Int(_)) => v.cast(compute) != v,
                _ => false,
            };
            if b.is_compare() && compute.is_int() && (outside(a) || outside(c)) {
                compute = DType::I64;
            }
            let a = cast_to(g, a, compute, n, casts);
            let c = cast_to(g, c, compute, n, casts);
            let op = match b {
                BinaryOp::Add | BinaryOp::Max | BinaryOp::Fmax if bool_result => BinaryOp::Or,
                BinaryOp::Mul | BinaryOp::Min | BinaryOp::Fmin if bool_result => BinaryOp::And,
                other => other,
            };
            Ok(g.push(Node { op: Op::Binary(op), inputs: vec![a, c], ..n.clone() }))
        }
        Op::Where => {
            let cond = cast_to(g, ops[0], DType::Bool, n, casts);
            let a = cast_to(g, ops[1], dt, n, casts);
            let b = cast_to(g, ops[2], dt, n, casts);
            Ok(copy_node(g, n, vec![cond, a, b]))
        }
        Op::Cast(to) => {
            if g.node(ops[0]).dtype() == to {
                Ok(ops[0])
            } else {
                Ok(copy_node(g, n, ops))
            }
        }
        Op::Library(id, _) => {
            // Each operand in the dtype the routine computes in.
            let lib = id.op()?;
            let ops: Vec<NodeId> = ops
                .iter()
                .enumerate()
                .map(|(i, x)| match lib.operand_dtype(i, dt) {
                    Some(to) => cast_to(g, *x, to, n, casts),
                    None => *x,
                })
                .collect();
            Ok(copy_node(g, n, ops))
        }
        Op::Reduce { op, .. } => {
            // Sums and products accumulate in the result dtype (int64 for integers and
            // bools); any/all look at truth values; the others keep the operand's dtype.
            let x = match op {
                ReduceOp::Sum | ReduceOp::Prod => cast_to(g, ops[0], dt, n, casts),
                ReduceOp::Any | ReduceOp::All => cast_to(g, ops[0], DType::Bool, n, casts),
                _ => ops[0],
            };
            Ok(copy_node(g, n, vec![x]))
        }
        Op::Const(v) => Ok(g.push(Node { op: Op::Const(v.cast(dt)), ..n.clone() })),
        Op::Input(_) | Op::Fill(_) | Op::View(_) => Ok(copy_node(g, n, ops)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::CompileOptions;
    use pyasc_ir::dtype::VType;
    use pyasc_ir::verify::verify;
    use pyasc_ir::{Scalar, Shape};

    fn state(g: Graph) -> CompileState {
        CompileState::new(g, CompileOptions::default())
    }

    #[test]
    fn integer_division_gets_float64_casts() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::I32), Shape(vec![4]));
        let b = g.add_input(VType::strong(DType::I32), Shape(vec![4]));
        let d = g.binary(BinaryOp::Div, a, b, None).unwrap();
        g.outputs.push(d);
        let mut st = state(g);
        PromotePass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        let casts = st.graph.nodes.iter().filter(|n| matches!(n.op, Op::Cast(DType::F64))).count();
        assert_eq!(casts, 2);
    }

    #[test]
    fn bool_arithmetic_becomes_logic_and_int_isnan_a_compare() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::Bool), Shape(vec![4]));
        let i = g.add_input(VType::strong(DType::I64), Shape(vec![4]));
        let s = g.binary(BinaryOp::Add, a, a, None).unwrap();
        let n = g.unary(UnaryOp::IsNan, i, None).unwrap();
        g.outputs.extend([s, n]);
        let mut st = state(g);
        PromotePass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        let ops: Vec<Op> = st.graph.outputs.iter().map(|o| st.graph.node(*o).op).collect();
        assert_eq!(ops, vec![Op::Binary(BinaryOp::Or), Op::Binary(BinaryOp::Ne)]);
    }

    #[test]
    fn negative_integer_power_is_rejected() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::I64), Shape(vec![4]));
        let c = g.py_scalar(Scalar::Int(-1), None);
        let p = g.binary(BinaryOp::Pow, a, c, None).unwrap();
        g.outputs.push(p);
        let err = PromotePass.run(&mut state(g)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "NumPy raises ValueError");
    }
}
