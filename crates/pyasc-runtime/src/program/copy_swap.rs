//! Copies that the structured-program VM runs as a swap of register buffers.
//!
//! A mask loop's body ends with `c = copy(t)` for every carried value it recomputes (the new
//! value is computed into a temporary because the old one is still read). When `t` is read by
//! that copy alone, its value is dead once copied, so the VM can hand `t`'s buffer to `c` and
//! `c`'s old buffer to `t` instead of moving the elements: `t` is fully written again before
//! the copy runs next. Only whole-tile registers of the outer level qualify, with the same
//! dtype (so the same capacity), and only when every write of `t` is a lane-wise instruction
//! at the outer depth (so it writes every lane in play, never a chunk of an inner loop),
//! and every write of `t` lies in the copy's own statement list, one of them before it (so
//! `t` is written again on every pass before the copy reads it).

use pyasc_ir::program::{Program, Stmt};
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use std::collections::HashSet;

/// Per register: statements reading it, and whether some write is not a whole-tile one.
#[derive(Clone, Default)]
struct Uses {
    reads: usize,
    writes: usize,
    partial_write: bool,
}

fn scan(stmts: &[Stmt], depth: usize, uses: &mut [Uses]) {
    for s in stmts {
        match s {
            Stmt::Op(i) => {
                for r in i.srcs().iter() {
                    uses[r.0 as usize].reads += 1;
                }
                let u = &mut uses[i.dst().0 as usize];
                u.writes += 1;
                u.partial_write |= depth > 0 || i.per_row();
            }
            Stmt::Load { dst, .. } => {
                let u = &mut uses[dst.0 as usize];
                u.writes += 1;
                u.partial_write |= depth > 0;
            }
            Stmt::Store { src, .. } => uses[src.0 as usize].reads += 1,
            Stmt::Loop(l) => {
                for r in &l.carried {
                    uses[r.0 as usize].reads += 1;
                }
                scan(&l.body, depth + 1, uses);
            }
            Stmt::While(w) => {
                uses[w.cond.0 as usize].reads += 1;
                for r in &w.carried {
                    uses[r.0 as usize].reads += 1;
                }
                scan(&w.body, depth, uses);
            }
        }
    }
}

fn collect(stmts: &[Stmt], depth: usize, k: &TileKernel, p: &Program, uses: &[Uses], out: &mut HashSet<usize>) {
    let writes = |list: &[Stmt], r: usize| {
        list.iter()
            .filter(|s| match s {
                Stmt::Op(i) => i.dst().0 as usize == r,
                Stmt::Load { dst, .. } => dst.0 as usize == r,
                _ => false,
            })
            .count()
    };
    for (j, s) in stmts.iter().enumerate() {
        match s {
            Stmt::Op(Instr::Copy { dst, src }) if depth == 0 => {
                let (d, t) = (dst.0 as usize, src.0 as usize);
                let tile = |r: usize| !matches!(k.regs[r].kind, RegKind::Scalar(_)) && p.levels[r] == 0;
                if d != t
                    && tile(d)
                    && tile(t)
                    && k.regs[d].dtype == k.regs[t].dtype
                    && uses[t].reads == 1
                    && !uses[t].partial_write
                    && writes(&stmts[..j], t) >= 1
                    && writes(stmts, t) == uses[t].writes
                {
                    out.insert(s as *const Stmt as usize);
                }
            }
            Stmt::Loop(l) => collect(&l.body, depth + 1, k, p, uses, out),
            Stmt::While(w) => collect(&w.body, depth, k, p, uses, out),
            _ => {}
        }
    }
}

/// The addresses of the copies of `p` that may run as buffer swaps.
pub(crate) fn swappable_copies(k: &TileKernel, p: &Program) -> HashSet<usize> {
    let mut uses = vec![Uses::default(); k.regs.len()];
    scan(&p.body, 0, &mut uses);
    let mut out = HashSet::new();
    collect(&p.body, 0, k, p, &uses, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::op::BinaryOp;
    use pyasc_ir::program::WhileAny;
    use pyasc_ir::tile::{Reg, RegDecl};
    use pyasc_ir::DType;

    fn kernel(dtypes: &[DType]) -> TileKernel {
        let regs = dtypes.iter().map(|&dtype| RegDecl { dtype, kind: RegKind::Tile, row: false }).collect();
        crate::test_kernel::kernel(100, 64, regs, vec![])
    }

    fn add(dst: u16, a: u16, b: u16) -> Stmt {
        Stmt::Op(Instr::Binary { op: BinaryOp::Add, dst: Reg(dst), a: Reg(a), b: Reg(b) })
    }

    fn copy(dst: u16, src: u16) -> Stmt {
        Stmt::Op(Instr::Copy { dst: Reg(dst), src: Reg(src) })
    }

    /// The swappable copies of: `r0` loaded; a mask loop on `r2` running `body`; `after`;
    /// `r3` stored.
    fn swaps(dtypes: &[DType], body: Vec<Stmt>, after: Vec<Stmt>) -> usize {
        let k = kernel(dtypes);
        let mut prog = vec![
            Stmt::Load { dst: Reg(0), arg: 0, map: pyasc_ir::program::IndexMap::Identity },
            Stmt::While(WhileAny { cond: Reg(2), carried: vec![Reg(2), Reg(3)], body }),
        ];
        prog.extend(after);
        prog.push(Stmt::Store { src: Reg(3), out: 0, map: pyasc_ir::program::IndexMap::Identity });
        let p = Program { levels: vec![0; dtypes.len()], body: prog };
        swappable_copies(&k, &p).len()
    }

    #[test]
    fn only_copies_of_values_dead_after_them_and_rewritten_first_swap() {
        let f = DType::F64;
        let four = [f, f, DType::Bool, f];
        // The temporary is written before the copy in the same body and read by it alone.
        assert_eq!(swaps(&four, vec![add(1, 0, 3), copy(3, 1)], vec![]), 1);
        // Read again after the copy.
        assert_eq!(swaps(&four, vec![add(1, 0, 3), copy(3, 1)], vec![add(0, 1, 1)]), 0);
        // Copied before it is written in the body (the copy reads last pass's value).
        assert_eq!(swaps(&four, vec![copy(3, 1), add(1, 0, 3)], vec![]), 0);
        // Also written outside the body.
        assert_eq!(swaps(&four, vec![add(1, 0, 3), copy(3, 1)], vec![add(1, 0, 0)]), 0);
        // Different dtypes.
        assert_eq!(swaps(&[f, DType::F32, DType::Bool, f], vec![add(1, 0, 0), copy(3, 1)], vec![]), 0);
    }
}
