//! Lowering: fusion groups become tile kernels.
//!
//! Needs: the fusion decision of `fuse`, promoted operands. Guarantees: a verified
//! [`KernelPlan`]. Within a kernel, every needed node becomes one vector instruction;
//! arguments and other kernels' results become `Arg` registers (read in place when
//! contiguous), constants `Scalar` registers, anchors that escape the kernel write straight
//! into their output tile (`Out` registers), and everything else lives in scratch tiles
//! reused after their last use (linear-scan allocation per dtype and level). Row kernels
//! (reductions) iterate with the reduced axes innermost and give each tile whole rows; their
//! reduction results and what is computed from them alone are per-row registers; a scan along
//! the rows ([`crate::fuse::row_scan`]) is an element instruction over each row (alone in its
//! kernel, with its operand in memory, it calls the scan routine instead). The tile
//! size is chosen so the scratch and gathered tiles fit the local-memory budget.

use crate::fuse::{count_ops, Fusion, Group, Space};
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::op::Op;
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, Instr, KernelPlan, Reg, RegDecl, RegKind, TileKernel};
use pyasc_ir::view::ViewSpec;
use pyasc_ir::{DType, Graph, NodeId, Shape};
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
        for (k, group) in fusion.groups.iter().enumerate() {
            let name = format!("{}_k{k}", st.options.kernel_name);
            let mut b = Builder {
                g,
                fusion: &fusion,
                input_buf: &input_buf,
                out_buf: &mut out_buf,
                plan: &mut plan,
                regs: Regs { decls: Vec::new(), free: HashMap::new() },
                args: Vec::new(),
                arg_views: Vec::new(),
                outs: Vec::new(),
                value: HashMap::new(),
                row_value: HashMap::new(),
                level_row: HashMap::new(),
            };
            let kernel = b.lower(group, name, st.options.budget())?;
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
    free: HashMap<(DType, bool), Vec<Reg>>,
}

impl Regs {
    fn add(&mut self, dtype: DType, kind: RegKind, row: bool) -> Reg {
        self.decls.push(RegDecl { dtype, kind, row });
        Reg(self.decls.len() as u16 - 1)
    }
    fn tile(&mut self, dtype: DType, row: bool) -> Reg {
        match self.free.get_mut(&(dtype, row)).and_then(|v| v.pop()) {
            Some(r) => r,
            None => self.add(dtype, RegKind::Tile, row),
        }
    }
}

/// State of one kernel under construction.
struct Builder<'a> {
    g: &'a Graph,
    fusion: &'a Fusion,
    input_buf: &'a HashMap<NodeId, BufferId>,
    out_buf: &'a mut HashMap<NodeId, BufferId>,
    plan: &'a mut KernelPlan,
    regs: Regs,
    args: Vec<BufferId>,
    arg_views: Vec<Vec<ViewSpec>>,
    outs: Vec<BufferId>,
    value: HashMap<NodeId, Reg>,
    /// Per value read from memory one element per row: its per-row `Arg` register.
    row_value: HashMap<NodeId, Reg>,
    /// Per computed node: true when it is a per-row value.
    level_row: HashMap<NodeId, bool>,
}

impl Builder<'_> {
    /// The buffer behind `x` (through any views) and the views to read it through; `None`
    /// for a constant.
    fn source(&self, x: NodeId, constants_in_memory: bool) -> Result<Option<(BufferId, Vec<ViewSpec>)>> {
        let mut specs = Vec::new();
        let mut b = x;
        while let Op::View(v) = self.g.node(b).op {
            let pyasc_ir::Attr::View(spec) = self.g.attr(v)? else {
                return Err(IrError::internal(format!("%{} names an attribute that is not a view", b.0)));
            };
            specs.push(spec.clone());
            b = self.g.node(b).inputs[0];
        }
        specs.reverse();
        let n = self.g.node(b);
        let buf = match n.op {
            Op::Const(_) | Op::Fill(_) if !constants_in_memory => return Ok(None),
            Op::Input(_) => self.input_buf.get(&b),
            _ => self.out_buf.get(&b),
        };
        let buf = *buf.ok_or_else(|| IrError::internal(format!("%{} read before it is computed", b.0)))?;
        Ok(Some((buf, specs)))
    }

    /// The register holding operand `x`: computed in this kernel, else an `Arg` or `Scalar`.
    fn operand(&mut self, x: NodeId) -> Result<Reg> {
        if let Some(r) = self.value.get(&x) {
            return Ok(*r);
        }
        let n = self.g.node(x);
        let reg = match self.source(x, false)? {
            None => {
                let base = crate::fuse::view_base(self.g, x);
                let (Op::Const(v) | Op::Fill(v)) = self.g.node(base).op else { unreachable!("constants only") };
                self.regs.add(n.dtype(), RegKind::Scalar(v), false)
            }
            Some((buf, specs)) => {
                self.args.push(buf);
                self.arg_views.push(specs);
                self.regs.add(n.dtype(), RegKind::Arg(self.args.len() as u16 - 1), false)
            }
        };
        self.value.insert(x, reg);
        Ok(reg)
    }

    /// The per-row `Arg` register of `x`, read from memory with one element per row of
    /// `space` ([`crate::fuse::read_per_row`]): viewed with unit extents on the reduced axes,
    /// it broadcasts over each row, and the VM reads one value per row.
    fn row_operand(&mut self, x: NodeId, space: &Space) -> Result<Reg> {
        if let Some(r) = self.row_value.get(&x) {
            return Ok(*r);
        }
        let Space::Rows { shape, axes } = space else {
            return Err(IrError::internal(format!("%{} read per row outside a row kernel", x.0)));
        };
        let Some((buf, mut specs)) = self.source(x, false)? else {
            return Err(IrError::internal(format!("%{} read per row is a constant", x.0)));
        };
        let aligned: Vec<usize> =
            shape.0.iter().enumerate().map(|(i, d)| if axes.contains(i) { 1 } else { *d }).collect();
        specs.push(ViewSpec::Reshape(aligned));
        self.args.push(buf);
        self.arg_views.push(specs);
        let reg = self.regs.add(self.g.node(x).dtype(), RegKind::Arg(self.args.len() as u16 - 1), true);
        self.row_value.insert(x, reg);
        Ok(reg)
    }

    /// A new output buffer for anchor `x` and the `Out` register writing it.
    fn out_reg(&mut self, x: NodeId, row: bool) -> Reg {
        let n = self.g.node(x);
        self.plan.buffers.push(BufferDecl { dtype: n.dtype(), shape: n.shape.clone(), kind: BufferKind::Computed });
        let b = BufferId(self.plan.buffers.len() as u32 - 1);
        self.out_buf.insert(x, b);
        self.outs.push(b);
        self.regs.add(n.dtype(), RegKind::Out(self.outs.len() as u16 - 1), row)
    }

    fn is_row(&self, x: NodeId) -> bool {
        self.level_row.get(&x).copied().unwrap_or(false)
    }

    /// The call of library op node `id`: its operands become the first arguments (read from
    /// memory), its result the first output.
    fn library_call(&mut self, id: NodeId) -> Result<pyasc_ir::library::LibCall> {
        let n = self.g.node(id);
        let Op::Library(lib, attr) = n.op else {
            return Err(IrError::internal(format!("%{} is not a library op", id.0)));
        };
        for &x in &n.inputs {
            let (buf, specs) = self.source(x, true)?.expect("constants are in memory here");
            self.args.push(buf);
            self.arg_views.push(specs);
        }
        let out = self.out_reg(id, false);
        self.value.insert(id, out);
        lib.op()?.lower(self.g.attr(attr)?, n.inputs.len())
    }

    /// A library kernel without epilogue: the routine alone.
    fn lower_library(&mut self, group: &Group, name: String) -> Result<TileKernel> {
        let id = group.anchors[0];
        let call = self.library_call(id)?;
        let n = self.g.node(id);
        Ok(TileKernel {
            name,
            shape: n.shape.clone(),
            perm: (0..n.shape.rank()).collect(),
            row_len: 0,
            library: Some(call),
            args: std::mem::take(&mut self.args),
            arg_views: std::mem::take(&mut self.arg_views),
            outs: std::mem::take(&mut self.outs),
            regs: std::mem::take(&mut self.regs.decls),
            body: Vec::new(),
            tile_elems: 1,
            program: None,
            locs: n.loc.iter().cloned().collect(),
            fused_ops: 1,
        })
    }

    fn lower(&mut self, group: &Group, name: String, budget: TileBudget) -> Result<TileKernel> {
        if let Space::Library(_) = group.space {
            if group.anchors.len() == 1 {
                return self.lower_library(group, name);
            }
            // A routine with epilogues: the routine writes its result (operands are the first
            // arguments, the result the first output), then the epilogue's tile program runs
            // over the result's shape, reading it from that output.
            let root = group.anchors[0];
            let call = self.library_call(root)?;
            let shape = self.g.node(root).shape.clone();
            let epilogue = Group { space: Space::Elem(shape), anchors: group.anchors[1..].to_vec() };
            let mut k = self.lower(&epilogue, name, budget)?;
            k.library = Some(call);
            k.fused_ops += 1;
            return Ok(k);
        }
        let g = self.g;
        let mat = &self.fusion.materialized;
        if let [only] = group.anchors[..] {
            // A row scan with nothing to fuse (its operand in memory, no consumer here) runs the
            // scan routine, which needs no tiles.
            if crate::fuse::row_scan(g, only).is_some() {
                let base = crate::fuse::view_base(g, g.node(only).inputs[0]);
                if matches!(g.node(base).op, Op::Input(_)) || mat[base.index()] {
                    return self.lower_library(group, name);
                }
            }
        }
        let anchors = &group.anchors;
        let in_group = |x: NodeId| anchors.contains(&x);
        // Nodes computed here, in arena (topological) order: the anchors and whatever they
        // need that is neither a leaf nor another kernel's anchor.
        let mut inside = vec![false; g.len()];
        let mut stack: Vec<NodeId> = anchors.iter().copied().filter(|r| !g.node(*r).op.is_data()).collect();
        while let Some(n) = stack.pop() {
            if inside[n.index()] {
                continue;
            }
            inside[n.index()] = true;
            for &x in &g.node(n).inputs {
                if (!mat[x.index()] || in_group(x)) && !g.node(x).op.is_data() {
                    stack.push(x);
                }
            }
        }
        let order: Vec<NodeId> = (0..g.len()).filter(|i| inside[*i]).map(|i| NodeId(i as u32)).collect();
        let order = scalars_first(g, order, &inside);
        let (shape, perm, row_len) = match &group.space {
            Space::Elem(s) => (s.clone(), (0..s.rank()).collect::<Vec<_>>(), 0),
            Space::Library(_) => unreachable!("lowered above"),
            Space::Rows { shape, axes } => {
                let n = shape.rank();
                let perm: Vec<usize> =
                    (0..n).filter(|i| !axes.contains(*i)).chain((0..n).filter(|i| axes.contains(*i))).collect();
                (Shape(perm.iter().map(|p| shape.0[*p]).collect()), perm, group.space.row_len())
            }
        };
        let rows_kernel = row_len > 0;
        // Levels: reductions give per-row values; an op on per-row values and constants only
        // stays per row; anything touching elements is per element, and so is a value a
        // reduction reads (`(x.mean(-1, keepdims=True) + zeros).sum(-1)`: the reduction runs
        // over its elements). An op on constants alone is uniform: per row when its shape is
        // a row shape (it may then meet per-row values, as the NaN mean of an empty axis meets
        // a row maximum), per element otherwise.
        let reduced: std::collections::HashSet<NodeId> = order
            .iter()
            .filter(|id| g.node(**id).op.is_reduce() || matches!(g.node(**id).op, Op::Library(..)))
            .map(|id| g.node(*id).inputs[0])
            .collect();
        let row_shape = |s: &Shape| match &group.space {
            Space::Rows { shape, axes } => {
                s.rank() <= shape.rank()
                    && (0..shape.rank()).all(|a| {
                        let e = (a + s.rank()).checked_sub(shape.rank()).map_or(1, |i| s.0[i]);
                        if axes.contains(a) {
                            e == 1
                        } else {
                            e == shape.0[a]
                        }
                    })
            }
            _ => false,
        };
        // A value read from memory with one element per row (an argument's column beside the
        // rows' reductions: [`crate::fuse::read_per_row`]) is per row too, and so is what is
        // computed from such values, per-row values and constants, when it has that shape.
        let constant = |x: &NodeId| matches!(g.node(*x).op, Op::Const(_) | Op::Fill(_));
        let read = |x: &NodeId| {
            !inside[x.index()] && !constant(x) && crate::fuse::read_per_row(&group.space, &g.node(*x).shape)
        };
        for &id in &order {
            let n = g.node(id);
            let row = rows_kernel
                && match n.op {
                    Op::Reduce { .. } => true,
                    Op::Library(..) => false,
                    _ if reduced.contains(&id) => false,
                    _ => {
                        let rows_only = n.inputs.iter().all(|x| self.is_row(*x) || constant(x));
                        let with_reads = n.inputs.iter().all(|x| self.is_row(*x) || constant(x) || read(x))
                            && n.inputs.iter().any(read)
                            && crate::fuse::read_per_row(&group.space, &n.shape);
                        (rows_only && (n.inputs.iter().any(|x| self.is_row(*x)) || row_shape(&n.shape))) || with_reads
                    }
                };
            self.level_row.insert(id, row);
        }
        // Last position (in `order`) where each node is read.
        let mut last_use: HashMap<NodeId, usize> = HashMap::new();
        for (pos, n) in order.iter().enumerate() {
            for &x in &g.node(*n).inputs {
                last_use.insert(x, pos);
            }
        }
        let escapes = &self.fusion.escapes;
        let mut body = Vec::new();
        let mut locs = Vec::new();
        for (pos, &id) in order.iter().enumerate() {
            let n = g.node(id);
            let row = self.is_row(id);
            let srcs: Vec<Reg> = n
                .inputs
                .iter()
                .map(|x| if row && read(x) { self.row_operand(*x, &group.space) } else { self.operand(*x) })
                .collect::<Result<_>>()?;
            if in_group(id)
                && escapes[id.index()]
                && !row
                && rows_kernel
                && !perm.iter().enumerate().all(|(i, p)| i == *p)
            {
                return Err(IrError::internal(format!("%{} is an element output of a permuted row kernel", id.0)));
            }
            let dst = if in_group(id) && escapes[id.index()] {
                self.out_reg(id, row)
            } else {
                self.regs.tile(n.dtype(), row)
            };
            let scan = crate::fuse::row_scan(g, id).filter(|_| rows_kernel);
            body.push(match n.op {
                Op::Unary(op) => Instr::Unary { op, dst, src: srcs[0] },
                Op::Binary(op) => Instr::Binary { op, dst, a: srcs[0], b: srcs[1] },
                Op::Where => Instr::Select { dst, cond: srcs[0], a: srcs[1], b: srcs[2] },
                Op::Cast(_) => Instr::Cast { dst, src: srcs[0] },
                Op::Reduce { op, .. } => Instr::Reduce { op, dst, src: srcs[0] },
                Op::Library(..) if scan.is_some() => Instr::Scan { kind: scan.expect("a row scan"), dst, src: srcs[0] },
                Op::Input(_) | Op::Const(_) | Op::Fill(_) | Op::View(_) | Op::Library(..) => {
                    return Err(IrError::internal(format!(
                        "%{} ({}) is not computed by a tile program",
                        id.0,
                        n.op.name()
                    )));
                }
            });
            self.value.insert(id, dst);
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
                if last_use.get(&x) == Some(&pos) && inside[x.index()] {
                    let r = self.value[&x];
                    let decl = self.regs.decls[r.0 as usize];
                    if decl.kind == RegKind::Tile {
                        self.regs.free.entry((decl.dtype, decl.row)).or_default().push(r);
                    }
                }
            }
        }
        // Anchors that are leaves (an argument or constant returned as is) are copied.
        for &r in anchors.iter().filter(|r| g.node(**r).op.is_data()) {
            let src = self.operand(r)?;
            let dst = self.out_reg(r, false);
            body.push(Instr::Copy { dst, src });
        }
        let fused_ops = count_ops(g, mat, anchors);
        let mut kernel = TileKernel {
            name,
            shape,
            perm,
            row_len,
            library: None,
            args: std::mem::take(&mut self.args),
            arg_views: std::mem::take(&mut self.arg_views),
            outs: std::mem::take(&mut self.outs),
            regs: std::mem::take(&mut self.regs.decls),
            body,
            tile_elems: 1,
            program: None,
            locs,
            fused_ops,
        };
        kernel.tile_elems = choose_tile(&kernel, &self.plan.buffers, budget);
        Ok(kernel)
    }
}

/// Bytes per element of tile memory the kernel's body touches: tile registers and arguments,
/// except arguments of one element and registers only ever holding one broadcast value
/// (computed from constants and such arguments), which cost nothing per element.
fn bytes_per_element(k: &TileKernel, buffers: &[BufferDecl]) -> usize {
    let mut scalar: Vec<bool> = k
        .regs
        .iter()
        .map(|r| match r.kind {
            RegKind::Scalar(_) => true,
            RegKind::Arg(a) => buffers[k.args[a as usize].0 as usize].shape.numel() == 1,
            _ => false,
        })
        .collect();
    let mut needs = vec![false; k.regs.len()];
    for ins in &k.body {
        let uniform = !ins.per_row() && ins.srcs().iter().all(|s| scalar[s.0 as usize]);
        for s in ins.srcs().iter() {
            needs[s.0 as usize] |= !scalar[s.0 as usize];
        }
        let d = ins.dst().0 as usize;
        if k.regs[d].kind == RegKind::Tile {
            scalar[d] = uniform;
        }
        needs[d] |= !uniform;
    }
    k.regs
        .iter()
        .zip(&needs)
        .filter(|(d, n)| **n && matches!(d.kind, RegKind::Tile | RegKind::Arg(_)) && !d.row)
        .map(|(d, _)| d.dtype.size())
        .sum()
}

/// Kernels with a row scan plan their tiles for this many times the budget (tiles in the
/// second-level cache): `np.cumsum(x * 2 + 1, -1) / n` over 4096 x 1024 float32 ran in
/// 2.17 ms with tiles of 2 rows, 1.85 ms with tiles of 10.
const SCAN_BUDGET_FACTOR: usize = 4;

/// Elementwise kernels of one instruction whose outputs are not streamed plan for this many
/// times the budget: nothing they compute is read again, so the budget's cache residency buys
/// them nothing, while each tile costs its set-up. Over 4096 x 1024 float32, `(x - b) * s`
/// with row vectors `b` and `s` went from 1.00-1.05 to 0.79-0.86 ms and `x * c` with a column
/// `c` from 0.79-0.87 to 0.74-0.80 ms (alternating processes with and without); layer_norm,
/// whose passes re-read the tile, was 16-25% slower with larger tiles.
const ONE_PASS_BUDGET_FACTOR: usize = 4;

/// Row kernels of short rows (at most [`ROW_OPS_SHORT_ROW`] elements) with this many
/// instructions on per-row values (box corners computed beside a detector's class scores)
/// plan for [`ROW_OPS_BUDGET_FACTOR`] times the budget: each of those instructions is one
/// dispatch per tile over a few dozen values. A detector's candidates (1153 rows of 80
/// scores, eleven per-row instructions) took 25 / 29 us (minimum / median) back to back with
/// 8 times the budget, 26-27 / 32-33 us with 4 times and 30-31 / 42-43 us with the budget
/// itself. Long rows (a layer norm's) keep their tiles: their element passes re-read them.
const ROW_OPS_MANY: usize = 4;
/// See [`ROW_OPS_MANY`].
const ROW_OPS_BUDGET_FACTOR: usize = 8;
/// See [`ROW_OPS_MANY`].
const ROW_OPS_SHORT_ROW: usize = 256;

/// The bytes of tile memory a block may use, and whether that is a hard limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TileBudget {
    /// Bytes of tile registers per block.
    pub bytes: usize,
    /// A hard limit (the NPU twin's Unified Buffer) rather than a cache size to aim for.
    pub hard: bool,
}

/// Elements per tile for `k` so the tile memory its body touches fits the budget; row
/// kernels get whole rows (a row longer than the budget is one tile by itself, which
/// [`check_tiles_fit`] refuses under a hard budget).
pub(crate) fn choose_tile(k: &TileKernel, buffers: &[BufferDecl], budget: TileBudget) -> usize {
    let scans = k.body.iter().any(|i| matches!(i, Instr::Scan { .. } | Instr::ScanMap { .. }));
    let (hard, budget) = (budget.hard, budget.bytes);
    // Outputs written with streaming stores go through a scratch tile that must stay in cache:
    // `a + b` over 2**24 float32 was 3.3-3.9 -> 4.1-4.2 ms with the larger tiles.
    let one_pass =
        k.row_len == 0 && k.body.len() == 1 && k.program.is_none() && k.library.is_none() && !k.streams_outputs();
    let per_row_ops = k.body.iter().filter(|i| !i.per_row() && k.regs[i.dst().0 as usize].row).count();
    let budget = match (hard, scans, one_pass) {
        (false, true, _) => budget.saturating_mul(SCAN_BUDGET_FACTOR),
        (false, false, true) => budget.saturating_mul(ONE_PASS_BUDGET_FACTOR),
        _ if !hard && (1..=ROW_OPS_SHORT_ROW).contains(&k.row_len) && per_row_ops >= ROW_OPS_MANY => {
            budget.saturating_mul(ROW_OPS_BUDGET_FACTOR)
        }
        _ => budget,
    };
    let per_elem = bytes_per_element(k, buffers).max(1);
    let numel = k.shape.numel();
    if let Some(rows) = numel.checked_div(k.row_len) {
        // At least two rows when two fit twice the budget: a tile's fixed cost (register set-up,
        // one dispatch per instruction) spread over two rows made layer_norm on 4096 x 1024
        // float32 (one 24 KiB row per tile) 16% faster; tiles already holding two rows gained
        // nothing from larger ones.
        let fit = budget / per_elem / k.row_len;
        let fit = if fit == 1 && !hard && 2 * per_elem * k.row_len <= 2 * budget { 2 } else { fit };
        let rows_per_tile = fit.clamp(1, rows.max(1));
        (rows_per_tile * k.row_len).max(1)
    } else if hard {
        // Whole multiples of 256 elements when that many fit, never more than the budget.
        let fit = (budget / per_elem).min(TILE_MAX);
        let tile = if fit >= 256 { fit / 256 * 256 } else { fit.max(1) };
        tile.min(numel).max(1)
    } else {
        let tile = (budget / per_elem).clamp(TILE_MIN, TILE_MAX) / 256 * 256;
        tile.min(numel).max(1)
    }
}

/// Under a hard budget: an error naming the first kernel whose tile registers exceed it
/// (a row kernel whose single row does not fit the Unified Buffer).
pub(crate) fn check_tiles_fit(plan: &KernelPlan, budget: TileBudget) -> Result<()> {
    for k in plan.kernels.iter().filter(|k| k.program.is_none() && !k.body.is_empty()) {
        let bytes = k.tile_elems.saturating_mul(bytes_per_element(k, &plan.buffers));
        if bytes > budget.bytes {
            let mut e = IrError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "kernel {} needs {bytes} bytes of tile registers per block for a tile of {} elements \
                     (row length {}), more than the {}-byte Unified Buffer of an AI Core",
                    k.name, k.tile_elems, k.row_len, budget.bytes
                ),
            );
            e.loc = k.locs.first().cloned();
            return Err(e);
        }
    }
    Ok(())
}

/// `order` with the one-element ops whose operands are leaves or such ops first (the casts
/// of Python scalar arguments): the VM computes them once, and moved out of the way they no
/// longer split the chains of tile arithmetic that the `chain` pass fuses. Still topological.
fn scalars_first(g: &Graph, order: Vec<NodeId>, inside: &[bool]) -> Vec<NodeId> {
    let mut hoisted = vec![false; g.len()];
    for &id in &order {
        let n = g.node(id);
        hoisted[id.index()] = !n.op.is_reduce()
            && n.shape.numel() == 1
            && n.inputs.iter().all(|x| !inside[x.index()] || hoisted[x.index()]);
    }
    let (first, rest): (Vec<NodeId>, Vec<NodeId>) = order.into_iter().partition(|id| hoisted[id.index()]);
    first.into_iter().chain(rest).collect()
}
