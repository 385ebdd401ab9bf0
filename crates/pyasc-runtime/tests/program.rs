//! Structured tile programs run by the VM, checked against float64 references: a loop nest
//! with carried registers (online softmax statistics), stencil loads and stores through
//! offset maps, broadcast loads, and 16-bit storage computed in float32.

use pyasc_ir::op::{BinaryOp, ReduceOp, UnaryOp};
use pyasc_ir::program::{IndexMap, Loop, Program, Stmt};
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, Instr, KernelPlan, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::{DType, Scalar, Shape};
use pyasc_runtime::vm::{execute_plan, RunOptions};
use pyasc_runtime::{InputView, OutputPtr};

fn buffer(dtype: DType, dims: &[usize], kind: BufferKind) -> BufferDecl {
    BufferDecl { dtype, shape: Shape(dims.to_vec()), kind }
}

fn tile(dtype: DType) -> RegDecl {
    RegDecl { dtype, kind: RegKind::Tile, row: false }
}

fn scalar(dtype: DType, v: f64) -> RegDecl {
    RegDecl { dtype, kind: RegKind::Scalar(Scalar::Float(v)), row: false }
}

fn kernel(shape: &[usize], args: usize, outs: usize, regs: Vec<RegDecl>, program: Program, tile: usize) -> TileKernel {
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
        tile_elems: tile,
        program: Some(program),
        locs: Vec::new(),
        fused_ops: 1,
    }
}

fn op(i: Instr) -> Stmt {
    Stmt::Op(i)
}

/// Verify and run `plan`; returns each output's bytes.
fn run(plan: &KernelPlan, inputs: &[InputView], fill: u8) -> Vec<Vec<u8>> {
    plan.verify().unwrap();
    let mut outs: Vec<Vec<u8>> = plan
        .outputs
        .iter()
        .map(|b| {
            let d = &plan.buffers[b.0 as usize];
            vec![fill; d.shape.numel() * d.dtype.size()]
        })
        .collect();
    let ptrs: Vec<OutputPtr> = outs.iter_mut().map(|o| OutputPtr(o.as_mut_ptr())).collect();
    execute_plan(plan, inputs, &ptrs, RunOptions::default()).unwrap();
    outs
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Row max `m` and `sum(exp(x - m))` of an (r, c) array, `step` columns at a time, with the
/// running max and sum carried across chunks; a per-column bias broadcast inside the loop.
fn online_softmax(r: usize, c: usize, step: usize, tile_rows: usize) -> KernelPlan {
    let f = DType::F32;
    let regs = vec![
        tile(f),                      // r0: x chunk (level 1)
        tile(f),                      // r1: running max (level 0)
        tile(f),                      // r2: running sum (level 0)
        scalar(f, f64::NEG_INFINITY), // r3
        scalar(f, 0.0),               // r4
        tile(f),                      // r5: chunk max, then m - new max (level 0)
        tile(f),                      // r6: new max (level 0)
        tile(f),                      // r7: x - new max (level 1)
        tile(f),                      // r8: exp of it (level 1)
        tile(f),                      // r9: chunk sum (level 0)
        tile(f),                      // r10: exp(m - new max) (level 0)
        tile(f),                      // r11: new sum (level 0)
        tile(f),                      // r12: bias chunk (level 1)
        tile(f),                      // r13: raw chunk (level 1)
    ];
    let levels = vec![1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1];
    let body = vec![
        op(Instr::Copy { dst: Reg(1), src: Reg(3) }),
        op(Instr::Copy { dst: Reg(2), src: Reg(4) }),
        Stmt::Loop(Loop {
            axis: 1,
            step,
            carried: vec![Reg(1), Reg(2)],
            body: vec![
                Stmt::Load { dst: Reg(13), arg: 0, map: IndexMap::Identity },
                Stmt::Load { dst: Reg(12), arg: 1, map: IndexMap::Broadcast },
                op(Instr::Binary { op: BinaryOp::Add, dst: Reg(0), a: Reg(13), b: Reg(12) }),
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
            buffer(f, &[c], BufferKind::Input(1)),
            buffer(f, &[r], BufferKind::Computed),
            buffer(f, &[r, 1], BufferKind::Computed),
        ],
        kernels: vec![kernel(&[r, c], 2, 2, regs, Program { levels, body }, tile_rows)],
        outputs: vec![BufferId(2), BufferId(3)],
        stack_columns: Vec::new(),
    }
}

#[test]
fn online_softmax_statistics_match_float64() {
    // Small and on one thread; then large enough to be spread over the workers.
    for (r, c, step, tile_rows) in [(7, 1000, 128, 3), (5, 1, 4, 8), (3, 64, 64, 1), (4099, 97, 16, 32)] {
        let x: Vec<f32> = (0..r * c).map(|i| ((i * 7919 % 1009) as f32 / 1009.0 - 0.5) * 40.0).collect();
        let bias: Vec<f32> = (0..c).map(|j| (j % 13) as f32 * 0.25).collect();
        let plan = online_softmax(r, c, step, tile_rows);
        let inputs = [
            InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![r, c]),
            InputView::contiguous(bias.as_ptr() as *const u8, DType::F32, vec![c]),
        ];
        let outs = run(&plan, &inputs, 0xff);
        let (m, s) = (f32s(&outs[0]), f32s(&outs[1]));
        for i in 0..r {
            let row: Vec<f64> = (0..c).map(|j| x[i * c + j] as f64 + bias[j] as f64).collect();
            let want_m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let want_s: f64 = row.iter().map(|v| (v - want_m).exp()).sum();
            assert_eq!(m[i] as f64, want_m, "max of row {i} ({r}x{c} step {step})");
            assert!(((s[i] as f64) - want_s).abs() <= 1e-5 * want_s, "sum of row {i}: {} vs {want_s}", s[i]);
        }
    }
}

/// y[i + 1, j + 1] = x[i, j] + x[i, j + 1] + x[i, j + 2] - 2 * x[i + 1, j + 1] over the
/// interior of an (r + 1, c + 2) array, written into an array of the same shape.
fn stencil(r: usize, c: usize) -> (KernelPlan, Vec<f32>) {
    let f = DType::F32;
    let regs = vec![tile(f), tile(f), tile(f), tile(f), tile(f), tile(f), scalar(f, 2.0), tile(f), tile(f)];
    let body = vec![
        Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Offset(vec![0, 0]) },
        Stmt::Load { dst: Reg(1), arg: 0, map: IndexMap::Offset(vec![0, 1]) },
        Stmt::Load { dst: Reg(2), arg: 0, map: IndexMap::Offset(vec![0, 2]) },
        Stmt::Load { dst: Reg(3), arg: 0, map: IndexMap::Offset(vec![1, 1]) },
        op(Instr::Binary { op: BinaryOp::Add, dst: Reg(4), a: Reg(0), b: Reg(1) }),
        op(Instr::Binary { op: BinaryOp::Add, dst: Reg(5), a: Reg(4), b: Reg(2) }),
        op(Instr::Binary { op: BinaryOp::Mul, dst: Reg(7), a: Reg(6), b: Reg(3) }),
        op(Instr::Binary { op: BinaryOp::Sub, dst: Reg(8), a: Reg(5), b: Reg(7) }),
        Stmt::Store { src: Reg(8), out: 0, map: IndexMap::Offset(vec![1, 1]) },
    ];
    let dims = [r + 1, c + 2];
    let plan = KernelPlan {
        buffers: vec![buffer(f, &dims, BufferKind::Input(0)), buffer(f, &dims, BufferKind::Computed)],
        kernels: vec![kernel(&[r, c], 1, 1, regs, Program { levels: vec![0; 9], body }, 5)],
        outputs: vec![BufferId(1)],
        stack_columns: Vec::new(),
    };
    let x: Vec<f32> = (0..dims[0] * dims[1]).map(|i| ((i * 37 % 101) as f32) * 0.125 - 3.0).collect();
    (plan, x)
}

#[test]
fn stencil_through_offset_maps_matches_float64_and_writes_only_the_interior() {
    for (r, c) in [(6, 9), (1, 1), (40, 33)] {
        let (plan, x) = stencil(r, c);
        let w = c + 2;
        let outs = run(&plan, &[InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![r + 1, w])], 0);
        let y = f32s(&outs[0]);
        for i in 0..=r {
            for j in 0..w {
                let got = y[i * w + j];
                if i >= 1 && (1..=c).contains(&j) {
                    let (a, b) = (i - 1, j - 1);
                    let at = |p: usize, q: usize| x[p * w + q] as f64;
                    let want = at(a, b) + at(a, b + 1) + at(a, b + 2) - 2.0 * at(a + 1, b + 1);
                    assert!((got as f64 - want).abs() <= 1e-6 * want.abs().max(1.0), "({i}, {j}): {got} vs {want}");
                } else {
                    assert_eq!(got, 0.0, "({i}, {j}) is outside the interior");
                }
            }
        }
    }
}

/// out = x * w + b with `x` and `out` stored as `storage` and computed in float32; `x` is
/// read through a transposed view.
fn scale(storage: DType) -> KernelPlan {
    let f = DType::F32;
    let regs = vec![tile(f), tile(f), tile(f), tile(f)];
    let body = vec![
        Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Identity },
        Stmt::Load { dst: Reg(1), arg: 1, map: IndexMap::Broadcast },
        Stmt::Load { dst: Reg(2), arg: 2, map: IndexMap::Broadcast },
        op(Instr::Chain {
            op1: BinaryOp::Mul,
            op2: BinaryOp::Add,
            swap: false,
            dst: Reg(3),
            a: Reg(0),
            b: Reg(1),
            c: Reg(2),
        }),
        Stmt::Store { src: Reg(3), out: 0, map: IndexMap::Identity },
    ];
    let mut k = kernel(&[5, 3], 3, 1, regs, Program { levels: vec![0; 4], body }, 4);
    k.arg_views[0] = vec![pyasc_ir::view::ViewSpec::Transpose(vec![1, 0])];
    KernelPlan {
        buffers: vec![
            buffer(storage, &[3, 5], BufferKind::Input(0)),
            buffer(f, &[3], BufferKind::Input(1)),
            buffer(f, &[], BufferKind::Input(2)),
            buffer(storage, &[5, 3], BufferKind::Computed),
        ],
        kernels: vec![k],
        outputs: vec![BufferId(3)],
        stack_columns: Vec::new(),
    }
}

#[test]
fn sixteen_bit_storage_loads_widen_and_stores_round() {
    // x[i, j] (3x5), read transposed as 5x3.
    let xs: Vec<f64> = (0..15).map(|i| (i as f64 - 7.0) * 0.375).collect();
    let w = [1.5f32, -0.25, 3.0];
    let b = [0.1f32];
    for storage in [DType::F16, DType::BF16] {
        let bits: Vec<u16> = xs
            .iter()
            .map(|v| {
                if storage == DType::F16 {
                    half::f16::from_f64(*v).to_bits()
                } else {
                    half::bf16::from_f64(*v).to_bits()
                }
            })
            .collect();
        let inputs = [
            InputView::contiguous(bits.as_ptr() as *const u8, storage, vec![3, 5]),
            InputView::contiguous(w.as_ptr() as *const u8, DType::F32, vec![3]),
            InputView::contiguous(b.as_ptr() as *const u8, DType::F32, vec![]),
        ];
        let outs = run(&scale(storage), &inputs, 0);
        let got: Vec<u16> = outs[0].chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect();
        for i in 0..5 {
            for j in 0..3 {
                let v = (xs[j * 5 + i] as f32) * w[j] + b[0];
                let want = if storage == DType::F16 {
                    half::f16::from_f32(v).to_bits()
                } else {
                    half::bf16::from_f32(v).to_bits()
                };
                assert_eq!(got[i * 3 + j], want, "{storage} at ({i}, {j})");
            }
        }
    }
}

#[test]
fn an_unknown_library_op_fails_to_run() {
    let mut plan = scale(DType::F32);
    let k = &mut plan.kernels[0];
    k.program = None;
    k.library = Some(pyasc_ir::library::LibCall { id: pyasc_ir::LibId(999), attr: pyasc_ir::Attr::None, operands: 1 });
    let x = [0f32; 15];
    let inputs = [
        InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![3, 5]),
        InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![3]),
        InputView::contiguous(x.as_ptr() as *const u8, DType::F32, vec![]),
    ];
    let mut out = vec![0u8; 60];
    let err = execute_plan(&plan, &inputs, &[OutputPtr(out.as_mut_ptr())], RunOptions::default()).unwrap_err();
    assert!(err.message.contains("#999"), "{}", err.message);
}

#[test]
fn nested_loops_carry_registers_at_two_levels() {
    // Per b: the sum of x[b, t, :] for every t (stored at depth 1) and the total (carried
    // across the outer loop), walking t by 2 and the last axis by 3.
    let (bn, tn, cn) = (5, 7, 10);
    let f = DType::F64;
    let regs = vec![
        tile(f),        // r0: s, total (level 0)
        scalar(f, 0.0), // r1
        tile(f),        // r2: t, running sum over the last axis (level 1)
        tile(f),        // r3: x chunk (level 2)
        tile(f),        // r4: chunk sum (level 1)
        tile(f),        // r5: new t (level 1)
        tile(f),        // r6: sum of the t chunk (level 0)
        tile(f),        // r7: new s (level 0)
    ];
    let levels = vec![0, 0, 1, 2, 1, 1, 0, 0];
    let body = vec![
        op(Instr::Copy { dst: Reg(0), src: Reg(1) }),
        Stmt::Loop(Loop {
            axis: 1,
            step: 2,
            carried: vec![Reg(0)],
            body: vec![
                op(Instr::Copy { dst: Reg(2), src: Reg(1) }),
                Stmt::Loop(Loop {
                    axis: 2,
                    step: 3,
                    carried: vec![Reg(2)],
                    body: vec![
                        Stmt::Load { dst: Reg(3), arg: 0, map: IndexMap::Identity },
                        op(Instr::Reduce { op: ReduceOp::Sum, dst: Reg(4), src: Reg(3) }),
                        op(Instr::Binary { op: BinaryOp::Add, dst: Reg(5), a: Reg(2), b: Reg(4) }),
                        op(Instr::Copy { dst: Reg(2), src: Reg(5) }),
                    ],
                }),
                Stmt::Store { src: Reg(2), out: 1, map: IndexMap::Identity },
                op(Instr::Reduce { op: ReduceOp::Sum, dst: Reg(6), src: Reg(2) }),
                op(Instr::Binary { op: BinaryOp::Add, dst: Reg(7), a: Reg(0), b: Reg(6) }),
                op(Instr::Copy { dst: Reg(0), src: Reg(7) }),
            ],
        }),
        Stmt::Store { src: Reg(0), out: 0, map: IndexMap::Identity },
    ];
    let plan = KernelPlan {
        buffers: vec![
            buffer(f, &[bn, tn, cn], BufferKind::Input(0)),
            buffer(f, &[bn], BufferKind::Computed),
            buffer(f, &[bn, tn], BufferKind::Computed),
        ],
        kernels: vec![kernel(&[bn, tn, cn], 1, 2, regs, Program { levels, body }, 2)],
        outputs: vec![BufferId(1), BufferId(2)],
        stack_columns: Vec::new(),
    };
    let x: Vec<f64> = (0..bn * tn * cn).map(|i| ((i * 31 % 17) as f64 - 8.0) / 3.0).collect();
    let outs = run(&plan, &[InputView::contiguous(x.as_ptr() as *const u8, f, vec![bn, tn, cn])], 0);
    let f64s =
        |b: &[u8]| -> Vec<f64> { b.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect() };
    let (total, per_t) = (f64s(&outs[0]), f64s(&outs[1]));
    for b in 0..bn {
        let mut want_total = 0.0;
        for t in 0..tn {
            let want: f64 = x[(b * tn + t) * cn..(b * tn + t + 1) * cn].iter().sum();
            assert!((per_t[b * tn + t] - want).abs() <= 1e-12, "({b}, {t}): {} vs {want}", per_t[b * tn + t]);
            want_total += want;
        }
        assert!((total[b] - want_total).abs() <= 1e-12, "{b}: {} vs {want_total}", total[b]);
    }
}
