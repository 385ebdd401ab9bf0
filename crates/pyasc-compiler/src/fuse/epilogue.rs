//! Library epilogues (`op_break_level` 3): elementwise ops over the result of a library op
//! that admits epilogues (matmul: bias, activation, `gelu(x @ w + b)`) run in its kernel, on
//! each tile of the result while it is in cache.

use super::{Candidate, FusionRule, Space};

/// Elementwise consumers of a library result in the library kernel.
pub struct LibraryEpilogue;

impl FusionRule for LibraryEpilogue {
    fn name(&self) -> &'static str {
        "library epilogue"
    }
    fn fits(&self, c: &Candidate) -> Option<bool> {
        let Space::Library(id) = c.group.space else { return None };
        let Space::Elem(s) = c.space else { return Some(false) };
        let admits = id.op().is_ok_and(|l| l.fuses_epilogue());
        let root = c.group.anchors[0];
        Some(admits && c.level >= 3 && *s == c.g.node(root).shape && c.deps.contains(&c.k))
    }
}
