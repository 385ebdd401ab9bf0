//! Constant folding and algebraic identities.
//!
//! Needs: promoted operands (see `promote`). Guarantees: no elementwise node has only
//! constant or fill operands (it became a constant, or a fill of its shape, computed with NumPy's semantics for its
//! dtype: wrapping integers, Python floor division and modulo, IEEE floats rounded to
//! the node's dtype); `x*1`, `1*x`, `x/1`, `x-0`, `x**1` become `x` and `x**2` becomes
//! `square(x)` when that keeps the node's dtype and shape (the 1 or 0 a constant or an array
//! filled with it, as the ones a gradient starts from). `x+0` is kept: it turns -0.0 into
//! +0.0.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, rebuild};
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryClass, BinaryOp, Op, UnaryKind, UnaryOp};
use pyasc_ir::{DType, Graph, Node, NodeId, Scalar};

/// Folds constant subexpressions and removes identity operations.
pub struct FoldPass;

impl Pass for FoldPass {
    fn name(&self) -> &'static str {
        "fold"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let (mut folded, mut simplified) = (0usize, 0usize);
        st.graph = rebuild(&st.graph, |g, n, ops| {
            if let Op::Reduce { op, axes, .. } = n.op {
                // A reduction over an empty extent is its identity, filling the result.
                let shape = &g.node(ops[0]).shape;
                if axes.list(shape.rank()).iter().any(|a| shape.0[*a] == 0) {
                    let v = Scalar::Int(op.identity().unwrap_or(0));
                    folded += 1;
                    return Ok(g.fill(v, n.dtype(), n.shape.clone(), n.loc.clone()));
                }
            }
            if let Op::View(_) = n.op {
                // A view of a constant is the constant in the view's shape.
                if let Op::Const(v) | Op::Fill(v) = g.node(ops[0]).op {
                    folded += 1;
                    return Ok(g.fill(v, n.dtype(), n.shape.clone(), n.loc.clone()));
                }
            }
            if n.op.is_elementwise() {
                let consts: Option<Vec<Scalar>> = ops
                    .iter()
                    .map(|o| match g.node(*o).op {
                        Op::Const(v) | Op::Fill(v) => Some(v),
                        _ => None,
                    })
                    .collect();
                if let Some(vals) = consts {
                    let operand_dtype = g.node(ops[0]).dtype();
                    if let Some(v) = eval(&n.op, &vals, operand_dtype, n.dtype()) {
                        folded += 1;
                        // An operand filling an array makes the result fill the node's shape.
                        let filled = ops.iter().any(|o| matches!(g.node(*o).op, Op::Fill(_)));
                        return Ok(if filled {
                            g.fill(v, n.dtype(), n.shape.clone(), n.loc.clone())
                        } else {
                            g.constant(v, n.vtype, n.loc.clone())
                        });
                    }
                }
                if let Some(id) = simplify(g, n, &ops) {
                    simplified += 1;
                    return Ok(id);
                }
            }
            Ok(copy_node(g, n, ops))
        })?;
        if folded + simplified > 0 {
            st.notes.push(format!("folded {folded} constant nodes, removed {simplified} identities"));
        }
        Ok(())
    }
}

/// True for a constant, or an array filled with one value (a gradient's ones), equal to `x`.
fn is_const(g: &Graph, id: NodeId, x: f64) -> bool {
    matches!(g.node(id).op, Op::Const(v) | Op::Fill(v) if !matches!(v, Scalar::Bool(_)) && v.as_f64() == x)
}

fn simplify(g: &mut Graph, n: &Node, ops: &[NodeId]) -> Option<NodeId> {
    let Op::Binary(b) = n.op else { return None };
    let keeps = |g: &Graph, x: NodeId| g.node(x).dtype() == n.dtype() && g.node(x).shape == n.shape;
    let (a, c) = (ops[0], ops[1]);
    match b {
        BinaryOp::Mul if is_const(g, c, 1.0) && keeps(g, a) => Some(a),
        BinaryOp::Mul if is_const(g, a, 1.0) && keeps(g, c) => Some(c),
        BinaryOp::Div | BinaryOp::Pow if is_const(g, c, 1.0) && keeps(g, a) => Some(a),
        BinaryOp::Sub if is_const(g, c, 0.0) && keeps(g, a) => Some(a),
        BinaryOp::Pow if is_const(g, c, 2.0) && keeps(g, a) => {
            Some(g.push(Node { op: Op::Unary(UnaryOp::Square), inputs: vec![a], ..n.clone() }))
        }
        _ => None,
    }
}

/// Evaluate an elementwise op on constants; `None` when it cannot be folded exactly.
pub fn eval(op: &Op, v: &[Scalar], operand: DType, result: DType) -> Option<Scalar> {
    Some(match *op {
        Op::Cast(to) => v[0].cast_from(operand, to),
        Op::Where => {
            if v[0].as_bool() {
                v[1].cast(result)
            } else {
                v[2].cast(result)
            }
        }
        Op::Unary(u) => eval_unary(u, v[0], operand)?.cast(result),
        Op::Binary(b) => eval_binary(b, v[0], v[1], operand)?.cast(result),
        // Only elementwise ops are folded.
        _ => return None,
    })
}

fn eval_unary(u: UnaryOp, x: Scalar, dt: DType) -> Option<Scalar> {
    // uint64 values are held by their bits: fold only ops whose bits are int64's.
    if dt == DType::U64 && !matches!(u, UnaryOp::Neg | UnaryOp::Square | UnaryOp::Not | UnaryOp::Positive) {
        return None;
    }
    if dt.is_float() {
        let r = u.eval_f64(x.as_f64());
        return Some(match u.kind() {
            UnaryKind::Classify => Scalar::Bool(r != 0.0),
            _ => Scalar::Float(r),
        });
    }
    if dt == DType::Bool {
        let b = x.as_bool();
        return match u {
            UnaryOp::Not => Some(Scalar::Bool(!b)),
            UnaryOp::Abs | UnaryOp::Square => Some(Scalar::Bool(b)),
            _ => None,
        };
    }
    if u == UnaryOp::Reciprocal && x.as_i64() == 0 {
        // As the kernels: the register dtype's MIN, which narrower dtypes wrap to 0.
        return Some(Scalar::Int(if dt.compute() == DType::I32 { i32::MIN.into() } else { i64::MIN }));
    }
    Some(Scalar::Int(u.eval_i64(x.as_i64())?))
}

fn eval_binary(b: BinaryOp, x: Scalar, y: Scalar, dt: DType) -> Option<Scalar> {
    let compare = b.class() == BinaryClass::Compare;
    if dt.is_float() {
        let round = |v: f64| if dt == DType::F32 { v as f32 as f64 } else { v };
        let r = b.eval_f64(round(x.as_f64()), round(y.as_f64()))?;
        return Some(if compare { Scalar::Bool(r != 0.0) } else { Scalar::Float(r) });
    }
    let same_bits = matches!(
        b,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor
            | BinaryOp::Eq
            | BinaryOp::Ne
    );
    if dt == DType::U64 && !same_bits {
        return None;
    }
    let r = b.eval_i64(x.as_i64(), y.as_i64())?;
    Some(if compare || dt == DType::Bool { Scalar::Bool(r != 0) } else { Scalar::Int(r) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::CompileOptions;
    use pyasc_ir::dtype::VType;
    use pyasc_ir::op_table::{py_floordiv, py_mod};
    use pyasc_ir::Shape;

    #[test]
    fn folds_constant_chains_with_dtype_rounding() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![2]));
        let a = g.constant(Scalar::Float(0.1), VType::strong(DType::F32), None);
        let b = g.constant(Scalar::Float(0.2), VType::strong(DType::F32), None);
        let s = g.binary(BinaryOp::Add, a, b, None).unwrap();
        let y = g.binary(BinaryOp::Mul, x, s, None).unwrap();
        g.outputs.push(y);
        let mut st = CompileState::new(g, CompileOptions::default());
        FoldPass.run(&mut st).unwrap();
        crate::dce::DcePass.run(&mut st).unwrap();
        let consts: Vec<f64> = st
            .graph
            .nodes
            .iter()
            .filter_map(|n| match n.op {
                Op::Const(v) => Some(v.as_f64()),
                _ => None,
            })
            .collect();
        assert_eq!(consts, vec![(0.1f32 + 0.2f32) as f64]);
    }

    #[test]
    fn integer_semantics_follow_python() {
        let i = |v| Scalar::Int(v);
        let e = |b, x, y| eval_binary(b, i(x), i(y), DType::I64).unwrap().as_i64();
        assert_eq!(e(BinaryOp::FloorDiv, -7, 2), -4);
        assert_eq!(e(BinaryOp::Mod, -7, 2), 1);
        assert_eq!(e(BinaryOp::Mod, 7, -2), -1);
        assert_eq!(e(BinaryOp::FloorDiv, 7, 0), 0);
        assert_eq!(e(BinaryOp::Add, i64::MAX, 1), i64::MIN);
        assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
        assert_eq!(py_mod(-7.0, 2.0), 1.0);
        assert!(py_mod(1.0, 0.0).is_nan());
    }
}
