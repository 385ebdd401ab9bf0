//! `np.pad` (constant, edge, reflect, wrap), a data-movement routine.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::{PadMode, PadSpec, SliceDim, ViewSpec};

/// Padding.
pub struct Pad;

impl LibraryOp for Pad {
    fn id(&self) -> LibId {
        LibId::PAD
    }
    fn name(&self) -> &'static str {
        "pad"
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let Attr::Pad(spec) = attr else { return Err(IrError::internal("pad needs a pad attribute")) };
        Ok((VType::strong(operands[0].0.dtype), spec.out_shape(operands[0].1)?))
    }
    fn operand_dtype(&self, _i: usize, _result: DType) -> Option<DType> {
        None
    }
    fn reinfers(&self) -> bool {
        false
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let Attr::Pad(spec) = &call.attr else { return bad_call(self, "needs a pad attribute") };
        match operands {
            [x] if x.dtype == out.dtype && spec.out_shape(&x.shape)? == out.shape => Ok(()),
            _ => bad_call(self, "needs one operand padded to its output"),
        }
    }
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        _y: NodeId,
        g: NodeId,
        _wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        let Attr::Pad(spec) = attr else {
            return Err(IrError::internal("pad needs its spec"));
        };
        let xs = b.shape(inputs[0]);
        if spec.mode != PadMode::Constant {
            // Edge, reflect and wrap pad each axis by reading the operand at an index map,
            // which is the same padding of `0, 1, .., n - 1`: the cotangent is added back at
            // those indices, one axis at a time.
            let mut cur = g;
            for (axis, &(lo, hi)) in spec.widths.iter().enumerate() {
                if lo == 0 && hi == 0 {
                    continue;
                }
                let mut to = b.shape(cur);
                let wide = to.0[axis];
                to.0[axis] = xs.0[axis];
                let outer: usize = to.0[..axis].iter().product();
                let inner: usize = to.0[axis + 1..].iter().product();
                let n = Shape(vec![xs.0[axis]]);
                let at = crate::grad::iota(b, &n, 0)?;
                let one_axis = PadSpec { widths: vec![(lo, hi)], mode: spec.mode, cval: spec.cval };
                let at = b.g.pad(one_axis, at, b.loc.clone())?;
                let at = b.reshape(at, &Shape(vec![1, wide, 1]))?;
                let at = b.broadcast(at, &Shape(vec![outer, wide, inner]))?;
                let vals = b.reshape(cur, &Shape(vec![outer, wide, inner]))?;
                cur = crate::grad::scatter_add_along(b, &to, axis, at, vals)?;
            }
            return Ok(vec![Some(cur)]);
        }
        // The operand's cotangent is the padded cotangent's interior.
        let dims = spec.widths.iter().zip(&xs.0).map(|(w, &n)| SliceDim { start: w.0, step: 1, len: n }).collect();
        Ok(vec![Some(b.view(ViewSpec::Slice(dims), g)?)])
    }
}
