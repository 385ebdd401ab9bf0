//! Python ints that must fit an integer dtype when they meet an array of it (NumPy 2 raises
//! `OverflowError` instead of wrapping): a Python int argument, or a value computed from
//! Python int arguments and constants alone (`x_int8 + (s + 1)`). The value is an
//! [`IntExpr`], evaluated from the arguments at every call.

use crate::int_exact as exact;
use pyasc_ir::dtype::WeakKind;
use pyasc_ir::op::Op;
use pyasc_ir::{DType, Graph, NodeId};

/// One step of an [`IntExpr`].
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Python int argument `i`.
    Arg(u32),
    /// A constant.
    Const(i128),
    /// An elementwise op over earlier steps.
    Apply(Op, Vec<usize>),
}

/// A step of an [`IntExpr`] left the 128-bit range the host computes Python ints in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TooLarge;

/// A Python int computed from Python int arguments: steps in order, the last is the value.
#[derive(Clone, Debug, PartialEq)]
pub struct IntExpr(pub Vec<Step>);

impl IntExpr {
    /// The expression for weak-int node `x`, or `None` when it reads anything but Python int
    /// arguments and constants (then it is no Python int).
    pub fn of(g: &Graph, x: NodeId) -> Option<IntExpr> {
        let mut steps = Vec::new();
        let mut memo = Vec::new();
        Self::build(g, x, &mut steps, &mut memo)?;
        Some(IntExpr(steps))
    }

    fn build(g: &Graph, x: NodeId, steps: &mut Vec<Step>, memo: &mut Vec<(NodeId, usize)>) -> Option<usize> {
        if let Some((_, at)) = memo.iter().find(|(n, _)| *n == x) {
            return Some(*at);
        }
        let node = g.node(x);
        if let (Op::Cast(DType::I64 | DType::U64), [inner]) = (node.op, node.inputs.as_slice()) {
            // A Python int moved between int64 and uint64 registers by promotion keeps its
            // exact value (a step beyond the registers' range is caught by `eval`).
            if g.node(*inner).vtype.weak == Some(WeakKind::Int) {
                return Self::build(g, *inner, steps, memo);
            }
        }
        if node.vtype.weak != Some(WeakKind::Int) || memo.len() > 64 {
            return None;
        }
        let step = match node.op {
            Op::Input(i) => Step::Arg(i),
            Op::Const(v) => Step::Const(v.int_value(node.dtype())?),
            op @ (Op::Unary(_) | Op::Binary(_)) => {
                let args = node.inputs.iter().map(|i| Self::build(g, *i, steps, memo)).collect::<Option<Vec<_>>>()?;
                Step::Apply(op, args)
            }
            _ => return None,
        };
        steps.push(step);
        memo.push((x, steps.len() - 1));
        Some(steps.len() - 1)
    }

    /// The plain argument this is, if it is one.
    pub fn arg(&self) -> Option<u32> {
        match self.0.as_slice() {
            [Step::Arg(i)] => Some(*i),
            _ => None,
        }
    }

    /// The value, from `arg(i)` (argument `i`'s value), computed exactly as Python does:
    /// `Err(TooLarge)` when a step leaves 128 bits, `Ok(None)` when an argument is missing.
    pub fn eval(&self, arg: impl Fn(usize) -> Option<i128>) -> Result<Option<i128>, TooLarge> {
        if let Some(i) = self.arg() {
            return Ok(arg(i as usize));
        }
        let mut vals: Vec<i128> = Vec::with_capacity(self.0.len());
        for s in &self.0 {
            let v = match s {
                Step::Arg(i) => match arg(*i as usize) {
                    Some(v) => v,
                    None => return Ok(None),
                },
                Step::Const(c) => *c,
                Step::Apply(op, args) => exact::apply(op, &args.iter().map(|a| vals[*a]).collect::<Vec<_>>())?,
            };
            vals.push(v);
        }
        Ok(vals.last().copied())
    }
}

impl std::fmt::Display for IntExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.arg() {
            Some(i) => write!(f, "argument {i}"),
            None => f.write_str("a Python int computed from the arguments"),
        }
    }
}
