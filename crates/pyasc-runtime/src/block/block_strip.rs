//! Strip-by-strip execution of a block program's [`Segment`]s (planned in
//! [`crate::block_plan`]): every statement of the segment runs over a few units (elements or
//! rows), then the next few, with each register's address moved to the strip's first unit.
//!
//! Each statement was checked over all its units, exactly as when it runs alone, by the
//! launch's walk over every block before any block ran, so a bad count or access is the same
//! error naming the same line. A segment run beyond one of its [`Limit`]s runs statement by
//! statement. Registers of the segment's direct copies point into global memory (when it is
//! aligned for their elements): those read in place of a copy in, and those written in place
//! of a copy out. An instruction whose result only the row sum after it reads runs with that
//! sum as one mapped sum, and one whose result only the instruction after it reads runs
//! chained with it.

use super::Exec;
use crate::block_plan::{chain_of, Limit, Segment, Width};
use crate::instr::{exec_reduce, exec_reduce_map, Val};
use crate::memory::STREAM_MIN_BYTES;
use pyasc_ir::block::BStmt;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::tile::Instr;

/// Where a segment's registers are: lists a worker keeps from segment to segment, so that
/// running one (once per tile of a kernel) allocates nothing.
#[derive(Default)]
pub(super) struct Layout {
    /// Copies not run: their register is read from global memory.
    skip: Vec<bool>,
    /// `(statement, register, Unified Buffer address)`: from that statement on, a register
    /// read from global memory is back at its own address.
    back: Vec<(usize, usize, *mut u8)>,
    /// Each register's address at unit 0 and its bytes per unit.
    bases: Vec<(usize, *mut u8, usize)>,
    /// Global bytes to prefetch while the segment runs, as `(address, bytes)`.
    ahead: Vec<(usize, usize)>,
    /// Each register's own address, restored after the segment.
    orig: Vec<(usize, *mut u8)>,
    /// Registers whose address is in global memory, with that address.
    direct: Vec<(usize, *mut u8)>,
    /// Unified Buffer offsets of the registers counted in a strip's bytes.
    seen: Vec<usize>,
}

/// How a segment is cut into strips.
#[derive(Copy, Clone)]
struct Cut {
    /// Units of the segment.
    units: usize,
    /// Units per strip.
    k: usize,
    /// Row length.
    cols: usize,
}

impl Exec<'_> {
    /// Run the statements `stmts` of segment `seg` strip by strip.
    ///
    /// The launch's walk over every block has checked each statement over all its units
    /// with these values (or an earlier launch's walk with the same arguments and buffer
    /// lengths did), so the strips run without checking again.
    pub(super) fn strip(&mut self, seg: &Segment, stmts: &[BStmt]) -> Result<()> {
        let units = self.eval(&seg.units, &None)?.max(0) as usize;
        let cols = match seg.cols {
            Some(c) => self.eval(&c, &None)?.max(0) as usize,
            None => 1,
        };
        let width = |w: Width| match w {
            Width::One => 1,
            Width::Cols => cols,
        };
        let apart = |l: &Limit| (units as u128) * (l.size as u128) * (width(l.width) as u128) <= l.gap as u128;
        if !seg.limits.iter().all(apart) {
            // Regions that overlap at this many units: statement by statement.
            return stmts.iter().try_for_each(|s| self.stmt(s));
        }
        // Boxed, so taking it out and putting it back moves a pointer, not its seven lists.
        let mut l = self.layout.take().unwrap_or_default();
        let done = self.lay_out(seg, stmts, units, cols, &mut l).and_then(|cut| self.strips(seg, stmts, &l, cut));
        for &(i, p) in &l.orig {
            self.vals[i] = Val::Ptr(p);
        }
        self.layout = Some(l);
        done
    }

    /// Fill `l` for running segment `seg` over `units` (rows of `cols`) and return its cut.
    fn lay_out(&mut self, seg: &Segment, stmts: &[BStmt], units: usize, cols: usize, l: &mut Layout) -> Result<Cut> {
        let width = |w: Width| match w {
            Width::One => 1,
            Width::Cols => cols,
        };
        let Layout { skip, back, bases, ahead, orig, direct, seen } = l;
        orig.clear();
        orig.extend(seg.regs.iter().map(|&(r, _)| (r.0 as usize, self.ptr(r))));
        ahead.clear();
        if seg.prefetch {
            self.prefetch_ranges(stmts, ahead)?;
        }
        // Copies whose register is read from global memory instead (when element-aligned there).
        skip.clear();
        skip.resize(stmts.len(), false);
        direct.clear();
        back.clear();
        for &(d, until) in &seg.direct {
            if let BStmt::Copy { global, reg, start, site, .. } = &stmts[d] {
                let size = self.p.dtype(*reg).size();
                let g = self.globals[*global as usize];
                // SAFETY: the copy's elements lie in the buffer (checked above).
                let gp = unsafe { g.ptr.add(self.eval(start, site)? as usize * size) };
                if (gp as usize).is_multiple_of(size) {
                    skip[d] = true;
                    direct.push((reg.0 as usize, gp));
                    back.push((until, reg.0 as usize, self.ptr(*reg)));
                }
            }
        }
        // Copies out whose register's writer writes global memory instead, unless the copy
        // would stream past the caches (a plain store first reads each line it writes).
        for &(c, w) in &seg.direct_out {
            if let BStmt::Copy { global, reg, start, site, .. } = &stmts[c] {
                let size = self.p.dtype(*reg).size();
                let g = self.globals[*global as usize];
                if g.len * size >= STREAM_MIN_BYTES {
                    continue;
                }
                // SAFETY: the copy's elements lie in the buffer (checked above).
                let gp = unsafe { g.ptr.add(self.eval(start, site)? as usize * size) };
                if (gp as usize).is_multiple_of(size) && !direct.iter().any(|d| d.0 == w.0 as usize) {
                    skip[c] = true;
                    direct.push((w.0 as usize, gp));
                }
            }
        }
        // Each register's address at unit 0 and its bytes per unit.
        bases.clear();
        bases.extend(seg.regs.iter().map(|&(r, w)| {
            let at = direct.iter().find(|d| d.0 == r.0 as usize).map_or(self.ptr(r), |d| d.1);
            (r.0 as usize, at, width(w) * self.p.dtype(r).size())
        }));
        seen.clear();
        let mut per_unit = 0usize;
        for (&(r, _), &(_, _, bytes)) in seg.regs.iter().zip(bases.iter()) {
            let at = self.p.at[r.0 as usize];
            if !seen.contains(&at) {
                seen.push(at);
                per_unit += bytes;
            }
        }
        let mut k = (self.strip_bytes / per_unit.max(1)).max(1);
        if seg.cols.is_none() && k >= 64 {
            // Whole cache lines of float32 per strip.
            k -= k % 16;
        }
        Ok(Cut { units, k, cols })
    }

    /// The global bytes following each copy into the Unified Buffer of `stmts` (as many as the
    /// copy moves, inside its view), as `(address, bytes)`: asked for while the segment runs,
    /// so the next tile's loads overlap this one's arithmetic.
    fn prefetch_ranges(&self, stmts: &[BStmt], out: &mut Vec<(usize, usize)>) -> Result<()> {
        for s in stmts {
            let BStmt::Copy { to_local: true, global, reg, start, hi, count, site, .. } = s else { continue };
            let (start, hi, n) = (self.eval(start, site)?, self.eval(hi, site)?, self.eval(count, site)?);
            let g = self.globals[*global as usize];
            let from = start.saturating_add(n).max(0) as usize;
            let end = (start.saturating_add(n.saturating_mul(2)).min(hi).max(0) as usize).min(g.len);
            if from < end {
                let size = self.p.dtype(*reg).size();
                out.push((g.ptr as usize + from * size, (end - from) * size));
            }
        }
        Ok(())
    }

    fn strips(&mut self, seg: &Segment, stmts: &[BStmt], l: &Layout, cut: Cut) -> Result<()> {
        let Layout { skip, back, bases, ahead, .. } = l;
        let Cut { units, k, cols } = cut;
        // The next tile's prefetches, spread evenly over the statements of every strip: asked
        // for all at once they queue up behind each other and stall the loads of this tile.
        let steps = units.div_ceil(k.max(1)) * stmts.len();
        let mut step = 0;
        let mut u0 = 0;
        while u0 < units {
            let n = k.min(units - u0);
            for &(i, p, bytes) in bases {
                // SAFETY: unit `u0` lies inside every register (the checks before the first strip).
                self.vals[i] = Val::Ptr(unsafe { p.add(u0 * bytes) });
            }
            for (j, (s, &w)) in stmts.iter().zip(&seg.widths).enumerate() {
                let per = if w == Width::Cols { cols } else { 1 };
                for &(_, r, ub) in back.iter().filter(|b| b.0 == j) {
                    // From its next writer on, a register read from global memory is back in the
                    // Unified Buffer.
                    // SAFETY: as above.
                    self.vals[r] = Val::Ptr(unsafe { ub.add(u0 * bases.iter().find(|b| b.0 == r).map_or(0, |b| b.2)) });
                }
                for &(from, bytes) in ahead {
                    let (a, b) = (bytes * step / steps, bytes * (step + 1) / steps);
                    prefetch_l2(from + a, b - a);
                }
                step += 1;
                if skip[j] || (j > 0 && (seg.sums.contains(&(j - 1)) || seg.chains.contains(&(j - 1)))) {
                    continue;
                }
                if seg.sums.contains(&j) {
                    self.mapped_sum(s, &stmts[j + 1], n, cols)?;
                    continue;
                }
                if seg.chains.contains(&j) {
                    let (Some(ins), BStmt::Op { site, .. }) = (chain_of(s, &stmts[j + 1]), &stmts[j + 1]) else {
                        return Err(IrError::internal("a chain of statements that are not two instructions"));
                    };
                    if n > 0 {
                        self.op(&ins, n * per).map_err(|e| e.at(site.as_ref()))?;
                    }
                    continue;
                }
                self.part(s, u0 * per, n * per, n, cols)?;
            }
            u0 += n;
        }
        Ok(())
    }

    /// Run instruction `s` and the row sum `sum` of its result as one mapped sum over `rows`
    /// rows of `cols` ([`Segment::sums`]), registers already moved to the strip.
    fn mapped_sum(&mut self, s: &BStmt, sum: &BStmt, rows: usize, cols: usize) -> Result<()> {
        let (BStmt::Op { ins: Instr::Binary { op, a, b, .. }, .. }, BStmt::Reduce { op: red, dst, site, .. }) =
            (s, sum)
        else {
            return Err(IrError::internal("a mapped sum of statements that are not an instruction and a row sum"));
        };
        let [va, vb, vd] = [*a, *b, *dst].map(|r| self.vals[r.0 as usize]);
        // SAFETY: the operands hold `rows` rows of `cols` elements from this strip on (or are
        // scalars), the destination `rows` values (checked before the first strip).
        unsafe { exec_reduce_map(*red, *op, self.p.dtype(*a), va, vb, vd, rows, cols) }.map_err(|e| e.at(site.as_ref()))
    }

    /// Run statement `s` over its elements `off..off + len` (copies, instructions) or over
    /// `rows` rows of `cols` (row statements), registers already moved to the strip.
    fn part(&mut self, s: &BStmt, off: usize, len: usize, rows: usize, cols: usize) -> Result<()> {
        match s {
            BStmt::Copy { to_local, global, reg, start, site, .. } => {
                let g = self.globals[*global as usize];
                let size = self.p.dtype(*reg).size();
                let first = self.eval(start, site)? as usize + off;
                // SAFETY: elements start..start + count of the global buffer and of the
                // register were checked before the first strip; this strip moves part of them.
                unsafe { self.transfer(*to_local, g.len * size, g.ptr.add(first * size), self.ptr(*reg), len * size) };
            }
            BStmt::Op { ins, site, .. } if len > 0 => self.op(ins, len).map_err(|e| e.at(site.as_ref()))?,
            BStmt::Op { .. } => {}
            BStmt::Reduce { op, dst, src, site, .. } => {
                let (sv, dv) = (self.vals[src.0 as usize], self.vals[dst.0 as usize]);
                // SAFETY: the source holds `rows` rows of `cols` from this strip on, the
                // destination `rows` values (checked before the first strip).
                unsafe { exec_reduce(*op, self.p.dtype(*src), sv, dv, rows, cols) }.map_err(|e| e.at(site.as_ref()))?
            }
            BStmt::Broadcast { dst, src, .. } => self.broadcast(*dst, *src, rows, cols),
            BStmt::RowOp { op, dst, a, b, site, .. } => {
                self.row_op(*op, [*dst, *a, *b], rows, cols).map_err(|e| e.at(site.as_ref()))?
            }
            BStmt::Loop { .. } => return Err(IrError::internal("a loop inside a segment")),
        }
        Ok(())
    }
}

/// Prefetch the cache lines of `bytes` bytes at `from` into the L2 cache (a hint: it never
/// faults, whatever the address).
fn prefetch_l2(from: usize, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut line = from & !63;
        while line < from + bytes {
            // SAFETY: prefetching is a hint; it never faults.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(line as *const i8) };
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (from, bytes);
}
