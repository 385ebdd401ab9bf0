//! Deviations read where they are used: a row kernel's `d = x - m` (`m` one value per row, as
//! a mean is) that only feeds a sum of squares and a scaling is never stored.
//!
//! Needs: a plan after [`crate::reduce_map::ReduceMapPass`]. Guarantees: the same plan where
//! each `d = x - m` on one float dtype of 32 or 64 bits (`x` element values, `m` a per-row
//! value or scalar; `d` a scratch tile) whose every reader up to `d`'s next write is one of
//! `reduce_sum(mul(d, d))`, `mul(d, r)`, `mul(mul(d, r), w)`, `add(mul(d, r), b)` and
//! `add(mul(mul(d, r), w), b)` is gone, and those readers compute `x - m` themselves:
//! [`Instr::SumSquaredDev`], [`Instr::Chain`] and [`Instr::Normalize`]. Each still rounds every operation on its own, so results are
//! bit-identical, and the tile pass that wrote `d` (one store and one load of every element)
//! is gone. A layer norm's variance and epilogue are the case. When `m`'s register is reused
//! before the last reader, `m` moves to a fresh per-row register.

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::{BinaryOp, ReduceOp};
use pyasc_ir::tile::{Instr, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::{DType, Scalar};

/// Moves deviations from row values into their readers, in every row kernel.
pub struct DeviationPass;

impl Pass for DeviationPass {
    fn name(&self) -> &'static str {
        "deviation"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        crate::chain::fuse_kernels(st, fuse_deviations, "deviation(s) computed where read");
        Ok(())
    }
}

/// Rewrites every eligible deviation of `k`'s body; returns how many.
pub fn fuse_deviations(k: &mut TileKernel) -> usize {
    if k.row_len == 0 || k.program.is_some() {
        return 0;
    }
    let mut count = 0;
    let mut j = 0;
    while j < k.body.len() {
        if rewrite_at(k, j) {
            count += 1;
        } else {
            j += 1;
        }
    }
    count
}

/// Scalar registers the rewritten readers may need: `1` and `-0` in the kernel's dtype.
#[derive(Copy, Clone)]
struct Identities {
    one: Reg,
    neg_zero: Reg,
}

/// The instruction `ins` reading deviation `d` rewritten to read `x - m` instead, if it is
/// one of the forms. A missing weight multiplies by `one` and a missing bias adds `-0`: both
/// leave every value's bits as they are (`v + -0` is `v` for `+0` and `-0` alike).
fn reader(ins: Instr, d: Reg, x: Reg, m: Reg, ids: Identities) -> Option<Instr> {
    // The other factor of a product with `d` (read once).
    let other = |a: Reg, b: Reg| match (a == d, b == d) {
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => None,
    };
    let normalize = |dst, rstd, scale, shift| Instr::Normalize { dst, x, mean: m, rstd, scale, shift };
    match ins {
        Instr::ReduceMap { op: ReduceOp::Sum, map: BinaryOp::Mul, dst, a, b } if a == d && b == d => {
            Some(Instr::SumSquaredDev { dst, src: x, center: m })
        }
        Instr::Binary { op: BinaryOp::Mul, dst, a, b } => {
            let r = other(a, b)?;
            Some(Instr::Chain { op1: BinaryOp::Sub, op2: BinaryOp::Mul, swap: false, dst, a: x, b: m, c: r })
        }
        // `(d * r) * w` and `(d * r) + b` (either way round: both operations commute).
        Instr::Chain { op1: BinaryOp::Mul, op2: BinaryOp::Mul, dst, a, b, c, .. } if c != d => {
            Some(normalize(dst, other(a, b)?, c, ids.neg_zero))
        }
        Instr::Chain { op1: BinaryOp::Mul, op2: BinaryOp::Add, dst, a, b, c, .. } if c != d => {
            Some(normalize(dst, other(a, b)?, ids.one, c))
        }
        Instr::ScaleShift { op1: BinaryOp::Mul, dst, a, b, scale, shift } if scale != d && shift != d => {
            Some(normalize(dst, other(a, b)?, scale, shift))
        }
        _ => None,
    }
}

/// A scalar register holding `v` in `dtype`: an existing one, or a new one at the end of
/// the file.
fn constant(k: &mut TileKernel, dtype: DType, v: f64) -> Reg {
    let same = |r: &RegDecl| {
        r.dtype == dtype && matches!(r.kind, RegKind::Scalar(Scalar::Float(u)) if u.to_bits() == v.to_bits())
    };
    if let Some(i) = k.regs.iter().position(same) {
        return Reg(i as u16);
    }
    k.regs.push(RegDecl { kind: RegKind::Scalar(Scalar::Float(v)), dtype, row: false });
    Reg((k.regs.len() - 1) as u16)
}

/// If instruction `j` is an eligible deviation, rewrite its readers, drop it and say so.
fn rewrite_at(k: &mut TileKernel, j: usize) -> bool {
    let Instr::Binary { op: BinaryOp::Sub, dst: d, a: x, b: m } = k.body[j] else { return false };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let dtype = decl(d).dtype;
    let floats = matches!(dtype, DType::F32 | DType::F64) && decl(x).dtype == dtype && decl(m).dtype == dtype;
    let row_value = decl(m).row || matches!(decl(m).kind, RegKind::Scalar(_));
    if !floats || !row_value || decl(d).kind != RegKind::Tile || decl(d).row || decl(x).row {
        return false;
    }
    // Readers of this value of `d`: up to and including its next write.
    let mut readers = Vec::new();
    for (i, ins) in k.body.iter().enumerate().skip(j + 1) {
        if ins.srcs().contains(&d) {
            readers.push(i);
        }
        if ins.dst() == d {
            break;
        }
    }
    let Some(&last) = readers.last() else { return false };
    // `x` must hold its value until the last reader, which may not write it either.
    if k.body[j + 1..=last].iter().any(|i| i.dst() == x) {
        return false;
    }
    // `m` moves to a fresh register when it is written before the last reader.
    let moved = k.body[j + 1..=last].iter().any(|i| i.dst() == m);
    let center = if moved { Reg(k.regs.len() as u16) } else { m };
    let unknown = Identities { one: d, neg_zero: d };
    if readers.iter().any(|&i| reader(k.body[i], d, x, center, unknown).is_none()) {
        return false;
    }
    if moved && !move_value(k, j, m, center) {
        return false;
    }
    // The identities only where a reader lacks a weight or a bias.
    let lacks = |op2: BinaryOp| {
        readers.iter().any(|&i| matches!(k.body[i], Instr::Chain { op1: BinaryOp::Mul, op2: o, .. } if o == op2))
    };
    let (no_bias, no_weight) = (lacks(BinaryOp::Mul), lacks(BinaryOp::Add));
    let ids = Identities {
        one: if no_weight { constant(k, dtype, 1.0) } else { d },
        neg_zero: if no_bias { constant(k, dtype, -0.0) } else { d },
    };
    // Rewritten after the move: a reader may also read `m` as another operand.
    for i in readers {
        k.body[i] = reader(k.body[i], d, x, center, ids).expect("checked above");
    }
    k.body.remove(j);
    true
}

/// Give the value of per-row register `m` read at instruction `j` its own register `to` (the
/// next one of the file): its definition before `j` writes `to`, and every read of that value
/// reads `to`. False (and nothing changed) when `m` has no such definition or is not a
/// per-row scratch register.
fn move_value(k: &mut TileKernel, j: usize, m: Reg, to: Reg) -> bool {
    let old = k.regs[m.0 as usize];
    let Some(p) = k.body[..j].iter().rposition(|i| i.dst() == m) else { return false };
    if old.kind != RegKind::Tile || !old.row || to.0 as usize != k.regs.len() {
        return false;
    }
    k.regs.push(RegDecl { kind: RegKind::Tile, dtype: old.dtype, row: true });
    *k.body[p].dst_mut() = to;
    for ins in k.body[p + 1..].iter_mut() {
        crate::chain::rename_src(ins, m, to);
        if ins.dst() == m {
            break;
        }
    }
    true
}

#[cfg(test)]
#[path = "deviation_tests.rs"]
mod tests;
