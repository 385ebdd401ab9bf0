//! The tensor-level SSA graph: nodes in an arena addressed by [`NodeId`], operands always
//! earlier than their users, each node typed and tagged with the user's source line.

use crate::attr::{Attr, AttrId};
use crate::dtype::{VType, WeakKind};
use crate::error::{IrError, Result, SourceLoc};
use crate::infer::infer;
use crate::library::LibId;
use crate::op::{BinaryOp, Op, UnaryOp};
use crate::precision::{Precision, ScopeSpan};
use crate::scalar::Scalar;
use crate::shape::Shape;
use crate::view::{PadSpec, ViewSpec};
use crate::DType;

/// Index of a node in its graph's arena.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One operation with its operands, result type and origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What the node computes.
    pub op: Op,
    /// Operands, all earlier in the arena.
    pub inputs: Vec<NodeId>,
    /// Result dtype (and weakness for Python scalars).
    pub vtype: VType,
    /// Result shape.
    pub shape: Shape,
    /// The user's line that created the node.
    pub loc: Option<SourceLoc>,
}

impl Node {
    /// The result dtype.
    pub fn dtype(&self) -> DType {
        self.vtype.dtype
    }
}

/// A traced function: its arguments, its nodes and its results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The arena; a node's operands always come before it.
    pub nodes: Vec<Node>,
    /// The node of each argument, in argument order.
    pub inputs: Vec<NodeId>,
    /// The returned nodes, in order.
    pub outputs: Vec<NodeId>,
    /// Op attributes (`Op::View(a)` and `Op::Library(_, a)` read `attrs[a]`).
    pub attrs: Vec<Attr>,
    /// Nodes traced inside `pyasc.precision_scope` blocks, in order (read and cleared by the
    /// compiler's `precision` pass).
    pub scopes: Vec<ScopeSpan>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Append a node as is (no inference); passes use this when rebuilding.
    pub fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId((self.nodes.len() - 1) as u32)
    }

    /// Record that nodes `start..self.len()` were traced inside a scope of `p`.
    pub fn mark_scope(&mut self, start: usize, p: Precision) {
        let end = self.nodes.len() as u32;
        let start = start as u32;
        if start >= end {
            return;
        }
        match self.scopes.last_mut() {
            Some(last) if last.end == start && last.precision == p => last.end = end,
            _ => self.scopes.push(ScopeSpan { start, end, precision: p }),
        }
    }

    /// The innermost precision scope node `id` was traced in, if any.
    pub fn scope_of(&self, id: NodeId) -> Option<Precision> {
        let i = id.0;
        self.scopes.iter().rev().find(|s| s.start <= i && i < s.end).map(|s| s.precision)
    }

    /// Add the next function argument.
    pub fn add_input(&mut self, vtype: VType, shape: Shape) -> NodeId {
        let i = self.inputs.len() as u32;
        let id = self.push(Node { op: Op::Input(i), inputs: vec![], vtype, shape, loc: None });
        self.inputs.push(id);
        id
    }

    /// Add a constant of the given type (weak for Python scalars).
    pub fn constant(&mut self, value: Scalar, vtype: VType, loc: Option<SourceLoc>) -> NodeId {
        let value = value.cast(vtype.dtype);
        self.push(Node { op: Op::Const(value), inputs: vec![], vtype, shape: Shape::scalar(), loc })
    }

    /// Add a constant filling `shape` with `value` (converted to `dtype`).
    pub fn fill(&mut self, value: Scalar, dtype: DType, shape: Shape, loc: Option<SourceLoc>) -> NodeId {
        let value = value.cast(dtype);
        self.push(Node { op: Op::Fill(value), inputs: vec![], vtype: VType::strong(dtype), shape, loc })
    }

    /// Add a Python scalar constant: bool, int or float, typed weakly.
    pub fn py_scalar(&mut self, value: Scalar, loc: Option<SourceLoc>) -> NodeId {
        let kind = match value {
            Scalar::Bool(_) => WeakKind::Bool,
            Scalar::Int(_) => WeakKind::Int,
            Scalar::Float(_) => WeakKind::Float,
        };
        self.constant(value, VType::weak(kind), loc)
    }

    /// The attribute `a`.
    pub fn attr(&self, a: AttrId) -> Result<&Attr> {
        self.attrs.get(a.0 as usize).ok_or_else(|| IrError::internal(format!("attribute #{} does not exist", a.0)))
    }

    /// Add an attribute to the arena.
    pub fn add_attr(&mut self, attr: Attr) -> AttrId {
        self.attrs.push(attr);
        AttrId(self.attrs.len() as u32 - 1)
    }

    /// The result type and shape of `op` over operands of these types: [`infer`] for ops
    /// without attributes, the view or the library op for the others.
    pub fn infer_op(&self, op: &Op, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        if !op.arity_ok(operands.len()) || op.is_leaf() {
            if let Op::Library(id, _) = op {
                let name = id.op()?.name();
                return Err(IrError::internal(format!("{name} does not take {} operands", operands.len())));
            }
            return infer(op, operands);
        }
        match *op {
            Op::View(a) => {
                let Attr::View(spec) = self.attr(a)? else {
                    return Err(IrError::internal(format!("view attribute #{} is not a view", a.0)));
                };
                Ok((operands[0].0, spec.out_shape(operands[0].1)?))
            }
            Op::Library(id, a) => id.op()?.infer(self.attr(a)?, operands),
            _ => infer(op, operands),
        }
    }

    /// Add an op node, inferring its type; errors carry `loc`.
    pub fn apply(&mut self, op: Op, inputs: &[NodeId], loc: Option<SourceLoc>) -> Result<NodeId> {
        if let Some(bad) = inputs.iter().find(|i| i.index() >= self.nodes.len()) {
            return Err(IrError::internal(format!("operand %{} does not exist", bad.0)).at(loc.as_ref()));
        }
        let operands: Vec<(VType, &Shape)> =
            inputs.iter().map(|i| (self.node(*i).vtype, &self.node(*i).shape)).collect();
        let (vtype, shape) = self.infer_op(&op, &operands).map_err(|e| e.at(loc.as_ref()))?;
        shape.check_size(vtype.dtype.size()).map_err(|e| e.at(loc.as_ref()))?;
        Ok(self.push(Node { op, inputs: inputs.to_vec(), vtype, shape, loc }))
    }

    /// Add a library op with its attribute; errors carry `loc`.
    pub fn library(&mut self, id: LibId, attr: Attr, inputs: &[NodeId], loc: Option<SourceLoc>) -> Result<NodeId> {
        let a = self.add_attr(attr);
        self.apply(Op::Library(id, a), inputs, loc)
    }

    /// Add a view (movement op) of `x`; errors carry `loc`.
    pub fn view(&mut self, spec: ViewSpec, x: NodeId, loc: Option<SourceLoc>) -> Result<NodeId> {
        let n = self.node(x);
        let shape = spec.out_shape(&n.shape).map_err(|e| e.at(loc.as_ref()))?;
        // A view allocates nothing, but its elements must still be countable.
        shape.check_size(1).map_err(|e| e.at(loc.as_ref()))?;
        let vtype = n.vtype;
        let op = Op::View(self.add_attr(Attr::View(spec)));
        Ok(self.push(Node { op, inputs: vec![x], vtype, shape, loc }))
    }

    /// Add `np.pad` of `x`; errors carry `loc`.
    pub fn pad(&mut self, mut spec: PadSpec, x: NodeId, loc: Option<SourceLoc>) -> Result<NodeId> {
        spec.cval = spec.cval.cast(self.node(x).dtype());
        self.library(LibId::PAD, Attr::Pad(spec), &[x], loc)
    }

    /// Shorthand for a unary op.
    pub fn unary(&mut self, op: UnaryOp, x: NodeId, loc: Option<SourceLoc>) -> Result<NodeId> {
        self.apply(Op::Unary(op), &[x], loc)
    }

    /// Shorthand for a binary op.
    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId, loc: Option<SourceLoc>) -> Result<NodeId> {
        self.apply(Op::Binary(op), &[a, b], loc)
    }

    /// The same graph for arguments of new shapes (same ranks and dtypes): every node's
    /// shape inferred again. `None` when a node fixes a shape (a view, a filled constant),
    /// so the function must be traced again for these shapes.
    pub fn respecialize(&self, shapes: &[Vec<usize>]) -> Option<Result<Graph>> {
        let mut out = Graph { attrs: self.attrs.clone(), ..Graph::default() };
        for (i, n) in self.nodes.iter().enumerate() {
            let node = match n.op {
                Op::Input(k) => {
                    let s = shapes.get(k as usize)?;
                    if s.len() != n.shape.rank() {
                        return None;
                    }
                    Node { shape: Shape(s.clone()), ..n.clone() }
                }
                Op::Const(_) => n.clone(),
                Op::View(_) | Op::Fill(_) => return None,
                Op::Library(id, _) if !id.op().is_ok_and(|l| l.reinfers()) => return None,
                _ => {
                    let operands: Vec<(VType, &Shape)> =
                        n.inputs.iter().map(|x| (out.node(*x).vtype, &out.node(*x).shape)).collect();
                    match out.infer_op(&n.op, &operands) {
                        Ok((vtype, shape)) => Node { vtype, shape, ..n.clone() },
                        Err(e) => return Some(Err(e.at(n.loc.as_ref()))),
                    }
                }
            };
            debug_assert_eq!(out.nodes.len(), i);
            out.push(node);
        }
        out.inputs = self.inputs.clone();
        out.outputs = self.outputs.clone();
        Some(Ok(out))
    }

    /// For each node, how many times it is used as an operand or output.
    pub fn use_counts(&self) -> Vec<u32> {
        let mut uses = vec![0u32; self.nodes.len()];
        for n in &self.nodes {
            for i in &n.inputs {
                uses[i.index()] += 1;
            }
        }
        for o in &self.outputs {
            uses[o.index()] += 1;
        }
        uses
    }

    /// Nodes reachable from the outputs (inputs always count as live).
    pub fn live(&self) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        for o in &self.outputs {
            live[o.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for op in &self.nodes[i].inputs {
                    live[op.index()] = true;
                }
            }
        }
        for i in &self.inputs {
            live[i.index()] = true;
        }
        live
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn gelu_graph_builds_with_weak_constants() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![8]));
        let c = g.py_scalar(Scalar::Float(2.5), None);
        let d = g.binary(BinaryOp::Div, x, c, None).unwrap();
        let e = g.unary(UnaryOp::Erf, d, None).unwrap();
        assert_eq!(g.node(e).dtype(), DType::F32);
        assert_eq!(g.node(e).shape, Shape(vec![8]));
        g.outputs.push(e);
        assert_eq!(g.use_counts()[x.index()], 1);
        assert!(g.live().iter().all(|l| *l));
    }

    #[test]
    fn respecialize_reinfers_shapes_and_refuses_fixed_ones() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![4, 3]));
        let b = g.add_input(VType::strong(DType::F32), Shape(vec![3]));
        let y = g.binary(BinaryOp::Add, x, b, None).unwrap();
        g.outputs.push(y);
        let h = g.respecialize(&[vec![7, 5], vec![5]]).unwrap().unwrap();
        assert_eq!(h.node(y).shape, Shape(vec![7, 5]));
        assert!(g.respecialize(&[vec![7, 5], vec![4]]).unwrap().is_err());
        assert!(g.respecialize(&[vec![7], vec![5]]).is_none(), "rank changes need a new trace");
    }

    #[test]
    fn errors_carry_the_source_line() {
        let mut g = Graph::new();
        let a = g.add_input(VType::strong(DType::F32), Shape(vec![3]));
        let b = g.add_input(VType::strong(DType::F32), Shape(vec![4]));
        let loc = SourceLoc { file: "user.py".into(), line: 7 };
        let err = g.binary(BinaryOp::Add, a, b, Some(loc.clone())).unwrap_err();
        assert_eq!(err.loc, Some(loc));
        assert!(err.to_string().contains("user.py:7"));
    }
}
