//! Fused scaled dot-product attention (`torch.nn.functional.scaled_dot_product_attention`'s
//! conventions): `softmax(q @ k^T * scale + mask) @ v` with `q (..., Lq, D)`, `k (..., Lk, D)`,
//! `v (..., Lk, Dv)`, result `(..., Lq, Dv)`. Leading dimensions broadcast (the mask's too).
//! The routine walks blocks of query rows against blocks of keys with an online softmax, so
//! the `Lq x Lk` score matrix is never stored. A row whose every key is masked out has
//! `0 / 0` weights: its result is NaN, as the unfused formula gives. Elementwise ops over the
//! result (the rounding of 16-bit results, an output projection's activation) run in its
//! kernel as epilogues.

use super::matmul::swap_last;
use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{promote_v, DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// How the optional fourth operand masks the scores.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttnMask {
    /// No mask operand.
    None,
    /// A boolean mask: `true` keeps a score, `false` makes it `-inf`.
    Bool,
    /// A float mask added to the scaled scores.
    Additive,
}

/// What an attention call computes besides the operands.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnSpec {
    /// Factor of `q @ k^T` before the mask and the softmax.
    pub scale: f64,
    /// Keep only keys `j <= i` for query `i` (the top-left aligned lower triangle).
    pub causal: bool,
    /// The mask operand's role.
    pub mask: AttnMask,
}

/// Fused attention.
pub struct Attention;

fn spec(attr: &Attr) -> Result<&AttnSpec> {
    match attr {
        Attr::Attention(s) => Ok(s),
        _ => Err(IrError::internal("attention needs an attention attribute")),
    }
}

/// The result shape for operand shapes `q, k, v` and the optional mask, or a shape error.
pub fn attention_shape(q: &Shape, k: &Shape, v: &Shape, mask: Option<&Shape>) -> Result<Shape> {
    let name = "scaled_dot_product_attention";
    for (s, role) in [(q, "query"), (k, "key"), (v, "value")] {
        if s.rank() < 2 {
            return Err(IrError::shape(format!("{name}: the {role} must have rank 2 or more, not shape {s}")));
        }
    }
    let (qr, kr, vr) = (q.rank(), k.rank(), v.rank());
    let (lq, d) = (q.0[qr - 2], q.0[qr - 1]);
    let (lk, dk) = (k.0[kr - 2], k.0[kr - 1]);
    let (lv, dv) = (v.0[vr - 2], v.0[vr - 1]);
    if dk != d {
        return Err(IrError::shape(format!(
            "{name}: the query's last dimension ({d}) differs from the key's ({dk}); query {q}, key {k}"
        )));
    }
    if lv != lk {
        return Err(IrError::shape(format!(
            "{name}: the key has {lk} positions but the value {lv}; key {k}, value {v}"
        )));
    }
    let batch = |s: &Shape| Shape(s.0[..s.rank() - 2].to_vec());
    let mut b = batch(q).broadcast(&batch(k)).and_then(|b| b.broadcast(&batch(v))).map_err(|_| {
        IrError::shape(format!("{name}: the leading dimensions of query {q}, key {k} and value {v} do not broadcast"))
    })?;
    if let Some(m) = mask {
        let mut full = b.0.clone();
        full.extend([lq, lk]);
        let target = Shape(full);
        let joint = m.broadcast(&target).ok().filter(|j| j.rank() < 2 || j.0[j.rank() - 2..] == [lq, lk]);
        let Some(joint) = joint else {
            return Err(IrError::shape(format!(
                "{name}: the mask of shape {m} does not broadcast to the scores' shape {target}"
            )));
        };
        b = Shape(joint.0[..joint.rank() - 2].to_vec());
    }
    let mut out = b.0;
    out.extend([lq, dv]);
    Ok(Shape(out))
}

impl LibraryOp for Attention {
    fn id(&self) -> LibId {
        LibId::ATTENTION
    }
    fn name(&self) -> &'static str {
        "attention"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Attention(s) => format!("attention[scale={}, causal={}, mask={:?}]", s.scale, s.causal, s.mask),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 3 || n == 4
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        if operands.len() != 3 + usize::from(s.mask != AttnMask::None) {
            return Err(IrError::internal("attention: the operand count does not match the mask"));
        }
        let t = promote_v(promote_v(operands[0].0, operands[1].0), operands[2].0);
        if !t.dtype.is_float() {
            return Err(IrError::dtype(format!(
                "scaled_dot_product_attention of {}, {} and {} operands is not supported; cast to a float dtype",
                operands[0].0.dtype, operands[1].0.dtype, operands[2].0.dtype
            )));
        }
        let mask = operands.get(3);
        if let Some((mt, _)) = mask {
            let ok = match s.mask {
                AttnMask::Bool => mt.dtype == DType::Bool,
                _ => mt.dtype.is_float(),
            };
            if !ok {
                return Err(IrError::dtype(format!(
                    "scaled_dot_product_attention: a mask of dtype {} is neither boolean nor float",
                    mt.dtype
                )));
            }
        }
        let shape = attention_shape(operands[0].1, operands[1].1, operands[2].1, mask.map(|m| m.1))?;
        Ok((VType::strong(t.dtype), shape))
    }
    fn operand_dtype(&self, i: usize, result: DType) -> Option<DType> {
        (i < 3).then_some(result)
    }
    fn reads_half(&self) -> bool {
        true
    }
    fn fuses_epilogue(&self) -> bool {
        true
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let s = spec(&call.attr)?;
        let [q, k, v, rest @ ..] = operands else { return bad_call(self, "needs a query, a key and a value") };
        let typed = q.dtype == k.dtype
            && q.dtype == v.dtype
            && (q.dtype == out.dtype || (q.dtype.is_half() && out.dtype == DType::F32))
            && out.dtype.is_float()
            && !out.dtype.is_half();
        if !typed {
            return bad_call(self, "needs operands of one dtype: the output's, or 16-bit with a float32 output");
        }
        let mask = match (s.mask, rest) {
            (AttnMask::None, []) => None,
            (AttnMask::Bool, [m]) if m.dtype == DType::Bool => Some(&m.shape),
            (AttnMask::Additive, [m]) if m.dtype.is_float() => Some(&m.shape),
            _ => return bad_call(self, "has a mask operand that does not match its attribute"),
        };
        if attention_shape(&q.shape, &k.shape, &v.shape, mask)? == out.shape {
            Ok(())
        } else {
            bad_call(self, "has an output of the wrong shape")
        }
    }

    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        // The probabilities are recomputed from q and k; then, with dS = P * (dP - rowsum(dO * O)):
        // dV = P^T dO, dP = dO V^T, dQ = scale dS K, dK = scale dS^T Q, and an additive mask's
        // cotangent is dS summed to its shape.
        let s = spec(attr)?.clone();
        let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
        let dt = b.dtype(y);
        // The routine gives no cotangent to an additive mask: one wanted takes the written-out rule.
        let mask_cotangent = s.mask == AttnMask::Additive && wanted.get(3) == Some(&true);
        if !mask_cotangent && matches!(dt, DType::F32 | DType::F64) && [q, k, v, g].iter().all(|x| b.dtype(*x) == dt) {
            return fused_vjp(&s, b, [q, k, v], inputs.get(3).copied(), y, g, wanted);
        }
        composite_vjp(&s, b, inputs, y, g, wanted)
    }
}

/// Attention's cotangents written out as ops (the probabilities recomputed from `q` and `k`,
/// an `Lq x Lk` matrix): the rule when an additive mask's cotangent is wanted or the dtypes
/// are not the routine's, and of the backward routine's own gradient. `inputs` are `q, k, v` and the mask if any, `y` the result, `g` its cotangent.
pub(crate) fn composite_vjp(
    s: &AttnSpec,
    b: &mut Builder<'_>,
    inputs: &[NodeId],
    y: NodeId,
    g: NodeId,
    wanted: &[bool],
) -> Result<Vec<Option<NodeId>>> {
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    let mm = |b: &mut Builder<'_>, x: NodeId, z: NodeId| b.g.library(LibId::MATMUL, Attr::None, &[x, z], b.loc.clone());
    let kt = swap_last(b, k)?;
    let qk = mm(b, q, kt)?;
    let mut scores = b.scale(s.scale, qk)?;
    let neg_inf = b.c(f64::NEG_INFINITY);
    if s.causal {
        let ss = b.shape(scores);
        let (lq, lk) = (ss.0[ss.rank() - 2], ss.0[ss.rank() - 1]);
        let i = crate::grad::iota(b, &Shape(vec![lq, 1]), 0)?;
        let j = crate::grad::iota(b, &Shape(vec![1, lk]), 1)?;
        let keep = b.bin(BinaryOp::Le, j, i)?;
        scores = b.select(keep, scores, neg_inf)?;
    }
    match s.mask {
        AttnMask::None => {}
        AttnMask::Bool => scores = b.select(inputs[3], scores, neg_inf)?,
        AttnMask::Additive => scores = b.add(scores, inputs[3])?,
    }
    let last = b.shape(scores).rank() - 1;
    let m = b.reduce(ReduceOp::Max, scores, &[last], true)?;
    let sh = b.sub(scores, m)?;
    let e = b.un(UnaryOp::Exp, sh)?;
    let den = b.reduce(ReduceOp::Sum, e, &[last], true)?;
    let p = b.div(e, den)?;
    let vt = swap_last(b, v)?;
    let dp = mm(b, g, vt)?;
    let go = b.mul(g, y)?;
    let row = b.reduce(ReduceOp::Sum, go, &[b.shape(go).rank() - 1], true)?;
    let centred = b.sub(dp, row)?;
    let ds = b.mul(p, centred)?;
    let mut out = vec![None; inputs.len()];
    if wanted[0] {
        let d = mm(b, ds, k)?;
        out[0] = Some(b.scale(s.scale, d)?);
    }
    if wanted[1] {
        let dst = swap_last(b, ds)?;
        let d = mm(b, dst, q)?;
        out[1] = Some(b.scale(s.scale, d)?);
    }
    if wanted[2] {
        let pt = swap_last(b, p)?;
        out[2] = Some(mm(b, pt, g)?);
    }
    if s.mask == AttnMask::Additive && wanted.get(3) == Some(&true) {
        out[3] = Some(ds);
    }
    Ok(out)
}

/// The cotangents of `q`, `k` and `v` from one [`LibId::ATTENTION_BACKWARD`] node: its packed
/// rows cut into `dq`, `dk` and `dv`, each summed over the batch dimensions its operand
/// broadcast along.
fn fused_vjp(
    s: &AttnSpec,
    b: &mut Builder<'_>,
    qkv: [NodeId; 3],
    mask: Option<NodeId>,
    y: NodeId,
    g: NodeId,
    wanted: &[bool],
) -> Result<Vec<Option<NodeId>>> {
    let [q, k, v] = qkv;
    let (qs, ks, vs) = (b.shape(q), b.shape(k), b.shape(v));
    let (lq, d) = (qs.0[qs.rank() - 2], qs.0[qs.rank() - 1]);
    let (lk, dv) = (vs.0[vs.rank() - 2], vs.0[vs.rank() - 1]);
    let mut ops = vec![q, k, v, y, g];
    ops.extend(mask);
    let packed = b.g.library(LibId::ATTENTION_BACKWARD, Attr::Attention(s.clone()), &ops, b.loc.clone())?;
    let ps = b.shape(packed);
    let last = ps.rank() - 1;
    let batch = ps.0[..last].to_vec();
    let pieces = [(0, lq, d, &qs), (lq * d, lk, d, &ks), (lq * d + lk * d, lk, dv, &vs)];
    let mut out = vec![None; 3 + usize::from(mask.is_some())];
    for (i, (start, rows, cols, target)) in pieces.into_iter().enumerate() {
        if !wanted[i] {
            continue;
        }
        let part = b.slice_axis(packed, last, crate::view::SliceDim { start, step: 1, len: rows * cols })?;
        let mut dims = batch.clone();
        dims.extend([rows, cols]);
        let part = b.reshape(part, &Shape(dims))?;
        out[i] = Some(b.sum_to(part, target)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(d: &[usize]) -> Shape {
        Shape(d.to_vec())
    }

    #[test]
    fn shapes_broadcast_like_torch() {
        let out = attention_shape(&s(&[2, 8, 5, 4]), &s(&[1, 8, 7, 4]), &s(&[8, 7, 3]), None).unwrap();
        assert_eq!(out.0, vec![2, 8, 5, 3]);
        let out = attention_shape(&s(&[8, 5, 4]), &s(&[8, 7, 4]), &s(&[8, 7, 4]), Some(&s(&[3, 1, 5, 7]))).unwrap();
        assert_eq!(out.0, vec![3, 8, 5, 4]);
        let out = attention_shape(&s(&[5, 4]), &s(&[7, 4]), &s(&[7, 2]), Some(&s(&[7]))).unwrap();
        assert_eq!(out.0, vec![5, 2]);
    }

    #[test]
    fn bad_shapes_are_shape_errors() {
        for (q, k, v, m) in [
            (s(&[5, 4]), s(&[7, 3]), s(&[7, 4]), None),
            (s(&[5, 4]), s(&[7, 4]), s(&[6, 4]), None),
            (s(&[2, 5, 4]), s(&[3, 7, 4]), s(&[3, 7, 4]), None),
            (s(&[5, 4]), s(&[7, 4]), s(&[7, 4]), Some(s(&[5, 6]))),
            (s(&[4]), s(&[7, 4]), s(&[7, 4]), None),
        ] {
            let e = attention_shape(&q, &k, &v, m.as_ref()).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Shape, "{}", e.message);
        }
    }
}
