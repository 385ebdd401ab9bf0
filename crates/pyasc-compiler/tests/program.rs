//! Structured tile programs built directly: loop nests with carried registers, loads and
//! stores with index maps and 16-bit storage, checked by the plan verifier and printed.

use pyasc_ir::op::{BinaryOp, ReduceOp, UnaryOp};
use pyasc_ir::print::kernel_to_string;
use pyasc_ir::program::{IndexMap, Loop, Program, Stmt};
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, Instr, KernelPlan, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::{DType, Scalar, Shape};

fn buffer(dtype: DType, dims: &[usize], kind: BufferKind) -> BufferDecl {
    BufferDecl { dtype, shape: Shape(dims.to_vec()), kind }
}

fn tile(dtype: DType) -> RegDecl {
    RegDecl { dtype, kind: RegKind::Tile, row: false }
}

fn kernel(shape: &[usize], args: usize, outs: usize, regs: Vec<RegDecl>, program: Program) -> TileKernel {
    TileKernel {
        name: "k".into(),
        shape: Shape(shape.to_vec()),
        perm: (0..shape.len()).collect(),
        row_len: 0,
        library: None,
        args: (0..args as u32).map(BufferId).collect(),
        arg_views: vec![Vec::new(); args],
        outs: (args as u32..(args + outs) as u32).map(BufferId).collect(),
        regs,
        body: Vec::new(),
        tile_elems: 4,
        program: Some(program),
        locs: Vec::new(),
        fused_ops: 1,
    }
}

fn op(i: Instr) -> Stmt {
    Stmt::Op(i)
}

/// Row max and sum of exp(x - max) of an (r, c) float32 array in one pass over each row,
/// `step` columns at a time: the running max `m` and sum `s` are carried across chunks.
fn online_softmax(r: usize, c: usize, step: usize) -> KernelPlan {
    let f = DType::F32;
    let regs = vec![
        tile(f), // r0: x chunk (level 1)
        tile(f), // r1: m, running max (level 0)
        tile(f), // r2: s, running sum (level 0)
        RegDecl { dtype: f, kind: RegKind::Scalar(Scalar::Float(f64::NEG_INFINITY)), row: false }, // r3
        RegDecl { dtype: f, kind: RegKind::Scalar(Scalar::Float(0.0)), row: false }, // r4
        tile(f), // r5: chunk max (level 0)
        tile(f), // r6: new max (level 0)
        tile(f), // r7: x - new max (level 1)
        tile(f), // r8: exp of it (level 1)
        tile(f), // r9: chunk sum (level 0)
        tile(f), // r10: rescale factor exp(m - new max) (level 0)
        tile(f), // r11: new sum (level 0)
    ];
    let levels = vec![1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0];
    let body = vec![
        op(Instr::Copy { dst: Reg(1), src: Reg(3) }),
        op(Instr::Copy { dst: Reg(2), src: Reg(4) }),
        Stmt::Loop(Loop {
            axis: 1,
            step,
            carried: vec![Reg(1), Reg(2)],
            body: vec![
                Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Identity },
                op(Instr::Reduce { op: ReduceOp::Max, dst: Reg(5), src: Reg(0) }),
                op(Instr::Binary { op: BinaryOp::Max, dst: Reg(6), a: Reg(1), b: Reg(5) }),
                op(Instr::Binary { op: BinaryOp::Sub, dst: Reg(7), a: Reg(0), b: Reg(6) }),
                op(Instr::Unary { op: UnaryOp::Exp, dst: Reg(8), src: Reg(7) }),
                op(Instr::Reduce { op: ReduceOp::Sum, dst: Reg(9), src: Reg(8) }),
                op(Instr::Binary { op: BinaryOp::Sub, dst: Reg(5), a: Reg(1), b: Reg(6) }),
                op(Instr::Unary { op: UnaryOp::Exp, dst: Reg(10), src: Reg(5) }),
                op(Instr::Chain {
                    op1: BinaryOp::Mul,
                    op2: BinaryOp::Add,
                    swap: false,
                    dst: Reg(11),
                    a: Reg(2),
                    b: Reg(10),
                    c: Reg(9),
                }),
                op(Instr::Copy { dst: Reg(1), src: Reg(6) }),
                op(Instr::Copy { dst: Reg(2), src: Reg(11) }),
            ],
        }),
        Stmt::Store { src: Reg(1), out: 0, map: IndexMap::Identity },
        Stmt::Store { src: Reg(2), out: 1, map: IndexMap::Identity },
    ];
    KernelPlan {
        buffers: vec![
            buffer(f, &[r, c], BufferKind::Input(0)),
            buffer(f, &[r], BufferKind::Computed),
            buffer(f, &[r, 1], BufferKind::Computed),
        ],
        kernels: vec![kernel(&[r, c], 1, 2, regs, Program { levels, body })],
        outputs: vec![BufferId(1), BufferId(2)],
        stack_columns: Vec::new(),
    }
}

#[test]
fn online_softmax_loop_nest_verifies_and_prints() {
    let plan = online_softmax(6, 100, 32);
    plan.verify().unwrap();
    let text = kernel_to_string(&plan.kernels[0]);
    assert!(text.contains("r1: float32 tile (level 0)"), "{text}");
    assert!(text.contains("r0: float32 tile (level 1)"), "{text}");
    assert!(
        text.contains("  loop axis 1 step 32 carry [r1, r2] {\n    r0 = load b0\n    r5 = reduce_max(r0)\n"),
        "{text}"
    );
    assert!(text.contains("    r11 = add(mul(r2, r10), r9)\n"), "{text}");
    assert!(text.contains("  }\n  store b1 = r1\n  store b2 = r2\n"), "{text}");
}

fn body_of(plan: &mut KernelPlan) -> &mut Vec<Stmt> {
    let Some(p) = plan.kernels[0].program.as_mut() else { unreachable!() };
    let Stmt::Loop(l) = &mut p.body[2] else { unreachable!() };
    &mut l.body
}

#[test]
fn loop_scoping_and_levels_are_checked() {
    // Not carrying the running sum: the body may not update it.
    let mut bad = online_softmax(6, 100, 32);
    let Some(p) = bad.kernels[0].program.as_mut() else { unreachable!() };
    let Stmt::Loop(l) = &mut p.body[2] else { unreachable!() };
    l.carried.pop();
    assert!(bad.verify().unwrap_err().message.contains("does not carry"));

    // A value of the loop body read after the loop.
    let mut bad = online_softmax(6, 100, 32);
    let Some(p) = bad.kernels[0].program.as_mut() else { unreachable!() };
    p.body.push(Stmt::Store { src: Reg(9), out: 1, map: IndexMap::Identity });
    assert!(bad.verify().unwrap_err().message.contains("before it is written"));

    // Storing a chunk value where per-row values go, and reducing a per-row value.
    let mut bad = online_softmax(6, 100, 32);
    body_of(&mut bad).push(Stmt::Store { src: Reg(8), out: 0, map: IndexMap::Identity });
    assert!(bad.verify().is_err());
    let mut bad = online_softmax(6, 100, 32);
    body_of(&mut bad).push(Stmt::Op(Instr::Reduce { op: ReduceOp::Sum, dst: Reg(5), src: Reg(9) }));
    assert!(bad.verify().is_err());

    // Per-row results from chunk values need a reduction.
    let mut bad = online_softmax(6, 100, 32);
    body_of(&mut bad).insert(1, Stmt::Op(Instr::Unary { op: UnaryOp::Exp, dst: Reg(5), src: Reg(0) }));
    assert!(bad.verify().unwrap_err().message.contains("mixes levels"));

    // Loops walk the trailing axes.
    let mut bad = online_softmax(6, 100, 32);
    let Some(p) = bad.kernels[0].program.as_mut() else { unreachable!() };
    let Stmt::Loop(l) = &mut p.body[2] else { unreachable!() };
    l.axis = 0;
    assert!(bad.verify().unwrap_err().message.contains("trailing axes"));

    // Memory registers have no place in a structured program.
    let mut bad = online_softmax(6, 100, 32);
    bad.kernels[0].regs[0].kind = RegKind::Arg(0);
    assert!(bad.verify().is_err());
}

/// y[i, j] = x[i, j] + x[i, j + 1] + x[i, j + 2] - 2 * x[i + 1, j + 1]: a stencil over the
/// interior, reading a padded (r + 1, c + 2) array through constant offsets.
fn stencil(r: usize, c: usize, store: IndexMap, out_dims: &[usize]) -> KernelPlan {
    let f = DType::F32;
    let regs = vec![
        tile(f),
        tile(f),
        tile(f),
        tile(f),
        tile(f),
        tile(f),
        RegDecl { dtype: f, kind: RegKind::Scalar(Scalar::Float(2.0)), row: false },
        tile(f),
        tile(f),
    ];
    let body = vec![
        Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Offset(vec![0, 0]) },
        Stmt::Load { dst: Reg(1), arg: 0, map: IndexMap::Offset(vec![0, 1]) },
        Stmt::Load { dst: Reg(2), arg: 0, map: IndexMap::Offset(vec![0, 2]) },
        Stmt::Load { dst: Reg(3), arg: 0, map: IndexMap::Offset(vec![1, 1]) },
        op(Instr::Binary { op: BinaryOp::Add, dst: Reg(4), a: Reg(0), b: Reg(1) }),
        op(Instr::Binary { op: BinaryOp::Add, dst: Reg(5), a: Reg(4), b: Reg(2) }),
        op(Instr::Binary { op: BinaryOp::Mul, dst: Reg(7), a: Reg(6), b: Reg(3) }),
        op(Instr::Binary { op: BinaryOp::Sub, dst: Reg(8), a: Reg(5), b: Reg(7) }),
        Stmt::Store { src: Reg(8), out: 0, map: store },
    ];
    KernelPlan {
        buffers: vec![buffer(f, &[r + 1, c + 2], BufferKind::Input(0)), buffer(f, out_dims, BufferKind::Computed)],
        kernels: vec![kernel(&[r, c], 1, 1, regs, Program { levels: vec![0; 9], body })],
        outputs: vec![BufferId(1)],
        stack_columns: Vec::new(),
    }
}

#[test]
fn loads_with_offset_maps_verify_and_stay_in_bounds() {
    let plan = stencil(5, 7, IndexMap::Identity, &[5, 7]);
    plan.verify().unwrap();
    let text = kernel_to_string(&plan.kernels[0]);
    assert!(text.contains("  r2 = load b0 offset[0, 2]\n"), "{text}");
    assert!(text.contains("  store b1 = r8\n"), "{text}");
    // Writing the interior of an array shaped like the padded input.
    stencil(5, 7, IndexMap::Offset(vec![1, 1]), &[6, 9]).verify().unwrap();
    // An offset reaching past the buffer, a negative one and a wrong count are rejected.
    for off in [vec![0, 3], vec![-1, 0], vec![0]] {
        let mut bad = stencil(5, 7, IndexMap::Identity, &[5, 7]);
        let Some(p) = bad.kernels[0].program.as_mut() else { unreachable!() };
        p.body[0] = Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Offset(off.clone()) };
        assert!(bad.verify().is_err(), "{off:?}");
    }
    assert!(stencil(5, 7, IndexMap::Offset(vec![2, 1]), &[6, 9]).verify().is_err());
    assert!(stencil(5, 7, IndexMap::Broadcast, &[5, 7]).verify().is_err(), "stores never broadcast");
}

/// out = x * w + b with x and the result stored as `storage`, computed in float32; `w`
/// broadcasts (one value per column) and `b` is a float32 scalar array.
fn scale(storage: DType, compute: DType) -> KernelPlan {
    let regs = vec![tile(compute), tile(DType::F32), tile(DType::F32), tile(DType::F32), tile(compute)];
    let body = vec![
        Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Identity },
        Stmt::Load { dst: Reg(1), arg: 1, map: IndexMap::Broadcast },
        Stmt::Load { dst: Reg(2), arg: 2, map: IndexMap::Broadcast },
        op(Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Add,
            swap: false,
            dst: Reg(4),
            a: Reg(0),
            b: Reg(1),
            c: Reg(2),
        }),
        Stmt::Store { src: Reg(4), out: 0, map: IndexMap::Identity },
    ];
    KernelPlan {
        buffers: vec![
            buffer(storage, &[3, 4], BufferKind::Input(0)),
            buffer(DType::F32, &[4], BufferKind::Input(1)),
            buffer(DType::F32, &[], BufferKind::Input(2)),
            buffer(storage, &[3, 4], BufferKind::Computed),
        ],
        kernels: vec![kernel(&[3, 4], 3, 1, regs, Program { levels: vec![0; 5], body })],
        outputs: vec![BufferId(3)],
        stack_columns: Vec::new(),
    }
}

#[test]
fn sixteen_bit_storage_is_a_property_of_loads_and_stores() {
    scale(DType::F16, DType::F32).verify().unwrap();
    scale(DType::BF16, DType::F32).verify().unwrap();
    scale(DType::F32, DType::F32).verify().unwrap();
    let text = kernel_to_string(&scale(DType::F16, DType::F32).kernels[0]);
    assert!(text.contains("  r0 = load b0\n  r1 = load b1 broadcast\n"), "{text}");
    // Narrowing float32 is not a conversion a load makes.
    let mut bad = scale(DType::F32, DType::F32);
    bad.buffers[3].dtype = DType::F16;
    bad.kernels[0].regs[4].dtype = DType::F16;
    bad.kernels[0].regs[0].dtype = DType::F16;
    assert!(bad.verify().is_err());
}
