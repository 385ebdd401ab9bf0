//! Result types of ops: NumPy's dtype rules per op family, and broadcasting.
//!
//! Used twice: by the tracer, so that `.dtype` and `.shape` of a traced tensor are
//! known at once, and by the verifier, which re-derives every node's type.

use crate::dtype::{promote_v, DType, VType, WeakKind};
use crate::error::{IrError, Result};
use crate::op::{Axes, BinaryClass, BinaryOp, Op, ReduceOp, UnaryKind, UnaryOp};
use crate::shape::Shape;

/// The result type and shape of `op` applied to operands of the given types and shapes.
/// Leaves (`Input`, `Const`) are typed by whoever creates them and are rejected here, and
/// ops with an attribute (views, library ops) by [`crate::Graph::infer_op`].
pub fn infer(op: &Op, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
    if !op.arity_ok(operands.len()) || op.is_leaf() {
        return Err(IrError::internal(format!("{} takes {} operands, got {}", op.name(), op.arity(), operands.len())));
    }
    if let Op::Reduce { op, axes, keepdims } = op {
        return reduce_type(*op, *axes, *keepdims, operands[0].0, operands[0].1);
    }
    if let Op::View(_) | Op::Library(..) = op {
        return Err(IrError::internal("views and library ops are typed by the graph (Graph::infer_op)"));
    }
    let mut shape = operands[0].1.clone();
    for (_, s) in &operands[1..] {
        shape = shape.broadcast(s)?;
    }
    let vt = match op {
        Op::Unary(u) => unary_type(*u, operands[0].0)?,
        Op::Binary(b) => binary_type(*b, operands[0].0, operands[1].0)?,
        Op::Where => {
            let t = promote_v(operands[1].0, operands[2].0);
            if operands.iter().all(|(v, _)| v.weak.is_some()) {
                t
            } else {
                VType::strong(t.dtype)
            }
        }
        Op::Cast(d) => VType::strong(*d),
        _ => unreachable!("leaves, reductions and library ops are handled above"),
    };
    Ok((vt, shape))
}

/// The result type and shape of a reduction (NumPy's: integer and bool sums and products are
/// int64, arg-reductions int64, any/all bool, max/min keep the dtype).
pub fn reduce_type(op: ReduceOp, axes: Axes, keepdims: bool, x: VType, shape: &Shape) -> Result<(VType, Shape)> {
    let rank = shape.rank();
    if axes.0 & !Axes::all(rank).0 != 0 {
        return Err(IrError::shape(format!("axis out of range for a tensor of rank {rank}")));
    }
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) && axes.0.count_ones() > 1 && axes != Axes::all(rank) {
        return Err(IrError::shape(format!("{} takes one axis or None", op.name())));
    }
    let reduced: usize = axes.list(rank).iter().map(|a| shape.0[*a]).product();
    if op.needs_elements() && reduced == 0 {
        return Err(IrError::shape(format!("zero-size reduction: {} of an empty axis has no identity", op.name())));
    }
    let dims: Vec<usize> =
        (0..rank).filter_map(|i| if axes.contains(i) { keepdims.then_some(1) } else { Some(shape.0[i]) }).collect();
    let dtype = op.result_dtype(x.dtype);
    Ok((VType::strong(dtype), Shape(dims)))
}

/// The result type of a unary op.
pub fn unary_type(u: UnaryOp, x: VType) -> Result<VType> {
    let d = x.dtype;
    let bad = || Err(IrError::dtype(format!("{} is not defined for {} operands", u.name(), d)));
    Ok(match u.kind() {
        UnaryKind::Numeric => match (d, u) {
            // NumPy: abs and maximum keep bools; square, reciprocal and conjugate compute in int8.
            (DType::Bool, UnaryOp::Abs | UnaryOp::Relu) => x,
            (DType::Bool, UnaryOp::Square | UnaryOp::Reciprocal | UnaryOp::Conjugate) => VType::strong(DType::I8),
            (DType::Bool, _) => return bad(),
            _ => x,
        },
        UnaryKind::Bitwise => {
            if d.is_float() {
                return bad();
            }
            x
        }
        UnaryKind::Float => match x.weak {
            // A Python bool is a NumPy bool: float functions of it give float16.
            Some(WeakKind::Bool) => VType::strong(DType::Bool.float_result()),
            Some(_) => VType::weak(WeakKind::Float),
            None => VType::strong(d.float_result()),
        },
        UnaryKind::Rounding => {
            if d.is_int() || d == DType::Bool {
                x
            } else if x.weak.is_some() {
                VType::weak(WeakKind::Float)
            } else {
                VType::strong(d.float_result())
            }
        }
        UnaryKind::Classify => VType::strong(DType::Bool),
    })
}

/// The result type of a binary op.
pub fn binary_type(b: BinaryOp, x: VType, y: VType) -> Result<VType> {
    use BinaryOp::*;
    let t = promote_v(x, y);
    let both_weak = x.weak.is_some() && y.weak.is_some();
    let d = t.dtype;
    let bad = |why: &str| {
        Err(IrError::dtype(format!("{} is not defined for {} and {} operands{why}", b.name(), x.dtype, y.dtype)))
    };
    if b.class() == BinaryClass::Integer && !d.is_int() {
        return bad("");
    }
    Ok(match b {
        // The exponent does not take part: a float mantissa keeps its dtype.
        Ldexp if x.dtype.is_float() && !y.dtype.is_float() => x,
        _ if b.class() == BinaryClass::Float => {
            if d.is_float() {
                t
            } else if both_weak {
                VType::weak(WeakKind::Float)
            } else if x.weak.is_none() && y.weak.is_none() {
                // NumPy's first loop that both operands cast to safely: float16 for bools and 8-bit
                // integers, float32 for 16-bit ones, whatever their promoted integer dtype
                // (`uint8` with `int8` is float16, `int16` with `uint16` float32).
                VType::strong(crate::dtype::promote(x.dtype.float_result(), y.dtype.float_result()))
            } else {
                VType::strong(d.float_result())
            }
        }
        Div => {
            if d.is_float() {
                t
            } else if both_weak {
                VType::weak(WeakKind::Float)
            } else {
                VType::strong(DType::F64)
            }
        }
        Eq | Ne | Lt | Le | Gt | Ge => VType::strong(DType::Bool),
        And | Or | Xor => {
            if d.is_float() {
                return bad("");
            }
            t
        }
        Sub if d == DType::Bool => return bad("; use ^ or logical_xor for booleans"),
        FloorDiv | Mod | Pow | Fmod if d == DType::Bool => return bad(""),
        _ => t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[usize]) -> Shape {
        Shape(v.to_vec())
    }

    #[test]
    fn float_functions_promote_integers_to_float64() {
        let i32a = VType::strong(DType::I32);
        let (t, _) = infer(&Op::Unary(UnaryOp::Exp), &[(i32a, &s(&[3]))]).unwrap();
        assert_eq!(t.dtype, DType::F64);
        let f32a = VType::strong(DType::F32);
        let (t, _) = infer(&Op::Unary(UnaryOp::Exp), &[(f32a, &s(&[3]))]).unwrap();
        assert_eq!(t.dtype, DType::F32);
    }

    #[test]
    fn true_division_of_integers_is_float64() {
        let i = VType::strong(DType::I64);
        let (t, sh) = infer(&Op::Binary(BinaryOp::Div), &[(i, &s(&[2, 1])), (i, &s(&[3]))]).unwrap();
        assert_eq!(t.dtype, DType::F64);
        assert_eq!(sh, s(&[2, 3]));
    }

    #[test]
    fn bad_operands_are_dtype_errors() {
        let b = VType::strong(DType::Bool);
        let f = VType::strong(DType::F32);
        let e = infer(&Op::Binary(BinaryOp::Sub), &[(b, &s(&[])), (b, &s(&[]))]).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::DType);
        assert!(infer(&Op::Binary(BinaryOp::And), &[(f, &s(&[])), (f, &s(&[]))]).is_err());
        // NumPy computes float functions of bools in float16.
        assert_eq!(infer(&Op::Unary(UnaryOp::Exp), &[(b, &s(&[]))]).unwrap().0.dtype, DType::F16);
        let e = infer(&Op::Binary(BinaryOp::Add), &[(f, &s(&[3])), (f, &s(&[4]))]).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Shape);
    }

    #[test]
    fn reductions_follow_numpy_types_and_shapes() {
        let i32a = VType::strong(DType::I32);
        let f32a = VType::strong(DType::F32);
        let sh = s(&[2, 3, 4]);
        let r = |op, axes, keep, t| reduce_type(op, Axes(axes), keep, t, &sh);
        assert_eq!(r(ReduceOp::Sum, 0b100, false, i32a).unwrap(), (VType::strong(DType::I64), s(&[2, 3])));
        assert_eq!(r(ReduceOp::Max, 0b010, true, f32a).unwrap(), (f32a, s(&[2, 1, 4])));
        assert_eq!(r(ReduceOp::ArgMax, 0b111, false, f32a).unwrap(), (VType::strong(DType::I64), s(&[])));
        assert_eq!(r(ReduceOp::Any, 0b001, false, f32a).unwrap().0.dtype, DType::Bool);
        assert!(r(ReduceOp::ArgMin, 0b011, false, f32a).is_err());
        assert!(r(ReduceOp::Sum, 0b1000, false, f32a).is_err());
        let empty = s(&[0, 3]);
        assert!(reduce_type(ReduceOp::Max, Axes(1), false, f32a, &empty).is_err());
        assert_eq!(reduce_type(ReduceOp::Sum, Axes(1), false, f32a, &empty).unwrap().1, s(&[3]));
        assert!(Axes(0b110).is_trailing(3) && !Axes(0b010).is_trailing(3) && Axes(0).is_trailing(3));
    }

    #[test]
    fn comparisons_return_bool_and_where_promotes_branches() {
        let f = VType::strong(DType::F32);
        let i = VType::strong(DType::I64);
        let (t, _) = infer(&Op::Binary(BinaryOp::Lt), &[(f, &s(&[2])), (i, &s(&[2]))]).unwrap();
        assert_eq!(t.dtype, DType::Bool);
        let c = VType::strong(DType::Bool);
        let w = VType::weak(WeakKind::Float);
        let (t, _) = infer(&Op::Where, &[(c, &s(&[2])), (f, &s(&[2])), (w, &s(&[]))]).unwrap();
        assert_eq!(t, VType::strong(DType::F32));
    }
}
