//! Chaining: two adjacent float arithmetic instructions become one pass.
//!
//! Needs: a lowered [`pyasc_ir::tile::KernelPlan`]. Guarantees: the same plan where each
//! `t = op1(a, b); ...; d = op2(t, c)` (op1, op2 among add, sub, mul; one float dtype
//! throughout; `a`, `b` unchanged in between) whose intermediate `t` is a scratch tile read
//! by nothing else is one
//! [`Instr::Chain`]: the intermediate stays in a register instead of making a round trip
//! through the tile, and each operation still rounds on its own, so results are unchanged.

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::tile::{Instr, Reg, RegKind, TileKernel};

/// Fuses chains of arithmetic in every kernel.
pub struct ChainPass;

impl Pass for ChainPass {
    fn name(&self) -> &'static str {
        "chain"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        fuse_kernels(st, fuse_chains, "instruction pair(s) chained");
        Ok(())
    }
}

/// Run `fuse` (which returns how many fusions it made) over every kernel of the plan; where
/// it fused anything, plan the kernel's tile again (fewer scratch tiles: larger tiles fit the
/// same budget) and note `what` with the count. The loop of the fusing passes.
pub(crate) fn fuse_kernels(st: &mut CompileState, fuse: impl Fn(&mut TileKernel) -> usize, what: &str) {
    if let Some(plan) = st.plan.as_mut() {
        for k in plan.kernels.iter_mut() {
            let n = fuse(k);
            if n > 0 {
                if k.library.is_none() {
                    k.tile_elems = crate::lower::choose_tile(k, &plan.buffers, st.options.budget());
                }
                st.notes.push(format!("{}: {n} {what}, tile {}", k.name, k.tile_elems));
            }
        }
    }
}

fn arithmetic(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)
}

/// Is `t` read by an instruction of `rest` before `rest` writes it again?
pub(crate) fn read_later(rest: &[Instr], t: Reg) -> bool {
    for ins in rest {
        if ins.srcs().contains(&t) {
            return true;
        }
        if ins.dst() == t {
            return false;
        }
    }
    false
}

/// Replace each instruction `j` for which `fuse` finds a partner by the fused instruction it
/// returns (at the partner's index, `j` dropped); returns how many. The loop of the passes
/// that fuse an instruction into its first reader.
pub(crate) fn fuse_pairs(k: &mut TileKernel, fuse: impl Fn(&TileKernel, usize) -> Option<(usize, Instr)>) -> usize {
    fuse_groups(k, |k, j| fuse(k, j).map(|(at, ins)| (at, ins, vec![j])))
}

/// Replace, for each instruction `j` where `fuse` finds a group, the instruction at the
/// returned index by the fused one and drop the returned others (all before it); returns how
/// many groups. [`fuse_pairs`] is the case of two. Kernels with a structured program (loops)
/// are left alone: their statements are not the flat body these fusions read.
pub(crate) fn fuse_groups(
    k: &mut TileKernel,
    fuse: impl Fn(&TileKernel, usize) -> Option<(usize, Instr, Vec<usize>)>,
) -> usize {
    if k.program.is_some() {
        return 0;
    }
    let mut count = 0;
    let mut j = 0;
    while j < k.body.len() {
        if let Some((at, fused, mut gone)) = fuse(k, j) {
            k.body[at] = fused;
            gone.sort_unstable_by(|a, b| b.cmp(a));
            for i in gone {
                k.body.remove(i);
            }
            count += 1;
        } else {
            j += 1;
        }
    }
    count
}

/// Chains every eligible pair of `k`'s body; returns how many.
pub fn fuse_chains(k: &mut TileKernel) -> usize {
    let mut count = 0;
    let mut j = 0;
    while j < k.body.len() {
        if let Some((at, chained)) = chain_from(k, j) {
            // The chain takes the second instruction's place; the first is dropped.
            let old_dst = k.body[at].dst();
            if chained.dst() != old_dst {
                if let Some(readers) = retarget(k, at, old_dst, chained.dst()) {
                    for i in readers {
                        rename_src(&mut k.body[i], old_dst, chained.dst());
                    }
                }
            }
            k.body[at] = chained;
            k.body.remove(j);
            count += 1;
        } else {
            j += 1;
        }
    }
    count
}

/// If instruction `j` is `t = op1(a, b)` and the first instruction reading `t` qualifies as
/// its partner, the partner's index and the chained instruction that replaces it.
fn chain_from(k: &TileKernel, j: usize) -> Option<(usize, Instr)> {
    let Instr::Binary { op: op1, dst: t, a, b } = k.body[j] else { return None };
    let at = j + 1 + k.body[j + 1..].iter().position(|i| i.srcs().contains(&t))?;
    // In between, nothing may change `a`, `b` or `t`.
    if k.body[j + 1..at].iter().any(|i| [a, b, t].contains(&i.dst())) {
        return None;
    }
    let Instr::Binary { op: op2, dst: d, a: a2, b: b2 } = k.body[at] else { return None };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let dtype = decl(d).dtype;
    let same_float = dtype.is_float() && [a, b, t, a2, b2].iter().all(|r| decl(*r).dtype == dtype);
    let t_private = decl(t).kind == RegKind::Tile && !decl(t).row && !read_later(&k.body[at + 1..], t);
    let once = (a2 == t) != (b2 == t);
    if !(arithmetic(op1) && arithmetic(op2) && same_float && t_private && once) {
        return None;
    }
    // The destination may not share memory with the first operation's operands; a scratch
    // destination that does (its register reused once `a` or `b` died) moves into `t`'s.
    let renamed = match d == a || d == b {
        true if t == a || t == b => return None,
        true => Some(retarget(k, at, d, t)?),
        false => None,
    };
    let (c, swap) = if a2 == t { (b2, false) } else { (a2, op2 == BinaryOp::Sub) };
    let dst = if renamed.is_some() { t } else { d };
    Some((at, Instr::Chain { op1, op2, swap, dst, a, b, c }))
}

/// The instructions after `at` that read `d`'s value written at `at` (up to the next write
/// of `d`), when that value can live in scratch tile `t` instead: `d` is a scratch tile like
/// `t` and nothing writes `t` while the value is read. [`fuse_chains`] then renames them.
fn retarget(k: &TileKernel, at: usize, d: Reg, t: Reg) -> Option<Vec<usize>> {
    let decl = |r: Reg| k.regs[r.0 as usize];
    if decl(d).kind != RegKind::Tile || decl(d).row || decl(d).dtype != decl(t).dtype {
        return None;
    }
    let mut readers = Vec::new();
    for (i, ins) in k.body.iter().enumerate().skip(at + 1) {
        if ins.srcs().contains(&d) {
            readers.push(i);
        }
        if ins.dst() == d {
            break;
        }
    }
    let last = readers.last().copied().unwrap_or(at);
    if k.body[at + 1..=last].iter().any(|i| i.dst() == t) {
        return None;
    }
    Some(readers)
}

/// Make `ins` read `to` wherever it reads `from`.
pub(crate) fn rename_src(ins: &mut Instr, from: Reg, to: Reg) {
    let f = |r: &mut Reg| {
        if *r == from {
            *r = to;
        }
    };
    match ins {
        Instr::Unary { src, .. }
        | Instr::Cast { src, .. }
        | Instr::Copy { src, .. }
        | Instr::Reduce { src, .. }
        | Instr::Scan { src, .. } => f(src),
        Instr::Binary { a, b, .. } | Instr::ReduceMap { a, b, .. } => {
            f(a);
            f(b);
        }
        Instr::Select { cond, a, b, .. } => {
            f(cond);
            f(a);
            f(b);
        }
        Instr::Chain { a, b, c, .. } => {
            f(a);
            f(b);
            f(c);
        }
        Instr::SelectCmp { a, b, t, f: g, .. } => {
            for r in [a, b, t, g] {
                f(r);
            }
        }
        Instr::ScaleShift { a, b, scale, shift, .. } => {
            f(a);
            f(b);
            f(scale);
            f(shift);
        }
        Instr::SumSquaredDev { src, center, .. } => {
            f(src);
            f(center);
        }
        Instr::Normalize { x, mean, rstd, scale, shift, .. } => {
            for r in [x, mean, rstd, scale, shift] {
                f(r);
            }
        }
        Instr::ScanMap { src, steps, .. } => {
            f(src);
            for s in steps.iter_mut() {
                f(&mut s.arg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::tile::{BufferId, RegDecl};
    use pyasc_ir::{DType, Shape};

    fn reg(kind: RegKind, dtype: DType) -> RegDecl {
        RegDecl { kind, dtype, row: false }
    }

    fn kernel(regs: Vec<RegDecl>, body: Vec<Instr>) -> TileKernel {
        TileKernel {
            name: "k".into(),
            shape: Shape(vec![8]),
            perm: vec![0],
            row_len: 0,
            library: None,
            args: vec![BufferId(0), BufferId(1)],
            arg_views: vec![vec![], vec![]],
            outs: vec![BufferId(2)],
            regs,
            body,
            tile_elems: 8,
            program: None,
            fused_ops: 2,
            locs: vec![],
        }
    }

    fn b(op: BinaryOp, dst: u16, a: u16, b: u16) -> Instr {
        Instr::Binary { op, dst: Reg(dst), a: Reg(a), b: Reg(b) }
    }

    fn regs(dtype: DType) -> Vec<RegDecl> {
        vec![
            reg(RegKind::Arg(0), dtype),
            reg(RegKind::Arg(1), dtype),
            reg(RegKind::Tile, dtype),
            reg(RegKind::Out(0), dtype),
            reg(RegKind::Tile, dtype),
        ]
    }

    #[test]
    fn sub_then_mul_becomes_one_chain() {
        let mut k = kernel(regs(DType::F32), vec![b(BinaryOp::Sub, 2, 0, 1), b(BinaryOp::Mul, 3, 2, 1)]);
        assert_eq!(fuse_chains(&mut k), 1);
        assert_eq!(
            k.body,
            vec![Instr::Chain {
                op1: BinaryOp::Sub,
                op2: BinaryOp::Mul,
                swap: false,
                dst: Reg(3),
                a: Reg(0),
                b: Reg(1),
                c: Reg(1)
            }]
        );
    }

    #[test]
    fn subtraction_from_the_left_is_swapped() {
        let mut k = kernel(regs(DType::F64), vec![b(BinaryOp::Mul, 2, 0, 1), b(BinaryOp::Sub, 3, 0, 2)]);
        assert_eq!(fuse_chains(&mut k), 1);
        assert!(matches!(k.body[0], Instr::Chain { swap: true, c: Reg(0), .. }));
    }

    #[test]
    fn a_partner_further_down_is_found() {
        // t = a - b; r4 = b * b; d = t * r4: the chain replaces the third instruction.
        let mut k = kernel(
            regs(DType::F32),
            vec![b(BinaryOp::Sub, 2, 0, 1), b(BinaryOp::Mul, 4, 1, 1), b(BinaryOp::Mul, 3, 2, 4)],
        );
        assert_eq!(fuse_chains(&mut k), 1);
        assert_eq!(k.body[0], b(BinaryOp::Mul, 4, 1, 1));
        assert!(matches!(k.body[1], Instr::Chain { op1: BinaryOp::Sub, c: Reg(4), .. }));
        // Not when an operand of the first instruction changes in between (then the second
        // and third pair up instead).
        let mut k = kernel(
            regs(DType::F32),
            vec![b(BinaryOp::Sub, 2, 4, 1), b(BinaryOp::Mul, 4, 1, 1), b(BinaryOp::Mul, 3, 2, 4)],
        );
        assert_eq!(fuse_chains(&mut k), 1);
        assert_eq!(k.body[0], b(BinaryOp::Sub, 2, 4, 1));
        assert!(matches!(k.body[1], Instr::Chain { op1: BinaryOp::Mul, a: Reg(1), b: Reg(1), c: Reg(2), .. }));
    }

    #[test]
    fn a_destination_aliasing_an_operand_moves_into_the_scratch_tile() {
        // r4 = (r4 + r1) * r1; r3 = r4 / r0: the chain writes r2 and the divide reads it.
        let mut k = kernel(
            regs(DType::F32),
            vec![b(BinaryOp::Add, 2, 4, 1), b(BinaryOp::Mul, 4, 2, 1), b(BinaryOp::Div, 3, 4, 0)],
        );
        assert_eq!(fuse_chains(&mut k), 1);
        assert!(matches!(k.body[0], Instr::Chain { dst: Reg(2), a: Reg(4), b: Reg(1), c: Reg(1), .. }));
        assert_eq!(k.body[1], b(BinaryOp::Div, 3, 2, 0));
    }

    #[test]
    fn ineligible_pairs_stay_apart() {
        // The intermediate is read again later.
        let mut k = kernel(
            regs(DType::F32),
            vec![b(BinaryOp::Add, 2, 0, 1), b(BinaryOp::Mul, 4, 2, 1), b(BinaryOp::Add, 3, 4, 2)],
        );
        assert_eq!(fuse_chains(&mut k), 1, "only the last pair qualifies");
        assert!(matches!(k.body[0], Instr::Binary { .. }));
        // Integers, division, and a destination that is an operand of the first operation.
        let mut k = kernel(regs(DType::I32), vec![b(BinaryOp::Add, 2, 0, 1), b(BinaryOp::Mul, 3, 2, 1)]);
        assert_eq!(fuse_chains(&mut k), 0);
        let mut k = kernel(regs(DType::F32), vec![b(BinaryOp::Div, 2, 0, 1), b(BinaryOp::Mul, 3, 2, 1)]);
        assert_eq!(fuse_chains(&mut k), 0);
        // A destination that is an operand of the first operation and must stay there: the
        // scratch `t` (r2) is written again while the result (r4) is still read.
        let mut k = kernel(
            regs(DType::F32),
            vec![
                b(BinaryOp::Add, 2, 4, 1),
                b(BinaryOp::Mul, 4, 2, 1),
                b(BinaryOp::Div, 2, 0, 1),
                b(BinaryOp::Div, 3, 4, 2),
            ],
        );
        assert_eq!(fuse_chains(&mut k), 0);
        // t * t.
        let mut k = kernel(regs(DType::F32), vec![b(BinaryOp::Add, 2, 0, 1), b(BinaryOp::Mul, 3, 2, 2)]);
        assert_eq!(fuse_chains(&mut k), 0);
    }
}
