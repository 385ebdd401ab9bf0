//! Fused attention that keeps its rows' statistics: the forward pass of attention (causal or
//! not, with or without a mask, as [`super::Attention`]) whose result rows carry one more column, each query's log-sum-exp of
//! its scaled scores, `L_i = log sum_j exp(scale q_i . k_j)`. The result's shape is the
//! forward's with the last dimension `Dv + 1`: columns `..Dv` are the attention result,
//! column `Dv` is `L`. The compiler puts it in place of a forward whose backward pass
//! ([`super::AttentionBackward`]) reads the same operands, so the backward reads `L` instead
//! of recomputing every score once more to find it. Only the compiler makes it, after
//! gradients are taken, so it has no gradient rule.

use super::attention::{attention_shape, AttnMask, AttnSpec};
use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// Attention that also writes its rows' log-sum-exp.
pub struct AttentionStats;

/// The result's shape for operand shapes `q, k, v` and the mask's: attention's with one more
/// column.
pub fn attention_stats_shape(q: &Shape, k: &Shape, v: &Shape, mask: Option<&Shape>) -> Result<Shape> {
    let mut out = attention_shape(q, k, v, mask)?;
    let last = out.rank() - 1;
    out.0[last] += 1;
    Ok(out)
}

fn spec(attr: &Attr) -> Result<&AttnSpec> {
    match attr {
        Attr::Attention(s) => Ok(s),
        _ => Err(IrError::internal("attention_stats needs an attention attribute")),
    }
}

/// True when `n` operands and a mask of dtype `mask` (if any) suit `s`.
fn operands_ok(s: &AttnSpec, n: usize, mask: Option<DType>) -> bool {
    match (s.mask, mask) {
        (AttnMask::None, None) => n == 3,
        (AttnMask::Bool, Some(dt)) => n == 4 && dt == DType::Bool,
        (AttnMask::Additive, Some(dt)) => n == 4 && dt.is_float(),
        _ => false,
    }
}

impl LibraryOp for AttentionStats {
    fn id(&self) -> LibId {
        LibId::ATTENTION_STATS
    }
    fn name(&self) -> &'static str {
        "attention_stats"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Attention(s) => format!("attention_stats[scale={}, causal={}]", s.scale, s.causal),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 3 || n == 4
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        let dt = operands[0].0.dtype;
        if !matches!(dt, DType::F32 | DType::F64) || operands[..3].iter().any(|(t, _)| t.dtype != dt) {
            return Err(IrError::dtype("attention_stats takes float32 or float64 operands of one dtype"));
        }
        let mask = operands.get(3);
        if !operands_ok(s, operands.len(), mask.map(|m| m.0.dtype)) {
            return Err(IrError::internal("attention_stats: the mask operand does not match the attribute"));
        }
        let shape = attention_stats_shape(operands[0].1, operands[1].1, operands[2].1, mask.map(|m| m.1))?;
        Ok((VType::strong(dt), shape))
    }
    fn operand_dtype(&self, i: usize, result: DType) -> Option<DType> {
        (i < 3).then_some(result)
    }
    fn reinfers(&self) -> bool {
        false
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let s = spec(&call.attr)?;
        let [q, k, v, mask @ ..] = operands else { return bad_call(self, "needs a query, a key and a value") };
        let mask = mask.first();
        let typed = [k, v].iter().all(|b| b.dtype == q.dtype)
            && out.dtype == q.dtype
            && operands_ok(s, operands.len(), mask.map(|m| m.dtype));
        if typed
            && matches!(q.dtype, DType::F32 | DType::F64)
            && attention_stats_shape(&q.shape, &k.shape, &v.shape, mask.map(|m| &m.shape))? == out.shape
        {
            Ok(())
        } else {
            bad_call(self, "has operands or an output of the wrong type or shape")
        }
    }
}
