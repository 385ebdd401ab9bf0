//! Tests of the compiled mask loop: random programs over every instruction it assembles,
//! run compiled and on the strip loop from the same registers, compared bit for bit (NaN
//! against NaN) on every register that outlives the loop.

use crate::isa::{self, Isa};
use crate::lane::lane_loop_tests::Regs;
use crate::lane_jit::LaneJit;
use crate::lane_loop::{run, Arith, Cmp, LaneOp, LaneProgram, LaneReg, Ty, Un};
use crate::test_rng::Rng;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::DType;

const LANES: [usize; 7] = [1, 8, 17, 64, 100, 129, 333];

/// Register layout of a generated program: `cond`, the counter and its limit, then lane
/// registers, constants and temporaries.
struct Layout {
    ft: Ty,
    it: Ty,
    /// Type and constness of each register.
    regs: Vec<(Ty, bool)>,
    /// Registers the body may overwrite, by type.
    writable: Vec<(Ty, u16)>,
    /// Registers readable at this point of the body, by type.
    readable: Vec<(Ty, u16)>,
    /// The first temporary.
    temps: u16,
    /// A lane register to update from the last instruction's result.
    pending: Option<(u16, u16, Ty)>,
}

const COND: u16 = 0;
const COUNTER: u16 = 1;
const LIMIT: u16 = 2;
const ONE: u16 = 3;

impl Layout {
    fn new(wide: bool) -> Layout {
        let (ft, it) = if wide { (Ty::F32, Ty::I32) } else { (Ty::F64, Ty::I64) };
        let mut regs = vec![(Ty::Bool, false), (it, false), (it, false), (it, true)];
        let mut writable = Vec::new();
        let mut readable = vec![(Ty::Bool, COND), (it, COUNTER), (it, LIMIT), (it, ONE)];
        for (t, c, n) in [(ft, false, 5), (it, false, 2), (Ty::Bool, false, 1), (ft, true, 2), (Ty::Bool, true, 1)] {
            for _ in 0..n {
                let r = regs.len() as u16;
                regs.push((t, c));
                readable.push((t, r));
                if !c {
                    writable.push((t, r));
                }
            }
        }
        let temps = regs.len() as u16;
        Layout { ft, it, regs, writable, readable, temps, pending: None }
    }

    fn of(&self, rng: &mut Rng, t: Ty) -> u16 {
        let rs: Vec<u16> = self.readable.iter().filter(|(u, _)| *u == t).map(|&(_, r)| r).collect();
        rng.pick(&rs)
    }

    /// A destination of type `t`: a fresh temporary, which half the time then updates a lane
    /// register where the condition holds (as compiled loops update what outlives them: a
    /// lane that has finished keeps its values however long its neighbours run).
    fn dst(&mut self, rng: &mut Rng, t: Ty) -> u16 {
        let r = self.regs.len() as u16;
        self.regs.push((t, false));
        self.readable.push((t, r));
        let ws: Vec<u16> = self.writable.iter().filter(|(u, _)| *u == t).map(|&(_, r)| r).collect();
        if rng.below(2) == 0 && !ws.is_empty() {
            self.pending = Some((rng.pick(&ws), r, t));
        }
        r
    }
}

/// A random loop body over `ops` instructions, ending in the counter update that bounds the loop.
fn program(rng: &mut Rng, wide: bool, ops: usize) -> (LaneProgram, Layout) {
    let mut l = Layout::new(wide);
    let (ft, it) = (l.ft, l.it);
    let mut body = Vec::new();
    let ariths = [Arith::Add, Arith::Sub, Arith::Mul, Arith::Div];
    let cmps = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne];
    for _ in 0..ops {
        let num = if rng.below(3) == 0 { it } else { ft };
        let op = match rng.below(11) {
            0 | 1 => {
                let op = if num == ft { rng.pick(&ariths) } else { rng.pick(&ariths[..3]) };
                let (a, b) = (l.of(rng, num), l.of(rng, num));
                LaneOp::Arith { ty: num, op, d: l.dst(rng, num), a, b }
            }
            2 => {
                let (op1, op2) = (rng.pick(&ariths[..3]), rng.pick(&ariths[..3]));
                let a = l.of(rng, ft);
                let b = if rng.below(3) == 0 { a } else { l.of(rng, ft) };
                let c = l.of(rng, ft);
                LaneOp::Chain { ty: ft, op1, op2, swap: rng.below(2) == 0, d: l.dst(rng, ft), a, b, c }
            }
            3 => {
                let (a, b) = (l.of(rng, num), l.of(rng, num));
                LaneOp::Cmp { ty: num, op: rng.pick(&cmps), d: l.dst(rng, Ty::Bool), a, b }
            }
            4 => {
                let (a, b, t, f) = (l.of(rng, num), l.of(rng, num), l.of(rng, num), l.of(rng, num));
                LaneOp::SelectCmp { ty: num, op: rng.pick(&cmps), d: l.dst(rng, num), a, b, t, f }
            }
            5 => {
                let (a, b) = (l.of(rng, Ty::Bool), l.of(rng, Ty::Bool));
                let op = rng.pick(&[BinaryOp::And, BinaryOp::Or, BinaryOp::Xor]);
                LaneOp::Logic { op, d: l.dst(rng, Ty::Bool), a, b }
            }
            6 => {
                let (ty, op) = match rng.below(6) {
                    0 => (it, Un::Neg),
                    1 => (Ty::Bool, Un::Not),
                    k => (ft, [Un::Neg, Un::Abs, Un::Square, Un::Sqrt][k - 2]),
                };
                let a = l.of(rng, ty);
                LaneOp::Unary { ty, op, d: l.dst(rng, ty), a }
            }
            7 | 8 => {
                let ty = rng.pick(&[ft, it, Ty::Bool]);
                let (c, a, b) = (l.of(rng, Ty::Bool), l.of(rng, ty), l.of(rng, ty));
                let width = if ty == Ty::Bool {
                    1
                } else if wide {
                    4
                } else {
                    8
                };
                LaneOp::Select { width, d: l.dst(rng, ty), c, a, b }
            }
            9 => {
                let (from, to) = rng.pick(&[(it, ft), (Ty::Bool, ft), (Ty::Bool, it)]);
                let a = l.of(rng, from);
                LaneOp::Cast { from, to, d: l.dst(rng, to), a }
            }
            _ => {
                let ty = rng.pick(&[ft, it, Ty::Bool]);
                let a = l.of(rng, ty);
                let width = if ty == Ty::Bool {
                    1
                } else if wide {
                    4
                } else {
                    8
                };
                LaneOp::Copy { width, d: l.dst(rng, ty), a }
            }
        };
        body.push(op);
        if let Some((d, t, ty)) = l.pending.take() {
            let width = if ty == Ty::Bool {
                1
            } else if wide {
                4
            } else {
                8
            };
            body.push(LaneOp::Select { width, d, c: COND, a: t, b: d });
        }
    }
    // counter += cond; cond &= counter < limit.
    let (t, m) = (l.dst_temp(it), l.dst_temp(Ty::Bool));
    body.push(LaneOp::Arith { ty: it, op: Arith::Add, d: t, a: COUNTER, b: ONE });
    body.push(LaneOp::Select { width: if wide { 4 } else { 8 }, d: COUNTER, c: COND, a: t, b: COUNTER });
    body.push(LaneOp::Cmp { ty: it, op: Cmp::Lt, d: m, a: COUNTER, b: LIMIT });
    body.push(LaneOp::Logic { op: BinaryOp::And, d: COND, a: COND, b: m });
    (LaneProgram { ops: body, cond: COND, once: false }, l)
}

impl Layout {
    fn dst_temp(&mut self, t: Ty) -> u16 {
        let r = self.regs.len() as u16;
        self.regs.push((t, false));
        r
    }
}

fn dtype(t: Ty) -> DType {
    match t {
        Ty::F32 => DType::F32,
        Ty::F64 => DType::F64,
        Ty::I32 => DType::I32,
        Ty::I64 => DType::I64,
        Ty::Bool => DType::Bool,
    }
}

/// Registers of `n` lanes filled from `seed`: floats with NaN, infinities and signed zeros,
/// integers around zero and the extremes, limits up to 40.
fn inputs(l: &Layout, n: usize, seed: u64) -> Regs {
    let types: Vec<(DType, bool)> = l.regs.iter().map(|&(t, c)| (dtype(t), c)).collect();
    let mut regs = Regs::new(&types, n);
    let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1.5, -3.25, 1e30, 2.5e-310, 0.75];
    for (r, &(t, c)) in l.regs.iter().enumerate() {
        let mut rng = Rng(seed ^ (r as u64).wrapping_mul(0x1234_5678_9ABC));
        let vals: Vec<u64> = (0..n.max(1)).map(|_| rng.next()).collect();
        // `set` fills whole buffers, past the `n` lanes the loop reads.
        let v = |i: usize| vals[if c { 0 } else { i % vals.len() }];
        let float = |i: usize| {
            let x = v(i);
            if x % 3 == 0 {
                special[(x >> 8) as usize % special.len()]
            } else {
                ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 8.0
            }
        };
        let int = |i: usize| match v(i) % 5 {
            0 => i64::MAX - (v(i) >> 60) as i64,
            1 => i64::MIN + (v(i) >> 60) as i64,
            _ => (v(i) >> 40) as i64 % 100 - 50,
        };
        match t {
            Ty::F64 => regs.set(r, float),
            Ty::F32 => regs.set(r, |i| float(i) as f32),
            Ty::I64 => regs.set(r, int),
            Ty::I32 => regs.set(r, |i| int(i) as i32),
            Ty::Bool => regs.set(r, |i| (v(i) % 4 != 0) as u8),
        }
    }
    regs.set(COUNTER as usize, |_| 0i64);
    if l.it == Ty::I32 {
        regs.set(COUNTER as usize, |_| 0i32);
        regs.set(LIMIT as usize, |i| (i * 7 % 41) as i32);
        regs.set(ONE as usize, |_| 1i32);
    } else {
        regs.set(LIMIT as usize, |i| (i * 7 % 41) as i64);
        regs.set(ONE as usize, |_| 1i64);
    }
    regs
}

fn same_lane(t: Ty, regs: &Regs, other: &Regs, r: usize, i: usize) -> bool {
    match t {
        Ty::F64 => {
            let (x, y) = (regs.get::<f64>(r, i), other.get::<f64>(r, i));
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        Ty::F32 => {
            let (x, y) = (regs.get::<f32>(r, i), other.get::<f32>(r, i));
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        Ty::I64 => regs.get::<i64>(r, i) == other.get::<i64>(r, i),
        Ty::I32 => regs.get::<i32>(r, i) == other.get::<i32>(r, i),
        Ty::Bool => regs.get::<u8>(r, i) == other.get::<u8>(r, i),
    }
}

/// Runs `f` with AVX-512 active, serialised with the tests that force other ISAs (the
/// compiled loop declines to run under them).
fn on_avx512(f: impl FnOnce()) {
    let mut f = Some(f);
    crate::isa::each_isa(|isa| {
        if isa == Isa::Avx512 {
            (f.take().expect("one AVX-512 turn"))();
        }
    });
}

#[test]
fn random_programs_match_the_strip_loop_bit_for_bit() {
    if isa::detected() != Isa::Avx512 {
        let (p, _) = program(&mut Rng(1), false, 8);
        assert!(LaneJit::compile(&p, &|_| false, &|_| true).is_none());
        return;
    }
    let mut compiled = 0;
    let cases = 120;
    on_avx512(|| {
        for case in 0..cases {
            let mut rng = Rng(case);
            let wide = case % 2 == 1;
            // Half the cases keep every register after the loop (short bodies: six mask and 31
            // vector registers hold them), half only the lane registers.
            let all_out = case % 4 < 2;
            let ops = if all_out { 3 + rng.below(6) } else { 6 + rng.below(14) };
            let (prog, l) = program(&mut rng, wide, ops);
            let is_const = |r: u16| l.regs.get(r as usize).is_some_and(|&(_, c)| c);
            let live_out = |r: u16| all_out || r < l.temps;
            let Some(jit) = LaneJit::compile(&prog, &is_const, &live_out) else { continue };
            compiled += 1;
            for n in LANES {
                let mut want = inputs(&l, n, case * 1000 + n as u64);
                let mut got = inputs(&l, n, case * 1000 + n as u64);
                let (wr, gr) = (want.lane_regs(), got.lane_regs());
                // SAFETY: every register holds `n` lanes of its type (constants a strip).
                let stopped = unsafe { run(&prog, &wr, n, &mut || false) };
                // SAFETY: as above.
                let jstopped = unsafe { jit.run(&prog, &gr, n, &mut || false) };
                assert_eq!(jstopped, Some(stopped), "case {case}");
                for (r, &(t, c)) in l.regs.iter().enumerate() {
                    // Temporaries run on in lanes whose neighbours still loop, as many turns as the
                    // grouping of lanes makes them: only lane registers have one right value.
                    if c || r as u16 >= l.temps {
                        continue;
                    }
                    for i in 0..n {
                        assert!(same_lane(t, &want, &got, r, i), "case {case} n={n} register {r} lane {i}: {prog:?}");
                    }
                }
            }
        }
    });
    assert!(compiled * 10 >= cases * 9, "{compiled} of {cases} programs compiled");
}

#[test]
fn a_lower_isa_or_another_layout_declines_and_mixed_widths_do_not_compile() {
    let (prog, l) = program(&mut Rng(7), false, 10);
    let is_const = |r: u16| l.regs.get(r as usize).is_some_and(|&(_, c)| c);
    let Some(jit) = LaneJit::compile(&prog, &is_const, &|_| true) else {
        assert_ne!(isa::detected(), Isa::Avx512);
        return;
    };
    let mut regs = inputs(&l, 64, 3);
    let mut lane_regs = regs.lane_regs();
    crate::isa::each_isa(|isa| {
        // SAFETY: every register holds 64 lanes.
        let got = unsafe { jit.run(&prog, &lane_regs, 64, &mut || false) };
        assert_eq!(got.is_some(), isa == Isa::Avx512, "{isa:?}");
    });
    // A constant handed over as a lane register.
    lane_regs[ONE as usize].step = 8;
    // SAFETY: as above.
    assert!(unsafe { jit.run(&prog, &lane_regs, 64, &mut || false) }.is_none());
    let mixed = LaneProgram {
        ops: vec![
            LaneOp::Cast { from: Ty::F32, to: Ty::F64, d: 1, a: 2 },
            LaneOp::Cmp { ty: Ty::F64, op: Cmp::Lt, d: 0, a: 1, b: 1 },
        ],
        cond: 0,
        once: false,
    };
    assert!(LaneJit::compile(&mixed, &|_| false, &|_| true).is_none());
}

#[test]
fn a_poll_that_asks_to_stop_stops_a_compiled_endless_loop() {
    // `while c: x = x + 1` with c never cleared, over 70 lanes (whole turns and a strip rest).
    let prog = LaneProgram {
        ops: vec![LaneOp::Arith { ty: Ty::F64, op: Arith::Add, d: 1, a: 1, b: 2 }],
        cond: 0,
        once: false,
    };
    let Some(jit) = LaneJit::compile(&prog, &|r| r == 2, &|_| true) else {
        assert_ne!(isa::detected(), Isa::Avx512);
        return;
    };
    let types = [(DType::Bool, false), (DType::F64, false), (DType::F64, true)];
    let mut regs = Regs::new(&types, 70);
    regs.set(0, |_| 1u8);
    regs.set(2, |_| 1.0f64);
    let lane_regs: Vec<LaneReg> = regs.lane_regs();
    let mut calls = 0;
    on_avx512(|| {
        // SAFETY: every register holds its lanes.
        let stopped = unsafe {
            jit.run(&prog, &lane_regs, 70, &mut || {
                calls += 1;
                calls == 3
            })
        };
        assert_eq!(stopped, Some(true));
    });
    assert_eq!(calls, 3);
    // Two budgets of iterations ran on the first group, stored before the return.
    assert!(regs.get::<f64>(1, 0) >= 4096.0, "{}", regs.get::<f64>(1, 0));
}

#[test]
fn the_cache_hands_back_one_assembly_per_program_and_layout() {
    let (prog, l) = program(&mut Rng(11), true, 9);
    let is_const = |r: u16| l.regs.get(r as usize).is_some_and(|&(_, c)| c);
    let a = LaneJit::cached(&prog, &is_const, &|r| r < l.temps);
    let b = LaneJit::cached(&prog, &is_const, &|r| r < l.temps);
    let c = LaneJit::cached(&prog, &is_const, &|_| true);
    match (a, b, c) {
        (Some(a), Some(b), Some(c)) => {
            assert!(std::sync::Arc::ptr_eq(&a, &b));
            assert!(!std::sync::Arc::ptr_eq(&a, &c), "another live-out set is another plan");
        }
        (a, _, _) => assert!(a.is_none() && isa::detected() != Isa::Avx512),
    }
}

#[test]
fn straight_programs_run_once_on_every_lane_compiled_as_on_the_strip_loop() {
    let mut compiled = 0;
    let cases = 60;
    on_avx512(|| {
        for case in 0..cases {
            let mut rng = Rng(case + 5000);
            let wide = case % 2 == 0;
            let ops = 3 + rng.below(6);
            let (mut prog, l) = program(&mut rng, wide, ops);
            prog.once = true;
            let is_const = |r: u16| l.regs.get(r as usize).is_some_and(|&(_, c)| c);
            // Every register outlives the body, so every one has a single right value.
            let Some(jit) = LaneJit::compile(&prog, &is_const, &|_| true) else { continue };
            compiled += 1;
            for n in LANES {
                let seed = case * 1000 + n as u64;
                let (mut want, mut got, before) = (inputs(&l, n, seed), inputs(&l, n, seed), inputs(&l, n, seed));
                let (wr, gr) = (want.lane_regs(), got.lane_regs());
                // SAFETY: every register holds `n` lanes of its type (constants a strip).
                assert!(!unsafe { run(&prog, &wr, n, &mut || false) });
                // SAFETY: as above.
                assert_eq!(unsafe { jit.run(&prog, &gr, n, &mut || false) }, Some(false), "case {case}");
                for (r, &(t, c)) in l.regs.iter().enumerate() {
                    if c {
                        continue;
                    }
                    for i in 0..n {
                        assert!(same_lane(t, &want, &got, r, i), "case {case} n={n} register {r} lane {i}: {prog:?}");
                    }
                }
                // One pass: the counter (zero before) is one exactly where the condition was set.
                for i in 0..n {
                    let cond = before.get::<u8>(COND as usize, i);
                    let counter = if wide {
                        got.get::<i32>(COUNTER as usize, i) as i64
                    } else {
                        got.get::<i64>(COUNTER as usize, i)
                    };
                    assert_eq!(counter, i64::from(cond), "case {case} n={n} lane {i}");
                }
            }
        }
    });
    if isa::detected() == Isa::Avx512 {
        assert!(compiled * 10 >= cases * 8, "{compiled} of {cases} programs compiled");
    }
}
