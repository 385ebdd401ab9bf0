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
//!
//! Narrow integers compute in a wider register dtype ([`DType::compute`]: int8, int16,
//! uint8 and uint16 in int32, uint32 in int64): an op on them reads its operands widened and
//! its result is cast back, which wraps it exactly as NumPy's narrow loops do; uint64 keeps
//! its own kernels. A Python int meeting an integer array must fit the array's dtype in
//! arithmetic (an `Overflow` error for a constant; a bound on the argument, checked at each
//! call, for a Python int argument); comparisons with one outside the dtype give the
//! mathematically right answer.

use crate::int_bounds::IntExpr;
use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, rebuild};
use pyasc_ir::dtype::{promote_v, VType, WeakKind};
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
        let mut cx = Cx { casts: 0, casts_removed: 0, bounds: Vec::new() };
        let mut graph = rebuild(&st.graph, |g, n, ops| rewrite(g, n, ops, &mut cx))?;
        half_results(&st.graph, &mut graph, &mut cx);
        st.graph = graph;
        if cx.casts > 0 {
            st.notes.push(format!("inserted {} casts", cx.casts));
        }
        if cx.casts_removed > 0 {
            st.notes.push(format!("removed {} casts that cancel", cx.casts_removed));
        }
        for b in cx.bounds {
            if !st.int_bounds.iter().any(|(e, dt, _)| (e, dt) == (&b.0, &b.1)) {
                st.notes.push(format!("{} must fit in {}", b.0, b.1));
                st.int_bounds.push(b);
            }
        }
        Ok(())
    }
}

/// What the rewrite collects.
struct Cx {
    casts: usize,
    /// Casts of exact widenings folded into the cast after them.
    casts_removed: usize,
    /// Python ints computed from the arguments and the integer dtype each must fit in.
    bounds: Vec<(IntExpr, DType, Option<pyasc_ir::error::SourceLoc>)>,
}

fn cast_to(g: &mut Graph, x: NodeId, to: DType, n: &Node, cx: &mut Cx) -> NodeId {
    if g.node(x).dtype() == to {
        return x;
    }
    cx.casts += 1;
    let shape = g.node(x).shape.clone();
    g.push(Node { op: Op::Cast(to), inputs: vec![x], vtype: VType::strong(to), shape, loc: n.loc.clone() })
}

/// Push `n` computing in `compute` over `inputs`, cast back to `n`'s dtype (a 16-bit float
/// stays in float32 until it is stored: [`half_results`]).
fn widened(g: &mut Graph, n: &Node, op: Op, inputs: Vec<NodeId>, compute: DType, cx: &mut Cx) -> NodeId {
    let dt = n.dtype();
    if compute == dt || dt.is_half() {
        return g.push(Node { op, inputs, vtype: VType { dtype: compute, ..n.vtype }, ..n.clone() });
    }
    let id = g.push(Node { op, inputs, vtype: VType::strong(compute), ..n.clone() });
    cast_to(g, id, dt, n, cx)
}

/// A Python int operand: its value when it is a constant, else how to compute it from the
/// arguments.
enum WeakInt {
    Const(i128),
    Computed(IntExpr),
}

fn weak_int(g: &Graph, x: NodeId) -> Option<WeakInt> {
    let node = g.node(x);
    if node.vtype.weak != Some(WeakKind::Int) {
        return None;
    }
    match node.op {
        Op::Const(v) => v.int_value(node.dtype()).map(WeakInt::Const),
        _ => IntExpr::of(g, x).map(WeakInt::Computed),
    }
}

/// Python ints combined with an integer array in arithmetic must fit its dtype `dt`, as in
/// NumPy 2: a constant outside raises, an argument gets a bound checked at each call.
fn check_fits(g: &Graph, operands: &[NodeId], dt: DType, n: &Node, cx: &mut Cx) -> Result<()> {
    if n.vtype.weak.is_some() {
        return Ok(()); // Python ints among themselves: checked where they meet an array
    }
    let range = dt.int_range().filter(|_| dt.is_int());
    for &x in operands {
        match (weak_int(g, x), range) {
            (Some(WeakInt::Const(v)), Some((lo, hi))) if v < lo || v > hi => {
                return Err(IrError::new(ErrorKind::Overflow, format!("Python integer {v} out of bounds for {dt}"))
                    .at(n.loc.as_ref()));
            }
            // A plain argument is an int64 value (uint64 above int64's range): it needs a
            // check only against other integer dtypes. A computed one always: Python computes
            // it exactly (`s + 1` may leave int64 even beside a float array).
            (Some(WeakInt::Computed(e)), _) if e.arg().is_none() || (range.is_some() && dt != g.node(x).dtype()) => {
                cx.bounds.push((e, dt, n.loc.clone()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// 16-bit float values are computed in float32 and rounded once where they are stored: each
/// result of `old` traced as float16 or bfloat16 gets its cast back in `new`.
fn half_results(old: &Graph, new: &mut Graph, cx: &mut Cx) {
    for i in 0..new.outputs.len() {
        let (was, o) = (old.node(old.outputs[i]), new.outputs[i]);
        if was.dtype().is_half() && new.node(o).dtype() != was.dtype() {
            new.outputs[i] = cast_to(new, o, was.dtype(), was, cx);
        }
    }
}

/// A 16-bit float operand read in float32 (its conversion happens once, at the load).
fn widen_half(g: &mut Graph, x: NodeId, n: &Node, cx: &mut Cx) -> NodeId {
    let d = g.node(x).dtype();
    if d.is_half() {
        cast_to(g, x, DType::F32, n, cx)
    } else {
        x
    }
}

fn rewrite(g: &mut Graph, n: &Node, ops: Vec<NodeId>, cx: &mut Cx) -> Result<NodeId> {
    let dt = n.dtype();
    let bool_result = dt == DType::Bool;
    match n.op {
        Op::Unary(UnaryOp::Spacing) | Op::Binary(BinaryOp::NextAfter) if dt.is_half() => {
            // Their value depends on the storage precision, which float32 lanes do not have.
            Err(IrError::new(ErrorKind::Unsupported, format!("{} of {dt} is not computed yet", n.op.name()))
                .at(n.loc.as_ref()))
        }
        Op::Unary(u) => {
            let x = ops[0];
            let xd = g.node(x).dtype();
            match u.kind() {
                UnaryKind::Rounding if !xd.is_float() => return Ok(x),
                // maximum(b, False) of a bool is the bool itself.
                UnaryKind::Numeric if u == UnaryOp::Relu && xd == DType::Bool => return Ok(x),
                UnaryKind::Classify if !xd.is_float() && u == UnaryOp::SignBit => {
                    let zero = g.constant(Scalar::Int(0), VType::strong(xd), n.loc.clone());
                    return g.apply(Op::Binary(BinaryOp::Lt), &[x, zero], n.loc.clone());
                }
                UnaryKind::Classify if !xd.is_float() => {
                    let cmp = if u == UnaryOp::IsFinite { BinaryOp::Eq } else { BinaryOp::Ne };
                    return g.apply(Op::Binary(cmp), &[x, x], n.loc.clone());
                }
                UnaryKind::Classify => {
                    let x = widen_half(g, x, n, cx);
                    return Ok(copy_node(g, n, vec![x]));
                }
                _ => {}
            }
            let compute = dt.compute();
            let x = cast_to(g, x, compute, n, cx);
            Ok(widened(g, n, n.op, vec![x], compute, cx))
        }
        Op::Binary(b) if b.is_compare() => compare(g, n, b, ops[0], ops[1], cx),
        Op::Binary(b) => {
            let (a, c) = (ops[0], ops[1]);
            if b == BinaryOp::Pow && dt.is_int() {
                if let Op::Const(v) = g.node(c).op {
                    if v.int_value(g.node(c).dtype()).is_some_and(|v| v < 0) {
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
            check_fits(g, &[a, c], dt, n, cx)?;
            let compute = dt.compute();
            let a = cast_to(g, a, compute, n, cx);
            let c = cast_to(g, c, compute, n, cx);
            let op = match b {
                BinaryOp::Add | BinaryOp::Max | BinaryOp::Fmax if bool_result => BinaryOp::Or,
                BinaryOp::Mul | BinaryOp::Min | BinaryOp::Fmin if bool_result => BinaryOp::And,
                other => other,
            };
            Ok(widened(g, n, Op::Binary(op), vec![a, c], compute, cx))
        }
        Op::Where => {
            // NumPy's `where` casts a Python int branch without a range check (it wraps).
            let compute = dt.compute();
            let cond = cast_to(g, ops[0], DType::Bool, n, cx);
            let a = cast_to(g, ops[1], compute, n, cx);
            let b = cast_to(g, ops[2], compute, n, cx);
            Ok(widened(g, n, Op::Where, vec![cond, a, b], compute, cx))
        }
        Op::Cast(to) => {
            // A cast of an exact widening casts the original: `x.astype(f32).astype(f16)` of
            // a float16 `x` is `x` itself.
            let src = match g.node(ops[0]) {
                Node { op: Op::Cast(mid), inputs, .. } if g.node(inputs[0]).dtype().fits_exactly_in(*mid) => {
                    cx.casts_removed += 1;
                    inputs[0]
                }
                _ => ops[0],
            };
            let ops = vec![src];
            let from = g.node(ops[0]).dtype();
            if from == to {
                Ok(ops[0])
            } else if (from.is_half() && !to.is_float()) || (to.is_half() && !from.is_float()) {
                // 16-bit floats convert to and from floats only: other dtypes go through float32
                // (exact: every value a 16-bit float holds is a float32, and an integer beyond
                // float32's exact range is beyond float16's too).
                let x = cast_to(g, ops[0], DType::F32, n, cx);
                Ok(cast_to(g, x, to, n, cx))
            } else {
                Ok(copy_node(g, n, ops))
            }
        }
        Op::Library(id, _) => {
            // Each operand in the dtype the routine computes in; routines over 16-bit floats run
            // on float32 values (rounded where stored), or read 16-bit operands of the result's
            // dtype directly when they can (`reads_half`: a float32 result all the same).
            let lib = id.op()?;
            let compute = if dt.is_half() { DType::F32 } else { dt };
            let operands_in = if dt.is_half() && lib.reads_half() { dt } else { compute };
            let ops: Vec<NodeId> = ops
                .iter()
                .enumerate()
                .map(|(i, x)| match lib.operand_dtype(i, operands_in) {
                    Some(to) => cast_to(g, *x, to, n, cx),
                    None => widen_half(g, *x, n, cx),
                })
                .collect();
            Ok(g.push(Node { inputs: ops, vtype: VType { dtype: compute, ..n.vtype }, ..n.clone() }))
        }
        Op::Reduce { op, .. } => {
            // Sums and products accumulate in the result dtype (int64 for signed integers and
            // bools, uint64 for unsigned ones); any/all look at truth values; the others run
            // in the operand's register dtype.
            match op {
                ReduceOp::Sum | ReduceOp::Prod if dt.is_half() => {
                    // float32 accumulation.
                    let x = cast_to(g, ops[0], DType::F32, n, cx);
                    Ok(g.push(Node { inputs: vec![x], vtype: VType { dtype: DType::F32, ..n.vtype }, ..n.clone() }))
                }
                ReduceOp::Sum | ReduceOp::Prod => {
                    let x = cast_to(g, ops[0], dt, n, cx);
                    Ok(copy_node(g, n, vec![x]))
                }
                ReduceOp::Any | ReduceOp::All => {
                    let x = cast_to(g, ops[0], DType::Bool, n, cx);
                    Ok(copy_node(g, n, vec![x]))
                }
                ReduceOp::ArgMax | ReduceOp::ArgMin => {
                    let compute = g.node(ops[0]).dtype().compute();
                    let x = cast_to(g, ops[0], compute, n, cx);
                    Ok(copy_node(g, n, vec![x]))
                }
                ReduceOp::Max | ReduceOp::Min => {
                    let compute = dt.compute();
                    let x = cast_to(g, ops[0], compute, n, cx);
                    Ok(widened(g, n, n.op, vec![x], compute, cx))
                }
            }
        }
        Op::Const(v) => Ok(g.push(Node { op: Op::Const(v.cast(dt)), ..n.clone() })),
        // A view of a 16-bit value computed in float32 views the float32 value.
        Op::View(_) if dt.is_half() && ops.first().is_some_and(|x| g.node(*x).dtype() == DType::F32) => {
            Ok(g.push(Node { inputs: ops, vtype: VType { dtype: DType::F32, ..n.vtype }, ..n.clone() }))
        }
        Op::Input(_) | Op::Fill(_) | Op::View(_) => Ok(copy_node(g, n, ops)),
    }
}

/// A comparison, computed in the operands' promoted register dtype. A Python int constant
/// outside the other operand's integer dtype compares by its true value: the result is the
/// same for every element. A Python int argument meeting a narrower integer dtype compares
/// in int64 (or, above int64's range, as a constant); one meeting uint64 compares as
/// uint64 where it is not negative.
fn compare(g: &mut Graph, n: &Node, b: BinaryOp, a: NodeId, c: NodeId, cx: &mut Cx) -> Result<NodeId> {
    let promoted = promote_v(g.node(a).vtype, g.node(c).vtype).dtype;
    let mut compute = promoted.compute();
    if let Some((lo, hi)) = promoted.int_range().filter(|_| promoted.is_int()) {
        for (w, other, left) in [(a, c, true), (c, a, false)] {
            match weak_int(g, w) {
                Some(WeakInt::Const(v)) if v < lo || v > hi => {
                    // The array holds values all below (`v > hi`) or all above the constant.
                    let below = v > hi;
                    let other = cast_to(g, other, compute, n, cx);
                    let truth = constant_truth(b, below, left);
                    let op = if truth { BinaryOp::Eq } else { BinaryOp::Ne };
                    return Ok(g.push(Node { op: Op::Binary(op), inputs: vec![other, other], ..n.clone() }));
                }
                // A Python int argument above int64's range (held as uint64) is above every
                // element of a signed or narrower array, and a uint64 value beside uint64.
                Some(WeakInt::Computed(e)) if e.arg().is_some() && g.node(w).dtype() == DType::U64 => {
                    if promoted == DType::U64 {
                        compute = DType::U64;
                    } else {
                        let other = cast_to(g, other, compute, n, cx);
                        let op = if constant_truth(b, true, left) { BinaryOp::Eq } else { BinaryOp::Ne };
                        return Ok(g.push(Node { op: Op::Binary(op), inputs: vec![other, other], ..n.clone() }));
                    }
                }
                Some(WeakInt::Computed(_)) if promoted != DType::U64 => compute = DType::I64,
                Some(WeakInt::Computed(_)) => {
                    // A negative argument is below every uint64: the comparison is constant
                    // there; elsewhere both are uint64 values.
                    let zero = g.constant(Scalar::Int(0), VType::strong(DType::I64), n.loc.clone());
                    let neg = g.apply(Op::Binary(BinaryOp::Lt), &[w, zero], n.loc.clone())?;
                    let truth = constant_truth(b, false, left);
                    let k = g.constant(Scalar::Bool(truth), VType::strong(DType::Bool), n.loc.clone());
                    let wu = cast_to(g, w, DType::U64, n, cx);
                    let other = cast_to(g, other, DType::U64, n, cx);
                    let inputs = if left { vec![wu, other] } else { vec![other, wu] };
                    let cmp = g.push(Node { op: Op::Binary(b), inputs, ..n.clone() });
                    return Ok(g.push(Node { op: Op::Where, inputs: vec![neg, k, cmp], ..n.clone() }));
                }
                _ => {}
            }
        }
    }
    let a = cast_to(g, a, compute, n, cx);
    let c = cast_to(g, c, compute, n, cx);
    Ok(g.push(Node { op: Op::Binary(b), inputs: vec![a, c], ..n.clone() }))
}

/// The value of `x op w` (or `w op x` when `left`) for every element `x` of an integer array
/// and a Python int `w` outside its range; `below`: every element is below `w`.
fn constant_truth(b: BinaryOp, below: bool, left: bool) -> bool {
    // Normalise to `x op w`.
    let op = if left {
        match b {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::Le => BinaryOp::Ge,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::Ge => BinaryOp::Le,
            other => other,
        }
    } else {
        b
    };
    match op {
        BinaryOp::Eq => false,
        BinaryOp::Ne => true,
        BinaryOp::Lt | BinaryOp::Le => below,
        _ => !below,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int_bounds::Step;
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
    fn narrow_integers_compute_widened_and_wrap_back() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::I8), Shape(vec![4]));
        let u = g.add_input(VType::strong(DType::U32), Shape(vec![4]));
        let s = g.binary(BinaryOp::Mul, a, a, None).unwrap();
        let t = g.binary(BinaryOp::Add, u, u, None).unwrap();
        g.outputs.extend([s, t]);
        let mut st = state(g);
        PromotePass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        let ops: Vec<Op> = st.graph.outputs.iter().map(|o| st.graph.node(*o).op).collect();
        assert_eq!(ops, vec![Op::Cast(DType::I8), Op::Cast(DType::U32)]);
        let computes: Vec<DType> =
            st.graph.nodes.iter().filter(|n| matches!(n.op, Op::Binary(_))).map(|n| n.dtype()).collect();
        assert_eq!(computes, vec![DType::I32, DType::I64]);
    }

    #[test]
    fn python_ints_outside_the_dtype_overflow_in_arithmetic_and_compare_exactly() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::I8), Shape(vec![4]));
        let c = g.py_scalar(Scalar::Int(300), None);
        let s = g.binary(BinaryOp::Add, a, c, None).unwrap();
        g.outputs.push(s);
        let err = PromotePass.run(&mut state(g)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Overflow);
        assert!(err.message.contains("300") && err.message.contains("int8"), "{}", err.message);

        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::U8), Shape(vec![4]));
        let c = g.py_scalar(Scalar::Int(-1), None);
        let lt = g.binary(BinaryOp::Lt, a, c, None).unwrap();
        let gt = g.binary(BinaryOp::Gt, a, c, None).unwrap();
        g.outputs.extend([lt, gt]);
        let mut st = state(g);
        PromotePass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        let ops: Vec<Op> = st.graph.outputs.iter().map(|o| st.graph.node(*o).op).collect();
        // `x < -1` is never true for uint8 (x != x), `x > -1` always (x == x).
        assert_eq!(ops, vec![Op::Binary(BinaryOp::Ne), Op::Binary(BinaryOp::Eq)]);
    }

    #[test]
    fn python_int_arguments_get_bounds() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::U16), Shape(vec![4]));
        let w = g.add_input(VType::weak(WeakKind::Int), Shape(vec![]));
        let s = g.binary(BinaryOp::Sub, a, w, None).unwrap();
        g.outputs.push(s);
        let mut st = state(g);
        PromotePass.run(&mut st).unwrap();
        assert_eq!(st.int_bounds, vec![(IntExpr(vec![Step::Arg(1)]), DType::U16, None)]);
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
