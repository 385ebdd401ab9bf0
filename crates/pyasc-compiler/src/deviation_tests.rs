//! Unit tests of the deviation pass: which bodies it rewrites and into what.

use super::*;
use pyasc_ir::tile::BufferId;
use pyasc_ir::Shape;

/// Registers: r0 argument x, r1 per-row sum, r2 scalar n, r3 per-row mean (reused for the
/// sum of squares), r4 deviation tile, r5 per-row rstd, r6 / r7 arguments w and b, r8 output.
fn layer_norm(dtype: DType, weighted: bool) -> TileKernel {
    let reg = |kind, row| RegDecl { kind, dtype, row };
    let regs = vec![
        reg(RegKind::Arg(0), false),
        reg(RegKind::Tile, true),
        reg(RegKind::Scalar(pyasc_ir::Scalar::Float(64.0)), false),
        reg(RegKind::Tile, true),
        reg(RegKind::Tile, false),
        reg(RegKind::Tile, true),
        reg(RegKind::Arg(1), false),
        reg(RegKind::Arg(2), false),
        reg(RegKind::Out(0), false),
    ];
    let bin = |op, dst, a, b| Instr::Binary { op, dst: Reg(dst), a: Reg(a), b: Reg(b) };
    let mut body = vec![
        Instr::Reduce { op: ReduceOp::Sum, dst: Reg(1), src: Reg(0) },
        bin(BinaryOp::Div, 3, 1, 2),
        bin(BinaryOp::Sub, 4, 0, 3),
        Instr::ReduceMap { op: ReduceOp::Sum, map: BinaryOp::Mul, dst: Reg(3), a: Reg(4), b: Reg(4) },
        bin(BinaryOp::Div, 5, 3, 2),
    ];
    body.push(if weighted {
        Instr::ScaleShift { op1: BinaryOp::Mul, dst: Reg(8), a: Reg(4), b: Reg(5), scale: Reg(6), shift: Reg(7) }
    } else {
        bin(BinaryOp::Mul, 8, 5, 4)
    });
    TileKernel {
        name: "k".into(),
        shape: Shape(vec![4, 64]),
        perm: vec![0, 1],
        row_len: 64,
        library: None,
        args: (0..3).map(BufferId).collect(),
        arg_views: vec![vec![]; 3],
        outs: vec![BufferId(3)],
        regs,
        body,
        tile_elems: 128,
        program: None,
        locs: vec![],
        fused_ops: 8,
    }
}

#[test]
fn a_layer_norm_reads_its_values_in_both_readers_and_keeps_the_mean_in_a_new_register() {
    let mut k = layer_norm(DType::F32, true);
    assert_eq!(fuse_deviations(&mut k), 1);
    // The mean's register r3 is rewritten by the sum of squares: the mean moved to r9.
    assert_eq!(k.regs.len(), 10);
    assert!(k.regs[9].row && k.regs[9].kind == RegKind::Tile);
    assert_eq!(
        k.body,
        vec![
            Instr::Reduce { op: ReduceOp::Sum, dst: Reg(1), src: Reg(0) },
            Instr::Binary { op: BinaryOp::Div, dst: Reg(9), a: Reg(1), b: Reg(2) },
            Instr::SumSquaredDev { dst: Reg(3), src: Reg(0), center: Reg(9) },
            Instr::Binary { op: BinaryOp::Div, dst: Reg(5), a: Reg(3), b: Reg(2) },
            Instr::Normalize { dst: Reg(8), x: Reg(0), mean: Reg(9), rstd: Reg(5), scale: Reg(6), shift: Reg(7) },
        ]
    );
}

#[test]
fn without_weights_the_scaling_becomes_a_chain() {
    let mut k = layer_norm(DType::F64, false);
    assert_eq!(fuse_deviations(&mut k), 1);
    assert_eq!(
        k.body.last(),
        Some(&Instr::Chain {
            op1: BinaryOp::Sub,
            op2: BinaryOp::Mul,
            swap: false,
            dst: Reg(8),
            a: Reg(0),
            b: Reg(9),
            c: Reg(5)
        })
    );
}

#[test]
fn other_readers_half_precision_and_rewritten_values_are_left_alone() {
    // A reader of another form (the deviation's exponential).
    let mut other = layer_norm(DType::F32, true);
    other.body[5] = Instr::Unary { op: pyasc_ir::op::UnaryOp::Exp, dst: Reg(8), src: Reg(4) };
    // Float16 has no fused kernels.
    let half = layer_norm(DType::F16, true);
    // The values rewritten before the last reader.
    let mut rewritten = layer_norm(DType::F32, true);
    rewritten.regs[0].kind = RegKind::Tile;
    rewritten.body.insert(0, Instr::Copy { dst: Reg(0), src: Reg(6) });
    rewritten.body.insert(5, Instr::Copy { dst: Reg(0), src: Reg(7) });
    // An elementwise kernel has no per-row values.
    let mut flat = layer_norm(DType::F32, true);
    flat.row_len = 0;
    for mut k in [other, half, rewritten, flat] {
        let before = k.clone();
        assert_eq!(fuse_deviations(&mut k), 0, "{:?}", k.body);
        assert_eq!(k, before);
    }
}

#[test]
fn a_mean_not_rewritten_keeps_its_register() {
    let mut k = layer_norm(DType::F32, true);
    // The sum of squares goes to r1 (free after the mean), not the mean's r3.
    k.body[3] = Instr::ReduceMap { op: ReduceOp::Sum, map: BinaryOp::Mul, dst: Reg(1), a: Reg(4), b: Reg(4) };
    k.body[4] = Instr::Binary { op: BinaryOp::Div, dst: Reg(5), a: Reg(1), b: Reg(2) };
    assert_eq!(fuse_deviations(&mut k), 1);
    assert_eq!(k.regs.len(), 9);
    assert_eq!(k.body[2], Instr::SumSquaredDev { dst: Reg(1), src: Reg(0), center: Reg(3) });
    assert!(matches!(k.body[4], Instr::Normalize { mean: Reg(3), .. }));
}

#[test]
fn a_missing_bias_adds_negative_zero_and_a_missing_weight_multiplies_by_one() {
    let chain =
        |op2| Instr::Chain { op1: BinaryOp::Mul, op2, swap: false, dst: Reg(8), a: Reg(5), b: Reg(4), c: Reg(6) };
    for (op2, value) in [(BinaryOp::Mul, -0.0f64), (BinaryOp::Add, 1.0)] {
        let mut k = layer_norm(DType::F32, true);
        k.body[5] = chain(op2);
        assert_eq!(fuse_deviations(&mut k), 1);
        // r9 the moved mean, r10 the identity.
        let RegKind::Scalar(Scalar::Float(v)) = k.regs[10].kind else { panic!("{:?}", k.regs) };
        assert_eq!(v.to_bits(), value.to_bits());
        let (scale, shift) = if op2 == BinaryOp::Mul { (Reg(6), Reg(10)) } else { (Reg(10), Reg(6)) };
        assert_eq!(k.body[4], Instr::Normalize { dst: Reg(8), x: Reg(0), mean: Reg(9), rstd: Reg(5), scale, shift });
    }
}
