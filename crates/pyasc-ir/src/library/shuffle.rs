//! `pixel_shuffle` (PyTorch's semantics): `(*, C*r*r, H, W)` to `(*, C, H*r, W*r)`, a
//! data-movement routine (each output row interleaves `r` input rows).

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// Pixel shuffle by an upscale factor.
pub struct PixelShuffle;

/// The result shape of `pixel_shuffle(x, r)`, or a shape error.
pub fn shuffle_shape(x: &Shape, r: usize) -> Result<Shape> {
    let n = x.rank();
    if n < 3 || r == 0 || !x.0[n - 3].is_multiple_of(r * r) {
        return Err(IrError::shape(format!(
            "pixel_shuffle: an input of rank 3 or more whose channels divide by upscale_factor**2 ({}) is needed, not {x}",
            r * r
        )));
    }
    let mut dims = x.0.clone();
    dims[n - 3] /= r * r;
    dims[n - 2] *= r;
    dims[n - 1] *= r;
    Ok(Shape(dims))
}

impl LibraryOp for PixelShuffle {
    fn id(&self) -> LibId {
        LibId::PIXEL_SHUFFLE
    }
    fn name(&self) -> &'static str {
        "pixel_shuffle"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Upscale(r) => format!("pixel_shuffle[{r}]"),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let Attr::Upscale(r) = attr else { return Err(IrError::internal("pixel_shuffle needs a factor")) };
        Ok((VType::strong(operands[0].0.dtype), shuffle_shape(operands[0].1, *r)?))
    }
    fn operand_dtype(&self, _i: usize, _result: DType) -> Option<DType> {
        None
    }
    fn fuses_epilogue(&self) -> bool {
        true
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let Attr::Upscale(r) = &call.attr else { return bad_call(self, "needs a factor") };
        match operands {
            [x] if x.dtype == out.dtype && shuffle_shape(&x.shape, *r)? == out.shape => Ok(()),
            _ => bad_call(self, "needs one operand shuffled to its output"),
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
        let Attr::Upscale(r) = attr else { return Err(IrError::internal("pixel_shuffle needs a factor")) };
        // pixel_shuffle is x.reshape(*, C, r, r, H, W).transpose(.., C, H, r, W, r) reshaped;
        // its adjoint reads the cotangent back the same way.
        let r = *r;
        let xs = b.shape(inputs[0]);
        let gs = b.shape(g);
        let lead = gs.rank() - 3;
        let (c, hr, wr) = (gs.0[lead], gs.0[lead + 1], gs.0[lead + 2]);
        let mut split = gs.0[..lead].to_vec();
        split.extend([c, hr / r, r, wr / r, r]);
        let t = b.reshape(g, &Shape(split))?;
        let mut perm: Vec<usize> = (0..lead).collect();
        perm.extend([lead, lead + 2, lead + 4, lead + 1, lead + 3]);
        let t = b.view(crate::view::ViewSpec::Transpose(perm), t)?;
        Ok(vec![Some(b.reshape(t, &xs)?)])
    }
}
