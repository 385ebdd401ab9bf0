//! Mapped reductions: a row sum of an arithmetic result becomes one pass.
//!
//! Needs: a lowered [`pyasc_ir::tile::KernelPlan`]. Guarantees: the same plan where each
//! `t = op(a, b); ...; r = reduce_sum(t)` in a row kernel (op among add, sub, mul; one float
//! dtype; `a` and `b` element values or scalars, unchanged in between) whose `t` is a scratch
//! tile read by nothing else is one [`Instr::ReduceMap`]: `t` never makes a round trip
//! through the tile, and each element still rounds as the arithmetic alone would, so results
//! are bit-identical. `sum(d * d)` of a variance and `sum(x * x)` of an RMS norm are the
//! common cases.

use crate::chain::read_later;
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryOp, ReduceOp};
use pyasc_ir::tile::{Instr, Reg, RegKind, TileKernel};

/// Fuses arithmetic into the row sums that alone read it, in every row kernel.
pub struct ReduceMapPass;

impl Pass for ReduceMapPass {
    fn name(&self) -> &'static str {
        "reduce_map"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        crate::chain::fuse_kernels(st, fuse_reduce_maps, "row sum(s) of arithmetic in one pass");
        Ok(())
    }
}

/// Fuses every eligible pair of `k`'s body; returns how many.
pub fn fuse_reduce_maps(k: &mut TileKernel) -> usize {
    if k.row_len == 0 {
        return 0;
    }
    crate::chain::fuse_pairs(k, fuse_from)
}

/// If instruction `j` is `t = op(a, b)` and the first instruction reading `t` is a row sum of
/// it alone, the sum's index and the mapped reduction that replaces it.
fn fuse_from(k: &TileKernel, j: usize) -> Option<(usize, Instr)> {
    let Instr::Binary { op: map, dst: t, a, b } = k.body[j] else { return None };
    let at = j + 1 + k.body[j + 1..].iter().position(|i| i.srcs().contains(&t))?;
    if k.body[j + 1..at].iter().any(|i| [a, b, t].contains(&i.dst())) {
        return None;
    }
    let Instr::Reduce { op: ReduceOp::Sum, dst, src } = k.body[at] else { return None };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let dtype = decl(t).dtype;
    let arith = matches!(map, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul);
    let float = dtype.is_float() && !dtype.is_half() && [a, b, dst].iter().all(|r| decl(*r).dtype == dtype);
    let flat = !decl(a).row && !decl(b).row;
    let private = src == t && decl(t).kind == RegKind::Tile && !decl(t).row && !read_later(&k.body[at + 1..], t);
    if !(arith && float && flat && private) || dst == a || dst == b {
        return None;
    }
    Some((at, Instr::ReduceMap { op: ReduceOp::Sum, map, dst, a, b }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::tile::{BufferId, RegDecl};
    use pyasc_ir::{DType, Shape};

    fn reg(kind: RegKind, dtype: DType, row: bool) -> RegDecl {
        RegDecl { kind, dtype, row }
    }

    fn kernel(regs: Vec<RegDecl>, body: Vec<Instr>) -> TileKernel {
        TileKernel {
            name: "k".into(),
            shape: Shape(vec![4, 8]),
            perm: vec![0, 1],
            row_len: 8,
            library: None,
            args: vec![BufferId(0)],
            arg_views: vec![vec![]],
            outs: vec![BufferId(1)],
            regs,
            body,
            tile_elems: 16,
            program: None,
            locs: vec![],
            fused_ops: 2,
        }
    }

    fn square_sum(dtype: DType) -> TileKernel {
        let regs = vec![
            reg(RegKind::Arg(0), dtype, false),
            reg(RegKind::Tile, dtype, false),
            reg(RegKind::Out(0), dtype, true),
        ];
        let body = vec![
            Instr::Binary { op: BinaryOp::Mul, dst: Reg(1), a: Reg(0), b: Reg(0) },
            Instr::Reduce { op: ReduceOp::Sum, dst: Reg(2), src: Reg(1) },
        ];
        kernel(regs, body)
    }

    #[test]
    fn square_then_sum_is_one_instruction() {
        let mut k = square_sum(DType::F32);
        assert_eq!(fuse_reduce_maps(&mut k), 1);
        assert_eq!(
            k.body,
            vec![Instr::ReduceMap { op: ReduceOp::Sum, map: BinaryOp::Mul, dst: Reg(2), a: Reg(0), b: Reg(0) }]
        );
    }

    #[test]
    fn leaves_integer_max_and_shared_results() {
        let mut ints = square_sum(DType::I64);
        assert_eq!(fuse_reduce_maps(&mut ints), 0);
        let mut max = square_sum(DType::F32);
        max.body[1] = Instr::Reduce { op: ReduceOp::Max, dst: Reg(2), src: Reg(1) };
        assert_eq!(fuse_reduce_maps(&mut max), 0);
        // The product is read again after the sum: it must stay in its tile.
        let mut shared = square_sum(DType::F32);
        shared.regs.push(reg(RegKind::Out(1), DType::F32, false));
        shared.body.push(Instr::Unary { op: pyasc_ir::op::UnaryOp::Neg, dst: Reg(3), src: Reg(1) });
        assert_eq!(fuse_reduce_maps(&mut shared), 0);
    }

    #[test]
    fn leaves_per_row_operands_and_elementwise_kernels() {
        let mut rows = square_sum(DType::F32);
        rows.regs.push(reg(RegKind::Tile, DType::F32, true));
        rows.body[0] = Instr::Binary { op: BinaryOp::Sub, dst: Reg(1), a: Reg(0), b: Reg(3) };
        assert_eq!(fuse_reduce_maps(&mut rows), 0);
        let mut flat = square_sum(DType::F32);
        flat.row_len = 0;
        assert_eq!(fuse_reduce_maps(&mut flat), 0);
    }
}
