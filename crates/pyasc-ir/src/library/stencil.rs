//! Stencil sweeps as a library op: `steps` applications of a traced stencil body over a grid
//! of one to three axes, the cells within the halo of an edge fixed.
//!
//! The op's attribute is the whole [`StencilSpec`]: the body as a small register [`Program`]
//! (instructions over reads of a field at a constant linear offset, temporaries and constants),
//! the grid's [`Layout`], the step count, where the fixed cells' values come from and the cache
//! budget of temporal blocking. Its operands are the fields (one shape, float32 or float64,
//! C-contiguous) and, with [`FixedCells::Array`], the array whose border the fixed cells keep;
//! its result has the fields' shape and dtype.

use super::{LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{ErrorKind, IrError, Result};
use crate::shape::Shape;
use std::sync::Arc;

/// Most operands of one [`Instr::Sum`].
pub const MAX_SUM: usize = 8;

/// A binary operation of a stencil body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `np.minimum(a, b)`: NaN if either is NaN.
    Min,
    /// `np.maximum(a, b)`: NaN if either is NaN.
    Max,
}

/// A unary operation of a stencil body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-a`
    Neg,
    /// `abs(a)`
    Abs,
    /// `np.sqrt(a)`
    Sqrt,
    /// `a` itself (a body that returns one read).
    Copy,
}

/// Where an instruction takes a value from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Operand {
    /// A field read at a linear offset from the cell.
    Read {
        /// Which field.
        field: usize,
        /// Linear offset from the cell being computed.
        offset: isize,
    },
    /// Temporary register.
    Tmp(usize),
    /// A constant (already rounded to the element type when the program is built).
    Const(f64),
}

/// One instruction; `dest` is a temporary register, or `None` for the output cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// `dest = op(a, b)`
    Bin {
        /// The operation.
        op: BinOp,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
        /// Register written, `None` for the output.
        dest: Option<usize>,
    },
    /// `dest = post(((a0 ± a1) ± a2) ± ...)`: a left-to-right chain of additions and subtractions
    /// in one pass (the same roundings as the chain of binary instructions), optionally then
    /// multiplied or divided by a constant. `a - b` is computed as `a + (-b)`, which IEEE 754
    /// defines to be the same.
    Sum {
        /// The operands, reads or registers, 2 to [`MAX_SUM`] of them.
        ops: Vec<Operand>,
        /// Per operand after the first: subtract it instead of adding it.
        neg: Vec<bool>,
        /// `Some((Mul, c))` or `Some((Div, c))`: applied to the sum.
        post: Option<(BinOp, f64)>,
        /// Register written, `None` for the output.
        dest: Option<usize>,
    },
    /// `dest = op(a)`
    Un {
        /// The operation.
        op: UnOp,
        /// The operand.
        a: Operand,
        /// Register written, `None` for the output.
        dest: Option<usize>,
    },
}

/// A traced stencil body: instructions in order, the last writing the output.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The instructions; exactly the last one has `dest: None`.
    pub instrs: Vec<Instr>,
    /// Number of temporary registers.
    pub tmps: usize,
}

impl Program {
    /// Checks the program's shape: temporaries in range, written before read and never read by the
    /// instruction that writes them, the output written last.
    pub fn check(&self, fields: usize) -> Result<(), String> {
        let mut written = vec![false; self.tmps];
        let n = self.instrs.len();
        if n == 0 {
            return Err("a stencil program needs at least one instruction".into());
        }
        for (i, ins) in self.instrs.iter().enumerate() {
            let (ops, dest): (Vec<Operand>, Option<usize>) = match ins {
                Instr::Bin { a, b, dest, .. } => (vec![*a, *b], *dest),
                Instr::Un { a, dest, .. } => (vec![*a], *dest),
                Instr::Sum { ops, neg, post, dest } => {
                    if !(2..=MAX_SUM).contains(&ops.len()) || neg.len() + 1 != ops.len() {
                        return Err(format!("instruction {i} sums {} operands with {} signs", ops.len(), neg.len()));
                    }
                    if ops.iter().any(|o| matches!(o, Operand::Const(_))) {
                        return Err(format!("instruction {i} sums a constant"));
                    }
                    if matches!(post, Some((op, _)) if !matches!(op, BinOp::Mul | BinOp::Div)) {
                        return Err(format!("instruction {i} scales its sum by {post:?}"));
                    }
                    (ops.clone(), *dest)
                }
            };
            for op in ops {
                match op {
                    Operand::Tmp(t) if Some(t) == dest => {
                        return Err(format!("instruction {i} reads the register {t} it writes"))
                    }
                    Operand::Tmp(t) if t >= self.tmps || !written[t] => {
                        return Err(format!("instruction {i} reads register {t} before it is written"))
                    }
                    Operand::Read { field, .. } if field >= fields => {
                        return Err(format!("instruction {i} reads field {field} of {fields}"))
                    }
                    _ => {}
                }
            }
            match dest {
                Some(t) if t >= self.tmps => {
                    return Err(format!("instruction {i} writes register {t} of {}", self.tmps))
                }
                Some(t) if i + 1 < n => written[t] = true,
                None if i + 1 == n => {}
                _ => return Err("only the last instruction writes the output".into()),
            }
        }
        Ok(())
    }

    /// The smallest and largest linear offset the program reads (0, 0 without reads).
    pub fn offset_range(&self) -> (isize, isize) {
        let mut lo = 0;
        let mut hi = 0;
        for ins in &self.instrs {
            let ops: Vec<Operand> = match ins {
                Instr::Bin { a, b, .. } => vec![*a, *b],
                Instr::Un { a, .. } => vec![*a],
                Instr::Sum { ops, .. } => ops.clone(),
            };
            for op in &ops {
                if let Operand::Read { offset, .. } = op {
                    lo = lo.min(*offset);
                    hi = hi.max(*offset);
                }
            }
        }
        (lo, hi)
    }
}

/// A grid as three axes (`[n]` is `[n, 1, 1]`, `[r, c]` is `[r, c, 1]`) and its halo.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Extents.
    pub shape: [usize; 3],
    /// Cells before the interior on each axis.
    pub lo: [usize; 3],
    /// Cells after the interior on each axis.
    pub hi: [usize; 3],
}

impl Layout {
    /// Cells per slab (one index of axis 0).
    pub fn slab(&self) -> usize {
        self.shape[1] * self.shape[2]
    }

    /// Cells of the whole grid.
    pub fn cells(&self) -> usize {
        self.shape.iter().product()
    }

    /// The interior `[lo, n - hi)` of `axis`.
    pub fn inner(&self, axis: usize) -> (usize, usize) {
        (self.lo[axis], self.shape[axis] - self.hi[axis])
    }

    /// Checks that the interior is not empty on any axis.
    pub fn check(&self) -> Result<(), String> {
        for a in 0..3 {
            if self.lo[a] + self.hi[a] >= self.shape[a] {
                return Err(format!(
                    "axis {a} of {:?} has no interior inside halo {:?}/{:?}",
                    self.shape, self.lo, self.hi
                ));
            }
        }
        Ok(())
    }

    /// The linear offset of a relative read `(d0, d1, d2)`.
    pub fn offset(&self, d: [isize; 3]) -> isize {
        (d[0] * self.shape[1] as isize + d[1]) * self.shape[2] as isize + d[2]
    }
}

/// Where the values of the cells outside the interior come from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum FixedCells {
    /// Every such cell holds this value.
    Const(f64),
    /// Each such cell holds the value of the op's last operand there.
    Array,
}

/// A stencil sweep's attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct StencilSpec {
    /// The traced body.
    pub program: Program,
    /// The grid and its halo.
    pub layout: Layout,
    /// Applications of the body (1 or more).
    pub steps: usize,
    /// The fixed cells' values.
    pub fixed: FixedCells,
    /// Bytes of a band's two local buffers in temporal blocking (0 turns it off).
    pub cache_bytes: usize,
}

impl StencilSpec {
    /// How many operands are fields (the rest is the fixed cells' array).
    pub fn fields(&self, operands: usize) -> usize {
        operands - usize::from(self.fixed == FixedCells::Array)
    }
}

/// The stencil sweep library op.
pub struct StencilSweep;

fn spec(attr: &Attr) -> Result<&Arc<StencilSpec>> {
    match attr {
        Attr::Stencil(s) => Ok(s),
        _ => Err(IrError::internal("a stencil sweep needs its spec")),
    }
}

impl LibraryOp for StencilSweep {
    fn id(&self) -> LibId {
        LibId::STENCIL
    }
    fn name(&self) -> &'static str {
        "stencil_sweep"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Stencil(s) => format!("stencil_sweep[{} instrs x{}]", s.program.instrs.len(), s.steps),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n >= 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        let (first, shape) = operands[0];
        if !matches!(first.dtype, DType::F32 | DType::F64) {
            return Err(IrError::new(ErrorKind::DType, "the stencil sweep computes in float32 or float64"));
        }
        if operands.iter().any(|(t, sh)| t.dtype != first.dtype || *sh != shape) {
            return Err(IrError::new(ErrorKind::Shape, "stencil fields must share one shape and dtype"));
        }
        let r = shape.rank();
        if !(1..=3).contains(&r) || shape.0.iter().chain([1, 1].iter()).take(3).ne(s.layout.shape.iter()) {
            return Err(IrError::new(ErrorKind::Shape, "the stencil's layout does not match its fields"));
        }
        s.program.check(s.fields(operands.len())).map_err(|m| IrError::new(ErrorKind::InvalidArgument, m))?;
        Ok((first, shape.clone()))
    }
    fn reinfers(&self) -> bool {
        false
    }
}
