//! Rows too long for one tile (`(x * 2).sum(axis=-1)` over rows of 2^28 elements, broadcast
//! ones included): a single-pass row kernel (element ops feed reductions, per-row ops read
//! only reduction results) runs each row in chunks of [`CHUNK`] elements, so its scratch is a
//! chunk, never a row. Chunks run in parallel; each keeps its partial results, which are
//! folded in chunk order, so the result does not depend on the number of threads.

use super::{Scratch, BLOCKS_PER_THREAD, PARALLEL_THRESHOLD};
use crate::instr::{exec, exec_reduce, exec_reduce_map, write_scalar, Val};
use crate::layout::gather_elems;
use crate::pool::num_threads;
use crate::view::{read_scalar, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::ReduceOp;
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use pyasc_ir::{DType, Scalar};
use std::sync::Mutex;

/// Elements per chunk.
pub(super) const CHUNK: usize = 1 << 14;

/// One chunk's result of one reduction: its value, and for arg-reductions the index of the
/// value in the row.
type Partial = (Scalar, i64);

/// True when `k` is a row kernel whose rows are long enough to chunk and whose body is one
/// pass: element instructions read no per-row value, reductions read element values, per-row
/// instructions read only per-row values and constants.
pub(super) fn chunkable(k: &TileKernel) -> bool {
    if k.row_len <= 4 * CHUNK || k.library.is_some() || k.program.is_some() {
        return false;
    }
    let row = |r: &pyasc_ir::tile::Reg| k.regs[r.0 as usize].row;
    let plain = |d: DType| matches!(d, DType::Bool | DType::I32 | DType::I64 | DType::F32 | DType::F64);
    k.regs.iter().all(|r| !(r.row && matches!(r.kind, RegKind::Arg(_))))
        && k.body.iter().all(|ins| match ins {
            Instr::Reduce { dst, src, .. } => !row(src) && row(dst) && plain(k.regs[src.0 as usize].dtype),
            Instr::ReduceMap { dst, a, b, .. } => !row(a) && !row(b) && row(dst),
            // A running value would have to carry from chunk to chunk.
            Instr::Scan { .. } | Instr::ScanMap { .. } => false,
            _ if row(&ins.dst()) => {
                ins.srcs().iter().all(|s| row(s) || matches!(k.regs[s.0 as usize].kind, RegKind::Scalar(_)))
            }
            _ => ins.srcs().iter().all(|s| !row(s)),
        })
}

/// Run a [`chunkable`] kernel: arguments read per `modes`, outputs at `outs`.
pub(super) fn run(
    k: &TileKernel,
    modes: &[super::ArgMode],
    outs: &[SendPtr],
    gathered: &[bool],
) -> Result<(usize, usize)> {
    let c = k.row_len;
    let rows = k.shape.numel() / c;
    let uniform: Vec<bool> = modes.iter().map(|m| row_uniform(m, c)).collect();
    // Rows of broadcast values only (and no element output) reduce in closed form: every
    // register is one value, so a row is one chunk.
    let element_outs = k.regs.iter().any(|r| !r.row && matches!(r.kind, RegKind::Out(_)));
    let all_uniform = modes.iter().zip(&uniform).all(|(m, u)| *u || matches!(m, super::ArgMode::Broadcast(_)));
    let chunk = if all_uniform && !element_outs { c } else { CHUNK };
    let chunks = c.div_ceil(chunk);
    let items = rows * chunks;
    let reductions = k.body.iter().filter(|i| matches!(i, Instr::Reduce { .. } | Instr::ReduceMap { .. })).count();
    let threads = num_threads();
    let blocks =
        if k.shape.numel() < PARALLEL_THRESHOLD || threads == 1 { 1 } else { items.min(threads * BLOCKS_PER_THREAD) };
    let found: Vec<Mutex<Vec<Partial>>> = (0..blocks).map(|_| Mutex::new(Vec::new())).collect();
    let token = crate::interrupt::current();
    let run_block = |b: usize| -> Result<()> {
        let mut scratch = Scratch::take_sized(k, gathered, CHUNK, 1)?;
        let mut mine = Vec::with_capacity((items / blocks + 1) * reductions);
        for item in b * items / blocks..(b + 1) * items / blocks {
            if let Some(token) = &token {
                token.check()?;
            }
            let (row, j) = (item / chunks, item % chunks);
            let start = row * c + j * chunk;
            let len = chunk.min(c - j * chunk);
            let at = Chunk { start, len, offset: (j * chunk) as i64, uniform: &uniform };
            // SAFETY: the chunk lies inside row `row` of the iteration space; scratch holds a
            // chunk of every register that is not uniform over it.
            unsafe { run_chunk(k, modes, outs, &mut scratch, at, &mut mine)? };
        }
        scratch.release();
        *found[b].lock().unwrap_or_else(|p| p.into_inner()) = mine;
        Ok(())
    };
    if blocks == 1 {
        run_block(0)?;
    } else {
        crate::pool::for_blocks(blocks, threads - 1, run_block)?;
    }
    // Blocks cover consecutive items: their partials, in block order, are in item order.
    let partials: Vec<Partial> =
        found.into_iter().flat_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
    let mut scratch = Scratch::take_sized(k, gathered, 1, 1)?;
    for row in 0..rows {
        let of_row = &partials[row * chunks * reductions..(row + 1) * chunks * reductions];
        // SAFETY: the row's per-row registers are bound to scratch or to row `row` of outputs.
        unsafe { finish_row(k, outs, &mut scratch, row, of_row, reductions)? };
    }
    scratch.release();
    Ok((items, blocks))
}

/// True when an argument read through `mode` holds one value per row of `c` elements (it is
/// broadcast along every axis of the row).
fn row_uniform(mode: &super::ArgMode, c: usize) -> bool {
    let super::ArgMode::Strided(_, dims, st) = mode else { return false };
    let mut n = 1;
    for (d, s) in dims.iter().zip(st).rev() {
        if n >= c {
            break;
        }
        if *s != 0 {
            return false;
        }
        n *= d;
    }
    n == c
}

/// Where a chunk lies: `len` elements from element `start` of the iteration space, at
/// `offset` in its row; `uniform` marks the arguments holding one value per row.
struct Chunk<'a> {
    start: usize,
    len: usize,
    offset: i64,
    uniform: &'a [bool],
}

/// Bind every register for the chunk `at` (per-row registers to row `start / row_len`).
///
/// # Safety
/// The chunk must lie inside the iteration space, and the scratch hold a chunk per register.
unsafe fn bind(k: &TileKernel, modes: &[super::ArgMode], outs: &[SendPtr], sc: &mut Scratch, at: &Chunk<'_>) {
    let Chunk { start, len, uniform, .. } = *at;
    let base = sc.mem.as_mut_ptr() as *mut u8;
    let row = start / k.row_len.max(1);
    for (i, r) in k.regs.iter().enumerate() {
        let size = r.dtype.size();
        // SAFETY: offsets stay inside the scratch or the caller's buffers (caller's contract).
        sc.vals[i] = unsafe {
            match r.kind {
                RegKind::Tile => Val::Ptr(base.add(sc.offsets[i].expect("tiles have scratch"))),
                RegKind::Scalar(v) => Val::Scalar(v),
                RegKind::Out(o) if r.row => Val::Ptr(outs[o as usize].0.add(row * size)),
                RegKind::Out(o) => Val::Ptr(outs[o as usize].0.add(start * size)),
                RegKind::Arg(a) => match &modes[a as usize] {
                    super::ArgMode::Broadcast(v) => Val::Scalar(*v),
                    super::ArgMode::Contiguous(p) => Val::Ptr(p.0.add(start * size)),
                    super::ArgMode::Strided(p, dims, st) if uniform[a as usize] => {
                        // One value over the whole row: read it once.
                        let mut slot = [0u64; 1];
                        gather_elems(size, p.0, dims, st, start, slot.as_mut_ptr() as *mut u8, 1);
                        Val::Scalar(read_scalar(slot.as_ptr() as *const u8, r.dtype))
                    }
                    super::ArgMode::Strided(p, dims, st) => {
                        let dst = base.add(sc.offsets[i].expect("gathered args have scratch"));
                        gather_elems(size, p.0, dims, st, start, dst, len);
                        Val::Ptr(dst)
                    }
                },
            }
        };
    }
}

/// Run the element instructions of one chunk and push each reduction's partial result.
///
/// # Safety
/// As for [`bind`].
unsafe fn run_chunk(
    k: &TileKernel,
    modes: &[super::ArgMode],
    outs: &[SendPtr],
    sc: &mut Scratch,
    at: Chunk<'_>,
    partials: &mut Vec<Partial>,
) -> Result<()> {
    let (len, offset) = (at.len, at.offset);
    // SAFETY: per this function's contract.
    unsafe { bind(k, modes, outs, sc, &at) };
    for ins in &k.body {
        let d = ins.dst().0 as usize;
        if let Instr::Reduce { op, src, .. } = *ins {
            let s = src.0 as usize;
            // SAFETY: the source register holds the chunk's `len` elements.
            partials.push(unsafe { partial(op, k.regs[s].dtype, sc.vals[s], len, offset)? });
            continue;
        }
        if let Instr::ReduceMap { op, map, dst, a, b } = *ins {
            let mut slot = [0u64; 1];
            let one = Val::Ptr(slot.as_mut_ptr() as *mut u8);
            let dtype = k.regs[dst.0 as usize].dtype;
            let (va, vb) = (sc.vals[a.0 as usize], sc.vals[b.0 as usize]);
            // SAFETY: the operands hold the chunk's `len` elements (or are scalars); the slot one
            // float64 (float32 chunks keep float64 partials, as plain sums do).
            unsafe {
                if dtype == DType::F32 {
                    let s = pyasc_kernels::reduce_map::sum_map_f32(
                        map,
                        crate::instr::src(va, len),
                        crate::instr::src(vb, len),
                        len,
                    );
                    partials.push((Scalar::Float(s), 0));
                } else {
                    exec_reduce_map(op, map, dtype, va, vb, one, 1, len)?;
                    partials.push((read_scalar(slot.as_ptr() as *const u8, dtype), 0));
                }
            }
            continue;
        }
        if k.regs[d].row {
            continue; // per-row instructions run once the row is folded
        }
        let uniform = ins.srcs().iter().all(|r| matches!(sc.vals[r.0 as usize], Val::Scalar(_)));
        if uniform && k.regs[d].kind == RegKind::Tile {
            // Broadcast operands only: one element, kept as a scalar register.
            let mut slot = [0u64; 1];
            sc.vals[d] = Val::Ptr(slot.as_mut_ptr() as *mut u8);
            // SAFETY: scalar operands need no memory; the slot holds one element of any dtype.
            unsafe {
                exec(ins, &k.regs, &sc.vals, 1)?;
                sc.vals[d] = Val::Scalar(read_scalar(slot.as_ptr() as *const u8, k.regs[d].dtype));
            }
            continue;
        }
        if k.regs[d].kind == RegKind::Tile {
            // SAFETY: the offset lies inside the scratch allocation.
            sc.vals[d] = Val::Ptr(unsafe { (sc.mem.as_mut_ptr() as *mut u8).add(sc.offsets[d].expect("scratch")) });
        }
        // SAFETY: every register addresses the chunk.
        unsafe { exec(ins, &k.regs, &sc.vals, len)? };
    }
    Ok(())
}

/// The reduction `op` of `len` elements of `dtype` in `src`, the chunk at `offset` in its row.
///
/// # Safety
/// `src` must address `len` elements of `dtype` (or be a scalar).
unsafe fn partial(op: ReduceOp, dtype: DType, src: Val, len: usize, offset: i64) -> Result<Partial> {
    use pyasc_kernels::reduce as r;
    let n = len as f64;
    match (op, dtype, src) {
        // Float sums and products keep float64 partials: one rounding, at the end.
        (ReduceOp::Sum | ReduceOp::Prod, DType::F32 | DType::F64, Val::Scalar(v)) => {
            let v = v.as_f64();
            Ok((Scalar::Float(if op == ReduceOp::Sum { v * n } else { v.powf(n) }), 0))
        }
        (ReduceOp::Sum, DType::F32, Val::Ptr(p)) => {
            // SAFETY: per this function's contract.
            Ok((Scalar::Float(r::sum_f32(unsafe { std::slice::from_raw_parts(p as *const f32, len) })), 0))
        }
        (ReduceOp::Prod, DType::F32, Val::Ptr(p)) => {
            // SAFETY: per this function's contract.
            Ok((Scalar::Float(r::prod_f64(unsafe { std::slice::from_raw_parts(p as *const f32, len) })), 0))
        }
        _ => {
            let mut slot = [0u64; 1];
            // SAFETY: the source holds one row of `len` elements; the slot one result.
            unsafe { exec_reduce(op, dtype, src, Val::Ptr(slot.as_mut_ptr() as *mut u8), 1, len)? };
            // SAFETY: the slot holds one element of the result dtype.
            let v = unsafe { read_scalar(slot.as_ptr() as *const u8, op.result_dtype(dtype)) };
            if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
                let idx = v.as_i64();
                let value = match src {
                    // SAFETY: `idx` is an index into the chunk.
                    Val::Ptr(p) => unsafe { read_scalar(p.add(idx as usize * dtype.size()), dtype) },
                    Val::Scalar(s) => s,
                };
                Ok((value, idx + offset))
            } else {
                Ok((v, 0))
            }
        }
    }
}

/// Fold `b` (a later chunk) into `a`.
fn fold(op: ReduceOp, float: bool, a: Partial, b: Partial) -> Partial {
    let (x, y) = (a.0.as_f64(), b.0.as_f64());
    let later_wins = match op {
        ReduceOp::Sum if float => return (Scalar::Float(x + y), 0),
        ReduceOp::Sum => return (Scalar::Int(a.0.as_i64().wrapping_add(b.0.as_i64())), 0),
        ReduceOp::Prod if float => return (Scalar::Float(x * y), 0),
        ReduceOp::Prod => return (Scalar::Int(a.0.as_i64().wrapping_mul(b.0.as_i64())), 0),
        ReduceOp::Any => return (Scalar::Bool(a.0.as_bool() || b.0.as_bool()), 0),
        ReduceOp::All => return (Scalar::Bool(a.0.as_bool() && b.0.as_bool()), 0),
        // NaN propagates (the first NaN wins); otherwise the first extreme wins.
        ReduceOp::Max | ReduceOp::ArgMax if float => !x.is_nan() && (y.is_nan() || y > x),
        ReduceOp::Min | ReduceOp::ArgMin if float => !x.is_nan() && (y.is_nan() || y < x),
        ReduceOp::Max | ReduceOp::ArgMax => b.0.as_i64() > a.0.as_i64(),
        ReduceOp::Min | ReduceOp::ArgMin => b.0.as_i64() < a.0.as_i64(),
    };
    if later_wins {
        b
    } else {
        a
    }
}

/// Fold row `row`'s partials (chunk by chunk, each with one partial per reduction), write the
/// results and run the per-row instructions.
///
/// # Safety
/// Row `row` must exist in every per-row output.
unsafe fn finish_row(
    k: &TileKernel,
    outs: &[SendPtr],
    sc: &mut Scratch,
    row: usize,
    partials: &[Partial],
    reductions: usize,
) -> Result<()> {
    let base = sc.mem.as_mut_ptr() as *mut u8;
    for (i, r) in k.regs.iter().enumerate() {
        if !r.row {
            continue;
        }
        // SAFETY: offsets stay inside the scratch; row `row` exists in the outputs.
        sc.vals[i] = unsafe {
            match r.kind {
                RegKind::Tile => Val::Ptr(base.add(sc.offsets[i].expect("tiles have scratch"))),
                RegKind::Out(o) => Val::Ptr(outs[o as usize].0.add(row * r.dtype.size())),
                RegKind::Scalar(v) => Val::Scalar(v),
                RegKind::Arg(_) => return Err(IrError::internal("a per-row argument in a chunked row kernel")),
            }
        };
    }
    let mut q = 0;
    for ins in &k.body {
        let d = ins.dst().0 as usize;
        let reduced = match *ins {
            Instr::Reduce { op, src, dst } => Some((op, k.regs[src.0 as usize].dtype, dst)),
            Instr::ReduceMap { op, dst, .. } => Some((op, k.regs[dst.0 as usize].dtype, dst)),
            _ => None,
        };
        if let Some((op, dtype, dst)) = reduced {
            let mut acc = partials[q];
            for chunk in partials[q..].iter().step_by(reductions).skip(1) {
                acc = fold(op, dtype.is_float(), acc, *chunk);
            }
            q += 1;
            let value = if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) { Scalar::Int(acc.1) } else { acc.0 };
            let Val::Ptr(p) = sc.vals[dst.0 as usize] else {
                return Err(IrError::internal("a reduction into a scalar register"));
            };
            // SAFETY: the destination holds one element of the result dtype.
            unsafe { write_scalar(p, op.result_dtype(dtype), value)? };
        } else if k.regs[d].row {
            // SAFETY: per-row registers hold this row's one value.
            unsafe { exec(ins, &k.regs, &sc.vals, 1)? };
        }
    }
    Ok(())
}
