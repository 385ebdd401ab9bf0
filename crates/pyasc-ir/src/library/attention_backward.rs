//! The backward pass of fused attention (causal or not, with or without a mask): from `q`,
//! `k`, `v`, the forward's result `o` and its cotangent `do`, the cotangents `dq`, `dk` and
//! `dv` for every (broadcast) batch entry, packed one entry per row: `dq` (`Lq x D`), then
//! `dk` (`Lk x D`), then `dv` (`Lk x Dv`), flattened. The routine recomputes the probabilities
//! block by block of keys (FlashAttention-2's backward), so no `Lq x Lk` matrix is stored.
//! Its attribute is the forward's [`AttnSpec`]; a masked one takes the mask as its sixth
//! operand (in its own dtype; an additive mask's own cotangent is not computed here, so the
//! gradient rule uses this routine only when none is wanted). The last operand, when there is
//! one more, holds the rows' log-sum-exp as [`super::AttentionStats`] writes it (the forward's
//! shape with one column); without it, the routine finds them in one more pass over the keys.

use super::attention::{attention_shape, AttnMask, AttnSpec};
use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::SliceDim;

/// Attention's backward pass.
pub struct AttentionBackward;

/// The packed result's shape for operand shapes `q, k, v` and the mask's (the forward's batch
/// dimensions, then one row per entry), or a shape error.
pub fn attention_backward_shape(q: &Shape, k: &Shape, v: &Shape, mask: Option<&Shape>) -> Result<Shape> {
    let out = attention_shape(q, k, v, mask)?;
    let (qr, vr) = (q.rank(), v.rank());
    let (lq, d) = (q.0[qr - 2], q.0[qr - 1]);
    let (lk, dv) = (v.0[vr - 2], v.0[vr - 1]);
    let mut dims = out.0[..out.rank() - 2].to_vec();
    dims.push(lq * d + lk * d + lk * dv);
    Ok(Shape(dims))
}

/// The shape of the rows' log-sum-exp operand for a forward result of shape `o`.
fn lse_shape(o: &Shape) -> Shape {
    let mut dims = o.0.clone();
    let last = dims.len() - 1;
    dims[last] = 1;
    Shape(dims)
}

fn spec(attr: &Attr) -> Result<&AttnSpec> {
    match attr {
        Attr::Attention(s) => Ok(s),
        _ => Err(IrError::internal("attention_backward needs an attention attribute")),
    }
}

/// The number of operands before the optional log-sum-exp: five, and the mask if any.
fn fixed(s: &AttnSpec) -> usize {
    5 + usize::from(s.mask != AttnMask::None)
}

/// True when a mask of dtype `dt` suits `s`.
fn mask_ok(s: &AttnSpec, dt: DType) -> bool {
    match s.mask {
        AttnMask::None => false,
        AttnMask::Bool => dt == DType::Bool,
        AttnMask::Additive => dt.is_float(),
    }
}

impl LibraryOp for AttentionBackward {
    fn id(&self) -> LibId {
        LibId::ATTENTION_BACKWARD
    }
    fn name(&self) -> &'static str {
        "attention_backward"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Attention(s) => {
                format!("attention_backward[scale={}, causal={}, mask={:?}]", s.scale, s.causal, s.mask)
            }
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        (5..=7).contains(&n)
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        let n = fixed(s);
        if operands.len() != n && operands.len() != n + 1 {
            return Err(IrError::internal("attention_backward: the operand count does not match the mask"));
        }
        let dt = operands[0].0.dtype;
        let same = operands[..5].iter().chain(operands.get(n)).all(|(t, _)| t.dtype == dt);
        if !matches!(dt, DType::F32 | DType::F64) || !same {
            return Err(IrError::dtype("attention_backward takes float32 or float64 operands of one dtype"));
        }
        let mask = (n == 6).then(|| operands[5]);
        if mask.is_some_and(|(t, _)| !mask_ok(s, t.dtype)) {
            return Err(IrError::dtype("attention_backward: the mask's dtype does not match the attribute"));
        }
        let (q, k, v) = (operands[0].1, operands[1].1, operands[2].1);
        let o = attention_shape(q, k, v, mask.map(|m| m.1))?;
        if *operands[3].1 != o || *operands[4].1 != o {
            return Err(IrError::shape(format!(
                "attention_backward: the result and its cotangent must have the forward's shape {o}"
            )));
        }
        if let Some((_, l)) = operands.get(n) {
            if **l != lse_shape(&o) {
                return Err(IrError::shape(format!(
                    "attention_backward: the rows' log-sum-exp must have shape {}",
                    lse_shape(&o)
                )));
            }
        }
        Ok((VType::strong(dt), attention_backward_shape(q, k, v, mask.map(|m| m.1))?))
    }
    fn operand_dtype(&self, i: usize, result: DType) -> Option<DType> {
        // The mask keeps its own dtype (the log-sum-exp after it has the result's anyway).
        (i < 5).then_some(result)
    }
    fn reinfers(&self) -> bool {
        false
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let s = spec(&call.attr)?;
        let n = fixed(s);
        if operands.len() != n && operands.len() != n + 1 {
            return bad_call(self, "needs q, k, v, the result, its cotangent and the mask if any");
        }
        let (q, k, v, o) = (operands[0], operands[1], operands[2], operands[3]);
        let mask = (n == 6).then(|| operands[5]);
        let lse = operands.get(n);
        let typed = operands[..5].iter().chain(lse).all(|b| b.dtype == q.dtype)
            && out.dtype == q.dtype
            && mask.is_none_or(|m| mask_ok(s, m.dtype));
        if lse.is_some_and(|l| l.shape != lse_shape(&o.shape)) {
            return bad_call(self, "has a log-sum-exp operand of the wrong shape");
        }
        if typed
            && matches!(q.dtype, DType::F32 | DType::F64)
            && attention_backward_shape(&q.shape, &k.shape, &v.shape, mask.map(|m| &m.shape))? == out.shape
        {
            Ok(())
        } else {
            bad_call(self, "has operands or an output of the wrong type or shape")
        }
    }
    /// The routine's own gradient (second derivatives of attention, and `jvp`, which
    /// transposes the backward pass): the same cotangents written out as ops
    /// ([`super::attention::composite_vjp`]) and differentiated, the packed cotangent cut into
    /// their shapes.
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut crate::grad::Builder<'_>,
        inputs: &[NodeId],
        _y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        let s = spec(attr)?.clone();
        if inputs.len() != fixed(&s) {
            return Err(IrError::internal("attention_backward reading the rows' statistics has no gradient rule"));
        }
        // q, k, v and the mask if any: the forward's operands.
        let forward: Vec<NodeId> = inputs[..3].iter().chain(inputs.get(5)).copied().collect();
        let written = super::attention::composite_vjp(&s, b, &forward, inputs[3], inputs[4], &[true; 3])?;
        let written: Vec<NodeId> = written.into_iter().flatten().collect();
        let gs = b.shape(g);
        let last = gs.rank() - 1;
        let mut start = 0;
        let mut pieces = Vec::with_capacity(3);
        for &w in &written {
            let ws = b.shape(w);
            let len: usize = ws.0[ws.rank() - 2..].iter().product();
            let part = b.slice_axis(g, last, SliceDim { start, step: 1, len })?;
            let mut dims = gs.0[..last].to_vec();
            dims.extend_from_slice(&ws.0[ws.rank() - 2..]);
            let part = b.reshape(part, &Shape(dims))?;
            pieces.push(b.broadcast(part, &ws)?);
            start += len;
        }
        let wrt: Vec<NodeId> = inputs.iter().zip(wanted).filter(|(_, w)| **w).map(|(x, _)| *x).collect();
        let loc = b.loc.clone();
        // The operands are where this rule ends: their own cotangents flow on from the caller
        // (the forward's result `o` is one, computed from `q`, `k` and `v`).
        let operands = inputs.to_vec();
        let mut stop = |_: &mut crate::graph::Graph, n: NodeId, _: NodeId| Ok(operands.contains(&n).then(Vec::new));
        let got = crate::grad::vjp(b.g, &written, &pieces, &wrt, loc, &mut stop)?;
        let mut got = got.into_iter();
        Ok(wanted.iter().map(|w| if *w { got.next().flatten() } else { None }).collect())
    }
}
