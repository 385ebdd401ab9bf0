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

use crate::dtype::DType;
use crate::error::{IrError, Result, SourceLoc};
use crate::op::ReduceOp;
use crate::tile::{dtypes_ok, Instr, Reg, RegDecl, RegKind};

/// An integer expression of the block index, loop variables and scalar arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A constant.
    Const(i64),
    /// The running block's index.
    Block,
    /// The number of blocks of the launch.
    BlockNum,
    /// The current value of loop variable `i`.
    Var(u16),
    /// Integer scalar argument `i`.
    Arg(u16),
    /// A binary integer operation.
    Bin(IntOp, Box<Expr>, Box<Expr>),
}

/// Integer operations of [`Expr`] (division and remainder floor, as in Python).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IntOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a // b`.
    FloorDiv,
    /// `a % b`.
    Mod,
    /// `min(a, b)`.
    Min,
    /// `max(a, b)`.
    Max,
}

/// The values an [`Expr`] is evaluated with.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// Block index.
    pub block: i64,
    /// Blocks of the launch.
    pub block_num: i64,
    /// Loop variables by id.
    pub vars: &'a [i64],
    /// Integer scalar arguments.
    pub args: &'a [i64],
}

impl Expr {
    /// The value in `env` (`Err` with a message on overflow or division by zero).
    pub fn eval(&self, env: &Env<'_>) -> std::result::Result<i64, String> {
        Ok(match self {
            Expr::Const(c) => *c,
            Expr::Block => env.block,
            Expr::BlockNum => env.block_num,
            Expr::Var(i) => *env.vars.get(*i as usize).ok_or("an unknown loop variable")?,
            Expr::Arg(i) => *env.args.get(*i as usize).ok_or("a missing scalar argument")?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(env)?, b.eval(env)?);
                let r = match op {
                    IntOp::Add => a.checked_add(b),
                    IntOp::Sub => a.checked_sub(b),
                    IntOp::Mul => a.checked_mul(b),
                    IntOp::FloorDiv | IntOp::Mod if b == 0 => return Err("integer division by zero".into()),
                    IntOp::FloorDiv => Some(a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0)),
                    IntOp::Mod => Some(a - b * (a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0))),
                    IntOp::Min => Some(a.min(b)),
                    IntOp::Max => Some(a.max(b)),
                };
                r.ok_or("integer overflow")?
            }
        })
    }

    /// The first loop variable this expression reads that `open` lacks.
    fn stray_var(&self, open: &[u16]) -> Option<u16> {
        match self {
            Expr::Var(i) if !open.contains(i) => Some(*i),
            Expr::Bin(_, a, b) => a.stray_var(open).or_else(|| b.stray_var(open)),
            _ => None,
        }
    }
}

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
        start: Expr,
        /// First element of the global view.
        lo: Expr,
        /// End of the global view.
        hi: Expr,
        /// Elements moved.
        count: Expr,
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
        len: Expr,
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
        rows: Expr,
        /// Row length.
        cols: Expr,
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
        rows: Expr,
        /// Row length.
        cols: Expr,
        /// The user's line.
        site: Option<SourceLoc>,
    },
    /// `for var in range(start, end, step)`.
    Loop {
        /// Loop variable id.
        var: u16,
        /// First value.
        start: Expr,
        /// Bound (exclusive).
        end: Expr,
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
    /// Statements.
    pub body: Vec<BStmt>,
}

impl BlockProgram {
    /// The element dtype of register `r`.
    pub fn dtype(&self, r: Reg) -> DType {
        self.regs[r.0 as usize].dtype
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
    fn walk(p: &BlockProgram, stmts: &[BStmt], open: &mut Vec<u16>) -> std::result::Result<(), String> {
        let reg = |r: Reg| -> std::result::Result<&RegDecl, String> {
            p.regs.get(r.0 as usize).ok_or_else(|| format!("{r} is not a register"))
        };
        let tile = |r: Reg| -> std::result::Result<(), String> {
            match reg(r)?.kind {
                RegKind::Tile => Ok(()),
                _ => Err(format!("{r} is not a local tensor")),
            }
        };
        fn vars(e: &Expr, open: &[u16]) -> std::result::Result<(), String> {
            match e.stray_var(open) {
                Some(v) => Err(format!("loop variable {v} used outside its loop")),
                None => Ok(()),
            }
        }
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
                    if matches!(ins, Instr::Reduce { .. } | Instr::ReduceMap { .. } | Instr::Scan { .. }) {
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
                BStmt::Loop { var, start, end, step, body } => {
                    if *var as usize >= p.vars || open.contains(var) || *step <= 0 {
                        return Err(format!("loop variable {var} (step {step}) is not a fresh variable"));
                    }
                    vars(start, open)?;
                    vars(end, open)?;
                    open.push(*var);
                    walk(p, body, open)?;
                    open.pop();
                }
            }
        }
        Ok(())
    }
    walk(p, &p.body, &mut Vec::new()).or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(args: &[i64]) -> Env<'_> {
        Env { block: 3, block_num: 8, vars: &[5], args }
    }

    fn bin(op: IntOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn expressions_follow_python_integer_rules() {
        let e = env(&[-7]);
        assert_eq!(bin(IntOp::FloorDiv, Expr::Arg(0), Expr::Const(2)).eval(&e), Ok(-4));
        assert_eq!(bin(IntOp::Mod, Expr::Arg(0), Expr::Const(2)).eval(&e), Ok(1));
        assert_eq!(bin(IntOp::FloorDiv, Expr::Const(7), Expr::Const(-2)).eval(&e), Ok(-4));
        assert_eq!(bin(IntOp::Mod, Expr::Const(7), Expr::Const(-2)).eval(&e), Ok(-1));
        let off = bin(IntOp::Add, bin(IntOp::Mul, Expr::Block, Expr::Const(100)), Expr::Var(0));
        assert_eq!(off.eval(&e), Ok(305));
        assert_eq!(bin(IntOp::Min, Expr::BlockNum, Expr::Const(4)).eval(&e), Ok(4));
        assert!(bin(IntOp::Mod, Expr::Const(1), Expr::Const(0)).eval(&e).is_err());
        assert!(bin(IntOp::Mul, Expr::Const(i64::MAX), Expr::Const(2)).eval(&e).is_err());
    }

    fn tile(d: DType) -> RegDecl {
        RegDecl { dtype: d, kind: RegKind::Tile, row: false }
    }

    fn program(body: Vec<BStmt>) -> BlockProgram {
        BlockProgram {
            name: "k".into(),
            globals: vec![DType::F32],
            args: 0,
            regs: vec![tile(DType::F32), tile(DType::F64)],
            at: vec![0, 64],
            cap: vec![16, 8],
            ub_bytes: 128,
            vars: 1,
            body,
        }
    }

    fn copy(reg: u16, count: Expr) -> BStmt {
        BStmt::Copy {
            to_local: true,
            global: 0,
            reg: Reg(reg),
            start: Expr::Const(0),
            lo: Expr::Const(0),
            hi: Expr::Const(16),
            count,
            pad: false,
            site: None,
        }
    }

    #[test]
    fn verify_checks_dtypes_placement_and_loop_scopes() {
        assert!(verify_block(&program(vec![copy(0, Expr::Const(8))])).is_ok());
        assert!(verify_block(&program(vec![copy(1, Expr::Const(8))])).is_err(), "f32 global into f64 tensor");
        assert!(verify_block(&program(vec![copy(0, Expr::Var(0))])).is_err(), "loop variable outside its loop");
        let looped = BStmt::Loop {
            var: 0,
            start: Expr::Const(0),
            end: Expr::Const(4),
            step: 1,
            body: vec![copy(0, Expr::Var(0))],
        };
        assert!(verify_block(&program(vec![looped])).is_ok());
        let mut p = program(vec![]);
        p.cap[1] = 9;
        assert!(verify_block(&p).is_err(), "a register past the Unified Buffer");
        let add = Instr::Binary { op: crate::op::BinaryOp::Add, dst: Reg(0), a: Reg(0), b: Reg(1) };
        assert!(verify_block(&program(vec![BStmt::Op { ins: add, len: Expr::Const(4), site: None }])).is_err());
    }
}
