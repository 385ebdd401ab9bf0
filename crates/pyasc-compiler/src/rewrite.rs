//! One helper every rewriting pass shares: rebuild a graph node by node through a
//! callback that maps each old node (with its operands already remapped) to a new id.

use pyasc_ir::error::Result;
use pyasc_ir::{Graph, Node, NodeId};

/// Rebuild `g`: inputs are recreated first, then for every other live node `f(new, node,
/// operands)` returns the id that replaces it (pushing a node or reusing an earlier one).
pub fn rebuild(g: &Graph, mut f: impl FnMut(&mut Graph, &Node, Vec<NodeId>) -> Result<NodeId>) -> Result<Graph> {
    let live = g.live();
    let (mut out, mut map) = with_inputs(g);
    for (i, n) in g.nodes.iter().enumerate() {
        if !live[i] || map[i].is_some() {
            continue;
        }
        let ops = n.inputs.iter().map(|o| map[o.index()].expect("operands precede users")).collect();
        map[i] = Some(f(&mut out, n, ops)?);
    }
    out.outputs = g.outputs.iter().map(|o| map[o.index()].expect("outputs are live")).collect();
    Ok(out)
}

/// A new graph holding `g`'s inputs (and attributes), and the map from `g`'s node ids to the
/// new graph's, filled for the inputs.
pub fn with_inputs(g: &Graph) -> (Graph, Vec<Option<NodeId>>) {
    let mut out = Graph::new();
    out.attrs = g.attrs.clone();
    let mut map: Vec<Option<NodeId>> = vec![None; g.len()];
    for &i in &g.inputs {
        let n = g.node(i);
        map[i.index()] = Some(out.add_input(n.vtype, n.shape.clone()));
    }
    (out, map)
}

/// Push a copy of `n` with new operands.
pub fn copy_node(out: &mut Graph, n: &Node, inputs: Vec<NodeId>) -> NodeId {
    out.push(Node { inputs, ..n.clone() })
}
