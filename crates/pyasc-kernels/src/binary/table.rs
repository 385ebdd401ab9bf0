//! Kernels of the binary ops that have no hand-written loop, generated from the op table: the
//! float body of [`pyasc_ir::binary_op_table!`] runs in float64 (float32 operands are widened
//! and the result rounded once) and the integer body in int64 (int32 results wrap), so
//! constant folding and run time agree.

use crate::dispatch::Simd;
use crate::math::float_bits::nextafter_f32;
use crate::math::pairs::{hypot_f32, logaddexp2_f32, logaddexp_f32};
use crate::src::{map2, Src};
use pyasc_ir::op::BinaryOp;

/// Integer element types computed through int64.
pub trait ViaI64: Copy {
    /// Widen.
    fn to_i64(self) -> i64;
    /// Narrow, wrapping.
    fn from_i64(v: i64) -> Self;
}

impl ViaI64 for i32 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as i32
    }
}

impl ViaI64 for i64 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v
    }
}

impl ViaI64 for u64 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as u64
    }
}

/// Generates the table kernels.
macro_rules! table_kernels {
    ($($(#[$doc:meta])* $v:ident $name:literal $class:ident [$($uf:literal),*] $comm:ident, $f:expr, $int:expr, $grad:expr;)*) => {
        /// `y = f(a, b)` on float64 through the op's table body (NaN where it has none).
        pub(crate) fn float64<S: Simd>(f: BinaryOp, a: Src<'_, f64>, b: Src<'_, f64>, y: &mut [f64]) {
            match f {
                $(BinaryOp::$v => map2(a, b, y, |p: f64, q: f64| ($f)(p, q).unwrap_or(f64::NAN)),)*
            }
        }

        /// `y = f(a, b)` on float32, computed in float64 and rounded once; `nextafter` steps
        /// in float32; `hypot` and `logaddexp(2)` have vectorised bodies.
        pub(crate) fn float32<S: Simd>(f: BinaryOp, a: Src<'_, f32>, b: Src<'_, f32>, y: &mut [f32]) {
            // The table's own rows of the ops above are shadowed on purpose.
            #[allow(unreachable_patterns)]
            match f {
                BinaryOp::NextAfter => map2(a, b, y, nextafter_f32),
                BinaryOp::Hypot => map2(a, b, y, hypot_f32),
                BinaryOp::LogAddExp => map2(a, b, y, logaddexp_f32::<S>),
                BinaryOp::LogAddExp2 => map2(a, b, y, logaddexp2_f32::<S>),
                $(BinaryOp::$v => map2(a, b, y, |p: f32, q: f32| ($f)(p as f64, q as f64).unwrap_or(f64::NAN) as f32),)*
            }
        }

        /// `y = f(a, b)` on integers through the op's int64 table body (0 where it has none).
        pub(crate) fn int<S: Simd, T: ViaI64>(f: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
            match f {
                $(BinaryOp::$v => map2(a, b, y, |p: T, q: T| T::from_i64(($int)(p.to_i64(), q.to_i64()).unwrap_or(0))),)*
            }
        }
    };
}

pyasc_ir::binary_op_table!(table_kernels);
