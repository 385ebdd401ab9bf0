//! A hard tile budget (the NPU twin's Unified Buffer): tiles never exceed it, and a row that
//! cannot fit is an error naming the user's line.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::error::{ErrorKind, SourceLoc};
use pyasc_ir::op::{Axes, BinaryOp, Op, ReduceOp, UnaryOp};
use pyasc_ir::tile::RegKind;
use pyasc_ir::{DType, Graph, Shape};

fn opts(bytes: usize, hard: bool) -> CompileOptions {
    CompileOptions { tile_budget_bytes: bytes, tile_budget_hard: hard, verify_each_pass: true, ..Default::default() }
}

/// Bytes per element of the kernel's tile and argument registers (each register counted once).
fn reg_bytes(k: &pyasc_ir::tile::TileKernel) -> usize {
    k.regs.iter().filter(|r| matches!(r.kind, RegKind::Tile | RegKind::Arg(_))).map(|r| r.dtype.size()).sum()
}

#[test]
fn elementwise_tiles_stay_under_a_hard_budget() {
    let build = || {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![1 << 20]));
        let y = g.add_input(VType::strong(DType::F32), Shape(vec![1 << 20]));
        let e = g.unary(UnaryOp::Exp, x, None).unwrap();
        let s = g.unary(UnaryOp::Sin, y, None).unwrap();
        let z = g.binary(BinaryOp::Mul, e, s, None).unwrap();
        g.outputs.push(z);
        g
    };
    // 1000 bytes: a soft budget still gives the 256-element floor; a hard one stays under.
    let soft = compile(build(), &opts(1000, false)).unwrap();
    assert_eq!(soft.plan.kernels[0].tile_elems, 256);
    let hard = compile(build(), &opts(1000, true)).unwrap();
    let k = &hard.plan.kernels[0];
    assert!(k.tile_elems >= 1 && k.tile_elems * reg_bytes(k) <= 1000, "{} x {}", k.tile_elems, reg_bytes(k));
    // 192 KiB: whole multiples of 256 elements, within the budget.
    let ub = compile(build(), &opts(192 * 1024, true)).unwrap();
    let k = &ub.plan.kernels[0];
    assert_eq!(k.tile_elems % 256, 0);
    assert!(k.tile_elems * reg_bytes(k) <= 192 * 1024);
}

#[test]
fn a_row_longer_than_a_hard_budget_is_an_error_at_its_line() {
    let build = |cols: usize| {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![4, cols]));
        let loc = Some(SourceLoc { file: "model.py".into(), line: 7 });
        let e = g.unary(UnaryOp::Exp, x, loc.clone()).unwrap();
        let s = g.apply(Op::Reduce { op: ReduceOp::Sum, axes: Axes(0b10), keepdims: false }, &[e], loc).unwrap();
        g.outputs.push(s);
        g
    };
    let err = compile(build(100_000), &opts(192 * 1024, true)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutOfMemory);
    assert!(err.message.contains("Unified Buffer"), "{}", err.message);
    assert_eq!(err.loc.as_ref().map(|l| l.line), Some(7));
    // The same row under a soft budget compiles (one row per tile), and a short row fits.
    assert!(compile(build(100_000), &opts(192 * 1024, false)).is_ok());
    let ok = compile(build(1000), &opts(192 * 1024, true)).unwrap();
    assert!(ok.plan.kernels.iter().all(|k| k.tile_elems * reg_bytes(k) <= 192 * 1024));
}
