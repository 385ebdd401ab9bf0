//! Scan maps: the arithmetic feeding a row scan and the arithmetic applied to its result
//! join the scan as one pass.
//!
//! Needs: a plan after [`crate::chain::ChainPass`]. Guarantees: the same plan where each row
//! scan on float32 or float64 whose input is a scratch tile computed by one add, sub, mul or
//! div (or a chain of two), and read by nothing else, takes that arithmetic as steps before
//! the scan; and where the scan's result is a scratch tile whose only reader is one such
//! arithmetic instruction, that instruction becomes a step after it: one
//! [`Instr::ScanMap`] of at most three steps. The intermediate tiles never exist, each step
//! still rounds as if run alone, and a chunked row scan gives a whole row's bits, so results
//! are unchanged. `np.cumsum(x * 2 + 1, -1) / n` is the common case.

use crate::chain::read_later;
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::tile::{Instr, MapStep, Reg, RegKind, TileKernel};
use pyasc_ir::DType;

/// Fuses arithmetic into the row scans of every kernel.
pub struct ScanMapPass;

impl Pass for ScanMapPass {
    fn name(&self) -> &'static str {
        "scan_map"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        crate::chain::fuse_kernels(st, fuse_scan_maps, "row scan(s) with their arithmetic in one pass");
        Ok(())
    }
}

/// Fuses the arithmetic around every eligible scan of `k`; returns how many scans took some.
pub fn fuse_scan_maps(k: &mut TileKernel) -> usize {
    if k.row_len == 0 {
        return 0;
    }
    crate::chain::fuse_groups(k, fuse_at)
}

fn arith(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
}

/// The steps of an arithmetic instruction applied to its first operand: `(first, steps)`.
fn as_steps(ins: &Instr) -> Option<(Reg, Vec<MapStep>)> {
    match *ins {
        Instr::Binary { op, a, b, .. } if arith(op) => Some((a, vec![MapStep { op, swap: false, arg: b }])),
        Instr::Chain { op1, op2, swap, a, b, c, .. } if arith(op1) && arith(op2) => {
            Some((a, vec![MapStep { op: op1, swap: false, arg: b }, MapStep { op: op2, swap, arg: c }]))
        }
        _ => None,
    }
}

/// If instruction `j` is a float row scan with arithmetic to take in: where the fused scan
/// goes, the fused scan, and the instructions it replaces besides that one.
fn fuse_at(k: &TileKernel, j: usize) -> Option<(usize, Instr, Vec<usize>)> {
    let Instr::Scan { kind, dst: s, src: x } = k.body[j] else { return None };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let dtype = decl(s).dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return None;
    }
    let operand = |r: &Reg| decl(*r).dtype == dtype && !decl(*r).row;
    let private = |t: Reg| decl(t).kind == RegKind::Tile && !decl(t).row;
    // Before: the instruction computing `x`, when the scan is its one reader.
    let mut src = x;
    let mut steps: Vec<MapStep> = Vec::new();
    let mut removed = Vec::new();
    let mut from = j;
    if let Some(p) = (0..j).rev().find(|&i| k.body[i].dst() == x) {
        let alone =
            private(x) && !k.body[p + 1..j].iter().any(|i| i.srcs().contains(&x)) && !read_later(&k.body[j + 1..], x);
        if let Some((first, pre)) = as_steps(&k.body[p]).filter(|_| alone) {
            let reads: Vec<Reg> = std::iter::once(first).chain(pre.iter().map(|s| s.arg)).collect();
            let kept = !k.body[p + 1..j].iter().any(|i| reads.contains(&i.dst()));
            if kept && reads.iter().all(operand) {
                (src, steps, from) = (first, pre, p);
                removed.push(p);
            }
        }
    }
    let pre = steps.len();
    // After: the first reader of the scan's result, when it is the only one.
    let (mut dst, mut at) = (s, j);
    if let Some(q) = k.body[j + 1..].iter().position(|i| i.srcs().contains(&s)).map(|q| q + j + 1) {
        if let Instr::Binary { op, dst: d, a, b } = k.body[q] {
            let reads: Vec<Reg> = std::iter::once(src).chain(steps.iter().map(|s| s.arg)).collect();
            let alone = private(s) && (a == s) != (b == s) && !read_later(&k.body[q + 1..], s);
            let e = if a == s { b } else { a };
            let kept = !k.body[from + 1..q].iter().any(|i| reads.contains(&i.dst()));
            let fits = steps.len() < 3 && arith(op) && operand(&e) && decl(d).dtype == dtype && !decl(d).row;
            if alone && kept && fits && !reads.contains(&d) && d != e {
                steps.push(MapStep { op, swap: b == s, arg: e });
                removed.push(j);
                (dst, at) = (d, q);
            }
        }
    }
    if steps.is_empty() || steps.len() > 3 {
        return None;
    }
    let len = steps.len() as u8;
    let unused = MapStep { op: BinaryOp::Add, swap: false, arg: src };
    let mut all = [unused; 3];
    all[..steps.len()].copy_from_slice(&steps);
    let ins = Instr::ScanMap { kind, dst, src, steps: all, pre: pre as u8, len };
    Some((at, ins, removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::library::ScanKind;
    use pyasc_ir::tile::{BufferId, RegDecl};
    use pyasc_ir::{Scalar, Shape};

    /// r0 input, r1 and r2 constants, r3 and r4 scratch tiles, r5 the output, r6 a row value.
    fn kernel(dtype: DType, body: Vec<Instr>) -> TileKernel {
        let reg = |kind, row| RegDecl { kind, dtype, row };
        let regs = vec![
            reg(RegKind::Arg(0), false),
            reg(RegKind::Scalar(Scalar::Float(2.0)), false),
            reg(RegKind::Scalar(Scalar::Float(1.0)), false),
            reg(RegKind::Tile, false),
            reg(RegKind::Tile, false),
            reg(RegKind::Out(0), false),
            reg(RegKind::Tile, true),
        ];
        TileKernel {
            name: "k".into(),
            shape: Shape(vec![4, 64]),
            perm: vec![0, 1],
            row_len: 64,
            library: None,
            args: vec![BufferId(0)],
            arg_views: vec![vec![]],
            outs: vec![BufferId(1)],
            regs,
            body,
            tile_elems: 128,
            program: None,
            fused_ops: 3,
            locs: vec![],
        }
    }

    fn bin(op: BinaryOp, dst: u16, a: u16, b: u16) -> Instr {
        Instr::Binary { op, dst: Reg(dst), a: Reg(a), b: Reg(b) }
    }

    fn scan(dst: u16, src: u16) -> Instr {
        Instr::Scan { kind: ScanKind::Sum, dst: Reg(dst), src: Reg(src) }
    }

    fn chain() -> Instr {
        Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Add,
            swap: false,
            dst: Reg(3),
            a: Reg(0),
            b: Reg(1),
            c: Reg(2),
        }
    }

    #[test]
    fn a_producer_chain_and_a_consumer_join_the_scan() {
        let mut k = kernel(DType::F32, vec![chain(), scan(4, 3), bin(BinaryOp::Div, 5, 1, 4)]);
        assert_eq!(fuse_scan_maps(&mut k), 1);
        let step = |op, swap, arg| MapStep { op, swap, arg: Reg(arg) };
        let want = Instr::ScanMap {
            kind: ScanKind::Sum,
            dst: Reg(5),
            src: Reg(0),
            steps: [step(BinaryOp::Mul, false, 1), step(BinaryOp::Add, false, 2), step(BinaryOp::Div, true, 1)],
            pre: 2,
            len: 3,
        };
        assert_eq!(k.body, vec![want]);
        let printed = pyasc_ir::print::kernel_to_string(&k);
        assert!(printed.contains("r5 = div(r1, scan_cumsum(add(mul(r0, r1), r2)))"), "{printed}");
    }

    #[test]
    fn shared_or_changed_values_and_other_dtypes_stay_apart() {
        // The producer's result is read again after the scan: only the consumer joins.
        let mut k = kernel(DType::F32, vec![chain(), scan(4, 3), bin(BinaryOp::Div, 5, 4, 3)]);
        assert_eq!(fuse_scan_maps(&mut k), 1);
        assert!(
            matches!(k.body[..], [Instr::Chain { .. }, Instr::ScanMap { pre: 0, len: 1, src: Reg(3), .. }]),
            "{:?}",
            k.body
        );
        // The scan's result is read twice.
        let body = vec![chain(), scan(4, 3), bin(BinaryOp::Add, 3, 4, 1), bin(BinaryOp::Mul, 5, 4, 3)];
        let mut k = kernel(DType::F32, body);
        assert_eq!(fuse_scan_maps(&mut k), 1);
        assert!(matches!(k.body[0], Instr::ScanMap { pre: 2, len: 2, dst: Reg(4), .. }), "{:?}", k.body);
        // A per-row operand, a power and a float16 kernel.
        for (dtype, body) in [
            (DType::F32, vec![bin(BinaryOp::Mul, 3, 0, 6), scan(5, 3)]),
            (DType::F32, vec![bin(BinaryOp::Pow, 3, 0, 1), scan(5, 3)]),
            (DType::F16, vec![chain(), scan(5, 3)]),
        ] {
            let mut k = kernel(dtype, body.clone());
            assert_eq!(fuse_scan_maps(&mut k), 0, "{body:?}");
            assert_eq!(k.body, body);
        }
    }
}
