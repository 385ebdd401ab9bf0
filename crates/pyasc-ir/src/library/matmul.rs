//! `a @ b` with NumPy's `matmul` rules, run by the GEMM micro-kernels; elementwise
//! epilogues (`gelu(x @ w + b)`) may run in its kernel. bfloat16 and float16 operands are
//! read as they are, with float32 products and sums into a float32 result.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{promote_v, DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// The matrix product.
pub struct MatMul;

impl LibraryOp for MatMul {
    fn id(&self) -> LibId {
        LibId::MATMUL
    }
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2
    }
    fn infer(&self, _attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        matmul_type(operands[0], operands[1])
    }
    fn operand_dtype(&self, _i: usize, result: DType) -> Option<DType> {
        Some(result)
    }
    fn fuses_epilogue(&self) -> bool {
        true
    }
    fn is_cube(&self) -> bool {
        true
    }
    fn reads_half(&self) -> bool {
        true
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        if call.operands != 2 || !operands.iter().all(|d| d.dtype.is_float()) || !out.dtype.is_float() {
            return bad_call(self, "needs two float operands and a float output");
        }
        let dt = operands[0].dtype;
        if operands[1].dtype != dt || (dt.is_half() && out.dtype != DType::F32) {
            return bad_call(self, "needs operands of one dtype (16-bit ones with a float32 output)");
        }
        Ok(())
    }
    fn vjp(
        &self,
        _attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        _y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        // As 2-D (or batched) products: a vector on the left is a row, on the right a column.
        let (x, z) = (inputs[0], inputs[1]);
        let (sx, sz) = (b.shape(x), b.shape(z));
        let x2 = if sx.rank() == 1 { b.reshape(x, &Shape(vec![1, sx.0[0]]))? } else { x };
        let z2 = if sz.rank() == 1 { b.reshape(z, &Shape(vec![sz.0[0], 1]))? } else { z };
        let (s2x, s2z) = (b.shape(x2), b.shape(z2));
        let gs = b.shape(g);
        let batch = gs.rank() - usize::from(sx.rank() > 1) - usize::from(sz.rank() > 1);
        let mut g2s = gs.0[..batch].to_vec();
        g2s.push(s2x.0[s2x.rank() - 2]);
        g2s.push(s2z.0[s2z.rank() - 1]);
        let g2 = b.reshape(g, &Shape(g2s))?;
        let mut out = vec![None, None];
        if wanted[0] {
            let zt = swap_last(b, z2)?;
            let d = b.g.library(LibId::MATMUL, Attr::None, &[g2, zt], b.loc.clone())?;
            let d = b.sum_to(d, &s2x)?;
            out[0] = Some(b.reshape(d, &sx)?);
        }
        if wanted[1] {
            let d = if s2z.rank() == 2 && s2x.rank() > 2 {
                // A matrix shared by a batch (a weight): the batch's rows are one long
                // inner dimension, `x^T g` over all of them in one product, no batch of
                // partial products to sum.
                let (k, m) = (s2z.0[0], s2z.0[1]);
                let rows = s2x.0[..s2x.rank() - 1].iter().product();
                let xf = b.reshape(x2, &Shape(vec![rows, k]))?;
                let gf = b.reshape(g2, &Shape(vec![rows, m]))?;
                let xt = swap_last(b, xf)?;
                b.g.library(LibId::MATMUL, Attr::None, &[xt, gf], b.loc.clone())?
            } else {
                let xt = swap_last(b, x2)?;
                let d = b.g.library(LibId::MATMUL, Attr::None, &[xt, g2], b.loc.clone())?;
                b.sum_to(d, &s2z)?
            };
            out[1] = Some(b.reshape(d, &sz)?);
        }
        Ok(out)
    }
}

/// The result type and shape of `a @ b` (NumPy `matmul`).
pub fn matmul_type(a: (VType, &Shape), b: (VType, &Shape)) -> Result<(VType, Shape)> {
    let (sa, sb) = (a.1, b.1);
    if sa.rank() == 0 || sb.rank() == 0 {
        return Err(IrError::shape("matmul: operands must have at least one dimension"));
    }
    let t = promote_v(a.0, b.0);
    let dtype = if t.dtype.is_float() {
        t.dtype
    } else {
        return Err(IrError::dtype(format!(
            "matmul of {} and {} operands is not supported; cast to float32 or float64",
            a.0.dtype, b.0.dtype
        )));
    };
    // 1-D operands: a vector on the left is a row, on the right a column; the axis is dropped.
    let a2 = if sa.rank() == 1 { vec![1, sa.0[0]] } else { sa.0.clone() };
    let b2 = if sb.rank() == 1 { vec![sb.0[0], 1] } else { sb.0.clone() };
    let (n, ka) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (kb, m) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if ka != kb {
        return Err(IrError::shape(format!("matmul: inner dimensions differ: {sa} @ {sb} ({ka} != {kb})")));
    }
    let batch = Shape(a2[..a2.len() - 2].to_vec())
        .broadcast(&Shape(b2[..b2.len() - 2].to_vec()))
        .map_err(|_| IrError::shape(format!("matmul: batch dimensions of {sa} and {sb} do not broadcast")))?;
    let mut dims = batch.0;
    if sa.rank() > 1 {
        dims.push(n);
    }
    if sb.rank() > 1 {
        dims.push(m);
    }
    Ok((VType::strong(dtype), Shape(dims)))
}

/// `x` with its last two axes swapped (a view).
pub(crate) fn swap_last(b: &mut Builder<'_>, x: NodeId) -> Result<NodeId> {
    let r = b.shape(x).rank();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    b.view(crate::view::ViewSpec::Transpose(perm), x)
}
