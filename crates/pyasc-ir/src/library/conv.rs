//! N-d convolution (`conv1d`, `conv2d`, `conv3d`, PyTorch's conventions): input
//! `(N, C, *spatial)`, weight `(O, C / groups, *kernel)`, result `(N, O, *out)`. Run by an
//! implicit-GEMM routine; bias and activations over the result are elementwise epilogues in
//! its kernel, as for matmul.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{promote_v, DType, VType};
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// Geometry of a convolution, one entry per spatial dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvSpec {
    /// Step between output positions.
    pub stride: Vec<usize>,
    /// Zeros added before and after the input.
    pub pad: Vec<(usize, usize)>,
    /// Step between kernel taps.
    pub dilation: Vec<usize>,
    /// Channel groups: input and output channels split into `groups` independent halves.
    pub groups: usize,
}

impl ConvSpec {
    /// Number of spatial dimensions.
    pub fn spatial(&self) -> usize {
        self.stride.len()
    }

    /// The result shape for input shape `x` and weight shape `w`, or a shape error.
    pub fn out_shape(&self, x: &Shape, w: &Shape) -> Result<Shape> {
        let sd = self.spatial();
        let name = format!("conv{sd}d");
        if self.pad.len() != sd || self.dilation.len() != sd || sd == 0 {
            return Err(IrError::internal(format!("{name}: geometry of the wrong rank")));
        }
        if x.rank() != sd + 2 || w.rank() != sd + 2 {
            return Err(IrError::shape(format!(
                "{name} takes a rank-{} input (N, C, ...) and a rank-{} weight (O, C/groups, ...), not {x} and {w}",
                sd + 2,
                sd + 2
            )));
        }
        if self.stride.contains(&0) || self.dilation.contains(&0) || self.groups == 0 {
            return Err(IrError::shape(format!("{name}: stride, dilation and groups must be positive")));
        }
        let (c, o, g) = (x.0[1], w.0[0], self.groups);
        if c % g != 0 || o % g != 0 {
            return Err(IrError::shape(format!(
                "{name}: groups={g} must divide the input channels ({c}) and the output channels ({o})"
            )));
        }
        if w.0[1] * g != c {
            return Err(IrError::shape(format!(
                "{name}: the input has {c} channels but the weight {w} expects {} (weight dim 1 x groups={g})",
                w.0[1] * g
            )));
        }
        let mut dims = vec![x.0[0], o];
        for i in 0..sd {
            let padded = x.0[2 + i] + self.pad[i].0 + self.pad[i].1;
            let span = self.dilation[i] * (w.0[2 + i].max(1) - 1) + 1;
            if w.0[2 + i] == 0 || span > padded {
                return Err(IrError::shape(format!(
                    "{name}: the kernel {w} (extent {span} with dilation along spatial dim {i}) is larger than the padded input ({padded} along that dim)"
                )));
            }
            dims.push((padded - span) / self.stride[i] + 1);
        }
        Ok(Shape(dims))
    }
}

/// The convolution.
pub struct Conv;

fn spec(attr: &Attr) -> Result<&ConvSpec> {
    match attr {
        Attr::Conv(s) => Ok(s),
        _ => Err(IrError::internal("conv needs a conv attribute")),
    }
}

impl LibraryOp for Conv {
    fn id(&self) -> LibId {
        LibId::CONV
    }
    fn name(&self) -> &'static str {
        "conv"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Conv(s) => format!(
                "conv{}d[stride={:?}, pad={:?}, dilation={:?}, groups={}]",
                s.spatial(),
                s.stride,
                s.pad,
                s.dilation,
                s.groups
            ),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        let t = promote_v(operands[0].0, operands[1].0);
        if !t.dtype.is_float() {
            return Err(IrError::dtype(format!(
                "conv{}d of {} and {} operands is not supported; cast to a float dtype",
                s.spatial(),
                operands[0].0.dtype,
                operands[1].0.dtype
            )));
        }
        Ok((VType::strong(t.dtype), s.out_shape(operands[0].1, operands[1].1)?))
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
        let s = spec(&call.attr)?;
        let typed = |x: DType, w: DType| {
            x == w
                && (x == out.dtype || (x.is_half() && out.dtype == DType::F32))
                && out.dtype.is_float()
                && !out.dtype.is_half()
        };
        match operands {
            [x, w] if typed(x.dtype, w.dtype) => {
                if s.out_shape(&x.shape, &w.shape)? == out.shape {
                    Ok(())
                } else {
                    bad_call(self, "has an output of the wrong shape")
                }
            }
            _ => bad_call(
                self,
                "needs two operands of one dtype: the output's (float32, float64) or 16-bit with a float32 output",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec2(stride: usize, pad: usize, dilation: usize, groups: usize) -> ConvSpec {
        ConvSpec { stride: vec![stride; 2], pad: vec![(pad, pad); 2], dilation: vec![dilation; 2], groups }
    }

    #[test]
    fn output_shapes_follow_torch() {
        let x = Shape(vec![2, 4, 9, 7]);
        assert_eq!(spec2(1, 1, 1, 1).out_shape(&x, &Shape(vec![8, 4, 3, 3])).unwrap().0, vec![2, 8, 9, 7]);
        assert_eq!(spec2(2, 0, 1, 1).out_shape(&x, &Shape(vec![8, 4, 3, 3])).unwrap().0, vec![2, 8, 4, 3]);
        assert_eq!(spec2(1, 0, 2, 2).out_shape(&x, &Shape(vec![6, 2, 3, 3])).unwrap().0, vec![2, 6, 5, 3]);
    }

    #[test]
    fn bad_geometry_is_a_shape_error() {
        let x = Shape(vec![1, 4, 5, 5]);
        for (s, w) in [
            (spec2(1, 0, 1, 1), Shape(vec![8, 3, 3, 3])),
            (spec2(1, 0, 1, 3), Shape(vec![6, 1, 3, 3])),
            (spec2(1, 0, 1, 1), Shape(vec![8, 4, 7, 3])),
            (spec2(1, 0, 3, 1), Shape(vec![8, 4, 3, 3])),
            (spec2(1, 0, 1, 1), Shape(vec![8, 4, 3])),
        ] {
            let e = s.out_shape(&x, &w).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Shape, "{}", e.message);
        }
    }
}
