//! `np.take(x, indices, axis)` with int64 indices (out of range is an error), a
//! data-movement routine.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// Gathering along one axis.
pub struct Take;

impl LibraryOp for Take {
    fn id(&self) -> LibId {
        LibId::TAKE
    }
    fn name(&self) -> &'static str {
        "take"
    }
    fn describe(&self, attr: &Attr) -> String {
        format!("take[{}]", attr.axis().unwrap_or(0))
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let axis = attr.axis().ok_or_else(|| IrError::internal("take needs an axis"))?;
        take_type(axis, operands[0], operands[1])
    }
    fn operand_dtype(&self, i: usize, _result: DType) -> Option<DType> {
        (i == 1).then_some(DType::I64)
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        match operands {
            [x, idx] if call.attr.axis().is_some() && idx.dtype == DType::I64 && x.dtype == out.dtype => Ok(()),
            _ => bad_call(self, "needs an axis, an operand and int64 indices"),
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
        let _ = (y, wanted);
        // The cotangent of x adds each gathered element's cotangent back at its index: a
        // scatter-add into zeros at the flat positions (p * n + idx) * inner + q.
        let axis = attr.axis().ok_or_else(|| IrError::internal("take needs an axis"))?;
        let (x, idx) = (inputs[0], inputs[1]);
        let xs = b.shape(x);
        let (outer, n) = (xs.0[..axis].iter().product::<usize>(), xs.0[axis]);
        let inner: usize = xs.0[axis + 1..].iter().product();
        let k = b.shape(idx).numel();
        // idx in [0, n): NumPy's negative indices wrap.
        let idx = b.cast(idx, DType::I64)?;
        let zero = b.g.py_scalar(crate::Scalar::Int(0), b.loc.clone());
        let neg = b.bin(crate::op::BinaryOp::Lt, idx, zero)?;
        let nn = b.g.py_scalar(crate::Scalar::Int(n as i64), b.loc.clone());
        let wrapped = b.add(idx, nn)?;
        let idx = b.select(neg, wrapped, idx)?;
        let idx = b.reshape(idx, &Shape(vec![1, k, 1]))?;
        let idx = b.broadcast(idx, &Shape(vec![outer, k, inner]))?;
        let vals = b.reshape(g, &Shape(vec![outer, k, inner]))?;
        let ct = crate::grad::scatter_add_along(b, &xs, axis, idx, vals)?;
        Ok(vec![Some(ct), None])
    }
}

/// `np.take(x, indices, axis)`: the axis replaced by the indices' shape.
pub fn take_type(axis: usize, x: (VType, &Shape), idx: (VType, &Shape)) -> Result<(VType, Shape)> {
    if !idx.0.dtype.is_int() {
        return Err(IrError::dtype(format!("take: indices must be integers, not {}", idx.0.dtype)));
    }
    if axis >= x.1.rank() {
        return Err(IrError::shape(format!("take: axis {axis} is out of bounds for rank {}", x.1.rank())));
    }
    let mut dims = x.1 .0[..axis].to_vec();
    dims.extend_from_slice(&idx.1 .0);
    dims.extend_from_slice(&x.1 .0[axis + 1..]);
    Ok((VType::strong(x.0.dtype), Shape(dims)))
}
