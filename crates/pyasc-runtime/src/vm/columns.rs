//! Sums and extremes over a leading axis (`x.sum(axis=0)`, `x.mean(axis=0)`, `x.max(axis=0)`
//! of a C-contiguous matrix).
//!
//! A row kernel iterates with the reduced axis last, so its rows are the columns of such an
//! argument: gathering a row walks memory with a stride of a whole matrix row, which wastes
//! most of every cache line and, at power-of-two widths, keeps only a few lines of a cache
//! set. This path walks the matrix in its own order instead: for a block of neighbouring
//! columns it adds one matrix row after another into float64 accumulators, each matrix row
//! a contiguous run, then runs the kernel's per-row instructions (a mean's division) on the
//! block's sums. A max or min keeps a running extreme per column the same way, with NaN
//! propagating as in NumPy.
//!
//! Accuracy matches the row path's pairwise float64 sums: rows are added in blocks of
//! [`ROWS_PER_PARTIAL`], and the block partials are combined pairwise, so the rounding error
//! grows with the logarithm of the column length.

use super::ArgMode;
use crate::instr::{exec, Val};
use crate::pool::num_threads;
use crate::view::SendPtr;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::ReduceOp;
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use pyasc_ir::DType;
use std::sync::Mutex;

/// Matrix rows added one after another into a partial before partials combine pairwise.
const ROWS_PER_PARTIAL: usize = 128;

/// Most columns in one block: float64 accumulators for them stay in the L1 cache.
const BLOCK_COLUMNS: usize = 1024;

/// Narrowest matrix this path takes: rows of fewer elements leave the row path's gathers
/// little to waste.
const MIN_BLOCK_COLUMNS: usize = 64;

/// Matrix rows in one task: long columns split into parts that run in parallel.
const ROWS_PER_PART: usize = 8192;

/// The shape of a column reduction this path runs.
struct Columns {
    /// Sum, max or min.
    op: ReduceOp,
    /// Register index of the summed argument and of the sums.
    src: usize,
    dst: usize,
    dtype: DType,
    base: SendPtr,
    /// Columns (kept positions), column length (reduced extent) and the stride between
    /// consecutive elements of a column, in elements.
    cols: usize,
    len: usize,
    stride: isize,
}

/// Match a row kernel whose body is a float sum, max or min of one argument that is strided along the
/// reduced axis and contiguous along the kept positions, followed only by per-row
/// instructions on per-row values and constants.
fn matching(k: &TileKernel, modes: &[ArgMode]) -> Option<Columns> {
    if k.row_len == 0 || k.library.is_some() || k.program.is_some() {
        return None;
    }
    let Some(Instr::Reduce { op, dst, src }) = k.body.first().copied() else { return None };
    if !matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min) {
        return None;
    }
    let (s, d) = (src.0 as usize, dst.0 as usize);
    let RegKind::Arg(a) = k.regs[s].kind else { return None };
    let dtype = k.regs[s].dtype;
    if !matches!(dtype, DType::F32 | DType::F64) || k.regs[s].row || !k.regs[d].row {
        return None;
    }
    let per_row = |r: usize| k.regs[r].row || matches!(k.regs[r].kind, RegKind::Scalar(_));
    let rest_ok = k.body[1..].iter().all(|ins| {
        !ins.per_row() && k.regs[ins.dst().0 as usize].row && ins.srcs().iter().all(|r| per_row(r.0 as usize))
    });
    // Every other register is computed per row (no argument read per row, which would need a gather).
    let others_ok = k
        .regs
        .iter()
        .enumerate()
        .all(|(i, r)| i == s || (per_row(i) && !matches!(r.kind, RegKind::Arg(_))) || r.kind == RegKind::Tile);
    if !rest_ok || !others_ok {
        return None;
    }
    let ArgMode::Strided(base, dims, st) = &modes[a as usize] else { return None };
    if dims.len() != 2 || st[0] != 1 || dims[1] != k.row_len || st[1].unsigned_abs() < MIN_BLOCK_COLUMNS {
        return None;
    }
    Some(Columns { op, src: s, dst: d, dtype, base: *base, cols: dims[0], len: dims[1], stride: st[1] })
}

/// Run `k` as a column reduction when it is one; `None` leaves it to the row path.
///
/// The work is cut by the shape alone (blocks of columns times parts of [`ROWS_PER_PART`]
/// rows), and each block's parts combine pairwise in order, so results do not depend on the
/// number of threads.
pub(super) fn run(k: &TileKernel, modes: &[ArgMode], outs: &[SendPtr]) -> Option<Result<(usize, usize)>> {
    let c = matching(k, modes)?;
    let threads = num_threads();
    let width = c.cols.min(BLOCK_COLUMNS);
    let blocks = c.cols.div_ceil(width);
    let parts = c.len.div_ceil(ROWS_PER_PART).max(1);
    let tasks = blocks * parts;
    let found: Vec<Mutex<Vec<f64>>> = (0..tasks).map(|_| Mutex::new(Vec::new())).collect();
    let token = crate::interrupt::current();
    let run_task = |t: usize| -> Result<()> {
        if let Some(t) = &token {
            t.check()?;
        }
        let (b, p) = (t / parts, t % parts);
        let c0 = b * width;
        let rows = p * ROWS_PER_PART..((p + 1) * ROWS_PER_PART).min(c.len);
        // SAFETY: the block's columns lie inside the argument over all its rows (its mode
        // comes from the caller's layout analysis).
        let sums = unsafe {
            match c.op {
                ReduceOp::Sum => column_sums(&c, c0, width.min(c.cols - c0), rows),
                _ => column_extremes(&c, c0, width.min(c.cols - c0), rows),
            }
        };
        *found[t].lock().unwrap_or_else(|e| e.into_inner()) = sums;
        Ok(())
    };
    let result = if tasks == 1 || threads == 1 || c.cols * c.len < super::PARALLEL_THRESHOLD {
        (0..tasks).try_for_each(run_task)
    } else {
        crate::pool::for_blocks(tasks, threads - 1, run_task)
    };
    if let Err(e) = result {
        return Some(Err(e));
    }
    let mut found: Vec<Vec<f64>> =
        found.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
    for b in 0..blocks {
        let parts = found.drain(..parts).collect();
        let sums = if c.op == ReduceOp::Sum { pairwise(parts) } else { extremes(parts, c.op == ReduceOp::Max) };
        // SAFETY: outputs hold one value per column.
        if let Err(e) = unsafe { finish(k, &c, outs, b * width, sums) } {
            return Some(Err(e));
        }
    }
    Some(Ok((tasks, tasks.min(threads))))
}

/// Combine partial sums pairwise, in order.
fn pairwise(mut parts: Vec<Vec<f64>>) -> Vec<f64> {
    while parts.len() > 1 {
        let mut next = Vec::with_capacity(parts.len().div_ceil(2));
        let mut it = parts.into_iter();
        while let Some(mut left) = it.next() {
            if let Some(right) = it.next() {
                left.iter_mut().zip(&right).for_each(|(l, r)| *l += r);
            }
            next.push(left);
        }
        parts = next;
    }
    parts.pop().unwrap_or_default()
}

/// The extreme of each column over parts, NaN where any part's is NaN.
fn extremes(parts: Vec<Vec<f64>>, max: bool) -> Vec<f64> {
    let mut it = parts.into_iter();
    let mut out = it.next().unwrap_or_default();
    for part in it {
        for (o, p) in out.iter_mut().zip(&part) {
            *o = if o.is_nan() || p.is_nan() {
                f64::NAN
            } else if max {
                o.max(*p)
            } else {
                o.min(*p)
            };
        }
    }
    out
}

/// Write a block's sums (columns from `c0`) and run the per-row instructions on them.
///
/// # Safety
/// Every output holds `c.cols` values.
unsafe fn finish(k: &TileKernel, c: &Columns, outs: &[SendPtr], c0: usize, sums: Vec<f64>) -> Result<()> {
    let w = sums.len();
    // Per-row registers: outputs in place, the others in scratch of `w` values.
    let mut scratch: Vec<Vec<u64>> = Vec::new();
    let mut vals: Vec<Val> = Vec::with_capacity(k.regs.len());
    for (i, r) in k.regs.iter().enumerate() {
        vals.push(match r.kind {
            RegKind::Scalar(v) => Val::Scalar(v),
            // SAFETY: the output holds one value per column.
            RegKind::Out(o) if r.row => Val::Ptr(unsafe { outs[o as usize].0.add(c0 * r.dtype.size()) }),
            _ if r.row => {
                scratch.push(vec![0u64; w * r.dtype.size() / 8 + 1]);
                Val::Ptr(scratch.last_mut().expect("just pushed").as_mut_ptr() as *mut u8)
            }
            _ if i == c.src => Val::Scalar(pyasc_ir::Scalar::Float(0.0)),
            _ => return Err(IrError::internal("a column sum reads no element register but its argument")),
        });
    }
    let Val::Ptr(dp) = vals[c.dst] else { return Err(IrError::internal("column sums into a scalar")) };
    for (j, s) in sums.iter().enumerate() {
        // SAFETY: the destination holds `w` values of the argument's dtype.
        unsafe {
            match c.dtype {
                DType::F32 => *(dp as *mut f32).add(j) = *s as f32,
                _ => *(dp as *mut f64).add(j) = *s,
            }
        }
    }
    for ins in &k.body[1..] {
        // SAFETY: every per-row register holds `w` values, the others are scalars.
        unsafe { exec(ins, &k.regs, &vals, w)? };
    }
    Ok(())
}

/// Call `f` with each of `rows` of columns `c0..c0 + w` in order, as a slice of `T`, with the
/// run [`AHEAD`] rows further on prefetched.
///
/// # Safety
/// The argument covers `rows` of columns `c0..c0 + w`; `T` is its element type.
unsafe fn walk_rows<T>(c: &Columns, c0: usize, w: usize, rows: std::ops::Range<usize>, mut f: impl FnMut(&[T])) {
    let size = c.dtype.size() as isize;
    for i in rows.clone() {
        if i + AHEAD < rows.end {
            prefetch(
                c.base.0.wrapping_offset(((i + AHEAD) as isize * c.stride + c0 as isize) * size),
                w * size as usize,
            );
        }
        // SAFETY: row `i` of the block's columns lies inside the argument.
        f(unsafe {
            std::slice::from_raw_parts(c.base.0.offset((i as isize * c.stride + c0 as isize) * size) as *const T, w)
        });
    }
}

/// Float64 sums over `rows` of columns `c0..c0 + w`.
///
/// # Safety
/// The argument covers `rows` of columns `c0..c0 + w`.
unsafe fn column_sums(c: &Columns, c0: usize, w: usize, rows: std::ops::Range<usize>) -> Vec<f64> {
    let mut sums = Pairwise::new(w);
    // SAFETY: per this function's contract; the element type follows the dtype.
    unsafe {
        match c.dtype {
            DType::F32 => walk_rows(c, c0, w, rows, |row: &[f32]| {
                add_row(&mut sums.part, row);
                sums.end_row();
            }),
            _ => walk_rows(c, c0, w, rows, |row: &[f64]| {
                add_row(&mut sums.part, row);
                sums.end_row();
            }),
        }
    }
    sums.total()
}

/// The max (or min) of each of columns `c0..c0 + w` over `rows`, as float64 (exact for
/// float32 values); NaN where a column holds one.
///
/// # Safety
/// The argument covers `rows` of columns `c0..c0 + w`.
unsafe fn column_extremes(c: &Columns, c0: usize, w: usize, rows: std::ops::Range<usize>) -> Vec<f64> {
    match c.dtype {
        // SAFETY: per this function's contract.
        DType::F32 => unsafe { extremes_of::<f32>(c, c0, w, rows, f32::INFINITY) },
        // SAFETY: as above.
        _ => unsafe { extremes_of::<f64>(c, c0, w, rows, f64::INFINITY) },
    }
}

/// [`column_extremes`] with running extremes in the argument's own type `T`.
///
/// # Safety
/// As for [`column_extremes`]; `T` is the argument's element type.
unsafe fn extremes_of<T>(c: &Columns, c0: usize, w: usize, rows: std::ops::Range<usize>, inf: T) -> Vec<f64>
where
    T: Copy + PartialOrd + Into<f64> + std::ops::Neg<Output = T>,
{
    let max = c.op == ReduceOp::Max;
    let mut acc = vec![if max { -inf } else { inf }; w];
    let mut nan = vec![false; w];
    // SAFETY: per this function's contract.
    unsafe { walk_rows(c, c0, w, rows, |row: &[T]| extreme_row(&mut acc, &mut nan, row, max)) };
    acc.iter().zip(&nan).map(|(a, n)| if *n { f64::NAN } else { (*a).into() }).collect()
}

/// Float64 sums of `w` columns, added row by row into a partial and combined pairwise.
pub(super) struct Pairwise {
    stack: Vec<(u32, Vec<f64>)>,
    /// The partial the current rows add into.
    pub(super) part: Vec<f64>,
    rows: usize,
}

impl Pairwise {
    pub(super) fn new(w: usize) -> Pairwise {
        Pairwise { stack: Vec::new(), part: vec![0.0; w], rows: 0 }
    }

    /// Close a row: every [`ROWS_PER_PARTIAL`] rows the partial joins the pairwise stack.
    pub(super) fn end_row(&mut self) {
        self.rows += 1;
        if self.rows == ROWS_PER_PARTIAL {
            self.push();
        }
    }

    fn push(&mut self) {
        let w = self.part.len();
        let mut part = std::mem::replace(&mut self.part, vec![0.0; w]);
        let mut level = 0u32;
        while self.stack.last().is_some_and(|(l, _)| *l == level) {
            let (_, left) = self.stack.pop().expect("checked");
            part.iter_mut().zip(&left).for_each(|(p, l)| *p += l);
            level += 1;
        }
        self.stack.push((level, part));
        self.rows = 0;
    }

    pub(super) fn total(mut self) -> Vec<f64> {
        if self.rows > 0 || self.stack.is_empty() {
            self.push();
        }
        let mut total = self.stack.pop().map(|(_, v)| v).expect("one partial at least");
        while let Some((_, left)) = self.stack.pop() {
            total.iter_mut().zip(&left).for_each(|(t, l)| *t += l);
        }
        total
    }
}

/// Matrix rows ahead of the one being added whose runs are prefetched: each run is its own
/// stretch of memory (often a page of its own), which the hardware prefetchers do not enter
/// until it is read.
pub(super) const AHEAD: usize = 4;

/// Ask for the `bytes` at `p` to be brought into the cache (a hint: it never faults).
pub(super) fn prefetch(p: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..bytes).step_by(64) {
        // SAFETY: a prefetch is a hint and never faults, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.wrapping_add(off) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// `acc[j] += row[j]` in float64, with the widest vectors the active ISA allows
/// (`PYASC_ISA` lowers it, as for the kernels).
pub(super) fn add_row<T: Copy + Into<f64>>(acc: &mut [f64], row: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use pyasc_kernels::isa::{active, Isa};
        match active() {
            // SAFETY: the active ISA is one this CPU supports.
            Isa::Avx512 => return unsafe { add_row_avx512(acc, row) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { add_row_avx2(acc, row) },
            _ => {}
        }
    }
    add_row_plain(acc, row)
}

/// `acc[j] = max(acc[j], row[j])` (or min), noting in `nan[j]` a NaN, with the widest
/// vectors the active ISA allows.
fn extreme_row<T: Copy + PartialOrd>(acc: &mut [T], nan: &mut [bool], row: &[T], max: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use pyasc_kernels::isa::{active, Isa};
        match active() {
            // SAFETY: the active ISA is one this CPU supports.
            Isa::Avx512 => return unsafe { extreme_row_avx512(acc, nan, row, max) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { extreme_row_avx2(acc, nan, row, max) },
            _ => {}
        }
    }
    extreme_row_plain(acc, nan, row, max)
}

#[inline(always)]
#[allow(clippy::eq_op)] // `x != x` is the NaN test of any float type, and it vectorises
fn extreme_row_plain<T: Copy + PartialOrd>(acc: &mut [T], nan: &mut [bool], row: &[T], max: bool) {
    // One loop per direction, each a compare and select the compiler vectorises.
    if max {
        for ((a, n), x) in acc.iter_mut().zip(nan.iter_mut()).zip(row) {
            let x = *x;
            *n |= x != x;
            *a = if x > *a { x } else { *a };
        }
    } else {
        for ((a, n), x) in acc.iter_mut().zip(nan.iter_mut()).zip(row) {
            let x = *x;
            *n |= x != x;
            *a = if x < *a { x } else { *a };
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
unsafe fn extreme_row_avx512<T: Copy + PartialOrd>(acc: &mut [T], nan: &mut [bool], row: &[T], max: bool) {
    extreme_row_plain(acc, nan, row, max)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn extreme_row_avx2<T: Copy + PartialOrd>(acc: &mut [T], nan: &mut [bool], row: &[T], max: bool) {
    extreme_row_plain(acc, nan, row, max)
}

#[inline(always)]
fn add_row_plain<T: Copy + Into<f64>>(acc: &mut [f64], row: &[T]) {
    for (a, x) in acc.iter_mut().zip(row) {
        *a += (*x).into();
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
unsafe fn add_row_avx512<T: Copy + Into<f64>>(acc: &mut [f64], row: &[T]) {
    add_row_plain(acc, row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_row_avx2<T: Copy + Into<f64>>(acc: &mut [f64], row: &[T]) {
    add_row_plain(acc, row)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column reduction `op` over `data`, a C-contiguous matrix of `rows` x `cols`.
    fn matrix(op: ReduceOp, data: &[f32], rows: usize, cols: usize) -> Columns {
        Columns {
            op,
            src: 0,
            dst: 1,
            dtype: DType::F32,
            base: SendPtr(data.as_ptr() as *mut u8),
            cols,
            len: rows,
            stride: cols as isize,
        }
    }

    fn sums(data: &[f32], rows: usize, cols: usize, c0: usize, w: usize) -> Vec<f64> {
        let c = matrix(ReduceOp::Sum, data, rows, cols);
        // SAFETY: `data` holds `rows` rows of `cols` columns.
        unsafe { column_sums(&c, c0, w, 0..rows) }
    }

    #[test]
    fn column_sums_match_float64_sums_in_any_block() {
        for (rows, cols) in [(1usize, 64usize), (127, 70), (128, 64), (129, 100), (1000, 65), (5000, 128)] {
            let data: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.37).collect();
            for (c0, w) in [(0, cols), (1, cols - 1), (cols / 2, cols - cols / 2)] {
                let got = sums(&data, rows, cols, c0, w);
                for (j, g) in got.iter().enumerate() {
                    let want: f64 = (0..rows).map(|i| data[i * cols + c0 + j] as f64).sum();
                    assert!((g - want).abs() <= 1e-9 * want.abs().max(1.0), "{rows}x{cols} col {}: {g} {want}", c0 + j);
                }
            }
        }
    }

    #[test]
    fn column_extremes_match_and_propagate_nan() {
        let (rows, cols) = (300usize, 70usize);
        let mut data: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 % 1013) as f32 - 500.0) * 0.37).collect();
        data[5 * cols + 3] = f32::NAN;
        data[(rows - 1) * cols + 9] = f32::NAN;
        data[17 * cols + 11] = f32::INFINITY;
        data[40 * cols + 12] = f32::NEG_INFINITY;
        for op in [ReduceOp::Max, ReduceOp::Min] {
            let c = matrix(op, &data, rows, cols);
            // Two parts of the rows combined as the parallel path does.
            // SAFETY: `data` holds `rows` rows of `cols` columns.
            let parts =
                unsafe { vec![column_extremes(&c, 2, cols - 2, 0..123), column_extremes(&c, 2, cols - 2, 123..rows)] };
            let got = extremes(parts, op == ReduceOp::Max);
            for (j, g) in got.iter().enumerate() {
                let col = (0..rows).map(|i| data[i * cols + 2 + j] as f64);
                if 2 + j == 3 || 2 + j == 9 {
                    assert!(g.is_nan(), "{op:?} col {}", 2 + j);
                    continue;
                }
                let want = if op == ReduceOp::Max {
                    col.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    col.fold(f64::INFINITY, f64::min)
                };
                assert_eq!(*g, want, "{op:?} col {}", 2 + j);
            }
        }
    }

    #[test]
    fn long_columns_keep_pairwise_accuracy() {
        // 2^20 copies of one value in a column: a plain float64 running sum drifts by about
        // 1e-11 relative; pairwise partials stay within a few units of 1e-16.
        let rows = 1 << 20;
        let data: Vec<f32> = vec![0.1; rows];
        let got = sums(&data, rows, 1, 0, 1);
        let want = 0.1f32 as f64 * rows as f64;
        assert!(((got[0] - want) / want).abs() < 1e-14, "{} vs {want}", got[0]);
    }

    #[test]
    fn pairwise_sums_match_and_stay_accurate() {
        for rows in [0usize, 1, 127, 128, 129, 1000, 70_000] {
            let mut p = Pairwise::new(3);
            for i in 0..rows {
                p.part[0] += 0.1;
                p.part[1] += i as f64;
                p.part[2] -= 1.0;
                p.end_row();
            }
            let t = p.total();
            let n = rows as f64;
            assert!((t[0] - 0.1 * n).abs() <= 1e-13 * n.max(1.0), "{rows}: {}", t[0]);
            assert_eq!(t[1], n * (n - 1.0) / 2.0);
            assert_eq!(t[2], -n);
        }
    }
}
