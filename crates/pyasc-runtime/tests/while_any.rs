//! Mask loops ([`WhileAny`]) in structured programs: lanes iterate in lock step until every
//! lane's condition is false, finished lanes frozen by selects; checked against a per-element
//! reference. Also the verifier's rules for them and loads that broadcast one value.

use pyasc_ir::op::BinaryOp;
use pyasc_ir::program::{IndexMap, Program, Stmt, WhileAny};
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, Instr, KernelPlan, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::{DType, Scalar, Shape};
use pyasc_runtime::vm::{execute_plan, RunOptions};
use pyasc_runtime::{InputView, OutputPtr};

fn tile(dtype: DType) -> RegDecl {
    RegDecl { dtype, kind: RegKind::Tile, row: false }
}

fn scalar(dtype: DType, v: Scalar) -> RegDecl {
    RegDecl { dtype, kind: RegKind::Scalar(v), row: false }
}

fn op(i: Instr) -> Stmt {
    Stmt::Op(i)
}

fn bin(op: BinaryOp, dst: u16, a: u16, b: u16) -> Stmt {
    Stmt::Op(Instr::Binary { op, dst: Reg(dst), a: Reg(a), b: Reg(b) })
}

/// For each `x` of an (n,) float64 input and a 0-d `limit`: halve `x` while `x > limit`,
/// counting the halvings (int64 output). Lanes stop at different iterations; a lane with
/// `x <= limit` (or NaN) never runs the body.
fn halvings(n: usize, tile_elems: usize) -> KernelPlan {
    let (f, i, b) = (DType::F64, DType::I64, DType::Bool);
    let regs = vec![
        tile(f),                       // r0: x
        tile(f),                       // r1: limit
        tile(i),                       // r2: count
        tile(b),                       // r3: active
        scalar(f, Scalar::Float(0.5)), // r4
        scalar(i, Scalar::Int(1)),     // r5
        tile(f),                       // r6: x * 0.5
        tile(f),                       // r7: merged x
        tile(i),                       // r8: count + 1
        tile(i),                       // r9: merged count
        tile(b),                       // r10: x > limit
        tile(b),                       // r11: active and x > limit
        scalar(i, Scalar::Int(0)),     // r12
    ];
    let body = vec![
        Stmt::Load { dst: Reg(0), arg: 0, map: IndexMap::Identity },
        Stmt::Load { dst: Reg(1), arg: 1, map: IndexMap::Broadcast },
        op(Instr::Copy { dst: Reg(2), src: Reg(12) }),
        bin(BinaryOp::Gt, 3, 0, 1),
        Stmt::While(WhileAny {
            cond: Reg(3),
            carried: vec![Reg(0), Reg(2), Reg(3)],
            body: vec![
                bin(BinaryOp::Mul, 6, 0, 4),
                op(Instr::Select { dst: Reg(7), cond: Reg(3), a: Reg(6), b: Reg(0) }),
                op(Instr::Copy { dst: Reg(0), src: Reg(7) }),
                bin(BinaryOp::Add, 8, 2, 5),
                op(Instr::Select { dst: Reg(9), cond: Reg(3), a: Reg(8), b: Reg(2) }),
                op(Instr::Copy { dst: Reg(2), src: Reg(9) }),
                bin(BinaryOp::Gt, 10, 0, 1),
                bin(BinaryOp::And, 11, 10, 3),
                op(Instr::Copy { dst: Reg(3), src: Reg(11) }),
            ],
        }),
        Stmt::Store { src: Reg(2), out: 0, map: IndexMap::Identity },
    ];
    let levels = vec![0; regs.len()];
    let kernel = TileKernel {
        name: "halvings".into(),
        shape: Shape(vec![n]),
        perm: vec![0],
        row_len: 0,
        library: None,
        args: vec![BufferId(0), BufferId(1)],
        arg_views: vec![Vec::new(), Vec::new()],
        outs: vec![BufferId(2)],
        regs,
        body: Vec::new(),
        tile_elems,
        program: Some(Program { levels, body }),
        locs: Vec::new(),
        fused_ops: 1,
    };
    KernelPlan {
        buffers: vec![
            BufferDecl { dtype: f, shape: Shape(vec![n]), kind: BufferKind::Input(0) },
            BufferDecl { dtype: f, shape: Shape(vec![]), kind: BufferKind::Input(1) },
            BufferDecl { dtype: i, shape: Shape(vec![n]), kind: BufferKind::Computed },
        ],
        kernels: vec![kernel],
        outputs: vec![BufferId(2)],
        stack_columns: Vec::new(),
    }
}

fn run_halvings(xs: &[f64], limit: f64, tile_elems: usize) -> Vec<i64> {
    let plan = halvings(xs.len(), tile_elems);
    plan.verify().unwrap();
    let mut out = vec![-7i64; xs.len()];
    let inputs = [
        InputView::contiguous(xs.as_ptr() as *const u8, DType::F64, vec![xs.len()]),
        InputView::contiguous(&limit as *const f64 as *const u8, DType::F64, vec![]),
    ];
    execute_plan(&plan, &inputs, &[OutputPtr(out.as_mut_ptr() as *mut u8)], RunOptions::default()).unwrap();
    out
}

fn reference(x: f64, limit: f64) -> i64 {
    let (mut x, mut n) = (x, 0);
    while x > limit {
        x *= 0.5;
        n += 1;
    }
    n
}

#[test]
fn lanes_stop_independently() {
    // Values spread over many magnitudes (lanes finish after 0 to ~60 halvings), plus NaN,
    // values already below the limit, and tiles that end part-way (n not a multiple).
    let mut xs: Vec<f64> = (0..5000i32).map(|k| ((k * 7919) % 4099) as f64 * 1.7f64.powi(k % 37)).collect();
    xs[3] = f64::NAN;
    xs[10] = -1.0;
    xs[11] = 1.0;
    for tile_elems in [1, 64, 1000, 8192] {
        let got = run_halvings(&xs, 1.0, tile_elems);
        let want: Vec<i64> = xs.iter().map(|&x| reference(x, 1.0)).collect();
        assert_eq!(got, want, "tile of {tile_elems}");
    }
}

#[test]
fn a_loop_that_never_runs_leaves_its_registers() {
    let xs = vec![0.5, -3.0, f64::NEG_INFINITY, 2.0];
    assert_eq!(run_halvings(&xs, 4.0, 16), vec![0, 0, 0, 0]);
    // An infinite value never stops halving below an infinite limit: +inf > +inf is false.
    assert_eq!(run_halvings(&[f64::INFINITY], f64::INFINITY, 16), vec![0]);
}

#[test]
fn the_verifier_checks_mask_loops() {
    let base = halvings(8, 8);
    base.verify().unwrap();
    let with = |f: &dyn Fn(&mut WhileAny)| {
        let mut plan = base.clone();
        let p = plan.kernels[0].program.as_mut().unwrap();
        let Stmt::While(w) = &mut p.body[4] else { unreachable!() };
        f(w);
        plan.verify()
    };
    // The condition must be carried (the body updates it) and be a bool register.
    assert!(with(&|w| w.carried.retain(|r| *r != Reg(3))).is_err());
    assert!(with(&|w| {
        w.cond = Reg(0);
        w.carried.push(Reg(0));
    })
    .is_err());
    // A register set before the loop and written in it without being carried.
    assert!(with(&|w| w.carried.retain(|r| *r != Reg(2))).is_err());
    // Registers written inside the body end with it.
    let mut plan = base.clone();
    let p = plan.kernels[0].program.as_mut().unwrap();
    p.body.push(Stmt::Store { src: Reg(9), out: 0, map: IndexMap::Identity });
    assert!(plan.verify().is_err());
    // The printer shows the loop.
    let text = pyasc_ir::print::kernel_to_string(&base.kernels[0]);
    assert!(text.contains("while any r3 carry [r0, r2, r3]"), "{text}");
}
