//! N-d convolution (`conv1d`, `conv2d`, `conv3d`, PyTorch's conventions): input
//! `(N, C, *spatial)`, weight `(O, C / groups, *kernel)`, result `(N, O, *out)`. Run by an
//! implicit-GEMM routine; bias and activations over the result are elementwise epilogues in
//! its kernel, as for matmul.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{promote_v, DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::{SliceDim, ViewSpec};

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

    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        _y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        let s = spec(attr)?.clone();
        let (x, w) = (inputs[0], inputs[1]);
        let dx = if wanted[0] { Some(conv_input_grad(b, &s, x, w, g)?) } else { None };
        let dw = if wanted[1] { Some(conv_weight_grad(b, &s, x, w, g)?) } else { None };
        Ok(vec![dx, dw])
    }
}

fn conv_node(b: &mut Builder<'_>, spec: ConvSpec, x: NodeId, w: NodeId) -> Result<NodeId> {
    b.g.library(LibId::CONV, Attr::Conv(spec), &[x, w], b.loc.clone())
}

/// `x` cut to `[start, start + len)` along `axis` (a view).
fn cut(b: &mut Builder<'_>, x: NodeId, axis: usize, start: usize, len: usize) -> Result<NodeId> {
    b.slice_axis(x, axis, SliceDim { start, step: 1, len })
}

/// The cotangent of a convolution's input: the cotangent spread out by the stride, then
/// correlated with the spatially flipped kernel whose in and out channels swap within each
/// group (a transposed convolution).
fn conv_input_grad(b: &mut Builder<'_>, s: &ConvSpec, x: NodeId, w: NodeId, g: NodeId) -> Result<NodeId> {
    let sd = s.spatial();
    let (xs, ws) = (b.shape(x), b.shape(w));
    let (c, o, groups) = (xs.0[1], ws.0[0], s.groups);
    let mut cur = g;
    let mut pads = Vec::with_capacity(sd);
    for i in 0..sd {
        let axis = 2 + i;
        let (k, d, st) = (ws.0[axis], s.dilation[i], s.stride[i]);
        let y = b.shape(cur).0[axis];
        if st > 1 && y > 0 {
            // Spread: (.., Y, ..) -> (.., Y, st, ..) with zeros after each element, cut to (Y-1)st+1.
            let mut split = b.shape(cur).0.clone();
            split.insert(axis + 1, 1);
            cur = b.reshape(cur, &Shape(split))?;
            let mut widths = vec![(0, 0); sd + 3];
            widths[axis + 1] = (0, st - 1);
            cur = crate::grad::structural::pad_zeros(b, cur, widths)?;
            let mut m = b.shape(cur).0.clone();
            m.remove(axis + 1);
            m[axis] = y * st;
            cur = b.reshape(cur, &Shape(m))?;
            cur = cut(b, cur, axis, 0, (y - 1) * st + 1)?;
        }
        let len = b.shape(cur).0[axis] as isize;
        let reach = ((k - 1) * d) as isize;
        let pl = s.pad[i].0 as isize;
        let xlen = xs.0[axis] as isize;
        let before = reach - pl;
        let after = xlen - len + pl;
        // Negative padding crops the spread cotangent.
        let start = (-before).max(0) as usize;
        let stop = (len - (-after).max(0)) as usize;
        cur = cut(b, cur, axis, start, stop.saturating_sub(start))?;
        pads.push((before.max(0) as usize, after.max(0) as usize));
    }
    // The kernel: (G, O/G, C/G, K..) -> (G, C/G, O/G, K..), flipped along every K.
    let (og, cg) = (o / groups, c / groups);
    let mut dims = vec![groups, og, cg];
    dims.extend_from_slice(&ws.0[2..]);
    let wk = b.reshape(w, &Shape(dims))?;
    let mut perm = vec![0, 2, 1];
    perm.extend(3..3 + sd);
    let wk = b.view(ViewSpec::Transpose(perm), wk)?;
    let mut flat = vec![c, og];
    flat.extend_from_slice(&ws.0[2..]);
    let wk = b.reshape(wk, &Shape(flat))?;
    let flip: Vec<SliceDim> = b
        .shape(wk)
        .0
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            if i >= 2 && n > 0 {
                SliceDim { start: n - 1, step: -1, len: n }
            } else {
                SliceDim { start: 0, step: 1, len: n }
            }
        })
        .collect();
    let wk = b.view(ViewSpec::Slice(flip), wk)?;
    let spec = ConvSpec { stride: vec![1; sd], pad: pads, dilation: s.dilation.clone(), groups };
    conv_node(b, spec, cur, wk)
}

/// The cotangent of a convolution's kernel: the padded input correlated with the output's
/// cotangent, batch and channels swapped, the stride becoming the dilation.
fn conv_weight_grad(b: &mut Builder<'_>, s: &ConvSpec, x: NodeId, w: NodeId, g: NodeId) -> Result<NodeId> {
    let sd = s.spatial();
    let (xs, ws) = (b.shape(x), b.shape(w));
    let (n, c, groups) = (xs.0[0], xs.0[1], s.groups);
    let cg = c / groups;
    let mut widths = vec![(0, 0), (0, 0)];
    widths.extend(s.pad.iter().copied());
    let xp = if s.pad.iter().all(|p| *p == (0, 0)) { x } else { crate::grad::structural::pad_zeros(b, x, widths)? };
    let xps = b.shape(xp);
    // x: (N, G, C/G, S..) -> (C/G, G, N, S..) -> (C/G, G*N, S..): group gi's channels gi*N + n.
    let mut split = vec![n, groups, cg];
    split.extend_from_slice(&xps.0[2..]);
    let xt = b.reshape(xp, &Shape(split))?;
    let mut perm = vec![2, 1, 0];
    perm.extend(3..3 + sd);
    let xt = b.view(ViewSpec::Transpose(perm), xt)?;
    let mut merged = vec![cg, groups * n];
    merged.extend_from_slice(&xps.0[2..]);
    let xt = b.reshape(xt, &Shape(merged))?;
    // g: (N, O, Y..) -> (O, N, Y..), a kernel of O outputs over N inputs per group.
    let mut perm = vec![1, 0];
    perm.extend(2..2 + sd);
    let gt = b.view(ViewSpec::Transpose(perm), g)?;
    let spec = ConvSpec { stride: s.dilation.clone(), pad: vec![(0, 0); sd], dilation: s.stride.clone(), groups };
    let r = conv_node(b, spec, xt, gt)?;
    // (C/G, O, K'..) -> (O, C/G, K'..), cut to the kernel's extents.
    let mut perm = vec![1, 0];
    perm.extend(2..2 + sd);
    let mut r = b.view(ViewSpec::Transpose(perm), r)?;
    for i in 0..sd {
        r = cut(b, r, 2 + i, 0, ws.0[2 + i])?;
    }
    Ok(r)
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
