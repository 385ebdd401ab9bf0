//! Attention pattern fusion (`op_break_level` 3): the unfused formula
//!
//! ```text
//! softmax(q @ k^T * c  (or / c, or none)  [+ mask | where(mask, ., -inf)]) @ v
//! ```
//!
//! with `softmax` as traced (`e = exp(x - max(x, -1, keepdims)); e / sum(e, -1, keepdims)`)
//! becomes one fused attention library op, so the scores are never stored. `c` must be a
//! constant; `k^T` is a view swapping the last two axes of `k` (any other right operand gets
//! such a view). Only rewritten when every intermediate (products, scores, maxima, weights)
//! is used by the pattern alone, `q`, `k` and `v` share a float dtype, and the fused op has
//! the pattern's shape. The fused op computes in the operands' dtype; when the unfused
//! scores were promoted to a wider float (a float64 constant such as `np.sqrt(d)` over
//! float32 products), its result is cast to that dtype, as the unfused result has it.
//!
//! Runs after `precision` (which consumes the precision scopes that refer to node numbers)
//! and before `promote`, on the graph as traced.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, with_inputs};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::Result;
use pyasc_ir::library::{AttnMask, AttnSpec};
use pyasc_ir::op::{Axes, BinaryOp, Op, ReduceOp, UnaryOp};
use pyasc_ir::view::ViewSpec;
use pyasc_ir::{Attr, DType, Graph, LibId, Node, NodeId, Scalar};
use std::collections::HashMap;

/// Rewrites the unfused attention formula into the fused op.
pub struct AttentionPass;

/// One matched pattern.
struct Found {
    q: NodeId,
    /// The right operand of `q @ kt`.
    kt: NodeId,
    /// `kt`'s operand when `kt` is a view swapping the last two axes.
    k: Option<NodeId>,
    v: NodeId,
    mask: Option<NodeId>,
    spec: AttnSpec,
    /// The fused op's result type, and the pattern's when a cast is needed.
    cast: Option<VType>,
    /// Nodes only the pattern uses (not copied).
    interior: Vec<NodeId>,
}

/// The value of a scalar constant node.
fn constant(g: &Graph, id: NodeId) -> Option<f64> {
    let n = g.node(id);
    match (&n.op, n.shape.rank()) {
        (Op::Const(Scalar::Float(f)), 0) => Some(*f),
        (Op::Const(Scalar::Int(i)), 0) => Some(*i as f64),
        _ => None,
    }
}

/// True for a reduction `op` over the last axis only, keeping it.
fn last_axis(n: &Node, op: ReduceOp, x: NodeId, g: &Graph) -> bool {
    let rank = g.node(x).shape.rank();
    matches!(n.op, Op::Reduce { op: o, axes, keepdims: true } if o == op && rank > 0 && axes == Axes(1 << (rank - 1)))
        && n.inputs == [x]
}

/// True when `perm` swaps the last two axes and keeps the others.
fn swaps_last_two(perm: &[usize]) -> bool {
    let r = perm.len();
    r >= 2 && perm[..r - 2].iter().enumerate().all(|(i, p)| *p == i) && perm[r - 2] == r - 1 && perm[r - 1] == r - 2
}

/// `q @ kt` scaled by a constant (or not), used `want` times: `(matmul, scale, interior)`.
fn scaled(g: &Graph, uses: &[u32], y: NodeId, want: u32) -> Option<(NodeId, f64, Vec<NodeId>)> {
    let n = g.node(y);
    let is_mm = |id: NodeId| matches!(g.node(id).op, Op::Library(LibId::MATMUL, _));
    if is_mm(y) {
        return (uses[y.index()] == want).then(|| (y, 1.0, vec![]));
    }
    let (Op::Binary(op), [a, b]) = (&n.op, n.inputs.as_slice()) else { return None };
    let (mm, c) = match op {
        BinaryOp::Div if is_mm(*a) => (*a, 1.0 / constant(g, *b)?),
        BinaryOp::Mul if is_mm(*a) => (*a, constant(g, *b)?),
        BinaryOp::Mul if is_mm(*b) => (*b, constant(g, *a)?),
        _ => return None,
    };
    (uses[y.index()] == want && uses[mm.index()] == 1 && c.is_finite()).then(|| (mm, c, vec![y]))
}

/// The pattern ending at `out` (the product of the weights with `v`), if it is one.
fn match_at(g: &Graph, uses: &[u32], out: NodeId) -> Option<Found> {
    let fnode = g.node(out);
    let (Op::Library(LibId::MATMUL, _), [p, v]) = (&fnode.op, fnode.inputs.as_slice()) else { return None };
    let one = |id: NodeId| uses[id.index()] == 1;
    // p = e / sum(e); e = exp(x - max(x)).
    let pn = g.node(*p);
    let (Op::Binary(BinaryOp::Div), [e, s]) = (&pn.op, pn.inputs.as_slice()) else { return None };
    let en = g.node(*e);
    let (Op::Unary(UnaryOp::Exp), [d]) = (&en.op, en.inputs.as_slice()) else { return None };
    if !(one(*p) && uses[e.index()] == 2 && one(*s) && last_axis(g.node(*s), ReduceOp::Sum, *e, g)) {
        return None;
    }
    let dn = g.node(*d);
    let (Op::Binary(BinaryOp::Sub), [x, mx]) = (&dn.op, dn.inputs.as_slice()) else { return None };
    if !(one(*d) && one(*mx) && uses[x.index()] == 2 && last_axis(g.node(*mx), ReduceOp::Max, *x, g)) {
        return None;
    }
    let mut interior = vec![*p, *e, *s, *d, *mx, *x];
    // The scores: scaled products, plus an additive or boolean mask.
    let xn = g.node(*x);
    let (mm, scale, more, mask, kind) = match (&xn.op, xn.inputs.as_slice()) {
        (Op::Binary(BinaryOp::Add), [a, b]) => {
            let (found, m) = match scaled(g, uses, *a, 1) {
                Some(f) => (f, *b),
                None => (scaled(g, uses, *b, 1)?, *a),
            };
            (found.0, found.1, found.2, Some(m), AttnMask::Additive)
        }
        (Op::Where, [m, a, c]) if g.node(*m).dtype() == DType::Bool && constant(g, *c) == Some(f64::NEG_INFINITY) => {
            let f = scaled(g, uses, *a, 1)?;
            (f.0, f.1, f.2, Some(*m), AttnMask::Bool)
        }
        _ => {
            let f = scaled(g, uses, *x, 2)?;
            (f.0, f.1, f.2, None, AttnMask::None)
        }
    };
    if let Some(m) = mask {
        if !g.node(m).dtype().is_float() && kind == AttnMask::Additive {
            return None;
        }
    }
    interior.extend(more);
    interior.push(mm);
    interior.sort();
    interior.dedup();
    let mn = g.node(mm);
    let [q, kt] = mn.inputs.as_slice() else { return None };
    let (q, kt, v) = (*q, *kt, *v);
    let dt = g.node(q).dtype();
    let ranks_ok = [q, kt, v].iter().all(|i| g.node(*i).shape.rank() >= 2);
    if !ranks_ok || !dt.is_float() || g.node(kt).dtype() != dt || g.node(v).dtype() != dt {
        return None;
    }
    let k = match (&g.node(kt).op, g.node(kt).inputs.as_slice()) {
        (Op::View(a), [base]) => match g.attr(*a).ok()? {
            Attr::View(ViewSpec::Transpose(perm)) if swaps_last_two(perm) => Some(*base),
            _ => None,
        },
        _ => None,
    };
    let spec = AttnSpec { scale, causal: false, mask: kind };
    // The fused op's type and shape must be the pattern's (up to a widening cast).
    let kshape = match k {
        Some(b) => g.node(b).shape.clone(),
        None => {
            let mut s = g.node(kt).shape.clone();
            let r = s.rank();
            s.0.swap(r - 2, r - 1);
            s
        }
    };
    let mut ops: Vec<(VType, &pyasc_ir::Shape)> =
        vec![(g.node(q).vtype, &g.node(q).shape), (g.node(q).vtype, &kshape), (g.node(v).vtype, &g.node(v).shape)];
    if let Some(m) = mask {
        ops.push((g.node(m).vtype, &g.node(m).shape));
    }
    let (vt, shape) = LibId::ATTENTION.op().ok()?.infer(&Attr::Attention(spec.clone()), &ops).ok()?;
    if shape != fnode.shape {
        return None;
    }
    let cast = if vt == fnode.vtype {
        None
    } else if fnode.dtype().is_float() && fnode.vtype.weak.is_none() && fnode.dtype().size() > vt.dtype.size() {
        Some(fnode.vtype)
    } else {
        return None;
    };
    Some(Found { q, kt, k, v, mask, spec, cast, interior })
}

impl Pass for AttentionPass {
    fn name(&self) -> &'static str {
        "attention"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        if st.options.op_break_level < 3 {
            return Ok(());
        }
        let g = &st.graph;
        let uses = g.use_counts();
        let live = g.live();
        let mut found: HashMap<usize, Found> = HashMap::new();
        for (i, _) in live.iter().enumerate().filter(|(_, l)| **l) {
            if let Some(f) = match_at(g, &uses, NodeId(i as u32)) {
                found.insert(i, f);
            }
        }
        if found.is_empty() {
            return Ok(());
        }
        let mut skip = vec![false; g.len()];
        for f in found.values() {
            for n in &f.interior {
                skip[n.index()] = true;
            }
        }
        let (mut out, mut map) = with_inputs(g);
        for (i, n) in g.nodes.iter().enumerate() {
            if !live[i] || map[i].is_some() || skip[i] {
                continue;
            }
            let new = |id: NodeId| map[id.index()].expect("operands precede users");
            let id = match found.get(&i) {
                Some(f) => {
                    let k = match f.k {
                        Some(k) => new(k),
                        None => {
                            let r = g.node(f.kt).shape.rank();
                            let mut perm: Vec<usize> = (0..r).collect();
                            perm.swap(r - 2, r - 1);
                            out.view(ViewSpec::Transpose(perm), new(f.kt), n.loc.clone())?
                        }
                    };
                    let mut ops = vec![new(f.q), k, new(f.v)];
                    ops.extend(f.mask.map(new));
                    let a = out.library(LibId::ATTENTION, Attr::Attention(f.spec.clone()), &ops, n.loc.clone())?;
                    match f.cast {
                        Some(vt) => out.apply(Op::Cast(vt.dtype), &[a], n.loc.clone())?,
                        None => a,
                    }
                }
                None => {
                    let ops = n.inputs.iter().map(|o| new(*o)).collect();
                    copy_node(&mut out, n, ops)
                }
            };
            map[i] = Some(id);
        }
        out.outputs = g.outputs.iter().map(|o| map[o.index()].expect("outputs are live")).collect();
        st.graph = out;
        st.notes.push(format!("fused {} attention pattern(s) into one kernel each", found.len()));
        Ok(())
    }
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;
