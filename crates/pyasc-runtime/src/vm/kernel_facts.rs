//! What the profiler reports about one kernel launch: the op types in the kernel, the bytes
//! it reads and writes, the floating-point operations of its tile program, and the shapes and
//! dtypes of its operands. Computed only while someone collects events.

use crate::view::InputView;
use pyasc_events::event::Event;
use pyasc_ir::program::Stmt;
use pyasc_ir::tile::{BufferDecl, Instr, TileKernel};
use pyasc_ir::DType;

/// Operations one instruction performs per element (casts and copies count none).
fn instr_flops(i: &Instr) -> u64 {
    match i {
        Instr::Unary { .. }
        | Instr::Binary { .. }
        | Instr::Select { .. }
        | Instr::Reduce { .. }
        | Instr::Scan { .. } => 1,
        Instr::ScanMap { len, .. } => 1 + *len as u64,
        Instr::Chain { .. } | Instr::ReduceMap { .. } | Instr::SelectCmp { .. } => 2,
        Instr::ScaleShift { .. } | Instr::SumSquaredDev { .. } => 3,
        Instr::Normalize { .. } => 4,
        Instr::Cast { .. } | Instr::Copy { .. } => 0,
    }
}

/// The op type names of one instruction, pushed onto `out` unless already there.
fn instr_ops(i: &Instr, out: &mut Vec<&'static str>) {
    let mut add = |n: &'static str| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    match i {
        Instr::Unary { op, .. } => add(op.name()),
        Instr::Binary { op, .. } => add(op.name()),
        Instr::Chain { op1, op2, .. } => {
            add(op1.name());
            add(op2.name());
        }
        Instr::ScaleShift { op1, .. } => {
            add(op1.name());
            add("mul");
            add("add");
        }
        Instr::SumSquaredDev { .. } => {
            add("sub");
            add("square");
            add("sum");
        }
        Instr::Normalize { .. } => {
            add("sub");
            add("mul");
            add("add");
        }
        Instr::Select { .. } => add("where"),
        Instr::SelectCmp { cmp, .. } => {
            add(cmp.name());
            add("where");
        }
        Instr::Cast { .. } => add("cast"),
        Instr::Copy { .. } => add("copy"),
        Instr::Reduce { op, .. } => add(op.name()),
        Instr::ReduceMap { op, map, .. } => {
            add(map.name());
            add(op.name());
        }
        Instr::Scan { kind, .. } => add(kind.name()),
        Instr::ScanMap { kind, steps, len, .. } => {
            for s in &steps[..(*len as usize).min(3)] {
                add(s.op.name());
            }
            add(kind.name());
        }
    }
}

fn program_instrs<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a Instr>) {
    for s in stmts {
        match s {
            Stmt::Op(i) => out.push(i),
            Stmt::Loop(l) => program_instrs(&l.body, out),
            Stmt::While(w) => program_instrs(&w.body, out),
            Stmt::Load { .. } | Stmt::Store { .. } => {}
        }
    }
}

/// msprof's name for a dtype.
fn dtype_name(d: DType) -> String {
    match d {
        DType::F32 => "FLOAT".into(),
        DType::F16 => "FLOAT16".into(),
        DType::F64 => "DOUBLE".into(),
        DType::BF16 => "BF16".into(),
        other => other.name().to_ascii_uppercase(),
    }
}

fn shape_text(shape: &[usize]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
}

/// The op types in `k`, comma-separated, and the floating-point operations it performs over
/// the positions of its iteration space (library routines: a matrix product counts
/// two per multiply-add).
pub fn ops_and_flops(k: &TileKernel, buffers: &[BufferDecl], args: &[&InputView]) -> (String, u64) {
    let mut instrs: Vec<&Instr> = k.body.iter().collect();
    if let Some(p) = &k.program {
        program_instrs(&p.body, &mut instrs);
    }
    let mut names: Vec<&'static str> = Vec::new();
    let mut flops = 0u64;
    let n = k.shape.numel() as u64;
    if let Some(call) = &k.library {
        let described = call.describe();
        let name = described.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("library");
        names.push(if name.contains("matmul") { "matmul" } else { "library" });
        if name.contains("matmul") && args.len() >= 2 {
            let inner = args[0].shape.last().copied().unwrap_or(1) as u64;
            let out = k.outs.first().map_or(0, |b| buffers[b.0 as usize].shape.numel()) as u64;
            flops += 2 * out * inner;
        }
    }
    for i in &instrs {
        instr_ops(i, &mut names);
        flops += instr_flops(i) * n;
    }
    (names.join(","), flops)
}

/// Annotate a kernel event with the facts the profiler reports.
pub fn annotate(ev: Event, k: &TileKernel, buffers: &[BufferDecl], args: &[&InputView], launch: u64) -> Event {
    let (ops, flops) = ops_and_flops(k, buffers, args);
    let read: u64 = args.iter().map(|a| (a.shape.iter().product::<usize>() * a.dtype.size()) as u64).sum();
    let outs: Vec<&BufferDecl> = k.outs.iter().map(|b| &buffers[b.0 as usize]).collect();
    let written: u64 = outs.iter().map(|d| (d.shape.numel() * d.dtype.size()) as u64).sum();
    let join = |v: Vec<String>| v.join(";");
    ev.with("launch", launch)
        .with("bytes_read", read)
        .with("bytes_written", written)
        .with("flops", flops)
        .label("ops", ops)
        .label("input_shapes", join(args.iter().map(|a| shape_text(&a.shape)).collect()))
        .label("input_dtypes", join(args.iter().map(|a| dtype_name(a.dtype)).collect()))
        .label("output_shapes", join(outs.iter().map(|d| shape_text(&d.shape.0)).collect()))
        .label("output_dtypes", join(outs.iter().map(|d| dtype_name(d.dtype)).collect()))
}
