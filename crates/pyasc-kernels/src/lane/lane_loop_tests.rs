//! Tests of the strip loop: decoded programs against the same loops written lane by lane in
//! plain Rust, on every ISA, for lane counts around the strip and block sizes.

use crate::isa::each_isa;
use crate::lane_loop::{run, LaneOp, LaneProgram, LaneReg, STRIP};
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_ir::tile::{Instr, Reg};
use pyasc_ir::DType;

const LANES: [usize; 10] = [1, 15, 16, 17, 65, 127, 128, 129, 300, 515];

fn bin(op: BinaryOp, d: u16, a: u16, b: u16) -> Instr {
    Instr::Binary { op, dst: Reg(d), a: Reg(a), b: Reg(b) }
}

/// A register of `n` lanes (or one strip-long constant) as bytes.
pub(crate) struct Regs {
    bufs: Vec<Vec<u64>>,
    steps: Vec<usize>,
}

impl Regs {
    pub(crate) fn new(types: &[(DType, bool)], n: usize) -> Regs {
        let bufs = types.iter().map(|&(_, c)| vec![0u64; if c { STRIP } else { n.max(1) }]).collect();
        let steps = types.iter().map(|&(t, c)| if c { 0 } else { t.size() }).collect();
        Regs { bufs, steps }
    }
    pub(crate) fn set<T: Copy>(&mut self, r: usize, v: impl Fn(usize) -> T) {
        let len = self.bufs[r].len() * 8 / std::mem::size_of::<T>();
        let p = self.bufs[r].as_mut_ptr() as *mut T;
        for i in 0..len {
            // SAFETY: `i` lanes of `T` fit the buffer.
            unsafe { p.add(i).write(v(i)) };
        }
    }
    pub(crate) fn get<T: Copy>(&self, r: usize, i: usize) -> T {
        // SAFETY: tests read lanes they wrote.
        unsafe { (self.bufs[r].as_ptr() as *const T).add(i).read() }
    }
    pub(crate) fn lane_regs(&mut self) -> Vec<LaneReg> {
        self.bufs
            .iter_mut()
            .zip(&self.steps)
            .map(|(b, &step)| LaneReg { ptr: b.as_mut_ptr() as *mut u8, step })
            .collect()
    }
}

#[test]
fn an_escape_time_loop_matches_the_scalar_loop() {
    // x, y, n carried; cx, cy, maxiter inputs; two, four, one constants; the rest temporaries.
    use DType::*;
    let types = [
        (F64, false),
        (F64, false),
        (I64, false),
        (F64, false),
        (F64, false),
        (I64, false), // 0-5
        (F64, true),
        (F64, true),
        (I64, true), // 6-8: 2.0, 4.0, 1
        (F64, false),
        (F64, false),
        (F64, false),
        (I64, false),
        (F64, false),
        (F64, false), // 9-14
        (Bool, false),
        (Bool, false),
        (Bool, false),
        (Bool, false), // 15-18: c1, c2, c3, cond
    ];
    let body = [
        bin(BinaryOp::Mul, 9, 3, 3),
        Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Sub,
            swap: true,
            dst: Reg(10),
            a: Reg(4),
            b: Reg(4),
            c: Reg(9),
        },
        Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Mul,
            swap: false,
            dst: Reg(11),
            a: Reg(6),
            b: Reg(3),
            c: Reg(4),
        },
        bin(BinaryOp::Add, 12, 5, 8),
        Instr::Select { dst: Reg(5), cond: Reg(18), a: Reg(12), b: Reg(5) },
        bin(BinaryOp::Add, 3, 10, 0),
        bin(BinaryOp::Add, 4, 11, 1),
        bin(BinaryOp::Mul, 13, 3, 3),
        Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Add,
            swap: true,
            dst: Reg(14),
            a: Reg(4),
            b: Reg(4),
            c: Reg(13),
        },
        bin(BinaryOp::Le, 15, 14, 7),
        bin(BinaryOp::Lt, 16, 5, 2),
        bin(BinaryOp::And, 17, 15, 16),
        bin(BinaryOp::And, 18, 18, 17),
    ];
    let prog = LaneProgram::compile(&body, Reg(18), |r| types[r.0 as usize].0).expect("every instruction decodes");
    each_isa(|isa| {
        for n in LANES {
            let mut regs = Regs::new(&types, n);
            let cx = |i: usize| -2.0 + 3.0 * (i as f64) / (n as f64);
            let cy = |i: usize| if i.is_multiple_of(3) { 0.0 } else { -1.2 + 0.01 * i as f64 };
            regs.set(0, cx);
            regs.set(1, cy);
            regs.set(2, |i| (i % 50) as i64);
            regs.set(6, |_| 2.0f64);
            regs.set(7, |_| 4.0f64);
            regs.set(8, |_| 1i64);
            regs.set(18, |i| u8::from(i % 50 > 0));
            let lane_regs = regs.lane_regs();
            // SAFETY: every register holds `n` lanes of its type (constants STRIP lanes).
            assert!(!unsafe { run(&prog, &lane_regs, n, &mut || false) });
            for i in 0..n {
                let (mut x, mut y, mut k) = (0.0f64, 0.0f64, 0i64);
                while x * x + y * y <= 4.0 && k < (i % 50) as i64 {
                    (x, y) = (x * x - y * y + cx(i), 2.0 * x * y + cy(i));
                    k += 1;
                }
                assert_eq!(regs.get::<i64>(5, i), k, "{isa:?} n={n} lane {i}");
            }
        }
    });
}

#[test]
fn float32_and_integer_instructions_match_lane_by_lane_rust() {
    use DType::*;
    // 0 a, 1 b: f32 inputs; 2 k i32 counter; 3 lim i32; 4 one i32 const; 5 acc f32;
    // 6, 10 f32 temps; 7 cond bool; 8 m bool; 9 w f64; 11 q i32; 12 half f32 const; 13 f32 temp;
    // 14 i32 temp; 15 f64 temp; 16 bool temp.
    let types = [
        (F32, false),
        (F32, false),
        (I32, false),
        (I32, false),
        (I32, true),
        (F32, false),
        (F32, false),
        (Bool, false),
        (Bool, false),
        (F64, false),
        (F32, false),
        (I32, false),
        (F32, true),
        (F32, false),
        (I32, false),
        (F64, false),
        (Bool, false),
    ];
    let un = |op, d: u16, s: u16| Instr::Unary { op, dst: Reg(d), src: Reg(s) };
    let body = [
        bin(BinaryOp::Div, 6, 0, 1),
        un(UnaryOp::Abs, 10, 6),
        un(UnaryOp::Sqrt, 10, 10), // in place
        un(UnaryOp::Neg, 6, 10),
        un(UnaryOp::Square, 13, 6),
        Instr::SelectCmp { cmp: BinaryOp::Gt, dst: Reg(13), a: Reg(5), b: Reg(13), t: Reg(5), f: Reg(13) },
        bin(BinaryOp::Mul, 11, 2, 2),
        bin(BinaryOp::Sub, 11, 11, 3),
        un(UnaryOp::Neg, 14, 11),
        Instr::Cast { dst: Reg(10), src: Reg(14) },
        Instr::Chain {
            op1: BinaryOp::Add,
            op2: BinaryOp::Mul,
            swap: false,
            dst: Reg(13),
            a: Reg(13),
            b: Reg(10),
            c: Reg(12),
        },
        Instr::Select { dst: Reg(5), cond: Reg(7), a: Reg(13), b: Reg(5) },
        Instr::Cast { dst: Reg(15), src: Reg(5) },
        bin(BinaryOp::Sub, 15, 15, 9),
        Instr::Select { dst: Reg(9), cond: Reg(7), a: Reg(15), b: Reg(9) },
        bin(BinaryOp::Ne, 16, 0, 1),
        bin(BinaryOp::Xor, 16, 16, 8),
        Instr::Select { dst: Reg(8), cond: Reg(7), a: Reg(16), b: Reg(8) },
        bin(BinaryOp::Add, 14, 2, 4),
        Instr::Select { dst: Reg(2), cond: Reg(7), a: Reg(14), b: Reg(2) },
        bin(BinaryOp::Lt, 16, 2, 3),
        un(UnaryOp::Not, 16, 16),
        un(UnaryOp::Not, 16, 16),
        bin(BinaryOp::And, 7, 7, 16),
        Instr::Copy { dst: Reg(14), src: Reg(2) },
    ];
    let prog = LaneProgram::compile(&body, Reg(7), |r| types[r.0 as usize].0).expect("every instruction decodes");
    let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.5, -3.25, 1e30, 7e-39];
    let a = |i: usize| special[i % special.len()] * if i.is_multiple_of(4) { 1.0 } else { (i as f32) * 0.37 };
    let b = |i: usize| special[(i / 3) % special.len()] + (i % 5) as f32;
    each_isa(|isa| {
        for n in LANES {
            let mut regs = Regs::new(&types, n);
            regs.set(0, a);
            regs.set(1, b);
            regs.set(3, |i| (i % 7) as i32 + if i % 11 == 0 { 40_000 } else { 0 });
            regs.set(4, |_| 1i32);
            regs.set(12, |_| 0.5f32);
            regs.set(5, |i| i as f32 - 20.0);
            regs.set(9, |i| i as f64 * 0.25);
            regs.set(7, |i| u8::from(i % 7 > 0));
            let lane_regs = regs.lane_regs();
            // SAFETY: every register holds `n` lanes of its type (constants STRIP lanes).
            unsafe { run(&prog, &lane_regs, n, &mut || false) };
            for i in 0..n {
                let (mut k, lim, mut acc, mut w, mut m) =
                    (0i32, regs.get::<i32>(3, i), i as f32 - 20.0, i as f64 * 0.25, false);
                let mut c = i % 7 > 0;
                while c {
                    let t = -(a(i) / b(i)).abs().sqrt();
                    let sq = t * t;
                    let best = if acc > sq { acc } else { sq };
                    let q = k.wrapping_mul(k).wrapping_sub(lim).wrapping_neg();
                    acc = (best + q as f32) * 0.5;
                    w = f64::from(acc) - w;
                    m ^= a(i) != b(i);
                    k += 1;
                    c = k < lim;
                }
                let tag = format!("{isa:?} n={n} lane {i}");
                assert_eq!(regs.get::<i32>(2, i), k, "{tag}");
                assert_eq!(regs.get::<i32>(14, i), k, "{tag}: the copy");
                // Bit for bit, except NaN's sign and payload (no IEEE rule fixes them).
                let got = regs.get::<f32>(5, i);
                assert!(got.to_bits() == acc.to_bits() || (got.is_nan() && acc.is_nan()), "{tag}: {got} {acc}");
                let got = regs.get::<f64>(9, i);
                assert!(got.to_bits() == w.to_bits() || (got.is_nan() && w.is_nan()), "{tag}: {got} {w}");
                assert_eq!(regs.get::<u8>(8, i), u8::from(m), "{tag}");
            }
        }
    });
}

#[test]
fn instructions_without_a_strip_form_leave_the_loop_to_the_tile_vm() {
    let f64s = |_: Reg| DType::F64;
    let ok = [bin(BinaryOp::Add, 1, 0, 0), bin(BinaryOp::Lt, 2, 1, 0)];
    let mixed = |r: Reg| if r.0 == 2 { DType::Bool } else { DType::F64 };
    assert!(LaneProgram::compile(&ok, Reg(2), mixed).is_some());
    // A transcendental function, integer division, a half-precision register, a bool condition
    // of the wrong type.
    let exp = [Instr::Unary { op: UnaryOp::Exp, dst: Reg(1), src: Reg(0) }];
    assert!(LaneProgram::compile(&exp, Reg(2), mixed).is_none());
    let idiv = [bin(BinaryOp::Div, 1, 0, 0)];
    assert!(LaneProgram::compile(&idiv, Reg(2), |r| if r.0 == 2 { DType::Bool } else { DType::I64 }).is_none());
    assert!(LaneProgram::compile(&ok, Reg(2), |r| if r.0 == 2 { DType::Bool } else { DType::F16 }).is_none());
    assert!(LaneProgram::compile(&ok, Reg(2), f64s).is_none());
    let p = LaneProgram::compile(&ok, Reg(2), mixed).unwrap();
    assert!(matches!(p.ops[1], LaneOp::Cmp { d: 2, a: 1, b: 0, .. }));
}

#[test]
fn a_poll_that_asks_to_stop_stops_an_endless_loop() {
    // `while c: x = x + 1` with c never cleared.
    let types = [DType::F64, DType::F64, DType::Bool];
    let body = [bin(BinaryOp::Add, 0, 0, 1)];
    let prog = LaneProgram::compile(&body, Reg(2), |r| types[r.0 as usize]).unwrap();
    let mut regs = Regs::new(&[(DType::F64, false), (DType::F64, true), (DType::Bool, false)], 10);
    regs.set(1, |_| 1.0f64);
    regs.set(2, |_| 1u8);
    let lane_regs = regs.lane_regs();
    let mut calls = 0;
    // SAFETY: every register holds its lanes.
    let stopped = unsafe {
        run(&prog, &lane_regs, 10, &mut || {
            calls += 1;
            calls == 3
        })
    };
    assert!(stopped && calls == 3);
    assert!(regs.get::<f64>(0, 0) > 100.0);
}
