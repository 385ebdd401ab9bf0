//! Gradients of the ops that are not table rows or library kernels: `where`, casts,
//! reductions and views (movement ops).

use super::{no_rule, Builder};
use crate::attr::Attr;
use crate::error::Result;
use crate::graph::NodeId;
use crate::op::{BinaryOp, Op, ReduceOp};
use crate::shape::Shape;
use crate::view::{PadMode, PadSpec, SliceDim, ViewSpec};

/// The cotangent contribution of `node` (cotangent `g`) to each of its operands.
pub fn rule(b: &mut Builder<'_>, node: NodeId, g: NodeId) -> Result<Vec<Option<NodeId>>> {
    let n = b.g.node(node).clone();
    match n.op {
        Op::Where => {
            let (c, x, z) = (n.inputs[0], n.inputs[1], n.inputs[2]);
            let zero = b.c(0.0);
            let to_x = if b.dtype(x).is_float() { Some(b.select(c, g, zero)?) } else { None };
            let to_z = if b.dtype(z).is_float() { Some(b.select(c, zero, g)?) } else { None };
            Ok(vec![None, to_x, to_z])
        }
        Op::Cast(_) => {
            let x = n.inputs[0];
            Ok(vec![if b.dtype(x).is_float() { Some(b.cast(g, b.dtype(x))?) } else { None }])
        }
        Op::Reduce { op, axes, .. } => {
            let x = n.inputs[0];
            let full = b.shape(x);
            let gx = b.unreduce(g, &full, axes)?;
            Ok(vec![match op {
                ReduceOp::Sum => Some(gx),
                ReduceOp::Max | ReduceOp::Min => {
                    // JAX's rule: the cotangent is shared evenly among the elements equal
                    // to the result.
                    let y = b.unreduce(node, &full, axes)?;
                    let at = b.bin(BinaryOp::Eq, x, y)?;
                    let at = b.cast(at, b.dtype(x))?;
                    let count = b.reduce(ReduceOp::Sum, at, &axes.list(full.rank()), true)?;
                    let share = b.div(at, count)?;
                    Some(b.mul(gx, share)?)
                }
                ReduceOp::Prod => {
                    let y = b.unreduce(node, &full, axes)?;
                    let q = b.div(y, x)?;
                    Some(b.mul(gx, q)?)
                }
                ReduceOp::ArgMax | ReduceOp::ArgMin | ReduceOp::Any | ReduceOp::All => None,
            }])
        }
        Op::View(a) => {
            let Attr::View(spec) = b.g.attr(a)?.clone() else {
                return Err(no_rule("a view without its attribute"));
            };
            let x = n.inputs[0];
            Ok(vec![Some(view(b, &spec, &b.shape(x), g)?)])
        }
        Op::Input(_) | Op::Const(_) | Op::Fill(_) => Ok(vec![]),
        Op::Unary(_) | Op::Binary(_) | Op::Library(..) => Err(no_rule("this op")),
    }
}

/// The cotangent of a view's operand (shape `xs`) from the view's cotangent `g`.
pub(crate) fn view(b: &mut Builder<'_>, spec: &ViewSpec, xs: &Shape, g: NodeId) -> Result<NodeId> {
    match spec {
        ViewSpec::Transpose(perm) => {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            b.view(ViewSpec::Transpose(inv), g)
        }
        ViewSpec::Reshape(_) => b.reshape(g, xs),
        ViewSpec::BroadcastTo(_) => b.sum_to(g, xs),
        ViewSpec::Slice(dims) => {
            let mut cur = g;
            for (axis, d) in dims.iter().enumerate() {
                cur = unslice(b, cur, axis, d, xs.0[axis])?;
            }
            Ok(cur)
        }
    }
}

/// Scatter the cotangent `g` of `x[.., start::step][:len]` along `axis` back into zeros of
/// extent `dim`: reverse a negative step, spread a step `s` by padding each element with
/// `s - 1` zeros, then pad the ends.
fn unslice(b: &mut Builder<'_>, g: NodeId, axis: usize, d: &SliceDim, dim: usize) -> Result<NodeId> {
    let rank = b.shape(g).rank();
    if d.len == 0 {
        let mut s = b.shape(g);
        s.0[axis] = dim;
        return Ok(b.zeros(b.dtype(g), s));
    }
    if d.step == 1 && d.start == 0 && d.len == dim {
        return Ok(g);
    }
    let step = d.step.unsigned_abs();
    let mut cur = g;
    // The lowest index taken, with the elements in increasing index order.
    let low = if d.step < 0 {
        cur = b.flip(cur, axis)?;
        d.start - (d.len - 1) * step
    } else {
        d.start
    };
    if step > 1 {
        // (.., len, ..) -> (.., len, 1, ..) -> pad to (.., len, step, ..) -> (.., len * step, ..)
        let shape = b.shape(cur);
        let mut split = shape.0.clone();
        split.insert(axis + 1, 1);
        cur = b.reshape(cur, &Shape(split))?;
        let mut widths = vec![(0, 0); rank + 1];
        widths[axis + 1] = (0, step - 1);
        cur = pad_zeros(b, cur, widths)?;
        let mut merged = shape.0.clone();
        merged[axis] = d.len * step;
        cur = b.reshape(cur, &Shape(merged))?;
        let taken = (d.len - 1) * step + 1;
        cur = b.slice_axis(cur, axis, SliceDim { start: 0, step: 1, len: taken })?;
    }
    let taken = (d.len - 1) * step + 1;
    let mut widths = vec![(0, 0); rank];
    widths[axis] = (low, dim - low - taken);
    if widths[axis] == (0, 0) {
        return Ok(cur);
    }
    pad_zeros(b, cur, widths)
}

/// `np.pad` of `x` with zeros.
pub fn pad_zeros(b: &mut Builder<'_>, x: NodeId, widths: Vec<(usize, usize)>) -> Result<NodeId> {
    let spec = PadSpec { widths, mode: PadMode::Constant, cval: crate::Scalar::Float(0.0) };
    b.g.pad(spec, x, b.loc.clone())
}
