//! Building gradient nodes: a [`Builder`] appends ops to the graph being differentiated, each
//! tagged with the line that asked for the gradient, with shorthands for the arithmetic the
//! rules write (`mul`, `div`, constants typed weakly so they take the operand's dtype) and
//! for the shape plumbing every rule needs (reducing a broadcast cotangent back to an
//! operand's shape).

use crate::error::{Result, SourceLoc};
use crate::graph::{Graph, NodeId};
use crate::op::{Axes, BinaryOp, Op, ReduceOp, UnaryOp};
use crate::scalar::Scalar;
use crate::shape::Shape;
use crate::view::{SliceDim, ViewSpec};
use crate::DType;

/// Appends gradient nodes to a graph.
pub struct Builder<'g> {
    /// The graph being differentiated (gradient nodes go after its forward nodes).
    pub g: &'g mut Graph,
    /// The line that asked for the gradient.
    pub loc: Option<SourceLoc>,
}

impl Builder<'_> {
    /// The shape of node `x`.
    pub fn shape(&self, x: NodeId) -> Shape {
        self.g.node(x).shape.clone()
    }

    /// The dtype of node `x`.
    pub fn dtype(&self, x: NodeId) -> DType {
        self.g.node(x).dtype()
    }

    /// A Python float constant: weakly typed, so it takes the dtype of what it meets.
    pub fn c(&mut self, v: f64) -> NodeId {
        self.g.py_scalar(Scalar::Float(v), self.loc.clone())
    }

    /// Zeros of `dtype` filling `shape`.
    pub fn zeros(&mut self, dtype: DType, shape: Shape) -> NodeId {
        self.g.fill(Scalar::Float(0.0), dtype, shape, self.loc.clone())
    }

    /// Ones of `dtype` filling `shape`.
    pub fn ones(&mut self, dtype: DType, shape: Shape) -> NodeId {
        self.g.fill(Scalar::Float(1.0), dtype, shape, self.loc.clone())
    }

    /// A unary op.
    pub fn un(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId> {
        self.g.unary(op, x, self.loc.clone())
    }

    /// A binary op.
    pub fn bin(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.g.binary(op, a, b, self.loc.clone())
    }

    /// `a + b`.
    pub fn add(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.bin(BinaryOp::Add, a, b)
    }

    /// `a - b`.
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.bin(BinaryOp::Sub, a, b)
    }

    /// `a * b`.
    pub fn mul(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.bin(BinaryOp::Mul, a, b)
    }

    /// `a / b`.
    pub fn div(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.bin(BinaryOp::Div, a, b)
    }

    /// `v * x` for a constant `v`.
    pub fn scale(&mut self, v: f64, x: NodeId) -> Result<NodeId> {
        let c = self.c(v);
        self.mul(c, x)
    }

    /// `x + v` for a constant `v`.
    pub fn plus(&mut self, x: NodeId, v: f64) -> Result<NodeId> {
        let c = self.c(v);
        self.add(x, c)
    }

    /// `v - x` for a constant `v`.
    pub fn rsub(&mut self, v: f64, x: NodeId) -> Result<NodeId> {
        let c = self.c(v);
        self.sub(c, x)
    }

    /// `x * x`.
    pub fn sq(&mut self, x: NodeId) -> Result<NodeId> {
        self.un(UnaryOp::Square, x)
    }

    /// `1 / x`.
    pub fn recip(&mut self, x: NodeId) -> Result<NodeId> {
        self.un(UnaryOp::Reciprocal, x)
    }

    /// `where(c, a, b)`.
    pub fn select(&mut self, c: NodeId, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.g.apply(Op::Where, &[c, a, b], self.loc.clone())
    }

    /// `x` converted to `dtype` (no node when it already has it).
    pub fn cast(&mut self, x: NodeId, dtype: DType) -> Result<NodeId> {
        if self.dtype(x) == dtype && self.g.node(x).vtype.weak.is_none() {
            return Ok(x);
        }
        self.g.apply(Op::Cast(dtype), &[x], self.loc.clone())
    }

    /// A view of `x`.
    pub fn view(&mut self, spec: ViewSpec, x: NodeId) -> Result<NodeId> {
        self.g.view(spec, x, self.loc.clone())
    }

    /// `x` sliced along `axis` by `dim`, the other axes whole (no node when `dim` takes the
    /// whole axis in order).
    pub fn slice_axis(&mut self, x: NodeId, axis: usize, dim: SliceDim) -> Result<NodeId> {
        let shape = self.shape(x);
        if dim.start == 0 && dim.step == 1 && dim.len == shape.0[axis] {
            return Ok(x);
        }
        let dims = (0..shape.rank())
            .map(|i| if i == axis { dim.clone() } else { SliceDim { start: 0, step: 1, len: shape.0[i] } })
            .collect();
        self.view(ViewSpec::Slice(dims), x)
    }

    /// `x` reversed along `axis` (a view).
    pub fn flip(&mut self, x: NodeId, axis: usize) -> Result<NodeId> {
        let n = self.shape(x).0[axis];
        if n == 0 {
            return Ok(x);
        }
        self.slice_axis(x, axis, SliceDim { start: n - 1, step: -1, len: n })
    }

    /// `x` with the same elements in `shape` (no node when it already has it).
    pub fn reshape(&mut self, x: NodeId, shape: &Shape) -> Result<NodeId> {
        if self.g.node(x).shape == *shape {
            return Ok(x);
        }
        self.view(ViewSpec::Reshape(shape.0.clone()), x)
    }

    /// `x` broadcast to `shape` (no node when it already has it).
    pub fn broadcast(&mut self, x: NodeId, shape: &Shape) -> Result<NodeId> {
        if self.g.node(x).shape == *shape {
            return Ok(x);
        }
        self.view(ViewSpec::BroadcastTo(shape.0.clone()), x)
    }

    /// A reduction of `x` over `axes`.
    pub fn reduce(&mut self, op: ReduceOp, x: NodeId, axes: &[usize], keepdims: bool) -> Result<NodeId> {
        let mut bits = 0u64;
        for a in axes {
            bits |= 1 << a;
        }
        self.g.apply(Op::Reduce { op, axes: Axes(bits), keepdims }, &[x], self.loc.clone())
    }

    /// The cotangent `ct` of a value broadcast from `shape`, summed back to `shape`: leading
    /// axes the broadcast added and axes it stretched from extent 1 are reduced.
    pub fn sum_to(&mut self, ct: NodeId, shape: &Shape) -> Result<NodeId> {
        let have = self.shape(ct);
        if have == *shape {
            return Ok(ct);
        }
        let lead = have.rank() - shape.rank();
        let axes: Vec<usize> =
            (0..have.rank()).filter(|&i| i < lead || (shape.0[i - lead] == 1 && have.0[i] != 1)).collect();
        let summed = if axes.is_empty() { ct } else { self.reduce(ReduceOp::Sum, ct, &axes, true)? };
        self.reshape(summed, shape)
    }

    /// The cotangent of a node reshaped and broadcast back over the axes a reduction removed:
    /// `g` has the reduction's result shape; the result has `full`'s shape.
    pub fn unreduce(&mut self, g: NodeId, full: &Shape, axes: Axes) -> Result<NodeId> {
        let kept: Vec<usize> = full.0.iter().enumerate().map(|(i, &n)| if axes.contains(i) { 1 } else { n }).collect();
        let r = self.reshape(g, &Shape(kept))?;
        self.broadcast(r, full)
    }
}
