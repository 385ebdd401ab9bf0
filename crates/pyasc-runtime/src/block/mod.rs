//! The VM for block programs ([`pyasc_ir::block`]): the kernel language's kernels, run once
//! per block index with the blocks dealt out to the worker threads.
//!
//! A launch first walks every block without touching memory, evaluating each copy's offsets
//! and each instruction's count with the launch's values and checking them against the
//! global buffers and the registers' capacities; only then do the blocks run, so a bad access
//! is an error naming the user's line before anything is written. Runs of consecutive
//! blocks are dealt out to the worker threads, a few per thread; each thread keeps one Unified
//! Buffer (`ub_bytes`, 64-byte aligned, zeroed where registers reach before its first run of
//! each launch) from launch to launch. Vector
//! instructions run on the tile VM's SIMD kernels ([`exec`], [`exec_reduce`]); an instruction
//! whose destination overlaps an operand reads a copy of that operand. Copies out of the
//! Unified Buffer into a large global buffer use streaming stores, as the tile VM writes its
//! large outputs; each worker fences them before its blocks count as done. Runs of
//! statements over one element range or one set of rows run as segments of a
//! [`BlockPlan`] ([`crate::block_plan`], executed strip by strip in `block_strip.rs`); a
//! [`PreparedBlock`] keeps a program verified and planned for all its launches.

pub mod block_launch;
pub mod block_plan;

use crate::instr::{exec, exec_binary_rows, exec_reduce, Val};
use crate::memory::{store_fence, stream_copy, STREAM_MIN_BYTES};
use crate::pool::num_threads;
use pyasc_ir::block::{BStmt, BlockProgram, ExprId};
use pyasc_ir::block_expr::ExprValues;
use pyasc_ir::error::{ErrorKind, IrError, Result, SourceLoc};
use pyasc_ir::op::BinaryOp;
use pyasc_ir::tile::{Instr, Reg, RegDecl, RegKind};
use pyasc_ir::{DType, Scalar};

pub use crate::block_plan::{BlockPlan, Segment, Step, Width};

#[path = "block_strip.rs"]
mod strip;

/// Bytes a `DataCopy` moves must be a multiple of this (Ascend's 32-byte transfer unit).
pub const COPY_ALIGN: usize = 32;

/// Bytes of rows an in-place row operation copies to scratch at a time.
const STRIP_ROWS_BYTES: usize = 16 << 10;

/// Runs of consecutive blocks per worker thread a launch is dealt out in.
const RUNS_PER_THREAD: usize = 4;

/// One global buffer of a launch: its base address and length in elements.
#[derive(Copy, Clone, Debug)]
pub struct GlobalBuf {
    /// First element.
    pub ptr: *mut u8,
    /// Elements.
    pub len: usize,
}

#[repr(C, align(64))]
#[derive(Copy, Clone)]
struct Line([u8; 64]);

fn lines(bytes: usize) -> Vec<Line> {
    vec![Line([0; 64]); bytes.div_ceil(64).max(1)]
}

std::thread_local! {
    /// This thread's last Unified Buffer, with the launch that last used it.
    static KEPT_UB: std::cell::Cell<(Vec<Line>, u64)> = const { std::cell::Cell::new((Vec::new(), 0)) };
}

/// Numbers launches, so a thread zeroes its kept Unified Buffer once per launch.
static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A Unified Buffer of `bytes` for launch `launch`, its first `used` bytes zero when this
/// thread first runs blocks of the launch (later runs of the same launch find what the
/// earlier ones left, as blocks run one after another in one buffer): this thread's kept one
/// when it is large enough (a fresh allocation of this size costs page faults on every
/// launch), else a new, zeroed one.
fn take_ub(bytes: usize, used: usize, launch: u64) -> Vec<Line> {
    let (mut ub, last) = KEPT_UB.with(|k| k.take());
    let n = bytes.div_ceil(64).max(1);
    if ub.len() < n {
        return lines(bytes);
    }
    if last != launch {
        ub[..used.div_ceil(64).min(n)].fill(Line([0; 64]));
    }
    ub
}

/// Keep `ub` for this thread's next run of blocks.
fn keep_ub(ub: Vec<Line>, launch: u64) {
    KEPT_UB.with(|k| k.set((ub, launch)));
}

/// One worker's state while it runs blocks.
struct Exec<'a> {
    p: &'a BlockProgram,
    globals: &'a [GlobalBuf],
    args: &'a [i64],
    /// Expression values: those of no loop at the block's start, the others per iteration.
    ex: ExprValues,
    top: &'a [ExprId],
    by_var: &'a [Vec<ExprId>],
    /// Register values, then one scratch slot per operand for overlapping operands.
    vals: Vec<Val>,
    /// The program's registers and the scratch slots' declarations.
    decls: Vec<RegDecl>,
    tmp: [Vec<Line>; 3],
    /// Check only: evaluate and check every access without touching memory.
    dry: bool,
    /// Some copy out used streaming stores (fenced before the worker returns).
    streamed: bool,
    /// Run the plan's segments strip by strip.
    fuse: bool,
    /// Bytes of register regions per strip.
    strip_bytes: usize,
    /// The lists a segment's run fills, kept for the next segment.
    layout: Option<Box<strip::Layout>>,
}

fn fail(kind: ErrorKind, site: &Option<SourceLoc>, m: String) -> IrError {
    IrError::new(kind, m).at(site.as_ref())
}

impl Exec<'_> {
    fn eval(&self, e: &ExprId, _site: &Option<SourceLoc>) -> Result<i64> {
        Ok(self.ex.vals[*e as usize])
    }

    /// Evaluate the expressions `ids` (after the block or a loop variable changed).
    fn update(&mut self, ids: &[ExprId]) -> Result<()> {
        let (nodes, args) = (&self.p.exprs.nodes, self.args);
        self.ex.update(nodes, ids, args).map_err(|m| {
            IrError::new(ErrorKind::InvalidArgument, format!("{m} in an offset or count of block {}", self.ex.block))
        })
    }

    /// `n` elements of register `r` fit its capacity (`n >= 0`).
    fn fits(&self, r: Reg, n: i64, site: &Option<SourceLoc>) -> Result<usize> {
        let cap = self.p.cap[r.0 as usize];
        if matches!(self.p.regs[r.0 as usize].kind, RegKind::Tile) && (n < 0 || n as u64 > cap as u64) {
            return Err(fail(
                ErrorKind::InvalidArgument,
                site,
                format!("{n} elements of a local tensor of {cap} (block {})", self.ex.block),
            ));
        }
        Ok(n.max(0) as usize)
    }

    fn ptr(&self, r: Reg) -> *mut u8 {
        match self.vals[r.0 as usize] {
            Val::Ptr(p) => p,
            Val::Scalar(_) => std::ptr::null_mut(),
        }
    }

    fn copy(&mut self, s: &BStmt) -> Result<()> {
        let BStmt::Copy { to_local, global, reg, start, lo, hi, count, pad, site } = s else { unreachable!() };
        let (start, lo, hi, n) =
            (self.eval(start, site)?, self.eval(lo, site)?, self.eval(hi, site)?, self.eval(count, site)?);
        let g = self.globals[*global as usize];
        let size = self.p.dtype(*reg).size();
        let n = self.fits(*reg, n, site)?;
        if !(0 <= lo && lo <= start && start.saturating_add(n as i64) <= hi && hi as u64 <= g.len as u64) {
            return Err(fail(
                ErrorKind::InvalidArgument,
                site,
                format!(
                    "data_copy of elements {start}..{} of a global view {lo}..{hi} of {} elements: out of bounds \
                     (block {})",
                    start.saturating_add(n as i64),
                    g.len,
                    self.ex.block
                ),
            ));
        }
        if !pad && !(n * size).is_multiple_of(COPY_ALIGN) {
            return Err(fail(
                ErrorKind::Alignment,
                site,
                format!(
                    "data_copy of {n} elements ({} bytes) is not a multiple of {COPY_ALIGN} bytes (ERROR 100001); \
                     use data_copy_pad for a tail",
                    n * size
                ),
            ));
        }
        if !self.dry {
            // SAFETY: the global range start..start + n lies in the buffer (checked above) and
            // the register holds at least n elements inside the Unified Buffer (verified).
            unsafe {
                self.transfer(*to_local, g.len * size, g.ptr.add(start as usize * size), self.ptr(*reg), n * size)
            };
        }
        Ok(())
    }

    /// Move `bytes` between global memory at `gp` (in a buffer of `global_bytes`) and the
    /// Unified Buffer at `lp`.
    ///
    /// # Safety
    /// Both ranges hold `bytes` bytes; the Unified Buffer is this worker's own allocation, so
    /// the two never overlap.
    unsafe fn transfer(&mut self, to_local: bool, global_bytes: usize, gp: *mut u8, lp: *mut u8, bytes: usize) {
        // SAFETY: per the contract above.
        unsafe {
            if to_local {
                std::ptr::copy_nonoverlapping(gp, lp, bytes);
            } else if global_bytes >= STREAM_MIN_BYTES {
                stream_copy(gp, lp, bytes);
                self.streamed = true;
            } else {
                std::ptr::copy_nonoverlapping(lp, gp, bytes);
            }
        }
    }

    /// Run one vector instruction over `n` elements.
    fn op(&mut self, ins: &Instr, n: usize) -> Result<()> {
        let p = self.p;
        let dst = ins.dst();
        let d0 = self.ptr(dst) as usize;
        let d1 = d0 + n * self.decls[dst.0 as usize].dtype.size();
        let mut run = *ins;
        for (slot, &r) in ins.srcs().iter().enumerate() {
            let Val::Ptr(sp) = self.vals[r.0 as usize] else { continue };
            let bytes = n * self.decls[r.0 as usize].dtype.size();
            let (s0, s1) = (sp as usize, sp as usize + bytes);
            if s0 < d1 && d0 < s1 && bytes > 0 && run.srcs().contains(&r) {
                // The destination overlaps this operand: read a copy, as a scratch register.
                let tp = self.scratch(slot, sp, bytes);
                let t = p.regs.len() + slot;
                self.decls[t] = self.decls[r.0 as usize];
                self.vals[t] = Val::Ptr(tp);
                run = replace_src(run, r, Reg(t as u16));
            }
        }
        // SAFETY: every tile register holds at least `n` elements (checked by the caller).
        unsafe { exec(&run, &self.decls, &self.vals, n) }
    }

    fn run(&mut self, stmts: &[BStmt], steps: &[Step]) -> Result<()> {
        for step in steps {
            match step {
                Step::One(i) => self.stmt(&stmts[*i])?,
                Step::Loop(i, plan) => {
                    let BStmt::Loop { var, start, end, step, body } = &stmts[*i] else {
                        return Err(IrError::internal("a loop step of a statement that is not a loop"));
                    };
                    let (a, b) = (self.eval(start, &None)?, self.eval(end, &None)?);
                    let mut v = a;
                    let by_var = self.by_var;
                    while v < b {
                        self.ex.vars[*var as usize] = v;
                        self.update(&by_var[*var as usize])?;
                        self.run(body, plan)?;
                        v = v.saturating_add(*step);
                    }
                }
                Step::Strip(seg) if self.dry || !self.fuse => {
                    for s in &stmts[seg.first..seg.first + seg.len] {
                        self.stmt(s)?;
                    }
                }
                Step::Strip(seg) => self.strip(seg, &stmts[seg.first..seg.first + seg.len])?,
            }
        }
        Ok(())
    }

    /// Run one statement that is not a loop over all its elements or rows.
    fn stmt(&mut self, s: &BStmt) -> Result<()> {
        match s {
            BStmt::Copy { .. } => self.copy(s)?,
            BStmt::Op { ins, len, site } => {
                let n = self.eval(len, site)?;
                let mut m = self.fits(ins.dst(), n, site)?;
                for &r in ins.srcs().iter() {
                    m = self.fits(r, n, site)?;
                }
                if !self.dry && m > 0 {
                    self.op(ins, m).map_err(|e| e.at(site.as_ref()))?;
                }
            }
            BStmt::Reduce { op, dst, src, rows, cols, site } => {
                let (r, c) = (self.eval(rows, site)?, self.eval(cols, site)?);
                self.fits(*dst, r, site)?;
                let rc = r.checked_mul(c.max(0)).unwrap_or(i64::MAX);
                self.fits(*src, rc, site)?;
                if c <= 0 {
                    return Err(fail(ErrorKind::InvalidArgument, site, format!("a reduction over rows of {c}")));
                }
                if !self.dry && r > 0 {
                    let (sv, dv) = (self.vals[src.0 as usize], self.vals[dst.0 as usize]);
                    let dtype = self.p.dtype(*src);
                    // SAFETY: the source holds r rows of c elements, the destination r values.
                    unsafe { exec_reduce(*op, dtype, sv, dv, r as usize, c as usize) }
                        .map_err(|e| e.at(site.as_ref()))?;
                }
            }
            BStmt::Broadcast { dst, src, rows, cols, site } => {
                let (r, c) = (self.eval(rows, site)?, self.eval(cols, site)?);
                let rc = r.max(0).checked_mul(c.max(0)).unwrap_or(i64::MAX);
                let (r, c) = (self.fits(*src, r, site)?, c.max(0) as usize);
                self.fits(*dst, rc, site)?;
                if !self.dry {
                    self.broadcast(*dst, *src, r, c);
                }
            }
            BStmt::RowOp { op, dst, a, b, rows, cols, site } => {
                let (r, c) = (self.eval(rows, site)?, self.eval(cols, site)?);
                let rc = r.max(0).checked_mul(c.max(0)).unwrap_or(i64::MAX);
                let r = self.fits(*b, r, site)?;
                self.fits(*dst, rc, site)?;
                self.fits(*a, rc, site)?;
                if !self.dry {
                    self.row_op(*op, [*dst, *a, *b], r, c.max(0) as usize).map_err(|e| e.at(site.as_ref()))?;
                }
            }
            BStmt::Loop { .. } => return Err(IrError::internal("a loop run as one statement")),
        }
        Ok(())
    }

    /// `dst[r, :] = op(a[r, :], b[r])`: one instruction per row with `b[r]` as a scalar,
    /// through spare registers (an overlap of `dst` and `a` reads a copy, as in [`Exec::op`]).
    fn row_op(&mut self, op: BinaryOp, [dst, a, b]: [Reg; 3], rows: usize, cols: usize) -> Result<()> {
        let p = self.p;
        let dtype = p.dtype(a);
        let size = dtype.size();
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let (dp, ap, bp) = (self.ptr(dst), self.ptr(a), self.ptr(b));
        if matches!(dtype, DType::F32 | DType::F64) && self.rows_at_once(op, dtype, [dp, ap, bp], rows, cols)? {
            return Ok(());
        }
        let base = p.regs.len() + 3;
        for (i, r) in [dst, a, b].into_iter().enumerate() {
            self.decls[base + i] = p.regs[r.0 as usize];
        }
        let ins = Instr::Binary { op, dst: Reg(base as u16), a: Reg(base as u16 + 1), b: Reg(base as u16 + 2) };
        for r in 0..rows {
            // SAFETY: `b` holds `rows` values and `dst`, `a` hold `rows * cols` (checked).
            let v = unsafe {
                match dtype {
                    DType::F64 => (bp as *const f64).add(r).read_unaligned(),
                    _ => f64::from((bp as *const f32).add(r).read_unaligned()),
                }
            };
            // SAFETY: as above.
            unsafe {
                self.vals[base] = Val::Ptr(dp.add(r * cols * size));
                self.vals[base + 1] = Val::Ptr(ap.add(r * cols * size));
            }
            self.vals[base + 2] = Val::Scalar(Scalar::Float(v));
            self.op(&ins, cols)?;
        }
        Ok(())
    }

    /// `dst[r, :] = op(a[r, :], b[r])` for float `dtype` with one kernel dispatch per run of
    /// rows (the row by row path pays one per row); false when `op` has no row kernel. The
    /// per-row values are read from scratch when the destination overlaps them. A source that
    /// is the destination itself runs through a scratch copy of a few rows at a time (still in
    /// the L1 cache when the kernel reads it); one that overlaps it otherwise is copied whole.
    fn rows_at_once(
        &mut self,
        op: BinaryOp,
        dtype: DType,
        [dp, ap, bp]: [*mut u8; 3],
        rows: usize,
        cols: usize,
    ) -> Result<bool> {
        let size = dtype.size();
        let (row_bytes, all) = (cols * size, rows * cols * size);
        let overlaps = |x: *mut u8, n: usize| (x as usize) < dp as usize + all && (dp as usize) < x as usize + n;
        let mut bp = bp;
        if overlaps(bp, rows * size) {
            bp = self.scratch(2, bp, rows * size);
        }
        let in_place = ap == dp;
        let chunk = if in_place { (STRIP_ROWS_BYTES / row_bytes).clamp(1, rows) } else { rows };
        let mut ap = ap;
        if !in_place && overlaps(ap, all) {
            ap = self.scratch(1, ap, all);
        }
        let mut r0 = 0;
        while r0 < rows {
            let k = chunk.min(rows - r0);
            // SAFETY: rows r0..r0 + k of `a` and `dst` and values r0..r0 + k of `b` lie in their
            // registers (checked by the caller); scratch copies hold what they replace.
            let done = unsafe {
                let src = if in_place {
                    self.scratch(1, ap.add(r0 * row_bytes), k * row_bytes)
                } else {
                    ap.add(r0 * row_bytes)
                };
                let d = Val::Ptr(dp.add(r0 * row_bytes));
                exec_binary_rows(op, dtype, (Val::Ptr(src), false), (Val::Ptr(bp.add(r0 * size)), true), d, k, cols)?
            };
            if !done {
                return Ok(false);
            }
            r0 += k;
        }
        Ok(true)
    }

    /// Copy `bytes` at `from` into scratch slot `slot` and return the copy's address.
    fn scratch(&mut self, slot: usize, from: *mut u8, bytes: usize) -> *mut u8 {
        if self.tmp[slot].len() * 64 < bytes {
            self.tmp[slot] = lines(bytes);
        }
        let tp = self.tmp[slot].as_mut_ptr() as *mut u8;
        // SAFETY: `from` holds `bytes` bytes (the callers' registers), the scratch as many,
        // and the scratch is this worker's own allocation.
        unsafe { std::ptr::copy_nonoverlapping(from, tp, bytes) };
        tp
    }

    fn broadcast(&mut self, dst: Reg, src: Reg, rows: usize, cols: usize) {
        let size = self.p.dtype(src).size();
        let (dp, sp) = (self.ptr(dst), self.ptr(src));
        /// Spread rows from last to first, so a source at the start of the destination is read
        /// before it is overwritten.
        ///
        /// # Safety
        /// `sp` holds `rows` elements, `dp` `rows * cols` (both of `T`, aligned).
        unsafe fn spread<T: Copy>(dp: *mut u8, sp: *const u8, rows: usize, cols: usize) {
            for r in (0..rows).rev() {
                // SAFETY: per the contract.
                unsafe {
                    let v = (sp as *const T).add(r).read();
                    std::slice::from_raw_parts_mut((dp as *mut T).add(r * cols), cols).fill(v);
                }
            }
        }
        let aligned = (dp as usize | sp as usize).is_multiple_of(size.max(1));
        // SAFETY: the source holds `rows` elements, the destination `rows * cols` (checked);
        // the typed paths run on addresses aligned for their element type.
        unsafe {
            match size {
                _ if !aligned => {
                    for r in (0..rows).rev() {
                        for c in 0..cols {
                            std::ptr::copy(sp.add(r * size), dp.add((r * cols + c) * size), size);
                        }
                    }
                }
                8 => spread::<u64>(dp, sp, rows, cols),
                4 => spread::<u32>(dp, sp, rows, cols),
                2 => spread::<u16>(dp, sp, rows, cols),
                _ => spread::<u8>(dp, sp, rows, cols),
            }
        }
    }
}

/// `ins` reading `to` where it read `from`.
fn replace_src(ins: Instr, from: Reg, to: Reg) -> Instr {
    let m = |r: Reg| if r == from { to } else { r };
    match ins {
        Instr::Unary { op, dst, src } => Instr::Unary { op, dst, src: m(src) },
        Instr::Binary { op, dst, a, b } => Instr::Binary { op, dst, a: m(a), b: m(b) },
        Instr::Select { dst, cond, a, b } => Instr::Select { dst, cond: m(cond), a: m(a), b: m(b) },
        Instr::Cast { dst, src } => Instr::Cast { dst, src: m(src) },
        Instr::Copy { dst, src } => Instr::Copy { dst, src: m(src) },
        other => other,
    }
}

/// Run `p` for blocks `0..block_dim` over `globals` with integer scalar arguments `args`;
/// returns the number of worker threads used. Every block is checked before any runs.
///
/// # Safety
/// Each global buffer addresses `len` live elements of its dtype, which stay valid and are
/// not written by anything else until the call returns. Blocks that write overlapping global
/// elements race as on the device (the program's responsibility).
pub unsafe fn run_block_program(
    p: &BlockProgram,
    globals: &[GlobalBuf],
    args: &[i64],
    block_dim: usize,
) -> Result<usize> {
    pyasc_ir::block::verify_block(p)?;
    // SAFETY: per this function's contract.
    unsafe { run_block_plan(p, &BlockPlan::new(p), globals, args, block_dim) }
}

/// [`run_block_program`] with the strip plan `plan` (built by [`BlockPlan::new`] for `p`, or
/// [`BlockPlan::unfused`]). A launch whose global buffers overlap in memory, one of them
/// written by a segment, runs every statement alone.
///
/// # Safety
/// As for [`run_block_program`].
pub unsafe fn run_block_plan(
    p: &BlockProgram,
    plan: &BlockPlan,
    globals: &[GlobalBuf],
    args: &[i64],
    block_dim: usize,
) -> Result<usize> {
    pyasc_ir::block::verify_block(p)?;
    let (top, by_var) = schedule(p)?;
    // SAFETY: per this function's contract.
    unsafe { launch(p, plan, (&top, &by_var), globals, args, block_dim, true) }
}

/// Expressions of no loop, then those of each loop variable, in evaluation order.
type Schedule = (Vec<ExprId>, Vec<Vec<ExprId>>);

fn schedule(p: &BlockProgram) -> Result<Schedule> {
    p.exprs.schedule(&p.var_depths()).map_err(|m| IrError::internal(format!("block kernel {}: {m}", p.name)))
}

/// A verified block program with its strip plan and expression schedule, built once and
/// launched any number of times (a traced kernel's signature keeps one).
///
/// The walk that checks every block before a launch depends only on the integer arguments,
/// the global buffers' lengths and the block count (never on addresses or contents), so the
/// last few of those that passed are kept and a launch repeating one skips the walk: a kernel
/// walking its data in many small tiles paid the walk as a second pass over its loop.
#[derive(Debug)]
pub struct PreparedBlock {
    /// The program.
    pub program: BlockProgram,
    /// Its strip plan ([`BlockPlan::new`]).
    pub plan: BlockPlan,
    schedule: Schedule,
    checked: std::sync::Mutex<Vec<Checked>>,
}

/// A launch's shape whose checks passed: integer arguments, global lengths, block count.
type Checked = (Vec<i64>, Vec<usize>, usize);

/// Launch shapes a prepared program remembers as checked.
const CHECKED_KEPT: usize = 4;

impl PreparedBlock {
    /// Verify `program` and plan it.
    pub fn new(program: BlockProgram) -> Result<PreparedBlock> {
        pyasc_ir::block::verify_block(&program)?;
        let schedule = schedule(&program)?;
        let plan = BlockPlan::new(&program);
        Ok(PreparedBlock { program, plan, schedule, checked: Default::default() })
    }

    /// [`run_block_program`] of the prepared program.
    ///
    /// # Safety
    /// As for [`run_block_program`].
    pub unsafe fn run(&self, globals: &[GlobalBuf], args: &[i64], block_dim: usize) -> Result<usize> {
        let (top, by_var) = &self.schedule;
        let key = (args.to_vec(), globals.iter().map(|g| g.len).collect::<Vec<_>>(), block_dim);
        let seen = pyasc_events::forksafe::lock(&self.checked).contains(&key);
        // SAFETY: per this function's contract.
        let done = unsafe { launch(&self.program, &self.plan, (top, by_var), globals, args, block_dim, !seen) };
        if done.is_ok() && !seen {
            let mut kept = pyasc_events::forksafe::lock(&self.checked);
            if kept.len() == CHECKED_KEPT {
                kept.remove(0);
            }
            kept.push(key);
        }
        done
    }
}

/// [`run_block_plan`] of a verified program with its schedule; with `check`, every block is
/// first walked without touching memory to check its copies and counts.
///
/// # Safety
/// As for [`run_block_program`].
unsafe fn launch(
    p: &BlockProgram,
    plan: &BlockPlan,
    (top, by_var): (&[ExprId], &[Vec<ExprId>]),
    globals: &[GlobalBuf],
    args: &[i64],
    block_dim: usize,
    check: bool,
) -> Result<usize> {
    if globals.len() != p.globals.len() || args.len() != p.args {
        return Err(IrError::internal(format!("block kernel {}: wrong number of arguments", p.name)));
    }
    let span = |i: usize| {
        let g = &globals[i];
        let a = g.ptr as usize;
        a..a + g.len * p.globals[i].size()
    };
    let fuse = plan.written.iter().all(|&w| {
        let w = w as usize;
        let out = span(w);
        (0..globals.len()).filter(|&j| j != w).all(|j| span(j).start >= out.end || out.start >= span(j).end)
    });
    struct Shared<'a>(&'a [GlobalBuf]);
    // SAFETY: the buffers are only read and written through checked copies (caller's contract).
    unsafe impl Sync for Shared<'_> {}
    let shared = Shared(globals);
    let launch = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Bytes of the Unified Buffer the registers reach.
    let used = (0..p.regs.len())
        .filter(|&i| matches!(p.regs[i].kind, RegKind::Tile))
        .map(|i| p.at[i] + p.cap[i] * p.regs[i].dtype.size())
        .max()
        .unwrap_or(0);
    let worker = |dry: bool| {
        let shared = &shared;
        move |blocks: std::ops::Range<usize>| -> Result<()> {
            // The check walks touch no memory: no Unified Buffer.
            let mut ub = if dry { Vec::new() } else { take_ub(p.ub_bytes, used, launch) };
            let base = if dry { std::ptr::null_mut() } else { ub.as_mut_ptr() as *mut u8 };
            let mut vals: Vec<Val> = p
                .regs
                .iter()
                .enumerate()
                .map(|(i, r)| match r.kind {
                    RegKind::Scalar(v) => Val::Scalar(v),
                    // Inside the Unified Buffer (verified) when it is there.
                    _ => Val::Ptr(base.wrapping_add(p.at[i])),
                })
                .collect();
            // Spare registers: three for copies of overlapping operands, three for row operations.
            vals.extend([Val::Scalar(Scalar::Int(0)); 6]);
            let mut decls = p.regs.clone();
            decls.extend(p.regs.first().copied().into_iter().cycle().take(6));
            let mut e = Exec {
                p,
                globals: shared.0,
                args,
                ex: ExprValues {
                    block: 0,
                    block_num: block_dim as i64,
                    vars: vec![0; p.vars],
                    vals: vec![0; p.exprs.nodes.len()],
                },
                top,
                by_var,
                vals,
                decls,
                tmp: [Vec::new(), Vec::new(), Vec::new()],
                layout: None,
                dry,
                streamed: false,
                fuse,
                strip_bytes: plan.strip_bytes,
            };
            let token = crate::interrupt::current();
            let mut done = Ok(());
            for b in blocks {
                if let Some(t) = &token {
                    done = t.check();
                }
                e.ex.block = b as i64;
                done = done.and_then(|()| e.update(e.top)).and_then(|()| e.run(&p.body, &plan.steps));
                if done.is_err() {
                    break;
                }
            }
            if e.streamed {
                store_fence();
            }
            if !dry {
                keep_ub(ub, launch);
            }
            done
        }
    };
    if check {
        worker(true)(0..block_dim)?;
    }
    let threads = num_threads().min(block_dim).max(1);
    if threads == 1 {
        worker(false)(0..block_dim)?;
        return Ok(1);
    }
    let run = worker(false);
    // Runs of blocks dealt out a few per thread (a worker that falls behind on a shared
    // machine takes fewer); each thread reuses its Unified Buffer from run to run.
    let runs = block_dim.min(threads * RUNS_PER_THREAD);
    crate::pool::for_blocks(runs, threads - 1, |w| run(w * block_dim / runs..(w + 1) * block_dim / runs))?;
    Ok(threads)
}
