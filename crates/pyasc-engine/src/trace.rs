//! Tracing state: the graph an operator's function builds while it runs on traced tensors.
//!
//! [`Trace::begin`] opens a trace with one input node per argument of a [`Signature`]; each
//! operation on a traced tensor appends a node ([`Trace::apply`]); [`Trace::finish`] closes it
//! and hands over the graph. Tensors that escape the function keep a handle on the closed trace,
//! and using them is a typed error.

use crate::gears::Gears;
use crate::signature::Signature;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::op::Op;
use pyasc_ir::{DType, Graph, NodeId, Shape, SourceLoc};
use pyasc_runtime::InputView;
use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

/// An array made while tracing, passed to the plan as an extra argument on every call.
#[derive(Clone, Debug)]
pub struct ConstArray {
    /// Element type.
    pub dtype: DType,
    /// Extents.
    pub shape: Vec<usize>,
    /// The elements, C order, in 8-byte-aligned storage.
    pub data: Vec<u64>,
}

impl ConstArray {
    /// A copy of `bytes` (the C-order elements of `dtype` and `shape`).
    pub fn from_bytes(dtype: DType, shape: Vec<usize>, bytes: &[u8]) -> Self {
        let mut data = vec![0u64; bytes.len().div_ceil(8).max(1)];
        // SAFETY: `data` holds at least `bytes.len()` bytes and does not overlap `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.as_mut_ptr() as *mut u8, bytes.len()) };
        ConstArray { dtype, shape, data }
    }

    /// A view of the elements.
    pub fn view(&self) -> InputView {
        InputView::contiguous(self.data.as_ptr() as *const u8, self.dtype, self.shape.clone())
    }
}

/// An array the traced function read from outside itself (a module global, a closure
/// variable, an attribute): an implicit input, read from the live array at every call, so a
/// change made in place between calls is seen.
#[derive(Clone)]
pub struct Captured {
    /// Element type when traced.
    pub dtype: DType,
    /// Extents when traced.
    pub shape: Vec<usize>,
    /// Identity of the captured object (one input per object within a trace).
    pub key: usize,
    /// The binding's handle on the object, kept alive as long as the plan.
    pub handle: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Captured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Captured({} {:?})", self.dtype, self.shape)
    }
}

/// An input the trace added after the caller's arguments, in the order the graph numbers them.
#[derive(Clone, Debug)]
pub enum Extra {
    /// An array made while tracing; its values are fixed for the plan.
    Const(ConstArray),
    /// An array captured from outside the function; read at every call.
    Captured(Captured),
}

impl Extra {
    /// The extents of the input.
    pub fn shape(&self) -> &[usize] {
        match self {
            Extra::Const(c) => &c.shape,
            Extra::Captured(c) => &c.shape,
        }
    }
}

/// A graph being traced; closed once the function returns.
#[derive(Debug, Default)]
pub struct Trace {
    /// The graph built so far.
    pub graph: Graph,
    /// False once tracing ended: tensors that escaped can no longer be used.
    pub open: bool,
    /// Set when the function read a traced shape (then a new shape needs a new trace).
    pub shape_read: bool,
    /// Arrays created or captured during tracing: extra inputs after the caller's arguments.
    pub extras: Vec<Extra>,
    /// The padded axes of a geared trace (reductions over them are masked).
    pub gears: Option<Gears>,
    /// Precision scopes open when tracing began (only later ones apply to this trace).
    pub scope_base: usize,
    /// Nodes made by `stop_gradient`: differentiation passes no cotangent through them.
    pub stopped: Vec<NodeId>,
}

/// Shared handle to a trace.
pub type TraceRef = Arc<Mutex<Trace>>;

/// A finished trace, ready to compile.
#[derive(Debug)]
pub struct Traced {
    /// The graph, with its outputs set.
    pub graph: Graph,
    /// The function read a traced shape.
    pub shape_read: bool,
    /// Arrays created or captured during tracing, in input order after the arguments.
    pub extras: Vec<Extra>,
    /// The function returned a tuple or list (results are returned as a tuple).
    pub tuple_out: bool,
}

/// A node added to a trace, with what a tensor of it needs to know.
#[derive(Clone, Debug)]
pub struct TracedNode {
    /// The node.
    pub id: NodeId,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
}

impl Trace {
    /// Open a trace with one input per argument of `sig`; returns the inputs' nodes.
    pub fn begin(sig: &Signature) -> (TraceRef, Vec<TracedNode>) {
        let mut t = Trace { open: true, scope_base: crate::scope::depth(), ..Default::default() };
        let inputs = sig
            .args()
            .iter()
            .map(|a| {
                let vt = a.vtype();
                let id = t.graph.add_input(vt, Shape(a.shape().to_vec()));
                TracedNode { id, dtype: vt.dtype, shape: a.shape().to_vec() }
            })
            .collect();
        (Arc::new(Mutex::new(t)), inputs)
    }

    /// Lock a trace.
    pub fn lock(trace: &TraceRef) -> MutexGuard<'_, Trace> {
        trace.lock().expect("trace lock poisoned")
    }

    /// Append `op` over `operands`, typed, at the user's line `loc`.
    pub fn apply(trace: &TraceRef, op: Op, operands: &[NodeId], loc: Option<SourceLoc>) -> Result<TracedNode> {
        let mut t = Self::lock(trace);
        t.check_open(loc.as_ref())?;
        let t = &mut *t;
        let start = t.graph.len();
        let masked;
        let operands = match &mut t.gears {
            Some(gears) => {
                masked = gears.mask_operands(&mut t.graph, &mut t.extras, &op, operands, loc.as_ref())?;
                &masked[..]
            }
            None => operands,
        };
        let id = t.graph.apply(op, operands, loc)?;
        if let Some(p) = crate::scope::innermost_since(t.scope_base) {
            t.graph.mark_scope(start, p);
        }
        let n = t.graph.node(id);
        Ok(TracedNode { id, dtype: n.dtype(), shape: n.shape.0.clone() })
    }

    /// Append the nodes of the vector-Jacobian product: the cotangents of `wrt` given a
    /// cotangent for each of `outputs` (`None`: ones, the seed of a gradient). A node no output
    /// depends on gets zeros. See [`pyasc_ir::grad`].
    pub fn vjp(
        trace: &TraceRef,
        outputs: &[NodeId],
        cotangents: &[Option<NodeId>],
        wrt: &[NodeId],
        loc: Option<SourceLoc>,
    ) -> Result<Vec<TracedNode>> {
        let mut t = Self::lock(trace);
        t.check_open(loc.as_ref())?;
        if t.gears.is_some() {
            return Err(IrError::new(
                ErrorKind::Unsupported,
                "gradients of operators with dynamic_shape=True are not supported; differentiate a static-shape operator",
            )
            .at(loc.as_ref()));
        }
        let t = &mut *t;
        let start = t.graph.len();
        let g = &mut t.graph;
        let seeds: Vec<NodeId> = outputs
            .iter()
            .zip(cotangents)
            .map(|(o, c)| match c {
                Some(c) => *c,
                None => {
                    let n = g.node(*o);
                    let (dtype, shape) = (n.dtype(), n.shape.clone());
                    g.fill(pyasc_ir::Scalar::Float(1.0), dtype, shape, loc.clone())
                }
            })
            .collect();
        let stopped = t.stopped.clone();
        let mut stop = |_: &mut Graph, node: NodeId, _: NodeId| Ok(stopped.contains(&node).then(Vec::new));
        let grads = pyasc_ir::grad::vjp(g, outputs, &seeds, wrt, loc.clone(), &mut stop)?;
        let out = wrt
            .iter()
            .zip(grads)
            .map(|(w, c)| {
                let id = c.unwrap_or_else(|| {
                    let n = g.node(*w);
                    let (dtype, shape) = (n.dtype(), n.shape.clone());
                    g.fill(pyasc_ir::Scalar::Float(0.0), dtype, shape, loc.clone())
                });
                let n = g.node(id);
                TracedNode { id, dtype: n.dtype(), shape: n.shape.0.clone() }
            })
            .collect();
        if let Some(p) = crate::scope::innermost_since(t.scope_base) {
            t.graph.mark_scope(start, p);
        }
        Ok(out)
    }

    /// `stop_gradient(x)`: a copy of `x` that differentiation treats as a constant.
    pub fn stop_gradient(trace: &TraceRef, x: NodeId, loc: Option<SourceLoc>) -> Result<TracedNode> {
        let n = Self::apply(trace, Op::Unary(pyasc_ir::UnaryOp::Positive), &[x], loc)?;
        Self::lock(trace).stopped.push(n.id);
        Ok(n)
    }

    /// A typed error when the trace was closed (a tensor escaped its operator).
    pub fn check_open(&self, loc: Option<&SourceLoc>) -> Result<()> {
        if self.open {
            Ok(())
        } else {
            Err(IrError::new(ErrorKind::Trace, "a traced tensor was used after its operator returned").at(loc))
        }
    }

    /// A Python scalar constant (weakly typed), at the user's line `loc`.
    pub fn scalar(trace: &TraceRef, value: pyasc_ir::Scalar, loc: Option<SourceLoc>) -> NodeId {
        Self::lock(trace).graph.py_scalar(value, loc)
    }

    /// Add an array computed at trace time as an extra input.
    pub fn add_constant(trace: &TraceRef, c: ConstArray) -> TracedNode {
        let mut t = Self::lock(trace);
        let id = t.graph.add_input(pyasc_ir::dtype::VType::strong(c.dtype), Shape(c.shape.clone()));
        let r = TracedNode { id, dtype: c.dtype, shape: c.shape.clone() };
        t.extras.push(Extra::Const(c));
        r
    }

    /// The input for an array captured from outside the function (one per object `key`).
    pub fn add_captured(trace: &TraceRef, c: Captured, loc: Option<&SourceLoc>) -> Result<TracedNode> {
        let mut t = Self::lock(trace);
        t.check_open(loc)?;
        let inputs = t.graph.inputs.clone();
        let n_args = inputs.len() - t.extras.len();
        for (k, e) in t.extras.iter().enumerate() {
            if let Extra::Captured(old) = e {
                if old.key == c.key && old.dtype == c.dtype && old.shape == c.shape {
                    return Ok(TracedNode { id: inputs[n_args + k], dtype: c.dtype, shape: c.shape.clone() });
                }
            }
        }
        let id = t.graph.add_input(pyasc_ir::dtype::VType::strong(c.dtype), Shape(c.shape.clone()));
        let r = TracedNode { id, dtype: c.dtype, shape: c.shape.clone() };
        t.extras.push(Extra::Captured(c));
        Ok(r)
    }

    /// Close the trace without a result (the function raised).
    pub fn abort(trace: &TraceRef) {
        Self::lock(trace).open = false;
    }

    /// Close the trace with the function's results.
    pub fn finish(trace: &TraceRef, outputs: Vec<NodeId>, tuple_out: bool) -> Traced {
        let mut t = Self::lock(trace);
        t.open = false;
        t.graph.outputs = outputs;
        Traced {
            graph: std::mem::take(&mut t.graph),
            shape_read: t.shape_read,
            extras: std::mem::take(&mut t.extras),
            tuple_out,
        }
    }
}
