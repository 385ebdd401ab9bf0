//! The text form of graphs and tile programs, shown by `graph_ir()`, logs and tests.

use crate::graph::Graph;
use crate::tile::{Instr, KernelPlan, RegKind, TileKernel};
use std::fmt::Write;

/// Print a graph, one node a line: `%3 = mul(%1, %2) : float32(8,)  # user.py:4` (with
/// `[fp32 scope]` after the type of a node traced inside a precision scope).
pub fn graph_to_string(g: &Graph) -> String {
    let mut s = String::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let args: Vec<String> = n.inputs.iter().map(|x| format!("%{}", x.0)).collect();
        let weak = if n.vtype.weak.is_some() { " weak" } else { "" };
        let name = match n.op {
            crate::op::Op::View(a) => match g.attr(a) {
                Ok(crate::attr::Attr::View(spec)) => spec.describe(),
                _ => n.op.name(),
            },
            crate::op::Op::Library(id, a) => match (id.op(), g.attr(a)) {
                (Ok(l), Ok(attr)) => l.describe(attr),
                _ => n.op.name(),
            },
            _ => n.op.name(),
        };
        let _ = write!(s, "%{i} = {}({}) : {}{}{weak}", name, args.join(", "), n.vtype.dtype, n.shape);
        if let Some(p) = g.scope_of(crate::graph::NodeId(i as u32)) {
            let _ = write!(s, " [{} scope]", p.name());
        }
        if let Some(loc) = &n.loc {
            let _ = write!(s, "  # {loc}");
        }
        s.push('\n');
    }
    let outs: Vec<String> = g.outputs.iter().map(|x| format!("%{}", x.0)).collect();
    let _ = writeln!(s, "return {}", outs.join(", "));
    s
}

/// Print one kernel's tile program.
pub fn kernel_to_string(k: &TileKernel) -> String {
    let mut s = String::new();
    let args: Vec<String> = k.args.iter().map(|b| format!("b{}", b.0)).collect();
    let outs: Vec<String> = k.outs.iter().map(|b| format!("b{}", b.0)).collect();
    let _ = writeln!(
        s,
        "kernel {}({}) -> ({}) over {}{}{} tile={} fused_ops={}",
        k.name,
        args.join(", "),
        outs.join(", "),
        k.shape,
        if k.row_len > 0 { format!(" rows of {}", k.row_len) } else { String::new() },
        k.library.as_ref().map_or(String::new(), |l| format!(" calls {}", l.describe())),
        k.tile_elems,
        k.fused_ops
    );
    for (i, r) in k.regs.iter().enumerate() {
        let kind = match r.kind {
            RegKind::Tile => "tile".to_string(),
            RegKind::Scalar(v) => format!("scalar {v}"),
            RegKind::Arg(a) => format!("load b{}", k.args[a as usize].0),
            RegKind::Out(o) => format!("store b{}", k.outs[o as usize].0),
        };
        let level = match &k.program {
            Some(p) => format!(" (level {})", p.levels.get(i).copied().unwrap_or(0)),
            None if r.row => " (per row)".to_string(),
            None => String::new(),
        };
        let _ = writeln!(s, "  r{i}: {} {kind}{level}", r.dtype);
    }
    for ins in &k.body {
        let _ = writeln!(s, "  {}", instr_to_string(k, ins));
    }
    if let Some(p) = &k.program {
        crate::program::program_to_string(k, p, &mut s);
    }
    s
}

/// One instruction of `k`: `r3 = mul(r1, r2)`.
pub fn instr_to_string(k: &TileKernel, ins: &Instr) -> String {
    match ins {
        Instr::Unary { op, dst, src } => format!("{dst} = {}({src})", op.name()),
        Instr::Binary { op, dst, a, b } => format!("{dst} = {}({a}, {b})", op.name()),
        Instr::Chain { op1, op2, swap: false, dst, a, b, c } => {
            format!("{dst} = {}({}({a}, {b}), {c})", op2.name(), op1.name())
        }
        Instr::Chain { op1, op2, swap: true, dst, a, b, c } => {
            format!("{dst} = {}({c}, {}({a}, {b}))", op2.name(), op1.name())
        }
        Instr::ScaleShift { op1, dst, a, b, scale, shift } => {
            format!("{dst} = add(mul({}({a}, {b}), {scale}), {shift})", op1.name())
        }
        Instr::Select { dst, cond, a, b } => format!("{dst} = select({cond}, {a}, {b})"),
        Instr::SelectCmp { cmp, dst, a, b, t, f } => format!("{dst} = select({}({a}, {b}), {t}, {f})", cmp.name()),
        Instr::Cast { dst, src } => {
            let to = k.regs.get(dst.0 as usize).map_or("?".to_string(), |r| r.dtype.to_string());
            format!("{dst} = cast<{to}>({src})")
        }
        Instr::Copy { dst, src } => format!("{dst} = copy({src})"),
        Instr::Reduce { op, dst, src } => format!("{dst} = reduce_{}({src})", op.name()),
        Instr::ReduceMap { op, map, dst, a, b } => format!("{dst} = reduce_{}({}({a}, {b}))", op.name(), map.name()),
        Instr::SumSquaredDev { dst, src, center } => format!("{dst} = reduce_sum(square(sub({src}, {center})))"),
        Instr::Normalize { dst, x, mean, rstd, scale, shift } => {
            format!("{dst} = add(mul(mul(sub({x}, {mean}), {rstd}), {scale}), {shift})")
        }
        Instr::Scan { kind, dst, src } => format!("{dst} = scan_{}({src})", kind.name()),
        Instr::ScanMap { kind, dst, src, steps, pre, len } => {
            let apply = |v: String, s: &crate::tile::MapStep| {
                if s.swap {
                    format!("{}({}, {v})", s.op.name(), s.arg)
                } else {
                    format!("{}({v}, {})", s.op.name(), s.arg)
                }
            };
            let used = &steps[..(*len as usize).min(3)];
            let (before, after) = used.split_at((*pre as usize).min(used.len()));
            let inner = before.iter().fold(src.to_string(), apply);
            let scanned = format!("scan_{}({inner})", kind.name());
            format!("{dst} = {}", after.iter().fold(scanned, apply))
        }
    }
}

/// Print a whole plan: buffers then kernels.
pub fn plan_to_string(p: &KernelPlan) -> String {
    let mut s = String::new();
    for (i, b) in p.buffers.iter().enumerate() {
        let _ = writeln!(s, "b{i}: {}{} {:?}", b.dtype, b.shape, b.kind);
    }
    for k in &p.kernels {
        s.push_str(&kernel_to_string(k));
    }
    let outs: Vec<String> = p.outputs.iter().map(|b| format!("b{}", b.0)).collect();
    let _ = writeln!(s, "return {}", outs.join(", "));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::VType;
    use crate::op::{BinaryOp, UnaryOp};
    use crate::scalar::Scalar;
    use crate::shape::Shape;
    use crate::{DType, SourceLoc};

    #[test]
    fn prints_nodes_with_types_and_lines() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F32), Shape(vec![8]));
        let loc = SourceLoc { file: "op.py".into(), line: 3 };
        let h = g.py_scalar(Scalar::Float(0.5), Some(loc.clone()));
        let m = g.binary(BinaryOp::Mul, x, h, Some(loc.clone())).unwrap();
        let t = g.unary(UnaryOp::Tanh, m, Some(loc)).unwrap();
        g.outputs.push(t);
        let text = graph_to_string(&g);
        assert_eq!(
            text,
            "%0 = input0() : float32(8,)\n\
             %1 = const 0.5() : float64() weak  # op.py:3\n\
             %2 = mul(%0, %1) : float32(8,)  # op.py:3\n\
             %3 = tanh(%2) : float32(8,)  # op.py:3\n\
             return %3\n"
        );
    }
}
