//! Lowering: fusion groups become tile kernels.
//!
//! Needs: the fusion decision of `fuse`, promoted operands. Guarantees: a verified
//! [`KernelPlan`]. Within a kernel, every needed node becomes one vector instruction;
//! arguments and other kernels' results become `Arg` registers (read in place when
//! contiguous), constants `Scalar` registers, roots write straight into their output tile
//! (`Out` registers), and everything else lives in scratch tiles reused after their last
//! use (linear-scan allocation per dtype). The tile size is chosen so the scratch and
//! gathered tiles fit the local-memory budget.

use crate::fuse::{count_ops, Fusion};
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::Op;
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, Instr, KernelPlan, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::{DType, Graph, NodeId};
use std::collections::HashMap;

/// Builds the kernel plan.
pub struct LowerPass;

/// Smallest and largest tile, in elements.
const TILE_MIN: usize = 256;
const TILE_MAX: usize = 16384;

impl Pass for LowerPass {
    fn name(&self) -> &'static str {
        "lower"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let fusion = st.fusion.take().ok_or_else(|| IrError::internal("lowering needs the fusion pass"))?;
        let g = &st.graph;
        let mut plan = KernelPlan::default();
        let mut input_buf = HashMap::new();
        for &i in &g.inputs {
            let n = g.node(i);
            let Op::Input(k) = n.op else { unreachable!("inputs are Input nodes") };
            plan.buffers.push(BufferDecl { dtype: n.dtype(), shape: n.shape.clone(), kind: BufferKind::Input(k) });
            input_buf.insert(i, BufferId(plan.buffers.len() as u32 - 1));
        }
        let mut out_buf: HashMap<NodeId, BufferId> = HashMap::new();
        for (k, roots) in fusion.groups.iter().enumerate() {
            let name = format!("{}_k{k}", st.options.kernel_name);
            let kernel = lower_group(
                g,
                &fusion,
                roots,
                name,
                &input_buf,
                &mut out_buf,
                &mut plan,
                st.options.tile_budget_bytes,
            )?;
            st.notes.push(format!(
                "{}: {} instructions, {} registers, tile {} elements",
                kernel.name,
                kernel.body.len(),
                kernel.regs.len(),
                kernel.tile_elems
            ));
            plan.kernels.push(kernel);
        }
        plan.outputs = g
            .outputs
            .iter()
            .map(|o| out_buf.get(o).copied().ok_or_else(|| IrError::internal(format!("output %{} has no buffer", o.0))))
            .collect::<Result<_>>()?;
        plan.verify()?;
        st.fusion = Some(fusion);
        st.plan = Some(plan);
        Ok(())
    }
}

struct Regs {
    decls: Vec<RegDecl>,
    free: HashMap<DType, Vec<Reg>>,
}

impl Regs {
    fn add(&mut self, dtype: DType, kind: RegKind) -> Reg {
        self.decls.push(RegDecl { dtype, kind });
        Reg(self.decls.len() as u16 - 1)
    }
    fn tile(&mut self, dtype: DType) -> Reg {
        match self.free.get_mut(&dtype).and_then(|v| v.pop()) {
            Some(r) => r,
            None => self.add(dtype, RegKind::Tile),
        }
    }
}

/// State of one kernel under construction.
struct Builder<'a> {
    g: &'a Graph,
    input_buf: &'a HashMap<NodeId, BufferId>,
    out_buf: &'a mut HashMap<NodeId, BufferId>,
    plan: &'a mut KernelPlan,
    regs: Regs,
    args: Vec<BufferId>,
    outs: Vec<BufferId>,
    value: HashMap<NodeId, Reg>,
}

impl Builder<'_> {
    /// The register holding operand `x`, creating an `Arg` or `Scalar` register on first use.
    fn operand(&mut self, x: NodeId) -> Result<Reg> {
        if let Some(r) = self.value.get(&x) {
            return Ok(*r);
        }
        let n = self.g.node(x);
        let reg = match n.op {
            Op::Const(v) => self.regs.add(n.dtype(), RegKind::Scalar(v)),
            _ => {
                let buf = if n.op.is_leaf() { self.input_buf.get(&x) } else { self.out_buf.get(&x) };
                let buf = *buf.ok_or_else(|| IrError::internal(format!("%{} read before it is computed", x.0)))?;
                self.args.push(buf);
                self.regs.add(n.dtype(), RegKind::Arg(self.args.len() as u16 - 1))
            }
        };
        self.value.insert(x, reg);
        Ok(reg)
    }

    /// A new output buffer for root `x` and the `Out` register writing it.
    fn out_reg(&mut self, x: NodeId) -> Reg {
        let n = self.g.node(x);
        self.plan.buffers.push(BufferDecl { dtype: n.dtype(), shape: n.shape.clone(), kind: BufferKind::Computed });
        let b = BufferId(self.plan.buffers.len() as u32 - 1);
        self.out_buf.insert(x, b);
        self.outs.push(b);
        self.regs.add(n.dtype(), RegKind::Out(self.outs.len() as u16 - 1))
    }
}

#[allow(clippy::too_many_arguments)]
fn lower_group(
    g: &Graph,
    fusion: &Fusion,
    roots: &[NodeId],
    name: String,
    input_buf: &HashMap<NodeId, BufferId>,
    out_buf: &mut HashMap<NodeId, BufferId>,
    plan: &mut KernelPlan,
    budget: usize,
) -> Result<TileKernel> {
    let mat = &fusion.materialized;
    let shape = g.node(roots[0]).shape.clone();
    // Nodes computed here, in arena (topological) order.
    let mut inside = vec![false; g.len()];
    let mut stack: Vec<NodeId> = roots.iter().copied().filter(|r| !g.node(*r).op.is_leaf()).collect();
    while let Some(n) = stack.pop() {
        if inside[n.index()] {
            continue;
        }
        inside[n.index()] = true;
        for &x in &g.node(n).inputs {
            if !mat[x.index()] && !g.node(x).op.is_leaf() {
                stack.push(x);
            }
        }
    }
    let order: Vec<NodeId> = (0..g.len()).filter(|i| inside[*i]).map(|i| NodeId(i as u32)).collect();
    // Last position (in `order`) where each node is read.
    let mut last_use: HashMap<NodeId, usize> = HashMap::new();
    for (pos, n) in order.iter().enumerate() {
        for &x in &g.node(*n).inputs {
            last_use.insert(x, pos);
        }
    }
    let mut b = Builder {
        g,
        input_buf,
        out_buf,
        plan,
        regs: Regs { decls: Vec::new(), free: HashMap::new() },
        args: Vec::new(),
        outs: Vec::new(),
        value: HashMap::new(),
    };
    let mut body = Vec::new();
    let mut locs = Vec::new();
    for (pos, &id) in order.iter().enumerate() {
        let n = g.node(id);
        let srcs: Vec<Reg> = n.inputs.iter().map(|x| b.operand(*x)).collect::<Result<_>>()?;
        let dst = if roots.contains(&id) { b.out_reg(id) } else { b.regs.tile(n.dtype()) };
        body.push(match n.op {
            Op::Unary(op) => Instr::Unary { op, dst, src: srcs[0] },
            Op::Binary(op) => Instr::Binary { op, dst, a: srcs[0], b: srcs[1] },
            Op::Where => Instr::Select { dst, cond: srcs[0], a: srcs[1], b: srcs[2] },
            Op::Cast(_) => Instr::Cast { dst, src: srcs[0] },
            Op::Input(_) | Op::Const(_) => unreachable!("leaves are not computed"),
        });
        b.value.insert(id, dst);
        if let Some(loc) = &n.loc {
            if !locs.contains(loc) {
                locs.push(loc.clone());
            }
        }
        // Free scratch registers whose value is read for the last time here.
        for (k, &x) in n.inputs.iter().enumerate() {
            // An operand used twice by the same op (`x + x`) is freed once.
            if n.inputs[..k].contains(&x) {
                continue;
            }
            if last_use.get(&x) == Some(&pos) && inside[x.index()] && !roots.contains(&x) {
                let r = b.value[&x];
                let decl = b.regs.decls[r.0 as usize];
                if decl.kind == RegKind::Tile {
                    b.regs.free.entry(decl.dtype).or_default().push(r);
                }
            }
        }
    }
    // Roots that are leaves (an argument or constant returned as is) are copied.
    for &r in roots.iter().filter(|r| g.node(**r).op.is_leaf()) {
        let src = b.operand(r)?;
        let dst = b.out_reg(r);
        body.push(Instr::Copy { dst, src });
    }
    let scratch: usize =
        b.regs.decls.iter().filter(|d| matches!(d.kind, RegKind::Tile | RegKind::Arg(_))).map(|d| d.dtype.size()).sum();
    let tile = (budget / scratch.max(1)).clamp(TILE_MIN, TILE_MAX) / 256 * 256;
    let tile_elems = tile.min(shape.numel()).max(1);
    let fused_ops = count_ops(g, mat, roots);
    Ok(TileKernel { name, shape, args: b.args, outs: b.outs, regs: b.regs.decls, body, tile_elems, locs, fused_ops })
}
