//! One instruction of a tile's body at its level: in a row kernel a reduction turns rows into
//! values, per-row instructions run on one value per row, and element instructions that read
//! per-row values broadcast each row's value over that row.

use crate::instr::{exec, exec_reduce, exec_reduce_map, exec_scan, Val};
use crate::view::read_scalar;
use pyasc_ir::error::Result;
use pyasc_ir::tile::{Instr, Reg, TileKernel};

/// Execute `ins` on a tile of `len` elements, minding per-row registers in row kernels:
/// a reduction turns rows into values, per-row ops run on one value per row, and element ops
/// that read per-row values broadcast each row's value over that row.
///
/// # Safety
/// As for [`exec`]: every register value must be valid for the tile.
pub(super) unsafe fn exec_level(
    k: &TileKernel,
    ins: &Instr,
    vals: &[Val],
    local: &mut [Val],
    len: usize,
    row_args: &[bool],
) -> Result<()> {
    if k.row_len == 0 {
        // SAFETY: per this function's contract.
        return unsafe { exec(ins, &k.regs, vals, len) };
    }
    let c = k.row_len;
    let rows = len / c;
    let d = ins.dst().0 as usize;
    if let Instr::Reduce { op, dst, src } = *ins {
        let s = src.0 as usize;
        // SAFETY: the source holds `rows` rows of `c` elements; the destination `rows` values.
        return unsafe { exec_reduce(op, k.regs[s].dtype, vals[s], vals[dst.0 as usize], rows, c) };
    }
    if let Instr::ReduceMap { op, map, dst, a, b } = *ins {
        let dtype = k.regs[a.0 as usize].dtype;
        let (va, vb, vd) = (vals[a.0 as usize], vals[b.0 as usize], vals[dst.0 as usize]);
        // SAFETY: the operands hold `rows` rows of `c` elements (or are scalars); the destination `rows` values.
        return unsafe { exec_reduce_map(op, map, dtype, va, vb, vd, rows, c) };
    }
    if let Instr::SumSquaredDev { dst, src, center } = *ins {
        let dtype = k.regs[dst.0 as usize].dtype;
        let (vs, vc, vd) = (vals[src.0 as usize], vals[center.0 as usize], vals[dst.0 as usize]);
        // SAFETY: the source holds `rows` rows of `c` elements (or is a scalar), the centre
        // one value per row (or is a scalar), the destination `rows` values.
        return unsafe { crate::instr::exec_sum_sq_dev(dtype, vs, vc, vd, rows, c) };
    }
    if let Instr::ScanMap { kind, dst, src, steps, pre, len: n } = *ins {
        let n = (n as usize).min(steps.len());
        let mut fused = [(steps[0], vals[src.0 as usize]); 3];
        for (f, s) in fused.iter_mut().zip(&steps[..n]) {
            *f = (*s, vals[s.arg.0 as usize]);
        }
        let (vs, vd) = (vals[src.0 as usize], vals[dst.0 as usize]);
        let steps = crate::scan_map::Steps { all: &fused[..n], pre: pre as usize };
        // SAFETY: the operands hold `rows` rows of `c` elements (or are scalars), as the destination.
        return unsafe { crate::scan_map::scan_map_rows(kind, k.regs[d].dtype, vs, steps, vd, rows, c) };
    }
    if let Instr::Scan { kind, dst, src } = *ins {
        // SAFETY: source and destination hold `rows` rows of `c` elements.
        return unsafe { exec_scan(kind, k.regs[d].dtype, vals[src.0 as usize], vals[dst.0 as usize], rows, c) };
    }
    if k.regs[d].row {
        // SAFETY: per-row registers hold one value per row of the tile.
        return unsafe { exec(ins, &k.regs, vals, rows) };
    }
    // Per-row registers: row results and the arguments read one value per row.
    let row = |i: usize| k.regs[i].row || row_args.get(i).copied().unwrap_or(false);
    let reads_rows = ins.srcs().iter().any(|r| row(r.0 as usize) && matches!(vals[r.0 as usize], Val::Ptr(_)));
    if !reads_rows {
        // SAFETY: per this function's contract.
        return unsafe { exec(ins, &k.regs, vals, len) };
    }
    if let Instr::Binary { op, dst, a, b } = *ins {
        let dtype = k.regs[a.0 as usize].dtype;
        let side = |r: Reg| (vals[r.0 as usize], row(r.0 as usize));
        // SAFETY: element registers hold the tile's rows, per-row registers one value per row.
        if unsafe { crate::instr::exec_binary_rows(op, dtype, side(a), side(b), vals[dst.0 as usize], rows, c)? } {
            return Ok(());
        }
    }
    local.copy_from_slice(vals);
    for r in 0..rows {
        for &s in ins.srcs().iter() {
            let i = s.0 as usize;
            let decl = k.regs[i];
            if let Val::Ptr(p) = vals[i] {
                // SAFETY: row values and element rows lie inside their registers' tiles.
                local[i] = unsafe {
                    if row(i) {
                        Val::Scalar(read_scalar(p.add(r * decl.dtype.size()), decl.dtype))
                    } else {
                        Val::Ptr(p.add(r * c * decl.dtype.size()))
                    }
                };
            }
        }
        if let Val::Ptr(p) = vals[d] {
            // SAFETY: as above.
            local[d] = Val::Ptr(unsafe { p.add(r * c * k.regs[d].dtype.size()) });
        }
        // SAFETY: each register now addresses row `r`.
        unsafe { exec(ins, &k.regs, local, c)? };
    }
    Ok(())
}
