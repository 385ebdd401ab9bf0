//! Tests of stencil programs and sweeps against a direct per-cell evaluation.

use crate::isa;
use crate::stencil::sweep::{blocking, sweep, Fixed, Layout};
use crate::stencil::{BinOp, Instr, Operand, Program, UnOp};

/// The 5-point Jacobi body `(n + s + w + e) * c` on a grid with rows of `w` cells.
fn jacobi(w: usize, c: f64) -> Program {
    let r = |o: isize| Operand::Read { field: 0, offset: o };
    let w = w as isize;
    Program {
        instrs: vec![
            Instr::Bin { op: BinOp::Add, a: r(-w), b: r(w), dest: Some(0) },
            Instr::Bin { op: BinOp::Add, a: Operand::Tmp(0), b: r(-1), dest: Some(1) },
            Instr::Bin { op: BinOp::Add, a: Operand::Tmp(1), b: r(1), dest: Some(0) },
            Instr::Bin { op: BinOp::Mul, a: Operand::Tmp(0), b: Operand::Const(c), dest: None },
        ],
        tmps: 2,
    }
}

/// One step computed cell by cell, the fixed cells from `fixed`.
fn reference(u: &[f32], rows: usize, cols: usize, c: f32, fixed: &dyn Fn(usize) -> f32) -> Vec<f32> {
    let mut out = vec![0.0; u.len()];
    for i in 0..rows {
        for j in 0..cols {
            let k = i * cols + j;
            out[k] = if i == 0 || j == 0 || i + 1 == rows || j + 1 == cols {
                fixed(k)
            } else {
                (u[k - cols] + u[k + cols] + u[k - 1] + u[k + 1]) * c
            };
        }
    }
    out
}

fn serial(n: usize, f: &(dyn Fn(usize) + Sync)) {
    (0..n).rev().for_each(f);
}

fn grid(rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|k| ((k * 7919) % 1013) as f32 / 101.0 - 3.0).collect()
}

#[test]
fn one_step_matches_per_cell_reference_for_fill_and_skip() {
    let (rows, cols) = (37, 53);
    let u = grid(rows, cols);
    let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
    let prog = jacobi(cols, 0.25);
    let mut out = vec![0.0f32; u.len()];
    sweep(&prog, &l, &[&u], Fixed::Const(-1.5), &mut out, None, 1, 2, 1 << 20, &serial).unwrap();
    assert_eq!(out, reference(&u, rows, cols, 0.25, &|_| -1.5));
    sweep(&prog, &l, &[&u], Fixed::From(&u), &mut out, None, 1, 2, 1 << 20, &serial).unwrap();
    assert_eq!(out, reference(&u, rows, cols, 0.25, &|k| u[k]));
}

#[test]
fn temporal_blocking_is_bit_identical_to_single_steps() {
    let (rows, cols) = (301, 67);
    let u = grid(rows, cols);
    let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
    let prog = jacobi(cols, 0.2);
    // A small cache forces several bands and blocks of several steps.
    let plan = blocking(&l, 4, 23, 2, 64 * cols * 4);
    assert!(plan.steps > 1 && plan.band < rows, "{plan:?}");
    for fixed in [Fixed::Const(0.5f32), Fixed::From(&u)] {
        let mut want = u.clone();
        for step in 0..23 {
            let first = if let Fixed::From(a) = fixed { a.to_vec() } else { vec![0.5; u.len()] };
            want = reference(&want, rows, cols, 0.2, &|k| first[k]);
            let _ = step;
        }
        let mut got = vec![0.0f32; u.len()];
        sweep(&prog, &l, &[&u], fixed, &mut got, None, 23, 2, 64 * cols * 4, &serial).unwrap();
        assert_eq!(got, want);
        // The caller's spare buffer (any contents) in place of an allocated one.
        let (mut again, mut spare) = (vec![0.0f32; u.len()], vec![f32::NAN; u.len()]);
        sweep(&prog, &l, &[&u], fixed, &mut again, Some(&mut spare), 23, 2, 64 * cols * 4, &serial).unwrap();
        assert_eq!(again, want);
        let short = &mut spare[1..];
        let e = sweep(&prog, &l, &[&u], fixed, &mut again, Some(short), 23, 2, 64 * cols * 4, &serial);
        assert!(e.unwrap_err().contains("spare"));
    }
}

#[test]
fn every_isa_gives_the_same_bits() {
    let (rows, cols) = (40, 1100);
    let u = grid(rows, cols);
    let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
    let mut prog = jacobi(cols, 0.25);
    prog.instrs.insert(3, Instr::Bin { op: BinOp::Min, a: Operand::Tmp(0), b: Operand::Const(9.0), dest: Some(1) });
    prog.instrs.insert(4, Instr::Un { op: UnOp::Abs, a: Operand::Tmp(1), dest: Some(0) });
    prog.instrs.insert(5, Instr::Un { op: UnOp::Sqrt, a: Operand::Tmp(0), dest: Some(1) });
    prog.instrs[6] = Instr::Bin { op: BinOp::Mul, a: Operand::Tmp(1), b: Operand::Const(0.25), dest: None };
    let mut results = Vec::new();
    isa::each_isa(|_| {
        let mut out = vec![0.0f32; u.len()];
        sweep(&prog, &l, &[&u], Fixed::Const(0.0), &mut out, None, 3, 2, 1 << 20, &serial).unwrap();
        results.push(out);
    });
    let c = 0.25f32;
    let one = |v: &[f32]| {
        reference(v, rows, cols, 1.0, &|_| 0.0)
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                let (i, j) = (k / cols, k % cols);
                if i == 0 || j == 0 || i + 1 == rows || j + 1 == cols {
                    0.0
                } else {
                    (s.min(9.0)).abs().sqrt() * c
                }
            })
            .collect::<Vec<f32>>()
    };
    let want = one(&one(&one(&u)));
    for r in &results {
        assert_eq!(r, &want);
    }
}

#[test]
fn three_dimensional_grid_and_bad_layouts() {
    let n = 9;
    let u: Vec<f64> = (0..n * n * n).map(|k| (k % 17) as f64).collect();
    let l = Layout { shape: [n, n, n], lo: [1, 1, 1], hi: [1, 1, 1] };
    let r = |d: [isize; 3]| Operand::Read { field: 0, offset: l.offset(d) };
    let prog = Program {
        instrs: vec![
            Instr::Bin { op: BinOp::Add, a: r([-1, 0, 0]), b: r([1, 0, 0]), dest: Some(0) },
            Instr::Bin { op: BinOp::Sub, a: Operand::Tmp(0), b: r([0, 0, 1]), dest: None },
        ],
        tmps: 1,
    };
    let mut out = vec![0.0f64; u.len()];
    sweep(&prog, &l, &[&u], Fixed::Const(7.0), &mut out, None, 1, 2, 1 << 20, &serial).unwrap();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let c = (i * n + j) * n + k;
                let inside = (1..n - 1).contains(&i) && (1..n - 1).contains(&j) && (1..n - 1).contains(&k);
                let want = if inside { u[c - n * n] + u[c + n * n] - u[c + 1] } else { 7.0 };
                assert_eq!(out[c], want, "{i} {j} {k}");
            }
        }
    }
    let small = Layout { shape: [2, n, n], lo: [1, 1, 1], hi: [1, 1, 1] };
    assert!(sweep(
        &prog,
        &small,
        &[&u[..2 * n * n]],
        Fixed::Const(0.0),
        &mut out[..2 * n * n],
        None,
        1,
        2,
        1 << 20,
        &serial
    )
    .is_err());
    let bad = Program { instrs: vec![Instr::Un { op: UnOp::Copy, a: Operand::Tmp(0), dest: None }], tmps: 1 };
    assert!(bad.check(1).is_err());
    let aliased = Program {
        instrs: vec![
            Instr::Un { op: UnOp::Neg, a: r([0, 0, 0]), dest: Some(0) },
            Instr::Un { op: UnOp::Neg, a: Operand::Tmp(0), dest: Some(0) },
            Instr::Un { op: UnOp::Copy, a: Operand::Tmp(0), dest: None },
        ],
        tmps: 1,
    };
    assert!(aliased.check(1).is_err());
}

/// The Jacobi body as one fused sum scaled by `c`.
fn jacobi_sum(w: usize, c: f64) -> Program {
    let r = |o: isize| Operand::Read { field: 0, offset: o };
    let w = w as isize;
    let ops = vec![r(-w), r(w), r(-1), r(1)];
    Program { instrs: vec![Instr::Sum { ops, neg: vec![false; 3], post: Some((BinOp::Mul, c)), dest: None }], tmps: 0 }
}

#[test]
fn fused_sums_give_the_bits_of_binary_chains() {
    let (rows, cols) = (31, 45);
    let u = grid(rows, cols);
    let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
    let mut a = vec![0.0f32; u.len()];
    let mut b = vec![0.0f32; u.len()];
    sweep(&jacobi(cols, 0.3), &l, &[&u], Fixed::Const(0.0), &mut a, None, 4, 2, 1 << 20, &serial).unwrap();
    sweep(&jacobi_sum(cols, 0.3), &l, &[&u], Fixed::Const(0.0), &mut b, None, 4, 2, 1 << 20, &serial).unwrap();
    assert_eq!(a, b);
    // (n - s + w - c) / 3 against the same chain of binary instructions.
    let r = |o: isize| Operand::Read { field: 0, offset: o };
    let w = cols as isize;
    let chain = Program {
        instrs: vec![
            Instr::Bin { op: BinOp::Sub, a: r(-w), b: r(w), dest: Some(0) },
            Instr::Bin { op: BinOp::Add, a: Operand::Tmp(0), b: r(-1), dest: Some(1) },
            Instr::Bin { op: BinOp::Sub, a: Operand::Tmp(1), b: r(0), dest: Some(0) },
            Instr::Bin { op: BinOp::Div, a: Operand::Tmp(0), b: Operand::Const(3.0), dest: None },
        ],
        tmps: 2,
    };
    let fused = Program {
        instrs: vec![Instr::Sum {
            ops: vec![r(-w), r(w), r(-1), r(0)],
            neg: vec![true, false, true],
            post: Some((BinOp::Div, 3.0)),
            dest: None,
        }],
        tmps: 0,
    };
    sweep(&chain, &l, &[&u], Fixed::Const(0.0), &mut a, None, 3, 2, 1 << 20, &serial).unwrap();
    sweep(&fused, &l, &[&u], Fixed::Const(0.0), &mut b, None, 3, 2, 1 << 20, &serial).unwrap();
    assert_eq!(a, b);
    let bad = Program {
        instrs: vec![Instr::Sum { ops: vec![r(0), Operand::Const(1.0)], neg: vec![false], post: None, dest: None }],
        tmps: 0,
    };
    assert!(bad.check(1).is_err());
}

#[test]
fn wavefront_blocking_matches_plain_steps() {
    // Rows of 300 cells are swept as a wavefront; a cache of 0 bytes turns blocking off.
    let (rows, cols) = (123, 300);
    let u = grid(rows, cols);
    let v: Vec<f32> = u.iter().map(|x| x * 0.5 - 1.0).collect();
    let l = Layout { shape: [rows, cols, 1], lo: [2, 1, 0], hi: [0, 1, 0] };
    assert!(blocking(&l, 4, 37, 2, 1 << 20).wave);
    assert!(!blocking(&l, 4, 37, 2, 0).wave);
    let r = |f: usize, d: [isize; 3]| Operand::Read { field: f, offset: l.offset(d) };
    let prog = Program {
        instrs: vec![
            Instr::Sum {
                ops: vec![r(0, [-2, 0, 0]), r(0, [0, 1, 0]), r(1, [0, -1, 0])],
                neg: vec![true, false],
                post: Some((BinOp::Mul, 0.4)),
                dest: Some(0),
            },
            Instr::Bin { op: BinOp::Max, a: Operand::Tmp(0), b: r(0, [-1, -1, 0]), dest: None },
        ],
        tmps: 1,
    };
    // Rings of twice the fewest slabs, rounded up to 8 (6 per visit), and of the fewest (one per
    // visit) when the budget leaves too few steps for the larger ones.
    let (big, small) = (blocking(&l, 4, 37, 2, 1 << 20), blocking(&l, 4, 37, 2, 40_000));
    assert_eq!((big.wave, big.group, small.wave, small.group), (true, 6, true, 1), "{big:?} {small:?}");
    for fixed in [Fixed::Const(0.25f32), Fixed::From(&u)] {
        let mut want = vec![0.0f32; u.len()];
        sweep(&prog, &l, &[&u, &v], fixed, &mut want, None, 37, 2, 0, &serial).unwrap();
        for cache in [1 << 20, 40_000] {
            let mut got = vec![0.0f32; u.len()];
            sweep(&prog, &l, &[&u, &v], fixed, &mut got, None, 37, 2, cache, &serial).unwrap();
            assert_eq!(got, want, "cache {cache}");
        }
    }
    // A 3-D grid: planes of 20 x 20 cells.
    let n = 20;
    let w: Vec<f64> = (0..n * n * n).map(|k| ((k * 31) % 97) as f64 / 7.0).collect();
    let l = Layout { shape: [n, n, n], lo: [1, 1, 1], hi: [1, 1, 1] };
    let r = |d: [isize; 3]| Operand::Read { field: 0, offset: l.offset(d) };
    let ops = vec![r([-1, 0, 0]), r([1, 0, 0]), r([0, -1, 0]), r([0, 1, 0]), r([0, 0, -1]), r([0, 0, 1])];
    let heat = Program {
        instrs: vec![Instr::Sum { ops, neg: vec![false; 5], post: Some((BinOp::Div, 6.0)), dest: None }],
        tmps: 0,
    };
    let mut want = vec![0.0f64; w.len()];
    let mut got = vec![0.0f64; w.len()];
    sweep(&heat, &l, &[&w], Fixed::Const(1.0), &mut want, None, 9, 2, 0, &serial).unwrap();
    sweep(&heat, &l, &[&w], Fixed::Const(1.0), &mut got, None, 9, 2, 1 << 20, &serial).unwrap();
    assert_eq!(got, want);
}

#[test]
fn fused_sums_match_the_per_cell_reference_for_every_row_length() {
    // Interior rows shorter than, equal to and just past the sum's 64-cell blocks, on both the
    // band sweep and the wavefront (rows of 256 cells or more).
    for cols in [3, 4, 17, 65, 66, 67, 130, 131, 258, 259, 300] {
        let rows = 9;
        let u = grid(rows, cols);
        let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
        let mut got = vec![0.0f32; u.len()];
        sweep(&jacobi_sum(cols, 0.25), &l, &[&u], Fixed::From(&u), &mut got, None, 1, 2, 1 << 20, &serial).unwrap();
        assert_eq!(got, reference(&u, rows, cols, 0.25, &|k| u[k]), "{cols} columns");
        let mut want = u.clone();
        for _ in 0..5 {
            want = reference(&want, rows, cols, 0.25, &|k| u[k]);
        }
        sweep(&jacobi_sum(cols, 0.25), &l, &[&u], Fixed::From(&u), &mut got, None, 5, 2, 1 << 20, &serial).unwrap();
        assert_eq!(got, want, "{cols} columns, 5 steps");
    }
}
