//! The closed op enum of the graph IR, with small `Copy` sub-enums per op family and
//! the group predicates beside them.

use crate::dtype::DType;
use crate::scalar::Scalar;

/// Elementwise functions of one operand.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    Abs,
    Square,
    Sign,
    Not,
    Exp,
    Exp2,
    Log,
    Log2,
    Log1p,
    Expm1,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Erf,
    Erfc,
    Relu,
    Gelu,
    FastGelu,
    Silu,
    Softplus,
    Floor,
    Ceil,
    Round,
    IsNan,
    IsInf,
    IsFinite,
}

/// How a unary op treats dtypes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnaryKind {
    /// Keeps the operand's dtype (neg, abs, square, sign, relu).
    Numeric,
    /// Computes in floats: integer operands are converted first (exp, sin, ...).
    Float,
    /// Rounding: identity on integers, float otherwise.
    Rounding,
    /// Float classification returning bool.
    Classify,
    /// Bitwise/logical not on bool and integers.
    Bitwise,
}

impl UnaryOp {
    /// Every unary op, for tables and tests.
    pub const ALL: [UnaryOp; 32] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Square,
        UnaryOp::Sign,
        UnaryOp::Not,
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Log,
        UnaryOp::Log2,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Reciprocal,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::FastGelu,
        UnaryOp::Silu,
        UnaryOp::Softplus,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::IsNan,
        UnaryOp::IsInf,
        UnaryOp::IsFinite,
    ];

    /// The dtype family rule of this op.
    pub fn kind(self) -> UnaryKind {
        use UnaryOp::*;
        match self {
            Neg | Abs | Square | Sign | Relu => UnaryKind::Numeric,
            Not => UnaryKind::Bitwise,
            Floor | Ceil | Round => UnaryKind::Rounding,
            IsNan | IsInf | IsFinite => UnaryKind::Classify,
            _ => UnaryKind::Float,
        }
    }

    /// The lower-case name used in the printer, logs and the Python API.
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Neg => "neg",
            Abs => "abs",
            Square => "square",
            Sign => "sign",
            Not => "not",
            Exp => "exp",
            Exp2 => "exp2",
            Log => "log",
            Log2 => "log2",
            Log1p => "log1p",
            Expm1 => "expm1",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Reciprocal => "reciprocal",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Erf => "erf",
            Erfc => "erfc",
            Relu => "relu",
            Gelu => "gelu",
            FastGelu => "fast_gelu",
            Silu => "silu",
            Softplus => "softplus",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
        }
    }

    /// Look an op up by its name.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        UnaryOp::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// Evaluate on a float constant (used by constant folding; the result is rounded
    /// to the node's dtype by the caller).
    pub fn eval_f64(self, x: f64) -> f64 {
        use UnaryOp::*;
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        match self {
            Neg => -x,
            Abs => x.abs(),
            Square => x * x,
            Sign => {
                if x.is_nan() {
                    x
                } else if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Not => f64::NAN,
            Exp => x.exp(),
            Exp2 => x.exp2(),
            Log => x.ln(),
            Log2 => x.log2(),
            Log1p => x.ln_1p(),
            Expm1 => x.exp_m1(),
            Sqrt => x.sqrt(),
            Rsqrt => 1.0 / x.sqrt(),
            Reciprocal => 1.0 / x,
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Tanh => x.tanh(),
            Sigmoid => sig(x),
            Erf => libm::erf(x),
            Erfc => libm::erfc(x),
            Relu => {
                if x.is_nan() {
                    x
                } else {
                    x.max(0.0)
                }
            }
            Gelu => x * 0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            FastGelu => x * sig(1.702 * x),
            Silu => x * sig(x),
            Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
            Floor => x.floor(),
            Ceil => x.ceil(),
            Round => x.round_ties_even(),
            IsNan => (x.is_nan() as u8) as f64,
            IsInf => (x.is_infinite() as u8) as f64,
            IsFinite => (x.is_finite() as u8) as f64,
        }
    }
}

/// Elementwise functions of two operands.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Xor,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 18] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Pow,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
    ];

    /// Comparisons return bool.
    pub fn is_compare(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }

    /// Bitwise/logical ops take bool and integers only.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor)
    }

    /// True for ops where `a op b == b op a`.
    pub fn is_commutative(self) -> bool {
        use BinaryOp::*;
        matches!(self, Add | Mul | Min | Max | Eq | Ne | And | Or | Xor)
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            FloorDiv => "floordiv",
            Mod => "mod",
            Pow => "pow",
            Min => "minimum",
            Max => "maximum",
            Eq => "eq",
            Ne => "ne",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            And => "and",
            Or => "or",
            Xor => "xor",
        }
    }

    /// Look an op up by its name.
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        BinaryOp::ALL.iter().copied().find(|op| op.name() == name)
    }
}

/// Reductions over a set of axes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
    Any,
    All,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 8] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Any,
        ReduceOp::All,
    ];

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }

    /// Look a reduction up by its name.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// True for reductions without an identity (an empty reduction is an error).
    pub fn needs_elements(self) -> bool {
        matches!(self, ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

/// A set of axes as a bit mask (bit `i` set: axis `i` is reduced).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Axes(pub u64);

impl Axes {
    /// True when axis `i` is in the set.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1 << i) != 0
    }
    /// Every axis of a rank-`rank` tensor.
    pub fn all(rank: usize) -> Axes {
        Axes(if rank >= 64 { u64::MAX } else { (1u64 << rank) - 1 })
    }
    /// The axes as a sorted list.
    pub fn list(self, rank: usize) -> Vec<usize> {
        (0..rank).filter(|i| self.contains(*i)).collect()
    }
    /// True when the set is exactly the last `k` axes of a rank-`rank` tensor, for some `k`.
    pub fn is_trailing(self, rank: usize) -> bool {
        let k = self.0.count_ones() as usize;
        k <= rank && self == Axes(Axes::all(rank).0 & !Axes::all(rank - k).0)
    }
}

/// One node's operation. Operands are the node's `inputs`, in order.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Op {
    /// The `i`-th argument of the traced function.
    Input(u32),
    /// A constant, broadcast to the node's shape (which is always `()` for traced constants).
    Const(Scalar),
    /// A constant filling the node's shape (`zeros`, `ones`, `full`, empty reductions).
    Fill(Scalar),
    /// One operand.
    Unary(UnaryOp),
    /// Two operands, broadcast together.
    Binary(BinaryOp),
    /// `where(cond, a, b)`: three operands, broadcast together.
    Where,
    /// Convert the one operand to a dtype (NumPy `astype`).
    Cast(DType),
    /// A movement op: the operand's memory read through `graph.views[i]`.
    View(u32),
    /// `np.pad` of the operand with `graph.pads[i]`.
    Pad(u32),
    /// `np.concatenate` of every operand along `axis`.
    Concat(u16),
    /// `np.take(x, indices, axis)`: operands `x` and the int64 indices.
    Take(u16),
    /// Matrix product with NumPy's `matmul` rules (batched, broadcast batch dims, 1-D
    /// operands promoted and their axis dropped).
    MatMul,
    /// Reduce the one operand over `axes`, keeping them as size-1 axes if `keepdims`.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// The axes reduced.
        axes: Axes,
        /// Keep reduced axes with extent 1.
        keepdims: bool,
    },
}

impl Op {
    /// True for ops computed one element at a time (fusible by elementwise fusion).
    pub fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast(_))
    }
    /// True for reductions.
    pub fn is_reduce(&self) -> bool {
        matches!(self, Op::Reduce { .. })
    }
    /// True for nodes no instruction computes: leaves and views (a view is read from memory).
    pub fn is_data(&self) -> bool {
        matches!(self, Op::Input(_) | Op::Const(_) | Op::Fill(_) | Op::View(_))
    }
    /// True for leaves (no operands).
    pub fn is_leaf(&self) -> bool {
        matches!(self, Op::Input(_) | Op::Const(_) | Op::Fill(_))
    }
    /// Number of operands the op takes.
    pub fn arity(&self) -> usize {
        match self {
            Op::Input(_) | Op::Const(_) | Op::Fill(_) => 0,
            Op::Unary(_) | Op::Cast(_) | Op::Reduce { .. } | Op::View(_) | Op::Pad(_) => 1,
            Op::Binary(_) | Op::MatMul | Op::Take(_) => 2,
            Op::Concat(_) => usize::MAX,
            Op::Where => 3,
        }
    }
    /// True when `n` operands suit the op (`Concat` takes one or more).
    pub fn arity_ok(&self, n: usize) -> bool {
        match self {
            Op::Concat(_) => n >= 1,
            _ => n == self.arity(),
        }
    }
    /// The name used by the printer.
    pub fn name(&self) -> String {
        match self {
            Op::Input(i) => format!("input{i}"),
            Op::Const(c) => format!("const {c}"),
            Op::Fill(c) => format!("fill {c}"),
            Op::Unary(u) => u.name().to_string(),
            Op::Binary(b) => b.name().to_string(),
            Op::Where => "where".to_string(),
            Op::MatMul => "matmul".to_string(),
            Op::Concat(a) => format!("concatenate[{a}]"),
            Op::Take(a) => format!("take[{a}]"),
            Op::View(i) => format!("view{i}"),
            Op::Pad(i) => format!("pad{i}"),
            Op::Cast(d) => format!("cast<{d}>"),
            Op::Reduce { op, axes, keepdims } => {
                let list: Vec<String> = axes.list(64).iter().map(|a| a.to_string()).collect();
                let keep = if *keepdims { ", keepdims" } else { "" };
                format!("{}[{}{keep}]", op.name(), list.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in UnaryOp::ALL {
            assert_eq!(UnaryOp::from_name(op.name()), Some(op));
        }
        for op in BinaryOp::ALL {
            assert_eq!(BinaryOp::from_name(op.name()), Some(op));
        }
    }

    #[test]
    fn round_is_half_to_even() {
        assert_eq!(UnaryOp::Round.eval_f64(2.5), 2.0);
        assert_eq!(UnaryOp::Round.eval_f64(3.5), 4.0);
        assert_eq!(UnaryOp::Round.eval_f64(-2.5), -2.0);
        assert_eq!(UnaryOp::Round.eval_f64(2.4), 2.0);
    }
}
