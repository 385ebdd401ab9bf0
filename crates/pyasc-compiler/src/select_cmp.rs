//! Compare-select: a comparison whose only reader is a select becomes one pass.
//!
//! Needs: a lowered plan. Guarantees: the same plan where each `m = cmp(a, b); ...;
//! d = select(m, t, f)` on one dtype of 32 or 64 bits (float or integer), whose condition `m`
//! is a scratch tile read by nothing else and whose `a`, `b` do not change in between, is one
//! [`Instr::SelectCmp`]: the condition never makes a round trip through a bool tile. Branches
//! written as `np.where(x < c, ...)`, and the if/else of vectorized operators, end this way;
//! a three-branch piecewise function over 16M float32 lost two of its eight passes.

use crate::chain::read_later;
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::tile::{selects_compared, Instr, Reg, RegKind, TileKernel};

/// Fuses compare-select pairs in every kernel.
pub struct SelectCmpPass;

impl Pass for SelectCmpPass {
    fn name(&self) -> &'static str {
        "select_cmp"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        crate::chain::fuse_kernels(st, fuse_select_cmps, "compare-select(s) in one pass");
        Ok(())
    }
}

/// Fuses every eligible pair of `k`'s body; returns how many.
pub fn fuse_select_cmps(k: &mut TileKernel) -> usize {
    crate::chain::fuse_pairs(k, fuse_from)
}

/// If instruction `j` is `m = cmp(a, b)` and the first instruction reading `m` is a select on
/// it, that instruction's index and the compare-select that replaces it.
fn fuse_from(k: &TileKernel, j: usize) -> Option<(usize, Instr)> {
    let Instr::Binary { op: cmp, dst: m, a, b } = k.body[j] else { return None };
    if !cmp.is_compare() {
        return None;
    }
    let at = j + 1 + k.body[j + 1..].iter().position(|i| i.srcs().contains(&m))?;
    // In between, nothing may change `a`, `b` or `m`.
    if k.body[j + 1..at].iter().any(|i| [a, b, m].contains(&i.dst())) {
        return None;
    }
    let Instr::Select { dst: d, cond, a: t, b: f } = k.body[at] else { return None };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let dtype = decl(d).dtype;
    let same = selects_compared(dtype) && [a, b, t, f].iter().all(|r| decl(*r).dtype == dtype);
    let private = decl(m).kind == RegKind::Tile && !read_later(&k.body[at + 1..], m);
    // The condition only as the condition; the result never in a compared operand's memory.
    let once = cond == m && t != m && f != m && ![a, b].contains(&d);
    let flat = [a, b, t, f, d, m].iter().all(|r| !decl(*r).row);
    if !(same && private && once && flat) {
        return None;
    }
    Some((at, Instr::SelectCmp { cmp, dst: d, a, b, t, f }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::op::BinaryOp;
    use pyasc_ir::tile::{BufferId, RegDecl};
    use pyasc_ir::{DType, Shape};

    /// Registers: 0-3 arguments of `dtype`, 4 a bool scratch tile, 5 the output, 6 a scratch
    /// tile of `dtype`.
    fn kernel(dtype: DType, body: Vec<Instr>) -> TileKernel {
        let reg = |kind, dtype| RegDecl { kind, dtype, row: false };
        let regs = vec![
            reg(RegKind::Arg(0), dtype),
            reg(RegKind::Arg(1), dtype),
            reg(RegKind::Arg(2), dtype),
            reg(RegKind::Arg(3), dtype),
            reg(RegKind::Tile, DType::Bool),
            reg(RegKind::Out(0), dtype),
            reg(RegKind::Tile, dtype),
        ];
        TileKernel {
            name: "k".into(),
            shape: Shape(vec![64]),
            perm: vec![0],
            row_len: 0,
            library: None,
            args: (0..4).map(BufferId).collect(),
            arg_views: vec![vec![]; 4],
            outs: vec![BufferId(4)],
            regs,
            body,
            tile_elems: 64,
            program: None,
            fused_ops: 2,
            locs: vec![],
        }
    }

    fn lt(dst: u16, a: u16, b: u16) -> Instr {
        Instr::Binary { op: BinaryOp::Lt, dst: Reg(dst), a: Reg(a), b: Reg(b) }
    }

    fn select(dst: u16, cond: u16, a: u16, b: u16) -> Instr {
        Instr::Select { dst: Reg(dst), cond: Reg(cond), a: Reg(a), b: Reg(b) }
    }

    #[test]
    fn a_comparison_only_a_select_reads_fuses_with_it() {
        for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
            // Another instruction in between that touches none of the pair's registers.
            let mid = Instr::Binary { op: BinaryOp::Add, dst: Reg(6), a: Reg(2), b: Reg(3) };
            let mut k = kernel(dtype, vec![lt(4, 0, 1), mid, select(5, 4, 6, 3)]);
            assert_eq!(fuse_select_cmps(&mut k), 1, "{dtype}");
            let fused = Instr::SelectCmp { cmp: BinaryOp::Lt, dst: Reg(5), a: Reg(0), b: Reg(1), t: Reg(6), f: Reg(3) };
            assert_eq!(k.body, vec![mid, fused]);
        }
    }

    #[test]
    fn other_shapes_are_left_alone() {
        let add = |dst, a, b| Instr::Binary { op: BinaryOp::Add, dst: Reg(dst), a: Reg(a), b: Reg(b) };
        let cases = vec![
            // Not a comparison.
            vec![add(6, 0, 1), select(5, 4, 2, 3)],
            // The condition read again after the select, or first by something else.
            vec![lt(4, 0, 1), select(5, 4, 2, 3), select(6, 4, 3, 2)],
            vec![lt(4, 0, 1), Instr::Cast { dst: Reg(6), src: Reg(4) }, select(5, 4, 2, 3)],
            // A compared operand rewritten in between.
            vec![lt(4, 0, 6), add(6, 2, 3), select(5, 4, 2, 3)],
            // The select writes a compared operand's register.
            vec![lt(4, 0, 6), select(6, 4, 2, 3)],
        ];
        for body in cases {
            let mut k = kernel(DType::F32, body.clone());
            assert_eq!(fuse_select_cmps(&mut k), 0, "{body:?}");
            assert_eq!(k.body, body);
        }
        // Other dtypes than 32- and 64-bit ones.
        let mut k = kernel(DType::I8, vec![lt(4, 0, 1), select(5, 4, 2, 3)]);
        assert_eq!(fuse_select_cmps(&mut k), 0);
    }
}
