//! `np.take(x, indices, axis)` with int64 indices (out of range is an error), a
//! data-movement routine.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
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
