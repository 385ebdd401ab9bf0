//! The closed op enum of the graph IR, with small `Copy` sub-enums per op family and
//! the group predicates beside them.

use crate::attr::AttrId;
use crate::dtype::DType;
use crate::library::LibId;
use crate::scalar::Scalar;

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

/// How a binary op treats dtypes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinaryClass {
    /// Arithmetic in the promoted dtype.
    Arith,
    /// A float function of two operands: integers compute in float64 (like true division).
    Float,
    /// Integers only (shifts, gcd, lcm), in the promoted dtype.
    Integer,
    /// Comparison returning bool.
    Compare,
    /// Bitwise/logical on bool and integers.
    Bitwise,
}

/// Generates `UnaryOp` and its metadata from [`crate::unary_op_table!`].
macro_rules! define_unary_ops {
    ($($(#[$doc:meta])* $v:ident $name:literal $kind:ident [$($uf:literal),*] $api:ident, $f:expr, $int:expr, $grad:expr;)*) => {
        /// Elementwise functions of one operand, one per row of [`crate::unary_op_table!`].
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($(#[$doc])* $v,)*
        }

        impl UnaryOp {
            /// Every unary op, in table order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$v),*];

            /// The dtype family rule of this op.
            pub fn kind(self) -> UnaryKind {
                match self {
                    $(UnaryOp::$v => UnaryKind::$kind,)*
                }
            }

            /// The lower-case name used in the printer, logs and the Python API.
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$v => $name,)*
                }
            }

            /// The NumPy ufuncs that map onto this op inside an operator.
            pub fn ufuncs(self) -> &'static [&'static str] {
                match self {
                    $(UnaryOp::$v => &[$($uf),*],)*
                }
            }

            /// True when the op is exported as `pyasc.<name>`.
            pub fn is_api(self) -> bool {
                match self {
                    $(UnaryOp::$v => stringify!($api) == "api",)*
                }
            }

            /// The op on a float (the float64 semantics kernels and constant folding share;
            /// classifications give 1.0 or 0.0; the caller rounds to the node's dtype).
            pub fn eval_f64(self, x: f64) -> f64 {
                match self {
                    $(UnaryOp::$v => ($f)(x),)*
                }
            }

            /// The op's gradient rule (the table's last column).
            pub fn grad(self) -> crate::grad::UnaryGrad {
                #[allow(unused_imports)]
                use crate::grad::elementwise::rows::*;
                match self {
                    $(UnaryOp::$v => ($grad).into(),)*
                }
            }

            /// The op on an integer of a dtype-keeping op (wrapping), `None` when it has no
            /// integer meaning.
            pub fn eval_i64(self, i: i64) -> Option<i64> {
                match self {
                    $(UnaryOp::$v => {
                        let f: Option<fn(i64) -> i64> = $int;
                        f.map(|f| f(i))
                    })*
                }
            }
        }
    };
}

crate::unary_op_table!(define_unary_ops);

impl UnaryOp {
    /// True for ops costing far more than a load per element (transcendental float math):
    /// fusion keeps them out of broadcasts, the VM prefetches around them.
    pub fn is_expensive(self) -> bool {
        self.kind() == UnaryKind::Float
    }

    /// Look an op up by its name.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        UnaryOp::ALL.iter().copied().find(|op| op.name() == name)
    }
}

/// Generates `BinaryOp` and its metadata from [`crate::binary_op_table!`].
macro_rules! define_binary_ops {
    ($($(#[$doc:meta])* $v:ident $name:literal $class:ident [$($uf:literal),*] $comm:ident, $f:expr, $int:expr, $grad:expr;)*) => {
        /// Elementwise functions of two operands, one per row of [`crate::binary_op_table!`].
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $($(#[$doc])* $v,)*
        }

        impl BinaryOp {
            /// Every binary op, in table order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$v),*];

            /// The dtype family rule of this op.
            pub fn class(self) -> BinaryClass {
                match self {
                    $(BinaryOp::$v => BinaryClass::$class,)*
                }
            }

            /// The lower-case name.
            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$v => $name,)*
                }
            }

            /// The NumPy ufuncs that map onto this op inside an operator.
            pub fn ufuncs(self) -> &'static [&'static str] {
                match self {
                    $(BinaryOp::$v => &[$($uf),*],)*
                }
            }

            /// True for ops where `a op b == b op a`.
            pub fn is_commutative(self) -> bool {
                match self {
                    $(BinaryOp::$v => stringify!($comm) == "commutative",)*
                }
            }

            /// The op's gradient rule (the table's last column).
            pub fn grad(self) -> crate::grad::BinaryGrad {
                #[allow(unused_imports)]
                use crate::grad::elementwise::rows::*;
                match self {
                    $(BinaryOp::$v => ($grad).into(),)*
                }
            }

            /// The op on two floats (comparisons give 1.0 or 0.0), `None` when not foldable.
            pub fn eval_f64(self, p: f64, q: f64) -> Option<f64> {
                match self {
                    $(BinaryOp::$v => ($f)(p, q),)*
                }
            }

            /// The op on two integers (wrapping; comparisons give 1 or 0), `None` when
            /// folding would not be exact.
            pub fn eval_i64(self, p: i64, q: i64) -> Option<i64> {
                match self {
                    $(BinaryOp::$v => ($int)(p, q),)*
                }
            }
        }
    };
}

crate::binary_op_table!(define_binary_ops);

impl BinaryOp {
    /// True for ops costing far more than a load per element (`pow`, and the float functions
    /// of two operands such as `hypot`, `arctan2`, `logaddexp`).
    pub fn is_expensive(self) -> bool {
        self == BinaryOp::Pow || self.class() == BinaryClass::Float
    }

    /// Comparisons return bool.
    pub fn is_compare(self) -> bool {
        self.class() == BinaryClass::Compare
    }

    /// Look an op up by its name.
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        BinaryOp::ALL.iter().copied().find(|op| op.name() == name)
    }
}

/// The result dtype rule of a reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReduceResult {
    /// The operand's dtype.
    Keep,
    /// Floats keep their dtype; bools and signed integers widen to int64, unsigned integers to
    /// uint64 (NumPy's sum and prod).
    Widen,
    /// An int64 index.
    Index,
    /// A bool.
    Bool,
}

/// Generates `ReduceOp` and its metadata from [`crate::reduce_op_table!`].
macro_rules! define_reduce_ops {
    ($($(#[$doc:meta])* $v:ident $name:literal $result:ident $identity:expr;)*) => {
        /// Reductions over a set of axes, one per row of [`crate::reduce_op_table!`].
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum ReduceOp {
            $($(#[$doc])* $v,)*
        }

        impl ReduceOp {
            /// Every reduction, in table order.
            pub const ALL: &'static [ReduceOp] = &[$(ReduceOp::$v),*];

            /// The lower-case name.
            pub fn name(self) -> &'static str {
                match self {
                    $(ReduceOp::$v => $name,)*
                }
            }

            /// The result dtype rule.
            pub fn result(self) -> ReduceResult {
                match self {
                    $(ReduceOp::$v => ReduceResult::$result,)*
                }
            }

            /// The value of a reduction over no elements, `None` when there is none.
            pub fn identity(self) -> Option<i64> {
                match self {
                    $(ReduceOp::$v => $identity,)*
                }
            }
        }
    };
}

crate::reduce_op_table!(define_reduce_ops);

impl ReduceOp {
    /// Look a reduction up by its name.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// True for reductions without an identity (an empty reduction is an error).
    pub fn needs_elements(self) -> bool {
        self.identity().is_none()
    }

    /// The result dtype for an operand of dtype `d`.
    pub fn result_dtype(self, d: DType) -> DType {
        match self.result() {
            ReduceResult::Widen if d.is_unsigned() => DType::U64,
            ReduceResult::Widen if !d.is_float() => DType::I64,
            ReduceResult::Keep | ReduceResult::Widen => d,
            ReduceResult::Index => DType::I64,
            ReduceResult::Bool => DType::Bool,
        }
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
    /// A movement op: the operand's memory read through the view `graph.attrs[i]`.
    View(AttrId),
    /// A library kernel (matmul, pad, concatenate, take, ...) with its attribute: see
    /// [`crate::library`].
    Library(LibId, AttrId),
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
    /// True for library kernels.
    pub fn is_library(&self) -> bool {
        matches!(self, Op::Library(..))
    }
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
            Op::Unary(_) | Op::Cast(_) | Op::Reduce { .. } | Op::View(_) => 1,
            Op::Binary(_) => 2,
            Op::Library(..) => usize::MAX,
            Op::Where => 3,
        }
    }
    /// True when `n` operands suit the op (a library op decides for itself; an unknown
    /// library op takes none).
    pub fn arity_ok(&self, n: usize) -> bool {
        match self {
            Op::Library(id, _) => id.op().is_ok_and(|l| l.arity_ok(n)),
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
            Op::Library(id, _) => id.op().map_or_else(|_| format!("library#{}", id.0), |l| l.name().to_string()),
            Op::View(i) => format!("view{}", i.0),
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
        for &op in UnaryOp::ALL {
            assert_eq!(UnaryOp::from_name(op.name()), Some(op));
        }
        for &op in BinaryOp::ALL {
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
