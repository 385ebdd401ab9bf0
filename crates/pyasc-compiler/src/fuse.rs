//! Fusion grouping: which nodes get a buffer of their own and which kernels compute them.
//!
//! Needs: a promoted, folded graph. Guarantees: `Fusion::groups` lists kernels in an order
//! that respects dependencies; each group's roots share one shape (the kernel's iteration
//! space) and are the only nodes of the group written to memory. Every other node is
//! recomputed inside each kernel that needs it, so a chain of elementwise ops costs one
//! pass over memory.
//!
//! Roots are: the outputs, and by `op_break_level`:
//! * 0: every op (one kernel per primitive);
//! * 1: also every op whose consumer broadcasts it to a larger shape (no fusion across
//!   broadcasts);
//! * 2 and 3: only a transcendental or power op broadcast by a factor of 8 or more (the
//!   cost of recomputing it per element would exceed a small extra kernel); cheap
//!   broadcast producers are recomputed.

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryOp, Op, UnaryKind};
use pyasc_ir::{Graph, NodeId, Shape};

/// The kernels to build.
#[derive(Clone, Debug, Default)]
pub struct Fusion {
    /// Roots of each kernel, kernels in execution order.
    pub groups: Vec<Vec<NodeId>>,
    /// Per node: written to a buffer of its own.
    pub materialized: Vec<bool>,
}

/// Groups elementwise nodes into kernels.
pub struct FusePass;

fn expensive(op: &Op) -> bool {
    match op {
        Op::Unary(u) => u.kind() == UnaryKind::Float,
        Op::Binary(b) => *b == BinaryOp::Pow,
        _ => false,
    }
}

impl Pass for FusePass {
    fn name(&self) -> &'static str {
        "fuse"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let g = &st.graph;
        let level = st.options.op_break_level;
        let mut mat = vec![false; g.len()];
        for o in &g.outputs {
            mat[o.index()] = true;
        }
        for (i, n) in g.nodes.iter().enumerate() {
            if n.op.is_leaf() {
                continue;
            }
            if level == 0 {
                mat[i] = true;
            }
            for &x in &n.inputs {
                let p = g.node(x);
                if p.op.is_leaf() || mat[x.index()] {
                    continue;
                }
                let factor = n.shape.numel() as f64 / p.shape.numel().max(1) as f64;
                let broadcast = p.shape != n.shape && factor > 1.0;
                if broadcast && (level == 1 || (expensive(&p.op) && factor >= 8.0)) {
                    mat[x.index()] = true;
                    st.notes.push(format!(
                        "%{} ({}) materialised: broadcast from {} to {}",
                        x.0,
                        p.op.name(),
                        p.shape,
                        n.shape
                    ));
                }
            }
        }
        let groups = group_roots(g, &mat, level > 0);
        for (k, roots) in groups.iter().enumerate() {
            let names: Vec<String> = roots.iter().map(|r| format!("%{}", r.0)).collect();
            st.notes.push(format!(
                "kernel {k}: roots {} over {}, {} ops fused",
                names.join(" "),
                g.node(roots[0]).shape,
                count_ops(g, &mat, roots)
            ));
        }
        st.fusion = Some(Fusion { groups, materialized: mat });
        Ok(())
    }
}

/// The materialised nodes each root reads (its frontier), stopping at leaves and other roots.
fn frontier(g: &Graph, mat: &[bool], root: NodeId) -> Vec<NodeId> {
    let mut seen = vec![false; g.len()];
    let mut stack = vec![root];
    let mut deps = Vec::new();
    while let Some(n) = stack.pop() {
        for &x in &g.node(n).inputs {
            if seen[x.index()] {
                continue;
            }
            seen[x.index()] = true;
            if mat[x.index()] {
                deps.push(x);
            } else if !g.node(x).op.is_leaf() {
                stack.push(x);
            }
        }
    }
    deps
}

/// Number of non-leaf nodes computed by a kernel with these roots.
pub fn count_ops(g: &Graph, mat: &[bool], roots: &[NodeId]) -> usize {
    let mut seen = vec![false; g.len()];
    let mut stack: Vec<NodeId> = roots.to_vec();
    let mut count = 0;
    while let Some(n) = stack.pop() {
        if seen[n.index()] || g.node(n).op.is_leaf() {
            continue;
        }
        seen[n.index()] = true;
        count += 1;
        for &x in &g.node(n).inputs {
            if !mat[x.index()] {
                stack.push(x);
            }
        }
    }
    count
}

fn group_roots(g: &Graph, mat: &[bool], merge: bool) -> Vec<Vec<NodeId>> {
    let mut groups: Vec<(Shape, Vec<NodeId>)> = Vec::new();
    let mut group_of: Vec<Option<usize>> = vec![None; g.len()];
    for (i, &m) in mat.iter().enumerate() {
        if !m {
            continue;
        }
        let id = NodeId(i as u32);
        let n = g.node(id);
        // Leaves returned as outputs get a copy kernel of their own.
        let after = frontier(g, mat, id).iter().filter_map(|d| group_of[d.index()]).max();
        let joinable = if n.op.is_leaf() || !merge {
            None
        } else {
            groups.iter().enumerate().position(|(k, (s, roots))| {
                *s == n.shape && after.is_none_or(|a| k > a) && roots.iter().all(|r| !g.node(*r).op.is_leaf())
            })
        };
        let k = match joinable {
            Some(k) => k,
            None => {
                groups.push((n.shape.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        groups[k].1.push(id);
        group_of[i] = Some(k);
    }
    groups.into_iter().map(|(_, r)| r).collect()
}
