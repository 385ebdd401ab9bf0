//! Dead code elimination: drop nodes no output depends on (arguments always stay).

use crate::pass::{CompileState, Pass};
use crate::rewrite::{copy_node, rebuild};
use pyasc_ir::error::Result;

/// Removes unreachable nodes and renumbers the arena.
pub struct DcePass;

impl Pass for DcePass {
    fn name(&self) -> &'static str {
        "dce"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let before = st.graph.len();
        st.graph = rebuild(&st.graph, |out, n, ops| Ok(copy_node(out, n, ops)))?;
        if st.graph.len() < before {
            st.notes.push(format!("removed {} dead nodes", before - st.graph.len()));
        }
        Ok(())
    }
}
