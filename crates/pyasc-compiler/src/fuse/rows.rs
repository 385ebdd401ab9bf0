//! Row fusion (`op_break_level` 2 and 3): reductions of one shape over the same axes share
//! a row kernel, and so do their consumers, either broadcast back over the rows
//! (`x - x.max(-1, keepdims=True)`, rows short enough to stay in a tile) or computed per row
//! from the group's reductions and constants only (`x.sum(-1) / n`).

use super::{per_row, read_per_row, Candidate, FusionRule, Space, ROW_FUSE_MAX};
use pyasc_ir::op::{Axes, Op};
use pyasc_ir::{NodeId, Shape};

/// Reductions and their consumers in one pass over each row.
pub struct Rows;

impl FusionRule for Rows {
    fn name(&self) -> &'static str {
        "rows"
    }
    fn fits(&self, c: &Candidate) -> Option<bool> {
        let Space::Rows { shape, axes } = &c.group.space else { return None };
        let row_len = c.group.space.row_len();
        match c.space {
            Space::Rows { shape: s2, axes: a2 } => Some(c.level >= 2 && shape == s2 && axes == a2 && row_len > 1),
            Space::Elem(s) => Some(
                c.level >= 2
                    && row_len > 1
                    && row_len <= ROW_FUSE_MAX
                    && ((s == shape
                        && axes.is_trailing(shape.rank())
                        && c.g.node(c.id).inputs.iter().all(|x| broadcast_per_row(c, *x, shape, *axes)))
                        || (s.numel() == c.group.space.rows()
                            && c.g.node(c.id).inputs.iter().all(|x| row_operand(c, *x)))),
            ),
            Space::Library(_) => None,
        }
    }
}

/// True when operand `x` of an element consumer over the group's row shape `shape` can be
/// read per row: either it does not come from the group's reductions (an element operand,
/// broadcast or not, read from memory), or its shape, aligned to the right as NumPy
/// broadcasts it, keeps every unreduced axis and has extent 1 on the reduced ones. A
/// `(n,)` mean of an `n x n` array broadcasts along the columns, not the rows. A constant
/// fits either way. An operand computed inside the kernel from both kinds
/// (`x + cast(x.max(-1))`, the cast that narrow integers put between them) is read
/// elementwise only when its own operands are fit.
fn broadcast_per_row(c: &Candidate, x: NodeId, shape: &Shape, axes: Axes) -> bool {
    let n = c.g.node(x);
    let xs = &n.shape;
    if matches!(n.op, Op::Const(_) | Op::Fill(_)) {
        // One value everywhere (`cumsum(x, -1) / n`): read per element or per row alike.
        return true;
    }
    if !per_row(c.g, c.mat, c.group_of, c.k, x) {
        return c.mat[x.index()]
            || n.op.is_leaf()
            || matches!(n.op, Op::View(_))
            || n.inputs.iter().all(|y| broadcast_per_row(c, *y, shape, axes));
    }
    // Computed from the group's reductions (one value per row): the reduced axes must have
    // extent 1 (`x.max(-1) * x.max(-1, keepdims=True)` is n x n, not per row).
    let lead = shape.rank() - xs.rank();
    (0..shape.rank()).all(|i| {
        let d = if i < lead { 1 } else { xs.0[i - lead] };
        if axes.contains(i) {
            d == 1
        } else {
            d == shape.0[i]
        }
    })
}

/// True when operand `x` of a per-row consumer has one value per row of the group: a
/// constant, a reduction of the group, a value read from memory (an argument, a view of one
/// or another kernel's result) with one element per row ([`read_per_row`]), or computed
/// from such operands alone with a shape that is itself one value per row. Box corners
/// beside a detector's best class score (`x[:, 0] - x[:, 2] / 2` next to
/// `(x[:, 5:] * x[:, 4:5]).max(1)`) are computed in the rows' kernel this way.
fn row_operand(c: &Candidate, x: NodeId) -> bool {
    let n = c.g.node(x);
    let in_memory = matches!(n.op, Op::Input(_) | Op::View(_))
        || (c.mat[x.index()] && c.group_of[x.index()] != Some(c.k) && !matches!(n.op, Op::Const(_) | Op::Fill(_)));
    match n.op {
        Op::Const(_) | Op::Fill(_) => true,
        _ if in_memory => read_per_row(&c.group.space, &n.shape),
        Op::Reduce { .. } => c.group_of[x.index()] == Some(c.k),
        Op::Library(..) => false,
        _ => {
            (per_row(c.g, c.mat, c.group_of, c.k, x) || read_per_row(&c.group.space, &n.shape))
                && n.inputs.iter().all(|y| row_operand(c, *y))
        }
    }
}
