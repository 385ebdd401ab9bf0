//! Attention's forward pass hands its rows' statistics to its backward pass.
//!
//! Needs: a graph after [`crate::cse`] (so a forward and the backward that reads its result
//! name the same operand nodes). Guarantees: every fused attention whose result is the
//! forward operand of an `attention_backward` over the same `q`, `k`, `v`, mask and attribute
//! becomes one `attention_stats` node (the result with each row's log-sum-exp as
//! one more column); the forward's users read the first `Dv` columns (a view) and each such
//! backward reads the last column as its sixth operand. Without this, the backward pass
//! computes every score one more time only to find the rows' log-sum-exp, which the forward
//! already had.

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, with_inputs};
use pyasc_ir::error::Result;
use pyasc_ir::library::AttnMask;
use pyasc_ir::op::Op;
use pyasc_ir::view::{SliceDim, ViewSpec};
use pyasc_ir::{Attr, Graph, LibId, NodeId};
use std::collections::{HashMap, HashSet};

/// Lets attention's backward pass read the forward's log-sum-exp.
pub struct AttentionStatsPass;

/// The forward operands a backward node `n` names: `q`, `k`, `v` and the mask if any.
fn forward_operands(n: &pyasc_ir::Node) -> Vec<NodeId> {
    n.inputs[..3].iter().chain(n.inputs.get(5)).copied().collect()
}

/// A backward node's operand count before the log-sum-exp: five, and the mask if any.
fn fixed(g: &Graph, attr: pyasc_ir::AttrId) -> Result<usize> {
    Ok(match g.attr(attr)? {
        Attr::Attention(s) => 5 + usize::from(s.mask != AttnMask::None),
        _ => usize::MAX,
    })
}

/// The forwards (by node) whose statistics a backward pass reads.
fn forwards_read_back(g: &Graph) -> Result<HashSet<NodeId>> {
    let mut found = HashSet::new();
    for n in &g.nodes {
        let Op::Library(LibId::ATTENTION_BACKWARD, battr) = n.op else { continue };
        if n.inputs.len() != fixed(g, battr)? {
            continue;
        }
        let y = n.inputs[3];
        let f = g.node(y);
        let Op::Library(LibId::ATTENTION, fattr) = f.op else { continue };
        let same =
            f.inputs == forward_operands(n) && f.vtype.dtype == n.vtype.dtype && g.attr(fattr)? == g.attr(battr)?;
        if same {
            found.insert(y);
        }
    }
    Ok(found)
}

/// `x[..., start:start + len]` along the last axis.
fn last_columns(g: &mut Graph, x: NodeId, start: usize, len: usize, n: &pyasc_ir::Node) -> Result<NodeId> {
    let shape = g.node(x).shape.clone();
    let last = shape.rank() - 1;
    let dims =
        (0..=last)
            .map(|i| {
                if i == last {
                    SliceDim { start, step: 1, len }
                } else {
                    SliceDim { start: 0, step: 1, len: shape.0[i] }
                }
            })
            .collect();
    g.view(ViewSpec::Slice(dims), x, n.loc.clone())
}

impl Pass for AttentionStatsPass {
    fn name(&self) -> &'static str {
        "attention_stats"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let src = &st.graph;
        let wanted = forwards_read_back(src)?;
        if wanted.is_empty() {
            return Ok(());
        }
        let live = src.live();
        let (mut g, mut map) = with_inputs(src);
        // The new graph's log-sum-exp view of each rewritten forward, by the forward's old id.
        let mut stats: HashMap<NodeId, NodeId> = HashMap::new();
        for (i, n) in src.nodes.iter().enumerate() {
            if !live[i] || map[i].is_some() {
                continue;
            }
            let id = NodeId(i as u32);
            let mut ops: Vec<NodeId> =
                n.inputs.iter().map(|o| map[o.index()].expect("operands precede users")).collect();
            let new = match n.op {
                Op::Library(LibId::ATTENTION, a) if wanted.contains(&id) => {
                    let packed = g.library(LibId::ATTENTION_STATS, src.attr(a)?.clone(), &ops, n.loc.clone())?;
                    let dv = n.shape.0[n.shape.rank() - 1];
                    stats.insert(id, last_columns(&mut g, packed, dv, 1, n)?);
                    last_columns(&mut g, packed, 0, dv, n)?
                }
                Op::Library(LibId::ATTENTION_BACKWARD, a) if n.inputs.len() == fixed(src, a)? => {
                    if let Some(&lse) = stats.get(&n.inputs[3]) {
                        if src.node(n.inputs[3]).inputs == forward_operands(n) {
                            ops.push(lse);
                        }
                    }
                    copy_node(&mut g, n, ops)
                }
                _ => copy_node(&mut g, n, ops),
            };
            map[i] = Some(new);
        }
        g.outputs = src.outputs.iter().map(|o| map[o.index()].expect("outputs are live")).collect();
        st.graph = g;
        st.notes
            .push(format!("{} attention forward(s) keep their rows' log-sum-exp for the backward pass", wanted.len()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{compile, CompileOptions};
    use pyasc_ir::dtype::{DType, VType};
    use pyasc_ir::library::{AttnMask, AttnSpec};
    use pyasc_ir::{Attr, Shape};

    /// `attention(q, k, v)` and the backward pass of one over `q2` (`q` itself when `same`).
    fn graph(same: bool) -> Graph {
        let mut g = Graph::new();
        let f = VType::strong(DType::F32);
        let q = g.add_input(f, Shape(vec![2, 5, 8]));
        let k = g.add_input(f, Shape(vec![2, 7, 8]));
        let v = g.add_input(f, Shape(vec![2, 7, 3]));
        let dy = g.add_input(f, Shape(vec![2, 5, 3]));
        let q2 = if same { q } else { g.unary(pyasc_ir::op::UnaryOp::Neg, q, None).unwrap() };
        let spec = Attr::Attention(AttnSpec { scale: 0.25, causal: true, mask: AttnMask::None });
        let y = g.library(LibId::ATTENTION, spec.clone(), &[q, k, v], None).unwrap();
        let back = g.library(LibId::ATTENTION_BACKWARD, spec, &[q2, k, v, y, dy], None).unwrap();
        g.outputs = vec![y, back];
        g
    }

    /// The library ids of the plan's kernels and each one's operand count.
    fn calls(g: Graph) -> Vec<(LibId, u16)> {
        let opts = CompileOptions { verify_each_pass: true, ..CompileOptions::default() };
        let c = compile(g, &opts).unwrap();
        c.plan.kernels.iter().filter_map(|k| k.library.as_ref().map(|l| (l.id, l.operands))).collect()
    }

    #[test]
    fn the_forward_keeps_its_statistics_for_its_own_backward_pass() {
        let got = calls(graph(true));
        assert!(got.contains(&(LibId::ATTENTION_STATS, 3)), "{got:?}");
        assert!(got.contains(&(LibId::ATTENTION_BACKWARD, 6)), "{got:?}");
        assert!(!got.iter().any(|(id, _)| *id == LibId::ATTENTION), "{got:?}");
    }

    #[test]
    fn a_backward_pass_over_other_queries_finds_its_own() {
        let got = calls(graph(false));
        assert!(got.contains(&(LibId::ATTENTION, 3)), "{got:?}");
        assert!(got.contains(&(LibId::ATTENTION_BACKWARD, 5)), "{got:?}");
    }
}
