//! Row kernels over the columns of a matrix (`np.var(x, axis=0)`: sums, then deviations from
//! them, then sums of those), run in the matrix's own order.
//!
//! Such a kernel's rows are columns of a C-contiguous argument, and gathering a column walks
//! memory a matrix row apart per element. Here a block of neighbouring columns is the unit
//! of work: the body is cut into phases, each a run of element instructions and reductions
//! (walked over the matrix rows, every instruction running on one contiguous run of the
//! block's columns, reductions adding into float64 accumulators) or a run of per-row
//! instructions (run once on the block's per-column values). A phase that reads a reduction
//! of an earlier phase walks the matrix again. Sums keep the row path's accuracy: rows are
//! added in blocks, the blocks' partials combined pairwise.

use super::columns::{add_row, prefetch, Pairwise, AHEAD};
use super::ArgMode;
use crate::instr::{exec, Val};
use crate::pool::num_threads;
use crate::view::SendPtr;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::{BinaryOp, ReduceOp};
use pyasc_ir::tile::{Instr, Reg, RegKind, TileKernel};
use pyasc_ir::DType;

/// Most columns in one block (float64 accumulators for them stay in the L1 cache).
const MAX_WIDTH: usize = 1024;
/// Fewest columns in a block, and the narrowest matrix this path takes.
const MIN_WIDTH: usize = 64;

/// A phase of the body: walked over the matrix rows, or run once per block.
enum Phase {
    Walk(Vec<Instr>),
    Rows(Vec<Instr>),
}

/// A kernel this path runs: its one argument (register, dtype, memory) and its phases.
struct Plan {
    arg: usize,
    dtype: DType,
    base: SendPtr,
    cols: usize,
    len: usize,
    stride: isize,
    phases: Vec<Phase>,
}

fn float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

/// Match a row kernel with one float argument, strided along the reduced axis and contiguous
/// along the kept positions, per-row outputs only, float sums as its only reductions, and
/// element values that never outlive their phase.
fn plan(k: &TileKernel, modes: &[ArgMode]) -> Option<Plan> {
    if k.row_len == 0 || k.library.is_some() || k.program.is_some() {
        return None;
    }
    let mut arg = None;
    for (i, r) in k.regs.iter().enumerate() {
        match r.kind {
            RegKind::Arg(a) if !r.row && arg.is_none() => arg = Some((i, a)),
            RegKind::Arg(_) => return None,
            RegKind::Out(_) if !r.row => return None,
            _ => {}
        }
    }
    let (arg, a) = arg?;
    let dtype = k.regs[arg].dtype;
    let ArgMode::Strided(base, dims, st) = &modes[a as usize] else { return None };
    if !float(dtype)
        || dims.len() != 2
        || st[0] != 1
        || dims[1] != k.row_len
        || st[1].unsigned_abs() < MIN_WIDTH
        || !(base.0 as usize).is_multiple_of(dtype.size())
    {
        return None;
    }
    let reg = |r: Reg| k.regs[r.0 as usize];
    let element = |r: Reg| !reg(r).row && !matches!(reg(r).kind, RegKind::Scalar(_));
    let mut phases: Vec<Phase> = Vec::new();
    // Phase in which each element register was written; sums written in the current walk.
    let mut born: Vec<Option<usize>> = vec![None; k.regs.len()];
    // The latest instruction that wrote each register.
    let mut def: Vec<Option<Instr>> = vec![None; k.regs.len()];
    let mut summed: Vec<usize> = Vec::new();
    for ins in &k.body {
        let walk = match *ins {
            Instr::Reduce { op: ReduceOp::Sum, dst, src } => {
                if !(reg(dst).row && element(src) && float(reg(src).dtype)) {
                    return None;
                }
                true
            }
            Instr::ReduceMap { op: ReduceOp::Sum, map, dst, a, b } => {
                let maps = matches!(map, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul);
                if !(maps && reg(dst).row && !reg(a).row && !reg(b).row && reg(dst).dtype == reg(a).dtype) {
                    return None;
                }
                true
            }
            Instr::SumSquaredDev { dst, src, center } => {
                let centre = reg(center).row || matches!(reg(center).kind, RegKind::Scalar(_));
                if !(reg(dst).row && !reg(src).row && centre && reg(dst).dtype == reg(src).dtype) {
                    return None;
                }
                true
            }
            _ if ins.per_row() => return None,
            _ if reg(ins.dst()).row => {
                if ins.srcs().iter().any(|&s| element(s)) {
                    return None;
                }
                false
            }
            _ => true,
        };
        let same = matches!((phases.last(), walk), (Some(Phase::Walk(_)), true) | (Some(Phase::Rows(_)), false));
        if !same {
            phases.push(if walk { Phase::Walk(Vec::new()) } else { Phase::Rows(Vec::new()) });
            summed.clear();
        }
        let here = phases.len() - 1;
        for &s in ins.srcs().iter() {
            let i = s.0 as usize;
            // A sum is not complete until its walk ends.
            if walk && summed.contains(&i) {
                return None;
            }
            // An element value from an earlier walk is gone: computed again here when it
            // depends only on the argument and constants (a cast of the argument).
            if element(s) && i != arg && born[i] != Some(here) {
                let mut again = Vec::new();
                if !walk || !recompute(k, i, &def, arg, &mut again) {
                    return None;
                }
                for r in again {
                    born[r.dst().0 as usize] = Some(here);
                    if let Some(Phase::Walk(v)) = phases.last_mut() {
                        v.push(r);
                    }
                }
            }
        }
        let d = ins.dst().0 as usize;
        def[d] = Some(*ins);
        if element(ins.dst()) {
            born[d] = Some(here);
        } else if walk {
            summed.push(d);
        }
        match phases.last_mut().expect("pushed") {
            Phase::Walk(v) | Phase::Rows(v) => v.push(*ins),
        }
    }
    phases.iter().any(|p| matches!(p, Phase::Walk(_))).then_some(Plan {
        arg,
        dtype,
        base: *base,
        cols: dims[0],
        len: dims[1],
        stride: st[1],
        phases,
    })
}

/// Push the instructions that compute element register `r` again from the argument and
/// constants alone (dependencies first); false when it needs anything else (a per-row value
/// may have changed since).
fn recompute(k: &TileKernel, r: usize, def: &[Option<Instr>], arg: usize, out: &mut Vec<Instr>) -> bool {
    let Some(ins) = def[r] else { return false };
    if ins.per_row() || out.len() > 16 {
        return false;
    }
    for &s in ins.srcs().iter() {
        let i = s.0 as usize;
        let decl = k.regs[i];
        if i == arg || matches!(decl.kind, RegKind::Scalar(_)) {
            continue;
        }
        if decl.row || !recompute(k, i, def, arg, out) {
            return false;
        }
    }
    if !out.contains(&ins) {
        out.push(ins);
    }
    true
}

/// Run `k` this way when it matches; `None` leaves it to the row path. Blocks of columns run
/// in parallel; every column's sums add its rows in the same order whatever the blocks.
pub(super) fn run(k: &TileKernel, modes: &[ArgMode], outs: &[SendPtr]) -> Option<Result<(usize, usize)>> {
    let p = plan(k, modes)?;
    let threads = num_threads();
    let width = p.cols.div_ceil(2 * threads).clamp(MIN_WIDTH, MAX_WIDTH);
    let blocks = p.cols.div_ceil(width);
    let token = crate::interrupt::current();
    let run_block = |b: usize| -> Result<()> {
        if let Some(t) = &token {
            t.check()?;
        }
        let c0 = b * width;
        // SAFETY: the block's columns lie inside the argument over all its rows (its mode
        // comes from the caller's layout analysis); outputs hold one value per column.
        unsafe { block(k, &p, outs, c0, width.min(p.cols - c0)) }
    };
    let result = if blocks == 1 || threads == 1 || p.cols * p.len < super::PARALLEL_THRESHOLD {
        (0..blocks).try_for_each(run_block)
    } else {
        crate::pool::for_blocks(blocks, threads - 1, run_block)
    };
    Some(result.map(|_| (blocks, blocks.min(threads))))
}

/// Run every phase over columns `c0..c0 + w`.
///
/// # Safety
/// The argument covers all rows of the block's columns; outputs hold `p.cols` values.
unsafe fn block(k: &TileKernel, p: &Plan, outs: &[SendPtr], c0: usize, w: usize) -> Result<()> {
    let mut scratch: Vec<Vec<u64>> = Vec::new();
    let mut vals: Vec<Val> = Vec::with_capacity(k.regs.len());
    for (i, r) in k.regs.iter().enumerate() {
        vals.push(match r.kind {
            RegKind::Scalar(v) => Val::Scalar(v),
            // SAFETY: the output holds one value per column.
            RegKind::Out(o) => Val::Ptr(unsafe { outs[o as usize].0.add(c0 * r.dtype.size()) }),
            _ if i == p.arg => Val::Scalar(pyasc_ir::Scalar::Float(0.0)),
            _ => {
                scratch.push(vec![0u64; w * r.dtype.size() / 8 + 1]);
                Val::Ptr(scratch.last_mut().expect("just pushed").as_mut_ptr() as *mut u8)
            }
        });
    }
    // Two more element registers per dtype, for the mapped values of mapped sums (a sum's own
    // register may still be read as its earlier value in the same walk) and the deviations
    // of sums of squared deviations.
    let mut regs = k.regs.clone();
    let mut mapped_reg = [[Reg(0); 2]; 2];
    for (slot, dtype) in [DType::F32, DType::F64].into_iter().enumerate() {
        for r in mapped_reg[slot].iter_mut() {
            regs.push(pyasc_ir::tile::RegDecl { dtype, kind: RegKind::Tile, row: false });
            scratch.push(vec![0u64; w + 1]);
            vals.push(Val::Ptr(scratch.last_mut().expect("just pushed").as_mut_ptr() as *mut u8));
            *r = Reg((regs.len() - 1) as u16);
        }
    }
    let size = p.dtype.size() as isize;
    let row_at = |i: usize| p.base.0.wrapping_offset((i as isize * p.stride + c0 as isize) * size);
    for phase in &p.phases {
        let body = match phase {
            Phase::Rows(body) => {
                for ins in body {
                    // SAFETY: per-row registers hold `w` values, the others are scalars.
                    unsafe { exec(ins, &regs, &vals, w)? };
                }
                continue;
            }
            Phase::Walk(body) => body,
        };
        let mut sums: Vec<Pairwise> = body
            .iter()
            .filter(|i| matches!(i, Instr::Reduce { .. } | Instr::ReduceMap { .. } | Instr::SumSquaredDev { .. }))
            .map(|_| Pairwise::new(w))
            .collect();
        for i in 0..p.len {
            if i + AHEAD < p.len {
                prefetch(row_at(i + AHEAD), w * size as usize);
            }
            vals[p.arg] = Val::Ptr(row_at(i));
            let mut s = 0;
            for ins in body {
                match *ins {
                    Instr::Reduce { src, .. } => {
                        // SAFETY: the source holds this row's `w` values.
                        unsafe { add_values(&mut sums[s].part, vals[src.0 as usize], k.regs[src.0 as usize].dtype, w) };
                        s += 1;
                    }
                    Instr::ReduceMap { map, a, b, .. } => {
                        let dtype = k.regs[a.0 as usize].dtype;
                        let dst = mapped_reg[usize::from(dtype == DType::F64)][0];
                        let mapped = Instr::Binary { op: map, dst, a, b };
                        // SAFETY: operands hold this row's `w` values (or are broadcast); the
                        // mapped register `w` values.
                        unsafe {
                            exec(&mapped, &regs, &vals, w)?;
                            add_values(&mut sums[s].part, vals[dst.0 as usize], dtype, w);
                        }
                        s += 1;
                    }
                    Instr::SumSquaredDev { src, center, .. } => {
                        let dtype = k.regs[src.0 as usize].dtype;
                        let [dev, sq] = mapped_reg[usize::from(dtype == DType::F64)];
                        let sub = Instr::Binary { op: BinaryOp::Sub, dst: dev, a: src, b: center };
                        let square = Instr::Binary { op: BinaryOp::Mul, dst: sq, a: dev, b: dev };
                        // SAFETY: as for a mapped sum; the centre holds the block's `w` values.
                        unsafe {
                            exec(&sub, &regs, &vals, w)?;
                            exec(&square, &regs, &vals, w)?;
                            add_values(&mut sums[s].part, vals[sq.0 as usize], dtype, w);
                        }
                        s += 1;
                    }
                    // SAFETY: element registers hold this row's `w` values.
                    _ => unsafe { exec(ins, &regs, &vals, w)? },
                }
            }
            sums.iter_mut().for_each(Pairwise::end_row);
        }
        let mut sums = sums.into_iter();
        for ins in body {
            if let Instr::Reduce { dst, .. } | Instr::ReduceMap { dst, .. } | Instr::SumSquaredDev { dst, .. } = *ins {
                let total = sums.next().expect("one sum per reduction").total();
                let Val::Ptr(dp) = vals[dst.0 as usize] else { return Err(IrError::internal("a sum into a scalar")) };
                for (j, t) in total.iter().enumerate() {
                    // SAFETY: the destination holds `w` values of its dtype.
                    unsafe {
                        match k.regs[dst.0 as usize].dtype {
                            DType::F32 => *(dp as *mut f32).add(j) = *t as f32,
                            DType::F64 => *(dp as *mut f64).add(j) = *t,
                            d => return Err(IrError::internal(format!("a float sum into {d}"))),
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `acc[j] += v[j]` for a register of `w` float values.
///
/// # Safety
/// A pointer value holds `w` elements of `dtype`.
unsafe fn add_values(acc: &mut [f64], v: Val, dtype: DType, w: usize) {
    let Val::Ptr(p) = v else { return };
    // SAFETY: per the contract.
    unsafe {
        match dtype {
            DType::F32 => add_row(acc, std::slice::from_raw_parts(p as *const f32, w)),
            _ => add_row(acc, std::slice::from_raw_parts(p as *const f64, w)),
        }
    }
}
