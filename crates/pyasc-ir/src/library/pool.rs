//! 2-D max and average pooling over the last two axes (`max_pool2d`, `avg_pool2d`, PyTorch's
//! conventions: padding adds `-inf` for max and zeros, counted in the mean, for average).

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::op::BinaryOp;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::{PadMode, PadSpec, SliceDim, ViewSpec};

/// What a pooling window computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// The largest value (NaN when the window holds one).
    Max,
    /// The sum divided by the window's size, padding included.
    Avg,
}

/// A pooling window's geometry over the last two axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolSpec {
    /// Max or average.
    pub kind: PoolKind,
    /// Window extent (height, width).
    pub kernel: [usize; 2],
    /// Step between windows.
    pub stride: [usize; 2],
    /// Padding on both sides, at most half the window.
    pub pad: [usize; 2],
}

impl PoolSpec {
    /// The result shape for input shape `x` (rank 3 or 4), or a shape error.
    pub fn out_shape(&self, x: &Shape) -> Result<Shape> {
        let r = x.rank();
        if r != 3 && r != 4 {
            return Err(IrError::shape(format!("pool2d takes a rank-3 or rank-4 input, not {x}")));
        }
        if self.kernel.contains(&0) || self.stride.contains(&0) {
            return Err(IrError::shape("pool2d: kernel and stride must be positive"));
        }
        let mut dims = x.0.clone();
        for i in 0..2 {
            let padded = x.0[r - 2 + i] + 2 * self.pad[i];
            if 2 * self.pad[i] > self.kernel[i] || self.kernel[i] > padded {
                return Err(IrError::shape(format!(
                    "pool2d: window {:?} with padding {:?} does not fit the input {x}",
                    self.kernel, self.pad
                )));
            }
            dims[r - 2 + i] = (padded - self.kernel[i]) / self.stride[i] + 1;
        }
        Ok(Shape(dims))
    }
}

/// Pooling.
pub struct Pool;

impl LibraryOp for Pool {
    fn id(&self) -> LibId {
        LibId::POOL
    }
    fn name(&self) -> &'static str {
        "pool2d"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Pool(s) => format!(
                "{}_pool2d[kernel={:?}, stride={:?}, pad={:?}]",
                if s.kind == PoolKind::Max { "max" } else { "avg" },
                s.kernel,
                s.stride,
                s.pad
            ),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let Attr::Pool(s) = attr else { return Err(IrError::internal("pool2d needs a pool attribute")) };
        let dtype = operands[0].0.dtype;
        if !dtype.is_float() {
            return Err(IrError::dtype(format!("pool2d of {dtype} is not supported; cast to a float dtype")));
        }
        Ok((VType::strong(dtype), s.out_shape(operands[0].1)?))
    }
    fn operand_dtype(&self, _i: usize, result: DType) -> Option<DType> {
        Some(result)
    }
    fn fuses_epilogue(&self) -> bool {
        true
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let Attr::Pool(s) = &call.attr else { return bad_call(self, "needs a pool attribute") };
        match operands {
            [x] if x.dtype == out.dtype
                && matches!(out.dtype, DType::F32 | DType::F64)
                && s.out_shape(&x.shape)? == out.shape =>
            {
                Ok(())
            }
            _ => bad_call(self, "needs one float32 or float64 operand pooled to its output"),
        }
    }
    /// Each window tap `(i, j)` is a strided slice of the padded input; its cotangent is the
    /// slice's adjoint of what the tap receives. Average: every tap receives `g / (kh * kw)`.
    /// Max: the first tap in row-major window order that equals the result receives all of
    /// `g` (XLA's `select_and_scatter` with `>=`, PyTorch's `max_pool2d` backward).
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        y: NodeId,
        g: NodeId,
        _wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        let Attr::Pool(s) = attr else { return Err(IrError::internal("pool2d needs its spec")) };
        let x = inputs[0];
        let xs = b.shape(x);
        let rank = xs.rank();
        let ys = b.shape(y);
        let mut widths = vec![(0, 0); rank];
        widths[rank - 2] = (s.pad[0], s.pad[0]);
        widths[rank - 1] = (s.pad[1], s.pad[1]);
        let padded = Shape(xs.0.iter().zip(&widths).map(|(n, w)| n + w.0 + w.1).collect());
        let tap = |i: usize, j: usize| {
            let mut dims: Vec<SliceDim> = padded.0.iter().map(|&n| SliceDim { start: 0, step: 1, len: n }).collect();
            for (axis, at) in [(rank - 2, i), (rank - 1, j)] {
                let k = axis + 2 - rank;
                dims[axis] = SliceDim { start: at, step: s.stride[k] as isize, len: ys.0[axis] };
            }
            ViewSpec::Slice(dims)
        };
        // The max rule compares each tap of the input, padded with -inf, with the result.
        let xp = match s.kind {
            PoolKind::Max if s.pad != [0, 0] => {
                let spec = PadSpec {
                    widths: widths.clone(),
                    mode: PadMode::Constant,
                    cval: crate::Scalar::Float(f64::NEG_INFINITY),
                };
                b.g.pad(spec, x, b.loc.clone())?
            }
            _ => x,
        };
        let share = match s.kind {
            PoolKind::Avg => Some(b.scale(1.0 / (s.kernel[0] * s.kernel[1]) as f64, g)?),
            PoolKind::Max => None,
        };
        let zero = b.c(0.0);
        let mut left = g;
        let mut total: Option<NodeId> = None;
        for i in 0..s.kernel[0] {
            for j in 0..s.kernel[1] {
                let spec = tap(i, j);
                let got = match share {
                    Some(v) => v,
                    None => {
                        let t = b.view(spec.clone(), xp)?;
                        let hit = b.bin(BinaryOp::Eq, t, y)?;
                        let got = b.select(hit, left, zero)?;
                        left = b.select(hit, zero, left)?;
                        got
                    }
                };
                let back = crate::grad::structural::view(b, &spec, &padded, got)?;
                total = Some(match total {
                    Some(t) => b.add(t, back)?,
                    None => back,
                });
            }
        }
        let total = total.ok_or_else(|| IrError::internal("pool2d: an empty window"))?;
        if s.pad == [0, 0] {
            return Ok(vec![Some(total)]);
        }
        let dims = widths.iter().zip(&xs.0).map(|(w, &n)| SliceDim { start: w.0, step: 1, len: n }).collect();
        Ok(vec![Some(b.view(ViewSpec::Slice(dims), total)?)])
    }
}
