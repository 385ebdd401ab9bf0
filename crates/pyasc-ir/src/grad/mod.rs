//! Reverse-mode differentiation of a traced graph.
//!
//! [`vjp`] appends to a graph the nodes that compute the vector-Jacobian product of some of its
//! nodes: given cotangents for the outputs, the cotangent of each requested node. The backward
//! nodes are ordinary nodes of the same graph, so the compiler fuses forward and backward
//! into one plan, and they can be differentiated again (higher orders).
//!
//! The rules: elementwise ops carry theirs in the op table ([`UnaryGrad`], [`BinaryGrad`]);
//! `where`, casts, reductions and views are in [`structural`]; each library op answers
//! [`crate::library::LibraryOp::vjp`]. Integer and boolean values carry no gradient. An op
//! without a rule on the path from a requested node to an output is a typed error naming the
//! op and the user's line.

pub mod build;
pub mod elementwise;
pub mod structural;

pub use build::Builder;
pub use elementwise::{BinaryGrad, Partial, UnaryGrad};

use crate::error::{ErrorKind, IrError, Result, SourceLoc};
use crate::graph::{Graph, NodeId};
use crate::op::Op;

/// A node whose cotangent a caller computes itself (a user's custom rule): given the node's
/// cotangent, it returns the cotangents of the nodes it names.
pub type CustomRule<'a> = dyn FnMut(&mut Graph, NodeId, NodeId) -> Result<Option<Vec<(NodeId, NodeId)>>> + 'a;

/// The cotangents of `wrt` given `cotangents` of `outputs` (one each, of the output's shape):
/// `None` for a node no output depends on. `custom` is asked first at every node; where it
/// answers, the node's own rule is not used and its cotangent goes to the nodes it names.
pub fn vjp(
    g: &mut Graph,
    outputs: &[NodeId],
    cotangents: &[NodeId],
    wrt: &[NodeId],
    loc: Option<SourceLoc>,
    custom: &mut CustomRule<'_>,
) -> Result<Vec<Option<NodeId>>> {
    if outputs.len() != cotangents.len() {
        return Err(IrError::internal("vjp: one cotangent per output"));
    }
    let n = g.len();
    // Which forward nodes depend on a requested node through float values.
    let mut needed = vec![false; n];
    for w in wrt {
        needed[w.index()] = true;
    }
    let first = wrt.iter().map(|w| w.index()).min().unwrap_or(n);
    for i in first..n {
        if !needed[i] && g.nodes[i].dtype().is_float() && g.nodes[i].inputs.iter().any(|x| needed[x.index()]) {
            needed[i] = true;
        }
    }
    let mut ct: Vec<Option<NodeId>> = vec![None; n];
    let mut b = Builder { g, loc };
    for (o, c) in outputs.iter().zip(cotangents) {
        if needed[o.index()] {
            accumulate(&mut b, &mut ct, *o, *c)?;
        }
    }
    let last = outputs.iter().map(|o| o.index() + 1).max().unwrap_or(0);
    for i in (first..last).rev() {
        let Some(gi) = ct[i] else { continue };
        let node = NodeId(i as u32);
        if wrt.contains(&node) && b.g.nodes[i].op.is_leaf() {
            continue;
        }
        let inputs = b.g.nodes[i].inputs.clone();
        if let Some(pairs) = custom(b.g, node, gi)? {
            for (x, cx) in pairs {
                if x.index() < n && needed[x.index()] {
                    accumulate(&mut b, &mut ct, x, cx)?;
                }
            }
            continue;
        }
        if !inputs.iter().any(|x| needed[x.index()]) {
            continue;
        }
        let contribs = rule(&mut b, node, gi, &needed)?;
        for (x, cx) in inputs.iter().zip(contribs) {
            if let Some(cx) = cx.filter(|_| needed[x.index()]) {
                accumulate(&mut b, &mut ct, *x, cx)?;
            }
        }
    }
    Ok(wrt.iter().map(|w| ct[w.index()]).collect())
}

/// Add `c` (cast and summed to `x`'s dtype and shape) to the cotangent of `x`.
fn accumulate(b: &mut Builder<'_>, ct: &mut [Option<NodeId>], x: NodeId, c: NodeId) -> Result<()> {
    let (shape, dtype) = (b.shape(x), b.dtype(x));
    let c = b.sum_to(c, &shape)?;
    let c = b.cast(c, dtype)?;
    let c = b.broadcast(c, &shape)?;
    ct[x.index()] = Some(match ct[x.index()] {
        Some(prev) => b.add(prev, c)?,
        None => c,
    });
    Ok(())
}

/// The cotangent contribution to each operand of `node` (in operand order; `None`: none).
fn rule(b: &mut Builder<'_>, node: NodeId, gi: NodeId, needed: &[bool]) -> Result<Vec<Option<NodeId>>> {
    let n = b.g.node(node).clone();
    match n.op {
        Op::Unary(op) => elementwise::unary(b, op, n.inputs[0], node, gi).map(|c| vec![c]),
        Op::Binary(op) => elementwise::binary(b, op, n.inputs[0], n.inputs[1], node, gi),
        Op::Library(id, a) => {
            let lib = id.op()?;
            let attr = b.g.attr(a)?.clone();
            let wanted: Vec<bool> = n.inputs.iter().map(|x| needed[x.index()]).collect();
            lib.vjp(&attr, b, &n.inputs, node, gi, &wanted).map_err(|e| at_node(e, &n.loc))
        }
        _ => structural::rule(b, node, gi),
    }
    .map_err(|e| at_node(e, &n.loc))
}

fn at_node(e: IrError, loc: &Option<SourceLoc>) -> IrError {
    if e.loc.is_some() {
        e
    } else {
        e.at(loc.as_ref())
    }
}

/// The error for an op with no gradient rule.
pub fn no_rule(what: &str) -> IrError {
    IrError::new(
        ErrorKind::Unsupported,
        format!(
            "{what} has no gradient rule; differentiate a function without it, or give it one with \
             pyasc.custom_vjp"
        ),
    )
}

/// `0, 1, 2, ...` (int64) along `axis`, broadcast over `shape`: a running sum of ones.
pub fn iota(b: &mut Builder<'_>, shape: &crate::Shape, axis: usize) -> Result<NodeId> {
    let ones = b.g.fill(crate::Scalar::Int(1), crate::DType::I64, shape.clone(), b.loc.clone());
    let run = b.g.library(
        crate::LibId::SCAN,
        crate::Attr::Scan(crate::library::ScanKind::Sum, axis),
        &[ones],
        b.loc.clone(),
    )?;
    let one = b.g.py_scalar(crate::Scalar::Int(1), b.loc.clone());
    b.sub(run, one)
}

/// The adjoint of a gather along `axis` of an array of `shape`: zeros of `shape` with each
/// `vals[p, j, q]` added at index `idx[p, j, q]` along the axis. `idx` and `vals` have the
/// shape `(outer, k, inner)` (the axes before `axis`, `k` gathered positions, the axes after);
/// `idx` holds int64 indices in `[0, n)`.
pub fn scatter_add_along(
    b: &mut Builder<'_>,
    shape: &crate::Shape,
    axis: usize,
    idx: NodeId,
    vals: NodeId,
) -> Result<NodeId> {
    use crate::Shape;
    let (outer, n) = (shape.0[..axis].iter().product::<usize>(), shape.0[axis]);
    let inner: usize = shape.0[axis + 1..].iter().product();
    let k = b.shape(vals).0[1];
    let p = iota(b, &Shape(vec![outer, 1, 1]), 0)?;
    let q = iota(b, &Shape(vec![1, 1, inner]), 2)?;
    let nn = b.g.py_scalar(crate::Scalar::Int(n as i64), b.loc.clone());
    let row = b.mul(p, nn)?;
    let row = b.add(row, idx)?;
    let ii = b.g.py_scalar(crate::Scalar::Int(inner as i64), b.loc.clone());
    let row = b.mul(row, ii)?;
    let flat = b.add(row, q)?;
    let flat = b.broadcast(flat, &Shape(vec![outer, k, inner]))?;
    let zeros = b.zeros(b.dtype(vals), shape.clone());
    b.g.library(
        crate::LibId::SCATTER,
        crate::Attr::Scatter(crate::library::ScatterMode::Add),
        &[zeros, flat, vals],
        b.loc.clone(),
    )
}
