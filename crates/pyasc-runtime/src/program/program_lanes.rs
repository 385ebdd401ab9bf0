//! The strip loop of structured programs: mask loops of the tile's outer level whose body
//! decodes to [`pyasc_kernels::lane_loop`] instructions run strip by strip there instead of
//! instruction by instruction over the whole tile.
//!
//! [`compile`] decodes each such loop once per launch (by statement address) and, where the
//! CPU allows, assembles it ([`pyasc_kernels::lane_jit`], cached across launches); [`run`] runs one over a tile's
//! lanes, with the tile's register buffers in place (constants broadcast over one strip) and
//! the launch's cancellation token polled between iterations. The strips of the registers
//! that hold one value for a whole launch are built with the [`Lanes`], once, not per tile.

use crate::instr::{FromScalar, Val};
use crate::interrupt::Token;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::program::{Program, Stmt};
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use pyasc_ir::DType;
use pyasc_kernels::lane_jit::LaneJit;
use pyasc_kernels::lane_loop::{self, LaneProgram, LaneReg, STRIP};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A mask loop decoded for the strip loop, and assembled when the CPU allows.
#[derive(Debug)]
pub struct Lanes {
    prog: LaneProgram,
    jit: Option<Arc<LaneJit>>,
    /// Per register: its value for the whole launch and that value broadcast over one strip.
    consts: Vec<Option<(pyasc_ir::Scalar, Vec<u64>)>>,
}

/// The strips of the registers `value` names a launch-wide value for.
fn const_strips(
    k: &TileKernel,
    value: &dyn Fn(u16) -> Option<pyasc_ir::Scalar>,
) -> Vec<Option<(pyasc_ir::Scalar, Vec<u64>)>> {
    (0..k.regs.len())
        .map(|r| {
            let v = value(r as u16)?;
            Some((v, broadcast(v, k.regs[r].dtype)?))
        })
        .collect()
}

/// The registers some statement of `stmts` reads, the statements of `skip` (a loop body,
/// by address) left out.
fn reads(stmts: &[Stmt], skip: *const Vec<Stmt>, out: &mut HashSet<u16>) {
    for s in stmts {
        match s {
            Stmt::Op(i) => out.extend(i.srcs().iter().map(|r| r.0)),
            Stmt::Load { .. } => {}
            Stmt::Store { src, .. } => {
                out.insert(src.0);
            }
            Stmt::Loop(l) => {
                out.extend(l.carried.iter().map(|r| r.0));
                reads(&l.body, skip, out);
            }
            Stmt::While(w) => {
                out.insert(w.cond.0);
                out.extend(w.carried.iter().map(|r| r.0));
                if !std::ptr::eq(&w.body, skip) {
                    reads(&w.body, skip, out);
                }
            }
        }
    }
}

/// The strip programs of `p`'s top-level mask loops that have one, by statement address.
///
/// A loop qualifies when its body is lane-wise instructions only, every register it names is
/// of the outer level and no instruction writes a constant register. `swaps` are the copies
/// whose source is read by the copy alone ([`crate::copy_swap`]): the instruction computing
/// that source writes the copy's destination directly instead, when nothing between them
/// touches the destination, and the copy goes.
pub fn compile(k: &TileKernel, p: &Program, swaps: &HashSet<usize>) -> HashMap<usize, Lanes> {
    let mut out = HashMap::new();
    for s in &p.body {
        let Stmt::While(w) = s else { continue };
        let mut instrs = Vec::with_capacity(w.body.len());
        let mut swappable = Vec::with_capacity(w.body.len());
        let ok = w.body.iter().all(|b| match b {
            Stmt::Op(i) if !i.per_row() => {
                instrs.push(*i);
                swappable.push(swaps.contains(&(b as *const Stmt as usize)));
                let outer = |r: pyasc_ir::tile::Reg| p.levels.get(r.0 as usize) == Some(&0);
                let dst_is_tile = !matches!(k.regs[i.dst().0 as usize].kind, RegKind::Scalar(_));
                dst_is_tile && outer(i.dst()) && i.srcs().iter().all(|&r| outer(r))
            }
            _ => false,
        });
        if !ok || p.levels.get(w.cond.0 as usize) != Some(&0) {
            continue;
        }
        coalesce(&mut instrs, &swappable);
        if let Some(prog) = LaneProgram::compile(&instrs, w.cond, |r| k.regs[r.0 as usize].dtype) {
            let mut outside = HashSet::new();
            reads(&p.body, &w.body, &mut outside);
            let value = |r: u16| match k.regs.get(r as usize).map(|d| d.kind) {
                Some(RegKind::Scalar(v)) => Some(v),
                _ => None,
            };
            let jit = LaneJit::cached(&prog, &|r| value(r).is_some(), &|r| outside.contains(&r));
            out.insert(s as *const Stmt as usize, Lanes { prog, jit, consts: const_strips(k, &value) });
        }
    }
    out
}

/// Removes each copy `d = copy(t)` marked in `swappable` (its source read by it alone) by
/// making the last instruction before it that writes `t` write `d`, when no instruction in
/// between reads or writes `d`.
fn coalesce(instrs: &mut Vec<Instr>, swappable: &[bool]) {
    let mut keep: Vec<bool> = vec![true; instrs.len()];
    for j in 0..instrs.len() {
        let Instr::Copy { dst: d, src: t } = instrs[j] else { continue };
        if !swappable[j] {
            continue;
        }
        let Some(i) = (0..j).rev().find(|&i| keep[i] && instrs[i].dst() == t) else { continue };
        let touches = |x: &Instr| x.dst() == d || x.srcs().contains(&d);
        if (i + 1..j).any(|m| keep[m] && touches(&instrs[m])) {
            continue;
        }
        *instrs[i].dst_mut() = d;
        keep[j] = false;
    }
    let mut it = keep.iter();
    instrs.retain(|_| *it.next().unwrap_or(&true));
}

/// A straight-line elementwise kernel assembled to run once per lane, every value in a
/// machine register from its load to its store: one pass over a tile instead of one per
/// instruction. `value(r)`: the value register `r` holds for every lane in this launch, if
/// one. `None` when the kernel has per-row registers, fewer than two instructions, an
/// instruction without a lane form, or the CPU cannot run the assembled code.
///
/// The last few kernels each thread launched are remembered with their answer: a launch of
/// the same body and registers with the same launch-wide values takes it without decoding
/// the body, hashing it for the assembled code or broadcasting its constants again.
pub fn straight(k: &TileKernel, value: &dyn Fn(u16) -> Option<pyasc_ir::Scalar>) -> Option<Arc<Lanes>> {
    if k.row_len != 0 || k.body.len() < 2 || k.regs.iter().any(|r| r.row) {
        return None;
    }
    let same = |m: &Memo| {
        m.body == k.body
            && m.regs == k.regs
            && m.values.len() == k.regs.len()
            && m.values.iter().enumerate().all(|(r, v)| *v == value(r as u16))
    };
    let hit = MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let i = memo.iter().position(same)?;
        let m = memo.remove(i);
        let lanes = m.lanes.clone();
        memo.insert(0, m);
        Some(lanes)
    });
    if let Some(lanes) = hit {
        return lanes;
    }
    let lanes = straight_uncached(k, value).map(Arc::new);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        memo.truncate(MEMO_LEN - 1);
        let values = (0..k.regs.len()).map(|r| value(r as u16)).collect();
        memo.insert(0, Memo { body: k.body.clone(), regs: k.regs.clone(), values, lanes: lanes.clone() });
    });
    lanes
}

/// Kernels [`straight`] remembers per thread.
const MEMO_LEN: usize = 8;

/// One remembered answer of [`straight`]: everything it depends on, and the answer.
struct Memo {
    body: Vec<Instr>,
    regs: Vec<pyasc_ir::tile::RegDecl>,
    values: Vec<Option<pyasc_ir::Scalar>>,
    lanes: Option<Arc<Lanes>>,
}

thread_local! {
    static MEMO: std::cell::RefCell<Vec<Memo>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn straight_uncached(k: &TileKernel, value: &dyn Fn(u16) -> Option<pyasc_ir::Scalar>) -> Option<Lanes> {
    let prog = LaneProgram::straight(&k.body, |r| k.regs[r.0 as usize].dtype)?;
    let out = |r: u16| matches!(k.regs.get(r as usize).map(|d| d.kind), Some(RegKind::Out(_)));
    // A launch-wide strip is shared by the tiles of every thread: no instruction may write it.
    let written: HashSet<u16> = k.body.iter().map(|i| i.dst().0).collect();
    let value = |r: u16| if written.contains(&r) { None } else { value(r) };
    let jit = LaneJit::cached(&prog, &|r| value(r).is_some(), &out)?;
    Some(Lanes { prog, jit: Some(jit), consts: const_strips(k, &value) })
}

/// One strip of a constant, as the program's element type.
fn broadcast(s: pyasc_ir::Scalar, dtype: DType) -> Option<Vec<u64>> {
    let mut buf = vec![0u64; STRIP];
    let p = buf.as_mut_ptr();
    // SAFETY: the buffer holds STRIP eight-byte lanes, room for STRIP lanes of any of these types.
    unsafe {
        match dtype {
            DType::F32 => std::slice::from_raw_parts_mut(p as *mut f32, STRIP).fill(f32::from_scalar(s)),
            DType::F64 => std::slice::from_raw_parts_mut(p as *mut f64, STRIP).fill(f64::from_scalar(s)),
            DType::I32 => std::slice::from_raw_parts_mut(p as *mut i32, STRIP).fill(i32::from_scalar(s)),
            DType::I64 => std::slice::from_raw_parts_mut(p as *mut i64, STRIP).fill(i64::from_scalar(s)),
            DType::Bool => std::slice::from_raw_parts_mut(p as *mut u8, STRIP).fill(u8::from_scalar(s)),
            _ => return None,
        }
    }
    Some(buf)
}

/// Runs the mask loop `lp` over the `rows` lanes of a tile whose registers are `vals`: the
/// assembled loop where there is one and the active ISA runs it, else the strip loop.
///
/// # Safety
/// Every tile register of `vals` holds `rows` lanes of its declared type.
pub unsafe fn run(k: &TileKernel, vals: &[Val], rows: usize, lp: &Lanes, token: Option<&Token>) -> Result<()> {
    let mut consts: Vec<Vec<u64>> = Vec::new();
    let mut regs = Vec::with_capacity(vals.len());
    for (i, (v, decl)) in vals.iter().zip(&k.regs).enumerate() {
        regs.push(match *v {
            Val::Ptr(p) => LaneReg { ptr: p, step: decl.dtype.size() },
            Val::Scalar(s) => {
                if let Some(Some((c, strip))) = lp.consts.get(i) {
                    if *c == s {
                        // The launch's strip: read only, by every tile.
                        regs.push(LaneReg { ptr: strip.as_ptr() as *mut u8, step: 0 });
                        continue;
                    }
                }
                let Some(mut buf) = broadcast(s, decl.dtype) else {
                    // A constant of a type no instruction reads (the program names it elsewhere).
                    regs.push(LaneReg { ptr: std::ptr::null_mut(), step: 0 });
                    continue;
                };
                let ptr = buf.as_mut_ptr() as *mut u8;
                consts.push(buf);
                LaneReg { ptr, step: 0 }
            }
        });
    }
    let mut stopped: Option<IrError> = None;
    let mut poll = || match token.map(|t| t.check()) {
        Some(Err(e)) => {
            stopped = Some(e);
            true
        }
        _ => false,
    };
    // SAFETY: per this function's contract; constants are strip-long buffers alive until the end.
    let compiled = lp.jit.as_ref().and_then(|j| unsafe { j.run(&lp.prog, &regs, rows, &mut poll) });
    if compiled.is_none() {
        // SAFETY: as above.
        unsafe { lane_loop::run(&lp.prog, &regs, rows, &mut poll) };
    }
    drop(consts);
    stopped.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::op::BinaryOp;
    use pyasc_ir::tile::Reg;

    fn add(d: u16, a: u16, b: u16) -> Instr {
        Instr::Binary { op: BinaryOp::Add, dst: Reg(d), a: Reg(a), b: Reg(b) }
    }

    #[test]
    fn copies_of_single_use_temporaries_fold_into_their_definition() {
        // r0 = copy(t3) stays: r0 is read between t3's definition and the copy. r1 = copy(t5)
        // folds into t5's definition.
        let mut body = vec![
            add(3, 0, 1),
            add(4, 0, 0),
            Instr::Copy { dst: Reg(0), src: Reg(3) },
            add(5, 1, 1),
            Instr::Copy { dst: Reg(1), src: Reg(5) },
        ];
        coalesce(&mut body, &[false, false, true, false, true]);
        assert_eq!(body, vec![add(3, 0, 1), add(4, 0, 0), Instr::Copy { dst: Reg(0), src: Reg(3) }, add(1, 1, 1)]);
        // A copy not known to be the source's only reader stays.
        let mut body = vec![add(5, 1, 1), Instr::Copy { dst: Reg(1), src: Reg(5) }];
        coalesce(&mut body, &[false, false]);
        assert_eq!(body.len(), 2);
    }

    fn kernel(two: f64) -> TileKernel {
        let reg = |dtype, kind| pyasc_ir::tile::RegDecl { dtype, kind, row: false };
        let regs = vec![
            reg(DType::F32, RegKind::Arg(0)),
            reg(DType::F32, RegKind::Scalar(pyasc_ir::Scalar::Float(two))),
            reg(DType::F32, RegKind::Tile),
            reg(DType::F32, RegKind::Out(0)),
        ];
        crate::test_kernel::kernel(1000, 256, regs, vec![add(2, 0, 1), add(3, 2, 0)])
    }

    /// The launch-wide value of each register of [`kernel`]: its constant, and the argument's
    /// value when it is broadcast.
    fn values(k: &TileKernel, arg: Option<f64>) -> impl Fn(u16) -> Option<pyasc_ir::Scalar> + '_ {
        move |r| match k.regs[r as usize].kind {
            RegKind::Scalar(v) => Some(v),
            RegKind::Arg(_) => arg.map(pyasc_ir::Scalar::Float),
            _ => None,
        }
    }

    /// The first lane of register `r`'s launch strip, if it has one.
    fn strip(l: &Lanes, r: usize) -> Option<f32> {
        l.consts[r].as_ref().map(|(_, s)| f32::from_bits(s[0] as u32))
    }

    #[test]
    fn a_relaunch_with_the_same_values_reuses_the_assembled_pass_and_new_values_do_not() {
        let k = kernel(2.0);
        let first = straight(&k, &values(&k, None));
        if pyasc_kernels::isa::detected() == pyasc_kernels::isa::Isa::Avx512 {
            assert!(first.is_some(), "two additions have lane forms");
        }
        let Some(first) = first else { return };
        assert_eq!((strip(&first, 0), strip(&first, 1), strip(&first, 2)), (None, Some(2.0), None));
        let again = straight(&k, &values(&k, None)).expect("assembled before");
        assert!(Arc::ptr_eq(&first, &again));
        // A broadcast argument: its value is part of what is remembered.
        let three = straight(&k, &values(&k, Some(3.0))).expect("assembled");
        assert!(!Arc::ptr_eq(&first, &three));
        assert_eq!(strip(&three, 0), Some(3.0));
        let four = straight(&k, &values(&k, Some(4.0))).expect("assembled");
        assert_eq!(strip(&four, 0), Some(4.0));
        // Another constant in an otherwise equal kernel.
        let k5 = kernel(5.0);
        let five = straight(&k5, &values(&k5, None)).expect("assembled");
        assert!(!Arc::ptr_eq(&first, &five));
        assert_eq!(strip(&five, 1), Some(5.0));
        // The first kernel is still remembered after the others.
        assert!(Arc::ptr_eq(&first, &straight(&k, &values(&k, None)).expect("assembled")));
    }
}
