//! Tile programs: the contract between the compiler and every backend.
//!
//! A [`KernelPlan`] is a list of [`TileKernel`]s over numbered buffers. Each kernel
//! walks its iteration space (the shape of its outputs) in blocks spread over the cores;
//! each block walks tiles of `tile_elems` consecutive elements (in C order), and for each
//! tile runs the straight-line `body` on registers, mirroring Ascend C's
//! CopyIn -> Compute -> CopyOut: `Arg` registers are the tile of an input buffer
//! (read in place when it is contiguous, gathered otherwise), `Out` registers are the
//! tile of an output buffer, `Tile` registers are scratch buffers in cache and `Scalar`
//! registers hold one broadcast value.

use crate::dtype::DType;
use crate::error::{IrError, Result, SourceLoc};
use crate::library::{lookup, LibCall, ScanKind};
use crate::op::{BinaryOp, ReduceOp, UnaryKind, UnaryOp};
use crate::scalar::Scalar;
use crate::shape::Shape;
use std::fmt;

/// Outputs of at least this many bytes are written with streaming stores (the tile VM's element
/// outputs, the block VM's copies into global buffers): no read for ownership of lines about to
/// be overwritten, no eviction of inputs still to be read. A quarter of the last-level cache
/// (8 MiB here) was tried: with row kernels prefetching their next tile, layer_norm over
/// 4096 x 1024 float32 (16 MiB out) took 1.68-1.84 ms streamed against 1.59-1.62 ms cached,
/// A/B in one process.
pub const STREAM_MIN_BYTES: usize = 32 << 20;

/// Bytes of tile registers per block a kernel is planned for by default: small enough that a
/// CPU kernel's tiles stay in the L1 data cache between its instructions (measured best for
/// fused elementwise chains). The one source of this number; `PYASC_TILE_BUDGET` overrides it
/// on the CPU device.
pub const DEFAULT_TILE_BUDGET: usize = 32 * 1024;

/// A register of a tile program.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u16);

/// Index of a buffer of a plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

/// Where a register's data lives for the current tile.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RegKind {
    /// A scratch tile in the block's local memory.
    Tile,
    /// One value, broadcast over the tile.
    Scalar(Scalar),
    /// The tile of the kernel's `i`-th argument buffer, broadcast to the iteration space.
    Arg(u16),
    /// The tile of the kernel's `i`-th output buffer.
    Out(u16),
}

/// A register's declaration.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RegDecl {
    /// Element type.
    pub dtype: DType,
    /// Storage.
    pub kind: RegKind,
    /// In a row kernel: one value per row of the tile (a reduction result) instead of one
    /// per element.
    pub row: bool,
}

/// One vector instruction over whole tiles. `dst` is never one of the operands.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Instr {
    /// `dst = op(src)`.
    Unary {
        /// Function.
        op: UnaryOp,
        /// Destination.
        dst: Reg,
        /// Operand.
        src: Reg,
    },
    /// `dst = op(a, b)`.
    Binary {
        /// Function.
        op: BinaryOp,
        /// Destination.
        dst: Reg,
        /// Left operand.
        a: Reg,
        /// Right operand.
        b: Reg,
    },
    /// `dst = cond ? a : b`.
    Select {
        /// Destination.
        dst: Reg,
        /// Bool condition.
        cond: Reg,
        /// Value where true.
        a: Reg,
        /// Value where false.
        b: Reg,
    },
    /// `dst = cmp(a, b) ? t : f`: a comparison and the select reading it in one pass, the
    /// condition never stored (one dtype of 32 or 64 bits throughout; NaN compares as in
    /// [`Instr::Binary`]).
    SelectCmp {
        /// The comparison.
        cmp: BinaryOp,
        /// Destination.
        dst: Reg,
        /// Left operand of the comparison.
        a: Reg,
        /// Right operand of the comparison.
        b: Reg,
        /// Value where the comparison holds.
        t: Reg,
        /// Value where it does not.
        f: Reg,
    },
    /// `dst = src as dst.dtype`.
    Cast {
        /// Destination.
        dst: Reg,
        /// Operand.
        src: Reg,
    },
    /// `dst = src` (same dtype).
    Copy {
        /// Destination.
        dst: Reg,
        /// Operand.
        src: Reg,
    },
    /// `dst = op2(op1(a, b), c)`, or `op2(c, op1(a, b))` if `swap`: two float arithmetic
    /// operations (add, sub, mul) in one pass, each rounded as if run alone.
    Chain {
        /// First operation.
        op1: BinaryOp,
        /// Second operation.
        op2: BinaryOp,
        /// `c` is the left operand of `op2`.
        swap: bool,
        /// Destination.
        dst: Reg,
        /// Left operand of `op1`.
        a: Reg,
        /// Right operand of `op1`.
        b: Reg,
        /// The other operand of `op2`.
        c: Reg,
    },
    /// `dst = op1(a, b) * scale + shift`: a normalisation's epilogue (op1 among add, sub, mul;
    /// one float dtype) in one pass, each operation rounded as if run alone.
    ScaleShift {
        /// First operation.
        op1: BinaryOp,
        /// Destination.
        dst: Reg,
        /// Left operand of `op1`.
        a: Reg,
        /// Right operand of `op1`.
        b: Reg,
        /// The factor.
        scale: Reg,
        /// The term added last.
        shift: Reg,
    },
    /// `dst[r] = op(src[r, :])` for every row `r` of the tile (row kernels only).
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Row register receiving one value per row.
        dst: Reg,
        /// Element register holding the rows.
        src: Reg,
    },
    /// `dst[r] = op(map(a[r, :], b[r, :]))` for every row `r` of the tile (row kernels only):
    /// a reduction of an arithmetic result that never makes a round trip through a tile. `map`
    /// is add, sub or mul on one float dtype, rounded per element as if run alone; `a` and `b`
    /// are element values or broadcast scalars, never per-row values.
    ReduceMap {
        /// The reduction (a sum).
        op: ReduceOp,
        /// The arithmetic applied to each pair of elements first.
        map: BinaryOp,
        /// Row register receiving one value per row.
        dst: Reg,
        /// Left operand of `map`.
        a: Reg,
        /// Right operand of `map`.
        b: Reg,
    },
    /// `dst[r] = sum((src[r, :] - center[r])^2)` for every row `r` of the tile (row kernels
    /// only): a variance's sum of squared deviations read from the values themselves, never
    /// from a stored difference. Each difference and square rounds as if run alone and the
    /// squares add as a plain row sum adds, so the result is the unfused instructions' to the
    /// bit. `src` is an element value (or broadcast scalar), `center` a per-row value or
    /// scalar; one float dtype of 32 or 64 bits.
    SumSquaredDev {
        /// Row register receiving one value per row.
        dst: Reg,
        /// The values.
        src: Reg,
        /// The value subtracted from each row (its mean).
        center: Reg,
    },
    /// `dst = ((x - mean) * rstd) * scale + shift`: a normalisation in one pass from the values
    /// themselves, each operation rounded as if run alone (one float dtype of 32 or 64 bits;
    /// any operand may be a broadcast scalar or, in row kernels, a per-row value).
    Normalize {
        /// Destination.
        dst: Reg,
        /// The values.
        x: Reg,
        /// The value subtracted first.
        mean: Reg,
        /// The first factor.
        rstd: Reg,
        /// The second factor.
        scale: Reg,
        /// The term added last.
        shift: Reg,
    },
    /// `dst[r, :k+1] = kind(src[r, :k+1])` for every row `r` of the tile and every `k`: the
    /// running values along each row (row kernels only; both element registers of one dtype).
    Scan {
        /// The combining operation.
        kind: ScanKind,
        /// Element register receiving the running values.
        dst: Reg,
        /// Element register holding the rows.
        src: Reg,
    },
    /// A row scan with arithmetic fused on both sides: `v = src`, then `steps[..pre]` applied
    /// to `v` element by element, the running values of `kind` along each row, then
    /// `steps[pre..len]` (row kernels only; one float dtype throughout). Each step rounds as
    /// if run alone, so the result is the unfused instructions' to the bit; the steps' results
    /// never make a trip through a tile.
    ScanMap {
        /// The combining operation.
        kind: ScanKind,
        /// Element register receiving the result.
        dst: Reg,
        /// Element register (or broadcast scalar) the first step reads.
        src: Reg,
        /// The steps; those past `len` are unused.
        steps: [MapStep; 3],
        /// Steps applied before the scan.
        pre: u8,
        /// Steps in use.
        len: u8,
    },
}

/// One elementwise step of an [`Instr::ScanMap`]: `v = op(v, arg)`, or `op(arg, v)` if `swap`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MapStep {
    /// The arithmetic (add, sub, mul or div).
    pub op: BinaryOp,
    /// `arg` is the left operand.
    pub swap: bool,
    /// The other operand: an element register or a broadcast scalar, never a per-row value.
    pub arg: Reg,
}

/// `$body` with `$d` bound to the destination field of `$ins`, whatever the variant (by value
/// or by reference, as `$ins` is).
macro_rules! each_dst {
    ($ins:expr, $d:ident => $body:expr) => {
        match $ins {
            Instr::Unary { dst: $d, .. }
            | Instr::Binary { dst: $d, .. }
            | Instr::Select { dst: $d, .. }
            | Instr::SelectCmp { dst: $d, .. }
            | Instr::Cast { dst: $d, .. }
            | Instr::Copy { dst: $d, .. }
            | Instr::Chain { dst: $d, .. }
            | Instr::ScaleShift { dst: $d, .. }
            | Instr::Reduce { dst: $d, .. }
            | Instr::ReduceMap { dst: $d, .. }
            | Instr::SumSquaredDev { dst: $d, .. }
            | Instr::Normalize { dst: $d, .. }
            | Instr::Scan { dst: $d, .. }
            | Instr::ScanMap { dst: $d, .. } => $body,
        }
    };
}

impl Instr {
    /// True for the instructions that work on whole rows of a row kernel (reductions and
    /// scans), which the VM runs row by row rather than element by element.
    pub fn per_row(&self) -> bool {
        matches!(
            self,
            Instr::Reduce { .. }
                | Instr::ReduceMap { .. }
                | Instr::SumSquaredDev { .. }
                | Instr::Scan { .. }
                | Instr::ScanMap { .. }
        )
    }

    /// The register written.
    pub fn dst(&self) -> Reg {
        each_dst!(*self, dst => dst)
    }
    /// The register written, to change it (renaming a value's register).
    pub fn dst_mut(&mut self) -> &mut Reg {
        each_dst!(self, dst => dst)
    }
    /// The registers read (one to five), without allocating.
    pub fn srcs(&self) -> Srcs {
        match *self {
            Instr::Unary { src, .. }
            | Instr::Cast { src, .. }
            | Instr::Copy { src, .. }
            | Instr::Reduce { src, .. }
            | Instr::Scan { src, .. } => Srcs([src, src, src, src, src], 1),
            Instr::Binary { a, b, .. } | Instr::ReduceMap { a, b, .. } => Srcs([a, b, b, b, b], 2),
            Instr::Select { cond, a, b, .. } => Srcs([cond, a, b, b, b], 3),
            Instr::SelectCmp { a, b, t, f, .. } => Srcs([a, b, t, f, f], 4),
            Instr::Chain { a, b, c, .. } => Srcs([a, b, c, c, c], 3),
            Instr::ScaleShift { a, b, scale, shift, .. } => Srcs([a, b, scale, shift, shift], 4),
            Instr::SumSquaredDev { src, center, .. } => Srcs([src, center, center, center, center], 2),
            Instr::Normalize { x, mean, rstd, scale, shift, .. } => Srcs([x, mean, rstd, scale, shift], 5),
            Instr::ScanMap { src, steps, len, .. } => {
                let arg = |i: usize| if i < len as usize { steps[i].arg } else { src };
                Srcs([src, arg(0), arg(1), arg(2), src], 1 + len.min(3))
            }
        }
    }
}

/// The operand registers of an instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Srcs([Reg; 5], u8);

impl std::ops::Deref for Srcs {
    type Target = [Reg];
    fn deref(&self) -> &[Reg] {
        &self.0[..self.1 as usize]
    }
}

/// One fused kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct TileKernel {
    /// Name used in logs, profiles and errors.
    pub name: String,
    /// The iteration space in iteration order: `shape[i]` is logical dimension `perm[i]`.
    /// Element outputs have this shape (then `perm` is the identity).
    pub shape: Shape,
    /// Logical dimension of each iteration dimension (identity except in reductions over
    /// leading axes, which iterate with the reduced axes last).
    pub perm: Vec<usize>,
    /// Row kernels: elements per row (the product of the trailing, reduced iteration dims);
    /// 0 for elementwise kernels.
    pub row_len: usize,
    /// A library routine the kernel runs first (its operands are the first
    /// `library.operands` arguments, its result the first output); the tile program, if any,
    /// then runs as an epilogue over the routine's result.
    pub library: Option<LibCall>,
    /// Buffers read; register `Arg(i)` is `args[i]`, read through the views `arg_views[i]`
    /// (in order), broadcast to `shape`.
    pub args: Vec<BufferId>,
    /// Movement ops applied to each argument buffer before it is read.
    pub arg_views: Vec<Vec<crate::view::ViewSpec>>,
    /// Buffers written; register `Out(i)` is `outs[i]`.
    pub outs: Vec<BufferId>,
    /// The register file.
    pub regs: Vec<RegDecl>,
    /// Straight-line program run once per tile.
    pub body: Vec<Instr>,
    /// Elements per tile, chosen so the tile registers fit in cache (for a structured
    /// program: positions of its outer space per tile).
    pub tile_elems: usize,
    /// A structured program (loads, stores, loop nests) run instead of the flat `body`.
    pub program: Option<crate::program::Program>,
    /// The user's source lines whose ops this kernel computes.
    pub locs: Vec<SourceLoc>,
    /// Number of graph ops fused into the kernel.
    pub fused_ops: usize,
}

/// What a buffer is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BufferKind {
    /// The `i`-th argument of the operator (read only, never written).
    Input(u32),
    /// Produced by a kernel of the plan.
    Computed,
}

/// A buffer's declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    /// Element type.
    pub dtype: DType,
    /// Logical shape.
    pub shape: Shape,
    /// Origin.
    pub kind: BufferKind,
}

impl TileKernel {
    /// Whether the element outputs are written with streaming stores ([`STREAM_MIN_BYTES`] or
    /// more of them, and no library routine whose epilogue reads its output in place): they
    /// are computed into a scratch tile and copied out past the caches.
    pub fn streams_outputs(&self) -> bool {
        let out_bytes: usize =
            self.regs.iter().filter(|r| matches!(r.kind, RegKind::Out(_)) && !r.row).map(|r| r.dtype.size()).sum();
        self.library.is_none() && self.shape.numel().saturating_mul(out_bytes) >= STREAM_MIN_BYTES
    }
}

/// A compiled operator: kernels in execution order over a set of buffers.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct KernelPlan {
    /// All buffers.
    pub buffers: Vec<BufferDecl>,
    /// Kernels in dependency order.
    pub kernels: Vec<TileKernel>,
    /// The buffer of each result of the operator, in order (may repeat).
    pub outputs: Vec<BufferId>,
    /// Stacks whose columns their producers may write in place (a launch that does skips
    /// the copying kernel; a launch that keeps every kernel's output runs it).
    pub stack_columns: Vec<StackColumns>,
}

/// `np.stack` of per-row results along the last axis, written in place: column `i` of
/// `stack` (shape `(n, columns.len())`) is buffer `columns[i]` (shape `(n,)`), which only
/// kernel `kernel` (a `concatenate` of the columns viewed as `(n, 1)`) reads. Each column is
/// a per-row output of one row kernel, so that kernel can store it with a stride instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackColumns {
    /// The concatenation that copies the columns.
    pub kernel: usize,
    /// Its output.
    pub stack: BufferId,
    /// The column buffers, in order.
    pub columns: Vec<BufferId>,
}

impl KernelPlan {
    /// Check register and buffer references, writability and dtypes of every kernel.
    pub fn verify(&self) -> Result<()> {
        for s in &self.stack_columns {
            let decl = |b: BufferId| self.buffers.get(b.0 as usize);
            let stack = decl(s.stack).ok_or_else(|| IrError::internal("a stack of columns names no buffer"))?;
            let copies = self.kernels.get(s.kernel).is_some_and(|k| k.outs == [s.stack] && k.args == s.columns);
            let fits = stack.shape.rank() == 2
                && stack.shape.0[1] == s.columns.len()
                && s.columns
                    .iter()
                    .all(|c| decl(*c).is_some_and(|d| d.dtype == stack.dtype && d.shape.0 == [stack.shape.0[0]]));
            if !copies || !fits {
                return Err(IrError::internal(format!("buffer b{} is no stack of its columns", s.stack.0)));
            }
        }
        let mut written = vec![false; self.buffers.len()];
        for (b, d) in self.buffers.iter().enumerate() {
            written[b] = matches!(d.kind, BufferKind::Input(_));
        }
        for k in &self.kernels {
            verify_kernel(k, &self.buffers, &written)?;
            for o in &k.outs {
                written[o.0 as usize] = true;
            }
        }
        for o in &self.outputs {
            if !written.get(o.0 as usize).copied().unwrap_or(false) {
                return Err(IrError::internal(format!("output buffer b{} is never written", o.0)));
            }
        }
        Ok(())
    }
}

fn verify_kernel(k: &TileKernel, buffers: &[BufferDecl], ready: &[bool]) -> Result<()> {
    let err = |m: String| Err(IrError::internal(format!("kernel {}: {m}", k.name)));
    if let Some(p) = &k.program {
        return crate::program::verify_program(k, p, buffers, ready);
    }
    let mut lib_operands = 0;
    if let Some(call) = &k.library {
        let op = lookup(call.id).map_err(|e| IrError::internal(format!("kernel {}: {}", k.name, e.message)))?;
        lib_operands = call.operands as usize;
        if k.args.len() < lib_operands || k.outs.is_empty() {
            return err(format!("a {} call needs its {lib_operands} operands and an output", op.name()));
        }
        if k.arg_views.len() != k.args.len() {
            return err("one view list per argument".into());
        }
        // Each operand as the routine sees it: its buffer through its views.
        let mut viewed = Vec::with_capacity(lib_operands);
        for (b, views) in k.args[..lib_operands].iter().zip(&k.arg_views) {
            match buffers.get(b.0 as usize) {
                Some(d) if ready[b.0 as usize] => {
                    let mut shape = d.shape.clone();
                    for v in views {
                        shape = v.out_shape(&shape)?;
                    }
                    viewed.push(BufferDecl { shape, ..d.clone() });
                }
                _ => return err(format!("a {} call reads b{} before it is written", op.name(), b.0)),
            }
        }
        let operands: Vec<&BufferDecl> = viewed.iter().collect();
        let Some(out) = buffers.get(k.outs[0].0 as usize) else { return err("output is no buffer".into()) };
        op.verify_call(call, &operands, out)
            .map_err(|e| IrError::internal(format!("kernel {}: {}", k.name, e.message)))?;
        if k.body.is_empty() {
            return if k.outs.len() == 1 { Ok(()) } else { err("a library call writes one output".into()) };
        }
        if !op.fuses_epilogue() {
            return err(format!("{} takes no epilogue", op.name()));
        }
    }
    let reg = |r: Reg| k.regs.get(r.0 as usize).copied();
    let rank = k.shape.rank();
    let mut sorted = k.perm.clone();
    sorted.sort_unstable();
    if sorted != (0..rank).collect::<Vec<_>>() {
        return err(format!("perm {:?} is not a permutation of {rank} dims", k.perm));
    }
    let identity = k.perm.iter().enumerate().all(|(i, p)| i == *p);
    let mut logical = vec![0; rank];
    for (i, p) in k.perm.iter().enumerate() {
        logical[*p] = k.shape.0[i];
    }
    let logical = Shape(logical);
    let numel = k.shape.numel();
    let rows = if k.row_len == 0 { numel } else { numel / k.row_len.max(1) };
    if k.row_len > 0 && numel > 0 && !numel.is_multiple_of(k.row_len) {
        return err(format!("row length {} does not divide {numel} elements", k.row_len));
    }
    if k.arg_views.len() != k.args.len() {
        return err("one view list per argument".into());
    }
    for (i, b) in k.args.iter().enumerate().skip(lib_operands) {
        let Some(decl) = buffers.get(b.0 as usize) else { return err(format!("arg {i} is no buffer")) };
        if !ready[b.0 as usize] {
            return err(format!("reads b{} before it is written", b.0));
        }
        let mut shape = decl.shape.clone();
        for v in &k.arg_views[i] {
            shape = v.out_shape(&shape)?;
        }
        if !shape.broadcasts_to(&logical) {
            return err(format!("arg b{} viewed as {} does not broadcast to {}", b.0, shape, logical));
        }
    }
    for (o, b) in k.outs.iter().enumerate() {
        let row_out = k.regs.iter().any(|r| r.kind == RegKind::Out(o as u16) && r.row);
        match buffers.get(b.0 as usize) {
            Some(d) if d.kind == BufferKind::Computed && !row_out && d.shape == logical && identity => {}
            Some(d) if d.kind == BufferKind::Computed && row_out && d.shape.numel() == rows => {}
            _ => return err(format!("output b{} does not fit the kernel's space {}", b.0, logical)),
        }
    }
    for (i, r) in k.regs.iter().enumerate() {
        let buf = match r.kind {
            RegKind::Arg(a) => k.args.get(a as usize),
            RegKind::Out(o) => k.outs.get(o as usize),
            _ => None,
        };
        if let Some(b) = buf {
            if buffers[b.0 as usize].dtype != r.dtype {
                return err(format!("register r{i} has dtype {} but its buffer has another", r.dtype));
            }
        } else if matches!(r.kind, RegKind::Arg(_) | RegKind::Out(_)) {
            return err(format!("register r{i} names a missing buffer"));
        }
        // A per-row argument is read one element per row: its view has unit extents on the
        // reduced axes (it broadcasts over each row).
        let spans_rows = |a: u16| {
            k.arg_views.get(a as usize).and_then(|v| v.last()).is_some_and(|v| match v {
                crate::view::ViewSpec::Reshape(d) => {
                    d.len() == rank
                        && d.iter().zip(&logical.0).all(|(e, l)| *e == 1 || e == l)
                        && d.iter().product::<usize>() == numel / k.row_len.max(1)
                }
                _ => false,
            })
        };
        let bad_arg = matches!(r.kind, RegKind::Arg(a) if !spans_rows(a));
        if r.row && (k.row_len == 0 || bad_arg || matches!(r.kind, RegKind::Scalar(_))) {
            return err(format!("register r{i} is a row register outside a row kernel or an unaligned argument"));
        }
    }
    for ins in &k.body {
        let Some(dst) = reg(ins.dst()) else { return err(format!("{ins:?} writes a missing register")) };
        if !matches!(dst.kind, RegKind::Tile | RegKind::Out(_)) {
            return err(format!("{ins:?} writes a read-only register"));
        }
        let mut srcs = Vec::new();
        for &s in ins.srcs().iter() {
            if s == ins.dst() {
                return err(format!("{ins:?} reads its own destination"));
            }
            match reg(s) {
                Some(d) => {
                    // A per-row result reads only per-row values and scalars (a reduction is the
                    // one way from elements to rows; element results may read rows: broadcast).
                    let reduce =
                        matches!(ins, Instr::Reduce { .. } | Instr::ReduceMap { .. } | Instr::SumSquaredDev { .. });
                    if !reduce && dst.row && !d.row && !matches!(d.kind, RegKind::Scalar(_)) {
                        return err(format!("{ins:?} computes a per-row value from elements"));
                    }
                    srcs.push(d.dtype)
                }
                None => return err(format!("{ins:?} reads a missing register")),
            }
        }
        let ok = dtypes_ok(ins, dst.dtype, &srcs)
            && match ins {
                Instr::Reduce { src, .. } => {
                    let s = reg(*src).expect("checked above");
                    dst.row && !s.row && k.row_len > 0
                }
                Instr::ReduceMap { a, b, .. } => {
                    let flat = |r: &Reg| !reg(*r).expect("checked above").row;
                    dst.row && flat(a) && flat(b) && k.row_len > 0
                }
                Instr::SumSquaredDev { src, .. } => dst.row && !reg(*src).expect("checked above").row && k.row_len > 0,
                Instr::Scan { .. } | Instr::ScanMap { .. } => {
                    let flat = ins.srcs().iter().all(|r| !reg(*r).expect("checked above").row);
                    !dst.row && flat && k.row_len > 0 && k.perm.iter().enumerate().all(|(i, p)| i == *p)
                }
                _ => true,
            };
        if !ok {
            return err(format!("{ins:?} has operands of the wrong dtype or level"));
        }
    }
    if k.tile_elems == 0 {
        return err("tile_elems is 0".to_string());
    }
    Ok(())
}

/// True when an instruction writing a `dst` register from `srcs` (in operand order) has
/// operands and result of the dtypes the instruction computes on.
pub(crate) fn dtypes_ok(ins: &Instr, dst: DType, srcs: &[DType]) -> bool {
    match ins {
        Instr::Unary { op, .. } => match op.kind() {
            UnaryKind::Classify => dst == DType::Bool && srcs[0].is_float(),
            _ => dst == srcs[0],
        },
        Instr::Binary { op, .. } => {
            srcs[0] == srcs[1] && (if op.is_compare() { dst == DType::Bool } else { dst == srcs[0] })
        }
        Instr::Select { .. } => srcs[0] == DType::Bool && srcs[1] == dst && srcs[2] == dst,
        Instr::SelectCmp { cmp, .. } => cmp.is_compare() && selects_compared(dst) && srcs.iter().all(|d| *d == dst),
        Instr::Chain { op1, op2, .. } => {
            let arith = |o: &BinaryOp| matches!(o, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul);
            dst.is_float() && srcs.iter().all(|d| *d == dst) && arith(op1) && arith(op2)
        }
        Instr::ScaleShift { op1, .. } => {
            let arith = matches!(op1, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul);
            dst.is_float() && srcs.iter().all(|d| *d == dst) && arith
        }
        Instr::Cast { .. } => true,
        Instr::Copy { .. } => srcs[0] == dst,
        Instr::Reduce { op, .. } => {
            let want = match op {
                ReduceOp::ArgMax | ReduceOp::ArgMin => DType::I64,
                ReduceOp::Any | ReduceOp::All => DType::Bool,
                _ => srcs[0],
            };
            dst == want
        }
        Instr::ReduceMap { op, map, .. } => {
            let arith = matches!(map, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul);
            *op == ReduceOp::Sum && arith && dst.is_float() && srcs.iter().all(|d| *d == dst)
        }
        Instr::SumSquaredDev { .. } | Instr::Normalize { .. } => {
            matches!(dst, DType::F32 | DType::F64) && srcs.iter().all(|d| *d == dst)
        }
        Instr::Scan { kind, .. } => srcs[0] == dst && scans(*kind, dst),
        Instr::ScanMap { kind, steps, pre, len, .. } => {
            let arith = |s: &MapStep| matches!(s.op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div);
            let used = &steps[..(*len as usize).min(3)];
            dst.is_float()
                && srcs.iter().all(|d| *d == dst)
                && scans(*kind, dst)
                && *pre <= *len
                && *len as usize <= steps.len()
                && used.iter().all(arith)
        }
    }
}

/// True when an [`Instr::SelectCmp`] runs on `dtype`: the floats and integers of 32 and 64 bits.
pub fn selects_compared(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64)
}

/// True when a row scan of `kind` runs on `dtype` tiles: bools, integers and floats of 32 and
/// 64 bits (log-sum-exp: floats only), the dtypes the scan routines compute in.
pub fn scans(kind: ScanKind, dtype: DType) -> bool {
    match dtype {
        DType::F32 | DType::F64 => true,
        DType::Bool
        | DType::I8
        | DType::U8
        | DType::I16
        | DType::U16
        | DType::I32
        | DType::U32
        | DType::I64
        | DType::U64 => kind != ScanKind::LogSumExp,
        _ => false,
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}
