//! Gears: an operator traced at a gear size, its geared dimensions padded up to the gear,
//! must give the results of the unpadded call at every unpadded position.
//!
//! Each padded axis is followed through the trace (elementwise ops, casts, views, matmul);
//! a reduction over a padded axis, and a matmul contracting one, reads the padding as the
//! reduction's identity through a mask `index < valid extent`, where the valid extents are
//! inputs of the plan (weak integers, so a new extent within a gear never recompiles). An op
//! the tracking cannot follow through a padded axis (a reshape or slice across it, padding
//! before it, concatenate, take) marks the trace unsupported; the caller then runs that call unpadded.

use crate::trace::{ConstArray, Extra};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryOp, Op, ReduceOp};
use pyasc_ir::view::ViewSpec;
use pyasc_ir::{Attr, DType, Graph, LibId, NodeId, Scalar, Shape, SourceLoc};
use std::collections::HashMap;

/// Per axis of a node: the gear whose padding it holds, if any.
pub type Flags = Vec<Option<u8>>;

/// The padded axes of a geared trace.
#[derive(Debug, Default)]
pub struct Gears {
    /// Per gear: the 0-d integer input holding its valid extent.
    valid: Vec<NodeId>,
    /// The padded axes of the inputs.
    inputs: HashMap<NodeId, Flags>,
    /// Per node, in id order: its padded axes, or why they cannot be followed.
    memo: Vec<std::result::Result<Flags, String>>,
    /// Why padding cannot be masked in this trace (the caller then runs unpadded).
    pub unsupported: Option<String>,
}

impl Gears {
    /// Gears with valid extents `valid` and the padded axes of some inputs.
    pub fn new(valid: Vec<NodeId>, inputs: HashMap<NodeId, Flags>) -> Gears {
        Gears { valid, inputs, memo: Vec::new(), unsupported: None }
    }

    /// The padded axes of node `id`.
    pub fn flags(&mut self, g: &Graph, id: NodeId) -> std::result::Result<Flags, String> {
        while self.memo.len() <= id.index() {
            let n = NodeId(self.memo.len() as u32);
            let f = self.compute(g, n);
            self.memo.push(f);
        }
        self.memo[id.index()].clone()
    }

    fn operand(&self, g: &Graph, id: NodeId, i: usize) -> std::result::Result<Flags, String> {
        self.memo[g.node(id).inputs[i].index()].clone()
    }

    fn compute(&self, g: &Graph, id: NodeId) -> std::result::Result<Flags, String> {
        let node = g.node(id);
        let rank = node.shape.rank();
        let none = vec![None; rank];
        match &node.op {
            Op::Input(_) => Ok(self.inputs.get(&id).cloned().unwrap_or(none)),
            Op::Const(_) | Op::Fill(_) => Ok(none),
            Op::Unary(_) | Op::Cast(_) => self.operand(g, id, 0),
            Op::Binary(_) | Op::Where => {
                let mut out = none;
                for (i, x) in node.inputs.iter().enumerate() {
                    let f = self.operand(g, id, i)?;
                    let shape = &g.node(*x).shape.0;
                    for (k, flag) in f.iter().enumerate() {
                        let axis = rank - shape.len() + k;
                        if let Some(gear) = flag {
                            if shape[k] != node.shape.0[axis] {
                                continue;
                            }
                            match out[axis] {
                                Some(other) if other != *gear => return Err("two geared dimensions meet".into()),
                                _ => out[axis] = Some(*gear),
                            }
                        }
                    }
                }
                Ok(out)
            }
            Op::Reduce { axes, keepdims, .. } => {
                let f = self.operand(g, id, 0)?;
                Ok(f.iter()
                    .enumerate()
                    .filter_map(|(k, flag)| match (axes.contains(k), keepdims) {
                        (false, _) => Some(*flag),
                        (true, true) => Some(None),
                        (true, false) => None,
                    })
                    .collect())
            }
            Op::View(a) => {
                let f = self.operand(g, id, 0)?;
                let from = &g.node(node.inputs[0]).shape.0;
                match g.attr(*a).map_err(|e| e.message.clone())? {
                    Attr::View(spec) => view_flags(spec, &f, from, &node.shape.0),
                    _ => Err("a view without its spec".into()),
                }
            }
            Op::Library(lib, attr) => {
                let fs: Vec<Flags> =
                    (0..node.inputs.len()).map(|i| self.operand(g, id, i)).collect::<std::result::Result<_, _>>()?;
                if *lib == LibId::MATMUL {
                    let (a, b) = (&fs[0], &fs[1]);
                    let mut out = none;
                    if rank >= 1 && b.len() >= 2 {
                        out[rank - 1] = b[b.len() - 1];
                    }
                    if rank >= 2 && a.len() >= 2 {
                        out[rank - 2] = a[a.len() - 2];
                    }
                    Ok(out)
                } else if *lib == LibId::PAD {
                    // Padding after a geared axis keeps its valid prefix in place.
                    let f = &fs[0];
                    match g.attr(*attr).map_err(|e| e.message.clone())? {
                        Attr::Pad(p) if f.iter().zip(&p.widths).all(|(fl, w)| fl.is_none() || w.0 == 0) => {
                            Ok(f.clone())
                        }
                        _ => Err("padding before a geared dimension".into()),
                    }
                } else if fs.iter().all(|f| f.iter().all(Option::is_none)) {
                    Ok(none)
                } else {
                    Err("pad, concatenate and take across a geared dimension".into())
                }
            }
        }
    }

    /// The operands for `op` over `operands`, with the padding of every axis the op reduces
    /// (or a matmul contracts) replaced by the reduction's identity.
    pub fn mask_operands(
        &mut self,
        g: &mut Graph,
        extras: &mut Vec<Extra>,
        op: &Op,
        operands: &[NodeId],
        loc: Option<&SourceLoc>,
    ) -> Result<Vec<NodeId>> {
        let mut out = operands.to_vec();
        match op {
            Op::Reduce { op: r, axes, .. } => {
                let x = operands[0];
                let f = match self.flags(g, x) {
                    Ok(f) => f,
                    Err(why) => return Ok(self.give_up(why, out)),
                };
                let padded: Vec<(usize, u8)> = f
                    .iter()
                    .enumerate()
                    .filter_map(|(k, fl)| fl.filter(|_| axes.contains(k)).map(|gr| (k, gr)))
                    .collect();
                if !padded.is_empty() {
                    let dtype = g.node(x).dtype();
                    out[0] = self.masked(g, extras, x, &padded, identity(*r, dtype), loc)?;
                }
            }
            Op::Library(lib, _) if *lib == LibId::MATMUL => {
                let (a, b) = (operands[0], operands[1]);
                let (fa, fb) = match (self.flags(g, a), self.flags(g, b)) {
                    (Ok(fa), Ok(fb)) => (fa, fb),
                    (Err(why), _) | (_, Err(why)) => return Ok(self.give_up(why, out)),
                };
                let ka = fa.len() - 1;
                let kb = fb.len().saturating_sub(2);
                let gear = fa[ka].or(fb[kb]);
                if let Some(gear) = gear {
                    out[0] = self.masked(g, extras, a, &[(ka, gear)], Scalar::Float(0.0), loc)?;
                    out[1] = self.masked(g, extras, b, &[(kb, gear)], Scalar::Float(0.0), loc)?;
                }
            }
            _ => {}
        }
        Ok(out)
    }

    fn give_up(&mut self, why: String, operands: Vec<NodeId>) -> Vec<NodeId> {
        self.unsupported.get_or_insert(why);
        operands
    }

    /// `where(index < valid, x, fill)` over the padded `axes` (axis, gear) of `x`.
    fn masked(
        &mut self,
        g: &mut Graph,
        extras: &mut Vec<Extra>,
        x: NodeId,
        axes: &[(usize, u8)],
        fill: Scalar,
        loc: Option<&SourceLoc>,
    ) -> Result<NodeId> {
        let shape = g.node(x).shape.0.clone();
        let vtype = g.node(x).vtype;
        let mut mask: Option<NodeId> = None;
        for &(axis, gear) in axes {
            let extent = shape[axis];
            let mut ishape = vec![1; shape.len()];
            ishape[axis] = extent;
            let values: Vec<i64> = (0..extent as i64).collect();
            // SAFETY: reading the initialised elements of `values` as bytes.
            let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, values.len() * 8) };
            let iota = g.add_input(VType::strong(DType::I64), Shape(ishape.clone()));
            extras.push(Extra::Const(ConstArray::from_bytes(DType::I64, ishape, bytes)));
            let m = g.apply(Op::Binary(BinaryOp::Lt), &[iota, self.valid[gear as usize]], loc.cloned())?;
            mask = Some(match mask {
                None => m,
                Some(prev) => g.apply(Op::Binary(BinaryOp::And), &[prev, m], loc.cloned())?,
            });
        }
        let Some(mask) = mask else { return Ok(x) };
        let fill = g.constant(fill, VType { weak: None, ..vtype }, loc.cloned());
        g.apply(Op::Where, &[mask, x, fill], loc.cloned())
    }
}

/// The padded axes of a view of an operand with padded axes `f` and extents `from`.
fn view_flags(spec: &ViewSpec, f: &Flags, from: &[usize], to: &[usize]) -> std::result::Result<Flags, String> {
    let any = f.iter().any(Option::is_some);
    match spec {
        ViewSpec::Transpose(perm) => Ok(perm.iter().map(|p| f[*p]).collect()),
        ViewSpec::BroadcastTo(t) => {
            let lead = t.len() - from.len();
            Ok((0..t.len()).map(|k| if k < lead || from[k - lead] != t[k] { None } else { f[k - lead] }).collect())
        }
        ViewSpec::Slice(dims) => {
            for (k, d) in dims.iter().enumerate() {
                if f[k].is_some() && !(d.start == 0 && d.step == 1 && d.len == from[k]) {
                    return Err("a slice across a geared dimension".into());
                }
            }
            Ok(f.clone())
        }
        ViewSpec::Reshape(_) if !any => Ok(vec![None; to.len()]),
        ViewSpec::Reshape(_) if from == to => Ok(f.clone()),
        ViewSpec::Reshape(_) => Err("a reshape across a geared dimension".into()),
    }
}

/// The value a reduction ignores (the padding reads as it).
fn identity(r: ReduceOp, dtype: DType) -> Scalar {
    let (lo, hi) = match dtype {
        DType::Bool => (Scalar::Bool(false), Scalar::Bool(true)),
        d if d.is_float() => (Scalar::Float(f64::NEG_INFINITY), Scalar::Float(f64::INFINITY)),
        // uint64 values are held by their bits: its largest value reads as -1.
        DType::U64 => (Scalar::Int(0), Scalar::Int(-1)),
        d => match d.int_range() {
            Some((lo, hi)) => (Scalar::Int(lo as i64), Scalar::Int(hi as i64)),
            None => (Scalar::Int(i64::MIN), Scalar::Int(i64::MAX)),
        },
    };
    match r {
        ReduceOp::Sum | ReduceOp::Any => Scalar::Int(0),
        ReduceOp::Prod | ReduceOp::All => Scalar::Int(1),
        ReduceOp::Max | ReduceOp::ArgMax => lo,
        ReduceOp::Min | ReduceOp::ArgMin => hi,
    }
}
