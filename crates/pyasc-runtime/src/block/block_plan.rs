//! Strip plans of block programs: which runs of statements the block VM executes strip by
//! strip instead of statement by statement.
//!
//! A kernel written per block walks its data in tiles of tens of KiB, and each vector
//! instruction streams its whole tile through the cache before the next one starts. A
//! [`Segment`] is a maximal run of statements of one statement list that all work on the same
//! units: either elements (copies, elementwise instructions over one common count) or rows
//! (row reductions, broadcasts and per-row operations over common `rows` and `cols`, with
//! copies and instructions over `rows * cols` elements or over `rows` per-row values). Unit
//! `u` of every statement touches only element `u` (width one) or row `u` (width `cols`) of
//! each of its registers, so when any two register regions the segment touches, at least one
//! of them written, are either the same region read the same way (same Unified Buffer
//! offset, element size and width) or disjoint, the units are independent and the segment
//! can run a few units at a time (a strip small enough to stay in the L1 cache) with results
//! identical to running each statement over all units. A shifted overlap (`dst = t[1:]`,
//! `src = t[:n]`) or a count that differs ends a segment. Global memory follows the same
//! rule in its simplest form: a global buffer a segment copies out to is touched by no other
//! copy of that segment (a launch whose global buffers overlap in memory runs unfused).
//! Regions are judged once per program by the registers' fixed offsets and capacities; as a
//! local tensor's capacity runs to the end of its buffer, two regions that overlap only by
//! capacity give a [`Limit`] on the units, checked each time the segment runs.
//!
//! A copy into the Unified Buffer whose register nothing else reads, inside or outside the
//! segment, need not run: the segment's statements read global memory in its place
//! ([`Segment::direct`]), which saves the copy's pass over the tile. Likewise a copy out of
//! the Unified Buffer whose register only that copy reads need not run: the instruction that
//! computes the register writes global memory in its place ([`Segment::direct_out`]).
//!
//! An add, subtract or multiply whose result only the row sum right after it reads runs with
//! that sum as one pass, the sum of the arithmetic's results ([`Segment::sums`]): a variance's
//! squares are never stored. The fused pass adds exactly as the row sum adds, so the sums are
//! the two statements' to the bit. Likewise two float adds, subtracts or multiplies, the
//! second the only reader of the first's result, run as one chained pass ([`Segment::chains`]).

use pyasc_ir::block::{BStmt, BlockProgram, Expr, ExprId, IntOp};
use pyasc_ir::op::{BinaryOp, ReduceOp};
use pyasc_ir::tile::{Instr, Reg, RegKind};
use pyasc_ir::DType;
use pyasc_kernels::chain::chains;

/// How many elements of a register one unit of a segment covers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Width {
    /// One element per unit.
    One,
    /// One row (`cols` elements) per unit.
    Cols,
}

/// A run of statements of one list executed strip by strip.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Index of its first statement in the list.
    pub first: usize,
    /// Number of statements.
    pub len: usize,
    /// Units: the common element count, or the rows.
    pub units: ExprId,
    /// Row length when the units are rows.
    pub cols: Option<ExprId>,
    /// Width of each statement's copy or instruction operands (`One` for row statements,
    /// whose operands have fixed widths).
    pub widths: Vec<Width>,
    /// The local tensor registers touched, each with its width.
    pub regs: Vec<(Reg, Width)>,
    /// Bounds on the units under which register regions that overlap by capacity are
    /// disjoint; a run beyond one runs statement by statement.
    pub limits: Vec<Limit>,
    /// Copies into the Unified Buffer whose register the segment's statements may read
    /// straight from global memory instead, as `(copy, until)` (indices in the segment):
    /// only this segment reads the register's bytes, only through that register and after
    /// the copy; statement `until` (if inside the segment) is the first to write them again,
    /// through that register, without reading them, and statements from it on use the
    /// Unified Buffer.
    pub direct: Vec<(usize, usize)>,
    /// Copies out of the Unified Buffer whose bytes' one writer in the segment may write
    /// straight to the copy's global elements instead, as `(copy, the writer's register)`
    /// (a queue hands the same bytes on under another register): the writer is an
    /// instruction or a per-row operation before the copy, nothing else in the segment writes those bytes, and
    /// nothing in the program but the copy reads them.
    pub direct_out: Vec<(usize, Reg)>,
    /// Float add, subtract or multiply instructions (indices in the segment) that run with the
    /// row sum following them as one mapped sum: the sum reads the instruction's result, which
    /// nothing else reads before the segment's next write of those bytes (the program touches
    /// them nowhere else, and inside the segment a write comes first). Their results are never
    /// stored.
    pub sums: Vec<usize>,
    /// Float add, subtract or multiply instructions (indices in the segment) that run with the
    /// one after them, another of the three and the only reader of their result, as one
    /// chained instruction ([`Instr::Chain`]), under the same rule as [`Segment::sums`].
    pub chains: Vec<usize>,
    /// The segment computes long enough per strip (a transcendental instruction, or two
    /// passes or more over its units) that the elements following each copy into the Unified
    /// Buffer (the next tile of a kernel walking its input forward) are asked for ahead.
    pub prefetch: bool,
}

/// One step of a statement list.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The statement at this index, run alone.
    One(usize),
    /// The loop at this index, with the plan of its body.
    Loop(usize, Vec<Step>),
    /// A segment run strip by strip.
    Strip(Segment),
}

/// The strip plan of a block program.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockPlan {
    /// Steps of the program's body.
    pub steps: Vec<Step>,
    /// Global buffers some segment copies out to.
    pub written: Vec<u16>,
    /// Bytes of distinct register regions one strip may touch ([`STRIP_BYTES`]).
    pub strip_bytes: usize,
}

/// The default bytes of a strip: whole tiles of the examples (up to 64 KiB over their
/// registers) run as one strip. Strips sized for the L1 cache (16 KiB) were measured slower
/// on Zen 4: each statement of each strip pays its instruction dispatch (about 70 ns), and
/// copies into the Unified Buffer in small pieces keep fewer loads from memory in flight.
pub const STRIP_BYTES: usize = 64 << 10;

impl BlockPlan {
    /// The plan of `p`: every maximal segment of two statements or more.
    pub fn new(p: &BlockProgram) -> BlockPlan {
        let mut written = Vec::new();
        let mut every = Vec::new();
        all_accesses(p, &p.body, &mut every);
        let reads: Vec<_> = every.iter().filter(|(_, a)| !a.write).copied().collect();
        let steps = plan_list(p, &p.body, (&reads, &every), &mut written);
        written.sort_unstable();
        written.dedup();
        BlockPlan { steps, written, strip_bytes: STRIP_BYTES }
    }

    /// The plan that runs every statement alone (today's order, for comparison).
    pub fn unfused(p: &BlockProgram) -> BlockPlan {
        fn walk(stmts: &[BStmt]) -> Vec<Step> {
            let step = |(i, s): (usize, &BStmt)| match s {
                BStmt::Loop { body, .. } => Step::Loop(i, walk(body)),
                _ => Step::One(i),
            };
            stmts.iter().enumerate().map(step).collect()
        }
        BlockPlan { steps: walk(&p.body), written: Vec::new(), strip_bytes: STRIP_BYTES }
    }

    /// The segments of the plan, depth first (for tests and diagnostics).
    pub fn segments(&self) -> Vec<&Segment> {
        fn walk<'a>(steps: &'a [Step], out: &mut Vec<&'a Segment>) {
            for s in steps {
                match s {
                    Step::Strip(seg) => out.push(seg),
                    Step::Loop(_, body) => walk(body, out),
                    Step::One(_) => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.steps, &mut out);
        out
    }
}

/// Every register access of the program, with the statement making it.
fn all_accesses(p: &BlockProgram, stmts: &[BStmt], out: &mut Vec<(*const BStmt, Access)>) {
    for s in stmts {
        match s {
            BStmt::Loop { body, .. } => all_accesses(p, body, out),
            _ => out.extend(accesses(p, s, Width::One).into_iter().map(|a| (s as *const BStmt, a))),
        }
    }
}

/// `s` is a float add, subtract or multiply of one dtype: its operator, result and operands.
fn arith(p: &BlockProgram, s: &BStmt) -> Option<(BinaryOp, Reg, Reg, Reg)> {
    let BStmt::Op { ins: Instr::Binary { op, dst, a, b }, .. } = s else { return None };
    let dtype = p.dtype(*dst);
    let float = matches!(dtype, DType::F32 | DType::F64);
    let ok = float && chains(*op) && [*a, *b].iter().all(|&r| p.dtype(r) == dtype && !p.regs[r.0 as usize].row);
    ok.then_some((*op, *dst, *a, *b))
}

/// Whether the result of instruction `j` of segment `seg` is read by statement `j + 1` alone
/// (see [`Segment::sums`]): the program touches its bytes nowhere outside the segment, the
/// first statement of the segment touching them only writes them, none after `j + 1` reads
/// them, and `j + 1` writes none of the bytes `j` reads or writes.
fn read_once(p: &BlockProgram, seg: &[BStmt], widths: &[Width], every: &[(*const BStmt, Access)], j: usize) -> bool {
    let inside = |s: *const BStmt| seg.as_ptr_range().contains(&s);
    let at = |i: usize| accesses(p, &seg[i], widths[i]);
    let Some(tr) = at(j).into_iter().find(|x| x.write) else { return false };
    let meets = |x: &Access, y: &Access| x.at < y.end && y.at < x.end;
    if every.iter().any(|(st, x)| meets(x, &tr) && !inside(*st)) {
        return false;
    }
    let touch = |i: usize| at(i).into_iter().filter(|x| meets(x, &tr)).collect::<Vec<_>>();
    let first = (0..=j).find(|&i| !touch(i).is_empty());
    let fresh = first.is_some_and(|i| touch(i).iter().all(|x| x.write));
    let read_after = (j + 2..seg.len()).any(|i| touch(i).iter().any(|x| !x.write));
    let next_writes: Vec<Access> = at(j + 1).into_iter().filter(|x| x.write).collect();
    let clear = next_writes.iter().all(|d| at(j).iter().all(|x| !meets(x, d)));
    fresh && !read_after && clear
}

/// The instructions of segment `seg` (statement widths `widths`) that run with the row sum
/// after them (see [`Segment::sums`]); `every` holds every access of the program.
fn mapped_sums(p: &BlockProgram, seg: &[BStmt], widths: &[Width], every: &[(*const BStmt, Access)]) -> Vec<usize> {
    (0..seg.len().saturating_sub(1))
        .filter(|&j| {
            let Some((_, t, _, _)) = arith(p, &seg[j]) else { return false };
            let BStmt::Reduce { op: ReduceOp::Sum, dst: s, src, .. } = &seg[j + 1] else { return false };
            *src == t && p.dtype(*s) == p.dtype(t) && widths[j] == Width::Cols && read_once(p, seg, widths, every, j)
        })
        .collect()
}

/// The instructions of segment `seg` that run chained with the one after them (see
/// [`Segment::chains`]); none is both the first of one pair and the second of another.
fn chained(p: &BlockProgram, seg: &[BStmt], widths: &[Width], every: &[(*const BStmt, Access)]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for j in 0..seg.len().saturating_sub(1) {
        if out.last().is_some_and(|&k| k + 1 == j) {
            continue;
        }
        let (Some((_, t, _, _)), Some((_, d, x, y))) = (arith(p, &seg[j]), arith(p, &seg[j + 1])) else { continue };
        let pair = p.dtype(d) == p.dtype(t) && (x == t) != (y == t) && widths[j] == widths[j + 1];
        // The chained instruction's result overlapping an operand would have it read a copy.
        let (_, _, a, b) = arith(p, &seg[j]).unwrap_or((BinaryOp::Add, t, t, t));
        let span = |r: Reg| (p.at[r.0 as usize], p.at[r.0 as usize] + p.cap[r.0 as usize] * p.dtype(r).size());
        let tile = |r: Reg| matches!(p.regs[r.0 as usize].kind, RegKind::Tile);
        let (d0, d1) = span(d);
        let apart = [a, b, if x == t { y } else { x }].iter().all(|&r| !tile(r) || span(r).1 <= d0 || d1 <= span(r).0);
        let pair = pair && apart;
        if pair && read_once(p, seg, widths, every, j) {
            out.push(j);
        }
    }
    out
}

/// The chained instruction running instructions `first` and `second` of [`Segment::chains`].
pub fn chain_of(first: &BStmt, second: &BStmt) -> Option<Instr> {
    let BStmt::Op { ins: Instr::Binary { op: op1, dst: t, a, b }, .. } = first else { return None };
    let BStmt::Op { ins: Instr::Binary { op: op2, dst, a: x, b: y }, .. } = second else { return None };
    let (swap, c) = if x == t { (false, *y) } else { (true, *x) };
    Some(Instr::Chain { op1: *op1, op2: *op2, swap, dst: *dst, a: *a, b: *b, c })
}

/// The copies of segment `seg` (of `stmts[first..]`) whose register may be read from global
/// memory (see [`Segment::direct`]).
fn direct_copies(p: &BlockProgram, seg: &[BStmt], reads: &[(*const BStmt, Access)]) -> Vec<(usize, usize)> {
    let inside = |s: *const BStmt| seg.as_ptr_range().contains(&s);
    let mut out = Vec::new();
    for (i, s) in seg.iter().enumerate() {
        let BStmt::Copy { to_local: true, reg, .. } = s else { continue };
        let Some(r) = accesses(p, s, Width::One).first().copied() else { continue };
        let meets = |a: &Access| a.at < r.end && r.at < a.end;
        let read_elsewhere = reads
            .iter()
            .any(|(t, a)| meets(a) && (!inside(*t) || a.reg != *reg || seg[..=i].as_ptr_range().contains(t)));
        let writes =
            |t: &BStmt| accesses(p, t, Width::One).into_iter().filter(|a| a.write && meets(a)).collect::<Vec<_>>();
        let until = (i + 1..seg.len()).find(|&j| !writes(&seg[j]).is_empty()).unwrap_or(seg.len());
        let clean = seg[..i].iter().all(|t| writes(t).is_empty())
            && seg.get(until).is_none_or(|t| {
                let reads_it = accesses(p, t, Width::One).iter().any(|a| !a.write && meets(a));
                writes(t).iter().all(|a| a.reg == *reg) && !reads_it
            });
        if !read_elsewhere && clean {
            out.push((i, until));
        }
    }
    out
}

/// The copies out of segment `seg` whose register's writer may write global memory (see
/// [`Segment::direct_out`]).
fn direct_outs(
    p: &BlockProgram,
    seg: &[BStmt],
    widths: &[Width],
    reads: &[(*const BStmt, Access)],
) -> Vec<(usize, Reg)> {
    let mut out = Vec::new();
    for (c, s) in seg.iter().enumerate() {
        let BStmt::Copy { to_local: false, .. } = s else { continue };
        let Some(r) = accesses(p, s, widths[c]).first().copied() else { continue };
        let meets = |a: &Access| a.at < r.end && r.at < a.end;
        // Only this copy reads the bytes, anywhere in the program.
        let read_elsewhere = reads.iter().any(|(t, a)| meets(a) && !std::ptr::eq(*t, s));
        let writers: Vec<(usize, Access)> = seg
            .iter()
            .enumerate()
            .flat_map(|(j, t)| {
                accesses(p, t, widths[j]).into_iter().filter(|a| a.write && meets(a)).map(move |a| (j, a))
            })
            .collect();
        let writer = match writers[..] {
            [(w, a)] if w < c && (a.at, a.end, a.size, a.width) == (r.at, r.end, r.size, r.width) => {
                matches!(seg[w], BStmt::Op { .. } | BStmt::RowOp { .. }).then_some(a.reg)
            }
            _ => None,
        };
        if let (false, Some(w)) = (read_elsewhere, writer) {
            out.push((c, w));
        }
    }
    out
}

/// Reads of the program, and all its accesses.
type Uses<'a> = (&'a [(*const BStmt, Access)], &'a [(*const BStmt, Access)]);

fn plan_list(p: &BlockProgram, stmts: &[BStmt], uses: Uses<'_>, written: &mut Vec<u16>) -> Vec<Step> {
    let reads = uses.0;
    let mut out = Vec::new();
    let mut i = 0;
    while i < stmts.len() {
        if let BStmt::Loop { body, .. } = &stmts[i] {
            out.push(Step::Loop(i, plan_list(p, body, uses, written)));
            i += 1;
            continue;
        }
        let mut b = Builder::default();
        let mut j = i;
        while j < stmts.len() && b.add(p, &stmts[j]) {
            j += 1;
        }
        if j - i >= 2 {
            let (units, cols) = match b.shape {
                Some(Shape::Flat(n)) => (n, None),
                Some(Shape::Rows(r, c)) => (r, Some(c)),
                None => unreachable!("a segment of two statements has a shape"),
            };
            let mut regs: Vec<(Reg, Width)> = b.acc.iter().map(|a| (a.reg, a.width)).collect();
            regs.sort_unstable_by_key(|(r, w)| (r.0, *w == Width::Cols));
            regs.dedup();
            written.extend(b.gw.iter().copied());
            let (limits, direct) = (b.limits, direct_copies(p, &stmts[i..j], reads));
            let widths = b.widths;
            let direct_out = direct_outs(p, &stmts[i..j], &widths, reads);
            let prefetch = computes_long(p, &stmts[i..j]);
            let mut sums = if cols.is_some() { mapped_sums(p, &stmts[i..j], &widths, uses.1) } else { Vec::new() };
            let mut chains = chained(p, &stmts[i..j], &widths, uses.1);
            chains.retain(|&k| !sums.iter().any(|&m| m == k || m == k + 1 || m + 1 == k));
            // A pair whose second statement brings a register read from global memory back to
            // the Unified Buffer runs as two: the first still reads it where it was.
            let back_at = |k: &usize| direct.iter().any(|&(_, until)| until == k + 1);
            sums.retain(|k| !back_at(k));
            chains.retain(|k| !back_at(k));
            let seg = Segment {
                first: i,
                len: j - i,
                units,
                cols,
                widths,
                regs,
                limits,
                direct,
                direct_out,
                sums,
                chains,
                prefetch,
            };
            out.push(Step::Strip(seg));
            i = j;
        } else {
            out.push(Step::One(i));
            i += 1;
        }
    }
    out
}

/// Whether `seg` holds a transcendental instruction or two passes or more over its units
/// (instructions and row statements; copies do not count), as the tile VM decides to prefetch.
fn computes_long(p: &BlockProgram, seg: &[BStmt]) -> bool {
    let per_element = |r: Reg| matches!(p.regs[r.0 as usize].kind, RegKind::Tile);
    let expensive = seg.iter().any(|s| match s {
        BStmt::Op { ins: Instr::Unary { op, dst, .. }, .. } => op.is_expensive() && per_element(*dst),
        BStmt::Op { ins: Instr::Binary { op, dst, .. }, .. } => op.is_expensive() && per_element(*dst),
        _ => false,
    });
    expensive || seg.iter().filter(|s| !matches!(s, BStmt::Copy { .. })).count() >= 2
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Shape {
    Flat(ExprId),
    Rows(ExprId, ExprId),
}

/// One register access of a statement.
#[derive(Copy, Clone, Debug)]
struct Access {
    reg: Reg,
    at: usize,
    end: usize,
    size: usize,
    width: Width,
    write: bool,
}

impl Access {
    /// Whether the two accesses may run unit by unit: `Err` when never (the same register
    /// read two ways, or regions starting at the same byte read differently, one of them
    /// written), `Ok(Some(limit))` when only while the lower one's accessed elements end
    /// before the higher one starts (a local tensor's capacity runs to the end of its
    /// buffer, so `t[:n]` and `t[n:]` overlap by capacity), `Ok(None)` always.
    fn clash(&self, o: &Access) -> Result<Option<Limit>, ()> {
        if self.reg == o.reg && self.width != o.width {
            return Err(());
        }
        let overlap = self.at < o.end && o.at < self.end;
        let same = self.at == o.at && self.size == o.size && self.width == o.width;
        if !(self.write || o.write) || !overlap || same {
            return Ok(None);
        }
        let (lo, hi) = if self.at < o.at { (self, o) } else { (o, self) };
        if lo.at == hi.at {
            return Err(());
        }
        Ok(Some(Limit { gap: hi.at - lo.at, size: lo.size, width: lo.width }))
    }
}

/// A bound on a segment's units for it to run strip by strip: `units * size * width` bytes
/// (`width` elements per unit) fit in `gap`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Bytes from the lower region's start to the higher one's.
    pub gap: usize,
    /// Element size of the lower region.
    pub size: usize,
    /// Its width.
    pub width: Width,
}

/// A segment being grown.
#[derive(Default)]
struct Builder {
    shape: Option<Shape>,
    widths: Vec<Width>,
    acc: Vec<Access>,
    /// Global buffers copied out to, and those copied in from.
    gw: Vec<u16>,
    gr: Vec<u16>,
    limits: Vec<Limit>,
}

/// What a statement is to a segment.
enum Kind {
    /// Elementwise over this count.
    Elem(ExprId),
    /// Per row over rows and cols.
    Row(ExprId, ExprId),
}

fn kind(p: &BlockProgram, s: &BStmt) -> Option<Kind> {
    match s {
        BStmt::Copy { count, .. } => Some(Kind::Elem(*count)),
        BStmt::Op { ins, len, .. } => {
            let ok = match ins {
                Instr::Unary { .. } | Instr::Select { .. } | Instr::Cast { .. } | Instr::Copy { .. } => true,
                // An integer power checks all its exponents before it writes anything.
                Instr::Binary { op, a, .. } => *op != BinaryOp::Pow || p.dtype(*a).is_float(),
                _ => false,
            };
            ok.then_some(Kind::Elem(*len))
        }
        BStmt::Reduce { rows, cols, .. } | BStmt::Broadcast { rows, cols, .. } | BStmt::RowOp { rows, cols, .. } => {
            Some(Kind::Row(*rows, *cols))
        }
        BStmt::Loop { .. } => None,
    }
}

/// `e` is the node `r * c` (either order).
fn is_product(p: &BlockProgram, e: ExprId, r: ExprId, c: ExprId) -> bool {
    matches!(p.exprs.nodes.get(e as usize), Some(&Expr::Bin(IntOp::Mul, a, b)) if (a, b) == (r, c) || (a, b) == (c, r))
}

/// The register accesses of `s`, its copies and instructions at width `w`.
fn accesses(p: &BlockProgram, s: &BStmt, w: Width) -> Vec<Access> {
    let mut out = Vec::new();
    let mut push = |r: Reg, width: Width, write: bool| {
        let i = r.0 as usize;
        if matches!(p.regs[i].kind, RegKind::Tile) {
            let size = p.regs[i].dtype.size();
            out.push(Access { reg: r, at: p.at[i], end: p.at[i] + p.cap[i] * size, size, width, write });
        }
    };
    match s {
        BStmt::Copy { to_local, reg, .. } => push(*reg, w, *to_local),
        BStmt::Op { ins, .. } => {
            push(ins.dst(), w, true);
            for &r in ins.srcs().iter() {
                push(r, w, false);
            }
        }
        BStmt::Reduce { dst, src, .. } => {
            push(*dst, Width::One, true);
            push(*src, Width::Cols, false);
        }
        BStmt::Broadcast { dst, src, .. } => {
            push(*dst, Width::Cols, true);
            push(*src, Width::One, false);
        }
        BStmt::RowOp { dst, a, b, .. } => {
            push(*dst, Width::Cols, true);
            push(*a, Width::Cols, false);
            push(*b, Width::One, false);
        }
        BStmt::Loop { .. } => {}
    }
    out
}

impl Builder {
    /// Add `s` if the segment stays valid with it.
    fn add(&mut self, p: &BlockProgram, s: &BStmt) -> bool {
        let Some(k) = kind(p, s) else { return false };
        // The segment's shape with `s`, the width of `s`, and whether the statements so far
        // turn from elements into rows.
        let (shape, w, widen) = match (self.shape, k) {
            (None, Kind::Elem(n)) => (Shape::Flat(n), Width::One, false),
            (None, Kind::Row(r, c)) => (Shape::Rows(r, c), Width::One, false),
            (Some(Shape::Flat(n)), Kind::Elem(m)) if n == m => (Shape::Flat(n), Width::One, false),
            (Some(Shape::Flat(n)), Kind::Row(r, c)) if is_product(p, n, r, c) => (Shape::Rows(r, c), Width::One, true),
            (Some(Shape::Rows(r, c)), Kind::Elem(m)) if m == r => (Shape::Rows(r, c), Width::One, false),
            (Some(Shape::Rows(r, c)), Kind::Elem(m)) if is_product(p, m, r, c) => {
                (Shape::Rows(r, c), Width::Cols, false)
            }
            (Some(Shape::Rows(r, c)), Kind::Row(r2, c2)) if (r, c) == (r2, c2) => {
                (Shape::Rows(r, c), Width::One, false)
            }
            _ => return false,
        };
        let mut acc = self.acc.clone();
        if widen {
            for a in &mut acc {
                a.width = Width::Cols;
            }
        }
        let new = accesses(p, s, w);
        let old = acc.len();
        acc.extend(new.iter().copied());
        let mut limits = self.limits.clone();
        for (i, a) in new.iter().enumerate() {
            for b in &acc[..old + i] {
                match a.clash(b) {
                    Err(()) => return false,
                    Ok(Some(l)) if !limits.contains(&l) => limits.push(l),
                    Ok(_) => {}
                }
            }
        }
        if let BStmt::Copy { to_local, global, .. } = s {
            // A global buffer copied out to is touched by no other copy of the segment.
            if self.gw.contains(global) || (!*to_local && self.gr.contains(global)) {
                return false;
            }
            if *to_local {
                self.gr.push(*global);
            } else {
                self.gw.push(*global);
            }
        }
        if widen {
            // Statements so far are all elementwise: their units become rows.
            self.widths.iter_mut().for_each(|x| *x = Width::Cols);
        }
        self.shape = Some(shape);
        self.widths.push(if matches!(s, BStmt::Copy { .. } | BStmt::Op { .. }) { w } else { Width::One });
        self.acc = acc;
        self.limits = limits;
        true
    }
}

#[cfg(test)]
#[path = "block_plan_tests.rs"]
mod tests;
