//! Block programs: the tile-program form of the kernel language (`@pyasc.kernel`).
//!
//! A kernel written per block (Ascend C's programming model) runs the same [`BlockProgram`]
//! once for every block index `0..block_num`. Each block owns a Unified Buffer of `ub_bytes`
//! bytes; its local tensors are tile registers at fixed byte offsets of that buffer (several
//! registers may view the same bytes: the slots of a queue, a slice of a tensor). Global
//! memory is the program's flat `globals` (one typed buffer per array argument), touched only
//! by [`BStmt::Copy`], whose element offsets are integer [`Expr`]s of the block index, the
//! loop variables and the integer scalar arguments. Vector instructions are the tile IR's
//! [`Instr`]s over a run-time element count; rows are reduced by [`BStmt::Reduce`] and
//! per-row values spread over rows by [`BStmt::Broadcast`].
//!
//! Counts and offsets may depend on values known only at launch, so every access is checked
//! against its buffer when the program runs (a launch checks all blocks before any memory is
//! touched); [`verify_block`] checks what is static: dtypes, register placement, loop
//! variables.

use crate::block_expr::ExprId as E;
use crate::dtype::DType;
use crate::error::{IrError, Result, SourceLoc};
use crate::op::{BinaryOp, ReduceOp};
use crate::tile::{dtypes_ok, Instr, Reg, RegDecl, RegKind};

pub use crate::block_expr::{Expr, ExprId, Exprs, IntOp};

/// One statement of a block program; `site` is the user's line that wrote it.
#[derive(Clone, Debug, PartialEq)]
pub enum BStmt {
    /// `DataCopy`: `count` elements between `globals[global][start..]` and the register `reg`
    /// (`to_local`: global to local). The global tensor view spans `lo..hi`; `start` must lie in
    /// it with its `count` elements. Unless `pad`, the bytes moved are a multiple of 32.
    Copy {
        /// Direction: global to local when true.
        to_local: bool,
        /// Global buffer index.
        global: u16,
        /// Local tensor register.
        reg: Reg,
        /// First element moved.
        start: E,
        /// First element of the global view.
        lo: E,
        /// End of the global view.
        hi: E,
        /// Elements moved.
        count: E,
        /// Any byte count (Ascend C's `DataCopyPad`).
        pad: bool,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// A vector instruction over the first `len` elements of its registers.
    Op {
        /// The instruction (`Reduce`, `ReduceMap` and `Scan` are not used here).
        ins: Instr,
        /// Elements.
        len: E,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// `dst[r] = op(src[r, 0..cols])` for `r < rows`.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Destination (`rows` values).
        dst: Reg,
        /// Source (`rows * cols` values, row-major).
        src: Reg,
        /// Rows.
        rows: E,
        /// Row length.
        cols: E,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// `dst[r, c] = src[r]` for `r < rows`, `c < cols`.
    Broadcast {
        /// Destination (`rows * cols` values).
        dst: Reg,
        /// Source (`rows` values).
        src: Reg,
        /// Rows.
        rows: E,
        /// Row length.
        cols: E,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// `dst[r, c] = op(a[r, c], b[r])` for `r < rows`, `c < cols`: a per-row value applied
    /// to its row without spreading it first.
    RowOp {
        /// Arithmetic (add, sub, mul, div).
        op: BinaryOp,
        /// Destination (`rows * cols` values).
        dst: Reg,
        /// Rows (`rows * cols` values).
        a: Reg,
        /// One value per row.
        b: Reg,
        /// Rows.
        rows: E,
        /// Row length.
        cols: E,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// `for var in range(start, end, step)`.
    Loop {
        /// Loop variable id.
        var: u16,
        /// First value.
        start: E,
        /// Bound (exclusive).
        end: E,
        /// Positive step.
        step: i64,
        /// Body.
        body: Vec<BStmt>,
    },
}

/// A kernel-language program, run once per block.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockProgram {
    /// Kernel name.
    pub name: String,
    /// Element dtype of each global buffer.
    pub globals: Vec<DType>,
    /// Number of integer scalar arguments.
    pub args: usize,
    /// Registers: `Tile` ones are local tensors, `Scalar` ones constants.
    pub regs: Vec<RegDecl>,
    /// Byte offset in the Unified Buffer of each `Tile` register (0 for scalars).
    pub at: Vec<usize>,
    /// Capacity in elements of each `Tile` register.
    pub cap: Vec<usize>,
    /// Unified Buffer bytes per block.
    pub ub_bytes: usize,
    /// Number of loop variables.
    pub vars: usize,
    /// The integer expressions statements refer to.
    pub exprs: Exprs,
    /// Statements.
    pub body: Vec<BStmt>,
}

impl BlockProgram {
    /// The element dtype of register `r`.
    pub fn dtype(&self, r: Reg) -> DType {
        self.regs[r.0 as usize].dtype
    }

    /// The nesting depth of each loop variable's loop (0 for a loop at the top level).
    pub fn var_depths(&self) -> Vec<usize> {
        fn walk(stmts: &[BStmt], d: usize, out: &mut Vec<usize>) {
            for s in stmts {
                if let BStmt::Loop { var, body, .. } = s {
                    if let Some(slot) = out.get_mut(*var as usize) {
                        *slot = d;
                    }
                    walk(body, d + 1, out);
                }
            }
        }
        let mut out = vec![0; self.vars];
        walk(&self.body, 0, &mut out);
        out
    }
}

/// Check a block program's static rules: registers inside the Unified Buffer, instruction and
/// copy dtypes, loop variables declared and not reused by nested loops.
pub fn verify_block(p: &BlockProgram) -> Result<()> {
    let err = |m: String| Err(IrError::internal(format!("block kernel {}: {m}", p.name)));
    if p.at.len() != p.regs.len() || p.cap.len() != p.regs.len() {
        return err("one placement per register".into());
    }
    for (i, r) in p.regs.iter().enumerate() {
        match r.kind {
            RegKind::Tile if p.at[i] + p.cap[i] * r.dtype.size() > p.ub_bytes => {
                return err(format!("register r{i} reaches past the Unified Buffer"))
            }
            RegKind::Tile | RegKind::Scalar(_) if !r.row => {}
            _ => return err(format!("register r{i} is neither a local tensor nor a constant")),
        }
    }
    fn walk(p: &BlockProgram, sets: &[u64], stmts: &[BStmt], open: &mut Vec<u16>) -> std::result::Result<(), String> {
        let reg = |r: Reg| -> std::result::Result<&RegDecl, String> {
            p.regs.get(r.0 as usize).ok_or_else(|| format!("{r} is not a register"))
        };
        let tile = |r: Reg| -> std::result::Result<(), String> {
            match reg(r)?.kind {
                RegKind::Tile => Ok(()),
                _ => Err(format!("{r} is not a local tensor")),
            }
        };
        let vars = |e: &E, open: &[u16]| -> std::result::Result<(), String> {
            let set = *sets.get(*e as usize).ok_or_else(|| format!("expression {e} is not in the table"))?;
            let mask = open.iter().fold(0u64, |m, v| m | (1u64 << v));
            match set & !mask {
                0 => Ok(()),
                stray => Err(format!("loop variable {} used outside its loop", stray.trailing_zeros())),
            }
        };
        for s in stmts {
            match s {
                BStmt::Copy { global, reg: r, start, lo, hi, count, .. } => {
                    tile(*r)?;
                    let g = p.globals.get(*global as usize).ok_or("a copy of a missing global")?;
                    if *g != reg(*r)?.dtype {
                        return Err(format!("a copy between {g} global memory and a {} tensor", reg(*r)?.dtype));
                    }
                    for e in [start, lo, hi, count] {
                        vars(e, open)?;
                    }
                }
                BStmt::Op { ins, len, .. } => {
                    if ins.per_row() {
                        return Err(format!("{ins:?} is a row instruction"));
                    }
                    tile(ins.dst())?;
                    let mut dts = Vec::new();
                    for &s in ins.srcs().iter() {
                        dts.push(reg(s)?.dtype);
                    }
                    if !dtypes_ok(ins, reg(ins.dst())?.dtype, &dts) {
                        return Err(format!("{ins:?} has operands of the wrong dtype"));
                    }
                    vars(len, open)?;
                }
                BStmt::Reduce { op, dst, src, rows, cols, .. } => {
                    tile(*dst)?;
                    tile(*src)?;
                    if op.result_dtype(reg(*src)?.dtype) != reg(*dst)?.dtype || !reg(*src)?.dtype.is_float() {
                        return Err(format!(
                            "a {} reduction of {} into {}",
                            op.name(),
                            reg(*src)?.dtype,
                            reg(*dst)?.dtype
                        ));
                    }
                    vars(rows, open)?;
                    vars(cols, open)?;
                }
                BStmt::Broadcast { dst, src, rows, cols, .. } => {
                    tile(*dst)?;
                    tile(*src)?;
                    if reg(*src)?.dtype != reg(*dst)?.dtype {
                        return Err("a broadcast between dtypes".into());
                    }
                    vars(rows, open)?;
                    vars(cols, open)?;
                }
                BStmt::RowOp { op, dst, a, b, rows, cols, .. } => {
                    for r in [dst, a, b] {
                        tile(*r)?;
                    }
                    let d = reg(*a)?.dtype;
                    let arith = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
                    let ok = matches!(d, DType::F32 | DType::F64)
                        && reg(*b)?.dtype == d
                        && reg(*dst)?.dtype == d
                        && arith.contains(op);
                    if !ok {
                        return Err(format!("a per-row {} of {d}", op.name()));
                    }
                    vars(rows, open)?;
                    vars(cols, open)?;
                }
                BStmt::Loop { var, start, end, step, body } => {
                    if *var as usize >= p.vars.min(64) || open.contains(var) || *step <= 0 {
                        return Err(format!("loop variable {var} (step {step}) is not a fresh variable"));
                    }
                    vars(start, open)?;
                    vars(end, open)?;
                    open.push(*var);
                    walk(p, sets, body, open)?;
                    open.pop();
                }
            }
        }
        Ok(())
    }
    let sets = p.exprs.var_sets().map_err(|m| IrError::internal(format!("block kernel {}: {m}", p.name)))?;
    walk(p, &sets, &p.body, &mut Vec::new()).or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(d: DType) -> RegDecl {
        RegDecl { dtype: d, kind: RegKind::Tile, row: false }
    }

    /// A program over `body` whose expression table holds 0, 16, 8 and variable 0 (ids 0..4).
    fn program(body: Vec<BStmt>) -> BlockProgram {
        let mut exprs = Exprs::default();
        for e in [Expr::Const(0), Expr::Const(16), Expr::Const(8), Expr::Var(0)] {
            exprs.intern(e);
        }
        BlockProgram {
            name: "k".into(),
            globals: vec![DType::F32],
            args: 0,
            regs: vec![tile(DType::F32), tile(DType::F64)],
            at: vec![0, 64],
            cap: vec![16, 8],
            ub_bytes: 128,
            vars: 1,
            exprs,
            body,
        }
    }

    fn copy(reg: u16, count: E) -> BStmt {
        BStmt::Copy { to_local: true, global: 0, reg: Reg(reg), start: 0, lo: 0, hi: 1, count, pad: false, site: None }
    }

    #[test]
    fn verify_checks_dtypes_placement_and_loop_scopes() {
        assert!(verify_block(&program(vec![copy(0, 2)])).is_ok());
        assert!(verify_block(&program(vec![copy(1, 2)])).is_err(), "f32 global into f64 tensor");
        assert!(verify_block(&program(vec![copy(0, 3)])).is_err(), "loop variable outside its loop");
        assert!(verify_block(&program(vec![copy(0, 9)])).is_err(), "an expression not in the table");
        let looped = BStmt::Loop { var: 0, start: 0, end: 2, step: 1, body: vec![copy(0, 3)] };
        assert!(verify_block(&program(vec![looped])).is_ok());
        let mut p = program(vec![]);
        p.cap[1] = 9;
        assert!(verify_block(&p).is_err(), "a register past the Unified Buffer");
        let add = Instr::Binary { op: crate::op::BinaryOp::Add, dst: Reg(0), a: Reg(0), b: Reg(1) };
        assert!(verify_block(&program(vec![BStmt::Op { ins: add, len: 2, site: None }])).is_err());
    }
}
