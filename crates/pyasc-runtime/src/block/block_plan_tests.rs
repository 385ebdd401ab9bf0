//! Tests of strip plans: which statements form segments, and that strip-by-strip execution
//! (with strips far smaller than a tile, so counts leave tails) writes exactly what running
//! each statement alone writes.

use super::*;
use crate::block::{run_block_plan, GlobalBuf};
use pyasc_ir::block::Exprs;
use pyasc_ir::op::{ReduceOp, UnaryOp};
use pyasc_ir::tile::RegDecl;
use pyasc_ir::{DType, Scalar};

/// A program being written: float32 globals, integer arguments `n` (0), `rows` (1), `cols` (2)
/// and the global buffers' length (3).
struct Prog(BlockProgram);

impl Prog {
    fn new(globals: usize) -> Prog {
        Prog(BlockProgram {
            name: "t".into(),
            globals: vec![DType::F32; globals],
            args: 4,
            regs: Vec::new(),
            at: Vec::new(),
            cap: Vec::new(),
            ub_bytes: 1 << 20,
            vars: 0,
            exprs: Exprs::default(),
            body: Vec::new(),
        })
    }
    fn tile(&mut self, dtype: DType, at: usize, cap: usize) -> Reg {
        self.0.regs.push(RegDecl { dtype, kind: RegKind::Tile, row: false });
        self.0.at.push(at);
        self.0.cap.push(cap);
        Reg(self.0.regs.len() as u16 - 1)
    }
    fn constant(&mut self, v: f64) -> Reg {
        self.constant_of(DType::F32, v)
    }
    fn constant_of(&mut self, dtype: DType, v: f64) -> Reg {
        self.0.regs.push(RegDecl { dtype, kind: RegKind::Scalar(Scalar::Float(v)), row: false });
        self.0.at.push(0);
        self.0.cap.push(0);
        Reg(self.0.regs.len() as u16 - 1)
    }
    fn e(&mut self, e: Expr) -> ExprId {
        self.0.exprs.intern(e)
    }
    fn n(&mut self) -> ExprId {
        self.e(Expr::Arg(0))
    }
    fn rc(&mut self) -> (ExprId, ExprId, ExprId) {
        let (r, c) = (self.e(Expr::Arg(1)), self.e(Expr::Arg(2)));
        (r, c, self.e(Expr::Bin(IntOp::Mul, r, c)))
    }
    fn copy(&mut self, to_local: bool, global: u16, reg: Reg, count: ExprId) {
        let (zero, hi) = (self.e(Expr::Const(0)), self.e(Expr::Arg(3)));
        let s = BStmt::Copy { to_local, global, reg, start: zero, lo: zero, hi, count, pad: true, site: None };
        self.0.body.push(s);
    }
    fn op(&mut self, ins: Instr, len: ExprId) {
        self.0.body.push(BStmt::Op { ins, len, site: None });
    }
    fn plan(&self) -> BlockPlan {
        pyasc_ir::block::verify_block(&self.0).unwrap();
        BlockPlan::new(&self.0)
    }
}

fn bin(op: BinaryOp, dst: Reg, a: Reg, b: Reg) -> Instr {
    Instr::Binary { op, dst, a, b }
}

fn un(op: UnaryOp, dst: Reg, src: Reg) -> Instr {
    Instr::Unary { op, dst, src }
}

/// A GELU-like flat program with a float64 detour, a compare and a select: x (global 0) to y
/// (global 1). `a` runs to the end of the scratch buffer that `b` starts halfway through.
fn flat(cap: usize) -> Prog {
    let mut p = Prog::new(2);
    let b4 = cap * 4;
    let xl = p.tile(DType::F32, 0, cap);
    let a = p.tile(DType::F32, b4, 2 * cap);
    let b = p.tile(DType::F32, 2 * b4, cap);
    let d = p.tile(DType::F64, 3 * b4, cap);
    let yl = p.tile(DType::F32, 5 * b4, cap);
    let m = p.tile(DType::Bool, 6 * b4, cap);
    let (k, one) = (p.constant(0.7), p.constant_of(DType::F64, 1.0));
    let n = p.n();
    p.copy(true, 0, xl, n);
    p.op(bin(BinaryOp::Mul, a, xl, k), n);
    p.op(un(UnaryOp::Erf, b, a), n);
    p.op(Instr::Cast { dst: d, src: b }, n);
    p.op(bin(BinaryOp::Add, d, d, one), n);
    p.op(Instr::Cast { dst: a, src: d }, n);
    p.op(bin(BinaryOp::Gt, m, a, xl), n);
    p.op(Instr::Select { dst: yl, cond: m, a, b: xl }, n);
    p.op(bin(BinaryOp::Mul, yl, yl, xl), n);
    p.copy(false, 1, yl, n);
    p
}

/// Row softmax plus a broadcast, rows of `cols` (argument 2) in tiles of `cap` elements.
fn rows(cap: usize) -> Prog {
    let mut p = Prog::new(2);
    let b4 = cap * 4;
    let (xl, w, yl) = (p.tile(DType::F32, 0, cap), p.tile(DType::F32, b4, cap), p.tile(DType::F32, 2 * b4, cap));
    let m = p.tile(DType::F32, 3 * b4, cap);
    let (r, c, rc) = p.rc();
    p.copy(true, 0, xl, rc);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Max, dst: m, src: xl, rows: r, cols: c, site: None });
    p.0.body.push(BStmt::RowOp { op: BinaryOp::Sub, dst: w, a: xl, b: m, rows: r, cols: c, site: None });
    p.op(un(UnaryOp::Exp, yl, w), rc);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Sum, dst: m, src: yl, rows: r, cols: c, site: None });
    p.0.body.push(BStmt::RowOp { op: BinaryOp::Div, dst: yl, a: yl, b: m, rows: r, cols: c, site: None });
    p.op(un(UnaryOp::Sqrt, m, m), r);
    p.0.body.push(BStmt::Broadcast { dst: w, src: m, rows: r, cols: c, site: None });
    p.op(bin(BinaryOp::Add, yl, yl, w), rc);
    p.copy(false, 1, yl, rc);
    p
}

/// Row normalize: the input tile is overwritten by the squares after its last read; the
/// squares are added to the result at the end.
fn normalize(cap: usize) -> Prog {
    normalize_with(cap, true)
}

/// Row normalize as the kernel-language example writes it: the squares overwrite the input
/// tile and only the row sum after them reads them.
fn normalize_squares_summed(cap: usize) -> Prog {
    normalize_with(cap, false)
}

fn normalize_with(cap: usize, squares_read_again: bool) -> Prog {
    let mut p = Prog::new(2);
    let b4 = cap * 4;
    let (xl, w, yl) = (p.tile(DType::F32, 0, cap), p.tile(DType::F32, b4, cap), p.tile(DType::F32, 2 * b4, cap));
    let s = p.tile(DType::F32, 3 * b4, cap);
    let inv = p.constant(0.125);
    let (r, c, rc) = p.rc();
    p.copy(true, 0, xl, rc);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Sum, dst: s, src: xl, rows: r, cols: c, site: None });
    p.op(bin(BinaryOp::Mul, s, s, inv), r);
    p.0.body.push(BStmt::RowOp { op: BinaryOp::Sub, dst: w, a: xl, b: s, rows: r, cols: c, site: None });
    p.op(bin(BinaryOp::Mul, xl, w, w), rc);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Sum, dst: s, src: xl, rows: r, cols: c, site: None });
    p.op(un(UnaryOp::Rsqrt, s, s), r);
    p.0.body.push(BStmt::RowOp { op: BinaryOp::Mul, dst: yl, a: w, b: s, rows: r, cols: c, site: None });
    if squares_read_again {
        p.op(bin(BinaryOp::Add, yl, yl, xl), rc);
    }
    p.copy(false, 1, yl, rc);
    p
}

/// GELU as the kernel-language example writes it: five instructions over two scratch tiles.
fn gelu_like(cap: usize) -> Prog {
    let mut p = Prog::new(2);
    let b4 = cap * 4;
    let (xl, a, b, yl) = (
        p.tile(DType::F32, 0, cap),
        p.tile(DType::F32, b4, cap),
        p.tile(DType::F32, 2 * b4, cap),
        p.tile(DType::F32, 3 * b4, cap),
    );
    let (k, one, half) = (p.constant(0.75), p.constant(1.0), p.constant(0.5));
    let n = p.n();
    p.copy(true, 0, xl, n);
    p.op(bin(BinaryOp::Mul, a, xl, k), n);
    p.op(un(UnaryOp::Erf, b, a), n);
    p.op(bin(BinaryOp::Add, a, b, one), n);
    p.op(bin(BinaryOp::Mul, b, a, half), n);
    p.op(bin(BinaryOp::Mul, yl, xl, b), n);
    p.copy(false, 1, yl, n);
    p
}

#[test]
fn an_instruction_only_the_next_reads_runs_chained_with_it() {
    let plan = gelu_like(256).plan();
    // b + 1 then * 0.5 would write b over its own operand; (a * 0.5) then x * that does not.
    assert_eq!(plan.segments()[0].chains, vec![4]);
    assert_eq!(
        chain_of(&gelu_like(256).0.body[4], &gelu_like(256).0.body[5]),
        Some(Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Mul,
            swap: true,
            dst: Reg(3),
            a: Reg(1),
            b: Reg(6),
            c: Reg(0)
        })
    );
    // Read again after the pair: both run.
    let mut p = gelu_like(256);
    let n = p.n();
    let last = p.0.body.pop().unwrap();
    p.op(bin(BinaryOp::Add, Reg(3), Reg(3), Reg(2)), n);
    p.0.body.push(last);
    assert_eq!(p.plan().segments()[0].chains, Vec::<usize>::new());
}

#[test]
fn squares_only_a_row_sum_reads_are_summed_without_being_stored() {
    let plan = normalize_squares_summed(256).plan();
    assert_eq!(plan.segments().len(), 1);
    assert_eq!(plan.segments()[0].sums, vec![4], "w * w runs inside the row sum after it");
    assert_eq!(plan.segments()[0].direct_out, vec![(8, Reg(2))], "the per-row multiply writes y itself");
    // The same squares read again by a later instruction must be stored.
    assert_eq!(normalize(256).plan().segments()[0].sums, Vec::<usize>::new());
    // A sum of a value that lives on past the segment (a plain program, no later write first).
    let mut p = Prog::new(2);
    let (x, t, s) = (p.tile(DType::F32, 0, 256), p.tile(DType::F32, 1024, 256), p.tile(DType::F32, 2048, 256));
    let (r, c, rc) = p.rc();
    p.copy(true, 0, x, rc);
    p.op(bin(BinaryOp::Add, t, t, x), rc);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Sum, dst: s, src: t, rows: r, cols: c, site: None });
    p.copy(false, 1, s, r);
    assert_eq!(p.plan().segments()[0].sums, Vec::<usize>::new(), "t accumulates from launch to launch");
}

#[test]
fn elementwise_runs_over_one_count_form_one_segment() {
    let p = flat(64);
    let plan = p.plan();
    let segs = plan.segments();
    assert_eq!(segs.len(), 1);
    assert_eq!((segs[0].first, segs[0].len, segs[0].cols), (0, p.0.body.len(), None));
    assert_eq!(segs[0].direct, vec![(0, p.0.body.len())], "x is read straight from global memory");
    // `a` (capacity 128 at byte 256) reaches over `b` (byte 512): disjoint up to 64 elements.
    assert_eq!(segs[0].limits, vec![Limit { gap: 256, size: 4, width: Width::One }]);
    assert_eq!(plan.written, vec![1]);
}

#[test]
fn rows_and_per_row_values_form_one_segment() {
    let plan = rows(256).plan();
    let segs = plan.segments();
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].len, 10);
    assert!(segs[0].cols.is_some());
    assert_eq!(segs[0].widths[0], Width::Cols);
    assert_eq!(segs[0].widths[6], Width::One, "sqrt over the per-row values");
    let plan = normalize(256).plan();
    assert_eq!(plan.segments()[0].direct, vec![(0, 4)], "read from global memory until the squares overwrite it");
}

#[test]
fn shifted_overlap_count_mismatch_and_rewritten_globals_end_segments() {
    // dst = t[1:], src = t[:n] in place: only a run of at most one unit may fuse.
    let mut p = Prog::new(2);
    let t = p.tile(DType::F32, 0, 64);
    let t1 = p.tile(DType::F32, 4, 63);
    let one = p.constant(1.0);
    let n = p.n();
    p.copy(true, 0, t, n);
    p.op(bin(BinaryOp::Add, t1, t, one), n);
    p.copy(false, 1, t1, n);
    let plan = p.plan();
    assert_eq!(plan.segments()[0].limits, vec![Limit { gap: 4, size: 4, width: Width::One }]);
    // The same bytes as float64 and float32: never.
    let mut p = Prog::new(2);
    let t = p.tile(DType::F32, 0, 64);
    let d = p.tile(DType::F64, 0, 32);
    let n = p.n();
    p.copy(true, 0, t, n);
    p.op(Instr::Cast { dst: d, src: t }, n);
    assert!(p.plan().segments().is_empty());
    // Counts that differ.
    let mut p = Prog::new(2);
    let (t, u) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 256, 64));
    let (n, m) = (p.n(), p.e(Expr::Arg(1)));
    p.op(un(UnaryOp::Exp, u, t), n);
    p.op(un(UnaryOp::Exp, t, u), m);
    assert!(p.plan().segments().is_empty());
    // A register read per element and per row.
    let mut p = Prog::new(2);
    let (t, u) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 256, 64));
    let (r, c, rc) = p.rc();
    p.op(un(UnaryOp::Exp, u, t), r);
    p.0.body.push(BStmt::Reduce { op: ReduceOp::Sum, dst: u, src: t, rows: r, cols: c, site: None });
    let _ = rc;
    assert!(p.plan().segments().is_empty());
    // Copied out to global 1, then copied in from it: two segments.
    let mut p = Prog::new(2);
    let (t, u) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 256, 64));
    let n = p.n();
    p.copy(true, 0, t, n);
    p.copy(false, 1, t, n);
    p.copy(true, 1, u, n);
    p.op(un(UnaryOp::Neg, t, u), n);
    let segs: Vec<(usize, usize)> = p.plan().segments().iter().map(|s| (s.first, s.len)).collect();
    assert_eq!(segs, vec![(0, 2), (2, 2)]);
}

#[test]
fn loop_bodies_are_planned() {
    let mut p = flat(64);
    let body = std::mem::take(&mut p.0.body);
    let (a, b) = (p.e(Expr::Const(0)), p.e(Expr::Const(3)));
    p.0.vars = 1;
    p.0.body.push(BStmt::Loop { var: 0, start: a, end: b, step: 1, body });
    let plan = p.plan();
    assert!(matches!(&plan.steps[..], [Step::Loop(0, inner)] if matches!(&inner[..], [Step::Strip(_)])));
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0
    }
}

/// Output of `p` over `x` with arguments `args`, under `plan`, in bits.
fn run(p: &BlockProgram, plan: &BlockPlan, x: &[f32], args: [i64; 3]) -> Vec<u32> {
    let mut x = x.to_vec();
    let mut y = vec![-7.0f32; x.len()];
    let globals = [
        GlobalBuf { ptr: x.as_mut_ptr() as *mut u8, len: x.len() },
        GlobalBuf { ptr: y.as_mut_ptr() as *mut u8, len: y.len() },
    ];
    let args = [args[0], args[1], args[2], x.len() as i64];
    // SAFETY: both buffers live until the call returns.
    unsafe { run_block_plan(p, plan, &globals, &args, 1) }.unwrap();
    y.iter().map(|v| v.to_bits()).collect()
}

/// `p` strip by strip (strips of `bytes`) writes what it writes statement by statement.
fn same_both_ways(p: &Prog, bytes: usize, x: &[f32], args: [i64; 3]) -> Vec<u32> {
    let mut plan = p.plan();
    plan.strip_bytes = bytes;
    assert!(!plan.segments().is_empty());
    let want = run(&p.0, &BlockPlan::unfused(&p.0), x, args);
    assert_eq!(run(&p.0, &plan, x, args), want, "strips of {bytes} bytes, arguments {args:?}");
    want
}

#[test]
fn strips_write_what_single_statements_write() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cap = 1000;
    let x: Vec<f32> = (0..1 << 16).map(|_| rng.f32()).collect();
    let (f, r, nz, sq) = (flat(cap), rows(cap), normalize(cap), normalize_squares_summed(cap));
    let g = gelu_like(cap);
    for _ in 0..40 {
        let bytes = [1, 100, 700, 3000, 1 << 20][rng.below(5)];
        let n = rng.below(cap + 1) as i64;
        let out = same_both_ways(&f, bytes, &x, [n, 0, 0]);
        assert!(out[n as usize..].iter().all(|&v| v == (-7.0f32).to_bits()), "nothing past the count");
        let cols = 1 + rng.below(40);
        let rows = rng.below(cap / cols + 1) as i64;
        same_both_ways(&r, bytes, &x, [0, rows, cols as i64]);
        // The normalize program's per-row scratch holds 250 rows past its 3 KiB start.
        same_both_ways(&nz, bytes, &x, [0, rows.min(250), cols as i64]);
        same_both_ways(&sq, bytes, &x, [0, rows.min(250), cols as i64]);
        same_both_ways(&g, bytes, &x, [n, 0, 0]);
    }
}

#[test]
fn shifted_overlap_matches_reading_the_source_first() {
    // t[1:] = t[:n] + 1, then u = t * t: element i of u needs element i - 1 of the copy in.
    let mut p = Prog::new(2);
    let t = p.tile(DType::F32, 0, 64);
    let t1 = p.tile(DType::F32, 4, 63);
    let u = p.tile(DType::F32, 256, 64);
    let one = p.constant(1.0);
    let n = p.n();
    p.copy(true, 0, t, n);
    p.op(bin(BinaryOp::Add, t1, t, one), n);
    p.op(bin(BinaryOp::Mul, u, t, t), n);
    p.copy(false, 1, u, n);
    let x: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    for n in [0usize, 1, 2, 17, 63] {
        for bytes in [8, 40, 1 << 20] {
            let out = same_both_ways(&p, bytes, &x, [n as i64, 0, 0]);
            for i in 0..n {
                let v = if i == 0 { x[0] } else { x[i - 1] + 1.0 };
                assert_eq!(f32::from_bits(out[i]), v * v, "element {i} of {n}");
            }
        }
    }
}

#[test]
fn overlapping_global_buffers_run_unfused() {
    // y is x: the in-place kernel still matches the statement-by-statement run.
    let p = flat(256);
    let mut plan = p.plan();
    plan.strip_bytes = 64;
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    let run_in_place = |plan: &BlockPlan| {
        let mut v = x.clone();
        let g = GlobalBuf { ptr: v.as_mut_ptr() as *mut u8, len: v.len() };
        // SAFETY: `v` lives until the call returns.
        unsafe { run_block_plan(&p.0, plan, &[g, g], &[200, 0, 0, 256], 1) }.unwrap();
        v.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
    };
    assert_eq!(run_in_place(&plan), run_in_place(&BlockPlan::unfused(&p.0)));
}

#[test]
fn segments_with_long_arithmetic_prefetch_their_next_tile() {
    let (f, r) = (flat(64), rows(64));
    assert!(f.plan().segments().iter().all(|s| s.prefetch), "an erf segment prefetches");
    assert!(r.plan().segments().iter().all(|s| s.prefetch), "row softmax prefetches");
    // One instruction between a copy in and a copy out: the hardware prefetcher alone.
    let mut p = Prog::new(2);
    let (t, u, one) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 256, 64), p.constant(1.0));
    let n = p.n();
    p.copy(true, 0, t, n);
    p.op(bin(BinaryOp::Add, u, t, one), n);
    p.copy(false, 1, u, n);
    let plan = p.plan();
    assert_eq!(plan.segments().len(), 1);
    assert!(!plan.segments()[0].prefetch);
    // A prefetch reaching past the end of the input changes nothing.
    let x: Vec<f32> = (0..64).map(|i| i as f32 - 20.0).collect();
    let out = same_both_ways(&f, 1 << 20, &x, [48, 0, 0]);
    assert_eq!(out.len(), 64);
}

/// Output of the prepared `p` over `x` with arguments `args`, in bits.
fn run_prepared(p: &crate::block::PreparedBlock, x: &[f32], args: [i64; 3]) -> Vec<u32> {
    let mut x = x.to_vec();
    let mut y = vec![-7.0f32; x.len()];
    let globals = [
        GlobalBuf { ptr: x.as_mut_ptr() as *mut u8, len: x.len() },
        GlobalBuf { ptr: y.as_mut_ptr() as *mut u8, len: y.len() },
    ];
    let args = [args[0], args[1], args[2], x.len() as i64];
    // SAFETY: both buffers live until the call returns.
    unsafe { p.run(&globals, &args, 1) }.unwrap();
    y.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_prepared_program_runs_as_a_fresh_plan_on_every_launch() {
    let mut rng = Rng(0x5151);
    let x: Vec<f32> = (0..4096).map(|_| rng.f32()).collect();
    for p in [flat(1000), rows(1000), normalize(1000)] {
        let prepared = crate::block::PreparedBlock::new(p.0.clone()).unwrap();
        assert_eq!(prepared.plan, p.plan());
        // Several launches with different counts reuse the one plan.
        for args in [[1000, 25, 40], [17, 3, 7], [0, 0, 5], [999, 250, 4]] {
            let want = run(&p.0, &BlockPlan::unfused(&p.0), &x, args);
            assert_eq!(run_prepared(&prepared, &x, args), want, "arguments {args:?}");
        }
    }
}

#[test]
fn a_prepared_program_is_verified() {
    let mut p = Prog::new(2);
    let t = p.tile(DType::F32, (1 << 20) - 8, 64);
    let n = p.n();
    p.copy(true, 0, t, n);
    let e = crate::block::PreparedBlock::new(p.0).unwrap_err();
    assert!(e.message.contains("past the Unified Buffer"), "{}", e.message);
}

#[test]
fn every_launch_starts_with_a_zeroed_unified_buffer() {
    // The first program fills the Unified Buffer; the second copies out a local tensor it
    // never wrote, on the same thread: zeros, not the first launch's data.
    let x: Vec<f32> = (0..256).map(|i| i as f32 + 1.0).collect();
    let mut fill = Prog::new(2);
    let t = fill.tile(DType::F32, 0, 256);
    let n = fill.n();
    fill.copy(true, 0, t, n);
    fill.copy(false, 1, t, n);
    let first = run(&fill.0, &fill.plan(), &x, [256, 0, 0]);
    assert_eq!(first, x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let mut stale = Prog::new(2);
    let u = stale.tile(DType::F32, 0, 256);
    let n = stale.n();
    stale.copy(false, 1, u, n);
    let out = run(&stale.0, &stale.plan(), &x, [256, 0, 0]);
    assert!(out.iter().all(|&b| b == 0), "stale data in a fresh Unified Buffer");
}

#[test]
fn an_instruction_writes_straight_to_global_memory_in_place_of_a_copy_out() {
    // z = x + y: both copies in and the copy out need not run.
    let mut p = Prog::new(3);
    let (xl, yl, zl) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 256, 64), p.tile(DType::F32, 512, 64));
    let n = p.n();
    p.copy(true, 0, xl, n);
    p.copy(true, 1, yl, n);
    p.op(bin(BinaryOp::Add, zl, xl, yl), n);
    p.copy(false, 2, zl, n);
    let segs = p.plan().segments().into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(segs[0].direct_out, vec![(3, zl)]);
    // Written twice (in place), or read again after the copy: the copy out runs.
    let mut p = Prog::new(3);
    let (xl, zl) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 512, 64));
    let n = p.n();
    p.copy(true, 0, xl, n);
    p.op(bin(BinaryOp::Add, zl, xl, xl), n);
    p.op(bin(BinaryOp::Mul, zl, zl, xl), n);
    p.copy(false, 2, zl, n);
    assert!(p.plan().segments()[0].direct_out.is_empty());
    let mut p = Prog::new(3);
    let (xl, zl, wl) = (p.tile(DType::F32, 0, 64), p.tile(DType::F32, 512, 64), p.tile(DType::F32, 1024, 64));
    let n = p.n();
    p.copy(true, 0, xl, n);
    p.op(bin(BinaryOp::Add, zl, xl, xl), n);
    p.copy(false, 2, zl, n);
    p.op(bin(BinaryOp::Mul, wl, zl, zl), n);
    p.copy(false, 1, wl, n);
    assert_eq!(p.plan().segments()[0].direct_out, vec![(4, wl)], "zl is read after its copy out; wl is not");
}
