//! Python ints that must fit an integer dtype when they meet an array of it (NumPy 2 raises
//! `OverflowError` instead of wrapping): a Python int argument, or a value computed from
//! Python int arguments and constants alone (`x_int8 + (s + 1)`). The value is an
//! [`IntExpr`], evaluated from the arguments at every call.

use crate::fold;
use pyasc_ir::dtype::WeakKind;
use pyasc_ir::op::Op;
use pyasc_ir::{DType, Graph, NodeId, Scalar};

/// One step of an [`IntExpr`].
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Python int argument `i`.
    Arg(u32),
    /// A constant.
    Const(Scalar),
    /// An elementwise op over earlier steps.
    Apply(Op, Vec<usize>),
}

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
        if node.vtype.weak != Some(WeakKind::Int) || memo.len() > 64 {
            return None;
        }
        let step = match node.op {
            Op::Input(i) => Step::Arg(i),
            Op::Const(v) => Step::Const(v),
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

    /// The value, from `arg(i)` (argument `i`'s int64 value); `None` when an argument is
    /// missing or an op cannot be evaluated exactly.
    pub fn eval(&self, arg: impl Fn(usize) -> Option<i64>) -> Option<i64> {
        let mut vals: Vec<Scalar> = Vec::with_capacity(self.0.len());
        for s in &self.0 {
            let v = match s {
                Step::Arg(i) => Scalar::Int(arg(*i as usize)?),
                Step::Const(c) => *c,
                Step::Apply(op, args) => {
                    let ins: Vec<Scalar> = args.iter().map(|a| vals[*a]).collect();
                    fold::eval(op, &ins, DType::I64, DType::I64)?
                }
            };
            vals.push(v);
        }
        vals.last().map(|v| v.as_i64())
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
