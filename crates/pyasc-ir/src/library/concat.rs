//! `np.concatenate` along one axis, a data-movement routine.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{promote_v, DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::SliceDim;

/// Concatenation.
pub struct Concat;

impl LibraryOp for Concat {
    fn id(&self) -> LibId {
        LibId::CONCAT
    }
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn describe(&self, attr: &Attr) -> String {
        format!("concatenate[{}]", attr.axis().unwrap_or(0))
    }
    fn arity_ok(&self, n: usize) -> bool {
        n >= 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let axis = attr.axis().ok_or_else(|| IrError::internal("concatenate needs an axis"))?;
        concat_type(axis, operands)
    }
    fn operand_dtype(&self, _i: usize, result: DType) -> Option<DType> {
        Some(result)
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        if call.attr.axis().is_none() || operands.is_empty() || operands.iter().any(|d| d.dtype != out.dtype) {
            return bad_call(self, "needs an axis and operands of the output's dtype");
        }
        Ok(())
    }
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        _y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        // Each operand's cotangent is its slab of the result's cotangent.
        let axis = attr.axis().ok_or_else(|| IrError::internal("concatenate needs an axis"))?;
        let mut start = 0;
        let mut out = Vec::with_capacity(inputs.len());
        for (x, want) in inputs.iter().zip(wanted) {
            let len = b.shape(*x).0[axis];
            out.push(if *want { Some(b.slice_axis(g, axis, SliceDim { start, step: 1, len })?) } else { None });
            start += len;
        }
        Ok(out)
    }
}

/// `np.concatenate` along `axis`: equal ranks, equal extents off the axis, promoted dtype.
pub fn concat_type(axis: usize, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
    let first = operands[0].1;
    if axis >= first.rank().max(1) || first.rank() == 0 {
        return Err(IrError::shape(format!("concatenate: axis {axis} is out of bounds for rank {}", first.rank())));
    }
    let mut dims = first.0.clone();
    dims[axis] = 0;
    let mut t = operands[0].0;
    for (vt, s) in operands {
        if s.rank() != first.rank() || s.0.iter().enumerate().any(|(i, d)| i != axis && *d != first.0[i]) {
            return Err(IrError::shape(format!("concatenate: shapes {first} and {s} differ off axis {axis}")));
        }
        dims[axis] += s.0[axis];
        t = promote_v(t, *vt);
    }
    let t = if operands.iter().all(|(v, _)| v.weak.is_some()) { t } else { VType::strong(t.dtype) };
    Ok((t, Shape(dims)))
}
